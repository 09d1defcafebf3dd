"""The ``memframe`` command: version, plugins, demo, errors and start-up cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import memframe
from tests.integration.cli_runner import run_memframe


def run_cli(*args: str, cwd: Path, extra_env: dict[str, str] | None = None):
    env = {"HOME": str(cwd), "XDG_CONFIG_HOME": str(cwd / "xdg"), **(extra_env or {})}
    return run_memframe(*args, cwd=cwd, extra_env=env)


def test_version_names_the_backend(tmp_path):
    result = run_cli("--version", cwd=tmp_path)
    assert result.returncode == 0
    expected_backend = os.environ.get("MEMFRAME_BACKEND") or "native"
    assert result.stdout.strip().startswith(f"memframe {memframe.__version__} (backend ")
    assert f"backend {expected_backend}" in result.stdout


def test_no_command_prints_help_and_exits_2(tmp_path):
    result = run_cli(cwd=tmp_path)
    assert result.returncode == 2
    assert "replay" in result.stdout and "plugins" in result.stdout


def test_unknown_command_is_a_usage_error(tmp_path):
    result = run_cli("frobnicate", cwd=tmp_path)
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_plugins_lists_layers_with_distributions(tmp_path):
    result = run_cli("plugins", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    layers = json.loads(result.stdout)
    assert isinstance(layers, list)
    for layer in layers:
        assert set(layer) == {"name", "origin", "target", "distribution", "version", "hooks"}


def test_plugins_reports_a_broken_settings_file_clearly(tmp_path):
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "settings.json").write_text("{not json")
    result = run_cli("plugins", cwd=tmp_path, extra_env={"MEMFRAME_CONFIG_DIR": str(config)})
    assert result.returncode == 2
    assert "settings.json" in result.stderr and "not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_demo_replays_the_bundled_sessions_into_a_named_folder(tmp_path):
    out = tmp_path / "demo-out"
    result = run_cli("demo", "--out", str(out), "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "summary" in result.stdout
    assert str(out) in result.stdout
    state = out / "home" / "projects"
    state_files = sorted(state.rglob("state.json"))
    # the two replayed sessions, and the new session whose first context the demo shows
    assert [p.parent.name for p in state_files] == ["demo", "demo-docs", "demo-next", "demo-work"]
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in state_files)
    # the work session leaves memories: its durable statements, not its traps
    (memory_dir,) = state.glob("*/memory")
    memories = "\n".join(p.read_text() for p in memory_dir.glob("*.md") if p.name != "MEMORY.md")
    for kept in ("pytest, not unittest", "quantize with Decimal", "maintainer of the billing"):
        assert kept in memories
    for trap in ("Never mind", "Stop hook feedback", "make lint before you stop"):
        assert trap not in memories
    # nothing private anywhere in memory or notes (the token is made up at run time)
    written = "\n".join(p.read_text() for p in state.rglob("*.md"))
    assert "7946" not in written and "ghp_" not in written
    # the next session is given the memories recalled for its prompt, and the notes come back
    # after a compaction with the error and the user's correction
    assert "context for a new session's prompt" in result.stdout
    recalled = [ln for ln in result.stdout.splitlines() if ln.strip().startswith("recalled: ")]
    assert any("Decimal" in line for line in recalled), recalled
    assert "notes handed back after a compaction of 'demo-work'" in result.stdout
    assert "User correction: No, don't use round()" in result.stdout
    # the Magic Doc is skipped on the offline backend, never faked
    assert "skipped: the 'offline' model backend cannot update docs" in result.stdout
    assert "left as it was (no fake edit)" in result.stdout
    # team sync through the embedded server: the clean memory is sent, the secret never leaves
    assert "sent     team/deploys-go-through-staging.md" in result.stdout
    assert "BLOCKED  aws-access-token" in result.stdout
    assert "server holds 1 entry in sync" in result.stdout
    assert not (tmp_path / ".memframe").exists(), "the demo must not touch the real memory base"


def test_cli_start_does_not_import_the_runtime():
    code = (
        "import sys, memframe.cli as c; c.build_parser(); "
        "heavy = [m for m in ('pluggy', 'orjson', 'memframe.frame', 'memframe._native') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""


def _fake_distribution(root: Path) -> Path:
    """A distribution on disk whose layer registers a `hello` command through the entry point.
    It notes in files when it is imported and when a frame opens with it."""
    site = root / "site"
    dist_info = site / "memframe_hello-0.3.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memframe-hello\nVersion: 0.3.0\n"
    )
    (dist_info / "entry_points.txt").write_text("[memframe]\nhello = memframe_hello\n")
    (site / "memframe_hello.py").write_text(
        "import os\nimport memframe\n\n"
        "with open(os.environ['HELLO_MARKS'], 'a') as f:\n    f.write('imported\\n')\n\n"
        "def _add(parser):\n    parser.add_argument('--name', default='world')\n\n"
        "def _run(args, frame):\n"
        "    print(f'hello {args.name} in {frame.project_dir.name}')\n    return 3\n\n"
        "@memframe.hookimpl\n"
        "def register_commands(register):\n    register('hello', 'say hello', _add, _run)\n\n"
        "@memframe.hookimpl\n"
        "def on_frame_open(frame):\n"
        "    with open(os.environ['HELLO_MARKS'], 'a') as f:\n        f.write('frame\\n')\n"
    )
    return site


def test_a_layer_can_add_a_subcommand(tmp_path):
    site = _fake_distribution(tmp_path)
    marks = tmp_path / "marks"
    env = {"PYTHONPATH": str(site), "HELLO_MARKS": str(marks)}

    def noted() -> list[str]:
        lines = marks.read_text().splitlines() if marks.exists() else []
        marks.unlink(missing_ok=True)
        return lines

    listed = run_cli("--help", cwd=tmp_path, extra_env=env)
    assert listed.returncode == 0, listed.stderr
    assert "say hello [hello]" in listed.stdout
    assert noted() == ["imported"]  # asked for its commands, no frame opened

    project = tmp_path / "app"
    project.mkdir()
    args = ["--name", "memframe", "--project", str(project), "--home", str(tmp_path / "h")]
    result = run_cli("hello", *args, cwd=tmp_path, extra_env=env)
    assert result.stdout.strip() == "hello memframe in app", result.stderr
    assert result.returncode == 3
    assert noted() == ["imported", "frame"]  # the command ran with the frame

    typo = run_cli("helo", "--name", "x", cwd=tmp_path, extra_env=env)
    assert typo.returncode == 2
    assert "invalid choice: 'helo'" in typo.stderr and "'hello'" in typo.stderr
    assert noted() == ["imported"]  # a typo never opens a frame

    builtin = run_cli("scan", "--help", cwd=tmp_path, extra_env=env)
    assert builtin.returncode == 0
    assert noted() == []  # a built-in command does not even import the layers

    off = run_cli("hello", cwd=tmp_path, extra_env={**env, "MEMFRAME_DISABLED_PLUGINS": "hello"})
    assert off.returncode == 2 and "invalid choice: 'hello'" in off.stderr
    assert noted() == []


def test_a_bad_backend_name_is_a_clear_error(tmp_path):
    result = run_cli("--version", cwd=tmp_path, extra_env={"MEMFRAME_BACKEND": "turbo"})
    assert result.returncode == 2
    assert "turbo" in result.stderr
    assert "Traceback" not in result.stderr


SHARED = Path(__file__).parents[1] / "data" / "transcripts"
VIEWER = SHARED / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


def test_replay_shows_each_extraction_and_the_notes(tmp_path):
    home = tmp_path / "home"
    result = run_memframe("replay", str(VIEWER), "--home", str(home), "--project", str(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "session memory: 3 extraction(s)" in out
    rows = [line.split() for line in out.splitlines() if line.strip().endswith("updated")]
    assert [row[0] for row in rows] == ["4", "22", "24"]  # message indices
    assert rows[2][4] == "stop"  # the end of the turn brought the offline notes up to date
    assert rows[0][1:5] == ["19,328", "19,328", "4", "tool_calls"]
    assert "    # Files and Functions" in out  # the notes file, printed
    quiet = run_memframe("replay", str(VIEWER), "--home", str(home), "-q", "--session", "q")
    assert "# Files and Functions" not in quiet.stdout
    assert "notes: " in quiet.stdout


def test_context_prints_the_notes_kept_at_compaction(tmp_path):
    home = tmp_path / "home"
    run_memframe("replay", str(VIEWER), "--home", str(home), "--project", str(tmp_path), "-q")
    session = VIEWER.stem
    (state_file,) = home.rglob(f"{session}/state.json")
    saved = state_file.read_bytes()
    result = run_memframe(
        "context", "--session", session, "--home", str(home), "--project", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert state_file.read_bytes() == saved  # read-only: no hook ran, nothing saved
    assert "# Kept at the next compaction (1 part(s))" in result.stdout
    assert "# Worklog" in result.stdout
    as_json = run_memframe(
        "context",
        "--session",
        session,
        "--home",
        str(home),
        "--project",
        str(tmp_path),
        "--json",
    )
    data = json.loads(as_json.stdout)
    assert data["session"] == session
    assert [(b["source"], b["title"]) for b in data["context"]] == [("memdir", "Memory")]
    assert "# Current State" in data["at_compaction"][0]


def test_context_for_an_unknown_session_lists_the_known_ones(tmp_path):
    home = tmp_path / "home"
    run_memframe("replay", str(VIEWER), "--home", str(home), "--project", str(tmp_path), "-q")
    result = run_memframe(
        "context", "--session", "nope", "--home", str(home), "--project", str(tmp_path)
    )
    assert result.returncode == 2
    assert "no session 'nope'" in result.stderr and VIEWER.stem in result.stderr
    bad = run_memframe("context", "--session", "../x", "--home", str(home))
    assert bad.returncode == 2 and "invalid session id" in bad.stderr


def test_a_chosen_but_unconfigured_model_is_a_clear_error(tmp_path):
    result = run_memframe(
        "replay", str(VIEWER), "--home", str(tmp_path / "h"), "--model", "anthropic"
    )
    assert result.returncode == 2
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert "Traceback" not in result.stderr
    unknown = run_memframe("replay", str(VIEWER), "--home", str(tmp_path / "h"), "--model", "gpt")
    assert unknown.returncode == 2 and "available: anthropic, claude-cli" in unknown.stderr


def test_bench_runs_the_benchmarks_of_a_source_checkout(tmp_path, monkeypatch, capsys):
    listed = run_memframe("bench", "--list")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]
    assert {"scan", "checksum", "tokens", "hook"} <= set(names)
    unknown = run_memframe("bench", "--only", "nope")
    assert unknown.returncode == 2 and "invalid choice: 'nope'" in unknown.stderr

    from memframe.cli import bench, main

    monkeypatch.setattr(bench, "REPO_ROOT", tmp_path)  # an installed wheel: no benches/
    assert main(["bench", "--quick"]) == 2
    assert "ship with memframe's source repository" in capsys.readouterr().err
