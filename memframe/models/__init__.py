"""Model backends: ``offline`` (default, no network), ``anthropic``, ``openai``, ``claude-cli``, and
any a layer registers through the ``register_model_backends`` hook.

A factory takes ``(options, env)``: ``options`` is the ``models.<name>`` object of the user
settings file, ``env`` the environment. It raises :class:`ModelNotConfiguredError` when
something it needs is missing.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

from memframe.models.base import (
    ModelBackend,
    ModelError,
    ModelNotConfiguredError,
    ModelRequest,
    ModelResponse,
    ModelResponseError,
    ModelTransientError,
    ToolCall,
    ToolSpec,
)

BackendFactory = Callable[[Mapping[str, Any], Mapping[str, str]], ModelBackend]

# Imported only when chosen, so the hook command never pays for httpx.
BUILTIN_BACKENDS: dict[str, str] = {
    "offline": "memframe.models.offline:OfflineBackend.from_options",
    "anthropic": "memframe.models.anthropic:AnthropicBackend.from_options",
    "openai": "memframe.models.openai:OpenAIBackend.from_options",
    "claude-cli": "memframe.models.claude_cli:ClaudeCliBackend.from_options",
}

# Set in the environment of every model subprocess memframe starts (``claude -p``): memframe's
# own hooks see it and do nothing, so a fork never triggers memory work inside itself.
FORK_GUARD_ENV = "MEMFRAME_IN_FORK"


def _builtin_factory(target: str) -> BackendFactory:
    module_name, _, attr_path = target.partition(":")

    def factory(options: Mapping[str, Any], env: Mapping[str, str]) -> ModelBackend:
        obj: Any = importlib.import_module(module_name)
        for attr in attr_path.split("."):
            obj = getattr(obj, attr)
        backend: ModelBackend = obj(options, env)
        return backend

    return factory


class BackendRegistry:
    """Names → factories: the built-ins, then whatever layers register (a layer may replace one)."""

    def __init__(self) -> None:
        self._factories: dict[str, BackendFactory] = {
            name: _builtin_factory(target) for name, target in BUILTIN_BACKENDS.items()
        }

    def register(self, name: str, factory: Callable[..., Any]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a model backend needs a non-empty name, got {name!r}")
        if not callable(factory):
            raise TypeError(f"model backend {name!r}: the factory must be callable")
        self._factories[name] = factory

    def names(self) -> list[str]:
        return sorted(self._factories)

    def create(
        self,
        name: str,
        options: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ModelBackend:
        if name not in self._factories:
            raise ModelNotConfiguredError(
                f"unknown model backend {name!r}; available: {', '.join(self.names())}"
            )
        if options is not None and not isinstance(options, Mapping):
            raise ModelNotConfiguredError(
                f"settings models.{name} must be an object, got {type(options).__name__}"
            )
        backend = self._factories[name](options or {}, os.environ if env is None else env)
        if not isinstance(backend, ModelBackend):
            raise ModelNotConfiguredError(
                f"model backend {name!r}: the factory returned {backend!r}, which is not a "
                "backend (it needs a `name` attribute and a complete(request) method)"
            )
        return backend


__all__ = [
    "BUILTIN_BACKENDS",
    "FORK_GUARD_ENV",
    "BackendFactory",
    "BackendRegistry",
    "ModelBackend",
    "ModelError",
    "ModelNotConfiguredError",
    "ModelRequest",
    "ModelResponse",
    "ModelResponseError",
    "ModelTransientError",
    "ToolCall",
    "ToolSpec",
]
