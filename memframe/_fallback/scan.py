"""The ``python`` scanning engine: a keyword prefilter, then ``re`` per rule.

Same semantics as the native engine (``rust/memframe-core/src/scan.rs``), defined in
:mod:`memframe.rules`: keyword prefilter on ASCII-lower-cased UTF-8 bytes, leftmost-first
non-overlapping matches of each rule's regex (``re.ASCII``), then ``Rule.keeps`` (entropy floor
and allowlists).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from memframe.rules import RuleSet

# (rule index, start, end, secret_start, secret_end, line) — character offsets, 1-based line
FindingTuple = tuple[int, int, int, int, int, int]


def as_text(data: str | bytes) -> str:
    """Text for scanning: bytes decode as UTF-8 with every invalid byte kept as one character."""
    if isinstance(data, str):
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data).decode("utf-8", "surrogateescape")
    raise TypeError(f"expected str or bytes, got {type(data).__name__}")


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


class KeywordIndex:
    """Which keywords occur in a lower-cased text, found in one pass.

    Every keyword goes into one trie-shaped regex (``a(?:kia|sia)|…``: a position costs one
    first-byte test unless a keyword starts there) inside a look-ahead, so one ``findall`` (in C)
    yields the longest keyword starting at every position. Every keyword occurring at a position is
    a prefix of the longest one there, so each found keyword implies the keywords it contains and
    the result is exactly ``{k for k in keywords if k in text}``.
    """

    def __init__(self, keywords: Iterable[bytes]) -> None:
        words = sorted({w for w in keywords if w})
        self._pattern = re.compile(b"(?=(" + _trie(words) + b"))") if words else None
        self._implied = {w: frozenset(v for v in words if v in w) for w in words}

    def present(self, lowered: bytes) -> set[bytes]:
        """The keywords that occur in ``lowered`` (ASCII-lower-cased UTF-8 bytes)."""
        found: set[bytes] = set()
        if self._pattern is not None:
            for word in set(self._pattern.findall(lowered)):
                found |= self._implied[word]
        return found


def _trie(words: list[bytes]) -> bytes:
    """A regex matching the longest of ``words`` starting at a position (greedy optional tails)."""
    root: dict[int, Any] = {}
    for word in words:
        node = root
        for byte in word:
            node = node.setdefault(byte, {})
        node[-1] = {}  # a keyword ends here

    def emit(node: dict[int, Any]) -> bytes:
        branches = [
            re.escape(bytes([b])) + emit(child) for b, child in sorted(node.items()) if b >= 0
        ]
        if not branches:
            return b""
        body = branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"
        if -1 in node:  # a keyword ends here and longer ones continue: the tail is optional
            return (b"(?:" + body + b")?") if len(branches) > 1 or len(body) > 1 else body + b"?"
        return body

    return emit(root)


class PythonScanner:
    """A compiled rule set for the pure-Python engine."""

    engine = "python"

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._rules = rules.rules
        self._keywords = [tuple(k.encode("ascii") for k in rule.keywords) for rule in rules]
        self._index = KeywordIndex(k for keywords in self._keywords for k in keywords)

    @property
    def rule_count(self) -> int:
        return len(self._rules)

    def candidates(self, text: str) -> list[int]:
        """Indices of the rules whose keywords occur in the text (or that have none)."""
        present = self._index.present(utf8(text).lower())
        return [
            index
            for index, keywords in enumerate(self._keywords)
            if not keywords or not present.isdisjoint(keywords)
        ]

    def _matches(self, index: int, text: str, first_only: bool) -> list[tuple[int, int, int, int]]:
        rule = self._rules[index]
        found = []
        for match in rule.pattern.finditer(text):
            secret_start, secret_end = match.span(rule.secret_group)
            if secret_start < 0:
                continue  # the secret group did not take part in this match
            if rule.keeps(text[secret_start:secret_end], self.rules.allowlist):
                found.append((match.start(), match.end(), secret_start, secret_end))
                if first_only:
                    break
        return found

    def find(self, data: str | bytes) -> list[FindingTuple]:
        """Every finding, ordered by (start, rule order)."""
        text = as_text(data)
        raw = [
            (start, index, end, s_start, s_end)
            for index in self.candidates(text)
            for start, end, s_start, s_end in self._matches(index, text, first_only=False)
        ]
        raw.sort()
        findings = []
        line, counted_to = 1, 0
        for start, index, end, s_start, s_end in raw:
            if s_start >= counted_to:
                line += text.count("\n", counted_to, s_start)
                counted_to = s_start
                findings.append((index, start, end, s_start, s_end, line))
            else:
                findings.append(
                    (index, start, end, s_start, s_end, text.count("\n", 0, s_start) + 1)
                )
        return findings

    def scan(self, data: str | bytes) -> list[int]:
        """Indices of the rules with at least one finding, in rule order."""
        text = as_text(data)
        return [i for i in self.candidates(text) if self._matches(i, text, first_only=True)]
