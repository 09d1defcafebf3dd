"""Messages and tool calls as JSON-ready dicts, so the worker can keep them between processes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memframe.messages import Message, ToolUseBlock


def encode_message(message: Message) -> dict[str, Any]:
    """Everything a layer may look at: the wire content (the host's own bytes when known), the
    provider id and usage, and the transcript metadata."""
    data: dict[str, Any] = {"role": message.role, "content": message.to_wire()["content"]}
    if message.id is not None:
        data["id"] = message.id
    if message.usage is not None:
        usage = message.usage
        data["usage"] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
        }
    if message.model is not None:
        data["model"] = message.model
    for key in ("uuid", "timestamp"):
        value = getattr(message, key)
        if value is not None:
            data[key] = value
    if message.is_sidechain:
        data["is_sidechain"] = True
    if message.is_compact_summary:
        data["is_compact_summary"] = True
    if message.meta:
        data["meta"] = dict(message.meta)
    return data


def decode_message(data: Mapping[str, Any]) -> Message:
    """The inverse of :func:`encode_message`; raises ``MessageError`` on a malformed dict."""
    message = Message.from_dict(data)
    uuid, timestamp, meta = data.get("uuid"), data.get("timestamp"), data.get("meta")
    message.uuid = uuid if isinstance(uuid, str) else None
    message.timestamp = timestamp if isinstance(timestamp, str) else None
    message.is_sidechain = data.get("is_sidechain") is True
    message.is_compact_summary = data.get("is_compact_summary") is True
    message.meta = dict(meta) if isinstance(meta, Mapping) else {}
    return message


def encode_tool_use(tool_use: ToolUseBlock) -> dict[str, Any]:
    return {"id": tool_use.id, "name": tool_use.name, "input": dict(tool_use.input)}


def decode_tool_use(data: object) -> ToolUseBlock | None:
    if not isinstance(data, Mapping):
        return None
    tool_id, name, tool_input = data.get("id"), data.get("name"), data.get("input")
    if not isinstance(tool_id, str) or not isinstance(name, str):
        return None
    return ToolUseBlock(tool_id, name, tool_input if isinstance(tool_input, Mapping) else {})
