"""Engine selection. This module is the ONLY importer of ``memframe._native``.

``MEMFRAME_BACKEND`` picks the engine for the hot paths:

- ``native``: the Rust extension (default when it is built and its version matches);
- ``hyperscan``: the pure-Python twin, with the PyPI ``hyperscan`` package for scanning;
- ``python``: the pure-Python twin only.

Unset, the best available engine is used and a single warning says so when it had to fall back.
An engine named explicitly that cannot be used is an error, never a silent slow path.
"""

from __future__ import annotations

import importlib
import os
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Final

from memframe._version import __version__
from memframe.errors import BackendError, BackendFallbackWarning

BACKENDS: Final = ("native", "hyperscan", "python")
ENV_VAR: Final = "MEMFRAME_BACKEND"


@dataclass(frozen=True)
class Engine:
    """One backend: its name and the module providing the hot-path functions."""

    name: str
    module: ModuleType
    native_version: str | None
    build_profile: str | None


def _load_native() -> ModuleType:
    try:
        native = importlib.import_module("memframe._native")
    except ImportError as exc:
        raise BackendError(
            f"the native extension memframe._native is not built ({exc}); "
            "build it with `maturin develop --release` or `pip install -e .`"
        ) from exc
    version = getattr(native, "__version__", None)
    if version != __version__:
        raise BackendError(
            f"memframe._native {version} does not match memframe {__version__}: "
            "rebuild the extension (`maturin develop --release`)"
        )
    return native


def _load(name: str) -> Engine:
    if name == "native":
        native = _load_native()
        return Engine("native", native, native.__version__, native.BUILD_PROFILE)
    if name == "hyperscan":
        try:
            importlib.import_module("hyperscan")
        except ImportError as exc:
            raise BackendError(
                f"the hyperscan backend needs the PyPI package `hyperscan` ({exc}); "
                "install memframe[hyperscan]"
            ) from exc
    if name in ("hyperscan", "python"):
        from memframe import _fallback

        return Engine(name, _fallback, None, None)
    raise BackendError(f"{ENV_VAR}={name!r} is not a backend; choose one of {', '.join(BACKENDS)}")


_engines: dict[str, Engine] = {}


def get_engine(name: str) -> Engine:
    """The engine called ``name``, loaded once per process; BackendError when unusable."""
    engine = _engines.get(name)
    if engine is None:
        engine = _engines[name] = _load(name)
    return engine


def available_engines() -> list[str]:
    """Names of the engines that load here, best first."""
    usable = []
    for name in BACKENDS:
        try:
            get_engine(name)
        except BackendError:
            continue
        usable.append(name)
    return usable


def select_engine(requested: str | None = None) -> Engine:
    """The engine for this process: ``requested`` or ``$MEMFRAME_BACKEND`` or the best one."""
    choice = (requested or os.environ.get(ENV_VAR, "")).strip().lower()
    if choice:
        return get_engine(choice)
    reasons = []
    for name in BACKENDS:
        try:
            engine = get_engine(name)
        except BackendError as exc:
            reasons.append(f"{name}: {exc}")
            continue
        if reasons:
            warnings.warn(
                f"memframe is using the {name} backend because "
                + "; ".join(reasons)
                + f". Set {ENV_VAR}={name} to silence this warning.",
                BackendFallbackWarning,
                stacklevel=2,
            )
        return engine
    raise BackendError("no memframe backend is usable: " + "; ".join(reasons))


def engine_description(engine: Engine) -> str:
    """What does the scanning for ``engine``: the library and its version, for ``--version``,
    bench headers and reports (``native: Hyperscan 5.4.0 2021-01-26 (system-static)``)."""
    if engine.name == "native":
        library = getattr(engine.module, "HS_VERSION", "?")
        source = getattr(engine.module, "HS_SOURCE", "?")
        kind = "Vectorscan" if source == "vendored" else "Hyperscan"
        return f"native: {kind} {library} ({source}) + Rust regex"
    if engine.name == "hyperscan":
        import importlib.metadata

        try:
            version = importlib.metadata.version("hyperscan")
        except importlib.metadata.PackageNotFoundError:
            version = "?"
        return f"hyperscan: PyPI hyperscan {version} + Python re"
    return "python: keyword prefilter + Python re"


def pattern_error(regex: str) -> str | None:
    """Why the native engine's Hyperscan (or, without the extension, the PyPI ``hyperscan``
    package) cannot compile a rule regex the way the scanner gives it; ``None`` when it can or
    when neither is available. Rule files are validated with this on every backend."""
    try:
        native = get_engine("native").module
    except BackendError:
        native = None
    if native is not None:
        message: str | None = native.pattern_error(regex)
        return message
    try:
        hs = importlib.import_module("hyperscan")
    except ImportError:
        return None
    flags = 0
    if regex.startswith("(?i)"):
        regex, flags = regex[4:], hs.HS_FLAG_CASELESS
    database = hs.Database(mode=hs.HS_MODE_BLOCK)
    try:
        database.compile(expressions=[regex.encode("ascii")], ids=[0], elements=1, flags=[flags])
    except hs.error as exc:
        return str(exc)
    return None


_active = select_engine()

BACKEND: Final[str] = _active.name
NATIVE_VERSION: Final[str | None] = _active.native_version
BUILD_PROFILE: Final[str | None] = _active.build_profile
ENGINE: Final[str] = engine_description(_active)

sha256 = _active.module.sha256
sha256_many = _active.module.sha256_many
# One buffer: python-xxhash on every engine. It picks AVX2/AVX-512 at run time, while the portable
# Rust build is compiled for SSE2 and measured 0.6x on large buffers (benches/checksum); results
# are identical either way. The batch forms stay on the active engine (parallel, GIL released).
from memframe._fallback import xxh3_64 as xxh3_64  # noqa: E402
from memframe._fallback import xxh3_128 as xxh3_128  # noqa: E402

xxh3_64_many = _active.module.xxh3_64_many
xxh3_128_many = _active.module.xxh3_128_many
count_tokens = _active.module.count_tokens
count_tokens_many = _active.module.count_tokens_many
