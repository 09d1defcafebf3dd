"""``memframe install-hooks`` writes Claude Code's settings the way every ``install-*`` command
does (memframe.config.agent_files): through a symlink, with one backup, never over an unparsable
file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli_runner import run_memframe


@pytest.fixture
def claude_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "claude"
    directory.mkdir()
    return directory


def install_hooks(claude_dir: Path, *args: str) -> Any:
    env = {"HOME": str(claude_dir.parent), "CLAUDE_CONFIG_DIR": str(claude_dir)}
    return run_memframe("install-hooks", *args, cwd=claude_dir.parent, extra_env=env)


def test_a_symlinked_settings_file_stays_a_link_with_one_backup(claude_dir, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    real.write_text('{"model": "opus"}\n')
    link = claude_dir / "settings.json"
    link.symlink_to(real)

    first = install_hooks(claude_dir, "--command", "/opt/a/memframe hook")
    assert first.returncode == 0, first.stderr
    assert link.is_symlink() and link.resolve() == real
    settings = json.loads(real.read_text())
    assert settings["model"] == "opus" and "Stop" in settings["hooks"]
    backup = claude_dir / "settings.json.bak-memframe"
    assert backup.read_text() == '{"model": "opus"}\n' and not backup.is_symlink()
    assert "settings.json.bak-memframe" in first.stdout

    after_first = real.read_text()
    assert (
        "nothing to change" in install_hooks(claude_dir, "--command", "/opt/a/memframe hook").stdout
    )
    second = install_hooks(claude_dir, "--command", "/opt/b/memframe hook")
    assert second.returncode == 0, second.stderr
    assert link.is_symlink()
    assert sorted(p.name for p in claude_dir.iterdir()) == [
        "settings.json",
        "settings.json.bak-memframe",
    ]
    assert backup.read_text() == after_first  # the one backup holds the text before the change
    assert "/opt/b/memframe hook" in real.read_text()


def test_unparsable_settings_are_refused_untouched(claude_dir):
    path = claude_dir / "settings.json"
    path.write_text('{"hooks": ')
    result = install_hooks(claude_dir)
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert path.read_text() == '{"hooks": '
    assert not (claude_dir / "settings.json.bak-memframe").exists()
