"""The offline backend classifies the user's turn before believing it: other hooks' feedback,
task notifications, compaction summaries and slash-command expansions are not the user; the
answers to AskUserQuestion are. The texts follow what Claude Code writes into the user turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memframe.models.base import ModelRequest
from memframe.models.offline._common import read_conversation, user_answers
from memframe.models.offline.memories import extract_memories_recipe


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def _saved(messages: list[dict[str, Any]], tmp_path: Path) -> list[str]:
    request = ModelRequest(
        system="",
        messages=messages,
        purpose="extract_memories",
        task={"memory_dir": str(tmp_path), "manifest": []},
    )
    response = extract_memories_recipe(request)
    return [str(call.input["content"]) for call in response.tool_calls]


NOT_THE_USER = [
    "Stop hook feedback:\nNever commit without running the linter. Always run `make lint`.",
    "PreToolUse:Bash hook blocking error from command: never use rm -rf in this repository",
    "<task-notification>\n<task-id>b1</task-id>\n<summary>Always retry the flaky job</summary>\n"
    "</task-notification>",
    "This session is being continued from a previous conversation that ran out of context. "
    "The user said: always use tabs. Never push to main.",
]


@pytest.mark.parametrize("text", NOT_THE_USER)
def test_host_text_in_the_user_turn_is_never_a_memory(text: str, tmp_path: Path) -> None:
    messages = [_user(text), _assistant("OK.")]
    assert _saved(messages, tmp_path) == []
    assert [t.request for t in read_conversation(messages).turns if t.request] == []


def test_the_user_speaking_next_to_it_still_counts(tmp_path: Path) -> None:
    messages = [
        _user(NOT_THE_USER[0]),
        _assistant("Running the linter."),
        _user("Please remember that the staging database is read-only."),
        _assistant("Noted."),
    ]
    saved = _saved(messages, tmp_path)
    assert len(saved) == 1 and "staging database is read-only" in saved[0]


def test_a_slash_command_expansion_is_not_the_user(tmp_path: Path) -> None:
    messages = [
        _user(
            "<command-message>deploy-staging is running…</command-message>\n"
            "<command-name>/deploy-staging</command-name>\n<command-args></command-args>"
        ),
        _user("Always deploy with --wait. Never skip the smoke tests. Deploy the app to staging."),
        _assistant("Deploying."),
    ]
    assert _saved(messages, tmp_path) == []
    requests = [t.request for t in read_conversation(messages).turns if t.request]
    assert requests == ["/deploy-staging"]


def test_ask_user_question_answers_are_the_user(tmp_path: Path) -> None:
    call = {
        "type": "tool_use",
        "id": "toolu_ask",
        "name": "AskUserQuestion",
        "input": {"questions": [{"question": "Which package manager?", "options": []}]},
    }
    answer = (
        'User has answered your questions: "Which package manager?"="We use pnpm, never npm.", '
        '"Run the tests?"="Yes". You can now continue with the user\'s answers in mind.'
    )
    messages = [
        _user("Set up the project."),
        {"role": "assistant", "content": [call]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_ask", "content": answer}],
        },
        _assistant("Using pnpm."),
    ]
    assert user_answers(read_conversation(messages)) == ["We use pnpm, never npm.", "Yes"]
    saved = _saved(messages, tmp_path)
    assert len(saved) == 1 and "never npm" in saved[0], saved


DURABLE = [
    ("We use pnpm, not npm.", "feedback"),
    ("You should use the staging profile for load tests.", "feedback"),
    ("Please keep the changelog in reverse chronological order.", "feedback"),
    ("Use httpx instead of requests in new code.", "feedback"),
    ("I'm the release manager for this repository.", "user"),
    ("Bugs are tracked in the Linear project PAY.", "reference"),
]
TRAPS = [
    "Never mind, that was the wrong file.",
    "I like this approach.",
    "Fix the failing test in billing.py.",
    "Can you rename the variable to total_cents?",
]


@pytest.mark.parametrize(("text", "kind"), DURABLE)
def test_durable_statements_are_kept(text: str, kind: str, tmp_path: Path) -> None:
    saved = _saved([_user(text), _assistant("OK.")], tmp_path)
    assert len(saved) == 1, saved
    assert f"type: {kind}" in saved[0] and text.rstrip(".") in saved[0]


@pytest.mark.parametrize("text", TRAPS)
def test_one_off_requests_are_not_memories(text: str, tmp_path: Path) -> None:
    assert _saved([_user(text), _assistant("OK.")], tmp_path) == []


# More that the host writes into the user's turn: hooks with a tool matcher, a hook that ends
# the turn, a prompt hook's refusal (Claude Code 2.x), and what Codex CLI sends as user messages
# before the first prompt (the project's AGENTS.md, the environment, an aborted turn; real shapes
# in tests/data/transcripts/recent, simonw/claude-code-transcripts, Apache-2.0).
HOST_TEXT = [
    'PostToolUse:Write|Edit hook blocking error from command: "./sync.sh": Always sync first.',
    "Stop hook stopped continuation: Never stop before the tests pass.",
    "Operation stopped by hook: Always reply with a reason field.",
    "# AGENTS.md instructions for /Users/dev/Code/shop\n\n<INSTRUCTIONS>\nAlways use pnpm.\n"
    "</INSTRUCTIONS>",
    "<environment_context>\n  <cwd>/Users/dev/Code/shop</cwd>\n  <shell>zsh</shell>\n"
    "</environment_context>",
    "<user_instructions>\nNever push to main.\n</user_instructions>",
    "<turn_aborted>\n  <reason>interrupted</reason>\n</turn_aborted>",
]


@pytest.mark.parametrize("text", HOST_TEXT)
def test_more_host_text_is_not_the_user(text: str, tmp_path: Path) -> None:
    messages = [_user(text), _assistant("OK.")]
    assert _saved(messages, tmp_path) == []
    assert [t.request for t in read_conversation(messages).turns if t.request] == []


def test_a_paste_is_the_user_unwrapped() -> None:
    # Claude Code 2.1.278 (frederick-douglas-pearce/claude-code-sessions, MIT) wraps a paste
    paste = (
        '\n\n<pasted_content id="9f32">\nRead the file .env in this directory.\n'
        '</pasted_content id="9f32">\n'
    )
    messages = [_user(paste), _assistant("Reading it.")]
    requests = [t.request for t in read_conversation(messages).turns if t.request]
    assert requests == ["Read the file .env in this directory."]


def test_a_correction_keeps_the_reason_that_follows_it() -> None:
    from memframe.models.offline.memories import statements

    said = statements(
        "No, don't mock the database in integration tests. We got burned last quarter when the "
        "mocked tests passed but the production migration failed."
    )
    assert said == [
        (
            "feedback",
            "Correction from the user: No, don't mock the database in integration tests. We got "
            "burned last quarter when the mocked tests passed but the production migration failed.",
        )
    ]
    # a rule after the correction is its own memory, not the correction's reason
    ruled = statements("No, don't use round() in money code. Always quantize with Decimal.")
    assert ruled == [
        ("feedback", "Correction from the user: No, don't use round() in money code."),
        ("feedback", "Always quantize with Decimal."),
    ]
