"""A conversation seen through memframe: events in, context out."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memframe._fs import ensure_private_dir
from memframe.context.blocks import ContextBlock
from memframe.context.usage import ContextMeter
from memframe.messages import Message, ToolResultBlock, ToolUseBlock
from memframe.state import SessionState

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.transcripts.events import Event

T = TypeVar("T")
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
STATE_FILE = "state.json"


class SessionClosedError(RuntimeError):
    """An event arrived for a session that was already closed."""


class SessionNotFoundError(LookupError):
    """No saved session of that id in this project."""


class SessionReadOnlyError(RuntimeError):
    """An event arrived for a session opened read-only (:meth:`MemoryFrame.inspect`)."""


# Names under the project's directory that are not sessions.
RESERVED_SESSION_IDS = frozenset({"memory"})


def validate_session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise ValueError(
            f"invalid session id {session_id!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if session_id in RESERVED_SESSION_IDS:
        raise ValueError(f"invalid session id {session_id!r}: the name is reserved")
    return session_id


class Session:
    """One agent conversation. Create it with :meth:`MemoryFrame.session`.

    Feed it the agent's events (``on_message``, ``on_tool_use``, ``on_file_read``, ``on_stop``) and
    ask it for ``context()`` to inject. Slow layer work runs in the background; ``flush`` waits
    for it and ``close`` ends the session.
    """

    def __init__(
        self, frame: MemoryFrame, session_id: str | None = None, *, read_only: bool = False
    ) -> None:
        self.frame = frame
        #: opened with :meth:`MemoryFrame.inspect`: context and compaction can be asked for, but
        #: events are refused, no session hook fires and the state is never saved
        self.read_only = read_only
        self.id = validate_session_id(session_id) if session_id is not None else str(uuid.uuid4())
        self.dir: Path = frame.project_home / self.id
        ensure_private_dir(self.dir)
        self.state = SessionState(self.dir / STATE_FILE)
        self.meter = ContextMeter(frame.count_tokens)
        self.started_at = time.time()
        self.message_count = 0
        self.tool_call_count = 0
        self.last_message: Message | None = None
        self.history: list[Message] = []
        self.system_prompt: str | list[dict[str, Any]] = ""
        self.tools: list[dict[str, Any]] = []
        self.closed = False
        self._call = frame.manager.call

    def set_prompt(
        self,
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """The host agent's system prompt and tool definitions (Anthropic shape).

        Forked agents (session notes, Magic Docs…) send them unchanged, followed by this
        session's messages, so a provider prompt cache can serve the shared prefix.
        """
        if system is not None:
            self.system_prompt = system if isinstance(system, str) else [dict(b) for b in system]
        if tools is not None:
            self.tools = [dict(tool) for tool in tools]

    # -- events --------------------------------------------------------------------------------

    @property
    def context_tokens(self) -> int:
        """Tokens in the agent's context now (last provider usage + estimate of later messages)."""
        return self.meter.tokens

    def _check_open(self) -> None:
        if self.closed:
            raise SessionClosedError(f"session {self.id} is closed")

    def _check_writable(self) -> None:
        if self.closed or self.read_only:
            self._check_open()
            raise SessionReadOnlyError(f"session {self.id} is open read-only: events are refused")

    def on_message(self, message: Message | Mapping[str, Any]) -> None:
        """A conversation message: a :class:`Message` or an Anthropic-style dict."""
        self._check_writable()
        if not isinstance(message, Message):
            message = Message.from_dict(message)
        self.meter.observe(message)
        self.message_count += 1
        if message.role == "assistant":
            self.tool_call_count += sum(1 for b in message.content if isinstance(b, ToolUseBlock))
        self.last_message = message
        self.history.append(message)
        self._call("on_message", session=self, message=message)

    def on_tool_use(self, tool_use: ToolUseBlock, result: ToolResultBlock | None = None) -> None:
        """A tool call finished (``result`` joined by tool-use id, or ``None``)."""
        self._check_writable()
        self._call("on_tool_use", session=self, tool_use=tool_use, result=result)

    def on_file_read(self, path: str | Path, content: str | None = None) -> None:
        """The agent read ``path`` and saw ``content`` (when known)."""
        self._check_writable()
        self._call("on_file_read", session=self, path=str(path), content=content)

    def on_stop(self, message: Message | Mapping[str, Any] | None = None) -> None:
        """The query loop ended: ``message`` (a :class:`Message` or an Anthropic-style dict;
        default: the last one) is the final response."""
        self._check_writable()
        if message is not None and not isinstance(message, Message):
            message = Message.from_dict(message)
        final = message if message is not None else self.last_message
        if final is None:
            raise ValueError("on_stop needs a final message and this session has none yet")
        self._call("on_stop", session=self, message=final)

    def pre_compact(self) -> list[str]:
        """Ask layers what should survive a compaction (e.g. session notes)."""
        self._check_open()
        results: list[str] = self._call("on_pre_compact", session=self)
        return results

    def compacted(self, remaining_tokens: int = 0) -> None:
        """The host compacted the context; it now holds about ``remaining_tokens``."""
        self._check_writable()
        self.meter.reset(remaining_tokens)
        self.history.clear()

    def dispatch(self, event: Event) -> None:
        """Feed one event derived from a transcript (see :mod:`memframe.transcripts.events`)."""
        from memframe.transcripts import events

        if isinstance(event, events.MessageEvent):
            self.on_message(event.message)
        elif isinstance(event, events.ToolUseEvent):
            self.on_tool_use(event.tool_use, event.result)
        elif isinstance(event, events.FileReadEvent):
            self.on_file_read(event.path, event.content)
        elif isinstance(event, events.StopEvent):
            self.on_stop(event.message)
        elif isinstance(event, events.CompactEvent):
            self.pre_compact()
            self.compacted()
        else:
            raise TypeError(f"not a memframe event: {event!r}")

    # -- context -------------------------------------------------------------------------------

    def context_blocks(self, prompt: str | None = None) -> list[ContextBlock]:
        """Every block the layers want in the prompt, in call order."""
        self._check_open()
        blocks: list[ContextBlock] = []
        for result in self._call("collect_context", session=self, prompt=prompt):
            blocks.extend([result] if isinstance(result, ContextBlock) else result)
        return blocks

    def context(self, prompt: str | None = None) -> str:
        """The text to inject into the agent's prompt ('' when no layer has anything)."""
        return "\n".join(block.render() for block in self.context_blocks(prompt))

    # -- background work -----------------------------------------------------------------------

    def submit_background(
        self, fn: Callable[[], T], *, name: str, layer: str = "memframe"
    ) -> Future[T]:
        """Run ``fn()`` off the agent's path; a failure reaches ``on_layer_error``."""
        return self.frame.submit_background(fn, name=name, layer=layer, session=self)

    def flush(self, timeout: float | None = 15.0) -> bool:
        """Wait for background work; ``False`` when ``timeout`` seconds were not enough."""
        return self.frame.flush(timeout)

    def close(self, reason: str = "close", *, timeout: float | None = 15.0) -> None:
        """Flush background work, tell layers the session ended and save its state. Idempotent."""
        if self.closed:
            return
        if self.read_only:
            self.closed = True  # nothing to flush, tell or save
            return
        try:
            # In strict mode flush raises the failures of background work: the session still
            # ends (layers are told, state is saved) before they propagate.
            self.flush(timeout)
        finally:
            try:
                self._call("on_session_end", session=self, reason=reason)
            finally:
                self.closed = True
                self.state.save()
                self.frame._forget(self)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Session {self.id} messages={self.message_count} tokens={self.context_tokens}>"
