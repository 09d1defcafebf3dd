"""Private, atomic file writes: memory and state files are never half-written or world-readable."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700, and the parents it needs (also 0700); tighten ``path`` if
    it already exists. Parents that already exist are left as they are."""
    missing: list[Path] = []
    current = path
    while not current.exists() and current.parent != current:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        # ``mode`` is filtered by the umask (and pathlib's ``parents=True`` ignores it for the
        # parents), so each directory is created one by one and checked below.
        directory.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        if directory != path and directory.stat().st_mode & 0o777 != PRIVATE_DIR_MODE:
            directory.chmod(PRIVATE_DIR_MODE)
    if not missing:
        path.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)  # not a directory → a clear error
    if path.stat().st_mode & 0o777 != PRIVATE_DIR_MODE:
        path.chmod(PRIVATE_DIR_MODE)
    return path


@contextlib.contextmanager
def atomic_writer(
    path: Path, *, mode: int = PRIVATE_FILE_MODE, tighten_dir: bool = True
) -> Iterator[BinaryIO]:
    """A binary file that replaces ``path`` atomically when the block ends without an error:
    written to a temporary file beside it, fsynced, renamed over ``path``, directory fsynced.
    On an error the temporary file is removed and ``path`` is untouched.

    :param tighten_dir: make the directory 0700 (memframe's own directories). ``False`` for a
        directory that belongs to someone else (Claude Code's settings, a user's files): only a
        missing one is created, 0700, and an existing one is left as it is.
    """
    directory = path.parent
    if tighten_dir:
        ensure_private_dir(directory)
    elif not directory.is_dir():
        directory.mkdir(mode=PRIVATE_DIR_MODE, parents=True)
    # a name no other writer uses (O_EXCL refuses one that exists); not ``tempfile``, whose
    # import alone costs the hook command ~13 ms
    tmp_name = directory / f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fchmod(out.fileno(), mode)  # the umask may have narrowed it
            os.fsync(out.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_write_bytes(
    path: Path, data: bytes, *, mode: int = PRIVATE_FILE_MODE, tighten_dir: bool = True
) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_writer`)."""
    with atomic_writer(path, mode=mode, tighten_dir=tighten_dir) as out:
        out.write(data)


def atomic_write_text(path: Path, text: str, *, mode: int = PRIVATE_FILE_MODE) -> None:
    """``atomic_write_bytes`` of the UTF-8 encoding of ``text``."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


@contextlib.contextmanager
def exclusive_lock(path: Path, wait: float | None = None, *, poll: float = 0.02) -> Iterator[bool]:
    """An exclusive ``flock`` on ``path`` (created 0600), across threads and processes: yields
    ``True`` once held, ``False`` when another holder kept it for ``wait`` seconds (``None``:
    wait as long as it takes). Released on exit."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    try:
        if not _flock(fd, wait, poll):
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _flock(fd: int, wait: float | None, poll: float) -> bool:
    if wait is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)
