"""Per-session state: one JSON file per session, with a section per layer, written atomically."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from memframe._fs import atomic_write_bytes

log = logging.getLogger("memframe")


class SessionState:
    """A session's persisted state. Layers keep their data in ``state.section(layer_name)``.

    A state file that cannot be parsed is moved aside (``state.json.corrupt-<time>``) rather
    than overwritten, so nothing is lost, and the session starts with empty state.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._data: dict[str, Any] = self._load()

    def _load(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = orjson.loads(raw)
            if not isinstance(data, dict):
                raise ValueError(f"top level is {type(data).__name__}, not an object")
        except ValueError as exc:
            aside = self._aside_path()
            self.path.rename(aside)
            log.warning(
                "session state %s was unreadable (%s); kept it as %s", self.path, exc, aside
            )
            return {}
        return data

    def _aside_path(self) -> Path:
        """A free ``state.json.corrupt-<time>[-n]`` name: an earlier kept file is never replaced."""
        stem = f"{self.path.name}.corrupt-{int(time.time())}"
        aside = self.path.with_name(stem)
        number = 0
        while aside.exists() or aside.is_symlink():
            number += 1
            aside = self.path.with_name(f"{stem}-{number}")
        return aside

    def section(self, name: str) -> dict[str, Any]:
        """The mutable dict of one layer (created empty); call :meth:`save` after changing it."""
        with self._lock:
            value = self._data.setdefault(name, {})
            if not isinstance(value, dict):
                raise TypeError(f"state section {name!r} is {type(value).__name__}, not a dict")
            return value

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the whole state."""
        with self._lock:
            copied: dict[str, Any] = orjson.loads(orjson.dumps(self._data))
            return copied

    def save(self) -> None:
        """Write the state atomically (temp file, fsync, rename); mode 0600."""
        with self._lock:
            payload = orjson.dumps(self._data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
            atomic_write_bytes(self.path, payload)
