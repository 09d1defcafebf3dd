"""The forked agent: the can_use_tool guard, staged effects, bounds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from memframe.agent import AgentError, ForkedAgent, Permission, can_use_tool
from memframe.models import ModelError, ModelRequest, ModelResponse, ToolCall, ToolSpec


def call(name: str, **tool_input: Any) -> ToolCall:
    return ToolCall("c", name, tool_input)


@pytest.fixture
def notes(tmp_path) -> Path:
    path = tmp_path / "notes" / "summary.md"
    path.parent.mkdir()
    path.write_text("# Notes\n_keep_\n")
    return path


def test_exact_file_allows_only_that_file(notes, tmp_path):
    permission = Permission.edit_one_file(notes)
    assert can_use_tool(permission, call("Edit", file_path=str(notes))).allowed
    other = tmp_path / "notes" / "other.md"
    decision = can_use_tool(permission, call("Edit", file_path=str(other)))
    assert not decision.allowed and "outside" in decision.reason
    # the same file spelled with .. still resolves to it
    spelled = notes.parent / ".." / "notes" / "summary.md"
    assert can_use_tool(permission, call("Edit", file_path=str(spelled))).allowed


@pytest.mark.parametrize(
    ("tool", "tool_input", "reason"),
    [
        ("Bash", {"command": "rm -rf /"}, "not available"),
        ("Write", {"file_path": "NOTES", "content": "x"}, "not available"),
        ("Edit", {"file_path": "relative/summary.md"}, "absolute"),
        ("Edit", {"file_path": 7}, "string file_path"),
        ("Edit", {}, "string file_path"),
        ("Edit", {"file_path": "/tmp/x\x00y"}, "string file_path"),
    ],
)
def test_other_tools_and_bad_paths_are_refused(notes, tool, tool_input, reason):
    tool_input = {k: (str(notes) if v == "NOTES" else v) for k, v in tool_input.items()}
    decision = can_use_tool(Permission.edit_one_file(notes), call(tool, **tool_input))
    assert not decision.allowed
    assert reason in decision.reason


def test_symlinks_never_escape(notes, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    link_to_outside = tmp_path / "notes" / "link.md"
    os.symlink(outside, link_to_outside)
    permission = Permission.edit_one_file(notes)
    assert not can_use_tool(permission, call("Edit", file_path=str(link_to_outside))).allowed
    # a symlink *to* the allowed file is refused too (the exact path only)
    link_to_notes = tmp_path / "alias.md"
    os.symlink(notes, link_to_notes)
    assert not can_use_tool(permission, call("Edit", file_path=str(link_to_notes))).allowed
    # the allowed path replaced by a symlink elsewhere: refused
    notes.unlink()
    os.symlink(outside, notes)
    assert not can_use_tool(permission, call("Edit", file_path=str(notes))).allowed


def test_directory_prefix_after_resolving_symlinks(tmp_path):
    memory = tmp_path / "memory"
    memory.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, memory / "escape")
    permission = Permission(tools=frozenset({"Write", "Read"}), directories=(memory,))
    assert can_use_tool(permission, call("Write", file_path=str(memory / "a.md"))).allowed
    assert can_use_tool(permission, call("Write", file_path=str(memory / "sub" / "b.md"))).allowed
    escaped = call("Write", file_path=str(memory / "escape" / "c.md"))
    assert not can_use_tool(permission, escaped).allowed
    sibling = call("Write", file_path=str(tmp_path / "memory-other" / "x.md"))
    assert not can_use_tool(permission, sibling).allowed
    dotdot = call("Write", file_path=str(memory / ".." / "elsewhere" / "x.md"))
    assert not can_use_tool(permission, dotdot).allowed


def test_read_only_refuses_writes_but_reads(tmp_path):
    permission = Permission(
        tools=frozenset({"Write", "Read"}), directories=(tmp_path,), read_only=True
    )
    assert not can_use_tool(permission, call("Write", file_path=str(tmp_path / "a"))).allowed
    assert can_use_tool(permission, call("Read", file_path=str(tmp_path / "a"))).allowed


class Script:
    name = "script"

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        reply = self.replies.pop(0) if self.replies else ModelResponse(text="done")
        if isinstance(reply, Exception):
            raise reply
        return reply


def edits(*calls: ToolCall) -> ModelResponse:
    return ModelResponse(tool_calls=calls, stop_reason="tool_use")


def request() -> ModelRequest:
    return ModelRequest(system="s", messages=[{"role": "user", "content": "update"}])


def test_edits_land_after_the_loop_and_refusals_are_reported(notes, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("v")
    backend = Script(
        edits(
            ToolCall(
                "a",
                "Edit",
                {"file_path": str(notes), "old_string": "_keep_", "new_string": "_keep_\nfact"},
            ),
            ToolCall("b", "Write", {"file_path": str(victim), "content": "pwned"}),
            ToolCall("c", "Bash", {"command": "touch /tmp/pwned"}),
        ),
    )
    agent = ForkedAgent(backend, Permission.edit_one_file(notes))
    result = agent.run(request())
    assert notes.read_text() == "# Notes\n_keep_\nfact\n"
    assert victim.read_text() == "v"
    assert [r.tool for r in result.refused] == ["Write", "Bash"]
    answers = backend.requests[1].messages[-1]["content"]
    assert [a.get("is_error", False) for a in answers] == [False, True, True]
    assert result.changed == [notes.resolve()]
    assert result.turns == 2


def test_failed_edit_is_reported_to_the_model(notes):
    backend = Script(
        edits(
            ToolCall(
                "a", "Edit", {"file_path": str(notes), "old_string": "absent", "new_string": "x"}
            )
        )
    )
    result = ForkedAgent(backend, Permission.edit_one_file(notes)).run(request())
    assert "not found" in result.failed_calls[0]
    assert backend.requests[1].messages[-1]["content"][0]["is_error"] is True
    assert result.changed == []


def test_a_model_error_mid_run_writes_nothing(notes):
    backend = Script(
        edits(
            ToolCall(
                "a",
                "Edit",
                {"file_path": str(notes), "old_string": "_keep_", "new_string": "changed"},
            )
        ),
        ModelError("connection reset"),
    )
    with pytest.raises(ModelError):
        ForkedAgent(backend, Permission.edit_one_file(notes)).run(request())
    assert notes.read_text() == "# Notes\n_keep_\n"


def test_the_validator_can_refuse_the_whole_result(notes):
    def validate(path: Path, text: str) -> None:
        if "_keep_" not in text:
            raise ValueError("lost the description line")

    backend = Script(
        edits(
            ToolCall(
                "a", "Edit", {"file_path": str(notes), "old_string": "_keep_\n", "new_string": ""}
            )
        )
    )
    with pytest.raises(ValueError, match="description"):
        ForkedAgent(backend, Permission.edit_one_file(notes), validate=validate).run(request())
    assert notes.read_text() == "# Notes\n_keep_\n"


def test_turns_are_bounded(notes):
    looping = [
        edits(
            ToolCall(
                f"c{n}",
                "Edit",
                {"file_path": str(notes), "old_string": "_keep_", "new_string": "_keep_"},
            )
        )
        for n in range(10)
    ]
    backend = Script(*looping)
    result = ForkedAgent(backend, Permission.edit_one_file(notes), max_turns=3).run(request())
    assert result.turns == 3
    assert result.stop == "max_turns"
    assert len(backend.requests) == 3


def test_wall_time_is_bounded_and_nothing_is_written(notes):
    ticks = iter([0.0, 0.0, 5.0, 11.0, 11.0])
    backend = Script(
        edits(
            ToolCall(
                "a", "Edit", {"file_path": str(notes), "old_string": "_keep_", "new_string": "late"}
            )
        ),
        edits(
            ToolCall(
                "b", "Edit", {"file_path": str(notes), "old_string": "late", "new_string": "later"}
            )
        ),
    )
    agent = ForkedAgent(
        backend, Permission.edit_one_file(notes), max_seconds=10, clock=lambda: next(ticks)
    )
    with pytest.raises(AgentError, match="ran out of time"):
        agent.run(request())
    assert notes.read_text() == "# Notes\n_keep_\n"


def test_an_unchanged_file_is_not_rewritten(notes):
    before = notes.stat().st_mtime_ns
    backend = Script(
        edits(
            ToolCall(
                "a", "Edit", {"file_path": str(notes), "old_string": "_keep_", "new_string": "X"}
            ),
            ToolCall(
                "b", "Edit", {"file_path": str(notes), "old_string": "X", "new_string": "_keep_"}
            ),
        )
    )
    result = ForkedAgent(backend, Permission.edit_one_file(notes)).run(request())
    assert result.changed == []
    assert notes.stat().st_mtime_ns == before


def test_parents_tools_are_offered_unchanged_and_missing_ones_added(notes):
    parent = [
        ToolSpec.from_wire(
            {
                "name": "Bash",
                "description": "d",
                "input_schema": {},
                "cache_control": {"type": "ephemeral"},
            }
        )
    ]
    agent = ForkedAgent(Script(), Permission.edit_one_file(notes))
    offered = agent.tool_specs(parent)
    assert offered[0].to_wire() == {
        "name": "Bash",
        "description": "d",
        "input_schema": {},
        "cache_control": {"type": "ephemeral"},
    }
    assert [t.name for t in offered] == ["Bash", "Edit"]
    with_edit = [*parent, ToolSpec("Edit", "host edit", {"type": "object"})]
    assert agent.tool_specs(with_edit) == with_edit


def test_max_turns_must_be_positive(notes):
    with pytest.raises(ValueError, match="max_turns"):
        ForkedAgent(Script(), Permission.edit_one_file(notes), max_turns=0)
