"""What team sync remembers per memory directory, the lock around a sync, and the local files.

``<memory dir>/.team-sync.json`` (0600, written atomically):

- ``last_known_checksum``: the server's repo checksum as last seen (``If-Match`` on push,
  ``If-None-Match`` on pull);
- ``server_checksums``: key → ``"sha256:<hex>"`` of each entry on the server as last seen;
- ``unpulled``: keys the server changed since this client last synced them (learned from a
  ``view=hashes`` refresh) → the checksum this client last synced (``null``: never). A pull
  fetches them (no ``If-None-Match`` while any is listed); a push never overwrites them;
- ``server_max_entries``: the entry limit learned from a 413;
- ``blocked``: key → local checksum, rules and lines of entries the secret gate kept back;
- ``permanent_failure``: the last push that failed for good (401, 403, 400, 413…) with the
  fingerprint of the local content then: pushes are skipped until something changes;
- ``last_error``, ``last_pull``, ``last_push``: for ``status``.

The state belongs to one server and repo: pointing the directory at another starts afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from memframe import _backend
from memframe._fs import PRIVATE_FILE_MODE, atomic_write_bytes, ensure_private_dir, exclusive_lock
from memframe.state import load_json_state
from memframe.team_keys import MAX_ENTRY_BYTES, local_keys
from memframe.team_sync.settings import SyncError

STATE_FILE = ".team-sync.json"
LOCK_FILE = ".team-sync.lock"
TEAM_DIR = "team"
STATE_VERSION = 1
log = logging.getLogger("memframe.team_sync")


@dataclass
class BlockedEntry:
    """An entry the secret gate kept back: its local checksum when scanned, rules and lines."""

    checksum: str
    rules: list[str]
    lines: list[int] = field(default_factory=list)


@dataclass
class Failure:
    """A failed sync: ``kind`` is ``permanent``, ``transient``, ``conflict`` or ``error``."""

    kind: str
    message: str
    at: float
    status: int | None = None
    code: str | None = None
    fingerprint: str | None = None  # permanent failures: the local content then


@dataclass
class SyncState:
    server: str | None = None
    repo: str | None = None
    last_known_checksum: str | None = None
    server_checksums: dict[str, str] = field(default_factory=dict)
    unpulled: dict[str, str | None] = field(default_factory=dict)
    server_max_entries: int | None = None
    blocked: dict[str, BlockedEntry] = field(default_factory=dict)
    permanent_failure: Failure | None = None
    last_error: Failure | None = None
    last_pull: float | None = None
    last_push: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SyncState:
        """Parse defensively: a malformed field is dropped, not trusted."""
        state = cls(
            server=_str(data.get("server")),
            repo=_str(data.get("repo")),
            last_known_checksum=_str(data.get("last_known_checksum")),
            server_max_entries=_int(data.get("server_max_entries")),
            last_pull=_float(data.get("last_pull")),
            last_push=_float(data.get("last_push")),
            permanent_failure=_failure(data.get("permanent_failure")),
            last_error=_failure(data.get("last_error")),
        )
        checksums = data.get("server_checksums")
        if isinstance(checksums, dict):
            state.server_checksums = {
                k: v for k, v in checksums.items() if isinstance(k, str) and isinstance(v, str)
            }
        unpulled = data.get("unpulled")
        if isinstance(unpulled, dict):
            state.unpulled = {
                k: v
                for k, v in unpulled.items()
                if isinstance(k, str) and (v is None or isinstance(v, str))
            }
        blocked = data.get("blocked")
        if isinstance(blocked, dict):
            for key, value in blocked.items():
                if isinstance(key, str) and isinstance(value, dict):
                    checksum, rules = value.get("checksum"), value.get("rules")
                    lines = value.get("lines", [])
                    if isinstance(checksum, str) and isinstance(rules, list):
                        state.blocked[key] = BlockedEntry(
                            checksum,
                            [r for r in rules if isinstance(r, str)],
                            [n for n in lines if isinstance(n, int)]
                            if isinstance(lines, list)
                            else [],
                        )
        return state


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _failure(value: Any) -> Failure | None:
    if not isinstance(value, dict):
        return None
    kind, message, at = value.get("kind"), value.get("message"), _float(value.get("at"))
    if not isinstance(kind, str) or not isinstance(message, str) or at is None:
        return None
    return Failure(
        kind,
        message,
        at,
        _int(value.get("status")),
        _str(value.get("code")),
        _str(value.get("fingerprint")),
    )


def state_path(memory_dir: Path) -> Path:
    return memory_dir / STATE_FILE


def _state_key(server: str | None, repo: str | None) -> str:
    return f"{server} {repo}"


def _read_states(memory_dir: Path) -> dict[str, Any]:
    """Every stored state by ``"<server> <repo>"`` (one per server and repo, so syncing another
    repo never makes this one forget what it knew). The older single-state layout is read too."""
    path = state_path(memory_dir)
    try:
        data = load_json_state(path, "team sync state")
    except OSError as exc:
        raise SyncError(f"cannot read the team sync state {path}: {exc}") from exc
    states = data.get("states")
    if isinstance(states, dict):
        return {k: v for k, v in states.items() if isinstance(v, dict)}
    if data.get("server"):  # the single-state layout
        return {_state_key(data.get("server"), data.get("repo")): data}
    return {}


def load_state(memory_dir: Path, server: str, repo: str) -> SyncState:
    """The state for ``server`` and ``repo`` (fresh when missing or unreadable)."""
    entry = _read_states(memory_dir).get(_state_key(server, repo))
    if entry is None:
        return SyncState(server=server, repo=repo)
    state = SyncState.from_json(entry)
    if (state.server, state.repo) != (server, repo):
        return SyncState(server=server, repo=repo)
    return state


def save_state(memory_dir: Path, state: SyncState) -> None:
    """Store ``state`` beside the states of other servers and repos (call under the sync lock)."""
    states = _read_states(memory_dir)
    key = _state_key(state.server, state.repo)
    states[key] = state.to_json()
    document = {"current": key, "states": states}
    payload = orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    atomic_write_bytes(state_path(memory_dir), payload, mode=PRIVATE_FILE_MODE)


@contextlib.contextmanager
def sync_lock(memory_dir: Path, timeout: float) -> Iterator[None]:
    """One sync at a time per memory directory, across threads and processes (``flock`` on
    ``<memory dir>/.team-sync.lock``)."""
    ensure_private_dir(memory_dir)
    with exclusive_lock(memory_dir / LOCK_FILE, timeout) as held:
        if not held:
            raise SyncError(
                f"another team sync of {memory_dir} is still running (waited {timeout:g} s)"
            )
        yield


# -- the local side ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalEntry:
    path: Path
    checksum: str
    text: str


@dataclass
class LocalFiles:
    """The team files: readable entries, and the keys left out with why."""

    entries: dict[str, LocalEntry] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def keys(self) -> set[str]:
        return set(self.entries) | set(self.skipped)

    def fingerprint(self, identity: str) -> str:
        """A digest of every local key and checksum (and of the configuration ``identity``)."""
        digest = hashlib.sha256(identity.encode() + b"\n")
        for key in sorted(self.entries):
            digest.update(key.encode("utf-8") + b"\x00" + self.entries[key].checksum.encode())
            digest.update(b"\n")
        for key in sorted(self.skipped):
            digest.update(key.encode("utf-8") + b"\x00skipped\n")
        return "sha256:" + digest.hexdigest()


def checksum(data: str | bytes) -> str:
    """``"sha256:<hex>"`` of the UTF-8 text (the wire format)."""
    value: str = _backend.sha256(data)
    return value


def read_local(team_dir: Path) -> LocalFiles:
    """Every team file (valid keys only), with its checksum; too large or non-UTF-8 files are
    skipped with a reason."""
    found = LocalFiles()
    for key, path in local_keys(team_dir).items():
        try:
            size = path.stat().st_size
            if size > MAX_ENTRY_BYTES:
                found.skipped[key] = f"{size:,} bytes, over the {MAX_ENTRY_BYTES:,}-byte limit"
                continue
            data = path.read_bytes()
        except OSError as exc:
            found.skipped[key] = f"unreadable: {exc.strerror or exc}"
            continue
        if len(data) > MAX_ENTRY_BYTES:  # grew meanwhile
            found.skipped[key] = f"{len(data):,} bytes, over the {MAX_ENTRY_BYTES:,}-byte limit"
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            found.skipped[key] = "not valid UTF-8 text"
            continue
        found.entries[key] = LocalEntry(path, checksum(data), text)
    return found


def local_checksum(path: Path) -> str | None:
    """The checksum of the regular file at ``path``, or ``None`` when there is none."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        return checksum(path.read_bytes())
    except OSError:
        return None
