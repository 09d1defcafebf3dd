"""The memory directory (docs/memdir.md): memory files, the MEMORY.md index and its load limits,
freshness, the memdir layer's prompt blocks, the store and its health report, and several
processes saving into one directory at once."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memframe._manager import LayerLoadError
from memframe.layers.memdir import MemdirLayer
from memframe.memdir import (
    MemoryFormatError,
    MemoryStore,
    freshness_caveat,
    load_for_prompt,
    parse_memory,
    render_memory,
)
from memframe.memdir.index import update_index
from memframe.models import ModelError
from memframe.testing import ScriptedBackend
from tests.layers.memdir_helpers import (
    DAY,
    MEMDIR,
    index_entries,
    memory_files,
    memory_text,
    write_memory,
    write_settings,
)
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]


def memdir_of(frame) -> MemdirLayer:
    layer = frame.manager.get_plugin("memdir")
    assert isinstance(layer, MemdirLayer)
    return layer


@pytest.fixture
def md_frame(memframe_open):
    def make(**options):
        return memframe_open(builtin_layers=[MEMDIR], **options)

    return make


@pytest.fixture
def store(tmp_path) -> MemoryStore:
    return MemoryStore(tmp_path / "mem")


def blocks_of(session, prompt: str | None) -> dict[str, str]:
    return {b.title: b.text for b in session.context_blocks(prompt)}


def surfaced_headers(text: str) -> list[str]:
    """The ``(file, type)`` header of each memory in a "Relevant memories" block, in order."""
    return [line for line in text.splitlines() if line.startswith("## ")]


def surfaced_files(text: str) -> list[str]:
    return [h.rsplit("(", 1)[1].split(",")[0] for h in surfaced_headers(text)]


# -- memory files ---------------------------------------------------------------------------------


def test_render_and_parse_round_trip(tmp_path):
    body = "Run `pytest -q` before every push.\n\nWhy: CI is slow, local runs are fast."
    text = render_memory("Run tests first", "before pushing", "feedback", body)
    assert text.startswith("---\nname: Run tests first\n")
    memory = parse_memory(text, tmp_path / "run-tests-first.md", mtime=123.0)
    assert (memory.name, memory.description, memory.type) == (
        "Run tests first",
        "before pushing",
        "feedback",
    )
    assert memory.body == body
    assert memory.mtime == 123.0
    assert memory.known_type
    # rendering what was parsed gives back the same text
    assert render_memory(memory.name, memory.description, memory.type, memory.body) == text


def test_render_collapses_multiline_fields_and_parse_reads_quotes_and_extras(tmp_path):
    text = render_memory("Two\nlines", "a\n  description", "user", "body")
    memory = parse_memory(text, tmp_path / "x.md")
    assert (memory.name, memory.description) == ("Two lines", "a description")
    quoted = "---\nname: \"Quoted: name\"\ndescription: 'd'\ntype: Project\nowner: ana\n---\nB\n"
    memory = parse_memory(quoted, tmp_path / "q.md")
    assert (memory.name, memory.description, memory.type) == ("Quoted: name", "d", "project")
    assert memory.extra == {"owner": "ana"}
    assert memory.body == "B"


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [("", "user", "needs a name"), ("  \n", "user", "needs a name"), ("x", "opinion", "type")],
)
def test_render_refuses_what_is_not_a_memory(name, kind, message):
    with pytest.raises(MemoryFormatError, match=message):
        render_memory(name, "d", kind, "body")


def test_missing_frontmatter_degrades_gracefully(tmp_path):
    memory = parse_memory(
        "# Deploy steps\n\nUse the blue pipeline.\n", tmp_path / "deploy_old-notes.md"
    )
    assert memory.type == "unknown"
    assert not memory.known_type
    assert memory.name == "deploy old notes"
    assert memory.description == "Deploy steps"
    assert memory.body == "# Deploy steps\n\nUse the blue pipeline."
    # an unterminated frontmatter is text, not frontmatter
    broken = parse_memory("---\nname: x\nno end here\n", tmp_path / "broken.md")
    assert broken.type == "unknown" and broken.name == "broken"


def test_unknown_type_is_listed_and_reported_by_doctor(store):
    write_memory(store.root, "hunch.md", "The flaky test is timing.", kind="opinion")
    write_memory(store.root, "ok.md", "Use tabs.", kind="feedback")
    store.reindex([store.root / "hunch.md", store.root / "ok.md"])
    types = {m.path.name: m.type for m in store.memories()}
    assert types == {"hunch.md": "opinion", "ok.md": "feedback"}
    report = store.doctor()
    assert report.unknown_types == ["hunch.md (type 'opinion')"]
    assert report.orphans == [] and report.dangling == []


# -- MEMORY.md load limits ------------------------------------------------------------------------


def index_of(lines: int, hook: str = "hook") -> str:
    return "".join(f"- [Memory {n}](memory-{n}.md) — {hook} {n}\n" for n in range(lines))


def test_index_of_exactly_200_lines_loads_whole():
    text = index_of(200)
    loaded, warnings = load_for_prompt(text)
    assert warnings == []
    assert loaded.splitlines() == text.splitlines()


@pytest.mark.parametrize("lines", [201, 312])
def test_index_over_200_lines_is_cut_with_a_warning(lines):
    text = index_of(lines)
    loaded, warnings = load_for_prompt(text)
    expected = f"> WARNING: MEMORY.md is {lines} lines (limit: 200). Only part of it was loaded."
    assert warnings == [expected]
    body, _, warning_part = loaded.partition("\n\n> WARNING")
    assert body.splitlines() == text.splitlines()[:200]
    assert "> WARNING" + warning_part == expected
    assert loaded.splitlines()[-1] == expected


def test_the_312_line_warning_is_exactly_the_spec_text():
    _, warnings = load_for_prompt(index_of(312))
    assert warnings == [
        "> WARNING: MEMORY.md is 312 lines (limit: 200). Only part of it was loaded."
    ]


def check_byte_cut(text: str, loaded: str) -> list[str]:
    """The loaded index lines: a prefix of the index, under 25,000 bytes, and as long as fits."""
    body = loaded.split("\n\n> WARNING")[0]
    kept = body.splitlines()
    original = text.splitlines()
    assert kept == original[: len(kept)]  # cut at a line boundary
    size = len("\n".join(kept).encode("utf-8"))
    assert size < 25_000
    grown = len("\n".join(original[: len(kept) + 1]).encode("utf-8"))
    assert grown > 25_000 - 1  # one more line would not fit
    return kept


def test_index_over_25000_bytes_is_cut_at_a_line_boundary():
    hook = "x" * 180
    text = index_of(150, hook)
    assert len(text.splitlines()) == 150 and len(text.encode()) > 25_000
    loaded, warnings = load_for_prompt(text)
    kept = check_byte_cut(text, loaded)
    assert 100 < len(kept) < 150
    assert warnings == [
        f"> WARNING: MEMORY.md is {len(text.encode()):,} bytes (limit: 25,000). "
        "Only part of it was loaded."
    ]
    assert loaded.endswith(warnings[0])


def test_byte_limit_counts_bytes_not_characters():
    hook = "日本語のメモ" * 12  # 72 characters, 216 bytes
    text = index_of(120, hook)
    assert len(text) < 25_000 < len(text.encode("utf-8"))
    loaded, warnings = load_for_prompt(text)
    check_byte_cut(text, loaded)
    assert len(warnings) == 1 and "(limit: 25,000)" in warnings[0] and "bytes" in warnings[0]


def test_both_limits_fire_lines_first():
    text = index_of(312, "y" * 180)
    loaded, warnings = load_for_prompt(text)
    assert len(warnings) == 2
    assert warnings[0] == (
        "> WARNING: MEMORY.md is 312 lines (limit: 200). Only part of it was loaded."
    )
    assert "(limit: 25,000)" in warnings[1]
    kept = check_byte_cut(text, loaded)
    assert len(kept) < 200
    assert loaded.splitlines()[-2:] == warnings


# -- freshness ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "expected"), [(0, None), (1, None), (2, "2 days"), (30, "30 days")]
)
def test_freshness_caveat_by_age(store, age, expected):
    now = time.time()
    path = write_memory(store.root, "m.md", "Staging is at staging.example.com.")
    os.utime(path, (now - age * DAY - 60, now - age * DAY - 60))
    memory = store.read(path)
    assert memory.age_days() == age
    caveat = freshness_caveat(memory)
    if expected is None:
        assert caveat is None
    else:
        assert caveat is not None
        assert f"This memory is {expected} old" in caveat
        assert "verify" in caveat


def test_age_days_floors_and_is_never_negative(tmp_path):
    memory = parse_memory("x", tmp_path / "m.md", mtime=1_000_000.0)
    assert memory.age_days(now=1_000_000.0 + 2 * DAY - 1) == 1
    assert memory.age_days(now=1_000_000.0 + 2 * DAY) == 2
    assert memory.age_days(now=1_000_000.0 + 0.5) == 0
    assert memory.age_days(now=1_000_000.0 - 5 * DAY) == 0  # written "in the future"
    assert freshness_caveat(memory, now=1_000_000.0 - 5 * DAY) is None


def test_a_memory_file_with_a_future_mtime_is_zero_days_old(store):
    path = write_memory(store.root, "m.md", "Future.")
    future = time.time() + 10 * DAY
    os.utime(path, (future, future))
    assert store.read(path).age_days() == 0


# -- the memdir layer: the Memory block -----------------------------------------------------------


def test_memory_block_has_the_instructions_and_the_index(md_frame):
    frame = md_frame()
    layer = memdir_of(frame)
    session = frame.session("s1")
    blocks = blocks_of(session, None)
    assert list(blocks) == ["Memory"]  # no prompt: no relevant memories
    text = blocks["Memory"]
    for kind in ("user:", "feedback:", "project:", "reference:"):
        assert kind in text
    lowered = text.lower()
    assert "do not save" in lowered
    assert "git history" in lowered
    assert "instruction file" in lowered
    assert "trusting recall" in lowered
    assert "check that it still holds" in lowered
    assert str(layer.store.root) in text
    assert "(empty: nothing saved yet)" in text
    layer.store.add("Prefers uv", "package manager", "user", "The user prefers uv over pip.")
    text = blocks_of(session, None)["Memory"]
    assert "- [Prefers uv](prefers-uv.md) — package manager" in text
    assert "(empty" not in text


def test_memory_block_cuts_a_long_index_and_warns(md_frame):
    frame = md_frame()
    layer = memdir_of(frame)
    layer.store.root.mkdir(parents=True)
    layer.store.index_path.write_text(index_of(312))
    text = blocks_of(frame.session("s1"), None)["Memory"]
    assert "- [Memory 199](memory-199.md)" in text
    assert "memory-200.md" not in text
    assert "> WARNING: MEMORY.md is 312 lines (limit: 200). Only part of it was loaded." in text


def test_a_memory_the_agent_writes_itself_gets_its_index_line(md_frame, tmp_path):
    from memframe.messages import ToolUseBlock

    frame = md_frame()
    store = memdir_of(frame).store
    session = frame.session("s1")
    path = write_memory(store.root, "vpn.md", "Staging needs the VPN.", name="VPN")
    elsewhere = tmp_path / "project" / "notes.md"
    elsewhere.write_text("not a memory")
    hidden = write_memory(store.root, "notes/deep.md", "Deep.")
    for n, target in enumerate((path, elsewhere, hidden)):
        session.on_tool_use(ToolUseBlock(f"t{n}", "Write", {"file_path": str(target)}))
    session.on_tool_use(ToolUseBlock("r", "Read", {"file_path": str(path)}))
    assert index_entries(store.index_text()) == ["vpn.md"]
    path.unlink()
    session.on_tool_use(ToolUseBlock("t9", "Edit", {"file_path": str(path)}))
    assert index_entries(store.index_text()) == []


TOPICS = {
    "deploy-staging.md": (
        "Deploying to staging",
        "how the team deploys",
        "The team deploys to the staging kubernetes cluster with `make deploy-staging`.",
    ),
    "postgres-migrations.md": (
        "Postgres migrations",
        "database schema changes",
        "The team writes postgres migrations with alembic; never edit an applied migration.",
    ),
    "postgres-backups.md": (
        "Postgres backups",
        "where database backups are",
        "Nightly postgres backups for the team are in the s3 bucket db-backups.",
    ),
    "code-review.md": (
        "Code review",
        "review etiquette",
        "The team wants two approvals on every pull request.",
    ),
    "frontend-style.md": (
        "Frontend style",
        "css conventions",
        "The team uses tailwind classes, no inline styles in react components.",
    ),
    "oncall.md": (
        "On-call",
        "who to page",
        "The team pages the on-call engineer through opsgenie for outages.",
    ),
    "python-version.md": (
        "Python version",
        "interpreter",
        "The team targets python 3.11; avoid 3.12-only syntax.",
    ),
    "release-train.md": (
        "Release train",
        "release cadence",
        "The team ships a release every second tuesday.",
    ),
    "ticket-tracker.md": (
        "Ticket tracker",
        "where bugs are tracked",
        "The team tracks bugs in linear, project BACK.",
    ),
    "editor.md": (
        "Editor",
        "user's editor",
        "The user edits with neovim and the team with vscode.",
    ),
}


def seed_topics(root: Path, old: dict[str, float] | None = None) -> None:
    for file, (name, description, body) in TOPICS.items():
        write_memory(
            root,
            file,
            body,
            name=name,
            description=description,
            kind="project",
            age_days=(old or {}).get(file, 0.0),
        )


def test_relevant_memories_are_chosen_by_bm25(md_frame):
    frame = md_frame()
    layer = memdir_of(frame)
    seed_topics(layer.store.root)
    session = frame.session("s1")
    relevant = blocks_of(session, "write a postgres migration for the database")[
        "Relevant memories"
    ]
    files = surfaced_files(relevant)
    assert set(files[:2]) == {"postgres-migrations.md", "postgres-backups.md"}
    assert files[0] == "postgres-migrations.md"  # "migration" matches only this one
    assert "alembic" in relevant
    other = blocks_of(frame.session("s2"), "deploy to the staging kubernetes cluster")
    assert surfaced_files(other["Relevant memories"])[0] == "deploy-staging.md"


def test_at_most_five_relevant_memories(md_frame):
    frame = md_frame()
    seed_topics(memdir_of(frame).store.root)
    session = frame.session("s1")
    # "team" is in every memory: all ten match, five are surfaced, the best first
    relevant = blocks_of(session, "team release tuesday")["Relevant memories"]
    files = surfaced_files(relevant)
    assert len(files) == 5
    assert files[0] == "release-train.md"
    assert len(set(files)) == 5


def test_nothing_relevant_means_no_block(md_frame):
    frame = md_frame()
    seed_topics(memdir_of(frame).store.root)
    assert "Relevant memories" not in blocks_of(frame.session("s1"), "zebra giraffe")


def sections_of(relevant: str) -> dict[str, str]:
    """Each surfaced memory's section of a "Relevant memories" block, by file."""
    parts = ("\n\n" + relevant).split("\n\n## ")[1:]
    return {surfaced_files("## " + part)[0]: part for part in parts}


def test_old_memories_carry_the_caveat(md_frame):
    frame = md_frame()
    old = {"postgres-migrations.md": 10.2, "postgres-backups.md": 1.5}
    seed_topics(memdir_of(frame).store.root, old=old)
    relevant = blocks_of(frame.session("s1"), "postgres migration backups")["Relevant memories"]
    sections = sections_of(relevant)
    assert set(sections) == {"postgres-migrations.md", "postgres-backups.md"}
    migrations = sections["postgres-migrations.md"].splitlines()
    assert migrations[1].startswith("> This memory is 10 days old.")
    assert "verify" in migrations[1]
    assert "This memory is" not in sections["postgres-backups.md"]  # one day old: no caveat


def test_a_memory_is_surfaced_once_per_session(md_frame):
    frame = md_frame()
    seed_topics(memdir_of(frame).store.root)
    session = frame.session("s1")
    prompt = "postgres database"
    first = surfaced_files(blocks_of(session, prompt)["Relevant memories"])
    assert first[:2] in (
        ["postgres-backups.md", "postgres-migrations.md"],
        ["postgres-migrations.md", "postgres-backups.md"],
    )
    again = blocks_of(session, prompt)
    assert "Relevant memories" not in again  # nothing else mentions postgres or databases
    assert session.state.section("memdir")["surfaced"] == first
    # a new session sees them again
    fresh = surfaced_files(blocks_of(frame.session("s2"), prompt)["Relevant memories"])
    assert sorted(fresh) == sorted(first)


def test_surfaced_memories_survive_a_resumed_session(md_frame):
    frame = md_frame()
    seed_topics(memdir_of(frame).store.root)
    session = frame.session("s1")
    first = surfaced_files(blocks_of(session, "postgres")["Relevant memories"])
    assert first
    session.close()
    resumed = frame.session("s1")
    assert "Relevant memories" not in blocks_of(resumed, "postgres")


def test_per_file_budget_truncates_a_big_memory(md_frame, tmp_path):
    write_settings(tmp_path, {"memdir": {"file_bytes": 300}})
    frame = md_frame()
    body = "Benchmark notes: " + " ".join(f"sample{n}" for n in range(2_000))
    write_memory(memdir_of(frame).store.root, "bench.md", body, name="Benchmarks", kind="project")
    relevant = blocks_of(frame.session("s1"), "benchmark notes")["Relevant memories"]
    assert relevant.endswith("[… truncated]")
    shown = relevant.split("\n\n", 1)[1].removesuffix("\n[… truncated]")
    assert body.startswith(shown)
    assert 250 <= len(shown.encode()) <= 300


def test_per_file_budget_never_splits_a_character(md_frame, tmp_path):
    write_settings(tmp_path, {"memdir": {"file_bytes": 100}})
    frame = md_frame()
    body = "メモ" + "日本語" * 200
    write_memory(memdir_of(frame).store.root, "jp.md", body, name="Japanese notes", kind="user")
    relevant = blocks_of(frame.session("s1"), "japanese notes")["Relevant memories"]
    shown = relevant.split("\n\n", 1)[1].removesuffix("\n[… truncated]")
    assert body.startswith(shown) and len(shown.encode()) <= 100
    assert "\ufffd" not in relevant


def test_per_session_budget_stops_surfacing(md_frame, tmp_path):
    write_settings(tmp_path, {"memdir": {"session_bytes": 500}})
    frame = md_frame()
    root = memdir_of(frame).store.root
    for n in range(8):
        body = f"Team fact {n}: " + "x" * 190
        write_memory(root, f"fact-{n}.md", body, name=f"Fact {n}", kind="project")
    session = frame.session("s1")
    first = blocks_of(session, "team fact")["Relevant memories"]
    assert len(surfaced_files(first)) == 2  # ~240 bytes each: a third would pass 500
    state = session.state.section("memdir")
    assert state["surfaced_bytes"] == len(first.replace("\n\n## ", "## ").encode())
    assert state["surfaced_bytes"] <= 500
    # six more match, but the session's budget is spent
    assert "Relevant memories" not in blocks_of(session, "team fact")
    assert len(state["surfaced"]) == 2
    # a new session has a budget of its own
    assert (
        len(surfaced_files(blocks_of(frame.session("s2"), "team fact")["Relevant memories"])) == 2
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"memdir": {"file_bytes": -1}}, "'file_bytes' must be an integer >= 0"),
        ({"memdir": {"session_bytes": "60k"}}, "'session_bytes' must be an integer"),
        ({"memdir": {"max_relevant": True}}, "'max_relevant' must be an integer"),
        ({"memdir": {"selector": "llm"}}, "'selector' must be one of auto, bm25, model"),
        ({"memdir": {"budget": 1}}, "unknown setting 'budget'"),
        ({"memdir": [1]}, "'memdir' must be an object"),
    ],
)
def test_bad_memdir_settings_fail_at_frame_open(tmp_path, settings, message):
    from memframe.testing import open_test_frame

    write_settings(tmp_path, settings)
    with pytest.raises(LayerLoadError, match=message):
        open_test_frame(tmp_path, builtin_layers=[MEMDIR])


def test_max_relevant_setting(md_frame, tmp_path):
    write_settings(tmp_path, {"memdir": {"max_relevant": 2}})
    frame = md_frame()
    seed_topics(memdir_of(frame).store.root)
    assert len(surfaced_files(blocks_of(frame.session("s1"), "team")["Relevant memories"])) == 2


# -- the memdir layer: selection by a model -------------------------------------------------------


def selection_frame(md_frame, backend, tmp_path, selector: str | None = None):
    if selector is not None:
        write_settings(tmp_path, {"memdir": {"selector": selector}})
    frame = md_frame(model=backend)
    root = memdir_of(frame).store.root
    write_memory(root, "a.md", "Alpha: the postgres password rotates monthly.", name="Alpha")
    write_memory(root, "b.md", "Bravo: the user likes short answers.", name="Bravo")
    write_memory(root, "c.md", "Charlie: release every tuesday.", name="Charlie")
    return frame


def test_a_real_model_chooses_the_memories(md_frame, tmp_path):
    backend = ScriptedBackend('["b.md"]')
    frame = selection_frame(md_frame, backend, tmp_path)
    relevant = blocks_of(frame.session("s1"), "postgres password")["Relevant memories"]
    assert surfaced_files(relevant) == ["b.md"]  # BM25 would have picked a.md
    (request,) = backend.requests
    assert request.purpose == "select_memories"
    manifest = request.messages[0]["content"]
    assert "postgres password" in manifest
    for file in ("a.md", "b.md", "c.md"):
        assert f"- {file}: " in manifest


def test_the_model_answer_is_limited_and_filtered(md_frame, tmp_path):
    backend = ScriptedBackend('Sure: ["c.md", "nope.md", "a.md", 7, "b.md"]')
    write_settings(tmp_path, {"memdir": {"max_relevant": 2}})
    frame = md_frame(model=backend)
    root = memdir_of(frame).store.root
    for file in ("a.md", "b.md", "c.md"):
        write_memory(root, file, f"Memory {file}")
    relevant = blocks_of(frame.session("s1"), "anything")["Relevant memories"]
    assert surfaced_files(relevant) == ["c.md", "a.md"]


@pytest.mark.parametrize(
    "answer",
    [
        "[oops, not json]",
        '["b.md"',  # cut off
        ModelError("timeout"),
        '{"files": "b.md"}',
        "I am not sure which ones would help.",
    ],
    ids=["bad-json", "truncated", "error", "object", "prose"],
)
def test_garbage_from_the_model_falls_back_to_bm25(md_frame, tmp_path, answer):
    backend = ScriptedBackend(answer)
    frame = selection_frame(md_frame, backend, tmp_path)
    blocks = blocks_of(frame.session("s1"), "postgres password")
    assert len(backend.requests) == 1
    assert surfaced_files(blocks.get("Relevant memories", "")) == ["a.md"]


def test_bm25_selector_never_asks_the_model(md_frame, tmp_path):
    backend = ScriptedBackend('["b.md"]')
    frame = selection_frame(md_frame, backend, tmp_path, selector="bm25")
    relevant = blocks_of(frame.session("s1"), "postgres password")["Relevant memories"]
    assert surfaced_files(relevant) == ["a.md"]
    assert backend.requests == []


def test_the_offline_backend_uses_bm25(md_frame):
    frame = md_frame()  # model: offline, which has no select_memories recipe
    root = memdir_of(frame).store.root
    write_memory(root, "a.md", "Alpha: the postgres password rotates monthly.", name="Alpha")
    write_memory(root, "b.md", "Bravo: the user likes short answers.", name="Bravo")
    relevant = blocks_of(frame.session("s1"), "postgres password")["Relevant memories"]
    assert surfaced_files(relevant) == ["a.md"]


# -- the store ------------------------------------------------------------------------------------


def test_add_never_writes_a_duplicate(store):
    first = store.add("Use tabs", "indentation", "feedback", "Always indent   with tabs.")
    assert first is not None and first.path == store.root / "use-tabs.md"
    again = store.add("Tabs again", "other name", "feedback", "  always INDENT with\ntabs. ")
    assert again is None
    assert store.add("Tabs", "", "user", "ALWAYS indent with tabs.") is None  # any type
    assert memory_files(store.root) == ["use-tabs.md"]
    assert index_entries(store.index_text()) == ["use-tabs.md"]


def test_add_gives_colliding_names_distinct_files(store):
    one = store.add("Tabs", "", "feedback", "Indent with tabs.")
    two = store.add("Tabs", "", "feedback", "Tabs are 4 wide.")
    assert one is not None and two is not None
    assert (one.path.name, two.path.name) == ("tabs.md", "tabs-2.md")
    assert index_entries(store.index_text()) == ["tabs.md", "tabs-2.md"]


def test_team_scope_goes_to_team_and_user_is_always_private(store):
    project = store.add("Release day", "", "project", "Releases happen on tuesdays.")
    reference = store.add("Dashboards", "", "reference", "Grafana is at grafana.internal.")
    feedback = store.add("Small PRs", "", "feedback", "Keep pull requests small.", scope="team")
    mine = store.add("Name", "", "user", "The user is called Ana.")
    private = store.add("Local", "", "project", "A private project note.", scope="private")
    assert project is not None and project.scope(store.root) == "team"
    assert project.relative_to(store.root) == "team/release-day.md"
    assert reference is not None and reference.relative_to(store.root) == "team/dashboards.md"
    assert feedback is not None and feedback.relative_to(store.root) == "team/small-prs.md"
    assert mine is not None and mine.relative_to(store.root) == "name.md"
    assert private is not None and private.relative_to(store.root) == "local.md"
    with pytest.raises(MemoryFormatError, match="private"):
        store.add("Secret", "", "user", "The user's salary.", scope="team")
    with pytest.raises(MemoryFormatError, match="scope"):
        store.add("Odd", "", "feedback", "x", scope="public")
    assert not any("salary" in p.read_text() for p in store.root.rglob("*.md"))
    assert sorted(index_entries(store.index_text())) == sorted(memory_files(store.root))


def test_forget_removes_the_file_and_its_index_line(store):
    store.add("One", "first", "feedback", "First fact.")
    store.add("Two", "second", "project", "Second fact.")
    store.add("Three", "third", "user", "Third fact.")
    assert store.forget("Two") == "team/two.md"  # by name
    assert not (store.root / "team" / "two.md").exists()
    assert index_entries(store.index_text()) == ["one.md", "three.md"]
    store.forget("three.md")  # by file
    assert index_entries(store.index_text()) == ["one.md"]
    assert memory_files(store.root) == ["one.md"]
    with pytest.raises(KeyError):
        store.forget("three.md")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_files_are_0600_and_directories_0700(tmp_path, umask):
    old = os.umask(umask)
    try:
        store = MemoryStore(tmp_path / "deep" / "er" / "mem")
        store.add("A", "", "feedback", "Private fact.")
        store.add("B", "", "project", "Team fact.")
    finally:
        os.umask(old)
    for directory in (store.root, store.root / "team", tmp_path / "deep", tmp_path / "deep" / "er"):
        assert mode_of(directory) == 0o700, directory
    for file in (store.root / "a.md", store.root / "team" / "b.md", store.index_path):
        assert mode_of(file) == 0o600, file
    assert store.doctor().bad_permissions == []


def test_reindex_adds_refreshes_and_drops_lines(store):
    store.add("Kept", "kept", "feedback", "A kept memory.")
    path = write_memory(store.root, "by-agent.md", "Written by an agent.", name="By agent")
    assert index_entries(store.index_text()) == ["kept.md"]
    store.reindex([path])
    assert index_entries(store.index_text()) == ["kept.md", "by-agent.md"]
    path.write_text(memory_text("Renamed", "new hook", "feedback", "Written by an agent."))
    store.reindex([path])
    assert "- [Renamed](by-agent.md) — new hook" in store.index_text()
    assert index_entries(store.index_text()) == ["kept.md", "by-agent.md"]
    path.unlink()
    store.reindex([path])
    assert index_entries(store.index_text()) == ["kept.md"]


def test_the_users_own_index_lines_are_kept(store):
    own = (
        "# My memory\n\nThings I wrote myself, keep them.\n\n"
        "## Links\n- [Runbook](https://wiki.example.com/runbook) — ops\n"
        "* a bullet of my own\n"
    )
    store.root.mkdir(parents=True)
    store.index_path.write_text(own)
    store.add("Alpha", "a", "feedback", "Alpha fact.")
    store.add("Beta", "b", "feedback", "Beta fact.")
    text = store.index_text()
    assert text.startswith(own)
    assert index_entries(text)[-2:] == ["alpha.md", "beta.md"]
    store.forget("alpha.md")
    assert store.index_text() == own + "- [Beta](beta.md) — b\n"


def test_update_index_replaces_in_place_and_drops_second_lines():
    text = "# Index\n- [A](a.md) — old\nnote\n- [B](b.md) — b\n- [A again](a.md) — dup\n"
    updated = update_index(text, {"a.md": "- [A](a.md) — new", "c.md": "- [C](c.md) — c"}, ["b.md"])
    assert updated == "# Index\n- [A](a.md) — new\nnote\n- [C](c.md) — c\n"


def test_index_lines_are_one_line_with_a_short_hook(store):
    memory = store.add(
        "Odd [name]\nwith lines", "word " * 100, "feedback", "A memory with a long description."
    )
    assert memory is not None
    (line,) = [ln for ln in store.index_text().splitlines() if ln.startswith("- [")]
    title_and_file, _, hook = line.partition(" — ")
    assert title_and_file.startswith("- [Odd ") and "\n" not in title_and_file
    assert title_and_file.endswith(" with lines](odd-name-with-lines.md)")
    assert title_and_file.count("]") == 1  # a "]" in the title would end the link early
    assert len(hook) == 150 and hook.endswith("…")
    assert index_entries(store.index_text()) == ["odd-name-with-lines.md"]


def test_save_files_writes_agent_memories_under_the_lock(store):
    saved, skipped = store.save_files(
        {
            store.root / "a.md": memory_text("A", "a", "feedback", "Fact A."),
            store.root / "team" / "b.md": memory_text("B", "b", "project", "Fact B."),
            store.root / "empty.md": "---\nname: e\ntype: user\n---\n\n",
            store.root.parent / "outside.md": memory_text("O", "o", "user", "Outside."),
        }
    )
    assert [m.relative_to(store.root) for m in saved] == ["a.md", "team/b.md"]
    assert sorted(skipped) == [
        f"{store.root.parent / 'outside.md'}: outside the memory directory",
        "empty.md: empty",
    ]
    assert not (store.root.parent / "outside.md").exists()
    assert index_entries(store.index_text()) == ["a.md", "team/b.md"]


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("notes/x.md", "memories live at the top level or in team/"),
        ("team/deeper/x.md", "memories live at the top level or in team/"),
        (".hidden.md", "hidden file"),
        ("team/.hidden.md", "hidden file"),
        ("notes.txt", "only memory files (*.md, not the index)"),
    ],
)
def test_save_files_only_writes_where_the_store_looks(store, where, why):
    saved, skipped = store.save_files(
        {store.root / where: memory_text("X", "x", "feedback", "Deploys need two approvals.")}
    )
    assert saved == []
    assert skipped == [f"{where}: {why}"]
    assert not (store.root / where).exists()
    # so the same memory saved where it belongs is not a hidden duplicate
    again, _ = store.save_files(
        {store.root / "copy.md": memory_text("Y", "y", "feedback", "deploys need two approvals.")}
    )
    assert [m.relative_to(store.root) for m in again] == ["copy.md"]
    assert store.doctor().healthy


def test_save_files_refuses_unknown_types_and_user_memories_in_team(store):
    saved, skipped = store.save_files(
        {
            store.root / "hunch.md": memory_text("H", "h", "opinion", "A hunch."),
            store.root / "team" / "me.md": memory_text("Me", "me", "user", "The user is Ana."),
            store.root / "me.md": memory_text("Me", "me", "user", "The user is Ana."),
        }
    )
    assert [m.relative_to(store.root) for m in saved] == ["me.md"]
    assert len(skipped) == 2
    assert skipped[0].startswith("hunch.md: type 'opinion'")
    assert skipped[1] == "team/me.md: user memories are always private"
    assert not (store.root / "team" / "me.md").exists()


def test_a_file_name_that_would_break_its_index_link_is_refused(store):
    """An index link cannot hold a space or brackets: such a name is never saved (it would be an
    orphan the index cannot point at)."""
    for name in ("my notes.md", "a(b).md", "x]y.md"):
        path = store.root / name
        saved, skipped = store.save_files({path: memory_text("Notes", "d", "feedback", name)})
        assert saved == [] and "spaces or brackets" in skipped[0]
        assert not path.exists()
    assert store.index_text() == ""


def test_doctor_on_a_healthy_directory(store):
    store.add("A", "a", "feedback", "Fact A.")
    store.add("B", "b", "project", "Fact B.")
    report = store.doctor()
    assert report.healthy
    assert report.index_lines == len(store.index_text().splitlines())
    assert (report.orphans, report.dangling, report.duplicates, report.stale) == ([], [], [], [])


def test_doctor_reports_every_problem(store):
    store.add("A", "a", "feedback", "Fact A.")
    store.add("B", "b", "feedback", "Same fact.")
    write_memory(store.root, "orphan.md", "Nobody indexed me.")
    write_memory(store.root, "dup.md", "SAME   fact.")  # duplicate of b.md, also an orphan
    write_memory(store.root, "team/old.md", "Ancient.", age_days=120)
    write_memory(store.root, "recent.md", "Eighty days.", age_days=80)
    store.reindex([store.root / "team" / "old.md", store.root / "recent.md"])
    with store.index_path.open("a") as index:
        index.write("- [Gone](gone.md) — deleted by hand\n")
    (store.root / "a.md").chmod(0o644)
    report = store.doctor()
    assert not report.healthy
    assert report.orphans == ["dup.md", "orphan.md"]
    assert report.dangling == ["gone.md"]
    assert report.duplicates == [["b.md", "dup.md"]]
    assert report.stale == ["team/old.md (120 days)"]
    assert report.bad_permissions == [f"{store.root / 'a.md'} is 644 (expected 600)"]
    assert report.over_limit == []


def test_doctor_reports_an_index_over_its_limits(store):
    store.root.mkdir(parents=True)
    store.index_path.write_text(index_of(250, "z" * 100))
    report = store.doctor()
    assert report.over_limit == [
        "250 lines (limit 200)",
        f"{len(store.index_text().encode()):,} bytes (limit 25,000)",
    ]
    assert len(report.dangling) == 250
    assert not report.healthy


def test_doctor_reports_a_world_readable_directory(store):
    store.add("A", "a", "feedback", "Fact A.")
    store.root.chmod(0o755)
    assert store.doctor().bad_permissions == [f"{store.root} is 755 (expected 700)"]


# -- several processes at once --------------------------------------------------------------------

WORKER = """
import sys, time
from pathlib import Path
from memframe.memdir import MemoryStore
root, tag, go, ready = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
count, shared = int(sys.argv[5]), sys.argv[6] == "shared"
ready.write_text("ready")
deadline = time.monotonic() + 30
while not go.exists():
    if time.monotonic() > deadline:
        sys.exit(3)
    time.sleep(0.001)
store = MemoryStore(root)
saved = 0
for n in range(count):
    who = "shared" if shared else tag
    memory = store.add(f"{who} memory {n}", f"from {who}", "feedback", f"Fact {n} from {who}.")
    saved += memory is not None
print(saved)
"""


def run_workers(tmp_path: Path, root: Path, workers: int, count: int, shared: bool) -> list[int]:
    go = tmp_path / "go"
    procs = []
    for n in range(workers):
        ready = tmp_path / f"ready-{n}"
        procs.append(
            (
                ready,
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        WORKER,
                        str(root),
                        f"p{n}",
                        str(go),
                        str(ready),
                        str(count),
                        "shared" if shared else "own",
                    ],
                    cwd=REPO,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )

    def all_ready() -> bool:
        assert all(p.poll() is None for _, p in procs), [p.communicate() for _, p in procs]
        return all(ready.exists() for ready, _ in procs)

    wait_until(all_ready, timeout=30, interval=0.005, what="every worker started")
    go.write_text("go")  # every worker starts adding at the same moment
    saved = []
    for _, proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        saved.append(int(out.strip()))
    return saved


def test_two_processes_add_100_memories_into_one_directory(tmp_path):
    root = tmp_path / "mem"
    saved = run_workers(tmp_path, root, workers=2, count=50, shared=False)
    assert saved == [50, 50]
    store = MemoryStore(root)
    files = memory_files(root)
    assert len(files) == 100
    expected = {f"p{w} memory {n}" for w in range(2) for n in range(50)}
    memories = store.memories()
    assert {m.name for m in memories} == expected
    assert all(m.type == "feedback" and m.body.startswith("Fact ") for m in memories)
    for memory in memories:  # each file parses to what its process wrote
        tag, _, n = memory.name.partition(" memory ")
        assert memory.body == f"Fact {n} from {tag}."
    entries = index_entries(store.index_text())
    assert len(entries) == 100
    assert sorted(entries) == files
    assert list(root.glob(".*.tmp")) == [] and list(root.glob("*.tmp")) == []
    assert store.doctor().healthy
    # the two processes really wrote at the same time (their runs overlap)
    spans = {
        tag: [m.mtime for m in memories if m.name.startswith(f"{tag} ")] for tag in ("p0", "p1")
    }
    assert min(spans["p0"]) < max(spans["p1"]) and min(spans["p1"]) < max(spans["p0"])


def test_processes_adding_the_same_memories_write_each_once(tmp_path):
    root = tmp_path / "mem"
    saved = run_workers(tmp_path, root, workers=3, count=20, shared=True)
    assert sum(saved) == 20
    assert len(memory_files(root)) == 20
    assert sorted(index_entries(MemoryStore(root).index_text())) == memory_files(root)
    assert MemoryStore(root).doctor().duplicates == []


def test_find_prefers_the_exact_file_and_refuses_to_guess(store):
    private = store.add("Lint", "linting", "feedback", "Run the linter before pushing.")
    team = store.add("Lint", "team linting", "project", "The CI lints every branch.", scope="team")
    assert private is not None and team is not None
    assert store.find(private.relative_to(store.root)).path == private.path
    assert store.find(team.relative_to(store.root)).path == team.path
    with pytest.raises(KeyError, match="ambiguous"):
        store.find("Lint")  # two memories are called that: name the file
