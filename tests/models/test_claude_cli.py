"""The ``claude-cli`` backend, run against a fake ``claude`` executable."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memframe.models import (
    FORK_GUARD_ENV,
    ModelError,
    ModelNotConfiguredError,
    ModelRequest,
    ModelResponseError,
    ModelTransientError,
    ToolCall,
    ToolSpec,
)
from memframe.models.claude_cli import ClaudeCliBackend, parse_tool_answer, render_prompt
from tests.fakes.fake_claude import install_fake_claude, read_log

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the fake claude is a shell script")

WRITE = ToolSpec(
    name="Write",
    description="Write a file.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
    },
)
READ = ToolSpec(name="Read", description="Read a file.", input_schema={"type": "object"})


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "claude-log.jsonl"


@pytest.fixture
def make_backend(tmp_path: Path, log: Path):
    def make(replies: list, **options) -> ClaudeCliBackend:
        exe = install_fake_claude(tmp_path / "bin", replies, log=log)
        return ClaudeCliBackend.from_options({"bin": str(exe), **options}, {})

    return make


def request(**changes) -> ModelRequest:
    fields = {
        "system": "You maintain session notes.",
        "messages": [{"role": "user", "content": "Update the notes."}],
        "timeout": 30.0,
    }
    fields.update(changes)
    return ModelRequest(**fields)


def test_plain_answer(make_backend, log, monkeypatch):
    monkeypatch.delenv(FORK_GUARD_ENV, raising=False)
    backend = make_backend(["All done."])
    response = backend.complete(request())

    assert response.text == "All done."
    assert response.tool_calls == ()
    assert response.stop_reason == "end_turn"
    assert response.usage == {
        "input_tokens": 12,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 34,
    }
    [run] = read_log(log)
    assert run["argv"] == [
        "-p",
        "--output-format",
        "json",
        "--max-turns",
        "1",
        "--tools",  # the CLI's own tools and the user's MCP servers are off
        "",
        "--strict-mcp-config",
    ]
    assert run["guard"] == "1"  # memframe's hooks in the child stand down
    assert "You maintain session notes." in run["stdin"]
    assert "Update the notes." in run["stdin"]
    assert "tool_calls" not in run["stdin"]  # no tools offered: no protocol
    assert FORK_GUARD_ENV not in os.environ  # only the child's environment has it


def test_own_tools_can_be_left_on_for_older_clis(make_backend, log):
    backend = make_backend(["ok"], own_tools=True)
    backend.complete(request())
    assert read_log(log)[0]["argv"] == ["-p", "--output-format", "json", "--max-turns", "1"]
    with pytest.raises(ModelNotConfiguredError, match="own_tools must be true or false"):
        make_backend(["ok"], own_tools="yes")


def test_model_option_is_passed(make_backend, log):
    backend = make_backend(["ok"], model="claude-haiku-4-5")
    backend.complete(request())
    assert read_log(log)[0]["argv"][-2:] == ["--model", "claude-haiku-4-5"]


def test_bare_json_tool_calls(make_backend, log):
    answer = {
        "text": "Writing both.",
        "tool_calls": [
            {"name": "Write", "input": {"path": "a.md", "text": "A"}},
            {"name": "Read", "input": {}},
        ],
    }
    backend = make_backend([json.dumps(answer)])
    response = backend.complete(request(tools=(WRITE, READ)))

    assert response.text == "Writing both."
    assert response.tool_calls == (
        ToolCall(id="call_1", name="Write", input={"path": "a.md", "text": "A"}),
        ToolCall(id="call_2", name="Read", input={}),
    )
    assert response.stop_reason == "tool_use"
    prompt = read_log(log)[0]["stdin"]
    assert "## Write" in prompt
    assert "Write a file." in prompt
    assert '"properties": {"path": {"type": "string"}' in prompt
    assert "ONLY a JSON object" in prompt


def test_fenced_json_tool_calls(make_backend):
    fenced = (
        "Here you go:\n```json\n"
        + json.dumps({"text": "", "tool_calls": [{"name": "Read", "input": {"path": "x"}}]})
        + "\n```\n"
    )
    backend = make_backend([fenced])
    response = backend.complete(request(tools=(READ,)))
    assert response.tool_calls == (ToolCall(id="call_1", name="Read", input={"path": "x"}),)
    assert response.text == ""


def test_protocol_answer_without_calls_ends_the_turn(make_backend):
    backend = make_backend(['{"text": "Nothing to do.", "tool_calls": []}'])
    response = backend.complete(request(tools=(READ,)))
    assert response.text == "Nothing to do."
    assert response.tool_calls == ()
    assert response.stop_reason == "end_turn"


def test_plain_text_when_tools_were_offered(make_backend):
    backend = make_backend(["I see no reason to call anything {really}."])
    response = backend.complete(request(tools=(READ,)))
    assert response.text == "I see no reason to call anything {really}."
    assert response.tool_calls == ()
    assert response.stop_reason == "end_turn"


def test_nonzero_exit_is_a_model_error(make_backend):
    backend = make_backend([{"exit": 2, "stderr": "Error: not logged in"}])
    with pytest.raises(ModelError, match="status 2: Error: not logged in") as caught:
        backend.complete(request())
    assert not isinstance(caught.value, ModelTransientError)


def test_is_error_result_is_a_model_error(make_backend):
    reply = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "result": "Credit balance is too low",
    }
    backend = make_backend([reply])
    with pytest.raises(ModelError, match="Credit balance is too low"):
        backend.complete(request())


def test_output_that_is_not_a_result_object(make_backend):
    backend = make_backend(
        [{"stdout": "Segmentation fault?"}, {"type": "result", "is_error": False}]
    )
    with pytest.raises(ModelResponseError, match="not a JSON result object"):
        backend.complete(request())
    with pytest.raises(ModelResponseError, match="no result text"):
        backend.complete(request())


def test_verbose_message_stream_uses_the_result_entry(make_backend):
    stream = {"stdout": json.dumps([{"type": "system"}, {"type": "result", "result": "fine"}])}
    backend = make_backend([stream])
    assert backend.complete(request()).text == "fine"


def test_timeout_kills_the_cli(make_backend, log):
    backend = make_backend([{"sleep": 60, "type": "result", "result": "too late"}])
    started = time.monotonic()
    with pytest.raises(ModelTransientError, match="no answer within 1s"):
        backend.complete(request(timeout=1.0))
    assert time.monotonic() - started < 20
    assert len(read_log(log)) == 1


def test_malformed_tool_calls_in_a_protocol_answer():
    with pytest.raises(ModelResponseError, match="input is a list"):
        parse_tool_answer('{"tool_calls": [{"name": "Read", "input": [1]}]}')
    with pytest.raises(ModelResponseError, match="no name"):
        parse_tool_answer('{"tool_calls": [{"input": {}}]}')
    assert parse_tool_answer('{"unrelated": 1}') == ('{"unrelated": 1}', ())


def test_prompt_renders_tool_traffic_readably():
    messages = [
        {"role": "user", "content": "Look at a.py"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "secret thoughts", "signature": "s"},
                {"type": "tool_use", "id": "toolu_9", "name": "Read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "print(1)"},
                {"type": "text", "text": "What does it do?"},
            ],
        },
    ]
    prompt = render_prompt(request(messages=messages))
    assert "<user>\nLook at a.py\n</user>" in prompt
    assert '[tool call toolu_9: Read with input {"path": "a.py"}]' in prompt
    assert "[result of tool call toolu_9]\nprint(1)\n[end of result]" in prompt
    assert "What does it do?" in prompt
    assert "secret thoughts" not in prompt
    assert prompt.index("<system>") < prompt.index("<conversation>")


# -- configuration -------------------------------------------------------------------------------


def test_missing_binary_is_a_configuration_error(tmp_path):
    with pytest.raises(ModelNotConfiguredError) as caught:
        ClaudeCliBackend.from_options({"bin": str(tmp_path / "no-such-claude")}, {})
    assert "MEMFRAME_CLAUDE_BIN" in str(caught.value)
    assert "models.claude-cli.bin" in str(caught.value)


def test_default_name_is_looked_up_on_path(tmp_path, log):
    exe = install_fake_claude(tmp_path / "bin", ["from PATH"], log=log)
    backend = ClaudeCliBackend.from_options({}, {"PATH": str(exe.parent)})
    assert backend.executable == str(exe)
    assert backend.complete(request()).text == "from PATH"
    with pytest.raises(ModelNotConfiguredError, match="'claude' was not found"):
        ClaudeCliBackend.from_options({}, {"PATH": str(tmp_path / "empty")})


def test_environment_variable_names_the_binary(tmp_path, log):
    exe = install_fake_claude(tmp_path / "bin", [], log=log)
    backend = ClaudeCliBackend.from_options({}, {"MEMFRAME_CLAUDE_BIN": str(exe)})
    assert backend.executable == str(exe)


def test_binary_removed_after_configuration(make_backend, tmp_path):
    backend = make_backend(["never"])
    os.unlink(backend.executable)
    with pytest.raises(ModelNotConfiguredError, match="cannot run"):
        backend.complete(request())


def test_bad_option_types(tmp_path):
    with pytest.raises(ModelNotConfiguredError, match=r"models\.claude-cli\.bin"):
        ClaudeCliBackend.from_options({"bin": ["claude"]}, {})
    with pytest.raises(ModelNotConfiguredError, match=r"models\.claude-cli\.model"):
        ClaudeCliBackend.from_options({"bin": "/bin/sh", "model": 3}, {})
