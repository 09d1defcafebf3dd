"""Team sync as a layer (docs/team-sync.md): pull when a session starts, push (debounced) when
team files
change during it, and a final push when it ends.

Changes are noticed cheaply: a ``Write``/``Edit`` tool call whose path is inside
``<memory dir>/team/``, and at each ``on_stop`` a stat of the team files (sizes and mtimes)
against the last look, which also catches writes by other layers or the shell. Network work runs
on the frame's background executor, one operation at a time with at most one trailing (see
:mod:`memframe.background.serial`). Without a configured server the layer does nothing.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe._fs import is_inside
from memframe.background.serial import SerialRunner
from memframe.hookspecs import hookimpl
from memframe.memdir import locate
from memframe.team_keys import local_keys
from memframe.team_sync.settings import SyncConfigError, SyncError, TeamSyncSettings
from memframe.team_sync.sync_state import TEAM_DIR
from memframe.tools import written_paths

if TYPE_CHECKING:
    from collections.abc import Callable

    from memframe.frame import MemoryFrame
    from memframe.messages import Message, ToolResultBlock, ToolUseBlock
    from memframe.session import Session
    from memframe.team_sync.client import PullResult, PushResult, TeamSyncClient

FINAL_WAIT = 15.0  # seconds a session end waits for a sync in flight
FINAL_BUDGET = 15.0  # seconds the final push may take, retries included
log = logging.getLogger("memframe.team_sync")


class _Debouncer:
    """Calls ``fire(session)`` once, ``delay`` seconds after the last ``trigger``."""

    def __init__(self, delay: float, fire: Callable[[Session], None]) -> None:
        self.delay = delay
        self._fire = fire
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False

    def trigger(self, session: Session) -> None:
        with self._lock:
            if self._closed:
                return
            if self._timer is not None:
                self._timer.cancel()
            timer = threading.Timer(self.delay, self._run, args=(session,))
            timer.daemon = True
            timer.name = "memframe-team-sync-debounce"
            self._timer = timer
            timer.start()

    def _run(self, session: Session) -> None:
        with self._lock:
            if self._closed or self._timer is None:
                return
            self._timer = None
        self._fire(session)

    def cancel(self) -> bool:
        """Drop a waiting trigger; ``True`` if there was one."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is None:
            return False
        timer.cancel()
        return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.cancel()


class TeamSyncLayer:
    name = "team_sync"

    def __init__(self, frame: MemoryFrame) -> None:
        self.frame = frame
        self.settings = TeamSyncSettings.from_settings(frame.config.settings.get(self.name))
        self.client: TeamSyncClient | None = None
        self.team_dir: Path | None = None
        self._problem_reported = False
        self._want_pull = False
        self._want_push = False
        self._flags = threading.Lock()
        self._seen: tuple[tuple[str, int, int], ...] | None = None
        self._runner: SerialRunner[Session] = SerialRunner(self._work)
        self._debouncer = _Debouncer(self.settings.debounce_seconds, self._schedule_push)
        self._closed = False

    # -- setup ---------------------------------------------------------------------------------

    def _client(self) -> TeamSyncClient | None:
        """The client, built on first use; ``None`` when team sync is off or incomplete."""
        if self.client is not None:
            return self.client
        if not self.settings.enabled or not self.settings.configured or self._problem_reported:
            return None
        try:
            config = self.settings.resolve(self.frame.project_dir)
        except SyncConfigError as exc:
            self._problem_reported = True
            log.warning("team sync is off: %s", exc)
            return None
        from memframe.team_sync.client import TeamSyncClient  # httpx only when configured

        memory_dir = locate(self.frame).path.resolve()
        self.client = TeamSyncClient(config, memory_dir, self.frame.secret_scanner())
        self.team_dir = memory_dir / TEAM_DIR
        return self.client

    # -- hooks ---------------------------------------------------------------------------------

    @hookimpl
    def on_session_start(self, session: Session) -> None:
        if self._client() is None:
            return
        self._seen = self._look()
        self._submit(session, pull=True)

    @hookimpl
    def on_tool_use(
        self, session: Session, tool_use: ToolUseBlock, result: ToolResultBlock | None
    ) -> None:
        targets = written_paths(tool_use.name, tool_use.input)
        if not targets or self._client() is None:
            return
        if any(self._inside_team_dir(target) for target in targets):
            self._debouncer.trigger(session)

    @hookimpl
    def on_stop(self, session: Session, message: Message) -> None:
        if self._client() is None:
            return
        seen = self._look()
        if seen != self._seen:
            self._seen = seen
            self._debouncer.trigger(session)

    @hookimpl
    def on_session_end(self, session: Session, reason: str) -> None:
        client = self._client()
        if client is None:
            return
        self._debouncer.cancel()
        if not self._runner.wait(FINAL_WAIT, stale_after=FINAL_WAIT * 4):
            log.warning("team sync: a sync is still running at session end; pushing anyway")
        with self._flags:
            self._want_push = False
        self._seen = self._look()
        self._record(session, "push", self._run_push(client, budget=FINAL_BUDGET))

    @hookimpl
    def on_frame_close(self, frame: MemoryFrame) -> None:
        """A push still waiting for its debounce runs now (short-lived processes, such as
        ``memframe hook``, close the frame right after the event that changed a file)."""
        self._closed = True
        pending = self._debouncer.cancel()
        self._debouncer.close()
        if pending and self.client is not None:
            self._run_push(self.client, budget=FINAL_BUDGET)

    # -- work ----------------------------------------------------------------------------------

    def _inside_team_dir(self, target: str) -> bool:
        assert self.team_dir is not None
        return is_inside(target, self.team_dir, base=self.frame.project_dir, strict=True)

    def _look(self) -> tuple[tuple[str, int, int], ...]:
        """Sizes and mtimes of the team files: a cheap change detector."""
        if self.team_dir is None:
            return ()
        seen = []
        for key, path in local_keys(self.team_dir).items():
            try:
                stat = path.stat()
            except OSError:
                continue
            seen.append((key, stat.st_size, stat.st_mtime_ns))
        return tuple(seen)

    def _schedule_push(self, session: Session) -> None:
        if self._closed:
            return
        self._submit(session, push=True)

    def _submit(self, session: Session, *, pull: bool = False, push: bool = False) -> None:
        with self._flags:
            self._want_pull |= pull
            self._want_push |= push
        try:
            self._runner.submit(session, session, name="team_sync", layer=self.name)
        except RuntimeError as exc:  # the frame closed meanwhile
            log.debug("team sync: not scheduled (%s)", exc)

    def _work(self, session: Session) -> None:
        """One run: the pull and/or push wanted now (a trailing run picks up what came later)."""
        client = self._client()
        if client is None:
            return
        with self._flags:
            pull, push = self._want_pull, self._want_push
            self._want_pull = self._want_push = False
        if pull:
            self._record(session, "pull", self._run_pull(client))
        if push:
            self._record(session, "push", self._run_push(client))

    def _run_pull(self, client: TeamSyncClient) -> PullResult | str:
        try:
            result = client.pull()
        except SyncError as exc:
            log.warning("team sync: pull failed: %s", exc)
            return str(exc)
        if result.error:
            log.warning("team sync: pull failed: %s", result.error)
        for key, why in result.rejected.items():
            log.warning("team sync: refused the server's entry %r: %s", key, why)
        return result

    def _run_push(self, client: TeamSyncClient, budget: float | None = None) -> PushResult | str:
        try:
            result = client.push(budget=budget)
        except SyncError as exc:
            log.warning("team sync: push failed: %s", exc)
            return str(exc)
        if result.error and not result.skipped_network:
            log.warning("team sync: push failed: %s", result.error)
        for blocked in result.blocked:
            log.warning(
                "team sync: team/%s not pushed: it contains a secret (%s)",
                blocked.key,
                blocked.describe(),
            )
        for key, why in result.conflicts.items():
            log.warning("team sync: team/%s not pushed: %s", key, why)
        return result

    def _record(self, session: Session, action: str, result: PullResult | PushResult | str) -> None:
        """A summary of the last pull/push in the session's state (``team_sync`` section)."""
        from memframe.team_sync.client import PullResult

        if isinstance(result, str):
            summary: dict[str, Any] = {"ok": False, "error": result}
        elif isinstance(result, PullResult):
            summary = {
                "ok": result.ok,
                "status": result.status,
                "written": result.written,
                "rejected": sorted(result.rejected),
                "error": result.error,
            }
        else:
            summary = {
                "ok": result.ok,
                "pushed": result.pushed,
                "blocked": {b.key: b.rules for b in result.blocked},
                "error": result.error,
            }
        state = session.state.section(self.name)
        state[f"last_{action}"] = summary
        counts = state.setdefault("counts", {})
        counts[action] = counts.get(action, 0) + 1
        try:
            session.state.save()
        except OSError as exc:
            log.warning("team sync: cannot save the session state: %s", exc)
