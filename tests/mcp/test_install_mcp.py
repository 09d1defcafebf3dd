"""``memframe install-mcp --client …``: each client's MCP config, written as users keep it."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli_runner import run_memframe

# client -> (its user configuration, relative to $HOME; the format)
CLIENTS = {
    "claude-code": (".claude.json", "json"),
    "claude-desktop": (".config/Claude/claude_desktop_config.json", "json"),
    "cursor": (".cursor/mcp.json", "json"),
    "codex": (".codex/config.toml", "toml"),
    "gemini": (".gemini/settings.json", "json"),
}
OTHER = {"command": "npx", "args": ["-y", "other-server"]}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def install(home: Path, *args: str, cwd: Path | None = None) -> Any:
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "CODEX_HOME": "",
        "CLAUDE_CONFIG_DIR": "",
    }
    return run_memframe("install-mcp", *args, cwd=cwd or home, extra_env=env)


def servers(path: Path, kind: str) -> dict[str, Any]:
    if kind == "toml":
        return tomllib.loads(path.read_text())["mcp_servers"]
    data = json.loads(path.read_text())
    return data["mcpServers"]


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak*"))


def existing_config(kind: str) -> str:
    if kind == "toml":
        return (
            '# my Codex settings\nmodel = "o4"\n\n# servers I use\n'
            '[mcp_servers.other]\ncommand = "npx"\nargs = ["-y", "other-server"]\n'
        )
    return json.dumps({"theme": "dark", "mcpServers": {"other": OTHER}}, indent=4) + "\n"


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_fresh_install_creates_a_private_file(client: str, home: Path) -> None:
    relative, kind = CLIENTS[client]
    path = home / relative
    result = install(home, "--client", client)
    assert result.returncode == 0, result.stderr
    assert f"installed the memframe MCP server for {client} in {path}" in result.stdout
    entry = servers(path, kind)["memframe"]
    assert (
        entry["command"].endswith(("memframe", "python", "python3")) or "python" in entry["command"]
    )
    assert "mcp" in entry["args"]
    assert path.stat().st_mode & 0o777 == 0o600
    assert not backups(path)
    if client == "claude-code":
        assert entry["type"] == "stdio"
    if client == "cursor":
        assert entry["args"][-2:] == ["--project", "${workspaceFolder}"]
    if client == "claude-desktop":
        assert entry["args"][-2:] == ["--project", str(home.resolve())]


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_install_keeps_other_servers_writes_through_a_symlink_and_keeps_one_backup(
    client: str, home: Path, tmp_path: Path
) -> None:
    relative, kind = CLIENTS[client]
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / path.name
    original = existing_config(kind)
    real.write_text(original)
    real.chmod(0o644)
    path.symlink_to(real)

    first = install(home, "--client", client)
    assert first.returncode == 0, first.stderr
    assert f"written through the symlink to {real}" in first.stdout
    assert path.is_symlink() and path.resolve() == real
    assert real.stat().st_mode & 0o777 == 0o644  # the file keeps its permissions
    listed = servers(path, kind)
    assert listed["other"] == OTHER
    assert "mcp" in listed["memframe"]["args"]
    (backup,) = backups(path)
    assert backup.read_text() == original and not backup.is_symlink()
    assert not list(dotfiles.glob("*.bak*"))  # the backup stays beside the link
    if kind == "toml":
        text = real.read_text()
        assert text.startswith("# my Codex settings\n") and "# servers I use\n" in text
    else:
        assert json.loads(real.read_text())["theme"] == "dark"

    after_first = real.read_text()
    again = install(home, "--client", client)
    assert again.returncode == 0 and "nothing to change" in again.stdout
    assert real.read_text() == after_first
    assert backups(path) == [backup] and backup.read_text() == original

    changed = install(home, "--client", client, "--command", "uvx memframe")
    assert changed.returncode == 0, changed.stderr
    entry = servers(path, kind)["memframe"]
    assert entry["command"] == "uvx" and entry["args"][:2] == ["memframe", "mcp"]
    assert backups(path) == [backup]  # one backup, now of the text before this change
    assert backup.read_text() == after_first

    removed = install(home, "--client", client, "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert set(servers(path, kind)) == {"other"}
    assert path.is_symlink()
    assert "not installed" in install(home, "--client", client, "--uninstall").stdout


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_an_unparsable_file_is_refused_untouched(client: str, home: Path) -> None:
    relative, kind = CLIENTS[client]
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    broken = "[mcp_servers.other\ncommand = 1\n" if kind == "toml" else '{"mcpServers": {'
    path.write_text(broken)
    before = path.stat()
    result = install(home, "--client", client)
    assert result.returncode == 2
    assert f"not valid {kind.upper()}" in result.stderr and "Traceback" not in result.stderr
    assert path.read_text() == broken and path.stat().st_mtime_ns == before.st_mtime_ns
    assert not backups(path)


def test_a_server_map_of_the_wrong_shape_is_refused(home: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": ["not", "a", "map"]}')
    result = install(home, "--client", "cursor")
    assert result.returncode == 2 and "must be a table of servers" in result.stderr
    assert path.read_text() == '{"mcpServers": ["not", "a", "map"]}'


def test_codex_inline_definitions_are_not_rewritten(home: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    text = '[mcp_servers]\nmemframe = { command = "old" }\n'
    path.write_text(text)
    result = install(home, "--client", "codex")
    assert result.returncode == 2 and "edit that entry by hand" in result.stderr
    assert path.read_text() == text


def test_keys_the_user_added_to_the_entry_are_kept(home: Path) -> None:
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir()
    entry = {"command": "old", "args": [], "env": {"MEMFRAME_MODEL": "anthropic"}, "trust": True}
    path.write_text(json.dumps({"mcpServers": {"memframe": entry}}))
    assert install(home, "--client", "gemini").returncode == 0
    updated = servers(path, "json")["memframe"]
    assert updated["env"] == {"MEMFRAME_MODEL": "anthropic"} and updated["trust"] is True
    assert updated["command"] != "old"


def test_project_scope(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    expected = {
        "claude-code": project / ".mcp.json",
        "cursor": project / ".cursor" / "mcp.json",
        "codex": project / ".codex" / "config.toml",
        "gemini": project / ".gemini" / "settings.json",
    }
    for client, path in expected.items():
        result = install(home, "--client", client, "--scope", "project", "--dir", str(project))
        assert result.returncode == 0, result.stderr
        assert path.is_file(), client
    assert not (home / ".claude.json").exists()
    desktop = install(home, "--client", "claude-desktop", "--scope", "project")
    assert desktop.returncode == 2 and "no project configuration" in desktop.stderr


def test_dry_run_writes_nothing(home: Path) -> None:
    result = install(home, "--client", "codex", "--dry-run", "--project", str(home))
    assert result.returncode == 0, result.stderr
    assert "+[mcp_servers.memframe]" in result.stdout and "dry run" in result.stdout
    assert not (home / ".codex").exists()


def test_claude_code_honours_claude_config_dir(home: Path, tmp_path: Path) -> None:
    config_dir = tmp_path / "claude-config"
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config_dir)}
    result = run_memframe("install-mcp", "--client", "claude-code", cwd=home, extra_env=env)
    assert result.returncode == 0, result.stderr
    assert "memframe" in json.loads((config_dir / ".claude.json").read_text())["mcpServers"]
    assert not (home / ".claude.json").exists()
    assert os.stat(config_dir).st_mode & 0o777 == 0o700
