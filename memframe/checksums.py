"""Checksums, byte-identical on every engine to ``hashlib`` / python-xxhash.

``sha256`` gives ``"sha256:<hex>"`` of a str's UTF-8 encoding (or of bytes) — the team sync wire
format; ``xxh3_64`` / ``xxh3_128`` are xxh3 with seed 0, as integers. The ``_many`` forms take a
list or tuple of str/bytes and run in parallel with the GIL released on the native engine.
"""

from __future__ import annotations

from memframe._backend import sha256, sha256_many, xxh3_64, xxh3_64_many, xxh3_128, xxh3_128_many

__all__ = ["sha256", "sha256_many", "xxh3_64", "xxh3_64_many", "xxh3_128", "xxh3_128_many"]
