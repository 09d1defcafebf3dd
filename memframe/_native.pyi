"""Type stubs for the Rust extension ``memframe._native`` (checked by ``mypy.stubtest``)."""

from os import PathLike
from typing import final

__all__ = [
    "BUILD_PROFILE",
    "CORE_VERSION",
    "HS_SOURCE",
    "HS_VERSION",
    "SCAN_DETACH_MIN_BYTES",
    "Scanner",
    "__version__",
    "count_tokens",
    "count_tokens_many",
    "pattern_error",
    "sha256",
    "sha256_many",
    "xxh3_64",
    "xxh3_64_many",
    "xxh3_128",
    "xxh3_128_many",
]
__version__: str
CORE_VERSION: str
BUILD_PROFILE: str
HS_VERSION: str
HS_SOURCE: str
SCAN_DETACH_MIN_BYTES: int

_FindingTuple = tuple[int, int, int, int, int, int]

def sha256(data: str | bytes) -> str: ...
def sha256_many(
    items: list[str | bytes] | tuple[str | bytes, ...], threads: int | None = None
) -> list[str]: ...
def xxh3_64(data: str | bytes) -> int: ...
def xxh3_64_many(
    items: list[str | bytes] | tuple[str | bytes, ...], threads: int | None = None
) -> list[int]: ...
def xxh3_128(data: str | bytes) -> int: ...
def xxh3_128_many(
    items: list[str | bytes] | tuple[str | bytes, ...], threads: int | None = None
) -> list[int]: ...
def count_tokens(text: str) -> int: ...
def count_tokens_many(
    texts: list[str] | tuple[str, ...], threads: int | None = None
) -> list[int]: ...
def pattern_error(regex: str) -> str | None: ...

@final
class Scanner:
    def __new__(cls, rules_json: str, cache_dir: str | PathLike[str] | None = None) -> Scanner: ...
    @property
    def rule_count(self) -> int: ...
    @property
    def rejected(self) -> list[tuple[int, str]]: ...
    @property
    def database_error(self) -> str | None: ...
    @property
    def cache(self) -> str: ...
    @property
    def scan_failures(self) -> int: ...
    def find(self, text: str | bytes) -> list[_FindingTuple]: ...
    def scan(self, text: str | bytes) -> list[int]: ...
    def find_many(
        self, texts: list[str | bytes], threads: int | None = None
    ) -> list[list[_FindingTuple]]: ...
    def scan_many(
        self, texts: list[str | bytes], threads: int | None = None
    ) -> list[list[int]]: ...
    def database_pass_many(
        self, texts: list[str | bytes], threads: int | None = None
    ) -> list[int]: ...
    def find_files(
        self, paths: list[str | PathLike[str]], threads: int | None = None
    ) -> list[tuple[list[_FindingTuple], str | None]]: ...
