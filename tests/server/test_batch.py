"""Batched writes: ``Storage.put_batch`` on every engine (one transaction, each request its own
outcome, repos read and written once, the token checked in the transaction), the server's
committer thread (every PUT in flight in one batch), PostgreSQL replicas committing batches at
once (no deadlock, nothing lost), and ``iter_entries``."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from memframe.server.app import API_PATH, Committer, start_server
from memframe.server.sqlite import SQLiteStorage
from memframe.server.storage import (
    PutRequest,
    PutResult,
    StaleChecksumError,
    TokenRefusedError,
    TooManyEntriesError,
    entry_checksum,
    hash_token,
    repo_checksum,
)

REPO = "acme/app"
TOKEN = "mft_batch"


def result(outcome: object) -> PutResult:
    assert isinstance(outcome, PutResult), outcome
    return outcome


def test_a_batch_applies_its_puts_in_order_each_with_its_own_outcome(storage):
    first = storage.put(REPO, {"a.md": "1"}, if_match=None, max_entries=3)
    outcomes = storage.put_batch(
        [
            PutRequest(REPO, {"b.md": "2"}, if_match=first.checksum, max_entries=3),
            PutRequest(REPO, {"c.md": "3"}, if_match=first.checksum, max_entries=3),  # stale now
            PutRequest(REPO, {"c.md": "3", "d.md": "4"}, max_entries=3),  # 4 > 3 entries
            PutRequest("acme/web", {"w.md": "w"}, if_match="*"),  # must exist: it does not
            PutRequest(REPO, {"a.md": "one"}, if_match="*", max_entries=3),
            PutRequest(REPO, {"a.md": "one"}, max_entries=3),  # unchanged: same version
            PutRequest("acme/new", {"n.md": "n"}),
        ]
    )
    second, stale, too_many, missing, third, same, new = outcomes
    assert result(second).version == 2
    assert isinstance(stale, StaleChecksumError) and stale.current == result(second).checksum
    assert isinstance(too_many, TooManyEntriesError) and too_many.received == 4
    assert isinstance(missing, StaleChecksumError) and missing.current is None
    assert result(third).version == 3
    assert result(same) == result(third)
    assert result(new).version == 1
    snapshot = storage.get(REPO)
    assert snapshot.entries == {"a.md": "one", "b.md": "2"}
    assert snapshot.version == 3 and snapshot.checksum == result(third).checksum
    assert snapshot.checksum == repo_checksum(
        {key: entry_checksum(text) for key, text in snapshot.entries.items()}
    )
    assert storage.get("acme/web") is None and storage.checksum("acme/web") is None
    assert storage.get("acme/new").entries == {"n.md": "n"}
    assert storage.put_batch([]) == []


def test_the_token_is_checked_in_the_transaction(storage):
    token = storage.add_token("writer", hash_token(TOKEN), (REPO,))
    storage.add_token("gone", hash_token("mft_gone"), ("*",))
    storage.revoke_token("gone")
    ok, foreign, unknown, revoked = storage.put_batch(
        [
            PutRequest(REPO, {"a.md": "1"}, token_hash=hash_token(TOKEN)),
            PutRequest("acme/web", {"a.md": "1"}, token_hash=hash_token(TOKEN)),
            PutRequest(REPO, {"b.md": "1"}, token_hash=hash_token("mft_nobody")),
            PutRequest(REPO, {"c.md": "1"}, token_hash=hash_token("mft_gone")),
        ]
    )
    assert result(ok).token == token
    assert isinstance(foreign, TokenRefusedError) and foreign.status == 403
    assert foreign.token == token
    assert isinstance(unknown, TokenRefusedError) and unknown.status == 401
    assert isinstance(revoked, TokenRefusedError) and revoked.status == 401
    assert storage.get(REPO).entries == {"a.md": "1"}
    assert storage.get("acme/web") is None


def test_a_checksum_of_every_state_in_a_batch(storage):
    """Each put of a batch answers the checksum of the repo as it left it."""
    rng = random.Random(16)
    expected: dict[str, str] = {}
    requests, states = [], []
    for n in range(40):
        entries = {f"k{rng.randrange(12)}.md": f"text {n}" for _ in range(rng.randint(1, 3))}
        requests.append(PutRequest(REPO, entries))
        expected.update({key: entry_checksum(text) for key, text in entries.items()})
        states.append(repo_checksum(expected))
    outcomes = storage.put_batch(requests)
    assert [result(outcome).checksum for outcome in outcomes] == states
    assert [result(outcome).version for outcome in outcomes] == list(range(1, 41))


def test_iter_entries_reads_every_entry_by_repo_then_key(storage):
    storage.put("b/two", {"z.md": "z", "a.md": "a"}, if_match=None, max_entries=10)
    storage.put("a/one", {"m.md": "m\x00nul"}, if_match=None, max_entries=10)
    batches = list(storage.iter_entries(batch=2))
    assert [len(rows) for rows in batches] == [2, 1]
    assert [row for rows in batches for row in rows] == [
        ("a/one", "m.md", "m\x00nul"),
        ("b/two", "a.md", "a"),
        ("b/two", "z.md", "z"),
    ]


def test_a_read_only_sqlite_storage_creates_and_writes_nothing(tmp_path):
    db = tmp_path / "server" / "team.db"
    with pytest.raises(FileNotFoundError, match="no such database file"):
        SQLiteStorage(db, read_only=True)
    assert not db.parent.exists()
    writable = SQLiteStorage(db)
    writable.put(REPO, {"a.md": "1"}, if_match=None, max_entries=10)
    writable.close()
    reader = SQLiteStorage(db, read_only=True)
    try:
        assert list(reader.iter_entries()) == [[(REPO, "a.md", "1")]]
        with pytest.raises(PermissionError):
            reader.put_batch([PutRequest(REPO, {"b.md": "2"})])
    finally:
        reader.close()
    assert sorted(p.name for p in db.parent.iterdir()) == ["team.db"]


def test_the_committer_writes_every_put_in_flight_in_one_batch(tmp_path):
    storage = SQLiteStorage(tmp_path / "team.db")
    storage.add_token("batch", hash_token(TOKEN), (REPO,))
    server = start_server(storage)
    committer = server.app.committer
    writers = 12
    pool = ThreadPoolExecutor(writers)
    try:
        with storage.write_lock():  # the committer waits for it, its queue filling meanwhile
            answers = [
                pool.submit(
                    httpx.put,
                    f"{server.url}{API_PATH}?repo={REPO}",
                    headers={"Authorization": f"Bearer {TOKEN}"},
                    json={"entries": {f"w{n}.md": f"writer {n}"}},
                    timeout=30,
                )
                for n in range(writers)
            ]
            assert committer.wait_queued(writers, timeout=30)
            batches = committer.batches
            assert not any(answer.done() for answer in answers)  # nothing answered before
        statuses = [answer.result().status_code for answer in answers]
    finally:
        pool.shutdown()
        server.stop()
    snapshot = storage.get(REPO)
    storage.close()
    assert statuses == [200] * writers
    assert committer.batches == batches + 1  # leaving the lock: the one batch of all twelve
    assert snapshot.entries == {f"w{n}.md": f"writer {n}" for n in range(writers)}
    assert snapshot.version == writers


def test_two_postgres_replicas_committing_batches_at_once_neither_deadlock_nor_lose(
    postgres_url,
):
    from memframe.server.postgres import PostgresStorage

    replicas = [PostgresStorage(postgres_url), PostgresStorage(postgres_url)]
    repos = [f"acme/r{n}" for n in range(6)]
    acknowledged: dict[tuple[str, str], str] = {}
    lock = threading.Lock()
    start = threading.Barrier(4)

    def writer(index: int) -> int:
        rng = random.Random(index)
        store = replicas[index % 2]
        start.wait()
        written = 0
        for round_ in range(30):
            chosen = rng.sample(repos, 4)  # a different order each time
            requests = [
                PutRequest(repo, {f"w{index}.md": f"writer {index} round {round_}"})
                for repo in chosen
            ]
            for request, outcome in zip(requests, store.put_batch(requests), strict=True):
                result(outcome)
                with lock:
                    acknowledged[(request.repo, f"w{index}.md")] = request.entries[f"w{index}.md"]
                written += 1
        return written

    try:
        with ThreadPoolExecutor(4) as pool:
            written = sum(pool.map(writer, range(4)))
        assert written == 4 * 30 * 4
        versions = 0
        for repo in repos:
            snapshot = replicas[0].get(repo)
            if snapshot is None:
                continue
            versions += snapshot.version
            for key, text in snapshot.entries.items():
                assert acknowledged[(repo, key)] == text
        assert versions == written
        assert len({key for key in acknowledged}) == sum(
            len(replicas[1].get(repo).entries) for repo in repos if replicas[1].get(repo)
        )
    finally:
        for replica in replicas:
            replica.close()


class SlowCommits(SQLiteStorage):
    """SQLite whose every batch takes ``delay`` seconds longer, as on a slow disk; it records
    when each batch started and what it held."""

    def __init__(self, path, delay: float) -> None:
        super().__init__(path)
        self.delay = delay
        self.started: list[tuple[float, list[str]]] = []

    def put_batch(self, requests):
        self.started.append((time.monotonic(), [key for r in requests for key in r.entries]))
        time.sleep(self.delay)
        return super().put_batch(requests)


def test_the_committer_stops_lingering_once_the_last_awaited_put_arrives(tmp_path):
    # a commit of 0.8 s bounds the wait for the connections it answered at 0.4 s (half of it);
    # the wait must end when the last of them sends its PUT, not at the bound
    storage = SlowCommits(tmp_path / "team.db", delay=0.8)
    committer = Committer(storage, linger=5.0)
    committer.start()

    def put(key: str) -> PutRequest:
        return PutRequest(REPO, {key: key})

    async def scenario() -> float:
        await committer.submit(put("a1.md"), source="A")  # A is now awaited
        second = committer.submit(put("c1.md"), source="C")  # not awaited: the linger starts
        await asyncio.sleep(0.05)
        sent = time.monotonic()
        third = committer.submit(put("a2.md"), source="A")  # the last awaited one
        await asyncio.gather(second, third)
        return sent

    try:
        sent = asyncio.run(scenario())
    finally:
        committer.stop()
        storage.close()
    (_, first), (began, keys) = storage.started
    assert first == ["a1.md"]
    assert keys == ["c1.md", "a2.md"]  # one batch: the linger gathered both
    assert began - sent < 0.1  # at once, not at the 0.4 s bound
