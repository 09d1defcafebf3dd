"""The validated bundled rule set kept in the scan cache (memframe.rules.loading)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memframe.rules import DEFAULT_RULES_PATH, load_rules, loading, parse_rules


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh scan cache; the process's bundled set is put back afterwards."""
    directory = tmp_path / "scan-cache"
    monkeypatch.setenv("MEMFRAME_SCAN_CACHE", str(directory))
    monkeypatch.setattr(loading, "_bundled", None)
    return directory


def _parsed() -> str:
    text = DEFAULT_RULES_PATH.read_text("utf-8")
    return parse_rules(text, source=str(DEFAULT_RULES_PATH), check_hyperscan=False).fingerprint()


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("rules-*.json"))


def _reload() -> str:
    loading._bundled = None
    return load_rules().fingerprint()


def test_first_load_stores_the_validated_set_privately(cache: Path) -> None:
    assert load_rules().fingerprint() == _parsed()
    [entry] = _entries(cache)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    doc = json.loads(entry.read_text("utf-8"))
    assert doc["key"].startswith(entry.stem.removeprefix("rules-"))
    assert len(doc["rules"]["rules"]) == len(load_rules())


def test_a_later_load_reads_the_entry(cache: Path) -> None:
    load_rules()
    [entry] = _entries(cache)
    doc = json.loads(entry.read_text("utf-8"))
    doc["rules"]["rules"][0]["label"] = "read from the cache"
    entry.write_text(json.dumps(doc), "utf-8")
    loading._bundled = None
    assert load_rules().rules[0].label == "read from the cache"
    assert load_rules().rules[0].source == str(DEFAULT_RULES_PATH)


@pytest.mark.parametrize(
    "damage",
    [
        lambda doc: "{not json",
        lambda doc: json.dumps({**doc, "key": "0" * 64}),
        lambda doc: json.dumps({**doc, "rules": {**doc["rules"], "schema": 99}}),
        lambda doc: json.dumps({"key": doc["key"]}),
        lambda doc: json.dumps(
            {
                **doc,
                "rules": {**doc["rules"], "rules": [{**doc["rules"]["rules"][0], "entropy": "x"}]},
            }
        ),
        lambda doc: json.dumps(
            {
                **doc,
                "rules": {**doc["rules"], "rules": [{**doc["rules"]["rules"][0], "keywords": [1]}]},
            }
        ),
        lambda doc: json.dumps(
            {**doc, "rules": {**doc["rules"], "rules": doc["rules"]["rules"] * 2}}  # duplicate ids
        ),
    ],
    ids=[
        "not-json",
        "other-key",
        "other-schema",
        "no-rules",
        "bad-entropy",
        "bad-keywords",
        "dupes",
    ],
)
def test_an_unusable_entry_is_ignored_and_written_again(cache: Path, damage: object) -> None:
    load_rules()
    [entry] = _entries(cache)
    good = entry.read_text("utf-8")
    entry.write_text(damage(json.loads(good)), "utf-8")  # type: ignore[operator]
    assert _reload() == _parsed()
    assert entry.read_text("utf-8") == good


def test_the_key_follows_the_rule_file_and_the_package_sources() -> None:
    raw = DEFAULT_RULES_PATH.read_bytes()
    assert loading._cache_key(raw) == loading._cache_key(raw)
    assert loading._cache_key(raw) != loading._cache_key(raw + b"\n# edited\n")
    sources = sorted(p.name for p in Path(loading.__file__).parent.glob("*.py"))
    assert {"loading.py", "lint.py", "parsing.py", "model.py"} <= set(sources)


def test_entries_of_other_keys_are_removed(cache: Path) -> None:
    cache.mkdir(mode=0o700)
    stale = cache / "rules-0000000000000000000000000000000000000000.json"
    stale.write_text("{}", "utf-8")
    other = cache / "unrelated.hsdb"
    other.write_bytes(b"kept")
    load_rules()
    assert [p.name for p in _entries(cache)] != [stale.name]
    assert not stale.exists()
    assert other.read_bytes() == b"kept"


def test_cache_off_parses_every_time(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFRAME_SCAN_CACHE", "off")
    assert _reload() == _parsed()
    assert not cache.exists()


def test_a_cache_path_that_is_a_file_costs_only_the_parse(cache: Path) -> None:
    cache.write_text("not a directory", "utf-8")
    assert _reload() == _parsed()
    assert cache.read_text("utf-8") == "not a directory"


def test_a_fresh_process_loads_the_same_set_from_the_entry(cache: Path) -> None:
    load_rules()
    # the entry spares the process the TOML parser (and the format parsers) altogether
    code = (
        "import sys; from memframe.rules import load_rules; rules = load_rules();"
        "print(rules.fingerprint(), 'tomllib' in sys.modules,"
        " 'memframe.rules.parsing' in sys.modules)"
    )
    env = {**os.environ, "MEMFRAME_SCAN_CACHE": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == [_parsed(), "False", "False"]
    assert len(_entries(cache)) == 1


def test_an_entry_others_can_write_or_a_symlink_is_not_trusted(cache: Path) -> None:
    load_rules()
    [entry] = _entries(cache)
    doc = json.loads(entry.read_text("utf-8"))
    doc["rules"]["rules"] = doc["rules"]["rules"][:1]  # what an attacker would hand over
    entry.write_text(json.dumps(doc), "utf-8")
    entry.chmod(0o622)
    assert _reload() == _parsed()  # ignored (and written again, private)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    planted = cache.parent / "planted.json"
    planted.write_text(json.dumps(doc), "utf-8")
    planted.chmod(0o600)
    entry.unlink()
    entry.symlink_to(planted)
    assert _reload() == _parsed()
    assert not entry.is_symlink()
