"""``memframe ui``: the local web view of the project's memory, on 127.0.0.1 behind a token."""

from __future__ import annotations

import argparse
import sys

from memframe.cli._common import add_frame_arguments, open_frame_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_frame_arguments(parser)
    parser.add_argument(
        "--port", type=int, default=8766, help="port on 127.0.0.1 (8766; 0 for any free one)"
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="print the URL only; do not open a browser"
    )


def run(args: argparse.Namespace) -> int:
    from memframe.cli import EXIT_OK, CommandError

    if not 0 <= args.port <= 65_535:
        raise CommandError(f"--port must be 0-65535, got {args.port}")
    try:
        from memframe.ui.server import prepare, serve_forever
    except ImportError as exc:
        raise CommandError(str(exc)) from exc
    with open_frame_from_args(args) as frame:
        try:
            running = prepare(frame, args.port)
        except OSError as exc:
            raise CommandError(f"cannot listen on 127.0.0.1:{args.port}: {exc}") from exc
        print(f"memframe ui for {frame.project_dir}", flush=True)
        print(f"  open: {running.url}", flush=True)
        print("  (the token is needed once per browser; Ctrl-C stops the server)", flush=True)
        if not args.no_browser:
            import webbrowser

            try:
                webbrowser.open(running.url)
            except Exception as exc:  # no browser here: the printed URL still works
                print(f"  could not open a browser: {exc}", file=sys.stderr)
        serve_forever(running)
    return EXIT_OK
