"""PostgreSQL URLs in messages: never a password. Plain string work, so what only names a
database (``memframe scan`` planning a Dask task, a report) does not need the driver."""

from __future__ import annotations

import re

_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^@/?#]*)@")
_PASSWORD_PARAM = re.compile(r"(password=)([^&\s]*)", re.IGNORECASE)


def passwords(url: str) -> list[str]:
    """Every string in ``url`` that may be a password (also for URLs libpq cannot parse)."""
    found = [m.group(2) for m in _PASSWORD_PARAM.finditer(url)]
    userinfo = _USERINFO.match(url)
    if userinfo and ":" in userinfo.group(1):
        found.append(userinfo.group(1).split(":", 1)[1])
    return [p for p in found if p]


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***``."""
    userinfo = _USERINFO.match(url)
    if userinfo and ":" in userinfo.group(1):
        user = userinfo.group(1).split(":", 1)[0]
        url = url[: userinfo.start(1)] + f"{user}:***" + url[userinfo.end(1) :]
    return _PASSWORD_PARAM.sub(r"\1***", url)
