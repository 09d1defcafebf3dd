"""Reading a live Claude Code transcript incrementally.

Each run reads from a byte cursor to the last complete line (a line still being written is left
for the next run), so a long session is never read twice. Records become messages with the
Claude Code reader's own record parsing, and messages become the same events
:func:`memframe.transcripts.events.derive_events` gives for a whole file:

- records become messages with the whole-file reader's ``Assembler``
  (:mod:`memframe.transcripts.claude_code`): the same record types, queued messages, and
  sub-agents summarised onto their calls' results (side-chain records are not messages; a 2.x
  sub-agent's own file is read when its call's result arrives);
- the assistant records one response was split into are merged: the last assistant message of
  an increment is held back (and kept in the reader's state) until a record that does not
  continue it arrives, or the turn ends (``final``), so a response split across two runs is still
  one message;
- tool uses wait (across runs) for their results, joined by tool-use id; a successful file read
  also gives a ``FileReadEvent``;
- a compaction boundary gives a ``CompactEvent``;
- a rewind (a record whose parent is an earlier record, not the last one) gives a
  :class:`RewindEvent`: the messages of the abandoned branch leave the history; a record of
  tool results is never one (Claude Code 2.x parents each result to its call, so the results
  of parallel calls point back past the last record);
- a transcript path that is not a regular file (a FIFO, a device, a directory) is refused at
  once, without blocking;
- a record seen before (same ``uuid``) is skipped, so a transcript that was replaced or
  truncated is read again from its start without repeating what was already dispatched.

The file's identity (device, inode) is kept with the cursor: another file under the same name,
or a file shorter than the cursor, restarts the reading at byte 0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import orjson

from memframe.agents.records import (
    decode_message,
    decode_tool_use,
    encode_message,
    encode_tool_use,
)
from memframe.messages import Message, MessageError, ToolUseBlock
from memframe.transcripts._jsonl import ReadStats, TranscriptError, iter_lines, open_binary
from memframe.transcripts.claude_code import Assembler, answers_tool_use, boundary_of
from memframe.transcripts.events import (
    CompactEvent,
    Event,
    ToolUseEvent,
    item_events,
)

MAX_RECORD_BYTES = 64 * 1024 * 1024  # as the whole-file reader
MAX_MARKS = 2_000  # record uuids remembered (duplicates, rewind points)
MAX_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class RewindEvent:
    """The user went back in the conversation: keep only the first ``keep`` messages of the
    history (counted since the last compaction)."""

    keep: int


HookEvent: TypeAlias = Event | RewindEvent


@dataclass
class Increment:
    """What one read found."""

    events: list[HookEvent] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)
    restarted: str | None = None  # "replaced" or "truncated" when reading started again at 0
    skipped_sidechain: int = 0
    duplicates: int = 0


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class IncrementalReader:
    """The reading position in one transcript and what carries over between increments.

    Build it from the state a previous run saved (:meth:`to_state`), call :meth:`read`, then
    save :meth:`to_state` again once the events were dispatched.
    """

    def __init__(self, state: Mapping[str, Any] | None = None) -> None:
        state = state or {}
        self.cursor = max(0, _int(state.get("cursor")))
        self.line = max(0, _int(state.get("line")))
        identity = state.get("file")
        self.file: tuple[int, int] | None = (
            (identity[0], identity[1])
            if isinstance(identity, list)
            and len(identity) == 2
            and all(isinstance(v, int) for v in identity)
            else None
        )
        self.emitted = max(0, _int(state.get("emitted")))
        self.last_uuid = _str(state.get("last_uuid"))
        marks = state.get("marks")
        self.marks: dict[str, int] = (
            {k: v for k, v in marks.items() if isinstance(v, int)}
            if isinstance(marks, dict)
            else {}
        )
        tools = state.get("tools")
        self.tools: dict[str, ToolUseBlock] = {}
        for raw in tools if isinstance(tools, list) else []:
            tool_use = decode_tool_use(raw)
            if tool_use is not None:
                self.tools[tool_use.id] = tool_use
        self._stats = ReadStats()
        self._assembler = Assembler(self._stats, known_calls=self.tools)
        pending = state.get("pending")
        if isinstance(pending, Mapping):
            try:
                self._assembler.pending = decode_message(pending)
            except MessageError:
                self._assembler.pending = None

    @property
    def pending(self) -> Message | None:
        """The assistant message held back until the next record shows it is complete."""
        return self._assembler.pending

    def to_state(self) -> dict[str, Any]:
        return {
            "cursor": self.cursor,
            "line": self.line,
            "file": list(self.file) if self.file is not None else None,
            "emitted": self.emitted,
            "last_uuid": self.last_uuid,
            "marks": self.marks,
            "pending": encode_message(self.pending) if self.pending is not None else None,
            "tools": [encode_tool_use(t) for t in self.tools.values()],
        }

    # -- reading -------------------------------------------------------------------------------

    def read(self, path: str | os.PathLike[str], *, final: bool = False) -> Increment:
        """The events of the complete lines after the cursor. With ``final`` (the turn or the
        session ended) a held-back assistant message is released too. A missing file is an
        empty increment."""
        out = Increment()
        try:
            # a regular file only, opened without blocking (a FIFO would hang the worker)
            handle = open_binary(path)
        except TranscriptError as exc:
            out.problems.append(f"cannot open the transcript: {exc}")
            if final:
                self._release(out)
            return out
        with handle:
            stat = os.fstat(handle.fileno())
            identity = (stat.st_dev, stat.st_ino)
            if self.file is not None and identity != self.file:
                out.restarted = "replaced"
            elif stat.st_size < self.cursor:
                out.restarted = "truncated"
            if out.restarted:
                self.cursor = 0
                self.line = 0
            self.file = identity
            self._assembler.runs.transcript = Path(path)
            handle.seek(self.cursor)
            self._read_lines(handle, out)
        if final:
            self._release(out)
        out.problems.extend(f"line {p.line}: {p.reason}" for p in self._stats.problems)
        out.problems.extend(self._assembler.runs.problems)
        del out.problems[MAX_PROBLEMS:]
        out.skipped_sidechain = self._stats.skipped_sidechain
        self._stats.problems.clear()
        self._stats.skipped_sidechain = 0
        self._stats.skipped_records.clear()
        self._assembler.runs.problems.clear()
        return out

    def _read_lines(self, handle: Any, out: Increment) -> None:
        # complete lines only: a line still being written is read by the next run
        for line in iter_lines(
            handle, MAX_RECORD_BYTES, first_line=self.line + 1, complete_only=True
        ):
            self.line = line.number
            out.lines += 1
            consumed = line.end + 1 - self.cursor
            self.cursor = line.end + 1
            out.bytes += consumed
            if line.data is None:
                self._stats.problem(self.line, "line longer than the record limit; skipped")
            else:
                self._line(line.data, out)

    def _line(self, line: bytes, out: Increment) -> None:
        if not line.strip():
            return
        if self.line == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            self._stats.problem(self.line, f"invalid JSON: {exc}")
            return
        if not isinstance(record, dict):
            self._stats.problem(self.line, "expected a JSON object")
            return
        self._record(record, out)

    # -- records -------------------------------------------------------------------------------

    def _length(self) -> int:
        """Messages in the history once the held-back one is out."""
        return self.emitted + (1 if self.pending is not None else 0)

    def _mark(self, uuid: str | None, length: int) -> None:
        if uuid is None:
            return
        self.marks[uuid] = length
        if len(self.marks) > MAX_MARKS:
            for key in list(self.marks)[: len(self.marks) - MAX_MARKS]:
                del self.marks[key]

    def _record(self, record: dict[str, Any], out: Increment) -> None:
        what = self._assembler.classify(record)
        if what == "sidechain":
            self._assembler.sidechain(record, self.line)
            return
        if not isinstance(record.get("type"), str):
            return
        uuid = _str(record.get("uuid"))
        if uuid is not None:
            if uuid in self.marks:
                out.duplicates += 1
                return
            parent = _str(record.get("parentUuid"))
            if (
                parent is not None
                and self.last_uuid is not None
                and parent != self.last_uuid
                and parent in self.marks
                and not answers_tool_use(record)  # a result of one of parallel calls
            ):
                self._rewind(self.marks[parent], out)
            self.last_uuid = uuid
        if what == "boundary":
            self._release(out, tools=False)
            out.events.append(CompactEvent(boundary_of(record, self.line)))
            self.emitted = 0
            self.marks.clear()
        elif what == "message":
            message = self._assembler.decode(record, self.line)
            if message is not None:
                for done in self._assembler.add(message):
                    self._emit(done, out)
        self._mark(uuid, self._length())

    def _rewind(self, keep: int, out: Increment) -> None:
        self._release(out, tools=False)
        if keep < self.emitted:
            out.events.append(RewindEvent(keep))
            self.emitted = keep
            self.tools.clear()  # calls of the abandoned branch never get their results

    def _emit(self, message: Message, out: Increment) -> None:
        out.events.extend(item_events(message, self.tools))
        self.emitted += 1

    def _release(self, out: Increment, *, tools: bool = False) -> None:
        """Emit the held-back message; with ``tools``, also the calls that never got a result."""
        for pending in self._assembler.flush():
            self._emit(pending, out)
        if tools:
            for tool_use in self.tools.values():
                out.events.append(ToolUseEvent(tool_use, None))
            self.tools.clear()

    def finish(self) -> list[HookEvent]:
        """The session ended: the held-back message and every call still without a result."""
        out = Increment()
        self._release(out, tools=True)
        return out.events
