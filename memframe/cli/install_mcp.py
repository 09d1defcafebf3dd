"""``memframe install-mcp --client NAME``: add memframe's MCP server to a client's config."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from memframe.mcp.clients import CLIENTS

    parser.add_argument(
        "--client", required=True, choices=CLIENTS, help="the MCP client to configure"
    )
    parser.add_argument(
        "--scope",
        choices=("user", "project"),
        default="user",
        help="user: your own configuration, every project (the default); project: the "
        "configuration file of the project in --dir (not for claude-desktop)",
    )
    parser.add_argument(
        "--dir", type=Path, default=Path("."), help="the project directory (default: .)"
    )
    parser.add_argument(
        "--project",
        dest="serve_project",
        type=Path,
        default=None,
        help="the project the server serves (default: the client's working directory; "
        "Cursor's open folder; for claude-desktop, --dir)",
    )
    parser.add_argument(
        "--home", type=Path, default=None, help="memory base the server uses (default: its own)"
    )
    parser.add_argument(
        "--command",
        dest="server_command",
        default=None,
        help="how the client starts memframe, e.g. 'uvx memframe' (default: the memframe "
        "executable next to this Python, else '<python> -m memframe')",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the change as a diff; write nothing"
    )
    parser.add_argument(
        "--uninstall", action="store_true", help="remove memframe's server entry instead"
    )


def run(args: argparse.Namespace) -> int:
    import shlex

    from memframe.cli import EXIT_OK, CommandError
    from memframe.config.agent_files import ConfigFileError, diff
    from memframe.mcp import clients

    project_dir = args.dir.expanduser().resolve()
    serve = args.serve_project.expanduser().resolve() if args.serve_project else None
    home = args.home.expanduser().resolve() if args.home else None
    try:
        command = clients.command_from(args.server_command) if args.server_command else None
        target = clients.target_for(
            args.client,
            args.scope,
            project_dir=project_dir,
            serve_project=serve,
            home=home,
            command=command,
        )
        change = clients.plan(target, uninstall=args.uninstall)
    except ConfigFileError as exc:
        raise CommandError(str(exc)) from exc
    path = target.path
    if not change.changed:
        state = "not installed" if args.uninstall else "already installed"
        print(f"the memframe MCP server is {state} in {path}: nothing to change")
        return EXIT_OK
    assert change.after is not None
    if args.dry_run:
        print(diff(path, change.before, change.after), end="")
        print(f"(dry run: {path} was not changed)")
        return EXIT_OK
    try:
        written = clients.apply(change)
    except (ConfigFileError, OSError) as exc:
        raise CommandError(str(exc)) from exc
    assert written is not None
    if args.uninstall:
        done = "removed the memframe MCP server from"
    else:
        done = f"installed the memframe MCP server for {args.client} in"
    extra = []
    if written.target != path:
        extra.append(f"written through the symlink to {written.target}")
    if written.backup is not None:
        extra.append(f"previous file kept as {written.backup.name}")
    print(f"{done} {path}" + (f" ({'; '.join(extra)})" if extra else ""))
    if not args.uninstall:
        entry = target.entry
        print("command: " + shlex.join([entry["command"], *entry["args"]]))
        for note in target.notes:
            print(f"note: {note}")
    return EXIT_OK
