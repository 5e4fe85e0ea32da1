"""Threads for NumPy work outside Dask's tasks.

NumPy's sorts, reductions and elementwise functions release the GIL, so work of the main
thread that splits into independent parts (tfit's log-likelihood in shares of points, the
BCa accelerations of several statistics) runs on every core with threads. It is used only
where no Dask task runs at the same time (a precision-driven validate between its rounds),
so that it never competes with Dask's own threads.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

__all__ = ["cores", "numpy_pool"]


def cores() -> int:
    """The cores this process may use (at least 1).

    Examples
    --------
    >>> cores() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


@functools.cache
def numpy_pool() -> ThreadPoolExecutor:
    """One pool of :func:`cores` threads for the process, made on first use.

    Examples
    --------
    >>> list(numpy_pool().map(abs, [-1, 2]))
    [1, 2]
    """
    return ThreadPoolExecutor(max_workers=cores(), thread_name_prefix="xuqcal-numpy")
