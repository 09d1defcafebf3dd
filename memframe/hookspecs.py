"""Every hook a memframe layer can implement, grouped by lifecycle phase.

A layer is any object (module, class instance) with functions named after these hooks and
marked with ``@memframe.hookimpl``. Layers may implement any subset and may accept any subset of
a hook's arguments (pluggy passes only the ones named).

Event hooks run *every* layer: one raising layer does not stop the others; its exception is
reported through :func:`on_layer_error` (and re-raised as an ``ExceptionGroup`` in strict mode).
Hooks whose docstring says "All results are collected" return a list of the non-``None`` values.

docs/hooks.md documents each hook with its exact signature; a test keeps the two in sync.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from memframe.context.blocks import ContextBlock
    from memframe.frame import MemoryFrame
    from memframe.messages import Message, ToolResultBlock, ToolUseBlock
    from memframe.session import Session

PROJECT = "memframe"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- frame lifecycle ---------------------------------------------------------------------------


@hookspec
def on_frame_open(frame: MemoryFrame) -> None:
    """Called once when a :class:`MemoryFrame` has loaded all layers.

    :param frame: the frame; ``frame.config`` holds the resolved configuration.

    Use it to validate configuration or prepare directories. Implement it in any layer.
    """


@hookspec
def on_frame_close(frame: MemoryFrame) -> None:
    """Called once when the frame closes, after every session ended and background work finished.

    :param frame: the frame being closed.
    """


# -- session lifecycle -------------------------------------------------------------------------


@hookspec
def on_session_start(session: Session) -> None:
    """Called when a session starts (a new conversation, or one resumed from its state file).

    :param session: the session; ``session.state`` is its persisted per-layer state.
    """


@hookspec
def on_message(session: Session, message: Message) -> None:
    """Called for every conversation message, in order, after ``session.context_tokens`` is updated.

    :param session: the session the message belongs to.
    :param message: the message (user, assistant or system), with content blocks, the provider
        message id and usage when known.

    This hook is on the agent's hot path: do cheap bookkeeping here and hand slow work to
    ``session.submit_background(...)``.
    """


@hookspec
def on_file_read(session: Session, path: str, content: str | None) -> None:
    """Called when the agent read a file.

    :param session: the session.
    :param path: the path as the agent named it (absolute when the host reports one).
    :param content: the text the agent saw, or ``None`` when the host did not report it.
    """


@hookspec
def on_tool_use(session: Session, tool_use: ToolUseBlock, result: ToolResultBlock | None) -> None:
    """Called when a tool call completed (or, with ``result=None``, when it never got a result).

    :param session: the session.
    :param tool_use: the call: ``id``, ``name`` and ``input``.
    :param result: the tool's result, joined by tool-use id.
    """


@hookspec
def on_stop(session: Session, message: Message) -> None:
    """Called at the end of a query loop: the final assistant response has no tool calls.

    :param session: the session.
    :param message: the final assistant message of the turn.

    The natural idle point for background work (memory extraction, doc updates).
    """


@hookspec
def on_pre_compact(session: Session) -> str | None:
    """Called before the host compacts the conversation; may return text to keep.

    :param session: the session about to be compacted.
    :return: text that should replace the old history (e.g. session notes), or ``None``.

    All results are collected, in call order (most recently loaded layer first).
    """


@hookspec
def on_session_end(session: Session, reason: str) -> None:
    """Called once when a session ends, after its background work was flushed.

    :param session: the session.
    :param reason: why it ended: ``"close"``, ``"replay-complete"``, ``"clear"``, ``"logout"``…
    """


# -- providers ---------------------------------------------------------------------------------


@hookspec
def collect_context(session: Session, prompt: str | None) -> list[ContextBlock] | None:
    """Return blocks to inject into the agent's prompt.

    :param session: the session.
    :param prompt: the user's current prompt, when known (used to select relevant memories).
    :return: a list of :class:`~memframe.ContextBlock` (or ``None`` for nothing).

    All results are collected; ``session.context()`` joins them in call order.
    """


@hookspec
def register_model_backends(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register model backends (offline, anthropic, openai…): ``register(name, factory)``.

    :param register: takes a backend name and a factory returning the backend; registering a name
        twice is an error.
    """


@hookspec
def provide_config(frame: MemoryFrame) -> Mapping[str, Any] | None:
    """Supply remotely tunable settings (feature gates, thresholds) from a config service.

    :param frame: the frame asking.
    :return: a mapping of dotted keys to values (e.g. ``{"session_memory.enabled": False}``),
        or ``None``.

    Called lazily in the background the first time a layer reads a remote value, then again when
    the cached answer is older than ``remote_config_ttl`` seconds; it never blocks the agent
    (until the first answer arrives, layers use their local settings). All results are merged,
    the first-called layer winning on a conflict.
    """


@hookspec
def register_rules(register: Callable[[Any], None]) -> None:
    """Register extra secret-scanning rules by calling ``register(rule)``.

    :param register: takes one rule definition (a mapping with ``id``, ``regex``, ``keywords``…).
    """


@hookspec
def register_commands(register: Callable[..., None]) -> None:
    """Add subcommands to the ``memframe`` CLI.

    :param register: ``register(name, help, add_arguments, run)``: ``name`` is the subcommand
        (a lower-case word, not a built-in command's), ``help`` its one-line help (shown in
        ``memframe --help``), ``add_arguments`` receives the subcommand's
        ``argparse.ArgumentParser`` (or is ``None``), and ``run`` receives the parsed
        ``argparse.Namespace`` — and the open :class:`~memframe.MemoryFrame` when it takes a
        second parameter, ``run(args, frame)`` — and returns the exit code.

    Called without a frame, before the CLI knows whether it will open one: when ``memframe``
    runs with no command, with ``--help``, or with a word that is not a built-in command. A
    layer class implements it as a ``@staticmethod`` or ``@classmethod`` (or has a
    constructor that takes no frame). A bad registration fails closed: the command exits 2
    naming the layer.
    """


# -- errors ------------------------------------------------------------------------------------


@hookspec
def on_layer_error(layer: str, hook: str, error: Exception, session: Session | None) -> None:
    """Called when a layer's hook implementation (or its background work) raised.

    :param layer: the failing layer's registered name.
    :param hook: the hook (or background task) that failed.
    :param error: the exception.
    :param session: the session involved, when there is one.

    An exception raised here is logged and otherwise ignored.
    """
