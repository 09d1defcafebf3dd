"""Options and helpers shared by subcommands (kept import-light)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame


def add_frame_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project", type=Path, default=Path("."), help="project directory (default: .)"
    )
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="memory base (default: $MEMFRAME_HOME or ~/.memframe)",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="model backend: offline, anthropic, openai, claude-cli (default: $MEMFRAME_MODEL "
        "or offline)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail on the first layer error instead of reporting it",
    )


def open_frame_from_args(args: argparse.Namespace, **options: Any) -> MemoryFrame:
    """Open the frame the arguments describe; configuration problems become CommandError."""
    from memframe._manager import LayerLoadError
    from memframe.cli import CommandError
    from memframe.config import ConfigError
    from memframe.frame import open_frame

    if args.home is not None:
        options.setdefault("home", args.home)
    if args.strict:
        options.setdefault("strict", True)
    if getattr(args, "model", None):
        options.setdefault("model", args.model)
    try:
        return open_frame(args.project, **options)
    except (ConfigError, LayerLoadError, NotADirectoryError) as exc:
        raise CommandError(str(exc)) from exc


def check_model_backend(frame: MemoryFrame) -> None:
    """Build the configured model backend now, so a missing key is an error before any work."""
    from memframe.cli import CommandError
    from memframe.models import ModelNotConfiguredError

    try:
        frame.model_backend()
    except ModelNotConfiguredError as exc:
        frame.close()
        raise CommandError(str(exc)) from exc


def print_json(data: object) -> None:
    import sys

    import orjson

    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()
