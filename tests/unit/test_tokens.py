"""count_tokens: the native and Python engines agree exactly, the features are what
docs/tokens.md says, the guaranteed properties hold, and the held-out error stays in bounds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memframe import _backend
from memframe._fallback import tokens as py

try:
    native_count = _backend.get_engine("native").module.count_tokens
except _backend.BackendError as exc:  # pragma: no cover - depends on the build
    native_count = None
    NATIVE_MISSING = str(exc)
else:
    NATIVE_MISSING = ""

needs_native = pytest.mark.skipif(
    native_count is None, reason=f"no native engine: {NATIVE_MISSING}"
)

W = {name: weight for (name, _), weight in zip(py.FEATURES, py.WEIGHTS, strict=True)}
UNIT = 1 << py.SHIFT
# At least 2,000 examples per property, more under MEMFRAME_HYPOTHESIS=thorough.
MANY = settings(max_examples=max(2_000, settings().max_examples))

# Text that exercises every byte class and the run/pair features: letters of both cases,
# digits, blanks, line breaks, symbols, backslashes, controls, accents, CJK, Hangul, emoji,
# box drawing, fullwidth punctuation, and long runs of one character.
PIECES = st.sampled_from(
    [
        *"aZ0 \t\n\r\x0b\\/-=_.,;:'\"(){}<>!?#*@\x00\x1b\x7f",
        "é",
        "ß",
        "Ж",
        "記",
        "憶",
        "한",
        "ア",
        "\uff0c",
        "→",
        "│",
        "😀",
        "👍🏽",
        "\u200b",
        "\ufeff",
        "getUserName",
        "\\n",
        "    ",
        "12345",
        "https://example.com/a?b=1",
    ]
)
TEXTS = st.one_of(
    st.text(),
    st.lists(PIECES, max_size=40).map("".join),
    st.tuples(PIECES, st.integers(1, 300)).map(lambda p: p[0] * p[1]),  # long runs
    st.lists(st.one_of(st.text(max_size=8), PIECES), max_size=60).map("".join),
)


def raw(text: str) -> int:
    return py.raw_score(py._encode(text))


def tokens_of(raw_value: int) -> int:
    return max(1, (raw_value + py.HALF) >> py.SHIFT)


# --- the two engines ----------------------------------------------------------------------


@needs_native
@MANY
@given(TEXTS)
def test_native_equals_python(text):
    assert native_count(text) == py.count_tokens(text)


@needs_native
@pytest.mark.parametrize("length", [*range(0, 140), 255, 256, 1023, 4096, 65_537])
def test_engines_agree_at_every_length_around_the_vector_blocks(length):
    text = ("aB3 \n\\x.é記😀→" * (length // 8 + 1))[:length]
    assert native_count(text) == py.count_tokens(text)


@needs_native
def test_engines_agree_on_long_text():
    text = "def getUserName(self):\n    return '記憶 → 😀'\n" * 50_000  # > 255 vectors
    assert native_count(text) == py.count_tokens(text)


@MANY
@given(st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)), st.text())
def test_lone_surrogates_count_like_their_surrogatepass_bytes(surrogates, text):
    mixed = surrogates + text
    encoded = mixed.encode("utf-8", "surrogatepass")
    assert py.count_tokens(mixed) == (tokens_of(py.raw_score(encoded)) if mixed else 0)


def test_many_is_one_by_one():
    texts = ["", "one", "two words", "記憶", "😀", "x" * 1000]
    assert py.count_tokens_many(texts) == [py.count_tokens(t) for t in texts]
    assert py.count_tokens_many([]) == []


@pytest.mark.parametrize("value", [b"bytes", None, 42, ["list"], bytearray(b"x")])
def test_non_str_is_a_type_error(value):
    with pytest.raises(TypeError, match="expected str"):
        py.count_tokens(value)
    with pytest.raises(TypeError):
        py.count_tokens_many([value])


@needs_native
@pytest.mark.parametrize("value", [b"bytes", None, 42])
def test_native_non_str_is_a_type_error(value):
    with pytest.raises(TypeError):
        native_count(value)


# --- hand-checked features ----------------------------------------------------------------


def test_empty_text_has_no_tokens():
    assert py.count_tokens("") == 0
    assert py.raw_score(b"") == 0


@pytest.mark.parametrize("text", [" ", "\n", "a", "\x00", "\\", "é", "記", "😀", "-" * 3])
def test_any_text_has_at_least_one_token(text):
    assert py.count_tokens(text) >= 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # text + bytes + one word
        ("hello", W["text"] + 5 * W["bytes"] + W["words"]),
        # the space is counted; the second word starts a second run
        ("hello world", W["text"] + 11 * W["bytes"] + 2 * W["words"] + W["spaces"]),
        # four spaces: three of them continue the run
        ("    ", W["text"] + 4 * W["bytes"] + 4 * W["spaces"] + 3 * W["space_run"]),
        # one run of five digits
        ("12345", W["text"] + 5 * W["bytes"] + 5 * W["digits"] + W["numbers"]),
        # a digit after a space does not absorb it
        (
            " 7",
            W["text"]
            + 2 * W["bytes"]
            + W["spaces"]
            + W["digits"]
            + W["numbers"]
            + W["space_digit"],
        ),
        # one letter run, two camelCase humps, two capitals
        ("getUserName", W["text"] + 11 * W["bytes"] + W["words"] + 2 * W["camel"] + 2 * W["upper"]),
        # a symbol joined to the word after it, a backslash escape
        (".x", W["text"] + 2 * W["bytes"] + W["symbols"] + W["words"] + W["symbol_word"]),
        (
            "\\n",
            W["text"]
            + 2 * W["bytes"]
            + W["symbols"]
            + W["words"]
            + W["symbol_word"]
            + W["escape_word"],
        ),
        # "\r\n\n" is one run of line breaks
        ("\r\n\n", W["text"] + 3 * W["bytes"] + W["lines"]),
        # two CJK characters: 2 leads + 4 continuation bytes, one non-ASCII run
        ("記憶", W["text"] + 6 * W["bytes"] + 2 * W["lead_cjk"] + W["non_ascii_runs"]),
        # Hangul, accented Latin, an arrow, an emoji
        ("한", W["text"] + 3 * W["bytes"] + W["lead_hangul"] + W["non_ascii_runs"]),
        ("é", W["text"] + 2 * W["bytes"] + W["lead2"] + W["non_ascii_runs"]),
        ("→", W["text"] + 3 * W["bytes"] + W["lead_e2"] + W["non_ascii_runs"]),
        ("\uff0c", W["text"] + 3 * W["bytes"] + W["lead3"] + W["non_ascii_runs"]),
        ("😀", W["text"] + 4 * W["bytes"] + W["lead4"] + W["non_ascii_runs"]),
        # controls count as symbols
        ("\x00", W["text"] + W["bytes"] + W["symbols"]),
    ],
)
def test_hand_checked_features(text, expected):
    assert raw(text) == expected
    assert py.count_tokens(text) == tokens_of(expected)
    if native_count is not None:
        assert native_count(text) == tokens_of(expected)


def test_small_counts_near_the_real_ones():
    assert py.count_tokens("hello") == 1
    assert py.count_tokens("hello world") == 2
    assert py.count_tokens("The quick brown fox jumps over the lazy dog.") in range(9, 12)


def test_pair_table_is_the_sum_of_the_features():
    table = py.pair_table(py.WEIGHTS)
    for (name, (previous, current)), weight in zip(py.FEATURES, py.WEIGHTS, strict=True):
        single = py.pair_table([weight if n == name else 0 for n, _ in py.FEATURES])
        assert all(single[p * 16 + c] == weight for p in previous for c in current), name
    assert table == py.PAIR_WEIGHTS


# --- guaranteed properties ----------------------------------------------------------------


def _char_contributions() -> list[int]:
    """The raw-score change of appending one character, for every previous class and every
    class pattern of a UTF-8 character (one lead and its continuation bytes)."""
    table = py.PAIR_WEIGHTS
    leads = {py.LEAD2: 1, py.LEAD3: 2, py.LEAD_E2: 2, py.LEAD_CJK: 2, py.LEAD_HANGUL: 2}
    leads[py.LEAD4] = 3
    ascii_classes = [py.LOWER, py.UPPER, py.DIGIT, py.SPACE, py.NEWLINE, py.PUNCT, py.BACKSLASH]
    out = []
    for prev in range(py.CLASSES):  # START included: it is the first character
        out += [table[prev * 16 + c] for c in ascii_classes]
        for lead, conts in leads.items():
            cost = table[prev * 16 + lead] + table[lead * 16 + py.CONT]
            out.append(cost + (conts - 1) * table[py.CONT * 16 + py.CONT])
    return out


def test_every_character_adds_a_non_negative_weight():
    # So the estimate of a prefix never exceeds the estimate of the whole text.
    assert min(_char_contributions()) >= 0


# raw(a + b) = raw(a) + raw(b) - PAIR[START][b0] + PAIR[last(a)][b0]: the seam between two
# texts moves the sum by at most these many units up or down.
SEAM = [
    py.PAIR_WEIGHTS[p * 16 + c] - py.PAIR_WEIGHTS[py.START * 16 + c]
    for p in range(1, py.CLASSES)
    for c in range(1, py.CLASSES)
]
SEAM_UP = math.ceil(max(SEAM) / UNIT) + 1  # + 1: the roundings
SEAM_DOWN = math.ceil(-min(SEAM) / UNIT) + 1


@MANY
@given(TEXTS, TEXTS)
def test_concatenation_is_monotonic_and_nearly_additive(a, b):
    whole = py.count_tokens(a + b)
    assert whole >= py.count_tokens(a)  # appending never lowers the estimate
    assert whole >= py.count_tokens(b) - SEAM_DOWN
    assert whole <= py.count_tokens(a) + py.count_tokens(b) + SEAM_UP


def test_seam_bounds_are_small():
    assert SEAM_UP <= 3
    assert SEAM_DOWN <= 4


# --- held-out accuracy (needs the reference BPEs: the memframe[tokens] extra) -------------


@pytest.fixture(scope="module")
def corpus():
    return pytest.importorskip("benches.token_corpus", reason="the benches package is not here")


@pytest.fixture(scope="module")
def held_out(corpus):
    if not corpus.reference_counters():
        pytest.skip(corpus.missing_reference_note())
    return corpus, corpus.counted(corpus.corpus("held"))


BIAS_BAR = 12.0  # percent, every class
SESSION_P95_BAR = 10.0  # percent, the mixed session's running total
CJK_EACH_ENCODING_BAR = 20.0  # cl100k and o200k differ by ~1.33x on CJK: see docs/tokens.md


def test_held_out_bias_per_class(held_out):
    corpus, docs = held_out
    for encoding in (*corpus.ENCODINGS, "mean"):
        table = corpus.accuracy(py.count_tokens, docs, encoding)
        for kind in (*corpus.KINDS, corpus.MIXED):
            acc = table[kind]
            bar = CJK_EACH_ENCODING_BAR if kind == "cjk" and encoding != "mean" else BIAS_BAR
            assert abs(acc.bias) <= bar, f"{kind} vs {encoding}: bias {acc.bias:+.1f}%"


def test_held_out_mixed_session(held_out):
    corpus, docs = held_out
    for encoding in corpus.ENCODINGS:
        mixed = corpus.accuracy(py.count_tokens, docs, encoding)[corpus.MIXED]
        assert mixed.session_p95 is not None
        assert mixed.session_p95 <= SESSION_P95_BAR, f"{encoding}: {mixed.session_p95:.1f}%"
        baseline = corpus.accuracy(corpus.len4, docs, encoding)[corpus.MIXED]
        assert mixed.p95 < baseline.p95 / 2  # per message, far better than len/4


@needs_native
def test_engines_agree_on_the_whole_corpus(corpus):
    docs = corpus.corpus()
    assert len(docs) > 1000
    assert [native_count(d.text) for d in docs] == [py.count_tokens(d.text) for d in docs]
