"""The team memory server's wire contract (docs/server.md) over real HTTP on 127.0.0.1, on every
storage engine (the ``storage`` fixture: SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
import http.client
import json
import socket

import httpx
import pytest

from memframe.server.app import API_PATH, start_server
from memframe.server.storage import hash_token
from tests.native.vectors import positives

TOKEN = "mft_test_token"
REPO = "acme/app"


@pytest.fixture
def server(storage):
    storage.add_token("tester", hash_token(TOKEN), (REPO, "acme/other"))
    storage.add_token("outsider", hash_token("mft_outsider"), ("someone/else",))
    with start_server(storage, max_entries=5, max_body_bytes=600_000) as running:
        yield running


@pytest.fixture
def api(server):
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
    ) as client:
        yield client


def url(repo: str = REPO, **extra: str) -> str:
    query = "&".join([f"repo={repo}", *(f"{k}={v}" for k, v in extra.items())])
    return f"{API_PATH}?{query}"


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["details"]["error_code"]


def snapshot(api) -> tuple[int, dict]:
    response = api.get(url())
    return response.status_code, (response.json() if response.status_code == 200 else {})


# -- reading and writing ------------------------------------------------------------------------


def test_get_of_an_empty_repo_is_404(api):
    response = api.get(url())
    assert response.status_code == 404
    assert error_code(response) == "not_found"


def test_put_then_get_with_checksums_etag_and_304(api):
    put = api.put(url(), json={"entries": {"a.md": "alpha", "notes/b.md": "béta ✓"}})
    assert put.status_code == 200
    checksum = put.json()["checksum"]
    assert checksum.startswith("sha256:") and put.headers["ETag"] == f'"{checksum}"'
    assert put.json()["lastModified"].endswith("Z")
    got = api.get(url())
    assert got.status_code == 200
    body = got.json()
    assert body["repo"] == REPO and body["organizationId"] == "local" and body["version"] == 1
    assert body["checksum"] == checksum
    assert body["content"]["entries"] == {"a.md": "alpha", "notes/b.md": "béta ✓"}
    assert body["content"]["entryChecksums"] == {
        "a.md": sha("alpha"),
        "notes/b.md": sha("béta ✓"),
    }
    assert got.headers["ETag"] == f'"{checksum}"'
    unchanged = api.get(url(), headers={"If-None-Match": f'"{checksum}"'})
    assert unchanged.status_code == 304 and unchanged.content == b""
    stale = api.get(url(), headers={"If-None-Match": '"sha256:old"'})
    assert stale.status_code == 200


def test_view_hashes_has_no_texts(api):
    api.put(url(), json={"entries": {"a.md": "alpha"}})
    body = api.get(url(view="hashes")).json()
    assert "entries" not in body["content"]
    assert body["content"]["entryChecksums"] == {"a.md": sha("alpha")}
    assert api.get(url(view="everything")).status_code == 400


def test_put_is_an_upsert(api):
    api.put(url(), json={"entries": {"a.md": "one", "b.md": "two"}})
    second = api.put(url(), json={"entries": {"b.md": "TWO", "c.md": "three"}})
    assert second.status_code == 200
    entries = api.get(url()).json()["content"]["entries"]
    assert entries == {"a.md": "one", "b.md": "TWO", "c.md": "three"}
    assert api.get(url()).json()["version"] == 2


def test_if_match_guards_against_lost_updates(api):
    first = api.put(url(), json={"entries": {"a.md": "one"}}).json()["checksum"]
    ok = api.put(url(), json={"entries": {"a.md": "two"}}, headers={"If-Match": f'"{first}"'})
    assert ok.status_code == 200
    stale = api.put(url(), json={"entries": {"a.md": "three"}}, headers={"If-Match": f'"{first}"'})
    assert stale.status_code == 412
    assert error_code(stale) == "precondition_failed"
    assert stale.json()["error"]["details"]["current_checksum"] == ok.json()["checksum"]
    assert api.get(url()).json()["content"]["entries"] == {"a.md": "two"}


def test_too_many_entries_is_a_structured_413(api):
    api.put(url(), json={"entries": {f"k{n}.md": "x" for n in range(4)}})
    before = snapshot(api)
    response = api.put(url(), json={"entries": {"k9.md": "x", "k8.md": "y"}})
    assert response.status_code == 413
    assert response.json()["error"]["details"] == {
        "error_code": "team_memory_too_many_entries",
        "max_entries": 5,
        "received_entries": 6,
    }
    assert snapshot(api) == before


def test_entry_and_body_limits(api):
    big = "x" * 250_001
    response = api.put(url(), json={"entries": {"big.md": big}})
    assert response.status_code == 413 and error_code(response) == "team_memory_entry_too_large"
    assert response.json()["error"]["details"]["key"] == "big.md"
    exactly = api.put(url(), json={"entries": {"max.md": "y" * 250_000}})
    assert exactly.status_code == 200
    body = {"entries": {f"e{n}.md": "z" * 200_000 for n in range(4)}}  # ~800 KB > 600,000
    too_big = api.put(url(), json=body)
    assert too_big.status_code == 413 and error_code(too_big) == "request_too_large"
    assert set(api.get(url()).json()["content"]["entries"]) == {"max.md"}


# -- auth ---------------------------------------------------------------------------------------


def test_tokens_are_required_and_bound_to_repos(server, storage):
    with httpx.Client(base_url=server.url, timeout=10) as anonymous:
        assert anonymous.get(url()).status_code == 401
        bad = anonymous.get(url(), headers={"Authorization": "Bearer nope"})
        assert bad.status_code == 401 and error_code(bad) == "unauthorized"
        outsider = anonymous.get(url(), headers={"Authorization": "Bearer mft_outsider"})
        assert outsider.status_code == 403
        write = anonymous.put(
            url(), json={"entries": {"a.md": "x"}}, headers={"Authorization": "Bearer mft_outsider"}
        )
        assert write.status_code == 403
        storage.revoke_token("tester")
        revoked = anonymous.get(url(), headers={"Authorization": f"Bearer {TOKEN}"})
        assert revoked.status_code == 401


def test_tokens_are_stored_hashed(storage):
    storage.add_token("hashed", hash_token("mft_plain_value"), (REPO,))
    assert storage.token(hash_token("mft_plain_value")) is not None
    assert storage.token("mft_plain_value") is None
    assert all("mft_plain_value" not in repr(t) for t in storage.tokens())


# -- the server-side secret scan ----------------------------------------------------------------


def one_vector_per_rule():
    seen = {}
    for vector in positives():
        seen.setdefault(vector.rule_id, vector)
    return sorted(seen.values(), key=lambda v: v.rule_id)


@pytest.mark.parametrize("vector", one_vector_per_rule(), ids=lambda v: v.rule_id)
def test_an_entry_with_a_secret_is_refused_with_422(api, vector):
    response = api.put(
        url(), json={"entries": {"clean.md": "nothing to see", "leak.md": vector.text}}
    )
    assert response.status_code == 422
    details = response.json()["error"]["details"]
    assert details["error_code"] == "team_memory_secret_detected"
    assert details["findings"][0]["key"] == "leak.md"
    assert vector.rule_id in details["findings"][0]["rules"]
    assert api.get(url()).status_code == 404  # nothing stored, not even the clean entry


def test_every_bundled_rule_is_covered():
    from memframe.scanner import default_scanner

    covered = {v.rule_id for v in one_vector_per_rule()}
    assert covered == set(default_scanner().rules.ids())


# -- hostile input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"\xff\xfe\x00garbage", "bad_json"),
        (b'{"entries": "not an object"}', "bad_body"),
        (b"[1, 2, 3]", "bad_body"),
        (b'{"entries": {"a.md": 7}}', "bad_entry"),
        (b'{"entries": {"../escape.md": "x"}}', "bad_key"),
        (b'{"entries": {"/etc/passwd.md": "x"}}', "bad_key"),
        (b'{"entries": {"a\\\\b.md": "x"}}', "bad_key"),
        (b'{"entries": {"a/%2e%2e/b.md": "x"}}', "bad_key"),
        ('{"entries": {"a\u2215b.md": "x"}}'.encode(), "bad_key"),
        (b'{"entries": {"nul\\u0000.md": "x"}}', "bad_key"),
        (b'{"entries": {"not-markdown.txt": "x"}}', "bad_key"),
        (b'{"entries": {"a.md": "\\ud800"}}', "bad_json"),
    ],
)
def test_hostile_bodies_get_4xx_and_change_nothing(api, body, code):
    api.put(url(), json={"entries": {"keep.md": "kept"}})
    before = snapshot(api)
    response = api.put(url(), content=body, headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500
    assert error_code(response) == code, response.text
    assert snapshot(api) == before


def test_ten_megabytes_and_a_hundred_thousand_keys(api):
    api.put(url(), json={"entries": {"keep.md": "kept"}})
    before = snapshot(api)
    huge = api.put(url(), content=b"x" * 10_000_000, headers={"Content-Type": "application/json"})
    assert huge.status_code == 413
    many = {"entries": {f"k{n}.md": "" for n in range(100_000)}}
    response = api.put(url(), json=many)
    assert response.status_code == 413
    assert snapshot(api) == before
    assert api.get(url()).status_code == 200  # the server still answers


def test_missing_length_and_chunked_bodies_are_refused(server):
    host, port = server.address
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            f"PUT {url()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".encode()
        )
        assert b" 411 " in sock.recv(4096).split(b"\r\n")[0] + b" "


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/nope", 404),
        ("DELETE", url(), 405),
        ("GET", f"{API_PATH}", 400),
        ("GET", f"{API_PATH}?repo=not-a-repo", 400),
        ("GET", f"{API_PATH}?repo=a/b&repo=c/d", 400),
        ("GET", f"{API_PATH}?repo=../../etc", 400),
    ],
)
def test_bad_routes(api, method, path, status):
    response = api.request(method, path)
    assert response.status_code == status
    assert "error" in response.json()


def test_keep_alive_survives_an_error(server):
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    connection.request("PUT", url(), body=b'{"entries": 1}', headers=headers)
    first = connection.getresponse()
    assert first.status == 400
    first.read()
    connection.request("PUT", url(), body=json.dumps({"entries": {"a.md": "x"}}), headers=headers)
    assert connection.getresponse().status == 200
    connection.close()


def test_openapi_description(api):
    spec = api.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    operations = spec["paths"][API_PATH]
    assert set(operations) == {"get", "put"}
    assert set(operations["put"]["responses"]) >= {"200", "400", "401", "403", "412", "413", "422"}
