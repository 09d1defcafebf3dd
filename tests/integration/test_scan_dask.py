"""``memframe scan`` on Dask (``--dask ADDRESS`` / ``--dask-local N``): the same findings as the
local scan, checked against :class:`~memframe.scanning.runner.ScanRunner` on a two-worker local
cluster (loopback only, no dashboard) started here, and through the command."""

from __future__ import annotations

import io
import json
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memframe.rules import RuleSet, load_rules, merge, rule_from_mapping
from memframe.scanner import SecretScanner
from memframe.scanning.distributed import (
    DaskScanner,
    FileRange,
    TextFile,
    local_worker_threads,
    plan_scan,
    scan_windows,
    window_starts,
)
from memframe.scanning.formats import render
from memframe.scanning.hits import Hit
from memframe.scanning.progress import Progress
from memframe.scanning.runner import ScanRunner, ScanStats
from memframe.scanning.walk import FileInput, Walker
from memframe.scanning.windows import OVERLAP_BYTES, WINDOW_BYTES, find_cut
from memframe.server.postgres import PostgresStorage
from memframe.server.sqlite import SQLiteStorage
from tests.integration.cli_runner import memframe_env, run_memframe
from tests.native.vectors import negatives, positives
from tests.server.conftest import fresh_postgres_database

distributed = pytest.importorskip("distributed")

AWS = "AKIAQ7VJ2ZWXK5MRT3LB"
GITHUB = "ghp_" + "R8f2Kq9ZtX4mW7pB1nV6cJ3hL0sD5gY8aE2u"
SLACK = "xoxb-692869110082-5670881722656-IHYVR72if0GtSZSOHaCrCMhS"
AWS_SECRET = "mZYjH74SaEjg41WrFltv44LEvi1h553o3qMyPI/c"
PEM = next(v.secret for v in positives() if v.rule_id == "private-key" and "RSA" in v.text)
ZZ_RULE = rule_from_mapping(
    {
        "id": "zz-token",
        "label": "test token whose every suffix after a dash is a token too",
        "regex": r"\b((?:zz-){3,400}zz)\b",
        "keywords": ["zz-"],
    }
)
WORDS = [
    "memory",
    "layer",
    "session",
    "note",
    "agent",
    "deploy",
    "café",
    "naïve",
    "日本語",
    "über",
    "report",
    "window",
    "ranges",
    "cluster",
]


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            # the scheduler's health-check HTTP server: any free loopback port, not 8787
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as dask_client,
    ):
        yield dask_client


def local_scan(
    scanner: SecretScanner,
    paths: list[Path],
    cwd: Path,
    dbs: tuple[Path | str, ...] = (),
    **options,
) -> ScanRunner:
    runner = ScanRunner(scanner, cwd=str(cwd), **options)
    runner.scan_paths([str(p) for p in paths])
    for db in dbs:
        runner.scan_team_db(db)
    return runner


def dask_scan(
    scanner: SecretScanner,
    client: object,
    paths: list[Path],
    cwd: Path,
    dbs: tuple[Path | str, ...] = (),
    **options,
) -> DaskScanner:
    on_dask = DaskScanner(scanner, client, cwd=str(cwd), **options)  # type: ignore[arg-type]
    on_dask.scan([str(p) for p in paths], dbs)
    return on_dask


def summary(stats: ScanStats) -> dict:
    return {
        "files": stats.files,
        "bytes": stats.bytes,
        "entries": stats.entries,
        "binary": stats.binary,
        "ignored": stats.ignored,
        "redacted": stats.redacted,
        "errors": stats.errors,
    }


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def words_line(rng: random.Random, size: int) -> str:
    """About ``size`` bytes of words, no newline."""
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word.encode()) + 1
    return " ".join(out)


# -- every rule, every input kind ------------------------------------------------------------------


def build_tree(root: Path) -> tuple[dict[str, str], Path]:
    """Files holding every positive vector (and every negative one), JSONL transcripts, inline
    allows, ignored and binary files, a windowed file and a team database. Returns
    {relative path: secret} of the plain-text positives and the database."""
    rng = random.Random(7)
    expected: dict[str, str] = {}
    for index, vector in enumerate(positives()):
        name = f"pos/{index % 7}/{vector.rule_id}-{index}.txt"
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(vector.text, encoding="utf-8")
        expected[name] = vector.secret or ""
    (root / "neg").mkdir()
    for index, vector in enumerate(negatives()):
        if vector.flagged_by:  # a near miss that a generic rule rightly reports
            continue
        (root / "neg" / f"{vector.rule_id}-{index}.txt").write_text(vector.text, encoding="utf-8")
    # several secrets in one file, inline allows, non-ASCII columns
    (root / "notes.md").write_text(
        f"# Notes — café\n\nkey {AWS} and {GITHUB}\n"
        f"EXAMPLE = {AWS}  # memframe:allow\n"
        f"BOTH = {AWS} {GITHUB}  # memframe:allow github-pat\n"
        f"日本語 {SLACK}\n",
        encoding="utf-8",
    )
    records = [
        {"type": "user", "message": {"content": f"deploy with {AWS}"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": PEM}]}},
        {"odd key": [GITHUB, "clean"], "n": 3},
    ]
    lines = [json.dumps(r) for r in records] + [f"not json {SLACK}", ""]
    (root / "session.jsonl").write_text("\n".join(lines), encoding="utf-8")
    (root / "transcripts").mkdir()
    for index, vector in enumerate(positives()[:40]):
        record = {"message": {"content": [{"type": "tool_result", "content": vector.text}]}}
        with (root / "transcripts" / f"t{index % 4}.jsonl").open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
    # bigger than the test's big_file: scanned in windows (and split into ranges)
    big = "\n".join(words_line(rng, 90) for _ in range(4000))
    big = big[:50_000] + f"\nbig {AWS} ok\n" + big[50_000:] + f"\nend {GITHUB}\n"
    (root / "big.log").write_text(big, encoding="utf-8")
    (root / ".gitignore").write_text("ignored/\n*.skip\n", encoding="utf-8")
    (root / "ignored").mkdir()
    (root / "ignored" / "x.txt").write_text(AWS, encoding="utf-8")
    (root / "a.skip").write_text(AWS, encoding="utf-8")
    (root / "blob.bin").write_bytes(b"\0\1" + AWS.encode())
    (root / "empty.txt").write_bytes(b"")
    (root / "latin1.txt").write_bytes(b"caf\xe9 " + AWS.encode() + b"\n")

    db = root / "server" / "team.db"
    storage = SQLiteStorage(db)
    storage.put(
        "acme/api",
        {"team/deploy.md": f"# Deploy\n\nkey: {AWS}\n", "team/clean.md": "nothing"},
        if_match=None,
        max_entries=100,
    )
    storage.put("acme/web", {"team/gh.md": GITHUB}, if_match=None, max_entries=100)
    storage.close()
    return expected, db


def test_every_rule_gives_the_local_findings_in_every_format(tmp_path, client):
    root = tmp_path / "tree"
    root.mkdir()
    expected, db = build_tree(root)
    scanner = SecretScanner()
    options = {"big_file": 64 << 10}
    local = local_scan(scanner, [root], tmp_path, (db,), **options)
    on_dask = dask_scan(scanner, client, [root], tmp_path, (db,), partition_bytes=8192, **options)

    assert on_dask.plan is not None
    assert len(on_dask.plan.partitions) > 10
    hits = local.all_hits()
    assert on_dask.all_hits() == hits  # same order, lines, columns, secrets, allows
    assert summary(on_dask.stats) == summary(local.stats)
    assert local.stats.ignored == 2
    assert local.stats.binary == 2  # blob.bin and the database file
    assert local.stats.entries == 3
    for name, secret in expected.items():
        assert any(h.path == f"tree/{name}" and h.secret == secret for h in hits), name
    assert {h.rule_id for h in hits} == set(scanner.rules.ids())
    assert any(h.allowed for h in hits)
    assert any(h.json_path for h in hits)
    assert any(h.path == "tree/big.log" and h.line > 1 for h in hits)
    negative_hits = [h for h in hits if h.path.startswith("tree/neg/")]
    assert negative_hits == []

    reported = [h for h in hits if not h.allowed]
    for fmt in ("json", "sarif", "text", "csv"):
        facts = {"findings": len(reported)}
        assert render(
            fmt,
            [h for h in on_dask.all_hits() if not h.allowed],
            rules=scanner.rules,
            summary=facts,
        ) == render(fmt, reported, rules=scanner.rules, summary=facts)


def test_redacted_copies_are_the_local_ones(tmp_path, client):
    root = tmp_path / "tree"
    root.mkdir()
    _, db = build_tree(root)
    scanner = SecretScanner()
    options = {"big_file": 64 << 10}
    local = local_scan(scanner, [root], tmp_path, (db,), redact_dir=tmp_path / "local", **options)
    on_dask = dask_scan(
        scanner,
        client,
        [root],
        tmp_path,
        (db,),
        redact_dir=tmp_path / "dask",
        partition_bytes=8192,
        **options,
    )
    assert on_dask.stats.redacted == local.stats.redacted > 100
    copies = tree_bytes(tmp_path / "local")
    assert tree_bytes(tmp_path / "dask") == copies
    assert AWS.encode() not in copies["tree/notes.md"]
    assert AWS.encode() not in copies["tree/big.log"]


def test_a_team_database_error_names_the_database_as_given(tmp_path, client, monkeypatch):
    from memframe.scanning.teamdb import TeamDbError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.db").write_text("not sqlite")
    with pytest.raises(TeamDbError, match=r"^notes\.db: not a readable SQLite database"):
        dask_scan(SecretScanner(), client, [], tmp_path, (Path("notes.db"),))


def test_a_postgresql_team_database_gives_the_local_findings(tmp_path, client):
    for url in fresh_postgres_database():
        storage = PostgresStorage(url)
        entries = {f"team/{n}.md": f"note {n}\nkey {AWS}\n" for n in range(40)}
        entries["team/clean.md"] = "nothing"
        storage.put("acme/api", entries, if_match=None, max_entries=1000)
        storage.close()
        scanner = SecretScanner()
        local = local_scan(scanner, [], tmp_path, (url,), redact_dir=tmp_path / "local")
        on_dask = dask_scan(scanner, client, [], tmp_path, (url,), redact_dir=tmp_path / "dask")
        assert [h.path for h in on_dask.all_hits()] == [h.path for h in local.all_hits()]
        assert len(local.all_hits()) == 40 and local.stats.entries == 41
        assert tree_bytes(tmp_path / "dask") == tree_bytes(tmp_path / "local")


def test_progress_is_drawn_as_partitions_complete(tmp_path, client):
    for index in range(6):
        (tmp_path / f"f{index}.txt").write_text(f"line {index} {AWS}\n" * 100)
    stream = io.StringIO()
    progress = Progress(enabled=True, stream=stream)
    on_dask = dask_scan(
        SecretScanner(), client, [tmp_path], tmp_path, partition_bytes=1, progress=progress
    )
    assert len(on_dask.plan.partitions) == 6
    assert progress.files == 6
    assert progress.bytes == sum(p.stat().st_size for p in tmp_path.glob("*.txt"))
    assert progress.total_bytes == progress.bytes
    assert "scanning [" in stream.getvalue()


# -- partitions ------------------------------------------------------------------------------------


def test_files_are_grouped_into_partitions_of_about_equal_bytes(tmp_path):
    for index in range(40):
        (tmp_path / f"f{index:02}.txt").write_bytes(b"x" * 1000)
    plan = plan_scan([str(tmp_path)], walker=Walker(cwd=str(tmp_path)), partition_bytes=5000)
    assert [p.nbytes for p in plan.partitions] == [5000] * 8
    units = [u for p in plan.partitions for u in p.units]
    assert all(isinstance(u, TextFile) for u in units)
    assert [u.file.display for u in units] == [f"f{i:02}.txt" for i in range(40)]
    # the default share: a few partitions per worker thread, within the bounds
    default = plan_scan([str(tmp_path)], walker=Walker(cwd=str(tmp_path)), threads=2)
    assert len(default.partitions) == 1


def big_file_with_boundary_secrets(path: Path) -> list[tuple[str, str]]:
    """A file of a few windows where each window cut (so each range boundary, with one window
    per range) falls inside a planted finding; returns (rule id, secret) of each."""
    rng = random.Random(11)
    buf = bytearray()
    planted: list[tuple[str, str]] = []
    start = 0

    def lines_until(size: int) -> None:
        while len(buf) < size:
            buf.extend(words_line(rng, 70).encode() + b"\n")

    def one_line_until(size: int) -> None:
        need = size - len(buf)
        line = words_line(rng, need).encode()
        while len(line) > need:  # whole words only: the text stays UTF-8
            line = line[: line.rfind(b" ")] if b" " in line else b""
        buf.extend(line + b" " * (need - len(line)))

    cases: list[tuple[str, str, str, int]] = [
        # (rule, text, secret, where the text starts relative to the cut search end)
        # newlines inside the PEM block: the cut is after one of them, inside the secret
        ("private-key", PEM, PEM, -200),
        # the cut is after "= ": the match starts before it, the secret right at it
        (
            "aws-secret-access-key",
            f"aws_secret_access_key = {AWS_SECRET}",
            AWS_SECRET,
            -(len("aws_secret_access_key = ") + 10),
        ),
        # the cut is after the second dash, inside the token
        ("slack-bot-token", SLACK, SLACK, -35),
        # cut inside; the next window re-finds the tail, which must not be reported again
        ("zz-token", "zz-" * 30 + "zz", "zz-" * 30 + "zz", -45),
    ]
    for rule, text, secret, offset in cases:
        high = start + WINDOW_BYTES - OVERLAP_BYTES
        lines_until(high - 70_000)
        one_line_until(high + offset - 1)
        buf.extend(b" " + text.encode() + b" ")
        if rule == "slack-bot-token":  # same line, next range: columns continue across it
            buf.extend(words_line(rng, 3000).encode() + f" {AWS} ".encode())
            planted.append(("aws-access-token", AWS))
        buf.extend(b"\n")
        lines_until(start + WINDOW_BYTES + 10)
        cut = start + find_cut(bytes(buf[start : start + WINDOW_BYTES]), OVERLAP_BYTES)
        secret_at = buf.find(text.encode(), high - 70_000)
        assert secret_at < cut < secret_at + len(text.encode()), rule
        planted.append((rule, secret))
        if rule == "aws-secret-access-key":  # the generic assignment rule reports it as well
            planted.append(("generic-api-key", secret))
        start = cut
    lines_until(len(buf) + 3_000_000)
    buf.extend(f"last line {GITHUB}".encode())
    planted.append(("github-pat", GITHUB))
    path.write_bytes(bytes(buf))
    return planted


def test_a_huge_file_split_at_window_starts_finds_boundary_secrets_once(tmp_path, client):
    path = tmp_path / "huge.log"
    planted = big_file_with_boundary_secrets(path)
    size = path.stat().st_size
    scanner = SecretScanner(merge(load_rules(), RuleSet(rules=(ZZ_RULE,))))

    # the planned window starts are where scan_range's windows start
    with path.open("rb") as handle:
        starts = window_starts(handle, size)
        windows = scan_windows(
            scanner,
            handle,
            0,
            size,
            size,
            path="huge.log",
            uri="huge.log",
            known_rules=frozenset(scanner.rules.ids()),
        ).windows
    assert len(starts) >= 5
    assert [0] + [w.next_start for w in windows[:-1]] == starts

    plan = plan_scan(
        [str(path)], walker=Walker(cwd=str(tmp_path)), big_file=1 << 20, partition_bytes=1
    )
    ranges = [u for p in plan.partitions for u in p.units]
    assert all(isinstance(u, FileRange) for u in ranges)
    bounds = list(zip(starts, [*starts[1:], size], strict=True))
    assert [(u.start, u.stop) for u in ranges] == bounds

    local = local_scan(scanner, [path], tmp_path, big_file=1 << 20)
    on_dask = dask_scan(scanner, client, [path], tmp_path, big_file=1 << 20, partition_bytes=1)
    hits = local.all_hits()
    assert on_dask.all_hits() == hits
    assert sorted((h.rule_id, h.secret) for h in hits) == sorted(planted)
    by_rule = {h.rule_id: h for h in hits}
    text = path.read_bytes().decode("utf-8")
    for rule, secret in planted:  # lines and columns are those of the whole file
        hit = by_rule[rule]
        offset = text.index(secret)
        assert hit.line == text.count("\n", 0, offset) + 1, rule
        assert hit.column == offset - text.rfind("\n", 0, offset), rule

    # whole ranges of several windows, and the file grouped with small ones, agree too
    (tmp_path / "small.txt").write_text(f"x {AWS}\n")
    for partition_bytes in (20 << 20, 64 << 20):
        again = dask_scan(
            scanner,
            client,
            [tmp_path],
            tmp_path,
            big_file=1 << 20,
            partition_bytes=partition_bytes,
        )
        assert (
            again.all_hits()
            == local_scan(scanner, [tmp_path], tmp_path, big_file=1 << 20).all_hits()
        )


# -- through the command ---------------------------------------------------------------------------


def comparable(stdout: str) -> dict:
    report = json.loads(stdout)
    report["summary"].pop("seconds")
    return report


def test_dask_local_through_the_command_gives_the_local_json(tmp_path, client):
    root = tmp_path / "tree"
    root.mkdir()
    build_tree(root)
    baseline = tmp_path / "baseline.json"
    written = run_memframe("scan", "tree/pos/0", "--write-baseline", str(baseline), cwd=tmp_path)
    assert written.returncode == 0, written.stderr

    common = ("scan", "tree", "--team-db", "tree/server/team.db", "--format", "json")
    common += ("--baseline", str(baseline))
    local = run_memframe(*common, "--redact", "out-local", cwd=tmp_path)
    started = time.perf_counter()
    on_dask = run_memframe(*common, "--redact", "out-dask", "--dask-local", "2", cwd=tmp_path)
    seconds = time.perf_counter() - started
    assert local.returncode == 1, local.stderr
    assert on_dask.returncode == 1, on_dask.stderr
    assert comparable(on_dask.stdout) == comparable(local.stdout)
    report = comparable(local.stdout)
    assert report["summary"]["baselined"] > 0
    assert report["summary"]["allowed_inline"] > 0
    assert tree_bytes(tmp_path / "out-dask") == tree_bytes(tmp_path / "out-local")
    assert seconds < 60
    # nothing but the summary line on stderr (the cluster is quiet)
    assert on_dask.stderr.strip().startswith("memframe scan: "), on_dask.stderr
    assert len(on_dask.stderr.strip().splitlines()) == 1, on_dask.stderr

    # an existing scheduler, by address
    address = client.scheduler.address
    remote = run_memframe(*common, "--dask", address, "--format", "sarif", cwd=tmp_path)
    local_sarif = run_memframe(*common, "--format", "sarif", cwd=tmp_path)
    assert remote.returncode == 1, remote.stderr
    assert remote.stdout == local_sarif.stdout


def test_a_scheduler_without_workers_is_a_usage_error(tmp_path):
    (tmp_path / "a.txt").write_text(AWS)
    with distributed.LocalCluster(
        n_workers=0,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
    ) as empty:
        result = run_memframe("scan", ".", "--dask", empty.scheduler_address, cwd=tmp_path)
    assert result.returncode == 2
    assert f"the Dask scheduler at {empty.scheduler_address} has no workers" in result.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_scheduler_is_a_quick_usage_error(tmp_path):
    (tmp_path / "a.txt").write_text(AWS)
    address = f"tcp://127.0.0.1:{free_port()}"
    started = time.perf_counter()
    result = run_memframe("scan", ".", "--dask", address, cwd=tmp_path)
    assert time.perf_counter() - started < 20
    assert result.returncode == 2
    assert f"cannot reach the Dask scheduler at {address}" in result.stderr
    assert result.stdout == ""


def test_bad_dask_options_are_usage_errors(tmp_path):
    (tmp_path / "a.txt").write_text(AWS)
    both = run_memframe(
        "scan", ".", "--dask", "tcp://127.0.0.1:1", "--dask-local", "2", cwd=tmp_path
    )
    assert both.returncode == 2
    assert "not allowed with" in both.stderr
    zero = run_memframe("scan", ".", "--dask-local", "0", cwd=tmp_path)
    assert zero.returncode == 2
    assert "--dask-local must be at least 1" in zero.stderr
    scheme = run_memframe("scan", ".", "--dask", "nope://somewhere", cwd=tmp_path)
    assert scheme.returncode == 2
    assert "nope://somewhere" in scheme.stderr


def python_snippet(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = memframe_env()
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )


def test_without_dask_installed_the_command_says_how_to_install_it(tmp_path):
    (tmp_path / "a.txt").write_text(AWS)
    code = (
        "import sys\n"
        "sys.modules['distributed'] = None  # import distributed -> ImportError\n"
        "from memframe.cli import main\n"
        "sys.exit(main(['scan', '.', '--dask-local', '2']))\n"
    )
    result = python_snippet(code, tmp_path)
    assert result.returncode == 2, result.stderr
    assert "pip install 'memframe[dask]'" in result.stderr


def test_memframe_and_a_local_scan_never_import_dask(tmp_path):
    (tmp_path / "a.txt").write_text(AWS)
    code = (
        "import sys\n"
        "import memframe, memframe.cli.scan, memframe.scanning.distributed\n"
        "from memframe.cli import main\n"
        "assert main(['scan', '-q', '.']) == 1\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed'))\n"
        "assert not loaded, loaded\n"
    )
    result = python_snippet(code, tmp_path)
    assert result.returncode == 0, result.stderr


# -- the 1 GB corpus -------------------------------------------------------------------------------

GB = 1_000_000_000


def write_corpus(root: Path) -> list[tuple[str, str, int]]:
    """Just over 1 GB: 200 text files of 4 MB, a 200 MB log (split into ranges) and 10 JSONL
    transcripts, from one random block, with the positive vectors planted at known places.
    Returns (path, secret, line) of the plain-text plants."""
    rng = random.Random(2024)
    block_lines = [words_line(rng, rng.randrange(20, 120)) for _ in range(10_000)]
    block = ("\n".join(block_lines) + "\n").encode()
    vectors = [v for v in positives() if "\n" not in (v.secret or "")]
    plants: list[tuple[str, str, int]] = []
    block_newlines = block.count(b"\n")
    total = 0
    counter = 0

    def planted_file(rel: str, size: int) -> None:
        nonlocal total, counter
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            written = lines = 0
            while written < size:
                vector = vectors[counter % len(vectors)]
                counter += 1
                chunk = vector.text.encode()
                secret_line = lines + vector.text.count("\n", 0, vector.text.index(vector.secret))
                plants.append((rel, vector.secret or "", secret_line + 1))
                out.write(chunk if chunk.endswith(b"\n") else chunk + b"\n")
                lines += chunk.count(b"\n") + (0 if chunk.endswith(b"\n") else 1)
                out.write(block)
                lines += block_newlines
                written += len(chunk) + 1 + len(block)
            total += out.tell()

    for index in range(200):
        planted_file(f"store/{index // 40:02}/notes-{index:03}.md", 4_000_000)
    planted_file("archive/huge.log", 200_000_000)
    for index in range(10):
        path = root / "transcripts" / f"session-{index}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as out:
            for line_index, line in enumerate(block_lines):
                content = line
                if line_index % 1000 == 0:
                    content += " " + vectors[(index + line_index) % len(vectors)].text
                out.write(json.dumps({"message": {"content": content}}) + "\n")
            total += out.tell()
    assert total >= GB
    return plants


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_1gb_corpus_on_a_two_worker_cluster_gives_exactly_the_local_findings(tmp_path, client):
    if SecretScanner().engine != "native":
        pytest.skip("measured on the native engine (the python engine needs ~5 min for 1 GB)")
    root = tmp_path / "corpus"
    try:
        plants = write_corpus(root)
        scanner = SecretScanner()
        started = time.perf_counter()
        local = local_scan(scanner, [root], tmp_path)
        local_seconds = time.perf_counter() - started
        started = time.perf_counter()
        on_dask = dask_scan(scanner, client, [root], tmp_path, threads=local_worker_threads(2))
        dask_seconds = time.perf_counter() - started

        hits = local.all_hits()
        assert on_dask.all_hits() == hits
        assert summary(on_dask.stats) == summary(local.stats)
        assert local.stats.bytes >= GB
        found = {(h.path, h.secret, h.line) for h in hits}
        missing = [p for p in plants if (f"corpus/{p[0]}", p[1], p[2]) not in found]
        assert not missing, missing[:5]
        assert on_dask.plan is not None
        huge = [
            u
            for p in on_dask.plan.partitions
            for u in p.units
            if isinstance(u, FileRange) and u.file.display.endswith("huge.log")
        ]
        assert len(huge) >= 2  # the 200 MB log was split across partitions
        print(
            f"\n1 GB corpus: {len(hits)} findings; local {local_seconds:.1f} s, "
            f"Dask (2 workers, {len(on_dask.plan.partitions)} partitions) {dask_seconds:.1f} s"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_file_inputs_pickle_for_the_workers():
    import pickle

    item = FileInput("/a/b.txt", "b.txt", 3, False)
    assert pickle.loads(pickle.dumps(TextFile(item))) == TextFile(item)
    hit = Hit("r", "l", "p", "u", 1, 2, 1, 3, "secret")
    assert pickle.loads(pickle.dumps(hit)) == hit
