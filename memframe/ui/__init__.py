"""``memframe ui``: a local web view of one project's memory.

Memories (filter, recall search, edit, forget, move between private and team through the secret
gate), ``MEMORY.md`` with the lines the agent loads, sessions with their notes and extraction
history, Magic Docs, team sync status and dream history — served on 127.0.0.1 behind a one-time
token (:mod:`memframe.ui.security`). Needs Starlette, uvicorn and Jinja2 (the ``ui`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memframe.ui.app import UiApp, create_app
    from memframe.ui.server import RunningUi, start


def __getattr__(name: str) -> Any:
    if name in ("UiApp", "create_app"):
        from memframe.ui import app

        return getattr(app, name)
    if name in ("RunningUi", "start"):
        from memframe.ui import server

        return getattr(server, name)
    raise AttributeError(f"module 'memframe.ui' has no attribute {name!r}")


__all__ = ["RunningUi", "UiApp", "create_app", "start"]
