"""Where the memory directory is: an environment variable, then the *user's* settings, then the
default under the memory base. A project's own settings are never allowed to move it (a
repository must not be able to point memory writes at, say, ``~/.ssh``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memframe.config import SETTINGS_FILE, Config, ConfigError, read_settings
from memframe.paths import project_key

log = logging.getLogger("memframe")
SETTING = "autoMemoryDirectory"
MODE_ENV = "MEMFRAME_MEMORY_MODE"


@dataclass(frozen=True)
class Flavour:
    """The names one mode uses: memframe's own, or Claude Code's (to share ``~/.claude`` memory)."""

    name: str
    env_var: str
    project_settings: tuple[str, ...]


MEMFRAME = Flavour("memframe", "MEMFRAME_MEMORY_DIR", (".memframe/settings.json",))
CLAUDE = Flavour(
    "claude",
    "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
    (".claude/settings.json", ".claude/settings.local.json"),
)
FLAVOURS = {f.name: f for f in (MEMFRAME, CLAUDE)}


@dataclass(frozen=True)
class MemoryLocation:
    path: Path
    source: str  # "env MEMFRAME_MEMORY_DIR", "<settings file>", "default"
    mode: str
    ignored: tuple[str, ...] = field(default=())  # project settings that tried to redirect it


def claude_config_dir(env: Mapping[str, str]) -> Path:
    configured = env.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def _absolute(value: Any, where: str) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} must be a non-empty path string")
    path = Path(value.strip()).expanduser()
    if not path.is_absolute():
        raise ConfigError(f"{where} must be an absolute path (or start with ~), got {value!r}")
    return path


def resolve_memory_dir(
    project_dir: Path,
    *,
    mode: str,
    home: Path,
    user_settings: Mapping[str, Any],
    user_settings_path: Path,
    env: Mapping[str, str] | None = None,
) -> MemoryLocation:
    """The memory directory for ``project_dir`` (first match wins).

    :param mode: ``"memframe"`` or ``"claude"`` (Claude Code's locations and variable names).
    :param home: memframe's memory base (used in memframe mode).
    :param user_settings: the user's settings (memframe's settings.json; in Claude mode the file
        ``~/.claude/settings.json`` is read instead).
    """
    env = os.environ if env is None else env
    flavour = FLAVOURS.get(mode)
    if flavour is None:
        raise ConfigError(f"memory_mode must be one of {', '.join(FLAVOURS)}, got {mode!r}")
    ignored = tuple(_redirecting_project_settings(project_dir, flavour))
    for where in ignored:
        log.warning(
            "%s sets %s: ignored (only the user's settings may move memory)", where, SETTING
        )
    if env.get(flavour.env_var, "").strip():
        path = _absolute(env[flavour.env_var], f"environment variable {flavour.env_var}")
        return MemoryLocation(path, f"env {flavour.env_var}", mode, ignored)
    if flavour is CLAUDE:
        user_settings_path = claude_config_dir(env) / "settings.json"
        user_settings = read_settings(user_settings_path)
    if SETTING in user_settings:
        path = _absolute(user_settings[SETTING], f"{user_settings_path}: {SETTING!r}")
        return MemoryLocation(path, str(user_settings_path), mode, ignored)
    base = claude_config_dir(env) if flavour is CLAUDE else home
    return MemoryLocation(
        base / "projects" / project_key(project_dir) / "memory", "default", mode, ignored
    )


def _redirecting_project_settings(project_dir: Path, flavour: Flavour) -> list[str]:
    found = []
    for relative in flavour.project_settings:
        path = project_dir / relative
        try:
            settings = read_settings(path)
        except ConfigError:
            continue
        if SETTING in settings:
            found.append(str(path))
    return found


def locate_for(
    project_dir: Path, config: Config, env: Mapping[str, str] | None = None
) -> MemoryLocation:
    """The memory directory of ``project_dir`` under ``config`` (mode from MEMFRAME_MEMORY_MODE
    or the ``memory_mode`` setting)."""
    env = os.environ if env is None else env
    configured = config.settings.get("memory_mode", "memframe")
    mode = env.get(MODE_ENV, "").strip() or configured
    if not isinstance(mode, str):
        raise ConfigError(f"settings 'memory_mode' must be a string, got {mode!r}")
    return resolve_memory_dir(
        project_dir,
        mode=mode,
        home=config.home,
        user_settings=config.settings,
        user_settings_path=config.config_dir / SETTINGS_FILE,
        env=env,
    )
