"""What every benchmark row shares: the configuration, the registry of rows, the timing and
agreement helpers, and the per-replicate loop baseline.

A row lives in ``benchmarks/rows/<name>.py`` (or the family ``rows/<prefix>.py`` whose name
starts its rows' names); it decorates a function with :func:`register` (name, goal text, goal
ratio and/or time or memory limit), which receives a :class:`Config` and returns a
:class:`Measurement`. ``benchmarks/run.py`` runs the registered rows side by side.
"""


from __future__ import annotations

import gc
import inspect
import math
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def read_shared_sets() -> dict[int, xr.Dataset]:
    """The nine shared sets of :data:`SHARED_SETS`, read as input Datasets."""
    return {k: xuqcal.read_csv(data_file(path), E=E, uE=uE, where=where)
            for k, (path, E, uE, where) in SHARED_SETS.items()}


def nine_set_options(n_boot: int = 5000, n_mc: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """The options of the nine-set validation (issue 13's rows, issue 26's goal): fixed counts,
    :data:`N_BINS` bins, the :data:`GENERATORS`; with :data:`FOUR_STATISTICS`."""
    return {"n_boot": n_boot, "n_mc": n_mc, "n_bins": N_BINS, "seed": seed,
            "generators": GENERATORS}


def revision() -> str:
    """The short commit of the checkout of the imported xuqcal (``PYTHONPATH`` may name
    another worktree than this script's)."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], text=True,
                          capture_output=True, cwd=Path(xuqcal.__file__).parent).stdout.strip()


def stacked_shared_sets() -> tuple[dict[str, xr.Dataset], xr.Dataset]:
    """The nine shared sets labelled ``set1`` .. ``set9``, and the same sets stacked along
    ``dataset`` by :func:`xuqcal.stack_datasets` (NaN-padded to the longest): the input of
    the nine-set one call."""
    sets = {f"set{k}": ds for k, ds in read_shared_sets().items()}
    return sets, xuqcal.stack_datasets(sets)
