"""``memframe docs list|update PATH``: the Magic Docs sessions track, and an update run now."""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memframe.cli._common import (
    add_frame_arguments,
    check_model_backend,
    open_frame_from_args,
    print_json,
)

if TYPE_CHECKING:
    from memframe.messages import Message


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="docs tracked by this project's sessions")
    listing.add_argument("--json", action="store_true", help="print JSON")
    update = actions.add_parser("update", help="update one Magic Doc now")
    update.add_argument("path", type=Path, help="the document")
    update.add_argument(
        "--transcript", type=Path, help="a transcript whose conversation the update should use"
    )
    for sub in (listing, update):
        add_frame_arguments(sub)


def run(args: argparse.Namespace) -> int:
    from memframe.cli import EXIT_FAILURE, EXIT_OK, CommandError
    from memframe.layers.magic_docs import MagicDocsLayer, detect, read_doc

    frame = open_frame_from_args(args)
    with frame:
        layer = frame.manager.get_plugin("magic_docs")
        if not isinstance(layer, MagicDocsLayer):
            raise CommandError("the magic_docs layer is disabled")
        if args.action == "list":
            docs = tracked(frame.project_home)
            if args.json:
                print_json([asdict(doc) for doc in docs])
            else:
                print(f"{len(docs)} Magic Doc(s) tracked under {frame.project_home}")
                for doc in docs:
                    state = "present" if Path(doc.path).is_file() else "missing"
                    skipped = f"  skipped: {doc.skip_reported}" if doc.skip_reported else ""
                    print(
                        f"  {doc.path}  {doc.title!r}  sessions: {', '.join(doc.sessions)}  "
                        f"updates: {doc.updates}  ({state}){skipped}"
                    )
            return EXIT_OK
        path = args.path.expanduser().resolve(strict=False)
        if not path.is_file():
            raise CommandError(f"{args.path} is not a file")
        if detect(read_doc(path, 65_536)) is None:
            raise CommandError(f"{args.path} has no '# MAGIC DOC: <title>' header")
        check_model_backend(frame)
        history = _conversation(args.transcript) if args.transcript else []
        try:
            outcome = layer.update(None, path, history, force=True)
        except Exception as exc:
            raise CommandError(f"update failed: {exc}") from exc
    print(f"{path}: {outcome}")
    return EXIT_FAILURE if outcome.startswith(("skipped", "untracked")) else EXIT_OK


def _conversation(path: Path) -> list[Message]:
    from memframe.cli import CommandError
    from memframe.transcripts import TranscriptError, open_transcript
    from memframe.transcripts import events as ev

    try:
        return [
            e.message
            for e in ev.derive_events(open_transcript(path))
            if isinstance(e, ev.MessageEvent)
        ]
    except (TranscriptError, OSError) as exc:
        raise CommandError(str(exc)) from exc


@dataclass
class TrackedDoc:
    path: str
    title: str | None = None
    sessions: list[str] = field(default_factory=list)
    updates: int = 0
    skip_reported: str | None = None


def tracked(project_home: Path) -> list[TrackedDoc]:
    """Every doc some session of the project tracks, merged by path."""
    import orjson

    merged: dict[str, TrackedDoc] = {}
    for state_file in sorted(project_home.glob("*/state.json")):
        try:
            state = orjson.loads(state_file.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        docs = state.get("magic_docs", {}).get("docs", {}) if isinstance(state, dict) else {}
        if not isinstance(docs, dict):
            continue
        for path, entry in docs.items():
            row = merged.setdefault(path, TrackedDoc(path))
            row.sessions.append(state_file.parent.name)
            if isinstance(entry, dict):
                row.title = entry.get("title") or row.title
                updates = entry.get("updates", 0)
                row.updates += updates if isinstance(updates, int) else 0
                row.skip_reported = entry.get("skip_reported") or row.skip_reported
    return list(merged.values())
