"""The background executor: flush waits for everything, a timeout is honoured, shutdown stops."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import memframe.background.executor
from memframe.background.executor import BackgroundExecutor

WAIT = 10.0  # generous bound for events that happen at once; never reached when things work


@pytest.fixture
def executor() -> Iterator[BackgroundExecutor]:
    pool = BackgroundExecutor(2)
    yield pool
    pool.shutdown(timeout=WAIT)


@pytest.fixture
def when_flush_waits(monkeypatch: pytest.MonkeyPatch) -> Callable[[threading.Event], None]:
    """``when_flush_waits(event)``: ``event`` is set as soon as a flush starts waiting for
    futures (an explicit signal instead of a timer)."""

    def arm(event: threading.Event) -> None:
        real = memframe.background.executor.wait_futures

        def waiting(*args: Any, **kwargs: Any) -> Any:
            event.set()
            return real(*args, **kwargs)

        monkeypatch.setattr(memframe.background.executor, "wait_futures", waiting)

    return arm


def test_submit_returns_a_future_with_the_result(executor):
    future = executor.submit(lambda: 6 * 7)
    assert future.result(WAIT) == 42
    assert executor.flush(WAIT) is True
    assert executor.pending == 0


def test_flush_waits_for_every_task(executor):
    done: list[int] = []
    gate = threading.Event()

    def task(i: int) -> None:
        gate.wait(WAIT)
        done.append(i)

    for i in range(5):
        executor.submit(lambda i=i: task(i))
    assert executor.pending == 5
    gate.set()
    assert executor.flush(WAIT) is True
    assert sorted(done) == [0, 1, 2, 3, 4]
    assert executor.pending == 0


def test_flush_waits_for_tasks_submitted_by_running_tasks(executor, when_flush_waits):
    order: list[str] = []
    child_may_finish = threading.Event()

    def grandchild() -> None:
        order.append("grandchild")

    def child() -> None:
        child_may_finish.wait(WAIT)
        executor.submit(grandchild)
        order.append("child")

    def parent() -> None:
        executor.submit(child)
        order.append("parent")

    executor.submit(parent)
    when_flush_waits(child_may_finish)  # the child finishes only once flush is waiting
    assert executor.flush(WAIT) is True
    assert sorted(order) == ["child", "grandchild", "parent"]
    assert executor.pending == 0


def test_flush_timeout_returns_false_on_a_slow_task(executor):
    release = threading.Event()
    started = threading.Event()

    def slow() -> None:
        started.set()
        release.wait(WAIT)

    executor.submit(slow)
    assert started.wait(WAIT)
    assert executor.flush(timeout=0.05) is False
    assert executor.flush(timeout=0) is False
    assert executor.pending == 1
    release.set()
    assert executor.flush(WAIT) is True


def test_flush_with_nothing_pending_returns_at_once(executor):
    assert executor.flush(timeout=0) is True


def test_a_failing_task_goes_to_on_error_and_the_future(executor):
    errors: list[Exception] = []

    def fail() -> None:
        raise ValueError("bad")

    future = executor.submit(fail, on_error=errors.append)
    assert executor.flush(WAIT) is True
    assert isinstance(future.exception(WAIT), ValueError)
    assert errors == [future.exception()]
    # The pool survives a failing task.
    assert executor.submit(lambda: "still works").result(WAIT) == "still works"


def test_a_failing_task_without_on_error_does_not_break_flush(executor):
    future = executor.submit(lambda: 1 / 0)
    assert executor.flush(WAIT) is True
    assert isinstance(future.exception(WAIT), ZeroDivisionError)


def test_shutdown_stops_accepting_work():
    pool = BackgroundExecutor(1)
    assert pool.submit(lambda: 1).result(WAIT) == 1
    assert pool.shutdown(timeout=WAIT) is True
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(lambda: 2)


def test_shutdown_waits_for_running_work(when_flush_waits):
    pool = BackgroundExecutor(1)
    release = threading.Event()
    done: list[str] = []

    def task() -> None:
        release.wait(WAIT)
        done.append("task")

    pool.submit(task)
    when_flush_waits(release)  # the task ends only once shutdown is waiting for it
    assert pool.shutdown(timeout=WAIT) is True
    assert done == ["task"]


def test_shutdown_timeout_cancels_queued_tasks():
    pool = BackgroundExecutor(1)
    release, started = threading.Event(), threading.Event()

    def running() -> str:
        started.set()
        release.wait(WAIT)
        return "finished"

    first = pool.submit(running)
    assert started.wait(WAIT)
    queued = pool.submit(lambda: "never")
    assert pool.shutdown(timeout=0) is False
    assert queued.cancelled()
    release.set()
    assert first.result(WAIT) == "finished"  # the running task is not killed
    assert pool.flush(WAIT) is True
    assert pool.pending == 0
