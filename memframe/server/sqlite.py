"""SQLite storage: embedded, zero setup. WAL with ``synchronous=FULL``: a write acknowledged to a
client survives the server being killed."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path

import orjson

from memframe._fs import ensure_private_dir
from memframe.server.storage import (
    PutResult,
    RepoSnapshot,
    StaleChecksumError,
    TokenInfo,
    TooManyEntriesError,
    entry_checksum,
    now,
    repo_checksum,
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


class SQLiteStorage:
    def __init__(self, path: Path) -> None:
        self.path = path
        if path.parent != path:
            ensure_private_dir(path.parent)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        with self._connection() as db:
            db.executescript(SCHEMA)
        path.chmod(0o600)

    def _connection(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            # closed from the thread that closes the storage, hence check_same_thread=False
            db = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA busy_timeout=30000")
            self._local.db = db
            with self._lock:
                self._all.append(db)
        return db

    # -- entries -------------------------------------------------------------------------------

    def get(self, repo: str, *, with_entries: bool = True) -> RepoSnapshot | None:
        db = self._connection()
        db.execute("BEGIN")
        try:
            row = db.execute(
                "SELECT version, last_modified, checksum FROM repos WHERE repo = ?", (repo,)
            ).fetchone()
            if row is None:
                return None
            snapshot = RepoSnapshot(repo, row[0], row[1], row[2])
            columns = "key, checksum, text" if with_entries else "key, checksum, NULL"
            for key, checksum, text in db.execute(
                f"SELECT {columns} FROM entries WHERE repo = ? ORDER BY key", (repo,)
            ):
                snapshot.entry_checksums[key] = checksum
                if with_entries:
                    snapshot.entries[key] = text
            return snapshot
        finally:
            db.execute("COMMIT")

    def put(
        self, repo: str, entries: Mapping[str, str], *, if_match: str | None, max_entries: int
    ) -> PutResult:
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes too
        try:
            row = db.execute(
                "SELECT version, last_modified, checksum FROM repos WHERE repo = ?", (repo,)
            ).fetchone()
            current = row[2] if row else None
            if if_match is not None and if_match != current:
                raise StaleChecksumError(current)
            checksums = dict(
                db.execute("SELECT key, checksum FROM entries WHERE repo = ?", (repo,)).fetchall()
            )
            incoming = {key: entry_checksum(text) for key, text in entries.items()}
            total = len(checksums.keys() | incoming.keys())
            if total > max_entries:
                raise TooManyEntriesError(max_entries, total)
            changed = {k: c for k, c in incoming.items() if checksums.get(k) != c}
            if row is not None and not changed:
                db.execute("COMMIT")
                return PutResult(row[2], row[1], row[0])
            db.executemany(
                "INSERT INTO entries (repo, key, text, checksum) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (repo, key) DO UPDATE SET text = excluded.text, "
                "checksum = excluded.checksum",
                [(repo, key, entries[key], checksum) for key, checksum in changed.items()],
            )
            checksums.update(changed)
            result = PutResult(repo_checksum(checksums), now(), (row[0] if row else 0) + 1)
            db.execute(
                "INSERT INTO repos (repo, version, last_modified, checksum) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (repo) DO UPDATE SET version = excluded.version, "
                "last_modified = excluded.last_modified, checksum = excluded.checksum",
                (repo, result.version, result.last_modified, result.checksum),
            )
            db.execute("COMMIT")
            return result
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # -- tokens --------------------------------------------------------------------------------

    def add_token(self, name: str, token_hash: str, repos: tuple[str, ...]) -> TokenInfo:
        db = self._connection()
        created = now()
        try:
            cursor = db.execute(
                "INSERT INTO tokens (name, hash, repos, created) VALUES (?, ?, ?, ?)",
                (name, token_hash, orjson.dumps(list(repos)).decode(), created),
            )
        except sqlite3.IntegrityError as exc:
            raise ValueError(f"a token named {name!r} exists already") from exc
        return TokenInfo(int(cursor.lastrowid or 0), name, repos, created)

    def _token(self, row: tuple[int, str, str, float, int]) -> TokenInfo:
        return TokenInfo(row[0], row[1], tuple(orjson.loads(row[2])), row[3], bool(row[4]))

    def token(self, token_hash: str) -> TokenInfo | None:
        row = (
            self._connection()
            .execute(
                "SELECT id, name, repos, created, revoked FROM tokens WHERE hash = ?",
                (token_hash,),
            )
            .fetchone()
        )
        return None if row is None else self._token(row)

    def tokens(self) -> list[TokenInfo]:
        rows = self._connection().execute(
            "SELECT id, name, repos, created, revoked FROM tokens ORDER BY id"
        )
        return [self._token(row) for row in rows]

    def revoke_token(self, name_or_id: str) -> TokenInfo:
        db = self._connection()
        column = "id" if name_or_id.isdigit() else "name"
        db.execute(f"UPDATE tokens SET revoked = 1 WHERE {column} = ?", (name_or_id,))
        row = db.execute(
            f"SELECT id, name, repos, created, revoked FROM tokens WHERE {column} = ?",
            (name_or_id,),
        ).fetchone()
        if row is None:
            raise KeyError(f"no token {name_or_id!r}")
        return self._token(row)

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                db.close()
            self._all.clear()
        self._local = threading.local()
