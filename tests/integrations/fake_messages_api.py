"""A loopback fake of the Anthropic Messages API that plays Claude calling the memory tool.

    with FakeMessagesAPI() as api:
        api.play(
            [{"command": "view", "path": "/memories"}],      # turn 1: one memory-tool call
            "Done.",                                          # turn 2: the final answer
        )
        client = anthropic.Anthropic(api_key="...", base_url=api.base_url)
        ...                                                   # the SDK's tool runner
        (view,), = api.results                                # what the SDK sent back

A real HTTP server on 127.0.0.1 (port chosen by the OS). ``POST /v1/messages`` — with or without
a query string: SDK releases differ there — answers with the next turn as a Messages API
``message``: a list of memory-tool inputs becomes one ``tool_use`` block each
(``stop_reason: tool_use``), a string a text answer (``end_turn``). Before answering, the
``tool_result`` blocks of the request's last user message are appended to :attr:`results`, so
``results[n]`` are the results of turn ``n``'s calls. Like the API, a request without
credentials (``x-api-key``, or ``authorization`` as newer SDKs send it) gets 401, one without
``anthropic-version`` 400; another path 404; a request after the last
turn 500. Those land in :attr:`unexpected`. Every answer closes its connection, so nothing is
left open when the server stops.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

MODEL = "claude-sonnet-4-5"
Turn = list[dict[str, Any]] | str


@dataclass(frozen=True)
class Request:
    """One request the fake received."""

    method: str
    path: str  # with its query string, as sent
    headers: dict[str, str]  # lower-cased names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    api: FakeMessagesAPI

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up is not the test's concern


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._answer()

    def do_GET(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = Request(
            self.command,
            self.path,
            {name.lower(): value for name, value in self.headers.items()},
            self.rfile.read(length) if length else b"",
        )
        status, body = self.server.api._respond(request)
        payload = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", f"req_fake{status}")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        self.close_connection = True


def _error(status: int, kind: str, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"type": "error", "error": {"type": kind, "message": message}}


class FakeMessagesAPI:
    """The Messages API on 127.0.0.1, answering from Claude's scripted turns."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.unexpected: list[Request] = []
        self.results: list[list[dict[str, Any]]] = []
        self._turns: deque[Turn] = deque()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Self:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.api = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the fake is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- the script ----------------------------------------------------------------------------

    def play(self, *turns: Turn) -> None:
        """Queue Claude's turns: memory-tool inputs to call, or the final text."""
        with self._lock:
            self._turns.extend(turns)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._turns)

    def _respond(self, request: Request) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
            refusal = self._refusal(request)
            if refusal is not None:
                self.unexpected.append(request)
                return refusal
            results = tool_results(request.json)
            if results:
                self.results.append(results)
            turn = self._turns.popleft()
            return 200, self._message(turn)

    def _refusal(self, request: Request) -> tuple[int, dict[str, Any]] | None:
        if request.method != "POST" or urlsplit(request.path).path != "/v1/messages":
            return _error(404, "not_found_error", f"no route {request.method} {request.path}")
        if not (request.headers.get("x-api-key") or request.headers.get("authorization")):
            return _error(
                401, "authentication_error", "an x-api-key or authorization header is required"
            )
        if not request.headers.get("anthropic-version"):
            return _error(400, "invalid_request_error", "anthropic-version header is required")
        if not self._turns:
            return _error(500, "api_error", "the fake has no scripted turn left")
        return None

    def _message(self, turn: Turn) -> dict[str, Any]:
        if isinstance(turn, str):
            content: list[dict[str, Any]] = [{"type": "text", "text": turn}]
            stop_reason = "end_turn"
        else:
            content = [
                {
                    "type": "tool_use",
                    "id": f"toolu_fake{next(self._ids):016d}",
                    "name": "memory",
                    "input": tool_input,
                }
                for tool_input in turn
            ]
            stop_reason = "tool_use"
        return {
            "id": f"msg_fake{next(self._ids):016d}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 200, "output_tokens": 40},
        }


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of a request body's last user message."""
    messages = body.get("messages") or []
    content = messages[-1].get("content") if messages else None
    if not isinstance(content, list):
        return []
    return [block for block in content if block.get("type") == "tool_result"]


def result_text(result: dict[str, Any]) -> str:
    """A tool result's text, whether its content is a string or text blocks."""
    content = result.get("content")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [])
