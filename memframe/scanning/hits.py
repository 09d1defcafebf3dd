"""Findings placed in their source: line and column, the secret, the inline ``memframe:allow``.

A line containing ``memframe:allow`` (in any comment syntax: ``# memframe:allow``,
``<!-- memframe:allow -->``) suppresses the findings on it; ``memframe:allow rule-a,rule-b``
suppresses only those rules. A first word that is not a known rule id is free text (the marker
then allows every rule) unless it contains a ``-``: then it is taken for a misspelt rule id and
allows nothing, so a typo never hides every secret on the line.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from memframe.scanner import Finding

ALLOW_MARKER = "memframe:allow"
_ALLOW_RE = re.compile(r"memframe:allow(?![A-Za-z0-9_-])")
_RULE_LIST_RE = re.compile(
    r"[ \t]*([A-Za-z0-9][A-Za-z0-9._-]*(?:[ \t]*,[ \t]*[A-Za-z0-9][A-Za-z0-9._-]*)*)"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
PREVIEW_CHARS = 4


@dataclass(frozen=True, slots=True)
class Hit:
    """One finding as reported. ``path`` names the source (a file, or ``repo:key`` for a team
    entry), ``uri`` is its SARIF artifact URI; ``line`` is 1-based; ``column``/``end_column`` are
    1-based characters (the end exclusive), None when not meaningful (a JSON string value);
    ``json_path`` locates a JSON string value inside its record. ``secret`` is never printed."""

    rule_id: str
    label: str
    path: str
    uri: str
    line: int
    column: int | None
    end_line: int
    end_column: int | None
    secret: str = field(repr=False)
    json_path: str | None = None
    allowed: bool = False

    @property
    def preview(self) -> str:
        return masked(self.secret)


def masked(secret: str) -> str:
    """The first four characters and an ellipsis (control characters escaped)."""
    head = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", secret[:PREVIEW_CHARS])
    return head + "…"


def allows(line: str, rule_id: str, known_rules: Collection[str]) -> bool:
    """Whether a ``memframe:allow`` marker on ``line`` suppresses ``rule_id``."""
    if ALLOW_MARKER not in line:
        return False
    for marker in _ALLOW_RE.finditer(line):
        listed = _RULE_LIST_RE.match(line, marker.end())
        words = [w.strip() for w in listed.group(1).split(",")] if listed is not None else []
        if not words:
            return True
        known = [w for w in words if w in known_rules]
        if known:
            if rule_id in known:
                return True
        elif "-" not in words[0]:
            return True
    return False


def _line_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The start of the line holding ``start`` and the end of the line holding ``end``."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", max(end, start))
    return line_start, len(text) if line_end < 0 else line_end


def text_hits(
    text: str,
    findings: Iterable[Finding],
    *,
    path: str,
    uri: str,
    known_rules: Collection[str],
    line_base: int = 0,
    col_base: int = 0,
    json_path: str | None = None,
) -> list[Hit]:
    """Hits for ``findings`` of ``text``. ``line_base`` lines and, on the first line of ``text``,
    ``col_base`` characters precede ``text`` in its source (a window of a huge file). With
    ``json_path`` the text is a JSON string value: every hit gets line ``line_base`` and no
    column."""
    hits = []
    for f in findings:
        secret = text[f.secret_start : f.secret_end]
        line_start, line_end = _line_bounds(text, f.secret_start, f.secret_end)
        allowed = allows(text[line_start:line_end], f.rule_id, known_rules)
        if json_path is not None:
            hits.append(
                Hit(
                    f.rule_id,
                    f.label,
                    path,
                    uri,
                    line=line_base,
                    column=None,
                    end_line=line_base,
                    end_column=None,
                    secret=secret,
                    json_path=json_path,
                    allowed=allowed,
                )
            )
            continue
        end_line_start = text.rfind("\n", 0, f.secret_end) + 1
        column = f.secret_start - line_start + 1 + (col_base if line_start == 0 else 0)
        end_column = f.secret_end - end_line_start + 1 + (col_base if end_line_start == 0 else 0)
        end_line = f.line + text.count("\n", f.secret_start, f.secret_end)
        hits.append(
            Hit(
                f.rule_id,
                f.label,
                path,
                uri,
                line=line_base + f.line,
                column=column,
                end_line=line_base + end_line,
                end_column=end_column,
                secret=secret,
                allowed=allowed,
            )
        )
    return hits


def char_to_byte(text: str, offsets: Iterable[int]) -> dict[int, int]:
    """UTF-8 (``surrogateescape``) byte offsets of character offsets of ``text``."""
    wanted = sorted(set(offsets))
    if text.isascii():
        return {o: o for o in wanted}
    out: dict[int, int] = {}
    char = byte = 0
    for offset in wanted:
        byte += len(text[char:offset].encode("utf-8", "surrogateescape"))
        char = offset
        out[offset] = byte
    return out
