"""Subcommands that layers add through the ``register_commands`` hook.

They are collected without opening a frame — from the installed layers (the ``memframe``
entry-point group, as ``MEMFRAME_PLUGINS`` / ``MEMFRAME_DISABLED_PLUGINS`` /
``MEMFRAME_DISABLE_PLUGIN_AUTOLOAD`` and the settings file allow) — and only when the command line
may need them: no command, ``--help``, or a name that is not a built-in command. So a built-in
command never imports a plugin, and a mistyped command is an ``invalid choice`` without any frame
being opened. A command whose ``run`` takes two parameters, ``run(args, frame)``, gets the frame
of ``--project`` / ``--home`` / ``--model`` / ``--strict`` (added to its parser), opened for the
run and closed after it; ``run(args)`` runs without one.
"""

from __future__ import annotations

import argparse
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class PluginCommand:
    """One registered subcommand and the layer that registered it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], object] | None
    run: Callable[..., Any]
    layer: str

    @property
    def wants_frame(self) -> bool:
        """``run(args, frame)``: two positional parameters."""
        try:
            parameters = inspect.signature(self.run).parameters.values()
        except (TypeError, ValueError):
            return False
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return sum(p.kind in positional for p in parameters) >= 2


def collect_commands(
    reserved: Sequence[str], layers: Sequence[object] | None = None
) -> dict[str, PluginCommand]:
    """The commands layers register, by name, collected without a frame.

    :param reserved: names that are taken (the built-in commands).
    :param layers: the layers to ask instead of the installed ones (for tests).
    :raises CommandError: a layer failed to load, its hook raised, or it registered something
        invalid (every problem named at once).
    """
    from memframe._manager import LayerInfo, LayerLoadError, LayerManager
    from memframe.cli import CommandError
    from memframe.config import ConfigError, load_config

    manager = LayerManager()
    try:
        if layers is None:
            config = load_config()
            for name in config.disabled_plugins:
                manager.set_blocked(name)
            if config.autoload_plugins:
                for name, target, info in manager.entry_point_targets(only=config.plugins):
                    manager.add_command_provider(target, name=name, info=info)
        else:
            for layer in layers:
                declared = getattr(layer, "name", None) or getattr(layer, "__name__", None)
                name = declared if isinstance(declared, str) and declared else "layer"
                if manager.has_plugin(name):
                    name = f"{name}-{len(manager.get_plugins())}"
                info = LayerInfo(name, "explicit", repr(layer))
                manager.add_command_provider(layer, name=name, info=info)
    except (ConfigError, LayerLoadError) as exc:
        raise CommandError(str(exc)) from exc

    found: dict[str, PluginCommand] = {}

    def accept(
        name: Any,
        help: Any,
        add_arguments: Any = None,
        run: Any = None,
    ) -> None:
        layer = manager.current_layer() or "?"
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(
                f"the command name {name!r} is not a lower-case word (letters, digits, - and _)"
            )
        if name in reserved:
            raise ValueError(f"the command {name!r} is a built-in command")
        if name in found:
            raise ValueError(f"the command {name!r} is already registered by {found[name].layer!r}")
        if not isinstance(help, str):
            raise ValueError(f"the help of {name!r} must be a string")
        if add_arguments is not None and not callable(add_arguments):
            raise ValueError(f"add_arguments of {name!r} must be callable or None")
        if not callable(run):
            raise ValueError(f"the command {name!r} has no callable run")
        found[name] = PluginCommand(name, help, add_arguments, run, layer)

    try:
        manager.collect("register_commands", accept)
    except LayerLoadError as exc:  # a RegistrationError
        raise CommandError(str(exc)) from exc
    return found


def add_parser(
    sub: Any, command: PluginCommand, *, with_arguments: bool
) -> argparse.ArgumentParser:
    """The command's subparser; its own arguments (and the frame's) only when it is the one
    about to run (``with_arguments``), so another layer's broken ``add_arguments`` never
    breaks ``memframe --help``."""
    from memframe.cli import CommandError
    from memframe.cli._common import add_frame_arguments

    parser: argparse.ArgumentParser = sub.add_parser(
        command.name, help=f"{command.help} [{command.layer}]", description=command.help
    )
    if with_arguments:
        if command.wants_frame:
            add_frame_arguments(parser)
        if command.add_arguments is not None:
            try:
                command.add_arguments(parser)
            except (argparse.ArgumentError, TypeError, ValueError) as exc:
                raise CommandError(
                    f"layer {command.layer!r}: the arguments of {command.name!r} are invalid: {exc}"
                ) from exc
    return parser


def run_command(
    command: PluginCommand, args: argparse.Namespace, layers: Sequence[object] = ()
) -> int:
    """Run ``command`` with the parsed ``args`` (and the frame, when it takes one)."""
    if not command.wants_frame:
        return _exit_code(command.run(args))
    from memframe.cli._common import open_frame_from_args

    with open_frame_from_args(args, layers=list(layers)) as frame:
        return _exit_code(command.run(args, frame))


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, bool) or not isinstance(code, int):
        from memframe.cli import CommandError

        raise CommandError(f"a command's run() must return an exit code (int), got {code!r}")
    return code


def wants_commands(argv: Sequence[str], builtin: Mapping[str, object]) -> bool:
    """Whether the command line may need the layers' commands: no command, top-level help, or
    a first word that is not a built-in command."""
    if not argv:
        return True
    first = argv[0]
    if first in ("-h", "--help"):
        return True
    return not first.startswith("-") and first not in builtin
