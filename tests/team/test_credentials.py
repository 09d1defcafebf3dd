"""A token is sent only where it came from: the settings file's token to the settings file's
server; a server from the environment (or ``--server``) needs its own token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from memframe.team_sync import SyncConfigError, TeamSyncSettings
from tests.integration.cli_runner import run_memframe
from tests.team.conftest import REPO, TOKEN
from tests.team.hostile import Canned, CannedServer, snapshot_body

SETTINGS_SERVER = "https://memory.example.com"
ELSEWHERE = "https://collector.example.net"


def _resolve(raw: dict[str, Any], env: dict[str, str], **overrides: str) -> Any:
    return TeamSyncSettings.from_settings({"repo": REPO, **raw}, env=env).resolve(**overrides)


def test_the_settings_token_goes_to_the_settings_server():
    config = _resolve({"server": SETTINGS_SERVER, "token": "file-token"}, {})
    assert (config.server, config.token) == (SETTINGS_SERVER, "file-token")


def test_an_environment_server_does_not_get_the_settings_token():
    with pytest.raises(SyncConfigError) as caught:
        _resolve(
            {"server": SETTINGS_SERVER, "token": "file-token"}, {"MEMFRAME_TEAM_SERVER": ELSEWHERE}
        )
    message = str(caught.value)
    assert "sent only to the server the settings file names" in message
    assert SETTINGS_SERVER in message and ELSEWHERE in message
    assert "MEMFRAME_TEAM_SERVER" in message and "MEMFRAME_TEAM_TOKEN" in message
    assert "file-token" not in message
    with pytest.raises(SyncConfigError, match=r"names \(none\)"):
        _resolve({"token": "file-token"}, {"MEMFRAME_TEAM_SERVER": ELSEWHERE})


def test_a_server_argument_does_not_get_the_settings_token_either():
    raw = {"server": SETTINGS_SERVER, "token": "file-token"}
    with pytest.raises(SyncConfigError, match="comes from --server"):
        _resolve(raw, {}, server=ELSEWHERE)
    # the same server, spelt with a trailing slash, is the settings server
    assert _resolve(raw, {}, server=SETTINGS_SERVER + "/").token == "file-token"
    assert _resolve(raw, {"MEMFRAME_TEAM_SERVER": SETTINGS_SERVER}).token == "file-token"


@pytest.mark.parametrize(
    ("raw", "env", "overrides", "server", "token"),
    [
        (
            {},
            {"MEMFRAME_TEAM_SERVER": ELSEWHERE, "MEMFRAME_TEAM_TOKEN": "env"},
            {},
            ELSEWHERE,
            "env",
        ),
        (
            {"server": SETTINGS_SERVER, "token": "file-token"},
            {"MEMFRAME_TEAM_SERVER": ELSEWHERE, "MEMFRAME_TEAM_TOKEN": "env"},
            {},
            ELSEWHERE,
            "env",
        ),
        ({"server": SETTINGS_SERVER}, {"MEMFRAME_TEAM_TOKEN": "env"}, {}, SETTINGS_SERVER, "env"),
        ({"token": "file-token"}, {}, {"server": ELSEWHERE, "token": "arg"}, ELSEWHERE, "arg"),
        ({}, {"MEMFRAME_TEAM_TOKEN": "env"}, {"server": ELSEWHERE}, ELSEWHERE, "env"),
        (
            {"server": SETTINGS_SERVER, "token": "file-token"},
            {"MEMFRAME_TEAM_SERVER": ELSEWHERE},
            {"token": "arg"},
            ELSEWHERE,
            "arg",
        ),
    ],
)
def test_a_token_from_the_same_place_or_given_explicitly_is_accepted(
    raw, env, overrides, server, token
):
    config = _resolve(raw, env, **overrides)
    assert (config.server, config.token) == (server, token)


def test_the_sources_are_recorded():
    settings = TeamSyncSettings.from_settings(
        {"server": SETTINGS_SERVER, "token": "t"}, env={"MEMFRAME_TEAM_TOKEN": "e"}
    )
    assert settings.server_source == "settings"
    assert settings.token_source == "env MEMFRAME_TEAM_TOKEN"
    assert settings.settings_server == SETTINGS_SERVER
    with pytest.raises(SyncConfigError, match="unknown setting 'server_source'"):
        TeamSyncSettings.from_settings({"server_source": "settings"}, env={})


@pytest.fixture
def collector() -> Iterator[CannedServer]:
    server = CannedServer(lambda method: Canned(200, {}, snapshot_body({"x.md": "x\n"})))
    yield server
    server.close()


def test_a_redirecting_variable_never_collects_the_users_token(collector, server, tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    team_sync = {"server": server.url, "repo": REPO, "token": TOKEN}
    (config / "settings.json").write_text(json.dumps({"team_sync": team_sync}))
    (tmp_path / "project").mkdir()
    common = ["--project", str(tmp_path / "project"), "--home", str(tmp_path / "home")]
    env = {"MEMFRAME_CONFIG_DIR": str(config)}

    for args in (["pull"], ["push"], ["status", "--remote"]):
        done = run_memframe(
            "sync", *args, *common, extra_env={**env, "MEMFRAME_TEAM_SERVER": collector.url}
        )
        assert done.returncode == 2, done.stderr
        assert "sent only to the server the settings file names" in done.stderr
        assert TOKEN not in done.stderr + done.stdout
    argument = run_memframe("sync", "pull", "--server", collector.url, *common, extra_env=env)
    assert argument.returncode == 2 and "--server" in argument.stderr
    assert collector.received == []

    ok = run_memframe("sync", "pull", *common, extra_env=env)  # the settings server: fine
    assert ok.returncode == 0, ok.stderr


def test_the_layer_stays_off_rather_than_send_the_token_elsewhere(
    collector, tmp_path, caplog, monkeypatch
):
    from memframe.testing import open_test_frame

    config = tmp_path / "config"
    config.mkdir()
    team_sync = {"server": "http://127.0.0.1:9", "repo": REPO, "token": TOKEN}
    (config / "settings.json").write_text(json.dumps({"team_sync": team_sync}))
    monkeypatch.setenv("MEMFRAME_TEAM_SERVER", collector.url)
    layers = ["memframe.layers.memdir:MemdirLayer", "memframe.layers.team_sync:TeamSyncLayer"]
    with open_test_frame(tmp_path, builtin_layers=layers, strict=False) as frame:
        frame.session("s1").close()
    assert collector.received == []
    assert any("sent only to the server" in r.getMessage() for r in caplog.records)
