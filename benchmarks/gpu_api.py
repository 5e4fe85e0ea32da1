"""The iid bootstrap through the API with ``set_options(device="cuda")`` against the CPU.

``xuqcal.bootstrap(ds, ["zms"], n_boot=B)`` of M synthetic points (NIG, ν = 6), side by side
in one process: on the CPU (Dask's threaded scheduler on every core) and on the GPU (the same
streams, :mod:`xuqcal.core.gpu`). Both are timed after a warm-up call on a small set (the
kernels compiled), and the bounds and standard errors compared. The CPU runs a smaller B
(``--b-cpu``), its time extrapolated per replicate to B (said in the output).

Run on a machine with an NVIDIA GPU and numba-cuda::

    python benchmarks/gpu_api.py --out gpu_api.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--b", type=int, default=10_000)
    parser.add_argument("--b-cpu", type=int, default=1_000)
    args = parser.parse_args()

    import dask
    import numpy as np

    import xuqcal

    ds = xuqcal.synthetic.nig(args.m, nu=6, seed=0).compute()
    small = xuqcal.synthetic.nig(2000, nu=6, seed=0).compute()
    stats = ["zms", "rce"]
    results: dict = {"M": args.m, "B": args.b, "statistics": stats,
                     "cpu_count": os.cpu_count(), "platform": platform.platform()}
    with dask.config.set(scheduler="threads", num_workers=os.cpu_count()):
        xuqcal.bootstrap(small, stats, n_boot=200).compute()  # compile
        start = time.perf_counter()
        cpu = xuqcal.bootstrap(ds, stats, n_boot=args.b_cpu, seed=1).compute()
        cpu_seconds = time.perf_counter() - start
        with xuqcal.set_options(device="cuda"):
            from numba import cuda

            results["device"] = cuda.get_current_device().name
            results["device"] = (results["device"].decode()
                                 if isinstance(results["device"], bytes)
                                 else str(results["device"]))
            xuqcal.bootstrap(small, stats, n_boot=200).compute()  # compile
            start = time.perf_counter()
            gpu_small = xuqcal.bootstrap(ds, stats, n_boot=args.b_cpu, seed=1).compute()
            gpu_small_seconds = time.perf_counter() - start
            start = time.perf_counter()
            gpu = xuqcal.bootstrap(ds, stats, n_boot=args.b, seed=1).compute()
            gpu_seconds = time.perf_counter() - start
    for name in ("ci_low", "ci_high", "se"):
        a, b = gpu_small[name].values, cpu[name].values
        results[f"max_relative_difference_{name}_B{args.b_cpu}"] = float(
            np.max(np.abs(a - b) / np.abs(b)))
    results.update({
        "cpu_seconds_B_cpu": cpu_seconds, "B_cpu": args.b_cpu,
        "cpu_seconds_extrapolated_to_B": cpu_seconds * args.b / args.b_cpu,
        "gpu_seconds_B_cpu": gpu_small_seconds, "gpu_seconds_B": gpu_seconds,
        "gpu_attrs_device": gpu.attrs.get("device"),
        "gpu_zms_interval_B": [float(gpu.ci_low.values[0]), float(gpu.ci_high.values[0])],
        "note": ("the whole call xuqcal.bootstrap(...).compute(): preparing the data, the "
                 "Dask tasks, the replicates and the BCa summaries (jackknife on the CPU); "
                 "the CPU time of B replicates is extrapolated from B_cpu"),
    })
    print(json.dumps(results, indent=2))
    with open(args.out, "w") as handle:
        json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
