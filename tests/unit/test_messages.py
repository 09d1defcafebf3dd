"""The message model: Anthropic-style dicts in, typed blocks out, clear errors on bad shapes."""

from __future__ import annotations

import pytest

from memframe.messages import (
    ImageBlock,
    Message,
    MessageError,
    OtherBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    parse_block,
    parse_content,
    tool_result_text,
)


def test_string_content():
    message = Message.from_dict({"role": "user", "content": "hello"})
    assert message.role == "user"
    assert message.content == (TextBlock("hello"),)
    assert message.text == "hello"
    assert message.id is None
    assert message.usage is None


@pytest.mark.parametrize("content", ["", None, []])
def test_empty_content(content):
    data = {"role": "assistant"} if content is None else {"role": "assistant", "content": content}
    assert Message.from_dict(data).content == ()


def test_full_assistant_message():
    message = Message.from_dict(
        {
            "role": "assistant",
            "id": "msg_01",
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig"},
                {"type": "text", "text": "Reading two files."},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "b"}},
            ],
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_creation_input_tokens": None,
                "cache_read_input_tokens": 7,
                "service_tier": "standard",
            },
        }
    )
    assert message.id == "msg_01"
    assert message.model == "claude-x"
    assert message.content[0] == ThinkingBlock("plan")
    assert message.text == "Reading two files."
    assert message.has_tool_calls
    assert [t.id for t in message.tool_uses] == ["t1", "t2"]
    assert message.tool_uses[1].input == {"file_path": "b"}
    assert message.usage == Usage(10, 5, 0, 7)
    assert message.usage.context_tokens == 22


def test_tool_result_with_string_and_list_content():
    message = Message.from_dict(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "plain"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "line one"},
                        {"type": "image", "source": {"media_type": "image/png", "data": "..."}},
                        {"type": "text", "text": "line two"},
                    ],
                },
                {"type": "tool_result", "tool_use_id": "t3"},
            ],
        }
    )
    assert message.tool_results == [
        ToolResultBlock("t1", "plain"),
        ToolResultBlock("t2", "line one\nline two", is_error=True),
        ToolResultBlock("t3", ""),
    ]
    assert not message.has_tool_calls
    assert message.text == ""


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("text", "text"),
        (None, ""),
        ([], ""),
        (["a", {"type": "text", "text": "b"}, {"type": "image"}], "a\nb"),
        (42, "42"),
    ],
)
def test_tool_result_text(content, expected):
    assert tool_result_text(content) == expected


def test_image_and_unknown_blocks_are_kept():
    blocks = parse_content(
        [
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg"}},
            {"type": "image"},
            {"type": "server_tool_use", "id": "s1", "name": "web_search"},
        ]
    )
    assert blocks[0] == ImageBlock("image/jpeg")
    assert blocks[1] == ImageBlock("")
    assert isinstance(blocks[2], OtherBlock)
    assert blocks[2].kind == "server_tool_use"
    assert blocks[2].raw["name"] == "web_search"


def test_estimable_text_covers_every_block_that_occupies_context():
    message = Message(
        role="assistant",
        content=(
            ThinkingBlock("think"),
            TextBlock("say"),
            ToolUseBlock("t1", "Bash", {"command": "ls"}),
            ToolResultBlock("t1", "out"),
            ImageBlock("image/png"),
        ),
    )
    assert message.estimable_text() == 'think\nsay\nBash\n{"command":"ls"}\nout'


def test_constructors():
    assert Message.user("hi", id="u1").content == (TextBlock("hi"),)
    call = ToolUseBlock("t1", "Read", {})
    message = Message.assistant("text", call, id="msg_1")
    assert message.content == (TextBlock("text"), call)
    assert message.tool_uses == [call]


# -- invalid shapes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ("hello", "a message must be an object, got str"),
        (None, "a message must be an object, got NoneType"),
        ({"content": "x"}, "message role must be one of user, assistant, system, got None"),
        ({"role": "tool", "content": "x"}, "got 'tool'"),
        ({"role": "user", "id": 5}, "message id must be a string, got int"),
        (
            {"role": "user", "content": {"text": "x"}},
            "content must be a string or a list, got dict",
        ),
        ({"role": "user", "content": 3}, "content must be a string or a list, got int"),
        ({"role": "user", "content": ["x"]}, r"content\[0\] must be an object, got str"),
        ({"role": "user", "content": [{"type": "text"}]}, r"content\[0\]\.text must be a string"),
        (
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": 1}],
            },
            r"content\[1\]\.text must be a string, got int",
        ),
        (
            {"role": "assistant", "content": [{"type": "tool_use", "name": "Read", "input": {}}]},
            r"content\[0\]\.id must be a string, got NoneType",
        ),
        (
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]},
            r"content\[0\]\.name must be a string",
        ),
        (
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "R", "input": []}],
            },
            r"content\[0\]\.input must be an object",
        ),
        (
            {"role": "user", "content": [{"type": "tool_result", "content": "x"}]},
            r"content\[0\]\.tool_use_id must be a string",
        ),
        ({"role": "assistant", "usage": []}, "usage must be an object, got list"),
        (
            {"role": "assistant", "usage": {"input_tokens": -1}},
            "usage.input_tokens must be a non-negative",
        ),
        ({"role": "assistant", "usage": {"output_tokens": "5"}}, "usage.output_tokens"),
        ({"role": "assistant", "usage": {"output_tokens": True}}, "usage.output_tokens"),
        (
            {"role": "assistant", "usage": {"cache_read_input_tokens": 1.5}},
            "cache_read_input_tokens",
        ),
    ],
)
def test_invalid_shapes_name_the_field(data, error):
    with pytest.raises(MessageError, match=error):
        Message.from_dict(data)


def test_message_error_is_a_value_error():
    assert issubclass(MessageError, ValueError)


def test_parse_block_reports_its_index():
    with pytest.raises(MessageError, match=r"content\[7\]"):
        parse_block({"type": "text", "text": None}, 7)


def test_session_rejects_a_bad_message_and_changes_nothing(tmp_frame):
    session = tmp_frame.session("s1")
    with pytest.raises(MessageError):
        session.on_message({"role": "robot", "content": "x"})
    assert session.message_count == 0
    assert session.context_tokens == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), ("true", True), (False, False), ("false", False), (None, False), (1, False)],
)
def test_tool_result_is_error_reads_only_true(value, expected):
    from memframe.messages import parse_block

    block = parse_block(
        {"type": "tool_result", "tool_use_id": "t1", "content": "x", "is_error": value}
    )
    assert block.is_error is expected
