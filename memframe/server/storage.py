"""What the team memory server stores, and the contract every storage engine keeps.

A repo holds entries (key → text) with a sha256 per entry; its checksum covers every key and
entry checksum, so it changes exactly when some entry changes. ``put`` is atomic: it checks
``If-Match`` against the current checksum, the entry limit, upserts, and bumps the version in
one transaction, so an acknowledged write is never lost and never half applied.

``put_batch`` writes several puts (a :class:`PutRequest` each) in one transaction and one
commit: the puts of one repo are applied in the order given, each seeing the ones before it,
each with an outcome of its own (a refused put changes nothing and does not disturb the
others); a request may carry its bearer token's hash, checked in that same transaction
(:class:`TokenRefusedError`). :class:`RepoState` is that in-memory application and
:func:`apply_puts` the batch's walk through it (token, then repo state), shared by the engines:
a repo is read once and written once per batch.
"""

from __future__ import annotations

import hashlib
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

_sha256 = hashlib.sha256


def entry_checksum(text: str) -> str:
    return "sha256:" + _sha256(text.encode("utf-8")).hexdigest()


def repo_checksum(entry_checksums: Mapping[str, str]) -> str:
    """sha256 over ``key NUL entry-checksum LF`` of every entry, by key (code point order)."""
    lines = "".join([f"{key}\x00{entry_checksums[key]}\n" for key in sorted(entry_checksums)])
    return "sha256:" + _sha256(lines.encode("utf-8")).hexdigest()


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
    # the request's token, when the request named one (``PutRequest.token_hash``)
    token: TokenInfo | None = None


@dataclass(frozen=True, slots=True)
class PutRequest:
    """One put of a :meth:`Storage.put_batch`. ``if_match``: the checksum the repo must be at
    (``"*"``: the repo must exist; ``None``: no condition). ``token_hash``: when given, the
    token with that hash must exist, be valid and allow ``repo`` — checked in the transaction
    that writes, so a token revoked before the commit writes nothing."""

    repo: str
    entries: Mapping[str, str]
    if_match: str | None = None
    max_entries: int = 1_000
    token_hash: str | None = None


# what put_batch hands back for one request: its result, or why it was refused
PutOutcome = PutResult | Exception


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


class TokenRefusedError(Exception):
    """The request's token is unknown or revoked (``status`` 401), or does not allow the repo
    (403; ``token`` is then the token)."""

    def __init__(self, status: Literal[401, 403], message: str, token: TokenInfo | None) -> None:
        super().__init__(message)
        self.status = status
        self.token = token


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

    def put_batch(self, requests: Sequence[PutRequest]) -> list[PutOutcome]:
        """Every request in one transaction and one commit; an outcome per request, in order
        (a :class:`PutResult`, or the exception that refused that request alone:
        :class:`StaleChecksumError`, :class:`TooManyEntriesError`, :class:`TokenRefusedError`,
        ``ValueError``). :raises: when the transaction fails, nothing of the batch is stored."""
        ...

    def iter_entries(self, *, batch: int = 2048) -> Iterator[list[tuple[str, str, str]]]:
        """Every stored entry as ``(repo, key, text)``, by repo then key, in lists of at most
        ``batch``; read-only, from one consistent snapshot."""
        ...

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


def check_token(
    tokens: Mapping[str, TokenInfo], token_hash: str, repo: str
) -> TokenInfo | TokenRefusedError:
    """The token with ``token_hash`` when it may use ``repo``, else why not."""
    token = tokens.get(token_hash)
    if token is None or token.revoked:
        return TokenRefusedError(401, "unknown or revoked token", None)
    if not token.allows(repo):
        return TokenRefusedError(403, f"this token may not use the repo {repo}", token)
    return token


class RepoState:
    """One repo during a batch: read once (its row and entry checksums), the batch's puts
    applied to it in order (:meth:`apply`), then what to write: ``writes`` (key -> text and
    checksum of the entries that changed, the last value of each) and the row (``version``,
    ``last_modified``, ``checksum``) when ``dirty``."""

    __slots__ = (
        "_keys",
        "_lines",
        "checksum",
        "checksums",
        "dirty",
        "exists",
        "last_modified",
        "version",
        "writes",
    )

    def __init__(
        self,
        row: tuple[int, float, str] | None,
        checksums: dict[str, str],
    ) -> None:
        self.exists = row is not None
        self.version, self.last_modified, self.checksum = row if row else (0, 0.0, "")
        self.checksums = checksums
        self.writes: dict[str, tuple[str, str]] = {}
        self.dirty = False
        # the repo checksum's input, kept sorted by key: a put of a few keys updates a few
        # lines instead of sorting and formatting every key again
        self._keys: list[str] | None = None
        self._lines: list[str] = []

    def _checksum(self, changed: Mapping[str, str]) -> str:
        """:func:`repo_checksum` of ``checksums`` (already updated with ``changed``)."""
        keys, lines = self._keys, self._lines
        if keys is None:
            keys = self._keys = sorted(self.checksums)
            checksums = self.checksums
            lines[:] = [f"{key}\x00{checksums[key]}\n" for key in keys]
        else:
            for key, checksum in changed.items():
                at = bisect_left(keys, key)
                line = f"{key}\x00{checksum}\n"
                if at < len(keys) and keys[at] == key:
                    lines[at] = line
                else:
                    keys.insert(at, key)
                    lines.insert(at, line)
        return "sha256:" + _sha256("".join(lines).encode("utf-8")).hexdigest()

    def apply(
        self, request: PutRequest, incoming: dict[str, str], token: TokenInfo | None
    ) -> PutResult:
        """``request`` (``incoming``: its entries' checksums) on the current state; raises
        :class:`StaleChecksumError` or :class:`TooManyEntriesError` and changes nothing."""
        current = self.checksum if self.exists else None
        if request.if_match == "*":  # any current version: only "the repo must exist"
            if current is None:
                raise StaleChecksumError(None)
        elif request.if_match is not None and request.if_match != current:
            raise StaleChecksumError(current)
        checksums = self.checksums
        changed = {k: c for k, c in incoming.items() if checksums.get(k) != c}
        total = len(checksums) + sum(1 for k in changed if k not in checksums)
        if total > request.max_entries:
            raise TooManyEntriesError(request.max_entries, total)
        if self.exists and not changed:
            return PutResult(self.checksum, self.last_modified, self.version, token)
        checksums.update(changed)
        entries = request.entries
        for key, checksum in changed.items():
            self.writes[key] = (entries[key], checksum)
        self.version += 1
        self.last_modified = now()
        self.checksum = self._checksum(changed)
        self.exists = self.dirty = True
        return PutResult(self.checksum, self.last_modified, self.version, token)


def apply_puts(
    requests: Sequence[PutRequest],
    indices: Iterable[int],
    incoming: Sequence[dict[str, str]],
    tokens: Mapping[str, TokenInfo],
    state_of: Callable[[str], RepoState],
    outcomes: list[PutOutcome | None],
) -> None:
    """Apply ``requests[i]`` for each ``i`` of ``indices``, in that order, and set
    ``outcomes[i]``: its token checked against ``tokens`` (the batch's tokens, read in its
    transaction), then its puts applied to ``state_of(repo)`` (``incoming[i]``: its entries'
    checksums). A refused put (token, ``If-Match``, entry limit) changes nothing; the engine
    then writes each state's ``writes`` and row."""
    for index in indices:
        request = requests[index]
        token: TokenInfo | None = None
        if request.token_hash is not None:
            checked = check_token(tokens, request.token_hash, request.repo)
            if isinstance(checked, TokenRefusedError):
                outcomes[index] = checked
                continue
            token = checked
        try:
            outcomes[index] = state_of(request.repo).apply(request, incoming[index], token)
        except (StaleChecksumError, TooManyEntriesError) as exc:
            outcomes[index] = exc
