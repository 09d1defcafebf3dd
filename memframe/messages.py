"""The message model every layer sees: role, content blocks, provider message id and usage.

Messages follow the Anthropic Messages shape (the richest of the formats memframe reads);
importers for other formats map onto it. ``Message.from_dict`` validates untrusted input and
raises ``MessageError`` with the offending field named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import orjson

Role: TypeAlias = Literal["user", "assistant", "system"]
ROLES: tuple[Role, ...] = ("user", "assistant", "system")


class MessageError(ValueError):
    """A message (or one of its blocks) has the wrong shape."""


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    thinking: str
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    id: str
    name: str
    input: Mapping[str, Any]
    type: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ImageBlock:
    media_type: str = ""
    type: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class OtherBlock:
    """A block of a type memframe does not interpret; kept so nothing is silently dropped."""

    kind: str
    raw: Mapping[str, Any]
    type: Literal["other"] = "other"


ContentBlock: TypeAlias = (
    TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock | OtherBlock
)


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider-reported token usage of one model response."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        """Tokens the response occupies in the context: input + both cache parts + output."""
        return (
            self.input_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
            + self.output_tokens
        )

    @classmethod
    def from_dict(cls, data: object) -> Usage:
        if not isinstance(data, Mapping):
            raise MessageError(f"usage must be an object, got {type(data).__name__}")
        values = {}
        for name in cls.__dataclass_fields__:
            raw = data.get(name, 0)
            if raw is None:
                raw = 0
            if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
                raise MessageError(f"usage.{name} must be a non-negative integer, got {raw!r}")
            values[name] = raw
        return cls(**values)


@dataclass(slots=True)
class Message:
    """One conversation message.

    ``id`` is the provider's message id (``msg_…``): one response split over several transcript
    records shares it, and its ``usage`` must be counted once. ``uuid`` is the transcript
    record's own id when the message came from a file.
    """

    role: Role
    content: tuple[ContentBlock, ...]
    id: str | None = None
    usage: Usage | None = None
    uuid: str | None = None
    timestamp: str | None = None
    model: str | None = None
    is_sidechain: bool = False
    is_compact_summary: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    wire_content: Any = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        """The concatenated text blocks."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    @property
    def has_tool_calls(self) -> bool:
        return any(isinstance(b, ToolUseBlock) for b in self.content)

    def estimable_text(self) -> str:
        """Everything in the message that occupies context, as text (for token estimates)."""
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, ThinkingBlock):
                parts.append(block.thinking)
            elif isinstance(block, ToolUseBlock):
                parts.append(block.name)
                parts.append(orjson.dumps(block.input, default=str).decode())
            elif isinstance(block, ToolResultBlock):
                parts.append(block.content)
        return "\n".join(parts)

    @classmethod
    def user(cls, text: str, **kwargs: Any) -> Message:
        return cls(role="user", content=(TextBlock(text),), **kwargs)

    @classmethod
    def assistant(cls, *blocks: ContentBlock | str, **kwargs: Any) -> Message:
        content = tuple(TextBlock(b) if isinstance(b, str) else b for b in blocks)
        return cls(role="assistant", content=content, **kwargs)

    @classmethod
    def from_dict(cls, data: object) -> Message:
        """A message from an Anthropic-style dict (``role``, ``content``, ``id``, ``usage``)."""
        if not isinstance(data, Mapping):
            raise MessageError(f"a message must be an object, got {type(data).__name__}")
        role = data.get("role")
        if role not in ROLES:
            raise MessageError(f"message role must be one of {', '.join(ROLES)}, got {role!r}")
        msg_id = data.get("id")
        if msg_id is not None and not isinstance(msg_id, str):
            raise MessageError(f"message id must be a string, got {type(msg_id).__name__}")
        usage = data.get("usage")
        return cls(
            role=role,
            content=parse_content(data.get("content", "")),
            id=msg_id,
            usage=Usage.from_dict(usage) if usage is not None else None,
            model=data.get("model") if isinstance(data.get("model"), str) else None,
            wire_content=data.get("content", ""),
        )

    def to_wire(self) -> dict[str, Any]:
        """The message as an Anthropic Messages API request entry (``role`` and ``content``).

        A message built from a dict keeps that dict's ``content`` as it was, so a request built
        from it repeats the host's own bytes (what a provider prompt cache needs to hit).
        """
        if self.wire_content is not None:
            return {"role": self.role, "content": self.wire_content}
        return {"role": self.role, "content": [_block_to_wire(b) for b in self.content]}


def parse_content(content: object) -> tuple[ContentBlock, ...]:
    """Content as a string or a list of block dicts → typed blocks."""
    if isinstance(content, str):
        return (TextBlock(content),) if content else ()
    if content is None:
        return ()
    if not isinstance(content, Sequence):
        raise MessageError(
            f"message content must be a string or a list, got {type(content).__name__}"
        )
    return tuple(parse_block(block, i) for i, block in enumerate(content))


def _string(block: Mapping[str, Any], key: str, index: int) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise MessageError(f"content[{index}].{key} must be a string, got {type(value).__name__}")
    return value


def tool_result_text(content: object) -> str:
    """A tool result's content (a string, or a list of text/image blocks) as text."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, Sequence):
        texts = []
        for item in content:
            if isinstance(item, Mapping) and isinstance(item.get("text"), str):
                texts.append(item["text"])
            elif isinstance(item, str):
                texts.append(item)
        return "\n".join(texts)
    return str(content)


def parse_block(block: object, index: int = 0) -> ContentBlock:
    """One content block dict → a typed block; unknown types become ``OtherBlock``."""
    if not isinstance(block, Mapping):
        raise MessageError(f"content[{index}] must be an object, got {type(block).__name__}")
    kind = block.get("type")
    if kind == "text":
        return TextBlock(_string(block, "text", index))
    if kind == "thinking":
        thinking = block.get("thinking", "")
        return ThinkingBlock(thinking if isinstance(thinking, str) else "")
    if kind == "tool_use":
        tool_input = block.get("input", {})
        if not isinstance(tool_input, Mapping):
            raise MessageError(f"content[{index}].input must be an object")
        return ToolUseBlock(
            id=_string(block, "id", index), name=_string(block, "name", index), input=tool_input
        )
    if kind == "tool_result":
        return ToolResultBlock(
            tool_use_id=_string(block, "tool_use_id", index),
            content=tool_result_text(block.get("content")),
            # JSON true, or the string "true" some hosts write; "false"/null/absent are not errors
            is_error=block.get("is_error") is True or block.get("is_error") == "true",
        )
    if kind == "image":
        source = block.get("source")
        media = source.get("media_type", "") if isinstance(source, Mapping) else ""
        return ImageBlock(media if isinstance(media, str) else "")
    return OtherBlock(kind=str(kind), raw=dict(block))


def _block_to_wire(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
    if isinstance(block, ToolResultBlock):
        wire: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": block.content,
        }
        if block.is_error:
            wire["is_error"] = True
        return wire
    if isinstance(block, OtherBlock):
        return dict(block.raw)
    if isinstance(block, ThinkingBlock):
        # a thinking block without its signature is refused by the API: send it as text
        return {"type": "text", "text": block.thinking}
    return {"type": "text", "text": f"[{block.media_type or 'image'}]"}
