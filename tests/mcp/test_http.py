"""``memframe mcp --http``: streamable HTTP on 127.0.0.1, behind a bearer token."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

import anyio
import httpx
import pytest

from tests.integration.cli_runner import memframe_env
from tests.mcp.conftest import McpProject, call


@contextlib.contextmanager
def http_server(
    mcp_project: McpProject, *extra: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, str, subprocess.Popen[str]]]:
    """Run the server on a free loopback port; yields (url, printed token line, process)."""
    command = [sys.executable, *mcp_project.args(), "--http", "--port", "0", *extra]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=memframe_env(env),
        cwd=mcp_project.project,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        token_line = process.stdout.readline()
        assert first.startswith("memframe MCP server (streamable HTTP) at http://127.0.0.1:"), (
            first + (process.stderr.read() if process.poll() is not None and process.stderr else "")
        )
        yield first.rsplit(" ", 1)[1].strip(), token_line.strip(), process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_a_request_without_the_token_gets_401(mcp_project: McpProject) -> None:
    with http_server(mcp_project, env={"MEMFRAME_MCP_TOKEN": "s3cr3t-token"}) as (url, line, _):
        assert line == "bearer token: the one given (--token or MEMFRAME_MCP_TOKEN)"
        missing = httpx.post(url, json=INITIALIZE, headers=HEADERS, timeout=30)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        wrong = httpx.post(
            url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer nope"}, timeout=30
        )
        assert wrong.status_code == 401
        right = httpx.post(
            url,
            json=INITIALIZE,
            headers={**HEADERS, "Authorization": "Bearer s3cr3t-token"},
            timeout=30,
        )
        assert right.status_code == 200, right.text


def test_the_mcp_client_works_over_http_with_the_printed_token(mcp_project: McpProject) -> None:
    pytest.importorskip("httpx2")
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with http_server(mcp_project) as (url, line, _):
        assert line.startswith("bearer token: ")
        token = line.split(": ", 1)[1]
        assert len(token) >= 32

        async def main() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport) as client:
                    tools = {tool.name for tool in (await client.list_tools()).tools}
                    assert {"memory", "recall"} <= tools
                    error, text = await call(
                        client,
                        "memory",
                        command="create",
                        path="/memories/http.md",
                        file_text="Saved over HTTP.\n",
                    )
                    assert not error, text
            assert (mcp_project.memory_dir / "http.md").is_file()

        anyio.run(main)


def test_http_options_need_http(mcp_project: McpProject) -> None:
    result = subprocess.run(
        [sys.executable, *mcp_project.args(), "--port", "9"],
        capture_output=True,
        text=True,
        env=memframe_env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and "only apply with --http" in result.stderr
