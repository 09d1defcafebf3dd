"""The rule data model: :class:`Rule`, :class:`Allowlist`, :class:`RuleSet`, :class:`RuleError`
and the entropy measure every engine shares."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Final

from memframe.rules.lint import to_python_regex

__all__ = ["SCHEMA_VERSION", "Allowlist", "Rule", "RuleError", "RuleSet", "shannon_entropy"]

SCHEMA_VERSION: Final = 1


class RuleError(ValueError):
    """A rule file or rule definition is invalid.

    The message always names the file (``source``) and, when the problem belongs to one rule, the
    rule id and the field, e.g.
    ``rules.toml: rule 'acme-key': field 'regex': at offset 0: look-behind (?<! is not allowed``.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        rule_id: str | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        self.source = source
        self.rule_id = rule_id
        self.field = key
        self.line = line
        self.problem = message
        where = source if line is None else f"{source}:{line}"
        parts = [where]
        if rule_id is not None:
            parts.append(f"rule {rule_id!r}")
        if key is not None:
            parts.append(f"field {key!r}")
        super().__init__(": ".join(parts) + ": " + message)


def shannon_entropy(data: str | bytes) -> float:
    """Shannon entropy in bits per byte of ``data`` (a ``str`` is measured over its UTF-8 bytes,
    invalid bytes kept by ``surrogateescape``). Terms are summed in ascending byte order, the
    order the native engine uses, so every engine computes the same float."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    if not raw:
        return 0.0
    n = len(raw)
    return -sum(c / n * math.log2(c / n) for _, c in sorted(Counter(raw).items()))


# -- data model -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Allowlist:
    """Findings to ignore: a stopword in the lower-cased secret, a regex that searches the
    secret, or a ``match_regexes`` entry that searches the whole match (gitleaks'
    ``regexTarget = "match"``: the name before an assignment is part of the match, the secret is
    not)."""

    stopwords: tuple[str, ...] = ()
    regexes: tuple[str, ...] = ()
    match_regexes: tuple[str, ...] = ()

    @cached_property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(to_python_regex(r), re.ASCII) for r in self.regexes)

    @cached_property
    def match_patterns(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(to_python_regex(r), re.ASCII) for r in self.match_regexes)

    @cached_property
    def _stopword_bytes(self) -> tuple[bytes, ...]:
        return tuple(w.lower().encode("utf-8") for w in self.stopwords)

    def allows(self, secret: str, match: str | None = None) -> bool:
        """True when the finding is allow-listed, i.e. must be dropped: its ``secret``, or the
        whole ``match`` it came from (``None``: the secret is the match). Stopwords are
        compared ASCII-case-insensitively on UTF-8 bytes (as the native engine does)."""
        if self.stopwords:
            lowered = secret.encode("utf-8", "surrogateescape").lower()
            if any(word in lowered for word in self._stopword_bytes):
                return True
        if any(p.search(secret) is not None for p in self.patterns):
            return True
        whole = secret if match is None else match
        return any(p.search(whole) is not None for p in self.match_patterns)

    def __bool__(self) -> bool:
        return bool(self.stopwords or self.regexes or self.match_regexes)

    def merged(self, other: Allowlist) -> Allowlist:
        """Both allowlists in one (each list in order, duplicates dropped)."""
        return Allowlist(
            stopwords=unique_strings(self.stopwords + other.stopwords),
            regexes=unique_strings(self.regexes + other.regexes),
            match_regexes=unique_strings(self.match_regexes + other.match_regexes),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "stopwords": list(self.stopwords),
            "regexes": list(self.regexes),
            "match_regexes": list(self.match_regexes),
        }


@dataclass(frozen=True)
class Rule:
    """One secret-detection rule (see the module docstring for the semantics)."""

    id: str
    label: str
    regex: str
    keywords: tuple[str, ...]
    secret_group: int = 1
    entropy: float | None = None
    allowlist: Allowlist = field(default_factory=Allowlist)
    source: str = field(default="", compare=False, repr=False)

    @property
    def python_regex(self) -> str:
        """The pattern for Python ``re`` (``\\z`` → ``\\Z``); compile it with ``re.ASCII``."""
        return to_python_regex(self.regex)

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The compiled Python pattern (``re.ASCII``)."""
        return re.compile(self.python_regex, re.ASCII)

    @property
    def always(self) -> bool:
        """True when the rule has no keywords and is evaluated on every text."""
        return not self.keywords

    def wanted(self, lowered_text: str) -> bool:
        """The keyword prefilter: should this rule run on a text whose lower-cased form is given?"""
        return self.always or any(k in lowered_text for k in self.keywords)

    def keeps(
        self, secret: str, global_allowlist: Allowlist | None = None, match: str | None = None
    ) -> bool:
        """Whether a finding with this ``secret`` (found in ``match``, the regex's whole match;
        ``None``: the secret itself) survives the entropy floor and the allowlists."""
        if self.entropy is not None and shannon_entropy(secret) < self.entropy:
            return False
        if self.allowlist.allows(secret, match):
            return False
        return not (global_allowlist is not None and global_allowlist.allows(secret, match))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "regex": self.regex,
            "keywords": list(self.keywords),
            "secret_group": self.secret_group,
            "entropy": self.entropy,
            "allowlist": self.allowlist.to_dict(),
        }


@dataclass(frozen=True)
class RuleSet:
    """An ordered set of rules with unique ids, plus the global allowlist."""

    rules: tuple[Rule, ...]
    allowlist: Allowlist = field(default_factory=Allowlist)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for rule in self.rules:
            if rule.id in seen:
                raise RuleError(
                    "duplicate rule id",
                    source=rule.source or "<RuleSet>",
                    rule_id=rule.id,
                    key="id",
                )
            seen.add(rule.id)

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def ids(self) -> tuple[str, ...]:
        """Rule ids in rule order."""
        return tuple(r.id for r in self.rules)

    def by_id(self) -> Mapping[str, Rule]:
        """A read-only mapping from rule id to rule (in rule order)."""
        return self._by_id

    @cached_property
    def _by_id(self) -> Mapping[str, Rule]:
        return MappingProxyType({r.id: r for r in self.rules})

    def to_dict(self) -> dict[str, Any]:
        """Every field, as plain JSON-ready data (what engines need to build their databases)."""
        return {
            "schema": SCHEMA_VERSION,
            "allowlist": self.allowlist.to_dict(),
            "rules": [r.to_dict() for r in self.rules],
        }

    def to_json(self) -> str:
        """Canonical JSON of :meth:`to_dict` (sorted keys, no spaces, ASCII)."""
        return self._json

    @cached_property
    def _json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    def fingerprint(self) -> str:
        """sha256 hex of :meth:`to_json`: equal fingerprints mean identical scanning behaviour."""
        return self._fingerprint

    @cached_property
    def _fingerprint(self) -> str:
        return hashlib.sha256(self.to_json().encode("ascii")).hexdigest()


def unique_strings(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
