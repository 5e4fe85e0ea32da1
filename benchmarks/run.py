"""xuqcal performance benchmarks against reference implementations (spec: TARGETS.md).

Every comparison runs side by side in this one process, on the same machine, and the results
are written to a JSON file (default ``benchmarks/results.json``) and printed as a table::

    python benchmarks/run.py                 # full run (several minutes)
    python benchmarks/run.py --quick         # smoke run with small B and M (seconds)
    python benchmarks/run.py --only zms_bca_nig --output /tmp/results.json
    python benchmarks/run.py --only binned_bca_qm9 --only nine_sets_validation

Benchmarks live in a small registry: decorate a function with :func:`register` (name, goal text
from TARGETS.md, goal ratio and/or time limit); it receives a :class:`Config` and returns a
:class:`Measurement`. The runner adds ratios, ``met`` flags, and machine information.

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
import contextlib
import gc
import inspect
import io
import json
import math
import os
import platform
import resource
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pandas as pd
import scipy
import scipy.stats
import xarray as xr
from scipy import special

import xuqcal
from xuqcal.testing import assert_slice_identical

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

PAL_FILTER = "uE > 1e-6 * std(E)"
#: The nine shared data sets of ../shared/data/README.md as ``set: (file, E, uE, where)``; the
#: same table as ``DATASETS`` in tests/conftest.py (copied as data: benchmarks/ cannot import
#: the test package).
SHARED_SETS: dict[int, tuple[str, str, str, str | None]] = {
    1: ("PAL2022/Diffusion_RF_Test_cal.csv", "E", "uE", PAL_FILTER),
    2: ("PAL2022/Perovskite_RF_Test_cal.csv", "E", "uE", PAL_FILTER),
    3: ("PAL2022/Diffusion_LR_Test_cal.csv", "E", "uE", PAL_FILTER),
    4: ("PAL2022/Perovskite_LR_Test_cal.csv", "E", "uE", PAL_FILTER),
    5: ("PAL2022/Diffusion_GPR_Bayesian_Test_cal.csv", "E", "uE", PAL_FILTER),
    6: ("PAL2022/Perovskite_GPR_Bayesian_Test_cal.csv", "E", "uE", PAL_FILTER),
    7: (QM9_FILE, QM9_COLUMNS["E"], QM9_COLUMNS["uE"], None),
    8: ("RAS2023/logP_10k_a_LS-GCN_test.csv", "logP - y_pred", "uq", None),
    9: ("RAS2023/logP_150k_LS-GCN_test.csv", "logP - y_pred", "uq", None),
}
#: The statistics of the binned-statistics rows, and their number of equal-count bins.
FOUR_STATISTICS = ("zms", "cc", "ence", "zmse")
N_BINS = 20
#: Generators of the simulated references (SimN, SimT).
GENERATORS = ("normal", "t6")
#: Default ``--baseline-limit``: longest baseline run in full, in seconds.
DEFAULT_BASELINE_LIMIT = 120.0
#: Replicates and leave-one-out values of the pilot that estimates a loop baseline's run time.
PILOT_SIZE = 20
#: Documented subset timed instead of the whole loop baseline when that would exceed the limit.
SUBSET_REPLICATES = 500
SUBSET_JACKKNIFE = 1000


# ----------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Config:
    """Options shared by every benchmark."""

    quick: bool = False
    repeat: int = 3
    baseline_repeat: int = 1
    seed: int = 0
    scipy_batch: int = DEFAULT_SCIPY_BATCH
    baseline_limit: float = DEFAULT_BASELINE_LIMIT


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
    #: How the baseline was measured (counts, time per unit; ``extrapolated``), if it matters.
    baseline_measured: dict[str, Any] = field(default_factory=dict)
    #: Peak resident memory of the measured work (MB), for rows with a memory goal.
    peak_memory_mb: float | None = None


@dataclass(frozen=True)
class Benchmark:
    name: str
    goal: str
    goal_ratio: float | None
    goal_seconds: float | None
    needs_data: tuple[str, ...]
    func: Callable[[Config], Measurement]
    goal_memory_mb: float | None = None


REGISTRY: dict[str, Benchmark] = {}


def register(
    name: str,
    goal: str,
    *,
    goal_ratio: float | None = None,
    goal_seconds: float | None = None,
    goal_memory_mb: float | None = None,
    needs_data: tuple[str, ...] = (),
):
    """Add a benchmark function to :data:`REGISTRY` (rows run in registration order)."""

    def decorate(func: Callable[[Config], Measurement]) -> Callable[[Config], Measurement]:
        if name in REGISTRY:
            raise ValueError(f"benchmark {name!r} registered twice")
        REGISTRY[name] = Benchmark(name, goal, goal_ratio, goal_seconds, needs_data, func,
                                   goal_memory_mb)
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
    xuqcal.bootstrap(ds, ["zms"], n_boot=200, method="bca", seed=1).compute()
    z2 = (ds.E.values / ds.uE.values) ** 2
    scipy_bca(z2, 200, seed=1, level=0.95, batch=None)
    small = ds.isel(sample=slice(0, 400))
    xuqcal.validate(
        small,
        list(FOUR_STATISTICS),
        n_boot=50,
        n_mc=50,
        seed=1,
        n_bins=N_BINS,
        generators=GENERATORS,
    )
    loop_bca(small.E.values, small.uE.values, 50, seed=1, level=0.95, n_bins=N_BINS)


def xuqcal_bca(
    ds: xr.Dataset, statistics: list[str], n: int, *, seed: int, level: float
) -> xr.Dataset:
    """The user's call: lazy bootstrap, computed on Dask's default (threaded) scheduler."""
    return xuqcal.bootstrap(ds, statistics, n_boot=n, method="bca", level=level,
                            seed=seed).compute()


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
    return bounds_agreement(
        statistic,
        (float(row.ci_low), float(row.ci_high)),
        (float(baseline.confidence_interval.low), float(baseline.confidence_interval.high)),
        xuqcal_se=float(row.se),
        baseline_se=float(baseline.standard_error),
        xuqcal_estimate=float(row.estimate),
        baseline_estimate=baseline_estimate,
        n=n,
        level=level,
    )


def bounds_agreement(
    statistic: str,
    ours: tuple[float, float],
    theirs: tuple[float, float],
    *,
    xuqcal_se: float,
    baseline_se: float,
    xuqcal_estimate: float,
    baseline_estimate: float,
    n: int,
    level: float,
    bound_tolerances: list[float] | None = None,
    tolerance_rule: str | None = None,
) -> dict[str, Any]:
    """Agreement of two intervals of one statistic and of the point estimates (to rounding).

    The tolerance is :func:`mc_tolerance` for both bounds unless ``bound_tolerances`` gives one
    per bound (with its ``tolerance_rule``).
    """
    if bound_tolerances is None:
        bound_tolerances = [mc_tolerance(xuqcal_se, n, level)] * 2
        tolerance_rule = (
            f"|delta bound| <= max({BOUND_TOLERANCE}, {MC_SIGMAS:g} * sqrt(2) * "
            "MC sd of a bootstrap quantile)"
        )
    tol = max(bound_tolerances)
    delta = [ours[0] - theirs[0], ours[1] - theirs[1]]
    within = all(abs(d) <= t for d, t in zip(delta, bound_tolerances, strict=True))
    estimate_ok = math.isclose(xuqcal_estimate, baseline_estimate, rel_tol=1e-9, abs_tol=1e-12)
    return {
        "statistic": statistic,
        "xuqcal_interval": list(ours),
        "baseline_interval": list(theirs),
        "delta": delta,
        "tolerance": tol,
        "bound_tolerances": list(bound_tolerances),
        "tolerance_rule": tolerance_rule,
        "xuqcal_estimate": xuqcal_estimate,
        "baseline_estimate": baseline_estimate,
        "xuqcal_se": xuqcal_se,
        "baseline_se": baseline_se,
        "ok": bool(all(np.isfinite(delta)) and within and estimate_ok),
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


# ----------------------------------------------------------------------------- loop baseline


def loop_statistics(e: np.ndarray, u: np.ndarray, n_bins: int) -> tuple[float, ...]:
    """zms, cc, ence, zmse of one sample, from scratch with NumPy/SciPy (the loop baseline).

    Bins: stable sort by ``u``, bin ``b`` = sorted positions ``[floor(b m / N),
    floor((b + 1) m / N))``, bin sums with ``np.add.reduceat``; cc with ``scipy.stats.spearmanr``.
    """
    z2 = (e / u) ** 2
    zms = z2.mean()
    cc = scipy.stats.spearmanr(np.abs(e), u).statistic
    m = e.shape[0]
    order = np.argsort(u, kind="stable")
    starts = (np.arange(n_bins) * m) // n_bins
    sizes = np.diff(starts, append=m)
    mse = np.add.reduceat(e[order] ** 2, starts) / sizes
    mv = np.add.reduceat(u[order] ** 2, starts) / sizes
    mz2 = np.add.reduceat(z2[order], starts) / sizes
    rmv = np.sqrt(mv)
    ence = np.mean(np.abs(rmv - np.sqrt(mse)) / rmv)
    zmse = np.mean(np.abs(np.log(mz2)))
    return zms, cc, ence, zmse


def loop_bca_bounds(
    replicates: np.ndarray, estimate: float, jack: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """BCa bounds of one statistic (METHODS): z0 with ties counted one half, acceleration from
    the leave-one-out values, NumPy's linear quantiles. Returns the bounds and their adjusted
    probabilities."""
    z0 = special.ndtri(np.mean(replicates < estimate) + 0.5 * np.mean(replicates == estimate))
    d = jack.mean() - jack
    a = np.sum(d**3) / (6.0 * np.sum(d**2) ** 1.5)
    z = special.ndtri(np.array([(1.0 - level) / 2.0, (1.0 + level) / 2.0]))
    with np.errstate(invalid="ignore", divide="ignore"):
        alphas = special.ndtr(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
    if not np.isfinite(alphas).all():  # e.g. every replicate on one side of the estimate
        return np.full(2, np.nan), alphas
    return np.quantile(replicates, alphas), alphas


def quantile_mc_sd(replicates: np.ndarray, probability: float) -> float:
    """Monte Carlo standard deviation of the linear quantile of ``B`` replicates at
    ``probability``, estimated from the replicates themselves (order-statistic rule: half the
    spread of the quantiles at ``p ± sqrt(p (1 - p) / B)``; no density or normality assumed).

    ``p`` is clipped to ``[1/B, 1 - 1/B]``: a BCa probability beyond the replicates' range puts
    the bound at the extreme replicates, and it then gets the spread of the extreme order
    statistics.
    """
    b = replicates.shape[0]
    p = min(max(float(probability), 1.0 / b), 1.0 - 1.0 / b)
    s = math.sqrt(p * (1.0 - p) / b)
    lo, hi = np.quantile(replicates, [max(0.0, p - s), min(1.0, p + s)])
    return float(hi - lo) / 2.0


def bca_bound_tolerances(ours: np.ndarray, theirs: np.ndarray, alphas: np.ndarray) -> list[float]:
    """Tolerance on each BCa bound difference of two independent bootstraps:
    ``max(0.01, MC_SIGMAS * sqrt(sd_1² + sd_2²))`` with each run's :func:`quantile_mc_sd` at
    the bound's BCa-adjusted probability (strongly biased statistics such as zmse can push it
    far below 2.5 %, where the normal rule of :func:`mc_tolerance` underestimates the noise)."""
    return [
        max(
            BOUND_TOLERANCE,
            MC_SIGMAS * math.hypot(quantile_mc_sd(ours, p), quantile_mc_sd(theirs, p)),
        )
        for p in alphas
    ]


@dataclass
class LoopResult:
    """What :func:`loop_bca` computed and how long its parts took."""

    estimate: np.ndarray
    ci_low: np.ndarray | None  # None when only a subset of the work was done
    ci_high: np.ndarray | None
    se: np.ndarray | None
    alphas: np.ndarray | None  # BCa-adjusted probabilities of the bounds, (statistic, 2)
    values: np.ndarray  # the replicates, (replicate, statistic)
    replicates: int
    jackknife_values: int
    replicate_seconds: float
    jackknife_seconds: float
    other_seconds: float


def loop_bca(
    E: np.ndarray,
    U: np.ndarray,
    n: int,
    *,
    seed: int,
    level: float,
    n_bins: int,
    n_replicates: int | None = None,
    n_jackknife: int | None = None,
) -> LoopResult:
    """The straightforward per-replicate loop a user would write for BCa intervals of
    zms, cc, ence and zmse: ``n`` resamples drawn one by one with ``rng.integers(0, M, M)``, the
    four statistics recomputed from scratch for each, then the jackknife over the ``M``
    leave-one-out samples (``np.delete``, recomputed from scratch: re-sorted and re-binned), then
    the BCa formula. Replicates are never batched together.

    ``n_replicates`` / ``n_jackknife`` stop the two loops early (a timed subset, no interval).
    A resample is used in draw order: the stable sort by uE keeps tied points in the order
    they were drawn (as R's ``order()`` on ``x[idx]``, and as xuqcal re-sorts resamples).
    """
    t0 = time.perf_counter()
    m = E.shape[0]
    n_rep = n if n_replicates is None else min(n, n_replicates)
    n_jack = m if n_jackknife is None else min(m, n_jackknife)
    estimate = np.array(loop_statistics(E, U, n_bins))
    rng = np.random.default_rng(seed)
    replicates = np.empty((n_rep, estimate.size))
    t1 = time.perf_counter()
    for r in range(n_rep):
        idx = rng.integers(0, m, m)
        replicates[r] = loop_statistics(E[idx], U[idx], n_bins)
    t2 = time.perf_counter()
    jack = np.empty((n_jack, estimate.size))
    for i in range(n_jack):
        jack[i] = loop_statistics(np.delete(E, i), np.delete(U, i), n_bins)
    t3 = time.perf_counter()
    ci_low = ci_high = se = alphas = None
    if n_rep == n and n_jack == m:
        bounds, alphas = (
            np.array(parts)
            for parts in zip(
                *(
                    loop_bca_bounds(replicates[:, k], estimate[k], jack[:, k], level)
                    for k in range(estimate.size)
                ),
                strict=True,
            )
        )
        ci_low, ci_high = bounds[:, 0], bounds[:, 1]
        se = replicates.std(axis=0, ddof=1)
    t4 = time.perf_counter()
    return LoopResult(
        estimate=estimate,
        ci_low=ci_low,
        ci_high=ci_high,
        se=se,
        alphas=alphas,
        values=replicates,
        replicates=n_rep,
        jackknife_values=n_jack,
        replicate_seconds=t2 - t1,
        jackknife_seconds=t3 - t2,
        other_seconds=(t1 - t0) + (t4 - t3),
    )


def extrapolated_seconds(res: LoopResult, n: int, m: int) -> float:
    """Run time of the whole loop baseline, linear per replicate and per leave-one-out value."""
    return (
        res.other_seconds
        + res.replicate_seconds / res.replicates * n
        + res.jackknife_seconds / res.jackknife_values * m
    )


def timed_loop_baseline(
    cfg: Config, E: np.ndarray, U: np.ndarray, n: int, *, level: float, n_bins: int
) -> tuple[list[float], LoopResult, dict[str, Any]]:
    """Time :func:`loop_bca`: in full, or on a documented subset when a pilot (not timed)
    estimates the full run above ``cfg.baseline_limit`` seconds.

    Returns the (possibly extrapolated) times, the last result and the measurement details.
    """
    m = E.shape[0]
    pilot = loop_bca(
        E, U, n, seed=cfg.seed + 1, level=level, n_bins=n_bins,
        n_replicates=PILOT_SIZE, n_jackknife=PILOT_SIZE,
    )  # fmt: skip
    estimated = extrapolated_seconds(pilot, n, m)
    subset = estimated > cfg.baseline_limit
    counts = {"n_replicates": SUBSET_REPLICATES, "n_jackknife": SUBSET_JACKKNIFE} if subset else {}
    times, results = [], []
    for _ in range(max(1, cfg.baseline_repeat)):
        gc.collect()
        start = time.perf_counter()
        res = loop_bca(E, U, n, seed=cfg.seed, level=level, n_bins=n_bins, **counts)
        wall = time.perf_counter() - start
        times.append(extrapolated_seconds(res, n, m) if subset else wall)
        results.append(res)
    best = results[int(np.argmin(times))]
    details = {
        "extrapolated": subset,
        "replicates": best.replicates,
        "of_replicates": n,
        "jackknife_values": best.jackknife_values,
        "of_jackknife_values": m,
        "replicate_seconds": best.replicate_seconds,
        "jackknife_seconds": best.jackknife_seconds,
        "other_seconds": best.other_seconds,
        "seconds_per_replicate": best.replicate_seconds / best.replicates,
        "seconds_per_jackknife_value": best.jackknife_seconds / best.jackknife_values,
        "pilot_estimate_seconds": estimated,
        "limit_seconds": cfg.baseline_limit,
        "rule": (
            f"run in full when a pilot of {PILOT_SIZE} replicates and {PILOT_SIZE} leave-one-out "
            f"values (not timed) estimates <= {cfg.baseline_limit:g} s; otherwise time "
            f"{SUBSET_REPLICATES} replicates and {SUBSET_JACKKNIFE} leave-one-out values and "
            "extrapolate linearly per replicate and per leave-one-out value"
        ),
    }
    return times, results[-1], details


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


@register(
    "binned_bca_qm9",
    "BCa intervals of zms, cc, ence, zmse (20 bins) together, B = 5 000, QM9 "
    "(M = 13 885): <= 5 s, and >= 20x faster than a straightforward per-replicate NumPy loop",
    goal_ratio=20.0,
    goal_seconds=5.0,
    needs_data=(QM9_FILE,),
)
def bench_binned_bca_qm9(cfg: Config) -> Measurement:
    level = 0.95
    statistics = list(FOUR_STATISTICS)
    ds = xuqcal.read_csv(data_file(QM9_FILE), **QM9_COLUMNS)
    label = f"QM9 ({QM9_FILE})"
    n = 5000
    if cfg.quick:
        ds = ds.isel(sample=slice(0, 2000))
        label += ", first 2000 rows"
        n = 300
    m = ds.sizes["sample"]
    E, U = np.ascontiguousarray(ds.E.values), np.ascontiguousarray(ds.uE.values)

    ours_times, res = time_runs(
        lambda: xuqcal.bootstrap(
            ds, statistics, n_boot=n, method="bca", level=level, seed=cfg.seed, n_bins=N_BINS
        ).compute(),
        cfg.repeat,
    )
    base_times, base, measured = timed_loop_baseline(cfg, E, U, n, level=level, n_bins=N_BINS)
    if base.ci_low is None:
        agreement: dict[str, Any] = {
            "checked": False,
            "ok": None,
            "reason": (
                "the baseline was timed on a subset (no interval); --quick (or a larger "
                "--baseline-limit) runs it in full and compares the intervals"
            ),
        }
    else:
        # the same call again (not timed; bit-identical by design) for xuqcal's replicates
        kept = xuqcal.bootstrap(
            ds, statistics, n_boot=n, method="bca", level=level, seed=cfg.seed, n_bins=N_BINS,
            keep_replicates=True,
        ).compute()  # fmt: skip
        rule = (
            "per bound: |delta| <= max(0.01, 5 * sqrt(sd_xuqcal^2 + sd_baseline^2)), sd = MC sd "
            "of each run's quantile at the bound's BCa probability, from its own replicates "
            "(half the spread of the quantiles at p +- sqrt(p (1 - p) / B), p clipped to "
            "[1/B, 1 - 1/B])"
        )
        per_statistic = []
        for k, key in enumerate(statistics):
            one = bounds_agreement(
                key,
                (float(res.ci_low.sel(statistic=key)), float(res.ci_high.sel(statistic=key))),
                (float(base.ci_low[k]), float(base.ci_high[k])),
                xuqcal_se=float(res.se.sel(statistic=key)),
                baseline_se=float(base.se[k]),
                xuqcal_estimate=float(res.estimate.sel(statistic=key)),
                baseline_estimate=float(base.estimate[k]),
                n=n,
                level=level,
                bound_tolerances=bca_bound_tolerances(
                    kept.replicates.sel(statistic=key).values, base.values[:, k], base.alphas[k]
                ),
                tolerance_rule=rule,
            )
            one["bca_probabilities"] = base.alphas[k].tolist()
            one["untimed_rerun_identical"] = bool(
                float(kept.ci_low.sel(statistic=key)) == one["xuqcal_interval"][0]
                and float(kept.ci_high.sel(statistic=key)) == one["xuqcal_interval"][1]
            )
            per_statistic.append(one)
        agreement = {
            "checked": True,
            "ok": all(a["ok"] for a in per_statistic),
            "statistics": per_statistic,
        }
    row = Measurement(
        xuqcal_times=ours_times,
        baseline=(
            "per-replicate NumPy/SciPy loop (benchmarks/run.py: loop_bca): rng.integers(0, M, M) "
            "per replicate, the four statistics from scratch (stable argsort by uE, "
            "np.add.reduceat bins, scipy.stats.spearmanr), jackknife over the M np.delete "
            "leave-one-out samples, BCa formula"
        ),
        baseline_times=base_times,
        agreement=agreement,
        params={
            "data": label,
            "M": m,
            "B": n,
            "statistics": statistics,
            "n_bins": N_BINS,
            "level": level,
            "seed": cfg.seed,
        },
        baseline_measured=measured,
    )
    row.notes.append(
        "xuqcal: xuqcal.bootstrap(ds, ['zms', 'cc', 'ence', 'zmse'], n_boot=B, method='bca', "
        "n_bins=20).compute() on Dask's threaded scheduler (2 cores); the loop baseline is "
        "single-threaded, as written by a user"
    )
    if measured["extrapolated"]:
        row.notes.append(
            f"baseline time extrapolated from {measured['replicates']} replicates and "
            f"{measured['jackknife_values']} leave-one-out values (see baseline_measured)"
        )
    return row


def read_shared_sets() -> dict[int, xr.Dataset]:
    """The nine shared sets of :data:`SHARED_SETS`, read as input Datasets."""
    return {k: xuqcal.read_csv(data_file(path), E=E, uE=uE, where=where)
            for k, (path, E, uE, where) in SHARED_SETS.items()}


@register(
    "nine_sets_validation",
    "The whole validation of the nine shared sets (zms, cc, ence, zmse; BCa B = 5 000; SimN "
    "and SimT, n_mc = 10 000; 20 bins): <= 15 s on 2 cores (the reference R workflow needs "
    "about 5 minutes)",
    goal_seconds=15.0,
    needs_data=tuple(path for path, *_ in SHARED_SETS.values()),
)
def bench_nine_sets_validation(cfg: Config) -> Measurement:
    statistics = list(FOUR_STATISTICS)
    n_boot, n_mc = (300, 300) if cfg.quick else (5000, 10_000)
    sets = read_shared_sets()
    options = {"n_bins": N_BINS, "seed": cfg.seed, "generators": GENERATORS}
    per_set_runs: list[dict[str, float]] = []

    def validate_all() -> dict[int, xr.Dataset]:
        results, seconds = {}, {}
        for k, ds in sets.items():
            start = time.perf_counter()
            results[k] = xuqcal.validate(ds, statistics, n_boot=n_boot, n_mc=n_mc, **options)
            seconds[str(k)] = time.perf_counter() - start
        per_set_runs.append(seconds)
        return results

    ours_times, results = time_runs(validate_all, cfg.repeat)
    verdicts = {
        str(k): {str(s): str(v) for s, v in zip(r.statistic.values, r.verdict.values, strict=True)}
        for k, r in results.items()
    }
    intervals_ok = all(
        bool(((r.ci_low < r.estimate) & (r.estimate < r.ci_high)).all()) for r in results.values()
    )
    breakdown = validation_breakdown(sets, statistics, n_boot, n_mc, options)
    row = Measurement(
        xuqcal_times=ours_times,
        baseline=(
            "none measured: the reference R workflow needs about 5 minutes (TARGETS.md; not run "
            "here)"
        ),
        baseline_times=[],
        agreement={},
        params={
            "data": {
                str(k): f"{v[0]} (M = {sets[k].sizes['sample']})" for k, v in SHARED_SETS.items()
            },
            "statistics": statistics,
            "n_boot": n_boot,
            "n_mc": n_mc,
            "n_bins": N_BINS,
            "generators": list(GENERATORS),
            "seed": cfg.seed,
            "per_set_seconds": per_set_runs[int(np.argmin(ours_times))],
            "verdicts": verdicts,
            "intervals_contain_estimates": intervals_ok,
            "breakdown": breakdown,
        },
    )
    row.notes.append(
        "timed: xuqcal.validate(ds, ['zms', 'cc', 'ence', 'zmse'], n_boot, n_mc, n_bins=20, "
        "generators=('normal', 't6')) for each of the nine sets in turn, data already loaded; "
        "Dask's threaded scheduler (2 cores)"
    )
    row.notes.append(
        "breakdown: measured once after the timed runs (not counted): the BCa bootstrap alone "
        "(xuqcal.bootstrap), each generator's simulation alone (xuqcal.simulate), and the fixed "
        "cost of validate (n_boot = n_mc = 2), each summed over the nine sets; validate computes "
        "the bootstrap and both simulations in one dask.compute, so its time is about their sum"
    )
    return row


@register(
    "nine_sets_one_call",
    "The whole validation of the nine shared sets (zms, cc, ence, zmse; BCa B = 5 000; SimN "
    "and SimT, n_mc = 10 000; 20 bins) as ONE call on the sets stacked along 'dataset' "
    "(NaN-padded), against the loop of nine calls in the same run: at least as fast as the "
    "loop, goal <= 5 s on 2 cores (issue 13)",
    goal_ratio=1.0,
    goal_seconds=5.0,
    needs_data=tuple(path for path, *_ in SHARED_SETS.values()),
)
def bench_nine_sets_one_call(cfg: Config) -> Measurement:
    statistics = list(FOUR_STATISTICS)
    n_boot, n_mc = (300, 300) if cfg.quick else (5000, 10_000)
    sets = {f"set{k}": ds for k, ds in read_shared_sets().items()}
    stacked = xr.concat(list(sets.values()), dim="dataset", join="outer").assign_coords(
        dataset=list(sets))
    options = {"n_boot": n_boot, "n_mc": n_mc, "n_bins": N_BINS, "seed": cfg.seed,
               "generators": GENERATORS}

    def one_call() -> xr.Dataset:
        return xuqcal.validate(stacked, statistics, **options)

    def loop() -> dict[str, xr.Dataset]:
        return {label: xuqcal.validate(ds, statistics, **options) for label, ds in sets.items()}

    cpu: dict[str, list[float]] = {"one_call": [], "loop": []}

    def with_cpu(name: str, func: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:  # the process's CPU time (every thread) of one run
            start = os.times()
            result = func()
            end = os.times()
            cpu[name].append((end.user - start.user) + (end.system - start.system))
            return result

        return run

    # alternated (one call, loop, one call, loop, ...): a drift of the machine during the row
    # (other processes, temperature) does not favour either side
    ours_times, loop_times = [], []
    for _ in range(max(1, cfg.repeat)):
        times, stacked_result = time_runs(with_cpu("one_call", one_call), 1)
        ours_times += times
        times, loop_results = time_runs(with_cpu("loop", loop), 1)
        loop_times += times
    identical = {}
    for label, single in loop_results.items():
        try:
            assert_slice_identical(stacked_result, single, dataset=label)
            identical[label] = True
        except AssertionError:
            identical[label] = False
    return Measurement(
        xuqcal_times=ours_times,
        baseline="the loop of nine xuqcal.validate calls, one per set (same run, same options)",
        baseline_times=loop_times,
        agreement={"slices_bit_identical_to_single_calls": all(identical.values()),
                   "per_set": identical},
        params={
            "data": {label: int(ds.sizes["sample"]) for label, ds in sets.items()},
            "stacked_sizes": {str(k): int(v) for k, v in stacked.sizes.items()},
            "statistics": statistics,
            "n_boot": n_boot,
            "n_mc": n_mc,
            "n_bins": N_BINS,
            "generators": list(GENERATORS),
            "seed": cfg.seed,
            "cpu_seconds": cpu,
        },
        notes=[
            "cpu_seconds: user + system CPU time of the process during each run (both cores "
            "busy: about twice the wall time)",
            "timed: xuqcal.validate(stacked, ...) on the nine sets stacked with xr.concat along "
            "'dataset' (NaN-padded to 13 885 points), one Dask graph of slices x replicate "
            "chunks computed once; the baseline is the loop of nine calls (each its own graph) "
            "in the same process, the runs of both sides alternated; Dask's threaded scheduler "
            "(2 cores)",
        ],
    )


def _fixed_overhead(statistics: list[str], options: dict[str, Any]):
    def run(ds: xr.Dataset) -> xr.Dataset:
        # the fewest replicates validate accepts at 95 % (ceil(2 / 0.05) = 40): the cost
        # measured is the fixed overhead; undefined BCa intervals are still possible
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", xuqcal.DegenerateIntervalWarning)
            return xuqcal.validate(ds, statistics, n_boot=40, n_mc=2, **options)

    return run


def validation_breakdown(
    sets: dict[int, xr.Dataset],
    statistics: list[str],
    n_boot: int,
    n_mc: int,
    options: dict[str, Any],
) -> dict[str, Any]:
    """Seconds of the parts of :func:`xuqcal.validate`, per set and summed (timed once each)."""
    seed, n_bins = options["seed"], options["n_bins"]
    parts: dict[str, Callable[[xr.Dataset], Any]] = {
        "bootstrap": lambda ds: xuqcal.bootstrap(
            ds, statistics, n_boot=n_boot, method="bca", seed=seed, n_bins=n_bins
        ).compute(),
        **{
            f"simulation_{g}": lambda ds, g=g: xuqcal.simulate(
                ds, statistics, generators=g, n_mc=n_mc, seed=seed, n_bins=n_bins
            ).compute()
            for g in options["generators"]
        },
        "fixed_overhead": _fixed_overhead(statistics, options),
    }
    per_set: dict[str, dict[str, float]] = {}
    for k, ds in sets.items():
        per_set[str(k)] = {}
        for name, func in parts.items():
            per_set[str(k)][name] = time_runs(lambda func=func, ds=ds: func(ds), 1)[0][0]
    totals = {name: sum(p[name] for p in per_set.values()) for name in parts}
    return {"total_seconds": totals, "per_set_seconds": per_set}


@register(
    "lzms_qm9",
    "LZMS, 100 bins x 5 000 BCa replicates, QM9 (M = 13 885): <= 3 s",
    goal_seconds=3.0,
    needs_data=(QM9_FILE,),
)
def bench_lzms_qm9(cfg: Config) -> Measurement:
    from xuqcal.analysis.local import local

    ds = xuqcal.read_csv(data_file(QM9_FILE), **QM9_COLUMNS)
    n = 500 if cfg.quick else 5000
    local(ds, "zms", n_bins=10, n_boot=50)  # compile / load the kernels, not timed
    times, result = time_runs(lambda: local(ds, "zms", n_bins=100, n_boot=n, seed=cfg.seed),
                              cfg.repeat)
    return Measurement(
        xuqcal_times=times,
        baseline="none (goal in seconds)",
        baseline_times=[],
        agreement={"checked": False, "ok": None,
                   "reason": "no baseline; tests/test_local.py checks per-bin BCa against "
                             "scipy.stats.bootstrap"},
        params={"n_bins": 100, "n_replicates": n, "M": ds.sizes["sample"]},
        notes=[f"result: f_v = {result.fraction_valid.item():.2f} "
               f"[{result.fraction_valid_low.item():.2f}, "
               f"{result.fraction_valid_high.item():.2f}]"],
    )


CUBE_GRID = {"size": [2000, 4000, 8000, 12000, 16000], "n_bins": [10, 20, 30, 40, 50],
             "nu": [3, 4, 5, 6, 12, 24], "generators": ["normal", "t6"]}
CUBE_QUICK = {"size": [500, 1000], "n_bins": [5, 10], "nu": [3, 6],
              "generators": ["normal", "t6"]}


@register(
    "cube_full",
    "Full-resolution size/bins cube (M 5 values x N 5 x nu 6 x D 2, n_mc = 5 000, ence and "
    "zmse): <= 3 minutes on 2 cores; bit-identical results on a 2-worker dask.distributed "
    "local cluster",
    goal_seconds=180.0,
)
def bench_cube_full(cfg: Config) -> Measurement:
    from xuqcal.studies import cube

    grid, n_mc = (CUBE_QUICK, 100) if cfg.quick else (CUBE_GRID, 5000)
    cube.build(["ence"], size=[200], n_bins=[5], nu=[6], n_mc=10).compute()  # warm-up
    times, local_cube = time_runs(
        lambda: cube.build(["ence", "zmse"], **grid, n_mc=n_mc, seed=cfg.seed).compute(), 1)
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        start = time.perf_counter()
        remote = cube.build(["ence", "zmse"], **grid, n_mc=n_mc, seed=cfg.seed).compute()
        remote_seconds = time.perf_counter() - start
    # every value, coordinate and attribute but the build's time stamp ("created")
    identical = bool(local_cube.drop_attrs(deep=False).identical(remote.drop_attrs(deep=False))
                     and {k: v for k, v in local_cube.attrs.items() if k != "created"}
                     == {k: v for k, v in remote.attrs.items() if k != "created"})
    fit = cube.fit_sqrt(local_cube).sel(statistic="ence", generator="normal")
    return Measurement(
        xuqcal_times=times,
        baseline="none (goal in seconds); the same cube on a 2-worker LocalCluster",
        baseline_times=[],
        agreement={"checked": True, "ok": identical,
                   "reason": "threaded build and 2-worker dask.distributed build compared "
                             "with xarray's identical() (the attribute 'created', the time "
                             "of each build, aside)"},
        params={"grid": grid, "n_mc": n_mc, "cells": int(np.prod([len(v) for v in
                                                                  grid.values()])),
                "distributed_seconds": remote_seconds},
        notes=[f"result: bit-identical on dask.distributed: {identical} "
               f"({remote_seconds:.1f} s there); ENCE normal fit alpha = "
               f"{fit.alpha.item():.4f} +- {fit.alpha_se.item():.4f}, a = {fit.a.item():.4f}"],
    )


@register(
    "cc_jackknife_1e6",
    "Not a TARGETS.md row: exact leave-one-out cc (Spearman of |E| and uE) of all M = 10^6 "
    "points, the jackknife of cc's BCa interval: <= 5 s (so that it never dominates a BCa "
    "interval of cc), compared with re-ranking each reduced sample with scipy.stats.spearmanr",
    goal_seconds=5.0,
)
def bench_cc_jackknife(cfg: Config) -> Measurement:
    from xuqcal.analysis.resampling import _jackknife_block
    from xuqcal.core.statistics import PreparedData, codes_of, get_statistics

    m, k = (20_000, 5) if cfg.quick else (1_000_000, 20)
    ds = xuqcal.synthetic.nig(m, nu=6, seed=cfg.seed)
    # uE rounded to 3 significant digits: ties in uE, as in the QM9 and logP sets
    uE = np.asarray(ds.uE.values)
    scale = 10.0 ** (np.floor(np.log10(uE)) - 2)
    uE = np.round(uE / scale) * scale
    E = np.asarray(ds.E.values)
    codes = codes_of(get_statistics(["cc"]))

    def ours():
        prepared = PreparedData.from_arrays(E, uE, needs_bins=False)
        return _jackknife_block(prepared, codes, 0, m)[:, 0]

    _jackknife_block(PreparedData.from_arrays(E[:500], uE[:500], needs_bins=False), codes,
                     0, 500)  # compile / load the kernel, not timed
    times, values = time_runs(ours, cfg.repeat)
    order = np.argsort(uE, kind="stable")  # jackknife rows are in the order of uE
    e_sorted, u_sorted = np.abs(E[order]), uE[order]
    positions = np.random.default_rng(cfg.seed).choice(m, k, replace=False)
    start = time.perf_counter()
    theirs = np.array([
        scipy.stats.spearmanr(np.delete(e_sorted, q), np.delete(u_sorted, q)).statistic
        for q in positions])
    per_point = (time.perf_counter() - start) / k
    difference = float(np.max(np.abs(values[positions] - theirs)))
    spread = float(np.ptp(values))
    return Measurement(
        xuqcal_times=times,
        baseline=f"scipy.stats.spearmanr on each reduced sample ({k} points timed, "
                 f"extrapolated to M = {m})",
        baseline_times=[per_point * m],
        baseline_measured={"extrapolated": True, "points_timed": k,
                           "seconds_per_point": per_point,
                           "rule": f"{k} of {m} leave-one-out values timed, x {m // k}"},
        agreement={"checked": True, "ok": difference <= 1e-6 * spread,
                   "reason": f"max |difference| on the {k} timed points = {difference:.2e}, "
                             f"spread of the M values {spread:.2e}"},
        params={"M": m, "distinct_uE": int(np.unique(uE).size)},
        notes=[f"result: {m} leave-one-out values in {min(times):.2f} s (O(M log M) for all "
               f"points); the baseline takes {per_point:.3f} s per value"],
    )


_MEMORY_CHILD = """
import json, sys, time
import xuqcal

def high_water_mb():
    # VmHWM belongs to this process's own address space (it starts afresh at exec); the
    # getrusage ru_maxrss of a child would include its parent's high-water mark at the fork
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")

m, n = int(sys.argv[1]), int(sys.argv[2])
ds = xuqcal.synthetic.nig(m, nu=6, seed=0)
before = high_water_mb()
start = time.perf_counter()
result = xuqcal.bootstrap(ds, ["zms"], n_boot=n, seed=0).compute()
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mb": high_water_mb(), "peak_before_mb": before,
                  "ci": [result.ci_low.item(), result.ci_high.item()]}))
"""


@register(
    "bootstrap_memory_1e6",
    "Bootstrap of ZMS with M = 10^6, B = 10 000: completes with peak memory <= 2 GB",
    goal_memory_mb=2048.0,
)
def bench_bootstrap_memory(cfg: Config) -> Measurement:
    import subprocess

    m, n = (100_000, 1000) if cfg.quick else (1_000_000, 10_000)
    # a fresh process, so that its peak resident memory is this computation's own
    done = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(m), str(n)],
                          capture_output=True, text=True, check=True)
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    replicate_x_sample_mb = m * n * 8 / 1e6
    return Measurement(
        xuqcal_times=[measured["seconds"]],
        baseline="none (goal in memory)",
        baseline_times=[],
        agreement={"checked": False, "ok": None, "reason": "memory row"},
        params={"M": m, "B": n, **measured},
        peak_memory_mb=measured["peak_mb"],
        notes=[f"result: peak RSS {measured['peak_mb']:.0f} MB of the whole process (data "
               f"and imports included; {measured['peak_before_mb']:.0f} MB before the "
               f"bootstrap) vs {replicate_x_sample_mb:.0f} MB for one replicate x sample "
               f"array; interval {measured['ci']}"],
    )


# ------------------------------------------------------------------ issue 14: scale


def _synthetic_csv(folder: Path, m: int) -> Path:
    """A CSV of M synthetic calibrated NIG points (nu = 6, seed 0), as a user would have."""
    path = folder / f"nig_{m}.csv"
    ds = xuqcal.synthetic.nig(m, nu=6, seed=0)
    pd.DataFrame({"E": ds.E.values, "uE": ds.uE.values}).to_csv(path, index=False)
    return path


def _cli_validate(csv: Path, output: Path, *options: str) -> tuple[float, xr.Dataset]:
    """``xuqcal validate csv --E E --uE uE [options] -o output`` in this process: its wall
    time and its result (read back from the NetCDF it wrote)."""
    from xuqcal.cli.commands import main

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        status = main(["validate", str(csv), "--E", "E", "--uE", "uE", "--no-progress",
                       "-o", str(output), "--overwrite", *options])
    seconds = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"xuqcal validate {csv} {' '.join(options)} exited with {status}")
    with xr.open_dataset(output) as result:
        return seconds, result.load()


def zeta_agreement(auto: xr.Dataset, fixed: xr.Dataset, tolerance: float) -> dict[str, Any]:
    """The deciding zeta of every statistic (the one its verdict rests on) within
    ``tolerance`` of ``fixed``, and the same verdicts. The largest difference over every zeta
    is reported too: the reported-only zetas of a statistic that is not usable (its simulated
    references differ between generators) are not held to the precision target (see
    xuqcal.analysis.precision) and may differ more."""
    difference = np.abs(auto.zeta.values - fixed.zeta.values)
    both = np.isfinite(auto.zeta.values) & np.isfinite(fixed.zeta.values)
    same_nan = bool((np.isnan(auto.zeta.values) == np.isnan(fixed.zeta.values)).all())
    deciding = []
    for i, key in enumerate(auto.statistic.values):
        scheme = str(fixed.verdict_scheme.values[i])
        if scheme:
            deciding.append((str(key), scheme, float(auto.zeta.sel(statistic=key,
                                                                    scheme=scheme)),
                             float(fixed.zeta.sel(statistic=key, scheme=scheme))))
    worst_deciding = max((abs(a - f) for _, _, a, f in deciding), default=0.0)
    verdicts_equal = bool((auto.verdict.values == fixed.verdict.values).all())
    worst = float(difference[both].max()) if both.any() else 0.0
    return {
        "checked": True,
        "ok": bool(worst_deciding <= tolerance and verdicts_equal and same_nan),
        "tolerance": tolerance,
        "max_abs_deciding_zeta_difference": worst_deciding,
        "max_abs_zeta_difference_every_scheme": worst,
        "verdicts_equal": verdicts_equal,
        "deciding": [{"statistic": k, "scheme": sc, "auto": a, "fixed": f}
                     for k, sc, a, f in deciding],
        "zeta_auto": auto.zeta.to_pandas().round(4).to_dict(),
        "zeta_fixed": fixed.zeta.to_pandas().round(4).to_dict(),
    }


def _default_validation_row(cfg: Config, m: int) -> Measurement:
    """The default ``xuqcal validate`` of M synthetic points, and the same command with
    explicit counts of 10 000 in the same run for the agreement of the zetas and verdicts,
    unless that run is estimated (from the auto run's time and counts) to take more than
    ``--baseline-limit`` seconds: it is then not run, and the row says so."""
    # --quick (a smoke run of the script): small data, 1000 replicates for the fixed run
    fixed_count = 1000 if cfg.quick else 10_000
    with tempfile.TemporaryDirectory() as folder:
        csv = _synthetic_csv(Path(folder), m)
        auto_times, auto = [], None
        for _ in range(max(1, cfg.repeat)):
            seconds, auto = _cli_validate(csv, Path(folder) / "auto.nc")
            auto_times.append(seconds)
        n_boot, n_mc = int(auto.attrs["n_boot"]), int(auto.attrs["n_mc"])
        estimated = min(auto_times) * fixed_count / max(1, min(n_boot, n_mc or n_boot))
        fixed = None
        if cfg.quick or estimated <= cfg.baseline_limit:
            fixed_seconds, fixed = _cli_validate(csv, Path(folder) / "fixed.nc", "--n-boot",
                                                 str(fixed_count), "--n-mc", str(fixed_count))
    baseline = f"the same command with --n-boot {fixed_count} --n-mc {fixed_count}"
    if fixed is None:
        agreement = {"checked": False, "ok": None,
                     "reason": f"the fixed-count run, estimated at {estimated:.0f} s, exceeds "
                               f"--baseline-limit {cfg.baseline_limit:g} s and was not run"}
    else:
        agreement = zeta_agreement(auto, fixed, 0.05)
    return Measurement(
        xuqcal_times=auto_times,
        baseline=baseline + ("" if fixed is not None else " (not run, see the agreement)"),
        baseline_times=[] if fixed is None else [fixed_seconds],
        agreement=agreement,
        params={"M": m, "n_boot_auto": n_boot, "n_mc_auto": n_mc,
                "mc_precision": float(auto.attrs["mc_precision"]),
                "mc_precision_reached": float(auto.attrs["mc_precision_reached"]),
                "n_boot_per_statistic": auto.attrs.get("n_boot_per_statistic", ""),
                "simulated_statistics": auto.attrs["simulated_statistics"],
                "fixed_run_estimated_seconds": estimated},
        notes=[f"auto stopped at n_boot = {n_boot}, n_mc = {n_mc} (precision reached "
               f"{float(auto.attrs['mc_precision_reached']):.3g})"],
    )


@register(
    "validate_default_2e6",
    "Default `xuqcal validate` (n_boot and n_mc 'auto', 8 statistics, normal and t6) on a CSV "
    "of M = 2 x 10^6 synthetic NIG points (nu = 6): <= 2 minutes on 2 cores, every deciding "
    "zeta within +-0.05 and every verdict equal to the fixed-count run n_boot = n_mc = 10 000 "
    "on the same file in the same run (run when --baseline-limit allows it: estimated at "
    "1669 s in results-issue14-2e6-2026-11-23.json)",
    goal_seconds=120.0,
)
def bench_validate_default_2e6(cfg: Config) -> Measurement:
    return _default_validation_row(cfg, 5_000 if cfg.quick else 2_000_000)


@register(
    "validate_default_2e5",
    "The agreement of the default `xuqcal validate` ('auto' counts) with the fixed-count run "
    "n_boot = n_mc = 10 000 at M = 2 x 10^5 (a tenth of the 2 x 10^6 row, whose fixed-count "
    "run was estimated at 1669 s): every deciding zeta within +-0.05, every verdict equal "
    "(run with --baseline-limit 1000)",
    goal_seconds=60.0,
)
def bench_validate_default_2e5(cfg: Config) -> Measurement:
    return _default_validation_row(cfg, 5_000 if cfg.quick else 200_000)


@register(
    "validate_zms_rce_1e6",
    "`xuqcal validate --statistics zms,rce` on a CSV of M = 10^6 synthetic NIG points: <= 30 s "
    "(no simulation: both have a predefined reference; n_boot 'auto'), against the same with "
    "--n-boot 10000 in the same run",
    goal_seconds=30.0,
)
def bench_validate_zms_rce_1e6(cfg: Config) -> Measurement:
    m, fixed_count = (5_000, "1000") if cfg.quick else (1_000_000, "10000")
    with tempfile.TemporaryDirectory() as folder:
        csv = _synthetic_csv(Path(folder), m)
        times, auto = [], None
        for _ in range(max(1, cfg.repeat)):
            seconds, auto = _cli_validate(csv, Path(folder) / "auto.nc", "--statistics",
                                          "zms,rce")
            times.append(seconds)
        fixed_seconds, fixed = _cli_validate(csv, Path(folder) / "fixed.nc", "--statistics",
                                             "zms,rce", "--n-boot", fixed_count)
    return Measurement(
        xuqcal_times=times,
        baseline=f"the same command with --n-boot {fixed_count}",
        baseline_times=[fixed_seconds],
        agreement=zeta_agreement(auto, fixed, 0.05),
        params={"M": m, "n_boot_auto": int(auto.attrs["n_boot"]),
                "n_mc": int(auto.attrs["n_mc"])},
    )


_VALIDATE_MEMORY_CHILD = """
import json, sys, time
import xuqcal

def high_water_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")

m = int(sys.argv[1])
ds = xuqcal.synthetic.nig(m, nu=6, seed=0)
before = high_water_mb()
start = time.perf_counter()
result = xuqcal.validate(ds, n_boot="auto", n_mc="auto")
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mb": high_water_mb(), "peak_before_mb": before,
                  "n_boot": int(result.attrs["n_boot"]), "n_mc": int(result.attrs["n_mc"]),
                  "verdicts": [str(v) for v in result.verdict.values]}))
"""


@register(
    "validate_default_1e7",
    "Default validation (n_boot and n_mc 'auto', 8 statistics, normal and t6) of M = 10^7 "
    "synthetic NIG points: completes, peak memory <= 4 GB",
    goal_memory_mb=4096.0,
)
def bench_validate_default_1e7(cfg: Config) -> Measurement:
    import subprocess

    m = 5_000 if cfg.quick else 10_000_000
    done = subprocess.run([sys.executable, "-c", _VALIDATE_MEMORY_CHILD, str(m)],
                          capture_output=True, text=True, check=True)
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return Measurement(
        xuqcal_times=[measured["seconds"]],
        baseline="none (goal in memory)",
        baseline_times=[],
        agreement={"checked": False, "ok": None, "reason": "memory row"},
        params={"M": m, **measured},
        peak_memory_mb=measured["peak_mb"],
        notes=[f"peak RSS {measured['peak_mb']:.0f} MB of the whole process (data and imports "
               f"included; {measured['peak_before_mb']:.0f} MB before the validation)"],
    )


def _write_synthetic_zarr(path: Path, m: int, chunk: int) -> None:
    """A Zarr store of M synthetic calibrated NIG points (nu = 6), written chunk by chunk
    (seed = chunk number), stored in chunks of ``chunk`` points."""
    for k, start in enumerate(range(0, m, chunk)):
        part = xuqcal.synthetic.nig(min(chunk, m - start), nu=6, seed=k)[["E", "uE"]]
        part = part.drop_vars([c for c in part.coords]).chunk(sample=chunk)
        if k == 0:
            part.to_zarr(path, mode="w")
        else:
            part.to_zarr(path, append_dim="sample")


@register(
    "out_of_core_1e8_zarr",
    "Out of core: M = 10^8 points in a chunked Zarr store, read on a 2-worker LocalCluster "
    "with 1 GB per worker: zms, rce, nll with analytic intervals and 20-bin ENCE and ZMSE "
    "(xuqcal.reduce_statistics) complete, bit-identical for two chunkings (memory goal: "
    "the two workers' 2 x 1 GB)",
    goal_memory_mb=2000.0,
)
def bench_out_of_core_1e8_zarr(cfg: Config) -> Measurement:
    from distributed import Client, LocalCluster
    from distributed.diagnostics import MemorySampler

    m, store_chunk = (400_000, 100_000) if cfg.quick else (100_000_000, 2_500_000)
    chunkings = (store_chunk, 2 * store_chunk)
    statistics = ["zms", "rce", "nll", "ence", "zmse"]
    results, times, peaks = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "big.zarr"
        start = time.perf_counter()
        _write_synthetic_zarr(store, m, store_chunk)
        write_seconds = time.perf_counter() - start
        with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1GB",
                          processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            for chunk in chunkings:
                sampler = MemorySampler()
                start = time.perf_counter()
                with sampler.sample("run", client=client, interval=0.5):
                    ds = xuqcal.open_dataset(store, chunks={"sample": chunk})
                    result = xuqcal.reduce_statistics(ds, statistics, n_bins=20).compute()
                times.append(time.perf_counter() - start)
                peaks.append(float(sampler.to_pandas()["run"].max()) / 1e6)
                results.append(result)
            workers = len(client.scheduler_info()["workers"])
    identical = all(np.array_equal(results[0][name].values, r[name].values, equal_nan=True)
                    for r in results[1:] for name in ("estimate", "ci_low", "ci_high"))
    first = results[0]
    return Measurement(
        xuqcal_times=times,
        baseline="none (the goal is to complete within the memory limit)",
        baseline_times=[],
        agreement={"checked": True, "ok": bool(identical),
                   "reason": "estimates and bounds bit-identical between the chunkings "
                             f"{chunkings}" if identical else "results differ between "
                             "chunkings"},
        peak_memory_mb=max(peaks),
        params={"M": m, "store_chunk": store_chunk, "chunkings": list(chunkings),
                "workers_at_end": workers, "write_seconds": write_seconds,
                "cluster_memory_peak_mb": peaks,
                "estimate": dict(zip(statistics, first.estimate.values.tolist(), strict=True)),
                "ci_low": dict(zip(statistics, first.ci_low.values.tolist(), strict=True)),
                "ci_high": dict(zip(statistics, first.ci_high.values.tolist(), strict=True))},
        notes=[f"two chunkings {chunkings}: {', '.join(f'{t:.1f} s' for t in times)}; peak "
               f"memory of the 2 worker processes together (distributed MemorySampler): "
               f"{', '.join(f'{p:.0f} MB' for p in peaks)}; store written in "
               f"{write_seconds:.0f} s (not timed)"],
    )


@register(
    "compare_10_models_1e5",
    "Issue 24: xuqcal.compare of 10 models x M = 10^5 shared points (zms, rce, ence, zmse; "
    "paired BCa, B = 2000; each model a synthetic NIG set whose errors correlate 0.8 with the "
    "first's) costs no more than the ten independent xuqcal.bootstrap calls of the same models, "
    "measured side by side in one run",
    goal_ratio=1.0,
)
def bench_compare_10_models(cfg: Config) -> Measurement:
    k, m, n = (3, 5_000, 200) if cfg.quick else (10, 100_000, 2000)
    statistics = ["zms", "rce", "ence", "zmse"]
    base = xuqcal.synthetic.nig(m, nu=6, seed=cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    z1 = base.E.values / base.uE.values
    models = {}
    for j in range(k):
        u = base.uE.values * np.exp(rng.normal(0.0, 0.1, m)) * (1.0 + 0.05 * j)
        z = z1 if j == 0 else 0.8 * z1 + 0.6 * rng.standard_normal(m)
        models[f"m{j}"] = xuqcal.from_arrays(u * z * (1.0 + 0.02 * j), u)
    stacked = xuqcal.stack_datasets(models, dim="model")

    def paired() -> xr.Dataset:
        return xuqcal.compare(stacked, statistics, n_boot=n, seed=cfg.seed)

    def independent() -> list[xr.Dataset]:
        return [xuqcal.bootstrap(ds, statistics, n_boot=n, seed=cfg.seed).compute()
                for ds in models.values()]

    paired()  # compile the kernels (not timed)
    ours_times, result = time_runs(paired, cfg.repeat)
    base_times, alone = time_runs(independent, cfg.repeat)
    # the estimates of compare are each model's own statistics: the same as bootstrap's
    same = all(np.allclose(result.estimate.sel(model=name).values, one.estimate.values,
                           rtol=1e-12, atol=0)
               for name, one in zip(models, alone, strict=True))
    narrower = []
    for j in range(1, k):
        pair = result.sel(model="m0", other=f"m{j}")
        narrower.append(float((pair.ci_high - pair.ci_low).sel(statistic="zms")))
    return Measurement(
        xuqcal_times=ours_times,
        baseline=f"{k} independent xuqcal.bootstrap calls (BCa, B = {n}), one per model",
        baseline_times=base_times,
        agreement={"checked": True, "ok": bool(same),
                   "reason": "each model's estimates equal those of its own bootstrap (rtol "
                             "1e-12)" if same else "estimates differ from bootstrap's"},
        params={"models": k, "M": m, "n_boot": n, "statistics": statistics},
        notes=[f"compare also gives the {k * (k - 1)} ordered pairs' intervals and the rank "
               f"probabilities; widths of the zms differences m0 - mj: "
               f"{', '.join(f'{w:.3g}' for w in narrower)}"],
    )


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
    args = parser.parse_args(argv)
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
            "baseline_limit": cfg.baseline_limit,
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
