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
from typing import Any

import dask
import xarray as xr

__all__ = ["ComputeCounter", "assert_lazy_until_compute", "assert_results_identical",
           "assert_slice_identical", "count_computes"]

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


#: Attributes of a stacked result that describe the stacking, not one slice.
STACKING_ATTRIBUTES = ("slice_dims", "slices")


def assert_slice_identical(stacked: xr.Dataset | xr.DataArray,
                           expected: xr.Dataset | xr.DataArray, **labels: Any) -> None:
    """Assert that the slice ``labels`` of a result stacked over extra dimensions
    (:mod:`xuqcal.analysis.slices`) is bit-identical to ``expected``, the same analysis of that
    slice alone: values, dimensions, coordinates and attributes (the slice's ``n_samples``
    coordinate against the ``n_samples`` attribute when ``expected`` has one), after undoing
    the stacking (the padding of ragged dimensions, the reindexing of ``sample``).

    Examples
    --------
    >>> import xuqcal
    >>> a = xuqcal.synthetic.nig(300, nu=6, seed=0)
    >>> b = xuqcal.synthetic.nig(200, nu=6, seed=1)
    >>> both = xr.concat([a, b], dim="model", join="outer").assign_coords(model=["a", "b"])
    >>> assert_slice_identical(xuqcal.stats(both), xuqcal.stats(b), model="b")
    """
    from xuqcal.analysis.slices import RAGGED_DIMS

    # the data's own coordinates along the extra dimensions (the ``source`` of stacked files)
    # label the slices; the single call has them as attributes or not at all
    variable_attrs = {f"{name}_{key}" for name, var in expected.variables.items()
                      for key in var.attrs} if isinstance(expected, xr.Dataset) else set()
    along = [name for name, coord in stacked.coords.items() if coord.dims
             and set(coord.dims) <= set(labels) and name not in labels
             and name not in expected.coords and name not in expected.attrs
             and name != "n_samples" and name not in variable_attrs]
    actual = stacked.drop_vars(along).sel(labels)
    n_samples = actual.coords.get("n_samples")
    actual = actual.drop_vars([name for name in (*labels, "n_samples") if name in actual.coords])
    if "sample" in expected.dims:
        actual = actual.sel(sample=expected["sample"])
    for dim in RAGGED_DIMS:
        if dim in expected.dims:
            actual = actual.isel({dim: slice(0, expected.sizes[dim])})
            if dim in expected.indexes and dim in actual.indexes:
                actual = actual.assign_coords({dim: expected[dim]})
    actual = actual.copy(deep=False)
    actual.attrs = {k: v for k, v in actual.attrs.items() if k not in STACKING_ATTRIBUTES}
    # attributes that differ between slices became coordinates over the extra dimensions
    moved = [name for name, coord in actual.coords.items() if coord.ndim == 0
             and name not in expected.coords and name in expected.attrs]
    for name in moved:
        actual.attrs[name] = actual.coords[name].values.item()
    actual = actual.drop_vars(moved)
    # and so did the variable attributes that differ (``<variable>_<attribute>``)
    for var_name, var in (expected.variables.items() if isinstance(expected, xr.Dataset)
                          else []):
        for key in var.attrs:
            label = f"{var_name}_{key}"
            if label in actual.coords and actual.coords[label].ndim == 0 \
                    and label not in expected.coords:
                value = actual.coords[label].values.item()
                actual = actual.drop_vars(label)
                target = actual[var_name].variable
                target.attrs = {k: (value if k == key else v) for k, v in var.attrs.items()
                                if k in target.attrs or k == key}
    if moved:
        actual.attrs = {k: actual.attrs[k] for k in
                        [*[k for k in expected.attrs if k in actual.attrs],
                         *[k for k in actual.attrs if k not in expected.attrs]]}
    expected = expected.copy(deep=False)
    if "n_samples" in expected.attrs:
        count = expected.attrs["n_samples"]
        expected.attrs = {k: v for k, v in expected.attrs.items() if k != "n_samples"}
        if n_samples is None or int(n_samples) != int(count):
            raise AssertionError(f"n_samples: the slice has "
                                 f"{None if n_samples is None else int(n_samples)} present "
                                 f"points, the single call {count}")
    if isinstance(expected, xr.DataArray) and isinstance(actual, xr.DataArray):
        actual = actual.rename(expected.name)
    assert_results_identical(actual, expected)


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
