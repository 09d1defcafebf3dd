"""Extract memories (docs/memdir.md, extract_memories): at the end of a turn without tool
calls, a forked agent saves what
the new part of the conversation taught into typed memory files, in the background.

One extraction at a time per session (a trigger meanwhile becomes the single trailing run). When
the main agent itself wrote into the memory directory since the last run, the run is skipped and
the cursor advanced: the agent already did the remembering. Files the fork writes go through
the store, which refuses duplicates and keeps ``MEMORY.md`` in step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe._fs import is_inside
from memframe.agent import ForkedAgent, Permission
from memframe.background.serial import SessionRunners
from memframe.hookspecs import hookimpl
from memframe.layer_settings import at_least, settings_from
from memframe.memdir import MemoryStore, locate
from memframe.memdir.guard import redact_private_data, scrub_messages
from memframe.messages import Message
from memframe.models.base import ModelError, ModelRequest, ToolSpec, backend_supports
from memframe.prompts import PromptSpec, load_prompt
from memframe.tools import written_paths

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.session import Session

FALLBACK_SYSTEM = "You keep a long-term memory for a coding agent and its user."
MAX_RECORDS = 200
Job = tuple[dict[str, Any], list[Message], int]  # (record, messages, cursor)


@dataclass(frozen=True)
class ExtractSettings:
    """``extract_memories`` in settings.json."""

    enabled: bool = True
    max_turns: int = field(default=5, metadata=at_least(1))
    max_seconds: float = field(default=120.0, metadata=at_least(1))
    prompt: str | None = None  # a prompt file (memframe.prompts), read when the frame opens


PROMPT = PromptSpec(
    layer="extract_memories",
    bundled="data:memdir/extract_prompt.md",
    placeholders=("memory_dir", "new_messages", "manifest"),
    required=("memory_dir",),
)


def wrote_into(messages: list[Message], directory: Path, cwd: Path | None = None) -> bool:
    """Whether the main agent wrote a file inside ``directory`` in ``messages`` — with a write
    tool, or with Codex's ``apply_patch`` (relative paths are taken from ``cwd``)."""
    return any(
        is_inside(target, directory, base=cwd)
        for message in messages
        for call in message.tool_uses
        for target in written_paths(call.name, call.input)
    )


class ExtractMemoriesLayer:
    name = "extract_memories"

    def __init__(self, frame: MemoryFrame) -> None:
        self.frame = frame
        self.location = locate(frame)
        self.store = MemoryStore(self.location.path)
        self.settings = settings_from(
            ExtractSettings, frame.config.settings.get(self.name), self.name
        )
        self.prompt = load_prompt(PROMPT, frame.config.config_dir, self.settings.prompt)
        self._runners: SessionRunners[Job] = SessionRunners(
            lambda session, job: self._extract(session, *job),
            on_replaced=lambda job: job[0].update(status="coalesced"),
        )

    def state(self, session: Session) -> dict[str, Any]:
        return session.state.section(self.name)

    @hookimpl
    def on_stop(self, session: Session, message: Message) -> None:
        if message.has_tool_calls or not self.settings.enabled:
            return
        state = self.state(session)
        history = list(session.history)
        cursor = state.get("cursor", 0)
        if not isinstance(cursor, int) or cursor > len(history):
            cursor = 0  # the history was compacted (or the state is foreign): start over
        record: dict[str, Any] = {"index": len(history) - 1, "from": cursor, "status": "pending"}
        records: list[dict[str, Any]] = state.setdefault("runs", [])
        records.append(record)
        del records[:-MAX_RECORDS]
        if wrote_into(history[cursor:], self.store.root, self.frame.project_dir):
            record["status"] = "skipped"
            record["why"] = "the agent wrote into the memory directory itself"
            state["cursor"] = len(history)
            return
        if cursor >= len(history):
            record["status"] = "skipped"
            record["why"] = "nothing new since the last run"
            return
        self._runners.submit(session, (record, history, cursor), name="extract", layer=self.name)

    def _extract(
        self, session: Session, record: dict[str, Any], history: list[Message], cursor: int
    ) -> None:
        record["started_at"] = time.time()
        try:
            backend = self.frame.model_backend()
        except ModelError as exc:
            record.update(status="skipped", why=f"model backend unavailable: {exc}")
            raise
        if not backend_supports(backend, "extract_memories"):
            record.update(status="skipped", why=f"backend {backend.name!r} cannot extract")
            return
        memories = self.store.memories()
        manifest = [
            {
                "file": m.relative_to(self.store.root),
                "name": m.name,
                "description": m.description,
                "type": m.type,
                "hash": m.content_hash,
            }
            for m in memories
        ]
        listing = "\n".join(
            f"- {e['file']} ({e['type']}): {e['name']} — {e['description']}" for e in manifest
        )
        prompt = self.prompt.render(
            memory_dir=str(self.store.root),
            new_messages=str(len(history) - cursor),
            manifest=listing or "(none yet)",
        )
        messages = scrub_messages(
            [m.to_wire() for m in history], self.frame.secret_scanner(), self.frame.personal_kinds
        )
        request = ModelRequest(
            system=session.system_prompt or FALLBACK_SYSTEM,
            messages=[*messages, {"role": "user", "content": [{"type": "text", "text": prompt}]}],
            tools=[ToolSpec.from_wire(tool) for tool in session.tools],
            cache_prefix=len(messages),
            purpose="extract_memories",
            task={
                "memory_dir": str(self.store.root),
                "manifest": manifest,
                "conversation_start": cursor,
                "conversation_end": len(messages),
            },
            timeout=self.settings.max_seconds,
        )
        staged: dict[Path, str] = {}
        redacted: list[str] = []

        def take(changes: dict[Path, str | None]) -> dict[Path, str | None]:
            # the store writes them (dedupe, index, lock); deletions are not this layer's job
            guarded, notes = redact_private_data(
                self.store.root, changes, self.frame.secret_scanner(), self.frame.personal_kinds
            )
            redacted.extend(notes)
            staged.update({p: t for p, t in guarded.items() if t is not None})
            return {}

        permission = Permission(
            tools=frozenset({"Read", "Glob", "Grep", "Write", "Edit"}),
            directories=(self.store.root,),
            readable=(self.frame.project_dir, self.store.root),
        )
        agent = ForkedAgent(
            backend,
            permission,
            max_turns=int(self.settings.max_turns),
            max_seconds=float(self.settings.max_seconds),
            review=take,
        )
        try:
            result = agent.run(request)
            saved, skipped = self.store.save_files(staged)
        except Exception as exc:  # recorded, then reported through on_layer_error
            record.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            raise
        state = self.state(session)
        # never backwards: a skip may have moved the cursor past this run's history meanwhile
        state["cursor"] = max(int(state.get("cursor", 0)), len(history))
        record.update(
            status="saved" if saved else "nothing",
            saved=[m.relative_to(self.store.root) for m in saved],
            skipped=skipped,
            redacted=redacted,
            refused=[f"{r.tool}: {r.reason}" for r in result.refused],
            turns=result.turns,
            finished_at=time.time(),
        )

    def wait(self, session: Session, timeout: float = 15.0) -> bool:
        return self._runners.wait(session, timeout, stale_after=60.0)

    @hookimpl
    def on_session_end(self, session: Session) -> None:
        self.wait(session)
        self._runners.forget(session)
