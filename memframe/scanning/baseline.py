"""Baselines: findings accepted once are not reported again.

A finding's fingerprint is the sha256 of its rule id, its path and the secret itself (NUL
separated): moving a secret to another line keeps it baselined, and a new secret, even in a
baselined file, never matches. A baseline file stores fingerprints, rule ids and paths, never
the secrets::

    {"memframe_baseline": 1, "findings": [{"fingerprint": "…", "rule_id": "…", "path": "…"}]}
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import orjson

from memframe.scanning.hits import Hit

FORMAT_VERSION = 1


class BaselineError(Exception):
    """The baseline file cannot be read or written."""


def fingerprint(hit: Hit) -> str:
    data = "\0".join((hit.rule_id, hit.path, hit.secret))
    return hashlib.sha256(data.encode("utf-8", "surrogateescape")).hexdigest()


def load(path: Path) -> frozenset[str]:
    """The fingerprints of a baseline file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such baseline file") from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline ({exc.strerror or exc})") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BaselineError(f"{path}: not a baseline file (invalid JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("memframe_baseline") != FORMAT_VERSION:
        raise BaselineError(
            f"{path}: not a memframe baseline (expected "
            f'"memframe_baseline": {FORMAT_VERSION}; write one with --write-baseline)'
        )
    findings = data.get("findings")
    if not isinstance(findings, list):
        raise BaselineError(f"{path}: 'findings' must be a list")
    prints = set()
    for index, item in enumerate(findings):
        value = item.get("fingerprint") if isinstance(item, dict) else None
        if not isinstance(value, str):
            raise BaselineError(f"{path}: findings[{index}] has no 'fingerprint' string")
        prints.add(value)
    return frozenset(prints)


def render(hits: Iterable[Hit]) -> bytes:
    """The baseline file for ``hits`` (sorted, one entry per fingerprint)."""
    entries = {}
    for hit in hits:
        print_ = fingerprint(hit)
        entries[print_] = {"fingerprint": print_, "rule_id": hit.rule_id, "path": hit.path}
    ordered = sorted(entries.values(), key=lambda e: (e["path"], e["rule_id"], e["fingerprint"]))
    document = {"memframe_baseline": FORMAT_VERSION, "findings": ordered}
    return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


def write(path: Path, hits: Iterable[Hit]) -> None:
    try:
        path.write_bytes(render(hits))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write the baseline ({exc.strerror or exc})") from None
