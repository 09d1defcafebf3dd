"""Personal data that must not enter memory: e-mail addresses, phone numbers, postal addresses.

``find_personal(text)`` gives the spans; :func:`memframe.memdir.guard.scrub` redacts them, with
the secret scanner's findings, before anything is written to a memory file, an index line or
session notes. Documentation addresses (``@example.com`` / ``.org`` / ``.net``, RFC 2606) and
``noreply@`` senders are not personal.

Postal addresses are found by their street part, conservatively: a house number, one to four
capitalised words and a street type (``221 Baker Street``, ``1600 Pennsylvania Ave NW``, with an
apartment or suite and a ``City, ST 12345`` tail when there is one); a German-style street name
and number (``Musterstraße 12``, ``Alte Gasse 3a``, with a ``, 12345 Stadt`` tail); a French-style
``12 rue de la Paix``; a post-office box. A town or a country alone is not an address.

Which kinds are redacted is a setting (``privacy.redact`` in settings.json, all three by
default; see :func:`personal_kinds`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

EMAIL: Final = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*"
    r"\.[A-Za-z]{2,24}\b"
)
# International (+CC …) numbers of 8-15 digits with the usual separators, and North American
# (NNN) NNN-NNNN / NNN-NNN-NNNN / NNN.NNN.NNNN forms. Bare digit runs (ids, hashes, times) are
# not phone numbers.
PHONE: Final = re.compile(
    r"(?<![\w+])\+\d{1,3}(?:[ .-]?(?:\(\d{1,4}\)|\d{1,4})){2,5}(?![\w-])"
    r"|(?<![\w(])\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}(?!\w)"
    r"|(?<![\w.-])\d{3}([.-])\d{3}\1\d{4}(?![\w.-])"
)
_STREET_TYPES = (
    r"(?:Street|Avenue|Road|Boulevard|Lane|Drive|Court|Place|Terrace|Parkway|Highway|Way|Circle|"
    r"Square|Trail|Crescent|Close|Mews|Row|Grove)\b"
    r"|(?:St|Ave|Rd|Blvd|Ln|Dr|Ct|Pl|Pkwy|Hwy|Cir|Sq)\b\.?"
)
ADDRESS: Final = re.compile(
    # 221B Baker Street; 1600 Pennsylvania Ave NW, Suite 5, Washington, DC 20500
    r"(?<![\w.-])\d{1,6}[A-Za-z]?(?:-\d{1,5})?\s+(?:[NSEW]\.?\s+)?"
    r"(?:[A-Z][A-Za-z'-]{1,30}\s+){1,4}"
    rf"(?:{_STREET_TYPES})(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b)?"
    r"(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|Flat|#)\.?\s*[A-Za-z0-9-]{1,6}\b)?"
    r"(?:,\s+[A-Z][A-Za-z]+(?:\s+[A-Z][A-Za-z]+){0,2},\s+[A-Z]{2}\s+\d{5}(?:-\d{4})?\b)?"
    # Musterstraße 12, 10115 Berlin; Alte Gasse 3a
    r"|(?<![\w-])(?:[A-ZÄÖÜ][a-zäöüß]+(?:straße|strasse|str\.|weg|gasse|platz|allee|damm|ufer)"
    r"|[A-ZÄÖÜ][a-zäöüß]+[ -](?:Straße|Strasse|Weg|Gasse|Platz|Allee|Damm|Ufer))"
    r"\s+\d{1,4}[a-z]?\b(?:,\s*(?:D-)?\d{5}\s+[A-ZÄÖÜ][a-zäöüß]+)?"
    # 12 rue de la Paix; 5 avenue Victor Hugo
    r"|(?<![\w.-])\d{1,4}(?:\s?(?:bis|ter))?,?\s+(?:rue|avenue|boulevard|place|chemin|allée|impasse|quai)"
    r"\s+(?:(?:de|du|des|la|le|l'|d')\s*){0,2}[A-ZÉÈ][\w'-]+(?:\s+[A-ZÉÈ][\w'-]+){0,3}"
    # PO Box 1234
    r"|\bP\.?\s?O\.?\s+Box\s+\d{1,8}\b"
)
PERSONAL_KINDS: Final = ("email", "phone", "address")
_DOCUMENTATION = re.compile(r"@example\.(?:com|org|net)$|^noreply@|^no-reply@", re.IGNORECASE)


def _digits(text: str) -> int:
    return sum(c.isdigit() for c in text)


def find_personal(text: str, kinds: Collection[str] = PERSONAL_KINDS) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of every e-mail address, phone number and postal address (kind
    ``email``, ``phone``, ``address``; only the ``kinds`` asked for), in text order."""
    found: list[tuple[int, int, str]] = []
    if "email" in kinds:
        for match in EMAIL.finditer(text):
            if not _DOCUMENTATION.search(match.group()):
                found.append((match.start(), match.end(), "email"))
    if "phone" in kinds:
        for match in PHONE.finditer(text):
            if 8 <= _digits(match.group()) <= 15 or not match.group().startswith("+"):
                found.append((match.start(), match.end(), "phone"))
    if "address" in kinds:
        found.extend((m.start(), m.end(), "address") for m in ADDRESS.finditer(text))
    return sorted(found)


@dataclass(frozen=True)
class PrivacySettings:
    """``privacy`` in settings.json: which kinds of personal data are redacted from memory."""

    redact: tuple[str, ...] = field(default=PERSONAL_KINDS, metadata={"items": PERSONAL_KINDS})


def personal_kinds(settings: Mapping[str, Any]) -> frozenset[str]:
    """The kinds of personal data to redact under ``settings`` (the whole settings.json
    object); a bad ``privacy`` section is a :class:`~memframe.errors.ConfigError`."""
    from memframe.layer_settings import settings_from

    return frozenset(settings_from(PrivacySettings, settings.get("privacy"), "privacy").redact)
