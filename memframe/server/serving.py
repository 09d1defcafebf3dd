"""Serving the team memory app with uvicorn: in ``memframe serve`` (one process, or a supervisor
and ``workers`` processes sharing one listening socket) and on a background thread (tests, the
demo).

What uvicorn is given on top of its defaults:

- a listening socket bound here (``SO_REUSEADDR``, a backlog of ``backlog``), so the port is
  known, and taken, before the first line is printed;
- connection limits: past ``max_connections`` open connections a new one is answered ``503``
  and closed at once; past ``limit_concurrency`` connections or requests in flight uvicorn
  answers ``503``;
- timeouts: an idle connection (no request started) is closed after ``keep_alive_timeout``
  seconds, a started request must have sent its headers within ``request_timeout`` seconds (and
  its body, checked by the app, as long again);
- graceful shutdown: stop listening, close idle connections, let the requests in flight finish
  for at most ``graceful_timeout`` seconds (then cancel them: a write not answered was never
  acknowledged), then the app's own shutdown (threads, storage connections);
- with several workers, a balance of keep-alive connections over them
  (:class:`ConnectionBalance`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from memframe._process import pid_alive
from memframe.server.app import NEEDS_EXTRA

try:
    import uvicorn
    from uvicorn.protocols.http.flow_control import service_unavailable
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError as exc:  # pragma: no cover - the extra is part of the dev set-up
    raise ImportError(NEEDS_EXTRA) from exc

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from memframe.server.app import ServerOptions, TeamMemoryApp
    from memframe.server.storage import Storage

log = logging.getLogger("memframe.server")


def _error_body(code: str, message: str) -> bytes:
    return b'{"error":{"message":"%s","details":{"error_code":"%s"}}}' % (
        message.encode(),
        code.encode(),
    )


def _raw_error(status: bytes, code: str, message: str) -> bytes:
    """A complete JSON error response, written by the protocol itself (no app involved)."""
    body = _error_body(code, message)
    head = b"HTTP/1.1 %s\r\ncontent-type: application/json\r\nconnection: close\r\n" % status
    return head + b"content-length: %d\r\n\r\n" % len(body) + body


_BUSY = _raw_error(b"503 Service Unavailable", "too_many_connections", "too many open connections")
_OVER_LIMIT = _error_body("concurrency_limit", "too many requests in flight")


async def _over_limit(scope: Scope, receive: Receive, send: Send) -> None:
    """uvicorn's answer past ``limit_concurrency`` (its own is plain text), as a JSON error."""
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(_OVER_LIMIT)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": _OVER_LIMIT})


_TIMEOUT = _raw_error(
    b"408 Request Timeout", "request_timeout", "the request headers took too long"
)


@dataclass
class ServeConfig:
    """How the server listens and what it bounds (``memframe serve`` flags)."""

    host: str = "127.0.0.1"
    port: int = 0
    workers: int = 1
    backlog: int = 2048  # the kernel caps it at net.core.somaxconn
    keep_alive_timeout: float = 5.0
    request_timeout: float = 30.0
    graceful_timeout: float = 10.0
    max_connections: int = 2048
    limit_concurrency: int | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    proxy_headers: bool = False
    forwarded_allow_ips: str = "127.0.0.1"

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert else "http"


def bind_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: a free one), inheritable by workers."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket, scheme: str = "http") -> str:
    host, port = sock.getsockname()[:2]
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


class ConnectionBalance:
    """The open connections of each worker of ``memframe serve --workers N``, in memory the
    workers share, so that none keeps many more keep-alive connections than another.

    The kernel hands a new connection to whichever worker accepts first, and a keep-alive client
    then stays there: 8 clients that connect at once often all land on one worker (measured:
    8 : 0, 2 : 6), which then does all their work on one core while the other idles. A worker
    that holds more connections than the least loaded live worker, by at least ``margin`` and
    by at least an eighth of that worker's count (so that hundreds of connections do not churn
    over a small imbalance), answers one request with ``Connection: close`` (at most one every
    ``interval`` seconds); the client opens a new connection, which the less busy worker is the
    likelier to accept. HTTP/1.1 lets a server close a connection after any response, and
    clients reconnect.

    Picklable only while the workers are spawned (``multiprocessing`` shared memory); each
    worker takes a slot (its pid and count) before it serves (:meth:`join`), and a slot whose
    process is gone is taken over."""

    def __init__(self, workers: int, *, margin: int = 2, interval: float = 0.01) -> None:
        if workers < 2:
            raise ValueError("a connection balance needs 2 or more workers")
        # (pid, open connections) per worker; its items read and write as ints (typeshed
        # types them as ctypes objects, hence Any)
        self._slots: Any = multiprocessing.get_context("spawn").Array(ctypes.c_long, 2 * workers)
        self.margin = margin
        self.interval = interval
        self._mine: int | None = None  # this process's slot
        self._next_shed = 0.0

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_mine"] = None  # per process
        state["_next_shed"] = 0.0
        return state

    def _slot(self) -> int | None:
        """This process's slot, taken on first use (called with the lock held); None when
        every slot is held by another live process (this one is then not balanced)."""
        if self._mine is None:
            raw = self._slots.get_obj()
            pid = os.getpid()
            for i in range(0, len(raw), 2):
                if raw[i] in (0, pid) or not pid_alive(raw[i]):
                    raw[i], raw[i + 1] = pid, 0
                    self._mine = i
                    break
        return self._mine

    def join(self) -> None:
        """Take this process's slot (with no connection yet)."""
        with self._slots.get_lock():
            self._slot()

    def _add(self, change: int) -> None:
        with self._slots.get_lock():
            slot = self._slot()
            if slot is not None:
                raw = self._slots.get_obj()
                raw[slot + 1] = max(0, raw[slot + 1] + change)

    def opened(self) -> None:
        self._add(1)

    def closed(self) -> None:
        self._add(-1)

    def counts(self) -> dict[int, int]:
        """Open connections by worker pid (live workers only)."""
        with self._slots.get_lock():
            raw = list(self._slots.get_obj())
        return {raw[i]: raw[i + 1] for i in range(0, len(raw), 2) if raw[i] and pid_alive(raw[i])}

    def _over(self, mine: int, least: int) -> bool:
        return mine >= least + max(self.margin, least / 8)

    def should_shed(self) -> bool:
        """Whether this worker is to close the connection of the request it is answering."""
        now = time.monotonic()
        if now < self._next_shed or self._mine is None:
            return False
        raw = self._slots.get_obj()  # a racy read is fine: a hint, checked again below
        mine = raw[self._mine + 1]
        others = [raw[i + 1] for i in range(0, len(raw), 2) if raw[i] and i != self._mine]
        if not others or not self._over(mine, min(others)):
            return False
        counts = self.counts()  # under the lock, and only live workers
        mine = counts.pop(os.getpid(), 0)
        if not counts or not self._over(mine, min(counts.values())):
            return False
        self._next_shed = now + self.interval
        return True


class _Config(uvicorn.Config):
    def __init__(
        self,
        *args: Any,
        max_connections: int,
        request_timeout: float,
        balance: ConnectionBalance | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.max_connections = max_connections
        self.request_timeout = request_timeout
        self.balance = balance

    def load(self) -> None:
        # in each worker process, before it serves: counted from the start, so an idle worker
        # is one to move connections to
        if self.balance is not None:
            self.balance.join()
        super().load()


T = TypeVar("T")


class _PerIteration(Generic[T]):
    """What one event-loop iteration adds, handed to ``sink`` in one call once the loop has run
    its ready callbacks (``call_soon``): the one coalescing of writes the server does (the
    socket's and the request lines'). Not thread-safe: a caller on several threads holds a
    lock around :meth:`add` and passes ``queued``, the locked flush the loop is to call."""

    __slots__ = ("_items", "_loop", "_queued", "_sink")

    def __init__(
        self, sink: Callable[[list[T]], None], queued: Callable[[], None] | None = None
    ) -> None:
        self._sink = sink
        self._queued = queued or self.flush
        self._items: list[T] = []
        self._loop: asyncio.AbstractEventLoop | None = None  # where a flush is queued

    def add(self, item: T, loop: asyncio.AbstractEventLoop | None) -> None:
        """Queue ``item`` for ``loop``'s next iteration (``None``: no loop, hand it over now)."""
        self._items.append(item)
        if loop is None:
            self.flush()
        elif self._loop is not loop:  # none queued on this loop (or that loop is gone)
            self._loop = loop
            loop.call_soon(self._queued)

    def flush(self) -> None:
        self._loop = None
        if self._items:
            items, self._items = self._items, []
            self._sink(items)


class _CoalescingTransport:
    """A transport whose writes of one loop iteration leave in one ``send``: uvicorn writes a
    response's head and body separately, two system calls and two TCP segments otherwise."""

    __slots__ = ("_loop", "_out", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._out: _PerIteration[bytes] = _PerIteration(self._send)

    def write(self, data: bytes) -> None:
        if data:
            self._out.add(data, self._loop)

    def _send(self, chunks: list[bytes]) -> None:
        if not self._transport.is_closing():
            self._transport.write(b"".join(chunks))

    def close(self) -> None:
        self._out.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _Protocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a connection cap, an idle timeout from the first
    byte on (uvicorn's keep-alive timer only starts after a response) and a header
    timeout."""

    def __init__(self, config: _Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._max_connections: int = config.max_connections
        self._request_timeout: float = config.request_timeout
        self._balance: ConnectionBalance | None = config.balance
        self._header_timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._counted = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self._max_connections:
            self._refused = True
            self.transport = transport
            transport.write(_BUSY)
            transport.close()
            return
        super().connection_made(_CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]
        if self._balance is not None:
            self._balance.opened()
            self._counted = True
        # no request yet: an idle connection, closed like one kept alive after a response
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def data_received(self, data: bytes) -> None:
        if not self._refused:
            super().data_received(data)

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if app is service_unavailable:  # past limit_concurrency: the JSON error instead
            app = _over_limit
        super()._start_asgi_task(cycle, app)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self._request_timeout, self._headers_too_slow)

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()
        if self._balance is not None and self.cycle is not None and self._balance.should_shed():
            self.cycle.keep_alive = False  # this response says Connection: close

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.write(_TIMEOUT)
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        if self._counted and self._balance is not None:
            self._counted = False
            self._balance.closed()
        super().connection_lost(exc)


class _Server(uvicorn.Server):
    """uvicorn's server, woken at once by ``request_exit`` (not a 0.1 s poll), with a
    bounded shutdown that polls every 10 ms, and signal handlers that stop it without
    re-raising the signal afterwards (``memframe serve`` exits 0 on SIGTERM)."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self._on_ready = on_ready
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {
            sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        if self._loop is not None and self._wake is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    def request_exit(self) -> None:
        self.should_exit = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop is gone already
                loop.call_soon_threadsafe(wake.set)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            self.ready.set()
            if self._on_ready is not None:
                self._on_ready()

    async def main_loop(self) -> None:
        assert self._wake is not None
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()  # idle: closed now; busy: closed after its response
        deadline = loop.time() + (self.config.timeout_graceful_shutdown or 0)
        while (state.connections or state.tasks) and not self.force_exit:
            if loop.time() >= deadline:
                logging.getLogger("uvicorn.error").error(
                    "graceful shutdown: %d request(s) still running after %s s, cancelled",
                    len(state.tasks),
                    self.config.timeout_graceful_shutdown,
                )
                for task in state.tasks:
                    task.cancel()
                for connection in list(state.connections):
                    connection.transport.close()
                await asyncio.sleep(0.01)
                break
            await asyncio.sleep(0.01)
        for server in self.servers:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 1.0)
        if not self.force_exit:
            await self.lifespan.shutdown()


def uvicorn_config(
    app: Any, config: ServeConfig, *, balance: ConnectionBalance | None = None
) -> uvicorn.Config:
    """uvicorn's configuration for ``app`` under ``config`` (logging left to memframe);
    ``balance``: the workers' shared connection counts."""
    return _Config(
        app,
        host=config.host,
        port=config.port,
        loop="auto",  # uvloop when installed (the server extra has it)
        http=_Protocol,
        ws="none",
        lifespan="on",
        log_config=None,
        access_log=False,
        server_header=False,  # the app names itself (memframe-team-server)
        date_header=True,
        workers=config.workers,
        backlog=config.backlog,
        timeout_keep_alive=config.keep_alive_timeout,
        timeout_graceful_shutdown=config.graceful_timeout,
        limit_concurrency=config.limit_concurrency,
        proxy_headers=config.proxy_headers,
        forwarded_allow_ips=config.forwarded_allow_ips,
        ssl_certfile=config.tls_cert,
        ssl_keyfile=config.tls_key,
        max_connections=config.max_connections,
        request_timeout=config.request_timeout,
        balance=balance,
    )


class RunningServer:
    """The app served on a background thread: ``url``, ``address``, then ``stop()``. Starts in a
    few milliseconds once uvicorn is imported; ``stop()`` drains like ``memframe serve``."""

    def __init__(self, app: TeamMemoryApp, config: ServeConfig | None = None) -> None:
        self.app = app
        self.config = config or ServeConfig()
        self._socket = bind_socket(self.config.host, self.config.port, self.config.backlog)
        self.address: tuple[str, int] = self._socket.getsockname()[:2]
        self.url = url_of(self._socket, self.config.scheme)
        self._server = _Server(uvicorn_config(app.asgi, self.config))
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="memframe-server", daemon=True)
        self._thread.start()
        while not self._server.ready.wait(0.01):
            if not self._thread.is_alive():
                self._socket.close()
                raise RuntimeError(f"the team server did not start: {self._failure!r}")

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as exc:  # SystemExit from a failed start-up, too
            self._failure = exc

    def stop(self) -> None:
        self._server.request_exit()
        self._thread.join(timeout=self.config.graceful_timeout + 10)
        self._socket.close()
        self.app.close()  # when the thread could not finish (it should have)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServedApp:
    """The ASGI app ``memframe serve`` runs in each of its processes. Picklable (workers are
    spawned): at the lifespan start-up a process opens its own storage — one connection pool
    per process — unless it was handed one, and it closes what it opened at shutdown."""

    def __init__(
        self,
        db_url: str,
        options: ServerOptions,
        *,
        drain_timeout: float,
        storage: Storage | None = None,
        log_requests: bool = True,
    ) -> None:
        self.db_url = db_url
        self.options = options
        self.drain_timeout = drain_timeout
        self.log_requests = log_requests
        self._storage = storage
        self._app: TeamMemoryApp | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_storage"] = None  # a worker opens its own
        state["_app"] = None
        return state

    def _build(self) -> TeamMemoryApp:
        from memframe.server import open_storage
        from memframe.server.app import TeamMemoryApp

        request_log = log_to_stderr().line if self.log_requests else None
        storage = self._storage
        owns = storage is None
        if storage is None:
            storage = open_storage(self.db_url)
        return TeamMemoryApp(
            storage,
            self.options,
            owns_storage=owns,
            preload_scanner=True,
            drain_timeout=self.drain_timeout,
            request_log=request_log,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            self._app = self._build()
        await self._app.asgi(scope, receive, send)


class LineBatchHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that writes the lines one event-loop iteration logs in one ``write``
    (:class:`_PerIteration`): a line logged on a running loop is written when the loop has run
    its ready callbacks, a line logged elsewhere (another thread, no loop) at once, after any
    lines still waiting, so the order holds. ``flush()`` (also at interpreter exit, through
    ``logging.shutdown``) writes what waits; a SIGKILL loses at most one iteration's lines."""

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self._out: _PerIteration[str] = _PerIteration(self._write, queued=self.flush)

    def emit(self, record: logging.LogRecord) -> None:  # called with the handler's lock held
        try:
            line = self.format(record)
        except Exception:  # logging's own policy: report, never raise into the caller
            self.handleError(record)
            return
        self.line(line)  # the lock is re-entrant

    def line(self, text: str) -> None:
        """Write ``text`` as one line, as a record logged with ``%(message)s`` would be, but
        without the record: ``memframe serve``'s request lines come here (the app's
        ``request_log``). Making, filtering and formatting the record cost more than the line
        itself (~15% of a small PUT's time on the event loop)."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self.lock:  # type: ignore[union-attr]  # created by Handler.__init__
            self._out.add(text, loop)

    def flush(self) -> None:
        self.acquire()
        try:
            self._out.flush()
        finally:
            self.release()

    def _write(self, lines: list[str]) -> None:
        if self.stream is None:
            return
        try:
            self.stream.write("\n".join(lines) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed or gone: nothing to do
            pass


def log_to_stderr() -> LineBatchHandler:
    """Request lines (``memframe.server``) and uvicorn's warnings on stderr, one per line;
    returns the handler (the one installed already, when called again).

    Only for ``memframe serve``'s own processes: every line is the bare message, so a log
    record need not gather its caller, thread or process (the optimisation switches of the
    logging HOWTO; ~6% more PUTs/s at 8 clients on one worker), and the lines of one loop
    iteration leave in one write (:class:`LineBatchHandler`)."""
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None  # no findCaller() per record
    server_log = logging.getLogger("memframe.server")
    for installed in server_log.handlers:
        if isinstance(installed, LineBatchHandler) and getattr(installed, "_memframe", False):
            return installed
    handler = LineBatchHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler._memframe = True  # type: ignore[attr-defined]
    server_log.addHandler(handler)
    server_log.setLevel(logging.INFO)
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(handler)
    uvicorn_log.setLevel(logging.WARNING)
    uvicorn_log.propagate = False
    return handler


def serve(
    app: ServedApp, config: ServeConfig, *, announce: Callable[[str], None] | None = None
) -> None:  # pragma: no cover - run as a process by the tests
    """Serve ``app`` until SIGTERM/SIGINT: in this process, or with ``config.workers`` worker
    processes under uvicorn's supervisor (which restarts a worker that dies). ``announce(url)``
    is called once the server answers (with workers: once the socket listens)."""
    sock = bind_socket(config.host, config.port, config.backlog)
    url = url_of(sock, config.scheme)
    try:
        balance = ConnectionBalance(config.workers) if config.workers > 1 else None
        uv_config = uvicorn_config(app, config, balance=balance)
        if config.workers > 1:
            from uvicorn.supervisors import Multiprocess

            if announce is not None:  # connections wait in the backlog for the first worker
                announce(url)
            Multiprocess(uv_config, sockets=[sock]).run()
        else:
            ready = None if announce is None else (lambda: announce(url))
            _Server(uv_config, on_ready=ready).run(sockets=[sock])
    finally:
        sock.close()
