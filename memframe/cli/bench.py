"""``memframe bench [ARGS]``: the benchmarks of ``benches/`` (``python -m benches ARGS``).

The benchmarks compare memframe's engines with each other and with peer tools, side by side in
one run; they live in the source repository, next to the package, with the peers they need
(``pip install -e '.[bench]'``). From an installed wheel there is nothing to run: the command
says where to find them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import memframe

REPO_ROOT = Path(memframe.__file__).resolve().parent.parent


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "Every argument goes to `python -m benches`: --quick, --only NAME…, --json PATH, "
        "--list (see `memframe bench --list`)."
    )


def run(args: argparse.Namespace) -> int:
    from memframe.cli import CommandError

    if not (REPO_ROOT / "benches" / "__main__.py").is_file():
        raise CommandError(
            "the benchmarks ship with memframe's source repository (benches/), not with the "
            "installed package: in a checkout, run `./dev bench` or `memframe bench` there"
        )
    command = [sys.executable, "-m", "benches", *args.args]
    return subprocess.run(command, cwd=REPO_ROOT, check=False).returncode
