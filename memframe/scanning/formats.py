"""Reports: ``text`` (one line per finding), ``json``, ``sarif`` (SARIF 2.1.0) and ``csv``.

No format contains a secret: findings show a masked preview (the first four characters and an
ellipsis) and a fingerprint (:func:`memframe.scanning.baseline.fingerprint`).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from typing import Any

import orjson

from memframe._version import __version__
from memframe.rules import RuleSet
from memframe.scanning.baseline import fingerprint
from memframe.scanning.hits import Hit

FORMATS = ("text", "json", "sarif", "csv")
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/memframe/"
FINGERPRINT_KEY = "memframeSecret/v1"
CSV_COLUMNS = (
    "path",
    "line",
    "column",
    "end_line",
    "end_column",
    "rule_id",
    "label",
    "json_path",
    "preview",
    "fingerprint",
)


def rule_name(rule_id: str) -> str:
    """A SARIF rule name: the id in PascalCase (``aws-access-token`` → ``AwsAccessToken``)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_.]+", rule_id))


def _location(hit: Hit) -> str:
    where = f"{hit.path}:{hit.line}"
    return where if hit.column is None else f"{where}:{hit.column}"


def render_text(hits: Sequence[Hit]) -> str:
    lines = []
    for hit in hits:
        inside = f" at {hit.json_path}" if hit.json_path else ""
        lines.append(f"{_location(hit)}: {hit.rule_id} ({hit.label}){inside}: {hit.preview}")
    return "".join(line + "\n" for line in lines)


def _record(hit: Hit) -> dict[str, Any]:
    return {
        "path": hit.path,
        "line": hit.line,
        "column": hit.column,
        "end_line": hit.end_line,
        "end_column": hit.end_column,
        "rule_id": hit.rule_id,
        "label": hit.label,
        "json_path": hit.json_path,
        "preview": hit.preview,
        "fingerprint": fingerprint(hit),
    }


def render_json(hits: Sequence[Hit], summary: dict[str, Any]) -> str:
    document = {"findings": [_record(h) for h in hits], "summary": summary}
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def render_csv(hits: Sequence[Hit]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for hit in hits:
        writer.writerow({k: "" if v is None else v for k, v in _record(hit).items()})
    return buffer.getvalue()


def _sarif_result(hit: Hit, rule_index: dict[str, int]) -> dict[str, Any]:
    region: dict[str, int] = {"startLine": hit.line}
    if hit.column is not None and hit.end_column is not None:
        region.update(startColumn=hit.column, endLine=hit.end_line, endColumn=hit.end_column)
    location: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": {"uri": hit.uri}, "region": region}
    }
    if hit.json_path:
        location["logicalLocations"] = [{"fullyQualifiedName": hit.json_path, "kind": "member"}]
    inside = f" at {hit.json_path}" if hit.json_path else ""
    result: dict[str, Any] = {
        "ruleId": hit.rule_id,
        "level": "error",
        "message": {"text": f"{hit.label}{inside}: {hit.preview}"},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(hit)},
    }
    if hit.rule_id in rule_index:
        result["ruleIndex"] = rule_index[hit.rule_id]
    return result


def render_sarif(hits: Sequence[Hit], rules: RuleSet) -> str:
    rule_index = {rule.id: i for i, rule in enumerate(rules)}
    driver = {
        "name": "memframe",
        "version": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [
            {
                "id": rule.id,
                "name": rule_name(rule.id),
                "shortDescription": {"text": rule.label},
                "defaultConfiguration": {"level": "error"},
            }
            for rule in rules
        ],
    }
    run = {
        "tool": {"driver": driver},
        "columnKind": "unicodeCodePoints",
        "results": [_sarif_result(h, rule_index) for h in hits],
    }
    document = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def render(fmt: str, hits: Sequence[Hit], *, rules: RuleSet, summary: dict[str, Any]) -> str:
    if fmt == "text":
        return render_text(hits)
    if fmt == "json":
        return render_json(hits, summary)
    if fmt == "sarif":
        return render_sarif(hits, rules)
    if fmt == "csv":
        return render_csv(hits)
    raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
