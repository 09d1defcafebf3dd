"""Helpers for layer authors' tests (docs/testing.md).

- :func:`open_test_frame` — a strict frame isolated in a temporary directory;
- :class:`HookRecorder` — a layer recording every hook call, in order;
- :class:`ScriptedBackend` — a model answering from a script, recording its requests;
- :func:`synchronous_background` — background work runs inline, deterministically;
- the pytest plugin :mod:`memframe.testing.pytest_plugin` (fixtures ``memframe_frame``,
  ``memframe_session``, ``memframe_model``, ``memframe_open``…), registered when memframe
  is installed.

::

    from memframe.testing import HookRecorder, ScriptedBackend, open_test_frame

    def test_my_layer(tmp_path):
        recorder, model = HookRecorder(), ScriptedBackend("a reply")
        with open_test_frame(tmp_path, layers=[MyLayer, recorder], model=model,
                             synchronous_background=True) as frame:
            frame.session("s1").on_message({"role": "user", "content": "hi"})
        assert recorder.names() == ["register_rules", "on_frame_open", ...]
"""

from __future__ import annotations

from memframe.background.executor import synchronous_background
from memframe.testing._frames import FrameFactory, open_test_frame
from memframe.testing._model import Reply, ScriptedBackend
from memframe.testing._recorder import HookCall, HookRecorder

__all__ = [
    "FrameFactory",
    "HookCall",
    "HookRecorder",
    "Reply",
    "ScriptedBackend",
    "open_test_frame",
    "synchronous_background",
]
