"""The team memory server's HTTP side: the wire contract of docs/server.md as an ASGI application
(Starlette), served by uvicorn (:mod:`memframe.server.serving`).

The event loop only parses, routes and answers; every storage call (and the JSON parsing,
key checks and secret scan of a PUT) runs on a fixed set of worker threads, as many as the
storage pool has connections, so a slow database never blocks the loop and an idle connection
costs no thread. Every request is logged as one JSON line. Bad input gets a 4xx with a JSON
error ``{"error": {"message", "details": {"error_code", ...}}}`` and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import re
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs

import orjson

from memframe.server.storage import (
    PutOutcome,
    PutRequest,
    PutResult,
    RepoHead,
    StaleChecksumError,
    Storage,
    TokenInfo,
    TokenRefusedError,
    TooManyEntriesError,
    hash_token,
)
from memframe.team_keys import MAX_ENTRY_BYTES, UnsafeKeyError, check_key

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.types import Message, Receive, Scope, Send

    from memframe.server.serving import RunningServer as RunningServer

API_PATH = "/api/claude_code/team_memory"
REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
SERVER_NAME = b"memframe-team-server"
log = logging.getLogger("memframe.server")
T = TypeVar("T")

NEEDS_EXTRA = "the team server needs the server extra: pip install 'memframe[server]'"
# A PUT body at most this large is checked on the event loop (JSON, keys, secret scan: a few
# µs) and its token in the write's transaction: one trip to the committer thread in all.
INLINE_BODY_BYTES = 4096


@dataclass
class ServerOptions:
    organization_id: str = "local"
    max_entries: int = 1_000
    max_body_bytes: int = 1_048_576
    max_entry_bytes: int = MAX_ENTRY_BYTES
    scan_secrets: bool = True
    # a request body must arrive, and a response be taken, within this many seconds
    request_timeout: float = 30.0


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


# -- worker threads -----------------------------------------------------------------------------


class WorkerThreads:
    """``size`` daemon threads that run the blocking calls of the requests (storage, scanning).

    A fixed set, started once: the server's thread count does not grow with its connections.
    ``drain(timeout)`` waits for the calls queued or running; daemon threads never hold up the
    process's exit past the bounded drain (a call cut short was never acknowledged)."""

    def __init__(self, size: int, name: str = "memframe-server") -> None:
        self.size = max(1, size)
        self._name = name
        self._jobs: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._cond = threading.Condition()
        self._pending = 0  # queued or running

    def start(self) -> None:
        if self._threads:
            return
        for n in range(self.size):
            thread = threading.Thread(target=self._work, name=f"{self._name}-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._cond:
            self._pending += 1
        self._jobs.put((loop, future, fn, args))
        return await future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            loop, future, fn, args = job
            result: Any = None
            error: BaseException | None = None
            try:
                if not future.cancelled():  # its request was given up before it started
                    result = fn(*args)
            except BaseException as exc:
                error = exc
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()
            # a closed loop (RuntimeError): nobody waits for this answer any more
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future, result, error)

    def drain(self, timeout: float) -> bool:
        """Wait until nothing is queued or running (at most ``timeout`` s); whether it is so."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending, timeout)

    def stop(self, timeout: float = 5.0) -> None:
        self.drain(timeout)
        threads, self._threads = self._threads, []
        for _ in threads:
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


# a queued PUT: the loop and future to answer it on, the request, the connection it came on
_Queued = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", PutRequest, object]


class ShuttingDownError(Exception):
    """The server stopped taking work (HTTP 503 ``shutting_down``)."""

    def __init__(self) -> None:
        super().__init__("the server is shutting down")


# -- the committer ------------------------------------------------------------------------------


class Committer:
    """The one thread of a server process that writes: the request handlers hand it each PUT
    once (:meth:`submit`, on the event loop); it takes every PUT queued — waiting first for the
    database's write lock when the storage has one (another process committing), so what
    arrives meanwhile joins the batch — and writes them with one ``put_batch``: one
    transaction, one commit (one ``fsync`` on SQLite). A batch is as large as the PUTs in
    flight (at most ``max_batch``). Each handler gets its own outcome only after the commit.

    Waiting a moment for more (``linger``, seconds, at most half the last commit's time): the
    clients a batch answered on keep-alive connections usually send their next PUT at once,
    and it arrives a little after the committer is free again. So while a connection of the
    last batch has not sent its next PUT yet (``submit(…, source=)`` names the connection), or
    a PUT is known to be on its way (:meth:`expect`: its request arrived and is being
    checked), the committer waits for it — before it takes the write lock, so another process
    is never held up by it — until all are there or the bound is reached. Two groups of clients
    then share one ``fsync`` instead of taking turns on two; one client never waits (its next
    PUT is the one queued).
    """

    def __init__(
        self,
        storage: Storage,
        *,
        max_batch: int = 512,
        linger: float = 0.001,
        name: str = "memframe-committer",
    ) -> None:
        self._storage = storage
        self.max_batch = max_batch
        self.linger = linger
        self._name = name
        self._cond = threading.Condition()
        self._queue: list[_Queued] = []
        self._awaited: set[object] = set()  # connections of the last batch not back yet
        self._pending = 0  # queued or being written
        self._expected = 0  # PUTs between expect() and submit() (or forget())
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._write_lock: Callable[[], contextlib.AbstractContextManager[None]] | None = getattr(
            storage, "write_lock", None
        )
        self.batches = 0  # statistics: batches written and PUTs in them
        self.puts = 0
        self._last_commit = 0.0  # how long the last batch's commit took

    def start(self) -> None:
        with self._cond:
            if self._thread is not None:
                return
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def expect(self) -> None:
        """A PUT is on its way (called on the event loop when its request arrives)."""
        with self._cond:
            self._expected += 1

    def forget(self) -> None:
        """That PUT will not come (refused before it was submitted)."""
        with self._cond:
            self._expected -= 1
            self._cond.notify_all()

    def submit(
        self, request: PutRequest, *, expected: bool = False, source: object = None
    ) -> asyncio.Future[PutOutcome]:
        """Queue ``request`` (on the event loop); the future's result is its outcome (a
        :class:`PutResult` or the exception that refused it, or that failed its batch).
        ``expected``: announced by :meth:`expect`; ``source``: the connection it came on."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[PutOutcome] = loop.create_future()
        with self._cond:
            if expected:
                self._expected -= 1
            if self._thread is None:
                raise ShuttingDownError()
            self._awaited.discard(source)
            self._queue.append((loop, future, request, source))
            self._pending += 1
            self._cond.notify_all()
        return future

    def _linger(self) -> None:
        """Wait (bounded) for the PUTs likely on their way; called with ``_cond`` held."""
        bound = min(self.linger, self._last_commit / 2)
        if bound <= 0:
            return
        self._cond.wait_for(
            lambda: (
                not (self._awaited or self._expected > 0)
                or len(self._queue) >= self.max_batch
                or self._stopping
            ),
            bound,
        )

    def _take(self) -> list[_Queued]:
        with self._cond:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
        return batch

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return
                self._linger()
            outcomes: list[PutOutcome] = []
            batch: list[_Queued] = []
            lock = self._write_lock() if self._write_lock else contextlib.nullcontext()
            started = time.monotonic()
            try:
                with lock:
                    batch = self._take()
                    started = time.monotonic()
                    try:
                        outcomes = self._storage.put_batch([item[2] for item in batch])
                    except Exception as exc:  # the transaction failed: nothing of it stored
                        log.exception("a batch of %d PUTs failed", len(batch))
                        outcomes = [exc] * len(batch)
            except Exception as exc:  # the write lock itself
                log.exception("the write lock failed")
                if not batch:
                    batch = self._take()
                outcomes = outcomes or [exc] * len(batch)
            self._last_commit = time.monotonic() - started
            with self._cond:  # answered now: their next PUTs are likely on their way
                self._awaited = {item[3] for item in batch if item[3] is not None}
            self.batches += 1
            self.puts += len(batch)
            by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any]]] = {}
            for (loop, future, _, _), outcome in zip(batch, outcomes, strict=True):
                by_loop.setdefault(loop, []).append((future, outcome))
            for loop, settled in by_loop.items():
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                    loop.call_soon_threadsafe(_settle_all, settled)
            with self._cond:
                self._pending -= len(batch)
                self._cond.notify_all()

    def wait_queued(self, count: int, timeout: float) -> bool:
        """Wait until at least ``count`` PUTs are queued (at most ``timeout`` s); whether they
        are (for tests: a committer held on the write lock keeps them queued)."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self._queue) >= count, timeout)

    def drain(self, timeout: float) -> bool:
        """Wait until nothing is queued or being written (at most ``timeout`` s)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending, timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (bounded by ``timeout``), then end the thread."""
        self.drain(timeout)
        with self._cond:
            thread, self._thread = self._thread, None
            self._stopping = True
            self._cond.notify_all()
        if thread is not None:
            thread.join(timeout)


def _settle_all(settled: list[tuple[asyncio.Future[Any], Any]]) -> None:
    for future, outcome in settled:
        if not future.cancelled():
            future.set_result(outcome)


# -- the content cache ---------------------------------------------------------------------------


class ContentCache:
    """The serialised ``content`` of GET answers by ``(repo, checksum, hashes only)``, least
    recently used out first, at most ``max_bytes`` in all. The checksum covers every key and
    entry checksum (sha256), so a hit is exactly that content whichever replica wrote it: the
    repo row alone (one indexed read) then answers a full GET."""

    def __init__(self, max_bytes: int = 32 << 20) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, str, bool], bytes] = OrderedDict()
        self._size = 0

    def get(self, key: tuple[str, str, bool]) -> bytes | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: tuple[str, str, bool], value: bytes) -> None:
        if len(value) > self.max_bytes // 8:
            return  # a huge repo would push out everything else
        with self._lock:
            old = self._items.pop(key, None)
            self._size += len(value) - (len(old) if old is not None else 0)
            self._items[key] = value
            while self._size > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self._size -= len(evicted)


# -- one request ------------------------------------------------------------------------------


class _Exchange:
    """One request and its answer, with what the log line needs."""

    __slots__ = (
        "closing",
        "headers",
        "method",
        "path",
        "receive",
        "repo",
        "scope",
        "send",
        "started",
        "status",
        "token",
    )

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send
        self.method: str = scope["method"]
        self.path: str = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        self.headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            self.headers.setdefault(name.decode("latin-1"), value.decode("latin-1"))
        self.started = time.perf_counter()
        self.status = 500
        self.token: TokenInfo | None = None
        self.repo: str | None = None
        self.closing = False  # answer with Connection: close

    async def respond(
        self, status: int, payload: bytes | None, extra: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        headers = [(b"server", SERVER_NAME)]
        if payload is not None:
            headers.append((b"content-type", b"application/json"))
        headers.append((b"content-length", str(len(payload or b"")).encode()))
        if extra:
            headers.extend(extra)
        if self.closing:
            headers.append((b"connection", b"close"))
        self.status = status
        await self.send({"type": "http.response.start", "status": status, "headers": headers})
        body = payload if payload is not None and self.method != "HEAD" else b""
        await self.send({"type": "http.response.body", "body": body})

    def log_line(self) -> str:
        client = self.scope.get("client")
        return orjson.dumps(
            {
                "ts": _iso(time.time()),
                "method": self.method,
                "path": self.path.split("?", 1)[0],
                "repo": self.repo,
                "token": self.token.name if self.token else None,
                "status": self.status,
                "ms": round((time.perf_counter() - self.started) * 1000, 2),
                "client": client[0] if client else None,
            }
        ).decode()


class _Endpoint:
    """A Starlette endpoint (an ASGI callable: every method reaches it) around one handler."""

    def __init__(self, app: TeamMemoryApp, handler: Callable[[_Exchange], Awaitable[None]]) -> None:
        self._app = app
        self._handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app.handle(_Exchange(scope, receive, send), self._handler)


# -- the application ----------------------------------------------------------------------------


class TeamMemoryApp:
    """The team memory API on ``storage`` as a Starlette application (``.asgi``).

    Its lifespan starts the worker threads (and, with ``preload_scanner``, compiles the secret
    rules); at shutdown it waits (at most ``drain_timeout`` s) for the storage calls in flight,
    stops the threads and, with ``owns_storage``, closes the storage and so every connection.

    Each request's JSON line goes to ``request_log`` (a callable taking the line), or, without
    one, to the ``memframe.server`` logger at INFO."""

    def __init__(
        self,
        storage: Storage,
        options: ServerOptions | None = None,
        *,
        owns_storage: bool = False,
        preload_scanner: bool = False,
        drain_timeout: float = 10.0,
        threads: int | None = None,
        request_log: Callable[[str], None] | None = None,
    ) -> None:
        try:
            from starlette.applications import Starlette
            from starlette.routing import Route
        except ImportError as exc:  # pragma: no cover - the extra is part of the dev set-up
            raise ImportError(NEEDS_EXTRA) from exc
        self.storage = storage
        self.options = options or ServerOptions()
        self.owns_storage = owns_storage
        self.preload_scanner = preload_scanner
        self.drain_timeout = drain_timeout
        self.request_log = request_log
        size = threads or int(getattr(storage, "max_connections", 8) or 8)
        self.workers = WorkerThreads(size)
        self.committer = Committer(storage)
        self.closed = False
        self._scanner: Any = None
        self._scanner_lock = threading.Lock()
        self.cache = ContentCache()
        # an engine whose lookup is a quick local read (SQLite) is asked on the event loop
        self.inline_lookup = bool(getattr(storage, "inline_lookup", False))
        self.asgi: Starlette = Starlette(
            routes=[
                Route(API_PATH, _Endpoint(self, self._api)),
                Route("/openapi.json", _Endpoint(self, self._openapi)),
                Route("/healthz", _Endpoint(self, self._health)),
                # everything else: a JSON 404 (and never a redirect to a trailing slash)
                Route("/{path:path}", _Endpoint(self, self._not_found)),
            ],
            lifespan=self._lifespan,
        )

    def scanner(self) -> Any:
        with self._scanner_lock:
            if self._scanner is None:
                from memframe.scanner import default_scanner

                self._scanner = default_scanner()
            return self._scanner

    @asynccontextmanager
    async def _lifespan(self, app: object) -> AsyncIterator[None]:
        self.workers.start()
        self.committer.start()
        if self.preload_scanner and self.options.scan_secrets:
            await self.workers.run(self.scanner)  # compile the rules before the first request
        try:
            yield
        finally:
            await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Wait (bounded) for the storage calls in flight, stop the threads, close the storage
        when this app owns it. Idempotent; a request after it is answered 503 (shutting_down)."""
        self.closed = True
        self.committer.stop(self.drain_timeout)
        self.workers.stop(self.drain_timeout)
        if self.owns_storage:
            self.storage.close()

    # -- plumbing ------------------------------------------------------------------------------

    async def handle(self, ex: _Exchange, handler: Callable[[_Exchange], Awaitable[None]]) -> None:
        try:
            if self.closed:
                ex.closing = True
                raise ShuttingDownError()
            await handler(ex)
        except ShuttingDownError:
            ex.closing = True
            error = ApiError(503, "shutting_down", "the server is shutting down: try again")
            await ex.respond(503, orjson.dumps(error.body()), [(b"retry-after", b"1")])
        except ApiError as exc:
            allow = (
                [(b"allow", str(exc.details["allow"]).encode())] if "allow" in exc.details else []
            )
            await ex.respond(exc.status, orjson.dumps(exc.body()), allow)
        except Exception as exc:  # never a stack trace to the client
            log.exception("unhandled error")
            ex.closing = True
            error = ApiError(500, "internal_error", f"internal error: {type(exc).__name__}")
            await ex.respond(500, orjson.dumps(error.body()))
        finally:
            if self.request_log is not None:
                self.request_log(ex.log_line())
            elif log.isEnabledFor(logging.INFO):
                log.info(ex.log_line())

    def _refuse_unread_body(self, ex: _Exchange) -> None:
        """An answer given before the body was read: close the connection rather than read a
        large or unbounded body only to throw it away."""
        length = ex.headers.get("content-length", "")
        if ex.headers.get("transfer-encoding") or (
            length.isdigit() and int(length) > self.options.max_body_bytes
        ):
            ex.closing = True

    async def _not_found(self, ex: _Exchange) -> None:
        self._refuse_unread_body(ex)
        raise ApiError(404, "not_found", f"no such endpoint: {ex.path.split('?', 1)[0]}")

    def _get_only(self, ex: _Exchange) -> None:
        if ex.method != "GET":
            self._refuse_unread_body(ex)
            raise ApiError(
                405, "method_not_allowed", f"{ex.method} is not allowed here", allow="GET"
            )

    async def _openapi(self, ex: _Exchange) -> None:
        self._get_only(ex)
        from memframe.server.openapi import OPENAPI

        await ex.respond(200, orjson.dumps(OPENAPI))

    async def _health(self, ex: _Exchange) -> None:
        self._get_only(ex)
        await ex.respond(200, b'{"status":"ok"}')

    async def _api(self, ex: _Exchange) -> None:
        target = ex.path.split("?", 1)[0]
        if target != API_PATH:  # the raw path: a percent-encoded look-alike is not this path
            await self._not_found(ex)
        self._refuse_unread_body(ex)  # cleared below once a PUT's body is accepted
        if ex.method not in ("GET", "PUT"):
            raise ApiError(
                405, "method_not_allowed", f"{ex.method} is not allowed here", allow="GET, PUT"
            )
        raw_query = ex.scope.get("query_string", b"").decode("latin-1")
        query = parse_qs(raw_query, keep_blank_values=True)
        unknown = sorted(set(query) - {"repo", "view"})
        if unknown or (raw_query and not query):
            raise ApiError(400, "bad_query", f"unknown query parameter(s): {unknown}")
        repos = query.get("repo", [])
        if len(repos) != 1 or not REPO.fullmatch(repos[0]):
            raise ApiError(400, "bad_repo", "give exactly one repo=<owner>/<name>")
        ex.repo = repos[0]
        token_hash = self._token_hash(ex)
        if ex.method == "GET":
            views = query.get("view", [])
            wanted = _unquote_etag(ex.headers.get("if-none-match"))
            if self.inline_lookup:
                answer = self._get_head(ex, token_hash, views, wanted)
                if answer is None:
                    answer = await self.workers.run(self._get_body, ex, views, wanted)
            else:
                answer = await self.workers.run(self._get, ex, token_hash, views, wanted)
            status, payload, checksum = answer
            await ex.respond(status, payload, [(b"etag", f'"{checksum}"'.encode())])
        else:
            await self._put(ex, token_hash)

    # -- auth (worker threads from here on) ---------------------------------------------------

    @staticmethod
    def _token_hash(ex: _Exchange) -> str:
        header = ex.headers.get("authorization", "")
        if not header.startswith("Bearer ") or not header[7:].strip():
            raise ApiError(401, "unauthorized", "a bearer token is required")
        return hash_token(header[7:].strip())

    def _authorise(self, ex: _Exchange, token_hash: str) -> RepoHead | None:
        token, head = self.storage.lookup(token_hash, ex.repo or "")
        if token is None or token.revoked:
            raise ApiError(401, "unauthorized", "unknown or revoked token")
        ex.token = token
        if not token.allows(ex.repo or ""):
            raise ApiError(403, "forbidden", f"this token may not use the repo {ex.repo}")
        return head

    # -- GET -----------------------------------------------------------------------------------

    def _get(
        self, ex: _Exchange, token_hash: str, views: list[str], wanted: str | None
    ) -> tuple[int, bytes | None, str]:
        return self._get_head(ex, token_hash, views, wanted) or self._get_body(ex, views, wanted)

    def _get_head(
        self, ex: _Exchange, token_hash: str, views: list[str], wanted: str | None
    ) -> tuple[int, bytes | None, str] | None:
        """The answer from the token and the repo row alone (a 304, or a cached content), or
        ``None`` when the entries must be read."""
        head = self._authorise(ex, token_hash)
        if views not in ([], ["hashes"]):
            raise ApiError(400, "bad_view", "view must be 'hashes' when given")
        repo = ex.repo or ""
        if head is None:
            raise ApiError(404, "not_found", f"nothing is stored for {repo}")
        if wanted is not None and wanted == head.checksum:
            return 304, None, head.checksum
        content = self.cache.get((repo, head.checksum, views == ["hashes"]))
        if content is None:
            return None
        return 200, self._repo_payload(repo, head, content), head.checksum

    def _get_body(
        self, ex: _Exchange, views: list[str], wanted: str | None
    ) -> tuple[int, bytes | None, str]:
        repo = ex.repo or ""
        hashes_only = views == ["hashes"]
        snapshot = self.storage.get(repo, with_entries=not hashes_only)
        if snapshot is None:
            raise ApiError(404, "not_found", f"nothing is stored for {repo}")
        if wanted is not None and wanted == snapshot.checksum:
            return 304, None, snapshot.checksum
        body: dict[str, Any] = {"entryChecksums": snapshot.entry_checksums}
        if not hashes_only:
            body = {"entries": snapshot.entries, **body}
        content = orjson.dumps(body)
        self.cache.put((repo, snapshot.checksum, hashes_only), content)
        head = RepoHead(snapshot.version, snapshot.last_modified, snapshot.checksum)
        return 200, self._repo_payload(repo, head, content), snapshot.checksum

    def _repo_payload(self, repo: str, head: RepoHead, content: bytes) -> bytes:
        fields = orjson.dumps(
            {
                "organizationId": self.options.organization_id,
                "repo": repo,
                "version": head.version,
                "lastModified": _iso(head.last_modified),
                "checksum": head.checksum,
            }
        )
        return fields[:-1] + b',"content":' + content + b"}"

    # -- PUT -----------------------------------------------------------------------------------

    async def _read_body(self, ex: _Exchange) -> bytes:
        options = self.options
        length = ex.headers.get("content-length")
        if ex.headers.get("transfer-encoding"):
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
        ex.closing = False
        chunks: list[bytes] = []
        received = 0
        # the body's deadline: asyncio.timeout's rule (the task cancelled when it passes; that
        # cancellation, and only that one, becomes the timeout) in one timer and a flag,
        # without its context manager, which cost ~8% of a small PUT's time on the loop
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        timer = asyncio.get_running_loop().call_later(options.request_timeout, expire)
        try:
            while True:
                message: Message = await ex.receive()
                if message["type"] != "http.request":
                    break  # the client went away
                chunk = message.get("body", b"")
                if chunk:
                    chunks.append(chunk)
                    received += len(chunk)
                if not message.get("more_body", False):
                    break
        except asyncio.CancelledError:
            if not expired or task.uncancel() > cancelling:
                raise  # cancelled from outside (a shutdown's deadline), not the body's
            ex.closing = True
            raise ApiError(
                408,
                "request_timeout",
                f"the body did not arrive within {options.request_timeout:g} s",
            ) from None
        finally:
            timer.cancel()
        if received != size:
            ex.closing = True
            raise ApiError(400, "incomplete_body", "the body ended before Content-Length")
        return b"".join(chunks)

    async def _put(self, ex: _Exchange, token_hash: str) -> None:
        """A PUT: its body checked, then one trip to the committer, which checks the token in
        the transaction that writes (a token revoked meanwhile writes nothing). A small body
        (``INLINE_BODY_BYTES``) is read and checked on the event loop before the token; when
        it is refused, the token is looked up first, so a bad token is still answered 401/403
        before anything about the body. A larger one is read only once the token is known
        good, and checked on a worker thread."""
        options = self.options
        if_match = _unquote_etag(ex.headers.get("if-match"))
        length = ex.headers.get("content-length", "")
        small = (
            not ex.headers.get("transfer-encoding")
            and length.isdigit()
            and int(length) <= min(INLINE_BODY_BYTES, options.max_body_bytes)
        )
        committer = self.committer
        if small:
            committer.expect()
            try:
                body = await self._read_body(ex)
                if options.scan_secrets and self._scanner is None:  # compiles the rules once
                    entries = await self.workers.run(self._parse_put, body)
                else:
                    entries = self._parse_put(body)
            except BaseException as exc:
                committer.forget()
                if isinstance(exc, ApiError):
                    await self._check_token(ex, token_hash)  # 401/403 before the body's error
                raise
            request = PutRequest(ex.repo or "", entries, if_match, options.max_entries, token_hash)
            outcome = await committer.submit(request, expected=True, source=ex.scope.get("client"))
        else:
            await self._check_token(ex, token_hash)
            body = await self._read_body(ex)
            entries = await self.workers.run(self._parse_put, body)
            request = PutRequest(ex.repo or "", entries, if_match, options.max_entries, token_hash)
            outcome = await committer.submit(request, source=ex.scope.get("client"))
        result = self._put_result(ex, if_match, outcome)
        # the transaction holding this write committed: only now is it answered
        payload = orjson.dumps(
            {"checksum": result.checksum, "lastModified": _iso(result.last_modified)}
        )
        await ex.respond(200, payload, [(b"etag", f'"{result.checksum}"'.encode())])

    async def _check_token(self, ex: _Exchange, token_hash: str) -> None:
        if self.inline_lookup:
            self._authorise(ex, token_hash)
        else:
            await self.workers.run(self._authorise, ex, token_hash)

    @staticmethod
    def _put_result(ex: _Exchange, if_match: str | None, outcome: PutOutcome) -> PutResult:
        if isinstance(outcome, PutResult):
            ex.token = outcome.token
            return outcome
        if isinstance(outcome, TokenRefusedError):
            ex.token = outcome.token
            code = "unauthorized" if outcome.status == 401 else "forbidden"
            raise ApiError(outcome.status, code, str(outcome))
        if isinstance(outcome, StaleChecksumError):
            if if_match == "*":
                raise ApiError(412, "precondition_failed", "If-Match: * and nothing is stored")
            raise ApiError(
                412,
                "precondition_failed",
                "the repo changed since that checksum",
                current_checksum=outcome.current,
            )
        if isinstance(outcome, TooManyEntriesError):
            raise ApiError(
                413,
                "team_memory_too_many_entries",
                f"the repo would hold {outcome.received} entries; the limit is "
                f"{outcome.max_entries}",
                max_entries=outcome.max_entries,
                received_entries=outcome.received,
            )
        raise outcome  # the batch failed (or a refusal of the engine's own): a 500

    def _parse_put(self, body: bytes) -> dict[str, str]:
        """The entries of a PUT body, checked: JSON, keys, sizes, secrets (4xx otherwise)."""
        options = self.options
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
        return entries

    def _refuse_secrets(self, entries: dict[str, str]) -> None:
        from memframe.scanning.gate import gate_findings

        scanner = self.scanner()
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


def start_server(
    storage: Storage, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> RunningServer:
    """The server on a background thread (tests, the demo) on ``storage``, which the caller
    keeps and closes: ``url``, then ``stop()`` (or a ``with`` block). ``options`` are
    :class:`ServerOptions` fields."""
    from memframe.server.serving import RunningServer, ServeConfig

    app = TeamMemoryApp(storage, ServerOptions(**options))
    return RunningServer(app, ServeConfig(host=host, port=port))


def __getattr__(name: str) -> Any:
    """``RunningServer`` lives with uvicorn in :mod:`memframe.server.serving` (imported on first
    use: ``memframe serve token …`` needs neither); still importable from here."""
    if name == "RunningServer":
        from memframe.server.serving import RunningServer

        return RunningServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
