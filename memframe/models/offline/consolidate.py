"""Consolidation without a model: merge exact and near duplicates, make relative dates absolute.

Near duplicates are memories of the same type whose word 3-gram shingles overlap by at least
``NEAR_DUPLICATE`` (Jaccard). The newest file of each group is kept; the others are deleted.
"today", "yesterday" and "tomorrow" become the date they meant, taken from the file's mtime.
The layer rebuilds ``MEMORY.md`` afterwards.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from memframe.memdir.files import normalise
from memframe.models.base import ModelRequest, ModelResponse, ToolCall
from memframe.models.offline._common import OWN_CALL_PREFIX

NEAR_DUPLICATE = 0.7
_RELATIVE = re.compile(r"\b(today|yesterday|tomorrow)\b", re.IGNORECASE)
_OFFSETS = {"today": 0, "yesterday": -1, "tomorrow": 1}


def shingles(text: str, size: int = 3) -> frozenset[tuple[str, ...]]:
    words = re.findall(r"\w+", normalise(text))
    if len(words) < size:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def similarity(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def duplicate_groups(memories: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Groups (newest first) of memories that say the same thing."""
    ordered = sorted(memories, key=lambda m: (-float(m["mtime"]), str(m["file"])))
    prints = [shingles(str(m["body"])) for m in ordered]
    exact = [normalise(str(m["body"])) for m in ordered]
    assigned: set[int] = set()
    groups = []
    for i, memory in enumerate(ordered):
        if i in assigned:
            continue
        group = [memory]
        for j in range(i + 1, len(ordered)):
            if j in assigned or ordered[j]["type"] != memory["type"]:
                continue
            if exact[i] == exact[j] or similarity(prints[i], prints[j]) >= NEAR_DUPLICATE:
                group.append(ordered[j])
                assigned.add(j)
        if len(group) > 1:
            groups.append(group)
    return groups


def absolute_dates(text: str, written: float) -> str:
    day = datetime.fromtimestamp(written, UTC).date()

    def replace(match: re.Match[str]) -> str:
        return (day + timedelta(days=_OFFSETS[match.group(1).lower()])).isoformat()

    return _RELATIVE.sub(replace, text)


def consolidate_recipe(request: ModelRequest) -> ModelResponse:
    memories: list[dict[str, Any]] = list(request.task.get("memories", []))
    calls: list[ToolCall] = []
    deleted: set[str] = set()
    for group in duplicate_groups(memories):
        for extra in group[1:]:
            deleted.add(str(extra["path"]))
            calls.append(
                ToolCall(
                    f"{OWN_CALL_PREFIX}{len(calls) + 1}", "Delete", {"file_path": extra["path"]}
                )
            )
    for memory in memories:
        if str(memory["path"]) in deleted:
            continue
        text = str(memory["text"])
        fixed = absolute_dates(text, float(memory["mtime"]))
        if fixed != text:
            calls.append(
                ToolCall(
                    f"{OWN_CALL_PREFIX}{len(calls) + 1}",
                    "Write",
                    {"file_path": memory["path"], "content": fixed},
                )
            )
    if not calls:
        return ModelResponse(text="Nothing to consolidate.", stop_reason="end_turn")
    return ModelResponse(tool_calls=tuple(calls), stop_reason="tool_use")
