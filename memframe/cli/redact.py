"""``memframe redact``: replace every secret with ``[REDACTED]`` — a stream, or files in place.

- ``memframe redact`` (or ``-``): standard input to standard output;
- ``memframe redact FILE``: the redacted text of FILE on standard output (FILE untouched);
- ``memframe redact --in-place PATH…``: files and directories (walked as ``memframe scan``
  walks them: ``.gitignore``/``.memframeignore`` honoured, binary files skipped) rewritten
  atomically, keeping their permissions; files without secrets are not touched.

JSON lines (``*.jsonl``, or ``--jsonl`` for a stream) stay valid JSON: a line with a secret is
re-serialised with the secret redacted inside its string. The rules are ``memframe scan``'s
(``--rules``, ``--no-config``). Exit codes: 0 done (whether or not anything was redacted),
1 a file could not be read or rewritten (the others are done), 2 usage or input error.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from memframe.cli._common import add_rule_arguments, scanner_from_args

if TYPE_CHECKING:
    from memframe.scanner import SecretScanner

STDIN = "-"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files (directories with --in-place); none or '-': standard input",
    )
    parser.add_argument(
        "-i",
        "--in-place",
        action="store_true",
        help="rewrite the files themselves instead of printing the redacted text",
    )
    parser.add_argument(
        "--jsonl",
        action="store_true",
        help="read standard input or FILE as JSON lines (automatic for *.jsonl files)",
    )
    add_rule_arguments(parser)
    parser.add_argument("--no-ignore", action="store_true", help="with --in-place: walk everything")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")


def run(args: argparse.Namespace) -> int:
    from memframe.cli import EXIT_FAILURE, EXIT_OK, CommandError

    paths = [p for p in args.paths if p != STDIN]
    if args.in_place:
        if not paths or len(paths) != len(args.paths):
            raise CommandError("--in-place needs files or directories (not standard input)")
    elif len(args.paths) > 1:
        raise CommandError("one input at a time on standard output; use --in-place for several")
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise CommandError("; ".join(f"{p}: no such file or directory" for p in missing))
    scanner = scanner_from_args(args)
    if args.in_place:
        secrets, changed, total, errors = _in_place(scanner, paths, use_ignore=not args.no_ignore)
        for error in errors:
            print(f"memframe redact: {error}", file=sys.stderr)
        if not args.quiet:
            print(
                f"memframe redact: {secrets} secret(s) redacted in {changed} of {total} file(s)",
                file=sys.stderr,
            )
        return EXIT_FAILURE if errors else EXIT_OK
    secrets = _to_stdout(scanner, paths[0] if paths else None, jsonl=args.jsonl)
    if not args.quiet:
        print(f"memframe redact: {secrets} secret(s) redacted", file=sys.stderr)
    return EXIT_OK


def _to_stdout(scanner: SecretScanner, path: str | None, *, jsonl: bool) -> int:
    from memframe.cli import CommandError
    from memframe.scanning.inplace import find_redactions
    from memframe.scanning.redact import copy_replaced

    handle: BinaryIO
    if path is None:
        handle = io.BytesIO(sys.stdin.buffer.read())
        name = STDIN
    else:
        if os.path.isdir(path):
            raise CommandError(f"{path}: a directory (use --in-place to redact the files in it)")
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        name = path
        jsonl = jsonl or path.endswith(".jsonl")
    with handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(0)
        found = find_redactions(
            scanner, handle, size, jsonl=jsonl, name=name, known_rules=scanner.rules.ids()
        )
        copy_replaced(handle, sys.stdout.buffer, found.replacements)
        sys.stdout.buffer.flush()
    return found.secrets


def _in_place(
    scanner: SecretScanner, paths: list[str], *, use_ignore: bool
) -> tuple[int, int, int, list[str]]:
    """(secrets redacted, files changed, files seen, errors)."""
    from memframe.scanning.inplace import redact_file
    from memframe.scanning.walk import FileInput, Walker

    known = frozenset(scanner.rules.ids())
    walker = Walker(use_ignore=use_ignore)
    secrets = changed = total = 0
    errors: list[str] = []
    seen: set[str] = set()
    for named in paths:
        for item in walker.walk(named):
            if not isinstance(item, FileInput):
                if item.reason.startswith("error: "):
                    errors.append(f"{item.display}: {item.reason.removeprefix('error: ')}")
                continue
            if item.path in seen:
                continue
            seen.add(item.path)
            total += 1
            try:
                count = redact_file(
                    scanner, Path(item.path), jsonl=item.jsonl, name=item.display, known_rules=known
                )
            except (OSError, ValueError) as exc:
                errors.append(f"{item.display}: {getattr(exc, 'strerror', None) or exc}")
                continue
            if count:
                secrets += count
                changed += 1
    return secrets, changed, total, errors
