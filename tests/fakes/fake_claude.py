"""A fake ``claude`` executable for the ``claude-cli`` backend tests.

:func:`install_fake_claude` writes ``<dir>/claude``, a tiny shell wrapper that ``exec``s this file
with the running interpreter. Each run of the fake:

* reads its stdin and appends one JSON line ``{"argv", "stdin", "guard"}`` to the log
  (``guard`` is the child's ``MEMFRAME_IN_FORK``);
* pops the next scripted reply: a string becomes a successful result object
  (``{"type": "result", "subtype": "success", "is_error": false, "result": <str>, "usage": ...}``);
  a dict is printed as JSON as is, except for its control keys: ``"sleep"`` (seconds to wait
  first), ``"exit"`` (exit with that status after writing ``"stderr"`` to stderr) and ``"stdout"``
  (raw text printed instead of JSON).

With no reply left it exits with status 3.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

SCRIPT_ENV = "FAKE_CLAUDE_SCRIPT"
LOG_ENV = "FAKE_CLAUDE_LOG"
CONTROL_KEYS = ("sleep", "exit", "stderr", "stdout")


def install_fake_claude(dir: Path, replies: list[dict[str, Any] | str], *, log: Path) -> Path:
    """Write an executable fake ``claude`` into ``dir`` answering ``replies`` in order; each run
    is logged to ``log`` (read it back with :func:`read_log`). Returns the executable's path."""
    dir.mkdir(parents=True, exist_ok=True)
    script = dir / "claude-script.json"
    script.write_text(json.dumps(replies), encoding="utf-8")
    exe = dir / "claude"
    exe.write_text(
        "#!/bin/sh\n"
        f"{SCRIPT_ENV}={shlex.quote(str(script))} {LOG_ENV}={shlex.quote(str(log))} "
        f'exec {shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).resolve()))} "$@"\n',
        encoding="utf-8",
    )
    exe.chmod(0o755)
    return exe


def read_log(log: Path) -> list[dict[str, Any]]:
    """The runs logged so far, oldest first."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def _success(result: str) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1234,
        "duration_api_ms": 1100,
        "num_turns": 1,
        "result": result,
        "session_id": "00000000-0000-4000-8000-000000000000",
        "total_cost_usd": 0.0123,
        "usage": {
            "input_tokens": 12,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 34,
            "service_tier": "standard",
        },
    }


def main() -> int:
    prompt = sys.stdin.read()
    log = Path(os.environ[LOG_ENV])
    with log.open("a", encoding="utf-8") as out:
        entry = {"argv": sys.argv[1:], "stdin": prompt, "guard": os.environ.get("MEMFRAME_IN_FORK")}
        out.write(json.dumps(entry) + "\n")
    script = Path(os.environ[SCRIPT_ENV])
    replies = json.loads(script.read_text(encoding="utf-8"))
    if not replies:
        sys.stderr.write("fake claude: no scripted reply left\n")
        return 3
    reply = replies.pop(0)
    script.write_text(json.dumps(replies), encoding="utf-8")
    if isinstance(reply, str):
        reply = _success(reply)
    time.sleep(float(reply.get("sleep", 0)))
    if "exit" in reply:
        sys.stderr.write(str(reply.get("stderr", "")))
        sys.stdout.write(str(reply.get("stdout", "")))
        return int(reply["exit"])
    if "stdout" in reply:
        sys.stdout.write(str(reply["stdout"]))
        return 0
    sys.stdout.write(json.dumps({k: v for k, v in reply.items() if k not in CONTROL_KEYS}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
