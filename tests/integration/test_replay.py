"""``memframe replay`` against an independent reading of each shared transcript.

The transcripts are public MIT-licensed session logs (origins in tests/data/transcripts/README.md).
The reader below is written separately from memframe's importer on purpose: plain ``json``,
its own branch walk, its own usage arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memframe.replay import replay
from memframe.testing import HookRecorder, open_test_frame
from tests.integration.cli_runner import run_memframe

DATA = Path(__file__).parents[1] / "data" / "transcripts"
CLAUDE_FILES = sorted(p for p in DATA.glob("*.jsonl") if "codex" not in p.name)
ALL_FILES = sorted(DATA.glob("*.jsonl"))


def independent_reading(path: Path) -> dict[str, object]:
    """Messages, tool calls and per-message-id usage of a Claude Code transcript's live branch."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("type") in ("user", "assistant", "system") and not record.get("isSidechain"):
            records.append(record)
    by_uuid = {r["uuid"]: r for r in records if r.get("uuid")}
    live: set[str] = set()
    cursor = next((r for r in reversed(records) if r.get("uuid")), None)
    while cursor is not None:
        live.add(cursor["uuid"])
        parent = cursor.get("parentUuid") or cursor.get("logicalParentUuid")
        cursor = by_uuid.get(parent) if parent else None
    messages = 0
    tool_calls = 0
    usage_by_id: dict[str, int] = {}
    previous_id = None
    for record in records:
        if record["uuid"] not in live or record["type"] == "system":
            continue
        message = record["message"]
        content = message.get("content")
        if isinstance(content, list):
            tool_calls += sum(1 for b in content if b.get("type") == "tool_use")
        msg_id = message.get("id") if record["type"] == "assistant" else None
        if msg_id is None or msg_id != previous_id:
            messages += 1
        previous_id = msg_id
        usage = message.get("usage")
        if msg_id and usage:
            # streamed parts of one response repeat its usage, growing output_tokens: the last
            # part carries the final figure, and it is counted once
            usage_by_id[msg_id] = sum(
                usage.get(k) or 0
                for k in (
                    "input_tokens",
                    "output_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
            )
    return {"messages": messages, "tool_calls": tool_calls, "usage_by_id": usage_by_id}


@pytest.mark.parametrize("path", CLAUDE_FILES, ids=lambda p: p.name[:40])
def test_replay_matches_an_independent_reading(tmp_path, path):
    expected = independent_reading(path)
    recorder = HookRecorder()
    with open_test_frame(tmp_path, layers=[recorder]) as frame:
        report = replay(path, frame)
    assert report.messages == expected["messages"]
    assert report.tool_calls == expected["tool_calls"]
    usage_by_id = expected["usage_by_id"]
    assert isinstance(usage_by_id, dict)
    seen = set()
    for step in report.steps:
        if step.kind == "message" and step.message_id in usage_by_id:
            # right after an assistant response the context is exactly its reported usage
            assert step.context_tokens == usage_by_id[step.message_id], step
            seen.add(step.message_id)
    assert seen == set(usage_by_id)
    assert len(recorder.of("on_message")) == report.messages
    assert len(recorder.of("on_tool_use")) == report.tool_calls
    assert recorder.names()[-2:] == ["on_session_end", "on_frame_close"]
    assert report.layer_errors == []


def test_usage_counted_once_when_a_response_is_split(tmp_path):
    path = DATA / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    with open_test_frame(tmp_path) as frame:
        report = replay(path, frame)
    final_id = next(s.message_id for s in reversed(report.steps) if s.message_id)
    # the last response is an assistant message with usage, so nothing is estimated after it
    assert report.context_tokens == independent_reading(path)["usage_by_id"][final_id]


def test_codex_rollout_replays(tmp_path):
    path = next(DATA.glob("*codex*.jsonl"))
    recorder = HookRecorder()
    with open_test_frame(tmp_path, layers=[recorder]) as frame:
        report = replay(path, frame)
    assert report.format == "codex"
    raw = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    calls = [
        r
        for r in raw
        if r.get("type") == "response_item"
        and r["payload"].get("type") in ("function_call", "custom_tool_call")
    ]
    assert report.tool_calls == len(calls) > 0
    assert len(recorder.of("on_tool_use")) == len(calls)


def test_a_failing_layer_is_reported_and_the_replay_finishes(tmp_path):
    from memframe import hookimpl

    class Broken:
        @hookimpl
        def on_message(self, message):
            if message.role == "assistant":
                raise RuntimeError("layer bug")

    recorder = HookRecorder()
    with open_test_frame(tmp_path, layers=[("broken", Broken()), recorder], strict=False) as frame:
        report = replay(CLAUDE_FILES[0], frame)
    assert report.layer_errors
    assert all(e.startswith("broken.on_message: RuntimeError") for e in report.layer_errors)
    assert len(recorder.of("on_message")) == report.messages


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name[:40])
def test_cli_replay_json(tmp_path, path):
    result = run_memframe(
        "replay",
        str(path),
        "--json",
        "--home",
        str(tmp_path / "home"),
        "--project",
        str(tmp_path),
        extra_env={"MEMFRAME_CONFIG_DIR": str(tmp_path / "config")},
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["messages"] > 0
    if "codex" not in path.name:
        assert data["messages"] == independent_reading(path)["messages"]
        assert data["tool_calls"] == independent_reading(path)["tool_calls"]


def test_cli_replay_text_output_and_bad_input(tmp_path):
    home = ["--home", str(tmp_path / "home"), "--project", str(tmp_path)]
    env = {"MEMFRAME_CONFIG_DIR": str(tmp_path / "config")}
    result = run_memframe("replay", str(CLAUDE_FILES[0]), *home, extra_env=env)
    assert result.returncode == 0, result.stderr
    assert "summary" in result.stdout and "context tokens" in result.stdout
    missing = run_memframe("replay", str(tmp_path / "nope.jsonl"), *home, extra_env=env)
    assert missing.returncode == 2
    assert "nope.jsonl" in missing.stderr and "Traceback" not in missing.stderr
    not_a_dir = run_memframe(
        "replay", str(CLAUDE_FILES[0]), "--project", str(tmp_path / "x"), extra_env=env
    )
    assert not_a_dir.returncode == 2 and "does not exist" in not_a_dir.stderr
