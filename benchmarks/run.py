"""xuqcal performance benchmarks against reference implementations (spec: TARGETS.md).

Every comparison runs side by side in this one process, on the same machine, and the results
are written to a JSON file (default ``benchmarks/results.json``) and printed as a table::

    python benchmarks/run.py                 # full run (several minutes)
    python benchmarks/run.py --quick         # smoke run with small B and M (seconds)
    python benchmarks/run.py --only zms_bca_nig --output /tmp/results.json

Benchmarks live in a small registry: decorate a function with :func:`register` (name, goal text
from TARGETS.md, goal ratio and/or time limit); it receives a :class:`Config` and returns a
:class:`Measurement`. The runner adds ratios, ``met`` flags, and machine information.

Timing rules: xuqcal is warmed up once on a small input first (Numba JIT/cache load, excluded);
each run is timed with :func:`time.perf_counter`, the best of ``--repeat`` runs counts (default 3
for xuqcal, ``--baseline-repeat`` 1 for the slow baselines). xuqcal runs on Dask's default
threaded scheduler, as users run it. Loading the data is not timed; everything the user's call
does (graph construction, preparation, bootstrap, jackknife, interval) is.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import math
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dask
import numpy as np
import scipy
import scipy.stats
import xarray as xr
from scipy import special

import xuqcal

QM9_FILE = "BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv"
QM9_COLUMNS = {"E": "E_ - prediction", "uE": "sqrt(uncertainty_total)"}
#: Default ``batch`` of the batched scipy baselines: a near-optimal value for scipy on a 2-core
#: machine (smaller batches keep scipy's temporaries in cache; 100 was at or near its fastest
#: for M = 13 885 and 20 000 in a sweep over 25 .. 8 000) and it bounds scipy's memory to
#: about 17 bytes x batch x M.
DEFAULT_SCIPY_BATCH = 100
#: Agreement tolerance of interval bounds from TARGETS.md (B = 10 000 at these sizes).
BOUND_TOLERANCE = 0.01
#: Width of the Monte Carlo tolerance, in standard deviations of a bound difference.
MC_SIGMAS = 5.0


# ----------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Config:
    """Options shared by every benchmark."""

    quick: bool = False
    repeat: int = 3
    baseline_repeat: int = 1
    seed: int = 0
    scipy_batch: int = DEFAULT_SCIPY_BATCH


def shared_data_dir() -> Path:
    """The shared data folder: ``$XUQCAL_SHARED_DATA``, else ``<repo>/../shared/data``."""
    env = os.environ.get("XUQCAL_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def data_file(relative: str) -> Path:
    """Path of a shared data file, with a clear error when it is missing."""
    base = shared_data_dir()
    path = base / relative
    if not path.is_file():
        hint = (
            "set XUQCAL_SHARED_DATA to the folder holding the literature data sets"
            if not base.is_dir()
            else "the shared data folder lacks this file"
        )
        raise FileNotFoundError(f"benchmark data file not found: {path} ({hint})")
    return path


# ----------------------------------------------------------------------------- registry


@dataclass
class Measurement:
    """What one benchmark function measured (the runner derives ratios and verdicts)."""

    xuqcal_times: list[float]
    baseline: str
    baseline_times: list[float]
    agreement: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)
    other_baselines: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Benchmark:
    name: str
    goal: str
    goal_ratio: float | None
    goal_seconds: float | None
    needs_data: tuple[str, ...]
    func: Callable[[Config], Measurement]


REGISTRY: dict[str, Benchmark] = {}


def register(
    name: str,
    goal: str,
    *,
    goal_ratio: float | None = None,
    goal_seconds: float | None = None,
    needs_data: tuple[str, ...] = (),
):
    """Add a benchmark function to :data:`REGISTRY` (rows run in registration order)."""

    def decorate(func: Callable[[Config], Measurement]) -> Callable[[Config], Measurement]:
        if name in REGISTRY:
            raise ValueError(f"benchmark {name!r} registered twice")
        REGISTRY[name] = Benchmark(name, goal, goal_ratio, goal_seconds, needs_data, func)
        return func

    return decorate


# ----------------------------------------------------------------------------- helpers


def time_runs(func: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    """Run ``func`` ``repeat`` times; return the wall times and the last result."""
    times = []
    result = None
    for _ in range(max(1, repeat)):
        result = None
        gc.collect()
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return times, result


def warm_up() -> None:
    """Compile / load every kernel the benchmarks use, on a small input (not timed)."""
    ds = xuqcal.synthetic.nig(2000, nu=6, seed=12345)
    xuqcal.bootstrap(ds, ["zms"], n=200, method="bca", seed=1).compute()
    z2 = (ds.E.values / ds.uE.values) ** 2
    scipy_bca(z2, 200, seed=1, level=0.95, batch=None)


def xuqcal_bca(
    ds: xr.Dataset, statistics: list[str], n: int, *, seed: int, level: float
) -> xr.Dataset:
    """The user's call: lazy bootstrap, computed on Dask's default (threaded) scheduler."""
    return xuqcal.bootstrap(ds, statistics, n=n, method="bca", level=level, seed=seed).compute()


_SCIPY_RNG_KEYWORD = (
    "rng" if "rng" in inspect.signature(scipy.stats.bootstrap).parameters else "random_state"
)


def scipy_bca(z2: np.ndarray, n: int, *, seed: int, level: float, batch: int | None):
    """``scipy.stats.bootstrap`` BCa interval of the mean of ``z2`` (i.e. of ZMS)."""
    return scipy.stats.bootstrap(
        (z2,),
        np.mean,
        n_resamples=n,
        method="BCa",
        vectorized=True,
        confidence_level=level,
        batch=batch,
        **{_SCIPY_RNG_KEYWORD: np.random.default_rng(seed)},
    )


def scipy_call_text(batch: int | None) -> str:
    extra = f", batch={batch}" if batch is not None else ""
    return (
        f'scipy.stats.bootstrap((Z**2,), np.mean, method="BCa", vectorized=True{extra}, '
        f"{_SCIPY_RNG_KEYWORD}=...)"
    )


def mc_tolerance(se: float, n: int, level: float) -> float:
    """Tolerance on the difference of one interval bound between two independent bootstraps.

    The Monte Carlo standard deviation of a bootstrap quantile at probability ``alpha`` is about
    ``sqrt(alpha (1 - alpha) / B) / f(q)`` with ``f`` the (near-normal) density of the
    replicates, ``f(q) = phi(z_alpha) / se``; the difference of two independent runs has sqrt(2)
    times that. The tolerance is ``max(0.01, MC_SIGMAS * that)``: 0.01 (TARGETS.md) at B = 10 000,
    wider only for the small B of ``--quick``.
    """
    alpha = (1.0 - level) / 2.0
    density = math.exp(-0.5 * special.ndtri(alpha) ** 2) / math.sqrt(2.0 * math.pi) / se
    sd = math.sqrt(alpha * (1.0 - alpha) / n) / density
    return max(BOUND_TOLERANCE, MC_SIGMAS * math.sqrt(2.0) * sd)


def interval_agreement(
    res: xr.Dataset, statistic: str, baseline, *, n: int, level: float, baseline_estimate: float
) -> dict[str, Any]:
    """Both intervals, their bound differences, and whether they agree within MC noise."""
    row = res.sel(statistic=statistic)
    ours = [float(row.ci_low), float(row.ci_high)]
    theirs = [float(baseline.confidence_interval.low), float(baseline.confidence_interval.high)]
    tol = mc_tolerance(float(row.se), n, level)
    delta = [ours[0] - theirs[0], ours[1] - theirs[1]]
    estimate = float(row.estimate)
    estimate_ok = math.isclose(estimate, baseline_estimate, rel_tol=1e-9, abs_tol=1e-12)
    return {
        "statistic": statistic,
        "xuqcal_interval": ours,
        "baseline_interval": theirs,
        "delta": delta,
        "tolerance": tol,
        "tolerance_rule": (
            f"|delta bound| <= max({BOUND_TOLERANCE}, {MC_SIGMAS:g} * sqrt(2) * "
            "MC sd of a bootstrap quantile)"
        ),
        "xuqcal_estimate": estimate,
        "baseline_estimate": baseline_estimate,
        "xuqcal_se": float(row.se),
        "baseline_se": float(baseline.standard_error),
        "ok": bool(all(np.isfinite(delta)) and max(abs(d) for d in delta) <= tol and estimate_ok),
    }


def scipy_memory_note(batch: int | None, m: int, n: int) -> str:
    rows = m if batch is None else min(batch, m)
    jack = 17 * rows * m  # bool mask + int64 indices + float64 values per jackknife batch
    boot = 16 * (n if batch is None else min(batch, n)) * m  # int64 indices + float64 values
    return f"~{max(jack, boot) / 1e9:.2f} GB of temporaries per batch (batch={batch})"


def zms_bca_row(
    cfg: Config,
    ds: xr.Dataset,
    n: int,
    *,
    primary_batch: int | None,
    extra_batches: tuple[int | None, ...],
    data_label: str,
) -> Measurement:
    """BCa interval of ZMS: xuqcal vs scipy.stats.bootstrap on Z² (shared by rows 1 and 2)."""
    level = 0.95
    m = ds.sizes["sample"]
    z2 = np.ascontiguousarray((ds.E.values / ds.uE.values) ** 2)
    estimate = float(np.mean(z2))

    ours_times, res = time_runs(
        lambda: xuqcal_bca(ds, ["zms"], n, seed=cfg.seed, level=level), cfg.repeat
    )
    base_times, base = time_runs(
        lambda: scipy_bca(z2, n, seed=cfg.seed, level=level, batch=primary_batch),
        cfg.baseline_repeat,
    )
    agreement = interval_agreement(res, "zms", base, n=n, level=level, baseline_estimate=estimate)
    others = []
    for batch in extra_batches:
        times, other = time_runs(
            lambda batch=batch: scipy_bca(z2, n, seed=cfg.seed, level=level, batch=batch),
            cfg.baseline_repeat,
        )
        others.append(
            {
                "baseline": scipy_call_text(batch),
                "seconds": min(times),
                "times": times,
                "ratio": min(times) / min(ours_times),
                "memory": scipy_memory_note(batch, m, n),
                "agreement": interval_agreement(
                    res, "zms", other, n=n, level=level, baseline_estimate=estimate
                ),
            }
        )
    return Measurement(
        xuqcal_times=ours_times,
        baseline=scipy_call_text(primary_batch),
        baseline_times=base_times,
        agreement=agreement,
        params={
            "data": data_label,
            "M": m,
            "B": n,
            "level": level,
            "seed": cfg.seed,
            "scipy_batch": primary_batch,
            "scipy_memory": scipy_memory_note(primary_batch, m, n),
        },
        other_baselines=others,
    )


# ----------------------------------------------------------------------------- benchmarks


@register(
    "zms_bca_qm9",
    "BCa interval of ZMS, B = 10 000, M = 13 885 (QM9): >= 5x faster than "
    'scipy.stats.bootstrap(method="BCa", vectorized=True), same interval within Monte Carlo '
    "noise",
    goal_ratio=5.0,
    needs_data=(QM9_FILE,),
)
def bench_zms_bca_qm9(cfg: Config) -> Measurement:
    ds = xuqcal.read_csv(data_file(QM9_FILE), **QM9_COLUMNS)
    label = f"QM9 ({QM9_FILE})"
    n = 10_000
    if cfg.quick:
        # scipy's default (unbatched) jackknife holds M x M arrays: keep the smoke run small
        ds = ds.isel(sample=slice(0, 5000))
        label += ", first 5000 rows"
        n = 1000
    row = zms_bca_row(
        cfg, ds, n, primary_batch=None, extra_batches=(cfg.scipy_batch,), data_label=label
    )
    row.notes.append(
        "primary baseline is scipy's default call (batch=None: the M x (M-1) jackknife and the "
        "B x M resamples in one go, several GB); other_baselines holds the same call with a "
        "small batch, usually much faster for scipy"
    )
    return row


@register(
    "zms_bca_nig",
    "Same (BCa interval of ZMS, B = 10 000) at M = 100 000 (synthetic NIG, nu = 6): >= 30x "
    "faster than scipy (its jackknife is quadratic in M)",
    goal_ratio=30.0,
)
def bench_zms_bca_nig(cfg: Config) -> Measurement:
    m, n = (20_000, 1000) if cfg.quick else (100_000, 10_000)
    ds = xuqcal.synthetic.nig(m, nu=6, seed=cfg.seed)
    row = zms_bca_row(
        cfg,
        ds,
        n,
        primary_batch=cfg.scipy_batch,
        extra_batches=(),
        data_label=f"synthetic NIG, nu = 6, normal D, seed = {cfg.seed}",
    )
    row.notes.append(
        "scipy runs with batch (its unbatched jackknife would need ~17 M^2 bytes, 170 GB at "
        "M = 100 000)"
    )
    return row


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
    theirs = min(meas.baseline_times)
    ratio = theirs / ours
    speed_met = True
    if bench.goal_ratio is not None:
        speed_met &= ratio >= bench.goal_ratio
    if bench.goal_seconds is not None:
        speed_met &= ours <= bench.goal_seconds
    agreement_ok = bool(meas.agreement.get("ok", True))
    return {
        "name": bench.name,
        "goal": bench.goal,
        "xuqcal_seconds": ours,
        "xuqcal_times": meas.xuqcal_times,
        "baseline": meas.baseline,
        "baseline_seconds": theirs,
        "baseline_times": meas.baseline_times,
        "ratio": ratio,
        "goal_ratio": bench.goal_ratio,
        "goal_seconds": bench.goal_seconds,
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


def format_table(rows: list[dict[str, Any]]) -> str:
    head = f"{'row':<18} {'xuqcal s':>9} {'baseline s':>11} {'ratio':>8} {'goal':>10} {'met':>5}"
    lines = [head, "-" * len(head)]
    for r in rows:
        goal = []
        if r["goal_ratio"] is not None:
            goal.append(f">={r['goal_ratio']:g}x")
        if r["goal_seconds"] is not None:
            goal.append(f"<={r['goal_seconds']:g}s")
        lines.append(
            f"{r['name']:<18} {r['xuqcal_seconds']:>9.3f} {r['baseline_seconds']:>11.3f} "
            f"{r['ratio']:>7.1f}x {' '.join(goal):>10} {'yes' if r['met'] else 'NO':>5}"
        )
        lines.append(f"    baseline: {r['baseline']}")
        a = r["agreement"]
        if "xuqcal_interval" in a:
            lines.append(
                f"    {a['statistic']}: xuqcal [{a['xuqcal_interval'][0]:.5f}, "
                f"{a['xuqcal_interval'][1]:.5f}]  baseline [{a['baseline_interval'][0]:.5f}, "
                f"{a['baseline_interval'][1]:.5f}]  max|delta| "
                f"{max(abs(d) for d in a['delta']):.5f} <= {a['tolerance']:.4f}: "
                f"{'agree' if a['ok'] else 'DISAGREE'}"
            )
        for o in r["other_baselines"]:
            lines.append(
                f"    also: {o['baseline']}: {o['seconds']:.3f} s, ratio "
                f"{o['ratio']:.1f}x, intervals "
                f"{'agree' if o['agreement']['ok'] else 'DISAGREE'}"
            )
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
        "--quick", action="store_true", help="smoke run: small B and M (B = 1000, M <= 20 000)"
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
        "--only",
        action="append",
        choices=list(REGISTRY),
        metavar="NAME",
        help=f"run only these rows (repeatable): {', '.join(REGISTRY)}",
    )
    args = parser.parse_args(argv)
    for name in ("repeat", "baseline_repeat", "scipy_batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = Config(
        quick=args.quick,
        repeat=args.repeat,
        baseline_repeat=args.baseline_repeat,
        seed=args.seed,
        scipy_batch=args.scipy_batch,
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

    info = machine_info()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    warm_up()
    info["warm_up_seconds"] = time.perf_counter() - t0

    rows = []
    for bench in selected:
        print(f"running {bench.name} ...", file=sys.stderr, flush=True)
        rows.append(run_benchmark(bench, cfg))
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
            "timing": "best of repeats, time.perf_counter, after one excluded warm-up",
        },
        "machine": info,
        "rows": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(format_table(rows))
    print(f"results written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
