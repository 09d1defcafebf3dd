"""``memframe hook``: Claude Code's hook command. The event arrives as JSON on stdin; the answer
follows Claude Code's hook contract (see docs/claude-code.md). ``main()`` dispatches here without
building the full command parser, so the hook starts fast."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

DESCRIPTION = (
    "Claude Code hook adapter: reads one hook event (JSON) on stdin and answers per Claude "
    "Code's hook contract. Install it with `memframe install-hooks`."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.epilog = (
        "Exit codes: 0 (always, also on memframe's own errors, which go to "
        "<memory base>/logs/hook.log), 2 when a write would put a secret into team memory."
    )


def run(args: argparse.Namespace | None = None) -> int:
    from memframe.hook.adapter import run as run_hook

    if sys.stdin is None or sys.stdin.isatty():
        print(
            "memframe hook reads a Claude Code hook event (JSON) on stdin; "
            "see `memframe install-hooks`",
            file=sys.stderr,
        )
        return 0
    return run_hook(sys.stdin.buffer, sys.stdout.buffer, sys.stderr)


def run_fast(argv: Sequence[str]) -> int:
    """``memframe hook …`` without the full parser. Arguments are ignored (newer hook
    configurations may pass some) except ``-h``/``--help``."""
    if "-h" in argv or "--help" in argv:
        parser = argparse.ArgumentParser(prog="memframe hook")
        add_arguments(parser)
        parser.print_help()
        return 0
    return run()
