"""What the UI shows, read from the same places the layers keep it: the memory directory and its
index (through :class:`~memframe.memdir.MemoryStore`), the sessions' state files and notes, the
team sync client's status and the consolidation lock. Plain functions returning dataclasses, no
HTTP, so each view is testable on its own; nothing here writes, except :func:`record_dream`.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memframe._fs import atomic_write_bytes
from memframe.memdir.files import MEMORY_TYPES, Memory, freshness_caveat
from memframe.memdir.index import (
    INDEX_FILE,
    MAX_BYTES,
    MAX_LINES,
    indexed_files,
    load_for_prompt,
)
from memframe.memdir.recall import bm25_select
from memframe.session import RESERVED_SESSION_IDS, STATE_FILE, validate_session_id

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.layers.dream import DreamResult
    from memframe.memdir.store import MemoryStore
    from memframe.scanner import SecretScanner
    from memframe.scanning.gate import GateFinding

MAX_NOTES_BYTES = 1_000_000  # larger notes are shown cut
DREAM_HISTORY_FILE = ".dream-history.jsonl"
MAX_DREAM_HISTORY = 100
SCOPES = ("private", "team")


# -- memories ------------------------------------------------------------------------------------


@dataclass
class MemoryRow:
    file: str
    name: str
    type: str
    scope: str
    age_days: int
    caveat: str | None
    description: str
    mtime: float


def memory_row(memory: Memory, root: Path, now: float | None = None) -> MemoryRow:
    return MemoryRow(
        file=memory.relative_to(root),
        name=memory.name,
        type=memory.type,
        scope=memory.scope(root),
        age_days=memory.age_days(now),
        caveat=freshness_caveat(memory, now),
        description=memory.description,
        mtime=memory.mtime,
    )


def list_memories(
    store: MemoryStore, query: str = "", kind: str = "", scope: str = ""
) -> list[MemoryRow]:
    """The memories, filtered by type and scope; with a ``query``, only those the layers' recall
    (BM25 over name, description and body: :func:`~memframe.memdir.recall.bm25_select`) finds,
    best first; otherwise by file."""
    memories = [
        m
        for m in store.memories()
        if (not kind or m.type == kind) and (not scope or m.scope(store.root) == scope)
    ]
    if query.strip():
        memories = bm25_select(query, memories, len(memories))
    now = time.time()
    return [memory_row(m, store.root, now) for m in memories]


def memory_types(store: MemoryStore) -> list[str]:
    """The known types, then any other type a file declares."""
    seen = {m.type for m in store.memories()}
    return [*MEMORY_TYPES, *sorted(seen - set(MEMORY_TYPES))]


def find_memory(store: MemoryStore, relative: str) -> Memory | None:
    """The memory at ``relative`` (``name.md``, ``team/name.md``) exactly, or ``None``."""
    for memory in store.memories():
        if memory.relative_to(store.root) == relative:
            return memory
    return None


@dataclass
class GateVerdict:
    """What the team sync's secret gate says of a memory as a team entry."""

    key: str
    findings: list[GateFinding] = field(default_factory=list)

    @property
    def clear(self) -> bool:
        return not self.findings

    @property
    def rule_ids(self) -> list[str]:
        return [f.rule_id for f in self.findings]


def gate_verdict(memory: Memory, scanner: SecretScanner) -> GateVerdict:
    """The gate's verdict on ``memory`` as the team entry it is (in ``team/``) or would be."""
    from memframe.scanning.gate import gate_findings

    key = memory.path.name
    text = memory.path.read_text(encoding="utf-8")
    return GateVerdict(key, gate_findings(scanner, key, text))


# -- MEMORY.md -----------------------------------------------------------------------------------


@dataclass
class IndexLine:
    number: int
    text: str
    loaded: bool
    file: str | None  # the memory file the line points at


@dataclass
class IndexView:
    path: str
    lines: list[IndexLine]
    total_lines: int
    total_bytes: int
    loaded_lines: int
    loaded_bytes: int
    warnings: list[str]
    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES
    files: set[str] = field(default_factory=set)  # files that exist


def index_view(store: MemoryStore) -> IndexView:
    """``MEMORY.md`` line by line, each marked loaded or not as
    :func:`~memframe.memdir.index.load_for_prompt` cuts it for the agent's prompt."""
    text = store.index_text()
    loaded, warnings = load_for_prompt(text)
    if warnings:
        loaded = loaded[: len(loaded) - len("\n\n" + "\n".join(warnings))]
    kept = len(loaded.split("\n")) if loaded else 0
    total = len(text.encode("utf-8"))
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        pointed = next(iter(indexed_files(line)), None)
        rows.append(IndexLine(number, line, number <= kept, pointed))
    return IndexView(
        path=str(store.index_path),
        lines=rows,
        total_lines=len(rows),
        total_bytes=total,
        loaded_lines=kept,
        loaded_bytes=total if kept == len(rows) else len(loaded.encode("utf-8")) + 1,
        warnings=[w.lstrip("> ").strip() for w in warnings],
        files={m.relative_to(store.root) for m in store.memories()},
    )


# -- sessions ------------------------------------------------------------------------------------


def _read_state(path: Path) -> dict[str, Any]:
    """A session's state file, read only (an unreadable one is shown as empty, never moved)."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _records(state: dict[str, Any], section: str, key: str) -> list[dict[str, Any]]:
    value = state.get(section, {})
    records = value.get(key, []) if isinstance(value, dict) else []
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []


@dataclass
class SessionRow:
    id: str
    updated: float
    has_notes: bool
    note_updates: int
    memory_runs: int
    docs: int


def _session_dirs(project_home: Path) -> list[Path]:
    found = []
    for state in project_home.glob(f"*/{STATE_FILE}"):
        name = state.parent.name
        if name in RESERVED_SESSION_IDS:
            continue
        try:
            validate_session_id(name)
        except ValueError:
            continue
        found.append(state.parent)
    return found


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def list_sessions(project_home: Path) -> list[SessionRow]:
    """The project's sessions, most recently active first."""
    from memframe.layers.session_memory import NOTES_DIR, NOTES_FILE

    rows = []
    for directory in _session_dirs(project_home):
        state = _read_state(directory / STATE_FILE)
        docs = state.get("magic_docs", {})
        tracked = docs.get("docs", {}) if isinstance(docs, dict) else {}
        rows.append(
            SessionRow(
                id=directory.name,
                updated=_mtime(directory / STATE_FILE),
                has_notes=(directory / NOTES_DIR / NOTES_FILE).is_file(),
                note_updates=len(_records(state, "session_memory", "extractions")),
                memory_runs=len(_records(state, "extract_memories", "runs")),
                docs=len(tracked) if isinstance(tracked, dict) else 0,
            )
        )
    rows.sort(key=lambda r: (-r.updated, r.id))
    return rows


@dataclass
class SessionView:
    id: str
    dir: str
    updated: float
    notes_path: str
    notes: str | None
    notes_cut: bool
    extractions: list[dict[str, Any]]  # session notes updates (session_memory)
    memory_runs: list[dict[str, Any]]  # memory extraction (extract_memories)
    docs: dict[str, dict[str, Any]]


def session_view(project_home: Path, session_id: str) -> SessionView | None:
    """One session: its notes and the records of its background work, newest first."""
    from memframe.layers.session_memory import NOTES_DIR, NOTES_FILE

    try:
        validate_session_id(session_id)
    except ValueError:
        return None
    directory = project_home / session_id
    state_file = directory / STATE_FILE
    if not state_file.is_file():
        return None
    state = _read_state(state_file)
    notes_path = directory / NOTES_DIR / NOTES_FILE
    notes: str | None = None
    cut = False
    with contextlib.suppress(OSError):
        with notes_path.open("rb") as handle:
            data = handle.read(MAX_NOTES_BYTES + 1)
        cut = len(data) > MAX_NOTES_BYTES
        notes = data[:MAX_NOTES_BYTES].decode("utf-8", "replace")
    magic = state.get("magic_docs", {})
    docs = magic.get("docs", {}) if isinstance(magic, dict) else {}
    return SessionView(
        id=session_id,
        dir=str(directory),
        updated=_mtime(state_file),
        notes_path=str(notes_path),
        notes=notes,
        notes_cut=cut,
        extractions=list(reversed(_records(state, "session_memory", "extractions"))),
        memory_runs=list(reversed(_records(state, "extract_memories", "runs"))),
        docs={k: v for k, v in docs.items() if isinstance(v, dict)}
        if isinstance(docs, dict)
        else {},
    )


# -- Magic Docs ----------------------------------------------------------------------------------


@dataclass
class DocRow:
    path: str
    title: str | None = None
    sessions: list[str] = field(default_factory=list)
    updates: int = 0
    last_update: float | None = None
    registered_at: float | None = None
    skip_reported: str | None = None
    refused: list[str] = field(default_factory=list)
    exists: bool = False


def tracked_docs(project_home: Path) -> list[DocRow]:
    """Every Magic Doc a session of the project tracks, merged by path: the sessions, the
    updates they made, the last one."""
    merged: dict[str, DocRow] = {}
    for directory in sorted(_session_dirs(project_home)):
        state = _read_state(directory / STATE_FILE)
        magic = state.get("magic_docs", {})
        docs = magic.get("docs", {}) if isinstance(magic, dict) else {}
        if not isinstance(docs, dict):
            continue
        for path, entry in docs.items():
            if not isinstance(entry, dict):
                continue
            row = merged.setdefault(path, DocRow(path))
            row.sessions.append(directory.name)
            row.title = entry.get("title") or row.title
            updates = entry.get("updates", 0)
            row.updates += updates if isinstance(updates, int) else 0
            last = entry.get("last_update")
            if isinstance(last, int | float) and (row.last_update or 0) < last:
                row.last_update = float(last)
                row.refused = [str(r) for r in entry.get("refused", []) or []]
            registered = entry.get("registered_at")
            if isinstance(registered, int | float) and (
                row.registered_at is None or registered < row.registered_at
            ):
                row.registered_at = float(registered)
            row.skip_reported = entry.get("skip_reported") or row.skip_reported
    for row in merged.values():
        row.exists = Path(row.path).is_file()
    return sorted(merged.values(), key=lambda r: (-(r.last_update or 0), r.path))


# -- team sync -----------------------------------------------------------------------------------


@dataclass
class TeamView:
    configured: bool
    problem: str | None = None
    status: dict[str, Any] | None = None
    blocked: list[dict[str, Any]] = field(default_factory=list)


def team_view(frame: MemoryFrame) -> TeamView:
    """The team sync status as ``memframe sync status`` computes it (no network): entries in
    sync, to push, blocked by the gate (and by which rules), unpulled, conflicting."""
    from memframe.team_sync.client import client_for_frame
    from memframe.team_sync.settings import SyncConfigError, TeamSyncSettings

    try:
        settings = TeamSyncSettings.from_settings(frame.config.settings.get("team_sync"))
        if not settings.configured:
            return TeamView(False)
        result = client_for_frame(frame).status()
    except SyncConfigError as exc:
        return TeamView(True, problem=str(exc))
    status = asdict(result)
    blocked = [{"key": b.key, "rules": b.rules, "lines": b.lines} for b in result.blocked]
    return TeamView(True, status=status, blocked=blocked)


# -- dream ---------------------------------------------------------------------------------------


@dataclass
class DreamView:
    memory_dir: str
    last_consolidated: float | None
    holder: int | None
    min_hours: float
    min_sessions: int
    enabled: bool
    sessions_since: int
    history: list[dict[str, Any]]


def dream_history(memory_dir: Path) -> list[dict[str, Any]]:
    """The recorded consolidations, newest first."""
    path = memory_dir / DREAM_HISTORY_FILE
    try:
        raw = path.read_bytes()
    except OSError:
        return []
    out = []
    for line in raw.splitlines():
        with contextlib.suppress(orjson.JSONDecodeError):
            item = orjson.loads(line)
            if isinstance(item, dict):
                out.append(item)
    return list(reversed(out))


def record_dream(
    memory_dir: Path, result: DreamResult, *, source: str, at: float | None = None
) -> None:
    """Append one consolidation's result (what was merged, rewritten or deleted, and the
    report saying why) to the memory directory's dream history, keeping the last
    :data:`MAX_DREAM_HISTORY`."""
    from memframe.memdir.store import MemoryStore

    store = MemoryStore(memory_dir)
    entry = {"at": time.time() if at is None else at, "source": source, **asdict(result)}
    with store.locked():
        path = store.root / DREAM_HISTORY_FILE
        try:
            lines = path.read_bytes().splitlines()
        except FileNotFoundError:
            lines = []
        lines = [*lines, orjson.dumps(entry)][-MAX_DREAM_HISTORY:]
        atomic_write_bytes(path, b"\n".join(lines) + b"\n")


def dream_view(frame: MemoryFrame, store: MemoryStore) -> DreamView:
    """When the directory was last consolidated, whether a consolidation runs now, the gates
    and the history (read only: the gates' own scan marker is not touched)."""
    from memframe.layer_settings import settings_from
    from memframe.layers.dream import DreamSettings
    from memframe.memdir.lock import ConsolidationLock

    settings = settings_from(DreamSettings, frame.config.settings.get("dream"), "dream")
    lock = ConsolidationLock(store.root)
    last = lock.last_consolidated()
    since = [d for d in _session_dirs(frame.project_home) if _mtime(d / STATE_FILE) > last]
    return DreamView(
        memory_dir=str(store.root),
        last_consolidated=last or None,
        holder=lock.holder(),
        min_hours=settings.min_hours,
        min_sessions=settings.min_sessions,
        enabled=settings.enabled,
        sessions_since=len(since),
        history=dream_history(store.root),
    )


__all__ = [
    "DREAM_HISTORY_FILE",
    "INDEX_FILE",
    "SCOPES",
    "DocRow",
    "DreamView",
    "GateVerdict",
    "IndexView",
    "MemoryRow",
    "SessionRow",
    "SessionView",
    "TeamView",
    "dream_history",
    "dream_view",
    "find_memory",
    "gate_verdict",
    "index_view",
    "list_memories",
    "list_sessions",
    "memory_row",
    "memory_types",
    "record_dream",
    "session_view",
    "team_view",
    "tracked_docs",
]
