"""The team server's wire, with transient retries: connection errors, timeouts, 5xx and 429 are
retried up to three times with exponential backoff and jitter (``Retry-After`` honoured).

Only the configured server is ever contacted: redirects are not followed and proxy variables
and ``.netrc`` are ignored (the bearer token goes nowhere else). The token is never part of an
error message.
"""

from __future__ import annotations

import email.utils
import functools
import random
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from memframe._version import __version__
from memframe.team_sync.settings import SyncConfig, SyncError

API_PATH = "/api/claude_code/team_memory"
MAX_TRANSIENT_RETRIES = 3
MAX_RESPONSE_BYTES = 512 * 1024 * 1024


class RequestError(SyncError):
    """A request that failed: ``kind`` is ``transient`` (retries used up), ``permanent`` (4xx,
    a redirect), ``conflict`` (412 retries used up) or ``error`` (a malformed answer)."""

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
        """This reply as an error (a 4xx or a redirect is permanent)."""
        kind = "transient" if self.status == 429 or self.status >= 500 else "permanent"
        return RequestError(
            f"the team server refused: {self.describe()}",
            kind=kind,
            status=self.status,
            code=self.code,
        )


@dataclass
class Http:
    """One connection pool to the server; ``requests`` counts what was sent (retries too)."""

    config: SyncConfig
    transport: httpx.BaseTransport | None = None
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)
    deadline: float | None = None  # time.monotonic() after which nothing more is tried
    requests: int = 0

    def __post_init__(self) -> None:
        self.url = self.config.server + API_PATH
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.config.timeout),
            verify=_ssl_context(),
            trust_env=False,
            follow_redirects=False,
            transport=self.transport,
            headers={
                "Authorization": f"Bearer {self.config.token}",
                "User-Agent": f"memframe/{__version__} team-sync",
                "Accept": "application/json",
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

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: between half and all of ``base * 2**attempt``."""
        delay = self.config.backoff_base * float(2**attempt)
        return min(self.config.max_retry_wait, delay / 2 + self.rng.uniform(0, delay / 2))

    def request(
        self,
        method: str,
        params: dict[str, str],
        headers: dict[str, str],
        body: bytes | None = None,
    ) -> Reply:
        """The server's answer, after up to three retries of transient failures (fewer when
        ``deadline`` comes first).

        :raises RequestError: (``transient``) every attempt failed.
        """
        last = ""
        for attempt in range(MAX_TRANSIENT_RETRIES + 1):
            wait: float | None = None
            try:
                reply = self._once(method, params, headers, body)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if reply.status != 429 and reply.status < 500:
                    return reply
                last = reply.describe()
                wait = retry_after(reply.headers.get("Retry-After"))
            if attempt == MAX_TRANSIENT_RETRIES:
                break
            delay = min(self.backoff(attempt) if wait is None else wait, self.config.max_retry_wait)
            if self.deadline is not None and time.monotonic() + delay >= self.deadline:
                raise RequestError(
                    f"the team server at {self.config.server} did not answer usefully in the "
                    f"time allowed ({last})",
                    kind="transient",
                )
            self.sleep(delay)
        raise RequestError(
            f"the team server at {self.config.server} did not answer usefully after "
            f"{MAX_TRANSIENT_RETRIES} retries ({last})",
            kind="transient",
        )

    def _once(
        self, method: str, params: dict[str, str], headers: dict[str, str], body: bytes | None
    ) -> Reply:
        timeout = self.config.timeout
        if self.deadline is not None:
            timeout = min(timeout, max(0.05, self.deadline - time.monotonic()))
        self.requests += 1
        with self._client.stream(
            method, self.url, params=params, headers=headers, content=body, timeout=timeout
        ) as response:
            chunks: list[bytes] = []
            total = 0
            for chunk in response.iter_bytes():
                total += len(chunk)
                if total > MAX_RESPONSE_BYTES:
                    raise RequestError(
                        f"the team server's answer is over {MAX_RESPONSE_BYTES:,} bytes",
                        kind="error",
                        status=response.status_code,
                    )
                chunks.append(chunk)
        raw = b"".join(chunks)
        data: Any = None
        if raw:
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError:
                data = None
        return Reply(
            response.status_code, response.headers, data, raw[:400].decode("utf-8", "replace")
        )


def retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta seconds or an HTTP date), or ``None``."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)
