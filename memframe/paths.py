"""Where memframe keeps things: the memory base, per-project and per-session directories."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

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
    the main working tree, so every worktree of one repository shares one memory directory.
    """
    current = start.resolve()
    for candidate in (current, *current.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            return candidate
        if dot_git.is_file():
            return _main_tree_of_worktree(candidate, dot_git) or candidate
    return None


def _main_tree_of_worktree(tree: Path, dot_git: Path) -> Path | None:
    try:
        first_line = dot_git.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    if not first_line.startswith("gitdir:"):
        return None
    git_dir = (tree / first_line.removeprefix("gitdir:").strip()).resolve()
    common = git_dir / "commondir"
    try:
        common_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return None
    return common_dir.parent if common_dir.name == ".git" else None


def project_key(project_dir: Path) -> str:
    """The per-project directory name: the sanitized canonical git root (or the directory)."""
    root = canonical_git_root(project_dir) or project_dir.resolve()
    return sanitize_path(str(root))
