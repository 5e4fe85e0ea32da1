"""Root pytest configuration: figures render without a display (tests and doctests)."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

#: The test files with the most work (worker time of a full run, longest first). They are
#: collected first: pytest-xdist's ``--dist loadfile`` hands out files in collection order, so
#: the long ones start first and the two workers finish together instead of one of them
#: running a long file alone at the end. The order of the other files is unchanged.
LONG_FILES = ("test_report.py", "test_faults_cli.py", "test_examples_smoke.py",
              "test_faults_writes.py", "test_summary.py", "test_faults_numeric.py",
              "test_benchmarks_smoke.py", "test_cli.py", "test_slices.py", "test_cli_multi.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: position for position, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable
