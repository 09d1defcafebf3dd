"""The common subset of gitignore rules, for ``.gitignore`` and ``.memframeignore``.

Supported: blank lines and ``#`` comments, ``\\#``/``\\!`` for a literal first character, trailing
spaces (kept when escaped), ``!`` negation, a trailing ``/`` (directories only), patterns with a
``/`` at the start or in the middle anchored to the ignore file's directory (others match a name at
any depth), ``*``, ``?``, ``[...]`` classes (``[!...]`` negated), and ``**`` as a leading
``**/``, a trailing ``/**`` or a middle ``/**/``.

Precedence follows git: the last matching pattern wins; files deeper in the tree override those
above them; in one directory ``.memframeignore`` is read after ``.gitignore``. A directory that is
ignored is not entered, so nothing below it can be re-included.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

IGNORE_FILES = (".gitignore", ".memframeignore")


@dataclass(frozen=True, slots=True)
class Pattern:
    """One pattern line, compiled (``regex`` matches a path relative to the ignore file's
    directory, ``/``-separated)."""

    text: str
    regex: str
    negate: bool
    dir_only: bool


def _class(pattern: str, i: int) -> tuple[str, int] | None:
    """Translate the ``[...]`` class starting at ``pattern[i]``; None when it is not closed."""
    j = i + 1
    negate = j < len(pattern) and pattern[j] in "!^"
    if negate:
        j += 1
    body: list[str] = []
    first = True
    while j < len(pattern):
        c = pattern[j]
        if c == "]" and not first:
            inner = "".join(body)
            return ("[^/" + inner + "]" if negate else "[" + inner + "]"), j + 1
        if c == "\\" and j + 1 < len(pattern):
            j += 1
            c = pattern[j]
        body.append("\\" + c if c in "\\^[]" else c)
        first = False
        j += 1
    return None


def _translate(body: str) -> str:
    """Glob body (no leading/trailing ``/`` handling) to a regex fragment."""
    out: list[str] = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c == "*":
            if body.startswith("**", i):
                before_ok = i == 0 or body[i - 1] == "/"
                after = i + 2
                if before_ok and after < n and body[after] == "/":
                    out.append("(?:.*/)?")  # "**/": zero or more directories
                    i = after + 1
                    continue
                if before_ok and after == n and i > 0:
                    out.append(".*")  # "/**": everything inside
                    i = after
                    continue
                while i < n and body[i] == "*":
                    i += 1
                out.append("[^/]*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            translated = _class(body, i)
            if translated is None:
                out.append(re.escape(c))
            else:
                out.append(translated[0])
                i = translated[1]
                continue
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(body[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def parse_line(line: str) -> Pattern | None:
    """One line of an ignore file → its pattern, or None for a blank line or a comment."""
    text = line.rstrip("\r\n")
    if not text or text.startswith("#"):
        return None
    # trailing spaces are dropped unless escaped with a backslash
    stripped = text.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(text):
        stripped += " "
    text = stripped
    negate = text.startswith("!")
    if negate or text.startswith(("\\#", "\\!")):
        text = text[1:]
    dir_only = text.endswith("/") and not text.endswith("\\/")
    body = text.rstrip("/") if dir_only else text
    if not body:
        return None
    anchored = "/" in body
    body = body.lstrip("/")
    if not body:
        return None
    regex = _translate(body)
    if not anchored and not body.startswith("**"):
        regex = "(?:.*/)?" + regex
    return Pattern(line.rstrip("\r\n"), regex, negate, dir_only)


class IgnoreFile:
    """The patterns of the ignore files of one directory (``base``: an absolute path)."""

    def __init__(self, base: str, patterns: list[Pattern]) -> None:
        self.base = base.rstrip(os.sep) or os.sep
        self.prefix = self.base if self.base.endswith(os.sep) else self.base + os.sep
        self.patterns = patterns
        # One regex per kind of path: alternatives in reverse order with fullmatch, so the first
        # alternative that matches is the last pattern that matches (the one that wins).
        self._file_re = self._compile([p for p in patterns if not p.dir_only])
        self._dir_re = self._compile(patterns)

    def _compile(self, patterns: list[Pattern]) -> tuple[re.Pattern[str], list[bool]] | None:
        if not patterns:
            return None
        ordered = list(reversed(patterns))
        regex = "|".join(f"(?P<p{i}>{p.regex})" for i, p in enumerate(ordered))
        return re.compile(regex, re.DOTALL), [p.negate for p in ordered]

    def verdict(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by a negation, None: no pattern matches (or the
        path is not below ``base``)."""
        if not path.startswith(self.prefix):
            return None
        compiled = self._dir_re if is_dir else self._file_re
        if compiled is None:
            return None
        regex, negations = compiled
        rel = path[len(self.prefix) :]
        if os.sep != "/":
            rel = rel.replace(os.sep, "/")
        match = regex.fullmatch(rel)
        if match is None or match.lastgroup is None:
            return None
        return not negations[int(match.lastgroup[1:])]


def load_dir(directory: str) -> IgnoreFile | None:
    """The ignore files of ``directory`` (``.gitignore`` then ``.memframeignore``), or None."""
    patterns: list[Pattern] = []
    for name in IGNORE_FILES:
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
            continue
        for line in lines:
            pattern = parse_line(line)
            if pattern is not None:
                patterns.append(pattern)
    return IgnoreFile(directory, patterns) if patterns else None


IgnoreStack = tuple[IgnoreFile, ...]


def push(
    stack: IgnoreStack, directory: str, cache: dict[str, IgnoreFile | None] | None = None
) -> IgnoreStack:
    """``stack`` with the ignore files of ``directory`` (an absolute path) added, if any;
    ``cache`` keeps directories already read (many named files share their ancestors)."""
    if cache is None:
        loaded = load_dir(directory)
    elif directory in cache:
        loaded = cache[directory]
    else:
        loaded = cache[directory] = load_dir(directory)
    return stack if loaded is None else (*stack, loaded)


def is_ignored(stack: IgnoreStack, path: str, *, is_dir: bool) -> bool:
    """Whether ``path`` (absolute) is ignored by the patterns in ``stack`` (outermost first)."""
    result = False
    for ignore_file in stack:
        verdict = ignore_file.verdict(path, is_dir)
        if verdict is not None:
            result = verdict
    return result
