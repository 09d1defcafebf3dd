"""Team sync settings: the ``team_sync`` object of settings.json, the environment and overrides.

    {"team_sync": {"server": "https://memory.example.com", "repo": "acme/widgets",
                   "token": "…", "enabled": true, "debounce_seconds": 2, "timeout": 10}}

``server`` and ``token`` may come from ``MEMFRAME_TEAM_SERVER`` / ``MEMFRAME_TEAM_TOKEN`` (and
``repo`` from ``MEMFRAME_TEAM_REPO``); when ``repo`` is not set it is derived from the project's
git remote ``origin``. The token is never logged, printed or written anywhere by memframe.

A credential is bound to where it came from: the token of the settings file is sent only to the
server the settings file names. A server from the environment (or ``--server``) that is not that
one needs its token from the environment (or ``--token``) too; otherwise the configuration is
refused, so a variable set behind the user's back cannot collect the user's token.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memframe.config import ConfigError
from memframe.layer_settings import at_least, settings_from
from memframe.team_keys import REPO as REPO  # re-exported: the rule lives in team_keys
from memframe.team_keys import is_repo

SECTION = "team_sync"
ENV_SERVER = "MEMFRAME_TEAM_SERVER"
ENV_REPO = "MEMFRAME_TEAM_REPO"
ENV_TOKEN = "MEMFRAME_TEAM_TOKEN"
# The server's documented default limit of entries per repo (``memframe serve --max-entries``).
DEFAULT_MAX_ENTRIES = 1_000
# The largest answer accepted from the server, decoded (gzip included), in bytes.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
FROM_SETTINGS = "settings"
FROM_ARGUMENT = "argument"
_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?[^:/]+:(?!//)(?P<path>.+)$")


class SyncError(Exception):
    """Team sync could not do what was asked (see the message)."""


class SyncConfigError(ConfigError, SyncError):
    """Team sync is not configured, or its settings are wrong."""


@dataclass(frozen=True)
class SyncConfig:
    """Everything a sync client needs, resolved and checked. ``token`` is kept out of ``repr``."""

    server: str  # base URL without a trailing slash
    repo: str
    token: str = field(repr=False)
    timeout: float = 10.0
    backoff_base: float = 0.5
    max_retry_wait: float = 30.0
    repo_source: str = "settings"
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    @property
    def sync_deadline(self) -> float:
        """Seconds a sync without a budget of its own may take: as long as another sync waits
        for the lock (``max(60, 12 * timeout)``), so none holds it longer than that."""
        return max(60.0, self.timeout * 12)

    def identity(self) -> str:
        """A digest of server, repo and token: a new token or server counts as a change."""
        digest = hashlib.sha256()
        for part in (self.server, self.repo, hashlib.sha256(self.token.encode()).hexdigest()):
            digest.update(part.encode("utf-8") + b"\x00")
        return digest.hexdigest()


@dataclass(frozen=True)
class TeamSyncFileSettings:
    """``team_sync`` in settings.json, as written there (the keys it may hold)."""

    server: str | None = None
    repo: str | None = None
    token: str | None = field(default=None, repr=False)
    enabled: bool = True
    debounce_seconds: float = 2.0
    timeout: float = field(default=10.0, metadata=at_least(0.001))
    backoff_base: float = 0.5
    max_retry_wait: float = 30.0
    max_entries: int = field(default=DEFAULT_MAX_ENTRIES, metadata=at_least(1))
    max_response_bytes: int = field(default=DEFAULT_MAX_RESPONSE_BYTES, metadata=at_least(1024))


@dataclass(frozen=True)
class TeamSyncSettings(TeamSyncFileSettings):
    """``team_sync`` in settings.json, with the environment applied, and where the server and
    the token came from (``settings``, ``env MEMFRAME_TEAM_SERVER``…)."""

    server_source: str | None = None
    token_source: str | None = None
    settings_server: str | None = None  # the server the settings file names

    @classmethod
    def from_settings(cls, raw: Any, env: Mapping[str, str] | None = None) -> TeamSyncSettings:
        """The checked settings; ``MEMFRAME_TEAM_SERVER`` / ``_REPO`` / ``_TOKEN`` win.

        :raises SyncConfigError: an unknown key or a wrong value (the message names it).
        """
        env = os.environ if env is None else env
        try:
            file = settings_from(TeamSyncFileSettings, raw, SECTION)
        except ConfigError as exc:
            raise SyncConfigError(str(exc)) from exc

        def pick(var: str, configured: str | None) -> tuple[str | None, str | None]:
            from_env = env.get(var, "").strip()
            if from_env:
                return from_env, f"env {var}"
            value = (configured or "").strip() or None
            return value, FROM_SETTINGS if value else None

        server, server_source = pick(ENV_SERVER, file.server)
        token, token_source = pick(ENV_TOKEN, file.token)
        repo, _ = pick(ENV_REPO, file.repo)
        values = {f.name: getattr(file, f.name) for f in fields(TeamSyncFileSettings)}
        return cls(
            **{**values, "server": server, "repo": repo, "token": token},
            server_source=server_source,
            token_source=token_source,
            settings_server=(file.server or "").strip() or None,
        )

    @property
    def configured(self) -> bool:
        """A server is set (the one thing that turns team sync on)."""
        return bool(self.server)

    def resolve(
        self,
        project_dir: Path | None = None,
        *,
        server: str | None = None,
        repo: str | None = None,
        token: str | None = None,
    ) -> SyncConfig:
        """The checked configuration; ``server``/``repo``/``token`` override the settings.

        :raises SyncConfigError: something is missing or malformed (the message names it).
        """
        server_source = FROM_ARGUMENT if server else self.server_source
        token_source = FROM_ARGUMENT if token else self.token_source
        server = server or self.server
        token = token or self.token
        repo_source = "settings"
        if repo:
            repo_source = "argument"
        elif self.repo:
            repo = self.repo
        elif project_dir is not None:
            repo = repo_from_git(project_dir)
            repo_source = "git remote origin"
        missing = []
        if not server:
            missing.append(f"the server (settings '{SECTION}.server', {ENV_SERVER} or --server)")
        if not repo:
            missing.append(
                f"the repo (settings '{SECTION}.repo', {ENV_REPO} or --repo; it could not be "
                "derived from the project's git remote 'origin')"
            )
        if not token:
            missing.append(f"the token (settings '{SECTION}.token', {ENV_TOKEN} or --token)")
        if missing or not server or not repo or not token:
            raise SyncConfigError("team sync is not configured: missing " + "; ".join(missing))
        if not is_repo(repo):
            raise SyncConfigError(
                f"team sync: repo must look like owner/name (letters, digits, '.', '_', '-'), "
                f"got {repo[:210]!r}"
            )
        if any(ch.isspace() for ch in token) or not token.isprintable():
            raise SyncConfigError("team sync: the token contains spaces or control characters")
        url = normalise_server(server)
        if token_source == FROM_SETTINGS and server_source != FROM_SETTINGS:
            named = self.settings_server
            if named is None or not _same_server(named, url):
                raise SyncConfigError(
                    f"team sync: the token of the settings file is sent only to the server the "
                    f"settings file names ({named or 'none'}); the server {url} comes from "
                    f"{_described(server_source)}: give its token with {ENV_TOKEN} or --token"
                )
        return SyncConfig(
            server=url,
            repo=repo,
            token=token,
            timeout=self.timeout,
            backoff_base=self.backoff_base,
            max_retry_wait=self.max_retry_wait,
            repo_source=repo_source,
            max_entries=self.max_entries,
            max_response_bytes=self.max_response_bytes,
        )


def _described(source: str | None) -> str:
    if source == FROM_ARGUMENT:
        return "--server"
    return source.removeprefix("env ") if source else "nowhere"


def _same_server(named: str, url: str) -> bool:
    """``named`` (the settings file's server) is ``url`` once normalised; a malformed one is
    not."""
    try:
        return normalise_server(named) == url
    except SyncConfigError:
        return False


def normalise_server(url: str) -> str:
    """``url`` checked (http or https, a host, no credentials, query or fragment), without a
    trailing slash."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise SyncConfigError(f"team sync: the server URL {url!r} is malformed: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SyncConfigError(
            f"team sync: the server must be an http:// or https:// URL, got {url!r}"
        )
    if parts.username or parts.password:
        raise SyncConfigError(
            "team sync: the server URL must not contain credentials; set the token instead"
        )
    if parts.query or parts.fragment:
        raise SyncConfigError(
            f"team sync: the server URL must not have a query or fragment, got {url!r}"
        )
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def repo_from_remote_url(url: str) -> str | None:
    """``owner/name`` from a git remote URL (https, ssh, scp-like ``git@host:owner/name.git``,
    file), or ``None``."""
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        path = urlsplit(url).path
    else:
        match = _SCP_LIKE.match(url)
        path = match.group("path") if match else url
    segments = [s for s in path.replace("\\", "/").split("/") if s]
    if len(segments) < 2:
        return None
    name = segments[-1].removesuffix(".git")
    repo = f"{segments[-2]}/{name}"
    return repo if is_repo(repo) else None


def repo_from_git(project_dir: Path) -> str | None:
    """The repo named by the git remote ``origin`` of ``project_dir``, or ``None``."""
    try:
        done = subprocess.run(
            ["git", "-C", str(project_dir), "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return repo_from_remote_url(done.stdout)
