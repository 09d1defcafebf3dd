"""The persistent memory directory (SPEC §4.2): location, memory files, the MEMORY.md index and
the store that keeps them consistent."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from memframe.memdir.files import (
    DEFAULT_SCOPE,
    MEMORY_TYPES,
    Memory,
    MemoryFormatError,
    freshness_caveat,
    parse_memory,
    render_memory,
)
from memframe.memdir.index import INDEX_FILE, MAX_BYTES, MAX_LINES, load_for_prompt
from memframe.memdir.location import MemoryLocation, resolve_memory_dir
from memframe.memdir.store import DoctorReport, MemoryStore

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame

MODE_ENV = "MEMFRAME_MEMORY_MODE"


def locate(frame: MemoryFrame) -> MemoryLocation:
    """The memory directory of ``frame``'s project (see :func:`resolve_memory_dir`); resolved
    once per frame, so every layer agrees and a warning is logged once."""
    from memframe.config import SETTINGS_FILE, ConfigError

    cached: MemoryLocation | None = getattr(frame, "_memory_location", None)
    if cached is not None:
        return cached

    mode = os.environ.get(MODE_ENV, "").strip() or frame.config.settings.get(
        "memory_mode", "memframe"
    )
    if not isinstance(mode, str):
        raise ConfigError(f"settings 'memory_mode' must be a string, got {mode!r}")
    location = resolve_memory_dir(
        frame.project_dir,
        mode=mode,
        home=frame.config.home,
        user_settings=frame.config.settings,
        user_settings_path=frame.config.config_dir / SETTINGS_FILE,
    )
    frame._memory_location = location
    return location


__all__ = [
    "DEFAULT_SCOPE",
    "INDEX_FILE",
    "MAX_BYTES",
    "MAX_LINES",
    "MEMORY_TYPES",
    "MODE_ENV",
    "DoctorReport",
    "Memory",
    "MemoryFormatError",
    "MemoryLocation",
    "MemoryStore",
    "freshness_caveat",
    "load_for_prompt",
    "locate",
    "parse_memory",
    "render_memory",
    "resolve_memory_dir",
]
