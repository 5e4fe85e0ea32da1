"""Start-up time (issue 26): ``import xuqcal`` and ``xuqcal --help``, each in fresh processes.

Measures the median wall time of

- ``import xarray, dask.array`` alone (the floor that xuqcal builds on),
- ``import xuqcal`` (xuqcal's share is the difference of the two medians),
- ``xuqcal --help`` (``python -m xuqcal --help``, the console script's entry point),

the same share read from ``python -X importtime`` (the self times of the modules that
``import xuqcal`` loads beyond those of ``import xarray, dask.array``, median over the runs:
less sensitive to the load of the machine than a difference of wall times), and lists which
heavy modules (``scipy.stats``, ``matplotlib``, ``distributed``, ``numba``) are
in :data:`sys.modules` after ``import xuqcal``. Each run is a new interpreter; the runs of the
three alternate so that a drift of the machine touches them alike. Run::

    python benchmarks/startup.py --repeat 7 --label after \
        --output benchmarks/measured/startup.json

``--output`` adds the run under ``--label`` to the file (other labels kept); ``--root DIR``
imports xuqcal from another checkout (a git worktree of an older revision, for a "before").
The Numba cache is warmed by one untimed ``import xuqcal`` first: a cold cache is another
measurement (the first call of a kernel compiles, not the import).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout is imported, not an installed copy
HEAVY = ("scipy.stats", "matplotlib", "distributed", "numba", "xuqcal.plot", "xuqcal.report")

_CASES = {
    "import_xarray_dask": [sys.executable, "-c", "import xarray, dask.array"],
    "import_xuqcal": [sys.executable, "-c", "import xuqcal"],
    "cli_help": [sys.executable, "-m", "xuqcal", "--help"],
}

_PROBE = (
    "import json, sys; import xuqcal; "
    f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
)


def _time(argv: list[str], root: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=root)
    return time.perf_counter() - start


def _self_times(code: str, root: Path) -> dict[str, int]:
    """Self import time (microseconds) of each module that ``code`` imports."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], check=True,
                          capture_output=True, text=True, cwd=root)
    times = {}
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, _, name = line[len("import time:"):].split("|")
            times[name.strip()] = int(self_us)
    return times


def importtime_share(root: Path) -> float:
    """Seconds of self import time of the modules that ``import xuqcal`` adds to
    ``import xarray, dask.array`` (one run of each)."""
    base = _self_times("import xarray, dask.array", root)
    full = _self_times("import xuqcal", root)
    return sum(us for name, us in full.items() if name not in base) / 1e6


def measure(repeat: int, root: Path = ROOT) -> dict:
    """Median seconds of each case over ``repeat`` fresh processes, and the modules loaded.

    Parameters
    ----------
    repeat : int
        Number of fresh processes per case.
    root : pathlib.Path, optional
        The checkout whose xuqcal is imported (default this one).

    Returns
    -------
    dict
        ``median_s`` and ``times_s`` per case, ``xuqcal_share_s`` (difference of the medians),
        ``xuqcal_share_importtime_s`` (median) and ``modules_after_import``.
    """
    _time(_CASES["import_xuqcal"], root)  # warm the disk and the Numba caches, not timed
    times: dict[str, list[float]] = {name: [] for name in _CASES}
    shares = []
    for _ in range(repeat):
        for name, argv in _CASES.items():
            times[name].append(_time(argv, root))
        shares.append(importtime_share(root))
    median = {name: statistics.median(t) for name, t in times.items()}
    done = subprocess.run([sys.executable, "-c", _PROBE], check=True, capture_output=True, cwd=root,
                          text=True)
    return {
        "repeat": repeat,
        "median_s": {k: round(v, 4) for k, v in median.items()},
        "xuqcal_share_s": round(median["import_xuqcal"] - median["import_xarray_dask"], 4),
        "xuqcal_share_importtime_s": round(statistics.median(shares), 4),
        "importtime_share_s": [round(x, 4) for x in shares],
        "times_s": {k: [round(x, 4) for x in v] for k, v in times.items()},
        "modules_after_import": json.loads(done.stdout.strip().splitlines()[-1]),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the measurement, print it, and add it to ``--output`` under ``--label``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--label", default="run")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    run = measure(args.repeat, args.root.resolve())
    run["root"] = str(args.root)
    run["machine"] = {"python": platform.python_version(), "platform": platform.platform(),
                      "processor": platform.processor()}
    print(json.dumps(run, indent=2))
    if args.output is not None:
        data = json.loads(args.output.read_text()) if args.output.exists() else {}
        data[args.label] = run
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
