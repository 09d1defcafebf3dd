"""``memframe install-hooks``: memframe's entries in an agent's hook configuration.

Claude Code (the default), Codex CLI (``hooks.json``) and Gemini CLI (``settings.json``) share
one shape, event → matcher groups → handlers; Cursor's ``hooks.json`` lists the handlers under
each event directly (``{"version": 1, "hooks": {"stop": [{"command": …}]}}``). Each agent's
events, matchers and timeout unit are in :data:`LAYOUTS`.

Claude Code reads hooks from ``settings.json`` under ``"hooks"``: event name → a list of matcher
groups ``{"matcher": …, "hooks": [{"type": "command", "command": …, "timeout": …}]}``. Merging is
idempotent: an existing memframe entry (any command that runs ``memframe hook``) is updated in
place, a missing one is added, and every other hook, group and setting is left as it is.

The file itself is read and written by :mod:`memframe.config.agent_files`, like every ``install-*``
command's: an unparsable file is refused untouched, a symlinked one is written through, and one
backup (``settings.json.bak-memframe``) holds the text before the last change.
"""

from __future__ import annotations

import copy
import itertools
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memframe.agents import EVENTS
from memframe.config import agent_files

DEFAULT_TIMEOUT = 30
# PreToolUse only needs the write tools (the team-memory guard); other events take every call.
MATCHERS = {"PreToolUse": "Write|Edit|MultiEdit|NotebookEdit"}


class InstallError(ValueError):
    """The settings file cannot be merged into (invalid JSON, unexpected shapes)."""


@dataclass(frozen=True)
class Layout:
    """How one agent's hook configuration holds memframe's entries."""

    agent: str
    events: tuple[str, ...]  # the agent's own event names
    matchers: Mapping[str, str] = field(default_factory=dict)
    timeout_unit: int = 1  # the timeout field's unit in seconds⁻¹ (Gemini: milliseconds)
    flat: bool = False  # Cursor: event → handlers, no matcher groups
    entry: Mapping[str, Any] = field(default_factory=dict)  # fields every handler carries
    top: Mapping[str, Any] = field(default_factory=dict)  # top-level keys the file must hold


LAYOUTS: dict[str, Layout] = {
    "claude-code": Layout("claude-code", EVENTS, MATCHERS),
    # Codex CLI (developers.openai.com/codex/hooks): Claude Code's shape and event names; file
    # edits are apply_patch calls (matched by their Edit/Write aliases too). It has no
    # SessionEnd event.
    "codex": Layout(
        "codex",
        (
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SubagentStop",
            "PreCompact",
        ),
        {"PreToolUse": "apply_patch|Edit|Write"},
    ),
    # Gemini CLI (geminicli.com/docs/hooks): timeouts in milliseconds, a name per hook
    "gemini": Layout(
        "gemini",
        (
            "SessionStart",
            "BeforeAgent",
            "BeforeTool",
            "AfterTool",
            "AfterAgent",
            "PreCompress",
            "SessionEnd",
        ),
        {"BeforeTool": "write_file|replace"},
        timeout_unit=1000,
        entry={"name": "memframe"},
    ),
    # Cursor (cursor.com/docs/hooks): {"version": 1, "hooks": {event: [{"command": …}]}}
    "cursor": Layout(
        "cursor",
        ("sessionStart", "preToolUse", "postToolUse", "preCompact", "stop", "sessionEnd"),
        {"preToolUse": "Write|StrReplace|Edit|MultiEdit"},
        flat=True,
        top={"version": 1},
    ),
}


def config_path(
    agent: str, target: str, project_dir: Path, env: Mapping[str, str] | None = None
) -> Path:
    """The file memframe's entries go into for ``agent`` (``target``: ``user`` or ``project``)."""
    env = os.environ if env is None else env
    if agent == "claude-code":
        return (
            project_settings_path(project_dir) if target == "project" else user_settings_path(env)
        )
    if agent == "codex":
        return codex_dir(target, project_dir, env) / "hooks.json"
    folder = {"gemini": ".gemini", "cursor": ".cursor"}[agent]
    base = project_dir if target == "project" else Path.home()
    return base / folder / ("settings.json" if agent == "gemini" else "hooks.json")


def codex_dir(target: str, project_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    """``<project>/.codex``, or ``$CODEX_HOME`` (``~/.codex`` by default)."""
    env = os.environ if env is None else env
    if target == "project":
        return project_dir / ".codex"
    configured = env.get("CODEX_HOME", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".codex"


def codex_feature(where: Path) -> tuple[str | None, str | None, str | None]:
    """Codex's ``config.toml`` with hooks turned on: ``(text before, text after, note)``;
    ``after`` is ``None`` when nothing is to be written (already on, or turned off on purpose:
    then ``note`` says so). Current Codex runs hooks by default (``[features] hooks``;
    ``codex_hooks`` is the older name, still accepted); older releases need
    ``codex_hooks = true``, which is what is added."""
    try:
        loaded = agent_files.load_toml(where)
    except agent_files.ConfigFileError as exc:
        raise InstallError(str(exc)) from exc
    features = loaded.data.get("features", {})
    if not isinstance(features, dict):
        raise InstallError(f"{where}: 'features' must be a table")
    for key in ("hooks", "codex_hooks"):
        if features.get(key) is False:
            note = (
                f"{where} turns Codex hooks off ([features] {key} = false): memframe's hooks "
                "will not run until you remove that line"
            )
            return loaded.text, None, note
    if features.get("hooks") is True or features.get("codex_hooks") is True:
        return loaded.text, None, None
    try:
        edited = agent_files.set_toml_table(
            loaded.text or "", ["features"], {**features, "codex_hooks": True}, where=where
        )
    except agent_files.ConfigFileError as exc:
        raise InstallError(str(exc)) from exc
    return loaded.text, edited, None


def user_settings_path(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's user settings: ``$CLAUDE_CONFIG_DIR/settings.json`` or
    ``~/.claude/settings.json``."""
    env = os.environ if env is None else env
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    base = Path(configured).expanduser() if configured else Path.home() / ".claude"
    return base / "settings.json"


def project_settings_path(project_dir: Path) -> Path:
    return project_dir / ".claude" / "settings.json"


def default_command(agent: str = "claude-code") -> str:
    """``<dir of this Python>/memframe hook`` when that script exists, else
    ``<this Python> -m memframe hook``; ``--agent NAME`` follows for another agent."""
    script = Path(sys.executable).parent / "memframe"
    if script.is_file() and os.access(script, os.X_OK):
        command = f"{shlex.quote(str(script))} hook"
    else:
        command = f"{shlex.quote(sys.executable)} -m memframe hook"
    return command if agent == "claude-code" else f"{command} --agent {agent}"


def is_memframe_command(command: str) -> bool:
    """Whether a hook command runs ``memframe hook`` (``/x/memframe hook``,
    ``python -m memframe hook``, ``uvx memframe hook``…)."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return False
    return any(
        os.path.basename(word) == "memframe" and following == "hook"
        for word, following in itertools.pairwise(tokens)
    )


def _ours(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("command"), str)
        and is_memframe_command(entry["command"])
    )


def load_settings(path: Path) -> tuple[dict[str, Any], str | None]:
    """The settings object and the file's text (``None`` when there is no file)."""
    try:
        loaded = agent_files.load_json(path)
    except agent_files.ConfigFileError as exc:
        raise InstallError(str(exc)) from exc
    return loaded.data, loaded.text


def _event_groups(settings: dict[str, Any], event: str, where: Path) -> list[Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{where}: 'hooks' must be an object")
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise InstallError(f"{where}: 'hooks.{event}' must be a list")
    return groups


def merge(
    settings: Mapping[str, Any],
    command: str,
    timeout: int = DEFAULT_TIMEOUT,
    *,
    where: Path,
    layout: Layout = LAYOUTS["claude-code"],
) -> dict[str, Any]:
    """``settings`` with memframe's entry for every event (a copy; the input is untouched)."""
    if layout.flat:
        return _merge_flat(settings, command, where=where, layout=layout)
    result = copy.deepcopy(dict(settings))
    wanted = {
        **layout.entry,
        "type": "command",
        "command": command,
        "timeout": timeout * layout.timeout_unit,
    }
    for event in layout.events:
        groups = _event_groups(result, event, where)
        matcher = layout.matchers.get(event, "")
        found = False
        kept: list[Any] = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(group, dict) or not isinstance(entries, list):
                kept.append(group)
                continue
            mine = [i for i, entry in enumerate(entries) if _ours(entry)]
            if not mine:
                kept.append(group)
                continue
            if not found and len(mine) == len(entries):
                # a group of memframe's own: it follows the wanted matcher
                kept.append({**group, "matcher": matcher, "hooks": [{**entries[0], **wanted}]})
            else:
                others = [e for i, e in enumerate(entries) if i not in mine]
                if not found:
                    # shared with other hooks: update our entry where it is, keep the matcher
                    first = mine[0]  # every entry before it is another hook's
                    others.insert(first, {**entries[first], **wanted})
                if others:
                    kept.append({**group, "hooks": others})
            found = True
        if not found:
            kept.append({"matcher": matcher, "hooks": [dict(wanted)]})
        result["hooks"][event] = kept
    return result


def _merge_flat(
    settings: Mapping[str, Any], command: str, *, where: Path, layout: Layout
) -> dict[str, Any]:
    """Cursor's shape: memframe's handler in each event's list, updated where it is."""
    result = copy.deepcopy(dict(settings))
    for key, value in layout.top.items():
        result.setdefault(key, value)
    for event in layout.events:
        entries = _event_groups(result, event, where)
        wanted: dict[str, Any] = {"command": command}
        if event in layout.matchers:
            wanted["matcher"] = layout.matchers[event]
        kept: list[Any] = []
        found = False
        for entry in entries:
            if not _ours(entry):
                kept.append(entry)
            elif not found:
                kept.append({**entry, **wanted})
                found = True
        if not found:
            kept.append(wanted)
        result["hooks"][event] = kept
    return result


def remove(settings: Mapping[str, Any], *, where: Path) -> dict[str, Any]:
    """``settings`` without any memframe entry (a copy); either shape."""
    result = copy.deepcopy(dict(settings))
    hooks = result.get("hooks")
    if hooks is None:
        return result
    if not isinstance(hooks, dict):
        raise InstallError(f"{where}: 'hooks' must be an object")
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept: list[Any] = []
        for group in groups:
            if _ours(group):
                continue  # a handler of Cursor's flat shape
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(group, dict) or not isinstance(entries, list):
                kept.append(group)
                continue
            others = [e for e in entries if not _ours(e)]
            if len(others) == len(entries):
                kept.append(group)
            elif others:
                kept.append({**group, "hooks": others})
        if kept:
            hooks[event] = kept
        elif groups:
            del hooks[event]
    return result


def render(settings: Mapping[str, Any]) -> str:
    return agent_files.render_json(settings)


def diff(path: Path, before: str | None, after: str) -> str:
    return agent_files.diff(path, before, after)


def backup(path: Path) -> Path:
    """Copy ``path`` to its one backup, ``<name>.bak-memframe`` (replacing the previous one)."""
    try:
        saved = agent_files.save_backup(path)
    except agent_files.ConfigFileError as exc:
        raise InstallError(str(exc)) from exc
    if saved is None:
        raise InstallError(f"{path} does not exist: nothing to back up")
    return saved


def write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Write ``path`` atomically, through a symlink to the file it points at; a missing
    directory is created (0700), an existing one (the user's ``~/.claude``) is left as it is."""
    try:
        agent_files.write_config(path, data.decode("utf-8"), backup=False, mode=mode)
    except agent_files.ConfigFileError as exc:
        raise InstallError(str(exc)) from exc
