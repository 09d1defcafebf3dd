"""memframe.testing: the synchronous background mode, ScriptedBackend, open_test_frame's model
object, and the pytest plugin's fixtures used in place (tests/contract/test_pytest_plugin.py
runs them as a third-party project would)."""

from __future__ import annotations

import os
import threading

import pytest

import memframe
from memframe.background.executor import BackgroundExecutor
from memframe.memdir import locate
from memframe.models import ModelError, ModelRequest, ModelResponse, ToolCall
from memframe.testing import (
    HookRecorder,
    ScriptedBackend,
    open_test_frame,
    synchronous_background,
)

WAIT = 10.0


def request(text: str = "hi") -> ModelRequest:
    return ModelRequest(system="", messages=[{"role": "user", "content": text}])


# -- the synchronous executor ----------------------------------------------------------------------


def test_a_synchronous_task_is_done_when_submit_returns_on_the_callers_thread():
    pool = BackgroundExecutor(2, synchronous=True)
    threads: list[int] = []
    future = pool.submit(lambda: threads.append(threading.get_ident()) or 42)
    assert future.done() and future.result(timeout=0) == 42
    assert threads == [threading.get_ident()]
    assert pool.pending == 0
    assert pool.flush(timeout=0) is True
    assert pool._pool is None  # no worker thread will ever start


def test_work_submitted_by_a_synchronous_task_runs_right_after_it():
    pool = BackgroundExecutor(1, synchronous=True)
    order: list[str] = []
    children = []

    def child() -> None:
        order.append("child")

    def parent() -> None:
        order.append("parent starts")
        children.append(pool.submit(child))
        assert not children[0].done()  # queued behind its parent, never nested inside it
        assert pool.flush(timeout=0) is False  # it cannot run until this task returns
        order.append("parent ends")

    pool.submit(parent)
    assert order == ["parent starts", "parent ends", "child"]
    assert children[0].done() and pool.pending == 0


def test_a_failing_synchronous_task_goes_to_on_error_and_the_future():
    pool = BackgroundExecutor(1, synchronous=True)
    errors: list[Exception] = []
    future = pool.submit(lambda: 1 // 0, on_error=errors.append)  # submit itself does not raise
    assert isinstance(future.exception(timeout=0), ZeroDivisionError)
    assert errors == [future.exception()]
    assert pool.submit(lambda: "still works").result(timeout=0) == "still works"


def test_an_interrupt_escapes_and_cancels_what_was_queued():
    class Interrupt(BaseException):
        pass

    pool = BackgroundExecutor(1, synchronous=True)
    queued = []

    def task() -> None:
        queued.append(pool.submit(lambda: None))
        raise Interrupt

    with pytest.raises(Interrupt):
        pool.submit(task)
    assert queued[0].cancelled() and pool.pending == 0


def test_flush_waits_for_a_synchronous_task_running_on_another_thread():
    pool = BackgroundExecutor(1, synchronous=True)
    started, release = threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        assert release.wait(WAIT)

    worker = threading.Thread(target=pool.submit, args=(slow,))
    worker.start()
    assert started.wait(WAIT)
    assert pool.flush(timeout=0.01) is False
    release.set()
    assert pool.flush(timeout=WAIT) is True
    worker.join(WAIT)


def test_shutdown_closes_a_synchronous_executor():
    pool = BackgroundExecutor(1, synchronous=True)
    assert pool.shutdown(timeout=0) is True
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(lambda: None)


def test_the_switch_applies_to_executors_created_inside_it_on_this_thread():
    assert BackgroundExecutor(1).synchronous is False
    with synchronous_background():
        assert BackgroundExecutor(1).synchronous is True
        with synchronous_background(False):
            assert BackgroundExecutor(1).synchronous is False
        elsewhere: list[bool] = []
        thread = threading.Thread(
            target=lambda: elsewhere.append(BackgroundExecutor(1).synchronous)
        )
        thread.start()
        thread.join(WAIT)
        assert elsewhere == [False]
    assert BackgroundExecutor(1).synchronous is False


# -- frames in synchronous mode --------------------------------------------------------------------


class Background:
    """Submits one background task per turn; records the thread it ran on."""

    name = "background"

    def __init__(self) -> None:
        self.ran_on: list[int] = []

    @memframe.hookimpl
    def on_stop(self, session, message):
        def work() -> None:
            if message.text == "fail":
                raise ValueError("the task failed")
            self.ran_on.append(threading.get_ident())

        session.submit_background(work, name="work", layer=self.name)


def test_a_synchronous_frame_finishes_background_work_before_the_hook_returns(tmp_path):
    layer = Background()
    with open_test_frame(tmp_path, layers=[layer], synchronous_background=True) as frame:
        session = frame.session("s1")
        session.on_message({"role": "assistant", "content": "Done."})
        session.on_stop()
        assert layer.ran_on == [threading.get_ident()]


def test_a_synchronous_strict_frame_raises_background_failures_at_flush(tmp_path):
    frame = open_test_frame(tmp_path, layers=[Background()], synchronous_background=True)
    session = frame.session("s1")
    session.on_message({"role": "assistant", "content": "fail"})
    session.on_stop()  # the failure is collected, as from a worker thread
    with pytest.raises(ExceptionGroup, match=r"background\.work") as caught:
        frame.flush()
    assert [str(e) for e in caught.value.exceptions] == ["the task failed"]
    frame.close()


def test_open_test_frame_keeps_worker_threads_unless_asked(tmp_path):
    layer = Background()
    with open_test_frame(tmp_path, layers=[layer]) as frame:
        session = frame.session("s1")
        session.on_message({"role": "assistant", "content": "Done."})
        session.on_stop()
        assert frame.flush(WAIT)
        assert layer.ran_on and layer.ran_on != [threading.get_ident()]
    with synchronous_background(), open_test_frame(tmp_path, layers=[Background()]) as frame:
        assert frame.submit_background(threading.get_ident, name="t").result(0) == (
            threading.get_ident()
        )


# -- ScriptedBackend -------------------------------------------------------------------------------


def test_replies_are_used_in_order_then_the_default():
    call = ToolCall("c1", "Write", {"file_path": "/x", "content": "y"})
    scripted = ModelResponse(tool_calls=(call,), stop_reason="tool_use")
    model = ScriptedBackend(
        "text",
        scripted,
        lambda r: f"echo {r.messages[-1]['content']}",
        lambda r: ModelResponse(text="built"),
    )
    answers = [model.complete(request(str(n))) for n in range(5)]
    assert answers[0] == ModelResponse(text="text")
    assert answers[1] is scripted
    assert answers[2].text == "echo 2" and answers[3].text == "built"
    assert answers[4].text == "done"  # the script is used up
    assert [r.messages[-1]["content"] for r in model.requests] == ["0", "1", "2", "3", "4"]
    assert model.calls == 5 and model.replies == []


def test_exceptions_are_raised_and_the_request_still_recorded():
    model = ScriptedBackend(ModelError("provider down"), ModelError, default=TimeoutError("slow"))
    with pytest.raises(ModelError, match="provider down"):
        model.complete(request())
    with pytest.raises(ModelError):
        model.complete(request())
    with pytest.raises(TimeoutError, match="slow"):
        model.complete(request())
    assert model.calls == 3


def test_script_adds_replies_and_a_bad_reply_is_a_type_error():
    model = ScriptedBackend(name="mine")
    model.script("one", "two")
    assert [model.complete(request()).text for _ in range(2)] == ["one", "two"]
    model.script(lambda r: 42)
    with pytest.raises(TypeError, match="must give a str or a ModelResponse, got int"):
        model.complete(request())
    assert model.name == "mine" and repr(model).startswith("<ScriptedBackend 'mine': 3 request")


def test_wait_for_requests_and_max_concurrent_across_threads():
    release = threading.Event()

    def held(r: ModelRequest) -> str:
        assert release.wait(WAIT)
        return "ok"

    model = ScriptedBackend(default=held)
    assert model.wait_for_requests(1, timeout=0.01) is False
    threads = [threading.Thread(target=model.complete, args=(request(),)) for _ in range(3)]
    for thread in threads:
        thread.start()
    assert model.wait_for_requests(3, timeout=WAIT)
    assert model.max_concurrent == 3
    release.set()
    for thread in threads:
        thread.join(WAIT)
    model.complete(request())
    assert model.max_concurrent == 3 and model.calls == 4


def test_a_backend_object_as_model_is_registered_and_selected(tmp_path):
    model = ScriptedBackend(name="mine")
    with open_test_frame(tmp_path, model=model) as frame:
        assert frame.model_backend() is model
        assert frame.config.model == "mine"
        assert [info.name for info in frame.layers()] == ["testing-model"]


# -- the fixtures, used here -----------------------------------------------------------------------


def test_memframe_session_belongs_to_memframe_frame(memframe_frame, memframe_session):
    assert memframe_session.frame is memframe_frame
    assert memframe_session.id == "test"
    assert memframe_frame.layers() == []
    assert memframe_frame.config.strict is True


def test_memframe_frame_uses_memframe_model_when_the_test_asks_for_it(
    memframe_frame, memframe_model
):
    assert memframe_frame.model_backend() is memframe_model


def test_memframe_open_frames_are_synchronous_and_closed_at_teardown(memframe_open, tmp_path):
    layer = Background()
    frame = memframe_open(layers=[layer])
    session = frame.session("s1")
    session.on_message({"role": "assistant", "content": "Done."})
    session.on_stop()
    assert layer.ran_on == [threading.get_ident()]
    assert frame.project_dir == (tmp_path / "project").resolve()


def test_memframe_memory_dir_is_in_tmp_path(memframe_memory_dir, tmp_path):
    assert memframe_memory_dir.is_relative_to(tmp_path)
    assert not memframe_memory_dir.exists()


class TestOverridingTheLayers:
    @pytest.fixture
    def memframe_layers(self) -> list[object]:
        return [HookRecorder()]

    @pytest.fixture
    def memframe_options(self) -> dict[str, object]:
        return {"strict": False}

    def test_the_overrides_are_used(self, memframe_frame, memframe_session):
        assert [info.name for info in memframe_frame.layers()] == ["recorder"]
        assert memframe_frame.config.strict is False
        recorder = memframe_frame.manager.get_plugin("recorder")
        assert recorder.names()[-1] == "on_session_start"


def test_memframe_open_ignores_the_callers_memframe_variables(monkeypatch, request, tmp_path):
    monkeypatch.setenv("MEMFRAME_MEMORY_DIR", str(tmp_path / "real-memory"))
    factory = request.getfixturevalue("memframe_open")  # set up after the variable was set
    frame = factory(builtin_layers=["memframe.layers.memdir:MemdirLayer"])
    assert "MEMFRAME_MEMORY_DIR" not in os.environ
    assert locate(frame).source == "default"
    assert locate(frame).path.is_relative_to(tmp_path / "home")
