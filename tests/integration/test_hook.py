"""``memframe hook`` as Claude Code runs it: real-shaped hook payloads on stdin, a transcript that
grows as a session goes on, the background worker, the team-memory guard and ``install-hooks``.

The transcripts are the shared public session logs (origins in tests/data/transcripts/README.md);
each is written to a temporary file record by record, the way Claude Code appends to it, with the
hook events Claude Code would send between the records.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import memframe
from memframe.agents import EVENTS
from memframe.agents.session_files import HookPaths, read_state, valid_session_id
from memframe.agents.transcript import IncrementalReader, RewindEvent
from memframe.memdir import MemoryStore, locate
from memframe.replay import replay
from memframe.session import validate_session_id
from tests.integration.cli_runner import run_memframe
from tests.native.vectors import positives
from tests.waiting import wait_until

DATA = Path(__file__).parents[1] / "data" / "transcripts"
VIEWER = DATA / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
SMALL = DATA / "d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
REWIND = DATA / "daaain__claude-code-log__dag_compact_after_rewind.jsonl"
SESSION = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
WAIT = 120.0


# -- the environment Claude Code would run the hook in ------------------------------------------


@dataclass
class HookEnv:
    root: Path
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("user", "config", "claude", "project"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        self.settings({"hook": {"worker_linger_seconds": 1, "stop_settle_seconds": 0.2}})

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def project(self) -> Path:
        return self.root / "project"

    def settings(self, data: dict[str, Any]) -> None:
        (self.config_dir / "settings.json").write_text(json.dumps(data))

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFRAME_")}
        if "MEMFRAME_BACKEND" in os.environ:
            env["MEMFRAME_BACKEND"] = os.environ["MEMFRAME_BACKEND"]
        env.update(
            HOME=str(self.root / "user"),
            XDG_CONFIG_HOME=str(self.root / "user" / ".config"),
            MEMFRAME_HOME=str(self.home),
            MEMFRAME_CONFIG_DIR=str(self.config_dir),
            CLAUDE_CONFIG_DIR=str(self.root / "claude"),
            MEMFRAME_DISABLE_PLUGIN_AUTOLOAD="1",
        )
        env.update(self.extra)
        return env

    def hook(
        self, payload: dict[str, Any] | bytes, extra_env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return subprocess.run(
            [sys.executable, "-m", "memframe", "hook"],
            input=data,
            capture_output=True,
            cwd=self.project,
            env={**self.env(), **(extra_env or {})},
            timeout=60,
            check=False,
        )

    def frame(self) -> memframe.MemoryFrame:
        return memframe.open(
            self.project, home=self.home, config_dir=self.config_dir, autoload_plugins=False
        )

    def memory_dir(self) -> Path:
        with self.frame() as frame:
            return locate(frame).path

    def paths(self, session_id: str = SESSION) -> HookPaths:
        return HookPaths.for_session(self.home, self.project, session_id)

    def state(self, session_id: str = SESSION) -> dict[str, Any]:
        return read_state(self.paths(session_id))

    def wait_idle(self, session_id: str = SESSION, timeout: float = WAIT) -> dict[str, Any]:
        """Until no work is pending and the worker has exited."""

        def idle() -> dict[str, Any] | None:
            state = self.state(session_id)
            return None if state.get("pending") or state.get("worker") else state

        return wait_until(
            idle,
            timeout=timeout,
            interval=0.1,
            what=lambda: f"the hook worker finished: {self.state(session_id)}",
        )

    def log(self) -> str:
        path = self.home / "logs" / "hook.log"
        return path.read_text() if path.exists() else ""


@pytest.fixture
def hook_env(tmp_path: Path) -> HookEnv:
    return HookEnv(tmp_path)


def _json(result: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


class LiveSession:
    """A transcript written record by record, with the hook events between the records."""

    def __init__(self, env: HookEnv, source: Path, session_id: str = SESSION) -> None:
        self.env = env
        self.session_id = session_id
        self.lines = source.read_text(encoding="utf-8").splitlines()
        self.path = env.root / "claude" / "projects" / "p" / f"{session_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(b"")
        self.tool_names: dict[str, str] = {}
        self.results: list[tuple[str, subprocess.CompletedProcess[bytes]]] = []

    def send(self, event: str, **fields: Any) -> subprocess.CompletedProcess[bytes]:
        payload = {
            "session_id": self.session_id,
            "transcript_path": str(self.path),
            "cwd": str(self.env.project),
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
        result = self.env.hook(payload)
        assert result.returncode == 0, (event, result.stderr)
        self.results.append((event, result))
        return result

    def append(self, line: str) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    @staticmethod
    def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []

    def _is_prompt(self, record: dict[str, Any]) -> bool:
        return (
            record.get("type") == "user"
            and not record.get("isSidechain")
            and not record.get("isMeta")
            and not any(b.get("type") == "tool_result" for b in self._blocks(record))
        )

    def play(self, lines: list[str] | None = None, *, stop: bool = True) -> None:
        """Append ``lines`` (default: all) with their hook events; a Stop ends each turn."""
        turn_open = False
        for line in self.lines if lines is None else lines:
            record = json.loads(line)
            if self._is_prompt(record):
                if turn_open:
                    self.send("Stop", stop_hook_active=False)
                self.send("UserPromptSubmit", prompt="(prompt)")
                turn_open = True
            self.append(line)
            if record.get("isSidechain"):
                continue
            for block in self._blocks(record):
                if record.get("type") == "assistant" and block.get("type") == "tool_use":
                    self.tool_names[block["id"]] = block["name"]
                    self.send("PreToolUse", tool_name=block["name"], tool_input=block["input"])
                if record.get("type") == "user" and block.get("type") == "tool_result":
                    name = self.tool_names.get(block.get("tool_use_id", ""), "Unknown")
                    self.send("PostToolUse", tool_name=name, tool_input={}, tool_response={})
        if stop:
            self.send("Stop", stop_hook_active=False)


def _replayed(source: Path, root: Path) -> Any:
    env = HookEnv(root)
    with env.frame() as frame:
        return replay(source, frame, session_id=SESSION)


def _indices(state: dict[str, Any], section: str, records: str) -> list[int]:
    return [r["index"] for r in state.get(section, {}).get(records, [])]


# -- a whole session -----------------------------------------------------------------------------


@pytest.mark.parametrize("source", [VIEWER, SMALL], ids=["viewer-5c0375b4", "viewer-1af7fc5e"])
def test_a_whole_session_drives_the_layers_as_a_replay_does(hook_env, tmp_path, source):
    store = MemoryStore(hook_env.memory_dir())
    store.add("Test command", "how to run the tests", "project", "Run the tests with pytest -q.")
    live = LiveSession(hook_env, source)

    start = _json(live.send("SessionStart", source="startup"))
    context = start["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert "## MEMORY.md" in context["additionalContext"]
    assert "[Test command](team/test-command.md)" in context["additionalContext"]

    live.play()
    live.send("SessionEnd", reason="prompt_input_exit")
    state = hook_env.wait_idle()

    expected = _replayed(source, tmp_path / "replay")
    session_state = json.loads((hook_env.paths().session_dir / "state.json").read_text())
    assert _indices(session_state, "session_memory", "extractions") == _indices(
        expected.state, "session_memory", "extractions"
    )
    assert _indices(session_state, "session_memory", "extractions")  # something happened
    assert state["messages"] == expected.messages
    assert state["transcript"]["cursor"] == live.path.stat().st_size
    assert state["ended"] is True
    notes = hook_env.paths().session_dir / "session-memory" / "summary.md"
    assert "# Worklog" in notes.read_text()
    for path in hook_env.paths().session_dir.iterdir():
        if path.is_file():
            assert path.stat().st_mode & 0o777 == 0o600, path
    assert (hook_env.home / "logs" / "hook.log").stat().st_mode & 0o777 == 0o600
    assert "ERROR" not in hook_env.log()
    # only the context events answer; the rest of the work happened in the background
    quiet = [r for event, r in live.results if event not in ("SessionStart", "UserPromptSubmit")]
    assert quiet and all(r.stdout == b"" and r.stderr == b"" for r in quiet)


def test_session_start_gives_the_memdir_layers_block(hook_env):
    store = MemoryStore(hook_env.memory_dir())
    store.add("Deploys", "where deploys are documented", "reference", "See the wiki page.")
    result = hook_env.hook(
        {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(hook_env.project)}
    )
    text = _json(result)["hookSpecificOutput"]["additionalContext"]
    with hook_env.frame() as frame:
        session = frame.session("other")
        blocks = [b for b in session.context_blocks() if b.source == "memdir"]
    assert text == blocks[0].render()
    assert "systemMessage" not in _json(result)


@pytest.mark.parametrize("source", ["compact", "resume"])
def test_after_a_compaction_the_session_notes_come_back(hook_env, source):
    from memframe.paths import project_key
    from memframe.session_memory import load_template

    template = load_template(hook_env.config_dir).text
    notes = template.replace(
        "# Current State\n", "# Current State\nFixing total() rounding in billing.py\n", 1
    )
    assert notes != template
    notes_dir = hook_env.home / "projects" / project_key(hook_env.project) / "s1" / "session-memory"
    notes_dir.mkdir(parents=True)
    (notes_dir / "summary.md").write_text(notes)
    event = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(hook_env.project)}
    text = _json(hook_env.hook({**event, "source": source}))["hookSpecificOutput"][
        "additionalContext"
    ]
    assert "<session-notes" in text and "Fixing total() rounding in billing.py" in text
    # a fresh start gets no notes; nor does another session
    startup = _json(hook_env.hook({**event, "source": "startup"}))
    assert "Fixing total()" not in startup["hookSpecificOutput"]["additionalContext"]
    other = _json(hook_env.hook({**event, "session_id": "s2", "source": "compact"}))
    assert "Fixing total()" not in other["hookSpecificOutput"]["additionalContext"]


def test_an_index_over_its_limit_is_cut_with_a_warning(hook_env):
    memory_dir = hook_env.memory_dir()
    memory_dir.mkdir(parents=True)
    (memory_dir / "MEMORY.md").write_text(
        "".join(f"- [M{n}](m{n}.md) — hook {n}\n" for n in range(250))
    )
    answer = _json(
        hook_env.hook(
            {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(hook_env.project)}
        )
    )
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert "[M199](m199.md)" in text and "[M200](m200.md)" not in text
    assert "> WARNING: MEMORY.md is 250 lines (limit: 200)." in text
    assert "limit: 200" in answer["systemMessage"]


def test_a_prompt_gets_the_memory_again_only_when_the_index_changed(hook_env):
    base = {"session_id": "s1", "cwd": str(hook_env.project), "prompt": "hello"}
    _json(hook_env.hook({**base, "hook_event_name": "SessionStart", "source": "startup"}))
    unchanged = hook_env.hook({**base, "hook_event_name": "UserPromptSubmit"})
    assert unchanged.returncode == 0 and unchanged.stdout == b""

    MemoryStore(hook_env.memory_dir()).add("New fact", "a fact", "project", "The sky is blue.")
    changed = _json(hook_env.hook({**base, "hook_event_name": "UserPromptSubmit"}))
    output = changed["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert "[New fact](team/new-fact.md)" in output["additionalContext"]
    again = hook_env.hook({**base, "hook_event_name": "UserPromptSubmit"})
    assert again.stdout == b""

    # a session whose start memframe did not see gets the memory with its first prompt
    first = _json(
        hook_env.hook({**base, "session_id": "s2", "hook_event_name": "UserPromptSubmit"})
    )
    assert first["hookSpecificOutput"]["additionalContext"].startswith("# Memory")


def test_a_prompt_recalls_the_relevant_memories_once_per_session(hook_env):
    store = MemoryStore(hook_env.memory_dir())
    store.add("Deploys", "how production deploys work", "reference", "Deploys go through Argo.")
    store.add("Lunch", "the team's lunch spot", "project", "Tacos on Fridays.")
    base = {"session_id": "s1", "cwd": str(hook_env.project)}
    _json(hook_env.hook({**base, "hook_event_name": "SessionStart", "source": "startup"}))

    def prompt(text: str, session: str = "s1") -> str:
        result = hook_env.hook(
            {**base, "session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text}
        )
        assert result.returncode == 0, result.stderr
        return _json(result)["hookSpecificOutput"]["additionalContext"] if result.stdout else ""

    recalled = prompt("how do production deploys work here?")
    assert recalled.startswith("# Relevant memories\n\n## Deploys (team/deploys.md, reference)")
    assert "Deploys go through Argo." in recalled and "Tacos" not in recalled
    # the runtime's memdir layer shows the same block for the same prompt
    with hook_env.frame() as frame:
        session = frame.session("other")
        blocks = [b for b in session.context_blocks("how do production deploys work here?")]
    assert recalled == blocks[-1].render()
    assert prompt("deploys again, please") == ""  # shown once per session
    assert "Tacos on Fridays." in prompt("where is lunch on Friday?")
    assert prompt("where is lunch on Friday?") == ""
    assert "Deploys go through Argo." in prompt("production deploys?", session="s2")
    assert "ERROR" not in hook_env.log()


def test_the_session_stays_with_the_project_when_the_agent_changes_directory(hook_env, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pinned = {"CLAUDE_PROJECT_DIR": str(hook_env.project)}
    payload = {
        "hook_event_name": "SessionStart",
        "session_id": "s1",
        "cwd": str(elsewhere),
        "transcript_path": str(tmp_path / "t.jsonl"),
    }
    start = _json(hook_env.hook(payload, extra_env=pinned))
    assert str(hook_env.memory_dir()) in start["hookSpecificOutput"]["additionalContext"]
    assert hook_env.hook({**payload, "hook_event_name": "Stop"}, extra_env=pinned).returncode == 0
    assert hook_env.wait_idle("s1")["stats"]["runs"] == 1
    assert not HookPaths.for_session(hook_env.home, elsewhere, "s1").session_dir.exists()


# -- reading the transcript incrementally --------------------------------------------------------


def _turns(lines: list[str]) -> list[list[str]]:
    """The transcript cut before each real prompt."""
    turns: list[list[str]] = []
    for line in lines:
        record = json.loads(line)
        content = record.get("message", {}).get("content")
        prompt = (
            record.get("type") == "user"
            and not record.get("isSidechain")
            and not (
                isinstance(content, list)
                and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
            )
        )
        if prompt or not turns:
            turns.append([])
        turns[-1].append(line)
    return turns


def test_each_run_reads_only_the_new_lines(hook_env):
    live = LiveSession(hook_env, SMALL)
    turns = _turns(live.lines)
    assert len(turns) >= 2
    live.play(turns[0])
    first = hook_env.wait_idle()
    assert first["transcript"]["cursor"] == live.path.stat().st_size
    messages = first["messages"]

    live.send("Stop", stop_hook_active=False)
    again = hook_env.wait_idle()
    assert again["last_run"]["lines"] == 0 and again["last_run"]["bytes"] == 0
    assert again["last_run"]["dispatched"] == 0
    assert again["messages"] == messages
    assert again["transcript"]["cursor"] == first["transcript"]["cursor"]

    live.play(turns[1])
    second = hook_env.wait_idle()
    assert second["transcript"]["cursor"] == live.path.stat().st_size
    assert second["transcript"]["cursor"] > first["transcript"]["cursor"]
    assert second["messages"] > messages
    assert second["stats"]["runs"] >= 3


def test_a_replaced_or_truncated_transcript_restarts_safely(hook_env):
    live = LiveSession(hook_env, SMALL)
    turns = _turns(live.lines)
    live.play(turns[0])
    before = hook_env.wait_idle()["messages"]

    # replaced: a new file (new inode) with the same records and the next turn
    replacement = live.path.with_suffix(".new")
    replacement.write_text("".join(line + "\n" for line in turns[0] + turns[1]))
    os.replace(replacement, live.path)
    live.send("Stop", stop_hook_active=False)
    replaced = hook_env.wait_idle()
    assert replaced["last_run"]["restarted"] == "replaced"
    new_messages = sum(
        1
        for line in turns[1]
        if json.loads(line).get("type") in ("user", "assistant")
        and not json.loads(line).get("isSidechain")
    )
    assert replaced["messages"] - before <= new_messages  # nothing seen before came back
    assert replaced["messages"] > before

    # truncated: shorter than the cursor, with new records
    record = {
        "type": "user",
        "uuid": "00000000-new-0000-0000-000000000001",
        "parentUuid": None,
        "sessionId": SESSION,
        "message": {"role": "user", "content": "a fresh start"},
    }
    live.path.write_text(json.dumps(record) + "\n")
    live.send("Stop", stop_hook_active=False)
    truncated = hook_env.wait_idle()
    assert truncated["last_run"]["restarted"] == "truncated"
    assert truncated["messages"] == replaced["messages"] + 1
    assert truncated["transcript"]["cursor"] == live.path.stat().st_size
    assert "ERROR" not in hook_env.log()


def test_a_partial_last_line_waits_for_the_next_run(tmp_path):
    path = tmp_path / "t.jsonl"
    user = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    line = json.dumps(user).encode()
    path.write_bytes(line[:10])
    reader = IncrementalReader()
    first = reader.read(path)
    assert first.events == [] and reader.cursor == 0
    path.write_bytes(line + b"\n")
    second = reader.read(path)
    assert [type(e).__name__ for e in second.events] == ["MessageEvent"]
    assert reader.cursor == len(line) + 1


def test_a_split_response_stays_one_message_across_runs(tmp_path):
    path = tmp_path / "t.jsonl"

    def assistant(uuid: str, parent: str, block: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "assistant",
            "uuid": uuid,
            "parentUuid": parent,
            "message": {
                "role": "assistant",
                "id": "msg_1",
                "content": [block],
                "usage": {"input_tokens": 100, "output_tokens": 5},
            },
        }

    records = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "read it"}},
        assistant("a1", "u1", {"type": "text", "text": "Reading."}),
        assistant(
            "a2",
            "a1",
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}},
        ),
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a2",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1→x"}],
            },
        },
    ]
    state: dict[str, Any] | None = None
    kinds: list[str] = []
    for record in records:  # one run per record, the state saved in between
        with path.open("a") as handle:
            handle.write(json.dumps(record) + "\n")
        reader = IncrementalReader(json.loads(json.dumps(state)) if state else None)
        increment = reader.read(path)
        kinds += [type(e).__name__ for e in increment.events]
        for event in increment.events:
            if type(event).__name__ == "MessageEvent" and event.message.role == "assistant":
                assert [b.type for b in event.message.content] == ["text", "tool_use"]
        state = reader.to_state()
    assert kinds == [
        "MessageEvent",
        "MessageEvent",
        "MessageEvent",
        "ToolUseEvent",
        "FileReadEvent",
    ]


def test_a_rewind_drops_the_abandoned_branch(tmp_path):
    lines = REWIND.read_text().splitlines()
    path = tmp_path / "t.jsonl"
    history: list[str | None] = []
    before_compaction: list[str | None] = []
    reader = IncrementalReader()
    for line in lines:  # one run per record
        with path.open("a") as handle:
            handle.write(line + "\n")
        for event in reader.read(path).events + reader.finish():
            name = type(event).__name__
            if name == "MessageEvent":
                history.append(event.message.uuid)
            elif isinstance(event, RewindEvent):
                del history[event.keep :]
            elif name == "CompactEvent":
                before_compaction, history = history, []
    assert before_compaction == ["u1", "a1", "b2u", "b2a", "b2u2", "b2a2"]
    assert history == ["cs", "p1u", "p1a"]


def test_a_rewinding_session_runs_without_errors(hook_env):
    live = LiveSession(hook_env, REWIND)
    live.play()
    live.send("SessionEnd", reason="other")
    state = hook_env.wait_idle()
    assert state["ended"] is True
    assert state["transcript"]["cursor"] == live.path.stat().st_size
    assert "ERROR" not in hook_env.log()


def test_concurrent_events_share_one_worker(hook_env):
    live = LiveSession(hook_env, SMALL)
    for line in live.lines:
        live.append(line)
    errors: list[BaseException] = []

    def fire() -> None:
        try:
            live.send("PostToolUse", tool_name="Bash", tool_input={}, tool_response={})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=fire) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    live.send("Stop", stop_hook_active=False)
    state = hook_env.wait_idle()
    assert state["transcript"]["cursor"] == live.path.stat().st_size
    expected = replay_messages(SMALL, hook_env.root / "replay")
    assert state["messages"] == expected
    assert "ERROR" not in hook_env.log() and "lock busy" not in hook_env.log()


def replay_messages(source: Path, root: Path) -> int:
    return int(_replayed(source, root).messages)


# -- the team-memory guard -----------------------------------------------------------------------


def _aws_secret() -> str:
    return next(v.text for v in positives() if v.rule_id == "aws-access-token")


def _pre(hook_env: HookEnv, tool: str, tool_input: dict[str, Any], **env: str) -> Any:
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "cwd": str(hook_env.project),
        "tool_name": tool,
        "tool_input": tool_input,
    }
    return hook_env.hook(payload, extra_env=env or None)


def test_a_secret_written_into_team_memory_is_refused(hook_env):
    team = hook_env.memory_dir() / "team"
    result = _pre(hook_env, "Write", {"file_path": str(team / "x.md"), "content": _aws_secret()})
    assert result.returncode == 2
    message = result.stderr.decode()
    assert message.count("\n") == 1 and message.startswith("memframe: refused:")
    assert "(aws-access-token)" in message and "team memory" in message
    assert result.stdout == b""
    assert "refused a secret (aws-access-token)" in hook_env.log()


@pytest.mark.parametrize(
    "tool",
    [
        ("Edit", lambda p, s: {"file_path": p, "old_string": "a", "new_string": s}),
        (
            "MultiEdit",
            lambda p, s: {"file_path": p, "edits": [{"old_string": "a", "new_string": s}]},
        ),
        ("NotebookEdit", lambda p, s: {"notebook_path": p, "new_source": s}),
    ],
    ids=["Edit", "MultiEdit", "NotebookEdit"],
)
def test_every_write_tool_is_guarded(hook_env, tool):
    name, build = tool
    target = str(hook_env.memory_dir() / "team" / "notes.md")
    result = _pre(hook_env, name, build(target, _aws_secret()))
    assert result.returncode == 2 and b"aws-access-token" in result.stderr


def _github_pat() -> str:
    text = next(v.text for v in positives() if v.rule_id == "github-pat")
    found = re.search(r"ghp_[A-Za-z0-9]{36}", text)
    assert found is not None
    return found.group()


@pytest.mark.parametrize("tool", ["Edit", "MultiEdit"])
def test_a_secret_assembled_by_an_edit_is_refused(hook_env, tool):
    """A Write of a token split by ``-`` (no rule matches) passes; an edit that removes the
    ``-`` would assemble it in team/: the file as it would be after the edit is judged."""
    token = _github_pat()
    split = f"{token[:22]}-{token[22:]}"
    team = hook_env.memory_dir() / "team"
    team.mkdir(parents=True, exist_ok=True)
    target = team / "deploy.md"
    written = _pre(hook_env, "Write", {"file_path": str(target), "content": f"key {split}\n"})
    assert written.returncode == 0, written.stderr  # the fragment alone is no secret
    target.write_text(f"key {split}\n")
    edit = {"old_string": "-", "new_string": ""}
    tool_input: dict[str, Any] = {
        "Edit": {"file_path": str(target), **edit},
        "MultiEdit": {
            "file_path": str(target),
            "edits": [{"old_string": "x", "new_string": "x"}, edit],
        },
    }[tool]
    if tool == "MultiEdit":
        target.write_text(f"x key {split}\n")
    refused = _pre(hook_env, tool, tool_input)
    assert refused.returncode == 2, refused.stderr
    assert b"github-pat" in refused.stderr
    # the same edit outside team/ is none of the guard's business
    private = hook_env.memory_dir() / "deploy.md"
    private.write_text(f"key {split}\n")
    outside = {**tool_input, "file_path": str(private)}
    assert _pre(hook_env, tool, outside).returncode == 0


def test_team_paths_are_resolved_before_the_check(hook_env):
    team = hook_env.memory_dir() / "team"
    team.mkdir(parents=True)
    (hook_env.project / "shortcut").symlink_to(team)
    via_link = _pre(hook_env, "Write", {"file_path": "shortcut/x.md", "content": _aws_secret()})
    assert via_link.returncode == 2
    dotted = str(team / "sub" / ".." / "x.md")
    assert _pre(hook_env, "Write", {"file_path": dotted, "content": _aws_secret()}).returncode == 2


def test_clean_or_private_writes_pass(hook_env):
    memory = hook_env.memory_dir()
    clean = _pre(
        hook_env,
        "Write",
        {"file_path": str(memory / "team" / "x.md"), "content": "tabs, not spaces"},
    )
    assert clean.returncode == 0 and clean.stdout == b"" and clean.stderr == b""
    private = _pre(hook_env, "Write", {"file_path": str(memory / "x.md"), "content": _aws_secret()})
    assert private.returncode == 0 and private.stdout == b""
    other_tool = _pre(hook_env, "Bash", {"command": f"echo {_aws_secret()!r}"})
    assert other_tool.returncode == 0 and other_tool.stdout == b""


def test_writes_outside_team_memory_are_not_scanned(hook_env):
    # an unusable scanning engine would fail any scan: outside team/ nothing notices it
    outside = _pre(
        hook_env,
        "Write",
        {"file_path": str(hook_env.project / "x.md"), "content": _aws_secret()},
        MEMFRAME_BACKEND="bogus",
    )
    assert outside.returncode == 0 and outside.stdout == b"" and outside.stderr == b""
    # inside, the failed check lets the write through (never break the host) and says so
    inside = _pre(
        hook_env,
        "Write",
        {"file_path": str(hook_env.memory_dir() / "team" / "x.md"), "content": _aws_secret()},
        MEMFRAME_BACKEND="bogus",
    )
    assert inside.returncode == 0
    assert "could not check" in json.loads(inside.stdout)["systemMessage"]


# -- never failing the host ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'"SessionStart"',
        b"\xff\xfe\x00",
        b"{" * 100_000,
        b" " * (16 * 1024 * 1024 + 10),
        json.dumps({"hook_event_name": "Notification", "session_id": "s1"}).encode(),
        json.dumps({"hook_event_name": 5, "session_id": "s1"}).encode(),
        json.dumps({"hook_event_name": "Stop", "session_id": "../../etc"}).encode(),
        json.dumps({"hook_event_name": "Stop", "session_id": 7, "cwd": 3}).encode(),
        json.dumps(
            {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": "x"}
        ).encode(),
        json.dumps({"hook_event_name": "PreToolUse", "tool_name": ["Write"]}).encode(),
        json.dumps({"hook_event_name": "SessionEnd", "session_id": "memory"}).encode(),
    ],
    ids=[
        "empty",
        "not-json",
        "array",
        "string",
        "bad-utf8",
        "deep",
        "huge",
        "unknown-event",
        "event-not-a-string",
        "hostile-session-id",
        "wrong-types",
        "tool-input-not-an-object",
        "tool-name-not-a-string",
        "reserved-session-id",
    ],
)
def test_bad_input_never_fails_the_host(hook_env, payload):
    result = hook_env.hook(payload)
    assert result.returncode == 0
    assert result.stderr == b""
    assert result.stdout == b"" or isinstance(json.loads(result.stdout), dict)
    assert not any(p.name == "etc" for p in hook_env.root.rglob("*"))
    assert all(p.parent.name != "memory" for p in hook_env.root.rglob("hook.json"))


def test_wrong_typed_fields_count_as_absent(hook_env):
    payload = {
        "hook_event_name": "SessionStart",
        "session_id": ["s1"],
        "cwd": str(hook_env.project),
        "source": 12,
        "unknown_field": {"nested": True},
    }
    answer = _json(hook_env.hook(payload))
    assert answer["hookSpecificOutput"]["additionalContext"].startswith("# Memory")


def test_inside_memframes_own_forks_the_hook_does_nothing(hook_env):
    payload = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(hook_env.project)}
    result = hook_env.hook(payload, extra_env={"MEMFRAME_IN_FORK": "1"})
    assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""
    stop = {**payload, "hook_event_name": "Stop", "transcript_path": str(hook_env.root / "t")}
    assert hook_env.hook(stop, extra_env={"MEMFRAME_IN_FORK": "1"}).stdout == b""
    assert not hook_env.home.exists()


def test_broken_settings_turn_memory_off_without_failing(hook_env):
    (hook_env.config_dir / "settings.json").write_text("{not json")
    base = {"session_id": "s1", "cwd": str(hook_env.project)}
    start = _json(hook_env.hook({**base, "hook_event_name": "SessionStart"}))
    assert "memory is off" in start["systemMessage"] and "not valid JSON" in start["systemMessage"]
    stop = hook_env.hook({**base, "hook_event_name": "Stop"})
    assert stop.returncode == 0 and stop.stdout == b"" and stop.stderr == b""


def test_an_unusable_memory_base_is_logged_not_raised(hook_env, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    payload = {
        "hook_event_name": "Stop",
        "session_id": "s1",
        "cwd": str(hook_env.project),
        "transcript_path": str(tmp_path / "t.jsonl"),
    }
    result = hook_env.hook(payload, extra_env={"MEMFRAME_HOME": str(blocker / "home")})
    assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""


def test_a_missing_transcript_is_logged_and_the_worker_exits(hook_env):
    payload = {
        "hook_event_name": "Stop",
        "session_id": "s1",
        "cwd": str(hook_env.project),
        "transcript_path": str(hook_env.root / "missing.jsonl"),
    }
    assert hook_env.hook(payload).returncode == 0
    state = hook_env.wait_idle("s1")
    assert "cannot open the transcript" in state["last_run"]["problems"][0]


def test_a_failing_run_is_retried_then_given_up(hook_env, tmp_path):
    gone = tmp_path / "deleted-project"  # the frame cannot open: every run fails
    payload = {
        "hook_event_name": "Stop",
        "session_id": "s1",
        "cwd": str(gone),
        "transcript_path": str(tmp_path / "t.jsonl"),
    }
    assert hook_env.hook(payload).returncode == 0

    def failed() -> dict[str, Any] | None:
        state = read_state(HookPaths.for_session(hook_env.home, gone, "s1"))
        done = "last_error" in state and not state.get("pending") and not state.get("worker")
        return state if done else None

    state = wait_until(failed, timeout=WAIT, interval=0.1, what="the worker's error recorded")
    assert "NotADirectoryError" in state["last_error"]["error"]
    assert hook_env.log().count("NotADirectoryError: project directory") == 3


def test_the_hook_does_not_load_the_runtime(hook_env):
    code = (
        "import io, sys\n"
        "from memframe.cli import main\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))\n"
        "sys.stdout = io.TextIOWrapper(io.BytesIO())\n"
        "main(['hook'])\n"
        "heavy = ('pluggy', 'memframe.frame', 'memframe._native', 'memframe._backend',\n"
        "         'memframe.memdir.store', 'memframe.session', 'httpx', 'memframe.scanner')\n"
        "sys.stderr.write(','.join(m for m in heavy if m in sys.modules))\n"
    )
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        payload = {
            "hook_event_name": event,
            "session_id": "s1",
            "cwd": str(hook_env.project),
            "transcript_path": str(hook_env.root / "t.jsonl"),
        }
        result = subprocess.run(
            [sys.executable, "-c", code, json.dumps(payload)],
            capture_output=True,
            text=True,
            env=hook_env.env(),
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr == "", (event, result.stderr)
    hook_env.wait_idle("s1")


def test_the_fast_path_agrees_with_the_runtime(hook_env):
    from memframe.agents.memory import memory_location
    from memframe.config import load_config

    config = load_config({"home": hook_env.home, "config_dir": hook_env.config_dir})
    with hook_env.frame() as frame:
        assert memory_location(hook_env.project, config).path == locate(frame).path
    for session_id in ("abc", "a" * 128, "a" * 129, "memory", "-x", "x/y", "ok.id_1-2", ""):
        try:
            validate_session_id(session_id)
            expected = True
        except ValueError:
            expected = False
        try:
            valid_session_id(session_id)
            got = True
        except ValueError:
            got = False
        assert got == expected, session_id


# -- install-hooks -------------------------------------------------------------------------------


def _install(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(root / "user"), "CLAUDE_CONFIG_DIR": str(root / "claude")}
    return run_memframe("install-hooks", *args, cwd=root, extra_env=env)


def _backups(directory: Path) -> list[Path]:
    return sorted(directory.glob("settings.json.bak-*"))


@pytest.fixture
def claude_root(tmp_path: Path) -> Path:
    (tmp_path / "user").mkdir()
    return tmp_path


def test_install_hooks_into_the_user_settings(claude_root):
    result = _install(claude_root, "--user")
    assert result.returncode == 0, result.stderr
    path = claude_root / "claude" / "settings.json"
    settings = json.loads(path.read_text())
    assert set(settings["hooks"]) == set(EVENTS)
    for event, groups in settings["hooks"].items():
        assert len(groups) == 1
        (entry,) = groups[0]["hooks"]
        assert entry["type"] == "command" and entry["timeout"] == 30
        assert entry["command"].endswith(" hook") and "memframe" in entry["command"]
        matcher = "Write|Edit|MultiEdit|NotebookEdit" if event == "PreToolUse" else ""
        assert groups[0]["matcher"] == matcher
    assert path.stat().st_mode & 0o777 == 0o600
    assert not _backups(path.parent)  # nothing to back up: there was no file

    again = _install(claude_root)
    assert again.returncode == 0 and "nothing to change" in again.stdout
    assert json.loads(path.read_text()) == settings
    assert not _backups(path.parent)


def test_install_hooks_keeps_other_hooks_and_settings(claude_root):
    path = claude_root / "claude" / "settings.json"
    path.parent.mkdir()
    other = {"type": "command", "command": "~/bin/lint.sh", "timeout": 5}
    original = {
        "model": "opus",
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [other]}],
            "Stop": [
                {
                    "matcher": "",
                    "hooks": [other, {"type": "command", "command": "old/memframe hook"}],
                }
            ],
            "Notification": [{"hooks": [other]}],
        },
    }
    path.write_text(json.dumps(original))
    result = _install(claude_root, "--user", "--command", "/opt/bin/memframe hook")
    assert result.returncode == 0, result.stderr
    settings = json.loads(path.read_text())
    assert settings["model"] == "opus"
    assert settings["hooks"]["Notification"] == original["hooks"]["Notification"]
    assert settings["hooks"]["PreToolUse"][0] == original["hooks"]["PreToolUse"][0]
    assert settings["hooks"]["PreToolUse"][1]["hooks"][0]["command"] == "/opt/bin/memframe hook"
    # the memframe entry sharing a group is updated where it is, the other hook stays first
    (stop_group,) = settings["hooks"]["Stop"]
    assert stop_group["hooks"][0] == other
    assert stop_group["hooks"][1] == {
        "type": "command",
        "command": "/opt/bin/memframe hook",
        "timeout": 30,
    }
    (backup,) = _backups(path.parent)
    assert json.loads(backup.read_text()) == original

    # a new command replaces the old one everywhere, without duplicates
    assert _install(claude_root, "--command", "/usr/bin/python3 -m memframe hook").returncode == 0
    updated = json.loads(path.read_text())
    commands = [
        entry["command"]
        for groups in updated["hooks"].values()
        for group in groups
        for entry in group["hooks"]
    ]
    assert commands.count("/usr/bin/python3 -m memframe hook") == len(EVENTS)
    assert "/opt/bin/memframe hook" not in commands
    assert len(_backups(path.parent)) == 1  # one backup, not one per run


def test_install_hooks_into_the_project_settings(claude_root):
    project = claude_root / "repo"
    project.mkdir()
    result = _install(claude_root, "--project", "--dir", str(project))
    assert result.returncode == 0, result.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == set(EVENTS)
    assert not (claude_root / "claude" / "settings.json").exists()


def test_install_hooks_dry_run_writes_nothing(claude_root):
    path = claude_root / "claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "opus"}\n')
    result = _install(claude_root, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert '+  "hooks": {' in result.stdout and "dry run" in result.stdout
    assert path.read_text() == '{"model": "opus"}\n'
    assert not _backups(path.parent)
    assert (
        _install(claude_root, "--project", "--dir", str(claude_root), "--dry-run").returncode == 0
    )
    assert not (claude_root / ".claude").exists()


def test_install_hooks_refuses_invalid_settings(claude_root):
    path = claude_root / "claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": [}')
    result = _install(claude_root)
    assert result.returncode == 2
    assert "not valid JSON" in result.stderr and "Traceback" not in result.stderr
    assert path.read_text() == '{"hooks": [}'
    assert not _backups(path.parent)
    path.write_text('{"hooks": {"Stop": "memframe hook"}}')
    wrong_shape = _install(claude_root)
    assert wrong_shape.returncode == 2 and "hooks.Stop" in wrong_shape.stderr
    not_ours = _install(claude_root, "--command", "/bin/true")
    assert not_ours.returncode == 2 and "memframe hook" in not_ours.stderr


def test_uninstall_removes_only_memframe(claude_root):
    path = claude_root / "claude" / "settings.json"
    path.parent.mkdir()
    other = {"type": "command", "command": "~/bin/lint.sh"}
    path.write_text(json.dumps({"hooks": {"Stop": [{"matcher": "", "hooks": [other]}]}}))
    assert _install(claude_root).returncode == 0
    result = _install(claude_root, "--uninstall")
    assert result.returncode == 0, result.stderr
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [{"matcher": "", "hooks": [other]}]}}
    assert "nothing to change" in _install(claude_root, "--uninstall").stdout


@pytest.mark.parametrize(
    "call",
    [
        ("apply_patch", lambda patch: {"input": patch}),
        ("shell", lambda patch: {"command": ["apply_patch", patch]}),
        ("Bash", lambda patch: {"command": f"apply_patch <<'EOF'\n{patch}\nEOF"}),
    ],
    ids=["apply_patch", "shell-argv", "heredoc"],
)
def test_a_codex_patch_adding_a_secret_to_team_memory_is_refused(hook_env, call):
    name, build = call
    team = hook_env.memory_dir() / "team"
    key = re.search(r"AKIA[A-Z0-9]{16}", _aws_secret())
    assert key is not None
    adds = f"*** Begin Patch\n*** Add File: {team}/bot.md\n+key {key.group()}\n*** End Patch"
    refused = _pre(hook_env, name, build(adds))
    assert refused.returncode == 2, refused.stderr
    assert b"aws-access-token" in refused.stderr
    # an update assembling a token from a split one is judged by the patched file
    token = _github_pat()
    team.mkdir(parents=True, exist_ok=True)
    (team / "deploy.md").write_text(f"key {token[:22]}-{token[22:]}\n")
    joins = (
        f"*** Begin Patch\n*** Update File: {team}/deploy.md\n@@\n-key {token[:22]}-{token[22:]}\n"
        f"+key {token[:22]}{token[22:]}\n*** End Patch"
    )
    assert _pre(hook_env, name, build(joins)).returncode == 2
    # the same patch outside team/ passes, and so does a clean one into team/
    outside = adds.replace(f"{team}/bot.md", str(hook_env.project / "bot.md"))
    assert _pre(hook_env, name, build(outside)).returncode == 0
    clean = f"*** Begin Patch\n*** Add File: {team}/ok.md\n+tabs, not spaces\n*** End Patch"
    assert _pre(hook_env, name, build(clean)).returncode == 0


# -- variables a project's Claude Code settings inject -------------------------------------------


def _project_env(hook_env: HookEnv, env: dict[str, str], file: str = "settings.json") -> None:
    """What a repository's ``.claude/<file>`` sets under ``env`` (Claude Code then puts it into
    the hook's environment: the tests pass it as ``extra_env`` too)."""
    path = hook_env.project / ".claude" / file
    path.parent.mkdir(exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**data, "env": {**data.get("env", {}), **env}}))


def test_a_project_cannot_move_memory_through_its_agent_env(hook_env, tmp_path):
    evil_dir, evil_home = tmp_path / "evil-memory", tmp_path / "evil-home"
    injected = {"MEMFRAME_MEMORY_DIR": str(evil_dir), "MEMFRAME_HOME": str(evil_home)}
    _project_env(hook_env, {"MEMFRAME_MEMORY_DIR": str(evil_dir)})
    _project_env(hook_env, {"MEMFRAME_HOME": str(evil_home)}, "settings.local.json")
    payload = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(hook_env.project)}
    answer = _json(hook_env.hook(payload, extra_env=injected))
    message = answer["systemMessage"]
    assert "ignored MEMFRAME_MEMORY_DIR" in message and "MEMFRAME_HOME" in message
    assert ".claude/settings.json" in message and ".claude/settings.local.json" in message
    assert answer["hookSpecificOutput"]["additionalContext"].startswith("# Memory")
    assert not evil_dir.exists() and not evil_home.exists()
    # MEMFRAME_HOME refused: the memory base is the default one under the user's home
    log = (hook_env.root / "user" / ".memframe" / "logs" / "hook.log").read_text()
    assert "a project's settings may not set memframe's variables" in log

    prompt = {**payload, "hook_event_name": "UserPromptSubmit", "prompt": "hello"}
    later = hook_env.hook(prompt, extra_env=injected)  # logged, not said again
    assert later.returncode == 0 and b"systemMessage" not in later.stdout
    assert not evil_dir.exists() and not evil_home.exists()


def test_variables_the_project_does_not_set_are_the_users(hook_env, tmp_path):
    _project_env(hook_env, {"SOMETHING_ELSE": "1", "MEMFRAME_IN_FORK": ""})
    payload = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(hook_env.project)}
    answer = _json(hook_env.hook(payload, extra_env={"SOMETHING_ELSE": "1"}))
    assert "systemMessage" not in answer
    assert not (hook_env.root / "user" / ".memframe").exists()  # MEMFRAME_HOME was kept


def test_a_project_cannot_send_team_memory_to_its_own_server(hook_env):
    from tests.team.hostile import Canned, CannedServer, snapshot_body

    collector = CannedServer(lambda method: Canned(200, {}, snapshot_body({})))
    try:
        hook_env.settings(
            {
                "hook": {"worker_linger_seconds": 1, "stop_settle_seconds": 0.2},
                "team_sync": {"server": "http://127.0.0.1:9", "repo": "acme/app", "token": "mine"},
            }
        )
        team = hook_env.memory_dir() / "team"
        team.mkdir(parents=True, exist_ok=True)
        (team / "deploy.md").write_text("# Deploy\nThe staging host is behind the VPN.\n")
        injected = {"MEMFRAME_TEAM_SERVER": collector.url, "MEMFRAME_TEAM_TOKEN": "theirs"}
        transcript = hook_env.root / "t.jsonl"
        transcript.write_text("")

        def stop(session_id: str) -> None:
            payload = {
                "hook_event_name": "Stop",
                "session_id": session_id,
                "cwd": str(hook_env.project),
                "transcript_path": str(transcript),
            }
            assert hook_env.hook(payload, extra_env=injected).returncode == 0
            hook_env.wait_idle(session_id)

        _project_env(hook_env, injected)
        stop("s1")  # the worker's frame pulls and pushes: not to the project's server
        assert collector.received == []
        assert "MEMFRAME_TEAM_SERVER" in hook_env.log()

        (hook_env.project / ".claude" / "settings.json").unlink()
        stop("s2")  # the same variables from the user's own environment are honoured
        assert collector.received, "the control run should have reached the server"
        assert {r.headers["authorization"] for r in collector.received} == {"Bearer theirs"}
    finally:
        collector.close()


def test_the_refusal_reads_the_repository_root_and_never_the_users_own_settings(
    tmp_path, monkeypatch
):
    from memframe import config

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub" / "dir").mkdir(parents=True)
    (repo / ".claude").mkdir()
    settings = {"env": {"MEMFRAME_TEAM_SERVER": "https://x", "HOME": "/x", "OTHER": "1"}}
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    env = {"MEMFRAME_TEAM_SERVER": "https://x", "HOME": "/x", "OTHER": "1", "PATH": "/bin"}
    refused = config.refuse_project_env([repo / "sub" / "dir"], env)
    assert sorted(v.name for v in refused) == ["HOME", "MEMFRAME_TEAM_SERVER"]
    assert "MEMFRAME_TEAM_SERVER" not in env and env["OTHER"] == "1"
    assert env["HOME"] != "/x"  # the user's home from the password database

    monkeypatch.setattr(config, "_user_home", lambda: repo)  # the project *is* the home dir
    assert config.project_set_variables([repo]) == []
