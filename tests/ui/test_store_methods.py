"""``MemoryStore.edit`` and ``MemoryStore.move``: the edits the UI makes (and the CLI and MCP can
share), atomic, locked and indexed like every other write of the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from memframe._fs import atomic_write_text
from memframe.memdir import MemoryFormatError, MemoryStore
from memframe.memdir.files import render_memory
from memframe.memdir.index import indexed_files
from memframe.memdir.store import SecretGateError
from tests.ui.conftest import gated_vector


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    store = MemoryStore(tmp_path / "memory")
    store.add("Use uv", "package manager", "project", "Install packages with uv.")
    store.add("Short answers", "tone", "user", "Keep answers short.")
    return store


def test_edit_rewrites_the_given_fields_and_the_index_line(store: MemoryStore) -> None:
    saved = store.edit("use-uv.md", description="how to install", body="Install with `uv add`.")
    assert saved.name == "Use uv"  # kept
    assert saved.type == "project"
    assert saved.description == "how to install"
    assert saved.body == "Install with `uv add`."
    assert store.find("Use uv").body == "Install with `uv add`."
    line = indexed_files(store.index_text())["team/use-uv.md"]
    assert "how to install" in line
    assert not list(store.root.rglob("*.tmp*"))


def test_edit_redacts_like_add(store: MemoryStore) -> None:
    secret = gated_vector()
    saved = store.edit("use-uv.md", body=f"token: {secret.text}\nmail me at dana.lee@fastmail.fm")
    assert secret.secret not in saved.body
    assert "dana.lee@fastmail.fm" not in saved.body
    assert "[REDACTED]" in saved.body


def test_edit_refuses_what_add_refuses(store: MemoryStore) -> None:
    with pytest.raises(MemoryFormatError, match="already remembered"):
        store.edit("use-uv.md", body="Keep answers short.")
    with pytest.raises(MemoryFormatError, match="memory type"):
        store.edit("use-uv.md", kind="opinion")
    with pytest.raises(MemoryFormatError, match="always private"):
        store.edit("use-uv.md", kind="user")  # it lives in team/
    with pytest.raises(MemoryFormatError, match="needs a name"):
        store.edit("use-uv.md", name="  ")
    with pytest.raises(KeyError):
        store.edit("nothing.md", body="x")
    assert store.find("use-uv.md").body == "Install packages with uv."


def test_move_between_private_and_team(store: MemoryStore) -> None:
    private = store.move("team/use-uv.md", "private")
    assert private.path == store.root / "use-uv.md"
    assert not (store.root / "team" / "use-uv.md").exists()
    files = indexed_files(store.index_text())
    assert "use-uv.md" in files and "team/use-uv.md" not in files
    back = store.move("use-uv.md", "team")
    assert back.relative_to(store.root) == "team/use-uv.md"
    assert store.move("team/use-uv.md", "team").path == back.path  # already there
    assert sorted(indexed_files(store.index_text())) == ["short-answers.md", "team/use-uv.md"]


def test_move_keeps_an_existing_file_of_that_name(store: MemoryStore) -> None:
    store.add("Lint", "linting", "feedback", "Run ruff before committing.")
    atomic_write_text(
        store.root / "team" / "lint.md", render_memory("Other", "", "project", "Other text.")
    )
    moved = store.move("lint.md", "team")
    assert moved.relative_to(store.root) == "team/lint-2.md"
    assert (store.root / "team" / "lint.md").read_text().count("Other text.") == 1


def test_move_to_team_passes_the_secret_gate(store: MemoryStore) -> None:
    vector = gated_vector()
    path = store.root / "creds.md"
    atomic_write_text(path, render_memory("Creds", "", "project", f"The token: {vector.text}"))
    store.reindex([path])
    before = path.read_bytes()
    with pytest.raises(SecretGateError) as refused:
        store.move("creds.md", "team")
    assert vector.rule_id in refused.value.rule_ids
    assert "stays private" in str(refused.value)
    assert path.read_bytes() == before
    assert not (store.root / "team" / "creds.md").exists()
    assert "creds.md" in indexed_files(store.index_text())


def test_user_memories_stay_private(store: MemoryStore) -> None:
    with pytest.raises(MemoryFormatError, match="always private"):
        store.move("short-answers.md", "team")
    with pytest.raises(MemoryFormatError, match="scope must be"):
        store.move("short-answers.md", "public")
