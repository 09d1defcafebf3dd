"""Facts about the machine and build, printed before any figure and stored with the results."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

CPU_FLAGS = ("sha_ni", "avx2", "avx512f")  # what later benches (sha256, scanning, tokens) need


def _cpuinfo(path: Path = Path("/proc/cpuinfo")) -> tuple[str | None, set[str] | None]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None, None
    model: str | None = None
    flags: set[str] | None = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and flags is None:
            flags = set(value.split())
        if model is not None and flags is not None:
            break
    return model, flags


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect() -> dict[str, Any]:
    import memframe
    from memframe import _backend

    model, flags = _cpuinfo()
    try:
        usable_cpus: int | None = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable_cpus = None
    return {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "memframe": memframe.__version__,
        "backend": _backend.BACKEND,
        "backend_env": os.environ.get(_backend.ENV_VAR) or None,
        "native_version": _backend.NATIVE_VERSION,
        "native_build_profile": _backend.BUILD_PROFILE,
        "pluggy": _version("pluggy"),
        "cpu_model": model or platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable_cpus,
        "cpu_flags": {flag: (flag in flags) if flags is not None else None for flag in CPU_FLAGS},
    }


def describe(facts: dict[str, Any]) -> list[str]:
    flags = ", ".join(
        f"{name}={'?' if value is None else ('yes' if value else 'no')}"
        for name, value in facts["cpu_flags"].items()
    )
    return [
        f"python    {facts['python']} ({facts['python_implementation']}) {facts['platform']}",
        f"memframe  {facts['memframe']}  backend={facts['backend']}"
        f"  native={facts['native_version'] or '-'}"
        f"  build={facts['native_build_profile'] or '-'}  pluggy={facts['pluggy']}",
        f"cpu       {facts['cpu_model'] or '?'}  cpus={facts['cpu_count']}"
        f" (usable {facts['usable_cpus'] if facts['usable_cpus'] is not None else '?'})",
        f"cpu flags {flags}",
    ]


def _cpu_times(path: Path = Path("/proc/stat")) -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs since boot; None off Linux."""
    try:
        fields = path.read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    values = [int(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values) - idle, sum(values)


def wait_for_idle_cpus(
    busy_share: float = 0.15, max_wait: float = 30.0, sample: float = 0.5
) -> float | None:
    """Wait (at most ``max_wait`` seconds) until other processes use less than ``busy_share``
    of the machine's CPU time over ``sample`` seconds, while this process does nothing; returns
    the share last seen (None when it cannot be read). A broken floor is measured again only
    once a neighbour's burst has passed: parallel speed-ups need the cores free."""
    deadline = time.monotonic() + max_wait
    share: float | None = None
    while True:
        before = _cpu_times()
        time.sleep(sample)
        after = _cpu_times()
        if before is None or after is None or after[1] == before[1]:
            return None
        share = (after[0] - before[0]) / (after[1] - before[1])
        if share < busy_share or time.monotonic() >= deadline:
            return share
