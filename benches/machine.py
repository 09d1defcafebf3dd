"""Facts about the machine and build, printed before any figure and stored with the results."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What the benches lean on: sha_ni (sha256), avx2 / bmi2 / popcnt / avx512f / avx512vbmi (the
# SIMD paths of Hyperscan and the Rust regex crates: scanning, tokens).
CPU_FLAGS = ("sha_ni", "avx2", "bmi2", "popcnt", "avx512f", "avx512vbmi")
CPUINFO = Path("/proc/cpuinfo")
_TRADEMARKS = re.compile(r"\((?:R|TM|tm|r)\)")


@dataclass(frozen=True)
class CpuInfo:
    """The first processor's entry in ``/proc/cpuinfo`` (every field ``None`` when absent)."""

    model_name: str | None = None  # "model name": "AMD EPYC 7B13", "Intel(R) Xeon(R) ..."
    vendor: str | None = None  # "vendor_id": "AuthenticAMD", "GenuineIntel"
    family: int | None = None  # "cpu family": 25 (AMD Zen 3/4), 6 (every recent Intel core)
    model: int | None = None  # "model": the model number within the family
    flags: frozenset[str] | None = None  # "flags"

    @property
    def label(self) -> str | None:
        """A human label: the model name without trade marks, then family and vendor, e.g.
        ``AMD EPYC 7B13 (family 25, AuthenticAMD)``; ``None`` when nothing is known."""
        name = " ".join(_TRADEMARKS.sub("", self.model_name).split()) if self.model_name else ""
        details = [f"family {self.family}"] if self.family is not None else []
        if self.vendor:
            details.append(self.vendor)
        if not details:
            return name or None
        suffix = f"({', '.join(details)})"
        return f"{name} {suffix}" if name else suffix


def _number(value: str) -> int | None:
    try:
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        return None


def _cpuinfo(path: Path = CPUINFO) -> CpuInfo:
    """Parse ``path`` (``/proc/cpuinfo``); an unreadable file gives an empty :class:`CpuInfo`.
    Each field is taken from its first line (the first processor: later ones repeat it)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return CpuInfo()
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        key = key.strip()
        if colon and key:
            fields.setdefault(key, value.strip())
    family = fields.get("cpu family")
    model = fields.get("model")
    flags = fields.get("flags")
    return CpuInfo(
        model_name=fields.get("model name") or None,
        vendor=fields.get("vendor_id") or None,
        family=_number(family) if family else None,
        model=_number(model) if model else None,
        flags=frozenset(flags.split()) if flags is not None else None,
    )


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _scan_engine(backend: object) -> str | None:
    """The scanning engine's description (``memframe._backend.ENGINE``, e.g. ``hyperscan 5.4.0
    (system, static)``); ``None`` for a build that does not say."""
    engine = getattr(backend, "ENGINE", None)
    return None if engine is None else str(engine)


def collect() -> dict[str, Any]:
    import memframe
    from memframe import _backend

    cpu = _cpuinfo(CPUINFO)
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
        "scan_engine": _scan_engine(_backend),
        "pluggy": _version("pluggy"),
        "cpu_model": cpu.model_name or platform.processor() or None,
        "cpu_vendor": cpu.vendor,
        "cpu_family": cpu.family,
        "cpu_model_number": cpu.model,
        "cpu_label": cpu.label or platform.processor() or None,  # "AMD EPYC (family 25, ...)"
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable_cpus,
        "cpu_flags": cpu_flags(cpu.flags),
    }


def cpu_flags(flags: frozenset[str] | None) -> dict[str, bool | None]:
    """Each of :data:`CPU_FLAGS`: present or not (``None`` when the flags are unknown)."""
    return {flag: (flag in flags) if flags is not None else None for flag in CPU_FLAGS}


def describe(facts: dict[str, Any]) -> list[str]:
    flags = ", ".join(
        f"{name}={'?' if value is None else ('yes' if value else 'no')}"
        for name, value in facts["cpu_flags"].items()
    )
    cpu = facts.get("cpu_label") or facts.get("cpu_model") or "?"
    model = facts.get("cpu_model_number")
    usable = facts["usable_cpus"] if facts["usable_cpus"] is not None else "?"
    return [
        f"python    {facts['python']} ({facts['python_implementation']}) {facts['platform']}",
        f"memframe  {facts['memframe']}  backend={facts['backend']}"
        f"  native={facts['native_version'] or '-'}"
        f"  build={facts['native_build_profile'] or '-'}  pluggy={facts['pluggy']}"
        f"  engine={facts.get('scan_engine') or '-'}",
        f"cpu       {cpu}  model={'?' if model is None else model}"
        f"  cpus={facts['cpu_count']} (usable {usable})",
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
