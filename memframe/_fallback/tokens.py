"""Token estimation in pure Python, identical to ``memframe-core``'s ``tokens`` module.

The estimate is a linear model over counts of byte classes and of *pairs* of adjacent byte
classes, with fixed-point integer weights (see ``docs/tokens.md``). Each byte of the UTF-8 text
falls in one of 14 classes; every feature counts the positions whose (previous class, class)
pair lies in a set, with ``START`` as the "previous class" of the first byte. So the whole
model is one table ``PAIR_WEIGHTS[prev * 16 + cur]`` and

    raw = sum(PAIR_WEIGHTS[prev_i * 16 + cur_i] for every byte i)
    tokens = max(1, (raw + HALF) >> SHIFT)        (0 for the empty text)

This module computes that sum at C speed, without a per-byte Python loop: ``bytes.translate``
maps bytes to 4-bit classes, one big-integer shift-or turns them into pair codes
(``prev << 4 | cur``, one per byte), a second ``translate`` maps pair codes to their weights
and ``zlib.adler32`` (whose low half is the byte sum, exact while it stays below 65521) adds
them up in chunks. The Rust twin counts the same features with SIMD.

Lone surrogates (possible in a Python ``str``, never in Rust's ``&str``) are encoded with
``surrogatepass``: one counts as the three bytes ``ED A0..BF 80..BF``, i.e. like a Hangul
syllable.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Final

# Byte classes. 0 is never a byte's class: it is the "previous class" of the first byte.
START: Final = 0
LOWER: Final = 1  # a-z
UPPER: Final = 2  # A-Z
DIGIT: Final = 3  # 0-9
SPACE: Final = 4  # space, tab
NEWLINE: Final = 5  # \n \v \f \r
PUNCT: Final = 6  # every other ASCII byte (punctuation, symbols, control characters)
BACKSLASH: Final = 7  # \
CONT: Final = 8  # UTF-8 continuation byte 80-BF
LEAD2: Final = 9  # lead of a 2-byte character C0-DF (Latin accents, Greek, Cyrillic, ...)
LEAD3: Final = 10  # lead E0, E1, EE, EF (Indic, Thai, ..., fullwidth forms)
LEAD_E2: Final = 11  # lead E2: U+2000-2FFF (punctuation, arrows, box drawing, symbols)
LEAD_CJK: Final = 12  # lead E3-E9: U+3000-9FFF (CJK punctuation, kana, ideographs)
LEAD_HANGUL: Final = 13  # lead EA-ED: U+A000-DFFF (Hangul syllables; surrogates)
LEAD4: Final = 14  # lead F0-FF: 4-byte characters (emoji, ...)
CLASSES: Final = 15  # class ids are < 16: a pair code fits in one byte


def byte_class(byte: int) -> int:
    """The class of one byte value."""
    if 0x61 <= byte <= 0x7A:
        return LOWER
    if 0x41 <= byte <= 0x5A:
        return UPPER
    if 0x30 <= byte <= 0x39:
        return DIGIT
    if byte in (0x20, 0x09):
        return SPACE
    if 0x0A <= byte <= 0x0D:
        return NEWLINE
    if byte == 0x5C:
        return BACKSLASH
    if byte < 0x80:
        return PUNCT
    if byte < 0xC0:
        return CONT
    if byte < 0xE0:
        return LEAD2
    if byte == 0xE2:
        return LEAD_E2
    if 0xE3 <= byte <= 0xE9:
        return LEAD_CJK
    if 0xEA <= byte <= 0xED:
        return LEAD_HANGUL
    if byte < 0xF0:
        return LEAD3
    return LEAD4


BYTE_CLASS: Final = bytes(byte_class(b) for b in range(256))

ANY: Final = frozenset(range(1, CLASSES))
ANY_OR_START: Final = ANY | {START}
LETTER: Final = frozenset({LOWER, UPPER})
SYMBOL: Final = frozenset({PUNCT, BACKSLASH})
NON_ASCII: Final = frozenset({CONT, LEAD2, LEAD3, LEAD_E2, LEAD_CJK, LEAD_HANGUL, LEAD4})


def _count(classes: Iterable[int]) -> tuple[frozenset[int], frozenset[int]]:
    """Every byte of these classes."""
    return ANY_OR_START, frozenset(classes)


def _starts(classes: Iterable[int]) -> tuple[frozenset[int], frozenset[int]]:
    """The first byte of every run of these classes."""
    members = frozenset(classes)
    return ANY_OR_START - members, members


def _pair(previous: Iterable[int], current: Iterable[int]) -> tuple[frozenset[int], frozenset[int]]:
    """A byte of ``current`` right after a byte of ``previous``."""
    return frozenset(previous), frozenset(current)


# The features, in the order of WEIGHTS: name -> (previous classes, current classes).
FEATURES: Final[tuple[tuple[str, tuple[frozenset[int], frozenset[int]]], ...]] = (
    ("text", _pair({START}, ANY)),  # 1 for any non-empty text
    ("bytes", _count(ANY)),
    ("words", _starts(LETTER)),  # runs of ASCII letters
    ("camel", _pair({LOWER}, {UPPER})),  # camelCase humps
    ("upper", _count({UPPER})),
    ("digits", _count({DIGIT})),
    ("numbers", _starts({DIGIT})),  # runs of digits
    ("space_digit", _pair({SPACE}, {DIGIT})),  # a digit never absorbs the space before it
    ("symbols", _count(SYMBOL)),
    ("symbol_word", _pair(SYMBOL, LETTER)),  # ".foo", "(bar", "_baz": merge into one token
    ("escape_word", _pair({BACKSLASH}, LETTER)),  # "\n", "\t" inside JSON strings
    ("lines", _starts({NEWLINE})),  # runs of line breaks
    ("spaces", _count({SPACE})),
    ("space_run", _pair({SPACE}, {SPACE})),  # indentation and other runs of blanks
    ("lead2", _count({LEAD2})),
    ("lead3", _count({LEAD3})),
    ("lead_e2", _count({LEAD_E2})),
    ("lead_cjk", _count({LEAD_CJK})),
    ("lead_hangul", _count({LEAD_HANGUL})),
    ("lead4", _count({LEAD4})),
    ("non_ascii_runs", _starts(NON_ASCII)),
)

# Fixed-point weights, in units of 2**-SHIFT tokens, as printed by scripts/fit_tokens.py.
SHIFT: Final = 9
HALF: Final = 1 << (SHIFT - 1)
WEIGHTS: Final[tuple[int, ...]] = (
    191, 29, 182, 67, 61, 57, 883, 269, 132, 220, 690,
    833, 182, -202, 61, 148, -57, 276, 119, 1056, 669,
)  # fmt: skip


def pair_table(weights: Iterable[int]) -> list[int]:
    """``table[prev * 16 + cur]``: the summed weight of every feature the pair belongs to."""
    table = [0] * 256
    for weight, (_, (previous, current)) in zip(weights, FEATURES, strict=True):
        for p in previous:
            for c in current:
                table[p * 16 + c] += weight
    return table


PAIR_WEIGHTS: Final = pair_table(WEIGHTS)

# The pair weights as byte values for the adler32 sums: value + _OFFSET = _LOW + (_HIGH << 7).
_OFFSET: Final = max(0, -min(PAIR_WEIGHTS))
_LOW_BITS: Final = 7
_LOW: Final = bytes((w + _OFFSET) & 0x7F for w in PAIR_WEIGHTS)
_HIGH: Final = bytes((w + _OFFSET) >> _LOW_BITS for w in PAIR_WEIGHTS)
if max(_HIGH) > 31:  # pragma: no cover - a property of the committed weights
    raise AssertionError("pair weights out of range for the chunked adler32 sums")


_CHUNK: Final = 1 << 16  # long texts are summed in pieces: less memory, better cache use


def _byte_sum(data: bytes, chunk: int) -> int:
    """Sum of the byte values of ``data``; every ``chunk`` bytes must sum below 65521."""
    adler = zlib.adler32
    if len(data) <= chunk:
        return adler(data, 0) & 0xFFFF
    view = memoryview(data)
    return sum([adler(view[i : i + chunk], 0) & 0xFFFF for i in range(0, len(data), chunk)])


def raw_score(data: bytes) -> int:
    """The fixed-point model sum over UTF-8 ``data`` (before rounding)."""
    size = len(data)
    if size <= _CHUNK:
        return _raw_piece(data)
    total = 0
    for start in range(0, size, _CHUNK):
        piece = data[start : start + _CHUNK]
        total += _raw_piece(piece)
        if start:  # the piece's first byte has a real predecessor, not START
            first = BYTE_CLASS[piece[0]]
            total += PAIR_WEIGHTS[BYTE_CLASS[data[start - 1]] * 16 + first]
            total -= PAIR_WEIGHTS[START * 16 + first]
    return total


def _raw_piece(data: bytes) -> int:
    size = len(data)
    if not size:
        return 0
    classes = int.from_bytes(data.translate(BYTE_CLASS), "big")
    # Byte i of the big-endian number holds class_i; shifting right by 4 moves class_(i-1)
    # into its high nibble. The first byte's high nibble is 0: START.
    codes = ((classes >> 4) | classes).to_bytes(size, "big")
    low = _byte_sum(codes.translate(_LOW), 512)  # 512 * 127 < 65521
    high = _byte_sum(codes.translate(_HIGH), 2048)  # 2048 * 31 < 65521
    return low + (high << _LOW_BITS) - _OFFSET * size


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def count_tokens(text: str) -> int:
    """Estimated number of model tokens in ``text``: 0 for ``""``, at least 1 otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    if not text:
        return 0
    return max(1, (raw_score(_encode(text)) + HALF) >> SHIFT)


def count_tokens_many(texts: list[str] | tuple[str, ...], threads: int | None = None) -> list[int]:
    """``count_tokens`` of every text, in order (a list or tuple, as on the native engine;
    ``threads`` is accepted for parity)."""
    if not isinstance(texts, list | tuple):
        raise TypeError(f"expected a list or tuple of str, got {type(texts).__name__}")
    return [count_tokens(text) for text in texts]
