"""Many data sets in one call: every analysis broadcasts over the extra dimensions of its data.

An analysis of :mod:`xuqcal.analysis` is written for one data set: ``E`` and ``uE`` 1-D over
``sample``. :func:`broadcast` lifts it to data whose variables over ``sample`` carry other
dimensions too (``model``, ``task``, ``seed``, ``fold``, ``dataset``, ...), as xskillscore and
flox reduce over a core dimension and broadcast over every other one:

- a **slice** is one combination of labels of the extra dimensions of ``E`` and ``uE``; a
  variable without one of them (a feature 1-D over ``sample``) is shared by every slice;
- a point where ``E`` and ``uE`` are *both* NaN is **absent** from that slice (what
  ``xr.concat`` of sets of different lengths and a multi-task mask produce): each slice is
  analysed on its present points only (its own M, its own bins). A point where only one of them
  is NaN, any inf or ``uE <= 0`` is an error naming the variable, the slice's labels and the
  rows;
- the extra dimensions are checked before any work: none may be empty, hold a label twice,
  or bear the name of a dimension of the results (:data:`RESERVED_DIMS`: ``statistic``,
  ``scheme``, ``bin``, ...); a DataTree node holding neither ``E`` nor ``uE`` is skipped when
  it has children (a group) and refused by its path otherwise;
- a warning raised while a slice's analysis is built (or computed, for NumPy-backed data whose
  analysis computes at once, such as a recalibration fit) starts with the slice's labels; those
  raised inside the tasks of the graph keep their own text;
- each slice's result is **bit-identical** to the same analysis of that slice alone (the
  same function, the same seed, on the same points), whatever the other slices, their order,
  the chunking and the scheduler;
- the results are stacked along the extra dimensions (in the order of the data), with the
  coordinate ``n_samples`` (present points per slice). A result dimension whose length depends
  on M (``rank`` of :func:`~xuqcal.running_statistics`) is padded at its end with missing
  values (NaN, ``-1`` for integers); a result over ``sample`` is reindexed onto the data's
  ``sample`` coordinate (missing values at absent points).

**Laziness.** NumPy-backed data: every slice's analysis is built as a Dask graph (slices ×
replicate chunks) and the stacked result is computed in one ``compute`` with the configured
scheduler, so slices run in parallel. Dask-backed data: nothing is computed; each slice is one
task that reads its data, drops its absent points and runs the analysis (whose graph runs on
the synchronous scheduler inside the task); the slices run in parallel, and the number of
present points is known only when computed. The default number of bins of a binned analysis
depends on it (:func:`~xuqcal.core.binning.resolve_n_bins`): a slice whose present points call
for fewer bins than all its rows would is refused when computed, naming the slice (load the
data first, or give ``n_bins``).

**DataTree.** An :class:`xarray.DataTree` holds one data set per node (different ``sample``
lengths and feature sets allowed). Its nodes are analysed as slices labelled by their paths
along the dimension ``dataset``. The results are stacked when they have the same layout;
when they cannot be (results over ``sample``, or dimensions whose coordinates differ between
nodes, e.g. the rank correlations of different feature sets), a DataTree of the results with
the input's paths is returned.
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from xuqcal.analysis.lazy import lazy_result, placeholder
from xuqcal.analysis.tables import RESULT_DIMS
from xuqcal.core import defaults
from xuqcal.core.checks import check_name
from xuqcal.core.statistics import check_numeric_dtype
from xuqcal.io.schema import (
    SAMPLE_DIM,
    extra_dims,
    present_points,
    roles,
    slice_label,
    slice_positions,
)

__all__ = ["DATASET_DIM", "RAGGED_DIMS", "broadcast", "extra_dims", "slice_label"]

DATASET_DIM = "dataset"
"""The dimension along which the nodes of a DataTree are stacked."""

RAGGED_DIMS = ("rank", "knot")
"""Result dimensions whose length depends on the data (padded at their end): the ranks of
:func:`~xuqcal.running_statistics`, the knots of an isotonic recalibrator."""

#: Attributes that describe one slice; they become coordinates over the extra dimensions.
_PER_SLICE_ATTRS = ("n_samples",)


# --------------------------------------------------------------------------------------------
# Slices of a data set
# --------------------------------------------------------------------------------------------


def sample_variables(ds: xr.Dataset) -> list[str]:
    """The data variables of ``ds`` over ``sample`` (those an analysis may read).

    Examples
    --------
    >>> import xuqcal
    >>> sample_variables(xuqcal.synthetic.nig(10, nu=6, seed=0))
    ['E', 'uE']
    """
    return [str(name) for name, var in ds.data_vars.items() if SAMPLE_DIM in var.dims]


def _with_sample_coordinate(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with a ``sample`` coordinate (the row positions when it has none), so that the
    rows named by messages and the reindexing of results over ``sample`` survive the removal of
    absent points."""
    if SAMPLE_DIM in ds.coords:
        return ds
    return ds.assign_coords({SAMPLE_DIM: np.arange(ds.sizes[SAMPLE_DIM])})


def _absent(ds: xr.Dataset, E: str, uE: str) -> xr.DataArray:
    """The absent points: ``E`` and ``uE`` both NaN (lazy for Dask-backed data)."""
    return np.isnan(ds[E]) & np.isnan(ds[uE])


#: Dimensions of the results of the analyses, refused as extra dimensions of the data (the
#: stacked results would hold two dimensions of one name): those of every stacked result
#: (:data:`~xuqcal.analysis.tables.RESULT_DIMS`), the bins and lags of the local analyses, the
#: ragged ones and the scores of the coverage curves. A clash with a dimension of one analysis
#: only (``replicate`` of a bootstrap that keeps its replicates, ...) is refused when its
#: result is laid out: ``replicate`` is a common name of an extra dimension (repeated data
#: sets), which the analyses whose results have no such dimension accept.
RESERVED_DIMS = (*RESULT_DIMS, "bin", "lag", *RAGGED_DIMS, "score")


def _check_slice_dims(ds: xr.Dataset, dims: Sequence[str], data: str,
                      reserved: Sequence[str] = RESERVED_DIMS) -> None:
    """The extra dimensions ``dims`` of ``ds`` can index slices: none named as a result
    dimension, none of length 0, no label twice (no data are read).

    Examples
    --------
    >>> ds = xr.Dataset({"E": (("model", "sample"), np.ones((2, 3)))},
    ...                 coords={"model": ["a", "a"]})
    >>> _check_slice_dims(ds, ["model"], "ds")
    Traceback (most recent call last):
    ...
    ValueError: ds: the labels of the extra dimension 'model' must be unique, got 'a' 2 times
    """
    for dim in dims:
        if dim in reserved:
            raise ValueError(
                f"{data}: the extra dimension {dim!r} has the name of a dimension of the "
                f"results ({', '.join(map(repr, reserved))}); rename it, e.g. "
                f"{data}.rename({{{dim!r}: '{dim}_'}})")
        if ds.sizes[dim] == 0:
            raise ValueError(f"{data}: the extra dimension {dim!r} has length 0: there is no "
                             "data set to analyse")
        if dim in ds.indexes and not ds.indexes[dim].is_unique:
            index = ds.indexes[dim]
            counts = index.value_counts()
            twice = counts[counts > 1]
            listed = ", ".join(f"{label!r} {count} times" for label, count in twice.items())
            raise ValueError(f"{data}: the labels of the extra dimension {dim!r} must be "
                             f"unique, got {listed}")


def _check_layout_dims(results: Sequence[Any], dims: Sequence[str], data: str) -> None:
    """No result of a slice has an extra dimension of the data (before any computation)."""
    for result in results:
        clash = [d for d in dims if d in result.dims]
        if clash:
            raise ValueError(
                f"{data}: the extra dimension {clash[0]!r} has the name of a dimension of this "
                f"analysis's results; rename it, e.g. {data}.rename({{{clash[0]!r}: "
                f"'{clash[0]}_'}})")


def check_data_variables(ds: object, E: object = defaults.E, uE: object = defaults.UE, *,
                         extra_dims: bool = False) -> tuple[str, str]:
    """Check that ``ds`` is a Dataset over ``sample`` holding numeric variables ``E`` and
    ``uE`` (names, dimensions and dtypes only: no data are read) and return the two names.

    Only 1-D data over ``sample`` are accepted, unless ``extra_dims`` (the broadcasting layer,
    this module, checks the variables before slicing them).

    Examples
    --------
    >>> import xuqcal
    >>> check_data_variables(xuqcal.synthetic.nig(10, nu=6, seed=0))
    ('E', 'uE')
    """
    if not isinstance(ds, xr.Dataset):
        raise ValueError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    for role, var in (("E", E), ("uE", uE)):
        check_name(var, role)
        if var not in ds.data_vars:
            raise ValueError(f"{role}: the dataset has no variable {var!r} (data variables: "
                             f"{', '.join(map(str, ds.data_vars)) or 'none'})")
        dims = ds[var].dims
        if "sample" not in dims:
            raise ValueError(f"{role}: the variable {var!r} has no dimension 'sample' "
                             f"(dimensions {dims})")
        if not extra_dims and dims != ("sample",):
            other = [d for d in dims if d != "sample"]
            raise ValueError(f"{role}: expected a 1-D variable over 'sample', but {var!r} has "
                             f"dimensions {dims}; this function takes one data set: select one "
                             f"slice, e.g. ds.isel({other[0]}=0) (the analyses of xuqcal "
                             "broadcast over extra dimensions)")
        check_numeric_dtype(ds[var].dtype, role, var)
    if ds.sizes["sample"] == 0:
        raise ValueError("ds: empty data: the dataset has 0 rows along 'sample'")
    return str(E), str(uE)


def _check_roles(ds: xr.Dataset, E: str, uE: str) -> None:
    """``E`` and ``uE`` are numeric variables of ``ds`` over ``sample`` (no data are read)."""
    check_data_variables(ds, E, uE, extra_dims=True)


# --------------------------------------------------------------------------------------------
# Stacking the results of the slices
# --------------------------------------------------------------------------------------------


_VALUE = "__xuqcal_value__"


def _as_dataset(result: Any) -> xr.Dataset:
    """A result as a Dataset (a DataArray becomes its one variable, see :func:`_like`)."""
    if isinstance(result, xr.DataArray):
        return result.to_dataset(name=_VALUE, promote_attrs=True)
    return result


def _like(result: xr.Dataset, template: Any) -> Any:
    """``result`` as the type of ``template`` (the DataArray of :func:`_as_dataset`)."""
    if isinstance(template, xr.DataArray):
        array = result[_VALUE].rename(template.name)
        array.attrs = dict(result.attrs)
        return array
    return result


def _computed_in_task(layout: Any) -> xr.Dataset:
    """The layout of a Dask-backed slice as a Dataset whose every variable but the indexes is
    computed by the slice's task: the values a layout knows in advance (``n_removed`` of
    :func:`~xuqcal.curves.ablation`) were computed from all the rows, absent ones included."""
    layout = _as_dataset(layout)
    variables = {}
    for name, var in layout.variables.items():
        if name not in layout.indexes and var.chunks is None:
            var = xr.Variable(var.dims, placeholder(var.shape, var.dtype), var.attrs)
        variables[name] = var
    return xr.Dataset({name: variables[name] for name in layout.data_vars},
                      coords={name: variables[name] for name in layout.coords},
                      attrs=layout.attrs)


def _without_attrs(result: Any) -> Any:
    """``result`` without its own attributes (its variables keep theirs)."""
    result = result.copy(deep=False)
    result.attrs = {}
    return result


def _fill_value(dtype: np.dtype) -> Any:
    kind = np.dtype(dtype).kind
    return {"f": np.nan, "c": np.nan, "i": -1, "u": 0, "b": False, "O": "", "U": ""}.get(
        kind, np.nan)


def _conform(result: Any, sizes: Mapping[str, int], sample: pd.Index | None) -> Any:
    """``result`` with its ragged dimensions at the ``sizes`` of the stacked result: a ragged
    dimension padded at its end, ``sample`` reindexed onto ``sample`` (missing values at absent
    points), each variable filled by :func:`_fill_value` of its dtype."""
    if sample is not None and SAMPLE_DIM in result.dims and (
            result.sizes[SAMPLE_DIM] != len(sample)):
        result = _reindex_sample(result, sample)
    for dim in RAGGED_DIMS:
        if dim in result.dims and result.sizes[dim] < sizes[dim]:
            result = _pad(result, dim, sizes[dim] - result.sizes[dim])
    return result


def _map_variables(result: Any, transform: Callable[[xr.Variable], xr.Variable],
                   dim: str) -> Any:
    """``result`` (DataArray or Dataset) with ``transform`` applied to every variable over
    ``dim`` (data and coordinates), keeping names and attributes."""
    if isinstance(result, xr.DataArray):
        return _like(_map_variables(_as_dataset(result), transform, dim), result)
    variables = {name: (transform(var) if dim in var.dims else var)
                 for name, var in result.variables.items()}
    coords = [name for name in result.coords]
    out = xr.Dataset({name: variables[name] for name in result.data_vars},
                     coords={name: variables[name] for name in coords}, attrs=result.attrs)
    return out


def _pad(result: Any, dim: str, count: int) -> Any:
    def pad(var: xr.Variable) -> xr.Variable:
        fill = _fill_value(var.dtype)
        axis = var.dims.index(dim)
        widths = [(0, count if i == axis else 0) for i in range(var.ndim)]
        data = var.data
        if var.dtype.kind in "OU":
            padded = np.pad(np.asarray(data, dtype=object), widths, constant_values=fill)
        elif isinstance(data, da.Array):
            padded = da.pad(data, widths, mode="constant", constant_values=fill)
        else:
            padded = np.pad(data, widths, mode="constant", constant_values=fill)
        return xr.Variable(var.dims, padded, var.attrs)

    if dim in result.indexes:  # a positional coordinate continues
        index = np.asarray(result.indexes[dim])
        result = result.drop_indexes(dim) if hasattr(result, "drop_indexes") else result
        start = int(index[-1]) + 1 if index.size and index.dtype.kind in "iu" else index.size
        new = np.concatenate([index, np.arange(start, start + count, dtype=index.dtype
                                               if index.dtype.kind in "iu" else int)])
        result = _map_variables(result.drop_vars(dim), pad, dim)
        return result.assign_coords({dim: new})
    return _map_variables(result, pad, dim)


def _reindex_sample(result: Any, sample: pd.Index) -> Any:
    positions = sample.get_indexer(pd.Index(np.asarray(result[SAMPLE_DIM].values)))

    def place(var: xr.Variable) -> xr.Variable:
        axis = var.dims.index(SAMPLE_DIM)
        shape = list(var.shape)
        shape[axis] = len(sample)
        dtype = var.dtype if var.dtype.kind != "b" else np.dtype(bool)
        out = np.full(shape, _fill_value(dtype), dtype=dtype if dtype.kind != "U" else object)
        index = [slice(None)] * var.ndim
        index[axis] = positions
        out[tuple(index)] = np.asarray(var.values)
        return xr.Variable(var.dims, out, var.attrs)

    result = _map_variables(result.drop_vars(SAMPLE_DIM), place, SAMPLE_DIM)
    return result.assign_coords({SAMPLE_DIM: np.asarray(sample)})


def _stack(results: list[Any], dims: Sequence[str], labels: Sequence[pd.Index],
           has_index: Sequence[bool], varying: Sequence[str] | None = None) -> Any:
    """The results of the slices (in the order of ``itertools.product`` of ``labels``) stacked
    along ``dims`` (nested concatenation: the first dimension outermost). The coordinates that
    are not the same NumPy values in every slice (``bin_low`` of per-slice bins, lazy ones) are
    stacked too; the others are kept once."""
    if varying is None:
        varying = _varying_coords(results)
    if not dims:
        return results[0]
    inner = int(np.prod([len(values) for values in labels[1:]], dtype=int))
    groups = [_stack(results[i * inner:(i + 1) * inner], dims[1:], labels[1:], has_index[1:],
                     varying) for i in range(len(labels[0]))]
    dim = labels[0].rename(dims[0]) if has_index[0] else dims[0]
    return xr.concat(groups, dim=dim, data_vars="all", coords=list(varying),
                     compat="override", combine_attrs="override", join="override")


def _varying_coords(results: Sequence[Any]) -> list[str]:
    """The non-index coordinates of the results that differ between slices (or are lazy)."""
    first = results[0]
    varying = []
    for name, coord in first.coords.items():
        if name in first.indexes:
            continue
        for result in results:
            other = result.coords.get(name)
            if (other is None or coord.chunks is not None or other.chunks is not None
                    or not other.variable.equals(coord.variable)):
                varying.append(str(name))
                break
    return varying


def _per_slice_attrs(results: list[Any], counts: Any, dims: Sequence[str],
                     shape: Sequence[int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The attributes of the stacked result (those equal in every slice) and the coordinates
    over the extra dimensions of those that differ (``n_samples``: ``counts``, when given)."""
    keys = list(results[0].attrs)
    attrs, coords = {}, {}
    for key in keys:
        if key in _PER_SLICE_ATTRS:
            continue
        values = [r.attrs.get(key) for r in results]
        if key in ("created", "xuqcal_version") or all(_same(v, values[0]) for v in values):
            attrs[key] = values[0]
        elif all(np.ndim(v) == 0 for v in values):
            coords[key] = (tuple(dims), np.array(values).reshape(shape))
        else:
            attrs[key] = values[0]
    if counts is not None:  # else the results hold their n_samples coordinate already
        coords["n_samples"] = (tuple(dims), counts)
    return attrs, coords


def _per_slice_variable_attrs(results: list[Any], dims: Sequence[str], shape: Sequence[int]
                              ) -> tuple[list[Any], dict[str, Any]]:
    """The results without the variable attributes that differ between slices (``analytic``
    of a recalibrator's ``scale``), and those as coordinates ``<variable>_<attribute>`` over
    the extra dimensions (a stacked variable holds one set of attributes)."""
    first = _as_dataset(results[0])
    coords: dict[str, Any] = {}
    differing: dict[str, list[str]] = {}
    for name, var in first.variables.items():
        if name == _VALUE:  # a DataArray's own attributes: see _per_slice_attrs
            continue
        for key, value in var.attrs.items():
            values = [_as_dataset(r)[name].attrs.get(key) if name in _as_dataset(r).variables
                      else None for r in results]
            if all(_same(v, value) for v in values):
                continue
            if not all(v is not None and np.ndim(v) == 0 for v in values):
                continue
            label = f"{name}_{key}"
            coords[label] = (tuple(dims), np.array(values).reshape(shape))
            differing.setdefault(str(name), []).append(key)
    if not differing:
        return results, coords
    cleaned = []
    for result in results:
        result = result.copy(deep=False)
        target = _as_dataset(result) if isinstance(result, xr.DataArray) else result
        for name, keys in differing.items():
            variable = target.variables[name] if name in target.variables else None
            if variable is not None:
                variable.attrs = {k: v for k, v in variable.attrs.items() if k not in keys}
        cleaned.append(_like(target, result) if isinstance(result, xr.DataArray) else target)
    return cleaned, coords


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(np.all(np.asarray(a) == np.asarray(b)))
    except (TypeError, ValueError):
        return a is b


def _finish(stacked: Any, attrs: dict[str, Any], coords: dict[str, Any], dims: Sequence[str],
            ds: xr.Dataset | None) -> Any:
    stacked = stacked.assign_coords(coords)
    if ds is not None:  # the input's coordinates over the extra dimensions only
        stacked = stacked.assign_coords({
            name: coord for name, coord in ds.coords.items()
            if name not in stacked.coords and coord.dims and set(coord.dims) <= set(dims)})
    attrs["slice_dims"] = ", ".join(dims)
    attrs["slices"] = ("each slice analysed alone on its present points (E and uE not both "
                       "NaN), with the same seed")
    stacked.attrs = attrs
    return stacked


# --------------------------------------------------------------------------------------------
# The broadcasting of an analysis
# --------------------------------------------------------------------------------------------


def _is_lazy(ds: xr.Dataset) -> bool:
    return any(ds[name].chunks is not None for name in sample_variables(ds))


def _call(function: Callable, bound: inspect.BoundArguments, data: str, ds: xr.Dataset,
          labels: Mapping[str, Any]) -> Any:
    """``function`` with the data set ``ds`` in place of the bound one; a ValueError names the
    slice."""
    arguments = dict(bound.arguments)
    arguments[data] = ds
    for name, value in arguments.items():
        if name != data and isinstance(value, xr.Dataset) and set(labels) & set(value.dims):
            arguments[name] = _matching_slice(value, name, labels)
    args, kwargs = _split(bound.signature, arguments)
    # warnings.catch_warnings is process-wide: only the main thread relabels (a slice task of
    # Dask-backed data runs in a worker thread, and its warnings keep their own text)
    relabel = threading.current_thread() is threading.main_thread()
    with warnings.catch_warnings(record=relabel) as caught:
        if relabel:
            warnings.simplefilter("always")
        try:
            result = function(*args, **kwargs)
        except ValueError as error:
            raise ValueError(f"{slice_label(labels)}: {error}") from error
    for warning in caught or ():  # each once more, named by the slice, under the user's filters
        warnings.warn_explicit(f"{slice_label(labels)}: {warning.message}", warning.category,
                               warning.filename, warning.lineno)
    # the slice's own labels (scalar coordinates kept from the selection) are stacked later
    return result.drop_vars([d for d in labels if d in result.coords and d not in result.dims])


def _matching_slice(other: xr.Dataset, name: str, labels: Mapping[str, Any]) -> xr.Dataset:
    """The slice of another Dataset argument with the labels of the data's slice: a data set
    (the test set of :func:`~xuqcal.recalibration.scan`) without its absent points, anything
    else (a recalibrator fitted per slice) without the padding of its ragged dimensions."""
    selection = {dim: label for dim, label in labels.items() if dim in other.dims}
    try:
        if all(dim in other.indexes for dim in selection):
            other = other.sel(selection)
        else:
            other = other.isel(selection)
    except (KeyError, IndexError):
        raise ValueError(f"{name}: has no slice {slice_label(selection)} of the data set "
                         f"(its labels: " + "; ".join(
                             f"{dim}: {', '.join(map(str, other.indexes[dim]))}"
                             if dim in other.indexes else f"{dim}: {other.sizes[dim]} positions"
                             for dim in selection) + ")") from None
    other = other.drop_vars([c for c in ("n_samples",) if c in other.coords])
    E, uE = roles(other)
    if all(v in other.data_vars and SAMPLE_DIM in other[v].dims for v in (E, uE)):
        # another data set (the test set of a scan): its absent points dropped, as the data's
        try:
            return present_points(_with_sample_coordinate(other), selection, E, uE)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from error
    return _trimmed(other)


def _trimmed(result: xr.Dataset) -> xr.Dataset:
    """``result`` without the padding that stacking added at the end of its ragged dimensions
    (positions where every floating-point variable over the dimension is NaN)."""
    for dim in RAGGED_DIMS:
        if dim not in result.dims:
            continue
        floats = [var for var in result.data_vars.values()
                  if dim in var.dims and var.dtype.kind == "f"]
        if not floats:
            continue
        keep = np.zeros(result.sizes[dim], dtype=bool)
        for var in floats:
            other = [d for d in var.dims if d != dim]
            keep |= np.asarray(var.notnull().any(other).values) if other else np.asarray(
                var.notnull().values)
        if not keep.all():
            result = result.isel({dim: slice(0, int(np.flatnonzero(keep)[-1]) + 1
                                             if keep.any() else 0)})
    return result


def _split(signature: inspect.Signature, arguments: Mapping[str, Any]
           ) -> tuple[list[Any], dict[str, Any]]:
    args, kwargs = [], {}
    for name, parameter in signature.parameters.items():
        if name not in arguments:
            continue
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            args.extend(arguments[name])
        elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
            kwargs.update(arguments[name])
        elif parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            args.append(arguments[name])
        else:
            kwargs[name] = arguments[name]
    return args, kwargs


def _slice_task(inputs: xr.Dataset, *, function: Callable, bound: inspect.BoundArguments,
                data: str, labels: Mapping[str, Any], E: str, uE: str,
                sizes: Mapping[str, int], sample: pd.Index | None,
                layout_indexes: Mapping[str, pd.Index], layout_n_bins: Any = None) -> Any:
    """One slice of Dask-backed data, computed inside its task: absent points dropped, values
    checked, the analysis run on the synchronous scheduler, the result conformed to the
    layout (``layout_n_bins``: the number of bins the layout records, which the result must
    have: the default number of bins depends on the slice's number of present points)."""
    present = present_points(inputs, labels, E, uE)
    with dask.config.set(scheduler="synchronous"):
        result = _call(function, bound, data, present, labels)
        if hasattr(result, "compute"):
            result = result.compute()
    used = result.attrs.get("n_bins")
    if layout_n_bins is not None and used is not None and not _same(used, layout_n_bins):
        raise ValueError(
            f"{slice_label(labels)}: the number of bins depends on the slice's number of "
            f"present points ({used} bins for its {present.sizes[SAMPLE_DIM]} points, "
            f"{layout_n_bins} for all the rows), which Dask-backed data do not give before they "
            "are computed; load the data first (ds.load()), or give n_bins")
    result = _as_dataset(_conform(result, sizes, sample))
    for dim, index in layout_indexes.items():
        if dim in result.indexes and not result.indexes[dim].equals(index):
            raise ValueError(
                f"{slice_label(labels)}: the labels of the result's dimension {dim!r} depend on "
                f"the slice's number of present points ({list(result.indexes[dim])} here, "
                f"{list(index)} for all the rows), which Dask-backed data do not give before "
                "they are computed; load the data first (ds.load()) to analyse these slices")
    return result


def _run_slices(function: Callable, bound: inspect.BoundArguments, data: str, ds: xr.Dataset,
                dims: Sequence[str], E: str, uE: str) -> Any:
    """The lazy stacked result of ``function`` over the slices of ``ds`` along ``dims``."""
    _check_slice_dims(ds, dims, data)
    ds = _with_sample_coordinate(ds)
    _check_roles(ds, E, uE)
    labels, slices = slice_positions(ds, dims)
    units = [unit for unit, _ in slices]
    positions = [position for _, position in slices]
    shape = [len(values) for values in labels]
    has_index = [d in ds.indexes for d in dims]
    sample = ds.indexes[SAMPLE_DIM]
    absent = _absent(ds, E, uE).transpose(*dims, SAMPLE_DIM)
    if not _is_lazy(ds):
        absent_values = np.asarray(absent.values)
        # every slice's values are checked before any analysis is built
        present = [present_points(ds.isel(position), unit, E, uE,
                                  absent=absent_values[tuple(position.values())])
                   for unit, position in zip(units, positions, strict=True)]
        results = [_call(function, bound, data, sub.chunk(), unit)
                   for unit, sub in zip(units, present, strict=True)]
        _check_layout_dims(results, dims, data)
        counts = (~absent_values).sum(axis=-1).reshape(shape)
        sizes = _max_sizes(results)
    else:
        layouts = [_call(function, bound, data, ds.isel(position), unit)
                   for unit, position in zip(units, positions, strict=True)]
        _check_layout_dims(layouts, dims, data)
        sizes = _max_sizes(layouts)
        results = [_lazy_slice(function, bound, data, ds.isel(position), unit, E, uE, layout,
                               sizes, sample)
                   for unit, position, layout in zip(units, positions, layouts, strict=True)]
        counts = (~absent).sum(SAMPLE_DIM).data
    results = _aligned([_conform(r, sizes, sample) for r in results], dims)
    varying = _varying_coords(results)  # lazy coordinates count as varying: found before
    if not _is_lazy(ds):
        # the result is computed anyway (broadcasting): the slices are computed together,
        # one scheduler run, and stacked as NumPy values, without a graph of concatenations
        # (the nine-set one call: 1 265 -> 1 255 tasks, the scheduler's start 0.38-0.53 ->
        # 0.35-0.51 s, benchmarks/measured/graph-nine-sets-{rows-at,compute-then-stack}-*)
        results = list(dask.compute(*results))
    attrs, coords = _per_slice_attrs(results, counts, dims, shape)
    results, variable_coords = _per_slice_variable_attrs(results, dims, shape)
    coords.update(variable_coords)
    stacked = _stack([_without_attrs(r) for r in results], dims, labels, has_index, varying)
    return _finish(stacked, attrs, coords, dims, ds)


def _lazy_slice(function: Callable, bound: inspect.BoundArguments, data: str, sub: xr.Dataset,
                unit: Mapping[str, Any], E: str, uE: str, layout: Any, sizes: Mapping[str, int],
                sample: pd.Index) -> Any:
    """The lazy result of one slice of Dask-backed data: one task (:func:`_slice_task`) laid
    out as ``layout`` (the analysis of the full-length slice) with the ``sizes`` of the stacked
    ragged dimensions."""
    task = lazy_result(_slice_task, sub[sample_variables(sub)], _computed_in_task(layout),
                       function=function, bound=bound, data=data, labels=unit, E=E, uE=uE,
                       sizes=sizes, sample=sample, layout_indexes=_fixed_indexes(layout),
                       layout_n_bins=layout.attrs.get("n_bins"))
    return _like(task, layout)


def _fixed_indexes(layout: Any) -> dict[str, pd.Index]:
    """The indexes of a layout that the slice's result must have as they are (not ``sample``
    nor the ragged dimensions)."""
    return {str(d): index for d, index in layout.indexes.items()
            if d != SAMPLE_DIM and d not in RAGGED_DIMS}


def _aligned(results: list[Any], dims: Sequence[str]) -> list[Any]:
    """The results of the slices on common indexes where these differ between slices (the
    ``n_bins`` of :func:`~xuqcal.studies.zero_bins_extrapolation`, which depend on the number
    of points): the union of the labels, missing values where a slice has no such label."""
    first = results[0]
    differ = {str(d) for r in results for d, index in r.indexes.items()
              if d not in dims and d != SAMPLE_DIM and d not in RAGGED_DIMS
              and (d not in first.indexes or not first.indexes[d].equals(index))}
    if not differ:
        return results
    every = {str(d) for r in results for d in r.dims}
    return list(xr.align(*results, join="outer", exclude=every - differ))


def _max_sizes(results: Sequence[Any]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for result in results:
        for dim, size in result.sizes.items():
            sizes[dim] = max(sizes.get(dim, 0), int(size))
    return sizes


def _run_tree(function: Callable, bound: inspect.BoundArguments, data: str, tree: Any,
              given: Mapping[str, Any]) -> Any:
    """The results of ``function`` for the nodes of a DataTree holding data: stacked along
    ``dataset`` (labelled by the node paths) as the slices of :func:`_run_slices` are, or, when
    their layouts differ, a DataTree of the results."""
    nodes = []
    for member in tree.subtree:
        if not member.has_data:
            continue
        node = member.to_dataset()
        E, uE = roles(node, given.get("E"), given.get("uE"))
        if E not in node.data_vars and uE not in node.data_vars:
            if member.children:  # a group (its own variables are metadata): skipped
                continue
            raise ValueError(f"{data}: the DataTree node {member.path!r} holds neither {E} nor "
                             f"{uE}; a node without children must hold a data set")
        nodes.append((member.path, node))
    if not nodes:
        raise ValueError(f"{data}: the DataTree has no node holding data")
    lazy = any(_is_lazy(node) for _, node in nodes)
    prepared = []  # every node checked before any analysis is built
    for path, node in nodes:
        E, uE = roles(node, given.get("E"), given.get("uE"))
        _check_slice_dims(node, extra_dims(node, E, uE), data, (*RESERVED_DIMS, DATASET_DIM))
        node = _with_sample_coordinate(node)
        _check_roles(node, E, uE)
        unit = {DATASET_DIM: path}
        if not extra_dims(node, E, uE) and not lazy:
            node = present_points(node, unit, E, uE)
        prepared.append((unit, node, E, uE))
    results, counts = [], []
    for unit, node, E, uE in prepared:
        node_dims = extra_dims(node, E, uE)
        if node_dims:  # its own slices: stacked with their n_samples coordinate
            results.append(_run_slices(function, bound, data, node, node_dims, E, uE))
            counts.append(None)
        elif not lazy:
            results.append(_call(function, bound, data, node.chunk(), unit))
            counts.append(node.sizes[SAMPLE_DIM])
        else:
            layout = _call(function, bound, data, node, unit)
            results.append(_lazy_slice(function, bound, data, node, unit, E, uE, layout,
                                       dict(layout.sizes), node.indexes[SAMPLE_DIM]))
            counts.append((~_absent(node, E, uE)).sum(SAMPLE_DIM).data)
    paths = [path for path, _ in nodes]
    if not _stackable(results):
        computed = results if lazy else dask.compute(*results)
        return xr.DataTree.from_dict({path: _as_dataset(r)
                                      for path, r in zip(paths, computed, strict=True)})
    results = [r if count is None else _without_n_samples(r.assign_coords(n_samples=count))
               for r, count in zip(results, counts, strict=True)]
    sizes = _max_sizes(results)
    results = [_conform(r, sizes, None) for r in results]
    shape = [len(paths)]
    attrs, coords = _per_slice_attrs(results, None, [DATASET_DIM], shape)
    results, variable_coords = _per_slice_variable_attrs(results, [DATASET_DIM], shape)
    coords.update(variable_coords)
    stacked = _stack([_without_attrs(r) for r in results], [DATASET_DIM],
                     [pd.Index(paths, name=DATASET_DIM)], [True])
    stacked = _finish(stacked, attrs, coords, [DATASET_DIM], None)
    return stacked if lazy else stacked.compute()


def _without_n_samples(result: Any) -> Any:
    result = result.copy(deep=False)
    result.attrs = {k: v for k, v in result.attrs.items() if k != "n_samples"}
    return result


def _stackable(results: Sequence[Any]) -> bool:
    """Whether the results of DataTree nodes can be stacked: none over ``sample``, the same
    variables and, on every dimension but the ragged ones, the same sizes and coordinates."""
    first = results[0]
    names = set(first.variables) if isinstance(first, xr.Dataset) else {first.name}
    for result in results:
        if SAMPLE_DIM in result.dims or type(result) is not type(first):
            return False
        other = set(result.variables) if isinstance(result, xr.Dataset) else {result.name}
        if other != names:
            return False
        for dim, size in result.sizes.items():
            if dim in RAGGED_DIMS:
                continue
            if first.sizes.get(dim) != size:
                return False
            if dim in first.indexes and not first.indexes[dim].equals(result.indexes[dim]):
                return False
    return True


def _check_no_sliced_argument(bound: inspect.BoundArguments, data: str) -> None:
    """A one-slice data set with another argument made per slice (a recalibrator fitted on
    several slices) is ambiguous: refused, naming the argument and its slice dimensions."""
    for name, value in bound.arguments.items():
        stacked = value.attrs.get("slice_dims") if isinstance(value, xr.Dataset) else None
        if name != data and stacked:
            dims = [d.strip() for d in str(stacked).split(",") if d.strip() in value.dims]
            if dims:
                raise ValueError(
                    f"{name}: made per slice along {', '.join(dims)}, but {data} has no such "
                    f"dimension; select one slice, e.g. {name}.sel({dims[0]}="
                    f"{value.indexes[dims[0]][0]!r})" if dims[0] in value.indexes else
                    f"{name}: made per slice along {', '.join(dims)}, but {data} has no such "
                    f"dimension; select one slice, e.g. {name}.isel({dims[0]}=0)")


def broadcast(function: Callable | None = None, *, data: str = "ds") -> Callable:
    """Lift a one-data-set analysis to data with extra dimensions and to DataTrees.

    With neither, ``function`` is called as it is (same result, same cost). Otherwise see the
    module documentation: one slice per combination of labels of the extra dimensions (or per
    DataTree node), each analysed alone on its present points, the results stacked.

    Parameters
    ----------
    function : callable
        An analysis ``function(ds, ..., E=..., uE=...)`` returning a Dataset or DataArray.
    data : str
        The parameter holding the data set.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.stats import stats
    >>> a = xuqcal.synthetic.nig(300, nu=6, seed=0)
    >>> b = xuqcal.synthetic.nig(200, nu=6, seed=1)
    >>> both = xr.concat([a, b], dim="model", join="outer").assign_coords(model=["a", "b"])
    >>> v = broadcast(stats)(both, ["zms"])  # b is NaN-padded: its absent points are dropped
    >>> v.dims, v.n_samples.values.tolist()
    (('model', 'statistic'), [300, 200])
    >>> bool((v.sel(model="b") == stats(b, ["zms"])).all())
    True
    """
    if function is None:
        return functools.partial(broadcast, data=data)
    signature = inspect.signature(function)

    @functools.wraps(function)
    def broadcasting(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        ds = bound.arguments.get(data)
        if isinstance(ds, xr.DataTree):
            return _run_tree(function, bound, data, ds, kwargs)
        if not isinstance(ds, xr.Dataset):
            # every analysis takes its data as a Dataset (or a DataTree of them): anything else
            # is named here, before it fails deep inside as an AttributeError or IndexError
            raise ValueError(f"{data}: expected an xarray.Dataset (or an xarray.DataTree of "
                             f"them), got {type(ds).__name__}")
        E, uE = roles(ds, kwargs.get("E"), kwargs.get("uE"))
        dims = extra_dims(ds, E, uE)
        if not dims:
            _check_no_sliced_argument(bound, data)
            return function(*args, **kwargs)
        result = _run_slices(function, bound, data, ds, dims, E, uE)
        return result if _is_lazy(ds) else result.compute()

    broadcasting.__signature__ = signature
    del broadcasting.__wrapped__
    return broadcasting
