"""Options and helpers shared by subcommands (kept import-light)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.scanner import SecretScanner


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


def add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    """``--rules FILE`` (repeatable) and ``--no-config``: which rules a secret scan applies."""
    parser.add_argument(
        "--rules",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="extra rules (memframe or gitleaks format) added to the configured ones (repeatable)",
    )
    parser.add_argument(
        "--no-config",
        action="store_true",
        help="only the bundled rules (and --rules): ignore the `rules_file` setting and the rules "
        "layers register",
    )


def scanner_from_args(args: argparse.Namespace) -> SecretScanner:
    """The rules memframe applies before anything is shared — the bundled ones, the user's
    ``rules_file`` setting and what installed layers register (unless ``--no-config``) — plus
    every ``--rules`` file."""
    from memframe._manager import LayerLoadError
    from memframe.cli import CommandError
    from memframe.config import ConfigError
    from memframe.frame import open_frame
    from memframe.rules import RuleError, load_rule_file, load_rules, merge
    from memframe.scanner import SecretScanner

    try:
        if args.no_config:
            rules = load_rules()
        else:
            # only installed layers can add rules: the built-in ones are not loaded
            with open_frame(Path.cwd(), builtin_layers=()) as frame:
                rules = frame.secret_scanner().rules
        for path in args.rules:
            rules = merge(rules, load_rule_file(path))
    except (RuleError, OSError, ConfigError, LayerLoadError) as exc:
        raise CommandError(str(exc)) from exc
    return SecretScanner(rules)
