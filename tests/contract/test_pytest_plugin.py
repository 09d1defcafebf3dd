"""memframe's pytest plugin reaches a third-party layer's tests through the ``pytest11`` entry
point that pyproject.toml declares, as installing memframe registers it.

The subprocess runs pytest in a fresh project next to an installed-looking distribution
(``<name>.dist-info/entry_points.txt`` on ``PYTHONPATH``) carrying exactly pyproject's
``pytest11`` entry points, so pytest's own plugin discovery loads the fixtures.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = (
    "memframe_frame",
    "memframe_session",
    "memframe_model",
    "memframe_open",
    "memframe_layers",
    "memframe_options",
    "memframe_memory_dir",
)

LAYER = '''
"""memframe_echo: asks the model about every final message, in the background."""

import memframe
from memframe.models import ModelRequest


class Echo:
    name = "echo"

    def __init__(self):
        self.replies = []

    @memframe.hookimpl
    def on_stop(self, session, message):
        def ask() -> None:
            asked = [{"role": "user", "content": message.text}]
            request = ModelRequest(system="Echo.", messages=asked)
            self.replies.append(session.frame.model_backend().complete(request).text)

        session.submit_background(ask, name="echo.ask", layer=self.name)
'''

CONFTEST = """
import pytest
from memframe_echo import Echo


@pytest.fixture
def memframe_layers():
    return [Echo]
"""

TESTS = """
def test_the_echo_asks_the_model_in_the_background(memframe_session, memframe_model):
    memframe_model.script("hello back")
    memframe_session.on_message({"role": "assistant", "content": "hello"})
    memframe_session.on_stop()  # synchronous background: the answer is in already
    layer = memframe_session.frame.manager.get_plugin("echo")
    assert layer.replies == ["hello back"]
    assert memframe_model.requests[0].messages[-1]["content"] == "hello"


def test_memory_dir_and_factory(memframe_memory_dir, memframe_open, tmp_path):
    assert memframe_memory_dir.is_relative_to(tmp_path)
    assert memframe_open(layers=[]).layers() == []
"""


def pyproject_entry_points() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(data["project"]["entry-points"]["pytest11"])


def test_pyproject_declares_the_plugin_as_memframe():
    assert pyproject_entry_points() == {"memframe": "memframe.testing.pytest_plugin"}
    plugin = importlib.import_module("memframe.testing.pytest_plugin")
    for name in FIXTURES:
        assert callable(getattr(plugin, name)), name


def run_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    info = site / "memframe_from_pyproject-0.1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memframe-from-pyproject\nVersion: 0.1.0\n", encoding="utf-8"
    )
    lines = "".join(f"{name} = {value}\n" for name, value in pyproject_entry_points().items())
    (info / "entry_points.txt").write_text(f"[pytest11]\n{lines}", encoding="utf-8")
    project = tmp_path / "memframe-echo"
    project.mkdir(exist_ok=True)
    (project / "memframe_echo.py").write_text(textwrap.dedent(LAYER), encoding="utf-8")
    (project / "conftest.py").write_text(textwrap.dedent(CONFTEST), encoding="utf-8")
    (project / "test_echo.py").write_text(textwrap.dedent(TESTS), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(project)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_third_party_layers_tests_get_the_fixtures(tmp_path):
    result = run_pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_the_plugin_is_turned_off_by_its_name(tmp_path):
    result = run_pytest(tmp_path, "-p", "no:memframe")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "fixture 'memframe_session' not found" in result.stdout
