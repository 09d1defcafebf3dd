"""Token estimation in pure Python, identical to ``memframe-core``'s ``tokens`` module."""

from __future__ import annotations


def count_tokens(text: str) -> int:
    """Estimated number of model tokens in ``text``: ``ceil(utf8_bytes / 4)``."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    return -(-len(text.encode("utf-8")) // 4)
