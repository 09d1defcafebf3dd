"""memframe: four-layer memory for AI agents, as pluggy layers.

    import memframe

    with memframe.open("path/to/project") as frame:
        session = frame.session()
        session.on_message({"role": "user", "content": "Remember: tests run with pytest -q"})
        print(session.context())

The secret scanner with the bundled rules is there too::

    findings = memframe.find("key: AKIA…")   # Finding(rule_id, label, spans, line)
    clean = memframe.redact(text)            # secrets replaced by [REDACTED]

and the public modules ``memframe.checksums``, ``memframe.tokens``, ``memframe.files`` (atomic
private writes, locks) and ``memframe.layer_settings`` (typed layer settings).

Heavier names load on first use so ``import memframe`` (and the CLI) start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memframe._version import __version__

if TYPE_CHECKING:
    from memframe._backend import BACKEND
    from memframe._manager import LayerInfo, LayerLoadError
    from memframe.config import Config, ConfigError
    from memframe.context.blocks import ContextBlock
    from memframe.errors import BackendError
    from memframe.frame import MemoryFrame
    from memframe.frame import open_frame as open
    from memframe.hookspecs import hookimpl, hookspec
    from memframe.messages import (
        ContentBlock,
        ImageBlock,
        Message,
        MessageError,
        OtherBlock,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
        Usage,
    )
    from memframe.scanner import (
        FileFindings,
        Finding,
        SecretMatch,
        SecretScanner,
        find,
        find_files,
        redact,
        scan,
        scan_many,
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
    "ContextBlock": ("memframe.context.blocks", "ContextBlock"),
    "Message": ("memframe.messages", "Message"),
    "MessageError": ("memframe.messages", "MessageError"),
    "ContentBlock": ("memframe.messages", "ContentBlock"),
    "TextBlock": ("memframe.messages", "TextBlock"),
    "ThinkingBlock": ("memframe.messages", "ThinkingBlock"),
    "ToolUseBlock": ("memframe.messages", "ToolUseBlock"),
    "ToolResultBlock": ("memframe.messages", "ToolResultBlock"),
    "Usage": ("memframe.messages", "Usage"),
    "ImageBlock": ("memframe.messages", "ImageBlock"),
    "OtherBlock": ("memframe.messages", "OtherBlock"),
    # the secret scanner with the bundled rules (memframe.scanner for your own rule sets)
    "scan": ("memframe.scanner", "scan"),
    "find": ("memframe.scanner", "find"),
    "redact": ("memframe.scanner", "redact"),
    "scan_many": ("memframe.scanner", "scan_many"),
    "find_files": ("memframe.scanner", "find_files"),
    "SecretScanner": ("memframe.scanner", "SecretScanner"),
    "SecretMatch": ("memframe.scanner", "SecretMatch"),
    "Finding": ("memframe.scanner", "Finding"),
    "FileFindings": ("memframe.scanner", "FileFindings"),
}

__all__ = [
    "BACKEND",
    "BackendError",
    "Config",
    "ConfigError",
    "ContentBlock",
    "ContextBlock",
    "FileFindings",
    "Finding",
    "ImageBlock",
    "LayerInfo",
    "LayerLoadError",
    "MemoryFrame",
    "Message",
    "MessageError",
    "OtherBlock",
    "SecretMatch",
    "SecretScanner",
    "Session",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "Usage",
    "__version__",
    "find",
    "find_files",
    "hookimpl",
    "hookspec",
    "open",
    "redact",
    "scan",
    "scan_many",
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
