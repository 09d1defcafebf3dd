"""The session memory layer (docs/session-memory.md) on the offline backend and on scripted
backends."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memframe import _backend
from memframe.background.serial import SerialRunner
from memframe.hookspecs import hookimpl
from memframe.layers.session_memory import NOTES_DIR, NOTES_FILE, SessionMemoryLayer
from memframe.models import ModelError, ModelRequest, ModelResponse, ToolCall
from memframe.replay import replay
from memframe.session_memory import NotesFormatError, Template, bundled_text, parse_sections
from memframe.testing import ScriptedBackend
from memframe.transcripts import events as ev
from memframe.transcripts import open_transcript
from tests.layers.memdir_helpers import held_until

SESSION_MEMORY = "memframe.layers.session_memory:SessionMemoryLayer"
DATA = Path(__file__).parents[1] / "data" / "transcripts"
TRANSCRIPTS = sorted(DATA.glob("*.jsonl"))
TEMPLATE = Template(bundled_text("template.md"))


def usage(tokens: int) -> dict[str, int]:
    return {"input_tokens": max(tokens - 100, 0), "output_tokens": min(tokens, 100)}


def assistant(tokens: int, *tools: str, msg_id: str | None = None, text: str = "ok") -> dict:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for n, name in enumerate(tools):
        content.append(
            {"type": "tool_use", "id": f"{msg_id or tokens}-{n}", "name": name, "input": {}}
        )
    return {
        "role": "assistant",
        "id": msg_id or f"msg_{tokens}_{len(tools)}",
        "content": content,
        "usage": usage(tokens),
    }


def layer_of(frame) -> SessionMemoryLayer:
    layer = frame.manager.get_plugin("session_memory")
    assert isinstance(layer, SessionMemoryLayer)
    return layer


def extractions(session) -> list[dict[str, Any]]:
    return session.state.section("session_memory").get("extractions", [])


@pytest.fixture
def sm_frame(memframe_open):
    """Frames with the session memory layer; extractions run inline (done when the hook that
    triggered them returns) unless a test passes ``synchronous_background=False``."""

    def make(**options: Any):
        return memframe_open(builtin_layers=[SESSION_MEMORY], **options)

    return make


# -- the trigger ---------------------------------------------------------------------------------


def test_nothing_before_the_init_threshold(sm_frame):
    frame = sm_frame()
    session = frame.session("s1")
    session.on_message({"role": "user", "content": "hi"})
    session.on_message(assistant(9_999))  # idle turn, growth 9,999 ≥ 5,000, but not initialised
    assert extractions(session) == []
    assert not session.state.section("session_memory").get("initialized")
    session.on_message(assistant(10_000, msg_id="m2"))
    assert [e["index"] for e in extractions(session)] == [2]
    assert extractions(session)[0]["reason"] == "idle_turn"


def test_growth_and_tool_calls_must_both_hold(sm_frame):
    frame = sm_frame()
    session = frame.session("s1")
    session.on_message({"role": "user", "content": "go"})
    session.on_message(assistant(12_000, "Bash", "Bash", "Bash", msg_id="a"))  # 3 calls: fires
    assert [e["reason"] for e in extractions(session)] == ["tool_calls"]
    # growth below 5,000 never fires, whatever the tool calls
    session.on_message(assistant(16_999, "Read", "Read", "Read", "Read", msg_id="b"))
    assert len(extractions(session)) == 1
    # growth reached and 4 tool calls since the last extraction: fires
    session.on_message(assistant(17_000, msg_id="c", text="thinking"))
    assert [e["reason"] for e in extractions(session)] == ["tool_calls", "tool_calls"]
    assert extractions(session)[1]["growth"] == 5_000
    assert extractions(session)[1]["tool_calls"] == 4
    session.on_message(assistant(23_000, "Bash", msg_id="d"))  # growth ok, 1 call, has tools
    assert len(extractions(session)) == 2
    session.on_message(assistant(23_500, "Bash", "Bash", msg_id="e"))  # 3 calls since: fires
    assert [e["index"] for e in extractions(session)] == [1, 3, 5]
    frame.flush()


def test_split_records_of_one_response_count_usage_once(sm_frame):
    frame = sm_frame()
    session = frame.session("s1")
    session.on_message({"role": "user", "content": "go"})
    first = assistant(11_000, msg_id="same")
    session.on_message(first)
    second = assistant(11_000, msg_id="same", text="more of the same response")
    session.on_message(second)  # the same response id again (a split record): no new usage
    assert session.context_tokens == 11_000
    assert len(extractions(session)) == 1
    frame.flush()


def test_thresholds_come_from_settings(sm_frame, tmp_path):
    settings = {
        "session_memory": {
            "minimum_message_tokens_to_init": 100,
            "minimum_tokens_between_update": 50,
            "tool_calls_between_updates": 1,
        }
    }
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.json").write_text(json.dumps(settings))
    frame = sm_frame()
    session = frame.session("s1")
    session.on_message({"role": "user", "content": "go"})
    session.on_message(assistant(150, "Bash", msg_id="a"))
    session.on_message(assistant(210, "Bash", msg_id="b"))
    assert [e["index"] for e in extractions(session)] == [1, 2]
    frame.flush()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"session_memory": {"minimum_tokens_between_update": "5k"}}, "must be an integer"),
        ({"session_memory": {"tool_calls_between_updates": 0}}, "must be an integer >= 1"),
        ({"session_memory": {"enabled": 1}}, "true or false"),
        ({"session_memory": {"bogus": 1}}, "unknown setting 'bogus'"),
        ({"session_memory": []}, "must be an object"),
    ],
)
def test_bad_settings_are_a_clear_error(tmp_path, settings, message):
    from memframe._manager import LayerLoadError
    from memframe.testing import open_test_frame

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.json").write_text(json.dumps(settings))
    with pytest.raises(LayerLoadError, match=message):
        open_test_frame(tmp_path, builtin_layers=[SESSION_MEMORY])


# -- independent computation over the shared transcripts ----------------------------------------


def expected_trigger_indices(path: Path) -> list[int]:
    """The rule of docs/session-memory.md computed here, separately from the layer and its meter."""
    seen_ids: set[str] = set()
    reported = estimated = 0
    initialised = False
    at_last = 0
    calls_since = 0
    fired: list[int] = []
    index = -1
    for event in ev.derive_events(open_transcript(path)):
        if isinstance(event, ev.CompactEvent):
            reported, estimated = 0, 0
            continue
        if not isinstance(event, ev.MessageEvent):
            continue
        index += 1
        message = event.message
        if message.role == "assistant" and message.usage is not None:
            if message.id is None or message.id not in seen_ids:
                if message.id is not None:
                    seen_ids.add(message.id)
                u = message.usage
                reported = (
                    u.input_tokens
                    + u.output_tokens
                    + u.cache_creation_input_tokens
                    + u.cache_read_input_tokens
                )
                estimated = 0
        else:
            estimated += _backend.count_tokens(message.estimable_text())
        if message.role != "assistant":
            continue
        tokens = reported + estimated
        calls = sum(1 for b in message.content if b.type == "tool_use")
        calls_since += calls
        at_last = min(at_last, tokens)
        if not initialised:
            if tokens < 10_000:
                continue
            initialised = True
        if tokens - at_last >= 5_000 and (calls_since >= 3 or calls == 0):
            fired.append(index)
            at_last = tokens
            calls_since = 0
    return fired


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name[:40])
def test_replay_extracts_exactly_where_the_rule_says(sm_frame, path):
    frame = sm_frame()
    report = replay(path, frame)
    assert report.layer_errors == []
    records = report.state.get("session_memory", {}).get("extractions", [])
    by_rule = [r for r in records if r["reason"] in ("tool_calls", "idle_turn")]
    assert [r["index"] for r in by_rule] == expected_trigger_indices(path)
    assert all(r["status"] in ("updated", "unchanged", "coalesced") for r in records), records
    # offline: the turn ends and the session end bring the notes up to date at once
    catch_ups = [r for r in records if r not in by_rule]
    assert all(r["reason"] in ("stop", "pre_compact", "session_end") for r in catch_ups)
    if records:
        assert max(r["index"] for r in records) == report.messages - 1


def test_the_big_transcripts_do_trigger():
    # the comparison above must not be vacuous
    claude = [p for p in TRANSCRIPTS if "claude-code-viewer" in p.name]
    assert claude
    assert all(expected_trigger_indices(p) for p in claude)
    assert sum(len(expected_trigger_indices(p)) for p in claude) >= 4


def facts_until(path: Path, last_index: int) -> tuple[set[str], set[str], int]:
    """Files touched, shell commands and failed tool results in messages 0..last_index."""
    messages = [
        e.message for e in ev.derive_events(open_transcript(path)) if isinstance(e, ev.MessageEvent)
    ][: last_index + 1]
    files = {
        b.input["file_path"]
        for m in messages
        for b in m.tool_uses
        if isinstance(b.input.get("file_path"), str)
    }
    commands = {
        b.input["command"]
        for m in messages
        for b in m.tool_uses
        if b.name == "Bash" and isinstance(b.input.get("command"), str)
    }
    errors = sum(1 for m in messages for r in m.tool_results if r.is_error)
    return files, commands, errors


@pytest.mark.parametrize(
    "path", [p for p in TRANSCRIPTS if "claude-code-viewer" in p.name], ids=lambda p: p.name[:40]
)
def test_offline_notes_name_the_files_commands_and_errors(sm_frame, path):
    frame = sm_frame()
    report = replay(path, frame)
    notes = (report.session_dir / NOTES_DIR / NOTES_FILE).read_text(encoding="utf-8")
    TEMPLATE.check(notes)
    _, sections = parse_sections(notes)
    body = {s.title: s.body for s in sections}
    last = report.state["session_memory"]["extractions"][-1]["index"]
    files, commands, errors = facts_until(path, last)
    assert files or commands
    for file in files:
        assert f"`{file}`" in body["Files and Functions"], file
    for command in commands:
        assert " ".join(command.split())[:60] in body["Workflow"], command
    assert body["Errors & Corrections"].count(" failed: ") >= min(errors, 1)
    assert body["Session Title"]
    assert body["Worklog"].startswith("- ")


# -- files, permissions, compaction --------------------------------------------------------------


def drive(session, turns: int = 1, tokens: int = 11_000, tag: str = "") -> None:
    session.on_message({"role": "user", "content": "Fix the failing test in src/app.py"})
    for n in range(turns):
        session.on_message(
            {
                "role": "assistant",
                "id": f"{tag}m{n}",
                "content": [
                    {"type": "text", "text": "Running the tests."},
                    {
                        "type": "tool_use",
                        "id": f"{tag}t{n}",
                        "name": "Bash",
                        "input": {"command": "pytest -q"},
                    },
                ],
                "usage": usage(tokens + n * 6_000),
            }
        )
        session.on_message(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"{tag}t{n}",
                        "content": "1 failed",
                        "is_error": True,
                    }
                ],
            }
        )
        session.on_message(assistant(tokens + n * 6_000 + 10, msg_id=f"{tag}r{n}", text="Done."))


def test_notes_file_is_private_and_holds_the_template(sm_frame):
    frame = sm_frame()
    session = frame.session("s1")
    drive(session)
    frame.flush()
    path = session.dir / NOTES_DIR / NOTES_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    notes = path.read_text()
    TEMPLATE.check(notes)
    assert "`pytest -q`" in notes
    assert "1 failed" in notes


def test_pre_compact_returns_the_notes(sm_frame):
    frame = sm_frame(synchronous_background=False)  # pre_compact waits for the extraction
    session = frame.session("s1")
    assert session.pre_compact() == []  # no notes yet
    drive(session)
    kept = session.pre_compact()
    assert len(kept) == 1
    assert "# Current State" in kept[0]
    assert "Fix the failing test" in kept[0]


def test_pre_compact_cuts_the_notes_to_the_budget(sm_frame):
    frame = sm_frame()
    session = frame.session("s1")
    drive(session)
    frame.flush()
    path = session.dir / NOTES_DIR / NOTES_FILE
    notes = path.read_text()
    huge = "\n".join(f"- line {n} " + "word " * 30 for n in range(2_000))
    path.write_text(
        notes.replace(
            "_Terse, step by step: what was tried and what was done_",
            "_Terse, step by step: what was tried and what was done_\n" + huge,
        )
    )
    kept = session.pre_compact()[0]
    assert _backend.count_tokens(kept) < 2_000 + _backend.count_tokens(notes) + 200
    assert "truncated" in kept


def test_session_end_waits_for_the_extraction(sm_frame):
    frame = sm_frame(synchronous_background=False)
    session = frame.session("s1")
    drive(session)
    session.close()
    assert extractions(session)[0]["status"] == "updated"
    saved = json.loads((session.dir / "state.json").read_text())
    assert saved["session_memory"]["extractions"][0]["status"] == "updated"


# -- one at a time, bounded waits ----------------------------------------------------------------


def threaded_frame(sm_frame, release: threading.Event) -> tuple[ScriptedBackend, Any]:
    """A frame whose extractions run on worker threads, each model call held until ``release``;
    the model writes nothing."""
    backend = ScriptedBackend(name="gated", default=held_until(release, "nothing to add"))
    return backend, sm_frame(model=backend, synchronous_background=False)


def test_one_extraction_at_a_time_and_triggers_meanwhile_coalesce(sm_frame):
    release = threading.Event()
    backend, frame = threaded_frame(sm_frame, release)
    session = frame.session("s1")
    session.on_message({"role": "user", "content": "go"})
    for n in range(4):  # each idle turn grows by 6,000 tokens: four triggers
        session.on_message(assistant(11_000 + 6_000 * n, msg_id=f"a{n}"))
    statuses = [e["status"] for e in extractions(session)]
    assert len(statuses) == 4
    assert statuses[1:3] == ["coalesced", "coalesced"]  # only the latest waits its turn
    start = time.monotonic()
    session.on_message(assistant(40_000, msg_id="fast"))  # the caller is never blocked
    assert time.monotonic() - start < 0.5
    release.set()
    frame.flush()
    assert backend.max_concurrent == 1
    assert backend.calls == 2  # the first, then one trailing run for the latest trigger
    statuses = [e["status"] for e in extractions(session)]
    assert statuses == ["unchanged", "coalesced", "coalesced", "coalesced", "unchanged"]


def test_wait_is_bounded_and_stale_runs_are_not_waited_for():
    runner: SerialRunner[int] = SerialRunner(lambda job: None)
    runner.in_flight = True
    runner.started_at = time.monotonic()
    start = time.monotonic()
    assert runner.wait(timeout=0.2, stale_after=60) is False
    assert 0.15 < time.monotonic() - start < 2
    runner.started_at = time.monotonic() - 61  # started over a minute ago: stale
    start = time.monotonic()
    assert runner.wait(timeout=15, stale_after=60) is False
    assert time.monotonic() - start < 0.5
    runner.in_flight = False
    assert runner.wait(timeout=0, stale_after=60) is True


def test_pre_compact_gives_up_after_the_bound(sm_frame):
    release = threading.Event()
    _, frame = threaded_frame(sm_frame, release)
    assert layer_of(frame).wait_timeout == 15.0
    assert layer_of(frame).stale_after == 60.0
    layer_of(frame).wait_timeout = 0.3
    session = frame.session("s1")
    drive(session)
    start = time.monotonic()
    assert session.pre_compact() == []
    assert time.monotonic() - start < 3
    release.set()
    frame.flush()


# -- the feature gate and remote thresholds ------------------------------------------------------


class RemoteGates:
    name = "remote-gates"

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self.calls = 0

    @hookimpl
    def provide_config(self, frame):
        self.calls += 1
        return self.values


def test_the_gate_turns_the_layer_off(sm_frame):
    gates = RemoteGates({"session_memory.enabled": False})
    frame = sm_frame(layers=[gates])
    frame.remote_config.get("session_memory.enabled")
    frame.flush()
    session = frame.session("s1")
    drive(session, turns=3)
    assert extractions(session) == []
    assert gates.calls == 1  # cached


def test_remote_thresholds_apply_and_bad_remote_values_are_ignored(sm_frame, caplog):
    gates = RemoteGates(
        {
            "session_memory.minimum_message_tokens_to_init": 50,
            "session_memory.minimum_tokens_between_update": 10,
            "session_memory.tool_calls_between_updates": "three",  # wrong type: ignored
        }
    )
    frame = sm_frame(layers=[gates])
    frame.remote_config.get("x")
    frame.flush()
    session = frame.session("s1")
    session.on_message({"role": "user", "content": "go"})
    session.on_message(assistant(60, msg_id="a"))
    session.on_message(assistant(75, msg_id="b"))
    assert [e["index"] for e in extractions(session)] == [1, 2]
    assert "tool_calls_between_updates" in caplog.text


def test_a_slow_config_provider_never_blocks_on_message(sm_frame):
    release = threading.Event()

    class Slow:
        name = "slow-config"

        @hookimpl
        def provide_config(self, frame):
            release.wait(10)
            return {"session_memory.enabled": False}

    frame = sm_frame(layers=[Slow()], synchronous_background=False)
    session = frame.session("s1")
    start = time.monotonic()
    drive(session)  # defaults apply meanwhile: the extraction fires
    assert time.monotonic() - start < 1
    assert len(extractions(session)) == 1
    release.set()
    frame.flush()
    drive(session, tokens=40_000, tag="later-")  # now gated off
    assert len(extractions(session)) == 1


# -- overrides -----------------------------------------------------------------------------------


def test_user_template_and_prompt_overrides(tmp_path, sm_frame):
    config = tmp_path / "config" / "session-memory"
    config.mkdir(parents=True)
    (config / "template.md").write_text("# Goal\n_What we want_\n\n# Commands\n_What ran_\n")
    (config / "prompt.md").write_text("Update {{notes_path}} please.\n{{current_notes}}")
    frame = sm_frame()
    session = frame.session("s1")
    drive(session)
    frame.flush()
    notes = (session.dir / NOTES_DIR / NOTES_FILE).read_text()
    assert notes.startswith("# Goal\n_What we want_\n")
    assert "# Session Title" not in notes


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("template.md", "no headers here\n", "at least one '# Header'"),
        ("template.md", "# A\n_a_\n# A\n_b_\n", "duplicate section"),
        ("prompt.md", "Update the notes.", "must contain {{notes_path}}"),
    ],
)
def test_bad_overrides_are_a_clear_error(tmp_path, name, text, message):
    from memframe._manager import LayerLoadError
    from memframe.testing import open_test_frame

    config = tmp_path / "config" / "session-memory"
    config.mkdir(parents=True)
    (config / name).write_text(text)
    with pytest.raises(LayerLoadError, match=message):
        open_test_frame(tmp_path, builtin_layers=[SESSION_MEMORY])


# -- bad input -----------------------------------------------------------------------------------


def test_a_transcript_without_usage_uses_estimates(sm_frame):
    frame = sm_frame()
    session = frame.session("s1")
    session.on_message({"role": "user", "content": "word " * 12_000})
    session.on_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    assert session.context_tokens > 10_000
    assert len(extractions(session)) == 1
    frame.flush()


def test_notes_edited_into_an_unparseable_state_are_kept_aside(sm_frame):
    frame = sm_frame()
    session = frame.session("s1")
    drive(session)
    frame.flush()
    path = session.dir / NOTES_DIR / NOTES_FILE
    path.write_text("I deleted all the headers, oops\n")
    drive(session, tokens=30_000, tag="second-")
    frame.flush()
    kept = list(path.parent.glob(f"{NOTES_FILE}.corrupt-*"))
    assert [p.read_text() for p in kept] == ["I deleted all the headers, oops\n"]
    TEMPLATE.check(path.read_text())
    assert "notes_reset" in extractions(session)[-1]


def test_notes_that_are_not_utf8_are_kept_aside(sm_frame):
    frame = sm_frame()
    session = frame.session("s1")
    path = session.dir / NOTES_DIR / NOTES_FILE
    path.parent.mkdir(mode=0o700)
    path.write_bytes(b"\xff\xfe not text")
    drive(session)
    frame.flush()
    assert [p.read_bytes() for p in path.parent.glob("*.corrupt-*")] == [b"\xff\xfe not text"]
    TEMPLATE.check(path.read_text())


def edit(old: str, new: str, path: str | None = None) -> Any:
    def reply(request: ModelRequest) -> ModelResponse:
        target = path or request.task["notes_path"]
        return ModelResponse(
            tool_calls=(
                ToolCall("c1", "Edit", {"file_path": target, "old_string": old, "new_string": new}),
            ),
            stop_reason="tool_use",
        )

    return reply


def run_with(sm_frame, backend, *, strict: bool = False):
    frame = sm_frame(model=backend, strict=strict)
    session = frame.session("s1")
    drive(session)
    frame.flush()
    return frame, session, session.dir / NOTES_DIR / NOTES_FILE


def test_an_update_that_breaks_a_header_is_refused(sm_frame):
    backend = ScriptedBackend(edit("# Current State\n", "# State\n"))
    _frame, session, path = run_with(sm_frame, backend)
    assert path.read_text() == TEMPLATE.text  # created from the template, never corrupted
    record = extractions(session)[0]
    assert record["status"] == "failed"
    assert "Current State" in record["error"]


def test_garbage_from_the_model_fails_cleanly(sm_frame):
    backend = ScriptedBackend(ModelError("the provider sent half a JSON document"))
    _frame, session, path = run_with(sm_frame, backend)
    assert path.read_text() == TEMPLATE.text
    assert extractions(session)[0]["status"] == "failed"
    assert "half a JSON" in extractions(session)[0]["error"]


def test_a_model_edit_of_another_file_is_refused(sm_frame, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    backend = ScriptedBackend(
        edit("keep me", "pwned", path=str(victim)),
        edit(
            "_Terse, step by step: what was tried and what was done_\n",
            "_Terse, step by step: what was tried and what was done_\n- fixed it\n",
        ),
    )
    _frame, session, path = run_with(sm_frame, backend)
    assert victim.read_text() == "keep me"
    record = extractions(session)[0]
    assert record["status"] == "updated"
    assert "- fixed it" in path.read_text()
    assert len(record["refused"]) == 1 and "outside" in record["refused"][0]
    # the refusal went back to the model as an error tool result
    answer = backend.requests[1].messages[-1]["content"][0]
    assert answer["is_error"] is True and "Permission denied" in answer["content"]


def test_an_unconfigured_backend_is_reported_once(sm_frame):
    from memframe.testing import HookRecorder

    recorder = HookRecorder()
    frame = sm_frame(layers=[recorder], model="anthropic", strict=False)
    session = frame.session("s1")
    drive(session, turns=3)
    frame.flush()
    errors = recorder.of("on_layer_error")
    assert len(errors) == 1
    assert "ANTHROPIC_API_KEY" in str(errors[0].kwargs["error"])
    statuses = [e["status"] for e in extractions(session)]
    assert "skipped" in statuses
    assert set(statuses) <= {"skipped", "coalesced"}


def test_fork_request_reuses_the_parents_prompt_and_messages(sm_frame):
    backend = ScriptedBackend()
    frame = sm_frame(model=backend)
    session = frame.session("s1")
    tools = [
        {"name": "Bash", "description": "run", "input_schema": {"type": "object"}},
        {"name": "Edit", "description": "edit", "input_schema": {"type": "object"}},
    ]
    session.set_prompt(system="You are the host agent.", tools=tools)
    drive(session)
    frame.flush()
    request = backend.requests[0]
    assert request.system == "You are the host agent."
    assert [t.to_wire() for t in request.tools] == tools
    history = [m.to_wire() for m in session.history]
    assert request.cache_prefix == len(history)
    assert list(request.messages[: request.cache_prefix]) == history
    assert request.messages[-1]["role"] == "user"
    assert "summary.md" in request.messages[-1]["content"][-1]["text"]


def test_instruction_answers_tool_calls_the_parent_left_open(sm_frame):
    backend = ScriptedBackend()
    frame = sm_frame(model=backend)
    session = frame.session("s1")
    session.on_message({"role": "user", "content": "go"})
    session.on_message(assistant(12_000, "Bash", "Bash", "Bash", msg_id="open"))
    frame.flush()
    first_blocks = backend.requests[0].messages[-1]["content"]
    assert [b["type"] for b in first_blocks] == ["tool_result"] * 3 + ["text"]
    assert [b["tool_use_id"] for b in first_blocks[:3]] == ["open-0", "open-1", "open-2"]


def test_symlinked_notes_file_is_never_written_through(sm_frame, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text(TEMPLATE.text)
    frame = sm_frame()
    session = frame.session("s1")
    path = session.dir / NOTES_DIR / NOTES_FILE
    path.parent.mkdir(mode=0o700)
    os.symlink(outside, path)
    drive(session)
    frame.flush()
    assert outside.read_text() == TEMPLATE.text
    assert extractions(session)[0]["refused"]


def test_notes_format_errors_name_the_problem():
    with pytest.raises(NotesFormatError, match="Worklog"):
        TEMPLATE.check(TEMPLATE.text.replace("# Worklog", "# Work log"))
    with pytest.raises(NotesFormatError, match="Learnings"):
        TEMPLATE.check(TEMPLATE.text.replace("_What worked", "_what worked"))
