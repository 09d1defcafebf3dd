"""Redacting text itself (``memframe redact``): a file rewritten in place, or a stream.

The secrets are found exactly as ``memframe scan`` finds them — plain text in the windows of
:mod:`memframe.scanning.windows`, JSON lines record by record with every string decoded — and
replaced the way ``scan --redact`` writes its copies: ``[REDACTED]`` in plain text, a JSON line
with a secret re-serialised with the secret's span replaced (so it stays valid JSON). Every
secret is redacted, ``memframe:allow`` lines included: the result is meant to be safe to share.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from memframe._fs import atomic_writer
from memframe.scanner import SecretScanner
from memframe.scanning.jsonl import JsonlScanner, redaction_replacements
from memframe.scanning.redact import copy_replaced, span_replacements
from memframe.scanning.windows import scan_range

Replacement = tuple[int, int, bytes]


@dataclass(slots=True)
class Redactions:
    """What redacting one input replaces, and how many secrets that covers."""

    replacements: list[Replacement] = field(default_factory=list)
    secrets: int = 0


def find_redactions(
    scanner: SecretScanner,
    handle: BinaryIO,
    size: int,
    *,
    jsonl: bool,
    name: str = "-",
    known_rules: Collection[str] = (),
    threads: int | None = None,
) -> Redactions:
    """The replacements that redact the ``size`` bytes of ``handle`` (read from its start)."""
    if jsonl:
        scanned = JsonlScanner(
            scanner, known_rules=known_rules, threads=threads, keep_redactions=True
        )
        jsonl_result = scanned.scan(handle, path=name, uri=name)
        return Redactions(redaction_replacements(handle, jsonl_result), len(jsonl_result.hits))
    result = scan_range(
        scanner, handle, 0, size, path=name, uri=name, known_rules=known_rules, threads=threads
    )
    return Redactions(span_replacements(result.spans), len(result.hits))


def rewrite(path: Path, replacements: list[Replacement]) -> None:
    """Replace ``path`` by its redacted version, atomically, keeping its permission bits (the
    original is left as it was if anything fails)."""
    mode = path.stat().st_mode & 0o7777
    with open(path, "rb") as source, atomic_writer(path, mode=mode, tighten_dir=False) as out:
        copy_replaced(source, out, replacements)


def redact_file(
    scanner: SecretScanner,
    path: Path,
    *,
    jsonl: bool,
    name: str,
    known_rules: Collection[str] = (),
    threads: int | None = None,
) -> int:
    """Redact the secrets of ``path`` in place; returns how many there were (the file is not
    touched when there are none). :raises OSError: it cannot be read or rewritten."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        found = find_redactions(
            scanner,
            handle,
            size,
            jsonl=jsonl,
            name=name,
            known_rules=known_rules,
            threads=threads,
        )
    if found.replacements:
        rewrite(path, found.replacements)
    return found.secrets
