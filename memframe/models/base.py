"""What every model backend speaks: a request in, a response (text and tool calls) out.

Conversations use the Anthropic Messages shape (``{"role", "content": [blocks]}``) on both sides;
backends for other wire formats translate at their edge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class ModelError(RuntimeError):
    """A model call failed (after retries, when the failure looked transient)."""


class ModelNotConfiguredError(ModelError):
    """The chosen backend lacks what it needs (an API key, an endpoint, an executable)."""


class ModelResponseError(ModelError):
    """The backend answered with something that is not a valid response."""


class ModelTransientError(ModelError):
    """A failure worth retrying (rate limit, overload, 5xx, dropped connection, timeout)."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON schema of its input."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    wire: Mapping[str, Any] | None = None

    @classmethod
    def from_wire(cls, tool: Mapping[str, Any]) -> ToolSpec:
        """A tool definition as the host sent it; ``to_wire`` gives back the same dict."""
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a tool definition needs a name, got {tool!r:.80}")
        description = tool.get("description", "")
        schema = tool.get("input_schema", {})
        return cls(
            name,
            description if isinstance(description, str) else "",
            schema if isinstance(schema, Mapping) else {},
            dict(tool),
        )

    def to_wire(self) -> dict[str, Any]:
        if self.wire is not None:
            return dict(self.wire)
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }


@dataclass(frozen=True)
class ModelRequest:
    """One call to a model.

    :param system: the system prompt: text or Anthropic system blocks.
    :param messages: the conversation, Anthropic-style dicts; the last one is from the user.
    :param tools: tools the model may call; passed to the provider verbatim (a forked agent
        offers the parent's tools so the prompt cache matches, and refuses calls it does not allow).
    :param cache_prefix: how many leading messages are shared with the parent agent's request;
        a backend with prompt caching puts its breakpoint on the last of them.
    :param purpose: what the call is for (``"session_memory"``…): a deterministic backend such as
        ``offline`` uses it, with ``task``, to do the job without a model.
    :param task: purpose-specific facts for deterministic backends (paths, current file text).
    """

    system: str | Sequence[Mapping[str, Any]]
    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[ToolSpec] = ()
    max_tokens: int = 4096
    cache_prefix: int = 0
    purpose: str = "generic"
    task: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = 120.0

    def system_blocks(self) -> list[dict[str, Any]]:
        """The system prompt as a list of Anthropic text blocks."""
        if isinstance(self.system, str):
            return [{"type": "text", "text": self.system}] if self.system else []
        return [dict(block) for block in self.system]

    def system_text(self) -> str:
        if isinstance(self.system, str):
            return self.system
        return "\n\n".join(str(b.get("text", "")) for b in self.system if b.get("text"))


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class ModelResponse:
    """What the model said: text, tool calls, why it stopped and the token usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str = "end_turn"
    usage: Mapping[str, int] = field(default_factory=dict)

    def to_message(self) -> dict[str, Any]:
        """The response as an assistant message to append to the conversation."""
        content: list[dict[str, Any]] = []
        if self.text:
            content.append({"type": "text", "text": self.text})
        for call in self.tool_calls:
            content.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.input)}
            )
        return {"role": "assistant", "content": content}


@runtime_checkable
class ModelBackend(Protocol):
    """A model: ``complete`` turns a request into a response (or raises :class:`ModelError`)."""

    name: str

    def complete(self, request: ModelRequest) -> ModelResponse: ...


def backend_supports(backend: ModelBackend, purpose: str) -> bool:
    """Whether ``backend`` can do ``purpose``. A backend without a ``supports(purpose)`` method
    is a real model and can do anything; ``offline`` only does what it has a recipe for."""
    supports = getattr(backend, "supports", None)
    return True if supports is None else bool(supports(purpose))


def text_of(content: object) -> str:
    """The text of a message ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            parts.append(text_of(inner) if not isinstance(inner, str) else inner)
    return "\n".join(parts)
