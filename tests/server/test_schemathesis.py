"""Property-based requests generated from the server's own OpenAPI description (schemathesis, a
bounded run): whatever arrives, the server never answers 5xx and its responses match the
description."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from memframe.server.app import start_server
from memframe.server.openapi import OPENAPI
from memframe.server.sqlite import SQLiteStorage
from memframe.server.storage import hash_token

TOKEN = "mft_schemathesis"


@pytest.fixture
def api_schema(tmp_path):
    storage = SQLiteStorage(tmp_path / "team.db")
    storage.add_token("fuzz", hash_token(TOKEN), ("*",))
    with start_server(storage, max_entries=50) as running:
        loaded = schemathesis.openapi.from_dict(OPENAPI)
        loaded.config.update(base_url=running.url)
        yield loaded
    storage.close()


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same bounded run every time (random runs were clean 6 times out of 6)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
def test_no_5xx_and_responses_conform(case):
    case.call_and_validate(
        headers={"Authorization": f"Bearer {TOKEN}"},
        # random If-Match values are stale by construction: 412 is the right answer to them
        excluded_checks=[schemathesis.checks.positive_data_acceptance],
    )
