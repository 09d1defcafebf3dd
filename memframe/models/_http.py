"""POST a JSON body to a model provider, retrying what is worth retrying.

Shared by the HTTP backends (``anthropic``, ``openai``). Transient failures (the statuses of
:data:`memframe._http_retry.RETRYABLE_STATUSES`, dropped connections, timeouts) are retried by
the one retry policy of :mod:`memframe._http_retry` (capped exponential backoff with jitter,
``retry-after`` honoured); anything else becomes a :class:`ModelError` at once. Error messages name
the endpoint (without credentials), the status and the provider's own error text, and never an API
key.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Self
from urllib.parse import urlsplit, urlunsplit

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
from memframe.layer_settings import check_value
from memframe.models.base import (
    ModelError,
    ModelNotConfiguredError,
    ModelResponseError,
    ModelTransientError,
)

log = logging.getLogger("memframe.models")

MAX_RETRY_WAIT = 30.0  # the longest wait between two attempts, retry-after included
_EXCERPT = 300
_REDACTED = "[redacted]"


def option_str(
    options: Mapping[str, Any],
    key: str,
    *,
    backend: str,
    env: Mapping[str, str] | None = None,
    env_var: str | None = None,
) -> str | None:
    """``env[env_var]`` when set and non-empty, else ``options[key]`` (a non-empty string): the
    environment beats the settings file, as for every memframe option."""
    if env is not None and env_var is not None:
        from_env = env.get(env_var, "").strip()
        if from_env:
            return from_env
    value = options.get(key)
    if value is None:
        return None
    checked: str = check_value(
        str, value, f"settings models.{backend}.{key}", error=ModelNotConfiguredError
    )
    return checked.strip()


def option_int(options: Mapping[str, Any], key: str, default: int, *, backend: str) -> int:
    """``options[key]`` as a non-negative integer, else ``default``."""
    value = options.get(key)
    if value is None:
        return default
    where = f"settings models.{backend}.{key}"
    checked: int = check_value(int, value, where, minimum=0, error=ModelNotConfiguredError)
    return checked


def option_float(options: Mapping[str, Any], key: str, default: float, *, backend: str) -> float:
    """``options[key]`` as a non-negative number (below a million), else ``default``."""
    value = options.get(key)
    if value is None:
        return default
    where = f"settings models.{backend}.{key}"
    checked = check_value(
        float, value, where, minimum=0, maximum=1e6, error=ModelNotConfiguredError
    )
    return float(checked)


def retry_options(options: Mapping[str, Any], *, backend: str) -> dict[str, Any]:
    """``max_retries`` and ``backoff_base`` of an HTTP backend's settings, defaults filled in."""
    return {
        "max_retries": option_int(options, "max_retries", 3, backend=backend),
        "backoff_base": option_float(options, "backoff_base", 0.5, backend=backend),
    }


def check_base_url(url: str, *, backend: str, setting: str) -> str:
    """``url`` without a trailing slash, once it is known to be an http(s) URL."""
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelNotConfiguredError(
            f"{backend}: the base URL {safe_url(url)!r} is not an http(s) URL (set {setting})"
        )
    return url.rstrip("/")


def to_plain(value: Any) -> Any:
    """A deep copy of ``value`` made of plain dicts and lists (what orjson serializes), keeping
    key order; the caller's objects are never shared with (or mutated through) the copy."""
    if isinstance(value, Mapping):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, str | bytes | bytearray):
        return value
    if isinstance(value, Sequence):
        return [to_plain(item) for item in value]
    return value


def encode_json(body: Mapping[str, Any]) -> bytes:
    """``body`` as compact JSON bytes, keys in insertion order: the same body, the same bytes."""
    try:
        return orjson.dumps(to_plain(body))
    except TypeError as exc:
        raise ModelError(f"the model request cannot be encoded as JSON: {exc}") from exc


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment: fit for an error message."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def provider_error_text(body: bytes) -> str:
    """The provider's error message from an error response body.

    Understands Anthropic (``{"error": {"type", "message"}}``), OpenAI (``{"error": {"message"}}``)
    and the plain ``{"error": "..."}`` of some local servers; anything else is quoted as text.
    """
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return excerpt(body.decode("utf-8", "replace")) or "(empty body)"
    if isinstance(data, Mapping):
        error = data.get("error")
        if isinstance(error, Mapping):
            message = error.get("message")
            kind = error.get("type")
            if isinstance(message, str) and message:
                if isinstance(kind, str) and kind and kind != "error":
                    return excerpt(f"{kind}: {message}")
                return excerpt(message)
        if isinstance(error, str) and error:
            return excerpt(error)
        message = data.get("message") or data.get("detail")
        if isinstance(message, str) and message:
            return excerpt(message)
    return excerpt(body.decode("utf-8", "replace")) or "(empty body)"


class JsonPoster:
    """POSTs JSON to one provider with retries; owns a lazily created ``httpx.Client``.

    :param provider: the backend name, used in error messages.
    :param max_retries: how many times a transient failure is retried (so at most
        ``max_retries + 1`` attempts).
    :param backoff_base: the first retry waits between half and all of ``backoff_base``
        seconds, each further one twice as long (:class:`memframe._http_retry.RetryPolicy`).
    :param secrets: strings (API keys) scrubbed from every error message.
    """

    def __init__(
        self,
        *,
        provider: str,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        secrets: Iterable[str] = (),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.policy = RetryPolicy(
            max_retries=max_retries, backoff_base=backoff_base, max_wait=MAX_RETRY_WAIT
        )
        self.provider = provider
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        # Only key-like strings: scrubbing a 1-letter "secret" would garble every message.
        self._secrets = tuple(s for s in secrets if len(s) >= 8)
        self._sleep = sleep
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    def client(self) -> httpx.Client:
        with self._lock:
            if self._closed:
                raise ModelError(f"{self.provider}: the backend is closed")
            if self._client is None:
                self._client = httpx.Client(follow_redirects=False)
            return self._client

    def close(self) -> None:
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __del__(self) -> None:
        # A safety net for callers that never close the backend: no socket left to the GC.
        with contextlib.suppress(Exception):
            self.close()

    # -- requests ----------------------------------------------------------------------------

    def post_json(
        self,
        url: str,
        body: bytes,
        *,
        headers: Mapping[str, str],
        timeout: float,
    ) -> dict[str, Any]:
        """POST ``body`` (JSON bytes) to ``url`` and return the decoded JSON object answered.

        :raises ModelTransientError: the failure was transient and retries ran out.
        :raises ModelResponseError: a 2xx answer that is not a JSON object.
        :raises ModelError: any other failure (4xx, an unusable URL).
        """
        endpoint = safe_url(url)
        client = self.client()

        def attempt() -> dict[str, Any] | Transient:
            try:
                response = client.post(
                    url, content=body, headers=dict(headers), timeout=httpx.Timeout(timeout)
                )
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                raise ModelNotConfiguredError(
                    self._scrub(f"{self.provider}: cannot POST to {endpoint}: {exc}")
                ) from None
            except UnicodeEncodeError:
                raise ModelNotConfiguredError(
                    f"{self.provider}: a request header is not ASCII (check the API key)"
                ) from None
            except httpx.TransportError as exc:
                kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
                detail = excerpt(str(exc)) or type(exc).__name__
                return Transient(f"no response ({kind}: {type(exc).__name__}: {detail})")
            except httpx.HTTPError as exc:  # a body that cannot be decoded, and the like
                raise ModelError(
                    self._scrub(
                        f"{self.provider}: POST {endpoint} failed: {type(exc).__name__}: {exc}"
                    )
                ) from None
            status = response.status_code
            if 200 <= status < 300:
                return self._decode(endpoint, response)
            message = provider_error_text(response.content)
            if not is_retryable(status):
                raise ModelError(self._status_message(endpoint, status, message))
            return Transient(
                f"HTTP {status}: {message}", parse_retry_after(response.headers.get("retry-after"))
            )

        def on_retry(number: int, problem: str, delay: float) -> None:
            log.debug(
                "%s: %s from %s; retry %d/%d in %.2fs",
                self.provider,
                self._scrub(problem),
                endpoint,
                number,
                self.max_retries,
                delay,
            )

        try:
            return call_with_retries(attempt, self.policy, sleep=self._sleep, on_retry=on_retry)
        except RetriesExhausted as exc:
            attempts = exc.attempts
            raise ModelTransientError(
                self._scrub(
                    f"{self.provider}: POST {endpoint} failed after {attempts} attempt"
                    f"{'s' if attempts != 1 else ''}: {exc.problem}"
                )
            ) from None

    def _decode(self, endpoint: str, response: httpx.Response) -> dict[str, Any]:
        try:
            data = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise ModelResponseError(
                self._scrub(
                    f"{self.provider}: {endpoint} answered HTTP {response.status_code} with a body "
                    f"that is not JSON: {excerpt(response.text, 120)!r}"
                )
            ) from None
        if not isinstance(data, dict):
            raise ModelResponseError(
                f"{self.provider}: {endpoint} answered a JSON {type(data).__name__}, "
                "expected an object"
            )
        return data

    def _status_message(self, endpoint: str, status: int, message: str) -> str:
        text = f"{self.provider}: POST {endpoint} was refused with HTTP {status}: {message}"
        if status in (401, 403):
            text += " (check the API key the backend is configured with)"
        return self._scrub(text)

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, _REDACTED)
        return text


class HttpBackend:
    """What the HTTP backends share: one :class:`JsonPoster`, closed with the backend (also as a
    context manager)."""

    _http: JsonPoster

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
