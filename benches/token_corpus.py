"""The offline, reproducible text corpus and the reference BPEs behind ``count_tokens``.

Used by ``scripts/fit_tokens.py`` (fits the estimator on the *fit* half), ``benches/tokens.py``
and ``tests/unit/test_tokens.py`` (report its error on the *held-out* half). Every document is a
file that ships with this machine kind (the Python stdlib, Debian's docs, licences and message
catalogues, node's npm) or with the repository (``tests/data/transcripts``) — nothing is fetched.

Classes (``Document.kind``):

- ``prose``: licence texts (``/usr/share/common-licenses``) and the docstrings of stdlib modules;
- ``markdown``: ``*.md`` under ``/usr/share/doc`` (node's API docs and guides, pip's docs, ...);
- ``python``: stdlib modules (tests excluded);
- ``typescript``: the ``.d.ts`` files npm ships, and the ``.ts``/``.tsx`` sources written, edited
  and read in the bundled Claude Code transcripts;
- ``json``: ``package.json`` files of npm's dependencies, node's API docs as JSON, and the
  transcripts' JSONL records;
- ``cjk``: CPython's ``test/cjkencodings`` texts and the Chinese, Japanese and Korean message
  catalogues (``.mo``) under ``/usr/share/locale``;
- ``mixed``: every message of the bundled transcripts, as ``Message.estimable_text()`` gives it
  (what memframe's context meter estimates) — the "mixed session".

A document's half (``fit`` or ``held``) is decided by a hash of its ``source`` (a path relative
to a stable root, never an absolute one), so it never depends on the load order or the machine.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import re
import struct
import sysconfig
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

KINDS: tuple[str, ...] = ("prose", "markdown", "python", "typescript", "json", "cjk")
MIXED = "mixed"
OTHER = "other"  # other scripts and emoji: fitted and reported, no accuracy bar
ALL_KINDS: tuple[str, ...] = (*KINDS, MIXED, OTHER)

MAX_CHARS = 12_000  # a longer file is cut (at a line end) to keep one file from dominating
MIN_CHARS = 200  # shorter class documents are dropped (mixed-session messages are all kept)

REPO = Path(__file__).resolve().parent.parent
TRANSCRIPTS = REPO / "tests" / "data" / "transcripts"
SHARE = Path("/usr/share")
NODE_MODULES = Path("/usr/lib/node_modules")
CJK_LOCALES = ("zh_CN", "zh_TW", "zh_HK", "ja", "ko")
OTHER_LOCALES = (
    "de",
    "fr",
    "es",
    "pt_BR",
    "pl",
    "tr",
    "vi",
    "ru",
    "uk",
    "el",
    "he",
    "ar",
    "hi",
    "th",
)


@dataclass(frozen=True)
class Document:
    kind: str
    source: str  # a stable id: "<root>:<relative path>[#part]"
    text: str

    @property
    def half(self) -> str:
        """``"fit"`` or ``"held"``, from a hash of ``source``."""
        digest = hashlib.sha256(self.source.encode()).digest()
        return "fit" if digest[0] & 1 == 0 else "held"


def _stdlib() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _cut(text: str, limit: int = MAX_CHARS) -> str:
    """At most ``limit`` characters, cut after the last complete line that fits."""
    if len(text) <= limit:
        return text
    end = text.rfind("\n", 0, limit)
    return text[: end + 1 if end > limit // 2 else limit]


def _sampled(source: str, one_in: int) -> bool:
    """A deterministic 1-in-``one_in`` sample, independent of the fit/held split's hash."""
    digest = hashlib.sha256(b"sample:" + source.encode()).digest()
    return int.from_bytes(digest[:4], "big") % one_in == 0


def _docs(
    kind: str, items: Iterable[tuple[str, str]], *, min_chars: int = MIN_CHARS
) -> list[Document]:
    """Documents of ``kind`` from ``(source, text)`` pairs: cut, deduplicated by text, sorted."""
    seen: set[str] = set()
    docs = []
    for source, raw in items:
        text = _cut(raw)
        if len(text) < min_chars or text in seen:
            continue
        seen.add(text)
        docs.append(Document(kind, source, text))
    docs.sort(key=lambda d: d.source)
    return docs


def _files(root: Path, pattern: str) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob(pattern) if p.is_file() and not p.is_symlink())


# ---------------------------------------------------------------------------------------------
# prose


def _docstrings(path: Path) -> str:
    import ast

    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return ""
    parts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if doc and len(doc) >= 80:
                parts.append(doc)
    return "\n\n".join(parts)


def _stdlib_modules() -> list[tuple[str, Path]]:
    root = _stdlib()
    skip = {"test", "tests", "idle_test", "site-packages", "lib2to3", "turtledemo", "__pycache__"}
    out = []
    for path in _files(root, "*.py"):
        rel = path.relative_to(root)
        if skip.intersection(rel.parts[:-1]):
            continue
        out.append((rel.as_posix(), path))
    return out


def prose() -> list[Document]:
    items: list[tuple[str, str]] = []
    for path in _files(SHARE / "common-licenses", "*"):
        text = _read(path)
        if text:
            items.append((f"licenses:{path.name}", text))
    for rel, path in _stdlib_modules():
        if _sampled("doc:" + rel, 3):
            items.append((f"stdlib-doc:{rel}", _docstrings(path)))
    return _docs("prose", items, min_chars=600)


# ---------------------------------------------------------------------------------------------
# markdown


def markdown() -> list[Document]:
    root = SHARE / "doc"
    items = []
    for path in _files(root, "*.md"):
        text = _read(path)
        if text:
            items.append((f"doc:{path.relative_to(root).as_posix()}", text))
    return _docs("markdown", items)


# ---------------------------------------------------------------------------------------------
# python


def python() -> list[Document]:
    items = []
    for rel, path in _stdlib_modules():
        if _sampled(rel, 3):
            text = _read(path)
            if text:
                items.append((f"stdlib:{rel}", text))
    return _docs("python", items)


# ---------------------------------------------------------------------------------------------
# transcripts (TypeScript sources in tool calls, JSON records, mixed-session messages)

_LINE_NUMBER = re.compile(r"^ *\d+\u2192", re.MULTILINE)  # the Read tool's "     1→" prefix


def _transcript_records() -> Iterator[tuple[str, int, str, dict[str, object]]]:
    """``(file name, line number, raw line, record)`` of every JSON object in the transcripts."""
    for path in _files(TRANSCRIPTS, "*.jsonl"):
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield path.name, number, line.rstrip("\n"), record


def _blocks(record: dict[str, object]) -> list[dict[str, object]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _typescript_from_transcripts() -> Iterator[tuple[str, str]]:
    reads: dict[str, str] = {}  # tool_use id -> path of a Read of a .ts/.tsx file
    for name, number, _, record in _transcript_records():
        for index, block in enumerate(_blocks(record)):
            where = f"transcript:{name}:{number}:{index}"
            if block.get("type") == "tool_use":
                tool_input = block.get("input")
                if not isinstance(tool_input, dict):
                    continue
                path = str(tool_input.get("file_path", ""))
                if not path.endswith((".ts", ".tsx")):
                    continue
                if block.get("name") == "Read":
                    reads[str(block.get("id"))] = path
                for key in ("content", "new_string"):
                    if isinstance(tool_input.get(key), str):
                        yield where, str(tool_input[key])
                edits = tool_input.get("edits")
                if isinstance(edits, list):
                    news = [str(e.get("new_string", "")) for e in edits if isinstance(e, dict)]
                    yield where, "\n".join(news)
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in reads:
                content = block.get("content")
                if isinstance(content, str):
                    body = content.split("\n\n<system-reminder>", 1)[0]
                    yield where, _LINE_NUMBER.sub("", body)


def typescript() -> list[Document]:
    items = list(_typescript_from_transcripts())
    for path in _files(NODE_MODULES, "*.ts"):
        text = _read(path)
        if text:
            items.append((f"node_modules:{path.relative_to(NODE_MODULES).as_posix()}", text))
    return _docs("typescript", items)


def json_docs() -> list[Document]:
    items = []
    for path in _files(NODE_MODULES, "package.json"):
        text = _read(path)
        if text:
            items.append((f"node_modules:{path.relative_to(NODE_MODULES).as_posix()}", text))
    api = SHARE / "doc" / "nodejs" / "api"
    for path in _files(api, "*.json.gz"):
        if path.name == "all.json.gz":
            continue
        text = _read(path)
        if text:
            items.append((f"doc:nodejs/api/{path.name}", text))
    for name, number, line, _ in _transcript_records():
        items.append((f"transcript-record:{name}:{number}", line))
    return _docs("json", items)


# ---------------------------------------------------------------------------------------------
# CJK


def _mo_strings(data: bytes) -> list[str]:
    """The translated strings (msgstr, plural forms split) of a GNU ``.mo`` catalogue."""
    if len(data) < 20:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    order = "<" if magic == 0x950412DE else ">" if magic == 0xDE120495 else None
    if order is None:
        return []
    count, _, table = struct.unpack(order + "3I", data[8:20])
    out = []
    for i in range(count):
        length, offset = struct.unpack(order + "2I", data[table + 8 * i : table + 8 * i + 8])
        raw = data[offset : offset + length]
        if i == 0 and raw.startswith(b"Project-Id-Version"):
            continue  # the catalogue header
        for part in raw.split(b"\0"):
            try:
                out.append(part.decode("utf-8"))
            except UnicodeDecodeError:
                continue
    return out


def _cjk_share(text: str) -> float:
    return sum(1 for ch in text if ord(ch) >= 0x2E80) / max(len(text), 1)


def cjk() -> list[Document]:
    items = []
    for path in _files(_stdlib() / "test" / "cjkencodings", "*-utf8.txt"):
        text = _read(path)
        if text:
            items.append((f"stdlib:test/cjkencodings/{path.name}", text))
    for locale in CJK_LOCALES:
        root = SHARE / "locale" / locale / "LC_MESSAGES"
        for path in _files(root, "*.mo"):
            try:
                strings = _mo_strings(path.read_bytes())
            except OSError:
                continue
            text = "\n".join(s for s in strings if _cjk_share(s) >= 0.2)
            items.append((f"locale:{locale}/{path.name}", text))
    return _docs("cjk", items)


def _emoji_table() -> str:
    """rich's emoji name table, from the pip wheel that CPython bundles for ``ensurepip``."""
    import zipfile

    for wheel in _files(_stdlib() / "ensurepip" / "_bundled", "pip-*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            try:
                return archive.read("pip/_vendor/rich/_emoji_codes.py").decode("utf-8")
            except KeyError:
                continue
    return ""


def other() -> list[Document]:
    """Other scripts (accented Latin, Cyrillic, Greek, Hebrew, Arabic, Indic, Thai) from message
    catalogues, and emoji, so the weights of the non-ASCII byte classes are fitted on real text."""
    items = []
    for locale in OTHER_LOCALES:
        root = SHARE / "locale" / locale / "LC_MESSAGES"
        for path in _files(root, "*.mo"):
            if not _sampled(f"{locale}/{path.name}", 8):
                continue
            try:
                strings = _mo_strings(path.read_bytes())
            except OSError:
                continue
            items.append((f"locale:{locale}/{path.name}", "\n".join(strings)))
    emoji = _emoji_table()
    for part, start in enumerate(range(0, len(emoji), 4000)):
        items.append((f"ensurepip:rich/_emoji_codes.py#{part}", emoji[start : start + 4000]))
    return _docs(OTHER, items)


# ---------------------------------------------------------------------------------------------
# the mixed session


def mixed() -> list[Document]:
    """Every message of every bundled transcript (sub-agent ones too), in file order."""
    from memframe.transcripts import open_transcript

    docs = []
    for path in _files(TRANSCRIPTS, "*.jsonl"):
        for index, item in enumerate(open_transcript(path, include_sidechains=True)):
            estimable = getattr(item, "estimable_text", None)
            text = estimable() if estimable is not None else ""
            if text:
                docs.append(Document(MIXED, f"message:{path.name}:{index}", text))
    return docs


LOADERS: dict[str, Callable[[], list[Document]]] = {
    "prose": prose,
    "markdown": markdown,
    "python": python,
    "typescript": typescript,
    "json": json_docs,
    "cjk": cjk,
    MIXED: mixed,
    OTHER: other,
}


@cache
def load(kind: str) -> tuple[Document, ...]:
    """All documents of one class, sorted by source (cached per process)."""
    return tuple(LOADERS[kind]())


def corpus(half: str | None = None, kinds: Iterable[str] = ALL_KINDS) -> list[Document]:
    """The documents of ``kinds`` in ``half`` (``"fit"``, ``"held"`` or ``None`` for both)."""
    return [d for kind in kinds for d in load(kind) if half is None or d.half == half]


# ---------------------------------------------------------------------------------------------
# reference BPEs (bench/test extras: tiktoken, bpe-openai; never runtime dependencies)

ENCODINGS: tuple[str, ...] = ("cl100k_base", "o200k_base")
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


def _bpe_files() -> dict[str, bytes]:
    """The ``.tiktoken`` rank files that installed packages bundle: bpe-openai's (gzipped) or
    those inside litellm (named like tiktoken's cache, by the SHA-1 of the download URL)."""
    found: dict[str, bytes] = {}
    spec = importlib.util.find_spec("bpe_openai")
    if spec is not None and spec.submodule_search_locations:
        data = Path(next(iter(spec.submodule_search_locations))) / "data"
        for name in ENCODINGS:
            path = data / f"{name}.tiktoken.gz"
            if path.is_file():
                found[name] = gzip.decompress(path.read_bytes())
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations)))
        folder = folder / "litellm_core_utils" / "tokenizers"
        for name in ENCODINGS:
            path = folder / hashlib.sha1(_BLOB.format(name).encode()).hexdigest()
            if name not in found and path.is_file():
                found[name] = path.read_bytes()
    return found


@cache
def tiktoken_encodings() -> dict[str, object]:
    """``{name: tiktoken.Encoding}`` for the encodings whose files are installed (may be empty).

    tiktoken reads its files through a cache folder named by ``TIKTOKEN_CACHE_DIR``; we fill a
    temporary one with the bundled files (tiktoken checks their SHA-256) so nothing is fetched.
    """
    try:
        import tiktoken
    except ImportError:
        return {}
    files = _bpe_files()
    encodings: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="memframe-tiktoken-") as cache_dir:
        for name, data in files.items():
            key = hashlib.sha1(_BLOB.format(name).encode()).hexdigest()
            Path(cache_dir, key).write_bytes(data)
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                for name in files:
                    encodings[name] = tiktoken.get_encoding(name)
        finally:
            if previous is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous
    return encodings


@cache
def bpe_openai_counters() -> dict[str, Callable[[str], int]]:
    """``{name: count}`` from the ``bpe-openai`` package (may be empty)."""
    # bpe-openai 0.1 uses a deprecated importlib.resources call while importing.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            from bpe_openai import _bindings
        except ImportError:
            return {}
        return {name: _bindings.tokenizer_for_encoding(name).count for name in ENCODINGS}


@cache
def reference_counters() -> dict[str, Callable[[str], int]]:
    """Exact token counters for cl100k_base and o200k_base (tiktoken preferred, else
    bpe-openai), or ``{}`` when neither package is installed. Special tokens are plain text."""
    counters: dict[str, Callable[[str], int]] = {}
    for name, encoding in tiktoken_encodings().items():
        encode = encoding.encode_ordinary  # type: ignore[attr-defined]
        counters[name] = lambda text, encode=encode: len(encode(text))
    for name, count in bpe_openai_counters().items():
        counters.setdefault(name, count)
    return counters if all(name in counters for name in ENCODINGS) else {}


def missing_reference_note() -> str:
    return (
        "accuracy skipped: the reference BPEs are not installed "
        "(pip install tiktoken bpe-openai — the memframe[tokens] extra)"
    )


# ---------------------------------------------------------------------------------------------
# accuracy


def counted(docs: Iterable[Document]) -> list[tuple[Document, dict[str, int]]]:
    """Each document with its exact count under every reference encoding."""
    counters = reference_counters()
    return [(doc, {name: count(doc.text) for name, count in counters.items()}) for doc in docs]


def _percentile(values: list[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Accuracy:
    """Errors of an estimator against one encoding over one class (percent)."""

    docs: int
    bias: float  # (sum of estimates - sum of exact counts) / sum of exact counts
    p50: float  # median |estimate - exact| / exact, per document
    p95: float
    session_p95: float | None = None  # mixed session only: p95 of the running-total error


def _session_errors(rows: list[tuple[Document, int, int]]) -> list[float]:
    """|running estimate - running exact| / running exact after every message, per transcript
    (the held-out messages of one transcript, in order, form one session)."""
    sessions: dict[str, list[tuple[int, int]]] = {}
    for doc, estimate, exact in rows:
        sessions.setdefault(doc.source.rsplit(":", 1)[0], []).append((estimate, exact))
    errors = []
    for pairs in sessions.values():
        total_estimate = total_exact = 0
        for estimate, exact in pairs:
            total_estimate += estimate
            total_exact += exact
            errors.append(abs(total_estimate - total_exact) / max(total_exact, 1))
    return errors


def accuracy(
    estimate: Callable[[str], int],
    counted_docs: Iterable[tuple[Document, dict[str, int]]],
    encoding: str,
) -> dict[str, Accuracy]:
    """Per class (and ``"mixed"``): bias and p50/p95 error of ``estimate`` against
    ``encoding`` (a name in the counts, or ``"mean"`` for the mean of all of them)."""
    by_kind: dict[str, list[tuple[Document, int, int]]] = {}
    for doc, counts in counted_docs:
        if encoding == "mean":
            exact = round(sum(counts.values()) / len(counts))
        else:
            exact = counts[encoding]
        by_kind.setdefault(doc.kind, []).append((doc, estimate(doc.text), exact))
    out = {}
    for kind in ALL_KINDS:
        rows = by_kind.get(kind)
        if not rows:
            continue
        errors = [abs(e - x) / max(x, 1) * 100 for _, e, x in rows]
        total = sum(x for _, _, x in rows)
        out[kind] = Accuracy(
            docs=len(rows),
            bias=(sum(e for _, e, _ in rows) - total) / max(total, 1) * 100,
            p50=_percentile(errors, 50),
            p95=_percentile(errors, 95),
            session_p95=(
                _percentile([e * 100 for e in _session_errors(rows)], 95) if kind == MIXED else None
            ),
        )
    return out


def len4(text: str) -> int:
    """The byte-length rule this estimator replaces: ceil(UTF-8 bytes / 4)."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // 4)
