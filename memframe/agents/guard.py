"""The team-memory guard: ``PreToolUse`` on a write into ``<memory dir>/team/``.

Team memory is shared through the team server, so a secret written there would leave the
machine at the next push. Before a ``Write``, ``Edit``, ``MultiEdit`` or ``NotebookEdit`` whose
target resolves (symlinks included) inside the team directory runs, the new text is scanned
with the bundled rules and the user's ``rules_file``, and for ``Edit`` and ``MultiEdit`` so is
the file *as it would be after the call*; a match refuses the call. Judging the result, not
only the fragment, catches a secret assembled by edits (a ``Write`` of ``ghp_<half>-<half>``,
then an ``Edit`` removing the ``-``). A ``NotebookEdit`` writes a whole cell, its new source is
the fragment. An edit whose ``old_string`` is not in the file fails in the host anyway; its
fragment is still scanned. Writes anywhere else pass without being scanned. (Rules that layers
add through ``register_rules`` are applied by team sync's own scan before each push, and the
server scans again.)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe.agents import WRITE_TOOLS

if TYPE_CHECKING:
    from memframe.config import Config


def target_path(tool_input: Mapping[str, Any], cwd: Path) -> Path | None:
    """The file a write tool call targets (relative paths are taken from ``cwd``)."""
    from memframe._fs import resolve_under

    for key in ("file_path", "notebook_path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return resolve_under(value, cwd)
    return None


def inside(path: Path, directory: Path) -> bool:
    """Whether ``path`` is ``directory`` or inside it, after resolving symlinks of both
    (:func:`memframe._fs.is_inside`)."""
    from memframe._fs import is_inside

    return is_inside(path, directory)


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


def _replace(text: str, edit: Mapping[str, Any]) -> str | None:
    old, new = edit.get("old_string"), edit.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str) or not old or old not in text:
        return None
    return text.replace(old, new) if edit.get("replace_all") is True else text.replace(old, new, 1)


MAX_RESULT_BYTES = 8 * 1024 * 1024  # a file larger than this is judged by its fragments only


def result_text(tool_name: str, tool_input: Mapping[str, Any], target: Path) -> str | None:
    """The file's text after an ``Edit``/``MultiEdit`` (``None`` when it cannot be computed:
    no such file, unreadable, too large, or an edit that does not apply). A ``NotebookEdit``
    replaces or inserts a whole cell, so its new source is the fragment to judge."""
    if tool_name not in ("Edit", "MultiEdit"):
        return None
    text = _read_limited(target)
    if text is None:
        return None
    edits = [tool_input] if tool_name == "Edit" else tool_input.get("edits")
    if not isinstance(edits, list):
        return None
    current: str | None = text
    for edit in edits:
        if not isinstance(edit, Mapping) or current is None:
            return None
        current = _replace(current, edit)
    return current


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


def _read_limited(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_RESULT_BYTES + 1)
    except OSError:
        return None
    return None if len(data) > MAX_RESULT_BYTES else data.decode("utf-8", "replace")


def patch_texts(patch: str, cwd: Path, team_dir: Path) -> list[str]:
    """What a Codex ``apply_patch`` would put into team memory: for each file it adds, updates
    or moves into ``team/``, the new lines and the file as it would be after the patch."""
    from memframe.agents.patches import parse_patch

    texts: list[str] = []
    from memframe._fs import resolve_under

    for change in parse_patch(patch):
        target = resolve_under(change.target, cwd)
        if change.op == "delete" or not inside(target, team_dir):
            continue
        texts.append(change.new_text())
        if change.op == "update":
            current = _read_limited(resolve_under(change.path, cwd))
            after = change.apply(current) if current is not None else None
            if after is not None:
                texts.append(after)
    return [t for t in texts if t]


def check_write(
    tool_name: str | None, tool_input: Mapping[str, Any], cwd: Path, team_dir: Path, config: Config
) -> list[str]:
    """The rule ids that make this tool call a secret written into team memory (``[]``: let
    it run). Codex's ``apply_patch`` (as its own tool or run from a shell command) is judged
    file by file, by the patched result."""
    from memframe.agents.patches import find_patch

    patch = find_patch(tool_name, tool_input)
    if patch is not None:
        texts = patch_texts(patch, cwd, team_dir)
        return secrets_in(texts, config) if texts else []
    if tool_name not in WRITE_TOOLS:
        return []
    target = target_path(tool_input, cwd)
    if target is None or not inside(target, team_dir):
        return []
    texts = written_text(tool_name, tool_input)
    after = result_text(tool_name, tool_input, target)
    if after is not None:
        texts.append(after)
    return secrets_in(texts, config) if texts else []


def refusal(rule_ids: list[str]) -> str:
    names = ", ".join(rule_ids)
    return (
        f"memframe: refused: this would put a secret ({names}) into team memory, which is "
        "shared through the team server. Leave the secret out (or keep the note in a private "
        "memory outside team/)."
    )
