"""One connection pool per server process: bounded, shared by every request, every connection
closed on shutdown; the embedded server starts fast and drains on stop; SQLite's group commit
keeps each put's outcome its own."""

from __future__ import annotations

import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from memframe.server.app import API_PATH, start_server
from memframe.server.sqlite import SQLiteStorage
from memframe.server.storage import StaleChecksumError, hash_token
from tests.waiting import wait_until, wait_until_refused

REPO = "acme/app"
TOKEN = "mft_pool_token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def open_files_under(path: Path) -> int:
    """This process's open files that are ``path`` or its -wal / -shm / .lock companions."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)):
            count += 1
    return count


def hammer(url: str, connections: int, concurrent: int) -> None:
    """``connections`` fresh connections (one request each), ``concurrent`` at a time."""

    def one(n: int) -> int:
        with httpx.Client(base_url=url, headers=AUTH, timeout=10) as client:
            if n % 2:
                body = {"entries": {f"k{n % 7}.md": f"text {n}"}}
                return client.put(f"{API_PATH}?repo={REPO}", json=body).status_code
            return client.get(f"{API_PATH}?repo={REPO}").status_code

    with ThreadPoolExecutor(concurrent) as pool:
        assert set(pool.map(one, range(connections))) == {200}


def test_sqlite_connections_are_bounded_and_all_closed(tmp_path):
    db = tmp_path / "team.db"
    storage = SQLiteStorage(db, max_connections=4)
    storage.add_token("pool", hash_token(TOKEN), (REPO,))
    storage.put(REPO, {"seed.md": "x"}, if_match=None, max_entries=100)
    with start_server(storage) as server:
        hammer(server.url, connections=120, concurrent=16)
        assert storage.open_connections <= 4  # not one per connection, nor per thread
        # each SQLite connection holds the database, its WAL and its shared memory file
        assert open_files_under(db) <= 4 * 3 + 1
    storage.close()
    assert storage.open_connections == 0
    assert open_files_under(db) == 0


def test_postgres_connections_are_bounded_and_all_closed(postgres_url):
    import psycopg

    from memframe.server.postgres import PostgresStorage

    storage = PostgresStorage(postgres_url, max_connections=4)
    storage.add_token("pool", hash_token(TOKEN), (REPO,))
    storage.put(REPO, {"seed.md": "x"}, if_match=None, max_entries=100)

    def connected() -> int:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            row = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'memframe-server' "
                "AND datname = current_database()"
            ).fetchone()
        assert row is not None
        return int(row[0])

    try:
        with start_server(storage) as server:
            hammer(server.url, connections=80, concurrent=16)
            assert connected() <= 4
            assert storage.open_connections <= 4
    finally:
        storage.close()
    wait_until(lambda: connected() == 0, timeout=5, what="every connection closed")


def test_the_embedded_server_starts_and_stops_fast(tmp_path):
    storage = SQLiteStorage(tmp_path / "team.db")
    storage.add_token("pool", hash_token(TOKEN), (REPO,))
    try:
        for _ in range(3):
            started = time.perf_counter()
            server = start_server(storage)
            assert time.perf_counter() - started <= 0.5
            assert httpx.get(f"{server.url}/healthz", timeout=5).json() == {"status": "ok"}
            started = time.perf_counter()
            server.stop()
            assert time.perf_counter() - started <= 0.5
            with pytest.raises(ConnectionRefusedError):  # the port is closed
                socket.create_connection(server.address, timeout=1).close()
    finally:
        storage.close()


def test_stop_finishes_the_write_in_flight(tmp_path):
    storage = SQLiteStorage(tmp_path / "team.db")
    storage.add_token("pool", hash_token(TOKEN), (REPO,))
    server = start_server(storage)
    body = b'{"entries": {"slow.md": "' + b"y" * 50_000 + b'"}}'
    try:
        with socket.create_connection(server.address, timeout=10) as sock:
            head = (
                f"PUT {API_PATH}?repo={REPO} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}"
                "\r\nExpect: 100-continue"
                f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            sock.sendall(head.encode())
            # 100 Continue: the handler is reading the body, the request is in flight
            assert sock.recv(100).startswith(b"HTTP/1.1 100 "), "no 100 Continue"
            sock.sendall(body[:500])
            stopping = threading.Thread(target=server.stop)
            stopping.start()
            wait_until_refused(*server.address)  # shutting down: no new connections
            sock.sendall(body[500:])
            answer = sock.recv(4096)
            stopping.join(timeout=15)
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert not stopping.is_alive()
        snapshot = storage.get(REPO)
        assert snapshot is not None and set(snapshot.entries) == {"slow.md"}
    finally:
        storage.close()


def test_group_commit_keeps_each_outcome_its_own(tmp_path):
    storage = SQLiteStorage(tmp_path / "team.db")
    first = storage.put(REPO, {"a.md": "0"}, if_match=None, max_entries=1000)
    acknowledged: dict[str, str] = {}
    stale = 0
    lock = threading.Lock()

    def writer(n: int) -> None:
        nonlocal stale
        for j in range(25):
            key, text = f"w{n}-{j % 5}.md", f"writer {n} write {j}"
            try:
                # every fourth put names a checksum long gone: refused alone, the rest commit
                if_match = first.checksum if j % 4 == 3 else None
                storage.put(REPO, {key: text}, if_match=if_match, max_entries=1000)
            except StaleChecksumError:
                with lock:
                    stale += 1
                continue
            with lock:
                acknowledged[key] = text

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    snapshot = storage.get(REPO)
    storage.close()
    assert snapshot is not None
    assert stale == 16 * 6
    assert {k: v for k, v in snapshot.entries.items() if k != "a.md"} == acknowledged
    assert snapshot.version == 1 + len([1 for n in range(16) for j in range(25) if j % 4 != 3])
