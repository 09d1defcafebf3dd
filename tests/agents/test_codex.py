"""``memframe hook --agent codex`` and ``install-hooks --agent codex``, as Codex CLI runs them:
its stdin fields (``turn_id``, ``model``, a ``transcript_path`` that may be ``null``), a real
rollout growing as the session goes on (public logs: tests/data/transcripts/README.md), and
``apply_patch`` into team memory."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import DAAAIN_ROLLOUT, SIMONW_ROLLOUT, AgentEnv, aws_secret


def _session_id(rollout: Path) -> str:
    first = json.loads(rollout.read_text(encoding="utf-8").splitlines()[0])
    session_id: str = first["payload"]["id"]
    return session_id


def _payload(env: AgentEnv, session: str, event: str, path: Path | None, **fields: Any) -> Any:
    return {
        "session_id": session,
        "transcript_path": str(path) if path is not None else None,
        "cwd": str(env.project),
        "hook_event_name": event,
        "model": "gpt-5-codex",
        "permission_mode": "default",
        **fields,
    }


@pytest.mark.parametrize("rollout", [SIMONW_ROLLOUT, DAAAIN_ROLLOUT], ids=["simonw", "daaain"])
def test_a_codex_session_writes_session_notes(agent_env, rollout):
    session = _session_id(rollout)
    path = agent_env.root / "codex" / "sessions" / "2026" / "01" / "02" / rollout.name
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")

    # Codex may start a session before its rollout exists: transcript_path is null then
    start = agent_env.agent_hook(
        "codex", _payload(agent_env, session, "SessionStart", None, source="startup")
    )
    assert start.returncode == 0, start.stderr
    context = json.loads(start.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert "## MEMORY.md" in context["additionalContext"]

    lines = rollout.read_text(encoding="utf-8").splitlines()
    half = len(lines) // 2
    for chunk in (lines[:half], lines[half:]):
        with path.open("a", encoding="utf-8") as handle:
            handle.write("\n".join(chunk) + "\n")
        stop = agent_env.agent_hook(
            "codex",
            _payload(
                agent_env,
                session,
                "Stop",
                path,
                turn_id="turn-1",
                stop_hook_active=False,
                last_assistant_message=None,
            ),
        )
        assert stop.returncode == 0 and stop.stdout == b"", stop.stderr
    end = agent_env.agent_hook(
        "codex", _payload(agent_env, session, "SessionEnd", path, reason="other")
    )
    assert end.returncode == 0 and end.stdout == b""
    state = agent_env.wait_idle(session)

    assert state["ended"] is True
    assert state["stats"]["events"] > 0
    assert state["last_run"]["problems"] == []
    assert state["messages"] > 0
    notes = agent_env.paths(session).session_dir / "session-memory" / "summary.md"
    assert "# Worklog" in notes.read_text()
    runtime = json.loads((agent_env.paths(session).session_dir / "hook-runtime.json").read_text())
    assert runtime["reader"]["format"] == "codex"
    assert "ERROR" not in agent_env.log()


def test_a_transcript_in_no_known_format_is_reported(agent_env):
    session = "0199aaaa-1111-4111-8111-111111111111"
    path = agent_env.root / "other.jsonl"
    path.write_text(json.dumps({"kind": "something else", "n": 1}) + "\n")
    stop = agent_env.agent_hook("codex", _payload(agent_env, session, "Stop", path, turn_id="t"))
    assert stop.returncode == 0
    state = agent_env.wait_idle(session)
    problems = state["last_run"]["problems"]
    assert problems and "cannot be read" in problems[0] and "not a transcript" in problems[0]
    assert "WARNING" in agent_env.log() and "cannot be read" in agent_env.log()


def _patch(path: str, lines: list[str]) -> str:
    body = "\n".join("+" + line for line in lines)
    return f"*** Begin Patch\n*** Add File: {path}\n{body}\n*** End Patch\n"


def test_apply_patch_putting_a_secret_into_team_memory_is_refused(agent_env):
    team = agent_env.memory_dir() / "team"
    patch = _patch(str(team / "keys.md"), ["# keys", *aws_secret().splitlines()])
    payload = _payload(
        agent_env,
        "019b64e5-57fa-7463-b644-fba7e456f905",
        "PreToolUse",
        None,
        turn_id="turn-1",
        tool_name="apply_patch",
        tool_use_id="call_1",
        tool_input={"command": patch},  # how Codex hands the patch to hooks
    )
    result = agent_env.agent_hook("codex", payload)
    assert result.returncode == 2
    assert "aws-access-token" in result.stderr.decode()
    # the same patch outside team memory passes, and so does a clean one inside it
    elsewhere = _patch(str(agent_env.project / "keys.md"), aws_secret().splitlines())
    clean = _patch(str(team / "notes.md"), ["nothing secret here"])
    for text in (elsewhere, clean):
        payload["tool_input"] = {"command": text}
        passed = agent_env.agent_hook("codex", payload)
        assert passed.returncode == 0 and passed.stdout == b"", passed.stderr


def _codex_home(env: AgentEnv) -> Path:
    return env.root / "user" / ".codex"


def test_install_hooks_writes_codex_hooks_and_turns_them_on(agent_env):
    result = agent_env.install("--agent", "codex")
    assert result.returncode == 0, result.stderr
    hooks_file = _codex_home(agent_env) / "hooks.json"
    hooks = json.loads(hooks_file.read_text())["hooks"]
    assert set(hooks) == {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SubagentStop",
        "PreCompact",
    }
    for event, groups in hooks.items():
        assert len(groups) == 1
        (handler,) = groups[0]["hooks"]
        assert handler["type"] == "command" and handler["timeout"] == 30
        assert handler["command"].endswith("hook --agent codex")
        if event == "PreToolUse":
            assert "apply_patch" in groups[0]["matcher"]
    config = tomllib.loads((_codex_home(agent_env) / "config.toml").read_text())
    assert config["features"]["codex_hooks"] is True
    assert "/hooks" in result.stdout and "trust" in result.stdout

    again = agent_env.install("--agent", "codex")
    assert again.returncode == 0 and "already installed" in again.stdout
    assert json.loads(hooks_file.read_text())["hooks"] == hooks
    assert not (_codex_home(agent_env) / "hooks.json.bak-memframe").exists()


def test_install_keeps_other_hooks_and_settings_and_writes_through_symlinks(agent_env):
    home = _codex_home(agent_env)
    home.mkdir(parents=True)
    dotfiles = agent_env.root / "dotfiles"
    dotfiles.mkdir()
    theirs = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
    (dotfiles / "hooks.json").write_text(json.dumps(theirs))
    (dotfiles / "config.toml").write_text(
        'model = "gpt-5-codex"\n\n[features]\nweb_search = true\n'
    )
    os.symlink(dotfiles / "hooks.json", home / "hooks.json")
    os.symlink(dotfiles / "config.toml", home / "config.toml")

    assert agent_env.install("--agent", "codex").returncode == 0
    assert agent_env.install("--agent", "codex", "--timeout", "20").returncode == 0
    assert (home / "hooks.json").is_symlink() and (home / "config.toml").is_symlink()
    hooks = json.loads((dotfiles / "hooks.json").read_text())["hooks"]
    commands = [h["command"] for g in hooks["Stop"] for h in g["hooks"]]
    assert commands[0] == "notify-send done" and len(commands) == 2
    assert hooks["Stop"][1]["hooks"][0]["timeout"] == 20
    text = (dotfiles / "config.toml").read_text()
    config = tomllib.loads(text)
    assert config["model"] == "gpt-5-codex"
    assert config["features"] == {"web_search": True, "codex_hooks": True}
    backups = sorted(p.name for p in home.iterdir() if "bak-memframe" in p.name)
    assert backups == ["config.toml.bak-memframe", "hooks.json.bak-memframe"]

    removed = agent_env.install("--agent", "codex", "--uninstall")
    assert removed.returncode == 0
    assert json.loads((dotfiles / "hooks.json").read_text()) == theirs


def test_hooks_turned_off_on_purpose_stay_off_with_a_warning(agent_env):
    home = _codex_home(agent_env)
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[features]\nhooks = false\n")
    result = agent_env.install("--agent", "codex")
    assert result.returncode == 0
    assert "hooks = false" in result.stdout and "warning" in result.stdout
    assert (home / "config.toml").read_text() == "[features]\nhooks = false\n"


def test_an_unparsable_codex_file_is_refused_untouched(agent_env):
    home = _codex_home(agent_env)
    home.mkdir(parents=True)
    (home / "hooks.json").write_text("{not json")
    result = agent_env.install("--agent", "codex")
    assert result.returncode == 2
    assert (home / "hooks.json").read_text() == "{not json"
    (home / "hooks.json").unlink()
    (home / "config.toml").write_text("[features\n")
    assert agent_env.install("--agent", "codex").returncode == 2
    assert not (home / "hooks.json").exists()


def test_project_install_goes_into_the_projects_codex_dir(agent_env):
    result = agent_env.install("--agent", "codex", "--project", "--dir", str(agent_env.project))
    assert result.returncode == 0, result.stderr
    assert json.loads((agent_env.project / ".codex" / "hooks.json").read_text())["hooks"]
    assert (agent_env.project / ".codex" / "config.toml").exists()
