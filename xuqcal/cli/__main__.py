"""``python -m xuqcal.cli``: the ``xuqcal`` command."""

import sys

from xuqcal.cli import main

sys.exit(main())
