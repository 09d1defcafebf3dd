"""The ``memframe`` command. Subcommand modules are imported only when they run, so the CLI
starts fast (``memframe hook`` runs on every agent event)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from memframe._version import __version__
from memframe.errors import BackendError

if TYPE_CHECKING:
    from memframe.cli._commands import PluginCommand

# name -> (module under memframe.cli, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "replay the bundled agent session through every layer"),
    "replay": ("replay", "replay a Claude Code or Codex transcript through all layers"),
    "context": ("context", "print what the layers would inject for a session"),
    "memory": ("memory", "list, show, add, forget memories; doctor checks the directory"),
    "dream": ("dream", "consolidate the memory directory (--now skips the gates)"),
    "docs": ("docs", "list the tracked Magic Docs, or update one now"),
    "serve": ("serve", "run the team memory server; manage its tokens"),
    "plugins": ("plugins", "list loaded layers and their distributions"),
    "scan": ("scan", "scan files, directories, transcripts or a team database for secrets"),
    "redact": ("redact", "replace secrets with [REDACTED]: a stream, or files in place"),
    "sync": ("sync", "pull, push or compare team memory with the team server"),
    "hook": ("hook", "agent hook adapter (Claude Code, Codex, Gemini CLI, Cursor): JSON on stdin"),
    "hook-worker": ("hook_worker", "internal: the hook's background worker"),
    "install-hooks": ("install_hooks", "add memframe's hooks to an agent's settings (--agent)"),
    "mcp": ("mcp", "serve the project's memory to MCP clients (stdio, or HTTP with --http)"),
    "install-mcp": ("install_mcp", "add memframe's MCP server to a client's configuration"),
    "ui": ("ui", "browse and edit the memory in a local web app (127.0.0.1, token)"),
    "bench": ("bench", "run the benchmarks of a source checkout (python -m benches)"),
}

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class CommandError(Exception):
    """A user-facing error: printed as ``memframe: error: …`` with exit code 2."""


def _version_text() -> str:
    from memframe import _backend

    native = (
        f", native {_backend.NATIVE_VERSION} {_backend.BUILD_PROFILE}"
        if (_backend.NATIVE_VERSION)
        else ""
    )
    return f"memframe {__version__} (backend {_backend.BACKEND}{native}; {_backend.ENGINE})"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(_version_text())
        parser.exit()


# commands whose arguments go, unparsed, to another program (``args.args``)
PASS_THROUGH = frozenset({"bench"})


def build_parser(
    plugin_commands: Mapping[str, PluginCommand] | None = None, *, chosen: str | None = None
) -> argparse.ArgumentParser:
    """The ``memframe`` parser: the built-in commands, then ``plugin_commands`` (the layers';
    only ``chosen``, the one about to run, gets its arguments)."""
    parser = argparse.ArgumentParser(
        prog="memframe",
        description="Four-layer memory for AI agents.",
        epilog="Exit codes: 0 ok, 1 failure (or findings), 2 usage or input error.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(f"memframe.cli.{module}").add_arguments(command)
    if plugin_commands:
        from memframe.cli._commands import add_parser

        for name, plugin in plugin_commands.items():
            add_parser(sub, plugin, with_arguments=name == chosen)
    return parser


def main(argv: Sequence[str] | None = None, *, layers: Sequence[object] | None = None) -> int:
    """Run ``memframe`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code.

    :param layers: the layers whose ``register_commands`` add subcommands, instead of the
        installed ones (for testing a layer's commands); they also join the frame a command
        runs with.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["hook"]:  # runs on every agent event: skip building the full parser
        from memframe.cli.hook import run_fast

        return run_fast(args_list[1:])
    try:
        plugin_commands: dict[str, PluginCommand] = {}
        from memframe.cli._commands import wants_commands

        if wants_commands(args_list, COMMANDS):
            from memframe.cli._commands import collect_commands

            try:
                plugin_commands = collect_commands(tuple(COMMANDS), layers)
            except CommandError as exc:
                if args_list[:1] not in ([], ["-h"], ["--help"]):
                    raise
                # the help is still shown, without the layers' commands
                print(f"memframe: warning: no layer commands listed: {exc}", file=sys.stderr)
        chosen = args_list[0] if args_list and args_list[0] in plugin_commands else None
        parser = build_parser(plugin_commands, chosen=chosen)
        try:  # argparse exits for --help and usage errors: that is main's exit code
            args, extra = parser.parse_known_args(args_list)
            if extra and args.command not in PASS_THROUGH:
                parser.error(f"unrecognized arguments: {' '.join(extra)}")
        except SystemExit as exc:
            if exc.code is None:
                return EXIT_OK
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        if args.command in PASS_THROUGH:
            args.args = extra
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if args.command in plugin_commands:
            from memframe.cli._commands import run_command

            return run_command(plugin_commands[args.command], args, layers or ())
        module = importlib.import_module(f"memframe.cli.{COMMANDS[args.command][0]}")
        code: int = module.run(args)
    except CommandError as exc:
        print(f"memframe: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("memframe: interrupted", file=sys.stderr)
        return 130
    except BackendError as exc:
        print(f"memframe: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return code
