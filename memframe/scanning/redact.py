"""Redacted copies under a directory; the originals are never touched.

A file keeps its path relative to the working directory under the redaction directory (a path
outside it keeps its absolute path, without the leading ``/``); a team entry goes to
``team-db/<database file name>/<repo>/<key>``. Copies are written to a temporary file and
renamed, with mode 0600. Every secret the scanner finds is redacted, including findings that a
baseline or ``memframe:allow`` keeps out of the report: the copy is meant to be safe to share.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote

from memframe._fs import atomic_writer
from memframe.scanner import REDACTED, merge_spans

COPY_CHUNK = 1 << 20


class RedactError(Exception):
    """A redacted copy cannot be written."""


def copy_path(redact_dir: Path, display: str) -> Path:
    """Where the redacted copy of the file reported as ``display`` goes."""
    parts = Path(display).parts
    if Path(display).is_absolute() or ".." in parts:
        absolute = Path(os.path.abspath(display))
        parts = absolute.parts[1:]
    return redact_dir.joinpath(*parts)


def entry_path(redact_dir: Path, db_name: str, repo: str, key: str) -> Path:
    """Where the redacted copy of a team entry goes (every part made a safe file name)."""

    def safe(part: str) -> str:
        quoted = quote(part, safe=" @+,=-_")
        return quoted.replace(".", "%2E") if quoted in {"", ".", ".."} else quoted

    key_parts = [safe(p) for p in key.split("/")] or ["%2E"]
    return redact_dir.joinpath("team-db", safe(db_name), safe(repo), *key_parts)


def _check_target(target: Path, source: str | None) -> None:
    if source is not None and target.exists() and os.path.samefile(target, source):
        raise RedactError(f"{target}: the redacted copy would overwrite the file it copies")


def write_bytes(target: Path, data: bytes, *, source: str | None = None) -> None:
    """Write a copy whose whole content is known."""
    _check_target(target, source)
    try:
        with atomic_writer(target) as out:
            out.write(data)
    except OSError as exc:
        raise RedactError(f"{target}: cannot write ({exc.strerror or exc})") from None


def write_text(target: Path, text: str, *, source: str | None = None) -> None:
    write_bytes(target, text.encode("utf-8", "surrogateescape"), source=source)


def span_replacements(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int, bytes]]:
    """Byte spans (overlapping or touching ones merged) → ``[REDACTED]`` replacements."""
    marker = REDACTED.encode()
    return [(start, end, marker) for start, end in merge_spans(spans)]


def write_replaced(
    target: Path, source: str, replacements: Iterable[tuple[int, int, bytes]]
) -> None:
    """Stream ``source`` to ``target`` with each byte range ``[start, end)`` replaced (ranges
    sorted, not overlapping): memory stays bounded by the chunk size."""
    _check_target(target, source)
    try:
        with open(source, "rb") as src, atomic_writer(target) as out:
            copy_replaced(src, out, replacements)
    except OSError as exc:
        raise RedactError(f"{target}: cannot write ({exc.strerror or exc})") from None


def copy_replaced(
    src: BinaryIO, out: BinaryIO, replacements: Iterable[tuple[int, int, bytes]]
) -> None:
    """Copy ``src`` (from its start) to ``out`` with each byte range ``[start, end)`` replaced
    (ranges not overlapping), a chunk at a time."""
    src.seek(0)
    position = 0
    for start, end, data in sorted(replacements):
        _copy(src, out, start - position)
        out.write(data)
        src.seek(end)
        position = end
    _copy(src, out, None)


def _copy(src: BinaryIO, out: BinaryIO, count: int | None) -> None:
    while count is None or count > 0:
        chunk = src.read(COPY_CHUNK if count is None else min(COPY_CHUNK, count))
        if not chunk:
            return
        out.write(chunk)
        if count is not None:
            count -= len(chunk)
