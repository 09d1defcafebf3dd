"""``open_test_frame``: a strict frame isolated in a temporary directory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memframe.background.executor import synchronous_background as _synchronous_background
from memframe.hookspecs import hookimpl

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.models import ModelBackend

MODEL_LAYER = "testing-model"
"""The layer that registers a backend object passed as ``model=`` to :func:`open_test_frame`."""


class FrameFactory(Protocol):
    """The ``memframe_open`` fixture: ``memframe_open(**options)`` takes what
    :func:`open_test_frame` takes after ``tmp_path`` and returns an open frame."""

    def __call__(self, **options: Any) -> MemoryFrame: ...


class _ProvideModel:
    """Registers one backend object under its own name."""

    name = MODEL_LAYER

    def __init__(self, backend: ModelBackend) -> None:
        self.backend = backend

    @hookimpl
    def register_model_backends(self, register: Callable[[str, Callable[..., Any]], None]) -> None:
        backend = self.backend
        register(backend.name, lambda options, env: backend)


def open_test_frame(
    tmp_path: Path,
    *,
    layers: Sequence[object | tuple[str, object]] = (),
    builtin_layers: Sequence[str] = (),
    strict: bool = True,
    model: str | ModelBackend | None = None,
    synchronous_background: bool | None = None,
    **options: Any,
) -> MemoryFrame:
    """A frame isolated in ``tmp_path``: its own home and config dir, no entry-point layers,
    strict by default so a failing layer fails the test.

    The project directory is ``tmp_path / "project"`` (created), the memory base
    ``tmp_path / "home"`` and the config dir (``settings.json``, prompt overrides)
    ``tmp_path / "config"``; frames opened on one ``tmp_path`` share them.

    :param model: a backend name, or a backend object (a
        :class:`~memframe.testing.ScriptedBackend`…) that the frame registers (as the layer
        ``testing-model``) and uses.
    :param synchronous_background: run the frame's background work on the thread that submits
        it, before the hook that submitted it returns (see
        :func:`~memframe.testing.synchronous_background`); ``False``: worker threads, as in
        production; ``None`` (default): synchronous only inside a ``synchronous_background()``
        block.
    :param options: any other :func:`memframe.open` option.
    """
    from memframe.frame import open_frame

    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    options.setdefault("home", tmp_path / "home")
    options.setdefault("config_dir", tmp_path / "config")
    options.setdefault("autoload_plugins", False)
    if model is not None and not isinstance(model, str):
        layers = [*layers, (MODEL_LAYER, _ProvideModel(model))]
        model = model.name
    if model is not None:
        options["model"] = model
    switch = (
        nullcontext()
        if synchronous_background is None
        else _synchronous_background(synchronous_background)
    )
    with switch:
        return open_frame(
            project, layers=layers, builtin_layers=builtin_layers, strict=strict, **options
        )
