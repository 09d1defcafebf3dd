"""memframe: four-layer memory for AI agents, as pluggy layers.

    import memframe

    with memframe.open("path/to/project") as frame:
        session = frame.session()
        session.on_message({"role": "user", "content": "Remember: tests run with pytest -q"})
        print(session.context())

Heavier names load on first use so ``import memframe`` (and the CLI) start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memframe._version import __version__

if TYPE_CHECKING:
    from memframe._backend import BACKEND
    from memframe._manager import LayerInfo, LayerLoadError
    from memframe.config import Config, ConfigError
    from memframe.context_blocks import ContextBlock
    from memframe.errors import BackendError
    from memframe.frame import MemoryFrame
    from memframe.frame import open_frame as open
    from memframe.hookspecs import hookimpl, hookspec
    from memframe.messages import (
        ContentBlock,
        Message,
        MessageError,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
        Usage,
    )
    from memframe.session import Session

_LAZY = {
    "hookimpl": ("memframe.hookspecs", "hookimpl"),
    "hookspec": ("memframe.hookspecs", "hookspec"),
    "BACKEND": ("memframe._backend", "BACKEND"),
    "open": ("memframe.frame", "open_frame"),
    "MemoryFrame": ("memframe.frame", "MemoryFrame"),
    "Session": ("memframe.session", "Session"),
    "Config": ("memframe.config", "Config"),
    "ConfigError": ("memframe.config", "ConfigError"),
    "BackendError": ("memframe.errors", "BackendError"),
    "LayerInfo": ("memframe._manager", "LayerInfo"),
    "LayerLoadError": ("memframe._manager", "LayerLoadError"),
    "ContextBlock": ("memframe.context_blocks", "ContextBlock"),
    "Message": ("memframe.messages", "Message"),
    "MessageError": ("memframe.messages", "MessageError"),
    "ContentBlock": ("memframe.messages", "ContentBlock"),
    "TextBlock": ("memframe.messages", "TextBlock"),
    "ThinkingBlock": ("memframe.messages", "ThinkingBlock"),
    "ToolUseBlock": ("memframe.messages", "ToolUseBlock"),
    "ToolResultBlock": ("memframe.messages", "ToolResultBlock"),
    "Usage": ("memframe.messages", "Usage"),
}

__all__ = [
    "BACKEND",
    "BackendError",
    "Config",
    "ConfigError",
    "ContentBlock",
    "ContextBlock",
    "LayerInfo",
    "LayerLoadError",
    "MemoryFrame",
    "Message",
    "MessageError",
    "Session",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "Usage",
    "__version__",
    "hookimpl",
    "hookspec",
    "open",
]


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'memframe' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), attribute)
    globals()[name] = value
    return value
