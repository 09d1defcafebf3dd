"""The ``hyperscan`` scanning engine: the PyPI ``hyperscan`` package finds candidate rules in one
pass (every rule pattern in one block-mode database, single-match, no start-of-match), the
keyword check runs for the rules that hit, then the Python engine's confirmation step."""

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


def _compile_error(expression: bytes, flags: int) -> str | None:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(expressions=[expression], ids=[0], elements=1, flags=[flags])
    except hyperscan.error as exc:
        return str(exc)
    return None


class HyperscanScanner(PythonScanner):
    """Python confirmation on the rules a Hyperscan pass marked as candidates."""

    engine = "hyperscan"

    def __init__(self, rules: RuleSet) -> None:
        super().__init__(rules)
        expressions: list[bytes] = []
        flags: list[int] = []
        self._signals: list[int] = []  # database pattern id -> rule index
        self._in_database = [False] * len(rules.rules)
        #: (rule index, message) of the rules the library rejected (confirmed by regex alone)
        self.rejected: list[tuple[int, str]] = []
        for index, rule in enumerate(rules.rules):
            expression, rule_flags = _expression(rule.regex)
            error = _compile_error(expression, rule_flags)
            if error is not None:
                self.rejected.append((index, error))
            else:
                expressions.append(expression)
                flags.append(rule_flags)
                self._signals.append(index)
                self._in_database[index] = True
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
        """Rules whose pattern hit (or that are not in the database) and whose keyword occurs."""
        if not self._signals:
            return super().candidates(text)
        data = utf8(text)
        hit = [not in_db for in_db in self._in_database]
        signals = self._signals

        def on_match(pattern_id: int, start: int, end: int, flags: int, context: Any) -> None:
            hit[signals[pattern_id]] = True

        self._database.scan(data, match_event_handler=on_match, scratch=self._scratch())
        if not any(hit):
            return []
        lowered = data.lower()
        return [
            index
            for index, keywords in enumerate(self._keywords)
            if hit[index] and (not keywords or any(k in lowered for k in keywords))
        ]
