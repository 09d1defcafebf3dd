"""ContextMeter: provider usage of the last response (counted once) plus an estimate after it."""

from __future__ import annotations

import pytest

from memframe import _backend
from memframe.context.usage import ContextMeter
from memframe.messages import Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage


def chars(text: str) -> int:
    """A transparent estimator for exact arithmetic: one token per character."""
    return len(text)


@pytest.fixture
def meter() -> ContextMeter:
    return ContextMeter(chars)


def usage(input_tokens: int = 0, output: int = 0, create: int = 0, read: int = 0) -> Usage:
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output,
        cache_creation_input_tokens=create,
        cache_read_input_tokens=read,
    )


def test_starts_empty(meter):
    assert meter.tokens == 0


def test_messages_without_usage_are_estimated(meter):
    assert meter.observe(Message.user("hello")) == 5
    assert meter.observe(Message.user("world!")) == 11
    assert meter.estimated == 11
    assert meter.reported == 0


def test_usage_is_input_plus_both_cache_parts_plus_output(meter):
    meter.observe(Message.user("some question"))
    reply = Message.assistant("answer", id="msg_1", usage=usage(10, 3, create=100, read=1000))
    assert meter.observe(reply) == 1113
    assert meter.reported == 1113
    assert meter.estimated == 0  # the usage already covers everything before it


def test_later_messages_are_added_as_an_estimate(meter):
    meter.observe(Message.assistant("a", id="msg_1", usage=usage(100, 20)))
    assert meter.observe(Message.user("abcd")) == 124
    assert meter.observe(Message.user("ef")) == 126


def test_split_records_of_one_response_count_once(meter):
    """One response written as several records sharing a message id (thinking, text, tool_use)."""
    shared = usage(1000, 50, read=200)
    parts = [
        Message(
            role="assistant", content=(ThinkingBlock("let me think"),), id="msg_A", usage=shared
        ),
        Message(role="assistant", content=(TextBlock("Reading."),), id="msg_A", usage=shared),
        Message(
            role="assistant",
            content=(ToolUseBlock("t1", "Read", {"file_path": "a.py"}),),
            id="msg_A",
            usage=shared,
        ),
    ]
    for part in parts:
        assert meter.observe(part) == 1250
    assert meter.tokens == 1250


def test_a_repeated_id_after_other_messages_is_not_counted_again(meter):
    meter.observe(Message.assistant("a", id="msg_A", usage=usage(1000)))
    meter.observe(Message.user("xyz"))
    assert meter.observe(Message.assistant("b", id="msg_A", usage=usage(1000))) == 1003


def test_a_newer_response_replaces_the_older_usage(meter):
    meter.observe(Message.assistant("a", id="msg_1", usage=usage(1000, 10)))
    meter.observe(Message.user("tool output"))
    assert meter.observe(Message.assistant("b", id="msg_2", usage=usage(1100, 20))) == 1120


def test_assistant_usage_without_an_id(meter):
    meter.observe(Message.user("hi"))
    assert meter.observe(Message.assistant("a", usage=usage(500, 5))) == 505
    # Without an id there is nothing to deduplicate on: each response is taken as it comes.
    assert meter.observe(Message.assistant("b", usage=usage(600, 6))) == 606
    assert meter.observe(Message.user("xy")) == 608


def test_assistant_without_usage_is_estimated(meter):
    meter.observe(Message.assistant("a", id="msg_1", usage=usage(100)))
    assert meter.observe(Message.assistant("four", id="msg_2")) == 104


def test_usage_on_a_user_message_is_ignored(meter):
    assert meter.observe(Message(role="user", content=(TextBlock("abc"),), usage=usage(999))) == 3


def test_tool_use_input_is_estimated(meter):
    call = Message.assistant(ToolUseBlock("t1", "Bash", {"command": "ls"}))
    assert meter.observe(call) == len("Bash") + 1 + len('{"command":"ls"}')


def test_reset_after_compaction(meter):
    meter.observe(Message.assistant("a", id="msg_1", usage=usage(150_000)))
    meter.observe(Message.user("more"))
    meter.reset(2_000)
    assert meter.tokens == 2_000
    assert (meter.reported, meter.estimated) == (0, 2_000)
    assert meter.observe(Message.user("abc")) == 2_003
    # An old record arriving again after the compaction does not bring the old usage back.
    assert meter.observe(Message.assistant("a", id="msg_1", usage=usage(150_000))) == 2_003
    assert meter.observe(Message.assistant("c", id="msg_2", usage=usage(3_000))) == 3_000


def test_reset_defaults_to_empty(meter):
    meter.observe(Message.user("abc"))
    meter.reset()
    assert meter.tokens == 0


def test_with_the_active_backend_estimator():
    meter = ContextMeter(_backend.count_tokens)
    text = "memframe counts tokens " * 10
    assert meter.observe(Message.user(text)) == _backend.count_tokens(text) > 0


def test_session_compacted_resets_its_meter(tmp_frame):
    session = tmp_frame.session("s1")
    session.on_message(Message.assistant("a", id="msg_1", usage=usage(90_000)))
    assert session.context_tokens == 90_000
    session.compacted(remaining_tokens=1_500)
    assert session.context_tokens == 1_500
