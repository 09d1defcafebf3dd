"""Secret rules on independent examples: recall on covered and common types, FPs, stand-ins.

Issue 15's "Done when": on independent realistic examples (not written for memframe), at least
98% of the secrets of the types memframe has a rule for are found, at least 90% of the issue's
common types, at most 1% of the negatives and no documented or obviously contrived placeholder is
flagged. The examples live in ``tests/data/external/<source>/`` with their licence and README:

- ``gitleaks`` (MIT): the ``tps``/``fps`` strings of gitleaks' rule definitions
  (``examples.toml``, verbatim) and the values its tests draw with ``secrets.NewSecret``,
  drawn again here from the format its source states (``generated.json``, from ``spec.toml``).

Each example is a positive (a realistic secret of one external rule's type), a negative (no
secret), or a placeholder (a documented or obviously contrived stand-in); examples that are not
realistic secrets of their type per the provider's documentation are kept in the data with the
reason and left out of every figure.

External rule ids map to memframe's (``MAPPING``: the same id where both use gitleaks' naming);
an id mapped to ``None`` is a type memframe has no rule for. ``COMMON`` lists the external ids
of the types the issue names. A positive is *found* when a finding of any rule overlaps its
secret (or, when the example does not say which substring is the secret, when anything is
found); a negative or placeholder is *flagged* when anything is found in it.

Figures are counts against labels, so the bench is deterministic. Every engine that loads is
run; the figures come from the default engine and the others must find exactly the same.
``python -m benches --only rules_quality`` prints the table; ``python -m benches.rules_quality
--misses`` lists every miss, false positive and flagged placeholder.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benches.harness import BenchResult

NAME = "rules_quality"
DETERMINISTIC = True

REPO = Path(__file__).resolve().parent.parent
EXTERNAL = REPO / "tests" / "data" / "external"

# Issue 15's "Done when" targets (percentages; placeholders as a count), shown beside each figure.
# The 168-rule set (2026-12-02) reaches all four: covered 98.6%, common 97.4%, 0 placeholders, and
# negatives flagged 0.75% (1 of 134) once generic-api-key's match allowlist drops CSRF/XSRF and
# public token names (publicToken, csrf-token); the one left is a hex apiKey that is public in its
# source. The enforced floors are the levels reached, against regressions (the bench is
# deterministic). Raise them as rules improve. (Before: 164 rules, 91.7%, 83.0%, 7.5%, 21.)
TARGET_COVERED = 98.0
TARGET_COMMON = 90.0
TARGET_FP = 1.0
TARGET_PLACEHOLDERS = 0
FLOOR_COVERED = 98.5
FLOOR_COMMON = 97.3
CEILING_FP = 0.8
CEILING_PLACEHOLDERS = 0

# External (gitleaks) rule id -> memframe rule id; None: memframe has no rule for the type.
# Ids missing here are assumed to be shared (same name in both); `unmapped_ids` reports any id
# that is neither here nor a memframe rule.
MAPPING: dict[str, str | None] = {
    "gitlab-pat-routable": "gitlab-pat",
    "gitlab-ptt": "gitlab-pipeline-trigger-token",
    "gitlab-rrt": "gitlab-runner-registration-token",
    "gitlab-runner-authentication-token": "gitlab-runner-token",
    "gitlab-runner-authentication-token-routable": "gitlab-runner-token",
    "hashicorp-tf-api-token": "terraform-cloud-api-token",
    "hashicorp-tf-password": "generic-password",
    "database-password": "generic-password",
    "slack-legacy-bot-token": None,
    "sentry-access-token": None,
    "new-relic-user-api-id": None,
    "discord-api-token": None,
    "discord-client-id": None,
    "discord-client-secret": None,
    "linear-client-secret": None,
    "mailgun-pub-key": None,
    "mailgun-signing-key": None,
    "mapbox-api-token": None,
    "gcp-service-account": "gcp-service-account-key",
}

# External ids of the types issue 15 lists as common (its "Real formats missed" paragraph and
# deliverable 1): DB/queue URLs and passwords, JWTs, generic assignments, other LLM providers,
# Google AI keys, Kubernetes secrets, deploy platforms, Linear/Notion/Atlassian, chat bots,
# mail, monitoring, secret managers, Mapbox, GitLab's other prefixes, Shopify's other kinds,
# Vault, OpenAI's project/service keys.
COMMON: frozenset[str] = frozenset(
    {
        "database-password",
        "hashicorp-tf-password",
        "jwt",
        "generic-api-key",
        "groq-api-key",
        "langsmith-api-key",
        "gcp-api-key",
        "openai-api-key",
        "kubernetes-secret-yaml",
        "cloudflare-api-key",
        "cloudflare-global-api-key",
        "cloudflare-origin-ca-key",
        "heroku-api-key",
        "heroku-api-key-v2",
        "flyio-access-token",
        "linear-api-key",
        "atlassian-api-token",
        "telegram-bot-api-token",
        "mailgun-private-api-token",
        "mailchimp-api-key",
        "datadog-access-token",
        "new-relic-user-api-key",
        "new-relic-browser-api-token",
        "new-relic-insert-key",
        "doppler-api-token",
        "1password-service-account-token",
        "1password-secret-key",
        "gitlab-cicd-job-token",
        "gitlab-deploy-token",
        "gitlab-feature-flag-client-token",
        "gitlab-feed-token",
        "gitlab-incoming-mail-token",
        "gitlab-kubernetes-agent-token",
        "gitlab-oauth-app-secret",
        "gitlab-pat-routable",
        "gitlab-rrt",
        "gitlab-runner-authentication-token",
        "gitlab-runner-authentication-token-routable",
        "gitlab-scim-token",
        "gitlab-session-cookie",
        "shopify-custom-access-token",
        "shopify-private-app-access-token",
        "shopify-shared-secret",
        "vault-service-token",
        "vault-batch-token",
    }
)

COMMON_ROW = "recall: issue's common types"

POSITIVE = "positive"
NEGATIVE = "negative"
PLACEHOLDER = "placeholder"


@dataclass(frozen=True)
class Example:
    source: str  # tests/data/external/<source>
    rule: str  # the external rule id
    kind: str  # positive / negative / placeholder
    text: str
    file: str
    commit: str
    secret: str | None = None  # the secret's text, when the example says
    generated: bool = False
    excluded: str | None = None  # why it is left out of the figures


@dataclass
class Outcome:
    """What one engine made of the examples."""

    engine: str
    hits: dict[int, list[tuple[str, int, int]]] = field(default_factory=dict)


def _literal_examples(source: str, path: Path) -> Iterable[Example]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    for group in data["group"]:
        base = {"source": source, "file": group["file"], "commit": group["commit"]}
        for key, kind in (("positives", POSITIVE), ("negatives", NEGATIVE)):
            for text in group.get(key, ()):
                yield Example(rule=group["rule"], kind=kind, text=text, **base)
        for text in group.get("placeholders", ()):
            yield Example(rule=group["rule"], kind=PLACEHOLDER, text=text, **base)
        for item in group.get("excluded", ()):
            yield Example(
                rule=item.get("rule", group["rule"]),
                kind=item["kind"],
                text=item["text"],
                excluded=item["reason"],
                **base,
            )


def _generated_examples(source: str, path: Path) -> Iterable[Example]:
    for item in json.loads(path.read_text(encoding="utf-8"))["examples"]:
        yield Example(
            source=source,
            rule=item["rule"],
            kind=item["kind"],
            text=item["text"],
            file=item["file"],
            commit=item["commit"],
            secret=item.get("secret"),
            generated=True,
            excluded=item.get("excluded"),
        )


def load_examples(root: Path = EXTERNAL) -> list[Example]:
    """Every example of every source under ``root`` (excluded ones included, marked)."""
    examples: list[Example] = []
    for source_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        literal = source_dir / "examples.toml"
        generated = source_dir / "generated.json"
        if literal.exists():
            examples.extend(_literal_examples(source_dir.name, literal))
        if generated.exists():
            examples.extend(_generated_examples(source_dir.name, generated))
    return examples


def memframe_rule(external: str, known: set[str]) -> str | None:
    if external in MAPPING:
        return MAPPING[external]
    return external if external in known else None


def unmapped_ids(examples: Iterable[Example], known: set[str]) -> list[str]:
    """External ids that are neither mapped nor a memframe rule id (a typo, or a new type)."""
    return sorted({e.rule for e in examples if e.rule not in MAPPING and e.rule not in known})


def scan_all(examples: Sequence[Example], engine: str) -> Outcome:
    from memframe.scanner import SecretScanner

    scanner = SecretScanner(engine=engine)
    outcome = Outcome(engine)
    for i, example in enumerate(examples):
        outcome.hits[i] = [
            (f.rule_id, f.secret_start, f.secret_end) for f in scanner.find(example.text)
        ]
    return outcome


def found(example: Example, hits: list[tuple[str, int, int]]) -> bool:
    if not hits:
        return False
    if example.secret is None:
        return True
    start = example.text.find(example.secret)
    if start < 0:  # the text escapes the secret (e.g. inside JSON): any finding counts
        return True
    end = start + len(example.secret)
    return any(s < end and start < e for _, s, e in hits)


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def evaluate(examples: Sequence[Example], outcome: Outcome, known: set[str]) -> dict[str, Any]:
    """The figures and the lists behind them, for one engine's outcome."""
    tally: Counter[str] = Counter()
    by_rule: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[dict[str, Any]] = []
    false_positives: list[dict[str, Any]] = []
    placeholders: list[dict[str, Any]] = []
    uncovered_missed: list[dict[str, Any]] = []
    for i, example in enumerate(examples):
        if example.excluded:
            tally["excluded"] += 1
            continue
        hits = outcome.hits[i]
        rules_hit = sorted({r for r, _, _ in hits})
        entry = {
            "rule": example.rule,
            "memframe_rule": memframe_rule(example.rule, known),
            "text": example.text,
            "found_by": rules_hit,
            "source": example.source,
            "file": example.file,
            "generated": example.generated,
        }
        if example.kind == POSITIVE:
            target = memframe_rule(example.rule, known)
            ok = found(example, hits)
            group = "covered" if target is not None else "uncovered"
            tally[f"{group}_total"] += 1
            tally[f"{group}_found"] += ok
            by_rule[example.rule]["total"] += 1
            by_rule[example.rule]["found"] += ok
            if target is not None and target in rules_hit:
                tally["covered_same_rule"] += 1
            if example.rule in COMMON:
                tally["common_total"] += 1
                tally["common_found"] += ok
            if not ok:
                (misses if target is not None else uncovered_missed).append(entry)
        elif example.kind == NEGATIVE:
            tally["negatives"] += 1
            if hits:
                tally["false_positives"] += 1
                false_positives.append(entry)
        else:
            tally["placeholders"] += 1
            if hits:
                tally["placeholders_flagged"] += 1
                placeholders.append(entry)
    return {
        "covered_recall": _pct(tally["covered_found"], tally["covered_total"]),
        "common_recall": _pct(tally["common_found"], tally["common_total"]),
        "fp_rate": _pct(tally["false_positives"], tally["negatives"]),
        "uncovered_found": _pct(tally["uncovered_found"], tally["uncovered_total"]),
        "tally": dict(tally),
        "by_rule": {rule: dict(c) for rule, c in sorted(by_rule.items())},
        "misses": misses,
        "false_positives": false_positives,
        "placeholders_flagged": placeholders,
        "uncovered_missed": uncovered_missed,
    }


def engines_to_run() -> list[str]:
    from memframe import _backend

    default = _backend.BACKEND
    others = [e for e in _backend.available_engines() if e != default]
    return [default, *others]


def run(quick: bool) -> BenchResult:
    from memframe.rules import load_rules

    known = {r.id for r in load_rules()}
    examples = load_examples()
    engines = engines_to_run()
    outcomes = {engine: scan_all(examples, engine) for engine in engines}
    default = engines[0]
    figures = evaluate(examples, outcomes[default], known)
    tally = figures["tally"]

    result = BenchResult(NAME)
    result.params = {
        "engines": engines,
        "figures_from": default,
        "rules": len(known),
        "sources": sorted({e.source for e in examples}),
        "examples": len(examples),
    }
    result.add(
        "recall: covered types",
        found=tally.get("covered_found", 0),
        total=tally.get("covered_total", 0),
        pct=figures["covered_recall"],
        floor=f">= {FLOOR_COVERED} (target {TARGET_COVERED})",
    )
    result.add(
        COMMON_ROW,
        found=tally.get("common_found", 0),
        total=tally.get("common_total", 0),
        pct=figures["common_recall"],
        floor=f">= {FLOOR_COMMON} (target {TARGET_COMMON})",
    )
    result.add(
        "negatives flagged",
        found=tally.get("false_positives", 0),
        total=tally.get("negatives", 0),
        pct=figures["fp_rate"],
        floor=f"<= {CEILING_FP} (target {TARGET_FP})",
    )
    result.add(
        "placeholders flagged",
        found=tally.get("placeholders_flagged", 0),
        total=tally.get("placeholders", 0),
        pct=_pct(tally.get("placeholders_flagged", 0), tally.get("placeholders", 0)),
        floor=f"<= {CEILING_PLACEHOLDERS} (target {TARGET_PLACEHOLDERS})",
    )
    result.add(
        "info: uncovered types found anyway",
        found=tally.get("uncovered_found", 0),
        total=tally.get("uncovered_total", 0),
        pct=figures["uncovered_found"],
        floor="",
    )
    result.add(
        "info: covered, found by the mapped rule",
        found=tally.get("covered_same_rule", 0),
        total=tally.get("covered_total", 0),
        pct=_pct(tally.get("covered_same_rule", 0), tally.get("covered_total", 0)),
        floor="",
    )
    disagree = {
        engine: sum(outcome.hits[i] != outcomes[default].hits[i] for i in range(len(examples)))
        for engine, outcome in outcomes.items()
        if engine != default
    }
    for engine, count in disagree.items():
        result.add(
            f"engines: {engine} differs from {default}",
            found=count,
            total=len(examples),
            pct=_pct(count, len(examples)),
            floor="<= 0",
        )
    result.add("info: excluded (not realistic, reason in the data)", found=tally.get("excluded", 0))
    unmapped = unmapped_ids(examples, known)
    if unmapped:
        result.notes.append(f"external ids neither mapped nor memframe ids: {', '.join(unmapped)}")
    for kind, items in (
        ("missed", figures["misses"]),
        ("false positive", figures["false_positives"]),
        ("placeholder flagged", figures["placeholders_flagged"]),
    ):
        for item in items:
            result.notes.append(f"{kind}: {item['rule']}: {item['text']!r} {item['found_by']}")
    result.details = {
        "figures": figures,
        "engine_differences": {
            engine: [
                {
                    "text": examples[i].text,
                    default: outcomes[default].hits[i],
                    engine: outcome.hits[i],
                }
                for i in range(len(examples))
                if outcome.hits[i] != outcomes[default].hits[i]
            ]
            for engine, outcome in outcomes.items()
            if engine != default
        },
    }
    return result


def check(result: BenchResult) -> list[str]:
    broken: list[str] = []
    rows = result.rows

    def pct(row: str) -> float:
        value = rows.get(row, {}).get("pct")
        return float(value) if isinstance(value, (int, float)) else 0.0

    if pct("recall: covered types") < FLOOR_COVERED:
        broken.append(
            f"rules_quality: covered recall {pct('recall: covered types')}% < {FLOOR_COVERED}%"
        )
    common = pct(COMMON_ROW)
    if common < FLOOR_COMMON:
        broken.append(f"rules_quality: common-type recall {common}% < {FLOOR_COMMON}%")
    if pct("negatives flagged") > CEILING_FP:
        broken.append(
            f"rules_quality: {pct('negatives flagged')}% of negatives flagged > {CEILING_FP}%"
        )
    flagged = rows.get("placeholders flagged", {}).get("found", 0)
    if isinstance(flagged, int) and flagged > CEILING_PLACEHOLDERS:
        broken.append(f"rules_quality: {flagged} placeholder(s) flagged > {CEILING_PLACEHOLDERS}")
    for row, metrics in rows.items():
        if row.startswith("engines:") and metrics.get("found"):
            broken.append(f"rules_quality: {row}: {metrics['found']} example(s)")
    return broken


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benches.rules_quality")
    parser.add_argument("--misses", action="store_true", help="list misses, FPs and placeholders")
    parser.add_argument("--json", type=Path, help="write every figure and list here")
    args = parser.parse_args(argv)
    result = run(quick=False)
    for row, metrics in result.rows.items():
        print(f"{row:55} {metrics}")
    figures = result.details["figures"]
    if args.misses:
        for title, key in (
            ("missed (covered types)", "misses"),
            ("false positives", "false_positives"),
            ("placeholders flagged", "placeholders_flagged"),
            ("uncovered types missed", "uncovered_missed"),
        ):
            print(f"\n{title}: {len(figures[key])}")
            for item in figures[key]:
                mapped = f"{item['rule']} -> {item['memframe_rule']}"
                print(f"  {mapped}: {item['text']!r} {item['found_by']}")
    if args.json:
        args.json.write_text(json.dumps(result.to_json(), indent=1, ensure_ascii=False) + "\n")
    violations = check(result)
    for violation in violations:
        print(f"FLOOR BROKEN: {violation}", file=sys.stderr)
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
