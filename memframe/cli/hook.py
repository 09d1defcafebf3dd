"""``memframe hook [--agent NAME]``: the hook command of Claude Code (the default), Codex CLI,
Gemini CLI or Cursor. The event arrives as JSON on stdin; the answer follows that agent's hook
contract (see docs/claude-code.md, docs/codex.md, docs/gemini-cli.md, docs/cursor.md).
``main()`` dispatches here without building the full command parser, so the hook starts fast."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

DESCRIPTION = (
    "Agent hook adapter: reads one hook event (JSON) on stdin and answers per the agent's hook "
    "contract (Claude Code unless --agent says otherwise). Install it with "
    "`memframe install-hooks [--agent NAME]`."
)
AGENTS = ("claude-code", "codex", "gemini", "cursor")  # as memframe.agents.contracts.AGENTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.add_argument(
        "--agent",
        choices=AGENTS,
        default="claude-code",
        help="whose hook contract to speak (default: claude-code)",
    )
    parser.epilog = (
        "Exit codes: 0 (always, also on memframe's own errors, which go to "
        "<memory base>/logs/hook.log), 2 when a write would put a secret into team memory."
    )


def run(args: argparse.Namespace | None = None) -> int:
    from memframe.agents.adapter import run as run_hook

    agent = getattr(args, "agent", None) or "claude-code"
    if sys.stdin is None or sys.stdin.isatty():
        print(
            f"memframe hook reads a {agent} hook event (JSON) on stdin; "
            "see `memframe install-hooks`",
            file=sys.stderr,
        )
        return 0
    return run_hook(sys.stdin.buffer, sys.stdout.buffer, sys.stderr, agent)


def agent_of(argv: Sequence[str]) -> str | None:
    """The ``--agent NAME`` (or ``--agent=NAME``) in ``argv``: ``claude-code`` when absent,
    ``None`` when the name is not one memframe knows."""
    name = "claude-code"
    for index, word in enumerate(argv):
        if word == "--agent":
            name = argv[index + 1] if index + 1 < len(argv) else ""
        elif word.startswith("--agent="):
            name = word.partition("=")[2]
    return name if name in AGENTS else None


def run_fast(argv: Sequence[str]) -> int:
    """``memframe hook …`` without the full parser. Arguments other than ``--agent`` are ignored
    (newer hook configurations may pass some) except ``-h``/``--help``."""
    if "-h" in argv or "--help" in argv:
        parser = argparse.ArgumentParser(prog="memframe hook")
        add_arguments(parser)
        parser.print_help()
        return 0
    agent = agent_of(argv)
    if agent is None:
        # never fail the host: an unknown agent is told on stderr, the event is not handled
        print(f"memframe hook: unknown --agent (known: {', '.join(AGENTS)})", file=sys.stderr)
        return 0
    return run(argparse.Namespace(agent=agent))
