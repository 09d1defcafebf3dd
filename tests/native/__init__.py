"""Tests of the native engine (``memframe._native``) and of the engines against each other."""

from __future__ import annotations

from types import ModuleType

from memframe import _backend
from memframe.errors import BackendError


def _native() -> ModuleType | None:
    try:
        return _backend.get_engine("native").module
    except BackendError:
        return None


NATIVE = _native()  # the extension module, or None when it is not built
