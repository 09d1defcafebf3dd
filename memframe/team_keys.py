"""Team memory keys and repo names: the one set of rules the sync client and the team server
both apply.

A key is the relative POSIX path of a file under ``<memory dir>/team/``. One that arrives from a
server (or from a client, on the server) is untrusted: it could try to write outside the team
directory, or hide a line break in a name that ends up in listings, logs and ``MEMORY.md``.
``check_key`` accepts only plain relative paths of safe segments; ``safe_target`` also makes
sure the real path (after resolving symlinked ancestors) stays inside the team directory.

A repo name is ``owner/name``: ASCII letters, digits, ``.``, ``_`` and ``-``, each part starting
with a letter or digit, at most 100 characters each (``check_repo``, ``REPO``).

Every pattern here matches the *whole* string (``fullmatch`` or ``\\Z``): ``$`` would also match
before a trailing newline, letting ``acme/app\\n`` or ``evil\\n`` through.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

MAX_KEY_LENGTH = 512
MAX_ENTRY_BYTES = 250_000
# Characters that render like a path separator or a dot: Unicode look-alike traversal.
LOOKALIKES = frozenset(
    "\u2215\u2044\u29f8\uff0f\u2216\ufe68\uff3c\u2024\u2025\u2026\uff0e\u3002\ufe52\u0338"
)
# Control characters (C0, DEL, C1: ``Cc``), format characters (``Cf``: zero-width and
# bidirectional marks, soft hyphen…), lone surrogates (``Cs``) and the line and paragraph
# separators (``Zl``, ``Zp``): never part of a key.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
REPO_PART = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"
# Anchored at both ends (``\Z``, not ``$``): ``REPO.match`` is as strict as ``fullmatch``.
REPO = re.compile(rf"\A{REPO_PART}/{REPO_PART}\Z")
_DRIVE = re.compile(r"[A-Za-z]:")


class UnsafeKeyError(ValueError):
    """A key that is not a plain relative path inside the team directory."""


class UnsafeRepoError(ValueError):
    """A repo name that is not ``owner/name`` of the allowed characters."""


def refused_character(text: str) -> str | None:
    """The first control, format, surrogate or line/paragraph separator character of
    ``text``, or ``None``."""
    if text.isprintable():  # the common case: none of them (isprintable is stricter still)
        return None
    for ch in text:
        if unicodedata.category(ch) in REFUSED_CATEGORIES:
            return ch
    return None


def is_repo(repo: object) -> bool:
    """``repo`` is a valid ``owner/name``."""
    return isinstance(repo, str) and REPO.fullmatch(repo) is not None


def check_repo(repo: object) -> str:
    """``repo`` if it is a valid ``owner/name``, else :class:`UnsafeRepoError` saying why."""
    if not isinstance(repo, str):
        raise UnsafeRepoError(f"a repo must be a string, got {type(repo).__name__}")
    if not is_repo(repo):
        raise UnsafeRepoError(
            "a repo must look like owner/name (letters, digits, '.', '_', '-'; each part "
            f"starting with a letter or digit, at most 100 characters), got {repo[:210]!r}"
        )
    return repo


def check_key(key: object) -> str:
    """``key`` if it is a safe team memory key, else :class:`UnsafeKeyError` saying why."""
    if not isinstance(key, str):
        raise UnsafeKeyError(f"a key must be a string, got {type(key).__name__}")
    why = _problem(key)
    if why:
        raise UnsafeKeyError(f"unsafe key {key[:80]!r}: {why}")
    return key


def _problem(key: str) -> str | None:
    if not key:
        return "empty"
    if len(key) > MAX_KEY_LENGTH:
        return f"longer than {MAX_KEY_LENGTH} characters"
    if "\x00" in key:
        return "contains NUL"
    bad = refused_character(key)
    if bad is not None:
        return f"contains the control or format character U+{ord(bad):04X}"
    if "\\" in key:
        return "contains a backslash"
    if any(ch in LOOKALIKES for ch in key):
        return "contains a look-alike of '/' or '.'"
    if unicodedata.normalize("NFKC", key) != key:
        return "not in Unicode normal form (NFKC)"
    if "%" in key and unquote(key) != key:
        return "percent-encoded"
    if key.startswith("/") or _DRIVE.match(key):
        return "absolute"
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            return "empty, '.' or '..' path segment"
        if segment.startswith("."):
            return "hidden file or directory"
    if not key.endswith(".md"):
        return "not a Markdown file (.md)"
    return None


def safe_target(team_dir: Path, key: str) -> Path:
    """Where ``key`` lives under ``team_dir``; refuses keys whose real path would leave it
    (including through a symlinked ancestor)."""
    check_key(key)
    root = Path(os.path.realpath(team_dir))
    target = team_dir / key
    real_parent = Path(os.path.realpath(target.parent))
    if real_parent != root and root not in real_parent.parents:
        raise UnsafeKeyError(f"unsafe key {key!r}: leaves the team directory through a symlink")
    if target.is_symlink():
        raise UnsafeKeyError(f"unsafe key {key!r}: the local file is a symlink")
    return target


def local_keys(team_dir: Path) -> dict[str, Path]:
    """The team files as key → path (only regular ``*.md`` files that are valid keys)."""
    found: dict[str, Path] = {}
    if not team_dir.is_dir():
        return found
    for path in sorted(team_dir.rglob("*.md")):
        if path.is_symlink() or not path.is_file():
            continue
        key = path.relative_to(team_dir).as_posix()
        if _problem(key) is None:
            found[key] = path
    return found
