"""Fixtures for the model backend tests: fake providers on 127.0.0.1, never a real endpoint."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.fakes.providers import FakeProvider

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx honours proxy variables: none may route a loopback test elsewhere."""
    for name in list(os.environ):
        if name.upper() in PROXY_VARS:
            monkeypatch.delenv(name)


def _serve(kind: str) -> Iterator[FakeProvider]:
    with FakeProvider(kind) as fake:  # type: ignore[arg-type]
        yield fake
    assert not fake.unexpected, f"unscripted requests reached the fake: {fake.unexpected}"


@pytest.fixture
def fake_anthropic() -> Iterator[FakeProvider]:
    """A started fake Anthropic Messages endpoint (``base_url`` is ``http://127.0.0.1:PORT``)."""
    yield from _serve("anthropic")


@pytest.fixture
def fake_openai() -> Iterator[FakeProvider]:
    """A started fake Chat Completions endpoint (``base_url`` ends in ``/v1``)."""
    yield from _serve("openai")
