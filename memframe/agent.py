"""The forked agent: a bounded tool loop whose every tool call passes a ``can_use_tool`` guard.

Layers fork an agent to do model-driven work (rewrite the session notes, update a Magic Doc,
save memories). The fork is offered the parent's tools so a provider prompt cache can serve its
prefix, but it may only use what its :class:`Permission` allows; refused calls are answered with
an error the model can read. File effects are staged and written only when the loop ends
normally, each file atomically, so a failed or timed-out run changes nothing.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memframe._fs import atomic_write_text, is_inside
from memframe.models.base import ModelBackend, ModelError, ModelRequest, ToolCall, ToolSpec

MAX_READ_CHARS = 200_000


class AgentError(ModelError):
    """The forked agent could not finish (time bound, invalid staged result)."""


@dataclass(frozen=True)
class Permission:
    """What a forked agent may do.

    :param tools: tool names it may call (``Read``, ``Edit``, ``Write``…).
    :param files: exact files it may write (compared after resolving symlinks; a file that is
        itself a symlink is never writable).
    :param directories: directories under which it may write (after resolving symlinks).
    :param read_only: no writes at all, whatever ``files``/``directories`` say.
    :param readable: directories it may read from (default: what it may write).
    """

    tools: frozenset[str]
    files: tuple[Path, ...] = ()
    directories: tuple[Path, ...] = ()
    read_only: bool = False
    readable: tuple[Path, ...] = ()

    @classmethod
    def edit_one_file(cls, path: Path) -> Permission:
        """Only ``Edit`` of exactly ``path``."""
        return cls(tools=frozenset({"Edit"}), files=(path.parent.resolve() / path.name,))


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Refusal:
    tool: str
    input: Mapping[str, Any]
    reason: str


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _target_path(tool_input: Mapping[str, Any], key: str = "file_path") -> Path | None:
    value = tool_input.get(key)
    if not isinstance(value, str) or not value or "\x00" in value:
        return None
    return Path(value)


def can_use_tool(permission: Permission, call: ToolCall) -> Decision:
    """Whether ``call`` is allowed under ``permission`` (and why not)."""
    allowed_list = ", ".join(sorted(permission.tools)) or "none"
    if call.name not in permission.tools or call.name not in FILE_TOOLS:
        return Decision(
            False, f"tool {call.name!r} is not available here (allowed: {allowed_list})"
        )
    tool = FILE_TOOLS[call.name]
    target = _target_path(call.input, tool.path_key)
    if target is None:
        return Decision(False, f"{call.name} needs a string {tool.path_key}")
    if not target.is_absolute():
        return Decision(
            False, f"{call.name}: {tool.path_key} must be absolute, got {str(target)!r}"
        )
    real = _real(target)
    writes = tool.writes
    if writes and permission.read_only:
        return Decision(False, f"{call.name} refused: this agent is read-only")
    for allowed in permission.files:
        if target == allowed or real == _real(allowed):
            if target.is_symlink() or allowed.is_symlink():
                return Decision(False, f"{call.name} refused: {target} is a symlink")
            if target != allowed and real != allowed:
                return Decision(False, f"{call.name} refused: {target} resolves elsewhere")
            return Decision(True)
    areas = permission.directories if writes else permission.readable or permission.directories
    for directory in areas:
        if is_inside(real, directory):
            return Decision(True)
    return Decision(False, f"{call.name} refused: {target} is outside what this agent may touch")


class Workspace:
    """Staged file contents: tools read through it, and ``commit`` writes what changed."""

    def __init__(self) -> None:
        self._staged: dict[Path, str | None] = {}  # None: deleted
        self._original: dict[Path, str | None] = {}

    def read(self, path: Path) -> str | None:
        if path in self._staged:
            return self._staged[path]
        try:
            # newline="": line endings are kept as they are (a CRLF file stays CRLF)
            with open(path, encoding="utf-8", newline="") as file:
                text: str | None = file.read()
        except FileNotFoundError:
            text = None
        self._original.setdefault(path, text)
        return text

    def write(self, path: Path, text: str | None) -> None:
        """Stage ``text`` for ``path`` (``None`` deletes it)."""
        self.read(path)
        self._staged[path] = text

    def exists(self, path: Path) -> bool:
        return self.read(path) is not None

    def changes(self) -> dict[Path, str | None]:
        """Staged files whose text differs from what was on disk (``None``: to delete)."""
        return {p: t for p, t in self._staged.items() if self._original.get(p) != t}

    def commit(self, changes: Mapping[Path, str | None] | None = None) -> list[Path]:
        changed = self.changes() if changes is None else changes
        for path, text in changed.items():
            if text is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write_text(path, text)
        return list(changed)


@dataclass(frozen=True)
class FileTool:
    spec: ToolSpec
    writes: bool
    run: Callable[[Workspace, Path, Mapping[str, Any]], str]
    path_key: str = "file_path"


def _read(workspace: Workspace, path: Path, tool_input: Mapping[str, Any]) -> str:
    text = workspace.read(path)
    if text is None:
        raise ToolFailure(f"{path} does not exist")
    if len(text) > MAX_READ_CHARS:
        return text[:MAX_READ_CHARS] + f"\n[truncated: {len(text)} characters in all]"
    return text


def _edit(workspace: Workspace, path: Path, tool_input: Mapping[str, Any]) -> str:
    old, new = tool_input.get("old_string"), tool_input.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        raise ToolFailure("Edit needs string old_string and new_string")
    if old == new:
        raise ToolFailure("old_string and new_string are identical: nothing to change")
    text = workspace.read(path)
    if text is None:
        raise ToolFailure(f"{path} does not exist")
    count = text.count(old) if old else 0
    if count == 0:
        raise ToolFailure("old_string was not found in the file (it must match exactly)")
    replace_all = tool_input.get("replace_all") is True
    if count > 1 and not replace_all:
        raise ToolFailure(f"old_string occurs {count} times: give more context or set replace_all")
    workspace.write(path, text.replace(old, new) if replace_all else text.replace(old, new, 1))
    return f"edited {path}"


def _write(workspace: Workspace, path: Path, tool_input: Mapping[str, Any]) -> str:
    content = tool_input.get("content")
    if not isinstance(content, str):
        raise ToolFailure("Write needs a string content")
    workspace.write(path, content)
    return f"wrote {path} ({len(content)} characters)"


def _delete(workspace: Workspace, path: Path, tool_input: Mapping[str, Any]) -> str:
    if not workspace.exists(path):
        raise ToolFailure(f"{path} does not exist")
    workspace.write(path, None)
    return f"deleted {path}"


MAX_LISTED = 200


def _glob(workspace: Workspace, path: Path, tool_input: Mapping[str, Any]) -> str:
    pattern = tool_input.get("pattern")
    if not isinstance(pattern, str) or not pattern or pattern.startswith("/") or ".." in pattern:
        raise ToolFailure("Glob needs a relative pattern (no '..'), e.g. '**/*.md'")
    if not path.is_dir():
        raise ToolFailure(f"{path} is not a directory")
    found = sorted(str(p) for p in path.glob(pattern) if p.is_file() and not p.is_symlink())
    extra = f"\n[{len(found) - MAX_LISTED} more]" if len(found) > MAX_LISTED else ""
    return "\n".join(found[:MAX_LISTED]) + extra if found else "no files match"


def _grep(workspace: Workspace, path: Path, tool_input: Mapping[str, Any]) -> str:
    pattern = tool_input.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ToolFailure("Grep needs a pattern")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolFailure(f"invalid pattern: {exc}") from exc
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    hits: list[str] = []
    for file in files:
        if file.is_symlink() or any(part.startswith(".") for part in file.relative_to(path).parts):
            continue
        try:
            text = workspace.read(file) or ""
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if regex.search(line):
                hits.append(f"{file}:{number}: {line[:300]}")
                if len(hits) >= MAX_LISTED:
                    return "\n".join(hits) + "\n[more matches not shown]"
    return "\n".join(hits) if hits else "no matches"


class ToolFailure(Exception):
    """A tool call that was allowed but could not be carried out (reported to the model)."""


_STRING = {"type": "string"}
_FILE_PATH = {"type": "string", "description": "absolute path of the file"}


def _tool(
    name: str,
    description: str,
    properties: dict[str, Any],
    run: Callable[[Workspace, Path, Mapping[str, Any]], str],
    *,
    writes: bool,
    optional: tuple[str, ...] = (),
) -> FileTool:
    """A file tool whose input is an object of ``properties``, all required but ``optional``;
    the path it works on is ``file_path``, else ``path``."""
    schema = {
        "type": "object",
        "properties": properties,
        "required": [key for key in properties if key not in optional],
    }
    path_key = "file_path" if "file_path" in properties else "path"
    return FileTool(ToolSpec(name, description, schema), writes=writes, run=run, path_key=path_key)


FILE_TOOLS: dict[str, FileTool] = {
    tool.spec.name: tool
    for tool in (
        _tool("Read", "Read a text file.", {"file_path": _FILE_PATH}, _read, writes=False),
        _tool(
            "Edit",
            "Replace old_string with new_string in a file (old_string must match exactly once "
            "unless replace_all is true).",
            {
                "file_path": _FILE_PATH,
                "old_string": _STRING,
                "new_string": _STRING,
                "replace_all": {"type": "boolean", "default": False},
            },
            _edit,
            writes=True,
            optional=("replace_all",),
        ),
        _tool(
            "Write",
            "Write a whole file.",
            {"file_path": _FILE_PATH, "content": _STRING},
            _write,
            writes=True,
        ),
        _tool("Delete", "Delete a file.", {"file_path": _FILE_PATH}, _delete, writes=True),
        _tool(
            "Glob",
            "List files under a directory matching a glob pattern such as '**/*.md'.",
            {"pattern": _STRING, "path": {"type": "string", "description": "absolute directory"}},
            _glob,
            writes=False,
        ),
        _tool(
            "Grep",
            "Search files under a directory (or one file) for a regular expression.",
            {
                "pattern": _STRING,
                "path": {"type": "string", "description": "absolute file or directory"},
            },
            _grep,
            writes=False,
        ),
    )
}


@dataclass
class AgentResult:
    """What a forked run did."""

    turns: int = 0
    stop: str = "end_turn"  # end_turn | max_turns
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    failed_calls: list[str] = field(default_factory=list)
    changed: list[Path] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


Validator = Callable[[Path, str], None]
# Sees every staged change before commit and returns the ones to write (may drop some).
Reviewer = Callable[[dict[Path, str | None]], dict[Path, str | None]]


class ForkedAgent:
    """Runs ``request`` against ``backend`` until the model stops calling tools.

    :param permission: what tool calls are allowed (everything else is refused and reported).
    :param max_turns: model calls at most.
    :param max_seconds: wall-time bound for the whole run.
    :param validate: called with each changed file's staged text before anything is written;
        raising refuses the whole result (nothing is written).
    :param review: gets all staged changes and returns those to write (e.g. without duplicates).
    """

    def __init__(
        self,
        backend: ModelBackend,
        permission: Permission,
        *,
        max_turns: int = 5,
        max_seconds: float = 120.0,
        validate: Validator | None = None,
        review: Reviewer | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.backend = backend
        self.permission = permission
        self.max_turns = max_turns
        self.max_seconds = max_seconds
        self.validate = validate
        self.review = review
        self._clock = clock

    def tool_specs(self, offered: Sequence[ToolSpec]) -> list[ToolSpec]:
        """The parent's tools (kept as they are, for the cache) plus any allowed file tool the
        parent did not offer."""
        names = {spec.name for spec in offered}
        extra = [
            FILE_TOOLS[name].spec
            for name in sorted(self.permission.tools)
            if name in FILE_TOOLS and name not in names
        ]
        return [*offered, *extra]

    def run(self, request: ModelRequest) -> AgentResult:
        deadline = self._clock() + self.max_seconds
        workspace = Workspace()
        result = AgentResult()
        messages: list[Mapping[str, Any]] = list(request.messages)
        tools = self.tool_specs(request.tools)
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise AgentError(f"forked agent ran out of time ({self.max_seconds:g} s)")
            response = self.backend.complete(
                replace(
                    request,
                    messages=list(messages),
                    tools=tools,
                    timeout=min(request.timeout, remaining),
                )
            )
            result.turns += 1
            for key, value in response.usage.items():
                result.usage[key] = result.usage.get(key, 0) + value
            result.text = response.text
            messages.append(response.to_message())
            if not response.tool_calls:
                break
            messages.append(
                {
                    "role": "user",
                    "content": [self._call(c, workspace, result) for c in response.tool_calls],
                }
            )
            if result.turns >= self.max_turns:
                result.stop = "max_turns"
                break
        if self._clock() > deadline:
            raise AgentError(f"forked agent ran out of time ({self.max_seconds:g} s)")
        changes = workspace.changes()
        if self.validate is not None:
            for path, text in changes.items():
                if text is not None:
                    self.validate(path, text)
        if self.review is not None:
            changes = self.review(changes)
        result.changed = workspace.commit(changes)
        return result

    def _call(self, call: ToolCall, workspace: Workspace, result: AgentResult) -> dict[str, Any]:
        result.tool_calls.append(call)
        decision = can_use_tool(self.permission, call)
        if not decision.allowed:
            result.refused.append(Refusal(call.name, dict(call.input), decision.reason))
            return _tool_result(call, f"Permission denied: {decision.reason}", error=True)
        tool = FILE_TOOLS[call.name]
        path = _target_path(call.input, tool.path_key)
        assert path is not None  # can_use_tool checked it
        try:
            return _tool_result(call, tool.run(workspace, _real(path), call.input))
        except (ToolFailure, OSError, UnicodeDecodeError) as exc:
            result.failed_calls.append(f"{call.name}: {exc}")
            return _tool_result(call, f"Error: {exc}", error=True)


def _tool_result(call: ToolCall, text: str, *, error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": text}
    if error:
        block["is_error"] = True
    return block
