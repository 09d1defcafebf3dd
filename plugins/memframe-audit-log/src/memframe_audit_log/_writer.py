"""Append-only JSONL writing: one ``os.write`` of one whole line on an ``O_APPEND`` descriptor.

With ``O_APPEND`` the kernel moves to the end of the file and writes in one step, so lines from
concurrent writers (threads, other processes, other frames) never interleave. A failed or short
write raises: the caller (memframe) isolates it and reports it through ``on_layer_error``.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FILE_MODE = 0o600
DIR_MODE = 0o700
_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC


def encode_line(record: Mapping[str, Any]) -> bytes:
    """One JSON object on one line, ASCII-only (any path, even undecodable, stays valid JSON)."""
    text = json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.encode("ascii") + b"\n"


def open_append(path: Path) -> int:
    """Open ``path`` for appending; a file created here gets mode 0600 whatever the umask."""
    if not path.parent.exists():
        path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    try:
        fd = os.open(path, _FLAGS | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return os.open(path, _FLAGS)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


class JsonlAppender:
    """Appends JSON lines to one file; the descriptor is opened on first use and kept."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._lock = threading.Lock()

    def append(self, record: Mapping[str, Any]) -> None:
        """Write ``record`` as one line with a single ``os.write``; raise ``OSError`` on failure."""
        line = encode_line(record)
        with self._lock:
            if self._fd is None:
                self._fd = open_append(self.path)
            written = os.write(self._fd, line)
        if written != len(line):
            raise OSError(
                errno.EIO,
                f"short write to audit log: {written} of {len(line)} bytes",
                str(self.path),
            )

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __repr__(self) -> str:
        return f"<JsonlAppender {self.path}>"
