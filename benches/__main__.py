"""``python -m benches``: run the registered benchmarks (see :mod:`benches.run`)."""

from benches.run import main

raise SystemExit(main())
