"""Where the memory directory is (docs/memdir.md): env, the user's settings, the default;
Claude mode; project settings can never move it; worktrees of one repository share it."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memframe._manager import LayerLoadError
from memframe.config import ConfigError
from memframe.frame import open_frame
from memframe.layers.memdir import MemdirLayer
from memframe.memdir import locate, resolve_memory_dir
from tests.layers.memdir_helpers import MEMDIR, expected_key, write_memory, write_settings


def memdir_of(frame) -> MemdirLayer:
    layer = frame.manager.get_plugin("memdir")
    assert isinstance(layer, MemdirLayer)
    return layer


@pytest.fixture
def md_frame(memframe_open):
    def make(**options):
        return memframe_open(builtin_layers=[MEMDIR], **options)

    return make


@pytest.fixture
def frame_at(tmp_path):
    """Frames on any project directory, sharing the home and config dir of ``open_test_frame``."""
    opened = []

    def open_at(project: Path, **options):
        options.setdefault("home", tmp_path / "home")
        options.setdefault("config_dir", tmp_path / "config")
        frame = open_frame(
            project, builtin_layers=[MEMDIR], autoload_plugins=False, strict=True, **options
        )
        opened.append(frame)
        return frame

    yield open_at
    for frame in opened:
        frame.close()


def project_of(tmp_path: Path) -> Path:
    return (tmp_path / "project").resolve()


# -- memframe mode --------------------------------------------------------------------------------


def test_default_is_under_the_memory_base(md_frame, tmp_path):
    location = memdir_of(md_frame()).location
    expected = tmp_path / "home" / "projects" / expected_key(project_of(tmp_path)) / "memory"
    assert location.path == expected
    assert location.source == "default"
    assert location.mode == "memframe"
    assert location.ignored == ()


def test_the_frame_resolves_once_and_every_reader_agrees(md_frame, tmp_path, monkeypatch):
    frame = md_frame()
    first = frame.memory_location()
    assert locate(frame) is first
    assert memdir_of(frame).location == first
    # a later change of the environment does not move a frame's memory
    monkeypatch.setenv("MEMFRAME_MEMORY_DIR", str(tmp_path / "elsewhere"))
    assert frame.memory_location() is first


def test_user_settings_beat_the_default(md_frame, tmp_path):
    target = tmp_path / "from-settings"
    settings_path = write_settings(tmp_path, {"autoMemoryDirectory": str(target)})
    layer = memdir_of(md_frame())
    assert layer.location.path == target
    assert layer.location.source == str(settings_path)
    layer.store.add("Use tabs", "indentation rule", "feedback", "Indent with tabs.")
    assert [p.name for p in target.glob("*.md")] == sorted(["MEMORY.md", "use-tabs.md"])


def test_env_beats_user_settings(md_frame, tmp_path, monkeypatch):
    write_settings(tmp_path, {"autoMemoryDirectory": str(tmp_path / "from-settings")})
    monkeypatch.setenv("MEMFRAME_MEMORY_DIR", str(tmp_path / "from-env"))
    layer = memdir_of(md_frame())
    assert layer.location.path == tmp_path / "from-env"
    assert layer.location.source == "env MEMFRAME_MEMORY_DIR"
    layer.store.add("Use tabs", "indentation rule", "feedback", "Indent with tabs.")
    assert (tmp_path / "from-env" / "use-tabs.md").is_file()
    assert not (tmp_path / "from-settings").exists()


def test_tilde_is_expanded(md_frame, tmp_path, fake_home, monkeypatch):
    write_settings(tmp_path, {"autoMemoryDirectory": "~/notes/memory"})
    assert memdir_of(md_frame()).location.path == fake_home / "notes" / "memory"
    monkeypatch.setenv("MEMFRAME_MEMORY_DIR", "~/env-memory")
    assert memdir_of(md_frame()).location.path == fake_home / "env-memory"


def test_a_project_setting_cannot_redirect_memory(md_frame, tmp_path, fake_home, caplog):
    project = tmp_path / "project"
    (project / ".memframe").mkdir(parents=True)
    redirect = project / ".memframe" / "settings.json"
    redirect.write_text(json.dumps({"autoMemoryDirectory": "~/.ssh"}))
    with caplog.at_level(logging.WARNING, logger="memframe"):
        layer = memdir_of(md_frame())
    location = layer.location
    assert location.path == (
        tmp_path / "home" / "projects" / expected_key(project_of(tmp_path)) / "memory"
    )
    assert location.source == "default"
    assert location.ignored == (str(project_of(tmp_path) / ".memframe" / "settings.json"),)
    assert "ignored" in caplog.text and "settings.json" in caplog.text
    layer.store.add("Keys", "where keys live", "reference", "Deploy keys are in the vault.")
    assert not (fake_home / ".ssh").exists()
    assert (location.path / "team" / "keys.md").is_file()


def test_a_project_setting_is_ignored_even_next_to_a_user_setting(md_frame, tmp_path):
    (tmp_path / "project" / ".memframe").mkdir(parents=True)
    (tmp_path / "project" / ".memframe" / "settings.json").write_text(
        json.dumps({"autoMemoryDirectory": str(tmp_path / "evil")})
    )
    write_settings(tmp_path, {"autoMemoryDirectory": str(tmp_path / "mine")})
    location = memdir_of(md_frame()).location
    assert location.path == tmp_path / "mine"
    assert len(location.ignored) == 1


@pytest.mark.parametrize("value", ["relative/memory", "./memory", "memory", ""])
def test_a_relative_setting_is_a_config_error(md_frame, tmp_path, value):
    settings_path = write_settings(tmp_path, {"autoMemoryDirectory": value})
    with pytest.raises(ConfigError, match="autoMemoryDirectory"):
        resolve_memory_dir(
            tmp_path,
            mode="memframe",
            home=tmp_path / "home",
            user_settings={"autoMemoryDirectory": value},
            user_settings_path=settings_path,
            env={},
        )
    with pytest.raises(LayerLoadError, match="autoMemoryDirectory"):
        md_frame()


def test_a_relative_env_value_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="MEMFRAME_MEMORY_DIR"):
        resolve_memory_dir(
            tmp_path,
            mode="memframe",
            home=tmp_path / "home",
            user_settings={},
            user_settings_path=tmp_path / "settings.json",
            env={"MEMFRAME_MEMORY_DIR": "memory"},
        )


def test_an_unknown_mode_is_a_clear_error(md_frame, tmp_path):
    write_settings(tmp_path, {"memory_mode": "cursor"})
    with pytest.raises(LayerLoadError, match="memory_mode"):
        md_frame()


# -- Claude mode ----------------------------------------------------------------------------------


def claude_default(fake_home: Path, root: Path) -> Path:
    return fake_home / ".claude" / "projects" / expected_key(root) / "memory"


def test_claude_mode_from_settings_uses_claude_code_default(md_frame, tmp_path, fake_home):
    write_settings(tmp_path, {"memory_mode": "claude"})
    location = memdir_of(md_frame()).location
    assert location.mode == "claude"
    assert location.source == "default"
    assert location.path == claude_default(fake_home, project_of(tmp_path))


def test_claude_mode_from_env(md_frame, tmp_path, fake_home, monkeypatch):
    monkeypatch.setenv("MEMFRAME_MEMORY_MODE", "claude")
    assert memdir_of(md_frame()).location.path == claude_default(fake_home, project_of(tmp_path))


def test_claude_mode_ignores_memframe_user_setting(md_frame, tmp_path, fake_home):
    # in Claude mode the user's settings are Claude Code's ~/.claude/settings.json
    write_settings(
        tmp_path, {"memory_mode": "claude", "autoMemoryDirectory": str(tmp_path / "memframe")}
    )
    assert memdir_of(md_frame()).location.path == claude_default(fake_home, project_of(tmp_path))


def test_claude_settings_file_beats_the_default(md_frame, tmp_path, fake_home, monkeypatch):
    monkeypatch.setenv("MEMFRAME_MEMORY_MODE", "claude")
    (fake_home / ".claude").mkdir()
    claude_settings = fake_home / ".claude" / "settings.json"
    claude_settings.write_text(json.dumps({"autoMemoryDirectory": "~/claude-memory"}))
    location = memdir_of(md_frame()).location
    assert location.path == fake_home / "claude-memory"
    assert location.source == str(claude_settings)


def test_claude_config_dir_is_honoured(md_frame, tmp_path, fake_home, monkeypatch):
    monkeypatch.setenv("MEMFRAME_MEMORY_MODE", "claude")
    config = tmp_path / "claude-config"
    config.mkdir()
    (fake_home / ".claude").mkdir()
    (fake_home / ".claude" / "settings.json").write_text(
        json.dumps({"autoMemoryDirectory": str(tmp_path / "not-this-one")})
    )
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    # no settings in $CLAUDE_CONFIG_DIR: the default under it (not under ~/.claude)
    expected = config / "projects" / expected_key(project_of(tmp_path)) / "memory"
    assert memdir_of(md_frame()).location.path == expected
    (config / "settings.json").write_text(
        json.dumps({"autoMemoryDirectory": str(tmp_path / "configured")})
    )
    location = memdir_of(md_frame()).location
    assert location.path == tmp_path / "configured"
    assert location.source == str(config / "settings.json")


def test_claude_override_env_beats_claude_settings(md_frame, tmp_path, fake_home, monkeypatch):
    monkeypatch.setenv("MEMFRAME_MEMORY_MODE", "claude")
    (fake_home / ".claude").mkdir()
    (fake_home / ".claude" / "settings.json").write_text(
        json.dumps({"autoMemoryDirectory": str(tmp_path / "settings-dir")})
    )
    monkeypatch.setenv("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", "~/cowork")
    location = memdir_of(md_frame()).location
    assert location.path == fake_home / "cowork"
    assert location.source == "env CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"


@pytest.mark.parametrize("name", ["settings.json", "settings.local.json"])
def test_claude_project_settings_cannot_redirect(md_frame, tmp_path, fake_home, monkeypatch, name):
    monkeypatch.setenv("MEMFRAME_MEMORY_MODE", "claude")
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / name).write_text(json.dumps({"autoMemoryDirectory": "~/.ssh"}))
    location = memdir_of(md_frame()).location
    assert location.path == claude_default(fake_home, project_of(tmp_path))
    assert location.ignored == (str(project_of(tmp_path) / ".claude" / name),)


def test_reads_an_existing_claude_code_memory(md_frame, tmp_path, fake_home, monkeypatch):
    monkeypatch.setenv("MEMFRAME_MEMORY_MODE", "claude")
    root = claude_default(fake_home, project_of(tmp_path))
    write_memory(
        root,
        "testing-workflow.md",
        "Run the tests with `uv run pytest -x`; the user never wants tox.",
        name="Testing workflow",
        description="how the user runs the test suite",
        kind="feedback",
    )
    write_memory(root, "deploy_notes.md", "", raw="Deploys go through the staging cluster first.\n")
    (root / "MEMORY.md").write_text(
        "# Memory\n\n"
        "- [Testing workflow](testing-workflow.md) — how the user runs the test suite\n"
        "- [Deploy notes](deploy_notes.md) — staging first\n"
    )
    frame = md_frame()
    layer = memdir_of(frame)
    assert layer.store.root == root.resolve()
    session = frame.session("s1")
    blocks = {b.title: b.text for b in session.context_blocks("how should I run the pytest tests?")}
    assert "- [Testing workflow](testing-workflow.md)" in blocks["Memory"]
    assert "- [Deploy notes](deploy_notes.md)" in blocks["Memory"]
    assert str(root.resolve()) in blocks["Memory"]
    relevant = blocks["Relevant memories"]
    assert "## Testing workflow (testing-workflow.md, feedback)" in relevant
    assert "uv run pytest -x" in relevant
    # the file without frontmatter is still read: type unknown, name from the file name
    deploy = layer.store.find("deploy_notes.md")
    assert (deploy.type, deploy.name) == ("unknown", "deploy notes")
    blocks = {b.title: b.text for b in session.context_blocks("staging cluster deploys")}
    assert "## deploy notes (deploy_notes.md, unknown)" in blocks["Relevant memories"]


# -- git roots and worktrees ----------------------------------------------------------------------


def git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        timeout=30,
    )


@pytest.fixture
def repo_with_worktree(tmp_path) -> tuple[Path, Path]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    main = tmp_path / "repos" / "app"
    main.mkdir(parents=True)
    git("init", "-q", cwd=main)
    (main / "README.md").write_text("app\n")
    (main / "src").mkdir()
    (main / "src" / "app.py").write_text("print('hi')\n")
    git("add", ".", cwd=main)
    git("commit", "-q", "-m", "init", cwd=main)
    worktree = tmp_path / "elsewhere" / "app-feature"
    git("worktree", "add", "-q", "-b", "feature", str(worktree), cwd=main)
    assert (worktree / ".git").is_file()
    return main.resolve(), worktree.resolve()


@pytest.mark.parametrize("mode", ["memframe", "claude"])
def test_worktrees_of_one_repository_share_one_memory_dir(
    frame_at, repo_with_worktree, tmp_path, fake_home, monkeypatch, mode
):
    monkeypatch.setenv("MEMFRAME_MEMORY_MODE", mode)
    main, worktree = repo_with_worktree
    in_main = memdir_of(frame_at(main))
    in_worktree = memdir_of(frame_at(worktree))
    in_subdir = memdir_of(frame_at(worktree / "src"))
    base = tmp_path / "home" if mode == "memframe" else fake_home / ".claude"
    expected = base / "projects" / expected_key(main) / "memory"
    assert in_main.location.path == expected
    assert in_worktree.location.path == expected
    assert in_subdir.location.path == expected
    in_worktree.store.add("Branches", "naming", "feedback", "Name branches feature/<ticket>.")
    assert [m.name for m in in_main.store.memories()] == ["Branches"]


def test_two_separate_repositories_do_not_share(frame_at, tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    one, two = tmp_path / "one", tmp_path / "two"
    for repo in (one, two):
        repo.mkdir()
        git("init", "-q", cwd=repo)
    assert memdir_of(frame_at(one)).location.path != memdir_of(frame_at(two)).location.path


@pytest.mark.parametrize("mode", ["memframe", "claude"])
def test_a_crafted_git_file_cannot_alias_another_projects_memory(
    frame_at, repo_with_worktree, tmp_path, fake_home, monkeypatch, mode
):
    monkeypatch.setenv("MEMFRAME_MEMORY_MODE", mode)
    main, worktree = repo_with_worktree
    victim = memdir_of(frame_at(main)).location.path
    admin = main / ".git" / "worktrees" / worktree.name
    assert admin.is_dir()  # git's own entry for the real worktree

    borrowing = tmp_path / "cloned" / "evil"  # its .git file names the victim's worktree entry
    borrowing.mkdir(parents=True)
    (borrowing / ".git").write_text(f"gitdir: {admin}\n")
    forging = tmp_path / "cloned" / "forger"  # a fake entry of its own, pointing back at it
    fake = forging / "x" / "worktrees" / "w"
    fake.mkdir(parents=True)
    (forging / ".git").write_text(f"gitdir: {fake}\n")
    (fake / "commondir").write_text(f"{main / '.git'}\n")
    (fake / "gitdir").write_text(f"{forging / '.git'}\n")
    linking = tmp_path / "cloned" / "linker"  # a symlink to the real worktree's .git file
    linking.mkdir()
    (linking / ".git").symlink_to(worktree / ".git")

    for project in (borrowing, forging, linking):
        location = memdir_of(frame_at(project)).location.path
        assert location != victim, project
        assert expected_key(project) in str(location)
    assert memdir_of(frame_at(worktree)).location.path == victim  # the real one still shares
