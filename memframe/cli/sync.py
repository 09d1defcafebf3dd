"""``memframe sync pull|push|status``: team memory (``<memory dir>/team/``) and the team server.

Exit codes: 0 done; 1 something was held back (a secret, a conflict), refused or failed;
2 usage or configuration errors (e.g. no server configured).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from memframe.cli._common import add_frame_arguments, open_frame_from_args, print_json

if TYPE_CHECKING:
    from memframe.team_sync.client import (
        BlockedReport,
        PullResult,
        PushResult,
        StatusResult,
        TeamSyncClient,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    pull = actions.add_parser("pull", help="bring the server's team memory here (server wins)")
    pull.add_argument(
        "--force",
        action="store_true",
        help="overwrite every file that differs from the server, local edits included",
    )
    push = actions.add_parser(
        "push", help="send changed team files (files with secrets are never sent)"
    )
    push.add_argument(
        "--force",
        action="store_true",
        help="try again even after a permanent failure with nothing changed since",
    )
    status = actions.add_parser("status", help="compare team files with the last sync")
    status.add_argument(
        "--remote", action="store_true", help="also ask the server for its checksums now"
    )
    for sub in (pull, push, status):
        sub.add_argument("--json", action="store_true", help="print JSON")
        sub.add_argument("--server", default=None, help="team server URL (overrides settings)")
        sub.add_argument("--repo", default=None, help="owner/name (default: settings or git)")
        sub.add_argument(
            "--token",
            default=None,
            help="bearer token (prefer MEMFRAME_TEAM_TOKEN: arguments are visible to others)",
        )
        add_frame_arguments(sub)


def _client(frame: Any, args: argparse.Namespace) -> TeamSyncClient:
    from memframe.cli import CommandError
    from memframe.config import ConfigError
    from memframe.team_sync.client import client_for_frame

    try:
        return client_for_frame(frame, server=args.server, repo=args.repo, token=args.token)
    except ConfigError as exc:
        raise CommandError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    from memframe.cli import EXIT_FAILURE, EXIT_OK, CommandError
    from memframe.team_sync.settings import SyncError

    with open_frame_from_args(args) as frame:
        client = _client(frame, args)
        try:
            if args.action == "pull":
                pulled = client.pull(force=args.force)
                _show(pulled.to_json(), args.json, lambda: _print_pull(pulled))
                return EXIT_OK if pulled.ok else EXIT_FAILURE
            if args.action == "push":
                pushed = client.push(force=args.force)
                _show(pushed.to_json(), args.json, lambda: _print_push(pushed))
                return EXIT_OK if pushed.ok else EXIT_FAILURE
            status = client.status(remote=args.remote)
        except SyncError as exc:  # e.g. the lock is held by a sync that does not finish
            raise CommandError(str(exc)) from exc
        _show(status.to_json(), args.json, lambda: _print_status(status))
        failed = bool(status.remote and "error" in status.remote)
        return EXIT_OK if status.ok and not failed else EXIT_FAILURE


def _show(data: dict[str, Any], as_json: bool, text: Any) -> None:
    if as_json:
        print_json(data)
    else:
        text()


def _err(line: str) -> None:
    print(line, file=sys.stderr)


def _blocked_line(blocked: BlockedReport) -> str:
    return f"  team/{blocked.key}: blocked, {blocked.describe()}"


def _print_pull(result: PullResult) -> None:
    where = f"{result.server} ({result.repo})"
    if result.error:
        _err(f"pull from {where} failed: {result.error}")
    elif result.status == "not-modified":
        print(f"pull from {where}: already up to date")
    elif result.status == "empty":
        print(f"pull from {where}: nothing stored on the server yet")
    else:
        print(
            f"pull from {where}: {len(result.written)} written, {len(result.unchanged)} "
            f"unchanged, {len(result.kept)} local edit(s) kept"
        )
    for key in result.written:
        print(f"  team/{key}: written")
    for key in result.kept:
        print(f"  team/{key}: kept (edited here, unchanged on the server; push sends it)")
    for key, why in result.skipped.items():
        print(f"  team/{key}: skipped, {why}")
    for key, why in result.rejected.items():
        _err(f"  {key!r}: refused, {why}")
    for key, why in result.errors.items():
        _err(f"  team/{key}: failed, {why}")


def _print_push(result: PushResult) -> None:
    where = f"{result.server} ({result.repo})"
    if result.error:
        _err(f"push to {where} failed: {result.error}")
    elif result.pushed:
        print(
            f"push to {where}: {len(result.pushed)} sent in {result.batches} "
            f"request{'s' if result.batches != 1 else ''}"
        )
    else:
        print(f"push to {where}: nothing to send")
    for key in result.pushed:
        print(f"  team/{key}: sent")
    for blocked in result.blocked:
        _err(_blocked_line(blocked))
    if result.blocked:
        _err("  (files with secrets are never sent: remove the secret, then push again)")
    for key, why in result.conflicts.items():
        _err(f"  team/{key}: not sent, {why}")
    for key, why in result.skipped.items():
        print(f"  team/{key}: skipped, {why}")
    for key in result.behind:
        print(f"  team/{key}: newer on the server (pull brings it)")


def _ago(when: float | None) -> str:
    if when is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))


def _print_status(result: StatusResult) -> None:
    print(f"team memory {result.memory_dir}/team  <->  {result.server} ({result.repo})")
    print(
        f"  {result.local_entries} local entries, {result.in_sync} in sync, "
        f"{len(result.pending)} to push, {len(result.blocked)} blocked"
    )
    print(f"  last pull: {_ago(result.last_pull)}; last push: {_ago(result.last_push)}")
    for key in result.pending:
        print(f"  team/{key}: changed, not pushed yet")
    for blocked in result.blocked:
        print(_blocked_line(blocked))
    for key in result.conflicts:
        print(f"  team/{key}: conflict, changed here and on the server (pull: server wins)")
    for key in result.behind:
        print(f"  team/{key}: newer on the server (pull brings it)")
    for key in result.server_only:
        print(f"  team/{key}: on the server only")
    for key, why in result.skipped.items():
        print(f"  team/{key}: skipped, {why}")
    if result.permanent_failure:
        print(f"  pushes paused: {result.permanent_failure['message']}")
    elif result.last_error:
        print(f"  last error: {result.last_error['message']}")
    if result.remote is not None:
        remote = result.remote
        if "error" in remote:
            _err(f"  server: {remote['error']}")
        elif not remote["stored"]:
            print("  server: nothing stored yet")
        else:
            state = "up to date" if remote["up_to_date"] else "changed since the last sync"
            print(f"  server: {remote['entries']} entries, {state}")
            for key in remote["changed_on_server"]:
                print(f"  team/{key}: changed on the server")
