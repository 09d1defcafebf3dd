"""The secret scanner's behaviour, on every engine (native, hyperscan, python)."""

from __future__ import annotations

import pytest

from memframe.rules import load_rules
from memframe.scanner import REDACTED, SecretScanner, redact_spans
from tests.native.vectors import negatives, positives

RULES = load_rules()
AWS = "AKIAQ7VJ2ZWXK5MRT3LB"
GITHUB = "ghp_" + "R8f2Kq9ZtX4mW7pB1nV6cJ3hL0sD5gY8aE2u"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.fixture
def scanner(engine) -> SecretScanner:
    return SecretScanner(RULES, engine=engine)


@pytest.mark.parametrize("vector", positives(), ids=lambda v: f"{v.rule_id}-{v.context}")
def test_every_positive_vector_is_found(scanner, vector):
    found = [f for f in scanner.find(vector.text) if f.rule_id == vector.rule_id]
    secrets = [vector.text[f.secret_start : f.secret_end] for f in found]
    assert vector.secret in secrets


@pytest.mark.parametrize("vector", negatives(), ids=lambda v: f"{v.rule_id}-{v.context}")
def test_no_negative_vector_produces_a_finding(scanner, vector):
    # only the rules the vector names (a generic rule on a malformed token's assignment) report it
    assert {f.rule_id for f in scanner.find(vector.text)} == set(vector.flagged_by)


def test_scan_reports_each_rule_once_in_rule_order(scanner):
    text = f"{GITHUB} then {AWS} and again {AWS}"
    matches = scanner.scan(text)
    ids = [m.rule_id for m in matches]
    assert ids == sorted(set(ids), key=RULES.ids().index)
    assert {"aws-access-token", "github-pat"} <= set(ids)


def test_find_orders_by_start_then_rule(scanner):
    text = f"first {AWS}\nsecond {GITHUB}\nthird {AWS}"
    found = scanner.find(text)
    starts = [(f.start, RULES.ids().index(f.rule_id)) for f in found]
    assert starts == sorted(starts)
    aws = [f for f in found if f.rule_id == "aws-access-token"]
    assert [f.line for f in aws] == [1, 3]
    assert all(text[f.secret_start : f.secret_end] == AWS for f in aws)


def test_offsets_are_characters_not_bytes(scanner):
    text = f"記憶メモ: {AWS}"
    (finding,) = [f for f in scanner.find(text) if f.rule_id == "aws-access-token"]
    assert text[finding.secret_start : finding.secret_end] == AWS


def test_a_private_key_is_found_across_lines(scanner):
    text = f"# notes\n\nThe deploy key:\n\n{PEM}\n\nrotate monthly\n"
    found = [f for f in scanner.find(text) if f.rule_id == "private-key"]
    assert len(found) == 1
    assert text[found[0].secret_start : found[0].secret_end].startswith("-----BEGIN RSA")
    assert found[0].line == 5


def test_redact_replaces_every_secret(scanner):
    text = f"key {AWS} and token {GITHUB}\n{PEM}\nend"
    redacted = scanner.redact(text)
    assert AWS not in redacted
    assert GITHUB not in redacted
    assert "PRIVATE KEY" not in redacted
    assert redacted.count(REDACTED) >= 3
    assert redacted.endswith("\nend")
    assert scanner.find(redacted) == []


def test_redact_merges_overlapping_and_touching_spans():
    assert redact_spans("abcdefgh", [(1, 4), (3, 6)]) == "a[REDACTED]gh"
    assert redact_spans("abcdefgh", [(1, 3), (3, 5)]) == "a[REDACTED]fgh"
    assert redact_spans("abcdefgh", []) == "abcdefgh"


def test_bytes_with_invalid_utf8_count_one_character_per_bad_byte(scanner):
    data = b"\xff\xfe\xe2\x82 " + AWS.encode()
    (finding,) = [f for f in scanner.find(data) if f.rule_id == "aws-access-token"]
    assert finding.secret_start == 5
    text = data.decode("utf-8", "surrogateescape")
    assert text[finding.secret_start : finding.secret_end] == AWS


def test_lone_surrogates_in_a_str_do_not_break_scanning(scanner):
    text = f"\ud800 broken {AWS}"
    (finding,) = [f for f in scanner.find(text) if f.rule_id == "aws-access-token"]
    assert text[finding.secret_start : finding.secret_end] == AWS
    assert AWS not in scanner.redact(text)


def test_wrong_input_types_are_type_errors(scanner):
    for bad in (None, 3, ["text"]):
        with pytest.raises(TypeError):
            scanner.find(bad)


def test_batch_forms_agree_with_single_calls(scanner):
    texts = [f"x {AWS}", "nothing here", f"{GITHUB}\n{PEM}", b"bytes " + AWS.encode()]
    assert scanner.find_many(texts, threads=2) == [scanner.find(t) for t in texts]
    assert scanner.scan_many(texts, threads=1) == [scanner.scan(t) for t in texts]


def test_find_files_reads_files_and_reports_errors(scanner, tmp_path):
    good = tmp_path / "notes.md"
    good.write_text(f"remember the key {AWS}\n", encoding="utf-8")
    empty = tmp_path / "empty.md"
    empty.write_bytes(b"")
    missing = tmp_path / "missing.md"
    results = scanner.find_files([good, empty, missing], threads=2)
    assert [r.path for r in results] == [str(good), str(empty), str(missing)]
    assert [f.rule_id for f in results[0].findings] == ["aws-access-token"]
    assert results[0].error is None
    assert results[1].findings == []
    assert results[2].error is not None
    assert "No such file" in results[2].error


def test_the_documentation_placeholder_is_allowed(scanner):
    assert scanner.find("aws_access_key_id = AKIAIOSFODNN7EXAMPLE") == []
