"""The ``hyperscan`` scanning engine: the PyPI ``hyperscan`` package finds candidate rules in one
pass (rule patterns and keyword literals in one block-mode database, single-match, no
start-of-match), then the Python engine's confirmation step runs on those rules only."""

from __future__ import annotations

import threading
from typing import Any

import hyperscan

from memframe._fallback.scan import PythonScanner, utf8
from memframe.rules import RuleSet


def _expression(regex: str) -> tuple[bytes, int]:
    flags = hyperscan.HS_FLAG_SINGLEMATCH
    if regex.startswith("(?i)"):
        regex = regex[4:]
        flags |= hyperscan.HS_FLAG_CASELESS
    return regex.encode("ascii"), flags


def _literal(keyword: str) -> bytes:
    return "".join(f"\\x{byte:02x}" for byte in keyword.encode("ascii")).encode("ascii")


def _compiles(expression: bytes, flags: int) -> bool:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(expressions=[expression], ids=[0], elements=1, flags=[flags])
    except hyperscan.error:
        return False
    return True


class HyperscanScanner(PythonScanner):
    """Python confirmation on the rules a Hyperscan pass marked as candidates."""

    engine = "hyperscan"

    def __init__(self, rules: RuleSet) -> None:
        super().__init__(rules)
        expressions: list[bytes] = []
        flags: list[int] = []
        self._signals: list[tuple[str, int]] = []
        self._in_database = [False] * len(rules.rules)
        for index, rule in enumerate(rules.rules):
            expression, rule_flags = _expression(rule.regex)
            if _compiles(expression, rule_flags):
                expressions.append(expression)
                flags.append(rule_flags)
                self._signals.append(("rule", index))
                self._in_database[index] = True
            for keyword in rule.keywords:
                expressions.append(_literal(keyword))
                flags.append(hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_CASELESS)
                self._signals.append(("keyword", index))
        self._database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        if expressions:
            self._database.compile(
                expressions=expressions,
                ids=list(range(len(expressions))),
                elements=len(expressions),
                flags=flags,
            )
        self._local = threading.local()

    def _scratch(self) -> Any:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._database)
        return scratch

    def candidates(self, text: str) -> list[int]:
        if not self._signals:
            return super().candidates(text)
        count = len(self._in_database)
        keyword_hit = [False] * count
        pattern_hit = [False] * count
        signals = self._signals

        def on_match(pattern_id: int, start: int, end: int, flags: int, context: Any) -> None:
            kind, index = signals[pattern_id]
            if kind == "rule":
                pattern_hit[index] = True
            else:
                keyword_hit[index] = True

        self._database.scan(utf8(text), match_event_handler=on_match, scratch=self._scratch())
        return [
            index
            for index, rule in enumerate(self._rules)
            if (not rule.keywords or keyword_hit[index])
            and (not self._in_database[index] or pattern_hit[index])
        ]
