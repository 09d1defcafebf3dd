"""memframe as Claude Code's hook command (``memframe hook``).

Claude Code runs the hook command on each lifecycle event and passes the event as JSON on stdin.
The adapter answers fast and never fails the host:

- ``SessionStart`` / ``UserPromptSubmit``: the memory instructions and ``MEMORY.md`` as
  ``additionalContext`` (:mod:`memframe.agents.adapter`, without importing the heavy runtime);
- ``PreToolUse`` on a write into ``<memory dir>/team/``: a secret in the content is refused
  with exit code 2 (:mod:`memframe.agents.guard`);
- ``PostToolUse``, ``Stop``, ``SubagentStop``, ``PreCompact``, ``SessionEnd``: the work is
  flagged in the per-session hook state (:mod:`memframe.agents.session_files`) and a detached worker
  (:mod:`memframe.agents.worker`) reads the new part of the transcript
  (:mod:`memframe.agents.transcript`) and drives the layers.
"""

from __future__ import annotations

from memframe.tools import FILE_WRITE_TOOLS

# Claude Code hook events the adapter acts on; any other event is answered with exit 0.
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
)
# Events whose work runs in the background worker.
WORKER_EVENTS = frozenset({"PostToolUse", "Stop", "SubagentStop", "PreCompact", "SessionEnd"})
# Tools that write a file (and so may write into team memory); Codex's apply_patch is found
# by memframe.agents.patches.
WRITE_TOOLS = FILE_WRITE_TOOLS
