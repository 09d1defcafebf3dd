"""``memframe dream [--now]``: consolidate the memory directory (merge duplicates, fix dates,
rebuild the index)."""

from __future__ import annotations

import argparse

from memframe.cli._common import (
    add_frame_arguments,
    check_model_backend,
    open_frame_from_args,
    print_json,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_frame_arguments(parser)
    parser.add_argument(
        "--now", action="store_true", help="skip the time and session gates (the lock still holds)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from memframe.cli import EXIT_FAILURE, EXIT_OK, CommandError
    from memframe.config import ConfigError
    from memframe.layers.dream import DreamLayer, DreamResult

    frame = open_frame_from_args(args)
    check_model_backend(frame)
    with frame:
        layer = frame.manager.get_plugin("dream")
        if not isinstance(layer, DreamLayer):
            try:
                layer = DreamLayer(frame)
            except ConfigError as exc:
                raise CommandError(str(exc)) from exc
        closed = None if args.now else layer.gate()
        result = DreamResult(False, closed) if closed else layer.consolidate()
    if args.json:
        print_json({"memory_dir": str(layer.store.root), **asdict(result)})
    else:
        print(f"{layer.store.root}: {'consolidated' if result.ran else 'not consolidated'}")
        if not result.ran:
            print(f"  because {result.reason}")
        for label, items in (("deleted", result.deleted), ("rewritten", result.written)):
            for item in items:
                print(f"  {label} {item}")
        for line in result.report:  # what was merged or settled, and why
            print(f"  {line}")
        if result.ran:
            print(f"  {result.memories} memories; MEMORY.md rebuilt")
    lock_held = not result.ran and result.reason.startswith("the lock")
    return EXIT_FAILURE if lock_held else EXIT_OK
