"""Session memory against real HTTP fakes of the provider APIs and a fake ``claude`` executable.

The host agent's own requests go through memframe's Anthropic backend to the same fake, so the
test can compare the bytes of the parent's request with the fork's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from memframe.layers.session_memory import NOTES_DIR, NOTES_FILE
from memframe.models import ModelRequest, ToolSpec
from memframe.models.anthropic import AnthropicBackend
from memframe.session_memory import Template, bundled_text
from tests.fakes.fake_claude import install_fake_claude, read_log
from tests.fakes.providers import (
    RecordedRequest,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_call,
)

SESSION_MEMORY = "memframe.layers.session_memory:SessionMemoryLayer"
TEMPLATE = Template(bundled_text("template.md"))
WORKLOG = "_Terse, step by step: what was tried and what was done_\n"
SYSTEM = [{"type": "text", "text": "You are a careful coding agent. " * 20}]
TOOLS = [
    {
        "name": "Bash",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
    {
        "name": "Edit",
        "description": "Edit a file.",
        "input_schema": {
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
            },
        },
    },
]


def big_usage(tokens: int) -> dict[str, int]:
    return {
        "input_tokens": 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": tokens - 60,
        "output_tokens": 50,
    }


def notes_path(session) -> Path:
    return session.dir / NOTES_DIR / NOTES_FILE


def host_turns(fake, session, host: AnthropicBackend, fork_replies: list[Any]) -> None:
    """A host agent loop: prompt → tool call → result → final answer; the final answer (an idle
    turn past 10,000 tokens) triggers the notes extraction, whose requests get ``fork_replies``."""
    first = anthropic_tool_use("Bash", {"command": "pytest -q tests/test_app.py"})
    first["usage"] = big_usage(11_000)
    final = anthropic_text("Fixed: the off-by-one in src/app.py:parse_items.")
    final["usage"] = big_usage(17_000)
    fake.script(first, final, *fork_replies)
    session.set_prompt(system=SYSTEM, tools=TOOLS)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "The test for parse_items fails, please fix src/app.py"}
    ]
    session.on_message(messages[0])
    for answer in (first, final):
        host.complete(
            ModelRequest(
                system=SYSTEM,
                messages=list(messages),
                tools=[ToolSpec.from_wire(t) for t in TOOLS],
                cache_prefix=len(messages),
                max_tokens=8192,
            )
        )
        reply = {"role": "assistant", "content": answer["content"]}
        messages.append(reply)
        session.on_message({**reply, "id": answer["id"], "usage": answer["usage"]})
        tool_uses = [b for b in answer["content"] if b["type"] == "tool_use"]
        if tool_uses:
            result = {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_uses[0]["id"],
                        "content": "FAILED tests/test_app.py::test_parse - IndexError",
                        "is_error": True,
                    }
                ],
            }
            messages.append(result)
            session.on_message(result)


@pytest.fixture
def anthropic_frame(frame_factory, fake_anthropic, monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    (tmp_path / "config").mkdir()
    settings = {"models": {"anthropic": {"backoff_base": 0.001}}}
    (tmp_path / "config" / "settings.json").write_text(json.dumps(settings))
    frame = frame_factory(builtin_layers=[SESSION_MEMORY], model="anthropic")
    host = AnthropicBackend(
        api_key="sk-ant-test-key", base_url=fake_anthropic.base_url, backoff_base=0.001
    )
    yield frame, host
    host.close()


def edit_notes(path_of, old: str, new: str, *extra: dict[str, Any]):
    def reply(request: RecordedRequest) -> dict[str, Any]:
        body = anthropic_tool_use(
            "Edit", {"file_path": str(path_of()), "old_string": old, "new_string": new}
        )
        body["content"] = [*extra, *body["content"]]
        return body

    return reply


def strip_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    return value


def test_fork_shares_the_parent_prefix_byte_for_byte(anthropic_frame, fake_anthropic):
    frame, host = anthropic_frame
    session = frame.session("s1")
    replies = [
        edit_notes(lambda: notes_path(session), WORKLOG, WORKLOG + "- fixed parse_items\n"),
        anthropic_text("done"),
    ]
    host_turns(fake_anthropic, session, host, replies)
    frame.flush()
    assert len(fake_anthropic.requests) == 4
    parent, fork = fake_anthropic.requests[1], fake_anthropic.requests[2]
    # the parent's bytes from "system" up to its last message (the one carrying its own cache
    # breakpoint) appear unchanged in the fork's body
    parent_messages = parent.json["messages"]
    start = parent.body.index(b'"system":')
    shared = b'"messages":[' + b",".join(orjson.dumps(m) for m in parent_messages[:-1]) + b","
    end = parent.body.index(shared) + len(shared)
    assert parent.body[start:end] in fork.body
    assert fork.body.index(parent.body[start:end]) == fork.body.index(b'"system":')
    # every shared message is identical but for the breakpoint marker, which moved to the
    # fork's last shared message (the parent's final answer)
    fork_messages = fork.json["messages"]
    count = len(session.history)
    assert [strip_markers(m) for m in fork_messages[: len(parent_messages)]] == [
        strip_markers(m) for m in parent_messages
    ]
    marked = [i for i, m in enumerate(fork_messages) if "cache_control" in orjson.dumps(m).decode()]
    assert marked == [count - 1]
    assert fork.json["tools"] == parent.json["tools"]
    assert fork.json["system"] == parent.json["system"]
    assert fork.headers["x-api-key"] == "sk-ant-test-key"
    # the instruction names the notes file and the notes landed
    assert str(notes_path(session)) in fork_messages[-1]["content"][-1]["text"]
    assert "- fixed parse_items" in notes_path(session).read_text()
    # the fork's second request reports the edit's result
    tool_results = fake_anthropic.requests[3].json["messages"][-1]["content"]
    assert tool_results[0]["type"] == "tool_result"
    assert not tool_results[0].get("is_error")


def test_other_files_and_other_tools_are_refused(anthropic_frame, fake_anthropic, tmp_path):
    frame, host = anthropic_frame
    victim = tmp_path / "project" / "src" / "app.py"
    victim.parent.mkdir(parents=True)
    victim.write_text("def parse_items(): ...\n")
    session = frame.session("s1")
    extra = [
        {
            "type": "tool_use",
            "id": "toolu_bash",
            "name": "Bash",
            "input": {"command": f"rm {victim}"},
        },
        {
            "type": "tool_use",
            "id": "toolu_other",
            "name": "Edit",
            "input": {"file_path": str(victim), "old_string": "def", "new_string": "pwned"},
        },
    ]
    replies = [
        edit_notes(lambda: notes_path(session), WORKLOG, WORKLOG + "- ok\n", *extra),
        anthropic_text("done"),
    ]
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    host_turns(fake_anthropic, session, host, replies)
    frame.flush()
    assert victim.read_text() == "def parse_items(): ...\n"
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    changed = {p for p in after if before.get(p) != after[p]}
    allowed = {notes_path(session), session.dir / "state.json"}
    assert changed <= allowed, changed - allowed
    answers = fake_anthropic.requests[3].json["messages"][-1]["content"]
    by_id = {a["tool_use_id"]: a for a in answers}
    assert by_id["toolu_bash"]["is_error"] is True
    assert "Permission denied" in by_id["toolu_bash"]["content"]
    assert by_id["toolu_other"]["is_error"] is True
    record = session.state.section("session_memory")["extractions"][0]
    assert record["status"] == "updated"
    assert len(record["refused"]) == 2


def test_provider_errors_are_retried_then_reported(anthropic_frame, fake_anthropic):
    from tests.fakes.providers import anthropic_error

    frame, host = anthropic_frame
    session = frame.session("s1")
    overloaded = [anthropic_error(529, "overloaded_error", "Overloaded")] * 4
    host_turns(fake_anthropic, session, host, overloaded)
    with pytest.raises(ExceptionGroup) as caught:
        frame.flush()
    assert "Overloaded" in str(caught.value.exceptions[0])
    assert len(fake_anthropic.requests) == 2 + 4  # the host's two, then 1 + 3 retries
    assert notes_path(session).read_text() == TEMPLATE.text  # created, never corrupted
    record = session.state.section("session_memory")["extractions"][0]
    assert record["status"] == "failed"


def test_session_memory_over_an_openai_compatible_endpoint(frame_factory, fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("MEMFRAME_OPENAI_MODEL", "qwen2.5-coder")
    frame = frame_factory(builtin_layers=[SESSION_MEMORY], model="openai")
    session = frame.session("s1")

    def edit(request: RecordedRequest) -> dict[str, Any]:
        return openai_tool_call(
            "Edit",
            {
                "file_path": str(notes_path(session)),
                "old_string": WORKLOG,
                "new_string": WORKLOG + "- ran pytest\n",
            },
        )

    fake_openai.script(edit, openai_text("done"))
    session.on_message({"role": "user", "content": "run the tests"})
    session.on_message(
        {"role": "assistant", "id": "a1", "content": "All green.", "usage": big_usage(12_000)}
    )
    frame.flush()
    assert "- ran pytest" in notes_path(session).read_text()
    first, second = (r.json for r in fake_openai.requests)
    assert first["model"] == "qwen2.5-coder"
    assert "authorization" not in fake_openai.requests[0].headers  # local server: no key
    assert [t["function"]["name"] for t in first["tools"]] == ["Edit"]
    assert second["messages"][-1]["role"] == "tool"


def test_session_memory_through_the_claude_cli(frame_factory, tmp_path):
    log = tmp_path / "claude.log"
    exe = tmp_path / "bin" / "claude"
    (tmp_path / "config").mkdir()
    settings = {"models": {"claude-cli": {"bin": str(exe)}}}
    (tmp_path / "config" / "settings.json").write_text(json.dumps(settings))
    frame = frame_factory(builtin_layers=[SESSION_MEMORY], model="claude-cli")
    session = frame.session("s1")
    answer = {
        "text": "",
        "tool_calls": [
            {
                "name": "Edit",
                "input": {
                    "file_path": str(notes_path(session)),
                    "old_string": WORKLOG,
                    "new_string": WORKLOG + "- via claude -p\n",
                },
            }
        ],
    }
    install_fake_claude(exe.parent, [f"```json\n{json.dumps(answer)}\n```", "done"], log=log)
    session.on_message({"role": "user", "content": "tidy up"})
    session.on_message(
        {"role": "assistant", "id": "a1", "content": "Tidied.", "usage": big_usage(12_000)}
    )
    frame.flush()
    assert "- via claude -p" in notes_path(session).read_text()
    runs = read_log(log)
    assert len(runs) == 2
    assert all(run["guard"] == "1" for run in runs)  # memframe's hooks stay quiet inside
    assert "-p" in runs[0]["argv"]
    assert "Edit" in runs[0]["stdin"]  # the tool protocol was offered
