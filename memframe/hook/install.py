"""``memframe install-hooks``: memframe's entries in a Claude Code settings file.

Claude Code reads hooks from ``settings.json`` under ``"hooks"``: event name → a list of matcher
groups ``{"matcher": …, "hooks": [{"type": "command", "command": …, "timeout": …}]}``. Merging is
idempotent: an existing memframe entry (any command that runs ``memframe hook``) is updated in
place, a missing one is added, and every other hook, group and setting is left as it is.

The file itself is read and written by :mod:`memframe.config_files`, like every ``install-*``
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
from pathlib import Path
from typing import Any

from memframe import config_files
from memframe.hook import EVENTS

DEFAULT_TIMEOUT = 30
# PreToolUse only needs the write tools (the team-memory guard); other events take every call.
MATCHERS = {"PreToolUse": "Write|Edit|MultiEdit|NotebookEdit"}


class InstallError(ValueError):
    """The settings file cannot be merged into (invalid JSON, unexpected shapes)."""


def user_settings_path(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's user settings: ``$CLAUDE_CONFIG_DIR/settings.json`` or
    ``~/.claude/settings.json``."""
    env = os.environ if env is None else env
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    base = Path(configured).expanduser() if configured else Path.home() / ".claude"
    return base / "settings.json"


def project_settings_path(project_dir: Path) -> Path:
    return project_dir / ".claude" / "settings.json"


def default_command() -> str:
    """``<dir of this Python>/memframe hook`` when that script exists, else
    ``<this Python> -m memframe hook``."""
    script = Path(sys.executable).parent / "memframe"
    if script.is_file() and os.access(script, os.X_OK):
        return f"{shlex.quote(str(script))} hook"
    return f"{shlex.quote(sys.executable)} -m memframe hook"


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
        loaded = config_files.load_json(path)
    except config_files.ConfigFileError as exc:
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
    settings: Mapping[str, Any], command: str, timeout: int = DEFAULT_TIMEOUT, *, where: Path
) -> dict[str, Any]:
    """``settings`` with memframe's entry for every event (a copy; the input is untouched)."""
    result = copy.deepcopy(dict(settings))
    wanted = {"type": "command", "command": command, "timeout": timeout}
    for event in EVENTS:
        groups = _event_groups(result, event, where)
        matcher = MATCHERS.get(event, "")
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


def remove(settings: Mapping[str, Any], *, where: Path) -> dict[str, Any]:
    """``settings`` without any memframe entry (a copy)."""
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
    return config_files.render_json(settings)


def diff(path: Path, before: str | None, after: str) -> str:
    return config_files.diff(path, before, after)


def backup(path: Path) -> Path:
    """Copy ``path`` to its one backup, ``<name>.bak-memframe`` (replacing the previous one)."""
    try:
        saved = config_files.save_backup(path)
    except config_files.ConfigFileError as exc:
        raise InstallError(str(exc)) from exc
    if saved is None:
        raise InstallError(f"{path} does not exist: nothing to back up")
    return saved


def write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Write ``path`` atomically, through a symlink to the file it points at; a missing
    directory is created (0700), an existing one (the user's ``~/.claude``) is left as it is."""
    try:
        config_files.write_config(path, data.decode("utf-8"), backup=False, mode=mode)
    except config_files.ConfigFileError as exc:
        raise InstallError(str(exc)) from exc
