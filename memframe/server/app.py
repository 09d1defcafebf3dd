"""The team memory server's HTTP side: the wire contract of SPEC §4.6 on the standard library's
threading HTTP server (no framework: it starts in milliseconds and embeds in tests and the demo).

Every request is logged as one JSON line. Bad input gets a 4xx with a JSON error
``{"error": {"message", "details": {"error_code", ...}}}`` and changes nothing.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from memframe.server.storage import (
    StaleChecksumError,
    Storage,
    TokenInfo,
    TooManyEntriesError,
    hash_token,
)
from memframe.team_keys import MAX_ENTRY_BYTES, UnsafeKeyError, check_key

API_PATH = "/api/claude_code/team_memory"
REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
log = logging.getLogger("memframe.server")


@dataclass
class ServerOptions:
    organization_id: str = "local"
    max_entries: int = 1_000
    max_body_bytes: int = 1_048_576
    max_entry_bytes: int = MAX_ENTRY_BYTES
    scan_secrets: bool = True


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.details = details

    def body(self) -> dict[str, Any]:
        return {
            "error": {"message": str(self), "details": {"error_code": self.code, **self.details}}
        }


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


def _unquote_etag(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None  # an empty header is no condition
    value = value.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


class TeamMemoryServer(ThreadingHTTPServer):
    daemon_threads = False  # graceful shutdown waits for requests in flight
    block_on_close = True

    def __init__(self, address: tuple[str, int], storage: Storage, options: ServerOptions) -> None:
        self.storage = storage
        self.options = options
        self._scanner: Any = None
        super().__init__(address, _Handler)

    def scanner(self) -> Any:
        if self._scanner is None:
            from memframe.scanner import default_scanner

            self._scanner = default_scanner()
        return self._scanner

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: TeamMemoryServer
    protocol_version = "HTTP/1.1"
    server_version = "memframe-team-server"
    # headers and body go out in two writes: without TCP_NODELAY, Nagle + delayed ACK stall
    # every keep-alive response by ~40 ms
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # one JSON line per request instead
        return

    # -- plumbing ------------------------------------------------------------------------------

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        payload = b"" if body is None else orjson.dumps(body)
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if payload and self.command != "HEAD":
            self.wfile.write(payload)
        self._status = status

    def _handle(self) -> None:
        started = time.perf_counter()
        self._status = 500
        self._body_read = False  # one handler serves every request of a keep-alive connection
        self._token: TokenInfo | None = None
        self._repo: str | None = None
        try:
            self._route()
        except ApiError as exc:
            self._drain()
            allow = {"Allow": str(exc.details["allow"])} if "allow" in exc.details else None
            self._send(exc.status, exc.body(), allow)
        except Exception as exc:  # never a stack trace to the client
            log.exception("unhandled error")
            self._send(
                500, ApiError(500, "internal_error", f"internal error: {type(exc).__name__}").body()
            )
        finally:
            log.info(
                orjson.dumps(
                    {
                        "ts": _iso(time.time()),
                        "method": self.command,
                        "path": urlsplit(self.path).path,
                        "repo": self._repo,
                        "token": self._token.name if self._token else None,
                        "status": self._status,
                        "ms": round((time.perf_counter() - started) * 1000, 2),
                    }
                ).decode()
            )

    def _drain(self) -> None:
        """Read an unread request body (bounded) so the connection stays usable."""
        length = self.headers.get("Content-Length")
        if getattr(self, "_body_read", False) or not length or not length.isdigit():
            return
        remaining = int(length)
        if remaining > self.server.options.max_body_bytes * 4:
            self.close_connection = True
            return
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 65_536))
            if not chunk:
                break
            remaining -= len(chunk)

    def __getattr__(self, name: str) -> Any:
        # every method (GET, PUT, but also TRACE, QUERY…) is routed: unknown ones get a JSON 405
        # instead of the standard library's HTML 501
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def _route(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/openapi.json" and self.command == "GET":
            from memframe.server.openapi import OPENAPI

            self._send(200, OPENAPI)
            return
        if parts.path == "/healthz" and self.command == "GET":
            self._send(200, {"status": "ok"})
            return
        if parts.path != API_PATH:
            raise ApiError(404, "not_found", f"no such endpoint: {parts.path}")
        if self.command not in ("GET", "PUT"):
            raise ApiError(
                405, "method_not_allowed", f"{self.command} is not allowed here", allow="GET, PUT"
            )
        query = parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(query) - {"repo", "view"})
        if unknown or (parts.query and not query):
            raise ApiError(400, "bad_query", f"unknown query parameter(s): {unknown}")
        repos = query.get("repo", [])
        if len(repos) != 1 or not REPO.match(repos[0]):
            raise ApiError(400, "bad_repo", "give exactly one repo=<owner>/<name>")
        self._repo = repos[0]
        self._authorise(self._repo)
        if self.command == "GET":
            views = query.get("view", [])
            if views not in ([], ["hashes"]):
                raise ApiError(400, "bad_view", "view must be 'hashes' when given")
            self._get(self._repo, hashes_only=views == ["hashes"])
        else:
            self._put(self._repo)

    def _authorise(self, repo: str) -> None:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Bearer ") or not header[7:].strip():
            raise ApiError(401, "unauthorized", "a bearer token is required")
        token = self.server.storage.token(hash_token(header[7:].strip()))
        if token is None or token.revoked:
            raise ApiError(401, "unauthorized", "unknown or revoked token")
        self._token = token
        if not token.allows(repo):
            raise ApiError(403, "forbidden", f"this token may not use the repo {repo}")

    # -- GET -----------------------------------------------------------------------------------

    def _get(self, repo: str, *, hashes_only: bool) -> None:
        snapshot = self.server.storage.get(repo, with_entries=not hashes_only)
        if snapshot is None:
            raise ApiError(404, "not_found", f"nothing is stored for {repo}")
        etag = f'"{snapshot.checksum}"'
        wanted = _unquote_etag(self.headers.get("If-None-Match"))
        if wanted is not None and wanted == snapshot.checksum:
            self._send(304, None, {"ETag": etag})
            return
        content: dict[str, Any] = {"entryChecksums": snapshot.entry_checksums}
        if not hashes_only:
            content = {"entries": snapshot.entries, **content}
        self._send(
            200,
            {
                "organizationId": self.server.options.organization_id,
                "repo": repo,
                "version": snapshot.version,
                "lastModified": _iso(snapshot.last_modified),
                "checksum": snapshot.checksum,
                "content": content,
            },
            {"ETag": etag},
        )

    # -- PUT -----------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        options = self.server.options
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            raise ApiError(411, "length_required", "send the body with a Content-Length")
        if length is None or not length.isdigit():
            raise ApiError(411, "length_required", "a Content-Length header is required")
        size = int(length)
        if size > options.max_body_bytes:
            raise ApiError(
                413,
                "request_too_large",
                f"the body is {size:,} bytes; the limit is {options.max_body_bytes:,}",
                max_body_bytes=options.max_body_bytes,
            )
        body = self.rfile.read(size)
        self._body_read = True
        if len(body) != size:
            raise ApiError(400, "incomplete_body", "the body ended before Content-Length")
        return body

    def _put(self, repo: str) -> None:
        options = self.server.options
        body = self._read_body()
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ApiError(400, "bad_json", f"the body is not valid UTF-8 JSON: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
            raise ApiError(400, "bad_body", 'the body must be {"entries": {key: text}}')
        entries: dict[str, str] = {}
        for key, text in data["entries"].items():
            try:
                check_key(key)
            except UnsafeKeyError as exc:
                raise ApiError(400, "bad_key", str(exc), key=key[:200]) from exc
            if not isinstance(text, str):
                raise ApiError(400, "bad_entry", f"entry {key!r} must be a string", key=key)
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > options.max_entry_bytes:
                raise ApiError(
                    413,
                    "team_memory_entry_too_large",
                    f"entry {key!r} is {size:,} bytes; the limit is {options.max_entry_bytes:,}",
                    key=key,
                    max_entry_bytes=options.max_entry_bytes,
                )
            entries[key] = text
        if options.scan_secrets:
            self._refuse_secrets(entries)
        if_match = _unquote_etag(self.headers.get("If-Match"))
        if if_match == "*":  # any current version: only "the repo must exist"
            existing = self.server.storage.get(repo, with_entries=False)
            if existing is None:
                raise ApiError(412, "precondition_failed", "If-Match: * and nothing is stored")
            if_match = None
        try:
            result = self.server.storage.put(
                repo, entries, if_match=if_match, max_entries=options.max_entries
            )
        except StaleChecksumError as exc:
            raise ApiError(
                412,
                "precondition_failed",
                "the repo changed since that checksum",
                current_checksum=exc.current,
            ) from exc
        except TooManyEntriesError as exc:
            raise ApiError(
                413,
                "team_memory_too_many_entries",
                f"the repo would hold {exc.received} entries; the limit is {exc.max_entries}",
                max_entries=exc.max_entries,
                received_entries=exc.received,
            ) from exc
        self._send(
            200,
            {"checksum": result.checksum, "lastModified": _iso(result.last_modified)},
            {"ETag": f'"{result.checksum}"'},
        )

    def _refuse_secrets(self, entries: dict[str, str]) -> None:
        from memframe.scanning.gate import gate_findings

        scanner = self.server.scanner()
        findings = []
        for key, text in entries.items():
            matches = gate_findings(scanner, key, text)  # the key, the text, what it decodes to
            if matches:
                findings.append(
                    {
                        "key": key,
                        "rules": [m.rule_id for m in matches],
                        "found_in": [m.where for m in matches],
                    }
                )
        if findings:
            rules = sorted({rule for f in findings for rule in f["rules"]})
            raise ApiError(
                422,
                "team_memory_secret_detected",
                f"{len(findings)} entr{'y' if len(findings) == 1 else 'ies'} contain secrets "
                f"({', '.join(rules)}); nothing was stored",
                findings=findings,
            )


class RunningServer:
    """A server on a background thread (tests, the demo): ``url``, then ``stop()``."""

    def __init__(self, server: TeamMemoryServer) -> None:
        self.server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(
    storage: Storage, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> RunningServer:
    return RunningServer(TeamMemoryServer((host, port), storage, ServerOptions(**options)))
