"""The benches' own logic: machine facts parsed from ``/proc/cpuinfo`` and the hook's floors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memframe import _backend

machine = pytest.importorskip("benches.machine", reason="the benches package is not here")
hook = pytest.importorskip("benches.hook", reason="the benches package is not here")
harness = pytest.importorskip("benches.harness", reason="the benches package is not here")

AMD_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl "
    "xtopology nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid "
    "sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy "
    "cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext invpcid_single ssbd ibrs ibpb "
    "stibp vmmcall fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid rdseed adx smap "
    "clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 clzero xsaveerptr arat npt nrip_save umip "
    "vaes vpclmulqdq rdpid fsrm"
)
INTEL_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc "
    "cpuid aperfmperf tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe "
    "popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch "
    "invpcid_single pti fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm mpx avx512f "
    "avx512dq rdseed adx smap clflushopt clwb avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 "
    "xsaves ida arat pku ospke"
)


def _entry(n: int, vendor: str, family: int, model: int, name: str, flags: str) -> str:
    return (
        f"processor\t: {n}\n"
        f"vendor_id\t: {vendor}\n"
        f"cpu family\t: {family}\n"
        f"model\t\t: {model}\n"
        f"model name\t: {name}\n"
        "stepping\t: 1\n"
        "microcode\t: 0xffffffff\n"
        "cpu MHz\t\t: 2450.000\n"
        "cache size\t: 512 KB\n"
        f"flags\t\t: {flags}\n"
        "bogomips\t: 4900.00\n"
        "power management:\n"
        "\n"
    )


def _write_cpuinfo(
    tmp_path: Path, vendor: str, family: int, model: int, name: str, flags: str
) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text("".join(_entry(n, vendor, family, model, name, flags) for n in range(2)))
    return path


@pytest.fixture
def amd_cpuinfo(tmp_path: Path) -> Path:
    return _write_cpuinfo(
        tmp_path, "AuthenticAMD", 25, 1, "AMD EPYC 7B13 64-Core Processor", AMD_FLAGS
    )


@pytest.fixture
def intel_cpuinfo(tmp_path: Path) -> Path:
    name = "Intel(R) Xeon(R) Platinum 8175M CPU @ 2.50GHz"
    return _write_cpuinfo(tmp_path, "GenuineIntel", 6, 85, name, INTEL_FLAGS)


# -- machine facts -------------------------------------------------------------------------------


def test_cpuinfo_of_an_amd_epyc(amd_cpuinfo: Path) -> None:
    cpu = machine._cpuinfo(amd_cpuinfo)
    assert cpu.model_name == "AMD EPYC 7B13 64-Core Processor"
    assert cpu.vendor == "AuthenticAMD"
    assert cpu.family == 25
    assert cpu.model == 1
    assert cpu.label == "AMD EPYC 7B13 64-Core Processor (family 25, AuthenticAMD)"
    assert machine.cpu_flags(cpu.flags) == {
        "sha_ni": True,
        "avx2": True,
        "bmi2": True,
        "popcnt": True,
        "avx512f": False,
        "avx512vbmi": False,
    }


def test_cpuinfo_of_an_intel_xeon(intel_cpuinfo: Path) -> None:
    cpu = machine._cpuinfo(intel_cpuinfo)
    assert cpu.model_name == "Intel(R) Xeon(R) Platinum 8175M CPU @ 2.50GHz"
    assert cpu.vendor == "GenuineIntel"
    assert (cpu.family, cpu.model) == (6, 85)
    # trade marks dropped, whitespace collapsed
    assert cpu.label == "Intel Xeon Platinum 8175M CPU @ 2.50GHz (family 6, GenuineIntel)"
    assert machine.cpu_flags(cpu.flags) == {
        "sha_ni": False,
        "avx2": True,
        "bmi2": True,
        "popcnt": True,
        "avx512f": True,
        "avx512vbmi": False,
    }


def test_cpuinfo_unreadable_or_partial(tmp_path: Path) -> None:
    missing = machine._cpuinfo(tmp_path / "nope")
    assert missing == machine.CpuInfo()
    assert missing.label is None
    assert set(machine.cpu_flags(missing.flags).values()) == {None}

    partial = tmp_path / "partial"
    partial.write_text("processor\t: 0\nvendor_id\t: HygonGenuine\ncpu family\t: x\n\n")
    cpu = machine._cpuinfo(partial)
    assert (cpu.vendor, cpu.family, cpu.model, cpu.model_name, cpu.flags) == (
        "HygonGenuine",
        None,
        None,
        None,
        None,
    )
    assert cpu.label == "(HygonGenuine)"
    assert machine.CpuInfo(model_name="Neoverse-N1").label == "Neoverse-N1"


def test_collect_records_the_cpu_and_the_scan_engine(
    amd_cpuinfo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine, "CPUINFO", amd_cpuinfo)
    monkeypatch.setattr(_backend, "ENGINE", "hyperscan 5.4.0 (system, static)", raising=False)
    facts = machine.collect()
    assert facts["cpu_model"] == "AMD EPYC 7B13 64-Core Processor"
    assert facts["cpu_vendor"] == "AuthenticAMD"
    assert facts["cpu_family"] == 25
    assert facts["cpu_model_number"] == 1
    assert facts["cpu_label"] == "AMD EPYC 7B13 64-Core Processor (family 25, AuthenticAMD)"
    assert list(facts["cpu_flags"]) == list(machine.CPU_FLAGS)
    assert facts["cpu_flags"]["avx2"] is True and facts["cpu_flags"]["avx512vbmi"] is False
    assert facts["scan_engine"] == "hyperscan 5.4.0 (system, static)"
    json.dumps(facts)  # stored in the results file as is

    monkeypatch.delattr(_backend, "ENGINE")
    assert machine.collect()["scan_engine"] is None


def test_scan_engine_is_read_defensively() -> None:
    assert machine._scan_engine(SimpleNamespace()) is None
    assert machine._scan_engine(SimpleNamespace(ENGINE=None)) is None
    assert machine._scan_engine(SimpleNamespace(ENGINE="python")) == "python"


def _facts(**overrides: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "python": "3.11.7",
        "python_implementation": "CPython",
        "platform": "Linux-6.1-x86_64",
        "memframe": "0.1.0",
        "backend": "native",
        "native_version": "0.1.0",
        "native_build_profile": "release",
        "scan_engine": "hyperscan 5.4.0 (system, static)",
        "pluggy": "1.5.0",
        "cpu_model": "AMD EPYC 7B13 64-Core Processor",
        "cpu_label": "AMD EPYC 7B13 64-Core Processor (family 25, AuthenticAMD)",
        "cpu_model_number": 1,
        "cpu_count": 8,
        "usable_cpus": 4,
        "cpu_flags": {"sha_ni": True, "avx2": True, "bmi2": True, "popcnt": True,
                      "avx512f": False, "avx512vbmi": None},
    }  # fmt: skip
    facts.update(overrides)
    return facts


def test_describe_prints_cpu_family_flags_and_engine() -> None:
    lines = machine.describe(_facts())
    memframe_line = next(line for line in lines if line.startswith("memframe "))
    assert memframe_line.endswith("engine=hyperscan 5.4.0 (system, static)")
    cpu_line = next(line for line in lines if line.startswith("cpu  "))
    assert "AMD EPYC 7B13 64-Core Processor (family 25, AuthenticAMD)" in cpu_line
    assert "model=1" in cpu_line and "cpus=8 (usable 4)" in cpu_line
    flags_line = next(line for line in lines if line.startswith("cpu flags "))
    assert flags_line == (
        "cpu flags sha_ni=yes, avx2=yes, bmi2=yes, popcnt=yes, avx512f=no, avx512vbmi=?"
    )

    bare = machine.describe(_facts(scan_engine=None, cpu_label=None, cpu_model_number=None))
    assert next(line for line in bare if line.startswith("memframe ")).endswith("engine=-")
    cpu_line = next(line for line in bare if line.startswith("cpu  "))
    assert "AMD EPYC 7B13 64-Core Processor  model=?" in cpu_line


# -- the hook bench's floors ---------------------------------------------------------------------


def _hook_result(pass_ms: float | None, **medians: float) -> Any:
    result = harness.BenchResult(hook.NAME)
    if pass_ms is not None:
        result.add(hook.PASS_ROW, median_ms=pass_ms)
    rows = {"start": hook.START_ROW, "stop": hook.STOP_ROW, "team": hook.TEAM_WRITE_ROW}
    for key, median in medians.items():
        result.add(rows[key], median_ms=median)
    return result


def test_hook_budgets() -> None:
    assert hook.BUDGET_OVER_PASS_MS == 100.0
    assert hook.BUDGET_TEAM_WRITE_OVER_PASS_MS == 150.0
    assert hook.BUDGETS_OVER_PASS == {
        "SessionStart": 100.0,
        "Stop": 100.0,
        "PreToolUse team write": 150.0,
    }
    assert hook.REFERENCE_PASS_MS == 10.0
    assert hook.CHECKED_ROWS == ("SessionStart", "Stop", "PreToolUse team write")


def test_hook_check_passes_within_budget_of_pass() -> None:
    assert hook.check(_hook_result(10.0, start=110.0, stop=60.0, team=160.0)) == []
    # what counts is the margin over the interpreter of the same run, not the absolute time
    assert hook.check(_hook_result(8.0, start=107.9, stop=107.9, team=157.9)) == []


def test_hook_budgets_scale_with_a_slower_interpreter() -> None:
    assert hook.budget_scale(5.0) == 1.0  # a fast machine keeps the budgets
    assert hook.budget_scale(25.0) == 2.5
    assert hook.budget_over_pass("PreToolUse team write", 25.0) == 375.0
    assert hook.check(_hook_result(25.0, start=274.0, stop=274.0, team=399.0)) == []
    (start,) = hook.check(_hook_result(25.0, start=276.0))
    assert "budget 250 ms over it" in start


def test_hook_check_fails_over_budget_with_both_figures() -> None:
    violations = hook.check(_hook_result(10.0, start=110.5, stop=60.0, team=160.4))
    assert violations == [
        "hook: SessionStart takes 110.5 ms (median), 100.5 ms over 'python -c pass' (10.0 ms): "
        "budget 100 ms over it",
        "hook: PreToolUse team write takes 160.4 ms (median), 150.4 ms over 'python -c pass' "
        "(10.0 ms): budget 150 ms over it",
    ]
    # a Stop under the team write's larger budget still breaks its own
    (stop,) = hook.check(_hook_result(10.0, stop=130.0))
    assert stop.startswith("hook: Stop takes 130.0 ms") and "budget 100 ms" in stop


def test_hook_check_skips_what_was_not_measured() -> None:
    assert hook.check(_hook_result(None, start=500.0, stop=500.0, team=500.0)) == []
    assert hook.check(_hook_result(12.0)) == []
    assert len(hook.check(_hook_result(12.0, team=500.0))) == 1


# -- the hook bench's team write: an event the guard scans ---------------------------------------


def test_team_write_event_reaches_the_scanner_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memframe.agents.guard import inside, target_path, written_text
    from memframe.agents.memory import memory_location
    from memframe.agents.protocol import parse_input
    from memframe.config import load_config

    project = tmp_path / "project"
    project.mkdir()
    transcript = tmp_path / "session.jsonl"
    env = hook._environment(tmp_path)
    team = hook._team_dir(project, env)
    assert team.is_dir() and team.name == "team"

    # the directory the hook itself guards, with the hook's environment
    for name in ("HOME", "MEMFRAME_HOME", "MEMFRAME_CONFIG_DIR", "CLAUDE_CONFIG_DIR"):
        monkeypatch.setenv(name, env[name])
    assert team == memory_location(project, load_config()).path / "team"

    raw = hook._team_write(project, transcript, team, hook.TEAM_NOTE_TEXT)
    data = json.loads(raw)
    assert {
        "session_id",
        "transcript_path",
        "cwd",
        "hook_event_name",
        "tool_name",
        "tool_input",
    } <= set(data)
    event = parse_input(raw)
    assert event.event == "PreToolUse" and event.tool_name == "Write"
    assert event.session_id == hook.SESSION and event.cwd == str(project)
    assert event.transcript_path == str(transcript)
    target = target_path(event.tool_input, project)
    assert target is not None and inside(target, team)
    assert written_text("Write", event.tool_input) == [hook.TEAM_NOTE_TEXT]


def test_fake_key_has_the_aws_access_key_format() -> None:
    key = hook._fake_aws_key_id()
    assert re.fullmatch(r"AKIA[A-Z2-7]{16}", key)
    assert not key.endswith("EXAMPLE")  # the rule's allowlist
    assert key == hook._fake_aws_key_id()  # seeded


# -- the memory bench: labels, scoring and its report --------------------------------------------

memory = pytest.importorskip("benches.memory", reason="the benches package is not here")

NOTES = """# Session Title
_A short title_
Add multiply_numbers

# Current State
_What is being worked on right now_
- Latest request: Stop hook feedback: commit first
- Working tree clean; the task is complete

# Files and Functions
_The files that matter_
- `src/math_utils.py` (Read)
- `src/math_utils.py` (Read, Edit)
- `tests/test_math_utils.py` (Edit)
- `tests/test_math_utils.py` (Edit)

# Worklog
_Step by step_
- Add multiply_numbers → Edit x2
- add multiply_numbers → Bash
"""
LABELS = {
    "facts": [
        {"id": "task", "kind": "task", "any": [["multiply_numbers"]]},
        {"id": "file", "kind": "file", "any": [["src/math_utils.py"]]},
        {"id": "state", "kind": "state", "section": "current state", "any": [["clean"]]},
        {"id": "state elsewhere", "kind": "state", "section": "worklog", "any": [["clean"]]},
        {"id": "same line", "kind": "error_fix", "any": [["math_utils", "worklog"]]},
        {"id": "commit", "kind": "outcome", "any": [["6322cf4"]]},
    ],
    "noise": [
        {"id": "hook as request", "section": "current state", "any": [["request", "stop hook"]]},
        {"id": "not there", "section": "session title", "any": [["stop hook"]]},
    ],
}


def test_memory_bench_scores_notes_by_label_section_and_line() -> None:
    score = memory.score_notes(NOTES, LABELS)
    assert (score.found, score.facts) == (3, 6)
    # a keyword of another line or another section does not count
    assert score.missing == ["state elsewhere", "same line", "commit"]
    assert score.by_kind["state"] == [1, 2]
    assert score.noise_found == ["hook as request"]
    # 8 list lines: one repeated verbatim, three about a key listed before (path, path, request)
    assert (score.list_lines, score.dup_lines, score.dup_keys) == (8, 1, 3)
    assert memory.line_key("- `git status` failed — Exit code 1") == "git status"
    assert memory.line_key("- Add multiply_numbers… → Glob, Read x2") == "add multiply_numbers"
    assert memory.pct(3, 6) == 50.0 and memory.pct(1, 0) is None


def test_memory_bench_synthetic_session_is_a_claude_code_transcript() -> None:
    from memframe.transcripts.claude_code import looks_like

    spec = json.loads(memory.SESSION_FILE.read_text(encoding="utf-8"))
    assert len(spec["durable"]) == 12 and len(spec["traps"]) >= 10
    token = memory.fake_github_token()
    assert re.fullmatch(r"ghp_[A-Za-z0-9]{36}", token) and token == memory.fake_github_token()
    records = [json.loads(line) for line in memory.synthetic_transcript(spec, token).splitlines()]
    assert all(looks_like(r) for r in records if r["type"] != "system")
    parents = {r["uuid"]: r["parentUuid"] for r in records}
    assert all(p is None or p in parents for p in parents.values())  # one chain, no dangling parent
    texts = json.dumps(records)
    assert token in texts and "{github_token}" not in texts
    assert any(r.get("isCompactSummary") for r in records)
    assert any(r.get("subtype") == "compact_boundary" for r in records)
    assert sum(1 for r in records if r.get("isMeta")) == 3  # two hook messages, one expansion
    # a private value anywhere in what the run left counts, in any of its spellings
    files = {"memory/MEMORY.md": f"- token {token}", "s/summary.md": "call 415 555 0134"}
    kept = memory.score_memories([], files, spec, token).private_kept
    assert kept == {"GitHub token": ["memory/MEMORY.md"], "phone number": ["s/summary.md"]}


def test_memory_bench_run_computes_every_row_from_the_labels() -> None:
    result = memory.run(quick=True)
    labels = json.loads(memory.LABELS_FILE.read_text(encoding="utf-8"))["sessions"]
    notes_rows = [r for r in result.rows if r.startswith("notes: ") and r != memory.ALL_NOTES]
    assert len(notes_rows) == len(labels)
    for row in [*notes_rows, memory.ALL_NOTES]:
        metrics = result.rows[row]
        assert 0 <= metrics["found"] <= metrics["total"]
        assert metrics["pct"] == round(100 * metrics["found"] / metrics["total"], 1)
        assert {"dup_lines", "dup_keys", "noise"} <= set(metrics)
    total = sum(len(s["facts"]) for s in labels.values())
    assert result.rows[memory.ALL_NOTES]["total"] == total
    assert result.rows[memory.ALL_NOTES]["found"] == sum(
        result.rows[r]["found"] for r in notes_rows
    )
    # the figures come from the notes the replay wrote: scoring them again gives the same count
    for name, detail in result.details["notes"].items():
        score = memory.score_notes(detail["notes"], labels[name])
        assert score.missing == detail["missing"]
        assert detail["layer_errors"] == []
    for row, total in (
        (memory.MEM_RECALL, 12),
        (memory.HIT5, 26),
        (memory.DREAM_MERGED, 7),
    ):
        assert result.rows[row]["total"] == total
        assert 0 <= result.rows[row]["found"] <= total
    assert result.rows[memory.HIT1]["found"] <= result.rows[memory.HIT5]["found"]
    saved = len(result.details["memories"]["saved"])
    assert result.rows[memory.MEM_PRECISION]["total"] == saved
    # the previous release's figures sit beside today's
    baseline = json.loads(memory.BASELINE_FILE.read_text(encoding="utf-8"))
    assert result.rows[memory.ALL_NOTES]["base_pct"] == baseline["rows"][memory.ALL_NOTES]["pct"]
    assert isinstance(memory.check(result), list)  # the floors themselves are the bench's job
    broken = harness.BenchResult(memory.NAME, rows={memory.ALL_NOTES: {"pct": -1.0}})
    problems = memory.check(broken)
    assert any(p.startswith(f"memory: {memory.ALL_NOTES} pct = -1") for p in problems)
    assert any("was not measured" in p for p in problems)


# -- sync ---------------------------------------------------------------------------------------


def _sync_result(quick: bool = True, workers: int = 2, **rows: dict[str, Any]) -> Any:
    from benches.harness import BenchResult

    result = BenchResult("sync", params={"quick": quick, "new_workers_sqlite": workers})
    for name, metrics in rows.items():
        result.add(name, **metrics)
    return result


def test_sync_check_holds_the_ratio_floors_at_8_and_64_clients_only() -> None:
    from benches import sync

    ok = _sync_result(
        **{
            "sqlite GET 304 x1": {"new_x_old": 0.5, "new_errors": 0},
            "sqlite GET 304 x8": {"new_x_old": 3.1, "new_errors": 0},
            "sqlite PUT x64": {"new_x_old": sync.PUT_FLOOR[True], "new_errors": 0},
        }
    )
    assert sync.check(ok) == []
    slow = _sync_result(
        **{
            "sqlite GET full x64": {"new_x_old": 1.1, "new_errors": 0},
            "sqlite PUT x8": {"new_x_old": 0.5, "new_errors": 0},
        }
    )
    problems = sync.check(slow)
    assert len(problems) == 2
    assert "GET full x64" in problems[0] and f"floor {sync.GET_FLOOR[True]}x" in problems[0]
    assert "PUT x8" in problems[1] and f"floor {sync.PUT_FLOOR[True]}x" in problems[1]
    full = _sync_result(quick=False, **{"sqlite GET 304 x8": {"new_x_old": 2.5}})
    assert sync.check(full) and "floor 3.0x" in sync.check(full)[0]
    one_core = _sync_result(workers=1, **{"sqlite GET 304 x8": {"new_x_old": 1.0}})
    assert sync.check(one_core) == []  # the GET floor counts on a worker per core


def test_sync_check_fails_a_lost_write_a_leak_and_a_moving_thread_count() -> None:
    from benches import sync

    soak = {"acknowledged": 500, "acknowledged_lost": 0, "fds_spread": 1, "threads_spread": 0}
    flood = {"valid_status": 200, "fds_before": 70, "fds_after": 70}
    flood |= {"threads_before": 22, "threads_50_idle": 22, "threads_after": 22}
    good = _sync_result(**{"soak sqlite": soak, "flood new: 1000": flood})
    assert sync.check(good) == []
    bad = _sync_result(
        **{
            "soak sqlite": soak | {"acknowledged_lost": 2, "threads_spread": 3},
            "flood new: 1000": flood | {"fds_after": 2070, "threads_50_idle": 72},
            "flood old: 1000": flood | {"fds_after": 2070},  # the old server: reported only
        }
    )
    problems = " / ".join(sync.check(bad))
    assert "2 acknowledged writes lost" in problems and "threads moved by 3" in problems
    assert "open files grew from 70 to 2070" in problems and "thread count moved" in problems
    assert "flood old" not in problems


def test_sync_load_client_reads_responses_split_anywhere() -> None:
    import asyncio

    from benches import sync

    loop = asyncio.new_event_loop()
    try:
        connection = sync._Connection(loop)
        connection.transport = SimpleNamespace(is_closing=lambda: False, write=lambda data: None)  # type: ignore[assignment]
        answers = []
        for response in (
            b"HTTP/1.1 304 Not Modified\r\netag: x\r\ncontent-length: 0\r\n\r\n",
            b'HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{"a": "bc"}',
        ):
            waiter = connection.request(b"GET / HTTP/1.1\r\n\r\n")
            for at in range(0, len(response), 7):  # in pieces, as TCP may deliver it
                connection.data_received(response[at : at + 7])
            answers.append(waiter.result())
        assert answers == [304, 200]
        waiter = connection.request(b"GET / HTTP/1.1\r\n\r\n")
        connection.connection_lost(None)
        with pytest.raises(ConnectionError):
            waiter.result()
    finally:
        loop.close()


def test_sync_load_client_reconnects_after_connection_close() -> None:
    """A response saying Connection: close (a worker balancing its connections) ends that
    connection: the client opens another for its next request, and nothing counts as an error.
    Against a real server on 127.0.0.1 that closes after every third response."""
    import asyncio

    from benches import sync

    accepted = finished = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted, finished
        accepted += 1
        answered = 0
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                answered += 1
                close = answered % 3 == 0
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n"
                    + (b"connection: close\r\n" if close else b"")
                    + b"\r\n{}"
                )
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        writer.close()
        await writer.wait_closed()
        finished += 1

    async def run() -> sync.Round:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        address = server.sockets[0].getsockname()[:2]
        connections = [await sync._connect(address) for _ in range(2)]
        try:
            request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
            return await sync._round(connections, [address], lambda c, n: request, 2, 0.5, 200)
        finally:
            for connection in connections:
                if connection.transport is not None:
                    connection.transport.close()
            # until each side has closed its socket
            while finished < accepted or any(c.transport is not None for c in connections):
                await asyncio.sleep(0)
            server.close()
            await server.wait_closed()

    loop = asyncio.new_event_loop()
    try:
        result = loop.run_until_complete(run())
    finally:
        loop.close()
    assert result.errors == 0
    assert result.requests >= 6
    assert accepted >= 2 + result.requests // 3 - 2  # one new connection per third answer


def test_sync_resources_and_percentiles() -> None:
    import os

    from benches import sync

    fds, threads = sync.resources(os.getpid())
    assert fds > 0 and threads >= 1
    assert sync.resources(2**22 + 12345) == (-1, -1)  # no such process
    assert sync._percentile([0.3, 0.1, 0.2], 0.5) == 0.2
    assert sync._percentile(list(range(100)), 0.99) == 99


def test_sync_slower_disk_delays_every_fsync_of_a_spawned_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import shutil
    import subprocess
    import sys

    from benches import sync

    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to build benches/slow_fsync.c")
    probe = (
        "import os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)\n"
        "started = time.perf_counter()\n"
        "for _ in range(5):\n"
        "    os.write(fd, b'x'); os.fdatasync(fd); os.fsync(fd)\n"
        "print((time.perf_counter() - started) / 10 * 1e6)\n"
    )

    def per_call_us() -> float:
        env = {**os.environ, **sync._slow_disk}
        out = subprocess.run(
            [sys.executable, "-c", probe, str(tmp_path / "f")],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return float(out.stdout)

    # 20 ms: far above a real fsync here, even on a loaded machine
    monkeypatch.setenv(sync.FSYNC_DELAY_ENV, "20000")
    with sync._slower_disk(tmp_path) as delay:
        assert delay == 20000 and sync._slow_disk["LD_PRELOAD"].endswith("slow_fsync.so")
        assert per_call_us() >= 20000  # each call returned 20 ms after the real one, or later
    assert sync._slow_disk == {}  # the servers after the run get the disk as it is
    assert per_call_us() < 20000

    monkeypatch.setenv(sync.FSYNC_DELAY_ENV, "0")
    with sync._slower_disk(tmp_path) as delay:
        assert delay == 0 and sync._slow_disk == {}
    monkeypatch.setenv(sync.FSYNC_DELAY_ENV, "0.8ms")
    with pytest.raises(ValueError, match="whole number of microseconds"):
        sync.fsync_delay_us()
