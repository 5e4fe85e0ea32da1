"""GPU simulation of the references (:mod:`xuqcal.core.gpu`): agreement with the CPU kernel,
and timings.

(a) Agreement at M = 2·10^5, n_mc = 100 for every generator the GPU draws (normal, t6 of its
    own ziggurat (stream version 4; a normal and three exponentials before), t8 of the
    chi-square construction, t3.5 of a normal and a gamma (stream version 3), uniform,
    Laplace): the largest relative
    difference between the GPU's and the CPU's replicates of every moment and binned
    statistic, and of the first ``--m-variates`` variates of ``--n-variates`` replicates
    against ``kernels.fill_variates`` (how many are bit-identical: a GPU ``log``/``sqrt``/
    ``pow`` may round a variate differently in the last bit; a variate of another pair would
    show as a difference of order 1).
(b) Timing at M = 2·10^6, n_mc = 10^4, normal generator: zms alone, and zms + ence + zmse
    (``--n-bins`` bins): the GPU call after a warm-up call that compiles the kernel (uE to the
    GPU, kernel, sums back, finishing), for several threads per block. The CPU path
    (``kernels.simulate_block``, the kernel of ``xuqcal.simulate``) runs on ``os.cpu_count()``
    threads (a thread pool over chunks of replicates, as Dask's threaded scheduler does) for a
    subset of the replicates only (``--n-cpu``, 200 by default), and its time is extrapolated
    to n_mc per variate. The GPU's replicates of that subset are compared with the CPU's.
(c) Whether ``gpu._NoContraction`` stops the FMA contraction with the installed numba-cuda:
    the PTX and the machine code of ``a * a + b * b`` compiled with and without it
    (``fma.rn.f64``, ``DFMA`` or not).
(d) The results go to a JSON file (``--out``).

The simulation kernel splits a replicate of many points between threads
(:func:`xuqcal.core.gpu.split_plan`); ``gpu_split.py`` compares it with one thread per
replicate.

Only NumPy, SciPy, Numba and numba-cuda are needed: the script imports the core modules of
xuqcal without the package's ``__init__``. Small sizes run on Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``), e.g.
``--m-check 300 --n-check 4 --m 300 --n-mc 8 --n-cpu 4 --m-variates 20``.

    python benchmarks/gpu_simulation.py --out gpu_simulation.json
"""

from __future__ import annotations

import argparse
import contextlib
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
    on_threads,
    relative,
    start_run,
    stream_key,
    write_results,
)

#: The statistics compared in (a): every one the GPU simulates.
KEYS = ("mse", "rmse", "mv", "rmv", "zm", "zms", "zv", "rce", "nll", "ence", "uce", "zmse")
#: (name, code, parameter) of the generators compared in (a).
GENERATORS = (("normal", K.NORMAL, 0.0), ("t6", K.STUDENT, 6.0), ("t8", K.STUDENT, 8.0),
              ("t3.5", K.STUDENT, 3.5),
              ("uniform", K.UNIFORM, 0.0), ("laplace", K.LAPLACE, 0.0))


def cpu_simulation(prepared, codes: np.ndarray, code: int, parameter: float, key, start: int,
                   stop: int, threads: int) -> np.ndarray:
    """What ``simulation._simulation_block`` computes, in chunks on ``threads`` threads
    (``simulate_block`` releases the GIL)."""
    n = stop - start
    out = np.empty((n, 1, codes.shape[0]))

    def block(a, b):
        K.simulate_block(key, code, parameter, start + a, start + b, codes,
                         np.array([prepared.n_bins], dtype=np.int64), prepared.u, prepared.u2,
                         prepared.lnu2, prepared.order_u, prepared.tie_u,
                         K.make_work(prepared.size, prepared.n_bins), out[a:b])

    on_threads(block, n, threads)
    return prepared.unscale(codes, out[:, 0, :])


def check_agreement(m: int, n: int, n_bins: int, n_variates: int, m_variates: int,
                    threads: int) -> dict:
    E, uE = nig_data(m, 1)
    prepared = PreparedData.from_arrays(E, uE, n_bins=n_bins)
    codes = np.array([STATISTICS[k].code for k in KEYS])
    results = {"M": m, "n_mc": n, "n_bins": n_bins, "statistics": list(KEYS), "generators": {}}
    for name, code, parameter in GENERATORS:
        key = stream_key(2026, f"reference:{name}")
        t = time.perf_counter()
        on_gpu = gpu.simulate_statistics_gpu(key, 0, n, codes, code, parameter, prepared)
        gpu_seconds = time.perf_counter() - t
        t = time.perf_counter()
        on_cpu = cpu_simulation(prepared, codes, code, parameter, key, 0, n, threads)
        cpu_seconds = time.perf_counter() - t
        per_statistic = {k: relative(on_gpu[:, i], on_cpu[:, i]) for i, k in enumerate(KEYS)}
        mv = min(m_variates, m)
        eps_gpu = gpu.variates_gpu(key, 0, n_variates, code, parameter, mv)
        eps_cpu = np.empty((n_variates, mv))
        for r in range(n_variates):
            K.fill_variates(key, r, code, parameter, eps_cpu[r])
        results["generators"][name] = {
            "max_relative_difference": per_statistic,
            "within_1e-12": all(v <= 1e-12 for v in per_statistic.values()),
            "variates_compared": int(eps_cpu.size),
            "variates_identical": int(np.sum(eps_gpu == eps_cpu)),
            "variates_max_relative_difference": relative(eps_gpu, eps_cpu),
            "gpu_seconds_first_call_with_compile": gpu_seconds,
            "cpu_seconds": cpu_seconds,
        }
    results["note"] = ("the same variates and the same sums in the same order: a difference "
                       "comes from a GPU log/sqrt/pow rounding a variate differently in the "
                       "last bit (NVVM compiled with -fma=0, as the CPU never fuses)")
    return results


def time_gpu(prepared, codes: np.ndarray, key, n: int, repeat: int) -> tuple[dict, np.ndarray]:
    t = time.perf_counter()
    gpu.simulate_statistics_gpu(key, 0, min(n, 64), codes, K.NORMAL, 0.0, prepared)  # compile
    warm_up = time.perf_counter() - t
    calls = []
    values = None
    for _ in range(repeat):
        t = time.perf_counter()
        values = gpu.simulate_statistics_gpu(key, 0, n, codes, K.NORMAL, 0.0, prepared)
        calls.append(time.perf_counter() - t)
    by_threads = {}
    for threads in (64, 128, 256):
        t = time.perf_counter()
        gpu.simulate_statistics_gpu(key, 0, n, codes, K.NORMAL, 0.0, prepared, threads=threads)
        by_threads[threads] = time.perf_counter() - t
    variates = float(n) * prepared.size
    return {
        "M": prepared.size, "n_mc": n, "codes": codes.tolist(),
        "threads_per_block": gpu.SIMULATION_THREADS, "repeat": repeat,
        "warm_up_seconds_with_compile": warm_up,
        "call_seconds": calls, "call_seconds_best": min(calls),
        "call_ns_per_variate": min(calls) / variates * 1e9,
        "call_seconds_by_threads_per_block": {**by_threads,
                                              gpu.SIMULATION_THREADS: min(calls)},
    }, values


def time_cpu(prepared, codes: np.ndarray, key, n_cpu: int, n: int,
             threads: int) -> tuple[dict, np.ndarray]:
    cpu_simulation(prepared, codes, K.NORMAL, 0.0, key, 0, min(n_cpu, threads), threads)
    t = time.perf_counter()
    values = cpu_simulation(prepared, codes, K.NORMAL, 0.0, key, 0, n_cpu, threads)
    seconds = time.perf_counter() - t
    ns = seconds / (float(n_cpu) * prepared.size) * 1e9
    return {
        "M": prepared.size, "n_mc_timed": n_cpu, "threads": threads,
        "method": "kernels.simulate_block on a thread pool of os.cpu_count() threads, chunks "
                  "of ceil(n / threads) replicates (as Dask's threaded scheduler)",
        "seconds": seconds, "ns_per_variate": ns,
        "extrapolated_seconds_for_n_mc": ns * 1e-9 * float(n) * prepared.size,
        "extrapolated": f"n_mc = {n_cpu} timed, extrapolated per variate to n_mc = {n}",
    }, values


def fma_check() -> dict:
    """The PTX and the machine code of ``out[0] = a[0] * a[0] + a[1] * a[1]`` compiled by
    numba-cuda's default (``cuda.jit``, with LTO where nvJitLink is present) and as the
    simulation kernel (``gpu._jit_exact``, inside ``gpu._NoContraction``); a fresh dispatcher
    each, compiled on its first launch."""
    from numba import config, cuda

    if getattr(config, "ENABLE_CUDASIM", False):
        return {"simulator": True}

    def square_sum(a, out):
        out[0] = a[0] * a[0] + a[1] * a[1]

    a = np.array([0.1, 0.7])
    found = {"cpu_value": float(a[0] * a[0] + a[1] * a[1])}
    for name, context, jit in (("default", contextlib.nullcontext(), cuda.jit),
                               ("no_contraction", gpu._NoContraction(), gpu._jit_exact)):
        kernel = jit(square_sum)  # numba-cuda's default; as the simulation kernel
        out = np.zeros(1)
        with context:  # the PTX and the machine code read while the switch is on
            kernel[1, 1](a, out)
            ptx = "\n".join(kernel.inspect_asm().values())
            try:
                sass = "\n".join(kernel.inspect_sass().values())
            except Exception as error:  # nvdisasm missing
                sass = f"unavailable: {error}"
        found[name] = {"fma_in_ptx": "fma.rn.f64" in ptx, "dfma_in_sass": "DFMA" in sass,
                       "value": float(out[0]), "explicit_rn_in_ptx": "add.rn.f64" in ptx,
                       "lto": bool(getattr(kernel, "targetoptions", {}).get("lto", False))}
        if name == "no_contraction":
            found[name]["nvvm_modules_wrapped"] = [m.__name__ for m in gpu._nvvm_modules()]
    return found


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--m-check", type=int, default=200_000)
    parser.add_argument("--n-check", type=int, default=100)
    parser.add_argument("--n-variates", type=int, default=4)
    parser.add_argument("--m-variates", type=int, default=200_000)
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--n-mc", type=int, default=10_000)
    parser.add_argument("--n-cpu", type=int, default=200)
    parser.add_argument("--n-bins", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--fma-only", action="store_true", help="only (c), the FMA check")
    args = parser.parse_args(argv)
    results, threads, started = start_run()

    results["fma"] = fma_check()
    print(f"(c) FMA contraction: {results['fma']}", flush=True)
    if args.fma_only:
        return write_results(results, args.out, started)
    results["agreement"] = agreement = check_agreement(
        args.m_check, args.n_check, args.n_bins, args.n_variates, args.m_variates, threads)
    for name, found in agreement["generators"].items():
        print(f"(a) {name}: M = {args.m_check}, n_mc = {args.n_check}: max relative difference "
              f"{max(found['max_relative_difference'].values()):.2e} "
              f"({found['max_relative_difference']}); variates identical "
              f"{found['variates_identical']} of {found['variates_compared']} (max relative "
              f"difference {found['variates_max_relative_difference']:.2e})", flush=True)

    E, uE = nig_data(args.m, 2)
    prepared = PreparedData.from_arrays(E, uE, n_bins=args.n_bins)
    key = stream_key(7, "reference:normal")
    results["timings"] = []
    for keys in (("zms",), ("zms", "ence", "zmse")):
        codes = np.array([STATISTICS[k].code for k in keys])
        g, on_gpu = time_gpu(prepared, codes, key, args.n_mc, args.repeat)
        c, on_cpu = time_cpu(prepared, codes, key, args.n_cpu, args.n_mc, threads)
        row = {"statistics": list(keys), "gpu": g, "cpu": c,
               "speedup_gpu_call_vs_cpu": c["ns_per_variate"] / g["call_ns_per_variate"],
               "agreement_large": {
                   "M": args.m, "n_mc": args.n_cpu,
                   "max_relative_difference": {k: relative(on_gpu[:args.n_cpu, i], on_cpu[:, i])
                                               for i, k in enumerate(keys)}}}
        results["timings"].append(row)
        print(f"(b) {'+'.join(keys)} M = {args.m}, n_mc = {args.n_mc}: GPU "
              f"{g['call_seconds_best']:.3f} s per call ({g['call_ns_per_variate']:.3f} "
              f"ns/variate; warm-up with compile {g['warm_up_seconds_with_compile']:.2f} s; by "
              f"threads per block "
              f"{ {k: round(v, 3) for k, v in g['call_seconds_by_threads_per_block'].items()} }"
              f"); CPU on {threads} threads: n_mc = {args.n_cpu} in {c['seconds']:.2f} s "
              f"({c['ns_per_variate']:.3f} ns/variate, extrapolated "
              f"{c['extrapolated_seconds_for_n_mc']:.1f} s); speed-up "
              f"{row['speedup_gpu_call_vs_cpu']:.1f}x; GPU vs CPU on those replicates "
              f"{row['agreement_large']['max_relative_difference']}", flush=True)
    return write_results(results, args.out, started)


if __name__ == "__main__":
    main()
