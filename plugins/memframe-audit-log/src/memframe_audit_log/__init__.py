"""memframe-audit-log: a memframe layer that appends every lifecycle event to a JSONL file.

Each line is one JSON object, ``{"ts": ..., "hook": ..., "session": ..., ...}``, with ids, names,
counts and sizes only — never the text of messages, tool inputs or results, or files read.

Installed, it loads through the ``memframe`` entry-point group as the layer ``audit_log``
(block it with ``MEMFRAME_DISABLED_PLUGINS=audit_log``).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe import hookimpl
from memframe_audit_log import _summary
from memframe_audit_log._config import (
    ENV_VAR,
    SESSION_FILE,
    SETTINGS_KEY,
    AuditLogConfigError,
    configured_path,
)
from memframe_audit_log._version import __version__
from memframe_audit_log._writer import JsonlAppender, encode_line

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.messages import Message, ToolResultBlock, ToolUseBlock
    from memframe.session import Session

__all__ = [
    "ENV_VAR",
    "SESSION_FILE",
    "SETTINGS_KEY",
    "AuditLog",
    "AuditLogConfigError",
    "JsonlAppender",
    "__version__",
    "encode_line",
]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class AuditLog:
    """The ``audit_log`` layer: one JSONL line per event.

    The file is ``$MEMFRAME_AUDIT_LOG``, else the settings key ``audit_log.path``, else
    ``<session.dir>/audit.jsonl`` (one file per session). Files are created with mode 0600 and
    every line is appended with a single ``os.write`` on an ``O_APPEND`` descriptor. A write
    that fails raises; memframe reports it through ``on_layer_error``.

    Layer errors that belong to no session are recorded only when one file is configured for
    all sessions (there is no session directory to put them in otherwise).
    """

    name = "audit_log"

    def __init__(self, frame: MemoryFrame) -> None:
        shared = configured_path(frame.config.settings, frame.config.config_dir)
        self._shared = JsonlAppender(shared) if shared is not None else None
        self._per_session: dict[str, JsonlAppender] = {}
        self._lock = threading.Lock()

    # -- where lines go --------------------------------------------------------------------------

    @property
    def shared_path(self) -> Path | None:
        """The one file every session writes to, or ``None`` when each session has its own."""
        return self._shared.path if self._shared is not None else None

    def path_for(self, session: Session | None) -> Path | None:
        """The file that events of ``session`` go to (``None``: not recorded)."""
        if self._shared is not None:
            return self._shared.path
        return session.dir / SESSION_FILE if session is not None else None

    def _appender(self, session: Session | None) -> JsonlAppender | None:
        if self._shared is not None:
            return self._shared
        if session is None:
            return None
        with self._lock:
            appender = self._per_session.get(session.id)
            if appender is None:
                appender = self._per_session[session.id] = JsonlAppender(session.dir / SESSION_FILE)
        return appender

    def _write(self, hook: str, session: Session | None, fields: dict[str, Any]) -> None:
        appender = self._appender(session)
        if appender is None:
            return
        record: dict[str, Any] = {
            "ts": _now(),
            "hook": hook,
            "session": session.id if session is not None else None,
        }
        record.update(fields)
        appender.append(record)

    def _close_session(self, session: Session) -> None:
        with self._lock:
            appender = self._per_session.pop(session.id, None)
        if appender is not None:
            appender.close()

    # -- hooks -------------------------------------------------------------------------------------

    @hookimpl
    def on_session_start(self, session: Session) -> None:
        self._write("on_session_start", session, {})

    @hookimpl
    def on_message(self, session: Session, message: Message) -> None:
        fields = _summary.message(message)
        fields["context_tokens"] = session.context_tokens
        self._write("on_message", session, fields)

    @hookimpl
    def on_tool_use(
        self, session: Session, tool_use: ToolUseBlock, result: ToolResultBlock | None
    ) -> None:
        self._write("on_tool_use", session, _summary.tool_use(tool_use, result))

    @hookimpl
    def on_file_read(self, session: Session, path: str, content: str | None) -> None:
        self._write("on_file_read", session, _summary.file_read(path, content))

    @hookimpl
    def on_stop(self, session: Session, message: Message) -> None:
        self._write("on_stop", session, _summary.stop(message))

    @hookimpl
    def on_pre_compact(self, session: Session) -> None:
        if session.read_only:
            return  # someone looking at the session (`memframe context`), not a compaction
        self._write("on_pre_compact", session, {"context_tokens": session.context_tokens})

    @hookimpl
    def on_session_end(self, session: Session, reason: str) -> None:
        try:
            self._write(
                "on_session_end",
                session,
                {
                    "reason": reason,
                    "messages": session.message_count,
                    "tool_calls": session.tool_call_count,
                    "context_tokens": session.context_tokens,
                },
            )
        finally:
            self._close_session(session)

    @hookimpl
    def on_layer_error(
        self, layer: str, hook: str, error: Exception, session: Session | None
    ) -> None:
        self._write("on_layer_error", session, _summary.layer_error(layer, hook, error))

    @hookimpl
    def on_frame_close(self) -> None:
        with self._lock:
            appenders, self._per_session = list(self._per_session.values()), {}
        if self._shared is not None:
            appenders.append(self._shared)
        for appender in appenders:
            appender.close()
