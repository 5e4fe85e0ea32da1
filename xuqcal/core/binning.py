"""Equal-count bins over sorted positions (METHODS §3): the one place of ``floor(b M / N)``.

Bin ``b`` of ``M`` points sorted by the binning variable (stable sort: ties keep the current
row order) covers the positions ``[floor(b M / N), floor((b + 1) M / N))``. Every binned
statistic, bootstrap replicate, jackknife value, local analysis and recalibration takes its
bounds from :func:`equal_count_bounds` (the Numba kernels from its jitted twin in
:mod:`xuqcal.core.kernels`).
"""

from __future__ import annotations

import numpy as np

#: Smallest number of points per bin accepted by the binned statistics (each bin's mean needs a
#: few points; a leave-one-out sample must still fill every bin).
MIN_POINTS_PER_BIN = 2


def equal_count_order(values: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Stable sorting permutation of ``values`` (ties by ``tiebreak``, then by row order).

    Examples
    --------
    >>> equal_count_order(np.array([3.0, 1.0, 3.0, 2.0])).tolist()
    [1, 3, 0, 2]
    """
    values = np.asarray(values)
    if tiebreak is None:
        return np.argsort(values, kind="stable")
    return np.lexsort((np.asarray(tiebreak), values))


def equal_count_bounds(m: int, n_bins: int) -> np.ndarray:
    """Start positions of the ``n_bins`` equal-count bins of ``m`` sorted points, plus ``m``.

    Examples
    --------
    >>> equal_count_bounds(10, 3).tolist()
    [0, 3, 6, 10]
    """
    check_n_bins(m, n_bins)
    return (np.arange(n_bins + 1, dtype=np.int64) * m) // n_bins


def check_n_bins(m: int, n_bins: int, *, variable: str = "data") -> None:
    """Raise a clear ``ValueError`` when ``m`` points cannot fill ``n_bins`` bins.

    Examples
    --------
    >>> check_n_bins(100, 20)
    >>> check_n_bins(30, 20)
    Traceback (most recent call last):
    ...
    ValueError: n_bins: n_bins=20 needs at least 40 points (2 per bin), but data has 30
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValueError(f"n_bins: expected a positive integer, got {n_bins!r}")
    needed = MIN_POINTS_PER_BIN * int(n_bins)
    if m < needed:
        raise ValueError(
            f"n_bins: n_bins={n_bins} needs at least {needed} points "
            f"({MIN_POINTS_PER_BIN} per bin), "
            f"but {variable} has {m}"
        )
