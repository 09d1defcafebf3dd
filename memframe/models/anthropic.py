"""The ``anthropic`` backend: the Anthropic Messages API over HTTP, with prompt caching.

The request body is built so that the same :class:`ModelRequest` always serializes to the same
bytes (the prompt cache matches on exact prefixes): keys in a fixed order, the caller's data copied
as is, and cache breakpoints on the last system block and on the last message shared with the
parent agent (``cache_prefix``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memframe.models._http import (
    HttpBackend,
    JsonPoster,
    check_base_url,
    encode_json,
    option_str,
    retry_options,
    safe_url,
    to_plain,
)
from memframe.models.base import (
    ModelError,
    ModelNotConfiguredError,
    ModelRequest,
    ModelResponse,
    ModelResponseError,
    ToolCall,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_VERSION = "2023-06-01"
_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def _cache_control() -> dict[str, str]:
    return dict(_EPHEMERAL)


def _wire_message(index: int, message: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        raise ModelError(f"anthropic: request message {index} is not an object")
    role = message.get("role")
    content = message.get("content")
    if not isinstance(role, str):
        raise ModelError(f"anthropic: request message {index} has no role")
    if isinstance(content, str):
        return {"role": role, "content": content}
    if isinstance(content, list | tuple):
        return {"role": role, "content": to_plain(content)}
    raise ModelError(
        f"anthropic: request message {index} content must be a string or a list of blocks"
    )


# Blocks the API refuses a cache_control on: the breakpoint goes on the last block before them.
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


def _mark_cached(message: dict[str, Any]) -> None:
    """Put a cache breakpoint on the last content block of ``message`` (a private copy)."""
    content = message["content"]
    if isinstance(content, str):
        if content:  # the API rejects empty text blocks
            message["content"] = [
                {"type": "text", "text": content, "cache_control": _cache_control()}
            ]
        return
    for block in reversed(content):
        if isinstance(block, dict) and block.get("type") not in _UNCACHEABLE:
            block["cache_control"] = _cache_control()
            return


def build_body(request: ModelRequest, model: str) -> dict[str, Any]:
    """The Messages API body for ``request``; never shares or mutates the request's objects."""
    body: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens}
    system = [to_plain(block) for block in request.system_blocks()]
    if system:
        system[-1]["cache_control"] = _cache_control()
        body["system"] = system
    if request.tools:
        body["tools"] = [tool.to_wire() for tool in request.tools]
    messages = [_wire_message(i, message) for i, message in enumerate(request.messages)]
    if request.cache_prefix > 0 and messages:
        _mark_cached(messages[min(request.cache_prefix, len(messages)) - 1])
    body["messages"] = messages
    return body


def _ints(usage: object) -> dict[str, int]:
    if not isinstance(usage, Mapping):
        return {}
    return {
        str(key): value
        for key, value in usage.items()
        if isinstance(value, int) and not isinstance(value, bool)
    }


def parse_response(data: Mapping[str, Any]) -> ModelResponse:
    """A :class:`ModelResponse` from a Messages API response body."""
    if data.get("type") == "error":
        raise ModelResponseError(f"anthropic: the response is an error object: {data.get('error')}")
    content = data.get("content")
    if not isinstance(content, list):
        raise ModelResponseError("anthropic: the response has no content list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for i, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise ModelResponseError(f"anthropic: content block {i} is not an object")
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise ModelResponseError(f"anthropic: text block {i} has no text string")
            texts.append(text)
        elif kind == "tool_use":
            call_id, name, tool_input = block.get("id"), block.get("name"), block.get("input")
            if not isinstance(call_id, str) or not call_id:
                raise ModelResponseError(f"anthropic: tool_use block {i} has no id")
            if not isinstance(name, str) or not name:
                raise ModelResponseError(f"anthropic: tool_use block {i} has no name")
            if not isinstance(tool_input, dict):
                raise ModelResponseError(
                    f"anthropic: tool_use block {i} ({name}) input is a "
                    f"{type(tool_input).__name__}, not an object"
                )
            calls.append(ToolCall(id=call_id, name=name, input=tool_input))
        elif not isinstance(kind, str):
            raise ModelResponseError(f"anthropic: content block {i} has no type")
        # thinking, redacted_thinking, server tool blocks…: nothing the caller acts on.
    stop_reason = data.get("stop_reason")
    if stop_reason is not None and not isinstance(stop_reason, str):
        raise ModelResponseError("anthropic: stop_reason is not a string")
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        stop_reason=stop_reason or ("tool_use" if calls else "end_turn"),
        usage=_ints(data.get("usage")),
    )


class AnthropicBackend(HttpBackend):
    """Calls ``POST {base_url}/v1/messages``; see :func:`build_body` for the request shape."""

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        model: str = DEFAULT_MODEL,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        anthropic_version: str = DEFAULT_VERSION,
    ) -> None:
        if not api_key:
            raise ModelNotConfiguredError(
                "anthropic: no API key; set ANTHROPIC_API_KEY or models.anthropic.api_key "
                "in settings.json"
            )
        if not model:
            raise ModelNotConfiguredError("anthropic: the model name is empty")
        self.base_url = check_base_url(
            base_url, backend=self.name, setting="ANTHROPIC_BASE_URL or models.anthropic.base_url"
        )
        self.model = model
        self.anthropic_version = anthropic_version
        self._api_key = api_key
        self._http = JsonPoster(
            provider=self.name,
            max_retries=max_retries,
            backoff_base=backoff_base,
            secrets=(api_key,),
        )

    @classmethod
    def from_options(cls, options: Mapping[str, Any], env: Mapping[str, str]) -> AnthropicBackend:
        """Build from ``models.anthropic`` settings and the environment."""
        backend = cls.name
        api_key = option_str(
            options, "api_key", backend=backend, env=env, env_var="ANTHROPIC_API_KEY"
        )
        if api_key is None:
            raise ModelNotConfiguredError(
                "anthropic: no API key; set ANTHROPIC_API_KEY or `models.anthropic.api_key` "
                "in settings.json"
            )
        base_url = (
            option_str(options, "base_url", backend=backend, env=env, env_var="ANTHROPIC_BASE_URL")
            or DEFAULT_BASE_URL
        )
        model = (
            option_str(
                options, "model", backend=backend, env=env, env_var="MEMFRAME_ANTHROPIC_MODEL"
            )
            or DEFAULT_MODEL
        )
        version = option_str(options, "anthropic_version", backend=backend) or DEFAULT_VERSION
        return cls(
            api_key=api_key,
            base_url=base_url,
            model=model,
            **retry_options(options, backend=backend),
            anthropic_version=version,
        )

    def encode(self, request: ModelRequest) -> bytes:
        """The exact bytes :meth:`complete` sends for ``request``."""
        return encode_json(build_body(request, self.model))

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/v1/messages"

    def complete(self, request: ModelRequest) -> ModelResponse:
        data = self._http.post_json(
            self.endpoint,
            self.encode(request),
            headers={
                "x-api-key": self._api_key,
                "anthropic-version": self.anthropic_version,
                "content-type": "application/json",
            },
            timeout=request.timeout,
        )
        return parse_response(data)

    def __repr__(self) -> str:
        return f"AnthropicBackend(model={self.model!r}, base_url={safe_url(self.base_url)!r})"
