"""The UI's door: a token in the URL, then a cookie; same-origin and CSRF checks on writes.

``memframe ui`` prints ``http://127.0.0.1:PORT/?token=…`` (like Jupyter). :class:`Guard`, an ASGI
middleware in front of every route (pages, the JSON API, the static files), lets a request in
only when it carries that token, as

- ``?token=`` in the URL: answered with a redirect to the same page without it, setting an
  ``HttpOnly``, ``SameSite=Lax`` cookie (an HMAC of the token, not the token) so the token leaves
  the address bar and the history;
- that cookie;
- ``Authorization: Bearer <token>`` (scripts, tests).

Without any it answers ``401``; with a wrong one, ``403``. A ``Host`` header that is not the
server's own address (``127.0.0.1:PORT`` or ``localhost:PORT``) is ``403`` as well, so a page on
another site cannot reach the UI through a rebound DNS name. A request that changes something
(any method but ``GET``/``HEAD``) must also come from the UI's own pages: its ``Origin`` (or,
without one, its ``Referer``) must be the server's own origin, else ``403``; and the form must
carry the CSRF token (:meth:`Guard.csrf_token`, checked by :func:`check_csrf`). No response
carries a CORS header, so no other origin can read a page or the API. Every response says
``Cache-Control: no-store`` and has a strict Content-Security-Policy (only the package's own
CSS and script).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from http.cookies import SimpleCookie
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE_PREFIX = "memframe-ui-"
SAFE_METHODS = frozenset({"GET", "HEAD"})
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # same-origin, not no-referrer: with no-referrer a browser sends ``Origin: null`` on the
    # UI's own form posts, and the same-origin check could not tell them from a foreign page
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def _derive(token: str, purpose: bytes) -> str:
    return hmac.new(token.encode(), purpose, hashlib.sha256).hexdigest()


def _equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


class Guard:
    """ASGI middleware: authentication, host and same-origin checks, security headers."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token
        self.cookie_value = _derive(token, b"memframe-ui-cookie")
        self.csrf = _derive(token, b"memframe-ui-csrf")

    def csrf_token(self) -> str:
        """The value every form carries in its ``csrf`` field."""
        return self.csrf

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets: none offered

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if not k.lower().startswith(b"access-control-")
                ]
                message = {**message, "headers": [*headers, *SECURITY_HEADERS]}
            await send(message)

        headers = _headers(scope)
        port = _port(scope)
        host = headers.get("host", "")
        own_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        if host not in own_hosts:
            await _plain(send_secured, 403, "unknown host: open the URL memframe ui printed")
            return
        cookie_name = f"{COOKIE_PREFIX}{port}"
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given:
            if not _equal(given[-1], self.token):
                await _plain(send_secured, 403, "wrong token")
                return
            if scope["method"] in SAFE_METHODS:
                rest = urlencode([(k, v) for k, v in query if k != "token"])
                path = scope.get("raw_path") or scope.get("path", "/").encode()
                location = path.decode("latin-1") + (f"?{rest}" if rest else "")
                await _redirect(send_secured, location, cookie_name, self.cookie_value)
                return
        else:
            credential = _credential(headers, cookie_name)
            if credential is None:
                await _plain(
                    send_secured,
                    401,
                    "this page needs the token in the URL that memframe ui printed",
                )
                return
            kind, value = credential
            expected = self.cookie_value if kind == "cookie" else self.token
            if not _equal(value, expected):
                await _plain(send_secured, 403, "wrong token")
                return
        if scope["method"] not in SAFE_METHODS and not _same_origin(headers, f"http://{host}"):
            await _plain(send_secured, 403, "cross-origin request refused")
            return
        scope.setdefault("state", {})["csrf_token"] = self.csrf
        await self.app(scope, receive, send_secured)


def check_csrf(form: dict[str, str], expected: str) -> bool:
    """The form's ``csrf`` field is the UI's CSRF token."""
    return _equal(form.get("csrf", ""), expected)


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        out.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return out


def _port(scope: Scope) -> int | None:
    server = scope.get("server")
    return server[1] if server else None


def _credential(headers: dict[str, str], cookie_name: str) -> tuple[str, str] | None:
    authorization = headers.get("authorization", "")
    if authorization[:7].lower() == "bearer ":
        return "bearer", authorization[7:].strip()
    raw = headers.get("cookie")
    if raw:
        cookies: SimpleCookie = SimpleCookie()
        try:
            cookies.load(raw)
        except Exception:  # a malformed Cookie header is no credential
            return None
        if cookie_name in cookies:
            return "cookie", cookies[cookie_name].value
    return None


def _same_origin(headers: dict[str, str], origin: str) -> bool:
    """``Origin`` is ``origin``; without one (or ``null``), ``Referer`` is a page of it."""
    given = headers.get("origin")
    if given and given != "null":
        return given == origin
    if given == "null":
        return False
    referer = headers.get("referer", "")
    return referer == origin or referer.startswith(origin + "/")


async def _plain(send: Send, status: int, text: str) -> None:
    body = f"{status}: {text}\n".encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *([(b"www-authenticate", b'Bearer realm="memframe ui"')] if status == 401 else []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str, cookie_name: str, value: str) -> None:
    cookie = f"{cookie_name}={value}; Path=/; HttpOnly; SameSite=Lax"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1")),
                (b"set-cookie", cookie.encode()),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})
