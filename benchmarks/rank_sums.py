"""The two walks of a simulated set's rank correlation cc, side by side in one process.

``_spearman_unit`` scatters the ranks of |E~| to the points and sums in point order;
``_spearman_unit_sorted`` (used up to ``_EXACT_RANK_SUMS`` points) walks the sorted order once,
gathering the uE ranks. Both run on the same QM9-sized inputs (uE with ties), interleaved,
``--rounds`` times; the JSON holds ns per point of each, the ratio, and whether the two
correlations are bit-identical.

Usage::

    python benchmarks/rank_sums.py --output benchmarks/measured/rank-sums.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from xuqcal.core import kernels as K  # noqa: E402


@nb.njit
def _scatter(replicates, centred, saa, order_e, tie_e, rank):
    total = 0.0
    for _ in range(replicates):
        total += K._spearman_unit(centred, saa, order_e, tie_e, rank)
    return total


@nb.njit
def _sorted(replicates, centred, saa, order_e, tie_e):
    total = 0.0
    for _ in range(replicates):
        total += K._spearman_unit_sorted(centred, saa, order_e, tie_e)
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=13_885)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "rank-sums.json")
    args = parser.parse_args(argv)
    m = args.points
    if m > K._EXACT_RANK_SUMS:
        parser.error(f"--points: at most {K._EXACT_RANK_SUMS} (the sorted walk's bound)")
    rng = np.random.default_rng(1)
    u = np.round(np.sort(np.exp(rng.normal(size=m))), 3)
    tie_u = np.zeros(m, np.bool_)
    tie_u[1:] = u[1:] == u[:-1]
    e = np.abs(u * rng.normal(size=m))
    order_e = np.argsort(e, kind="stable").astype(np.int32)
    tie_e = np.zeros(m, np.bool_)
    tie_e[1:] = e[order_e][1:] == e[order_e][:-1]
    centred = np.empty(m)
    saa = K._centred_unit_ranks(np.arange(m), tie_u, centred)
    rank = np.empty(m)
    identical = _scatter(1, centred, saa, order_e, tie_e, rank) == _sorted(
        1, centred, saa, order_e, tie_e)
    replicates = max(1, int(4e6 // m))
    times = {"scatter": [], "sorted": []}
    for _ in range(args.rounds):
        start = time.perf_counter()
        _scatter(replicates, centred, saa, order_e, tie_e, rank)
        times["scatter"].append((time.perf_counter() - start) / (replicates * m) * 1e9)
        start = time.perf_counter()
        _sorted(replicates, centred, saa, order_e, tie_e)
        times["sorted"].append((time.perf_counter() - start) / (replicates * m) * 1e9)
    best = {name: min(t) for name, t in times.items()}
    result = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "points": m,
              "rounds": args.rounds, "cpu_count": os.cpu_count(),
              "load_average": os.getloadavg(), "unit": "ns per point (one thread)",
              "ns_per_point": times, "best": best,
              "ratio_sorted_over_scatter_best": best["sorted"] / best["scatter"],
              "identical": bool(identical)}
    print(f"scatter {best['scatter']:.2f}  sorted {best['sorted']:.2f} ns/point (best of "
          f"{args.rounds}; ratio {best['sorted'] / best['scatter']:.3f}; identical {identical})")
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
