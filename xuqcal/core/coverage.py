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

import math
import warnings

import numpy as np
from scipy import special

from xuqcal._lazy import lazy_module
from xuqcal.core.checks import check_level
from xuqcal.core.intervals import zeta
from xuqcal.core.scores import student_scale

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


def fit_student_nu(z: np.ndarray) -> float:
    """ν of a scaled Student-t fitted to z-scores: the maximum-likelihood fit of a scaled
    F(1, ν) to Z² (``Z² / s² ~ F(1, ν)`` when ``Z / s ~ t(ν)``), as in
    :func:`xuqcal.describe`. Capped at :data:`NU_MAX` (normal data); NaN when the fit is
    undefined (fewer than 3 points, or Z² constant or zero).

    Examples
    --------
    >>> import xuqcal
    >>> rng = np.random.default_rng(0)
    >>> nu = fit_student_nu(rng.standard_t(4, size=20_000))
    >>> bool(3.5 < nu < 4.6)
    True
    """
    z2 = np.square(np.asarray(z, dtype=np.float64))
    z2 = z2[np.isfinite(z2)]
    if z2.size < 3 or not np.any(z2 > 0) or np.all(z2 == z2[0]):
        return math.nan
    scale = float(np.median(z2)) / float(_stats.f.median(1, 10.0)) or float(np.mean(z2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the optimiser's trial points
        _, nu, _, _ = _stats.f.fit(z2, 10.0, f0=1.0, floc=0.0, scale=scale)
    return float(min(nu, NU_MAX))


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
