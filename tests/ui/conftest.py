"""``memframe ui`` served on 127.0.0.1 over a populated memory: memories of every type and
scope, one holding a real-looking secret (from the rule vectors, never written out here), a
session with notes and extraction records, a Magic Doc, team sync configured (no server needed:
the status is local) and a recorded consolidation."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("jinja2")

from memframe._fs import atomic_write_text
from memframe.frame import MemoryFrame
from memframe.layers.dream import DreamResult
from memframe.memdir import MemoryStore, locate
from memframe.memdir.files import render_memory
from memframe.scanner import default_scanner
from memframe.scanning.gate import gate_findings
from memframe.testing import open_test_frame
from memframe.ui import data
from memframe.ui.server import RunningUi, start
from tests.native.vectors import Vector, positives

DAY = 86_400.0
SECRET_FILE = "deploy-notes.md"
SESSION_ID = "2025-ui-session"


def gated_vector() -> Vector:
    """A positive rule vector that the team gate refuses on its own (the first that does,
    preferring a GitHub token: a well-known shape in a screenshot)."""
    scanner = default_scanner()
    candidates = sorted(positives(), key=lambda v: (not v.rule_id.startswith("github"), v.rule_id))
    for vector in candidates:
        if "\n" in vector.text or len(vector.text) > 200:
            continue
        if vector.rule_id in {f.rule_id for f in gate_findings(scanner, "x.md", vector.text)}:
            return vector
    raise AssertionError("no positive vector is refused by the gate")


@dataclass
class UiProject:
    frame: MemoryFrame
    store: MemoryStore
    ui: RunningUi
    secret_rule: str
    tmp_path: Path

    @property
    def origin(self) -> str:
        return self.ui.origin

    def path(self, relative: str) -> Path:
        return self.store.root / relative


def _write_by_hand(store: MemoryStore, relative: str, text: str, age_days: float = 0) -> None:
    """A memory file written as an agent or a person would (not through ``add``, which would
    redact a secret), then indexed."""
    path = store.root / relative
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write_text(path, text)
    if age_days:
        when = time.time() - age_days * DAY
        os.utime(path, (when, when))
    store.reindex([path])


def populate(frame: MemoryFrame, store: MemoryStore) -> str:
    """Fill the memory, a session and the dream history; returns the secret's rule id."""
    store.add(
        "Run the suite with ./dev test",
        "how to run every test here",
        "project",
        "Use `./dev test` for **everything**; a single file runs with `.venv/bin/pytest PATH`.",
    )
    store.add(
        "Prefers terse answers",
        "tone of replies",
        "user",
        "Keep replies short. Markup such as <script>alert('x')</script> is shown as text.",
    )
    store.add(
        "Never mock the database",
        "integration tests hit a real database",
        "feedback",
        "We got burned when mocked tests passed and the migration failed in production.\n\n"
        "- use the PostgreSQL from `scripts/test-postgres`\n- never `unittest.mock` the pool",
    )
    store.add(
        "Release checklist",
        "where the release steps live",
        "reference",
        "See `docs/release.md`; tag with `git tag vX.Y.Z`.",
        scope="team",
    )
    _write_by_hand(
        store,
        "old-port.md",
        render_memory(
            "Dev server port",
            "the local server's port",
            "project",
            "The dev server listens on port 8080.",
        ),
        age_days=40,
    )
    vector = gated_vector()
    _write_by_hand(
        store,
        SECRET_FILE,
        render_memory(
            "Deploy notes",
            "how the staging deploy authenticates",
            "project",
            f"Staging deploys authenticate with this token:\n\n{vector.text}\n",
        ),
    )
    _write_by_hand(  # in team/ already: the team sync status shows it blocked
        store,
        "team/ci-credentials.md",
        render_memory(
            "CI credentials",
            "what the CI job logs in with",
            "reference",
            f"The CI job logs in with {vector.text}",
        ),
    )
    # a session with notes, extraction records and a Magic Doc
    session = frame.project_home / SESSION_ID
    notes = session / "session-memory" / "summary.md"
    notes.parent.mkdir(parents=True, mode=0o700)
    notes.write_text(
        "# Session Title\n_A short title_\n\nAdd a web view of the memory\n\n"
        "# Current State\n_What is being worked on_\n\nThe **browser test** passes; "
        "screenshots go to `docs/ui/`.\n\n"
        "# Files and Functions\n- `memframe/ui/app.py` — the routes\n"
        "- `memframe/ui/markdown.py` — safe Markdown\n  - escapes <b>every</b> tag\n\n"
        "# Worklog\n1. wrote the store methods\n2. wrote the pages\n",
        encoding="utf-8",
    )
    now = time.time()
    doc = frame.project_dir / "ARCHITECTURE.md"
    doc.write_text("# MAGIC DOC: Architecture\n_Keep the module map current_\n", encoding="utf-8")
    state = {
        "session_memory": {
            "extractions": [
                {
                    "reason": "tool_calls",
                    "status": "updated",
                    "context_tokens": 14_200,
                    "turns": 2,
                    "started_at": now - 900,
                    "finished_at": now - 890,
                },
                {
                    "reason": "idle_turn",
                    "status": "unchanged",
                    "context_tokens": 19_800,
                    "turns": 1,
                    "started_at": now - 300,
                    "finished_at": now - 296,
                },
            ]
        },
        "extract_memories": {
            "runs": [
                {
                    "status": "saved",
                    "saved": ["never-mock-the-database.md"],
                    "started_at": now - 600,
                    "finished_at": now - 590,
                }
            ]
        },
        "magic_docs": {
            "docs": {
                str(doc): {
                    "title": "Architecture",
                    "updates": 3,
                    "last_update": now - 7200,
                    "registered_at": now - 86_000,
                }
            }
        },
    }
    (session / "state.json").write_bytes(orjson.dumps(state))
    data.record_dream(
        store.root,
        DreamResult(
            True,
            "consolidated",
            deleted=["dev-server-port-2.md"],
            written=["old-port.md"],
            memories=6,
            report=[
                "merged dev-server-port-2.md into old-port.md (the same statement)",
                "kept newer 'never mock the database' over older 'mock the database'",
            ],
        ),
        source="session end",
        at=now - 3 * DAY,
    )
    return vector.rule_id


@pytest.fixture
def ui_project(tmp_path: Path) -> Iterator[UiProject]:
    config = tmp_path / "config"
    config.mkdir()
    settings = {
        "team_sync": {"server": "http://127.0.0.1:9", "repo": "acme/app", "token": "ui-tests"}
    }
    (config / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    frame = open_test_frame(tmp_path)
    store = MemoryStore(locate(frame).path)
    rule = populate(frame, store)
    ui = start(frame)
    try:
        yield UiProject(frame, store, ui, rule, tmp_path)
    finally:
        ui.stop()
        frame.close()
