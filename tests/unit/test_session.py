"""Session: ids, closing, resuming, context and the event API."""

from __future__ import annotations

import stat
import uuid

import pytest

from memframe import hookimpl
from memframe.context.blocks import ContextBlock
from memframe.messages import Message, ToolResultBlock, ToolUseBlock
from memframe.session import (
    STATE_FILE,
    SessionClosedError,
    SessionNotFoundError,
    SessionReadOnlyError,
    validate_session_id,
)
from memframe.testing import HookRecorder


@pytest.mark.parametrize(
    "session_id",
    [
        "",
        "../x",
        "..",
        ".",
        ".hidden",
        "a/b",
        "a\\b",
        "/abs",
        "-starts-with-dash",
        "has space",
        "new\nline",
        "trailing\n",
        "nul\x00",
        "é",
        "x" * 129,
    ],
)
def test_invalid_session_ids_are_rejected(tmp_frame, session_id):
    with pytest.raises(ValueError, match="invalid session id"):
        tmp_frame.session(session_id)
    assert list(tmp_frame.project_home.glob("*")) == []  # nothing was created anywhere


@pytest.mark.parametrize("session_id", [None, 5, b"abc"])
def test_non_string_session_ids_are_rejected(session_id):
    with pytest.raises(ValueError, match="invalid session id"):
        validate_session_id(session_id)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "session_id", ["s1", "A", "0c1f3a7e-1b2c-4d5e-8f90-123456789abc", "run_2.v3", "x" * 128, "a.."]
)
def test_valid_session_ids(tmp_frame, session_id):
    session = tmp_frame.session(session_id)
    assert session.id == session_id
    assert session.dir == tmp_frame.project_home / session_id
    assert session.dir.parent == tmp_frame.project_home
    assert stat.S_IMODE(session.dir.stat().st_mode) == 0o700


def test_a_session_without_an_id_gets_a_uuid(tmp_frame):
    session = tmp_frame.session()
    assert str(uuid.UUID(session.id)) == session.id
    assert tmp_frame.session() is not session


def test_events_after_close_raise(tmp_frame):
    session = tmp_frame.session("s1")
    session.on_message({"role": "assistant", "content": "done"})
    session.close()
    assert session.closed
    tool = ToolUseBlock("t1", "Read", {})
    for call in (
        lambda: session.on_message({"role": "user", "content": "late"}),
        lambda: session.on_tool_use(tool, None),
        lambda: session.on_file_read("a.py"),
        lambda: session.on_stop(),
        lambda: session.pre_compact(),
        lambda: session.context(),
        lambda: session.context_blocks(),
    ):
        with pytest.raises(SessionClosedError, match="s1"):
            call()
    session.close()  # closing again is harmless


def test_a_closed_session_id_starts_a_new_session_that_resumes_its_state(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder])
    first = frame.session("s1")
    first.state.section("notes")["summary"] = "we fixed the parser"
    first.close()
    second = frame.session("s1")
    assert second is not first
    assert second.state.section("notes") == {"summary": "we fixed the parser"}
    assert recorder.names().count("on_session_start") == 2


def test_resume_in_a_new_frame_reads_existing_state(frame_factory):
    frame = frame_factory()
    session = frame.session("s1")
    session.state.section("memdir")["cursor"] = 42
    frame.close()  # closing the frame closes (and saves) the session
    assert (session.dir / STATE_FILE).is_file()

    seen: list[dict] = []

    class Resumer:
        @hookimpl
        def on_session_start(self, session):
            seen.append(session.state.snapshot())

    again = frame_factory(layers=[Resumer()]).session("s1")
    assert seen == [{"memdir": {"cursor": 42}}]  # visible already in on_session_start
    assert again.dir == session.dir


def test_context_joins_blocks_in_layer_order(frame_factory):
    class Notes:
        @hookimpl
        def collect_context(self, session, prompt):
            return [
                ContextBlock("notes", "Session notes", "We are fixing the parser.\n\n"),
                ContextBlock("notes", "Next", "Run the tests."),
            ]

    class Memory:
        @hookimpl(trylast=True)
        def collect_context(self, session, prompt):
            return [ContextBlock("memdir", "Memory", f"prompt was {prompt}")]

    class Nothing:
        @hookimpl
        def collect_context(self, session, prompt):
            return None

    frame = frame_factory(layers=[Memory(), Notes(), Nothing()])
    session = frame.session("s1")
    assert session.context("fix it") == (
        "# Session notes\n\nWe are fixing the parser.\n\n"
        "# Next\n\nRun the tests.\n\n"
        "# Memory\n\nprompt was fix it\n"
    )
    assert [block.source for block in session.context_blocks()] == ["notes", "notes", "memdir"]


def test_context_is_empty_without_layers(tmp_frame):
    assert tmp_frame.session("s1").context() == ""


def test_on_stop_without_messages_is_an_error(tmp_frame):
    with pytest.raises(ValueError, match="on_stop needs a final message"):
        tmp_frame.session("s1").on_stop()


def test_on_stop_with_an_explicit_message(frame_factory):
    recorder = HookRecorder()
    session = frame_factory(layers=[recorder]).session("s1")
    final = Message.assistant("all done")
    session.on_stop(final)
    assert recorder.of("on_stop")[0].kwargs["message"] is final


def test_counters(tmp_frame):
    session = tmp_frame.session("s1")
    session.on_message(Message.user("go"))
    session.on_message(
        Message.assistant("two calls", ToolUseBlock("a", "Read", {}), ToolUseBlock("b", "Grep", {}))
    )
    session.on_message(Message(role="user", content=(ToolResultBlock("a", "x"),)))
    session.on_message(Message.assistant(ToolUseBlock("c", "Edit", {})))
    assert session.message_count == 4
    assert session.tool_call_count == 3
    assert session.last_message is not None
    assert session.last_message.tool_uses[0].id == "c"
    assert "messages=4" in repr(session)


def test_file_read_path_is_a_string(frame_factory, tmp_path):
    recorder = HookRecorder()
    session = frame_factory(layers=[recorder]).session("s1")
    session.on_file_read(tmp_path / "a.py")
    (call,) = recorder.of("on_file_read")
    assert call.kwargs["path"] == str(tmp_path / "a.py")
    assert call.kwargs["content"] is None


def test_session_as_context_manager_closes(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder])
    with frame.session("s1") as session:
        session.on_message(Message.user("hi"))
    assert session.closed
    assert recorder.of("on_session_end")[0].kwargs["reason"] == "close"


def test_submit_background_runs_and_flush_waits(tmp_frame):
    session = tmp_frame.session("s1")
    future = session.submit_background(lambda: "done", name="task")
    assert session.flush(timeout=10) is True
    assert future.result() == "done"


def test_state_is_saved_on_close_with_private_modes(tmp_frame):
    session = tmp_frame.session("s1")
    session.state.section("layer")["x"] = 1
    session.close()
    path = session.dir / STATE_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert b'"x": 1' in path.read_bytes()


def test_on_stop_accepts_a_dict(tmp_frame):
    from memframe import hookimpl

    seen = []

    class Stops:
        @hookimpl
        def on_stop(self, message):
            seen.append(message)

    tmp_frame.register_layer("stops", Stops())
    session = tmp_frame.session("dict-stop")
    session.on_stop({"role": "assistant", "id": "msg_9", "content": "done"})
    assert seen[0].id == "msg_9"
    assert seen[0].text == "done"


def test_inspect_is_read_only(frame_factory):
    frame = frame_factory()
    with frame.session("s1") as session:
        session.on_message(Message.user("hi"))
        session.state.section("memdir")["cursor"] = 7
    saved = (session.dir / STATE_FILE).read_bytes()

    class Notes:
        @hookimpl
        def collect_context(self, session, prompt):
            session.state.section("memdir")["cursor"] = 99  # not saved from a read-only view
            return ContextBlock("notes", "Notes", f"read_only={session.read_only}")

    recorder = HookRecorder()
    view = frame_factory(layers=[recorder, Notes()]).inspect("s1")
    assert view.read_only and view.context() == "# Notes\n\nread_only=True\n"
    assert view.pre_compact() == []
    for event in (
        lambda: view.on_message(Message.user("more")),
        lambda: view.on_tool_use(ToolUseBlock("a", "Read", {})),
        lambda: view.on_file_read("a.py"),
        lambda: view.on_stop(Message.assistant("done")),
        lambda: view.compacted(),
    ):
        with pytest.raises(SessionReadOnlyError, match="read-only"):
            event()
    view.close()
    assert view.closed
    with pytest.raises(SessionClosedError):
        view.on_message(Message.user("late"))
    hooks = {call.name for call in recorder.calls}
    # no session hook (register_rules: the frame checks the rules layers register when it opens)
    assert hooks == {"register_rules", "on_frame_open", "collect_context", "on_pre_compact"}
    assert (session.dir / STATE_FILE).read_bytes() == saved


def test_inspect_needs_an_existing_session(tmp_frame):
    tmp_frame.session("known").close()
    with pytest.raises(SessionNotFoundError, match=r"no session 'other'.*known sessions: known"):
        tmp_frame.inspect("other")
    with pytest.raises(ValueError, match="invalid session id"):
        tmp_frame.inspect("../x")
