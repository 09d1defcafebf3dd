"""The team memory server (``memframe serve``): SQLite by default, PostgreSQL for replicas."""

from __future__ import annotations

from pathlib import Path

from memframe.server.storage import Storage


def open_storage(url: str) -> Storage:
    """``sqlite:///path/to/db`` (or a plain path) or ``postgresql://…``."""
    if url.startswith(("postgresql://", "postgres://")):
        from memframe.server.postgres import PostgresStorage

        return PostgresStorage(url)
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
    if "://" in path:
        raise ValueError(f"unknown database URL {url!r}: use sqlite:///PATH or postgresql://…")
    from memframe.server.sqlite import SQLiteStorage

    return SQLiteStorage(Path(path).expanduser())


__all__ = ["Storage", "open_storage"]
