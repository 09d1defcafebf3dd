"""Secret-scanning rules: the one rule file that every scan engine reads.

The bundled ``default.toml`` holds the default rules (docs/scanning.md: the 47 of the original
design, then issue 15's); users add rules from their own file (memframe format, ``schema = 1``)
or from a gitleaks-format config. Everything here is pure Python and only *loads and
validates*; the engines (native, hyperscan, python) implement the semantics below identically.

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

The package is split by concern: :mod:`~memframe.rules.model` (the data model and entropy),
:mod:`~memframe.rules.lint` (the portable regex subset), :mod:`~memframe.rules.memframe_format`
and :mod:`~memframe.rules.gitleaks` (the two file formats, on the shared checks of
:mod:`~memframe.rules.parsing`) and :mod:`~memframe.rules.loading` (files, the bundled set,
merging). Every public name is importable from ``memframe.rules``.
"""

from __future__ import annotations

from memframe.rules.lint import lint_pattern, to_python_regex
from memframe.rules.loading import (
    DEFAULT_RULES_PATH,
    load_rule_file,
    load_rules,
    merge,
    parse_rules,
    rule_from_mapping,
)
from memframe.rules.model import (
    SCHEMA_VERSION,
    Allowlist,
    Rule,
    RuleError,
    RuleSet,
    shannon_entropy,
)

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
