"""Importing gitleaks configs: the subset of gitleaks' format memframe can honour, and clear
errors for the rest (composite rules, path rules, ``[extend]``, non-OR conditions)."""

from __future__ import annotations

from typing import Any, Final

from memframe.rules.model import Allowlist, Rule, RuleSet
from memframe.rules.parsing import ParserBase

__all__ = ["GitleaksFormat"]

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


class GitleaksFormat(ParserBase):
    """Reads gitleaks-format configs."""

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
        tables: list[tuple[str, Any]] = []
        if "allowlist" in doc:
            tables.append(("allowlist", doc["allowlist"]))
        if "allowlists" in doc:
            tables.extend(self.table_list(doc["allowlists"], None, "allowlists"))
        allowlist = Allowlist()
        targeted: dict[str, Allowlist] = {}
        known = {r.id for r in rules}
        for key, table in tables:
            found, targets = self.gitleaks_allowlist(table, None, key, top_level=True)
            if targets:
                for target in targets:
                    if target not in known:
                        raise self.error(
                            f"targetRules names unknown rule {target!r}", key=f"{key}.targetRules"
                        )
                    targeted[target] = targeted.get(target, Allowlist()).merged(found)
            else:
                allowlist = allowlist.merged(found)
        if targeted:
            rules = [
                self.extend_allowlist(r, targeted[r.id]) if r.id in targeted else r for r in rules
            ]
        return RuleSet(rules=tuple(rules), allowlist=allowlist)

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
        allowlist = Allowlist()
        for key, table in tables:
            found, _ = self.gitleaks_allowlist(table, rid, key, top_level=False)
            allowlist = allowlist.merged(found)
        return self.build(
            rid, label, raw["regex"], keywords, group, entropy, allowlist, gitleaks=True
        )

    def table_list(self, raw: Any, rid: str | None, key: str) -> list[tuple[str, Any]]:
        if not isinstance(raw, list):
            raise self.error("must be an array of tables", rid, key)
        return [(f"{key}[{k}]", t) for k, t in enumerate(raw)]

    def gitleaks_allowlist(
        self, raw: Any, rid: str | None, key: str, *, top_level: bool
    ) -> tuple[Allowlist, tuple[str, ...]]:
        """One gitleaks allowlist table as an :class:`Allowlist`, and its ``targetRules``."""
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
        if target not in ("secret", "match"):
            raise self.error(
                f"regexTarget {target!r} is unsupported (only secret, the default, and match)",
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
        if target == "match":
            return Allowlist(stopwords=words, match_regexes=pats), targets
        return Allowlist(stopwords=words, regexes=pats), targets

    @staticmethod
    def extend_allowlist(rule: Rule, extra: Allowlist) -> Rule:
        allowlist = rule.allowlist.merged(extra)
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
