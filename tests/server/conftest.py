"""Storage fixtures for the team memory server: every test runs on SQLite and on PostgreSQL.

PostgreSQL comes from ``MEMFRAME_TEST_POSTGRES`` (``./dev test`` starts a throwaway server with
``scripts/test-postgres`` and exports it); each test gets a database of its own, dropped after.
Without the variable the PostgreSQL variants are skipped.

- ``storage_url``: a URL for ``memframe.server.open_storage`` or ``memframe serve --db URL``
- ``storage``: an open storage engine on that URL, closed after the test
- ``postgres_url``: a fresh PostgreSQL database only (for replica tests)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from memframe.server import open_storage
from memframe.server.storage import Storage

# Read at import: the root conftest's autouse fixture removes every MEMFRAME_* variable from the
# environment each test runs in.
POSTGRES_URL = os.environ.get("MEMFRAME_TEST_POSTGRES", "")
SKIP_POSTGRES = (
    "MEMFRAME_TEST_POSTGRES is not set: no PostgreSQL to test against "
    '(`./dev test` starts one; or `eval "$(scripts/test-postgres)"`)'
)
ENGINES = ["sqlite", "postgres"]


def _database_url(server_url: str, database: str) -> str:
    """``server_url`` (a postgresql:// URL) naming ``database`` instead."""
    return urlsplit(server_url)._replace(path=f"/{database}").geturl()


def fresh_postgres_database() -> Iterator[str]:
    """A new, empty database on the test server: its URL, then it is dropped."""
    if not POSTGRES_URL:
        pytest.skip(SKIP_POSTGRES)
    import psycopg

    name = f"memframe_t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=10) as admin:
        admin.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
    try:
        yield _database_url(POSTGRES_URL, name)
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=10) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url() -> Iterator[str]:
    yield from fresh_postgres_database()


@pytest.fixture(params=ENGINES)
def storage_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'team.db'}"
    else:
        yield from fresh_postgres_database()


@pytest.fixture
def storage(storage_url: str) -> Iterator[Storage]:
    engine = open_storage(storage_url)
    try:
        yield engine
    finally:
        engine.close()
