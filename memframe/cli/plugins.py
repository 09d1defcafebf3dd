"""``memframe plugins``: the layers a frame loads here, with their distributions."""

from __future__ import annotations

import argparse

from memframe.cli._common import add_frame_arguments, open_frame_from_args, print_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_frame_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the list as JSON")


def run(args: argparse.Namespace) -> int:
    with open_frame_from_args(args) as frame:
        infos = frame.layers()
        hooks = {
            info.name: sorted(
                caller.name
                for caller in frame.manager.get_hookcallers(frame.manager.get_plugin(info.name))
                or ()
            )
            for info in infos
        }
    if args.json:
        print_json(
            [
                {
                    "name": i.name,
                    "origin": i.origin,
                    "target": i.target,
                    "distribution": i.distribution,
                    "version": i.version,
                    "hooks": hooks[i.name],
                }
                for i in infos
            ]
        )
        return 0
    if not infos:
        print("no layers loaded")
        return 0
    print(f"{'layer':<20} {'origin':<12} {'distribution':<28} hooks")
    for info in infos:
        dist = f"{info.distribution} {info.version}" if info.distribution else "-"
        print(f"{info.name:<20} {info.origin:<12} {dist:<28} {', '.join(hooks[info.name])}")
    return 0
