"""``MemoryCommands``: the Anthropic memory-tool commands on a memory directory, without MCP."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from memframe.mcp.memory_tool import MemoryCommandError, MemoryCommands
from memframe.memdir import MemoryStore
from memframe.memdir.index import MAX_LINES, indexed_files
from memframe.scanner import default_scanner
from tests.native.vectors import positives


def _aws_key() -> str:
    return next(v.secret for v in positives() if v.rule_id == "aws-access-token")


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "memory")


@pytest.fixture
def commands(store: MemoryStore) -> MemoryCommands:
    return MemoryCommands(store, default_scanner())


def test_create_adds_frontmatter_and_an_index_line(commands, store):
    result = commands.create("/memories/deploys.md", "Deploys go out on Tuesdays.\n")
    assert result.startswith("File created successfully at: /memories/deploys.md")
    assert "added frontmatter" in result
    text = (store.root / "deploys.md").read_text()
    assert text.startswith("---\nname: deploys\ndescription: Deploys go out on Tuesdays.\n")
    assert "type: project" in text
    assert (store.root / "deploys.md").stat().st_mode & 0o777 == 0o600
    assert store.root.stat().st_mode & 0o777 == 0o700
    line = indexed_files(store.index_text())["deploys.md"]
    assert line == "- [deploys](deploys.md) — Deploys go out on Tuesdays."
    with pytest.raises(MemoryCommandError, match="already exists"):
        commands.create("/memories/deploys.md", "again")


def test_a_complete_frontmatter_is_kept_as_written(commands, store):
    text = "---\nname: Tabs\ndescription: Go style\ntype: feedback\n---\n\nUse tabs in Go.\n"
    result = commands.create("/memories/tabs.md", text)
    assert "Note" not in result
    assert (store.root / "tabs.md").read_text() == text


def test_a_broken_frontmatter_is_repaired_keeping_other_fields(commands, store):
    text = "---\nname: Tabs\ntype: note\nowner: ana\n---\n\nUse tabs in Go.\n"
    result = commands.create("/memories/tabs.md", text)
    assert "repaired frontmatter: added description" in result
    assert "type 'note' is not one of" in result
    saved = (store.root / "tabs.md").read_text()
    assert "type: project" in saved and "owner: ana" in saved
    assert "description: Use tabs in Go." in saved


def test_view_numbers_lines_and_takes_a_range(commands):
    commands.create("/memories/a.md", "---\nname: a\ndescription: d\ntype: user\n---\n\n1\n2\n3\n")
    whole = commands.view("/memories/a.md")
    assert whole.splitlines()[1] == "     1\t---"
    part = commands.view("/memories/a.md", [7, -1])
    assert part.splitlines()[1:] == ["     7\t1", "     8\t2", "     9\t3"]
    with pytest.raises(MemoryCommandError, match="outside the file"):
        commands.view("/memories/a.md", [20, 30])
    listing = commands.view("/memories")
    assert "/memories/a.md" in listing and "/memories/MEMORY.md" in listing
    assert ".memframe.lock" not in listing
    with pytest.raises(MemoryCommandError, match="does not exist"):
        commands.view("/memories/missing.md")


def test_str_replace_and_insert_keep_the_index_right(commands, store):
    commands.create("/memories/db.md", "---\nname: DB\ndescription: old\ntype: project\n---\n\nx\n")
    edited = commands.str_replace("/memories/db.md", "description: old", "description: Postgres 16")
    assert "has been edited" in edited and "description: Postgres 16" in edited
    assert indexed_files(store.index_text())["db.md"].endswith("— Postgres 16")
    commands.insert("/memories/db.md", 7, "qq")
    assert (store.root / "db.md").read_text().endswith("\nx\nqq\n")
    with pytest.raises(MemoryCommandError, match="did not appear verbatim"):
        commands.str_replace("/memories/db.md", "nowhere", "z")
    commands.insert("/memories/db.md", 8, "qq")
    with pytest.raises(MemoryCommandError, match=r"occurs 2 times .*lines 8, 9"):
        commands.str_replace("/memories/db.md", "qq", "z")
    with pytest.raises(MemoryCommandError, match="between 0 and 9"):
        commands.insert("/memories/db.md", 10, "z")


def test_rename_and_delete(commands, store):
    commands.create("/memories/api.md", "The API lives at api.internal.\n")
    result = commands.rename("/memories/api.md", "/memories/team/api.md")
    assert result == "Successfully renamed /memories/api.md to /memories/team/api.md"
    assert not (store.root / "api.md").exists()
    assert set(indexed_files(store.index_text())) == {"team/api.md"}
    assert commands.delete("/memories/team/api.md") == "Successfully deleted /memories/team/api.md"
    assert indexed_files(store.index_text()) == {}
    with pytest.raises(MemoryCommandError, match="does not exist"):
        commands.delete("/memories/team/api.md")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/memories/../outside.md", "path traversal"),
        ("/memories/team/../../x.md", "path traversal"),
        ("/etc/passwd", "must start with /memories"),
        ("/memories/.hidden.md", "hidden"),
        ("/memories/MEMORY.md", "index memframe keeps"),
        ("/memories/notes.txt", "cannot be a memory file"),
        ("/memories/a/b.md", "cannot be a memory file"),
        ("/memories", "itself"),
    ],
)
def test_writes_outside_memory_files_are_refused(commands, store, path, reason):
    with pytest.raises(MemoryCommandError, match=reason):
        commands.create(path, "text")
    assert not any(p.name == "outside.md" for p in store.root.parent.rglob("*"))


def test_symlinks_are_refused(commands, store, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("secret plans\n")
    commands.create("/memories/real.md", "a real memory\n")
    (store.root / "link.md").symlink_to(outside)
    (store.root / "inner.md").symlink_to(store.root / "real.md")
    with pytest.raises(MemoryCommandError, match="outside /memories through a symlink"):
        commands.view("/memories/link.md")
    with pytest.raises(MemoryCommandError, match="outside /memories through a symlink"):
        commands.str_replace("/memories/link.md", "secret", "public")
    with pytest.raises(MemoryCommandError, match="is a symlink"):
        commands.str_replace("/memories/inner.md", "real", "fake")
    assert outside.read_text() == "secret plans\n"
    assert "link.md" not in commands.view("/memories")


def test_a_team_write_holding_a_secret_is_refused_with_the_rule(commands, store):
    key = _aws_key()
    with pytest.raises(MemoryCommandError, match="aws-access-token") as refused:
        commands.create("/memories/team/creds.md", f"The deploy key is {key}\n")
    assert "Nothing was written" in str(refused.value)
    assert not (store.root / "team" / "creds.md").exists()
    encoded = base64.b64encode(f"key={key}".encode()).decode()
    with pytest.raises(MemoryCommandError, match="aws-access-token in the base64"):
        commands.create("/memories/team/b.md", f"blob {encoded}\n")
    ok = "---\nname: ok\ndescription: where the key is\ntype: reference\n---\n\nIn the vault.\n"
    commands.create("/memories/team/ok.md", ok)
    with pytest.raises(MemoryCommandError, match="aws-access-token"):
        commands.str_replace("/memories/team/ok.md", "In the vault.", key)
    (store.root / "private.md").write_text(f"my key {key}\n")  # written by hand, not redacted
    with pytest.raises(MemoryCommandError, match="aws-access-token"):
        commands.rename("/memories/private.md", "/memories/team/private.md")
    assert (store.root / "private.md").exists()


def test_private_writes_are_redacted(commands, store):
    key = _aws_key()
    result = commands.create("/memories/me.md", f"Key {key}; mail ana.lopez@fastmail.fm\n")
    assert "redacted before saving: aws-access-token, email" in result
    text = (store.root / "me.md").read_text()
    assert key not in text and "ana.lopez@fastmail.fm" not in text and "[REDACTED]" in text


def test_user_memories_stay_private(commands):
    with pytest.raises(MemoryCommandError, match="always private"):
        commands.create("/memories/team/me.md", "---\nname: me\ndescription: d\ntype: user\n---\nI")


def test_a_duplicate_is_refused(commands):
    commands.create("/memories/a.md", "Same words.\n")
    with pytest.raises(MemoryCommandError, match=r"duplicate of a\.md"):
        commands.create("/memories/b.md", "same   WORDS.\n")


def test_an_index_past_its_limits_is_rebuilt(commands, store):
    store.root.mkdir(mode=0o700)
    filler = "".join(f"- note {n}\n" for n in range(MAX_LINES + 5))
    (store.root / "MEMORY.md").write_text("# Memory index\n" + filler)
    result = commands.create("/memories/new.md", "A new memory.\n")
    assert "was rebuilt within them" in result
    assert len(store.index_text().splitlines()) <= MAX_LINES
    assert "new.md" in indexed_files(store.index_text())


def test_execute_dispatches_tool_input(commands):
    assert commands.execute({"command": "create", "path": "/memories/x.md", "file_text": "x y"})
    assert "x y" in commands.execute({"command": "view", "path": "/memories/x.md"})
    with pytest.raises(MemoryCommandError, match="needs `file_text`"):
        commands.execute({"command": "create", "path": "/memories/y.md"})
    with pytest.raises(MemoryCommandError, match="unknown command"):
        commands.execute({"command": "clear"})
    assert not os.path.exists(commands.store.root / "y.md")
