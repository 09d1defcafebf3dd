"""``memframe ui``: prints a token URL on 127.0.0.1, answers nothing without the token, opens
the browser unless ``--no-browser``."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from memframe.cli import main
from tests.integration.cli_runner import memframe_env

URL = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{20,})")


def test_memframe_ui_prints_a_token_url_and_guards_every_page(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    command = [sys.executable, "-m", "memframe", "ui", "--port", "0", "--no-browser"]
    command += ["--project", str(project), "--home", str(tmp_path / "home")]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=memframe_env()
    )
    try:
        assert process.stdout is not None
        found = None
        for _ in range(5):
            line = process.stdout.readline()
            found = URL.search(line)
            if found:
                break
        assert found, "no token URL printed"
        port, token = int(found.group(1)), found.group(2)
        origin = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=origin, timeout=30) as client:
            assert client.get("/memories").status_code == 401
            assert client.get("/api/memories").status_code == 401
            assert client.get("/memories?token=wrong").status_code == 403
            page = client.get(f"/?token={token}", follow_redirects=True)
            assert page.status_code == 200
            assert "No memories yet" in page.text
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    assert process.returncode == 0, stderr


def test_the_browser_opens_unless_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import webbrowser

    import memframe.ui.server as server

    opened: list[str] = []
    served: list[int] = []

    def serve(running: server.RunningUi) -> None:
        served.append(running.port)
        assert running.sock is not None
        running.sock.close()

    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: opened.append(url) or True)
    monkeypatch.setattr(server, "serve_forever", serve)
    (tmp_path / "project").mkdir()
    base = ["ui", "--port", "0", "--project", str(tmp_path / "project")]
    base += ["--home", str(tmp_path / "home")]
    assert main(base) == 0
    printed = URL.search(capsys.readouterr().out)
    assert printed and opened == [printed.group(0)]
    assert served == [int(printed.group(1))]
    assert main([*base, "--no-browser"]) == 0
    assert len(opened) == 1


def test_a_bad_port_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ui", "--port", "70000", "--project", str(tmp_path)]) == 2
    assert "--port" in capsys.readouterr().err
