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
from typing import Any, BinaryIO

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


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a file: its 1-based ``number``, byte offsets ``[start, end)`` without the
    newline, its bytes (``None`` when it is longer than the limit: never held in memory), and
    whether a newline ended it (only the file's last line may lack one)."""

    number: int
    start: int
    end: int
    data: bytes | None
    terminated: bool


def iter_lines(
    handle: BinaryIO,
    max_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    *,
    chunk_size: int = CHUNK_SIZE,
    first_line: int = 1,
    complete_only: bool = False,
) -> Iterator[Line]:
    """Every line of ``handle`` from its current position, in bounded memory: the one bounded
    line reader of memframe (transcripts, the hook's incremental reader, the JSONL scanner).

    Offsets count from where ``handle`` was when the call started (``handle.tell()``). A line
    longer than ``max_bytes`` is discarded chunk by chunk (``data`` is ``None``). With
    ``complete_only`` a last line that no newline ended yet is not yielded: a file still being
    written is read up to its last complete line."""
    if max_bytes < 1 or chunk_size < 1:
        raise ValueError("max_bytes and chunk_size must be positive")
    try:
        origin = handle.tell()
    except (OSError, ValueError):
        origin = 0
    number = first_line
    line_start = origin
    length = 0
    pending: list[bytes] = []
    overlong = False
    while chunk := handle.read(chunk_size):
        parts = chunk.split(b"\n")
        for index, part in enumerate(parts):
            length += len(part)
            if not overlong:
                pending.append(part)
                if length > max_bytes:
                    overlong = True
                    pending = []
            if index == len(parts) - 1:
                break  # the line continues in the next chunk
            end = line_start + length
            yield Line(number, line_start, end, None if overlong else b"".join(pending), True)
            number += 1
            line_start = end + 1
            length = 0
            pending = []
            overlong = False
    if length and not complete_only:
        data = None if overlong else b"".join(pending)
        yield Line(number, line_start, line_start + length, data, False)


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
    with open_binary(path) as handle:
        for line in iter_lines(handle, max_record_bytes, chunk_size=chunk_size):
            if line.data is None:
                if problems is not None:
                    problems.append(
                        Problem(
                            line.number,
                            f"line of {line.end - line.start} bytes exceeds "
                            f"max_record_bytes={max_record_bytes}; skipped",
                        )
                    )
                continue
            result = _parse_line(line.data, line.number, at_eof=not line.terminated)
            if isinstance(result, str):
                if problems is not None:
                    problems.append(Problem(line.number, result))
            elif result is not None:
                yield line.number, result


def _parse_line(
    line: bytes | bytearray, line_no: int, *, at_eof: bool
) -> dict[str, Any] | str | None:
    """``None`` for a blank line, the object, or the reason the line is bad."""
    if not line or line.isspace():
        return None
    if line_no == 1 and line.startswith(_BOM):
        line = line[len(_BOM) :]
    return _decode(line, at_eof=at_eof)
