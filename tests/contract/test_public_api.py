"""The public surface: a program using only public names runs, and mypy (strict on it)
accepts it — so the names, their types and ``py.typed`` are what a layer author relies on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import memframe

EXAMPLE = Path(__file__).with_name("public_api_example.py")


def test_every_exported_name_resolves() -> None:
    for name in memframe.__all__:
        assert getattr(memframe, name) is not None, name


def test_a_program_using_only_public_names_runs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_mypy_accepts_it_strictly(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(EXAMPLE),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
