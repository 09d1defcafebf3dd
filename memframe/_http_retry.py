"""The one retry policy of memframe's HTTP clients (the model backends and the team-sync client).

- **retryable:** HTTP 408, 429, 500, 502, 503, 504 and 529 (:data:`RETRYABLE_STATUSES`), and a
  request that got no answer (a connection failure, a timeout), as each client decides;
- **wait:** a ``Retry-After`` header when the answer had one (delta seconds or an HTTP date,
  :func:`parse_retry_after`), otherwise capped exponential backoff with jitter: between half
  and all of ``backoff_base * 2**attempt`` (:meth:`RetryPolicy.backoff`). No wait is longer than
  ``max_wait``, ``Retry-After`` included;
- **attempts:** at most ``max_retries + 1``, and none is started, nor any wait begun, that
  would end after the ``deadline`` (a ``time.monotonic()`` value) when there is one.

:func:`call_with_retries` runs the loop; a client supplies one attempt (which answers a value,
a :class:`Transient`, or raises for a failure that is not worth retrying) and turns a
:class:`RetriesExhausted` into its own error type.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

T = TypeVar("T")

RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504, 529})


def is_retryable(status: int) -> bool:
    """Whether an answer with HTTP ``status`` is worth retrying."""
    return status in RETRYABLE_STATUSES


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta seconds (``"3"``, ``" 1.5 "``) or an
    HTTP date (``"Wed, 21 Oct 2015 07:28:00 GMT"``; a date in the past is ``0.0``).

    ``None`` when the header is absent or unusable (negative, NaN, infinite, neither a number
    nor a date): the caller then falls back to its backoff. ``now`` is the wall clock
    (``time.time()``) the date is measured from.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is read as such
            return None
        seconds = max(0.0, when.timestamp() - (time.time() if now is None else now))
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return seconds


@dataclass(frozen=True)
class RetryPolicy:
    """How many times, and how long apart, a transient failure is retried.

    :param max_retries: retries after the first attempt (so at most ``max_retries + 1``).
    :param backoff_base: seconds; the first retry waits between ``backoff_base / 2`` and
        ``backoff_base``, each further one twice as long.
    :param max_wait: the longest single wait, ``Retry-After`` included.
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    max_wait: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if not self.backoff_base >= 0:
            raise ValueError("backoff_base must be >= 0")
        if not self.max_wait >= 0:
            raise ValueError("max_wait must be >= 0")

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """The wait before retry number ``attempt + 1`` (``attempt`` counts from 0) when the
        server named none: between half and all of ``backoff_base * 2**attempt``, capped."""
        ceiling = self.backoff_base * 2.0 ** min(attempt, 64)
        jitter = (rng or _random).uniform(0, ceiling / 2)
        return min(self.max_wait, ceiling / 2 + jitter)

    def wait(
        self, attempt: int, retry_after: float | None, rng: random.Random | None = None
    ) -> float:
        """The wait before retry number ``attempt + 1``: ``retry_after`` (capped) when the
        server sent one, else :meth:`backoff`."""
        if retry_after is None:
            return self.backoff(attempt, rng)
        return min(self.max_wait, max(0.0, retry_after))


_random = random.Random()


@dataclass(frozen=True)
class Transient:
    """What an attempt answers for a failure worth retrying: ``problem`` describes it (for the
    final error), ``retry_after`` is the server's ``Retry-After`` in seconds, if any."""

    problem: str
    retry_after: float | None = None


class RetriesExhausted(Exception):
    """Every attempt failed transiently (``reason="retries"``), or the ``deadline`` left no time
    for the next wait or attempt (``reason="deadline"``).

    :ivar problem: the last attempt's :attr:`Transient.problem`.
    :ivar attempts: how many attempts were made.
    """

    def __init__(
        self, problem: str, *, attempts: int, reason: Literal["retries", "deadline"]
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.attempts = attempts
        self.reason = reason


def call_with_retries(
    attempt: Callable[[], T | Transient],
    policy: RetryPolicy,
    *,
    deadline: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    on_retry: Callable[[int, str, float], None] | None = None,
) -> T:
    """``attempt()``'s first answer that is not a :class:`Transient`, retrying the transient
    ones by ``policy``; whatever ``attempt`` raises propagates at once (not retried).

    :param deadline: a ``time.monotonic()`` value; a wait that would reach it is not begun.
    :param on_retry: called as ``on_retry(retry_number, problem, delay)`` before each wait.
    :raises RetriesExhausted: the attempts ran out, or the deadline came first.
    """
    attempts = policy.max_retries + 1
    for number in range(attempts):
        outcome = attempt()
        if not isinstance(outcome, Transient):
            return outcome
        if number + 1 == attempts:
            raise RetriesExhausted(outcome.problem, attempts=number + 1, reason="retries")
        delay = policy.wait(number, outcome.retry_after, rng)
        if deadline is not None and time.monotonic() + delay >= deadline:
            raise RetriesExhausted(outcome.problem, attempts=number + 1, reason="deadline")
        if on_retry is not None:
            on_retry(number + 1, outcome.problem, delay)
        if delay > 0:
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover - the loop always returns or raises
