"""The Rust extension's hygiene (issue 17, item 6): scanners free their database and scratch
spaces when dropped, the core's errors reach Python as ValueError with their message, and a
``threads`` count out of range is a ValueError, never a PanicException."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memframe.rules import load_rules
from memframe.scanner import SecretScanner
from tests.native import NATIVE

ROOT = Path(__file__).resolve().parents[2]
MAX_THREADS = 1024
THREADS_MESSAGE = re.escape(f"threads must be between 1 and {MAX_THREADS} (or None for all cores)")
AWS = "AKIAQ7VJ2ZWXK5MRT3LB"


pytestmark = pytest.mark.skipif(NATIVE is None, reason="the native extension is not built")


@pytest.fixture(scope="module")
def native() -> ModuleType:
    assert NATIVE is not None
    return NATIVE


@pytest.fixture(scope="module")
def rules_json() -> str:
    return load_rules().to_json()


def _rss() -> int:
    """Resident set size of this process, in bytes (/proc/self/statm: pages)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc (Linux)")
def test_dropped_scanners_free_their_database_and_scratch(native, rules_json, tmp_path):
    """200 scanners of the default rule set, each scanning on two threads (a scratch space per
    thread) and then dropped: the process does not grow. Leaking only the scratch spaces grows
    it by ~16 MiB, leaking the databases (1.2 MiB each) by far more."""
    texts = [f"token = abcd1234 {AWS} " * 20] * 8

    def build_scan_drop() -> None:
        scanner = native.Scanner(rules_json, str(tmp_path))  # loaded from the cache after one
        assert scanner.find_many(texts, 2)[0]
        assert scanner.scan_many(texts, 1)[0]
        assert scanner.find(texts[0])

    for _ in range(20):  # warm up: allocator arenas, pools, the cache file
        build_scan_drop()
    before = _rss()
    for _ in range(200):
        build_scan_drop()
    grown = _rss() - before
    assert grown < 4 << 20, f"RSS grew {grown / 2**20:.1f} MiB over 200 scanners"


def _batch_calls(native: ModuleType, rules_json: str) -> dict[str, Callable[[Any], object]]:
    scanner = native.Scanner(rules_json)
    texts = [f"key {AWS}", "nothing"]
    return {
        "sha256_many": lambda t: native.sha256_many(texts, t),
        "xxh3_64_many": lambda t: native.xxh3_64_many(texts, t),
        "xxh3_128_many": lambda t: native.xxh3_128_many(texts, t),
        "count_tokens_many": lambda t: native.count_tokens_many(texts, t),
        "Scanner.find_many": lambda t: scanner.find_many(texts, t),
        "Scanner.scan_many": lambda t: scanner.scan_many(texts, t),
        "Scanner.database_pass_many": lambda t: scanner.database_pass_many(texts, t),
        "Scanner.find_files": lambda t: scanner.find_files([__file__], t),
    }


@pytest.fixture(scope="module")
def batch_calls(native, rules_json) -> dict[str, Callable[[Any], object]]:
    return _batch_calls(native, rules_json)


BATCHES = [
    "sha256_many",
    "xxh3_64_many",
    "xxh3_128_many",
    "count_tokens_many",
    "Scanner.find_many",
    "Scanner.scan_many",
    "Scanner.database_pass_many",
    "Scanner.find_files",
]


@pytest.mark.parametrize("threads", [0, -1, MAX_THREADS + 1, 10**6, 2**64, 2**200])
@pytest.mark.parametrize("name", BATCHES)
def test_threads_out_of_range_is_a_value_error(batch_calls, name, threads):
    # a PanicException derives from BaseException: pytest.raises(ValueError) would not catch it
    with pytest.raises(ValueError, match=THREADS_MESSAGE) as info:
        batch_calls[name](threads)
    assert str(info.value).endswith(f"got {threads}")


@pytest.mark.parametrize("name", BATCHES)
def test_valid_thread_counts_give_the_same_results(batch_calls, name):
    call = batch_calls[name]
    expected = call(None)
    assert call(1) == expected
    assert call(2) == expected
    assert call(True) == expected  # an int subclass, as before


@pytest.mark.parametrize("threads", [2.0, "2"])
def test_a_thread_count_that_is_no_int_stays_a_type_error(batch_calls, threads):
    with pytest.raises(TypeError):
        batch_calls["sha256_many"](threads)


def test_the_public_scanner_refuses_bad_thread_counts():
    scanner = SecretScanner(load_rules(), engine="native")
    with pytest.raises(ValueError, match=THREADS_MESSAGE):
        scanner.find_many([f"key {AWS}"], threads=0)
    with pytest.raises(ValueError, match=THREADS_MESSAGE):
        scanner.scan_many([f"key {AWS}"], threads=10**9)
    with pytest.raises(ValueError, match=THREADS_MESSAGE):
        scanner.find_files([__file__], threads=-3)


def _rule_set(rule: dict[str, Any] | None = None, allow: list[str] | None = None) -> str:
    rules = [] if rule is None else [{"keywords": [], **rule}]
    return json.dumps({"rules": rules, "allowlist": {"regexes": allow or []}})


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ("[", r"^invalid rule set JSON: "),
        ('{"rules": 3}', r"^invalid rule set JSON: "),
        (_rule_set({"id": "broken", "regex": "("}), r"^rule broken: regex parse error"),
        (_rule_set({"id": "nogroup", "regex": "abc"}), r"^rule nogroup: secret group 1 does not"),
        (
            _rule_set({"id": "kw", "regex": "(a)", "keywords": ["é"]}),
            r'^rule kw: keyword "é" is not ASCII$',
        ),
        (
            _rule_set({"id": "al", "regex": "(a)", "allowlist": {"regexes": ["["]}}),
            r'^al: allowlist regex "\[": ',
        ),
        (_rule_set(allow=["("]), r'^global: allowlist regex "\(": '),
    ],
)
def test_bad_rule_sets_are_value_errors_naming_the_fault(native, rules, message):
    with pytest.raises(ValueError, match=message):
        native.Scanner(rules)


def test_an_unreadable_file_reports_its_os_error(native, rules_json, tmp_path):
    missing = tmp_path / "missing.txt"
    ((found, error),) = native.Scanner(rules_json).find_files([str(missing)], 1)
    assert found == []
    assert error == "No such file or directory (os error 2)"


def test_dev_test_checks_rust_formatting():
    """`./dev test` runs `cargo fmt --check` beside clippy and the Rust tests."""
    script = (ROOT / "dev").read_text()
    body = script[script.index("run_tests() {") :]
    lines = [line.strip() for line in body[: body.index("\n}\n")].splitlines()]
    fmt = lines.index("cargo fmt --all --check")
    assert fmt < next(i for i, line in enumerate(lines) if line.startswith("cargo clippy "))
