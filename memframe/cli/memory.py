"""``memframe memory list|show|add|forget|doctor``: the persistent memory directory by hand."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from memframe.cli._common import add_frame_arguments, open_frame_from_args, print_json

if TYPE_CHECKING:
    from memframe.frame import MemoryFrame
    from memframe.memdir import MemoryStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list memories (file, type, scope, age, name)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = actions.add_parser("show", help="print one memory")
    show.add_argument("ref", help="file (name.md, team/name.md) or memory name")
    add = actions.add_parser("add", help="save a memory (never a duplicate)")
    add.add_argument("text", help="the memory's text, or - to read it from stdin")
    add.add_argument("--name", required=True, help="short title")
    add.add_argument("--description", default="", help="one line: when is it useful")
    add.add_argument(
        "--type", default="feedback", help="user, feedback, project or reference (default feedback)"
    )
    add.add_argument("--team", action="store_true", help="save into team/ (shared by team sync)")
    forget = actions.add_parser("forget", help="delete a memory and its index line")
    forget.add_argument("ref", help="file or memory name")
    doctor = actions.add_parser("doctor", help="check the directory; exit 1 when unhealthy")
    doctor.add_argument("--stale-days", type=int, default=90, help="report older memories")
    doctor.add_argument("--json", action="store_true", help="print JSON")
    doctor.add_argument(
        "--fix",
        action="store_true",
        help="redact the secrets and personal data found in memory files and MEMORY.md",
    )
    for sub in (listing, show, add, forget, doctor):
        add_frame_arguments(sub)


def _store(frame: object) -> MemoryStore:
    from memframe.memdir import MemoryStore, locate

    return MemoryStore(locate(frame).path)  # type: ignore[arg-type]


def run(args: argparse.Namespace) -> int:
    from memframe.cli import EXIT_FAILURE, EXIT_OK, CommandError
    from memframe.config import ConfigError
    from memframe.memdir import MemoryFormatError

    with open_frame_from_args(args) as frame:
        try:
            store = _store(frame)
        except ConfigError as exc:
            raise CommandError(str(exc)) from exc
        try:
            if args.action == "list":
                return _list(store, args.json)
            if args.action == "show":
                print(store.find(args.ref).path.read_text(encoding="utf-8"), end="")
                return EXIT_OK
            if args.action == "add":
                text = sys.stdin.read() if args.text == "-" else args.text
                if args.team:
                    _refuse_secrets(frame, f"{args.name}\n{args.description}\n{text}")
                saved = store.add(
                    args.name,
                    args.description,
                    args.type,
                    text,
                    scope="team" if args.team else None,
                    scanner=frame.secret_scanner(),
                    personal=frame.personal_kinds,
                )
                if saved is None:
                    duplicate = store.duplicate_of(text)
                    where = duplicate.relative_to(store.root) if duplicate else "?"
                    print(f"already remembered in {where}")
                else:
                    print(f"saved {saved.path}")
                return EXIT_OK
            if args.action == "forget":
                print(f"forgot {store.forget(args.ref)}")
                return EXIT_OK
            report = store.doctor(
                stale_days=args.stale_days,
                scanner=frame.secret_scanner(),
                personal=frame.personal_kinds,
                fix=args.fix,
            )
            _print_doctor(store, report, args.json)
            return EXIT_OK if report.healthy else EXIT_FAILURE
        except KeyError as exc:
            raise CommandError(str(exc.args[0])) from exc
        except MemoryFormatError as exc:
            raise CommandError(str(exc)) from exc


def _refuse_secrets(frame: MemoryFrame, text: str) -> None:
    """A team memory is shared: one with a secret is refused (nothing is written)."""
    from memframe.cli import CommandError

    rules = [match.rule_id for match in frame.secret_scanner().scan(text)]
    if rules:
        raise CommandError(
            f"not saved: a team memory is shared and this one contains a secret "
            f"({', '.join(rules)}); remove it, or save the memory without --team"
        )


def _list(store: MemoryStore, as_json: bool) -> int:
    memories = store.memories()
    rows = [
        {
            "file": m.relative_to(store.root),
            "type": m.type,
            "scope": m.scope(store.root),
            "age_days": m.age_days(),
            "name": m.name,
            "description": m.description,
        }
        for m in memories
    ]
    if as_json:
        print_json({"memory_dir": str(store.root), "memories": rows})
        return 0
    print(f"{store.root}: {len(rows)} memor{'y' if len(rows) == 1 else 'ies'}")
    for row in rows:
        print(
            f"  {row['file']:<44} {row['type']:<9} {row['scope']:<7} "
            f"{row['age_days']:>4}d  {row['name']}"
        )
    return 0


def _print_doctor(store: MemoryStore, report: object, as_json: bool) -> None:
    from dataclasses import asdict

    from memframe.memdir import DoctorReport

    assert isinstance(report, DoctorReport)
    data = asdict(report)
    if as_json:
        print_json({"memory_dir": str(store.root), "healthy": report.healthy, **data})
        return
    print(f"{store.root}: MEMORY.md {report.index_lines} lines, {report.index_bytes:,} bytes")
    labels = {
        "over_limit": "index over its limits",
        "orphans": "files missing from the index",
        "dangling": "index lines pointing nowhere",
        "duplicates": "duplicates",
        "stale": "stale memories",
        "bad_permissions": "bad permissions",
        "unreadable": "unreadable files",
        "unknown_types": "unknown types",
        "private_data": "secrets or personal data (memframe memory doctor --fix redacts them)",
        "fixed": "redacted",
    }
    for key, label in labels.items():
        items = data[key]
        if items:
            print(f"  {label}: {len(items)}")
            for item in items:
                print(f"    {', '.join(item) if isinstance(item, list) else item}")
    print("healthy" if report.healthy else "problems found")
