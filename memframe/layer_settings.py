"""Layer settings: a frozen dataclass per layer, filled from its object in settings.json.

Each field's type says what is accepted (``bool``, ``int``, ``float``, ``str``); ``metadata``
may add ``min`` (default 0) and ``choices``; a ``tuple[str, ...]`` field takes a JSON list of
strings, each one of ``metadata["items"]`` when that is given. Unknown keys and wrong values are a
:class:`~memframe.config.ConfigError` naming the setting, so a typo fails ``memframe.open()``
instead of being ignored.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from memframe.config import ConfigError

T = TypeVar("T")


def _is_list(kind: Any) -> bool:
    return typing.get_origin(kind) is tuple


def _expected(kind: Any, metadata: Mapping[str, Any]) -> str:
    if _is_list(kind):
        items = metadata.get("items")
        return "a list of " + ("any of " + ", ".join(map(str, items)) if items else "strings")
    if kind is bool:
        return "true or false"
    if "choices" in metadata:
        return "one of " + ", ".join(map(str, metadata["choices"]))
    name = "an integer" if kind is int else "a number" if kind is float else "a string"
    return f"{name} >= {metadata.get('min', 0)}" if kind in (int, float) else name


def _valid(kind: Any, metadata: Mapping[str, Any], value: Any) -> bool:
    if _is_list(kind):
        items = metadata.get("items")
        return isinstance(value, list) and all(
            isinstance(v, str) and (items is None or v in items) for v in value
        )
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if "choices" in metadata:
        return value in metadata["choices"]
    if kind is int:
        return isinstance(value, int) and value >= metadata.get("min", 0)
    if kind is float:
        return isinstance(value, int | float) and value >= metadata.get("min", 0)
    return isinstance(value, str)


def check_value(
    kind: Any,
    value: Any,
    where: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[Any, ...] | None = None,
    error: type[Exception] = ConfigError,
) -> Any:
    """One setting's value checked against ``kind`` (``bool``, ``int``, ``float``, ``str``,
    ``tuple[str, ...]``) — the one validator of memframe's settings (layer settings, model
    backend options). A bad value raises ``error`` as ``"<where> must be <what>, got <value>"``;
    ``maximum`` is exclusive."""
    metadata: dict[str, Any] = {}
    if minimum is not None:
        metadata["min"] = minimum
    if choices is not None:
        metadata["choices"] = choices
    valid = _valid(kind, metadata, value) and (
        maximum is None
        or isinstance(value, bool)
        or not isinstance(value, int | float)
        or value < maximum
    )
    if kind is str and valid and choices is None:
        valid = bool(value.strip())
    if not valid:
        expected = _expected(kind, metadata)
        if kind is str and choices is None:
            expected = "a non-empty string"
        if maximum is not None:
            expected += f" and < {maximum:g}"
        raise error(f"{where} must be {expected}, got {value!r}")
    return tuple(value) if _is_list(kind) else value


def checked(cls: type[T], base: T, values: Mapping[str, Any], where: str) -> T:
    """``base`` with ``values`` applied, each checked against ``cls``'s field types."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(f"{where}: unknown setting {key!r} (known: {known})")
        metadata = fields[key].metadata
        if not _valid(hints[key], metadata, value):
            raise ConfigError(
                f"{where}: {key!r} must be {_expected(hints[key], metadata)}, got {value!r}"
            )
    values = {k: tuple(v) if _is_list(hints[k]) else v for k, v in values.items()}
    return dataclasses.replace(base, **values)  # type: ignore[type-var]


def settings_from(cls: type[T], raw: Any, section: str) -> T:
    """The settings object ``section`` of settings.json as ``cls`` (defaults when absent)."""
    if raw is None:
        return cls()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"settings {section!r} must be an object")
    return checked(cls, cls(), raw, f"settings {section!r}")


def at_least(minimum: float, **extra: Any) -> dict[str, Any]:
    """Field metadata: the smallest value accepted."""
    return {"min": minimum, **extra}
