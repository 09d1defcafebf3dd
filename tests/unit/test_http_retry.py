"""The one retry policy (``memframe._http_retry``), alone and through both HTTP clients that use it
(the model backends' ``JsonPoster`` and the team-sync ``Http``), against a real server on
127.0.0.1 that answers from a script."""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memframe._http_retry import (
    RETRYABLE_STATUSES,
    RetriesExhausted,
    RetryPolicy,
    Transient,
    call_with_retries,
    is_retryable,
    parse_retry_after,
)
from memframe.models import ModelError, ModelTransientError
from memframe.models._http import JsonPoster
from memframe.team_sync.http import Http, RequestError
from memframe.team_sync.settings import SyncConfig

# -- the policy alone ----------------------------------------------------------------------------


def test_retryable_statuses():
    assert {408, 429, 500, 502, 503, 504, 529} == RETRYABLE_STATUSES
    assert all(is_retryable(s) for s in RETRYABLE_STATUSES)
    assert not any(is_retryable(s) for s in (200, 304, 400, 401, 404, 412, 413, 501, 505))


def http_date(when: float) -> str:
    return email.utils.formatdate(when, usegmt=True)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("3", 3.0),
        (" 1.5 ", 1.5),
        ("0", 0.0),
        ("3600", 3600.0),  # the cap is the policy's, not the parser's
        (None, None),
        ("", None),
        ("   ", None),
        ("-1", None),
        ("nan", None),
        ("inf", None),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:00", None),  # a date without its GMT
    ],
)
def test_parse_retry_after_seconds(header, seconds):
    assert parse_retry_after(header) == seconds


def test_parse_retry_after_http_dates():
    now = 1_700_000_000.0
    assert parse_retry_after(http_date(now + 30), now=now) == 30.0
    assert parse_retry_after(http_date(now - 30), now=now) == 0.0  # in the past: at once
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=now) == 0.0
    later = parse_retry_after(http_date(time.time() + 20))
    assert later is not None and 18 < later <= 20


def test_backoff_is_capped_exponential_with_jitter():
    policy = RetryPolicy(max_retries=10, backoff_base=0.5, max_wait=5.0)
    rng = random.Random(7)
    for attempt in range(10):
        ceiling = 0.5 * 2**attempt
        for _ in range(50):
            delay = policy.backoff(attempt, rng)
            assert min(ceiling / 2, 5.0) <= delay <= min(ceiling, 5.0)
    spread = {policy.backoff(2, rng) for _ in range(20)}
    assert len(spread) > 10  # jittered, not one fixed value
    assert policy.backoff(10_000) == 5.0  # no overflow on a huge attempt number


def test_wait_honours_retry_after_under_the_cap():
    policy = RetryPolicy(backoff_base=0.5, max_wait=30.0)
    assert policy.wait(0, 2.0) == 2.0
    assert policy.wait(0, 3600.0) == 30.0
    assert 0.25 <= policy.wait(0, None) <= 0.5


@pytest.mark.parametrize(
    "kwargs",
    [{"max_retries": -1}, {"backoff_base": -0.1}, {"max_wait": -1}, {"backoff_base": float("nan")}],
)
def test_policy_refuses_negative_values(kwargs):
    with pytest.raises(ValueError, match="must be >= 0"):
        RetryPolicy(**kwargs)


def test_call_with_retries_returns_the_first_answer_and_reports_each_retry():
    outcomes: deque[Any] = deque([Transient("one"), Transient("two", retry_after=0.0), "done"])
    slept: list[float] = []
    retries: list[tuple[int, str]] = []
    answer = call_with_retries(
        outcomes.popleft,
        RetryPolicy(max_retries=3, backoff_base=0.01),
        sleep=slept.append,
        on_retry=lambda n, problem, delay: retries.append((n, problem)),
    )
    assert answer == "done"
    assert retries == [(1, "one"), (2, "two")]
    assert len(slept) == 1 and 0.005 <= slept[0] <= 0.01  # a zero wait sleeps not at all


def test_call_with_retries_runs_out_without_a_last_sleep():
    slept: list[float] = []
    with pytest.raises(RetriesExhausted) as caught:
        call_with_retries(
            lambda: Transient("HTTP 503"), RetryPolicy(max_retries=2), sleep=slept.append
        )
    assert (caught.value.attempts, caught.value.reason, caught.value.problem) == (
        3,
        "retries",
        "HTTP 503",
    )
    assert len(slept) == 2


def test_call_with_retries_does_not_retry_what_the_attempt_raises():
    calls = []

    def attempt() -> str:
        calls.append(1)
        raise KeyError("permanent")

    with pytest.raises(KeyError):
        call_with_retries(attempt, RetryPolicy())
    assert calls == [1]


def test_a_deadline_bounds_the_total_time():
    slept: list[float] = []
    deadline = time.monotonic() + 1.0
    with pytest.raises(RetriesExhausted) as caught:
        call_with_retries(
            lambda: Transient("busy", retry_after=5.0),
            RetryPolicy(max_retries=3),
            deadline=deadline,
            sleep=slept.append,
        )
    assert caught.value.reason == "deadline" and caught.value.attempts == 1
    assert slept == []  # a wait that would pass the deadline is not begun


# -- a scripted server on 127.0.0.1 --------------------------------------------------------------


@dataclass
class Scripted:
    status: int = 200
    body: bytes = b'{"ok": true}'
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


class ScriptServer:
    """Answers GET and POST from a script, first in first out; 200 ``{"ok": true}`` after it."""

    def __init__(self) -> None:
        self.script: deque[Scripted] = deque()
        self.count = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                with lock:
                    outer.count += 1
                    reply = outer.script.popleft() if outer.script else Scripted()
                if reply.drop:
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def server() -> Iterator[ScriptServer]:
    running = ScriptServer()
    yield running
    running.close()


# Both clients, behind one call: ``run(server, sleep, deadline)`` answers the decoded body or
# raises the client's own error; ``exhausted`` is that error type.


def run_models(server: ScriptServer, sleep: Callable[[float], None], deadline: float | None) -> Any:
    poster = JsonPoster(provider="test", max_retries=3, backoff_base=0.5, sleep=sleep)
    try:
        return poster.post_json(server.url + "/v1/x", b"{}", headers={}, timeout=5.0)
    finally:
        poster.close()


def run_team_sync(
    server: ScriptServer, sleep: Callable[[float], None], deadline: float | None
) -> Any:
    config = SyncConfig(server=server.url, repo="acme/x", token="t" * 20, backoff_base=0.5)
    http = Http(config, sleep=sleep, deadline=deadline)
    try:
        return http.request("GET", {"repo": "acme/x"}, {}).data
    finally:
        http.close()


CLIENTS = [
    pytest.param(run_models, (ModelTransientError,), id="models"),
    pytest.param(run_team_sync, (RequestError,), id="team_sync"),
]


@pytest.mark.parametrize(("run", "exhausted"), CLIENTS)
def test_both_clients_retry_the_same_statuses_with_the_same_waits(server, run, exhausted):
    later = http_date(time.time() + 3600)
    server.script.extend(
        [Scripted(503), Scripted(408), Scripted(429, headers={"Retry-After": "2"})]
    )
    slept: list[float] = []
    assert run(server, slept.append, None) == {"ok": True}
    assert server.count == 4
    assert 0.25 <= slept[0] <= 0.5  # backoff: half to all of backoff_base, doubling
    assert 0.5 <= slept[1] <= 1.0
    assert slept[2] == 2.0  # the server's Retry-After instead

    server.count = 0
    server.script.extend([Scripted(drop=True), Scripted(502)])
    assert run(server, [].append, None) == {"ok": True}
    assert server.count == 3  # a connection closed without an answer is retried too

    server.count = 0
    server.script.extend([Scripted(503), Scripted(529, headers={"Retry-After": later})])
    slept = []
    assert run(server, slept.append, None) == {"ok": True}
    assert server.count == 3
    assert 0.25 <= slept[0] <= 0.5
    assert slept[1] == 30.0  # an HTTP date an hour away, capped at the longest wait


@pytest.mark.parametrize(("run", "exhausted"), CLIENTS)
@pytest.mark.parametrize("status", sorted(RETRYABLE_STATUSES))
def test_both_clients_give_up_after_four_attempts(server, run, exhausted, status):
    for _ in range(4):
        server.script.append(Scripted(status, body=b'{"error": {"message": "busy"}}'))
    slept: list[float] = []
    with pytest.raises(exhausted) as caught:
        run(server, slept.append, None)
    assert server.count == 4 and len(slept) == 3
    assert f"HTTP {status}" in str(caught.value)
    for attempt, delay in enumerate(slept):
        assert 0.25 * 2**attempt <= delay <= 0.5 * 2**attempt


def test_a_status_that_is_not_retryable_ends_both_at_once(server):
    server.script.append(Scripted(404, body=b'{"error": {"message": "no such thing"}}'))
    with pytest.raises(ModelError, match="HTTP 404: no such thing"):
        run_models(server, [].append, None)
    assert server.count == 1
    server.script.append(Scripted(501, body=b"{}"))
    reply_data = run_team_sync(server, [].append, None)  # the team client hands it back
    assert reply_data == {} and server.count == 2


def test_the_deadline_bounds_a_team_sync_request(server):
    server.script.extend([Scripted(503, headers={"Retry-After": "20"})] * 4)
    slept: list[float] = []
    with pytest.raises(RequestError, match="in the time allowed") as caught:
        run_team_sync(server, slept.append, time.monotonic() + 5.0)
    assert caught.value.kind == "transient"
    assert server.count == 1 and slept == []
