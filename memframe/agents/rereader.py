"""Reading a live transcript that has no incremental reader (a Codex CLI rollout) by reading it
whole again at each run, bounded in size.

The whole file goes through its format's reader (:func:`memframe.transcripts.open_transcript`);
the items (messages and compaction boundaries) already dispatched are counted in the state and
skipped, so each run dispatches only the new ones, as the same events
:func:`memframe.transcripts.events.derive_events` gives for the whole file. Until the turn ends
(``final``) a trailing assistant message is held back: it may still grow. Tool uses wait for
their results across runs (their ids are kept); at the session's end the ones without a result
are released.

A file over :data:`MAX_BYTES` is not read (a problem says so): re-reading it at every event
would cost more than the hook is allowed. A rollout is append-only; a file that was replaced or
became shorter is read again and only items past the count already dispatched are new.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memframe.agents.records import decode_tool_use, encode_tool_use
from memframe.agents.transcript import MAX_PROBLEMS, HookEvent, Increment
from memframe.messages import Message, ToolUseBlock
from memframe.transcripts import TranscriptError, open_transcript
from memframe.transcripts._jsonl import open_binary
from memframe.transcripts.events import (
    Event,
    ToolUseEvent,
    item_events,
)

MAX_BYTES = 32 * 1024 * 1024


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class WholeFileReader:
    """The reader the worker uses for a format without an incremental reader; the same
    interface as :class:`memframe.agents.transcript.IncrementalReader`."""

    def __init__(self, format: str, state: Mapping[str, Any] | None = None) -> None:
        state = state or {}
        self.format = format
        self.items = _int(state.get("items"))  # transcript items already dispatched
        self.cursor = _int(state.get("cursor"))  # the file's size at the last read
        self.line = self.items
        identity = state.get("file")
        self.file: tuple[int, int] | None = (
            (identity[0], identity[1])
            if isinstance(identity, list)
            and len(identity) == 2
            and all(isinstance(v, int) for v in identity)
            else None
        )
        self.tools: dict[str, ToolUseBlock] = {}
        raw_tools = state.get("tools")
        for raw in raw_tools if isinstance(raw_tools, list) else []:
            tool_use = decode_tool_use(raw)
            if tool_use is not None:
                self.tools[tool_use.id] = tool_use

    def to_state(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "items": self.items,
            "cursor": self.cursor,
            "file": list(self.file) if self.file is not None else None,
            "tools": [encode_tool_use(t) for t in self.tools.values()],
        }

    def read(self, path: str | os.PathLike[str], *, final: bool = False) -> Increment:
        out = Increment()
        try:
            handle = open_binary(path)  # a regular file only, without blocking
        except TranscriptError as exc:
            out.problems.append(f"cannot open the transcript: {exc}")
            return out
        with handle:
            stat = os.fstat(handle.fileno())
        identity = (stat.st_dev, stat.st_ino)
        if stat.st_size > MAX_BYTES:
            out.problems.append(
                f"{self.format} transcript {path} is {stat.st_size:,} bytes, over the "
                f"{MAX_BYTES:,} this reader re-reads at each event: not read"
            )
            return out
        if self.file is not None and identity != self.file:
            out.restarted = "replaced"
        elif stat.st_size < self.cursor:
            out.restarted = "truncated"
        try:
            transcript = open_transcript(Path(path), format=self.format)
            items = list(transcript)
        except (TranscriptError, OSError) as exc:
            out.problems.append(f"cannot read the {self.format} transcript: {exc}")
            return out
        out.problems.extend(f"line {p.line}: {p.reason}" for p in transcript.problems)
        del out.problems[MAX_PROBLEMS:]
        end = len(items)
        if not final and end and isinstance(items[-1], Message) and items[-1].role == "assistant":
            end -= 1  # the response may still grow: the next run (or the turn's end) takes it
        start = min(self.items, end)
        for item in items[start:end]:
            out.events.extend(item_events(item, self.tools))
        out.lines = end - start
        out.bytes = max(stat.st_size - self.cursor, 0) if not out.restarted else stat.st_size
        self.items = max(self.items, end)
        self.line = self.items
        self.cursor = stat.st_size
        self.file = identity
        return out

    def finish(self) -> list[HookEvent]:
        """The session ended: every call still without a result."""
        done: list[Event] = [ToolUseEvent(tool_use, None) for tool_use in self.tools.values()]
        self.tools.clear()
        return list(done)
