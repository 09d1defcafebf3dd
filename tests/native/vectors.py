"""The per-rule test vectors of tests/vectors/<rule-id>.toml, loaded once."""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

VECTORS = Path(__file__).parents[1] / "vectors"


@dataclass(frozen=True)
class Vector:
    rule_id: str
    context: str
    text: str
    secret: str | None  # None for a negative vector
    flagged_by: tuple[str, ...] = ()  # a negative's other rules that rightly report it


@functools.cache
def all_vectors() -> tuple[Vector, ...]:
    vectors = []
    for path in sorted(VECTORS.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for item in data.get("positive", []):
            vectors.append(Vector(path.stem, item["context"], item["text"], item["secret"]))
        for item in data.get("negative", []):
            flagged = tuple(item.get("flagged_by", ()))
            vectors.append(Vector(path.stem, item["context"], item["text"], None, flagged))
    return tuple(vectors)


def positives() -> list[Vector]:
    return [v for v in all_vectors() if v.secret is not None]


def negatives() -> list[Vector]:
    return [v for v in all_vectors() if v.secret is None]
