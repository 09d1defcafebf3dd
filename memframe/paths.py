"""Where memframe keeps things: the memory base, per-project and per-session directories."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

SCAN_CACHE_ENV = "MEMFRAME_SCAN_CACHE"
MAX_SLUG_LENGTH = 120
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def sanitize_path(path: str) -> str:
    """A directory name for ``path``: every non-alphanumeric character becomes ``-``.

    Names longer than ``MAX_SLUG_LENGTH`` are cut and given a hash suffix so distinct long paths
    stay distinct.
    """
    slug = _NON_ALNUM.sub("-", path)
    if len(slug) <= MAX_SLUG_LENGTH:
        return slug
    digest = hashlib.sha256(path.encode("utf-8")).hexdigest()[:12]
    return f"{slug[: MAX_SLUG_LENGTH - 13]}-{digest}"


def canonical_git_root(start: Path) -> Path | None:
    """The main working tree of the git repository containing ``start``, or ``None``.

    Linked worktrees (a ``.git`` *file* pointing into ``<main>/.git/worktrees/<name>``) resolve to
    the main working tree, so every worktree of one repository shares one memory directory. A
    ``.git`` file is followed only when the main repository records that worktree: its
    ``<main>/.git/worktrees/<name>/gitdir`` names this very ``.git`` file. Anything else (a
    ``.git`` file a project wrote itself, a symlink, a submodule) makes the directory its own
    project: a repository cannot alias another project's memory.
    """
    current = start.resolve()
    for candidate in (current, *current.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            return candidate
        if dot_git.is_file():
            return _main_tree_of_worktree(candidate, dot_git) or candidate
    return None


def _first_line(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8") as file:
            return file.readline(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None


def _main_tree_of_worktree(tree: Path, dot_git: Path) -> Path | None:
    """The main working tree that records ``tree`` as one of its linked worktrees, or ``None``
    when nothing there vouches for ``dot_git``."""
    if dot_git.is_symlink():
        return None
    first_line = _first_line(dot_git)
    if not first_line or not first_line.startswith("gitdir:"):
        return None
    git_dir = Path(os.path.realpath(tree / first_line.removeprefix("gitdir:").strip()))
    common = _first_line(git_dir / "commondir")
    back = _first_line(git_dir / "gitdir")  # written by git: the worktree's .git file
    if not common or not back:
        return None
    common_dir = Path(os.path.realpath(git_dir / common))
    # the admin dir must be one of the main repository's own worktree entries…
    if git_dir.parent != common_dir / "worktrees" or common_dir.name != ".git":
        return None
    # …and that entry must point back at this .git file (absolute, or relative to the entry)
    if Path(os.path.realpath(git_dir / back)) != tree / ".git":
        return None
    main = common_dir.parent
    return main if Path(os.path.realpath(main / ".git")) == common_dir else None


def project_key(project_dir: Path) -> str:
    """The per-project directory name: the sanitized canonical git root (or the directory)."""
    root = canonical_git_root(project_dir) or project_dir.resolve()
    return sanitize_path(str(root))


def scan_cache_dir() -> Path | None:
    """Where the scanner keeps what it derives from rules: the native engine's compiled databases
    and the validated bundled rule set. ``$MEMFRAME_SCAN_CACHE`` (a directory, or ``off``), else
    ``$XDG_CACHE_HOME/memframe/scan-db``, else ``~/.cache/memframe/scan-db``. Short-lived
    processes (a hook call) then load them instead of compiling them."""
    value = os.environ.get(SCAN_CACHE_ENV, "").strip()
    if value.lower() in ("off", "0", "false", "no"):
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "memframe" / "scan-db"
