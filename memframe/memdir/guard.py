"""Team memories are shared: what a background agent writes under ``team/`` is saved with its
secrets replaced by ``[REDACTED]``, so team memory stays safe to sync instead of being held back
by the sync gate forever. Private memories are left as they are (local files, mode 0600)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memframe.memdir.files import TEAM_DIR

if TYPE_CHECKING:
    from memframe.scanner import SecretScanner


def redact_team_secrets(
    root: Path, changes: Mapping[Path, str | None], scanner: SecretScanner
) -> tuple[dict[Path, str | None], list[str]]:
    """``changes`` (files under the memory directory ``root`` → new text, ``None``: deleted)
    with the secrets of every file under ``team/`` redacted, and one note per file redacted
    (``team/x.md: aws-access-token, …``)."""
    out: dict[Path, str | None] = {}
    notes: list[str] = []
    for path, text in changes.items():
        try:
            relative = path.relative_to(root).as_posix()
        except ValueError:
            relative = ""
        if text is not None and relative.startswith(f"{TEAM_DIR}/"):
            rules = [match.rule_id for match in scanner.scan(text)]
            if rules:
                text = scanner.redact(text)
                notes.append(f"{relative}: {', '.join(rules)}")
        out[path] = text
    return out, notes
