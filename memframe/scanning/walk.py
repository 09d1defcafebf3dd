"""What to scan: the files named, and the files below the directories named.

Directories are walked depth-first (a directory's files in name order, then its
subdirectories). ``.git`` is never entered, symbolic links met during a walk are not followed
(named ones are), ignored paths (:mod:`memframe.scanning.ignore`) are skipped, and so are binary
files (a NUL byte in the first 8 KiB). Ignore files are read from the repository root (the
nearest ancestor holding ``.git``; else the working directory when the path is inside it) down
to each file, so a named file that an ignore file lists is skipped too (what a pre-commit hook
needs); a named directory is always entered.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from memframe.scanning.ignore import IgnoreFile, IgnoreStack, is_ignored, push

BINARY_SNIFF_BYTES = 8192
JSONL_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True, slots=True)
class FileInput:
    """A file to scan: ``path`` to open, ``display`` to report (relative to the working directory
    when inside it, ``/``-separated), its size and whether it holds JSON lines."""

    path: str
    display: str
    size: int
    jsonl: bool


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file or directory left out: ``reason`` is ``binary``, ``ignored`` (an ignored directory
    is one item) or ``error: …``."""

    display: str
    reason: str


def display_path(path: str, cwd: str) -> str:
    """``path`` relative to ``cwd`` when inside it, else absolute; always ``/``-separated."""
    absolute = os.path.abspath(path)
    prefix = cwd if cwd.endswith(os.sep) else cwd + os.sep
    shown = absolute[len(prefix) :] if absolute.startswith(prefix) else absolute
    if absolute == cwd:
        shown = "."
    return shown.replace(os.sep, "/") if os.sep != "/" else shown


def is_binary(path: str) -> bool:
    """A NUL byte in the first 8 KiB (what git and ripgrep use)."""
    with open(path, "rb") as handle:
        return b"\0" in handle.read(BINARY_SNIFF_BYTES)


def _root_for(absolute: str, cwd: str) -> str:
    """Where ignore files start applying for ``absolute``: its repository root, else ``cwd`` when
    inside it, else its own directory."""
    start = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
    current = start
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    prefix = cwd if cwd.endswith(os.sep) else cwd + os.sep
    if start == cwd or start.startswith(prefix):
        return cwd
    return start


def _stack_down_to(
    root: str, directory: str, cache: dict[str, IgnoreFile | None] | None
) -> tuple[IgnoreStack, bool]:
    """The ignore files from ``root`` down to ``directory`` (inclusive), and whether a directory
    on the way (below ``root``) is ignored; ``cache`` None means ignore files are not read."""
    stack: IgnoreStack = ()
    if cache is None:
        return stack, False
    stack = push(stack, root, cache)
    rel = os.path.relpath(directory, root)
    if rel == ".":
        return stack, False
    hidden = False
    current = root
    for part in rel.split(os.sep):
        current = os.path.join(current, part)
        hidden = hidden or part == ".git" or is_ignored(stack, current, is_dir=True)
        stack = push(stack, current, cache)
    return stack, hidden


class Walker:
    """Turns the paths a user named into :class:`FileInput` (and :class:`Skipped`) items."""

    def __init__(
        self, *, use_ignore: bool = True, exclude: tuple[str, ...] = (), cwd: str | None = None
    ) -> None:
        self.use_ignore = use_ignore
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.exclude = frozenset(os.path.abspath(p) for p in exclude)
        # the ignore files of the directories above named paths, read once
        self._above: dict[str, IgnoreFile | None] | None = {} if use_ignore else None

    def _file(self, path: str, size: int) -> FileInput | Skipped:
        shown = display_path(path, self.cwd)
        try:
            if size and is_binary(path):
                return Skipped(shown, "binary")
        except OSError as exc:
            return Skipped(shown, f"error: {exc.strerror or exc}")
        return FileInput(path, shown, size, path.lower().endswith(JSONL_SUFFIXES))

    def walk(self, named: str) -> Iterator[FileInput | Skipped]:
        """Everything to scan for one named path (which must exist)."""
        absolute = os.path.abspath(named)
        root = _root_for(absolute, self.cwd)
        if os.path.isdir(absolute):
            stack, _ = _stack_down_to(root, absolute, self._above)
            yield from self._walk_dir(absolute, stack)
            return
        stack, hidden = _stack_down_to(root, os.path.dirname(absolute), self._above)
        if hidden or (self.use_ignore and is_ignored(stack, absolute, is_dir=False)):
            yield Skipped(display_path(absolute, self.cwd), "ignored")
            return
        try:
            size = os.stat(absolute).st_size
        except OSError as exc:
            yield Skipped(display_path(absolute, self.cwd), f"error: {exc.strerror or exc}")
            return
        yield self._file(absolute, size)

    def _walk_dir(self, top: str, top_stack: IgnoreStack) -> Iterator[FileInput | Skipped]:
        pending: list[tuple[str, IgnoreStack]] = [(top, top_stack)]
        while pending:
            directory, stack = pending.pop()
            try:
                with os.scandir(directory) as scan:
                    entries = sorted(scan, key=lambda e: e.name)
            except OSError as exc:
                yield Skipped(display_path(directory, self.cwd), f"error: {exc.strerror or exc}")
                continue
            subdirs: list[tuple[str, IgnoreStack]] = []
            for entry in entries:
                path = entry.path
                if entry.name == ".git" or path in self.exclude:
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    yield Skipped(display_path(path, self.cwd), f"error: {exc.strerror or exc}")
                    continue
                mode = info.st_mode
                if stat.S_ISDIR(mode):
                    if self.use_ignore and is_ignored(stack, path, is_dir=True):
                        yield Skipped(display_path(path, self.cwd), "ignored")
                        continue
                    sub_stack = push(stack, path) if self.use_ignore else stack
                    subdirs.append((path, sub_stack))
                elif stat.S_ISREG(mode):
                    if self.use_ignore and is_ignored(stack, path, is_dir=False):
                        yield Skipped(display_path(path, self.cwd), "ignored")
                        continue
                    yield self._file(path, info.st_size)
            # depth-first in name order: the first subdirectory is popped next
            pending.extend(reversed(subdirs))
