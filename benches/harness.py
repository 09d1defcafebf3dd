"""What a benchmark returns and how it times things.

Timing rules: ``time.perf_counter_ns``; each variant is calibrated to run for a target time per
repeat; variants that are compared are measured *interleaved* (A, B, C, A, B, C, ...) so drift
(frequency scaling, a noisy neighbour) hits all of them alike — the order within each round is
shuffled so no variant always runs first; many short repeats and their median keep a preempted
repeat from moving the figure. The garbage collector is off while a loop runs, as in ``timeit``.
"""

from __future__ import annotations

import gc
import random
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# A runner executes its operation ``number`` times and returns the elapsed nanoseconds.
Runner = Callable[[int], int]
Metric = float | int | str | bool | None


@dataclass
class BenchResult:
    """One benchmark's outcome: rows of ``name -> {metric: value}``, in display order."""

    name: str
    rows: dict[str, dict[str, Metric]] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)  # in the JSON, not in the table

    def add(self, row: str, **metrics: Metric) -> None:
        self.rows.setdefault(row, {}).update(metrics)

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "params": self.params,
            "notes": self.notes,
            "details": self.details,
        }


@dataclass(frozen=True)
class Settings:
    """How hard to measure: ``repeats`` interleaved rounds of about ``target_ns`` each."""

    repeats: int
    target_ns: int

    @classmethod
    def for_mode(cls, quick: bool) -> Settings:
        if quick:
            return cls(repeats=31, target_ns=2_000_000)
        return cls(repeats=101, target_ns=5_000_000)


@dataclass(frozen=True)
class Timing:
    """Per-operation time of one variant over all repeats."""

    number: int  # operations per repeat
    per_op_ns: tuple[float, ...]  # one value per repeat

    @property
    def median_ns(self) -> float:
        return statistics.median(self.per_op_ns)

    @property
    def min_ns(self) -> float:
        return min(self.per_op_ns)

    @property
    def median_us(self) -> float:
        return self.median_ns / 1000

    @property
    def spread(self) -> float:
        """Interquartile range / median over repeats: how noisy the measurement was."""
        if len(self.per_op_ns) < 4 or not self.median_ns:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.per_op_ns, n=4)
        return (q3 - q1) / self.median_ns

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "repeats": len(self.per_op_ns),
            "median_ns": round(self.median_ns, 1),
            "min_ns": round(self.min_ns, 1),
            "iqr_over_median": round(self.spread, 4),
        }


def _timed(runner: Runner, number: int) -> int:
    enabled = gc.isenabled()
    gc.disable()
    try:
        return runner(number)
    finally:
        if enabled:
            gc.enable()


def calibrate(runner: Runner, target_ns: int) -> int:
    """How many operations make one repeat last about ``target_ns`` (after a warm-up)."""
    _timed(runner, 1)
    number = 1
    while True:
        elapsed = _timed(runner, number)
        if elapsed >= target_ns // 10 or number >= 1 << 30:
            return max(1, round(number * target_ns / max(elapsed, 1)))
        number *= 10


def measure_interleaved(variants: Mapping[str, Runner], settings: Settings) -> dict[str, Timing]:
    """Time every variant ``settings.repeats`` times, round-robin, and return the per-op times."""
    numbers = {name: calibrate(runner, settings.target_ns) for name, runner in variants.items()}
    samples: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    shuffle = random.Random(0x5EED).shuffle
    for _ in range(settings.repeats):
        shuffle(order)
        for name in order:
            samples[name].append(_timed(variants[name], numbers[name]) / numbers[name])
    return {name: Timing(numbers[name], tuple(samples[name])) for name in variants}


def ratio(numerator: float, denominator: float) -> float:
    return round(numerator / denominator, 3) if denominator else float("nan")
