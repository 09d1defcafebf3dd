"""The scanning engine as a user meets it: which library is linked, the on-disk database cache,
degradation made visible, rule files validated by the native engine, and a distributable wheel
that carries its engine."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from memframe import _backend
from memframe.errors import BackendError, EngineDegradedWarning
from memframe.rules import Rule, RuleError, RuleSet, load_rules, parse_rules
from memframe.scanner import SecretScanner, database_cache_dir
from tests.integration.cli_runner import memframe_env, run_memframe

ROOT = Path(__file__).resolve().parents[2]
# Valid for Rust regex and Python re, but too large for Hyperscan's compiler.
TOO_LARGE = r"\b(zzz(?:[a-z]{1,200}[0-9]{1,200}){60})"
AWS = "AKIAQ7VJ2ZWXK5MRT3LB"  # random-looking: a keyboard run would be a stand-in


def _native_built() -> bool:
    try:
        _backend.get_engine("native")
    except BackendError:
        return False
    return True


needs_native = pytest.mark.skipif(not _native_built(), reason="the native extension is not built")


def test_every_engine_names_its_library(engine: str) -> None:
    status = SecretScanner(load_rules(), engine=engine).status()
    assert status.engine == engine
    assert not status.degraded, status
    if engine == "native":
        native = _backend.get_engine("native").module
        assert native.HS_SOURCE in ("system-static", "system-shared", "vendored")
        assert native.HS_VERSION.split()[0].startswith("5.")
        assert native.HS_VERSION in status.description
    elif engine == "hyperscan":
        assert "PyPI hyperscan" in status.description
    assert status.as_dict()["degraded"] is False


@needs_native
def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMFRAME_SCAN_CACHE", "off")
    assert database_cache_dir() is None
    monkeypatch.setenv("MEMFRAME_SCAN_CACHE", str(tmp_path / "c"))
    assert database_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("MEMFRAME_SCAN_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert database_cache_dir() == tmp_path / "xdg" / "memframe" / "scan-db"


_STATUS = (
    "import json, memframe.scanner as s; sc = s.default_scanner(); "
    f"print(json.dumps([sc.status().cache, [f.rule_id for f in sc.find('key {AWS}')]]))"
)


def _status_in_fresh_process(cache: Path) -> tuple[str, list[str]]:
    env = memframe_env({"MEMFRAME_SCAN_CACHE": str(cache), "MEMFRAME_BACKEND": "native"})
    out = subprocess.run(
        [sys.executable, "-c", _STATUS], env=env, capture_output=True, text=True, check=True
    )
    status, found = json.loads(out.stdout)
    return status, found


@needs_native
def test_a_fresh_process_loads_the_cached_database(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "scan-db"
    assert _status_in_fresh_process(cache) == ("stored", ["aws-access-token"])
    # the database, and the validated bundled rules beside it (memframe.rules.loading)
    files = sorted(cache.glob("*.hsdb"))
    assert len(files) == 1 and len(list(cache.glob("rules-*.json"))) == 1
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in cache.iterdir())
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert _status_in_fresh_process(cache) == ("hit", ["aws-access-token"])
    # damaged: ignored, compiled again and replaced, same findings
    files[0].write_bytes(files[0].read_bytes()[:-100])
    assert _status_in_fresh_process(cache) == ("stored", ["aws-access-token"])
    assert _status_in_fresh_process(cache) == ("hit", ["aws-access-token"])


@needs_native
def test_an_existing_cache_parent_keeps_its_permissions(tmp_path: Path) -> None:
    parent = tmp_path / "shared"
    parent.mkdir(mode=0o755)
    parent.chmod(0o755)
    _status_in_fresh_process(parent / "scan-db")
    assert stat.S_IMODE(parent.stat().st_mode) == 0o755


def _oversized_rules() -> RuleSet:
    big = Rule(id="too-large", label="Too large", regex=TOO_LARGE, keywords=("zzz",))
    return RuleSet(rules=(*load_rules().rules, big))


@pytest.mark.parametrize("name", ["native", "hyperscan"])
def test_a_rule_the_library_rejects_is_reported_and_still_confirmed(name: str) -> None:
    if name not in _backend.available_engines():
        pytest.skip(f"the {name} engine is not available here")
    rules = _oversized_rules()
    with pytest.warns(EngineDegradedWarning, match="too-large"):
        scanner = SecretScanner(rules, engine=name)
    status = scanner.status()
    assert status.degraded
    assert [rule for rule, _ in status.rejected] == ["too-large"]
    assert "too large" in status.rejected[0][1].lower()
    text = "zzz" + "ab12" * 60 + f" {AWS}"
    expected = SecretScanner(rules, engine="python").find(text)
    assert scanner.find(text) == expected
    assert {f.rule_id for f in expected} == {"too-large", "aws-access-token"}


@needs_native
@pytest.mark.parametrize("backend", ["native", "python"])
def test_rule_files_are_validated_by_the_native_engine(backend: str) -> None:
    text = (
        'schema = 1\n[[rules]]\nid = "too-large"\nlabel = "x"\n'
        f"regex = '''{TOO_LARGE}'''\nkeywords = [\"zzz\"]\n"
    )
    env = memframe_env({"MEMFRAME_BACKEND": backend})
    code = (
        "import sys; from memframe.rules import parse_rules, RuleError\n"
        "try:\n    parse_rules(sys.stdin.read())\nexcept RuleError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=text, env=env, capture_output=True, text=True
    )
    assert "Hyperscan cannot compile the pattern" in out.stdout, out
    assert "too-large" in out.stdout


def test_a_pattern_the_engine_accepts_passes_validation() -> None:
    rules = parse_rules(
        'schema = 1\n[[rules]]\nid = "ok"\nlabel = "x"\n'
        "regex = '''\\b(tok_[a-z0-9]{6})(?:[^a-z0-9]+|\\z)'''\nkeywords = [\"tok_\"]\n"
    )
    assert rules.ids() == ("ok",)
    with pytest.raises(RuleError):
        parse_rules('schema = 1\n[[rules]]\nid = "bad"\nlabel = "x"\nregex = "("\n')


def test_scan_version_and_explain_name_the_engine(tmp_path: Path) -> None:
    version = run_memframe("scan", "--version")
    assert version.returncode == 0, version.stderr
    assert _backend.ENGINE.split(":")[0] in version.stdout
    explained = run_memframe("scan", "--explain", "--no-config")
    assert explained.returncode == 0, explained.stderr
    assert "engine:" in explained.stderr and "not degraded" in explained.stderr
    note = tmp_path / "note.md"
    note.write_text(f"key {AWS}\n")
    report = run_memframe("scan", "--format", "json", "--no-config", "-q", str(note))
    assert report.returncode == 1, report.stderr
    engine = json.loads(report.stdout)["summary"]["engine"]
    assert engine["degraded"] is False and engine["rejected"] == []
    assert engine["engine"] == (os.environ.get("MEMFRAME_BACKEND") or _backend.BACKEND)


@needs_native
def test_explain_names_the_rules_left_out() -> None:
    from memframe.cli.scan import explain

    with pytest.warns(EngineDegradedWarning):
        scanner = SecretScanner(_oversized_rules(), engine="native")
    text = explain(scanner)
    assert "degraded: rule too-large left out of the database" in text
    in_database = len(scanner.rules.rules) - 1  # all but the oversized one
    assert f"rules: {len(scanner.rules.rules)}, in the one-pass database: {in_database}" in text


def _needed_libraries(library: Path) -> list[str]:
    out = subprocess.run(
        ["readelf", "-d", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return [
        line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line
    ]


# What a manylinux wheel may need from the system (PEP 599's list: what Rust + C++ code uses).
ALLOWED_NEEDED = {
    "libc.so.6",
    "libm.so.6",
    "libgcc_s.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "ld-linux-x86-64.so.2",
    "librt.so.1",
    "libutil.so.1",
}


@needs_native
def test_the_installed_extension_needs_no_engine_library() -> None:
    native = _backend.get_engine("native").module
    if native.HS_SOURCE == "system-shared":
        pytest.skip("built against a shared libhs (no libhs.a found)")
    needed = _needed_libraries(Path(native.__file__))
    assert set(needed) <= ALLOWED_NEEDED, needed


@pytest.mark.slow
@needs_native
@pytest.mark.timeout(900)
def test_a_distribution_wheel_imports_and_scans_without_the_system_library(tmp_path: Path) -> None:
    maturin = shutil.which("maturin", path=str(Path(sys.executable).parent))
    if maturin is None:
        pytest.skip("maturin is not installed")
    # the suite's HOME is a temporary one: the toolchain and the build cache are the real user's
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    env = dict(os.environ)
    env.setdefault("RUSTUP_HOME", str(real_home / ".rustup"))
    env.setdefault("CARGO_HOME", str(real_home / ".cargo"))
    env.setdefault("CARGO_TARGET_DIR", str(real_home / ".cache" / "memframe" / "cargo-target"))
    built = subprocess.run(
        [maturin, "build", "--release", "--quiet", "-i", sys.executable, "-o", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=850,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    wheels = list(tmp_path.glob("memframe-*.whl"))
    assert len(wheels) == 1
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extractall(unpacked)
    libraries = list(unpacked.glob("memframe/_native*.so"))
    assert len(libraries) == 1
    assert set(_needed_libraries(libraries[0])) <= ALLOWED_NEEDED
    # -S: no site-packages processing, so the checkout's editable install cannot shadow the wheel;
    # the dependencies come from this venv's site-packages, after the wheel.
    site_packages = next(p for p in sys.path if p.endswith("site-packages"))
    code = (
        "import memframe, memframe.scanner as s, memframe._native as n; "
        "assert memframe.__file__.startswith(%r), memframe.__file__; "
        f"print(n.HS_SOURCE, [f.rule_id for f in s.find('x {AWS} y')])"
    ) % str(unpacked)
    run_env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": f"{unpacked}{os.pathsep}{site_packages}",
        "MEMFRAME_BACKEND": "native",
        "LD_LIBRARY_PATH": str(tmp_path / "no-libraries-here"),
    }
    ran = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env=run_env,
        cwd=tmp_path,  # not the checkout: `-c` puts the working directory first on sys.path
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split(" ", 1)[1].strip() == "['aws-access-token']"
