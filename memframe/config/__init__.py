"""Configuration: explicit arguments, then environment variables, then the user settings file, then
defaults. ``Config.sources`` records where each value came from.

Environment variables are trusted as the user's, with one exception: an agent's *project*
settings can inject variables into the processes it starts (Claude Code's ``env`` key in a
repository's ``.claude/settings.json`` or ``.claude/settings.local.json``). Hook processes call
:func:`refuse_project_env` first, which drops every memframe variable such a file sets, so a
repository can neither move memory nor point team sync (and the user's token) elsewhere.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SETTINGS_FILE = "settings.json"


class ConfigError(ValueError):
    """A setting has the wrong type, or the settings file is not valid JSON."""


def _flag(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("", "0", "false", "no", "off"):
        return False
    raise ConfigError(f"expected a boolean (1/0, true/false), got {value!r}")


def _names(value: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in value.split(",") if name.strip())


@dataclass(frozen=True)
class Config:
    """Resolved settings for one :class:`~memframe.MemoryFrame`.

    :ivar home: the memory base; per-project data lives in ``home/projects/<project>/``.
    :ivar config_dir: where the user settings file and template overrides live.
    :ivar strict: re-raise layer failures as ``ExceptionGroup`` (used in tests).
    :ivar trace_hooks: print every hook call with its duration to stderr.
    :ivar autoload_plugins: load third-party layers from the ``memframe`` entry-point group.
    :ivar plugins: when set, only these entry-point layers load.
    :ivar disabled_plugins: layers (built-in or third-party) that never load.
    :ivar model: the model backend name.
    :ivar background_workers: threads for slow layer work.
    :ivar settings: the whole user settings file, for layers' own keys.
    """

    home: Path
    config_dir: Path
    strict: bool = False
    trace_hooks: bool = False
    autoload_plugins: bool = True
    plugins: tuple[str, ...] | None = None
    disabled_plugins: tuple[str, ...] = ()
    model: str = "offline"
    background_workers: int = 2
    settings: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)


# setting name -> (environment variable, parser of the env string)
_ENV: dict[str, tuple[str, Any]] = {
    "home": ("MEMFRAME_HOME", Path),
    "strict": ("MEMFRAME_STRICT", _flag),
    "trace_hooks": ("MEMFRAME_TRACE_HOOKS", _flag),
    "autoload_plugins": ("MEMFRAME_DISABLE_PLUGIN_AUTOLOAD", lambda v: not _flag(v)),
    "plugins": ("MEMFRAME_PLUGINS", _names),
    "disabled_plugins": ("MEMFRAME_DISABLED_PLUGINS", _names),
    "model": ("MEMFRAME_MODEL", str),
    "background_workers": ("MEMFRAME_BACKGROUND_WORKERS", int),
}


def default_config_dir(env: Mapping[str, str]) -> Path:
    if env.get("MEMFRAME_CONFIG_DIR"):
        return Path(env["MEMFRAME_CONFIG_DIR"]).expanduser()
    xdg = env.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "memframe"


def read_settings(path: Path) -> dict[str, Any]:
    """The user settings file as a dict; ``{}`` when it does not exist."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read settings file {path}: {exc}") from exc
    import orjson  # here, not at the top: the CLI imports this package before any frame exists

    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"settings file {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(
            f"settings file {path} must hold a JSON object, not {type(data).__name__}"
        )
    return data


def _checked(name: str, value: Any, where: str) -> Any:
    """``value`` for setting ``name`` from the settings file or an argument, type-checked."""
    if name == "home":
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where} must be a non-empty path string")
        return Path(value).expanduser()
    if name in ("strict", "trace_hooks", "autoload_plugins"):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false")
        return value
    if name in ("plugins", "disabled_plugins"):
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} must be a list of layer names")
        return tuple(value)
    if name == "model":
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where} must be a backend name")
        return value
    if name == "background_workers":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer")
        return value
    return value


def load_config(
    overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Config:
    """Resolve the configuration: ``overrides`` > environment > user settings file > defaults."""
    env = os.environ if env is None else env
    overrides = dict(overrides or {})
    config_dir = Path(overrides.pop("config_dir", None) or default_config_dir(env))
    settings_path = config_dir / SETTINGS_FILE
    settings = read_settings(settings_path)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    unknown = set(overrides) - set(_ENV)
    if unknown:
        raise ConfigError(f"unknown configuration option(s): {', '.join(sorted(unknown))}")
    for name, (var, parse) in _ENV.items():
        if name in overrides and overrides[name] is not None:
            values[name] = _checked(name, overrides[name], f"argument {name!r}")
            sources[name] = "argument"
        elif env.get(var, "") != "":
            try:
                values[name] = parse(env[var])
            except (ConfigError, ValueError) as exc:
                raise ConfigError(f"environment variable {var}: {exc}") from exc
            sources[name] = f"env {var}"
        elif name in settings:
            values[name] = _checked(name, settings[name], f"{settings_path}: {name!r}")
            sources[name] = str(settings_path)
    values.setdefault("home", Path.home() / ".memframe")
    if values.get("background_workers", 2) < 1:
        raise ConfigError("background_workers must be at least 1")
    return Config(
        config_dir=config_dir,
        settings=settings,
        sources=sources,
        **{**values, "home": Path(values["home"]).expanduser()},
    )


def read_override(
    config_dir: Path, relative: str, *, must_contain: str | None = None
) -> str | None:
    """The user's override file ``<config dir>/<relative>`` (a template or a prompt), or ``None``
    when there is none. Not UTF-8, or missing ``must_contain``, is a :class:`ConfigError`."""
    path = config_dir / relative
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc})") from exc
    if must_contain is not None and must_contain not in text:
        raise ConfigError(f"{path}: the file must contain {must_contain}")
    return text


# -- variables a project's agent settings may not set -------------------------------------------

# The project settings files of Claude Code: their ``env`` reaches every hook process.
AGENT_PROJECT_SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
# Not memframe's own names, but they decide where memframe reads its settings and memory from,
# which project it is in, or which TLS certificates it trusts for the team server.
GUARDED_VARIABLES = frozenset(
    {
        "HOME",
        "XDG_CONFIG_HOME",
        "CLAUDE_CONFIG_DIR",
        "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
        "CLAUDE_PROJECT_DIR",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    }
)
# memframe's fork guard may come from anywhere: it only ever turns memory work off (and
# memframe's own model subprocesses, which read the same project settings, rely on it).
ALLOWED_FROM_PROJECT = frozenset({"MEMFRAME_IN_FORK"})


def guarded_variable(name: str) -> bool:
    """``name`` is a variable a project's agent settings may not set for memframe."""
    if name in ALLOWED_FROM_PROJECT:
        return False
    return name.startswith("MEMFRAME_") or name in GUARDED_VARIABLES


@dataclass(frozen=True)
class RefusedVariable:
    """A guarded variable that a project's agent settings file sets."""

    name: str
    where: Path

    def describe(self) -> str:
        return f"{self.name} (set by {self.where})"


def _user_home() -> Path | None:
    """The user's home from the password database (``$HOME`` itself may be the project's)."""
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return None


def _project_roots(starts: Iterable[Path]) -> list[Path]:
    """Each start directory and its ancestors up to the repository root (the nearest one holding
    ``.git``), without duplicates; only ``starts`` when no ancestor is a repository."""
    roots: list[Path] = []
    for start in starts:
        try:
            start = Path(os.path.realpath(start))
        except (OSError, ValueError):
            continue
        chain = [start, *start.parents]
        top = next((i for i, d in enumerate(chain) if os.path.lexists(d / ".git")), 0)
        for directory in chain[: top + 1]:
            if directory not in roots:
                roots.append(directory)
    return roots


def project_set_variables(starts: Iterable[Path]) -> list[RefusedVariable]:
    """The guarded variables that the agent project settings of ``starts`` (and of their
    repositories) set, whatever their values. The user's own ``~/.claude/settings.json`` is
    never counted, even when a start directory is the home directory."""
    home = _user_home()
    user_settings = Path(os.path.realpath(home / ".claude")) if home is not None else None
    found: list[RefusedVariable] = []
    for root in _project_roots(starts):
        if user_settings is not None and Path(os.path.realpath(root / ".claude")) == user_settings:
            continue
        for relative in AGENT_PROJECT_SETTINGS:
            path = root / relative
            try:
                settings = read_settings(path)
            except ConfigError:
                continue
            env = settings.get("env")
            if not isinstance(env, Mapping):
                continue
            found.extend(
                RefusedVariable(name, path)
                for name in env
                if isinstance(name, str) and guarded_variable(name)
            )
    return found


def refuse_project_env(
    starts: Iterable[Path], env: MutableMapping[str, str] | None = None
) -> list[RefusedVariable]:
    """Drop from ``env`` (default: ``os.environ``, so child processes lose them too) every
    guarded variable that a project's agent settings set, and return those that were present.
    A refused ``HOME`` becomes the user's home from the password database."""
    env = os.environ if env is None else env
    refused: list[RefusedVariable] = []
    for variable in project_set_variables(starts):
        if variable.name not in env:
            continue
        refused.append(variable)
        del env[variable.name]
        if variable.name == "HOME":
            home = _user_home()
            if home is not None:
                env["HOME"] = str(home)
    return refused
