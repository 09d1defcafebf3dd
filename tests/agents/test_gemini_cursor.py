"""``memframe hook --agent gemini|cursor`` and their installs: each agent's event names and
fields in, its answer format out (per geminicli.com/docs/hooks and cursor.com/docs/hooks)."""

from __future__ import annotations

import json
from pathlib import Path

from memframe.memdir import MemoryStore
from tests.agents.conftest import AgentEnv, aws_secret

GEMINI_SESSION = "8f4e1c2a-1111-4111-8111-111111111111"
CURSOR_SESSION = "c0ffee00-2222-4222-8222-222222222222"


def _gemini(env: AgentEnv, event: str, **fields: object) -> dict[str, object]:
    return {
        "session_id": GEMINI_SESSION,
        "transcript_path": str(env.root / "gemini" / "session.json"),
        "cwd": str(env.project),
        "hook_event_name": event,
        "timestamp": "2026-01-02T03:04:05Z",
        **fields,
    }


def _cursor(env: AgentEnv, event: str, **fields: object) -> dict[str, object]:
    return {
        "conversation_id": CURSOR_SESSION,
        "generation_id": "gen-1",
        "hook_event_name": event,
        "workspace_roots": [str(env.project)],
        "model": "claude-sonnet",
        "cursor_version": "2.0.0",
        **fields,
    }


def _with_memory(env: AgentEnv) -> None:
    store = MemoryStore(env.memory_dir())
    store.add("Test command", "how to run the tests", "project", "Run the tests with pytest -q.")


# -- Gemini CLI ----------------------------------------------------------------------------------


def test_gemini_session_start_and_prompt_get_context_in_geminis_format(agent_env):
    _with_memory(agent_env)
    start = agent_env.agent_hook("gemini", _gemini(agent_env, "SessionStart", source="startup"))
    assert start.returncode == 0, start.stderr
    answer = json.loads(start.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "[Test command]" in answer["hookSpecificOutput"]["additionalContext"]
    prompt = agent_env.agent_hook(
        "gemini", _gemini(agent_env, "BeforeAgent", prompt="how do I run the tests?")
    )
    assert prompt.returncode == 0, prompt.stderr
    specific = json.loads(prompt.stdout)["hookSpecificOutput"]
    assert specific["hookEventName"] == "BeforeAgent"
    assert "pytest -q" in specific["additionalContext"]


def test_gemini_write_file_or_replace_of_a_secret_into_team_memory_is_refused(agent_env):
    target = str(agent_env.memory_dir() / "team" / "keys.md")
    calls = [
        ("write_file", {"file_path": target, "content": aws_secret()}),
        ("replace", {"file_path": target, "old_string": "a", "new_string": aws_secret()}),
    ]
    for tool, tool_input in calls:
        payload = _gemini(agent_env, "BeforeTool", tool_name=tool, tool_input=tool_input)
        result = agent_env.agent_hook("gemini", payload)
        assert result.returncode == 2, (tool, result.stderr)  # Gemini: exit 2 blocks the tool
        assert "aws-access-token" in result.stderr.decode()
        assert result.stdout == b""  # stdout must hold JSON or nothing
    clean = _gemini(
        agent_env,
        "BeforeTool",
        tool_name="write_file",
        tool_input={"file_path": target, "content": "nothing secret"},
    )
    assert agent_env.agent_hook("gemini", clean).returncode == 0


def test_geminis_json_transcript_is_reported_not_read_as_nothing(agent_env):
    path = agent_env.root / "gemini" / "session.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"sessionId": GEMINI_SESSION, "messages": []}, indent=2))
    result = agent_env.agent_hook("gemini", _gemini(agent_env, "AfterAgent", prompt="x"))
    assert result.returncode == 0 and result.stdout == b""  # AfterAgent exit 2 would retry
    state = agent_env.wait_idle(GEMINI_SESSION)
    assert "cannot be read" in state["last_run"]["problems"][0]
    assert "cannot be read" in agent_env.log()


def test_install_hooks_writes_geminis_settings(agent_env):
    settings = agent_env.root / "user" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"theme": "GitHub", "hooks": {"disabled": ["other"]}}))
    result = agent_env.install("--agent", "gemini")
    assert result.returncode == 0, result.stderr
    data = json.loads(settings.read_text())
    assert data["theme"] == "GitHub" and data["hooks"]["disabled"] == ["other"]
    events = set(data["hooks"]) - {"disabled"}
    assert events == {
        "SessionStart",
        "BeforeAgent",
        "BeforeTool",
        "AfterTool",
        "AfterAgent",
        "PreCompress",
        "SessionEnd",
    }
    for event in events:
        (group,) = data["hooks"][event]
        (handler,) = group["hooks"]
        assert handler["type"] == "command" and handler["name"] == "memframe"
        assert handler["timeout"] == 30_000  # milliseconds
        assert handler["command"].endswith("hook --agent gemini")
    assert data["hooks"]["BeforeTool"][0]["matcher"] == "write_file|replace"
    assert "already installed" in agent_env.install("--agent", "gemini").stdout
    agent_env.install("--agent", "gemini", "--uninstall")
    assert json.loads(settings.read_text()) == {"theme": "GitHub", "hooks": {"disabled": ["other"]}}


# -- Cursor --------------------------------------------------------------------------------------


def test_cursor_session_start_gets_context_in_cursors_format(agent_env):
    _with_memory(agent_env)
    start = agent_env.agent_hook("cursor", _cursor(agent_env, "sessionStart"))
    assert start.returncode == 0, start.stderr
    answer = json.loads(start.stdout)
    assert set(answer) == {"additional_context"}
    assert "[Test command]" in answer["additional_context"]


def test_cursor_write_of_a_secret_into_team_memory_is_denied(agent_env):
    target = str(agent_env.memory_dir() / "team" / "keys.md")
    for tool, tool_input in [
        ("Write", {"file_path": target, "contents": aws_secret()}),
        ("StrReplace", {"path": target, "old_string": "a", "new_string": aws_secret()}),
    ]:
        payload = _cursor(agent_env, "preToolUse", tool_name=tool, tool_input=tool_input)
        result = agent_env.agent_hook("cursor", payload)
        assert result.returncode == 2, (tool, result.stderr)
        answer = json.loads(result.stdout)
        assert answer["permission"] == "deny"
        assert "aws-access-token" in answer["agent_message"]
        assert "aws-access-token" in answer["user_message"]
    clean = _cursor(
        agent_env,
        "preToolUse",
        tool_name="Write",
        tool_input={"file_path": target, "contents": "ok"},
    )
    passed = agent_env.agent_hook("cursor", clean)
    assert passed.returncode == 0 and passed.stdout == b""


def test_cursor_without_a_transcript_is_reported(agent_env):
    stop = agent_env.agent_hook("cursor", _cursor(agent_env, "stop", status="completed"))
    assert stop.returncode == 0 and stop.stdout == b""
    state = agent_env.wait_idle(CURSOR_SESSION)
    assert state["last_run"]["problems"] == ["no transcript path in the hook input"]


def test_install_hooks_writes_cursors_hooks_json(agent_env):
    path = agent_env.project / ".cursor" / "hooks.json"
    path.parent.mkdir(parents=True)
    theirs = {"version": 1, "hooks": {"afterFileEdit": [{"command": "./hooks/format.sh"}]}}
    path.write_text(json.dumps(theirs))
    result = agent_env.install("--agent", "cursor", "--project", "--dir", str(agent_env.project))
    assert result.returncode == 0, result.stderr
    data = json.loads(path.read_text())
    assert data["version"] == 1
    assert data["hooks"]["afterFileEdit"] == theirs["hooks"]["afterFileEdit"]
    ours = {k: v for k, v in data["hooks"].items() if k != "afterFileEdit"}
    assert set(ours) == {
        "sessionStart",
        "preToolUse",
        "postToolUse",
        "preCompact",
        "stop",
        "sessionEnd",
    }
    for event, handlers in ours.items():
        (handler,) = handlers
        assert isinstance(handler["command"], str)
        assert handler["command"].endswith("hook --agent cursor")
        assert set(handler) <= {"command", "matcher"}, event
    assert "Write" in ours["preToolUse"][0]["matcher"]
    again = agent_env.install("--agent", "cursor", "--project", "--dir", str(agent_env.project))
    assert "already installed" in again.stdout
    agent_env.install(
        "--agent", "cursor", "--project", "--dir", str(agent_env.project), "--uninstall"
    )
    after = json.loads(path.read_text())
    assert after["hooks"] == theirs["hooks"]


def test_user_installs_land_in_each_agents_home(agent_env):
    user = agent_env.root / "user"
    for agent, rel in [("gemini", ".gemini/settings.json"), ("cursor", ".cursor/hooks.json")]:
        assert agent_env.install("--agent", agent).returncode == 0
        assert json.loads((user / rel).read_text())["hooks"]
    assert not Path(agent_env.root / "claude" / "settings.json").exists()
