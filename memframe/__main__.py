"""``python -m memframe`` is the ``memframe`` command."""

import sys

from memframe.cli import main

sys.exit(main())
