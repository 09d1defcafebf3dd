"""Streaming JSON-lines reading with per-line problems instead of exceptions.

The file is read in fixed-size binary chunks, so memory stays bounded by ``max_record_bytes``
plus one chunk however large the file is; a line longer than ``max_record_bytes`` is discarded
chunk by chunk without ever being held whole.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024
CHUNK_SIZE = 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_JSON_TYPE_NAMES = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


class TranscriptError(ValueError):
    """A file cannot be read as a transcript at all (missing, a directory, unreadable, other)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """A line that was skipped, and why (``line`` is 1-based)."""

    line: int
    reason: str


@dataclass(slots=True)
class ReadStats:
    """What one pass over a transcript skipped; shared by the format readers."""

    problems: list[Problem] = field(default_factory=list)
    skipped_sidechain: int = 0
    skipped_abandoned: int = 0
    skipped_records: dict[str, int] = field(default_factory=dict)

    def skip(self, kind: str) -> None:
        self.skipped_records[kind] = self.skipped_records.get(kind, 0) + 1

    def problem(self, line: int, reason: str) -> None:
        self.problems.append(Problem(line, reason))


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def open_binary(path: str | os.PathLike[str]) -> io.BufferedReader:
    """Open ``path`` for binary reading, turning OS errors into ``TranscriptError``.

    Only a regular file is a transcript: a directory, FIFO, device or socket is refused at once.
    The open itself never blocks (``O_NONBLOCK``: a FIFO without a writer would otherwise wait
    forever, holding whatever lock the caller holds)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise TranscriptError(f"{os.fspath(path)}: is a directory, not a transcript file") from None
    except FileNotFoundError:
        raise TranscriptError(f"{os.fspath(path)}: no such file") from None
    except PermissionError:
        raise TranscriptError(f"{os.fspath(path)}: permission denied") from None
    except OSError as exc:
        raise TranscriptError(f"{os.fspath(path)}: cannot open ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise TranscriptError(f"{os.fspath(path)}: is {_kind(mode)}, not a transcript file")
        os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def _decode(data: bytes | bytearray, *, at_eof: bool) -> dict[str, Any] | str:
    """One line → its object, or the reason it is not a JSON object."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            bytes(data).decode("utf-8")
        except UnicodeDecodeError as uni:
            return f"invalid UTF-8 at byte {uni.start}"
        if at_eof:
            return f"invalid JSON on the last line (truncated write?): {exc}"
        return f"invalid JSON: {exc}"
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {_JSON_TYPE_NAMES.get(type(obj), 'a value')}"
    return obj


def iter_records(
    path: str | os.PathLike[str],
    *,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    problems: list[Problem] | None = None,
    chunk_size: int = CHUNK_SIZE,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_no, obj)`` for every JSON-object line of ``path``.

    Blank lines are ignored. Every other line that is not a JSON object (invalid or truncated
    JSON, invalid UTF-8, an array or scalar, longer than ``max_record_bytes``) is appended to
    ``problems`` (when given) and skipped. Raises ``TranscriptError`` if the file cannot be opened.
    """
    if max_record_bytes < 1 or chunk_size < 1:
        raise ValueError("max_record_bytes and chunk_size must be positive")

    def bad(line_no: int, reason: str) -> None:
        if problems is not None:
            problems.append(Problem(line_no, reason))

    def too_long(line_no: int, length: int) -> None:
        bad(line_no, f"line of {length} bytes exceeds max_record_bytes={max_record_bytes}; skipped")

    with open_binary(path) as handle:
        line_no = 1
        pending = bytearray()  # the start of a line that continues into the next chunk
        overlong = -1  # bytes seen so far of a line being discarded; -1 when not discarding
        while chunk := handle.read(chunk_size):
            view = memoryview(chunk)
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                if overlong >= 0:
                    too_long(line_no, overlong + end - start)
                    overlong = -1
                elif len(pending) + end - start > max_record_bytes:
                    too_long(line_no, len(pending) + end - start)
                    pending = bytearray()
                else:
                    line: bytes | bytearray
                    if pending:
                        pending += view[start:end]
                        line, pending = pending, bytearray()
                    else:
                        line = chunk[start:end]
                    result = _parse_line(line, line_no, at_eof=False)
                    if isinstance(result, str):
                        bad(line_no, result)
                    elif result is not None:
                        yield line_no, result
                line_no += 1
                start = end + 1
            rest = len(chunk) - start
            if overlong >= 0:
                overlong += rest
            elif len(pending) + rest > max_record_bytes:
                overlong = len(pending) + rest
                pending = bytearray()
            elif rest:
                pending += view[start:]
        if overlong >= 0:
            too_long(line_no, overlong)
        elif pending:
            result = _parse_line(pending, line_no, at_eof=True)
            if isinstance(result, str):
                bad(line_no, result)
            elif result is not None:
                yield line_no, result


def _parse_line(
    line: bytes | bytearray, line_no: int, *, at_eof: bool
) -> dict[str, Any] | str | None:
    """``None`` for a blank line, the object, or the reason the line is bad."""
    if not line or line.isspace():
        return None
    if line_no == 1 and line.startswith(_BOM):
        line = line[len(_BOM) :]
    return _decode(line, at_eof=at_eof)
