"""Pure-Python twin of ``memframe._native``: same names, same results.

Used by the ``python`` and ``hyperscan`` backends, and as the reference the native code is
tested against. The scanner engines live in ``memframe._fallback.scan`` and
``memframe._hyperscan``.
"""

from memframe._fallback.checksum import (
    sha256,
    sha256_many,
    xxh3_64,
    xxh3_64_many,
    xxh3_128,
    xxh3_128_many,
)
from memframe._fallback.tokens import count_tokens, count_tokens_many

__all__ = [
    "count_tokens",
    "count_tokens_many",
    "sha256",
    "sha256_many",
    "xxh3_64",
    "xxh3_64_many",
    "xxh3_128",
    "xxh3_128_many",
]
