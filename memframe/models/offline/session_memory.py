"""Session notes without a model: fill the template from the conversation itself.

The conversation is read once into steps (each tool call with its result: what it touched, did
it fail, was it refused, what came out of it) and turns (each request with what was done and
the answer). From those: the task and the decisions taken, the files and functions, the
commands and their outcomes, errors matched with what fixed them, the user's corrections, what
was learnt, the answers and results of each turn, a terse worklog and where the work stands.

List sections hold one line per key (a file's path, a command, a failing call, a request …).
When the same key comes again — later in the session or in an update after a compaction — its
line is replaced, never appended, so no line appears twice. The result is answered as one
``Edit`` of the notes file.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from memframe import _backend
from memframe.messages import ToolResultBlock, ToolUseBlock
from memframe.models.base import ModelRequest, ModelResponse, ToolCall
from memframe.models.offline import outcomes
from memframe.models.offline._common import (
    CORRECTION as _CORRECTION,
)
from memframe.models.offline._common import (
    OWN_CALL_PREFIX,
    Conversation,
    Turn,
    read_conversation,
    user_text,
)
from memframe.session_memory import Section, Template, parse_sections, render_sections
from memframe.transcripts.subagents import describe as describe_subagent

PATH_KEYS = ("file_path", "path", "notebook_path")
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
READ_TOOLS = frozenset({"Read", "NotebookRead", "read_file", "view"})
SEARCH_TOOLS = frozenset({"Glob", "Grep", "LS", "glob", "grep", "list_dir", "search", "find"})
SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "shell_command", "exec_command", "local_shell"})
AGENT_TOOLS = frozenset({"Task", "Agent"})
TEXT_EDITORS = frozenset({"str_replace_based_edit_tool", "str_replace_editor"})
_FUNCTION = re.compile(
    r"(?:\bdef|\bclass|\bfunction|\bfn|\binterface|\btype)\s+([A-Za-z_][A-Za-z0-9_]*)"
    r"|\b(?:const|let|export const)\s+([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?:async\s*)?\("
)
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
# A path a sub-agent's report names: has a directory part and an extension.
_REPORTED_PATH = re.compile(
    r"(?<![\w/.@-])((?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w@-][\w.@-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/])"
)
_INTERRUPTION = re.compile(r"^\s*\[Request interrupted by user", re.IGNORECASE)
_QUESTION_ANSWER = re.compile(r'"(?P<question>[^"]*)"="(?P<answer>[^"]*)"')

# Sentences of the assistant that state a decision, or a reason / diagnosis.
_DECISION = re.compile(
    r"\b(?:instead\b|rather than\b|decided\b|opted\b|going with\b|I(?:'ll| will) (?:go with|"
    r"switch to|stick with)\b|chose\b|choose\b.+\bover\b)",
    re.IGNORECASE,
)
_REASON = re.compile(
    r"\b(?:because\b|the (?:real |root )?(?:issue|problem|bug|cause|culprit|reason|error|fix)"
    r"(?: here)? (?:is|was|seems to be|appears to be)\b|root cause\b|(?:it )?turns out\b"
    r"|caused by\b|due to\b|this (?:happens|happened|fails|failed) (?:because|when)\b)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[*])")
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_MARKUP = re.compile(r"^\s*(?:#+\s*|[-*+]\s+|\d+[.)]\s+|>\s*)")

# Sections holding one line per key; the others are replaced when there is something new.
LIST_SECTIONS = frozenset(
    {
        "Task specification",
        "Files and Functions",
        "Workflow",
        "Errors & Corrections",
        "Codebase and System Documentation",
        "Learnings",
        "Key results",
        "Worklog",
    }
)
# How many lines of a kind a section keeps (the newest), before the section budget.
MAX_ANSWERS = 8
MAX_OUTCOMES = 10
MAX_LEARNINGS = 15
MAX_DECISIONS = 10
MAX_FINDINGS = 8
ANSWER_CHARS = 600
LAST_ANSWER_CHARS = 1000
FINDING_CHARS = 500
MAX_PLANS = 3
PLAN_CHARS = 600
MAX_AGENT_COMMANDS = 4
ITEM_CHARS = 140


# -- text ----------------------------------------------------------------------------------------


def clip_words(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, cut at a word boundary (``…`` marks
    the cut). Text without spaces near the cut (CJK, a long path) is cut where it must."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def _title_words(text: str, max_words: int = 10, limit: int = 80) -> str:
    """The start of ``text`` as a title: whole words only, ending at a clause boundary when
    there is one after the third word."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = _MARKUP.sub("", line).replace("**", "").strip()
    words = line.split()
    if len(words) <= max_words and len(line) <= limit:
        return line.rstrip(" ,;:")
    kept: list[str] = []
    for word in words:
        if len(kept) == max_words or len(" ".join([*kept, word])) > limit:
            break
        kept.append(word)
        if len(kept) >= 4 and word[-1] in ",.;:!?":
            return " ".join(kept).rstrip(",.;:")
    if not kept:  # one very long word (CJK text without spaces, a URL)
        return clip_words(line, min(limit, 40))
    return " ".join(kept).rstrip(",.;:") + "…"


def _code(text: str) -> str:
    """``text`` as a Markdown code span (a longer fence when it holds backticks)."""
    text = " ".join(text.split())
    if "`" not in text:
        return f"`{text}`"
    return f"`` {text} ``"


def _label(text: str, limit: int) -> str:
    """A request or a call as the start of a keyed line: no arrow in it, so the key is safe."""
    return clip_words(text, limit).replace(" → ", " -> ")


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


# -- steps: each tool call with its result ---------------------------------------------------------


@dataclass
class Step:
    position: int  # in the conversation's calls
    message: int  # index of the assistant message that made the call
    call: ToolUseBlock
    result: ToolResultBlock | None
    kind: str  # shell, edit, read, search, agent, todo, question, other
    command: str | None = None
    family: str = ""
    paths: tuple[str, ...] = ()
    verb: str = ""  # what it did to its paths: read, edited, created, written, deleted
    verbs: dict[str, str] = field(default_factory=dict)  # per path, when they differ (a patch)
    status: str = "pending"  # ok, failed, rejected, interrupted, pending
    error: str = ""  # the error's message, or what the user said when refusing
    counts: str | None = None
    commits: list[outcomes.Commit] = field(default_factory=list)
    pushes: list[outcomes.Push] = field(default_factory=list)
    pulls: list[str] = field(default_factory=list)
    clean: bool = False
    # what a sub-agent did (memframe.transcripts.subagents), when the reader summarised it
    activity: dict[str, Any] | None = None

    @property
    def describe(self) -> str:
        if self.command is not None:
            return _code(clip_words(self.command, 100))
        if self.paths:
            return f"{self.call.name} {_code(self.paths[0])}"
        task = self.call.input.get("description") if self.kind == "agent" else None
        if isinstance(task, str) and task.strip():
            return f"{self.call.name} “{clip_words(task, 60)}”"
        return self.call.name

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def outcome(self) -> str:
        """What came out of a successful call, briefly ("" when nothing worth saying)."""
        parts = [f"commit {c.hash}" for c in self.commits]
        parts += [f"pushed {', '.join(p.refs)}" for p in self.pushes]
        parts += self.pulls
        if self.counts:
            parts.append(self.counts)
        if self.clean:
            parts.append("working tree clean")
        return "; ".join(parts)


def _command(call: ToolUseBlock) -> str | None:
    if call.name not in SHELL_TOOLS:
        return None
    command = call.input.get("command", call.input.get("cmd"))
    if isinstance(command, list):
        parts = [str(part) for part in command]
        # Codex: ["bash", "-lc", "the command"]
        if (
            len(parts) >= 3
            and PurePath(parts[0]).name in ("bash", "sh", "zsh")
            and (parts[1] in ("-c", "-lc", "-ic"))
        ):
            command = parts[-1]
        else:
            command = " ".join(parts)
    return command if isinstance(command, str) and command.strip() else None


def _patch_text(call: ToolUseBlock, command: str | None) -> str:
    for key in ("input", "patch"):
        value = call.input.get(key)
        if isinstance(value, str) and "*** " in value:
            return value
    return command if command and "*** Begin Patch" in command else ""


def _patch_files(patch: str) -> list[tuple[str, str]]:
    verbs = {"Add": "created", "Update": "edited", "Delete": "deleted"}
    found: list[tuple[str, str]] = []
    for match in _PATCH_FILE.finditer(patch):
        if match.group(3):
            found.append((match.group(3).strip(), "created"))
        else:
            found.append((match.group(2).strip(), verbs[match.group(1)]))
    return found


def _input_path(call: ToolUseBlock) -> str | None:
    for key in PATH_KEYS:
        value = call.input.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _kind_and_verb(call: ToolUseBlock, command: str | None, patch: str) -> tuple[str, str]:
    name = call.name
    if patch:
        return "edit", "edited"
    if command is not None:
        return "shell", ""
    if name in TEXT_EDITORS:
        action = call.input.get("command")
        return ("read", "read") if action == "view" else ("edit", "edited")
    if name in EDIT_TOOLS:
        return "edit", "written" if name == "Write" else "edited"
    if name in READ_TOOLS:
        return "read", "read"
    if name in SEARCH_TOOLS:
        return "search", ""
    if name in AGENT_TOOLS:
        return "agent", ""
    if name in ("TodoWrite", "update_plan", "TaskCreate", "TaskUpdate"):
        return "todo", ""
    if name == "AskUserQuestion":
        return "question", ""
    return "other", ""


def _step(position: int, message: int, call: ToolUseBlock, conv: Conversation) -> Step:
    result = conv.results.get(call.id)
    command = _command(call)
    patch = _patch_text(call, command)
    kind, verb = _kind_and_verb(call, command, patch)
    step = Step(position, message, call, result, kind, command=command, verb=verb)
    if patch:
        files = _patch_files(patch)
        step.paths = tuple(dict.fromkeys(path for path, _ in files))
        step.verbs = dict(files)
        step.verb = files[0][1] if len(files) == 1 else "edited"
        step.command = None  # an apply_patch is an edit, not a command to remember
    elif kind not in ("search", "shell"):
        path = _input_path(call)
        step.paths = (path,) if path else ()
    if command is not None and not patch:
        step.family = outcomes.command_family(command)
    if result is None:
        return step
    text = result.content
    refused = outcomes.rejection(text)
    if refused is not None:
        step.status, step.error = refused
        return step
    if step.command is not None:
        failed = outcomes.shell_failed(step.command, text, result.is_error)
    elif kind == "edit":
        failed = outcomes.edit_failed(text, result.is_error)
    else:
        failed = result.is_error
    if failed:
        step.status = "failed"
        step.error = outcomes.error_message(text) or "failed"
        if step.command is not None and not outcomes.is_read_only(step.command):
            step.counts = outcomes.test_counts(text)
        return step
    step.status = "ok"
    if kind == "edit" and call.name == "Write" and "created" in text.lower()[:200]:
        step.verb = "created"
    if step.command is not None and not outcomes.is_read_only(step.command):
        step.counts = outcomes.test_counts(text)
        step.commits = outcomes.commits(text)
        step.pushes = outcomes.pushes(text)
    if step.command is not None:
        step.clean = step.family == "git status" and outcomes.tree_clean(text)
    step.pulls = outcomes.pull_requests(f"{call.name} {step.command or ''}", text)
    return step


@dataclass
class HookEvent:
    """A hook that blocked or stopped the agent (what the host wrote into the user's turn),
    with what the turn did before it and after it (until the turn's next hook)."""

    message: int  # index of the user message holding it
    turn: int  # the turn it came in (-1 before the first request)
    hook: outcomes.HookMessage
    before: list[Step] = field(default_factory=list)
    after: list[Step] = field(default_factory=list)


@dataclass
class Episode:
    """The last failure of one call, how often it failed, and what fixed it."""

    key: str
    failure: Step
    failures: int
    fix: Step | None
    actions: list[str]


@dataclass
class TurnInfo:
    number: int
    turn: Turn
    steps: list[Step]
    answer: str  # the turn's final reply (no tool calls after it), or ""
    correction: bool  # the request corrects the agent
    opening: str  # the first thing the assistant said or did in it


class Session:
    """The conversation read once for every section."""

    def __init__(
        self, conv: Conversation, subagents: Mapping[str, Mapping[str, Any]] | None = None
    ) -> None:
        self.conv = conv
        self.steps = [_step(n, i, call, conv) for n, (i, call) in enumerate(conv.calls())]
        for step in self.steps:
            activity = (subagents or {}).get(step.call.id) if step.kind == "agent" else None
            if isinstance(activity, Mapping):
                step.activity = dict(activity)
        self.requests = [t.request for t in conv.turns if t.request]
        owner, after_refusal = self._turn_of_each_message()
        self.turns: list[TurnInfo] = []
        for number, turn in enumerate(conv.turns):
            mine = [i for i, n in enumerate(owner) if n == number]
            steps = [step for step in self.steps if owner[step.message] == number]
            said = [i for i in mine if self.conv.messages[i].role == "assistant"]
            last = self.conv.messages[said[-1]] if said else None
            # the answer is the turn's last assistant message, when no tool call came with it
            answer = last.text.strip() if last is not None and not last.tool_uses else ""
            first = self.conv.messages[said[0]] if said else None
            opening = ""
            if first is not None:
                opening = first.text.strip() or next(
                    (x.describe for x in steps if x.message == said[0]), ""
                )
            correction = bool(turn.request) and (
                _CORRECTION.match(turn.request) is not None or number in after_refusal
            )
            self.turns.append(TurnInfo(number, turn, steps, answer, correction, opening))
        self.episodes = self._episodes()
        self.hooks = self._hooks(owner)

    def _turn_of_each_message(self) -> tuple[list[int], set[int]]:
        """The turn each message belongs to (-1 before the first), and the turns whose request
        came right after the user refused a call or interrupted the agent."""
        turns = self.conv.turns
        pending = [n for n, turn in enumerate(turns) if turn.request]
        current = 0 if turns and not turns[0].request else -1
        owner: list[int] = []
        after_refusal: set[int] = set()
        refused = False
        for message in self.conv.messages:
            if message.role == "user":
                if _INTERRUPTION.match(message.text) or any(
                    (r := outcomes.rejection(b.content)) is not None and r[0] == "rejected"
                    for b in message.tool_results
                ):
                    refused = True
                text = user_text(message)
                if pending and text and text == turns[pending[0]].request:
                    current = pending.pop(0)
                    if refused:
                        after_refusal.add(current)
                    refused = False
            owner.append(current)
        return owner, after_refusal

    def _hooks(self, owner: list[int]) -> list[HookEvent]:
        found: list[HookEvent] = []
        for index, message in enumerate(self.conv.messages):
            if message.role != "user" or message.tool_results or message.is_compact_summary:
                continue
            for hook in outcomes.hook_messages(message.text):
                found.append(HookEvent(index, owner[index], hook))
        for n, event in enumerate(found):
            if event.turn < 0:
                continue
            until = next((x.message for x in found[n + 1 :] if x.message > event.message), None)
            for step in self.turns[event.turn].steps:
                if step.message < event.message:
                    event.before.append(step)
                elif until is None or step.message < until:
                    event.after.append(step)
        return found

    def _episodes(self) -> list[Episode]:
        last: dict[str, Step] = {}
        counts: dict[str, int] = {}
        for step in self.steps:
            if step.status == "failed":
                last[step.describe] = step
                counts[step.describe] = counts.get(step.describe, 0) + 1
        episodes = []
        for key, failure in sorted(last.items(), key=lambda item: item[1].position):
            fix = self._fix(failure)
            actions = self._actions(failure, fix) if fix is not None else []
            episodes.append(Episode(key, failure, counts[key], fix, actions))
        return episodes

    def _fix(self, failure: Step) -> Step | None:
        for step in self.steps[failure.position + 1 :]:
            # a call made in the same message (in parallel) cannot be a reaction to the failure
            if not step.ok or step.message <= failure.message:
                continue
            if failure.kind == "shell":
                if step.kind == "shell" and step.family == failure.family:
                    return step
            elif failure.kind == "edit" or (failure.paths and failure.kind != "read"):
                if step.kind == "edit" and set(step.paths) & set(failure.paths):
                    return step
            elif step.call.name == failure.call.name and step.paths == failure.paths:
                return step
        return None

    def _actions(self, failure: Step, fix: Step) -> list[str]:
        """What was done between a failure and its fix that can have fixed it."""
        edited: list[str] = []
        ran: list[str] = []
        read_first = False
        for step in self.steps[failure.position + 1 : fix.position]:
            if not step.ok:
                continue
            if step.kind == "edit":
                edited.extend(p for p in step.paths if p not in edited)
            elif step.kind == "read" and set(step.paths) & set(failure.paths):
                read_first = True
            elif (
                step.command is not None
                and step.family != failure.family
                and not outcomes.is_read_only(step.command)
            ):
                ran.append(step.describe)
        actions = []
        if read_first:
            actions.append("reading the file first")
        if edited and failure.kind != "edit":
            shown = ", ".join(_code(clip_words(p, 80)) for p in edited[:4])
            more = f" and {len(edited) - 4} more" if len(edited) > 4 else ""
            actions.append(f"editing {shown}{more}")
        if ran:
            actions.append("running " + ", ".join(dict.fromkeys(ran[:2])))
        return actions

    # -- what the sections read --

    def todos(self) -> list[tuple[str, str]]:
        """The last to-do list: (item, status) of the items not completed."""
        items: dict[str, tuple[str, str]] = {}
        last_list: list[tuple[str, str]] | None = None
        for step in self.steps:
            name, data = step.call.name, step.call.input
            if name == "TodoWrite" and isinstance(data.get("todos"), list):
                last_list = _items(data["todos"], "content")
            elif name == "update_plan" and isinstance(data.get("plan"), list):
                last_list = _items(data["plan"], "step")
            elif name == "TaskCreate" and isinstance(data.get("subject"), str):
                found = re.search(r"#(\w+)", step.result.content if step.result else "")
                key = found.group(1) if found else str(len(items) + 1)
                items[key] = (data["subject"], "pending")
            elif name == "TaskUpdate" and str(data.get("taskId", "")) in items:
                subject, status = items[str(data["taskId"])]
                new = data.get("status")
                items[str(data["taskId"])] = (subject, new if isinstance(new, str) else status)
        todo = last_list if last_list is not None else list(items.values())
        return [(item, status) for item, status in todo if status not in ("completed", "deleted")]

    def answers(self) -> list[tuple[str, str]]:
        """(question, answer) pairs of AskUserQuestion calls."""
        found = []
        for step in self.steps:
            if step.kind == "question" and step.ok and step.result is not None:
                for match in _QUESTION_ANSWER.finditer(step.result.content):
                    if match.group("answer").strip():
                        found.append((match.group("question"), match.group("answer")))
        return found

    def sentences(self) -> Iterable[str]:
        """The assistant's sentences, outside code blocks, in order."""
        for message in self.conv.messages:
            if message.role != "assistant" or message.is_sidechain:
                continue
            text = _FENCE.sub("\n", message.text)
            for raw_line in text.splitlines():
                line = _MARKUP.sub("", raw_line).replace("**", "").strip()
                for sentence in _SENTENCE_END.split(line):
                    sentence = sentence.strip()
                    if len(sentence) >= 30 and not sentence.endswith(("?", ":")):
                        yield sentence


def _items(raw: list[Any], key: str) -> list[tuple[str, str]]:
    items = []
    for entry in raw:
        if isinstance(entry, Mapping) and isinstance(entry.get(key), str):
            status = entry.get("status")
            items.append((str(entry[key]), status if isinstance(status, str) else "pending"))
    return items


# -- the sections --------------------------------------------------------------------------------


def _title(s: Session) -> list[str]:
    # a bare slash command ("/init") says little: prefer the first request with words in it
    typed = [r for r in s.requests if not (r.startswith("/") and len(r.split()) == 1)]
    chosen = (typed or s.requests)[:1]
    return [_title_words(chosen[0])] if chosen else []


_PROCEDURAL = re.compile(r"^(?:now )?(?:let me|let's|i'll now|next,? i'll)\b", re.IGNORECASE)
_WEIGHTY = re.compile(r"\b(?:rather than|because|instead of)\b", re.IGNORECASE)


def _is_decision(sentence: str) -> bool:
    """A decision, not a step: "Let me read the file instead." says little."""
    if not _DECISION.search(sentence):
        return False
    return not _PROCEDURAL.match(sentence) or _WEIGHTY.search(sentence) is not None


def _task(s: Session) -> list[str]:
    lines: list[str] = []
    for info in s.turns:
        # "no, …" is not a task; what the user asks right after stopping the agent still is
        if not info.turn.request or _CORRECTION.match(info.turn.request):
            continue
        if not lines:
            lines.append(f"- Asked: {clip_words(info.turn.request, 400)}")
        else:
            lines.append(f"- Then: {clip_words(info.turn.request, 200)}")
    for question, answer in s.answers():
        lines.append(f"- Answered: {_label(question, 120)} → {clip_words(answer, 200)}")
    lines += _plans(s)
    decisions = [x for x in s.sentences() if _is_decision(x)]
    lines += [f"- Decision: {clip_words(x, 240)}" for x in dict.fromkeys(decisions)]
    return lines


_APPROVED_PLAN = re.compile(r"^#+ Approved Plan:?\s*$", re.MULTILINE)


def _plans(s: Session) -> list[str]:
    """The plans the user approved (Claude Code's ``ExitPlanMode``: the plan is its input, or
    follows ``## Approved Plan:`` in the result)."""
    lines = []
    for step in s.steps:
        if step.call.name != "ExitPlanMode" or not step.ok or step.result is None:
            continue
        plan = step.call.input.get("plan")
        if not (isinstance(plan, str) and plan.strip()):
            found = _APPROVED_PLAN.search(step.result.content)
            plan = step.result.content[found.end() :] if found else ""
        digest = _digest(plan, PLAN_CHARS, headings=True, spans=False)
        if digest:
            lines.append(f"- Plan approved: {digest}")
    return lines


@dataclass
class FileEntry:
    path: str
    actions: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    why: str = ""

    def render(self) -> str:
        actions = _ordered_actions(self.actions)
        inside = ", ".join(actions)
        if self.functions:
            inside += f"; functions: {', '.join(self.functions[:8])}"
        line = f"- {_code(self.path)} ({inside})"
        return f"{line} — {self.why}" if self.why else line


IN_PROGRESS = "in progress"
# Files whose text is prose or data: no function names in them.
_PROSE = frozenset(
    {".md", ".markdown", ".txt", ".rst", ".adoc", ".json", ".yaml", ".yml", ".toml", ".ini",
     ".cfg", ".csv", ".lock", ".log", ".html", ".xml", ".svg"}
)  # fmt: skip


def _is_prose(path: str) -> bool:
    return PurePath(path).suffix.lower() in _PROSE


_ACTION_ORDER = (
    "created", "edited", "written", "deleted", "read", "used", "edited by a sub-agent",
    "reported by a sub-agent",
)  # fmt: skip
_FILE_LINE = re.compile(
    r"^- (`+) ?(?P<path>.+?) ?\1(?!`) \((?P<actions>[^;()]*)(?:; functions: (?P<fns>[^()]*))?\)"
    r"(?: — (?P<why>.*))?$"
)


def _ordered_actions(actions: list[str]) -> list[str]:
    failed = (" failed", " rejected", " interrupted")
    done = {a for a in actions if not a.endswith(failed) and a != IN_PROGRESS}
    changed = bool({"edited", "written", "created", "deleted"} & done)

    def settled(attempt: str) -> bool:
        """A failed or refused attempt stops mattering once the same kind of thing worked."""
        verb = attempt.rsplit(" ", 1)[0]
        if verb == "edit":
            return changed
        return ("read" in done) if verb == "read" else bool(done)

    kept = [
        a
        for a in dict.fromkeys(actions)
        if a in done
        or (a == IN_PROGRESS and not done)  # a call in progress, until anything is known
        or (a.endswith(failed) and not settled(a))
    ]
    order = {a: n for n, a in enumerate(_ACTION_ORDER)}
    return sorted(kept, key=lambda a: order.get(a, len(order)))


def _known_action(action: str) -> bool:
    """An action this writer uses (a notes file from an older version said "Edit x2")."""
    verb, _, outcome = action.rpartition(" ")
    return (
        action in _ACTION_ORDER
        or action == IN_PROGRESS
        or (bool(verb) and outcome in ("failed", "rejected", "interrupted"))
    )


def _parse_file_line(line: str) -> FileEntry | None:
    match = _FILE_LINE.match(line)
    if match is None:
        return None
    actions = [a.strip() for a in match.group("actions").split(",") if _known_action(a.strip())]
    fns = [f.strip() for f in (match.group("fns") or "").split(",") if f.strip()]
    return FileEntry(match.group("path"), actions, fns, match.group("why") or "")


def _combine_files(old: str, new: str) -> str:
    """A file's line after an update: the union of what was done to it, the newest reason."""
    before, after = _parse_file_line(old), _parse_file_line(new)
    if before is None or after is None:
        return new
    functions = list(dict.fromkeys([*after.functions, *before.functions]))
    entry = FileEntry(
        after.path, [*before.actions, *after.actions], functions, after.why or before.why
    )
    return entry.render()


def _functions(call: ToolUseBlock) -> list[str]:
    texts: list[str] = []
    for key in ("new_string", "content", "old_string", "file_text", "new_str"):
        value = call.input.get(key)
        if isinstance(value, str):
            texts.append(value)
    edits = call.input.get("edits")
    if isinstance(edits, list):
        for edit in edits:
            if isinstance(edit, Mapping):
                texts += [str(v) for k, v in edit.items() if k in ("old_string", "new_string")]
    patch = call.input.get("input", call.input.get("patch"))
    if isinstance(patch, str):
        texts.append("\n".join(ln[1:] for ln in patch.splitlines() if ln.startswith(("+", "-"))))
    names: list[str] = []
    for text in texts:
        for match in _FUNCTION.finditer(text):
            names.append(match.group(1) or match.group(2))
    return list(dict.fromkeys(names))


def _why(s: Session, step: Step) -> str:
    """The assistant's words about an edit: the text of the message that made it, when that
    message names the file or makes only this change."""
    message = s.conv.messages[step.message]
    text = message.text.strip()
    if not text:
        return ""
    touching = [c for c in message.tool_uses if _input_path(c) or c.name in EDIT_TOOLS]
    names = {PurePath(p).name for p in step.paths}
    if len(touching) > 1 and not any(n and n in text for n in names):
        return ""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return clip_words(_MARKUP.sub("", line).replace("**", ""), 140).rstrip(":")


def _file_entries(s: Session) -> list[FileEntry]:
    entries: dict[str, FileEntry] = {}
    for step in s.steps:
        if not step.paths or step.kind in ("search", "shell"):
            continue
        for path in step.paths:
            entry = entries.pop(path, None) or FileEntry(path)
            entries[path] = entry  # the most recently touched last
            if step.ok:
                entry.actions.append(step.verbs.get(path, step.verb) or "used")
            elif step.status == "pending":
                entry.actions.append(IN_PROGRESS)
            else:
                verb = "edit" if step.kind == "edit" else step.call.name.lower()
                entry.actions.append(f"{verb} {step.status}")
            if step.kind == "edit" and step.ok and not _is_prose(path):
                for name in _functions(step.call):
                    if name not in entry.functions:
                        entry.functions.append(name)
            if step.kind == "edit":  # a failed attempt's message says why as well
                entry.why = _why(s, step) or entry.why
    for step in s.steps:
        written = step.activity.get("files") if step.activity else None
        for path in written if isinstance(written, list) else []:
            if isinstance(path, str):
                entry = entries.setdefault(path, FileEntry(path, []))
                if "edited by a sub-agent" not in entry.actions:
                    entry.actions.append("edited by a sub-agent")
        if step.kind == "agent" and step.ok and step.result is not None:
            for path in list(dict.fromkeys(_REPORTED_PATH.findall(step.result.content)))[:12]:
                if path not in entries:
                    entries[path] = FileEntry(path, ["reported by a sub-agent"])
    return list(entries.values())


def _files(s: Session) -> list[str]:
    return [entry.render() for entry in _file_entries(s)]


# Programs a sub-agent runs that say nothing about how to build, test or run the project.
_AGENT_SETUP = frozenset({"mkdir", "touch", "chmod", "cd", "rm", "cp", "mv", "kill", "pkill"})


def _agent_commands(activity: Mapping[str, Any]) -> list[str]:
    """The commands a sub-agent ran that change or build something: the last of each command
    family, at most ``MAX_AGENT_COMMANDS`` (what only looks, or writes a file through the
    shell, is left out: the Files section has the files)."""
    commands = activity.get("commands")
    by_family: dict[str, str] = {}
    for command in commands if isinstance(commands, list) else []:
        if not isinstance(command, str) or outcomes.is_read_only(command):
            continue
        family = outcomes.command_family(command)
        program = family.split(" ", 1)[0]
        if not family or program in outcomes.READ_ONLY_PROGRAMS or program in _AGENT_SETUP:
            continue
        by_family.pop(family, None)
        by_family[family] = command
    return list(by_family.values())[-MAX_AGENT_COMMANDS:]


def _workflow(s: Session) -> list[str]:
    last: dict[str, Step] = {}
    by_agent: dict[str, str] = {}  # commands only a sub-agent ran: by which one
    for step in s.steps:
        if step.command is not None:
            key = clip_words(step.command, 160)
            last.pop(key, None)
            by_agent.pop(key, None)
            last[key] = step
        elif step.kind == "agent" and step.activity:
            for command in _agent_commands(step.activity):
                key = clip_words(command, 160)
                if key not in last:
                    last[key] = step
                    by_agent[key] = _agent_label(step)
    lines = []
    for command, step in last.items():
        line = f"- {_code(command)}"
        if command in by_agent:
            lines.append(f"{line} (sub-agent “{by_agent[command]}”)")
            continue
        if step.status == "failed":
            line += " (failed)"
        elif step.status == "rejected":
            line += " (rejected by the user)"
        elif step.status == "interrupted":
            line += " (interrupted)"
        elif step.outcome():
            line += f" → {step.outcome()}"
        lines.append(line)
    return lines


def _fix_text(episode: Episode) -> str:
    fix = episode.fix
    if fix is None:
        return "not fixed yet"
    same = fix.describe == episode.failure.describe
    outcome = fix.outcome()
    then = ("it" if same else fix.describe) + " then succeeded"
    if outcome:
        then += f" ({outcome})"
    if episode.actions:
        return f"fixed by {' and '.join(episode.actions)}; {then}"
    if same:
        again = "run" if episode.failure.kind == "shell" else "attempt"
        return f"fixed: a later {again} succeeded{f' ({outcome})' if outcome else ''}"
    return f"fixed by {fix.describe}{f' ({outcome})' if outcome else ''}"


def _errors(s: Session) -> list[str]:
    entries: list[tuple[int, str]] = []
    for episode in s.episodes:
        times = f" (failed {episode.failures} times)" if episode.failures > 1 else ""
        message = clip_words(episode.failure.error, 200)
        line = f"- {episode.key} failed: {message}{times} → {_fix_text(episode)}"
        entries.append((episode.failure.position, line))
    refused: dict[str, tuple[int, str]] = {}
    for step in s.steps:
        if step.status in REFUSALS:
            key = REFUSALS[step.status].format(step.describe)
            said = f" — “{clip_words(step.error, 200)}”" if step.error else ""
            refused.pop(key, None)
            refused[key] = (step.position, f"- {key}{said}")
    entries += list(refused.values())
    entries += _hook_entries(s)
    entries.sort(key=lambda entry: entry[0])
    lines = [line for _, line in entries]
    for info in s.turns:
        if info.correction:
            lines.append(f"- User correction: {clip_words(info.turn.request, 200)}")
    return lines


REFUSALS = {"rejected": "User rejected {}", "interrupted": "User interrupted {}"}


def _unticked(text: str) -> str:
    """Text for the head of a keyed line: no code spans, so its key is not a command's."""
    return text.replace("`", "'")


def _stopped_request(event: HookEvent) -> bool:
    """A hook stopped the turn before the agent did anything: the request did not run."""
    return event.hook.kind == "stopped" and not event.before


def _hook_head(s: Session, event: HookEvent) -> str:
    """What a hook did and why, as the head of its line (its key)."""
    hook = event.hook
    reason = _unticked(clip_words(hook.reason, 200)) or "no reason given"
    if _stopped_request(event):
        request = s.turns[event.turn].turn.request if event.turn >= 0 else ""
        what = f"the request “{_unticked(_label(request, 80))}”" if request else "the turn"
        return f"{hook.name} stopped {what}: {reason}"
    if hook.kind == "stopped":
        return f"{hook.name} stopped the turn: {reason}"
    if hook.kind == "failed":
        return f"{hook.name} failed: {reason}"
    ending = hook.event.lower() in ("stop", "subagentstop")
    return f"{hook.name} blocked {'stopping' if ending else 'the agent'}: {reason}"


def _hook_entries(s: Session) -> list[tuple[int, str]]:
    """One line per hook and reason: what it blocked or stopped, why, and what was done next;
    a hook that blocks the same way again is counted, not repeated."""
    merged: dict[str, tuple[int, int, HookEvent]] = {}
    said = [step.message for step in s.steps]  # in order
    for event in s.hooks:
        head = _hook_head(s, event)
        position = bisect.bisect_right(said, event.message)  # the first step after it
        previous = merged.pop(head, None)
        merged[head] = (position, previous[1] + 1 if previous else 1, event)
    entries = []
    for head, (position, count, event) in merged.items():
        times = f"{count} times; " if count > 1 else ""
        if _stopped_request(event):
            tail = "it did not run"
        elif event.hook.kind == "stopped":
            tail = "the turn ended there"
        else:
            done = _did(event.after)
            tail = f"then {'; '.join(done)}" if done else "nothing done after it yet"
        entries.append((position, f"- {head} — {clip_words(times + tail, 240)}"))
    return entries


_CWD = re.compile(
    r"<cwd>\s*([^<\n]+?)\s*</cwd>|^# AGENTS\.md instructions for (\S[^\n]*?)\s*$", re.M
)


def _working_directory(s: Session) -> str:
    """Where the agent works, when the host says so in the conversation (Codex's
    ``<environment_context>`` and the header of the AGENTS.md it injects)."""
    found = ""
    for message in s.conv.messages:
        if message.role != "user" or message.tool_results:
            continue
        text = message.text
        if ("<cwd>" in text or "# AGENTS.md instructions for" in text) and not user_text(message):
            match = _CWD.search(text)
            if match is not None:
                found = (match.group(1) or match.group(2)).strip()
    return found


def _agent_label(step: Step) -> str:
    task = step.call.input.get("description")
    if not (isinstance(task, str) and task.strip()) and step.activity:
        task = step.activity.get("description") or step.activity.get("prompt")
    return clip_words(task, 60) if isinstance(task, str) and task.strip() else step.call.name


def _findings(s: Session) -> list[str]:
    """What each sub-agent reported (its result, as the agent saw it), in brief."""
    lines: dict[str, str] = {}  # newest first: only the newest MAX_FINDINGS are kept
    for step in reversed(s.steps):
        if len(lines) == MAX_FINDINGS:
            break
        if step.kind != "agent" or not step.ok:
            continue
        key = _unticked(_agent_label(step))
        if key in lines:
            continue
        report = step.result.content if step.result is not None else ""
        if not report.strip() and step.activity:
            report = str(step.activity.get("result") or "")
        digest = _digest(report, FINDING_CHARS, spans=False)
        if digest:
            lines[key] = f"- Sub-agent “{key}” found: {digest}"
    return list(reversed(lines.values()))


def _codebase(s: Session) -> list[str]:
    lines = []
    where = _working_directory(s)
    if where:
        lines.append(f"- Working directory: {_code(where)}")
    directories: dict[str, int] = {}
    for step in s.steps:
        if step.kind in ("search", "shell"):
            continue
        for path in step.paths:
            parent = str(PurePath(path).parent)
            directories[parent] = directories.get(parent, 0) + 1
    lines += [f"- `{d}/`: {n} file operation(s)" for d, n in directories.items()]
    return lines + _findings(s)


def _learnings(s: Session) -> list[str]:
    found = [x for x in s.sentences() if _REASON.search(x) and not _is_decision(x)]
    return [f"- {clip_words(x, 240)}" for x in dict.fromkeys(found)]


def _turn_label(info: TurnInfo) -> str:
    if info.turn.request:
        return _label(info.turn.request, 80)
    # a turn a compaction cut: named by how it went on, which later updates see the same way
    return f"(continued: {_label(info.opening, 50)})" if info.opening else "(continued)"


_HEADING = re.compile(r"^\s*#{1,6}\s")
# where a sentence ends (with the CJK full stops)
_ENDS = (".", "!", "?", "\u3002", "\uff01", "\uff1f")
_STOPS = (". ", "! ", "? ", "\u3002", "\uff01", "\uff1f")
_RULE = frozenset("-*_=|: ")
# a path in parentheses after what it is ("`useTodos` hook (`src/hooks/useTodos.ts`)"): the Files
# section has the paths
_PATH_ASIDE = re.compile(r"\s*\(`[^`()]*[/\\][^`()]*`\)")
_USAGE = re.compile(r"<usage>.*?(?:</usage>|$)", re.DOTALL)
_INTERJECTION = re.compile(
    r"^(?:perfect|great|excellent|done|ok(?:ay)?|sure|alright|all set|good news)[.!]*$",
    re.IGNORECASE,
)


def _digest(text: str, limit: int, *, headings: bool = False, spans: bool = True) -> str:
    """A report or an answer on one line, its facts first: no rules, code blocks or lead-ins
    ("Here's what was created:"), no headings unless they say something ("## Result: 42 rows")
    or, with ``headings``, have more than one word (a plan's steps), each item at most
    ``ITEM_CHARS``.
    Without ``spans`` the code spans lose their backticks: such a line is keyed by its head,
    never by a command or path it mentions."""
    text = _USAGE.sub("", _FENCE.sub("\n", text))
    out = ""
    for raw in text.splitlines():
        if len(out) > limit:
            break
        stripped = raw.strip()
        if not stripped or set(stripped) <= _RULE:
            continue
        # a heading only labels what follows, unless it says something ("## Result: 42") or,
        # in a plan, is a step ("### Add the retry"; not a label such as "## Context")
        if (
            _HEADING.match(raw)
            and ": " not in stripped
            and (not headings or len(stripped.split()) <= 2)
        ):
            continue
        if stripped.startswith("agentId: "):  # Claude Code's note on how to resume the agent
            continue
        line = _PATH_ASIDE.sub("", _MARKUP.sub("", stripped).replace("**", "")).strip()
        if line.endswith((":", "\uff1a")):  # a lead-in to what follows: keep what came before it
            ends = [line.rfind(mark) for mark in _STOPS]
            line = line[: max(ends) + 1] if max(ends) > 0 else ""
        kept = [
            x
            for x in _SENTENCE_END.split(line)
            if x.strip() and not x.rstrip().endswith(":") and not _INTERJECTION.match(x.strip())
        ]
        line = " ".join(kept).strip()
        if len(line) >= 2:
            joint = "" if not out else " " if out.endswith(_ENDS) else "; "
            out += joint + clip_words(line, ITEM_CHARS)
    return clip_words(out if spans else out.replace("`", ""), limit)


def _plain(text: str) -> str:
    """A reply as one line of text: no heading marks or bold markers."""
    text = re.sub(r"(?m)^\s*#{1,6}\s+", "", text)
    return text.replace("**", "")


def _substantive(answer: str) -> bool:
    return len(answer) >= 20 and (len(answer.split()) >= 4 or not answer.isascii())


def _key_results(s: Session) -> list[str]:
    lines: list[str] = []
    for step in s.steps:
        if step.counts and step.status in ("ok", "failed"):
            lines.append(f"- Tests {_code(step.family or step.call.name)} → {step.counts}")
        if not step.ok:
            continue
        for commit in step.commits:
            subject = clip_words(commit.subject, 120)
            lines.append(f"- Commit `{commit.hash}` on {commit.branch} → {subject}")
        for push in step.pushes:
            for ref in push.refs:
                lines.append(f"- Pushed {ref} → {push.remote}")
        for url in step.pulls:
            lines.append(f"- Pull request {url} → created")
    # only the newest answers are kept (see _capped): only those are written again
    answered = [info for info in s.turns if _substantive(info.answer)][-MAX_ANSWERS:]
    for n, info in enumerate(answered):
        limit = LAST_ANSWER_CHARS if n == len(answered) - 1 else ANSWER_CHARS
        said = _digest(info.answer, limit, spans=False) or clip_words(_plain(info.answer), limit)
        lines.append(f"- {_turn_label(info)} → {said}")
    return lines


def _did(steps: list[Step]) -> list[str]:
    """What a list of steps did, tersely: files changed, commands, sub-agents, outcomes."""
    changed: dict[str, str] = {}
    reads = 0
    searches = 0
    ran: list[str] = []
    agents: list[str] = []
    results: list[str] = []
    failures = 0
    for step in steps:
        if step.kind == "edit" and step.ok:
            for path in step.paths:
                changed.setdefault(PurePath(path).name or path, step.verbs.get(path, step.verb))
        elif step.kind == "read" and step.ok:
            reads += 1
        elif step.kind == "search":
            searches += 1
        elif step.kind == "agent" and step.activity:
            agents.append(clip_words(describe_subagent(step.activity), 160))
        elif step.kind == "agent":
            task = step.call.input.get("description")
            agents.append(clip_words(task if isinstance(task, str) else step.call.name, 50))
        elif step.command is not None and step.family and step.family not in ran:
            ran.append(step.family)
        if step.status == "failed":
            failures += 1
        if step.ok and step.outcome():
            results.append(step.outcome())
    parts = []
    for verb in ("created", "edited", "written", "deleted"):
        names = [name for name, v in changed.items() if v == verb]
        if names:
            more = f" +{len(names) - 4}" if len(names) > 4 else ""
            parts.append(f"{verb} {', '.join(names[:4])}{more}")
    if agents:
        parts.append(f"sub-agents: {'; '.join(agents[:4])}")
    if ran:
        parts.append(f"ran {', '.join(ran[:5])}")
    if reads or searches:
        looked = [f"{reads} read(s)"] if reads else []
        looked += [f"{searches} search(es)"] if searches else []
        parts.append(" and ".join(looked))
    if failures:
        parts.append(f"{failures} failed call(s)")
    parts += list(dict.fromkeys(results))[-3:]
    return parts


def _brief(step: Step) -> str:
    """One step in a few words: "edited app.py", "`pytest -q` → 3 passed", "Write x failed"."""
    names = ", ".join(PurePath(p).name or p for p in step.paths[:3])
    if step.kind == "agent":
        task = step.call.input.get("description")
        what = f"sub-agent “{clip_words(task, 60)}”" if isinstance(task, str) else step.call.name
    elif step.kind == "edit" and step.ok:
        return f"{step.verb} {names}"
    elif step.kind == "edit":
        what = f"{step.call.name} {names}"
    else:
        what = step.describe
    if step.status == "ok":
        return f"{what} → {step.outcome()}" if step.outcome() else what
    if step.status == "pending":
        return f"{what} (running)"
    return f"{what} {step.status}"


def _hook_parts(events: list[HookEvent]) -> list[str]:
    parts: dict[str, int] = {}
    for event in events:
        if _stopped_request(event):
            part = "stopped by a hook before it ran"
        else:
            if event.hook.kind == "failed":
                part = f"{event.hook.name} failed"
            else:
                verb = "stopped" if event.hook.kind == "stopped" else "blocked"
                part = f"{verb} by {event.hook.name}"
        parts[part] = parts.get(part, 0) + 1
    return [part + (f" ({n} times)" if n > 1 else "") for part, n in parts.items()]


def _worklog(s: Session) -> list[str]:
    merged: dict[str, list[Step]] = {}
    answered: dict[str, bool] = {}
    hooks: dict[str, list[HookEvent]] = {}
    for info in s.turns:
        label = _turn_label(info)
        merged.setdefault(label, []).extend(info.steps)
        answered[label] = answered.get(label, False) or bool(info.answer)
        hooks.setdefault(label, []).extend(x for x in s.hooks if x.turn == info.number)
    lines = []
    for label, steps in merged.items():
        parts = _did(steps)
        if not parts and answered[label]:
            parts = ["answered"]
        parts += _hook_parts(hooks[label])
        lines.append(f"- {label}" + (f" → {clip_words('; '.join(parts), 260)}" if parts else ""))
    return lines


def _current_state(s: Session) -> list[str]:
    lines = []
    if s.requests:
        lines.append(f"- Latest request: {clip_words(s.requests[-1], 200)}")
    last_turn = s.turns[-1] if s.turns else None
    if last_turn is not None:
        significant = [
            step
            for step in last_turn.steps
            if step.kind in ("edit", "agent")
            or (step.command is not None and not outcomes.is_read_only(step.command))
        ]
        done = [_brief(step) for step in significant[-3:]]
        if done:
            lines.append(f"- Last done: {clip_words('; then '.join(done), 240)}")
    last = next((m for m in reversed(s.conv.messages) if m.role == "assistant"), None)
    in_progress = last is not None and bool(last.tool_uses)
    if last is not None and last.tool_uses:
        calls = {id(step.call): step for step in s.steps}
        running = [calls[id(c)] for c in last.tool_uses if id(c) in calls]
        shown = [x.describe for x in running if x.kind != "todo"][:3]
        if shown:
            lines.append("- In progress: " + ", ".join(shown))
    todos = s.todos()
    if todos:
        shown_todos = [
            clip_words(item, 80) + (" (in progress)" if status == "in_progress" else "")
            for item, status in todos[:6]
        ]
        more = f" (+{len(todos) - 6} more)" if len(todos) > 6 else ""
        lines.append(f"- Pending: {'; '.join(shown_todos)}{more}")
    if last_turn is not None:
        for episode in s.episodes:
            if episode.fix is None and any(x is episode.failure for x in last_turn.steps):
                message = clip_words(episode.failure.error, 160)
                lines.append(f"- Unresolved: {episode.key} failed: {message}")
        refused = [x for x in last_turn.steps if x.status in REFUSALS]
        if refused and not last_turn.answer:
            lines.append(f"- Stopped: {REFUSALS[refused[-1].status].format(refused[-1].describe)}")
    lines += _hook_state(s)
    ended_on_request = (
        bool(s.conv.messages)
        and s.conv.messages[-1].role == "user"
        and (bool(user_text(s.conv.messages[-1])))
    )
    if ended_on_request and s.requests:
        lines.append(f"- Not answered yet: {clip_words(s.requests[-1], 200)}")
    elif last_turn is not None and last_turn.answer and not in_progress:
        said = _digest(last_turn.answer, 200) or clip_words(_plain(last_turn.answer), 200)
        lines.append(f"- Last reply: {said}")
    clean = [step for step in s.steps if step.family == "git status"]
    if (
        clean
        and clean[-1].clean
        and not any(step.kind == "edit" and step.ok for step in s.steps[clean[-1].position :])
    ):
        lines.append("- Git: working tree clean")
    return lines


def _hook_state(s: Session) -> list[str]:
    """A hook that had the last word: the latest request it stopped, or feedback the agent has
    not acted on yet."""
    if not s.hooks:
        return []
    event = s.hooks[-1]
    said = [i for i, m in enumerate(s.conv.messages) if m.role == "assistant"]
    if said and said[-1] > event.message:
        return []
    reason = clip_words(event.hook.reason, 160) or "no reason given"
    if _stopped_request(event) and event.turn == len(s.turns) - 1:
        return [f"- Blocked: the latest request was stopped by a hook before it ran — {reason}"]
    if event.hook.kind == "stopped":
        return [f"- Stopped: {event.hook.name} ended the turn — {reason}"]
    if event.hook.kind == "failed":
        return [f"- {event.hook.name} failed at the end of the turn — {reason}"]
    return [f"- Hook feedback not acted on yet: {event.hook.name} — {reason}"]


EXTRACTORS: dict[str, Callable[[Session], list[str]]] = {
    "Session Title": _title,
    "Current State": _current_state,
    "Task specification": _task,
    "Files and Functions": _files,
    "Workflow": _workflow,
    "Errors & Corrections": _errors,
    "Codebase and System Documentation": _codebase,
    "Learnings": _learnings,
    "Key results": _key_results,
    "Worklog": _worklog,
}


# -- keys: what makes two lines of a list section the same line -----------------------------------

_CODE_START = re.compile(r"^- (`+) ?(.+?) ?\1(?!`)")
_TASK_LABEL = re.compile(r"^- (?:Asked|Then): ")
_FINDING = re.compile(r"^- Sub-agent “(.+?)” found: ")
_OUTCOME_KEY = re.compile(
    r"^- (Commit `[0-9a-f]+`|Pushed \S+ -> \S+|Pull request \S+|Tests `[^`]*`)"
)


def _before(line: str, *separators: str) -> str | None:
    for separator in separators:
        if separator in line:
            return line.split(separator, 1)[0]
    return None


def line_key(title: str, line: str) -> str:
    """The key of a list section's line: its path, command, failing call, request …"""
    line = line.strip()
    if title in ("Files and Functions", "Workflow"):
        match = _CODE_START.match(line)
        if match is not None:
            return f"code:{' '.join(match.group(2).split())}"
    elif title == "Errors & Corrections":
        head = _before(line, " failed: ", " — ")
        if head is not None:
            return f"call:{' '.join(head.replace('`', '').split())}"
    elif title == "Task specification":
        if _TASK_LABEL.match(line):
            return f"request:{_normal(_TASK_LABEL.sub('', line))}"
        head = _before(line, " → ")
        if head is not None:
            return f"head:{head}"
    elif title == "Key results":
        match = _OUTCOME_KEY.match(line)
        if match is not None:
            return f"outcome:{match.group(1)}"
        head = _before(line, " → ")
        if head is not None:
            return f"turn:{head}"
    elif title == "Worklog":
        head = _before(line, " → ")
        return f"turn:{head if head is not None else line}"
    elif title == "Codebase and System Documentation":
        finding = _FINDING.match(line)
        if finding is not None:
            return f"agent:{finding.group(1)}"
        if line.startswith("- Working directory: "):
            return "cwd"
        match = _CODE_START.match(line)
        if match is not None:
            return f"code:{' '.join(match.group(2).split())}"
    return f"line:{_normal(line)}"


COMBINE: dict[str, Callable[[str, str], str]] = {"Files and Functions": _combine_files}


def merge_lines(title: str, old: Iterable[str], new: Iterable[str]) -> list[str]:
    """One line per key: the lines of ``old`` whose key does not come again, in their order,
    then the lines of ``new``; a line of ``new`` replaces (or, for files, combines with) the
    line of ``old`` with its key. Duplicates inside ``old`` collapse to their last line."""
    combine = COMBINE.get(title)
    kept: dict[str, str] = {}
    for line in old:
        if line.strip():
            key = line_key(title, line)
            previous = kept.pop(key, None)
            kept[key] = combine(previous, line) if combine and previous else line.rstrip()
    for line in new:
        if not line.strip():
            continue
        key = line_key(title, line)
        previous = kept.pop(key, None)
        kept[key] = combine(previous, line) if combine and previous else line
    lines = list(kept.values())
    if title == "Task specification":
        lines = _one_asked(lines)
    return _capped(title, lines)


def _one_asked(lines: list[str]) -> list[str]:
    """After a compaction the new conversation's first request is not the session's first."""
    out = []
    seen = False
    for line in lines:
        if line.startswith("- Asked: "):
            if seen:
                line = "- Then: " + line[len("- Asked: ") :]
            seen = True
        out.append(line)
    return out


def _keep_newest(lines: list[str], chosen: Callable[[str], bool], limit: int) -> list[str]:
    matching = [n for n, line in enumerate(lines) if chosen(line)]
    dropped = set(matching[:-limit]) if len(matching) > limit else set()
    return [line for n, line in enumerate(lines) if n not in dropped]


def _capped(title: str, lines: list[str]) -> list[str]:
    if title == "Key results":
        lines = _keep_newest(lines, lambda x: _OUTCOME_KEY.match(x) is not None, MAX_OUTCOMES)
        lines = _keep_newest(lines, lambda x: _OUTCOME_KEY.match(x) is None, MAX_ANSWERS)
    elif title == "Learnings":
        lines = _keep_newest(lines, lambda x: True, MAX_LEARNINGS)
    elif title == "Task specification":
        lines = _keep_newest(lines, lambda x: x.startswith("- Decision: "), MAX_DECISIONS)
        lines = _keep_newest(lines, lambda x: x.startswith("- Plan approved: "), MAX_PLANS)
    elif title == "Codebase and System Documentation":
        lines = _keep_newest(lines, lambda x: _FINDING.match(x) is not None, MAX_FINDINGS)
    return lines


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
    subagents: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The notes for ``conv`` merged into ``current``; ``subagents`` (call id → what that
    sub-agent did) lets the Files and Worklog sections say what sub-agents changed."""
    _, present = parse_sections(current)
    old = {s.title: s.body for s in present}
    session = Session(conv, subagents)
    sections = []
    for section in template.sections:
        extractor = EXTRACTORS.get(section.title)
        new = extractor(session) if extractor is not None else []
        previous = old.get(section.title, "")
        if section.title in LIST_SECTIONS:
            lines = merge_lines(section.title, previous.splitlines(), new)
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
    subagents = task.get("subagents")
    new = build_notes(
        template,
        current,
        conv,
        section_budget=int(task.get("section_budget", 2000)),
        subagents=subagents if isinstance(subagents, Mapping) else None,
    )
    if new == current:
        return ModelResponse(text="The notes are up to date.", stop_reason="end_turn")
    call = ToolCall(
        f"{OWN_CALL_PREFIX}1",
        "Edit",
        {"file_path": notes_path, "old_string": current, "new_string": new},
    )
    return ModelResponse(tool_calls=(call,), stop_reason="tool_use")


__all__ = [
    "LIST_SECTIONS",
    "Session",
    "build_notes",
    "clip_words",
    "line_key",
    "merge_lines",
    "session_notes_recipe",
    "user_text",
]
