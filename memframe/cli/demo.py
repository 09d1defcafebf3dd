"""``memframe demo``: the bundled agent session replayed through every layer, offline.

Everything the demo writes stays in one folder (default ``./memframe-demo``): the memory base,
the config dir and a scratch project, so it never touches the user's real memory.
"""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_OUT = Path("memframe-demo")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="folder for the demo's files (./memframe-demo)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the summary")


def bundled_session() -> Path:
    from importlib.resources import files

    return Path(str(files("memframe") / "data" / "demo-session.jsonl"))


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
    """What the layers would inject into the next session's first prompt."""
    from memframe.frame import MemoryFrame

    assert isinstance(frame, MemoryFrame)
    session = frame.session("demo-next")
    blocks = session.context_blocks(prompt)
    print(f"\ncontext for a new session's prompt {prompt!r}")
    for block in blocks:
        lines = block.text.count("\n") + 1
        print(f"  [{block.source}] {block.title}: {lines} lines, {len(block.text):,} characters")
    session.close("demo-complete")


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
    print("memframe demo: the bundled Claude Code session (MIT, d-kimuson/claude-code-viewer)")
    print("model backend: offline; every file written stays under", out)
    with open_frame_from_args(frame_args, config_dir=out / "config") as frame:
        report = replay_into(frame, replay_args)
        print_summary(report, frame)
        print_session_memory(report, show_notes=not args.quiet)
        print_memories(frame)
        print_next_context(frame, "Update CLAUDE.md with the orchestrator workflow")
    print_secret_scan(replay_args.transcript)
    print(f"\nfiles: {out}")
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        print(f"  {path.relative_to(out)}  ({path.stat().st_size:,} bytes)")
    return 1 if report.layer_errors else 0
