"""Runs a scan: walks the inputs and sends each file the fastest way that keeps memory bounded.

- Files up to ``big_file`` bytes go in batches to ``SecretScanner.find_files`` (native: read or
  memory-mapped and scanned in parallel with the GIL released), on a worker thread so the walk
  goes on meanwhile; the few files with findings are read again to place them.
- Bigger files are scanned in overlapping windows (:mod:`memframe.scanning.windows`).
- ``*.jsonl`` files are streamed record by record (:mod:`memframe.scanning.jsonl`).
- Team databases are streamed entry by entry (:mod:`memframe.scanning.teamdb`).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict
from urllib.parse import quote

from memframe.scanner import FileFindings, Finding, SecretScanner, redact_spans
from memframe.scanning import redact
from memframe.scanning.hits import Hit, text_hits
from memframe.scanning.jsonl import JsonlScanner, redaction_replacements
from memframe.scanning.progress import Progress
from memframe.scanning.teamdb import TeamDbResult, TeamDbSource, scan_team_db, source_name
from memframe.scanning.walk import FileInput, Skipped, Walker
from memframe.scanning.windows import scan_range

BIG_FILE_BYTES = 32 << 20
BATCH_FILES = 512
BATCH_BYTES = 64 << 20
MAX_BATCHES_IN_FLIGHT = 2


@dataclass(slots=True)
class ScanStats:
    files: int = 0
    bytes: int = 0
    entries: int = 0
    binary: int = 0
    ignored: int = 0
    redacted: int = 0
    errors: list[str] = field(default_factory=list)


def file_uri(display: str) -> str:
    """The SARIF artifact URI of a file: relative paths stay relative, others are file URIs."""
    if os.path.isabs(display):
        return Path(display).as_uri()
    return quote(display, safe="/")


@dataclass(slots=True)
class Placed:
    """A file's findings located: its text, the findings (character offsets) and their hits."""

    text: str
    findings: list[Finding]
    hits: list[Hit]


def place_file(scanner: SecretScanner, item: FileInput, known_rules: frozenset[str]) -> Placed:
    """Read a file with findings again and report them where they are (None of them when the
    file changed since). :raises OSError: the file cannot be read."""
    with open(item.path, "rb") as handle:
        data = handle.read()
    found = scanner.find(data)
    if not found:
        return Placed("", [], [])
    text = data.decode("utf-8", "surrogateescape")
    hits = text_hits(
        text, found, path=item.display, uri=file_uri(item.display), known_rules=known_rules
    )
    return Placed(text, found, hits)


class ScanOptions(TypedDict, total=False):
    """The options of :class:`ScanBase` (for subclasses that pass them through)."""

    threads: int | None
    redact_dir: Path | None
    use_ignore: bool
    big_file: int
    progress: Progress | None
    cwd: str | None


class ScanBase:
    """What every scan keeps: the scanner and its options, the walker, the hits and the stats."""

    def __init__(
        self,
        scanner: SecretScanner,
        *,
        threads: int | None = None,
        redact_dir: Path | None = None,
        use_ignore: bool = True,
        big_file: int = BIG_FILE_BYTES,
        progress: Progress | None = None,
        cwd: str | None = None,
    ) -> None:
        self.scanner = scanner
        self.threads = threads
        self.redact_dir = redact_dir
        self.big_file = big_file
        self.progress = progress if progress is not None else Progress(enabled=False)
        self.known_rules = frozenset(scanner.rules.ids())
        exclude = (str(redact_dir),) if redact_dir is not None else ()
        self.walker = Walker(use_ignore=use_ignore, exclude=exclude, cwd=cwd)
        self.hits: list[Hit] = []
        self.team_hits: list[Hit] = []
        self.stats = ScanStats()

    def _skipped(self, item: Skipped) -> None:
        if item.reason == "binary":
            self.stats.binary += 1
        elif item.reason == "ignored":
            self.stats.ignored += 1
        else:
            self.stats.errors.append(f"{item.display}: {item.reason.removeprefix('error: ')}")

    def _error(self, item: FileInput, error: OSError | str) -> None:
        message = error if isinstance(error, str) else (error.strerror or str(error))
        self.stats.errors.append(f"{item.display}: {message}")

    def _merge_team(self, source: TeamDbSource, result: TeamDbResult) -> None:
        """Take a team database's result: its hits, its counts, redacted copies of its entries."""
        self.team_hits.extend(result.hits)
        self.stats.entries += result.entries
        self.stats.bytes += result.bytes
        if self.redact_dir is not None:
            for (repo, key), (text, spans) in result.redactions.items():
                target = redact.entry_path(self.redact_dir, source_name(source), repo, key)
                redact.write_text(target, redact_spans(text, spans))
                self.stats.redacted += 1

    def all_hits(self) -> list[Hit]:
        """File hits ordered by path and position, then team entry hits in database order."""
        files = sorted(
            self.hits, key=lambda h: (h.path, h.line, h.column or 0, h.json_path or "", h.rule_id)
        )
        return files + self.team_hits


class ScanRunner(ScanBase):
    """Scans files, directories and team databases with one scanner; collects every hit
    (``allowed`` ones included: the caller filters)."""

    # -- files ---------------------------------------------------------------------------------

    def scan_paths(self, paths: Sequence[str]) -> None:
        """Scan the named files and directories (which must exist)."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memframe-scan")
        in_flight: deque[tuple[list[FileInput], Future[list[FileFindings]]]] = deque()
        batch: list[FileInput] = []
        batch_bytes = 0

        def submit() -> None:
            nonlocal batch, batch_bytes
            if batch:
                names = [item.path for item in batch]
                future = executor.submit(self.scanner.find_files, names, threads=self.threads)
                in_flight.append((batch, future))
                batch, batch_bytes = [], 0
            while len(in_flight) > (MAX_BATCHES_IN_FLIGHT - 1):
                self._collect(*in_flight.popleft())

        seen: set[str] = set()
        try:
            for named in paths:
                for item in self.walker.walk(named):
                    if isinstance(item, Skipped):
                        self._skipped(item)
                        continue
                    if item.path in seen:
                        continue  # named twice, or named and inside a named directory
                    seen.add(item.path)
                    if item.jsonl:
                        self._scan_jsonl(item)
                    elif item.size > self.big_file:
                        self._scan_big(item)
                    else:
                        batch.append(item)
                        batch_bytes += item.size
                        if len(batch) >= BATCH_FILES or batch_bytes >= BATCH_BYTES:
                            submit()
            submit()
            while in_flight:
                self._collect(*in_flight.popleft())
        finally:
            executor.shutdown(wait=True, cancel_futures=True)

    def _done(self, item: FileInput) -> None:
        self.stats.files += 1
        self.stats.bytes += item.size
        self.progress.add(files=1, nbytes=item.size)

    def _collect(self, batch: list[FileInput], future: Future[list[FileFindings]]) -> None:
        for item, result in zip(batch, future.result(), strict=True):
            if result.error is not None:
                self._error(item, result.error)
                continue
            if result.findings:
                try:
                    self._place(item)
                except OSError as exc:
                    self._error(item, exc)
                    continue
            self._done(item)

    def _place(self, item: FileInput) -> None:
        placed = place_file(self.scanner, item, self.known_rules)
        if not placed.findings:
            return
        self.hits.extend(placed.hits)
        if self.redact_dir is not None:
            spans = [(f.secret_start, f.secret_end) for f in placed.findings]
            redacted = redact_spans(placed.text, spans)
            target = redact.copy_path(self.redact_dir, item.display)
            redact.write_text(target, redacted, source=item.path)
            self.stats.redacted += 1

    def _scan_big(self, item: FileInput) -> None:
        try:
            with open(item.path, "rb") as handle:
                result = scan_range(
                    self.scanner,
                    handle,
                    0,
                    item.size,
                    path=item.display,
                    uri=file_uri(item.display),
                    known_rules=self.known_rules,
                    threads=self.threads,
                    on_bytes=lambda n: self.progress.add(nbytes=n),
                )
        except OSError as exc:
            self._error(item, exc)
            return
        self.hits.extend(result.hits)
        self.stats.files += 1
        self.stats.bytes += item.size
        self.progress.add(files=1)
        if self.redact_dir is not None and result.spans:
            target = redact.copy_path(self.redact_dir, item.display)
            redact.write_replaced(target, item.path, redact.span_replacements(result.spans))
            self.stats.redacted += 1

    def _scan_jsonl(self, item: FileInput) -> None:
        jsonl = JsonlScanner(
            self.scanner,
            known_rules=self.known_rules,
            threads=self.threads,
            keep_redactions=self.redact_dir is not None,
            on_bytes=lambda n: self.progress.add(nbytes=n),
        )
        try:
            with open(item.path, "rb") as handle:
                result = jsonl.scan(handle, path=item.display, uri=file_uri(item.display))
                replacements = (
                    redaction_replacements(handle, result) if self.redact_dir is not None else []
                )
        except OSError as exc:
            self._error(item, exc)
            return
        self.hits.extend(result.hits)
        self.stats.files += 1
        self.stats.bytes += item.size
        self.progress.add(files=1)
        if self.redact_dir is not None and replacements:
            target = redact.copy_path(self.redact_dir, item.display)
            redact.write_replaced(target, item.path, replacements)
            self.stats.redacted += 1

    # -- team databases ------------------------------------------------------------------------

    def scan_team_db(self, path: TeamDbSource) -> None:
        """Scan a team database (:class:`~memframe.scanning.teamdb.TeamDbError` when it cannot
        be read)."""

        def on_entries(count: int, size: int) -> None:
            self.progress.add(nbytes=size)

        result = scan_team_db(
            self.scanner,
            path,
            known_rules=self.known_rules,
            threads=self.threads,
            keep_redactions=self.redact_dir is not None,
            on_entries=on_entries,
        )
        self._merge_team(path, result)
