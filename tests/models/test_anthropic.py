"""The ``anthropic`` backend against a fake Messages endpoint on 127.0.0.1."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator

import pytest

from memframe.models import (
    ModelError,
    ModelNotConfiguredError,
    ModelRequest,
    ModelResponseError,
    ModelTransientError,
    ToolCall,
    ToolSpec,
)
from memframe.models.anthropic import AnthropicBackend
from tests.fakes.providers import (
    FakeProvider,
    Reply,
    anthropic_error,
    anthropic_text,
    anthropic_tool_use,
)

KEY = "sk-ant-test-0123456789abcdef"
EPHEMERAL = {"type": "ephemeral"}
READ = ToolSpec(
    name="Read",
    description="Read a file.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)


@pytest.fixture
def backend(fake_anthropic: FakeProvider) -> Iterator[AnthropicBackend]:
    with AnthropicBackend(
        api_key=KEY, base_url=fake_anthropic.base_url, model="claude-test", backoff_base=0.001
    ) as backend:
        yield backend


def conversation() -> list[dict]:
    return [
        {"role": "user", "content": "Read the notes."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "n.md"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "notes"}],
        },
        {"role": "user", "content": "Now summarize."},
    ]


def request(**changes) -> ModelRequest:
    fields = {
        "system": "You keep notes.",
        "messages": conversation(),
        "tools": (READ,),
        "max_tokens": 512,
        "timeout": 10.0,
    }
    fields.update(changes)
    return ModelRequest(**fields)


# -- request shape -------------------------------------------------------------------------------


def test_request_shape_and_headers(fake_anthropic, backend):
    fake_anthropic.script(anthropic_text("Summary.", usage={"input_tokens": 9, "output_tokens": 2}))
    response = backend.complete(request())

    assert response.text == "Summary."
    assert response.tool_calls == ()
    assert response.stop_reason == "end_turn"
    assert response.usage == {"input_tokens": 9, "output_tokens": 2}

    [sent] = fake_anthropic.requests
    assert sent.method == "POST"
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    body = sent.json
    assert list(body) == ["model", "max_tokens", "system", "tools", "messages"]
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 512
    assert body["system"] == [
        {"type": "text", "text": "You keep notes.", "cache_control": EPHEMERAL}
    ]
    assert body["tools"] == [READ.to_wire()]
    assert body["messages"] == conversation()


def test_no_tools_and_no_system_leave_their_keys_out(fake_anthropic, backend):
    fake_anthropic.script(anthropic_text("ok"))
    backend.complete(request(system="", tools=()))
    assert list(fake_anthropic.requests[0].json) == ["model", "max_tokens", "messages"]


def test_messages_keep_only_role_and_content(fake_anthropic, backend):
    fake_anthropic.script(anthropic_text("ok"))
    backend.complete(request(messages=[{"role": "user", "content": "hi", "meta": {"x": 1}}]))
    assert fake_anthropic.requests[0].json["messages"] == [{"role": "user", "content": "hi"}]


def test_identical_requests_serialize_to_identical_bytes(fake_anthropic, backend):
    fake_anthropic.script(anthropic_text("a"), anthropic_text("b"))
    backend.complete(request(cache_prefix=2))
    backend.complete(request(cache_prefix=2))
    first, second = fake_anthropic.requests
    assert first.body == second.body
    assert first.body == backend.encode(request(cache_prefix=2))
    assert b'"model":"claude-test","max_tokens":512,"system":' in first.body


def test_cache_control_on_last_system_block_and_shared_prefix(fake_anthropic, backend):
    system = [
        {"type": "text", "text": "Block one."},
        {"type": "text", "text": "Block two."},
    ]
    req = request(system=system, cache_prefix=3)
    before = copy.deepcopy((req.system, req.messages))
    fake_anthropic.script(anthropic_text("ok"))
    backend.complete(req)

    body = fake_anthropic.requests[0].json
    assert body["system"] == [
        {"type": "text", "text": "Block one."},
        {"type": "text", "text": "Block two.", "cache_control": EPHEMERAL},
    ]
    messages = body["messages"]
    assert messages[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": "notes",
            "cache_control": EPHEMERAL,
        }
    ]
    for index in (0, 1, 3):
        assert "cache_control" not in str(messages[index])
    assert (req.system, req.messages) == before  # the request is never mutated


def test_cache_prefix_on_string_content_becomes_a_text_block(fake_anthropic, backend):
    fake_anthropic.script(anthropic_text("ok"))
    req = request(cache_prefix=1)
    backend.complete(req)
    messages = fake_anthropic.requests[0].json["messages"]
    assert messages[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "Read the notes.", "cache_control": EPHEMERAL}],
    }
    assert req.messages[0] == {"role": "user", "content": "Read the notes."}


def test_cache_prefix_beyond_the_conversation_marks_the_last_message(fake_anthropic, backend):
    fake_anthropic.script(anthropic_text("ok"))
    backend.complete(request(cache_prefix=99))
    messages = fake_anthropic.requests[0].json["messages"]
    assert messages[-1]["content"][-1]["cache_control"] == EPHEMERAL


def test_no_message_breakpoint_without_cache_prefix(fake_anthropic, backend):
    fake_anthropic.script(anthropic_text("ok"))
    backend.complete(request(cache_prefix=0))
    body = fake_anthropic.requests[0].json
    assert body["messages"] == conversation()
    assert "cache_control" in body["system"][-1]


# -- responses -----------------------------------------------------------------------------------


def test_tool_use_is_parsed(fake_anthropic, backend):
    fake_anthropic.script(
        anthropic_tool_use("Read", {"path": "a.md"}, id="toolu_42", text="Let me look.")
    )
    response = backend.complete(request())
    assert response.text == "Let me look."
    assert response.tool_calls == (ToolCall(id="toolu_42", name="Read", input={"path": "a.md"}),)
    assert response.stop_reason == "tool_use"
    assert response.usage["cache_read_input_tokens"] == 100
    assert response.to_message()["content"][1]["id"] == "toolu_42"


def test_text_blocks_are_concatenated_and_other_blocks_ignored(fake_anthropic, backend):
    body = anthropic_text("")
    body["content"] = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Part one. "},
        {"type": "text", "text": "Part two."},
    ]
    body["usage"] = {"input_tokens": 3, "output_tokens": 4, "cache_creation": {"x": 1}}
    fake_anthropic.script(body)
    response = backend.complete(request())
    assert response.text == "Part one. Part two."
    assert response.usage == {"input_tokens": 3, "output_tokens": 4}


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        (Reply(body=b"<html>oops</html>"), "not JSON"),
        (Reply(body=[1, 2]), "JSON list"),
        ({"type": "message", "role": "assistant"}, "no content list"),
        (anthropic_tool_use("Read", ["not", "an", "object"]), "not an object"),
        ({"content": [{"type": "text"}]}, "no text string"),
        ({"content": [{"type": "tool_use", "name": "Read", "input": {}}]}, "has no id"),
        ({"content": ["text"]}, "not an object"),
    ],
)
def test_malformed_bodies_are_response_errors(fake_anthropic, backend, reply, fragment):
    fake_anthropic.script(reply)
    with pytest.raises(ModelResponseError, match=fragment):
        backend.complete(request())
    assert len(fake_anthropic.requests) == 1  # not retried


# -- retries and errors --------------------------------------------------------------------------


def test_overloaded_then_success_is_retried(fake_anthropic, backend):
    fake_anthropic.script(
        anthropic_error(529, "overloaded_error", "Overloaded"), anthropic_text("done")
    )
    assert backend.complete(request()).text == "done"
    assert len(fake_anthropic.requests) == 2
    assert fake_anthropic.requests[0].body == fake_anthropic.requests[1].body


def test_rate_limit_honours_retry_after(fake_anthropic, backend):
    fake_anthropic.script(
        anthropic_error(429, "rate_limit_error", "slow down", retry_after="0"),
        anthropic_text("done"),
    )
    assert backend.complete(request()).text == "done"
    assert len(fake_anthropic.requests) == 2


def test_dropped_connection_is_retried(fake_anthropic, backend):
    fake_anthropic.script(Reply(drop=True), anthropic_text("after drop"))
    assert backend.complete(request()).text == "after drop"
    assert len(fake_anthropic.requests) == 2


def test_slow_answer_times_out_and_is_retried(fake_anthropic, backend):
    fake_anthropic.script(Reply(delay=5.0, body=anthropic_text("late")), anthropic_text("fast"))
    started = time.monotonic()
    assert backend.complete(request(timeout=0.3)).text == "fast"
    assert time.monotonic() - started < 4
    assert len(fake_anthropic.requests) == 2


def test_persistent_server_errors_give_up_after_max_retries(fake_anthropic, backend):
    fake_anthropic.script(*[anthropic_error(500, "api_error", "Internal boom")] * 4)
    with pytest.raises(ModelTransientError) as caught:
        backend.complete(request())
    assert len(fake_anthropic.requests) == 4  # max_retries=3: four attempts
    message = str(caught.value)
    assert "/v1/messages" in message
    assert "500" in message
    assert "Internal boom" in message
    assert "4 attempts" in message


def test_max_retries_zero_means_one_attempt(fake_anthropic):
    fake_anthropic.script(anthropic_error(503, "api_error", "unavailable"))
    with (
        AnthropicBackend(api_key=KEY, base_url=fake_anthropic.base_url, max_retries=0) as backend,
        pytest.raises(ModelTransientError, match="503"),
    ):
        backend.complete(request())
    assert len(fake_anthropic.requests) == 1


def test_bad_request_is_not_retried(fake_anthropic, backend):
    fake_anthropic.script(
        anthropic_error(400, "invalid_request_error", "messages: roles must alternate")
    )
    with pytest.raises(ModelError) as caught:
        backend.complete(request())
    assert not isinstance(caught.value, ModelTransientError)
    assert "400" in str(caught.value)
    assert "messages: roles must alternate" in str(caught.value)
    assert len(fake_anthropic.requests) == 1


def test_unauthorized_hints_at_the_key_without_showing_it(fake_anthropic, backend):
    fake_anthropic.script(anthropic_error(401, "authentication_error", f"invalid x-api-key {KEY}"))
    with pytest.raises(ModelError) as caught:
        backend.complete(request())
    message = str(caught.value)
    assert "401" in message
    assert "authentication_error" in message
    assert "API key" in message
    assert KEY not in message
    assert len(fake_anthropic.requests) == 1


def test_unreachable_endpoint_is_transient(fake_anthropic):
    port = fake_anthropic.port
    fake_anthropic.close()  # nothing listens there any more
    with (
        AnthropicBackend(
            api_key=KEY, base_url=f"http://127.0.0.1:{port}", max_retries=1, backoff_base=0.001
        ) as backend,
        pytest.raises(ModelTransientError, match="no response"),
    ):
        backend.complete(request())


def test_closed_backend_refuses_calls(fake_anthropic):
    backend = AnthropicBackend(api_key=KEY, base_url=fake_anthropic.base_url)
    backend.close()
    backend.close()  # idempotent
    with pytest.raises(ModelError, match="closed"):
        backend.complete(request())


# -- configuration -------------------------------------------------------------------------------


def test_from_options_reads_the_environment():
    backend = AnthropicBackend.from_options(
        {},
        {
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/",
            "MEMFRAME_ANTHROPIC_MODEL": "claude-env",
        },
    )
    assert backend.base_url == "http://127.0.0.1:9"
    assert backend.model == "claude-env"
    assert KEY not in repr(backend)
    backend.close()


def test_the_environment_wins_over_options():
    """As for every memframe option: environment > settings file."""
    backend = AnthropicBackend.from_options(
        {"api_key": "k-options-123456", "model": "claude-opt", "max_retries": 0, "backoff_base": 0},
        {"ANTHROPIC_API_KEY": KEY, "MEMFRAME_ANTHROPIC_MODEL": "claude-env"},
    )
    assert backend.model == "claude-env"
    assert backend._api_key == KEY
    assert backend.base_url == "https://api.anthropic.com"
    assert backend._http.max_retries == 0
    backend.close()


def test_missing_key_names_both_ways_to_set_it():
    with pytest.raises(ModelNotConfiguredError) as caught:
        AnthropicBackend.from_options({}, {})
    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert "models.anthropic.api_key" in str(caught.value)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"api_key": 123}, "api_key must be a non-empty string"),
        ({"api_key": KEY, "model": ""}, "model must be a non-empty string"),
        ({"api_key": KEY, "max_retries": "3"}, "max_retries must be an integer >= 0"),
        ({"api_key": KEY, "max_retries": True}, "max_retries"),
        ({"api_key": KEY, "backoff_base": -1}, "backoff_base must be a number >= 0 and < 1e.06"),
        ({"api_key": KEY, "base_url": "ftp://example"}, "not an http"),
    ],
)
def test_bad_options_are_configuration_errors(options, fragment):
    with pytest.raises(ModelNotConfiguredError, match=fragment):
        AnthropicBackend.from_options(options, {})


def test_breakpoint_skips_trailing_thinking_blocks(fake_anthropic, backend):
    messages = [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Answer."},
                {"type": "thinking", "thinking": "t", "signature": "s"},
            ],
        },
        {"role": "user", "content": "next"},
    ]
    fake_anthropic.script(anthropic_text("ok"))
    backend.complete(request(messages=messages, cache_prefix=1))
    sent = fake_anthropic.requests[0].json["messages"][0]["content"]
    assert sent[0]["cache_control"] == EPHEMERAL
    assert "cache_control" not in sent[1]


def test_an_unclosed_backend_leaves_no_socket_behind(fake_anthropic):
    import gc

    fake_anthropic.script(anthropic_text("ok"))
    backend = AnthropicBackend(api_key=KEY, base_url=fake_anthropic.base_url)
    backend.complete(request())
    del backend
    gc.collect()  # a ResourceWarning here would fail the test (filterwarnings = error)
