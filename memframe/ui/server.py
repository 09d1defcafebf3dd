"""Serving the UI with uvicorn on 127.0.0.1: in the foreground (``memframe ui``) or on a
background thread (tests)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memframe.ui.app import UiApp
from memframe.ui.security import new_token

try:
    import uvicorn
except ImportError as exc:  # pragma: no cover - part of the ui extra and the dev set-up
    raise ImportError(
        "memframe ui needs Starlette, uvicorn and Jinja2: pip install 'memframe[server]'"
    ) from exc

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame

HOST = "127.0.0.1"


def bind(port: int = 0) -> socket.socket:
    """A listening socket on 127.0.0.1 (``0``: any free port), bound before anything is
    printed so the URL names a port that is already ours."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


@dataclass
class RunningUi:
    """A UI being served: its URLs, token, and how to stop it."""

    port: int
    token: str
    server: uvicorn.Server
    thread: threading.Thread | None = None
    sock: socket.socket | None = field(default=None, repr=False)

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The URL to open: the token in the query string (exchanged for a cookie)."""
        return f"{self.origin}/?token={self.token}"

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout)
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()


class _Server(uvicorn.Server):
    """uvicorn's server, stopping cleanly on SIGINT/SIGTERM: the handlers ask it to exit, and
    the signal is not raised again afterwards (``memframe ui`` then exits 0)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        kept = {
            sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in kept.items():
                signal.signal(sig, handler)


def _server(ui: UiApp) -> uvicorn.Server:
    config = uvicorn.Config(
        ui.asgi,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=5,
    )
    return _Server(config)


def prepare(frame: MemoryFrame, port: int = 0, token: str | None = None) -> RunningUi:
    """Bind the port and build the server (not started yet)."""
    token = token or new_token()
    sock = bind(port)
    server = _server(UiApp(frame, token))
    return RunningUi(sock.getsockname()[1], token, server, sock=sock)


def serve_forever(running: RunningUi) -> None:
    """Serve in this thread until SIGINT/SIGTERM (uvicorn's handlers)."""
    assert running.sock is not None
    running.server.run(sockets=[running.sock])


def start(frame: MemoryFrame, port: int = 0, token: str | None = None) -> RunningUi:
    """Serve on a background thread; returns once the server accepts connections."""
    running = prepare(frame, port, token)
    sock = running.sock
    assert sock is not None

    def run() -> None:
        asyncio.run(running.server.serve(sockets=[sock]))

    running.thread = threading.Thread(target=run, name="memframe-ui", daemon=True)
    running.thread.start()
    for _ in range(500):
        if running.server.started or not running.thread.is_alive():
            break
        threading.Event().wait(0.01)
    if not running.server.started:
        running.stop()
        raise RuntimeError("the memframe ui server did not start")
    return running
