"""``memframe hook``: one Claude Code hook event in, the answer out, fast.

Per event:

- ``SessionStart``: the memory prompt (the memdir layer's instructions and ``MEMORY.md`` cut to
  its limits) as ``additionalContext``; a ``systemMessage`` when the index is over a limit.
- ``UserPromptSubmit``: the memory prompt again only when ``MEMORY.md`` changed since it was
  last given to this session (e.g. a memory was saved in the background), or was never given;
  then the memories relevant to the prompt (BM25) that this session has not been shown yet.
- ``PreToolUse``: a write whose secret would land in team memory is refused (exit 2, the reason
  on stderr); every other call passes at once.
- ``PostToolUse``, ``Stop``, ``SubagentStop``, ``PreCompact``, ``SessionEnd``: flag the work in
  the session's hook state and start the background worker when none runs; answer nothing.
- anything else: nothing.

Nothing here imports the runtime (frame, layers, pluggy, the native extension) except the
secret scanner for a write into team memory. Every failure is logged to
``<memory base>/logs/hook.log`` and answered with exit 0: memframe never breaks the host.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from memframe.agents import EVENTS, WORKER_EVENTS
from memframe.agents.logfile import write_log
from memframe.agents.protocol import (
    EXIT_BLOCK,
    EXIT_OK,
    HookInput,
    ProtocolError,
    context_output,
    decode_input,
    encode_output,
    message_output,
    parse_input,
    read_input,
)

if TYPE_CHECKING:
    from memframe.agents.session_files import HookPaths
    from memframe.config import Config, RefusedVariable

FORK_GUARD_ENV = "MEMFRAME_IN_FORK"  # as memframe.models.FORK_GUARD_ENV (not imported: slow)
PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"


def fallback_home() -> Path:
    """The memory base when the configuration cannot be read (for the log only)."""
    configured = os.environ.get("MEMFRAME_HOME", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".memframe"


class Answer:
    """What the hook process writes and returns."""

    def __init__(self, code: int = EXIT_OK, output: dict[str, Any] | None = None) -> None:
        self.code = code
        self.output = output
        self.stderr: str | None = None


def run(stdin: BinaryIO, stdout: BinaryIO, stderr: TextIO, agent: str = "claude-code") -> int:
    """The hook command's whole life: read, answer, exit code. Never raises. ``agent`` names
    the host whose contract is spoken (:mod:`memframe.agents.contracts`; Claude Code's by
    default)."""
    if os.environ.get(FORK_GUARD_ENV, "").strip():
        return EXIT_OK  # one of memframe's own model subprocesses: no memory work inside it
    home = None
    hook: HookInput | None = None
    try:
        if agent == "claude-code":
            hook = parse_input(read_input(stdin))
        else:
            from memframe.agents.contracts import translate

            hook = translate(agent, decode_input(read_input(stdin)))
        if hook.event not in EVENTS:
            return EXIT_OK  # an event memframe does not handle (or none): nothing to do
        from memframe.config import load_config

        refused = refuse_agent_env(hook)
        config = load_config()
        home = config.home
        answer = handle(hook, config)
        if refused:
            _report_refused(refused, hook, config.home, answer)
    except ProtocolError as exc:
        write_log(home or fallback_home(), "WARNING", f"hook: {exc}")
        return EXIT_OK
    except Exception as exc:
        import traceback

        write_log(home or fallback_home(), "ERROR", f"hook: {traceback.format_exc()}")
        starting = hook is not None and hook.event == "SessionStart"
        answer = _config_problem(exc) if starting else Answer()
    if hook is not None and hook.agent != "claude-code":
        from memframe.agents.contracts import render

        answer = render(hook, answer)
    try:
        if answer.stderr:
            stderr.write(answer.stderr + "\n")
            stderr.flush()
        if answer.output is not None:
            stdout.write(encode_output(answer.output))
            stdout.flush()
    except OSError:
        return EXIT_OK  # the host closed our pipes: nothing more to say
    return answer.code


def refuse_agent_env(hook: HookInput) -> list[RefusedVariable]:
    """Drop the memframe variables a project's Claude Code settings set (their ``env`` key
    reaches this process): only the user may move memory or name the team server. Applies to
    this process and to the worker it starts."""
    from memframe.config import refuse_project_env

    starts: list[Path] = []
    with contextlib.suppress(OSError):  # the directory the host started us in may be gone
        starts.append(Path.cwd())
    for given in (hook.cwd, getattr(hook, "project_dir", None)):
        if isinstance(given, str) and os.path.isabs(given):
            starts.append(Path(given))
    pinned = os.environ.get(PROJECT_DIR_ENV, "").strip()
    if pinned and os.path.isabs(pinned):
        starts.append(Path(pinned))
    return refuse_project_env(starts)


def refusal_message(refused: list[RefusedVariable]) -> str:
    names = ", ".join(v.describe() for v in refused)
    return (
        f"memframe: ignored {names}: a project's settings may not set memframe's variables "
        "(set them in your shell or your user settings)"
    )


def _report_refused(
    refused: list[RefusedVariable], hook: HookInput, home: Path, answer: Answer
) -> None:
    """Log the refusal; at ``SessionStart`` also tell the user (a ``systemMessage``)."""
    message = refusal_message(refused)
    write_log(home, "WARNING", f"hook {hook.event}: {message}")
    if hook.event != "SessionStart" or answer.code != EXIT_OK:
        return
    output = answer.output if answer.output is not None else {}
    earlier = output.get("systemMessage")
    output["systemMessage"] = f"{earlier}\n{message}" if earlier else message
    answer.output = output


def _config_problem(exc: Exception) -> Answer:
    from memframe.config import ConfigError

    if isinstance(exc, ConfigError):
        return Answer(output=message_output(f"memframe: memory is off: {exc}"))
    return Answer()


def project_dir(hook: HookInput) -> Path:
    """The session's project: ``$CLAUDE_PROJECT_DIR`` (set by Claude Code for hook commands,
    stable for the whole session), else the event's ``cwd`` (which follows the agent's ``cd``),
    else the current directory. Another agent's own project (Cursor's workspace root,
    ``$GEMINI_PROJECT_DIR``) comes first for that agent."""
    if hook.project_dir and os.path.isabs(hook.project_dir):
        return Path(hook.project_dir)
    if hook.agent != "claude-code":
        return Path(hook.cwd) if hook.cwd else Path.cwd()
    pinned = os.environ.get(PROJECT_DIR_ENV, "").strip()
    if pinned and os.path.isabs(pinned):
        return Path(pinned)
    return Path(hook.cwd) if hook.cwd else Path.cwd()


def handle(hook: HookInput, config: Config) -> Answer:
    project = project_dir(hook)
    if hook.event == "PreToolUse":
        return _pre_tool_use(hook, config, project)
    if hook.event == "SessionStart":
        return _session_start(hook, config, project)
    if hook.event == "UserPromptSubmit":
        return _user_prompt(hook, config, project)
    if hook.event in WORKER_EVENTS:
        return _schedule(hook, config, project)
    return Answer()


def _paths(hook: HookInput, config: Config, project: Path) -> HookPaths | None:
    """The session's hook files; ``None`` (and a log line) without a usable session id."""
    from memframe.agents.session_files import HookPaths, valid_session_id

    try:
        session_id = valid_session_id(hook.session_id)
    except ValueError as exc:
        write_log(config.home, "WARNING", f"hook {hook.event}: {exc}")
        return None
    return HookPaths.for_session(config.home, project, session_id)


# -- context -------------------------------------------------------------------------------------


def _limit_message(warnings: list[str]) -> str | None:
    if not warnings:
        return None
    reasons = "; ".join(w.removeprefix("> WARNING: ") for w in warnings)
    return f"memframe: {reasons} Consolidate it with `memframe dream --now`."


def _session_start(hook: HookInput, config: Config, project: Path) -> Answer:
    from memframe.agents.memory import memory_context, memory_location

    context = memory_context(memory_location(project, config))
    paths = _paths(hook, config, project)
    text = context.text
    if paths is not None:
        from memframe.agents.session_files import locked_state

        with locked_state(paths) as state:
            state["context"] = {"fingerprint": context.fingerprint, "at": time.time()}
        if hook.source in ("compact", "resume"):
            notes = _session_notes(paths.session_dir, config)
            if notes:
                text = f"{text}\n\n{notes}" if text else notes
    event = "SessionStart"
    return Answer(output=context_output(event, text, _limit_message(context.warnings)))


def _session_notes(session_dir: Path, config: Config) -> str | None:
    """After a compaction (or on resume) the session's notes go back into the context: what
    was being done, files, errors and fixes, as the session-memory layer last wrote them."""
    from memframe.layers.session_memory import NOTES_DIR, NOTES_FILE
    from memframe.session_memory import load_template

    try:
        notes = (session_dir / NOTES_DIR / NOTES_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not notes.strip() or load_template(config.config_dir).is_empty(notes):
        return None
    return f'<session-notes source="memframe">\n{notes.strip()}\n</session-notes>'


def _user_prompt(hook: HookInput, config: Config, project: Path) -> Answer:
    from memframe.agents.memory import (
        index_fingerprint,
        memory_context,
        memory_location,
        relevant_memories,
    )

    paths = _paths(hook, config, project)
    if paths is None:
        return Answer()
    from memframe.agents.session_files import locked_state

    location = memory_location(project, config)
    parts: list[str] = []
    with locked_state(paths) as state:
        given = state.get("context")
        shown = isinstance(given, dict)
        known = given.get("fingerprint") if isinstance(given, dict) else None
        if known != index_fingerprint(location.path.resolve()):
            context = memory_context(location)
            state["context"] = {"fingerprint": context.fingerprint, "at": time.time()}
            intro = "The memory index changed since it was last shown:\n\n" if shown else ""
            parts.append(intro + context.text)
        relevant = relevant_memories(location, config, hook.prompt, state)
        if relevant:
            parts.append(relevant)
    if not parts:
        return Answer()
    return Answer(output=context_output("UserPromptSubmit", "\n".join(parts)))


# -- the team-memory guard -----------------------------------------------------------------------


def _pre_tool_use(hook: HookInput, config: Config, project: Path) -> Answer:
    from memframe.agents import WRITE_TOOLS
    from memframe.agents.patches import find_patch

    if hook.tool_name not in WRITE_TOOLS and find_patch(hook.tool_name, hook.tool_input) is None:
        return Answer()
    from memframe.agents.guard import check_write, refusal
    from memframe.agents.memory import memory_location
    from memframe.memdir.files import TEAM_DIR

    team_dir = memory_location(project, config).path / TEAM_DIR
    cwd = Path(hook.cwd) if hook.cwd else project  # where a relative file_path starts
    try:
        rules = check_write(hook.tool_name, hook.tool_input, cwd, team_dir, config)
    except Exception:
        import traceback

        write_log(config.home, "ERROR", f"hook PreToolUse: {traceback.format_exc()}")
        from memframe.agents.logfile import log_path

        return Answer(
            output=message_output(
                "memframe: could not check this write into team memory for secrets (see "
                f"{log_path(config.home)}); team sync still scans before pushing."
            )
        )
    if not rules:
        return Answer()
    write_log(config.home, "WARNING", f"hook PreToolUse: refused a secret ({', '.join(rules)})")
    answer = Answer(EXIT_BLOCK)
    answer.stderr = refusal(rules)
    return answer


# -- background work -----------------------------------------------------------------------------


def _schedule(hook: HookInput, config: Config, project: Path) -> Answer:
    paths = _paths(hook, config, project)
    if paths is None:
        return Answer()
    from memframe.agents.session_files import add_pending, locked_state, worker_running

    entry: dict[str, Any] = {"event": hook.event, "at": time.time()}
    for key in ("transcript_path", "reason", "trigger", "tool_name"):
        value = getattr(hook, key)
        if value is not None:
            entry[key] = value
    with locked_state(paths) as state:
        add_pending(state, entry)
        if not worker_running(state):
            pid = spawn_worker(paths.session_id, project, hook.transcript_path)
            state["worker"] = {"pid": pid, "started_at": time.time(), "by": hook.event}
    return Answer()


def spawn_worker(session_id: str, project: Path, transcript: str | None) -> int:
    """Start ``memframe hook-worker`` detached: its own session, stdio on /dev/null, no
    inherited descriptors (the host waits for our stdout to close, not for the worker)."""
    import subprocess

    argv = [sys.executable, "-m", "memframe", "hook-worker", "--session", session_id]
    argv += ["--cwd", str(project)]
    if transcript:
        argv += ["--transcript", transcript]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,
        cwd=str(project) if project.is_dir() else None,
    )
    process.returncode = 0  # detached on purpose: no "still running" warning at exit
    return process.pid
