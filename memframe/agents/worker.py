"""The hook's background worker: ``memframe hook-worker --session ID --cwd DIR [--transcript P]``.

A hook process flags work in the session's ``hook.json`` and starts this worker when none runs.
The worker holds the session's worker lock for its whole life, then loops:

1. take the pending events from ``hook.json`` (under its lock);
2. read the transcript from the saved cursor and dispatch the new events to the session of a
   frame opened with the normal configuration and every layer (the session is resumed, with its
   counters, context meter and history restored: see :mod:`memframe.agents.runtime`);
3. at ``SessionEnd`` end the session (the layers' final work: waiting for session notes, the
   dream gate, a last team push);
4. wait for the layers' background work, save the session state, the runtime and the cursor.

It lingers a few seconds (``hook.worker_linger_seconds``) for more work, so a burst of tool
calls is handled by one process, then exits. It never raises: problems go to
``<memory base>/logs/hook.log``. A run that fails is logged and its events are queued again
(at most ``MAX_ATTEMPTS`` times); the worker then exits so the next one starts from the saved
state.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe.agents.logfile import write_log
from memframe.agents.session_files import (
    HookPaths,
    add_pending,
    load_json,
    locked_state,
    save_json,
    take_pending,
    worker_lock,
)

if TYPE_CHECKING:
    from memframe.agents.rereader import WholeFileReader
    from memframe.agents.transcript import Increment, IncrementalReader
    from memframe.config import Config, RefusedVariable
    from memframe.frame import MemoryFrame

    Reader = IncrementalReader | WholeFileReader
    from memframe.messages import Message
    from memframe.session import Session

DEFAULT_LINGER = 10.0  # seconds an idle worker waits for more work before exiting
LOCK_WAIT = 15.0  # a new worker waits this long for an exiting one to let go of the lock
POLL_INTERVAL = 0.1
STOP_SETTLE = 1.0  # at Stop, wait this long for the final response to reach the transcript
FLUSH_TIMEOUT = 300.0
MAX_ATTEMPTS = 3
FINAL_EVENTS = frozenset({"Stop", "PreCompact", "SessionEnd"})


class HookLogHandler(logging.Handler):
    """The ``memframe`` logger (layer failures, warnings) of the worker, into the hook log."""

    def __init__(self, home: Path) -> None:
        super().__init__(logging.WARNING)
        self.home = home

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
        except Exception:
            message = str(record.msg)
        write_log(self.home, record.levelname, f"[{record.name}] {message}")


def _number(settings: Mapping[str, Any], key: str, default: float) -> float:
    section = settings.get("hook")
    value = section.get(key, default) if isinstance(section, Mapping) else default
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return default
    return float(value)


def run_worker(
    session_id: str, cwd: str, transcript: str | None = None, *, linger: float | None = None
) -> int:
    """The worker's whole life; always returns 0."""
    from memframe.config import load_config, refuse_project_env

    refused: list[RefusedVariable] = []
    try:
        # as the hook does: a project's agent settings may not set memframe's variables (the
        # hook that started this worker already dropped them; this one may run without it)
        starts = [Path(cwd)]
        with contextlib.suppress(OSError):
            starts.append(Path.cwd())
        pinned = os.environ.get("CLAUDE_PROJECT_DIR", "").strip()
        if pinned and os.path.isabs(pinned):
            starts.append(Path(pinned))
        refused = refuse_project_env(starts)
        config = load_config()
    except Exception as exc:
        from memframe.agents.adapter import fallback_home

        write_log(fallback_home(), "ERROR", f"hook worker: bad configuration: {exc}")
        return 0
    if refused:
        from memframe.agents.adapter import refusal_message

        write_log(config.home, "WARNING", f"hook worker: {refusal_message(refused)}")
    handler = HookLogHandler(config.home)
    logger = logging.getLogger("memframe")
    logger.addHandler(handler)
    try:
        paths = HookPaths.for_session(config.home, Path(cwd), session_id)
        with worker_lock(paths, LOCK_WAIT) as held:
            if not held:
                write_log(config.home, "WARNING", f"hook worker {session_id}: lock busy; exiting")
                return 0
            if linger is None:
                linger = _number(config.settings, "worker_linger_seconds", DEFAULT_LINGER)
            Worker(config, paths, Path(cwd), transcript, linger).run()
    except Exception:
        write_log(config.home, "ERROR", f"hook worker {session_id}: {traceback.format_exc()}")
    finally:
        logger.removeHandler(handler)
    return 0


class Worker:
    def __init__(
        self, config: Config, paths: HookPaths, cwd: Path, transcript: str | None, linger: float
    ) -> None:
        self.config = config
        self.paths = paths
        self.cwd = cwd
        self.transcript = transcript
        self.linger = linger
        self.settle = _number(config.settings, "stop_settle_seconds", STOP_SETTLE)
        self.pid = os.getpid()
        self.frame: MemoryFrame | None = None
        self.session: Session | None = None
        self.runtime: dict[str, Any] = {}
        self.loaded: list[Message] = []
        self.history_bytes = 0
        self.format: str | None = None  # the transcript's format, once known

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            idle_since = time.monotonic()
            while True:
                batch = self._take(expired=time.monotonic() - idle_since >= self.linger)
                if batch is None:
                    return
                if not batch:
                    self._wait_for_change(idle_since + self.linger)
                    continue
                try:
                    self._process(batch)
                except Exception:
                    self._failed(batch, traceback.format_exc())
                    return
                idle_since = time.monotonic()
        finally:
            self._shutdown()

    def _take(self, *, expired: bool) -> list[dict[str, Any]] | None:
        """The pending events (``[]``: none yet); ``None`` when it is time to exit (the worker
        is then unregistered under the same lock, so a later event starts a new one)."""
        with locked_state(self.paths) as state:
            batch = take_pending(state)
            worker = state.get("worker")
            mine = isinstance(worker, dict) and worker.get("pid") == self.pid
            if batch or not expired:
                if not mine:
                    state["worker"] = {"pid": self.pid, "started_at": time.time()}
                return batch
            if mine:
                state["worker"] = None
            return None

    def _wait_for_change(self, deadline: float) -> None:
        def identity() -> tuple[int, int, int] | None:
            try:
                stat = self.paths.state.stat()
            except OSError:
                return None
            return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

        before = identity()
        while time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL)
            if identity() != before:
                return

    def _failed(self, batch: list[dict[str, Any]], error: str) -> None:
        """Log the failure and queue the batch again for a fresh worker (this one exits: its
        session in memory may be half-updated); after ``MAX_ATTEMPTS`` the events are dropped."""
        from memframe.agents.adapter import spawn_worker

        write_log(self.config.home, "ERROR", f"hook worker {self.paths.session_id}: {error}")
        with locked_state(self.paths) as state:
            retry = False
            for entry in batch:
                attempts = entry.get("attempts", 0)
                attempts = attempts + 1 if isinstance(attempts, int) else MAX_ATTEMPTS
                if attempts < MAX_ATTEMPTS:
                    add_pending(state, {**entry, "attempts": attempts})
                    retry = True
            state["last_error"] = {"at": time.time(), "error": error.strip().splitlines()[-1]}
            worker = state.get("worker")
            if isinstance(worker, dict) and worker.get("pid") == self.pid:
                state["worker"] = None
                if retry:  # it waits for this worker's lock, released when this one exits
                    pid = spawn_worker(self.paths.session_id, self.cwd, self.transcript)
                    state["worker"] = {"pid": pid, "started_at": time.time(), "by": "retry"}

    def _shutdown(self) -> None:
        if self.frame is not None:
            try:
                self.frame.flush(FLUSH_TIMEOUT)
            except Exception:
                write_log(self.config.home, "ERROR", f"hook worker: {traceback.format_exc()}")

    # -- one batch -----------------------------------------------------------------------------

    def _open_session(self) -> Session:
        if self.session is not None and not self.session.closed:
            return self.session
        from memframe.agents.runtime import load_history, restore
        from memframe.frame import open_frame

        if self.frame is None:
            # never strict: a failing layer is logged, the host is never failed
            self.frame = open_frame(self.cwd, strict=False)
        session = self.frame.session(self.paths.session_id)
        self.runtime = load_json(self.paths.runtime)
        size = self.runtime.get("history_bytes", 0)
        size = size if isinstance(size, int) and size >= 0 else 0
        self.loaded, self.history_bytes = load_history(self.paths.history, size)
        session_runtime = self.runtime.get("session")
        restore(session, session_runtime if isinstance(session_runtime, dict) else {}, self.loaded)
        self.session = session
        return session

    def _process(self, batch: list[dict[str, Any]]) -> None:
        from memframe.agents.transcript import Increment

        started = time.monotonic()
        kinds = [str(entry.get("event")) for entry in batch]
        for entry in batch:
            path = entry.get("transcript_path")
            if isinstance(path, str) and path:
                self.transcript = path
        session = self._open_session()
        reader_state = self.runtime.get("reader")
        reader, unreadable = self._reader(reader_state if isinstance(reader_state, dict) else {})
        final = any(kind in FINAL_EVENTS for kind in kinds)
        if unreadable is not None:
            # reported, never read as 0 events in silence: the hook log and hook.json say so
            write_log(
                self.config.home, "WARNING", f"hook worker {self.paths.session_id}: {unreadable}"
            )
            increment = Increment(problems=[unreadable])
        else:
            increment = self._read(reader, final=final, stop="Stop" in kinds)
        self._dispatch(session, increment)
        ended = "SessionEnd" in kinds
        if ended:
            self._dispatch(session, Increment(events=reader.finish()))
            reasons = [e.get("reason") for e in batch if e.get("event") == "SessionEnd"]
            reason = next((r for r in reversed(reasons) if isinstance(r, str) and r), "other")
            session.close(f"session-end:{reason}")
        assert self.frame is not None
        self.frame.flush(FLUSH_TIMEOUT)
        if not session.closed:
            session.state.save()
        self._save(session, reader)
        self._report(session, kinds, increment, reader, ended, time.monotonic() - started)
        if ended:
            self.session = None

    def _reader(self, state: dict[str, Any]) -> tuple[Reader, str | None]:
        """The reader for the transcript's format (the one saved, else detected from the
        file's first records), and a problem when memframe cannot read that file."""
        from memframe.agents.transcript import IncrementalReader

        known = state.get("format")
        if not isinstance(known, str):
            # a state saved before formats were recorded is a Claude Code reader's
            known = "claude-code" if state.get("cursor") else self._detect()
        if known is None or known == "claude-code":
            self.format = known
            return IncrementalReader(state), None
        if known.startswith("!"):
            self.format = None
            return IncrementalReader(state), known[1:]
        from memframe.agents.rereader import WholeFileReader

        self.format = known
        return WholeFileReader(known, state), None

    def _detect(self) -> str | None:
        """The transcript's format; ``None`` while it cannot be told yet (no path, no file, no
        record); ``"!<problem>"`` for a file in no format memframe reads."""
        from memframe.transcripts import TranscriptError, detect_format

        path = self.transcript
        if not path:
            return None
        try:
            if os.path.getsize(path) == 0:
                return None
            return detect_format(path)
        except FileNotFoundError:
            return None
        except (TranscriptError, OSError) as exc:
            return (
                f"!the transcript {path} cannot be read: {exc}. Context injection and the "
                "team guard still work; session notes and extraction need a transcript "
                "memframe reads (Claude Code sessions, Codex rollouts)"
            )

    def _read(self, reader: Reader, *, final: bool, stop: bool) -> Increment:
        from memframe.transcripts.events import StopEvent

        transcript = self.transcript
        if not transcript:
            from memframe.agents.transcript import Increment

            return Increment(problems=["no transcript path in the hook input"])
        increment = reader.read(transcript, final=final)
        if not stop or any(isinstance(e, StopEvent) for e in increment.events):
            return increment
        # Claude Code writes the transcript asynchronously: the final response may land just
        # after the Stop hook ran. Wait a moment for it.
        deadline = time.monotonic() + self.settle
        while time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL)
            more = reader.read(transcript, final=True)
            increment.events.extend(more.events)
            increment.lines += more.lines
            increment.bytes += more.bytes
            increment.problems.extend(more.problems)
            if any(isinstance(e, StopEvent) for e in more.events):
                break
        return increment

    def _dispatch(self, session: Session, increment: Increment) -> None:
        from memframe.agents.runtime import rewind
        from memframe.agents.transcript import RewindEvent

        for event in increment.events:
            if isinstance(event, RewindEvent):
                rewind(session, event.keep)
            else:
                session.dispatch(event)

    def _save(self, session: Session, reader: Reader) -> None:
        from memframe.agents.runtime import capture, save_history

        self.history_bytes = save_history(
            self.paths.history, session.history, self.loaded, self.history_bytes
        )
        self.loaded = list(session.history)
        reader_state = reader.to_state()
        if self.format is not None:
            reader_state["format"] = self.format
        self.runtime = {
            "reader": reader_state,
            "session": capture(session),
            "history_bytes": self.history_bytes,
            "history_messages": len(session.history),
        }
        save_json(self.paths.runtime, self.runtime)

    def _report(
        self,
        session: Session,
        kinds: list[str],
        increment: Increment,
        reader: Reader,
        ended: bool,
        seconds: float,
    ) -> None:
        with locked_state(self.paths) as state:
            stats = state.get("stats")
            stats = stats if isinstance(stats, dict) else {}
            stats["runs"] = int(stats.get("runs", 0)) + 1
            stats["events"] = int(stats.get("events", 0)) + len(increment.events)
            state["stats"] = stats
            state["transcript"] = {
                "path": self.transcript,
                "cursor": reader.cursor,
                "lines": reader.line,
            }
            state["last_run"] = {
                "at": time.time(),
                "events": kinds,
                "lines": increment.lines,
                "bytes": increment.bytes,
                "dispatched": len(increment.events),
                "restarted": increment.restarted,
                "problems": increment.problems,
                "seconds": round(seconds, 3),
            }
            state["ended"] = ended or (bool(state.get("ended")) and not increment.events)
            state["messages"] = session.message_count
        detail = f" ({increment.restarted} file: read again from the start)"
        write_log(
            self.config.home,
            "INFO",
            f"hook worker {self.paths.session_id}: {','.join(kinds)}: {increment.lines} "
            f"line(s), {len(increment.events)} event(s), cursor {reader.cursor}"
            + (detail if increment.restarted else "")
            + (f", {len(increment.problems)} problem(s)" if increment.problems else "")
            + f" in {seconds:.2f} s",
        )
