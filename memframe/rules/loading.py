"""Loading rule files: the bundled set, a user's file (either format), registered rules, merging.

The bundled set is parsed and validated once per *machine*: the validated set is kept as JSON in
the scan cache (:func:`memframe.paths.scan_cache_dir`, beside the engines' compiled databases)
under a key that hashes ``default.toml`` and the source of this package, so an edited rule file
or parser is never served from a stale entry. A short-lived process (an agent hook) then loads
the rules in a few milliseconds instead of parsing TOML and checking every pattern. An entry that
cannot be read or does not have the expected shape is ignored and written again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import stat
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from memframe.rules.model import SCHEMA_VERSION, Allowlist, Rule, RuleError, RuleSet

if TYPE_CHECKING:
    from memframe.rules.gitleaks import GitleaksFormat
    from memframe.rules.memframe_format import MemframeFormat

    class _BothFormats(MemframeFormat, GitleaksFormat):
        """What :func:`_parser_class` builds, for the type checker."""


__all__ = [
    "DEFAULT_RULES_PATH",
    "load_rule_file",
    "load_rules",
    "merge",
    "parse_rules",
    "rule_from_mapping",
]

DEFAULT_RULES_PATH: Final[Path] = Path(__file__).with_name("default.toml")
_TOML_LINE_RE: Final = re.compile(r"at line (\d+)")
# bump when the cache entry's layout changes
_CACHE_FORMAT: Final = b"memframe-rules-cache-1"
_CACHE_PREFIX: Final = "rules-"


@functools.cache
def _parser_class() -> type[_BothFormats]:
    """Both formats over one source (imported on first use: loading the bundled set from the
    cache needs neither TOML nor the parsers)."""
    from memframe.rules.gitleaks import GitleaksFormat
    from memframe.rules.memframe_format import MemframeFormat

    class _Parser(MemframeFormat, GitleaksFormat):
        pass

    return cast("type[_BothFormats]", _Parser)


def _parser(source: str, check_hyperscan: bool | None) -> _BothFormats:
    return _parser_class()(source, check_hyperscan)


def load_rules(path: str | Path | None = None) -> RuleSet:
    """Load a rule file (memframe or gitleaks format); ``None`` loads the bundled default rules.

    The bundled set is parsed once per process and is not re-checked with Hyperscan (the test suite
    does that); any other file is, with the native extension's Hyperscan (else the PyPI
    ``hyperscan`` package) when either is available.
    """
    if path is None:
        return _bundled_rules()
    return load_rule_file(path)


_bundled: RuleSet | None = None
_bundled_lock: Final = threading.Lock()


def _bundled_rules() -> RuleSet:
    """The bundled set, loaded once per process."""
    global _bundled
    with _bundled_lock:
        if _bundled is None:
            _bundled = _load_bundled()
        return _bundled


def _load_bundled() -> RuleSet:
    raw = DEFAULT_RULES_PATH.read_bytes()
    source = str(DEFAULT_RULES_PATH)
    from memframe.paths import scan_cache_dir

    directory = scan_cache_dir()
    if directory is None:
        return parse_rules(raw.decode("utf-8"), source=source, check_hyperscan=False)
    key = _cache_key(raw)
    entry = directory / f"{_CACHE_PREFIX}{key[:40]}.json"
    cached = _read_cached(entry, key, source)
    if cached is not None:
        return cached
    rules = parse_rules(raw.decode("utf-8"), source=source, check_hyperscan=False)
    _store_cached(entry, key, rules)
    return rules


def _cache_key(rule_file: bytes) -> str:
    """sha256 of the bundled file and of every module of this package (a changed parser or
    check invalidates the entry as surely as a changed rule)."""
    digest = hashlib.sha256(_CACHE_FORMAT)
    digest.update(len(rule_file).to_bytes(8, "big") + rule_file)
    for module in sorted(Path(__file__).parent.glob("*.py")):
        code = module.read_bytes()
        digest.update(module.name.encode() + b"\0" + len(code).to_bytes(8, "big") + code)
    return digest.hexdigest()


def _read_cached(entry: Path, key: str, source: str) -> RuleSet | None:
    """The entry's rule set, or ``None`` unless it is a regular file (not a symlink) owned by
    this user and writable by nobody else (as the engines' database files) with the right key
    and shape: in a shared cache directory nobody else can hand this process fewer rules."""
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.geteuid()
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            raw = handle.read()
    except OSError:
        return None
    finally:
        if fd != -1:
            os.close(fd)
    try:
        doc = json.loads(raw)
        if doc["key"] != key:
            return None
        return _rule_set_from_dict(doc["rules"], source)
    except (OSError, ValueError, KeyError, TypeError, RuleError):
        return None


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return tuple(value)


def _allowlist_from_dict(data: Any) -> Allowlist:
    return Allowlist(
        stopwords=_strings(data["stopwords"]),
        regexes=_strings(data["regexes"]),
        match_regexes=_strings(data["match_regexes"]),
    )


def _rule_set_from_dict(data: Any, source: str) -> RuleSet:
    """The inverse of :meth:`RuleSet.to_dict` for a set this module validated before (types are
    checked; patterns are not linted again)."""
    if data["schema"] != SCHEMA_VERSION:
        raise ValueError("another schema")
    rules = []
    for item in data["rules"]:
        entropy = item["entropy"]
        if entropy is not None and type(entropy) not in (int, float):
            raise TypeError("entropy")
        fields = (item["id"], item["label"], item["regex"])
        if not all(isinstance(f, str) for f in fields) or type(item["secret_group"]) is not int:
            raise TypeError("rule fields")
        rules.append(
            Rule(
                id=item["id"],
                label=item["label"],
                regex=item["regex"],
                keywords=_strings(item["keywords"]),
                secret_group=item["secret_group"],
                entropy=None if entropy is None else float(entropy),
                allowlist=_allowlist_from_dict(item["allowlist"]),
                source=source,
            )
        )
    return RuleSet(rules=tuple(rules), allowlist=_allowlist_from_dict(data["allowlist"]))


def _store_cached(entry: Path, key: str, rules: RuleSet) -> None:
    """Keep ``rules`` under ``key`` and drop entries of other keys; best effort (a read-only or
    full cache only costs the next process the parse)."""
    from memframe._fs import atomic_write_text

    text = json.dumps({"key": key, "rules": rules.to_dict()}, separators=(",", ":"))
    with contextlib.suppress(OSError):
        atomic_write_text(entry, text)
        for old in entry.parent.glob(f"{_CACHE_PREFIX}*.json"):
            if old != entry:
                with contextlib.suppress(OSError):
                    old.unlink()


def load_rule_file(path: str | Path, *, check_hyperscan: bool | None = None) -> RuleSet:
    """Parse and validate one rule file.

    :param check_hyperscan: also compile each pattern with Hyperscan (the native extension's,
        else the PyPI package's); ``None`` = when either is available.
    :raises RuleError: naming the file, the rule id and the field of the first problem found.
    """
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise RuleError(f"cannot read the rule file: {exc.strerror or exc}", source=source) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuleError(f"the rule file is not UTF-8: {exc.reason}", source=source) from exc
    return parse_rules(text, source=source, check_hyperscan=check_hyperscan)


def parse_rules(
    text: str, *, source: str = "<string>", check_hyperscan: bool | None = None
) -> RuleSet:
    """Parse rule-file text: a top-level ``schema`` selects the memframe format, else gitleaks."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_LINE_RE.search(str(exc))
        line = int(m.group(1)) if m else None
        raise RuleError(f"invalid TOML: {exc}", source=source, line=line) from exc
    parser = _parser(source, check_hyperscan)
    if "schema" in doc:
        return parser.memframe(doc)
    return parser.gitleaks(doc)


def rule_from_mapping(data: Mapping[str, Any], *, source: str = "<register_rules>") -> Rule:
    """Build one rule from a memframe-format mapping (``id``, ``label``, ``regex``, ``keywords``…).

    This is what the ``register_rules`` hook's ``register`` callback accepts.
    """
    return _parser(source, None).memframe_rule(dict(data), "#1")


def merge(base: RuleSet, extra: RuleSet) -> RuleSet:
    """``base`` followed by ``extra``'s rules; the global allowlists are united.

    :raises RuleError: when ``extra`` redefines a rule id of ``base``.
    """
    seen = {r.id: r for r in base.rules}
    for rule in extra.rules:
        if rule.id in seen:
            first = seen[rule.id].source or "the base rule set"
            raise RuleError(
                f"duplicate rule id: already defined by {first}",
                source=rule.source or "<merge>",
                rule_id=rule.id,
                key="id",
            )
        seen[rule.id] = rule
    return RuleSet(rules=base.rules + extra.rules, allowlist=base.allowlist.merged(extra.allowlist))
