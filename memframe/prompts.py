"""Layer prompts: a bundled ``{{placeholder}}`` template per prompt, which the user may replace.

Every layer that asks a model for something loads its prompt with :func:`load_prompt`, in one
order:

1. the file named by the layer's ``prompt`` setting (``"<layer>": {"prompt": "..."}`` in
   settings.json): an absolute path, ``~/...``, or a path relative to the config dir; a missing
   file is an error;
2. else ``<config dir>/<layer dir>/prompt.md`` when it exists (``session-memory/prompt.md``
   for the layer ``session_memory``: the settings name with ``-`` for ``_``);
3. else the bundled prompt.

A user's prompt is checked when the frame opens: UTF-8 text, every placeholder the layer
requires present, and no ``{{name}}`` the layer does not know (a misspelt placeholder would
reach the model as written). :meth:`Prompt.render` replaces every placeholder in one pass, so a
value that itself contains ``{{...}}`` (a document, a conversation) is never expanded again.

A layer of your own can use the same mechanism::

    from memframe.prompts import PromptSpec, load_prompt

    SPEC = PromptSpec(
        layer="my_layer",
        bundled="Summarise {{file}} in {{words}} words.",
        placeholders=("file", "words"),
        required=("file",),
    )
    prompt = load_prompt(SPEC, frame.config.config_dir, setting=None)
    text = prompt.render(file="notes.md", words="50")
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from memframe.config import ConfigError

PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")
PROMPT_FILE = "prompt.md"


@dataclass(frozen=True)
class PromptSpec:
    """One layer's prompt: where its bundled text is and which placeholders it fills.

    :param layer: the layer's settings name (``session_memory``); its ``prompt`` setting and
        its override directory (``session-memory/``) follow from it.
    :param bundled: the bundled template: ``"data:<path>"`` for a file under ``memframe/data``,
        otherwise the template text itself.
    :param placeholders: every name :meth:`Prompt.render` fills.
    :param required: the names a user's prompt must contain.
    """

    layer: str
    bundled: str
    placeholders: tuple[str, ...]
    required: tuple[str, ...] = ()

    @property
    def setting(self) -> str:
        """The name of the setting that names a prompt file: ``<layer>.prompt``."""
        return f"{self.layer}.prompt"

    @property
    def default_override(self) -> str:
        """Where a user's prompt is looked for, relative to the config dir."""
        return f"{self.layer.replace('_', '-')}/{PROMPT_FILE}"

    def bundled_text(self) -> str:
        if self.bundled.startswith("data:"):
            path = resources.files("memframe") / "data"
            for part in self.bundled[len("data:") :].split("/"):
                path = path / part
            return path.read_text("utf-8")
        return self.bundled


@dataclass(frozen=True)
class Prompt:
    """A checked prompt template; ``origin`` is ``"bundled"`` or the file it was read from."""

    spec: PromptSpec
    text: str
    origin: str

    def render(self, values: Mapping[str, str] | None = None, /, **more: str) -> str:
        """The template with every placeholder replaced (all of ``spec.placeholders`` must be
        given; a ``{{name}}`` the spec does not know stays as written)."""
        given = {**(values or {}), **more}
        missing = [name for name in self.spec.placeholders if name not in given]
        if missing:
            raise KeyError(f"{self.spec.layer} prompt: no value for {', '.join(missing)}")

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            return given[name] if name in self.spec.placeholders else match.group(0)

        return PLACEHOLDER.sub(value, self.text)


def check_prompt(spec: PromptSpec, text: str, origin: str) -> Prompt:
    """``text`` as ``spec``'s prompt; a :class:`~memframe.config.ConfigError` naming ``origin``
    when a required placeholder is missing or an unknown one is used."""
    used = set(PLACEHOLDER.findall(text))
    unknown = sorted(used - set(spec.placeholders))
    if unknown:
        names = ", ".join("{{" + name + "}}" for name in unknown)
        known = ", ".join("{{" + name + "}}" for name in spec.placeholders)
        raise ConfigError(f"{origin}: unknown placeholder {names} (known: {known})")
    for name in spec.required:
        if name not in used:
            raise ConfigError(f"{origin}: the file must contain {{{{{name}}}}}")
    return Prompt(spec, text, origin)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc})") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from exc


def load_prompt(spec: PromptSpec, config_dir: Path, setting: str | None) -> Prompt:
    """``spec``'s prompt: the file ``setting`` names (the layer's ``prompt`` setting), else
    ``<config dir>/<layer dir>/prompt.md`` when it exists, else the bundled one.

    :raises ConfigError: the named file is missing or unreadable, or a user's prompt breaks
        :func:`check_prompt`'s rules.
    """
    if setting is not None:
        path = Path(setting).expanduser()
        if not path.is_absolute():
            path = config_dir / path
        if not path.is_file():
            raise ConfigError(f"settings {spec.setting!r}: no such file {str(path)!r}")
        return check_prompt(spec, _read(path), str(path))
    default = config_dir / spec.default_override
    if default.is_file():
        return check_prompt(spec, _read(default), str(default))
    return check_prompt(spec, spec.bundled_text(), "bundled")
