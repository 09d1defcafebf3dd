"""Where memframe keeps things (paths) and how it writes them (_fs)."""

from __future__ import annotations

import os
import re
import stat

import pytest

from memframe._fs import atomic_write_bytes, atomic_write_text, ensure_private_dir
from memframe.paths import MAX_SLUG_LENGTH, canonical_git_root, project_key, sanitize_path


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- sanitize_path -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/home/ada/src/app", "-home-ada-src-app"),
        ("C:\\Users\\ada\\my app", "C--Users-ada-my-app"),
        ("/srv/repo.git/x_y", "-srv-repo-git-x-y"),
        ("/tmp/記憶", "-tmp---"),
        ("abcXYZ019", "abcXYZ019"),
        ("", ""),
    ],
)
def test_every_non_alphanumeric_character_becomes_a_dash(path, expected):
    assert sanitize_path(path) == expected


def test_names_up_to_the_limit_are_kept_whole():
    name = "/" + "a" * (MAX_SLUG_LENGTH - 1)
    assert sanitize_path(name) == "-" + "a" * (MAX_SLUG_LENGTH - 1)


def test_long_names_are_cut_with_a_hash_suffix():
    base = "/home/ada/" + "deeply/nested/" * 20
    one, two = sanitize_path(base + "project-one"), sanitize_path(base + "project-two")
    assert len(one) == len(two) == MAX_SLUG_LENGTH
    assert one != two  # they differ only beyond the cut: the hash keeps them apart
    assert one[:100] == two[:100] == sanitize_path(base)[:100]
    assert re.fullmatch(r"[A-Za-z0-9-]+-[0-9a-f]{12}", one)
    assert sanitize_path(base + "project-one") == one  # deterministic


def test_long_names_that_sanitize_alike_stay_distinct():
    base = "x" * 200
    assert sanitize_path(base + "/a") != sanitize_path(base + "-a")


# -- canonical_git_root and project_key --------------------------------------------------------


@pytest.fixture
def repo(tmp_path):
    main = tmp_path / "main"
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / "src" / "pkg").mkdir(parents=True)
    return main


def make_worktree(repo, where):
    where.mkdir(parents=True)
    (where / ".git").write_text(f"gitdir: {repo}/.git/worktrees/wt\n", encoding="utf-8")
    (repo / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n", encoding="utf-8")
    (repo / ".git" / "worktrees" / "wt" / "gitdir").write_text(f"{where}/.git\n", encoding="utf-8")
    return where


def test_plain_repository(repo):
    assert canonical_git_root(repo) == repo
    assert canonical_git_root(repo / "src" / "pkg") == repo


def test_not_a_repository(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    if canonical_git_root(tmp_path) is None:  # tmp_path itself is not inside a repository
        assert canonical_git_root(plain) is None
        assert project_key(plain) == sanitize_path(str(plain.resolve()))


def test_linked_worktree_maps_to_the_main_tree(repo, tmp_path):
    worktree = make_worktree(repo, tmp_path / "elsewhere" / "feature")
    (worktree / "sub").mkdir()
    assert canonical_git_root(worktree) == repo
    assert canonical_git_root(worktree / "sub") == repo
    assert project_key(worktree) == project_key(repo) == project_key(repo / "src")
    assert project_key(worktree) == sanitize_path(str(repo.resolve()))


def test_relative_gitdir_in_a_worktree(repo):
    worktree = repo.parent / "wt-relative"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: ../main/.git/worktrees/wt\n", encoding="utf-8")
    (repo / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n", encoding="utf-8")
    assert canonical_git_root(worktree) == repo


@pytest.mark.parametrize(
    "dot_git",
    [
        "",  # empty file
        "not a gitdir line\n",
        "gitdir: /nonexistent/.git/modules/sub\n",  # e.g. a submodule: no commondir
    ],
)
def test_a_git_file_that_is_not_a_linked_worktree_is_its_own_root(tmp_path, dot_git):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / ".git").write_text(dot_git, encoding="utf-8")
    assert canonical_git_root(tree) == tree


def test_symlinked_project_resolves_to_the_same_key(repo, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(repo, target_is_directory=True)
    assert project_key(link) == project_key(repo)


def test_frame_uses_the_project_key(repo, tmp_path):
    from memframe.config import load_config
    from memframe.frame import MemoryFrame

    config = load_config({"home": tmp_path / "home", "config_dir": tmp_path / "config"})
    frame = MemoryFrame(repo / "src", config, builtin_layers=())
    try:
        assert frame.project_key == project_key(repo)
        assert frame.project_home == tmp_path / "home" / "projects" / project_key(repo)
    finally:
        frame.close()


# -- _fs -------------------------------------------------------------------------------------


def test_ensure_private_dir_creates_with_0700(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    assert ensure_private_dir(target) == target
    assert mode(target) == 0o700
    # Parents it had to create are private too; existing ones are left alone.
    assert mode(tmp_path / "a") == 0o700
    assert mode(tmp_path / "a" / "b") == 0o700


def test_ensure_private_dir_tightens_an_existing_dir(tmp_path):
    target = tmp_path / "loose"
    target.mkdir()
    target.chmod(0o777)
    ensure_private_dir(target)
    assert mode(target) == 0o700
    before = mode(tmp_path)
    ensure_private_dir(target)  # idempotent
    assert mode(tmp_path) == before


def test_ensure_private_dir_under_a_restrictive_umask(tmp_path):
    old = os.umask(0o777)
    try:
        ensure_private_dir(tmp_path / "x")
    finally:
        os.umask(old)
    assert mode(tmp_path / "x") == 0o700


def test_atomic_write_creates_private_files(tmp_path):
    path = tmp_path / "dir" / "note.md"
    atomic_write_text(path, "记忆 ✓\n")
    assert path.read_text(encoding="utf-8") == "记忆 ✓\n"
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    atomic_write_bytes(path, b"replaced")
    assert path.read_bytes() == b"replaced"
    assert mode(path) == 0o600
    assert os.listdir(path.parent) == ["note.md"]


def test_atomic_write_with_an_explicit_mode(tmp_path):
    path = tmp_path / "shared.md"
    atomic_write_bytes(path, b"x", mode=0o644)
    assert mode(path) == 0o644


def test_atomic_write_tightens_a_previously_loose_file(tmp_path):
    path = tmp_path / "loose.json"
    path.write_text("{}", encoding="utf-8")
    path.chmod(0o666)
    atomic_write_text(path, "{}")
    assert mode(path) == 0o600


def test_atomic_write_failure_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "dir" / "keep.txt"
    atomic_write_text(path, "old")

    def crash(src, dst):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="Input/output"):
        atomic_write_text(path, "new")
    monkeypatch.undo()
    assert path.read_text(encoding="utf-8") == "old"
    assert os.listdir(path.parent) == ["keep.txt"]


def test_atomic_write_replaces_a_symlink_not_its_target(tmp_path):
    target = tmp_path / "outside.txt"
    target.write_text("untouched", encoding="utf-8")
    link = tmp_path / "mem" / "note.md"
    link.parent.mkdir()
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert target.read_text(encoding="utf-8") == "untouched"
    assert not link.is_symlink()
    assert link.read_text(encoding="utf-8") == "new"
