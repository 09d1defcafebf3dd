"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{timestamp, type, payload}``. ``response_item`` payloads are the conversation;
``event_msg`` payloads mostly repeat them, except ``token_count`` whose ``last_token_usage`` is
the usage of the response just before it. Assistant-side items (reasoning, tool calls, the
assistant's text) between two user-side items (user text, tool outputs) form one assistant
message; Codex has no message ids, so each gets ``codex-<line of its first item>``. Older
rollouts without the envelope (bare response items, one per line) are read too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from memframe.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    MessageError,
    OtherBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    tool_result_text,
)
from memframe.transcripts._jsonl import ReadStats, iter_records
from memframe.transcripts.claude_code import CompactBoundary

ENVELOPE_TYPES = frozenset(
    {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
)
ASSISTANT_ITEMS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})
RESPONSE_ITEMS = ASSISTANT_ITEMS | OUTPUT_ITEMS | {"message"}
_TEXT_BLOCKS = frozenset({"input_text", "output_text", "text"})
_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "developer": "system",
    "system": "system",
}

Item = Message | CompactBoundary


def _kind(data: Mapping[str, Any]) -> str | None:
    kind = data.get("type")
    return kind if isinstance(kind, str) else None


def looks_like(record: Mapping[str, Any]) -> bool:
    """Whether one record is evidence that the file is a Codex rollout."""
    kind = _kind(record)
    if kind in ENVELOPE_TYPES:
        return isinstance(record.get("payload"), Mapping)
    return kind in RESPONSE_ITEMS and "payload" not in record and "uuid" not in record


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise MessageError(f"{where} must be a string, got {type(value).__name__}")
    return value


def _count(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MessageError(f"last_token_usage.{key} must be a non-negative integer, got {value!r}")
    return value


def usage_from_codex(raw: object) -> Usage:
    """OpenAI token usage → Usage; cached input tokens are part of ``input_tokens`` there."""
    if not isinstance(raw, Mapping):
        raise MessageError(f"last_token_usage must be an object, got {type(raw).__name__}")
    cached = _count(raw, "cached_input_tokens")
    return Usage(
        input_tokens=max(_count(raw, "input_tokens") - cached, 0),
        output_tokens=_count(raw, "output_tokens"),
        cache_read_input_tokens=cached,
    )


def _content(content: object) -> tuple[ContentBlock, ...]:
    if isinstance(content, str):
        return (TextBlock(content),) if content else ()
    if content is None:
        return ()
    if not isinstance(content, list):
        raise MessageError(f"content must be a list, got {type(content).__name__}")
    blocks: list[ContentBlock] = []
    for index, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise MessageError(f"content[{index}] must be an object, got {type(block).__name__}")
        kind = _kind(block)
        if kind in _TEXT_BLOCKS:
            blocks.append(TextBlock(_text(block.get("text"), f"content[{index}].text")))
        elif kind == "refusal":
            blocks.append(TextBlock(_text(block.get("refusal"), f"content[{index}].refusal")))
        elif kind == "input_image":
            blocks.append(ImageBlock())
        else:
            blocks.append(OtherBlock(kind=str(kind), raw=dict(block)))
    return tuple(blocks)


def _reasoning(payload: Mapping[str, Any]) -> ThinkingBlock | None:
    texts: list[str] = []
    for key in ("summary", "content"):  # summaries when present, else raw reasoning text
        parts = payload.get(key)
        if parts is None:
            continue
        if not isinstance(parts, list):
            raise MessageError(f"reasoning.{key} must be a list, got {type(parts).__name__}")
        texts.extend(
            part["text"]
            for part in parts
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
        if texts:
            break
    return ThinkingBlock("\n\n".join(texts)) if texts else None


def _arguments(raw: object) -> Mapping[str, Any]:
    if isinstance(raw, Mapping):
        return raw
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"raw": raw}
        if isinstance(parsed, dict):
            return parsed
    return {"raw": raw}


def _assistant_block(kind: str, payload: Mapping[str, Any]) -> ContentBlock | None:
    if kind == "reasoning":
        return _reasoning(payload)
    if kind == "web_search_call":
        return OtherBlock(kind=kind, raw=dict(payload))
    if kind == "local_shell_call":
        call_id = payload.get("call_id") or payload.get("id")
        action = payload.get("action")
        return ToolUseBlock(
            id=_text(call_id, "local_shell_call.call_id"),
            name="local_shell",
            input=action if isinstance(action, Mapping) else {"raw": action},
        )
    call_id = _text(payload.get("call_id"), f"{kind}.call_id")
    name = _text(payload.get("name"), f"{kind}.name")
    if kind == "custom_tool_call":
        return ToolUseBlock(id=call_id, name=name, input={"input": payload.get("input")})
    return ToolUseBlock(id=call_id, name=name, input=_arguments(payload.get("arguments")))


def _tool_result(kind: str, payload: Mapping[str, Any]) -> ToolResultBlock:
    call_id = _text(payload.get("call_id"), f"{kind}.call_id")
    output = payload.get("output")
    is_error = False
    if isinstance(output, Mapping):
        is_error = output.get("success") is False
        inner = output.get("content")
        text = inner if isinstance(inner, str) else orjson.dumps(output, default=str).decode()
    else:
        text = tool_result_text(output)
    return ToolResultBlock(tool_use_id=call_id, content=text, is_error=is_error)


class _Reader:
    """Turns records into items; returns what is ready to yield after each record.

    An assistant message is held until the ``token_count`` that carries its usage arrives, or
    until the next assistant message starts (the user-side items after it wait with it, so the
    order is kept).
    """

    def __init__(self, stats: ReadStats) -> None:
        self.stats = stats
        self.model: str | None = None
        self.meta: dict[str, Any] = {}
        self.turn: Message | None = None  # the assistant message items are being added to
        self.awaiting: Message | None = None  # the assistant message waiting for its usage
        self.held: list[Item] = []

    def _release(self) -> list[Item]:
        ready, self.held, self.awaiting = self.held, [], None
        return ready

    def _user_side(self, *items: Item) -> list[Item]:
        self.turn = None
        self.held.extend(items)
        return self._release() if self.awaiting is None else []

    def _assistant_side(
        self, blocks: tuple[ContentBlock, ...], line_no: int, timestamp: str | None
    ) -> list[Item]:
        ready: list[Item] = []
        if self.turn is None:
            ready = self._release()
            self.turn = Message(
                role="assistant",
                content=(),
                id=f"codex-{line_no}",
                timestamp=timestamp,
                model=self.model,
                meta=dict(self.meta),
            )
            self.held.append(self.turn)
            self.awaiting = self.turn
        self.turn.content = self.turn.content + blocks
        return ready

    def _message(self, payload: Mapping[str, Any], ts: str | None) -> Message:
        raw_role = payload.get("role")
        role = _ROLES.get(raw_role) if isinstance(raw_role, str) else None
        if role is None:
            raise MessageError(
                f"message.role must be user, assistant or developer, got {raw_role!r}"
            )
        content = _content(payload.get("content"))
        return Message(role=role, content=content, timestamp=ts, meta=dict(self.meta))

    def response_item(self, payload: Mapping[str, Any], line_no: int, ts: str | None) -> list[Item]:
        kind = _kind(payload)
        if kind == "message":
            message = self._message(payload, ts)
            if message.role == "assistant":
                return self._assistant_side(message.content, line_no, ts)
            return self._user_side(message)
        if kind in ASSISTANT_ITEMS:
            block = _assistant_block(str(kind), payload)
            return self._assistant_side((block,) if block else (), line_no, ts)
        if kind in OUTPUT_ITEMS:
            result = _tool_result(str(kind), payload)
            output = Message(role="user", content=(result,), timestamp=ts, meta=dict(self.meta))
            return self._user_side(output)
        self.stats.skip(f"unknown:response_item:{kind}")
        return []

    def event(self, payload: Mapping[str, Any]) -> list[Item]:
        kind = payload.get("type")
        if kind != "token_count":
            self.stats.skip(f"event_msg:{kind}")
            return []
        info = payload.get("info")
        if info is None:
            return []
        if not isinstance(info, Mapping):
            raise MessageError(f"token_count.info must be an object, got {type(info).__name__}")
        usage = usage_from_codex(info.get("last_token_usage"))
        if self.awaiting is None:
            return []
        self.awaiting.usage = usage
        self.turn = None  # a token count closes the response it reports on
        return self._release()

    def compacted(self, payload: Mapping[str, Any], line_no: int, ts: str | None) -> list[Item]:
        boundary = CompactBoundary(trigger=None, pre_tokens=None, uuid=None, line=line_no)
        items: list[Item] = [boundary]
        summary = payload.get("message")
        if isinstance(summary, str) and summary:
            items.append(
                Message.user(summary, timestamp=ts, is_compact_summary=True, meta=dict(self.meta))
            )
        return self._user_side(*items)

    def context(self, kind: str, payload: Mapping[str, Any]) -> None:
        cwd = payload.get("cwd")
        if isinstance(cwd, str):
            self.meta["cwd"] = cwd
        version = payload.get("cli_version")
        if kind == "session_meta" and isinstance(version, str):
            self.meta["version"] = version
        model = payload.get("model")
        if kind == "turn_context" and isinstance(model, str):
            self.model = model

    def record(self, record: Mapping[str, Any], line_no: int) -> list[Item]:
        kind = _kind(record)
        ts = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
        payload = record.get("payload")
        if kind in RESPONSE_ITEMS and payload is None:
            return self.response_item(record, line_no, ts)  # an older rollout without envelopes
        if kind not in ENVELOPE_TYPES:
            self.stats.skip(f"unknown:{kind}" if isinstance(kind, str) else "untyped")
            return []
        if not isinstance(payload, Mapping):
            raise MessageError(f"{kind}.payload must be an object, got {type(payload).__name__}")
        if kind == "response_item":
            return self.response_item(payload, line_no, ts)
        if kind == "event_msg":
            return self.event(payload)
        if kind == "compacted":
            return self.compacted(payload, line_no, ts)
        self.context(str(kind), payload)
        return []

    def finish(self) -> list[Item]:
        return self._release()


def read(
    path: str | os.PathLike[str],
    stats: ReadStats,
    *,
    include_sidechains: bool,
    max_record_bytes: int,
) -> Iterator[Item]:
    """Stream the conversation of a Codex rollout (``include_sidechains`` has no effect)."""
    reader = _Reader(stats)
    records = iter_records(path, max_record_bytes=max_record_bytes, problems=stats.problems)
    for line_no, record in records:
        try:
            yield from reader.record(record, line_no)
        except MessageError as exc:
            stats.problem(line_no, str(exc))
    yield from reader.finish()
