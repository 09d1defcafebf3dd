"""``memframe replay TRANSCRIPT``: drive a session through every layer and show what happened."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from memframe.cli._common import (
    add_frame_arguments,
    check_model_backend,
    open_frame_from_args,
    print_json,
)

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.replay import ReplayReport, ReplayStep


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("transcript", type=Path, help="Claude Code JSONL or Codex CLI rollout")
    add_frame_arguments(parser)
    parser.add_argument("--session", help="session id (default: the transcript's file name)")
    parser.add_argument(
        "--format", choices=["claude-code", "codex"], help="transcript format (default: detect)"
    )
    parser.add_argument(
        "--include-sidechains", action="store_true", help="also replay sub-agent records"
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report as JSON")
    output.add_argument("-q", "--quiet", action="store_true", help="print only the summary")


def run(args: argparse.Namespace) -> int:
    from memframe.cli import EXIT_FAILURE, EXIT_OK

    frame = open_frame_from_args(args)
    check_model_backend(frame)
    with frame:
        report = replay_into(frame, args)
    if args.json:
        print_json(report.to_dict())
    else:
        print_summary(report, frame)
        print_session_memory(report, show_notes=not args.quiet)
    return EXIT_FAILURE if report.layer_errors else EXIT_OK


def replay_into(frame: MemoryFrame, args: argparse.Namespace) -> ReplayReport:
    from memframe.cli import CommandError
    from memframe.replay import replay
    from memframe.transcripts import TranscriptError

    show_steps = not (args.json or args.quiet)
    if show_steps:
        print(f"replaying {args.transcript}")
        print(f"{'#':>5}  {'event':<10} {'context':>8}  detail")
    try:
        return replay(
            args.transcript,
            frame,
            session_id=args.session,
            transcript_format=args.format,
            include_sidechains=args.include_sidechains,
            on_step=print_step if show_steps else None,
        )
    except (TranscriptError, ValueError) as exc:
        raise CommandError(str(exc)) from exc


def print_step(step: ReplayStep) -> None:
    print(f"{step.index:>5}  {step.kind:<10} {step.context_tokens:>8,}  {step.detail}")


def print_summary(report: ReplayReport, frame: MemoryFrame) -> None:
    from memframe import _backend

    skipped = ", ".join(f"{kind} {count}" for kind, count in sorted(report.skipped_records.items()))
    rows = [
        ("transcript", f"{report.path} ({report.format})"),
        ("session", f"{report.session_id} in {frame.project_home}"),
        ("backend", _backend.BACKEND),
        (
            "messages",
            f"{report.messages} (user {report.user_messages}, "
            f"assistant {report.assistant_messages})",
        ),
        (
            "tool calls",
            f"{report.tool_calls} (results {report.tool_results}, errors {report.tool_errors})",
        ),
        ("file reads", str(report.file_reads)),
        ("stops", str(report.stops)),
        ("compactions", str(report.compactions)),
        (
            "context tokens",
            f"{report.context_tokens:,} at the end (peak {report.peak_context_tokens:,})",
        ),
        ("sidechain skipped", str(report.skipped_sidechain)),
        ("records skipped", skipped or "none"),
        ("problems", str(len(report.problems)) if report.problems else "none"),
    ]
    print("\nsummary")
    for label, value in rows:
        print(f"  {label:<18} {value}")
    for problem in report.problems[:20]:
        print(f"    line {problem.line}: {problem.reason}")
    print("\nlayers")
    infos = {info.name: info for info in frame.layers()}
    if not report.hook_calls:
        print("  (no layer implements these hooks)")
    for layer, counts in report.hook_calls.items():
        info = infos.get(layer)
        origin = f" [{info.distribution} {info.version}]" if info and info.distribution else ""
        calls = " ".join(f"{hook} x{n}" for hook, n in counts.items())
        print(f"  {layer}{origin}: {calls}")
    if report.layer_errors:
        print("\nlayer errors")
        for error in report.layer_errors:
            print(f"  {error}")


def print_session_memory(report: ReplayReport, *, show_notes: bool) -> None:
    """Each notes extraction: where it fired, why, and what came of it; then the notes."""
    state = report.state.get("session_memory")
    if not isinstance(state, dict):
        return
    records = state.get("extractions") or []
    print(f"\nsession memory: {len(records)} extraction(s)")
    if records:
        print(f"  {'msg':>5} {'context':>8} {'growth':>8} {'tools':>5}  {'reason':<10} outcome")
    for rec in records:
        outcome = str(rec.get("status", "?"))
        if rec.get("error"):
            outcome += f" ({rec['error']})"
        if rec.get("refused"):
            outcome += f"; refused: {'; '.join(rec['refused'])}"
        if rec.get("notes_reset"):
            outcome += f"; notes reset: {rec['notes_reset']}"
        print(
            f"  {rec.get('index', '?'):>5} {rec.get('context_tokens', 0):>8,} "
            f"{rec.get('growth', 0):>8,} {rec.get('tool_calls', 0):>5}  "
            f"{rec.get('reason', '?'):<10} {outcome}"
        )
    if report.session_dir is None:
        return
    from memframe.layers.session_memory import NOTES_DIR, NOTES_FILE

    notes = report.session_dir / NOTES_DIR / NOTES_FILE
    if not notes.is_file():
        return
    print(f"  notes: {notes}")
    if show_notes:
        print()
        for line in notes.read_text(encoding="utf-8", errors="replace").splitlines():
            print(f"    {line}")
