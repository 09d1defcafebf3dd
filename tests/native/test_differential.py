"""Differential property tests: native == hyperscan == python on every input.

The default Hypothesis profile keeps CI fast; ``MEMFRAME_HYPOTHESIS=thorough`` runs the campaign
quoted in the closing notes (each test 20,000 examples).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memframe import _backend
from memframe.rules import load_rules
from memframe.scanner import SecretScanner
from tests.native.vectors import positives

RULES = load_rules()
ENGINES = _backend.available_engines()
SCANNERS = [SecretScanner(RULES, engine=name) for name in ENGINES]
SECRETS = sorted({v.secret for v in positives() if v.secret})
KEYWORDS = sorted({k for rule in RULES for k in rule.keywords})

pytestmark = pytest.mark.skipif(len(ENGINES) < 2, reason="needs at least two engines")

# Characters that make rules almost match: key alphabets, separators, quotes, CJK, controls.
KEYLIKE = st.sampled_from(
    [
        *"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-.:\"' \n\t",
        *["記", "憶", "é", "\u200b", "\r", "\x00"],
    ]
)
FRAGMENT = st.one_of(
    st.sampled_from(SECRETS),
    st.sampled_from(KEYWORDS),
    st.sampled_from(KEYWORDS).map(str.upper),
    st.text(KEYLIKE, max_size=40),
    st.text(max_size=20),
    st.sampled_from(
        [
            "-----BEGIN RSA PRIVATE KEY-----\n",
            "\n-----END RSA PRIVATE KEY-----",
            "token = ",
            "api_key: ",
            "Bearer ",
            "https://hooks.slack.com/services/",
        ]
    ),
)
TEXTS = st.lists(FRAGMENT, max_size=12).map("".join)


def _mutate(secret: str, data: st.DataObject) -> str:
    index = data.draw(st.integers(0, len(secret) - 1))
    replacement = data.draw(KEYLIKE)
    return secret[:index] + replacement + secret[index + 1 :]


def assert_engines_agree(text: str | bytes) -> None:
    reference = SCANNERS[0]
    expected_find = reference.find(text)
    expected_scan = reference.scan(text)
    expected_redact = reference.redact(text)
    for scanner in SCANNERS[1:]:
        assert scanner.find(text) == expected_find, (scanner.engine, text)
        assert scanner.scan(text) == expected_scan, (scanner.engine, text)
        assert scanner.redact(text) == expected_redact, (scanner.engine, text)


@given(TEXTS)
def test_planted_secrets_and_near_misses(text):
    assert_engines_agree(text)


@given(st.data())
def test_mutated_secrets(data):
    secret = data.draw(st.sampled_from(SECRETS))
    for _ in range(data.draw(st.integers(1, 3))):
        secret = _mutate(secret, data)
    prefix = data.draw(st.text(KEYLIKE, max_size=10))
    assert_engines_agree(prefix + secret + data.draw(st.text(KEYLIKE, max_size=10)))


@given(st.binary(max_size=300))
def test_random_bytes(data):
    assert_engines_agree(data)


@given(st.lists(st.sampled_from(SECRETS), max_size=4), st.binary(max_size=40))
def test_secrets_in_invalid_utf8(secrets, noise):
    assert_engines_agree(noise.join(s.encode() for s in secrets) + noise)


@given(st.text(max_size=200))
def test_arbitrary_unicode(text):
    assert_engines_agree(text)


def test_large_input_with_planted_secrets():
    parts = []
    for i in range(4000):
        parts.append(f"note {i}: nothing to see, just a token-less line with hex {i * 7919:x}\n")
        if i % 97 == 0:
            parts.append(f"secret {SECRETS[i % len(SECRETS)]}\n")
    text = "".join(parts)
    assert_engines_agree(text)
    assert len(SCANNERS[0].find(text)) > 30
