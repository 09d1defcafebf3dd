"""The ``python`` scanning engine: a keyword prefilter, then ``re`` per rule.

Same semantics as the native engine (``rust/memframe-core/src/scan.rs``), defined in
:mod:`memframe.rules`: keyword prefilter on ASCII-lower-cased UTF-8 bytes, leftmost-first
non-overlapping matches of each rule's regex (``re.ASCII``), then ``Rule.keeps`` (entropy floor
and allowlists).
"""

from __future__ import annotations

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


class PythonScanner:
    """A compiled rule set for the pure-Python engine."""

    engine = "python"

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._rules = rules.rules
        self._keywords = [tuple(k.encode("ascii") for k in rule.keywords) for rule in rules]

    @property
    def rule_count(self) -> int:
        return len(self._rules)

    def candidates(self, text: str) -> list[int]:
        """Indices of the rules whose keywords occur in the text (or that have none)."""
        lowered = utf8(text).lower()
        return [
            index
            for index, keywords in enumerate(self._keywords)
            if not keywords or any(k in lowered for k in keywords)
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
