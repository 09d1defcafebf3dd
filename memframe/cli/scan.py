"""``memframe scan PATH…``: secrets in files, directories, JSONL transcripts and team databases.

Exit codes: 0 no findings, 1 findings reported, 2 usage or input error (a missing path, an
unreadable baseline or database; files that fail to read during the scan give 2 when nothing was
found). See docs/scanning.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memframe.cli._common import add_rule_arguments, scanner_from_args

if TYPE_CHECKING:
    from memframe.scanner import SecretScanner
    from memframe.scanning.hits import Hit
    from memframe.scanning.progress import Progress
    from memframe.scanning.runner import ScanStats
    from memframe.scanning.teamdb import TeamDbSource

FORMATS = ("text", "json", "sarif", "csv")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "Exit codes: 0 no findings, 1 findings reported, 2 usage or input error. "
        "A line containing 'memframe:allow' (optionally followed by rule ids) is not reported."
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or directories (walked under .gitignore/.memframeignore); *.jsonl files are "
        "read as JSON lines; sqlite:///PATH or postgresql://… scans a team database",
    )
    parser.add_argument(
        "--team-db",
        action="append",
        default=[],
        metavar="PATH|URL",
        help="scan every entry of the team server's database: a SQLite file or a PostgreSQL "
        "URL (repeatable)",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="text", help="report format (default: text)"
    )
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write the report to FILE"
    )
    parser.add_argument(
        "--redact",
        type=Path,
        metavar="DIR",
        help="write a redacted copy of every file with findings under DIR (originals untouched)",
    )
    parser.add_argument(
        "--baseline", type=Path, metavar="FILE", help="report only findings not in FILE"
    )
    parser.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write every current finding to FILE as the new baseline (then exit 0)",
    )
    add_rule_arguments(parser)
    parser.add_argument(
        "--version",
        action=_EngineVersionAction,
        help="print the scanning engine and its library version, then exit",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="print how the rules reached the engine (library, rules it left out and why, "
        "database cache) to stderr; alone, without PATH, only that",
    )
    parser.add_argument(
        "--no-ignore", action="store_true", help="do not read .gitignore/.memframeignore files"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="scanning threads (default: all cores)",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress display and no summary"
    )
    dask = parser.add_mutually_exclusive_group()
    dask.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="scan on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:PORT); the "
        "workers must see the scanned paths at the same place (pip install 'memframe[dask]')",
    )
    dask.add_argument(
        "--dask-local",
        type=int,
        metavar="N",
        help="scan on a local Dask cluster of N worker processes",
    )


def _inputs(args: argparse.Namespace) -> tuple[list[str], list[TeamDbSource]]:
    """(file and directory arguments, team databases); missing inputs are usage errors."""
    from memframe.cli import CommandError
    from memframe.scanning.teamdb import db_source

    paths: list[str] = []
    dbs: list[TeamDbSource] = [db_source(a) or Path(a) for a in args.team_db]
    for argument in args.paths:
        db = db_source(argument)
        if db is not None:
            dbs.append(db)
        else:
            paths.append(argument)
    if not paths and not dbs:
        raise CommandError("nothing to scan: give PATH… or --team-db PATH")
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise CommandError("; ".join(f"{p}: no such file or directory" for p in missing))
    for db in dbs:
        if isinstance(db, Path) and not db.is_file():
            raise CommandError(f"{db}: no such team database file")
    if args.threads is not None and args.threads < 1:
        raise CommandError("--threads must be at least 1")
    if args.dask_local is not None and args.dask_local < 1:
        raise CommandError("--dask-local must be at least 1")
    if args.redact is not None and args.redact.exists() and not args.redact.is_dir():
        raise CommandError(f"--redact {args.redact}: not a directory")
    return paths, dbs


def _total_bytes(paths: list[str], dbs: list[TeamDbSource]) -> int | None:
    """The total to scan when it is known up front (only files named)."""
    if dbs or not all(os.path.isfile(p) for p in paths):
        return None
    return sum(os.path.getsize(p) for p in paths)


class _EngineVersionAction(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help=kwargs.get("help"))

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from memframe import __version__, _backend

        print(f"memframe scan {__version__}; engine {_backend.ENGINE}")
        parser.exit()


def explain(scanner: SecretScanner) -> str:
    """The engine report ``--explain`` prints."""
    status = scanner.status()
    total = len(scanner.rules.rules)
    in_database = total - len(status.rejected) if status.database_error is None else 0
    lines = [
        f"engine: {status.description}",
        f"rules: {total}, in the one-pass database: {in_database}",
        f"database cache: {status.cache}",
    ]
    if status.database_error is not None:
        lines.append(
            f"degraded: no database ({status.database_error}); every rule is confirmed by its "
            "regex over each whole text"
        )
    for rule, reason in status.rejected:
        lines.append(
            f"degraded: rule {rule} left out of the database ({reason}); confirmed by "
            "its regex over each whole text"
        )
    if status.scan_failures:
        lines.append(f"degraded: {status.scan_failures} database pass(es) failed")
    if not status.degraded:
        lines.append("not degraded: every rule is in the database")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from memframe.cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CommandError
    from memframe.scanning import baseline
    from memframe.scanning.progress import Progress
    from memframe.scanning.redact import RedactError
    from memframe.scanning.runner import ScanRunner
    from memframe.scanning.teamdb import TeamDbError

    if args.explain and not args.paths and not args.team_db:
        print(explain(scanner_from_args(args)), file=sys.stderr)
        return EXIT_OK
    paths, dbs = _inputs(args)
    scanner = scanner_from_args(args)
    if args.explain:
        print(explain(scanner), file=sys.stderr)
    accepted: frozenset[str] = frozenset()
    if args.baseline is not None and args.write_baseline is None:
        try:
            accepted = baseline.load(args.baseline)
        except baseline.BaselineError as exc:
            raise CommandError(str(exc)) from exc

    progress = Progress.for_stderr(quiet=args.quiet, total_bytes=_total_bytes(paths, dbs))
    started = time.perf_counter()
    if args.dask is not None or args.dask_local is not None:
        found, stats = _scan_on_dask(args, scanner, paths, dbs, progress)
    else:
        runner = ScanRunner(
            scanner,
            threads=args.threads,
            redact_dir=args.redact.absolute() if args.redact is not None else None,
            use_ignore=not args.no_ignore,
            progress=progress,
        )
        try:
            runner.scan_paths(paths)
            for db in dbs:
                runner.scan_team_db(db)
        except (TeamDbError, RedactError) as exc:
            raise CommandError(str(exc)) from exc
        finally:
            progress.close()
        found, stats = runner.all_hits(), runner.stats
    seconds = time.perf_counter() - started

    allowed = sum(1 for h in found if h.allowed)
    hits = [h for h in found if not h.allowed]
    if args.write_baseline is not None:
        try:
            baseline.write(args.write_baseline, hits)
        except baseline.BaselineError as exc:
            raise CommandError(str(exc)) from exc
        reported: list[Hit] = []
    else:
        reported = [h for h in hits if baseline.fingerprint(h) not in accepted]
    summary = _summary(stats, reported, len(hits) - len(reported), allowed, seconds)
    summary["engine"] = scanner.status().as_dict()
    _write_report(args, scanner, reported, summary)

    for error in stats.errors:
        print(f"memframe: warning: {error}", file=sys.stderr)
    if not args.quiet:
        print(_summary_line(summary, args.write_baseline), file=sys.stderr)
    if reported:
        return EXIT_FAILURE
    return EXIT_USAGE if stats.errors else EXIT_OK


def _scan_on_dask(
    args: argparse.Namespace,
    scanner: SecretScanner,
    paths: list[str],
    dbs: list[TeamDbSource],
    progress: Progress,
) -> tuple[list[Hit], ScanStats]:
    """The scan on a Dask cluster (``--dask`` or ``--dask-local``): same findings and stats."""
    from memframe.cli import CommandError
    from memframe.scanning.distributed import (
        DaskError,
        DaskScanner,
        local_worker_threads,
        open_client,
    )
    from memframe.scanning.redact import RedactError
    from memframe.scanning.teamdb import TeamDbError

    threads = args.threads
    if threads is None and args.dask_local is not None:
        threads = local_worker_threads(args.dask_local)
    try:
        with open_client(args.dask, local_workers=args.dask_local) as client:
            on_dask = DaskScanner(
                scanner,
                client,
                threads=threads,
                redact_dir=args.redact.absolute() if args.redact is not None else None,
                use_ignore=not args.no_ignore,
                progress=progress,
            )
            try:
                on_dask.scan(paths, dbs)
            finally:
                progress.close()
    except (DaskError, TeamDbError, RedactError) as exc:
        raise CommandError(str(exc)) from exc
    return on_dask.all_hits(), on_dask.stats


def _summary(
    stats: ScanStats, reported: list[Hit], baselined: int, allowed: int, seconds: float
) -> dict[str, Any]:
    return {
        "findings": len(reported),
        "baselined": baselined,
        "allowed_inline": allowed,
        "files": stats.files,
        "team_entries": stats.entries,
        "bytes": stats.bytes,
        "skipped_binary": stats.binary,
        "skipped_ignored": stats.ignored,
        "redacted_copies": stats.redacted,
        "errors": stats.errors,
        "seconds": round(seconds, 3),
    }


def _summary_line(summary: dict[str, Any], wrote_baseline: Path | None) -> str:
    from memframe.scanning.progress import human_bytes

    seconds = max(summary["seconds"], 1e-3)
    rate = summary["bytes"] / seconds / 1e6
    files, entries = summary["files"], summary["team_entries"]
    scanned = ", ".join(
        part
        for part, shown in (
            (f"{files:,} file{'s' if files != 1 else ''}", files or not entries),
            (f"{entries:,} team entr{'ies' if entries != 1 else 'y'}", entries),
        )
        if shown
    )
    notes = []
    if summary["baselined"]:
        notes.append(f"{summary['baselined']} baselined")
    if summary["allowed_inline"]:
        notes.append(f"{summary['allowed_inline']} allowed inline")
    if summary["redacted_copies"]:
        notes.append(f"{summary['redacted_copies']} redacted copies written")
    if summary["errors"]:
        notes.append(f"{len(summary['errors'])} unreadable")
    count = summary["findings"]
    head = f"{count} finding{'s' if count != 1 else ''}"
    if wrote_baseline is not None:
        head = f"baseline {wrote_baseline} written"
    extra = f" ({', '.join(notes)})" if notes else ""
    return (
        f"memframe scan: {head}{extra}; scanned {scanned}, {human_bytes(summary['bytes'])} "
        f"in {seconds:.2f} s ({rate:,.1f} MB/s)"
    )


def _write_report(
    args: argparse.Namespace, scanner: SecretScanner, hits: list[Hit], summary: dict[str, Any]
) -> None:
    from memframe.cli import CommandError
    from memframe.scanning.formats import render

    data = render(args.format, hits, rules=scanner.rules, summary=summary).encode("utf-8")
    if args.output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        args.output.write_bytes(data)
    except OSError as exc:
        raise CommandError(f"{args.output}: cannot write ({exc.strerror or exc})") from exc
