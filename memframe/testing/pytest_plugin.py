"""memframe's pytest plugin: fixtures for testing layers (docs/testing.md).

Installing memframe registers it through the ``pytest11`` entry point ``memframe``; disable it
with ``-p no:memframe``. Do not also list it in ``pytest_plugins``.

- ``memframe_open`` — a factory: ``memframe_open(**options)`` opens a frame like
  :func:`memframe.testing.open_test_frame` in the test's ``tmp_path``, with synchronous
  background work unless ``synchronous_background=False``; every frame is closed at teardown
  (a strict frame's failures fail the test there).
- ``memframe_frame`` — a frame with the layers of ``memframe_layers`` and the options of
  ``memframe_options`` (override either fixture); its model is ``memframe_model`` when the test
  uses that fixture.
- ``memframe_session`` — a session of ``memframe_frame`` (id ``"test"``).
- ``memframe_model`` — a :class:`memframe.testing.ScriptedBackend` named ``"scripted"``.
- ``memframe_memory_dir`` — where ``memframe_frame``'s memory directory is (in ``tmp_path``;
  not created).

Frames opened through these fixtures never see the caller's ``MEMFRAME_*`` variables (except
``MEMFRAME_BACKEND`` and ``MEMFRAME_SCAN_CACHE``): set what a test needs with ``monkeypatch`` in
the test itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.session import Session
    from memframe.testing import FrameFactory, ScriptedBackend

# The pure-Python/native switch is the caller's choice (CI runs a suite on both).
KEPT_ENV_VARS = frozenset({"MEMFRAME_BACKEND", "MEMFRAME_SCAN_CACHE"})
SESSION_ID = "test"


@pytest.fixture
def memframe_layers() -> list[object]:
    """The layers of ``memframe_frame``: override this fixture to test yours."""
    return []


@pytest.fixture
def memframe_options() -> dict[str, Any]:
    """Other options of ``memframe_frame`` (``builtin_layers``, ``strict``, ``model``,
    ``synchronous_background``, any :func:`memframe.open` option): override to change them."""
    return {}


@pytest.fixture
def memframe_model() -> ScriptedBackend:
    """A scripted model; ``memframe_frame`` uses it when the test requests this fixture."""
    from memframe.testing import ScriptedBackend

    return ScriptedBackend()


@pytest.fixture
def memframe_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FrameFactory]:
    """Open frames in ``tmp_path`` (sharing its home and config dir); all closed at teardown."""
    from memframe.testing import open_test_frame

    for name in list(os.environ):
        if name.startswith("MEMFRAME_") and name not in KEPT_ENV_VARS:
            monkeypatch.delenv(name)
    opened: list[MemoryFrame] = []

    def open_frame(**options: Any) -> MemoryFrame:
        options.setdefault("synchronous_background", True)
        frame = open_test_frame(tmp_path, **options)
        opened.append(frame)
        return frame

    yield open_frame
    errors: list[Exception] = []
    for frame in opened:
        try:
            frame.close()
        except Exception as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ExceptionGroup("memframe test frames failed to close", errors)


@pytest.fixture
def memframe_frame(
    request: pytest.FixtureRequest,
    memframe_open: FrameFactory,
    memframe_layers: list[object],
    memframe_options: dict[str, Any],
) -> MemoryFrame:
    """A strict frame with ``memframe_layers`` and ``memframe_options``."""
    options = dict(memframe_options)
    options.setdefault("layers", memframe_layers)
    if "model" not in options and "memframe_model" in request.fixturenames:
        options["model"] = request.getfixturevalue("memframe_model")
    return memframe_open(**options)


@pytest.fixture
def memframe_session(memframe_frame: MemoryFrame) -> Session:
    """A session of ``memframe_frame``; it ends (``on_session_end``) when the frame closes."""
    return memframe_frame.session(SESSION_ID)


@pytest.fixture
def memframe_memory_dir(memframe_frame: MemoryFrame) -> Path:
    """The memory directory of ``memframe_frame`` (``memframe.memdir.locate``), in
    ``tmp_path``; memdir layers create it on first write."""
    from memframe.memdir import locate

    return locate(memframe_frame).path
