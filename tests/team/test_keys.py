"""The key and repo rules of memframe.team_keys, which the client and the server share."""

from __future__ import annotations

import unicodedata

import pytest

from memframe.team_keys import (
    REFUSED_CATEGORIES,
    REPO,
    UnsafeKeyError,
    UnsafeRepoError,
    check_key,
    check_repo,
    is_repo,
    local_keys,
)

CONTROL_AND_FORMAT = [
    chr(c)
    for c in range(0x110000)
    if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) in REFUSED_CATEGORIES
]


def test_every_control_and_format_character_is_refused_anywhere_in_a_key():
    assert {"\n", "\r", "\t", "\x7f", "\x85", "\x9f", "\u200b", "\u2028", "\u2029"} <= set(
        CONTROL_AND_FORMAT
    )
    for ch in CONTROL_AND_FORMAT:
        for key in (f"a{ch}b.md", f"{ch}a.md", f"a.md{ch}", f"dir{ch}/a.md"):
            with pytest.raises(UnsafeKeyError):
                check_key(key)
    with pytest.raises(UnsafeKeyError, match="U\\+D800"):
        check_key("\ud800.md")  # a lone surrogate


@pytest.mark.parametrize("key", ["evil\n/x.md", "a\x85b.md", "notes.md\n", "a\u200db.md"])
def test_the_keys_of_the_issue_are_refused_with_the_character_named(key):
    with pytest.raises(UnsafeKeyError, match="control or format character U\\+"):
        check_key(key)


@pytest.mark.parametrize("key", ["a.md", "runbooks/db.md", "é/ü ñ.md", "日本語.md", "a-b_c d.md"])
def test_plain_keys_pass(key):
    assert check_key(key) == key


def test_local_files_with_such_names_are_not_entries(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "ok.md").write_text("ok\n")
    (team / "bad\nname.md").write_text("x\n")
    (team / "zw\u200b.md").write_text("x\n")
    assert list(local_keys(team)) == ["ok.md"]


@pytest.mark.parametrize("repo", ["acme/app", "a/b", "Acme.io/app_2-x", f"{'a' * 100}/{'b' * 100}"])
def test_valid_repos(repo):
    assert is_repo(repo) and check_repo(repo) == repo and REPO.match(repo)


@pytest.mark.parametrize(
    "repo",
    [
        "acme/app\n",  # what `acme/app%0A` decodes to: $ matched before the newline
        "acme/app\r\n",
        "\nacme/app",
        "acme/app\x85",
        "acme/ap\u200bp",
        "acme",
        "acme/app/extra",
        "-acme/app",
        "acme/.app",
        "acme/app ",
        "\uff41cme/app",  # fullwidth a: ASCII only
        f"{'a' * 101}/b",
        "",
    ],
)
def test_invalid_repos(repo):
    assert not is_repo(repo)
    assert REPO.match(repo) is None  # anchored with \\Z: match is as strict as fullmatch
    with pytest.raises(UnsafeRepoError, match="owner/name"):
        check_repo(repo)


def test_a_repo_that_is_not_a_string():
    assert not is_repo(5)
    with pytest.raises(UnsafeRepoError, match="must be a string"):
        check_repo(None)


def test_the_sync_settings_use_the_same_rule(tmp_path):
    from memframe.team_sync import SyncConfigError, TeamSyncSettings, repo_from_remote_url
    from memframe.team_sync.settings import REPO as SETTINGS_REPO

    assert SETTINGS_REPO is REPO
    settings = TeamSyncSettings.from_settings(
        {"server": "http://127.0.0.1:1", "token": "t"}, env={}
    )
    with pytest.raises(SyncConfigError, match="owner/name"):
        settings.resolve(tmp_path, repo="acme/app\n")
    assert repo_from_remote_url("https://github.com/acme/ap\u200bp.git") is None
