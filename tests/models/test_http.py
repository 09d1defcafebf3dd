"""The shared retry logic of the HTTP backends (``memframe.models._http``)."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from memframe.models import ModelError, ModelNotConfiguredError, ModelTransientError
from memframe.models._http import (
    JsonPoster,
    encode_json,
    provider_error_text,
    safe_url,
)
from tests.fakes.providers import FakeProvider, Reply, anthropic_error, anthropic_text


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def poster(sleeps: list[float]) -> Iterator[JsonPoster]:
    poster = JsonPoster(provider="test", max_retries=3, backoff_base=0.5, sleep=sleeps.append)
    yield poster
    poster.close()


def post(poster: JsonPoster, fake: FakeProvider) -> dict:
    return poster.post_json(fake.base_url + "/v1/messages", b"{}", headers={}, timeout=5.0)


def test_backoff_doubles_with_jitter(fake_anthropic, poster, sleeps):
    fake_anthropic.script(*[Reply(status=503, body={})] * 3, anthropic_text("ok"))
    assert post(poster, fake_anthropic)["content"][0]["text"] == "ok"
    assert len(sleeps) == 3
    for attempt, slept in enumerate(sleeps):
        ceiling = 0.5 * 2**attempt
        assert ceiling / 2 <= slept <= ceiling


def test_retry_after_is_honoured_and_capped(fake_anthropic, poster, sleeps):
    fake_anthropic.script(
        anthropic_error(429, "rate_limit_error", "wait", retry_after="2"),
        anthropic_error(429, "rate_limit_error", "wait", retry_after="3600"),
        anthropic_error(529, "overloaded_error", "busy", retry_after="soon"),
        anthropic_text("ok"),
    )
    post(poster, fake_anthropic)
    assert sleeps[:2] == [2.0, 30.0]
    assert 1.0 <= sleeps[2] <= 2.0  # not a number: the usual backoff


def test_no_sleep_after_the_last_attempt(fake_anthropic, poster, sleeps):
    fake_anthropic.script(*[Reply(status=502, body=b"bad gateway")] * 4)
    with pytest.raises(ModelTransientError, match="HTTP 502: bad gateway"):
        post(poster, fake_anthropic)
    assert len(sleeps) == 3


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 529])
def test_retryable_statuses(fake_anthropic, poster, status):
    fake_anthropic.script(Reply(status=status, body={}), {"ok": True})
    assert post(poster, fake_anthropic) == {"ok": True}


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 422])
def test_other_statuses_fail_at_once(fake_anthropic, poster, status):
    fake_anthropic.script(Reply(status=status, body={"error": {"message": "nope"}}))
    with pytest.raises(ModelError, match=f"HTTP {status}: nope") as caught:
        post(poster, fake_anthropic)
    assert not isinstance(caught.value, ModelTransientError)
    assert ("API key" in str(caught.value)) == (status in (401, 403))


def test_unusable_url_is_a_configuration_error(poster):
    with pytest.raises(ModelNotConfiguredError, match="cannot POST"):
        poster.post_json("gopher://127.0.0.1/x", b"{}", headers={}, timeout=1.0)


def test_provider_error_text_shapes():
    anthropic = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert provider_error_text(orjson.dumps(anthropic)) == "overloaded_error: Overloaded"
    openai = {"error": {"message": "Bad model", "type": "invalid_request_error"}}
    assert provider_error_text(orjson.dumps(openai)) == "invalid_request_error: Bad model"
    assert provider_error_text(b'{"error": "model not found"}') == "model not found"
    assert provider_error_text(b"plain\n text") == "plain text"
    assert provider_error_text(b"") == "(empty body)"
    assert len(provider_error_text(b"x" * 5000)) <= 300


def test_safe_url_drops_credentials_and_query():
    assert safe_url("https://user:secret@host:8443/v1/x?key=abc#f") == "https://host:8443/v1/x"


def test_encode_json_keeps_insertion_order_and_copies_mappings():
    from types import MappingProxyType

    body = {"b": 1, "a": MappingProxyType({"z": (1, 2), "y": None})}
    assert encode_json(body) == b'{"b":1,"a":{"z":[1,2],"y":null}}'
    with pytest.raises(ModelError, match="cannot be encoded"):
        encode_json({"a": object()})


def test_undecodable_body_is_a_model_error(fake_anthropic, poster):
    fake_anthropic.script(Reply(body=b"not gzip at all", headers={"content-encoding": "gzip"}))
    with pytest.raises(ModelError, match="DecodingError"):
        post(poster, fake_anthropic)
