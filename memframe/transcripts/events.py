"""Lifecycle events derived from a transcript, in the order an agent would have raised them.

``derive_events`` turns a stream of transcript items into the events layers react to
(``Session.dispatch`` feeds them to the hooks): every message, each finished tool call joined
with its result by tool-use id, file reads, the end of each query loop (an assistant response
without tool calls) and compactions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeAlias

from memframe.messages import Message, ToolResultBlock, ToolUseBlock
from memframe.transcripts import CompactBoundary, TranscriptItem

__all__ = [
    "CompactEvent",
    "Event",
    "FileReadEvent",
    "MessageEvent",
    "StopEvent",
    "ToolUseEvent",
    "derive_events",
    "is_file_read",
    "strip_read_decorations",
]


@dataclass(frozen=True, slots=True)
class MessageEvent:
    message: Message


@dataclass(frozen=True, slots=True)
class ToolUseEvent:
    """A tool call and its result (``None`` when the transcript never got one)."""

    tool_use: ToolUseBlock
    result: ToolResultBlock | None


@dataclass(frozen=True, slots=True)
class FileReadEvent:
    path: str
    content: str | None


@dataclass(frozen=True, slots=True)
class StopEvent:
    """The query loop ended with ``message``: an assistant response without tool calls."""

    message: Message


@dataclass(frozen=True, slots=True)
class CompactEvent:
    boundary: CompactBoundary


Event: TypeAlias = MessageEvent | ToolUseEvent | FileReadEvent | StopEvent | CompactEvent

# Tool names (lower-cased, without '_' and '-', after any "mcp__server__" prefix) that read a file.
_READ_TOOLS = frozenset({"read", "readfile", "fileread", "readtextfile", "viewfile"})
# Claude Code's Read numbers lines like `cat -n`: right-aligned number, then '→' (or a tab).
_LINE_PREFIX = re.compile(r"^ *\d+(?:→|\t)")
_REMINDER_OPEN, _REMINDER_CLOSE = "<system-reminder>", "</system-reminder>"


def is_file_read(tool_use: ToolUseBlock) -> str | None:
    """The path ``tool_use`` reads, when it is a file-read tool (``Read``, ``read_file``…)."""
    name = tool_use.name.rsplit("__", 1)[-1].lower().replace("_", "").replace("-", "")
    if name not in _READ_TOOLS:
        return None
    for key in ("file_path", "path"):
        path = tool_use.input.get(key)
        if isinstance(path, str) and path:
            return path
    return None


def strip_read_decorations(text: str) -> str:
    """A read tool's result → the file text: trailing ``<system-reminder>`` notes removed, and
    ``cat -n`` line-number prefixes removed when every non-empty line has one."""
    while (trimmed := text.rstrip()).endswith(_REMINDER_CLOSE):
        start = trimmed.rfind(_REMINDER_OPEN)
        if start < 0:
            break
        text = trimmed[:start].rstrip("\n")
    lines = text.split("\n")
    if not any(lines) or not all(_LINE_PREFIX.match(line) for line in lines if line):
        return text
    return "\n".join(_LINE_PREFIX.sub("", line, count=1) for line in lines)


def item_events(item: TranscriptItem, pending: dict[str, ToolUseBlock]) -> Iterator[Event]:
    """The events of one transcript item (see :func:`derive_events`). ``pending`` holds the tool
    uses still waiting for their results, across items: an assistant message adds its calls, a
    result takes its call out. The one place the readers (whole-file and the hook's incremental
    ones) turn items into events."""
    if isinstance(item, CompactBoundary):
        yield CompactEvent(item)
        return
    yield MessageEvent(item)
    if item.role == "assistant":
        for tool_use in item.tool_uses:
            pending[tool_use.id] = tool_use
        if not item.has_tool_calls and not item.is_sidechain:
            yield StopEvent(item)
        return
    for result in item.tool_results:
        called = pending.pop(result.tool_use_id, None)
        if called is None:
            continue
        yield ToolUseEvent(called, result)
        path = is_file_read(called)
        if path is not None and not result.is_error:
            yield FileReadEvent(path, strip_read_decorations(result.content))


def derive_events(items: Iterable[TranscriptItem]) -> Iterator[Event]:
    """Transcript items → events, streaming.

    Per message: its ``MessageEvent``; then, for a message carrying tool results, a
    ``ToolUseEvent`` per result whose tool use was seen (followed by a ``FileReadEvent`` for a
    successful file read); for a main-chain assistant message without tool calls, a
    ``StopEvent``. A ``CompactBoundary`` gives a ``CompactEvent``. Tool uses still without a
    result at the end give ``ToolUseEvent(tool_use, None)``.
    """
    pending: dict[str, ToolUseBlock] = {}
    for item in items:
        yield from item_events(item, pending)
    for tool_use in pending.values():
        yield ToolUseEvent(tool_use, None)
