"""cc of simulated sets on the GPU (:func:`xuqcal.core.gpu.simulation_cc_sums_gpu`: each set's
``|E~|`` sorted and ranked on the device): agreement with the CPU kernel, and timings.

(a) Agreement: the replicates of zms, cc, ence and zmse from ``simulate_statistics_gpu``
    against ``kernels.simulate_block`` (the CPU kernel of ``xuqcal.simulate``), for the normal
    and t6 generators, at ``--m-exact`` points (the Spearman sums exact, added by the threads)
    and ``--m-check`` points (above 2^17: added in point order by one thread, as the CPU):
    whether each statistic's replicates are identical, and the largest relative difference.
(b) Timing at M = ``--m`` (2·10^6), ``--n-mc`` sets (500: the first round of a default
    validate), zms + cc + ence + zmse: the GPU call (after a warm-up call that compiles the
    kernels) with cc and without, so that cc's share shows; the CPU kernel on
    ``os.cpu_count()`` threads for ``--n-cpu`` sets, extrapolated per set.
(c) The results go to a JSON file (``--out``).

Small sizes run on Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), e.g.
``--m-exact 200 --m-check 300 --n-check 2 --m 300 --n-mc 4 --n-cpu 2``; the sums in point
order are then exact too.

    python benchmarks/gpu_ranks.py --out gpu_ranks.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_common import (  # xuqcal's core, imported without its __init__
    STATISTICS,
    K,
    PreparedData,
    gpu,
    nig_data,
    relative,
    start_run,
    stream_key,
    write_results,
)
from gpu_simulation import cpu_simulation

#: The statistics of a default validate that are simulated (cc among them).
KEYS = ("zms", "cc", "ence", "zmse")
#: (name, code, parameter) of the generators.
GENERATORS = (("normal", K.NORMAL, 0.0), ("t6", K.STUDENT, 6.0))


def check_agreement(m: int, n: int, n_bins: int, threads: int) -> dict:
    E, uE = nig_data(m, 3)
    prepared = PreparedData.from_arrays(E, uE, n_bins=n_bins)
    codes = np.array([STATISTICS[k].code for k in KEYS])
    found = {"M": m, "n_mc": n, "cc_sums": "in point order" if m > K._EXACT_RANK_SUMS
             else "exact (any order)", "generators": {}}
    for name, code, parameter in GENERATORS:
        key = stream_key(2026, f"reference:{name}")
        on_gpu = gpu.simulate_statistics_gpu(key, 0, n, codes, code, parameter, prepared)
        on_cpu = cpu_simulation(prepared, codes, code, parameter, key, 0, n, threads)
        found["generators"][name] = {
            "identical": {k: bool(np.array_equal(on_gpu[:, i], on_cpu[:, i], equal_nan=True))
                          for i, k in enumerate(KEYS)},
            "max_relative_difference": {k: relative(on_gpu[:, i], on_cpu[:, i])
                                        for i, k in enumerate(KEYS)}}
    return found


def time_calls(prepared, keys, code, parameter, key, n: int, repeat: int) -> dict:
    codes = np.array([STATISTICS[k].code for k in keys])
    t = time.perf_counter()
    gpu.simulate_statistics_gpu(key, 0, min(n, 8), codes, code, parameter, prepared)
    warm_up = time.perf_counter() - t
    calls = []
    for _ in range(repeat):
        t = time.perf_counter()
        gpu.simulate_statistics_gpu(key, 0, n, codes, code, parameter, prepared)
        calls.append(time.perf_counter() - t)
    return {"statistics": list(keys), "warm_up_seconds_with_compile": warm_up,
            "call_seconds": calls, "call_seconds_best": min(calls),
            "ns_per_point_best": min(calls) / (float(n) * prepared.size) * 1e9}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--m-exact", type=int, default=100_000)
    parser.add_argument("--m-check", type=int, default=300_000)
    parser.add_argument("--n-check", type=int, default=20)
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--n-mc", type=int, default=500)
    parser.add_argument("--n-cpu", type=int, default=32)
    parser.add_argument("--n-bins", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    results, threads, started = start_run()
    results["agreement"] = []
    for m in (args.m_exact, args.m_check):
        found = check_agreement(m, args.n_check, args.n_bins, threads)
        results["agreement"].append(found)
        for name, row in found["generators"].items():
            print(f"(a) {name} M = {m} ({found['cc_sums']}): identical {row['identical']}; "
                  f"max relative {row['max_relative_difference']}", flush=True)
    E, uE = nig_data(args.m, 2)
    prepared = PreparedData.from_arrays(E, uE, n_bins=args.n_bins)
    results["timings"] = []
    for name, code, parameter in GENERATORS:
        key = stream_key(7, f"reference:{name}")
        with_cc = time_calls(prepared, KEYS, code, parameter, key, args.n_mc, args.repeat)
        without = time_calls(prepared, [k for k in KEYS if k != "cc"], code, parameter, key,
                             args.n_mc, args.repeat)
        codes = np.array([STATISTICS[k].code for k in KEYS])
        cpu_simulation(prepared, codes, code, parameter, key, 0, min(args.n_cpu, threads),
                       threads)  # compiled or loaded
        t = time.perf_counter()
        cpu_simulation(prepared, codes, code, parameter, key, 0, args.n_cpu, threads)
        cpu_seconds = time.perf_counter() - t
        row = {"generator": name, "M": args.m, "n_mc": args.n_mc, "gpu_with_cc": with_cc,
               "gpu_without_cc": without,
               "cpu": {"threads": threads, "n_mc_timed": args.n_cpu, "seconds": cpu_seconds,
                       "extrapolated_seconds_for_n_mc": cpu_seconds * args.n_mc / args.n_cpu}}
        results["timings"].append(row)
        print(f"(b) {name} M = {args.m}, n_mc = {args.n_mc}, {'+'.join(KEYS)}: GPU "
              f"{with_cc['call_seconds_best']:.3f} s (without cc "
              f"{without['call_seconds_best']:.3f} s); CPU on {threads} threads "
              f"{row['cpu']['extrapolated_seconds_for_n_mc']:.2f} s (extrapolated from "
              f"{args.n_cpu} sets)", flush=True)
    return write_results(results, args.out, started)


if __name__ == "__main__":
    main()
