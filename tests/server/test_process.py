"""``memframe serve`` as a real process: structured logs, graceful shutdown, and no acknowledged
write lost when the server is killed with SIGKILL in the middle of writes (every engine)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from memframe.server import open_storage
from memframe.server.app import API_PATH
from memframe.server.storage import entry_checksum, hash_token, repo_checksum
from tests.waiting import wait_until, wait_until_refused

REPO = "acme/app"
TOKEN = "mft_process_token"


def add_token(url: str) -> None:
    storage = open_storage(url)
    try:
        if storage.token(hash_token(TOKEN)) is None:
            storage.add_token("proc", hash_token(TOKEN), (REPO,))
    finally:
        storage.close()


class Served:
    def __init__(self, db: str, tmp_path: Path, *options: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFRAME_")}
        env["HOME"] = str(tmp_path)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memframe", "serve", "--db", db, "--port", "0", *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stderr is not None
        first = self.process.stderr.readline()
        assert "memframe team server on http://" in first, first
        self.url = first.split(" on ", 1)[1].split()[0]
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.process.send_signal(sig)
        return self.finish()

    def finish(self) -> int:
        """Wait for the process to exit and close its pipes; its exit code."""
        code = self.process.wait(timeout=30)
        self._reader.join(timeout=5)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        return code


@pytest.fixture
def served(storage_url, tmp_path):
    add_token(storage_url)
    running: list[Served] = []

    def start(*options: str) -> Served:
        server = Served(storage_url, tmp_path, *options)
        running.append(server)
        return server

    yield start
    for server in running:
        # a test that failed half-way may leave the process running, or exited with its pipes open
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGKILL)
        server.finish()


def client(server: Served) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
    )


def test_one_json_log_line_per_request(served):
    server = served()
    with client(server) as api:
        api.get(f"{API_PATH}?repo={REPO}")
        api.put(f"{API_PATH}?repo={REPO}", json={"entries": {"a.md": "x"}})
    assert server.stop() == 0
    records = [json.loads(line) for line in server.lines if line.startswith("{")]
    assert [(r["method"], r["status"]) for r in records] == [("GET", 404), ("PUT", 200)]
    assert all(r["repo"] == REPO and r["token"] == "proc" and r["ms"] >= 0 for r in records)
    assert TOKEN not in "".join(server.lines)
    assert "stopped" in server.lines[-1]


def test_sigterm_finishes_the_request_in_flight(served):
    server = served()
    host, port = server.url.removeprefix("http://").split(":")
    body = json.dumps({"entries": {"slow.md": "y" * 100_000}}).encode()
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(
            f"PUT {API_PATH}?repo={REPO} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Expect: 100-continue\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        # the server sends 100 Continue when the handler starts reading the body: it is now
        # inside the request
        assert sock.recv(100).startswith(b"HTTP/1.1 100 "), "no 100 Continue"
        sock.sendall(body[:1000])
        server.process.send_signal(signal.SIGTERM)
        wait_until_refused(host, int(port))  # shutting down: it no longer accepts connections
        sock.sendall(body[1000:])
        answer = sock.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 200"), answer
    assert server.finish() == 0
    restarted = served()
    with client(restarted) as api:
        stored = api.get(f"{API_PATH}?repo={REPO}").json()["content"]["entries"]
    assert stored == {"slow.md": "y" * 100_000}


def test_sigterm_cancels_a_body_still_arriving_at_the_deadline_without_an_answer(served):
    # the body's own timeout (30 s) is far away: the shutdown's deadline cancels the request,
    # which is neither answered 408 nor stored
    server = served("--graceful-timeout", "1", "--request-timeout", "30")
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(
            f"PUT {API_PATH}?repo={REPO} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Expect: 100-continue\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n".encode()
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 100 "), "no 100 Continue"  # reading the body
        sock.sendall(b'{"entries": {"never.md": "')
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        answer = sock.recv(4096)
        assert answer == b"", answer  # closed without a response
        assert server.finish() == 0
        assert time.monotonic() - started < 5
    assert not any('"status":408' in line for line in server.lines), server.lines
    restarted = served()
    with client(restarted) as api:
        assert api.get(f"{API_PATH}?repo={REPO}").status_code == 404  # nothing stored


def test_sigkill_during_writes_loses_no_acknowledged_write(served):
    server = served()
    acknowledged: dict[str, str] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(worker: int) -> None:
        with client(server) as api:
            n = 0
            while not stop.is_set():
                key, text = f"w{worker}/k{n % 40}.md", f"worker {worker} write {n}"
                try:
                    response = api.put(f"{API_PATH}?repo={REPO}", json={"entries": {key: text}})
                except httpx.HTTPError:
                    return  # the server died under us: this write was never acknowledged
                if response.status_code == 200:
                    with lock:
                        acknowledged[key] = text
                n += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()

    def under_way() -> bool:  # kill it once the writers are well under way
        with lock:
            return len(acknowledged) > 100

    wait_until(under_way, timeout=30, what="100 acknowledged writes")
    server.stop(signal.SIGKILL)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    assert len(acknowledged) > 20, "the writers did not get going"
    restarted = served()
    with client(restarted) as api:
        body = api.get(f"{API_PATH}?repo={REPO}").json()
    entries = body["content"]["entries"]
    for key, text in acknowledged.items():
        # a later, unacknowledged write of the same key may have landed: it is newer, never older
        stored = entries[key]
        assert int(stored.rsplit(" ", 1)[1]) >= int(text.rsplit(" ", 1)[1]), (key, stored, text)
    # the stored checksums are consistent with the texts and the repo checksum
    checksums = body["content"]["entryChecksums"]
    assert checksums == {key: entry_checksum(text) for key, text in entries.items()}
    assert body["checksum"] == repo_checksum(checksums)
    restarted.stop()
