"""Personal data that must not enter memory: e-mail addresses and phone numbers.

``find_personal(text)`` gives the spans; :func:`memframe.memdir.guard.scrub` redacts them, with
the secret scanner's findings, before anything is written to a memory file, an index line or
session notes. Documentation addresses (``@example.com`` / ``.org`` / ``.net``, RFC 2606) and
``noreply@`` senders are not personal. Postal addresses are not detected.
"""

from __future__ import annotations

import re
from typing import Final

EMAIL: Final = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*"
    r"\.[A-Za-z]{2,24}\b"
)
# International (+CC …) numbers of 8-15 digits with the usual separators, and North American
# (NNN) NNN-NNNN / NNN-NNN-NNNN / NNN.NNN.NNNN forms. Bare digit runs (ids, hashes, times) are
# not phone numbers.
PHONE: Final = re.compile(
    r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?![\w-])"
    r"|(?<![\w(])\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}(?!\w)"
    r"|(?<![\w.-])\d{3}([.-])\d{3}\1\d{4}(?![\w.-])"
)
_DOCUMENTATION = re.compile(r"@example\.(?:com|org|net)$|^noreply@|^no-reply@", re.IGNORECASE)


def _digits(text: str) -> int:
    return sum(c.isdigit() for c in text)


def find_personal(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of every e-mail address and phone number, kind ``email`` or
    ``phone``, in text order."""
    found: list[tuple[int, int, str]] = []
    for match in EMAIL.finditer(text):
        if not _DOCUMENTATION.search(match.group()):
            found.append((match.start(), match.end(), "email"))
    for match in PHONE.finditer(text):
        if 8 <= _digits(match.group()) <= 15 or not match.group().startswith("+"):
            found.append((match.start(), match.end(), "phone"))
    return sorted(found)
