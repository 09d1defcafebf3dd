"""Transcript importers against real files and an independent reading of them.

The shared transcripts are public MIT-licensed session logs: d-kimuson/claude-code-viewer
(mock-global-claude-dir/projects/sample-project) and daaain/claude-code-log (test/test_data);
origins in tests/data/transcripts/README.md. The expectations below come from reading the files
with plain ``json`` and a separate branch walk, not from memframe's importer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memframe.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from memframe.transcripts import (
    CompactBoundary,
    Problem,
    Transcript,
    TranscriptError,
    detect_format,
    open_transcript,
)

DATA = Path(__file__).parents[1] / "data" / "transcripts"
ALL_FILES = sorted(DATA.glob("*.jsonl"))
CLAUDE_FILES = [p for p in ALL_FILES if "codex" not in p.name]
CODEX_FILE = next(p for p in ALL_FILES if "codex" in p.name)
DAG_FILE = DATA / "daaain__claude-code-log__dag_compact_after_rewind.jsonl"
SPLIT_FILE = DATA / "d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
SIDECHAIN_FILE = DATA / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
SUMMARY_FILE = DATA / "d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"


def raw_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def messages_of(transcript: Transcript) -> list[Message]:
    return [item for item in transcript if isinstance(item, Message)]


# -- independent readings -------------------------------------------------------------------------


def claude_expectations(path: Path) -> dict[str, Any]:
    """Messages, tool uses and final usage of the live branch, read with plain json."""
    main = [r for r in raw_records(path) if not r.get("isSidechain") and r.get("uuid")]
    by_uuid = {r["uuid"]: r for r in main}
    live = set()
    cursor: dict[str, Any] | None = main[-1]
    while cursor is not None:
        live.add(cursor["uuid"])
        parent = cursor.get("parentUuid") or cursor.get("logicalParentUuid")
        cursor = by_uuid.get(parent)
    conversation = [r for r in main if r["uuid"] in live and r["type"] in ("user", "assistant")]
    users = sum(1 for r in conversation if r["type"] == "user")
    assistant_ids = [r["message"]["id"] for r in conversation if r["type"] == "assistant"]
    runs = [i for n, i in enumerate(assistant_ids) if n == 0 or assistant_ids[n - 1] != i]
    tool_uses = sum(
        1
        for r in conversation
        if isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b["type"] == "tool_use"
    )
    last_id = assistant_ids[-1]
    # each streamed part repeats the response's usage as it stood; the last part is final
    last_usage = [r for r in conversation if r.get("message", {}).get("id") == last_id][-1][
        "message"
    ]["usage"]
    return {
        "messages": users + len(runs),
        "assistant_messages": len(set(assistant_ids)),
        "tool_uses": tool_uses,
        "last_id": last_id,
        "last_usage": last_usage,
        "abandoned": sum(
            1 for r in main if r["uuid"] not in live and r["type"] in ("user", "assistant")
        ),
    }


def codex_expectations(path: Path) -> dict[str, Any]:
    items = [r["payload"] for r in raw_records(path) if r.get("type") == "response_item"]
    assistant_side = {"reasoning", "function_call", "custom_tool_call", "local_shell_call"}
    calls = [p for p in items if p["type"] in ("function_call", "custom_tool_call")]
    outputs = [p for p in items if p["type"].endswith("_call_output")]
    users = [p for p in items if p["type"] == "message" and p["role"] == "user"]
    turns, in_turn = 0, False
    for p in items:
        is_assistant = p["type"] in assistant_side or p.get("role") == "assistant"
        turns += is_assistant and not in_turn
        in_turn = is_assistant
    return {
        "messages": len(users) + len(outputs) + turns,
        "assistant_messages": turns,
        "tool_uses": len(calls),
        "last_usage": None,  # this rollout has no token_count event
    }


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name[:48])
def test_real_transcripts_match_an_independent_reading(path):
    expected_format = "codex" if "codex" in path.name else "claude-code"
    expected = (codex_expectations if expected_format == "codex" else claude_expectations)(path)

    transcript = open_transcript(path)
    assert transcript.format == expected_format
    assert detect_format(path) == expected_format
    messages = messages_of(transcript)

    assert transcript.problems == []
    assert len(messages) == expected["messages"]
    assistants = [m for m in messages if m.role == "assistant"]
    assert len(assistants) == expected["assistant_messages"]
    assert len({m.id for m in assistants}) == len(assistants)  # merged: one message per id
    assert sum(len(m.tool_uses) for m in messages) == expected["tool_uses"]
    if expected["last_usage"] is None:
        assert assistants[-1].usage is None
    else:
        assert assistants[-1].id == expected["last_id"]
        assert assistants[-1].usage == Usage.from_dict(expected["last_usage"])


@pytest.mark.parametrize("path", CLAUDE_FILES, ids=lambda p: p.name[:48])
def test_claude_messages_carry_record_metadata(path):
    main = {r["uuid"]: r for r in raw_records(path) if r.get("uuid")}
    for message in open_transcript(path):
        assert isinstance(message, Message | CompactBoundary)
        if isinstance(message, CompactBoundary):
            continue
        record = main[message.uuid]
        assert message.timestamp == record["timestamp"]
        assert message.is_sidechain is False
        assert message.meta["cwd"] == record["cwd"]
        assert message.meta["version"] == record["version"]
        if message.role == "assistant":
            assert message.model == record["message"]["model"]


def test_split_response_is_merged_into_one_message():
    records = [r for r in raw_records(SPLIT_FILE) if r["type"] == "assistant"]
    first_id = records[0]["message"]["id"]
    parts = [r for r in records if r["message"]["id"] == first_id]
    assert len(parts) == 2
    merged = next(m for m in open_transcript(SPLIT_FILE) if getattr(m, "id", None) == first_id)
    assert isinstance(merged, Message)
    assert merged.uuid == parts[0]["uuid"]
    assert merged.timestamp == parts[0]["timestamp"]
    assert len(merged.content) == sum(len(p["message"]["content"]) for p in parts)
    # the parts' usage differs in output_tokens (8 then the final 322): the final one wins
    assert parts[0]["message"]["usage"] != parts[-1]["message"]["usage"]
    assert merged.usage == Usage.from_dict(parts[-1]["message"]["usage"])


def test_dag_rewind_branch_is_excluded_and_compaction_is_kept():
    transcript = open_transcript(DAG_FILE)
    items = list(transcript)
    texts = [i.text if isinstance(i, Message) else "<boundary>" for i in items]
    assert "First attempt" not in texts and "First answer" not in texts
    assert texts[:6] == [
        "Start",
        "Ready",
        "Second attempt",
        "Second answer",
        "Keep going",
        "Kept going",
    ]
    assert texts[6] == "<boundary>"
    assert texts[8:] == ["After compaction", "Final answer"]
    boundary = items[6]
    assert boundary == CompactBoundary(trigger="auto", pre_tokens=150000, uuid="cb", line=9)
    summary = items[7]
    assert isinstance(summary, Message)
    assert summary.is_compact_summary and summary.role == "user"
    assert summary.text.startswith("This session is being continued")
    assert sum(1 for i in items if isinstance(i, Message) and i.is_compact_summary) == 1
    assert transcript.skipped_abandoned == claude_expectations(DAG_FILE)["abandoned"] == 2


def test_sidechains_are_skipped_by_default_and_kept_on_request():
    side = [r for r in raw_records(SIDECHAIN_FILE) if r.get("isSidechain")]
    default = open_transcript(SIDECHAIN_FILE)
    assert all(not m.is_sidechain for m in messages_of(default))
    assert default.skipped_sidechain == len(side) == 22

    with_side = open_transcript(SIDECHAIN_FILE, include_sidechains=True)
    side_messages = [m for m in messages_of(with_side) if m.is_sidechain]
    side_ids = {r["message"].get("id") for r in side if r["type"] == "assistant"}
    assert {m.id for m in side_messages if m.role == "assistant"} == side_ids
    assert with_side.skipped_sidechain == 0
    assert sum(len(m.tool_uses) for m in messages_of(with_side)) == 21  # all, as in the README


def test_ignored_record_types_are_counted():
    transcript = open_transcript(SUMMARY_FILE)
    list(transcript)
    assert transcript.skipped_records == {"summary": 1}
    assert transcript.skipped_sidechain == 405


def test_codex_rollout_mapping():
    transcript = open_transcript(CODEX_FILE)
    messages = messages_of(transcript)
    assert transcript.skipped_records["unknown:future_synthetic_record"] == 1
    assert transcript.problems == []

    first = messages[1]
    assert first.role == "assistant"
    assert first.content[0] == ThinkingBlock("I will inspect the synthetic directory.")
    assert "SYNTHETIC_ENCRYPTED" not in repr(messages)
    assert first.content[1] == ToolUseBlock(
        id="call-structured-001", name="exec_command", input={"cmd": "find . -maxdepth 1 -type f"}
    )
    assert first.model == "synthetic-model"
    assert first.meta["cwd"] == "/workspace/synthetic-project"

    uses = {u.id: u for m in messages for u in m.tool_uses}
    results = {r.tool_use_id: r for m in messages for r in m.tool_results}
    assert set(uses) == set(results) == {"call-structured-001", "call-custom-001", "call-mcp-001"}
    assert uses["call-custom-001"].input == {
        "input": "*** Begin Patch\n*** Add File: gamma.txt\n+synthetic\n*** End Patch"
    }
    assert results["call-custom-001"].content == "Done!"
    assert results["call-mcp-001"].content == '{"status":"ok"}'
    # each result comes after its call
    order = [b for m in messages for b in m.content]
    for call_id in uses:
        assert order.index(uses[call_id]) < order.index(results[call_id])

    assistants = [m for m in messages if m.role == "assistant"]
    assert [m.id for m in assistants] == ["codex-5", "codex-8", "codex-10", "codex-13"]
    assert assistants[-1].text == "The synthetic files are alpha.txt and beta.txt."
    assert messages[0] == Message(
        role="user",
        content=(TextBlock("List the synthetic files."),),
        timestamp="2026-01-02T03:04:07.001Z",
        meta={"cwd": "/workspace/synthetic-project", "version": "0.0.0-test"},
    )


def test_iterating_twice_rereads_and_resets_stats():
    transcript = open_transcript(SUMMARY_FILE)
    first = list(transcript)
    second = list(transcript)
    assert first == second
    assert transcript.skipped_sidechain == 405
    assert transcript.skipped_records == {"summary": 1}


# -- synthetic Claude Code files ------------------------------------------------------------------


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def rec(kind: str, uuid: str | None, parent: str | None, content: Any, **extra: Any):
    record: dict[str, Any] = {"type": kind, "parentUuid": parent}
    if uuid is not None:
        record["uuid"] = uuid
    message: dict[str, Any] = {"role": kind, "content": content}
    message.update(extra.pop("message", {}))
    record["message"] = message
    record.update(extra)
    return record


def test_rewind_keeps_the_branch_of_the_last_record(tmp_path):
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            rec("user", "u1", None, "q"),
            rec("assistant", "a1", "u1", "old", message={"id": "m1"}),
            rec("user", "u2", "u1", "q again"),  # rewound: a second child of u1
            rec("assistant", "a2", "u2", "new", message={"id": "m2"}),
        ],
    )
    transcript = open_transcript(path)
    assert [m.text for m in messages_of(transcript)] == ["q", "q again", "new"]
    assert transcript.skipped_abandoned == 1


def test_missing_parent_falls_back_to_file_order(tmp_path):
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            rec("user", "u1", None, "one"),
            rec("assistant", "a1", "u1", "two", message={"id": "m1"}),
            rec("user", "u2", "gone", "three"),
            rec("assistant", "a2", "u2", "four", message={"id": "m2"}),
        ],
    )
    transcript = open_transcript(path)
    assert [m.text for m in messages_of(transcript)] == ["one", "two", "three", "four"]
    assert [p.line for p in transcript.problems] == [3]
    assert "'gone' not found" in transcript.problems[0].reason


def test_files_without_linkage_are_read_in_file_order(tmp_path):
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {"type": "user", "message": {"role": "user", "content": "a"}},
            {"type": "assistant", "message": {"role": "assistant", "content": "b"}},
            {"type": "user", "uuid": "x", "message": {"content": "c"}},  # role from the type
        ],
    )
    assert [(m.role, m.text) for m in messages_of(open_transcript(path))] == [
        ("user", "a"),
        ("assistant", "b"),
        ("user", "c"),
    ]


def test_bad_part_of_a_split_response_is_a_problem_and_the_rest_merges(tmp_path):
    usage = {"input_tokens": 1, "output_tokens": 2}
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            rec("user", "u1", None, "q"),
            rec(
                "assistant",
                "a1",
                "u1",
                [{"type": "text", "text": "x"}],
                message={"id": "m1", "usage": usage},
            ),
            rec(
                "assistant",
                "a2",
                "a1",
                [{"type": "tool_use", "name": "Bash", "input": {}}],
                message={"id": "m1", "usage": usage},
            ),
            rec(
                "assistant",
                "a3",
                "a2",
                [{"type": "text", "text": "y"}],
                message={"id": "m1", "usage": {**usage, "output_tokens": 9}},
            ),
        ],
    )
    transcript = open_transcript(path)
    messages = messages_of(transcript)
    assert [m.text for m in messages] == ["q", "x\ny"]
    assert messages[1].uuid == "a1"
    assert messages[1].usage == Usage(input_tokens=1, output_tokens=9)
    assert transcript.problems == [
        Problem(3, "assistant record: content[0].id must be a string, got NoneType")
    ]


def test_duplicate_records_are_emitted_once(tmp_path):
    first = rec("user", "u1", None, "q")
    path = write_jsonl(tmp_path / "t.jsonl", [first, first, rec("user", "u2", "u1", "r")])
    transcript = open_transcript(path)
    assert [m.text for m in messages_of(transcript)] == ["q", "r"]
    assert transcript.skipped_records == {"duplicate-uuid": 1}


def test_records_appended_while_reading_are_followed(tmp_path):
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [rec("user", "u1", None, "q"), rec("assistant", "a1", "u1", "a", message={"id": "m1"})],
    )
    stream = iter(open_transcript(path))
    assert next(stream).text == "q"  # pass 1 is done: later records are new to the index
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec("user", "u2", "a1", "more")) + "\n")
        f.write(json.dumps(rec("user", "x9", "nowhere", "stray")) + "\n")
    assert [m.text for m in stream] == ["a", "more"]


def test_other_system_records_are_counted_not_yielded(tmp_path):
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            rec("user", "u1", None, "q"),
            {"type": "system", "subtype": "informational", "uuid": "s1", "parentUuid": "u1"},
            {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "cb",
                "parentUuid": None,
                "logicalParentUuid": "s1",
                "compactMetadata": {"trigger": 5, "preTokens": True},
            },
        ],
    )
    transcript = open_transcript(path)
    items = list(transcript)
    assert items[1] == CompactBoundary(trigger=None, pre_tokens=None, uuid="cb", line=4)
    assert transcript.skipped_records == {"system:informational": 1, "file-history-snapshot": 1}


# -- synthetic Codex files ------------------------------------------------------------------------


def env(kind: str, payload: Any, ts: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def token_count(inp: int, cached: int, out: int) -> dict[str, Any]:
    usage = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out}
    return env("event_msg", {"type": "token_count", "info": {"last_token_usage": usage}})


def test_codex_token_count_becomes_the_usage_of_the_response_before_it(tmp_path):
    path = write_jsonl(
        tmp_path / "rollout.jsonl",
        [
            env("session_meta", {"cwd": "/w"}),
            env(
                "response_item",
                {
                    "type": "message",
                    "role": "developer",
                    "content": [{"type": "input_text", "text": "rules"}],
                },
            ),
            env("response_item", {"type": "message", "role": "user", "content": "go"}),
            env("event_msg", {"type": "token_count", "info": None}),
            env(
                "response_item",
                {"type": "function_call", "name": "a", "arguments": "[1]", "call_id": "c1"},
            ),
            env(
                "response_item",
                {"type": "function_call", "name": "b", "arguments": "{oops", "call_id": "c2"},
            ),
            env(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": {"content": "bad", "success": False},
                },
            ),
            token_count(100, 60, 7),  # after an output: still the usage of the calls' response
            env("response_item", {"type": "function_call_output", "call_id": "c2", "output": "ok"}),
            env(
                "response_item",
                {
                    "type": "local_shell_call",
                    "call_id": "c3",
                    "action": {"type": "exec", "command": ["ls"]},
                },
            ),
            token_count(200, 150, 3),
            env(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "done"}],
                },
            ),
        ],
    )
    transcript = open_transcript(path)
    messages = messages_of(transcript)
    assert [m.role for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
        "assistant",
    ]
    calls = messages[2]
    assert [u.input for u in calls.tool_uses] == [{"raw": "[1]"}, {"raw": "{oops"}]
    assert calls.usage == Usage(input_tokens=40, cache_read_input_tokens=60, output_tokens=7)
    assert messages[3].tool_results == [ToolResultBlock("c1", "bad", is_error=True)]
    assert messages[5].tool_uses == [
        ToolUseBlock("c3", "local_shell", {"type": "exec", "command": ["ls"]})
    ]
    assert messages[5].usage == Usage(input_tokens=50, cache_read_input_tokens=150, output_tokens=3)
    assert messages[6].usage is None and messages[6].text == "done"  # a new response
    assert transcript.problems == []


def test_codex_compaction_and_bare_items(tmp_path):
    path = write_jsonl(
        tmp_path / "rollout.jsonl",
        [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "think"}],
            },
            env("compacted", {"message": "summary so far"}),
            env("response_item", {"type": "ghost_snapshot"}),
        ],
    )
    transcript = open_transcript(path)
    assert transcript.format == "codex"
    items = list(transcript)
    assert isinstance(items[1], Message) and items[1].content == (ThinkingBlock("think"),)
    assert items[2] == CompactBoundary(trigger=None, pre_tokens=None, uuid=None, line=3)
    assert isinstance(items[3], Message) and items[3].is_compact_summary
    assert transcript.skipped_records == {"unknown:response_item:ghost_snapshot": 1}


def test_codex_bad_fields_are_problems(tmp_path):
    path = write_jsonl(
        tmp_path / "rollout.jsonl",
        [
            env("response_item", {"type": "function_call", "name": "a", "arguments": "{}"}),
            env("response_item", {"type": "message", "role": "robot", "content": "x"}),
            env("response_item", {"type": "message", "role": "user", "content": 5}),
            env("event_msg", {"type": "token_count", "info": {"last_token_usage": "many"}}),
            env("turn_context", "not an object"),
            env("response_item", {"type": "message", "role": "user", "content": "fine"}),
        ],
    )
    transcript = open_transcript(path)
    assert [m.text for m in messages_of(transcript)] == ["fine"]
    assert [p.line for p in transcript.problems] == [1, 2, 3, 4, 5]
    assert "function_call.call_id must be a string" in transcript.problems[0].reason


# -- opening --------------------------------------------------------------------------------------


def test_explicit_format_and_unknown_format_name(tmp_path):
    assert open_transcript(DAG_FILE, format="claude-code").format == "claude-code"
    with pytest.raises(TranscriptError, match="unknown transcript format 'jsonl'"):
        open_transcript(DAG_FILE, format="jsonl")


def test_detection_uses_the_first_identifying_record(tmp_path):
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
            rec("user", "u1", None, "q"),
        ],
    )
    assert open_transcript(path).format == "claude-code"
    other = write_jsonl(tmp_path / "o.jsonl", [{"kind": "log", "n": i} for i in range(60)])
    with pytest.raises(TranscriptError, match=r"o\.jsonl: not a transcript"):
        open_transcript(other)


def test_trailing_bookkeeping_record_does_not_move_the_active_path(tmp_path):
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            rec("user", "u1", None, "q"),
            rec("assistant", "a1", "u1", "a", message={"id": "m1"}),
            {"type": "progress", "uuid": "p1", "parentUuid": None, "data": {}},
        ],
    )
    transcript = open_transcript(path)
    assert [m.text for m in messages_of(transcript)] == ["q", "a"]
    assert transcript.skipped_records == {"progress": 1}
    assert transcript.skipped_abandoned == 0
