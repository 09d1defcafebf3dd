"""The persistent memory directory (docs/memdir.md): location, memory files, the MEMORY.md index and
the store that keeps them consistent.

The package is light to import (the hook's fast path reads the location and the index on every
event): the store and the native hashes load only when used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memframe.memdir.location import MODE_ENV, MemoryLocation, locate_for, resolve_memory_dir

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
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
    from memframe.memdir.store import DoctorReport, MemoryStore

_LAZY = {
    "DEFAULT_SCOPE": "files",
    "MEMORY_TYPES": "files",
    "Memory": "files",
    "MemoryFormatError": "files",
    "freshness_caveat": "files",
    "parse_memory": "files",
    "render_memory": "files",
    "INDEX_FILE": "index",
    "MAX_BYTES": "index",
    "MAX_LINES": "index",
    "load_for_prompt": "index",
    "DoctorReport": "store",
    "MemoryStore": "store",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memframe.memdir' has no attribute {name!r}")
    return getattr(importlib.import_module(f"memframe.memdir.{module}"), name)


def locate(frame: MemoryFrame) -> MemoryLocation:
    """The memory directory of ``frame``'s project (see :func:`resolve_memory_dir`):
    :meth:`MemoryFrame.memory_location`, resolved once per frame."""
    return frame.memory_location()


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
    "locate_for",
    "parse_memory",
    "render_memory",
    "resolve_memory_dir",
]
