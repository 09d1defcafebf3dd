"""Pull, push and status of ``<memory dir>/team/`` against a team memory server (docs/team-sync.md).

Pull: the server wins per key — an entry the server changed since this client last synced it
overwrites the local file; a local edit of an entry the server did not change is kept (it is
pushed next). Unchanged files are never rewritten, entries over 250,000 bytes are skipped and keys
that could leave the team directory are refused. Local files the server lacks are kept.

Push: only keys whose local checksum differs from the server's; each passes the secret gate
first (an entry with a secret is never sent); bodies are batched to at most 200,000 bytes; after
a learned 413 only the first N keys of the sorted union of server and local keys are pushed.
``If-Match`` makes every write conditional: on 412 the client refreshes the server's checksums
(``view=hashes``), recomputes the delta and tries again (twice at most). A key the server
changed meanwhile is never overwritten by a stale local copy: it is left for the next pull.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from memframe._fs import atomic_write_text
from memframe.team_keys import MAX_ENTRY_BYTES, UnsafeKeyError, safe_target
from memframe.team_sync.http import Http, Reply, RequestError
from memframe.team_sync.settings import SyncConfig, SyncError, TeamSyncSettings
from memframe.team_sync.sync_state import (
    TEAM_DIR,
    BlockedEntry,
    Failure,
    LocalEntry,
    LocalFiles,
    SyncState,
    checksum,
    load_state,
    local_checksum,
    read_local,
    save_state,
    sync_lock,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from memframe.frame import MemoryFrame
    from memframe.scanner import SecretScanner

MAX_BODY_BYTES = 200_000
MAX_CONFLICT_RETRIES = 2
_EMPTY_BODY = len(b'{"entries":{}}')
log = logging.getLogger("memframe.team_sync")


# -- results -------------------------------------------------------------------------------------


@dataclass
class BlockedReport:
    """An entry the secret gate kept back: which rules matched, on which lines."""

    key: str
    rules: list[str]
    lines: list[int] = field(default_factory=list)

    def describe(self) -> str:
        """``aws-access-token (line 3)``; lines unknown when the server's scan refused it."""
        if not self.lines:
            return ", ".join(self.rules)
        plural = "s" if len(self.lines) > 1 else ""
        return f"{', '.join(self.rules)} (line{plural} {', '.join(map(str, self.lines))})"


@dataclass
class PullResult:
    server: str
    repo: str
    status: str = "failed"  # updated | not-modified | empty | failed
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # local edits the server did not touch
    skipped: dict[str, str] = field(default_factory=dict)  # too large
    rejected: dict[str, str] = field(default_factory=dict)  # unsafe keys
    errors: dict[str, str] = field(default_factory=dict)  # could not write
    checksum: str | None = None
    requests: int = 0
    error: str | None = None
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.rejected and not self.errors

    def to_json(self) -> dict[str, Any]:
        return {"action": "pull", "ok": self.ok, **asdict(self)}


@dataclass
class PushResult:
    server: str
    repo: str
    pushed: list[str] = field(default_factory=list)
    blocked: list[BlockedReport] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # too large, over the entry limit…
    conflicts: dict[str, str] = field(default_factory=dict)  # changed here and on the server
    behind: list[str] = field(default_factory=list)  # the server has newer: pull brings them
    batches: int = 0
    requests: int = 0
    error: str | None = None
    failure: str | None = None  # permanent | transient | conflict | error
    skipped_network: bool = False  # a recorded permanent failure and nothing changed since

    @property
    def ok(self) -> bool:
        """Nothing failed and nothing was held back (blocked or conflicting)."""
        return self.error is None and not self.blocked and not self.conflicts

    def to_json(self) -> dict[str, Any]:
        return {"action": "push", "ok": self.ok, **asdict(self)}


@dataclass
class StatusResult:
    server: str
    repo: str
    memory_dir: str
    local_entries: int = 0
    in_sync: int = 0
    pending: list[str] = field(default_factory=list)  # would be pushed
    blocked: list[BlockedReport] = field(default_factory=list)  # would be held back
    skipped: dict[str, str] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    behind: list[str] = field(default_factory=list)  # the server has newer versions
    server_only: list[str] = field(default_factory=list)
    last_known_checksum: str | None = None
    server_max_entries: int | None = None
    last_pull: float | None = None
    last_push: float | None = None
    permanent_failure: dict[str, Any] | None = None
    last_error: dict[str, Any] | None = None
    remote: dict[str, Any] | None = None  # with remote=True: the server's view now

    @property
    def ok(self) -> bool:
        return not self.blocked and not self.conflicts and self.permanent_failure is None

    def to_json(self) -> dict[str, Any]:
        return {"action": "status", "ok": self.ok, **asdict(self)}


# -- the client ----------------------------------------------------------------------------------


@dataclass
class _Plan:
    send: dict[str, LocalEntry] = field(default_factory=dict)
    blocked: dict[str, BlockedEntry] = field(default_factory=dict)
    over_limit: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    behind: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Snapshot:
    checksum: str
    entries: dict[str, str]
    entry_checksums: dict[str, str]


# Reported like a rule id when a ``type: user`` memory sits in team/: it is never sent.
PRIVATE_USER_MEMORY = "user-memory-is-private"


class TeamSyncClient:
    """Syncs ``<memory_dir>/team/`` with the server in ``config``.

    Operations on one memory directory are serialised (a lock file), so the layer's background
    pushes, a CLI run and another session never interleave.
    """

    def __init__(
        self,
        config: SyncConfig,
        memory_dir: Path,
        scanner: SecretScanner,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        lock_timeout: float | None = None,
    ) -> None:
        self.config = config
        self.memory_dir = Path(memory_dir)
        self.team_dir = self.memory_dir / TEAM_DIR
        self.scanner = scanner
        self._transport = transport
        self._sleep = sleep
        self.lock_timeout = (
            lock_timeout if lock_timeout is not None else max(60.0, config.timeout * 12)
        )

    @contextlib.contextmanager
    def _locked(self, budget: float | None) -> Iterator[tuple[SyncState, Http]]:
        """The lock, the state and a connection with the sync's deadline: ``budget`` seconds
        from now (the wait for the lock included), else ``config.sync_deadline`` seconds from
        when the lock is held — no sync holds the lock longer than another waits for it."""
        deadline = None if budget is None else time.monotonic() + budget
        wait = self.lock_timeout if budget is None else min(self.lock_timeout, budget)
        with sync_lock(self.memory_dir, wait):
            if deadline is None:
                deadline = time.monotonic() + self.config.sync_deadline
            state = load_state(self.memory_dir, self.config.server, self.config.repo)
            http = Http(self.config, self._transport, self._sleep, deadline=deadline)
            try:
                yield state, http
            finally:
                http.close()
                save_state(self.memory_dir, state)

    def load_state(self) -> SyncState:
        return load_state(self.memory_dir, self.config.server, self.config.repo)

    # -- pull ----------------------------------------------------------------------------------

    def pull(self, *, force: bool = False, budget: float | None = None) -> PullResult:
        """Bring the server's entries into ``team/`` (``force``: the server wins for every key
        that differs, local edits included; ``budget``: seconds allowed, retries included).

        :raises SyncError: another sync of this directory holds the lock too long.
        """
        result = PullResult(self.config.server, self.config.repo)
        with self._locked(budget) as (state, http):
            try:
                self._pull(state, http, result, force)
            except SyncError as exc:
                kind = exc.kind if isinstance(exc, RequestError) else "error"
                status = exc.status if isinstance(exc, RequestError) else None
                result.error, result.failure = str(exc), kind
                state.last_error = Failure(kind, f"pull: {exc}", time.time(), status)
            finally:
                result.requests = http.requests
        return result

    def _pull(self, state: SyncState, http: Http, result: PullResult, force: bool) -> None:
        etag = state.last_known_checksum
        use_etag = etag is not None and not state.unpulled and not force
        reply = http.get(etag=etag if use_etag else None)
        if reply.status == 304:
            result.status, result.checksum = "not-modified", state.last_known_checksum
        elif reply.status == 404:
            result.status = "empty"
            state.server_checksums, state.unpulled, state.last_known_checksum = {}, {}, None
        elif reply.status == 200:
            self._apply(state, self._snapshot(reply, with_entries=True), result, force)
            result.status = "updated"
        else:
            raise reply.failure()
        state.last_pull = time.time()
        state.last_error = None

    def _apply(
        self, state: SyncState, snapshot: _Snapshot, result: PullResult, force: bool
    ) -> None:
        old, unpulled = state.server_checksums, state.unpulled
        seen: dict[str, str] = {}
        still_unpulled: dict[str, str | None] = {}
        for key in sorted(snapshot.entries):
            text = snapshot.entries[key]
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:
                result.rejected[key[:200]] = "not valid Unicode text"
                continue
            remote = checksum(data)
            seen[key] = remote
            try:
                target = safe_target(self.team_dir, key)
            except UnsafeKeyError as exc:
                result.rejected[key[:200]] = str(exc)
                continue
            local = local_checksum(target)
            if local == remote:
                result.unchanged.append(key)
                continue
            base = unpulled[key] if key in unpulled else old.get(key)
            if len(data) > MAX_ENTRY_BYTES:
                result.skipped[key] = (
                    f"{len(data):,} bytes, over the {MAX_ENTRY_BYTES:,}-byte limit"
                )
                if local is not None:  # never overwrite the server's with the local one
                    still_unpulled[key] = base
                continue
            server_changed = force or key in unpulled or old.get(key) != remote
            if local is not None and not server_changed:
                result.kept.append(key)  # a local edit, pushed next
                continue
            try:
                atomic_write_text(target, text)
            except OSError as exc:
                result.errors[key] = f"cannot write: {exc.strerror or exc}"
                still_unpulled[key] = base
                continue
            result.written.append(key)
        state.server_checksums = seen
        state.unpulled = still_unpulled
        state.last_known_checksum = snapshot.checksum
        result.checksum = snapshot.checksum
        self._reindex(result.written)

    def _reindex(self, keys: list[str]) -> None:
        """Index lines in ``MEMORY.md`` for pulled memories (files directly in ``team/``)."""
        from memframe.memdir import MemoryStore

        store = MemoryStore(self.memory_dir)
        paths = [self.team_dir / key for key in keys if store.placeable(f"{TEAM_DIR}/{key}")]
        if not paths:
            return
        try:
            store.reindex(paths)
        except OSError as exc:
            log.warning("team sync: could not update MEMORY.md for pulled memories: %s", exc)

    # -- push ----------------------------------------------------------------------------------

    def push(self, *, force: bool = False, budget: float | None = None) -> PushResult:
        """Send local changes (``force``: try even after a permanent failure with nothing
        changed since; ``budget``: seconds allowed, retries included).

        :raises SyncError: another sync of this directory holds the lock too long.
        """
        result = PushResult(self.config.server, self.config.repo)
        with self._locked(budget) as (state, http):
            try:
                self._push(state, http, result, force)
            finally:
                result.requests = http.requests
        return result

    def _push(self, state: SyncState, http: Http, result: PushResult, force: bool) -> None:
        local = read_local(self.team_dir)
        result.skipped.update(local.skipped)
        fingerprint = local.fingerprint(self.config.identity())
        failed = state.permanent_failure
        if failed is not None and not force and failed.fingerprint == fingerprint:
            result.error = (
                f"not pushed: the last push failed for good ({failed.message}) and nothing "
                "changed since; change a team file, fix the settings or push with --force"
            )
            result.failure, result.skipped_network = "permanent", True
            result.blocked = [
                BlockedReport(k, b.rules, b.lines) for k, b in sorted(state.blocked.items())
            ]
            return
        flagged: dict[str, BlockedEntry] = {}  # refused by the server's own scan
        findings_cache: dict[str, BlockedEntry | None] = {}
        conflicts = 0
        learned_limit = refreshed = False
        plan = _Plan()
        try:
            while True:
                plan = self._plan(state, local, flagged, findings_cache)
                state.blocked = dict(plan.blocked)
                if not plan.send:
                    break
                if state.last_known_checksum is None and not refreshed:
                    refreshed = True  # learn the server's view first, so writes are conditional
                    self._refresh(state, http)
                    continue
                unconditional = state.last_known_checksum is None
                outcome = self._send(state, http, plan, result, flagged)
                if outcome is None:
                    if unconditional:  # others may have written too: learn what is there
                        self._refresh(state, http)
                        plan = self._plan(state, local, flagged, findings_cache)
                    break
                if outcome == "conflict":
                    if conflicts >= MAX_CONFLICT_RETRIES:
                        raise RequestError(
                            f"the server's entries kept changing: still conflicting after "
                            f"{MAX_CONFLICT_RETRIES} retries",
                            kind="conflict",
                            status=412,
                        )
                    conflicts += 1
                    self._sleep(self._conflict_pause(http, conflicts))
                    self._refresh(state, http)
                elif outcome == "limit":
                    if learned_limit:
                        raise RequestError(
                            f"the server still refuses: more than {state.server_max_entries} "
                            "entries",
                            kind="permanent",
                            status=413,
                            code="team_memory_too_many_entries",
                        )
                    learned_limit = True
        except SyncError as exc:
            kind = exc.kind if isinstance(exc, RequestError) else "error"
            status = exc.status if isinstance(exc, RequestError) else None
            code = exc.code if isinstance(exc, RequestError) else None
            failure = Failure(kind, str(exc), time.time(), status, code)
            if kind == "permanent":
                failure.fingerprint = fingerprint
                state.permanent_failure = failure
            state.last_error = failure
            result.error, result.failure = str(exc), kind
        else:
            state.permanent_failure = state.last_error = None
            state.last_push = time.time()
        limit = state.server_max_entries
        for key in plan.over_limit:
            result.skipped[key] = f"over the server's limit of {limit} entries"
        for key in plan.conflicts:
            result.conflicts[key] = (
                "changed here and on the server; a pull brings the server's version (it wins)"
            )
        result.behind = list(plan.behind)
        result.blocked = [
            BlockedReport(key, entry.rules, entry.lines)
            for key, entry in sorted(plan.blocked.items())
        ]

    def _conflict_pause(self, http: Http, retry: int) -> float:
        """Full jitter over ``backoff_base * 2**retry``: writers that collided spread out."""
        ceiling = min(self.config.max_retry_wait, self.config.backoff_base * float(2**retry))
        return http.rng.uniform(0, ceiling)

    def _plan(
        self,
        state: SyncState,
        local: LocalFiles,
        flagged: dict[str, BlockedEntry],
        cache: dict[str, BlockedEntry | None],
    ) -> _Plan:
        plan = _Plan()
        allowed: set[str] | None = None
        if state.server_max_entries is not None:
            union = sorted(set(state.server_checksums) | local.keys)
            allowed = set(union[: max(0, state.server_max_entries)])
        for key in sorted(local.entries):
            entry = local.entries[key]
            if entry.checksum == state.server_checksums.get(key):
                continue
            if key in state.unpulled:
                if entry.checksum == state.unpulled[key]:
                    plan.behind.append(key)  # unchanged here, newer on the server
                else:
                    plan.conflicts.append(key)
                continue
            if allowed is not None and key not in allowed:
                plan.over_limit.append(key)
                continue
            known = flagged.get(key)
            if known is not None and known.checksum == entry.checksum:
                plan.blocked[key] = known
                continue
            scanned = f"{key}\0{entry.checksum}"  # the key is scanned too
            if scanned not in cache:
                cache[scanned] = self._gate(key, entry)
            blocked = cache[scanned]
            if blocked is not None:
                plan.blocked[key] = blocked
                continue
            plan.send[key] = entry
        return plan

    def _gate(self, key: str, entry: LocalEntry) -> BlockedEntry | None:
        """The gate: ``None`` when the entry may be sent. Secrets never leave — not in the
        text, not in the file name, not encoded (:mod:`memframe.scanning.gate`); neither does a
        ``user`` memory, which is private whatever folder it was put in."""
        from memframe.memdir.files import parse_memory
        from memframe.scanning.gate import gate_findings

        if parse_memory(entry.text, Path("team.md")).type == "user":
            return BlockedEntry(entry.checksum, [PRIVATE_USER_MEMORY], [1])
        findings = gate_findings(self.scanner, key, entry.text)
        if not findings:
            return None
        rules = [f.describe() for f in findings]
        lines = sorted({f.line for f in findings if f.line > 0})
        return BlockedEntry(entry.checksum, rules, lines)

    def _send(
        self,
        state: SyncState,
        http: Http,
        plan: _Plan,
        result: PushResult,
        flagged: dict[str, BlockedEntry],
    ) -> str | None:
        """PUT every batch; ``None`` when all were stored, else why it stopped (``conflict``,
        ``limit``, ``secret``: the caller adapts and tries again)."""
        for batch in batches(plan.send):
            body = orjson.dumps({"entries": {key: entry.text for key, entry in batch.items()}})
            reply = http.put(body, if_match=state.last_known_checksum)
            if reply.status == 200:
                stored = reply.data.get("checksum") if isinstance(reply.data, dict) else None
                if not isinstance(stored, str):
                    raise RequestError(
                        "the team server's answer to a PUT has no checksum", kind="error"
                    )
                state.last_known_checksum = stored
                for key, entry in batch.items():
                    state.server_checksums[key] = entry.checksum
                    state.unpulled.pop(key, None)
                result.pushed.extend(batch)
                result.batches += 1
                save_state(self.memory_dir, state)  # what was acknowledged is remembered
                continue
            if reply.status == 412:
                return "conflict"
            if reply.status == 413 and reply.code == "team_memory_too_many_entries":
                limit = reply.details.get("max_entries")
                if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
                    state.server_max_entries = limit
                    return "limit"
            if reply.status == 422 and self._flag(reply, batch, flagged):
                return "secret"
            raise reply.failure()
        return None

    @staticmethod
    def _flag(reply: Reply, batch: dict[str, LocalEntry], flagged: dict[str, BlockedEntry]) -> bool:
        """Record the entries the server's secret scan refused; ``True`` if any was new."""
        findings = reply.details.get("findings")
        added = False
        for finding in findings if isinstance(findings, list) else []:
            if not isinstance(finding, dict):
                continue
            key, rules = finding.get("key"), finding.get("rules")
            if isinstance(key, str) and key in batch and key not in flagged:
                names = [r for r in rules if isinstance(r, str)] if isinstance(rules, list) else []
                flagged[key] = BlockedEntry(batch[key].checksum, names or ["server secret scan"])
                added = True
        return added

    def _refresh(self, state: SyncState, http: Http) -> None:
        """The server's checksums now (``view=hashes``): keys it changed since this client last
        synced them become ``unpulled``."""
        reply = http.get(hashes=True)
        if reply.status == 404:
            current: dict[str, str] = {}
            stored: str | None = None
        elif reply.status == 200:
            snapshot = self._snapshot(reply, with_entries=False)
            current, stored = snapshot.entry_checksums, snapshot.checksum
        else:
            raise reply.failure()
        old = state.server_checksums
        for key, value in current.items():
            if value != old.get(key) and key not in state.unpulled:
                state.unpulled[key] = old.get(key)
        state.unpulled = {
            key: base
            for key, base in state.unpulled.items()
            if key in current and current[key] != base
        }
        state.server_checksums = dict(current)
        state.last_known_checksum = stored

    # -- status --------------------------------------------------------------------------------

    def status(self, *, remote: bool = False) -> StatusResult:
        """Local files against the last known server state (no network unless ``remote``)."""
        state = self.load_state()
        local = read_local(self.team_dir)
        result = StatusResult(
            self.config.server,
            self.config.repo,
            str(self.memory_dir),
            local_entries=len(local.entries),
            skipped=dict(local.skipped),
            last_known_checksum=state.last_known_checksum,
            server_max_entries=state.server_max_entries,
            last_pull=state.last_pull,
            last_push=state.last_push,
            permanent_failure=asdict(state.permanent_failure) if state.permanent_failure else None,
            last_error=asdict(state.last_error) if state.last_error else None,
        )
        plan = self._plan(state, local, {}, {})
        result.pending = sorted(plan.send)
        result.blocked = [
            BlockedReport(key, entry.rules, entry.lines)
            for key, entry in sorted(plan.blocked.items())
        ]
        conflicting = set(plan.conflicts)
        result.conflicts = plan.conflicts
        result.behind = sorted(k for k in state.unpulled if k not in conflicting)
        for key in plan.over_limit:
            result.skipped[key] = f"over the server's limit of {state.server_max_entries} entries"
        result.in_sync = sum(
            1 for k, e in local.entries.items() if state.server_checksums.get(k) == e.checksum
        )
        result.server_only = sorted(set(state.server_checksums) - local.keys)
        if remote:
            result.remote = self._remote_view(state, local)
        return result

    def _snapshot(self, reply: Reply, *, with_entries: bool) -> _Snapshot:
        return _snapshot(reply, with_entries=with_entries, max_entries=self.config.max_entries)

    def _remote_view(self, state: SyncState, local: LocalFiles) -> dict[str, Any]:
        deadline = time.monotonic() + self.config.sync_deadline
        http = Http(self.config, self._transport, self._sleep, deadline=deadline)
        try:
            reply = http.get(hashes=True)
            if reply.status == 404:
                return {"stored": False, "changed_on_server": [], "checksum": None}
            if reply.status != 200:
                raise reply.failure()
            snapshot = self._snapshot(reply, with_entries=False)
        except SyncError as exc:
            return {"error": str(exc)}
        finally:
            http.close()
        server = snapshot.entry_checksums
        return {
            "stored": True,
            "checksum": snapshot.checksum,
            "up_to_date": snapshot.checksum == state.last_known_checksum,
            "entries": len(server),
            "changed_on_server": sorted(
                k for k, v in server.items() if state.server_checksums.get(k) != v
            ),
            "differs_from_local": sorted(
                k for k, e in local.entries.items() if server.get(k) != e.checksum
            ),
        }


def batches(
    entries: dict[str, LocalEntry], limit: int = MAX_BODY_BYTES
) -> list[dict[str, LocalEntry]]:
    """``entries`` (in key order) split so each ``{"entries": {…}}`` body is at most ``limit``
    bytes. An entry too big for any body on its own (JSON escaping can make a 250,000-byte
    entry longer than 200,000 bytes) travels alone."""
    out: list[dict[str, LocalEntry]] = []
    current: dict[str, LocalEntry] = {}
    size = _EMPTY_BODY
    for key in sorted(entries):
        entry = entries[key]
        # "key":"text" plus a comma between members: exactly what orjson writes
        cost = len(orjson.dumps(key)) + 1 + len(orjson.dumps(entry.text)) + (1 if current else 0)
        if current and size + cost > limit:
            out.append(current)
            current, size = {}, _EMPTY_BODY
            cost -= 1
        current[key] = entry
        size += cost
    if current:
        out.append(current)
    return out


def _snapshot(reply: Reply, *, with_entries: bool, max_entries: int) -> _Snapshot:
    """The GET body, checked: ``{checksum, content: {entries?, entryChecksums}}``, with at most
    ``max_entries`` entries (more fails the whole answer: nothing of it is written)."""
    data = reply.data
    content = data.get("content") if isinstance(data, dict) else None
    stored = data.get("checksum") if isinstance(data, dict) else None
    if not isinstance(content, dict) or not isinstance(stored, str):
        raise RequestError(
            "the team server's answer is malformed (no checksum or content)", kind="error"
        )
    checksums = content.get("entryChecksums", {})
    raw = content.get("entries") if with_entries else None
    for listed in (checksums, raw):
        if isinstance(listed, dict) and len(listed) > max_entries:
            raise RequestError(
                f"the team server sent {len(listed):,} entries, more than the limit of "
                f"{max_entries:,} (the server's documented maximum; a server configured for "
                "more needs the setting team_sync.max_entries raised): nothing was written",
                kind="error",
            )
    if not isinstance(checksums, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in checksums.items()
    ):
        raise RequestError("the team server's entryChecksums are malformed", kind="error")
    entries: dict[str, str] = {}
    if with_entries:
        if not isinstance(raw, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
        ):
            raise RequestError("the team server's entries are malformed", kind="error")
        entries = raw
    return _Snapshot(stored, entries, checksums)


# -- from a frame --------------------------------------------------------------------------------


def client_for_frame(
    frame: MemoryFrame,
    *,
    server: str | None = None,
    repo: str | None = None,
    token: str | None = None,
    transport: httpx.BaseTransport | None = None,
) -> TeamSyncClient:
    """A client for ``frame``'s memory directory and settings (arguments override them).

    :raises SyncConfigError: team sync is not configured, or its settings are wrong.
    """
    from memframe.memdir import locate

    settings = TeamSyncSettings.from_settings(frame.config.settings.get("team_sync"))
    config = settings.resolve(frame.project_dir, server=server, repo=repo, token=token)
    return TeamSyncClient(
        config, locate(frame).path.resolve(), frame.secret_scanner(), transport=transport
    )
