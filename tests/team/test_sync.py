"""Team memory sync against the real team server (SQLite, 127.0.0.1): pull, push, the secret
gate for every rule, conflicts, transient and permanent failures, hostile keys."""

from __future__ import annotations

import itertools
import json
import os
import stat
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

from memframe.scanner import default_scanner
from memframe.team_sync import MAX_BODY_BYTES, STATE_FILE, batches
from memframe.team_sync.sync_state import LocalEntry, checksum
from tests.native.vectors import positives
from tests.team.conftest import REPO, TOKEN, Fault, FaultProxy, make_client, write
from tests.waiting import wait_until

BIG = 250_001


def state_of(memory_dir: Path, repo: str | None = None) -> dict[str, Any]:
    """The stored sync state of ``repo`` (default: the last one synced)."""
    document = json.loads((memory_dir / STATE_FILE).read_text())
    if repo is None:
        return document["states"][document["current"]]
    (state,) = [s for s in document["states"].values() if s["repo"] == repo]
    return state


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- pull ----------------------------------------------------------------------------------------


def test_pull_writes_entries_privately_then_a_second_pull_is_a_304(server, proxy, memory_dir):
    server.put({"alpha.md": "# Alpha\n", "deep/er/beta.md": "# Beta\nünïcode ✓\n"})
    client = make_client(memory_dir, proxy.url)
    first = client.pull()
    assert first.ok, first.error
    assert first.status == "updated"
    assert sorted(first.written) == ["alpha.md", "deep/er/beta.md"]
    team = memory_dir / "team"
    assert (team / "deep/er/beta.md").read_text(encoding="utf-8") == "# Beta\nünïcode ✓\n"
    assert mode(team / "alpha.md") == 0o600
    assert mode(team / "deep") == mode(team / "deep/er") == 0o700
    assert mode(memory_dir / STATE_FILE) == 0o600
    index = (memory_dir / "MEMORY.md").read_text()  # pulled memories are indexed
    assert "team/alpha.md" in index and "beta.md" not in index  # (nested keys are not memories)
    state = state_of(memory_dir)
    assert state["last_known_checksum"] == server.checksum()
    assert state["server_checksums"]["alpha.md"] == checksum("# Alpha\n")

    second = client.pull()
    assert second.ok and second.status == "not-modified" and second.written == []
    last = proxy.seen[-1]
    assert last.headers["if-none-match"] == f'"{server.checksum()}"'
    assert last.answered == 304
    assert proxy.count() == 2


def test_unchanged_files_are_not_rewritten(server, memory_dir):
    server.put({"a.md": "A\n", "b.md": "B\n"})
    client = make_client(memory_dir, server.url)
    client.pull()
    a = memory_dir / "team" / "a.md"
    os.utime(a, (1_000_000, 1_000_000))
    server.put({"b.md": "B2\n"})
    result = client.pull()
    assert result.written == ["b.md"] and result.unchanged == ["a.md"]
    assert a.stat().st_mtime == 1_000_000


def test_server_wins_on_conflict_and_local_only_files_are_kept(server, memory_dir):
    server.put({"shared.md": "v0\n", "mine.md": "m0\n"})
    client = make_client(memory_dir, server.url)
    client.pull()
    write(memory_dir, "shared.md", "local edit\n")  # and the server changes it too: conflict
    write(memory_dir, "mine.md", "m1 local edit\n")  # the server did not touch it
    write(memory_dir, "local-only.md", "only here\n")
    server.put({"shared.md": "v1 from a teammate\n"})
    result = client.pull()
    team = memory_dir / "team"
    assert (team / "shared.md").read_text() == "v1 from a teammate\n"
    assert result.written == ["shared.md"]
    assert (team / "mine.md").read_text() == "m1 local edit\n"  # kept: pushed next
    assert result.kept == ["mine.md"]
    assert (team / "local-only.md").read_text() == "only here\n"
    pushed = client.push()
    assert pushed.ok and sorted(pushed.pushed) == ["local-only.md", "mine.md"]
    assert server.entries()["shared.md"] == "v1 from a teammate\n"
    # --force: the server wins everywhere
    write(memory_dir, "mine.md", "unpushed\n")
    forced = client.pull(force=True)
    assert forced.written == ["mine.md"]
    assert (team / "mine.md").read_text() == "m1 local edit\n"


def test_a_locally_deleted_entry_comes_back_and_deletions_do_not_propagate(server, memory_dir):
    server.put({"a.md": "A\n", "b.md": "B\n"})
    client = make_client(memory_dir, server.url)
    client.pull()
    (memory_dir / "team" / "a.md").unlink()
    assert client.push().pushed == []
    assert set(server.entries()) == {"a.md", "b.md"}
    assert client.pull(force=True).written == ["a.md"]


def test_pull_skips_entries_over_the_limit_and_reports_an_empty_server(team_server, memory_dir):
    server = team_server(max_entry_bytes=400_000)
    client = make_client(memory_dir, server.url)
    empty = client.pull()
    assert empty.ok and empty.status == "empty"
    server.put({"huge.md": "x" * BIG, "small.md": "s\n"})
    result = client.pull()
    assert result.ok and result.written == ["small.md"]
    assert "huge.md" in result.skipped
    assert not (memory_dir / "team" / "huge.md").exists()


# -- push ----------------------------------------------------------------------------------------


def test_push_sends_only_changed_keys(server, proxy, memory_dir):
    for name in ("a", "b", "c"):
        write(memory_dir, f"{name}.md", f"# {name}\n")
    client = make_client(memory_dir, proxy.url)
    first = client.push()
    assert first.ok and sorted(first.pushed) == ["a.md", "b.md", "c.md"]
    assert server.entries() == {"a.md": "# a\n", "b.md": "# b\n", "c.md": "# c\n"}
    assert state_of(memory_dir)["last_known_checksum"] == server.checksum()

    write(memory_dir, "b.md", "# b, edited\n")
    before = proxy.count()
    second = client.push()
    assert second.ok and second.pushed == ["b.md"]
    (put,) = [s for s in proxy.seen[before:] if s.method == "PUT"]
    assert json.loads(put.body) == {"entries": {"b.md": "# b, edited\n"}}
    assert put.headers["if-match"].strip('"')  # conditional
    assert server.entries()["b.md"] == "# b, edited\n"

    before = proxy.count()
    assert client.push().pushed == []
    assert proxy.count() == before  # nothing changed: no request at all


def test_push_batches_bodies_of_at_most_200000_bytes(server, proxy, memory_dir):
    texts = {f"note-{n:02}.md": (f"{n}" + 'é"\\\n' * 10_000) for n in range(12)}  # 50 KB each
    for key, text in texts.items():
        write(memory_dir, key, text)
    result = make_client(memory_dir, proxy.url).push()
    assert result.ok and sorted(result.pushed) == sorted(texts)
    puts = proxy.puts()
    assert len(puts) == result.batches >= 4
    assert all(len(p.body) <= MAX_BODY_BYTES for p in puts)
    assert server.entries() == texts


def test_batches_are_exact_and_a_lone_oversized_entry_travels_alone():
    entries = {
        f"k{n}.md": LocalEntry(Path("x"), "sha256:0", ('"é\\\u2028\n' * (n * 997)))
        for n in range(30)
    }
    split = batches(entries, limit=20_000)
    assert [k for batch in split for k in batch] == sorted(entries)
    sizes = [len(orjson.dumps({"entries": {k: e.text for k, e in b.items()}})) for b in split]
    assert all(size <= 20_000 or len(b) == 1 for size, b in zip(sizes, split, strict=True))
    merged = [
        len(orjson.dumps({"entries": {k: e.text for k, e in {**a, **b}.items()}}))
        for a, b in itertools.pairwise(split)
    ]
    assert all(size > 20_000 for size in merged)  # greedy: no two neighbours would fit together


def test_push_skips_entries_over_250000_bytes(server, memory_dir):
    write(memory_dir, "huge.md", "x" * BIG)
    write(memory_dir, "fine.md", "fine\n")
    result = make_client(memory_dir, server.url).push()
    assert result.ok and result.pushed == ["fine.md"]
    assert "250,000" in result.skipped["huge.md"]
    assert set(server.entries()) == {"fine.md"}


def test_push_learns_max_entries_from_a_413(team_server, memory_dir):
    server = team_server(max_entries=3)
    proxy = FaultProxy(server.url)
    try:
        for name in ("e", "d", "c", "b", "a"):
            write(memory_dir, f"{name}.md", f"{name}\n")
        client = make_client(memory_dir, proxy.url)
        result = client.push()
        assert result.ok, result.error
        assert sorted(result.pushed) == ["a.md", "b.md", "c.md"]
        assert set(result.skipped) == {"d.md", "e.md"}
        assert "limit of 3" in result.skipped["d.md"]
        assert [s.answered for s in proxy.puts()] == [413, 200]
        assert state_of(memory_dir)["server_max_entries"] == 3
        assert set(server.entries()) == {"a.md", "b.md", "c.md"}
        before = proxy.count()
        again = client.push()  # the limit is remembered: no request, no 413
        assert again.pushed == [] and proxy.count() == before
    finally:
        proxy.close()


# -- the secret gate -----------------------------------------------------------------------------


def _one_vector_per_rule() -> list[Any]:
    chosen: dict[str, Any] = {}
    for vector in positives():
        chosen.setdefault(vector.rule_id, vector)
    return [pytest.param(v, id=v.rule_id) for v in chosen.values()]


VECTORS = _one_vector_per_rule()


def test_there_is_a_vector_for_each_bundled_rule():
    assert sorted(v.id for v in VECTORS) == sorted(default_scanner().rules.ids())


@pytest.mark.parametrize("vector", VECTORS)
def test_an_entry_with_a_secret_is_never_sent(server, memory_dir, vector):
    text = "# Deploy notes\n\n" + vector.text
    write(memory_dir, "deploy.md", text)
    write(memory_dir, "clean.md", "# Clean\nNothing secret here.\n")
    result = make_client(memory_dir, server.url).push()
    assert result.pushed == ["clean.md"]
    (blocked,) = result.blocked
    assert blocked.key == "deploy.md" and vector.rule_id in blocked.rules
    assert blocked.lines and min(blocked.lines) >= 3
    assert not result.ok and result.error is None
    assert set(server.entries()) == {"clean.md"}
    assert vector.secret not in json.dumps(server.entries())
    state = state_of(memory_dir)
    assert vector.rule_id in state["blocked"]["deploy.md"]["rules"]
    assert vector.secret not in (memory_dir / STATE_FILE).read_text()

    # The server refuses it too, when a client skips the gate.
    raw = server.raw("PUT", {"entries": {"deploy.md": text}})
    assert raw.status_code == 422
    details = raw.json()["error"]["details"]
    assert details["error_code"] == "team_memory_secret_detected"
    assert vector.rule_id in details["findings"][0]["rules"]
    assert set(server.entries()) == {"clean.md"}


def test_a_client_without_the_gate_is_stopped_by_the_server(server, memory_dir, monkeypatch):
    (vector,) = [p.values[0] for p in VECTORS if p.id == "github-pat"]
    write(memory_dir, "deploy.md", vector.text)
    write(memory_dir, "clean.md", "clean\n")
    client = make_client(memory_dir, server.url)
    monkeypatch.setattr(client, "_gate", lambda key, entry: None)  # a client that skips the gate
    result = client.push()
    assert result.pushed == ["clean.md"]
    (blocked,) = result.blocked
    assert blocked.key == "deploy.md" and blocked.rules == ["github-pat"]
    assert set(server.entries()) == {"clean.md"}


def test_fixing_a_blocked_file_lets_it_through(server, memory_dir):
    (vector,) = [p.values[0] for p in VECTORS if p.id == "aws-access-token"]
    write(memory_dir, "deploy.md", vector.text)
    client = make_client(memory_dir, server.url)
    assert client.push().blocked
    status = client.status()
    assert [b.key for b in status.blocked] == ["deploy.md"]
    write(memory_dir, "deploy.md", vector.text.replace(vector.secret, "<see 1Password>"))
    result = client.push()
    assert result.ok and result.pushed == ["deploy.md"]
    assert state_of(memory_dir)["blocked"] == {}


# -- conflicts -----------------------------------------------------------------------------------


def test_a_412_refreshes_hashes_and_retries(server, proxy, memory_dir):
    server.put({"base.md": "base\n"})
    client = make_client(memory_dir, proxy.url)
    client.pull()
    server.put({"theirs.md": "a teammate's\n"})  # the checksum this client knows is stale now
    write(memory_dir, "mine.md", "mine\n")
    before = proxy.count()
    result = client.push()
    assert result.ok and result.pushed == ["mine.md"]
    steps = [(s.method, "view=hashes" in s.path, s.answered) for s in proxy.seen[before:]]
    assert steps == [("PUT", False, 412), ("GET", True, 200), ("PUT", False, 200)]
    assert set(server.entries()) == {"base.md", "theirs.md", "mine.md"}
    pulled = client.pull()  # the teammate's entry was never fetched: no 304 shortcut
    assert pulled.written == ["theirs.md"]


def test_a_stale_local_copy_never_overwrites_an_acknowledged_write(server, tmp_path):
    server.put({"x.md": "v0\n"})
    a, b = tmp_path / "a", tmp_path / "b"
    client_a, client_b = make_client(a, server.url), make_client(b, server.url)
    client_a.pull()
    client_b.pull()
    write(b, "x.md", "v1 by b\n")
    assert client_b.push().pushed == ["x.md"]  # acknowledged
    write(a, "y.md", "y by a\n")
    result = client_a.push()  # 412, refresh: x.md is newer on the server, a did not change it
    assert result.ok and result.pushed == ["y.md"] and result.behind == ["x.md"]
    assert server.entries() == {"x.md": "v1 by b\n", "y.md": "y by a\n"}
    # both changed it: not pushed over the other's write; a pull brings the server's version
    write(b, "x.md", "v2 by b\n")
    client_b.push()
    write(a, "x.md", "a's own edit\n")
    conflicted = client_a.push()
    assert conflicted.pushed == []
    assert "x.md" in conflicted.conflicts
    assert server.entries()["x.md"] == "v2 by b\n"
    status = client_a.status()  # a conflict is reported once, as a conflict
    assert status.conflicts == ["x.md"] and status.behind == []
    client_a.pull()
    assert (a / "team" / "x.md").read_text() == "v2 by b\n"


def _push_all_at_once(server, tmp_path, clients: int, keys: int) -> list[Any]:
    barrier = threading.Barrier(clients)
    results: list[Any] = [None] * clients

    def run(n: int) -> None:
        directory = tmp_path / f"client-{n}"
        for k in range(keys):
            write(directory, f"c{n}/k{k}.md", f"client {n} key {k}\n")
        # conflict retries wait a jittered 0-2x then 0-4x backoff_base: wide enough that eight
        # writers at once spread out within the two retries the spec allows
        client = make_client(directory, server.url, backoff_base=0.2)
        barrier.wait()
        results[n] = client.push()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_two_clients_pushing_at_once_both_succeed(server, tmp_path):
    results = _push_all_at_once(server, tmp_path, clients=2, keys=3)
    assert all(r.ok for r in results), [r.error for r in results]
    assert len(server.entries()) == 6


def test_eight_clients_pushing_at_once_lose_nothing(server, tmp_path):
    results = _push_all_at_once(server, tmp_path, clients=8, keys=3)
    assert all(r.ok for r in results), [r.error for r in results]
    entries = server.entries()
    assert entries == {f"c{n}/k{k}.md": f"client {n} key {k}\n" for n in range(8) for k in range(3)}


# -- transient and permanent failures ------------------------------------------------------------


@pytest.mark.parametrize(
    "faults",
    [
        pytest.param([Fault(drop=True), Fault(drop=True)], id="dropped-connections"),
        pytest.param([Fault(status=503)] * 3, id="three-503s"),
        pytest.param([Fault(status=429, headers={"Retry-After": "0"})] * 2, id="429-retry-after"),
        pytest.param([Fault(status=502), Fault(drop=True), Fault(status=500)], id="mixed"),
    ],
)
def test_transient_failures_are_retried(server, proxy, memory_dir, faults):
    write(memory_dir, "a.md", "a\n")
    proxy.faults.extend(faults)
    result = make_client(memory_dir, proxy.url).push()
    assert result.ok, result.error
    assert server.entries() == {"a.md": "a\n"}
    # the hashes GET (404: an empty repo), the PUT, the hashes GET after that unconditional PUT
    assert result.requests == len(faults) + 3


def test_a_slow_answer_times_out_and_is_retried(server, proxy, memory_dir):
    write(memory_dir, "a.md", "a\n")
    proxy.faults.append(Fault(delay=0.6))
    result = make_client(memory_dir, proxy.url, timeout=0.2).push()
    assert result.ok, result.error
    assert server.entries() == {"a.md": "a\n"}


def test_a_budget_bounds_a_push_to_a_server_that_hangs(server, proxy, memory_dir):
    write(memory_dir, "a.md", "a\n")
    proxy.always = Fault(delay=3.0)
    started = time.monotonic()
    result = make_client(memory_dir, proxy.url, timeout=5.0).push(budget=0.5)
    assert time.monotonic() - started < 2.0
    assert result.failure == "transient" and "time allowed" in result.error


def test_retry_after_is_honoured(server, proxy, memory_dir, monkeypatch):
    write(memory_dir, "a.md", "a\n")
    proxy.faults.append(Fault(status=429, headers={"Retry-After": "7"}))
    slept: list[float] = []
    client = make_client(memory_dir, proxy.url)
    client._sleep = slept.append
    assert client.push().ok
    assert slept == [1.0]  # 7 s asked, capped at max_retry_wait (1 s in these tests)


def test_a_server_that_keeps_failing_gives_a_clear_error(server, proxy, memory_dir):
    write(memory_dir, "a.md", "a\n")
    proxy.always = Fault(status=503)
    client = make_client(memory_dir, proxy.url)
    result = client.push()
    assert not result.ok and result.failure == "transient"
    assert "after 3 retries" in result.error and "HTTP 503" in result.error
    assert result.requests == 4
    state = state_of(memory_dir)
    assert state["last_error"]["kind"] == "transient"
    assert state["permanent_failure"] is None
    assert TOKEN not in result.error and TOKEN not in (memory_dir / STATE_FILE).read_text()
    before = proxy.count()
    assert client.push().requests == 4  # transient: the next push tries again
    assert proxy.count() == before + 4
    proxy.always = None
    assert client.push().ok


def test_a_permanent_failure_stops_pushes_until_something_changes(server, proxy, memory_dir):
    write(memory_dir, "a.md", "a\n")
    client = make_client(memory_dir, proxy.url)
    assert client.push().ok
    server.storage.revoke_token("tests")
    write(memory_dir, "a.md", "a2\n")
    failed = client.push()
    assert failed.failure == "permanent" and "401" in failed.error
    assert failed.requests == 1  # no retries of a 401
    assert state_of(memory_dir)["permanent_failure"]["status"] == 401

    before = proxy.count()
    skipped = client.push()
    assert skipped.skipped_network and not skipped.ok and proxy.count() == before
    write(memory_dir, "b.md", "b\n")  # a local change: try once more
    assert client.push().failure == "permanent" and proxy.count() == before + 1
    assert client.push().skipped_network and proxy.count() == before + 1
    assert client.push(force=True).failure == "permanent" and proxy.count() == before + 2


def test_a_new_token_counts_as_a_change(server, proxy, memory_dir):
    write(memory_dir, "a.md", "a\n")
    wrong = make_client(memory_dir, proxy.url, token="wrong-token")
    assert wrong.push().failure == "permanent"
    assert wrong.push().skipped_network
    assert make_client(memory_dir, proxy.url).push().ok


# -- hostile keys from a server ------------------------------------------------------------------

HOSTILE = [
    "../evil.md",
    "/etc/x.md",
    "a\\b.md",
    "a/%2e%2e/x.md",
    "a\u2215b.md",
    "..\u2215x.md",
    "ok/\x00.md",
    "link/x.md",
    "./dot.md",
    "a/../../b.md",
    "C:/win.md",
    ".hidden.md",
    "ﬁle.md",  # not NFKC
    "evil\n/x.md",  # a line break ($ used to match before it)
    "evil.md\n",
    "a\x85b.md",  # C1 (NEL)
    "a\x7fb.md",  # DEL
    "a\u200bb.md",  # zero-width space (Cf)
    "a\u202eb.md",  # right-to-left override (Cf)
    "a\u2028b.md",  # line separator (Zl)
]
SAFE = {"safe.md": "safe\n", "nested/safe.md": "nested\n"}


class _Crafted(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


def test_hostile_keys_never_write_outside_the_team_dir(tmp_path, memory_dir):
    outside = tmp_path / "outside"
    outside.mkdir()
    team = memory_dir / "team"
    team.mkdir()
    (team / "link").symlink_to(outside, target_is_directory=True)
    entries = {key: f"pwned by {key!r}\n" for key in HOSTILE} | SAFE
    handler = type("Handler", (_Crafted,), {})
    handler.body = json.dumps(
        {"checksum": "sha256:crafted", "content": {"entries": entries, "entryChecksums": {}}}
    ).encode()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    host, port = httpd.server_address[:2]
    client = make_client(memory_dir, f"http://{host!s}:{port}")  # (its scanner may cache)
    before = {p for p in tmp_path.rglob("*") if team not in p.parents}
    try:
        result = client.pull()
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
    assert sorted(result.written) == sorted(SAFE)
    assert set(result.rejected) == set(HOSTILE)
    assert not result.ok  # refused keys are reported
    after = {p for p in tmp_path.rglob("*") if team not in p.parents}
    # the state, its lock, and MEMORY.md (with its lock) indexing the pulled team/safe.md
    assert after - before == {
        memory_dir / name for name in (STATE_FILE, ".team-sync.lock", "MEMORY.md", ".memframe.lock")
    }
    assert "team/safe.md" in (memory_dir / "MEMORY.md").read_text()
    assert list(outside.iterdir()) == []
    written = {p.relative_to(team).as_posix() for p in team.rglob("*") if p.is_file()}
    assert written == set(SAFE)


def test_a_malformed_server_answer_is_a_clear_error(tmp_path, memory_dir):
    handler = type("Handler", (_Crafted,), {"body": b'{"checksum": 5, "content": []}'})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        host, port = httpd.server_address[:2]
        result = make_client(memory_dir, f"http://{host!s}:{port}").pull()
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
    assert not result.ok and "malformed" in result.error
    assert not (memory_dir / "team").exists()


# -- status --------------------------------------------------------------------------------------


def test_status_needs_no_network_unless_asked(server, proxy, memory_dir):
    (vector,) = [p.values[0] for p in VECTORS if p.id == "slack-webhook-url"]
    server.put({"theirs.md": "theirs\n"})
    client = make_client(memory_dir, proxy.url)
    client.pull()
    write(memory_dir, "new.md", "new\n")
    write(memory_dir, "hook.md", vector.text)
    before = proxy.count()
    status = client.status()
    assert proxy.count() == before
    assert status.pending == ["new.md"] and status.in_sync == 1
    assert [(b.key, b.rules) for b in status.blocked] == [("hook.md", ["slack-webhook-url"])]
    assert status.last_pull is not None and status.last_push is None
    server.put({"theirs.md": "changed\n"})
    remote = client.status(remote=True)
    assert proxy.count() == before + 1
    assert remote.remote is not None and remote.remote["changed_on_server"] == ["theirs.md"]
    assert remote.remote["up_to_date"] is False


def test_the_state_file_is_private_and_survives_corruption(server, memory_dir):
    write(memory_dir, "a.md", "a\n")
    client = make_client(memory_dir, server.url)
    assert client.push().ok
    (memory_dir / STATE_FILE).write_text("{not json")
    write(memory_dir, "b.md", "b\n")
    result = client.push()  # starts afresh: learns the server's view, pushes only b
    assert result.ok and result.pushed == ["b.md"]
    assert mode(memory_dir / STATE_FILE) == 0o600
    assert state_of(memory_dir)["repo"] == REPO
    # the unreadable file is kept aside under the one naming scheme (memframe.state.keep_aside)
    [aside] = memory_dir.glob(f"{STATE_FILE}.corrupt-*")
    assert aside.read_text() == "{not json"


def test_the_state_of_another_repo_is_not_reused(server, memory_dir):
    write(memory_dir, "a.md", "a\n")
    assert make_client(memory_dir, server.url).push().ok
    other = make_client(memory_dir, server.url, repo="acme/other")
    before = state_of(memory_dir, REPO)
    result = other.push()
    assert result.failure == "permanent" and "403" in result.error  # not allowed for that repo
    assert state_of(memory_dir)["repo"] == "acme/other"
    # syncing another repo never makes this one forget what it knew (its checksums protect
    # local edits from a server-wins pull)
    assert state_of(memory_dir, REPO) == before
    write(memory_dir, "a.md", "edited here\n")
    back = make_client(memory_dir, server.url)
    assert back.pull().ok
    assert (memory_dir / "team" / "a.md").read_text() == "edited here\n"
    assert back.push().pushed == ["a.md"]


def test_pushes_from_threads_of_one_memory_dir_are_serialised(server, memory_dir):
    for n in range(5):
        write(memory_dir, f"n{n}.md", f"{n}\n")
    client = make_client(memory_dir, server.url)
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(client.push())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.ok for r in results)
    assert sum(len(r.pushed) for r in results) == 5  # each key sent once
    assert len(server.entries()) == 5


def test_scanner_used_is_the_one_given(server, memory_dir):
    client = make_client(memory_dir, server.url)
    assert client.scanner is default_scanner()


def test_time_is_recorded(server, memory_dir):
    write(memory_dir, "a.md", "a\n")
    started = time.time()
    make_client(memory_dir, server.url).push()
    assert state_of(memory_dir)["last_push"] >= started


# -- settings ------------------------------------------------------------------------------------


def test_settings_are_checked_with_clear_errors():
    from memframe.config import ConfigError
    from memframe.team_sync import SyncConfigError, TeamSyncSettings

    for raw, message in [
        ([], "must be an object"),
        ({"sever": "x"}, "unknown setting 'sever'"),
        ({"server": 5}, "'server' must be a string"),
        ({"enabled": "yes"}, "'enabled' must be true or false"),
        ({"debounce_seconds": -1}, "'debounce_seconds' must be a number >= 0"),
        ({"timeout": 0}, "'timeout' must be a number >= 0.001"),
        ({"backoff_base": True}, "'backoff_base' must be a number"),
    ]:
        with pytest.raises(SyncConfigError, match=message) as caught:
            TeamSyncSettings.from_settings(raw, env={})
        assert isinstance(caught.value, ConfigError)
    settings = TeamSyncSettings.from_settings(
        {"server": "https://a.example", "token": "from-file", "debounce_seconds": 1},
        env={"MEMFRAME_TEAM_TOKEN": "from-env", "MEMFRAME_TEAM_SERVER": ""},
    )
    assert settings.server == "https://a.example" and settings.token == "from-env"
    assert settings.debounce_seconds == 1.0 and settings.enabled
    assert "from-env" not in repr(settings)


def test_missing_settings_are_named(tmp_path):
    from memframe.team_sync import SyncConfigError, TeamSyncSettings

    empty = TeamSyncSettings.from_settings(None, env={})
    assert not empty.configured
    with pytest.raises(SyncConfigError) as caught:
        empty.resolve(tmp_path)  # not a git checkout: the repo cannot be derived either
    message = str(caught.value)
    for part in ("the server", "MEMFRAME_TEAM_SERVER", "the repo", "the token", "--token"):
        assert part in message
    partial = TeamSyncSettings.from_settings({"server": "http://127.0.0.1:1", "repo": REPO}, env={})
    with pytest.raises(SyncConfigError, match="missing the token") as caught:
        partial.resolve(tmp_path)
    assert "server" not in str(caught.value).split("missing", 1)[1]
    config = partial.resolve(tmp_path, token="t0k")
    assert config.repo == REPO and "t0k" not in repr(config)
    for bad_server, message in [
        ("ftp://x.example", "http:// or https://"),
        ("https://user:pw@x.example", "credentials"),
        ("https://x.example/?a=1", "query"),
        ("https://x.example:99999", "malformed"),
    ]:
        with pytest.raises(SyncConfigError, match=message):
            partial.resolve(tmp_path, server=bad_server, token="t")
    with pytest.raises(SyncConfigError, match="owner/name"):
        partial.resolve(tmp_path, repo="no-slash", token="t")
    assert partial.resolve(tmp_path, server="https://x.example/base/", token="t").server == (
        "https://x.example/base"
    )


@pytest.mark.parametrize(
    ("url", "repo"),
    [
        ("git@github.com:acme/widgets.git", "acme/widgets"),
        ("https://github.com/acme/widgets", "acme/widgets"),
        ("https://github.com/acme/widgets.git/", "acme/widgets"),
        ("ssh://git@gitlab.example:2222/group/sub/tool.git", "sub/tool"),
        ("file:///srv/git/acme/widgets.git", "acme/widgets"),
        ("widgets", None),
        ("", None),
        ("https://github.com/acme/bad name", None),
    ],
)
def test_repo_from_remote_url(url, repo):
    from memframe.team_sync import repo_from_remote_url

    assert repo_from_remote_url(url) == repo


def test_the_repo_defaults_to_the_git_remote(tmp_path):
    import shutil
    import subprocess

    from memframe.team_sync import TeamSyncSettings

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    project = tmp_path / "checkout"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(
        ["git", "-C", str(project), "remote", "add", "origin", "git@github.com:acme/gadgets.git"],
        check=True,
    )
    settings = TeamSyncSettings.from_settings(
        {"server": "http://127.0.0.1:1", "token": "t"}, env={}
    )
    config = settings.resolve(project)
    assert (config.repo, config.repo_source) == ("acme/gadgets", "git remote origin")
    assert settings.resolve(project, repo="acme/override").repo == "acme/override"


# -- the layer -----------------------------------------------------------------------------------

LAYERS = ["memframe.layers.memdir:MemdirLayer", "memframe.layers.team_sync:TeamSyncLayer"]


def _settings(tmp_path: Path, **team_sync: Any) -> None:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"team_sync": team_sync}))


def test_the_layer_is_built_in():
    from memframe.layers import BUILTIN_LAYERS

    assert BUILTIN_LAYERS[-1] == "memframe.layers.team_sync:TeamSyncLayer"


def test_the_layer_pulls_pushes_when_team_files_change_and_flushes(server, proxy, tmp_path):
    from memframe.memdir import locate
    from memframe.messages import ToolUseBlock
    from memframe.testing import open_test_frame

    server.put({"from-team.md": "# From the team\n"})
    _settings(
        tmp_path,
        server=proxy.url,
        repo=REPO,
        token=TOKEN,
        debounce_seconds=0.05,
        backoff_base=0.01,
    )
    frame = open_test_frame(tmp_path, builtin_layers=LAYERS)
    try:
        memory = locate(frame).path
        team = memory / "team"
        session = frame.session("s1")
        session.flush()
        assert (team / "from-team.md").read_text() == "# From the team\n"  # pulled at start
        assert proxy.count("PUT") == 0

        # Write tool calls into team/: one debounced push for the burst
        for n in range(3):
            path = write(memory, f"burst-{n}.md", f"burst {n}\n")
            session.on_tool_use(ToolUseBlock(f"t{n}", "Write", {"file_path": str(path)}), None)
        outside = tmp_path / "project" / "notes.md"
        outside.write_text("not team memory\n")
        session.on_tool_use(ToolUseBlock("t9", "Write", {"file_path": str(outside)}), None)
        wait_until(
            lambda: {"burst-0.md", "burst-1.md", "burst-2.md"} <= set(server.entries()),
            what="the burst pushed",
        )
        session.flush()
        assert proxy.count("PUT") < 3  # coalesced

        # a change made some other way is noticed at the end of the turn
        write(memory, "by-shell.md", "echo'd in\n")
        session.on_message({"role": "assistant", "content": "done"})
        session.on_stop()
        wait_until(lambda: "by-shell.md" in server.entries(), what="by-shell.md pushed")

        # the session end pushes what is left, synchronously
        write(memory, "last-minute.md", "just before the end\n")
        session.close()
        assert server.entries()["last-minute.md"] == "just before the end\n"
        counts = session.state.section("team_sync")["counts"]
        assert counts["pull"] == 1 and counts["push"] >= 3
    finally:
        frame.close()
    assert "outside" not in json.dumps(server.entries())


def test_a_waiting_push_runs_when_the_frame_closes(server, tmp_path):
    from memframe.memdir import locate
    from memframe.messages import ToolUseBlock
    from memframe.testing import open_test_frame

    _settings(tmp_path, server=server.url, repo=REPO, token=TOKEN, debounce_seconds=30)
    frame = open_test_frame(tmp_path, builtin_layers=LAYERS)
    memory = locate(frame).path
    session = frame.session("hook-event")
    session.flush()
    path = write(memory, "quick.md", "written by the event\n")
    session.on_tool_use(ToolUseBlock("t1", "Write", {"file_path": str(path)}), None)
    frame.manager.call("on_frame_close", frame=frame)  # as a short-lived process would, early
    assert server.entries() == {"quick.md": "written by the event\n"}
    frame.close()


def test_the_layer_keeps_secrets_back(server, tmp_path, caplog):
    from memframe.memdir import locate
    from memframe.testing import open_test_frame

    (vector,) = [p.values[0] for p in VECTORS if p.id == "stripe-access-token"]
    _settings(tmp_path, server=server.url, repo=REPO, token=TOKEN, debounce_seconds=0.05)
    with open_test_frame(tmp_path, builtin_layers=LAYERS) as frame:
        memory = locate(frame).path
        session = frame.session("s1")
        write(memory, "billing.md", vector.text)
        write(memory, "ok.md", "fine\n")
        session.close()
        last = session.state.section("team_sync")["last_push"]
    assert last["blocked"] == {"billing.md": ["stripe-access-token"]}
    assert set(server.entries()) == {"ok.md"}
    assert "billing.md" in caplog.text and vector.secret not in caplog.text


def test_an_unconfigured_layer_does_nothing(tmp_path):
    from memframe.memdir import locate
    from memframe.messages import ToolUseBlock
    from memframe.testing import open_test_frame

    with open_test_frame(tmp_path, builtin_layers=LAYERS) as frame:
        memory = locate(frame).path
        session = frame.session("s1")
        path = write(memory, "a.md", "a\n")
        session.on_tool_use(ToolUseBlock("t1", "Write", {"file_path": str(path)}), None)
        session.on_message({"role": "assistant", "content": "done"})
        session.on_stop()
        session.close()
        assert session.state.section("team_sync") == {}
    assert not (memory / STATE_FILE).exists()


def test_an_incomplete_configuration_is_reported_once_and_ignored(tmp_path, caplog):
    from memframe.testing import open_test_frame

    _settings(tmp_path, server="http://127.0.0.1:9", repo=REPO)  # no token
    with open_test_frame(tmp_path, builtin_layers=LAYERS) as frame:
        frame.session("s1").close()
        frame.session("s2").close()
    assert caplog.text.count("team sync is off") == 1
    assert "missing the token" in caplog.text


def test_disabled_sync_does_nothing(server, tmp_path):
    from memframe.testing import open_test_frame

    _settings(tmp_path, server=server.url, repo=REPO, token=TOKEN, enabled=False)
    server.put({"a.md": "a\n"})
    with open_test_frame(tmp_path, builtin_layers=LAYERS) as frame:
        frame.session("s1").close()
    assert not list(tmp_path.rglob("a.md"))


# -- the command line ----------------------------------------------------------------------------


def _cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    from tests.integration.cli_runner import run_memframe

    return run_memframe(
        "sync",
        *args,
        "--project",
        str(tmp_path / "project"),
        "--home",
        str(tmp_path / "home"),
        extra_env={"MEMFRAME_CONFIG_DIR": str(tmp_path / "config"), **(env or {})},
    )


def _memory_dir(tmp_path: Path) -> Path:
    from memframe.memdir import locate
    from memframe.testing import open_test_frame

    with open_test_frame(tmp_path) as frame:
        return locate(frame).path


def test_cli_push_pull_status(server, tmp_path):
    (vector,) = [p.values[0] for p in VECTORS if p.id == "aws-access-token"]
    memory = _memory_dir(tmp_path)
    write(memory, "deploy.md", f"# Deploy\n\nThe CI key id is {vector.secret}.\n")
    write(memory, "style.md", "# Style\nTabs.\n")
    args = ["--server", server.url, "--repo", REPO, "--token", TOKEN]

    pushed = _cli(tmp_path, "push", *args)
    assert pushed.returncode == 1, pushed.stderr
    assert "team/deploy.md: blocked, aws-access-token (line 3)" in pushed.stderr
    assert "team/style.md: sent" in pushed.stdout
    assert set(server.entries()) == {"style.md"}
    assert vector.secret not in pushed.stdout + pushed.stderr

    server.put({"theirs.md": "from a teammate\n"})
    pulled = _cli(tmp_path, "pull", *args)
    assert pulled.returncode == 0, pulled.stderr
    assert "team/theirs.md: written" in pulled.stdout
    assert (memory / "team" / "theirs.md").read_text() == "from a teammate\n"

    status = _cli(tmp_path, "status", "--json", *args[:4], env={"MEMFRAME_TEAM_TOKEN": TOKEN})
    assert status.returncode == 1  # a file is held back
    data = json.loads(status.stdout)
    assert data["blocked"] == [{"key": "deploy.md", "rules": ["aws-access-token"], "lines": [3]}]
    assert data["in_sync"] == 2 and data["pending"] == []
    assert TOKEN not in status.stdout


def test_cli_reads_settings_and_reports_configuration_errors(server, tmp_path):
    _memory_dir(tmp_path)
    missing = _cli(tmp_path, "status")
    assert missing.returncode == 2
    assert "team sync is not configured" in missing.stderr
    assert "MEMFRAME_TEAM_SERVER" in missing.stderr

    _settings(tmp_path, server=server.url, repo=REPO)
    ok = _cli(tmp_path, "push", "--json", env={"MEMFRAME_TEAM_TOKEN": TOKEN})
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["pushed"] == []

    refused = _cli(tmp_path, "pull", "--token", "not-the-token")
    assert refused.returncode == 1 and "401" in refused.stderr
    assert "not-the-token" not in refused.stderr + refused.stdout

    bad = _cli(tmp_path, "push", "--bogus")
    assert bad.returncode == 2


def test_a_user_memory_in_team_is_never_sent(tmp_path):
    """memframe's own writers refuse a ``type: user`` memory in team/; one put there by hand or
    by the agent's Write tool is held back by the push gate."""
    from memframe.scanner import default_scanner
    from memframe.server.app import start_server
    from memframe.server.sqlite import SQLiteStorage
    from memframe.server.storage import hash_token
    from memframe.team_sync.client import PRIVATE_USER_MEMORY, TeamSyncClient
    from memframe.team_sync.settings import SyncConfig

    storage = SQLiteStorage(tmp_path / "team.db")
    storage.add_token("t", hash_token("mft_user"), ("acme/app",))
    team = tmp_path / "memory" / "team"
    team.mkdir(parents=True)
    (team / "me.md").write_text("---\nname: Me\ndescription: who\ntype: user\n---\nI am Ana.\n")
    (team / "deploy.md").write_text("---\nname: Deploy\ndescription: d\ntype: project\n---\nx\n")
    with start_server(storage) as server:
        config = SyncConfig(server=server.url, repo="acme/app", token="mft_user")
        result = TeamSyncClient(config, tmp_path / "memory", default_scanner()).push()
    stored = storage.get("acme/app")
    storage.close()
    assert stored is not None and set(stored.entries) == {"deploy.md"}
    assert [b.key for b in result.blocked] == ["me.md"]
    assert result.blocked[0].rules == [PRIVATE_USER_MEMORY]
