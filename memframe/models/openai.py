"""The ``openai`` backend: any OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, vLLM,
the llama.cpp server…).

Requests arrive in the Anthropic Messages shape and are translated here: the system prompt becomes
a ``system`` message, ``tool_use`` blocks become ``tool_calls``, each ``tool_result`` block its own
``tool`` message. The answer is translated back (``finish_reason`` → Anthropic stop reasons,
``prompt_tokens``/``completion_tokens`` → ``input_tokens``/``output_tokens``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

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
    text_of,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_OPENAI_HOST = "api.openai.com"

FINISH_REASONS: dict[str, str] = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
}


def needs_api_key(base_url: str) -> bool:
    """Whether ``base_url`` is OpenAI's own API (local servers take no key)."""
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        return False
    return host == _OPENAI_HOST


def _json_text(value: Any) -> str:
    return orjson.dumps(to_plain(value)).decode("utf-8")


def _blocks(index: int, content: object) -> list[Mapping[str, Any]]:
    if not isinstance(content, Sequence) or isinstance(content, str | bytes):
        raise ModelError(
            f"openai: request message {index} content must be a string or a list of blocks"
        )
    return [block for block in content if isinstance(block, Mapping)]


def _user_messages(index: int, content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    for block in _blocks(index, content):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_result":
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str) or not call_id:
                raise ModelError(f"openai: a tool_result block in message {index} has no id")
            inner = block.get("content")
            text = inner if isinstance(inner, str) else text_of(inner)
            out.append({"role": "tool", "tool_call_id": call_id, "content": text})
        # images, documents…: not translated
    if texts:
        out.append({"role": "user", "content": "\n".join(texts)})
    return out


def _assistant_message(index: int, content: object) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in _blocks(index, content):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise ModelError(f"openai: a tool_use block in message {index} lacks id or name")
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": _json_text(block.get("input", {}))},
                }
            )
        # thinking and other blocks are Anthropic-only: dropped
    message: dict[str, Any] = {"role": "assistant"}
    if texts:
        message["content"] = "\n".join(texts)
    else:
        # OpenAI accepts a null content only beside tool calls.
        message["content"] = None if calls else ""
    if calls:
        message["tool_calls"] = calls
    return message


def translate_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The Chat Completions ``messages`` for ``request`` (system prompt first)."""
    out: list[dict[str, Any]] = []
    system = request.system_text()
    if system:
        out.append({"role": "system", "content": system})
    for index, message in enumerate(request.messages):
        if not isinstance(message, Mapping):
            raise ModelError(f"openai: request message {index} is not an object")
        role, content = message.get("role"), message.get("content")
        if role == "user":
            out.extend(_user_messages(index, content))
        elif role == "assistant":
            out.append(_assistant_message(index, content))
        elif isinstance(role, str) and role:
            out.append({"role": role, "content": text_of(content)})
        else:
            raise ModelError(f"openai: request message {index} has no role")
    return out


def build_body(request: ModelRequest, model: str) -> dict[str, Any]:
    """The Chat Completions body for ``request``."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": translate_messages(request),
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": to_plain(tool.input_schema),
                },
            }
            for tool in request.tools
        ]
    return body


def _parse_arguments(index: int, name: str, arguments: object) -> dict[str, Any]:
    if isinstance(arguments, dict):  # some servers send the object itself
        return arguments
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if not isinstance(arguments, str):
        raise ModelResponseError(
            f"openai: tool call {index} ({name}) arguments are a {type(arguments).__name__}"
        )
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        raise ModelResponseError(
            f"openai: tool call {index} ({name}) arguments are not valid JSON"
        ) from None
    if not isinstance(parsed, dict):
        raise ModelResponseError(
            f"openai: tool call {index} ({name}) arguments are a JSON "
            f"{type(parsed).__name__}, not an object"
        )
    return parsed


def _tool_calls(raw: object) -> list[ToolCall]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ModelResponseError("openai: message.tool_calls is not a list")
    calls: list[ToolCall] = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ModelResponseError(f"openai: tool call {index} is not an object")
        function = item.get("function")
        if not isinstance(function, Mapping):
            raise ModelResponseError(f"openai: tool call {index} has no function object")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise ModelResponseError(f"openai: tool call {index} has no function name")
        call_id = item.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{index + 1}"  # some local servers omit ids
        calls.append(
            ToolCall(
                id=call_id,
                name=name,
                input=_parse_arguments(index, name, function.get("arguments")),
            )
        )
    return calls


def _usage(raw: object) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        return {}
    usage: dict[str, int] = {}
    for source, target in (
        ("prompt_tokens", "input_tokens"),
        ("completion_tokens", "output_tokens"),
    ):
        value = raw.get(source)
        if isinstance(value, int) and not isinstance(value, bool):
            usage[target] = value
    details = raw.get("prompt_tokens_details")
    if isinstance(details, Mapping):
        cached = details.get("cached_tokens")
        if isinstance(cached, int) and not isinstance(cached, bool):
            usage["cache_read_input_tokens"] = cached
    return usage


def parse_response(data: Mapping[str, Any]) -> ModelResponse:
    """A :class:`ModelResponse` from a Chat Completions response body."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        if "error" in data:
            raise ModelResponseError(f"openai: the response is an error: {data['error']!r:.300}")
        raise ModelResponseError("openai: the response has no choices")
    choice = choices[0]
    if not isinstance(choice, Mapping):
        raise ModelResponseError("openai: choices[0] is not an object")
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise ModelResponseError("openai: choices[0] has no message object")
    content = message.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):  # content parts
        text = text_of(content)
    else:
        raise ModelResponseError(f"openai: message content is a {type(content).__name__}")
    calls = _tool_calls(message.get("tool_calls"))
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise ModelResponseError("openai: finish_reason is not a string")
    stop_reason = FINISH_REASONS.get(finish, finish) if finish else "end_turn"
    if calls and stop_reason == "end_turn":
        stop_reason = "tool_use"  # Ollama and others say "stop" beside tool calls
    return ModelResponse(
        text=text, tool_calls=tuple(calls), stop_reason=stop_reason, usage=_usage(data.get("usage"))
    )


class OpenAIBackend(HttpBackend):
    """Calls ``POST {base_url}/chat/completions``."""

    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        max_retries: int = 3,
        backoff_base: float = 0.5,
    ) -> None:
        if not model:
            raise ModelNotConfiguredError(
                "openai: no model; set MEMFRAME_OPENAI_MODEL or models.openai.model "
                "in settings.json"
            )
        self.base_url = check_base_url(
            base_url, backend=self.name, setting="OPENAI_BASE_URL or models.openai.base_url"
        )
        if not api_key and needs_api_key(self.base_url):
            raise ModelNotConfiguredError(
                "openai: no API key for api.openai.com; set OPENAI_API_KEY or "
                "models.openai.api_key in settings.json (or point base_url at a local server)"
            )
        self.model = model
        self._api_key = api_key or None
        self._http = JsonPoster(
            provider=self.name,
            max_retries=max_retries,
            backoff_base=backoff_base,
            secrets=(api_key,) if api_key else (),
        )

    @classmethod
    def from_options(cls, options: Mapping[str, Any], env: Mapping[str, str]) -> OpenAIBackend:
        """Build from ``models.openai`` settings and the environment."""
        backend = cls.name
        base_url = (
            option_str(options, "base_url", backend=backend, env=env, env_var="OPENAI_BASE_URL")
            or DEFAULT_BASE_URL
        )
        api_key = option_str(options, "api_key", backend=backend, env=env, env_var="OPENAI_API_KEY")
        if api_key is None and needs_api_key(base_url):
            raise ModelNotConfiguredError(
                "openai: no API key for api.openai.com; set OPENAI_API_KEY or "
                "`models.openai.api_key` in settings.json (or set `models.openai.base_url` to a "
                "local OpenAI-compatible server)"
            )
        model = option_str(
            options, "model", backend=backend, env=env, env_var="MEMFRAME_OPENAI_MODEL"
        )
        if model is None:
            raise ModelNotConfiguredError(
                "openai: no model; set MEMFRAME_OPENAI_MODEL or `models.openai.model` in "
                "settings.json (e.g. gpt-4o-mini, or llama3.1 for Ollama)"
            )
        return cls(
            model=model,
            base_url=base_url,
            api_key=api_key,
            **retry_options(options, backend=backend),
        )

    def encode(self, request: ModelRequest) -> bytes:
        """The exact bytes :meth:`complete` sends for ``request``."""
        return encode_json(build_body(request, self.model))

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def complete(self, request: ModelRequest) -> ModelResponse:
        headers = {"content-type": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        data = self._http.post_json(
            self.endpoint, self.encode(request), headers=headers, timeout=request.timeout
        )
        return parse_response(data)

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={safe_url(self.base_url)!r})"
