"""Files the way memframe writes them, for layer authors: atomic, private, locked.

- :func:`atomic_write_text` / :func:`atomic_write_bytes` / :func:`atomic_writer`: the new
  content goes to a temporary file beside the target, is fsynced and renamed over it, so a
  crash never leaves a half-written file; the file is ``0600`` unless ``mode`` or
  ``keep_mode=True`` (keep the replaced file's bits) says otherwise.
- :func:`ensure_private_dir`: a missing directory (and each missing parent) is created ``0700``;
  an existing one keeps its mode — memframe tightens only what it creates.
- :func:`exclusive_lock`: an ``flock`` across threads and processes, optionally with a wait.

::

    from pathlib import Path
    import tempfile

    from memframe.files import atomic_write_text, exclusive_lock

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "notes" / "state.json"
        with exclusive_lock(Path(tmp) / ".lock") as held:
            assert held
            atomic_write_text(target, '{"n": 1}')
        assert target.read_text() == '{"n": 1}'
"""

from __future__ import annotations

from memframe._fs import (
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    atomic_write_bytes,
    atomic_write_text,
    atomic_writer,
    ensure_private_dir,
    exclusive_lock,
)

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_writer",
    "ensure_private_dir",
    "exclusive_lock",
]
