"""The MCP tests drive ``memframe mcp`` with the official MCP client (the ``mcp`` SDK)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memframe.paths import project_key
from tests.integration.cli_runner import memframe_env

pytest.importorskip("mcp")


@dataclass(frozen=True)
class McpProject:
    """A project and a memory base of its own, for one server."""

    project: Path
    home: Path

    @property
    def memory_dir(self) -> Path:
        return self.home / "projects" / project_key(self.project) / "memory"

    def args(self, *extra: str) -> list[str]:
        return ["-m", "memframe", "mcp", "--project", str(self.project), "--home", str(self.home)]

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[object]:
        """The SDK's client connected over stdio to ``python -m memframe mcp``."""
        from mcp import Client, StdioServerParameters

        params = StdioServerParameters(
            command=sys.executable, args=self.args(), env=memframe_env(), cwd=str(self.project)
        )
        async with Client(params) as client:
            yield client


@pytest.fixture
def mcp_project(tmp_path: Path) -> McpProject:
    project = tmp_path / "project"
    project.mkdir()
    return McpProject(project, tmp_path / "memframe-home")


async def call(client: object, tool: str, **arguments: object) -> tuple[bool, str]:
    """(is_error, text) of one tool call."""
    result = await client.call_tool(tool, arguments)  # type: ignore[attr-defined]
    text = "\n".join(getattr(item, "text", "") for item in result.content)
    return bool(result.is_error), text
