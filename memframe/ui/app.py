"""The ``memframe ui`` web app: server-rendered pages (Jinja2, autoescaped) over one frame.

Routes (every one behind :class:`~memframe.ui.security.Guard`):

========================================  =========================================================
``GET /memories``                         the memories; ``?q=`` (recall), ``?type=``, ``?scope=``
``GET /memory/{file}``                    one memory: body, file, edit form, forget, move
``POST /memory/{file}/edit``              rewrite it (:meth:`MemoryStore.edit`)
``POST /memory/{file}/forget``            delete it and its index line (:meth:`MemoryStore.forget`)
``POST /memory/{file}/move``              private ↔ team (:meth:`MemoryStore.move`, secret gate)
``GET /index``                            ``MEMORY.md``, the lines the agent sees marked
``GET /sessions``, ``/sessions/{id}``     sessions, their notes and extraction history
``GET /docs``                             Magic Docs tracked, their last update
``GET /team``                             team sync status
``GET /dream``, ``POST /dream``           consolidation history; consolidate now
``GET /api/memories``, ``/api/status``    the same as JSON
``GET /static/…``                         the package's CSS and script
========================================  =========================================================

Handlers that touch files are plain functions (Starlette runs them on its thread pool); every
write goes through :class:`~memframe.memdir.MemoryStore` (atomic, locked, indexed).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode

from memframe.ui import data
from memframe.ui.markdown import render_markdown
from memframe.ui.security import Guard, check_csrf

try:
    import jinja2
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles
except ImportError as exc:  # pragma: no cover - part of the ui extra and the dev set-up
    raise ImportError(
        "memframe ui needs Starlette, uvicorn and Jinja2: pip install 'memframe[server]'"
    ) from exc

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from memframe.frame import MemoryFrame
    from memframe.memdir.store import MemoryStore

HERE = Path(__file__).parent
MAX_FORM_BYTES = 1_000_000
NAV = (
    ("memories", "/memories", "Memories"),
    ("index", "/index", "MEMORY.md"),
    ("sessions", "/sessions", "Sessions"),
    ("docs", "/docs", "Magic Docs"),
    ("team", "/team", "Team sync"),
    ("dream", "/dream", "Dream"),
)


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return "never"
    moment = dt.datetime.fromtimestamp(float(timestamp)).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z")


def _ago(timestamp: float | None) -> str:
    if not timestamp:
        return "never"
    seconds = max(0.0, time.time() - float(timestamp))
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["ago"] = _ago
    env.filters["markdown"] = render_markdown
    env.filters["url"] = lambda value: quote(str(value), safe="/")
    return env


class UiApp:
    """The pages of one frame's memory."""

    def __init__(self, frame: MemoryFrame, token: str) -> None:
        from memframe.memdir import MemoryStore, locate

        self.frame = frame
        self.store: MemoryStore = MemoryStore(locate(frame).path)
        self.templates = _environment()
        routes = [
            Route("/", self.home),
            Route("/memories", self.memories),
            Route("/memory/{file:path}/edit", self.edit, methods=["POST"]),
            Route("/memory/{file:path}/forget", self.forget, methods=["POST"]),
            Route("/memory/{file:path}/move", self.move, methods=["POST"]),
            Route("/memory/{file:path}", self.memory),
            Route("/index", self.index),
            Route("/sessions", self.sessions),
            Route("/sessions/{session_id}", self.session),
            Route("/docs", self.docs),
            Route("/team", self.team),
            Route("/dream", self.dream),
            Route("/dream", self.dream_now, methods=["POST"]),
            Route("/api/memories", self.api_memories),
            Route("/api/status", self.api_status),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
        self.starlette = Starlette(routes=routes)
        self.guard = Guard(self.starlette, token)

    @property
    def asgi(self) -> ASGIApp:
        return self.guard

    # -- rendering -----------------------------------------------------------------------------

    def render(
        self, request: Request, template: str, section: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        page = self.templates.get_template(template).render(
            nav=NAV,
            section=section,
            csrf=self.guard.csrf_token(),
            memory_dir=str(self.store.root),
            project=str(self.frame.project_dir),
            **values,
        )
        return HTMLResponse(page, status_code=status)

    def not_found(self, request: Request, what: str) -> HTMLResponse:
        return self.render(request, "error.html", "", status=404, title="Not found", message=what)

    async def form(self, request: Request) -> dict[str, str] | Response:
        """The posted form (URL-encoded), its CSRF token checked; a response when refused."""
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                return HTMLResponse("form too large", status_code=413)
        fields = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        if not check_csrf(fields, self.guard.csrf_token()):
            return HTMLResponse("403: missing or wrong CSRF token", status_code=403)
        return fields

    # -- memories ------------------------------------------------------------------------------

    def home(self, request: Request) -> Response:
        return RedirectResponse("/memories", status_code=303)

    def memories(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        kind = request.query_params.get("type", "")
        scope = request.query_params.get("scope", "")
        rows = data.list_memories(self.store, query, kind, scope)
        return self.render(
            request,
            "memories.html",
            "memories",
            title="Memories",
            rows=rows,
            query=query,
            kind=kind,
            scope=scope,
            types=data.memory_types(self.store),
            scopes=data.SCOPES,
            total=len(self.store.memory_paths()),
            notice=request.query_params.get("forgotten"),
        )

    def memory(self, request: Request, *, status: int = 200, **extra: Any) -> Response:
        relative = request.path_params["file"]
        memory = data.find_memory(self.store, relative)
        if memory is None:
            return self.not_found(request, f"no memory {relative!r} in {self.store.root}")
        verdict = data.gate_verdict(memory, self.frame.secret_scanner())
        values: dict[str, Any] = {
            "title": memory.name,
            "row": data.memory_row(memory, self.store.root),
            "memory": memory,
            "path": str(memory.path),
            "verdict": verdict,
            "types": data.memory_types(self.store),
            "notice": request.query_params.get("done"),
            "error": None,
            "blocked": None,
            "draft": None,
        }
        values.update(extra)
        return self.render(request, "memory.html", "memories", status=status, **values)

    async def edit(self, request: Request) -> Response:
        fields = await self.form(request)
        if isinstance(fields, Response):
            return fields
        relative = request.path_params["file"]
        from memframe.memdir.files import MemoryFormatError

        try:
            saved = await run_in_threadpool(
                self.store.edit,
                relative,
                name=fields.get("name"),
                description=fields.get("description"),
                kind=fields.get("type"),
                body=fields.get("body"),
                scanner=self.frame.secret_scanner(),
                personal=self.frame.personal_kinds,
            )
        except KeyError:
            return self.not_found(request, f"no memory {relative!r}")
        except MemoryFormatError as exc:
            return await run_in_threadpool(
                self.memory, request, status=422, error=f"not saved: {exc}", draft=fields
            )
        return RedirectResponse(
            f"/memory/{quote(saved.relative_to(self.store.root))}?done=saved", status_code=303
        )

    async def forget(self, request: Request) -> Response:
        fields = await self.form(request)
        if isinstance(fields, Response):
            return fields
        relative = request.path_params["file"]

        def forget() -> str | None:
            memory = data.find_memory(self.store, relative)
            if memory is None:
                return None
            try:
                same = self.store.find(relative).path == memory.path
            except KeyError:
                return None
            if not same:  # the store would take another memory for this reference
                raise ValueError(
                    f"{relative!r} also names another memory; forget it with memframe memory "
                    "forget and the full file name"
                )
            return self.store.forget(relative)

        try:
            forgotten = await run_in_threadpool(forget)
        except ValueError as exc:
            return await run_in_threadpool(self.memory, request, status=409, error=str(exc))
        if forgotten is None:
            return self.not_found(request, f"no memory {relative!r}")
        return RedirectResponse(f"/memories?{urlencode({'forgotten': forgotten})}", status_code=303)

    async def move(self, request: Request) -> Response:
        fields = await self.form(request)
        if isinstance(fields, Response):
            return fields
        relative = request.path_params["file"]
        from memframe.memdir.files import MemoryFormatError
        from memframe.memdir.store import SecretGateError

        try:
            moved = await run_in_threadpool(
                self.store.move,
                relative,
                fields.get("scope", ""),
                scanner=self.frame.secret_scanner(),
            )
        except KeyError:
            return self.not_found(request, f"no memory {relative!r}")
        except SecretGateError as exc:
            return await run_in_threadpool(self.memory, request, status=422, blocked=exc.findings)
        except MemoryFormatError as exc:
            return await run_in_threadpool(
                self.memory, request, status=422, error=f"not moved: {exc}"
            )
        where = moved.scope(self.store.root)
        return RedirectResponse(
            f"/memory/{quote(moved.relative_to(self.store.root))}?done=moved+to+{where}",
            status_code=303,
        )

    # -- the other pages -----------------------------------------------------------------------

    def index(self, request: Request) -> Response:
        view = data.index_view(self.store)
        return self.render(request, "index.html", "index", title="MEMORY.md", view=view)

    def sessions(self, request: Request) -> Response:
        rows = data.list_sessions(self.frame.project_home)
        return self.render(
            request,
            "sessions.html",
            "sessions",
            title="Sessions",
            rows=rows,
            project_home=str(self.frame.project_home),
        )

    def session(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        view = data.session_view(self.frame.project_home, session_id)
        if view is None:
            return self.not_found(request, f"no session {session_id!r}")
        return self.render(request, "session.html", "sessions", title=session_id, view=view)

    def docs(self, request: Request) -> Response:
        rows = data.tracked_docs(self.frame.project_home)
        return self.render(request, "docs.html", "docs", title="Magic Docs", rows=rows)

    def team(self, request: Request) -> Response:
        view = data.team_view(self.frame)
        return self.render(request, "team.html", "team", title="Team sync", view=view)

    def dream(self, request: Request) -> Response:
        view = data.dream_view(self.frame, self.store)
        return self.render(
            request,
            "dream.html",
            "dream",
            title="Dream",
            view=view,
            notice=request.query_params.get("done"),
        )

    async def dream_now(self, request: Request) -> Response:
        fields = await self.form(request)
        if isinstance(fields, Response):
            return fields

        def consolidate() -> str:
            from memframe.layers.dream import DreamLayer

            layer = self.frame.manager.get_plugin("dream")
            if not isinstance(layer, DreamLayer):
                layer = DreamLayer(self.frame)
            result = layer.consolidate()
            if result.ran:
                data.record_dream(self.store.root, result, source="memframe ui")
                return "consolidated"
            return f"not consolidated: {result.reason}"

        try:
            outcome = await run_in_threadpool(consolidate)
        except Exception as exc:  # a model backend's failure is shown, not a 500
            outcome = f"failed: {type(exc).__name__}: {exc}"
        return RedirectResponse(f"/dream?{urlencode({'done': outcome})}", status_code=303)

    # -- JSON ----------------------------------------------------------------------------------

    def api_memories(self, request: Request) -> Response:
        rows = data.list_memories(
            self.store,
            request.query_params.get("q", ""),
            request.query_params.get("type", ""),
            request.query_params.get("scope", ""),
        )
        return JSONResponse(
            {"memory_dir": str(self.store.root), "memories": [asdict(r) for r in rows]}
        )

    def api_status(self, request: Request) -> Response:
        view = data.team_view(self.frame)
        return JSONResponse(
            {
                "memory_dir": str(self.store.root),
                "memories": len(self.store.memory_paths()),
                "sessions": len(data.list_sessions(self.frame.project_home)),
                "team_sync": {
                    "configured": view.configured,
                    "problem": view.problem,
                    "status": view.status,
                },
            }
        )


def create_app(frame: MemoryFrame, token: str) -> ASGIApp:
    """The UI of ``frame``'s memory as an ASGI app that only answers with ``token``."""
    return UiApp(frame, token).asgi
