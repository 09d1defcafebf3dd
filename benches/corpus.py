"""A deterministic, synthetic memory-store corpus for the scanning benchmarks.

``python -m benches.corpus [--kind clean|planted] [--size MB] [--density N]`` builds (or finds)
one and prints where it is. Nothing is fetched: every byte comes from a seeded PRNG and the
templates below, so a corpus is the same on every machine for a given generator version.

What a corpus holds (a Claude-Code-shaped memory store, written as many files):

- ``note``: Markdown memory notes — frontmatter (``name``/``description``/``type``), prose,
  bullet lists and code fences;
- ``transcript``: JSONL session transcripts — user/assistant records with ``tool_use`` and
  ``tool_result`` blocks, escaped strings, and tool output (source files, git logs, test runs);
- ``python`` / ``typescript``: source files;
- ``env`` / ``yaml`` / ``json``: configuration snippets.

Files are mostly 1-64 KiB (log-uniform per kind), with a few larger transcripts. A few percent of
the prose is non-ASCII (accents, CJK, symbols).

Two kinds of corpus:

- ``clean``: no secret at all, but realistic near misses — the words token, key, secret,
  password, api and Bearer; git SHAs, UUIDs, sha256/sha512 digests, base64 blobs, JWTs,
  documentation placeholders (``AKIAIOSFODNN7EXAMPLE``, ``ghp_xxxx…``), public certificates,
  truncated keys and key prefixes mentioned in prose. Every engine should report nothing.
- ``planted``: the same kind of text with secrets planted at ``density`` per MB, cycling through
  EVERY rule (at least one secret per rule). A secret is a positive sample from
  ``tests/vectors/<rule-id>.toml`` (``[[positive]]`` ``text`` + ``secret``) or one generated here
  from the rule's format; each planted block is checked in isolation with the python engine
  (a sample it does not find is not planted, and is listed in the manifest's ``rejected``), and the
  manifest records the secret and every finding the block carries (``expected``), so a
  benchmark can report recall and unexpected findings.

A corpus lives in ``$HOME/.cache/memframe/bench-corpus/<kind>-<size>MB-<density>-v<N>/`` (or under
``$MEMFRAME_BENCH_CORPUS_DIR``) with a ``manifest.json``; it is reused while the generator version
(and, for a planted corpus, the rules and vectors it was planted from) are unchanged, and rebuilt
otherwise. Sizes are in MB (10^6 bytes), from 1 MB to 1 GB.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GENERATOR_VERSION = 2
MB = 1_000_000
MIN_SIZE_MB = 1
MAX_SIZE_MB = 1000
KINDS = ("clean", "planted")
MANIFEST = "manifest.json"
REPO = Path(__file__).resolve().parent.parent
VECTORS_DIR = REPO / "tests" / "vectors"
PARALLEL_FROM_BYTES = 24 * MB  # smaller corpora are written by one process

KIB = 1024
# file kind -> (share of files, smallest size, largest size); sizes are drawn log-uniformly
FILE_KINDS: dict[str, tuple[float, int, int]] = {
    "note": (0.32, 1 * KIB, 16 * KIB),
    "transcript": (0.22, 4 * KIB, 64 * KIB),
    "python": (0.14, 1 * KIB, 48 * KIB),
    "typescript": (0.10, 1 * KIB, 32 * KIB),
    "env": (0.07, 1 * KIB, 4 * KIB),
    "yaml": (0.07, 1 * KIB, 16 * KIB),
    "json": (0.08, 1 * KIB, 32 * KIB),
}
BIG_FILE_SHARE = 0.005  # of files: transcripts of 128 KiB to 1 MiB (capped at size / 8)
BIG_FILE_RANGE = (128 * KIB, 1024 * KIB)
EXTENSIONS = {
    "note": ".md",
    "transcript": ".jsonl",
    "python": ".py",
    "typescript": ".ts",
    "env": ".env",
    "yaml": ".yaml",
    "json": ".json",
}


def cache_root() -> Path:
    """Where corpora are kept: ``$MEMFRAME_BENCH_CORPUS_DIR`` or ``~/.cache/memframe/...``."""
    override = os.environ.get("MEMFRAME_BENCH_CORPUS_DIR")
    if override:
        return Path(override)
    return Path.home() / ".cache" / "memframe" / "bench-corpus"


# -- the corpus as the benchmarks see it -----------------------------------------------------------


@dataclass(frozen=True)
class CorpusFile:
    path: Path  # absolute
    rel: str  # relative to the corpus root, '/'-separated
    size: int  # bytes
    kind: str  # a FILE_KINDS key


@dataclass(frozen=True)
class Plant:
    """One planted secret: its rule, the secret exactly as it appears in the file's text, where
    the sample came from, and every (rule id, secret) the planted block yields on its own."""

    rel: str
    rule_id: str
    secret: str
    source: str
    expected: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Corpus:
    root: Path
    kind: str
    size_mb: int
    density: float
    files: tuple[CorpusFile, ...]
    plants: tuple[Plant, ...]
    meta: dict[str, Any]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def subset(self, max_bytes: int) -> list[CorpusFile]:
        """The first files (in generation order, a random mix of kinds) up to ``max_bytes``
        (at least one file)."""
        out: list[CorpusFile] = []
        total = 0
        for f in self.files:
            if out and total + f.size > max_bytes:
                break
            out.append(f)
            total += f.size
        return out

    def expected_by_file(self) -> dict[str, Counter[tuple[str, str]]]:
        """Every (rule id, secret) each file's planted blocks yield, as a multiset per file."""
        out: dict[str, Counter[tuple[str, str]]] = {}
        for plant in self.plants:
            out.setdefault(plant.rel, Counter()).update(plant.expected)
        return out

    def planted_by_file(self) -> dict[str, Counter[tuple[str, str]]]:
        """The planted (rule id, secret) pairs per file, as a multiset per file."""
        out: dict[str, Counter[tuple[str, str]]] = {}
        for plant in self.plants:
            out.setdefault(plant.rel, Counter())[(plant.rule_id, plant.secret)] += 1
        return out


def corpus_name(kind: str, size_mb: int, density: float, seed: int = 0) -> str:
    name = f"{kind}-{size_mb}MB-{density:g}-v{GENERATOR_VERSION}"
    return name if seed == 0 else f"{name}-s{seed}"


def load(
    kind: str = "clean",
    size_mb: int = 16,
    density: float = 0.0,
    *,
    seed: int = 0,
    root: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> Corpus:
    """The corpus with these parameters: read from the cache when it is current, else built."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not MIN_SIZE_MB <= size_mb <= MAX_SIZE_MB:
        raise ValueError(f"size must be {MIN_SIZE_MB}..{MAX_SIZE_MB} MB, got {size_mb}")
    if kind == "clean":
        density = 0.0
    elif density <= 0:
        raise ValueError("a planted corpus needs a density > 0 (secrets per MB)")
    base = root or cache_root()
    directory = base / corpus_name(kind, size_mb, density, seed)
    fingerprint = _planting_fingerprint() if kind == "planted" else ""
    corpus = _read(directory, fingerprint)
    if corpus is not None:
        return corpus
    started = time.perf_counter()
    if log is not None:
        log(f"building the {kind} corpus ({size_mb} MB) in {directory} ...")
    _build(directory, kind, size_mb, density, seed, fingerprint)
    _remove_stale_versions(base, kind, size_mb, density, seed)
    corpus = _read(directory, fingerprint)
    if corpus is None:  # pragma: no cover - a concurrent build replaced ours with another version
        raise RuntimeError(f"the corpus in {directory} could not be read back")
    if log is not None:
        took = time.perf_counter() - started
        log(
            f"built {len(corpus.files):,} files, {corpus.total_bytes / MB:,.1f} MB "
            f"in {took:.1f} s ({corpus.total_bytes / MB / max(took, 1e-9):,.0f} MB/s)"
        )
    return corpus


def _read(directory: Path, fingerprint: str) -> Corpus | None:
    try:
        meta = json.loads((directory / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if (
        meta.get("generator_version") != GENERATOR_VERSION
        or meta.get("planting_fingerprint", "") != fingerprint
    ):
        return None
    files = tuple(
        CorpusFile(directory / rel, rel, size, kind) for rel, size, kind in meta.pop("files")
    )
    # a cheap completeness check: the last file written exists with its size
    last = files[-1] if files else None
    if last is None or not last.path.is_file() or last.path.stat().st_size != last.size:
        return None
    plants = tuple(
        Plant(p["rel"], p["rule_id"], p["secret"], p["source"], tuple(map(tuple, p["expected"])))
        for p in meta.pop("plants")
    )
    return Corpus(directory, meta["kind"], meta["size_mb"], meta["density"], files, plants, meta)


def _remove_stale_versions(base: Path, kind: str, size_mb: int, density: float, seed: int) -> None:
    current = corpus_name(kind, size_mb, density, seed)
    prefix = f"{kind}-{size_mb}MB-{density:g}-v"
    suffix = "" if seed == 0 else f"-s{seed}"
    for path in base.glob(f"{prefix}*"):
        rest = path.name[len(prefix) :]
        version = rest[: len(rest) - len(suffix)] if suffix else rest
        if path.name != current and version.isdigit() and rest.endswith(suffix):
            shutil.rmtree(path, ignore_errors=True)


# -- building ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FileSpec:
    index: int
    kind: str
    size: int  # target bytes
    rel: str
    blocks: tuple[str, ...] = ()  # planted blocks, already encoded for this file's kind


def _plan(size_mb: int, seed: int) -> list[_FileSpec]:
    rng = random.Random(f"memframe-bench-corpus:plan:{seed}")
    total = size_mb * MB
    kinds = list(FILE_KINDS)
    weights = [FILE_KINDS[k][0] for k in kinds]
    big_cap = max(BIG_FILE_RANGE[0], total // 8)
    specs: list[_FileSpec] = []
    planned = 0
    project = 0
    in_project = 0
    while planned < total:
        if rng.random() < BIG_FILE_SHARE:
            kind = "transcript"
            low, high = BIG_FILE_RANGE[0], min(BIG_FILE_RANGE[1], big_cap)
        else:
            kind = rng.choices(kinds, weights)[0]
            _, low, high = FILE_KINDS[kind]
        size = int(math.exp(rng.uniform(math.log(low), math.log(high))))
        size = max(512, min(size, total - planned))
        if in_project >= rng.randint(60, 240):
            project += 1
            in_project = 0
        in_project += 1
        index = len(specs)
        specs.append(_FileSpec(index, kind, size, _relpath(rng, kind, project, index)))
        planned += size
    return specs


def _relpath(rng: random.Random, kind: str, project: int, index: int) -> str:
    slug = f"-home-dev-{PROJECTS[project % len(PROJECTS)]}-{project}"
    base = f"projects/{slug}"
    ext = EXTENSIONS[kind]
    if kind == "note":
        return f"{base}/memory/{rng.choice(NOUNS)}-{rng.choice(NOUNS)}-{index}{ext}"
    if kind == "transcript":
        return f"{base}/{_uuid(rng)}{ext}"
    if kind in ("python", "typescript"):
        return f"{base}/src/{rng.choice(NOUNS)}_{rng.choice(NOUNS)}_{index}{ext}"
    return f"{base}/config/{rng.choice(CONFIG_NAMES)}-{index}{ext}"


def _build(
    directory: Path, kind: str, size_mb: int, density: float, seed: int, fingerprint: str
) -> None:
    specs = _plan(size_mb, seed)
    plants: list[dict[str, Any]] = []
    rejected: list[str] = []
    if kind == "planted":
        specs, plants, rejected = _plant(specs, size_mb, density, seed)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = directory.parent / f".tmp-{directory.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        sizes = _write_all(tmp, specs, seed)
        meta = {
            "generator_version": GENERATOR_VERSION,
            "kind": kind,
            "size_mb": size_mb,
            "density": density,
            "seed": seed,
            "planting_fingerprint": fingerprint,
            "total_bytes": sum(sizes),
            "file_count": len(specs),
            "kinds": dict(Counter(s.kind for s in specs)),
            "rejected": rejected,
            "files": [[s.rel, size, s.kind] for s, size in zip(specs, sizes, strict=True)],
            "plants": plants,
        }
        (tmp / MANIFEST).write_text(json.dumps(meta, ensure_ascii=False), "utf-8")
        if directory.exists():
            shutil.rmtree(directory)
        try:
            tmp.rename(directory)
        except OSError:  # pragma: no cover - another process finished the same build first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write_all(root: Path, specs: Sequence[_FileSpec], seed: int) -> list[int]:
    total = sum(s.size for s in specs)
    workers = min(os.cpu_count() or 1, 8)
    if total < PARALLEL_FROM_BYTES or workers < 2:
        return _write_chunk(str(root), list(specs), seed)
    chunks: list[list[_FileSpec]] = []
    chunk: list[_FileSpec] = []
    chunk_bytes = 0
    for spec in specs:
        chunk.append(spec)
        chunk_bytes += spec.size
        if chunk_bytes >= 4 * MB:
            chunks.append(chunk)
            chunk, chunk_bytes = [], 0
    if chunk:
        chunks.append(chunk)
    sizes: list[int] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(_write_chunk, [str(root)] * len(chunks), chunks, [seed] * len(chunks)):
            sizes.extend(part)
    return sizes


def _write_chunk(root: str, specs: list[_FileSpec], seed: int) -> list[int]:
    sizes = []
    made: set[Path] = set()
    for spec in specs:
        data = render(spec.kind, spec.size, random.Random(f"{seed}:{spec.index}"), spec.blocks)
        raw = data.encode("utf-8", "surrogateescape")
        path = Path(root, spec.rel)
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_bytes(raw)
        sizes.append(len(raw))
    return sizes


def render(kind: str, size: int, rng: random.Random, planted: Sequence[str] = ()) -> str:
    """One file of ``kind`` of about ``size`` bytes, with the ``planted`` blocks inserted between
    its blocks (each block is whole lines)."""
    blocks = _GENERATORS[kind](_Text(rng), size)
    for block in planted:
        low = 1 if len(blocks) > 1 else 0  # never before a note's frontmatter / first record
        blocks.insert(rng.randint(low, len(blocks)), block)
    return "".join(blocks)


# -- text primitives -------------------------------------------------------------------------------


def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split())


WORDS = _split("""
the a an of to in for on with by from at as is are was be been this that these those it its we
you they our your their and or but not if then else when while after before because so since
memory note session agent model context tool file files line lines project team user users
change changes update updates fix fixes bug bugs test tests build builds run runs deploy release
branch commit merge review reviewer patch diff config setting settings value values default
option flag path directory folder module package function method class type types field fields
index cache queue worker job jobs task tasks request response client server service endpoint
route handler error errors warning log logs trace metric metrics latency timeout retry limit
rate batch stream buffer parser schema record records entry entries store storage database table
query migration rollback snapshot backup restore sync conflict lock state status event events
hook hooks layer layers plugin plugins prompt prompts reply summary summaries draft document docs
should must can could would might will may need needs use uses used using keep keeps kept add
adds added remove removes removed rename renamed move moved check checks checked read reads write
writes wrote parse parses load loads save saves send sends fetch fetches call calls return returns
first last next previous new old small large fast slow simple clear stable flaky broken green red
quick careful explicit implicit local remote shared private public internal external
today yesterday tomorrow now later again still already always never often usually sometimes
because however therefore instead otherwise meanwhile finally also only just even very quite
token tokens key keys secret secrets password credentials api auth login account access bearer
""")
NOUNS = _split("""
memory session agent context tool config cache queue worker parser schema store index layer
plugin prompt summary draft report metric trace event hook client server route handler record
entry snapshot backup release branch review migration dashboard pipeline runner checkout billing
invoice payment search upload export import profile account settings onboarding auth gateway
""")
VERBS = _split("""
add remove update fix refactor rename move split merge test check validate parse load save send
fetch call retry cache index sync restore migrate deploy build review document clean trim
""")
PROJECTS = _split("""
atlas borealis cobalt dune ember fjord glacier harbor iris juniper kestrel lumen meridian nimbus
orchid pebble quartz raven sierra tundra umber vesper willow xenon yarrow zephyr
""")
CONFIG_NAMES = _split("app settings docker-compose deploy ci database worker service local staging")
PEOPLE = _split("Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy")
TOOLS = ("Bash", "Read", "Edit", "Write", "Grep", "Glob", "TodoWrite", "WebFetch")
UNICODE_PHRASES = (
    "naïve café résumé",
    "Zürich → München",
    "日本語のメモ",
    "设计文档已更新",
    "한국어 요약",
    "✅ done",
    "déjà vu — encore",
    "Ωmega Δelta",
    "🙂 thanks",
    "«quoted» text",
    "São Paulo, Kraków, Reykjavík",
    "итоги встречи",
)
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
HEX = "0123456789abcdef"
DIGITS = "0123456789"
UPPER_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
BECH32_UPPER = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
# Random blobs must not start a real token by chance (e.g. "/ABSK" + 109 base64 characters)
_BLOB_DENY = ("ABSK", "AIza", "AKIA", "ASIA", "ABIA", "ACCA", "eyJrIjoi")


class _Text:
    """Text primitives over one seeded PRNG."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def chars(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choices(alphabet, k=n))

    def blob(self, alphabet: str, n: int) -> str:
        while True:
            s = self.chars(alphabet, n)
            if not any(bad in s for bad in _BLOB_DENY):
                return s

    def hexs(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def uuid(self) -> str:
        return _uuid(self.rng)

    def words(self, n: int) -> str:
        return " ".join(self.rng.choices(WORDS, k=n))

    def sentence(self) -> str:
        rng = self.rng
        parts = rng.choices(WORDS, k=rng.randint(5, 16))
        roll = rng.random()
        if roll < 0.12:
            parts.insert(rng.randrange(len(parts)), f"`{self.identifier()}`")
        elif roll < 0.2:
            parts.insert(rng.randrange(len(parts)), self.filepath())
        elif roll < 0.24:
            parts.append(rng.choice(UNICODE_PHRASES))
        elif roll < 0.28:
            parts.insert(rng.randrange(len(parts)), str(rng.randint(2, 9000)))
        text = " ".join(parts)
        return text[0].upper() + text[1:] + rng.choice(".....!?:")

    def paragraph(self, lo: int = 2, hi: int = 6) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(lo, hi)))

    def title(self) -> str:
        return " ".join(self.rng.choices(NOUNS + VERBS, k=self.rng.randint(2, 5))).capitalize()

    def identifier(self) -> str:
        rng = self.rng
        return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"

    def camel(self) -> str:
        rng = self.rng
        return rng.choice(VERBS) + rng.choice(NOUNS).capitalize()

    def pascal(self) -> str:
        return self.rng.choice(NOUNS).capitalize() + self.rng.choice(NOUNS).capitalize()

    def filepath(self) -> str:
        rng = self.rng
        ext = rng.choice((".py", ".ts", ".md", ".json", ".toml", ".yaml", ".rs", ".tsx"))
        top = rng.choice(("src", "lib", "app", "tests", "docs"))
        return f"{top}/{rng.choice(NOUNS)}/{rng.choice(NOUNS)}{ext}"

    def near_miss(self) -> str:
        """A line that looks like it might hold a secret and does not."""
        if self.rng.random() < ALLOWLISTED_SHARE:
            return self.rng.choice(_ALLOWLISTED)(self)
        return self.rng.choice(_NEAR_MISSES)(self)


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:]}"


def _pem_body(t: _Text, n_bytes: int, escaped: bool = False) -> str:
    raw = base64.b64encode(t.rng.randbytes(n_bytes)).decode("ascii")
    lines = [raw[i : i + 64] for i in range(0, len(raw), 64)]
    return ("\\n" if escaped else "\n").join(lines)


_NEAR_MISSES: tuple[Callable[[_Text], str], ...] = (
    lambda t: f"The {t.rng.choice(NOUNS)} token lives in the vault; never paste the secret here.",
    lambda t: (
        f"curl -H 'Authorization: Bearer ${{{t.rng.choice(NOUNS).upper()}_TOKEN}}' "
        f"https://api.example.com/v1/{t.rng.choice(NOUNS)}s"
    ),
    lambda t: f"Authorization: Bearer <token>  # set by the {t.rng.choice(NOUNS)} middleware",
    lambda t: f"commit {t.hexs(40)}",
    lambda t: f"Merge: {t.hexs(7)} {t.hexs(7)}",
    lambda t: f"image: ghcr.io/acme/{t.rng.choice(NOUNS)}@sha256:{t.hexs(64)}",
    lambda t: f"content hash sha256:{t.hexs(64)} (unchanged)",
    lambda t: f"request_id={t.uuid()} trace_id={t.hexs(32)} span_id={t.hexs(16)}",
    lambda t: f"session {t.uuid()} resumed",
    lambda t: "OPENAI_API_KEY=sk-...  # put the real key in .env.local, never here",
    lambda t: "ANTHROPIC_API_KEY=<your key>",
    lambda t: "export SLACK_BOT_TOKEN=xoxb-your-token-here",
    lambda t: "Stripe test keys start with sk_test_ and live keys with sk_live_.",
    lambda t: "GitHub classic tokens look like ghp_ followed by 36 characters.",
    lambda t: f"password: ${{{t.rng.choice(NOUNS).upper()}_PASSWORD}}",
    lambda t: "DB_PASSWORD=changeme",
    lambda t: (
        f"password_hash = '$argon2id$v=19$m=65536,t=3,p=4${t.blob(B64, 22)}${t.blob(B64, 43)}'"
    ),
    lambda t: f'"integrity": "sha512-{t.blob(B64, 86)}=="',
    lambda t: f"secret_key_base: <%= ENV['SECRET_KEY_BASE'] %>  # {t.words(4)}",
    lambda t: f"api_key = os.environ['{t.rng.choice(NOUNS).upper()}_API_KEY']",
    lambda t: f"const apiKey = process.env.{t.rng.choice(NOUNS).upper()}_KEY ?? '';",
    lambda t: f"token = get_{t.rng.choice(NOUNS)}_token(scope='read')",
    lambda t: (
        f"jwt: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{t.blob(B64URL, 48)}.{t.blob(B64URL, 43)}"
    ),
    lambda t: f"The SKU-{t.rng.randint(1000, 99999)} key was rotated by {t.rng.choice(PEOPLE)}.",
    lambda t: "Anthropic keys start with sk-ant-api03- and are about 108 characters long.",
    lambda t: "sk-proj-... (truncated in the dashboard)",
    lambda t: f"age recipient: age1{t.chars('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}",
    lambda t: f"message id msg_01{t.blob(ALNUM, 22)}, tool call toolu_01{t.blob(ALNUM, 22)}",
    lambda t: f"nonce: {t.blob(B64, 22)}==",
    lambda t: f"checksum {t.hexs(32)}  {t.filepath()}",
    lambda t: "-----BEGIN CERTIFICATE-----\n" + _pem_body(t, 96) + "\n-----END CERTIFICATE-----",
    lambda t: "-----BEGIN PUBLIC KEY-----\n" + _pem_body(t, 64) + "\n-----END PUBLIC KEY-----",
    lambda t: "Use the Databricks API (dapi tokens) only from the job runner.",
    lambda t: f"secret = Secret(name='{t.rng.choice(NOUNS)}-credentials', key='password')",
    lambda t: f"data:image/png;base64,{t.blob(B64, t.rng.randint(120, 600))}",
    lambda t: "Rotate the Grafana key (glsa_...) and the Sentry token (sntrys_...) quarterly.",
    lambda t: f"vault kv get -field=token secret/{t.rng.choice(NOUNS)}/api",
)

# Documentation values that DO match a rule's regex and are dropped by an allowlist, an entropy
# floor or a stopword: rarer than the near misses above (they make the engines confirm a candidate).
_ALLOWLISTED: tuple[Callable[[_Text], str], ...] = (
    lambda t: "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    lambda t: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    lambda t: "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    lambda t: (
        "The webhook is https://hooks.slack.com/services/T00000000/B00000000/"
        "XXXXXXXXXXXXXXXXXXXXXXXX in the docs."
    ),
    lambda t: (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
    ),
)
ALLOWLISTED_SHARE = 0.02


# -- file generators (each returns a list of blocks; every block is whole lines) -----------------


def _fill(t: _Text, size: int, head: list[str], make: Callable[[], str]) -> list[str]:
    blocks = head
    total = sum(len(b) for b in blocks)
    while total < size:
        block = make()
        blocks.append(block)
        total += len(block)
    return blocks


def _note(t: _Text, size: int) -> list[str]:
    rng = t.rng
    title = t.title()
    head = [
        f"---\nname: {title}\ndescription: {t.sentence()}\n"
        f"type: {rng.choice(('user', 'feedback', 'project', 'reference'))}\n---\n\n# {title}\n\n"
    ]

    def block() -> str:
        roll = rng.random()
        if roll < 0.45:
            return t.paragraph() + "\n\n"
        if roll < 0.65:
            items = (f"- {t.sentence()}" for _ in range(rng.randint(2, 7)))
            return "\n".join(items) + "\n\n"
        if roll < 0.75:
            return f"## {t.title()}\n\n"
        if roll < 0.88:
            lang, body = rng.choice(_FENCES)(t)
            return f"```{lang}\n{body}\n```\n\n"
        return t.near_miss() + "\n\n"

    return _fill(t, size, head, block)


def _py_snippet(t: _Text) -> str:
    name = t.identifier()
    arg = t.rng.choice(NOUNS)
    return (
        f"def {name}({arg}: dict[str, str]) -> list[str]:\n"
        f'    """{t.sentence()}"""\n'
        f"    out = [v for k, v in sorted({arg}.items())"
        f" if k.startswith('{t.rng.choice(NOUNS)}')]\n"
        f"    return out[: {t.rng.randint(2, 64)}]"
    )


def _ts_snippet(t: _Text) -> str:
    return (
        f"export async function {t.camel()}(id: string): Promise<{t.pascal()}> {{\n"
        f"  const res = await fetch(`/api/{t.rng.choice(NOUNS)}s/${{id}}`);\n"
        f"  if (!res.ok) throw new Error('{t.words(4)}');\n"
        "  return res.json();\n}"
    )


def _bash_snippet(t: _Text) -> str:
    rng = t.rng
    return "\n".join(
        rng.choice(
            (
                f"git log --oneline -n {rng.randint(3, 20)}",
                f"pytest -q tests/{rng.choice(NOUNS)} -k {rng.choice(VERBS)}",
                f"npm run {rng.choice(('build', 'test', 'lint'))}",
                f"export {rng.choice(NOUNS).upper()}_URL=https://{rng.choice(NOUNS)}.internal:8443",
                f"docker compose up -d {rng.choice(NOUNS)}",
                t.near_miss(),
            )
        )
        for _ in range(rng.randint(2, 6))
    )


def _json_snippet(t: _Text) -> str:
    rng = t.rng
    doc = {
        "id": t.uuid(),
        "name": t.identifier(),
        "enabled": rng.random() < 0.5,
        "retries": rng.randint(0, 9),
        "tags": rng.choices(NOUNS, k=rng.randint(1, 4)),
        "checksum": f"sha256:{t.hexs(64)}",
    }
    return json.dumps(doc, indent=2)


_FENCES: tuple[Callable[[_Text], tuple[str, str]], ...] = (
    lambda t: ("python", _py_snippet(t)),
    lambda t: ("ts", _ts_snippet(t)),
    lambda t: ("bash", _bash_snippet(t)),
    lambda t: ("json", _json_snippet(t)),
)


def _python(t: _Text, size: int) -> list[str]:
    rng = t.rng
    imports = rng.sample(
        ["os", "re", "json", "time", "hashlib", "logging", "pathlib", "typing", "dataclasses"], 4
    )
    head = [
        f'"""{t.sentence()}\n\n{t.paragraph(1, 3)}\n"""\n\nfrom __future__ import annotations\n\n'
        + "".join(f"import {m}\n" for m in sorted(imports))
        + f"\nLOG = logging.getLogger(__name__)\nDEFAULT_TIMEOUT = {rng.randint(1, 120)}\n"
        f'API_KEY_ENV = "{rng.choice(NOUNS).upper()}_API_KEY"\n\n\n'
    ]

    def block() -> str:
        roll = rng.random()
        if roll < 0.55:
            return _py_snippet(t) + "\n\n\n"
        if roll < 0.85:
            cls = t.pascal()
            methods = "".join(
                f"    def {t.identifier()}(self, {rng.choice(NOUNS)}: str) -> bool:\n"
                f'        """{t.sentence()}"""\n'
                f"        LOG.debug('{t.words(5)} %s', self.{rng.choice(NOUNS)})\n"
                f"        return bool(self.{rng.choice(NOUNS)})\n\n"
                for _ in range(rng.randint(1, 4))
            )
            return f'class {cls}:\n    """{t.sentence()}"""\n\n{methods}\n'
        return f"# {t.near_miss()}\n\n"

    return _fill(t, size, head, block)


def _typescript(t: _Text, size: int) -> list[str]:
    rng = t.rng
    head = [
        f"// {t.sentence()}\nimport {{ {t.pascal()} }} from './{rng.choice(NOUNS)}';\n"
        f"import type {{ {t.pascal()} }} from '../types';\n\n"
    ]

    def block() -> str:
        roll = rng.random()
        if roll < 0.5:
            return _ts_snippet(t) + "\n\n"
        if roll < 0.85:
            fields = "".join(
                f"  {rng.choice(NOUNS)}{rng.choice(('', '?'))}: "
                f"{rng.choice(('string', 'number', 'boolean', 'string[]'))};\n"
                for _ in range(rng.randint(2, 8))
            )
            return f"/** {t.sentence()} */\nexport interface {t.pascal()} {{\n{fields}}}\n\n"
        return f"// {t.near_miss()}\n\n"

    return _fill(t, size, head, block)


def _env(t: _Text, size: int) -> list[str]:
    rng = t.rng
    head = [f"# {t.sentence()}\n"]

    def block() -> str:
        roll = rng.random()
        key = f"{rng.choice(NOUNS).upper()}_{rng.choice(('URL', 'HOST', 'PORT', 'MODE', 'LEVEL'))}"
        if roll < 0.55:
            value = rng.choice(
                (
                    f"https://{rng.choice(NOUNS)}.internal:{rng.randint(1000, 9999)}",
                    str(rng.randint(1, 65535)),
                    rng.choice(("debug", "info", "warn", "true", "false")),
                    f"postgres://app:${{DB_PASSWORD}}@db:5432/{rng.choice(NOUNS)}",
                )
            )
            return f"{key}={value}\n"
        if roll < 0.8:
            return f"# {t.sentence()}\n"
        return t.near_miss() + "\n"

    return _fill(t, size, head, block)


def _yaml(t: _Text, size: int) -> list[str]:
    rng = t.rng
    head = [
        f"# {t.sentence()}\nname: {t.identifier()}\non:\n  push:\n    branches: [main]\njobs:\n"
    ]

    def block() -> str:
        job = t.identifier()
        steps = "".join(
            rng.choice(
                (
                    f"      - run: {rng.choice(('make test', 'npm ci', 'pytest -q'))}\n",
                    "      - uses: actions/checkout@v4\n",
                    f"      - name: {t.words(4)}\n        env:\n          "
                    f"{rng.choice(NOUNS).upper()}_TOKEN: "
                    f"${{{{ secrets.{rng.choice(NOUNS).upper()}_TOKEN }}}}\n",
                    f"      # {t.near_miss()}\n",
                    f"      - run: echo {t.hexs(40)}\n",
                )
            )
            for _ in range(rng.randint(2, 8))
        )
        return f"  {job}:\n    runs-on: ubuntu-latest\n    steps:\n{steps}"

    return _fill(t, size, head, block)


def _json(t: _Text, size: int) -> list[str]:
    rng = t.rng
    head = [
        f'{{\n  "name": "@acme/{rng.choice(NOUNS)}",\n  "version": "1.{rng.randint(0, 40)}.0",\n'
    ]

    def block() -> str:
        pkg = f"{rng.choice(NOUNS)}-{rng.choice(NOUNS)}"
        return (
            f'  "node_modules/{pkg}": {{\n'
            f'    "version": "{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",\n'
            f'    "resolved": "https://registry.npmjs.org/{pkg}/-/{pkg}-1.0.0.tgz",\n'
            f'    "integrity": "sha512-{t.blob(B64, 86)}==",\n'
            f'    "license": "{rng.choice(("MIT", "ISC", "Apache-2.0"))}"\n  }},\n'
        )

    blocks = _fill(t, size, head, block)
    blocks.append('  "lockfileVersion": 3\n}\n')
    return blocks


def _command_output(t: _Text) -> str:
    rng = t.rng
    roll = rng.random()
    if roll < 0.2:
        return "\n".join(
            f"commit {t.hexs(40)}\n"
            f"Author: {rng.choice(PEOPLE)} <{rng.choice(PEOPLE).lower()}@example.com>\n"
            f"Date:   Mon Sep {rng.randint(1, 28)} 10:{rng.randint(10, 59)}:00 2025 +0200\n\n    "
            f"{t.sentence()}\n"
            for _ in range(rng.randint(2, 8))
        )
    if roll < 0.4:
        lines = [
            f"tests/test_{rng.choice(NOUNS)}.py::test_{t.identifier()} "
            f"{rng.choice(('PASSED', 'PASSED', 'PASSED', 'FAILED', 'SKIPPED'))}"
            for _ in range(rng.randint(4, 30))
        ]
        return "\n".join(lines) + f"\n{rng.randint(4, 300)} passed in {rng.random() * 9:.2f}s"
    if roll < 0.55:
        return "\n".join(
            f"-rw-r--r-- 1 dev dev {rng.randint(100, 99999):>6} Sep {rng.randint(1, 28):>2} "
            f"12:{rng.randint(10, 59)} {rng.choice(NOUNS)}{rng.choice(EXTENSIONS_LIST)}"
            for _ in range(rng.randint(3, 20))
        )
    if roll < 0.75:
        return "\n".join(
            f"{t.filepath()}:{rng.randint(1, 900)}: "
            f"{t.near_miss() if rng.random() < 0.2 else t.sentence()}"
            for _ in range(rng.randint(2, 12))
        )
    if roll < 0.9:
        return _py_snippet(t) + "\n\n" + _py_snippet(t)
    step = rng.randint(1, 20)
    return f"#{step} sha256:{t.hexs(64)}\n#{step} DONE {rng.random() * 5:.1f}s"


EXTENSIONS_LIST = (".py", ".ts", ".md", ".json", ".lock", ".toml", ".yaml")


class _Session:
    """Claude-Code-shaped JSONL records for one session."""

    def __init__(self, t: _Text) -> None:
        self.t = t
        self.session = t.uuid()
        self.cwd = f"/home/dev/{t.rng.choice(PROJECTS)}"
        self.parent: str | None = None
        self.clock = t.rng.randint(1_735_689_600, 1_764_547_200)  # a moment of 2025

    def record(self, kind: str, message: dict[str, Any], **extra: Any) -> str:
        uid = self.t.uuid()
        rec = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": uid,
            "timestamp": self.timestamp(),
            **extra,
        }
        self.parent = uid
        return json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"

    def timestamp(self) -> str:
        self.clock += self.t.rng.randint(1, 90)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.clock))
        return f"{stamp}.{self.t.rng.randint(0, 999):03d}Z"

    def user_text(self, text: str) -> str:
        return self.record("user", {"role": "user", "content": text})

    def tool_result(self, output: str) -> str:
        t = self.t
        tool_id = f"toolu_01{t.blob(ALNUM, 22)}"
        message = {
            "role": "user",
            "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": output}],
        }
        return self.record(
            "user",
            message,
            toolUseResult={"stdout": output, "stderr": "", "interrupted": False},
        )

    def assistant(self) -> str:
        t = self.t
        rng = t.rng
        content: list[dict[str, Any]] = [{"type": "text", "text": t.paragraph(1, 4)}]
        if rng.random() < 0.75:
            tool = rng.choice(TOOLS)
            if tool == "Bash":
                tool_input: dict[str, Any] = {
                    "command": _bash_snippet(t).split("\n")[0],
                    "description": t.words(5),
                }
            elif tool in ("Edit", "Write"):
                tool_input = {
                    "file_path": f"{self.cwd}/{t.filepath()}",
                    "old_string": _py_snippet(t),
                    "new_string": _py_snippet(t),
                }
            else:
                tool_input = {"file_path": f"{self.cwd}/{t.filepath()}", "pattern": t.identifier()}
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_01{t.blob(ALNUM, 22)}",
                    "name": tool,
                    "input": tool_input,
                }
            )
        message = {
            "id": f"msg_01{t.blob(ALNUM, 22)}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": content,
            "stop_reason": "tool_use" if len(content) > 1 else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": rng.randint(3, 900),
                "cache_creation_input_tokens": rng.randint(0, 20000),
                "cache_read_input_tokens": rng.randint(0, 90000),
                "output_tokens": rng.randint(10, 2000),
            },
        }
        return self.record("assistant", message, requestId=f"req_011C{t.blob(ALNUM, 20)}")


def _transcript(t: _Text, size: int) -> list[str]:
    rng = t.rng
    s = _Session(t)

    def block() -> str:
        roll = rng.random()
        if roll < 0.2:
            return s.user_text(t.paragraph(1, 3))
        if roll < 0.6:
            return s.assistant()
        return s.tool_result(_command_output(t))

    return _fill(t, size, [s.user_text(t.paragraph(1, 3))], block)


_GENERATORS: dict[str, Callable[[_Text, int], list[str]]] = {
    "note": _note,
    "transcript": _transcript,
    "python": _python,
    "typescript": _typescript,
    "env": _env,
    "yaml": _yaml,
    "json": _json,
}


# -- near misses -----------------------------------------------------------------------------------

# What documentation and agent sessions are full of: the providers' documented example keys,
# placeholders and prefix mentions. Every rule's database signal or regex hits them, and no
# finding may come out (allowlists, stopwords, entropy floors and shapes drop them all).
NEAR_MISSES = (
    # AWS's documented example key pair (IAM and CLI docs)
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    '    "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",',
    # the storage emulator's well-known account key (Azurite docs)
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;",
    "Personal access tokens (classic) start with `ghp_`; fine-grained ones with `github_pat_`.",
    "export GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "SLACK_BOT_TOKEN=xoxb-your-token-here",
    "export ANTHROPIC_API_KEY=sk-ant-api03-...  # from the console",
    "OPENAI_API_KEY=sk-proj-...",
    "password = changeme",
    "Set `hvs.` tokens in VAULT_TOKEN, never in the repository.",
)


def dense_near_misses(size: int, seed: int = 0) -> bytes:
    """One text of ``size`` bytes: notes-like prose with a near miss on every third line on
    average (the "large single text" case: a pasted manual, a long session dump)."""
    rng = random.Random(f"dense-{seed}")
    t = _Text(rng)
    lines: list[str] = []
    total = 0
    while total < size:
        for line in "".join(_GENERATORS["note"](t, 16 * KIB)).splitlines():
            if rng.random() < 1 / 3:
                miss = rng.choice(NEAR_MISSES)
                lines.append(miss)
                total += len(miss) + 1
            lines.append(line)
            total += len(line) + 1
    return "\n".join(lines).encode("utf-8")[:size]


# -- planting --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """A secret in context: ``text`` contains ``secret`` (as written, before any host escaping)."""

    rule_id: str
    text: str
    secret: str
    source: str


def vector_samples(
    rule_ids: Iterable[str], directory: Path = VECTORS_DIR
) -> dict[str, list[Sample]]:
    """The ``[[positive]]`` samples of ``tests/vectors/<rule-id>.toml`` that have a ``secret``."""
    out: dict[str, list[Sample]] = {}
    for rule_id in rule_ids:
        path = directory / f"{rule_id}.toml"
        try:
            doc = tomllib.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        samples = []
        for n, pos in enumerate(doc.get("positive", [])):
            text, secret = pos.get("text"), pos.get("secret")
            if isinstance(text, str) and isinstance(secret, str) and secret and secret in text:
                samples.append(Sample(rule_id, text, secret, f"vector:{rule_id}#{n + 1}"))
        if samples:
            out[rule_id] = samples
    return out


def _planting_fingerprint() -> str:
    """Changes when the rules or the vectors that a planted corpus is made from change."""
    from memframe.rules import load_rules

    rules = load_rules()
    h = hashlib.sha256(rules.fingerprint().encode())
    for rule_id in rules.ids():
        try:
            h.update((VECTORS_DIR / f"{rule_id}.toml").read_bytes())
        except OSError:
            h.update(b"-")
    return h.hexdigest()[:16]


def _env_name(rule_id: str) -> str:
    return rule_id.upper().replace("-", "_")


def _token_contexts(t: _Text, rule_id: str, secret: str) -> str:
    name = _env_name(rule_id)
    return t.rng.choice(
        (
            f'export {name}="{secret}"',
            f"{name}={secret}",
            f"{name.lower()}: {secret}",
            f'  "{name.lower()}": "{secret}",',
            f'token = "{secret}"  # TODO: move to the vault',
            f"Use `{secret}` for the staging deploy, then rotate it.",
            f"{t.words(4)}: {secret}",
        )
    )


def _b64_json(obj: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode()


def _gen_secret(t: _Text, rule_id: str) -> tuple[str, str] | None:
    """A format-valid (text, secret) for the bundled rule ``rule_id``; None for unknown rules."""
    rng = t.rng
    c = t.chars
    token: str | None = None
    match rule_id:
        case "aws-access-token":
            token = rng.choice(("AKIA", "ASIA")) + c(BASE32, 16)
        case "aws-secret-access-key":
            secret = c(B64, 40)
            text = rng.choice(
                (
                    f"aws_secret_access_key = {secret}",
                    f'AWS_SECRET_ACCESS_KEY="{secret}"',
                    f'  "SecretAccessKey": "{secret}",',
                )
            )
            return text, secret
        case "aws-bedrock-api-key":
            raw = b"BedrockAPIKey-" + c(LETTERS, 4).encode() + b"-at-" + rng.randbytes(60)
            token = "ABSK" + base64.b64encode(raw).decode().rstrip("=")
        case "gcp-api-key":
            token = "AIza" + c(ALNUM + "_-", 35)
        case "gcp-service-account-key":
            secret = (
                "-----BEGIN PRIVATE KEY-----\\n"
                + _pem_body(t, 600, escaped=True)
                + "\\n-----END PRIVATE KEY-----"
            )
            project = f"{rng.choice(PROJECTS)}-{rng.randint(1000, 9999)}"
            text = (
                '{\n  "type": "service_account",\n'
                f'  "project_id": "{project}",\n'
                f'  "private_key_id": "{t.hexs(40)}",\n'
                f'  "private_key": "{secret}\\n",\n'
                f'  "client_email": "deployer@{project}.iam.gserviceaccount.com"\n}}'
            )
            return text, secret
        case "azure-ad-client-secret":
            token = c(ALNUM, 3) + c(DIGITS, 1) + "Q~" + c(ALNUM + "_~.-", 33) + c(ALNUM, 1)
        case "azure-storage-account-key":
            secret = c(B64, 86) + "=="
            account = f"{rng.choice(PROJECTS)}store{rng.randint(1, 99)}"
            text = rng.choice(
                (
                    f"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={secret};"
                    "EndpointSuffix=core.windows.net",
                    f"AZURE_STORAGE_KEY={secret}",
                )
            )
            return text, secret
        case "digitalocean-pat":
            token = "dop_v1_" + t.hexs(64)
        case "digitalocean-access-token":
            token = "doo_v1_" + t.hexs(64)
        case "digitalocean-refresh-token":
            token = "dor_v1_" + t.hexs(64)
        case "anthropic-api-key":
            token = "sk-ant-api03-" + c(ALNUM + "_-", 93) + "AA"
        case "anthropic-admin-api-key":
            token = "sk-ant-admin01-" + c(ALNUM + "_-", 93) + "AA"
        case "openai-api-key":
            if rng.random() < 0.7:
                kind = rng.choice(("proj", "svcacct", "admin"))
                token = f"sk-{kind}-" + c(ALNUM + "_-", 64) + "T3BlbkFJ" + c(ALNUM + "_-", 64)
            else:
                token = "sk-" + c(ALNUM, 20) + "T3BlbkFJ" + c(ALNUM, 20)
        case "huggingface-access-token":
            token = "hf_" + c(LETTERS, 34)
        case "huggingface-organization-api-token":
            token = "api_org_" + c(LETTERS, 34)
        case "github-pat":
            token = "ghp_" + c(ALNUM, 36)
        case "github-fine-grained-pat":
            token = "github_pat_" + c(ALNUM, 22) + "_" + c(ALNUM, 59)
        case "github-oauth":
            token = "gho_" + c(ALNUM, 36)
        case "github-app-token":
            token = rng.choice(("ghu_", "ghs_")) + c(ALNUM, 36)
        case "github-refresh-token":
            token = "ghr_" + c(ALNUM, 76)
        case "gitlab-pat":
            token = "glpat-" + c(ALNUM + "_-", 19) + c(ALNUM, 1)
        case "gitlab-pipeline-trigger-token":
            token = "glptt-" + t.hexs(40)
        case "gitlab-runner-token":
            token = "glrt-" + c(ALNUM + "_-", 19) + c(ALNUM, 1)
        case "gitlab-deploy-token":
            token = "gldt-" + c(ALNUM + "_-", 19) + c(ALNUM, 1)
        case "slack-bot-token":
            token = f"xoxb-{c(DIGITS, 11)}-{c(DIGITS, 12)}-{c(ALNUM, 24)}"
        case "slack-user-token":
            ids = f"{c(DIGITS, 11)}-{c(DIGITS, 12)}-{c(DIGITS, 13)}"
            token = f"xox{rng.choice('pe')}-{ids}-{t.hexs(32)}"
        case "slack-app-token":
            token = f"xapp-1-A{c(UPPER_ALNUM, 10)}-{c(DIGITS, 13)}-{t.hexs(64)}"
        case "slack-webhook-url":
            token = (
                f"https://hooks.slack.com/services/T{c(UPPER_ALNUM, 9)}/"
                f"B{c(UPPER_ALNUM, 9)}/{c(ALNUM, 24)}"
            )
        case "twilio-api-key":
            token = "SK" + t.hexs(32)
        case "sendgrid-api-token":
            token = f"SG.{c(ALNUM + '_-', 21)}{c(ALNUM, 1)}.{c(ALNUM + '_-', 42)}{c(ALNUM, 1)}"
        case "npm-access-token":
            token = "npm_" + c(ALNUM, 36)
        case "pypi-upload-token":
            token = "pypi-AgEIcHlwaS5vcmc" + c(ALNUM + "_-", 140)
        case "databricks-api-token":
            token = "dapi" + t.hexs(32)
        case "terraform-cloud-api-token":
            token = f"{c(ALNUM, 14)}.atlasv1.{c(ALNUM + '_-', 66)}{c(ALNUM, 1)}"
        case "vault-service-token":
            token = "hvs." + c(ALNUM + "_-", 94) + c(ALNUM, 1)
        case "pulumi-api-token":
            token = "pul-" + t.hexs(40)
        case "postman-api-token":
            token = f"PMAK-{t.hexs(24)}-{t.hexs(34)}"
        case "grafana-api-key":
            token = _b64_json({"k": c(ALNUM, 40), "n": t.identifier(), "id": rng.randint(1, 99)})
        case "grafana-cloud-api-token":
            payload: dict[str, Any] = {
                "o": str(rng.randint(10**5, 10**7)),
                "n": t.identifier(),
                "k": c(ALNUM, 24),
                "m": {"r": rng.choice(("us", "eu", "au"))},
            }
            token = "glc_" + _b64_json(payload)
        case "grafana-service-account-token":
            token = f"glsa_{c(ALNUM, 32)}_{t.hexs(8)}"
        case "sentry-user-token":
            token = "sntryu_" + t.hexs(64)
        case "sentry-org-token":
            payload = {
                "iat": rng.randint(1_700_000_000, 1_800_000_000),
                "url": "https://sentry.io",
                "region_url": "https://us.sentry.io",
                "org": rng.choice(PROJECTS),
            }
            token = f"sntrys_{_b64_json(payload)}_{c(ALNUM, 43)}"
        case "stripe-access-token":
            token = f"{rng.choice('sr')}k_{rng.choice(('live', 'test'))}_{c(ALNUM, 99)}"
        case "shopify-access-token":
            token = "shpat_" + t.hexs(32)
        case "shopify-shared-secret":
            token = "shpss_" + t.hexs(32)
        case "private-key":
            label = rng.choice(
                ("RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY")
            )
            secret = f"-----BEGIN {label}-----\n{_pem_body(t, 900)}\n-----END {label}-----"
            return f"Key for the {rng.choice(NOUNS)} host:\n{secret}", secret
        case "age-secret-key":
            token = "AGE-SECRET-KEY-1" + c(BECH32_UPPER, 58)
        case _:
            return None
    return _token_contexts(t, rule_id, token), token


def _encode(t: _Text, host: str, text: str) -> tuple[str, Callable[[str], str]]:
    """A block for a file of kind ``host`` carrying ``text``, and how a secret is written in it."""
    rng = t.rng
    body = text.strip("\n")
    if host == "transcript":
        s = _Session(t)
        if rng.random() < 0.5:
            block = s.tool_result(body)
        else:
            block = s.user_text(f"{t.sentence()}\n\n{body}")
        return block, lambda secret: json.dumps(secret, ensure_ascii=False)[1:-1]
    if host == "note" and rng.random() < 0.5:
        return f"```\n{body}\n```\n\n", str
    return f"\n{body}\n\n", str


def _plant(
    specs: list[_FileSpec], size_mb: int, density: float, seed: int
) -> tuple[list[_FileSpec], list[dict[str, Any]], list[str]]:
    from memframe.rules import load_rules
    from memframe.scanner import SecretScanner

    rules = load_rules()
    scanner = SecretScanner(rules, engine="python")
    rng = random.Random(f"memframe-bench-corpus:plant:{seed}")
    t = _Text(rng)
    vectors = vector_samples(rules.ids())
    usable: dict[str, list[Sample]] = {}
    rejected: list[str] = []
    for rule_id, samples in vectors.items():
        for sample in samples:
            alone = {
                (f.rule_id, sample.text[f.secret_start : f.secret_end])
                for f in scanner.find(sample.text)
            }
            if (rule_id, sample.secret) in alone:
                usable.setdefault(rule_id, []).append(sample)
            else:
                rejected.append(f"{sample.source}: not found by the python engine on its own")
    count = max(len(rules), round(density * size_mb))
    order = list(rules.ids())
    rng.shuffle(order)
    cumulative = list(_accumulate(s.size for s in specs))
    blocks: dict[int, list[str]] = {}
    plants: list[dict[str, Any]] = []
    for n in range(count):
        rule_id = order[n % len(order)]
        vector = usable.get(rule_id, [])
        for _attempt in range(20):
            # a host file per attempt: a sample one kind of file cannot carry (a multi-line
            # manifest in a transcript's JSON string, its newlines escaped) goes to another
            host = bisect.bisect_right(cumulative, rng.randrange(cumulative[-1]))
            spec = specs[host]
            generated = _gen_secret(t, rule_id)
            if vector and (generated is None or rng.random() < 0.5):
                sample = vector[(n // len(order)) % len(vector)]
            elif generated is not None:
                sample = Sample(rule_id, generated[0], generated[1], "generated")
            else:
                rejected.append(f"{rule_id}: no vector sample and no generator")
                break
            block, written = _encode(t, spec.kind, sample.text)
            secret = written(sample.secret)
            found = [(f.rule_id, block[f.secret_start : f.secret_end]) for f in scanner.find(block)]
            if (rule_id, secret) in found:
                blocks.setdefault(host, []).append(block)
                plants.append(
                    {
                        "rel": spec.rel,
                        "rule_id": rule_id,
                        "secret": secret,
                        "source": sample.source,
                        "expected": found,
                    }
                )
                break
            if sample.source == "generated":
                rejected.append(f"generated {rule_id} sample not found in a {spec.kind} block")
        else:
            rejected.append(f"{rule_id}: no valid sample after 20 attempts")
    out = [_FileSpec(s.index, s.kind, s.size, s.rel, tuple(blocks.get(s.index, ()))) for s in specs]
    return out, plants, sorted(set(rejected))


def _accumulate(values: Iterable[int]) -> Iterable[int]:
    total = 0
    for v in values:
        total += v
        yield total


# -- command line ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benches.corpus", description="Build (or find) a benchmark corpus."
    )
    parser.add_argument("--kind", choices=KINDS, default="clean")
    parser.add_argument("--size", type=int, default=16, help="MB (10^6 bytes), 1..1000")
    parser.add_argument("--density", type=float, default=8.0, help="secrets per MB (planted)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    corpus = load(
        args.kind,
        args.size,
        args.density if args.kind == "planted" else 0.0,
        seed=args.seed,
        log=lambda line: print(line, file=sys.stderr),
    )
    print(corpus.root)
    print(
        f"{len(corpus.files):,} files, {corpus.total_bytes:,} bytes, kinds {corpus.meta['kinds']}"
    )
    if corpus.kind == "planted":
        sources = Counter(p.source.split(":")[0] for p in corpus.plants)
        print(
            f"{len(corpus.plants)} planted secrets over "
            f"{len({p.rule_id for p in corpus.plants})} rules ({dict(sources)})"
        )
        for line in corpus.meta.get("rejected", []):
            print(f"rejected: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
