"""One broken layer never silences the others nor crashes the host (docs/hooks.md, "Error
isolation")."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

import pytest

from memframe import hookimpl
from memframe._manager import RegistrationError
from memframe.context.blocks import ContextBlock
from memframe.messages import Message, ToolUseBlock
from memframe.testing import HookRecorder

EVENT_HOOKS = (
    "on_frame_open",
    "on_session_start",
    "on_message",
    "on_file_read",
    "on_tool_use",
    "on_stop",
    "on_pre_compact",
    "collect_context",
    "on_session_end",
    "on_frame_close",
)
FRAME_HOOKS = {"on_frame_open", "on_frame_close"}


class Boom(Exception):
    """What the broken layer raises; ``hook`` says from where."""

    def __init__(self, hook: str) -> None:
        super().__init__(f"boom in {hook}")
        self.hook = hook


class Broken:
    """Implements every event hook, runs first, and raises from the ones in ``failing``."""

    def __init__(self, failing: set[str] | None = None, exc: type[BaseException] = Boom) -> None:
        self.failing = set(EVENT_HOOKS) if failing is None else failing
        self.exc = exc
        self.ran: list[str] = []

    def _maybe_raise(self, hook: str) -> None:
        self.ran.append(hook)
        if hook in self.failing:
            raise (self.exc(hook) if self.exc is Boom else self.exc())

    @hookimpl(tryfirst=True)
    def on_frame_open(self, frame):
        self._maybe_raise("on_frame_open")

    @hookimpl(tryfirst=True)
    def on_frame_close(self, frame):
        self._maybe_raise("on_frame_close")

    @hookimpl(tryfirst=True)
    def on_session_start(self, session):
        self._maybe_raise("on_session_start")

    @hookimpl(tryfirst=True)
    def on_message(self, session, message):
        self._maybe_raise("on_message")

    @hookimpl(tryfirst=True)
    def on_file_read(self, session, path, content):
        self._maybe_raise("on_file_read")

    @hookimpl(tryfirst=True)
    def on_tool_use(self, session, tool_use, result):
        self._maybe_raise("on_tool_use")

    @hookimpl(tryfirst=True)
    def on_stop(self, session, message):
        self._maybe_raise("on_stop")

    @hookimpl(tryfirst=True)
    def on_pre_compact(self, session):
        self._maybe_raise("on_pre_compact")
        return "broken notes"

    @hookimpl(tryfirst=True)
    def collect_context(self, session, prompt):
        self._maybe_raise("collect_context")
        return [ContextBlock("broken", "Broken", "text")]

    @hookimpl(tryfirst=True)
    def on_session_end(self, session, reason):
        self._maybe_raise("on_session_end")


def run_script(frame) -> Any:
    """Every event hook once, in lifecycle order; returns the session."""
    session = frame.session("s1")
    session.on_message({"role": "user", "content": "hello"})
    session.on_message(
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}],
        }
    )
    session.on_tool_use(ToolUseBlock("t1", "Read", {}), None)
    session.on_file_read("a.py", "x = 1")
    session.on_message({"role": "assistant", "content": "done"})
    session.on_stop()
    session.pre_compact()
    session.context()
    session.close()
    frame.close()
    return session


def failure_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "memframe" and r.levelno == logging.ERROR]


# -- non-strict: log and continue ------------------------------------------------------------


@pytest.mark.parametrize("hook", EVENT_HOOKS)
def test_a_raising_layer_does_not_stop_the_others(frame_factory, caplog, hook):
    broken, recorder = Broken({hook}), HookRecorder()
    frame = frame_factory(layers=[recorder, ("broken", broken)], strict=False)
    session = run_script(frame)

    assert hook in broken.ran
    assert recorder.names().count(hook) >= 1  # the later layer still ran
    assert "on_frame_close" in recorder.names()  # and the host carried on to the end
    errors = recorder.of("on_layer_error")
    assert len(errors) == broken.ran.count(hook)  # one report per failed call
    records = failure_records(caplog)
    assert len(records) == len(errors)
    for error, record in zip(errors, records, strict=True):
        reported = error.kwargs
        assert reported["layer"] == "broken"
        assert reported["hook"] == hook
        assert isinstance(reported["error"], Boom)
        assert reported["error"].hook == hook
        assert reported["session"] is (None if hook in FRAME_HOOKS else session)
        assert "'broken'" in record.getMessage()
        assert hook in record.getMessage()
        assert record.exc_info is not None
        assert record.exc_info[1] is reported["error"]


def test_every_hook_failing_still_completes_the_session(frame_factory, caplog):
    broken, recorder = Broken(), HookRecorder()
    frame = frame_factory(layers=[recorder, ("broken", broken)], strict=False)
    run_script(frame)
    assert set(broken.ran) == set(EVENT_HOOKS)
    assert {call.kwargs["hook"] for call in recorder.of("on_layer_error")} == set(EVENT_HOOKS)
    assert len(failure_records(caplog)) == len(recorder.of("on_layer_error"))


def test_collection_hooks_keep_the_other_layers_results(frame_factory):
    class Good:
        def __init__(self, name: str) -> None:
            self.name = name

        @hookimpl
        def on_pre_compact(self, session):
            return f"notes of {self.name}"

        @hookimpl
        def collect_context(self, session, prompt):
            return [ContextBlock(self.name, self.name, "kept")]

    broken = Broken({"on_pre_compact", "collect_context"})
    frame = frame_factory(layers=[Good("one"), ("broken", broken), Good("two")], strict=False)
    session = frame.session("s1")
    assert sorted(session.pre_compact()) == ["notes of one", "notes of two"]
    assert sorted(block.source for block in session.context_blocks()) == ["one", "two"]
    assert "broken" not in session.context()


@pytest.mark.parametrize(
    ("hook", "bad"),
    [
        ("collect_context", "a string, not blocks"),
        ("collect_context", ["not a block"]),
        ("collect_context", {"title": "x"}),
        ("on_pre_compact", ["notes"]),
        ("on_pre_compact", 42),
    ],
)
@pytest.mark.parametrize("strict", [True, False])
def test_a_wrong_result_type_is_that_layers_failure(frame_factory, hook, bad, strict):
    """A layer returning garbage from a collection hook must not crash the host later."""

    class Garbage:
        @hookimpl
        def collect_context(self, session, prompt):
            return bad if hook == "collect_context" else None

        @hookimpl
        def on_pre_compact(self, session):
            return bad if hook == "on_pre_compact" else None

    class Good:
        @hookimpl
        def collect_context(self, session, prompt):
            return ContextBlock("good", "Good", "kept")

        @hookimpl
        def on_pre_compact(self, session):
            return "good notes"

    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder, Good(), ("garbage", Garbage())], strict=strict)
    session = frame.session("s1")
    run = session.context if hook == "collect_context" else session.pre_compact
    if strict:
        with pytest.raises(ExceptionGroup) as excinfo:
            run()
        assert excinfo.group_contains(TypeError, match=hook)
    elif hook == "collect_context":
        assert session.context() == "# Good\n\nkept\n"
    else:
        assert session.pre_compact() == ["good notes"]
    (error,) = recorder.of("on_layer_error")
    assert error.kwargs["layer"] == "garbage"
    assert error.kwargs["hook"] == hook
    assert isinstance(error.kwargs["error"], TypeError)


class BrokenProvider:
    @hookimpl(tryfirst=True)
    def register_model_backends(self, register):
        raise Boom("register_model_backends")

    @hookimpl(tryfirst=True)
    def register_rules(self, register):
        raise Boom("register_rules")

    @hookimpl(tryfirst=True)
    def register_commands(self, register):
        raise Boom("register_commands")


GOOD_RULE = {"id": "good-token", "label": "Good", "regex": "(good_[a-z]{8})", "keywords": ["good_"]}


class Provider:
    @hookimpl
    def register_model_backends(self, register):
        register("offline")

    @hookimpl
    def register_rules(self, register):
        register(GOOD_RULE)

    @hookimpl
    def register_commands(self, register):
        register("offline")


@pytest.mark.parametrize("hook", ["register_model_backends", "register_rules", "register_commands"])
def test_a_raising_provider_hook_called_directly_does_not_stop_the_others(frame_factory, hook):
    """Through ``manager.call`` a registration hook is isolated like any other; memframe itself
    registers through ``manager.collect``, which fails closed (below)."""
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder, Provider()], strict=False)
    frame.register_layer("broken", BrokenProvider())
    registered: list[str] = []
    frame.manager.call(hook, register=registered.append)
    assert registered == [GOOD_RULE if hook == "register_rules" else "offline"]
    (error,) = recorder.of("on_layer_error")
    assert error.kwargs["layer"] == "broken"
    assert error.kwargs["hook"] == hook
    assert error.kwargs["session"] is None


@pytest.mark.parametrize("hook", ["register_model_backends", "register_rules", "register_commands"])
def test_a_registration_hook_fails_closed(frame_factory, hook):
    """A layer whose registration hook raises, or that registers something invalid, stops what
    needed the registrations, naming the layer: memframe never runs with part of them."""
    frame = frame_factory(layers=[Provider()], strict=False)
    frame.register_layer("broken", BrokenProvider())
    registered: list[str] = []
    with pytest.raises(RegistrationError) as caught:
        frame.manager.collect(hook, registered.append)
    assert caught.value.hook == hook
    assert caught.value.problems == [f"layer 'broken': the hook raised Boom: boom in {hook}"]
    # the others still ran: every problem is reported at once
    assert registered == [GOOD_RULE if hook == "register_rules" else "offline"]


def test_a_broken_rules_layer_stops_the_frame(frame_factory):
    class BadRule:
        @hookimpl
        def register_rules(self, register):
            # a layer that swallows errors cannot hide a bad rule
            with contextlib.suppress(Exception):
                register(
                    {
                        "id": "acme-key",
                        "label": "Acme",
                        "regex": "(?<!x)(acme_[a-z]{8})",
                        "keywords": ["acme_"],
                    }
                )

    with pytest.raises(RegistrationError, match=r"layer 'bad-rule': .*rule 'acme-key'.*'regex'"):
        frame_factory(layers=[("bad-rule", BadRule())], strict=False)
    with pytest.raises(RegistrationError, match=r"layer 'broken': the hook raised Boom"):
        frame_factory(layers=[("broken", BrokenProvider())], strict=False)


def test_a_backend_registered_twice_stops_the_registry(frame_factory):
    class Twice:
        @hookimpl
        def register_model_backends(self, register):
            register("acme", lambda options, env: None)
            register("acme", lambda options, env: None)

    frame = frame_factory(layers=[("twice", Twice())], strict=False)
    with pytest.raises(
        RegistrationError, match="layer 'twice': model backend 'acme' is registered twice"
    ):
        frame.model_backends()


def test_a_hook_implementation_with_default_arguments_is_isolated_too(frame_factory):
    """pluggy passes arguments with defaults as keywords; the isolation wrapper must accept them."""
    seen: list[tuple[str, str | None]] = []

    class Defaults:
        @hookimpl
        def on_file_read(self, session, path, content=None):
            seen.append((path, content))

    class BrokenDefaults:
        @hookimpl(tryfirst=True)
        def on_file_read(self, session, path, content=None):
            raise Boom("on_file_read")

    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder, Defaults(), BrokenDefaults()], strict=False)
    frame.session("s1").on_file_read("a.py", "text")
    assert seen == [("a.py", "text")]
    assert [call.kwargs["hook"] for call in recorder.of("on_layer_error")] == ["on_file_read"]


def test_hooks_called_directly_through_pluggy_are_isolated(frame_factory, caplog):
    """``frame.manager.hook.X(...)`` bypasses ``call``; failures are reported right away and the
    remaining layers still run, even in strict mode."""
    broken, recorder = Broken({"on_message"}), HookRecorder()
    frame = frame_factory(layers=[recorder, ("broken", broken)])
    session = frame.session("s1")
    message = Message.user("hi")
    frame.manager.hook.on_message(session=session, message=message)
    assert recorder.of("on_message")[0].kwargs["message"] is message
    assert [call.kwargs["layer"] for call in recorder.of("on_layer_error")] == ["broken"]
    assert len(failure_records(caplog)) == 1


# -- strict: re-raise after every layer ran --------------------------------------------------


def test_strict_raises_an_exception_group_after_all_layers_ran(frame_factory):
    first, second = Broken({"on_message"}), Broken({"on_message"})
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder, ("first", first), ("second", second)], strict=True)
    session = frame.session("s1")
    with pytest.raises(ExceptionGroup) as excinfo:
        session.on_message({"role": "user", "content": "hi"})
    group = excinfo.value
    assert len(group.exceptions) == 2
    assert all(isinstance(exc, Boom) for exc in group.exceptions)
    assert "first.on_message" in str(group)
    assert "second.on_message" in str(group)
    # Both broken layers and the recorder ran, and both failures were reported, before the raise.
    assert first.ran[-1] == "on_message"
    assert second.ran[-1] == "on_message"
    assert recorder.names()[-3:] == ["on_message", "on_layer_error", "on_layer_error"]
    assert {call.kwargs["layer"] for call in recorder.of("on_layer_error")} == {"first", "second"}
    assert session.message_count == 1


def test_strict_collection_hook_raises(frame_factory):
    frame = frame_factory(layers=[("broken", Broken({"collect_context"}))], strict=True)
    session = frame.session("s1")
    with pytest.raises(ExceptionGroup) as excinfo:
        session.context()
    assert excinfo.group_contains(Boom)


def test_strict_failing_frame_open_raises(tmp_path):
    from memframe.testing import open_test_frame

    with pytest.raises(ExceptionGroup) as excinfo:
        open_test_frame(tmp_path, layers=[Broken({"on_frame_open"})])
    assert excinfo.group_contains(Boom, match="on_frame_open")


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("strict", [True, False])
def test_keyboard_interrupt_and_system_exit_propagate(frame_factory, exc, strict):
    broken, recorder = Broken({"on_message"}, exc=exc), HookRecorder()
    frame = frame_factory(layers=[recorder, ("broken", broken)], strict=strict)
    session = frame.session("s1")
    with pytest.raises(exc):
        session.on_message({"role": "user", "content": "hi"})
    # Propagated at once: no later layer ran, nothing was reported as a layer error.
    assert "on_message" not in recorder.names()
    assert recorder.of("on_layer_error") == []


# -- errors inside on_layer_error ------------------------------------------------------------


class BrokenHandler:
    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def on_layer_error(self, layer, hook, error, session):
        self.calls += 1
        raise RuntimeError("the error handler itself failed")


@pytest.mark.parametrize("strict", [True, False])
def test_an_error_in_on_layer_error_is_logged_not_recursed(frame_factory, caplog, strict):
    handler, recorder = BrokenHandler(), HookRecorder()
    frame = frame_factory(
        layers=[recorder, ("handler", handler), ("broken", Broken({"on_message"}))],
        strict=strict,
    )
    session = frame.session("s1")
    if strict:
        with pytest.raises(ExceptionGroup) as excinfo:
            session.on_message({"role": "user", "content": "hi"})
        # Only the hook's failure is raised; the handler's own failure is logged.
        assert len(excinfo.value.exceptions) == 1
        assert isinstance(excinfo.value.exceptions[0], Boom)
    else:
        session.on_message({"role": "user", "content": "hi"})
    assert handler.calls == 1
    assert [call.kwargs["hook"] for call in recorder.of("on_layer_error")] == ["on_message"]
    messages = [record.getMessage() for record in failure_records(caplog)]
    assert len(messages) == 2
    assert "on_layer_error" in messages[1]
    assert "'handler'" in messages[1]


# -- background work ---------------------------------------------------------------------------


def _fail() -> None:
    raise Boom("summarise")


def test_failing_background_task_reaches_on_layer_error(frame_factory, caplog):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder], strict=False)
    session = frame.session("s1")
    future = session.submit_background(_fail, name="summarise", layer="notes")
    assert session.flush(timeout=10) is True
    assert isinstance(future.exception(), Boom)
    (reported,) = recorder.of("on_layer_error")
    assert reported.kwargs["layer"] == "notes"
    assert reported.kwargs["hook"] == "summarise"
    assert reported.kwargs["error"] is future.exception()
    assert reported.kwargs["session"] is session
    assert any("'notes'" in r.getMessage() for r in failure_records(caplog))


def test_strict_flush_raises_the_background_failures_once(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder], strict=True)
    session = frame.session("s1")
    session.submit_background(_fail, name="summarise", layer="notes")
    session.submit_background(lambda: 42, name="fine", layer="notes")
    with pytest.raises(ExceptionGroup) as excinfo:
        session.flush(timeout=10)
    assert [type(e) for e in excinfo.value.exceptions] == [Boom]
    assert "notes.summarise" in str(excinfo.value)
    assert len(recorder.of("on_layer_error")) == 1  # reported, not only raised
    assert session.flush(timeout=10) is True  # raised once, then cleared


def test_strict_session_close_still_ends_the_session_when_background_work_failed(frame_factory):
    recorder = HookRecorder()
    frame = frame_factory(layers=[recorder], strict=True)
    session = frame.session("s1")
    session.state.section("notes")["kept"] = True
    session.submit_background(_fail, name="summarise", layer="notes")
    with pytest.raises(ExceptionGroup):
        session.close()
    assert session.closed
    assert recorder.names()[-1] == "on_session_end"
    assert (session.dir / "state.json").is_file()
    assert b'"kept": true' in (session.dir / "state.json").read_bytes()


def test_strict_frame_close_closes_every_session_even_when_layers_fail(frame_factory):
    broken, recorder = Broken({"on_session_end"}), HookRecorder()
    frame = frame_factory(layers=[recorder, ("broken", broken)], strict=True)
    one, two = frame.session("one"), frame.session("two")
    with pytest.raises(ExceptionGroup) as excinfo:
        frame.close()
    assert excinfo.group_contains(Boom, match="on_session_end")
    assert one.closed
    assert two.closed
    assert frame.closed
    names = [name for name in recorder.names() if name != "on_layer_error"]
    assert names[-3:] == ["on_session_end", "on_session_end", "on_frame_close"]
    assert len(recorder.of("on_layer_error")) == 2
    assert len(excinfo.value.exceptions) == 2  # one ExceptionGroup per failed session end
    frame.close()  # idempotent, and does not raise again


def test_background_failure_does_not_disable_strict_mode_of_concurrent_calls(frame_factory):
    """While a background failure is being reported, hooks on other threads stay strict."""
    reporting, release = threading.Event(), threading.Event()

    class SlowHandler:
        @hookimpl
        def on_layer_error(self, layer, hook, error, session):
            if hook == "summarise":
                reporting.set()
                release.wait(10)

    frame = frame_factory(layers=[SlowHandler(), ("broken", Broken({"on_message"}))], strict=True)
    session = frame.session("s1")
    session.submit_background(_fail, name="summarise", layer="notes")
    assert reporting.wait(10)
    try:
        with pytest.raises(ExceptionGroup):
            session.on_message({"role": "user", "content": "hi"})
    finally:
        release.set()
    with pytest.raises(ExceptionGroup):
        session.flush(timeout=10)


def test_hook_wrappers_are_refused_at_load(tmp_path):
    from memframe import LayerLoadError, hookimpl
    from memframe.testing import open_test_frame

    class Wrapping:
        @hookimpl(wrapper=True)
        def on_message(self, session, message):
            return (yield)

    with pytest.raises(LayerLoadError, match="hook wrapper for on_message"):
        open_test_frame(tmp_path, layers=[("wrapping", Wrapping())])


def test_a_class_gets_the_frame_only_through_a_required_first_parameter(tmp_path):
    from memframe.testing import open_test_frame

    class Optional:
        def __init__(self, path=None):
            self.path = path

    class Required:
        def __init__(self, frame):
            self.frame = frame

    with open_test_frame(tmp_path, layers=[("optional", Optional), ("required", Required)]) as f:
        assert f.manager.get_plugin("optional").path is None
        assert f.manager.get_plugin("required").frame is f
