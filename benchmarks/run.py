"""xuqcal performance benchmarks against reference implementations (spec: TARGETS.md).

Every comparison runs side by side in this one process, on the same machine, and the results
are written to a JSON file (default ``benchmarks/results.json``) and printed as a table::

    python benchmarks/run.py                 # full run (several minutes)
    python benchmarks/run.py --quick         # smoke run with small B and M (seconds)
    python benchmarks/run.py --only zms_bca_nig --output /tmp/results.json
    python benchmarks/run.py --only binned_bca_qm9 --only nine_sets_validation

Each row lives in its own module, found by its name: ``benchmarks/rows/<name>.py`` (or the
family ``rows/<prefix>.py``: ``rows/zms_bca.py`` holds ``zms_bca_qm9`` and ``zms_bca_nig``). A
row decorates a function with :func:`harness.register` (name, goal text, goal ratio and/or
time limit); it receives a :class:`harness.Config` and returns a :class:`harness.Measurement`.
What rows share (configuration, registry, timing and agreement helpers, the loop baseline) is in
``benchmarks/harness.py``. This driver imports every row, runs them side by side in this one
process and adds ratios, ``met`` flags, and machine information.

Timing rules: xuqcal is warmed up once on a small input first (Numba JIT/cache load, excluded);
each run is timed with :func:`time.perf_counter`, the best of ``--repeat`` runs counts (default 3
for xuqcal, ``--baseline-repeat`` 1 for the slow baselines). xuqcal runs on Dask's default
threaded scheduler, as users run it. Loading the data is not timed; everything the user's call
does (graph construction, preparation, bootstrap, jackknife, interval) is. A baseline that would
run longer than ``--baseline-limit`` seconds (estimated from a short pilot) is timed on a
documented subset and extrapolated linearly; the row then says ``"extrapolated": true``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# the rows and their harness are modules of this folder (run as a script or loaded by path)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import dask
import numpy as np
import rows as registered_rows  # noqa: F401  (importing them registers every row)
import scipy
import xarray as xr
from harness import (
    DEFAULT_BASELINE_LIMIT,
    DEFAULT_SCIPY_BATCH,
    REGISTRY,
    Benchmark,
    Config,
    shared_data_dir,
    warm_up,
)

import xuqcal

# ----------------------------------------------------------------------------- runner


def machine_info() -> dict[str, Any]:
    cpu_model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        affinity = os.cpu_count()
    import numba

    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": affinity,
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "dask": dask.__version__,
        "xarray": xr.__version__,
        "numba": numba.__version__,
        "xuqcal": xuqcal.__version__,
        "dask_scheduler": dask.config.get("scheduler", None) or "default (threads)",
        "load_average_start": list(os.getloadavg()),
    }


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (a high-water mark, never decreases)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024.0 if sys.platform != "darwin" else peak / 1024.0**2


def run_benchmark(bench: Benchmark, cfg: Config) -> dict[str, Any]:
    load_before = list(os.getloadavg())
    started = time.perf_counter()
    meas = bench.func(cfg)
    ours = min(meas.xuqcal_times)
    theirs = min(meas.baseline_times) if meas.baseline_times else None
    ratio = theirs / ours if theirs is not None else None
    speed_met = True
    if bench.goal_ratio is not None:
        speed_met &= ratio is not None and ratio >= bench.goal_ratio
    if bench.goal_seconds is not None:
        speed_met &= ours <= bench.goal_seconds
    if bench.goal_memory_mb is not None:
        speed_met &= meas.peak_memory_mb is not None and meas.peak_memory_mb <= bench.goal_memory_mb
    # an agreement that could not be checked (ok None) does not fail the row; see its reason
    agreement_ok = meas.agreement.get("ok", True) is not False
    return {
        "name": bench.name,
        "goal": bench.goal,
        "xuqcal_seconds": ours,
        "xuqcal_times": meas.xuqcal_times,
        "baseline": meas.baseline,
        "baseline_seconds": theirs,
        "baseline_times": meas.baseline_times,
        "extrapolated": bool(meas.baseline_measured.get("extrapolated", False)),
        "baseline_measured": meas.baseline_measured,
        "ratio": ratio,
        "goal_ratio": bench.goal_ratio,
        "goal_seconds": bench.goal_seconds,
        "goal_memory_mb": bench.goal_memory_mb,
        "peak_memory_mb": meas.peak_memory_mb,
        "speed_met": bool(speed_met),
        "met": bool(speed_met and agreement_ok),
        "agreement": meas.agreement,
        "other_baselines": meas.other_baselines,
        "params": meas.params,
        "notes": meas.notes,
        "wall_seconds": time.perf_counter() - started,
        "load_average_before": load_before,
        "peak_rss_mb_so_far": peak_rss_mb(),
    }


def agreement_lines(a: dict[str, Any]) -> list[str]:
    """Table lines of one row's agreement (one statistic, several, or not checked)."""
    if a.get("checked") is False:
        return [f"    intervals not compared: {a['reason']}"]
    lines = []
    if "max_abs_deciding_zeta_difference" in a:
        lines.append(f"    deciding zetas: max |delta| {a['max_abs_deciding_zeta_difference']:.3f} "
                     f"<= {a['tolerance']}, verdicts "
                     f"{'equal' if a['verdicts_equal'] else 'DIFFER'}; every scheme: max "
                     f"|delta| {a['max_abs_zeta_difference_every_scheme']:.3f}")
    for one in a.get("statistics", [a] if "xuqcal_interval" in a else []):
        lines.append(
            f"    {one['statistic']}: xuqcal [{one['xuqcal_interval'][0]:.5f}, "
            f"{one['xuqcal_interval'][1]:.5f}]  baseline [{one['baseline_interval'][0]:.5f}, "
            f"{one['baseline_interval'][1]:.5f}]  |delta| "
            + "/".join(f"{abs(d):.5f}" for d in one["delta"])
            + " <= "
            + "/".join(f"{t:.4f}" for t in one.get("bound_tolerances", [one["tolerance"]] * 2))
            + f": {'agree' if one['ok'] else 'DISAGREE'}"
        )
    return lines


def format_table(rows: list[dict[str, Any]]) -> str:
    head = f"{'row':<22} {'xuqcal s':>9} {'baseline s':>11} {'ratio':>8} {'goal':>14} {'met':>5}"
    lines = [head, "-" * len(head)]
    for r in rows:
        goal = []
        if r["goal_ratio"] is not None:
            goal.append(f">={r['goal_ratio']:g}x")
        if r["goal_seconds"] is not None:
            goal.append(f"<={r['goal_seconds']:g}s")
        if r.get("goal_memory_mb") is not None:
            goal.append(f"<={r['goal_memory_mb']:g}MB")
        mark = "~" if r["extrapolated"] else ""
        baseline = "-" if r["baseline_seconds"] is None else f"{mark}{r['baseline_seconds']:.3f}"
        ratio = "-" if r["ratio"] is None else f"{mark}{r['ratio']:.1f}x"
        lines.append(
            f"{r['name']:<22} {r['xuqcal_seconds']:>9.3f} {baseline:>11} "
            f"{ratio:>8} {' '.join(goal):>14} {'yes' if r['met'] else 'NO':>5}"
        )
        lines.append(f"    baseline: {r['baseline']}")
        if r.get("peak_memory_mb") is not None:
            lines.append(f"    peak memory: {r['peak_memory_mb']:.0f} MB")
        for note in r["notes"]:
            if note.startswith("result:"):
                lines.append(f"    {note}")
        if r["extrapolated"]:
            b = r["baseline_measured"]
            if "replicates" in b:
                lines.append(
                    f"    ~ extrapolated from {b['replicates']} of {b['of_replicates']} "
                    f"replicates and {b['jackknife_values']} of {b['of_jackknife_values']} "
                    "leave-one-out values"
                )
            else:
                lines.append(f"    ~ extrapolated: {b['rule']}")
        lines.extend(agreement_lines(r["agreement"]))
        for o in r["other_baselines"]:
            lines.append(
                f"    also: {o['baseline']}: {o['seconds']:.3f} s, ratio "
                f"{o['ratio']:.1f}x, intervals "
                f"{'agree' if o['agreement']['ok'] else 'DISAGREE'}"
            )
        breakdown = r["params"].get("breakdown")
        if breakdown:
            parts = ", ".join(f"{k} {v:.2f} s" for k, v in breakdown["total_seconds"].items())
            lines.append(f"    breakdown (nine sets, timed separately): {parts}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=Path(__file__).resolve().parent / "results.json",
        help="JSON results file (default: benchmarks/results.json)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: small B, n_mc and M (B <= 1000, M <= 20 000)",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="xuqcal runs per row; the best counts (default 3)"
    )
    parser.add_argument(
        "--baseline-repeat",
        type=int,
        default=1,
        help="baseline runs per row; the best counts (default 1)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of data and bootstraps")
    parser.add_argument(
        "--scipy-batch",
        type=int,
        default=DEFAULT_SCIPY_BATCH,
        help=f"batch of the batched scipy baselines (default {DEFAULT_SCIPY_BATCH})",
    )
    parser.add_argument(
        "--baseline-limit",
        type=float,
        default=DEFAULT_BASELINE_LIMIT,
        metavar="SECONDS",
        help="longest loop baseline run in full; a longer one is timed on a documented subset "
        f"and extrapolated (default {DEFAULT_BASELINE_LIMIT:g})",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=list(REGISTRY),
        metavar="NAME",
        help=f"run only these rows (repeatable): {', '.join(REGISTRY)}",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="threads of Dask's threaded scheduler for every row (default: one per core); "
        "the same rows at --threads 1 and 2 show the scaling and the CPU time of each",
    )
    args = parser.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be >= 1")
    for name in ("repeat", "baseline_repeat", "scipy_batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if not args.baseline_limit >= 0:
        parser.error("--baseline-limit must be >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = Config(
        quick=args.quick,
        repeat=args.repeat,
        baseline_repeat=args.baseline_repeat,
        seed=args.seed,
        scipy_batch=args.scipy_batch,
        baseline_limit=args.baseline_limit,
    )
    selected = [REGISTRY[name] for name in (args.only or REGISTRY)]
    missing = [f for b in selected for f in b.needs_data if not (shared_data_dir() / f).is_file()]
    if missing:
        print(
            f"error: benchmark data not found under {shared_data_dir()}: "
            f"{', '.join(missing)}. Set XUQCAL_SHARED_DATA to the folder holding the "
            "literature data sets (see shared/data/README.md).",
            file=sys.stderr,
        )
        return 2

    if args.threads is not None:  # for the whole run, warm-up included
        dask.config.set(scheduler="threads", num_workers=args.threads)
    info = machine_info()
    info["dask_threads"] = args.threads or "one per core (Dask's default)"
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    warm_up()
    info["warm_up_seconds"] = time.perf_counter() - t0
    # the modules, kernels and warm-up data stay for the whole run: frozen, they are no longer
    # traversed by the full collection time_runs makes before each timed run (the --quick
    # run's summed row times before and after: benchmarks/measured/test-time-gc-2026-11-26.json)
    gc.collect()
    gc.freeze()

    measured = []
    for bench in selected:
        print(f"running {bench.name} ...", file=sys.stderr, flush=True)
        measured.append(run_benchmark(bench, cfg))
    info["load_average_end"] = list(os.getloadavg())

    results = {
        "started": started,
        "command": [Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])],
        "config": {
            "quick": cfg.quick,
            "repeat": cfg.repeat,
            "baseline_repeat": cfg.baseline_repeat,
            "seed": cfg.seed,
            "scipy_batch": cfg.scipy_batch,
            "baseline_limit": cfg.baseline_limit,
            "timing": "best of repeats, time.perf_counter, after one excluded warm-up",
        },
        "machine": info,
        "rows": measured,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(format_table(measured))
    print(f"results written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
