"""Checksums in pure Python (hashlib and python-xxhash), identical to the native ones."""

from __future__ import annotations

import hashlib

import xxhash


def _as_bytes(data: str | bytes) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, bytes):
        return data
    raise TypeError(f"expected str or bytes, got {type(data).__name__}")


def sha256(data: str | bytes) -> str:
    """``"sha256:<hex>"`` of the UTF-8 encoding of a str, or of bytes."""
    return "sha256:" + hashlib.sha256(_as_bytes(data)).hexdigest()


def _entries(items: object) -> list[str | bytes]:
    # Same contract as the native batch functions: a list or tuple of str/bytes.
    if not isinstance(items, list | tuple):
        raise TypeError(f"expected a list or tuple of str or bytes, got {type(items).__name__}")
    return list(items)


def sha256_many(items: list[str | bytes], threads: int | None = None) -> list[str]:
    """``sha256`` of every entry (``threads`` is accepted for parity with the native engine)."""
    return [sha256(item) for item in _entries(items)]


def xxh3_64_many(items: list[str | bytes], threads: int | None = None) -> list[int]:
    """``xxh3_64`` of every entry."""
    return [xxh3_64(item) for item in _entries(items)]


def xxh3_128_many(items: list[str | bytes], threads: int | None = None) -> list[int]:
    """``xxh3_128`` of every entry."""
    return [xxh3_128(item) for item in _entries(items)]


def xxh3_64(data: str | bytes) -> int:
    """xxh3-64 (seed 0) of a str's UTF-8 encoding or of bytes."""
    return xxhash.xxh3_64_intdigest(_as_bytes(data))


def xxh3_128(data: str | bytes) -> int:
    """xxh3-128 (seed 0) of a str's UTF-8 encoding or of bytes."""
    return xxhash.xxh3_128_intdigest(_as_bytes(data))
