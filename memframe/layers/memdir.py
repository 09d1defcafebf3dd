"""Memdir: the persistent memory directory in the prompt (docs/memdir.md).

``collect_context`` gives the agent the memory instructions with the ``MEMORY.md`` index (cut to
its limits, with a warning), and up to five memory files relevant to the current prompt, chosen
by the model backend or, offline, by BM25 over name, description and body. A file surfaced once
in a session is not repeated, and per-file and per-session byte budgets keep the context small.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from memframe._fs import atomic_write_text, resolve_under
from memframe.context.blocks import ContextBlock
from memframe.hookspecs import hookimpl
from memframe.layer_settings import settings_from
from memframe.memdir import MemoryStore, locate
from memframe.memdir.files import Memory
from memframe.memdir.index import memory_prompt
from memframe.memdir.recall import MemdirSettings, bm25_select, recall
from memframe.messages import ToolUseBlock
from memframe.models.base import ModelError, ModelRequest, backend_supports
from memframe.prompts import PromptSpec, load_prompt
from memframe.tools import written_paths

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.session import Session

log = logging.getLogger("memframe")
_JSON_LIST = re.compile(r"\[.*?\]", re.DOTALL)
PROMPT = PromptSpec(
    layer="memdir",
    bundled="data:memdir/select_prompt.md",
    placeholders=("limit", "request", "manifest"),
    required=("request", "manifest"),
)


class MemdirLayer:
    name = "memdir"

    def __init__(self, frame: MemoryFrame) -> None:
        self.frame = frame
        self.location = locate(frame)
        self.store = MemoryStore(self.location.path)
        self.settings = settings_from(MemdirSettings, frame.config.settings.get("memdir"), "memdir")
        self.prompt = load_prompt(PROMPT, frame.config.config_dir, self.settings.prompt)

    # -- the prompt ----------------------------------------------------------------------------

    @hookimpl
    def collect_context(self, session: Session, prompt: str | None) -> list[ContextBlock]:
        text, _warnings = memory_prompt(str(self.location.path), self.store.index_text())
        blocks = [ContextBlock(self.name, "Memory", text)]
        if prompt and prompt.strip():
            relevant = self.relevant(session, prompt)
            if relevant:
                blocks.append(ContextBlock(self.name, "Relevant memories", relevant))
        return blocks

    @hookimpl
    def on_tool_use(self, session: Session, tool_use: ToolUseBlock) -> None:
        """The agent wrote a memory file itself (a write tool, or Codex's ``apply_patch``):
        redact what must not be in memory (secrets, personal data), then give it its index
        line (or drop the line of a file it deleted)."""
        for target in written_paths(tool_use.name, tool_use.input):
            path = Path(os.path.realpath(resolve_under(target, self.frame.project_dir)))
            try:
                relative = path.relative_to(self.store.root).as_posix()
            except ValueError:
                continue
            if self.store.placeable(relative):
                self._redact_in_place(path, relative)
                self.store.reindex([path])

    def _redact_in_place(self, path: Path, relative: str) -> None:
        from memframe.memdir.guard import scrub

        with self.store.locked():
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return
            clean, labels = scrub(text, self.frame.secret_scanner(), self.frame.personal_kinds)
            if labels:
                atomic_write_text(path, clean)
                log.warning(
                    "memdir: redacted %s from %s, written by the agent", ", ".join(labels), relative
                )

    def relevant(self, session: Session, prompt: str) -> str:
        """Up to ``max_relevant`` memories for ``prompt`` not surfaced before in the session."""
        state = session.state.section(self.name)
        surfaced: list[str] = state.setdefault("surfaced", [])
        text, state["surfaced_bytes"] = recall(
            self.store, prompt, surfaced, state.get("surfaced_bytes", 0), self.settings, self.select
        )
        return text

    def select(self, prompt: str, candidates: list[Memory], limit: int) -> list[Memory]:
        if self.settings.selector != "bm25":
            chosen = self._select_with_model(prompt, candidates, limit)
            if chosen is not None:
                return chosen
        return bm25_select(prompt, candidates, limit)

    def _select_with_model(
        self, prompt: str, candidates: list[Memory], limit: int
    ) -> list[Memory] | None:
        """The backend's choice, or ``None`` to fall back to BM25 (offline, or a failure)."""
        try:
            backend = self.frame.model_backend()
        except ModelError as exc:
            log.warning("memdir: no model backend for memory selection (%s); using BM25", exc)
            return None
        if not backend_supports(backend, "select_memories"):
            return None
        by_file = {m.relative_to(self.store.root): m for m in candidates}
        manifest = "\n".join(
            f"- {file}: {m.name} — {m.description}" for file, m in sorted(by_file.items())
        )
        request = ModelRequest(
            system="You pick which saved memories would help answer a request.",
            messages=[
                {
                    "role": "user",
                    "content": self.prompt.render(
                        limit=str(limit), request=prompt, manifest=manifest
                    ),
                }
            ],
            max_tokens=256,
            purpose="select_memories",
            timeout=10.0,
        )
        try:
            answer = backend.complete(request).text
            match = _JSON_LIST.search(answer)
            if match is None:
                log.warning("memdir: the model did not answer with a list; using BM25")
                return None
            names = orjson.loads(match.group(0))
        except (ModelError, orjson.JSONDecodeError) as exc:
            log.warning("memdir: memory selection failed (%s); using BM25", exc)
            return None
        if not isinstance(names, list):
            return None
        return [by_file[n] for n in names if isinstance(n, str) and n in by_file][:limit]
