"""A one-line progress display on stderr: files and bytes done, throughput; a bar when the total
is known. Drawn only when stderr is a terminal, at most ten times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO

_REDRAW_SECONDS = 0.1
_BAR_WIDTH = 24


def human_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    raise AssertionError("unreachable")


class Progress:
    """Counts what was scanned; draws on ``stream`` when ``enabled``."""

    def __init__(
        self,
        *,
        enabled: bool,
        stream: TextIO | None = None,
        total_bytes: int | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.total_bytes = total_bytes
        self.files = 0
        self.bytes = 0
        self.started = time.perf_counter()
        self._drawn_at = 0.0
        self._drawn = False

    @classmethod
    def for_stderr(cls, *, quiet: bool, total_bytes: int | None = None) -> Progress:
        return cls(enabled=not quiet and sys.stderr.isatty(), total_bytes=total_bytes)

    @property
    def elapsed(self) -> float:
        return max(time.perf_counter() - self.started, 1e-9)

    def add(self, *, files: int = 0, nbytes: int = 0) -> None:
        self.files += files
        self.bytes += nbytes
        if self.enabled:
            now = time.perf_counter()
            if now - self._drawn_at >= _REDRAW_SECONDS:
                self._drawn_at = now
                self._draw()

    def line(self) -> str:
        rate = self.bytes / self.elapsed / 1e6
        text = f"{self.files:,} files  {human_bytes(self.bytes)}  {rate:,.1f} MB/s"
        if self.total_bytes:
            done = min(self.bytes / self.total_bytes, 1.0)
            filled = int(done * _BAR_WIDTH)
            bar = "#" * filled + "." * (_BAR_WIDTH - filled)
            text = f"[{bar}] {done:4.0%}  {text}"
        return f"scanning {text}"

    def _draw(self) -> None:
        self.stream.write("\r\x1b[K" + self.line())
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the line (the summary is printed separately)."""
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False
