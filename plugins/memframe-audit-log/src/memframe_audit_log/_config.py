"""Where the audit log goes: ``$MEMFRAME_AUDIT_LOG``, then the settings key ``audit_log.path``,
else one file per session (``<session.dir>/audit.jsonl``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ENV_VAR = "MEMFRAME_AUDIT_LOG"
SETTINGS_KEY = "audit_log"
SESSION_FILE = "audit.jsonl"


class AuditLogConfigError(ValueError):
    """The ``audit_log`` settings section has the wrong shape."""


def configured_path(
    settings: Mapping[str, Any], config_dir: Path, env: Mapping[str, str] | None = None
) -> Path | None:
    """The one audit file for every session, or ``None`` for a file per session.

    A relative ``$MEMFRAME_AUDIT_LOG`` is taken from the current directory (resolved now, so a
    later ``chdir`` does not move the log); a relative ``audit_log.path`` from the config dir,
    where the settings file lives. ``~`` is expanded in both.
    """
    env = os.environ if env is None else env
    raw = env.get(ENV_VAR, "").strip()
    if raw:
        return Path(os.path.abspath(Path(raw).expanduser()))
    section = settings.get(SETTINGS_KEY)
    if section is None:
        return None
    if not isinstance(section, Mapping):
        raise AuditLogConfigError(
            f"settings key {SETTINGS_KEY!r} must be an object such as "
            f'{{"path": "~/audit.jsonl"}}, got {type(section).__name__}'
        )
    value = section.get("path")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise AuditLogConfigError(
            f"settings key {SETTINGS_KEY}.path must be a non-empty path string, got {value!r}"
        )
    path = Path(value.strip()).expanduser()
    return path if path.is_absolute() else config_dir / path
