"""Claude Code 2.x transcripts with parallel tool calls, and transcript paths that are not files.

In Claude Code 2.x one API response with several tool calls is written as one ``assistant``
record per content block (same ``message.id``, each record the child of the previous one), and
each ``tool_result`` record's ``parentUuid`` is the record of the ``tool_use`` it answers (also
named by ``sourceToolAssistantUUID``), not the record before it. The records below follow that
layout (field names and nesting as Claude Code 2.1 writes them); both readers — the whole-file
reader and the hook's incremental one — must keep every result and still see real rewinds.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memframe.agents.transcript import IncrementalReader, RewindEvent
from memframe.transcripts import TranscriptError, open_transcript
from memframe.transcripts.events import ToolUseEvent, derive_events

SESSION = "5d3c5a57-1d6e-4c43-9a0e-2f1f6f3b8f10"


def _base(uuid: str, parent: str | None, kind: str) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/work/app",
        "sessionId": SESSION,
        "version": "2.1.98",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-04-09T20:47:05.000Z",
    }


def user(uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    return {**_base(uuid, parent, "user"), "message": {"role": "user", "content": text}}


def call(uuid: str, parent: str, message_id: str, tool_id: str, name: str, **inputs: Any) -> dict:
    block = {"type": "tool_use", "id": tool_id, "name": name, "input": inputs}
    body = {
        "model": "claude-sonnet-4-5",
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": [block],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1200, "output_tokens": 40},
    }
    return {**_base(uuid, parent, "assistant"), "message": body, "requestId": "req_1"}


def result(uuid: str, answers: str, tool_id: str, text: str) -> dict[str, Any]:
    block = {"tool_use_id": tool_id, "type": "tool_result", "content": text, "is_error": False}
    return {
        **_base(uuid, answers, "user"),
        "message": {"role": "user", "content": [block]},
        "sourceToolAssistantUUID": answers,
        "toolUseResult": {"stdout": text, "stderr": "", "interrupted": False, "isImage": False},
    }


def text_reply(uuid: str, parent: str, message_id: str, text: str) -> dict[str, Any]:
    body = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1300, "output_tokens": 20},
    }
    return {**_base(uuid, parent, "assistant"), "message": body}


def parallel_session() -> list[dict[str, Any]]:
    return [
        user("u1", None, "Why do the billing tests fail?"),
        call("a1", "u1", "msg_1", "toolu_read", "Read", file_path="/work/app/billing.py"),
        call("a2", "a1", "msg_1", "toolu_grep", "Grep", pattern="round("),
        call("a3", "a2", "msg_1", "toolu_bash", "Bash", command="pytest -q tests/billing"),
        result("r1", "a1", "toolu_read", "1\tdef total(items):\n2\t    return round(sum(items))"),
        result("r2", "a2", "toolu_grep", "billing.py:2: return round(sum(items))"),
        result("r3", "a3", "toolu_bash", "1 failed, 41 passed"),
        text_reply("a4", "r3", "msg_2", "total() rounds too early; the test expects cents."),
    ]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _tool_results(events: list[Any]) -> dict[str, str | None]:
    return {
        e.tool_use.id: (e.result.content if e.result is not None else None)
        for e in events
        if isinstance(e, ToolUseEvent)
    }


EXPECTED = {
    "toolu_read": "1\tdef total(items):\n2\t    return round(sum(items))",
    "toolu_grep": "billing.py:2: return round(sum(items))",
    "toolu_bash": "1 failed, 41 passed",
}


def test_replay_keeps_every_result_of_parallel_calls(tmp_path: Path) -> None:
    transcript = open_transcript(_write(tmp_path / "s.jsonl", parallel_session()))
    events = list(derive_events(transcript))
    assert _tool_results(events) == EXPECTED
    assert transcript.skipped_abandoned == 0


def test_hook_reader_keeps_every_result_of_parallel_calls(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", parallel_session())
    reader = IncrementalReader()
    events = reader.read(path, final=True).events + reader.finish()
    assert not any(isinstance(e, RewindEvent) for e in events)
    assert _tool_results(events) == EXPECTED


def test_hook_reader_across_increments(tmp_path: Path) -> None:
    records = parallel_session()
    path = _write(tmp_path / "s.jsonl", records[:5])  # the first result only
    reader = IncrementalReader()
    first = reader.read(path).events
    state = json.loads(json.dumps(reader.to_state()))
    _write(path, records)  # the rest appended (same file, longer)
    later = IncrementalReader(state)
    events = first + later.read(path, final=True).events + later.finish()
    assert not any(isinstance(e, RewindEvent) for e in events)
    assert _tool_results(events) == EXPECTED


def rewound_session() -> list[dict[str, Any]]:
    """The parallel session, then the user goes back to their first prompt and asks again."""
    return [
        *parallel_session(),
        user("u2", None, "Start over: only look at the failing test."),
        call("b1", "u2", "msg_3", "toolu_again", "Bash", command="pytest -q -x tests/billing"),
        result("s1", "b1", "toolu_again", "1 failed"),
        text_reply("b2", "s1", "msg_4", "Done."),
        # rewind: a new prompt whose parent is the first answer, not the last record
        user("u3", "a4", "No — fix total() instead."),
    ]


def test_a_real_rewind_is_still_one(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", rewound_session())
    reader = IncrementalReader()
    events = reader.read(path, final=True).events
    assert [e for e in events if isinstance(e, RewindEvent)], events
    transcript = open_transcript(path)
    replayed = list(derive_events(transcript))
    assert "toolu_again" not in _tool_results(replayed)  # the abandoned branch
    assert _tool_results(replayed) == EXPECTED


def _within(seconds: float, action: Any) -> Any:
    """Run ``action`` in a thread; fail (instead of hanging the suite) if it blocks."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = action()
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"blocked for more than {seconds} s"
    assert time.monotonic() - started < seconds
    if "error" in box:
        raise box["error"]
    return box.get("value")


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_a_path_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        path = tmp_path / "transcript.jsonl"
        os.mkfifo(path)
        what = "a FIFO"
    elif kind == "directory":
        path = tmp_path / "dir.jsonl"
        path.mkdir()
        what = "a directory"
    else:
        path = Path("/dev/zero")
        what = "a device"
    with pytest.raises(TranscriptError, match=what):
        _within(5, lambda: open_transcript(path))
    increment = _within(5, lambda: IncrementalReader().read(path, final=True))
    assert increment.events == []
    assert any(what in problem for problem in increment.problems), increment.problems
