"""Moving-window kernels over ``sample`` (no labels), compiled into Numba's cache.

:func:`trailing_mean` is the algorithm of :func:`numbagg.move_mean` (running sums with NaN
values skipped), written here so that it is compiled once per machine: numbagg compiles its
functions anew in every process (it does not cache them), on the first running statistic of
every ``xuqcal`` command that made one (``xuqcal demo``, fresh processes alternated ×3: median
6.072 → 5.444 s, ``benchmarks/measured/ab-cli-demo-running-mean-issue26-2026-11-27.json``).
The values are numbagg's bit for bit (``tests/test_running.py`` compares them).
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["trailing_mean"]


@nb.njit(nogil=True, cache=True)
def trailing_mean(a: np.ndarray, window: int, min_count: int, out: np.ndarray) -> None:
    """``out[j]``, the mean of the values of ``a[j - window + 1 : j + 1]`` that are not NaN
    (the first ``window`` positions: of ``a[: j + 1]``), NaN where fewer than ``min_count``
    (at least 1) are: :func:`numbagg.move_mean`'s running sums, the same additions and
    subtractions in the same order. ``1 <= window <= len(a)``.

    Examples
    --------
    >>> out = np.empty(5)
    >>> trailing_mean(np.array([1.0, 2.0, np.nan, 4.0, 5.0]), 2, 1, out)
    >>> out.tolist()
    [1.0, 1.5, 2.0, 4.0, 4.5]
    """
    asum = 0.0
    count = 0
    min_count = max(min_count, 1)
    for i in range(window):
        ai = a[i]
        if not np.isnan(ai):
            asum += ai
            count += 1
        out[i] = asum / count if count >= min_count else np.nan
    for i in range(window, a.shape[0]):
        ai = a[i]
        aold = a[i - window]
        if not np.isnan(aold):
            asum -= aold
            count -= 1
        if not np.isnan(ai):
            asum += ai
            count += 1
        out[i] = asum / count if count >= min_count else np.nan
