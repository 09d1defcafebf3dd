"""``memframe serve``: run the team memory server; ``memframe serve token add|list|revoke``."""

from __future__ import annotations

import argparse
import re
import secrets
import sys
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
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server processes sharing the port (1; each has its own connection pool)",
    )
    parser.add_argument(
        "--tls-cert", metavar="FILE", help="serve HTTPS with this certificate (PEM)"
    )
    parser.add_argument("--tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    parser.add_argument(
        "--proxy-headers",
        action="store_true",
        help="trust X-Forwarded-For/-Proto from --forwarded-allow-ips (behind a reverse proxy)",
    )
    parser.add_argument(
        "--forwarded-allow-ips",
        default="127.0.0.1",
        metavar="IPS",
        help="comma-separated proxy addresses or networks trusted with --proxy-headers "
        "(127.0.0.1; '*' trusts every peer)",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds a request may take to send its headers, and again its body (30)",
    )
    parser.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds an idle connection is kept open (5)",
    )
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="on SIGTERM, seconds the requests in flight get to finish (10)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=2048,
        metavar="N",
        help="open connections per process; more are answered 503 and closed (2048)",
    )
    parser.add_argument(
        "--limit-concurrency",
        type=int,
        default=None,
        metavar="N",
        help="connections or requests in flight per process before answering 503 (no limit)",
    )
    parser.add_argument(
        "--backlog", type=int, default=2048, metavar="N", help="listen backlog (2048)"
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
            if repo != "*" and not repo_pattern.fullmatch(repo):
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
    from memframe.cli import CommandError

    try:
        from memframe.server.app import ServerOptions
        from memframe.server.serving import ServeConfig, ServedApp, log_to_stderr, serve
    except ImportError as exc:
        raise CommandError(str(exc)) from exc

    if args.workers < 1:
        raise CommandError("--workers must be at least 1")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise CommandError("--tls-cert and --tls-key go together")
    log_to_stderr()
    options = ServerOptions(
        organization_id=args.organization,
        max_entries=args.max_entries,
        max_body_bytes=args.max_body_bytes,
        scan_secrets=not args.no_secret_scan,
        request_timeout=args.request_timeout,
    )
    config = ServeConfig(
        host=args.host,
        port=args.port,
        workers=args.workers,
        backlog=args.backlog,
        keep_alive_timeout=args.keep_alive_timeout,
        request_timeout=args.request_timeout,
        graceful_timeout=args.graceful_timeout,
        max_connections=args.max_connections,
        limit_concurrency=args.limit_concurrency,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        proxy_headers=args.proxy_headers,
        forwarded_allow_ips=args.forwarded_allow_ips,
    )
    if args.workers > 1:
        storage.close()  # the tables exist; each worker process opens a pool of its own
    app = ServedApp(
        args.db,
        options,
        drain_timeout=args.graceful_timeout,
        storage=storage if args.workers == 1 else None,
    )

    def announce(url: str) -> None:
        workers = f", {args.workers} workers" if args.workers > 1 else ""
        print(
            f"memframe team server on {url} (database {args.db}{workers})",
            file=sys.stderr,
            flush=True,
        )

    try:
        serve(app, config, announce=announce)
    except OSError as exc:
        raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc}") from exc
    print("memframe team server stopped", file=sys.stderr, flush=True)
    return 0
