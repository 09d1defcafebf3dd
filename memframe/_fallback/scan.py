"""The ``python`` scanning engine: a keyword prefilter, then ``re`` per rule.

Same semantics as the native engine (``rust/memframe-core/src/scan.rs``), defined in
:mod:`memframe.rules`: keyword prefilter on ASCII-lower-cased UTF-8 bytes, leftmost-first
non-overlapping matches of each rule's regex (``re.ASCII``), then ``Rule.keeps`` (entropy floor
and allowlists).

Two shortcuts keep it fast without changing a result:

- the keyword check runs over the distinct runs of keyword bytes of a text (a keyword never
  spans a byte that no keyword contains), not over every position;
- a rule whose every match must start with one of a few literals (``Anchor``: ``(?i)(?:secret|
  token)…``, or ``(?:\\b|_)`` and then ``ghp_``) is tried only where a literal occurs, with
  ``pattern.match`` at each possible start in order — what ``finditer`` would find, since no
  other position can start a match.
"""

from __future__ import annotations

import re
import re._constants as sre_constants  # type: ignore[import-not-found]
import re._parser as sre_parser  # type: ignore[import-not-found]
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
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
        # every byte no keyword contains becomes a space: the runs between spaces hold every
        # occurrence of every keyword, and a text repeats most of its runs
        alphabet = {b for w in words for b in w} - {0x20}
        self._runs = bytes(b if b in alphabet else 0x20 for b in range(256))

    def present(self, lowered: bytes) -> set[bytes]:
        """The keywords that occur in ``lowered`` (ASCII-lower-cased UTF-8 bytes)."""
        found: set[bytes] = set()
        if self._pattern is not None:
            runs = b" ".join(set(lowered.translate(self._runs).split(b" ")))
            for word in set(self._pattern.findall(runs)):
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


@dataclass(frozen=True)
class Anchor:
    """Every match of a rule starts ``before`` characters (a range) ahead of one of
    ``literals`` (ASCII-lower-cased when the pattern is caseless)."""

    literals: tuple[str, ...]
    caseless: bool
    before: tuple[int, int]

    def starts(self, text: str, lowered: str) -> list[int]:
        """Every position where a match could start, in order."""
        hay = lowered if self.caseless else text
        low, high = self.before
        starts: set[int] = set()
        for literal in self.literals:
            at = hay.find(literal)
            while at >= 0:
                starts.update(range(max(at - high, 0), at - low + 1))
                at = hay.find(literal, at + 1)
        return sorted(starts)


_MAX_LITERALS = 64  # prefix sets grow by products: a wider class ends the literal part
_MAX_BEFORE = 16  # characters a match may take before its literal
_MIN_LITERAL = 2


def anchor(regex: str) -> Anchor | None:
    """The literals every match of ``regex`` (Python syntax, ``re.ASCII``) starts near, or
    ``None`` when it has no such literals of two characters or more (then every position is
    tried)."""
    try:
        parsed = sre_parser.parse(regex, re.ASCII)
    except (re.error, RecursionError):
        return None
    caseless = bool(parsed.state.flags & re.IGNORECASE)
    items = list(parsed.data)
    best: Anchor | None = None
    for split in range(min(len(items), 4) + 1):
        low, high = sre_parser.SubPattern(parsed.state, items[:split]).getwidth()
        if high > _MAX_BEFORE:
            break
        prefixes, _ = _prefixes(items[split:], caseless)
        if not prefixes or min(map(len, prefixes)) < _MIN_LITERAL:
            continue
        shortest = min(map(len, prefixes))
        if best is None or shortest > min(map(len, best.literals)):
            best = Anchor(tuple(sorted(prefixes)), caseless, (low, high))
    return best


def _prefixes(items: list[Any], caseless: bool) -> tuple[set[str], bool]:
    """Strings one of which starts every match of the sequence ``items``, and whether each
    match is exactly one of them (so the caller can go on past it)."""
    out = {""}
    for op, value in items:
        complete = True
        if op is sre_constants.LITERAL:
            chars = _literal_chars([value], caseless)
            add = set(chars) if chars is not None else None
        elif op is sre_constants.IN:
            chars = _literal_chars(_class_members(value), caseless)
            add = set(chars) if chars is not None else None
        elif op is sre_constants.SUBPATTERN:
            _group, add_flags, del_flags, sub = value
            if add_flags or del_flags:
                return out, False
            add, complete = _prefixes(list(sub.data), caseless)
        elif op is sre_constants.BRANCH:
            add, complete = set(), True
            for alternative in value[1]:
                found, whole = _prefixes(list(alternative.data), caseless)
                add |= found
                complete = complete and whole
        else:
            return out, False
        if add is None:
            return out, False
        grown = {head + tail for head in out for tail in add}
        if len(grown) > _MAX_LITERALS:
            return out, False
        out = grown
        if not complete:
            return out, False
    return out, True


def _class_members(members: list[Any]) -> list[int] | None:
    """The code points of a character class made of literals and small ranges."""
    points: list[int] = []
    for op, value in members:
        if op is sre_constants.LITERAL:
            points.append(value)
        elif op is sre_constants.RANGE and value[1] - value[0] < 8:
            points.extend(range(value[0], value[1] + 1))
        else:
            return None
    return points


def _literal_chars(points: list[int] | None, caseless: bool) -> list[str] | None:
    """The characters to search for (lower-cased when caseless); ``None`` for non-ASCII."""
    if points is None or any(p > 0x7F for p in points):
        return None
    chars = [chr(p) for p in points]
    return sorted({c.lower() for c in chars}) if caseless else chars


def ascii_lowered(text: str) -> str:
    """``text`` with ASCII letters lower-cased, every other character at its place."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered  # one character for one: positions agree (extra candidates are harmless)
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


class PythonScanner:
    """A compiled rule set for the pure-Python engine."""

    engine = "python"

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._rules = rules.rules
        self._keywords = [tuple(k.encode("ascii") for k in rule.keywords) for rule in rules]
        self._index = KeywordIndex(k for keywords in self._keywords for k in keywords)
        self._anchors = [anchor(rule.python_regex) for rule in self._rules]

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

    def _iter_matches(self, index: int, text: str, lowered: list[str]) -> Iterator[re.Match[str]]:
        """``rule.pattern.finditer(text)``, tried only where the rule's anchor allows a start.
        ``lowered`` caches the text's ASCII-lower-cased form for the rules of one call."""
        pattern = self._rules[index].pattern
        found = self._anchors[index]
        if found is None:
            yield from pattern.finditer(text)
            return
        if found.caseless and not lowered:
            lowered.append(ascii_lowered(text))
        end = 0
        for start in found.starts(text, lowered[0] if lowered else text):
            if start < end:
                continue
            match = pattern.match(text, start)
            if match is None:
                continue
            if match.end() == match.start():  # empty matches follow finditer's own rules
                yield from pattern.finditer(text, start)
                return
            yield match
            end = match.end()

    def _matches(
        self, index: int, text: str, first_only: bool, lowered: list[str] | None = None
    ) -> list[tuple[int, int, int, int]]:
        rule = self._rules[index]
        found = []
        for match in self._iter_matches(index, text, [] if lowered is None else lowered):
            secret_start, secret_end = match.span(rule.secret_group)
            if secret_start < 0:
                continue  # the secret group did not take part in this match
            if rule.keeps(text[secret_start:secret_end], self.rules.allowlist, match.group()):
                found.append((match.start(), match.end(), secret_start, secret_end))
                if first_only:
                    break
        return found

    def find(self, data: str | bytes) -> list[FindingTuple]:
        """Every finding, ordered by (start, rule order)."""
        text = as_text(data)
        lowered: list[str] = []
        raw = [
            (start, index, end, s_start, s_end)
            for index in self.candidates(text)
            for start, end, s_start, s_end in self._matches(index, text, False, lowered)
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
        lowered: list[str] = []
        return [i for i in self.candidates(text) if self._matches(i, text, True, lowered)]
