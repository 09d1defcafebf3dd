"""Secret scanning: ``scan``, ``find``, ``redact`` and their batch forms, on every engine.

    import memframe

    memframe.scan("aws_access_key_id = AKIA...")      # -> [SecretMatch('aws-access-token', ...)]
    memframe.redact(text)                             # secrets replaced by [REDACTED]

The engine follows ``MEMFRAME_BACKEND`` (``native``: Hyperscan/Vectorscan + Rust regex;
``hyperscan``: the PyPI hyperscan package + Python ``re``; ``python``: keyword prefilter +
``re``); all three return
identical results. Offsets are characters of the text; bytes are decoded as UTF-8 with every
invalid byte kept as one character (``surrogateescape``).
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memframe import _backend
from memframe.errors import BackendError, EngineDegradedWarning
from memframe.paths import scan_cache_dir as database_cache_dir
from memframe.rules import RuleError, RuleSet, load_rules

REDACTED = "[REDACTED]"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

FindingTuple = tuple[int, int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class SecretMatch:
    """A rule that matched (``scan`` reports each rule at most once)."""

    rule_id: str
    label: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret: the whole match ``[start, end)``, the secret ``[secret_start, secret_end)``
    (character offsets) and the 1-based line of the secret's start."""

    rule_id: str
    label: str
    start: int
    end: int
    secret_start: int
    secret_end: int
    line: int


@dataclass(frozen=True, slots=True)
class FileFindings:
    """The findings of one file (``path`` as given, as a str), or the error that stopped it
    from being read."""

    path: str
    findings: list[Finding]
    error: str | None = None


class _Engine(Protocol):
    @property
    def rule_count(self) -> int: ...

    def find(self, data: Any) -> list[FindingTuple]: ...

    def scan(self, data: Any) -> list[int]: ...


def _coerce(data: str | bytes) -> str | bytes:
    """``str`` and ``bytes`` as they are; other byte buffers as ``bytes``."""
    if isinstance(data, str | bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"expected str or bytes, got {type(data).__name__}")


def _clean(data: str | bytes) -> str | bytes:
    """Lone surrogates in a str (not valid Unicode scalar values) become U+FFFD on every engine;
    bytes pass through unchanged."""
    data = _coerce(data)
    if isinstance(data, str) and not data.isascii():
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            return _LONE_SURROGATE.sub("\ufffd", data)
    return data


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """How a scanner's rules reached its engine.

    ``rejected``: ``(rule id, the library's message)`` for each rule the one-pass database left
    out; such a rule is confirmed by its regex over the whole text (same findings, slower).
    ``database_error``: why no database was built at all. ``cache``: ``off``, ``hit``,
    ``stored`` or ``compiled: <why the cached database was not used>`` (native engine).
    """

    engine: str
    description: str
    rejected: tuple[tuple[str, str], ...]
    database_error: str | None
    cache: str
    scan_failures: int

    @property
    def degraded(self) -> bool:
        return bool(self.rejected or self.database_error or self.scan_failures)

    def as_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "description": self.description,
            "degraded": self.degraded,
            "rejected": [{"rule": rule, "reason": reason} for rule, reason in self.rejected],
            "database_error": self.database_error,
            "cache": self.cache,
            "scan_failures": self.scan_failures,
        }


def _make_engine(name: str, rules: RuleSet) -> _Engine:
    if name == "native":
        native = _backend.get_engine("native").module
        cache = database_cache_dir()
        engine: _Engine = native.Scanner(rules.to_json(), None if cache is None else str(cache))
        return engine
    if name == "hyperscan":
        _backend.get_engine("hyperscan")  # a clear BackendError when the package is missing
        from memframe._hyperscan import HyperscanScanner

        return HyperscanScanner(rules)
    if name == "python":
        from memframe._fallback.scan import PythonScanner

        return PythonScanner(rules)
    raise BackendError(f"unknown scanning engine {name!r}")


def _warn_degraded(name: str, rules: RuleSet, engine: object) -> None:
    rejected = [rules.rules[i].id for i, _ in getattr(engine, "rejected", ())]
    error = getattr(engine, "database_error", None)
    if not rejected and error is None:
        return
    what = (
        f"no database could be built ({error})"
        if error is not None
        else f"{len(rejected)} rule(s) left out of its database: {', '.join(rejected)}"
    )
    warnings.warn(
        f"the {name} scanning engine is degraded: {what}; those rules are confirmed by their "
        "regex over each whole text (same findings, slower). `memframe scan --explain` shows why.",
        EngineDegradedWarning,
        stacklevel=3,
    )


class SecretScanner:
    """A rule set compiled for one engine. Compiling is done once per (engine, rule set) per
    process; scanners are safe to share between threads."""

    def __init__(self, rules: RuleSet | None = None, *, engine: str | None = None) -> None:
        self.rules = rules if rules is not None else load_rules()
        self.engine = engine or _backend.BACKEND
        self._impl = _cached_engine(self.engine, self.rules)
        _warn_degraded(self.engine, self.rules, self._impl)
        self._labels = [(rule.id, rule.label) for rule in self.rules]

    def status(self) -> EngineStatus:
        """The engine, its library, and what it left out (see :class:`EngineStatus`)."""
        impl: Any = self._impl
        return EngineStatus(
            engine=self.engine,
            description=_backend.engine_description(_backend.get_engine(self.engine)),
            rejected=tuple(
                (self.rules.rules[i].id, reason) for i, reason in getattr(impl, "rejected", ())
            ),
            database_error=getattr(impl, "database_error", None),
            cache=getattr(impl, "cache", "off"),
            scan_failures=getattr(impl, "scan_failures", 0),
        )

    def _finding(self, raw: FindingTuple) -> Finding:
        rule_id, label = self._labels[raw[0]]
        return Finding(rule_id, label, raw[1], raw[2], raw[3], raw[4], raw[5])

    def scan(self, text: str | bytes) -> list[SecretMatch]:
        """The rules that match, each at most once, in rule order."""
        return [SecretMatch(*self._labels[i]) for i in self._impl.scan(_clean(text))]

    def find(self, text: str | bytes) -> list[Finding]:
        """Every finding, in (start, rule order) order."""
        return [self._finding(raw) for raw in self._impl.find(_clean(text))]

    def redact(self, text: str | bytes) -> str:
        """The text with every secret span replaced by ``[REDACTED]`` (overlapping or touching
        spans merged)."""
        cleaned = _clean(text)
        findings = self._impl.find(cleaned)
        plain = cleaned if isinstance(cleaned, str) else cleaned.decode("utf-8", "surrogateescape")
        return redact_spans(plain, [(f[3], f[4]) for f in findings])

    def _many(self, name: str, texts: Sequence[str | bytes], threads: int | None) -> list[Any]:
        """The engine's batch form ``name`` (``scan_many``/``find_many``) over ``texts``."""
        many = getattr(self._impl, name, None)
        if many is None:
            single = getattr(self._impl, name.removesuffix("_many"))
            return [single(_clean(t)) for t in texts]
        if self.engine == "native":
            # The native engine takes str and bytes as they are, reads each str's UTF-8 in place
            # and raises on what needs cleaning (lone surrogates, which have no UTF-8) or
            # converting (other buffers): preparing every text first costs more than the scan
            # of a small one, and would encode each non-ASCII text twice.
            try:
                results: list[Any] = many(texts, threads)
                return results
            except (UnicodeEncodeError, TypeError):
                pass
        cleaned: list[Any] = many([_clean(t) for t in texts], threads)
        return cleaned

    def scan_many(
        self, texts: Sequence[str | bytes], *, threads: int | None = None
    ) -> list[list[SecretMatch]]:
        """``scan`` of every text (in parallel on the native engine)."""
        results = self._many("scan_many", texts, threads)
        # an empty result is a fresh list already: kept as it is (most texts have no secret)
        return [[SecretMatch(*self._labels[i]) for i in hits] if hits else hits for hits in results]

    def find_many(
        self, texts: Sequence[str | bytes], *, threads: int | None = None
    ) -> list[list[Finding]]:
        """``find`` of every text (in parallel on the native engine)."""
        results = self._many("find_many", texts, threads)
        if not any(results):  # the common case: nothing found, fresh empty lists already
            return results
        return [[self._finding(raw) for raw in found] if found else found for found in results]

    def find_files(
        self, paths: Iterable[str | Path], *, threads: int | None = None
    ) -> list[FileFindings]:
        """``find`` over files: memory-mapped and parallel on the native engine; an unreadable
        file is reported with its error instead of stopping the batch."""
        names = [os.fspath(p) for p in paths]
        native_files = getattr(self._impl, "find_files", None)
        if native_files is not None:
            results = native_files(names, threads)
            return [
                FileFindings(name, [self._finding(raw) for raw in found] if found else [], error)
                for name, (found, error) in zip(names, results, strict=True)
            ]
        out = []
        for name in names:
            try:
                data = Path(name).read_bytes()
            except OSError as exc:
                out.append(FileFindings(name, [], exc.strerror or str(exc)))
                continue
            out.append(FileFindings(name, [self._finding(r) for r in self._impl.find(data)]))
        return out


def merge_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted ``[start, end)`` spans with overlapping or touching ones merged: the one span
    merge of memframe (text redaction, byte-range redaction of files)."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def redact_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """Replace each span of ``text`` with ``[REDACTED]``, merging overlapping or touching spans."""
    parts = []
    cursor = 0
    for start, end in merge_spans(spans):
        parts.append(text[cursor:start])
        parts.append(REDACTED)
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


_engines: dict[tuple[str, str], _Engine] = {}
_engines_lock = threading.Lock()


def _cached_engine(name: str, rules: RuleSet) -> _Engine:
    key = (name, rules.fingerprint())
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = _make_engine(name, rules)
        return engine


_default: SecretScanner | None = None


def default_scanner() -> SecretScanner:
    """The scanner with the bundled rules on the active backend."""
    global _default
    if _default is None:
        _default = SecretScanner()
    return _default


def scan(text: str | bytes) -> list[SecretMatch]:
    """``default_scanner().scan(text)``."""
    return default_scanner().scan(text)


def find(text: str | bytes) -> list[Finding]:
    """``default_scanner().find(text)``."""
    return default_scanner().find(text)


def redact(text: str | bytes) -> str:
    """``default_scanner().redact(text)``."""
    return default_scanner().redact(text)


def scan_many(
    texts: Sequence[str | bytes], *, threads: int | None = None
) -> list[list[SecretMatch]]:
    """``default_scanner().scan_many(texts)``."""
    return default_scanner().scan_many(texts, threads=threads)


def find_files(paths: Iterable[str | Path], *, threads: int | None = None) -> list[FileFindings]:
    """``default_scanner().find_files(paths)``."""
    return default_scanner().find_files(paths, threads=threads)


def rules_file_setting(settings: Mapping[str, Any]) -> Path | None:
    """The ``rules_file`` setting as a path (``None`` when unset)."""
    extra_file = settings.get("rules_file")
    if extra_file is None:
        return None
    if not isinstance(extra_file, str) or not extra_file:
        raise RuleError("the setting 'rules_file' must be a path string", source="settings")
    return Path(extra_file).expanduser()


def rules_for_settings(
    settings: Mapping[str, Any], register_rules: Callable[[Callable[[Any], None]], object]
) -> RuleSet:
    """The bundled rules, then the user's ``rules_file`` (memframe or gitleaks format) from the
    settings, then every rule layers add through the ``register_rules`` hook."""
    from memframe.rules import Rule, load_rule_file, merge, rule_from_mapping

    rules = load_rules()
    extra_file = rules_file_setting(settings)
    if extra_file is not None:
        rules = merge(rules, load_rule_file(extra_file))
    added: list[Rule] = []

    def register(rule: Any) -> None:
        added.append(rule if isinstance(rule, Rule) else rule_from_mapping(rule))

    register_rules(register)
    if added:
        rules = merge(rules, RuleSet(rules=tuple(added)))
    return rules
