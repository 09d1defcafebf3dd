"""Loading rule files: the bundled set, a user's file (either format), registered rules, merging."""

from __future__ import annotations

import functools
import importlib.resources
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from memframe.rules.gitleaks import GitleaksFormat
from memframe.rules.memframe_format import MemframeFormat
from memframe.rules.model import Allowlist, Rule, RuleError, RuleSet, unique_strings

__all__ = [
    "DEFAULT_RULES_PATH",
    "load_rule_file",
    "load_rules",
    "merge",
    "parse_rules",
    "rule_from_mapping",
]

DEFAULT_RULES_PATH: Final[Path] = Path(__file__).with_name("default.toml")
_TOML_LINE_RE: Final = re.compile(r"at line (\d+)")


class _Parser(MemframeFormat, GitleaksFormat):
    """Both formats over one source."""


def load_rules(path: str | Path | None = None) -> RuleSet:
    """Load a rule file (memframe or gitleaks format); ``None`` loads the bundled default rules.

    The bundled set is parsed once per process and is not re-checked with Hyperscan (the test suite
    does that); any other file is, with the native extension's Hyperscan (else the PyPI
    ``hyperscan`` package) when either is available.
    """
    if path is None:
        return _bundled_rules()
    return load_rule_file(path)


@functools.cache
def _bundled_rules() -> RuleSet:
    text = importlib.resources.files("memframe.rules").joinpath("default.toml").read_text("utf-8")
    return parse_rules(text, source=str(DEFAULT_RULES_PATH), check_hyperscan=False)


def load_rule_file(path: str | Path, *, check_hyperscan: bool | None = None) -> RuleSet:
    """Parse and validate one rule file.

    :param check_hyperscan: also compile each pattern with Hyperscan (the native extension's,
        else the PyPI package's); ``None`` = when either is available.
    :raises RuleError: naming the file, the rule id and the field of the first problem found.
    """
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise RuleError(f"cannot read the rule file: {exc.strerror or exc}", source=source) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuleError(f"the rule file is not UTF-8: {exc.reason}", source=source) from exc
    return parse_rules(text, source=source, check_hyperscan=check_hyperscan)


def parse_rules(
    text: str, *, source: str = "<string>", check_hyperscan: bool | None = None
) -> RuleSet:
    """Parse rule-file text: a top-level ``schema`` selects the memframe format, else gitleaks."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_LINE_RE.search(str(exc))
        line = int(m.group(1)) if m else None
        raise RuleError(f"invalid TOML: {exc}", source=source, line=line) from exc
    parser = _Parser(source, check_hyperscan)
    if "schema" in doc:
        return parser.memframe(doc)
    return parser.gitleaks(doc)


def rule_from_mapping(data: Mapping[str, Any], *, source: str = "<register_rules>") -> Rule:
    """Build one rule from a memframe-format mapping (``id``, ``label``, ``regex``, ``keywords``…).

    This is what the ``register_rules`` hook's ``register`` callback accepts.
    """
    return _Parser(source, None).memframe_rule(dict(data), "#1")


def merge(base: RuleSet, extra: RuleSet) -> RuleSet:
    """``base`` followed by ``extra``'s rules; the global allowlists are united.

    :raises RuleError: when ``extra`` redefines a rule id of ``base``.
    """
    seen = {r.id: r for r in base.rules}
    for rule in extra.rules:
        if rule.id in seen:
            first = seen[rule.id].source or "the base rule set"
            raise RuleError(
                f"duplicate rule id: already defined by {first}",
                source=rule.source or "<merge>",
                rule_id=rule.id,
                key="id",
            )
        seen[rule.id] = rule
    allowlist = Allowlist(
        stopwords=unique_strings(base.allowlist.stopwords + extra.allowlist.stopwords),
        regexes=unique_strings(base.allowlist.regexes + extra.allowlist.regexes),
    )
    return RuleSet(rules=base.rules + extra.rules, allowlist=allowlist)
