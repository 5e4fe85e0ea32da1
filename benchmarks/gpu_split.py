"""The GPU simulation with a replicate split between threads (:func:`xuqcal.core.gpu.split_plan`)
against one thread per replicate, side by side in one process, and the FMA check.

(a) The variates of 2 replicates of M = 2·10^6 points (``--m-variates``) of every generator
    the GPU draws, split between 256 threads, against ``kernels.fill_variates`` (how many are
    bit-identical), and the replicates that fell back to one thread.
(b) The statistics of ``--n-check`` replicates of M = 2·10^5 (zms, zm, rce, ence, zmse, ...):
    the split kernel (its sums in the CPU's order, the default, and added in a tree,
    ``order=IN_A_TREE``) against the CPU kernel and against one thread per replicate.
(c) Timings at M = 2·10^6 (``--m``), zms + ence + zmse (``--n-bins`` bins): one call of
    ``simulate_statistics_gpu`` per row (uE to the GPU, kernel, sums back, finishing) after a
    warm-up call that compiles, for the generators normal, t6 (its own ziggurat since stream
    version 4; the chi-square construction before) and t3.5 (a normal and a gamma since stream
    version 3; Bailey's polar t before), n_mc = 500 (the
    first round of ``n_mc="auto"``) and 10^4: split (the
    default plan) and one thread per replicate (``threads=32``, a segment longer than any
    replicate: the launch of the kernel before the split; at n_mc = 500 only, but for the
    normal generator, as it takes about as long for any n_mc up to a full GPU); the split's
    sums in the CPU's order (``split``) and in a tree (``split_tree``).
(d) The FMA check of ``gpu_simulation.py`` (PTX and machine code of ``a * a + b * b``).

Only NumPy, SciPy, Numba and numba-cuda are needed. Small sizes run on Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``), e.g.
``--m-variates 300 --m-check 300 --n-check 3 --m 300 --n-mc 3,5``.

    python benchmarks/gpu_split.py --out gpu_split.json
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
from gpu_simulation import cpu_simulation, fma_check

GENERATORS = (("normal", K.NORMAL, 0.0), ("t4", K.STUDENT, 4.0), ("t6", K.STUDENT, 6.0),
              ("t8", K.STUDENT, 8.0), ("t3.5", K.STUDENT, 3.5), ("uniform", K.UNIFORM, 0.0),
              ("laplace", K.LAPLACE, 0.0))
KEYS = ("mse", "zm", "zms", "rce", "nll", "ence", "zmse")
TIMED = ("zms", "ence", "zmse")
#: A segment longer than any replicate: one thread per replicate.
WHOLE = 1 << 62


def variates(m: int) -> dict:
    out = {}
    for name, code, parameter in GENERATORS:
        key = stream_key(2027, f"reference:{name}")
        info: dict = {}
        _, _, eps = gpu.simulation_sums_gpu(key, 0, 2, code, parameter, np.ones(m), 0,
                                            n_record=m, order=gpu.IN_A_TREE, info=info)
        cpu = np.empty((2, m))
        for r in range(2):
            K.fill_variates(key, r, code, parameter, cpu[r])
        out[name] = {"compared": int(cpu.size), "identical": int(np.sum(eps == cpu)),
                     "max_relative_difference": relative(eps, cpu), **info}
        print(f"(a) {name}: {out[name]}", flush=True)
    return out


def statistics(m: int, n: int, n_bins: int, threads: int) -> dict:
    E, uE = nig_data(m, 3)
    prepared = PreparedData.from_arrays(E, uE, n_bins=n_bins)
    codes = np.array([STATISTICS[k].code for k in KEYS])
    out = {}
    for name, code, parameter in GENERATORS:
        key = stream_key(2028, f"reference:{name}")
        split = gpu.simulate_statistics_gpu(key, 0, n, codes, code, parameter, prepared)
        tree = gpu.simulate_statistics_gpu(key, 0, n, codes, code, parameter, prepared,
                                           order=gpu.IN_A_TREE)
        whole = gpu.simulate_statistics_gpu(key, 0, n, codes, code, parameter, prepared,
                                            threads=32, segment=WHOLE)
        cpu = cpu_simulation(prepared, codes, code, parameter, key, 0, n, threads)
        out[name] = {
            "plan": list(gpu.split_plan(code, parameter, m)),
            "split_vs_cpu": {k: relative(split[:, i], cpu[:, i]) for i, k in enumerate(KEYS)},
            "split_identical_to_cpu": bool(np.array_equal(split, cpu, equal_nan=True)),
            "split_tree_vs_cpu": {k: relative(tree[:, i], cpu[:, i])
                                  for i, k in enumerate(KEYS)},
            "one_thread_vs_cpu": {k: relative(whole[:, i], cpu[:, i])
                                  for i, k in enumerate(KEYS)},
            "split_vs_one_thread": {k: relative(split[:, i], whole[:, i])
                                    for i, k in enumerate(KEYS)}}
        print(f"(b) {name}: split vs cpu max "
              f"{max(out[name]['split_vs_cpu'].values()):.2e} {out[name]['split_vs_cpu']}",
              flush=True)
    return out


def timings(m: int, counts: list[int], n_bins: int, budget: float, started: float) -> list:
    E, uE = nig_data(m, 2)
    prepared = PreparedData.from_arrays(E, uE, n_bins=n_bins)
    codes = np.array([STATISTICS[k].code for k in TIMED])
    rows = []
    for name, code, parameter in (g for g in GENERATORS if g[0] in ("normal", "t6", "t3.5")):
        key = stream_key(7, f"reference:{name}")
        for n in counts:
            for label, options in (("split", {}), ("split_tree", {"order": gpu.IN_A_TREE}),
                                   ("one_thread", {"threads": 32, "segment": WHOLE})):
                if label == "one_thread" and n != counts[0] and name != "normal":
                    continue  # one thread per replicate: about as long for any n_mc
                if time.perf_counter() - started > budget:
                    rows.append({"generator": name, "n_mc": n, "kernel": label,
                                 "skipped": "time budget"})
                    continue
                gpu.simulate_statistics_gpu(key, 0, 4, codes, code, parameter, prepared,
                                            **options)  # warm (compiled once per process)
                info = gpu.split_plan(code, parameter, m, threads=options.get("threads"),
                                      segment=options.get("segment"))
                t = time.perf_counter()
                gpu.simulate_statistics_gpu(key, 0, n, codes, code, parameter, prepared,
                                            **options)
                seconds = time.perf_counter() - t
                row = {"generator": name, "n_mc": n, "kernel": label, "M": m,
                       "seconds": seconds, "ns_per_variate": seconds / (n * m) * 1e9,
                       "plan_group_draws_block": list(info)}
                rows.append(row)
                print(f"(c) {row}", flush=True)
    return rows


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--m-variates", type=int, default=2_000_000)
    parser.add_argument("--m-check", type=int, default=200_000)
    parser.add_argument("--n-check", type=int, default=100)
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--n-mc", default="500,10000")
    parser.add_argument("--n-bins", type=int, default=10)
    parser.add_argument("--budget", type=float, default=200.0,
                        help="seconds from the start: the timings not begun by then are skipped")
    args = parser.parse_args(argv)
    results, threads, started = start_run()
    try:
        results["fma"] = fma_check()
    except Exception as error:  # the other parts are still measured
        results["fma"] = {"error": f"{type(error).__name__}: {error}"[:2000]}
    print(f"(d) FMA: {results['fma']}", flush=True)
    results["variates"] = variates(args.m_variates)
    results["statistics"] = statistics(args.m_check, args.n_check, args.n_bins, threads)
    results["timings"] = timings(args.m, [int(v) for v in args.n_mc.split(",")], args.n_bins,
                                 args.budget, started)
    return write_results(results, args.out, started)


if __name__ == "__main__":
    main()
