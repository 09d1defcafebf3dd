"""Per-session state: one JSON file per session, with a section per layer, written atomically.

**The one policy for memframe's own state files** (session state, the hook's state, team
sync's state, session notes): a file that cannot be read as what it should be is never
overwritten and never a reason to fail — it is renamed aside to a free
``<name>.corrupt-<unix time>[-n]`` beside it (an earlier kept file is never replaced), a warning
names both paths on the ``memframe`` logger, and memframe starts again from empty.
:func:`load_json_state` and :func:`keep_aside` implement it; files the *user* writes (settings,
rule files, baselines) are different: a bad one is a clear error and is left as it is.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from memframe._fs import atomic_write_bytes

log = logging.getLogger("memframe")


def keep_aside(path: Path, why: str, what: str = "state file") -> Path | None:
    """Rename an unreadable ``path`` to a free ``<name>.corrupt-<time>[-n]`` and log it;
    ``None`` when the rename failed (then the file is left where it is)."""
    stem = f"{path.name}.corrupt-{int(time.time())}"
    aside = path.with_name(stem)
    number = 0
    while aside.exists() or aside.is_symlink():
        number += 1
        aside = path.with_name(f"{stem}-{number}")
    try:
        path.rename(aside)
    except OSError as exc:
        log.warning(
            "%s %s is unreadable (%s) and could not be kept aside: %s", what, path, why, exc
        )
        return None
    log.warning("%s %s was unreadable (%s); kept it as %s", what, path, why, aside)
    return aside


def load_json_state(path: Path, what: str = "state file") -> dict[str, Any]:
    """A JSON-object state file as a dict; ``{}`` when missing, and (kept aside by
    :func:`keep_aside`) when it is not a JSON object."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        data = orjson.loads(raw)
        if not isinstance(data, dict):
            raise ValueError(f"top level is {type(data).__name__}, not an object")
    except ValueError as exc:
        keep_aside(path, str(exc), what)
        return {}
    return data


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
        return load_json_state(self.path, "session state")

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
