"""Cold-cache Numba compile time of the two largest kernels (issue 26), before and after.

Each run is a new interpreter with an empty ``NUMBA_CACHE_DIR`` that imports
:mod:`xuqcal.core.kernels` from a checkout and calls, on 1000 points, ``simulate_block``
(zms, cc and ence; normal variates) and then ``bootstrap_block`` (the same statistics): the
wall time of each first call is its compile (the work itself takes milliseconds). Runs of the
checkouts alternate, so that a drift of the machine touches them alike; the JSON holds every
time and the medians. Run::

    git worktree add /tmp/before <rev>
    python benchmarks/compile_time.py --root before=/tmp/before --root after=. --repeat 3 \
        --output benchmarks/measured/compile-time.json

A user pays this once per machine: the compiled kernels are cached
(:mod:`xuqcal._numba_cache`); the test suite's processes pay it on a clean checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_PROBE = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from xuqcal.core import kernels as K
m = 1000
uE = np.sort(np.random.default_rng(0).random(m)) + 0.1
u2 = uE * uE
lnu2 = np.log(u2)
tie = np.zeros(m, np.bool_)
order = np.arange(m)
codes = np.array([K.ZMS, K.CC, K.ENCE], np.int64)
start = time.perf_counter()
K.simulate_block(np.uint64(1), K.NORMAL, 0.0, 0, 2, codes, np.array([5]), uE, u2, lnu2, order,
                 tie, K.make_work(m, 5), np.empty((2, 1, 3)))
simulate = time.perf_counter() - start
e = 0.5 * uE
z = e / uE
packed = K.pack_moments(e * e, u2, z, z * z, lnu2, 0.0)
start = time.perf_counter()
K.bootstrap_block(np.uint64(1), 0, 2, codes, 5, packed, e * e, u2, z * z, 0.0, order, tie,
                  order, tie, tie, K.make_work(m, 5), np.empty((2, 3)))
bootstrap = time.perf_counter() - start
print(json.dumps({"simulate_block": simulate, "bootstrap_block": bootstrap}))
"""


def _revision(root: Path) -> str:
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                            capture_output=True)
    return result.stdout.strip() or "unknown"


def _one_run(root: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        result = subprocess.run([sys.executable, "-c", _PROBE, str(root)], env=env, text=True,
                                capture_output=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", action="append", required=True, metavar="LABEL=PATH",
                        help="a checkout to import xuqcal from, under a label (repeatable)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per checkout")
    parser.add_argument("--output", type=Path, required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    roots = {}
    for item in args.root:
        label, _, path = item.partition("=")
        if not label or not path:
            parser.error(f"--root: expected LABEL=PATH, got {item!r}")
        roots[label] = Path(path).resolve()
    times: dict[str, dict[str, list[float]]] = {
        label: {"simulate_block": [], "bootstrap_block": []} for label in roots}
    for _ in range(args.repeat):
        for label, root in roots.items():
            for kernel, seconds in _one_run(root).items():
                times[label][kernel].append(seconds)
    result = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "what": "wall seconds of the first call of each kernel in a new process with an empty "
                "NUMBA_CACHE_DIR (the compile; the work on 1000 points takes milliseconds)",
        "cpu_count": os.cpu_count(), "platform": platform.platform(),
        "python": platform.python_version(), "repeat": args.repeat,
        "checkouts": {label: {"path": str(root), "revision": _revision(root),
                              "seconds": times[label],
                              "median": {k: statistics.median(v)
                                         for k, v in times[label].items()}}
                      for label, root in roots.items()},
    }
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    for label, entry in result["checkouts"].items():
        medians = ", ".join(f"{k} {v:.1f} s" for k, v in entry["median"].items())
        print(f"{label} ({entry['revision']}): {medians}")
    print(f"written: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
