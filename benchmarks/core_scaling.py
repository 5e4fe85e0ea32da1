"""Issue 26's scaling rows side by side in one process: threads, processes and the GPU.

(a) The nine-set one-call validation with fixed counts (the shared sets stacked along
    ``dataset``; zms, cc, ence, zmse; n_boot 5000; n_mc 10 000; normal and t6; 20 bins), on
    Dask's threaded scheduler with each of ``--threads`` (alternating, ``--repeat`` rounds), and
    with ``--cluster W,T`` on a ``dask.distributed.LocalCluster`` of W worker processes of T
    threads. Every result is checked identical to the first (``created`` aside).
(b) The default ``xuqcal.validate(ds)`` (``n_boot="auto"``, ``n_mc="auto"``, the eight default
    statistics) of ``--m`` synthetic NIG points (ν = 6, seed 0), at the largest thread count;
    with ``--cuda`` again under ``set_options(device="cuda")`` (the moment bootstrap and the
    simulations without cc on the GPU), its values compared with the CPU's; then the same pair
    without cc (every simulation and bootstrap then on the GPU); then at the smallest thread
    count when the time left (``--budget``) allows.

Each row records the wall time and the process's CPU time (every thread; a cluster's workers
are other processes, not counted). The JSON is written after every row, so a run stopped at
its limit keeps what it measured. Runs are skipped, and say so, when the estimate of their time
exceeds what is left of ``--budget`` seconds.

    python benchmarks/core_scaling.py --out scaling.json --threads 2,16 --cuda --cluster 8,2

Data are read from ``../shared/data`` or ``$XUQCAL_SHARED_DATA`` (as ``run.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

SUMMARY_VARIABLES = ("estimate", "ci_low", "ci_high", "zeta")
WITHOUT_CC = ("zms", "rce", "zm", "zv", "nll", "ence", "zmse")


def timed(func: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall seconds, process CPU seconds (user + system, every thread) and the result."""
    import gc

    gc.collect()
    cpu_start, start = os.times(), time.perf_counter()
    result = func()
    seconds, cpu_end = time.perf_counter() - start, os.times()
    return seconds, (cpu_end.user - cpu_start.user) + (cpu_end.system - cpu_start.system), result


def relative_differences(a, b) -> dict[str, float]:
    """The largest relative difference of each summary variable (``gpu_common.relative``),
    and whether both have NaN at the same places."""
    from gpu_common import relative  # after xuqcal: its core is not re-made

    found = {}
    for name in SUMMARY_VARIABLES:
        if name in a and name in b:
            x, y = np.asarray(a[name].values, float), np.asarray(b[name].values, float)
            found[name] = relative(x, y)
            found[f"{name}_same_nan"] = bool((np.isnan(x) == np.isnan(y)).all())
    return found


class Record:
    """The JSON results, written whole after every row (temporary file + rename)."""

    def __init__(self, path: str, budget: float, header: dict[str, Any]) -> None:
        self.path, self.started, self.budget = path, time.perf_counter(), budget
        self.data: dict[str, Any] = {**header, "rows": [], "skipped": []}

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.started)

    def add(self, row: dict[str, Any]) -> None:
        self.data["rows"].append(row)
        print(json.dumps(row), flush=True)
        self.write()

    def skip(self, what: str, estimate: float) -> None:
        self.data["skipped"].append({"run": what, "estimated_seconds": estimate,
                                     "seconds_left": self.left()})
        print(f"skipped {what}: estimated {estimate:.0f} s, {self.left():.0f} s left",
              flush=True)
        self.write()

    def write(self) -> None:
        self.data["elapsed_seconds"] = time.perf_counter() - self.started
        temporary = f"{self.path}.tmp"
        with open(temporary, "w") as handle:
            json.dump(self.data, handle, indent=2)
        os.replace(temporary, self.path)


def nine_sets(record: Record, threads: list[int], repeat: int, cluster: tuple[int, int] | None,
              n_boot: int, n_mc: int) -> None:
    import dask
    import xarray as xr
    from harness import FOUR_STATISTICS, nine_set_options, stacked_shared_sets

    import xuqcal
    from xuqcal.testing import assert_results_identical

    _, stacked = stacked_shared_sets()
    options = nine_set_options(n_boot, n_mc)
    reference = None

    def one_call() -> xr.Dataset:
        return xuqcal.validate(stacked, list(FOUR_STATISTICS), **options)

    def check(result: xr.Dataset) -> bool:
        nonlocal reference
        if reference is None:
            reference = result
            return True
        assert_results_identical(result, reference)
        return True

    for round_ in range(repeat):
        for count in threads:
            with dask.config.set(scheduler="threads", num_workers=count):
                seconds, cpu, result = timed(one_call)
            record.add({"work": "nine_sets_one_call", "threads": count, "round": round_,
                        "seconds": seconds, "cpu_seconds": cpu, "n_boot": n_boot, "n_mc": n_mc,
                        "identical_to_first": check(result)})
    if cluster is not None:
        from dask.distributed import Client, LocalCluster

        workers, per_worker = cluster
        start = time.perf_counter()
        with LocalCluster(n_workers=workers, threads_per_worker=per_worker, processes=True,
                          dashboard_address=None) as local, Client(local):
            started = time.perf_counter() - start
            seconds, _, result = timed(one_call)  # the workers load the Numba cache
            record.add({"work": "nine_sets_one_call", "cluster": f"{workers}x{per_worker}",
                        "round": "first (workers load their kernels)", "seconds": seconds,
                        "cluster_start_seconds": started, "identical_to_first": check(result)})
            for round_ in range(repeat):
                seconds, _, result = timed(one_call)
                record.add({"work": "nine_sets_one_call", "cluster": f"{workers}x{per_worker}",
                            "round": round_, "seconds": seconds,
                            "identical_to_first": check(result),
                            "cpu_note": "the workers' CPU time is not counted"})


def default_validate(record: Record, m: int, threads: list[int], cuda: bool,
                     which: tuple[str, ...] = ("default", "without_cc")) -> None:
    import dask

    import xuqcal

    ds = xuqcal.synthetic.nig(m, nu=6, seed=0).compute()
    most, fewest = max(threads), min(threads)
    results: dict[tuple[str, str, int], Any] = {}

    def run(label: str, statistics, count: int, device: str) -> float | None:
        with dask.config.set(scheduler="threads", num_workers=count), \
                xuqcal.set_options(device=device):
            seconds, cpu, result = timed(lambda: xuqcal.validate(ds, statistics))
        results[(label, device, count)] = result
        row = {"work": f"validate_{label}", "M": m, "threads": count, "device": device,
               "seconds": seconds, "cpu_seconds": cpu, "n_boot": int(result.attrs["n_boot"]),
               "n_mc": int(result.attrs["n_mc"]),
               "verdicts": [str(v) for v in result.verdict.values],
               "attrs_device": result.attrs.get("device"),
               "attrs_simulation_device": result.attrs.get("simulation_device")}
        if device == "cuda":
            cpu_result = results[(label, "cpu", count)]
            row["relative_difference_to_cpu"] = relative_differences(result, cpu_result)
            row["verdicts_equal_to_cpu"] = bool(
                (result.verdict.values == cpu_result.verdict.values).all())
            row["counts_equal_to_cpu"] = (
                int(result.attrs["n_boot"]) == int(cpu_result.attrs["n_boot"])
                and int(result.attrs["n_mc"]) == int(cpu_result.attrs["n_mc"]))
        record.add(row)
        return seconds

    labels = [("default", None)] if "default" in which else []
    if cuda and "without_cc" in which:
        labels.append(("without_cc", list(WITHOUT_CC)))
    first = None
    for label, statistics in labels:
        if first is not None and record.left() < 1.5 * first:
            record.skip(f"validate_{label} cpu {most} threads", first)
            continue
        seconds = run(label, statistics, most, "cpu")
        first = first or seconds
        if cuda:
            run(label, statistics, most, "cuda")
    if fewest != most and "default" in which:
        estimate = first * most / fewest
        if record.left() < 1.1 * estimate:
            record.skip(f"validate_default cpu {fewest} threads", estimate)
        else:
            run("default", None, fewest, "cpu")
            a, b = results[("default", "cpu", fewest)], results[("default", "cpu", most)]
            record.data["validate_default_threads_identical"] = bool(
                all(np.array_equal(a[v].values, b[v].values, equal_nan=True)
                    for v in SUMMARY_VARIABLES if v in a))
            record.write()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--threads", default=f"2,{os.cpu_count()}",
                        help="thread counts of Dask's threaded scheduler, e.g. 2,16")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cluster", default=None, help="W,T: a LocalCluster of W processes "
                        "of T threads for the nine-set call")
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--cuda", action="store_true", help="also run validate on the GPU")
    parser.add_argument("--budget", type=float, default=420.0,
                        help="seconds: runs estimated to exceed what is left are skipped")
    parser.add_argument("--work", default="nine_sets,validate")
    parser.add_argument("--validate", default="default,without_cc",
                        help="the validate rows: default (every statistic) and, with --cuda, "
                        "without_cc (the statistics the GPU simulates)")
    parser.add_argument("--small", action="store_true",
                        help="smoke run (e.g. on the CUDA simulator): n_boot = n_mc = 300 for "
                        "the nine sets, a warm-up of 200 points")
    args = parser.parse_args()
    threads = sorted({int(t) for t in args.threads.split(",")}, reverse=True)
    cluster = tuple(int(v) for v in args.cluster.split(",")) if args.cluster else None

    import dask
    import numba

    import xuqcal

    header = {"issue": 26, "cpu_count": os.cpu_count(), "platform": platform.platform(),
              "python": platform.python_version(), "numpy": np.__version__,
              "numba": numba.__version__, "dask": dask.__version__,
              "xuqcal": getattr(xuqcal, "__version__", None), "threads": threads,
              "cluster": args.cluster, "M": args.m}
    if args.cuda:
        from gpu_common import device_info, versions  # after xuqcal: its core is not re-made

        header["gpu"] = device_info()
        header["versions"] = versions()
    record = Record(args.out, args.budget, header)

    start = time.perf_counter()  # compile or load every kernel (not timed)
    from harness import warm_up

    warm_up()
    size, count = (200, 40) if args.small else (3000, 200)
    small = xuqcal.synthetic.nig(size, nu=6, seed=1).compute()
    xuqcal.validate(small, n_boot=count, n_mc=count)
    if args.cuda:
        try:
            with xuqcal.set_options(device="cuda"):
                xuqcal.validate(small, n_boot=count, n_mc=count)
                xuqcal.validate(small, list(WITHOUT_CC), n_boot=count, n_mc=count)
        except Exception as error:  # the CPU rows are still measured
            record.data["cuda_error"] = f"{type(error).__name__}: {error}"[:2000]
            print(f"the GPU runs are left out: {record.data['cuda_error']}", flush=True)
            args.cuda = False
    record.data["warm_up_seconds"] = time.perf_counter() - start
    record.write()
    work = args.work.split(",")
    if "nine_sets" in work:
        counts = (300, 300) if args.small else (5000, 10_000)
        nine_sets(record, threads, args.repeat, cluster, *counts)
    if "validate" in work:
        default_validate(record, args.m, threads, args.cuda, tuple(args.validate.split(",")))
    print(f"written {args.out} after {record.data['elapsed_seconds']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
