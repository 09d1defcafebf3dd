"""The team server's database: every entry (``entries(repo, key, text)``) is scanned.

A source is a SQLite file (``PATH`` or ``sqlite:///PATH``) or a PostgreSQL URL
(``postgresql://…``, the ``server`` extra). A SQLite database is opened read-only (a missing file
is an error, never created; no ``-wal``/``-shm`` file is left behind); a PostgreSQL one is read
in one read-only transaction (one consistent snapshot) through a server-side cursor. Both are
read through the server's own storage engines, opened read-only (``iter_entries``): the scan
never depends on how the server lays out its tables. Entries are streamed in batches; a
finding's location is ``repo:key:line``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

from memframe.scanner import SecretScanner
from memframe.scanning.hits import Hit, text_hits

URL_PREFIX = "sqlite:///"
PG_PREFIXES = ("postgresql://", "postgres://")
URI_SCHEME = "memframe-team"
BATCH_ENTRIES = 2048


class TeamDbError(Exception):
    """The database cannot be read as a team memory database."""


@dataclass(slots=True)
class TeamDbResult:
    hits: list[Hit] = field(default_factory=list)
    entries: int = 0
    bytes: int = 0
    # (repo, key) -> (text, secret spans) of the entries with findings, for redacted copies
    redactions: dict[tuple[str, str], tuple[str, list[tuple[int, int]]]] = field(
        default_factory=dict
    )


# a SQLite database file, or a PostgreSQL URL
TeamDbSource = Path | str


def db_source(argument: str) -> TeamDbSource | None:
    """The database an argument names as ``memframe serve --db`` reads it: ``sqlite:///PATH``
    (a Path) or a PostgreSQL URL (kept as a string); None for anything else."""
    if argument.startswith(URL_PREFIX):
        return Path(argument.removeprefix(URL_PREFIX)).expanduser()
    if argument.startswith(PG_PREFIXES):
        return argument
    return None


def shown(source: TeamDbSource) -> str:
    """How a source is named in messages and reports (a URL without its password)."""
    if isinstance(source, Path):
        return str(source)
    from memframe.server.urls import redact_url

    return redact_url(source)


def source_name(source: TeamDbSource) -> str:
    """A file name for the source (redacted copies go under ``team-db/<name>/``)."""
    if isinstance(source, Path):
        return source.name
    parts = urlsplit(source)
    database = parts.path.strip("/") or "postgres"
    return f"postgresql-{parts.hostname or 'local'}-{database}"


def entry_uri(repo: str, key: str) -> str:
    """The SARIF artifact URI of a team entry: ``memframe-team:REPO/KEY`` (percent-encoded)."""
    return f"{URI_SCHEME}:{quote(repo, safe='')}/{quote(key, safe='/')}"


def _sqlite_rows(path: Path) -> Iterator[list[tuple[str, str, str]]]:
    """The entries of the server's SQLite database, read through its storage engine opened
    read-only (nothing created, nothing changed; see ``SQLiteStorage(read_only=True)``)."""
    from memframe.server.sqlite import SQLiteStorage

    try:
        storage = SQLiteStorage(path, read_only=True)
    except FileNotFoundError:
        raise TeamDbError(f"{path}: no such database file") from None
    started = False
    try:
        for rows in storage.iter_entries(batch=BATCH_ENTRIES):
            started = True
            yield rows
    except sqlite3.DatabaseError as exc:
        if "no such table" in str(exc):
            raise TeamDbError(
                f"{path}: not a memframe team database (no 'entries' table)"
            ) from None
        if not started:
            raise TeamDbError(f"{path}: not a readable SQLite database ({exc})") from None
        raise TeamDbError(f"{path}: cannot read the entries ({exc})") from None
    finally:
        storage.close()


def _postgres_rows(url: str) -> Iterator[list[tuple[str, str, str]]]:
    """The entries of the servers' PostgreSQL database, read through the storage engine opened
    read-only: one read-only transaction (one snapshot), a server-side cursor."""
    try:
        import psycopg

        from memframe.server.postgres import PostgresStorage, PostgresUnavailableError, scrub
    except ImportError:
        raise TeamDbError(
            "scanning a PostgreSQL team database needs psycopg: pip install 'memframe[server]'"
        ) from None
    try:
        storage = PostgresStorage(
            url, read_only=True, application_name="memframe-scan", timeout=10.0, max_connections=1
        )
    except (ValueError, PostgresUnavailableError) as exc:
        raise TeamDbError(str(exc)) from None
    where = f"PostgreSQL at {storage.where}"
    try:
        yield from storage.iter_entries(batch=BATCH_ENTRIES)
    except psycopg.errors.UndefinedTable:
        raise TeamDbError(f"{where}: not a memframe team database (no 'entries' table)") from None
    except (psycopg.Error, PostgresUnavailableError) as exc:
        message = scrub(str(exc), storage.target)
        raise TeamDbError(f"{where}: cannot read the entries ({message})") from None
    finally:
        storage.close()


def scan_team_db(
    scanner: SecretScanner,
    source: TeamDbSource,
    *,
    known_rules: Collection[str],
    threads: int | None = None,
    keep_redactions: bool = False,
    on_entries: Callable[[int, int], None] | None = None,
) -> TeamDbResult:
    """Scan every entry of the database ``source``.

    :raises TeamDbError: missing file, not SQLite, unreachable PostgreSQL, or no ``entries``
        table.
    """
    result = TeamDbResult()
    batches = _sqlite_rows(source) if isinstance(source, Path) else _postgres_rows(source)
    for rows in batches:
        texts = [row[2] for row in rows]
        size = sum(len(t) for t in texts)
        for (repo, key, text), found in zip(
            rows, scanner.find_many(texts, threads=threads), strict=True
        ):
            if not found:
                continue
            result.hits.extend(
                text_hits(
                    text,
                    found,
                    path=f"{repo}:{key}",
                    uri=entry_uri(repo, key),
                    known_rules=known_rules,
                )
            )
            if keep_redactions:
                spans = [(f.secret_start, f.secret_end) for f in found]
                result.redactions[(repo, key)] = (text, spans)
        result.entries += len(rows)
        result.bytes += size
        if on_entries is not None:
            on_entries(len(rows), size)
    return result
