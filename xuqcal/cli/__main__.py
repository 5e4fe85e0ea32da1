"""``python -m xuqcal.cli``: the ``xuqcal`` command."""

import sys

from xuqcal.cli import main

if __name__ == "__main__":
    sys.exit(main())
