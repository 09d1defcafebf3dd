"""The memory directory and the memory prompt, for the hook's fast path.

``memframe.memdir`` is light to import (the store and the native hashes load only when used), so
the hook reads the location and ``MEMORY.md`` through the same functions as the memdir layer: the
text is the one ``collect_context`` injects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memframe.config import Config
    from memframe.memdir.location import MemoryLocation

CONTEXT_TITLE = "Memory"  # the memdir layer's block title
SOURCE = "memdir"  # the layer whose blocks the hook renders


def memory_location(project_dir: Path, config: Config) -> MemoryLocation:
    """Where the memory directory of ``project_dir`` is (as ``memframe.memdir.locate``)."""
    from memframe.memdir.location import locate_for

    return locate_for(project_dir.resolve(), config)


@dataclass(frozen=True)
class MemoryContext:
    """The memory prompt: its text, the index limits that fired, and the index's identity."""

    text: str
    warnings: list[str]
    index_size: int
    index_mtime_ns: int

    @property
    def fingerprint(self) -> str:
        return f"{self.index_size}:{self.index_mtime_ns}"


def index_fingerprint(memory_dir: Path) -> str:
    """Size and mtime of ``MEMORY.md`` (``0:0`` when missing): changes when the index does."""
    try:
        stat = (memory_dir / "MEMORY.md").stat()
    except OSError:
        return "0:0"
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def memory_context(location: MemoryLocation) -> MemoryContext:
    """The memdir layer's ``Memory`` block, rendered: instructions, then ``MEMORY.md`` cut to
    its limits with a warning line for each limit that fired."""
    from memframe.memdir.index import INDEX_FILE, memory_prompt

    index_path = location.path.resolve() / INDEX_FILE
    try:
        stat = index_path.stat()
        raw = index_path.read_bytes()
        size, mtime_ns = stat.st_size, stat.st_mtime_ns
    except (FileNotFoundError, NotADirectoryError):
        raw, size, mtime_ns = b"", 0, 0
    from memframe.context.blocks import ContextBlock

    text, warnings = memory_prompt(str(location.path), raw.decode("utf-8", "replace"))
    rendered = ContextBlock(SOURCE, CONTEXT_TITLE, text).render()
    return MemoryContext(rendered, list(warnings), size, mtime_ns)


def relevant_memories(
    location: MemoryLocation, config: Config, prompt: str | None, state: dict[str, Any]
) -> str:
    """The memdir layer's ``Relevant memories`` block for ``prompt`` (BM25: a hook cannot wait
    for a model), rendered; '' when nothing new fits. ``state`` (the session's hook state)
    remembers what this session was shown, so no memory is shown twice."""
    if not prompt or not prompt.strip() or not location.path.is_dir():
        return ""
    from memframe.layer_settings import settings_from
    from memframe.memdir.recall import RELEVANT_TITLE, MemdirSettings, recall
    from memframe.memdir.store import MemoryStore

    settings = settings_from(MemdirSettings, config.settings.get("memdir"), "memdir")
    seen = state.get("recall")
    surfaced: list[str] = []
    spent = 0
    if isinstance(seen, dict):
        files, total = seen.get("surfaced"), seen.get("bytes")
        if isinstance(files, list) and all(isinstance(f, str) for f in files):
            surfaced = list(files)
        if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
            spent = total
    text, spent = recall(MemoryStore(location.path), prompt, surfaced, spent, settings)
    state["recall"] = {"surfaced": surfaced, "bytes": spent}
    from memframe.context.blocks import ContextBlock

    return ContextBlock(SOURCE, RELEVANT_TITLE, text).render() if text else ""
