"""Session state: atomic, private, and never lost."""

from __future__ import annotations

import logging
import os
import stat
import time

import pytest

from memframe.state import SessionState


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def state_path(tmp_path):
    return tmp_path / "sessions" / "s1" / "state.json"


def test_new_state_is_empty_and_not_written_until_saved(state_path):
    state = SessionState(state_path)
    assert state.snapshot() == {}
    assert not state_path.exists()


def test_round_trip(state_path):
    state = SessionState(state_path)
    notes = state.section("session_memory")
    notes["initialised"] = True
    notes["tokens_at_last_update"] = 12_345
    state.section("memdir")["files"] = ["a.md", "b.md"]
    state.section("unicode")["text"] = "記憶 ✓"
    state.save()
    again = SessionState(state_path)
    assert again.snapshot() == {
        "session_memory": {"initialised": True, "tokens_at_last_update": 12_345},
        "memdir": {"files": ["a.md", "b.md"]},
        "unicode": {"text": "記憶 ✓"},
    }
    assert again.section("memdir") is again.section("memdir")  # the live dict, not a copy


def test_snapshot_is_a_deep_copy(state_path):
    state = SessionState(state_path)
    state.section("layer")["items"] = [1]
    snapshot = state.snapshot()
    snapshot["layer"]["items"].append(2)
    assert state.section("layer")["items"] == [1]


def test_save_is_private(state_path):
    state = SessionState(state_path)
    state.section("layer")["secret"] = "value"
    state.save()
    assert mode(state_path) == 0o600
    assert mode(state_path.parent) == 0o700


def test_save_keeps_the_mode_of_an_existing_directory(state_path):
    """memframe tightens only what it creates: the file is 0600, the existing folder stays."""
    state_path.parent.mkdir(parents=True, mode=0o755)
    state_path.parent.chmod(0o755)
    SessionState(state_path).save()
    assert mode(state_path.parent) == 0o755
    assert mode(state_path) == 0o600


def test_a_section_that_is_not_an_object(state_path):
    state_path.parent.mkdir(parents=True)
    state_path.write_text('{"layer": [1, 2]}', encoding="utf-8")
    with pytest.raises(TypeError, match="'layer' is list"):
        SessionState(state_path).section("layer")


@pytest.mark.parametrize("content", [b"{truncated", b"", b"[1, 2, 3]", b'"text"', b"\xff\xfe"])
def test_a_corrupt_state_file_is_moved_aside(state_path, caplog, content):
    state_path.parent.mkdir(parents=True)
    state_path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="memframe"):
        state = SessionState(state_path)
    assert state.snapshot() == {}
    assert not state_path.exists()
    (aside,) = state_path.parent.glob("state.json.corrupt-*")
    assert aside.read_bytes() == content  # nothing lost
    (record,) = [r for r in caplog.records if r.name == "memframe"]
    assert record.levelno == logging.WARNING
    assert str(aside) in record.getMessage()
    # The session carries on, and saving writes a fresh file next to the kept one.
    state.section("layer")["fresh"] = True
    state.save()
    assert SessionState(state_path).snapshot() == {"layer": {"fresh": True}}
    assert aside.read_bytes() == content


def test_corrupt_files_moved_aside_never_overwrite_each_other(state_path):
    """Two corrupt files within one second (or an earlier copy with the same name) all survive."""
    state_path.parent.mkdir(parents=True)
    now = int(time.time())
    earlier = {}
    for second in range(now - 1, now + 30):
        path = state_path.with_name(f"state.json.corrupt-{second}")
        path.write_bytes(f"earlier {second}".encode())
        earlier[path] = path.read_bytes()
    state_path.write_bytes(b"{first")
    SessionState(state_path)
    state_path.write_bytes(b"{second")
    SessionState(state_path)
    for path, content in earlier.items():
        assert path.read_bytes() == content
    kept = {p.read_bytes() for p in state_path.parent.glob("state.json.corrupt-*")}
    assert {b"{first", b"{second"} <= kept


def test_a_crash_mid_write_keeps_the_old_file(state_path, monkeypatch):
    state = SessionState(state_path)
    state.section("layer")["version"] = 1
    state.save()
    before = state_path.read_bytes()

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    state.section("layer")["version"] = 2
    with pytest.raises(OSError, match="No space left"):
        state.save()
    monkeypatch.undo()

    assert state_path.read_bytes() == before
    assert sorted(p.name for p in state_path.parent.iterdir()) == ["state.json"]  # no temp files
    assert SessionState(state_path).snapshot() == {"layer": {"version": 1}}


def test_a_failing_write_leaves_no_temp_file(state_path):
    state = SessionState(state_path)
    state.section("layer")["bad"] = {1, 2}  # a set is not JSON
    with pytest.raises(TypeError):
        state.save()
    assert not state_path.parent.exists() or list(state_path.parent.iterdir()) == []
