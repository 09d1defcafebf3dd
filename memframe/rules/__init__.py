"""Secret-scanning rules: the one rule file that every scan engine reads.

The bundled ``default.toml`` holds the 47 rules of SPEC §4.7; users add rules from their own file
(memframe format, ``schema = 1``) or from a gitleaks-format config. Everything here is pure Python
and only *loads and validates*; the engines (native, hyperscan, python) implement the semantics
below identically.

Semantics every engine implements
---------------------------------
- A rule is evaluated on a text only if the lower-cased text contains one of its ``keywords``
  (``keywords == ()`` means "always evaluate"). Every possible match of a rule's regex contains one
  of its keywords (case-insensitively), so the prefilter never hides a finding.
- Its findings are the leftmost-first, non-overlapping matches of ``regex`` over the whole text
  (Python ``re.finditer`` semantics); the secret is capture group ``secret_group`` (0 = the whole
  match).
- A finding is dropped when ``entropy`` is set and the Shannon entropy of the secret's UTF-8 bytes
  (:func:`shannon_entropy`) is *below* it, or when the rule's or the global :class:`Allowlist`
  allows the secret (a stopword occurs in the lower-cased secret, or an allowlist regex *searches*
  it).

The regex subset
----------------
Patterns must behave identically in Python ``re`` (with ``re.ASCII``), the Rust ``regex`` crate in
bytes mode with Unicode off, and Hyperscan (candidate detection, no start-of-match).
:func:`lint_pattern` rejects what breaks that agreement: ``.``, ``^``/``$`` (write ``\\A``/``\\z``),
look-around, backreferences, inline flags other than a leading ``(?i)``, Unicode escapes,
possessive quantifiers, nested sets and set operations inside classes, a ``{`` that is not a
repetition, and negated classes (``[^...]``, ``\\S``, ``\\W``, ``\\D``) under a bounded repetition
(``{m,n}`` or ``?``: Rust bytes mode counts bytes where Python counts characters). End of text is
written ``\\z`` (Rust, Hyperscan); :attr:`Rule.python_regex` translates it to Python's ``\\Z``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.resources
import importlib.util
import json
import math
import re
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from memframe.errors import BackendError

__all__ = [
    "DEFAULT_RULES_PATH",
    "SCHEMA_VERSION",
    "Allowlist",
    "Rule",
    "RuleError",
    "RuleSet",
    "lint_pattern",
    "load_rule_file",
    "load_rules",
    "merge",
    "parse_rules",
    "rule_from_mapping",
    "shannon_entropy",
    "to_python_regex",
]

SCHEMA_VERSION: Final = 1
DEFAULT_RULES_PATH: Final[Path] = Path(__file__).with_name("default.toml")

_RULE_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_GROUP_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_REPEAT_RE: Final = re.compile(r"\{(\d+)(,(\d*))?\}")
_TOML_LINE_RE: Final = re.compile(r"at line (\d+)")
_MAX_REPEAT: Final = 5000


# -- errors ---------------------------------------------------------------------------------------


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


# -- the regex subset -----------------------------------------------------------------------------

# Escaped punctuation that means the same literal character in Python, Rust and Hyperscan.
_PUNCT_ESCAPES: Final = frozenset("\\.+*?()[]{}|^$-/#&~ \"':=,!@%;`")
_ESCAPES_OUTSIDE: Final = frozenset("bBAzdDwWsStnrfv")
_ESCAPES_IN_CLASS: Final = frozenset("dDwWsStnrfv")


def lint_pattern(pattern: str, *, strict: bool = False) -> list[str]:
    """Return the problems that keep ``pattern`` out of the portable regex subset (empty = fine).

    ``strict`` (used for the bundled rules) additionally requires every negated class to sit under a
    greedy ``*`` or ``+``: a bare ``[^...]`` consumes one *byte* of a multi-byte character in Rust
    but the whole character in Python, so match offsets could differ.
    """
    return _Linter(pattern, strict).run()


class _Linter:
    def __init__(self, pattern: str, strict: bool) -> None:
        self.p = pattern
        self.n = len(pattern)
        self.strict = strict
        self.problems: list[str] = []

    def problem(self, pos: int, message: str) -> None:
        self.problems.append(f"at offset {pos}: {message}")

    def run(self) -> list[str]:
        p = self.p
        if not p:
            return ["the pattern is empty"]
        if not p.isascii():
            self.problems.append(
                "the pattern must be ASCII (write non-ASCII bytes as \\xHH escapes)"
            )
        i = 4 if p.startswith("(?i)") else 0
        quantifiable = False
        while i < self.n:
            c = p[i]
            if c == "\\":
                i, negated = self.escape(i, in_class=False)
                if negated:
                    self.after_negated(i, f"\\{p[i - 1]}")
                quantifiable = True
            elif c == "[":
                i, negated = self.char_class(i)
                if negated:
                    self.after_negated(i, "a negated class")
                quantifiable = True
            elif c == "(":
                i = self.group(i)
                quantifiable = False
            elif c == ")":
                i += 1
                quantifiable = True
            elif c == ".":
                self.problem(
                    i, "'.' is not allowed: write an explicit ASCII class such as [A-Za-z0-9]"
                )
                i += 1
                quantifiable = True
            elif c in "^$":
                self.problem(
                    i, f"{c!r} is not allowed: use \\b, \\A, \\z or an explicit boundary class"
                )
                i += 1
                quantifiable = True
            elif c in "*+?{":
                if not quantifiable:
                    self.problem(i, f"{c!r} repeats nothing (escape a literal {c!r})")
                i = self.quantifier(i)
                quantifiable = False
            else:
                i += 1
                quantifiable = c != "|"
        return self.problems

    def escape(self, i: int, *, in_class: bool) -> tuple[int, bool]:
        """Lint the escape at ``i``; return (next index, whether it is a negated shorthand)."""
        p = self.p
        if i + 1 >= self.n:
            self.problem(i, "trailing backslash")
            return self.n, False
        e = p[i + 1]
        if e == "x":
            digits = p[i + 2 : i + 4]
            if len(digits) != 2 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                self.problem(i, "\\x must be followed by exactly two hex digits")
            return i + 4, False
        if e.isdigit():
            self.problem(i, f"backreferences and octal escapes (\\{e}) are not allowed")
        elif e in "gk":
            self.problem(i, f"backreferences (\\{e}) are not allowed")
        elif e in "pPNuU":
            self.problem(i, f"Unicode escapes (\\{e}) are not allowed: use ASCII classes")
        elif e == "Z":
            self.problem(i, "\\Z is not portable: write end of text as \\z")
        elif e.isalpha():
            allowed = _ESCAPES_IN_CLASS if in_class else _ESCAPES_OUTSIDE
            if e not in allowed:
                where = " inside a class" if in_class else ""
                self.problem(i, f"escape \\{e} is not supported by every engine{where}")
        elif e not in _PUNCT_ESCAPES:
            self.problem(i, f"escape \\{e} is not portable (Rust gives some escapes a meaning)")
        return i + 2, e in "DWS"

    def char_class(self, i: int) -> tuple[int, bool]:
        """Lint the class at ``i``; return (index after it, whether it matches non-ASCII)."""
        p = self.p
        start = i
        i += 1
        negated = False
        if i < self.n and p[i] == "^":
            negated = True
            i += 1
        if i < self.n and p[i] == "]":
            i += 1
        while i < self.n:
            c = p[i]
            if c == "]":
                return i + 1, negated
            if c == "\\":
                i, neg = self.escape(i, in_class=True)
                negated = negated or neg
                continue
            if c == "[":
                self.problem(i, "'[' inside a class (nested set or POSIX class): escape it as \\[")
            elif c in "&~|-" and i + 1 < self.n and p[i + 1] == c:
                self.problem(i, f"{c + c!r} inside a class is a set operation in Rust: escape one")
                i += 1
            i += 1
        self.problem(start, "unterminated character class")
        return self.n, negated

    def group(self, i: int) -> int:
        p = self.p
        if not p.startswith("(?", i):
            return i + 1
        if p.startswith("(?:", i):
            return i + 3
        if p.startswith("(?P<", i):
            end = p.find(">", i)
            name = p[i + 4 : end] if end != -1 else ""
            if end == -1 or not _GROUP_NAME_RE.match(name):
                self.problem(i, "bad group name")
                return i + 4
            return end + 1
        if p.startswith(("(?=", "(?!"), i):
            self.problem(i, f"look-ahead {p[i : i + 3]} is not allowed")
        elif p.startswith(("(?<=", "(?<!"), i):
            self.problem(i, f"look-behind {p[i : i + 4]} is not allowed")
        elif p.startswith("(?P=", i):
            self.problem(i, "backreferences ((?P=name)) are not allowed")
        elif p.startswith("(?#", i):
            self.problem(i, "comments (?#...) are not allowed")
        elif p.startswith("(?>", i):
            self.problem(i, "atomic groups (?>...) are not allowed")
        else:
            self.problem(i, "inline flags are only allowed as a leading (?i)")
        return i + 2

    def quantifier(self, i: int) -> int:
        p = self.p
        if p[i] == "{":
            m = _REPEAT_RE.match(p, i)
            if m is None:
                self.problem(i, "'{' must start {m}, {m,} or {m,n} (escape a literal brace as \\{)")
                return i + 1
            low = int(m.group(1))
            high = m.group(3)
            if high and int(high) < low:
                self.problem(i, f"bad repetition {m.group(0)}: max < min")
            if max(low, int(high or 0)) > _MAX_REPEAT:
                self.problem(i, f"repetition {m.group(0)} exceeds {_MAX_REPEAT}")
            i = m.end()
        else:
            i += 1
        if i < self.n and p[i] == "?":
            i += 1
        if i < self.n and p[i] == "+":
            self.problem(i, "possessive quantifiers are not allowed")
            i += 1
        return i

    def after_negated(self, j: int, what: str) -> None:
        nxt = self.p[j] if j < self.n else ""
        if nxt in ("{", "?"):
            self.problem(
                j,
                f"{what} under a bounded repetition: Rust bytes mode counts bytes where Python "
                "counts characters; use it only under * or +",
            )
        elif self.strict and (nxt not in ("*", "+") or self.p[j + 1 : j + 2] == "?"):
            self.problem(j, f"{what} must be under a greedy * or + (strict mode)")


def to_python_regex(pattern: str) -> str:
    """Translate a subset pattern for Python ``re``: ``\\z`` (end of text) becomes ``\\Z``."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            pair = pattern[i : i + 2]
            out.append("\\Z" if pair == "\\z" else pair)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


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
    """Secrets to ignore: a stopword in the lower-cased secret, or a regex that searches it."""

    stopwords: tuple[str, ...] = ()
    regexes: tuple[str, ...] = ()

    @cached_property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(to_python_regex(r), re.ASCII) for r in self.regexes)

    @cached_property
    def _stopword_bytes(self) -> tuple[bytes, ...]:
        return tuple(w.lower().encode("utf-8") for w in self.stopwords)

    def allows(self, secret: str) -> bool:
        """True when ``secret`` is allow-listed, i.e. the finding must be dropped. Stopwords are
        compared ASCII-case-insensitively on UTF-8 bytes (as the native engine does)."""
        if self.stopwords:
            lowered = secret.encode("utf-8", "surrogateescape").lower()
            if any(word in lowered for word in self._stopword_bytes):
                return True
        return any(p.search(secret) is not None for p in self.patterns)

    def __bool__(self) -> bool:
        return bool(self.stopwords or self.regexes)

    def to_dict(self) -> dict[str, Any]:
        return {"stopwords": list(self.stopwords), "regexes": list(self.regexes)}


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

    def keeps(self, secret: str, global_allowlist: Allowlist | None = None) -> bool:
        """Whether a finding with this ``secret`` survives the entropy floor and the allowlists."""
        if self.entropy is not None and shannon_entropy(secret) < self.entropy:
            return False
        if self.allowlist.allows(secret):
            return False
        return not (global_allowlist is not None and global_allowlist.allows(secret))

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
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    def fingerprint(self) -> str:
        """sha256 hex of :meth:`to_json`: equal fingerprints mean identical scanning behaviour."""
        return self._fingerprint

    @cached_property
    def _fingerprint(self) -> str:
        return hashlib.sha256(self.to_json().encode("ascii")).hexdigest()


# -- loading --------------------------------------------------------------------------------------


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
    text = importlib.resources.files(__name__).joinpath("default.toml").read_text("utf-8")
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
        stopwords=_unique(base.allowlist.stopwords + extra.allowlist.stopwords),
        regexes=_unique(base.allowlist.regexes + extra.allowlist.regexes),
    )
    return RuleSet(rules=base.rules + extra.rules, allowlist=allowlist)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# -- parsing --------------------------------------------------------------------------------------

_MEMFRAME_TOP: Final = frozenset({"schema", "allowlist", "rules"})
_MEMFRAME_RULE_REQUIRED: Final = ("id", "label", "regex", "keywords")
_MEMFRAME_RULE_OPTIONAL: Final = frozenset({"entropy", "secret_group", "allowlist"})
_MEMFRAME_ALLOWLIST: Final = frozenset({"stopwords", "regexes"})

_GITLEAKS_TOP: Final = frozenset(
    {"title", "description", "minVersion", "extend", "allowlist", "allowlists", "rules"}
)
_GITLEAKS_RULE: Final = frozenset(
    {
        "id",
        "description",
        "regex",
        "secretGroup",
        "entropy",
        "keywords",
        "tags",
        "allowlist",
        "allowlists",
        "path",
        "skipReport",
        "required",
    }
)
_GITLEAKS_ALLOWLIST: Final = frozenset(
    {
        "description",
        "condition",
        "regexTarget",
        "regexes",
        "stopwords",
        "paths",
        "commits",
        "targetRules",
    }
)


class _Parser:
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

    # memframe format ------------------------------------------------------------------------------

    def memframe(self, doc: dict[str, Any]) -> RuleSet:
        for key in doc:
            if key not in _MEMFRAME_TOP:
                raise self.error("unknown top-level field", key=key)
        schema = doc["schema"]
        if type(schema) is not int or schema != SCHEMA_VERSION:
            raise self.error(
                f"unsupported schema {schema!r} (expected {SCHEMA_VERSION})", key="schema"
            )
        if "rules" not in doc:
            raise self.error(
                "missing field (write rules = [] for a file with no rules)", key="rules"
            )
        raw_rules = doc["rules"]
        if not isinstance(raw_rules, list) or not all(isinstance(r, dict) for r in raw_rules):
            raise self.error("must be an array of tables ([[rules]])", key="rules")
        allowlist = Allowlist()
        if "allowlist" in doc:
            allowlist = self.memframe_allowlist(doc["allowlist"], None, "allowlist")
        rules = [self.memframe_rule(r, f"#{k + 1}") for k, r in enumerate(raw_rules)]
        return RuleSet(rules=self.unique_ids(rules), allowlist=allowlist)

    def memframe_rule(self, raw: dict[str, Any], position: str) -> Rule:
        rid = self.rule_id(raw, position)
        for key in raw:
            if key not in _MEMFRAME_RULE_OPTIONAL and key not in _MEMFRAME_RULE_REQUIRED:
                raise self.error("unknown field", rid, key)
        for key in _MEMFRAME_RULE_REQUIRED:
            if key not in raw:
                raise self.error("missing required field", rid, key)
        label = raw["label"]
        if not isinstance(label, str) or not label.strip():
            raise self.error("must be a non-empty string", rid, "label")
        keywords = self.keywords(raw["keywords"], rid, lower=False)
        if not keywords:
            raise self.error("at least one keyword is required (the prefilter)", rid, "keywords")
        group: int | None = None
        if "secret_group" in raw:
            group = raw["secret_group"]
            if type(group) is not int or group < 0:
                raise self.error("must be an integer >= 0", rid, "secret_group")
        allowlist = Allowlist()
        if "allowlist" in raw:
            allowlist = self.memframe_allowlist(raw["allowlist"], rid, "allowlist")
        return self.build(
            rid,
            label.strip(),
            raw["regex"],
            keywords,
            group,
            raw.get("entropy"),
            allowlist,
            gitleaks=False,
        )

    def memframe_allowlist(self, raw: Any, rid: str | None, key: str) -> Allowlist:
        if not isinstance(raw, dict):
            raise self.error("must be a table", rid, key)
        for sub in raw:
            if sub not in _MEMFRAME_ALLOWLIST:
                raise self.error("unknown field", rid, f"{key}.{sub}")
        stopwords = self.strings(raw.get("stopwords", []), rid, f"{key}.stopwords")
        for word in stopwords:
            if word != word.lower():
                raise self.error(f"stopword {word!r} must be lower-case", rid, f"{key}.stopwords")
        regexes = self.allowlist_regexes(raw.get("regexes", []), rid, f"{key}.regexes")
        return Allowlist(stopwords=stopwords, regexes=regexes)

    # gitleaks format ------------------------------------------------------------------------------

    def gitleaks(self, doc: dict[str, Any]) -> RuleSet:
        for key in doc:
            if key not in _GITLEAKS_TOP:
                raise self.error(
                    "unknown top-level field (not memframe nor gitleaks format)", key=key
                )
        if "extend" in doc:
            raise self.error(
                "[extend] is unsupported: memframe cannot load gitleaks' built-in "
                "rules; merge your rules with memframe's defaults instead",
                key="extend",
            )
        raw_rules = doc.get("rules", [])
        if not isinstance(raw_rules, list) or not all(isinstance(r, dict) for r in raw_rules):
            raise self.error("must be an array of tables ([[rules]])", key="rules")
        if raw_rules and all("label" in r for r in raw_rules):
            raise self.error(
                "missing field: memframe-format rule files start with schema = 1", key="schema"
            )
        rules = list(
            self.unique_ids([self.gitleaks_rule(r, f"#{k + 1}") for k, r in enumerate(raw_rules)])
        )
        stopwords: list[str] = []
        regexes: list[str] = []
        tables: list[tuple[str, Any]] = []
        if "allowlist" in doc:
            tables.append(("allowlist", doc["allowlist"]))
        if "allowlists" in doc:
            tables.extend(self.table_list(doc["allowlists"], None, "allowlists"))
        targeted: dict[str, tuple[list[str], list[str]]] = {}
        known = {r.id for r in rules}
        for key, table in tables:
            words, pats, targets = self.gitleaks_allowlist(table, None, key, top_level=True)
            if targets:
                for target in targets:
                    if target not in known:
                        raise self.error(
                            f"targetRules names unknown rule {target!r}", key=f"{key}.targetRules"
                        )
                    bucket = targeted.setdefault(target, ([], []))
                    bucket[0].extend(words)
                    bucket[1].extend(pats)
            else:
                stopwords.extend(words)
                regexes.extend(pats)
        if targeted:
            rules = [
                self.extend_allowlist(r, *targeted[r.id]) if r.id in targeted else r for r in rules
            ]
        return RuleSet(
            rules=tuple(rules), allowlist=Allowlist(_unique(stopwords), _unique(regexes))
        )

    def gitleaks_rule(self, raw: dict[str, Any], position: str) -> Rule:
        rid = self.rule_id(raw, position)
        for key in raw:
            if key not in _GITLEAKS_RULE:
                raise self.error("unknown field", rid, key)
        if "required" in raw:
            raise self.error(
                "composite rules ([[rules.required]]) are unsupported", rid, "required"
            )
        if raw.get("skipReport"):
            raise self.error("skipReport is unsupported", rid, "skipReport")
        if "path" in raw:
            raise self.error(
                "path-based rules are unsupported: memframe scans text, not paths", rid, "path"
            )
        if "regex" not in raw:
            raise self.error("missing required field", rid, "regex")
        label = raw.get("description", rid)
        if not isinstance(label, str):
            raise self.error("must be a string", rid, "description")
        label = label.strip() or rid
        if "tags" in raw:
            self.strings(raw["tags"], rid, "tags")
        keywords = self.keywords(raw.get("keywords", []), rid, lower=True)
        group: int | None = None
        if "secretGroup" in raw:
            group = raw["secretGroup"]
            if type(group) is not int or group < 0:
                raise self.error("must be an integer >= 0", rid, "secretGroup")
        entropy = raw.get("entropy")
        if entropy == 0 and type(entropy) in (int, float):
            entropy = None
        tables: list[tuple[str, Any]] = []
        if "allowlist" in raw:
            tables.append(("allowlist", raw["allowlist"]))
        if "allowlists" in raw:
            tables.extend(self.table_list(raw["allowlists"], rid, "allowlists"))
        stopwords: list[str] = []
        regexes: list[str] = []
        for key, table in tables:
            words, pats, _ = self.gitleaks_allowlist(table, rid, key, top_level=False)
            stopwords.extend(words)
            regexes.extend(pats)
        allowlist = Allowlist(_unique(stopwords), _unique(regexes))
        return self.build(
            rid, label, raw["regex"], keywords, group, entropy, allowlist, gitleaks=True
        )

    def table_list(self, raw: Any, rid: str | None, key: str) -> list[tuple[str, Any]]:
        if not isinstance(raw, list):
            raise self.error("must be an array of tables", rid, key)
        return [(f"{key}[{k}]", t) for k, t in enumerate(raw)]

    def gitleaks_allowlist(
        self, raw: Any, rid: str | None, key: str, *, top_level: bool
    ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        if not isinstance(raw, dict):
            raise self.error("must be a table", rid, key)
        for sub in raw:
            if sub not in _GITLEAKS_ALLOWLIST or (sub == "targetRules" and not top_level):
                raise self.error("unknown field", rid, f"{key}.{sub}")
        condition = raw.get("condition", "OR")
        if not isinstance(condition, str) or condition.upper() != "OR":
            raise self.error(
                f"condition {condition!r} is unsupported (only the default OR)",
                rid,
                f"{key}.condition",
            )
        target = raw.get("regexTarget", "secret")
        if target != "secret":
            raise self.error(
                f"regexTarget {target!r} is unsupported (only the default, secret)",
                rid,
                f"{key}.regexTarget",
            )
        for unsupported in ("paths", "commits"):
            if raw.get(unsupported):
                raise self.error(
                    f"{unsupported} allowlists are unsupported: memframe scans text",
                    rid,
                    f"{key}.{unsupported}",
                )
        if "description" in raw and not isinstance(raw["description"], str):
            raise self.error("must be a string", rid, f"{key}.description")
        words = tuple(
            w.lower() for w in self.strings(raw.get("stopwords", []), rid, f"{key}.stopwords")
        )
        pats = self.allowlist_regexes(raw.get("regexes", []), rid, f"{key}.regexes")
        targets = self.strings(raw.get("targetRules", []), rid, f"{key}.targetRules")
        return words, pats, targets

    @staticmethod
    def extend_allowlist(rule: Rule, stopwords: list[str], regexes: list[str]) -> Rule:
        allowlist = Allowlist(
            _unique(rule.allowlist.stopwords + tuple(stopwords)),
            _unique(rule.allowlist.regexes + tuple(regexes)),
        )
        return Rule(
            id=rule.id,
            label=rule.label,
            regex=rule.regex,
            keywords=rule.keywords,
            secret_group=rule.secret_group,
            entropy=rule.entropy,
            allowlist=allowlist,
            source=rule.source,
        )

    # shared ---------------------------------------------------------------------------------------

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
        return _unique(out)

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
