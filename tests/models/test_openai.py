"""The ``openai`` backend against a fake Chat Completions endpoint on 127.0.0.1."""

from __future__ import annotations

import copy
import json
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
from memframe.models.openai import OpenAIBackend
from tests.fakes.providers import FakeProvider, Reply, openai_error, openai_text, openai_tool_call

KEY = "sk-proj-test-0123456789abcdef"
GREP = ToolSpec(
    name="Grep",
    description="Search files.",
    input_schema={
        "type": "object",
        "properties": {"pattern": {"type": "string"}},
        "required": ["pattern"],
    },
)


@pytest.fixture
def backend(fake_openai: FakeProvider) -> Iterator[OpenAIBackend]:
    with OpenAIBackend(model="llama3.1", base_url=fake_openai.base_url, backoff_base=0.001) as b:
        yield b


def tool_conversation() -> list[dict]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "Find TODOs."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "grep it", "signature": "s"},
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "toolu_1", "name": "Grep", "input": {"pattern": "TODO"}},
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "Grep",
                    "input": {"pattern": "FIXME"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py:3: TODO"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "no match"}],
                    "is_error": False,
                },
                {"type": "text", "text": "Anything else?"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t3", "name": "Grep", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "content": ""}]},
    ]


def request(**changes) -> ModelRequest:
    fields = {
        "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be right."}],
        "messages": [{"role": "user", "content": "Hello"}],
        "max_tokens": 256,
        "timeout": 10.0,
    }
    fields.update(changes)
    return ModelRequest(**fields)


def test_request_shape_without_key(fake_openai, backend):
    fake_openai.script(openai_text("Hi!"))
    response = backend.complete(request())

    assert response.text == "Hi!"
    assert response.stop_reason == "end_turn"
    assert response.usage == {"input_tokens": 55, "output_tokens": 9, "cache_read_input_tokens": 0}
    [sent] = fake_openai.requests
    assert sent.method == "POST"
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers  # a local server needs no key
    body = sent.json
    assert list(body) == ["model", "max_tokens", "messages"]
    assert body["model"] == "llama3.1"
    assert body["max_tokens"] == 256
    assert body["messages"] == [
        {"role": "system", "content": "Be brief.\n\nBe right."},
        {"role": "user", "content": "Hello"},
    ]


def test_api_key_is_sent_as_bearer(fake_openai):
    fake_openai.script(openai_text("ok"))
    with OpenAIBackend(model="gpt-test", base_url=fake_openai.base_url, api_key=KEY) as backend:
        backend.complete(request())
    assert fake_openai.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_tool_conversation_is_translated(fake_openai, backend):
    req = request(system="", messages=tool_conversation(), tools=(GREP,))
    before = copy.deepcopy(req.messages)
    fake_openai.script(openai_text("Done."))
    backend.complete(req)

    body = fake_openai.requests[0].json
    assert list(body) == ["model", "max_tokens", "messages", "tools"]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "Grep",
                "description": "Search files.",
                "parameters": dict(GREP.input_schema),
            },
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": "Find TODOs."},
        {
            "role": "assistant",
            "content": "Searching.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "Grep", "arguments": '{"pattern":"TODO"}'},
                },
                {
                    "id": "toolu_2",
                    "type": "function",
                    "function": {"name": "Grep", "arguments": '{"pattern":"FIXME"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "a.py:3: TODO"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "no match"},
        {"role": "user", "content": "Anything else?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "t3", "type": "function", "function": {"name": "Grep", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "t3", "content": ""},
    ]
    assert req.messages == before


def test_identical_requests_serialize_to_identical_bytes(fake_openai, backend):
    fake_openai.script(openai_text("a"), openai_text("b"))
    req = request(messages=tool_conversation(), tools=(GREP,))
    backend.complete(req)
    backend.complete(request(messages=tool_conversation(), tools=(GREP,)))
    first, second = fake_openai.requests
    assert first.body == second.body == backend.encode(req)


def test_tool_call_is_parsed(fake_openai, backend):
    fake_openai.script(openai_tool_call("Grep", {"pattern": "x"}, id="call_abc"))
    response = backend.complete(request(tools=(GREP,)))
    assert response.text == ""
    assert response.tool_calls == (ToolCall(id="call_abc", name="Grep", input={"pattern": "x"}),)
    assert response.stop_reason == "tool_use"


def test_tool_call_with_stop_finish_reason_is_still_tool_use(fake_openai, backend):
    body = openai_tool_call("Grep", "", id=None)
    body["choices"][0]["finish_reason"] = "stop"
    del body["choices"][0]["message"]["tool_calls"][0]["id"]
    fake_openai.script(body)
    response = backend.complete(request(tools=(GREP,)))
    assert response.tool_calls == (ToolCall(id="call_1", name="Grep", input={}),)
    assert response.stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("length", "max_tokens"),
        ("stop", "end_turn"),
        ("content_filter", "content_filter"),
        (None, "end_turn"),
    ],
)
def test_finish_reason_mapping(fake_openai, backend, finish, expected):
    body = openai_text("t")
    body["choices"][0]["finish_reason"] = finish
    fake_openai.script(body)
    assert backend.complete(request()).stop_reason == expected


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        (openai_tool_call("Grep", "{not json"), "not valid JSON"),
        (openai_tool_call("Grep", "[1, 2]"), "JSON list, not an object"),
        (Reply(body=b"nope"), "not JSON"),
        (Reply(body=[{"choices": []}]), "JSON list"),
        ({"object": "chat.completion", "choices": []}, "no choices"),
        ({"choices": [{"index": 0}]}, "no message"),
        ({"choices": [{"message": {"content": 5}}]}, "content is a int"),
        ({"choices": [{"message": {"tool_calls": {"x": 1}}}]}, "tool_calls is not a list"),
    ],
)
def test_malformed_bodies_are_response_errors(fake_openai, backend, reply, fragment):
    fake_openai.script(reply)
    with pytest.raises(ModelResponseError, match=fragment):
        backend.complete(request())


def test_rate_limit_then_success(fake_openai, backend):
    fake_openai.script(openai_error(429, "Rate limit reached", retry_after="0"), openai_text("ok"))
    assert backend.complete(request()).text == "ok"
    assert len(fake_openai.requests) == 2


def test_dropped_connection_then_success(fake_openai, backend):
    fake_openai.script(Reply(drop=True), openai_text("ok"))
    assert backend.complete(request()).text == "ok"
    assert len(fake_openai.requests) == 2


def test_persistent_unavailability_is_transient(fake_openai, backend):
    fake_openai.script(*[openai_error(503, "model is loading")] * 4)
    with pytest.raises(ModelTransientError, match=r"503.*model is loading"):
        backend.complete(request())
    assert len(fake_openai.requests) == 4


def test_client_errors_carry_the_provider_message(fake_openai, backend):
    fake_openai.script(openai_error(404, "The model `nope` does not exist"))
    with pytest.raises(ModelError, match=r"404.*The model `nope` does not exist") as caught:
        backend.complete(request())
    assert not isinstance(caught.value, ModelTransientError)
    assert len(fake_openai.requests) == 1


def test_unauthorized_never_shows_the_key(fake_openai):
    fake_openai.script(openai_error(401, f"Incorrect API key provided: {KEY}"))
    with (
        OpenAIBackend(model="m", base_url=fake_openai.base_url, api_key=KEY) as backend,
        pytest.raises(ModelError) as caught,
    ):
        backend.complete(request())
    assert KEY not in str(caught.value)
    assert "API key" in str(caught.value)


# -- configuration -------------------------------------------------------------------------------


def test_local_base_url_needs_no_key():
    backend = OpenAIBackend.from_options(
        {"base_url": "http://127.0.0.1:11434/v1", "model": "m"}, {}
    )
    assert backend.endpoint == "http://127.0.0.1:11434/v1/chat/completions"
    backend.close()


def test_environment_supplies_url_key_and_model():
    backend = OpenAIBackend.from_options(
        {},
        {
            "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1/",
            "OPENAI_API_KEY": KEY,
            "MEMFRAME_OPENAI_MODEL": "qwen",
        },
    )
    assert backend.base_url == "http://127.0.0.1:8000/v1"
    assert backend.model == "qwen"
    assert KEY not in repr(backend)
    backend.close()


def test_missing_model_is_a_configuration_error():
    with pytest.raises(ModelNotConfiguredError, match="MEMFRAME_OPENAI_MODEL") as caught:
        OpenAIBackend.from_options({"base_url": "http://127.0.0.1:1/v1"}, {})
    assert "models.openai.model" in str(caught.value)


def test_openai_default_endpoint_needs_a_key():
    with pytest.raises(ModelNotConfiguredError, match="OPENAI_API_KEY"):
        OpenAIBackend.from_options({"model": "gpt-4o-mini"}, {})
    with pytest.raises(ModelNotConfiguredError, match="OPENAI_API_KEY"):
        OpenAIBackend(model="gpt-4o-mini")
    backend = OpenAIBackend.from_options({"model": "gpt-4o-mini"}, {"OPENAI_API_KEY": KEY})
    assert backend.endpoint == "https://api.openai.com/v1/chat/completions"
    backend.close()


def test_bad_option_types():
    with pytest.raises(ModelNotConfiguredError, match=r"models\.openai\.model"):
        OpenAIBackend.from_options({"base_url": "http://127.0.0.1:1/v1", "model": 7}, {})
    with pytest.raises(ModelNotConfiguredError, match="max_retries"):
        OpenAIBackend.from_options(
            {"base_url": "http://127.0.0.1:1/v1", "model": "m", "max_retries": -1}, {}
        )


def test_arguments_json_is_compact_and_ordered(fake_openai, backend):
    fake_openai.script(openai_text("ok"))
    tool_use = {"type": "tool_use", "id": "a", "name": "Grep", "input": {"z": 1, "a": [1, 2]}}
    backend.complete(request(messages=[{"role": "assistant", "content": [tool_use]}]))
    arguments = fake_openai.requests[0].json["messages"][1]["tool_calls"][0]["function"][
        "arguments"
    ]
    assert arguments == '{"z":1,"a":[1,2]}'
    assert json.loads(arguments) == {"z": 1, "a": [1, 2]}
