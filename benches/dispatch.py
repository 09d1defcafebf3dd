"""Cost of one on_message dispatch with N no-op layers: memframe Session vs bare pluggy.

Variants, measured interleaved in one run for each N:

- ``pluggy``: a plain ``pluggy.PluginManager`` with one hookspec ``on_message(session, message)``
  and N registered no-op implementations, called as ``pm.hook.on_message(session=, message=)``;
- ``manager``: ``frame.manager.call("on_message", ...)`` — pluggy plus memframe's per-layer guard
  wrapper and failure collection, without Session bookkeeping;
- ``session``: ``session.on_message(msg)`` — what an agent calls (adds the open check, the
  context-token meter and the message counters).

The message is a pre-built ``memframe.Message.user("hello")``; its construction is not timed.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pluggy

import memframe
from benches.harness import BenchResult, Runner, Settings, measure_interleaved, ratio

NAME = "dispatch"
LAYER_COUNTS = (0, 1, 5, 20)
SESSION_MEMORY = "memframe.layers.session_memory:SessionMemoryLayer"
# Issue 4's floor: on_message with the session memory layer active and no extraction due costs
# at most this much more than with no layers at all.
SESSION_MEMORY_BUDGET_US = 5.0
SESSION_MEMORY_ROW = "session_memory layer"

_bench_spec = pluggy.HookspecMarker("dispatchbench")
_bench_impl = pluggy.HookimplMarker("dispatchbench")


class _BareSpec:
    @_bench_spec
    def on_message(self, session: Any, message: Any) -> None:
        """The same signature as memframe's hook."""


class BarePluggyNoop:
    """A no-op implementation for the bare pluggy manager."""

    @_bench_impl
    def on_message(self, session: Any, message: Any) -> None:
        pass


class NoopLayer:
    """A memframe layer whose on_message does nothing."""

    @memframe.hookimpl
    def on_message(self, session: Any, message: Any) -> None:
        pass


def bare_pluggy_hook(layers: int) -> Callable[..., Any]:
    pm = pluggy.PluginManager("dispatchbench")
    pm.add_hookspecs(_BareSpec)
    for i in range(layers):
        pm.register(BarePluggyNoop(), name=f"noop{i}")
    return pm.hook.on_message


def open_frame(
    root: Path, layers: int, builtin: tuple[str, ...] = (), tag: str = ""
) -> memframe.MemoryFrame:
    project = root / f"project-{layers}{tag}"
    project.mkdir()
    return memframe.open(
        project,
        layers=[(f"noop{i}", NoopLayer()) for i in range(layers)],
        builtin_layers=builtin,
        home=root / "home",
        config_dir=root / "config",
        autoload_plugins=False,
        trace_hooks=False,
        strict=False,
    )


# One loop per call shape, so the timed loop is exactly the call an agent (or memframe) makes.


def _session_loop(session: memframe.Session, message: memframe.Message) -> Runner:
    on_message = session.on_message

    def loop(number: int) -> int:
        repeat = itertools.repeat(None, number)
        start = time.perf_counter_ns()
        for _ in repeat:
            on_message(message)
        return time.perf_counter_ns() - start

    return loop


def _manager_loop(
    call: Callable[..., Any], session: memframe.Session, message: memframe.Message
) -> Runner:
    def loop(number: int) -> int:
        repeat = itertools.repeat(None, number)
        start = time.perf_counter_ns()
        for _ in repeat:
            call("on_message", session=session, message=message)
        return time.perf_counter_ns() - start

    return loop


def _hook_loop(hook: Callable[..., Any], session: Any, message: memframe.Message) -> Runner:
    def loop(number: int) -> int:
        repeat = itertools.repeat(None, number)
        start = time.perf_counter_ns()
        for _ in repeat:
            hook(session=session, message=message)
        return time.perf_counter_ns() - start

    return loop


def run(quick: bool) -> BenchResult:
    settings = Settings.for_mode(quick)
    result = BenchResult(
        NAME, params={"repeats": settings.repeats, "target_ms": settings.target_ns / 1e6}
    )
    message = memframe.Message.user("hello")
    with tempfile.TemporaryDirectory(prefix="memframe-bench-dispatch-") as tmp:
        for layers in LAYER_COUNTS:
            frame = open_frame(Path(tmp), layers)
            try:
                session = frame.session("bench")
                timings = measure_interleaved(
                    {
                        "pluggy": _hook_loop(bare_pluggy_hook(layers), session, message),
                        "manager": _manager_loop(frame.manager.call, session, message),
                        "session": _session_loop(session, message),
                    },
                    settings,
                )
            finally:
                frame.close()
            pluggy_us = timings["pluggy"].median_us
            manager_us = timings["manager"].median_us
            session_us = timings["session"].median_us
            result.add(
                f"{layers} layers",
                pluggy_us=round(pluggy_us, 3),
                manager_us=round(manager_us, 3),
                session_us=round(session_us, 3),
                guard_us=round(manager_us - pluggy_us, 3),
                accounting_us=round(session_us - manager_us, 3),
                session_x_pluggy=ratio(session_us, pluggy_us),
                manager_x_pluggy=ratio(manager_us, pluggy_us),
                noise=round(max(t.spread for t in timings.values()), 3),
            )
            result.details[f"{layers} layers"] = {k: t.to_json() for k, t in timings.items()}
        _session_memory_row(Path(tmp), settings, result)
    result.notes.extend(
        [
            "µs per call, median of interleaved repeats; loop overhead (~0.02 µs) included",
            f"{SESSION_MEMORY_ROW}: session.on_message of an assistant message with usage "
            "below every threshold (no extraction due), no layers vs the session_memory layer; "
            f"floor: extra_us <= {SESSION_MEMORY_BUDGET_US}",
            "guard_us = manager - pluggy (memframe's wrappers + failure collection); "
            "accounting_us = session - manager (open check, token meter, counters)",
            "noise = interquartile range / median over repeats, of the noisiest variant",
        ]
    )
    return result


def _session_memory_row(root: Path, settings: Settings, result: BenchResult) -> None:
    message = memframe.Message.from_dict(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the file."},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}},
            ],
            "usage": {"input_tokens": 2_000, "output_tokens": 50},
        }
    )
    bare = open_frame(root, 0, tag="-bare")
    layered = open_frame(root, 0, builtin=(SESSION_MEMORY,), tag="-sm")
    try:
        bare_session, layered_session = bare.session("bench"), layered.session("bench")
        layered.flush()  # the config provider fetch started by the first read
        timings = measure_interleaved(
            {
                "no_layers": _session_loop(bare_session, message),
                "session_memory": _session_loop(layered_session, message),
            },
            settings,
        )
        extractions = layered_session.state.section("session_memory").get("extractions", [])
        if extractions:
            raise RuntimeError("the session memory bench message triggered an extraction")
    finally:
        bare.close()
        layered.close()
    base_us = timings["no_layers"].median_us
    layer_us = timings["session_memory"].median_us
    result.add(
        SESSION_MEMORY_ROW,
        no_layers_us=round(base_us, 3),
        session_memory_us=round(layer_us, 3),
        extra_us=round(layer_us - base_us, 3),
        budget_us=SESSION_MEMORY_BUDGET_US,
        noise=round(max(t.spread for t in timings.values()), 3),
    )
    result.details[SESSION_MEMORY_ROW] = {k: t.to_json() for k, t in timings.items()}


def check(result: BenchResult) -> list[str]:
    """The session memory layer's on_message budget (issue 4)."""
    row = result.rows.get(SESSION_MEMORY_ROW)
    if row is not None and float(row["extra_us"]) > SESSION_MEMORY_BUDGET_US:
        return [
            f"dispatch: on_message with the session memory layer costs {row['extra_us']} µs "
            f"more than with no layers (budget {SESSION_MEMORY_BUDGET_US} µs)"
        ]
    return []
