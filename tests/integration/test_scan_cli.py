"""``memframe scan`` as platform engineers run it: real files in a temporary directory, through
the command (``run_memframe``) and through the scanning modules directly."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

from memframe.cli import COMMANDS
from memframe.scanner import REDACTED, SecretScanner
from memframe.scanning import baseline as baseline_mod
from memframe.scanning.hits import Hit, allows, masked, text_hits
from memframe.scanning.ignore import IgnoreFile, parse_line
from memframe.scanning.jsonl import JsonlScanner, json_path
from memframe.scanning.progress import Progress
from memframe.scanning.runner import ScanRunner
from memframe.scanning.windows import scan_range
from memframe.server.postgres import PostgresStorage
from memframe.server.sqlite import SQLiteStorage
from memframe.transcripts._jsonl import iter_lines
from tests.integration.cli_runner import memframe_env, run_memframe
from tests.native.vectors import negatives, positives
from tests.server.conftest import fresh_postgres_database

ROOT = Path(__file__).resolve().parents[2]
SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-2.1.0-subset.schema.json"
AWS = "AKIAQ7VJ2ZWXK5MRT3LB"
AWS_2 = "AKIAZ3MRT7LBQ7VJ2ZWX"
GITHUB = "ghp_" + "R8f2Kq9ZtX4mW7pB1nV6cJ3hL0sD5gY8aE2u"
GITHUB_2 = "ghp_" + "Q7mX2pL9vB4nK8cJ1hS6dF3gT0wY5zR2aE9u"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)


def scan(*args: str, cwd: Path, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``memframe scan`` in ``cwd`` with its own (empty unless written) user settings."""
    config = config if config is not None else cwd.parent / f"{cwd.name}-config"
    return run_memframe("scan", *args, cwd=cwd, extra_env={"MEMFRAME_CONFIG_DIR": str(config)})


def scan_json(*args: str, cwd: Path) -> tuple[int, dict]:
    result = scan("--format", "json", *args, cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def runner_hits(*paths: Path, cwd: Path, **options) -> list[Hit]:
    runner = ScanRunner(SecretScanner(), cwd=str(cwd), **options)
    runner.scan_paths([str(p) for p in paths])
    return [h for h in runner.all_hits() if not h.allowed]


# -- every rule ------------------------------------------------------------------------------------


def test_every_positive_vector_is_found_in_a_file(tmp_path):
    expected = {}
    for index, vector in enumerate(positives()):
        name = f"pos/{vector.rule_id}-{index}.txt"
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(vector.text, encoding="utf-8")
        expected[name] = vector
    hits = runner_hits(tmp_path / "pos", cwd=tmp_path)
    for name, vector in expected.items():
        secrets = {h.secret for h in hits if h.path == name and h.rule_id == vector.rule_id}
        assert vector.secret in secrets, f"{name}: {vector.rule_id} not found"
        hit = next(h for h in hits if h.path == name and h.secret == vector.secret)
        offset = vector.text.index(vector.secret)
        assert hit.line == vector.text.count("\n", 0, offset) + 1
        assert hit.column == offset - (vector.text.rfind("\n", 0, offset) + 1) + 1
    assert {v.rule_id for v in expected.values()} == set(SecretScanner().rules.ids())

    code, report = scan_json("pos", cwd=tmp_path)
    assert code == 1
    reported = {(f["path"], f["rule_id"]) for f in report["findings"]}
    assert {(name, v.rule_id) for name, v in expected.items()} <= reported


def test_no_negative_vector_is_reported(tmp_path):
    for index, vector in enumerate(negatives()):
        if vector.flagged_by:  # a near miss that a generic rule rightly reports
            continue
        (tmp_path / f"{vector.rule_id}-{index}.txt").write_text(vector.text, encoding="utf-8")
    assert runner_hits(tmp_path, cwd=tmp_path) == []
    result = scan(".", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


# -- ignore files, binary files, .git --------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "ignored"),
    [
        ("*.log", "a/b/c.log", False, True),
        ("*.log", "c.log.txt", False, False),
        ("/top.txt", "top.txt", False, True),
        ("/top.txt", "sub/top.txt", False, False),
        ("build/", "x/build", True, True),
        ("build/", "x/build", False, False),
        ("docs/*.md", "docs/a.md", False, True),
        ("docs/*.md", "docs/sub/a.md", False, False),
        ("docs/*.md", "other/docs/a.md", False, False),
        ("**/secret", "a/b/secret", False, True),
        ("**/secret", "secret", False, True),
        ("a/**/z", "a/z", False, True),
        ("a/**/z", "a/b/c/z", False, True),
        ("logs/**", "logs/x/y", False, True),
        ("logs/**", "logs", True, False),
        ("file[0-9].txt", "file7.txt", False, True),
        ("file[!0-9].txt", "file7.txt", False, False),
        ("fil?.txt", "file.txt", False, True),
        ("\\#notes", "#notes", False, True),
        ("\\!bang", "!bang", False, True),
    ],
)
def test_ignore_patterns(pattern, path, is_dir, ignored):
    compiled = parse_line(pattern)
    assert compiled is not None
    rules = IgnoreFile("/r", [compiled])
    verdict = rules.verdict("/r/" + path, is_dir)
    assert (verdict is True) == ignored


def test_ignore_comments_blank_lines_and_last_match_wins():
    assert parse_line("# a comment") is None
    assert parse_line("   ") is None
    patterns = [p for p in map(parse_line, ["*.log", "!keep.log", "keep.log.*"]) if p]
    rules = IgnoreFile("/r", patterns)
    assert rules.verdict("/r/x.log", False) is True
    assert rules.verdict("/r/keep.log", False) is False  # re-included
    assert rules.verdict("/r/keep.log.1", False) is True
    assert rules.verdict("/elsewhere/x.log", False) is None


def test_gitignore_and_memframeignore_with_negation_and_nested_files(tmp_path):
    files = {
        "README.md": AWS,
        "app.log": AWS,
        "keep.log": AWS,  # re-included by the negation
        "build/out.txt": AWS,
        "top.txt": AWS,  # anchored: only the top-level one is ignored
        "sub/top.txt": AWS,
        "sub/notes.md": AWS,
        "sub/fixtures/key.txt": AWS,  # ignored by sub/.memframeignore
        "sub/fixtures/important.txt": AWS,  # but fixtures/ is a directory: cannot re-include
        "sub/local.tmp": AWS,  # ignored by sub/.gitignore
        "sub/deeper/x.tmp": AWS,
        "sub/deeper/y.tmp": AWS,  # re-included by sub/deeper/.memframeignore
        "other/x.tmp": AWS,  # sub/.gitignore does not apply outside sub/
        ".git/config": AWS,  # never scanned
        "data.bin": f"\0binary {AWS}",  # binary: skipped
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (tmp_path / ".gitignore").write_text("# build output\n*.log\n!keep.log\nbuild/\n/top.txt\n")
    (tmp_path / "sub" / ".memframeignore").write_text("fixtures/\n!fixtures/important.txt\n")
    (tmp_path / "sub" / ".gitignore").write_text("*.tmp\n")
    (tmp_path / "sub" / "deeper" / ".memframeignore").write_text("!y.tmp\n")

    hits = runner_hits(tmp_path, cwd=tmp_path)
    assert sorted({h.path for h in hits}) == [
        "README.md",
        "keep.log",
        "other/x.tmp",
        "sub/deeper/y.tmp",
        "sub/notes.md",
        "sub/top.txt",
    ]
    runner = ScanRunner(SecretScanner(), cwd=str(tmp_path))
    runner.scan_paths([str(tmp_path)])
    # app.log, build/, top.txt, sub/fixtures/, sub/local.tmp, sub/deeper/x.tmp
    assert (runner.stats.ignored, runner.stats.binary) == (6, 1)
    # a named file that an ignore file lists is skipped too (pre-commit passes staged files)
    result = scan("app.log", "sub/fixtures/key.txt", "README.md", cwd=tmp_path)
    assert result.returncode == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["README.md"]
    # --no-ignore scans everything but .git and binary files
    everything = runner_hits(tmp_path, cwd=tmp_path, use_ignore=False)
    assert len({h.path for h in everything}) == len(files) - 2


def test_a_scan_root_without_git_uses_the_working_directory_ignore_files(tmp_path):
    (tmp_path / ".memframeignore").write_text("vendor/\n")
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "lib.txt").write_text(AWS)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.txt").write_text(AWS)
    assert [
        h.path for h in runner_hits(tmp_path / "src", tmp_path / "vendor" / "lib.txt", cwd=tmp_path)
    ] == ["src/main.txt"]


# -- JSONL transcripts -----------------------------------------------------------------------------


def test_jsonl_strings_are_decoded_and_located_by_record_line_and_json_path(tmp_path):
    split_token = GITHUB[:12] + '"' + GITHUB[12:]  # a quote inside: not a token once decoded
    escaped_token = "\\u0067" + GITHUB[1:]  # an escape the decoded string joins
    records = [
        json.dumps({"type": "user", "message": {"role": "user", "content": "hello"}}),
        "",
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {"type": "text", "text": "let me look"},
                        {"type": "text", "text": "ok"},
                        {"type": "tool_use", "input": {"command": f"cat id_rsa\n{PEM}\n"}},
                    ]
                },
            }
        ),
        '{"note": "' + escaped_token + '", "odd key": ["x", "' + AWS + '"]}',
        json.dumps({"text": split_token}),
        "not json at all " + GITHUB_2,
    ]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join(records) + "\n", encoding="utf-8")
    raw = transcript.read_text()
    assert "\\n" in raw and "-----BEGIN RSA PRIVATE KEY-----\n" not in raw  # escaped in the file
    assert GITHUB not in raw  # only the decoded string holds the token

    hits = runner_hits(transcript, cwd=tmp_path)
    found = {(h.line, h.json_path, h.rule_id, h.secret) for h in hits}
    assert found == {
        (3, "message.content[2].input.command", "private-key", PEM),
        (4, "note", "github-pat", GITHUB),
        (4, '["odd key"][1]', "aws-access-token", AWS),
        (6, None, "github-pat", GITHUB_2),
    }
    result = scan("session.jsonl", cwd=tmp_path)
    assert result.returncode == 1
    assert "session.jsonl:3: private-key" in result.stdout
    assert "at message.content[2].input.command" in result.stdout
    assert "session.jsonl:6:17: github-pat" in result.stdout


def test_jsonl_lines_longer_than_the_record_limit_are_scanned_as_text(tmp_path):
    long_line = "x " * 3000 + AWS + " y"
    path = tmp_path / "t.jsonl"
    path.write_text(f'{{"a": "{GITHUB}"}}\n{long_line}\n', encoding="utf-8")
    with path.open("rb") as handle:
        lines = list(iter_lines(handle, max_bytes=1000, chunk_size=64))
    assert [(line.number, line.data is None) for line in lines] == [(1, False), (2, True)]
    scanner = JsonlScanner(SecretScanner(), known_rules=(), max_record_bytes=1000)
    with path.open("rb") as handle:
        result = scanner.scan(handle, path="t.jsonl", uri="t.jsonl")
    assert {(h.line, h.secret, h.column) for h in result.hits} == {
        (1, GITHUB, None),
        (2, AWS, long_line.index(AWS) + 1),
    }


def test_json_path_formats():
    value = {"a": [{"b.c": "x"}, "y"], "z": "w"}
    assert [json_path(value, i) for i in range(3)] == ['a[0]["b.c"]', "a[1]", "z"]
    assert json_path("plain", 0) == "$"


# -- team database ---------------------------------------------------------------------------------


def put_team_entries(storage) -> None:
    """Two repositories, three entries, two secrets; closes ``storage``."""
    storage.put(
        "acme/api", {"team/deploy.md": f"# Deploy\n\nkey: {AWS}\n"}, if_match=None, max_entries=100
    )
    storage.put(
        "acme/web",
        {"team/clean.md": "nothing here", "team/gh.md": GITHUB},
        if_match=None,
        max_entries=100,
    )
    storage.close()


def check_team_report(code: int, report: dict) -> None:
    """The JSON report of a scan of ``put_team_entries``' database."""
    assert code == 1
    locations = {(f["path"], f["line"], f["rule_id"]) for f in report["findings"]}
    assert locations == {
        ("acme/api:team/deploy.md", 3, "aws-access-token"),
        ("acme/web:team/gh.md", 1, "github-pat"),
    }
    assert report["summary"]["team_entries"] == 3


def test_team_database_entries_are_scanned(tmp_path):
    db = tmp_path / "server" / "team.db"
    put_team_entries(SQLiteStorage(db))

    check_team_report(*scan_json("--team-db", str(db), cwd=tmp_path))
    text = scan("sqlite:///server/team.db", cwd=tmp_path)
    assert text.returncode == 1
    assert "acme/api:team/deploy.md:3:6: aws-access-token" in text.stdout
    # databases are opened read-only: nothing was created or changed
    assert sorted(p.name for p in db.parent.iterdir()) == ["team.db"]


def test_team_database_errors_are_usage_errors(tmp_path):
    missing = scan("--team-db", "nope.db", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.db" in missing.stderr
    assert not (tmp_path / "nope.db").exists()
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_text("hello")
    bad = scan("--team-db", "notes.db", cwd=tmp_path)
    assert bad.returncode == 2 and "notes.db" in bad.stderr


@pytest.fixture
def postgres_team_db() -> Iterator[str]:
    """A fresh PostgreSQL database holding the same entries as the SQLite test above."""
    for url in fresh_postgres_database():
        put_team_entries(PostgresStorage(url))
        yield url


def test_a_postgresql_team_database_is_scanned(tmp_path, postgres_team_db):
    check_team_report(*scan_json(postgres_team_db, cwd=tmp_path))
    redacted = scan("--team-db", postgres_team_db, "--redact", "out", cwd=tmp_path)
    assert redacted.returncode == 1, redacted.stderr
    (copy,) = (tmp_path / "out" / "team-db").rglob("deploy.md")
    assert copy.read_text() == f"# Deploy\n\nkey: {REDACTED}\n"
    assert copy.parent.parent.parent.name.startswith("postgresql-")


def test_postgresql_errors_are_usage_errors_without_the_password(tmp_path, postgres_team_db):
    parts = urlsplit(postgres_team_db)
    unreachable = f"postgresql://memframe:s3cret-pw@127.0.0.1:1/{parts.path.strip('/')}"
    result = scan(unreachable, cwd=tmp_path)
    assert result.returncode == 2 and "cannot connect to PostgreSQL at 127.0.0.1:1" in result.stderr
    assert "s3cret-pw" not in result.stderr + result.stdout
    import psycopg

    with psycopg.connect(postgres_team_db, autocommit=True) as conn:
        conn.execute("DROP TABLE entries")
    empty = scan(postgres_team_db, cwd=tmp_path)
    assert empty.returncode == 2 and "no 'entries' table" in empty.stderr


# -- formats ---------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "deploy.md").write_text(
        f"# Deploy\n\nThe CI key is {AWS}, rotate it.\n", encoding="utf-8"
    )
    (tmp_path / "notes" / "clean.md").write_text("nothing to see\n")
    (tmp_path / "id_rsa").write_text(f"{PEM}\n")
    return tmp_path


def test_sarif_output_validates_against_the_schema(project):
    result = scan("--format", "sarif", ".", cwd=project)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.validate(document, schema, format_checker=jsonschema.FormatChecker())
    assert document["version"] == "2.1.0"
    assert document["$schema"].startswith("https://")
    driver = document["runs"][0]["tool"]["driver"]
    assert driver["name"] == "memframe" and driver["informationUri"].startswith("https://")
    rules = {rule["id"]: rule for rule in driver["rules"]}
    assert rules["aws-access-token"]["shortDescription"]["text"] == "AWS access key ID"
    results = document["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results}
    aws = by_rule["aws-access-token"]
    location = aws["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "notes/deploy.md"
    start = len("The CI key is ") + 1
    assert location["region"] == {
        "startLine": 3,
        "startColumn": start,
        "endLine": 3,
        "endColumn": start + len(AWS),
    }
    assert aws["level"] == "error" and aws["partialFingerprints"]
    assert driver["rules"][aws["ruleIndex"]]["id"] == "aws-access-token"
    pem = by_rule["private-key"]["locations"][0]["physicalLocation"]["region"]
    assert (pem["startLine"], pem["endLine"]) == (1, 4)
    assert AWS not in result.stdout and PEM.splitlines()[1] not in result.stdout


def test_json_and_csv_outputs_parse_and_never_hold_a_secret(project):
    code, report = scan_json(".", cwd=project)
    assert code == 1
    aws = next(f for f in report["findings"] if f["rule_id"] == "aws-access-token")
    assert aws["path"] == "notes/deploy.md" and aws["line"] == 3
    assert aws["preview"] == "AKIA…" == masked(AWS)
    assert len(aws["fingerprint"]) == 64
    assert report["summary"]["findings"] == 2 and report["summary"]["files"] == 3

    result = scan("--format", "csv", ".", cwd=project)
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {(r["path"], r["line"], r["rule_id"]) for r in rows} == {
        ("id_rsa", "1", "private-key"),
        ("notes/deploy.md", "3", "aws-access-token"),
    }
    text = scan(".", cwd=project)
    assert text.stdout.splitlines() == [
        "id_rsa:1:1: private-key (Private key (PEM block)): ----…",
        f"notes/deploy.md:3:{len('The CI key is ') + 1}: aws-access-token (AWS access key ID): "
        "AKIA…",
    ]
    for output in (json.dumps(report), result.stdout, text.stdout, text.stderr):
        assert AWS not in output and "MIIEowIBAAKCAQEA" not in output


def test_output_file(project):
    result = scan("--format", "json", "--output", "report.json", "notes", cwd=project)
    assert result.returncode == 1 and result.stdout == ""
    report = json.loads((project / "report.json").read_text())
    assert [f["rule_id"] for f in report["findings"]] == ["aws-access-token"]


# -- redaction -------------------------------------------------------------------------------------


def test_redact_writes_redacted_copies_and_leaves_originals(project):
    transcript = project / "logs" / "s.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(
        json.dumps({"message": {"content": f"key {AWS} and more"}}) + "\nnot json " + GITHUB + "\n"
    )
    originals = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    result = scan("--redact", "out", ".", cwd=project)
    assert result.returncode == 1, result.stderr
    assert {p: p.read_bytes() for p in originals} == originals  # untouched
    out = project / "out"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "id_rsa",
        "logs/s.jsonl",
        "notes/deploy.md",
    ]  # files without findings get no copy
    deploy = (out / "notes" / "deploy.md").read_text()
    assert deploy == f"# Deploy\n\nThe CI key is {REDACTED}, rotate it.\n"
    assert (out / "id_rsa").read_text() == f"{REDACTED}\n"
    lines = (out / "logs" / "s.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"message": {"content": f"key {REDACTED} and more"}}
    assert lines[1] == f"not json {REDACTED}"
    # the copies hold no secret, and a scan that writes into a scanned tree skips the copies
    assert scan("out", cwd=project).returncode == 0
    assert scan_json(".", cwd=project)[1]["summary"]["files"] == len(originals) + 3
    assert scan_json("--redact", "out", ".", cwd=project)[1]["summary"]["files"] == len(originals)


def test_redact_never_overwrites_an_original(project):
    before = (project / "notes" / "deploy.md").read_bytes()
    result = scan("--redact", ".", "notes", cwd=project)
    assert result.returncode == 2 and "would overwrite" in result.stderr
    assert (project / "notes" / "deploy.md").read_bytes() == before


def test_redacted_team_entries(tmp_path):
    storage = SQLiteStorage(tmp_path / "team.db")
    storage.put("acme/api", {"team/deploy.md": f"key: {AWS}\n"}, if_match=None, max_entries=9)
    storage.close()
    result = scan("--team-db", "team.db", "--redact", "out", cwd=tmp_path)
    assert result.returncode == 1
    copy = tmp_path / "out" / "team-db" / "team.db" / "acme%2Fapi" / "team" / "deploy.md"
    assert copy.read_text() == f"key: {REDACTED}\n"


def test_redacted_copy_of_a_huge_file_is_streamed(tmp_path):
    big = tmp_path / "big.txt"
    filler = ("lorem ipsum dolor sit amet " * 3 + "\n").encode()
    with big.open("wb") as handle:
        handle.write(filler * 20_000 + f"one {AWS}\n".encode() + filler * 20_000)
    runner = ScanRunner(
        SecretScanner(), cwd=str(tmp_path), big_file=1 << 20, redact_dir=tmp_path / "out"
    )
    runner.scan_paths([str(big)])
    assert [(h.line, h.secret) for h in runner.all_hits()] == [(20_001, AWS)]
    copy = (tmp_path / "out" / "big.txt").read_bytes()
    assert copy == filler * 20_000 + f"one {REDACTED}\n".encode() + filler * 20_000


# -- baseline --------------------------------------------------------------------------------------


def test_baseline_hides_old_findings_only(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text(f"first line\nold key {AWS}\n")
    written = scan("--write-baseline", "baseline.json", "notes.md", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    stored = json.loads((tmp_path / "baseline.json").read_text())
    assert stored["memframe_baseline"] == 1 and len(stored["findings"]) == 1
    assert AWS not in (tmp_path / "baseline.json").read_text()

    assert scan("--baseline", "baseline.json", "notes.md", cwd=tmp_path).returncode == 0
    # the old secret moved to another line: still baselined
    notes.write_text(f"new heading\n\n\nmoved: {AWS}\n")
    moved = scan("--baseline", "baseline.json", "notes.md", cwd=tmp_path)
    assert moved.returncode == 0, moved.stdout
    assert "1 baselined" in moved.stderr
    # a new secret is reported, the old one stays hidden
    notes.write_text(f"moved: {AWS}\nnew: {AWS_2}\n")
    code, report = scan_json("--baseline", "baseline.json", "notes.md", cwd=tmp_path)
    assert code == 1
    assert [(f["line"], f["preview"]) for f in report["findings"]] == [(2, masked(AWS_2))]
    # the same secret in another file is another finding
    (tmp_path / "copy.md").write_text(AWS)
    result = scan("--baseline", "baseline.json", "notes.md", "copy.md", cwd=tmp_path)
    assert result.returncode == 1
    assert sorted(line.split(":")[0] for line in result.stdout.splitlines()) == [
        "copy.md",
        "notes.md",
    ]


def test_bad_baseline_is_a_usage_error(tmp_path):
    (tmp_path / "a.md").write_text("clean")
    (tmp_path / "b.json").write_text("[1, 2]")
    for name in ("missing.json", "b.json"):
        result = scan("--baseline", name, "a.md", cwd=tmp_path)
        assert result.returncode == 2 and name in result.stderr


def test_fingerprint_ignores_the_line():
    a = Hit("r", "l", "p", "p", 1, 1, 1, 5, "secret")
    b = Hit("r", "l", "p", "p", 9, 3, 9, 7, "secret")
    assert baseline_mod.fingerprint(a) == baseline_mod.fingerprint(b)
    assert baseline_mod.fingerprint(a) != baseline_mod.fingerprint(
        Hit("r", "l", "p", "p", 1, 1, 1, 5, "secret2")
    )


# -- inline allow ----------------------------------------------------------------------------------


def test_inline_allow_all_rules_or_one_rule(tmp_path):
    (tmp_path / "a.py").write_text(
        textwrap.dedent(
            f"""\
            KEY = "{AWS}"  # memframe:allow
            BOTH = "{AWS_2} {GITHUB}"  # memframe:allow github-pat
            TYPO = "{GITHUB_2}"  # memframe:allow github-pta
            TOKEN = "{GITHUB}"
            """
        )
    )
    (tmp_path / "b.md").write_text(f"example {AWS} <!-- memframe:allow -->\n")
    hits = runner_hits(tmp_path, cwd=tmp_path)
    assert sorted((h.path, h.line, h.rule_id) for h in hits) == [
        ("a.py", 2, "aws-access-token"),
        ("a.py", 3, "github-pat"),  # a misspelt rule id allows nothing
        ("a.py", 4, "github-pat"),
    ]
    result = scan(".", cwd=tmp_path)
    assert result.returncode == 1 and "3 allowed inline" in result.stderr


def test_allow_marker_parsing():
    known = {"github-pat", "aws-access-token"}
    assert allows("x # memframe:allow", "github-pat", known)
    assert allows("x # memframe:allow: test fixture", "github-pat", known)
    assert allows("x # memframe:allow fake key for the docs", "github-pat", known)
    assert allows("x # memframe:allow aws-access-token, github-pat", "github-pat", known)
    assert not allows("x # memframe:allow aws-access-token", "github-pat", known)
    assert not allows("x # memframe:allowed", "github-pat", known)
    assert not allows("x # memframe:allow gihub-pat", "github-pat", known)
    assert not allows("x # nothing", "github-pat", known)


def test_extra_rules_file(tmp_path):
    rule = (
        "[[rules]]\n"
        'id = "acme-token"\n'
        'description = "ACME internal token"\n'
        r"regex = '''\b(acme_[a-z0-9]{24})\b'''"
        '\nkeywords = ["acme_"]\n'
    )
    (tmp_path / "rules.toml").write_text(rule)
    (tmp_path / "a.md").write_text("token: acme_q7x2m9v4b8n1k6c3h5s0d2f7\n")
    result = scan("--rules", "rules.toml", "a.md", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("a.md:1:8: acme-token (ACME internal token): acme…")
    assert scan("a.md", cwd=tmp_path).returncode == 0
    bad = scan("--rules", "missing.toml", "a.md", cwd=tmp_path)
    assert bad.returncode == 2 and "missing.toml" in bad.stderr


def test_the_rules_file_setting_applies_unless_no_config(tmp_path):
    work, config = tmp_path / "work", tmp_path / "config"
    work.mkdir()
    config.mkdir()
    (config / "rules.toml").write_text(
        "[[rules]]\n"
        'id = "acme-token"\n'
        'description = "ACME internal token"\n'
        r"regex = '''\b(acme_[a-z0-9]{24})\b'''"
        '\nkeywords = ["acme_"]\n'
    )
    (work / "a.md").write_text("token: acme_q7x2m9v4b8n1k6c3h5s0d2f7\n")
    assert scan("a.md", cwd=work, config=config).returncode == 0  # no setting yet
    settings = config / "settings.json"
    settings.write_text(json.dumps({"rules_file": str(config / "rules.toml")}))
    found = scan("a.md", cwd=work, config=config)
    assert found.returncode == 1 and "acme-token" in found.stdout  # what team sync would block
    assert scan("--no-config", "a.md", cwd=work, config=config).returncode == 0
    settings.write_text(json.dumps({"rules_file": str(config / "missing.toml")}))
    broken = scan("a.md", cwd=work, config=config)
    assert broken.returncode == 2 and "missing.toml" in broken.stderr
    assert "Traceback" not in broken.stderr


# -- exit codes, progress, pre-commit --------------------------------------------------------------


def test_exit_codes(tmp_path):
    (tmp_path / "clean.md").write_text("nothing\n")
    (tmp_path / "dirty.md").write_text(GITHUB)
    clean = scan("clean.md", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, "")
    assert scan("dirty.md", cwd=tmp_path).returncode == 1
    missing = scan("clean.md", "no/such/file.md", cwd=tmp_path)
    assert missing.returncode == 2
    assert "no/such/file.md: no such file or directory" in missing.stderr
    assert "Traceback" not in missing.stderr
    nothing = scan(cwd=tmp_path)
    assert nothing.returncode == 2 and "nothing to scan" in nothing.stderr
    assert scan("--format", "xml", "clean.md", cwd=tmp_path).returncode == 2
    assert scan("--threads", "0", "clean.md", cwd=tmp_path).returncode == 2


def test_no_progress_when_stderr_is_not_a_terminal_and_quiet(tmp_path):
    (tmp_path / "a.md").write_text(GITHUB)
    result = scan(".", cwd=tmp_path)
    assert "\r" not in result.stderr and "memframe scan: 1 finding" in result.stderr
    quiet = scan("--quiet", ".", cwd=tmp_path)
    assert quiet.stderr == "" and quiet.returncode == 1


def test_progress_line_shows_files_bytes_and_rate():
    stream = io.StringIO()
    progress = Progress(enabled=True, stream=stream, total_bytes=2_000_000)
    progress.add(files=3, nbytes=1_000_000)
    progress.close()
    drawn = stream.getvalue()
    assert "3 files" in drawn and "1.0 MB" in drawn and "MB/s" in drawn and "50%" in drawn
    assert drawn.endswith("\r\x1b[K")


def test_pre_commit_hook_definition():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "memframe-scan"]
    assert hook["entry"] == "memframe scan"
    assert hook["language"] == "python" and hook["types"] == ["text"]
    program, command = hook["entry"].split()
    assert program == "memframe" and command in COMMANDS


def test_pre_commit_style_invocation_scans_the_named_files(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".memframeignore").write_text("tests/fixtures/\n")
    (tmp_path / "tests" / "fixtures").mkdir(parents=True)
    (tmp_path / "tests" / "fixtures" / "fake.txt").write_text(AWS)
    (tmp_path / "src.py").write_text(f'TOKEN = "{GITHUB}"\n')
    result = scan("src.py", "tests/fixtures/fake.txt", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("src.py:1:10: github-pat")
    assert "fake.txt" not in result.stdout
    # run from a subdirectory: the ignore files of the repository root still apply
    inside = scan("../src.py", "fixtures/fake.txt", cwd=tmp_path / "tests")
    assert inside.returncode == 1
    assert "github-pat" in inside.stdout and "fake.txt" not in inside.stdout
    alone = scan("fixtures/fake.txt", cwd=tmp_path / "tests")
    assert alone.returncode == 0 and alone.stdout == ""


# -- huge files ------------------------------------------------------------------------------------


def test_windows_find_exactly_what_a_whole_scan_finds(tmp_path):
    """Small windows over text with secrets everywhere, long lines and multi-byte characters."""
    scanner = SecretScanner()
    pieces = []
    for i in range(1200):
        pieces.append(("é記 " * (i % 7)) + f"line {i} key {AWS if i % 3 else GITHUB} end\n")
        if i % 50 == 0:
            pieces.append("z" * 70_000 + " " + GITHUB_2 + " " + "y" * 90_000 + "\n")
        if i % 77 == 0:
            pieces.append(f"cert:\n{PEM}\n")
    text = "".join(pieces)
    data = text.encode()
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    whole = text_hits(text, scanner.find(data), path="t", uri="t", known_rules=())
    with path.open("rb") as handle:
        windowed = scan_range(
            scanner,
            handle,
            0,
            len(data),
            path="t",
            uri="t",
            known_rules=(),
            window=256 << 10,
            overlap=32 << 10,
        )
    assert len(data) > 10 * (256 << 10)
    assert windowed.hits == whole
    assert len(whole) > 400


def _peak_rss_kib(command: list[str], cwd: Path) -> tuple[int, subprocess.CompletedProcess[str]]:
    """Run ``command`` from a fresh interpreter and return its child's peak RSS (KiB)."""
    probe = textwrap.dedent(
        """
        import json, resource, subprocess, sys
        result = subprocess.run(sys.argv[1:], capture_output=True, text=True)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        print(json.dumps([peak, result.returncode, result.stdout, result.stderr]))
        """
    )
    env = memframe_env()
    out = subprocess.run(
        [sys.executable, "-c", probe, *command],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
        check=True,
    )
    peak, code, stdout, stderr = json.loads(out.stdout)
    return peak, subprocess.CompletedProcess(command, code, stdout, stderr)


def test_a_200_mb_file_is_scanned_with_bounded_memory(tmp_path):
    size = 200 * 1024 * 1024
    filler = b"".join(
        f"{i:05d} lorem ipsum dolor sit amet consectetur\n".encode() for i in range(20_000)
    )
    planted = {}  # line -> secret
    big = tmp_path / "huge.log"
    with big.open("wb") as handle:
        written = lines = 0
        step = 0
        while written < size:
            handle.write(filler)
            written += len(filler)
            lines += filler.count(b"\n")
            secret = (AWS, GITHUB, AWS_2)[step % 3]
            handle.write(f"k {secret}\n".encode())
            written += len(secret) + 3
            lines += 1
            planted[lines] = secret
            step += 1
    assert big.stat().st_size >= size
    peak_kib, result = _peak_rss_kib(
        [sys.executable, "-m", "memframe", "scan", "--format", "json", "huge.log"], tmp_path
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert {(f["line"], f["preview"]) for f in report["findings"]} == {
        (line, masked(secret)) for line, secret in planted.items()
    }
    assert peak_kib * 1024 < 150 * 1024 * 1024, f"peak RSS {peak_kib} KiB"
