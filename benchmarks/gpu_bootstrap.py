"""GPU bootstrap of zms (:mod:`xuqcal.core.gpu`): agreement with the CPU kernels, and timings.

(a) Agreement at M = 2·10^5, B = 1000: the largest relative difference between the GPU's and
    the CPU's replicates of every moment statistic (sums in the CPU's order: identical; and
    added in a tree, ``order=IN_A_TREE``), and between the BCa bounds of zms computed from
    either set of replicates (same estimate, same jackknife).
(b) Timing at M = 2·10^6, B = 10^4 (zms): the GPU bootstrap after a warm-up call that compiles
    the kernel (whole call: columns to the GPU, kernel, sums back, finishing; and the kernel
    alone, with its sums in the CPU's order and in a tree), in seconds and ns per draw. The
    CPU path (``kernels.bootstrap_block``, the kernel of ``xuqcal.bootstrap``) runs on
    ``os.cpu_count()`` threads (a thread pool over chunks of replicates, as Dask's threaded
    scheduler does) for a subset of the replicates only (``--b-cpu``, 500 by default), and its
    time is extrapolated to B per draw. The GPU's
    replicates of that subset are compared with the CPU's too (agreement at the size of (b)).
(c) The results go to a JSON file (``--out``).
(d) zms, cc, ence and zmse (20 bins) at M = 2·10^6 (``--m-four``): ``bootstrap_statistics_gpu``
    (counts, the CPU's bin walk, the block's ranks) for ``--b-four`` replicates against the CPU
    kernel on ``--b-four-cpu``: identical replicates, and ns per draw on each side.

Only NumPy, SciPy, Numba and numba-cuda are needed: the script imports the core modules of
xuqcal without the package's ``__init__`` (which imports Dask, numbagg, ...). Small sizes run
on Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), e.g.
``--m-check 300 --b-check 4 --m 300 --b 4 --b-cpu 4``.

    python benchmarks/gpu_bootstrap.py --out gpu_bootstrap.json
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
    bca_interval,
    gpu,
    nig_data,
    on_threads,
    relative,
    start_run,
    stream_key,
    write_results,
)

MOMENTS = ("mse", "rmse", "mv", "rmv", "zm", "zms", "zv", "rce", "nll")


def cpu_replicates(prepared, codes: np.ndarray, key, start: int, stop: int,
                   threads: int) -> np.ndarray:
    """What ``resampling._replicate_block`` computes, in chunks on ``threads`` threads
    (``bootstrap_block`` releases the GIL)."""
    n = stop - start
    out = np.empty((n, codes.shape[0]))

    def block(a, b):
        K.bootstrap_block(key, start + a, start + b, codes, prepared.n_bins,
                          *prepared.kernel_arrays(), prepared.tie_bin,
                          K.make_work(prepared.size, prepared.n_bins), out[a:b])

    on_threads(block, n, threads)
    return prepared.unscale(codes, out)


def zms_bca(prepared, replicates: np.ndarray, level: float = 0.95) -> np.ndarray:
    code = np.array([STATISTICS["zms"].code])
    estimate = prepared.evaluate(code)
    jackknife = np.empty((prepared.size, 1))
    p = prepared
    totals = K.moment_totals(p.e2, p.u2, p.z, p.z2, p.lnu2, p.z_shift)
    K.jackknife_moments(code, p.e2, p.u2, p.z, p.z2, p.lnu2, p.z_shift, totals, 0, p.size,
                        jackknife)
    low, high = bca_interval(replicates[np.newaxis, :], estimate,
                             np.ascontiguousarray(jackknife.T), level)
    return np.array([float(low[0]), float(high[0])])


def check_agreement(m: int, b: int, threads: int) -> dict:
    E, uE = nig_data(m, 1)
    prepared = PreparedData.from_arrays(E, uE, needs_bins=False)
    codes = np.array([STATISTICS[k].code for k in MOMENTS])
    key = stream_key(2026, "bootstrap")
    t = time.perf_counter()
    on_gpu = gpu.bootstrap_moments_gpu(key, 0, b, codes, prepared)
    gpu_seconds = time.perf_counter() - t
    t = time.perf_counter()
    on_cpu = cpu_replicates(prepared, codes, key, 0, b, threads)
    cpu_seconds = time.perf_counter() - t
    per_statistic = {k: relative(on_gpu[:, i], on_cpu[:, i]) for i, k in enumerate(MOMENTS)}
    tree = gpu.bootstrap_moments_gpu(key, 0, b, codes, prepared, order=gpu.IN_A_TREE)
    tree_per_statistic = {k: relative(tree[:, i], on_cpu[:, i]) for i, k in enumerate(MOMENTS)}
    z = MOMENTS.index("zms")
    bca_gpu = zms_bca(prepared, on_gpu[:, z])
    bca_cpu = zms_bca(prepared, on_cpu[:, z])
    return {
        "M": m, "B": b, "statistics": list(MOMENTS),
        "max_relative_difference": per_statistic,
        "zms_max_relative_difference": per_statistic["zms"],
        "zms_bca_gpu": bca_gpu.tolist(), "zms_bca_cpu": bca_cpu.tolist(),
        "zms_bca_max_relative_difference": relative(bca_gpu, bca_cpu),
        "within_1e-12": {k: v <= 1e-12 for k, v in per_statistic.items()},
        "identical_to_cpu": bool(np.array_equal(on_gpu, on_cpu)),
        "sums_order": "the CPU's (gpu.cpu_order: draw order below 2**18 points, counted above)",
        "tree_max_relative_difference": tree_per_statistic,
        "note": "order=IN_A_TREE adds the sums in another order (compensated per thread, then "
                "a tree): a difference is the CPU's own rounding, amplified by cancellation in "
                "rce (RMV - RMSE) and zm (z_shift + mean of Z - z_shift)",
        "gpu_seconds_first_call_with_compile": gpu_seconds,
        "cpu_seconds": cpu_seconds,
    }


def time_gpu(prepared, key, b: int, repeat: int) -> dict:
    from numba import cuda

    code = np.array([STATISTICS["zms"].code])
    m = prepared.size
    t = time.perf_counter()
    gpu.bootstrap_moments_gpu(key, 0, min(b, 64), code, prepared)  # compile, warm up
    warm_up = time.perf_counter() - t
    calls = []
    values = None
    for _ in range(repeat):
        t = time.perf_counter()
        values = gpu.bootstrap_moments_gpu(key, 0, b, code, prepared)
        calls.append(time.perf_counter() - t)
    # the kernel alone: columns already on the GPU, sums left there
    used = K._moment_columns(code)
    d_columns = cuda.to_device(np.ascontiguousarray(prepared.packed[:, used]))
    d_sums = cuda.device_array((b, used.shape[0]))
    d_draws = cuda.to_device(np.zeros((1, 1), dtype=np.int64))
    kernel_times = []
    for _ in range(repeat):
        cuda.synchronize()
        t = time.perf_counter()
        gpu.run_kernel(key, 0, b, m, d_columns, d_sums, d_draws, 0)
        cuda.synchronize()
        kernel_times.append(time.perf_counter() - t)
    # the kernel alone with the sums in a tree (the order before the CPU's), one launch
    tree_times = []
    for _ in range(repeat):
        cuda.synchronize()
        t = time.perf_counter()
        gpu.run_kernel(key, 0, b, m, d_columns, d_sums, d_draws, 0, order=gpu.IN_A_TREE)
        cuda.synchronize()
        tree_times.append(time.perf_counter() - t)
    # the kernel alone at other block sizes (one launch each, after a warm-up launch)
    by_threads = {}
    for threads in (64, 128, 512):
        gpu.run_kernel(key, 0, min(b, 64), m, d_columns, d_sums, d_draws, 0, threads)
        cuda.synchronize()
        t = time.perf_counter()
        gpu.run_kernel(key, 0, b, m, d_columns, d_sums, d_draws, 0, threads)
        cuda.synchronize()
        by_threads[threads] = time.perf_counter() - t
    draws = float(b) * m
    return {
        "kernel_seconds_by_threads_per_block": {**by_threads, gpu.THREADS: min(kernel_times)},
        "M": m, "B": b, "threads_per_block": gpu.THREADS, "repeat": repeat,
        "warm_up_seconds_with_compile": warm_up,
        "call_seconds": calls, "call_seconds_best": min(calls),
        "call_ns_per_draw": min(calls) / draws * 1e9,
        "kernel_seconds": kernel_times, "kernel_seconds_best": min(kernel_times),
        "kernel_ns_per_draw": min(kernel_times) / draws * 1e9,
        "kernel_order": "the CPU's (gpu.cpu_order)",
        "kernel_seconds_tree": tree_times, "kernel_seconds_tree_best": min(tree_times),
        "zms_replicates_mean": float(values[:, 0].mean()),
    }, values[:, 0]


def time_cpu(prepared, key, b_cpu: int, b: int, threads: int) -> dict:
    code = np.array([STATISTICS["zms"].code])
    cpu_replicates(prepared, code, key, 0, min(b_cpu, threads), threads)  # compile, warm up
    t = time.perf_counter()
    values = cpu_replicates(prepared, code, key, 0, b_cpu, threads)
    seconds = time.perf_counter() - t
    ns_per_draw = seconds / (float(b_cpu) * prepared.size) * 1e9
    return {
        "M": prepared.size, "B_timed": b_cpu, "threads": threads,
        "method": "kernels.bootstrap_block on a thread pool of os.cpu_count() threads, chunks "
                  "of ceil(B / threads) replicates (as Dask's threaded scheduler)",
        "seconds": seconds, "ns_per_draw": ns_per_draw,
        "extrapolated_seconds_for_B": ns_per_draw * 1e-9 * float(b) * prepared.size,
        "extrapolated": f"B = {b_cpu} timed, extrapolated per draw to B = {b}",
    }, values[:, 0]


def four_statistics(m: int, b: int, b_cpu: int, threads: int) -> dict:
    """(d) zms, cc, ence and zmse (20 bins; NIG data: no ties of uE) on the GPU
    (``bootstrap_statistics_gpu``: counts, bins, ranks) against the CPU kernel: identical
    replicates, and times (the CPU on ``b_cpu`` replicates, extrapolated per draw)."""
    E, uE = nig_data(m, 3)
    prepared = PreparedData.from_arrays(E, uE, n_bins=20)
    codes = np.array([STATISTICS[k].code for k in ("zms", "cc", "ence", "zmse")])
    key = stream_key(11, "bootstrap")
    t = time.perf_counter()
    gpu.bootstrap_statistics_gpu(key, 0, 4, codes, prepared)  # compile, warm up
    warm_up = time.perf_counter() - t
    t = time.perf_counter()
    on_gpu = gpu.bootstrap_statistics_gpu(key, 0, b, codes, prepared)
    gpu_seconds = time.perf_counter() - t
    cpu_replicates(prepared, codes, key, 0, min(b_cpu, threads), threads)  # warm up
    t = time.perf_counter()
    on_cpu = cpu_replicates(prepared, codes, key, 0, b_cpu, threads)
    cpu_seconds = time.perf_counter() - t
    draws_gpu, draws_cpu = float(b) * m, float(b_cpu) * m
    return {
        "M": m, "B": b, "B_cpu": b_cpu, "statistics": ["zms", "cc", "ence", "zmse"],
        "n_bins": 20, "ties_of_uE": bool(prepared.tie_bin.any()),
        "identical_to_cpu": bool(np.array_equal(on_gpu[:b_cpu], on_cpu, equal_nan=True)),
        "max_relative_difference": relative(on_gpu[:b_cpu], on_cpu),
        "gpu_warm_up_seconds_with_compile": warm_up, "gpu_seconds": gpu_seconds,
        "gpu_ns_per_draw": gpu_seconds / draws_gpu * 1e9,
        "cpu_threads": threads, "cpu_seconds": cpu_seconds,
        "cpu_ns_per_draw": cpu_seconds / draws_cpu * 1e9,
        "speedup_gpu_vs_cpu": (cpu_seconds / draws_cpu) / (gpu_seconds / draws_gpu),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--m-check", type=int, default=200_000)
    parser.add_argument("--b-check", type=int, default=1000)
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--b", type=int, default=10_000)
    parser.add_argument("--b-cpu", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--m-four", type=int, default=2_000_000,
                        help="(d): points of the bootstrap of zms, cc, ence and zmse")
    parser.add_argument("--b-four", type=int, default=500, help="(d): GPU replicates")
    parser.add_argument("--b-four-cpu", type=int, default=16, help="(d): CPU replicates")
    args = parser.parse_args(argv)
    results, threads, started = start_run()

    results["agreement"] = agreement = check_agreement(args.m_check, args.b_check, threads)
    print(f"(a) M = {args.m_check}, B = {args.b_check}: max relative difference of the "
          f"replicates {agreement['max_relative_difference']}; BCa bounds of zms GPU "
          f"{agreement['zms_bca_gpu']} CPU {agreement['zms_bca_cpu']} (max relative "
          f"difference {agreement['zms_bca_max_relative_difference']:.2e})", flush=True)

    E, uE = nig_data(args.m, 2)
    prepared = PreparedData.from_arrays(E, uE, needs_bins=False)
    key = stream_key(7, "bootstrap")
    results["gpu"], on_gpu = time_gpu(prepared, key, args.b, args.repeat)
    g = results["gpu"]
    print(f"(b) GPU zms M = {args.m}, B = {args.b}: {g['call_seconds_best']:.3f} s per call "
          f"({g['call_ns_per_draw']:.3f} ns/draw), kernel alone {g['kernel_seconds_best']:.3f} s "
          f"({g['kernel_ns_per_draw']:.3f} ns/draw); warm-up with compile "
          f"{g['warm_up_seconds_with_compile']:.2f} s; kernel by threads per block "
          f"{ {k: round(v, 4) for k, v in g['kernel_seconds_by_threads_per_block'].items()} }",
          flush=True)
    results["cpu"], on_cpu = time_cpu(prepared, key, args.b_cpu, args.b, threads)
    c = results["cpu"]
    results["agreement_large"] = {
        "M": args.m, "B": args.b_cpu,
        "zms_max_relative_difference": relative(on_gpu[:args.b_cpu], on_cpu)}
    results["speedup_gpu_call_vs_cpu"] = c["ns_per_draw"] / g["call_ns_per_draw"]
    print(f"    CPU on {threads} threads: B = {args.b_cpu} in {c['seconds']:.2f} s "
          f"({c['ns_per_draw']:.3f} ns/draw; extrapolated to B = {args.b}: "
          f"{c['extrapolated_seconds_for_B']:.1f} s); GPU/CPU speed-up "
          f"{results['speedup_gpu_call_vs_cpu']:.1f}x; zms GPU vs CPU on those replicates: "
          f"{results['agreement_large']['zms_max_relative_difference']:.2e}", flush=True)
    results["four_statistics"] = four = four_statistics(args.m_four, args.b_four,
                                                        args.b_four_cpu, threads)
    print(f"(d) zms, cc, ence, zmse M = {args.m_four}: GPU B = {args.b_four} in "
          f"{four['gpu_seconds']:.2f} s ({four['gpu_ns_per_draw']:.3f} ns/draw), CPU B = "
          f"{args.b_four_cpu} in {four['cpu_seconds']:.2f} s ({four['cpu_ns_per_draw']:.3f} "
          f"ns/draw on {threads} threads); identical {four['identical_to_cpu']}", flush=True)
    return write_results(results, args.out, started)


if __name__ == "__main__":
    main()
