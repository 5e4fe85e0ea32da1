"""Proper scores and the probability integral transform (PIT), point by point (METHODS §9).

Plain NumPy/SciPy functions without labels: the per-point functions broadcast their arguments
with NumPy's rules, the ensemble functions work along the last axis (the member axis), the
uniformity test along the last axis (the points of one set). The labelled, lazy layer is
:mod:`xuqcal.analysis.probabilistic`.

The predictive distribution of an error ``E`` with standard uncertainty ``uE`` is the one of
the generative model of METHODS §1, ``E = uE * eps``: ``N(0, uE²)`` for a normal ``eps``, or a
Student-t(ν) *scaled to standard deviation uE* (scale ``s = uE sqrt((ν - 2) / ν)``, ν > 2) for a
heavy-tailed one. The PIT of ``E`` is that distribution's CDF at ``E``. (With ``E`` defined as
``prediction - observation``, the PIT of the *observation* is one minus this value: the
histogram is mirrored and the uniformity tests are unchanged.)

Missing values and bad values, the same rules everywhere:

- **NaN is a missing value**: a per-point result is NaN where an argument is NaN; NaN members
  of an ensemble are ignored (each forecast uses its present members); NaN PIT values are left
  out of a uniformity test.
- **Invalid values raise** a ``ValueError`` that names the argument, the problem and the
  positions (flat positions for 1-D arrays, index tuples otherwise): infinite values, ``uE <= 0``,
  ``nu <= 2``, ``lower > upper``, PIT values outside ``[0, 1]``, probabilities outside ``(0, 1)``.

References: Gneiting & Raftery (2007), *Strictly proper scoring rules, prediction, and
estimation*, JASA 102, 359; Ferro (2014), *Fair scores for ensemble forecasts*, QJRMS 140,
1917; Jordan, Krüger & Lerch (2019), *Evaluating probabilistic forecasts with scoringRules*,
J. Stat. Softw. 90 (the closed form of the Student-t CRPS).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np
from scipy import special

from xuqcal._lazy import lazy_module
from xuqcal.core import defaults
from xuqcal.core import random as _random
from xuqcal.core.binning import FewPointsPerBinWarning
from xuqcal.core.checks import (
    check_count,
    check_coverage_level,
    check_level,
    check_seed,
    user_stacklevel,
)

stats = lazy_module("scipy.stats")

__all__ = [
    "UniformityTest",
    "crps_ensemble",
    "crps_normal",
    "crps_student",
    "interval_score",
    "nll_student",
    "pinball_loss",
    "pit_ensemble",
    "pit_histogram_band",
    "pit_normal",
    "pit_student",
    "pit_uniformity",
    "student_scale",
]

#: Least expected count per bin for which the chi-square p-value (its asymptotic
#: distribution) is trusted; below it :func:`pit_uniformity` warns.
MIN_EXPECTED_COUNT = 5
#: The purpose of the random stream of :func:`pit_ensemble` (see :mod:`xuqcal.core.random`).
PIT_ENSEMBLE_PURPOSE = "pit:ensemble"

_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


# --------------------------------------------------------------------------------- checks


def _positions(mask: np.ndarray, limit: int = 5) -> str:
    """``positions 3, 7`` (1-D) or ``positions (0, 3), (2, 1)`` of the true values of
    ``mask``, the first ``limit`` of them."""
    found = np.argwhere(mask)
    shown = [str(int(p[0])) if mask.ndim == 1 else str(tuple(int(i) for i in p))
             for p in found[:limit]]
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return f"positions {', '.join(shown)}{more}"


def _as_array(values: Any, name: str) -> np.ndarray:
    """``values`` as a float64 array; refuses booleans, complex numbers, text and objects, and
    infinite values (NaN is allowed: a missing value)."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected real numbers, got {values!r}") from None
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name}: expected real numbers, got values of dtype {array.dtype}")
    array = array.astype(np.float64, copy=False)
    infinite = np.isinf(array)
    if infinite.any():
        raise ValueError(f"{name}: {int(infinite.sum())} of {array.size} values are infinite "
                         f"({_positions(infinite)}); use NaN for a missing value")
    return array


def _check_uE(uE: np.ndarray, name: str = "uE") -> None:
    bad = ~(uE > 0) & ~np.isnan(uE)
    if bad.any():
        raise ValueError(f"{name}: {int(bad.sum())} of {uE.size} values are not positive "
                         f"({_positions(bad)})")


def _check_nu(nu: Any, name: str = "nu") -> np.ndarray:
    array = _as_array(nu, name)
    bad = ~(array > 2) & ~np.isnan(array)
    if bad.any():
        first = float(array[bad].ravel()[0])
        raise ValueError(f"{name}: expected degrees of freedom > 2 (a Student-t whose standard "
                         f"deviation is uE needs a finite variance), got {first!r}"
                         + (f" ({int(bad.sum())} values <= 2, {_positions(bad)})"
                            if array.ndim else ""))
    return array


def _broadcast(*named: tuple[str, np.ndarray]) -> list[np.ndarray]:
    try:
        return list(np.broadcast_arrays(*(a for _, a in named)))
    except ValueError:
        shapes = ", ".join(f"{n} {a.shape}" for n, a in named)
        raise ValueError(f"{', '.join(n for n, _ in named)}: shapes do not broadcast "
                         f"({shapes})") from None


def _scalar(result: np.ndarray) -> Any:
    """A 0-d result as a NumPy scalar, any other as the array."""
    return result[()] if result.ndim == 0 else result


def _normal_inputs(E: Any, uE: Any) -> tuple[np.ndarray, np.ndarray]:
    """``E`` and ``uE`` checked and broadcast together (a normal predictive)."""
    E, uE = _broadcast(("E", _as_array(E, "E")), ("uE", _as_array(uE, "uE")))
    _check_uE(uE)
    return E, uE


def _student_inputs(E: Any, uE: Any, nu: Any
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``E``, ``uE`` and ``nu`` checked and broadcast together, and the scale
    ``s = uE sqrt((ν - 2) / ν)`` of the Student-t(ν) whose standard deviation is ``uE``."""
    E, uE, nu = _broadcast(("E", _as_array(E, "E")), ("uE", _as_array(uE, "uE")),
                           ("nu", _check_nu(nu)))
    _check_uE(uE)
    with np.errstate(invalid="ignore"):  # a NaN ν gives NaN
        return E, uE, nu, uE * np.sqrt((nu - 2.0) / nu)


def student_scale(uE: Any, nu: Any) -> Any:
    """Scale ``s = uE sqrt((ν - 2) / ν)`` of the Student-t(ν) whose standard deviation is
    ``uE``.

    Examples
    --------
    >>> float(student_scale(2.0, 6.0)) == 2.0 * (4.0 / 6.0) ** 0.5
    True
    """
    uE = _as_array(uE, "uE")
    return _scalar(np.asarray(_student_inputs(np.zeros_like(uE), uE, nu)[3]))


# ---------------------------------------------------------------------------------- CRPS


def crps_normal(E: Any, uE: Any) -> Any:
    """CRPS of the predictive ``N(0, uE²)`` for the error ``E``, in closed form.

    ``CRPS = uE (z (2 Φ(z) - 1) + 2 φ(z) - 1/√π)`` with ``z = E / uE`` (Gneiting & Raftery
    2007), computed as ``E erf(z/√2) + uE (2 φ(z) - 1/√π)``, which keeps its accuracy for any
    ``z``. Same unit as ``E``; lower is better; ``uE (√2 - 1)/√π`` at ``E = 0``.

    Parameters
    ----------
    E, uE : array_like
        Errors and standard uncertainties (broadcast together; NaN gives NaN).

    Returns
    -------
    numpy.ndarray or numpy.float64

    Raises
    ------
    ValueError
        For infinite values or ``uE <= 0``, naming the argument and the positions.

    Examples
    --------
    >>> round(float(crps_normal(0.0, 1.0)), 6)  # (sqrt(2) - 1) / sqrt(pi)
    0.233695
    >>> crps_normal([0.5, -2.0], [1.0, 2.0]).round(4).tolist()
    [0.3314, 1.2049]
    """
    E, uE = _normal_inputs(E, uE)
    with np.errstate(invalid="ignore"):
        z = E / uE
        result = E * special.erf(z / math.sqrt(2.0)) + uE * (2.0 * stats.norm.pdf(z)
                                                             - _INV_SQRT_PI)
    return _scalar(np.asarray(result))


def _student_constant(nu: np.ndarray) -> np.ndarray:
    """``2 √ν B(½, ν - ½) / ((ν - 1) B(½, ν/2)²)`` of the Student-t CRPS, through log-beta
    functions (no overflow for large ν; its limit is ``1/√π``)."""
    with np.errstate(invalid="ignore"):
        log_ratio = special.betaln(0.5, nu - 0.5) - 2.0 * special.betaln(0.5, nu / 2.0)
        return 2.0 * np.sqrt(nu) * np.exp(log_ratio) / (nu - 1.0)


def _student_logpdf(z: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """``log f_ν(z)`` of the standard Student-t: :func:`scipy.stats.t.logpdf`, except for
    ``|z| > 1e150``, whose ``z²`` would overflow there, where ``log(1 + z²/ν)`` is written
    ``2 log|z| - log ν + log1p(ν / z²)`` (the same value, exactly)."""
    huge = np.abs(z) > 1e150
    if not huge.any():
        return stats.t.logpdf(z, nu)
    z, nu, huge = np.broadcast_arrays(z, nu, huge)
    shape = z.shape
    z, nu, huge = np.ravel(z), np.ravel(nu), np.ravel(huge)
    result = np.asarray(stats.t.logpdf(np.where(huge, 0.0, z), nu), dtype=np.float64)
    zh, nuh = z[huge], nu[huge]
    log_term = 2.0 * np.log(np.abs(zh)) - np.log(nuh) + np.log1p(nuh / zh / zh)
    result[huge] = (special.gammaln((nuh + 1.0) / 2.0) - special.gammaln(nuh / 2.0)
                    - 0.5 * np.log(nuh * math.pi) - (nuh + 1.0) / 2.0 * log_term)
    return result.reshape(shape)


def crps_student(E: Any, uE: Any, nu: Any) -> Any:
    """CRPS of the predictive Student-t(ν) whose *standard deviation* is ``uE``, closed form.

    With the scale ``s = uE sqrt((ν - 2)/ν)`` and ``z = E / s``::

        CRPS = s (z (2 F_ν(z) - 1) + 2 f_ν(z) (ν + z²)/(ν - 1)
                  - 2 √ν B(½, ν - ½) / ((ν - 1) B(½, ν/2)²))

    (Gneiting & Raftery 2007; the formula of ``scoringRules``/``scoringrules``), with ``F_ν``
    and ``f_ν`` the CDF and density of the standard Student-t (``scipy.stats.t``), ``B`` the
    beta function (as log-beta, ``scipy.special.betaln``) and ``f_ν(z) (ν + z²)`` through
    logarithms, so that no square overflows. Tends to :func:`crps_normal` as ν grows.

    Parameters
    ----------
    E, uE : array_like
        Errors and standard uncertainties.
    nu : float or array_like
        Degrees of freedom, > 2 (broadcast with ``E`` and ``uE``; NaN gives NaN).

    Returns
    -------
    numpy.ndarray or numpy.float64

    Raises
    ------
    ValueError
        For infinite values, ``uE <= 0`` or ``nu <= 2``.

    Examples
    --------
    >>> round(float(crps_student(0.5, 1.0, 5.0)), 4)
    0.3168
    >>> bool(abs(crps_student(0.5, 1.0, 1e8) - crps_normal(0.5, 1.0)) < 1e-7)
    True
    """
    E, uE, nu, s = _student_inputs(E, uE, nu)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = E / s
        t = stats.t(nu)
        # f(z) (ν + z²) = exp(log f(z) + log(ν + z²)), log(ν + z²) = logaddexp(log ν, 2 log|z|)
        density_term = np.exp(_student_logpdf(z, nu)
                              + np.logaddexp(np.log(nu), 2.0 * np.log(np.abs(z))))
        result = s * (z * (2.0 * t.cdf(z) - 1.0) + 2.0 * density_term / (nu - 1.0)
                      - _student_constant(nu))
    return _scalar(np.asarray(result))


def _present_members(members: Any, observed: Any, name: str = "members",
                     what: str = "the members") -> tuple[np.ndarray, np.ndarray]:
    """The members (at least 1-D, float64) and the observations broadcast to the members'
    leading shape (``name``: the argument named in messages, ``what``: its last axis)."""
    members = _as_array(members, name)
    if members.ndim == 0:
        raise ValueError(f"{name}: expected an array whose last axis holds {what}, got a "
                         "scalar")
    observed = _as_array(observed, "observed")
    try:
        observed = np.broadcast_to(observed, members.shape[:-1])
    except ValueError:
        raise ValueError(f"observed, {name}: the shape of observed {observed.shape} does not "
                         f"broadcast to the leading shape {members.shape[:-1]} of {name} "
                         f"({what} are along the last axis)") from None
    return members, observed


def crps_ensemble(members: Any, observed: Any, *, fair: bool = True) -> Any:
    """CRPS of an ensemble forecast (members along the last axis) for observed values.

    With the ``m`` present members ``x_i`` of one forecast and the observation ``y``::

        fair:      mean_i |x_i - y| - ΣΣ_{i,j} |x_i - x_j| / (2 m (m - 1))
        standard:  mean_i |x_i - y| - ΣΣ_{i,j} |x_i - x_j| / (2 m²)

    The standard one is the CRPS of the ensemble's empirical distribution; the fair one
    (Ferro 2014) is its unbiased version: its expectation over ensembles of ``m`` draws from a
    distribution F is the CRPS of F itself (the standard one exceeds it by
    ``E|X - X'| / (2m)``), so ensembles of different sizes can be compared. The double sum is
    computed in O(m log m) from the sorted members,
    ``ΣΣ |x_i - x_j| = 2 Σ_k (2k - m + 1) x_(k)`` (``k = 0 … m-1``), not in O(m²).

    NaN rules: NaN members are missing (each forecast uses its ``m`` present members); the
    result is NaN where ``observed`` is NaN, where no member is present, and, for the fair
    score, where only one is.

    Parameters
    ----------
    members : array_like
        Ensemble members, shape ``(..., m)``.
    observed : array_like
        Observed values, broadcast to ``members.shape[:-1]``.
    fair : bool
        The fair (unbiased) score (default) or the standard one.

    Returns
    -------
    numpy.ndarray or numpy.float64
        Shape ``members.shape[:-1]``.

    Raises
    ------
    ValueError
        For infinite values, shapes that do not broadcast, or a scalar ``members``.

    Examples
    --------
    >>> x = [0.0, 1.0, 3.0]  # mean |x - 2| = 4/3; ΣΣ |x_i - x_j| = 2 (1 + 3 + 2) = 12
    >>> round(float(crps_ensemble(x, 2.0)), 4)  # 4/3 - 12 / (2 * 3 * 2)
    0.3333
    >>> round(float(crps_ensemble(x, 2.0, fair=False)), 4)  # 4/3 - 12 / (2 * 3²)
    0.6667
    """
    if not isinstance(fair, bool | np.bool_):
        raise ValueError(f"fair: expected True or False, got {fair!r}")
    members, observed = _present_members(members, observed)
    present = ~np.isnan(members)
    m = present.sum(axis=-1)
    ordered = np.sort(members, axis=-1)  # NaN sorts last: the present members come first
    k = np.arange(members.shape[-1], dtype=np.float64)
    weights = 2.0 * k - (m[..., None] - 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = 2.0 * np.sum(np.where(k < m[..., None], weights * ordered, 0.0), axis=-1)
        accuracy = np.sum(np.where(present, np.abs(members - observed[..., None]), 0.0),
                          axis=-1) / m
        pairs = m * (m - 1.0) if fair else m * m.astype(np.float64)
        result = accuracy - spread / (2.0 * pairs)
    result = np.where((m >= (2 if fair else 1)) & ~np.isnan(observed), result, np.nan)
    return _scalar(np.asarray(result))


# ----------------------------------------------------------------------- NLL, interval scores


def nll_student(E: Any, uE: Any, nu: Any) -> Any:
    """Negative log-likelihood of ``E`` under the Student-t(ν) whose standard deviation is
    ``uE`` (scale ``s = uE sqrt((ν - 2)/ν)``): ``-ln f_ν(E / s) + ln s``.

    No constant is dropped, so values are comparable with the normal NLL per point
    ``½ (Z² + ln uE² + ln 2π)`` (the ``nll`` statistic of METHODS §2 is its mean), which
    this tends to as ν grows.

    Parameters
    ----------
    E, uE : array_like
        Errors and standard uncertainties.
    nu : float or array_like
        Degrees of freedom, > 2.

    Returns
    -------
    numpy.ndarray or numpy.float64

    Raises
    ------
    ValueError
        For infinite values, ``uE <= 0`` or ``nu <= 2``.

    Examples
    --------
    >>> normal = 0.5 * (1.5**2 + math.log(2 * math.pi))
    >>> round(float(nll_student(1.5, 1.0, 6.0)), 4), round(normal, 4)
    (2.3197, 2.0439)
    >>> bool(abs(nll_student(1.5, 1.0, 1e9) - normal) < 1e-7)
    True
    """
    E, uE, nu, s = _student_inputs(E, uE, nu)
    with np.errstate(invalid="ignore"):
        result = np.log(s) - _student_logpdf(E / s, nu)
    return _scalar(np.asarray(result))


def interval_score(observed: Any, lower: Any, upper: Any, coverage_level: float) -> Any:
    """Interval (Winkler) score of central prediction intervals at ``coverage_level``.

    ``(U - L) + (2/α) (L - y)₊ + (2/α) (y - U)₊`` with ``α = 1 - coverage_level`` (Gneiting &
    Raftery 2007, §6.2): the width, plus a penalty for an observation outside. Lower is better; same
    unit as the data.

    Parameters
    ----------
    observed, lower, upper : array_like
        Observations and interval bounds (broadcast together; NaN gives NaN).
    coverage_level : float
        Coverage level (nominal coverage) of the intervals, in (0, 1).

    Returns
    -------
    numpy.ndarray or numpy.float64

    Raises
    ------
    ValueError
        For a coverage level outside (0, 1), infinite values or ``lower > upper``.

    Examples
    --------
    >>> interval_score([0.0, 3.0, -2.5], -1.0, 1.0, 0.9).round(6).tolist()
    [2.0, 42.0, 32.0]
    """
    level = check_coverage_level(coverage_level)
    y, lo, hi = _broadcast(("observed", _as_array(observed, "observed")),
                           ("lower", _as_array(lower, "lower")),
                           ("upper", _as_array(upper, "upper")))
    reversed_bounds = lo > hi
    if reversed_bounds.any():
        raise ValueError(f"lower, upper: {int(reversed_bounds.sum())} of {lo.size} intervals "
                         f"have lower > upper ({_positions(reversed_bounds)})")
    penalty = 2.0 / (1.0 - level)
    result = (hi - lo) + penalty * np.maximum(lo - y, 0.0) + penalty * np.maximum(y - hi, 0.0)
    return _scalar(np.asarray(result))


def _check_probabilities(probabilities: Any, name: str = "probabilities") -> np.ndarray:
    p = _as_array(probabilities, name)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D sequence of probability levels, "
                         f"got shape {p.shape}")
    bad = ~((p > 0) & (p < 1))
    if bad.any():
        raise ValueError(f"{name}: expected probability levels in (0, 1), got "
                         f"{p[bad].tolist()[:3]} ({_positions(bad)})")
    return p


def pinball_loss(observed: Any, quantile_values: Any, probabilities: Any) -> Any:
    """Pinball (quantile) loss of predicted quantiles, one value per probability level.

    ``ρ_τ(y - q_τ) = (y - q_τ) (τ - 1{y < q_τ})``, the loss whose expectation is minimised by
    the true τ-quantile. Twice its integral over τ is the CRPS (Gneiting & Raftery 2007), so
    twice its mean over many evenly spread levels approximates the CRPS.

    Parameters
    ----------
    observed : array_like
        Observations, broadcast to ``quantile_values.shape[:-1]``.
    quantile_values : array_like
        Predicted quantiles, shape ``(..., K)``: the last axis follows ``probabilities``.
    probabilities : sequence of float
        The K probability levels τ, each in (0, 1).

    Returns
    -------
    numpy.ndarray
        Shape ``(..., K)``; NaN where a value is NaN.

    Raises
    ------
    ValueError
        For levels outside (0, 1), a last axis that is not of length K, or infinite values.

    Examples
    --------
    >>> pinball_loss(1.0, [0.0, 1.0, 2.0], [0.1, 0.5, 0.9]).round(6).tolist()
    [0.1, 0.0, 0.1]
    """
    tau = _check_probabilities(probabilities)
    q = _as_array(quantile_values, "quantile_values")
    if q.ndim == 0 or q.shape[-1] != tau.size:
        raise ValueError(f"quantile_values: expected a last axis of length {tau.size} (one "
                         f"value per probability level), got shape {q.shape}")
    q, y = _present_members(q, observed, "quantile_values", "the quantiles")
    difference = y[..., None] - q
    with np.errstate(invalid="ignore"):
        result = difference * (tau - (difference < 0))
    return np.where(np.isnan(difference), np.nan, result)


# ------------------------------------------------------------------------------------ PIT


def pit_normal(E: Any, uE: Any) -> Any:
    """PIT of ``E`` under ``N(0, uE²)``: ``Φ(E / uE)``. Uniform on (0, 1) for calibrated
    uncertainties with a normal generative distribution.

    Parameters
    ----------
    E, uE : array_like
        Errors and standard uncertainties (NaN gives NaN).

    Returns
    -------
    numpy.ndarray or numpy.float64

    Raises
    ------
    ValueError
        For infinite values or ``uE <= 0``.

    Examples
    --------
    >>> pit_normal([0.0, 1.96], [1.0, 1.0]).round(3).tolist()
    [0.5, 0.975]
    """
    E, uE = _normal_inputs(E, uE)
    return _scalar(np.asarray(special.ndtr(E / uE)))


def pit_student(E: Any, uE: Any, nu: Any) -> Any:
    """PIT of ``E`` under the Student-t(ν) whose standard deviation is ``uE``:
    ``F_ν(E / s)``, ``s = uE sqrt((ν - 2)/ν)``.

    Parameters
    ----------
    E, uE : array_like
        Errors and standard uncertainties.
    nu : float or array_like
        Degrees of freedom, > 2.

    Returns
    -------
    numpy.ndarray or numpy.float64

    Raises
    ------
    ValueError
        For infinite values, ``uE <= 0`` or ``nu <= 2``.

    Examples
    --------
    >>> round(float(pit_student(0.0, 1.0, 4.0)), 3), round(float(pit_student(1.0, 1.0, 4.0)), 3)
    (0.5, 0.885)
    """
    E, uE, nu, s = _student_inputs(E, uE, nu)
    with np.errstate(invalid="ignore"):
        return _scalar(np.asarray(stats.t.cdf(E / s, nu)))


def pit_ensemble(members: Any, observed: Any, seed: int = defaults.SEED) -> Any:
    """Randomised PIT of observations among ensemble members (members along the last axis).

    With ``m`` present members, ``b`` of them below the observation and ``t`` equal to it,
    the observation's rank among the ``m + 1`` values is uniform on ``{b, …, b + t}`` (ties
    broken at random), and the rank is spread uniformly over its ``1/(m + 1)`` of the unit
    interval: ``PIT = (b + W (t + 1)) / (m + 1)`` with ``W ~ U(0, 1)`` (one draw gives both the
    tie-breaking and the spreading). For an observation exchangeable with its members the PIT
    is then exactly ``U(0, 1)``, continuous, so the tests of :func:`pit_uniformity` apply as to
    a parametric PIT.

    The draws come from the counter-based streams of :mod:`xuqcal.core.random`: the
    observation at flat position k (C order of ``members.shape[:-1]``) uses the k-th uniform
    of the stream ``(seed, "pit:ensemble", 0)``, so the result depends only on the seed and
    the shape. NaN members are missing; the PIT is NaN where ``observed`` is NaN or no member
    is present.

    Parameters
    ----------
    members : array_like
        Ensemble members, shape ``(..., m)``.
    observed : array_like
        Observations, broadcast to ``members.shape[:-1]``.
    seed : int
        Seed of the tie-breaking draws.

    Returns
    -------
    numpy.ndarray or numpy.float64
        Shape ``members.shape[:-1]``, values in [0, 1].

    Raises
    ------
    ValueError
        For infinite values, shapes that do not broadcast, or an invalid seed.

    Examples
    --------
    >>> p = pit_ensemble([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]], [1.5, 5.0], seed=0)
    >>> bool(2 / 4 < p[0] < 3 / 4), bool(3 / 4 < p[1] < 1)
    (True, True)
    >>> bool((p == pit_ensemble([[0.0, 1.0, 2.0]] * 2, [1.5, 5.0], seed=0)).all())
    True
    """
    seed = check_seed(seed)
    members, observed = _present_members(members, observed)
    m = (~np.isnan(members)).sum(axis=-1)
    below = (members < observed[..., None]).sum(axis=-1)
    ties = (members == observed[..., None]).sum(axis=-1)
    draws = np.empty(observed.size, dtype=np.float64)
    _random.fill_variates(_random.stream_key(seed, PIT_ENSEMBLE_PURPOSE), 0, _random.UNIFORM,
                          0.0, draws)
    root3 = math.sqrt(3.0)  # the UNIFORM generator is U(-√3, √3): back to U(0, 1)
    w = np.clip((draws / root3 + 1.0) / 2.0, 0.0, 1.0).reshape(observed.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        result = (below + w * (ties + 1.0)) / (m + 1.0)
    result = np.where((m > 0) & ~np.isnan(observed), result, np.nan)
    return _scalar(np.asarray(result))


# ------------------------------------------------------------------------ uniformity of PIT


class UniformityTest(NamedTuple):
    """Result of :func:`pit_uniformity` (arrays of the leading shape of the PIT values;
    ``counts`` has a last axis of ``n_bins``)."""

    #: Pearson's chi-square statistic of the bin counts against equal expected counts.
    chi2_statistic: Any
    #: Its p-value (chi-square with ``n_bins - 1`` degrees of freedom).
    chi2_pvalue: Any
    #: Kolmogorov–Smirnov statistic ``sup |F_n(p) - p|`` against U(0, 1).
    ks_statistic: Any
    #: Its p-value (:func:`scipy.stats.kstest`, exact for small samples).
    ks_pvalue: Any
    #: Counts of the equal-width bins of [0, 1].
    counts: Any
    #: Number of (non-NaN) PIT values tested.
    n_points: Any


def _check_pit(pit: Any) -> np.ndarray:
    values = _as_array(pit, "pit")
    if values.ndim == 0:
        values = values[None]
    outside = ~((values >= 0) & (values <= 1)) & ~np.isnan(values)
    if outside.any():
        raise ValueError(f"pit: {int(outside.sum())} of {values.size} values lie outside "
                         f"[0, 1] ({_positions(outside)}); PIT values are probabilities")
    return values


def _bin_counts(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Counts of the equal-width bins ``[j/k, (j+1)/k)`` (the last one closed) along the last
    axis, NaN left out."""
    rows = values.reshape(-1, values.shape[-1])
    present = ~np.isnan(rows)
    index = np.minimum(np.floor(np.where(present, rows, 0.0) * n_bins), n_bins - 1)
    flat = (np.arange(rows.shape[0])[:, None] * n_bins + index.astype(np.int64))[present]
    counts = np.bincount(flat, minlength=rows.shape[0] * n_bins)
    return counts.reshape(*values.shape[:-1], n_bins)


def pit_uniformity(pit: Any, n_bins: int = defaults.N_BINS_PIT) -> UniformityTest:
    """Tests of the uniformity of PIT values on (0, 1), along the last axis.

    Two tests, which look at different departures: Pearson's **chi-square** test of the counts
    of ``n_bins`` equal-width bins (:func:`scipy.stats.chisquare`, ``n_bins - 1`` degrees of
    freedom; the histogram that :func:`xuqcal.plot.pit` shows) and the
    **Kolmogorov–Smirnov** test against U(0, 1) (:func:`scipy.stats.kstest`; no binning, most
    sensitive near the middle of the distribution). A small p-value rejects uniformity: the
    predictive distributions are not calibrated (too narrow: U-shaped histogram; too wide:
    hump-shaped; biased: sloped).

    NaN values are left out (each row uses its present values). The chi-square p-value is
    asymptotic: with fewer than :data:`MIN_EXPECTED_COUNT` expected points per bin a
    :class:`~xuqcal.FewPointsPerBinWarning` says so.

    Parameters
    ----------
    pit : array_like
        PIT values in [0, 1], shape ``(..., M)``: one test per row.
    n_bins : int
        Number of equal-width bins of the chi-square test (at least 2).

    Returns
    -------
    UniformityTest
        ``chi2_statistic``, ``chi2_pvalue``, ``ks_statistic``, ``ks_pvalue``, ``counts``
        (last axis ``n_bins``), ``n_points``. NaN for a row without values.

    Raises
    ------
    ValueError
        For values outside [0, 1], infinite values or ``n_bins < 2``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> test = pit_uniformity(rng.random(1000), n_bins=10)
    >>> int(test.counts.sum()), bool(test.chi2_pvalue > 0.01 and test.ks_pvalue > 0.01)
    (1000, True)
    >>> bool(pit_uniformity(rng.random(1000) ** 2).ks_pvalue < 1e-6)
    True
    """
    n_bins = check_count(n_bins, "n_bins", minimum=2)
    values = _check_pit(pit)
    counts = _bin_counts(values, n_bins)
    n_points = counts.sum(axis=-1)
    chi2_stat = np.full(n_points.shape, np.nan)
    chi2_p = np.full(n_points.shape, np.nan)
    ks_stat = np.full(n_points.shape, np.nan)
    ks_p = np.full(n_points.shape, np.nan)
    tested = n_points > 0
    if tested.any():
        few = n_points[tested].min() / n_bins
        if few < MIN_EXPECTED_COUNT:
            warnings.warn(f"pit_uniformity: {few:g} expected points per bin (fewer than "
                          f"{MIN_EXPECTED_COUNT}): the chi-square p-value is approximate; use "
                          f"fewer bins (n_bins={n_bins})", FewPointsPerBinWarning,
                          stacklevel=user_stacklevel())
        chi2 = stats.chisquare(counts[tested], axis=-1)
        chi2_stat[tested], chi2_p[tested] = chi2.statistic, chi2.pvalue
        rows = values[tested]
        complete = not np.isnan(rows).any()
        ks = stats.kstest(rows, "uniform", axis=-1,
                          nan_policy="propagate" if complete else "omit")
        ks_stat[tested], ks_p[tested] = ks.statistic, ks.pvalue
    return UniformityTest(_scalar(chi2_stat), _scalar(chi2_p), _scalar(ks_stat), _scalar(ks_p),
                          counts, _scalar(n_points))


def pit_histogram_band(n_points: Any, n_bins: int = defaults.N_BINS_PIT,
                       level: float = defaults.LEVEL, band: str | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin band of the counts of a PIT histogram under uniformity.

    Each of the ``n_bins`` equal-width bins of ``n_points`` uniform values holds a
    Binomial(``n_points``, 1/``n_bins``) count; the band is its central interval
    ``[q_{(1-level)/2}, q_{(1+level)/2}]`` (:func:`scipy.stats.binom` quantiles), which
    holds the count with probability at least ``level``. The band is *per bin*: with 10 bins,
    about 40 % of calibrated histograms (1 - 0.95¹⁰) have some bin outside the 95 % band;
    the tests of :func:`pit_uniformity` judge the histogram as a whole.

    Parameters
    ----------
    n_points : int or array_like of int
        Number of PIT values (one band per value).
    n_bins : int
        Number of bins.
    level : float
        Probability of the band, in (0, 1).
    band : {"binomial", "poisson"}, optional
        The count distribution: Binomial(``n_points``, 1/``n_bins``), or Poisson of mean
        ``n_points / n_bins`` (ErrViewLib's ``plotPIT``: ``qpois(0.025, v)``,
        ``qpois(0.975, v)``; slightly wider). Default ``None``: the option ``conventions``
        (:func:`xuqcal.options.convention`; ``"binomial"``, ``"poisson"`` under
        ``"errviewlib"``).

    Returns
    -------
    low, high : numpy.ndarray
        Shape ``np.shape(n_points) + (n_bins,)`` (the same band for every bin).

    Raises
    ------
    ValueError
        For ``n_points < 1``, ``n_bins < 2`` or a level outside (0, 1).

    Examples
    --------
    >>> low, high = pit_histogram_band(1000, 10)
    >>> low.shape, int(low[0]), int(high[0])
    ((10,), 82, 119)
    >>> low, high = pit_histogram_band(1000, 10, band="poisson")
    >>> int(low[0]), int(high[0])
    (81, 120)
    """
    from xuqcal.options import convention

    band = convention("band", band)
    n_bins = check_count(n_bins, "n_bins", minimum=2)
    level = check_level(level)
    n = np.asarray(n_points)
    if n.dtype.kind not in "iu" or np.any(n < 1):
        raise ValueError(f"n_points: expected positive integers (numbers of PIT values), got "
                         f"{n_points!r}")
    if band == "poisson":
        low, high = stats.poisson.interval(level, n[..., None] / n_bins)
    else:
        low, high = stats.binom.interval(level, n[..., None], 1.0 / n_bins)
    shape = (*n.shape, n_bins)
    return np.broadcast_to(low, shape).copy(), np.broadcast_to(high, shape).copy()
