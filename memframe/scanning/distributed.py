"""Scanning on a Dask cluster: ``memframe scan --dask ADDRESS`` and ``--dask-local N``.

The client walks the inputs exactly as the local scan does (:class:`~memframe.scanning.walk.
Walker`), plans *partitions* of roughly equal cost and submits one task per partition; each task
runs on a worker with the native scanner and the same per-file code as the local path:

- files up to ``big_file`` bytes go to ``SecretScanner.find_files`` in batches and the files
  with findings are read again to place them (as :class:`~memframe.scanning.runner.ScanRunner`
  does); consecutive files (in walk order) are grouped until a partition holds its share;
- JSONL files are scanned whole by :class:`~memframe.scanning.jsonl.JsonlScanner` (a file is
  never split: its records are numbered from its start);
- bigger files are scanned in the windows of :mod:`memframe.scanning.windows`. The client
  computes where every window of the local scan starts (reading only the bytes each cut depends
  on) and a file bigger than a partition is split into byte ranges at those window starts, so
  each range is scanned in exactly the windows the local scan uses: a range's last window reads
  ``overlap`` bytes and more past the range, and reports the findings that *start* before the
  range ends, so a secret across a range boundary is found whole, once. Lines and columns are
  counted from the range start and shifted on the client, which also drops a finding re-found
  inside a secret an earlier window reported (what ``scan_range`` does across windows);
- each team database is one task (:func:`~memframe.scanning.teamdb.scan_team_db`).

Workers are given paths, never file contents: they must see the files at the same absolute
paths as the client (always true on a local cluster; on a remote cluster, a shared filesystem
mounted at the same place), and have memframe installed. Results are merged and sorted as the
local scan sorts them; redacted copies are written by the client. The report, baseline and
inline allows then apply unchanged, so the findings are identical to a local scan's.

Nothing here imports Dask until a client is opened: ``import memframe`` never imports it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Unpack

from memframe.rules import RuleSet
from memframe.scanner import SecretScanner, redact_spans
from memframe.scanning import redact
from memframe.scanning.hits import Hit
from memframe.scanning.jsonl import JsonlResult, JsonlScanner, redaction_replacements
from memframe.scanning.runner import (
    BATCH_BYTES,
    BATCH_FILES,
    BIG_FILE_BYTES,
    ScanBase,
    ScanOptions,
    file_uri,
    place_file,
)
from memframe.scanning.teamdb import (
    TeamDbError,
    TeamDbResult,
    TeamDbSource,
    scan_team_db,
    shown,
)
from memframe.scanning.walk import FileInput, Skipped, Walker
from memframe.scanning.windows import (
    CUT_SEARCH_BYTES,
    OVERLAP_BYTES,
    WINDOW_BYTES,
    CrossWindowCheck,
    WindowReader,
    find_cut,
    window_hits,
)

if TYPE_CHECKING:
    from distributed import Client

INSTALL_HINT = "pip install 'memframe[dask]'"
CONNECT_TIMEOUT = 5.0
DEFAULT_SCHEDULER_PORT = 8786
MIN_PARTITION_BYTES = 16 << 20
MAX_PARTITION_BYTES = 256 << 20
PARTITIONS_PER_THREAD = 8
MAX_PARTITION_FILES = 5000
# JSON decoding in Python makes a JSONL byte cost about four times a plain text byte
JSONL_COST = 4


class DaskError(Exception):
    """The scan cannot run on Dask: not installed, scheduler unreachable, a task failed."""


# -- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextFile:
    """A file up to ``big_file`` bytes: ``find_files``, then placed."""

    file: FileInput


@dataclass(frozen=True, slots=True)
class JsonlFile:
    """A JSONL file, scanned whole."""

    file: FileInput


@dataclass(frozen=True, slots=True)
class FileRange:
    """Bytes ``[start, stop)`` of a big file; both are window starts of the local scan (or the
    file size)."""

    file: FileInput
    start: int
    stop: int


@dataclass(frozen=True, slots=True)
class TeamDb:
    """A team database: ``source`` as the worker opens it (an absolute SQLite path, or a
    PostgreSQL URL), ``shown`` as the user named it (a URL without its password)."""

    source: TeamDbSource
    shown: str


Unit = TextFile | JsonlFile | FileRange | TeamDb


@dataclass(frozen=True, slots=True)
class Partition:
    """What one task scans; ``nbytes`` and ``files`` (the files it finishes) feed the
    progress display."""

    units: tuple[Unit, ...]
    nbytes: int
    files: int


@dataclass(slots=True)
class Plan:
    """The walk (``order``: files to scan and skipped items, in walk order), the team
    databases and the partitions."""

    order: list[FileInput | Skipped] = field(default_factory=list)
    dbs: list[TeamDbSource] = field(default_factory=list)
    partitions: list[Partition] = field(default_factory=list)
    partition_bytes: int = 0

    @property
    def file_bytes(self) -> int:
        return sum(item.size for item in self.order if isinstance(item, FileInput))


def window_starts(
    handle: BinaryIO, size: int, *, window: int = WINDOW_BYTES, overlap: int = OVERLAP_BYTES
) -> list[int]:
    """Where each window of ``scan_range(handle, 0, size)`` starts. A cut depends only on the
    ``CUT_SEARCH_BYTES`` before ``window - overlap`` (and one byte after), so only those are
    read: about 1.6 % of the file with the default window."""
    if window < 2 * overlap + CUT_SEARCH_BYTES:
        raise ValueError("window must exceed twice the overlap plus the cut search")
    high = window - overlap
    low = max(1, high - CUT_SEARCH_BYTES)
    starts = [0]
    pos = 0
    while pos + window < size:
        # find_cut on data[low - 1:] sees what it sees in the whole window: the search range
        # [low, high), data[high] and at least ``overlap`` bytes after it
        handle.seek(pos + low - 1)
        tail = handle.read(window - low + 1)
        if len(tail) < window - low + 1:
            break  # the file shrank: the worker reports it
        pos += low - 1 + find_cut(tail, overlap)
        starts.append(pos)
    return starts


def _ranges(starts: list[int], size: int, target: int) -> list[tuple[int, int]]:
    """Consecutive windows grouped into ranges of at least ``target`` bytes (the last one may
    be smaller)."""
    bounds = [*starts[1:], size]
    ranges: list[tuple[int, int]] = []
    begin = 0
    for stop in bounds:
        if stop - begin >= target or stop == size:
            ranges.append((begin, stop))
            begin = stop
    return ranges


def partition_target(total_cost: int, threads: int) -> int:
    """A partition's share: a few partitions per worker thread, within the bounds."""
    share = total_cost // max(1, threads * PARTITIONS_PER_THREAD)
    return max(MIN_PARTITION_BYTES, min(MAX_PARTITION_BYTES, share))


def plan_scan(
    paths: Sequence[str],
    dbs: Sequence[TeamDbSource] = (),
    *,
    walker: Walker,
    big_file: int = BIG_FILE_BYTES,
    threads: int = 1,
    partition_bytes: int | None = None,
) -> Plan:
    """Walk ``paths`` and cut the work into partitions of about ``partition_bytes`` (default:
    :func:`partition_target` for ``threads`` worker threads)."""
    plan = Plan(dbs=list(dbs))
    seen: set[str] = set()
    for named in paths:
        for item in walker.walk(named):
            if isinstance(item, FileInput):
                if item.path in seen:
                    continue  # named twice, or named and inside a named directory
                seen.add(item.path)
            plan.order.append(item)
    files = [item for item in plan.order if isinstance(item, FileInput)]
    db_sizes = [_size(db) for db in dbs]
    total = sum(f.size * (JSONL_COST if f.jsonl else 1) for f in files) + sum(db_sizes)
    target = partition_bytes if partition_bytes is not None else partition_target(total, threads)
    plan.partition_bytes = target

    group: list[Unit] = []
    group_cost = group_bytes = group_files = 0

    def flush() -> None:
        nonlocal group, group_cost, group_bytes, group_files
        if group:
            plan.partitions.append(Partition(tuple(group), group_bytes, group_files))
        group, group_cost, group_bytes, group_files = [], 0, 0, 0

    for item in files:
        unit: Unit
        if item.jsonl:
            unit, cost = JsonlFile(item), item.size * JSONL_COST
        elif item.size <= big_file:
            unit, cost = TextFile(item), item.size
        elif item.size <= target:
            unit, cost = FileRange(item, 0, item.size), item.size
        else:
            for start, stop in _file_ranges(item, target):
                done = 1 if stop == item.size else 0
                plan.partitions.append(
                    Partition((FileRange(item, start, stop),), stop - start, done)
                )
            continue
        group.append(unit)
        group_cost += cost
        group_bytes += item.size
        group_files += 1
        if group_cost >= target or len(group) >= MAX_PARTITION_FILES:
            flush()
    flush()
    for db, size in zip(dbs, db_sizes, strict=True):
        source = Path(os.path.abspath(db)) if isinstance(db, Path) else db
        plan.partitions.append(Partition((TeamDb(source, shown(db)),), size, 0))
    return plan


def _size(source: TeamDbSource) -> int:
    if not isinstance(source, Path):
        return 0  # a PostgreSQL database: its size is not known up front
    try:
        return source.stat().st_size
    except OSError:
        return 0


def _file_ranges(item: FileInput, target: int) -> list[tuple[int, int]]:
    try:
        with open(item.path, "rb") as handle:
            starts = window_starts(handle, item.size)
    except OSError:
        return [(0, item.size)]  # the worker reports the error
    return _ranges(starts, item.size, target)


# -- on a worker ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScanSettings:
    """What every task needs besides its partition."""

    rules: RuleSet
    engine: str
    threads: int | None = None
    keep_redactions: bool = False


@dataclass(slots=True)
class TextOutcome:
    """A small file's hits and the character spans of its secrets (for a redacted copy)."""

    hits: list[Hit] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    error: str | None = None


@dataclass(slots=True)
class JsonlOutcome:
    result: JsonlResult | None = None
    error: str | None = None


@dataclass(slots=True)
class WindowOutcome:
    """A window's findings that start before its cut, each with its secret's absolute byte
    span, before the cross-window check; ``next_start`` is where the next window starts."""

    candidates: list[tuple[Hit, int, int]]
    next_start: int


@dataclass(slots=True)
class RangeOutcome:
    """A byte range's windows. Lines and columns of its hits count from the range start:
    ``newlines`` are in the range, ``tail_chars`` characters follow its last newline (or the
    range start when it has none)."""

    windows: list[WindowOutcome] = field(default_factory=list)
    newlines: int = 0
    tail_chars: int = 0
    error: str | None = None


@dataclass(slots=True)
class TeamDbOutcome:
    """A team database's result, or why it cannot be read (raised on the client)."""

    result: TeamDbResult | None = None
    error: str | None = None


Outcome = TextOutcome | JsonlOutcome | RangeOutcome | TeamDbOutcome


def _message(error: OSError) -> str:
    return error.strerror or str(error)


def scan_windows(
    scanner: SecretScanner,
    handle: BinaryIO,
    start: int,
    stop: int,
    size: int,
    *,
    path: str,
    uri: str,
    known_rules: frozenset[str],
    threads: int | None = None,
    window: int = WINDOW_BYTES,
    overlap: int = OVERLAP_BYTES,
) -> RangeOutcome:
    """The windows ``scan_range(handle, 0, size)`` reads from ``start`` (a window start) up to
    ``stop`` (the next range's first window start, or ``size``), scanned the same way."""
    outcome = RangeOutcome()
    reader = WindowReader(handle, start, stop, size, window, overlap)
    for batch in reader.batches():
        per_window = window_hits(
            scanner, batch, path=path, uri=uri, known_rules=known_rules, threads=threads
        )
        for w, candidates in zip(batch, per_window, strict=True):
            outcome.windows.append(WindowOutcome(candidates, w.pos + w.cut))
    if reader.pos != stop:
        outcome.error = "the file changed while it was being scanned"
    outcome.newlines = reader.line_base
    outcome.tail_chars = reader.col_base
    return outcome


def scan_partition(partition: Partition, settings: ScanSettings) -> list[Outcome]:
    """The task: every unit of ``partition``, one outcome per unit (in order)."""
    scanner = SecretScanner(settings.rules, engine=settings.engine)
    known = frozenset(scanner.rules.ids())
    outcomes: list[Outcome | None] = [None] * len(partition.units)
    batch: list[tuple[int, FileInput]] = []
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch, batch_bytes
        if batch:
            results = scanner.find_files([f.path for _, f in batch], threads=settings.threads)
            for (index, item), result in zip(batch, results, strict=True):
                if result.error is not None:
                    outcomes[index] = TextOutcome(error=result.error)
                elif result.findings:
                    outcomes[index] = _place(scanner, item, known, settings.keep_redactions)
                else:
                    outcomes[index] = TextOutcome()
        batch, batch_bytes = [], 0

    for index, unit in enumerate(partition.units):
        if isinstance(unit, TextFile):
            batch.append((index, unit.file))
            batch_bytes += unit.file.size
            if len(batch) >= BATCH_FILES or batch_bytes >= BATCH_BYTES:
                flush()
        elif isinstance(unit, JsonlFile):
            outcomes[index] = _scan_jsonl(scanner, unit.file, known, settings)
        elif isinstance(unit, FileRange):
            outcomes[index] = _scan_range(scanner, unit, known, settings.threads)
        else:
            outcomes[index] = _scan_team_db(scanner, unit, known, settings)
    flush()
    return [outcome for outcome in outcomes if outcome is not None]


def _place(
    scanner: SecretScanner, item: FileInput, known: frozenset[str], keep: bool
) -> TextOutcome:
    try:
        placed = place_file(scanner, item, known)
    except OSError as exc:
        return TextOutcome(error=_message(exc))
    spans = [(f.secret_start, f.secret_end) for f in placed.findings] if keep else []
    return TextOutcome(placed.hits, spans)


def _scan_jsonl(
    scanner: SecretScanner, item: FileInput, known: frozenset[str], settings: ScanSettings
) -> JsonlOutcome:
    jsonl = JsonlScanner(
        scanner,
        known_rules=known,
        threads=settings.threads,
        keep_redactions=settings.keep_redactions,
    )
    try:
        with open(item.path, "rb") as handle:
            return JsonlOutcome(jsonl.scan(handle, path=item.display, uri=file_uri(item.display)))
    except OSError as exc:
        return JsonlOutcome(error=_message(exc))


def _scan_range(
    scanner: SecretScanner, unit: FileRange, known: frozenset[str], threads: int | None
) -> RangeOutcome:
    item = unit.file
    try:
        with open(item.path, "rb") as handle:
            return scan_windows(
                scanner,
                handle,
                unit.start,
                unit.stop,
                item.size,
                path=item.display,
                uri=file_uri(item.display),
                known_rules=known,
                threads=threads,
            )
    except OSError as exc:
        return RangeOutcome(error=_message(exc))


def _scan_team_db(
    scanner: SecretScanner, unit: TeamDb, known: frozenset[str], settings: ScanSettings
) -> TeamDbOutcome:
    try:
        result = scan_team_db(
            scanner,
            unit.source,
            known_rules=known,
            threads=settings.threads,
            keep_redactions=settings.keep_redactions,
        )
    except TeamDbError as exc:  # named as the user named it
        return TeamDbOutcome(error=str(exc).replace(str(unit.source), unit.shown))
    return TeamDbOutcome(result)


# -- on the client -------------------------------------------------------------------------------


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise DaskError(f"Dask is not installed: {INSTALL_HINT}") from None
    return distributed


def local_worker_threads(workers: int) -> int:
    """Scanning threads per task on a local cluster of ``workers`` processes: the cores
    shared out, so the workers do not oversubscribe the machine."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def _check_reachable(address: str, timeout: float) -> None:
    """A plain TCP connection first: an unreachable scheduler is reported at once, by name."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme not in ("tcp", "tls"):
            return
        host, port = parse_host_port(location, DEFAULT_SCHEDULER_PORT)
    except ValueError as exc:
        raise DaskError(f"{address}: not a Dask scheduler address ({exc})") from None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else _message(exc)
        raise DaskError(f"cannot reach the Dask scheduler at {address}: {reason}") from None


@contextlib.contextmanager
def open_client(
    address: str | None = None,
    *,
    local_workers: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> Iterator[Client]:
    """A client of the scheduler at ``address``, or of a local cluster of ``local_workers``
    single-threaded worker processes on the loopback interface (closed on exit)."""
    distributed = _import_distributed()
    if local_workers is not None:
        if local_workers < 1:
            raise DaskError("--dask-local needs at least 1 worker")
        try:
            cluster = distributed.LocalCluster(
                n_workers=local_workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                # no dashboard; the scheduler's small HTTP server (health checks) takes any
                # free loopback port rather than 8787, which another cluster may hold
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                # the workers' own log records stay out of the report: a task that fails
                # reaches the client as its exception, and a worker whose heartbeat races
                # the scheduler's close at the end logs a harmless ERROR with a traceback
                # (dask/distributed#9032, NVIDIA-NeMo/Curator#9), seen in a CI run
                silence_logs=logging.CRITICAL,
            )
        except Exception as exc:
            raise DaskError(f"cannot start a local Dask cluster: {exc}") from None
        with cluster, distributed.Client(cluster, set_as_default=False) as client:
            yield client
        return
    if not address:
        raise DaskError("no Dask scheduler address given")
    _check_reachable(address, connect_timeout)
    try:
        client = distributed.Client(address, timeout=connect_timeout, set_as_default=False)
    except Exception as exc:
        raise DaskError(f"cannot connect to the Dask scheduler at {address}: {exc}") from None
    with client:
        if not client.nthreads():
            try:
                client.wait_for_workers(1, timeout=connect_timeout)
            except TimeoutError:
                raise DaskError(f"the Dask scheduler at {address} has no workers") from None
        yield client


class DaskScanner(ScanBase):
    """Scans files, directories and team databases on a Dask cluster; after :meth:`scan`,
    ``stats`` and :meth:`all_hits` are what a :class:`ScanRunner` would hold."""

    def __init__(
        self,
        scanner: SecretScanner,
        client: Client,
        *,
        partition_bytes: int | None = None,
        **options: Unpack[ScanOptions],
    ) -> None:
        super().__init__(scanner, **options)
        self.client = client
        self.partition_bytes = partition_bytes
        self.plan: Plan | None = None

    def scan(self, paths: Sequence[str], dbs: Sequence[TeamDbSource] = ()) -> None:
        """Scan the named files and directories (which must exist) and team databases.

        :raises TeamDbError: a team database cannot be read.
        :raises DaskError: a task failed (a worker died, memframe is missing on a worker…).
        """
        client: Any = self.client  # parts of distributed's API are untyped
        worker_threads = sum(client.nthreads().values())
        plan = self.plan = plan_scan(
            paths,
            dbs,
            walker=self.walker,
            big_file=self.big_file,
            threads=worker_threads,
            partition_bytes=self.partition_bytes,
        )
        if self.progress.total_bytes is None and not dbs:
            self.progress.total_bytes = plan.file_bytes
        results = self._run(plan.partitions)
        self._merge(plan, results)

    def _run(self, partitions: list[Partition]) -> list[list[Outcome]]:
        distributed = _import_distributed()
        # a fresh copy: the rule set's cached lookups do not pickle
        rules = RuleSet(rules=self.scanner.rules.rules, allowlist=self.scanner.rules.allowlist)
        settings = ScanSettings(
            rules, self.scanner.engine, self.threads, keep_redactions=self.redact_dir is not None
        )
        client: Any = self.client
        futures: list[Any] = [
            client.submit(scan_partition, partition, settings, pure=False)
            for partition in partitions
        ]
        position = {future.key: index for index, future in enumerate(futures)}
        results: list[list[Outcome]] = [[] for _ in partitions]
        try:
            for future in distributed.as_completed(futures, loop=client.loop):
                index = position[future.key]
                try:
                    results[index] = future.result()
                except Exception as exc:
                    raise DaskError(
                        f"a Dask scan task failed: {type(exc).__name__}: {exc}"
                    ) from None
                partition = partitions[index]
                self.progress.add(files=partition.files, nbytes=partition.nbytes)
                future.release()
        finally:
            pending = [future for future in futures if not future.done()]
            if pending:
                client.cancel(pending)
        return results

    # -- merging ---------------------------------------------------------------------------------

    def _merge(self, plan: Plan, results: list[list[Outcome]]) -> None:
        by_file: dict[str, list[Outcome]] = {}
        team: list[TeamDbResult] = []
        for partition, outcomes in zip(plan.partitions, results, strict=True):
            for unit, outcome in zip(partition.units, outcomes, strict=True):
                if isinstance(outcome, TeamDbOutcome):
                    if outcome.result is None:
                        raise TeamDbError(outcome.error or f"{unit}: not scanned")
                    team.append(outcome.result)
                elif not isinstance(unit, TeamDb):
                    by_file.setdefault(unit.file.path, []).append(outcome)
        for item in plan.order:
            if isinstance(item, Skipped):
                self._skipped(item)
                continue
            outcomes = by_file[item.path]
            first = outcomes[0]
            if isinstance(first, TextOutcome):
                self._merge_text(item, first)
            elif isinstance(first, JsonlOutcome):
                self._merge_jsonl(item, first)
            else:
                ranges = [o for o in outcomes if isinstance(o, RangeOutcome)]
                self._merge_ranges(item, ranges)
        for db, result in zip(plan.dbs, team, strict=True):
            self._merge_team(db, result)

    def _done(self, item: FileInput) -> None:
        self.stats.files += 1
        self.stats.bytes += item.size

    def _merge_text(self, item: FileInput, outcome: TextOutcome) -> None:
        if outcome.error is not None:
            self._error(item, outcome.error)
            return
        if self.redact_dir is not None and outcome.spans:
            try:
                with open(item.path, "rb") as handle:
                    text = handle.read().decode("utf-8", "surrogateescape")
            except OSError as exc:
                self._error(item, _message(exc))
                return
            target = redact.copy_path(self.redact_dir, item.display)
            redact.write_text(target, redact_spans(text, outcome.spans), source=item.path)
            self.stats.redacted += 1
        self.hits.extend(outcome.hits)
        self._done(item)

    def _merge_jsonl(self, item: FileInput, outcome: JsonlOutcome) -> None:
        result = outcome.result
        if outcome.error is not None or result is None:
            self._error(item, outcome.error or "not scanned")
            return
        replacements: list[tuple[int, int, bytes]] = []
        if self.redact_dir is not None and (result.records or result.spans):
            try:
                with open(item.path, "rb") as handle:
                    replacements = redaction_replacements(handle, result)
            except OSError as exc:
                self._error(item, _message(exc))
                return
        self.hits.extend(result.hits)
        self._done(item)
        if self.redact_dir is not None and replacements:
            target = redact.copy_path(self.redact_dir, item.display)
            redact.write_replaced(target, item.path, replacements)
            self.stats.redacted += 1

    def _merge_ranges(self, item: FileInput, ranges: list[RangeOutcome]) -> None:
        errors = [r.error for r in ranges if r.error is not None]
        if errors:
            self._error(item, errors[0])
            return
        hits: list[Hit] = []
        spans: list[tuple[int, int]] = []
        check = CrossWindowCheck()
        line_offset = col_offset = 0
        for outcome in ranges:
            for window in outcome.windows:
                for hit, start, end in window.candidates:
                    if check.new(hit, start, end):
                        spans.append((start, end))
                        hits.append(_shift(hit, line_offset, col_offset))
                check.cut(window.next_start)
            line_offset += outcome.newlines
            col_offset = outcome.tail_chars + (0 if outcome.newlines else col_offset)
        self.hits.extend(hits)
        self._done(item)
        if self.redact_dir is not None and spans:
            target = redact.copy_path(self.redact_dir, item.display)
            redact.write_replaced(target, item.path, redact.span_replacements(spans))
            self.stats.redacted += 1


def _shift(hit: Hit, lines: int, columns: int) -> Hit:
    """A hit counted from a range start, placed in its file: ``lines`` lines precede the range
    and ``columns`` characters precede it on its first line."""
    if not lines and not columns:
        return hit
    column, end_column = hit.column, hit.end_column
    if columns and hit.line == 1 and column is not None:
        column += columns
    if columns and hit.end_line == 1 and end_column is not None:
        end_column += columns
    return dataclasses.replace(
        hit,
        line=hit.line + lines,
        end_line=hit.end_line + lines,
        column=column,
        end_column=end_column,
    )
