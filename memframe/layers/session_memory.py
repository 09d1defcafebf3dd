"""Session memory: a Markdown notes file per session, rewritten in the background by a forked agent
(docs/session-memory.md). The notes survive compaction: ``on_pre_compact`` returns them."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe._fs import atomic_write_text, ensure_private_dir
from memframe.agent import ForkedAgent, Permission
from memframe.background.serial import SessionRunners
from memframe.config import ConfigError
from memframe.hookspecs import hookimpl
from memframe.layer_settings import at_least, checked, settings_from
from memframe.memdir.guard import redact_private_data, scrub_messages
from memframe.messages import Message
from memframe.models.base import ModelError, ModelRequest, ToolSpec, backend_supports
from memframe.prompts import PromptSpec, load_prompt
from memframe.session_memory import (
    Template,
    load_template,
    oversized_sections,
    truncate_to_budget,
)
from memframe.state import keep_aside

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.session import Session

log = logging.getLogger("memframe")
NOTES_DIR = "session-memory"
NOTES_FILE = "summary.md"
WAIT_TIMEOUT = 15.0  # longest wait for an in-flight extraction (compaction, session end)
STALE_AFTER = 60.0  # an extraction that started longer ago is not waited for
MAX_RECORDS = 200
FALLBACK_SYSTEM = "You keep concise working notes about a coding session."
PROMPT = PromptSpec(
    layer="session_memory",
    bundled="data:session_memory/prompt.md",
    placeholders=("notes_path", "current_notes", "section_budget", "total_budget", "oversized"),
    required=("notes_path",),
)


@dataclass(frozen=True)
class SessionMemorySettings:
    """``session_memory`` in settings.json; ``session_memory.<name>`` from a config provider."""

    enabled: bool = True
    minimum_message_tokens_to_init: int = 10_000
    minimum_tokens_between_update: int = 5_000
    tool_calls_between_updates: int = field(default=3, metadata=at_least(1))
    max_section_tokens: int = field(default=2_000, metadata=at_least(1))
    max_total_tokens: int = field(default=12_000, metadata=at_least(1))
    max_turns: int = field(default=5, metadata=at_least(1))
    max_seconds: float = field(default=120.0, metadata=at_least(1))
    prompt: str | None = None  # a prompt file (memframe.prompts), read when the frame opens


Job = tuple[dict[str, Any], list[Message]]  # (the trigger's record, the messages to summarise)


@dataclass
class Trigger:
    """Why an extraction fired, recorded when it fired (deterministic)."""

    index: int
    message_id: str | None
    context_tokens: int
    growth: int
    tool_calls: int
    reason: (
        str  # "tool_calls", "idle_turn"; offline catch-ups: "stop", "pre_compact", "session_end"
    )

    def record(self) -> dict[str, Any]:
        return {**vars(self), "status": "pending"}


class SessionMemoryLayer:
    name = "session_memory"

    def __init__(self, frame: MemoryFrame) -> None:
        self.frame = frame
        self.local = settings_from(
            SessionMemorySettings, frame.config.settings.get("session_memory"), "session_memory"
        )
        self.template: Template = load_template(frame.config.config_dir)
        self.prompt = load_prompt(PROMPT, frame.config.config_dir, self.local.prompt)
        self._settings = self.local
        self._remote_version = -1
        self._runners: SessionRunners[Job] = SessionRunners(
            lambda session, job: self._extract(session, *job),
            on_replaced=lambda job: job[0].update(status="coalesced"),
        )
        self._unusable_backend: str | None = None
        self.wait_timeout = WAIT_TIMEOUT
        self.stale_after = STALE_AFTER

    # -- settings ------------------------------------------------------------------------------

    def settings(self) -> SessionMemorySettings:
        """Local settings overlaid with the config provider's ``session_memory.*`` values.

        Cheap: the remote cache is read without waiting and merged again only when it changed.
        A remote value of the wrong type is ignored (and logged), never fatal.
        """
        remote = self.frame.remote_config
        remote.poll()
        if remote.version != self._remote_version:
            self._remote_version = remote.version
            values = remote.values()
            prefix = "session_memory."
            ours = {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)}
            merged = self.local
            for key, value in ours.items():
                if key == "prompt":  # a file of this machine, read when the frame opened
                    log.warning("config provider: session_memory.prompt cannot be set remotely")
                    continue
                try:
                    merged = checked(SessionMemorySettings, merged, {key: value}, "config provider")
                except ConfigError as exc:
                    log.warning("%s; ignored", exc)
            self._settings = merged
        return self._settings

    # -- paths and state -----------------------------------------------------------------------

    @staticmethod
    def notes_path(session: Session) -> Path:
        return session.dir / NOTES_DIR / NOTES_FILE

    @staticmethod
    def state(session: Session) -> dict[str, Any]:
        return session.state.section("session_memory")

    # -- the trigger ---------------------------------------------------------------------------

    def should_extract(self, session: Session, message: Message) -> Trigger | None:
        """The update rule of docs/session-memory.md, evaluated after each assistant message.
        Updates the counters it keeps."""
        settings = self.settings()
        state = self.state(session)
        calls = len(message.tool_uses)
        state["tool_calls_since"] = state.get("tool_calls_since", 0) + calls
        if not settings.enabled:
            return None
        tokens = session.context_tokens
        if tokens < state.get("tokens_at_last_extraction", 0):
            state["tokens_at_last_extraction"] = tokens  # compacted: growth counts from here
        if not state.get("initialized"):
            if tokens < settings.minimum_message_tokens_to_init:
                return None
            state["initialized"] = True
        growth = tokens - state.get("tokens_at_last_extraction", 0)
        if growth < settings.minimum_tokens_between_update:
            return None
        since = state["tool_calls_since"]
        if since >= settings.tool_calls_between_updates:
            reason = "tool_calls"
        elif calls == 0:
            reason = "idle_turn"
        else:
            return None
        state["tokens_at_last_extraction"] = tokens
        state["tool_calls_since"] = 0
        return Trigger(session.message_count - 1, message.id, tokens, growth, since, reason)

    @hookimpl
    def on_message(self, session: Session, message: Message) -> None:
        if message.role != "assistant":
            return
        trigger = self.should_extract(session, message)
        if trigger is not None:
            self._schedule(session, trigger)

    def _schedule(self, session: Session, trigger: Trigger) -> None:
        record = trigger.record()
        records: list[dict[str, Any]] = self.state(session).setdefault("extractions", [])
        records.append(record)
        del records[:-MAX_RECORDS]
        snapshot = list(session.history)
        self._runners.submit(session, (record, snapshot), name="extract", layer=self.name)

    # -- one extraction ------------------------------------------------------------------------

    def _extract(self, session: Session, record: dict[str, Any], snapshot: list[Message]) -> None:
        record["started_at"] = time.time()
        try:
            backend = self.frame.model_backend()
        except ModelError as exc:
            self._skip(record, f"model backend unavailable: {exc}")
            if self._unusable_backend == str(exc):
                return  # reported already
            self._unusable_backend = str(exc)
            raise
        if not backend_supports(backend, "session_memory"):
            self._skip(record, f"model backend {backend.name!r} cannot write session notes")
            return
        settings = self.settings()
        path = self.notes_path(session)
        try:
            current = self._current_notes(path, record)
        except OSError as exc:
            record.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            raise
        request = self._request(session, snapshot, path, current, settings)
        redacted: list[str] = []

        def private(changes: dict[Path, str | None]) -> dict[Path, str | None]:
            # the notes are injected at compaction: no secret or personal datum goes in
            guarded, notes = redact_private_data(
                path.parent, changes, self.frame.secret_scanner(), self.frame.personal_kinds
            )
            redacted.extend(notes)
            return guarded

        agent = ForkedAgent(
            backend,
            Permission.edit_one_file(path),
            max_turns=settings.max_turns,
            max_seconds=settings.max_seconds,
            validate=lambda _path, text: self.template.check(text),
            review=private,
        )
        try:
            result = agent.run(request)
        except Exception as exc:  # recorded, then reported through on_layer_error
            record.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            record["finished_at"] = time.time()
            raise
        record.update(
            redacted=redacted,
            status="updated" if result.changed else "unchanged",
            turns=result.turns,
            refused=[f"{r.tool}: {r.reason}" for r in result.refused],
            failed_calls=result.failed_calls,
            usage=result.usage,
            notes_path=str(path),
            finished_at=time.time(),
        )

    def _skip(self, record: dict[str, Any], why: str) -> None:
        record.update(status="skipped", error=why, finished_at=time.time())

    def _current_notes(self, path: Path, record: dict[str, Any]) -> str:
        """The notes to update; created from the template when missing. A file that lost its
        structure (or is not UTF-8) is kept aside and the notes start again from the template."""
        ensure_private_dir(path.parent)
        try:
            text = path.read_text(encoding="utf-8")
            problem = self.template.missing_from(text)
            if not problem:
                return text
            why = "missing sections: " + ", ".join(problem)
        except FileNotFoundError:
            atomic_write_text(path, self.template.text)
            return self.template.text
        except UnicodeDecodeError as exc:
            why = f"not UTF-8 ({exc.reason})"
        aside = keep_aside(path, why, "session notes")
        atomic_write_text(path, self.template.text)
        kept = f"the old file is kept as {aside}" if aside else "the old file could not be kept"
        record["notes_reset"] = f"{why}; {kept}"
        return self.template.text

    def _request(
        self,
        session: Session,
        snapshot: list[Message],
        path: Path,
        current: str,
        settings: SessionMemorySettings,
    ) -> ModelRequest:
        count = self.frame.count_tokens
        big = oversized_sections(current, count, settings.max_section_tokens)
        oversized = "".join(
            f"- The section {title!r} is about {size} tokens: condense it.\n" for title, size in big
        )
        prompt = self.prompt.render(
            {
                "notes_path": str(path),
                "current_notes": current,
                "section_budget": str(settings.max_section_tokens),
                "total_budget": str(settings.max_total_tokens),
                "oversized": oversized.rstrip("\n"),
            },
        )
        messages = scrub_messages(
            [m.to_wire() for m in snapshot], self.frame.secret_scanner(), self.frame.personal_kinds
        )
        # A tool call the parent has not answered yet must be answered before our instruction.
        pending = snapshot[-1].tool_uses if snapshot and snapshot[-1].role == "assistant" else []
        instruction: list[dict[str, Any]] = [
            {
                "type": "tool_result",
                "tool_use_id": call.id,
                "content": "Not run: the session notes are being updated first.",
            }
            for call in pending
        ]
        instruction.append({"type": "text", "text": prompt})
        return ModelRequest(
            system=session.system_prompt or FALLBACK_SYSTEM,
            messages=[*messages, {"role": "user", "content": instruction}],
            tools=[ToolSpec.from_wire(tool) for tool in session.tools],
            cache_prefix=len(messages),
            purpose="session_memory",
            task={
                "notes_path": str(path),
                "notes": current,
                "template": self.template.text,
                "section_budget": settings.max_section_tokens,
                "conversation_end": len(messages),
                # what each sub-agent did (the readers summarise it onto its call's result)
                "subagents": {
                    call_id: activity
                    for message in snapshot
                    for call_id, activity in message.meta.get("subagents", {}).items()
                },
            },
            max_tokens=8192,
            timeout=settings.max_seconds,
        )

    # -- waiting and the consumers -------------------------------------------------------------

    def wait(self, session: Session, timeout: float | None = None) -> bool:
        """Wait (bounded by ``wait_timeout``) for the session's extraction in flight, if any."""
        limit = self.wait_timeout if timeout is None else timeout
        return self._runners.wait(session, limit, self.stale_after)

    def notes(self, session: Session) -> str | None:
        """The session's notes, ``None`` when there are none yet (or only the empty template)."""
        try:
            text = self.notes_path(session).read_text(encoding="utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        return None if self.template.is_empty(text) else text

    def catch_up(self, session: Session, reason: str) -> None:
        """Bring the notes up to date now when that is cheap: with the ``offline`` backend (a
        few ms, no model) an extraction over the messages since the last one runs and is waited
        for. A model backend keeps its threshold rule (the running update is waited for)."""
        settings = self.settings()
        if not settings.enabled or session.message_count == 0:
            return
        try:
            backend = self.frame.model_backend()
        except ModelError:
            return
        if backend.name != "offline":
            return
        self.wait(session)
        records = self.state(session).get("extractions", [])
        done = [r.get("index", -1) for r in records if r.get("status") in ("updated", "unchanged")]
        last = max(done, default=-1)
        if session.message_count - 1 <= last:
            return
        # the threshold rule's counters are left alone: it fires where it would have
        tokens = session.context_tokens
        state = self.state(session)
        growth = tokens - state.get("tokens_at_last_extraction", 0)
        since = state.get("tool_calls_since", 0)
        trigger = Trigger(session.message_count - 1, None, tokens, growth, since, reason)
        self._schedule(session, trigger)
        self.wait(session)

    @hookimpl
    def on_stop(self, session: Session, message: Message) -> None:
        self.catch_up(session, "stop")

    @hookimpl
    def on_pre_compact(self, session: Session) -> str | None:
        self.catch_up(session, "pre_compact")
        self.wait(session)
        text = self.notes(session)
        if text is None:
            return None
        settings = self.settings()
        return truncate_to_budget(
            text, self.frame.count_tokens, settings.max_section_tokens, settings.max_total_tokens
        )

    @hookimpl
    def on_session_end(self, session: Session) -> None:
        self.catch_up(session, "session_end")
        self.wait(session)
        self._runners.forget(session)
