"""The data preparation of one data set (``PreparedData.from_arrays``) and its stable sorts,
side by side in one process (issue 26: the serial start of a default validate of 2·10⁶ points,
where the data are prepared once before any kernel runs).

For each of ``--repeat`` rounds, on the NIG(6) points of ``--m``: NumPy's stable argsort and
the kernels' radix sort (``xuqcal.core.binning.stable_order``, the same permutation, checked)
of ``|E|`` and of ``uE``, and the whole ``from_arrays`` as it runs now and with NumPy's sorts
put back (``stable_order`` replaced by ``np.argsort(kind="stable")`` and the tie flags of the
sorted values: the preparation before the radix sorts). Each timing is the best of its round's
two calls; the arrays are made anew for every call.

    python benchmarks/prepare_time.py --out prepare.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import revision

import xuqcal
from xuqcal.core import binning as core_binning
from xuqcal.core import statistics as core_statistics


def _best(function, repeat: int = 2) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def _numpy_order(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's stable argsort and the tie flags of the sorted values (the preparation's sorts
    before the radix sort)."""
    order = np.argsort(values, kind="stable")
    return order, core_binning.tie_flags(values[order])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    ds = xuqcal.synthetic.nig(args.m, nu=6, seed=0)
    E, uE = ds.E.values.copy(), ds.uE.values.copy()
    absE = np.abs(E)
    for values in (absE, uE):  # compile or load the kernel; the same permutation
        assert np.array_equal(core_binning.stable_order(values)[0],
                              np.argsort(values, kind="stable"))
    prepare = core_statistics.PreparedData.from_arrays
    prepare(E[:5000], uE[:5000], n_bins=10)
    rounds = []
    for _ in range(args.repeat):
        row = {}
        for name, values in (("abs_E", absE), ("uE", uE)):
            row[f"numpy_stable_argsort_{name}"] = _best(
                lambda v=values: np.argsort(v.copy(), kind="stable"))
            row[f"radix_argsort_{name}"] = _best(
                lambda v=values: core_binning.stable_order(v.copy()))
        row["from_arrays"] = _best(lambda: prepare(E.copy(), uE.copy(), n_bins=31))
        saved = core_statistics.stable_order
        core_statistics.stable_order = _numpy_order
        try:
            row["from_arrays_numpy_sorts"] = _best(
                lambda: prepare(E.copy(), uE.copy(), n_bins=31))
        finally:
            core_statistics.stable_order = saved
        rounds.append(row)
        print({k: round(v, 4) for k, v in row.items()}, flush=True)
    results = {"issue": 26, "M": args.m, "data": "NIG(6)", "revision": revision(),
               "platform": platform.platform(), "timing": "best of 2 calls per round, seconds",
               "rounds": rounds}
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
