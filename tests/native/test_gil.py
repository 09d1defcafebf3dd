"""The native scan releases the GIL for large inputs (other Python threads run meanwhile) and
keeps it for small ones, where handing it over costs more than the scan."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator

import pytest

from memframe.rules import load_rules
from memframe.scanner import SecretScanner
from tests.native import NATIVE

pytestmark = pytest.mark.skipif(NATIVE is None, reason="the native extension is not built")
# dense with near misses of the AWS rule: each one is confirmed and dropped, so the scan is slow
UNIT = "AKIA0123 aws_secret "
LIMIT: int = getattr(NATIVE, "SCAN_DETACH_MIN_BYTES", 0)


@pytest.fixture
def long_switch_interval() -> Iterator[None]:
    # a waiting thread gets the GIL only when the holder gives it up, not by a forced switch
    before = sys.getswitchinterval()
    sys.setswitchinterval(2.0)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def ran_during(scan: object, text: str) -> bool:
    """Whether a Python thread woken just before ``scan(text)`` ran before the scan returned."""
    gate = threading.Lock()
    gate.acquire()
    woke: list[float] = []

    def waiter() -> None:
        with gate:  # returning from acquire needs the GIL
            woke.append(time.perf_counter())

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.01)  # the waiter blocks in acquire (the GIL released)
    gate.release()
    scan(text)  # type: ignore[operator]
    returned = time.perf_counter()
    thread.join()
    return woke[0] < returned


def test_the_threshold_is_exported() -> None:
    assert LIMIT == 32 * 1024


@pytest.mark.parametrize("method", ["find", "scan"])
def test_a_large_scan_lets_other_threads_run(long_switch_interval: None, method: str) -> None:
    scanner = SecretScanner(load_rules(), engine="native")
    text = UNIT * (4 * 1024 * 1024 // len(UNIT))  # 4 MiB: milliseconds of work
    assert ran_during(getattr(scanner, method), text)


@pytest.mark.parametrize("method", ["find", "scan"])
def test_a_small_scan_keeps_the_gil(long_switch_interval: None, method: str) -> None:
    scanner = SecretScanner(load_rules(), engine="native")
    limit = LIMIT
    text = (UNIT * (limit // len(UNIT) + 1))[: limit - 1]  # the largest size that keeps it
    assert all(not ran_during(getattr(scanner, method), text) for _ in range(20))


def test_many_small_texts_keep_it_and_many_large_ones_release_it(
    long_switch_interval: None,
) -> None:
    scanner = SecretScanner(load_rules(), engine="native")
    limit = LIMIT
    small = [UNIT * (limit // len(UNIT) // 4 - 1)] * 4  # just under the limit in all
    assert all(not ran_during(lambda texts: scanner.find_many(texts), small) for _ in range(10))
    large = [UNIT * (1024 * 1024 // len(UNIT))] * 4
    assert ran_during(lambda texts: scanner.find_many(texts, threads=1), large)
