"""Claude Code's hook contract: the JSON event on stdin, the answer on stdout and the exit code.

Input is parsed defensively: unknown fields are ignored, a field of the wrong type counts as
absent, and anything that is not a JSON object is a :class:`ProtocolError` (the adapter logs it
and exits 0). Output: exit code 0 with an optional JSON object on stdout (``hookSpecificOutput``
with ``additionalContext``, ``systemMessage``…), or exit code 2 with a reason on stderr to block
the action (for ``PreToolUse``: the tool call).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

MAX_INPUT_BYTES = 16 * 1024 * 1024
EXIT_OK = 0
EXIT_BLOCK = 2


class ProtocolError(ValueError):
    """The hook input is not a JSON object (or is too large)."""


@dataclass(frozen=True)
class HookInput:
    """One hook event. Every field is optional: ``None`` (or empty) when absent or mistyped."""

    event: str | None = None
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    prompt: str | None = None
    tool_name: str | None = None
    tool_input: Mapping[str, Any] = field(default_factory=dict)
    tool_response: Any = None
    stop_hook_active: bool = False
    source: str | None = None  # SessionStart: startup, resume, clear, compact
    reason: str | None = None  # SessionEnd: clear, logout, prompt_input_exit, other
    trigger: str | None = None  # PreCompact: manual, auto
    turn_id: str | None = None  # Codex: the turn the event belongs to
    model: str | None = None  # Codex, Cursor: the session's model
    # which agent sent the event (``memframe hook --agent``) and the event's own name there;
    # ``event`` is always the Claude Code name memframe acts on
    agent: str = "claude-code"
    native_event: str | None = None
    project_dir: str | None = None  # the project the agent names (Cursor's workspace root…)


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def parse_input(raw: bytes) -> HookInput:
    """The event in ``raw`` (the bytes Claude Code wrote to stdin)."""
    return hook_input(decode_input(raw))


def decode_input(raw: bytes) -> dict[str, Any]:
    """The JSON object in ``raw``; anything else is a :class:`ProtocolError`."""
    if len(raw) > MAX_INPUT_BYTES:
        raise ProtocolError(f"hook input of {len(raw):,} bytes exceeds {MAX_INPUT_BYTES:,}")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"hook input must be a JSON object, not {type(data).__name__}")
    return data


def hook_input(data: Mapping[str, Any]) -> HookInput:
    """Claude Code's (and Codex's: the same names) fields of one event object."""
    tool_input = data.get("tool_input")
    return HookInput(
        event=_text(data, "hook_event_name"),
        session_id=_text(data, "session_id"),
        transcript_path=_text(data, "transcript_path"),
        cwd=_text(data, "cwd"),
        prompt=_text(data, "prompt"),
        tool_name=_text(data, "tool_name"),
        tool_input=tool_input if isinstance(tool_input, dict) else {},
        tool_response=data.get("tool_response"),
        stop_hook_active=data.get("stop_hook_active") is True,
        source=_text(data, "source"),
        reason=_text(data, "reason"),
        trigger=_text(data, "trigger"),
        turn_id=_text(data, "turn_id"),
        model=_text(data, "model"),
        native_event=_text(data, "hook_event_name"),
    )


def read_input(stream: BinaryIO, limit: int = MAX_INPUT_BYTES) -> bytes:
    """Read stdin, at most ``limit`` bytes; more is a :class:`ProtocolError` (the rest is left
    unread: the host only ever sends one small object)."""
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise ProtocolError(f"hook input exceeds {limit:,} bytes")
    return raw


# -- answers -------------------------------------------------------------------------------------


def context_output(event: str, text: str, system_message: str | None = None) -> dict[str, Any]:
    """Add ``text`` to the model's context (``SessionStart``, ``UserPromptSubmit``…)."""
    out: dict[str, Any] = {
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}
    }
    if system_message:
        out["systemMessage"] = system_message
    return out


def message_output(system_message: str) -> dict[str, Any]:
    """Only a message shown to the user."""
    return {"systemMessage": system_message}


def deny_output(reason: str) -> dict[str, Any]:
    """The JSON form of refusing a ``PreToolUse`` call (exit code 0)."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def encode_output(answer: Mapping[str, Any]) -> bytes:
    return orjson.dumps(answer) + b"\n"
