"""Public test helpers, as :mod:`xarray.testing`: assertions for xuqcal results and a
compute-counting scheduler; hypothesis strategies in :mod:`xuqcal.testing.strategies`.

Examples
--------
>>> import xuqcal
>>> from xuqcal.testing import assert_results_identical, count_computes
>>> ds = xuqcal.synthetic.nig(500, nu=6, seed=0).chunk()
>>> with count_computes() as computes:
...     lazy = ds.uqcal.bootstrap(["zms"], n_boot=100)
>>> computes.count
0
>>> assert_results_identical(lazy.compute(), xuqcal.bootstrap(ds.load(), ["zms"], n_boot=100))
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import dask
import xarray as xr

__all__ = ["ComputeCounter", "assert_lazy_until_compute", "assert_results_identical",
           "count_computes"]

#: Attributes that differ between two runs of the same computation (when, not how).
RUN_ATTRIBUTES = ("created",)


def _without_run_attributes(obj: xr.Dataset | xr.DataArray) -> xr.Dataset | xr.DataArray:
    obj = obj.copy(deep=False)
    obj.attrs = {k: v for k, v in obj.attrs.items() if k not in RUN_ATTRIBUTES}
    return obj


def assert_results_identical(actual: xr.Dataset | xr.DataArray,
                             expected: xr.Dataset | xr.DataArray, *,
                             attrs: bool = True) -> None:
    """Assert that two results are bit-identical: values, dimensions, coordinates and (with
    ``attrs=True``) attributes, except those that record when a result was made
    (:data:`RUN_ATTRIBUTES`). NaN equals NaN, as in :func:`xarray.testing.assert_identical`.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(300, nu=6, seed=0)
    >>> assert_results_identical(xuqcal.stats(ds, ["zms"]), xuqcal.stats(ds, ["zms"]))
    """
    if attrs:
        actual, expected = _without_run_attributes(actual), _without_run_attributes(expected)
        if isinstance(actual, xr.Dataset) and isinstance(expected, xr.Dataset):
            actual = actual.map(_without_run_attributes, keep_attrs=True)
            expected = expected.map(_without_run_attributes, keep_attrs=True)
        xr.testing.assert_identical(actual, expected)
    else:
        xr.testing.assert_equal(actual, expected)


@dataclass
class ComputeCounter:
    """The number of graph computations seen by :func:`count_computes`."""

    count: int = 0


@contextmanager
def count_computes() -> Iterator[ComputeCounter]:
    """Count the Dask computations run inside the block (a synchronous scheduler that counts
    its calls and delegates to :func:`dask.get`), as ``xarray.tests.raise_if_dask_computes``.

    Examples
    --------
    >>> import dask.array as da
    >>> with count_computes() as computes:
    ...     total = da.ones(10, chunks=5).sum()
    ...     _ = total.compute()
    >>> computes.count
    1
    """
    counter = ComputeCounter()

    def counting_get(*args, **kwargs):
        counter.count += 1
        return dask.get(*args, **kwargs)

    with dask.config.set(scheduler=counting_get):
        yield counter


def assert_lazy_until_compute(build, *args, **kwargs):
    """Call ``build(*args, **kwargs)``, assert that it ran no Dask computation and that its
    result holds Dask arrays, and return the result computed.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(500, nu=6, seed=0).chunk()
    >>> result = assert_lazy_until_compute(xuqcal.bootstrap, ds, ["zms"], n_boot=100)
    >>> result.estimate.shape
    (1,)
    """
    with count_computes() as computes:
        result = build(*args, **kwargs)
    if computes.count:
        raise AssertionError(f"{getattr(build, '__qualname__', build)}: computed "
                             f"{computes.count} time(s) before .compute()")
    variables = result.variables.values() if isinstance(result, xr.Dataset) else [result.variable]
    if not any(v.chunks is not None for v in variables):
        raise AssertionError(f"{getattr(build, '__qualname__', build)}: the result holds no "
                             "Dask array (not lazy)")
    return result.compute()
