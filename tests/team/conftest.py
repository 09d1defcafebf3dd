"""Team sync fixtures: the real team server (SQLite in tmp_path) on 127.0.0.1, a proxy in front
of it that counts requests and injects faults, and clients with tiny backoffs."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from memframe.scanner import default_scanner
from memframe.server.app import start_server
from memframe.server.sqlite import SQLiteStorage
from memframe.server.storage import hash_token
from memframe.team_sync import SyncConfig, TeamSyncClient

REPO = "acme/widgets"
TOKEN = "team-test-token-0123456789"


@dataclass
class TeamServer:
    running: Any  # the server start_server returns (its module moves with the server)
    storage: SQLiteStorage
    token: str = TOKEN
    repo: str = REPO

    @property
    def url(self) -> str:
        return self.running.url

    def entries(self, repo: str = REPO) -> dict[str, str]:
        snapshot = self.storage.get(repo)
        return {} if snapshot is None else dict(snapshot.entries)

    def checksum(self, repo: str = REPO) -> str | None:
        snapshot = self.storage.get(repo, with_entries=False)
        return None if snapshot is None else snapshot.checksum

    def put(self, entries: dict[str, str], repo: str = REPO) -> None:
        """Store entries directly (another client, say)."""
        self.storage.put(repo, entries, if_match=None, max_entries=1_000_000)

    def raw(self, method: str, body: Any = None, **params: str) -> httpx.Response:
        return httpx.request(
            method,
            f"{self.url}/api/claude_code/team_memory",
            params={"repo": self.repo, **params},
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
            verify=False,  # plain http on loopback; skips building a CA bundle (~40 ms)
        )


@pytest.fixture
def team_server(tmp_path: Path) -> Iterator[Callable[..., TeamServer]]:
    """``team_server(**ServerOptions)``: a real server with a token for ``acme/widgets``."""
    started: list[TeamServer] = []

    def start(**options: Any) -> TeamServer:
        storage = SQLiteStorage(tmp_path / f"server-{len(started)}" / "team.db")
        storage.add_token("tests", hash_token(TOKEN), (REPO,))
        server = TeamServer(start_server(storage, **options), storage)
        started.append(server)
        return server

    yield start
    for server in started:
        server.running.stop()
        server.storage.close()


@pytest.fixture
def server(team_server: Callable[..., TeamServer]) -> TeamServer:
    return team_server()


# -- a proxy that counts and injects faults ------------------------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int | None = None  # the status sent back (None: dropped)


@dataclass
class Fault:
    """What the proxy does with one request instead of forwarding it."""

    drop: bool = False
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # then forwards (unless drop/status)


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    proxy: FaultProxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hung up (timeouts) are expected here


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        proxy = self.server.proxy
        fault = proxy._record(seen)
        if fault is not None and fault.delay:
            time.sleep(fault.delay)
        if fault is not None and fault.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None and fault.status is not None:
            payload = b'{"error": {"message": "injected", "details": {"error_code": "injected"}}}'
            self._answer(seen, fault.status, fault.headers, payload)
            return
        upstream = urlsplit(proxy.upstream)
        conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
        try:
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")
            }
            conn.request(self.command, self.path, body=body or None, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            passed = {
                k: v
                for k, v in response.getheaders()
                if k.lower() not in ("content-length", "connection", "transfer-encoding")
            }
            self._answer(seen, response.status, passed, payload)
        finally:
            conn.close()

    def _answer(self, seen: Seen, status: int, headers: dict[str, str], payload: bytes) -> None:
        seen.answered = status
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = _serve


class FaultProxy:
    """Forwards to ``upstream``; ``faults`` (first in, first out) replace the next requests;
    ``always`` replaces every request once the queue is empty."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.seen: list[Seen] = []
        self.faults: deque[Fault] = deque()
        self.always: Fault | None = None
        self._lock = threading.Lock()
        self._server = _ProxyServer(("127.0.0.1", 0), _ProxyHandler)
        self._server.proxy = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def _record(self, seen: Seen) -> Fault | None:
        with self._lock:
            self.seen.append(seen)
            return self.faults.popleft() if self.faults else self.always

    def count(self, method: str | None = None) -> int:
        with self._lock:
            return sum(1 for s in self.seen if method is None or s.method == method)

    def puts(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == "PUT"]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def proxy(server: TeamServer) -> Iterator[FaultProxy]:
    fault_proxy = FaultProxy(server.url)
    yield fault_proxy
    fault_proxy.close()


# -- clients -------------------------------------------------------------------------------------


def make_client(
    memory_dir: Path,
    url: str,
    *,
    token: str = TOKEN,
    repo: str = REPO,
    timeout: float = 5.0,
    backoff_base: float = 0.01,
) -> TeamSyncClient:
    config = SyncConfig(
        server=url.rstrip("/"),
        repo=repo,
        token=token,
        timeout=timeout,
        backoff_base=backoff_base,
        max_retry_wait=1.0,
    )
    return TeamSyncClient(config, memory_dir, default_scanner())


def write(memory_dir: Path, key: str, text: str) -> Path:
    path = memory_dir / "team" / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def memory_dir(tmp_path: Path) -> Path:
    path = tmp_path / "memory"
    path.mkdir()
    return path
