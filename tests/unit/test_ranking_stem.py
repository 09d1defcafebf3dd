"""Light stemming and stop words (memframe.text), shared by BM25 recall and consolidation: the
forms of a word meet, different words stay apart, and recall finds a memory whatever form of a
word the prompt uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from memframe import text
from memframe.memdir.files import Memory
from memframe.memdir.recall import bm25_select
from memframe.models.offline import consolidate
from memframe.text import STOPWORDS, ranking, stem, terms
from memframe.text.ranking import Document, bm25

FAMILIES = [
    ("price", "prices", "priced", "pricing"),
    ("commit", "commits", "committed", "committing"),
    ("cache", "caches", "cached", "caching"),
    ("merge", "merges", "merged", "merging"),
    ("use", "uses", "used", "using"),
    ("install", "installs", "installed", "installing"),
    ("pass", "passes", "passed", "passing"),
    ("stop", "stops", "stopped", "stopping"),
    ("run", "runs", "running"),
    ("deploy", "deploys", "deployed", "deploying"),
    ("library", "libraries"),
    ("copy", "copies", "copied"),
    ("branch", "branches"),
    ("box", "boxes"),
    ("add", "adds", "added", "adding"),
    ("write", "writes", "writing"),
    ("reach", "reachable"),
    ("direct", "directly"),
    ("easy", "easily"),
]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family[0])
def test_the_forms_of_a_word_share_one_stem(family: tuple[str, ...]) -> None:
    assert len({stem(word) for word in family}) == 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("use", "user"),  # no -er stripping
        ("serve", "server"),
        ("apply", "app"),  # -ly only as an adverb ending
        ("reply", "rep"),
        ("need", "ne"),  # -eed is not -ed
        ("string", "str"),  # -ing needs a vowel before it
    ],
)
def test_different_words_keep_different_stems(a: str, b: str) -> None:
    assert stem(a) != stem(b)


@pytest.mark.parametrize(
    "word",
    [
        *("go", "js", "aws", "bus", "ci", "café", "v2s"),  # short, or not plain ASCII letters
        *("status", "class", "analysis", "need", "string", "thing"),  # no ending to remove
    ],
)
def test_words_without_an_ending_to_remove_are_left_alone(word: str) -> None:
    assert stem(word) == word


def test_terms_drop_stop_words_contractions_and_single_letters() -> None:
    words = "Don't commit the caches; we've always pushed to main, isn't it? x"
    assert terms(words) == [stem("commit"), stem("caches"), stem("pushed"), stem("main")]
    assert not set(terms(" ".join(sorted(STOPWORDS))))


def test_text_without_spaces_counts_each_character() -> None:
    assert terms("用户偏好") == ["用", "户", "偏", "好"]


def test_recall_and_consolidation_use_one_tokeniser() -> None:
    assert ranking.terms is text.terms
    assert consolidate.terms is text.terms


MEMORIES = {
    "lint": "Always run make lint before you commit; CI rejects commits that fail the linter.",
    "pricing": "Plan prices live in billing/plans.yaml; change them there, never in the code.",
    "deps": "Third-party libraries are pinned in requirements.lock; bump them with make lock.",
    "deploy": "Deploys go out from the release branch after the nightly build passes.",
    "caching": "The HTTP cache is cleared on every deploy; do not rely on cached responses.",
}


def ranked(query: str) -> list[str]:
    return [key for key, _ in bm25(query, [Document(k, ((v, 1.0),)) for k, v in MEMORIES.items()])]


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("I'm committing the fix now", "lint"),
        ("how is the price of a plan set?", "pricing"),
        ("which library is pinned", "deps"),
        ("the caches look stale", "caching"),
        ("we deployed from the wrong branches", "deploy"),
    ],
)
def test_recall_finds_a_memory_whatever_form_of_a_word_the_prompt_uses(
    query: str, best: str
) -> None:
    found = ranked(query)
    assert found and found[0] == best


def test_a_prompt_of_stop_words_only_matches_nothing() -> None:
    assert ranked("what would you do if it were not there?") == []


def test_bm25_select_ranks_the_name_above_the_body() -> None:
    named = Memory(Path("a.md"), "Pricing", "where plans live", "feedback", "See the billing repo.")
    body = Memory(Path("b.md"), "Billing", "the billing repo", "feedback", "Prices change often.")
    other = Memory(Path("c.md"), "Linting", "before commits", "feedback", "Run make lint.")
    chosen = bm25_select("what are the prices?", [other, body, named], limit=2)
    assert chosen == [named, body]
