"""Offline memory quality: notes fact recall, duplicate lines, memory precision, hit@5, merges.

What the offline backend keeps, against labels: notes fact recall on labelled real sessions,
duplicate and noise lines, memory precision/recall, recall hit@5 and the dream's merges.

Everything runs offline and is deterministic, so the figures are compared with the labels, not
timed. Labels and sets live in ``benches/data`` (``memory_*.json``); the figures of the previous
release (git HEAD when the bench was written) are in ``memory_baseline.json`` and shown beside
today's in the ``base_*`` columns.

- **Notes** (``notes: <session>`` rows): each labelled real transcript of ``tests/data/transcripts``
  is replayed (:func:`memframe.replay.replay`, built-in layers, offline backend) into a fresh
  memory base; the final session notes are checked against the session's facts (a fact is found
  when every keyword of one of its alternatives is on one line, in its section if it names one).
  ``dup_lines`` counts list lines that appear twice in a section, ``dup_keys`` list lines whose
  key (the first backticked path or command, else the text before ``→`` or ``—``) an earlier
  line of the section already had, ``noise`` lines that show text that is not the user speaking
  as a request or a title; ``memories`` how many memories the session left (these sessions
  have no durable statement of the user's, so any is a candidate for noise: see the details).
- **Memories** (``memories: …``): a labelled synthetic session (12 durable statements between
  13 traps, ``memory_session.json``) is written as a Claude Code 2.x transcript and replayed;
  recall = durable statements saved, precision = saved memories that are one of them, traps
  saved, private values (a generated GitHub token, a phone number) found in any file the run
  left in its memory base (memory files, ``MEMORY.md``, notes, session state).
- **Recall** (``recall: …``): :func:`memframe.memdir.recall.bm25_select` ranks a labelled memory
  set (24) for each prompt of a labelled prompt set (26); hit@1, hit@5, mean reciprocal rank.
- **Dream** (``dream: …``): 12 paraphrases of 5 facts and 4 near misses are written into a memory
  directory and consolidated by the dream layer (what ``memframe dream --now`` runs); merged =
  paraphrases removed (ideal 7), wrong = near misses removed or groups lost entirely.

Run alone with ``python -m benches --only memory`` or ``python -m benches.memory`` (which also
takes ``--write-baseline`` to record this run's figures as the baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import string
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benches.harness import BenchResult, Metric

NAME = "memory"
# The figures are counts against labels: the same code gives the same numbers on any machine,
# so a broken floor is not measured again (benches/run.py).
DETERMINISTIC = True

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
TRANSCRIPTS = REPO / "tests" / "data" / "transcripts"
LABELS_FILE = DATA / "memory_labels.json"
SESSION_FILE = DATA / "memory_session.json"
RECALL_FILE = DATA / "memory_recall.json"
PARAPHRASE_FILE = DATA / "memory_paraphrases.json"
BASELINE_FILE = DATA / "memory_baseline.json"

ALL_NOTES = "notes: all sessions"
MEM_RECALL = "memories: recall (durable saved)"
MEM_PRECISION = "memories: precision"
MEM_TRAPS = "memories: traps saved"
MEM_PRIVATE = "memories: private values kept"
HIT1 = "recall: hit@1"
HIT5 = "recall: hit@5"
MRR = "recall: MRR"
DREAM_MERGED = "dream: duplicates merged"
DREAM_WRONG = "dream: wrong merges"

# Floors, checked in every run (./dev test runs the quick pass): (row, metric, ">=" | "<=", value).
# Set at what the code achieved when the bench landed; raise them as the memory improves.
FLOORS: tuple[tuple[str, str, str, float], ...] = (
    (ALL_NOTES, "pct", ">=", 95.0),
    (ALL_NOTES, "dup_lines", "<=", 0),
    (ALL_NOTES, "dup_keys", "<=", 0),
    (ALL_NOTES, "noise", "<=", 0),
    (MEM_RECALL, "found", ">=", 12),
    (MEM_PRECISION, "pct", ">=", 100.0),
    (MEM_TRAPS, "found", "<=", 0),
    (MEM_PRIVATE, "found", "<=", 0),
    (HIT5, "pct", ">=", 100.0),
    (DREAM_MERGED, "found", ">=", 6),
    (DREAM_WRONG, "found", "<=", 0),
)

# Environment that would move the memory base or pick another backend: cleared for the run.
_ISOLATE_ENV = (
    "MEMFRAME_HOME",
    "MEMFRAME_CONFIG_DIR",
    "MEMFRAME_MEMORY_DIR",
    "MEMFRAME_MEMORY_MODE",
    "MEMFRAME_MODEL",
    "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
)
_BULLET = re.compile(r"^\s*[-*] ")
_HEADER = re.compile(r"^# (\S.*)$")
_ITALIC = re.compile(r"^_[^_].*_$")
_BACKTICKED = re.compile(r"`([^`]+)`")


# -- labels and matching -------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def alternative_matches(alternatives: Sequence[Sequence[str]], text: str) -> bool:
    """Whether every keyword of one alternative occurs in ``text`` (case-insensitive)."""
    folded = text.casefold()
    return any(all(k.casefold() in folded for k in alt) for alt in alternatives if alt)


@dataclass
class Section:
    title: str
    lines: list[str] = field(default_factory=list)


def sections(notes: str) -> list[Section]:
    """The notes' ``# Title`` sections with their lines (the italic description line dropped);
    lines before the first header form an untitled section."""
    out = [Section("")]
    for line in notes.replace("\r\n", "\n").split("\n"):
        header = _HEADER.match(line)
        if header:
            out.append(Section(header.group(1).strip()))
            continue
        if not line.strip() or (not out[-1].lines and _ITALIC.match(line.strip())):
            continue
        out[-1].lines.append(line.strip())
    return [s for s in out if s.title or s.lines]


def _lines_for(notes: list[Section], section: str | None) -> list[str]:
    if not section:
        return [line for s in notes for line in s.lines]
    wanted = section.casefold()
    return [line for s in notes if wanted in s.title.casefold() for line in s.lines]


def label_found(label: Mapping[str, Any], notes: list[Section]) -> bool:
    """A fact (or noise) label: one alternative entirely on one line of its section."""
    alternatives = label["any"]
    return any(
        alternative_matches(alternatives, line) for line in _lines_for(notes, label.get("section"))
    )


def line_key(line: str) -> str:
    """What a list line is about: its first backticked path or command, else its text before the
    first arrow or dash, whitespace-collapsed and case-folded."""
    text = _BULLET.sub("", line, count=1)
    ticked = _BACKTICKED.search(text)
    key = ticked.group(1) if ticked else re.split(r" → | — | -> ", text, maxsplit=1)[0]
    return " ".join(key.replace("…", "").split()).casefold()


def duplicate_counts(notes: list[Section]) -> tuple[int, int, int]:
    """(list lines, lines seen earlier in their section, lines whose key was seen earlier)."""
    total = dup_lines = dup_keys = 0
    for section in notes:
        seen_lines: set[str] = set()
        seen_keys: set[str] = set()
        for line in section.lines:
            if not _BULLET.match(line):
                continue
            total += 1
            normal = " ".join(line.split()).casefold()
            key = line_key(line)
            dup_lines += normal in seen_lines
            dup_keys += bool(key) and key in seen_keys
            seen_lines.add(normal)
            if key:
                seen_keys.add(key)
    return total, dup_lines, dup_keys


@dataclass
class NotesScore:
    facts: int
    found: int
    missing: list[str]
    list_lines: int
    dup_lines: int
    dup_keys: int
    noise: int
    noise_found: list[str]
    by_kind: dict[str, list[int]]


def score_notes(notes_text: str, labels: Mapping[str, Any]) -> NotesScore:
    """The notes of one session against its labels."""
    parsed = sections(notes_text)
    facts = list(labels.get("facts", []))
    missing = [f["id"] for f in facts if not label_found(f, parsed)]
    by_kind: dict[str, list[int]] = {}
    for fact in facts:
        counts = by_kind.setdefault(str(fact.get("kind", "fact")), [0, 0])
        counts[1] += 1
        counts[0] += fact["id"] not in missing
    noise_found = [n["id"] for n in labels.get("noise", []) if label_found(n, parsed)]
    total, dup_lines, dup_keys = duplicate_counts(parsed)
    return NotesScore(
        facts=len(facts),
        found=len(facts) - len(missing),
        missing=missing,
        list_lines=total,
        dup_lines=dup_lines,
        dup_keys=dup_keys,
        noise=len(noise_found),
        noise_found=noise_found,
        by_kind=by_kind,
    )


def pct(found: int | float, total: int | float) -> float | None:
    return round(100.0 * found / total, 1) if total else None


# -- a frame of its own ---------------------------------------------------------------------------


@contextmanager
def _isolated_env() -> Iterator[None]:
    saved = {name: os.environ.pop(name) for name in _ISOLATE_ENV if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


@contextmanager
def _frame(root: Path) -> Iterator[Any]:
    """A frame with every built-in layer and the offline backend, its memory base in ``root``."""
    from memframe.frame import open_frame

    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    frame = open_frame(
        project,
        home=root / "home",
        config_dir=root / "config",
        autoload_plugins=False,
        model="offline",
    )
    with frame:
        yield frame


def _memory_store(frame: Any) -> Any:
    from memframe.memdir import MemoryStore, locate

    return MemoryStore(locate(frame).path)


def _notes_path(session_dir: Path | None) -> Path | None:
    if session_dir is None:
        return None
    from memframe.layers.session_memory import NOTES_DIR, NOTES_FILE

    return session_dir / NOTES_DIR / NOTES_FILE


@dataclass
class Replayed:
    notes: str
    memories: list[Any]
    files: dict[str, str]  # every text file the run left in the memory base, by relative path
    seconds: float
    layer_errors: list[str]


def replay_session(path: Path, root: Path, session_id: str | None = None) -> Replayed:
    """Replay ``path`` into a fresh memory base under ``root`` and collect what it left."""
    from memframe.replay import replay

    started = time.perf_counter()
    with _frame(root) as frame:
        report = replay(path, frame, session_id=session_id)
        notes_path = _notes_path(report.session_dir)
        notes = ""
        if notes_path is not None and notes_path.is_file():
            notes = notes_path.read_text(encoding="utf-8", errors="replace")
        memories = _memory_store(frame).memories()
    seconds = time.perf_counter() - started
    files = {}
    for file in sorted(root.rglob("*")):
        if file.is_file() and not file.is_symlink():
            try:
                files[file.relative_to(root).as_posix()] = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
    return Replayed(notes, memories, files, seconds, list(report.layer_errors))


# -- notes on the labelled real sessions ----------------------------------------------------------


def _short(name: str) -> str:
    stem = Path(name).stem
    parts = stem.split("__")
    label = parts[-1] if len(parts) > 1 else stem
    return label[:40]


def measure_notes(result: BenchResult, tmp: Path) -> None:
    labels = _load(LABELS_FILE)["sessions"]
    totals = {
        "found": 0,
        "facts": 0,
        "lines": 0,
        "dup_lines": 0,
        "dup_keys": 0,
        "noise": 0,
        "memories": 0,
    }
    kinds: dict[str, list[int]] = {}
    details: dict[str, Any] = {}
    for index, (name, session) in enumerate(labels.items()):
        path = TRANSCRIPTS / name
        if not path.is_file():
            result.notes.append(f"labelled transcript missing: {name}")
            continue
        replayed = replay_session(path, tmp / f"notes-{index}")
        score = score_notes(replayed.notes, session)
        row = f"notes: {session.get('row') or _short(name)}"
        result.add(
            row,
            found=score.found,
            total=score.facts,
            pct=pct(score.found, score.facts),
            dup_lines=score.dup_lines,
            dup_keys=score.dup_keys,
            noise=score.noise,
            memories=len(replayed.memories),
        )
        totals["found"] += score.found
        totals["facts"] += score.facts
        totals["lines"] += score.list_lines
        totals["dup_lines"] += score.dup_lines
        totals["dup_keys"] += score.dup_keys
        totals["noise"] += score.noise
        totals["memories"] += len(replayed.memories)
        for kind, (found, total) in score.by_kind.items():
            counts = kinds.setdefault(kind, [0, 0])
            counts[0] += found
            counts[1] += total
        details[name] = {
            "missing": score.missing,
            "noise": score.noise_found,
            "list_lines": score.list_lines,
            "layer_errors": replayed.layer_errors,
            "replay_ms": round(replayed.seconds * 1000, 1),
            "memories": [f"{m.type}: {m.description}" for m in replayed.memories],
            "notes": replayed.notes,
        }
    result.add(
        ALL_NOTES,
        found=totals["found"],
        total=totals["facts"],
        pct=pct(totals["found"], totals["facts"]),
        dup_lines=totals["dup_lines"],
        dup_keys=totals["dup_keys"],
        noise=totals["noise"],
        memories=totals["memories"],
    )
    result.details["notes"] = details
    result.details["notes_by_kind"] = {
        kind: {"found": f, "total": t, "pct": pct(f, t)} for kind, (f, t) in sorted(kinds.items())
    }
    result.params["notes_list_lines"] = totals["lines"]


# -- memories of the labelled synthetic session ---------------------------------------------------

SESSION_ID = "5e551014-0000-4000-8000-00000000b3c4"
_CWD = "/work/payments-app"
_VERSION = "2.1.150"


def fake_github_token() -> str:
    """A made-up GitHub token in the real format (seeded; it opens nothing)."""
    rng = random.Random(20261202)
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


class _Writer:
    """Claude Code 2.x records, chained by ``parentUuid`` (shapes as in tests/data/transcripts)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.clock = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
        self.counter = 0

    def _next(self) -> tuple[str, str]:
        self.counter += 1
        self.clock += timedelta(seconds=7)
        return str(uuid.UUID(int=self.counter, version=4)), self.clock.isoformat().replace(
            "+00:00", "Z"
        )

    def _base(self, kind: str) -> dict[str, Any]:
        record_id, stamp = self._next()
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": _CWD,
            "sessionId": SESSION_ID,
            "version": _VERSION,
            "gitBranch": "main",
            "type": kind,
            "uuid": record_id,
            "timestamp": stamp,
        }
        self.parent = record_id
        return record

    def user(self, content: Any, **extra: Any) -> dict[str, Any]:
        record = self._base("user")
        record["message"] = {"role": "user", "content": content}
        record.update(extra)
        self.records.append(record)
        return record

    def assistant(self, content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
        record = self._base("assistant")
        record["message"] = {
            "model": "claude-sonnet-4-5-20250929",
            "id": f"msg_bench{self.counter:04d}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 4,
                "cache_creation_input_tokens": 120,
                "cache_read_input_tokens": 18000 + 400 * self.counter,
                "output_tokens": 60,
            },
        }
        record["requestId"] = f"req_bench{self.counter:04d}"
        self.records.append(record)
        return record

    def reply(self, text: str | None) -> None:
        if text:
            self.assistant([{"type": "text", "text": text}], "end_turn")

    def compact(self, summary: str) -> None:
        record_id, stamp = self._next()
        self.records.append(
            {
                "parentUuid": None,
                "logicalParentUuid": self.parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": _CWD,
                "sessionId": SESSION_ID,
                "version": _VERSION,
                "gitBranch": "main",
                "type": "system",
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "isMeta": False,
                "timestamp": stamp,
                "uuid": record_id,
                "level": "info",
                "compactMetadata": {"trigger": "auto", "preTokens": 167000},
            }
        )
        self.parent = record_id
        self.user(summary, isCompactSummary=True, isVisibleInTranscriptOnly=True)


def synthetic_transcript(spec: Mapping[str, Any], token: str) -> str:
    """The labelled session as Claude Code 2.x JSONL."""
    out = _Writer()
    for turn in spec["turns"]:
        kind = turn["kind"]
        text = str(turn.get("text", "")).replace("{github_token}", token)
        if kind in ("user", "notification"):
            out.user(text, promptSource="typed") if kind == "user" else out.user(text)
        elif kind == "meta":
            out.user(text, isMeta=True)
        elif kind == "command":
            name = str(turn["name"])
            out.user(
                f"<command-message>{name.lstrip('/')} is running…</command-message>\n"
                f"<command-name>{name}</command-name>\n"
                f"<command-args>{turn.get('args', '')}</command-args>"
            )
            out.user([{"type": "text", "text": str(turn["expansion"])}], isMeta=True)
        elif kind == "compact":
            out.compact(text)
        elif kind == "ask":
            question, answer = str(turn["question"]), str(turn["answer"])
            call_id = f"toolu_bench{out.counter + 1:04d}"
            out.assistant(
                [
                    {
                        "type": "tool_use",
                        "id": call_id,
                        "name": "AskUserQuestion",
                        "input": {
                            "questions": [
                                {
                                    "question": question,
                                    "header": "Choice",
                                    "options": [
                                        {"label": "pytest", "description": "pytest"},
                                        {"label": "unittest", "description": "unittest"},
                                    ],
                                    "multiSelect": False,
                                }
                            ]
                        },
                    }
                ],
                "tool_use",
            )
            out.user(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": (
                            f'User has answered your questions: "{question}"="{answer}". '
                            "You can now continue with the user's answers in mind."
                        ),
                    }
                ],
                toolUseResult={
                    "questions": [{"question": question}],
                    "answers": {question: answer},
                },
            )
        else:
            raise ValueError(f"unknown turn kind {kind!r}")
        out.reply(turn.get("reply"))
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out.records)


def memory_text(memory: Any) -> str:
    return "\n".join(str(getattr(memory, key, "")) for key in ("name", "description", "body"))


@dataclass
class MemoryScore:
    saved: int
    true_memories: int
    durable_found: list[str]
    durable_missing: list[str]
    traps_saved: list[str]
    private_kept: dict[str, list[str]]
    memories: list[dict[str, str]]


def score_memories(
    memories: Sequence[Any], files: Mapping[str, str], spec: Mapping[str, Any], token: str
) -> MemoryScore:
    texts = [memory_text(m) for m in memories]
    durable = list(spec["durable"])
    traps = list(spec["traps"])
    found = [d["id"] for d in durable if any(alternative_matches(d["any"], t) for t in texts)]
    true_memories = sum(1 for t in texts if any(alternative_matches(d["any"], t) for d in durable))
    traps_saved = [x["id"] for x in traps if any(alternative_matches(x["any"], t) for t in texts)]
    private: dict[str, list[str]] = {}
    for item in spec.get("private", []):
        values = [str(item["value"]).replace("{github_token}", token), *item.get("also", [])]
        where = sorted(name for name, text in files.items() if any(v in text for v in values))
        if where:
            private[str(item["id"])] = where
    listed = [
        {"name": str(m.name), "type": str(m.type), "description": str(m.description)}
        for m in memories
    ]
    return MemoryScore(
        saved=len(memories),
        true_memories=true_memories,
        durable_found=found,
        durable_missing=[d["id"] for d in durable if d["id"] not in found],
        traps_saved=traps_saved,
        private_kept=private,
        memories=listed,
    )


def measure_memories(result: BenchResult, tmp: Path) -> None:
    spec = _load(SESSION_FILE)
    token = fake_github_token()
    transcripts = tmp / "transcripts"
    transcripts.mkdir(parents=True, exist_ok=True)
    path = transcripts / f"{SESSION_ID}.jsonl"
    path.write_text(synthetic_transcript(spec, token), encoding="utf-8")
    replayed = replay_session(path, tmp / "memories")
    score = score_memories(replayed.memories, replayed.files, spec, token)
    durable = len(spec["durable"])
    result.add(
        MEM_RECALL,
        found=len(score.durable_found),
        total=durable,
        pct=pct(len(score.durable_found), durable),
    )
    result.add(
        MEM_PRECISION,
        found=score.true_memories,
        total=score.saved,
        pct=pct(score.true_memories, score.saved),
    )
    result.add(MEM_TRAPS, found=len(score.traps_saved), total=len(spec["traps"]))
    result.add(MEM_PRIVATE, found=len(score.private_kept), total=len(spec.get("private", [])))
    result.details["memories"] = {
        "saved": score.memories,
        "durable_missing": score.durable_missing,
        "traps_saved": score.traps_saved,
        "private_kept": score.private_kept,
        "files": sorted(replayed.files),
        "layer_errors": replayed.layer_errors,
        "notes": replayed.notes,
    }


# -- recall: BM25 over a labelled memory set ------------------------------------------------------


@dataclass
class RecallScore:
    prompts: int
    hit1: int
    hit5: int
    reciprocal: float
    misses: list[dict[str, Any]]


def score_recall(spec: Mapping[str, Any]) -> RecallScore:
    from memframe.memdir.files import Memory
    from memframe.memdir.recall import bm25_select

    candidates = [
        Memory(
            Path("/bench-memories") / f"{m['id']}.md",
            str(m["name"]),
            str(m["description"]),
            str(m["type"]),
            str(m["body"]),
        )
        for m in spec["memories"]
    ]
    ids = {id(c): str(m["id"]) for c, m in zip(candidates, spec["memories"], strict=True)}
    hit1 = hit5 = 0
    reciprocal = 0.0
    misses = []
    for item in spec["prompts"]:
        ranked = [ids[id(m)] for m in bm25_select(str(item["prompt"]), candidates, len(candidates))]
        expected = set(item["expect"])
        rank = next((n for n, key in enumerate(ranked, 1) if key in expected), None)
        if rank is not None:
            reciprocal += 1.0 / rank
            hit1 += rank == 1
            hit5 += rank <= 5
        if rank is None or rank > 5:
            misses.append(
                {
                    "prompt": item["prompt"],
                    "expect": item["expect"],
                    "rank": rank,
                    "top": ranked[:5],
                }
            )
    return RecallScore(len(spec["prompts"]), hit1, hit5, reciprocal, misses)


def measure_recall(result: BenchResult) -> None:
    score = score_recall(_load(RECALL_FILE))
    result.add(HIT1, found=score.hit1, total=score.prompts, pct=pct(score.hit1, score.prompts))
    result.add(HIT5, found=score.hit5, total=score.prompts, pct=pct(score.hit5, score.prompts))
    result.add(MRR, total=score.prompts, pct=pct(score.reciprocal, score.prompts))
    result.details["recall_misses"] = score.misses


# -- dream: merging paraphrases -------------------------------------------------------------------


@dataclass
class DreamScore:
    expected: int
    merged: int
    wrong: list[str]
    survivors: dict[str, int]
    reason: str


def _dream_order(spec: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every memory of the set, groups and near misses interleaved (oldest first)."""
    queues: list[list[tuple[str, dict[str, Any]]]] = [
        [(str(g["id"]), {**m, "type": g["type"]}) for m in g["memories"]] for g in spec["groups"]
    ]
    queues += [[(str(n["id"]), dict(n))] for n in spec["near_misses"]]
    ordered = []
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def score_dream(spec: Mapping[str, Any], tmp: Path) -> DreamScore:
    from memframe.layers.dream import DreamLayer
    from memframe.memdir.files import render_memory

    with _frame(tmp) as frame:
        layer = frame.manager.get_plugin("dream")
        if not isinstance(layer, DreamLayer):
            layer = DreamLayer(frame)
        root = Path(layer.store.root)
        root.mkdir(parents=True, exist_ok=True)
        start = time.time() - 86_400
        for n, (_, memory) in enumerate(_dream_order(spec)):
            path = root / f"bench-{n:02d}.md"
            path.write_text(
                render_memory(
                    str(memory["name"]),
                    str(memory["description"]),
                    str(memory["type"]),
                    str(memory["body"]),
                ),
                encoding="utf-8",
            )
            stamp = start + 60 * n
            os.utime(path, (stamp, stamp))
        outcome = layer.consolidate()
        texts = [memory_text(m) for m in layer.store.memories()]
    survivors = {
        str(g["id"]): sum(alternative_matches(g["any"], t) for t in texts) for g in spec["groups"]
    }
    wrong = [g for g, count in survivors.items() if count == 0]
    wrong += [
        str(n["id"])
        for n in spec["near_misses"]
        if not any(alternative_matches(n["any"], t) for t in texts)
    ]
    sizes = {str(g["id"]): len(g["memories"]) for g in spec["groups"]}
    merged = sum(sizes[g] - max(count, 1) for g, count in survivors.items() if count <= sizes[g])
    expected = sum(size - 1 for size in sizes.values())
    return DreamScore(expected, merged, wrong, survivors, str(getattr(outcome, "reason", "")))


def measure_dream(result: BenchResult, tmp: Path) -> None:
    spec = _load(PARAPHRASE_FILE)
    score = score_dream(spec, tmp / "dream")
    result.add(
        DREAM_MERGED,
        found=score.merged,
        total=score.expected,
        pct=pct(score.merged, score.expected),
    )
    result.add(
        DREAM_WRONG, found=len(score.wrong), total=len(spec["groups"]) + len(spec["near_misses"])
    )
    result.details["dream"] = {
        "survivors": score.survivors,
        "wrong": score.wrong,
        "reason": score.reason,
    }


# -- the bench ------------------------------------------------------------------------------------


def _baseline() -> dict[str, Any]:
    try:
        return _load(BASELINE_FILE)
    except FileNotFoundError:
        return {}


def _add_baseline(result: BenchResult, baseline: Mapping[str, Any]) -> None:
    rows = baseline.get("rows", {})
    for name, metrics in result.rows.items():
        base = rows.get(name)
        if not isinstance(base, dict):
            continue
        extra: dict[str, Metric] = {"base_found": base.get("found"), "base_pct": base.get("pct")}
        if "dup_keys" in metrics:
            extra["base_dup_keys"] = base.get("dup_keys")
            extra["base_noise"] = base.get("noise")
            extra["base_memories"] = base.get("memories")
        result.add(name, **extra)
    if baseline:
        result.params["baseline"] = baseline.get("code", "")


def measure(*, baseline: bool = True) -> BenchResult:
    import memframe

    result = BenchResult(NAME)
    started = time.perf_counter()
    with _isolated_env(), tempfile.TemporaryDirectory(prefix="memframe-bench-memory-") as tmp:
        root = Path(tmp)
        measure_notes(result, root)
        measure_memories(result, root)
        measure_recall(result)
        measure_dream(result, root)
    if baseline:
        _add_baseline(result, _baseline())
    result.params["memframe"] = str(Path(memframe.__file__).parent)
    result.params["seconds"] = round(time.perf_counter() - started, 2)
    return result


def run(quick: bool) -> BenchResult:
    result = measure()
    result.params["quick"] = quick
    result.notes.extend(
        [
            "notes rows: labelled facts of the session found in its final notes (found/total), "
            "list lines repeated in a section (dup_lines) or about a key already listed "
            "(dup_keys), lines showing hook/host text as a request or title (noise)",
            "base_*: the previous release (benches/data/memory_baseline.json)",
            f"floors: {', '.join(f'{r} {m} {op} {v:g}' for r, m, op, v in FLOORS)}",
        ]
    )
    return result


def check(result: BenchResult) -> list[str]:
    problems = []
    for row, metric, op, floor in FLOORS:
        value = result.rows.get(row, {}).get(metric)
        if not isinstance(value, int | float) or isinstance(value, bool):
            problems.append(f"memory: {row} {metric} was not measured")
            continue
        if (op == ">=" and value < floor) or (op == "<=" and value > floor):
            problems.append(f"memory: {row} {metric} = {value:g}, floor {op} {floor:g}")
    return problems


def _baseline_document(result: BenchResult, label: str) -> dict[str, Any]:
    keep = ("found", "total", "pct", "dup_lines", "dup_keys", "noise", "memories")
    return {
        "about": "Figures of benches/memory.py for the code named in 'code' (the previous "
        "release); written by `python -m benches.memory --write-baseline --label …`.",
        "code": label,
        "measured": datetime.now(UTC).date().isoformat(),
        "rows": {
            name: {k: v for k, v in metrics.items() if k in keep}
            for name, metrics in result.rows.items()
        },
        "details": {
            "notes_missing": {k: v["missing"] for k, v in result.details["notes"].items()},
            "notes_by_kind": result.details["notes_by_kind"],
            "memories": {
                k: result.details["memories"][k]
                for k in ("durable_missing", "traps_saved", "private_kept")
            },
            "recall_misses": result.details["recall_misses"],
            "dream": result.details["dream"],
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    from benches import report

    parser = argparse.ArgumentParser(prog="python -m benches.memory", description=__doc__)
    parser.add_argument("--json", type=Path, help="write the whole result (with details) here")
    parser.add_argument(
        "--write-baseline", action="store_true", help=f"record this run in {BASELINE_FILE.name}"
    )
    parser.add_argument("--label", default="", help="what code this is (for --write-baseline)")
    parser.add_argument("--notes", action="store_true", help="print each session's final notes")
    args = parser.parse_args(argv)
    result = measure(baseline=not args.write_baseline)
    print(report.table(result))
    for note in result.notes:
        print(f"  note: {note}")
    if args.notes:
        for name, detail in result.details["notes"].items():
            print(f"\n==== {name}\n{detail['notes']}")
    if args.json:
        report.write_json(args.json, result.to_json())
    if args.write_baseline:
        report.write_json(BASELINE_FILE, _baseline_document(result, args.label))
        print(f"baseline written to {BASELINE_FILE}")
    problems = check(result)
    for problem in problems:
        print(f"  FLOOR BROKEN: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
