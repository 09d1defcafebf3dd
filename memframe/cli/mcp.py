"""``memframe mcp``: serve the project's memory to MCP clients (stdio, or streamable HTTP)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
import sys
from pathlib import Path

from memframe.cli._common import add_frame_arguments, open_frame_from_args

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_frame_arguments(parser)
    parser.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP (at /mcp, behind a bearer token) instead of stdio",
    )
    parser.add_argument(
        "--host", default=None, help=f"address to listen on with --http (default {DEFAULT_HOST})"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"port to listen on with --http (default {DEFAULT_PORT}; 0: any free port)",
    )
    parser.add_argument(
        "--token",
        default=None,
        help="the bearer token clients must send with --http (default: $MEMFRAME_MCP_TOKEN, "
        "else a new one, printed; prefer the variable: arguments are visible to others)",
    )


def _project(args: argparse.Namespace) -> None:
    """A client that did not expand a ``${…}`` placeholder in ``--project`` (an editor's
    workspace variable) gets its working directory instead of an error."""
    text = str(args.project)
    if "${" in text:
        print(
            f"memframe mcp: --project {text!r} was not expanded by the client; serving the "
            f"working directory {Path.cwd()}",
            file=sys.stderr,
        )
        args.project = Path.cwd()


def run(args: argparse.Namespace) -> int:
    import importlib.util

    from memframe.cli import EXIT_OK, CommandError

    if importlib.util.find_spec("mcp") is None:
        raise CommandError(
            "`memframe mcp` needs the MCP SDK: pip install 'memframe[mcp]' (or pip install mcp)"
        )
    if not args.http and (args.host, args.port, args.token) != (None, None, None):
        raise CommandError("--host, --port and --token only apply with --http")
    host = args.host or DEFAULT_HOST
    port = DEFAULT_PORT if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise CommandError(f"--port must be between 0 and 65535, got {port}")
    token = args.token if args.token is not None else os.environ.get("MEMFRAME_MCP_TOKEN")
    generated = token is None
    if token is None:
        token = secrets.token_urlsafe(32)
    if not token.strip() or any(ch.isspace() for ch in token):
        raise CommandError("the bearer token must be non-empty and contain no spaces")
    _project(args)

    from memframe.mcp.server import MemframeService, bind, build_server, run_http, run_stdio, url_of

    with open_frame_from_args(args) as frame:
        server = build_server(MemframeService(frame))
        if not args.http:
            run_stdio(server)
            return EXIT_OK
        try:
            sock = bind(host, port)
        except OSError as exc:
            raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        with sock:
            print(f"memframe MCP server (streamable HTTP) at {url_of(sock, host)}")
            if generated:
                print(f"bearer token: {token}")
            else:
                print("bearer token: the one given (--token or MEMFRAME_MCP_TOKEN)")
            print("clients send the header  Authorization: Bearer <token>", flush=True)
            if not _loopback(host):
                print(
                    f"memframe mcp: listening on {host}, beyond this machine: anyone who can "
                    "reach it with the token can read and write this project's memory",
                    file=sys.stderr,
                )
            run_http(server, sock, token, host)
    return EXIT_OK


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
