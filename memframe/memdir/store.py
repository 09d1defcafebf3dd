"""The memory directory on disk: list, add (never a duplicate), forget, keep ``MEMORY.md`` in step.

Every read-modify-write of the index happens under an exclusive ``flock`` on
``<memory dir>/.memframe.lock``, and every file is written atomically, so several processes
(hook runs, sessions in parallel) can save memories into one directory at once.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memframe._fs import atomic_write_text, ensure_private_dir, exclusive_lock
from memframe.memdir.files import (
    DEFAULT_SCOPE,
    MEMORY_TYPES,
    TEAM_DIR,
    Memory,
    MemoryFormatError,
    normalise,
    parse_memory,
    render_memory,
    slugify,
)
from memframe.memdir.index import INDEX_FILE, index_line, indexed_files, update_index
from memframe.privacy import PERSONAL_KINDS

if TYPE_CHECKING:
    from memframe.scanner import SecretScanner
    from memframe.scanning.gate import GateFinding

LOCK_FILE = ".memframe.lock"
MAX_MEMORY_BYTES = 250_000


@dataclass
class DoctorReport:
    """What ``memframe memory doctor`` found (empty lists: healthy)."""

    index_lines: int = 0
    index_bytes: int = 0
    over_limit: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)  # files the index does not mention
    dangling: list[str] = field(default_factory=list)  # index lines pointing nowhere
    duplicates: list[list[str]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # older than ``stale_days``
    bad_permissions: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    unknown_types: list[str] = field(default_factory=list)
    # files holding a secret or personal data ("file: rule-id, email"); ``--fix`` redacts them
    private_data: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)  # files ``--fix`` redacted

    @property
    def healthy(self) -> bool:
        return not (
            self.private_data
            or self.over_limit
            or self.orphans
            or self.dangling
            or self.duplicates
            or self.bad_permissions
            or self.unreadable
        )


class SecretGateError(MemoryFormatError):
    """A move into ``team/`` refused by the secret gate: ``findings`` names each rule."""

    def __init__(self, relative: str, findings: list[GateFinding]) -> None:
        self.relative = relative
        self.findings = findings
        rules = ", ".join(f.describe() for f in findings)
        super().__init__(
            f"{relative} stays private: a team memory is shared and this one contains a "
            f"secret ({rules})"
        )

    @property
    def rule_ids(self) -> list[str]:
        return [f.rule_id for f in self.findings]


class MemoryStore:
    def __init__(self, root: Path) -> None:
        # resolved: agents report resolved paths, and a symlinked base must compare equal
        self.root = root.resolve()

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_FILE

    # -- reading -------------------------------------------------------------------------------

    def memory_paths(self) -> list[Path]:
        """Memory files (``*.md`` but the index), private and team, sorted; hidden files and
        symlinks are skipped."""
        if not self.root.is_dir():
            return []
        found = []
        for directory in (self.root, self.root / TEAM_DIR):
            if not directory.is_dir() or directory.is_symlink():
                continue
            for path in directory.glob("*.md"):
                if path.name.startswith(".") or path.is_symlink() or not path.is_file():
                    continue
                if path == self.index_path:
                    continue
                found.append(path)
        return sorted(found)

    def read(self, path: Path) -> Memory:
        stat = path.stat()
        if stat.st_size > MAX_MEMORY_BYTES:
            raise MemoryFormatError(
                f"{path} is {stat.st_size:,} bytes (limit {MAX_MEMORY_BYTES:,})"
            )
        return parse_memory(path.read_text(encoding="utf-8"), path, stat.st_mtime)

    def memories(self) -> list[Memory]:
        """Every readable memory (unreadable ones are skipped; ``doctor`` reports them)."""
        out = []
        for path in self.memory_paths():
            try:
                out.append(self.read(path))
            except (OSError, UnicodeDecodeError, MemoryFormatError):
                continue
        return out

    def index_text(self) -> str:
        try:
            return self.index_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def find(self, ref: str) -> Memory:
        """A memory by file (``name.md``, ``team/name.md``) or by its ``name``. The exact
        relative path wins (``x.md`` is the private ``x.md`` even when ``team/x.md`` exists);
        then a file name or a name that only one memory has — an ambiguous one is a
        ``KeyError`` naming the candidates, never a guess."""
        memories = self.memories()
        for memory in memories:
            if memory.relative_to(self.root) == ref:
                return memory
        matches = [m for m in memories if ref in (m.path.name, m.name)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            names = ", ".join(m.relative_to(self.root) for m in matches)
            raise KeyError(f"{ref!r} is ambiguous in {self.root}: {names}; name the file")
        raise KeyError(f"no memory {ref!r} in {self.root}")

    # -- writing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive across processes for read-modify-write of the directory and its index."""
        ensure_private_dir(self.root)
        with exclusive_lock(self.root / LOCK_FILE):
            yield

    def duplicate_of(self, body: str, memories: Iterable[Memory] | None = None) -> Memory | None:
        key = normalise(body)
        for memory in self.memories() if memories is None else memories:
            if normalise(memory.body) == key:
                return memory
        return None

    def add(
        self,
        name: str,
        description: str,
        kind: str,
        body: str,
        *,
        scope: str | None = None,
        scanner: SecretScanner | None = None,
        personal: Collection[str] = PERSONAL_KINDS,
    ) -> Memory | None:
        """Save a new memory and index it; ``None`` when an equal memory already exists. Secrets
        (``scanner``, the bundled rules by default) and personal data (``personal``: e-mail
        addresses, phone numbers, postal addresses) are redacted first
        (:func:`memframe.memdir.guard.scrub`)."""
        from memframe.memdir.guard import scrub
        from memframe.scanner import default_scanner

        scanner = scanner or default_scanner()
        name, _ = scrub(name, scanner, personal)
        description, _ = scrub(description, scanner, personal)
        body, _ = scrub(body, scanner, personal)
        text = render_memory(name, description, kind, body)
        if len(text.encode("utf-8")) > MAX_MEMORY_BYTES:
            raise MemoryFormatError(f"a memory is limited to {MAX_MEMORY_BYTES:,} bytes")
        scope = scope or DEFAULT_SCOPE.get(kind, "private")
        if scope not in ("private", "team"):
            raise MemoryFormatError(f"scope must be private or team, got {scope!r}")
        if kind == "user" and scope == "team":
            raise MemoryFormatError("user memories are always private")
        with self.locked():
            if self.duplicate_of(body) is not None:
                return None
            directory = self.root / TEAM_DIR if scope == "team" else self.root
            ensure_private_dir(directory)
            path = self._free_path(directory, slugify(name))
            atomic_write_text(path, text)
            memory = self.read(path)
            self._index({memory.relative_to(self.root): memory})
            return memory

    def save_files(self, files: dict[Path, str]) -> tuple[list[Memory], list[str]]:
        """Write memory files an agent produced, under the lock: never a duplicate of an existing
        memory (or of another file in the batch), never the index, never outside the directory.
        Returns the memories saved and why the others were not."""
        saved: list[Memory] = []
        skipped: list[str] = []
        with self.locked():
            seen = {normalise(m.body): m.path for m in self.memories()}
            for path, text in files.items():
                try:
                    relative = path.relative_to(self.root).as_posix()
                except ValueError:
                    skipped.append(f"{path}: outside the memory directory")
                    continue
                why = self._unplaceable(relative)
                if why:
                    skipped.append(f"{relative}: {why}")
                    continue
                memory = parse_memory(text, path)
                if not memory.known_type:
                    skipped.append(f"{relative}: type {memory.type!r} is not one of {MEMORY_TYPES}")
                    continue
                if memory.type == "user" and relative.startswith(f"{TEAM_DIR}/"):
                    skipped.append(f"{relative}: user memories are always private")
                    continue
                key = normalise(memory.body)
                if not key:
                    skipped.append(f"{relative}: empty")
                    continue
                other = seen.get(key)
                if other is not None and other != path:
                    skipped.append(f"{relative}: duplicate of {other.relative_to(self.root)}")
                    continue
                ensure_private_dir(path.parent)
                atomic_write_text(path, text)
                seen[key] = path
                saved.append(self.read(path))
            self._index({m.relative_to(self.root): m for m in saved})
        return saved, skipped

    def apply(self, changes: dict[Path, str | None]) -> tuple[list[str], list[str]]:
        """Apply an agent's consolidation under the lock: ``None`` deletes a file, text rewrites
        it. Only memory files inside the directory; the index is left to ``rebuild_index``.
        Returns (deleted, written) as relative paths."""
        deleted: list[str] = []
        written: list[str] = []
        with self.locked():
            for path, text in changes.items():
                try:
                    relative = path.relative_to(self.root).as_posix()
                except ValueError:
                    continue
                if self._unplaceable(relative):
                    continue
                in_team = relative.startswith(f"{TEAM_DIR}/")
                if in_team and text is not None and parse_memory(text, path).type == "user":
                    continue  # user memories are always private
                if text is None:
                    path.unlink(missing_ok=True)
                    deleted.append(relative)
                else:
                    ensure_private_dir(path.parent)
                    atomic_write_text(path, text)
                    written.append(relative)
        return deleted, written

    def placeable(self, relative: str) -> bool:
        return self._unplaceable(relative) is None

    @staticmethod
    def _unplaceable(relative: str) -> str | None:
        """Why ``relative`` cannot be a memory file (``None`` when it can): memories live at
        the top level or directly in ``team/``, as ``*.md``, never as the index."""
        parts = relative.split("/")
        if relative == INDEX_FILE or not relative.endswith(".md"):
            return "only memory files (*.md, not the index)"
        if len(parts) > 2 or (len(parts) == 2 and parts[0] != TEAM_DIR):
            return f"memories live at the top level or in {TEAM_DIR}/"
        if any(part.startswith(".") for part in parts):
            return "hidden file"
        if any(ch.isspace() or ch in "()[]" for ch in relative):
            return "file names may not contain spaces or brackets (they break the index links)"
        return None

    def _free_path(self, directory: Path, slug: str) -> Path:
        path = directory / f"{slug}.md"
        number = 1
        while path.exists() or path.is_symlink() or path.name == INDEX_FILE:
            number += 1
            path = directory / f"{slug}-{number}.md"
        return path

    def forget(self, ref: str) -> str:
        """Delete a memory and its index line; an index line pointing nowhere can be forgotten
        by its file name too. Returns the relative file name."""
        with self.locked():
            try:
                memory = self.find(ref)
            except KeyError:
                if ref not in indexed_files(self.index_text()):
                    raise
                relative = ref
            else:
                memory.path.unlink()
                relative = memory.relative_to(self.root)
            self._write_index(update_index(self.index_text(), {}, [relative]))
            return relative

    def edit(
        self,
        ref: str,
        *,
        name: str | None = None,
        description: str | None = None,
        kind: str | None = None,
        body: str | None = None,
        scanner: SecretScanner | None = None,
        personal: Collection[str] = PERSONAL_KINDS,
    ) -> Memory:
        """Rewrite a memory in place (the fields given; the others are kept), atomically and
        under the lock, and refresh its index line. Secrets and personal data are redacted as
        :meth:`add` does; a body equal to another memory's, a ``user`` memory in ``team/`` or
        an unknown type is refused (:class:`MemoryFormatError`). Returns the memory as saved."""
        from memframe.memdir.guard import scrub
        from memframe.scanner import default_scanner

        scanner = scanner or default_scanner()
        with self.locked():
            memory = self.find(ref)
            relative = memory.relative_to(self.root)
            new_name, _ = scrub(memory.name if name is None else name, scanner, personal)
            new_description, _ = scrub(
                memory.description if description is None else description, scanner, personal
            )
            new_body, _ = scrub(memory.body if body is None else body, scanner, personal)
            new_kind = memory.type if kind is None else kind.strip().lower()
            if new_kind == "user" and memory.scope(self.root) == "team":
                raise MemoryFormatError("user memories are always private")
            text = render_memory(new_name, new_description, new_kind, new_body)
            if len(text.encode("utf-8")) > MAX_MEMORY_BYTES:
                raise MemoryFormatError(f"a memory is limited to {MAX_MEMORY_BYTES:,} bytes")
            others = [m for m in self.memories() if m.path != memory.path]
            duplicate = self.duplicate_of(new_body, others)
            if duplicate is not None:
                raise MemoryFormatError(
                    f"the text is already remembered in {duplicate.relative_to(self.root)}"
                )
            atomic_write_text(memory.path, text)
            saved = self.read(memory.path)
            self._index({relative: saved})
            return saved

    def move(self, ref: str, scope: str, *, scanner: SecretScanner | None = None) -> Memory:
        """Move a memory between ``private`` (the top level) and ``team`` (``team/``, shared by
        team sync), under the lock: the file is written at its new place atomically, then the
        old one removed, and the index line follows it. A move into ``team/`` passes the team
        sync's secret gate first (:func:`memframe.scanning.gate.gate_findings` on the new key
        and the text, with ``scanner``, the bundled rules by default): a finding refuses it
        with :class:`SecretGateError` and nothing changes. ``user`` memories stay private.
        Returns the memory at its new place (the same one when it is already there)."""
        from memframe.scanner import default_scanner
        from memframe.scanning.gate import gate_findings

        if scope not in ("private", "team"):
            raise MemoryFormatError(f"scope must be private or team, got {scope!r}")
        with self.locked():
            memory = self.find(ref)
            if memory.scope(self.root) == scope:
                return memory
            if scope == "team" and memory.type == "user":
                raise MemoryFormatError("user memories are always private")
            directory = self.root / TEAM_DIR if scope == "team" else self.root
            target = self._free_path(directory, memory.path.stem)
            text = memory.path.read_text(encoding="utf-8")
            if scope == "team":
                key = target.relative_to(directory).as_posix()
                findings = gate_findings(scanner or default_scanner(), key, text)
                if findings:
                    raise SecretGateError(memory.relative_to(self.root), findings)
            ensure_private_dir(directory)
            atomic_write_text(target, text)
            memory.path.unlink()
            moved = self.read(target)
            old = memory.relative_to(self.root)
            self._index({moved.relative_to(self.root): moved}, [old])
            return moved

    def reindex(self, paths: Iterable[Path]) -> None:
        """Index lines for files written by someone else (an agent): added or refreshed; lines
        of files that no longer exist are dropped."""
        with self.locked():
            self._reindex(paths)

    def _reindex(self, paths: Iterable[Path]) -> None:
        present: dict[str, Memory] = {}
        gone: list[str] = []
        for path in paths:
            relative = path.relative_to(self.root).as_posix()
            if path.is_file():
                with contextlib.suppress(OSError, UnicodeDecodeError, MemoryFormatError):
                    present[relative] = self.read(path)
            else:
                gone.append(relative)
        self._index(present, gone)

    def rebuild_index(self, memories: list[Memory] | None = None) -> str:
        """Rewrite ``MEMORY.md`` from the files: one line per memory, grouped by type, newest
        first, so the index fits its limits with the most useful lines on top."""
        with self.locked():
            memories = self.memories() if memories is None else memories
            order = {kind: n for n, kind in enumerate(MEMORY_TYPES)}
            memories.sort(key=lambda m: (order.get(m.type, len(order)), -m.mtime, m.name))
            lines = ["# Memory index", ""]
            current = None
            for memory in memories:
                if memory.type != current:
                    current = memory.type
                    if len(lines) > 2:
                        lines.append("")
                    lines.append(f"## {current}")
                lines.append(
                    index_line(memory.name, memory.relative_to(self.root), memory.description)
                )
            text = "\n".join(_within_limits(lines, len(memories))) + "\n"
            self._write_index(text)
            return text

    def _index(self, present: dict[str, Memory], gone: Iterable[str] = ()) -> None:
        gone = list(gone)
        if not present and not gone:
            return
        lines = {rel: index_line(m.name, rel, m.description) for rel, m in present.items()}
        current = self.index_text()
        updated = update_index(current or "# Memory index\n", lines, gone)
        if updated != current:
            self._write_index(updated)

    def _write_index(self, text: str) -> None:
        atomic_write_text(self.index_path, text)

    # -- health --------------------------------------------------------------------------------

    def doctor(
        self,
        stale_days: int = 90,
        now: float | None = None,
        *,
        scanner: SecretScanner | None = None,
        personal: Collection[str] = PERSONAL_KINDS,
        fix: bool = False,
    ) -> DoctorReport:
        """The directory's health. Every memory file and the index are scanned for secrets
        (``scanner``, the bundled rules by default) and personal data (``personal``); with
        ``fix`` the files that hold some are redacted in place (atomically, under the lock)
        and re-indexed, and are no longer reported."""
        from memframe.scanner import default_scanner

        scanner = scanner or default_scanner()
        if fix:
            with self.locked():
                report = self._doctor(stale_days, now, scanner, personal, fix=True)
            return report
        return self._doctor(stale_days, now, scanner, personal, fix=False)

    def _doctor(
        self,
        stale_days: int,
        now: float | None,
        scanner: SecretScanner,
        personal: Collection[str],
        *,
        fix: bool,
    ) -> DoctorReport:
        from memframe.memdir.guard import scrub
        from memframe.memdir.index import MAX_BYTES, MAX_LINES

        now = time.time() if now is None else now
        report = DoctorReport()
        text = self.index_text()
        report.index_lines = len(text.splitlines())
        report.index_bytes = len(text.encode("utf-8"))
        if report.index_lines > MAX_LINES:
            report.over_limit.append(f"{report.index_lines} lines (limit {MAX_LINES})")
        if report.index_bytes > MAX_BYTES:
            report.over_limit.append(f"{report.index_bytes:,} bytes (limit {MAX_BYTES:,})")
        indexed = indexed_files(text)
        files = {p.relative_to(self.root).as_posix(): p for p in self.memory_paths()}
        report.dangling = sorted(f for f in indexed if f not in files)
        report.orphans = sorted(f for f in files if f not in indexed)
        by_body: dict[str, list[str]] = {}
        for relative, path in files.items():
            try:
                memory = self.read(path)
            except (OSError, UnicodeDecodeError, MemoryFormatError) as exc:
                report.unreadable.append(f"{relative}: {exc}")
                continue
            by_body.setdefault(normalise(memory.body), []).append(relative)
            if memory.age_days(now) > stale_days:
                report.stale.append(f"{relative} ({memory.age_days(now)} days)")
            if not memory.known_type:
                report.unknown_types.append(f"{relative} (type {memory.type!r})")
        report.duplicates = sorted(sorted(g) for g in by_body.values() if len(g) > 1)
        redacted: list[Path] = []
        for relative, path in sorted([*files.items(), (INDEX_FILE, self.index_path)]):
            try:
                original = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # missing index, or already reported as unreadable
            clean, labels = scrub(original, scanner, personal)
            if not labels:
                continue
            if fix:
                atomic_write_text(path, clean)
                report.fixed.append(f"{relative}: {', '.join(labels)}")
                if path != self.index_path:
                    redacted.append(path)
            else:
                report.private_data.append(f"{relative}: {', '.join(labels)}")
        if redacted:
            self._reindex(redacted)
        for path in [self.root, *files.values(), self.index_path]:
            if not path.exists():
                continue
            mode = path.stat().st_mode & 0o777
            expected = 0o700 if path.is_dir() else 0o600
            if mode & 0o077:
                report.bad_permissions.append(
                    f"{path} is {oct(mode)[2:]} (expected {oct(expected)[2:]})"
                )
        return report


def _within_limits(lines: list[str], total: int) -> list[str]:
    """Index lines cut to ``MAX_LINES`` and ``MAX_BYTES`` (room kept for a last line saying how
    many memories are not listed)."""
    from memframe.memdir.index import MAX_BYTES, MAX_LINES

    kept: list[str] = []
    used = 0
    for line in lines:
        cost = len(line.encode("utf-8")) + 1
        if len(kept) >= MAX_LINES - 1 or used + cost > MAX_BYTES - 200:
            break
        kept.append(line)
        used += cost
    if len(kept) < len(lines):
        listed = sum(1 for line in kept if line.startswith("- ["))
        kept.append(f"- … {total - listed} more memories are not listed here (see the folder)")
    return kept
