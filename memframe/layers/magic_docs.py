"""Magic Docs (docs/magic-docs.md): documents the agent keeps current by itself.

A file whose line matches ``# MAGIC DOC: <title>`` (outside code fences) is registered when the
agent reads it. At the end of a turn without tool calls, the docs due for an update are brought
up to date one after the other by a forked agent whose only tool edits that exact file. The
header and the italic instruction line under it are kept verbatim; a doc whose header is gone,
or that was deleted or renamed, is untracked. Without a model that can do it (the offline
default), updates are skipped and the skip is reported once per doc, never faked.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe.agent import ForkedAgent, Permission
from memframe.background.serial import SessionRunners
from memframe.hookspecs import hookimpl
from memframe.layer_settings import at_least, settings_from
from memframe.memdir.guard import scrub_messages
from memframe.messages import Message
from memframe.models.base import ModelError, ModelRequest, ToolSpec, backend_supports
from memframe.prompts import PromptSpec, load_prompt

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.session import Session

log = logging.getLogger("memframe")
HEADER = re.compile(r"^#\s*MAGIC\s+DOC:\s*(.+)$", re.IGNORECASE)
INSTRUCTIONS = re.compile(r"^[_*](.+?)[_*]\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
DETECT_BYTES = 65_536  # the header is looked for in the first 64 KiB
FALLBACK_SYSTEM = "You keep a project's documentation current."
PROMPT = PromptSpec(
    layer="magic_docs",
    bundled="data:magic_docs/prompt.md",
    placeholders=("doc_contents", "doc_path", "doc_title", "doc_instructions", "new_messages"),
    required=("doc_path",),
)


@dataclass(frozen=True)
class MagicHeader:
    title: str
    header_line: str  # verbatim, without its line ending
    instructions: str | None
    instruction_line: str | None


def _permission_bits(path: Path) -> int | None:
    """The permission bits of the regular file ``path`` (``None``: not one)."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) & 0o777 if stat.S_ISREG(st.st_mode) else None


def _restore_mode(path: Path, mode: int) -> None:
    """A doc is the user's file: the update (an atomic rewrite, a new ``0600`` file) gives it
    back the permission bits it had (see the rule in :mod:`memframe._fs`)."""
    try:
        if _permission_bits(path) not in (None, mode):
            os.chmod(path, mode)
    except OSError as exc:
        log.warning("magic doc %s: could not restore its mode %o: %s", path, mode, exc)


def detect(text: str) -> MagicHeader | None:
    """The Magic Doc header of ``text`` (outside fenced code blocks), with the italic instruction
    line right after it (one blank line allowed between)."""
    lines = text.split("\n")
    fenced = False
    for n, raw in enumerate(lines):
        line = raw.rstrip("\r")
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        match = HEADER.match(line)
        if match is None:
            continue
        instructions = None
        instruction_line = None
        for offset in (1, 2):
            if n + offset >= len(lines):
                break
            candidate = lines[n + offset].rstrip("\r")
            if offset == 2 and lines[n + 1].strip():
                break  # only one blank line may separate them
            found = INSTRUCTIONS.match(candidate.strip())
            if found:
                instructions, instruction_line = found.group(1).strip(), candidate
                break
            if candidate.strip():
                break
        return MagicHeader(match.group(1).strip(), line, instructions, instruction_line)
    return None


@dataclass(frozen=True)
class MagicDocsSettings:
    """``magic_docs`` in settings.json."""

    enabled: bool = True
    min_interval_seconds: float = 300.0
    max_doc_bytes: int = 512_000
    max_turns: int = field(default=5, metadata=at_least(1))
    max_seconds: float = field(default=180.0, metadata=at_least(1))
    prompt: str | None = None  # a prompt file (memframe.prompts), read when the frame opens


def read_doc(path: Path, limit: int | None = None) -> str:
    with open(path, encoding="utf-8", errors="replace", newline="") as file:
        return file.read() if limit is None else file.read(limit)


Job = tuple[dict[str, Any], list[Message]]  # (the idle turn's record, the conversation)


class MagicDocsLayer:
    name = "magic_docs"

    def __init__(self, frame: MemoryFrame) -> None:
        self.frame = frame
        self.settings = settings_from(
            MagicDocsSettings, frame.config.settings.get(self.name), self.name
        )
        self.prompt = load_prompt(PROMPT, frame.config.config_dir, self.settings.prompt)
        self._runners: SessionRunners[Job] = SessionRunners(
            lambda session, job: self._update_due(session, *job),
            on_replaced=lambda job: job[0].update(status="coalesced"),
        )

    def docs(self, session: Session) -> dict[str, dict[str, Any]]:
        """The session's tracked docs: absolute path → what is known about it (persisted)."""
        docs: dict[str, dict[str, Any]] = session.state.section(self.name).setdefault("docs", {})
        return docs

    # -- registration --------------------------------------------------------------------------

    def _absolute(self, path: str) -> Path:
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = self.frame.project_dir / candidate
        return Path(os.path.normpath(candidate))

    @hookimpl
    def on_file_read(self, session: Session, path: str, content: str | None) -> None:
        if not self.settings.enabled:
            return
        doc = self._absolute(path)
        text = content
        if text is None:
            try:
                text = read_doc(doc, DETECT_BYTES)
            except (OSError, ValueError):
                return
        header = detect(text[:DETECT_BYTES])
        if header is None and content is not None:
            # the host may report part of a file (an offset read): look at the file itself
            try:
                header = detect(read_doc(doc, DETECT_BYTES))
            except (OSError, ValueError):
                header = None
        docs = self.docs(session)
        key = str(doc)
        if header is None:
            if key in docs:
                self._untrack(session, key, "its header is gone")
            return
        entry = docs.setdefault(key, {"registered_at": time.time(), "updates": 0})
        entry.update(title=header.title, instructions=header.instructions)
        entry.setdefault("from_message", session.message_count)

    def _untrack(self, session: Session, key: str, why: str) -> None:
        self.docs(session).pop(key, None)
        untracked = session.state.section(self.name).setdefault("untracked", [])
        untracked.append({"path": key, "why": why, "at": time.time()})
        del untracked[:-50]

    # -- idle points ---------------------------------------------------------------------------

    @hookimpl
    def on_stop(self, session: Session, message: Message) -> None:
        if message.has_tool_calls or not self.settings.enabled or not self.docs(session):
            return
        record: dict[str, Any] = {"index": session.message_count - 1, "status": "pending"}
        runs = session.state.section(self.name).setdefault("runs", [])
        runs.append(record)
        del runs[:-100]
        self._runners.submit(
            session, (record, list(session.history)), name="update", layer=self.name
        )

    def _update_due(self, session: Session, record: dict[str, Any], history: list[Message]) -> None:
        """Every tracked doc that is due, one after the other (never two at once)."""
        record["started_at"] = time.time()
        outcomes: dict[str, str] = {}
        failures: list[Exception] = []
        for key in sorted(self.docs(session)):
            try:
                outcomes[key] = self.update(session, Path(key), history)
            except Exception as exc:  # the next doc still gets its turn
                outcomes[key] = f"failed: {type(exc).__name__}: {exc}"
                failures.append(exc)
        record.update(status="done", docs=outcomes, finished_at=time.time())
        if failures:
            raise failures[0]

    def update(
        self, session: Session | None, path: Path, history: list[Message], *, force: bool = False
    ) -> str:
        """Bring one doc up to date; returns what happened (``updated``, ``unchanged``,
        ``untracked: …``, ``skipped: …``, ``not due``)."""
        key = str(path)
        entry = self.docs(session).get(key, {}) if session is not None else {}
        now = time.time()
        if not force and now - entry.get("last_update", 0.0) < self.settings.min_interval_seconds:
            return "not due"
        try:
            text = read_doc(path)
        except FileNotFoundError:
            if session is not None:
                self._untrack(session, key, "the file was deleted or renamed")
            return "untracked: the file is gone"
        header = detect(text[:DETECT_BYTES])
        if header is None:
            if session is not None:
                self._untrack(session, key, "its header is gone")
            return "untracked: no header"
        size = len(text.encode("utf-8"))
        limit = self.settings.max_doc_bytes
        if size > limit:
            return self._skip(entry, f"the doc is {size:,} bytes (limit {limit:,})")
        backend = self.frame.model_backend()
        if not backend_supports(backend, "magic_docs"):
            return self._skip(entry, f"the {backend.name!r} model backend cannot update docs")
        start = min(int(entry.get("from_message", 0)), len(history))
        request = self._request(session, path, text, header, history, start)

        def keep_header(_path: Path, new: str) -> None:
            lines = {line.rstrip("\r") for line in new.split("\n")}
            if header.header_line not in lines:
                raise ModelError("the update changed or removed the MAGIC DOC header line")
            if header.instruction_line is not None and header.instruction_line not in lines:
                raise ModelError("the update changed or removed the instruction line")

        agent = ForkedAgent(
            backend,
            Permission.edit_one_file(path),
            max_turns=int(self.settings.max_turns),
            max_seconds=float(self.settings.max_seconds),
            validate=keep_header,
        )
        kept_mode = _permission_bits(path)
        result = agent.run(request)
        if result.changed and kept_mode is not None:
            _restore_mode(path, kept_mode)
        entry.update(
            last_update=now,
            from_message=len(history),
            updates=entry.get("updates", 0) + (1 if result.changed else 0),
            refused=[f"{r.tool}: {r.reason}" for r in result.refused],
        )
        if result.refused:
            log.warning("magic doc %s: refused %s", path, "; ".join(entry["refused"]))
        return "updated" if result.changed else "unchanged"

    def _skip(self, entry: dict[str, Any], why: str) -> str:
        if entry.get("skip_reported") != why:
            entry["skip_reported"] = why
            log.warning("magic doc update skipped: %s", why)
        return f"skipped: {why}"

    def _request(
        self,
        session: Session | None,
        path: Path,
        text: str,
        header: MagicHeader,
        history: list[Message],
        start: int,
    ) -> ModelRequest:
        values = {
            "doc_contents": text,
            "doc_path": str(path),
            "doc_title": header.title,
            "doc_instructions": header.instructions or "(none)",
            "new_messages": str(len(history) - start),
        }
        prompt = self.prompt.render(values)
        messages = scrub_messages(
            [m.to_wire() for m in history], self.frame.secret_scanner(), self.frame.personal_kinds
        )
        pending = history[-1].tool_uses if history and history[-1].role == "assistant" else []
        content: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": c.id, "content": "Not run."} for c in pending
        ]
        content.append({"type": "text", "text": prompt})
        return ModelRequest(
            system=(session.system_prompt if session is not None else "") or FALLBACK_SYSTEM,
            messages=[*messages, {"role": "user", "content": content}],
            tools=[ToolSpec.from_wire(t) for t in session.tools] if session is not None else [],
            cache_prefix=len(messages),
            purpose="magic_docs",
            task={"doc_path": str(path)},
            timeout=float(self.settings.max_seconds),
        )

    @hookimpl
    def on_session_end(self, session: Session) -> None:
        self._runners.wait(session, 15.0, 60.0)
        self._runners.forget(session)
