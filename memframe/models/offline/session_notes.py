"""Session notes without a model: fill the template from the conversation itself.

The task, corrections, files and functions, commands, errors and their fixes, the latest state
and a terse worklog are all extracted from the messages and tool calls. The result is merged
with the current notes (list sections keep earlier lines, so facts survive a compaction) and
answered as one ``Edit`` of the notes file.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from pathlib import PurePath

from memframe import _backend
from memframe.messages import ToolUseBlock
from memframe.models.base import ModelRequest, ModelResponse, ToolCall
from memframe.models.offline._common import (
    CORRECTION as _CORRECTION,
)
from memframe.models.offline._common import (
    OWN_CALL_PREFIX,
    Conversation,
    clip,
    first_line,
    read_conversation,
    user_text,
)
from memframe.session_notes import Section, Template, parse_sections, render_sections

PATH_KEYS = ("file_path", "path", "notebook_path")
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "exec_command", "local_shell"})
_FUNCTION = re.compile(
    r"(?:\bdef|\bclass|\bfunction|\bfn|\binterface|\btype)\s+([A-Za-z_][A-Za-z0-9_]*)"
    r"|\b(?:const|let|export const)\s+([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?:async\s*)?\("
)
_TAGS = re.compile(r"</?[a-z_-]+>")
# Sections whose lines accumulate across updates; the others are replaced when there is news.
LIST_SECTIONS = frozenset(
    {"Task specification", "Files and Functions", "Workflow", "Errors & Corrections", "Worklog"}
)


def _command(call: ToolUseBlock) -> str | None:
    if call.name not in SHELL_TOOLS:
        return None
    command = call.input.get("command", call.input.get("cmd"))
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    return command if isinstance(command, str) and command.strip() else None


def _path(call: ToolUseBlock) -> str | None:
    for key in PATH_KEYS:
        value = call.input.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _functions(call: ToolUseBlock) -> list[str]:
    names: list[str] = []
    for key in ("new_string", "content", "old_string"):
        value = call.input.get(key)
        if isinstance(value, str):
            for match in _FUNCTION.finditer(value):
                names.append(match.group(1) or match.group(2))
    return names


def _describe(call: ToolUseBlock) -> str:
    command = _command(call)
    if command is not None:
        return f"`{clip(command, 100)}`"
    path = _path(call)
    return f"{call.name} {path}" if path else call.name


def _key(call: ToolUseBlock) -> tuple[str, str]:
    return call.name, _command(call) or _path(call) or ""


def _title(conv: Conversation) -> list[str]:
    requests = [t.request for t in conv.turns if t.request]
    # a bare slash command ("/init") says little: prefer the first request with words in it
    typed = [r for r in requests if not (r.startswith("/") and len(r.split()) == 1)]
    return [first_line((typed or requests)[0], 80)] if requests else []


def _task(conv: Conversation) -> list[str]:
    requests = [t.request for t in conv.turns if t.request]
    if not requests:
        return []
    lines = [f"- Asked: {clip(requests[0], 400)}"]
    lines += [f"- Then: {clip(r, 200)}" for r in requests[1:] if not _CORRECTION.match(r)]
    return lines


def _files(conv: Conversation) -> list[str]:
    actions: OrderedDict[str, OrderedDict[str, int]] = OrderedDict()
    functions: dict[str, list[str]] = {}
    for _, call in conv.calls():
        path = _path(call)
        if path is None:
            continue
        actions.setdefault(path, OrderedDict())
        actions[path][call.name] = actions[path].get(call.name, 0) + 1
        actions.move_to_end(path)
        for name in _functions(call):
            if name not in functions.setdefault(path, []):
                functions[path].append(name)
    lines = []
    for path, counts in actions.items():
        done = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in counts.items())
        names = functions.get(path, [])
        extra = f"; functions: {', '.join(names[:8])}" if names else ""
        lines.append(f"- `{path}` ({done}{extra})")
    return lines


def _workflow(conv: Conversation) -> list[str]:
    seen: OrderedDict[str, bool] = OrderedDict()
    for _, call in conv.calls():
        command = _command(call)
        if command is None:
            continue
        result = conv.results.get(call.id)
        failed = result is not None and result.is_error
        seen[clip(command, 160)] = failed
        seen.move_to_end(clip(command, 160))
    return [f"- `{cmd}`" + (" (failed)" if failed else "") for cmd, failed in seen.items()]


def _errors(conv: Conversation) -> list[str]:
    calls = conv.calls()
    lines = []
    for position, (_, call) in enumerate(calls):
        result = conv.results.get(call.id)
        if result is None or not result.is_error:
            continue
        error = first_line(_TAGS.sub("", result.content), 160) or "failed"
        later = calls[position + 1 :]
        fixed = next(
            (
                c
                for _, c in later
                if _key(c) == _key(call)
                and (r := conv.results.get(c.id)) is not None
                and not r.is_error
            ),
            None,
        )
        edits = [
            p for _, c in later if c.name in ("Edit", "Write", "MultiEdit") and (p := _path(c))
        ]
        if fixed is not None:
            outcome = "resolved: a later run succeeded" + (
                f" after editing {', '.join(dict.fromkeys(edits[:3]))}" if edits else ""
            )
        elif edits:
            outcome = f"followed by edits to {', '.join(dict.fromkeys(edits[:3]))}"
        else:
            outcome = "not resolved yet"
        lines.append(f"- {_describe(call)} failed: {error} — {outcome}")
    for turn in conv.turns:
        if turn.request and _CORRECTION.match(turn.request):
            lines.append(f"- User correction: {clip(turn.request, 200)}")
    return lines


def _codebase(conv: Conversation) -> list[str]:
    directories: OrderedDict[str, int] = OrderedDict()
    for _, call in conv.calls():
        path = _path(call)
        if path is None:
            continue
        parent = str(PurePath(path).parent)
        directories[parent] = directories.get(parent, 0) + 1
    return [f"- `{d}/`: {n} file operation(s)" for d, n in directories.items()]


def _current_state(conv: Conversation) -> list[str]:
    lines = []
    requests = [t.request for t in conv.turns if t.request]
    if requests:
        lines.append(f"- Latest request: {clip(requests[-1], 200)}")
    last = next((m for m in reversed(conv.messages) if m.role == "assistant"), None)
    if last is not None:
        if last.tool_uses:
            lines.append("- In progress: " + ", ".join(_describe(c) for c in last.tool_uses[:3]))
        elif last.text.strip():
            lines.append(f"- Last reply: {first_line(last.text, 200)}")
    return lines


def _key_results(conv: Conversation) -> list[str]:
    for message in reversed(conv.messages):
        if message.role == "assistant" and not message.tool_uses and message.text.strip():
            return [clip(message.text.strip(), 800)]
    return []


def _worklog(conv: Conversation) -> list[str]:
    lines = []
    for turn in conv.turns:
        counts: OrderedDict[str, int] = OrderedDict()
        for call in turn.tools:
            counts[call.name] = counts.get(call.name, 0) + 1
        done = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in counts.items())
        request = clip(turn.request, 80) if turn.request else "(continued)"
        lines.append(f"- {request}" + (f" → {done}" if done else ""))
    return lines


EXTRACTORS: dict[str, Callable[[Conversation], list[str]]] = {
    "Session Title": _title,
    "Current State": _current_state,
    "Task specification": _task,
    "Files and Functions": _files,
    "Workflow": _workflow,
    "Errors & Corrections": _errors,
    "Codebase and System Documentation": _codebase,
    "Key results": _key_results,
    "Worklog": _worklog,
}


def _fit(lines: list[str], budget: int, count_tokens: Callable[[str], int]) -> list[str]:
    """The most recent lines that fit in ``budget`` tokens (older ones are dropped first)."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = count_tokens(line) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    return list(reversed(kept))


def build_notes(
    template: Template,
    current: str,
    conv: Conversation,
    *,
    section_budget: int,
    count_tokens: Callable[[str], int] = _backend.count_tokens,
) -> str:
    _, present = parse_sections(current)
    old = {s.title: s.body for s in present}
    sections = []
    for section in template.sections:
        extractor = EXTRACTORS.get(section.title)
        new = extractor(conv) if extractor is not None else []
        previous = old.get(section.title, "")
        if section.title in LIST_SECTIONS:
            merged = list(dict.fromkeys([*previous.splitlines(), *new]))
            lines = [line for line in merged if line.strip()]
        elif section.title == "Session Title" and previous:
            lines = [previous]
        else:
            lines = new or ([previous] if previous else [])
        body = "\n".join(_fit(lines, section_budget, count_tokens))
        sections.append(Section(section.header, section.description, body))
    return render_sections(sections)


def session_notes_recipe(request: ModelRequest) -> ModelResponse:
    task = request.task
    notes_path, current = str(task["notes_path"]), str(task["notes"])
    template = Template(str(task["template"]))
    end = int(task.get("conversation_end", len(request.messages)))
    conv = read_conversation(request.messages[:end])
    new = build_notes(template, current, conv, section_budget=int(task.get("section_budget", 2000)))
    if new == current:
        return ModelResponse(text="The notes are up to date.", stop_reason="end_turn")
    call = ToolCall(
        f"{OWN_CALL_PREFIX}1",
        "Edit",
        {"file_path": notes_path, "old_string": current, "new_string": new},
    )
    return ModelResponse(tool_calls=(call,), stop_reason="tool_use")


__all__ = ["build_notes", "session_notes_recipe", "user_text"]
