"""Commands that layers add through ``register_commands``, run in-process through
``memframe.cli.main(argv, layers=[...])``: the layers go through memframe's plugin manager as
they would from the entry-point group."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

import memframe
from memframe.cli import main


class Greeter:
    """A layer built with the frame whose commands come from a static method."""

    name = "greeter"
    opened: ClassVar[list[Any]] = []

    def __init__(self, frame: Any) -> None:
        self.frame = frame
        Greeter.opened.append(frame)

    @staticmethod
    @memframe.hookimpl
    def register_commands(register):
        def add_arguments(parser):
            parser.add_argument("who")

        def greet(args, frame):
            layer = frame.manager.get_plugin("greeter")
            print(f"hello {args.who} from {frame.project_dir.name}, layer {type(layer).__name__}")
            return 0

        def count(args):  # no frame
            print("1 2 3")

        register("greet", "greet someone", add_arguments, greet)
        register("count", "count to three", None, count)


@pytest.fixture(autouse=True)
def _reset():
    Greeter.opened.clear()


@pytest.fixture
def dirs(tmp_path: Path) -> list[str]:
    project = tmp_path / "app"
    project.mkdir()
    return ["--project", str(project), "--home", str(tmp_path / "home")]


def test_help_lists_the_layers_commands_without_a_frame(capsys):
    assert main(["--help"], layers=[Greeter]) == 0
    out = capsys.readouterr().out
    assert "greet someone [greeter]" in out and "count to three [greeter]" in out
    assert "replay" in out  # the built-in ones too
    assert Greeter.opened == []


def test_a_command_gets_the_frame_it_runs_in(capsys, dirs):
    assert main(["greet", "ada", *dirs], layers=[Greeter]) == 0
    assert capsys.readouterr().out == "hello ada from app, layer Greeter\n"
    (frame,) = Greeter.opened
    assert frame.closed  # opened for the run, closed after it


def test_a_command_without_a_frame_parameter_runs_without_one(capsys):
    assert main(["count"], layers=[Greeter]) == 0  # None is exit 0
    assert capsys.readouterr().out == "1 2 3\n"
    assert Greeter.opened == []


def test_a_commands_own_arguments_are_parsed(capsys, dirs):
    assert main(["greet", *dirs], layers=[Greeter]) == 2  # "who" is required
    assert "the following arguments are required: who" in capsys.readouterr().err
    assert main(["count", "--project", "."], layers=[Greeter]) == 2  # no frame options
    assert "unrecognized arguments: --project" in capsys.readouterr().err


def test_a_typo_is_an_invalid_choice_and_opens_no_frame(capsys):
    assert main(["gret", "ada"], layers=[Greeter]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'gret'" in err and "'greet'" in err
    assert Greeter.opened == []


def test_a_module_layer_and_either_decorator_order(capsys):
    module = types.ModuleType("shouter")

    @memframe.hookimpl
    def register_commands(register):
        register("shout", "shout", None, lambda args: print("HEY") or 0)

    module.register_commands = register_commands  # type: ignore[attr-defined]

    class Waver:
        @memframe.hookimpl
        @classmethod
        def register_commands(cls, register):
            register("wave", "wave", None, lambda args: 4)

    assert main(["shout"], layers=[module, Waver]) == 0
    assert capsys.readouterr().out == "HEY\n"
    assert main(["wave"], layers=[module, Waver]) == 4


def test_a_plain_object_and_a_class_without_a_frame_can_register():
    class Plain:
        @memframe.hookimpl
        def register_commands(self, register):
            register("plain", "plain", None, lambda args: 5)

    assert main(["plain"], layers=[Plain]) == 5
    assert main(["plain"], layers=[Plain()]) == 5


def test_a_class_that_needs_the_frame_cannot_register_from_a_method(capsys):
    class NeedsFrame:
        name = "needs_frame"

        def __init__(self, frame):
            self.frame = frame

        @memframe.hookimpl
        def register_commands(self, register):
            register("x", "x", None, lambda args: 0)

    assert main(["x"], layers=[NeedsFrame]) == 2
    err = capsys.readouterr().err
    assert "layer 'needs_frame'" in err and "@staticmethod or @classmethod" in err


def provider(name: str, *registration: Any, raises: bool = False) -> object:
    class Provider:
        @staticmethod
        @memframe.hookimpl
        def register_commands(register):
            if raises:
                raise RuntimeError("cannot")
            register(*registration)

    Provider.name = name  # type: ignore[attr-defined]
    return Provider


@pytest.mark.parametrize(
    ("registration", "problem"),
    [
        (("scan", "mine", None, lambda a: 0), "'scan' is a built-in command"),
        (("Bad Name", "x", None, lambda a: 0), "is not a lower-case word"),
        (("--x", "x", None, lambda a: 0), "is not a lower-case word"),
        (("ok", 3, None, lambda a: 0), "the help of 'ok' must be a string"),
        (("ok", "x", "no", lambda a: 0), "add_arguments of 'ok' must be callable"),
        (("ok", "x", None, None), "'ok' has no callable run"),
    ],
)
def test_a_bad_registration_fails_closed_naming_the_layer(capsys, registration, problem):
    assert main(["ok"], layers=[provider("bad", *registration)]) == 2
    err = capsys.readouterr().err
    assert "register_commands: layer 'bad'" in err and problem in err


def test_two_layers_registering_one_name_and_a_raising_hook_are_all_reported(capsys):
    layers = [
        provider("first", "dup", "x", None, lambda a: 0),
        provider("second", "dup", "x", None, lambda a: 0),
        provider("third", raises=True),
    ]
    assert main(["dup"], layers=layers) == 2
    err = capsys.readouterr().err
    # pluggy asks the layer loaded last first: the first one loaded is the one refused
    assert "layer 'first': the command 'dup' is already registered by 'second'" in err
    assert "layer 'third': the hook raised RuntimeError: cannot" in err


def test_help_still_works_when_a_layer_is_broken(capsys):
    assert main(["--help"], layers=[provider("third", raises=True)]) == 0
    captured = capsys.readouterr()
    assert "replay" in captured.out
    assert "warning: no layer commands listed" in captured.err


def test_a_broken_add_arguments_only_breaks_its_own_command(capsys):
    def broken(parser):
        parser.add_argument("--x")
        parser.add_argument("--x")  # a conflict: argparse.ArgumentError

    layers = [
        provider("broken", "broken", "x", broken, lambda a: 0),
        provider("fine", "fine", "x", None, lambda a: 7),
    ]
    assert main(["fine"], layers=layers) == 7
    assert main(["broken"], layers=layers) == 2
    assert "layer 'broken': the arguments of 'broken' are invalid" in capsys.readouterr().err


def test_run_must_return_an_exit_code(capsys):
    assert main(["odd"], layers=[provider("odd", "odd", "x", None, lambda a: "yes")]) == 2
    assert "must return an exit code" in capsys.readouterr().err


def test_a_built_in_command_never_asks_the_layers(capsys):
    asked: list[str] = []

    class Spy:
        @staticmethod
        @memframe.hookimpl
        def register_commands(register):
            asked.append("asked")

    assert main(["scan", "--help"], layers=[Spy]) == 0
    assert main(["--version"], layers=[Spy]) == 0
    assert asked == []
    assert main(["nope"], layers=[Spy]) == 2
    assert asked == ["asked"]
