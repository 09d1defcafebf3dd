"""The UI's door over plain HTTP (httpx on 127.0.0.1): no token, no page; a wrong one, 403; the
token becomes a cookie; writes need the same origin and the CSRF token; no CORS, ever."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from memframe.ui.security import COOKIE_PREFIX
from tests.ui.conftest import SECRET_FILE, SESSION_ID, UiProject

PAGES = [
    "/",
    "/memories",
    "/memories?q=database",
    "/memory/never-mock-the-database.md",
    "/index",
    "/sessions",
    f"/sessions/{SESSION_ID}",
    "/docs",
    "/team",
    "/dream",
    "/api/memories",
    "/api/status",
    "/static/ui.css",
    "/static/ui.js",
    "/no-such-page",
]
WRITES = [
    ("/memory/never-mock-the-database.md/edit", {"body": "changed"}),
    ("/memory/never-mock-the-database.md/forget", {}),
    ("/memory/never-mock-the-database.md/move", {"scope": "team"}),
    ("/dream", {}),
]


def _client(project: UiProject, **kwargs: object) -> httpx.Client:
    return httpx.Client(base_url=project.origin, follow_redirects=False, timeout=30, **kwargs)


@contextlib.contextmanager
def _logged_in(project: UiProject) -> Iterator[httpx.Client]:
    with _client(project) as client:
        reply = client.get(f"/?token={project.ui.token}")
        assert reply.status_code == 303
        yield client


def _csrf(client: httpx.Client, page: str = "/memory/never-mock-the-database.md") -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', client.get(page).text)
    assert match, "the page has no CSRF field"
    return match.group(1)


def _no_cors(reply: httpx.Response) -> None:
    assert not [h for h in reply.headers if h.lower().startswith("access-control-")]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_needs_the_token(ui_project: UiProject, page: str) -> None:
    with _client(ui_project) as client:
        reply = client.get(page)
        assert reply.status_code == 401
        assert "token" in reply.text
        assert ui_project.ui.token not in reply.text
        _no_cors(reply)


@pytest.mark.parametrize("page", ["/memories", "/api/memories", "/static/ui.css"])
def test_a_wrong_token_is_forbidden(ui_project: UiProject, page: str) -> None:
    token = ui_project.ui.token
    wrong = ("y" if token[0] == "x" else "x") + token[1:]  # never the token itself
    port = ui_project.ui.port
    with _client(ui_project) as client:
        assert client.get(f"{page}?token={wrong}").status_code == 403
        assert client.get(page, headers={"authorization": f"Bearer {wrong}"}).status_code == 403
        client.cookies.set(f"{COOKIE_PREFIX}{port}", wrong)
        assert client.get(page).status_code == 403
        # the token itself is not the cookie: the cookie is derived from it
        client.cookies.set(f"{COOKIE_PREFIX}{port}", ui_project.ui.token)
        assert client.get(page).status_code == 403


def test_the_token_becomes_a_cookie_and_leaves_the_url(ui_project: UiProject) -> None:
    with _client(ui_project) as client:
        reply = client.get(f"/memories?type=project&token={ui_project.ui.token}")
        assert reply.status_code == 303
        assert reply.headers["location"] == "/memories?type=project"
        cookie = reply.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE_PREFIX}{ui_project.ui.port}=")
        assert "HttpOnly" in cookie
        assert "SameSite=Lax" in cookie
        assert ui_project.ui.token not in cookie
        page = client.get("/memories?type=project")
        assert page.status_code == 200
        assert "Run the suite with ./dev test" in page.text
        assert "Prefers terse answers" not in page.text  # a user memory: filtered out


def test_bearer_token_for_the_api(ui_project: UiProject) -> None:
    with _client(ui_project) as client:
        headers = {"authorization": f"Bearer {ui_project.ui.token}"}
        reply = client.get("/api/memories?q=database", headers=headers)
        assert reply.status_code == 200
        names = [m["name"] for m in reply.json()["memories"]]
        assert names[0] == "Never mock the database"
        status = client.get("/api/status", headers=headers).json()
        assert status["team_sync"]["configured"] is True


def test_a_foreign_host_header_is_refused(ui_project: UiProject) -> None:
    """A page on another site reaching the UI through a rebound DNS name sends its own Host."""
    with _logged_in(ui_project) as client:
        assert client.get("/memories").status_code == 200
        reply = client.get("/memories", headers={"host": f"attacker.example:{ui_project.ui.port}"})
        assert reply.status_code == 403
        localhost = client.get("/memories", headers={"host": f"localhost:{ui_project.ui.port}"})
        assert localhost.status_code == 200


@pytest.mark.parametrize(("path", "form"), WRITES)
def test_cross_origin_posts_are_refused(ui_project: UiProject, path: str, form: dict) -> None:
    target = ui_project.path("never-mock-the-database.md")
    before = target.read_bytes()
    with _logged_in(ui_project) as client:
        csrf = _csrf(client)
        body = {**form, "csrf": csrf}
        for headers in (
            {"origin": "http://attacker.example"},
            {"origin": f"http://127.0.0.1:{ui_project.ui.port + 1}"},
            {"origin": "null"},
            {"referer": "http://attacker.example/page"},
            {"referer": f"{ui_project.origin}.attacker.example/"},
            {},  # neither Origin nor Referer
        ):
            reply = client.post(path, data=body, headers=headers)
            assert reply.status_code == 403, headers
            _no_cors(reply)
        assert target.read_bytes() == before


@pytest.mark.parametrize(("path", "form"), WRITES[:3])
def test_posts_need_the_csrf_token(ui_project: UiProject, path: str, form: dict) -> None:
    target = ui_project.path("never-mock-the-database.md")
    before = target.read_bytes()
    origin = {"origin": ui_project.origin}
    with _logged_in(ui_project) as client:
        assert client.post(path, data=form, headers=origin).status_code == 403
        bad = {**form, "csrf": "0" * 64}
        assert client.post(path, data=bad, headers=origin).status_code == 403
    with _logged_in(ui_project) as client:
        csrf = _csrf(client)
    with _client(ui_project) as anonymous:  # a CSRF token alone is no login
        reply = anonymous.post(path, data={**form, "csrf": csrf}, headers=origin)
        assert reply.status_code == 401
    assert target.read_bytes() == before


def test_a_same_origin_post_with_the_csrf_token_edits(ui_project: UiProject) -> None:
    with _logged_in(ui_project) as client:
        csrf = _csrf(client)
        reply = client.post(
            "/memory/never-mock-the-database.md/edit",
            data={"csrf": csrf, "description": "real database in integration tests"},
            headers={"referer": f"{ui_project.origin}/memory/never-mock-the-database.md"},
        )
        assert reply.status_code == 303
        assert reply.headers["location"] == "/memory/never-mock-the-database.md?done=saved"
    memory = ui_project.store.find("never-mock-the-database.md")
    assert memory.description == "real database in integration tests"
    assert "real database in integration tests" in ui_project.store.index_text()


def test_no_cors_and_strict_headers(ui_project: UiProject) -> None:
    with _logged_in(ui_project) as client:
        foreign = {"origin": "http://attacker.example"}
        page = client.get("/api/memories", headers=foreign)
        assert page.status_code == 200
        _no_cors(page)
        preflight = client.options(
            "/memory/never-mock-the-database.md/forget",
            headers={**foreign, "access-control-request-method": "POST"},
        )
        assert preflight.status_code in (403, 405)
        _no_cors(preflight)
        headers = client.get("/memories").headers
        assert "default-src 'none'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["cache-control"] == "no-store"
        assert headers["x-content-type-options"] == "nosniff"


def test_everything_is_escaped(ui_project: UiProject) -> None:
    with _logged_in(ui_project) as client:
        page = client.get("/memory/prefers-terse-answers.md").text
        assert "<script>alert" not in page
        assert "&lt;script&gt;alert" in page
        notes = client.get(f"/sessions/{SESSION_ID}").text
        assert "<b>every</b>" not in notes
        assert "&lt;b&gt;every&lt;/b&gt;" in notes
        assert "<strong>browser test</strong>" in notes


def test_the_gate_verdict_is_shown_and_a_secret_move_refused(ui_project: UiProject) -> None:
    with _logged_in(ui_project) as client:
        page = client.get(f"/memory/{SECRET_FILE}").text
        assert "would block" in page
        assert ui_project.secret_rule in page
        csrf = _csrf(client)
        reply = client.post(
            f"/memory/{SECRET_FILE}/move",
            data={"csrf": csrf, "scope": "team"},
            headers={"origin": ui_project.origin},
        )
        assert reply.status_code == 422
        assert "Blocked by the secret gate" in reply.text
        assert ui_project.secret_rule in reply.text
    assert ui_project.path(SECRET_FILE).is_file()
    assert not ui_project.path(f"team/{SECRET_FILE}").exists()


def test_pages_render(ui_project: UiProject) -> None:
    with _logged_in(ui_project) as client:
        index = client.get("/index").text
        assert 'id="loaded-lines"' in index
        team = client.get("/team").text
        assert "ci-credentials.md" in team
        assert ui_project.secret_rule in team
        docs = client.get("/docs").text
        assert "Architecture" in docs
        dream = client.get("/dream").text
        assert "merged dev-server-port-2.md into old-port.md" in dream
        missing = client.get("/memory/nothing-here.md")
        assert missing.status_code == 404
        assert client.get("/sessions/..%2Fmemory").status_code == 404
        assert urlsplit(client.get("/").headers["location"]).path == "/memories"


def test_memory_md_shows_which_lines_the_agent_loads(ui_project: UiProject) -> None:
    from memframe.memdir.index import MAX_LINES, load_for_prompt

    lines = ["# Memory index", ""] + [f"- note {n}: a line the user added" for n in range(240)]
    text = "\n".join(lines) + "\n"
    ui_project.store.index_path.write_text(text, encoding="utf-8")
    loaded, warnings = load_for_prompt(text)
    assert warnings
    with _logged_in(ui_project) as client:
        page = client.get("/index").text
    assert f'<span id="loaded-lines">{MAX_LINES}</span> of {len(lines)} loaded' in page
    assert page.count('class="loaded"') == MAX_LINES
    assert page.count('class="cut"') == len(lines) - MAX_LINES
    assert "Only part of it was loaded" in page
    last_loaded = loaded.split("\n\n> WARNING")[0].splitlines()[-1]
    assert f'<li class="loaded" value="{MAX_LINES}"><span>{last_loaded}</span>' in page


def test_consolidate_now_records_what_it_did(ui_project: UiProject) -> None:
    from memframe.ui.data import dream_history

    before = len(dream_history(ui_project.store.root))
    with _logged_in(ui_project) as client:
        csrf = _csrf(client, "/dream")
        reply = client.post("/dream", data={"csrf": csrf}, headers={"origin": ui_project.origin})
        assert reply.status_code == 303
        assert "done=consolidated" in reply.headers["location"]
        page = client.get(reply.headers["location"]).text
    history = dream_history(ui_project.store.root)
    assert len(history) == before + 1
    assert history[0]["source"] == "memframe ui"
    assert history[0]["ran"] is True
    assert "memframe ui" in page
