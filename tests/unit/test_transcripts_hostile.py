"""Transcripts that are broken, hostile or huge: nothing crashes, nothing is loaded whole.

Decision on empty files: a file with no records at all (0 bytes, or blank lines only) opens as
an empty ``claude-code`` transcript with zero messages, because Claude Code creates a session
file before its first record lands and a hook may read it then. A file that has lines but no
valid record, or whose first 50 records match no format, raises ``TranscriptError``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memframe.messages import Message
from memframe.transcripts import (
    Problem,
    TranscriptError,
    open_transcript,
)
from memframe.transcripts._jsonl import iter_records


def user(uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "message": {"role": "user", "content": text},
    }


def assistant(uuid: str, parent: str | None, msg_id: str, content: Any, **message: Any):
    body = {"role": "assistant", "id": msg_id, "content": content, **message}
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "message": body}


def line(record: Any) -> bytes:
    return orjson.dumps(record) + b"\n"


def texts(transcript) -> list[str]:
    return [m.text for m in transcript if isinstance(m, Message)]


def test_truncated_last_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(line(user("u1", None, "hello")) + line(user("u2", "u1", "more"))[:-9])
    transcript = open_transcript(path)
    assert texts(transcript) == ["hello"]
    assert len(transcript.problems) == 1
    assert transcript.problems[0].line == 2
    assert "truncated" in transcript.problems[0].reason


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (assistant("a", "u1", "m", 42), "content must be a string or a list, got int"),
        (assistant("a", "u1", "m", "x", usage="lots"), "usage must be an object, got str"),
        (assistant("a", "u1", "m", "x", usage={"output_tokens": -1}), "usage.output_tokens"),
        (assistant("a", "u1", "m", [{"type": "tool_use", "name": "Bash"}]), "content[0].id"),
        (
            assistant("a", "u1", "m", [{"type": "tool_use", "id": "t", "name": "B", "input": []}]),
            "content[0].input must be an object",
        ),
        (assistant("a", "u1", "m", [{"type": "text", "text": 7}]), "content[0].text"),
        (assistant("a", "u1", "m", ["bare string"]), "content[0] must be an object"),
        (assistant("a", "u1", 12, "x"), "message id must be a string"),
        ({"type": "user", "uuid": "a", "parentUuid": "u1", "message": "hi"}, "must be an object"),
        ({"type": "user", "uuid": "a", "parentUuid": "u1", "message": {"role": "bot"}}, "role"),
    ],
)
def test_wrong_types_in_fields_become_problems(tmp_path, record, reason):
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        line(user("u1", None, "first")) + line(record) + line(user("u3", "a", "after"))
    )
    transcript = open_transcript(path)
    assert texts(transcript) == ["first", "after"]
    assert len(transcript.problems) == 1
    assert transcript.problems[0].line == 2
    assert reason in transcript.problems[0].reason


def test_wrong_types_in_record_metadata_are_ignored(tmp_path):
    record = user("u2", "u1", "x") | {"timestamp": 5, "isSidechain": "yes", "cwd": ["/"]}
    path = tmp_path / "t.jsonl"
    path.write_bytes(line(user("u1", None, "a")) + line(record) + line(user(7, "u2", "b")))  # type: ignore[arg-type]
    transcript = open_transcript(path)
    messages = [m for m in transcript if isinstance(m, Message)]
    assert [m.text for m in messages] == ["a", "x", "b"]
    assert messages[1].timestamp is None and messages[1].meta == {}
    assert not messages[1].is_sidechain
    assert transcript.problems == []


def test_unknown_record_types_are_counted(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        line(user("u1", None, "a"))
        + line({"type": "hologram", "uuid": "h"})
        + line({"type": "hologram"})
        + line({"type": 5})
        + line({"no": "type"})
        + line({"type": "progress", "uuid": "p", "parentUuid": "u1"})
        + line(user("u2", "p", "b"))
    )
    transcript = open_transcript(path)
    assert texts(transcript) == ["a", "b"]
    assert transcript.skipped_records == {"unknown:hologram": 2, "untyped": 2, "progress": 1}
    assert transcript.problems == []


def test_non_object_json_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    ok = b'{"type":"user","message":{"role":"user","content":"ok"}}\n'
    path.write_bytes(b'[1, 2]\n"text"\n42\nnull\ntrue\n' + ok)
    transcript = open_transcript(path)
    assert texts(transcript) == ["ok"]
    assert transcript.problems == [
        Problem(1, "expected a JSON object, got an array"),
        Problem(2, "expected a JSON object, got a string"),
        Problem(3, "expected a JSON object, got a number"),
        Problem(4, "expected a JSON object, got null"),
        Problem(5, "expected a JSON object, got a boolean"),
    ]


def test_invalid_utf8(tmp_path):
    path = tmp_path / "t.jsonl"
    good = line(user("u1", None, "fine"))
    bad = b'{"type":"user","message":{"content":"\xff\xfe bad"}}'
    path.write_bytes(good + bad + b"\n" + good[:-1])
    transcript = open_transcript(path)
    assert texts(transcript) == ["fine"]  # the repeated uuid on line 3 is emitted once
    assert transcript.problems == [Problem(2, f"invalid UTF-8 at byte {bad.index(0xFF)}")]
    assert transcript.skipped_records == {"duplicate-uuid": 1}


def test_crlf_bom_blank_lines_and_deep_nesting(tmp_path):
    path = tmp_path / "t.jsonl"
    deep = b'{"type":"user","x":' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + line(user("u1", None, "a"))[:-1]
        + b"\r\n\n   \n\r\n"
        + deep
        + line(user("u2", "u1", "b"))
    )
    transcript = open_transcript(path)
    assert texts(transcript) == ["a", "b"]
    assert [p.line for p in transcript.problems] == [5]
    assert "invalid JSON" in transcript.problems[0].reason


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_file_is_an_empty_transcript(tmp_path, content):
    path = tmp_path / "t.jsonl"
    path.write_bytes(content)
    transcript = open_transcript(path)
    assert transcript.format == "claude-code"
    assert list(transcript) == []
    assert transcript.problems == []


def test_garbage_is_not_a_transcript(tmp_path):
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(b"\x00\x01 not json\n{{{\n")
    with pytest.raises(TranscriptError, match=r"garbage\.jsonl: not a transcript.*2 invalid lines"):
        open_transcript(path)


def test_directory_missing_and_unreadable_paths(tmp_path):
    with pytest.raises(TranscriptError, match=re.escape(f"{tmp_path}: is a directory")):
        open_transcript(tmp_path)
    with pytest.raises(TranscriptError, match=r"nope\.jsonl: no such file"):
        open_transcript(tmp_path / "nope.jsonl")
    assert issubclass(TranscriptError, ValueError)
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.jsonl"
        locked.write_bytes(line(user("u1", None, "a")))
        locked.chmod(0)
        with pytest.raises(TranscriptError, match=r"locked\.jsonl: permission denied"):
            open_transcript(locked)


def test_a_file_removed_after_opening_raises_transcript_error(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(line(user("u1", None, "a")))
    transcript = open_transcript(path)
    path.unlink()
    with pytest.raises(TranscriptError, match="no such file"):
        list(transcript)


def test_one_gigabyte_file_is_streamed_not_loaded(tmp_path):
    path = tmp_path / "huge.jsonl"
    head = line(user("u1", None, "first")) + line(assistant("a1", "u1", "m1", "second"))
    with path.open("wb") as f:
        f.write(head)
        f.truncate(1 << 30)  # sparse: the rest is NUL bytes and no newline, one over-long line
    started = time.monotonic()
    tracemalloc.start()
    try:
        transcript = open_transcript(path)
        got = texts(transcript)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == ["first", "second"]
    assert len(transcript.problems) == 1
    problem = transcript.problems[0]
    assert problem.line == 3
    assert f"line of {(1 << 30) - len(head)} bytes exceeds max_record_bytes" in problem.reason
    assert peak < 200 * 1024 * 1024, peak
    assert time.monotonic() - started < 30


def test_over_long_lines_keep_line_numbers(tmp_path):
    path = tmp_path / "t.jsonl"
    long_record = line(user("x", None, "y" * 500))
    path.write_bytes(line(user("u1", None, "a")) + long_record + line(user("u2", "u1", "b")))
    transcript = open_transcript(path, max_record_bytes=200)
    assert texts(transcript) == ["a", "b"]
    assert transcript.problems == [
        Problem(2, f"line of {len(long_record) - 1} bytes exceeds max_record_bytes=200; skipped")
    ]


def test_many_records_are_streamed(tmp_path):
    path = tmp_path / "many.jsonl"
    count = 200_000
    with path.open("wb") as f:
        parent = None
        for i in range(count):
            uuid = f"r{i:07d}"
            if i % 2:
                f.write(line(assistant(uuid, parent, f"m{i}", f"text {i:07d}")))
            else:
                f.write(line(user(uuid, parent, f"text {i:07d}")))
            parent = uuid
    stream = iter(open_transcript(path))
    assert next(stream).text == "text 0000000"
    # Rewrite the last record's text in place: a reader that had parsed the file up front
    # would still yield the old text.
    data = path.read_bytes()
    at = data.rindex(b"text 0199999")
    with path.open("r+b") as f:
        f.seek(at)
        f.write(b"TEXT 0199999")
    seen = 1
    last = None
    for item in stream:
        seen += 1
        last = item
    assert seen == count
    assert isinstance(last, Message) and last.text == "TEXT 0199999"


# -- the line reader against a simple reference ------------------------------------------------


def reference_lines(data: bytes, max_record_bytes: int) -> tuple[list[tuple[int, Any]], list[int]]:
    records: list[tuple[int, Any]] = []
    bad: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if len(raw) > max_record_bytes:  # checked first: a reader cannot see past the limit
            bad.append(number)
            continue
        if not raw.strip():
            continue
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            bad.append(number)
            continue
        if isinstance(value, dict):
            records.append((number, value))
        else:
            bad.append(number)
    return records, bad


_LINES = st.one_of(
    st.builds(lambda n: json.dumps({"n": n, "pad": "x" * (n % 40)}).encode(), st.integers(0, 99)),
    st.sampled_from([b"", b"  ", b"[1]", b"{bad", b"\xff{}", b'"s"', b"{}", b'{"a":"\xc3\xa9"}']),
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(_LINES, max_size=30),
    trailing_newline=st.booleans(),
    chunk_size=st.integers(1, 64),
    max_record_bytes=st.integers(1, 80),
)
def test_iter_records_matches_a_reference(lines, trailing_newline, chunk_size, max_record_bytes):
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        path.write_bytes(data)
        problems: list[Problem] = []
        got = list(
            iter_records(
                path, max_record_bytes=max_record_bytes, problems=problems, chunk_size=chunk_size
            )
        )
    records, bad = reference_lines(data, max_record_bytes)
    assert got == records
    assert [p.line for p in problems] == bad


# -- fuzzed records never crash the readers ----------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_CLAUDE = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["user", "assistant", "system", "summary", "x"]) | _JSON,
        "message": st.fixed_dictionaries(
            {
                "role": st.sampled_from(["user", "assistant"]) | _JSON,
                "content": _JSON
                | st.lists(
                    st.fixed_dictionaries(
                        {"type": st.sampled_from(["text", "tool_use", "tool_result"])},
                        optional={
                            "id": _JSON,
                            "name": _JSON,
                            "input": _JSON,
                            "text": _JSON,
                            "tool_use_id": _JSON,
                            "content": _JSON,
                        },
                    ),
                    max_size=3,
                ),
            },
            optional={"id": st.sampled_from(["m1", "m2"]) | _JSON, "usage": _JSON},
        )
        | _JSON,
    },
    optional={
        "uuid": st.sampled_from(["a", "b", "c"]) | _JSON,
        "parentUuid": st.sampled_from(["a", "b", "c"]) | _JSON,
        "logicalParentUuid": _JSON,
        "isSidechain": _JSON,
        "subtype": st.just("compact_boundary"),
        "compactMetadata": _JSON,
    },
)
_CODEX_PAYLOAD = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "message",
                "reasoning",
                "function_call",
                "function_call_output",
                "custom_tool_call",
                "local_shell_call",
                "token_count",
                "web_search_call",
            ]
        )
        | _JSON
    },
    optional={
        "role": st.sampled_from(["user", "assistant", "developer"]) | _JSON,
        "content": _JSON,
        "summary": _JSON,
        "call_id": _JSON,
        "name": _JSON,
        "arguments": _JSON,
        "output": _JSON,
        "input": _JSON,
        "info": _JSON,
        "action": _JSON,
    },
)
_CODEX = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["response_item", "event_msg", "turn_context", "compacted"]),
        "payload": _CODEX_PAYLOAD | _JSON,
    }
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=st.lists(_CLAUDE, max_size=8) | st.lists(_CODEX, max_size=8), sidechains=st.booleans()
)
def test_fuzzed_records_never_crash(records, sidechains):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        path.write_bytes(b"".join(line(r) for r in records))
        fmt = "codex" if records and "payload" in records[0] else "claude-code"
        transcript = open_transcript(path, format=fmt, include_sidechains=sidechains)
        items = list(transcript)
    assert len(items) <= 2 * len(records)
    assert all(isinstance(p, Problem) for p in transcript.problems)
