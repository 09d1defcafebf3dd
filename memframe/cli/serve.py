"""``memframe serve``: run the team memory server; ``memframe serve token add|list|revoke``."""

from __future__ import annotations

import argparse
import logging
import re
import secrets
import signal
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING

from memframe.cli._common import print_json

if TYPE_CHECKING:
    from memframe.server.storage import Storage

DEFAULT_DB = "~/.memframe/team-server.db"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=DEFAULT_DB,
        help=f"sqlite:///PATH, a path, or postgresql://… (default {DEFAULT_DB})",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8787, help="port (8787; 0 = any free port)")
    parser.add_argument("--organization", default="local", help="organizationId in responses")
    parser.add_argument("--max-entries", type=int, default=1_000, help="entries per repo")
    parser.add_argument(
        "--max-body-bytes", type=int, default=1_048_576, help="largest PUT body accepted"
    )
    parser.add_argument(
        "--no-secret-scan", action="store_true", help="do not scan entries for secrets"
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    token = sub.add_parser("token", help="manage bearer tokens (stored hashed)")
    token_actions = token.add_subparsers(dest="token_action", metavar="ACTION", required=True)
    add = token_actions.add_parser("add", help="create a token and print it once")
    add.add_argument("name", help="a name for the token (a person, a CI job)")
    add.add_argument(
        "--repo",
        action="append",
        required=True,
        help="owner/name it may read and write (repeat; '*' for every repo)",
    )
    listing = token_actions.add_parser("list", help="list tokens (never their values)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    revoke = token_actions.add_parser("revoke", help="revoke a token by name or id")
    revoke.add_argument("name", help="name or id")
    for action in (add, listing, revoke):
        action.add_argument("--db", default=argparse.SUPPRESS, help="as for serve")


def _storage(url: str) -> Storage:
    from memframe.cli import CommandError
    from memframe.server import open_storage

    try:
        return open_storage(url)
    except Exception as exc:
        raise CommandError(f"cannot open the database {url!r}: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    from memframe.cli import CommandError
    from memframe.server.app import REPO

    storage = _storage(args.db)
    try:
        if args.action == "token":
            return _token(args, storage, REPO)
        return _serve(args, storage)
    except (KeyError, ValueError) as exc:
        raise CommandError(str(exc.args[0] if exc.args else exc)) from exc
    finally:
        storage.close()


def _token(args: argparse.Namespace, storage: Storage, repo_pattern: re.Pattern[str]) -> int:
    from dataclasses import asdict

    from memframe.cli import CommandError
    from memframe.server.storage import hash_token

    if args.token_action == "add":
        for repo in args.repo:
            if repo != "*" and not repo_pattern.match(repo):
                raise CommandError(f"--repo must be owner/name or '*', got {repo!r}")
        value = "mft_" + secrets.token_urlsafe(32)
        info = storage.add_token(args.name, hash_token(value), tuple(args.repo))
        print(value)
        print(
            f"token {info.name!r} (id {info.id}) for {', '.join(info.repos)}: shown once, "
            "stored only as its hash",
            file=sys.stderr,
        )
        return 0
    if args.token_action == "list":
        tokens = storage.tokens()
        if args.json:
            print_json([asdict(t) for t in tokens])
        else:
            for t in tokens:
                state = "revoked" if t.revoked else "active"
                print(f"{t.id:>4}  {t.name:<24} {state:<8} {', '.join(t.repos)}")
        return 0
    info = storage.revoke_token(args.name)
    print(f"revoked token {info.name!r} (id {info.id})")
    return 0


def _serve(args: argparse.Namespace, storage: Storage) -> int:
    from memframe.server.app import ServerOptions, TeamMemoryServer

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    server_log = logging.getLogger("memframe.server")
    server_log.addHandler(handler)
    server_log.setLevel(logging.INFO)
    options = ServerOptions(
        organization_id=args.organization,
        max_entries=args.max_entries,
        max_body_bytes=args.max_body_bytes,
        scan_secrets=not args.no_secret_scan,
    )
    server = TeamMemoryServer((args.host, args.port), storage, options)
    if options.scan_secrets:
        server.scanner()  # compile the rules before the first request
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        if not stopping.is_set():
            stopping.set()
            # shutdown() waits for serve_forever to return: call it off the signal handler
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"memframe team server on {server.url} (database {args.db})", file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()  # waits for requests in flight
    print("memframe team server stopped", file=sys.stderr, flush=True)
    return 0
