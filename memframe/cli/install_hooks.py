"""``memframe install-hooks``: add memframe's hook entries to Claude Code's settings."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--user",
        dest="target",
        action="store_const",
        const="user",
        help="your settings: $CLAUDE_CONFIG_DIR/settings.json or ~/.claude/settings.json "
        "(the default)",
    )
    target.add_argument(
        "--project",
        dest="target",
        action="store_const",
        const="project",
        help="the project's shared settings: <dir>/.claude/settings.json",
    )
    parser.set_defaults(target="user")
    parser.add_argument(
        "--dir", type=Path, default=Path("."), help="the project directory for --project"
    )
    parser.add_argument(
        "--command",
        dest="hook_command",  # not "command": that is the subcommand's name
        default=None,
        help="the hook command (default: the memframe executable next to this Python, "
        "followed by 'hook')",
    )
    parser.add_argument(
        "--timeout", type=int, default=None, help="seconds Claude Code lets the hook run (30)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the change as a diff; write nothing"
    )
    parser.add_argument(
        "--uninstall", action="store_true", help="remove memframe's entries instead"
    )


def run(args: argparse.Namespace) -> int:
    from memframe.cli import EXIT_OK, CommandError
    from memframe.hook import install

    if args.target == "project":
        path = install.project_settings_path(args.dir.resolve())
    else:
        path = install.user_settings_path()
    timeout = install.DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    if timeout < 1:
        raise CommandError("--timeout must be at least 1 second")
    command = args.hook_command if args.hook_command is not None else install.default_command()
    if not command.strip():
        raise CommandError("--command must not be empty")
    if not install.is_memframe_command(command):
        raise CommandError(
            f"--command {command!r} does not run `memframe hook`: memframe would not recognise "
            "its own entry on the next run"
        )
    try:
        settings, before = install.load_settings(path)
        if args.uninstall:
            merged = install.remove(settings, where=path)
        else:
            merged = install.merge(settings, command, timeout, where=path)
    except install.InstallError as exc:
        raise CommandError(str(exc)) from exc
    if merged == settings and (before is not None or args.uninstall):
        state = "not installed" if args.uninstall else "already installed"
        print(f"memframe hooks are {state} in {path}: nothing to change")
        return EXIT_OK
    after = install.render(merged)
    if args.dry_run:
        print(install.diff(path, before, after), end="")
        print(f"(dry run: {path} was not changed)")
        return EXIT_OK
    saved = None
    if before is not None:
        saved = install.backup(path)
    mode = path.stat().st_mode & 0o777 if before is not None else 0o600
    install.write_atomic(path, after.encode("utf-8"), mode)
    done = "removed memframe hooks from" if args.uninstall else "installed memframe hooks in"
    print(f"{done} {path}" + (f" (previous file kept as {saved.name})" if saved else ""))
    if not args.uninstall:
        print(f"command: {command}")
    return EXIT_OK
