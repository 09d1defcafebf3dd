"""The lifecycle contract: which hooks fire, in which order, with which arguments (tox style)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from memframe import hookimpl, hookspecs
from memframe.context.blocks import ContextBlock
from memframe.messages import Message, ToolResultBlock, ToolUseBlock
from memframe.testing import HookRecorder

SPEC_NAMES = frozenset(
    name
    for name, obj in vars(hookspecs).items()
    if callable(obj) and hasattr(obj, f"{hookspecs.PROJECT}_spec")
)


def impl_names(obj: object) -> set[str]:
    return {
        name
        for name in dir(obj)
        if not name.startswith("_") and hasattr(getattr(obj, name), f"{hookspecs.PROJECT}_impl")
    }


# -- the recorder covers every hook ----------------------------------------------------------


def test_hookspecs_are_found():
    assert {"on_message", "on_stop", "collect_context", "on_layer_error"} <= SPEC_NAMES


def test_recorder_implements_exactly_every_hookspec():
    """A new hookspec must be added to HookRecorder (and so to this contract) too."""
    assert impl_names(HookRecorder) == SPEC_NAMES


def test_recorder_is_registered_on_every_hook(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder])
    callers = frame.manager.get_hookcallers(recorder)
    assert callers is not None
    assert {caller.name for caller in callers} == SPEC_NAMES
    assert all(caller.has_spec() for caller in callers)


# -- one scripted session, the exact call log ------------------------------------------------

USER = {"role": "user", "content": "Fix the failing test in app.py"}
TOOL_CALL = {
    "role": "assistant",
    "id": "msg_1",
    "content": [
        {"type": "text", "text": "Let me read it."},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "app.py"}},
    ],
    "usage": {"input_tokens": 100, "output_tokens": 20},
}
TOOL_RESULT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "print('hi')"}],
}
FINAL = {
    "role": "assistant",
    "id": "msg_2",
    "content": "Fixed.",
    "usage": {"input_tokens": 140, "output_tokens": 5},
}


def test_scripted_session_exact_call_log(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder])
    session = frame.session("s1")
    for message in (USER, TOOL_CALL, TOOL_RESULT, FINAL):
        session.on_message(message)
    tool_use = ToolUseBlock("toolu_1", "Read", {"file_path": "app.py"})
    result = ToolResultBlock("toolu_1", "print('hi')")
    session.on_tool_use(tool_use, result)
    session.on_file_read("app.py", "print('hi')")
    session.on_stop()
    assert session.pre_compact() == []
    assert session.context("what next?") == ""
    session.close()
    frame.close()

    assert recorder.names() == [
        "register_rules",  # memframe.open() checks every rule layers register (fail closed)
        "on_frame_open",
        "on_session_start",
        "on_message",
        "on_message",
        "on_message",
        "on_message",
        "on_tool_use",
        "on_file_read",
        "on_stop",
        "on_pre_compact",
        "collect_context",
        "on_session_end",
        "on_frame_close",
    ]
    calls = recorder.calls[1:]  # after register_rules
    assert calls[0].kwargs == {"frame": frame}
    assert calls[1].kwargs == {"session": session}
    messages = [call.kwargs["message"] for call in recorder.of("on_message")]
    assert all(call.kwargs["session"] is session for call in recorder.of("on_message"))
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert all(isinstance(m, Message) for m in messages)
    assert messages[0].text == "Fix the failing test in app.py"
    assert messages[1].tool_uses == [tool_use]
    assert messages[2].tool_results == [result]
    assert recorder.of("on_tool_use")[0].kwargs == {
        "session": session,
        "tool_use": tool_use,
        "result": result,
    }
    assert recorder.of("on_file_read")[0].kwargs == {
        "session": session,
        "path": "app.py",
        "content": "print('hi')",
    }
    # on_stop defaults to the last message: the final assistant response.
    assert recorder.of("on_stop")[0].kwargs["message"] is messages[3]
    assert recorder.of("collect_context")[0].kwargs == {"session": session, "prompt": "what next?"}
    assert recorder.of("on_session_end")[0].kwargs == {"session": session, "reason": "close"}
    assert calls[-1].kwargs == {"frame": frame}
    assert recorder.of("on_layer_error") == []


def test_on_message_sees_updated_context_tokens(frame_factory):
    seen: list[int] = []

    class Meter:
        @hookimpl
        def on_message(self, session, message):
            seen.append(session.context_tokens)

    frame = frame_factory(layers=[Meter()])
    session = frame.session("s1")
    session.on_message(USER)
    session.on_message(TOOL_CALL)
    assert seen[0] > 0  # the user message was estimated before the hook ran
    assert seen[1] == 120  # provider usage: input + output


def test_session_close_is_idempotent_and_takes_a_reason(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder])
    session = frame.session("s1")
    session.close("clear")
    session.close()
    frame.close()
    frame.close()
    ends = recorder.of("on_session_end")
    assert [call.kwargs["reason"] for call in ends] == ["clear"]
    assert recorder.names().count("on_frame_close") == 1


def test_frame_close_ends_open_sessions_before_frame_close(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder])
    one, two = frame.session("one"), frame.session("two")
    frame.close()
    assert recorder.names()[-3:] == ["on_session_end", "on_session_end", "on_frame_close"]
    assert {call.kwargs["session"] for call in recorder.of("on_session_end")} == {one, two}
    assert one.closed
    assert two.closed
    with pytest.raises(RuntimeError, match="closed"):
        frame.session("three")


def test_same_session_id_returns_the_open_session(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder])
    assert frame.session("s1") is frame.session("s1")
    assert recorder.names().count("on_session_start") == 1


def test_background_work_finishes_before_session_end(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder])
    session = frame.session("s1")
    session.submit_background(lambda: recorder.calls.append(_bg_call()), name="notes")
    session.close()
    assert recorder.names()[-2:] == ["background", "on_session_end"]


def _bg_call() -> Any:
    from memframe.testing import HookCall

    return HookCall("background")


def test_trace_hooks_prints_every_call(monkeypatch, frame_factory, capsys):
    monkeypatch.setenv("MEMFRAME_TRACE_HOOKS", "1")
    frame = frame_factory(layers=[HookRecorder()])
    assert frame.config.trace_hooks
    frame.session("s1").on_message(USER)
    err = capsys.readouterr().err
    assert "on_message layer=recorder" in err
    assert "on_message total" in err


# -- provider hooks --------------------------------------------------------------------------

PROVIDER_HOOKS = ("register_model_backends", "register_rules", "register_commands")
FAKE_RULE = {
    "id": "fake-rule",
    "label": "Fake token",
    "regex": "(fake_[a-z]{8})",
    "keywords": ["fake_"],
}


class Provider:
    """Registers one thing through each provider hook."""

    @hookimpl
    def register_model_backends(self, register):
        register("fake-model", lambda: "backend")

    @hookimpl
    def register_rules(self, register):
        register(FAKE_RULE)

    @hookimpl
    def register_commands(self, register):
        register("fake", "a fake command", lambda parser: None, lambda args: 0)


@pytest.mark.parametrize("hook", PROVIDER_HOOKS)
def test_provider_hooks_pass_the_hosts_register_callback(frame_factory, hook):
    """Hosts (model registry, scanner, CLI) call these with a ``register`` callback."""
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder, Provider()])
    registered: list[tuple[Any, ...]] = []

    def register(*args: Any) -> None:
        registered.append(args)

    assert frame.manager.call(hook, register=register) == []
    assert recorder.names()[-1] == hook
    assert recorder.calls[-1].kwargs == {"register": register}
    assert [args[0] for args in registered] == [FIRST_ARGUMENT[hook]]


FIRST_ARGUMENT = {
    "register_model_backends": "fake-model",
    "register_rules": FAKE_RULE,
    "register_commands": "fake",
}


def test_provide_config_is_asked_lazily_in_the_background_and_merged(frame_factory):
    """``provide_config`` runs off the caller's thread on the first read; answers are merged and
    the first-called layer wins a conflict."""
    import threading

    recorder = HookRecorder()
    threads: list[str] = []
    release = threading.Event()

    class First:
        @hookimpl
        def provide_config(self, frame):
            threads.append(threading.current_thread().name)
            assert release.wait(10)
            return {"a": 1, "shared": "first"}

    class Second:
        @hookimpl
        def provide_config(self, frame):
            return {"b": 2, "shared": "second"}

    # pluggy calls the most recently registered layer first: Second, then First, then recorder
    frame = frame_factory(layers=[recorder, First(), Second()])
    assert "provide_config" not in recorder.names()  # nothing asked before a read
    assert frame.remote_config.get("a") is None  # the provider is still busy: no waiting
    release.set()
    frame.flush()
    assert frame.remote_config.values() == {"a": 1, "b": 2, "shared": "second"}
    assert recorder.names().count("provide_config") == 1
    assert recorder.of("provide_config")[0].kwargs == {"frame": frame}
    assert threads and threads[0] != threading.current_thread().name


# -- call order across layers ----------------------------------------------------------------


def make_layer(name: str, log: list[str], **opts: Any) -> object:
    class Layer:
        @hookimpl(**opts)
        def on_message(self, session, message):
            log.append(name)

        @hookimpl(**opts)
        def collect_context(self, session, prompt):
            return [ContextBlock(name, name, f"from {name}")]

        @hookimpl(**opts)
        def on_pre_compact(self, session):
            return name

    Layer.__name__ = name
    return Layer()


@pytest.mark.parametrize(
    ("specs", "expected"),
    [
        # pluggy order: the layer registered last runs first ...
        ([("a", {}), ("b", {})], ["b", "a"]),
        ([("a", {}), ("b", {}), ("c", {})], ["c", "b", "a"]),
        # ... unless tryfirst / trylast say otherwise.
        ([("a", {"tryfirst": True}), ("b", {})], ["a", "b"]),
        ([("a", {}), ("b", {"trylast": True})], ["a", "b"]),
        ([("a", {"trylast": True}), ("b", {"tryfirst": True}), ("c", {})], ["b", "c", "a"]),
    ],
)
def test_call_order_across_layers(frame_factory, specs, expected):
    log: list[str] = []
    layers = [(name, make_layer(name, log, **opts)) for name, opts in specs]
    frame = frame_factory(layers=layers)
    assert [info.name for info in frame.layers()] == [name for name, _ in specs]
    session = frame.session("s1")
    session.on_message(USER)
    assert log == expected
    assert session.pre_compact() == expected
    assert [block.source for block in session.context_blocks()] == expected
    assert session.context() == "\n".join(f"# {n}\n\nfrom {n}\n" for n in expected)


def test_collect_context_accepts_a_single_block(frame_factory):
    class Single:
        @hookimpl
        def collect_context(self, session, prompt):
            return ContextBlock("single", "Notes", "one block\n\n")

    frame = frame_factory(layers=[Single()])
    assert frame.session("s1").context() == "# Notes\n\none block\n"


# -- what counts as a layer ------------------------------------------------------------------


def test_layers_can_be_instances_classes_modules_and_dotted_paths(frame_factory, monkeypatch):
    log: list[tuple[str, object]] = []

    class WithFrame:
        def __init__(self, frame):
            self.frame = frame

        @hookimpl
        def on_session_start(self, session):
            log.append(("class", self.frame))

    def module(name: str) -> types.ModuleType:
        mod = types.ModuleType(name)

        @hookimpl
        def on_session_start(session):
            log.append((name, None))

        mod.on_session_start = on_session_start  # type: ignore[attr-defined]
        return mod

    first, second = module("pkg.first_layer"), module("second_layer")
    dotted = module("dotted_layer_for_test")
    monkeypatch.setitem(sys.modules, "dotted_layer_for_test", dotted)
    recorder = HookRecorder()
    frame = frame_factory(
        layers=[
            recorder,
            WithFrame,
            first,
            second,
            ("renamed", HookRecorder()),
            "dotted_layer_for_test",
        ]
    )
    infos = {info.name: info for info in frame.layers()}
    assert list(infos) == [
        "recorder",
        "WithFrame",
        "first_layer",
        "second_layer",
        "renamed",
        "dotted_layer_for_test",
    ]
    assert {info.origin for info in infos.values()} == {"explicit"}
    assert infos["first_layer"].target == "pkg.first_layer"
    assert infos["dotted_layer_for_test"].target == "dotted_layer_for_test"
    frame.session("s1")
    assert ("class", frame) in log
    assert {name for name, _ in log} == {
        "class",
        "pkg.first_layer",
        "second_layer",
        "dotted_layer_for_test",
    }
