"""What the team memory server stores, and the contract every storage engine keeps.

A repo holds entries (key → text) with a sha256 per entry; its checksum covers every key and
entry checksum, so it changes exactly when some entry changes. ``put`` is atomic: it checks
``If-Match`` against the current checksum, the entry limit, upserts, and bumps the version in
one transaction, so an acknowledged write is never lost and never half applied.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


def entry_checksum(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def repo_checksum(entry_checksums: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for key in sorted(entry_checksums):
        digest.update(key.encode("utf-8") + b"\x00" + entry_checksums[key].encode() + b"\n")
    return "sha256:" + digest.hexdigest()


@dataclass
class RepoSnapshot:
    repo: str
    version: int
    last_modified: float
    checksum: str
    entries: dict[str, str] = field(default_factory=dict)  # empty for view=hashes
    entry_checksums: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RepoHead:
    """A repo's row without its entries: enough to answer a conditional GET."""

    version: int
    last_modified: float
    checksum: str


@dataclass(frozen=True)
class PutResult:
    checksum: str
    last_modified: float
    version: int


class StaleChecksumError(Exception):
    """``If-Match`` named a checksum that is no longer current (HTTP 412)."""

    def __init__(self, current: str | None) -> None:
        super().__init__(f"the repo changed: current checksum {current}")
        self.current = current


class TooManyEntriesError(Exception):
    """The repo would exceed its entry limit (HTTP 413)."""

    def __init__(self, max_entries: int, received: int) -> None:
        super().__init__(f"{received} entries would exceed the limit of {max_entries}")
        self.max_entries = max_entries
        self.received = received


@dataclass(frozen=True)
class TokenInfo:
    id: int
    name: str
    repos: tuple[str, ...]  # repo names, or "*" for every repo
    created: float
    revoked: bool = False

    def allows(self, repo: str) -> bool:
        return not self.revoked and ("*" in self.repos or repo in self.repos)


class Storage(Protocol):
    """A storage engine: SQLite (embedded) or PostgreSQL (several replicas)."""

    def get(self, repo: str, *, with_entries: bool = True) -> RepoSnapshot | None: ...

    def checksum(self, repo: str) -> str | None:
        """The repo's current checksum (``None``: nothing stored), without reading entries."""
        ...

    def lookup(self, token_hash: str, repo: str) -> tuple[TokenInfo | None, RepoHead | None]:
        """The token with that hash and the repo's head, in one round trip."""
        ...

    def put(
        self, repo: str, entries: Mapping[str, str], *, if_match: str | None, max_entries: int
    ) -> PutResult: ...

    def add_token(self, name: str, token_hash: str, repos: tuple[str, ...]) -> TokenInfo: ...

    def token(self, token_hash: str) -> TokenInfo | None: ...

    def tokens(self) -> list[TokenInfo]: ...

    def revoke_token(self, name_or_id: str) -> TokenInfo: ...

    def close(self) -> None: ...


def now() -> float:
    return time.time()


def hash_token(token: str) -> str:
    """Tokens are stored as their sha256 only."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
