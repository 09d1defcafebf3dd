"""Wall time of `memframe hook` (Claude Code runs it on every event), next to `python -c pass`.

Variants, one subprocess each, measured interleaved (shuffled order per round):

- ``python -c pass``: the interpreter's own start-up, the floor for any hook written in Python;
- ``SessionStart``: the installed hook command (``install-hooks``' default: the ``memframe``
  script next to this Python) answering a SessionStart event with the memory prompt of a small
  memory directory (50 memories);
- ``Stop``: the same command flagging work for the background worker (the worker is started by
  the warm-up and lingers, as it does during a real turn);
- ``PreToolUse team write``: the same command answering a PreToolUse event for a ``Write`` of a
  clean note (no secret) into the project's team memory directory (``<memory dir>/team/``):
  the team-memory guard scans the content with the bundled rules and lets the write run. Before
  timing, the bench checks that this path really is scanned (the same write with a secret is
  refused) and that the clean write is answered without a message;
- ``UserPromptSubmit``: the first prompt of a new session (a fresh session id per run): the
  memory prompt plus the memories relevant to the prompt, ranked with BM25 over the 50 — the
  costliest prompt (later ones skip the memory prompt); informational, no floor;
- ``SessionStart, bytecode cached``: like ``SessionStart`` with every module's bytecode cached
  (``PYTHONPYCACHEPREFIX`` in a temporary directory, filled by the warm-up), as in a package
  installed by pip (informational, no floor).

All but the last run in this environment as it is: with ``PYTHONDONTWRITEBYTECODE=1`` (as in
some sandboxes and containers) and a source checkout, memframe's modules are compiled on every
run, the slowest case. Floors, over the median of ``python -c pass`` measured in the same run
(what the interpreter costs on this machine is not the hook's to save): the median of
SessionStart and of Stop is at most 100 ms over it (``BUDGET_OVER_PASS_MS``), the median of
PreToolUse team write at most 150 ms over it (``BUDGET_TEAM_WRITE_OVER_PASS_MS``: it also loads
the scanner and its rules). Those budgets hold on a machine whose ``python -c pass`` takes
``REFERENCE_PASS_MS`` (10 ms, the Xeons and the EPYC first measured); where the interpreter
itself starts slower, everything Python does is slower in the same proportion, and the budgets
scale by ``pass / REFERENCE_PASS_MS`` (never below 1): an AMD EPYC family 25 measured
``python -c pass`` at 25 ms with the hook at the same multiple of it as elsewhere. Each checked
row records its ``budget_over_pass_ms`` as applied.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benches.harness import BenchResult, Metric, ratio

NAME = "hook"
BUDGET_OVER_PASS_MS = 100.0  # SessionStart, Stop: median minus the median of `python -c pass`
# PreToolUse team write (loads the scanner and rules): issue 13's 150 ms. The 164-rule set once
# took it to +262..+301 ms (parsing and checking every rule, compiling every regex, in every
# process); the validated set now comes from the scan cache and regexes compile on first need.
BUDGET_TEAM_WRITE_OVER_PASS_MS = 150.0
# `python -c pass` on the machines the budgets were set on; a slower interpreter scales them
REFERENCE_PASS_MS = 10.0
PASS_ROW = "python -c pass"
START_ROW = "SessionStart"
STOP_ROW = "Stop"
TEAM_WRITE_ROW = "PreToolUse team write"
PROMPT_ROW = "UserPromptSubmit"
CACHED_ROW = "SessionStart, bytecode cached"
# checked row -> its budget in ms over the median of PASS_ROW in the same run (at the reference)
BUDGETS_OVER_PASS: dict[str, float] = {
    START_ROW: BUDGET_OVER_PASS_MS,
    STOP_ROW: BUDGET_OVER_PASS_MS,
    TEAM_WRITE_ROW: BUDGET_TEAM_WRITE_OVER_PASS_MS,
}
CHECKED_ROWS = tuple(BUDGETS_OVER_PASS)
TEAM_NOTE = "deploy-checklist.md"  # the file the team write targets, in <memory dir>/team/
TEAM_NOTE_TEXT = """---
name: Deploy checklist
description: what to check before and after a production deploy
type: project
---

# Deploy checklist

- Announce the deploy in the release channel and wait for the green build on main.
- Run the database migrations on staging first; compare the row counts before and after.
- Roll out to one region, watch the error rate for ten minutes, then roll out everywhere.
- If the error rate doubles, roll back with the previous release tag and open an incident.
- After the deploy, close the release milestone and move the open issues to the next one.
"""
MEMORIES = 50
TOPICS = ("deploys", "database", "staging", "tests", "release", "billing", "auth", "cache")
SESSION = "bench-hook-session"
WORKER_LINGER = 3.0  # seconds: the worker outlives the bursts of Stop events, then exits


def _hook_argv() -> list[str]:
    from memframe.agents.install import default_command

    return shlex.split(default_command())


def _environment(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMFRAME_", "CLAUDE_"))}
    if "MEMFRAME_BACKEND" in os.environ:
        env["MEMFRAME_BACKEND"] = os.environ["MEMFRAME_BACKEND"]
    env.update(
        HOME=str(root / "user"),
        XDG_CONFIG_HOME=str(root / "user" / ".config"),
        MEMFRAME_HOME=str(root / "home"),
        MEMFRAME_CONFIG_DIR=str(root / "config"),
        CLAUDE_CONFIG_DIR=str(root / "claude"),
        MEMFRAME_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    return env


def _setup(root: Path) -> tuple[Path, Path]:
    """A project with a small memory directory and a short transcript."""
    import memframe
    from memframe.memdir import MemoryStore, locate

    for name in ("user", "config", "claude", "project"):
        (root / name).mkdir()
    (root / "config" / "settings.json").write_text(
        json.dumps({"hook": {"worker_linger_seconds": WORKER_LINGER}})
    )
    project = root / "project"
    with memframe.open(
        project, home=root / "home", config_dir=root / "config", autoload_plugins=False
    ) as frame:
        store = MemoryStore(locate(frame).path)
    for n in range(MEMORIES):
        topic = TOPICS[n % len(TOPICS)]
        store.add(
            f"Memory {n} about {topic}",
            f"what to remember about {topic} ({n})",
            "project",
            f"Fact number {n}: the {topic} setup changed in sprint {n}. " * 8,
        )
    transcript = root / "claude" / f"{SESSION}.jsonl"
    records = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": SESSION,
         "message": {"role": "user", "content": "Hello"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": SESSION,
         "message": {"role": "assistant", "id": "msg_1", "content": [{"type": "text",
                     "text": "Hi."}], "usage": {"input_tokens": 10, "output_tokens": 2}}},
    ]  # fmt: skip
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    return project, transcript


def _team_dir(project: Path, env: dict[str, str]) -> Path:
    """The project's team memory directory as the hook process finds it (its environment, its
    configuration; ``memframe.agents.adapter._pre_tool_use``), created as a team member has it."""
    from memframe.config import load_config
    from memframe.memdir.files import TEAM_DIR
    from memframe.memdir.location import locate_for

    location = locate_for(project.resolve(), load_config(env=env), env=env)
    team = location.path / TEAM_DIR
    team.mkdir(parents=True, exist_ok=True)
    return team


def _fake_aws_key_id() -> str:
    """A format-valid, made-up AWS access key id (``aws-access-token``), seeded."""
    rng = random.Random(0x5EC)
    return "AKIA" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))


def _payload(
    event: str, project: Path, transcript: Path, session: str = SESSION, **extra: object
) -> bytes:
    """The event as Claude Code writes it to the hook's stdin; ``extra`` adds fields
    (``tool_name`` and ``tool_input`` for PreToolUse)."""
    data: dict[str, object] = {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(project),
        "hook_event_name": event,
        "permission_mode": "default",
    }
    if event == "SessionStart":
        data["source"] = "startup"
    if event == "Stop":
        data["stop_hook_active"] = False
    if event == "UserPromptSubmit":
        data["prompt"] = "Why do the staging deploys fail since the database release?"
    data.update(extra)
    return json.dumps(data).encode()


def _team_write(project: Path, transcript: Path, team: Path, content: str) -> bytes:
    """PreToolUse for a ``Write`` of ``content`` into ``team/``, as Claude Code sends it."""
    return _payload(
        "PreToolUse",
        project,
        transcript,
        tool_name="Write",
        tool_input={"file_path": str(team / TEAM_NOTE), "content": content},
        tool_use_id="toolu_bench_team_write",
    )


def _check_guard(
    argv: list[str], clean: bytes, secret: bytes, env: dict[str, str], cwd: Path
) -> None:
    """The team write must reach the scanner: the same write with a secret is refused (exit 2),
    and the clean one passes with exit 0 and nothing on stdout (not the "could not check"
    message of a scan that failed)."""
    refused = subprocess.run(
        argv, input=secret, capture_output=True, env=env, cwd=cwd, timeout=60, check=False
    )
    if refused.returncode != 2 or b"memframe: refused" not in refused.stderr:
        raise RuntimeError(
            f"{TEAM_WRITE_ROW}: a secret written into team memory was not refused (exit "
            f"{refused.returncode}, stdout {refused.stdout[-300:]!r}, stderr "
            f"{refused.stderr[-300:]!r}): the write does not reach the scanner, nothing to time"
        )
    allowed = subprocess.run(
        argv, input=clean, capture_output=True, env=env, cwd=cwd, timeout=60, check=False
    )
    if allowed.returncode != 0 or allowed.stdout.strip():
        raise RuntimeError(
            f"{TEAM_WRITE_ROW}: the clean write was not let through without a message (exit "
            f"{allowed.returncode}, stdout {allowed.stdout[-300:]!r}, stderr "
            f"{allowed.stderr[-300:]!r})"
        )


def _timed(argv: list[str], payload: bytes | None, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter_ns()
    done = subprocess.run(
        argv, input=payload, capture_output=True, env=env, cwd=cwd, timeout=60, check=False
    )
    elapsed = time.perf_counter_ns() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed / 1e6


def _worker_pid(root: Path, project: Path) -> int | None:
    from memframe.agents.session_files import HookPaths, read_state

    state = read_state(HookPaths.for_session(root / "home", project, SESSION))
    worker = state.get("worker")
    pid = worker.get("pid") if isinstance(worker, dict) else None
    return pid if isinstance(pid, int) else None


def _wait_idle(root: Path, project: Path, timeout: float) -> None:
    """Until the worker took every pending event (it then lingers, idle)."""
    from memframe.agents.session_files import HookPaths, read_state

    paths = HookPaths.for_session(root / "home", project, SESSION)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not read_state(paths).get("pending"):
            return
        time.sleep(0.05)


def _stop_worker(root: Path, project: Path) -> None:
    """Wait for the worker the Stop runs started to exit (it lingers a few seconds), killing
    it by its pid if it does not."""
    from memframe._process import pid_alive

    pid = _worker_pid(root, project)
    if pid is None:
        return
    deadline = time.monotonic() + WORKER_LINGER + 10
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.1)
    os.kill(pid, 15)


def run(quick: bool) -> BenchResult:
    runs = 15 if quick else 41
    argv = _hook_argv()
    result = BenchResult(NAME, params={"runs": runs, "command": shlex.join(argv)})
    samples: dict[str, list[float]] = {
        PASS_ROW: [],
        START_ROW: [],
        STOP_ROW: [],
        TEAM_WRITE_ROW: [],
        PROMPT_ROW: [],
        CACHED_ROW: [],
    }
    with tempfile.TemporaryDirectory(prefix="memframe-bench-hook-") as tmp:
        root = Path(tmp)
        project, transcript = _setup(root)
        env = _environment(root)
        cached_env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached_env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        start, stop = (_payload(e, project, transcript) for e in ("SessionStart", "Stop"))
        team = _team_dir(project, env)
        team_write = _team_write(project, transcript, team, TEAM_NOTE_TEXT)
        secret = f"{TEAM_NOTE_TEXT}- The CI uploader's access key id is {_fake_aws_key_id()}.\n"
        _check_guard(argv, team_write, _team_write(project, transcript, team, secret), env, project)
        prompts = (
            _payload("UserPromptSubmit", project, transcript, f"{SESSION}-prompt-{n}")
            for n in itertools.count()
        )
        variants = {
            PASS_ROW: lambda: _timed([sys.executable, "-c", "pass"], None, env, project),
            START_ROW: lambda: _timed(argv, start, env, project),
            STOP_ROW: lambda: _timed(argv, stop, env, project),
            TEAM_WRITE_ROW: lambda: _timed(argv, team_write, env, project),
            PROMPT_ROW: lambda: _timed(argv, next(prompts), env, project),
            CACHED_ROW: lambda: _timed(argv, start, cached_env, project),
        }
        try:
            for _ in range(2):  # warm-up: bytecode cache, the worker started and idle
                for variant in variants.values():
                    variant()
            _wait_idle(root, project, timeout=30)
            order = list(variants)
            shuffle = random.Random(0x400C).shuffle
            for _ in range(runs):
                shuffle(order)
                for name in order:
                    samples[name].append(variants[name]())
        finally:
            _stop_worker(root, project)
    writes_off = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    result.params["bytecode_writes_off"] = writes_off
    floor_ms = statistics.median(samples[PASS_ROW])
    for name, values in samples.items():
        median = statistics.median(values)
        row: dict[str, float | int | str | bool | None] = {
            "median_ms": round(median, 1),
            "min_ms": round(min(values), 1),
            "max_ms": round(max(values), 1),
            "x_pass": ratio(median, floor_ms),
            "over_pass_ms": round(median - floor_ms, 1),
        }
        if name in BUDGETS_OVER_PASS:
            row["budget_over_pass_ms"] = round(budget_over_pass(name, floor_ms), 1)
        result.add(name, **row)
    result.details = {name: [round(v, 2) for v in values] for name, values in samples.items()}
    result.notes.extend(
        [
            f"wall time of one subprocess per run, {runs} interleaved runs per variant",
            "PYTHONDONTWRITEBYTECODE is "
            + ("set: memframe's modules compile on every run" if writes_off else "not set")
            + f"; '{CACHED_ROW}' reads every module's bytecode from a warm cache",
            f"floors, over the median of '{PASS_ROW}' ({floor_ms:.1f} ms in this run): "
            + "; ".join(
                f"{name} <= +{budget_over_pass(name, floor_ms):.0f} ms"
                for name in BUDGETS_OVER_PASS
            )
            + f" (x{budget_scale(floor_ms):.2f} of the budgets at a {REFERENCE_PASS_MS:g} ms pass)",
        ]
    )
    return result


def budget_scale(pass_ms: float) -> float:
    """How much slower than the reference this machine starts Python (never below 1)."""
    return max(1.0, pass_ms / REFERENCE_PASS_MS)


def budget_over_pass(name: str, pass_ms: float) -> float:
    """The budget of row ``name`` in ms over a ``python -c pass`` of ``pass_ms`` in the same run."""
    return BUDGETS_OVER_PASS[name] * budget_scale(pass_ms)


def _ms(row: dict[str, Metric] | None) -> float | None:
    value = row.get("median_ms") if row is not None else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def check(result: BenchResult) -> list[str]:
    """The hook's start-up budgets (the Claude Code adapter issue), each over the median of
    ``python -c pass`` in the same run; a row (or the pass row) not measured is skipped."""
    pass_ms = _ms(result.rows.get(PASS_ROW))
    if pass_ms is None:
        return []
    violations = []
    for name in BUDGETS_OVER_PASS:
        median = _ms(result.rows.get(name))
        if median is None:
            continue
        budget = budget_over_pass(name, pass_ms)
        over = median - pass_ms
        if over > budget:
            violations.append(
                f"hook: {name} takes {median:.1f} ms (median), {over:.1f} ms over "
                f"'{PASS_ROW}' ({pass_ms:.1f} ms): budget {budget:.0f} ms over it"
            )
    return violations
