"""Shared fixtures: environment isolation, fake providers, and frames from memframe's own pytest
plugin (``memframe.testing.pytest_plugin``: ``memframe_open``, ``memframe_frame``…)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memframe.frame import MemoryFrame
from memframe.testing import FrameFactory

# CI runs the whole suite a second time with MEMFRAME_BACKEND=python: that one variable is kept.
KEPT_ENV_VARS = frozenset({"MEMFRAME_BACKEND"})
# A developer's real provider keys and endpoints never reach a test (tests talk to loopback fakes).
PROVIDER_ENV_PREFIXES = ("MEMFRAME_", "ANTHROPIC_", "OPENAI_", "CLAUDE_")


@pytest.fixture
def fake_home(tmp_path) -> Path:
    """The home directory every test runs with (``$HOME``; ``$XDG_CONFIG_HOME`` is in it)."""
    home = tmp_path / "user-home"
    home.mkdir()
    return home


_SCAN_CACHE = Path(tempfile.mkdtemp(prefix="memframe-test-scan-db-"))


@pytest.fixture(scope="session", autouse=True)
def _scan_cache_removed() -> Iterator[None]:
    """The run's compiled scan database (~4 MB) goes with the run, not left in the temp dir."""
    yield
    shutil.rmtree(_SCAN_CACHE, ignore_errors=True)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, fake_home: Path) -> None:
    """No test sees the developer's MEMFRAME_* settings or touches the real home directory."""
    for name in list(os.environ):
        if name.startswith(PROVIDER_ENV_PREFIXES) and name not in KEPT_ENV_VARS:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(fake_home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(fake_home / ".cache"))
    # One compiled scan database for the whole run (164 rules take ~1 s to compile): a private
    # cache directory of the test session, not each test's fresh home. Tests of the cache's
    # location set or delete the variable themselves.
    monkeypatch.setenv("MEMFRAME_SCAN_CACHE", str(_SCAN_CACHE))


PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx honours proxy variables: none may route a loopback test elsewhere."""
    for name in list(os.environ):
        if name.upper() in PROXY_VARS:
            monkeypatch.delenv(name)


def _serve_fake(kind: str) -> Iterator[Any]:
    from tests.fakes.providers import FakeProvider

    with FakeProvider(kind) as fake:  # type: ignore[arg-type]
        yield fake
    assert not fake.unexpected, f"unscripted requests reached the fake: {fake.unexpected}"


@pytest.fixture
def fake_anthropic() -> Iterator[Any]:
    """A fake Anthropic Messages endpoint on 127.0.0.1 (``base_url`` is ``http://127.0.0.1:P``)."""
    yield from _serve_fake("anthropic")


@pytest.fixture
def fake_openai() -> Iterator[Any]:
    """A fake Chat Completions endpoint on 127.0.0.1 (``base_url`` ends in ``/v1``)."""
    yield from _serve_fake("openai")


def pytest_configure(config: pytest.Config) -> None:
    """memframe's pytest plugin comes through its ``pytest11`` entry point; a development
    install older than that entry point (``./dev setup`` reinstalls) gets it here instead."""
    from memframe.testing import pytest_plugin

    if not config.pluginmanager.is_registered(pytest_plugin):
        config.pluginmanager.register(pytest_plugin, "memframe")


@pytest.fixture
def frame_factory(memframe_open: FrameFactory) -> FrameFactory:
    """``memframe_open`` with background work on worker threads, as in production (pass
    ``synchronous_background=True`` for inline work). Strict test frames in ``tmp_path``, sharing
    its home (a second frame sees the first's state); every frame is closed at teardown."""

    def factory(**options: Any) -> MemoryFrame:
        options.setdefault("synchronous_background", False)
        return memframe_open(**options)

    return factory


@pytest.fixture
def tmp_frame(frame_factory: FrameFactory) -> MemoryFrame:
    """A strict frame with no layers, isolated in ``tmp_path``."""
    return frame_factory()


# Hypothesis: the default profile keeps the suite fast; MEMFRAME_HYPOTHESIS=thorough runs the big
# differential campaigns (≥ 100k examples in all) that the closing notes quote.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "default", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("MEMFRAME_HYPOTHESIS", "default"))


def _engines() -> list[str]:
    from memframe import _backend

    return _backend.available_engines()


@pytest.fixture(params=_engines())
def engine(request) -> str:
    """Every scanning/checksum engine that loads here: native, hyperscan, python."""
    return str(request.param)
