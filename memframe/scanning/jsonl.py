"""JSONL files (transcripts): every JSON string value, decoded, is scanned.

Decoding first means escapes (``\\n``, ``\\"``, ``\\u0041``) cannot hide a secret: a PEM key inside
a string with ``\\n`` escapes is found, and a finding is reported with the line of its record and
the JSON path of its string (``message.content[2].input.command``). The file is streamed record
by record; a line that is not JSON is scanned as plain text, and a line longer than
``max_record_bytes`` is scanned in windows (:mod:`memframe.scanning.windows`) without being held.

Throughput: the string values of many records are joined with a separator that no rule can match
across (``\\n\\0\\n``) and scanned in one call; only the strings a candidate finding touches are
scanned again on their own, which gives exactly the findings of scanning each string by itself.
That shortcut needs rules whose meaning does not depend on where the text ends (no ``\\A``, and
``\\z`` only as an alternative to a trailing separator class); other rule sets scan each string.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, BinaryIO

import orjson

from memframe.rules import RuleSet
from memframe.scanner import Finding, SecretScanner
from memframe.scanning.hits import Hit, char_to_byte, text_hits
from memframe.scanning.redact import span_replacements
from memframe.scanning.windows import scan_range
from memframe.transcripts._jsonl import iter_lines

MAX_RECORD_BYTES = 64 << 20
CHUNK_BYTES = 1 << 20
BATCH_BYTES = 4 << 20
SEPARATOR = "\n\0\n"
_BOM = b"\xef\xbb\xbf"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(slots=True)
class JsonlResult:
    """Hits, and what a redacted copy needs: per record line, ``(start, end, {string index:
    secret spans})`` for parsed records, and absolute byte spans for lines scanned as text."""

    hits: list[Hit] = field(default_factory=list)
    records: dict[int, tuple[int, int, dict[int, list[tuple[int, int]]]]] = field(
        default_factory=dict
    )
    spans: list[tuple[int, int]] = field(default_factory=list)


def joinable(rules: RuleSet) -> bool:
    """Whether joined scanning gives the same findings as scanning each string alone."""
    for rule in rules:
        regex = rule.regex.replace("|\\z)", "")
        if "\\A" in regex or "\\z" in regex or "\\Z" in regex:
            return False
    return True


def collect_strings(value: Any, out: list[str]) -> None:
    """Append every string value of ``value`` (depth-first, document order)."""
    kind = type(value)
    if kind is str:
        out.append(value)
        return
    items = value.values() if kind is dict else value if kind is list else ()
    for item in items:
        if type(item) is str:
            out.append(item)
        elif type(item) is dict or type(item) is list:
            collect_strings(item, out)


def _key(key: str) -> str:
    return f".{key}" if _IDENTIFIER.match(key) else f"[{orjson.dumps(key).decode()}]"


def json_path(value: Any, index: int) -> str:
    """The path of the ``index``-th string value (in :func:`collect_strings` order)."""
    counter = [0]

    def walk(node: Any, path: str) -> str | None:
        if type(node) is str:
            if counter[0] == index:
                return path
            counter[0] += 1
            return None
        children: Any = (
            ((_key(k), v) for k, v in node.items())
            if type(node) is dict
            else ((f"[{i}]", v) for i, v in enumerate(node))
            if type(node) is list
            else ()
        )
        for suffix, child in children:
            found = walk(child, path + suffix)
            if found is not None:
                return found
        return None

    found = walk(value, "")
    if not found:
        return "$"
    return found[1:] if found.startswith(".") else found


def redact_strings(value: Any, spans: dict[int, list[tuple[int, int]]]) -> Any:
    """``value`` with the secret spans of its ``index``-th strings replaced by ``[REDACTED]``."""
    from memframe.scanner import redact_spans

    counter = [0]

    def walk(node: Any) -> Any:
        if type(node) is str:
            index = counter[0]
            counter[0] += 1
            return redact_spans(node, spans[index]) if index in spans else node
        if type(node) is dict:
            return {k: walk(v) for k, v in node.items()}
        if type(node) is list:
            return [walk(v) for v in node]
        return node

    return walk(value)


def redaction_replacements(handle: BinaryIO, result: JsonlResult) -> list[tuple[int, int, bytes]]:
    """What a redacted copy of the scanned file replaces: each record with findings
    re-serialised with its secrets redacted (whole line), and ``[REDACTED]`` for the secrets of
    lines scanned as text."""
    replacements = span_replacements(result.spans)
    for start, end, spans in result.records.values():
        handle.seek(start)
        line = handle.read(end - start)
        if line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        value = redact_strings(orjson.loads(line), spans)
        replacements.append((start, end, orjson.dumps(value)))
    return replacements


@dataclass(slots=True)
class _Record:
    line_no: int
    start: int
    end: int
    data: bytes
    first: int
    count: int


class _Batch:
    def __init__(self) -> None:
        self.records: list[_Record] = []
        self.strings: list[str] = []
        self.chars = 0


class JsonlScanner:
    """Scans one JSONL file (see the module docstring)."""

    def __init__(
        self,
        scanner: SecretScanner,
        *,
        known_rules: Collection[str],
        threads: int | None = None,
        keep_redactions: bool = False,
        on_bytes: Callable[[int], None] | None = None,
        max_record_bytes: int = MAX_RECORD_BYTES,
    ) -> None:
        self.scanner = scanner
        self.max_record_bytes = max_record_bytes
        self.known_rules = known_rules
        self.threads = threads
        self.keep_redactions = keep_redactions
        self.on_bytes = on_bytes
        self.join = joinable(scanner.rules)

    def scan(self, handle: BinaryIO, *, path: str, uri: str) -> JsonlResult:
        result = JsonlResult()
        batch = _Batch()
        overlong: list[tuple[int, int, int]] = []
        done = 0
        for line in iter_lines(handle, self.max_record_bytes, chunk_size=CHUNK_BYTES):
            line_no, start, end, data = line.number, line.start, line.end, line.data
            if data is None:
                overlong.append((line_no, start, end))
                continue
            raw = data[3:] if line_no == 1 and data.startswith(_BOM) else data
            if not raw.strip():
                continue
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self._plain_line(data, line_no, start, path, uri, result)
                continue
            first = len(batch.strings)
            try:
                collect_strings(value, batch.strings)
            except RecursionError:  # nested deeper than Python recurses: scan it as text
                del batch.strings[first:]
                self._plain_line(data, line_no, start, path, uri, result)
                continue
            count = len(batch.strings) - first
            if count:
                batch.records.append(_Record(line_no, start, end, raw, first, count))
                batch.chars += len(raw)
            if batch.chars >= BATCH_BYTES:
                self._flush(batch, path, uri, result)
                batch = _Batch()
                if self.on_bytes is not None:
                    self.on_bytes(end - done)
                    done = end
        self._flush(batch, path, uri, result)
        for line_no, start, end in overlong:
            ranged = scan_range(
                self.scanner,
                handle,
                start,
                end,
                path=path,
                uri=uri,
                known_rules=self.known_rules,
                line_base=line_no - 1,
                threads=self.threads,
            )
            result.hits.extend(ranged.hits)
            result.spans.extend(ranged.spans)
        if self.on_bytes is not None:
            self.on_bytes(handle.seek(0, 2) - done)
        return result

    def _plain_line(
        self, data: bytes, line_no: int, start: int, path: str, uri: str, result: JsonlResult
    ) -> None:
        found = self.scanner.find(data)
        if not found:
            return
        text = data.decode("utf-8", "surrogateescape")
        result.hits.extend(
            text_hits(
                text,
                found,
                path=path,
                uri=uri,
                known_rules=self.known_rules,
                line_base=line_no - 1,
            )
        )
        to_byte = char_to_byte(text, [o for f in found for o in (f.secret_start, f.secret_end)])
        result.spans.extend(
            (start + to_byte[f.secret_start], start + to_byte[f.secret_end]) for f in found
        )

    def _candidates(self, strings: list[str]) -> list[int]:
        """Indices of the strings that may hold a finding."""
        if not self.join:
            return list(range(len(strings)))
        joined = SEPARATOR.join(strings)
        found = self.scanner.find_many([joined], threads=self.threads)[0]
        if not found:
            return []
        starts = list(
            accumulate(map(len, strings), lambda at, n: at + n + len(SEPARATOR), initial=0)
        )
        touched: set[int] = set()
        for f in found:
            first = bisect.bisect_right(starts, f.start) - 1
            last = bisect.bisect_right(starts, max(f.start, f.end)) - 1
            touched.update(range(first, last + 1))
        return sorted(touched)

    def _flush(self, batch: _Batch, path: str, uri: str, result: JsonlResult) -> None:
        if not batch.strings:
            return
        candidates = self._candidates(batch.strings)
        if not candidates:
            return
        found_many = self.scanner.find_many(
            [batch.strings[i] for i in candidates], threads=self.threads
        )
        firsts = [r.first for r in batch.records]
        parsed: dict[int, Any] = {}
        for index, found in zip(candidates, found_many, strict=True):
            if found:
                record = batch.records[bisect.bisect_right(firsts, index) - 1]
                self._string_hits(record, index, found, batch, parsed, path, uri, result)

    def _string_hits(
        self,
        record: _Record,
        index: int,
        found: list[Finding],
        batch: _Batch,
        parsed: dict[int, Any],
        path: str,
        uri: str,
        result: JsonlResult,
    ) -> None:
        value = parsed.get(record.line_no)
        if value is None:
            value = parsed[record.line_no] = orjson.loads(record.data)
        local = index - record.first
        result.hits.extend(
            text_hits(
                batch.strings[index],
                found,
                path=path,
                uri=uri,
                known_rules=self.known_rules,
                line_base=record.line_no,
                json_path=json_path(value, local),
            )
        )
        if self.keep_redactions:
            entry = result.records.setdefault(record.line_no, (record.start, record.end, {}))
            entry[2][local] = [(f.secret_start, f.secret_end) for f in found]
