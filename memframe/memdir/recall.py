"""Memories relevant to a prompt: each one surfaced at most once per session, within byte budgets.

Shared by the memdir layer (``collect_context`` with a prompt) and the Claude Code hook
(``UserPromptSubmit``), so both show the same memories the same way. Light to import: no
frame, no pluggy, no model.
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from dataclasses import dataclass, field
from pathlib import Path

from memframe.memdir.files import Memory, freshness_caveat
from memframe.memdir.store import MemoryStore
from memframe.text.ranking import Document, bm25

RELEVANT_TITLE = "Relevant memories"


@dataclass(frozen=True)
class MemdirSettings:
    """``memdir`` in settings.json."""

    max_relevant: int = 5
    file_bytes: int = 4_096
    session_bytes: int = 60_000
    # auto: the model when it can choose, else BM25 | bm25 | model
    selector: str = field(default="auto", metadata={"choices": ("auto", "bm25", "model")})
    prompt: str | None = None  # the selection prompt file (memframe.prompts)


# (prompt, candidates, at most how many) -> the chosen ones, most useful first
Selector = Callable[[str, list[Memory], int], list[Memory]]


def bm25_select(prompt: str, candidates: list[Memory], limit: int) -> list[Memory]:
    """The ``limit`` best candidates for ``prompt`` by BM25 over name (x3), description (x2) and
    body."""
    documents = [
        Document(str(n), ((m.name, 3.0), (m.description, 2.0), (m.body, 1.0)))
        for n, m in enumerate(candidates)
    ]
    return [candidates[int(key)] for key, _ in bm25(prompt, documents)[:limit]]


def render_memory_for_prompt(memory: Memory, root: Path, file_bytes: int) -> str:
    """A memory as the prompt shows it: a header naming it, a freshness caveat when it is older
    than a day, its body cut to ``file_bytes``."""
    body = memory.body
    if len(body.encode("utf-8")) > file_bytes:
        body = body.encode("utf-8")[:file_bytes].decode("utf-8", "ignore") + "\n[… truncated]"
    header = f"## {memory.name} ({memory.relative_to(root)}, {memory.type})"
    caveat = freshness_caveat(memory)
    return "\n".join([header, *([f"> {caveat}"] if caveat else []), "", body])


def recall(
    store: MemoryStore,
    prompt: str,
    surfaced: MutableSequence[str],
    spent: int,
    settings: MemdirSettings,
    select: Selector = bm25_select,
) -> tuple[str, int]:
    """Up to ``settings.max_relevant`` memories for ``prompt`` that are not in ``surfaced``
    (files relative to the store, appended to as they are shown), while the session's total
    stays within ``settings.session_bytes`` (``spent`` so far). Returns the text ('' when
    nothing fits) and the new total."""
    if not prompt.strip() or spent >= settings.session_bytes:
        return "", spent
    candidates = [m for m in store.memories() if m.relative_to(store.root) not in surfaced]
    if not candidates:
        return "", spent
    parts = []
    for memory in select(prompt, candidates, settings.max_relevant):
        part = render_memory_for_prompt(memory, store.root, settings.file_bytes)
        size = len(part.encode("utf-8"))
        if spent + size > settings.session_bytes:
            break
        parts.append(part)
        spent += size
        surfaced.append(memory.relative_to(store.root))
    return "\n\n".join(parts), spent
