"""What the audit log records of each event: ids, names, types, counts and sizes — never the
text of messages, tool inputs, tool results or files, which may hold secrets."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from memframe.messages import (
    OtherBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

if TYPE_CHECKING:
    from memframe.messages import ContentBlock, Message

_NAME_LIMIT = 64  # caps names that come from untrusted input (block kinds, input keys)


def _short(name: object) -> str:
    text = str(name)
    return text if len(text) <= _NAME_LIMIT else text[: _NAME_LIMIT - 1] + "…"


def block_type(block: ContentBlock) -> str:
    return _short(block.kind) if isinstance(block, OtherBlock) else block.type


def text_chars(blocks: Iterable[ContentBlock]) -> int:
    """Characters of text, thinking and tool-result content (the sizes, not the text)."""
    total = 0
    for block in blocks:
        if isinstance(block, TextBlock):
            total += len(block.text)
        elif isinstance(block, ThinkingBlock):
            total += len(block.thinking)
        elif isinstance(block, ToolResultBlock):
            total += len(block.content)
    return total


def message(msg: Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": msg.role,
        "id": msg.id,
        "blocks": [block_type(b) for b in msg.content],
        "chars": text_chars(msg.content),
    }
    if msg.uuid is not None:
        out["uuid"] = msg.uuid
    if msg.model is not None:
        out["model"] = msg.model
    tool_uses = [{"id": b.id, "name": b.name} for b in msg.content if isinstance(b, ToolUseBlock)]
    if tool_uses:
        out["tool_uses"] = tool_uses
    results = [
        {"tool_use_id": b.tool_use_id, "is_error": b.is_error, "chars": len(b.content)}
        for b in msg.content
        if isinstance(b, ToolResultBlock)
    ]
    if results:
        out["tool_results"] = results
    if msg.usage is not None:
        usage = msg.usage
        out["usage"] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
        }
    if msg.is_sidechain:
        out["sidechain"] = True
    if msg.is_compact_summary:
        out["compact_summary"] = True
    return out


def tool_use(call: ToolUseBlock, result: ToolResultBlock | None) -> dict[str, Any]:
    return {
        "tool": call.name,
        "tool_use_id": call.id,
        "input_keys": sorted(_short(key) for key in call.input),
        "has_result": result is not None,
        "is_error": result.is_error if result is not None else None,
        "result_chars": len(result.content) if result is not None else None,
    }


def file_read(path: str, content: str | None) -> dict[str, Any]:
    return {"path": path, "chars": len(content) if content is not None else None}


def stop(msg: Message) -> dict[str, Any]:
    return {"message_id": msg.id, "role": msg.role, "blocks": [block_type(b) for b in msg.content]}


def layer_error(layer: str, hook: str, error: BaseException) -> dict[str, Any]:
    # The exception's type only: its message may quote the data that failed (and so a secret).
    kind = type(error)
    qualified = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else (f"{kind.__module__}.{kind.__qualname__}")
    )
    return {"layer": layer, "failed_hook": hook, "error_type": qualified}
