"""``memframe demo``: two bundled agent sessions replayed through every layer, offline.

The first is a real Claude Code 2.1 session (MIT, DRMacIver/claude-reliability: another
plugin's Stop hook blocks twice, the agent commits and fixes ``.gitignore``); the second,
memframe's own, is a developer fixing a rounding bug with corrections, durable statements,
traps and private data. Then a new session opens and the demo shows what it is given: the
memories recalled for its prompt, and the notes handed back after a compaction.

Everything the demo writes stays in one folder (default ``./memframe-demo``): the memory base,
the config dir and a scratch project, so it never touches the user's real memory.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memframe.server.serving import RunningServer
    from memframe.server.sqlite import SQLiteStorage

DEFAULT_OUT = Path("memframe-demo")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="folder for the demo's files (./memframe-demo)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the summary")


def bundled_session(name: str = "demo-session.jsonl") -> Path:
    from importlib.resources import files

    return Path(str(files("memframe") / "data" / name))


def work_session(out: Path) -> Path:
    """The second session with a made-up deploy token filled in (nothing keeps it)."""
    import random

    rng = random.Random(20261130)
    token = "ghp_" + "".join(
        rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        for _ in range(36)
    )
    text = bundled_session("demo-work-session.jsonl").read_text(encoding="utf-8")
    path = out / "sessions" / "demo-work-session.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.replace("{demo_token}", token), encoding="utf-8")
    return path


def print_secret_scan(path: Path) -> None:
    """What the secret scanner (the gate in front of team sync) sees in the session."""
    import time

    from memframe.scanner import default_scanner

    scanner = default_scanner()
    started = time.perf_counter()
    (result,) = scanner.find_files([path])
    elapsed = time.perf_counter() - started
    size = path.stat().st_size
    print("\nsecret scan")
    print(
        f"  {len(scanner.rules)} rules on the {scanner.engine} engine: "
        f"{len(result.findings)} finding(s) in {size:,} bytes ({elapsed * 1000:.1f} ms)"
    )
    for finding in result.findings[:10]:
        print(f"  line {finding.line}: {finding.rule_id}")


def print_memories(frame: object) -> None:
    """What the extraction layer saved into the memory directory."""
    from memframe.memdir import MemoryStore, locate

    store = MemoryStore(locate(frame).path)  # type: ignore[arg-type]
    memories = store.memories()
    print(f"\nmemory directory: {store.root}")
    print(f"  {len(memories)} memor{'y' if len(memories) == 1 else 'ies'} saved")
    for memory in memories:
        print(f"  {memory.relative_to(store.root)} ({memory.type}): {memory.description}")


def print_next_context(frame: object, prompt: str) -> None:
    """What the layers would inject into the next session's first prompt: each block, and the
    memories recalled for the prompt by name."""
    from memframe.frame import MemoryFrame

    assert isinstance(frame, MemoryFrame)
    session = frame.session("demo-next")
    blocks = session.context_blocks(prompt)
    print(f"\ncontext for a new session's prompt {prompt!r}")
    for block in blocks:
        lines = block.text.count("\n") + 1
        print(f"  [{block.source}] {block.title}: {lines} lines, {len(block.text):,} characters")
        if block.title == "Relevant memories":
            for line in block.text.splitlines():
                if line.startswith("## "):
                    print(f"      recalled: {line[3:]}")
    session.close("demo-complete")


def print_notes_after_compaction(frame: object, session_id: str) -> None:
    """The notes a compacted session gets back (what ``memframe hook`` answers to
    ``SessionStart`` with ``source: compact``): the Current State and Errors sections."""
    from memframe.frame import MemoryFrame
    from memframe.session_memory import parse_sections

    assert isinstance(frame, MemoryFrame)
    session = frame.session(session_id)
    notes = "\n".join(session.pre_compact())
    session.close("demo-complete")
    print(f"\nnotes handed back after a compaction of {session_id!r}: {len(notes):,} characters")
    _, sections = parse_sections(notes)
    for section in sections:
        if section.title in ("Current State", "Errors & Corrections") and section.body.strip():
            print(f"  # {section.title}")
            for line in section.body.strip().splitlines()[:6]:
                print(f"    {line[:150]}")


DEMO_REPO = "demo/app"
DEMO_DOC = (
    "# MAGIC DOC: Architecture overview\n"
    "_Keep it to the components and how they talk to each other._\n\n"
    "- web: Next.js front end\n"
)


def _fake_aws_key() -> str:
    """A made-up AWS access key id (the gate must stop it; it opens nothing)."""
    import random

    rng = random.Random(20261129)
    return "AKIA" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))


def start_team_server(out: Path) -> tuple[SQLiteStorage, RunningServer, str]:
    """The embedded team server on 127.0.0.1 (SQLite under ``out``) and a token for the demo."""
    import secrets

    from memframe.server.app import start_server
    from memframe.server.sqlite import SQLiteStorage
    from memframe.server.storage import hash_token

    storage = SQLiteStorage(out / "team-server" / "team.db")
    token = "mft_demo_" + secrets.token_urlsafe(16)
    storage.add_token(f"demo-{secrets.token_hex(4)}", hash_token(token), (DEMO_REPO,))
    return storage, start_server(storage), token


def write_demo_settings(config_dir: Path, server_url: str, token: str) -> None:
    import orjson

    from memframe._fs import atomic_write_bytes

    settings = {
        "team_sync": {"server": server_url, "repo": DEMO_REPO, "token": token},
        "magic_docs": {"min_interval_seconds": 0},
    }
    atomic_write_bytes(
        config_dir / "settings.json", orjson.dumps(settings, option=orjson.OPT_INDENT_2)
    )


def show_magic_doc(frame: object, project: Path) -> None:
    """A Magic Doc read by the agent, then an idle turn: the offline backend skips, and says so."""
    from memframe.frame import MemoryFrame
    from memframe.layers.magic_docs import MagicDocsLayer

    assert isinstance(frame, MemoryFrame)
    doc = project / "docs" / "ARCHITECTURE.md"
    doc.parent.mkdir(exist_ok=True)
    doc.write_text(DEMO_DOC, encoding="utf-8")
    session = frame.session("demo-docs")
    session.on_file_read("docs/ARCHITECTURE.md", DEMO_DOC)
    session.on_message({"role": "user", "content": "Add an API service next to the web app"})
    final = {"role": "assistant", "content": "Added the API service."}
    session.on_message(final)
    session.on_stop(final)
    frame.flush()
    layer = frame.manager.get_plugin("magic_docs")
    print("\nmagic docs")
    if isinstance(layer, MagicDocsLayer):
        for path, entry in layer.docs(session).items():
            runs = session.state.section("magic_docs").get("runs", [])
            outcome = runs[-1]["docs"].get(path, "?") if runs and "docs" in runs[-1] else "?"
            print(f"  {Path(path).relative_to(project)} '{entry.get('title')}': {outcome}")
    unchanged = doc.read_text(encoding="utf-8") == DEMO_DOC
    print(f"  the document was {'left as it was (no fake edit)' if unchanged else 'updated'}")
    session.close("demo-complete")


def show_team_sync(frame: object) -> None:
    """Two team memories: one is sent to the team server, the one with a secret never leaves."""
    from memframe._fs import atomic_write_text
    from memframe.frame import MemoryFrame
    from memframe.memdir import MemoryStore, locate
    from memframe.team_sync.client import client_for_frame

    assert isinstance(frame, MemoryFrame)
    store = MemoryStore(locate(frame).path)
    store.add(
        "Deploys go through staging",
        "how releases reach production",
        "project",
        "Every deploy goes to staging first; production is promoted from there on Tuesdays.",
        scope="team",
    )
    pasted = store.add(
        "Staging AWS access",
        "the staging account",
        "reference",
        "The staging account's access key is KEY (rotate it monthly).",
        scope="team",
    )
    # the store redacts secrets it is given; a key pasted into the file by hand is what the
    # sync gate is for
    assert pasted is not None
    atomic_write_text(pasted.path, pasted.path.read_text().replace(" KEY ", f" {_fake_aws_key()} "))
    result = client_for_frame(frame).push()
    print("\nteam sync (embedded team server, repo demo/app)")
    for key in result.pushed:
        print(f"  sent     team/{key}")
    for blocked in result.blocked:
        print(f"  BLOCKED  {blocked.describe()}")
    pulled = client_for_frame(frame).status(remote=True)
    print(f"  server holds {pulled.in_sync} entr{'y' if pulled.in_sync == 1 else 'ies'} in sync")


def run(args: argparse.Namespace) -> int:
    from memframe._fs import ensure_private_dir
    from memframe.cli._common import open_frame_from_args
    from memframe.cli.replay import print_session_memory, print_summary, replay_into

    out: Path = args.out.resolve()
    project = out / "project"
    project.mkdir(parents=True, exist_ok=True)
    ensure_private_dir(out / "home")
    frame_args = argparse.Namespace(
        project=project, home=out / "home", strict=False, model="offline"
    )
    replay_args = argparse.Namespace(
        transcript=bundled_session(),
        session="demo",
        format=None,
        include_sidechains=False,
        json=False,
        quiet=args.quiet,
    )
    print(
        "memframe demo: a real Claude Code 2.1 session (MIT, DRMacIver/claude-reliability), "
        "then memframe's own work session"
    )
    print("model backend: offline; every file written stays under", out)
    storage, server, token = start_team_server(out)
    try:
        ensure_private_dir(out / "config")
        write_demo_settings(out / "config", server.url, token)
        print(f"team server: {server.url} (embedded, SQLite)")
        with open_frame_from_args(frame_args, config_dir=out / "config") as frame:
            report = replay_into(frame, replay_args)
            print_summary(report, frame)
            print_session_memory(report, show_notes=not args.quiet)
            work_args = argparse.Namespace(
                **{**vars(replay_args), "transcript": work_session(out), "session": "demo-work"}
            )
            work = replay_into(frame, work_args)
            print_summary(work, frame)
            print_session_memory(work, show_notes=not args.quiet)
            print_memories(frame)
            print_notes_after_compaction(frame, "demo-work")
            print_next_context(frame, "How should the new VAT report round tax amounts?")
            show_magic_doc(frame, project)
            show_team_sync(frame)
    finally:
        server.stop()
        storage.close()
    print_secret_scan(work_args.transcript)
    print(f"\nfiles: {out}")
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        print(f"  {path.relative_to(out)}  ({path.stat().st_size:,} bytes)")
    return 1 if report.layer_errors or work.layer_errors else 0
