"""Sub-agents summarised onto their calls, and queued user messages, in both Claude Code readers.

Claude Code 1.x writes a sub-agent's conversation into the session file as side-chain records
(the real session below, MIT, d-kimuson/claude-code-viewer); 2.x writes it to
``<session>/subagents/agent-<id>.jsonl`` and names the agent in the call's result
(``toolUseResult.agentId``). A message the user typed while the agent worked and that was
handed over mid-turn is an ``attachment`` record of type ``queued_command``; the
``queue-operation`` records only log the queue.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memframe.agents.transcript import IncrementalReader
from memframe.messages import Message
from memframe.transcripts import open_transcript
from memframe.transcripts.events import MessageEvent
from memframe.transcripts.subagents import describe
from tests.unit.test_transcripts_parallel import SESSION, _base, _write, call, result, user

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"
REAL_1X = DATA / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


def _messages(path: Path) -> list[Message]:
    return [item for item in open_transcript(path) if isinstance(item, Message)]


def _hook_messages(path: Path) -> list[Message]:
    reader = IncrementalReader()
    events = reader.read(path, final=True).events + reader.finish()
    return [e.message for e in events if isinstance(e, MessageEvent)]


def _summaries(messages: list[Message]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for message in messages:
        found.update(message.meta.get("subagents", {}))
    return found


def _sidechain_calls_by_prompt(path: Path) -> dict[str, dict[str, int]]:
    """Counted straight from the raw records: each side chain's tool calls, by its prompt."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    root_of: dict[str, str] = {}
    counts: dict[str, dict[str, int]] = {}
    for record in records:
        if record.get("isSidechain") is not True:
            continue
        parent = record.get("parentUuid")
        content = record.get("message", {}).get("content")
        if parent is None and record["type"] == "user":
            prompt = content if isinstance(content, str) else content[0]["text"]
            root_of[record["uuid"]] = prompt
            counts[prompt] = {}
            continue
        prompt = root_of.get(parent)
        if prompt is None:
            continue
        root_of[record["uuid"]] = prompt
        if record["type"] == "assistant" and isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_use":
                    counts[prompt][block["name"]] = counts[prompt].get(block["name"], 0) + 1
    return counts


def test_real_1x_side_chains_become_summaries_on_their_task_results() -> None:
    expected = _sidechain_calls_by_prompt(REAL_1X)
    assert len(expected) == 2
    for messages in (_messages(REAL_1X), _hook_messages(REAL_1X)):
        summaries = _summaries(messages)
        assert {s["prompt"][:40] for s in summaries.values()} == {p[:40] for p in expected}
        for summary in summaries.values():
            prompt = next(p for p in expected if p.startswith(summary["prompt"][:40]))
            assert summary["calls"] == expected[prompt]
            assert summary["result"]  # the agent's last words
            assert summary["description"]
        assert not any(m.is_sidechain for m in messages)


def _agent_call(uuid: str, parent: str, tool_id: str, prompt: str, description: str) -> dict:
    record = call(uuid, parent, f"msg_{uuid}", tool_id, "Agent", prompt=prompt)
    record["message"]["content"][0]["input"] = {
        "description": description,
        "prompt": prompt,
        "subagent_type": "general-purpose",
    }
    return record


def _agent_result(uuid: str, answers: str, tool_id: str, agent_id: str, text: str) -> dict:
    record = result(uuid, answers, tool_id, text)
    record["toolUseResult"] = {
        "status": "completed",
        "agentId": agent_id,
        "content": [{"type": "text", "text": text}],
        "totalToolUseCount": 3,
    }
    return record


def _subagent_file(folder: Path, agent_id: str, prompt: str, work: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    records = [{**user(f"{agent_id}-0", None, prompt), "isSidechain": True, "agentId": agent_id}]
    parent = f"{agent_id}-0"
    for n, record in enumerate(work, start=1):
        record = {**record, "uuid": f"{agent_id}-{n}", "parentUuid": parent, "agentId": agent_id}
        record["isSidechain"] = True
        records.append(record)
        parent = record["uuid"]
    _write(folder / f"agent-{agent_id}.jsonl", records)


def _two_x_session(tmp_path: Path) -> Path:
    session = tmp_path / f"{SESSION}.jsonl"
    folder = tmp_path / SESSION / "subagents"
    # two agents started in parallel, with the same prompt: told apart by agent id
    prompt = "Find every caller of parse_config and report the file and line."
    _subagent_file(
        folder,
        "a1b2c3",
        prompt,
        [
            call("x", "x", "m1", "t1", "Grep", pattern="parse_config("),
            result("x", "x", "t1", "src/app.py:12"),
            call("x", "x", "m2", "t2", "Edit", file_path="/work/app/src/app.py"),
            result("x", "x", "t2", "ok"),
            call("x", "x", "m3", "t3", "Bash", command="pytest -q tests/test_config.py"),
            result("x", "x", "t3", "3 passed"),
        ],
    )
    _subagent_file(
        folder,
        "d4e5f6",
        prompt,
        [call("x", "x", "m4", "t4", "Read", file_path="/work/app/README.md")],
    )
    records = [
        user("u1", None, "Rename parse_config to load_config everywhere."),
        _agent_call("a1", "u1", "toolu_ag1", prompt, "Find callers"),
        _agent_call("a2", "a1", "toolu_ag2", prompt, "Find callers (docs)"),
        _agent_result("r1", "a1", "toolu_ag1", "a1b2c3", "One caller, in src/app.py:12."),
        _agent_result("r2", "a2", "toolu_ag2", "d4e5f6", "No caller in the docs."),
    ]
    return _write(session, records)


def test_2x_subagent_files_are_summarised_by_agent_id(tmp_path: Path) -> None:
    session = _two_x_session(tmp_path)
    for messages in (_messages(session), _hook_messages(session)):
        summaries = _summaries(messages)
        assert set(summaries) == {"toolu_ag1", "toolu_ag2"}
        first, second = summaries["toolu_ag1"], summaries["toolu_ag2"]
        assert first["agent_id"] == "a1b2c3"
        assert first["calls"] == {"Grep": 1, "Edit": 1, "Bash": 1}
        assert first["files"] == ["/work/app/src/app.py"]
        assert first["commands"] == ["pytest -q tests/test_config.py"]
        assert second["calls"] == {"Read": 1}
        line = describe(first)
        assert line.startswith('sub-agent "Find callers": 3 calls')
        assert "/work/app/src/app.py" in line and "pytest -q" in line


def test_a_missing_or_unreadable_subagent_folder_is_no_summary(tmp_path: Path) -> None:
    session = _two_x_session(tmp_path)
    for agent in (tmp_path / SESSION / "subagents").iterdir():
        agent.unlink()
    (tmp_path / SESSION / "subagents" / "agent-zz.jsonl").mkdir()  # not a file: ignored
    messages = _messages(session)
    assert _summaries(messages) == {}
    assert len([m for m in messages if m.role == "user"]) == 3


def _queued(uuid: str, parent: str, prompt: str) -> dict[str, Any]:
    return {
        **_base(uuid, parent, "attachment"),
        "attachment": {"type": "queued_command", "prompt": prompt},
    }


def _queue_operation(operation: str, content: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "queue-operation",
        "operation": operation,
        "timestamp": "2026-04-09T20:47:06.000Z",
        "sessionId": SESSION,
    }
    if content is not None:
        record["content"] = content
    return record


def test_a_message_queued_mid_turn_is_the_user_speaking(tmp_path: Path) -> None:
    typed = "also keep the old name as a deprecated alias"
    records = [
        user("u1", None, "Rename parse_config to load_config everywhere."),
        call("a1", "u1", "msg_1", "toolu_1", "Grep", pattern="parse_config"),
        _queue_operation("enqueue", typed),
        result("r1", "a1", "toolu_1", "src/app.py:12"),
        _queue_operation("remove", typed),
        _queued("q1", "r1", typed),
        _queue_operation("enqueue", "<task-notification><task-id>b1</task-id></task-notification>"),
    ]
    session = _write(tmp_path / "s.jsonl", records)
    for messages in (_messages(session), _hook_messages(session)):
        users = [m for m in messages if m.role == "user" and not m.tool_results]
        assert [m.text for m in users] == ["Rename parse_config to load_config everywhere.", typed]
        assert users[1].meta.get("queued") is True


def test_the_offline_notes_say_what_each_sub_agent_did(tmp_path: Path) -> None:
    """Replayed through the session-memory layer (offline backend), the real 1.x session's
    Worklog names what its sub-agents ran, not only their descriptions."""
    from memframe.replay import replay
    from memframe.testing import open_test_frame

    frame = open_test_frame(
        tmp_path,
        builtin_layers=["memframe.layers.session_memory:SessionMemoryLayer"],
        model="offline",
    )
    try:
        replay(REAL_1X, frame, session_id="s1")
        (notes,) = (tmp_path / "home").rglob("*.md")
        text = notes.read_text(encoding="utf-8")
    finally:
        frame.close()
    assert 'sub-agent "Analyze current project structure": 6 calls (Bash 5, Read 1)' in text


RECENT = DATA / "recent"


def test_a_failed_stop_hook_is_read_as_host_text_not_as_the_user() -> None:
    """Claude Code 2.1 records a Stop hook that failed only in a ``stop_hook_summary`` system
    record (``hookErrors``); both readers hand it on as meta text, which is never the user."""
    from memframe.models.offline._common import user_text

    path = (
        RECENT / "frederick-douglas-pearce__claude-code-sessions__hook-trace-stop-hook-error.jsonl"
    )
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    errors = [e for r in raw if r.get("subtype") == "stop_hook_summary" for e in r["hookErrors"]]
    assert errors  # the real file has one
    for messages in (_messages(path), _hook_messages(path)):
        hooks = [m for m in messages if m.text.startswith("Stop hook error: ")]
        assert [m.text.removeprefix("Stop hook error: ") for m in hooks] == errors
        assert all(m.meta.get("isMeta") and user_text(m) == "" for m in hooks)
