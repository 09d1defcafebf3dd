"""Third-party layers through the ``memframe`` entry-point group, discovered for real.

Each test builds an installed-looking distribution (``<name>-<version>.dist-info`` plus its module)
in a temporary directory on ``sys.path``; ``importlib.metadata`` finds it as it would a wheel.
Configuration comes from environment variables through ``memframe.open`` so the config path is
exercised too.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import memframe
from memframe._manager import LayerInfo, LayerLoadError

RECORDING_MODULE = """
from memframe import hookimpl

CALLS = []

@hookimpl
def on_message(session, message):
    CALLS.append((session.id, message.text))
"""

Install = Callable[..., None]


@pytest.fixture
def install(tmp_path, monkeypatch) -> Iterator[Install]:
    """``install(dist, version, {ep_name: ep_value}, {module: source})`` into a fresh site dir."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    modules: list[str] = []

    def install(
        dist: str, version: str, entry_points: dict[str, str], sources: dict[str, str]
    ) -> None:
        info = site / f"{dist}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
        )
        lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
        (info / "entry_points.txt").write_text(f"[memframe]\n{lines}", encoding="utf-8")
        for module, source in sources.items():
            (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
            modules.append(module)
            sys.modules.pop(module, None)
        importlib.invalidate_caches()

    yield install
    for module in modules:
        sys.modules.pop(module, None)
    importlib.invalidate_caches()


def open_frame(tmp_path: Path) -> memframe.MemoryFrame:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return memframe.open(
        project,
        builtin_layers=(),
        home=tmp_path / "home",
        config_dir=tmp_path / "config",
        strict=True,
    )


def entry_point_layers(frame: memframe.MemoryFrame) -> dict[str, LayerInfo]:
    return {info.name: info for info in frame.layers() if info.origin == "entry point"}


@pytest.fixture
def fake(install) -> None:
    install("fakelayer", "1.2.3", {"fake": "fakelayer_mod"}, {"fakelayer_mod": RECORDING_MODULE})


@pytest.fixture
def other(install) -> None:
    install("otherlayer", "0.4", {"other": "otherlayer_mod"}, {"otherlayer_mod": RECORDING_MODULE})


def test_entry_point_layer_loads_and_its_hook_fires(tmp_path, fake):
    with open_frame(tmp_path) as frame:
        assert frame.config.autoload_plugins
        layers = entry_point_layers(frame)
        assert layers["fake"] == LayerInfo(
            name="fake",
            origin="entry point",
            target="fakelayer_mod",
            distribution="fakelayer",
            version="1.2.3",
        )
        frame.session("s1").on_message({"role": "user", "content": "hello"})
        assert sys.modules["fakelayer_mod"].CALLS == [("s1", "hello")]


def test_disable_plugin_autoload(tmp_path, monkeypatch, fake):
    monkeypatch.setenv("MEMFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
    with open_frame(tmp_path) as frame:
        assert not frame.config.autoload_plugins
        assert frame.config.sources["autoload_plugins"] == "env MEMFRAME_DISABLE_PLUGIN_AUTOLOAD"
        assert entry_point_layers(frame) == {}
    assert "fakelayer_mod" not in sys.modules  # not even imported


def test_plugins_env_var_restricts(tmp_path, monkeypatch, fake, other):
    with open_frame(tmp_path) as frame:
        assert {"fake", "other"} <= set(entry_point_layers(frame))
    sys.modules.pop("fakelayer_mod")
    monkeypatch.setenv("MEMFRAME_PLUGINS", "other")
    with open_frame(tmp_path) as frame:
        assert frame.config.plugins == ("other",)
        assert set(entry_point_layers(frame)) == {"other"}
    assert "fakelayer_mod" not in sys.modules


def test_plugins_env_var_naming_a_missing_plugin_is_an_error(tmp_path, monkeypatch, fake):
    monkeypatch.setenv("MEMFRAME_PLUGINS", "fake,missing")
    with pytest.raises(LayerLoadError, match="MEMFRAME_PLUGINS") as excinfo:
        open_frame(tmp_path)
    assert "missing" in str(excinfo.value)


def test_disabled_plugins_env_var_blocks(tmp_path, monkeypatch, fake, other):
    monkeypatch.setenv("MEMFRAME_DISABLED_PLUGINS", "fake")
    with open_frame(tmp_path) as frame:
        assert frame.config.disabled_plugins == ("fake",)
        layers = entry_point_layers(frame)
        assert "fake" not in layers
        assert "other" in layers
    assert "fakelayer_mod" not in sys.modules


def test_a_layer_failing_at_import_is_a_loud_error(tmp_path, monkeypatch, install):
    install(
        "brokenlayer",
        "0.1",
        {"broken": "brokenlayer_mod"},
        {"brokenlayer_mod": "raise ImportError('needs libfoo')\n"},
    )
    with pytest.raises(LayerLoadError) as excinfo:
        open_frame(tmp_path)
    message = str(excinfo.value)
    assert "'broken'" in message
    assert "needs libfoo" in message
    assert "brokenlayer 0.1" in message  # the distribution, so the user knows what to uninstall
    assert "MEMFRAME_DISABLED_PLUGINS=broken" in message
    # ... and the escape hatch named in the message works.
    monkeypatch.setenv("MEMFRAME_DISABLED_PLUGINS", "broken")
    with open_frame(tmp_path) as frame:
        assert "broken" not in entry_point_layers(frame)


def test_a_class_target_is_instantiated_with_the_frame(tmp_path, install):
    install(
        "classlayer",
        "2.0",
        {"klass": "classlayer_mod:Layer"},
        {
            "classlayer_mod": """
            from memframe import hookimpl

            class Layer:
                def __init__(self, frame):
                    self.frame = frame
                    self.sessions = []

                @hookimpl
                def on_session_start(self, session):
                    self.sessions.append(session.id)
            """
        },
    )
    with open_frame(tmp_path) as frame:
        layer = frame.manager.get_plugin("klass")
        assert type(layer).__name__ == "Layer"
        assert layer.frame is frame
        frame.session("s1")
        assert layer.sessions == ["s1"]
        info = entry_point_layers(frame)["klass"]
        assert (info.target, info.distribution, info.version) == (
            "classlayer_mod:Layer",
            "classlayer",
            "2.0",
        )


def test_a_misspelled_hook_fails_check_pending(tmp_path, install):
    install(
        "typolayer",
        "0.1",
        {"typo": "typolayer_mod"},
        {
            "typolayer_mod": """
            from memframe import hookimpl

            @hookimpl
            def on_mesage(session, message):
                pass
            """
        },
    )
    with pytest.raises(LayerLoadError, match="on_mesage") as excinfo:
        open_frame(tmp_path)
    assert "'typo'" in str(excinfo.value)
