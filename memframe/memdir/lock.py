"""``<memory dir>/.consolidate-lock``: who is consolidating, and when it last happened.

The file's mtime is the time of the last consolidation; its body, while a consolidation runs,
is the holder's PID. A lock is held while its body names a live process and it is younger than
an hour; otherwise anyone may reclaim it. Acquisition is serialised across processes with an
``flock`` on a guard file, so exactly one of several racing processes wins. A failed run rolls
the file back (body and mtime), so the time gate does not think it consolidated.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memframe._fs import atomic_write_text, ensure_private_dir, exclusive_lock
from memframe._process import pid_alive

LOCK_FILE = ".consolidate-lock"
GUARD_FILE = ".consolidate-lock.guard"
STALE_AFTER = 3600.0


@dataclass(frozen=True)
class Acquired:
    """What the lock looked like before we took it (for the rollback)."""

    prior_mtime: float | None
    prior_body: str | None


class ConsolidationLock:
    def __init__(self, memory_dir: Path, stale_after: float = STALE_AFTER) -> None:
        self.path = memory_dir / LOCK_FILE
        self.guard = memory_dir / GUARD_FILE
        self.stale_after = stale_after

    def last_consolidated(self) -> float:
        """The mtime of the lock (0.0 when there has never been a consolidation)."""
        try:
            return self.path.stat().st_mtime
        except FileNotFoundError:
            return 0.0

    def holder(self, now: float | None = None) -> int | None:
        """The PID holding the lock now, or ``None`` when it is free (or stale)."""
        now = time.time() if now is None else now
        try:
            body = self.path.read_text(encoding="utf-8").strip()
            mtime = self.path.stat().st_mtime
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        if not body.isdigit():
            return None
        pid = int(body)
        if now - mtime >= self.stale_after or not pid_alive(pid):
            return None
        return pid

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        ensure_private_dir(self.path.parent)
        with exclusive_lock(self.guard):
            yield

    def try_acquire(self, pid: int | None = None) -> Acquired | None:
        """Take the lock for ``pid`` (default: this process); ``None`` when someone holds it."""
        with self._guarded():
            if self.holder() is not None:
                return None
            try:
                prior: Acquired = Acquired(
                    self.path.stat().st_mtime, self.path.read_text(encoding="utf-8")
                )
            except (FileNotFoundError, UnicodeDecodeError):
                prior = Acquired(None, None)
            atomic_write_text(self.path, f"{os.getpid() if pid is None else pid}\n")
            return prior

    def release(self, acquired: Acquired, *, success: bool) -> None:
        """Success: the lock now records this consolidation (empty body, mtime now).
        Failure: back to exactly what it was before."""
        with self._guarded():
            if success:
                atomic_write_text(self.path, "")
                return
            if acquired.prior_mtime is None:
                self.path.unlink(missing_ok=True)
                return
            atomic_write_text(self.path, acquired.prior_body or "")
            os.utime(self.path, (acquired.prior_mtime, acquired.prior_mtime))
