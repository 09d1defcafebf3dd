"""Extract memories (docs/memdir.md, extract_memories): at the end of a turn without tool
calls, a forked agent saves what
the new part of the conversation taught, in the background, never twice, only inside the memory
directory."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memframe._manager import LayerLoadError
from memframe.layers.extract_memories import ExtractMemoriesLayer
from memframe.memdir import MemoryStore, parse_memory
from memframe.memdir.files import MEMORY_TYPES
from memframe.models import ModelError, ModelRequest, ModelResponse
from memframe.models.offline import OfflineBackend
from memframe.replay import replay
from memframe.testing import ScriptedBackend
from tests.layers.memdir_helpers import (
    ALL_MEMORY_LAYERS,
    EXTRACT,
    MEMDIR,
    assistant,
    held_until,
    index_entries,
    memory_files,
    memory_text,
    tool_result,
    user,
    write_settings,
    writes,
)

DATA = Path(__file__).parents[1] / "data" / "transcripts"
TRANSCRIPTS = sorted(DATA.glob("*.jsonl"))


def extractor_of(frame) -> ExtractMemoriesLayer:
    layer = frame.manager.get_plugin("extract_memories")
    assert isinstance(layer, ExtractMemoriesLayer)
    return layer


def runs(session) -> list[dict[str, Any]]:
    return session.state.section("extract_memories").get("runs", [])


def cursor(session) -> int:
    return session.state.section("extract_memories").get("cursor", 0)


@pytest.fixture
def ex_frame(memframe_open):
    """Frames with memdir and extraction; the extraction runs inline (done when ``on_stop``
    returns) unless a test about concurrency passes ``synchronous_background=False``."""

    def make(**options):
        return memframe_open(builtin_layers=[MEMDIR, EXTRACT], **options)

    return make


def turn(session, *said: str, reply: str = "Understood.") -> None:
    """The user says each of ``said``; the agent answers without tool calls; the turn ends."""
    for text in said:
        session.on_message(user(text))
    session.on_message(assistant(reply))
    session.on_stop()


def by_body(store: MemoryStore) -> dict[str, str]:
    """Normalised body → type of every memory."""
    return {" ".join(m.body.lower().split()): m.type for m in store.memories()}


def check_index(root: Path) -> None:
    """Every memory file has exactly one index line, every index line a file, each file a type."""
    entries = index_entries((root / "MEMORY.md").read_text(encoding="utf-8"))
    files = memory_files(root)
    assert sorted(entries) == files
    assert len(entries) == len(set(entries))
    for file in files:
        memory = parse_memory((root / file).read_text(encoding="utf-8"), root / file)
        assert memory.type in MEMORY_TYPES, file
        assert memory.name and memory.body


class RecordingOffline(OfflineBackend):
    """The offline backend, keeping every request it answered."""

    name = "recording-offline"

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return super().complete(request)

    def first_requests(self) -> list[ModelRequest]:
        """The opening request of each run (later ones answer the fork's tool calls)."""
        return [r for r in self.requests if r.messages[-1]["content"][-1]["type"] == "text"]


def threaded_frame(ex_frame, release: threading.Event) -> tuple[ScriptedBackend, Any]:
    """A frame whose extractions run on worker threads, each model call held until ``release``."""
    backend = ScriptedBackend(name="gated", default=held_until(release))
    return backend, ex_frame(model=backend, synchronous_background=False)


STATEMENTS = [
    "Remember that the staging database is read-only on weekends.",
    "Remember that my timezone is CET.",
    "Always run ruff before committing.",
    "Never push directly to main.",
    "I prefer small, focused commits.",
]
CORRECTION = "No, use pytest instead of unittest for the new tests."
EXPECTED = {
    "the staging database is read-only on weekends": "feedback",
    "my timezone is cet": "user",
    "always run ruff before committing": "feedback",
    "never push directly to main": "feedback",
    "i prefer small, focused commits": "user",
    "use pytest instead of unittest for the new tests": "feedback",
}


def check_expected(store: MemoryStore) -> None:
    found = by_body(store)
    for phrase, kind in EXPECTED.items():
        matching = [(body, t) for body, t in found.items() if phrase in body]
        assert len(matching) == 1, (phrase, found)
        assert matching[0][1] == kind, (phrase, matching)


# -- when it runs ---------------------------------------------------------------------------------


def test_a_final_message_with_tool_calls_does_nothing(ex_frame):
    frame = ex_frame()
    session = frame.session("s1")
    session.on_message(user(STATEMENTS[2]))
    session.on_message(assistant("Let me check.", ("Bash", {"command": "ruff check"})))
    session.on_stop()
    frame.flush()
    assert runs(session) == []
    assert memory_files(extractor_of(frame).store.root) == []


def test_explicit_statements_become_typed_memories(ex_frame):
    frame = ex_frame()
    store = extractor_of(frame).store
    session = frame.session("s1")
    session.on_message(user(STATEMENTS[0] + " " + STATEMENTS[1]))
    session.on_message(assistant("Noted."))
    session.on_message(user(STATEMENTS[2]))
    session.on_message(assistant("Ok."))
    session.on_message(user(STATEMENTS[3] + "\n" + STATEMENTS[4]))
    session.on_message(assistant("Sure. I'll use unittest for the new tests."))
    turn(session, CORRECTION)
    frame.flush()
    check_expected(store)
    assert len(store.memories()) == len(EXPECTED)
    check_index(store.root)
    (record,) = runs(session)
    assert record["status"] == "saved"
    assert sorted(record["saved"]) == memory_files(store.root)
    assert record["refused"] == [] and record["skipped"] == []
    assert cursor(session) == len(session.history)
    # private types stay private
    assert all(m.scope(store.root) == "private" for m in store.memories())


def test_small_talk_saves_nothing(ex_frame):
    frame = ex_frame()
    session = frame.session("s1")
    turn(session, "What does this function do?", reply="It parses the config.")
    frame.flush()
    assert [r["status"] for r in runs(session)] == ["nothing"]
    assert memory_files(extractor_of(frame).store.root) == []
    assert cursor(session) == 2


def test_it_never_blocks_the_caller(ex_frame):
    release = threading.Event()
    backend, frame = threaded_frame(ex_frame, release)
    session = frame.session("s1")
    session.on_message(user(STATEMENTS[2]))
    session.on_message(assistant("Ok."))
    start = time.monotonic()
    session.on_stop()
    assert time.monotonic() - start < 0.5  # the model call blocks for up to 20 s
    assert backend.wait_for_requests(1, timeout=5)  # the model call is running (and blocked) ...
    started = time.monotonic()
    session.on_message(user("And another thing."))
    session.on_message(assistant("Yes?"))
    session.on_stop()  # ... and on_stop returns at once all the same
    assert time.monotonic() - started < 0.5
    assert runs(session)[0]["status"] == "pending"
    release.set()
    frame.flush()
    assert [r["status"] for r in runs(session)] == ["nothing", "nothing"]


def test_the_same_conversation_again_writes_no_duplicates(ex_frame):
    frame = ex_frame()
    store = extractor_of(frame).store
    for session_id in ("s1", "s2"):
        session = frame.session(session_id)
        session.on_message(user(" ".join(STATEMENTS)))
        session.on_message(assistant("Ok, I'll use unittest."))
        turn(session, CORRECTION)
        frame.flush()
        if session_id == "s1":
            first = {p: (store.root / p).read_text() for p in memory_files(store.root)}
            assert len(first) == len(EXPECTED)
    assert {p: (store.root / p).read_text() for p in memory_files(store.root)} == first
    assert [r["status"] for r in runs(frame.session("s2"))] == ["nothing"]
    check_index(store.root)


def test_disabled_by_settings(ex_frame, tmp_path):
    write_settings(tmp_path, {"extract_memories": {"enabled": False}})
    frame = ex_frame()
    session = frame.session("s1")
    turn(session, STATEMENTS[2])
    frame.flush()
    assert runs(session) == []
    assert memory_files(extractor_of(frame).store.root) == []


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"extract_memories": {"enabled": "yes"}}, "'enabled' must be true or false"),
        ({"extract_memories": {"max_turns": 0}}, "'max_turns' must be an integer >= 1"),
        ({"extract_memories": {"shell": True}}, "unknown setting 'shell'"),
        ({"extract_memories": "on"}, "must be an object"),
    ],
)
def test_bad_settings_fail_at_frame_open(tmp_path, settings, message):
    from memframe.testing import open_test_frame

    write_settings(tmp_path, settings)
    with pytest.raises(LayerLoadError, match=message):
        open_test_frame(tmp_path, builtin_layers=[EXTRACT])


# -- the skip rule and the cursor -----------------------------------------------------------------


def agent_writes(session, path: str, tool: str = "Write", **extra: Any) -> None:
    session.on_message(assistant("Saving that.", (tool, {"file_path": path, **extra}), msg_id="w"))
    session.on_message(tool_result("w-0"))


def test_skipped_when_the_agent_wrote_into_the_memory_dir(ex_frame):
    backend = RecordingOffline()
    frame = ex_frame(model=backend)
    root = extractor_of(frame).store.root
    session = frame.session("s1")
    session.on_message(user("Remember that the release branch is frozen."))
    agent_writes(session, str(root / "release-freeze.md"), content="x")
    session.on_message(assistant("Saved it."))
    session.on_stop()
    frame.flush()
    (record,) = runs(session)
    assert record["status"] == "skipped"
    assert "memory directory" in record["why"]
    assert cursor(session) == len(session.history) == 4
    assert backend.requests == []
    assert memory_files(root) == []
    # the next turn extracts only from the new messages
    turn(session, "Always tag releases with a v prefix.")
    frame.flush()
    assert [r["status"] for r in runs(session)] == ["skipped", "saved"]
    assert runs(session)[1]["from"] == 4
    (request,) = backend.first_requests()
    assert request.task["conversation_start"] == 4
    assert request.task["conversation_end"] == len(session.history) == 6
    bodies = by_body(extractor_of(frame).store)
    assert list(bodies) == ["always tag releases with a v prefix."]
    assert cursor(session) == 6


@pytest.mark.parametrize(
    ("tool", "where", "skipped"),
    [
        ("Edit", "inside", True),
        ("MultiEdit", "inside", True),
        ("Write", "team", True),
        ("Write", "via-symlink", True),
        ("Write", "the-dir-itself", True),
        ("Write", "project", False),
        ("Write", "sibling", False),
        ("Read", "inside", False),
    ],
)
def test_which_writes_count_as_the_agent_remembering(ex_frame, tmp_path, tool, where, skipped):
    frame = ex_frame()
    root = extractor_of(frame).store.root
    root.mkdir(parents=True)
    link = tmp_path / "link-to-memory"
    link.symlink_to(root)
    path = {
        "inside": root / "notes.md",
        "team": root / "team" / "notes.md",
        "via-symlink": link / "notes.md",
        "the-dir-itself": root,
        "project": tmp_path / "project" / "notes.md",
        "sibling": Path(str(root) + "-old") / "notes.md",
    }[where]
    session = frame.session("s1")
    session.on_message(user("Always write docstrings."))
    agent_writes(session, str(path), tool)
    session.on_message(assistant("Done."))
    session.on_stop()
    frame.flush()
    assert (runs(session)[0]["status"] == "skipped") is skipped
    assert cursor(session) == 4
    assert bool(memory_files(root)) is not skipped


def test_a_later_stop_extracts_only_the_new_part(ex_frame):
    backend = RecordingOffline()
    frame = ex_frame(model=backend)
    store = extractor_of(frame).store
    session = frame.session("s1")
    turn(session, "Always use tabs.")
    frame.flush()
    assert cursor(session) == 2
    turn(session, "What time is it?")
    frame.flush()
    turn(session, "Never use tabs in YAML files.")
    frame.flush()
    starts = [r.task["conversation_start"] for r in backend.first_requests()]
    assert starts == [0, 2, 4]
    assert [r["from"] for r in runs(session)] == [0, 2, 4]
    assert [r["status"] for r in runs(session)] == ["saved", "nothing", "saved"]
    assert sorted(by_body(store)) == ["always use tabs.", "never use tabs in yaml files."]
    assert cursor(session) == 6


def test_nothing_new_since_the_last_run_is_not_a_run(ex_frame):
    frame = ex_frame()
    session = frame.session("s1")
    turn(session, "Always use tabs.")
    frame.flush()
    session.on_stop()  # the same final message again: nothing new
    frame.flush()
    assert [r["status"] for r in runs(session)] == ["saved", "skipped"]
    assert runs(session)[1]["why"] == "nothing new since the last run"


def test_the_cursor_never_moves_back(ex_frame):
    """A skip while an extraction is in flight advances the cursor past the agent's own memory
    write; the extraction finishing afterwards must not move it back before that write (or the
    next turn is skipped again and what the user says in it is never extracted)."""
    release = threading.Event()
    backend, frame = threaded_frame(ex_frame, release)
    root = extractor_of(frame).store.root
    session = frame.session("s1")
    turn(session, "Hello.")  # extraction 1 starts and blocks
    assert backend.wait_for_requests(1, timeout=5)
    session.on_message(user("Remember that the API is versioned."))
    agent_writes(session, str(root / "api.md"), content="x")
    session.on_message(assistant("Saved."))
    session.on_stop()  # the agent remembered by itself: skipped, cursor past it
    assert runs(session)[-1]["status"] == "skipped"
    assert cursor(session) == 6
    release.set()
    frame.flush()
    assert cursor(session) >= 6


def test_a_turn_after_a_skip_during_an_extraction_is_extracted(ex_frame):
    release = threading.Event()
    backend, frame = threaded_frame(ex_frame, release)
    root = extractor_of(frame).store.root
    session = frame.session("s1")
    turn(session, "Hello.")
    assert backend.wait_for_requests(1, timeout=5)
    session.on_message(user("Remember that the API is versioned."))
    agent_writes(session, str(root / "api.md"), content="x")
    session.on_message(assistant("Saved."))
    session.on_stop()
    release.set()
    frame.flush()
    turn(session, "Never deploy on Fridays.")
    frame.flush()
    assert runs(session)[-1]["status"] != "skipped"
    assert backend.calls == 2


# -- one at a time --------------------------------------------------------------------------------


def test_one_at_a_time_and_a_single_trailing_run(ex_frame):
    release = threading.Event()
    backend, frame = threaded_frame(ex_frame, release)
    session = frame.session("s1")
    turn(session, "Always use tabs.")
    assert backend.wait_for_requests(1, timeout=5)
    start = time.monotonic()
    turn(session, "Never use spaces.")
    turn(session, "I prefer vim.")
    turn(session, "Remember that CI is slow.")
    assert time.monotonic() - start < 0.5
    statuses = [r["status"] for r in runs(session)]
    assert statuses == ["pending", "coalesced", "coalesced", "pending"]
    release.set()
    frame.flush()
    assert backend.calls == 2
    assert backend.max_concurrent == 1
    assert [r["status"] for r in runs(session)] == ["nothing", "coalesced", "coalesced", "nothing"]
    # the trailing run saw the newest conversation
    assert backend.requests[1].task["conversation_end"] == 8
    assert cursor(session) == 8


def test_runs_of_different_sessions_are_independent(ex_frame):
    release = threading.Event()
    backend, frame = threaded_frame(ex_frame, release)
    one, two = frame.session("s1"), frame.session("s2")
    turn(one, "Always use tabs.")
    turn(two, "Never use spaces.")
    # not serialised behind each other: both calls are in progress at once
    assert backend.wait_for_requests(2, timeout=5)
    assert backend.max_concurrent == 2
    release.set()
    frame.flush()


def test_a_model_failure_is_recorded_and_reported(frame_factory):
    from memframe.testing import HookRecorder

    recorder = HookRecorder()
    backend = ScriptedBackend(ModelError("provider down"))
    frame = frame_factory(
        builtin_layers=[MEMDIR, EXTRACT],
        layers=[recorder],
        model=backend,
        strict=False,
    )
    session = frame.session("s1")
    turn(session, "Always use tabs.")
    frame.flush()
    (record,) = runs(session)
    assert record["status"] == "failed"
    assert "provider down" in record["error"]
    assert cursor(session) == 0  # not advanced: the next run tries again
    assert [c.kwargs["layer"] for c in recorder.of("on_layer_error")] == ["extract_memories"]


# -- what the fork may write ----------------------------------------------------------------------


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def scripted_run(ex_frame, *replies):
    backend = ScriptedBackend(*replies)
    frame = ex_frame(model=backend)
    store = extractor_of(frame).store
    return backend, frame, store


def test_the_fork_may_write_only_inside_the_memory_dir(ex_frame, tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "src" / "app.py").write_text("print('hi')\n")
    victim = tmp_path / "victim.md"
    victim.write_text("keep me\n")

    def attack(request: ModelRequest) -> ModelResponse:
        root = Path(request.task["memory_dir"])
        root.mkdir(parents=True, exist_ok=True)
        (root / "link.md").symlink_to(victim)
        return writes(
            (project / "src" / "app.py", "pwned\n"),
            (project / "CLAUDE.md", "pwned\n"),
            (root / ".." / "escaped.md", memory_text("E", "e", "feedback", "escaped")),
            (root / "link.md", memory_text("L", "l", "feedback", "through a symlink")),
            (root / "tabs.md", memory_text("Tabs", "indentation", "feedback", "Use tabs.")),
        )

    backend, frame, store = scripted_run(ex_frame, attack)
    before = snapshot(tmp_path / "project")
    session = frame.session("s1")
    turn(session, "Always use tabs.")
    frame.flush()
    assert snapshot(tmp_path / "project") == before
    assert victim.read_text() == "keep me\n"
    assert not (store.root.parent / "escaped.md").exists()
    (record,) = runs(session)
    assert record["status"] == "saved"
    assert record["saved"] == ["tabs.md"]
    assert len(record["refused"]) == 4
    assert all(r.startswith("Write: ") and "outside" in r for r in record["refused"])
    # the refusals went back to the model as errors
    answers = backend.requests[1].messages[-1]["content"]
    assert [a.get("is_error", False) for a in answers] == [True, True, True, True, False]
    assert all("Permission denied" in a["content"] for a in answers[:4])
    assert index_entries(store.index_text()) == ["tabs.md"]


def test_the_fork_cannot_write_the_index(ex_frame):
    def reply(request: ModelRequest) -> ModelResponse:
        root = Path(request.task["memory_dir"])
        return writes(
            (root / "MEMORY.md", "I replaced your index\n"),
            (root / "notes.txt", "not a memory\n"),
            (root / "tabs.md", memory_text("Tabs", "indentation", "feedback", "Use tabs.")),
        )

    _backend, frame, store = scripted_run(ex_frame, reply)
    store.add("Existing", "kept", "user", "The user is a data engineer.")
    session = frame.session("s1")
    turn(session, "Always use tabs.")
    frame.flush()
    (record,) = runs(session)
    assert sorted(record["skipped"]) == [
        "MEMORY.md: only memory files (*.md, not the index)",
        "notes.txt: only memory files (*.md, not the index)",
    ]
    assert record["saved"] == ["tabs.md"]
    index = store.index_text()
    assert "I replaced your index" not in index
    assert index_entries(index) == ["existing.md", "tabs.md"]
    assert not (store.root / "notes.txt").exists()


def test_a_duplicate_written_by_the_model_is_skipped(ex_frame):
    def reply(request: ModelRequest) -> ModelResponse:
        root = Path(request.task["memory_dir"])
        return writes(
            (root / "tabs-again.md", memory_text("Tabs", "again", "feedback", "ALWAYS use  tabs.")),
            (root / "new.md", memory_text("New", "new", "feedback", "Prefer rebase over merge.")),
            (
                root / "new-copy.md",
                memory_text("Copy", "copy", "user", "prefer rebase over merge."),
            ),
        )

    backend, frame, store = scripted_run(ex_frame, reply)
    store.add("Tabs", "indentation", "feedback", "Always use tabs.")
    session = frame.session("s1")
    turn(session, "Always use tabs. Prefer rebase.")
    frame.flush()
    (record,) = runs(session)
    assert record["saved"] == ["new.md"]
    assert sorted(record["skipped"]) == [
        "new-copy.md: duplicate of new.md",
        "tabs-again.md: duplicate of tabs.md",
    ]
    assert memory_files(store.root) == ["new.md", "tabs.md"]
    check_index(store.root)
    # the model was shown what exists, with content hashes
    manifest = backend.requests[0].task["manifest"]
    assert [(e["file"], e["type"]) for e in manifest] == [("tabs.md", "feedback")]
    assert len(manifest[0]["hash"]) == 16


def test_secrets_in_a_team_memory_are_redacted_before_it_is_saved(ex_frame):
    key = "AKIAQ7VJ2ZWXK5MRT3LB"

    def reply(request: ModelRequest) -> ModelResponse:
        root = Path(request.task["memory_dir"])
        return writes(
            (
                root / "team" / "deploys.md",
                memory_text("Deploys", "how to deploy", "project", f"Deploy with key {key}."),
            ),
            (root / "mine.md", memory_text("Mine", "private", "project", f"My key is {key}.")),
        )

    _backend, frame, store = scripted_run(ex_frame, reply)
    session = frame.session("s1")
    turn(session, "Remember how we deploy.")
    frame.flush()
    (record,) = runs(session)
    assert sorted(record["saved"]) == ["mine.md", "team/deploys.md"]
    assert sorted(record["redacted"]) == [
        "mine.md: aws-access-token",
        "team/deploys.md: aws-access-token",
    ]
    team_text = (store.root / "team" / "deploys.md").read_text()
    assert key not in team_text and "Deploy with key [REDACTED]." in team_text
    # private memories are injected into every prompt: redacted too
    assert "My key is [REDACTED]." in (store.root / "mine.md").read_text()
    check_index(store.root)


def test_the_fork_reuses_the_parents_prompt(ex_frame):
    backend, frame, store = scripted_run(ex_frame)
    session = frame.session("s1")
    tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
    session.set_prompt(system="You are the host agent.", tools=tools)
    turn(session, "Always use tabs.")
    frame.flush()
    (request,) = backend.requests
    assert request.purpose == "extract_memories"
    assert request.system == "You are the host agent."
    assert [t.name for t in request.tools][:1] == ["Bash"]
    assert {"Read", "Write", "Edit", "Glob", "Grep"} <= {t.name for t in request.tools}
    history = [m.to_wire() for m in session.history]
    assert list(request.messages[: request.cache_prefix]) == history
    prompt = request.messages[-1]["content"][-1]["text"]
    assert str(store.root) in prompt
    assert "MEMORY.md" in prompt


# -- the shared transcripts -----------------------------------------------------------------------


def test_replaying_the_transcripts_builds_a_valid_memory_dir(frame_factory):
    frame = frame_factory(builtin_layers=ALL_MEMORY_LAYERS)
    root = extractor_of(frame).store.root
    for path in TRANSCRIPTS:
        report = replay(path, frame)
        assert report.layer_errors == [], path.name
    frame.flush()
    files = memory_files(root)
    memories = MemoryStore(root).memories()
    bodies = {m.body: m.type for m in memories}
    japanese = [b for b in bodies if "Japanese" in b]
    # a slash command and what it expands to are the project's file, not the user speaking
    assert not [b for b in bodies if "/orchestrator" in b or "slash command" in b], bodies
    assert japanese and all(bodies[b] == "user" for b in japanese)
    check_index(root)
    report = MemoryStore(root).doctor()
    assert report.healthy, report
    # everything again, as new sessions: nothing new
    before = snapshot(root)
    for n, path in enumerate(TRANSCRIPTS):
        report = replay(path, frame, session_id=f"again-{n}")
        assert report.layer_errors == [], path.name
    frame.flush()
    assert memory_files(root) == files
    after = snapshot(root)
    assert {k: v for k, v in after.items() if k.endswith(".md")} == {
        k: v for k, v in before.items() if k.endswith(".md")
    }


def test_state_records_survive_in_the_state_file(ex_frame):
    frame = ex_frame()
    session = frame.session("s1")
    turn(session, "Always use tabs.")
    session.close()
    saved = json.loads((session.dir / "state.json").read_text())
    assert saved["extract_memories"]["cursor"] == 2
    assert saved["extract_memories"]["runs"][0]["status"] == "saved"
    assert os.stat(session.dir / "state.json").st_mode & 0o077 == 0


def test_the_prompts_say_never_to_save_credentials_or_personal_data(ex_frame):
    backend = ScriptedBackend("Nothing worth saving.")
    frame = ex_frame(model=backend)
    session = frame.session("s1")
    instructions = "\n".join(b.text for b in session.context_blocks(None) if b.title == "Memory")
    turn(session, "We deploy with make deploy; the staging token is in 1Password.")
    frame.flush()
    (request,) = backend.requests
    content = request.messages[-1]["content"]
    asked = content if isinstance(content, str) else " ".join(b["text"] for b in content)
    for text in (" ".join(instructions.split()), " ".join(asked.split())):
        assert "credentials" in text and "personal data" in text
        assert "phone numbers" in text and "postal addresses" in text
