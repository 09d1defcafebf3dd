"""The ``claude-cli`` backend: the Claude Code CLI run non-interactively (``claude -p``).

The CLI's own tools must not act on memframe's behalf, so tools offered in a request go through a
text protocol instead: the prompt lists them and asks for a JSON object
``{"text": "...", "tool_calls": [{"name": "...", "input": {...}}]}``, which is parsed back into
:class:`ToolCall` objects. Every run carries ``MEMFRAME_IN_FORK=1`` so memframe's hooks inside the
child do nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from memframe.models import FORK_GUARD_ENV
from memframe.models.base import (
    ModelError,
    ModelNotConfiguredError,
    ModelRequest,
    ModelResponse,
    ModelResponseError,
    ModelTransientError,
    ToolCall,
    ToolSpec,
    text_of,
)

DEFAULT_EXECUTABLE = "claude"
_EXCERPT = 400
_FENCED = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.DOTALL)
_NOT_CONFIGURED_HINT = "set MEMFRAME_CLAUDE_BIN or `models.claude-cli.bin` in settings.json"


def _excerpt(text: str, limit: int = _EXCERPT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _option_str(options: Mapping[str, Any], key: str) -> str | None:
    value = options.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ModelNotConfiguredError(
            f"settings models.claude-cli.{key} must be a non-empty string, "
            f"got {type(value).__name__}"
        )
    return value.strip()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# -- the prompt ----------------------------------------------------------------------------------


def _render_block(block: Mapping[str, Any]) -> str | None:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) else None
    if kind == "tool_use":
        return (
            f"[tool call {block.get('id', '?')}: {block.get('name', '?')} "
            f"with input {_dumps(block.get('input', {}))}]"
        )
    if kind == "tool_result":
        inner = block.get("content")
        text = inner if isinstance(inner, str) else text_of(inner)
        label = "error result" if block.get("is_error") is True else "result"
        return f"[{label} of tool call {block.get('tool_use_id', '?')}]\n{text}\n[end of {label}]"
    if kind in ("image", "document"):
        return f"[{kind} omitted]"
    return None  # thinking and anything unknown


def _render_message(message: Mapping[str, Any]) -> str:
    role = str(message.get("role", "user"))
    content = message.get("content")
    if isinstance(content, str):
        body = content
    elif isinstance(content, Sequence):
        parts = [
            rendered
            for block in content
            if isinstance(block, Mapping) and (rendered := _render_block(block)) is not None
        ]
        body = "\n".join(parts)
    else:
        body = ""
    return f"<{role}>\n{body}\n</{role}>"


def _render_tools(tools: Sequence[ToolSpec]) -> str:
    lines = [
        "<tools>",
        "You may call the following tools. You cannot run them yourself: the caller runs the "
        "calls you ask for and sends back their results.",
    ]
    for tool in tools:
        lines += [
            "",
            f"## {tool.name}",
            tool.description.strip() or "(no description)",
            f"Input JSON schema: {_dumps(dict(tool.input_schema))}",
        ]
    lines += [
        "</tools>",
        "",
        "Answer with ONLY a JSON object, and no other text before or after it, of this form:",
        '{"text": "what you say (may be empty)", '
        '"tool_calls": [{"name": "<tool name>", "input": {<arguments matching its schema>}}]}',
        'Use "tool_calls": [] when you call no tool.',
    ]
    return "\n".join(lines)


def render_prompt(request: ModelRequest) -> str:
    """The prompt text sent on the CLI's stdin for ``request``."""
    sections = [
        "You are the assistant in the conversation below; write its next assistant turn. Do not "
        "use any tool of your own: only the tools listed here (if any) exist, through the answer "
        "format described."
    ]
    system = request.system_text()
    if system:
        sections.append(f"<system>\n{system}\n</system>")
    rendered = [_render_message(m) for m in request.messages if isinstance(m, Mapping)]
    sections.append("<conversation>\n" + "\n".join(rendered) + "\n</conversation>")
    if request.tools:
        sections.append(_render_tools(request.tools))
    return "\n\n".join(sections) + "\n"


# -- the answer ----------------------------------------------------------------------------------


def _protocol_object(text: str) -> dict[str, Any] | None:
    """The ``{"text", "tool_calls"}`` object in ``text``: bare, fenced, or embedded in prose."""
    stripped = text.strip()
    candidates = [stripped]
    candidates += [match.group(1).strip() for match in _FENCED.finditer(text)]
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        candidates.append(stripped[start : end + 1])
    for candidate in candidates:
        if not candidate.startswith("{"):
            continue
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and ("tool_calls" in data or "text" in data):
            return data
    return None


def parse_tool_answer(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and tool calls of a result written under the tool protocol.

    A result without a protocol object is plain text with no tool calls.
    """
    data = _protocol_object(text)
    if data is None:
        return text, ()
    said = data.get("text")
    if said is None:
        said = ""
    elif not isinstance(said, str):
        said = _dumps(said)
    raw_calls = data.get("tool_calls")
    if raw_calls is None:
        raw_calls = []
    if not isinstance(raw_calls, list):
        raise ModelResponseError("claude-cli: the answer's tool_calls is not a list")
    calls: list[ToolCall] = []
    for index, raw in enumerate(raw_calls):
        if not isinstance(raw, dict):
            raise ModelResponseError(f"claude-cli: tool call {index} is not an object")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise ModelResponseError(f"claude-cli: tool call {index} has no name")
        tool_input = raw.get("input")
        if tool_input is None:
            tool_input = {}
        if not isinstance(tool_input, dict):
            raise ModelResponseError(
                f"claude-cli: tool call {index} ({name}) input is a "
                f"{type(tool_input).__name__}, not an object"
            )
        calls.append(ToolCall(id=f"call_{index + 1}", name=name, input=tool_input))
    return said, tuple(calls)


def _result_object(stdout: str) -> dict[str, Any] | None:
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    if isinstance(data, list):  # --verbose prints the whole message stream
        results = [m for m in data if isinstance(m, dict) and m.get("type") == "result"]
        return results[-1] if results else None
    return data if isinstance(data, dict) else None


def _ints(usage: object) -> dict[str, int]:
    if not isinstance(usage, Mapping):
        return {}
    return {str(k): v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}


class ClaudeCliBackend:
    """Runs ``claude -p --output-format json --max-turns 1`` with the prompt on stdin."""

    name = "claude-cli"

    def __init__(
        self, *, executable: str, model: str | None = None, own_tools: bool = False
    ) -> None:
        self.executable = executable
        self.model = model
        self.own_tools = own_tools

    @classmethod
    def from_options(cls, options: Mapping[str, Any], env: Mapping[str, str]) -> ClaudeCliBackend:
        """Build from ``models.claude-cli`` settings and the environment."""
        wanted = (
            env.get("MEMFRAME_CLAUDE_BIN", "").strip()
            or _option_str(options, "bin")
            or DEFAULT_EXECUTABLE
        )
        found = shutil.which(wanted, path=env.get("PATH"))
        if found is None:
            raise ModelNotConfiguredError(
                f"claude-cli: the Claude Code CLI {wanted!r} was not found or is not executable; "
                f"install it or {_NOT_CONFIGURED_HINT}"
            )
        own_tools = options.get("own_tools", False)
        if not isinstance(own_tools, bool):
            raise ModelNotConfiguredError(
                f"settings models.claude-cli.own_tools must be true or false, got {own_tools!r}"
            )
        return cls(executable=found, model=_option_str(options, "model"), own_tools=own_tools)

    def argv(self) -> list[str]:
        argv = [self.executable, "-p", "--output-format", "json", "--max-turns", "1"]
        if not self.own_tools:
            # no built-in tool and none of the user's MCP servers: the child can only answer,
            # so every tool call goes through memframe's permission check
            argv += ["--tools", "", "--strict-mcp-config"]
        if self.model:
            argv += ["--model", self.model]
        return argv

    def complete(self, request: ModelRequest) -> ModelResponse:
        stdout, stderr, status = self._run(render_prompt(request), request.timeout)
        result = _result_object(stdout)
        if status != 0:
            detail = _excerpt(stderr) or (
                _excerpt(str(result.get("result", ""))) if result else _excerpt(stdout)
            )
            raise ModelError(
                f"claude-cli: {self.executable} exited with status {status}: "
                f"{detail or '(no output)'}"
            )
        if result is None:
            raise ModelResponseError(
                f"claude-cli: the output is not a JSON result object: {_excerpt(stdout, 120)!r}"
            )
        if result.get("is_error") is True:
            detail = result.get("result") or result.get("subtype") or "no detail"
            raise ModelError(f"claude-cli: the CLI reported an error: {_excerpt(str(detail))}")
        text = result.get("result")
        if not isinstance(text, str):
            raise ModelResponseError(
                f"claude-cli: the result object has no result text "
                f"(subtype {result.get('subtype')!r})"
            )
        usage = _ints(result.get("usage"))
        if not request.tools:
            return ModelResponse(text=text, stop_reason="end_turn", usage=usage)
        said, calls = parse_tool_answer(text)
        return ModelResponse(
            text=said,
            tool_calls=calls,
            stop_reason="tool_use" if calls else "end_turn",
            usage=usage,
        )

    def _run(self, prompt: str, timeout: float) -> tuple[str, str, int]:
        env = dict(os.environ)
        env[FORK_GUARD_ENV] = "1"
        own_group = os.name == "posix"
        try:
            proc = subprocess.Popen(
                self.argv(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=own_group,
            )
        except OSError as exc:
            raise ModelNotConfiguredError(
                f"claude-cli: cannot run {self.executable}: {exc.strerror or exc}; "
                f"{_NOT_CONFIGURED_HINT}"
            ) from None
        with proc:
            try:
                out, err = proc.communicate(prompt.encode("utf-8"), timeout=timeout)
            except subprocess.TimeoutExpired:
                self._kill(proc, own_group)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.communicate(timeout=5)
                raise ModelTransientError(
                    f"claude-cli: {self.executable} gave no answer within {timeout:g}s "
                    "(the process was killed)"
                ) from None
            except BaseException:
                self._kill(proc, own_group)
                raise
        return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), proc.returncode

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes], own_group: bool) -> None:
        if own_group:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
                return
            except (ProcessLookupError, PermissionError):
                pass
        proc.kill()

    def close(self) -> None:
        """Nothing to release (each call runs its own process); here for symmetry."""

    def __repr__(self) -> str:
        return f"ClaudeCliBackend(executable={self.executable!r}, model={self.model!r})"
