"""Team memory sync: a push of a 1% change, an unchanged pull, and the team server under load
and faults, beside the previous server in the same run.

- push: 10,000 team entries (quick: 2,000) of ~1.5 KB are pushed once (not timed); then 1% of
  them change and one push runs: requests, bytes sent (request bodies) against the bytes that
  changed, and the time (the embedded server on a thread);
- load: requests/s and p50/p99 latency of ``GET`` answered 304 (``If-None-Match`` current),
  a full ``GET`` (20 entries, ~10 KB) and a ``PUT`` of one small entry, with 1, 8 and 64
  concurrent keep-alive clients, on SQLite and on 2 replicas over PostgreSQL (when
  ``MEMFRAME_TEST_POSTGRES`` names a server; ``eval "$(scripts/test-postgres)"`` starts one).
  ``old`` is the server before issue 16 (``benches/legacy_server.py``: ThreadingHTTPServer,
  one process), ``new`` is ``memframe serve`` (uvicorn + Starlette) with one worker process per
  usable CPU on SQLite (2 at most) and one process per replica on PostgreSQL; full mode adds
  ``new1``, a single process. Every server runs as its own process on 127.0.0.1; the clients
  are one asyncio process (raw HTTP/1.1, a request prepared in advance), so they cost far less
  than the servers. Variants are measured in short rounds, interleaved in shuffled order; the
  figure is the median round;
- flood: connections with a bogus bearer token, one after the other (quick: 50 to the old
  server, 300 to the new; full 1,000), then 50 idle connections: the servers' open files and
  threads before and after, and whether a valid request still answers 200;
- soak: 8 writers against ``memframe serve`` (SQLite; and PostgreSQL with 2 replicas), the
  server (one replica) SIGKILLed half-way and restarted on the same port: acknowledged writes
  lost (every acknowledged write must be stored, or a later one of the same key), and the
  server's open files and threads over each life.

Floors (ratios side by side in this run, and fault counts): see ``check`` and
docs/benchmarks.md.

A slower disk on any machine: with ``MEMFRAME_BENCH_FSYNC_DELAY_US=800`` every server process
of the run (old and new alike, so the ratios stay side by side) has each ``fsync`` and
``fdatasync`` return 800 µs after the real call (``benches/slow_fsync.c``, compiled with ``cc``
and loaded with ``LD_PRELOAD``). PostgreSQL's own fsyncs are not slowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benches.harness import BenchResult, ratio
from memframe.scanner import default_scanner
from memframe.server import open_storage
from memframe.server.app import API_PATH, start_server
from memframe.server.storage import hash_token
from memframe.team_sync.client import TeamSyncClient
from memframe.team_sync.settings import SyncConfig

NAME = "sync"
REPO = "bench/team"
READ_REPO = "bench/read"  # 20 entries: the full GET and the 304
WRITE_REPO = "bench/write"  # the PUTs (at most 128 keys)
_SOAK_REPO = "bench/soak"
TOKEN = "mft_bench"
CHANGED_SHARE = 0.01
BYTES_FLOOR = 2.0
CLIENTS = (1, 8, 64)
KINDS = ("GET 304", "GET full", "PUT")
# new / old requests/s on SQLite at 8 and 64 clients (issue 16: >= 3x; the quick pass, with
# rounds of a fifth of a second on a shared machine, holds a lower bar). Both servers fsync
# every commit (WAL, synchronous=FULL); the new one commits the PUTs in flight together (a
# committer thread per process), and the PUT floor guards that batching.
GET_FLOOR = {True: 1.25, False: 3.0}  # by quick
PUT_FLOOR = {True: 1.25, False: 2.0}
FD_SLACK = 4  # open files may move this much over a server's life (a pool connection opening)
ROOT = Path(__file__).resolve().parent.parent
FSYNC_DELAY_ENV = "MEMFRAME_BENCH_FSYNC_DELAY_US"
_slow_disk: dict[str, str] = {}  # what a server's environment gains for a slower disk


def fsync_delay_us() -> int:
    """The emulated extra time of an fsync (``$MEMFRAME_BENCH_FSYNC_DELAY_US``; 0: none)."""
    value = os.environ.get(FSYNC_DELAY_ENV, "").strip() or "0"
    if not value.isdigit():
        raise ValueError(f"{FSYNC_DELAY_ENV} must be a whole number of microseconds: {value!r}")
    return int(value)


@contextlib.contextmanager
def _slower_disk(directory: Path) -> Iterator[int]:
    """Every server spawned inside has its fsyncs ``fsync_delay_us()`` longer (yielded; 0:
    the disk as it is): the preload library is built in ``directory``."""
    delay = fsync_delay_us()
    if not delay:
        yield 0
        return
    compiler = shutil.which("cc")
    if compiler is None:
        raise RuntimeError(f"{FSYNC_DELAY_ENV} needs a C compiler (cc) to build slow_fsync.c")
    library = directory / "slow_fsync.so"
    source = Path(__file__).with_name("slow_fsync.c")
    command = [compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"]
    subprocess.run(command, check=True, capture_output=True)
    _slow_disk.update({"LD_PRELOAD": str(library), FSYNC_DELAY_ENV: str(delay)})
    try:
        yield delay
    finally:
        _slow_disk.clear()


# -- push and pull (the client) ----------------------------------------------------------------


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


# -- server processes ------------------------------------------------------------------------


@dataclass
class Served:
    """A server process (its stderr in a file) and the URL it announced."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    argv: list[str] = field(default_factory=list)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        return host, int(port)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)


def _spawn(argv: list[str], log: Path) -> Served:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFRAME_")}
    env.update(_slow_disk)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with log.open("wb") as err:
        process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=ROOT
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if " on http://" in text:
            url = text.split(" on ", 1)[1].split()[0]
            return Served(process, url, log, argv)
        if process.poll() is not None:
            break
        time.sleep(0.02)
    process.kill()
    process.wait()
    raise RuntimeError(f"{argv[2:4]} did not start: {log.read_text(errors='replace')[-2000:]}")


def _new_server(db: str, log: Path, *, workers: int = 1, port: int = 0) -> Served:
    argv = [sys.executable, "-m", "memframe", "serve", "--db", db, "--port", str(port)]
    return _spawn([*argv, "--workers", str(workers)], log)


def _old_server(db: str, log: Path) -> Served:
    return _spawn([sys.executable, "-m", "benches.legacy_server", "--db", db], log)


def _process_tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return pids


def resources(pid: int) -> tuple[int, int]:
    """Open files and threads of ``pid`` and its children (``-1, -1`` off Linux)."""
    fds = threads = 0
    try:
        for member in _process_tree(pid):
            fds += len(os.listdir(f"/proc/{member}/fd"))
            status = Path(f"/proc/{member}/status").read_text()
            threads += int(status.split("Threads:", 1)[1].split()[0])
    except (OSError, IndexError, ValueError):
        return -1, -1
    return fds, threads


# -- the load generator --------------------------------------------------------------------


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: ``request(bytes)`` -> the response status. A
    response with ``Connection: close`` ends it, as an HTTP/1.1 client must: the client closes
    its side, and the next request goes on a new connection."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.buffer = bytearray()
        self.waiter: asyncio.Future[int] | None = None
        self.need = -1
        self.status = 0
        self.closing = False  # the response being read said Connection: close
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.waiter is None:
            return
        if self.need < 0:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).lower()
            self.status = int(head[9:12])
            length = 0
            at = head.find(b"content-length:")
            if at >= 0:
                stop = head.find(b"\r\n", at)
                length = int(head[at + 15 : stop if stop > 0 else len(head)])
            self.closing = b"\r\nconnection: close" in head
            self.need = end + 4 + length
        if len(self.buffer) >= self.need:
            del self.buffer[: self.need]
            self.need = -1
            if self.closing and self.transport is not None:
                self.transport.close()
            waiter, self.waiter = self.waiter, None
            waiter.set_result(self.status)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("the server closed the connection"))

    def request(self, data: bytes) -> asyncio.Future[int]:
        if self.transport is None or self.transport.is_closing():
            raise ConnectionError("not connected")
        self.need, self.buffer = -1, bytearray()
        self.waiter = self.loop.create_future()
        self.transport.write(data)
        return self.waiter


async def _connect(address: tuple[str, int]) -> _Connection:
    loop = asyncio.get_running_loop()
    _, connection = await loop.create_connection(lambda: _Connection(loop), *address)
    return connection


Maker = Callable[[int, int], bytes]


def _requests(read_checksum: str) -> dict[str, Maker]:
    auth = f"Host: bench\r\nAuthorization: Bearer {TOKEN}\r\n"
    full = f"GET {API_PATH}?repo={READ_REPO} HTTP/1.1\r\n{auth}\r\n".encode()
    cached = (
        f"GET {API_PATH}?repo={READ_REPO} HTTP/1.1\r\n{auth}"
        f'If-None-Match: "{read_checksum}"\r\n\r\n'
    ).encode()

    def put(client: int, n: int) -> bytes:
        body = json.dumps({"entries": {f"c{client % 16}-{n % 8}.md": f"client {client} n {n}"}})
        return (
            f"PUT {API_PATH}?repo={WRITE_REPO} HTTP/1.1\r\n{auth}Content-Type: application/json"
            f"\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        ).encode()

    return {"GET 304": lambda c, n: cached, "GET full": lambda c, n: full, "PUT": put}


@dataclass
class Round:
    requests: int
    seconds: float
    latencies: list[float]
    errors: int


async def _round(
    connections: list[_Connection],
    addresses: list[tuple[str, int]],
    make: Maker,
    clients: int,
    seconds: float,
    want: int,
) -> Round:
    """``clients`` of the open ``connections`` send requests for ``seconds``; a connection the
    server closed is opened again (an error)."""
    latencies: list[float] = []
    errors = 0
    started = time.perf_counter()
    stop_at = started + seconds

    async def one(index: int) -> None:
        nonlocal errors
        n = 0
        while (sent := time.perf_counter()) < stop_at:
            connection = connections[index]
            if connection.transport is None or connection.transport.is_closing():
                # closed while idle (the new server closes idle connections after 5 s) or
                # after a response with Connection: close (a worker balancing its
                # connections): open another, untimed, as a client would
                connection = connections[index] = await _connect(addresses[index % len(addresses)])
                continue
            try:
                status = await connection.request(make(index, n))
            except ConnectionError:  # lost in the middle of a request
                errors += 1
                connections[index] = await _connect(addresses[index % len(addresses)])
                continue
            done = time.perf_counter()
            if done <= stop_at:
                latencies.append(done - sent)
                if status != want:
                    errors += 1
            n += 1

    await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(clients))), seconds + 60)
    return Round(len(latencies), seconds, latencies, errors)


def _event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover
        return asyncio.new_event_loop()


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else float("nan")


def _load(
    result: BenchResult,
    engine: str,
    servers: dict[str, list[Served]],
    read_checksum: str,
    *,
    rounds: int,
    seconds: float,
) -> None:
    """Every kind x clients, the variants interleaved round by round in shuffled order."""
    makers = _requests(read_checksum)
    shuffle = random.Random(0x5EED).shuffle
    loop = _event_loop()
    addresses = {name: [s.address for s in group] for name, group in servers.items()}
    # every variant's connections are opened once, one after the other, before anything is
    # timed (the old server accepts slowly: a thread and a database connection each)
    connections = {
        name: [
            loop.run_until_complete(_connect(addresses[name][i % len(addresses[name])]))
            for i in range(max(CLIENTS))
        ]
        for name in servers
    }
    try:
        for kind in KINDS:
            want = 304 if kind == "GET 304" else 200
            for clients in CLIENTS:
                measured: dict[str, list[Round]] = {name: [] for name in servers}
                order = list(servers)
                for _ in range(rounds):
                    shuffle(order)
                    for name in order:
                        measured[name].append(
                            loop.run_until_complete(
                                _round(
                                    connections[name],
                                    addresses[name],
                                    makers[kind],
                                    clients,
                                    seconds,
                                    want,
                                )
                            )
                        )
                row: dict[str, float | int] = {}
                for name, got in measured.items():
                    rates = [r.requests / r.seconds for r in got]
                    latencies = [x for r in got for x in r.latencies]
                    row[f"{name}_rps"] = round(statistics.median(rates), 1)
                    row[f"{name}_p50_ms"] = round(_percentile(latencies, 0.5) * 1000, 2)
                    row[f"{name}_p99_ms"] = round(_percentile(latencies, 0.99) * 1000, 2)
                    row[f"{name}_errors"] = sum(r.errors for r in got)
                for name in servers:
                    if name != "old":
                        new_rps, old_rps = float(row[f"{name}_rps"]), float(row["old_rps"])
                        row[f"{name}_x_old"] = ratio(new_rps, old_rps)
                result.add(f"{engine} {kind} x{clients}", **row)
    finally:
        for group in connections.values():
            for connection in group:
                if connection.transport is not None:
                    connection.transport.close()
        loop.run_until_complete(asyncio.sleep(0.05))
        loop.close()


# -- flood: bogus tokens and idle connections -----------------------------------------------


def _flood(result: BenchResult, name: str, server: Served, connections: int) -> None:
    host, port = server.address
    bogus = (
        f"GET {API_PATH}?repo={READ_REPO} HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer nope\r\n\r\n"
    )
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}) as api:
        api.get(f"{API_PATH}?repo={READ_REPO}")  # warm: pools and threads as under use
        time.sleep(0.2)
        fds_before, threads_before = resources(server.process.pid)
        refused = 0
        for _ in range(connections):
            with socket.create_connection((host, port), timeout=10) as sock:
                sock.sendall(bogus.encode())
                if b" 401 " in sock.recv(4096):
                    refused += 1
        idle = [socket.create_connection((host, port), timeout=10) for _ in range(50)]
        time.sleep(0.3)
        _, threads_idle = resources(server.process.pid)
        for sock in idle:
            sock.close()
        time.sleep(0.3)
        fds_after, threads_after = resources(server.process.pid)
        status = api.get(f"{API_PATH}?repo={READ_REPO}").status_code
    result.add(
        f"flood {name}: {connections} bogus-token connections, then 50 idle",
        refused_401=refused,
        fds_before=fds_before,
        fds_after=fds_after,
        threads_before=threads_before,
        threads_50_idle=threads_idle,
        threads_after=threads_after,
        valid_status=status,
    )


# -- soak: writers, a SIGKILL, a restart ----------------------------------------------------


async def _writer(
    index: int,
    address: Callable[[], tuple[str, int]],
    stop_at: float,
    acknowledged: dict[str, int],
    counts: list[int],
) -> None:
    connection: _Connection | None = None
    n = 0
    while time.perf_counter() < stop_at:
        key = f"w{index}/k{n % 40}.md"
        body = json.dumps({"entries": {key: f"writer {index} write {n}"}})
        data = (
            f"PUT {API_PATH}?repo={_SOAK_REPO} HTTP/1.1\r\nHost: s\r\nAuthorization: Bearer "
            f"{TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            f"{body}"
        ).encode()
        try:
            if connection is None:
                connection = await _connect(address())
            status = await connection.request(data)
        except OSError:  # refused while the server restarts, or cut by the kill
            connection = None
            await asyncio.sleep(0.02)
            n += 1  # the outcome of that write is unknown: never counted as acknowledged
            continue
        if status == 200:
            acknowledged[key] = n
            counts[0] += 1
        n += 1


def _soak(
    result: BenchResult, engine: str, db: str, tmp: Path, seconds: float, replicas: int
) -> None:
    servers = [_new_server(db, tmp / f"soak-{engine}-{r}.log") for r in range(replicas)]
    acknowledged: dict[str, int] = {}
    counts = [0]
    samples: dict[int, list[tuple[int, int]]] = {}  # server process -> (fds, threads)
    sampling = threading.Event()
    sampling.set()
    stopping = threading.Event()

    def sample() -> None:
        while not stopping.wait(0.1):
            victim = servers[0].process
            if sampling.is_set() and victim.poll() is None:
                samples.setdefault(victim.pid, []).append(resources(victim.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    def address_of(index: int) -> Callable[[], tuple[str, int]]:
        return lambda: servers[index % len(servers)].address

    async def run() -> None:
        stop_at = time.perf_counter() + seconds
        writers = [
            asyncio.ensure_future(_writer(i, address_of(i), stop_at, acknowledged, counts))
            for i in range(8)
        ]
        await asyncio.sleep(seconds / 2)
        victim = servers[0]
        port = victim.address[1]
        sampling.clear()
        victim.process.kill()  # SIGKILL: no drain, no shutdown
        victim.process.wait()
        before_kill = counts[0]
        servers[0] = await asyncio.to_thread(
            _new_server, db, tmp / f"soak-{engine}-restart.log", port=port
        )
        sampling.set()
        await asyncio.gather(*writers)
        result.details.setdefault("soak", {})[engine] = {"acknowledged_before_kill": before_kill}

    loop = _event_loop()
    try:
        loop.run_until_complete(run())
    finally:
        loop.close()
        stopping.set()
        sampler.join()
        for server in servers:
            server.stop()
    storage = open_storage(db)
    try:
        snapshot = storage.get(_SOAK_REPO)
    finally:
        storage.close()
    stored = {} if snapshot is None else snapshot.entries
    lost = sum(
        1
        for key, n in acknowledged.items()
        if key not in stored or int(stored[key].rsplit(" ", 1)[1]) < n
    )

    def spread(values: list[int]) -> int:
        return max(values) - min(values) if values else -1

    # after a warm-up of 1 s in each life: the pool and the worker threads are all there
    settled = {k: v[10:] or v for k, v in samples.items()}
    fds = [f for v in settled.values() for f, _ in v]
    threads = [t for v in settled.values() for _, t in v]
    result.add(
        f"soak {engine}: 8 writers, SIGKILL + restart",
        seconds=seconds,
        replicas=replicas,
        acknowledged=counts[0],
        acknowledged_lost=lost,
        fds_spread=max((spread([f for f, _ in v]) for v in settled.values()), default=-1),
        threads_spread=max((spread([t for _, t in v]) for v in settled.values()), default=-1),
        fds_max=max(fds, default=-1),
        threads_max=max(threads, default=-1),
    )


# -- the bench -------------------------------------------------------------------------------


def _seed(url: str) -> str:
    storage = open_storage(url)
    try:
        if storage.token(hash_token(TOKEN)) is None:
            storage.add_token(f"bench-{os.getpid()}", hash_token(TOKEN), ("*",))
        text = " ".join(["entry"] * 100)
        storage.put(
            READ_REPO, {f"n{k:02d}.md": text for k in range(20)}, if_match=None, max_entries=1000
        )
        storage.put(WRITE_REPO, {"seed.md": "x"}, if_match=None, max_entries=1000)
        checksum = storage.checksum(READ_REPO)
    finally:
        storage.close()
    assert checksum is not None
    return checksum


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def run(quick: bool) -> BenchResult:
    entries = 2_000 if quick else 10_000
    rounds, seconds = (2, 0.2) if quick else (7, 1.0)
    flood = 300 if quick else 1_000
    flood_old = 50 if quick else 1_000  # the old server takes ~30-80 ms a connection
    soak_seconds = 4.0 if quick else 60.0
    workers = max(1, min(2, _usable_cpus()))
    result = BenchResult(
        NAME,
        params={
            "entries": entries,
            "rounds": rounds,
            "round_seconds": seconds,
            "flood_connections": flood,
            "soak_seconds": soak_seconds,
            "new_workers_sqlite": workers,
            "fsync_delay_us": fsync_delay_us(),
        },
    )
    from benches import machine

    facts = machine.collect()
    result.notes.append(
        f"cpu {facts.get('cpu_label') or facts.get('cpu_model') or '?'}, "
        f"usable cpus {facts.get('usable_cpus')}"
    )
    phases: dict[str, float] = {}
    result.details["phase_seconds"] = phases
    phase = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="memframe-bench-sync-") as name,
        _slower_disk(Path(name)) as delay,
    ):
        tmp = Path(name)
        if delay:
            result.notes.append(f"a slower disk: every fsync returns {delay} µs later")
        storage = open_storage(str(tmp / "team.db"))
        storage.add_token("bench", hash_token(TOKEN), ("*",))
        try:
            with start_server(storage, max_entries=entries + 10, max_body_bytes=1 << 20) as srv:
                _push_and_pull(result, tmp / "memory", srv.url, entries)
        finally:
            storage.close()

        phases["push and pull"] = round(time.perf_counter() - phase, 1)
        phase = time.perf_counter()
        old_db, new_db = str(tmp / "old.db"), str(tmp / "new.db")
        checksum = _seed(old_db)
        _seed(new_db)
        servers = {
            "old": [_old_server(old_db, tmp / "old.log")],
            "new": [_new_server(new_db, tmp / "new.log", workers=workers)],
        }
        if not quick:
            servers["new1"] = [_new_server(new_db, tmp / "new1.log")]
        try:
            _load(result, "sqlite", servers, checksum, rounds=rounds, seconds=seconds)
            _flood(result, "old", servers["old"][0], flood_old)
            _flood(result, "new", servers["new"][0], flood)
        finally:
            for group in servers.values():
                for server in group:
                    server.stop()
        phases["sqlite load and flood"] = round(time.perf_counter() - phase, 1)
        phase = time.perf_counter()
        soak_db = f"sqlite:///{tmp / 'soak.db'}"
        _seed(soak_db)
        _soak(result, "sqlite", soak_db, tmp, soak_seconds, 1)
        phases["sqlite soak"] = round(time.perf_counter() - phase, 1)

        postgres = os.environ.get("MEMFRAME_TEST_POSTGRES")
        if postgres:
            phase = time.perf_counter()
            checksum = _seed(postgres)
            servers = {
                "old": [_old_server(postgres, tmp / f"pg-old-{r}.log") for r in range(2)],
                "new": [_new_server(postgres, tmp / f"pg-new-{r}.log") for r in range(2)],
            }
            try:
                _load(result, "postgres x2", servers, checksum, rounds=rounds, seconds=seconds)
            finally:
                for group in servers.values():
                    for server in group:
                        server.stop()
            phases["postgres load"] = round(time.perf_counter() - phase, 1)
            phase = time.perf_counter()
            _soak(result, "postgres x2", postgres, tmp, soak_seconds, 2)
            phases["postgres soak"] = round(time.perf_counter() - phase, 1)
        else:
            result.notes.append("postgres skipped: MEMFRAME_TEST_POSTGRES is not set")
    result.notes.append(
        f"guard: a push of a {CHANGED_SHARE:.0%} change sends <= {BYTES_FLOOR}x the changed bytes"
    )
    result.notes.append(
        f"floors (sqlite, 8 and 64 clients): GET new >= {GET_FLOOR[quick]}x old, PUT new >= "
        f"{PUT_FLOOR[quick]}x old; soak: 0 acknowledged writes lost, open files within "
        f"{FD_SLACK}, threads constant"
    )
    result.params["quick"] = quick
    return result


def check(result: BenchResult) -> list[str]:
    problems: list[str] = []
    quick = bool(result.params.get("quick", False))
    workers = int(result.params.get("new_workers_sqlite", 1) or 1)
    for name, row in result.rows.items():
        sent = row.get("sent_x_changed")
        if isinstance(sent, int | float) and sent > BYTES_FLOOR:
            problems.append(f"sync: {name} sent {sent}x the changed bytes (limit {BYTES_FLOOR}x)")
        if name == "pull unchanged" and row.get("status") != 304:
            problems.append(f"sync: an unchanged pull answered {row.get('status')}, not 304")
        if name.startswith("sqlite ") and not name.endswith(" x1"):
            x_old = row.get("new_x_old")
            if not isinstance(x_old, int | float):
                continue
            if name.startswith("sqlite PUT"):
                floor = PUT_FLOOR[quick]
            elif workers >= 2:  # the GET floor counts on a worker per core
                floor = GET_FLOOR[quick]
            else:
                continue
            if x_old < floor:
                problems.append(f"sync: {name}: new {x_old}x old requests/s (floor {floor}x)")
        if name.startswith(("sqlite ", "postgres ")) and any(
            v for k, v in row.items() if k.endswith("_errors") and k.startswith("new")
        ):
            problems.append(f"sync: {name}: the new server answered unexpected statuses")
        if name.startswith("flood new"):
            if row.get("valid_status") != 200:
                problems.append(f"sync: {name}: a valid request answered {row.get('valid_status')}")
            fds = (row.get("fds_before"), row.get("fds_after"))
            if all(isinstance(v, int) and v >= 0 for v in fds) and fds[1] > fds[0] + FD_SLACK:  # type: ignore[operator]
                problems.append(f"sync: {name}: open files grew from {fds[0]} to {fds[1]}")
            if row.get("threads_after") != row.get("threads_before") or row.get(
                "threads_50_idle"
            ) != row.get("threads_before"):
                problems.append(f"sync: {name}: the thread count moved")
        if name.startswith("soak "):
            if row.get("acknowledged_lost") != 0:
                problems.append(
                    f"sync: {name}: {row.get('acknowledged_lost')} acknowledged writes lost"
                )
            if not isinstance(row.get("acknowledged"), int) or row["acknowledged"] < 20:  # type: ignore[operator]
                problems.append(f"sync: {name}: the writers did not get going")
            fds_spread = row.get("fds_spread")
            if isinstance(fds_spread, int) and fds_spread > FD_SLACK:
                problems.append(f"sync: {name}: open files moved by {fds_spread}")
            if row.get("threads_spread") not in (0, -1):
                problems.append(f"sync: {name}: threads moved by {row.get('threads_spread')}")
    return problems
