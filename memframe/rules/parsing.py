"""What both rule-file formats share: field checks, pattern validation, and building a rule."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from typing import Any, Final

from memframe.errors import BackendError
from memframe.rules.lint import lint_pattern, to_python_regex
from memframe.rules.model import Allowlist, Rule, RuleError, unique_strings

__all__ = ["ParserBase"]

_RULE_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class ParserBase:
    """Validation helpers for one rule source (a file, a string, a ``register_rules`` call)."""

    def __init__(self, source: str, check_hyperscan: bool | None) -> None:
        self.source = source
        self.hyperscan = _pattern_checker() if check_hyperscan is not False else None
        if check_hyperscan and self.hyperscan is None:
            raise RuleError(
                "Hyperscan checking was requested but neither the native extension nor the "
                "hyperscan package is available",
                source=source,
            )

    def error(self, message: str, rule_id: str | None = None, key: str | None = None) -> RuleError:
        return RuleError(message, source=self.source, rule_id=rule_id, key=key)

    def rule_id(self, raw: dict[str, Any], position: str) -> str:
        rid = raw.get("id")
        if rid is None:
            raise self.error("missing required field", f"{position} (no id)", "id")
        if not isinstance(rid, str) or not _RULE_ID_RE.match(rid):
            raise self.error(
                f"must be a string of letters, digits, '.', '_' or '-', got {rid!r}",
                f"{position} (bad id)",
                "id",
            )
        return rid

    def unique_ids(self, rules: list[Rule]) -> tuple[Rule, ...]:
        seen: set[str] = set()
        for rule in rules:
            if rule.id in seen:
                raise self.error("duplicate rule id", rule.id, "id")
            seen.add(rule.id)
        return tuple(rules)

    def strings(self, raw: Any, rid: str | None, key: str) -> tuple[str, ...]:
        # Lists come from TOML; tuples from rules registered in Python (register_rules hook).
        if not isinstance(raw, list | tuple) or not all(isinstance(s, str) and s for s in raw):
            raise self.error("must be an array of non-empty strings", rid, key)
        return tuple(raw)

    def keywords(self, raw: Any, rid: str, *, lower: bool) -> tuple[str, ...]:
        words = self.strings(raw, rid, "keywords")
        out: list[str] = []
        for word in words:
            if not word.isascii():
                raise self.error(f"keyword {word!r} must be ASCII", rid, "keywords")
            if lower:
                word = word.lower()
            elif word != word.lower():
                raise self.error(f"keyword {word!r} must be lower-case", rid, "keywords")
            out.append(word)
        return unique_strings(out)

    def allowlist_regexes(self, raw: Any, rid: str | None, key: str) -> tuple[str, ...]:
        pats = self.strings(raw, rid, key)
        for pat in pats:
            self.check_pattern(pat, rid, key, hyperscan=False)
        return pats

    def check_pattern(
        self, pattern: str, rid: str | None, key: str, *, hyperscan: bool
    ) -> re.Pattern[str]:
        problems = lint_pattern(pattern)
        if problems:
            raise self.error(f"{problems[0]} (pattern outside the portable subset)", rid, key)
        try:
            compiled = re.compile(to_python_regex(pattern), re.ASCII)
        except re.error as exc:
            raise self.error(f"Python re cannot compile the pattern: {exc}", rid, key) from exc
        if compiled.search("") is not None:
            raise self.error("the pattern matches the empty string", rid, key)
        if hyperscan and self.hyperscan is not None:
            message = self.hyperscan(pattern)
            if message is not None:
                raise self.error(f"Hyperscan cannot compile the pattern: {message}", rid, key)
        return compiled

    def build(
        self,
        rid: str,
        label: str,
        regex: Any,
        keywords: tuple[str, ...],
        group: int | None,
        entropy: Any,
        allowlist: Allowlist,
        *,
        gitleaks: bool,
    ) -> Rule:
        if not isinstance(regex, str) or not regex:
            raise self.error("must be a non-empty string", rid, "regex")
        compiled = self.check_pattern(regex, rid, "regex", hyperscan=True)
        groups = compiled.groups
        key = "secretGroup" if gitleaks else "secret_group"
        if gitleaks:
            if not group:
                group = 1 if groups else 0
        elif group is None:
            if groups != 1:
                raise self.error(
                    f"must have exactly one capturing group (the secret), found {groups}: use "
                    "(?:...) for the other groups or set secret_group",
                    rid,
                    "regex",
                )
            group = 1
        if group > groups:
            raise self.error(f"group {group} does not exist (the regex has {groups})", rid, key)
        floor: float | None = None
        if entropy is not None:
            if type(entropy) not in (int, float) or not 0 <= entropy <= 8:
                raise self.error("must be a number between 0 and 8 (bits per byte)", rid, "entropy")
            floor = float(entropy)
        return Rule(
            id=rid,
            label=label,
            regex=regex,
            keywords=keywords,
            secret_group=group,
            entropy=floor,
            allowlist=allowlist,
            source=self.source,
        )


def _pattern_checker() -> Callable[[str], str | None] | None:
    """``_backend.pattern_error`` when an engine with Hyperscan is here (the native extension,
    else the PyPI package), so user rules are validated the same way on every backend."""
    from memframe import _backend

    if importlib.util.find_spec("hyperscan") is None:
        try:
            _backend.get_engine("native")
        except BackendError:
            return None
    return _backend.pattern_error
