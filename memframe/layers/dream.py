"""Dream (docs/memdir.md, dream): consolidate the memory directory now and then.

The gates run cheapest first: 24 hours since the last consolidation (the lock file's mtime), at
most one scan of the sessions per 10 minutes, at least 5 sessions active since then (not counting
the current one), and the lock. The consolidation itself is a forked agent confined to the memory
directory (offline: contradictions settled in favour of the newer memory, duplicates merged,
absolute dates); what it says it did is the result's ``report``; its changes are applied under the
store's lock, the index is rebuilt within its limits, and a failure rolls the lock back.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memframe._fs import atomic_write_text, ensure_private_dir
from memframe.agent import ForkedAgent, Permission
from memframe.hookspecs import hookimpl
from memframe.layer_settings import at_least, settings_from
from memframe.memdir import MemoryStore, locate
from memframe.memdir.guard import redact_private_data
from memframe.memdir.lock import ConsolidationLock
from memframe.models.base import ModelBackend, ModelRequest, ModelResponse, backend_supports
from memframe.prompts import PromptSpec, load_prompt

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.session import Session

SCAN_FILE = ".dream-scan"
HOUR = 3600.0
PROMPT = PromptSpec(
    layer="dream",
    bundled="data:memdir/dream_prompt.md",
    placeholders=("memory_dir", "manifest"),
    required=("memory_dir",),
)


@dataclass(frozen=True)
class DreamSettings:
    """``dream`` in settings.json."""

    enabled: bool = True
    min_hours: float = 24.0
    min_sessions: int = 5
    scan_interval_minutes: float = 10.0
    max_turns: int = field(default=10, metadata=at_least(1))
    max_seconds: float = field(default=300.0, metadata=at_least(1))
    prompt: str | None = None  # a prompt file (memframe.prompts), read when the frame opens


@dataclass
class DreamResult:
    ran: bool
    reason: str
    deleted: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)  # team/ files saved with secrets redacted
    memories: int = 0
    # what the consolidation said it did, line by line ("merged a.md into b.md …", "kept newer
    # 'never …' over older 'always …'"): the text of every model turn
    report: list[str] = field(default_factory=list)


# What the offline backend answers once its own calls went through: not worth reporting.
_ACKNOWLEDGEMENT = "done"


class _Transcript:
    """The model backend, noting the text of every answer (the consolidation's report)."""

    def __init__(self, backend: ModelBackend) -> None:
        self.backend = backend
        self.name = backend.name
        self.lines: list[str] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        response = self.backend.complete(request)
        text = response.text.strip()
        if text and text != _ACKNOWLEDGEMENT:
            self.lines.extend(line.strip() for line in text.splitlines() if line.strip())
        return response


class DreamLayer:
    name = "dream"

    def __init__(self, frame: MemoryFrame) -> None:
        self.frame = frame
        self.location = locate(frame)
        self.store = MemoryStore(self.location.path)
        self.lock = ConsolidationLock(self.store.root)
        self.settings = settings_from(
            DreamSettings, frame.config.settings.get(self.name), self.name
        )
        self.prompt = load_prompt(PROMPT, frame.config.config_dir, self.settings.prompt)

    # -- gates ---------------------------------------------------------------------------------

    def sessions_since(self, since: float, exclude: str | None = None) -> list[str]:
        """Sessions with activity after ``since``: memframe's session states and, in Claude
        mode, Claude Code's transcripts beside the memory directory."""
        found: set[str] = set()
        candidates = list(self.frame.project_home.glob("*/state.json"))
        if self.location.mode == "claude":
            candidates += list(self.store.root.parent.glob("*.jsonl"))
        for path in candidates:
            session_id = path.parent.name if path.name == "state.json" else path.stem
            if session_id == exclude:
                continue
            try:
                if path.stat().st_mtime > since:
                    found.add(session_id)
            except FileNotFoundError:
                continue
        return sorted(found)

    def gate(self, current: str | None = None, now: float | None = None) -> str | None:
        """Why not to consolidate now (``None``: every gate is open)."""
        now = time.time() if now is None else now
        if not self.settings.enabled:
            return "dream is disabled"
        if not self.store.root.is_dir():
            return "no memory directory yet"
        last = self.lock.last_consolidated()
        if now - last < self.settings.min_hours * HOUR:
            return f"last consolidation {(now - last) / HOUR:.1f} h ago"
        scan = self.store.root / SCAN_FILE
        try:
            scanned = scan.stat().st_mtime
        except FileNotFoundError:
            scanned = 0.0
        if now - scanned < self.settings.scan_interval_minutes * 60:
            return "sessions were scanned less than the scan interval ago"
        atomic_write_text(scan, "")
        os.utime(scan, (now, now))
        sessions = self.sessions_since(last, exclude=current)
        if len(sessions) < self.settings.min_sessions:
            return f"{len(sessions)} session(s) since the last consolidation"
        return None

    @hookimpl
    def on_session_end(self, session: Session) -> None:
        if self.gate(current=session.id) is None:
            session.submit_background(self.consolidate, name="consolidate", layer=self.name)

    # -- consolidation -------------------------------------------------------------------------

    def consolidate(self) -> DreamResult:
        """Take the lock and consolidate; a failure rolls the lock back and re-raises."""
        ensure_private_dir(self.store.root)
        acquired = self.lock.try_acquire()
        if acquired is None:
            return DreamResult(False, f"the lock is held by PID {self.lock.holder()}")
        try:
            result = self._consolidate()
        except BaseException:
            self.lock.release(acquired, success=False)
            raise
        self.lock.release(acquired, success=True)
        return result

    def _consolidate(self) -> DreamResult:
        backend = self.frame.model_backend()
        if not backend_supports(backend, "dream"):
            raise RuntimeError(f"model backend {backend.name!r} cannot consolidate memories")
        memories = self.store.memories()
        manifest = "\n".join(
            f"- {m.relative_to(self.store.root)} ({m.type}, {m.age_days()} days old): "
            f"{m.name} — {m.description}"
            for m in memories
        )
        prompt = self.prompt.render(
            memory_dir=str(self.store.root), manifest=manifest or "(no memories)"
        )
        request = ModelRequest(
            system="You maintain the long-term memory of a coding agent.",
            messages=[{"role": "user", "content": prompt}],
            purpose="dream",
            task={
                "memory_dir": str(self.store.root),
                "memories": [
                    {
                        "path": str(m.path),
                        "file": m.relative_to(self.store.root),
                        "type": m.type,
                        "body": m.body,
                        "text": m.path.read_text(encoding="utf-8"),
                        "mtime": m.mtime,
                    }
                    for m in memories
                ],
            },
            timeout=self.settings.max_seconds,
        )
        staged: dict[Path, str | None] = {}
        redacted: list[str] = []

        def take(changes: dict[Path, str | None]) -> dict[Path, str | None]:
            guarded, notes = redact_private_data(
                self.store.root, changes, self.frame.secret_scanner(), self.frame.personal_kinds
            )
            redacted.extend(notes)
            staged.update(guarded)
            return {}

        transcript = _Transcript(backend)
        agent = ForkedAgent(
            transcript,
            Permission(
                tools=frozenset({"Read", "Glob", "Grep", "Write", "Edit", "Delete"}),
                directories=(self.store.root,),
            ),
            max_turns=int(self.settings.max_turns),
            max_seconds=float(self.settings.max_seconds),
            review=take,
        )
        result = agent.run(request)
        deleted, written = self.store.apply(staged)
        self.store.rebuild_index()
        return DreamResult(
            True,
            "consolidated",
            deleted=deleted,
            written=written,
            refused=[f"{r.tool}: {r.reason}" for r in result.refused],
            redacted=redacted,
            memories=len(self.store.memory_paths()),
            report=transcript.lines,
        )
