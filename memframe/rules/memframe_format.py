"""The memframe rule-file format (``schema = 1``)."""

from __future__ import annotations

from typing import Any, Final

from memframe.rules.model import SCHEMA_VERSION, Allowlist, Rule, RuleSet
from memframe.rules.parsing import ParserBase

__all__ = ["MemframeFormat"]

_MEMFRAME_TOP: Final = frozenset({"schema", "allowlist", "rules"})
_MEMFRAME_RULE_REQUIRED: Final = ("id", "label", "regex", "keywords")
_MEMFRAME_RULE_OPTIONAL: Final = frozenset({"entropy", "secret_group", "allowlist"})
_MEMFRAME_ALLOWLIST: Final = frozenset({"stopwords", "regexes", "match_regexes"})


class MemframeFormat(ParserBase):
    """Reads memframe-format documents."""

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
        match_regexes = self.allowlist_regexes(
            raw.get("match_regexes", []), rid, f"{key}.match_regexes"
        )
        return Allowlist(stopwords=stopwords, regexes=regexes, match_regexes=match_regexes)
