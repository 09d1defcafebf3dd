"""Run the ``memframe`` command in a subprocess the way a user would, isolated from the
developer's MEMFRAME_* settings (only MEMFRAME_BACKEND passes, so CI's python-backend run holds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def memframe_env(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without MEMFRAME_* (but MEMFRAME_BACKEND and the test session's
    MEMFRAME_SCAN_CACHE, which keeps the compiled database and validated rules out of the test's
    home, often inside the directory a test scans), plus ``extra_env``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFRAME_")}
    for kept in ("MEMFRAME_BACKEND", "MEMFRAME_SCAN_CACHE"):
        if kept in os.environ:
            env[kept] = os.environ[kept]
    env.update(extra_env or {})
    return env


def run_memframe(
    *args: str, cwd: Path | None = None, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memframe", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=memframe_env(extra_env),
        timeout=120,
        check=False,
    )


def run_memframe_bytes(
    *args: str, stdin: bytes, cwd: Path | None = None, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``run_memframe`` with ``stdin`` as standard input, output as bytes."""
    return subprocess.run(
        [sys.executable, "-m", "memframe", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=memframe_env(extra_env),
        timeout=120,
        check=False,
    )
