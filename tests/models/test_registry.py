"""``BackendRegistry`` with the built-in HTTP and CLI backends and custom factories (the
``offline`` backend has its own tests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from memframe.models import (
    BackendRegistry,
    ModelBackend,
    ModelNotConfiguredError,
    ModelRequest,
    ModelResponse,
)
from memframe.models.anthropic import AnthropicBackend
from memframe.models.claude_cli import ClaudeCliBackend
from memframe.models.openai import OpenAIBackend
from tests.fakes.fake_claude import install_fake_claude
from tests.fakes.providers import anthropic_text, openai_text

KEY = "sk-ant-test-0123456789abcdef"
HELLO = ModelRequest(system="", messages=[{"role": "user", "content": "hello"}], timeout=10.0)


class EchoBackend:
    name = "echo"

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = dict(options)

    def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text=str(request.messages[-1]["content"]))


def test_builtin_names_are_listed():
    names = BackendRegistry().names()
    assert {"anthropic", "openai", "claude-cli"} <= set(names)
    assert names == sorted(names)


def test_create_anthropic_and_call_it(fake_anthropic):
    fake_anthropic.script(anthropic_text("hi there"))
    backend = BackendRegistry().create(
        "anthropic", {"api_key": KEY, "base_url": fake_anthropic.base_url}, env={}
    )
    try:
        assert isinstance(backend, AnthropicBackend)
        assert isinstance(backend, ModelBackend)
        assert backend.complete(HELLO).text == "hi there"
    finally:
        backend.close()
    assert fake_anthropic.requests[0].headers["x-api-key"] == KEY


def test_create_anthropic_from_the_process_environment(fake_anthropic, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    fake_anthropic.script(anthropic_text("from env"))
    backend = BackendRegistry().create("anthropic")
    try:
        assert backend.complete(HELLO).text == "from env"
    finally:
        backend.close()  # type: ignore[attr-defined]


def test_anthropic_without_key_is_not_configured():
    with pytest.raises(ModelNotConfiguredError, match="ANTHROPIC_API_KEY"):
        BackendRegistry().create("anthropic", {}, env={})


def test_create_openai_for_a_local_server(fake_openai):
    fake_openai.script(openai_text("local hi"))
    backend = BackendRegistry().create(
        "openai", {"base_url": fake_openai.base_url, "model": "llama3.1"}, env={}
    )
    try:
        assert isinstance(backend, OpenAIBackend)
        assert backend.complete(HELLO).text == "local hi"
    finally:
        backend.close()
    assert "authorization" not in fake_openai.requests[0].headers


def test_openai_without_model_is_not_configured(fake_openai):
    with pytest.raises(ModelNotConfiguredError, match="MEMFRAME_OPENAI_MODEL"):
        BackendRegistry().create("openai", {"base_url": fake_openai.base_url}, env={})


def test_create_claude_cli(tmp_path):
    exe = install_fake_claude(tmp_path / "bin", ["cli hi"], log=tmp_path / "log.jsonl")
    backend = BackendRegistry().create("claude-cli", {"bin": str(exe)}, env={})
    assert isinstance(backend, ClaudeCliBackend)
    assert backend.complete(HELLO).text == "cli hi"


def test_claude_cli_without_binary_is_not_configured(tmp_path):
    with pytest.raises(ModelNotConfiguredError, match="MEMFRAME_CLAUDE_BIN"):
        BackendRegistry().create("claude-cli", {}, env={"PATH": str(tmp_path)})


def test_unknown_name_lists_the_available_ones():
    registry = BackendRegistry()
    with pytest.raises(ModelNotConfiguredError) as caught:
        registry.create("gpt-7")
    message = str(caught.value)
    assert "'gpt-7'" in message
    for name in ("anthropic", "claude-cli", "openai"):
        assert name in message


def test_custom_factory():
    registry = BackendRegistry()
    seen: list[tuple[dict, dict]] = []

    def factory(options: Mapping[str, Any], env: Mapping[str, str]) -> EchoBackend:
        seen.append((dict(options), dict(env)))
        return EchoBackend(options)

    registry.register("echo", factory)
    assert "echo" in registry.names()
    backend = registry.create("echo", {"x": 1}, env={"A": "b"})
    assert backend.complete(HELLO).text == "hello"
    assert seen == [({"x": 1}, {"A": "b"})]


def test_a_layer_may_replace_a_builtin():
    registry = BackendRegistry()
    registry.register("anthropic", lambda options, env: EchoBackend(options))
    assert isinstance(registry.create("anthropic", env={}), EchoBackend)


def test_factory_returning_a_non_backend():
    registry = BackendRegistry()
    registry.register("broken", lambda options, env: 42)
    with pytest.raises(ModelNotConfiguredError, match="not a backend"):
        registry.create("broken", env={})


def test_options_must_be_an_object():
    with pytest.raises(ModelNotConfiguredError, match=r"models\.anthropic must be an object"):
        BackendRegistry().create("anthropic", ["not", "a", "mapping"], env={})  # type: ignore[arg-type]


def test_register_validates_its_arguments():
    registry = BackendRegistry()
    with pytest.raises(ValueError, match="non-empty name"):
        registry.register("", EchoBackend)
    with pytest.raises(TypeError, match="callable"):
        registry.register("x", "not callable")
