"""Nothing private into memory: every memory file, index line and session note is saved with
the secrets the scanner finds and the personal data :mod:`memframe.privacy` finds (e-mail
addresses, phone numbers, postal addresses; which ones is the ``privacy.redact`` setting)
replaced by ``[REDACTED]`` — private memories too, since they are
injected into every prompt. Team memory stays safe to sync instead of being held back by the
sync gate forever."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe.privacy import PERSONAL_KINDS, find_personal
from memframe.scanner import redact_spans

if TYPE_CHECKING:
    from memframe.scanner import SecretScanner


def scrub(
    text: str, scanner: SecretScanner, kinds: Collection[str] = PERSONAL_KINDS
) -> tuple[str, list[str]]:
    """``text`` with every secret and personal datum (of ``kinds``) redacted, and what was
    found (rule ids, then ``address`` / ``email`` / ``phone``), each once."""
    found = scanner.find(text)  # one pass: the rules to report and the spans to redact
    personal = find_personal(text, kinds)
    if not found and not personal:
        return text, []
    spans = [(f.secret_start, f.secret_end) for f in found] + [(a, b) for a, b, _ in personal]
    labels = sorted({f.rule_id for f in found}, key=scanner.rules.ids().index)
    labels += sorted({kind for _, _, kind in personal})
    return redact_spans(text, spans), labels


def redact_private_data(
    root: Path,
    changes: Mapping[Path, str | None],
    scanner: SecretScanner,
    kinds: Collection[str] = PERSONAL_KINDS,
) -> tuple[dict[Path, str | None], list[str]]:
    """``changes`` (files under the memory directory ``root`` → new text, ``None``: deleted)
    with :func:`scrub` applied to every file, and one note per file redacted
    (``team/x.md: aws-access-token, email``)."""
    out: dict[Path, str | None] = {}
    notes: list[str] = []
    for path, text in changes.items():
        if text is not None:
            text, labels = scrub(text, scanner, kinds)
            if labels:
                try:
                    relative = path.relative_to(root).as_posix()
                except ValueError:
                    relative = path.name
                notes.append(f"{relative}: {', '.join(labels)}")
        out[path] = text
    return out, notes


def _scrub_value(value: Any, scanner: SecretScanner, kinds: Collection[str]) -> Any:
    """``value`` (a JSON value) with every string scrubbed; the same object when nothing
    changed, so untouched messages keep their exact bytes (a provider's prompt cache)."""
    if isinstance(value, str):
        return scrub(value, scanner, kinds)[0] if value.strip() else value
    if isinstance(value, list):
        items = [_scrub_value(item, scanner, kinds) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, Mapping):
        fields = {key: _scrub_value(item, scanner, kinds) for key, item in value.items()}
        return value if all(fields[k] is value[k] for k in value) else fields
    return value


def scrub_messages(
    messages: list[dict[str, Any]],
    scanner: SecretScanner,
    kinds: Collection[str] = PERSONAL_KINDS,
) -> list[dict[str, Any]]:
    """Wire messages (``role`` + ``content``) with every secret and personal datum in their
    text, tool inputs and tool results redacted — what memframe's background agents are sent,
    so a token the user pasted never reaches a model provider through memframe and never comes
    back in what they write. Messages without any are returned as they were."""
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        clean = _scrub_value(content, scanner, kinds)
        out.append(message if clean is content else {**message, "content": clean})
    return out
