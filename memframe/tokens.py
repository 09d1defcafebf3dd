"""Token counting, identical on every engine: ``count_tokens(text)`` and
``count_tokens_many(texts, threads=None)`` (parallel with the GIL released on the native
engine). See docs/tokens.md for what is counted and how close it is to each provider."""

from __future__ import annotations

from memframe._backend import count_tokens, count_tokens_many

__all__ = ["count_tokens", "count_tokens_many"]
