"""Memory files: Markdown with a small frontmatter (``name``, ``description``, ``type``)."""

from __future__ import annotations

import math
import re
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

MEMORY_TYPES = ("user", "feedback", "project", "reference")
# Where each type belongs by default. ``user`` memories never leave the machine.
DEFAULT_SCOPE = {"user": "private", "feedback": "private", "project": "team", "reference": "team"}
TEAM_DIR = "team"
DAY_MS = 86_400_000
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:\s*(.*)$")


class MemoryFormatError(ValueError):
    """A memory is missing what it needs (a name, a known shape)."""


@dataclass
class Memory:
    """One memory file as read from disk."""

    path: Path
    name: str
    description: str
    type: str
    body: str
    mtime: float = 0.0
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def known_type(self) -> bool:
        return self.type in MEMORY_TYPES

    def relative_to(self, root: Path) -> str:
        return self.path.relative_to(root).as_posix()

    def scope(self, root: Path) -> str:
        """``team`` when the file lives under ``team/``, else ``private``."""
        return "team" if self.relative_to(root).startswith(f"{TEAM_DIR}/") else "private"

    @property
    def content_hash(self) -> str:
        """xxh3 of the normalised body: equal statements are equal memories."""
        from memframe import _backend  # the native engine: only when a hash is needed

        return f"{_backend.xxh3_64(normalise(self.body)):016x}"

    def age_days(self, now: float | None = None) -> int:
        now_ms = (time.time() if now is None else now) * 1000
        return max(0, math.floor((now_ms - self.mtime * 1000) / DAY_MS))


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse_memory(text: str, path: Path, mtime: float = 0.0) -> Memory:
    """A memory from its file text. Missing frontmatter degrades gracefully: the file name is
    the name, the first line the description, the type ``unknown``."""
    match = _FRONTMATTER.match(text)
    fields: dict[str, str] = {}
    body = text
    if match:
        for line in match.group(1).splitlines():
            kv = _KEY.match(line.strip())
            if kv:
                fields[kv.group(1).lower()] = _unquote(kv.group(2))
        body = text[match.end() :]
    body = body.strip("\n")
    first = next((ln.strip("# ").strip() for ln in body.splitlines() if ln.strip()), "")
    name = fields.pop("name", "") or path.stem.replace("-", " ").replace("_", " ")
    description = fields.pop("description", "") or first[:150]
    kind = (fields.pop("type", "") or "unknown").strip().lower()
    return Memory(path, name, description, kind, body, mtime, fields)


def _one_line(value: str) -> str:
    return " ".join(value.split())


def render_memory(name: str, description: str, kind: str, body: str) -> str:
    if not _one_line(name):
        raise MemoryFormatError("a memory needs a name")
    if kind not in MEMORY_TYPES:
        raise MemoryFormatError(
            f"memory type must be one of {', '.join(MEMORY_TYPES)}, got {kind!r}"
        )
    return (
        f"---\nname: {_one_line(name)}\ndescription: {_one_line(description)}\n"
        f"type: {kind}\n---\n\n{body.strip()}\n"
    )


def slugify(name: str, limit: int = 60) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:limit].strip("-")
    if slug:
        return slug
    from memframe import _backend

    return f"memory-{_backend.xxh3_64(name) & 0xFFFFFFFF:08x}"


def freshness_caveat(memory: Memory, now: float | None = None) -> str | None:
    """The warning a memory older than one day carries when it is surfaced."""
    age = memory.age_days(now)
    if age <= 1:
        return None
    return (
        f"This memory is {age} days old. It records what was true when it was written, not "
        "what is true now: verify any claim about code, files or behaviour against the current "
        "state before relying on it."
    )
