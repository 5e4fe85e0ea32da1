"""Root pytest configuration: figures render without a display (tests and doctests)."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
