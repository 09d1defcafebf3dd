"""A small background executor for slow layer work (model calls, file rewriting, network).

Normally tasks run on a few worker threads. In *synchronous* mode — for tests, see
:func:`synchronous_background` — each task runs on the thread that submits it, before
``submit`` returns, so a layer's background work is finished when the hook that started it
returns: no thread, no waiting, the same order every run.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_SYNCHRONOUS: ContextVar[bool] = ContextVar("memframe_synchronous_background", default=False)


@contextmanager
def synchronous_background(enabled: bool = True) -> Iterator[None]:
    """Executors created inside the block (so: frames opened inside it) run their background
    work synchronously, for their whole life. The switch is per thread (a context variable):
    frames opened elsewhere meanwhile keep their worker threads."""
    token = _SYNCHRONOUS.set(enabled)
    try:
        yield
    finally:
        _SYNCHRONOUS.reset(token)


class BackgroundExecutor:
    """Runs tasks on a few worker threads and tracks them so ``flush`` can wait for all.

    A task that raises is passed to its ``on_error`` callback; it never crashes the host.

    :param workers: worker threads (unused in synchronous mode).
    :param synchronous: run each task on the submitting thread before ``submit`` returns; a
        task submitted by a task that is running that way runs right after it, on the same
        thread (never nested inside it). ``None``: synchronous inside
        :func:`synchronous_background`, threaded otherwise.
    """

    def __init__(self, workers: int, *, synchronous: bool | None = None) -> None:
        self.synchronous = _SYNCHRONOUS.get() if synchronous is None else synchronous
        self._pool = (
            None
            if self.synchronous
            else ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memframe")
        )
        self._pending: set[Future[Any]] = set()
        self._owners: dict[Future[Any], int] = {}  # synchronous mode: the thread that runs it
        self._queues = threading.local()  # synchronous mode: tasks waiting on this thread
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
            if self._pool is not None:
                future = self._pool.submit(run)
                self._pending.add(future)
            else:
                future = Future()
                self._pending.add(future)
                self._owners[future] = threading.get_ident()
        if self._pool is not None:
            future.add_done_callback(self._forget)
        else:
            self._run_here(future, run)
        return future

    def _run_here(self, future: Future[Any], run: Callable[[], Any]) -> None:
        queue: deque[tuple[Future[Any], Callable[[], Any]]] | None = getattr(
            self._queues, "queue", None
        )
        if queue is not None:  # submitted by a task running here: it goes next
            queue.append((future, run))
            return
        queue = self._queues.queue = deque([(future, run)])
        try:
            while queue:
                task, call = queue.popleft()
                try:
                    if task.set_running_or_notify_cancel():
                        try:
                            task.set_result(call())
                        except Exception as exc:  # already reported through on_error
                            task.set_exception(exc)
                finally:
                    self._forget(task)
        finally:
            self._queues.queue = None
            for task, _ in queue:  # only left when a BaseException (KeyboardInterrupt) escaped
                task.cancel()
                self._forget(task)

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)
            self._owners.pop(future, None)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted task (including ones submitted meanwhile) finished.

        In synchronous mode the only tasks that can be unfinished are those running or queued
        on other threads (waited for), or queued on this thread behind the task calling
        ``flush`` (they cannot run until it returns: ``False``).

        :return: ``True`` when all finished, ``False`` when ``timeout`` seconds ran out first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        here = threading.get_ident()
        while True:
            with self._lock:
                pending = {f for f in self._pending if self._owners.get(f) != here}
                stuck = len(self._pending) - len(pending)
            if not pending:
                return stuck == 0
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            wait_futures(pending, timeout=remaining)

    def shutdown(self, timeout: float | None = None) -> bool:
        """Flush, then stop the workers; tasks still queued after ``timeout`` are cancelled."""
        finished = self.flush(timeout)
        with self._lock:
            self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=finished, cancel_futures=True)
        return finished
