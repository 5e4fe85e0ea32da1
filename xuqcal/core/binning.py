"""Equal-count bins over sorted positions (METHODS §3): the one place of ``floor(b M / N)``.

Bin ``b`` of ``M`` points sorted by the binning variable (stable sort: ties keep the current
row order) covers the positions ``[floor(b M / N), floor((b + 1) M / N))``. Every binned
statistic, bootstrap replicate, jackknife value, local analysis and recalibration takes its
bounds from :func:`equal_count_bounds` (the Numba kernels from its jitted twin in
:mod:`xuqcal.core.kernels`).

**How many bins: one rule.** A per-bin analysis (local z-score analyses, reliability
diagrams, local coverage, adversarial groups) computes an interval in every bin; with a
handful of points per bin those intervals, and the fraction of valid bins f_v built on them,
are noise. The rule, used by every such analysis and by the report:

* a bin should hold at least ``defaults.MIN_POINTS_PER_BIN_LOCAL`` (20) points;
* the recommended number of bins for ``M`` points is
  ``min(n_bins, max(M // 20, 1))`` (:func:`recommended_n_bins`; ``n_bins`` default
  ``defaults.N_BINS_LOCAL`` = 100), which the report uses;
* every binned analysis (the binned statistics ENCE, UCE and ZMSE of ``stats``,
  ``bootstrap``, ``simulate``, ``validate`` and ``ablation``; ``local``,
  ``order_sensitivity``, ``reliability``, ``local_coverage``) defaults to ``n_bins=None``:
  the recommended number for the M of the data set, per slice of data with extra
  dimensions, with the analysis's own default as the most (:func:`resolve_n_bins`; 20 bins
  of the binned statistics from M = 400 on, 100 local bins from M = 2000 on), recorded in
  the result's ``n_bins`` attribute;
* an analysis asked for more bins than that still runs (down to the hard minimum of
  :data:`MIN_POINTS_PER_BIN` points per bin, below which it refuses) but warns with a
  :class:`FewPointsPerBinWarning` naming ``n_bins``, ``M`` and the points per bin
  (:func:`warn_few_points_per_bin`).

The default window of running statistics follows the same minimum
(:func:`xuqcal.analysis.running.default_window`).
"""

from __future__ import annotations

import warnings

import numpy as np

from xuqcal.core import defaults
from xuqcal.core.checks import user_stacklevel

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
        return stable_order(values)[0]
    return np.lexsort((np.asarray(tiebreak), values))


def stable_order(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, tie)``: ``np.argsort(values, kind="stable")`` (the same array) and the tie
    flags of the sorted values (``tie[k]``: ``values[order[k]] == values[order[k - 1]]``,
    ``tie[0]`` False). At least :data:`RADIX_ARGSORT_FROM` float64 values that are all
    ``>= 0`` and none ``-0.0`` (their bit patterns sort as the values) are sorted by the
    kernels' radix sort, which flags the ties as it sorts
    (:func:`xuqcal.core.kernels.stable_order_nonnegative`); others by NumPy.

    Examples
    --------
    >>> order, tie = stable_order(np.array([3.0, 1.0, 3.0, 2.0]))
    >>> order.tolist(), tie.tolist()
    ([1, 3, 0, 2], [False, False, False, True])
    """
    values = np.asarray(values)
    if (values.ndim == 1 and values.dtype == np.float64 and values.size >= RADIX_ARGSORT_FROM
            and values.size < 2**31 and values.min() >= 0.0 and not np.signbit(values).any()):
        from xuqcal.core import kernels

        return kernels.stable_order_nonnegative(np.ascontiguousarray(values))
    order = np.argsort(values, kind="stable")
    return order, tie_flags(values[order])


def tie_flags(sorted_values: np.ndarray) -> np.ndarray:
    """``tie[k]``: ``sorted_values[k] == sorted_values[k - 1]`` (``tie[0]`` False).

    Examples
    --------
    >>> tie_flags(np.array([1.0, 1.0, 2.0])).tolist()
    [False, True, False]
    """
    tie = np.zeros(sorted_values.shape[0], dtype=np.bool_)
    tie[1:] = sorted_values[1:] == sorted_values[:-1]
    return tie


#: Values from which :func:`stable_order` takes the radix sort
#: (``benchmarks/prepare_time.py`` times both).
RADIX_ARGSORT_FROM = 1 << 12


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


class FewPointsPerBinWarning(UserWarning):
    """Bins of a per-bin analysis hold fewer than ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points.

    The per-bin intervals (and f_v) then rest on a handful of points; use
    :func:`recommended_n_bins` bins. Filter it like any warning, e.g.
    ``warnings.simplefilter("ignore", FewPointsPerBinWarning)``.
    """


def recommended_n_bins(m: int, n_bins: int = defaults.N_BINS_LOCAL, *,
                       min_points: int = defaults.MIN_POINTS_PER_BIN_LOCAL) -> int:
    """The number of bins of a per-bin analysis of ``m`` points: ``n_bins``, reduced so that
    every equal-count bin holds at least ``min_points`` points (and at least one bin).

    Parameters
    ----------
    m : int
        Number of points M.
    n_bins : int
        Number of bins wanted (default ``defaults.N_BINS_LOCAL``).
    min_points : int
        Least number of points per bin (default ``defaults.MIN_POINTS_PER_BIN_LOCAL``).

    Returns
    -------
    int
        ``min(n_bins, max(m // min_points, 1))``.

    Examples
    --------
    >>> recommended_n_bins(265)  # 13 bins of 20 or 21 points, not 100 bins of 2 or 3
    13
    >>> recommended_n_bins(100_000), recommended_n_bins(5000, 20), recommended_n_bins(7)
    (100, 20, 1)
    """
    for name, value in (("m", m), ("n_bins", n_bins), ("min_points", min_points)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return int(min(n_bins, max(m // min_points, 1)))


def resolve_n_bins(m: int | None, n_bins: int | None, default: int = defaults.N_BINS, *,
                   binned: bool = True,
                   min_points: int = defaults.MIN_POINTS_PER_BIN_LOCAL) -> int | None:
    """The number of bins an analysis of ``m`` points uses: the one place where the default
    ``n_bins=None`` of every binned analysis is resolved.

    ``n_bins=None`` gives :func:`recommended_n_bins` ``(m, default)``: the analysis's own
    default (``defaults.N_BINS`` for the binned statistics, reliability diagrams and local
    coverage, ``defaults.N_BINS_LOCAL`` for local z-score analyses), reduced so that every
    bin holds at least ``min_points`` points. At ``m >= default * min_points`` it is
    ``default`` (20 bins from M = 400 on, 100 local bins from M = 2000 on). A number given is
    used as asked; when ``binned`` and its bins hold fewer than ``min_points`` points, a
    :class:`FewPointsPerBinWarning` says so (:func:`warn_few_points_per_bin`). Values that
    the analysis will refuse (not a positive integer, fewer than :data:`MIN_POINTS_PER_BIN`
    points per bin) and an unknown or empty size are returned unchanged, without a warning,
    so that the analysis's own check names the problem.

    Parameters
    ----------
    m : int or None
        Number of points M of the data set (of the slice, for data with extra dimensions);
        ``None`` when unknown (``default`` is then returned for ``n_bins=None``).
    n_bins : int or None
        The number of bins asked for, or ``None`` for the recommended number.
    default : int
        The analysis's default number of bins, at most.
    binned : bool
        Whether the bins are used (a binned statistic is asked for): no warning otherwise.
    min_points : int
        Least number of points per bin (default ``defaults.MIN_POINTS_PER_BIN_LOCAL``).

    Returns
    -------
    int or None
        The number of bins.

    Warns
    -----
    FewPointsPerBinWarning
        When ``n_bins`` is given, ``binned``, and its bins hold fewer than ``min_points``
        points.

    Examples
    --------
    >>> resolve_n_bins(265, None), resolve_n_bins(5000, None), resolve_n_bins(265, None, 100)
    (13, 20, 13)
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     resolve_n_bins(265, 20), resolve_n_bins(265, 20, binned=False)
    (20, 20)
    >>> len(caught), caught[0].category.__name__
    (1, 'FewPointsPerBinWarning')
    """
    if n_bins is None:
        if m is None or isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
            return default
        return recommended_n_bins(int(m), default, min_points=min_points)
    if (binned and m is not None and not isinstance(n_bins, bool)
            and isinstance(n_bins, int | np.integer) and n_bins >= 1
            and m >= MIN_POINTS_PER_BIN * n_bins):
        warn_few_points_per_bin(int(m), int(n_bins), min_points=min_points)
    return n_bins


def points_per_bin(m: int, n_bins: int) -> tuple[int, int]:
    """Fewest and most points of the ``n_bins`` equal-count bins of ``m`` points.

    Examples
    --------
    >>> points_per_bin(265, 100)
    (2, 3)
    """
    return m // n_bins, -(-m // n_bins)


def warn_few_points_per_bin(m: int, n_bins: int, *, counts=None, argument: str = "n_bins",
                            source: str | None = None, advice: str | None = None,
                            per: str = "bin",
                            min_points: int = defaults.MIN_POINTS_PER_BIN_LOCAL) -> bool:
    """Warn (:class:`FewPointsPerBinWarning`) when the bins of a per-bin analysis hold fewer
    than ``min_points`` points; return whether it warned.

    Parameters
    ----------
    m : int
        Number of points M.
    n_bins : int
        Number of bins.
    counts : array-like, optional
        The points of every bin, when the bins are not ``n_bins`` equal-count bins of ``m``
        points (strata, groups, a 2-D grid, given bins).
    argument : str
        The argument that decided the bins (starts the message).
    source : str, optional
        What made the bins (default ``"n_bins=<n_bins> bins"``).
    advice : str, optional
        What to do instead (default: use at most :func:`recommended_n_bins` bins).
    per : str
        What a count is of (``"bin"``, or ``"group"`` for adversarial groups).
    min_points : int
        Least number of points per bin.

    Returns
    -------
    bool
        Whether it warned. The warning points at the first caller outside xuqcal.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_few_points_per_bin(265, 100)
    True
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    n_bins: n_bins=100 bins of M=265 points hold 2 to 3 points per bin, fewer than the 20 per
    bin below which per-bin intervals are unreliable; use at most 13 bins
    (xuqcal.core.binning.recommended_n_bins)
    >>> warn_few_points_per_bin(265, 13)
    False
    """
    if counts is None:
        low, high = points_per_bin(m, n_bins)
    else:
        counts = np.asarray(counts)
        low, high = int(counts.min()), int(counts.max())
    if low >= min_points:
        return False
    held = f"{low} to {high}" if high != low else f"{low}"
    if source is None:
        source = f"n_bins={n_bins} bins"
    if advice is None and m < min_points:  # fewer bins would not help
        advice = f"M={m} is too small for per-{per} intervals of {min_points} points"
    if advice is None:
        advice = (f"use at most {recommended_n_bins(m, max(int(n_bins), 1), min_points=min_points)}"
                  " bins (xuqcal.core.binning.recommended_n_bins)")
    warnings.warn(
        f"{argument}: {source} of M={m} points hold {held} points per {per}, fewer than the "
        f"{min_points} per {per} below which per-{per} intervals are unreliable; {advice}",
        FewPointsPerBinWarning, stacklevel=user_stacklevel())
    return True
