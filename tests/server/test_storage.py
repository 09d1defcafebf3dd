"""The storage contract (memframe.server.storage), kept by SQLite and PostgreSQL alike."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from memframe.server.storage import (
    StaleChecksumError,
    Storage,
    TokenInfo,
    TooManyEntriesError,
    entry_checksum,
    hash_token,
    repo_checksum,
)

REPO = "acme/app"
MAX = 1_000


def put(storage: Storage, entries: dict[str, str], *, if_match: str | None = None, repo=REPO):
    return storage.put(repo, entries, if_match=if_match, max_entries=MAX)


# -- entries ----------------------------------------------------------------------------------


def test_get_of_an_unknown_repo_is_none(storage):
    assert storage.get(REPO) is None
    assert storage.get(REPO, with_entries=False) is None


def test_put_creates_the_repo_at_version_1(storage):
    before = time.time()
    result = put(storage, {"a.md": "alpha", "b/c.md": "gamma"})
    assert result.version == 1
    assert before - 1 <= result.last_modified <= time.time() + 1
    snapshot = storage.get(REPO)
    assert snapshot is not None
    assert snapshot.repo == REPO
    assert snapshot.version == 1
    assert snapshot.checksum == result.checksum
    assert snapshot.last_modified == result.last_modified
    assert snapshot.entries == {"a.md": "alpha", "b/c.md": "gamma"}
    assert snapshot.entry_checksums == {
        "a.md": entry_checksum("alpha"),
        "b/c.md": entry_checksum("gamma"),
    }


def test_an_empty_put_creates_an_empty_repo(storage):
    result = put(storage, {})
    assert result.version == 1
    assert result.checksum == repo_checksum({})
    snapshot = storage.get(REPO)
    assert snapshot is not None
    assert (snapshot.version, snapshot.entries, snapshot.entry_checksums) == (1, {}, {})
    assert put(storage, {}).version == 1  # and doing it again changes nothing


def test_the_checksum_covers_every_entry_checksum(storage):
    entries = {"z.md": "last", "a.md": "first", "m/n.md": "middle"}
    result = put(storage, entries)
    expected = repo_checksum({key: entry_checksum(text) for key, text in entries.items()})
    assert result.checksum == expected
    assert put(storage, {"a.md": "changed"}).checksum != expected


def test_entries_come_back_sorted_by_key(storage):
    put(storage, {"b.md": "2", "a.md": "1", "é.md": "4", "Z.md": "0", "c.md": "3"})
    snapshot = storage.get(REPO)
    assert snapshot is not None
    assert list(snapshot.entries) == ["Z.md", "a.md", "b.md", "c.md", "é.md"]  # code points
    assert list(snapshot.entry_checksums) == list(snapshot.entries)


def test_a_put_upserts_and_keeps_absent_keys(storage):
    put(storage, {"a.md": "alpha", "b.md": "beta"})
    result = put(storage, {"b.md": "BETA", "c.md": "gamma"})
    assert result.version == 2
    snapshot = storage.get(REPO)
    assert snapshot is not None
    assert snapshot.entries == {"a.md": "alpha", "b.md": "BETA", "c.md": "gamma"}
    assert snapshot.checksum == repo_checksum(snapshot.entry_checksums) == result.checksum


def test_an_unchanged_put_does_not_bump_the_version(storage):
    first = put(storage, {"a.md": "alpha", "b.md": "beta"})
    time.sleep(0.01)
    assert put(storage, {"a.md": "alpha", "b.md": "beta"}) == first
    assert put(storage, {"b.md": "beta"}) == first  # a subset, unchanged
    assert put(storage, {}, if_match=first.checksum) == first
    snapshot = storage.get(REPO)
    assert snapshot is not None
    assert (snapshot.version, snapshot.last_modified) == (1, first.last_modified)
    assert put(storage, {"b.md": "beta", "c.md": "new"}).version == 2


def test_repos_are_independent(storage):
    put(storage, {"a.md": "one"}, repo="acme/one")
    put(storage, {"a.md": "two"}, repo="acme/two")
    put(storage, {"b.md": "two"}, repo="acme/two")
    one, two = storage.get("acme/one"), storage.get("acme/two")
    assert one is not None and two is not None
    assert (one.version, one.entries) == (1, {"a.md": "one"})
    assert (two.version, two.entries) == (2, {"a.md": "two", "b.md": "two"})


# -- If-Match -----------------------------------------------------------------------------------


def test_if_match_with_the_current_checksum_writes(storage):
    first = put(storage, {"a.md": "alpha"})
    second = put(storage, {"a.md": "ALPHA"}, if_match=first.checksum)
    assert second.version == 2
    snapshot = storage.get(REPO)
    assert snapshot is not None
    assert snapshot.entries == {"a.md": "ALPHA"}


def test_if_match_with_a_stale_checksum_is_refused(storage):
    first = put(storage, {"a.md": "alpha"})
    second = put(storage, {"a.md": "beta"})
    with pytest.raises(StaleChecksumError) as caught:
        put(storage, {"a.md": "lost?", "b.md": "new"}, if_match=first.checksum)
    assert caught.value.current == second.checksum
    snapshot = storage.get(REPO)
    assert snapshot is not None
    assert (snapshot.version, snapshot.entries) == (2, {"a.md": "beta"})


def test_if_match_on_a_repo_that_does_not_exist_is_stale(storage):
    with pytest.raises(StaleChecksumError) as caught:
        put(storage, {"a.md": "alpha"}, if_match=repo_checksum({}))
    assert caught.value.current is None
    assert storage.get(REPO) is None  # nothing was created
    assert put(storage, {"a.md": "alpha"}).version == 1


# -- the entry limit ----------------------------------------------------------------------------


def test_max_entries_counts_the_union_of_keys(storage):
    put(storage, {"a.md": "1", "b.md": "2", "c.md": "3"})
    # 2 of the 3 keys exist already: 4 in all, within the limit
    assert storage.put(REPO, {"b.md": "2!", "d.md": "4"}, if_match=None, max_entries=4).version == 2
    with pytest.raises(TooManyEntriesError) as caught:
        storage.put(REPO, {"a.md": "changed", "e.md": "5"}, if_match=None, max_entries=4)
    assert (caught.value.max_entries, caught.value.received) == (4, 5)
    snapshot = storage.get(REPO)
    assert snapshot is not None  # nothing of the refused put was stored
    assert snapshot.version == 2
    assert snapshot.entries == {"a.md": "1", "b.md": "2!", "c.md": "3", "d.md": "4"}


def test_max_entries_on_a_new_repo_stores_nothing(storage):
    with pytest.raises(TooManyEntriesError) as caught:
        storage.put(REPO, {f"{i}.md": "x" for i in range(3)}, if_match=None, max_entries=2)
    assert (caught.value.max_entries, caught.value.received) == (2, 3)
    assert storage.get(REPO) is None


# -- views and contents -------------------------------------------------------------------------


def test_without_entries_only_checksums_come_back(storage):
    put(storage, {"a.md": "alpha", "b.md": "beta"})
    full = storage.get(REPO)
    hashes = storage.get(REPO, with_entries=False)
    assert full is not None and hashes is not None
    assert hashes.entries == {}
    assert hashes.entry_checksums == full.entry_checksums
    assert (hashes.checksum, hashes.version, hashes.last_modified) == (
        full.checksum,
        full.version,
        full.last_modified,
    )


def test_unicode_and_large_entries_round_trip(storage):
    entries = {
        "notes/日本語.md": "こんにちは 🌍 — naïve café\r\nzero-width: \u200b, combining: e\u0301",
        "emoji/🚀.md": "🚀" * 10,
        "nul.md": "before\x00after",  # valid JSON ("\u0000"): PostgreSQL TEXT could not hold it
        "big-ascii.md": "x" * 250_000,
        "big-utf8.md": "é" * 125_000,  # 250,000 bytes of UTF-8
        "empty.md": "",
    }
    assert len(entries["big-utf8.md"].encode()) == 250_000
    result = put(storage, entries)
    snapshot = storage.get(REPO)
    assert snapshot is not None
    assert snapshot.entries == entries
    assert snapshot.entry_checksums == {k: entry_checksum(v) for k, v in entries.items()}
    assert result.checksum == repo_checksum(snapshot.entry_checksums)


# -- tokens -------------------------------------------------------------------------------------


def test_tokens_add_look_up_and_list(storage):
    before = time.time()
    alice = storage.add_token("alice", hash_token("secret-a"), ("acme/app", "acme/web"))
    bob = storage.add_token("bob", hash_token("secret-b"), ("*",))
    assert isinstance(alice, TokenInfo)
    assert (alice.name, alice.repos, alice.revoked) == ("alice", ("acme/app", "acme/web"), False)
    assert before - 1 <= alice.created <= time.time() + 1
    assert bob.id != alice.id
    assert storage.token(hash_token("secret-a")) == alice
    assert storage.token(hash_token("secret-b")) == bob
    assert storage.token(hash_token("nope")) is None
    assert storage.tokens() == [alice, bob]


def test_a_token_name_or_hash_is_unique(storage):
    storage.add_token("alice", hash_token("a"), ("*",))
    with pytest.raises(ValueError, match="alice"):
        storage.add_token("alice", hash_token("other"), ("*",))
    with pytest.raises(ValueError, match="exists already"):
        storage.add_token("carol", hash_token("a"), ("*",))
    assert [t.name for t in storage.tokens()] == ["alice"]


def test_revoke_a_token_by_name_or_id(storage):
    alice = storage.add_token("alice", hash_token("a"), ("acme/app",))
    bob = storage.add_token("bob", hash_token("b"), ("*",))
    revoked = storage.revoke_token("alice")
    assert revoked.revoked
    assert (revoked.id, revoked.name, revoked.repos) == (alice.id, "alice", ("acme/app",))
    assert storage.token(hash_token("a")) == revoked  # still found, as revoked
    assert storage.revoke_token(str(bob.id)).revoked
    assert [t.revoked for t in storage.tokens()] == [True, True]
    assert storage.revoke_token("alice").revoked  # again: no error
    with pytest.raises(KeyError):
        storage.revoke_token("nobody")
    with pytest.raises(KeyError):
        storage.revoke_token("999999")
    with pytest.raises(KeyError):
        storage.revoke_token("99999999999999999999999")


def test_token_info_allows(storage):
    some = storage.add_token("some", hash_token("s"), ("acme/app",))
    every = storage.add_token("every", hash_token("e"), ("*",))
    assert some.allows("acme/app")
    assert not some.allows("acme/web")
    assert every.allows("acme/web")
    assert not storage.revoke_token("some").allows("acme/app")
    assert not storage.revoke_token("every").allows("acme/web")


# -- concurrency ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    acknowledged: dict[str, str] = field(default_factory=dict)
    versions: list[int] = field(default_factory=list)  # of the puts that changed something
    stale: int = 0


def hammer(storages: list[Storage], *, threads: int = 8, puts: int = 25) -> Outcome:
    """``threads`` writers, each doing ``puts`` read-modify-write puts of keys of its own with
    If-Match (retrying when stale), spread over ``storages`` (replicas of one database)."""
    outcome = Outcome()
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def writer(t: int) -> None:
        start.wait()
        for j in range(puts):
            key = f"t{t}/k{j}.md"
            for attempt in range(1, 10_000):
                store = storages[(t + j + attempt) % len(storages)]
                snapshot = store.get(REPO, with_entries=False)
                text = f"thread {t} put {j} attempt {attempt} read v{snapshot and snapshot.version}"
                try:
                    result = store.put(
                        REPO,
                        {key: text},
                        if_match=snapshot.checksum if snapshot else None,
                        max_entries=MAX,
                    )
                except StaleChecksumError:
                    with lock:
                        outcome.stale += 1
                    continue
                with lock:
                    outcome.acknowledged[key] = text
                    outcome.versions.append(result.version)
                break
            else:
                raise AssertionError(f"thread {t} never got put {j} through")
            if j % 5 == 0:  # the same content again, unconditionally: changes nothing
                again = store.put(REPO, {key: text}, if_match=None, max_entries=MAX)
                assert again.version >= result.version

    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(writer, t) for t in range(threads)]:
            future.result()
    return outcome


def check_nothing_lost(storage: Storage, outcome: Outcome, writes: int) -> None:
    snapshot = storage.get(REPO)
    assert snapshot is not None
    assert len(outcome.acknowledged) == writes
    assert snapshot.entries == outcome.acknowledged  # every acknowledged write, nothing else
    assert snapshot.version == writes  # one version per put that changed something
    assert sorted(outcome.versions) == list(range(1, writes + 1))  # each handed out once
    assert snapshot.checksum == repo_checksum(
        {key: entry_checksum(text) for key, text in outcome.acknowledged.items()}
    )


def test_concurrent_read_modify_write_puts_lose_nothing(storage):
    outcome = hammer([storage])
    check_nothing_lost(storage, outcome, 200)


def test_two_postgres_replicas_interleaving_puts_lose_nothing(postgres_url):
    from memframe.server.postgres import PostgresStorage

    replicas = [PostgresStorage(postgres_url), PostgresStorage(postgres_url)]
    try:
        outcome = hammer(replicas)  # type: ignore[arg-type]
        check_nothing_lost(replicas[1], outcome, 200)
        assert replicas[0].get(REPO) == replicas[1].get(REPO)
    finally:
        for replica in replicas:
            replica.close()


# -- PostgreSQL specifics -------------------------------------------------------------------------


def test_postgres_replicas_starting_together_create_the_tables_once(postgres_url):
    from memframe.server.postgres import PostgresStorage

    with ThreadPoolExecutor(6) as pool:
        replicas = list(pool.map(lambda _: PostgresStorage(postgres_url), range(6)))
    try:
        replicas[0].put(REPO, {"a.md": "alpha"}, if_match=None, max_entries=MAX)
        replicas[1].add_token("alice", hash_token("a"), ("*",))
    finally:
        for replica in replicas:
            replica.close()
    again = PostgresStorage(postgres_url)  # the tables exist: kept as they are
    try:
        snapshot = again.get(REPO)
        assert snapshot is not None
        assert snapshot.entries == {"a.md": "alpha"}
        assert [t.name for t in again.tokens()] == ["alice"]
    finally:
        again.close()


def test_postgres_storage_is_usable_after_close(postgres_url):
    from memframe.server.postgres import PostgresStorage

    storage = PostgresStorage(postgres_url)
    storage.put(REPO, {"a.md": "alpha"}, if_match=None, max_entries=MAX)
    storage.close()
    try:  # like SQLiteStorage: later calls open new connections
        assert storage.get(REPO) is not None
    finally:
        storage.close()


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_postgres_unreachable_server_names_host_and_port_not_the_password():
    pytest.importorskip("psycopg", reason="the server extra (psycopg) is not installed")
    from memframe.server import open_storage
    from memframe.server.postgres import PostgresUnavailableError

    port = _unused_port()
    with pytest.raises(PostgresUnavailableError) as caught:
        open_storage(f"postgresql://someone:hunter2secret@127.0.0.1:{port}/team")
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message
    assert "hunter2secret" not in message
    assert "team" in message


def test_postgres_bad_url_is_a_clear_error_without_the_password():
    pytest.importorskip("psycopg", reason="the server extra (psycopg) is not installed")
    from memframe.server.postgres import PostgresStorage

    with pytest.raises(ValueError, match="invalid PostgreSQL URL") as caught:
        PostgresStorage("postgresql://someone:hunter2 secret@127.0.0.1:5432/team?bogus=1")
    assert "hunter2" not in str(caught.value)
    with pytest.raises(ValueError, match="port is not a number") as port_error:
        PostgresStorage("postgresql://someone:hunter2secret@127.0.0.1:notaport/team")
    assert "hunter2secret" not in str(port_error.value)
