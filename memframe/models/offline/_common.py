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
# A paste as Claude Code 2.1.28x writes it into the prompt: the user's own text, wrapped.
_PASTE = re.compile(r"</?pasted_content(?:\s+id=\"[^\"]*\")?\s*>")
# How a user's reply that corrects the agent starts.
CORRECTION = re.compile(
    r"^(no\b|nope\b|wrong\b|that's not|that is not|don't|do not|stop\b|instead\b|actually\b"
    r"|not what i|please don't|you should(n't| not)|why did you)",
    re.IGNORECASE,
)
_COMMAND_NAME = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.DOTALL)
# Text the host writes into the user's turn that the user did not type: other hooks' feedback
# ("Stop hook feedback:", "PreToolUse:Bash hook blocking error", "PostToolUse:Write|Edit hook
# blocking error", "Stop hook stopped continuation:", a prompt hook's "Operation stopped by
# hook:"), background task notifications, the summary that opens a compacted
# conversation, interruption markers, and what Codex CLI sends as user messages before the
# first prompt (the project's AGENTS.md, the environment context, user instructions).
NOT_THE_USER = re.compile(
    r"^\s*(?:\w+(?::[\w|*.-]+)?\s+hook\s+(?:feedback|blocking error|error|success"
    r"|stopped continuation|additional context)\b"
    r"|Operation stopped by hook\b"
    r"|<task-notification>"
    r"|<user-prompt-submit-hook>"
    r"|This session is being continued from a previous conversation"
    r"|\[Request interrupted by user"
    r"|# AGENTS\.md instructions for\b"
    r"|<environment_context>"
    r"|<user_instructions>"
    r"|<turn_aborted>)",
    re.IGNORECASE,
)
# AskUserQuestion's result: 'User has answered your questions: "Q"="A", "Q2"="A2". …'
_ANSWER = re.compile(r'"(?P<question>[^"]*)"="(?P<answer>[^"]*)"')
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


def is_command(message: Message) -> bool:
    """Whether a user message is a slash command invocation (``<command-name>``)."""
    return message.role == "user" and _COMMAND_NAME.search(message.text) is not None


def user_text(message: Message) -> str:
    """What a user actually typed: no tool results, reminders, tagged command wrappers, other
    hooks' feedback, task notifications or compaction summaries (see ``NOT_THE_USER``); a
    paste (``<pasted_content id="…">…</pasted_content id="…">``) is unwrapped."""
    if message.role != "user" or message.is_compact_summary:
        return ""
    command = _COMMAND_NAME.search(message.text)
    if command is not None:  # a slash command: "/name args"
        args = _COMMAND_ARGS.search(message.text)
        return f"{command.group(1)} {args.group(1) if args else ''}".strip()
    text = _WRAPPERS.sub("", message.text).strip()
    if text.startswith("Caveat:") or NOT_THE_USER.match(text):
        return ""
    if "pasted_content" in text:  # what the user pasted is still the user speaking
        text = _PASTE.sub("", text).strip()
    return text


def user_answers(conversation: Conversation) -> list[str]:
    """What the user answered to the agent's AskUserQuestion calls (the user speaking)."""
    answers: list[str] = []
    for _, call in conversation.calls():
        if call.name != "AskUserQuestion":
            continue
        result = conversation.results.get(call.id)
        if result is None or result.is_error:
            continue
        answers.extend(m.group("answer").strip() for m in _ANSWER.finditer(result.content))
    return [a for a in answers if a]


def read_conversation(messages: Sequence[Mapping[str, Any]]) -> Conversation:
    parsed: list[Message] = []
    for raw in messages:
        try:
            parsed.append(Message.from_dict(raw))
        except MessageError:
            continue
    results = {r.tool_use_id: r for m in parsed for r in m.tool_results}
    turns: list[Turn] = []
    after_command = False
    for message in parsed:
        # the user message right after a slash command is what the command expanded to (its
        # file in the project), not the user speaking
        expansion = after_command and message.role == "user" and not message.tool_results
        after_command = is_command(message)
        request = "" if expansion else user_text(message)
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
