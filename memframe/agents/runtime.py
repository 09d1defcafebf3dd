"""What a :class:`~memframe.session.Session` keeps in memory only, kept between worker processes.

Each worker process resumes the session from its state file, which holds what the layers saved,
but the session's own counters, context meter and message history live in memory. They are
saved here after each run and restored in the next one, so the layers see one continuous
session: the same message indices, context sizes and history as a single process would.

The history goes to ``hook-history.jsonl`` (appended to; rewritten after a compaction or a
rewind); ``hook-runtime.json`` records how many bytes of it are valid, so a run that died
between the two writes leaves no half-saved history behind.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memframe._fs import PRIVATE_FILE_MODE, atomic_write_bytes
from memframe.agents.records import decode_message, encode_message
from memframe.messages import Message, MessageError

if TYPE_CHECKING:
    from memframe.session import Session

MAX_SEEN_IDS = 4_096


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def load_history(path: Path, valid_bytes: int) -> tuple[list[Message], int]:
    """The messages in the first ``valid_bytes`` bytes of the history file (bytes past them,
    left by a run that died before saving its runtime, are cut off), and the size read."""
    try:
        with open(path, "rb+") as handle:
            data = handle.read(valid_bytes)
            if handle.read(1):
                handle.truncate(valid_bytes)
    except FileNotFoundError:
        return [], 0
    data = data[: data.rfind(b"\n") + 1]  # a file cut short ends on a whole line
    messages: list[Message] = []
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
            if isinstance(record, dict):
                messages.append(decode_message(record))
        except (orjson.JSONDecodeError, MessageError):
            continue
    return messages, len(data)


def _encode_lines(messages: list[Message]) -> bytes:
    return b"".join(orjson.dumps(encode_message(m)) + b"\n" for m in messages)


def save_history(path: Path, history: list[Message], loaded: list[Message], size: int) -> int:
    """Bring the history file in line with ``history``; returns its valid size in bytes.

    When ``history`` still starts with the messages loaded from the file, only the new ones are
    appended; otherwise (a compaction or a rewind) the file is rewritten.
    """
    prefix = len(loaded)
    unchanged = len(history) >= prefix and all(
        a is b for a, b in zip(history[:prefix], loaded, strict=True)
    )
    if unchanged and path.exists():
        new = _encode_lines(history[prefix:])
        if new:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE_MODE)
            try:
                os.ftruncate(fd, size)  # drop anything past the valid part first
                os.lseek(fd, size, os.SEEK_SET)
                os.write(fd, new)
                os.fsync(fd)
            finally:
                os.close(fd)
        return size + len(new)
    data = _encode_lines(history)
    atomic_write_bytes(path, data)
    return len(data)


def capture(session: Session) -> dict[str, Any]:
    """The session's in-memory counters and context meter, JSON-ready."""
    meter = session.meter
    seen = list(meter._seen_ids)
    if len(seen) > MAX_SEEN_IDS:
        recent = [m.id for m in session.history if m.id is not None]
        keep = set(recent[-MAX_SEEN_IDS:])
        seen = [i for i in seen if i in keep]
    last = session.last_message
    return {
        "message_count": session.message_count,
        "tool_call_count": session.tool_call_count,
        "started_at": session.started_at,
        "meter": {"reported": meter.reported, "estimated": meter.estimated, "seen_ids": seen},
        "last_message": encode_message(last) if last is not None else None,
    }


def restore(session: Session, data: Mapping[str, Any], history: list[Message]) -> None:
    """Put a captured runtime (and the loaded history) back into a freshly resumed session."""
    session.history = list(history)
    session.message_count = _int(data.get("message_count"))
    session.tool_call_count = _int(data.get("tool_call_count"))
    started = data.get("started_at")
    if isinstance(started, int | float) and not isinstance(started, bool):
        session.started_at = float(started)
    meter = data.get("meter")
    if isinstance(meter, Mapping):
        session.meter.reported = _int(meter.get("reported"))
        session.meter.estimated = _int(meter.get("estimated"))
        seen = meter.get("seen_ids")
        if isinstance(seen, list):
            session.meter._seen_ids = {i for i in seen if isinstance(i, str)}
    last = data.get("last_message")
    session.last_message = history[-1] if history else None
    if isinstance(last, Mapping):
        with contextlib.suppress(MessageError):
            session.last_message = decode_message(last)


def rewind(session: Session, keep: int) -> None:
    """The conversation went back to its first ``keep`` messages (since the last compaction):
    drop the rest of the history and size the context from what remains."""
    del session.history[keep:]
    reported = estimated = 0
    count = session.frame.count_tokens
    for message in reversed(session.history):
        if message.role == "assistant" and message.usage is not None:
            reported = message.usage.context_tokens
            break
        estimated += count(message.estimable_text())
    session.meter.reported = reported
    session.meter.estimated = estimated
    session.last_message = session.history[-1] if session.history else session.last_message
