"""Coverage factors and counts of interval-based validation (METHODS §9), on NumPy arrays.

The prediction-interval coverage probability (PICP) at level ``p`` is the fraction of points
with ``|Z| <= k_p``, ``Z = E / uE``. The coverage factor ``k_p`` is the half-width of the
central ``p``-interval of a unit-variance distribution: the normal one by default
(``Φ⁻¹((1 + p) / 2)``: 1.0 and 1.96 style), or a unit-variance Student-t(ν) whose ν is fitted
to the z-scores (:func:`fit_student_nu`: a scaled F(1, ν) fit of Z², the distribution of the
square of a scaled Student-t). Heavy tails then widen ``k_p`` instead of making the normal
``k_p`` over-cover (1.96 covers 0.9574 of a unit-variance t(3)).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from xuqcal._lazy import lazy_module
from xuqcal.core.checks import check_level
from xuqcal.core.intervals import zeta
from xuqcal.core.scores import student_scale
from xuqcal.core.threads import cores, numpy_pool

_stats = lazy_module("scipy.stats")

#: Largest fitted ν reported (beyond it a Student-t is a normal distribution to every digit
#: that matters for a coverage factor: k_0.95 differs from 1.95996 by less than 4e-8).
NU_MAX = 1e6


def normal_coverage_factor(level: float | np.ndarray) -> float | np.ndarray:
    """Half-width ``Φ⁻¹((1 + p) / 2)`` of the central ``p``-interval of a standard normal
    (the one definition: PICP's factor, the ``uE`` of a given interval, the conformal
    ``gaussian_quantile``). A float for a scalar level, elementwise for an array of levels.

    Examples
    --------
    >>> round(normal_coverage_factor(0.95), 5), round(normal_coverage_factor(0.683), 4)
    (1.95996, 1.0006)
    >>> normal_coverage_factor(np.array([0.683, 0.95])).round(4).tolist()
    [1.0006, 1.96]
    """
    if np.ndim(level):
        levels = np.asarray(level, dtype=np.float64)
        if not np.all((levels > 0.0) & (levels < 1.0)):
            raise ValueError(f"level: expected levels in (0, 1) such as 0.95, got "
                             f"{levels.tolist()}")
        return special.ndtri((1.0 + levels) / 2.0)
    return float(special.ndtri((1.0 + check_level(level)) / 2.0))


def student_coverage_factor(level: float, nu: float) -> float:
    """Half-width of the central ``p``-interval of a unit-variance Student-t(ν),
    ``t_{(1 + p) / 2, ν} sqrt((ν - 2) / ν)`` (ν > 2: the variance of a Student-t is finite
    only then).

    Examples
    --------
    >>> round(student_coverage_factor(0.95, 6), 4), round(student_coverage_factor(0.95, 1e6), 4)
    (1.9979, 1.96)
    """
    level = check_level(level)
    if not (isinstance(nu, int | float | np.number) and not isinstance(nu, bool)) \
            or not float(nu) > 2.0:
        raise ValueError(f"nu: a unit-variance Student-t needs ν > 2 (finite variance), got "
                         f"{nu!r}")
    nu = float(nu)
    return float(_stats.t.ppf((1.0 + level) / 2.0, nu) * student_scale(1.0, nu))


#: The methods of :func:`fit_student_nu`: ``"ml"`` (maximum likelihood, xuqcal's) and ``"ks"``
#: (least Kolmogorov-Smirnov distance, the R code of P. Pernot's 2024_PICP study).
NU_METHODS = ("ml", "ks")
#: Start of the ``"ks"`` fit (2024_PICP: ``start = list(df = 10, sigma = 1)``).
KS_START = (10.0, 1.0)


def fit_student_nu(z: np.ndarray, method: str = "ml") -> float:
    """ν of a zero-centred, scaled Student-t fitted to z-scores, from Z²
    (``Z² / s² ~ F(1, ν)`` when ``Z / s ~ t(ν)``): the ν of the unit-variance Student-t
    coverage factor of the ``picpt`` statistics (:func:`student_coverage_factor`).

    ``method="ml"`` (default, xuqcal's): the maximum-likelihood fit of a scaled F(1, ν) to
    Z²; the ν of the ``picpt`` statistics and of the ``tfit`` generator
    (:func:`xuqcal.core.generators.fitted_nu`). ``method="ks"``: the fit of P. Pernot's
    2024_PICP study (R, ``fitdistrplus::fitdist(Z2, "f_s", method = "mge", gof = "KS",
    start = list(df = 10, sigma = 1))``): (ν, s²) minimise the Kolmogorov-Smirnov distance
    ``max_i max(|F_i - i/n|, |F_i - (i - 1)/n|)`` between the scaled F(1, ν) CDF ``F_i`` at
    the sorted Z² and the empirical CDF, by R's ``optim`` Nelder-Mead from (10, 1)
    (:func:`nelder_mead_r`); no bounds (a trial point with ν <= 0 or s² <= 0 is a failed
    evaluation). The two differ on heavy-tailed data: ν 4.9 ("ml") against 20.2 ("ks") on the
    logP 150k test set.

    This ν is not the ``nu_eff`` of :func:`xuqcal.describe`, nor the fitted ν of
    :func:`xuqcal.proper_scores` and :func:`xuqcal.pit`: those are the maximum-likelihood fit
    of a *shifted* and scaled Student-t to Z
    (:func:`xuqcal.analysis.diagnostics.student_t_fit`), whose location is free; the values
    differ (on the shared set 2, Perovskite RF: 3.317 here, 3.255 there).

    Capped at :data:`NU_MAX` (normal data); NaN when the fit is undefined (fewer than 3
    points, or Z² constant or zero).

    Examples
    --------
    >>> import xuqcal
    >>> rng = np.random.default_rng(0)
    >>> nu = fit_student_nu(rng.standard_t(4, size=20_000))
    >>> bool(3.5 < nu < 4.6)
    True
    >>> nu = fit_student_nu(rng.standard_t(4, size=2_000), method="ks")
    >>> bool(3 < nu < 6)
    True
    """
    return fit_scaled_student(z, method)[0]


def fit_scaled_student(z: np.ndarray, method: str = "ml") -> tuple[float, float]:
    """``(ν, s)`` of the zero-centred, scaled Student-t ``Z / s ~ t(ν)`` fitted to z-scores
    from Z² (``Z² / s² ~ F(1, ν)``), by the method of :func:`fit_student_nu` (which returns
    its ν): the one fit of this distribution (also the reference of the z-score QQ and PP
    figures, :mod:`xuqcal.plot.errors`). ``(nan, nan)`` when the fit is undefined.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> nu, s = fit_scaled_student(2.0 * rng.standard_t(5, size=20_000))
    >>> bool(4 < nu < 6.5), bool(1.8 < s < 2.2)
    (True, True)
    """
    if method not in NU_METHODS:
        raise ValueError(f"method: expected one of {', '.join(map(repr, NU_METHODS))}, got "
                         f"{method!r}")
    z2 = np.square(np.asarray(z, dtype=np.float64))
    z2 = z2[np.isfinite(z2)]
    if z2.size < 3 or not np.any(z2 > 0) or np.all(z2 == z2[0]):
        return math.nan, math.nan
    if method == "ks":
        nu, s2 = _ks_fit(z2)
        return float(min(nu, NU_MAX)), math.sqrt(s2)
    scale = float(np.median(z2)) / float(_stats.f.median(1, 10.0)) or float(np.mean(z2))
    # the optimiser's trial points overflow or divide by zero: NumPy's floating-point errors,
    # silenced per thread (tfit's fit runs in a thread beside validate's first rounds,
    # :func:`xuqcal.validate`; warnings.catch_warnings would change the process's filters)
    with np.errstate(all="ignore"):
        _, nu, _, s2 = _scaled_f().fit(z2, 10.0, f0=1.0, floc=0.0, scale=scale)
    return float(min(nu, NU_MAX)), math.sqrt(s2)


#: Points of one thread's share of the log-likelihood in the ``"ml"`` fit (:func:`_scaled_f`);
#: with fewer than two shares of points, or one core, scipy's own evaluation runs.
LOGPDF_SHARE = 1 << 16


@functools.cache
def _scaled_f():
    """scipy's F distribution (``scipy.stats.f``) whose negative log-likelihood, the objective
    of ``fit``'s Nelder-Mead, standardizes the points and evaluates their log-density in
    shares of :data:`LOGPDF_SHARE` points on the cores (NumPy's functions release the GIL),
    elementwise as scipy does, and adds it as scipy does, in one ``np.sum`` of the whole array:
    every evaluation, hence the optimiser's path and the fitted ν, is scipy's bit for bit.
    Its 262 evaluations on 2·10^6 points took 17-18 s on one core
    (``benchmarks/measured/validate-fit-issue26-h200-2026-11-27.json``).

    The mirror of scipy's ``rv_continuous._nnlf_and_penalty`` is checked against it on first
    use (:func:`_mirrors_scipy`); where it differs (another scipy), or a point is outside the
    support (scipy drops it before the density), scipy's own evaluation runs.
    """
    from scipy.stats import _distn_infrastructure as infrastructure

    sum_finite = getattr(infrastructure, "_sum_finite", None)
    log_xmax = getattr(infrastructure, "_LOGXMAX", None)

    class SharedF(type(_stats.f)):
        def _penalized_nnlf(self, theta, x):
            shares = min(cores(), getattr(x, "size", 0) // LOGPDF_SHARE)
            if (self._scipy or sum_finite is None or log_xmax is None or shares < 2
                    or type(x) is not np.ndarray or x.ndim != 1 or x.dtype != np.float64):
                return super()._penalized_nnlf(theta, x)
            # scipy's lines (rv_continuous._penalized_nnlf and _nnlf_and_penalty), the
            # standardized points, their support and their log-density made in shares
            loc, scale, args = self._unpack_loc_scale(theta)
            if not self._argcheck(*args) or scale <= 0:
                return np.inf
            n_log_scale = len(x) * np.log(scale)
            logpdf = np.empty_like(x)
            edges = np.linspace(0, x.size, shares + 1).astype(np.int64)

            def share(k):
                part = (x[edges[k]:edges[k + 1]] - loc) / scale
                outside = np.count_nonzero(~self._support_mask(part, *args))
                density = logpdf[edges[k]:edges[k + 1]]
                density[:] = self._logpdf(part, *args)
                return outside, density.size - np.count_nonzero(np.isfinite(density))

            counts = list(numpy_pool().map(share, range(shares)))
            if any(outside for outside, _ in counts):  # scipy drops them before the density
                return super()._penalized_nnlf(theta, x)
            if any(infinite for _, infinite in counts):
                total, bad = sum_finite(logpdf)
            else:  # sum_finite's sum of the finite values: here all of them, in order
                total, bad = np.sum(logpdf), 0
            # its sums start from 0, and no point was outside the support
            return (-(0 + total) + (0 + bad) * log_xmax * 100) + n_log_scale

    shared = SharedF(a=0.0, name="f")
    shared._scipy = False
    shared._scipy = not _mirrors_scipy(shared)
    return shared


def _mirrors_scipy(shared) -> bool:
    """Whether ``shared``'s negative log-likelihood is ``scipy.stats.f``'s bit for bit on a
    test sample of two shares (the points of a scaled F(1, 5), with one zero: an infinite
    density), at three parameter points."""
    rng = np.random.default_rng(0)
    x = 3.0 * rng.standard_t(5.0, 2 * LOGPDF_SHARE + 3) ** 2
    x[7] = 0.0
    with np.errstate(all="ignore"):
        return all(shared._penalized_nnlf(theta, x) == _stats.f._penalized_nnlf(theta, x)
                   for theta in ((1.0, 5.0, 0.0, 3.0), (1.0, 10.0, 0.0, 2.5),
                                 (1.0, 4000.0, 0.0, 1.0)))


def ks_distance_scaled_f(z2_sorted: np.ndarray, nu: float, scale: float) -> float:
    """Kolmogorov-Smirnov distance between the sorted values ``z2_sorted`` and a scaled
    F(1, ν) of scale ``scale`` (the objective of :func:`fit_student_nu` ``(method="ks")``;
    NaN for ν <= 0, or 0 / 0 when ``scale = 0``).

    Examples
    --------
    >>> round(ks_distance_scaled_f(np.array([0.1, 0.5, 2.0]), 10.0, 1.0), 4)
    0.2417
    """
    n = z2_sorted.size
    if not nu > 0:  # R's pf: NaN for df <= 0
        return math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        x = z2_sorted / scale
        # pf(x, 1, df): 0 at and below 0, 1 at +inf, NaN for 0 / 0
        cdf = np.where(x > 0, special.fdtr(1.0, nu, np.where(np.isfinite(x) & (x > 0), x, 1.0)),
                       np.where(np.isnan(x), np.nan, 0.0))
        cdf = np.where(np.isposinf(x), 1.0, cdf)
    upper = np.arange(1, n + 1) / n
    lower = np.arange(0, n) / n
    return float(np.max(np.maximum(np.abs(cdf - upper), np.abs(cdf - lower))))


def _ks_fit(z2: np.ndarray) -> tuple[float, float]:
    """(ν, s²) of the ``"ks"`` fit of :func:`fit_student_nu` on the finite values ``z2``."""
    s = np.sort(z2)
    par, _ = nelder_mead_r(lambda p: ks_distance_scaled_f(s, p[0], p[1]), KS_START)
    return float(par[0]), float(par[1])


def nelder_mead_r(fn, start, *, maxit: int = 500, reltol: float = 1.4901161193847656e-08,
                  alpha: float = 1.0, beta: float = 0.5, gamma: float = 2.0
                  ) -> tuple[np.ndarray, float]:
    """Minimise ``fn`` by the Nelder-Mead simplex of R's ``optim`` (its defaults: ``maxit``
    500, ``reltol`` sqrt(machine epsilon), reflection 1, contraction 0.5, expansion 2), step
    for step: the initial simplex adds ``0.1 max|start_i|`` to one coordinate at a time,
    non-finite values count as 1e35, and the search stops when the worst and best values of
    the simplex differ by at most ``reltol (|f(start)| + reltol)``, when a shrink does not
    reduce the simplex, or after ``maxit`` evaluations. Returns ``(best point, its value)``.

    Examples
    --------
    >>> par, value = nelder_mead_r(lambda p: (p[0] - 1) ** 2 + (p[1] + 2) ** 2, (0.0, 0.0))
    >>> np.round(par, 3).tolist(), value < 1e-6
    ([1.0, -2.0], True)
    """
    big = 1.0e35

    def f(x):
        value = fn(x)
        return value if math.isfinite(value) else big

    start = np.asarray(start, dtype=np.float64)
    n = start.size
    f0 = fn(start)
    if not math.isfinite(f0):
        raise ValueError("start: the function cannot be evaluated at the initial parameters")
    convtol = reltol * (abs(f0) + reltol)
    step = max(0.1 * float(np.max(np.abs(start))), 0.0) or 0.1
    simplex = np.tile(start, (n + 1, 1))
    values = np.empty(n + 1)
    values[0] = f0
    size = 0.0
    for j in range(1, n + 1):
        trystep = step
        while simplex[j, j - 1] == start[j - 1]:
            simplex[j, j - 1] = start[j - 1] + trystep
            trystep *= 10.0
        size += trystep
    oldsize = size
    count = 1
    best = 0
    recompute = True
    while True:
        if recompute:
            for j in range(n + 1):
                if j != best:
                    values[j] = f(simplex[j])
                    count += 1
            recompute = False
        low = values[best]
        high_value, worst = low, best
        for j in range(n + 1):
            if j != best:
                if values[j] < low:
                    best, low = j, values[j]
                if values[j] > high_value:
                    worst, high_value = j, values[j]
        if high_value <= low + convtol:
            break
        centroid = -simplex[worst]  # summed in R's order: minus the worst, then every vertex
        for j in range(n + 1):
            centroid = centroid + simplex[j]
        centroid = centroid / n
        trial = (1.0 + alpha) * centroid - alpha * simplex[worst]
        reflected = f(trial)
        count += 1
        if reflected < low:
            expanded_point = gamma * trial + (1.0 - gamma) * centroid
            expanded = f(expanded_point)
            count += 1
            if expanded < reflected:
                simplex[worst], values[worst] = expanded_point, expanded
            else:
                simplex[worst], values[worst] = trial, reflected
        else:
            if reflected < high_value:
                simplex[worst], values[worst] = trial, reflected
            contracted_point = (1.0 - beta) * simplex[worst] + beta * centroid
            contracted = f(contracted_point)
            count += 1
            if contracted < values[worst]:
                simplex[worst], values[worst] = contracted_point, contracted
            elif reflected >= high_value:
                recompute = True
                size = 0.0
                for j in range(n + 1):
                    if j != best:
                        simplex[j] = beta * (simplex[j] - simplex[best]) + simplex[best]
                        size += float(np.sum(np.abs(simplex[j] - simplex[best])))
                if size < oldsize:
                    oldsize = size
                else:
                    break
        if count > maxit:
            break
    return simplex[best].copy(), float(values[best])


def count_covered(z: np.ndarray, factor: float) -> int:
    """Number of points with ``|Z| <= k`` (NaN z-scores are not covered).

    Examples
    --------
    >>> count_covered(np.array([0.5, -1.5, 2.5, np.nan]), 1.96)
    2
    """
    with np.errstate(invalid="ignore"):
        return int(np.count_nonzero(np.abs(np.asarray(z, dtype=np.float64)) <= factor))


def band_zeta(estimate, nominal, tol, ci_low, ci_high):
    """ζ of a coverage against the band ``[p - tol, p + tol]``: 0 inside the band, else the
    ζ-score (METHODS §4) against the nearer edge of the band, so that ``|ζ| <= 1`` exactly
    when the interval ``[ci_low, ci_high]`` overlaps the band (the validation rule of
    P. Pernot, arXiv 2408.13089); ``tol = 0`` gives the ordinary ζ against ``p``.
    Elementwise on scalars and arrays.

    Examples
    --------
    >>> float(band_zeta(0.948, 0.95, 0.005, 0.94, 0.956))
    0.0
    >>> round(float(band_zeta(0.93, 0.95, 0.005, 0.92, 0.94)), 3)
    -1.5
    """
    estimate = np.asarray(estimate, dtype=np.float64)
    nominal = np.asarray(nominal, dtype=np.float64)
    # the nearer edge of the band is the reference of the ordinary zeta (METHODS §4)
    edge = np.clip(estimate, nominal - tol, nominal + tol)
    z = np.where(edge == estimate, 0.0, zeta(estimate, edge, ci_low, ci_high))
    return np.where(np.isnan(estimate) | np.isnan(ci_low) | np.isnan(ci_high), np.nan, z)[()]


#: The 1σ level of interval-based validation and the target 2024_PICP validates it against
#: (``|Z| <= 1`` against 0.67 ± 0.005).
PERNOT2024_TARGETS = {0.683: 0.67}


def coverage_rule(coverage_level: float, rule: str | None = None) -> tuple[float, float]:
    """``(k, target)``: the normal coverage factor of a PICP or local coverage at
    ``coverage_level`` (``p``) and the value its interval is validated against (the band
    ``[target - tol, target + tol]``).

    ``rule="quantile"`` (xuqcal, ``defaults.CONVENTIONS["xuqcal"]``): ``k = Φ⁻¹((1 + p) / 2)``
    (:func:`normal_coverage_factor`, 1.00064 at 0.683, 1.95996 at 0.95) against ``p``.
    ``rule="pernot2024"`` (P. Pernot's 2024_PICP study and ErrViewLib ``plotLCP`` calls):
    ``k`` rounded to two decimals as the R code writes it (``|Z| <= 1``, ``1.96``, ``2.58``)
    against ``p``, except at ``p = 0.683``, validated against 0.67 (the study's ``picp67``).
    ``None``: from the option ``conventions`` (:func:`xuqcal.options.convention`).

    Examples
    --------
    >>> k, target = coverage_rule(0.683)
    >>> round(k, 5), target
    (1.00064, 0.683)
    >>> coverage_rule(0.683, "pernot2024"), coverage_rule(0.95, "pernot2024")
    ((1.0, 0.67), (1.96, 0.95))
    """
    from xuqcal.options import convention

    rule = convention("coverage_rule", rule)
    p = check_level(coverage_level, "coverage_level")
    k = normal_coverage_factor(p)
    if rule == "quantile":
        return k, p
    # (a level read from a key, 68.3 / 100, is 0.6829999999999999)
    return round(k, 2), PERNOT2024_TARGETS.get(round(p, 10), p)


def fraction_valid_test(n_valid, n_bins=None, level: float | None = None) -> dict:
    """Exact binomial test of the fraction of valid bins of a local analysis (ErrViewLib's
    ``testCovIntProb``): is the number of bins whose interval meets its target compatible
    with ``Binomial(n_bins, level)``, ``level`` the confidence level of the per-bin intervals?

    Parameters
    ----------
    n_valid : int or xarray.Dataset
        The number of valid bins, or a result of :func:`xuqcal.curves.local_coverage` or
        :func:`xuqcal.local` (its ``valid`` over ``bin``: valid bins among the non-empty
        bins with a defined interval). ``testCovIntProb`` counts a local coverage bin as
        valid when its interval contains the target: a ``local_coverage`` result with
        ``tol=0``.
    n_bins : int, optional
        The number of bins tested (with an integer ``n_valid``).
    level : float, optional
        The confidence level of the per-bin intervals: the probability of a valid bin under
        calibration (R's ``prob``). Default: the attribute ``level`` of a result, else
        0.95 (R's default).

    Returns
    -------
    dict
        ``successes``, ``trials``, ``estimate`` (the fraction), ``ci_low``, ``ci_high``
        (Clopper–Pearson interval at 0.95, as R's ``binom.test``), ``p_value`` (two-sided,
        R's rule: the outcomes no more probable than the observed one), ``level``.

    Examples
    --------
    >>> t = fraction_valid_test(15, 20)
    >>> t["estimate"], round(t["p_value"], 4), round(t["ci_low"], 4)
    (0.75, 0.0026, 0.509)
    """
    if level is None:
        level = n_valid.attrs.get("level", 0.95) if hasattr(n_valid, "attrs") else 0.95
    level = check_level(level, "level")
    if hasattr(n_valid, "data_vars"):
        if n_bins is not None:
            raise ValueError("n_bins: give it with a number of valid bins, not with a result "
                             "(its bins are counted)")
        if "valid" not in n_valid.data_vars or n_valid["valid"].dims != ("bin",):
            raise ValueError("n_valid: expected a local_coverage or local result with "
                             "'valid' over 'bin' (one data set, one level)")
        valid = np.asarray(n_valid["valid"].values, dtype=bool)
        tested = np.ones(valid.size, dtype=bool)
        for name in ("count", "ci_low", "ci_high"):
            if name in n_valid.data_vars and n_valid[name].dims == ("bin",):
                values = np.asarray(n_valid[name].values, dtype=np.float64)
                tested &= np.isfinite(values) & ((values > 0) if name == "count" else True)
        n_valid, n_bins = int((valid & tested).sum()), int(tested.sum())
    for name, value in (("n_valid", n_valid), ("n_bins", n_bins)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"{name}: expected a non-negative integer, got {value!r}")
    if n_bins < 1 or n_valid > n_bins:
        raise ValueError(f"n_valid, n_bins: expected 0 <= n_valid <= n_bins and n_bins >= 1, "
                         f"got {n_valid} and {n_bins}")
    result = _stats.binomtest(int(n_valid), int(n_bins), level)
    ci = result.proportion_ci(confidence_level=0.95, method="exact")
    return {"successes": int(n_valid), "trials": int(n_bins),
            "estimate": int(n_valid) / int(n_bins), "ci_low": float(ci.low),
            "ci_high": float(ci.high), "p_value": float(result.pvalue), "level": level}
