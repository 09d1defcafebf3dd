"""The tests' one way to wait for something another thread or process does: poll a condition
with a deadline. Never a bare ``time.sleep`` as synchronisation: a sleep is either too short on
a loaded machine (a flaky test) or longer than needed everywhere else (a slow one)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float = 10.0,
    interval: float = 0.01,
    what: str | Callable[[], str] = "the condition",
) -> T:
    """Call ``condition`` every ``interval`` seconds until it returns a true value, and return
    that value. After ``timeout`` seconds an AssertionError says ``what`` did not happen (a
    callable ``what`` is asked then, so the message can show the state at that moment).
    ``condition`` may itself assert: a failure it sees (a process that died) ends the wait."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            message = what() if callable(what) else what
            raise AssertionError(f"{message}: not within {timeout:g} s")
        time.sleep(interval)


def wait_until_refused(host: str, port: int, timeout: float = 10.0) -> None:
    """Until nothing listens on ``host:port`` any more. A connection that lands in the backlog
    just as the listener closes is reset rather than refused: both mean it no longer accepts."""

    def refused() -> bool:
        try:
            socket.create_connection((host, port), timeout=1).close()
        except (ConnectionRefusedError, ConnectionResetError):
            return True
        return False

    wait_until(refused, timeout=timeout, what=f"{host}:{port} stopped accepting connections")
