"""Every status the OpenAPI document lists, provoked on real servers (uvicorn on 127.0.0.1, real
sockets) on SQLite and on PostgreSQL, each body validated against the document's schema for that
operation and status. A status added to the document without a way to provoke it here fails the
test, as does a body that does not match its schema."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest

from memframe.server import open_storage
from memframe.server.app import API_PATH, ServerOptions, TeamMemoryApp
from memframe.server.openapi import OPENAPI
from memframe.server.serving import RunningServer, ServeConfig
from memframe.server.storage import Storage, hash_token

TOKEN = "mft_statuses"
OUTSIDER = "mft_statuses_outsider"
REPO = "acme/app"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TIMEOUT = 0.3  # request timeout of the servers below: headers and body
AWS_KEY = "AKIAZ7VQ3M4HKDPXLW2R"

Seen = dict[tuple[str, str, str], int]  # (path, METHOD, status) -> times provoked


def documented() -> set[tuple[str, str, str]]:
    return {
        (path, method.upper(), status)
        for path, operations in OPENAPI["paths"].items()
        for method, operation in operations.items()
        for status in operation["responses"]
    }


def check(seen: Seen, path: str, method: str, status: int, body: bytes) -> Any:
    """``body`` valid for ``method path`` answered ``status`` per the document; recorded."""
    responses = OPENAPI["paths"][path][method.lower()]["responses"]
    assert str(status) in responses, f"{method} {path} answered {status}: not documented"
    content = responses[str(status)].get("content")
    if content is None:
        assert body == b"", f"{method} {path} {status} has a body the document does not list"
        data = None
    else:
        data = json.loads(body)
        schema = content["application/json"]["schema"]
        jsonschema.Draft7Validator(
            {"allOf": [schema], "components": OPENAPI["components"]}
        ).validate(data)
    seen[(path, method, str(status))] = seen.get((path, method, str(status)), 0) + 1
    return data


def error_code(data: Any) -> str:
    return str(data["error"]["details"]["error_code"])


def raw_exchange(address: tuple[str, int], data: bytes) -> tuple[int, dict[str, str], bytes]:
    """``data`` sent on a new connection; the one answer read until the server closes it or
    its Content-Length is complete: status, headers (lower-case names), body."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(data)
        return read_answer(sock)


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed without an answer: {received!r}"
        received += chunk
    head, body = received.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, value = line.split(":", 1)
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed before the body was complete"
        body += chunk
    return status, headers, body[:length]


def put_request(body: bytes, token: str = TOKEN, **headers: str) -> bytes:
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (
        f"PUT {API_PATH}?repo={REPO} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def serve(storage: Storage, **config: Any) -> RunningServer:
    options = ServerOptions(max_entries=3, max_body_bytes=2000, request_timeout=TIMEOUT)
    return RunningServer(
        TeamMemoryApp(storage, options), ServeConfig(request_timeout=TIMEOUT, **config)
    )


@pytest.fixture
def engine(storage_url: str) -> Iterator[tuple[str, Storage]]:
    storage = open_storage(storage_url)
    storage.add_token("statuses", hash_token(TOKEN), (REPO,))
    storage.add_token("outsider", hash_token(OUTSIDER), ("someone/else",))
    try:
        yield storage_url, storage
    finally:
        storage.close()


def _api_statuses(seen: Seen, server: RunningServer) -> None:
    url = f"{server.url}{API_PATH}?repo={REPO}"
    with httpx.Client(timeout=10) as client:
        # GET
        missing = client.get(url, headers=AUTH)
        assert error_code(check(seen, API_PATH, "GET", missing.status_code, missing.content)) == (
            "not_found"
        )
        stored = client.put(url, headers=AUTH, json={"entries": {"a.md": "alpha"}})
        result = check(seen, API_PATH, "PUT", stored.status_code, stored.content)
        assert stored.status_code == 200 and stored.headers["etag"] == f'"{result["checksum"]}"'
        full = client.get(url, headers=AUTH)
        repo = check(seen, API_PATH, "GET", full.status_code, full.content)
        assert repo["content"]["entries"] == {"a.md": "alpha"}
        assert repo["checksum"] == result["checksum"]
        cached = client.get(url, headers={**AUTH, "If-None-Match": f'"{result["checksum"]}"'})
        assert cached.status_code == 304
        check(seen, API_PATH, "GET", 304, cached.content)
        for response, code in [
            (client.get(f"{server.url}{API_PATH}?repo=nope", headers=AUTH), "bad_repo"),
            (client.get(url), "unauthorized"),
            (client.get(url, headers={"Authorization": f"Bearer {OUTSIDER}"}), "forbidden"),
        ]:
            assert error_code(check(seen, API_PATH, "GET", response.status_code, response.content))
            assert error_code(response.json()) == code
        # PUT
        for response, code in [
            (client.put(url, headers=AUTH, content=b"{not json"), "bad_json"),
            (client.put(url, content=b"{}"), "unauthorized"),
            (
                client.put(url, headers={"Authorization": f"Bearer {OUTSIDER}"}, json={}),
                "forbidden",
            ),
            (
                client.put(
                    url,
                    headers={**AUTH, "If-Match": '"sha256:stale"'},
                    json={"entries": {"b.md": "beta"}},
                ),
                "precondition_failed",
            ),
            (
                client.put(url, headers=AUTH, json={"entries": {f"{n}.md": "x" for n in range(4)}}),
                "team_memory_too_many_entries",
            ),
            (
                client.put(url, headers=AUTH, json={"entries": {"big.md": "x" * 3000}}),
                "request_too_large",
            ),
            (
                client.put(url, headers=AUTH, json={"entries": {"keys.md": AWS_KEY}}),
                "team_memory_secret_detected",
            ),
        ]:
            data = check(seen, API_PATH, "PUT", response.status_code, response.content)
            assert error_code(data) == code, data
        # GET-only paths
        for path in ("/healthz", "/openapi.json"):
            ok = client.get(f"{server.url}{path}")
            check(seen, path, "GET", ok.status_code, ok.content)
            refused = client.post(f"{server.url}{path}", content=b"x")
            assert refused.status_code == 405 and refused.headers["allow"] == "GET"
            assert error_code(refused.json()) == "method_not_allowed"
            jsonschema.validate(refused.json(), OPENAPI["components"]["schemas"]["Error"])
    chunked = raw_exchange(
        server.address,
        f"PUT {API_PATH}?repo={REPO} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n".encode(),
    )
    assert error_code(check(seen, API_PATH, "PUT", chunked[0], chunked[2])) == "length_required"
    # 408: headers that never end (answered by the protocol), a body that never ends (the app)
    for path, method in [(API_PATH, "GET"), ("/healthz", "GET"), ("/openapi.json", "GET")]:
        status, headers, body = raw_exchange(
            server.address, f"{method} {path}?repo={REPO} HTTP/1.1\r\nHost: x\r\n".encode()
        )
        assert headers["connection"] == "close"
        assert error_code(check(seen, path, method, status, body)) == "request_timeout"
    slow = put_request(b'{"entries": {"a.md": "never complete"}}')
    status, headers, body = raw_exchange(server.address, slow[:-10])
    assert error_code(check(seen, API_PATH, "PUT", status, body)) == "request_timeout"
    assert headers["connection"] == "close"


def _busy_statuses(seen: Seen, storage: Storage) -> None:
    """503 from the transport: past the connection cap, past the concurrency limit."""
    for config, code in [
        ({"max_connections": 1}, "too_many_connections"),
        ({"limit_concurrency": 2}, "concurrency_limit"),
    ]:
        with serve(storage, **config) as server:
            held = socket.create_connection(server.address, timeout=10)
            try:  # one connection open (answered once, now idle): the next is one too many
                held.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                assert read_answer(held)[0] == 200
                for path, method, data in [
                    (API_PATH, "GET", f"GET {API_PATH}?repo={REPO} HTTP/1.1\r\nHost: x\r\n\r\n"),
                    (API_PATH, "PUT", put_request(b'{"entries": {}}').decode()),
                    ("/healthz", "GET", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
                    ("/openapi.json", "GET", "GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n"),
                ]:
                    status, headers, body = raw_exchange(server.address, data.encode())
                    assert status == 503 and headers["connection"] == "close"
                    assert headers["content-type"] == "application/json"
                    assert error_code(check(seen, path, method, status, body)) == code
            finally:
                held.close()


def _failing_statuses(seen: Seen, server: RunningServer, storage_url: str) -> None:
    """500 once the storage fails (its tables dropped under it); then 503 shutting_down once
    the app is closed while the server still listens."""
    if storage_url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(storage_url.removeprefix("sqlite:///")) as db:
            db.execute("DROP TABLE entries")
            db.execute("DROP TABLE repos")
    else:
        import psycopg

        with psycopg.connect(storage_url, autocommit=True) as conn:
            conn.execute("DROP TABLE entries, repos")
    url = f"{server.url}{API_PATH}?repo={REPO}"
    with httpx.Client(timeout=10) as client:
        broken = client.get(url, headers=AUTH)
        assert error_code(check(seen, API_PATH, "GET", broken.status_code, broken.content)) == (
            "internal_error"
        )
        broken = client.put(url, headers=AUTH, json={"entries": {"c.md": "gamma"}})
        assert error_code(check(seen, API_PATH, "PUT", broken.status_code, broken.content)) == (
            "internal_error"
        )
        assert client.get(f"{server.url}/healthz").status_code == 200  # needs no storage
    server.app.close()
    with httpx.Client(timeout=10) as client:
        for path, method in [
            (API_PATH, "GET"),
            (API_PATH, "PUT"),
            ("/healthz", "GET"),
            ("/openapi.json", "GET"),
        ]:
            target = f"{server.url}{path}?repo={REPO}" if path == API_PATH else server.url + path
            body = b'{"entries": {}}' if method == "PUT" else None
            answer = client.request(method, target, headers=AUTH, content=body)
            assert answer.headers["connection"] == "close"
            data = check(seen, path, method, answer.status_code, answer.content)
            assert error_code(data) == "shutting_down"


def test_every_documented_status_is_provoked_and_its_body_conforms(engine):
    storage_url, storage = engine
    seen: Seen = {}
    with serve(storage) as server:
        _api_statuses(seen, server)
        _busy_statuses(seen, storage)
        _failing_statuses(seen, server, storage_url)
    assert set(seen) == documented(), f"never provoked: {sorted(documented() - set(seen))}"


def test_a_bad_token_is_answered_before_anything_about_the_body(engine):
    """The token of a small PUT is checked in the write's transaction; a refused body still
    gets 401/403 first when the token is bad, as for a large body (checked before reading)."""
    _, storage = engine
    outsider = {"Authorization": f"Bearer {OUTSIDER}"}
    bogus = {"Authorization": "Bearer mft_nobody"}
    secret = {"entries": {"keys.md": AWS_KEY}}
    with serve(storage) as server, httpx.Client(timeout=10) as client:
        url = f"{server.url}{API_PATH}?repo={REPO}"
        for headers, content, status in [
            (bogus, b"{not json", 401),
            (outsider, b"{not json", 403),
            (bogus, json.dumps(secret).encode(), 401),
            (outsider, json.dumps(secret).encode(), 403),
            (outsider, json.dumps({"entries": {"a.md": "x" * 3000}}).encode(), 403),
            (outsider, json.dumps({"entries": {"a.md": "x"}}).encode(), 403),
            (AUTH, b"{not json", 400),
            (AUTH, json.dumps(secret).encode(), 422),
        ]:
            answer = client.put(url, headers=headers, content=content)
            assert answer.status_code == status, (headers, content[:40], answer.text)
        assert storage.get(REPO) is None  # nothing refused was stored
        storage.revoke_token("statuses")
        revoked = client.put(url, headers=AUTH, json={"entries": {"a.md": "x"}})
        assert revoked.status_code == 401
        assert storage.get(REPO) is None
