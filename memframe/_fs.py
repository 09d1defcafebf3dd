"""Private, atomic file writes: memory and state files are never half-written or world-readable.

**The rule for modes: memframe tightens only what it creates.**

- A directory memframe has to create (and each missing parent it creates on the way) is made
  ``0700``. A directory that already exists keeps its mode, whoever made it: memframe never
  ``chmod``s it (a server's ``--db`` folder, the folder of a Magic Doc, ``/tmp``…). The memory
  base and the memory directory are ``0700`` when memframe creates them; an existing one that is
  open to others is reported by ``memframe memory doctor``, not changed.
- A file memframe writes atomically is a new file: it gets ``mode`` (``0600`` by default)
  whatever the umask. ``keep_mode=True`` gives it the permission bits of the file it replaces
  instead (a user's file that memframe edits, such as a Magic Doc, keeps its mode; a missing
  file still gets ``mode``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def resolve_under(path: str | os.PathLike[str], base: Path) -> Path:
    """``path`` as an absolute path: ``~`` expanded, a relative path taken from ``base`` (the
    directory it was given in: a project, a hook's ``cwd``)."""
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else base / candidate


def is_inside(
    path: str | os.PathLike[str], directory: Path, *, base: Path | None = None, strict: bool = False
) -> bool:
    """Whether ``path`` is ``directory`` or inside it, after resolving symlinks of both (a
    symlink cannot smuggle a path in or out). A relative ``path`` is taken from ``base`` (the
    current directory when ``None``); ``strict`` excludes ``directory`` itself. The one
    "is this path inside that directory" of memframe."""
    target = resolve_under(path, base) if base is not None else Path(path).expanduser()
    root = os.path.realpath(directory)
    real = os.path.realpath(target)
    if real == root:
        return not strict
    return real.startswith(root.rstrip(os.sep) + os.sep)


def ensure_private_dir(path: Path) -> Path:
    """``path`` as a directory: created ``0700`` when missing, with each missing parent (also
    ``0700``). A directory that already exists, ``path`` or a parent, is left as it is."""
    missing: list[Path] = []
    current = path
    while not current.is_dir() and current.parent != current:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise  # a file is in the way: a clear error
            continue  # someone else made it meanwhile: theirs, left as it is
        # ``mode`` is filtered by the umask (a restrictive one could leave it unusable), and
        # this directory is the one just created: fixing it tightens nothing of anyone else's.
        if stat.S_IMODE(directory.lstat().st_mode) != PRIVATE_DIR_MODE:
            directory.chmod(PRIVATE_DIR_MODE)
    return path


def _kept_mode(path: Path, default: int) -> int:
    """The permission bits of the regular file at ``path`` (not following a symlink), else
    ``default``."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return default
    return stat.S_IMODE(st.st_mode) & 0o777 if stat.S_ISREG(st.st_mode) else default


@contextlib.contextmanager
def atomic_writer(
    path: Path,
    *,
    mode: int = PRIVATE_FILE_MODE,
    keep_mode: bool = False,
    tighten_dir: bool = True,
) -> Iterator[BinaryIO]:
    """A binary file that replaces ``path`` atomically when the block ends without an error:
    written to a temporary file beside it, fsynced, renamed over ``path``, directory fsynced.
    On an error the temporary file is removed and ``path`` is untouched.

    :param mode: the new file's permission bits (the umask does not narrow them).
    :param keep_mode: use the permission bits of the regular file being replaced, when there
        is one, instead of ``mode``.
    :param tighten_dir: kept for callers; it changes nothing. A missing directory is created
        ``0700`` and an existing one keeps its mode either way (the rule at the top).
    """
    del tighten_dir
    directory = path.parent
    ensure_private_dir(directory)
    if keep_mode:
        mode = _kept_mode(path, mode)
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
    path: Path,
    data: bytes,
    *,
    mode: int = PRIVATE_FILE_MODE,
    keep_mode: bool = False,
    tighten_dir: bool = True,
) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_writer`)."""
    with atomic_writer(path, mode=mode, keep_mode=keep_mode, tighten_dir=tighten_dir) as out:
        out.write(data)


def atomic_write_text(
    path: Path, text: str, *, mode: int = PRIVATE_FILE_MODE, keep_mode: bool = False
) -> None:
    """``atomic_write_bytes`` of the UTF-8 encoding of ``text``."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode, keep_mode=keep_mode)


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
