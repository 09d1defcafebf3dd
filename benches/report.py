"""Printing result tables and writing the JSON results file."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benches.harness import BenchResult, Metric


def _cell(value: Metric) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(result: BenchResult) -> str:
    """The result's rows as an aligned text table (columns: every metric, first-seen order)."""
    columns: list[str] = []
    for metrics in result.rows.values():
        columns.extend(key for key in metrics if key not in columns)
    header = ["", *columns]
    body = [
        [row, *(_cell(metrics.get(col)) for col in columns)] for row, metrics in result.rows.items()
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def fmt(line: list[str]) -> str:
        first = line[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    rule = "-" * len(fmt(header))
    return "\n".join([fmt(header), rule, *(fmt(line) for line in body)])


def _json_safe(value: Any) -> Any:
    """NaN and infinities become ``null`` so the file is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    """Write ``document`` to ``path`` atomically (temp file beside it, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(_json_safe(document), indent=2, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
