"""``memframe hook-worker``: internal. The background worker ``memframe hook`` starts: it reads
the new part of a session's transcript and drives the layers (see memframe.agents.worker)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", required=True, help="the Claude Code session id")
    parser.add_argument("--cwd", required=True, help="the session's working directory")
    parser.add_argument("--transcript", default=None, help="the session's transcript (JSONL)")
    parser.add_argument(
        "--linger",
        type=float,
        default=None,
        help="seconds to wait for more work before exiting "
        "(default: the hook.worker_linger_seconds setting, or 10)",
    )


def run(args: argparse.Namespace) -> int:
    from memframe.agents.worker import run_worker

    return run_worker(args.session, args.cwd, args.transcript, linger=args.linger)
