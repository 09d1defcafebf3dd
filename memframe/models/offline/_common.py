"""What the offline recipes share: reading the conversation of a request."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memframe.messages import Message, MessageError, ToolResultBlock, ToolUseBlock

# Ids of the offline backend's own tool calls, so it can tell its results from the parent's.
OWN_CALL_PREFIX = "offline_"

# Wrappers hosts put around what the user typed (Claude Code: slash commands, reminders).
_WRAPPERS = re.compile(
    r"<(system-reminder|command-message|local-command-stdout|local-command-stderr"
    r"|local-command-caveat)>.*?</\1>",
    re.DOTALL,
)
# How a user's reply that corrects the agent starts.
CORRECTION = re.compile(
    r"^(no\b|nope\b|wrong\b|that's not|that is not|don't|do not|stop\b|instead\b|actually\b"
    r"|not what i|please don't|you should(n't| not)|why did you)",
    re.IGNORECASE,
)
_COMMAND_NAME = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>\s*(.*?)\s*</command-args>", re.DOTALL)


@dataclass
class Turn:
    """One user request and what the assistant did until the next one."""

    request: str
    tools: list[ToolUseBlock] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)


@dataclass
class Conversation:
    messages: list[Message]
    results: dict[str, ToolResultBlock]
    turns: list[Turn]

    def calls(self) -> list[tuple[int, ToolUseBlock]]:
        """Every tool call with the index of its message, in order."""
        return [(i, b) for i, m in enumerate(self.messages) for b in m.tool_uses]


def user_text(message: Message) -> str:
    """What a user actually typed: no tool results, reminders or tagged command wrappers."""
    if message.role != "user":
        return ""
    command = _COMMAND_NAME.search(message.text)
    if command is not None:  # a slash command: "/name args"
        args = _COMMAND_ARGS.search(message.text)
        return f"{command.group(1)} {args.group(1) if args else ''}".strip()
    text = _WRAPPERS.sub("", message.text).strip()
    return "" if text.startswith("Caveat:") else text


def read_conversation(messages: Sequence[Mapping[str, Any]]) -> Conversation:
    parsed: list[Message] = []
    for raw in messages:
        try:
            parsed.append(Message.from_dict(raw))
        except MessageError:
            continue
    results = {r.tool_use_id: r for m in parsed for r in m.tool_results}
    turns: list[Turn] = []
    for message in parsed:
        request = user_text(message)
        if request:
            turns.append(Turn(request))
        elif message.role == "assistant":
            if not turns:
                turns.append(Turn(""))
            turns[-1].tools.extend(message.tool_uses)
            if message.text.strip():
                turns[-1].replies.append(message.text.strip())
    return Conversation(parsed, results, turns)


def first_line(text: str, limit: int) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return clip(line, limit)


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
