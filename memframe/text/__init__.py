"""Words as memframe compares them: one tokeniser for recall (BM25) and consolidation.

``terms`` case-folds the text, drops common English function words and one-letter words, and
reduces each remaining Latin word to a light stem (``stem``), so that "prices" and "price",
"committing" and "commit" are the same term. Chinese, Japanese and Korean text, written without
spaces, counts every character as a term. Light to import: no frame, no model.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Scripts written without spaces: every character is a term.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_ASCII_LETTERS = re.compile(r"[a-z]+")
_VOWEL = re.compile(r"[aeiouy]")
# Doubled final consonants that are part of the word ("install", "pass", "buzz"), not the
# doubling that "-ing"/"-ed" cause ("committing", "stopped").
_KEEP_DOUBLE = frozenset("lsz")

# Function words that say nothing about what a memory is about. Negations and "always"/"never"
# are here too: they carry a statement's polarity (consolidation reads that from the raw text),
# not its subject. The pieces of contractions ("don't" -> "don", "t") are listed so they do not
# become terms.
_STOPWORD_LIST = """
    a about again all also although always am an and any are aren as at be because been being
    but by can cannot could couldn did didn do does doesn doing don each every for from had hadn
    has hasn have haven having he her here hers him his how i if in into is isn it its itself
    just ll me might must mustn my myself never no nor not of on once only or other our ours
    ourselves over please re shall she should shouldn so some such than that the their theirs
    them then there these they this those though to too under unless until us ve very was wasn
    we were weren what when where which while who whom why will with won would wouldn you your
    yours yourself
"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())


def _undouble(stem: str) -> str:
    """``committ`` -> ``commit``; ``install``, ``pass``, ``agree`` and ``add`` stay."""
    last = stem[-1]
    if len(stem) >= 4 and last == stem[-2] and last not in _KEEP_DOUBLE and not _VOWEL.match(last):
        return stem[:-1]
    return stem


def _strip_inflection(word: str) -> str:
    """``word`` without one plural, third-person, past, progressive or adverb ending."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"  # libraries -> library
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"  # copied -> copy
    if word.endswith("s"):
        if word.endswith(("ss", "us", "is")):
            return word  # class, status, analysis
        return word[:-1]  # prices -> price, branches -> branche (-> branch below)
    if word.endswith("eed"):
        return word  # need, speed, proceed
    for ending in ("ing", "ed"):
        if word.endswith(ending):
            base = word[: -len(ending)]
            if not _VOWEL.search(base):
                return word  # string, thing, shed
            if len(base) < 3:
                return base + "e"  # using -> use, used -> use
            return _undouble(base)  # committing -> commit, stopped -> stop
    if word.endswith("able") and len(word) >= 8:
        return word[:-4]  # reachable -> reach, executable -> execut (as execute)
    if word.endswith("ly") and len(word) >= 6 and not word.endswith("ply"):
        if word.endswith("ily"):
            return word[:-3] + "y"  # easily -> easy
        return word[:-2]  # directly -> direct (but apply, reply, simply stay)
    return word


def stem(word: str) -> str:
    """A light English stem of a lower-case word.

    One ending is removed — plural and third-person ``-s``/``-es``/``-ies``, ``-ed``/``-ied``,
    ``-ing``, ``-able``, adverbial ``-ly`` — then a final silent ``e``, so every form of a word
    meets in one stem, which need not be a word itself: "price", "prices", "priced" and
    "pricing" are all ``pric``; "commit", "commits", "committed" and "committing" are
    ``commit``. Words shorter than four letters and words that are not plain ASCII letters are
    left alone, and no ending is removed when too little (or no vowel) would remain. ``-er`` is
    not removed: it would make "user" of "use" and "serve" of "server".
    """
    if len(word) < 4 or not _ASCII_LETTERS.fullmatch(word):
        return word
    base = _strip_inflection(word)
    if len(base) >= 4 and base.endswith("e") and not base.endswith("ee"):
        base = base[:-1]  # price -> pric, cache -> cach, branche -> branch
    return base


def terms(text: str) -> list[str]:
    """The stemmed content words of ``text`` in order (repeats kept)."""
    out: list[str] = []
    for word in _WORD.findall(text.casefold()):
        if _CJK.search(word):
            out.extend(ch for ch in word)
        elif word not in STOPWORDS and len(word) > 1:
            out.append(stem(word))
    return out
