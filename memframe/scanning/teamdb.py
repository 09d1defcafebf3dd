"""The team server's SQLite database: every entry (``entries(repo, key, text)``) is scanned.

The database is opened read-only (a missing file is an error, never created; no ``-wal``/``-shm``
file is left behind) and streamed in batches; a finding's location is ``repo:key:line``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from memframe.scanner import SecretScanner
from memframe.scanning.hits import Hit, text_hits

URL_PREFIX = "sqlite:///"
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


def db_path(argument: str) -> Path | None:
    """The database path of a ``sqlite:///PATH`` argument (as ``memframe serve --db`` reads it),
    or None when ``argument`` is not such a URL."""
    if not argument.startswith(URL_PREFIX):
        return None
    return Path(argument.removeprefix(URL_PREFIX)).expanduser()


def entry_uri(repo: str, key: str) -> str:
    """The SARIF artifact URI of a team entry: ``memframe-team:REPO/KEY`` (percent-encoded)."""
    return f"{URI_SCHEME}:{quote(repo, safe='')}/{quote(key, safe='/')}"


def _open_mode(path: Path) -> str:
    """Read-only URI parameters. Without a ``-wal`` file (no server has the database open, every
    write is in the main file) the database is opened immutable, so SQLite creates no ``-wal``
    or ``-shm`` file beside it; with one, a plain read-only open sees the server's latest
    writes."""
    wal = path.with_name(path.name + "-wal")
    return "mode=ro" if wal.exists() else "mode=ro&immutable=1"


def _open(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise TeamDbError(f"{path}: no such database file")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?{_open_mode(path)}", uri=True)
        tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    except sqlite3.DatabaseError as exc:
        raise TeamDbError(f"{path}: not a readable SQLite database ({exc})") from None
    if "entries" not in tables:
        db.close()
        raise TeamDbError(f"{path}: not a memframe team database (no 'entries' table)")
    return db


def _rows(db: sqlite3.Connection) -> Iterator[list[tuple[str, str, str]]]:
    cursor = db.execute("SELECT repo, key, text FROM entries ORDER BY repo, key")
    while rows := cursor.fetchmany(BATCH_ENTRIES):
        yield rows


def scan_team_db(
    scanner: SecretScanner,
    path: Path,
    *,
    known_rules: Collection[str],
    threads: int | None = None,
    keep_redactions: bool = False,
    on_entries: Callable[[int, int], None] | None = None,
) -> TeamDbResult:
    """Scan every entry of the database at ``path``.

    :raises TeamDbError: missing file, not SQLite, or no ``entries`` table.
    """
    db = _open(path)
    result = TeamDbResult()
    try:
        for rows in _rows(db):
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
    except sqlite3.DatabaseError as exc:
        raise TeamDbError(f"{path}: cannot read the entries ({exc})") from None
    finally:
        db.close()
    return result
