"""A sync client that a server cannot hold: hostile servers on 127.0.0.1 that drip, bomb, flood
with entries or redirect, against the client and against ``memframe sync`` in a subprocess."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memframe.scanner import default_scanner
from memframe.team_sync import STATE_FILE, SyncConfig, TeamSyncClient
from tests.integration.cli_runner import memframe_env
from tests.team.conftest import REPO, TOKEN, make_client, write
from tests.team.hostile import Canned, CannedServer, DripServer, elapsed, gzip_bomb, snapshot_body

TIMEOUT = 2.0
MiB = 1024 * 1024


@pytest.fixture
def drip() -> Iterator[DripServer]:
    server = DripServer(interval=0.5)
    yield server
    server.close()


@pytest.fixture
def canned() -> Iterator[Any]:
    started: list[CannedServer] = []

    def start(answer: Any) -> CannedServer:
        server = CannedServer(answer if callable(answer) else (lambda method: answer))
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def _settings(tmp_path: Path, **team_sync: Any) -> None:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"team_sync": team_sync}))


def _sync_command(tmp_path: Path, *args: str) -> list[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    home = ["--project", str(project), "--home", str(tmp_path / "home")]
    return [sys.executable, "-m", "memframe", "sync", *args, *home]


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    extra = {"MEMFRAME_CONFIG_DIR": str(tmp_path / "config"), **(env or {})}
    return subprocess.run(
        _sync_command(tmp_path, *args),
        capture_output=True,
        text=True,
        env=memframe_env(extra),
        timeout=120,
        check=False,
    )


def _memory_dir(tmp_path: Path) -> Path:
    from memframe.memdir import locate
    from memframe.testing import open_test_frame

    with open_test_frame(tmp_path) as frame:
        return locate(frame).path


# -- time: a server that drips ---------------------------------------------------------------


def test_a_dripping_server_cannot_hold_a_pull_or_a_push(drip, memory_dir):
    client = make_client(memory_dir, drip.url, timeout=TIMEOUT)
    pulled, took = elapsed(client.pull)
    assert took < TIMEOUT + 2, took
    assert pulled.failure == "transient" and "too slow" in pulled.error
    assert pulled.requests == 1  # an answer that had started is not retried

    write(memory_dir, "a.md", "a\n")
    pushed, took = elapsed(client.push)
    assert took < TIMEOUT + 2, took
    assert pushed.failure == "transient" and "too slow" in pushed.error
    assert pushed.requests == 1
    assert not (memory_dir / "team" / "b.md").exists()


def test_a_budget_is_a_deadline_whatever_the_server_drips(drip, memory_dir):
    write(memory_dir, "a.md", "a\n")
    client = make_client(memory_dir, drip.url, timeout=30.0)
    pushed, took = elapsed(lambda: client.push(budget=1.0))
    assert took < 2.0, took
    assert pushed.failure == "transient" and "time allowed" in pushed.error


def test_a_sync_without_a_budget_ends_when_another_would_stop_waiting(memory_dir):
    config = SyncConfig(server="http://127.0.0.1:9", repo=REPO, token=TOKEN, timeout=2.0)
    assert config.sync_deadline == 60.0  # max(60, 12 x timeout): the lock wait of others
    assert SyncConfig(server="http://x", repo=REPO, token=TOKEN, timeout=10).sync_deadline == 120


@pytest.mark.parametrize("action", ["pull", "push"])
def test_memframe_sync_fails_within_the_timeout_against_a_drip(drip, tmp_path, action):
    memory = _memory_dir(tmp_path)
    write(memory, "a.md", "a\n")
    _settings(tmp_path, server=drip.url, repo=REPO, token=TOKEN, timeout=TIMEOUT)
    done, took = elapsed(lambda: _run(tmp_path, action))
    ended = time.monotonic()
    assert drip.connections == 1
    held = ended - drip.accepted[0]  # from its connection to the process's exit
    print(
        f"memframe sync {action} vs a drip, timeout {TIMEOUT:g} s: held {held:.2f} s, "
        f"{took:.2f} s with the start-up"
    )
    assert held < TIMEOUT + 2, (held, done.stderr)
    assert took < TIMEOUT + 6, (took, done.stderr)  # start-up on a loaded machine included
    assert done.returncode == 1, done.stderr
    assert "too slow" in done.stderr and TOKEN not in done.stderr


# -- size: a gzip bomb -----------------------------------------------------------------------


def _bomb_answer() -> Canned:
    prefix = b'{"checksum": "sha256:bomb", "content": {"entryChecksums": {}, "entries": {"a.md": "'
    body = gzip_bomb(prefix, b"A" * MiB, 500, b'"}}}')  # 500 MiB once inflated
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    return Canned(200, headers, body)


# Runs the CLI in a fresh interpreter and records that process's own peak RSS (VmHWM, which
# starts again at exec: a child forked from a big pytest process does not inherit its figure).
_PEAK_RSS = """
import sys
from pathlib import Path
from memframe.cli import main
try:
    code = main(sys.argv[2:])
finally:
    status = Path("/proc/self/status").read_text().splitlines()
    Path(sys.argv[1]).write_text(next(s for s in status if s.startswith("VmHWM:")).split()[1])
sys.exit(code)
"""


def test_a_gzip_bomb_is_cut_off_with_bounded_memory(canned, tmp_path):
    server = canned(_bomb_answer())
    memory = _memory_dir(tmp_path)
    command = _sync_command(
        tmp_path, "pull", "--json", "--server", server.url, "--repo", REPO, "--token", TOKEN
    )
    peak_file = tmp_path / "peak-kib"
    command = [command[0], "-c", _PEAK_RSS, str(peak_file), *command[3:]]  # not "-m memframe"
    env = memframe_env({"MEMFRAME_CONFIG_DIR": str(tmp_path / "config")})
    started = time.monotonic()
    process = subprocess.run(command, capture_output=True, env=env, timeout=120, check=False)
    out, err = process.stdout, process.stderr
    took = time.monotonic() - started
    peak_mib = int(peak_file.read_text()) / 1024  # VmHWM is in KiB
    print(f"gzip bomb (500 MiB inflated): peak RSS {peak_mib:.0f} MiB, {took:.2f} s")
    assert process.returncode == 1, err
    result = json.loads(out)
    assert result["failure"] == "error"
    assert "over 67,108,864 bytes once decoded" in result["error"]
    assert "max_response_bytes" in result["error"]
    assert peak_mib < 300, peak_mib
    assert not (memory / "team").exists() and not (memory / "MEMORY.md").exists()


def test_a_gzip_answer_within_the_limit_is_decoded(canned, memory_dir):
    body = gzip.compress(snapshot_body({"a.md": "a\n" * 1000}))
    server = canned(Canned(200, {"Content-Encoding": "gzip"}, body))
    result = make_client(memory_dir, server.url).pull()
    assert result.ok, result.error
    assert (memory_dir / "team" / "a.md").read_text() == "a\n" * 1000
    assert server.received[0].headers["accept-encoding"] == "gzip"


def test_the_limit_counts_decoded_bytes_and_is_configurable(canned, memory_dir):
    body = snapshot_body({"a.md": "x" * 5000})
    server = canned(Canned(200, {"Content-Encoding": "gzip"}, gzip.compress(body)))
    config = SyncConfig(server=server.url, repo=REPO, token=TOKEN, max_response_bytes=4096)
    result = TeamSyncClient(config, memory_dir, default_scanner()).pull()
    assert result.failure == "error" and "over 4,096 bytes once decoded" in result.error
    roomy = SyncConfig(server=server.url, repo=REPO, token=TOKEN, max_response_bytes=8192)
    assert TeamSyncClient(roomy, memory_dir, default_scanner()).pull().ok


def test_a_declared_oversized_answer_is_not_read(canned, memory_dir):
    server = canned(Canned(200, {}, b"{" + b" " * 10_000 + b"}"))
    config = SyncConfig(server=server.url, repo=REPO, token=TOKEN, max_response_bytes=4096)
    result = TeamSyncClient(config, memory_dir, default_scanner()).pull()
    assert result.failure == "error" and "would be 10,002 bytes" in result.error


@pytest.mark.parametrize("encoding", ["br", "deflate", "gzip, gzip"])
def test_an_encoding_not_asked_for_is_refused(canned, memory_dir, encoding):
    server = canned(Canned(200, {"Content-Encoding": encoding}, b"\x00" * 64))
    result = make_client(memory_dir, server.url).pull()
    assert result.failure == "error" and "only gzip was asked for" in result.error


def test_a_corrupt_or_cut_gzip_answer_is_an_error(canned, memory_dir):
    whole = gzip.compress(snapshot_body({"a.md": "a\n"}))
    for body, message in [(whole[:-12], "cut short"), (whole[:10] + b"\xff" * 20, "corrupt")]:
        server = canned(Canned(200, {"Content-Encoding": "gzip"}, body))
        result = make_client(memory_dir, server.url).pull()
        assert result.failure == "error" and message in result.error, result.error
    assert not (memory_dir / "team").exists()


# -- count: thousands of entries -------------------------------------------------------------


def test_more_entries_than_the_limit_fail_the_pull_and_write_nothing(canned, memory_dir):
    entries = {f"note-{n:04d}.md": f"# Note {n}\n" for n in range(3_000)}
    server = canned(Canned(200, {}, snapshot_body(entries)))
    result = make_client(memory_dir, server.url).pull()
    assert result.failure == "error" and not result.ok
    assert "sent 3,000 entries, more than the limit of 1,000" in result.error
    assert "team_sync.max_entries" in result.error and "nothing was written" in result.error
    assert result.written == [] and not (memory_dir / "team").exists()
    assert not (memory_dir / "MEMORY.md").exists()

    config = SyncConfig(server=server.url, repo=REPO, token=TOKEN, max_entries=5_000)
    raised = TeamSyncClient(config, memory_dir, default_scanner()).pull()
    assert raised.ok and len(raised.written) == 3_000


def test_more_checksums_than_the_limit_fail_a_push(canned, memory_dir):
    checksums = {f"n{n}.md": f"sha256:{n:064x}" for n in range(1_001)}
    server = canned(Canned(200, {}, snapshot_body(None, checksums)))
    write(memory_dir, "a.md", "a\n")
    result = make_client(memory_dir, server.url).push()
    assert result.failure == "error" and "sent 1,001 entries" in result.error
    assert [r.method for r in server.received] == ["GET"]  # nothing was sent


def test_the_entry_limit_is_a_setting():
    from memframe.team_sync import SyncConfigError, TeamSyncSettings

    settings = TeamSyncSettings.from_settings(
        {"server": "http://127.0.0.1:1", "repo": REPO, "token": "t", "max_entries": 5000}, env={}
    )
    assert settings.resolve().max_entries == 5000
    assert TeamSyncSettings.from_settings(None, env={}).max_entries == 1_000
    with pytest.raises(SyncConfigError, match="'max_entries' must be an integer >= 1"):
        TeamSyncSettings.from_settings({"max_entries": 0}, env={})
    with pytest.raises(SyncConfigError, match="'max_response_bytes' must be an integer >= 1024"):
        TeamSyncSettings.from_settings({"max_response_bytes": 10}, env={})


# -- trust: redirects ------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirects_are_refused_and_the_token_goes_nowhere_else(canned, memory_dir, status):
    elsewhere = canned(Canned(200, {}, snapshot_body({"x.md": "x\n"})))
    server = canned(Canned(status, {"Location": f"{elsewhere.url}/api/claude_code/team_memory"}))
    client = make_client(memory_dir, server.url)
    pulled = client.pull()
    assert pulled.failure == "permanent" and f"HTTP {status}" in pulled.error
    write(memory_dir, "a.md", "a\n")
    assert client.push().failure == "permanent"
    assert elsewhere.received == []
    assert TOKEN not in (memory_dir / STATE_FILE).read_text()


# -- TLS through the deadline backend --------------------------------------------------------


def test_https_works_through_the_deadline_backend(tmp_path, memory_dir, monkeypatch):
    from memframe.team_sync import http
    from tests.team.hostile import self_signed

    server_tls, client_tls = self_signed(tmp_path)
    monkeypatch.setattr(http, "_ssl_context", lambda: client_tls)
    server = CannedServer(
        lambda method: Canned(200, {}, snapshot_body({"a.md": "a\n"})), server_tls
    )
    try:
        result = make_client(memory_dir, server.url).pull()
        assert result.ok, result.error
        assert (memory_dir / "team" / "a.md").read_text() == "a\n"
        assert server.received[0].headers["authorization"] == f"Bearer {TOKEN}"
    finally:
        server.close()


def test_an_untrusted_certificate_gets_no_token(tmp_path, memory_dir):
    from tests.team.hostile import self_signed

    server_tls, _ = self_signed(tmp_path)
    server = CannedServer(lambda method: Canned(200, {}, snapshot_body({})), server_tls)
    try:
        result = make_client(memory_dir, server.url, timeout=2.0).pull()
        assert result.failure == "transient" and "CERTIFICATE_VERIFY_FAILED" in result.error
        assert server.received == []
    finally:
        server.close()


def test_a_stalled_tls_handshake_is_bounded_by_the_timeout(memory_dir):
    import socket

    silent = socket.create_server(("127.0.0.1", 0))  # accepts (the backlog), never speaks
    try:
        port = silent.getsockname()[1]
        client = make_client(memory_dir, f"https://127.0.0.1:{port}", timeout=0.5)
        result, took = elapsed(client.pull)
        assert result.failure == "transient" and "ConnectTimeout" in result.error
        assert result.requests == 4  # nothing came back: retried like any timeout
        assert took < 4 * 0.5 + 1.5, took
    finally:
        silent.close()
