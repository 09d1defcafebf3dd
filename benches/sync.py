"""Team memory sync: what a push of a 1% change costs, an unchanged pull, and server throughput.

Measured against the real server on 127.0.0.1 (``memframe.server.app.start_server``):

- push: 10,000 team entries (quick: 2,000) of ~1.5 KB are pushed once (not timed); then 1% of
  them change and one push runs: requests, bytes sent (request bodies) against the bytes that
  changed, and the time;
- pull of an unchanged repo: one request answered 304, and its time;
- server throughput: GET (``view=hashes``) and PUT of one small entry, by 4 concurrent clients for
  a fixed time, on SQLite — and on PostgreSQL when ``MEMFRAME_TEST_POSTGRES`` names a server
  (``eval "$(scripts/test-postgres)"`` starts one).

Guard (a correctness floor of this bench, not an issue's): a push of a 1% change sends at most
2x the changed bytes (JSON framing included) — a client that pushed everything would send ~100x.
"""

from __future__ import annotations

import os
import random
import string
import tempfile
import threading
import time
from pathlib import Path

import httpx

from benches.harness import BenchResult
from memframe.scanner import default_scanner
from memframe.server import open_storage
from memframe.server.app import API_PATH, start_server
from memframe.server.storage import Storage, hash_token
from memframe.team_sync.client import TeamSyncClient
from memframe.team_sync.settings import SyncConfig

NAME = "sync"
REPO = "bench/team"
LOAD_REPO = "bench/load"  # throughput runs on its own small repo
TOKEN = "mft_bench"
CHANGED_SHARE = 0.01
BYTES_FLOOR = 2.0


class CountingTransport(httpx.BaseTransport):
    """Counts requests, request body bytes and response statuses on their way out."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.requests = 0
        self.bytes_sent = 0
        self.statuses: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        self.bytes_sent += len(request.read())
        response = self.inner.handle_request(request)
        self.statuses.append(response.status_code)
        return response

    def close(self) -> None:
        self.inner.close()


def _text(rng: random.Random, size: int) -> str:
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(64)]
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < size:
        out.append(rng.choice(words))
    return "# note\n\n" + " ".join(out) + "\n"


def _client(root: Path, url: str, transport: httpx.BaseTransport) -> TeamSyncClient:
    config = SyncConfig(server=url, repo=REPO, token=TOKEN, timeout=30.0, backoff_base=0.01)
    return TeamSyncClient(config, root, default_scanner(), transport=transport)


def _push_and_pull(result: BenchResult, root: Path, url: str, entries: int) -> None:
    rng = random.Random(7)
    team = root / "team"
    team.mkdir(parents=True)
    for n in range(entries):
        (team / f"note-{n:05d}.md").write_text(_text(rng, 1500))
    seed = CountingTransport()
    _client(root, url, seed).push()
    seed.close()
    changed = rng.sample(range(entries), max(1, int(entries * CHANGED_SHARE)))
    changed_bytes = 0
    for n in changed:
        text = _text(rng, 1500)
        (team / f"note-{n:05d}.md").write_text(text)
        changed_bytes += len(text.encode())
    counting = CountingTransport()
    started = time.perf_counter()
    pushed = _client(root, url, counting).push()
    push_ms = (time.perf_counter() - started) * 1000
    counting.close()
    if not pushed.ok:
        raise RuntimeError(f"the bench push failed: {pushed.to_json()}")
    result.add(
        f"push {len(changed)} of {entries:,} changed",
        requests=counting.requests,
        bytes_sent=counting.bytes_sent,
        changed_bytes=changed_bytes,
        sent_x_changed=round(counting.bytes_sent / changed_bytes, 3),
        ms=round(push_ms, 1),
    )
    _client(root, url, CountingTransport()).pull()  # learn the current checksum
    pull = CountingTransport()
    started = time.perf_counter()
    _client(root, url, pull).pull()
    pull_ms = (time.perf_counter() - started) * 1000
    pull.close()
    result.add(
        "pull unchanged",
        requests=pull.requests,
        status=pull.statuses[-1] if pull.statuses else 0,
        ms=round(pull_ms, 2),
    )


def _load(url: str, kind: str, index: int, stop: threading.Event, counts: list[int]) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as api:
        n = 0
        while not stop.is_set():
            if kind == "GET":
                response = api.get(f"{API_PATH}?repo={LOAD_REPO}&view=hashes")
            else:
                body = {"entries": {f"c{index}-{n % 50}.md": f"write {n}"}}
                response = api.put(f"{API_PATH}?repo={LOAD_REPO}", json=body)
            if response.status_code == 200:
                counts[index] += 1
            n += 1


def _throughput(storage: Storage, engine: str, seconds: float, result: BenchResult) -> None:
    with start_server(storage) as server:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=server.url, headers=headers) as seed:
            seed.put(f"{API_PATH}?repo={LOAD_REPO}", json={"entries": {"seed.md": "x"}})
        for kind in ("GET", "PUT"):
            counts = [0] * 4
            stop = threading.Event()
            threads = [
                threading.Thread(target=_load, args=(server.url, kind, i, stop, counts))
                for i in range(4)
            ]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            time.sleep(seconds)
            stop.set()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - started
            result.add(
                f"server {kind} x4 clients ({engine})",
                requests_per_s=round(sum(counts) / elapsed, 1),
                requests=sum(counts),
            )


def run(quick: bool) -> BenchResult:
    entries = 2_000 if quick else 10_000
    seconds = 1.0 if quick else 5.0
    result = BenchResult(NAME, params={"entries": entries, "throughput_seconds": seconds})
    with tempfile.TemporaryDirectory(prefix="memframe-bench-sync-") as tmp:
        storage = open_storage(str(Path(tmp) / "team.db"))
        storage.add_token("bench", hash_token(TOKEN), ("*",))
        try:
            with start_server(storage, max_entries=entries + 10, max_body_bytes=1 << 20) as srv:
                _push_and_pull(result, Path(tmp) / "memory", srv.url, entries)
            _throughput(storage, "sqlite", seconds, result)
        finally:
            storage.close()
    postgres = os.environ.get("MEMFRAME_TEST_POSTGRES")
    if postgres:
        storage = open_storage(postgres)
        try:
            if storage.token(hash_token(TOKEN)) is None:
                storage.add_token(f"bench-{os.getpid()}", hash_token(TOKEN), ("*",))
            _throughput(storage, "postgres", seconds, result)
        finally:
            storage.close()
    else:
        result.notes.append("postgres throughput skipped: MEMFRAME_TEST_POSTGRES is not set")
    result.notes.append(
        f"guard: a push of a {CHANGED_SHARE:.0%} change sends <= {BYTES_FLOOR}x the changed bytes"
    )
    return result


def check(result: BenchResult) -> list[str]:
    problems: list[str] = []
    for name, row in result.rows.items():
        sent = row.get("sent_x_changed")
        if isinstance(sent, int | float) and sent > BYTES_FLOOR:
            problems.append(f"sync: {name} sent {sent}x the changed bytes (limit {BYTES_FLOOR}x)")
        if name == "pull unchanged" and row.get("status") != 304:
            problems.append(f"sync: an unchanged pull answered {row.get('status')}, not 304")
    return problems
