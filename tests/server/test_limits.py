"""``memframe serve`` as a real process under hostile and operational load, on 127.0.0.1 with real
sockets: bogus-token floods, idle and slow connections, SIGTERM with keep-alive clients, the
connection cap, the listen backlog, workers, TLS and a reverse proxy's headers."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from memframe.server import open_storage
from memframe.server.app import API_PATH
from memframe.server.storage import hash_token
from tests.waiting import wait_until

REPO = "acme/app"
TOKEN = "mft_limits_token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (every thread's)."""
    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]


class Serve:
    """``memframe serve … --port 0`` with extra flags; stderr collected line by line."""

    def __init__(self, db: str, home: Path, *flags: str, nofile: int | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFRAME_")}
        env["HOME"] = str(home)

        def limits() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.process = subprocess.Popen(
            [sys.executable, "-m", "memframe", "serve", "--db", db, "--port", "0", *flags],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=limits,
        )
        assert self.process.stderr is not None
        first = self.process.stderr.readline()
        assert "memframe team server on http" in first, first
        self.url = first.split(" on ", 1)[1].split()[0]
        host, port = self.url.split("://", 1)[1].rsplit(":", 1)
        self.address = (host, int(port))
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def records(self) -> list[dict]:
        return [json.loads(line) for line in list(self.lines) if line.startswith("{")]

    def resources(self) -> tuple[int, int]:
        """Open files and threads of the server and its worker processes."""
        pids, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            todo += children(pid)
        fds = sum(len(os.listdir(f"/proc/{pid}/fd")) for pid in pids)
        threads = sum(
            int(Path(f"/proc/{pid}/status").read_text().split("Threads:")[1].split()[0])
            for pid in pids
        )
        return fds, threads

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=5)
        if self.process.stderr is not None:
            self.process.stderr.close()
        return code


@pytest.fixture
def serve(storage_url, tmp_path):
    storage = open_storage(storage_url)
    try:
        storage.add_token("limits", hash_token(TOKEN), (REPO,))
        storage.put(REPO, {"a.md": "alpha"}, if_match=None, max_entries=100)
    finally:
        storage.close()
    running: list[Serve] = []

    def start(*flags: str, **options) -> Serve:
        server = Serve(storage_url, tmp_path, *flags, **options)
        running.append(server)
        return server

    yield start
    for server in running:
        if server.process.poll() is None:
            # SIGKILL would not reach the workers (their stderr would keep the reader waiting)
            try:
                server.stop(signal.SIGTERM, timeout=15)
            except subprocess.TimeoutExpired:
                server.stop(signal.SIGKILL)


def get(server: Serve, **headers: str) -> httpx.Response:
    return httpx.get(f"{server.url}{API_PATH}?repo={REPO}", headers={**AUTH, **headers}, timeout=10)


def bogus_request() -> bytes:
    return (
        f"GET {API_PATH}?repo={REPO} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bogus\r\n\r\n"
    ).encode()


def settle(server: Serve, want: tuple[int, int], seconds: float = 3.0) -> tuple[int, int]:
    """The server's resources once they are back to ``want`` (or after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while True:
        seen = server.resources()
        if (seen[0] <= want[0] and seen[1] <= want[1]) or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def warm(server: Serve, concurrent: int = 40) -> tuple[int, int]:
    """Requests at once until the storage pool has grown as it will (PostgreSQL opens pool
    connections on demand, up to its bound); then the server's resources."""
    socks = [socket.create_connection(server.address, timeout=10) for _ in range(concurrent)]
    for sock in socks:
        sock.sendall(bogus_request())
    for sock in socks:
        assert b" 401 " in sock.recv(4096)
        sock.close()
    assert get(server).status_code == 200
    time.sleep(0.2)
    return server.resources()


def flat(seen: tuple[int, int], baseline: tuple[int, int], slack: int = 0) -> bool:
    """No more open files than at the start (one fewer: a client's connection closed since;
    ``slack`` more: storage pool connections opened under load, up to the pool's bound) and
    exactly as many threads."""
    return seen[0] <= baseline[0] + slack and seen[1] == baseline[1]


def test_a_thousand_bogus_token_connections_leave_fds_and_threads_flat(serve):
    # 256 open files: the old server (a SQLite connection per handler thread, never closed) ran
    # out of them after ~120 such connections and answered 500 until restarted
    server = serve(nofile=256)
    baseline = warm(server)
    for n in range(1_000):
        with socket.create_connection(server.address, timeout=10) as sock:
            sock.sendall(bogus_request())
            assert b" 401 " in sock.recv(4096), n
    assert flat(settle(server, baseline), baseline)
    assert get(server).status_code == 200
    assert server.stop() == 0


def test_the_connection_cap_answers_503_and_keeps_fds_bounded(serve):
    server = serve("--max-connections", "40", nofile=256)
    baseline = warm(server, 30)
    held = [socket.create_connection(server.address, timeout=10) for _ in range(150)]
    try:
        time.sleep(0.3)
        fds, threads = server.resources()
        assert fds <= baseline[0] + 40 + 2  # the cap, not one per connection
        assert threads == baseline[1]
        refused = 0
        for sock in held:
            sock.sendall(bogus_request())
        for sock in held:
            answer = sock.recv(4096)
            refused += b" 503 " in answer and b"too_many_connections" in answer
        assert refused >= 100
    finally:
        for sock in held:
            sock.close()
    # PostgreSQL's pool may have grown under the 40 requests at once (10 connections at most)
    assert flat(settle(server, baseline), baseline, slack=10)
    assert get(server).status_code == 200


def test_idle_connections_pin_no_thread_and_are_closed(serve):
    server = serve("--keep-alive-timeout", "0.5")
    assert get(server).status_code == 200
    baseline = server.resources()
    idle = [socket.create_connection(server.address, timeout=10) for _ in range(50)]
    try:
        time.sleep(0.2)
        assert server.resources()[1] == baseline[1]  # no thread per connection
        assert get(server).status_code == 200
        started = time.monotonic()
        for sock in idle:
            assert sock.recv(10) == b""  # closed by the server: idle for too long
        assert time.monotonic() - started < 5
    finally:
        for sock in idle:
            sock.close()
    assert flat(settle(server, baseline), baseline)


def test_slow_headers_and_a_slow_body_get_408(serve):
    server = serve("--request-timeout", "0.5")
    with socket.create_connection(server.address, timeout=10) as sock:
        sock.sendall(f"GET {API_PATH}?repo={REPO} HTTP/1.1\r\nHost: x\r\n".encode())
        started = time.monotonic()
        answer = sock.recv(4096)
        assert b" 408 " in answer and b"request_timeout" in answer
        assert time.monotonic() - started < 3
    with socket.create_connection(server.address, timeout=10) as sock:
        sock.sendall(
            f"PUT {API_PATH}?repo={REPO} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}"
            "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        answer = sock.recv(4096)
        assert b" 408 " in answer and b"request_timeout" in answer
    assert get(server).json()["content"]["entries"] == {"a.md": "alpha"}


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_with_idle_keep_alive_clients_exits_within_5_s(serve, workers):
    server = serve("--workers", str(workers))
    clients = [httpx.Client(base_url=server.url, headers=AUTH, timeout=10) for _ in range(3)]
    never_spoke = [socket.create_connection(server.address, timeout=10) for _ in range(2)]
    try:
        for client in clients:  # each now holds an idle keep-alive connection
            assert client.get(f"{API_PATH}?repo={REPO}").status_code == 200
        started = time.monotonic()
        assert server.stop(timeout=10) == 0
        assert time.monotonic() - started < 5
    finally:
        for client in clients:
            client.close()
        for sock in never_spoke:
            sock.close()
    assert "stopped" in server.lines[-1]


def test_workers_share_the_port_each_with_its_own_pool(serve):
    server = serve("--workers", "2")
    for _ in range(20):
        assert get(server).status_code == 200
    wait_until(lambda: len(worker_pids(server)) == 2, what="2 worker processes")
    put = httpx.put(
        f"{server.url}{API_PATH}?repo={REPO}", json={"entries": {"b.md": "beta"}}, headers=AUTH
    )
    assert put.status_code == 200
    assert get(server).json()["content"]["entries"] == {"a.md": "alpha", "b.md": "beta"}
    assert server.stop() == 0


def worker_pids(server: Serve) -> list[int]:
    """The supervisor's worker processes (not multiprocessing's resource tracker)."""
    workers = []
    for pid in children(server.process.pid):
        with contextlib.suppress(OSError):
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                workers.append(pid)
    return workers


def connections_per_worker(server: Serve) -> list[int]:
    """Established TCP connections on the server's port held by each worker process (sorted)."""
    port = f"{server.address[1]:04X}"
    established: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[1].rsplit(":", 1)[1] == port and fields[3] == "01":
                    established.add(fields[9])  # the socket's inode
    counts = []
    for pid in worker_pids(server):
        inodes = set()
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        counts.append(len(inodes & established))
    return sorted(counts)


class KeepAliveClients:
    """``n`` keep-alive clients, each on its own thread and connection, sending GETs until
    stopped; all connect at once. What the server answered is kept."""

    def __init__(self, server: Serve, n: int) -> None:
        self.server = server
        self.statuses: list[int] = []
        self.closes = 0  # responses that said Connection: close
        self.stopping = threading.Event()
        self._start = threading.Barrier(n)
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]
        for thread in self.threads:
            thread.start()

    def _run(self) -> None:
        with httpx.Client(base_url=self.server.url, headers=AUTH, timeout=10) as client:
            self._start.wait(timeout=10)
            while not self.stopping.is_set():
                response = client.get(f"{API_PATH}?repo={REPO}")
                self.statuses.append(response.status_code)
                self.closes += response.headers.get("connection") == "close"
                time.sleep(0.002)

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=15)


def test_keep_alive_connections_are_balanced_over_the_workers(serve):
    server = serve("--workers", "2")
    wait_until(lambda: len(worker_pids(server)) == 2, what="2 workers")
    clients = KeepAliveClients(server, 8)
    try:
        split = wait_until(
            lambda: (seen := connections_per_worker(server)) == [4, 4] and seen,
            timeout=20,
            what=lambda: f"8 connections split 4 : 4 (now {connections_per_worker(server)})",
        )
    finally:
        clients.stop()
    assert split == [4, 4]
    # balancing cost no request: every one was answered, with its full response
    assert clients.statuses and set(clients.statuses) == {200}
    assert server.stop() == 0


def test_one_worker_never_closes_a_connection_to_balance(serve):
    server = serve("--workers", "1")
    clients = KeepAliveClients(server, 8)
    try:
        wait_until(lambda: len(clients.statuses) >= 400, what="400 answers")
    finally:
        clients.stop()
    assert set(clients.statuses) == {200}
    assert clients.closes == 0
    assert server.stop() == 0


@pytest.mark.skipif(shutil.which("ss") is None, reason="ss (iproute2) is not installed")
def test_the_listen_backlog_is_not_5(serve):
    server = serve("--backlog", "1024")
    out = subprocess.run(
        ["ss", "-ltnH", f"sport = :{server.address[1]}"], capture_output=True, text=True
    ).stdout
    send_q = int(out.split()[2])  # for a listening socket: the backlog
    assert send_q >= min(1024, int(Path("/proc/sys/net/core/somaxconn").read_text()))


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_tls(serve, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    server = serve("--tls-cert", str(cert), "--tls-key", str(key))
    assert server.url.startswith("https://127.0.0.1:")
    response = httpx.get(
        f"{server.url}{API_PATH}?repo={REPO}",
        headers=AUTH,
        verify=ssl.create_default_context(cafile=str(cert)),
        timeout=10,
    )
    assert response.status_code == 200
    with pytest.raises(httpx.HTTPError):  # plain HTTP on the TLS port gets nowhere
        httpx.get(f"http://127.0.0.1:{server.address[1]}/healthz", timeout=5)


def test_proxy_headers_only_when_asked(serve):
    forwarded = {"X-Forwarded-For": "203.0.113.7"}
    direct = serve()
    assert get(direct, **forwarded).status_code == 200
    assert direct.stop() == 0
    assert [r["client"] for r in direct.records()] == ["127.0.0.1"]
    proxied = serve("--proxy-headers", "--forwarded-allow-ips", "127.0.0.1")
    assert get(proxied, **forwarded).status_code == 200
    assert proxied.stop() == 0
    assert [r["client"] for r in proxied.records()] == ["203.0.113.7"]
