"""Run the ``memframe`` command in a subprocess the way a user would, isolated from the
developer's MEMFRAME_* settings (only MEMFRAME_BACKEND passes, so CI's python-backend run holds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def memframe_env(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without MEMFRAME_* (but MEMFRAME_BACKEND), plus ``extra_env``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFRAME_")}
    if "MEMFRAME_BACKEND" in os.environ:
        env["MEMFRAME_BACKEND"] = os.environ["MEMFRAME_BACKEND"]
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
