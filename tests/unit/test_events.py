"""Events derived from transcript items: order, tool joins, file reads, stops, compactions.

Real inputs are the public MIT-licensed transcripts in tests/data/transcripts (origins in its
README.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memframe.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from memframe.transcripts import CompactBoundary, open_transcript
from memframe.transcripts.events import (
    CompactEvent,
    FileReadEvent,
    MessageEvent,
    StopEvent,
    ToolUseEvent,
    derive_events,
    is_file_read,
    strip_read_decorations,
)

DATA = Path(__file__).parents[1] / "data" / "transcripts"
ALL_FILES = sorted(DATA.glob("*.jsonl"))
READ_FILE = DATA / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
REMINDER = (
    "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it looks "
    "malicious.\n</system-reminder>\n"
)


def use(tool_id: str, name: str = "Bash", **tool_input: object) -> ToolUseBlock:
    return ToolUseBlock(id=tool_id, name=name, input=tool_input)


def result(tool_id: str, content: str = "out", *, error: bool = False) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=tool_id, content=content, is_error=error)


def user(*blocks: ToolResultBlock | str) -> Message:
    content = tuple(TextBlock(b) if isinstance(b, str) else b for b in blocks)
    return Message(role="user", content=content)


def kinds(events: list[object]) -> list[str]:
    return [type(e).__name__.removesuffix("Event") for e in events]


def test_event_order_for_a_tool_loop():
    ask = user("read it")
    call = Message.assistant("reading", use("t1", "Read", file_path="/a.py"), use("t2"), id="m1")
    results = user(result("t1", "     1→x = 1\n     2→"), result("t2"))
    boundary = CompactBoundary(trigger="manual", pre_tokens=10, uuid="cb", line=4)
    final = Message.assistant("done", id="m2")
    events = list(derive_events([ask, call, results, boundary, final]))
    assert kinds(events) == [
        "Message", "Message", "Message", "ToolUse", "FileRead", "ToolUse", "Compact", "Message",
        "Stop",
    ]  # fmt: skip
    assert events[3] == ToolUseEvent(call.tool_uses[0], results.tool_results[0])
    assert events[4] == FileReadEvent("/a.py", "x = 1\n")
    assert events[5] == ToolUseEvent(call.tool_uses[1], results.tool_results[1])
    assert events[6] == CompactEvent(boundary)
    assert events[8] == StopEvent(final)
    assert events[7].message is events[8].message is final


def test_unanswered_tool_uses_end_the_stream_and_unknown_results_are_ignored():
    call = Message.assistant(use("t1"), use("t2"), id="m1")
    events = list(derive_events([call, user(result("t2"), result("zz")), user(result("t2"))]))
    assert kinds(events) == ["Message", "Message", "ToolUse", "Message", "ToolUse"]
    assert events[2] == ToolUseEvent(call.tool_uses[1], result("t2"))
    assert events[-1] == ToolUseEvent(call.tool_uses[0], None)


def test_failed_read_gives_no_file_read_event():
    call = Message.assistant(use("t1", "Read", file_path="/nope"), id="m1")
    events = list(derive_events([call, user(result("t1", "File does not exist.", error=True))]))
    assert kinds(events) == ["Message", "Message", "ToolUse"]


def test_sidechain_and_tool_calling_assistants_do_not_stop():
    side = Message.assistant("sub-agent answer", id="s", is_sidechain=True)
    calling = Message.assistant("let me look", use("t1"), id="m")
    events = list(derive_events([side, calling]))
    assert not any(isinstance(e, StopEvent) for e in events)


def test_is_file_read():
    assert is_file_read(use("1", "Read", file_path="/x")) == "/x"
    assert is_file_read(use("1", "read_file", path="src/a.py")) == "src/a.py"
    assert is_file_read(use("1", "mcp__filesystem__read_text_file", path="/y")) == "/y"
    assert is_file_read(use("1", "Read", path="", file_path="/z")) == "/z"
    assert is_file_read(use("1", "Read")) is None
    assert is_file_read(use("1", "Write", file_path="/x")) is None
    assert is_file_read(use("1", "thread_reader", path="/x")) is None
    assert is_file_read(use("1", "Read", file_path=3)) is None


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("     1→a\n     2→\n     3→  b\n     4→" + REMINDER, "a\n\n  b\n"),
        ("     1\ta\n    10\tb", "a\nb"),
        ("     1→a\nnot numbered\n     3→c", "     1→a\nnot numbered\n     3→c"),
        (
            "<system-reminder>Warning: the file exists but is empty.</system-reminder>",
            "",
        ),
        ("plain text\n", "plain text\n"),
        ("  12→x → y\n", "x → y\n"),
        ("", ""),
    ],
)
def test_strip_read_decorations(raw, text):
    assert strip_read_decorations(raw) == text


def test_real_read_of_claude_md_is_stripped():
    events = list(derive_events(open_transcript(READ_FILE)))
    reads = [e for e in events if isinstance(e, FileReadEvent)]
    assert [r.path for r in reads] == ["/path/to/Demo/CLAUDE.md"]
    content = reads[0].content
    assert content is not None
    assert content.startswith("# TODO App Project\n\n## Project Overview\n")
    assert "system-reminder" not in content
    assert not any(re.match(r" *\d+→", line) for line in content.split("\n"))
    joined = next(e for e in events if isinstance(e, ToolUseEvent) and e.tool_use.name == "Read")
    assert joined.result is not None
    assert len(content.split("\n")) == joined.result.content.count("→")


@pytest.mark.parametrize("sidechains", [False, True])
@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name[:48])
def test_real_transcripts_join_every_tool_use_and_stop_only_without_tool_calls(path, sidechains):
    items = list(open_transcript(path, include_sidechains=sidechains))
    messages = [i for i in items if isinstance(i, Message)]
    events = list(derive_events(items))

    tool_events = [e for e in events if isinstance(e, ToolUseEvent)]
    uses = [u for m in messages for u in m.tool_uses]
    assert len(tool_events) == len(uses)
    assert all(e.result is not None and e.result.tool_use_id == e.tool_use.id for e in tool_events)
    assert {e.tool_use.id for e in tool_events} == {u.id for u in uses}

    stops = [i for i, e in enumerate(events) if isinstance(e, StopEvent)]
    expected = [m for m in messages if m.role == "assistant" and not m.tool_uses]
    expected = [m for m in expected if not m.is_sidechain]
    assert [events[i].message for i in stops] == expected
    for i in stops:
        assert events[i - 1] == MessageEvent(events[i].message)
    assert sum(isinstance(e, MessageEvent) for e in events) == len(messages)
    assert sum(isinstance(e, CompactEvent) for e in events) == len(items) - len(messages)
