"""What tool calls and their results say happened, read from the text alone (no model).

Pure functions for the offline session notes: whether a result is a failure and its meaningful
message, whether the user rejected the call, the command family a shell command belongs to (so a
later success of the same kind can be matched with an error), and the outcomes worth keeping:
test counts, commits, pushes, pull requests created and a clean working tree. The shapes are the
ones shells, git, gh and the common test runners print, and the ones agent hosts wrap results in
(Claude Code's ``Exit code N`` first line and ``<tool_use_error>`` tags, Codex's ``Exit code: N``
/ ``Process exited with code N`` headers and JSON ``metadata.exit_code``).
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import shlex
from dataclasses import dataclass

import orjson

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TAGS = re.compile(r"</?[a-z_-]+>")
_EXIT = re.compile(
    r"^\s*(?:exit code:?|exit status:?|(?:process|command) exited with code|exited with code"
    r"|command failed with exit code)\s*(-?\d+)\b",
    re.IGNORECASE | re.MULTILINE,
)
# Lines a host or a runner prints around the real output: never the message of an error.
_NOISE = re.compile(
    r"^(?:exit code:?\s*-?\d+|exit status:?\s*-?\d+|(?:process|command) exited with code\s*-?\d+"
    r"|wall time:.*|output:|chunk id:.*|original token count:.*|total output lines:.*"
    r"|shell cwd was reset to .*|traceback \(most recent call last\):|file \".*\", line \d+.*"
    r"|[\s=~^*#_+-]*|\[(?:stdout|stderr)\]|error: process completed with exit code.*"
    r"|(?:g?make|ninja)(?:\[\d+\])?: \*\*\* .*)$",
    re.IGNORECASE,
)
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR)\s+\S+(?:\s+-\s+.+)?$")
_EXCEPTION = re.compile(
    r"^(?:E\s+)?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b"
    r"(?::\s*.*)?$"
)
_TOOL_ERROR = re.compile(
    r"^(?:\S+:\d+(?::\d+)?:?\s+)?(?:error(?:\[\w+\])?|fatal|panic)\b\s*:?"
    r"|\berror\s+TS\d+:|^npm (?:ERR!|error)|^thread '.*' panicked|^\S+\(\d+,\d+\): error",
    re.IGNORECASE,
)
# A diagnostic located in a file: "src/a.py:3:1: F401 …", "main.c:12: warning: …".
_LOCATED = re.compile(r"^[\w./\\~-]+\.\w+:\d+(?::\d+)?:?\s+\S")
_TEST_FAILURE = re.compile(
    r"^(?:FAIL\s+\S+|--- FAIL:|test result: FAILED|\s*\d+ (?:failed|failing)\b|Tests?:.*\d+ failed)"
)
_TROUBLE = re.compile(
    r"command not found|no such file|permission denied|not found|cannot|can't|could not"
    r"|couldn't|failed|failure|invalid|missing|denied|refused|unable|does not exist|timed out"
    r"|not allowed|conflict|rejected|unknown|\berrors?\b"
    r"|nothing (?:to commit|added to commit)|no changes added to commit",
    re.IGNORECASE,
)
_REJECTED = re.compile(
    r"^(?:the user doesn't want to (?:proceed with this tool use|take this action)"
    r"|.*\brejected by (?:the )?user\b)",
    re.IGNORECASE,
)
# Codex's header above a command's output ("Chunk ID: …\nWall time: …\nProcess exited with code
# 0\nOriginal token count: …\nOutput:\n…"; older: "Exit code: 0\nWall time: …\nOutput:\n…"):
# the output is what follows it, and only the header says how the command exited.
_CODEX_HEADER = re.compile(
    r"\A\s*(?:Command: [^\n]*\n)?(?:(?:Chunk ID|Wall time|Original token count|Total output lines"
    r"|Exit code|Process exited with code|Process running with session ID)\b[^\n]*\n)+Output:\n",
    re.IGNORECASE,
)
# What an edit tool answers when the edit did not happen although no error flag was set (Codex's
# apply_patch answers with text).
_EDIT_FAILED = re.compile(
    r"^\s*(?:apply_patch verification failed|patch rejected|failed to apply patch|invalid patch"
    r"|error:)",
    re.IGNORECASE,
)
_INTERRUPTED = re.compile(r"^\[Request interrupted by user", re.IGNORECASE)
_FEEDBACK = re.compile(r"the user said:\s*(.+)", re.IGNORECASE | re.DOTALL)

# Test runners' summary lines.
_COUNT = re.compile(
    r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|ignored|passing|failing|pending)\b"
)
_SUMMARY = re.compile(r"\d+ (?:passed|failed|passing|failing)\b")
_CARGO = re.compile(r"^test result: (?:ok|FAILED)\. .*$", re.MULTILINE)
_MOCHA = re.compile(r"^\s*(\d+) (passing|failing|pending)\b", re.MULTILINE)
_GO_PACKAGE = re.compile(r"^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))", re.MULTILINE)
_COUNT_ORDER = ("passed", "failed", "errors", "skipped", "ignored", "xfailed", "xpassed")
_COUNT_WORD = {
    "passing": "passed",
    "failing": "failed",
    "error": "errors",
    "pending": "skipped",
}

# git and gh.
_COMMIT = re.compile(
    r"^\[(?P<branch>[^\]\n]+?)(?: \(root-commit\))? (?P<hash>[0-9a-f]{7,40})\] (?P<subject>.+)$",
    re.MULTILINE,
)
_PUSH_TO = re.compile(r"^To (?P<remote>\S+)\s*$")
_PUSH_REF = re.compile(
    r"^\s*[+*=-]?\s*(?:[0-9a-f]{7,40}\.\.\.?[0-9a-f]{7,40}|\[new (?:branch|tag|reference)\])"
    r"\s+(?P<src>\S+)\s+->\s+(?P<dst>\S+)"
)
_PULL_URL = re.compile(
    r"https://(?:github\.com/[\w.-]+/[\w.-]+/pull/\d+|gitlab\.[\w.-]+/\S+?/-/merge_requests/\d+)"
)
_CREATES_PULL = re.compile(r"\b(?:pr|mr)\s+create\b|create_(?:pull|merge)_request", re.IGNORECASE)
_CLEAN = re.compile(r"\b(?:working tree|working directory) clean\b")

# Programs whose first argument is a subcommand that names what was done.
SUBCOMMAND_PROGRAMS = frozenset(
    {
        "apt", "apt-get", "brew", "bun", "bundle", "cargo", "composer", "conda", "deno",
        "docker", "docker-compose", "dotnet", "flutter", "gh", "git", "go", "gradle", "gradlew",
        "helm", "just", "kubectl", "make", "mix", "mvn", "npm", "nx", "pip", "pip3", "pnpm",
        "podman", "poetry", "pre-commit", "rake", "ruff", "rustup", "swift", "systemctl",
        "terraform", "tox", "nox", "turbo", "uv", "yarn", "dart", "hatch", "pdm",
    }
)  # fmt: skip
# Ways of running a program through another one: the family is the program run.
_RUNNERS = {
    "npx": 1, "pnpx": 1, "bunx": 1, "uvx": 1, "sudo": 1, "time": 1, "nice": 1, "nohup": 1,
    "env": 1, "command": 1, "exec": 1, "timeout": 2, "xvfb-run": 1,
}  # fmt: skip
_RUN_SUBCOMMANDS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye", "conda"})
_INTERPRETERS = frozenset({"python", "node", "ruby", "bash", "sh", "zsh", "deno", "bun", "perl"})
_SEPARATORS = frozenset({"&&", "||", ";", "&", ";;", "\n", "(", ")"})
# Programs that only feed the next stage of a pipeline (``yes | npx create-next-app``,
# ``echo y | apt-get install …``, ``cat patch | git apply``): the command is what they feed.
_FEEDERS = frozenset({"yes", "echo", "printf", "cat"})
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1([^\n]*)\n.*?\n\s*\2[ \t]*(?=\n|$)", re.DOTALL)
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SETUP = frozenset({"cd", "pushd", "popd", "export", "source", ".", "set", "unset", "alias"})
# Commands that only look: never the fix of an error, never an outcome of their own.
READ_ONLY_PROGRAMS = frozenset(
    {
        "ls", "cat", "head", "tail", "less", "more", "grep", "rg", "ag", "find", "fd", "pwd",
        "echo", "printf", "which", "type", "wc", "tree", "stat", "file", "du", "df", "printenv",
        "date", "whoami", "jq", "awk", "sort", "uniq", "diff", "cmp", "test", "[",
        "true", "sleep", "ps", "env", "uname", "id", "hostname", "realpath", "dirname",
        "basename", "readlink", "cut", "tr", "column", "nl", "od", "xxd", "hexdump", "strings",
    }
)  # fmt: skip
READ_ONLY_GIT = frozenset(
    {"status", "diff", "log", "show", "branch", "remote", "blame", "rev-parse", "ls-files",
     "describe", "shortlog", "reflog", "config", "grep", "fetch"}
)  # fmt: skip
# A non-zero exit that only means "nothing matched" / "they differ".
_QUIET_EXIT_ONE = frozenset({"grep", "rg", "ag", "diff", "cmp", "test", "[", "find", "fd"})


def clean(text: str) -> str:
    """Result text without terminal colour codes and host tags (``<tool_use_error>``)."""
    return _TAGS.sub("", _ANSI.sub("", text))


def exit_code(text: str) -> int | None:
    """The exit status a host wrote into a shell result, if it did."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            metadata = data.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            if isinstance(code, int) and not isinstance(code, bool):
                return code
    header = _CODEX_HEADER.match(text)
    match = _EXIT.search(header.group(0) if header else text[:2000])
    return int(match.group(1)) if match else None


def output_text(text: str) -> str:
    """The output of a shell result: the ``output`` of a JSON envelope, what follows Codex's
    ``… Output:`` header, else the text."""
    stripped = text.lstrip()
    if stripped.startswith("{") and '"output"' in stripped:
        try:
            data = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return text
        if isinstance(data, dict) and isinstance(data.get("output"), str):
            return str(data["output"])
    header = _CODEX_HEADER.match(text)
    return text[header.end() :] if header else text


def edit_failed(text: str, is_error: bool) -> bool:
    """Whether an edit (``Edit``, ``apply_patch`` …) failed: the host's error flag, a non-zero
    exit status in the result, or an answer that says the patch did not apply."""
    if is_error:
        return True
    code = exit_code(text)
    if code is not None:
        return code != 0
    return _EDIT_FAILED.match(clean(output_text(text))) is not None


def rejection(text: str) -> tuple[str, str] | None:
    """``("rejected" | "interrupted", what the user said)`` when the user refused the call or
    stopped it. (A call the permission rules refused is a failure: nobody spoke.)"""
    stripped = clean(text).strip()
    if _INTERRUPTED.match(stripped):
        return "interrupted", ""
    if _REJECTED.match(stripped):
        feedback = _FEEDBACK.search(stripped)
        return "rejected", " ".join(feedback.group(1).split()) if feedback else ""
    return None


def _meaningful(text: str) -> list[str]:
    lines = []
    for raw in clean(output_text(text)).splitlines():
        line = raw.strip()
        if line and not _NOISE.match(line):
            lines.append(line)
    return lines


def error_message(text: str) -> str:
    """The informative line of a failed result: a failed test, the exception a traceback ends
    with, a compiler's or tool's ``error:`` line … — never a bare ``Exit code N``. When no line
    looks like an error, the last one (where a program says how it ended)."""
    lines = _meaningful(text)
    if not lines:
        code = exit_code(text)
        return f"exit code {code}" if code is not None else ""
    return _informative(lines, plain_last=True)


def _informative(lines: list[str], *, plain_last: bool) -> str:
    ranked: list[tuple[int, int]] = []  # (score, index)
    for index, line in enumerate(lines):
        if _FAILED_TEST.match(line):
            score = 5
        elif _EXCEPTION.match(line):
            score = 4
        elif _TOOL_ERROR.search(line) or _LOCATED.match(line):
            score = 3
        elif _TEST_FAILURE.match(line):
            score = 2
        elif _TROUBLE.search(line):
            score = 1
        else:
            score = 0
        ranked.append((score, index))
    best = max(score for score, _ in ranked)
    chosen = [index for score, index in ranked if score == best]
    # a traceback ends with its exception: take the last one; otherwise the first such line
    index = chosen[-1] if best == 4 or (best == 0 and plain_last) else chosen[0]
    message = re.sub(r"^E\s{2,}", "", lines[index])
    if message.endswith(":") and index + 1 < len(lines):  # "… the following issue:" + the issue
        message += " " + re.sub(r"^E\s{2,}", "", lines[index + 1])
    others = sum(1 for i in chosen if i != index and _FAILED_TEST.match(lines[i]))
    if best == 5 and others:
        message += f" (and {others} more)"
    return message


# -- hooks ---------------------------------------------------------------------------------------

# What Claude Code writes into the user's turn when a hook blocks or stops something:
#   "Stop hook feedback:\n[<command>]: <reason>" (a blocking Stop / SubagentStop hook),
#   "PreToolUse:Bash hook blocking error from command: \"<command>\": <reason>",
#   "Stop hook blocking error from command \"<command>\": <reason>" (an async hook),
#   "Stop hook stopped continuation: <reason>",
#   "Operation stopped by hook: <reason>" (a hook that stopped the prompt or the turn).
# They come as their own (``isMeta``) user record, or inside a ``<system-reminder>``.
_HOOK = re.compile(
    r"^[ \t]*(?:(?P<event>\w+)(?::(?P<matcher>[\w|*.-]+))?\s+hook\s+"
    r"(?P<kind>feedback|blocking error|stopped continuation|error)"
    r"|(?P<operation>Operation stopped by hook))\b",
    re.IGNORECASE | re.MULTILINE,
)
_HOOK_COMMAND = re.compile(
    r'^\s*from command:?\s*"(?P<command>(?:[^"\\]|\\.)*)"\s*:?\s*', re.DOTALL
)
_FEEDBACK_COMMAND = re.compile(r"^\s*\[(?P<command>[^\]\n]+)\]:\s*", re.MULTILINE)
_REMINDER_END = re.compile(r"</system-reminder>")


@dataclass(frozen=True, slots=True)
class HookMessage:
    """A hook blocking or stopping the agent, as the host wrote it into the user's turn."""

    event: str  # Stop, PreToolUse, UserPromptSubmit … ("" when the host does not say)
    # "blocked" (the agent is told to go on), "stopped" (it is not), "failed" (the hook itself
    # failed: Claude Code's stop_hook_summary hookErrors, read as "Stop hook error: …")
    kind: str
    command: str  # the hook's command, when the host names it
    reason: str  # its informative line

    @property
    def name(self) -> str:
        """How the notes name it: ``Stop hook (stop.sh)``, ``PreToolUse hook``, ``A hook``."""
        name = f"{self.event} hook" if self.event else "A hook"
        script = _hook_script(self.command)
        return f"{name} ({script})" if script else name


def _hook_script(command: str) -> str:
    """The script a hook runs, by name: ``python3 "$DIR/hooks/fail_on_stop.py"`` →
    ``fail_on_stop.py``."""
    words = [w.strip("\"'") for w in command.split()]
    for word in words:
        name = os.path.basename(word)
        if "." in name and not name.startswith("$") and _program(name) not in _INTERPRETERS:
            return name
    return os.path.basename(words[0]) if words else ""


def _hook_reason(body: str) -> str:
    lines = _meaningful(body)
    return _informative(lines, plain_last=False) if lines else ""


def hook_messages(text: str) -> list[HookMessage]:
    """The hooks that blocked or stopped something, in a user message's text."""
    if "hook" not in text and "Hook" not in text:
        return []
    found: list[HookMessage] = []
    matches = list(_HOOK.finditer(text))
    for n, match in enumerate(matches):
        end = matches[n + 1].start() if n + 1 < len(matches) else len(text)
        body = text[match.end() : end]
        closing = _REMINDER_END.search(body)
        if closing is not None:
            body = body[: closing.start()]
        if match.group("operation"):
            body = body.lstrip(" :")
            found.append(HookMessage("", "stopped", "", _hook_reason(body)))
            continue
        event = match.group("event")
        kind = match.group("kind").lower()
        body = body.lstrip(" ")
        command = ""
        if kind == "blocking error":
            named = _HOOK_COMMAND.match(body)
            if named is not None:
                command, body = named.group("command"), body[named.end() :]
            else:
                body = re.sub(r"^\s*from command\b:?", "", body)
        body = body.lstrip(" :\n")
        if kind == "feedback":
            # one "[command]: message" per hook that blocked
            parts = list(_FEEDBACK_COMMAND.finditer(body))
            if parts:
                for k, part in enumerate(parts):
                    stop = parts[k + 1].start() if k + 1 < len(parts) else len(body)
                    reason = _hook_reason(body[part.end() : stop])
                    found.append(HookMessage(event, "blocked", part.group("command"), reason))
                continue
        inner = _FEEDBACK_COMMAND.match(body)  # "[command]: message" after the header
        if inner is not None:
            command, body = command or inner.group("command"), body[inner.end() :]
        verdict = {"stopped continuation": "stopped", "error": "failed"}.get(kind, "blocked")
        found.append(HookMessage(event, verdict, command, _hook_reason(body)))
    return found


def test_counts(text: str) -> str | None:
    """``"12 passed, 1 failed"`` from a test runner's summary (pytest, cargo, jest, vitest,
    mocha, go test), or ``None``."""
    text = clean(output_text(text))
    totals: dict[str, int] = {}
    cargo = _CARGO.findall(text)
    if cargo:
        for line in cargo:
            for number, word in _COUNT.findall(line):
                word = _COUNT_WORD.get(word, word)
                totals[word] = totals.get(word, 0) + int(number)
    elif mocha := _MOCHA.findall(text):
        for number, word in mocha:
            totals[_COUNT_WORD.get(word, word)] = int(number)
    else:
        summary = next(
            (line for line in reversed(text.splitlines()) if _SUMMARY.search(line)), None
        )
        if summary is not None:
            for number, word in _COUNT.findall(summary):
                totals[_COUNT_WORD.get(word, word)] = int(number)
        else:
            packages = _GO_PACKAGE.findall(text)
            if packages:
                ok, failed = packages.count("ok"), packages.count("FAIL")
                parts = [f"{ok} package(s) ok"] + ([f"{failed} failed"] if failed else [])
                return ", ".join(parts)
    parts = [f"{n} {word}" for word, n in _ordered(totals) if n or word == "passed"]
    return ", ".join(parts) if parts else None


def _ordered(totals: dict[str, int]) -> list[tuple[str, int]]:
    def rank(word: str) -> int:
        return _COUNT_ORDER.index(word) if word in _COUNT_ORDER else len(_COUNT_ORDER)

    return sorted(totals.items(), key=lambda item: rank(item[0]))


def tests_failed(counts: str | None) -> bool:
    return counts is not None and re.search(r"\b[1-9]\d* (?:failed|errors)\b", counts) is not None


@dataclass(frozen=True, slots=True)
class Commit:
    hash: str
    branch: str
    subject: str


@dataclass(frozen=True, slots=True)
class Push:
    remote: str
    refs: tuple[str, ...]  # "main -> main"


def commits(text: str) -> list[Commit]:
    return [
        Commit(m.group("hash"), m.group("branch").strip(), m.group("subject").strip())
        for m in _COMMIT.finditer(clean(output_text(text)))
    ]


def pushes(text: str) -> list[Push]:
    found: list[Push] = []
    remote: str | None = None
    refs: list[str] = []
    for line in clean(output_text(text)).splitlines():
        to = _PUSH_TO.match(line)
        if to is not None:
            if remote is not None and refs:
                found.append(Push(remote, tuple(refs)))
            remote, refs = to.group("remote"), []
            continue
        ref = _PUSH_REF.match(line)
        if remote is not None and ref is not None:
            refs.append(f"{ref.group('src')} -> {ref.group('dst')}")
    if remote is not None and refs:
        found.append(Push(remote, tuple(refs)))
    return found


def pull_requests(call_text: str, result: str) -> list[str]:
    """Pull (merge) request URLs in the result of a call that creates one."""
    if not _CREATES_PULL.search(call_text):
        return []
    return list(dict.fromkeys(_PULL_URL.findall(result)))


def tree_clean(text: str) -> bool:
    return _CLEAN.search(text) is not None


# -- commands ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=512)
def _tokens(command: str) -> tuple[str, ...]:
    """Shell words and operators (``&&``, ``|``, ``;``, newlines …); quotes respected."""
    command = _HEREDOC.sub(r"\3", command)
    lexer = shlex.shlex(command, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        return tuple(lexer)
    except ValueError:  # an unbalanced quote: plain words will do
        return tuple(command.split())


def _program(word: str) -> str:
    name = os.path.basename(word)
    return re.sub(r"^(python|pip)\d+(?:\.\d+)*$", r"\1", name)


def _family_of(words: list[str]) -> str:
    while words and _ENV_ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words:
        return ""
    program = _program(words[0])
    rest = words[1:]
    if program in _RUNNERS:
        skip = _RUNNERS[program] - 1
        rest = [w for w in rest if not w.startswith("-")][skip:]
        return _family_of(rest) if rest else program
    if program in _RUN_SUBCOMMANDS and rest[:1] == ["run"]:
        return _family_of(rest[1:]) or f"{program} run"
    if program in ("bundle", "pnpm", "npm", "yarn") and rest[:1] in (["exec"], ["dlx"]):
        return _family_of(rest[1:]) or f"{program} {rest[0]}"
    if program == "python" and rest[:1] == ["-m"] and len(rest) > 1:
        return _family_of(rest[1:])
    args = [w for w in rest if not w.startswith("-")]
    if program in _INTERPRETERS:
        return f"{program} {os.path.basename(args[0])}" if args else program
    if program in SUBCOMMAND_PROGRAMS and args:
        if program in ("npm", "pnpm", "yarn", "bun") and args[0] in ("run", "run-script"):
            return f"{program} run {args[1]}" if len(args) > 1 else f"{program} run"
        if re.fullmatch(r"[a-z][a-z0-9:_-]*", args[0]):
            return f"{program} {args[0]}"
    return program


def _segments(command: str) -> list[list[str]]:
    """The commands of a shell line, each the first stage of its pipeline without redirections,
    setup steps (``cd``, ``export``, ``source`` …) left out."""
    found: list[list[str]] = []
    words: list[str] = []
    piped = False  # past a "|": the rest of this pipeline only filters
    redirect = False
    for token in [*_tokens(command), "\n"]:
        if token in _SEPARATORS:
            while words and _ENV_ASSIGNMENT.match(words[0]):
                words = words[1:]
            if words and _program(words[0]) not in _SETUP:
                found.append(words)
            words, piped, redirect = [], False, False
        elif token == "|":
            if not piped and words and _program(words[0]) in _FEEDERS and len(words) <= 3:
                words = []  # what is fed is the command
            else:
                piped = True
        elif piped:
            continue
        elif set(token) <= set("<>&|"):
            redirect = True
            if words and words[-1].isdigit():
                words.pop()
        elif redirect:
            redirect = False
        else:
            words.append(token)
    return found


@functools.lru_cache(maxsize=512)
def command_family(command: str) -> str:
    """What a shell command runs, as program + subcommand: ``pytest``, ``cargo test``,
    ``npm run build``, ``git commit``. Wrappers (``uv run``, ``npx``, ``python -m``, env
    assignments, ``cd … &&``) are looked through; of a chain the last command counts."""
    segments = _segments(command)
    return _family_of(segments[-1]) if segments else ""


def _writes_a_file(command: str) -> bool:
    tokens = _tokens(command)
    for token, target in itertools.pairwise(tokens):
        if token in (">", ">>", "&>", ">|") and target not in ("/dev/null", "&"):
            return True
    return False


@functools.lru_cache(maxsize=512)
def is_read_only(command: str) -> bool:
    """True when every command of the line only looks (``ls``, ``cat``, ``git status`` …) and
    nothing is redirected into a file."""
    if _writes_a_file(command):
        return False
    segments = _segments(command)
    if not segments:
        return True
    for words in segments:
        family = _family_of(list(words))
        program = family.split(" ", 1)[0]
        if program == "git":
            if family.split(" ")[-1] not in READ_ONLY_GIT:
                return False
        elif program == "sed":
            if "-i" in words or any(w.startswith("-i") for w in words):
                return False
        elif program not in READ_ONLY_PROGRAMS:
            return False
    return True


def shell_failed(command: str, text: str, is_error: bool) -> bool:
    """Whether a shell call failed: a non-zero exit (or the host's error flag), a failing test
    summary, or a traceback from a program that does not merely print files."""
    code = exit_code(text)
    failed = is_error if code is None else code != 0
    family = command_family(command)
    if failed and code == 1 and family.split(" ", 1)[0] in _QUIET_EXIT_ONE:
        # grep found nothing, diff found a difference: only an error if it says so
        return any(_TROUBLE.search(line) for line in _meaningful(text))
    if failed:
        return True
    if tests_failed(test_counts(text)):
        return True
    if "Traceback (most recent call last):" in text and not is_read_only(command):
        lines = _meaningful(text)
        return bool(lines) and _EXCEPTION.match(lines[-1]) is not None
    return False


__all__ = [
    "Commit",
    "HookMessage",
    "Push",
    "clean",
    "command_family",
    "commits",
    "edit_failed",
    "error_message",
    "exit_code",
    "hook_messages",
    "is_read_only",
    "output_text",
    "pull_requests",
    "pushes",
    "rejection",
    "shell_failed",
    "test_counts",
    "tests_failed",
    "tree_clean",
]
