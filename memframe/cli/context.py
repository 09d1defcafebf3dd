"""``memframe context --session ID``: what the layers would inject into the agent's prompt now, and
what they would keep at the next compaction. Read-only: the session is opened with
``MemoryFrame.inspect`` (no session hook fires, its state is not saved)."""

from __future__ import annotations

import argparse

from memframe.cli._common import add_frame_arguments, open_frame_from_args, print_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_frame_arguments(parser)
    parser.add_argument("--session", required=True, help="the session id")
    parser.add_argument("--prompt", help="the user's prompt (layers may pick context for it)")
    parser.add_argument("--json", action="store_true", help="print the blocks as JSON")


def run(args: argparse.Namespace) -> int:
    from memframe.cli import EXIT_OK, CommandError
    from memframe.session import SessionNotFoundError

    session_id = args.session
    with open_frame_from_args(args) as frame:
        try:
            session = frame.inspect(session_id)
        except (ValueError, SessionNotFoundError) as exc:
            raise CommandError(str(exc)) from exc
        with session:  # read-only: no session hook fires, nothing is saved
            blocks = session.context_blocks(args.prompt)
            kept = session.pre_compact()
    if args.json:
        print_json(
            {
                "session": session_id,
                "context": [{"source": b.source, "title": b.title, "text": b.text} for b in blocks],
                "at_compaction": kept,
            }
        )
        return EXIT_OK
    print(f"# Injected into the prompt ({len(blocks)} block(s))\n")
    for block in blocks:
        print(f"[{block.source}]")
        print(block.render())
    if not blocks:
        print("(nothing)\n")
    print(f"# Kept at the next compaction ({len(kept)} part(s))\n")
    for text in kept:
        print(text.rstrip() + "\n")
    if not kept:
        print("(nothing)")
    return EXIT_OK
