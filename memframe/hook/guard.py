"""The team-memory guard: ``PreToolUse`` on a write into ``<memory dir>/team/``.

Team memory is shared through the team server, so a secret written there would leave the
machine at the next push. Before a ``Write``, ``Edit``, ``MultiEdit`` or ``NotebookEdit`` whose
target resolves (symlinks included) inside the team directory runs, the text it would put there
is scanned with the bundled rules and the user's ``rules_file``; a match refuses the call.
Writes anywhere else pass without being scanned. (Rules that layers add through
``register_rules`` are applied by team sync's own scan before each push, and the server scans
again.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe.hook import WRITE_TOOLS

if TYPE_CHECKING:
    from memframe.config import Config


def target_path(tool_input: Mapping[str, Any], cwd: Path) -> Path | None:
    """The file a write tool call targets (relative paths are taken from ``cwd``)."""
    for key in ("file_path", "notebook_path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            path = Path(value).expanduser()
            return path if path.is_absolute() else cwd / path
    return None


def inside(path: Path, directory: Path) -> bool:
    """Whether ``path`` is ``directory`` or inside it, after resolving symlinks of both."""
    root = os.path.realpath(directory)
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def written_text(tool_name: str, tool_input: Mapping[str, Any]) -> list[str]:
    """The texts a write tool call would put into the file."""
    texts: list[str] = []

    def add(value: object) -> None:
        if isinstance(value, str) and value:
            texts.append(value)

    if tool_name == "Write":
        add(tool_input.get("content"))
    elif tool_name == "Edit":
        add(tool_input.get("new_string"))
    elif tool_name == "MultiEdit":
        edits = tool_input.get("edits")
        for edit in edits if isinstance(edits, list) else []:
            if isinstance(edit, Mapping):
                add(edit.get("new_string"))
    elif tool_name == "NotebookEdit":
        add(tool_input.get("new_source"))
    return texts


def secrets_in(texts: list[str], config: Config) -> list[str]:
    """Ids of the rules that match any of ``texts``, in rule order, each once."""
    from memframe.scanner import SecretScanner, rules_for_settings

    def no_layer_rules(register: Any) -> None:
        return None

    scanner = SecretScanner(rules_for_settings(config.settings, no_layer_rules))
    found: dict[str, None] = {}
    for text in texts:
        for match in scanner.scan(text):
            found.setdefault(match.rule_id, None)
    return list(found)


def check_write(
    tool_name: str | None, tool_input: Mapping[str, Any], cwd: Path, team_dir: Path, config: Config
) -> list[str]:
    """The rule ids that make this tool call a secret written into team memory (``[]``: let
    it run)."""
    if tool_name not in WRITE_TOOLS:
        return []
    target = target_path(tool_input, cwd)
    if target is None or not inside(target, team_dir):
        return []
    texts = written_text(tool_name, tool_input)
    return secrets_in(texts, config) if texts else []


def refusal(rule_ids: list[str]) -> str:
    names = ", ".join(rule_ids)
    return (
        f"memframe: refused: this would put a secret ({names}) into team memory, which is "
        "shared through the team server. Leave the secret out (or keep the note in a private "
        "memory outside team/)."
    )
