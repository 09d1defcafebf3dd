"""The team server's wire, with transient retries: connection errors, timeouts and the
retryable statuses are retried up to three times by memframe's one retry policy
(:mod:`memframe._http_retry`: capped exponential backoff with jitter, ``Retry-After`` honoured,
bounded by the sync's deadline).

Only the configured server is ever contacted: redirects are not followed and proxy variables
and ``.netrc`` are ignored (the bearer token goes nowhere else). The token is never part of an
error message.

A server cannot hold the client:

- **time**: each request has a wall-clock deadline, ``timeout`` seconds from its start to the
  last byte of the answer, and a sync has one too (its budget). They are enforced on every
  socket operation (connect, TLS handshake, each read and write gets only what is left), so a
  server that drips its answer a byte at a time is cut off at the deadline like a silent one.
  A silent request is retried (an overloaded server or a lost packet); one whose answer had
  started and was still not complete at the deadline is not (it would only hold the sync, and
  its lock, longer);
- **size**: the answer is read as a stream and decoded here (only ``gzip`` is asked for), in
  bounded steps, and the read stops as soon as the decoded size passes ``max_response_bytes``:
  a compressed bomb costs at most that much memory.
"""

from __future__ import annotations

import functools
import random
import select
import socket
import ssl
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx
import orjson

from memframe._http_retry import (
    RetriesExhausted,
    RetryPolicy,
    Transient,
    call_with_retries,
    is_retryable,
    parse_retry_after,
)
from memframe._version import __version__
from memframe.team_sync.settings import SyncConfig, SyncError

API_PATH = "/api/claude_code/team_memory"
MAX_TRANSIENT_RETRIES = 3
RAW_CHUNK = 64 * 1024  # bytes read from the socket at a time
DECODED_CHUNK = 1024 * 1024  # the most one inflate step may produce


class RequestError(SyncError):
    """A request that failed: ``kind`` is ``transient`` (retries used up, or a server too slow
    to answer in time), ``permanent`` (4xx, a redirect), ``conflict`` (412 retries used up) or
    ``error`` (a malformed or oversized answer)."""

    def __init__(
        self, message: str, *, kind: str, status: int | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.code = code


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context per process (building one costs ~40 ms); ``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR`` are honoured (they add trust, they never send traffic elsewhere)."""
    return httpx.create_ssl_context(trust_env=True)


# -- deadlines on every socket operation ---------------------------------------------------------


class Clock:
    """The wall-clock deadline of the request in flight (``time.monotonic()`` seconds, ``None``:
    none) and how many bytes of its answer have arrived."""

    def __init__(self) -> None:
        self.deadline: float | None = None
        self.received = 0

    def start(self, deadline: float | None) -> None:
        self.deadline, self.received = deadline, 0

    def limit(self, timeout: float | None) -> float | None:
        """``timeout`` cut to what is left before the deadline; ``TimeoutError`` when nothing
        is left."""
        if self.deadline is None:
            return timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline has passed")
        return left if timeout is None else min(timeout, left)


class DeadlineStream(httpcore.NetworkStream):
    """A blocking socket whose every operation ends by the :class:`Clock`'s deadline."""

    def __init__(self, sock: socket.socket, clock: Clock) -> None:
        self._sock = sock
        self._clock = clock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            self._sock.settimeout(self._clock.limit(timeout))
            data = self._sock.recv(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.ReadError(exc) from exc
        self._clock.received += len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        try:
            while view:
                self._sock.settimeout(self._clock.limit(timeout))
                view = view[self._sock.send(view) :]
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.WriteError(exc) from exc

    def close(self) -> None:
        self._sock.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        try:
            self._sock.settimeout(self._clock.limit(timeout))
            sock = ssl_context.wrap_socket(self._sock, server_hostname=server_hostname)
        except TimeoutError as exc:
            self.close()
            raise httpcore.ConnectTimeout(exc) from exc
        except OSError as exc:
            self.close()
            raise httpcore.ConnectError(exc) from exc
        return DeadlineStream(sock, self._clock)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":  # httpcore asks it for the negotiated ALPN protocol
            return self._sock if isinstance(self._sock, ssl.SSLSocket) else None
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        if info == "is_readable":  # a pooled connection the server closed (or wrote to)
            fd = self._sock.fileno()
            return fd == -1 or bool(select.select([fd], [], [], 0)[0])
        return None


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend for :class:`DeadlineStream` connections (TCP only)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        source = None if local_address is None else (local_address, 0)
        try:
            sock = socket.create_connection(
                (host, port), self.clock.limit(timeout), source_address=source
            )
            for option in socket_options or ():
                sock.setsockopt(*option)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.ConnectError(exc) from exc
        return DeadlineStream(sock, self.clock)


def deadline_transport(clock: Clock) -> httpx.HTTPTransport:
    """httpx's own transport (its request and error handling) over :class:`DeadlineBackend`."""
    context = _ssl_context()
    transport = httpx.HTTPTransport(verify=context, trust_env=False)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=context,
        max_connections=4,
        max_keepalive_connections=2,
        keepalive_expiry=5.0,
        network_backend=DeadlineBackend(clock),
    )
    return transport


# -- bounded bodies ------------------------------------------------------------------------------


class _Body:
    """The decoded answer, refused as soon as it passes ``limit`` bytes."""

    def __init__(self, limit: int, status: int) -> None:
        self.limit = limit
        self.status = status
        self.chunks: list[bytes] = []
        self.size = 0

    def add(self, data: bytes) -> None:
        if not data:
            return
        self.size += len(data)
        if self.size > self.limit:
            self.chunks.clear()
            raise RequestError(
                f"the team server's answer is over {self.limit:,} bytes once decoded (the "
                "setting team_sync.max_response_bytes); it was not read further",
                kind="error",
                status=self.status,
            )
        self.chunks.append(data)


class _Gunzip:
    """gzip decoding in steps of at most :data:`DECODED_CHUNK` bytes of output."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)

    @property
    def done(self) -> bool:
        return self._inflate.eof

    def feed(self, data: bytes, body: _Body) -> None:
        try:
            while not self._inflate.eof:
                out = self._inflate.decompress(data, DECODED_CHUNK)
                body.add(out)
                data = self._inflate.unconsumed_tail
                if not data and len(out) < DECODED_CHUNK:
                    return
        except zlib.error as exc:
            raise RequestError(
                f"the team server's gzip answer is corrupt: {exc}", kind="error", status=body.status
            ) from exc


def _decoder(response: httpx.Response) -> _Gunzip | None:
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return _Gunzip()
    raise RequestError(
        f"the team server answered with Content-Encoding {encoding[:40]!r}; only gzip was "
        "asked for",
        kind="error",
        status=response.status_code,
    )


# -- replies -------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: httpx.Headers
    data: Any = None  # the JSON body, or None
    text: str = ""  # the start of the body, for messages

    @property
    def error(self) -> dict[str, Any]:
        error = self.data.get("error") if isinstance(self.data, dict) else None
        return error if isinstance(error, dict) else {}

    @property
    def details(self) -> dict[str, Any]:
        details = self.error.get("details")
        return details if isinstance(details, dict) else {}

    @property
    def code(self) -> str | None:
        code = self.details.get("error_code")
        return code if isinstance(code, str) else None

    def describe(self) -> str:
        message = self.error.get("message")
        if not isinstance(message, str) or not message:
            message = self.text.strip()[:200] or "no details"
        code = f" {self.code}" if self.code else ""
        return f"HTTP {self.status}{code}: {message}"

    def failure(self) -> RequestError:
        """This reply as an error (a redirect, or a 4xx that is not retryable, is permanent)."""
        kind = "transient" if is_retryable(self.status) or self.status >= 500 else "permanent"
        return RequestError(
            f"the team server refused: {self.describe()}",
            kind=kind,
            status=self.status,
            code=self.code,
        )


@dataclass
class Http:
    """One connection pool to the server; ``requests`` counts what was sent (retries too).

    :ivar deadline: ``time.monotonic()`` after which nothing more is tried (the sync's).
    """

    config: SyncConfig
    transport: httpx.BaseTransport | None = None
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)
    deadline: float | None = None
    requests: int = 0

    def __post_init__(self) -> None:
        self.url = self.config.server + API_PATH
        self.clock = Clock()
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.config.timeout),
            verify=_ssl_context(),
            trust_env=False,
            follow_redirects=False,
            transport=self.transport or deadline_transport(self.clock),
            headers={
                "Authorization": f"Bearer {self.config.token}",
                "User-Agent": f"memframe/{__version__} team-sync",
                "Accept": "application/json",
                "Accept-Encoding": "gzip",
            },
        )

    def close(self) -> None:
        self._client.close()

    def get(self, *, hashes: bool = False, etag: str | None = None) -> Reply:
        params = {"repo": self.config.repo, **({"view": "hashes"} if hashes else {})}
        headers = {"If-None-Match": f'"{etag}"'} if etag else {}
        return self.request("GET", params, headers)

    def put(self, body: bytes, *, if_match: str | None) -> Reply:
        headers = {"Content-Type": "application/json"}
        if if_match:
            headers["If-Match"] = f'"{if_match}"'
        return self.request("PUT", {"repo": self.config.repo}, headers, body)

    def request(
        self,
        method: str,
        params: dict[str, str],
        headers: dict[str, str],
        body: bytes | None = None,
    ) -> Reply:
        """The server's answer, after up to three retries of transient failures (fewer when
        ``deadline`` comes first).

        :raises RequestError: (``transient``) every attempt failed, or the server was too slow
            to finish an answer it had started; (``error``) the answer was too large or
            malformed.
        """

        def attempt() -> Reply | Transient:
            try:
                reply = self._once(method, params, headers, body)
            except httpx.TransportError as exc:
                return Transient(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            if is_retryable(reply.status):
                return Transient(
                    reply.describe(), parse_retry_after(reply.headers.get("Retry-After"))
                )
            return reply

        policy = RetryPolicy(
            max_retries=MAX_TRANSIENT_RETRIES,
            backoff_base=self.config.backoff_base,
            max_wait=self.config.max_retry_wait,
        )
        try:
            return call_with_retries(
                attempt, policy, deadline=self.deadline, sleep=self.sleep, rng=self.rng
            )
        except RetriesExhausted as exc:
            if exc.reason == "deadline":
                raise self._out_of_time(exc.problem) from None
            raise RequestError(
                f"the team server at {self.config.server} did not answer usefully after "
                f"{MAX_TRANSIENT_RETRIES} retries ({exc.problem})",
                kind="transient",
            ) from None

    def _out_of_time(self, last: str) -> RequestError:
        return RequestError(
            f"the team server at {self.config.server} did not answer usefully in the time "
            f"allowed ({last})",
            kind="transient",
        )

    def _once(
        self, method: str, params: dict[str, str], headers: dict[str, str], body: bytes | None
    ) -> Reply:
        started = time.monotonic()
        deadline = started + self.config.timeout
        sync_bound = self.deadline is not None and self.deadline < deadline
        if self.deadline is not None:
            if self.deadline - started <= 0:
                raise self._out_of_time("no time left for another request")
            deadline = min(deadline, self.deadline)
        self.requests += 1
        self.clock.start(deadline)
        try:
            with self._client.stream(
                method,
                self.url,
                params=params,
                headers=headers,
                content=body,
                timeout=deadline - started,
            ) as response:
                raw = self._read(response, deadline)
        except httpx.TimeoutException as exc:
            if self.clock.received == 0:
                raise  # nothing came back at all: retried like any timeout
            if sync_bound:
                raise self._out_of_time(f"{type(exc).__name__}: {exc}") from exc
            raise self._too_slow(self.clock.received) from exc
        finally:
            self.clock.start(None)
        data: Any = None
        if raw:
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError:
                data = None
        return Reply(
            response.status_code, response.headers, data, raw[:400].decode("utf-8", "replace")
        )

    def _too_slow(self, received: int) -> RequestError:
        return RequestError(
            f"the team server at {self.config.server} was too slow: its answer was not complete "
            f"within the timeout of {self.config.timeout:g} s ({received:,} bytes had arrived); "
            "not retried",
            kind="transient",
        )

    def _read(self, response: httpx.Response, deadline: float) -> bytes:
        """The decoded body, read within ``deadline`` and at most ``max_response_bytes``."""
        limit = self.config.max_response_bytes
        decoder = _decoder(response)
        body = _Body(limit, response.status_code)
        declared = response.headers.get("Content-Length", "").strip()
        if decoder is None and declared.isdigit() and int(declared) > limit:
            raise RequestError(
                f"the team server's answer would be {int(declared):,} bytes, over the limit of "
                f"{limit:,} (the setting team_sync.max_response_bytes); it was not read",
                kind="error",
                status=response.status_code,
            )
        wire = 0
        for chunk in response.iter_raw(RAW_CHUNK):
            if time.monotonic() > deadline:  # also for a transport without the clock
                raise self._too_slow(wire)
            wire += len(chunk)
            if decoder is None:
                body.add(chunk)
            elif wire > limit:
                raise RequestError(
                    f"the team server's answer is over {limit:,} bytes (the setting "
                    "team_sync.max_response_bytes); it was not read further",
                    kind="error",
                    status=response.status_code,
                )
            else:
                decoder.feed(chunk, body)
                if decoder.done:
                    break  # anything after the end of the gzip stream is ignored
        if decoder is not None and body.size and not decoder.done:
            raise RequestError(
                "the team server's gzip answer is cut short",
                kind="error",
                status=response.status_code,
            )
        return b"".join(body.chunks)
