"""Confidence intervals, ζ-scores and binomial intervals (METHODS §4).

Pure NumPy functions vectorized over leading axes (the last axis holds replicates, jackknife
values or points); :func:`zeta` also accepts xarray objects and keeps their labels.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import special

from xuqcal._lazy import lazy_module
from xuqcal.core.checks import check_finite, user_stacklevel
from xuqcal.core.checks import check_level as _check_level
from xuqcal.core.threads import cores, numpy_pool

stats = lazy_module("scipy.stats")

METHODS = ("bca", "percentile", "student")


class DegenerateIntervalWarning(RuntimeWarning):
    """A BCa interval is undefined: every bootstrap replicate lies on one side of the estimate
    (or some replicates are NaN or infinite: the statistic is undefined on those resamples).

    The bias correction ``z0`` is then infinite and the interval's bounds are NaN (as in
    :func:`scipy.stats.bootstrap`). It happens when the bootstrap bias of a statistic is several
    times its spread, e.g. for ``ence`` and ``zmse`` on large calibrated data sets.
    """


def check_level(level: float, name: str = "level") -> float:
    """Validate a confidence level in (0, 1) (:func:`xuqcal.core.checks.check_level`).

    Examples
    --------
    >>> check_level(0.9)
    0.9
    """
    return _check_level(level, name)


def quantile_sorted(sorted_values: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """Linear-interpolation quantiles (Hyndman–Fan type 7, NumPy's default) with one probability
    per row of ``sorted_values`` (sorted along the last axis). NaN probabilities give NaN.

    Examples
    --------
    >>> quantile_sorted(np.array([[1.0, 2.0, 3.0, 4.0]]), np.array([[0.5]])).tolist()
    [[2.5]]
    """
    b = sorted_values.shape[-1]
    p = np.asarray(probabilities, dtype=np.float64)
    h = (b - 1) * np.clip(np.nan_to_num(p, nan=0.0), 0.0, 1.0)
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, b - 1)
    frac = h - lo
    v_lo = np.take_along_axis(sorted_values, lo, axis=-1)
    v_hi = np.take_along_axis(sorted_values, hi, axis=-1)
    out = v_lo + frac * (v_hi - v_lo)
    return np.where(np.isnan(p), np.nan, out)


def bias_correction(replicates: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """BCa ``z0 = Φ⁻¹(fraction of replicates below the estimate, ties counted as one half)``."""
    est = np.asarray(estimate)[..., np.newaxis]
    below = np.mean(replicates < est, axis=-1) + 0.5 * np.mean(replicates == est, axis=-1)
    return special.ndtri(below)


def bca_levels(z0: np.ndarray, a: np.ndarray, level: float) -> np.ndarray:
    """The adjusted levels ``α_± = Φ(z0 + (z0 + z_±) / (1 - a (z0 + z_±)))`` of a BCa interval
    (last axis: lower, upper), from the bias correction ``z0`` and the acceleration ``a``.

    Examples
    --------
    >>> bca_levels(np.array(0.0), np.array(0.0), 0.95).round(3).tolist()
    [0.025, 0.975]
    """
    z = special.ndtri(np.array([(1.0 - level) / 2.0, (1.0 + level) / 2.0]))
    z0 = np.asarray(z0, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        zs = z0[..., np.newaxis] + z
        return special.ndtr(z0[..., np.newaxis] + zs / (1.0 - a[..., np.newaxis] * zs))


def acceleration(jackknife: np.ndarray, *, products: bool = False,
                 parallel: bool = False) -> np.ndarray:
    """BCa acceleration ``a = Σ (m - J_i)³ / (6 (Σ (m - J_i)²)^1.5)`` from jackknife values.

    ``products``: the cubes are taken as ``d * d * d`` instead of ``d ** 3`` (NumPy's
    ``power``, much slower; the two may differ in the last bit).
    The intervals of xuqcal's published numbers use the power (their values are kept bit for
    bit); the many pairwise differences of :func:`xuqcal.compare` use products.

    Equal jackknife values (a statistic that no point changes, e.g. ``zms`` of all-zero
    errors) have no skewness: ``a = 0`` there (the formula is 0 / 0). Non-finite jackknife
    values (an undefined statistic) give NaN without a NumPy warning. The sums are taken a
    block of rows at a time (:data:`ACCELERATION_BLOCK` values), so that the temporaries of
    ``m - J_i`` stay small for millions of points; each row's sums are the same as over the
    whole array (NumPy reduces a C-contiguous last axis row by row).

    ``parallel``: the rows (statistics) are computed on the cores, one row a job
    (:func:`xuqcal.core.threads.numpy_pool`; the same values), when there are several rows of
    at least :data:`ACCELERATION_PARALLEL_FROM` values in all; for callers outside Dask's
    tasks only (a precision-driven validate: 8 statistics of 2·10⁶ jackknife values).

    Examples
    --------
    >>> float(acceleration(np.array([1.0, 2.0, 3.0])))
    0.0
    >>> float(acceleration(np.array([2.0, 2.0, 2.0])))
    0.0
    """
    jackknife = np.asarray(jackknife)
    leading = jackknife.shape[:-1]
    rows = jackknife.reshape(-1, jackknife.shape[-1])
    if (parallel and rows.shape[0] > 1 and rows.size >= ACCELERATION_PARALLEL_FROM
            and cores() > 1):
        parts = list(numpy_pool().map(
            lambda k: _acceleration_sums(rows[k:k + 1], products), range(rows.shape[0])))
        sums = [np.concatenate(values) for values in zip(*parts, strict=True)]
    else:
        sums = _acceleration_sums(rows, products)
    cubes, squares, finite, scaled_cubes, scaled_squares = (
        values.reshape(leading) for values in sums)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        denominator = 6.0 * squares ** 1.5
        a = np.where(denominator == 0.0, 0.0 * cubes, cubes / denominator)
        redo = ~np.isfinite(a) & finite
        if np.any(redo):
            a = np.where(redo, scaled_cubes / (6.0 * scaled_squares ** 1.5), a)
        return a


def _acceleration_sums(rows: np.ndarray, products: bool) -> tuple[np.ndarray, ...]:
    """The sums of :func:`acceleration` for each of ``rows`` (2-D): the cubes and squares of
    ``d = m - J_i``, whether every ``d`` is finite, and the cubes and squares of ``d /
    max |d|`` where the first overflow (NaN elsewhere)."""
    cubes, squares = np.empty(rows.shape[0]), np.empty(rows.shape[0])
    finite = np.empty(rows.shape[0], dtype=bool)
    scaled_cubes, scaled_squares = np.full(rows.shape[0], np.nan), np.full(rows.shape[0], np.nan)
    step = max(1, ACCELERATION_BLOCK // max(1, rows.shape[1]))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for start in range(0, rows.shape[0], step):
            block = slice(start, start + step)
            d = np.mean(rows[block], axis=-1, keepdims=True) - rows[block]
            cubes[block] = np.sum(d * d * d if products else d**3, axis=-1)
            squares[block] = np.sum(d**2, axis=-1)
            finite[block] = np.isfinite(d).all(axis=-1)
            # huge statistics (|d|³ overflows): the same ratio of d / max|d| (a is scale-free);
            # ordinary values never take this path
            trial = cubes[block] / (6.0 * squares[block] ** 1.5)
            huge = ~np.isfinite(trial) & (squares[block] != 0.0) & finite[block]
            if np.any(huge):
                top = np.max(np.abs(d), axis=-1, keepdims=True)
                dn = d / np.where(top > 0, top, 1.0)
                scaled_cubes[block] = np.where(
                    huge, np.sum(dn * dn * dn if products else dn**3, axis=-1), np.nan)
                scaled_squares[block] = np.where(huge, np.sum(dn**2, axis=-1), np.nan)
    return cubes, squares, finite, scaled_cubes, scaled_squares


#: Values (rows × jackknife values) from which :func:`acceleration` with ``parallel`` splits
#: its rows between threads.
ACCELERATION_PARALLEL_FROM = 1 << 20


#: values per block of rows in :func:`acceleration` (at least one row): 32 MB of temporaries
ACCELERATION_BLOCK = 1 << 22


def _as_replicates(replicates) -> np.ndarray:
    """Bootstrap replicates as float64, at least one along the last axis."""
    try:
        replicates = np.asarray(replicates, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"replicates: expected an array of numbers, got "
                         f"{type(replicates).__name__}") from None
    if replicates.ndim < 1 or replicates.shape[-1] < 1:
        raise ValueError(f"replicates: expected at least one replicate along the last axis, got "
                         f"shape {replicates.shape}")
    return replicates


def bca_interval(replicates: np.ndarray, estimate: np.ndarray,
                 jackknife: np.ndarray | None = None, level: float = 0.95, *,
                 acceleration_value: np.ndarray | None = None,
                 names: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Bias-corrected and accelerated bootstrap interval.

    Parameters
    ----------
    replicates : array (..., B)
        Bootstrap replicates of the statistic.
    estimate : array (...)
        The statistic on the data.
    jackknife : array (..., M), optional
        Leave-one-out values of the statistic.
    level : float
        Confidence level.
    acceleration_value : array (...), optional
        The acceleration, when it was computed already (e.g. from jackknife samples of
        different sizes); otherwise it comes from ``jackknife``.
    names : sequence of str, optional
        Names of the intervals of a 1-D batch (e.g. statistic keys), for the warning below.

    Returns
    -------
    ci_low, ci_high : arrays (...)
        NaN where a replicate is NaN, and where every replicate lies on one side of the
        estimate (infinite ``z0``; a :class:`DegenerateIntervalWarning` says which).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> reps = rng.normal(size=(1, 4000))
    >>> lo, hi = bca_interval(reps, np.array([0.0]), rng.normal(size=(1, 50)))
    >>> bool(-2.2 < lo[0] < -1.8 and 1.8 < hi[0] < 2.2)
    True
    """
    level = check_level(level)
    replicates = _as_replicates(replicates)
    if np.shape(estimate) != replicates.shape[:-1]:
        raise ValueError(f"estimate: expected one estimate per interval, shape "
                         f"{replicates.shape[:-1]} (the replicates without their last axis), "
                         f"got shape {np.shape(estimate)}")
    z0 = bias_correction(replicates, estimate)
    if acceleration_value is not None:
        a = np.asarray(acceleration_value, dtype=np.float64)
    elif jackknife is not None:
        jackknife = np.asarray(jackknife, dtype=np.float64)
        if jackknife.ndim < 1 or jackknife.shape[-1] < 2:
            raise ValueError(f"jackknife: expected at least 2 leave-one-out values along the "
                             f"last axis, got shape {jackknife.shape}")
        a = acceleration(jackknife)
    else:
        raise ValueError("jackknife: give the jackknife values or acceleration_value")
    alphas = bca_levels(z0, a, level)
    ordered = np.sort(replicates, axis=-1)
    with np.errstate(invalid="ignore"):
        bounds = quantile_sorted(ordered, alphas)
    has_nan = ~np.isfinite(replicates).all(axis=-1)
    degenerate = np.isinf(z0) & ~has_nan
    bounds[has_nan | degenerate] = np.nan
    if degenerate.any():
        _warn_degenerate(degenerate, z0, replicates.shape[-1], names)
    _warn_undefined_replicates(has_nan, replicates, estimate, names)
    return bounds[..., 0], bounds[..., 1]


def _warn_undefined_replicates(has_nan: np.ndarray, replicates: np.ndarray, estimate,
                               names: Sequence[str] | None) -> None:
    """Name the intervals that are NaN because some replicates are NaN or infinite while the
    estimate is finite (the statistic is undefined on some resamples, e.g. ``cc`` of a resample
    whose uE are all equal); an undefined estimate is named where it is computed."""
    finite = np.isfinite(np.broadcast_to(np.asarray(estimate, dtype=np.float64),
                                         has_nan.shape))
    flagged = has_nan & finite
    if not flagged.any():
        return
    bad = (~np.isfinite(replicates)).sum(axis=-1)
    which = _which(flagged, names, [f"{int(k)} of {replicates.shape[-1]} replicates"
                                    for k in np.ravel(bad)])
    warnings.warn(
        f"bootstrap interval undefined for {which}: the statistic is NaN or infinite on "
        "these resamples (e.g. cc when a resample's uE or |E| are all equal, zmse when a "
        "bin's errors are all 0); its bounds are NaN",
        DegenerateIntervalWarning, stacklevel=user_stacklevel(),
    )


def _which(flagged: np.ndarray, names: Sequence[str] | None, details: Sequence[str]) -> str:
    """The flagged intervals of a warning: ``name (detail)`` for each when a 1-D result is
    labelled by ``names``, else how many of them."""
    if names is not None and flagged.ndim == 1 and len(names) == flagged.size:
        return ", ".join(f"{name} ({detail})" for name, detail, f
                         in zip(names, details, flagged, strict=True) if f)
    return f"{int(flagged.sum())} of {flagged.size} intervals"


def _warn_degenerate(degenerate: np.ndarray, z0: np.ndarray, b: int,
                     names: Sequence[str] | None) -> None:
    which = _which(degenerate, names, [f"all {'above' if z < 0 else 'below'}"
                                       for z in np.ravel(z0)])
    warnings.warn(
        f"BCa interval undefined for {which}: every one of the {b} bootstrap replicates lies on "
        "one side of the estimate, so z0 is infinite; its bounds are NaN. "
        + ("The bootstrap bias of the statistic is several times its spread."
           if b >= 100 else f"{b} replicates are far too few for a BCa interval."),
        DegenerateIntervalWarning, stacklevel=user_stacklevel(),
    )


def percentile_interval(replicates: np.ndarray, level: float = 0.95
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval (quantiles ``(1 ∓ level) / 2`` of the replicates)."""
    level = check_level(level)
    replicates = _as_replicates(replicates)
    p = np.broadcast_to([(1.0 - level) / 2.0, (1.0 + level) / 2.0],
                        (*replicates.shape[:-1], 2))
    with np.errstate(invalid="ignore"):
        bounds = quantile_sorted(np.sort(replicates, axis=-1), p)
    bounds[~np.isfinite(replicates).all(axis=-1)] = np.nan
    return bounds[..., 0], bounds[..., 1]


def student_interval(values: np.ndarray, level: float = 0.95
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Analytic interval of a mean, ``mean ± t_{(1+level)/2, n-1} s / √n``.

    Returns ``(mean, ci_low, ci_high)`` along the last axis.

    Examples
    --------
    >>> m, lo, hi = student_interval(np.array([1.0, 2.0, 3.0]))
    >>> round(float(lo), 3), round(float(hi), 3)
    (-0.484, 4.484)
    """
    level = check_level(level)
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"values: expected an array of numbers, got {type(values).__name__}") \
            from None
    if values.ndim < 1 or values.shape[-1] < 2:
        raise ValueError(f"values: the Student interval needs at least 2 values along the last "
                         f"axis, got shape {values.shape}")
    check_finite(values, "values", where="positions")
    n = values.shape[-1]
    mean = values.mean(axis=-1)
    half = stats.t.ppf((1.0 + level) / 2.0, n - 1) * values.std(axis=-1, ddof=1) / np.sqrt(n)
    return mean, mean - half, mean + half


def zeta(estimate, reference, ci_low, ci_high, u_ref=0.0):
    """ζ-score of an estimate against a reference value, given the estimate's interval.

    ``ζ = (θ - θ_ref) / (hi - θ)`` if ``θ ≤ θ_ref``, else ``(θ - θ_ref) / (θ - lo)``; with a
    reference uncertainty ``u_ref`` the denominator is ``sqrt(width² + u_ref²)``. Validation
    passes when ``|ζ| ≤ 1``; a zero denominator gives ``±inf`` (or NaN for ``0 / 0``).
    Works elementwise on scalars and NumPy arrays (:func:`xuqcal.zeta` keeps the labels of
    xarray objects).

    Examples
    --------
    >>> round(float(zeta(0.960, 1.0, 0.867, 1.10)), 2)
    -0.29
    >>> round(float(zeta(1.120, 1.0, 1.05, 1.20)), 2)
    1.71
    """
    where = np.where
    below = estimate <= reference
    width = where(below, ci_high - estimate, estimate - ci_low)
    # a zero-width interval (a statistic constant over the resamples) gives ζ = ±inf, an
    # undefined interval NaN: both without NumPy warnings (the callers name the cause)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        denominator = np.sqrt(width**2 + u_ref**2)
        # huge or tiny widths (the square overflows or underflows): hypot, which does not;
        # ordinary values keep the plain formula (bit-identical results)
        lost = ~np.isfinite(denominator) | ((denominator == 0) & ((width != 0) | (u_ref != 0)))
        if np.any(lost):
            denominator = where(lost & np.isfinite(width), np.hypot(width, u_ref), denominator)
        return (estimate - reference) / denominator


def wilson_interval(successes, trials, level: float = 0.95, *, continuity: bool = True):
    """Wilson score interval of a binomial proportion, with continuity correction by default
    (Newcombe 1998, method 4; as R's ``prop.test``).

    Parameters
    ----------
    successes, trials : int or array
        Number of successes and of trials.
    level : float
        Confidence level.
    continuity : bool
        Apply the continuity correction.

    Returns
    -------
    ci_low, ci_high : float or array

    Examples
    --------
    >>> lo, hi = wilson_interval(85, 100)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.7615, 0.9109)
    """
    level = check_level(level)
    n_given = trials
    try:
        x = np.asarray(successes, dtype=np.float64)
        trials = np.asarray(trials, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"successes, trials: expected counts, got {successes!r} and "
                         f"{trials!r}") from None
    if not (np.isfinite(x).all() and np.isfinite(trials).all()):
        raise ValueError("successes, trials: expected finite counts, got NaN or infinite "
                         "values")
    if np.any(trials <= 0) or np.any(x < 0) or np.any(x > trials):
        raise ValueError(f"successes, trials: expected 0 <= successes <= trials and trials > 0, "
                         f"got successes={successes!r}, trials={n_given!r}")
    z = special.ndtri((1.0 + level) / 2.0)
    p = x / trials
    z2 = z * z
    denom = 2.0 * (trials + z2)
    if continuity:
        with np.errstate(invalid="ignore"):
            lo = (2 * trials * p + z2 - 1
                  - z * np.sqrt(z2 - 2 - 1 / trials + 4 * p * (trials * (1 - p) + 1)))
            hi = (2 * trials * p + z2 + 1
                  + z * np.sqrt(z2 + 2 - 1 / trials + 4 * p * (trials * (1 - p) - 1)))
        lo = np.where(p == 0, 0.0, np.maximum(0.0, lo / denom))
        hi = np.where(p == 1, 1.0, np.minimum(1.0, hi / denom))
    else:
        centre = 2 * trials * p + z2
        spread = z * np.sqrt(z2 + 4 * trials * p * (1 - p))
        lo = (centre - spread) / denom
        hi = (centre + spread) / denom
    return lo[()], hi[()]


def coverage_validity(successes, trials, nominal, level: float, tol: float, *,
                      continuity: bool = True):
    """The observed fraction ``successes / trials`` of a coverage, its Wilson interval with
    continuity correction (:func:`wilson_interval`; the plain Wilson interval with
    ``continuity=False``) and whether that interval overlaps ``[nominal - tol, nominal + tol]``
    (the validation rule of P. Pernot, arXiv 2408.13089); NaN and ``False`` where
    ``trials == 0``. Arrays broadcast together.

    Examples
    --------
    >>> f, lo, hi, ok = coverage_validity(np.array([94, 80]), 100, 0.95, 0.95, 0.005)
    >>> f.tolist(), ok.tolist()
    ([0.94, 0.8], [True, False])
    """
    successes, trials, nominal = np.broadcast_arrays(np.asarray(successes),
                                                     np.asarray(trials), np.asarray(nominal))
    counted = trials > 0
    low, high = wilson_interval(np.where(counted, successes, 0), np.where(counted, trials, 1),
                                level, continuity=continuity)
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = np.where(counted, successes / np.where(counted, trials, 1), np.nan)
    low, high = np.where(counted, low, np.nan), np.where(counted, high, np.nan)
    return fraction, low, high, (low <= nominal + tol) & (nominal - tol <= high)
