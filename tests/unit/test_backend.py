"""Engine selection and the hot-path functions: every engine gives the reference results.

CI runs the suite twice, the second time with ``MEMFRAME_BACKEND=python``: assertions about the
active engine are written relative to the environment.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import xxhash

import memframe
from memframe import _backend, _fallback

ENGINES = _backend.available_engines()
NATIVE_BUILT = "native" in ENGINES
needs_native = pytest.mark.skipif(not NATIVE_BUILT, reason="memframe._native is not built")


@pytest.fixture(params=ENGINES)
def backend(request) -> ModuleType:
    """The hot-path module of each engine that loads here."""
    return _backend.get_engine(request.param).module


def _corpus() -> list[str]:
    rng = random.Random(20240601)
    alphabet = "abcXYZ019 \n\t{}[]\"':,.-_/\\é記憶😀\x00"
    generated = [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 300))) for _ in range(50)
    ]
    return [
        "",
        "a",
        "abc",
        "abcd",
        "abcde",
        "hello world\n",
        "記憶",
        "emoji 😀 and combining é",
        "nul\x00inside",
        '{"entries": {"a.md": "text"}}',
        "x" * 1_000_003,
        *generated,
    ]


CORPUS = _corpus()


def test_the_python_engine_is_always_available():
    assert "python" in ENGINES
    assert set(ENGINES) <= set(_backend.BACKENDS)
    assert [name for name in _backend.BACKENDS if name in ENGINES] == ENGINES  # best first


def test_sha256_matches_hashlib(backend):
    for text in CORPUS:
        data = text.encode("utf-8")
        expected = "sha256:" + hashlib.sha256(data).hexdigest()
        assert backend.sha256(text) == expected
        assert backend.sha256(data) == expected
    assert backend.sha256(b"\xff\xfe not utf-8") == (
        "sha256:" + hashlib.sha256(b"\xff\xfe not utf-8").hexdigest()
    )


def test_sha256_known_vectors(backend):
    assert backend.sha256("") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert backend.sha256("abc") == (
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_xxh3_matches_python_xxhash(backend):
    for text in CORPUS:
        data = text.encode("utf-8")
        assert backend.xxh3_64(text) == xxhash.xxh3_64_intdigest(data)
        assert backend.xxh3_64(data) == xxhash.xxh3_64_intdigest(data)
        assert backend.xxh3_128(text) == xxhash.xxh3_128_intdigest(data)
        assert backend.xxh3_128(data) == xxhash.xxh3_128_intdigest(data)
    assert 0 <= backend.xxh3_64("x") < 2**64
    assert 0 <= backend.xxh3_128("x") < 2**128


def test_sha256_many_matches_sha256(backend):
    assert backend.sha256_many([]) == []
    assert backend.sha256_many(CORPUS) == [backend.sha256(text) for text in CORPUS]
    assert backend.sha256_many(("a", "b")) == [backend.sha256("a"), backend.sha256("b")]


def test_count_tokens_matches_the_python_engine(backend):
    for text in CORPUS:
        assert backend.count_tokens(text) == _fallback.count_tokens(text)
    assert backend.count_tokens("") == 0


@pytest.mark.parametrize("function", ["sha256", "xxh3_64", "xxh3_128"])
@pytest.mark.parametrize("value", [None, 1, 1.5, bytearray(b"x"), memoryview(b"x"), ["a"]])
def test_checksums_reject_other_types(backend, function, value):
    with pytest.raises(TypeError):
        getattr(backend, function)(value)


@pytest.mark.parametrize("value", [None, 1, b"bytes", bytearray(b"x"), ["a"]])
def test_count_tokens_rejects_non_str(backend, value):
    with pytest.raises(TypeError):
        backend.count_tokens(value)


@pytest.mark.parametrize("value", [None, 1, [1], ["a", None]])
def test_sha256_many_rejects_other_types(backend, value):
    with pytest.raises(TypeError):
        backend.sha256_many(value)


@pytest.mark.parametrize("value", ["abc", (text for text in ["a"])], ids=["str", "generator"])
def test_sha256_many_takes_a_list_or_tuple(backend, value):
    """A str must not be hashed character by character; generators are refused on every engine."""
    with pytest.raises(TypeError):
        backend.sha256_many(value)


def test_batch_checksums_accept_str_and_bytes_entries(backend):
    items = ["a", b"b", "\u8a18\u61b6"]
    assert backend.sha256_many(items) == [backend.sha256(i) for i in items]
    assert backend.xxh3_64_many(tuple(items)) == [backend.xxh3_64(i) for i in items]
    assert backend.xxh3_128_many(items) == [backend.xxh3_128(i) for i in items]


@pytest.mark.parametrize("function", ["sha256", "xxh3_64", "xxh3_128"])
def test_lone_surrogates_raise_unicode_encode_error(backend, function):
    with pytest.raises(UnicodeEncodeError):
        getattr(backend, function)("bad \ud800 text")


def test_lone_surrogates_are_counted_alike_on_every_engine(backend):
    text = "bad \ud800 text \udfff"
    assert backend.count_tokens(text) == _fallback.count_tokens(text) > 0


# -- the active engine -------------------------------------------------------------------------


def expected_active() -> str:
    requested = os.environ.get(_backend.ENV_VAR, "").strip().lower()
    return requested or ENGINES[0]


def test_active_engine_follows_the_environment():
    assert memframe.BACKEND == _backend.BACKEND == expected_active()
    engine = _backend.get_engine(_backend.BACKEND)
    assert _backend.sha256 is engine.module.sha256
    assert _backend.count_tokens is engine.module.count_tokens
    if _backend.BACKEND == "native":
        assert memframe.__version__ == _backend.NATIVE_VERSION
        assert _backend.BUILD_PROFILE in ("release", "debug")
    else:
        assert _backend.NATIVE_VERSION is None


@needs_native
def test_native_is_the_default_when_built():
    assert run_python("import memframe; print(memframe.BACKEND)", backend=None) == "native"


def run_python(code: str, *, backend: str | None, check: bool = True) -> str:
    """Run ``code`` in a fresh interpreter with ``MEMFRAME_BACKEND`` set (or unset); stdout."""
    env = {k: v for k, v in os.environ.items() if k != _backend.ENV_VAR}
    if backend is not None:
        env[_backend.ENV_VAR] = backend
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


REPORT_ERROR = """
import memframe
try:
    print(memframe.BACKEND)
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_bogus_backend_is_an_error_naming_the_valid_ones():
    out = run_python(REPORT_ERROR, backend="bogus")
    assert out.startswith("BackendError")
    assert "'bogus'" in out
    assert "native, hyperscan, python" in out


@pytest.mark.parametrize("name", ENGINES)
def test_explicit_backend_is_used(name):
    assert run_python("import memframe; print(memframe.BACKEND)", backend=name) == name


def test_backend_name_is_case_and_space_insensitive():
    assert run_python("import memframe; print(memframe.BACKEND)", backend=" Python ") == "python"


MISMATCH = """
import warnings
import memframe._version
memframe._version.__version__ = "0.0.0+mismatch"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        from memframe import _backend
    except Exception as exc:
        print("ERROR", type(exc).__name__, exc)
    else:
        print("BACKEND", _backend.BACKEND)
for warning in caught:
    print("WARNING", warning.category.__name__, warning.message)
"""


@needs_native
def test_version_mismatch_falls_back_with_one_warning_when_unset():
    lines = run_python(MISMATCH, backend=None).splitlines()
    fallback = "hyperscan" if "hyperscan" in ENGINES else "python"
    assert lines[0] == f"BACKEND {fallback}"
    warnings = lines[1:]
    assert len(warnings) == 1, lines
    assert warnings[0].startswith("WARNING BackendFallbackWarning")
    assert "does not match" in warnings[0]
    assert "0.0.0+mismatch" in warnings[0]
    assert f"MEMFRAME_BACKEND={fallback}" in warnings[0]  # how to silence it


@needs_native
def test_version_mismatch_is_an_error_when_native_is_requested():
    lines = run_python(MISMATCH, backend="native").splitlines()
    assert lines[0].startswith("ERROR BackendError")
    assert "does not match" in lines[0]
    assert "rebuild" in lines[0]
    assert len(lines) == 1  # and no warning


@needs_native
def test_no_warning_when_the_best_engine_loads():
    code = """
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from memframe import _backend
    print(_backend.BACKEND, len(caught))
    """
    assert run_python(code, backend=None) == "native 0"


def test_fallback_selection_in_process(monkeypatch):
    """``_load_native`` failing: unset → one warning and a slower engine; requested → error."""

    def not_built():
        raise _backend.BackendError("memframe._native is not built (test)")

    monkeypatch.setattr(_backend, "_engines", {})
    monkeypatch.setattr(_backend, "_load_native", not_built)
    monkeypatch.delenv(_backend.ENV_VAR, raising=False)
    with pytest.warns(_backend.BackendFallbackWarning, match=r"native: memframe\._native is not"):
        engine = _backend.select_engine()
    assert engine.name in ("hyperscan", "python")
    with pytest.raises(_backend.BackendError, match="not built"):
        _backend.select_engine("native")
    assert _backend.select_engine("python").name == "python"


def test_only_backend_imports_native():
    package = Path(memframe.__file__).parent
    pattern = re.compile(
        r"(import\s+memframe\._native|from\s+memframe\s+import\s+[^\n]*\b_native\b"
        r"|from\s+memframe\._native\s+import|from\s+\.+\s*import\s+[^\n]*\b_native\b"
        r"|from\s+\.+_native\s+import|import_module\(\s*[\"'](memframe)?\._native)"
    )
    offenders = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if pattern.search(text) and path.name != "_backend.py":
            offenders.append(str(path.relative_to(package)))
    assert offenders == []
    assert pattern.search((package / "_backend.py").read_text(encoding="utf-8"))


def test_count_tokens_many_matches_single_calls(backend):
    texts = ["", "hello world", "記憶のメモ", "camelCaseName = 12345", "bad \ud800"]
    assert backend.count_tokens_many(texts) == [backend.count_tokens(t) for t in texts]
    assert backend.count_tokens_many(tuple(texts), threads=1) == backend.count_tokens_many(texts)
    with pytest.raises(TypeError):
        backend.count_tokens_many("not a list")
    with pytest.raises(TypeError):
        backend.count_tokens_many([b"bytes"])
