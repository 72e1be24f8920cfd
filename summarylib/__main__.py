"""``python -m summarylib``: see :mod:`summarylib.cli`."""

import sys

from summarylib.cli import main

sys.exit(main())
