"""Today's team server (before issue 16), kept only as the comparison peer of ``benches/sync``.

This is memframe's own previous implementation, unchanged in what it does: the standard
library's ``ThreadingHTTPServer`` (a thread per connection, a listen backlog of 5), SQLite with a
connection per handler thread that is never closed, PostgreSQL through a small hand-rolled pool.
It is not part of the package and nothing but the bench imports it.

``python -m benches.legacy_server --db URL [--port N]`` serves it as a process (the first stderr
line names the URL) until SIGTERM, like ``memframe serve`` did.
"""

# ruff: noqa: E501
from __future__ import annotations

import argparse
import hashlib
import logging
import re
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from memframe.server.storage import (
    PutResult,
    RepoSnapshot,
    StaleChecksumError,
    Storage,
    TokenInfo,
    TooManyEntriesError,
    entry_checksum,
    hash_token,
    now,
)
from memframe.team_keys import MAX_ENTRY_BYTES, UnsafeKeyError, check_key


def repo_checksum(entry_checksums: Mapping[str, str]) -> str:
    """The repo checksum as today's server computes it (the same value, one update per key)."""
    digest = hashlib.sha256()
    for key in sorted(entry_checksums):
        digest.update(key.encode("utf-8") + b"\x00" + entry_checksums[key].encode() + b"\n")
    return "sha256:" + digest.hexdigest()


API_PATH = "/api/claude_code/team_memory"
REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
log = logging.getLogger("memframe.legacy_server")


# -- SQLite: a connection per thread ---------------------------------------------------------------
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


class LegacySQLiteStorage:
    def __init__(self, path: Path) -> None:
        self.path = path
        if path.parent != path:
            path.parent.mkdir(parents=True, exist_ok=True)
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


# -- PostgreSQL: the hand-rolled pool --------------------------------------------------------------


def _legacy_postgres(url: str, *, max_connections: int = 10, timeout: float = 30.0) -> Storage:
    """Today's PostgreSQL engine: the queries are those of ``memframe.server.postgres`` (they
    did not change), the pool is the one it had."""
    import psycopg
    from psycopg.pq import TransactionStatus

    from memframe.server.postgres import (
        EMPTY_CHECKSUM,
        SCHEMA_LOCK,
        PostgresStorage,
        PostgresUnavailableError,
        Target,
        connect,
        parse_target,
        scrub,
    )
    from memframe.server.postgres import (
        SCHEMA as PG_SCHEMA,
    )

    Connection = psycopg.Connection[tuple[Any, ...]]

    class _Pool:
        """At most ``max_size`` connections in use at once; idle ones are reused (newest first) and
        checked with a round trip when they have been idle a while (the server may have restarted).
        ``close()`` closes the idle connections; those in use are closed when they come back."""

        CHECK_AFTER_IDLE = 5.0

        def __init__(self, target: Target, *, max_size: int, timeout: float) -> None:
            self._target = target
            self._timeout = timeout
            self._max_size = max_size
            self._slots = threading.BoundedSemaphore(max_size)
            self._lock = threading.Lock()
            self._idle: list[tuple[Connection, float]] = []  # and since when
            self._generation = 0  # bumped by close(): connections from before it are not reused

        def _connect(self) -> Connection:
            return connect(self._target, autocommit=True)

        def _take_idle(self) -> Connection | None:
            while True:
                with self._lock:
                    if not self._idle:
                        return None
                    conn, since = self._idle.pop()
                if conn.closed or conn.broken:
                    continue
                if time.monotonic() - since > self.CHECK_AFTER_IDLE:
                    try:
                        conn.execute("SELECT 1")
                    except psycopg.Error:
                        conn.close()
                        continue
                return conn

        def _give_back(self, conn: Connection, generation: int) -> None:
            reusable = (
                not conn.closed
                and not conn.broken
                and conn.info.transaction_status == TransactionStatus.IDLE
            )
            if reusable:
                with self._lock:
                    if generation == self._generation:
                        self._idle.append((conn, time.monotonic()))
                        return
            conn.close()

        @contextmanager
        def connection(self) -> Iterator[Connection]:
            if not self._slots.acquire(timeout=self._timeout):
                raise PostgresUnavailableError(
                    f"all {self._max_size} connections to PostgreSQL at {self._target.where} "
                    f"stayed busy for {self._timeout:g} s"
                )
            try:
                with self._lock:
                    generation = self._generation
                conn = self._take_idle() or self._connect()
                try:
                    yield conn
                finally:
                    self._give_back(conn, generation)
            finally:
                self._slots.release()

        def close(self) -> None:
            with self._lock:
                self._generation += 1
                idle, self._idle = self._idle, []
            for conn, _ in idle:
                conn.close()

    class LegacyPostgresStorage(PostgresStorage):
        def __init__(self, url: str) -> None:
            target = parse_target(url, application_name="memframe-server", timeout=timeout)
            self.url = target.shown
            self.where = target.where
            self.max_connections = max_connections
            self._pool = _Pool(target, max_size=max_connections, timeout=timeout)  # type: ignore[assignment]
            try:
                with self._pool.connection() as conn, conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                    for statement in PG_SCHEMA:
                        conn.execute(statement)
            except psycopg.Error as exc:
                self._pool.close()
                raise PostgresUnavailableError(
                    f"cannot create the tables in PostgreSQL at {self.where}: {scrub(str(exc), target)}"
                ) from None

        def put(
            self, repo: str, entries: Mapping[str, str], *, if_match: str | None, max_entries: int
        ) -> PutResult:
            """Today's put: one transaction per put, one round trip per statement."""
            if "\x00" in repo or any("\x00" in key for key in entries):
                raise ValueError("repo names, keys and token fields cannot contain NUL")
            incoming = {key: entry_checksum(text) for key, text in entries.items()}
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(
                    "INSERT INTO repos (repo, version, last_modified, checksum) "
                    "VALUES (%s, 0, 0, %s) ON CONFLICT (repo) DO NOTHING",
                    (repo, EMPTY_CHECKSUM),
                )
                row = conn.execute(
                    "SELECT version, last_modified, checksum FROM repos WHERE repo = %s FOR UPDATE",
                    (repo,),
                ).fetchone()
                assert row is not None
                version, last_modified, checksum = int(row[0]), float(row[1]), str(row[2])
                exists = version > 0
                current = checksum if exists else None
                if if_match is not None and if_match != current:
                    raise StaleChecksumError(current)
                checksums: dict[str, str] = dict(
                    conn.execute(
                        "SELECT key, checksum FROM entries WHERE repo = %s", (repo,)
                    ).fetchall()
                )
                total = len(checksums.keys() | incoming.keys())
                if total > max_entries:
                    raise TooManyEntriesError(max_entries, total)
                changed = {k: c for k, c in incoming.items() if checksums.get(k) != c}
                if exists and not changed:
                    return PutResult(checksum, last_modified, version)
                if changed:
                    with conn.cursor() as cursor:
                        cursor.executemany(
                            "INSERT INTO entries (repo, key, text, checksum) "
                            "VALUES (%s, %s, %s, %s) ON CONFLICT (repo, key) DO UPDATE SET "
                            "text = excluded.text, checksum = excluded.checksum",
                            [(repo, k, entries[k].encode("utf-8"), c) for k, c in changed.items()],
                        )
                checksums.update(changed)
                result = PutResult(repo_checksum(checksums), now(), version + 1)
                conn.execute(
                    "UPDATE repos SET version = %s, last_modified = %s, checksum = %s "
                    "WHERE repo = %s",
                    (result.version, result.last_modified, result.checksum, repo),
                )
            return result

    return LegacyPostgresStorage(url)


def open_legacy_storage(url: str) -> Storage:
    if url.startswith(("postgresql://", "postgres://")):
        return _legacy_postgres(url)
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
    return LegacySQLiteStorage(Path(path).expanduser())  # type: ignore[return-value]


# -- the HTTP server ---------------------------------------------------------------------------------
@dataclass
class ServerOptions:
    organization_id: str = "local"
    max_entries: int = 1_000
    max_body_bytes: int = 1_048_576
    max_entry_bytes: int = MAX_ENTRY_BYTES
    scan_secrets: bool = True


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.details = details

    def body(self) -> dict[str, Any]:
        return {
            "error": {"message": str(self), "details": {"error_code": self.code, **self.details}}
        }


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


def _unquote_etag(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None  # an empty header is no condition
    value = value.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


class TeamMemoryServer(ThreadingHTTPServer):
    daemon_threads = False  # graceful shutdown waits for requests in flight
    block_on_close = True

    def __init__(self, address: tuple[str, int], storage: Storage, options: ServerOptions) -> None:
        self.storage = storage
        self.options = options
        self._scanner: Any = None
        super().__init__(address, _Handler)

    def scanner(self) -> Any:
        if self._scanner is None:
            from memframe.scanner import default_scanner

            self._scanner = default_scanner()
        return self._scanner

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: TeamMemoryServer
    protocol_version = "HTTP/1.1"
    server_version = "memframe-team-server"
    # headers and body go out in two writes: without TCP_NODELAY, Nagle + delayed ACK stall
    # every keep-alive response by ~40 ms
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # one JSON line per request instead
        return

    # -- plumbing ------------------------------------------------------------------------------

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        payload = b"" if body is None else orjson.dumps(body)
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if payload and self.command != "HEAD":
            self.wfile.write(payload)
        self._status = status

    def _handle(self) -> None:
        started = time.perf_counter()
        self._status = 500
        self._body_read = False  # one handler serves every request of a keep-alive connection
        self._token: TokenInfo | None = None
        self._repo: str | None = None
        try:
            self._route()
        except ApiError as exc:
            self._drain()
            allow = {"Allow": str(exc.details["allow"])} if "allow" in exc.details else None
            self._send(exc.status, exc.body(), allow)
        except Exception as exc:  # never a stack trace to the client
            log.exception("unhandled error")
            self._send(
                500, ApiError(500, "internal_error", f"internal error: {type(exc).__name__}").body()
            )
        finally:
            log.info(
                orjson.dumps(
                    {
                        "ts": _iso(time.time()),
                        "method": self.command,
                        "path": urlsplit(self.path).path,
                        "repo": self._repo,
                        "token": self._token.name if self._token else None,
                        "status": self._status,
                        "ms": round((time.perf_counter() - started) * 1000, 2),
                    }
                ).decode()
            )

    def _drain(self) -> None:
        """Read an unread request body (bounded) so the connection stays usable."""
        length = self.headers.get("Content-Length")
        if getattr(self, "_body_read", False) or not length or not length.isdigit():
            return
        remaining = int(length)
        if remaining > self.server.options.max_body_bytes * 4:
            self.close_connection = True
            return
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 65_536))
            if not chunk:
                break
            remaining -= len(chunk)

    def __getattr__(self, name: str) -> Any:
        # every method (GET, PUT, but also TRACE, QUERY…) is routed: unknown ones get a JSON 405
        # instead of the standard library's HTML 501
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def _route(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/openapi.json" and self.command == "GET":
            from memframe.server.openapi import OPENAPI

            self._send(200, OPENAPI)
            return
        if parts.path == "/healthz" and self.command == "GET":
            self._send(200, {"status": "ok"})
            return
        if parts.path != API_PATH:
            raise ApiError(404, "not_found", f"no such endpoint: {parts.path}")
        if self.command not in ("GET", "PUT"):
            raise ApiError(
                405, "method_not_allowed", f"{self.command} is not allowed here", allow="GET, PUT"
            )
        query = parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(query) - {"repo", "view"})
        if unknown or (parts.query and not query):
            raise ApiError(400, "bad_query", f"unknown query parameter(s): {unknown}")
        repos = query.get("repo", [])
        if len(repos) != 1 or not REPO.match(repos[0]):
            raise ApiError(400, "bad_repo", "give exactly one repo=<owner>/<name>")
        self._repo = repos[0]
        self._authorise(self._repo)
        if self.command == "GET":
            views = query.get("view", [])
            if views not in ([], ["hashes"]):
                raise ApiError(400, "bad_view", "view must be 'hashes' when given")
            self._get(self._repo, hashes_only=views == ["hashes"])
        else:
            self._put(self._repo)

    def _authorise(self, repo: str) -> None:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Bearer ") or not header[7:].strip():
            raise ApiError(401, "unauthorized", "a bearer token is required")
        token = self.server.storage.token(hash_token(header[7:].strip()))
        if token is None or token.revoked:
            raise ApiError(401, "unauthorized", "unknown or revoked token")
        self._token = token
        if not token.allows(repo):
            raise ApiError(403, "forbidden", f"this token may not use the repo {repo}")

    # -- GET -----------------------------------------------------------------------------------

    def _get(self, repo: str, *, hashes_only: bool) -> None:
        snapshot = self.server.storage.get(repo, with_entries=not hashes_only)
        if snapshot is None:
            raise ApiError(404, "not_found", f"nothing is stored for {repo}")
        etag = f'"{snapshot.checksum}"'
        wanted = _unquote_etag(self.headers.get("If-None-Match"))
        if wanted is not None and wanted == snapshot.checksum:
            self._send(304, None, {"ETag": etag})
            return
        content: dict[str, Any] = {"entryChecksums": snapshot.entry_checksums}
        if not hashes_only:
            content = {"entries": snapshot.entries, **content}
        self._send(
            200,
            {
                "organizationId": self.server.options.organization_id,
                "repo": repo,
                "version": snapshot.version,
                "lastModified": _iso(snapshot.last_modified),
                "checksum": snapshot.checksum,
                "content": content,
            },
            {"ETag": etag},
        )

    # -- PUT -----------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        options = self.server.options
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            raise ApiError(411, "length_required", "send the body with a Content-Length")
        if length is None or not length.isdigit():
            raise ApiError(411, "length_required", "a Content-Length header is required")
        size = int(length)
        if size > options.max_body_bytes:
            raise ApiError(
                413,
                "request_too_large",
                f"the body is {size:,} bytes; the limit is {options.max_body_bytes:,}",
                max_body_bytes=options.max_body_bytes,
            )
        body = self.rfile.read(size)
        self._body_read = True
        if len(body) != size:
            raise ApiError(400, "incomplete_body", "the body ended before Content-Length")
        return body

    def _put(self, repo: str) -> None:
        options = self.server.options
        body = self._read_body()
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ApiError(400, "bad_json", f"the body is not valid UTF-8 JSON: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
            raise ApiError(400, "bad_body", 'the body must be {"entries": {key: text}}')
        entries: dict[str, str] = {}
        for key, text in data["entries"].items():
            try:
                check_key(key)
            except UnsafeKeyError as exc:
                raise ApiError(400, "bad_key", str(exc), key=key[:200]) from exc
            if not isinstance(text, str):
                raise ApiError(400, "bad_entry", f"entry {key!r} must be a string", key=key)
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > options.max_entry_bytes:
                raise ApiError(
                    413,
                    "team_memory_entry_too_large",
                    f"entry {key!r} is {size:,} bytes; the limit is {options.max_entry_bytes:,}",
                    key=key,
                    max_entry_bytes=options.max_entry_bytes,
                )
            entries[key] = text
        if options.scan_secrets:
            self._refuse_secrets(entries)
        if_match = _unquote_etag(self.headers.get("If-Match"))
        if if_match == "*":  # any current version: only "the repo must exist"
            existing = self.server.storage.get(repo, with_entries=False)
            if existing is None:
                raise ApiError(412, "precondition_failed", "If-Match: * and nothing is stored")
            if_match = None
        try:
            result = self.server.storage.put(
                repo, entries, if_match=if_match, max_entries=options.max_entries
            )
        except StaleChecksumError as exc:
            raise ApiError(
                412,
                "precondition_failed",
                "the repo changed since that checksum",
                current_checksum=exc.current,
            ) from exc
        except TooManyEntriesError as exc:
            raise ApiError(
                413,
                "team_memory_too_many_entries",
                f"the repo would hold {exc.received} entries; the limit is {exc.max_entries}",
                max_entries=exc.max_entries,
                received_entries=exc.received,
            ) from exc
        self._send(
            200,
            {"checksum": result.checksum, "lastModified": _iso(result.last_modified)},
            {"ETag": f'"{result.checksum}"'},
        )

    def _refuse_secrets(self, entries: dict[str, str]) -> None:
        from memframe.scanning.gate import gate_findings

        scanner = self.server.scanner()
        findings = []
        for key, text in entries.items():
            matches = gate_findings(scanner, key, text)  # the key, the text, what it decodes to
            if matches:
                findings.append(
                    {
                        "key": key,
                        "rules": [m.rule_id for m in matches],
                        "found_in": [m.where for m in matches],
                    }
                )
        if findings:
            rules = sorted({rule for f in findings for rule in f["rules"]})
            raise ApiError(
                422,
                "team_memory_secret_detected",
                f"{len(findings)} entr{'y' if len(findings) == 1 else 'ies'} contain secrets "
                f"({', '.join(rules)}); nothing was stored",
                findings=findings,
            )


class RunningServer:
    """A server on a background thread (tests, the demo): ``url``, then ``stop()``."""

    def __init__(self, server: TeamMemoryServer) -> None:
        self.server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(
    storage: Storage, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> RunningServer:
    return RunningServer(TeamMemoryServer((host, port), storage, ServerOptions(**options)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benches.legacy_server")
    parser.add_argument("--db", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)  # one JSON line per request, as it logged
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    storage = open_legacy_storage(args.db)
    server = TeamMemoryServer((args.host, args.port), storage, ServerOptions())
    server.scanner()
    stopping = threading.Event()

    def stop(signum: int, frame: object) -> None:
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"legacy team server on {server.url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        storage.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
