"""Hook validation: unknown hooks fail loudly unless marked ``optionalhook``."""

from __future__ import annotations

import pytest

from memframe import hookimpl
from memframe._manager import LayerLoadError
from memframe.testing import HookRecorder, open_test_frame


class FutureHook:
    """Implements a hook from a newer memframe (or another host) that this one lacks."""

    def __init__(self) -> None:
        self.messages = 0

    @hookimpl(optionalhook=True)
    def on_memory_consolidated(self, session, report):
        raise AssertionError("never called: the hook does not exist here")

    @hookimpl(optionalhook=True)
    def on_message(self, session, message):
        self.messages += 1


class Misspelled:
    @hookimpl
    def on_sesion_start(self, session):
        pass


def test_optionalhook_on_an_unknown_hook_passes_check_pending(frame_factory):
    layer = FutureHook()
    frame = frame_factory(layers=[("future", layer)])
    frame.manager.check_pending()  # pluggy's own check agrees
    caller = frame.manager.hook.on_memory_consolidated
    assert not caller.has_spec()
    assert [impl.plugin_name for impl in caller.get_hookimpls()] == ["future"]
    # optionalhook on a known hook changes nothing: it is validated and called.
    frame.session("s1").on_message({"role": "user", "content": "hi"})
    assert layer.messages == 1


def test_an_unknown_hook_without_optionalhook_fails(tmp_path):
    with pytest.raises(LayerLoadError, match="on_sesion_start") as excinfo:
        open_test_frame(tmp_path, layers=[("typo", Misspelled())])
    message = str(excinfo.value)
    assert "'typo'" in message
    assert "optionalhook" in message  # says how to mark it on purpose


def test_the_check_runs_after_every_layer_loaded(tmp_path):
    """check_pending runs last: a misspelled hook fails even next to valid layers."""
    with pytest.raises(LayerLoadError, match="on_sesion_start"):
        open_test_frame(tmp_path, layers=[HookRecorder(), ("typo", Misspelled()), FutureHook()])


def test_a_hook_asking_for_an_argument_the_spec_lacks_is_rejected(tmp_path):
    class WrongArgument:
        @hookimpl
        def on_message(self, session, msg):
            pass

    with pytest.raises(LayerLoadError, match=r"'wrong'.*invalid") as excinfo:
        open_test_frame(tmp_path, layers=[("wrong", WrongArgument())])
    assert "msg" in str(excinfo.value)


def test_a_subset_of_arguments_is_accepted(frame_factory):
    seen = []

    class Subset:
        @hookimpl
        def on_stop(self, message):
            seen.append(message.text)

    frame = frame_factory(layers=[Subset()])
    session = frame.session("s1")
    session.on_message({"role": "assistant", "content": "done"})
    session.on_stop()
    assert seen == ["done"]
