"""Magic Docs (docs/magic-docs.md): detection, registration, idle-time updates through a fake
provider."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest

from memframe.layers.magic_docs import MagicDocsLayer, detect
from memframe.models import ModelRequest, ModelResponse, ToolCall
from memframe.testing import ScriptedBackend
from tests.fakes.providers import RecordedRequest, anthropic_text, anthropic_tool_use
from tests.integration.cli_runner import run_memframe

MAGIC_DOCS = "memframe.layers.magic_docs:MagicDocsLayer"
API_DOC = (
    "# MAGIC DOC: API endpoints\n"
    "_List every HTTP endpoint with its method and purpose._\n"
    "\n"
    "- GET /items: list items\n"
)


# -- detection -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "title", "instructions"),
    [
        ("# MAGIC DOC: API\n_keep it short_\n", "API", "keep it short"),
        ("#magic doc:   Changelog  \n\n*newest first*\nbody", "Changelog", "newest first"),
        ("intro\n\n# Magic Doc: Deps\nbody\n", "Deps", None),
        ("# MAGIC DOC: Two blanks\n\n\n_too far_\n", "Two blanks", None),
        ("# MAGIC DOC: CRLF\r\n_windows_\r\nbody\r\n", "CRLF", "windows"),
        ("# MAGIC DOC: No newline at end", "No newline at end", None),
    ],
)
def test_detect(text, title, instructions):
    header = detect(text)
    assert header is not None
    assert header.title == title
    assert header.instructions == instructions
    assert "\r" not in header.header_line


@pytest.mark.parametrize(
    "text",
    [
        "# Not magic\n",
        "```markdown\n# MAGIC DOC: inside a fence\n```\n",
        "~~~\n# MAGIC DOC: tilde fence\n~~~\n",
        "## MAGIC DOC: a second-level heading is not the marker\n",
        "",
    ],
)
def test_not_a_magic_doc(text):
    assert detect(text) is None


def test_header_after_a_closed_fence_counts():
    text = "```\n# MAGIC DOC: fenced\n```\n# MAGIC DOC: Real\n"
    header = detect(text)
    assert header is not None and header.title == "Real"


# -- with the fake Anthropic server --------------------------------------------------------------


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "API.md").write_text(API_DOC)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    return root


@pytest.fixture
def md_frame(memframe_open):
    """Frames with the Magic Docs layer; updates run inline (done when ``on_stop`` returns)
    unless a test passes ``synchronous_background=False``."""

    def make(**options):
        return memframe_open(builtin_layers=[MAGIC_DOCS], **options)

    return make


@pytest.fixture
def anthropic_frame(md_frame, fake_anthropic, monkeypatch, tmp_path, project):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    (tmp_path / "config").mkdir()
    settings = {"models": {"anthropic": {"backoff_base": 0.001}}}
    (tmp_path / "config" / "settings.json").write_text(json.dumps(settings))
    return md_frame(model="anthropic")


def idle_turn(session, text: str = "Added POST /items.", msg_id: str = "m1") -> None:
    session.on_message({"role": "user", "content": "add an endpoint to create items"})
    final = {"role": "assistant", "id": msg_id, "content": text}
    session.on_message(final)
    session.on_stop(final)


def edit(path: Path, old: str, new: str, *extra: dict[str, Any]):
    def reply(request: RecordedRequest) -> dict[str, Any]:
        body = anthropic_tool_use(
            "Edit", {"file_path": str(path), "old_string": old, "new_string": new}
        )
        body["content"] = [*extra, *body["content"]]
        return body

    return reply


def layer_of(frame) -> MagicDocsLayer:
    layer = frame.manager.get_plugin("magic_docs")
    assert isinstance(layer, MagicDocsLayer)
    return layer


def test_read_registers_and_the_next_idle_turn_updates(anthropic_frame, fake_anthropic, project):
    frame = anthropic_frame
    doc = project / "docs" / "API.md"
    session = frame.session("s1")
    session.on_file_read("docs/API.md", API_DOC)  # relative to the project, as hosts report
    assert list(layer_of(frame).docs(session)) == [str(doc)]
    assert layer_of(frame).docs(session)[str(doc)]["title"] == "API endpoints"
    fake_anthropic.script(
        edit(
            doc,
            "- GET /items: list items\n",
            "- GET /items: list items\n- POST /items: create an item\n",
        ),
        anthropic_text("done"),
    )
    before_app = (project / "src" / "app.py").read_text()
    idle_turn(session)
    frame.flush()
    first = fake_anthropic.requests[0].json
    prompt = first["messages"][-1]["content"][-1]["text"]
    assert str(doc) in prompt and "API endpoints" in prompt
    assert "List every HTTP endpoint" in prompt  # the instructions
    assert "- GET /items: list items" in prompt  # the contents
    assert len(fake_anthropic.requests) == 2  # the edit, then its result
    text = doc.read_text()
    assert "- POST /items: create an item" in text
    assert text.startswith("# MAGIC DOC: API endpoints\n_List every HTTP endpoint")
    assert (project / "src" / "app.py").read_text() == before_app
    entry = layer_of(frame).docs(session)[str(doc)]
    assert entry["updates"] == 1 and entry["refused"] == []


def test_edits_elsewhere_and_through_symlinks_are_refused(
    anthropic_frame, fake_anthropic, project, tmp_path
):
    frame = anthropic_frame
    doc = project / "docs" / "API.md"
    outside = tmp_path / "outside.md"
    outside.write_text("# MAGIC DOC: Outside\nsecret plans\n")
    link = project / "docs" / "LINK.md"
    os.symlink(outside, link)
    session = frame.session("s1")
    session.on_file_read(str(doc), API_DOC)
    others = [
        {
            "type": "tool_use",
            "id": "toolu_app",
            "name": "Edit",
            "input": {
                "file_path": str(project / "src" / "app.py"),
                "old_string": "app",
                "new_string": "pwned",
            },
        },
        {
            "type": "tool_use",
            "id": "toolu_link",
            "name": "Edit",
            "input": {"file_path": str(link), "old_string": "secret", "new_string": "pwned"},
        },
        {"type": "tool_use", "id": "toolu_bash", "name": "Bash", "input": {"command": f"rm {doc}"}},
    ]
    fake_anthropic.script(edit(doc, "list items", "list all items", *others), anthropic_text("ok"))
    idle_turn(session)
    frame.flush()
    assert (project / "src" / "app.py").read_text() == "print('app')\n"
    assert outside.read_text() == "# MAGIC DOC: Outside\nsecret plans\n"
    assert "list all items" in doc.read_text()
    refused = layer_of(frame).docs(session)[str(doc)]["refused"]
    assert len(refused) == 3
    answers = {
        a["tool_use_id"]: a for a in fake_anthropic.requests[1].json["messages"][-1]["content"]
    }
    assert all(answers[i]["is_error"] for i in ("toolu_app", "toolu_link", "toolu_bash"))


def test_a_doc_that_is_a_symlink_to_elsewhere_is_never_written(
    anthropic_frame, fake_anthropic, project, tmp_path
):
    frame = anthropic_frame
    target = tmp_path / "elsewhere.md"
    target.write_text(API_DOC)
    link = project / "docs" / "SHARED.md"
    os.symlink(target, link)
    session = frame.session("s1")
    session.on_file_read(str(link), API_DOC)
    fake_anthropic.script(edit(link, "list items", "hijacked"), anthropic_text("ok"))
    idle_turn(session)
    frame.flush()
    assert target.read_text() == API_DOC
    assert layer_of(frame).docs(session)[str(link)]["refused"]


def test_an_update_that_touches_the_header_is_rejected(anthropic_frame, fake_anthropic, project):
    frame = anthropic_frame
    doc = project / "docs" / "API.md"
    frame.manager.strict = False
    session = frame.session("s1")
    session.on_file_read(str(doc), API_DOC)
    fake_anthropic.script(
        edit(doc, "# MAGIC DOC: API endpoints", "# MAGIC DOC: Endpoints"), anthropic_text("ok")
    )
    idle_turn(session)
    frame.flush()
    assert doc.read_text() == API_DOC
    run = session.state.section("magic_docs")["runs"][-1]
    assert "header" in run["docs"][str(doc)]


def test_removing_the_header_or_the_file_untracks(anthropic_frame, fake_anthropic, project):
    frame = anthropic_frame
    doc = project / "docs" / "API.md"
    other = project / "docs" / "DEPS.md"
    other.write_text("# MAGIC DOC: Dependencies\n- httpx\n")
    session = frame.session("s1")
    session.on_file_read(str(doc), API_DOC)
    session.on_file_read(str(other), None)  # content unknown: memframe reads the file
    assert len(layer_of(frame).docs(session)) == 2
    doc.write_text("# API\nno longer magic\n")
    other.rename(project / "docs" / "DEPENDENCIES.md")
    idle_turn(session)
    frame.flush()
    assert layer_of(frame).docs(session) == {}
    reasons = {u["path"]: u["why"] for u in session.state.section("magic_docs")["untracked"]}
    assert reasons == {
        str(doc): "its header is gone",
        str(other): "the file was deleted or renamed",
    }
    assert fake_anthropic.requests == []
    # reading a file that lost its header also untracks it
    session.on_file_read(str(project / "docs" / "DEPENDENCIES.md"), None)
    assert list(layer_of(frame).docs(session)) == [str(project / "docs" / "DEPENDENCIES.md")]
    session.on_file_read(str(project / "docs" / "DEPENDENCIES.md"), "# plain\n")
    (project / "docs" / "DEPENDENCIES.md").write_text("# plain\n")
    session.on_file_read(str(project / "docs" / "DEPENDENCIES.md"), "# plain\n")
    assert layer_of(frame).docs(session) == {}


def answers_tool_calls(request: ModelRequest) -> bool:
    """Whether the request carries the results of the model's tool calls (not a new update)."""
    last = request.messages[-1]["content"]
    return isinstance(last, list) and bool(last) and last[0].get("type") == "tool_result"


def edit_old_to_new(request: ModelRequest) -> ModelResponse:
    """A model that edits the doc it is asked about (``- old`` becomes ``- new``), then stops."""
    if answers_tool_calls(request):
        return ModelResponse(text="done")
    path = request.task["doc_path"]
    return ModelResponse(
        tool_calls=(
            ToolCall(
                "e1", "Edit", {"file_path": path, "old_string": "- old\n", "new_string": "- new\n"}
            ),
        ),
        stop_reason="tool_use",
    )


def editor() -> ScriptedBackend:
    return ScriptedBackend(name="editor", default=edit_old_to_new)


def docs_asked(backend: ScriptedBackend) -> list[str]:
    """The docs the model was asked to update (each update's opening request), in order."""
    return [r.task["doc_path"] for r in backend.requests if not answers_tool_calls(r)]


def test_two_docs_are_updated_one_after_the_other(md_frame, project):
    def slow_edit(request: ModelRequest) -> ModelResponse:
        time.sleep(0.05)  # a window in which a second update, were one running, would overlap
        return edit_old_to_new(request)

    model = ScriptedBackend(name="slow-editor", default=slow_edit)
    frame = md_frame(model=model, synchronous_background=False)
    session = frame.session("s1")
    paths = []
    for name in ("A.md", "B.md"):
        path = project / "docs" / name
        path.write_text(f"# MAGIC DOC: {name}\n- old\n")
        session.on_file_read(str(path), None)
        paths.append(str(path))
    idle_turn(session)
    frame.flush()
    assert sorted(docs_asked(model)) == paths
    assert model.max_concurrent == 1
    assert all((Path(p).read_text().endswith("- new\n")) for p in paths)


def test_rate_limit_and_unchanged_updates_keep_mtime(md_frame, project, tmp_path):
    model = editor()
    frame = md_frame(model=model)
    session = frame.session("s1")
    doc = project / "docs" / "C.md"
    doc.write_text("# MAGIC DOC: C\n- old\n")
    session.on_file_read(str(doc), None)
    idle_turn(session)
    frame.flush()
    assert docs_asked(model) == [str(doc)]
    idle_turn(session, msg_id="m2")  # within the 300 s interval: not due
    frame.flush()
    assert docs_asked(model) == [str(doc)]
    run = session.state.section("magic_docs")["runs"][-1]
    assert run["docs"] == {str(doc): "not due"}
    # due again, but the model's edit cannot apply ("- old" is gone): nothing is written
    layer_of(frame).docs(session)[str(doc)]["last_update"] = 0
    mtime = doc.stat().st_mtime_ns
    idle_turn(session, msg_id="m3")
    frame.flush()
    assert doc.stat().st_mtime_ns == mtime
    assert session.state.section("magic_docs")["runs"][-1]["docs"] == {str(doc): "unchanged"}


def test_offline_skips_and_says_so_once(md_frame, project, caplog):
    frame = md_frame()
    session = frame.session("s1")
    doc = project / "docs" / "API.md"
    session.on_file_read(str(doc), None)
    with caplog.at_level(logging.WARNING, logger="memframe"):
        idle_turn(session)
        frame.flush()
        layer_of(frame).docs(session)[str(doc)]["last_update"] = 0
        idle_turn(session, msg_id="m2")
        frame.flush()
    assert doc.read_text() == API_DOC  # never a fake edit
    skips = [r for r in caplog.records if "magic doc update skipped" in r.getMessage()]
    assert len(skips) == 1
    assert "offline" in skips[0].getMessage()
    outcome = session.state.section("magic_docs")["runs"][-1]["docs"][str(doc)]
    assert outcome.startswith("skipped: ")


def test_hostile_docs(md_frame, project):
    model = editor()
    frame = md_frame(model=model)
    session = frame.session("s1")
    huge = project / "docs" / "HUGE.md"
    huge.write_text("# MAGIC DOC: Huge\n- old\n" + "x" * 5_000_000)
    fenced = project / "docs" / "FENCED.md"
    fenced.write_text("```\n# MAGIC DOC: not really\n```\n- old\n")
    crlf = project / "docs" / "CRLF.md"
    crlf.write_bytes(b"# MAGIC DOC: Windows\r\n_keep CRLF_\r\n- old\r\n")
    bare = project / "docs" / "BARE.md"
    bare.write_bytes(b"# MAGIC DOC: No newline\n- old\n- last")
    for path in (huge, fenced, crlf, bare):
        session.on_file_read(str(path), None)
    docs = layer_of(frame).docs(session)
    assert str(fenced) not in docs
    assert {str(huge), str(crlf), str(bare)} == set(docs)
    idle_turn(session)
    frame.flush()
    outcomes = session.state.section("magic_docs")["runs"][-1]["docs"]
    assert outcomes[str(huge)].startswith("skipped: the doc is 5,000,")
    assert str(huge) not in docs_asked(model)
    # the CRLF doc: "- old\n" does not occur (it is "- old\r\n"), so the edit fails and the
    # file stays byte for byte; its line endings are never rewritten
    assert crlf.read_bytes() == b"# MAGIC DOC: Windows\r\n_keep CRLF_\r\n- old\r\n"
    assert bare.read_bytes() == b"# MAGIC DOC: No newline\n- new\n- last"


def test_tracked_docs_survive_across_processes(md_frame, project):
    frame = md_frame()
    session = frame.session("s1")
    session.on_file_read(str(project / "docs" / "API.md"), None)
    session.close()
    again = md_frame().session("s1")
    assert list(layer_of(again.frame).docs(again)) == [str(project / "docs" / "API.md")]


def test_docs_cli_lists_and_refuses_offline_updates(md_frame, project, tmp_path):
    frame = md_frame()
    session = frame.session("s1")
    session.on_file_read(str(project / "docs" / "API.md"), None)
    session.close()
    home = str(tmp_path / "home")
    listed = run_memframe("docs", "list", "--json", "--home", home, "--project", str(project))
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["path"], r["title"], r["sessions"]) for r in rows] == [
        (str(project / "docs" / "API.md"), "API endpoints", ["s1"])
    ]
    update = run_memframe(
        "docs",
        "update",
        str(project / "docs" / "API.md"),
        "--home",
        home,
        "--project",
        str(project),
    )
    assert update.returncode == 1
    assert "skipped" in update.stdout and "offline" in update.stdout
    plain = project / "README.md"
    plain.write_text("# Readme\n")
    refused = run_memframe("docs", "update", str(plain), "--home", home, "--project", str(project))
    assert refused.returncode == 2 and "no '# MAGIC DOC: <title>' header" in refused.stderr


def test_the_update_prompt_can_be_overridden(md_frame, project, tmp_path):
    (tmp_path / "config" / "magic-docs").mkdir(parents=True)
    (tmp_path / "config" / "magic-docs" / "prompt.md").write_text(
        "Refresh {{doc_title}} at {{doc_path}} ({{new_messages}} new). Rules: {{doc_instructions}}"
        "\n---\n{{doc_contents}}"
    )
    model = ScriptedBackend("nothing to change")
    frame = md_frame(model=model)
    session = frame.session("s1")
    doc = project / "docs" / "API.md"
    session.on_file_read(str(doc), None)
    idle_turn(session)
    frame.flush()
    assert [r.messages[-1]["content"][-1]["text"] for r in model.requests] == [
        f"Refresh API endpoints at {doc} (2 new). Rules: List every HTTP endpoint with its "
        f"method and purpose.\n---\n{API_DOC}"
    ]


def test_a_bad_prompt_override_is_a_clear_error(tmp_path):
    from memframe._manager import LayerLoadError
    from memframe.testing import open_test_frame

    (tmp_path / "config" / "magic-docs").mkdir(parents=True)
    (tmp_path / "config" / "magic-docs" / "prompt.md").write_text("Update the doc.")
    with pytest.raises(LayerLoadError, match="must contain"):
        open_test_frame(tmp_path, builtin_layers=[MAGIC_DOCS])
