"""``python -m clusterforge.cli``: the clusterforge command, for a Python whose scripts directory is not on PATH."""

import sys

from . import main

sys.exit(main())
