"""Replay a transcript through a session: every event reaches every registered layer."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memframe.frame import MemoryFrame
from memframe.hookspecs import hookimpl
from memframe.session import validate_session_id
from memframe.transcripts import Problem, open_transcript
from memframe.transcripts import events as ev


@dataclass
class ReplayStep:
    """One event as the session saw it, with the context size after it."""

    index: int
    kind: str  # message, tool_use, file_read, stop, compact
    detail: str
    context_tokens: int
    message_id: str | None = None


@dataclass
class ReplayReport:
    path: Path
    format: str
    session_id: str
    messages: int = 0
    user_messages: int = 0
    assistant_messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    tool_errors: int = 0
    file_reads: int = 0
    stops: int = 0
    compactions: int = 0
    context_tokens: int = 0
    peak_context_tokens: int = 0
    skipped_sidechain: int = 0
    skipped_records: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    layer_errors: list[str] = field(default_factory=list)
    hook_calls: dict[str, dict[str, int]] = field(default_factory=dict)
    steps: list[ReplayStep] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    session_dir: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "format": self.format,
            "session_id": self.session_id,
            "messages": self.messages,
            "user_messages": self.user_messages,
            "assistant_messages": self.assistant_messages,
            "tool_calls": self.tool_calls,
            "tool_results": self.tool_results,
            "tool_errors": self.tool_errors,
            "file_reads": self.file_reads,
            "stops": self.stops,
            "compactions": self.compactions,
            "context_tokens": self.context_tokens,
            "peak_context_tokens": self.peak_context_tokens,
            "skipped_sidechain": self.skipped_sidechain,
            "skipped_records": self.skipped_records,
            "problems": [{"line": p.line, "reason": p.reason} for p in self.problems],
            "layer_errors": self.layer_errors,
            "hook_calls": self.hook_calls,
            "steps": [vars(step) for step in self.steps],
            "state": self.state,
            "session_dir": str(self.session_dir) if self.session_dir else None,
        }


class _ErrorWatcher:
    """Collects layer failures during a replay so the report can show them."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    @hookimpl
    def on_layer_error(self, layer: str, hook: str, error: Exception) -> None:
        self.errors.append(f"{layer}.{hook}: {type(error).__name__}: {error}")


def _describe(event: ev.Event) -> tuple[str, str]:
    if isinstance(event, ev.MessageEvent):
        message = event.message
        tools = ", ".join(b.name for b in message.tool_uses)
        text = " ".join(message.text.split())[:60]
        detail = (
            f"{message.role}" + (f" → {tools}" if tools else "") + (f": {text}" if text else "")
        )
        return "message", detail
    if isinstance(event, ev.ToolUseEvent):
        status = (
            "no result" if event.result is None else ("error" if event.result.is_error else "ok")
        )
        return "tool_use", f"{event.tool_use.name} ({status})"
    if isinstance(event, ev.FileReadEvent):
        return "file_read", event.path
    if isinstance(event, ev.StopEvent):
        return "stop", "end of turn"
    return "compact", "compaction boundary"


def _session_id_for(path: Path) -> str | None:
    try:
        return validate_session_id(path.stem)
    except ValueError:
        return None


def replay(
    path: str | Path,
    frame: MemoryFrame,
    *,
    session_id: str | None = None,
    transcript_format: str | None = None,
    include_sidechains: bool = False,
    on_step: Callable[[ReplayStep], None] | None = None,
) -> ReplayReport:
    """Drive a session of ``frame`` through the transcript at ``path`` and report what happened.

    The session is closed (reason ``"replay-complete"``) after the last event so every layer
    finishes its background work before the report is returned.
    """
    transcript = open_transcript(
        Path(path), format=transcript_format, include_sidechains=include_sidechains
    )
    watcher = _ErrorWatcher()
    watcher_name = f"replay-watcher-{id(watcher)}"
    frame.register_layer(watcher_name, watcher)
    hook_calls: defaultdict[str, Counter[str]] = defaultdict(Counter)

    def before(hook_name: str, hook_impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        for impl in hook_impls:
            if impl.plugin_name != watcher_name:
                hook_calls[impl.plugin_name][hook_name] += 1

    def after(*_: Any) -> None:
        pass

    undo = frame.manager.add_hookcall_monitoring(before, after)
    session = frame.session(session_id or _session_id_for(transcript.path))
    report = ReplayReport(transcript.path, transcript.format, session.id)
    try:
        for index, event in enumerate(ev.derive_events(transcript)):
            session.dispatch(event)
            _count(report, event)
            report.context_tokens = session.context_tokens
            report.peak_context_tokens = max(report.peak_context_tokens, session.context_tokens)
            kind, detail = _describe(event)
            message_id = event.message.id if isinstance(event, ev.MessageEvent) else None
            step = ReplayStep(index, kind, detail, session.context_tokens, message_id)
            report.steps.append(step)
            if on_step is not None:
                on_step(step)
        session.close("replay-complete")
    finally:
        undo()
        frame.manager.unregister(watcher)
    report.problems = list(transcript.problems)
    report.skipped_sidechain = transcript.skipped_sidechain
    report.skipped_records = dict(transcript.skipped_records)
    report.layer_errors = watcher.errors
    report.state = session.state.snapshot()
    report.session_dir = session.dir
    report.hook_calls = {layer: dict(counts) for layer, counts in sorted(hook_calls.items())}
    return report


def _count(report: ReplayReport, event: ev.Event) -> None:
    if isinstance(event, ev.MessageEvent):
        message = event.message
        report.messages += 1
        if message.role == "user":
            report.user_messages += 1
        elif message.role == "assistant":
            report.assistant_messages += 1
        report.tool_calls += len(message.tool_uses)
        report.tool_results += len(message.tool_results)
        report.tool_errors += sum(1 for r in message.tool_results if r.is_error)
    elif isinstance(event, ev.FileReadEvent):
        report.file_reads += 1
    elif isinstance(event, ev.StopEvent):
        report.stops += 1
    elif isinstance(event, ev.CompactEvent):
        report.compactions += 1
