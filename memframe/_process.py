"""Is a process alive, and is it ours: the one answer every lock and worker check uses.

``os.kill(pid, 0)`` sends no signal; it only asks the kernel. ``ProcessLookupError`` (ESRCH)
means there is no such process; ``PermissionError`` (EPERM) means there *is* one, owned by
another user (we may not signal it). A zombie (exited, not yet reaped by its parent) holds
nothing any more and counts as gone; it is recognised on Linux through ``/proc``.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path


class Probe(enum.Enum):
    """What :func:`probe_pid` found."""

    GONE = "gone"  # no such process (or a zombie, or not a valid pid)
    OURS = "ours"  # alive, and we may signal it (the same user, or we are root)
    FOREIGN = "foreign"  # alive, owned by another user


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False  # no procfs (macOS), or it went away: the signal check's answer stands
    # "pid (comm) S ...": the state follows the last ")", since comm may hold ")" itself
    _, _, rest = stat.rpartition(b")")
    return rest[1:2] == b"Z"


def probe_pid(pid: int) -> Probe:
    """Whether ``pid`` names a live process, and whose."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return Probe.GONE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return Probe.GONE
    except PermissionError:
        return Probe.GONE if _zombie(pid) else Probe.FOREIGN
    except (OverflowError, OSError):
        return Probe.GONE  # a pid out of range
    return Probe.GONE if _zombie(pid) else Probe.OURS


def pid_alive(pid: int) -> bool:
    """Whether a process with id ``pid`` exists, whoever owns it (EPERM: it does)."""
    return probe_pid(pid) is not Probe.GONE
