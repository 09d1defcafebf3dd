"""Team memory sync (docs/team-sync.md): ``<memory dir>/team/`` against a team memory server.

    from memframe.team_sync import client_for_frame

    client = client_for_frame(frame)   # settings: team_sync.server / repo / token
    client.pull()                      # the server wins per key; unsafe keys refused
    result = client.push()             # only changed keys; secrets never leave the machine
    for blocked in result.blocked:
        print(blocked.key, blocked.describe())

Modules: ``settings`` (configuration), ``state`` (``.team-sync.json``, the lock, local files),
``http`` (the wire and its retries), ``client`` (pull, push, status). Names load on first use,
so the layer costs nothing (no httpx import) when team sync is not configured.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memframe.team_sync.client import (
        MAX_BODY_BYTES,
        MAX_CONFLICT_RETRIES,
        BlockedReport,
        PullResult,
        PushResult,
        StatusResult,
        TeamSyncClient,
        batches,
        client_for_frame,
    )
    from memframe.team_sync.http import MAX_TRANSIENT_RETRIES, RequestError
    from memframe.team_sync.settings import (
        SyncConfig,
        SyncConfigError,
        SyncError,
        TeamSyncSettings,
        repo_from_remote_url,
    )
    from memframe.team_sync.sync_state import STATE_FILE, SyncState

_LAZY = {
    "MAX_BODY_BYTES": "client",
    "MAX_CONFLICT_RETRIES": "client",
    "BlockedReport": "client",
    "PullResult": "client",
    "PushResult": "client",
    "StatusResult": "client",
    "TeamSyncClient": "client",
    "batches": "client",
    "client_for_frame": "client",
    "MAX_TRANSIENT_RETRIES": "http",
    "RequestError": "http",
    "SyncConfig": "settings",
    "SyncConfigError": "settings",
    "SyncError": "settings",
    "TeamSyncSettings": "settings",
    "repo_from_remote_url": "settings",
    "STATE_FILE": "sync_state",
    "SyncState": "sync_state",
}

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_CONFLICT_RETRIES",
    "MAX_TRANSIENT_RETRIES",
    "STATE_FILE",
    "BlockedReport",
    "PullResult",
    "PushResult",
    "RequestError",
    "StatusResult",
    "SyncConfig",
    "SyncConfigError",
    "SyncError",
    "SyncState",
    "TeamSyncClient",
    "TeamSyncSettings",
    "batches",
    "client_for_frame",
    "repo_from_remote_url",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memframe.team_sync' has no attribute {name!r}")
    return getattr(importlib.import_module(f"memframe.team_sync.{module}"), name)
