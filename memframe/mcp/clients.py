"""Where each MCP client keeps its server list, and memframe's entry in it.

``memframe install-mcp`` uses this; it needs no MCP SDK. Every client keeps servers in a map
from a name to ``command`` + ``args`` (JSON ``mcpServers`` for Claude Code, Claude Desktop,
Cursor and Gemini CLI; TOML ``[mcp_servers.<name>]`` for Codex). memframe's entry is the one
named :data:`SERVER_NAME`: installing again updates it in place (keeping keys the user added to
it, such as ``env``), other servers are never touched, and the file is written through
:mod:`memframe.config.agent_files` (symlinks followed, one backup, unparsable files refused).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memframe.config import agent_files
from memframe.config.agent_files import ConfigFileError

SERVER_NAME = "memframe"
CLIENTS = ("claude-code", "claude-desktop", "cursor", "codex", "gemini")
SCOPES = ("user", "project")
# Cursor expands this in mcp.json to the folder it has open (a user-wide entry serves each one)
CURSOR_WORKSPACE = "${workspaceFolder}"


@dataclass(frozen=True)
class Target:
    """One client's configuration file and memframe's entry for it."""

    client: str
    scope: str
    path: Path
    format: Literal["json", "toml"]
    servers_key: str  # "mcpServers" or "mcp_servers"
    entry: dict[str, Any]
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class Change:
    """What installing (or uninstalling) would do: the file's text before (``None``: no file)
    and after (``None``: nothing to change)."""

    target: Target
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.after is not None


def default_command() -> list[str]:
    """How to start memframe: the ``memframe`` script next to this Python when there is one,
    else ``<this Python> -m memframe``."""
    script = Path(sys.executable).parent / "memframe"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "memframe"]


def command_from(text: str) -> list[str]:
    """``--command`` split as a shell would (``uvx memframe`` → ``["uvx", "memframe"]``)."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ConfigFileError(f"--command {text!r} cannot be split into words: {exc}") from exc
    if not words:
        raise ConfigFileError("--command must not be empty")
    return words


def config_path(
    client: str,
    scope: str,
    *,
    project_dir: Path,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> Path:
    """The file ``client`` reads its MCP servers from, for ``scope`` (``user``: yours, every
    project; ``project``: one project's, usually committed)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    home = Path.home()
    if client not in CLIENTS:
        raise ConfigFileError(f"unknown client {client!r}: use one of {', '.join(CLIENTS)}")
    if scope not in SCOPES:
        raise ConfigFileError(f"unknown scope {scope!r}: use user or project")
    if client == "claude-code":
        if scope == "project":
            return project_dir / ".mcp.json"
        configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
        return (Path(configured).expanduser() if configured else home) / ".claude.json"
    if client == "claude-desktop":
        if scope == "project":
            raise ConfigFileError("Claude Desktop has no project configuration: use --scope user")
        if platform == "darwin":
            base = home / "Library" / "Application Support"
        elif platform.startswith("win"):
            appdata = env.get("APPDATA", "").strip()
            base = Path(appdata) if appdata else home / "AppData" / "Roaming"
        else:  # Linux builds of Claude Desktop follow the XDG layout
            xdg = env.get("XDG_CONFIG_HOME", "").strip()
            base = Path(xdg).expanduser() if xdg else home / ".config"
        return base / "Claude" / "claude_desktop_config.json"
    if client == "cursor":
        return (project_dir if scope == "project" else home) / ".cursor" / "mcp.json"
    if client == "codex":
        if scope == "project":
            return project_dir / ".codex" / "config.toml"
        configured = env.get("CODEX_HOME", "").strip()
        return (Path(configured).expanduser() if configured else home / ".codex") / "config.toml"
    return (project_dir if scope == "project" else home) / ".gemini" / "settings.json"


def target_for(
    client: str,
    scope: str = "user",
    *,
    project_dir: Path,
    serve_project: Path | None = None,
    home: Path | None = None,
    command: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> Target:
    """memframe's entry for ``client``.

    :param project_dir: the project whose configuration ``--scope project`` edits.
    :param serve_project: the project the server serves (``--project``). By default the
        client's working directory (Claude Code, Codex and Gemini CLI start servers in the
        project), ``${workspaceFolder}`` for Cursor, and for Claude Desktop, which has no
        project, ``project_dir``.
    :param home: memframe's memory base for the server (``--home``), if not the default.
    """
    path = config_path(client, scope, project_dir=project_dir, env=env, platform=platform)
    argv = list(command) if command is not None else default_command()
    args = [*argv[1:], "mcp"]
    notes: list[str] = []
    if serve_project is not None:
        args += ["--project", str(serve_project)]
    elif client == "cursor":
        args += ["--project", CURSOR_WORKSPACE]
    elif client == "claude-desktop":
        args += ["--project", str(project_dir)]
        notes.append(
            f"Claude Desktop has no project: the server serves {project_dir} "
            "(install again with --project DIR for another one)"
        )
    if home is not None:
        args += ["--home", str(home)]
    entry: dict[str, Any] = {"command": argv[0], "args": args}
    if client == "claude-code":
        entry = {"type": "stdio", **entry}
        if scope == "project":
            notes.append(
                "Claude Code asks each user to approve the servers of a project's .mcp.json"
            )
    if client == "codex" and scope == "project":
        notes.append("Codex reads a project's .codex/config.toml only once the project is trusted")
    if client in ("claude-desktop", "cursor"):
        notes.append(f"restart {'Claude Desktop' if client == 'claude-desktop' else 'Cursor'}")
    servers_key = "mcp_servers" if client == "codex" else "mcpServers"
    file_format: Literal["json", "toml"] = "toml" if client == "codex" else "json"
    return Target(client, scope, path, file_format, servers_key, entry, tuple(notes))


def plan(target: Target, *, uninstall: bool = False) -> Change:
    """What :func:`apply` would write; nothing is written. An unparsable file, or a server map
    of the wrong shape, is a :class:`ConfigFileError`."""
    path = target.path
    load = agent_files.load_toml if target.format == "toml" else agent_files.load_json
    loaded = load(path)
    servers = loaded.data.get(target.servers_key)
    if servers is not None and not isinstance(servers, dict):
        raise ConfigFileError(
            f"{path}: {target.servers_key!r} must be a table of servers, not "
            f"{type(servers).__name__} (the file was not changed)"
        )
    existing = (servers or {}).get(SERVER_NAME)
    if existing is not None and not isinstance(existing, dict):
        raise ConfigFileError(
            f"{path}: the {SERVER_NAME!r} server entry must be an object (the file was not changed)"
        )
    if uninstall:
        if existing is None:
            return Change(target, loaded.text, None)
        wanted: dict[str, Any] | None = None
    else:
        wanted = {**(existing or {}), **target.entry}
        if wanted == existing:
            return Change(target, loaded.text, None)
    if target.format == "toml":
        after = agent_files.set_toml_table(
            loaded.text or "", (target.servers_key, SERVER_NAME), wanted, where=path
        )
    else:
        data = dict(loaded.data)
        others = {k: v for k, v in (servers or {}).items() if k != SERVER_NAME}
        data[target.servers_key] = (
            others if wanted is None else {**(servers or {}), **{SERVER_NAME: wanted}}
        )
        after = agent_files.render_json(data)
    return Change(target, loaded.text, after)


def apply(change: Change) -> agent_files.Written | None:
    """Write ``change`` (nothing when there is nothing to change). A file that changed since
    :func:`plan` read it (the client rewrote it meanwhile) is left alone: plan again."""
    if change.after is None:
        return None
    path = change.target.path
    if agent_files.read_text(path) != change.before:
        raise ConfigFileError(
            f"{path} changed while memframe was editing it; run the command again"
        )
    return agent_files.write_config(path, change.after)
