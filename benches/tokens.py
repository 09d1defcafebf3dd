"""count_tokens: MB/s of each engine beside len/4 and the exact BPEs, and held-out error.

Throughput, all on the same text (the bundled agent transcripts' messages, as memframe's context
meter sees them), one call per text, median of interleaved repeats:

- ``native``: ``memframe._native.count_tokens`` (one thread; SIMD kernel picked at run time);
- ``python``: ``memframe._fallback.tokens.count_tokens``;
- ``len/4``: ``ceil(len(text.encode()) / 4)``, the rule it replaces;
- ``tiktoken cl100k`` / ``o200k``, ``bpe-openai cl100k`` / ``o200k``: exact token counts (when
  the ``tokens`` extra is installed).

Accuracy (needs the exact BPEs; skipped with a note otherwise): the held-out half of
``benches/token_corpus.py``, per class, for the estimator (``est_*``) and for len/4
(``len4_*``): ``bias`` = sum of estimates / sum of exact counts - 1, ``p50``/``p95`` of the
per-document relative error, all in percent; for ``mixed``, ``session_p95`` is the p95 error of
the running total over each transcript's messages (the context a session accumulates).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from benches import token_corpus as corpus
from benches.harness import BenchResult, Runner, Settings, measure_interleaved, ratio
from memframe import _backend
from memframe._fallback import tokens as fallback

NAME = "tokens"

NATIVE_FLOOR_MB_S = 2_000  # full runs: the native estimator, one thread
QUICK_NATIVE_FLOOR_MB_S = 500  # quick (CI) runs: lenient, CI machines are noisy
BIAS_BAR = 12.0  # |bias| per class, percent
CJK_EACH_ENCODING_BAR = 20.0  # cl100k and o200k differ by ~1.33x on CJK (docs/tokens.md)
SESSION_P95_BAR = 10.0  # mixed session, running total, percent


def _loop(count: Callable[[str], object], text: str) -> Runner:
    def loop(number: int) -> int:
        start = time.perf_counter_ns()
        for _ in range(number):
            count(text)
        return time.perf_counter_ns() - start

    return loop


def _sample(quick: bool) -> str:
    """The agent-session text: every bundled transcript message, ~0.34 MB (x3 in full runs)."""
    text = "\n".join(doc.text for doc in corpus.load(corpus.MIXED))
    return text if quick else text * 3


def _exact_counters() -> dict[str, Callable[[str], int]]:
    out: dict[str, Callable[[str], int]] = {}
    for name, encoding in corpus.tiktoken_encodings().items():
        encode = encoding.encode_ordinary  # type: ignore[attr-defined]
        out[f"tiktoken {name.split('_')[0]}"] = lambda text, encode=encode: len(encode(text))
    for name, count in corpus.bpe_openai_counters().items():
        out[f"bpe-openai {name.split('_')[0]}"] = count
    return out


def _throughput(result: BenchResult, quick: bool) -> None:
    text = _sample(quick)
    size = len(text.encode("utf-8"))
    fast: dict[str, Runner] = {}
    try:
        native = _backend.get_engine("native").module
    except _backend.BackendError as exc:
        result.notes.append(f"native engine unavailable: {exc}")
        native = None
    if native is not None:
        fast["native"] = _loop(native.count_tokens, text)
        identical = native.count_tokens(text) == fallback.count_tokens(text)
        result.params["native_equals_python"] = identical
    fast["python"] = _loop(fallback.count_tokens, text)
    fast["len/4"] = _loop(corpus.len4, text)
    settings = Settings.for_mode(quick)
    timings = measure_interleaved(fast, settings)
    exact = {name: _loop(count, text) for name, count in _exact_counters().items()}
    if exact:  # ~10-40 MB/s: fewer, longer repeats
        slow = Settings(repeats=7 if quick else 21, target_ns=settings.target_ns)
        timings.update(measure_interleaved(exact, slow))
    else:
        result.notes.append(corpus.missing_reference_note().replace("accuracy", "BPE speed"))
    python_mb_s = size / timings["python"].median_ns * 1e3
    for name, timing in timings.items():
        mb_s = size / timing.median_ns * 1e3
        result.add(name, mb_s=round(mb_s, 1), x_python=ratio(mb_s, python_mb_s))
        result.details[f"speed {name}"] = timing.to_json()
    result.params["sample_bytes"] = size


def _accuracy(result: BenchResult) -> None:
    if not corpus.reference_counters():
        result.notes.append(corpus.missing_reference_note())
        return
    held = corpus.counted(corpus.corpus("held"))
    for encoding in corpus.ENCODINGS:
        short = encoding.split("_")[0]
        estimator = corpus.accuracy(fallback.count_tokens, held, encoding)
        baseline = corpus.accuracy(corpus.len4, held, encoding)
        for kind, est in estimator.items():
            base = baseline[kind]
            row = f"{short} {kind}"
            result.add(
                row,
                docs=est.docs,
                est_bias=round(est.bias, 1),
                est_p50=round(est.p50, 1),
                est_p95=round(est.p95, 1),
                len4_bias=round(base.bias, 1),
                len4_p50=round(base.p50, 1),
                len4_p95=round(base.p95, 1),
            )
            if est.session_p95 is not None and base.session_p95 is not None:
                result.add(
                    row,
                    est_session_p95=round(est.session_p95, 1),
                    len4_session_p95=round(base.session_p95, 1),
                )
    result.params["accuracy"] = True


def run(quick: bool) -> BenchResult:
    result = BenchResult(NAME, params={"quick": quick, "accuracy": False})
    _throughput(result, quick)
    _accuracy(result)
    result.notes.extend(
        [
            "mb_s: MB/s of UTF-8 text, one call per text, median of interleaved repeats",
            "accuracy rows: held-out half, errors in % (bias = sum est / sum exact - 1; "
            "p50/p95 per document; session = running total over each transcript)",
            f"bars: |bias| <= {BIAS_BAR:g}% per class (CJK: <= {CJK_EACH_ENCODING_BAR:g}% vs "
            f"each encoding), mixed session p95 <= {SESSION_P95_BAR:g}%, native >= "
            f"{NATIVE_FLOOR_MB_S:,} MB/s (quick runs: {QUICK_NATIVE_FLOOR_MB_S:,})",
        ]
    )
    return result


def check(result: BenchResult) -> list[str]:
    """Speed floor for the native estimator (lenient in quick runs) and the accuracy bars."""
    problems = []
    quick = bool(result.params.get("quick"))
    floor = QUICK_NATIVE_FLOOR_MB_S if quick else NATIVE_FLOOR_MB_S
    native = result.rows.get("native")
    if native is not None:
        mb_s = native.get("mb_s")
        if isinstance(mb_s, int | float) and mb_s < floor:
            problems.append(f"native count_tokens {mb_s:,.0f} MB/s < {floor:,} MB/s")
    if result.params.get("native_equals_python") is False:
        problems.append("native and python count_tokens disagree on the sample text")
    if not result.params.get("accuracy"):
        return problems
    for row, metrics in result.rows.items():
        if " " not in row or "est_bias" not in metrics:
            continue
        kind = row.split(" ", 1)[1]
        bias = metrics["est_bias"]
        bar = CJK_EACH_ENCODING_BAR if kind == "cjk" else BIAS_BAR
        if (
            kind in (*corpus.KINDS, corpus.MIXED)
            and isinstance(bias, int | float)
            and abs(bias) > bar
        ):
            problems.append(f"{row}: bias {bias:+.1f}% beyond ±{bar:g}%")
        session = metrics.get("est_session_p95")
        if isinstance(session, int | float) and session > SESSION_P95_BAR:
            problems.append(f"{row}: session p95 {session:.1f}% > {SESSION_P95_BAR:g}%")
    return problems
