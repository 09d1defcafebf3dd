"""Per-session hook state, shared by the hook processes and the worker.

Files, in the session's directory ``<memory base>/projects/<project>/<session>/``:

- ``hook.json``: what the short-lived hook processes and the worker tell each other — the
  pending work (events not processed yet), the running worker (pid), the memory context last
  delivered, and a summary of the transcript reading (cursor) for people and tests. Every
  read-modify-write holds an exclusive ``flock`` on ``.hook.lock``; writes are atomic.
- ``hook-runtime.json``: the worker's own state (transcript cursor and file identity, what the
  incremental reader carries between increments, the session's counters and context meter).
- ``hook-history.jsonl``: the session's messages since the last compaction, one per line.
- ``.worker.lock``: held by the worker for its whole life: one worker per session.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from memframe._fs import atomic_write_bytes, ensure_private_dir, exclusive_lock
from memframe._process import Probe, probe_pid

STATE_FILE = "hook.json"
STATE_LOCK = ".hook.lock"
WORKER_LOCK = ".worker.lock"
RUNTIME_FILE = "hook-runtime.json"
HISTORY_FILE = "hook-history.jsonl"
SCHEMA = 1
MAX_PENDING = 200  # pending entries kept; older ones collapse (the worker reads the file anyway)


@dataclass(frozen=True)
class HookPaths:
    """Where one session's hook files live."""

    home: Path
    project_key: str
    session_id: str

    @classmethod
    def for_session(cls, home: Path, cwd: Path, session_id: str) -> HookPaths:
        from memframe.paths import project_key

        return cls(home, project_key(cwd), session_id)

    @property
    def session_dir(self) -> Path:
        return self.home / "projects" / self.project_key / self.session_id

    @property
    def state(self) -> Path:
        return self.session_dir / STATE_FILE

    @property
    def state_lock(self) -> Path:
        return self.session_dir / STATE_LOCK

    @property
    def worker_lock(self) -> Path:
        return self.session_dir / WORKER_LOCK

    @property
    def runtime(self) -> Path:
        return self.session_dir / RUNTIME_FILE

    @property
    def history(self) -> Path:
        return self.session_dir / HISTORY_FILE


# As memframe.session.validate_session_id (importing memframe.session costs the hook ~15 ms;
# a test holds the two equal).
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_RESERVED_IDS = frozenset({"memory"})


def valid_session_id(session_id: str | None) -> str:
    """``session_id`` when it can name a session directory; ``ValueError`` otherwise."""
    if (
        not isinstance(session_id, str)
        or not _SESSION_ID.fullmatch(session_id)
        or session_id in _RESERVED_IDS
    ):
        raise ValueError(f"invalid session id {session_id!r}")
    return session_id


def _empty() -> dict[str, Any]:
    return {"schema": SCHEMA, "pending": [], "worker": None}


def load_json(path: Path) -> dict[str, Any]:
    """A state file as a dict; ``{}`` when missing. An unreadable file is kept aside
    (``<name>.corrupt-<time>``, :func:`memframe.state.keep_aside`) and counts as empty: state is
    never a reason to fail."""
    from memframe.state import load_json_state

    return load_json_state(path, "hook state")


def ensure_session_dir(directory: Path) -> None:
    """The session directory (0700), created the first time."""
    if not directory.is_dir():
        ensure_private_dir(directory)


def save_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write_bytes(path, orjson.dumps(data, option=orjson.OPT_SORT_KEYS))


@contextlib.contextmanager
def locked_state(paths: HookPaths) -> Iterator[dict[str, Any]]:
    """``hook.json`` under the exclusive lock; changes to the yielded dict are saved on exit
    (when the block raised, nothing is saved)."""
    ensure_session_dir(paths.session_dir)
    with exclusive_lock(paths.state_lock):
        data = load_json(paths.state)
        if data.get("schema") != SCHEMA:
            data = _empty()
        before = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
        yield data
        if orjson.dumps(data, option=orjson.OPT_SORT_KEYS) != before:
            save_json(paths.state, data)


def read_state(paths: HookPaths) -> dict[str, Any]:
    """``hook.json`` as it is now (no lock: for display and tests)."""
    return load_json(paths.state)


def add_pending(state: dict[str, Any], entry: dict[str, Any]) -> None:
    pending = state.get("pending")
    if not isinstance(pending, list):
        pending = state["pending"] = []
    pending.append(entry)
    del pending[:-MAX_PENDING]


def take_pending(state: dict[str, Any]) -> list[dict[str, Any]]:
    pending = state.get("pending")
    state["pending"] = []
    if not isinstance(pending, list):
        return []
    return [entry for entry in pending if isinstance(entry, dict)]


# -- the worker process ----------------------------------------------------------------------


def is_hook_worker(pid: int) -> bool:
    """Whether ``pid`` is a live memframe hook worker of this user.

    Alive and ours by :func:`memframe._process.probe_pid` (another user's process exists, but
    is never our worker); on Linux its command line must name the worker too, so a recycled pid
    does not pass for one.
    """
    if probe_pid(pid) is not Probe.OURS:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # no procfs (macOS): trust the signal check
    except OSError:
        return True
    return b"hook-worker" in cmdline


def worker_running(state: dict[str, Any]) -> bool:
    worker = state.get("worker")
    if not isinstance(worker, dict):
        return False
    pid = worker.get("pid")
    return isinstance(pid, int) and not isinstance(pid, bool) and is_hook_worker(pid)


@contextlib.contextmanager
def worker_lock(paths: HookPaths, wait: float) -> Iterator[bool]:
    """The session's worker lock: yields ``True`` once held, ``False`` when another worker held
    it for ``wait`` seconds (a worker that is exiting releases it within moments)."""
    ensure_session_dir(paths.session_dir)
    with exclusive_lock(paths.worker_lock, wait, poll=0.05) as held:
        yield held
