"""Other programs' configuration files, written the way their users keep them.

Every ``memframe install-*`` command edits a file that belongs to someone else (Claude Code's
``settings.json``, an MCP client's ``mcp.json`` or ``config.toml``). They all go through this
module, so they all behave the same way:

- **a file that cannot be parsed is refused, untouched**: :func:`load_json` and :func:`load_toml`
  raise :class:`ConfigFileError` naming the file and the problem, and nothing is written;
- **symlinks are written through**: a config file kept in a dotfiles repository and linked into
  place stays a link, and the file it points at gets the new text (:func:`write_config`);
- **one backup**: before a change the previous text is copied to ``<name>.bak-memframe`` beside
  the path as named, replacing the backup of the change before (not one file per run);
- **nothing changes without a change**: callers compare the parsed data before and after and
  skip :func:`write_config` when it is equal, so running an installer twice writes once;
- **atomic and private**: the new text replaces the file in one rename, keeping its permissions
  (a new file is 0600), and a directory that belongs to the user is never re-moded.

TOML is edited as text, one table at a time (:func:`set_toml_table`), so the user's comments and
layout elsewhere in the file stay as they were; the result is parsed again and compared with
what was meant before it is accepted.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memframe._fs import PRIVATE_FILE_MODE, atomic_write_bytes

BACKUP_SUFFIX = ".bak-memframe"


class ConfigFileError(ValueError):
    """A configuration file cannot be read, parsed or edited safely; it was left as it is."""


@dataclass(frozen=True)
class Loaded:
    """A configuration file as read: its parsed object and its text (``None``: no file yet)."""

    path: Path
    data: dict[str, Any]
    text: str | None

    @property
    def exists(self) -> bool:
        return self.text is not None


@dataclass(frozen=True)
class Written:
    """What :func:`write_config` did: the file written (the symlink's target when ``path`` is a
    link) and the backup of the previous text (``None`` when there was no file)."""

    path: Path
    target: Path
    backup: Path | None


# -- reading -------------------------------------------------------------------------------------


def target_of(path: Path) -> Path:
    """The file ``path`` stands for: itself, or the file at the end of its symlinks (which may
    not exist yet). A symlink loop is a :class:`ConfigFileError`."""
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        # a dangling link: the file it names will be created
        return Path(os.path.realpath(path))
    except (OSError, RuntimeError) as exc:
        raise ConfigFileError(f"{path} is a symlink that cannot be followed ({exc})") from exc


def read_text(path: Path) -> str | None:
    """The text of ``path`` (through symlinks), ``None`` when there is no file."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise ConfigFileError(f"{path} is a directory, not a configuration file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read {path}: {exc}") from exc


def load_json(path: Path) -> Loaded:
    """A JSON configuration file holding an object; a missing or blank file is ``{}``."""
    text = read_text(path)
    if text is None or not text.strip():
        return Loaded(path, {}, text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigFileError(
            f"{path} is not valid JSON ({exc}); fix it first (it was not changed)"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigFileError(
            f"{path} must hold a JSON object, not {type(data).__name__} (it was not changed)"
        )
    return Loaded(path, data, text)


def load_toml(path: Path) -> Loaded:
    """A TOML configuration file; a missing or blank file is ``{}``."""
    text = read_text(path)
    if text is None or not text.strip():
        return Loaded(path, {}, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(
            f"{path} is not valid TOML ({exc}); fix it first (it was not changed)"
        ) from exc
    return Loaded(path, data, text)


# -- rendering -----------------------------------------------------------------------------------


def render_json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def diff(path: Path, before: str | None, after: str) -> str:
    """``before`` → ``after`` as a unified diff (``/dev/null`` for a new file)."""
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=str(path) if before is not None else "/dev/null",
        tofile=str(path),
    )
    return "".join(lines)


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def toml_value(value: Any, where: str = "value") -> str:
    """``value`` as TOML: strings, integers, floats, booleans, arrays and inline tables of those.
    (JSON's string escapes are a subset of TOML's basic-string escapes.)"""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item, where) for item in value) + "]"
    if isinstance(value, Mapping):
        items = ", ".join(f"{toml_key(str(k))} = {toml_value(v, where)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise ConfigFileError(f"{where}: a {type(value).__name__} cannot be written back as TOML")


def render_toml_table(key: Sequence[str], values: Mapping[str, Any]) -> str:
    """``[a.b]`` and its ``key = value`` lines (nested tables inline)."""
    header = ".".join(toml_key(part) for part in key)
    dotted = ".".join(key)
    lines = [f"[{header}]"]
    lines += [f"{toml_key(k)} = {toml_value(v, f'{dotted}.{k}')}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


# -- editing TOML as text ------------------------------------------------------------------------

# a table header on its own line: ``[a.b]`` or ``[[a.b]]``, optionally followed by a comment
_HEADER = re.compile(r"^\s*(\[\[?)\s*(?P<key>[^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")


def _split_key(text: str) -> tuple[str, ...] | None:
    """A dotted TOML key as its parts (``a."b.c".d`` → ``(a, b.c, d)``); ``None`` if malformed."""
    parts: list[str] = []
    rest = text.strip()
    while rest:
        if rest[0] in "\"'":
            quote = rest[0]
            end = rest.find(quote, 1)
            while quote == '"' and end > 0 and rest[end - 1] == "\\":
                end = rest.find(quote, end + 1)
            if end < 0:
                return None
            raw = rest[: end + 1]
            try:
                parts.append(json.loads(raw) if quote == '"' else raw[1:-1])
            except json.JSONDecodeError:
                return None
            rest = rest[end + 1 :].lstrip()
        else:
            match = re.match(r"[A-Za-z0-9_-]+", rest)
            if not match:
                return None
            parts.append(match.group())
            rest = rest[match.end() :].lstrip()
        if rest:
            if rest[0] != ".":
                return None
            rest = rest[1:].lstrip()
    return tuple(parts)


def _table_spans(lines: list[str], key: tuple[str, ...]) -> list[tuple[int, int]]:
    """``(start, end)`` line spans of the table ``key`` and its sub-tables. Blank and comment
    lines at the end of a span stay out of it: they introduce what follows."""
    spans: list[tuple[int, int]] = []
    start: int | None = None

    def close(end: int) -> None:
        assert start is not None
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip()[0] == "#"):
            end -= 1
        spans.append((start, end))

    for index, line in enumerate(lines):
        match = _HEADER.match(line)
        if not match:
            continue
        if start is not None:
            close(index)
            start = None
        parts = _split_key(match.group("key"))
        if parts is not None and parts[: len(key)] == key:
            start = index
    if start is not None:
        close(len(lines))
    return spans


def _lookup(data: Mapping[str, Any], key: Sequence[str]) -> Any:
    current: Any = data
    for part in key:
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _with_table(
    data: Mapping[str, Any], key: Sequence[str], values: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A copy of ``data`` with the table ``key`` set to ``values`` (``None``: removed)."""
    out: dict[str, Any] = json.loads(json.dumps(data, default=str))  # plain, deep copy
    parent = out
    for part in key[:-1]:
        parent = parent.setdefault(part, {})
    if values is None:
        parent.pop(key[-1], None)
    else:
        parent[key[-1]] = json.loads(json.dumps(dict(values)))
    return out


def set_toml_table(
    text: str, key: Sequence[str], values: Mapping[str, Any] | None, *, where: Path
) -> str:
    """``text`` with the table ``key`` (its ``[key]`` section and ``[key.*]`` sub-sections)
    replaced by ``values`` rendered as one ``[key]`` section, in the place of the first one
    (or at the end); ``values=None`` removes it. Everything else in the file stays byte for
    byte. The result is parsed again and must hold exactly what was meant, else
    :class:`ConfigFileError` (the table is defined in a form this edit does not handle)."""
    key = tuple(key)
    try:
        before = tomllib.loads(text) if text.strip() else {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{where} is not valid TOML ({exc}); it was not changed") from exc
    lines = text.splitlines(keepends=True)
    spans = _table_spans(lines, key)
    dotted = ".".join(key)
    if not spans and _lookup(before, key) is not None:
        raise ConfigFileError(
            f"{where} defines {dotted} in a form memframe does not rewrite (not as a [{dotted}] "
            "table); edit that entry by hand (the file was not changed)"
        )
    kept: list[str] = []
    insert_at: int | None = None
    cursor = 0
    for start, end in spans:
        kept.extend(lines[cursor:start])
        if insert_at is None:
            insert_at = len(kept)
        cursor = end
    kept.extend(lines[cursor:])
    if values is not None:
        block = render_toml_table(key, values)
        if insert_at is None:
            if kept and not kept[-1].endswith("\n"):
                kept[-1] += "\n"
            if kept and kept[-1].strip():
                kept.append("\n")
            kept.append(block)
        else:
            following = kept[insert_at] if insert_at < len(kept) else ""
            kept.insert(insert_at, block + ("\n" if following.strip() else ""))
    result = "".join(kept)
    if values is None and result.endswith("\n\n") and not text.endswith("\n\n"):
        result = result.rstrip("\n") + "\n"  # no blank lines left where the table ended
    expected = _with_table(before, key, values)
    try:
        after = tomllib.loads(result) if result.strip() else {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(
            f"{where}: the edited file would not parse ({exc}); edit {dotted} by hand "
            "(the file was not changed)"
        ) from exc
    if json.loads(json.dumps(after, default=str)) != expected:
        raise ConfigFileError(
            f"{where}: {dotted} could not be rewritten safely as text; edit it by hand "
            "(the file was not changed)"
        )
    return result


# -- writing -------------------------------------------------------------------------------------


def backup_path(path: Path) -> Path:
    """Where the single backup of ``path`` is kept: ``<name>.bak-memframe`` beside it."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def save_backup(path: Path) -> Path | None:
    """Copy the current text of ``path`` (through symlinks) to :func:`backup_path`, replacing
    the backup made before; ``None`` when there is no file to back up."""
    target = target_of(path)
    try:
        previous = target.read_bytes()
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise ConfigFileError(f"{path} is a directory, not a configuration file") from exc
    except OSError as exc:
        raise ConfigFileError(f"cannot read {path}: {exc}") from exc
    saved = backup_path(path)
    if saved.is_symlink():
        saved.unlink()  # a backup is a plain copy, never written through a link
    atomic_write_bytes(saved, previous, mode=(mode & 0o600) or 0o600, tighten_dir=False)
    return saved


def write_config(path: Path, text: str, *, backup: bool = True, mode: int | None = None) -> Written:
    """Replace the configuration file ``path`` with ``text``, atomically.

    A symlink is written through (the link stays; the file it points at changes), the file's
    permissions are kept unless ``mode`` is given (a new file is 0600; a missing directory is
    created 0700, an existing one left as it is), and with ``backup`` the previous text goes to
    :func:`backup_path`, replacing an earlier backup."""
    target = target_of(path)
    if target.is_dir():
        raise ConfigFileError(f"{path} is a directory, not a configuration file")
    saved = save_backup(path) if backup else None
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = PRIVATE_FILE_MODE
    atomic_write_bytes(target, text.encode("utf-8"), mode=mode, tighten_dir=False)
    return Written(path, target, saved)
