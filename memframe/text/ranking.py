"""BM25 ranking of short documents (memories) for a query, with weighted fields.

Query and documents are cut into terms by :func:`memframe.text.terms` (case-folded, stop words
out, light stemming), the same words consolidation compares."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memframe.text import STOPWORDS, terms

__all__ = ["STOPWORDS", "Document", "bm25", "terms"]


@dataclass(frozen=True)
class Document:
    key: str
    fields: Sequence[tuple[str, float]]  # (text, weight)


def bm25(
    query: str, documents: Sequence[Document], *, k1: float = 1.2, b: float = 0.75
) -> list[tuple[str, float]]:
    """``(key, score)`` for every document matching at least one query term, best first (ties by
    key, so the order is deterministic)."""
    wanted = set(terms(query))
    if not wanted or not documents:
        return []
    bags: list[Counter[str]] = []
    for document in documents:
        bag: Counter[str] = Counter()
        for text, weight in document.fields:
            for term in terms(text):
                bag[term] += weight  # type: ignore[assignment]
        bags.append(bag)
    lengths = [sum(bag.values()) for bag in bags]
    average = sum(lengths) / len(lengths) or 1.0
    frequency = Counter(term for bag in bags for term in wanted if bag[term])
    count = len(documents)
    scored = []
    for document, bag, length in zip(documents, bags, lengths, strict=True):
        score = 0.0
        for term in wanted:
            tf = bag[term]
            if not tf:
                continue
            idf = math.log(1 + (count - frequency[term] + 0.5) / (frequency[term] + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
        if score > 0:
            scored.append((document.key, score))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored
