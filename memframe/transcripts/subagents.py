"""What a sub-agent did, summarised onto the call that started it.

Claude Code runs a sub-agent for a ``Task`` (2.x: ``Agent``) tool call. Its own conversation is
not part of the main one: version 1.x writes it into the session file as side-chain records
(``isSidechain: true``), version 2.x into ``<session>/subagents/agent-<id>.jsonl`` beside the
session file. The main conversation only sees the call's input (``description``, ``prompt``)
and the agent's final report as the call's result.

A :class:`SubagentActivity` is the rest, in a few fields: how many calls of which tool, the
files it wrote, the commands it ran, how many calls failed and its last words. The readers
attach it to the message that carries the call's result, as
``message.meta["subagents"][tool_use_id]`` (:meth:`SubagentActivity.to_dict`), so layers and the
offline model can say what each sub-agent did without reading its transcript.

A sub-agent's conversation is matched to its call by its first user message, which is the call's
``prompt`` (both versions), or by the agent id Claude Code 2.x records in the result
(``toolUseResult.agentId``).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memframe.messages import Message, ToolUseBlock
from memframe.tools import SHELL_TOOLS, SUBAGENT_TOOLS, written_paths

MAX_FILES = 20
MAX_COMMANDS = 10
MAX_RESULT_CHARS = 400
MAX_SUBAGENT_FILES = 200  # sub-agent transcripts looked at per session
MAX_SUBAGENT_FILE_BYTES = 32 * 1024 * 1024


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut + " …"


def _command(call: ToolUseBlock) -> str | None:
    command = call.input.get("command", call.input.get("cmd"))
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    return command.strip() if isinstance(command, str) and command.strip() else None


@dataclass
class SubagentActivity:
    """One sub-agent's run, summarised."""

    prompt: str
    agent_id: str | None = None
    calls: Counter[str] = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    errors: int = 0
    result: str = ""
    messages: int = 0

    def add(self, message: Message) -> None:
        """Count one message of the sub-agent's conversation."""
        self.messages += 1
        if message.role == "assistant":
            for call in message.tool_uses:
                self.calls[call.name] += 1
                written = written_paths(call.name, call.input)
                for path in written:
                    if path not in self.files and len(self.files) < MAX_FILES:
                        self.files.append(path)
                if not written and call.name in SHELL_TOOLS:
                    command = _command(call)
                    if (
                        command
                        and command not in self.commands
                        and len(self.commands) < MAX_COMMANDS
                    ):
                        self.commands.append(command)
            if message.text.strip():
                self.result = _clip(message.text, MAX_RESULT_CHARS)
        else:
            self.errors += sum(1 for result in message.tool_results if result.is_error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": _clip(self.prompt, MAX_RESULT_CHARS),
            "agent_id": self.agent_id,
            "calls": dict(self.calls.most_common()),
            "files": list(self.files),
            "commands": list(self.commands),
            "errors": self.errors,
            "result": self.result,
            "description": None,
        }


def describe(activity: Mapping[str, Any]) -> str:
    """One line for notes and logs: ``sub-agent "find callers": 9 calls (Grep 5, Read 4); …``,
    named by the call's ``description`` (else the start of its prompt)."""
    calls = activity.get("calls")
    calls = calls if isinstance(calls, Mapping) else {}
    total = sum(v for v in calls.values() if isinstance(v, int))
    description = activity.get("description")
    label = (
        description.strip()
        if isinstance(description, str) and description.strip()
        else _clip(str(activity.get("prompt", "")), 60)
    )
    parts = [f'sub-agent "{label}": {total} call{"s" if total != 1 else ""}']
    if calls:
        parts[0] += " (" + ", ".join(f"{name} {count}" for name, count in calls.items()) + ")"
    files = activity.get("files")
    if isinstance(files, list) and files:
        parts.append("wrote " + ", ".join(str(f) for f in files[:5]))
    commands = activity.get("commands")
    if isinstance(commands, list) and commands:
        parts.append("ran " + ", ".join(f"`{_clip(str(c), 60)}`" for c in commands[:3]))
    errors = activity.get("errors")
    if isinstance(errors, int) and errors:
        parts.append(f"{errors} failed call{'s' if errors != 1 else ''}")
    return "; ".join(parts)


def _first_prompt(message: Message) -> str | None:
    if message.role != "user" or message.tool_results:
        return None
    text = message.text.strip()
    return text or None


class SubagentRuns:
    """Sub-agent conversations of one session, collected as they are read, then claimed by the
    results of the calls that started them.

    Inline side-chain records (1.x) are fed with :meth:`feed`; the 2.x files beside the session
    are read on the first claim that finds nothing inline (bounded in count and size).
    """

    def __init__(self, transcript: Path | None = None) -> None:
        self.transcript = transcript
        self._by_prompt: dict[str, list[SubagentActivity]] = {}
        self._by_agent: dict[str, SubagentActivity] = {}
        self._owner: dict[str, SubagentActivity] = {}  # record uuid -> its run
        self._files_read = False
        self.problems: list[str] = []

    def feed(self, record: Mapping[str, Any], message: Message | None) -> None:
        """One side-chain record (with its decoded message, when it is one)."""
        uuid = record.get("uuid")
        parent = record.get("parentUuid")
        run = self._owner.get(parent) if isinstance(parent, str) else None
        if run is None and message is not None:
            prompt = _first_prompt(message)
            if prompt is not None:
                run = SubagentActivity(prompt=prompt, agent_id=_agent_id(record))
                self._by_prompt.setdefault(prompt, []).append(run)
                if run.agent_id:
                    self._by_agent[run.agent_id] = run
                if isinstance(uuid, str):
                    self._owner[uuid] = run
                return  # the prompt is the call's input, not the agent's work
        if run is None:
            return
        if isinstance(uuid, str):
            self._owner[uuid] = run
        if message is not None:
            run.add(message)

    def claim(
        self, call: ToolUseBlock, result_record: Mapping[str, Any] | None = None
    ) -> SubagentActivity | None:
        """The run a ``Task``/``Agent`` call started, once (``None`` when none was recorded)."""
        agent_id = _result_agent_id(result_record) if result_record is not None else None
        run = self._take(call, agent_id)
        if run is None and not self._files_read:
            self._read_files()
            run = self._take(call, agent_id)
        return run

    def _take(self, call: ToolUseBlock, agent_id: str | None) -> SubagentActivity | None:
        if agent_id and agent_id in self._by_agent:
            run = self._by_agent.pop(agent_id)
            runs = self._by_prompt.get(run.prompt, [])
            if run in runs:
                runs.remove(run)
            return run
        prompt = call.input.get("prompt")
        if isinstance(prompt, str):
            waiting = self._by_prompt.get(prompt.strip())
            if waiting:
                run = waiting.pop(0)
                if run.agent_id:
                    self._by_agent.pop(run.agent_id, None)
                return run
        return None

    def _read_files(self) -> None:
        self._files_read = True
        if self.transcript is None:
            return
        folder = self.transcript.with_suffix("") / "subagents"
        try:
            names = sorted(
                entry.name
                for entry in os.scandir(folder)
                if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False)
            )
        except OSError:
            return
        for name in names[:MAX_SUBAGENT_FILES]:
            self._read_file(folder / name)

    def _read_file(self, path: Path) -> None:
        # Imported here: the readers import this module.
        from memframe.transcripts._jsonl import TranscriptError, iter_records
        from memframe.transcripts.claude_code import MESSAGE_TYPES, message_of

        try:
            if path.stat().st_size > MAX_SUBAGENT_FILE_BYTES:
                self.problems.append(f"{path.name}: larger than {MAX_SUBAGENT_FILE_BYTES} bytes")
                return
            stem_id = path.stem.removeprefix("agent-")
            run: SubagentActivity | None = None
            for _, record in iter_records(path):
                kind = record.get("type")
                if not isinstance(kind, str) or kind not in MESSAGE_TYPES:
                    continue
                message = message_of(record)
                if message is None:
                    continue
                if run is None:
                    prompt = _first_prompt(message)
                    if prompt is None:
                        continue
                    run = SubagentActivity(prompt=prompt, agent_id=_agent_id(record) or stem_id)
                    self._by_prompt.setdefault(prompt, []).append(run)
                    self._by_agent[run.agent_id or stem_id] = run
                    continue
                run.add(message)
        except (OSError, TranscriptError) as exc:
            self.problems.append(f"{path.name}: {exc}")


def _agent_id(record: Mapping[str, Any]) -> str | None:
    value = record.get("agentId")
    return value if isinstance(value, str) and value else None


def _result_agent_id(record: Mapping[str, Any]) -> str | None:
    result = record.get("toolUseResult")
    if isinstance(result, Mapping):
        value = result.get("agentId")
        if isinstance(value, str) and value:
            return value
    return None


def attach(
    message: Message,
    calls: Mapping[str, ToolUseBlock],
    runs: SubagentRuns,
    record: Mapping[str, Any] | None,
) -> None:
    """Put the activity of every sub-agent whose call ``message`` answers into its ``meta``."""
    found: dict[str, Any] = {}
    for result in message.tool_results:
        call = calls.get(result.tool_use_id)
        if call is None or call.name not in SUBAGENT_TOOLS:
            continue
        run = runs.claim(call, record)
        if run is not None:
            summary = run.to_dict()
            description = call.input.get("description")
            summary["description"] = description if isinstance(description, str) else None
            found[result.tool_use_id] = summary
    if found:
        message.meta["subagents"] = found


def subagent_calls(messages: Iterable[Message]) -> dict[str, ToolUseBlock]:
    """The ``Task``/``Agent`` calls of some assistant messages, by id."""
    return {
        call.id: call
        for message in messages
        if message.role == "assistant"
        for call in message.tool_uses
        if call.name in SUBAGENT_TOOLS
    }


__all__ = [
    "SUBAGENT_TOOLS",
    "SubagentActivity",
    "SubagentRuns",
    "attach",
    "describe",
    "subagent_calls",
]
