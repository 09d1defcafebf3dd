"""memframe benchmarks: ``python -m benches [--quick] [--only NAME ...] [--json PATH]``.

Each benchmark module exposes ``NAME``, ``run(quick) -> BenchResult`` and optionally
``check(result) -> list[str]`` (the ratio floors it broke). See benches/README.md.
"""
