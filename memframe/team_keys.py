"""Team memory keys: relative POSIX paths of files under ``<memory dir>/team/``.

A key that arrives from a server is untrusted: it could try to write outside the team directory.
``check_key`` accepts only plain relative paths of safe segments; ``safe_target`` also makes sure
the real path (after resolving symlinked ancestors) stays inside the team directory. The server
applies the same check before storing anything.
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
_SEGMENT = re.compile(r"^[^\x00-\x1f\x7f]+$")


class UnsafeKeyError(ValueError):
    """A key that is not a plain relative path inside the team directory."""


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
    if "\\" in key:
        return "contains a backslash"
    if any(ch in LOOKALIKES for ch in key):
        return "contains a look-alike of '/' or '.'"
    if unicodedata.normalize("NFKC", key) != key:
        return "not in Unicode normal form (NFKC)"
    if "%" in key and unquote(key) != key:
        return "percent-encoded"
    if key.startswith("/") or re.match(r"^[A-Za-z]:", key):
        return "absolute"
    segments = key.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            return "empty, '.' or '..' path segment"
        if not _SEGMENT.match(segment):
            return "control characters"
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
