"""The variance of a sample variance and the intervals of Var(Z) and 1/SD(Z) (NumPy, no labels).

ErrViewLib's ``varvar``, ``varZCI`` and ``rsdZCI`` (methods ``"cho"`` and ``"chisq"``):

- Cho et al. (2005/2008), eq. (1): the variance of the unbiased sample variance ``s²`` of
  ``n`` values with central moments ``μ₂``, ``μ₄`` is ``(μ₄ - (n - 3) / (n - 1) μ₂²) / n``,
  estimated with the sample central moments ``m_k = (1/n) Σ (x - x̄)^k``;
- ``"cho"``: the normal interval ``s² ± z_{(1+level)/2} SD(s²)`` around ``s² = Var(Z)``
  (denominator ``n - 1``), and for ``1/SD(Z) = 1/s`` the same with the law of propagation of
  uncertainty, ``SD(1/s) = SD(s²) / (2 s³)``;
- ``"chisq"``: the interval ``[χ²_{(1-level)/2}, χ²_{(1+level)/2}] / (n - 1)`` (``n - 1``
  degrees of freedom) in which ``s²`` of ``n`` standard normal values falls with probability
  ``level``: a reference interval for the target ``Var(Z) = 1``, independent of the data
  values (its ``sd`` is ``sqrt(2 / (n - 1))``), as ErrViewLib reports it.

The bootstrap intervals of ErrViewLib's ``method="bootstrap"`` are those of the statistics
``zv`` and ``zisd`` (:data:`xuqcal.core.statistics.STATISTICS`) in :func:`xuqcal.bootstrap`,
:func:`xuqcal.validate` and :func:`xuqcal.local`.
"""

from __future__ import annotations

import numpy as np

from xuqcal._lazy import lazy_module
from xuqcal.core.checks import check_bool, check_choice, check_finite, check_level
from xuqcal.core.coverage import normal_coverage_factor
from xuqcal.core.moments import variance_of_sample_variance

stats = lazy_module("scipy.stats")  # loaded on first use (a short ``import xuqcal``, issue 26)

#: The interval methods of :func:`variance_interval`.
VARIANCE_METHODS = ("cho", "chisq")


def _sample(z: object, name: str = "z") -> np.ndarray:
    """``z`` as a 1-D float array of at least 2 finite values, or a ``ValueError``."""
    x = np.asarray(z, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {x.shape}")
    check_finite(x, name, where="positions")
    if x.size < 2:
        raise ValueError(f"{name}: a variance needs at least 2 values, got {x.size}")
    return x


def variance_of_variance(z: object) -> float:
    """Variance of the unbiased sample variance of ``z`` (Cho's eq. 1; ErrViewLib's ``varvar``):
    ``(m₄ - (n - 3) / (n - 1) m₂²) / n``, ``m_k`` the central sample moments (denominator n).

    Parameters
    ----------
    z : array_like
        A 1-D sample of at least 2 finite values.

    Returns
    -------
    float

    Examples
    --------
    >>> round(variance_of_variance([-1.0, 1.0, -1.0, 1.0]), 12)  # m2 = m4 = 1, n = 4
    0.166666666667
    """
    x = _sample(z)
    d = x - x.mean()
    return float(variance_of_sample_variance(float(x.size), np.sum(d**2), np.sum(d**4)))


def variance_interval(z: object, level: float = 0.95, method: str = "cho", *,
                      inverse: bool = False) -> tuple[float, float, float, float]:
    """``(value, sd, ci_low, ci_high)`` of ``Var(Z)`` (or ``1/SD(Z)`` with ``inverse``) of a
    sample (ErrViewLib's ``varZCI`` and ``rsdZCI``; formulas in the module docstring).

    Parameters
    ----------
    z : array_like
        A 1-D sample of at least 2 finite values (the z-scores).
    level : float
        Confidence level.
    method : {"cho", "chisq"}
        The normal interval with Cho's standard deviation, or the reference interval of the
        sample variance of standard normal values (``Var(Z)`` only).
    inverse : bool
        Report ``1/SD(Z)`` (``"cho"`` only), ErrViewLib's LZISD statistic.

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> v, sd, lo, hi = variance_interval([-1.0, 1.0, -1.0, 1.0])
    >>> round(v, 6), round(sd, 6), round(lo, 4), round(hi, 4)  # s² = 4/3, SD² = 1/6
    (1.333333, 0.408248, 0.5332, 2.1335)
    """
    level = check_level(level)
    method = check_choice(method, "method", VARIANCE_METHODS)
    inverse = check_bool(inverse, "inverse")
    x = _sample(z)
    n = x.size
    var = float(np.var(x, ddof=1))
    if method == "chisq":
        if inverse:
            raise ValueError("method: 'chisq' gives an interval of Var(Z) only; use "
                             "method='cho' for 1/SD(Z) (inverse=True)")
        low, high = stats.chi2.ppf([(1.0 - level) / 2.0, (1.0 + level) / 2.0], n - 1) / (n - 1)
        return var, float(np.sqrt(2.0 / (n - 1.0))), float(low), float(high)
    sd = float(np.sqrt(max(variance_of_variance(x), 0.0)))
    value = var
    if inverse:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(1.0 / np.sqrt(var))
            sd = float(sd / (2.0 * var**1.5))
    half = normal_coverage_factor(level) * sd
    return value, sd, value - half, value + half
