"""``memframe._process``: the one is-this-PID-alive check, and the two places that use it (the
consolidation lock of memdir, the hook worker check)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import memframe._process
from memframe._process import Probe, pid_alive, probe_pid
from memframe.agents.session_files import is_hook_worker, worker_running
from memframe.memdir.lock import ConsolidationLock
from tests.waiting import wait_until

NOBODY = 65534


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    # "hook-worker" in its command line, like the real worker's
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "hook-worker"])
    yield proc
    proc.kill()
    proc.wait(timeout=30)


def test_this_process_is_alive_and_ours():
    assert probe_pid(os.getpid()) is Probe.OURS
    assert pid_alive(os.getpid())


def test_a_reaped_process_is_gone():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    assert probe_pid(proc.pid) is Probe.GONE
    assert not pid_alive(proc.pid)


@pytest.mark.parametrize("pid", [0, -1, True, 2**70])
def test_what_is_not_a_pid_is_gone(pid):
    assert probe_pid(pid) is Probe.GONE


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="zombies are seen through /proc")
def test_a_zombie_is_gone():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = Path(f"/proc/{proc.pid}/stat")
    # exited, not reaped yet
    wait_until(
        lambda: stat.read_bytes().rpartition(b")")[2][1:2] == b"Z", timeout=30, what="the exit"
    )
    try:
        os.kill(proc.pid, 0)  # the kernel still knows it...
        assert probe_pid(proc.pid) is Probe.GONE  # ...but it holds nothing any more
    finally:
        proc.wait(timeout=30)


def probe_as_nobody(pid: int) -> str:
    """``probe_pid(pid)`` and ``pid_alive(pid)`` answered by a process running as nobody (which
    may not signal ours: EPERM), running this very module's source."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 to run as nobody")
    source = Path(memframe._process.__file__).read_text(encoding="utf-8")
    source += f"\nprint(probe_pid({pid}).value, pid_alive({pid}))\n"
    done = subprocess.run(
        [python, "-"],
        input=source,
        capture_output=True,
        text=True,
        user=NOBODY,
        group=NOBODY,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def foreign_pid() -> int | None:
    """A live process of another user, when we are not root."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid != os.getuid():
                    return int(entry.name)
            except OSError:
                continue
    return None


def test_another_users_process_is_alive_but_foreign(sleeper, tmp_path):
    if os.getuid() == 0:
        # root may signal anything: ask from a process running as nobody instead
        assert probe_as_nobody(sleeper.pid) == "foreign True"
        assert probe_as_nobody(2**22 + 12345) == "gone False"
        return
    pid = foreign_pid()
    if pid is None:
        pytest.skip("no process of another user to probe")
    assert probe_pid(pid) is Probe.FOREIGN
    assert pid_alive(pid)
    assert not is_hook_worker(pid)  # it exists, but it is never our worker
    lock = ConsolidationLock(tmp_path)
    assert lock.try_acquire(pid=pid) is not None
    assert lock.holder() == pid  # a consolidation run by another user still holds the lock


# -- the two users of the check ------------------------------------------------------------------


def test_the_hook_worker_check(sleeper):
    assert is_hook_worker(sleeper.pid)
    assert worker_running({"worker": {"pid": sleeper.pid}})
    assert not is_hook_worker(os.getpid())  # alive, but not a worker (a recycled pid)
    assert not worker_running({"worker": {"pid": True}})
    assert not worker_running({"worker": {"pid": "1"}})
    sleeper.kill()
    sleeper.wait(timeout=30)
    assert not is_hook_worker(sleeper.pid)


def test_the_consolidation_lock_is_held_by_a_live_pid_and_freed_by_a_dead_one(tmp_path, sleeper):
    lock = ConsolidationLock(tmp_path)
    assert lock.try_acquire(pid=sleeper.pid) is not None
    assert lock.holder() == sleeper.pid
    assert lock.try_acquire() is None  # held: nobody else gets it
    sleeper.kill()
    sleeper.wait(timeout=30)
    assert lock.holder() is None
    assert lock.try_acquire() is not None
