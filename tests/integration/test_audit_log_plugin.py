"""The first-party ``memframe-audit-log`` distribution, loaded through its real entry point.

CI installs it (``pip install -e plugins/memframe-audit-log``); without it these tests skip.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import stat
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

import pytest

import memframe
from memframe import LayerLoadError, Message, ToolResultBlock, ToolUseBlock, Usage
from memframe.messages import ThinkingBlock
from memframe.testing import HookRecorder

DIST = "memframe-audit-log"
LAYER = "audit_log"
PLANTED = "PLANTED-7f3c9e-do-not-log"  # must never reach the audit log

SESSION_HOOKS = {
    "on_session_start",
    "on_message",
    "on_tool_use",
    "on_file_read",
    "on_stop",
    "on_pre_compact",
    "on_session_end",
    "on_layer_error",
}
SCRIPT_HOOKS = [
    "on_session_start",
    "on_message",  # user
    "on_message",  # assistant with a tool call
    "on_tool_use",
    "on_file_read",
    "on_message",  # final assistant answer
    "on_stop",
    "on_session_end",
]


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for var in list(os.environ):
        if var.startswith("MEMFRAME_") and var != "MEMFRAME_BACKEND":
            monkeypatch.delenv(var)


@pytest.fixture
def audit_version() -> str:
    try:
        return importlib.metadata.version(DIST)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(
            f"the {DIST} distribution is not installed "
            "(run: .venv/bin/pip install -e plugins/memframe-audit-log)"
        )


def open_frame(tmp_path: Path, **options) -> memframe.MemoryFrame:
    project = tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    options.setdefault("strict", True)
    return memframe.open(
        project,
        home=tmp_path / "home",
        config_dir=tmp_path / "config",
        autoload_plugins=True,
        builtin_layers=(),  # only the plugin under test (and the recorder) react
        **options,
    )


def run_script(session: memframe.Session, planted: str = PLANTED) -> None:
    """message, tool use, file read, stop, close — with ``planted`` in every text field."""
    session.on_message(Message.user(f"please read app.py, the key is {planted}"))
    read = ToolUseBlock(id="toolu_01", name="Read", input={"file_path": f"/p/{planted}.txt"})
    session.on_message(
        Message.assistant(
            ThinkingBlock(f"thinking about {planted}"),
            f"Reading it ({planted}).",
            read,
            id="msg_01",
            usage=Usage(input_tokens=1200, output_tokens=40),
        )
    )
    file_text = f"API_KEY = '{planted}'\n"
    session.on_tool_use(read, ToolResultBlock(tool_use_id="toolu_01", content=file_text))
    session.on_file_read("/p/app.py", file_text)
    final = Message.assistant(f"Done: {planted}", id="msg_02")
    session.on_message(final)
    session.on_stop(final)
    session.close()


def read_log(path: Path) -> list[dict]:
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    return [json.loads(line) for line in raw.decode("ascii").splitlines()]


def file_mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_discovered_through_its_entry_point(tmp_path, audit_version):
    eps = importlib.metadata.entry_points(group="memframe")
    assert LAYER in eps.names
    assert eps[LAYER].value == "memframe_audit_log:AuditLog"
    with open_frame(tmp_path) as frame:
        infos = {info.name: info for info in frame.layers()}
        assert LAYER in infos
        info = infos[LAYER]
        assert info.origin == "entry point"
        assert info.target == "memframe_audit_log:AuditLog"
        assert info.distribution == DIST
        assert info.version == audit_version
        layer = frame.manager.get_plugin(LAYER)
        assert type(layer).__module__ == "memframe_audit_log"


def test_scripted_session_is_logged_in_order(tmp_path, audit_version):
    recorder = HookRecorder()
    with open_frame(tmp_path, layers=[recorder]) as frame:
        session = frame.session("s1")
        run_script(session)
        log_path = session.dir / "audit.jsonl"

    records = read_log(log_path)
    assert [r["hook"] for r in records] == SCRIPT_HOOKS
    # The layer saw exactly what every layer saw (the recorder is a second, independent witness).
    assert [r["hook"] for r in records] == [n for n in recorder.names() if n in SESSION_HOOKS]
    assert file_mode(log_path) == 0o600
    assert {r["session"] for r in records} == {"s1"}
    stamps = [datetime.fromisoformat(r["ts"]) for r in records]
    assert all(ts.utcoffset() is not None for ts in stamps)
    assert stamps == sorted(stamps)

    user, assistant, tool, read, final, stop, end = records[1:]
    assert user["role"] == "user"
    assert user["blocks"] == ["text"]
    assert user["chars"] == len(f"please read app.py, the key is {PLANTED}")
    assert assistant["id"] == "msg_01"
    assert assistant["blocks"] == ["thinking", "text", "tool_use"]
    assert assistant["tool_uses"] == [{"id": "toolu_01", "name": "Read"}]
    assert assistant["usage"]["input_tokens"] == 1200
    assert assistant["usage"]["output_tokens"] == 40
    assert assistant["context_tokens"] == 1240
    assert tool["tool"] == "Read"
    assert tool["tool_use_id"] == "toolu_01"
    assert tool["input_keys"] == ["file_path"]
    assert tool["is_error"] is False
    assert tool["result_chars"] == len(f"API_KEY = '{PLANTED}'\n")
    assert read["path"] == "/p/app.py"
    assert read["chars"] == tool["result_chars"]
    assert final["id"] == "msg_02"
    assert stop["message_id"] == "msg_02"
    assert end["reason"] == "close"
    assert end["messages"] == 3
    assert end["tool_calls"] == 1


def test_a_read_only_view_is_not_logged(tmp_path, audit_version):
    with open_frame(tmp_path) as frame:
        session = frame.session("s1")
        run_script(session)
        log_path = session.dir / "audit.jsonl"
        logged = log_path.read_bytes()
        with frame.inspect("s1") as view:
            assert view.pre_compact() == []
            view.context()
    assert log_path.read_bytes() == logged
    with open_frame(tmp_path) as frame, frame.session("s1") as session:
        session.pre_compact()  # a real compaction is logged
    assert [r["hook"] for r in read_log(log_path)][-3:] == [
        "on_session_start",
        "on_pre_compact",
        "on_session_end",
    ]


def test_no_message_text_reaches_the_log(tmp_path, audit_version):
    with open_frame(tmp_path) as frame:
        session = frame.session("secret-session")
        run_script(session)
        log_path = session.dir / "audit.jsonl"
    raw = log_path.read_bytes()
    assert len(read_log(log_path)) == len(SCRIPT_HOOKS)
    assert PLANTED.encode() not in raw
    assert b"PLANTED" not in raw
    assert b"API_KEY" not in raw


def test_disabled_plugins_prevents_loading(tmp_path, audit_version, monkeypatch):
    monkeypatch.setenv("MEMFRAME_DISABLED_PLUGINS", LAYER)
    with open_frame(tmp_path) as frame:
        assert LAYER not in [info.name for info in frame.layers()]
        assert frame.manager.get_plugin(LAYER) is None
        session = frame.session("s1")
        run_script(session)
        assert not (session.dir / "audit.jsonl").exists()


def test_env_var_path_is_shared_by_sessions(tmp_path, audit_version, monkeypatch):
    log_path = tmp_path / "logs" / "nested" / "audit.jsonl"  # parents do not exist yet
    monkeypatch.setenv("MEMFRAME_AUDIT_LOG", str(log_path))
    with open_frame(tmp_path) as frame:
        first, second = frame.session("a"), frame.session("b")
        first.on_message(Message.user("one"))
        second.on_message(Message.user("two"))
        first.close()
        second.close()
        assert not (first.dir / "audit.jsonl").exists()
    records = read_log(log_path)
    assert [(r["hook"], r["session"]) for r in records] == [
        ("on_session_start", "a"),
        ("on_session_start", "b"),
        ("on_message", "a"),
        ("on_message", "b"),
        ("on_session_end", "a"),
        ("on_session_end", "b"),
    ]
    assert file_mode(log_path) == 0o600
    assert stat.S_IMODE(log_path.parent.stat().st_mode) == 0o700


def test_settings_path_relative_to_config_dir(tmp_path, audit_version):
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "settings.json").write_text(
        json.dumps({"audit_log": {"path": "audit/all.jsonl"}})
    )
    with open_frame(tmp_path) as frame:
        run_script(frame.session("s1"))
    records = read_log(config_dir / "audit" / "all.jsonl")
    assert [r["hook"] for r in records] == SCRIPT_HOOKS


def test_env_var_wins_over_settings(tmp_path, audit_version, monkeypatch):
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "settings.json").write_text(json.dumps({"audit_log": {"path": "from-settings"}}))
    monkeypatch.setenv("MEMFRAME_AUDIT_LOG", str(tmp_path / "from-env.jsonl"))
    with open_frame(tmp_path) as frame:
        frame.session("s1").close()
    assert len(read_log(tmp_path / "from-env.jsonl")) == 2
    assert not (config_dir / "from-settings").exists()


@pytest.mark.parametrize("section", [["not", "an", "object"], {"path": 42}, {"path": " "}])
def test_bad_settings_fail_loudly(tmp_path, audit_version, section):
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "settings.json").write_text(json.dumps({"audit_log": section}))
    with pytest.raises(LayerLoadError, match=r"audit_log"):
        open_frame(tmp_path)


def test_existing_file_is_appended_to(tmp_path, audit_version, monkeypatch):
    log_path = tmp_path / "audit.jsonl"
    log_path.write_text('{"hook":"earlier"}\n')
    log_path.chmod(0o600)
    monkeypatch.setenv("MEMFRAME_AUDIT_LOG", str(log_path))
    with open_frame(tmp_path) as frame:
        frame.session("s1").close()
    assert [r["hook"] for r in read_log(log_path)] == [
        "earlier",
        "on_session_start",
        "on_session_end",
    ]


def test_write_failure_is_reported_not_swallowed(tmp_path, audit_version, monkeypatch):
    target = tmp_path / "a-directory"
    target.mkdir()
    monkeypatch.setenv("MEMFRAME_AUDIT_LOG", str(target))
    recorder = HookRecorder()
    with open_frame(tmp_path, layers=[recorder], strict=False) as frame:
        session = frame.session("s1")
        session.on_message(Message.user("hello"))
        # every other layer still ran
        assert recorder.names().count("on_message") == 1
        failures = [(c.kwargs["layer"], c.kwargs["hook"]) for c in recorder.of("on_layer_error")]
        assert (LAYER, "on_message") in failures
        error = recorder.of("on_layer_error")[-1].kwargs["error"]
        assert isinstance(error, IsADirectoryError)


def test_write_failure_raises_in_strict_mode(tmp_path, audit_version, monkeypatch):
    target = tmp_path / "a-directory"
    target.mkdir()
    monkeypatch.setenv("MEMFRAME_AUDIT_LOG", str(target))
    frame = open_frame(tmp_path)
    try:
        with pytest.raises(ExceptionGroup) as caught:
            frame.session("s1")
        assert caught.group_contains(IsADirectoryError)
    finally:
        frame.manager.strict = False
        frame.close()


def test_layer_errors_of_other_layers_are_logged_without_their_message(
    tmp_path, audit_version, monkeypatch
):
    class Broken:
        name = "broken"

        @memframe.hookimpl
        def on_message(self, session, message):
            raise ValueError(f"cannot parse {message.text}")

    log_path = tmp_path / "audit.jsonl"
    monkeypatch.setenv("MEMFRAME_AUDIT_LOG", str(log_path))
    with open_frame(tmp_path, layers=[Broken()], strict=False) as frame:
        frame.session("s1").on_message(Message.user(PLANTED))
    records = read_log(log_path)
    errors = [r for r in records if r["hook"] == "on_layer_error"]
    assert errors == [
        {
            "ts": errors[0]["ts"],
            "hook": "on_layer_error",
            "session": "s1",
            "layer": "broken",
            "failed_hook": "on_message",
            "error_type": "ValueError",
        }
    ]
    assert PLANTED.encode() not in log_path.read_bytes()


def test_concurrent_writers_never_interleave(tmp_path, audit_version, monkeypatch):
    log_path = tmp_path / "audit.jsonl"
    monkeypatch.setenv("MEMFRAME_AUDIT_LOG", str(log_path))
    writers, messages = 4, 150
    frames = [open_frame(tmp_path / f"w{i}") for i in range(writers)]
    start = threading.Barrier(writers)

    def write(index: int) -> None:
        session = frames[index].session(f"w{index}")
        start.wait()
        for n in range(messages):
            session.on_message(Message.user("x" * (n * 37 % 4000)))
        session.close()

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for frame in frames:
        frame.close()
    records = read_log(log_path)  # every line is one whole JSON object
    assert len(records) == writers * (messages + 2)
    for i in range(writers):
        mine = [r for r in records if r["session"] == f"w{i}" and r["hook"] == "on_message"]
        assert [r["chars"] for r in mine] == [n * 37 % 4000 for n in range(messages)]


WRITER_SCRIPT = """
import sys
import memframe
project, home, session_id, count = sys.argv[1:]
with memframe.open(project, home=home, config_dir=home, builtin_layers=(), strict=True) as frame:
    session = frame.session(session_id)
    print("ready", flush=True)
    sys.stdin.readline()  # start together with the other writer
    for n in range(int(count)):
        session.on_message(memframe.Message.user("y" * n))
"""


def test_concurrent_processes_never_interleave(tmp_path, audit_version, monkeypatch):
    log_path = tmp_path / "audit.jsonl"
    monkeypatch.setenv("MEMFRAME_AUDIT_LOG", str(log_path))
    project = tmp_path / "project"
    project.mkdir()
    count = 2000
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER_SCRIPT,
                str(project),
                str(tmp_path / f"h{i}"),
                f"p{i}",
                str(count),
            ],
            env=os.environ.copy(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        assert [proc.wait(timeout=120) for proc in procs] == [0, 0]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            if proc.stdout is not None:
                proc.stdout.close()
    records = read_log(log_path)  # every line is one whole JSON object
    assert len(records) == 2 * (count + 2)
    for i in range(2):
        mine = [
            r["chars"] for r in records if r["session"] == f"p{i}" and r["hook"] == "on_message"
        ]
        assert mine == list(range(count))
