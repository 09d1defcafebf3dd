"""Consolidation without a model: settle contradictions, merge duplicates, make dates absolute.

Everything is compared by content words: :func:`memframe.text.terms` of the text (case-folded,
stop words out, light stemming) without the negation words, so rewording, plurals and verb forms
do not hide that two memories say the same thing. Only memories of the same type and the same
scope (``team/`` or private) are compared with each other. In order:

1. **Contradictions.** A sentence of an older memory that says the opposite of a sentence of a
   newer one — "always X" / "never X", "do X" / "don't X", "use X, not Y" / "use Y" — is dropped
   from the older memory, which is deleted when nothing else is left in it. The two statements
   are about the same thing when the content words of one are all among the other's, with at
   most ``CONTRADICTION_EXTRA`` more (half the smaller set when that is more), and their
   polarity differs.
2. **Duplicates.** Two memories state the same fact when they are equal after normalisation,
   or when at least ``MIN_TERMS`` content words of the smaller are shared, those shared words
   are at least ``SAME_FACT`` of the smaller set and at least ``SHARE_OF_LARGER`` of the
   larger. The newest of a group is kept and the others are deleted, but a sentence of an older
   one whose content words are not at least ``COVERED`` among the kept memory's sentences of
   the same polarity is appended to the kept memory: a merge never silently loses a fact.
3. **Dates.** "today", "yesterday" and "tomorrow" become the date they meant, taken from the
   mtime of the file the sentence came from.

The answer's text says what was done and why, one line each (the dream layer reports it). The
layer rebuilds ``MEMORY.md`` afterwards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from memframe.memdir.files import TEAM_DIR, normalise
from memframe.models.base import ModelRequest, ModelResponse, ToolCall
from memframe.models.offline._common import OWN_CALL_PREFIX, clip
from memframe.text import terms

SAME_FACT = 0.8
SHARE_OF_LARGER = 0.4
MIN_TERMS = 3
COVERED = 0.8
CONTRADICTION_EXTRA = 1
QUOTE_CHARS = 80

_RELATIVE = re.compile(r"\b(today|yesterday|tomorrow)\b", re.IGNORECASE)
_OFFSETS = {"today": 0, "yesterday": -1, "tomorrow": 1}
# A sentence ends at . ! ? or ; followed by white space; every line is its own sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# Words, contractions kept whole ("don't"), and the punctuation that ends a clause.
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[,:()\u2014\u2013]")
_NEGATIONS = frozenset(
    {"never", "not", "no", "cannot", "avoid", "avoids", "avoided", "avoiding"}
    | {"dont", "doesnt", "didnt", "isnt", "arent", "shouldnt", "mustnt", "wouldnt"}
)
# "use pnpm, not npm", "pnpm instead of npm", "pnpm rather than npm", "answers without long
# explanations": one thing affirmed, another denied.
_CONTRAST_PHRASES = (("not",), ("never",), ("without",), ("instead", "of"), ("rather", "than"))
# Terms that are a statement's polarity rather than its subject.
_POLARITY_TERMS = frozenset(terms(" ".join(sorted(_NEGATIONS | {"without", "instead", "rather"}))))


def content_words(text: str) -> frozenset[str]:
    """The stemmed content words of ``text``, without negation words."""
    return frozenset(terms(text)) - _POLARITY_TERMS


@lru_cache(maxsize=4096)
def _is_content(token: str) -> bool:
    return bool(content_words(token))


def _is_negation(token: str) -> bool:
    return token in _NEGATIONS or token.endswith("n't")


@dataclass(frozen=True)
class Claim:
    """One thing a sentence says: these content words, affirmed or denied."""

    words: frozenset[str]
    negative: bool


@dataclass(frozen=True)
class Sentence:
    text: str
    words: frozenset[str]
    claims: tuple[Claim, ...]

    @property
    def negative(self) -> bool:
        return any(claim.negative for claim in self.claims)


def _clauses(sentence: str) -> list[list[str]]:
    """The lower-case tokens of ``sentence``, cut at commas, colons, dashes and brackets."""
    clauses: list[list[str]] = [[]]
    for token in _TOKEN.findall(sentence.casefold().replace("\u2019", "'")):
        if token[0].isalnum() or token[0] == "_":
            clauses[-1].append(token)
        elif clauses[-1]:
            clauses.append([])
    return [clause for clause in clauses if clause]


def _words(tokens: list[str]) -> frozenset[str]:
    return content_words(" ".join(tokens))


def _contrast_starting(tokens: list[str], at: int) -> int:
    """How many tokens the contrast marker at ``tokens[at]`` has (0: none there)."""
    for phrase in _CONTRAST_PHRASES:
        if tuple(tokens[at : at + len(phrase)]) == phrase:
            return len(phrase)
    return 0


def _contrast_at(tokens: list[str]) -> tuple[int, int] | None:
    """Where a contrast marker starts inside a clause, straight after a content word, and how
    many tokens it has: "use pnpm not npm" and "pnpm instead of npm", but not "tests should
    not" (a plain negation)."""
    for i in range(1, len(tokens)):
        size = _contrast_starting(tokens, i)
        if size and _is_content(tokens[i - 1]):
            return i, size
    return None


def _contrasted(tokens: list[str]) -> tuple[list[str], list[str]]:
    """The phrase a contrast denies (its first run of content words, "and"/"or" allowed
    inside) and what follows it."""
    i = 0
    while i < len(tokens) and not _is_content(tokens[i]):
        i += 1
    start = i
    while i < len(tokens) and (
        _is_content(tokens[i])
        or (tokens[i] in {"and", "or"} and i + 1 < len(tokens) and _is_content(tokens[i + 1]))
    ):
        i += 1
    return tokens[start:i], tokens[i:]


def _last_content(tokens: list[str]) -> frozenset[str]:
    for token in reversed(tokens):
        if _is_content(token):
            return content_words(token)
    return frozenset()


def claims_of(sentence: str) -> tuple[Claim, ...]:
    """What a sentence affirms and denies, clause by clause.

    A clause with a negation word denies its content words ("never push to main"). A contrast
    affirms one thing and denies another in the same context: "use pnpm, not npm" and "use
    pnpm instead of npm" affirm {use, pnpm} and deny {use, npm}; the denied thing is the first
    run of content words after the marker, the affirmed one the last content word before it.
    """
    claims: list[Claim] = []
    previous: list[str] = []
    for clause in _clauses(sentence):
        size = _contrast_starting(clause, 0)
        if size and previous:  # "use pnpm, not npm": the previous clause's context
            denied, rest = _contrasted(clause[size:])
            context = _words(previous) - _last_content(previous)
            claims.append(Claim(context | _words(denied), True))
            if _words(rest):
                claims.append(Claim(_words(rest), any(map(_is_negation, rest))))
        elif (marker := _contrast_at(clause)) is not None:
            at, size = marker
            before = clause[:at]
            denied, rest = _contrasted(clause[at + size :])
            context = _words(before) - _last_content(before)
            claims.append(Claim(_words(before) | _words(rest), False))
            claims.append(Claim(context | _words(denied) | _words(rest), True))
        elif words := _words(clause):
            claims.append(Claim(words, bool(size) or any(map(_is_negation, clause))))
        previous = clause
    return tuple(claims)


def split_sentences(body: str) -> list[str]:
    """The sentences of a body as they are written (list markers off), line by line; Markdown
    headings are titles, not statements, and are left out."""
    out: list[str] = []
    for line in body.splitlines():
        line = _LIST_MARK.sub("", line).strip()
        if line.startswith("#"):
            continue
        out.extend(part.strip() for part in _SENTENCE_END.split(line) if part.strip())
    return out


def sentence(text: str) -> Sentence:
    return Sentence(text, content_words(text), claims_of(text))


def _opposed(older: Claim, newer: Claim) -> bool:
    if older.negative == newer.negative:
        return False
    small, large = sorted((older.words, newer.words), key=len)
    extra = max(CONTRADICTION_EXTRA, len(small) // 2)
    return len(small) >= 2 and small <= large and len(large) - len(small) <= extra


def contradicts(older: Sentence, newer: Sentence) -> bool:
    """Whether two sentences say opposite things about the same subject."""
    return any(_opposed(a, b) for a in older.claims for b in newer.claims)


def at_odds(a: tuple[Claim, ...], b: tuple[Claim, ...]) -> bool:
    """Whether one set of claims denies much of what the other affirms (then two memories are
    not merged, however many words they share)."""
    for x in a:
        for y in b:
            if x.negative != y.negative:
                shared = len(x.words & y.words)
                if shared >= 2 and 2 * shared >= min(len(x.words), len(y.words)):
                    return True
    return False


def same_fact(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two content-word sets state the same fact (see the module docstring)."""
    small, large = sorted((a, b), key=len)
    shared = len(small & large)
    return (
        shared >= MIN_TERMS
        and shared >= SAME_FACT * len(small)
        and shared >= SHARE_OF_LARGER * len(large)
    )


def _covered(candidate: Sentence, kept: list[Sentence]) -> bool:
    """Whether the kept sentences of the same polarity already hold a sentence's words."""
    if not candidate.words:
        return True
    known: set[str] = set()
    for other in kept:
        if other.negative == candidate.negative:
            known |= other.words
    return len(candidate.words & known) >= COVERED * len(candidate.words)


@dataclass
class _Entry:
    """One memory while it is being consolidated."""

    memory: dict[str, Any]
    sentences: list[Sentence]
    dropped: list[Sentence] = field(default_factory=list)
    carried: list[Sentence] = field(default_factory=list)
    deleted: bool = False

    @property
    def file(self) -> str:
        return str(self.memory["file"])

    @property
    def kind(self) -> tuple[str, bool]:
        """Type and scope: only memories alike in both are compared."""
        return str(self.memory["type"]), self.file.startswith(f"{TEAM_DIR}/")

    @property
    def mtime(self) -> float:
        return float(self.memory["mtime"])

    @property
    def living(self) -> list[Sentence]:
        return [s for s in self.sentences if s not in self.dropped]

    def body(self) -> str:
        body = str(self.memory["body"])
        for gone in self.dropped:
            body = _without(body, gone.text)
        if self.carried:
            body = body.rstrip() + "\n\n" + " ".join(s.text for s in self.carried)
        return body.strip("\n")

    def words(self) -> frozenset[str]:
        return frozenset().union(*(s.words for s in self.living))


def _without(body: str, text: str) -> str:
    """``body`` with one sentence taken out (and the line it leaves empty)."""
    lines = body.splitlines()
    for n, line in enumerate(lines):
        if text in line:
            rest = line.replace(text, "", 1)
            if _LIST_MARK.sub("", rest).strip():
                lines[n] = re.sub(r"\s{2,}", " ", rest).rstrip()
            else:
                del lines[n]
            break
    return "\n".join(lines)


def _entries(memories: list[dict[str, Any]]) -> list[_Entry]:
    """The memories newest first (ties by file name, so the result is deterministic)."""
    ordered = sorted(memories, key=lambda m: (-float(m["mtime"]), str(m["file"])))
    return [_Entry(m, [sentence(s) for s in split_sentences(str(m["body"]))]) for m in ordered]


def _quote(text: str) -> str:
    return "'" + clip(text, QUOTE_CHARS) + "'"


def settle_contradictions(entries: list[_Entry]) -> list[str]:
    """Drop each older sentence that a newer memory contradicts; a memory left with nothing
    is deleted. Returns what was done, one line each."""
    notes: list[str] = []
    for n, older in enumerate(entries):
        found: list[str] = []
        for candidate in older.sentences:
            for newer in entries[:n]:
                if newer.deleted or newer.kind != older.kind:
                    continue
                winner = next((s for s in newer.living if contradicts(candidate, s)), None)
                if winner is not None:
                    older.dropped.append(candidate)
                    found.append(
                        f"kept newer {_quote(winner.text)} ({newer.file}) over older "
                        f"{_quote(candidate.text)} ({older.file})"
                    )
                    break
        if not found:
            continue
        older.deleted = not any(s.words for s in older.living)
        outcome = "deleted it" if older.deleted else "removed it from the older memory"
        notes.extend(f"{line}: {outcome}" for line in found)
    return notes


def duplicate_groups(memories: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Groups (newest first) of memories that say the same thing."""
    return [[e.memory for e in group] for group in _groups(_entries(memories))]


def _groups(entries: list[_Entry]) -> list[list[_Entry]]:
    alive = [e for e in entries if not e.deleted]
    exact = [normalise(e.body()) for e in alive]
    words = [e.words() for e in alive]
    claims = [tuple(c for s in e.living for c in s.claims) for e in alive]
    assigned: set[int] = set()
    groups: list[list[_Entry]] = []
    for i, entry in enumerate(alive):
        if i in assigned:
            continue
        group = [entry]
        for j in range(i + 1, len(alive)):
            if j in assigned or alive[j].kind != entry.kind:
                continue
            if exact[i] == exact[j] or (
                same_fact(words[i], words[j]) and not at_odds(claims[i], claims[j])
            ):
                group.append(alive[j])
                assigned.add(j)
        if len(group) > 1:
            groups.append(group)
    return groups


def merge_duplicates(entries: list[_Entry]) -> list[str]:
    """Keep the newest of each group, carrying over the sentences only older ones have."""
    notes: list[str] = []
    for kept, *older in _groups(entries):
        for extra in older:
            known = kept.living + kept.carried
            carried = [s for s in extra.living if not _covered(s, known)]
            for item in carried:
                fixed = absolute_dates(item.text, extra.mtime)
                kept.carried.append(sentence(fixed))
            extra.deleted = True
            note = f"merged {extra.file} into {kept.file} (the same fact)"
            if carried:
                note += f"; kept {len(carried)} sentence(s) only {extra.file} had"
            notes.append(note)
    return notes


def absolute_dates(text: str, written: float) -> str:
    day = datetime.fromtimestamp(written, UTC).date()

    def replace(match: re.Match[str]) -> str:
        return (day + timedelta(days=_OFFSETS[match.group(1).lower()])).isoformat()

    return _RELATIVE.sub(replace, text)


def _with_body(text: str, old: str, new: str) -> str:
    at = text.rfind(old) if old else len(text.rstrip("\n"))
    if at < 0:
        return text
    return text[:at] + new + text[at + len(old) :]


def consolidate_recipe(request: ModelRequest) -> ModelResponse:
    entries = _entries(list(request.task.get("memories", [])))
    notes = settle_contradictions(entries)
    notes += merge_duplicates(entries)
    calls: list[ToolCall] = []

    def call(name: str, arguments: dict[str, Any]) -> None:
        calls.append(ToolCall(f"{OWN_CALL_PREFIX}{len(calls) + 1}", name, arguments))

    for entry in entries:
        if entry.deleted:
            call("Delete", {"file_path": entry.memory["path"]})
    for entry in entries:
        if entry.deleted:
            continue
        text = str(entry.memory["text"])
        changed = _with_body(text, str(entry.memory["body"]), entry.body())
        fixed = absolute_dates(changed, entry.mtime)
        if fixed != changed:
            notes.append(f"made relative dates absolute in {entry.file}")
        if fixed != text:
            call("Write", {"file_path": entry.memory["path"], "content": fixed})
    if not calls:
        return ModelResponse(text="Nothing to consolidate.", stop_reason="end_turn")
    return ModelResponse(text="\n".join(notes), tool_calls=tuple(calls), stop_reason="tool_use")
