"""The Anthropic memory-tool command set over memframe's memory directory.

:class:`MemoryCommands` is the one implementation of ``view``, ``create``, ``str_replace``,
``insert``, ``delete`` and ``rename`` on ``/memories`` paths. The MCP server's ``memory`` tool
calls it, and so can any other front end (the Anthropic SDK's memory tool, a test): it knows
nothing of MCP. Every write goes through :class:`~memframe.memdir.MemoryStore`, so the files and
``MEMORY.md`` stay as consistent as when the layers write them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe.memdir.files import MEMORY_TYPES, TEAM_DIR, Memory, parse_memory, render_memory
from memframe.memdir.index import INDEX_FILE, MAX_BYTES, MAX_LINES
from memframe.memdir.store import MAX_MEMORY_BYTES, MemoryStore
from memframe.privacy import PERSONAL_KINDS

if TYPE_CHECKING:
    from memframe.scanner import SecretScanner

ROOT = "/memories"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
# the type a memory file gets when its frontmatter names none (or one memframe does not know)
DEFAULT_TYPE = "project"
SNIPPET_LINES = 4  # lines shown around an edit
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FIELD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*:\s*(.*?)\s*$")
_REQUIRED = ("name", "description", "type")


class MemoryCommandError(ValueError):
    """A command that was refused or failed. The message says why, in words meant for the model
    (it is what the tool returns as its error); nothing was written."""


@dataclass(frozen=True)
class _Target:
    display: str  # the path as the model wrote it, normalised: /memories/team/x.md
    relative: str  # relative to the memory directory, '' for the directory itself
    path: Path

    @property
    def in_team(self) -> bool:
        return self.relative.startswith(f"{TEAM_DIR}/")


class MemoryCommands:
    """The memory-tool commands on one memory directory.

    ``MemoryCommands(store, scanner, kinds)``:

    - ``store`` — the :class:`~memframe.memdir.MemoryStore` of the memory directory; ``/memories``
      is its root (``memframe.memdir.locate(frame).path``);
    - ``scanner`` — the :class:`~memframe.scanner.SecretScanner` that guards writes
      (``frame.secret_scanner()``: the bundled rules, the ``rules_file`` setting, layers' rules);
    - ``kinds`` — the personal data kept out of memory (``frame.personal_kinds``).

    One method per command, with the Anthropic memory tool's argument names; each returns the
    text for the model and raises :class:`MemoryCommandError` (a ``ValueError``) with the reason
    when it refuses or fails, having written nothing:

    - ``view(path, view_range=None)`` — a directory: its files and directories two levels deep
      (hidden ones left out); a file: its lines numbered from 1 (``view_range=[start, end]``,
      ``end`` ``-1`` for the last line). ``MEMORY.md`` can be viewed.
    - ``read(path)`` — a file's text as it is (what the MCP resources serve).
    - ``create(path, file_text)`` — a new memory file; an existing one is refused.
    - ``str_replace(path, old_str, new_str="")`` — ``old_str`` must occur exactly once.
    - ``insert(path, insert_line, insert_text)`` — after line ``insert_line`` (``0``: at the top).
    - ``delete(path)`` — a memory file and its ``MEMORY.md`` line.
    - ``rename(old_path, new_path)`` — a memory file, also between the top level and ``team/``.
    - ``execute(arguments)`` — dispatch a tool call's input mapping (``{"command": "view",
      "path": …}``) to the method above.

    Paths start with ``/memories``. Memory files are ``*.md`` at the top level or directly in
    ``team/``; ``..``, hidden files, symlinks (and anything resolving outside the directory) and
    ``MEMORY.md`` itself are refused for writes. A file written without frontmatter gets one
    (``name`` from the file name, ``description`` from its first line, ``type: project``); a
    frontmatter missing a field or naming an unknown type is repaired. Every write is scrubbed of
    personal data and secrets (redacted, and the result says so); a ``team/`` write holding a
    secret — in its text, its file name or an encoding of either — is refused with the rules
    that matched, because team memory is shared. Writes are atomic, private (0600) and
    indexed: the file's ``MEMORY.md`` line is added or updated, and an index grown past its
    limits is rebuilt within them.
    """

    def __init__(
        self,
        store: MemoryStore,
        scanner: SecretScanner,
        kinds: Collection[str] = PERSONAL_KINDS,
    ) -> None:
        self.store = store
        self.scanner = scanner
        self.kinds = frozenset(kinds)

    # -- dispatch ------------------------------------------------------------------------------

    def execute(self, arguments: Mapping[str, Any]) -> str:
        """Run the command a tool call's input names (unknown keys are ignored)."""
        command = arguments.get("command")

        def need(name: str, kind: type | tuple[type, ...] = str) -> Any:
            value = arguments.get(name)
            if value is None:
                raise MemoryCommandError(f"the {command} command needs `{name}`")
            if not isinstance(value, kind) or isinstance(value, bool):
                raise MemoryCommandError(f"`{name}` has the wrong type ({type(value).__name__})")
            return value

        if command == "view":
            view_range = arguments.get("view_range")
            if view_range is not None and not isinstance(view_range, list | tuple):
                raise MemoryCommandError("`view_range` must be a list of two line numbers")
            return self.view(need("path"), view_range)
        if command == "create":
            return self.create(need("path"), need("file_text"))
        if command == "str_replace":
            new_str = arguments.get("new_str")
            return self.str_replace(
                need("path"), need("old_str"), "" if new_str is None else new_str
            )
        if command == "insert":
            return self.insert(need("path"), need("insert_line", int), need("insert_text"))
        if command == "delete":
            return self.delete(need("path"))
        if command == "rename":
            return self.rename(need("old_path"), need("new_path"))
        raise MemoryCommandError(f"unknown command {command!r}: use one of {', '.join(COMMANDS)}")

    # -- reading -------------------------------------------------------------------------------

    def view(self, path: str, view_range: Sequence[int] | None = None) -> str:
        target = self._target(path)
        if target.path.is_dir():
            if view_range is not None:
                raise MemoryCommandError("`view_range` applies to files, not directories")
            return self._listing(target)
        text = self._read(target)
        lines = text.splitlines()
        first, last = 1, len(lines)
        if view_range is not None:
            first, last = self._range(view_range, len(lines))
        numbered = [f"{n:>6}\t{lines[n - 1]}" for n in range(first, last + 1)]
        return f"Here's the content of {target.display} with line numbers:\n" + "\n".join(numbered)

    def read(self, path: str) -> str:
        target = self._target(path)
        if target.path.is_symlink():
            raise MemoryCommandError(f"{target.display} is a symlink, not a memory file")
        return self._read(target)

    @staticmethod
    def _range(view_range: Sequence[int], count: int) -> tuple[int, int]:
        if len(view_range) != 2 or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in view_range
        ):
            raise MemoryCommandError("`view_range` must be two line numbers: [start, end]")
        first, last = view_range
        last = count if last == -1 else last
        if not 1 <= first <= max(count, 1) or last < first or last > count:
            raise MemoryCommandError(
                f"`view_range` {list(view_range)} is outside the file's lines 1 to {count} "
                "(use -1 as the end for the last line)"
            )
        return first, last

    def _listing(self, target: _Target) -> str:
        rows: list[str] = []
        total = 0

        def walk(directory: Path, display: str, depth: int) -> None:
            nonlocal total
            try:
                children = sorted(directory.iterdir())
            except OSError:
                return
            for child in children:
                if child.name.startswith(".") or child.is_symlink():
                    continue
                shown = f"{display}/{child.name}"
                if child.is_dir():
                    rows.append(f"{'-':>6}\t{shown}/")
                    if depth < 2:
                        walk(child, shown, depth + 1)
                elif child.is_file():
                    size = child.stat().st_size
                    total += size
                    rows.append(f"{_size(size):>6}\t{shown}")

        if target.path.is_dir():
            walk(target.path, target.display.rstrip("/"), 1)
        header = (
            f"Here're the files and directories up to 2 levels deep in {target.display}, "
            "excluding hidden items:"
        )
        return "\n".join([header, f"{_size(total):>6}\t{target.display}", *rows])

    def _read(self, target: _Target) -> str:
        path = target.path
        if not path.exists():
            raise MemoryCommandError(f"The path {target.display} does not exist.")
        if not path.is_file():
            raise MemoryCommandError(f"{target.display} is not a file.")
        if path.stat().st_size > MAX_MEMORY_BYTES:
            raise MemoryCommandError(
                f"{target.display} is larger than a memory may be ({MAX_MEMORY_BYTES:,} bytes)"
            )
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise MemoryCommandError(f"{target.display} is not UTF-8 text") from exc
        except OSError as exc:
            raise MemoryCommandError(f"{target.display} cannot be read: {exc.strerror}") from exc

    # -- writing -------------------------------------------------------------------------------

    def create(self, path: str, file_text: str) -> str:
        target = self._writable(path)
        if target.path.exists() or target.path.is_symlink():
            raise MemoryCommandError(
                f"File {target.display} already exists: change it with str_replace or insert, "
                "or delete it first"
            )
        notes = self._save(target, file_text)
        return _with_notes(f"File created successfully at: {target.display}", notes)

    def str_replace(self, path: str, old_str: str, new_str: str = "") -> str:
        target = self._writable(path)
        text = self._read(target)
        if not old_str:
            raise MemoryCommandError("`old_str` must not be empty")
        count = text.count(old_str)
        if count == 0:
            raise MemoryCommandError(
                f"No replacement was performed: old_str did not appear verbatim in "
                f"{target.display}."
            )
        if count > 1:
            lines = sorted(
                {text.count("\n", 0, m.start()) + 1 for m in re.finditer(re.escape(old_str), text)}
            )
            raise MemoryCommandError(
                f"No replacement was performed: old_str occurs {count} times in "
                f"{target.display} (lines {', '.join(map(str, lines))}); make it unique."
            )
        at_line = text.count("\n", 0, text.index(old_str)) + 1
        updated = text.replace(old_str, new_str, 1)
        notes = self._save(target, updated)
        span = (at_line, at_line + new_str.count("\n"))
        return _with_notes(
            "The memory file has been edited. Here is the snippet showing the change (with "
            "line numbers):\n" + self._snippet(target, span),
            notes,
        )

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        target = self._writable(path)
        text = self._read(target)
        lines = text.splitlines()
        if not 0 <= insert_line <= len(lines):
            raise MemoryCommandError(
                f"Invalid `insert_line` {insert_line}: it must be between 0 and {len(lines)} "
                f"(the number of lines in {target.display})."
            )
        if not insert_text:
            raise MemoryCommandError("`insert_text` must not be empty")
        added = insert_text.splitlines() or [""]
        updated = "\n".join(lines[:insert_line] + added + lines[insert_line:]) + "\n"
        notes = self._save(target, updated)
        span = (insert_line + 1, insert_line + len(added))
        return _with_notes(
            f"The file {target.display} has been edited. Here is the snippet showing the change "
            "(with line numbers):\n" + self._snippet(target, span),
            notes,
        )

    def delete(self, path: str) -> str:
        target = self._writable(path)
        if not target.path.is_file():
            raise MemoryCommandError(f"The path {target.display} does not exist.")
        self.store.apply({target.path: None})
        self.store.reindex([target.path])
        return f"Successfully deleted {target.display}"

    def rename(self, old_path: str, new_path: str) -> str:
        source = self._writable(old_path)
        destination = self._writable(new_path)
        if source.relative == destination.relative:
            raise MemoryCommandError("`old_path` and `new_path` are the same file")
        if not source.path.is_file():
            raise MemoryCommandError(f"The path {source.display} does not exist.")
        if destination.path.exists() or destination.path.is_symlink():
            raise MemoryCommandError(f"The destination {destination.display} already exists.")
        text, notes = self._prepared(destination, self._read(source))
        self.store.apply({destination.path: text, source.path: None})
        self.store.reindex([source.path, destination.path])
        notes += self._index_limits()
        return _with_notes(f"Successfully renamed {source.display} to {destination.display}", notes)

    # -- the write path ------------------------------------------------------------------------

    def _save(self, target: _Target, text: str) -> list[str]:
        """Write ``text`` (checked, completed, scrubbed) as ``target`` and index it; the notes
        the result should carry."""
        text, notes = self._prepared(target, text)
        saved, skipped = self.store.save_files({target.path: text})
        if not saved:
            reason = skipped[0].split(": ", 1)[-1] if skipped else "the store refused it"
            raise MemoryCommandError(f"{target.display} was not saved: {reason}")
        return notes + self._index_limits()

    def _prepared(self, target: _Target, text: str) -> tuple[str, list[str]]:
        """``text`` as it will be written: frontmatter completed, the team gate passed, private
        data redacted, within the size limit."""
        from memframe.memdir.guard import scrub
        from memframe.scanning.gate import gate_findings

        text, notes = self._with_frontmatter(target, text)
        if target.in_team:
            key = target.relative[len(TEAM_DIR) + 1 :]
            findings = gate_findings(self.scanner, key, text)
            if findings:
                found = ", ".join(_describe(f.rule_id, f.where, f.line) for f in findings)
                raise MemoryCommandError(
                    f"Refused: {target.display} is team memory, shared with everyone on the team "
                    f"server, and this write holds what looks like a secret ({found}). Nothing "
                    "was written. Leave the secret out (say where it is kept instead), or keep "
                    "the note private at the top level of /memories."
                )
        text, labels = scrub(text, self.scanner, self.kinds)
        if labels:
            notes.append(f"redacted before saving: {', '.join(labels)}")
        if len(text.encode("utf-8")) > MAX_MEMORY_BYTES:
            raise MemoryCommandError(
                f"{target.display} would be larger than a memory may be ({MAX_MEMORY_BYTES:,} "
                "bytes): split it"
            )
        return text, notes

    def _with_frontmatter(self, target: _Target, text: str) -> tuple[str, list[str]]:
        """``text`` with a complete frontmatter: added when missing, repaired when a field is
        missing or the type is unknown; left exactly as it is when complete."""
        memory = parse_memory(text, target.path)
        present = _frontmatter_fields(text)
        kind = memory.type if memory.known_type else DEFAULT_TYPE
        if kind == "user" and target.in_team:
            raise MemoryCommandError(
                f"Refused: {target.display} says `type: user`, and user memories are always "
                f"private; save it at the top level of {ROOT} instead."
            )
        if present is not None and all(present.get(k) for k in _REQUIRED) and memory.known_type:
            return text, []
        if not memory.body.strip():
            raise MemoryCommandError(f"{target.display} would be empty: write its content")
        rendered = render_memory(memory.name, memory.description, kind, memory.body)
        if present is None:
            note = f"added frontmatter (name: {memory.name}; type: {kind})"
        else:
            missing = [k for k in _REQUIRED if not present.get(k)]
            fixes = [f"added {', '.join(missing)}"] if missing else []
            if not memory.known_type and "type" in present and present["type"]:
                fixes.append(
                    f"type {memory.type!r} is not one of {', '.join(MEMORY_TYPES)}: set to {kind}"
                )
            note = "repaired frontmatter: " + "; ".join(fixes)
            rendered = _keep_extra_fields(rendered, memory)
        return rendered, [note]

    def _index_limits(self) -> list[str]:
        """When ``MEMORY.md`` has grown past its limits, rebuild it within them."""
        text = self.store.index_text()
        lines, size = len(text.splitlines()), len(text.encode("utf-8"))
        if lines <= MAX_LINES and size <= MAX_BYTES:
            return []
        self.store.rebuild_index()
        return [
            f"{INDEX_FILE} had grown past its limits ({lines} lines, {size:,} bytes; at most "
            f"{MAX_LINES} lines and {MAX_BYTES:,} bytes are loaded) and was rebuilt within them"
        ]

    def _snippet(self, target: _Target, span: tuple[int, int]) -> str:
        try:
            lines = target.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return ""
        first = max(1, span[0] - SNIPPET_LINES)
        last = min(len(lines), span[1] + SNIPPET_LINES)
        return "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(first, last + 1))

    # -- paths ---------------------------------------------------------------------------------

    def _target(self, path: str) -> _Target:
        """``path`` (``/memories/…``) inside the memory directory, or a refusal."""
        if not isinstance(path, str) or not path:
            raise MemoryCommandError(f"`path` must be a path under {ROOT}")
        if "\x00" in path or "\\" in path:
            raise MemoryCommandError(f"{path!r}: NUL bytes and backslashes are refused")
        if path != ROOT and not path.startswith(ROOT + "/"):
            raise MemoryCommandError(f"Paths must start with {ROOT}, got {path!r}")
        parts = [part for part in path[len(ROOT) :].split("/") if part]
        for part in parts:
            if part in (".", ".."):
                raise MemoryCommandError(f"{path}: path traversal ('{part}') is refused")
            if part.startswith("."):
                raise MemoryCommandError(f"{path}: hidden files and directories are refused")
        root = self.store.root
        candidate = root.joinpath(*parts)
        resolved = candidate.resolve()
        if resolved != root and not resolved.is_relative_to(root):
            raise MemoryCommandError(f"{path}: it leads outside {ROOT} through a symlink")
        display = "/".join([ROOT, *parts])
        return _Target(display, "/".join(parts), candidate)

    def _writable(self, path: str) -> _Target:
        target = self._target(path)
        if not target.relative:
            raise MemoryCommandError(f"{ROOT} itself cannot be written, renamed or deleted")
        if target.relative == INDEX_FILE:
            raise MemoryCommandError(
                f"{target.display} is the index memframe keeps: it is updated whenever a "
                "memory file is written, renamed or deleted, and cannot be edited directly"
            )
        current = self.store.root
        for part in target.relative.split("/"):
            current = current / part
            if current.is_symlink():
                raise MemoryCommandError(
                    f"{target.display}: {current.relative_to(self.store.root)} is a symlink; "
                    "memory files are written only as regular files inside the directory"
                )
        if target.path.is_dir():
            raise MemoryCommandError(
                f"{target.display} is a directory: only memory files can be written, renamed "
                "or deleted"
            )
        if not self.store.placeable(target.relative):
            raise MemoryCommandError(
                f"{target.display} cannot be a memory file: memories are *.md files at the top "
                f"level of {ROOT} (private) or directly in {ROOT}/{TEAM_DIR}/ (shared with the "
                "team), without spaces or brackets in their names"
            )
        return target


# -- helpers -------------------------------------------------------------------------------------


def _frontmatter_fields(text: str) -> dict[str, str] | None:
    """The frontmatter's fields (lower-cased keys, values as written), ``None`` without one."""
    match = _FRONTMATTER.match(text)
    if match is None:
        return None
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        field = _FIELD.match(line)
        if field:
            fields.setdefault(field.group(1).lower(), field.group(2).strip("\"'"))
    return fields


def _keep_extra_fields(rendered: str, memory: Memory) -> str:
    """``rendered`` (a fresh frontmatter) with the original's other fields kept after its own."""
    if not memory.extra:
        return rendered
    extra = "".join(f"{key}: {' '.join(value.split())}\n" for key, value in memory.extra.items())
    head, sep, rest = rendered.partition("\n---\n")
    return f"{head}\n{extra.rstrip()}{sep}{rest}" if sep else rendered


def _describe(rule_id: str, where: str, line: int) -> str:
    if where == "text":
        return f"{rule_id} on line {line}"
    if where == "file name":
        return f"{rule_id} in the file name"
    return f"{rule_id} in the {where} on line {line}"


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "K", "M"):
        if value < 1024 or unit == "M":
            return f"{int(value)}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{size}B"  # pragma: no cover - the loop always returns


def _with_notes(message: str, notes: Sequence[str]) -> str:
    return message + "".join(f"\nNote: {note}." for note in notes)
