"""Shared fixtures: environment isolation and frames built on ``memframe.testing``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memframe.frame import MemoryFrame
from memframe.testing import open_test_frame

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


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, fake_home: Path) -> None:
    """No test sees the developer's MEMFRAME_* settings or touches the real home directory."""
    for name in list(os.environ):
        if name.startswith(PROVIDER_ENV_PREFIXES) and name not in KEPT_ENV_VARS:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(fake_home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(fake_home / ".cache"))


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


@pytest.fixture
def frame_factory(tmp_path) -> Iterator[Callable[..., MemoryFrame]]:
    """Open strict test frames in ``tmp_path`` (shared home: a second frame sees the first's
    state); every frame still open at teardown is closed."""
    opened: list[MemoryFrame] = []

    def factory(*, layers: Any = (), **options: Any) -> MemoryFrame:
        frame = open_test_frame(tmp_path, layers=layers, **options)
        opened.append(frame)
        return frame

    yield factory
    for frame in opened:
        frame.close()


@pytest.fixture
def tmp_frame(frame_factory) -> MemoryFrame:
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
