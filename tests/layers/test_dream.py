"""Dream (docs/memdir.md, dream): the gates, cheapest first; consolidation (duplicates merged,
absolute dates,
the index rebuilt); the lock file, its rollback and its protocol between processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memframe._manager import LayerLoadError
from memframe.layers.dream import DreamLayer
from memframe.memdir import MemoryStore, load_for_prompt
from memframe.memdir.lock import ConsolidationLock, pid_alive
from memframe.models import ModelError, ModelResponse, ToolCall
from memframe.testing import ScriptedBackend
from tests.layers.memdir_helpers import (
    DAY,
    DREAM,
    HOUR,
    MEMDIR,
    index_entries,
    memory_files,
    private_dir,
    write_memory,
    write_settings,
)
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]


def dream_of(frame) -> DreamLayer:
    layer = frame.manager.get_plugin("dream")
    assert isinstance(layer, DreamLayer)
    return layer


@pytest.fixture
def dr_frame(memframe_open):
    """Frames with memdir and dream; background work (the consolidation a session end starts)
    runs inline, so it is done when ``close()`` returns."""

    def make(**options):
        return memframe_open(builtin_layers=[MEMDIR, DREAM], **options)

    return make


def set_mtime(path: Path, when: float) -> None:
    os.utime(path, (when, when))


def make_lock(root: Path, *, age: float, body: str = "") -> Path:
    """A consolidation lock last touched ``age`` seconds ago."""
    private_dir(root)
    lock = root / ".consolidate-lock"
    lock.write_text(body)
    set_mtime(lock, time.time() - age)
    return lock


def make_sessions(frame, names: list[str], *, age: float = 60.0) -> None:
    """Session state files under the project's home, last written ``age`` seconds ago."""
    for name in names:
        directory = frame.project_home / name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "state.json").write_text("{}")
        set_mtime(directory / "state.json", time.time() - age)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def spawn_sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    assert not pid_alive(proc.pid)
    return proc.pid


# -- gates ----------------------------------------------------------------------------------------


def test_disabled_closes_the_first_gate(dr_frame, tmp_path):
    write_settings(tmp_path, {"dream": {"enabled": False}})
    frame = dr_frame()
    dream = dream_of(frame)
    private_dir(dream.store.root)
    make_sessions(frame, [f"s{n}" for n in range(8)])
    assert dream.gate() == "dream is disabled"
    assert not (dream.store.root / ".dream-scan").exists()


def test_no_memory_directory_yet(dr_frame):
    dream = dream_of(dr_frame())
    assert dream.gate() == "no memory directory yet"


@pytest.mark.parametrize("hours", [0.0, 5.0, 23.5])
def test_a_recent_consolidation_closes_the_gate(dr_frame, hours):
    frame = dr_frame()
    dream = dream_of(frame)
    make_lock(dream.store.root, age=hours * HOUR)
    make_sessions(frame, [f"s{n}" for n in range(8)])
    reason = dream.gate()
    assert reason is not None
    match = re.fullmatch(r"last consolidation (\d+\.\d) h ago", reason)
    assert match, reason
    assert abs(float(match.group(1)) - hours) <= 0.1
    # the time gate is cheaper than the scan: no scan happened
    assert not (dream.store.root / ".dream-scan").exists()


def test_min_hours_comes_from_settings(dr_frame, tmp_path):
    write_settings(tmp_path, {"dream": {"min_hours": 2, "min_sessions": 1}})
    frame = dr_frame()
    dream = dream_of(frame)
    make_lock(dream.store.root, age=3 * HOUR)
    make_sessions(frame, ["a"])
    assert dream.gate() is None


def test_the_scan_is_throttled(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    make_lock(dream.store.root, age=2 * DAY)
    scan = dream.store.root / ".dream-scan"
    assert dream.gate() == "0 session(s) since the last consolidation"
    assert abs(scan.stat().st_mtime - time.time()) < 5
    five_minutes_ago = time.time() - 300
    set_mtime(scan, five_minutes_ago)
    make_sessions(frame, [f"s{n}" for n in range(6)])  # enough now, but no rescan yet
    reason = dream.gate()
    assert reason == "sessions were scanned less than the scan interval ago"
    assert scan.stat().st_mtime == five_minutes_ago  # not rescanned
    set_mtime(scan, time.time() - 601)  # ten minutes later: scanned again
    assert dream.gate() is None
    assert abs(scan.stat().st_mtime - time.time()) < 5


def test_fewer_than_five_sessions_since_the_last_consolidation(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    make_lock(dream.store.root, age=2 * DAY)
    make_sessions(frame, ["new1", "new2", "new3"], age=HOUR)
    make_sessions(frame, ["old1", "old2", "old3"], age=3 * DAY)  # before the last one
    assert dream.sessions_since(dream.lock.last_consolidated()) == ["new1", "new2", "new3"]
    assert dream.gate() == "3 session(s) since the last consolidation"


def test_the_current_session_is_not_counted(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    make_lock(dream.store.root, age=2 * DAY)
    scan = dream.store.root / ".dream-scan"
    make_sessions(frame, ["current", "o1", "o2", "o3", "o4"])
    assert dream.gate(current="current") == "4 session(s) since the last consolidation"
    scan.unlink()
    assert dream.gate(current="other") is None  # five sessions that are not "other"
    scan.unlink()
    make_sessions(frame, ["o5"])
    assert dream.gate(current="current") is None


def test_claude_code_transcripts_count_as_sessions(dr_frame, fake_home, monkeypatch):
    monkeypatch.setenv("MEMFRAME_MEMORY_MODE", "claude")
    frame = dr_frame()
    dream = dream_of(frame)
    assert dream.location.mode == "claude"
    private_dir(dream.store.root)
    for n in range(5):
        (dream.store.root.parent / f"transcript-{n}.jsonl").write_text("{}\n")
    assert dream.gate(current="transcript-0") == "4 session(s) since the last consolidation"
    (dream.store.root / ".dream-scan").unlink()
    assert dream.gate(current="someone-else") is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"dream": {"enabled": "no"}}, "'enabled' must be true or false"),
        ({"dream": {"min_hours": -1}}, "'min_hours' must be a number >= 0"),
        ({"dream": {"nightly": True}}, "unknown setting 'nightly'"),
        ({"dream": 5}, "must be an object"),
    ],
)
def test_bad_settings_fail_at_frame_open(tmp_path, settings, message):
    from memframe.testing import open_test_frame

    write_settings(tmp_path, settings)
    with pytest.raises(LayerLoadError, match=message):
        open_test_frame(tmp_path, builtin_layers=[DREAM])


# -- consolidation --------------------------------------------------------------------------------

WRITTEN = datetime(2025, 3, 10, 12, 0, tzinfo=UTC).timestamp()
DEPLOY = (
    "Deploy to staging with make deploy-staging, wait for the health checks to pass and then "
    "run the smoke tests before promoting the build to production"
)


def seed(root: Path) -> None:
    now = time.time()
    write_memory(root, "tabs-old.md", "Always use tabs.", name="Tabs", mtime=now - 9 * DAY)
    write_memory(root, "tabs-new.md", "always  use TABS.", name="Tabs!", mtime=now - 2 * DAY)
    write_memory(
        root, "deploy-a.md", DEPLOY + ".", name="Deploy", kind="project", mtime=now - 5 * DAY
    )
    write_memory(
        root, "deploy-b.md", DEPLOY + ", always.", name="Deploying", kind="project", mtime=now - DAY
    )
    write_memory(
        root,
        "freeze.md",
        "The release freeze started yesterday and ends today; Tomorrow we branch.",
        name="Freeze",
        kind="project",
        mtime=WRITTEN,
    )
    write_memory(root, "oncall.md", "Page the on-call engineer via opsgenie.", name="On-call")
    write_memory(root, "team/grafana.md", "Grafana is at grafana.internal.", kind="reference")


def test_consolidate_merges_duplicates_and_fixes_dates(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    root = dream.store.root
    seed(root)
    lock = make_lock(root, age=3 * DAY)
    result = dream.consolidate()
    assert result.ran and result.reason == "consolidated"
    assert sorted(result.deleted) == ["deploy-a.md", "tabs-old.md"]  # the newest is kept
    assert result.written == ["freeze.md"]
    assert result.refused == []
    files = memory_files(root)
    assert files == [
        "deploy-b.md",
        "freeze.md",
        "oncall.md",
        "tabs-new.md",
        "team/grafana.md",
    ]
    assert result.memories == len(files)
    freeze = MemoryStore(root).find("freeze.md")
    assert (
        freeze.body
        == "The release freeze started 2025-03-09 and ends 2025-03-10; 2025-03-11 we branch."
    )
    assert (freeze.name, freeze.type) == ("Freeze", "project")
    # MEMORY.md rebuilt from the files
    index = (root / "MEMORY.md").read_text()
    assert sorted(index_entries(index)) == files
    assert "## feedback" in index and "## project" in index and "## reference" in index
    assert MemoryStore(root).doctor().healthy
    # the lock records this consolidation
    assert lock.read_text() == ""
    assert abs(lock.stat().st_mtime - time.time()) < 5
    assert lock.stat().st_mode & 0o777 == 0o600


def test_only_memories_of_the_same_type_are_merged(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    root = dream.store.root
    now = time.time()
    write_memory(root, "tabs.md", "Always use tabs.", kind="feedback", mtime=now - 3 * DAY)
    write_memory(root, "tabs-user.md", "always use TABS.", kind="user", mtime=now - DAY)
    result = dream.consolidate()
    assert result.deleted == []
    assert memory_files(root) == ["tabs-user.md", "tabs.md"]


def test_consolidating_again_changes_nothing(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    seed(dream.store.root)
    dream.consolidate()
    before = snapshot(dream.store.root)
    result = dream.consolidate()
    assert result.ran and result.deleted == [] and result.written == []
    assert snapshot(dream.store.root) == before


def test_the_rebuilt_index_stays_within_its_limits(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    root = dream.store.root
    for n in range(250):
        write_memory(
            root,
            f"fact-{n:03}.md",
            f"Fact number {n}: " + " ".join(f"w{n}x{k}" for k in range(6)),
            name=f"Fact {n}",
            description="a fact worth keeping " * 4,
        )
    dream.consolidate()
    index = (root / "MEMORY.md").read_text()
    assert len(index.splitlines()) <= 200
    assert len(index.encode()) <= 25_000
    assert load_for_prompt(index)[1] == []
    listed = len(index_entries(index))
    last = index.splitlines()[-1]
    assert last == f"- … {250 - listed} more memories are not listed here (see the folder)"
    assert len(memory_files(root)) == 250


def test_a_failing_backend_rolls_everything_back(dr_frame):
    backend = ScriptedBackend()
    frame = dr_frame(model=backend)
    dream = dream_of(frame)
    root = dream.store.root
    seed(root)
    delete = ToolCall("d1", "Delete", {"file_path": str(root / "oncall.md")})
    backend.script(
        ModelResponse(tool_calls=(delete,), stop_reason="tool_use"),
        ModelError("the provider went away"),
    )
    dream.store.rebuild_index()
    lock = make_lock(root, age=3 * DAY, body="")
    previous = lock.stat().st_mtime
    before = snapshot(root)
    with pytest.raises(ModelError, match="went away"):
        dream.consolidate()
    assert len(backend.requests) == 2  # it did try
    assert snapshot(root) == before  # the staged delete was never applied
    assert lock.read_text() == ""
    assert lock.stat().st_mtime == previous
    # the time gate still sees the old consolidation
    assert dream.lock.last_consolidated() == previous


def test_rollback_restores_a_previous_body_and_removes_a_new_lock(dr_frame):
    backend = ScriptedBackend(ModelError("boom"), ModelError("boom"))
    frame = dr_frame(model=backend)
    dream = dream_of(frame)
    root = dream.store.root
    seed(root)
    lock = root / ".consolidate-lock"
    assert not lock.exists()
    with pytest.raises(ModelError):
        dream.consolidate()
    assert not lock.exists()  # there was none before
    pid = dead_pid()
    make_lock(root, age=2 * HOUR, body=f"{pid}\n")  # a crashed consolidation
    previous = lock.stat().st_mtime
    with pytest.raises(ModelError):
        dream.consolidate()
    assert lock.read_text() == f"{pid}\n"
    assert lock.stat().st_mtime == previous


def test_a_backend_that_cannot_consolidate_is_an_error_and_rolls_back(dr_frame):
    class NoDream:
        name = "no-dream"

        def supports(self, purpose: str) -> bool:
            return False

        def complete(self, request):  # pragma: no cover - never called
            raise AssertionError("called")

    frame = dr_frame(model=NoDream())
    dream = dream_of(frame)
    seed(dream.store.root)
    lock = make_lock(dream.store.root, age=3 * DAY)
    previous = lock.stat().st_mtime
    with pytest.raises(RuntimeError, match="cannot consolidate"):
        dream.consolidate()
    assert lock.stat().st_mtime == previous


def test_a_model_may_not_touch_anything_outside_the_memory_dir(dr_frame, tmp_path):
    victim = tmp_path / "project" / "README.md"
    victim.parent.mkdir(exist_ok=True)
    victim.write_text("keep\n")
    backend = ScriptedBackend(
        ModelResponse(
            tool_calls=(
                ToolCall("d1", "Delete", {"file_path": str(victim)}),
                ToolCall("w1", "Write", {"file_path": str(victim), "content": "pwned"}),
            ),
            stop_reason="tool_use",
        )
    )
    frame = dr_frame(model=backend)
    dream = dream_of(frame)
    seed(dream.store.root)
    result = dream.consolidate()
    assert result.ran
    assert victim.read_text() == "keep\n"
    assert len(result.refused) == 2 and all("outside" in r for r in result.refused)


def test_a_consolidated_team_memory_is_saved_with_its_secrets_redacted(dr_frame):
    key = "ghp_" + "R8f2Kq9ZtX4mW7pB1nV6cJ3hL0sD5gY8aE2u"
    frame = dr_frame()
    root = dream_of(frame).store.root
    merged = root / "team" / "ci.md"
    text = "---\nname: CI\ndescription: how CI runs\ntype: project\n---\n\n"
    backend = ScriptedBackend(
        ModelResponse(
            tool_calls=(
                ToolCall(
                    "w1", "Write", {"file_path": str(merged), "content": f"{text}CI uses {key}.\n"}
                ),
            ),
            stop_reason="tool_use",
        )
    )
    frame = dr_frame(model=backend)
    dream = dream_of(frame)
    seed(dream.store.root)
    result = dream.consolidate()
    assert result.ran and "team/ci.md" in result.written
    assert result.redacted == ["team/ci.md: github-pat"]
    assert merged.read_text() == f"{text}CI uses [REDACTED].\n"


# -- the lock -------------------------------------------------------------------------------------

LOCKER = """
import sys, time
from pathlib import Path
from memframe.memdir.lock import ConsolidationLock
root, go, ready, release = (Path(a) for a in sys.argv[1:5])
lock = ConsolidationLock(root)
ready.write_text("ready")
deadline = time.monotonic() + 30
while not go.exists():  # a start line: polled with a deadline
    if time.monotonic() > deadline:
        sys.exit(3)
    time.sleep(0.0005)
acquired = lock.try_acquire()
print("acquired" if acquired is not None else "blocked", flush=True)
if acquired is not None:
    # hold the lock until the test has every other outcome (an explicit event, not a sleep)
    while not release.exists():
        if time.monotonic() > deadline:
            sys.exit(4)
        time.sleep(0.001)
    lock.release(acquired, success=True)
"""


def test_exactly_one_of_several_processes_acquires(tmp_path):
    root = tmp_path / "mem"
    private_dir(root)
    go = tmp_path / "go"
    release = tmp_path / "release"
    procs = []
    for n in range(3):
        ready = tmp_path / f"ready-{n}"
        proc = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(root), str(go), str(ready), str(release)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append((ready, proc))

    def all_ready() -> bool:
        assert all(p.poll() is None for _, p in procs)
        return all(ready.exists() for ready, _ in procs)

    wait_until(all_ready, timeout=30, interval=0.005, what="every locker ready")
    go.write_text("go")
    outcomes = []
    for _, proc in procs:  # each says its outcome while the winner still holds the lock
        assert proc.stdout is not None
        outcomes.append(proc.stdout.readline().strip())
    release.write_text("release")
    for _, proc in procs:
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
    assert sorted(outcomes) == ["acquired", "blocked", "blocked"]
    lock = root / ".consolidate-lock"
    assert lock.read_text() == ""  # the winner released it, recording its consolidation
    assert abs(lock.stat().st_mtime - time.time()) < 10


def test_a_live_fresh_holder_blocks(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    seed(dream.store.root)
    sleeper = spawn_sleeper()
    try:
        lock = make_lock(dream.store.root, age=600, body=f"{sleeper.pid}\n")
        mtime = lock.stat().st_mtime
        assert dream.lock.holder() == sleeper.pid
        assert dream.lock.try_acquire() is None
        result = dream.consolidate()
        assert not result.ran
        assert result.reason == f"the lock is held by PID {sleeper.pid}"
        assert lock.read_text() == f"{sleeper.pid}\n"
        assert lock.stat().st_mtime == mtime
        assert len(memory_files(dream.store.root)) == 7  # nothing merged
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_dead_holder_is_reclaimed(tmp_path):
    root = private_dir(tmp_path / "mem")
    pid = dead_pid()
    lock = make_lock(root, age=60, body=f"{pid}\n")
    mtime = lock.stat().st_mtime
    consolidation = ConsolidationLock(root)
    assert consolidation.holder() is None
    acquired = consolidation.try_acquire()
    assert acquired is not None
    assert (acquired.prior_body, acquired.prior_mtime) == (f"{pid}\n", mtime)
    assert lock.read_text().strip() == str(os.getpid())
    consolidation.release(acquired, success=True)
    assert lock.read_text() == ""


def test_a_live_but_stale_holder_is_reclaimed(tmp_path):
    root = private_dir(tmp_path / "mem")
    sleeper = spawn_sleeper()
    try:
        lock = make_lock(root, age=HOUR + 60, body=f"{sleeper.pid}\n")
        consolidation = ConsolidationLock(root)
        assert consolidation.holder() is None
        assert consolidation.try_acquire(pid=4242) is not None
        assert lock.read_text() == "4242\n"
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("body", ["", "not a pid\n", "-5\n", "0\n"])
def test_a_lock_without_a_live_pid_is_free(tmp_path, body):
    root = private_dir(tmp_path / "mem")
    make_lock(root, age=10, body=body)
    assert ConsolidationLock(root).holder() is None
    assert ConsolidationLock(root).try_acquire() is not None


# -- the trigger ----------------------------------------------------------------------------------


def test_session_end_consolidates_in_the_background(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    root = dream.store.root
    seed(root)
    lock = make_lock(root, age=2 * DAY)
    before = lock.stat().st_mtime
    make_sessions(frame, [f"earlier-{n}" for n in range(5)])
    session = frame.session("current")
    session.close()
    assert lock.stat().st_mtime > before + DAY
    assert lock.read_text() == ""
    files = memory_files(root)
    assert "tabs-old.md" not in files and "deploy-a.md" not in files
    assert "tabs-new.md" in files and "deploy-b.md" in files
    assert sorted(index_entries((root / "MEMORY.md").read_text())) == files


def test_session_end_with_a_gate_closed_does_nothing(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    root = dream.store.root
    seed(root)
    lock = make_lock(root, age=2 * DAY)
    before = lock.stat().st_mtime
    make_sessions(frame, [f"earlier-{n}" for n in range(4)])
    files = memory_files(root)
    frame.session("current").close()
    assert lock.stat().st_mtime == before
    assert memory_files(root) == files


def test_session_end_respects_a_holder(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    root = dream.store.root
    seed(root)
    sleeper = spawn_sleeper()
    try:
        lock = make_lock(root, age=30 * HOUR, body=f"{sleeper.pid}\n")  # stale by age: reclaimed
        make_sessions(frame, [f"earlier-{n}" for n in range(5)])
        frame.session("current").close()
        assert lock.read_text() == ""
        assert "tabs-old.md" not in memory_files(root)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_state_files_written_by_real_sessions_count(dr_frame):
    frame = dr_frame()
    dream = dream_of(frame)
    private_dir(dream.store.root)
    for n in range(5):
        session = frame.session(f"real-{n}")
        session.on_message({"role": "user", "content": "hi"})
        session.close()
    (dream.store.root / ".dream-scan").unlink(missing_ok=True)
    assert dream.sessions_since(0.0, exclude="real-0") == [f"real-{n}" for n in range(1, 5)]
    saved = json.loads((frame.project_home / "real-1" / "state.json").read_text())
    assert isinstance(saved, dict)
