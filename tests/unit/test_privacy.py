"""Personal data and secrets never enter memory: detection, and redaction on the store's and the
background agents' write paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from memframe.config import ConfigError
from memframe.memdir import MemoryStore
from memframe.memdir.guard import redact_private_data, scrub
from memframe.privacy import find_personal, personal_kinds
from memframe.scanner import default_scanner
from memframe.testing import open_test_frame

# A GitHub classic PAT shape (ghp_ + 36 base62), assembled so no scanner flags this file.
TOKEN = "ghp_" + "N7x2QpL9vR4sT1uW8yZ3aB6cD0eF5gH2jK4m"

PERSONAL = [
    ("call me on +44 20 7946 0958 tomorrow", "+44 20 7946 0958", "phone"),
    ("my cell is (415) 555-0132", "(415) 555-0132", "phone"),
    ("office 212-555-0187", "212-555-0187", "phone"),
    ("+1.415.555.0199 is the on-call line", "+1.415.555.0199", "phone"),
    ("mail jane.doe+ci@acme-corp.io please", "jane.doe+ci@acme-corp.io", "email"),
    ("send it to 221B Baker Street, London", "221B Baker Street", "address"),
    (
        "we moved to 350 Fifth Avenue, Apt 5B, New York, NY 10118 last week",
        "350 Fifth Avenue, Apt 5B, New York, NY 10118",
        "address",
    ),
    ("HQ: 1600 Amphitheatre Pkwy, Mountain View", "1600 Amphitheatre Pkwy", "address"),
    ("meine Adresse: Musterstraße 12, 10115 Berlin.", "Musterstraße 12, 10115 Berlin", "address"),
    ("the office is at Alte Gasse 3a now", "Alte Gasse 3a", "address"),
    ("livraison au 12 rue de la Paix, merci", "12 rue de la Paix", "address"),
    ("invoices go to PO Box 4471", "PO Box 4471", "address"),
]
NOT_PERSONAL = [
    "released 2026-12-01 at 10:42:07",
    "commit 4f37757 fixed 1,550 -> 1,800 MB/s",
    "see user@example.com for the format",
    "from noreply@github.com",
    "version 5.4.12 and 10.0.2",
    "order id 41552301877 shipped",
    "pip install memframe==0.1.0",
    "42 tests passed on the main branch",
    "see section 3 Street Fighter for the lore",  # no street type after the words
    "ran 12 benchmarks in the Berlin region",
    "port 8080 on the staging host",
]


@pytest.mark.parametrize(("text", "span", "kind"), PERSONAL)
def test_personal_data_is_found(text: str, span: str, kind: str) -> None:
    found = find_personal(text)
    assert [(text[a:b], k) for a, b, k in found] == [(span, kind)]


@pytest.mark.parametrize("text", NOT_PERSONAL)
def test_ordinary_numbers_and_documentation_addresses_are_not(text: str) -> None:
    assert find_personal(text) == []


def test_scrub_redacts_secrets_and_personal_data_and_says_what() -> None:
    text, labels = scrub(
        f"token {TOKEN}, phone +44 20 7946 0958, mail a.b@corp.io", default_scanner()
    )
    assert TOKEN not in text and "7946" not in text and "a.b@corp.io" not in text
    assert text.count("[REDACTED]") == 3
    assert labels == ["github-pat", "email", "phone"]


def test_memory_add_never_saves_a_token_or_a_phone_number(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory")
    memory = store.add(
        "Call Sam at +44 20 7946 0958",
        "the deploy contact",
        "user",
        f"Sam deploys; his token is {TOKEN} and his number +44 20 7946 0958.",
    )
    assert memory is not None
    saved = memory.path.read_text()
    index = store.index_text()
    for private in (TOKEN, "7946 0958"):
        assert private not in saved and private not in index


def test_agent_changes_are_scrubbed_private_and_team(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    changes: dict[Path, str | None] = {
        root / "mine.md": "reach me at jane@corp.io",
        root / "team" / "ops.md": f"deploy token {TOKEN}",
        root / "old.md": None,
    }
    guarded, notes = redact_private_data(root, changes, default_scanner())
    assert guarded[root / "mine.md"] == "reach me at [REDACTED]"
    assert guarded[root / "team" / "ops.md"] == "deploy token [REDACTED]"
    assert guarded[root / "old.md"] is None
    assert notes == ["mine.md: email", "team/ops.md: github-pat"]


def test_which_kinds_are_redacted_is_a_setting(tmp_path: Path) -> None:
    text = "Sam: sam@corp.io, +44 20 7946 0958, 221B Baker Street"
    assert personal_kinds({}) == {"email", "phone", "address"}
    only_mail = personal_kinds({"privacy": {"redact": ["email"]}})
    assert [k for _, _, k in find_personal(text, only_mail)] == ["email"]
    redacted, labels = scrub(text, default_scanner(), only_mail)
    assert labels == ["email"] and "Baker Street" in redacted and "sam@corp.io" not in redacted
    assert personal_kinds({"privacy": {"redact": []}}) == frozenset()
    for bad in ({"redact": ["emails"]}, {"redact": "email"}, {"keep": []}, []):
        with pytest.raises(ConfigError, match="privacy"):
            personal_kinds({"privacy": bad})


def test_a_bad_privacy_setting_stops_the_frame(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.json").write_text('{"privacy": {"redact": ["postal"]}}')
    with pytest.raises(ConfigError, match=r"settings 'privacy': 'redact' must be a list of any"):
        open_test_frame(tmp_path)


def test_a_memory_the_agent_writes_itself_is_scrubbed(tmp_path: Path) -> None:
    from memframe.messages import ToolUseBlock

    frame = open_test_frame(tmp_path, builtin_layers=["memframe.layers.memdir:MemdirLayer"])
    try:
        from memframe.memdir import locate

        root = locate(frame).path
        root.mkdir(parents=True, exist_ok=True)
        path = root / "deploy.md"
        path.write_text(
            "---\nname: Deploy contact\ndescription: call +44 20 7946 0958\ntype: reference\n"
            f"---\nSam (sam@corp.io) deploys with {TOKEN}.\n"
        )
        frame.session("s1").on_tool_use(ToolUseBlock("t1", "Write", {"file_path": str(path)}))
        saved = path.read_text()
        index = (root / "MEMORY.md").read_text()
        for private in (TOKEN, "sam@corp.io", "7946"):
            assert private not in saved and private not in index
        assert "deploy.md" in index and "Sam ([REDACTED]) deploys" in saved
    finally:
        frame.close()


def test_messages_sent_to_background_agents_are_scrubbed_and_the_rest_kept_as_is() -> None:
    from memframe.memdir.guard import scrub_messages

    clean = {"role": "user", "content": [{"type": "text", "text": "run the tests"}]}
    messages = [
        clean,
        {"role": "user", "content": f"my token is {TOKEN}, call +44 20 7946 0958"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Bash",
                    "input": {"command": f"gh auth {TOKEN}"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "mail jane@corp.io"}],
                }
            ],
        },
    ]
    out = scrub_messages(messages, default_scanner())
    assert out[0] is clean  # untouched: the same bytes for a provider's prompt cache
    assert out[1]["content"] == "my token is [REDACTED], call [REDACTED]"
    assert out[2]["content"][0]["input"] == {"command": "gh auth [REDACTED]"}
    assert out[3]["content"][0]["content"][0]["text"] == "mail [REDACTED]"
    assert TOKEN in messages[1]["content"]  # the caller's messages are not changed
