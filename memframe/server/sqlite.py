"""SQLite storage: embedded, zero setup. WAL with ``synchronous=FULL``: a write acknowledged to a
client survives the server being killed.

Connections come from one bounded pool per storage object (at most ``max_connections`` open at
once, reused newest first, every one closed by :meth:`SQLiteStorage.close`); no thread keeps a
connection of its own. Writes are **group-committed**: ``put_batch`` writes a batch of puts in
one transaction and one commit (each repo read and written once, its puts applied in order; a
refused put changes nothing and does not disturb the others) — the server's committer thread
hands it every PUT in flight. Concurrent ``put`` calls queue up too: the first caller to find
no commit in progress commits every queued put as one batch, then hands each caller its own
outcome. A put returns only after the transaction holding it committed: nothing is
acknowledged that was not stored.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson

from memframe._fs import ensure_private_dir
from memframe.server.storage import (
    PutOutcome,
    PutRequest,
    PutResult,
    RepoHead,
    RepoSnapshot,
    RepoState,
    TokenInfo,
    apply_puts,
    entry_checksum,
    now,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS repos (
    repo TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    last_modified REAL NOT NULL,
    checksum TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entries (
    repo TEXT NOT NULL,
    key TEXT NOT NULL,
    text TEXT NOT NULL,
    checksum TEXT NOT NULL,
    PRIMARY KEY (repo, key)
);
CREATE TABLE IF NOT EXISTS tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    hash TEXT NOT NULL UNIQUE,
    repos TEXT NOT NULL,
    created REAL NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0
);
"""
TOKEN_COLUMNS = "id, name, repos, created, revoked"
# Puts of one group commit: a bound on how long the first of them waits for the commit.
MAX_BATCH = 64


class PoolExhaustedError(sqlite3.OperationalError):
    """Every connection of the pool stayed busy for the whole timeout."""


class ConnectionPool:
    """At most ``max_size`` SQLite connections open at once; idle ones are reused newest first.
    ``close()`` closes the idle connections at once and those in use when they come back; later
    use opens new ones (the storage stays usable, as a PostgreSQL pool reopens)."""

    def __init__(
        self, path: Path, *, max_size: int, timeout: float, read_only: bool = False
    ) -> None:
        if max_size < 1:
            raise ValueError("a connection pool needs at least one connection")
        self.path = path
        self.read_only = read_only
        self.max_size = max_size
        self.timeout = timeout
        self._cond = threading.Condition()
        self._idle: list[sqlite3.Connection] = []
        self._in_use = 0
        self._borrowed: dict[int, int] = {}  # id of a connection in use -> its generation
        self._generation = 0  # bumped by close(): connections from before it are not reused

    @property
    def open_connections(self) -> int:
        with self._cond:
            return self._in_use + len(self._idle)

    def _connect(self) -> sqlite3.Connection:
        # handed from thread to thread (one at a time), hence check_same_thread=False
        if self.read_only:
            wal = self.path.with_name(self.path.name + "-wal")
            mode = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
            return sqlite3.connect(
                f"{self.path.resolve().as_uri()}?{mode}",
                uri=True,
                timeout=self.timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        db = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
        except BaseException:
            db.close()
            raise
        return db

    def borrow(self) -> sqlite3.Connection:
        """A connection for the calling thread alone until :meth:`give_back`."""
        with self._cond:
            if self._idle:  # the common case: no wait, no clock
                idle = self._idle.pop()
                self._in_use += 1
                self._borrowed[id(idle)] = self._generation
                return idle
            if not self._cond.wait_for(
                lambda: self._idle or self._in_use < self.max_size, self.timeout
            ):
                raise PoolExhaustedError(
                    f"all {self.max_size} SQLite connections stayed busy for {self.timeout:g} s"
                )
            db: sqlite3.Connection | None = self._idle.pop() if self._idle else None
            self._in_use += 1
            generation = self._generation
        if db is None:
            try:
                db = self._connect()
            except BaseException:
                with self._cond:
                    self._in_use -= 1
                    self._cond.notify()
                raise
        with self._cond:
            self._borrowed[id(db)] = generation
        return db

    def give_back(self, db: sqlite3.Connection) -> None:
        reusable = True
        if db.in_transaction:  # an error between BEGIN and COMMIT that was not rolled back
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:
                reusable = False
        with self._cond:
            generation = self._borrowed.pop(id(db))
            self._in_use -= 1
            self._cond.notify()
            if reusable and generation == self._generation:
                self._idle.append(db)
                return
        db.close()

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        db = self.borrow()
        try:
            yield db
        finally:
            self.give_back(db)

    def close(self) -> None:
        with self._cond:
            self._generation += 1
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for db in idle:
            db.close()


@dataclass
class _PendingPut:
    request: PutRequest
    done: bool = False
    outcome: PutOutcome | BaseException | None = None


class SQLiteStorage:
    """``SQLiteStorage(path)``: creates the file (0600) and the tables if they are missing.
    ``max_connections`` bounds the pool; ``timeout`` is how long a call waits for the database
    lock (another process writing) or for a free connection.

    ``SQLiteStorage(path, read_only=True)`` (``memframe scan --team-db``) creates and changes
    nothing: a missing file is :class:`FileNotFoundError`; without a ``-wal`` file (no server
    has the database open) it is opened immutable, so SQLite leaves no ``-wal``/``-shm`` file
    behind; with one, a plain read-only open sees the server's latest commits."""

    # ``lookup`` is one indexed read that never waits for a writer (WAL): the server may call it
    # on its event loop instead of handing it to a worker thread
    inline_lookup = True

    def __init__(
        self,
        path: Path,
        *,
        max_connections: int = 8,
        timeout: float = 30.0,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self.max_connections = max_connections
        self.read_only = read_only
        if read_only and not path.is_file():
            raise FileNotFoundError(f"{path}: no such database file")
        if not read_only and path.parent != path:
            ensure_private_dir(path.parent)
        self._pool = ConnectionPool(
            path, max_size=max_connections, timeout=timeout, read_only=read_only
        )
        self._queue: list[_PendingPut] = []
        self._committing = False
        self._commit_cond = threading.Condition()
        self._writer = threading.RLock()  # this process's writers, one at a time
        self._write_depth = 0
        # Committers of several processes (``memframe serve --workers``) queue on this file's
        # lock, woken the moment it is free, rather than on SQLite's busy handler, which sleeps
        # up to 100 ms between tries.
        self._lock_path = path.with_name(path.name + ".lock")
        self._lock_fd: int | None = None
        if read_only:
            return
        with self._pool.connection() as db:
            db.executescript(SCHEMA)
        path.chmod(0o600)

    @property
    def open_connections(self) -> int:
        """Connections open right now (idle in the pool or in use)."""
        return self._pool.open_connections

    # -- entries -------------------------------------------------------------------------------

    def get(self, repo: str, *, with_entries: bool = True) -> RepoSnapshot | None:
        text = "e.text" if with_entries else "NULL"
        db = self._pool.borrow()
        try:  # one statement, hence one snapshot: the repo row and its entries always agree
            rows = db.execute(
                "SELECT r.version, r.last_modified, r.checksum, e.key, e.checksum, "
                f"{text} FROM repos r LEFT JOIN entries e ON e.repo = r.repo "
                "WHERE r.repo = ? ORDER BY e.key",
                (repo,),
            ).fetchall()
        finally:
            self._pool.give_back(db)
        if not rows:
            return None
        snapshot = RepoSnapshot(repo, rows[0][0], rows[0][1], rows[0][2])
        if rows[0][3] is None:  # a repo without entries (LEFT JOIN)
            return snapshot
        snapshot.entry_checksums = {row[3]: row[4] for row in rows}
        if with_entries:
            snapshot.entries = {row[3]: row[5] for row in rows}
        return snapshot

    def checksum(self, repo: str) -> str | None:
        db = self._pool.borrow()
        try:
            row = db.execute("SELECT checksum FROM repos WHERE repo = ?", (repo,)).fetchone()
        finally:
            self._pool.give_back(db)
        return None if row is None else str(row[0])

    def lookup(self, token_hash: str, repo: str) -> tuple[TokenInfo | None, RepoHead | None]:
        db = self._pool.borrow()
        try:
            row = db.execute(
                "SELECT t.id, t.name, t.repos, t.created, t.revoked, r.version, r.last_modified, "
                "r.checksum FROM (SELECT 1) LEFT JOIN tokens t ON t.hash = ? "
                "LEFT JOIN repos r ON r.repo = ?",
                (token_hash, repo),
            ).fetchone()
        finally:
            self._pool.give_back(db)
        token = None if row[0] is None else self._token(row[:5])
        head = None if row[5] is None else RepoHead(row[5], row[6], row[7])
        return token, head

    def put(
        self, repo: str, entries: Mapping[str, str], *, if_match: str | None, max_entries: int
    ) -> PutResult:
        pending = _PendingPut(PutRequest(repo, entries, if_match, max_entries))
        with self._commit_cond:
            self._queue.append(pending)
        while not pending.done:
            with self._commit_cond:
                while not pending.done and self._committing:
                    self._commit_cond.wait()
                if pending.done:
                    break
                # no commit in progress: this caller commits what is queued (its own put too,
                # unless more than MAX_BATCH are ahead of it: then it goes round again)
                self._committing = True
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            try:
                self._commit(batch)
            finally:
                with self._commit_cond:
                    for done in batch:
                        done.done = True
                    self._committing = False
                    self._commit_cond.notify_all()
        outcome = pending.outcome
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        return outcome

    def _commit(self, batch: list[_PendingPut]) -> None:
        try:
            outcomes: list[PutOutcome] = self.put_batch([pending.request for pending in batch])
        except Exception as exc:  # the transaction failed: every put of the batch gets that
            outcomes = [exc] * len(batch)
        except BaseException as exc:  # KeyboardInterrupt: the others fail, this thread stops
            for pending in batch:
                pending.outcome = exc
            raise
        for pending, outcome in zip(batch, outcomes, strict=True):
            pending.outcome = outcome

    def put_batch(self, requests: Sequence[PutRequest]) -> list[PutOutcome]:
        """Every request in one transaction (``BEGIN IMMEDIATE``) and one commit: each repo is
        read once and written once, its puts applied in order (:class:`RepoState`); a refused
        put changes nothing. Returns after the commit (``synchronous=FULL``: on disk)."""
        if self.read_only:
            raise PermissionError(f"{self.path} is open read-only")
        if not requests:
            return []
        incoming = [
            {key: entry_checksum(text) for key, text in request.entries.items()}
            for request in requests
        ]
        with self.write_lock(), self._pool.connection() as db:
            db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes too
            try:
                outcomes = self._apply_batch(db, requests, incoming)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return outcomes

    def _apply_batch(
        self,
        db: sqlite3.Connection,
        requests: Sequence[PutRequest],
        incoming: list[dict[str, str]],
    ) -> list[PutOutcome]:
        outcomes: list[PutOutcome | None] = [None] * len(requests)
        tokens = self._tokens_by_hash(
            db, {r.token_hash for r in requests if r.token_hash is not None}
        )
        states: dict[str, RepoState] = {}

        def state_of(repo: str) -> RepoState:
            state = states.get(repo)
            if state is None:
                row = db.execute(
                    "SELECT version, last_modified, checksum FROM repos WHERE repo = ?", (repo,)
                ).fetchone()
                checksums = dict(
                    db.execute(
                        "SELECT key, checksum FROM entries WHERE repo = ?", (repo,)
                    ).fetchall()
                )
                state = states[repo] = RepoState(row, checksums)
            return state

        apply_puts(requests, range(len(requests)), incoming, tokens, state_of, outcomes)
        for repo, state in states.items():
            if state.writes:
                db.executemany(
                    "INSERT INTO entries (repo, key, text, checksum) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (repo, key) DO UPDATE SET text = excluded.text, "
                    "checksum = excluded.checksum",
                    [(repo, key, text, checksum) for key, (text, checksum) in state.writes.items()],
                )
            if state.dirty:
                db.execute(
                    "INSERT INTO repos (repo, version, last_modified, checksum) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (repo) DO UPDATE SET "
                    "version = excluded.version, last_modified = excluded.last_modified, "
                    "checksum = excluded.checksum",
                    (repo, state.version, state.last_modified, state.checksum),
                )
        assert all(outcome is not None for outcome in outcomes)
        return outcomes  # type: ignore[return-value]

    def _tokens_by_hash(self, db: sqlite3.Connection, hashes: set[str]) -> dict[str, TokenInfo]:
        found: dict[str, TokenInfo] = {}
        wanted = sorted(hashes)
        for at in range(0, len(wanted), 500):  # well under SQLite's bound on parameters
            chunk = wanted[at : at + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT hash, {TOKEN_COLUMNS} FROM tokens WHERE hash IN ({marks})"
            for row in db.execute(query, chunk):
                found[row[0]] = self._token(row[1:])
        return found

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """The database's write lock for this thread: other threads of this process wait on a
        lock, other processes on the lock file (``flock``). Re-entrant: a :meth:`put_batch`
        inside it does not take it again, so a caller can hold it while it gathers a batch."""
        with self._writer:
            with self._commit_cond:
                self._write_depth += 1
                first = self._write_depth == 1
                if self._lock_fd is None:
                    self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
                fd = self._lock_fd
            try:
                if first:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    if first:
                        fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                with self._commit_cond:
                    self._write_depth -= 1

    def iter_entries(self, *, batch: int = 2048) -> Iterator[list[tuple[str, str, str]]]:
        """Every entry as ``(repo, key, text)``, by repo then key, ``batch`` at a time, from one
        snapshot (one statement)."""
        with self._pool.connection() as db:
            cursor = db.execute("SELECT repo, key, text FROM entries ORDER BY repo, key")
            try:
                while rows := cursor.fetchmany(batch):
                    yield rows
            finally:
                cursor.close()

    # -- tokens --------------------------------------------------------------------------------

    def add_token(self, name: str, token_hash: str, repos: tuple[str, ...]) -> TokenInfo:
        created = now()
        with self._pool.connection() as db:
            try:
                cursor = db.execute(
                    "INSERT INTO tokens (name, hash, repos, created) VALUES (?, ?, ?, ?)",
                    (name, token_hash, orjson.dumps(list(repos)).decode(), created),
                )
            except sqlite3.IntegrityError as exc:
                raise ValueError(f"a token named {name!r} exists already") from exc
        return TokenInfo(int(cursor.lastrowid or 0), name, repos, created)

    @staticmethod
    def _token(row: tuple[int, str, str, float, int]) -> TokenInfo:
        return TokenInfo(row[0], row[1], tuple(orjson.loads(row[2])), row[3], bool(row[4]))

    def token(self, token_hash: str) -> TokenInfo | None:
        db = self._pool.borrow()
        try:
            row = db.execute(
                "SELECT id, name, repos, created, revoked FROM tokens WHERE hash = ?",
                (token_hash,),
            ).fetchone()
        finally:
            self._pool.give_back(db)
        return None if row is None else self._token(row)

    def tokens(self) -> list[TokenInfo]:
        with self._pool.connection() as db:
            rows = db.execute(
                "SELECT id, name, repos, created, revoked FROM tokens ORDER BY id"
            ).fetchall()
        return [self._token(row) for row in rows]

    def revoke_token(self, name_or_id: str) -> TokenInfo:
        column = "id" if name_or_id.isdigit() else "name"
        with self._pool.connection() as db:
            db.execute(f"UPDATE tokens SET revoked = 1 WHERE {column} = ?", (name_or_id,))
            row = db.execute(
                f"SELECT id, name, repos, created, revoked FROM tokens WHERE {column} = ?",
                (name_or_id,),
            ).fetchone()
        if row is None:
            raise KeyError(f"no token {name_or_id!r}")
        return self._token(row)

    def close(self) -> None:
        """Close every connection (those in use as soon as they are given back)."""
        self._pool.close()
        with self._commit_cond:
            fd, self._lock_fd = self._lock_fd, None
            if fd is not None and (self._committing or self._write_depth):
                # a commit holds it: closed by the next close()
                self._lock_fd = fd
                return
        if fd is not None:
            # Removed when no process holds it, so the database leaves nothing behind: the lock
            # only spares writers SQLite's sleeps, BEGIN IMMEDIATE alone keeps them apart.
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._lock_path.unlink(missing_ok=True)
            except OSError:
                pass
            finally:
                os.close(fd)
