"""Fit the weights of ``count_tokens`` and print them for both implementations.

    .venv/bin/python scripts/fit_tokens.py            # fit, print weights and the error table
    .venv/bin/python scripts/fit_tokens.py --check    # exit 1 unless the committed weights
                                                      # are exactly what the fit gives

Needs the bench/test extras (``tiktoken``, ``bpe-openai``) for the exact counts. The corpus is
``benches/token_corpus.py``: only its *fit* half is used here; the error table is computed on
the *held-out* half.

Method (deterministic, pure Python):

1. every fit document becomes a histogram of (previous byte class, byte class) pairs, and the
   features of ``memframe/_fallback/tokens.py`` are sums over that histogram;
2. the target is the mean of the cl100k_base and o200k_base counts; weighted least squares
   minimises the squared *relative* error (weight 1/target^2), each document class carrying
   the same total weight (``other`` scripts 0.3);
3. the weights become integers in units of 2**-SHIFT tokens one at a time, most frequent
   feature first, the others being refitted after each rounding so they absorb its error.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches import token_corpus as corpus  # noqa: E402
from memframe._fallback import tokens  # noqa: E402

CLASS_WEIGHT = {"other": 0.3}  # every other class: 1.0


def pair_histogram(text: str) -> Counter[int]:
    data = tokens._encode(text)
    if not data:
        return Counter()
    classes = int.from_bytes(data.translate(tokens.BYTE_CLASS), "big")
    return Counter(((classes >> 4) | classes).to_bytes(len(data), "big"))


def feature_vector(histogram: Counter[int]) -> list[float]:
    row = []
    for _, (previous, current) in tokens.FEATURES:
        row.append(float(sum(histogram[p * 16 + c] for p in previous for c in current)))
    return row


def solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the normal equations are small)."""
    n = len(rhs)
    a = [[*row, rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-12:
            raise ValueError(f"feature {tokens.FEATURES[col][0]!r} never varies in the corpus")
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            if factor:
                for k in range(col, n + 1):
                    a[r][k] -= factor * a[col][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][k] * x[k] for k in range(r + 1, n))) / a[r][r]
    return x


def weighted_fit(
    rows: list[list[float]], targets: list[float], weights: list[float], fixed: dict[int, float]
) -> list[float]:
    """Least squares over the free features, the ``fixed`` ones held at their value."""
    free = [j for j in range(len(rows[0])) if j not in fixed]
    normal = [[0.0] * len(free) for _ in free]
    rhs = [0.0] * len(free)
    for row, target, weight in zip(rows, targets, weights, strict=True):
        residual = target - sum(row[j] * value for j, value in fixed.items())
        for a, ja in enumerate(free):
            wa = weight * row[ja]
            if not wa:
                continue
            rhs[a] += wa * residual
            for b, jb in enumerate(free):
                normal[a][b] += wa * row[jb]
    solution = solve(normal, rhs) if free else []
    out = [0.0] * len(rows[0])
    for j, value in fixed.items():
        out[j] = value
    for a, j in enumerate(free):
        out[j] = solution[a]
    return out


def fit() -> tuple[list[int], list[float]]:
    """The fixed-point weights and the unrounded least-squares weights."""
    docs = corpus.counted(corpus.corpus("fit"))
    rows, targets, weights = [], [], []
    per_class = Counter(doc.kind for doc, _ in docs)
    for doc, counts in docs:
        target = sum(counts[name] for name in corpus.ENCODINGS) / len(corpus.ENCODINGS)
        rows.append(feature_vector(pair_histogram(doc.text)))
        targets.append(target)
        share = CLASS_WEIGHT.get(doc.kind, 1.0) / per_class[doc.kind]
        weights.append(share / max(target, 1.0) ** 2)
    scale = 1 << tokens.SHIFT
    exact = weighted_fit(rows, targets, weights, {})
    # Round the most frequent feature first; refit the rest around each rounded weight.
    usage = [sum(abs(row[j]) for row in rows) for j in range(len(tokens.FEATURES))]
    fixed: dict[int, float] = {}
    for j in sorted(range(len(usage)), key=lambda j: (-usage[j], j)):
        current = weighted_fit(rows, targets, weights, fixed)
        fixed[j] = round(current[j] * scale) / scale
    return [round(fixed[j] * scale) for j in range(len(usage))], exact


def estimator(weights: Sequence[int]) -> Callable[[str], int]:
    table = tokens.pair_table(weights)

    def estimate(text: str) -> int:
        if not text:
            return 0
        histogram = pair_histogram(text)
        raw = sum(table[code] * n for code, n in histogram.items())
        return max(1, (raw + tokens.HALF) >> tokens.SHIFT)

    return estimate


def print_table(weights: Sequence[int]) -> None:
    held = corpus.counted(corpus.corpus("held"))
    estimate = estimator(weights)
    print("\nheld-out error, % (bias = sum estimate / sum exact - 1; p50/p95 per document;")
    print("mixed: per message, and 'session' = running total over each transcript's messages)")
    for label, fn in (("estimator", estimate), ("len/4", corpus.len4)):
        for encoding in (*corpus.ENCODINGS, "mean"):
            print(f"\n{label} vs {encoding}")
            for kind, acc in corpus.accuracy(fn, held, encoding).items():
                session = f"  session p95 {acc.session_p95:5.1f}" if acc.session_p95 else ""
                print(
                    f"  {kind:11} n={acc.docs:4}  bias {acc.bias:+6.1f}  "
                    f"p50 {acc.p50:5.1f}  p95 {acc.p95:5.1f}{session}"
                )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed weights")
    parser.add_argument("--no-table", action="store_true", help="skip the held-out error table")
    args = parser.parse_args(argv)
    if not corpus.reference_counters():
        print(corpus.missing_reference_note(), file=sys.stderr)
        return 2
    weights, exact = fit()
    names = [name for name, _ in tokens.FEATURES]
    print(f"features and weights (tokens; fixed point = value * 2**{tokens.SHIFT}):")
    for name, value, unrounded in zip(names, weights, exact, strict=True):
        print(
            f"  {name:15} {value:6d}  = {value / (1 << tokens.SHIFT):+.4f}  (lsq {unrounded:+.4f})"
        )
    half = (len(weights) + 1) // 2
    lines = [", ".join(str(w) for w in part) + "," for part in (weights[:half], weights[half:])]
    body = "".join(f"\n    {line}" for line in lines)
    print("\nmemframe/_fallback/tokens.py:")
    print(f"WEIGHTS: Final[tuple[int, ...]] = ({body}\n)  # fmt: skip")
    print(f"\nrust/memframe-core/src/tokens.rs:\nconst WEIGHTS: [i64; FEATURES] = [{body}\n];")
    table = tokens.pair_table(weights)
    print(f"\npair weights: min {min(table)}, max {max(table)} (units)")
    if args.check:
        if tuple(weights) != tuple(tokens.WEIGHTS):
            print("\nMISMATCH: the committed weights differ from the fit", file=sys.stderr)
            return 1
        print("\ncommitted weights match the fit")
    if not args.no_table:
        print_table(weights)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
