"""``memframe redact``: a stream, one file to stdout, files and directories in place."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from memframe.scanner import REDACTED, SecretScanner
from memframe.scanning.inplace import find_redactions, redact_file
from tests.integration.cli_runner import run_memframe_bytes
from tests.native.test_scanner import AWS, GITHUB, PEM
from tests.native.vectors import positives


def redact(*args: str, cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``memframe redact ARGS`` in ``cwd`` with its own (empty) user settings."""
    config = {"MEMFRAME_CONFIG_DIR": str(cwd.parent / f"{cwd.name}-config")}
    return run_memframe_bytes("redact", *args, stdin=stdin, cwd=cwd, extra_env=config)


def test_a_stream_is_redacted_and_every_other_byte_kept(tmp_path):
    data = (
        f"export AWS_ACCESS_KEY_ID={AWS}\n".encode()
        + b"caf\xc3\xa9 and a stray \xff byte\r\n"
        + f"{PEM}\n".encode()
    )
    result = redact(cwd=tmp_path, stdin=data)
    assert result.returncode == 0, result.stderr
    expected = (
        f"export AWS_ACCESS_KEY_ID={REDACTED}\n".encode()
        + b"caf\xc3\xa9 and a stray \xff byte\r\n"
        + f"{REDACTED}\n".encode()
    )
    assert result.stdout == expected
    assert b"2 secret(s) redacted" in result.stderr
    clean = redact("-", "-q", cwd=tmp_path, stdin=b"nothing to see\n")
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, b"nothing to see\n", b"")


def test_json_lines_stay_valid_json(tmp_path):
    lines = [
        {"type": "user", "message": {"content": f"my token is {GITHUB}, keep it"}},
        {"type": "assistant", "message": {"content": "ok"}},
        {"key": PEM},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    result = redact("--jsonl", cwd=tmp_path, stdin=data)
    assert result.returncode == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert out[0]["message"]["content"] == f"my token is {REDACTED}, keep it"
    assert out[1] == lines[1]
    assert out[2] == {"key": REDACTED}
    assert GITHUB.encode() not in result.stdout
    # a *.jsonl file is read as JSON lines without the flag; the file is left as it was
    (tmp_path / "t.jsonl").write_bytes(data)
    from_file = redact("t.jsonl", cwd=tmp_path)
    assert from_file.stdout == result.stdout
    assert (tmp_path / "t.jsonl").read_bytes() == data


def test_in_place_rewrites_only_files_with_secrets(tmp_path):
    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    (work / "ignored").mkdir()
    secret_file = work / "notes" / "deploy.md"
    secret_file.write_text(f"# Deploy\n\nThe key: {AWS}\n")
    secret_file.chmod(0o640)
    clean_file = work / "notes" / "clean.md"
    clean_file.write_text("nothing\n")
    os.utime(clean_file, (1_000_000, 1_000_000))
    (work / "ignored" / "x.md").write_text(f"{AWS}\n")
    (work / ".gitignore").write_text("ignored/\n")
    (work / "blob.bin").write_bytes(b"\x00\x01" + AWS.encode())
    transcript = work / "s.jsonl"
    transcript.write_text(json.dumps({"content": f"token {GITHUB}"}) + "\n")

    result = redact("--in-place", ".", cwd=work)
    assert result.returncode == 0, result.stderr
    assert b"2 secret(s) redacted in 2 of 4 file(s)" in result.stderr
    assert secret_file.read_text() == f"# Deploy\n\nThe key: {REDACTED}\n"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o640  # permissions kept
    assert clean_file.stat().st_mtime == 1_000_000  # not rewritten
    assert json.loads(transcript.read_text()) == {"content": f"token {REDACTED}"}
    assert (work / "ignored" / "x.md").read_text() == f"{AWS}\n"  # .gitignore honoured
    assert (work / "blob.bin").read_bytes() == b"\x00\x01" + AWS.encode()  # binary skipped
    assert not [p for p in work.rglob("*.tmp")]
    again = redact("--in-place", ".", cwd=work)
    assert b"0 secret(s) redacted in 0 of 4 file(s)" in again.stderr
    everything = redact("--in-place", "--no-ignore", "ignored", cwd=work)
    assert b"1 secret(s) redacted in 1 of 1 file(s)" in everything.stderr


def test_every_rules_positive_vector_is_gone_after_redaction(tmp_path, engine):
    scanner = SecretScanner(engine=engine)
    for index, vector in enumerate(positives()):
        path = tmp_path / f"{vector.rule_id}-{index}.txt"
        path.write_text(vector.text, encoding="utf-8")
        assert redact_file(scanner, path, jsonl=False, name=path.name) >= 1, vector.rule_id
        text = path.read_text(encoding="utf-8")
        assert vector.secret not in text and REDACTED in text, vector.rule_id
        assert scanner.find(text) == [], vector.rule_id


def test_redactions_are_found_as_the_scanner_finds_them(engine):
    scanner = SecretScanner(engine=engine)
    text = f"a {AWS} b {GITHUB} c\n".encode()
    found = find_redactions(scanner, io.BytesIO(text), len(text), jsonl=False)
    assert found.secrets == 2
    assert [(s, e) for s, e, _ in found.replacements] == [
        (text.index(AWS.encode()), text.index(AWS.encode()) + len(AWS)),
        (text.index(GITHUB.encode()), text.index(GITHUB.encode()) + len(GITHUB)),
    ]
    assert scanner.redact(text) == f"a {REDACTED} b {REDACTED} c\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("a.md", "b.md"), "use --in-place for several"),
        (("--in-place",), "--in-place needs files"),
        (("--in-place", "-"), "--in-place needs files"),
        (("missing.md",), "missing.md: no such file or directory"),
        ((".",), "a directory (use --in-place"),
        (("--rules", "nope.toml", "a.md"), "nope.toml"),
    ],
)
def test_bad_usage_is_a_clear_error_and_changes_nothing(tmp_path, args, message):
    (tmp_path / "a.md").write_text(f"{AWS}\n")
    (tmp_path / "b.md").write_text(f"{AWS}\n")
    result = redact(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert b"Traceback" not in result.stderr
    assert (tmp_path / "a.md").read_text() == f"{AWS}\n"
