"""How far a parse of the variate stream begun at an arbitrary raw position runs before it meets
the stream's own parse, per generator, on the CPU's streams: the basis of the GPU simulation's
split of a replicate between threads (:func:`xuqcal.core.gpu.split_plan`).

For each generator: the mean raw draws per variate over ``--variates`` variates of one stream,
and, for ``--starts`` random even raw positions ``s`` inside it, the distance ``m - s`` from
``s`` to the first position ``m`` where the parse from ``s`` and the stream's parse from 0 both
begin a variate (the two-pointer meeting of ``gpu._simulation_sums``): mean, median, 99th and
99.9th percentiles and the largest.

    python benchmarks/parse_meeting.py --out parse_meeting.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_common import K, gpu, stream_key  # xuqcal's core, imported without its __init__

GENERATORS = (("normal", K.NORMAL, 0.0), ("t3", K.STUDENT, 3.0), ("t4", K.STUDENT, 4.0),
              ("t5", K.STUDENT, 5.0), ("t6", K.STUDENT, 6.0), ("t8", K.STUDENT, 8.0),
              ("t32", K.STUDENT, 32.0), ("t3.5", K.STUDENT, 3.5),
              ("t34", K.STUDENT, 34.0), ("t8263", K.STUDENT, 8263.0),
              ("uniform", K.UNIFORM, 0.0), ("laplace", K.LAPLACE, 0.0))


_position = nb.njit(gpu._position)  # the GPU kernel's raw position of a state, on the CPU


@nb.njit(cache=False)
def meetings(key, code, parameter, n_variates, starts, distances):
    """The raw draws of ``n_variates`` variates of stream ``(key, 0)``; ``distances[t]``
    receives the meeting distance from ``starts[t]`` (sorted)."""
    scale, form = K.variate_constants(code, parameter)
    first = K.stream_start(key, np.uint64(0))
    state = first
    for _ in range(n_variates):
        _, state = K.next_variate(state, code, parameter, scale, form)
    total = _position(state, first)
    true_state = first
    a = np.int64(0)
    for t in range(starts.shape[0]):
        s = starts[t]
        while a < s:  # the stream's own parse, up to s
            _, true_state = K.next_variate(true_state, code, parameter, scale, form)
            a = _position(true_state, first)
        sa, pa = true_state, a
        sb = first + np.uint64(s) * K._GAMMA
        pb = s
        while pa != pb:
            if pa < pb:
                _, sa = K.next_variate(sa, code, parameter, scale, form)
                pa = _position(sa, first)
            else:
                _, sb = K.next_variate(sb, code, parameter, scale, form)
                pb = _position(sb, first)
        distances[t] = pa - s
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--variates", type=int, default=200_000)
    parser.add_argument("--starts", type=int, default=3000)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = {}
    for name, code, parameter in GENERATORS:
        key = stream_key(1, f"reference:{name}")
        rng = np.random.default_rng(0)
        total = meetings(key, code, parameter, args.variates, np.zeros(0, np.int64),
                         np.zeros(0, np.int64))
        starts = np.sort(2 * (rng.integers(0, int(0.9 * total), args.starts) // 2))
        distances = np.zeros(starts.shape[0], np.int64)
        meetings(key, code, parameter, args.variates, starts.astype(np.int64), distances)
        rows[name] = {
            "draws_per_variate": total / args.variates,
            "planned_draws_per_variate": gpu.draws_per_variate(code, parameter),
            "meeting_mean": float(distances.mean()),
            "meeting_median": float(np.median(distances)),
            "meeting_p99": float(np.quantile(distances, 0.99)),
            "meeting_p999": float(np.quantile(distances, 0.999)),
            "meeting_max": int(distances.max()),
            # the least raw draws per thread of split_plan
            "least_segment_draws": gpu.least_segment_draws(code, parameter),
        }
        print(name, rows[name], flush=True)
    results = {"issue": 26, "variates": args.variates, "starts": args.starts,
               "generators": rows, "total_seconds": time.perf_counter() - started}
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
