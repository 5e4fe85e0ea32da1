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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr
from dask.base import is_dask_collection, tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph
from dask.task_spec import List, Task, TaskRef
from dask.utils import funcname


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
    task = delayed_call(body, inputs, **kwargs)
    parts = {name: part_of(task, _part, (name, np.dtype(variable.dtype)), variable.shape,
                           variable.dtype)
             for name, variable in layout.variables.items()
             if name not in layout.indexes and variable.chunks is not None}  # else known
    # the data variables replaced in one copy of the layout (its dimensions and attributes
    # kept): one assignment per variable merged the Dataset again each time
    result = layout.copy(data={name: parts.get(name, variable.data)
                               for name, variable in layout.data_vars.items()})
    for name in [name for name in parts if name not in layout.data_vars]:  # a lazy coordinate
        variable = layout.variables[name]
        result[name] = xr.Variable(variable.dims, parts[name], variable.attrs)
    return result


def part_of(task: Delayed, function: Callable[..., np.ndarray], args: tuple,
            shape: tuple[int, ...], dtype: Any = np.float64) -> da.Array:
    """``function(value, *args)`` of the value that ``task`` computes (a part of it: an item,
    a variable), as a one-chunk Dask array of ``shape``: one task, where ``from_delayed`` of a
    Delayed call made two.

    Examples
    --------
    >>> import operator
    >>> pair = dask.delayed(divmod)(7, 2)
    >>> part_of(pair, operator.getitem, (1,), ()).compute()
    1
    """
    name = f"{funcname(function)}-{tokenize(task.key, function, args)}"
    key = (name, *(0,) * len(shape))
    layer = {key: Task(key, function, TaskRef(task.key), *args)}
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[task])
    return da.Array(graph, name, chunks=tuple((int(s),) for s in shape), dtype=dtype)


def delayed_call(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Delayed:
    """``dask.delayed(function, pure=True)(*args, **kwargs)``: one task of the values of
    ``args``, built without optimising the graphs of the Dask collections among them.

    Dask's ``delayed`` optimises (materialises and fuses) the graph of every collection
    argument when the call is built, and again when the result is computed. Here a
    collection (a Dask array, DataArray or Dataset) becomes one task that gathers its
    computed blocks (Dask's own ``__dask_postcompute__``) and a Delayed its key, so that the
    graph is optimised once, when it is computed (the serial start of the nine-set one call:
    ``benchmarks/measured/graph-nine-sets-delayed-call-*``). Arguments that are neither
    collections nor plain values (a ``dask.distributed`` Future, a container holding
    collections) take ``dask.delayed`` itself.

    Examples
    --------
    >>> import dask.array as da
    >>> total = delayed_call(sum, [1, 2], 3)
    >>> total.compute()
    6
    >>> delayed_call(np.add, da.ones(4, chunks=2), 1.0).compute().tolist()
    [2.0, 2.0, 2.0, 2.0]
    """
    nodes, tokens, dependencies, layer = [], [], [], {}
    keywords = {name: _node(value, layer, dependencies) for name, value in kwargs.items()}
    if any(node is _NOT_PLAIN for node in keywords.values()):
        return dask.delayed(function, pure=True)(*args, **kwargs)
    for value in args:
        if isinstance(value, tuple) and not _is_namedtuple(value):
            inner = [_node(v, layer, dependencies) for v in value]
            if any(node is _NOT_PLAIN for node in inner):
                return dask.delayed(function, pure=True)(*args, **kwargs)
            if any(isinstance(node, TaskRef) for node in inner):  # the tuple of their values
                nodes.append(Task(None, tuple, List(*inner)))
                tokens.append(tuple(_token_of(v, n) for v, n in zip(value, inner,
                                                                    strict=True)))
            else:
                nodes.append(value)
                tokens.append(value)
            continue
        node = _node(value, layer, dependencies)
        if node is _NOT_PLAIN:
            return dask.delayed(function, pure=True)(*args, **kwargs)
        nodes.append(node)
        tokens.append(_token_of(value, node))
    named_keywords = {name: _token_of(kwargs[name], node) for name, node in keywords.items()}
    name = f"{funcname(function)}-{tokenize(function, tokens, named_keywords)}"
    layer[name] = Task(name, function, *nodes, **keywords)
    return Delayed(name, HighLevelGraph.from_collections(name, layer,
                                                         dependencies=dependencies))


def _node(value: Any, layer: dict, dependencies: list) -> Any:
    """The argument ``value`` of a task of :func:`delayed_call`: a reference to its computed
    value (a finalising task added to ``layer`` for a collection), the value itself when it
    is plain, :data:`_NOT_PLAIN` when neither."""
    if isinstance(value, Delayed):
        dependencies.append(value)
        return TaskRef(value.key)
    if is_dask_collection(value):
        finalize, extra = value.__dask_postcompute__()
        key = f"finalize-{tokenize(value)}"
        layer[key] = Task(key, finalize, _references(value.__dask_keys__()), *extra)
        dependencies.append(value)
        return TaskRef(key)
    return value if _plain(value) else _NOT_PLAIN


#: What :func:`_node` gives for an argument that only ``dask.delayed`` can take.
_NOT_PLAIN = object()


def _references(keys: Any) -> Any:
    """The nested lists of a collection's keys as nested lists of references."""
    if isinstance(keys, list):
        return List(*(_references(k) for k in keys))
    return TaskRef(keys)


def _token_of(value: Any, node: Any) -> Any:
    """What names ``value`` in the token of a :func:`delayed_call` task: the key of its
    reference (a collection is named by its finalising task), or the value itself."""
    return ("ref", node.key) if isinstance(node, TaskRef) else value


def _is_namedtuple(value: Any) -> bool:
    return hasattr(value, "_fields")


def _plain(value: Any) -> bool:
    """Whether ``value`` holds no Dask collection nor Future (a task may take it as it is):
    containers are looked into, other objects are taken as they are."""
    if is_dask_collection(value) or isinstance(value, TaskRef):
        return False
    if isinstance(value, list | tuple | set | frozenset):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return True


def blocks_along(function: Callable[..., np.ndarray], shared_input: Delayed, args: Sequence,
                 bounds: Sequence[tuple[int, int]], tail: tuple[int, ...]) -> da.Array:
    """A ``(sum of (stop - start), *tail)`` float64 Dask array of one task per pair of
    ``bounds``: ``function(shared_input, *args, start, stop)``, the ``(stop - start, *tail)``
    block of rows ``start .. stop - 1``; ``shared_input`` (and any Delayed or Dask
    collection among ``args``, as :func:`delayed_call` takes them) is computed once for all
    of them.

    One graph layer of one task per block, where ``dask.delayed`` calls, ``from_delayed`` and
    ``concatenate`` made three (:func:`~xuqcal.analysis.resampling.blocks_along_replicate`).

    Examples
    --------
    >>> rows = lambda offset, start, stop: offset + np.arange(start, stop, dtype=float)[:, None]
    >>> blocks_along(rows, dask.delayed(10.0), (), [(0, 2), (2, 5)], (1,)).compute().ravel()
    array([10., 11., 12., 13., 14.])
    """
    dependencies, layer = [shared_input], {}
    nodes = [_node(value, layer, dependencies) for value in args]
    if any(node is _NOT_PLAIN for node in nodes):
        raise TypeError(f"blocks_along: the arguments {list(args)!r} hold a Future or a "
                        "container of Dask collections; pass their Delayed instead")
    sizes = tuple(stop - start for start, stop in bounds)
    named_args = [_token_of(v, n) for v, n in zip(args, nodes, strict=True)]
    name = f"{funcname(function)}-{tokenize(function, shared_input.key, named_args, bounds)}"
    zeros = (0,) * len(tail)
    for i, (start, stop) in enumerate(bounds):
        key = (name, i, *zeros)
        layer[key] = Task(key, function, TaskRef(shared_input.key), *nodes, start, stop)
    graph = HighLevelGraph.from_collections(name, layer, dependencies=dependencies)
    return da.Array(graph, name, chunks=(sizes, *((int(t),) for t in tail)), dtype=np.float64)


def rows_at(values: np.ndarray, positions: np.ndarray, axis: int = 0) -> np.ndarray:
    """``values`` (float64) indexed by ``positions`` along ``axis``, NaN where a position is
    -1: a result laid out on more labels (a reindex), in a task of its own or of the task
    that computes the values.

    Examples
    --------
    >>> rows_at(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1, -1, 0]), 0).tolist()
    [[3.0, 4.0], [nan, nan], [1.0, 2.0]]
    """
    shape = list(values.shape)
    shape[axis] = positions.shape[0]
    out = np.full(shape, np.nan)
    present = np.flatnonzero(positions >= 0)
    index = [slice(None)] * values.ndim
    index[axis] = present
    out[tuple(index)] = np.take(values, positions[present], axis=axis)
    return out


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
