"""A small background executor for slow layer work (model calls, file rewriting, network)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundExecutor:
    """Runs tasks on a few worker threads and tracks them so ``flush`` can wait for all.

    A task that raises is passed to its ``on_error`` callback; it never crashes the host.
    """

    def __init__(self, workers: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memframe")
        self._pending: set[Future[Any]] = set()
        self._lock = threading.Lock()
        self._closed = False

    def submit(
        self, fn: Callable[[], T], *, on_error: Callable[[Exception], None] | None = None
    ) -> Future[T]:
        """Run ``fn()`` in the background; an exception goes to ``on_error`` (and the future)."""

        def run() -> T:
            try:
                return fn()
            except Exception as exc:
                if on_error is not None:
                    on_error(exc)
                raise

        with self._lock:
            if self._closed:
                raise RuntimeError("the memframe background executor is closed")
            future = self._pool.submit(run)
            self._pending.add(future)
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted task (including ones submitted meanwhile) finished.

        :return: ``True`` when all finished, ``False`` when ``timeout`` seconds ran out first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                pending = set(self._pending)
            if not pending:
                return True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            wait_futures(pending, timeout=remaining)

    def shutdown(self, timeout: float | None = None) -> bool:
        """Flush, then stop the workers; tasks still queued after ``timeout`` are cancelled."""
        finished = self.flush(timeout)
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=finished, cancel_futures=True)
        return finished
