"""``python -m xuqcal``: the ``xuqcal`` command (see :mod:`xuqcal.cli`)."""

import sys

from xuqcal.cli import main

if __name__ == "__main__":
    sys.exit(main())
