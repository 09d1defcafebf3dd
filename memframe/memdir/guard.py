"""Team memories are shared: what a background agent writes under ``team/`` is saved with its
secrets replaced by ``[REDACTED]``, so team memory stays safe to sync instead of being held back
by the sync gate forever. Private memories are left as they are (local files, mode 0600)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memframe.memdir.files import TEAM_DIR
from memframe.scanner import redact_spans

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
            found = scanner.find(text)  # one pass: the rules to report and the spans to redact
            if found:
                text = redact_spans(text, [(f.secret_start, f.secret_end) for f in found])
                rules = sorted({f.rule_id for f in found}, key=scanner.rules.ids().index)
                notes.append(f"{relative}: {', '.join(rules)}")
        out[path] = text
    return out, notes
