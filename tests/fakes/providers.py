"""Fake model providers: real HTTP servers on 127.0.0.1 that answer from a script.

    with FakeProvider(kind="anthropic") as fake:
        fake.script(anthropic_text("hello"), Reply(status=529, body={...}))
        backend = AnthropicBackend(api_key="...", base_url=fake.base_url)
        ...
        assert fake.requests[0].json["model"] == "..."
        assert not fake.unexpected

Replies are served first in, first out. A reply is a dict (a 200 JSON body), a :class:`Reply`
(status, body, headers, a delay, or ``drop`` to close the connection without answering), or a
callable taking the :class:`RecordedRequest` and returning one of those. A request with no reply
left gets HTTP 500 and lands in ``unexpected``, as does a request to any other path or method
(the path is compared without its query string: SDK releases differ there). With
``strict_headers`` an Anthropic fake answers like the API does a request without credentials
(``x-api-key``, or ``authorization`` as newer SDKs send it: 401) or without
``anthropic-version`` (400); those land in ``unexpected`` too.

The official SDKs' tool runners play against it with :func:`anthropic_tool_uses` turns; what
the SDK sent back is :func:`results_sent` (``tool_result`` blocks, per request).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import urlsplit

Body = dict[str, Any] | list[Any] | bytes | str


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Body = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    """A request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


ReplyLike = dict[str, Any] | Reply | Callable[[RecordedRequest], "dict[str, Any] | Reply"]

PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread: nothing outlives a test
    block_on_close = True
    provider: FakeProvider

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (timeout tests, dropped replies) is business as usual here.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every keep-alive exchange.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.provider._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.provider._track(self.connection, add=False)

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        recorded = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        reply = self.server.provider._next_reply(recorded)
        if reply.delay and self.server.provider._stopping.wait(reply.delay):
            self.close_connection = True
            return
        if reply.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        payload = _encode(reply.body)
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


def _encode(body: Body) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body).encode("utf-8")


class FakeProvider:
    """An Anthropic- or OpenAI-shaped HTTP endpoint on 127.0.0.1 (port chosen by the OS)."""

    def __init__(
        self, kind: Literal["anthropic", "openai"] = "anthropic", *, strict_headers: bool = False
    ) -> None:
        if kind not in PATHS:
            raise ValueError(f"unknown fake provider kind {kind!r}")
        self.kind = kind
        self.strict_headers = strict_headers
        self.path = PATHS[kind]
        self.requests: list[RecordedRequest] = []
        self.unexpected: list[RecordedRequest] = []
        self._queue: deque[ReplyLike] = deque()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", 0), _Handler)
        server.provider = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # wake handlers idling on keep-alive connections
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake provider is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        root = f"http://127.0.0.1:{self.port}"
        return root if self.kind == "anthropic" else f"{root}/v1"

    # -- script ------------------------------------------------------------------------------

    def script(self, *replies: ReplyLike) -> None:
        """Queue replies, served in order."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies are not served yet."""
        with self._lock:
            return len(self._queue)

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _next_reply(self, recorded: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if recorded.method != "POST" or urlsplit(recorded.path).path != self.path:
                self.unexpected.append(recorded)
                return Reply(
                    status=404,
                    body={
                        "error": {
                            "type": "not_found_error",
                            "message": "fake provider: no such path",
                        }
                    },
                )
            refusal = self._refusal(recorded)
            if refusal is not None:
                self.unexpected.append(recorded)
                return refusal
            if not self._queue:
                self.unexpected.append(recorded)
                return Reply(
                    status=500,
                    body={
                        "error": {
                            "type": "api_error",
                            "message": "fake provider: no scripted reply left",
                        }
                    },
                )
            item = self._queue.popleft()
        if callable(item):
            item = item(recorded)
        if isinstance(item, Reply):
            return item
        return Reply(status=200, body=item)

    def _refusal(self, recorded: RecordedRequest) -> Reply | None:
        if not (self.strict_headers and self.kind == "anthropic"):
            return None
        headers = recorded.headers
        if not (headers.get("x-api-key") or headers.get("authorization")):
            return anthropic_error(
                401, "authentication_error", "an x-api-key or authorization header is required"
            )
        if not headers.get("anthropic-version"):
            return anthropic_error(400, "invalid_request_error", "anthropic-version is required")
        return None


# -- response builders ---------------------------------------------------------------------------

_ids = itertools.count(1)


def _fake_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):024x}"


def anthropic_text(
    text: str, *, usage: dict[str, int] | None = None, model: str = "claude-sonnet-4-5"
) -> dict[str, Any]:
    """A Messages API answer with one text block."""
    return {
        "id": _fake_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage
        if usage is not None
        else {
            "input_tokens": 42,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 7,
            "service_tier": "standard",
        },
    }


def anthropic_tool_use(
    name: str, input: Any, *, id: str | None = None, text: str = ""
) -> dict[str, Any]:
    """A Messages API answer calling one tool (after an optional text block)."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    content.append(
        {"type": "tool_use", "id": id or _fake_id("toolu_"), "name": name, "input": input}
    )
    return {
        "id": _fake_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 120,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 100,
            "output_tokens": 30,
        },
    }


def anthropic_tool_uses(name: str, inputs: list[Any]) -> dict[str, Any]:
    """A Messages API answer calling one tool several times (one ``tool_use`` block each)."""
    answer = anthropic_tool_use(name, inputs[0]) if inputs else anthropic_text("")
    answer["content"] = [
        {"type": "tool_use", "id": _fake_id("toolu_"), "name": name, "input": tool_input}
        for tool_input in inputs
    ]
    answer["stop_reason"] = "tool_use"
    return answer


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of a Messages request body's last user message."""
    messages = body.get("messages") or []
    content = messages[-1].get("content") if messages else None
    if not isinstance(content, list):
        return []
    return [block for block in content if block.get("type") == "tool_result"]


def results_sent(fake: FakeProvider) -> list[list[dict[str, Any]]]:
    """Per request that carried any, the ``tool_result`` blocks the client sent back: entry
    ``n`` holds the results of the ``n``-th tool-calling turn."""
    sent = (tool_results(r.json) for r in fake.requests if r not in fake.unexpected)
    return [results for results in sent if results]


def result_text(result: dict[str, Any]) -> str:
    """A tool result's text, whether its content is a string or text blocks."""
    content = result.get("content")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [])


def anthropic_error(status: int, kind: str, message: str, **headers: str) -> Reply:
    """An Anthropic error answer (``overloaded_error`` 529, ``rate_limit_error`` 429…)."""
    return Reply(
        status=status,
        body={"type": "error", "error": {"type": kind, "message": message}},
        headers={k.replace("_", "-"): v for k, v in headers.items()},
    )


def _openai_body(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": _fake_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {
            "prompt_tokens": 55,
            "completion_tokens": 9,
            "total_tokens": 64,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        },
        "system_fingerprint": "fp_fake",
    }


def openai_text(text: str) -> dict[str, Any]:
    """A Chat Completions answer with text only."""
    return _openai_body({"role": "assistant", "content": text, "refusal": None}, "stop")


def openai_tool_call(
    name: str, arguments: dict[str, Any] | str, *, id: str | None = None
) -> dict[str, Any]:
    """A Chat Completions answer calling one function (``arguments``: a dict is JSON-encoded, a
    string is sent as is, valid JSON or not)."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": id or _fake_id("call_"),
                "type": "function",
                "function": {"name": name, "arguments": encoded},
            }
        ],
        "refusal": None,
    }
    return _openai_body(message, "tool_calls")


def openai_error(status: int, message: str, **headers: str) -> Reply:
    """An OpenAI error answer."""
    return Reply(
        status=status,
        body={"error": {"message": message, "type": "invalid_request_error", "code": None}},
        headers={k.replace("_", "-"): v for k, v in headers.items()},
    )
