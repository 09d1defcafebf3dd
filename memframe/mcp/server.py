"""``memframe mcp``: the project's memory as an MCP server (the official ``mcp`` SDK).

Tools (each with MCP tool annotations):

- ``memory`` — the Anthropic memory-tool commands on ``/memories`` (:class:`MemoryCommands`);
- ``recall`` — the memories relevant to a query, chosen and shown as the layers show them;
- ``session_notes`` — a session's notes, as the session-memory layer keeps them;
- ``team_sync`` — team memory's sync status, and pull/push when a team server is configured.

Resources: ``memframe://memories/MEMORY.md`` (the index) and ``memframe://memories/<file>`` for
each memory file. Transports: stdio (:func:`run_stdio`), or streamable HTTP behind a bearer token
(:func:`run_http`).
"""

from __future__ import annotations

import hmac
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio.to_thread
import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import Resource, ToolAnnotations
from pydantic import Field

from memframe.mcp.memory_tool import ROOT, MemoryCommandError, MemoryCommands

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from memframe.frame import MemoryFrame

SERVER_NAME = "memframe"
URI_PREFIX = "memframe://memories/"
INDEX_URI = URI_PREFIX + "MEMORY.md"
TOKEN_ENV = "MEMFRAME_MCP_TOKEN"
HTTP_PATH = "/mcp"
MAX_RECALL = 20

INSTRUCTIONS = f"""\
memframe keeps this project's memory: typed Markdown files under {ROOT} indexed by MEMORY.md
(read it as the resource {INDEX_URI} or with the memory tool's view), the notes of each session,
and team memory under {ROOT}/team/ shared through a team server.
Before answering from scratch, `recall` what is already known. Save what will matter in later
sessions with the `memory` tool: one fact per file, *.md at the top level (private) or in
{ROOT}/team/ (shared with the team; never secrets: such writes are refused)."""

MEMORY_DESCRIPTION = f"""\
The project's persistent memory, with the commands of Anthropic's memory tool. Paths start with
{ROOT}: memory files are *.md at its top level (private to you) or in {ROOT}/team/ (shared with
the team through the team server). MEMORY.md is the index memframe keeps: viewable, never
written directly.
- view: a directory listing, or a file with numbered lines (view_range [start, end]; -1 = last)
- create: a new memory file (path, file_text); frontmatter (name, description, type: user,
  feedback, project or reference) is added when missing
- str_replace: replace old_str, which must occur exactly once, by new_str
- insert: insert_text after line insert_line (0 = at the top)
- delete: a memory file
- rename: old_path to new_path (also between the top level and team/)
Secrets and personal data are redacted from every write; a team/ write holding a secret is
refused. Traversal (..), hidden files and symlinks are refused."""

RECALL_DESCRIPTION = """\
The memories most relevant to a query (BM25 over name, description and body, the selection
memframe's layers use), each with its name, file, type, a freshness caveat when it is older than
a day, and its text."""

SESSION_NOTES_DESCRIPTION = """\
The notes memframe keeps for a session (task, current state, files, errors and fixes,
learnings). Without session_id: the most recently updated session's notes, and the ids of the
other sessions that have some."""

TEAM_SYNC_DESCRIPTION = """\
Team memory (/memories/team/) and the team server: status compares the local files with the
last sync (no network); pull brings the server's entries here (the server wins per file; local
edits it did not touch are kept); push sends changed files (files holding a secret are never
sent). Needs team_sync settings (server, token); says so when they are missing."""

MEMORY_ANNOTATIONS = ToolAnnotations(
    title="Memory files",
    read_only_hint=False,
    destructive_hint=True,  # str_replace, delete and rename change or remove what was there
    idempotent_hint=False,  # insert twice inserts twice
    open_world_hint=False,
)
RECALL_ANNOTATIONS = ToolAnnotations(
    title="Recall memories",
    read_only_hint=True,
    destructive_hint=False,
    idempotent_hint=True,
    open_world_hint=False,
)
SESSION_NOTES_ANNOTATIONS = ToolAnnotations(
    title="Session notes",
    read_only_hint=True,
    destructive_hint=False,
    idempotent_hint=True,
    open_world_hint=False,
)
TEAM_SYNC_ANNOTATIONS = ToolAnnotations(
    title="Team memory sync",
    read_only_hint=False,
    destructive_hint=True,  # a pull overwrites team files the server has newer versions of
    idempotent_hint=True,  # a second pull or push with nothing new changes nothing
    open_world_hint=True,  # talks to the team server
)


class MemframeService:
    """What the tools and resources do, for one open frame; no MCP in here (tests and other
    front ends can call it directly)."""

    def __init__(self, frame: MemoryFrame) -> None:
        from memframe.layer_settings import settings_from
        from memframe.memdir import MemoryStore, locate
        from memframe.memdir.recall import MemdirSettings

        self.frame = frame
        self.store = MemoryStore(locate(frame).path)
        # built now: tools run in worker threads, and the scanner should be built once
        self.commands = MemoryCommands(self.store, frame.secret_scanner(), frame.personal_kinds)
        self.memdir = settings_from(MemdirSettings, frame.config.settings.get("memdir"), "memdir")

    # -- tools ---------------------------------------------------------------------------------

    def memory(self, arguments: dict[str, Any]) -> str:
        return self.commands.execute(arguments)

    def recall(self, query: str, limit: int | None = None) -> str:
        from memframe.memdir.recall import bm25_select, render_memory_for_prompt

        if not query.strip():
            raise ValueError("`query` must not be empty")
        limit = self.memdir.max_relevant if limit is None else limit
        chosen = bm25_select(query, self.store.memories(), limit)
        if not chosen:
            return (
                f"No memory matches {query!r}. MEMORY.md lists every memory "
                f"(view {ROOT}/MEMORY.md or read {INDEX_URI})."
            )
        parts = [
            render_memory_for_prompt(m, self.store.root, self.memdir.file_bytes) for m in chosen
        ]
        return "\n\n".join(parts)

    def session_notes(self, session_id: str | None = None) -> str:
        from memframe.layers.session_memory import NOTES_DIR, NOTES_FILE
        from memframe.session import validate_session_id
        from memframe.session_memory import load_template

        template = load_template(self.frame.config.config_dir)
        home = self.frame.project_home

        def notes_of(directory: str) -> str | None:
            try:
                text = (home / directory / NOTES_DIR / NOTES_FILE).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            return None if not text.strip() or template.is_empty(text) else text

        if session_id is not None:
            validate_session_id(session_id)
            notes = notes_of(session_id)
            if notes is None:
                return f"Session {session_id} has no notes (yet) in this project."
            return notes
        found = sorted(
            (
                (p.stat().st_mtime, p.parents[1].name)
                for p in home.glob(f"*/{NOTES_DIR}/{NOTES_FILE}")
            ),
            reverse=True,
        )
        with_notes = [(mtime, sid) for mtime, sid in found if notes_of(sid) is not None]
        if not with_notes:
            return "No session of this project has notes yet."
        mtime, newest = with_notes[0]
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(mtime))
        others = [sid for _, sid in with_notes[1:21]]
        header = f"Notes of session {newest} (updated {stamp})"
        if others:
            header += "; other sessions with notes: " + ", ".join(others)
        return f"{header}\n\n{notes_of(newest)}"

    def team_sync(self, action: str = "status") -> str:
        from memframe.team_sync.client import client_for_frame
        from memframe.team_sync.settings import SyncConfigError, SyncError

        try:
            client = client_for_frame(self.frame)
        except SyncConfigError as exc:
            message = f"Team sync: {exc}"
            if action == "status":
                return message
            raise ValueError(message) from exc
        try:
            if action == "pull":
                result: Any = client.pull()
            elif action == "push":
                result = client.push()
            elif action == "status":
                result = client.status()
            else:
                raise ValueError(f"unknown action {action!r}: use status, pull or push")
        except SyncError as exc:
            raise ValueError(str(exc)) from exc
        return orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2).decode()

    # -- resources -----------------------------------------------------------------------------

    def resources(self) -> list[Resource]:
        """One resource per memory file (the index is registered on its own)."""
        out = []
        for memory in self.store.memories():
            relative = memory.relative_to(self.store.root)
            out.append(
                Resource(
                    uri=URI_PREFIX + relative,
                    name=relative,
                    title=memory.name,
                    description=memory.description or None,
                    mime_type="text/markdown",
                )
            )
        return out

    def read(self, relative: str) -> str:
        """``MEMORY.md`` or a memory file's text, by its path relative to the memory directory."""
        if relative == "MEMORY.md":
            return self.store.index_text()
        if not self.store.placeable(relative):
            raise ValueError(f"{relative} is not a memory file")
        return self.commands.read(f"{ROOT}/{relative}")


class MemframeMCPServer(MCPServer[Any]):
    """The SDK's server, listing the memory files present at each ``resources/list``."""

    def __init__(self, service: MemframeService | None, **options: Any) -> None:
        super().__init__(**options)
        self.service = service

    async def list_resources(self) -> list[Resource]:
        listed = await super().list_resources()
        if self.service is None:
            return listed
        files = await anyio.to_thread.run_sync(self.service.resources)
        return listed + files


def build_server(service: MemframeService | None) -> MemframeMCPServer:
    """The MCP server for ``service``. ``None`` builds the same tool and resource definitions
    with nothing behind them (the docs' tool reference is rendered from it)."""
    from memframe._version import __version__

    server = MemframeMCPServer(
        service,
        name=SERVER_NAME,
        title="memframe memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    def backend() -> MemframeService:
        if service is None:
            raise ToolError("this server has no memory directory behind it")
        return service

    def call(fn: Callable[[], str]) -> str:
        try:
            return fn()
        except (MemoryCommandError, ValueError) as exc:
            raise ToolError(str(exc)) from exc

    def read(relative: str) -> str:
        if service is None:
            raise ResourceError("this server has no memory directory behind it")
        try:
            return service.read(relative)
        except (MemoryCommandError, ValueError) as exc:
            raise ResourceError(str(exc)) from exc

    @server.tool(
        name="memory",
        description=MEMORY_DESCRIPTION,
        annotations=MEMORY_ANNOTATIONS,
        structured_output=False,
    )
    def memory(
        command: Annotated[
            Literal["view", "create", "str_replace", "insert", "delete", "rename"],
            Field(description="the command to run"),
        ],
        path: Annotated[
            str | None,
            Field(description=f"{ROOT}/… path (view, create, str_replace, insert, delete)"),
        ] = None,
        file_text: Annotated[str | None, Field(description="create: the file's text")] = None,
        view_range: Annotated[
            list[int] | None,
            Field(description="view: [first, last] line (1-based; last -1 = end of file)"),
        ] = None,
        old_str: Annotated[
            str | None, Field(description="str_replace: the text to replace (exactly once)")
        ] = None,
        new_str: Annotated[
            str | None, Field(description="str_replace: the replacement (empty: delete)")
        ] = None,
        insert_line: Annotated[
            int | None, Field(description="insert: the line to insert after (0 = the top)")
        ] = None,
        insert_text: Annotated[str | None, Field(description="insert: the text to insert")] = None,
        old_path: Annotated[str | None, Field(description="rename: the file to rename")] = None,
        new_path: Annotated[str | None, Field(description="rename: its new path")] = None,
    ) -> str:
        arguments = {
            "command": command,
            "path": path,
            "file_text": file_text,
            "view_range": view_range,
            "old_str": old_str,
            "new_str": new_str,
            "insert_line": insert_line,
            "insert_text": insert_text,
            "old_path": old_path,
            "new_path": new_path,
        }
        return call(lambda: backend().memory({k: v for k, v in arguments.items() if v is not None}))

    @server.tool(
        name="recall",
        description=RECALL_DESCRIPTION,
        annotations=RECALL_ANNOTATIONS,
        structured_output=False,
    )
    def recall(
        query: Annotated[str, Field(description="what to recall: a question or keywords")],
        limit: Annotated[
            int | None,
            Field(description="at most this many memories (default 5)", ge=1, le=MAX_RECALL),
        ] = None,
    ) -> str:
        return call(lambda: backend().recall(query, limit))

    @server.tool(
        name="session_notes",
        description=SESSION_NOTES_DESCRIPTION,
        annotations=SESSION_NOTES_ANNOTATIONS,
        structured_output=False,
    )
    def session_notes(
        session_id: Annotated[
            str | None, Field(description="the session (default: the latest with notes)")
        ] = None,
    ) -> str:
        return call(lambda: backend().session_notes(session_id))

    @server.tool(
        name="team_sync",
        description=TEAM_SYNC_DESCRIPTION,
        annotations=TEAM_SYNC_ANNOTATIONS,
        structured_output=False,
    )
    def team_sync(
        action: Annotated[
            Literal["status", "pull", "push"], Field(description="what to do")
        ] = "status",
    ) -> str:
        return call(lambda: backend().team_sync(action))

    @server.resource(
        INDEX_URI,
        name="MEMORY.md",
        title="Memory index",
        description="MEMORY.md: one line per memory file, as loaded into the agent's prompt",
        mime_type="text/markdown",
    )
    def index() -> str:
        return read("MEMORY.md")

    @server.resource(
        URI_PREFIX + "{+path}",
        name="memory file",
        title="Memory file",
        description="a memory file: path relative to the memory directory (x.md, team/x.md)",
        mime_type="text/markdown",
    )
    def memory_file(path: str) -> str:
        return read(path)

    del memory, recall, session_notes, team_sync, index, memory_file  # registered above
    return server


# -- transports ----------------------------------------------------------------------------------


def run_stdio(server: MCPServer[Any]) -> None:
    """Serve on stdin/stdout until the client closes them."""
    server.run("stdio")


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``; anything
    else is answered 401 before it reaches the MCP endpoint."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await _unauthorized(send)
                return
        await self.app(scope, receive, send)


async def _unauthorized(send: Send) -> None:
    body = orjson.dumps(
        {"error": "unauthorized", "error_description": "a valid bearer token is required"}
    )
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="memframe"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def http_app(server: MCPServer[Any], token: str, host: str = "127.0.0.1") -> ASGIApp:
    """The streamable-HTTP app (at ``/mcp``) behind the bearer token."""
    return BearerAuth(server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host), token)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free one)."""
    info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = info[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{HTTP_PATH}"


def run_http(server: MCPServer[Any], sock: socket.socket, token: str, host: str) -> None:
    """Serve streamable HTTP on the bound ``sock`` until interrupted."""
    import uvicorn

    config = uvicorn.Config(
        http_app(server, token, host), log_level="warning", lifespan="on", access_log=False
    )
    uvicorn.Server(config).run(sockets=[sock])
