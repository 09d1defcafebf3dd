"""``memframe mcp`` over stdio, driven by the official MCP client as an agent would drive it."""

from __future__ import annotations

import anyio
import pytest
from mcp import MCPError

from memframe.memdir.index import indexed_files
from tests.mcp.conftest import McpProject, call
from tests.native.vectors import positives


def _aws_key() -> str:
    return next(v.secret for v in positives() if v.rule_id == "aws-access-token")


def test_tools_are_listed_with_their_annotations(mcp_project: McpProject) -> None:
    async def main() -> None:
        async with mcp_project.client() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"memory", "recall", "session_notes", "team_sync"} <= set(tools)
            for tool in tools.values():
                assert tool.annotations is not None, tool.name
                assert tool.annotations.read_only_hint is not None, tool.name
            assert tools["recall"].annotations.read_only_hint is True
            assert tools["memory"].annotations.destructive_hint is True
            assert tools["team_sync"].annotations.open_world_hint is True
            schema = tools["memory"].input_schema["properties"]
            assert schema["command"]["enum"] == [
                "view",
                "create",
                "str_replace",
                "insert",
                "delete",
                "rename",
            ]
            for name in ("path", "file_text", "view_range", "old_str", "new_str"):
                assert name in schema
            for name in ("insert_line", "insert_text", "old_path", "new_path"):
                assert name in schema

    anyio.run(main)


def test_a_memory_is_created_viewed_edited_renamed_and_deleted(mcp_project: McpProject) -> None:
    memory_dir = mcp_project.memory_dir

    async def main() -> None:
        async with mcp_project.client() as client:
            error, text = await call(
                client,
                "memory",
                command="create",
                path="/memories/build.md",
                file_text="Run the build with make release.\n",
            )
            assert not error, text
            assert "File created successfully at: /memories/build.md" in text
            assert "added frontmatter" in text
            index = indexed_files((memory_dir / "MEMORY.md").read_text())
            assert index["build.md"].endswith("— Run the build with make release.")
            assert (memory_dir / "build.md").stat().st_mode & 0o777 == 0o600

            error, text = await call(client, "memory", command="view", path="/memories/build.md")
            assert not error and "     7\tRun the build with make release." in text

            error, text = await call(
                client,
                "memory",
                command="str_replace",
                path="/memories/build.md",
                old_str="description: Run the build with make release.",
                new_str="description: Run the build with make dist.",
            )
            assert not error and "make dist" in text
            error, text = await call(
                client,
                "memory",
                command="insert",
                path="/memories/build.md",
                insert_line=7,
                insert_text="It takes four minutes.",
            )
            assert not error, text
            body = (memory_dir / "build.md").read_text()
            assert body.endswith("Run the build with make release.\nIt takes four minutes.\n")
            assert "make dist" in indexed_files((memory_dir / "MEMORY.md").read_text())["build.md"]

            error, text = await call(
                client,
                "memory",
                command="rename",
                old_path="/memories/build.md",
                new_path="/memories/team/build.md",
            )
            assert not error, text
            assert (memory_dir / "team" / "build.md").is_file()
            assert set(indexed_files((memory_dir / "MEMORY.md").read_text())) == {"team/build.md"}

            error, text = await call(client, "recall", query="how long does the build take")
            assert not error and "team/build.md" in text and "four minutes" in text

            error, text = await call(
                client, "memory", command="delete", path="/memories/team/build.md"
            )
            assert not error and text == "Successfully deleted /memories/team/build.md"
            assert not (memory_dir / "team" / "build.md").exists()
            assert indexed_files((memory_dir / "MEMORY.md").read_text()) == {}
            error, text = await call(client, "recall", query="build")
            assert not error and text.startswith("No memory matches")

    anyio.run(main)


def test_unsafe_writes_are_refused(mcp_project: McpProject, tmp_path) -> None:
    memory_dir = mcp_project.memory_dir
    outside = tmp_path / "outside.md"
    outside.write_text("not memory\n")
    key = _aws_key()

    async def main() -> None:
        async with mcp_project.client() as client:
            error, text = await call(
                client, "memory", command="create", path="/memories/../x.md", file_text="x"
            )
            assert error and "path traversal" in text
            assert not (memory_dir.parent / "x.md").exists()
            error, text = await call(
                client, "memory", command="create", path="/memories/.env.md", file_text="x"
            )
            assert error and "hidden" in text
            error, text = await call(
                client, "memory", command="create", path="/memories/MEMORY.md", file_text="x"
            )
            assert error and "cannot be edited directly" in text

            memory_dir.mkdir(parents=True, exist_ok=True)
            (memory_dir / "escape.md").symlink_to(outside)
            for arguments in (
                {"command": "view", "path": "/memories/escape.md"},
                {
                    "command": "insert",
                    "path": "/memories/escape.md",
                    "insert_line": 0,
                    "insert_text": "overwritten",
                },
                {"command": "delete", "path": "/memories/escape.md"},
            ):
                error, text = await call(client, "memory", **arguments)
                assert error and "outside /memories through a symlink" in text, arguments
            assert outside.read_text() == "not memory\n"

            error, text = await call(
                client,
                "memory",
                command="create",
                path="/memories/team/aws.md",
                file_text=f"The CI key is {key}\n",
            )
            assert error and "aws-access-token" in text and "team memory" in text
            assert not (memory_dir / "team" / "aws.md").exists()

    anyio.run(main)


def test_resources_list_the_index_and_each_memory(mcp_project: McpProject) -> None:
    async def main() -> None:
        async with mcp_project.client() as client:
            await call(
                client,
                "memory",
                command="create",
                path="/memories/team/oncall.md",
                file_text="---\nname: On-call\ndescription: who is on call\ntype: reference\n"
                "---\n\nThe on-call rota is in PagerDuty.\n",
            )
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            assert set(listed) == {
                "memframe://memories/MEMORY.md",
                "memframe://memories/team/oncall.md",
            }
            assert listed["memframe://memories/team/oncall.md"].description == "who is on call"
            index = await client.read_resource("memframe://memories/MEMORY.md")
            assert "- [On-call](team/oncall.md) — who is on call" in index.contents[0].text
            memory = await client.read_resource("memframe://memories/team/oncall.md")
            assert "The on-call rota is in PagerDuty." in memory.contents[0].text
            for uri in ("memframe://memories/missing.md", "memframe://memories/notes.txt"):
                with pytest.raises(MCPError):
                    await client.read_resource(uri)
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["memframe://memories/{+path}"]

    anyio.run(main)


def test_session_notes_and_team_sync_status(mcp_project: McpProject) -> None:
    from memframe.paths import project_key

    notes = mcp_project.home / "projects" / project_key(mcp_project.project) / "s-1"
    (notes / "session-memory").mkdir(parents=True)
    text = "# Current State\n_What is being worked on_\nFixing the rounding bug.\n"
    (notes / "session-memory" / "summary.md").write_text(text)

    async def main() -> None:
        async with mcp_project.client() as client:
            error, shown = await call(client, "session_notes")
            assert not error and shown.startswith("Notes of session s-1")
            assert "Fixing the rounding bug." in shown
            error, shown = await call(client, "session_notes", session_id="s-1")
            assert not error and shown == text
            error, shown = await call(client, "session_notes", session_id="missing")
            assert not error and "has no notes" in shown
            error, shown = await call(client, "session_notes", session_id="../x")
            assert error and "invalid session id" in shown
            error, shown = await call(client, "team_sync", action="status")
            assert not error and "not configured" in shown
            error, shown = await call(client, "team_sync", action="push")
            assert error and "not configured" in shown

    anyio.run(main)
