"""The bootstrap walk of zms at large M: draw-order sums (the kernel) against counted sums (a
candidate), side by side in one process.

``kernels.bootstrap_block`` adds the drawn rows in draw order (batched and prefetched above
``_PLAIN_WALK_BYTES``): one random load of a 64-byte line per draw. The candidate, written here
and not used by xuqcal, draws the same indices from the same stream, counts them (a random
increment of a 4-byte count, prefetched in batches of 64) and then sums ``count_j * z2_j`` in
point order (four interleaved partial sums): the same multiplicities, other roundings (the
replicates then differ in the last bits: it would be a documented change of the sums). A third
row times the draws alone (the stream and Lemire's bounded integers), the floor of both.

Each candidate runs ``--replicates`` replicates per call, interleaved, ``--rounds`` times; the
JSON holds ns per draw (one thread) of each, the ratios and the largest relative difference of
the replicates between the two sums.

Usage::

    python benchmarks/bootstrap_sums.py --output benchmarks/measured/bootstrap-sums.json
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
from xuqcal.core.statistics import STATISTICS  # noqa: E402

_BATCH = 64


@nb.njit(nogil=True)
def counted_zms(key, start, stop, z2, counts, out):
    """zms of replicates ``start .. stop - 1`` from counted draws, summed in point order."""
    m = z2.shape[0]
    batch = np.empty(_BATCH, np.int64)
    for r in range(start, stop):
        state = K.stream_start(key, r)
        counts[:] = 0
        done = 0
        while done < m:
            n = min(_BATCH, m - done)
            for t in range(n):
                j, state = K.next_below(state, m)
                batch[t] = j
                K._prefetch_write(counts, j)
            for t in range(n):
                counts[batch[t]] += 1
            done += n
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        quarter = m // 4
        for q in range(quarter):
            j = 4 * q
            s0 += counts[j] * z2[j]
            s1 += counts[j + 1] * z2[j + 1]
            s2 += counts[j + 2] * z2[j + 2]
            s3 += counts[j + 3] * z2[j + 3]
        total = (s0 + s1) + (s2 + s3)
        for j in range(4 * quarter, m):
            total += counts[j] * z2[j]
        out[r - start] = total / m


@nb.njit(nogil=True)
def draws_only(key, start, stop, m, out):
    """The draws of the replicates alone (their indices added, so that none is optimized
    away)."""
    for r in range(start, stop):
        state = K.stream_start(key, r)
        total = 0
        for _ in range(m):
            j, state = K.next_below(state, m)
            total += j
        out[r - start] = total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=2_000_000)
    parser.add_argument("--replicates", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "bootstrap-sums.json")
    args = parser.parse_args(argv)
    m, b = args.points, args.replicates
    rng = np.random.default_rng(0)
    uE = np.exp(rng.normal(size=m))
    errors = uE * rng.normal(size=m)
    z = errors / uE
    z2, e2, u2 = z * z, errors * errors, uE * uE
    packed = K.pack_moments(e2, u2, z, z2, np.log(u2), 0.0)
    codes = np.array([STATISTICS["zms"].code])
    order = np.argsort(uE, kind="stable")
    tie = np.zeros(m, np.bool_)
    work = K.make_work(m, 20)
    key = np.uint64(7)
    kernel_out = np.empty((b, 1))
    counted_out = np.empty(b)
    counts = np.zeros(m, np.int32)
    draws_out = np.empty(b, np.int64)
    runs = {
        "kernel_draw_order": lambda: K.bootstrap_block(key, 0, b, codes, 20, packed, e2, u2, z2,
                                                       0.0, order, tie, order, tie, tie, work,
                                                       kernel_out),
        "counted_point_order": lambda: counted_zms(key, 0, b, z2, counts, counted_out),
        "draws_only": lambda: draws_only(key, 0, b, m, draws_out),
    }
    for run in runs.values():  # compile
        run()
    times = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - start) / (b * m) * 1e9)
    best = {name: min(values) for name, values in times.items()}
    difference = float(np.max(np.abs(kernel_out[:, 0] - counted_out) / kernel_out[:, 0]))
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "points": m, "replicates": b,
               "rounds": args.rounds, "cpu_count": os.cpu_count(),
               "load_average": os.getloadavg(), "unit": "ns per draw (one thread)",
               "ns_per_draw": times, "best": best,
               "ratio_counted_over_kernel": best["counted_point_order"]
               / best["kernel_draw_order"],
               "max_relative_difference_of_replicates": difference}
    for name, value in best.items():
        print(f"{name:<22} {value:6.2f} ns per draw (best of {args.rounds})")
    print(f"largest relative difference of the replicates: {difference:.2e}")
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
