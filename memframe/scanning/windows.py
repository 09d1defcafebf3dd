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
from collections.abc import Callable, Collection
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
class _Window:
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
    if window < 2 * overlap + CUT_SEARCH_BYTES:
        raise ValueError("window must exceed twice the overlap plus the cut search")
    result = RangeResult()
    pos = start
    col_base = 0
    reported: list[tuple[str, int, int]] = []  # (rule, secret start, end) still near a cut
    while pos < end:
        batch: list[_Window] = []
        while len(batch) < WINDOWS_PER_BATCH and pos < end:
            handle.seek(pos)
            wanted = min(window, end - pos)
            data = handle.read(wanted)
            if not data:
                end = pos  # the file shrank while being read
                break
            last = len(data) < wanted or pos + len(data) >= end
            cut = len(data) if last else find_cut(data, overlap)
            batch.append(_Window(pos, data, cut, last, line_base, col_base))
            newlines = data.count(b"\n", 0, cut)
            if newlines:
                col_base = _chars(data[data.rfind(b"\n", 0, cut) + 1 : cut])
            else:
                col_base += _chars(data[:cut])
            line_base += newlines
            pos += cut
            if last:
                end = pos
        found_many = scanner.find_many([w.data for w in batch], threads=threads)
        for w, found in zip(batch, found_many, strict=True):
            if found:
                text = w.data.decode("utf-8", "surrogateescape")
                to_byte = char_to_byte(
                    text, [o for f in found for o in (f.start, f.secret_start, f.secret_end)]
                )
                kept = []
                for f in found:
                    if not w.last and to_byte[f.start] >= w.cut:
                        continue  # the next window reports it
                    secret_start = w.pos + to_byte[f.secret_start]
                    secret_end = w.pos + to_byte[f.secret_end]
                    if any(
                        rule == f.rule_id and s < secret_end and secret_start < e
                        for rule, s, e in reported
                    ):
                        continue  # re-found inside a secret an earlier window reported
                    kept.append(f)
                    result.spans.append((secret_start, secret_end))
                    reported.append((f.rule_id, secret_start, secret_end))
                result.hits.extend(
                    text_hits(
                        text,
                        kept,
                        path=path,
                        uri=uri,
                        known_rules=known_rules,
                        line_base=w.line_base,
                        col_base=w.col_base,
                    )
                )
            next_start = w.pos + w.cut
            reported = [r for r in reported if r[2] > next_start]
            if on_bytes is not None:
                on_bytes(w.cut)
    return result
