"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Two streaming passes. Pass 1 keeps only the main chain's linkage (``uuid`` → parent) and finds
the active path: walking back from the last user/assistant/system record, following
``logicalParentUuid`` across a compaction; a parent missing from the file continues with the
previous record in file order. A record of tool results whose parent (the call it answers) is
on the path is on it too: Claude Code 2.x links each result to its call, so parallel calls
branch without any rewind. Other records off that path are abandoned rewind branches. Pass 2
turns the records on the path into messages and compact boundaries, in file order, merging the
several ``assistant`` records one API response was split into (:class:`Assembler`, which the
hook's incremental reader uses too).

Besides ``user`` and ``assistant`` records, a message the user typed while the agent worked and
that was handed to it mid-turn (an ``attachment`` of type ``queued_command``) is a user message
(``meta["queued"]``). Sub-agent records are not part of the conversation; what each sub-agent
did is summarised onto the result of its ``Task``/``Agent`` call (``meta["subagents"]``, see
:mod:`memframe.transcripts.subagents`).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memframe.messages import Message, MessageError, ToolUseBlock
from memframe.transcripts._jsonl import ReadStats, iter_records
from memframe.transcripts.subagents import SUBAGENT_TOOLS, SubagentRuns, attach

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
QUEUED_COMMAND = "queued_command"
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
            if record.get("type") in ("user", "assistant", "system") or (
                record.get("type") == "attachment" and _queued_body(record) is not None
            ):
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


def boundary_of(record: Mapping[str, Any], line_no: int) -> CompactBoundary:
    """A ``compact_boundary`` system record as a :class:`CompactBoundary`."""
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


def _queued_body(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """A message the user typed while the agent was working and that was handed to it in the
    middle of its turn: an ``attachment`` record of type ``queued_command``. (The
    ``queue-operation`` records only log the queue; a queued message handed over at the start
    of a turn is written again as a normal ``user`` record.)"""
    attachment = record.get("attachment")
    if not isinstance(attachment, Mapping) or attachment.get("type") != QUEUED_COMMAND:
        return None
    prompt = attachment.get("prompt")
    if isinstance(prompt, list):  # content blocks
        return {"role": "user", "content": prompt}
    if isinstance(prompt, str) and prompt.strip():
        return {"role": "user", "content": prompt}
    return None


def _hook_summary_body(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ``stop_hook_summary`` system record whose hooks failed (``hookErrors``), as the
    host-written user text ``Stop hook error: [command]: message`` — hook output is never the
    user speaking, and the failure is a fact of the session."""
    errors = record.get("hookErrors")
    if not isinstance(errors, list):
        return None
    texts = [e.strip() for e in errors if isinstance(e, str) and e.strip()]
    if not texts:
        return None
    infos = record.get("hookInfos")
    commands = [
        info.get("command")
        for info in (infos if isinstance(infos, list) else [])
        if isinstance(info, Mapping) and isinstance(info.get("command"), str)
    ]
    named = f"[{commands[0]}]: " if len(commands) == 1 else ""
    lines = [f"Stop hook error: {named}{text}" for text in texts]
    return {"role": "user", "content": "\n".join(lines)}


def message_of(
    record: Mapping[str, Any], line_no: int = 0, stats: ReadStats | None = None
) -> Message | None:
    """A user/assistant record (or a queued message handed over mid-turn) → a Message, or
    ``None`` after recording the problem in ``stats``."""
    kind = record.get("type")
    body: Any
    if kind == "attachment":
        body = _queued_body(record)
        if body is None:
            return None
    elif kind == "system":
        body = _hook_summary_body(record)
        if body is None:
            return None
    else:
        body = record.get("message")
    if not isinstance(body, Mapping):
        if stats is not None:
            stats.problem(line_no, f"{kind} record: 'message' must be an object")
        return None
    if "role" not in body:
        body = {**body, "role": kind}
    try:
        message = Message.from_dict(body)
    except MessageError as exc:
        if stats is not None:
            stats.problem(line_no, f"{kind} record: {exc}")
        return None
    message.uuid = _str(record.get("uuid"))
    message.timestamp = _str(record.get("timestamp"))
    message.is_sidechain = record.get("isSidechain") is True
    message.is_compact_summary = record.get("isCompactSummary") is True
    message.meta = {key: record[key] for key in _META_KEYS if isinstance(record.get(key), str)}
    if record.get("isMeta") is True:
        message.meta["isMeta"] = True
    if kind == "attachment":
        message.meta["queued"] = True
    if kind == "system":
        message.meta["isMeta"] = True
    return message


def continues(pending: Message, part: Message) -> bool:
    """Whether ``part`` is another record of the response ``pending`` is the start of."""
    return (
        part.role == "assistant"
        and part.id is not None
        and part.id == pending.id
        and part.is_sidechain == pending.is_sidechain
    )


class Assembler:
    """Records to conversation items, one at a time: what both Claude Code readers share (the
    whole-file :func:`read` and the hook's incremental reader).

    :meth:`classify` says what a record is (and counts what is skipped), :meth:`decode` makes
    the message of a conversation record, :meth:`add` merges the records one response was split
    into (the last assistant message is held back as ``pending`` until a record that does not
    continue it arrives) and :meth:`flush` releases it. Side-chain records go to
    :meth:`sidechain`: a sub-agent's work is summarised onto the result of the call that started
    it (:mod:`memframe.transcripts.subagents`), not dropped.
    """

    def __init__(
        self,
        stats: ReadStats,
        *,
        transcript: Path | None = None,
        known_calls: Mapping[str, ToolUseBlock] | None = None,
    ) -> None:
        self.stats = stats
        self.pending: Message | None = None
        self.runs = SubagentRuns(transcript)
        self.calls: dict[str, ToolUseBlock] = {}  # sub-agent calls waiting for their result
        self.known_calls = known_calls if known_calls is not None else {}

    def classify(self, record: Mapping[str, Any]) -> str:
        """``"sidechain"``, ``"boundary"``, ``"message"`` or ``"skip"`` (counted in stats)."""
        if record.get("isSidechain") is True:
            return "sidechain"
        kind = record.get("type")
        if not isinstance(kind, str):
            self.stats.skip("untyped")
            return "skip"
        if kind == "system":
            subtype = _str(record.get("subtype"))
            if subtype == "compact_boundary":
                return "boundary"
            if subtype == "stop_hook_summary" and _hook_summary_body(record) is not None:
                return "message"
            self.stats.skip(f"system:{subtype}" if subtype else "system")
            return "skip"
        if kind in MESSAGE_TYPES or (kind == "attachment" and _queued_body(record) is not None):
            return "message"
        self.stats.skip(kind if kind in IGNORED_TYPES else f"unknown:{kind}")
        return "skip"

    def sidechain(self, record: Mapping[str, Any], line_no: int) -> None:
        """A sub-agent's record (Claude Code 1.x writes them into the session file)."""
        self.stats.skipped_sidechain += 1
        kind = record.get("type")
        message = (
            message_of(record, line_no) if isinstance(kind, str) and kind in MESSAGE_TYPES else None
        )
        self.runs.feed(record, message)

    def decode(self, record: Mapping[str, Any], line_no: int) -> Message | None:
        message = message_of(record, line_no, self.stats)
        if message is None:
            return None
        if message.role == "assistant":
            for call in message.tool_uses:
                if call.name in SUBAGENT_TOOLS:
                    self.calls[call.id] = call
        elif message.tool_results:
            self._attach(message, record)
        return message

    def _attach(self, message: Message, record: Mapping[str, Any]) -> None:
        calls: dict[str, ToolUseBlock] = {}
        for result in message.tool_results:
            call = self.calls.pop(result.tool_use_id, None) or self.known_calls.get(
                result.tool_use_id
            )
            if call is None and self.pending is not None:
                call = next((c for c in self.pending.tool_uses if c.id == result.tool_use_id), None)
            if call is not None:
                calls[result.tool_use_id] = call
        if calls:
            attach(message, calls, self.runs, record)

    def add(self, message: Message) -> list[Message]:
        """The messages completed by ``message``: the held-back one, and ``message`` itself
        unless it is held back in turn."""
        if self.pending is not None and continues(self.pending, message):
            # One response split over records: blocks add up; each record repeats the usage
            # as it stood when written, so the last one is the complete count.
            self.pending.content = self.pending.content + message.content
            self.pending.wire_content = None  # no longer one host dict: rebuild from the blocks
            if message.usage is not None:
                self.pending.usage = message.usage
            return []
        done = self.flush()
        if message.role == "assistant" and message.id is not None:
            self.pending = message
        else:
            done.append(message)
        return done

    def flush(self) -> list[Message]:
        """The held-back message, if any."""
        if self.pending is None:
            return []
        pending, self.pending = self.pending, None
        return [pending]


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
    assembler = Assembler(stats, transcript=Path(path))
    records = iter_records(path, max_record_bytes=max_record_bytes, problems=stats.problems)
    for line_no, record in records:
        what = assembler.classify(record)
        sidechain = what == "sidechain"
        if sidechain:
            if not include_sidechains:
                assembler.sidechain(record, line_no)
                continue
            kind = record.get("type")
            if not isinstance(kind, str) or kind not in MESSAGE_TYPES:
                stats.skip(f"sidechain:{kind}")
                continue
            what = "message"
        elif what == "skip":
            continue
        if not sidechain and not chain.admit(record, stats):
            continue
        if what == "boundary":
            yield from assembler.flush()
            yield boundary_of(record, line_no)
            continue
        message = assembler.decode(record, line_no)
        if message is not None:
            yield from assembler.add(message)
    yield from assembler.flush()
