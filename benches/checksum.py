"""Checksums: native sha256 / xxh3 (batch and one large buffer) against hashlib and python-xxhash.

Variants, measured interleaved in one run (``benches/harness.py``), on random bytes:

- batch: 100,000 entries of 2 KiB — native ``sha256_many(entries)`` on all cores and with
  ``threads=1``, against a Python loop of ``hashlib.sha256(e).hexdigest()``; native
  ``xxh3_64_many(entries)`` against a loop of ``xxhash.xxh3_64_intdigest(e)``;
- one large buffer (quick 64 MiB, full 256 MiB): native ``sha256`` / ``xxh3_64`` / ``xxh3_128``
  against ``hashlib.sha256(buf).hexdigest()`` and ``xxhash.xxh3_{64,128}_intdigest(buf)``;
- call overhead: µs per call on an empty input, for each single-entry function.

Floors: ``sha256_many`` ≥ 1.8 x the hashlib loop (only with 2+ usable cores: it is the parallel
speed-up over hashlib's SHA-NI loop); the large-buffer native hashes within 10% of hashlib /
python-xxhash (ratio ≥ 0.9) — both sides run the same kind of code, so this catches a slow build
(debug profile, no SHA-NI/AVX2 dispatch) or a copy of the input. Native results are checked equal
to hashlib's and python-xxhash's first.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import xxhash

from benches import machine
from benches.harness import BenchResult, Runner, Settings, Timing, measure_interleaved, ratio

NAME = "checksum"
ENTRIES = 100_000
ENTRY_BYTES = 2048
MIB = 1 << 20
BATCH_FLOOR = 1.8
BUFFER_FLOOR = 0.9


def _native() -> tuple[ModuleType | None, str | None]:
    try:
        from memframe import _backend

        return _backend.get_engine("native").module, None
    except Exception as exc:  # BackendError, or an import error of a stale build
        return None, f"native engine not loadable ({exc})"


def _once(fn: Callable[[], Any]) -> Runner:
    """A runner calling ``fn()`` ``number`` times."""

    def loop(number: int) -> int:
        repeat = itertools.repeat(None, number)
        start = time.perf_counter_ns()
        for _ in repeat:
            fn()
        return time.perf_counter_ns() - start

    return loop


def _calls(fn: Callable[[bytes], Any], arg: bytes) -> Runner:
    def loop(number: int) -> int:
        repeat = itertools.repeat(None, number)
        start = time.perf_counter_ns()
        for _ in repeat:
            fn(arg)
        return time.perf_counter_ns() - start

    return loop


def _hashlib_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run(quick: bool) -> BenchResult:
    facts = machine.collect()
    cpus = facts["usable_cpus"] or facts["cpu_count"] or 1
    flags = ", ".join(
        f"{name}={'?' if on is None else ('yes' if on else 'no')}"
        for name, on in facts["cpu_flags"].items()
    )
    buffer_mib = 64 if quick else 256
    heavy = Settings(repeats=9 if quick else 25, target_ns=1)  # one op per repeat
    light = Settings.for_mode(quick)
    result = BenchResult(
        NAME,
        params={
            "entries": ENTRIES,
            "entry_bytes": ENTRY_BYTES,
            "buffer_mib": buffer_mib,
            "repeats": heavy.repeats,
            "usable_cpus": cpus,
            "cpu_flags": facts["cpu_flags"],
        },
    )
    notes = [f"cpu: {facts['cpu_model']}; flags {flags}; {cpus} usable cpus"]
    native, why = _native()
    if native is None:
        notes.append(f"skipped every native row: {why}")

    def has(name: str) -> bool:
        return name in usable

    rng = random.Random(0xC0FFEE)
    entries = [rng.randbytes(ENTRY_BYTES) for _ in range(ENTRIES)]
    buffer = b"".join(rng.randbytes(8 * MIB) for _ in range(buffer_mib // 8))
    usable, verify_notes, mismatches = _verify(native, entries[:200], buffer[: 3 * MIB + 17])
    notes.extend(verify_notes + mismatches)
    result.details["mismatches"] = mismatches

    # -- batch -------------------------------------------------------------------------------------
    batch: dict[str, Runner] = {}
    if has("sha256_many"):
        assert native is not None
        batch["native sha256_many"] = _once(lambda: native.sha256_many(entries))
        batch["native sha256_many threads=1"] = _once(lambda: native.sha256_many(entries, 1))
    batch["hashlib loop"] = _once(lambda: [hashlib.sha256(e).hexdigest() for e in entries])
    if has("xxh3_64_many"):
        assert native is not None
        batch["native xxh3_64_many"] = _once(lambda: native.xxh3_64_many(entries))
    batch["xxhash xxh3_64 loop"] = _once(lambda: [xxhash.xxh3_64_intdigest(e) for e in entries])
    timings = measure_interleaved(batch, heavy)
    total = ENTRIES * ENTRY_BYTES
    peers = {
        "native sha256_many": "hashlib loop",
        "native sha256_many threads=1": "hashlib loop",
        "native xxh3_64_many": "xxhash xxh3_64 loop",
    }
    for name, timing in timings.items():
        peer = peers.get(name)
        _add(
            result,
            f"batch {ENTRIES // 1000}k x 2 KiB: {name}",
            timing,
            total,
            ENTRIES,
            ratio(timings[peer].min_ns, timing.min_ns) if peer else None,
        )
    result.details["batch"] = {k: t.to_json() for k, t in timings.items()}

    # -- one large buffer ------------------------------------------------------------------------
    big: dict[str, Runner] = {}
    peer_fns: dict[str, tuple[str, Callable[[bytes], Any]]] = {
        "sha256": ("hashlib sha256", _hashlib_hex),
        "xxh3_64": ("xxhash xxh3_64", xxhash.xxh3_64_intdigest),
        "xxh3_128": ("xxhash xxh3_128", xxhash.xxh3_128_intdigest),
    }
    from memframe import _backend

    for fn, (peer_name, peer_fn) in peer_fns.items():
        if has(fn):
            # what users call: memframe._backend routes one-buffer xxh3 to python-xxhash
            # (run-time SIMD dispatch); the native module's portable SSE2 build is shown beside it
            big[f"native {fn}"] = _calls(getattr(_backend, fn), buffer)
            if fn.startswith("xxh3"):
                big[f"native module {fn} (portable build)"] = _calls(getattr(native, fn), buffer)
        big[peer_name] = _calls(peer_fn, buffer)
    big_timings = measure_interleaved(big, heavy)
    buffer_peers = {
        "native sha256": "hashlib sha256",
        "native xxh3_64": "xxhash xxh3_64",
        "native xxh3_128": "xxhash xxh3_128",
        "native module xxh3_64 (portable build)": "xxhash xxh3_64",
        "native module xxh3_128 (portable build)": "xxhash xxh3_128",
    }
    for name, timing in big_timings.items():
        peer = buffer_peers.get(name)
        _add(
            result,
            f"buffer {buffer_mib} MiB: {name}",
            timing,
            len(buffer),
            None,
            ratio(big_timings[peer].min_ns, timing.min_ns) if peer else None,
        )
    result.details["buffer"] = {k: t.to_json() for k, t in big_timings.items()}

    # -- call overhead (empty input) ------------------------------------------------------------
    empty = b""
    small: dict[str, Runner] = {}
    for fn, (peer_name, peer_fn) in peer_fns.items():
        if has(fn):
            small[f"native {fn}"] = _calls(getattr(native, fn), empty)
        small[peer_name] = _calls(peer_fn, empty)
    small_timings = measure_interleaved(small, light)
    for name, timing in small_timings.items():
        result.add(
            f"call overhead: {name}",
            per_entry_us=round(timing.median_us, 3),
            noise=round(timing.spread, 3),
        )
    result.details["call_overhead"] = {k: t.to_json() for k, t in small_timings.items()}

    # -- floors ----------------------------------------------------------------------------------
    floors: list[dict[str, Any]] = []

    def floor(
        name: str,
        top: str,
        bottom: str,
        table: dict[str, Timing],
        value: float,
        skip: str | None = None,
    ) -> None:
        entry: dict[str, Any] = {"name": name, "floor": value, "ratio": None}
        if top not in table or bottom not in table:
            entry["status"] = "skipped"
            entry["why"] = f"{top if top not in table else bottom} not measured"
        else:
            entry["ratio"] = ratio(table[bottom].min_ns, table[top].min_ns)
            if skip:
                entry["status"], entry["why"] = "skipped", skip
            else:
                entry["status"] = "pass" if entry["ratio"] >= value else "FAIL"
        floors.append(entry)

    floor(
        "sha256_many / hashlib loop",
        "native sha256_many",
        "hashlib loop",
        timings,
        BATCH_FLOOR,
        None if cpus >= 2 else f"{cpus} usable cpu: no parallel speed-up to expect",
    )
    for fn, peer in (
        ("sha256", "hashlib sha256"),
        ("xxh3_64", "xxhash xxh3_64"),
        ("xxh3_128", "xxhash xxh3_128"),
    ):
        floor(
            f"{fn} {buffer_mib} MiB native / {peer}",
            f"native {fn}",
            peer,
            big_timings,
            BUFFER_FLOOR,
        )
    for entry in floors:
        result.add(
            f"floor: {entry['name']} >= {entry['floor']:g}",
            vs_peer=entry["ratio"],
            status=entry["status"],
        )
        if entry.get("why"):
            notes.append(f"floor {entry['name']} skipped: {entry['why']}")
    result.details["floors"] = floors
    notes.extend(
        [
            "ms = median per batch / buffer; GB/s = 10^9 bytes per second; per_entry_us = ms / "
            "entries (batch) or µs per call on an empty input (call overhead); vs_peer = the "
            "peer's time / this row's time (higher is faster)",
            f"sha256_many / xxh3_64_many use every core by default (threads=None); this machine: "
            f"{cpus} usable cpus ({os.cpu_count()} online)",
        ]
    )
    result.notes.extend(notes)
    return result


def _add(
    result: BenchResult,
    row: str,
    timing: Timing,
    nbytes: int,
    entries: int | None,
    vs_peer: float | None,
) -> None:
    seconds = timing.median_ns / 1e9
    metrics: dict[str, Any] = {
        "ms": round(timing.median_ns / 1e6, 3),
        "GB_s": round(nbytes / 1e9 / seconds, 3),
    }
    if entries:
        metrics["per_entry_us"] = round(timing.median_ns / 1000 / entries, 4)
    metrics["vs_peer"] = vs_peer
    metrics["noise"] = round(timing.spread, 3)
    result.add(row, **metrics)


def _verify(
    native: ModuleType | None, entries: list[bytes], buffer: bytes
) -> tuple[set[str], list[str], list[str]]:
    """Which native functions can be timed: each must exist, take bytes and equal hashlib's /
    python-xxhash's result. Returns (usable names, notes, mismatches)."""
    if native is None:
        return set(), [], []
    usable: set[str] = set()
    notes: list[str] = []
    mismatches: list[str] = []
    checks: list[tuple[str, Callable[[], Any]]] = [
        ("sha256", lambda: "sha256:" + _hashlib_hex(buffer)),
        ("xxh3_64", lambda: xxhash.xxh3_64_intdigest(buffer)),
        ("xxh3_128", lambda: xxhash.xxh3_128_intdigest(buffer)),
        ("sha256_many", lambda: ["sha256:" + _hashlib_hex(e) for e in entries]),
        ("xxh3_64_many", lambda: [xxhash.xxh3_64_intdigest(e) for e in entries]),
    ]
    for name, want in checks:
        fn = getattr(native, name, None)
        if fn is None:
            notes.append(f"skipped native {name}: not in this build of memframe._native")
            continue
        try:
            got = fn(entries if name.endswith("_many") else buffer)
        except Exception as exc:
            notes.append(f"skipped native {name}: it failed on bytes ({type(exc).__name__}: {exc})")
            continue
        if got != want():
            mismatches.append(f"MISMATCH: native {name} differs from the Python reference")
            continue
        usable.add(name)
    return usable, notes, mismatches


def check(result: BenchResult) -> list[str]:
    """The ratio floors broken, and native results that differ from the reference."""
    problems = [
        f"{f['name']} = {f['ratio']:g}, floor {f['floor']:g}"
        for f in result.details.get("floors", [])
        if f["status"] == "FAIL"
    ]
    problems.extend(result.details.get("mismatches", []))
    return problems
