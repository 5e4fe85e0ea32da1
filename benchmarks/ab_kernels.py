"""A/B of the Numba kernels of two revisions in one process, interleaved, per simulated point.

:mod:`xuqcal.core.kernels` imports nothing of xuqcal but its data module
:mod:`xuqcal.core.ziggurat_tables` (imported from the package as usual), so the file of the
``--before`` revision (``git show REV:xuqcal/core/kernels.py``) is loaded beside the current one
under another module name. Both are copies in a temporary folder: Numba's cache
(``cache=True``) is kept beside the source file and records the module's name, so loading the
repository's own file under another name would leave entries that a later ``import xuqcal``
cannot load. Each workload calls
``simulate_block`` (or ``bootstrap_block``) of both versions alternately,
``--rounds`` times, after an untimed call (Numba compile or cache load), on the same arrays:
QM9-like uncertainties (log-normal, rounded to 3 decimals: ties) at ``--points`` points, normal
or Student-t(6) synthetic errors (the bootstrap: errors ``uE * N(0, 1)`` rounded to 4 decimals,
or not with ``--continuous-errors``),
20 bins. ``draws_only`` times ``fill_draws`` (the stream and Lemire's bounded integers written
to an array), the floor of a bootstrap walk. The JSON holds every time in ns per simulated (or
drawn) point, the best of each side, their ratio, and whether the two versions' outputs are
identical bit for bit (across a change of stream version,
:data:`xuqcal.core.random.STREAM_VERSION`, the simulated rows of the changed generators differ
by design; from ``_COUNTED_SUMS_FROM`` points the bootstrap's moment replicates are counted sums
since issue 26, and differ in their last bits from the draw-order sums before).

``--threads N`` splits each call's replicates (``--replicates``, default about 4·10⁶ points
in all) into N equal ranges run on N threads at once, as Dask's threaded scheduler runs the
tasks of a chunking: the simulation and bootstrap times are then wall time × N per point, the
cost per point per core with every core busy (the cores share the caches and the memory).
``--only`` runs some workloads.

Usage::

    python benchmarks/ab_kernels.py --before 6390fb0 --output benchmarks/measured/ab-kernels.json
    python benchmarks/ab_kernels.py --before HEAD --points 2000000 --replicates 64 --threads 2 \
        --only bootstrap_zms bootstrap_moments5
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

#: workload -> (statistics, generator code, generator parameter)
WORKLOADS = {
    "normal_zms": (("ZMS",), 0, 0.0),
    "normal_zms_ence_zmse": (("ZMS", "ENCE", "ZMSE"), 0, 0.0),
    "normal_zms_cc_ence_zmse": (("ZMS", "CC", "ENCE", "ZMSE"), 0, 0.0),
    "t6_zms_cc_ence_zmse": (("ZMS", "CC", "ENCE", "ZMSE"), 1, 6.0),
    # tfit's nu on the NIG(6) data of the default validate at 2e6 (a Student-t of other nu)
    "t8263_zms_cc_ence_zmse": (("ZMS", "CC", "ENCE", "ZMSE"), 1, 8263.0),
    "variates_normal": ((), 0, 0.0),
    "variates_t6": ((), 1, 6.0),
    "variates_t3.5": ((), 1, 3.5),
    "variates_t8263": ((), 1, 8263.0),
    "variates_laplace": ((), 3, 0.0),
    "draws_only": ((), None, None),
    "bootstrap_zms": (("ZMS",), None, None),
    "bootstrap_moments5": (("ZMS", "RCE", "ZM", "ZV", "NLL"), None, None),
    "bootstrap_cc": (("CC",), None, None),
    "bootstrap_zms_cc_ence_zmse": (("ZMS", "CC", "ENCE", "ZMSE"), None, None),
}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


#: How kernels.py imports its ziggurat tables: each side's import is pointed at its own copy.
_TABLES_IMPORT = "from xuqcal.core import ziggurat_tables as _ziggurat"


def _git_show(revision: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{revision}:{path}"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


def _inputs(m: int):
    rng = np.random.default_rng(0)
    uE = np.round(np.sort(np.exp(rng.normal(size=m))), 3) + 1e-3
    u2 = uE * uE
    tie = np.zeros(m, np.bool_)
    tie[1:] = uE[1:] == uE[:-1]
    return uE, u2, np.log(u2), np.arange(m), tie


def _run(kernels, codes, generator, parameter, replicates, arrays, threads, decimals):
    uE, u2, lnu2, order_u, tie_u = arrays
    m = uE.shape[0]
    if generator is None and codes.shape[0] == 0:  # the draws alone
        out = np.empty(m, np.int32)
        start = time.perf_counter()
        for r in range(replicates):
            kernels.fill_draws(np.uint64(7), r, out)
        return (time.perf_counter() - start) / (replicates * m) * 1e9, out
    if generator is None:
        return _run_bootstrap(kernels, codes, replicates, arrays, threads, decimals)
    if codes.shape[0] == 0:  # the variates alone (fill_variates), as many as the other rows
        out = np.empty(replicates * m)
        start = time.perf_counter()
        kernels.fill_variates(np.uint64(7), 0, generator, parameter, out)
        return (time.perf_counter() - start) / (replicates * m) * 1e9, out
    out = np.empty((replicates, 1, codes.shape[0]))

    def part(lo, hi):
        kernels.simulate_block(np.uint64(7), generator, parameter, lo, hi, codes,
                               np.array([20]), uE, u2, lnu2, order_u, tie_u,
                               kernels.make_work(m, 20), out[lo:hi])
    return _threaded(part, replicates, m, threads), out


def _threaded(part, replicates: int, m: int, threads: int) -> float:
    """Run ``part(lo, hi)`` over the replicates split into ``threads`` equal ranges, one per
    thread (as Dask's threaded scheduler runs the tasks of one chunking); returns the wall
    time in ns per point per thread (wall time × threads / (replicates × M))."""
    bounds = [(k * replicates // threads, (k + 1) * replicates // threads)
              for k in range(threads)]
    start = time.perf_counter()
    if threads == 1:
        part(*bounds[0])
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda b: part(*b), bounds))
    return (time.perf_counter() - start) * threads / (replicates * m) * 1e9


def _run_bootstrap(kernels, codes, replicates, arrays, threads, decimals):
    uE, u2, lnu2, order_u, tie_u = arrays
    m = uE.shape[0]
    errors = uE * np.random.default_rng(1).normal(size=m)
    if decimals is not None:
        errors = np.round(errors, decimals)
    z = errors / uE
    e2 = errors * errors
    z2 = z * z
    packed = kernels.pack_moments(e2, u2, z, z2, lnu2, 0.0)
    order_e = np.argsort(np.abs(errors), kind="stable")
    tie_e = np.zeros(m, np.bool_)
    tie_e[1:] = np.abs(errors)[order_e][1:] == np.abs(errors)[order_e][:-1]
    out = np.empty((replicates, codes.shape[0]))

    def part(lo, hi):
        # the Python entry point where a revision has one (moment statistics alone at large M
        # go to their own kernel), else the kernel
        entry = getattr(kernels, "bootstrap_replicates", kernels.bootstrap_block)
        entry(np.uint64(7), lo, hi, codes, 20, packed, e2, u2, z2, 0.0, order_u, tie_u,
              order_e, tie_e, tie_u, kernels.make_work(m, 20), out[lo:hi])
    return _threaded(part, replicates, m, threads), out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision of the 'before' side")
    parser.add_argument("--points", type=int, default=13_885, help="points per simulated set")
    parser.add_argument("--rounds", type=int, default=7, help="alternations per workload")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "ab-kernels.json")
    parser.add_argument("--replicates", type=int, default=None,
                        help="replicates per call (default: about 4e6 points, at least 4)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads sharing the replicates of a call, for the simulation "
                             "and bootstrap workloads (times are then per point per thread)")
    parser.add_argument("--only", nargs="+", choices=sorted(WORKLOADS), default=None,
                        help="run these workloads only")
    parser.add_argument("--continuous-errors", action="store_true",
                        help="the bootstrap's errors not rounded to 4 decimals: no ties in |E| "
                             "(as in QM9's errors; rounded, about a third of the sorted |E| "
                             "at QM9's size are tied with the one before)")
    args = parser.parse_args(argv)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                          capture_output=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as folder:
        sys.path.insert(0, folder)  # each side's own ziggurat tables (they may differ)
        sides_files = {}
        for side, read in (("before", lambda path: _git_show(args.before, path)),
                           ("after", lambda path: (REPO / path).read_text())):
            tables = f"ziggurat_tables_{side}"
            (Path(folder) / f"{tables}.py").write_text(read("xuqcal/core/ziggurat_tables.py"))
            kernels = read("xuqcal/core/kernels.py")
            if _TABLES_IMPORT not in kernels:
                raise SystemExit(f"{side}: kernels.py no longer imports its tables as "
                                 f"{_TABLES_IMPORT!r}")
            path = Path(folder) / f"kernels_{side}.py"
            path.write_text(kernels.replace(_TABLES_IMPORT, f"import {tables} as _ziggurat"))
            sides_files[side] = path
        before = _load(sides_files["before"], "kernels_before")
        after = _load(sides_files["after"], "kernels_after")
        arrays = _inputs(args.points)
        replicates = args.replicates or max(4, int(4e6 // args.points))
        results = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "before": args.before,
                   "after": f"{head} (working tree)", "points": args.points,
                   "replicates_per_call": replicates, "rounds": args.rounds,
                   "threads": args.threads,
                   "bootstrap_errors": ("uE * N(0, 1), not rounded" if args.continuous_errors
                                        else "uE * N(0, 1) rounded to 4 decimals"),
                   "cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
                   "unit": "ns per simulated (or drawn) point per thread: wall time x threads / "
                           "(replicates x points)", "workloads": {}}
        sides = {"before": before, "after": after}
        decimals = None if args.continuous_errors else 4  # of the bootstrap's errors
        for name, (statistics, generator, parameter) in WORKLOADS.items():
            if args.only and name not in args.only:
                continue
            # each version's own codes of the statistics (they may be renumbered)
            codes = {side: np.array([getattr(kernels, s) for s in statistics],
                                    np.int64).reshape(-1) for side, kernels in sides.items()}
            times = {"before": [], "after": []}
            outputs = {}
            for side, kernels in sides.items():  # compile or cache load
                _run(kernels, codes[side], generator, parameter, 2, arrays, 1, decimals)
            for _ in range(args.rounds):
                for side, kernels in sides.items():
                    seconds, outputs[side] = _run(kernels, codes[side], generator, parameter,
                                                  replicates, arrays, args.threads, decimals)
                    times[side].append(seconds)
            best = {side: min(t) for side, t in times.items()}
            identical = bool(np.array_equal(outputs["before"], outputs["after"], equal_nan=True))
            results["workloads"][name] = {"ns_per_point": times, "best": best,
                                          "ratio_after_over_before_best":
                                              best["after"] / best["before"],
                                          "identical": identical}
            print(f"{name:<26} before {best['before']:6.2f}  after {best['after']:6.2f} "
                  f"ns/point (best of {args.rounds}; ratio {best['after'] / best['before']:.3f}; "
                  f"identical {identical})", flush=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
