"""The benchmark runner: ``python -m benches [--quick] [--only NAME ...] [--json PATH]``.

Prints the machine facts, then one table per benchmark, writes the results as JSON (by default
``benches/results/<timestamp>.json`` and ``benches/results/latest.json``) and exits 1 when a
benchmark broke one of its ratio floors (or crashed).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from benches import machine, report
from benches.harness import BenchResult

# The registry: benchmark modules, in run order. Each exposes NAME, run(quick) and maybe check()
# (and DETERMINISTIC = True when its figures do not depend on the machine: never measured again).
REGISTRY: tuple[str, ...] = (
    "benches.dispatch",
    "benches.scan",
    "benches.checksum",
    "benches.tokens",
    "benches.sync",
    "benches.hook",
    "benches.memory",
    "benches.rules_quality",
)
RESULTS_DIR = Path(__file__).resolve().parent / "results"
SCHEMA = 1


@dataclass(frozen=True)
class Benchmark:
    name: str
    run: Callable[[bool], BenchResult]
    check: Callable[[BenchResult], list[str]] | None
    doc: str
    deterministic: bool = False

    @classmethod
    def from_module(cls, module: ModuleType) -> Benchmark:
        doc = (module.__doc__ or "").strip().splitlines()
        return cls(
            module.NAME,
            module.run,
            getattr(module, "check", None),
            doc[0] if doc else "",
            bool(getattr(module, "DETERMINISTIC", False)),
        )


def load_registry(modules: Sequence[str] | None = None) -> dict[str, Benchmark]:
    benchmarks: dict[str, Benchmark] = {}
    for dotted in REGISTRY if modules is None else modules:
        bench = Benchmark.from_module(importlib.import_module(dotted))
        if bench.name in benchmarks:
            raise RuntimeError(f"two benchmarks are named {bench.name!r}")
        benchmarks[bench.name] = bench
    return benchmarks


def parse_args(argv: Sequence[str] | None, names: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benches", description="Run memframe's benchmarks."
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer, shorter repeats (a CI smoke pass)"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        action="extend",
        metavar="NAME",
        choices=names,
        help=f"run only these benchmarks (of: {', '.join(names)})",
    )
    parser.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="write the results here (default: benches/results/<timestamp>.json and latest.json)",
    )
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    return parser.parse_args(argv)


# A broken floor is measured again before it counts: a ratio below its floor in every attempt
# is a regression, one below it once is usually another process taking a core for a moment.
# A deterministic benchmark (counts against labels) gets one attempt: another would be the same.
ATTEMPTS = 5


def run_one(bench: Benchmark, quick: bool) -> dict[str, Any]:
    """Run one benchmark (again, up to ATTEMPTS times, while a floor is broken), print its table
    and return its JSON section with every attempt's violations."""
    print(f"\n== {bench.name}: {bench.doc}" if bench.doc else f"\n== {bench.name}", flush=True)
    started = time.perf_counter()
    earlier: list[list[str]] = []
    attempts = 1 if bench.deterministic else ATTEMPTS
    for attempt in range(1, attempts + 1):
        try:
            result = bench.run(quick)
            violations = bench.check(result) if bench.check is not None else []
        except Exception:
            error = traceback.format_exc()
            print(error, file=sys.stderr)
            return {"error": error, "duration_s": round(time.perf_counter() - started, 3)}
        if not violations or attempt == attempts:
            break
        earlier.append(violations)
        busy = machine.wait_for_idle_cpus()
        seen = f" (other processes used {busy:.0%} of the CPUs)" if busy is not None else ""
        print(
            f"  floor broken in attempt {attempt} ({'; '.join(violations)}); "
            f"measuring again once the CPUs are idle{seen}"
        )
    duration = round(time.perf_counter() - started, 3)
    print(report.table(result))
    for note in result.notes:
        print(f"  note: {note}")
    for violation in violations:
        print(f"  FLOOR BROKEN: {violation}")
    print(f"  ({duration:.1f} s, {len(earlier) + 1} attempt(s))")
    return {
        **result.to_json(),
        "violations": violations,
        "earlier_attempts": earlier,
        "duration_s": duration,
    }


def _timestamped(started: datetime) -> Path:
    """``results/<UTC timestamp>.json``, never overwriting an earlier run's file."""
    stem = started.strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS_DIR / f"{stem}.json"
    n = 1
    while path.exists():
        path = RESULTS_DIR / f"{stem}-{n}.json"
        n += 1
    return path


def main(argv: Sequence[str] | None = None) -> int:
    registry = load_registry()
    args = parse_args(argv, list(registry))
    if args.list:
        for bench in registry.values():
            print(f"{bench.name:12} {bench.doc}")
        return 0
    selected = [registry[name] for name in dict.fromkeys(args.only or registry)]
    started = datetime.now(UTC)
    facts = machine.collect()
    print("\n".join(machine.describe(facts)))
    print(f"mode      {'quick' if args.quick else 'full'}", flush=True)

    sections = {bench.name: run_one(bench, args.quick) for bench in selected}
    failed = [
        name for name, section in sections.items() if "error" in section or section["violations"]
    ]
    finished = datetime.now(UTC)
    document = {
        "schema": SCHEMA,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": finished.isoformat(timespec="seconds"),
        "duration_s": round((finished - started).total_seconds(), 3),
        "quick": args.quick,
        "argv": list(sys.argv[1:] if argv is None else argv),
        "machine": facts,
        "benchmarks": sections,
        "ok": not failed,
    }
    if args.json is not None:
        paths = [args.json]
    else:
        paths = [_timestamped(started), RESULTS_DIR / "latest.json"]
    for path in paths:
        report.write_json(path, document)
    print(f"\nresults: {', '.join(str(p) for p in paths)}")
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
