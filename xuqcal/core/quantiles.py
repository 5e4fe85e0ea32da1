"""Harrell–Davis quantiles and the bin layout built on them (ErrViewLib's ``genIntervals``).

The Harrell–Davis (1982) estimate of the ``p``-quantile of ``n`` values is a weighted mean of
the sorted values ``x_(1) <= ... <= x_(n)``, the weight of ``x_(i)`` being the probability
that a Beta(``(n + 1) p``, ``(n + 1) (1 - p)``) variable falls in ``((i - 1) / n, i / n]``.
It is the median of the robust skewness β_GM (:func:`xuqcal.core.statistics.beta_gm`) and the
break points of P. Pernot's equal-population bins (:func:`harrell_davis_bounds`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import special

from xuqcal.core.checks import check_finite


def _probabilities(probs: float | Sequence[float] | np.ndarray) -> np.ndarray:
    try:
        p = np.atleast_1d(np.asarray(probs, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"probs: expected probabilities in [0, 1], got {probs!r}") from None
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"probs: expected a probability or a 1-D list of them, got {probs!r}")
    bad = ~((p >= 0.0) & (p <= 1.0))
    if bad.any():
        raise ValueError(f"probs: expected probabilities in [0, 1], got "
                         f"{p[bad].tolist()} (positions {np.flatnonzero(bad).tolist()})")
    return p


def harrell_davis_quantiles(values: np.ndarray | Sequence[float],
                            probs: float | Sequence[float] | np.ndarray) -> np.ndarray:
    """Harrell–Davis quantile estimates of ``values`` at the probabilities ``probs``.

    The estimate at ``p`` is ``Σ_i w_i x_(i)``, ``w_i = I_{i/n}(a, b) - I_{(i-1)/n}(a, b)``
    with ``I`` the regularized incomplete beta function, ``a = (n + 1) p`` and
    ``b = (n + 1) (1 - p)`` (Harrell & Davis, Biometrika 69, 1982; SciPy's
    ``scipy.stats.mstats.hdquantiles`` and ErrViewLib's ``hd``/``vhd``, to rounding). At
    ``p = 0`` and ``p = 1`` it is the smallest and the largest value (SciPy's convention; R's
    ``hd`` returns 0 at ``p = 0``, a value ``genIntervals`` never uses).

    Parameters
    ----------
    values : array-like
        One-dimensional finite values (at least 2).
    probs : float or array-like
        Probabilities in [0, 1].

    Returns
    -------
    numpy.ndarray
        One estimate per probability (float64).

    Raises
    ------
    ValueError
        For values that are not 1-D, fewer than 2, or not finite (their positions are named),
        and probabilities outside [0, 1].

    Examples
    --------
    >>> harrell_davis_quantiles(np.arange(1.0, 6.0), [0.5]).tolist()
    [3.0]
    >>> harrell_davis_quantiles([1.2, 2.5, 3.7, 4.0, 5.1, 6.3, 7.0, 8.2, 9.4], [0.25, 0.75]
    ...                         ).round(4).tolist()
    [3.1506, 7.4306]
    """
    p = _probabilities(probs)
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"values: expected real numbers, got {type(values).__name__}") \
            from None
    if x.ndim != 1:
        raise ValueError(f"values: expected a 1-D array, got shape {x.shape}")
    if x.size < 2:
        raise ValueError(f"values: the Harrell-Davis estimate needs at least 2 values, got "
                         f"{x.size}")
    check_finite(x, "values", where="positions")
    x = np.sort(x)
    n = x.size
    grid = np.arange(n + 1) / float(n)
    out = np.empty(p.size)
    for j, q in enumerate(p.tolist()):
        if q == 0.0:
            out[j] = x[0]
        elif q == 1.0:
            out[j] = x[-1]
        else:
            cdf = special.betainc((n + 1) * q, (n + 1) * (1.0 - q), grid)
            out[j] = np.dot(cdf[1:] - cdf[:-1], x)
    return out


def harrell_davis_bounds(m: int, n_bins: int, pop_min: int = 30) -> np.ndarray:
    """Start positions of the bins of ``m`` sorted points whose break points are Harrell–Davis
    quantiles of the positions, plus ``m`` (ErrViewLib's ``genIntervals`` with
    ``equiPop = TRUE``).

    When ``m / n_bins < pop_min`` the number of bins is first reduced to
    ``floor(m / pop_min)`` (at least 1). The break points are the Harrell–Davis quantiles of
    the positions ``1 .. m`` at the probabilities ``b / n_bins``, ``b = 1 .. n_bins - 1``; bin
    ``b`` starts at the first position above its break point. Bins of sorted positions, as
    :func:`xuqcal.core.binning.equal_count_bounds`, with nearly equal counts (they differ
    from ``floor(b m / n_bins)`` by a position or two).

    Parameters
    ----------
    m : int
        Number of points (at least 2).
    n_bins : int
        Number of bins asked.
    pop_min : int
        Least number of points per bin (ErrViewLib's ``popMin``, default 30).

    Returns
    -------
    numpy.ndarray
        int64 start positions (0-based) of the bins, then ``m``.

    Examples
    --------
    >>> harrell_davis_bounds(1000, 4).tolist()
    [0, 250, 500, 750, 1000]
    >>> harrell_davis_bounds(100, 20).tolist()  # 20 bins of 5 < 30 points: 3 bins
    [0, 33, 67, 100]
    """
    for name, value, least in (("m", m, 2), ("n_bins", n_bins, 1), ("pop_min", pop_min, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
            raise ValueError(f"{name}: expected an integer of at least {least}, got {value!r}")
    m, n_bins = int(m), int(n_bins)
    if m / n_bins < pop_min:
        n_bins = max(m // int(pop_min), 1)
    starts = [0]
    if n_bins > 1:
        breaks = harrell_davis_quantiles(np.arange(1.0, m + 1.0),
                                         np.arange(1, n_bins) / n_bins)
        positions = np.arange(1, m + 1)
        for br in breaks:
            # the first (1-based) position above the break point, as a 0-based start
            starts.append(int(np.argmax(positions > br)))
    return np.array([*starts, m], dtype=np.int64)
