"""Remotely tunable settings: what ``provide_config`` layers answer, fetched in the background and
cached, so reading a value never waits on a network."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame

log = logging.getLogger("memframe")
DEFAULT_TTL = 300.0


class RemoteConfig:
    """The merged answers of every ``provide_config`` layer.

    ``get`` returns the cached value (or ``None``) at once; a stale or missing cache starts one
    background refresh. ``version`` increases with each refresh so readers can recompute what
    they derived from it.
    """

    def __init__(
        self,
        frame: MemoryFrame,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._frame = frame
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._values: dict[str, Any] = {}
        self._fetched_at: float | None = None
        self._fetching = False
        self.version = 0
        self.fetches = 0

    def poll(self) -> None:
        """Start a background refresh when the cache is missing or stale; never waits."""
        self._refresh_if_stale()

    def get(self, key: str) -> Any:
        self._refresh_if_stale()
        return self._values.get(key)

    def values(self) -> dict[str, Any]:
        self._refresh_if_stale()
        return dict(self._values)

    def _refresh_if_stale(self) -> None:
        now = self._clock()
        fetched = self._fetched_at
        if fetched is not None and now - fetched < self._ttl:
            return
        with self._lock:
            if self._fetching or self._frame.closed:
                return
            self._fetching = True
        try:
            self._frame.submit_background(self._fetch, name="provide_config", layer="memframe")
        except RuntimeError:  # the executor is shutting down: keep what we have
            with self._lock:
                self._fetching = False

    def _fetch(self) -> None:
        try:
            answers = self._frame.manager.call("provide_config", frame=self._frame)
            merged: dict[str, Any] = {}
            for answer in reversed(answers):  # the first-called layer wins
                if isinstance(answer, Mapping):
                    merged.update({str(k): v for k, v in answer.items()})
                else:
                    log.warning("provide_config returned %r, not a mapping; ignored", answer)
            with self._lock:
                self._values = merged
                self.version += 1
                self.fetches += 1
        finally:
            with self._lock:
                self._fetched_at = self._clock()
                self._fetching = False
