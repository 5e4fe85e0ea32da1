"""Summaries of replicates: mean, standard error, quantiles; and the generator-sensitivity rule.

Used by the simulated references, the validation workflow and the sensitivity cubes alike.
"""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np

from xuqcal.core.checks import user_stacklevel
from xuqcal.core.intervals import quantile_sorted
from xuqcal.core.statistics import UndefinedStatisticWarning

#: The expanded uncertainty of a simulated reference is ``U = U_REF_FACTOR * se`` (METHODS §5).
U_REF_FACTOR = 2.0


def safe_std(values: np.ndarray) -> np.ndarray:
    """Standard deviation (``ddof=1``) along the last axis; for values whose squares overflow
    (statistics of order 1e160 and more) it is computed on ``values / 2^k`` and scaled back
    exactly, where the plain formula gives inf. Ordinary values are unaffected (bit-identical).

    Examples
    --------
    >>> float(safe_std(np.array([1e300, 3e300])) / 1e300)
    1.4142135623730951
    """
    with np.errstate(invalid="ignore", over="ignore"):
        sd = values.std(axis=-1, ddof=1)
        redo = ~np.isfinite(sd) & np.isfinite(values).all(axis=-1)
        if np.any(redo):
            top = np.max(np.abs(values), axis=-1, keepdims=True)
            k = np.frexp(np.where(top > 0, top, 1.0))[1]
            scaled = np.ldexp(values, -k).std(axis=-1, ddof=1)
            sd = np.where(redo, np.ldexp(scaled, k[..., 0]), sd)
    return sd


def summarize_replicates(replicates, names=None):
    """Mean, standard error of the mean and 2.5/97.5 % quantiles along the last axis.

    With ``names`` (the statistic of each row of the first axis), a statistic that is NaN or
    infinite on some synthetic sets is named by an :class:`UndefinedStatisticWarning`."""
    replicates = np.ascontiguousarray(replicates)
    n = replicates.shape[-1]
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf replicates: NaN, quietly
        mean = replicates.mean(axis=-1)
        se = safe_std(replicates) / np.sqrt(n)
        ordered = np.sort(replicates, axis=-1)
        probabilities = np.broadcast_to([0.025, 0.975], (*replicates.shape[:-1], 2))
        quantiles = quantile_sorted(ordered, probabilities)
    if names is not None and replicates.ndim >= 2 and len(names) == replicates.shape[0]:
        for name, rows in zip(names, replicates, strict=True):
            bad = ~np.isfinite(rows)
            if bad.any():
                count = int(bad.any(axis=-1).sum()) if bad.ndim > 1 else 1
                warnings.warn(
                    f"{name} reference is undefined: the statistic is NaN or infinite on "
                    f"{int(bad.sum())} of {bad.size} synthetic sets of {count} generator(s) "
                    f"(e.g. cc when uE is constant, a statistic with units beyond the float64 "
                    f"range); its mean, se and quantiles are NaN or infinite",
                    UndefinedStatisticWarning, stacklevel=user_stacklevel())
    return mean, se, quantiles[..., 0], quantiles[..., 1]


def differ_beyond_uncertainty(mean_a, se_a, mean_b, se_b):
    """Whether two simulated means differ by more than ``sqrt(U_a² + U_b²)``, ``U = 2 se``:
    the generator-sensitivity rule of the validation workflow (METHODS §5).

    Examples
    --------
    >>> bool(differ_beyond_uncertainty(1.0, 0.01, 1.1, 0.01))
    True
    """
    return np.abs(mean_a - mean_b) > np.hypot(U_REF_FACTOR * se_a, U_REF_FACTOR * se_b)


def generator_sensitive(mean: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Whether any two generators' means differ beyond their combined uncertainty, per row
    (``mean`` and ``se`` over ``(statistic, generator)``).

    Examples
    --------
    >>> generator_sensitive(np.array([[1.0, 1.1], [1.0, 1.0]]), np.full((2, 2), 0.01)).tolist()
    [True, False]
    """
    sensitive = np.zeros(mean.shape[0], dtype=bool)
    for a, b in combinations(range(mean.shape[1]), 2):
        sensitive |= differ_beyond_uncertainty(mean[:, a], se[:, a], mean[:, b], se[:, b])
    return sensitive
