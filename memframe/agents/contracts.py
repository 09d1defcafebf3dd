"""The agents ``memframe hook --agent NAME`` speaks to, and how each one's hook contract maps
onto Claude Code's (the one the adapter acts on).

- ``claude-code`` (the default): the contract itself; nothing here runs for it.
- ``codex``: Codex CLI sends Claude Code's field and event names (plus ``turn_id``, ``model``,
  and a ``transcript_path`` that may be ``null``) and reads Claude Code's answers
  (``hookSpecificOutput.additionalContext``, exit 2 with the reason on stderr to block). Its
  file edits are ``apply_patch`` calls, read by :mod:`memframe.agents.patches`.
- ``gemini``: Gemini CLI's events are renamed (``BeforeTool`` → ``PreToolUse``, ``BeforeAgent``
  → ``UserPromptSubmit``, ``AfterAgent`` → ``Stop``, ``PreCompress`` → ``PreCompact``…) and so
  are its write tools (``write_file`` → ``Write``, ``replace`` → ``Edit``); the answers keep
  Claude Code's shape with Gemini's event name in ``hookEventName``.
- ``cursor``: Cursor's camelCase events, ``conversation_id`` as the session, the first of
  ``workspace_roots`` as the project; context goes back as ``additional_context``, a refused
  tool call as ``{"permission": "deny", …}`` (and exit 2).

Only the translation lives here; what is done for each event is the adapter's.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memframe.agents.protocol import EXIT_BLOCK, HookInput, hook_input

if TYPE_CHECKING:
    from memframe.agents.adapter import Answer

AGENTS = ("claude-code", "codex", "gemini", "cursor")
DEFAULT_AGENT = "claude-code"

# each agent's event name → the Claude Code event memframe handles
GEMINI_EVENTS = {
    "SessionStart": "SessionStart",
    "BeforeAgent": "UserPromptSubmit",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
    "AfterAgent": "Stop",
    "PreCompress": "PreCompact",
    "SessionEnd": "SessionEnd",
}
CURSOR_EVENTS = {
    "sessionStart": "SessionStart",
    "beforeSubmitPrompt": "UserPromptSubmit",
    "preToolUse": "PreToolUse",
    "postToolUse": "PostToolUse",
    "subagentStop": "SubagentStop",
    "preCompact": "PreCompact",
    "stop": "Stop",
    "sessionEnd": "SessionEnd",
}
# Gemini CLI's file-writing tools, as the Claude Code tool the guard knows
GEMINI_TOOLS = {"write_file": "Write", "replace": "Edit"}
# Cursor's (its documentation names Write and StrReplace in matchers; the argument names are
# not documented, so the usual spellings are all accepted)
CURSOR_TOOLS = {"Write": "Write", "StrReplace": "Edit", "Edit": "Edit", "MultiEdit": "MultiEdit"}
_PATH_KEYS = ("file_path", "path", "target_file", "filePath")
_CONTENT_KEYS = ("content", "contents", "text", "code_edit")


class UnknownAgent(ValueError):
    pass


def check_agent(name: str) -> str:
    if name not in AGENTS:
        raise UnknownAgent(f"unknown agent {name!r} (known: {', '.join(AGENTS)})")
    return name


def _text(data: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _write_input(tool: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """A write tool's arguments under the names the guard reads (``file_path``, ``content``,
    ``old_string``/``new_string``); the original keys are kept too."""
    out = dict(raw)
    path = _text(raw, *_PATH_KEYS)
    if path is not None:
        out["file_path"] = path
    if tool == "Write":
        content = next((raw[k] for k in _CONTENT_KEYS if isinstance(raw.get(k), str)), None)
        if content is not None:
            out["content"] = content
    return out


def translate(agent: str, data: Mapping[str, Any]) -> HookInput:
    """One event object from ``agent`` as the adapter's :class:`HookInput`."""
    base = hook_input(data)
    native = base.native_event
    if agent == "codex":
        return dataclasses.replace(base, agent=agent)
    if agent == "gemini":
        event = GEMINI_EVENTS.get(native or "")
        tool = GEMINI_TOOLS.get(base.tool_name or "")
        changes: dict[str, Any] = {"agent": agent, "event": event}
        if tool is not None:
            changes["tool_name"] = tool
            changes["tool_input"] = _write_input(tool, base.tool_input)
        pinned = os.environ.get("GEMINI_PROJECT_DIR", "").strip()
        if pinned and os.path.isabs(pinned):
            changes["project_dir"] = pinned
        if event == "SessionStart" and base.source is None:
            changes["source"] = _text(data, "trigger")
        return dataclasses.replace(base, **changes)
    if agent == "cursor":
        event = CURSOR_EVENTS.get(native or "")
        roots = data.get("workspace_roots")
        root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
        changes = {
            "agent": agent,
            "event": event,
            "session_id": _text(data, "conversation_id", "session_id"),
            "cwd": base.cwd or root,
            "project_dir": root,
        }
        tool = CURSOR_TOOLS.get(base.tool_name or "")
        if tool is not None:
            changes["tool_name"] = tool
            changes["tool_input"] = _write_input(tool, base.tool_input)
        return dataclasses.replace(base, **changes)
    return base


def render(hook: HookInput, answer: Answer) -> Answer:
    """The adapter's answer (Claude Code's shape) in the agent's own."""
    if hook.agent in ("claude-code", "codex"):
        return answer
    output = answer.output
    if hook.agent == "gemini":
        specific = output.get("hookSpecificOutput") if output else None
        if isinstance(specific, dict) and hook.native_event:
            specific["hookEventName"] = hook.native_event
        return answer
    # cursor
    if answer.code == EXIT_BLOCK:
        reason = answer.stderr or "memframe refused this tool call"
        answer.output = {"permission": "deny", "user_message": reason, "agent_message": reason}
        return answer
    if output is None:
        return answer
    specific = output.get("hookSpecificOutput")
    context = specific.get("additionalContext") if isinstance(specific, dict) else None
    # Cursor documents context only for sessionStart; a user-facing message has no field
    answer.output = (
        {"additional_context": context}
        if isinstance(context, str) and hook.event == "SessionStart"
        else None
    )
    return answer
