"""Codex's ``apply_patch`` envelope, read once for everyone who must understand it.

Codex CLI edits files with one text: ``*** Begin Patch``, then per file ``*** Add File: p``
(every following ``+`` line is the new file), ``*** Delete File: p``, or ``*** Update File: p``
(optionally ``*** Move to: q``) with hunks — an ``@@`` line with optional context, then lines
starting with `` `` (context), ``-`` (removed) or ``+`` (added) — and ``*** End Patch``. The
text arrives as an ``apply_patch`` tool's ``input``/``patch`` argument, or inside a shell
command (``apply_patch <<'EOF' … EOF``, or an argv list whose second element is the patch).

:func:`find_patch` finds the text in a tool call, :func:`parse_patch` reads it into
:class:`FileChange` objects, and :meth:`FileChange.apply` computes a file's text after an
update — what the team guard scans, so a secret a patch assembles is seen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BEGIN = "*** Begin Patch"
END = "*** End Patch"
_HEADER = re.compile(r"^\*\*\* (Add|Delete|Update) File: (.+?)\s*$")
_MOVE = re.compile(r"^\*\*\* Move to: (.+?)\s*$")
PATCH_KEYS = ("input", "patch")
SHELL_KEYS = ("command", "cmd")


@dataclass
class Hunk:
    """One ``@@`` block: the old lines (context and removed) and the new ones (context and
    added), in order."""

    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)


@dataclass
class FileChange:
    """What a patch does to one file: ``op`` is ``add``, ``delete`` or ``update``."""

    op: str
    path: str
    move_to: str | None = None
    added: list[str] = field(default_factory=list)  # an Add File's lines; an update's + lines
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def target(self) -> str:
        """Where the file's text ends up."""
        return self.move_to or self.path

    def new_text(self) -> str:
        """All the text this change writes (an added file, or every added line)."""
        return "\n".join(self.added) + ("\n" if self.added else "")

    def apply(self, current: str) -> str | None:
        """The file's text after this update (``None`` when a hunk does not match ``current``,
        which makes Codex refuse the patch too). An ``add`` ignores ``current``."""
        if self.op == "add":
            return self.new_text()
        if self.op == "delete":
            return ""
        lines = current.split("\n")
        position = 0
        for hunk in self.hunks:
            at = _find(lines, hunk.old, position)
            if at is None:
                return None
            lines[at : at + len(hunk.old)] = hunk.new
            position = at + len(hunk.new)
        return "\n".join(lines)


def _find(lines: list[str], old: list[str], start: int) -> int | None:
    if not old:
        return len(lines) - (1 if lines and lines[-1] == "" else 0)  # pure addition: at the end
    for at in range(start, len(lines) - len(old) + 1):
        if lines[at : at + len(old)] == old:
            return at
    for at in range(start, len(lines) - len(old) + 1):  # Codex also matches ignoring spaces
        if [a.rstrip() for a in lines[at : at + len(old)]] == [b.rstrip() for b in old]:
            return at
    return None


def parse_patch(text: str) -> list[FileChange]:
    """The file changes of a patch text (lines outside a file section are ignored; an empty
    list when there is no patch)."""
    changes: list[FileChange] = []
    current: FileChange | None = None
    hunk: Hunk | None = None
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        header = _HEADER.match(line)
        if header:
            current = FileChange(header.group(1).lower(), header.group(2))
            changes.append(current)
            hunk = None
            continue
        if current is None or line.startswith((BEGIN, END, "*** End of File")):
            continue
        move = _MOVE.match(line)
        if move and current.op == "update":
            current.move_to = move.group(1)
            continue
        if current.op == "add":
            if line.startswith("+"):
                current.added.append(line[1:])
            continue
        if current.op != "update":
            continue
        if line.startswith("@@"):
            hunk = Hunk()
            current.hunks.append(hunk)
            continue
        if hunk is None:
            hunk = Hunk()
            current.hunks.append(hunk)
        if line.startswith("+"):
            hunk.new.append(line[1:])
            current.added.append(line[1:])
        elif line.startswith("-"):
            hunk.old.append(line[1:])
        elif line.startswith(" ") or line == "":
            hunk.old.append(line[1:])
            hunk.new.append(line[1:])
    return changes


def find_patch(tool_name: str | None, tool_input: Mapping[str, Any]) -> str | None:
    """The patch text a tool call carries: an ``apply_patch`` call's argument, or a shell
    command that runs ``apply_patch`` (``None`` when there is none)."""
    for key in PATCH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and BEGIN in value:
            return value
    for key in SHELL_KEYS:
        value = tool_input.get(key)
        if isinstance(value, list):
            parts = [str(v) for v in value]
            for part in parts:
                if BEGIN in part:
                    return part
        elif isinstance(value, str) and BEGIN in value:
            return value[value.index(BEGIN) :]
    if tool_name == "apply_patch":
        for value in tool_input.values():
            if isinstance(value, str) and BEGIN in value:
                return value
    return None
