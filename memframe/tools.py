"""What agents' tool calls do to files, in one place: which tools write a file, which run a
shell, which start a sub-agent, and the paths a call writes.

Claude Code writes files with ``Write``, ``Edit``, ``MultiEdit`` and ``NotebookEdit`` (the path
in ``file_path`` or ``notebook_path``); Codex CLI with ``apply_patch``, as its own tool or run
from a shell command (:mod:`memframe.agents.patches`). Layers, the hook guard, the transcript
readers and the offline model all ask here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

FILE_WRITE_TOOLS: Final = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
PATCH_TOOL: Final = "apply_patch"
SHELL_TOOLS: Final = frozenset({"Bash", "bash", "shell", "exec_command", "local_shell"})
SUBAGENT_TOOLS: Final = frozenset({"Task", "Agent"})
PATH_KEYS: Final = ("file_path", "notebook_path")


def written_paths(name: str | None, tool_input: Mapping[str, Any]) -> list[str]:
    """The paths (as written in the call: possibly relative) a tool call writes or deletes:
    a write tool's target, or every file an ``apply_patch`` adds, updates, moves or deletes."""
    from memframe.agents.patches import find_patch, parse_patch

    patch = find_patch(name, tool_input)
    if patch is not None:
        paths: list[str] = []
        for change in parse_patch(patch):
            for path in (change.path, change.move_to):
                if path and path not in paths:
                    paths.append(path)
        return paths
    if name not in FILE_WRITE_TOOLS:
        return []
    for key in PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return [value]
    return []
