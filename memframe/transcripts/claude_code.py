"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Two streaming passes. Pass 1 keeps only the main chain's linkage (``uuid`` → parent) and finds
the active path: walking back from the last user/assistant/system record, following
``logicalParentUuid`` across a compaction; a parent missing from the file continues with the
previous record in file order. A record of tool results whose parent (the call it answers) is
on the path is on it too: Claude Code 2.x links each result to its call, so parallel calls
branch without any rewind. Other records off that path are abandoned rewind branches. Pass 2
turns the records on the path into messages and compact boundaries, in file order, merging the
several ``assistant`` records one API response was split into.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from memframe.messages import Message, MessageError
from memframe.transcripts._jsonl import ReadStats, iter_records

MESSAGE_TYPES = frozenset({"user", "assistant"})
# Bookkeeping records Claude Code writes besides the conversation; skipped without complaint.
IGNORED_TYPES = frozenset(
    {
        "summary",
        "attachment",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "custom-title",
    }
)
KNOWN_TYPES = MESSAGE_TYPES | IGNORED_TYPES | {"system"}
_IDENTIFYING_KEYS = ("uuid", "sessionId", "leafUuid", "messageId", "message")
_META_KEYS = ("cwd", "gitBranch", "version")
_ROOT = -1
_DANGLING = -2


@dataclass(frozen=True, slots=True)
class CompactBoundary:
    """Where the host compacted the conversation; the next message is usually its summary."""

    trigger: str | None
    pre_tokens: int | None
    uuid: str | None
    line: int


def looks_like(record: Mapping[str, Any]) -> bool:
    """Whether one record is evidence that the file is a Claude Code transcript."""
    kind = record.get("type")
    return (
        isinstance(kind, str)
        and kind in KNOWN_TYPES
        and any(key in record for key in _IDENTIFYING_KEYS)
    )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def answers_tool_use(record: Mapping[str, Any]) -> bool:
    """Whether a record carries tool results. In Claude Code 2.x such a record's ``parentUuid``
    is the record of the ``tool_use`` it answers (``sourceToolAssistantUUID`` names it too),
    not the previous record: with parallel calls the results branch off the chain, and that is
    not a rewind."""
    if record.get("type") != "user":
        return False
    if isinstance(record.get("sourceToolAssistantUUID"), str):
        return True
    body = record.get("message")
    content = body.get("content") if isinstance(body, Mapping) else None
    return isinstance(content, list) and any(
        isinstance(block, Mapping) and block.get("type") == "tool_result" for block in content
    )


def _parent_of(record: Mapping[str, Any]) -> str | None:
    return _str(record.get("parentUuid")) or _str(record.get("logicalParentUuid"))


class _Chain:
    """The main chain's linkage (pass 1) and which of its records are on the active path."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.parents = array("q")
        self.lines = array("q")
        self.forward: dict[int, str] = {}  # parents that appear later in the file than the child
        self.linked = False
        self.leaf = -1  # the last user/assistant/system record: where the active path ends
        self.on_path = bytearray()
        self.emitted = bytearray()
        self.answers = bytearray()  # 1 for records carrying tool results

    def scan(self, path: str | os.PathLike[str], max_record_bytes: int) -> None:
        for line_no, record in iter_records(path, max_record_bytes=max_record_bytes):
            uuid = record.get("uuid")
            if record.get("isSidechain") is True or not isinstance(uuid, str) or uuid in self.index:
                continue
            parent = _parent_of(record)
            ordinal = len(self.parents)
            self.index[uuid] = ordinal
            self.lines.append(line_no)
            self.answers.append(1 if answers_tool_use(record) else 0)
            if record.get("type") in ("user", "assistant", "system"):
                self.leaf = ordinal
            if parent is None:
                self.parents.append(_ROOT)
                continue
            self.linked = True
            found = self.index.get(parent)
            if found is None:
                self.forward[ordinal] = parent
            self.parents.append(_DANGLING if found is None else found)
        for ordinal, parent in self.forward.items():
            self.parents[ordinal] = self.index.get(parent, _DANGLING)
        self.on_path = bytearray(len(self.parents))
        self.emitted = bytearray(len(self.parents))

    def walk(self, stats: ReadStats) -> None:
        """Mark the path from the last conversation record back to its root."""
        current = self.leaf if self.leaf >= 0 else len(self.parents) - 1
        while current >= 0 and not self.on_path[current]:
            self.on_path[current] = 1
            parent = self.parents[current]
            if parent == _DANGLING:
                stats.problem(
                    self.lines[current],
                    f"parent record {self.forward.get(current, '?')!r} not found; "
                    "continuing with the previous record in file order",
                )
                parent = current - 1
            current = parent
        # Tool results answer a call on the path though the path does not run through them
        # (parallel calls): they are part of the conversation, in file order.
        for ordinal, answers in enumerate(self.answers):
            parent = self.parents[ordinal]
            if answers and not self.on_path[ordinal] and parent >= 0 and self.on_path[parent]:
                self.on_path[ordinal] = 1

    def admit(self, record: Mapping[str, Any], stats: ReadStats) -> bool:
        """Whether a main-chain record of pass 2 belongs to the conversation (at most once)."""
        uuid = record.get("uuid")
        if not isinstance(uuid, str):
            return True
        ordinal = self.index.get(uuid)
        if ordinal is None:
            if not self.linked:
                return True
            # Appended after pass 1 (a live session): on the path iff its parent is.
            parent = _parent_of(record)
            parent_ordinal = self.index.get(parent) if parent is not None else None
            if parent_ordinal is None or not self.on_path[parent_ordinal]:
                stats.skipped_abandoned += 1
                return False
            self.index[uuid] = len(self.on_path)
            self.on_path.append(1)
            self.emitted.append(1)
            return True
        if self.emitted[ordinal]:
            stats.skip("duplicate-uuid")
            return False
        self.emitted[ordinal] = 1
        if self.linked and not self.on_path[ordinal]:
            stats.skipped_abandoned += 1
            return False
        return True


def _boundary(record: Mapping[str, Any], line_no: int) -> CompactBoundary:
    metadata = record.get("compactMetadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    pre_tokens = metadata.get("preTokens")
    return CompactBoundary(
        trigger=_str(metadata.get("trigger")),
        pre_tokens=pre_tokens
        if isinstance(pre_tokens, int) and not isinstance(pre_tokens, bool)
        else None,
        uuid=_str(record.get("uuid")),
        line=line_no,
    )


def _message(
    record: Mapping[str, Any], kind: str, line_no: int, stats: ReadStats
) -> Message | None:
    """A user/assistant record → a Message, or ``None`` after recording the problem."""
    body = record.get("message")
    if not isinstance(body, Mapping):
        stats.problem(line_no, f"{kind} record: 'message' must be an object")
        return None
    if "role" not in body:
        body = {**body, "role": kind}
    try:
        message = Message.from_dict(body)
    except MessageError as exc:
        stats.problem(line_no, f"{kind} record: {exc}")
        return None
    message.uuid = _str(record.get("uuid"))
    message.timestamp = _str(record.get("timestamp"))
    message.is_sidechain = record.get("isSidechain") is True
    message.is_compact_summary = record.get("isCompactSummary") is True
    message.meta = {key: record[key] for key in _META_KEYS if isinstance(record.get(key), str)}
    if record.get("isMeta") is True:
        message.meta["isMeta"] = True
    return message


def _continues(pending: Message, part: Message) -> bool:
    return (
        part.role == "assistant"
        and part.id is not None
        and part.id == pending.id
        and part.is_sidechain == pending.is_sidechain
    )


def read(
    path: str | os.PathLike[str],
    stats: ReadStats,
    *,
    include_sidechains: bool,
    max_record_bytes: int,
) -> Iterator[Message | CompactBoundary]:
    """Stream the conversation of a Claude Code transcript (see the module docstring)."""
    chain = _Chain()
    chain.scan(path, max_record_bytes)
    chain.walk(stats)
    pending: Message | None = None  # an assistant message that later records may extend
    records = iter_records(path, max_record_bytes=max_record_bytes, problems=stats.problems)
    for line_no, record in records:
        sidechain = record.get("isSidechain") is True
        if sidechain and not include_sidechains:
            stats.skipped_sidechain += 1
            continue
        kind = record.get("type")
        if not isinstance(kind, str):
            stats.skip("untyped")
            continue
        if kind == "system":
            subtype = _str(record.get("subtype"))
            if subtype != "compact_boundary":
                stats.skip(f"system:{subtype}" if subtype else "system")
                continue
        elif kind not in MESSAGE_TYPES:
            stats.skip(kind if kind in IGNORED_TYPES else f"unknown:{kind}")
            continue
        if not sidechain and not chain.admit(record, stats):
            continue
        if kind == "system":
            if pending is not None:
                yield pending
                pending = None
            yield _boundary(record, line_no)
            continue
        message = _message(record, kind, line_no, stats)
        if message is None:
            continue
        if pending is not None and _continues(pending, message):
            # One response split over records: blocks add up; each record repeats the usage
            # as it stood when written, so the last one is the complete count.
            pending.content = pending.content + message.content
            pending.wire_content = None  # no longer one host dict: rebuild from the blocks
            if message.usage is not None:
                pending.usage = message.usage
            continue
        if pending is not None:
            yield pending
            pending = None
        if message.role == "assistant" and message.id is not None:
            pending = message
        else:
            yield message
    if pending is not None:
        yield pending
