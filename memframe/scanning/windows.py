"""Huge files in overlapping windows: memory stays bounded whatever the file size.

A byte range is read ``window`` bytes at a time. Each window (but the last) hands over to the next
at a *cut* at least ``overlap`` bytes before its end — after the last newline in the 64 KiB before
that point, else after the last byte that cannot be part of a word, else on a UTF-8 character
boundary. A window reports the findings that start before its cut; the next window starts at the
cut, so every secret shorter than ``overlap`` is seen whole by the window that reports it, and a
finding the next window re-finds inside a secret already reported (same rule, overlapping span) is
dropped. Windows are scanned a few at a time with ``find_many`` (parallel on the native engine).

The native ``find_files`` memory-maps big files, which is fast but makes the whole file resident
(and count in the process's RSS); windows keep the resident set to a few windows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from memframe.scanner import SecretScanner
from memframe.scanning.hits import Hit, char_to_byte, text_hits

WINDOW_BYTES = 8 << 20
OVERLAP_BYTES = 64 << 10
CUT_SEARCH_BYTES = 64 << 10
WINDOWS_PER_BATCH = 2
_NON_WORD = re.compile(rb"[^A-Za-z0-9_\x80-\xff]")


@dataclass(slots=True)
class RangeResult:
    """The hits of a byte range and the absolute byte spans of every secret in it (for
    redaction, suppressed ones included)."""

    hits: list[Hit] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Window:
    pos: int
    data: bytes
    cut: int
    last: bool
    line_base: int
    col_base: int


def find_cut(data: bytes, overlap: int) -> int:
    """Where the next window starts, relative to ``data`` (at most ``len(data) - overlap``)."""
    high = len(data) - overlap
    low = max(1, high - CUT_SEARCH_BYTES)
    newline = data.rfind(b"\n", low, high)
    if newline >= 0:
        return newline + 1
    tail = data[low:high][::-1]
    boundary = _NON_WORD.search(tail)
    if boundary is not None:
        return high - boundary.start()
    cut = high
    while cut > low and 0x80 <= data[cut] < 0xC0:  # not inside a UTF-8 sequence
        cut -= 1
    return cut


def _chars(data: bytes) -> int:
    return len(data.decode("utf-8", "surrogateescape"))


@dataclass(slots=True)
class WindowReader:
    """Reads the windows of a byte range ``WINDOWS_PER_BATCH`` at a time from ``pos`` (a window
    start) up to ``stop``, cutting them as the scan of the whole range from ``end``'s file would;
    ``line_base`` / ``col_base`` count the lines and columns read so far. ``end`` becomes the
    end of the file's data if the file turns out shorter than expected."""

    handle: BinaryIO
    pos: int
    stop: int
    end: int
    window: int = WINDOW_BYTES
    overlap: int = OVERLAP_BYTES
    line_base: int = 0
    col_base: int = 0

    def __post_init__(self) -> None:
        if self.window < 2 * self.overlap + CUT_SEARCH_BYTES:
            raise ValueError("window must exceed twice the overlap plus the cut search")

    def batches(self) -> Iterator[list[Window]]:
        while self.pos < self.stop:
            batch: list[Window] = []
            while len(batch) < WINDOWS_PER_BATCH and self.pos < self.stop:
                window = self._next()
                if window is None:
                    break
                batch.append(window)
            if not batch:
                return
            yield batch
            if self.pos >= self.end:
                return

    def _next(self) -> Window | None:
        pos = self.pos
        self.handle.seek(pos)
        wanted = min(self.window, self.end - pos)
        data = self.handle.read(wanted)
        if not data:
            self.end = pos  # the file shrank while being read
            return None
        last = len(data) < wanted or pos + len(data) >= self.end
        cut = len(data) if last else find_cut(data, self.overlap)
        window = Window(pos, data, cut, last, self.line_base, self.col_base)
        newlines = data.count(b"\n", 0, cut)
        if newlines:
            self.col_base = _chars(data[data.rfind(b"\n", 0, cut) + 1 : cut])
        else:
            self.col_base += _chars(data[:cut])
        self.line_base += newlines
        self.pos += cut
        if last:
            self.end = self.pos
        return window


def window_hits(
    scanner: SecretScanner,
    batch: Sequence[Window],
    *,
    path: str,
    uri: str,
    known_rules: Collection[str],
    threads: int | None = None,
) -> list[list[tuple[Hit, int, int]]]:
    """Per window of ``batch``: the hits of the findings that start before its cut, each with
    its secret's absolute byte span (before the cross-window check)."""
    out: list[list[tuple[Hit, int, int]]] = []
    found_many = scanner.find_many([w.data for w in batch], threads=threads)
    for w, found in zip(batch, found_many, strict=True):
        if not found:
            out.append([])
            continue
        text = w.data.decode("utf-8", "surrogateescape")
        to_byte = char_to_byte(
            text, [o for f in found for o in (f.start, f.secret_start, f.secret_end)]
        )
        kept = [f for f in found if w.last or to_byte[f.start] < w.cut]
        hits = text_hits(
            text,
            kept,
            path=path,
            uri=uri,
            known_rules=known_rules,
            line_base=w.line_base,
            col_base=w.col_base,
        )
        out.append(
            [
                (hit, w.pos + to_byte[f.secret_start], w.pos + to_byte[f.secret_end])
                for hit, f in zip(hits, kept, strict=True)
            ]
        )
    return out


class CrossWindowCheck:
    """Drops a finding re-found inside a secret an earlier window reported (same rule,
    overlapping span); remembers only the secrets that reach past the latest cut."""

    def __init__(self) -> None:
        self._reported: list[tuple[str, int, int]] = []

    def new(self, hit: Hit, start: int, end: int) -> bool:
        if any(r == hit.rule_id and s < end and start < e for r, s, e in self._reported):
            return False
        self._reported.append((hit.rule_id, start, end))
        return True

    def cut(self, next_start: int) -> None:
        self._reported = [r for r in self._reported if r[2] > next_start]


def scan_range(
    scanner: SecretScanner,
    handle: BinaryIO,
    start: int,
    end: int,
    *,
    path: str,
    uri: str,
    known_rules: Collection[str],
    line_base: int = 0,
    threads: int | None = None,
    window: int = WINDOW_BYTES,
    overlap: int = OVERLAP_BYTES,
    on_bytes: Callable[[int], None] | None = None,
) -> RangeResult:
    """Scan bytes ``[start, end)`` of ``handle``; ``line_base`` lines precede ``start``, which
    must be at the start of a line."""
    reader = WindowReader(handle, start, end, end, window, overlap, line_base)
    result = RangeResult()
    check = CrossWindowCheck()
    for batch in reader.batches():
        per_window = window_hits(
            scanner, batch, path=path, uri=uri, known_rules=known_rules, threads=threads
        )
        for w, candidates in zip(batch, per_window, strict=True):
            for hit, secret_start, secret_end in candidates:
                if check.new(hit, secret_start, secret_end):
                    result.hits.append(hit)
                    result.spans.append((secret_start, secret_end))
            check.cut(w.pos + w.cut)
            if on_bytes is not None:
                on_bytes(w.cut)
    return result
