"""The team gate's scan: everything that leaves the machine, in every form a secret can take.

A team entry is a key (its file name under ``team/``) and a text. :func:`gate_findings` scans
both, and also what the text *decodes to*, so a secret cannot be walked past the gate by
encoding it:

- **base64**: every run of at least 20 base64 characters (standard or URL-safe alphabet,
  padding optional) that decodes to mostly printable UTF-8 (a kubeconfig ``client-key-data``,
  a pasted ``echo … | base64``);
- **percent-encoding**: a text with ``%XX`` escapes, unquoted (``ghp%5Fabc…`` in a URL);
- **escapes**: a text with JSON/JavaScript/Python string escapes (``\\uXXXX``, ``\\xXX``,
  ``\\n``, ``\\"`` …) decoded (``"-----BEGIN…\\nMII…"`` in a JSON string).

Decoded text is scanned again, up to :data:`MAX_DEPTH` layers deep, within a budget of
:data:`MAX_DECODED_BYTES` decoded characters per entry (so a hostile entry cannot make the gate
slow). The client runs this before a push and the server before it stores an entry, with the
same rules: what either refuses is listed with where it was found (``file name``,
``base64``, ``percent-encoding``, ``escapes``).
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memframe.scanner import SecretScanner

MAX_DEPTH = 3
MAX_DECODED_BYTES = 4 * 1024 * 1024
MAX_BLOCKS = 1_000  # base64 candidates looked at per text
MIN_BASE64 = 20
_BASE64 = re.compile(rf"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{{{MIN_BASE64},}}={{0,2}}")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_ESCAPE = re.compile(r"\\(?:u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|[nrt\"'/\\])")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "/": "/", "\\": "\\"}

KEY = "file name"
TEXT = "text"


@dataclass(frozen=True, slots=True)
class GateFinding:
    """A rule that matched an entry: where (``TEXT``, ``KEY`` or the decoding that revealed it,
    e.g. ``"base64"`` or ``"percent-encoding > base64"``) and on which line of the entry's text
    (``0`` for the key)."""

    rule_id: str
    where: str
    line: int

    def describe(self) -> str:
        return self.rule_id if self.where == TEXT else f"{self.rule_id} (in the {self.where})"


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _printable(text: str) -> bool:
    if not text:
        return False
    good = sum(1 for c in text if c.isprintable() or c in "\n\r\t")
    return good >= 0.9 * len(text)


def _base64_blocks(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, decoded)`` of each base64 run that decodes to printable text."""
    for count, match in enumerate(_BASE64.finditer(text)):
        if count >= MAX_BLOCKS:
            return
        block = match.group().rstrip("=")
        if block.isalpha() or block.isdigit():  # a word or a number, not an encoding
            continue
        padded = block + "=" * (-len(block) % 4)
        alphabet_safe = "-" in block or "_" in block
        try:
            raw = (
                base64.urlsafe_b64decode(padded)
                if alphabet_safe
                else base64.b64decode(padded, validate=True)
            )
        except (binascii.Error, ValueError):
            continue
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if _printable(decoded):
            yield match.start(), decoded


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        token = match.group()[1:]
        if token[0] in "ux":
            return chr(int(token[1:], 16))
        return _ESCAPES[token]

    return _ESCAPE.sub(one, text)


def _decodings(text: str) -> Iterator[tuple[str, int, str]]:
    """``(name, offset, decoded)`` of each decoding of ``text`` worth scanning."""
    if _PERCENT.search(text):
        decoded = urllib.parse.unquote(text, errors="replace")
        if decoded != text:
            yield "percent-encoding", 0, decoded
    if _ESCAPE.search(text):
        decoded = _unescape(text)
        if decoded != text:
            yield "escapes", 0, decoded
    for offset, decoded in _base64_blocks(text):
        yield "base64", offset, decoded


def gate_findings(scanner: SecretScanner, key: str, text: str) -> list[GateFinding]:
    """Every rule that matches the entry ``key`` / ``text`` or a decoding of its text; each rule
    once (where it was first found: the key, the text, then the decodings), in that order."""
    found: dict[str, GateFinding] = {}

    def add(rule_id: str, where: str, line: int) -> None:
        found.setdefault(rule_id, GateFinding(rule_id, where, line))

    for finding in scanner.find(key):
        add(finding.rule_id, KEY, 0)
    for finding in scanner.find(text):
        add(finding.rule_id, TEXT, finding.line)
    budget = MAX_DECODED_BYTES
    # breadth-first over decodings: (decoded text, how it was reached, line in the original)
    layer: list[tuple[str, str, int]] = [(text, "", 1)]
    for _ in range(MAX_DEPTH):
        following: list[tuple[str, str, int]] = []
        for current, path, line in layer:
            for name, offset, decoded in _decodings(current):
                if budget <= 0:
                    break
                decoded = decoded[:budget]
                budget -= len(decoded)
                where = f"{path} > {name}" if path else name
                at = line if path else _line_of(text, offset)
                for finding in scanner.find(decoded):
                    add(finding.rule_id, where, at)
                following.append((decoded, where, at))
        layer = following
        if not layer or budget <= 0:
            break
    return list(found.values())
