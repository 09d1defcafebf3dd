"""Hostile inputs that make backtracking engines go quadratic must stay linear on every engine.

Each case is 10 MB (or 100k header lines); a quadratic engine would need hours, so the per-test
timeout is the assertion that scanning stays linear. The findings are checked too.
"""

from __future__ import annotations

import pytest

from memframe.rules import load_rules
from memframe.scanner import SecretScanner

RULES = load_rules()
TEN_MB = 10 * 1024 * 1024

CASES = {
    "one-line-of-A": "A" * TEN_MB,
    "akia-then-key-chars": "AKIA" + "A" * TEN_MB,
    "ghp-then-alnum": "ghp_" + "aB3" * (TEN_MB // 3),
    "base64-run-after-context": "aws_secret_access_key = " + "abcd+/EF" * (TEN_MB // 8),
    "keywords-everywhere": "token api_key secret password Bearer xoxb- sk-ant- " * (TEN_MB // 52),
    "begin-headers-without-end": "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n" * 100_000,
    "no-newline-hex": "0123456789abcdef" * (TEN_MB // 16),
}


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_input_scans_in_linear_time(engine, name):
    scanner = SecretScanner(RULES, engine=engine)
    findings = scanner.find(CASES[name])
    # none of these contain a complete, valid secret except by accident of a rule's alphabet;
    # whatever is found must lie inside the text and be reported in order
    starts = [(f.start, f.rule_id) for f in findings]
    assert starts == sorted(starts, key=lambda s: (s[0], RULES.ids().index(s[1])))
    assert all(0 <= f.secret_start < f.secret_end <= len(CASES[name]) for f in findings)
