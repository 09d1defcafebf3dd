"""memframe.rules: the bundled rule set, its test vectors, linear time, and the rule-file loader.

The vectors (tests/vectors/<rule-id>.toml) are checked with a tiny reference scanner written here,
on plain ``re`` and independent of the loader's helpers: keyword prefilter on the lower-cased text,
leftmost-first non-overlapping matches, the secret group, the entropy floor, the rule and global
allowlists. That is the contract every engine (native, hyperscan, python) implements.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memframe.rules as rules_mod
from memframe import _backend
from memframe.rules import (
    DEFAULT_RULES_PATH,
    Allowlist,
    Rule,
    RuleError,
    RuleSet,
    lint_pattern,
    load_rule_file,
    load_rules,
    merge,
    parse_rules,
    rule_from_mapping,
    shannon_entropy,
    to_python_regex,
)
from memframe.scanner import SecretScanner

try:
    import hyperscan
except ImportError:  # pragma: no cover - hyperscan is a dev dependency
    hyperscan = None

SPEC_IDS = (
    # cloud
    "aws-access-token",
    "aws-secret-access-key",
    "aws-bedrock-api-key",
    "gcp-api-key",
    "gcp-service-account-key",
    "azure-ad-client-secret",
    "azure-storage-account-key",
    "digitalocean-pat",
    "digitalocean-access-token",
    "digitalocean-refresh-token",
    # AI APIs
    "anthropic-api-key",
    "anthropic-admin-api-key",
    "openai-api-key",
    "huggingface-access-token",
    "huggingface-organization-api-token",
    # version control
    "github-pat",
    "github-fine-grained-pat",
    "github-oauth",
    "github-app-token",
    "github-refresh-token",
    "gitlab-pat",
    "gitlab-pipeline-trigger-token",
    "gitlab-runner-token",
    "gitlab-deploy-token",
    # communication
    "slack-bot-token",
    "slack-user-token",
    "slack-app-token",
    "slack-webhook-url",
    "twilio-api-key",
    "sendgrid-api-token",
    # developer tools
    "npm-access-token",
    "pypi-upload-token",
    "databricks-api-token",
    "terraform-cloud-api-token",
    "vault-service-token",
    "pulumi-api-token",
    "postman-api-token",
    # observability
    "grafana-api-key",
    "grafana-cloud-api-token",
    "grafana-service-account-token",
    "sentry-user-token",
    "sentry-org-token",
    # payments
    "stripe-access-token",
    "shopify-access-token",
    "shopify-shared-secret",
    # cryptography
    "private-key",
    "age-secret-key",
)

VECTORS_DIR = Path(__file__).resolve().parent.parent / "vectors"
CONTEXTS = {"markdown", "env", "json", "yaml", "shell", "code", "log"}
DEFAULT = load_rules()
MB = 1_000_000


# -- the reference scanner ------------------------------------------------------------------------


def _python_pattern(regex: str) -> re.Pattern[str]:
    # Pairwise over escapes, so an escaped backslash followed by 'z' stays literal.
    translated = re.sub(r"\\(.)", lambda m: r"\Z" if m.group(1) == "z" else m.group(0), regex)
    return re.compile(translated, re.ASCII)


def _entropy(secret: str) -> float:
    data = secret.encode()
    counts = Counter(data)
    return -sum(c / len(data) * math.log2(c / len(data)) for c in counts.values())


def _allowed(secret: str, stopwords: tuple[str, ...], regexes: tuple[str, ...]) -> bool:
    low = secret.lower()
    return any(w in low for w in stopwords) or any(
        _python_pattern(r).search(secret) for r in regexes
    )


@dataclass(frozen=True)
class Hit:
    rule_id: str
    secret: str
    start: int
    end: int
    matched: str


def reference_find(ruleset: RuleSet, text: str, *, only: str | None = None) -> list[Hit]:
    low = text.lower()
    hits: list[Hit] = []
    for rule in ruleset.rules:
        if only is not None and rule.id != only:
            continue
        if rule.keywords and not any(k in low for k in rule.keywords):
            continue
        for m in _python_pattern(rule.regex).finditer(text):
            secret = m.group(rule.secret_group)
            if rule.entropy is not None and _entropy(secret) < rule.entropy:
                continue
            if _allowed(secret, rule.allowlist.stopwords, rule.allowlist.regexes):
                continue
            if _allowed(secret, ruleset.allowlist.stopwords, ruleset.allowlist.regexes):
                continue
            # gitleaks' regexTarget = "match": searched in the whole match
            if _allowed(
                m.group(0), (), rule.allowlist.match_regexes + ruleset.allowlist.match_regexes
            ):
                continue
            hits.append(Hit(rule.id, secret, m.start(), m.end(), m.group(0)))
    return hits


# -- vectors --------------------------------------------------------------------------------------


def _load_vectors() -> dict[str, dict[str, list[dict[str, str]]]]:
    out = {}
    for path in sorted(VECTORS_DIR.glob("*.toml")):
        with path.open("rb") as fh:
            out[path.stem] = tomllib.load(fh)
    return out


VECTORS = _load_vectors()
POSITIVES = [
    pytest.param(rid, k, v, id=f"{rid}-{k}")
    for rid, doc in VECTORS.items()
    for k, v in enumerate(doc.get("positive", []))
]
NEGATIVES = [
    pytest.param(rid, k, v, id=f"{rid}-{k}")
    for rid, doc in VECTORS.items()
    for k, v in enumerate(doc.get("negative", []))
]


def _first_positive(rule_id: str) -> tuple[str, re.Match[str]]:
    """A positive vector of the rule and the regex match that carries its secret."""
    vec = VECTORS[rule_id]["positive"][0]
    rule = DEFAULT.by_id()[rule_id]
    for m in _python_pattern(rule.regex).finditer(vec["text"]):
        if m.group(rule.secret_group) == vec["secret"]:
            return vec["text"], m
    raise AssertionError(f"{rule_id}: first positive does not match")


# -- the bundled rule set -------------------------------------------------------------------------


def test_default_ids_start_with_the_spec_ids_in_order() -> None:
    # The original design's 47 rules come first, in its order; issue 15's follow. Only the
    # floor is pinned.
    assert len(SPEC_IDS) == 47
    assert DEFAULT.ids()[: len(SPEC_IDS)] == SPEC_IDS
    assert len(DEFAULT) >= 150
    assert len(set(DEFAULT.ids())) == len(DEFAULT)
    assert list(DEFAULT.by_id()) == list(DEFAULT.ids())


def test_default_rules_path_is_the_bundled_file() -> None:
    assert DEFAULT_RULES_PATH.is_file()
    reloaded = load_rule_file(DEFAULT_RULES_PATH, check_hyperscan=False)
    assert reloaded.fingerprint() == DEFAULT.fingerprint()
    assert load_rules() is DEFAULT  # parsed once per process


@pytest.mark.parametrize("rule", DEFAULT.rules, ids=DEFAULT.ids())
def test_default_rule_is_well_formed(rule: Rule) -> None:
    assert rule.label.strip() == rule.label and rule.label
    assert rule.keywords, "every bundled rule has keywords"
    assert all(k == k.lower() and k.isascii() and k for k in rule.keywords)
    assert rule.secret_group == 1
    assert rule.entropy is not None and 0 < rule.entropy <= 8
    assert lint_pattern(rule.regex, strict=True) == []
    compiled = re.compile(to_python_regex(rule.regex), re.ASCII)
    assert compiled.groups == 1
    assert rule.pattern.pattern == compiled.pattern
    for pat in rule.allowlist.regexes:
        assert lint_pattern(pat, strict=True) == []


def test_global_allowlist_is_well_formed() -> None:
    al = DEFAULT.allowlist
    assert "example" in al.stopwords
    assert all(w == w.lower() for w in al.stopwords)
    for pat in al.regexes:
        assert lint_pattern(pat, strict=True) == []
    for placeholder in (
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "sk_live_YOUR_TOKEN_HERE",
        "your_token_here",
        "****************",
    ):
        assert al.allows(placeholder), placeholder


@pytest.mark.skipif(hyperscan is None, reason="hyperscan is not installed")
def test_default_rules_compile_in_hyperscan() -> None:
    patterns = [r.regex.encode() for r in DEFAULT.rules]
    for rule in DEFAULT.rules:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[rule.regex.encode()], ids=[0], elements=1, flags=[0])
    ids = list(range(len(patterns)))
    # One database for all rules, without start-of-match (docs/scanning.md: Hyperscan only says
    # which rules hit; the capturing regex re-matches them). Several patterns are too large for
    # SOM_LEFTMOST.
    for flags in (0, hyperscan.HS_FLAG_SINGLEMATCH):
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=patterns, ids=ids, elements=len(ids), flags=[flags] * len(ids))


@pytest.mark.skipif(hyperscan is None, reason="hyperscan is not installed")
def test_hyperscan_flags_every_positive_vector() -> None:
    """Hyperscan (the candidate detector) reports each positive vector's rule: no false negative."""
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    ids = list(range(len(DEFAULT.rules)))
    db.compile(
        expressions=[r.regex.encode() for r in DEFAULT.rules],
        ids=ids,
        elements=len(ids),
        flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(ids),
    )
    for rid, doc in VECTORS.items():
        for vec in doc["positive"]:
            seen: set[int] = set()
            db.scan(
                vec["text"].encode(),
                match_event_handler=lambda i, _f, _t, _fl, _c, seen=seen: seen.add(i),
            )
            assert DEFAULT.ids().index(rid) in seen, rid


def test_fingerprint_is_stable_and_sensitive() -> None:
    again = load_rule_file(DEFAULT_RULES_PATH, check_hyperscan=False)
    assert again.fingerprint() == DEFAULT.fingerprint()
    assert re.fullmatch(r"[0-9a-f]{64}", DEFAULT.fingerprint())
    first = DEFAULT.rules[0]
    changed = RuleSet(
        rules=(
            Rule(first.id, first.label, first.regex, first.keywords, entropy=3.01),
            *DEFAULT.rules[1:],
        ),
        allowlist=DEFAULT.allowlist,
    )
    assert changed.fingerprint() != DEFAULT.fingerprint()
    data = json.loads(DEFAULT.to_json())
    assert [r["id"] for r in data["rules"]] == list(DEFAULT.ids())


# -- vectors --------------------------------------------------------------------------------------


def test_one_vector_file_per_rule() -> None:
    assert sorted(VECTORS) == sorted(DEFAULT.ids())
    for rid, doc in VECTORS.items():
        assert set(doc) == {"positive", "negative"}, rid
        pos, neg = doc["positive"], doc["negative"]
        assert len(pos) >= 3 and len(neg) >= 3, rid
        contexts = {v["context"] for v in pos}
        assert len(contexts) >= 3 and "markdown" in contexts, rid
        for v in pos:
            assert set(v) == {"context", "text", "secret"} and v["context"] in CONTEXTS, rid
            assert v["secret"] in v["text"], rid
        for v in neg:
            assert set(v) - {"flagged_by"} == {"context", "text"}, rid
            assert v["context"] in CONTEXTS, rid
            assert rid not in v.get("flagged_by", []), rid


@pytest.mark.parametrize(("rule_id", "index", "vector"), POSITIVES)
def test_positive_vector(rule_id: str, index: int, vector: dict[str, str]) -> None:
    rule = DEFAULT.by_id()[rule_id]
    hits = reference_find(DEFAULT, vector["text"])
    assert rule_id in {h.rule_id for h in hits}
    mine = [h for h in hits if h.rule_id == rule_id]
    assert [h.secret for h in mine] == [vector["secret"]]
    # Prefilter soundness: the matched text itself contains a keyword.
    assert any(k in mine[0].matched.lower() for k in rule.keywords)
    # The loader's helpers agree with the reference scanner.
    assert rule.wanted(vector["text"].lower())
    assert rule.keeps(vector["secret"], DEFAULT.allowlist)


@pytest.mark.parametrize(("rule_id", "index", "vector"), NEGATIVES)
def test_negative_vector(rule_id: str, index: int, vector: dict[str, str]) -> None:
    # A near miss of its rule; `flagged_by` names the other rules that rightly report it (e.g. the
    # generic assignment rule on `TWILIO_API_KEY=<a malformed SID>`), and only those.
    found = {h.rule_id for h in reference_find(DEFAULT, vector["text"])}
    assert rule_id not in found
    assert found == set(vector.get("flagged_by", []))


def test_adjacent_secrets_are_all_found() -> None:
    """A consumed trailing boundary never hides the next secret of the same rule."""
    for rid in DEFAULT.ids():
        secrets = [v["secret"] for v in VECTORS[rid]["positive"]]
        text, m = _first_positive(rid)
        anchor, rest = text[m.start() : m.start(1)], text[m.end(1) : m.end()]
        joined = " ".join(anchor + s + rest for s in secrets)
        found = [h.secret for h in reference_find(DEFAULT, joined, only=rid)]
        assert found == secrets, rid


@pytest.mark.parametrize("rule", DEFAULT.rules, ids=DEFAULT.ids())
def test_generated_matches_contain_a_keyword(rule: Rule) -> None:
    """Prefilter soundness on strings generated from the regex itself (and Hyperscan agrees)."""
    db = None
    if hyperscan is not None:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[rule.regex.encode()], ids=[0], elements=1, flags=[0])
    pattern = _python_pattern(rule.regex)

    @settings(
        max_examples=5,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.from_regex(pattern))
    def check(text: str) -> None:
        matches = list(pattern.finditer(text))
        assert matches
        for m in matches:
            assert any(k in m.group(0).lower() for k in rule.keywords), m.group(0)
        if db is not None:
            hits: list[int] = []
            db.scan(text.encode(), match_event_handler=lambda *a: hits.append(1))
            assert hits

    check()


# -- linear time ----------------------------------------------------------------------------------


def _count(rule: Rule, text: str) -> int:
    return sum(1 for _ in _python_pattern(rule.regex).finditer(text))


@pytest.mark.parametrize("rule", DEFAULT.rules, ids=DEFAULT.ids())
def test_hostile_inputs_stay_linear(rule: Rule) -> None:
    text, m = _first_positive(rule.id)
    secret = m.group(1)
    head = text[m.start() : m.start(1) + len(secret) // 2]
    filler = next(c for c in secret[len(secret) // 2 :] if c.isalnum())

    # 1. The prefix (and anchor) then 1 MB of the rule's own key characters, no terminator.
    assert _count(rule, head + filler * MB) == _count(rule, head + filler * 3000)

    # 2. ~1 MB of complete matches separated by one blank: every one is found. (The whole match: a
    # URL's password is followed by the rest of its match, the host.)
    unit = text[m.start() : m.end()].rstrip() + " "
    reps = MB // len(unit) + 1
    assert _count(rule, unit * reps) == reps

    # 3. ~1 MB of truncated candidates: the count scales with the repetitions.
    cut = text[m.start() : m.end(1) - 1] + "\n"
    one = _count(rule, cut)
    assert _count(rule, cut * 3) == 3 * one
    reps = MB // len(cut) + 1
    assert _count(rule, cut * reps) == reps * one

    # 4. ~1 MB of the anchor/prefix and the start of the key, repeated with no separator.
    stub = text[m.start() : m.start(1) + min(8, len(secret) // 4)]
    assert _count(rule, stub * (MB // len(stub) + 1)) == 0


def test_private_key_many_unterminated_headers() -> None:
    rule = DEFAULT.by_id()["private-key"]
    assert _count(rule, "-----BEGIN RSA PRIVATE KEY-----\n" * 100_000) == 0
    body = "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEowIBAAKCAQEAx0\n" * 60_000
    assert _count(rule, body) == 0
    assert _count(rule, "-----BEGIN " + "A" * MB) == 0
    assert _count(rule, "-----BEGIN" + "-" * MB) == 0
    headers = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n" + "DEK-Info: x\n" * 80_000
    assert _count(rule, headers) == 0


@pytest.mark.parametrize("rule_id", ["aws-secret-access-key", "azure-storage-account-key"])
def test_context_anchors_without_values(rule_id: str) -> None:
    rule = DEFAULT.by_id()[rule_id]
    anchor = "aws_secret_access_key" if rule_id.startswith("aws") else "AccountKey"
    assert _count(rule, (anchor + " = ") * 60_000) == 0
    assert _count(rule, anchor + " " * MB) == 0
    assert _count(rule, anchor + "=" + "A" * MB) == 0
    assert _count(rule, (anchor + '="' + "A1b2" * 5 + '"\n') * 30_000) == 0


def test_gcp_service_account_without_end() -> None:
    rule = DEFAULT.by_id()["gcp-service-account-key"]
    unit = (
        '"private_key_id": "'
        + "ab12" * 10
        + '", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + "MIIEvQ" * 20
        + "\\n"
    )
    assert _count(rule, unit * 5_000) == 0


# -- lint -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        (r"ab.c", "'.'"),
        (r"^abc", "'^'"),
        (r"abc$", "'$'"),
        (r"a(?=b)", "look-ahead"),
        (r"a(?!b)", "look-ahead"),
        (r"(?<=a)b", "look-behind"),
        (r"(?<!a)b", "look-behind"),
        (r"(a)\1", "backreference"),
        (r"(?P<x>a)(?P=x)", "backreference"),
        (r"a(?i)b", "inline flags"),
        (r"(?s)ab", "inline flags"),
        (r"(?i:ab)", "inline flags"),
        (r"[^a]{3}", "bounded repetition"),
        (r"\S{2,9}", "bounded repetition"),
        (r"\W?x", "bounded repetition"),
        (r"[^\s]{1,5}", "bounded repetition"),
        (r"a\Z", r"\z"),
        (r"\p{L}", "Unicode"),
        (r"a{,3}", "'{'"),
        (r"a*+", "possessive"),
        (r"[[:alpha:]]", "nested set"),
        (r"[a--b]", "set operation"),
        (r"(?>ab)", "atomic"),
        (r"\<word", "not portable"),
        ("é", "ASCII"),
        ("", "empty"),
    ],
)
def test_lint_rejects(pattern: str, needle: str) -> None:
    problems = lint_pattern(pattern)
    assert problems, pattern
    assert any(needle in p for p in problems), problems


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?i)\b(key_[a-z0-9]{32})\b",
        r"(?:[^A-Za-z0-9+/=]+|\z)",
        r"\A(x)[\\\-.]{2}",
        r"(?P<secret>[A-Fa-f0-9]{8})",
        r"a[^\r\n]*b",
        r"a[^-]+?-----",
        r"\x41{2}\.",
    ],
)
def test_lint_accepts(pattern: str) -> None:
    assert lint_pattern(pattern) == []


def test_lint_strict_rejects_bare_negated_classes() -> None:
    assert lint_pattern(r"ab(?:[^a-z]|\z)") == []
    assert lint_pattern(r"ab(?:[^a-z]|\z)", strict=True)
    assert lint_pattern(r"ab[^a-z]+?", strict=True)
    assert lint_pattern(r"ab[^a-z]+", strict=True) == []


def test_python_translation() -> None:
    assert to_python_regex(r"ab\z") == r"ab\Z"
    assert to_python_regex(r"ab\\z") == r"ab\\z"
    assert to_python_regex(r"[\\]\z") == r"[\\]\Z"


def test_shannon_entropy() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
    assert shannon_entropy(b"\x00\xff") == pytest.approx(1.0)
    assert shannon_entropy("é") == pytest.approx(1.0)  # two UTF-8 bytes


def test_allowlist_semantics() -> None:
    al = Allowlist(stopwords=("fake",), regexes=(r"\Aabc",))
    assert al.allows("xxFAKExx")
    assert al.allows("abcdef")
    assert not al.allows("zabc")
    assert not Allowlist().allows("anything")
    rule = Rule("r", "R", r"\b(k_[a-z]{8})\b", ("k_",), entropy=2.5, allowlist=al)
    assert rule.keeps("k_qwertyui")
    assert not rule.keeps("k_aaaaaaaa")  # entropy floor
    assert not rule.keeps("k_abcqwert", Allowlist(regexes=("abc",)))  # global allowlist


# -- loader errors --------------------------------------------------------------------------------

GOOD_RULE = """
[[rules]]
id = "acme-key"
label = "ACME key"
regex = '''\\b(acme_[a-z0-9]{16})\\b'''
keywords = ["acme_"]
"""


def _write(tmp_path: Path, text: str, name: str = "rules.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(tmp_path: Path, text: str) -> RuleError:
    path = _write(tmp_path, text)
    with pytest.raises(RuleError) as info:
        load_rule_file(path)
    assert str(path) in str(info.value)
    return info.value


def test_good_memframe_file_loads(tmp_path: Path) -> None:
    path = _write(tmp_path, "schema = 1\n[allowlist]\nstopwords = ['demo']\n" + GOOD_RULE)
    rs = load_rule_file(path)
    assert rs.ids() == ("acme-key",)
    assert rs.allowlist.stopwords == ("demo",)
    assert rs.rules[0].secret_group == 1 and rs.rules[0].entropy is None
    assert load_rules(path).fingerprint() == rs.fingerprint()


def test_bad_toml_names_the_line(tmp_path: Path) -> None:
    err = _error(tmp_path, "schema = 1\n\n[[rules]]\nid = \n")
    assert err.line == 4
    assert ":4:" in str(err) and "invalid TOML" in str(err)


@pytest.mark.parametrize(
    ("rule_text", "field", "needle"),
    [
        (GOOD_RULE.replace('label = "ACME key"\n', ""), "label", "missing"),
        (
            GOOD_RULE.replace('keywords = ["acme_"]', 'keywords = ["acme_"]\ncolor = "red"'),
            "color",
            "unknown field",
        ),
        (GOOD_RULE.replace('keywords = ["acme_"]', "keywords = []"), "keywords", "at least one"),
        (
            GOOD_RULE.replace('keywords = ["acme_"]', 'keywords = ["ACME_"]'),
            "keywords",
            "lower-case",
        ),
        (GOOD_RULE.replace('keywords = ["acme_"]', 'keywords = "acme_"'), "keywords", "array"),
        (GOOD_RULE.replace('label = "ACME key"', "label = 7"), "label", "string"),
        (GOOD_RULE + "entropy = 'high'\n", "entropy", "number"),
        (GOOD_RULE + "entropy = 9.5\n", "entropy", "between 0 and 8"),
        (GOOD_RULE + "secret_group = -1\n", "secret_group", "integer"),
        (GOOD_RULE + "secret_group = 2\n", "secret_group", "does not exist"),
        (
            GOOD_RULE.replace("(acme_", "acme_(?:").replace("})", "})"),
            "regex",
            "exactly one capturing group",
        ),
        (GOOD_RULE.replace("(acme_[a-z0-9]{16})", "(acme)_([a-z0-9]{16})"), "regex", "found 2"),
        (GOOD_RULE.replace("\\b(acme_", "(?<![a-z])(acme_"), "regex", "look-behind"),
        (GOOD_RULE.replace("\\b(acme_", "^(acme_"), "regex", "'^'"),
        (GOOD_RULE.replace("[a-z0-9]{16}", "[^ ]{16}"), "regex", "bounded repetition"),
        (GOOD_RULE.replace("[a-z0-9]{16}", "[a-z0-9]{16}(?i)"), "regex", "inline flags"),
        (GOOD_RULE.replace("[a-z0-9]{16}", "[a-z0-9]{16}(("), "regex", "Python re cannot"),
        (GOOD_RULE.replace("\\b(acme_[a-z0-9]{16})\\b", "(x*)"), "regex", "empty string"),
        (
            GOOD_RULE + "[rules.allowlist]\nstopwords = ['Demo']\n",
            "allowlist.stopwords",
            "lower-case",
        ),
        (GOOD_RULE + "[rules.allowlist]\nregexes = ['a.b']\n", "allowlist.regexes", "'.'"),
        (GOOD_RULE + "[rules.allowlist]\npaths = ['x']\n", "allowlist.paths", "unknown field"),
    ],
)
def test_rule_errors_name_rule_and_field(
    tmp_path: Path, rule_text: str, field: str, needle: str
) -> None:
    err = _error(tmp_path, "schema = 1\n" + rule_text)
    assert err.rule_id == "acme-key"
    assert err.field == field
    assert "rule 'acme-key'" in str(err) and f"field '{field}'" in str(err)
    assert needle in str(err)


@pytest.mark.skipif(hyperscan is None, reason="hyperscan is not installed")
def test_pattern_hyperscan_rejects_is_an_error(tmp_path: Path) -> None:
    # Python compiles it (it simply never matches); Hyperscan refuses it.
    rule = GOOD_RULE.replace("{16})\\b", "{16})\\b\\B")
    err = _error(tmp_path, "schema = 1\n" + rule)
    assert err.field == "regex" and "Hyperscan" in str(err)


def test_file_level_errors(tmp_path: Path) -> None:
    err = _error(tmp_path, "schema = 2\nrules = []\n")
    assert err.field == "schema"
    err = _error(tmp_path, "schema = 1\nrules = []\ncolor = 1\n")
    assert err.field == "color"
    err = _error(tmp_path, "schema = 1\n")
    assert err.field == "rules"
    err = _error(tmp_path, "schema = 1\n" + GOOD_RULE + GOOD_RULE)
    assert err.rule_id == "acme-key" and "duplicate" in str(err)
    err = _error(tmp_path, "schema = 1\n[[rules]]\nlabel = 'x'\n")
    assert err.field == "id" and "#1" in str(err)
    err = _error(tmp_path, GOOD_RULE)  # memframe rules without schema
    assert err.field == "schema"
    missing = tmp_path / "nope.toml"
    with pytest.raises(RuleError, match="cannot read"):
        load_rule_file(missing)
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(RuleError, match="not UTF-8"):
        load_rule_file(tmp_path / "bin.toml")


def test_parse_rules_names_its_source() -> None:
    rs = parse_rules("schema = 1\n" + GOOD_RULE, source="inline")
    assert rs.ids() == ("acme-key",) and rs.rules[0].source == "inline"
    with pytest.raises(RuleError, match=r"\Ainline: rule 'acme-key': field 'keywords'"):
        parse_rules("schema = 1\n" + GOOD_RULE.replace('"acme_"', '"Acme_"'), source="inline")


def test_secret_group_selects_among_groups(tmp_path: Path) -> None:
    text = GOOD_RULE.replace("(acme_[a-z0-9]{16})", "(acme)_([a-z0-9]{16})") + "secret_group = 2\n"
    rs = load_rule_file(_write(tmp_path, "schema = 1\n" + text))
    rule = rs.rules[0]
    assert rule.secret_group == 2
    m = rule.pattern.search("x acme_q1w2e3r4t5y6u7i8 y")
    assert m is not None and m.group(rule.secret_group) == "q1w2e3r4t5y6u7i8"


# -- gitleaks format ------------------------------------------------------------------------------

GITLEAKS = """
title = "acme gitleaks config"

[allowlist]
description = "global"
stopwords = ["Sample"]
regexes = ['''dev-only''']

[[rules]]
id = "acme-api-key"
description = "ACME API key"
regex = '''\\b(acme)_(?:live|test)_([a-z0-9]{24})\\b'''
secretGroup = 2
entropy = 3.5
keywords = ["ACME_live", "acme_test"]
tags = ["acme", "key"]
[[rules.allowlists]]
description = "docs"
regexTarget = "secret"
condition = "OR"
stopwords = ["Docs"]
regexes = ['''q{4}''']

[[rules]]
id = "acme-webhook"
description = "ACME webhook secret"
regex = '''whsec_[A-Za-z0-9]{32}'''
[rules.allowlist]
regexes = ['''0{8}''']

[[rules]]
id = "acme-multi"
regex = '''(acme-multi)-([0-9a-f]{12})'''
keywords = ["acme-multi"]

[[allowlists]]
targetRules = ["acme-webhook"]
stopwords = ["testing"]
"""


def test_gitleaks_format_loads_and_converts(tmp_path: Path) -> None:
    rs = load_rule_file(_write(tmp_path, GITLEAKS, "gitleaks.toml"))
    assert rs.ids() == ("acme-api-key", "acme-webhook", "acme-multi")
    api, hook, multi = rs.rules
    assert api.label == "ACME API key"
    assert api.secret_group == 2
    assert api.entropy == 3.5
    assert api.keywords == ("acme_live", "acme_test")
    assert api.allowlist == Allowlist(stopwords=("docs",), regexes=("q{4}",))
    assert hook.secret_group == 0 and hook.keywords == () and hook.always
    assert hook.allowlist == Allowlist(stopwords=("testing",), regexes=("0{8}",))
    assert multi.secret_group == 1 and multi.label == "acme-multi"
    assert rs.allowlist == Allowlist(stopwords=("sample",), regexes=("dev-only",))

    text = (
        "k=acme_live_q1w2e3r4t5y6u7i8o9p0a1s2 hook=whsec_"
        + "Ab3dE" * 6
        + "Zz"
        + " acme-multi-0123456789ab"
    )
    found = {h.rule_id: h.secret for h in reference_find(rs, text)}
    assert found == {
        "acme-api-key": "q1w2e3r4t5y6u7i8o9p0a1s2",
        "acme-webhook": "whsec_" + "Ab3dE" * 6 + "Zz",
        "acme-multi": "acme-multi",
    }


MATCH_TARGET_GITLEAKS = """
[[rules]]
id = "acme-token"
regex = '''(?i)(?:csrf[_-]?)?token\\s*=\\s*([a-z0-9]{12})'''
keywords = ["token"]
[[rules.allowlists]]
regexTarget = "match"
regexes = ['''(?i)\\Acsrf''']
[[rules.allowlists]]
regexes = ['''\\A0''']

[[allowlists]]
regexTarget = "match"
regexes = ['''TOKEN = ''']
"""

MATCH_TARGET_MEMFRAME = """
schema = 1
[allowlist]
match_regexes = ['''TOKEN = ''']
[[rules]]
id = "acme-token"
label = "ACME token"
regex = '''(?i)(?:csrf[_-]?)?token\\s*=\\s*([a-z0-9]{12})'''
keywords = ["token"]
[rules.allowlist]
regexes = ['''\\A0''']
match_regexes = ['''(?i)\\Acsrf''']
"""


@pytest.mark.parametrize("engine", _backend.available_engines())
@pytest.mark.parametrize(
    ("text", "name"), [(MATCH_TARGET_GITLEAKS, "gitleaks.toml"), (MATCH_TARGET_MEMFRAME, "r.toml")]
)
def test_match_allowlists_search_the_whole_match(
    tmp_path: Path, engine: str, text: str, name: str
) -> None:
    rs = load_rule_file(_write(tmp_path, text, name))
    (rule,) = rs.rules
    assert rule.allowlist.match_regexes == ("(?i)\\Acsrf",)
    assert rule.allowlist.regexes == ("\\A0",)
    assert rs.allowlist.match_regexes == ("TOKEN = ",)
    scanner = SecretScanner(rs, engine=engine)

    def secrets(sample: str) -> list[str]:
        return [sample[f.secret_start : f.secret_end] for f in scanner.find(sample)]

    assert secrets("token=a1b2c3d4e5f6") == ["a1b2c3d4e5f6"]
    # the name is part of the match, not of the secret: only a match allowlist sees it
    assert secrets("CSRF_token=a1b2c3d4e5f6") == []
    assert secrets("token=0a1b2c3d4e5f") == []  # the secret's allowlist still applies
    assert secrets("TOKEN = a1b2c3d4e5f6") == []  # the global match allowlist
    assert secrets("csrf token=a1b2c3d4e5f6") == ["a1b2c3d4e5f6"]  # \\A: the match's start
    assert [h.secret for h in reference_find(rs, "CSRF_token=a1b2c3d4e5f6 token=b1c2d3e4f5a6")] == [
        "b1c2d3e4f5a6"
    ]


@pytest.mark.parametrize(
    ("snippet", "field", "needle"),
    [
        (
            "[[rules.allowlists]]\nregexTarget = 'line'\n",
            "allowlists[0].regexTarget",
            "unsupported",
        ),
        (
            "[[rules.allowlists]]\ncondition = 'AND'\nstopwords = ['a']\n",
            "allowlists[0].condition",
            "unsupported",
        ),
        ("[[rules.allowlists]]\npaths = ['''\\.md''']\n", "allowlists[0].paths", "unsupported"),
        ("[rules.allowlist]\nregexTarget = 'line'\n", "allowlist.regexTarget", "unsupported"),
        ("path = '''\\.env'''\n", "path", "unsupported"),
        ("secretGroup = 3\n", "secretGroup", "does not exist"),
        ("colour = 1\n", "colour", "unknown field"),
    ],
)
def test_gitleaks_unsupported_features(
    tmp_path: Path, snippet: str, field: str, needle: str
) -> None:
    text = "[[rules]]\nid = 'g1'\nregex = '''g1_[a-z]{10}'''\n" + snippet
    err = _error(tmp_path, text)
    assert err.rule_id == "g1" and err.field == field and needle in str(err)


def test_gitleaks_top_level_errors(tmp_path: Path) -> None:
    err = _error(tmp_path, "[extend]\nuseDefault = true\n")
    assert err.field == "extend" and "unsupported" in str(err)
    err = _error(tmp_path, "[allowlist]\npaths = ['x']\n")
    assert err.field == "allowlist.paths"
    err = _error(tmp_path, "[[rules]]\nid = 'g1'\nregex = '''g1_.{10}'''\n")
    assert err.rule_id == "g1" and err.field == "regex"
    err = _error(tmp_path, "[[allowlists]]\ntargetRules = ['nope']\n")
    assert "nope" in str(err)


# -- merge and hook registration ------------------------------------------------------------------


def test_merge_appends_and_rejects_duplicates(tmp_path: Path) -> None:
    extra = load_rule_file(
        _write(tmp_path, "schema = 1\n[allowlist]\nstopwords = ['demo']\n" + GOOD_RULE)
    )
    merged = merge(DEFAULT, extra)
    assert merged.ids() == (*DEFAULT.ids(), "acme-key")
    assert (
        merged.allowlist.stopwords[: len(DEFAULT.allowlist.stopwords)]
        == DEFAULT.allowlist.stopwords
    )
    assert "demo" in merged.allowlist.stopwords
    assert merged.fingerprint() != DEFAULT.fingerprint()
    with pytest.raises(RuleError) as info:
        merge(merged, extra)
    assert info.value.rule_id == "acme-key" and "duplicate" in str(info.value)
    clash = _write(tmp_path, "schema = 1\n" + GOOD_RULE.replace("acme-key", "github-pat"), "c.toml")
    with pytest.raises(RuleError, match="github-pat") as info:
        merge(DEFAULT, load_rule_file(clash))
    assert str(clash) in str(info.value) and "default.toml" in str(info.value)


def test_rule_from_mapping() -> None:
    rule = rule_from_mapping(
        {
            "id": "hook-key",
            "label": "Hook key",
            "regex": r"\b(hk_[a-z]{12})\b",
            "keywords": ["hk_"],
        },
        source="plugin acme",
    )
    assert rule.id == "hook-key" and rule.source == "plugin acme"
    same = rule_from_mapping(
        {
            "id": "hook-key",
            "label": "Hook key",
            "regex": r"\b(hk_[a-z]{12})\b",
            "keywords": ("hk_",),
        }
    )
    assert same == rule and same.keywords == ("hk_",)
    with pytest.raises(RuleError, match="plugin acme: rule 'hook-key': field 'keywords'"):
        rule_from_mapping(
            {"id": "hook-key", "label": "x", "regex": r"(a)", "keywords": []}, source="plugin acme"
        )


def test_module_exports() -> None:
    for name in rules_mod.__all__:
        assert hasattr(rules_mod, name), name


# -- issue 15: boundaries, stand-ins, the one-pass keyword prefilter ------------------------------

PEM_BODY = [
    "MIIEowIBAAKCAQEAx4Pp0s8vN2XgkR5mWq7YtLz3JcVbH9aFd6uKe1oTiQnSyMwE",
    "rB2lD8hGf0Jk3Pq5Xs7Tv9Yz1Ac4Ee6Gg8Ii0Kk2Mm4Oo6Qq8Ss0Uu2Ww4Yy6Aa8C",
    "c0Ee2Gg4Ii6Kk8Mm0Oo2Qq4Ss6Uu8Ww0Yy2Aa4Cc6Ee8Gg0Ii2Kk4Mm6Oo8Qq0Ss2",
]


@pytest.mark.parametrize(
    ("prefix", "suffix", "joiner"),
    [
        ("> ", "", "\n> "),  # a Markdown blockquote
        ('"', '\\n" +', '\n    "'),  # Java / JavaScript string concatenation
        ('"', '\\n"', '\n    "'),  # adjacent C / Python literals
        ("'", "\\n',", "\n  '"),  # a list of literals
        ("# ", "", "\n# "),  # a commented-out key
    ],
)
def test_private_key_tolerates_quotes_and_concatenation(
    prefix: str, suffix: str, joiner: str
) -> None:
    lines = ["-----BEGIN RSA PRIVATE KEY-----", *PEM_BODY, "-----END RSA PRIVATE KEY-----"]
    text = "key = " + prefix + (suffix + joiner).join(lines) + suffix.rstrip(" +,") + "\n"
    hits = [h for h in reference_find(DEFAULT, text) if h.rule_id == "private-key"]
    assert len(hits) == 1, text
    assert hits[0].secret.startswith("-----BEGIN RSA") and hits[0].secret.endswith("KEY-----")


@pytest.mark.parametrize(
    "text",
    [
        "_ghp_5Gc0xqQl2rWufYCY3TjM4RBzPtLGR2lGMWSf_",
        "*_AKIAQ7VJ2ZWXK5MRT3LB_*",
        '{"content": "key:\\nghp_5Gc0xqQl2rWufYCY3TjM4RBzPtLGR2lGMWSf\\r\\n"}',
        "> ghp_5Gc0xqQl2rWufYCY3TjM4RBzPtLGR2lGMWSf",
        "| prod | ghp_5Gc0xqQl2rWufYCY3TjM4RBzPtLGR2lGMWSf |",
        "- ~~ghp_5Gc0xqQl2rWufYCY3TjM4RBzPtLGR2lGMWSf~~",
        "[ghp_5Gc0xqQl2rWufYCY3TjM4RBzPtLGR2lGMWSf](url)",
    ],
)
def test_markdown_and_code_boundaries(text: str) -> None:
    secrets = {h.secret for h in reference_find(DEFAULT, text)}
    assert secrets & {"ghp_5Gc0xqQl2rWufYCY3TjM4RBzPtLGR2lGMWSf", "AKIAQ7VJ2ZWXK5MRT3LB"}, text


def _stand_ins(secret: str, rule: Rule) -> list[str]:
    """Obvious stand-ins with the secret's shape: its keyword prefix kept, the rest replaced by
    x-runs, a repeated unit, an alphabet/digit run, EXAMPLE, or a template."""
    low = secret.lower()
    keep = max((len(k) for k in rule.keywords if low.startswith(k)), default=0)
    head, body = secret[:keep], secret[keep:]
    positions = [i for i, c in enumerate(body) if c.isalnum()]

    def fill(chars: str) -> str:
        out = list(body)
        for n, i in enumerate(positions):
            out[i] = chars[n % len(chars)]
        return head + "".join(out)

    units = {c for c in body if c.isalnum()}
    if units <= set("0123456789abcdef"):
        run = "0123456789abcdef"
    elif units <= set("0123456789"):
        run = "0123456789"
    elif all(c.isupper() or c.isdigit() for c in units):
        run = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    elif all(c.islower() or c.isdigit() for c in units):
        run = "abcdefghijklmnopqrstuvwxyz0123456789"
    else:
        run = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    unit = "".join(body[i] for i in positions[:3]) or "ab1"
    stand_ins = [fill("x"), fill(unit), fill(run), fill("abc123"), fill("0")]
    if len(positions) > 10:
        stand_ins.append(fill(run)[: len(secret) - 7] + "EXAMPLE")
    return stand_ins


@pytest.mark.parametrize("rule", DEFAULT.rules, ids=DEFAULT.ids())
def test_obvious_stand_ins_are_never_flagged(rule: Rule) -> None:
    for vec in VECTORS[rule.id]["positive"]:
        for stand_in in _stand_ins(vec["secret"], rule):
            text = vec["text"].replace(vec["secret"], stand_in)
            assert rule.id not in {h.rule_id for h in reference_find(DEFAULT, text)}, stand_in
    for template in ("<token>", "${API_TOKEN}", "your-token-here", "changeme", "xxxxxxxxxxxxxxxx"):
        vec = VECTORS[rule.id]["positive"][0]
        text = vec["text"].replace(vec["secret"], template)
        found = {h.rule_id for h in reference_find(DEFAULT, text)}
        assert not found & {rule.id, "generic-api-key", "generic-password"}, (rule.id, template)


def test_keyword_index_is_exactly_substring_search() -> None:
    from memframe._fallback.scan import KeywordIndex

    keywords = [k.encode() for rule in DEFAULT for k in rule.keywords]
    index = KeywordIndex(keywords)

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(
        st.lists(
            st.one_of(
                st.sampled_from(sorted(set(keywords))),
                st.text("abcdeiklmnoprstx_-.:/0123", max_size=6).map(str.encode),
            ),
            max_size=12,
        ).map(b"".join)
    )
    def check(text: bytes) -> None:
        assert index.present(text) == {k for k in set(keywords) if k in text}

    check()
    # overlapping and nested keywords are all reported
    small = KeywordIndex([b"abc", b"bcd", b"b", b"cde", b"abcdef"])
    assert small.present(b"xabcdefx") == {b"abc", b"bcd", b"b", b"cde", b"abcdef"}
    assert small.present(b"abcd") == {b"abc", b"bcd", b"b"}
    assert KeywordIndex([]).present(b"anything") == set()
