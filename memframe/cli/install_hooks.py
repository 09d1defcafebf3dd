"""``memframe install-hooks [--agent NAME]``: add memframe's hook entries to an agent's hook
configuration (Claude Code's settings by default; Codex CLI, Gemini CLI, Cursor)."""

from __future__ import annotations

import argparse
from pathlib import Path

AGENTS = ("claude-code", "codex", "gemini", "cursor")
NOTES = {
    "codex": (
        "Codex runs a hook it does not manage only once you trust it: start `codex`, open "
        "`/hooks`, review memframe's entries and trust them. A project's .codex/ is read only "
        "in a project Codex trusts."
    ),
    "gemini": (
        "Gemini CLI: check `/hooks panel` shows memframe's hooks enabled; if the hooks system "
        "is off, turn on 'Enable Hooks System' under Advanced in `/settings` and restart."
    ),
    "cursor": "Cursor: restart Cursor, then check its Hooks settings tab lists memframe's hooks.",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        choices=AGENTS,
        default="claude-code",
        help="whose hooks to configure: claude-code (the default; .claude/settings.json), codex "
        "(.codex/hooks.json, and hooks turned on in .codex/config.toml), gemini "
        "(.gemini/settings.json), cursor (.cursor/hooks.json)",
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--user",
        dest="target",
        action="store_const",
        const="user",
        help="your settings (the default): for Claude Code $CLAUDE_CONFIG_DIR/settings.json or "
        "~/.claude/settings.json; $CODEX_HOME or ~/.codex; ~/.gemini; ~/.cursor",
    )
    target.add_argument(
        "--project",
        dest="target",
        action="store_const",
        const="project",
        help="the project's shared settings: <dir>/.claude/, .codex/, .gemini/ or .cursor/",
    )
    parser.set_defaults(target="user")
    parser.add_argument(
        "--dir", type=Path, default=Path("."), help="the project directory for --project"
    )
    parser.add_argument(
        "--command",
        dest="hook_command",  # not "command": that is the subcommand's name
        default=None,
        help="the hook command (default: the memframe executable next to this Python, "
        "followed by 'hook')",
    )
    parser.add_argument(
        "--timeout", type=int, default=None, help="seconds the agent lets the hook run (30)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the change as a diff; write nothing"
    )
    parser.add_argument(
        "--uninstall", action="store_true", help="remove memframe's entries instead"
    )


def run(args: argparse.Namespace) -> int:
    from memframe.agents import install
    from memframe.cli import EXIT_OK, CommandError

    agent = getattr(args, "agent", None) or "claude-code"
    layout = install.LAYOUTS[agent]
    path = install.config_path(agent, args.target, args.dir.resolve())
    timeout = install.DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    if timeout < 1:
        raise CommandError("--timeout must be at least 1 second")
    command = args.hook_command if args.hook_command is not None else install.default_command(agent)
    if not command.strip():
        raise CommandError("--command must not be empty")
    if not install.is_memframe_command(command):
        raise CommandError(
            f"--command {command!r} does not run `memframe hook`: memframe would not recognise "
            "its own entry on the next run"
        )
    feature: tuple[Path, str | None, str | None] | None = None
    note: str | None = None
    try:
        settings, before = install.load_settings(path)
        if args.uninstall:
            merged = install.remove(settings, where=path)
        else:
            merged = install.merge(settings, command, timeout, where=path, layout=layout)
            if agent == "codex":
                toml_path = path.with_name("config.toml")
                toml_before, toml_after, note = install.codex_feature(toml_path)
                if toml_after is not None:
                    feature = (toml_path, toml_before, toml_after)
    except install.InstallError as exc:
        raise CommandError(str(exc)) from exc
    unchanged = merged == settings and (before is not None or args.uninstall)
    if unchanged and feature is None:
        state = "not installed" if args.uninstall else "already installed"
        print(f"memframe hooks are {state} in {path}: nothing to change")
        _notes(agent, note, args.uninstall)
        return EXIT_OK
    after = install.render(merged)
    if args.dry_run:
        if not unchanged:
            print(install.diff(path, before, after), end="")
        if feature is not None:
            print(install.diff(feature[0], feature[1], feature[2] or ""), end="")
        changed = [
            str(p) for p in ([path] if not unchanged else []) + ([feature[0]] if feature else [])
        ]
        print(f"(dry run: {', '.join(changed)} not changed)")
        return EXIT_OK
    done = "removed memframe hooks from" if args.uninstall else "installed memframe hooks in"
    if not unchanged:
        saved = _write(path, before, after)
        print(f"{done} {path}" + (f" (previous file kept as {saved.name})" if saved else ""))
    if feature is not None:
        saved = _write(feature[0], feature[1], feature[2] or "")
        print(
            f"turned Codex hooks on in {feature[0]} ([features] codex_hooks = true)"
            + (f" (previous file kept as {saved.name})" if saved else "")
        )
    if not args.uninstall:
        print(f"command: {command}")
    _notes(agent, note, args.uninstall)
    return EXIT_OK


def _write(path: Path, before: str | None, after: str) -> Path | None:
    from memframe.agents import install

    saved = install.backup(path) if before is not None else None
    mode = path.stat().st_mode & 0o777 if before is not None else 0o600
    install.write_atomic(path, after.encode("utf-8"), mode)
    return saved


def _notes(agent: str, note: str | None, uninstall: bool) -> None:
    if note:
        print(f"warning: {note}")
    if not uninstall and agent in NOTES:
        print(f"next: {NOTES[agent]}")
