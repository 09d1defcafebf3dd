"""Exceptions shared across memframe that must be importable without side effects."""


class BackendError(RuntimeError):
    """The requested backend cannot be used (not built, wrong version, missing package)."""


class BackendFallbackWarning(RuntimeWarning):
    """The best backend is unavailable and a slower one is in use."""


class EngineDegradedWarning(RuntimeWarning):
    """The scanning engine left rules out of its one-pass database (they are confirmed by their
    regex over the whole text instead: same findings, slower)."""
