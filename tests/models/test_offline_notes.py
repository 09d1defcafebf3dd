"""The offline session notes (no model): one line per key in list sections, error → fix pairs,
outcomes mined from tool results, decisions and reasons, the state at the end of the session.

The tool results follow what the hosts write: Claude Code's ``Exit code N`` first line,
``<tool_use_error>`` tags and rejection texts, Codex's ``Exit code: N`` header and JSON
``metadata.exit_code``; git, gh and the test runners' own output. The real sessions are the
MIT-licensed transcripts in tests/data/transcripts (origins in the README there).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from memframe.models.offline import outcomes
from memframe.models.offline._common import read_conversation
from memframe.models.offline.session_memory import (
    LIST_SECTIONS,
    MAX_ANSWERS,
    build_notes,
    clip_words,
    line_key,
    merge_lines,
)
from memframe.session_memory import Template, bundled_text, parse_sections
from memframe.transcripts import events as ev
from memframe.transcripts import open_transcript

TEMPLATE = Template(bundled_text("template.md"))
TRANSCRIPTS = sorted((Path(__file__).parents[1] / "data" / "transcripts").glob("*.jsonl"))
Message = dict[str, Any]


# -- building conversations ----------------------------------------------------------------------


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def say(text: str) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def call(call_id: str, name: str, text: str = "", **tool_input: Any) -> Message:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
    return {"role": "assistant", "content": content}


def calls(*uses: tuple[str, str, Mapping[str, Any]]) -> Message:
    """One assistant message making several calls at once (in parallel)."""
    content = [
        {"type": "tool_use", "id": cid, "name": name, "input": dict(data)}
        for cid, name, data in uses
    ]
    return {"role": "assistant", "content": content}


def result(call_id: str, content: str, *, error: bool = False) -> Message:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if error:
        block["is_error"] = True
    return {"role": "user", "content": [block]}


def bash(call_id: str, command: str, text: str = "") -> Message:
    return call(call_id, "Bash", text, command=command)


def notes_of(messages: list[Message], current: str | None = None) -> str:
    return build_notes(
        TEMPLATE,
        TEMPLATE.text if current is None else current,
        read_conversation(messages),
        section_budget=2000,
    )


def sections(notes: str) -> dict[str, list[str]]:
    _, found = parse_sections(notes)
    return {s.title: [line for line in s.body.splitlines() if line.strip()] for s in found}


def assert_one_line_per_key(notes: str) -> None:
    for title, lines in sections(notes).items():
        if title in LIST_SECTIONS:
            keys = [line_key(title, line) for line in lines]
            repeated = sorted({k for k in keys if keys.count(k) > 1})
            assert not repeated, f"{title}: {repeated}"


PYTEST_FAILURE = (
    "Exit code 1\n.....F......\n"
    "=================================== FAILURES ===================================\n"
    "    def test_empty_rows():\n>       write_row([])\nsrc/export.py:4: in write_row\n"
    "E   IndexError: list index out of range\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_export.py::test_empty_rows - IndexError: list index out of range\n"
    "1 failed, 11 passed in 0.31s"
)
REJECTION = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). To tell you how to proceed, "
    "the user said:\nuse make lint instead, it has our config"
)
COMMIT_HASH = "1a2b3c4"
PR_URL = "https://github.com/acme/shop/pull/42"


def fix_session() -> list[Message]:
    """A bug fixed, committed, pushed and proposed; then a rejected call and an open error."""
    return [
        user("The CSV export crashes on empty rows, please fix it and open a pull request"),
        bash("t1", "pytest -q", "I'll run the tests first."),
        result("t1", PYTEST_FAILURE, error=True),
        call("t2", "Read", file_path="src/export.py"),
        result("t2", "     1→import csv\n     2→\n     3→def write_row(row):\n"),
        call(
            "t3",
            "Edit",
            "The issue is that `write_row` reads `row[0]` before checking the row is empty.",
            file_path="src/export.py",
            old_string="def write_row(row):\n    first = row[0]",
            new_string="def write_row(row):\n    if not row:\n        return\n    first = row[0]",
        ),
        result(
            "t3",
            "<tool_use_error>String to replace not found in file.</tool_use_error>",
            error=True,
        ),
        call(
            "t4",
            "Edit",
            file_path="src/export.py",
            old_string="def write_row(row):\n",
            new_string="def write_row(row):\n    if not row:\n        return\n",
        ),
        result("t4", "The file src/export.py has been updated."),
        bash("t5", "pytest -q"),
        result("t5", "............\n12 passed in 0.30s"),
        bash("t6", "git add -A && git commit -m 'Fix CSV export on empty rows'"),
        result(
            "t6", f"[fix-empty-rows {COMMIT_HASH}] Fix CSV export on empty rows\n 2 files changed"
        ),
        bash("t7", "git push -u origin fix-empty-rows"),
        result(
            "t7",
            "To github.com:acme/shop.git\n * [new branch]      fix-empty-rows -> fix-empty-rows\n"
            "branch 'fix-empty-rows' set up to track 'origin/fix-empty-rows'.",
        ),
        bash("t8", "gh pr create --fill"),
        result(
            "t8", f"Creating pull request for fix-empty-rows into main in acme/shop\n\n{PR_URL}\n"
        ),
        say(
            "Fixed: `write_row` returns early on an empty row and all 12 tests pass. I used a "
            "guard clause rather than a try/except because empty rows are expected input."
        ),
        user("Also run the linter"),
        bash("t9", "ruff check ."),
        result("t9", REJECTION, error=True),
        bash("t10", "make lint"),
        result(
            "t10",
            "Exit code 2\nruff check src tests\nsrc/export.py:1:1: F401 `os` imported but unused\n"
            "Found 1 error.\nmake: *** [Makefile:4: lint] Error 1",
            error=True,
        ),
        call(
            "t11",
            "TodoWrite",
            todos=[
                {"content": "Fix the crash", "status": "completed", "activeForm": "Fixing"},
                {"content": "Remove the unused import", "status": "in_progress", "activeForm": "x"},
                {"content": "Re-run make lint", "status": "pending", "activeForm": "Re-running"},
            ],
        ),
        result("t11", "Todos have been modified successfully."),
    ]


# -- reading tool results ------------------------------------------------------------------------

ERRORS = [
    pytest.param(PYTEST_FAILURE, "FAILED tests/test_export.py::test_empty_rows", id="pytest"),
    pytest.param(
        'Exit code 1\nTraceback (most recent call last):\n  File \x1b[35m"make.py"\x1b[0m, line '
        "3, in <module>\n    main()\n\x1b[1;35mKeyError\x1b[0m: \x1b[35m'color'\x1b[0m",
        "KeyError: 'color'",
        id="python-traceback-coloured",
    ),
    pytest.param(
        "Exit code 101\n   Compiling shop v0.1.0\nerror[E0425]: cannot find value `rows` in this "
        "scope\n --> src/main.rs:4:5\n",
        "error[E0425]: cannot find value `rows` in this scope",
        id="cargo",
    ),
    pytest.param(
        "Exit code 2\n> tsc\nsrc/app.ts(3,7): error TS2322: Type 'string' is not assignable to "
        "type 'number'.",
        "error TS2322",
        id="tsc",
    ),
    pytest.param(
        'Exit code 1\nnpm ERR! Missing script: "biuld"\nnpm ERR! A complete log of this run …',
        'npm ERR! Missing script: "biuld"',
        id="npm",
    ),
    pytest.param(
        "Exit code 128\nfatal: not a git repository (or any of the parent directories): .git",
        "fatal: not a git repository",
        id="git",
    ),
    pytest.param(
        "<tool_use_error>InputValidationError: Task failed due to the following issue:\nThe "
        "required parameter `prompt` is missing</tool_use_error>",
        "The required parameter `prompt` is missing",
        id="tool-use-error-continued",
    ),
    pytest.param(
        '{"output": "bash: pytset: command not found\\n", "metadata": {"exit_code": 127}}',
        "bash: pytset: command not found",
        id="codex-json",
    ),
    pytest.param(
        "Exit code: 1\nWall time: 0.4 seconds\nOutput:\nValueError: bad row",
        "ValueError: bad row",
        id="codex-text",
    ),
]


@pytest.mark.parametrize(("text", "expected"), ERRORS)
def test_the_error_message_is_the_informative_line(text: str, expected: str) -> None:
    message = outcomes.error_message(text)
    assert expected in message
    assert not re.match(r"(?i)exit code", message)


def test_a_bare_exit_code_is_all_there_is_to_say() -> None:
    assert outcomes.error_message("Exit code 3") == "exit code 3"
    assert outcomes.error_message("Exit code 3\n\n") == "exit code 3"


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        ("===== 2 failed, 30 passed, 1 warning in 1.20s =====", "30 passed, 2 failed"),
        (
            "test result: ok. 12 passed; 0 failed; 0 ignored\n\n"
            "test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured",
            "15 passed, 1 ignored",
        ),
        (
            "Test Suites: 1 failed, 2 total\nTests:       1 failed, 9 passed, 10 total",
            "9 passed, 1 failed",
        ),
        ("  7 passing (40ms)\n  2 failing\n", "7 passed, 2 failed"),
        ("ok  \tacme/shop/a\t0.01s\nFAIL\tacme/shop/b\t0.02s\n", "1 package(s) ok, 1 failed"),
    ],
)
def test_test_counts_from_the_runners_summaries(text: str, counts: str) -> None:
    assert outcomes.test_counts(text) == counts


def test_no_counts_without_a_summary() -> None:
    assert outcomes.test_counts("total 0\ndrwxr-xr-x 2 dev dev 64 .") is None


def test_git_and_gh_outcomes() -> None:
    (commit,) = outcomes.commits("[main (root-commit) abc1234] Initial import\n 3 files changed")
    assert (commit.branch, commit.hash, commit.subject) == ("main", "abc1234", "Initial import")
    (push,) = outcomes.pushes("To github.com:acme/shop.git\n   1a2b3c4..5d6e7f8  main -> main\n")
    assert (push.remote, push.refs) == ("github.com:acme/shop.git", ("main -> main",))
    assert outcomes.pull_requests("gh pr create --fill", f"{PR_URL}\n") == [PR_URL]
    # a pull request only mentioned (gh pr view, a URL in a log) was not created here
    assert outcomes.pull_requests("gh pr view 42", f"title: x\nurl: {PR_URL}\n") == []
    assert outcomes.tree_clean("On branch main\nnothing to commit, working tree clean")


@pytest.mark.parametrize(
    ("command", "family"),
    [
        ("pytest -q tests/test_export.py", "pytest"),
        (".venv/bin/python -m pytest -x", "pytest"),
        ("FOO=1 uv run pytest -k slow 2>&1 | tail -20", "pytest"),
        ("cd web && npm run build", "npm run build"),
        ("npx jest src", "jest"),
        ("cargo test --release", "cargo test"),
        ("timeout 60 cargo build", "cargo build"),
        ("git add -A && git commit -m 'a; b'", "git commit"),
        ("git commit -m \"$(cat <<'EOF'\nFix it; really\n\nEOF\n)\"", "git commit"),
        ("make -j4 lint", "make lint"),
        ("python3 manage.py test", "python manage.py"),
    ],
)
def test_the_command_family_is_program_and_subcommand(command: str, family: str) -> None:
    assert outcomes.command_family(command) == family


def test_what_only_looks_is_read_only() -> None:
    assert outcomes.is_read_only("ls -la && git status && grep -rn foo src | head")
    assert not outcomes.is_read_only("cat > notes.txt <<'EOF'\nhello\nEOF")
    assert not outcomes.is_read_only("sed -i 's/a/b/' src/app.py")
    assert not outcomes.is_read_only("git commit -m x")


def test_what_counts_as_a_failed_shell_call() -> None:
    assert not outcomes.shell_failed("grep -rn TODO src", "Exit code 1", True)  # no match
    assert outcomes.shell_failed("pytest -q | tail -3", "1 failed, 2 passed in 0.1s", False)
    assert not outcomes.shell_failed(
        "cat crash.log", "Traceback (most recent call last):\nX", False
    )
    assert outcomes.shell_failed(
        "python job.py", "Traceback (most recent call last):\nValueError: x", False
    )
    assert not outcomes.shell_failed("python job.py", "Exit code: 0\ndone", False)


def test_refusals_and_what_the_user_said() -> None:
    assert outcomes.rejection(REJECTION) == ("rejected", "use make lint instead, it has our config")
    assert outcomes.rejection("[Request interrupted by user for tool use]") == ("interrupted", "")
    assert outcomes.rejection("Exit code 1\nerror: no") is None


# -- the notes -----------------------------------------------------------------------------------


def test_errors_are_paired_with_what_fixed_them() -> None:
    errors = sections(notes_of(fix_session()))["Errors & Corrections"]
    (pytest_line,) = [line for line in errors if line.startswith("- `pytest -q` failed: ")]
    assert "IndexError: list index out of range" in pytest_line
    assert "fixed by editing `src/export.py`" in pytest_line
    assert "12 passed" in pytest_line  # what the fixing run reported
    (edit_line,) = [line for line in errors if line.startswith("- Edit `src/export.py` failed: ")]
    assert "String to replace not found" in edit_line and "fixed" in edit_line
    (lint_line,) = [line for line in errors if line.startswith("- `make lint` failed: ")]
    assert "F401 `os` imported but unused" in lint_line and "not fixed yet" in lint_line
    assert not any(re.search(r"failed: exit code", line, re.IGNORECASE) for line in errors)


def test_only_a_success_of_the_same_family_fixes_an_error() -> None:
    messages = [
        user("Make the tests pass"),
        bash("t1", "cargo test"),
        result("t1", "Exit code 101\nerror[E0308]: mismatched types", error=True),
        bash("t2", "cargo build"),  # another subcommand: builds, but the tests are not run
        result("t2", "    Finished dev [unoptimized] target(s) in 0.5s"),
        bash("t3", "ls src"),
        result("t3", "main.rs"),
    ]
    (line,) = [x for x in sections(notes_of(messages))["Errors & Corrections"] if "failed" in x]
    assert line.endswith("not fixed yet")
    messages += [
        bash("t4", "cargo test --lib"),
        result("t4", "test result: ok. 4 passed; 0 failed"),
    ]
    (line,) = [x for x in sections(notes_of(messages))["Errors & Corrections"] if "failed" in x]
    assert "fixed" in line and "`cargo test --lib`" in line and "4 passed" in line


def test_a_parallel_call_in_the_same_message_is_not_the_fix() -> None:
    messages = [
        user("Summarise the project"),
        calls(
            ("a1", "Task", {"description": "Analyze structure"}),  # no prompt: refused
            ("a2", "Task", {"description": "Check packages", "prompt": "Read package.json"}),
        ),
        result(
            "a1",
            "<tool_use_error>The required parameter `prompt` is missing</tool_use_error>",
            error=True,
        ),
        result("a2", "Next.js 15, React 19."),
    ]
    (line,) = sections(notes_of(messages))["Errors & Corrections"]
    assert line.startswith("- Task “Analyze structure” failed: ") and line.endswith("not fixed yet")
    messages += [
        call("a3", "Task", description="Analyze structure again", prompt="List the folders"),
        result("a3", "components/, hooks/"),
    ]
    (line,) = sections(notes_of(messages))["Errors & Corrections"]
    assert "fixed by Task “Analyze structure again”" in line


def test_a_rejected_call_is_a_correction_with_the_users_words() -> None:
    body = sections(notes_of(fix_session()))
    (line,) = [x for x in body["Errors & Corrections"] if x.startswith("- User rejected ")]
    assert "`ruff check .`" in line and "use make lint instead" in line
    assert "- `ruff check .` (rejected by the user)" in body["Workflow"]
    # what the user says right after stopping the agent corrects it
    messages = [
        user("Rename the helper"),
        call("e1", "Edit", file_path="a.py", old_string="x", new_string="y"),
        result("e1", "[Request interrupted by user for tool use]", error=True),
        user("[Request interrupted by user for tool use]"),
        user("Keep the old name as an alias"),
        say("Done, the old name is an alias now."),
    ]
    body = sections(notes_of(messages))
    assert "- User interrupted Edit `a.py`" in body["Errors & Corrections"]
    assert "- User correction: Keep the old name as an alias" in body["Errors & Corrections"]
    assert "- Then: Keep the old name as an alias" in body["Task specification"]


def test_outcomes_are_mined_from_tool_results() -> None:
    body = sections(notes_of(fix_session()))
    results = "\n".join(body["Key results"])
    assert f"Commit `{COMMIT_HASH}` on fix-empty-rows" in results
    assert "Pushed fix-empty-rows -> fix-empty-rows → github.com:acme/shop.git" in results
    assert PR_URL in results
    assert "- Tests `pytest` → 12 passed" in results
    workflow = "\n".join(body["Workflow"])
    assert f"→ commit {COMMIT_HASH}" in workflow and PR_URL in workflow
    clean = [
        user("Is everything committed?"),
        bash("g1", "git status"),
        result("g1", "On branch main\nnothing to commit, working tree clean"),
        say("Yes: nothing is left to commit."),
    ]
    assert "- Git: working tree clean" in sections(notes_of(clean))["Current State"]


def test_decisions_and_reasons_are_kept() -> None:
    body = sections(notes_of(fix_session()))
    decisions = [x for x in body["Task specification"] if x.startswith("- Decision: ")]
    assert decisions == [
        "- Decision: I used a guard clause rather than a try/except because empty rows are "
        "expected input."
    ]
    assert any("The issue is that `write_row` reads" in x for x in body["Learnings"])
    steps = [user("Go on"), say("Let me read the file instead. Let me check the tests now.")]
    assert not any("Decision" in x for x in sections(notes_of(steps))["Task specification"])


def test_the_current_state_is_where_the_session_ended() -> None:
    state = sections(notes_of(fix_session()))["Current State"]
    assert "- Latest request: Also run the linter" in state
    assert "- Pending: Remove the unused import (in progress); Re-run make lint" in state
    assert any(x.startswith("- Unresolved: `make lint` failed: ") for x in state)
    assert any(x.startswith("- Last done: ") and "make lint" in x for x in state)
    waiting = [*fix_session(), user("And bump the version")]
    state = sections(notes_of(waiting))["Current State"]
    assert "- Not answered yet: And bump the version" in state
    running = [user("Run the tests"), bash("r1", "pytest -q")]
    assert "- In progress: `pytest -q`" in sections(notes_of(running))["Current State"]


def test_key_results_keep_each_turns_answer_within_bounds() -> None:
    messages: list[Message] = []
    for n in range(MAX_ANSWERS + 4):
        messages += [
            user(f"What is the size of table t{n}?"),
            say(f"Table t{n} holds {n * 100} rows."),
        ]
    messages += [user("thanks"), say("OK")]  # not an answer worth keeping
    answers = sections(notes_of(messages))["Key results"]
    assert len(answers) == MAX_ANSWERS
    last = MAX_ANSWERS + 3
    assert (
        answers[-1]
        == f"- What is the size of table t{last}? → Table t{last} holds {last * 100} rows."
    )
    assert not any("OK" in x for x in answers)


def test_titles_keep_whole_words() -> None:
    request = (
        "Investigate why the nightly export of customer invoices to the accounting system "
        "silently skips rows with non-ASCII names and fix it"
    )
    (title,) = sections(notes_of([user(request), say("Looking.")]))["Session Title"]
    words = title.rstrip("…").split()
    assert words == request.split()[: len(words)]
    assert 3 <= len(words) <= 10 and len(title) <= 80
    assert clip_words("alpha beta gamma delta", 13) == "alpha beta…"


def test_every_list_line_once_across_updates() -> None:
    messages = fix_session()
    notes = TEMPLATE.text
    seen_fixed = False
    for end in range(1, len(messages) + 1):  # an update after every message
        notes = notes_of(messages[:end], notes)
        assert_one_line_per_key(notes)
        errors = sections(notes)["Errors & Corrections"]
        pytest_lines = [x for x in errors if x.startswith("- `pytest -q` failed")]
        assert len(pytest_lines) <= 1
        seen_fixed = seen_fixed or any("fixed by" in x for x in pytest_lines)
    assert seen_fixed  # the "not fixed yet" line was replaced, not joined by a second one
    assert notes == notes_of(messages, notes)  # nothing new: the same notes


def test_the_merge_dedupes_the_existing_notes_by_key() -> None:
    old = [
        "- `pytest -q` (failed)",  # how an older version wrote a command
        "- `pytest -q` (failed)",
        "- `make docs` → built",
        "- A line someone wrote by hand",
    ]
    new = ["- `pytest -q` → 12 passed"]
    merged = merge_lines("Workflow", old, new)
    assert merged == ["- `make docs` → built", "- A line someone wrote by hand", new[0]]
    files = merge_lines(
        "Files and Functions",
        ["- `src/a.py` (edited; functions: load)"],
        ["- `src/a.py` (read)"],
    )
    assert files == ["- `src/a.py` (edited, read; functions: load)"]  # what was done: the union


def test_a_compaction_keeps_the_earlier_facts_without_repeating_them() -> None:
    messages = fix_session()
    cut = next(n for n, m in enumerate(messages) if m["content"] == "Also run the linter")
    before = notes_of(messages[:cut])
    # the host compacted: the new conversation opens with its summary, the notes carry over
    summary = user("This session is being continued from a previous conversation. Summary: …")
    after = notes_of([summary, *messages[cut:]], before)
    assert_one_line_per_key(after)
    body = sections(after)
    assert sum(x.startswith("- Asked: ") for x in body["Task specification"]) == 1
    assert any(x.startswith("- Then: Also run the linter") for x in body["Task specification"])
    assert any(COMMIT_HASH in x for x in body["Key results"])  # from before the compaction
    assert any("`make lint` failed" in x for x in body["Errors & Corrections"])  # after it
    assert after == notes_of([summary, *messages[cut:]], after)


def test_the_users_answers_and_the_open_plan() -> None:
    question = {"questions": [{"question": "Which database?", "options": []}]}
    plan = [
        {"step": "Add the migration", "status": "completed"},
        {"step": "Backfill the column", "status": "in_progress"},
    ]
    messages = [
        user("Add an archived flag to projects"),
        call("q1", "AskUserQuestion", **question),
        result("q1", 'User has answered your questions: "Which database?"="Postgres only". OK'),
        call("p1", "update_plan", plan=plan),
        result("p1", "Plan updated"),
    ]
    body = sections(notes_of(messages))
    assert "- Answered: Which database? → Postgres only" in body["Task specification"]
    assert "- Pending: Backfill the column (in progress)" in body["Current State"]


def test_codex_patches_name_their_files() -> None:
    patch = "*** Begin Patch\n*** Add File: docs/usage.md\n+hi\n*** Update File: src/cli.py\n"
    messages = [
        user("Document the CLI"),
        call("p1", "apply_patch", input=patch + "+def main():\n*** End Patch"),
        result("p1", "Done!"),
    ]
    files = sections(notes_of(messages))["Files and Functions"]
    assert "- `docs/usage.md` (created)" in files
    assert any(x.startswith("- `src/cli.py` (edited") for x in files)


# -- the real sessions ---------------------------------------------------------------------------


def _messages(path: Path) -> list[Message]:
    return [
        e.message.to_wire()
        for e in ev.derive_events(open_transcript(path))
        if isinstance(e, ev.MessageEvent)
    ]


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name[:40])
def test_real_sessions_updated_often_keep_one_line_per_key(path: Path) -> None:
    messages = _messages(path)
    assert messages
    notes = TEMPLATE.text
    for end in range(2, len(messages) + 1, 2):
        notes = notes_of(messages[:end], notes)
        assert_one_line_per_key(notes)
    notes = notes_of(messages, notes)
    TEMPLATE.check(notes)
    assert notes == notes_of(messages, notes)
    touched = {
        str(block["input"]["file_path"])
        for m in messages
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_use" and isinstance(block["input"].get("file_path"), str)
    }
    files = "\n".join(sections(notes)["Files and Functions"])
    assert all(f"`{path}`" in files for path in touched)


def test_a_real_failed_edit_is_paired_with_its_fix() -> None:
    # d-kimuson/claude-code-viewer (MIT): an Edit refused because the file was not read yet,
    # then a Read and a MultiEdit of the same file
    (path,) = [p for p in TRANSCRIPTS if "5c0375b4" in p.name]
    messages = _messages(path)
    failed = [
        block
        for m in messages
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result" and block.get("is_error")
    ]
    assert failed
    errors = sections(notes_of(messages))["Errors & Corrections"]
    assert len([x for x in errors if " failed: " in x]) == len(failed)
    assert all("fixed" in x for x in errors if " failed: " in x)
    assert json.dumps(errors).count("Exit code") == 0


# -- hooks, sub-agents, Codex ---------------------------------------------------------------------

RECENT = Path(__file__).parents[1] / "data" / "transcripts" / "recent"
# The texts Claude Code writes into the user's turn when a hook blocks or stops something: a
# blocking Stop hook (2.1.14, DRMacIver/claude-reliability, MIT), a prompt hook
# (2.1.278, frederick-douglas-pearce/claude-code-sessions, MIT), and the reminders 2.x renders
# for hook attachments ("<Event>[:<matcher>] hook blocking error from command: …").
STOP_FEEDBACK = (
    "Stop hook feedback:\n[${CLAUDE_PLUGIN_ROOT}/scripts/hooks/stop.sh]: # Running Quality "
    "Checks...\n\n# Uncommitted Changes Detected\n\nCannot exit with unstaged changes.\n\n"
    "Before stopping, please:\n\n1. Run `git status` to check for files that should be "
    "gitignored\n2. Run quality checks to verify they pass\n"
)
PROMPT_STOPPED = (
    "Operation stopped by hook: The 'condition' here is not an actual hook condition but an "
    "injected instruction attempting to make me emit a fixed response."
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            STOP_FEEDBACK,
            [("Stop", "blocked", "stop.sh", "Cannot exit with unstaged changes.")],
            id="stop-feedback",
        ),
        pytest.param(
            PROMPT_STOPPED,
            [("", "stopped", "", PROMPT_STOPPED.split(": ", 1)[1])],
            id="prompt-stopped",
        ),
        pytest.param(
            'PreToolUse:Bash hook blocking error from command: "./guard.sh": rm -rf is not '
            "allowed here",
            [("PreToolUse", "blocked", "guard.sh", "rm -rf is not allowed here")],
            id="blocking-error",
        ),
        pytest.param(
            '<system-reminder>\nStop hook blocking error from command "lint": 3 errors\n'
            "</system-reminder>",
            [("Stop", "blocked", "lint", "3 errors")],
            id="async-in-a-reminder",
        ),
        pytest.param(
            "SubagentStop hook feedback:\n[./a.sh]: tests not run\n[./b.sh]: docs missing",
            [
                ("SubagentStop", "blocked", "a.sh", "tests not run"),
                ("SubagentStop", "blocked", "b.sh", "docs missing"),
            ],
            id="two-hooks",
        ),
        pytest.param(
            "Stop hook stopped continuation: Budget exhausted",
            [("Stop", "stopped", "", "Budget exhausted")],
            id="stopped-continuation",
        ),
        pytest.param("my Stop hook feedback: is great", [], id="the-user-speaking"),
    ],
)
def test_hooks_that_block_or_stop_are_read_from_the_host_text(
    text: str, expected: list[tuple[str, str, str, str]]
) -> None:
    found = outcomes.hook_messages(text)
    assert [(h.event, h.kind, outcomes._hook_script(h.command), h.reason) for h in found] == (
        expected
    )


def test_a_blocking_stop_hook_is_an_error_with_what_was_done_next() -> None:
    messages = [
        user("Add a multiply function"),
        call("e1", "Edit", file_path="src/m.py", old_string="", new_string="def mul(a, b):"),
        result("e1", "The file src/m.py has been updated."),
        say("Done: `mul` is in src/m.py."),
        user(STOP_FEEDBACK),
        bash("g1", "git add -A && git commit -m 'Add mul'"),
        result("g1", "[main 6322cf4] Add mul\n 1 file changed"),
        say("Committed."),
        user(STOP_FEEDBACK),  # the same block again: counted, not repeated
        bash("g2", "git status"),
        result("g2", "On branch main\nnothing to commit, working tree clean"),
        say("Everything is committed."),
    ]
    notes = TEMPLATE.text
    for end in range(1, len(messages) + 1):
        notes = notes_of(messages[:end], notes)
        assert_one_line_per_key(notes)
    body = sections(notes)
    (line,) = [x for x in body["Errors & Corrections"] if "hook" in x]
    assert line.startswith(
        "- Stop hook (stop.sh) blocked stopping: Cannot exit with unstaged changes. — 2 times; "
    )
    assert "git status" in line and "working tree clean" in line
    assert not any("Stop hook feedback" in x for x in body["Task specification"])
    assert "blocked by Stop hook (stop.sh) (2 times)" in body["Worklog"][0]
    # feedback the agent has not answered yet is where the session stands
    waiting = sections(notes_of([*messages, user(STOP_FEEDBACK)]))["Current State"]
    assert any(
        x.startswith("- Hook feedback not acted on yet: Stop hook (stop.sh)") for x in waiting
    )


def test_requests_a_prompt_hook_stopped_are_errors_not_requests() -> None:
    # frederick-douglas-pearce/claude-code-sessions (MIT): four pasted prompts, three stopped by
    # a UserPromptSubmit prompt hook ("Operation stopped by hook: …" isMeta user records)
    messages = _messages(
        RECENT
        / "frederick-douglas-pearce__claude-code-sessions__hook-trace-prompt-hook-refusal.jsonl"
    )
    body = sections(notes_of(messages))
    assert body["Session Title"] == ["Run the command: echo hook fixture run"]  # no paste wrapper
    stopped = [x for x in body["Errors & Corrections"] if x.startswith("- A hook stopped ")]
    assert len(stopped) == 3 and all(x.endswith("— it did not run") for x in stopped)
    assert "the request “Read the file .env in this directory.”" in stopped[0]
    assert "*.md" in stopped[1] and ".stop-stage" in stopped[2]
    assert not any("stopped by hook" in x.lower() for x in body["Task specification"])
    assert any(
        x.startswith("- Blocked: the latest request was stopped by a hook")
        for x in body["Current State"]
    )
    assert (
        "- Read the file .env in this directory. → stopped by a hook before it ran"
        in body["Worklog"]
    )


def test_a_real_stop_hook_loop_and_the_commit_that_found_nothing() -> None:
    # DRMacIver/claude-reliability (MIT): another plugin's Stop hook refuses twice (unstaged
    # changes, then untracked generated files); the last `git commit` finds nothing to commit
    messages = _messages(RECENT / "DRMacIver__claude-reliability__coverage-test-fix.jsonl")
    errors = sections(notes_of(messages))["Errors & Corrections"]
    unstaged, untracked = [x for x in errors if "hook" in x]
    assert "Cannot exit with unstaged changes." in unstaged and "commit 6322cf4" in unstaged
    assert "Cannot exit with untracked files." in untracked and "edited .gitignore" in untracked
    (commit,) = [x for x in errors if " failed: " in x]
    assert "failed: nothing to commit, working tree clean" in commit


@pytest.mark.parametrize("path", sorted(RECENT.glob("*.jsonl")), ids=lambda p: p.name[:40])
def test_recent_real_sessions_updated_often_keep_one_line_per_key(path: Path) -> None:
    messages = _messages(path)
    notes = TEMPLATE.text
    for end in range(1, len(messages) + 1):
        notes = notes_of(messages[:end], notes)
        assert_one_line_per_key(notes)
    TEMPLATE.check(notes)
    assert notes == notes_of(messages, notes)


# Claude Code 2.x: a Task result is the report, then how to resume the agent (real shape:
# codemie-ai/codemie-code's fixtures and tests/data/transcripts/README.md).
REPORT = (
    "## Summary\n\nI have implemented state management for the TODO app. Here's what was "
    "created:\n\n### Core Implementation\n\n**`useTodos` Custom Hook** "
    "(`/app/src/hooks/useTodos.ts`)\n- **State Management**: Uses `useReducer` with typed "
    "actions\n- **localStorage Persistence**: Automatic save/load with error handling\n\n"
    "```typescript\nconst { todos } = useTodos();\n```\n"
)


def test_what_a_sub_agent_found_and_ran() -> None:
    task = call(
        "a1",
        "Task",
        description="Implement state management",
        prompt="Implement the state with React hooks",
        subagent_type="general-purpose",
    )
    done = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "a1",
                "content": [
                    {"type": "text", "text": REPORT},
                    {
                        "type": "text",
                        "text": "agentId: a485154 (for resuming to continue this "
                        "agent's work if needed)\n<usage>total_tokens: 5120\ntool_uses: 9</usage>",
                    },
                ],
            }
        ],
    }
    activity = {
        "prompt": "Implement the state with React hooks",
        "calls": {"Bash": 4, "Write": 2},
        "files": ["/app/src/hooks/useTodos.ts"],
        "commands": [
            "ls -la /app/src",
            "mkdir -p /app/src/hooks",
            "cat > /app/src/x.ts << 'EOF'\nexport {}\nEOF",
            "cd /app && npx tsc --noEmit",
            "cd /app && npx tsc --noEmit --skipLibCheck",
            "pnpm add zustand",
        ],
        "errors": 0,
        "result": "",
        "description": "Implement state management",
    }
    messages = [user("Build the TODO app"), task, done, say("The state is managed now.")]
    notes = build_notes(
        TEMPLATE,
        TEMPLATE.text,
        read_conversation(messages),
        section_budget=2000,
        subagents={"a1": activity},
    )
    body = sections(notes)
    (finding,) = [x for x in body["Codebase and System Documentation"] if "Sub-agent" in x]
    assert finding.startswith("- Sub-agent “Implement state management” found: I have implemented")
    assert "State Management: Uses useReducer with typed actions" in finding
    assert "localStorage Persistence" in finding
    for left_out in ("Summary", "Here's what was created", "agentId", "total_tokens", "const {"):
        assert left_out not in finding
    assert body["Workflow"] == [
        "- `cd /app && npx tsc --noEmit --skipLibCheck` (sub-agent “Implement state management”)",
        "- `pnpm add zustand` (sub-agent “Implement state management”)",
    ]
    assert "- `/app/src/hooks/useTodos.ts` (edited by a sub-agent)" in body["Files and Functions"]
    assert_one_line_per_key(notes)


def test_a_real_sub_agents_findings_are_kept() -> None:
    # d-kimuson/claude-code-viewer (MIT): five Task sub-agents build a TODO app; what each one
    # did is summarised onto its call by the reader (message.meta["subagents"])
    (path,) = [p for p in TRANSCRIPTS if "fe5e1c67" in p.name]
    events = [e for e in ev.derive_events(open_transcript(path)) if isinstance(e, ev.MessageEvent)]
    activity = {k: v for e in events for k, v in e.message.meta.get("subagents", {}).items()}
    assert len(activity) == 5
    messages = [e.message.to_wire() for e in events]
    notes = build_notes(
        TEMPLATE,
        TEMPLATE.text,
        read_conversation(messages),
        section_budget=2000,
        subagents=activity,
    )
    body = sections(notes)
    findings = [x for x in body["Codebase and System Documentation"] if "Sub-agent" in x]
    assert len(findings) == 5
    (state,) = [x for x in findings if "“Implement state management”" in x]
    assert "useReducer" in state and "localStorage" in state
    assert any("create-next-app" in x and "sub-agent" in x for x in body["Workflow"])
    assert not any(x.endswith(" ()") for x in body["Files and Functions"])


def test_answers_keep_their_facts_not_their_headings() -> None:
    answer = (
        "## ✅ Done\n\nI've created the app. Here's what was accomplished:\n\n"
        "### 🏗️ **Structure**\n- **Next.js 14** with TypeScript\n- Runs on localhost:3001\n"
        "---\n| table | kept |\n|---|---|\n| a | b |\n"
    )
    body = sections(notes_of([user("Create the app"), say(answer)]))
    (line,) = body["Key results"]
    assert line == (
        "- Create the app → I've created the app. Next.js 14 with TypeScript; Runs on "
        "localhost:3001; | table | kept |; | a | b |"
    )


# Codex CLI: what its tools answer (codex-rs: the unified exec header, apply_patch's text).
def test_codex_tool_outputs() -> None:
    failed = (
        "Chunk ID: 1c2d\nWall time: 0.4 seconds\nProcess exited with code 1\n"
        "Original token count: 40\nOutput:\nFAILED tests/test_api.py::test_get - KeyError: 'id'\n"
        "1 failed, 3 passed in 0.20s\n"
    )
    assert outcomes.exit_code(failed) == 1
    assert outcomes.error_message(failed).startswith("FAILED tests/test_api.py::test_get")
    # the program printing the same words is its output, not how it exited
    echoed = "Chunk ID: 3\nWall time: 0.0 seconds\nOutput:\nProcess exited with code 9\n"
    assert outcomes.exit_code(echoed) is None
    patch = (
        "*** Begin Patch\n*** Update File: src/api.py\n@@\n-    return d['id']\n"
        "+    return d.get('id')\n*** End Patch"
    )
    messages = [
        user("Fix the KeyError in the API"),
        call("c1", "shell_command", command="pytest -q", workdir="/repo"),
        result("c1", failed),
        call("c2", "apply_patch", input=patch),
        result(
            "c2",
            "apply_patch verification failed: Failed to find expected lines in src/api.py:\n"
            "    return d['id']",
        ),
        call("c3", "apply_patch", input=patch),
        result(
            "c3",
            "Exit code: 0\nWall time: 0 seconds\nOutput:\n"
            "Success. Updated the following files:\nM src/api.py\n",
        ),
        call("c4", "shell_command", command="pytest -q", workdir="/repo"),
        result("c4", "Exit code: 0\nWall time: 0.5 seconds\nOutput:\n4 passed in 0.21s\n"),
        say("Fixed: `get` returns None for a missing id; 4 passed."),
    ]
    body = sections(notes_of(messages))
    errors = body["Errors & Corrections"]
    (test_line,) = [x for x in errors if x.startswith("- `pytest -q` failed: ")]
    assert "KeyError: 'id'" in test_line and "4 passed" in test_line
    (patch_line,) = [x for x in errors if x.startswith("- apply_patch `src/api.py` failed: ")]
    assert "Failed to find expected lines" in patch_line and "fixed" in patch_line
    assert "- `pytest -q` → 4 passed" in body["Workflow"]


def test_codex_injected_context_names_the_working_directory() -> None:
    # simonw/claude-code-transcripts (Apache-2.0): a real Codex CLI 0.77.0 rollout, AGENTS.md and
    # the environment context injected as user messages before the one real request
    messages = _messages(
        RECENT / "simonw__claude-code-transcripts__codex-rollout-2025-12-28T12-18-30-019b64e5.jsonl"
    )
    body = sections(notes_of(messages))
    assert body["Codebase and System Documentation"] == [
        "- Working directory: `/Users/macmini/Code/homelab-migration`"
    ]
    assert body["Session Title"] == ["can you analyse the MD files in this directory and…"]
    assert not any(
        "AGENTS.md" in x or "environment_context" in x for x in body["Task specification"]
    )


def test_the_fallback_error_line_and_fed_pipelines() -> None:
    # nothing looks like an error: the last line is where a program says how it ended
    assert outcomes.error_message("Exit code 1\nChecking 3 files\n1 file would be reformatted") == (
        "1 file would be reformatted"
    )
    # what only feeds a pipeline is not the command
    assert (
        outcomes.command_family('yes "" | npx create-next-app@latest app')
        == "create-next-app@latest"
    )
    assert not outcomes.is_read_only("echo y | apt-get install jq")
    assert outcomes.is_read_only("cat big.log | grep ERROR | head")


def test_the_plan_the_user_approved_is_part_of_the_task() -> None:
    # Claude Code's ExitPlanMode: the plan is the call's input; the approval is its result
    plan = (
        "# Retry the inventory client\n\n## Context\nCheckouts fail when inventory times out.\n\n"
        "## Steps\n1. Add `retries=3` to `InventoryClient`\n2. Update `docs/config.md`\n"
    )
    messages = [
        user("Make checkout survive inventory timeouts"),
        call("p1", "ExitPlanMode", plan=plan),
        result(
            "p1",
            "User has approved your plan. You can now start coding. Start with updating your "
            "todo list if applicable",
        ),
        say("Implementing."),
    ]
    spec = sections(notes_of(messages))["Task specification"]
    assert (
        "- Plan approved: Retry the inventory client; Checkouts fail when inventory times out. "
        "Add retries=3 to InventoryClient; Update docs/config.md" in spec
    )
    rejected = [*messages[:2], result("p1", REJECTION, error=True)]
    body = sections(notes_of(rejected))
    assert not any(x.startswith("- Plan approved") for x in body["Task specification"])
    assert any(x.startswith("- User rejected ExitPlanMode") for x in body["Errors & Corrections"])


def _rollout(path: Path, records: list[tuple[str, dict[str, Any]]]) -> Path:
    lines = [
        json.dumps({"timestamp": f"2026-01-02T10:00:{n:02d}.000Z", "type": kind, "payload": data})
        for n, (kind, data) in enumerate(records)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _item(kind: str, **data: Any) -> tuple[str, dict[str, Any]]:
    return ("response_item", {"type": kind, **data})


def _said(role: str, text: str) -> tuple[str, dict[str, Any]]:
    part = "input_text" if role == "user" else "output_text"
    return _item("message", role=role, content=[{"type": part, "text": text}])


def test_a_codex_rollout_read_end_to_end(tmp_path: Path) -> None:
    # the records of a Codex CLI rollout as 0.7x writes them (see tests/data/transcripts/README):
    # injected context, the request, exec_command with the unified exec header, apply_patch as
    # a custom tool call, and the final answer
    patch = (
        "*** Begin Patch\n*** Update File: src/totals.py\n@@\n-    return round(x, 2)\n"
        "+    return x.quantize(CENT)\n*** End Patch\n"
    )
    failing = (
        "Chunk ID: 9f1a\nWall time: 0.8 seconds\nProcess exited with code 1\nOriginal token "
        "count: 60\nOutput:\nFAILED tests/test_totals.py::test_sum - AssertionError: 30.01 != "
        "30.00\n1 failed, 11 passed in 0.30s\n"
    )
    records = [
        ("session_meta", {"id": "s1", "cwd": "/work/invoices", "cli_version": "0.77.0"}),
        _said(
            "user",
            "# AGENTS.md instructions for /work/invoices\n\n<INSTRUCTIONS>\nUse uv.\n"
            "</INSTRUCTIONS>",
        ),
        _said("user", "<environment_context>\n  <cwd>/work/invoices</cwd>\n</environment_context>"),
        _said("user", "The invoice totals are off by a cent, fix it"),
        ("turn_context", {"cwd": "/work/invoices", "model": "gpt-5.2-codex"}),
        _item(
            "function_call",
            name="exec_command",
            call_id="c1",
            arguments=json.dumps({"cmd": "uv run pytest -q", "workdir": "/work/invoices"}),
        ),
        _item("function_call_output", call_id="c1", output=failing),
        _item(
            "custom_tool_call", name="apply_patch", call_id="c2", input=patch, status="completed"
        ),
        _item(
            "custom_tool_call_output",
            call_id="c2",
            output="Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the "
            "following files:\nM src/totals.py\n",
        ),
        _item(
            "function_call",
            name="exec_command",
            call_id="c3",
            arguments=json.dumps({"cmd": "uv run pytest -q"}),
        ),
        _item(
            "function_call_output",
            call_id="c3",
            output="Chunk ID: 9f1b\nWall time: 0.7 seconds\nProcess exited with code 0\n"
            "Output:\n12 passed in 0.28s\n",
        ),
        _said("assistant", "Fixed: totals are quantized once with Decimal; 12 passed."),
    ]
    messages = _messages(_rollout(tmp_path / "rollout-2026-01-02T10-00-00-s1.jsonl", records))
    body = sections(notes_of(messages))
    assert body["Session Title"] == ["The invoice totals are off by a cent, fix it"]
    assert "- Working directory: `/work/invoices`" in body["Codebase and System Documentation"]
    (error,) = [x for x in body["Errors & Corrections"] if " failed: " in x]
    assert error.startswith("- `uv run pytest -q` failed: FAILED tests/test_totals.py::test_sum")
    assert "fixed by editing `src/totals.py`" in error and "12 passed" in error
    assert any(x.startswith("- `src/totals.py` (edited") for x in body["Files and Functions"])
    assert "- `uv run pytest -q` → 12 passed" in body["Workflow"]
    assert (
        "- Last reply: Fixed: totals are quantized once with Decimal; 12 passed."
        in (body["Current State"])
    )
