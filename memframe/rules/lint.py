"""The portable regex subset: :func:`lint_pattern` and :func:`to_python_regex`.

Patterns must behave identically in Python ``re`` (with ``re.ASCII``), the Rust ``regex`` crate in
bytes mode with Unicode off, and Hyperscan (candidate detection, no start-of-match). See the
package docstring of :mod:`memframe.rules` for the list of what is rejected and why.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["lint_pattern", "to_python_regex"]

_GROUP_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_REPEAT_RE: Final = re.compile(r"\{(\d+)(,(\d*))?\}")
_MAX_REPEAT: Final = 5000

# Escaped punctuation that means the same literal character in Python, Rust and Hyperscan.
_PUNCT_ESCAPES: Final = frozenset("\\.+*?()[]{}|^$-/#&~ \"':=,!@%;`")
_ESCAPES_OUTSIDE: Final = frozenset("bBAzdDwWsStnrfv")
_ESCAPES_IN_CLASS: Final = frozenset("dDwWsStnrfv")


def lint_pattern(pattern: str, *, strict: bool = False) -> list[str]:
    """Return the problems that keep ``pattern`` out of the portable regex subset (empty = fine).

    ``strict`` (used for the bundled rules) additionally requires every negated class to sit under a
    greedy ``*`` or ``+``: a bare ``[^...]`` consumes one *byte* of a multi-byte character in Rust
    but the whole character in Python, so match offsets could differ.
    """
    return _Linter(pattern, strict).run()


class _Linter:
    def __init__(self, pattern: str, strict: bool) -> None:
        self.p = pattern
        self.n = len(pattern)
        self.strict = strict
        self.problems: list[str] = []

    def problem(self, pos: int, message: str) -> None:
        self.problems.append(f"at offset {pos}: {message}")

    def run(self) -> list[str]:
        p = self.p
        if not p:
            return ["the pattern is empty"]
        if not p.isascii():
            self.problems.append(
                "the pattern must be ASCII (write non-ASCII bytes as \\xHH escapes)"
            )
        i = 4 if p.startswith("(?i)") else 0
        quantifiable = False
        while i < self.n:
            c = p[i]
            if c == "\\":
                i, negated = self.escape(i, in_class=False)
                if negated:
                    self.after_negated(i, f"\\{p[i - 1]}")
                quantifiable = True
            elif c == "[":
                i, negated = self.char_class(i)
                if negated:
                    self.after_negated(i, "a negated class")
                quantifiable = True
            elif c == "(":
                i = self.group(i)
                quantifiable = False
            elif c == ")":
                i += 1
                quantifiable = True
            elif c == ".":
                self.problem(
                    i, "'.' is not allowed: write an explicit ASCII class such as [A-Za-z0-9]"
                )
                i += 1
                quantifiable = True
            elif c in "^$":
                self.problem(
                    i, f"{c!r} is not allowed: use \\b, \\A, \\z or an explicit boundary class"
                )
                i += 1
                quantifiable = True
            elif c in "*+?{":
                if not quantifiable:
                    self.problem(i, f"{c!r} repeats nothing (escape a literal {c!r})")
                i = self.quantifier(i)
                quantifiable = False
            else:
                i += 1
                quantifiable = c != "|"
        return self.problems

    def escape(self, i: int, *, in_class: bool) -> tuple[int, bool]:
        """Lint the escape at ``i``; return (next index, whether it is a negated shorthand)."""
        p = self.p
        if i + 1 >= self.n:
            self.problem(i, "trailing backslash")
            return self.n, False
        e = p[i + 1]
        if e == "x":
            digits = p[i + 2 : i + 4]
            if len(digits) != 2 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                self.problem(i, "\\x must be followed by exactly two hex digits")
            return i + 4, False
        if e.isdigit():
            self.problem(i, f"backreferences and octal escapes (\\{e}) are not allowed")
        elif e in "gk":
            self.problem(i, f"backreferences (\\{e}) are not allowed")
        elif e in "pPNuU":
            self.problem(i, f"Unicode escapes (\\{e}) are not allowed: use ASCII classes")
        elif e == "Z":
            self.problem(i, "\\Z is not portable: write end of text as \\z")
        elif e.isalpha():
            allowed = _ESCAPES_IN_CLASS if in_class else _ESCAPES_OUTSIDE
            if e not in allowed:
                where = " inside a class" if in_class else ""
                self.problem(i, f"escape \\{e} is not supported by every engine{where}")
        elif e not in _PUNCT_ESCAPES:
            self.problem(i, f"escape \\{e} is not portable (Rust gives some escapes a meaning)")
        return i + 2, e in "DWS"

    def char_class(self, i: int) -> tuple[int, bool]:
        """Lint the class at ``i``; return (index after it, whether it matches non-ASCII)."""
        p = self.p
        start = i
        i += 1
        negated = False
        if i < self.n and p[i] == "^":
            negated = True
            i += 1
        if i < self.n and p[i] == "]":
            i += 1
        while i < self.n:
            c = p[i]
            if c == "]":
                return i + 1, negated
            if c == "\\":
                i, neg = self.escape(i, in_class=True)
                negated = negated or neg
                continue
            if c == "[":
                self.problem(i, "'[' inside a class (nested set or POSIX class): escape it as \\[")
            elif c in "&~|-" and i + 1 < self.n and p[i + 1] == c:
                self.problem(i, f"{c + c!r} inside a class is a set operation in Rust: escape one")
                i += 1
            i += 1
        self.problem(start, "unterminated character class")
        return self.n, negated

    def group(self, i: int) -> int:
        p = self.p
        if not p.startswith("(?", i):
            return i + 1
        if p.startswith("(?:", i):
            return i + 3
        if p.startswith("(?P<", i):
            end = p.find(">", i)
            name = p[i + 4 : end] if end != -1 else ""
            if end == -1 or not _GROUP_NAME_RE.match(name):
                self.problem(i, "bad group name")
                return i + 4
            return end + 1
        if p.startswith(("(?=", "(?!"), i):
            self.problem(i, f"look-ahead {p[i : i + 3]} is not allowed")
        elif p.startswith(("(?<=", "(?<!"), i):
            self.problem(i, f"look-behind {p[i : i + 4]} is not allowed")
        elif p.startswith("(?P=", i):
            self.problem(i, "backreferences ((?P=name)) are not allowed")
        elif p.startswith("(?#", i):
            self.problem(i, "comments (?#...) are not allowed")
        elif p.startswith("(?>", i):
            self.problem(i, "atomic groups (?>...) are not allowed")
        else:
            self.problem(i, "inline flags are only allowed as a leading (?i)")
        return i + 2

    def quantifier(self, i: int) -> int:
        p = self.p
        if p[i] == "{":
            m = _REPEAT_RE.match(p, i)
            if m is None:
                self.problem(i, "'{' must start {m}, {m,} or {m,n} (escape a literal brace as \\{)")
                return i + 1
            low = int(m.group(1))
            high = m.group(3)
            if high and int(high) < low:
                self.problem(i, f"bad repetition {m.group(0)}: max < min")
            if max(low, int(high or 0)) > _MAX_REPEAT:
                self.problem(i, f"repetition {m.group(0)} exceeds {_MAX_REPEAT}")
            i = m.end()
        else:
            i += 1
        if i < self.n and p[i] == "?":
            i += 1
        if i < self.n and p[i] == "+":
            self.problem(i, "possessive quantifiers are not allowed")
            i += 1
        return i

    def after_negated(self, j: int, what: str) -> None:
        nxt = self.p[j] if j < self.n else ""
        if nxt in ("{", "?"):
            self.problem(
                j,
                f"{what} under a bounded repetition: Rust bytes mode counts bytes where Python "
                "counts characters; use it only under * or +",
            )
        elif self.strict and (nxt not in ("*", "+") or self.p[j + 1 : j + 2] == "?"):
            self.problem(j, f"{what} must be under a greedy * or + (strict mode)")


def to_python_regex(pattern: str) -> str:
    """Translate a subset pattern for Python ``re``: ``\\z`` (end of text) becomes ``\\Z``."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            pair = pattern[i : i + 2]
            out.append("\\Z" if pair == "\\z" else pair)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)
