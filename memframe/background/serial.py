"""One background job at a time, with at most one waiting behind it.

Model-driven layers (session notes, memory extraction) must never run two jobs for one session
at once; triggers that arrive meanwhile collapse into a single trailing job carrying the newest
data, so nothing is lost and nothing piles up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from memframe.session import Session

J = TypeVar("J")


class SerialRunner(Generic[J]):
    """Runs ``run(job)`` on the session's background executor, one job at a time.

    :param run: does one job; an exception is kept, the trailing job still runs, and the first
        exception is re-raised at the end (so it reaches ``on_layer_error``).
    :param on_replaced: told about a waiting job that a newer one replaced.
    :param on_idle: called after the last job of a burst (e.g. to save state).
    """

    def __init__(
        self,
        run: Callable[[J], None],
        *,
        on_replaced: Callable[[J], None] | None = None,
        on_idle: Callable[[], None] | None = None,
    ) -> None:
        self._run = run
        self._on_replaced = on_replaced
        self._on_idle = on_idle
        self.cond = threading.Condition()
        self.in_flight = False
        self.started_at = 0.0
        self.pending: tuple[J] | None = None

    def submit(self, session: Session, job: J, *, name: str, layer: str) -> bool:
        """Start ``job`` now, or leave it waiting behind the one in flight. ``True`` if started."""
        with self.cond:
            if self.in_flight:
                if self.pending is not None and self._on_replaced is not None:
                    self._on_replaced(self.pending[0])
                self.pending = (job,)
                return False
            self.in_flight = True
            self.started_at = time.monotonic()
        session.submit_background(lambda: self._drain(job), name=name, layer=layer)
        return True

    def _drain(self, job: J) -> None:
        current: tuple[J] | None = (job,)
        failures: list[Exception] = []
        try:
            while current is not None:
                try:
                    self._run(current[0])
                except Exception as exc:  # kept; the trailing job still runs
                    failures.append(exc)
                with self.cond:
                    current, self.pending = self.pending, None
                    self.started_at = time.monotonic()
        finally:
            with self.cond:
                self.in_flight = False
                self.pending = None
                self.cond.notify_all()
            if self._on_idle is not None:
                self._on_idle()
        if failures:
            raise failures[0]

    def wait(self, timeout: float, stale_after: float) -> bool:
        """Wait for the job in flight; ``False`` when it did not finish within ``timeout`` or it
        started more than ``stale_after`` seconds ago (a stale job is not waited for)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.in_flight:
                now = time.monotonic()
                if now - self.started_at > stale_after or now >= deadline:
                    return False
                self.cond.wait(min(deadline, self.started_at + stale_after) - now)
            return True


class SessionRunners(Generic[J]):
    """One :class:`SerialRunner` per session, created on first use; state saved when idle."""

    def __init__(
        self,
        run: Callable[[Session, J], None],
        *,
        on_replaced: Callable[[J], None] | None = None,
    ) -> None:
        self._run = run
        self._on_replaced = on_replaced
        self._runners: dict[str, SerialRunner[J]] = {}
        self._lock = threading.Lock()

    def submit(self, session: Session, job: J, *, name: str, layer: str) -> bool:
        with self._lock:
            runner = self._runners.get(session.id)
            if runner is None:
                runner = SerialRunner(
                    lambda job: self._run(session, job),
                    on_replaced=self._on_replaced,
                    on_idle=session.state.save,
                )
                self._runners[session.id] = runner
        return runner.submit(session, job, name=name, layer=layer)

    def wait(self, session: Session, timeout: float, stale_after: float) -> bool:
        runner = self._runners.get(session.id)
        return True if runner is None else runner.wait(timeout, stale_after)

    def forget(self, session: Session) -> None:
        with self._lock:
            self._runners.pop(session.id, None)
