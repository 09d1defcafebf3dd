"""The python engine's two shortcuts change no result: the keyword check over a text's distinct
runs of keyword bytes, and rules tried only where their anchor literal allows a match to start.

Both are compared with the plain definition (``k in text``; ``pattern.finditer(text)``) on every
bundled rule with texts built from the rules' own vectors, and on generated patterns.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memframe._fallback.scan import Anchor, KeywordIndex, PythonScanner, anchor, ascii_lowered
from memframe.rules import load_rules
from tests.native.vectors import all_vectors

RULES = load_rules()
SCANNER = PythonScanner(RULES)
VECTOR_TEXTS = sorted({v.text for v in all_vectors()})
JUNK = (
    " \n\t\"'`=:,;{}[]()<>_-./\\~*#|abcdefghijklmnopqrstuvwxyz"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\u00e9\u0130\u212a"  # é, İ (lowers to two), Kelvin
)


def _spans_plain(index: int, text: str) -> list[tuple[int, int, tuple[int, int]]]:
    rule = RULES.rules[index]
    return [(m.start(), m.end(), m.span(rule.secret_group)) for m in rule.pattern.finditer(text)]


def _spans_anchored(index: int, text: str) -> list[tuple[int, int, tuple[int, int]]]:
    rule = RULES.rules[index]
    return [
        (m.start(), m.end(), m.span(rule.secret_group))
        for m in SCANNER._iter_matches(index, text, [])
    ]


def test_most_bundled_rules_have_an_anchor() -> None:
    anchored = [a for a in SCANNER._anchors if a is not None]
    # the shortcut is what keeps the engine fast: a rule set where it no longer applies to most
    # rules is a regression worth seeing
    assert len(anchored) >= 0.8 * len(RULES.rules)
    assert all(min(map(len, a.literals)) >= 2 for a in anchored)


def test_every_rule_finds_what_finditer_finds_in_every_vector() -> None:
    for text in VECTOR_TEXTS:
        for index in range(len(RULES.rules)):
            assert _spans_anchored(index, text) == _spans_plain(index, text), (
                RULES.rules[index].id,
                text,
            )


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    st.lists(
        st.one_of(st.sampled_from(VECTOR_TEXTS), st.text(JUNK, max_size=12)),
        min_size=1,
        max_size=5,
    ).map("".join),
    st.integers(min_value=0, max_value=len(RULES.rules) - 1),
)
def test_vectors_run_together_and_cut_with_junk(text: str, index: int) -> None:
    assert _spans_anchored(index, text) == _spans_plain(index, text)


PIECES = [
    r"\b",
    "_",
    r"(?:\b|_|\\[nrt])",
    "ab",
    "[xy]z",
    "(?:tok|sec)",
    "a?",
    "[0-9]{2,4}",
    "(?:ab|a)",
    "b+",
    r"\.",
    "(c)",
    "(?:)",
    "[^a]",
    "x*",
]


@settings(max_examples=600, deadline=None, derandomize=True)
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("".join),
    st.booleans(),
    st.text("abcxyzABTOKSEC_tokse.09 \\nrt", max_size=40),
)
def test_generated_patterns_agree_with_finditer(body: str, caseless: bool, text: str) -> None:
    regex = ("(?i)" if caseless else "") + body
    pattern = re.compile(regex, re.ASCII)
    found = anchor(regex)
    if found is None:
        return
    expected = [m.span() for m in pattern.finditer(text) if m.end() > m.start()]
    starts = found.starts(text, ascii_lowered(text))
    # every start of a match is among the anchor's starts
    assert {s for s, _ in expected} <= set(starts)


def test_anchor_shapes() -> None:
    generic = anchor(r"(?i)(?:secret|token)[ \t]*=[ \t]*([a-z0-9]{16})")
    assert generic == Anchor(("secret", "token"), True, (0, 0))
    bounded = anchor(r"(?:\b|_|\\[nrt])(ghp_[A-Za-z0-9]{36})(?:\b|_)")
    assert bounded is not None and bounded.literals == ("ghp_",) and bounded.before == (0, 2)
    assert not bounded.caseless
    # a class start, a scoped flag, a leading repeat: every position stays a candidate
    assert anchor(r"([a-f0-9]{32}-us[0-9])") is None
    assert anchor(r"(?i:abc)[0-9]+") is None
    # ... but a literal after it still anchors, the scoped part counted as what comes before
    assert anchor(r"(?i:ab)cd") == Anchor(("cd",), False, (2, 2))
    assert anchor(r"x*abc") is None
    assert anchor("(") is None


def test_non_ascii_lowering_keeps_positions() -> None:
    text = "İ TOKEN=abc"  # 'İ'.lower() is two characters
    lowered = ascii_lowered(text)
    assert len(lowered) == len(text) and lowered.index("token") == text.index("TOKEN")
    pattern = re.compile(r"(?i)token=([a-z]+)", re.ASCII)
    found = anchor(pattern.pattern)
    assert found is not None and found.starts(text, lowered) == [2]


def test_keyword_index_over_runs_is_exactly_substring_search() -> None:
    keywords = sorted({k.encode() for rule in RULES for k in rule.keywords})
    index = KeywordIndex(keywords)

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(
        st.lists(
            st.one_of(
                st.sampled_from(keywords),
                st.text("abcdeiklmnoprstx_-.:/0123 \n\"'={}", max_size=6).map(str.encode),
            ),
            max_size=14,
        ).map(b"".join)
    )
    def check(text: bytes) -> None:
        assert index.present(text) == {k for k in keywords if k in text}

    check()
    # a keyword cut by a byte no keyword has is not there; repeated runs are counted once
    small = KeywordIndex([b"ab", b"b-c"])
    assert small.present(b"a b-c ab ab") == {b"ab", b"b-c"}
    assert small.present(b'a"b b"-c') == set()
