"""Agent transcripts (Claude Code sessions, Codex CLI rollouts) read defensively, as a stream.

``open_transcript(path)`` checks the file and detects its format; iterating the returned
``Transcript`` streams ``Message``s and ``CompactBoundary``s. Nothing in a file makes reading
raise once it is open: bad lines become ``Transcript.problems``, ignored records are counted.

A file with no records at all (empty, or blank lines only) is an empty transcript: Claude Code
creates a session file before it writes its first record, and a hook may look at it then. With
no record to tell the format, it is taken as ``claude-code``. A file whose lines are all
invalid, or whose first 50 records match no known format, is not a transcript
(``TranscriptError``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, TypeAlias, get_args

from memframe.messages import Message
from memframe.transcripts import claude_code, codex
from memframe.transcripts._jsonl import (
    DEFAULT_MAX_RECORD_BYTES,
    Problem,
    ReadStats,
    TranscriptError,
    iter_records,
    open_binary,
)
from memframe.transcripts.claude_code import CompactBoundary

__all__ = [
    "FORMATS",
    "CompactBoundary",
    "Format",
    "Problem",
    "Transcript",
    "TranscriptError",
    "TranscriptItem",
    "detect_format",
    "open_transcript",
]

Format: TypeAlias = Literal["claude-code", "codex"]
FORMATS: tuple[Format, ...] = get_args(Format)
TranscriptItem: TypeAlias = Message | CompactBoundary
DETECT_RECORDS = 50

_Reader = Callable[..., Iterator[TranscriptItem]]
_READERS: dict[Format, _Reader] = {"claude-code": claude_code.read, "codex": codex.read}


class Transcript:
    """One transcript file; iterate it (again and again: each pass re-reads the file).

    ``problems``, ``skipped_sidechain``, ``skipped_abandoned`` (records of rewound-away
    branches) and ``skipped_records`` (ignored record types → count) describe the latest pass
    and fill while it runs.
    """

    def __init__(
        self,
        path: Path,
        format: Format,
        *,
        include_sidechains: bool = False,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    ) -> None:
        self.path = path
        self.format: Format = format
        self.include_sidechains = include_sidechains
        self.max_record_bytes = max_record_bytes
        self._stats = ReadStats()

    @property
    def problems(self) -> list[Problem]:
        return self._stats.problems

    @property
    def skipped_sidechain(self) -> int:
        return self._stats.skipped_sidechain

    @property
    def skipped_abandoned(self) -> int:
        return self._stats.skipped_abandoned

    @property
    def skipped_records(self) -> dict[str, int]:
        return self._stats.skipped_records

    def __iter__(self) -> Iterator[TranscriptItem]:
        self._stats = ReadStats()
        return _READERS[self.format](
            self.path,
            self._stats,
            include_sidechains=self.include_sidechains,
            max_record_bytes=self.max_record_bytes,
        )

    def __repr__(self) -> str:
        return f"Transcript({str(self.path)!r}, format={self.format!r})"


def detect_format(
    path: str | os.PathLike[str], *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
) -> Format:
    """The format of the first of the first 50 valid records that belongs to one."""
    problems: list[Problem] = []
    seen = 0
    for _, record in iter_records(path, max_record_bytes=max_record_bytes, problems=problems):
        if codex.looks_like(record):
            return "codex"
        if claude_code.looks_like(record):
            return "claude-code"
        seen += 1
        if seen >= DETECT_RECORDS:
            break
    if seen == 0 and not problems:
        return "claude-code"
    detail = f"{seen} records in no known format" if seen else f"{len(problems)} invalid lines"
    raise TranscriptError(
        f"{os.fspath(path)}: not a transcript in any known format ({', '.join(FORMATS)}): {detail}"
    )


def open_transcript(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    include_sidechains: bool = False,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> Transcript:
    """Check that ``path`` is a readable transcript and return it, ready to iterate.

    ``format`` is ``"claude-code"``, ``"codex"`` or ``None`` (detect from the first records).
    ``include_sidechains`` keeps Claude Code sub-agent records (marked ``is_sidechain``).
    Raises ``TranscriptError`` (a ``ValueError``) naming the path when the file is missing, a
    directory, unreadable or not a transcript, or ``format`` is unknown.
    """
    file_path = Path(path)
    if format is not None and format not in FORMATS:
        raise TranscriptError(
            f"{file_path}: unknown transcript format {format!r} (known: {', '.join(FORMATS)})"
        )
    open_binary(file_path).close()
    resolved: Format = (
        format
        if format is not None
        else detect_format(file_path, max_record_bytes=max_record_bytes)
    )
    return Transcript(
        file_path,
        resolved,
        include_sidechains=include_sidechains,
        max_record_bytes=max_record_bytes,
    )
