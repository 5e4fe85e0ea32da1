"""How every analysis of :mod:`xuqcal.analysis` stays lazy on Dask-backed data.

An analysis is written once, as an eager function ``body(ds)`` of a NumPy-backed Dataset. When
the variables it reads are NumPy-backed, it is called directly and the result is computed (as
xskillscore does). When any of them is Dask-backed, :func:`lazy_result` wraps ``body`` in one
:func:`dask.delayed` task (the data are computed by Dask as the task's input, once) and returns
a Dataset of Dask arrays shaped as ``template``: nothing is computed until ``.compute()``, and
the checks of values that ``body`` runs (NaN, ``uE <= 0``, ...) raise their ``ValueError`` at
compute time. The shapes of a result are known from the arguments (``n_bins``, statistics,
``k``, ``p``, ...), so every template is built before any computation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr
from dask.delayed import Delayed


def is_lazy(ds: xr.Dataset, names: Iterable[str]) -> bool:
    """Whether any of the variables ``names`` of ``ds`` is Dask-backed (no data are read).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(10, nu=6, seed=0)
    >>> is_lazy(ds, ["E", "uE"]), is_lazy(ds.chunk(), ["E", "uE"])
    (False, True)
    """
    return any(ds[name].chunks is not None for name in dict.fromkeys(names))


def template(variables: Mapping[str, tuple[tuple[str, ...], Any, Mapping[str, Any]]],
             sizes: Mapping[str, int], coords: Mapping[str, Any] | None = None,
             lazy_coords: Iterable[str] = (), attrs: Mapping[str, Any] | None = None
             ) -> xr.Dataset:
    """A result's layout: ``variables`` maps a name to ``(dims, dtype, attrs)``; their data are
    empty Dask arrays of the ``sizes`` of their dimensions, replaced by :func:`lazy_result`.
    ``coords`` are coordinates known in advance; the names in ``lazy_coords`` (listed in
    ``variables``) become coordinates computed with the data.

    Examples
    --------
    >>> t = template({"value": (("bin",), float, {})}, {"bin": 3}, {"bin": np.arange(3)})
    >>> t.value.shape, t.value.chunks is not None
    ((3,), True)
    """
    data = {}
    for name, (dims, dtype, var_attrs) in variables.items():
        shape = tuple(int(sizes[d]) for d in dims)
        data[name] = xr.Variable(dims, placeholder(shape, dtype), dict(var_attrs))
    lazy_coords = [c for c in lazy_coords if c in data]
    result = xr.Dataset({k: v for k, v in data.items() if k not in lazy_coords},
                        coords={**(coords or {}), **{c: data[c] for c in lazy_coords}},
                        attrs=dict(attrs or {}))
    return result


def placeholder(shape: tuple[int, ...] | int, dtype: Any = np.float64) -> da.Array:
    """Stand-in data of a layout variable (replaced by :func:`lazy_result`): a result built
    by one constructor from values (computed) or placeholders (its layout) cannot disagree.

    Examples
    --------
    >>> placeholder((2, 3)).shape
    (2, 3)
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _placeholder(tuple(int(s) for s in shape), np.dtype(dtype))


@functools.lru_cache(maxsize=256)
def _placeholder(shape: tuple[int, ...], dtype: np.dtype) -> da.Array:
    # one immutable array per shape and dtype, named so that Dask does not tokenize
    # (cloudpickle) np.empty: layouts are built on the eager path too (for the attributes),
    # where creating a Dask array per variable dominated small analyses (recalibration scans);
    # a placeholder is replaced by lazy_result and never reaches a computed graph
    return da.empty(shape, dtype=dtype, chunks=shape or (),
                    name=f"xuqcal-placeholder-{dtype.str}-{'x'.join(map(str, shape))}")


def _part(result: xr.Dataset, name: str, dtype: Any) -> np.ndarray:
    """The values of one variable of a computed result (as the template's dtype)."""
    return np.asarray(result[name].values, dtype=dtype)


def lazy_result(body: Callable[..., xr.Dataset], inputs: Any, layout: xr.Dataset,
                **kwargs: Any) -> xr.Dataset:
    """``body(inputs, **kwargs)`` as a Dataset of Dask arrays laid out as ``layout`` (see
    :func:`template`), computed by one task when the result is computed.

    ``inputs`` may be any Dask collection or a tuple of them (Datasets, Delayed): Dask
    computes them before ``body`` runs, so ``body`` sees NumPy-backed data.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(10, nu=6, seed=0).chunk()
    >>> layout = template({"m": ((), float, {})}, {})
    >>> r = lazy_result(lambda d: xr.Dataset({"m": d.E.mean()}), ds[["E"]], layout)
    >>> r.m.chunks is not None, bool(np.isfinite(r.m.compute()))
    (True, True)
    """
    task = dask.delayed(body, pure=True)(inputs, **kwargs)
    parts = {}
    for name, variable in layout.variables.items():
        if name in layout.indexes or variable.chunks is None:  # known in advance
            continue
        part = dask.delayed(_part, pure=True)(task, name, variable.dtype)
        parts[name] = da.from_delayed(part, variable.shape, dtype=variable.dtype)
    # the data variables replaced in one copy of the layout (its dimensions and attributes
    # kept): one assignment per variable merged the Dataset again each time
    result = layout.copy(data={name: parts.get(name, variable.data)
                               for name, variable in layout.data_vars.items()})
    for name in [name for name in parts if name not in layout.data_vars]:  # a lazy coordinate
        variable = layout.variables[name]
        result[name] = xr.Variable(variable.dims, parts[name], variable.attrs)
    return result


def analysis(body: Callable[..., xr.Dataset], ds: xr.Dataset, names: Iterable[str],
             layout: Callable[[], xr.Dataset], **kwargs: Any) -> xr.Dataset:
    """``body(ds[names])``: computed for NumPy-backed variables, lazy (:func:`lazy_result`
    with ``layout()``) when any of them is Dask-backed.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(10, nu=6, seed=0)
    >>> f = lambda d: xr.Dataset({"m": d.E.mean()})
    >>> lay = lambda: template({"m": ((), float, {})}, {})
    >>> analysis(f, ds, ["E"], lay).m.chunks is None, analysis(f, ds.chunk(), ["E"], lay
    ...                                                          ).m.chunks is None
    (True, False)
    """
    names = list(dict.fromkeys(names))
    inputs = ds[names]
    if is_lazy(ds, names):
        return lazy_result(body, inputs, layout(), **kwargs)
    return with_layout_attrs(body(inputs, **kwargs), layout())


def with_layout_attrs(result: xr.Dataset, layout: xr.Dataset) -> xr.Dataset:
    """``result`` with the attributes of ``layout`` (of the Dataset and of every variable): the
    layout is the one place that describes a result, computed or lazy; the coordinates known
    in advance are taken from it too."""
    result = result.assign_coords({name: layout[name] for name in layout.coords
                                   if name not in result.coords})
    for name, variable in layout.variables.items():
        if name in result.variables:
            result[name].attrs = dict(variable.attrs)
    result.attrs = dict(layout.attrs)
    return result


def shared(value: Any) -> Any:
    """``value`` as an input of Dask graphs: itself, or, when a ``dask.distributed`` client
    is active and ``value`` is a large in-memory object (a NumPy array, a prepared data set),
    a Future of it scattered once to the workers, so that the graphs that use it (each round
    of a precision-driven run, every slice) do not carry its bytes to the scheduler again
    (``UserWarning: Sending large graph``).

    Examples
    --------
    >>> shared(np.arange(3)).tolist()  # no client: the value itself
    [0, 1, 2]
    """
    from xuqcal.core.memory import active_client

    client = active_client()
    if client is None or isinstance(value, da.Array | Delayed):
        return value
    size = getattr(value, "nbytes", None)
    if size is not None and size < _SCATTER_BYTES:
        return value
    return client.scatter(value, broadcast=True, hash=False)


#: Arrays smaller than this travel inside the graph (scattering has its own cost).
_SCATTER_BYTES = 1_000_000
