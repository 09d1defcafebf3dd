"""The offline consolidation (``dream`` without a model): paraphrases of one fact merge, different
facts about the same subject do not, a merge keeps what only the older memories said, and "always
X" / "never X" keeps the newer one and says so."""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memframe.frame import MemoryFrame
from memframe.layers.dream import DreamLayer
from memframe.memdir.files import parse_memory, render_memory
from memframe.models.base import ModelRequest, ModelResponse
from memframe.models.offline.consolidate import (
    consolidate_recipe,
    content_words,
    contradicts,
    duplicate_groups,
    sentence,
)
from memframe.text import terms
from tests.layers.memdir_helpers import DAY, DREAM, MEMDIR, memory_files, write_memory

ROOT = Path("/memories")

# Five facts, each first as it was saved and then reworded as later sessions saved it again:
# 12 paraphrases in all.
PARAPHRASES: dict[str, tuple[str, list[str]]] = {
    "lint": (
        "feedback",
        [
            "Run make lint before committing; CI rejects commits that fail the linter.",
            "Before every commit, run make lint — the CI pipeline rejects commits that fail "
            "linting.",
            "CI rejects any commit that fails the linter, so always run make lint before you "
            "commit.",
            "Always run `make lint` before committing: commits failing the linter get rejected "
            "by CI.",
        ],
    ),
    "vpn": (
        "project",
        [
            "The staging database is only reachable over the company VPN.",
            "You can only reach the staging database when connected to the company VPN.",
            "Connect to the company VPN first: the staging database cannot be reached from "
            "outside it.",
            "The company VPN is required to reach the staging database.",
        ],
    ),
    "role": (
        "user",
        [
            "The user is a data engineer who prefers short, direct answers without long "
            "explanations.",
            "User works as a data engineer and prefers short, direct answers rather than long "
            "explanations.",
            "Prefers short and direct answers; the user is a data engineer.",
        ],
    ),
    "bugs": (
        "reference",
        [
            "Bugs are tracked in the Linear project INFRA; link the ticket in every pull request.",
            "Track bugs in Linear under the INFRA project and link the ticket from each pull "
            "request.",
            "Every pull request should link its INFRA ticket; bugs live in the Linear project "
            "INFRA.",
        ],
    ),
    "release": (
        "project",
        [
            "Releases are cut every Tuesday from the main branch after the nightly build passes.",
            "We cut a release from main every Tuesday, once the nightly build has passed.",
            "Every Tuesday a release is cut from the main branch, provided the nightly build "
            "passes.",
        ],
    ),
}

# Different facts, many about the same subject as one of the above, of the same type: none may
# be merged with anything.
DISTINCT: list[tuple[str, str]] = [
    ("feedback", "Run make lint before pushing a release tag; CI skips the linter on tags."),
    ("feedback", "Run make lint-fix to fix lint errors automatically."),
    ("feedback", "Run the linter on changed files only when working on the monorepo."),
    ("feedback", "Use pnpm for installs."),
    ("feedback", "Use pnpm for the monorepo scripts."),
    ("feedback", "Never commit directly to main; open a pull request for every change."),
    ("project", "The staging database is reachable without the VPN from the office network."),
    ("project", "The staging database is reset every Sunday night from a production snapshot."),
    ("project", "The production database is only reachable from the bastion host."),
    ("project", "Hotfix releases are cut from the release branch whenever needed."),
    ("project", "The nightly build runs the full test suite against the main branch."),
    ("user", "The user is a backend engineer who prefers detailed explanations with examples."),
    ("user", "The user is a data engineer on the platform team, based in Berlin."),
    ("reference", "Feature requests are tracked in the Linear project PRODUCT, not in INFRA."),
    ("reference", "Incidents are tracked in PagerDuty; link the incident in the postmortem."),
    ("reference", "Pull request templates live in .github/PULL_REQUEST_TEMPLATE.md."),
]


def memory(file: str, body: str, kind: str = "feedback", mtime: float = 1e9) -> dict[str, Any]:
    """A memory as the dream layer hands it to the backend."""
    path = ROOT / file
    return {
        "path": str(path),
        "file": file,
        "type": kind,
        "body": body,
        "text": render_memory(Path(file).stem, body.splitlines()[0][:80], kind, body),
        "mtime": mtime,
    }


def labelled_memories() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The paraphrases (interleaved, as sessions would have saved them) and the distinct facts,
    with each file's label: its fact, or its own name for a distinct one."""
    labels: dict[str, str] = {}
    memories: list[dict[str, Any]] = []
    clock = itertools.count(1)
    rounds = itertools.zip_longest(*(texts for _, texts in PARAPHRASES.values()))
    for n, texts in enumerate(rounds):
        for (fact, (kind, _)), text in zip(PARAPHRASES.items(), texts, strict=True):
            if text is not None:
                file = f"{fact}-{n}.md"
                labels[file] = fact
                memories.append(memory(file, text, kind, 1e9 + next(clock) * DAY))
    for n, (kind, text) in enumerate(DISTINCT):
        file = f"distinct-{n}.md"
        labels[file] = file
        memories.append(memory(file, text, kind, 1e9 + next(clock) * DAY))
    return memories, labels


def run(memories: list[dict[str, Any]]) -> tuple[list[str], dict[str, str], list[str]]:
    """Deleted files, written files (file -> body) and the report of one offline run."""
    response = consolidate_recipe(
        ModelRequest(system="", messages=[], purpose="dream", task={"memories": memories})
    )
    deleted: list[str] = []
    written: dict[str, str] = {}
    for call in response.tool_calls:
        file = Path(str(call.input["file_path"])).relative_to(ROOT).as_posix()
        if call.name == "Delete":
            deleted.append(file)
        else:
            assert call.name == "Write"
            written[file] = parse_memory(str(call.input["content"]), ROOT / file).body
    return deleted, written, response.text.splitlines()


# -- duplicates -----------------------------------------------------------------------------------


def test_paraphrases_merge_and_different_facts_do_not() -> None:
    memories, labels = labelled_memories()
    groups = duplicate_groups(memories)
    false_merges = [
        [m["file"] for m in group]
        for group in groups
        if len({labels[str(m["file"])] for m in group}) > 1
    ]
    assert false_merges == []
    merged = sum(len(group) - 1 for group in groups)
    paraphrases = sum(len(texts) - 1 for _, texts in PARAPHRASES.values())
    assert paraphrases == 12
    assert merged >= 10
    # each fact ends up in at most one group: the newest statement of it absorbs the others
    facts = [labels[str(group[0]["file"])] for group in groups]
    assert len(facts) == len(set(facts))


def test_the_whole_run_deletes_exactly_the_older_duplicates() -> None:
    memories, labels = labelled_memories()
    older = sorted(str(m["file"]) for group in duplicate_groups(memories) for m in group[1:])
    deleted, written, report = run(memories)
    assert sorted(deleted) == older
    assert not any(labels[file].startswith("distinct-") for file in deleted)
    assert not any(file.startswith("distinct-") for file in written)
    assert sum(1 for line in report if line.startswith("merged ")) == len(deleted)


def test_short_memories_merge_only_when_they_are_the_same_text() -> None:
    older = memory("a.md", "Use pnpm.", mtime=1e9)
    assert duplicate_groups([older, memory("b.md", "Use pnpm, always.", mtime=2e9)]) == []
    same = memory("c.md", "  use PNPM. ", mtime=3e9)
    assert duplicate_groups([older, same]) == [[same, older]]
    three = memory("d.md", "Use pnpm for installs.", mtime=1e9)
    again = memory("e.md", "Always use pnpm for installs.", mtime=2e9)
    assert duplicate_groups([three, again]) == [[again, three]]


def test_only_memories_of_the_same_type_and_scope_are_merged() -> None:
    text = "Run make lint before committing; CI rejects commits that fail the linter."
    reworded = "CI rejects any commit that fails the linter, so run make lint before you commit."
    private = memory("lint.md", text, "feedback", 1e9)
    assert duplicate_groups([private, memory("lint-user.md", reworded, "user", 2e9)]) == []
    assert duplicate_groups([private, memory("team/lint.md", reworded, "feedback", 2e9)]) == []
    again = memory("lint-again.md", reworded, "feedback", 2e9)
    assert duplicate_groups([private, again]) == [[again, private]]


def test_a_merge_keeps_the_sentences_only_an_older_memory_had() -> None:
    written_at = datetime(2025, 3, 10, 12, tzinfo=UTC).timestamp()
    older = memory(
        "deploy-old.md",
        "Deploy to staging with make deploy-staging and wait for the health checks.\n"
        "The staging deploy key expires tomorrow.",
        "project",
        written_at,
    )
    newer_body = (
        "Deploy to staging with make deploy-staging, then wait until the health checks pass."
    )
    newer = memory("deploy.md", newer_body, "project", written_at + 5 * DAY)
    deleted, written, report = run([older, newer])
    assert deleted == ["deploy-old.md"]
    body = written["deploy.md"]
    assert body.startswith(newer_body)  # the newest wording stays first, as it was
    # the fact only the older one had is carried over, its date made absolute from its own mtime
    assert "The staging deploy key expires 2025-03-11." in body
    assert "wait for the health checks" not in body  # what both said is not repeated
    assert report == [
        "merged deploy-old.md into deploy.md (the same fact); kept 1 sentence(s) "
        "only deploy-old.md had"
    ]


def test_a_merged_directory_is_stable() -> None:
    memories, _ = labelled_memories()
    deleted, written, _ = run(memories)
    after = []
    for m in memories:
        if m["file"] in deleted:
            continue
        body = written.get(str(m["file"]), str(m["body"]))
        after.append(memory(str(m["file"]), body, str(m["type"]), float(m["mtime"])))
    again = consolidate_recipe(
        ModelRequest(system="", messages=[], purpose="dream", task={"memories": after})
    )
    assert again.tool_calls == ()
    assert again.text == "Nothing to consolidate."


# -- contradictions -------------------------------------------------------------------------------

CONTRADICTIONS = [
    ("Always use tabs for indentation.", "Never use tabs for indentation."),
    ("Do squash commits when merging.", "Don't squash commits when merging."),
    ("Use npm for installs.", "Use pnpm, not npm, for installs."),
    ("Use npm for installs.", "Don't use npm for installs."),
    ("Use pnpm not npm.", "Use npm not pnpm."),
    ("Use pnpm instead of npm.", "Always use npm."),
    ("Run the tests locally, not in CI.", "Run the tests in CI, not locally."),
    ("Mock the database in integration tests.", "Avoid mocking the database in integration tests."),
    ("Tests should not hit the network.", "Tests should hit the network."),
]
COMPATIBLE = [
    ("Don't run the e2e tests locally.", "Run the e2e tests in CI."),
    ("Don't use npm for installs.", "Use pnpm instead of npm for installs."),
    ("Always use pnpm.", "Don't use npm, use pnpm."),
    ("Use pnpm for installs.", "Use pnpm instead of npm for installs."),
    ("Never push to main.", "Open a pull request for every change to main."),
    (
        "The user prefers short answers without long explanations.",
        "The user prefers short, direct answers.",
    ),
    ("Tests should not hit the network.", "Tests should never hit the network."),
    ("Use pnpm, not npm.", "Use pnpm, not yarn."),
    ("Always use tabs for indentation.", "Always use tabs in Go files."),
]


@pytest.mark.parametrize(("older", "newer"), CONTRADICTIONS)
def test_opposite_statements_contradict_each_other(older: str, newer: str) -> None:
    assert contradicts(sentence(older), sentence(newer))
    assert contradicts(sentence(newer), sentence(older))


@pytest.mark.parametrize(("older", "newer"), COMPATIBLE)
def test_statements_that_agree_or_differ_do_not_contradict(older: str, newer: str) -> None:
    assert not contradicts(sentence(older), sentence(newer))
    assert not contradicts(sentence(newer), sentence(older))


@pytest.mark.parametrize(("older", "newer"), CONTRADICTIONS)
def test_the_newer_statement_wins_and_the_report_says_so(older: str, newer: str) -> None:
    deleted, written, report = run(
        [memory("old.md", older, mtime=1e9), memory("new.md", newer, mtime=2e9)]
    )
    assert deleted == ["old.md"] and written == {}
    assert report == [f"kept newer '{newer}' (new.md) over older '{older}' (old.md): deleted it"]


def test_the_older_memory_keeps_what_was_not_contradicted() -> None:
    older = memory(
        "git.md",
        "- Always rebase feature branches before merging.\n- CI runs the e2e suite on every push.",
        mtime=1e9,
    )
    newer = memory("no-rebase.md", "Never rebase feature branches before merging.", mtime=2e9)
    deleted, written, report = run([newer, older])
    assert deleted == []
    assert written == {"git.md": "- CI runs the e2e suite on every push."}
    assert report == [
        "kept newer 'Never rebase feature branches before merging.' (no-rebase.md) over older "
        "'Always rebase feature branches before merging.' (git.md): removed it from the older "
        "memory"
    ]


def test_a_heading_alone_does_not_keep_a_contradicted_memory() -> None:
    older = memory("tabs.md", "# Tabs\n\nAlways use tabs for indentation.", mtime=1e9)
    newer = memory("spaces.md", "Never use tabs for indentation.", mtime=2e9)
    deleted, _, _ = run([older, newer])
    assert deleted == ["tabs.md"]


def test_whichever_is_newer_wins() -> None:
    always = "Always squash commits when merging a pull request."
    never = "Never squash commits when merging a pull request."
    for newest, oldest in ((always, never), (never, always)):
        deleted, _, _ = run([memory("a.md", oldest, mtime=1e9), memory("b.md", newest, mtime=2e9)])
        assert deleted == ["a.md"]


def test_a_contradiction_only_counts_within_one_type() -> None:
    deleted, _, report = run(
        [
            memory("a.md", "Always use tabs for indentation.", "feedback", 1e9),
            memory("b.md", "Never use tabs for indentation.", "user", 2e9),
        ]
    )
    assert deleted == [] and report == ["Nothing to consolidate."]


def test_a_statement_an_even_newer_one_overruled_does_not_overrule_others() -> None:
    memories = [
        memory("first.md", "Never use tabs for indentation.", mtime=1e9),
        memory("second.md", "Always use tabs for indentation.", mtime=2e9),
        memory("third.md", "Never use tabs for indentation!", mtime=3e9),
    ]
    deleted, _, _ = run(memories)
    assert sorted(deleted) == ["first.md", "second.md"]  # second overruled, first a duplicate


# -- the words ------------------------------------------------------------------------------------


def test_consolidation_compares_the_same_terms_recall_ranks() -> None:
    text = "Don't commit the caches: they're rebuilt on every build, never committed."
    assert content_words(text) <= set(terms(text))
    assert content_words("committing cached prices") == content_words("commit caches price")


# -- through the dream layer ----------------------------------------------------------------------


@pytest.fixture
def dream(frame_factory: Callable[..., MemoryFrame]) -> DreamLayer:
    frame = frame_factory(builtin_layers=[MEMDIR, DREAM])
    layer = frame.manager.get_plugin("dream")
    assert isinstance(layer, DreamLayer)
    return layer


def test_dream_reports_what_it_merged_and_which_statement_won(dream: DreamLayer) -> None:
    root = dream.store.root
    now = time.time()
    write_memory(root, "tabs.md", "Always use tabs for indentation.", mtime=now - 3 * DAY)
    write_memory(root, "spaces.md", "Never use tabs for indentation.", mtime=now - DAY)
    lint = "Run make lint before committing; CI rejects commits that fail the linter."
    write_memory(root, "lint.md", lint, mtime=now - 5 * DAY)
    write_memory(
        root,
        "lint-again.md",
        "CI rejects any commit that fails the linter, so always run make lint before you commit.",
        mtime=now - 2 * DAY,
    )
    result = dream.consolidate()
    assert result.ran and sorted(result.deleted) == ["lint.md", "tabs.md"]
    assert memory_files(root) == ["lint-again.md", "spaces.md"]
    assert result.report == [
        "kept newer 'Never use tabs for indentation.' (spaces.md) over older "
        "'Always use tabs for indentation.' (tabs.md): deleted it",
        "merged lint.md into lint-again.md (the same fact)",
    ]
    again = dream.consolidate()
    assert again.ran and again.deleted == [] and again.report == ["Nothing to consolidate."]


def test_dream_reports_what_a_model_said(
    dream: DreamLayer, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Talkative:
        name = "talkative"

        def complete(self, request: ModelRequest) -> ModelResponse:
            return ModelResponse(text="Merged two memories.\n\nResolved one contradiction.")

    monkeypatch.setattr(dream.frame, "model_backend", Talkative)
    result = dream.consolidate()
    assert result.ran
    assert result.report == ["Merged two memories.", "Resolved one contradiction."]


def test_dream_reports_the_dates_it_made_absolute(dream: DreamLayer) -> None:
    root = dream.store.root
    written_at = datetime(2025, 3, 10, 12, tzinfo=UTC).timestamp()
    path = write_memory(root, "freeze.md", "The freeze starts tomorrow.", kind="project")
    os.utime(path, (written_at, written_at))
    result = dream.consolidate()
    assert result.report == ["made relative dates absolute in freeze.md"]
    assert re.search(r"starts 2025-03-11\.", path.read_text(encoding="utf-8"))
