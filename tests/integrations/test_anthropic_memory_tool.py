"""memframe.integrations.anthropic.MemoryTool driven by the real Anthropic SDK.

The SDK's client talks to a loopback fake of the Messages API (``tests.fakes.providers``: a
real HTTP server on 127.0.0.1) that plays Claude's side: it calls the memory tool, records the
tool results the SDK's tool runner sends back, and ends with text. What the tool wrote is then
checked on disk and in a new memframe session's context.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.lib.tools import ToolError

from memframe.integrations.anthropic import AsyncMemoryTool, MemoryTool, memory_commands
from memframe.memdir import MemoryStore, locate, parse_memory
from tests.fakes.providers import (
    FakeProvider,
    anthropic_text,
    anthropic_tool_uses,
    result_text,
    results_sent,
    tool_results,
)
from tests.layers.memdir_helpers import MEMDIR, index_entries
from tests.native.vectors import positives

MODEL = "claude-sonnet-4-5"
Turn = list[dict[str, Any]] | str


def play(api: FakeProvider, *turns: Turn) -> None:
    """Queue Claude's turns: memory-tool inputs to call (one ``tool_use`` each), or the final
    text."""
    api.script(
        *(
            anthropic_text(turn) if isinstance(turn, str) else anthropic_tool_uses("memory", turn)
            for turn in turns
        )
    )


PREFERENCE = (
    "The user prefers pytest over unittest: write tests as plain pytest functions with "
    "fixtures, never unittest.TestCase classes.\n"
)


def run_session(api: FakeProvider, tool: MemoryTool, prompt: str) -> str:
    """One conversation through the SDK's tool runner; the final answer's text."""
    with anthropic.Anthropic(api_key="fake-key", base_url=api.base_url, max_retries=0) as client:
        runner = client.beta.messages.tool_runner(
            model=MODEL,
            max_tokens=1024,
            tools=[tool],
            messages=[{"role": "user", "content": prompt}],
        )
        final = runner.until_done()
    assert api.pending == 0, "the runner stopped before Claude's last turn"
    return "".join(block.text for block in final.content if block.type == "text")


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def md_frame(frame_factory) -> Callable[[], Any]:
    """Frames of one project with the memdir layer (a second one is a new process's view)."""
    return lambda: frame_factory(builtin_layers=[MEMDIR])


@pytest.fixture
def frame(md_frame):
    return md_frame()


@pytest.fixture
def root(frame) -> Path:
    return MemoryStore(locate(frame).path).root


@pytest.fixture
def api() -> Iterator[FakeProvider]:
    with FakeProvider("anthropic", strict_headers=True) as fake:
        yield fake
    assert not fake.unexpected, f"requests the API would refuse: {fake.unexpected}"


def team_secret():
    """A real-looking token (a test vector) and the line around it."""
    return next(v for v in positives() if v.rule_id == "github-pat")


# -- the round trip ------------------------------------------------------------------------------


def test_the_tool_runner_saves_a_memory_the_next_session_recalls(md_frame, frame, root, api):
    play(
        api,
        [{"command": "view", "path": "/memories"}],
        [{"command": "create", "path": "/memories/prefers-pytest.md", "file_text": PREFERENCE}],
        "Noted: I will write pytest tests from now on.",
    )
    answer = run_session(api, MemoryTool(frame), "Remember: I use pytest, always.")

    assert answer == "Noted: I will write pytest tests from now on."
    first = api.requests[0].json
    assert first["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    (view,), (create,) = results_sent(api)
    assert not view.get("is_error")
    assert "/memories" in result_text(view)
    assert not create.get("is_error"), result_text(create)
    assert "/memories/prefers-pytest.md" in result_text(create)

    path = root / "prefers-pytest.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")  # frontmatter added
    memory = parse_memory(text, path)
    assert memory.known_type
    assert memory.name and memory.description
    assert "plain pytest functions" in memory.body
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert index_entries((root / "MEMORY.md").read_text(encoding="utf-8")) == ["prefers-pytest.md"]

    later = md_frame().session("next-day")  # a new frame and session: nothing cached
    context = later.context("Add tests for the parser: which test framework do I use?")
    assert "prefers-pytest.md" in context  # the index line
    assert "Relevant memories" in context
    assert "plain pytest functions with fixtures" in context  # the memory itself, recalled


def test_a_team_write_holding_a_secret_is_refused_and_nothing_is_written(frame, root, api):
    vector = team_secret()
    play(
        api,
        [{"command": "create", "path": "/memories/team/deploy.md", "file_text": vector.text}],
        "I did not save it.",
    )
    run_session(api, MemoryTool(frame), "Remember how we deploy, for the team.")

    ((refusal,),) = results_sent(api)
    assert refusal["is_error"] is True
    assert "github-pat" in result_text(refusal)
    assert vector.secret not in result_text(refusal)
    assert not (root / "team" / "deploy.md").exists()
    assert not (root / "MEMORY.md").exists()  # nothing was indexed either
    # The secret reached the API only in Claude's own call: no tool result repeats it.
    sent_back = [result_text(r) for request in api.requests for r in tool_results(request.json)]
    assert sent_back and not any(vector.secret in text for text in sent_back)


def test_traversal_is_refused_through_the_runner(frame, root, api, tmp_path):
    outside = tmp_path / "outside.md"
    play(
        api,
        [
            {"command": "create", "path": "/memories/../outside.md", "file_text": PREFERENCE},
            {"command": "view", "path": "/memories/../../"},
        ],
        "Could not.",
    )
    run_session(api, MemoryTool(frame), "Save this outside your memory.")

    ((create, view),) = results_sent(api)
    assert create["is_error"] is True and "traversal" in result_text(create)
    assert view["is_error"] is True and "traversal" in result_text(view)
    assert not outside.exists()
    assert not root.exists() or not any(root.glob("*.md"))


def test_editing_renaming_and_deleting_keep_the_index_right(frame, root, api):
    half_frontmatter = (
        "---\nname: Deploys\n---\n\nHow we deploy.\nWe run make deploy-staging from main.\n"
    )
    play(
        api,
        [{"command": "create", "path": "/memories/deploys.md", "file_text": half_frontmatter}],
        [
            {
                "command": "str_replace",
                "path": "/memories/deploys.md",
                "old_str": "make deploy-staging",
                "new_str": "make deploy ENV=staging",
            },
            {
                "command": "insert",
                "path": "/memories/deploys.md",
                "insert_line": 8,
                "insert_text": "Production needs a second approval.",
            },
        ],
        [
            {
                "command": "rename",
                "old_path": "/memories/deploys.md",
                "new_path": "/memories/team/deploys.md",
            }
        ],
        [{"command": "view", "path": "/memories/team/deploys.md"}],
        [{"command": "delete", "path": "/memories/team/deploys.md"}],
        "Done.",
    )
    index = root / "MEMORY.md"
    run_session(api, MemoryTool(frame), "Remember how we deploy.")
    assert [r.get("is_error") for turn in results_sent(api) for r in turn] == [None] * 6, [
        result_text(r) for turn in results_sent(api) for r in turn
    ]
    (created,), (replaced, inserted), (renamed,), (viewed,), (deleted,) = results_sent(api)
    assert "repaired frontmatter" in result_text(created)
    assert "make deploy ENV=staging" in result_text(replaced)
    assert "Production needs a second approval." in result_text(inserted)
    assert "/memories/team/deploys.md" in result_text(renamed)
    shown = result_text(viewed)
    assert "make deploy ENV=staging" in shown and "type: " in shown
    assert "/memories/team/deploys.md" in result_text(deleted)
    assert not (root / "team" / "deploys.md").exists()
    assert not (root / "deploys.md").exists()
    assert index_entries(index.read_text(encoding="utf-8")) == []


def test_the_index_follows_each_write(frame, root):
    tool = MemoryTool(frame)
    index = root / "MEMORY.md"
    tool.call(
        {"command": "create", "path": "/memories/vpn.md", "file_text": "Staging needs the VPN.\n"}
    )
    assert index_entries(index.read_text(encoding="utf-8")) == ["vpn.md"]
    tool.call(
        {"command": "rename", "old_path": "/memories/vpn.md", "new_path": "/memories/team/vpn.md"}
    )
    assert index_entries(index.read_text(encoding="utf-8")) == ["team/vpn.md"]
    tool.call({"command": "delete", "path": "/memories/team/vpn.md"})
    assert index_entries(index.read_text(encoding="utf-8")) == []


def test_personal_data_is_scrubbed_from_a_private_memory(frame, root):
    result = MemoryTool(frame).call(
        {
            "command": "create",
            "path": "/memories/contact.md",
            "file_text": "The on-call phone is +1 415 555 0134 for outages.\n",
        }
    )
    assert isinstance(result, str)
    assert "redacted" in result
    text = (root / "contact.md").read_text(encoding="utf-8")
    assert "555 0134" not in text
    assert "[REDACTED]" in text


@pytest.mark.parametrize(
    "tool_input",
    [
        {"command": "create", "path": "/memories/../outside.md", "file_text": "x"},
        {"command": "create", "path": "/memories/team/../../outside.md", "file_text": "x"},
        {"command": "create", "path": "/memories/.hidden.md", "file_text": "x"},
        {"command": "create", "path": "/memories/MEMORY.md", "file_text": "x"},
        {"command": "create", "path": "/memories/notes/deep.md", "file_text": "x"},
        {"command": "create", "path": "/etc/outside.md", "file_text": "x"},
        {"command": "view", "path": "/memories/../"},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/../a.md"},
    ],
    ids=lambda tool_input: tool_input.get("path") or tool_input.get("new_path"),
)
def test_paths_outside_the_memory_files_are_refused(frame, root, tmp_path, tool_input):
    with pytest.raises(ToolError):
        MemoryTool(frame).call(tool_input)
    assert not (tmp_path / "outside.md").exists()
    assert not root.exists() or not [p for p in root.rglob("*.md") if p.name != "MEMORY.md"]


def test_a_symlink_out_of_the_directory_is_refused(frame, root, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("untouched\n", encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, root / "link.md")
    tool = MemoryTool(frame)
    for tool_input in (
        {"command": "view", "path": "/memories/link.md"},
        {
            "command": "str_replace",
            "path": "/memories/link.md",
            "old_str": "untouched",
            "new_str": "changed",
        },
        {"command": "delete", "path": "/memories/link.md"},
    ):
        with pytest.raises(ToolError, match="symlink"):
            tool.call(tool_input)
    assert outside.read_text(encoding="utf-8") == "untouched\n"
    assert (root / "link.md").is_symlink()


@pytest.mark.parametrize(
    ("tool_input", "reason"),
    [
        ({"command": "create", "path": "/memories/a.md"}, "needs `file_text`"),
        ({"command": "teleport", "path": "/memories/a.md"}, "unknown command"),
        ({"path": "/memories/a.md"}, "needs a `command`"),
        (
            {
                "command": "insert",
                "path": "/memories/a.md",
                "insert_line": "two",
                "insert_text": "x",
            },
            "wrong type",
        ),
        ("view /memories", "needs a `command`"),
    ],
)
def test_malformed_input_is_an_error_result(frame, tool_input, reason):
    with pytest.raises(ToolError, match=reason):
        MemoryTool(frame).call(tool_input)


def test_the_tool_definition_is_the_sdks(frame):
    commands = memory_commands(frame)
    assert MemoryTool(commands).to_dict() == {"type": "memory_20250818", "name": "memory"}
    cached = MemoryTool(commands, cache_control={"type": "ephemeral"})
    assert cached.to_dict() == {
        "type": "memory_20250818",
        "name": "memory",
        "cache_control": {"type": "ephemeral"},
    }
    assert cached.name == "memory"


def test_a_tool_shares_the_frames_memory_directory(frame, root):
    commands = memory_commands(frame)
    assert commands.store.root == root
    assert commands.kinds == frame.personal_kinds
    assert not commands.store.root.exists()
    assert MemoryTool(commands).commands is commands
    # made private at once, so that Claude's first `view /memories` lists an empty directory
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


# -- async ---------------------------------------------------------------------------------------


def test_the_async_tool_with_the_async_runner(frame, root, api):
    vector = team_secret()
    play(
        api,
        [
            {"command": "create", "path": "/memories/prefers-pytest.md", "file_text": PREFERENCE},
            {"command": "create", "path": "/memories/team/deploy.md", "file_text": vector.text},
        ],
        "Saved the first one.",
    )

    async def conversation() -> str:
        async with anthropic.AsyncAnthropic(
            api_key="fake-key", base_url=api.base_url, max_retries=0
        ) as client:
            runner = client.beta.messages.tool_runner(
                model=MODEL,
                max_tokens=1024,
                tools=[AsyncMemoryTool(frame)],
                messages=[{"role": "user", "content": "Remember these."}],
            )
            final = await runner.until_done()
        return "".join(block.text for block in final.content if block.type == "text")

    assert asyncio.run(conversation()) == "Saved the first one."
    ((saved, refused),) = results_sent(api)
    assert not saved.get("is_error"), result_text(saved)
    assert refused["is_error"] is True and "github-pat" in result_text(refused)
    assert (root / "prefers-pytest.md").is_file()
    assert not (root / "team" / "deploy.md").exists()
