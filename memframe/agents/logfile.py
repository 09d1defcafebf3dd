"""The hook's log: ``<memory base>/logs/hook.log`` (mode 0600), one line per entry.

The hook runs inside Claude Code, whose terminal must not show memframe's problems: everything
goes here instead. The file is kept small: past ``MAX_BYTES`` it is moved to ``hook.log.1``
(replacing the previous one) and a new file starts.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

LOG_DIR = "logs"
LOG_FILE = "hook.log"
MAX_BYTES = 1024 * 1024


def log_path(home: Path) -> Path:
    return home / LOG_DIR / LOG_FILE


def _stamp() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"


def write_log(home: Path, level: str, message: str) -> None:
    """Append one entry; never raises (a log that cannot be written is not a reason to fail)."""
    try:
        from memframe._fs import ensure_private_dir

        path = log_path(home)
        ensure_private_dir(path.parent)
        try:
            if path.stat().st_size > MAX_BYTES:
                os.replace(path, path.with_name(LOG_FILE + ".1"))
        except FileNotFoundError:
            pass
        line = f"{_stamp()} {os.getpid()} {level} {message}".replace("\n", "\n    ") + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:  # the log is best effort by design
        pass
