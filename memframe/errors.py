"""Exceptions shared across memframe that must be importable without side effects."""


class BackendError(RuntimeError):
    """The requested backend cannot be used (not built, wrong version, missing package)."""


class BackendFallbackWarning(RuntimeWarning):
    """The best backend is unavailable and a slower one is in use."""
