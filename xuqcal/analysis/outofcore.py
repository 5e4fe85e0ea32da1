"""Statistics reduced out of core: exact sums chunk by chunk over ``sample`` (issue 14).

:func:`reduce_statistics` computes the moment statistics (``mse rmse mv rmv zm zms zv rce nll``)
with their analytic intervals, and the binned statistics (``ence uce zmse``), from data larger
than the memory of one worker: no task ever holds more than one chunk of the data.

**Passes over the data** (each a Dask reduction over the chunks, combined in a tree):

1. *Checks*: for every slice, the counts and first rows of NaN, infinite and non-positive
   values (the messages of :func:`xuqcal.validate_dataset`), the largest ``|E|``, ``uE`` and
   ``|Z|``, the smallest ``uE``, the key range of the binning variable and the exact sum of
   ``Z = E / uE``. Bad values stop the computation here, with the error naming the variable,
   the count and the first rows.
2. *Edges* (binned statistics only, at most four passes): the exact order statistics
   ``x_(floor(b M / N))``, ``b = 1 .. N - 1``, of the binning variable
   (:class:`xuqcal.core.exact.Selection`: integer histograms of the order-preserving keys of
   the values, 16 bits per pass, or the keys themselves when few remain).
3. *Sums*: the exact sums of the per-point columns (:data:`xuqcal.core.kernels.COLUMNS`, and
   the products of :mod:`xuqcal.core.moments` for the intervals) and, per bin, of the count,
   ``E²``, ``uE²`` and ``Z²``. The statistics are finished by the registry
   (:meth:`~xuqcal.core.statistics.Statistic.from_sums`,
   :meth:`~xuqcal.core.statistics.Statistic.from_bin_sums`), the intervals by
   :func:`xuqcal.core.moments.analytic_interval`.

Every sum is exact and correctly rounded (:mod:`xuqcal.core.exact`), so a result does not
change by a bit with the chunking, nor between NumPy-backed and Dask-backed data. Each pass is
bound to the result of the previous one (:func:`dask.graph_manipulation.bind`): its chunks
are read again rather than kept in memory between passes.

**Why not** :func:`~xuqcal.analysis.slices.broadcast`: it analyses each slice of Dask-backed
data in one task that gathers the slice's whole sample. Here the extra dimensions (``model``,
``task``, ...) are kept inside the reduction instead: each chunk holds the rows of several
slices, every slice has its own points (absent points, ``E`` and ``uE`` both NaN, are skipped),
checks, edges and sums, and the result is what :func:`~xuqcal.analysis.slices.broadcast` would
stack.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr
from dask.graph_manipulation import bind

from xuqcal.analysis.binning import n_bins_for
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults, moments
from xuqcal.core import exact as X
from xuqcal.core.binning import check_n_bins
from xuqcal.core.checks import (
    check_count,
    check_level,
    check_name,
    user_stacklevel,
    variable_name,
)
from xuqcal.core.memory import DataTooLargeError, format_bytes, task_memory_limit
from xuqcal.core.provenance import attach
from xuqcal.core.statistics import (
    SAFE_EXPONENT,
    STATISTICS,
    Statistic,
    UndefinedStatisticWarning,
    check_sizes,
    get_statistics,
    point_columns,
    statistic_coords,
)
from xuqcal.io.expressions import _format_rows
from xuqcal.io.schema import ROW_COORD, SAMPLE_DIM, _problems, by_role, extra_dims, slice_label

__all__ = ["SAMPLE_CHUNK", "reduce_statistics"]

#: Points per chunk along ``sample`` when NumPy-backed data are reduced (the tasks run in
#: parallel; the results do not depend on it).
SAMPLE_CHUNK = 1 << 20
#: Values (rows × points) processed at once inside a task (bounds its temporaries; at
#: ``1 << 18``, the earlier value, they were four times larger).
PIECE = 1 << 16
#: Bytes per value of a block that a task holds: each input value as read (its compressed
#: bytes, the decoded chunk, the copy the checked reader of a store returns, the row copy of
#: ``_rows_of`` and the slices of a piece), counted as six float64: a Zarr chunk of E and uE
#: peaked at about 75 bytes per point over the data (``benchmarks/memory_estimates.py``).
BLOCK_BYTES_PER_VALUE = 6 * 8
#: Bytes of a task besides its block: the temporaries of a piece (:data:`PIECE` values of
#: the point columns and their products) and the exact accumulators
#: (``benchmarks/memory_estimates.py`` measures both beside these estimates).
TASK_OVERHEAD_BYTES = 16 * 10**6
#: Chunk results combined per task of the tree reductions.
SPLIT_EVERY = 8
#: Passes of the exact selection of the bin edges (16 bits of the 64-bit keys per pass).
EDGE_PASSES = 4
#: The statistics that cannot be reduced out of core, and why.
NOT_REDUCIBLE = {
    "cc": "a rank correlation needs the ranks of all the points, i.e. all the points in one "
          "task; use xuqcal.stats or xuqcal.bootstrap (in memory) for cc",
}
_BIN_COLUMNS = ("e2", "u2", "z2")  # the per-bin sums of every binned statistic
_LOG_4 = float(np.log(4.0))
_CHECK_LABELS = ("NaN", "+inf", "-inf")
_NO_KEY = np.iinfo(np.uint64).max


# --------------------------------------------------------------------------------------------
# Arguments and layout
# --------------------------------------------------------------------------------------------


def _check_arguments(ds: object, statistics: object, *, level: object, n_bins: object,
                     by: object, E: object, uE: object
                     ) -> tuple[tuple[Statistic, ...], str, tuple[str, ...], bool]:
    """Every check that reads no data: the statistics, the level, the names, dimensions and
    dtypes of the variables, and (for one data set) the sizes."""
    if isinstance(ds, xr.DataTree):
        raise ValueError("ds: reduce_statistics takes a Dataset; for a DataTree, reduce each "
                         "node's dataset (node.to_dataset()), or stack the sets along a "
                         "dimension with xuqcal.stack_datasets")
    if not isinstance(ds, xr.Dataset):
        raise ValueError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    if statistics is None:  # every statistic that reduces out of core
        statistics = [key for key in STATISTICS if key not in NOT_REDUCIBLE]
    chosen = get_statistics(statistics)
    refused = [s.key for s in chosen if s.key in NOT_REDUCIBLE]
    if refused:
        raise ValueError(f"statistics: {', '.join(refused)} cannot be reduced out of core: "
                         + "; ".join(NOT_REDUCIBLE[k] for k in refused))
    level = check_level(level)
    check_name(E, "E")
    check_name(uE, "uE")
    dims = extra_dims(ds, E, uE)
    check_data_variables(ds, E, uE, extra_dims=bool(dims))
    by = variable_name(ds, by, uE)
    binned = any(s.needs_bins for s in chosen)
    check_count(n_bins, "n_bins", minimum=1)
    if binned and by != uE:
        var = ds[by]
        if SAMPLE_DIM not in var.dims or not set(var.dims) <= {SAMPLE_DIM, *dims}:
            raise ValueError(f"by: the binning variable {by!r} must be over 'sample' and the "
                             f"dimensions of {E} and {uE} only ({', '.join(dims) or 'none'}), "
                             f"got dimensions {var.dims}")
        if var.dtype.kind not in "biuf":
            raise ValueError(f"by: the binning variable {by!r} does not hold numbers (dtype "
                             f"{var.dtype}); bin on a numeric variable")
    if not dims:  # one data set: its size is known without reading anything
        m = ds.sizes[SAMPLE_DIM]
        check_sizes(chosen, m)
        if binned:
            check_n_bins(m, n_bins, variable=by)
    return chosen, by, dims, binned


def _as_dask(var: xr.DataArray, dims: Sequence[str], chunks: tuple | None) -> da.Array:
    data = var.transpose(*dims, SAMPLE_DIM).data
    if isinstance(data, da.Array):
        return data if chunks is None else data.rechunk(chunks)
    data = np.asarray(data)
    if chunks is None:
        chunks = (*data.shape[:-1], SAMPLE_CHUNK)
    return da.from_array(data, chunks=chunks)


@dataclass(frozen=True)
class _Layout:
    """The data as Dask arrays over (extra dimensions..., sample), chunked alike, with the rows
    (slices) of each block of the extra dimensions."""

    e: da.Array
    u: da.Array
    x: da.Array | None  # the binning variable, when it is not uE and bins are needed
    labels: da.Array | None  # the row labels of messages, when not the positions
    extra_shape: tuple[int, ...]
    block_rows: dict[tuple[int, ...], np.ndarray]
    offsets: tuple[int, ...]
    lazy: bool

    @classmethod
    def of(cls, ds: xr.Dataset, E: str, uE: str, by: str | None,
           dims: tuple[str, ...]) -> _Layout:
        names = [E, uE] + ([by] if by is not None else [])
        variables = [ds[n] for n in names]
        label_var = None
        if ROW_COORD in ds.coords and SAMPLE_DIM in ds[ROW_COORD].dims \
                and set(ds[ROW_COORD].dims) <= {SAMPLE_DIM, *dims}:
            label_var = ds[ROW_COORD]
        elif SAMPLE_DIM in ds.coords:
            label_var = ds[SAMPLE_DIM]
        if label_var is not None:
            variables.append(label_var)
        template = xr.broadcast(*variables[:2])[0]
        broadcast = [v.broadcast_like(template) if set(v.dims) != set(template.dims) else v
                     for v in variables]
        lazy = any(v.chunks is not None for v in broadcast[:len(names)])
        first = next((v for v in broadcast if v.chunks is not None), None)
        chunks = None if first is None else first.transpose(*dims, SAMPLE_DIM).data.chunks
        arrays = [_as_dask(v, dims, chunks) for v in broadcast]
        if chunks is None:
            chunks = arrays[0].chunks
        extra_shape = tuple(int(ds.sizes[d]) for d in dims)
        block_rows = {}
        for index in np.ndindex(*[len(c) for c in chunks[:-1]]):
            ranges = [np.arange(sum(c[:i]), sum(c[:i + 1]))
                      for c, i in zip(chunks[:-1], index, strict=True)]
            if ranges:
                grid = np.meshgrid(*ranges, indexing="ij")
                rows = np.ravel_multi_index([g.ravel() for g in grid], extra_shape)
            else:
                rows = np.zeros(1, dtype=np.int64)
            block_rows[index] = rows.astype(np.int64)
        offsets = tuple(int(o) for o in np.concatenate([[0], np.cumsum(chunks[-1])[:-1]]))
        return cls(arrays[0], arrays[1], arrays[2] if by is not None else None,
                   arrays[-1] if label_var is not None else None, extra_shape, block_rows,
                   offsets, lazy)

    @property
    def n_rows(self) -> int:
        return int(np.prod(self.extra_shape, dtype=np.int64))

    def block_shape(self, index: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(int(c[i]) for c, i in zip(self.e.chunks[:-1], index, strict=True))

    def check_fits(self) -> None:
        """Refuse, before any work, chunks too large for the memory one task may use
        (:func:`xuqcal.core.memory.task_memory_limit`): every task holds one block of each
        input variable (:data:`BLOCK_BYTES_PER_VALUE` per value) and the temporaries of a
        piece (:data:`TASK_OVERHEAD_BYTES`). A worker given more than it has is killed by
        its nanny and its tasks retried on the next worker, again and again; the error names
        the chunks, the estimate, the limit and the chunk size that fits."""
        rows = int(np.prod([max(c) for c in self.e.chunks[:-1]], dtype=np.int64))
        points = max(self.e.chunks[-1])
        variables = 2 + (self.x is not None)
        need = rows * points * variables * BLOCK_BYTES_PER_VALUE + TASK_OVERHEAD_BYTES
        limit, source = task_memory_limit()
        if need <= limit:
            return
        room = (limit - TASK_OVERHEAD_BYTES) // (rows * variables * BLOCK_BYTES_PER_VALUE)
        advice = (f"rechunk to at most {room:,} points along sample (e.g. "
                  f"xuqcal.open_dataset(path, chunks={{'sample': {room}}}), or "
                  f"ds.chunk(sample={room}) of data in memory)"
                  if room >= 1024 else "give each worker more memory")
        raise DataTooLargeError(
            f"reduce_statistics: a chunk of {rows:,} row(s) × {points:,} points needs about "
            f"{format_bytes(need)} in one task ({variables} variables), more than the "
            f"{format_bytes(limit)} one task may use ({source}); {advice}")


def _blocks(arrays: Sequence[da.Array | None]) -> list[np.ndarray | None]:
    """The blocks of each array as Delayed objects (an array of them per array)."""
    return [None if a is None else a.to_delayed(optimize_graph=False) for a in arrays]


def _tree(parts: list[Any], combine: Callable[[Any, Any], Any]) -> Any:
    """A fixed-order tree reduction of Delayed ``parts`` with a pure ``combine``."""
    if not parts:
        raise ValueError("parts: nothing to combine")
    while len(parts) > 1:
        parts = [dask.delayed(_combine_many, pure=True)(combine, parts[i:i + SPLIT_EVERY])
                 for i in range(0, len(parts), SPLIT_EVERY)]
    return parts[0]


def _combine_many(combine: Callable[[Any, Any], Any], parts: Sequence[Any]) -> Any:
    result = parts[0]
    for part in parts[1:]:
        result = combine(result, part)
    return result


def _rows_of(block: Any) -> np.ndarray:
    """A block over (extra..., sample) as a 2-D array (rows, points)."""
    block = np.asarray(block)
    return block.reshape(-1, block.shape[-1])


# --------------------------------------------------------------------------------------------
# Pass 1: the checks
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Checks:
    """What the first pass finds in the rows of one block of the extra dimensions."""

    present: np.ndarray  # (rows,) points that are not absent
    counts: np.ndarray  # (checks, rows) bad values per check
    first: list[list[list[Any]]]  # [check][row] -> the first rows' labels (at most 5)
    overflow: np.ndarray  # (rows,) z-scores whose square overflows
    overflow_first: list[list[Any]]
    valid: np.ndarray  # (rows,) finite points with uE > 0
    e_max: np.ndarray
    u_max: np.ndarray
    u_min: np.ndarray
    z_max: np.ndarray  # largest |Z| of the points whose Z² is finite
    z_sum: np.ndarray  # (rows, 1, SLOTS) exact sum of Z
    by_bad: np.ndarray  # (rows,) non-finite values of the binning variable
    by_first: list[list[Any]]
    kmin: np.ndarray  # (rows,) key range of the binning variable
    kmax: np.ndarray


def _label_at(labels: np.ndarray | None, position: int, offset: int) -> Any:
    """The label of a row for messages (its position when the data have no labels)."""
    if labels is None:
        return offset + position
    value = labels[position]
    return value.item() if isinstance(value, np.generic) else value


def _pieces(n_rows: int, n_points: int) -> list[slice]:
    """Consecutive ranges of points, about :data:`PIECE` values of all the rows each (at least
    1024 points): the temporaries of a task stay small whatever the chunk size."""
    size = max(1024, PIECE // max(n_rows, 1))
    return [slice(start, min(start + size, n_points))
            for start in range(0, max(n_points, 1), size)]


def _check_block(e: Any, u: Any, x: Any, labels: Any, *, offset: int, absent: bool,
                 by_float: bool, by_is_u: bool, binned: bool) -> _Checks:
    """The first pass over one block of (rows, points), piece by piece."""
    e, u = _rows_of(e), _rows_of(u)
    x = None if x is None else _rows_of(x)
    labels = None if labels is None else _rows_of(labels)
    result = None
    for piece in _pieces(*e.shape):
        part = _check_piece(e[:, piece], u[:, piece], None if x is None else x[:, piece],
                            None if labels is None else labels[:, piece],
                            offset=offset + piece.start, absent=absent, by_float=by_float,
                            by_is_u=by_is_u, binned=binned)
        result = part if result is None else _merge_checks(result, part)
    return result


def _check_piece(e: np.ndarray, u: np.ndarray, x: np.ndarray | None,
                 label_rows: np.ndarray | None, *, offset: int, absent: bool, by_float: bool,
                 by_is_u: bool, binned: bool) -> _Checks:
    """The first pass over (rows, points)."""
    e = e.astype(np.float64, copy=False)
    u = u.astype(np.float64, copy=False)
    n_rows = e.shape[0]
    present = ~(np.isnan(e) & np.isnan(u)) if absent else np.ones(e.shape, dtype=bool)
    with np.errstate(all="ignore"):
        masks = [np.isnan(e), np.isposinf(e), np.isneginf(e),
                 np.isnan(u), np.isposinf(u), np.isneginf(u), np.isfinite(u) & (u <= 0)]
        masks = [m & present for m in masks]
        valid = present & np.isfinite(e) & np.isfinite(u) & (u > 0)
        z = e / np.where(valid, u, 1.0)
        overflow = valid & ~np.isfinite(z * z)
        ok = valid & ~overflow
        e_max = np.max(np.where(valid, np.abs(e), 0.0), axis=1, initial=0.0)
        u_max = np.max(np.where(valid, u, 0.0), axis=1, initial=0.0)
        u_min = np.min(np.where(valid, u, np.inf), axis=1, initial=np.inf)
        z_max = np.max(np.where(ok, np.abs(z), 0.0), axis=1, initial=0.0)
    counts = np.array([m.sum(axis=1) for m in masks], dtype=np.int64)

    def first(mask: np.ndarray) -> list[list[Any]]:
        return [[_label_at(None if label_rows is None else label_rows[r], p, offset)
                 for p in np.flatnonzero(mask[r])[:5].tolist()] for r in range(n_rows)]

    z_sum = X.new_accumulators(n_rows, 1)
    X.sum_columns(X.as_bits(np.where(ok, z, 0.0)[np.newaxis]), ok, z_sum)
    by_bad = np.zeros(n_rows, dtype=np.int64)
    by_first: list[list[Any]] = [[] for _ in range(n_rows)]
    kmin = np.full(n_rows, _NO_KEY, dtype=np.uint64)
    kmax = np.zeros(n_rows, dtype=np.uint64)
    if binned:
        if by_is_u:
            values, usable = u, valid
        else:
            values = x
            usable = present
            if by_float:
                bad = present & ~np.isfinite(values)
                by_bad = bad.sum(axis=1).astype(np.int64)
                if by_bad.any():
                    by_first = first(bad)
                usable = present & np.isfinite(values)
        keys = X.sort_keys(values)
        kmin = np.min(np.where(usable, keys, _NO_KEY), axis=1, initial=_NO_KEY)
        kmax = np.max(np.where(usable, keys, np.uint64(0)), axis=1, initial=np.uint64(0))
    return _Checks(
        present=present.sum(axis=1).astype(np.int64), counts=counts,
        first=[first(m) if c.any() else [[] for _ in range(n_rows)]
               for m, c in zip(masks, counts, strict=True)],
        overflow=overflow.sum(axis=1).astype(np.int64),
        overflow_first=first(overflow) if overflow.any() else [[] for _ in range(n_rows)],
        valid=valid.sum(axis=1).astype(np.int64), e_max=e_max, u_max=u_max, u_min=u_min,
        z_max=z_max, z_sum=z_sum, by_bad=by_bad, by_first=by_first, kmin=kmin, kmax=kmax)


def _join(a: list[list[Any]], b: list[list[Any]]) -> list[list[Any]]:
    return [(x + y)[:5] for x, y in zip(a, b, strict=True)]


def _merge_checks(a: _Checks, b: _Checks) -> _Checks:
    """Two consecutive sample blocks of the same rows (``a`` first)."""
    z_sum = a.z_sum.copy()
    X.merge(z_sum, b.z_sum)
    return _Checks(
        present=a.present + b.present, counts=a.counts + b.counts,
        first=[_join(x, y) for x, y in zip(a.first, b.first, strict=True)],
        overflow=a.overflow + b.overflow, overflow_first=_join(a.overflow_first,
                                                               b.overflow_first),
        valid=a.valid + b.valid, e_max=np.maximum(a.e_max, b.e_max),
        u_max=np.maximum(a.u_max, b.u_max), u_min=np.minimum(a.u_min, b.u_min),
        z_max=np.maximum(a.z_max, b.z_max), z_sum=z_sum, by_bad=a.by_bad + b.by_bad,
        by_first=_join(a.by_first, b.by_first), kmin=np.minimum(a.kmin, b.kmin),
        kmax=np.maximum(a.kmax, b.kmax))


@dataclass(frozen=True)
class _Plan:
    """What the sums need to know of every slice (global rows), from the first pass."""

    n: np.ndarray  # present points
    k: np.ndarray  # power-of-two scale of the data (PreparedData.scale_exponent)
    z_shift: np.ndarray  # the constant subtracted from Z in zd
    exponents: dict[str, np.ndarray]  # normalizing exponents of the interval products
    selection: X.Selection | None


def _scale_exponent(hi: float, lo: float) -> int:
    """The exponent of the exact rescaling of :func:`xuqcal.core.statistics.check_values`."""
    if hi > 2.0**SAFE_EXPONENT or lo < 2.0**-SAFE_EXPONENT:
        return (int(np.frexp(hi)[1]) + int(np.frexp(lo)[1])) // 2
    return 0


def _slice_problems(checks: _Checks, r: int, *, E: str, uE: str, by: str,
                    expressions: Mapping[str, Any]) -> list[str]:
    """The messages of the value problems of row ``r`` (the wording of
    :func:`xuqcal.validate_dataset`)."""
    names = [E, E, E, uE, uE, uE, uE]
    checks_list = [(name, label) for name, label in
                   zip(names, [*_CHECK_LABELS, *_CHECK_LABELS, "not positive"], strict=True)]
    labels: list[Any] = []
    values = []
    for i in range(len(checks_list)):
        start = len(labels)
        labels.extend(checks.first[i][r])
        values.append((int(checks.counts[i, r]), np.arange(start, len(labels))))
    start = len(labels)
    labels.extend(checks.overflow_first[r])
    ratio = (int(checks.overflow[r]), np.arange(start, len(labels)), int(checks.valid[r]),
             float(checks.e_max[r]), float(checks.u_max[r]), float(checks.u_min[r]))
    table = np.array(labels)  # labels[p].item() must work: a typed array, not objects
    problems = _problems((values, ratio), checks_list, E, uE, int(checks.present[r]), table,
                         expressions)
    if checks.by_bad[r]:
        problems.append(f"by: the binning variable {by!r} has {int(checks.by_bad[r])} of "
                        f"{int(checks.present[r])} values NaN or infinite "
                        f"({_format_rows(checks.by_first[r], int(checks.by_bad[r]))}); bin on "
                        "a variable with finite values")
    return problems


def _plan(parts: Sequence[_Checks], *, block_rows: Sequence[np.ndarray], n_rows: int,
          slice_names: Sequence[str], statistics: Sequence[str], n_bins: int, binned: bool,
          E: str, uE: str, by: str, expressions: Mapping[str, Any]) -> _Plan:
    """Merge the first pass of every block of the extra dimensions, raise the first slice's
    problems, and plan the sums."""
    chosen = get_statistics(statistics)
    order = np.concatenate(block_rows)
    merged = {}
    for name in ("present", "valid", "e_max", "u_max", "u_min", "z_max", "kmin", "kmax"):
        values = np.concatenate([getattr(p, name) for p in parts])
        out = np.empty(n_rows, dtype=values.dtype)
        out[order] = values
        merged[name] = out
    z_sums = np.empty(n_rows)
    z_sums[order] = np.concatenate([X.rounded(p.z_sum)[:, 0] for p in parts])
    located = {int(row): (p, i) for p, rows in zip(parts, block_rows, strict=True)
               for i, row in enumerate(rows.tolist())}
    for row in range(n_rows):  # slices in the order of the data
        part, i = located[row]
        prefix = f"{slice_names[row]}: " if slice_names[row] else ""
        problems = _slice_problems(part, i, E=E, uE=uE, by=by, expressions=expressions)
        if problems:
            message = problems[0] if len(problems) == 1 else (
                f"invalid input data ({len(problems)} problems):\n  " + "\n  ".join(problems))
            raise ValueError(prefix + message)
        m = int(part.present[i])
        if m == 0:
            raise ValueError(f"{prefix}no points: E and uE are NaN at every sample of this "
                             "slice (select the other slices, e.g. with ds.drop_sel)")
        try:
            check_sizes(chosen, m)
            if binned:
                check_n_bins(m, n_bins, variable=by)
        except ValueError as error:
            raise ValueError(prefix + str(error)) from None
    n = merged["present"]
    hi = np.maximum(merged["e_max"], merged["u_max"])
    k = np.array([_scale_exponent(h, lo) for h, lo in zip(hi, merged["u_min"], strict=True)],
                 dtype=np.int64)
    z_shift = z_sums / n
    with np.errstate(over="ignore", divide="ignore"):
        e_top = np.ldexp(merged["e_max"], -k)
        u_top = np.ldexp(merged["u_max"], -k)
        log_top = 2.0 * np.maximum(np.abs(np.log(merged["u_max"])),
                                   np.abs(np.log(merged["u_min"]))) + 1.0
    exponents = {
        "e2": moments.normalizing_exponent(e_top * e_top),
        "u2": moments.normalizing_exponent(u_top * u_top),
        "z2": moments.normalizing_exponent(merged["z_max"] * merged["z_max"]),
        "lnu2": moments.normalizing_exponent(log_top),
        "zd": moments.normalizing_exponent(merged["z_max"] + np.abs(z_shift)),
    }
    selection = X.Selection.start(merged["kmin"], merged["kmax"], n, n_bins) if binned else None
    return _Plan(n=n, k=k, z_shift=z_shift, exponents=exponents, selection=selection)


# --------------------------------------------------------------------------------------------
# Pass 2: the bin edges
# --------------------------------------------------------------------------------------------


def _selection_of(plan: _Plan) -> X.Selection:
    return plan.selection


def _edge_block(u: Any, x: Any, selection: X.Selection, *, rows: np.ndarray,
                absent: bool) -> dict:
    """One block's part of a pass of the exact selection."""
    if selection.done.all() or not selection.is_open(rows):
        return {}
    u = _rows_of(u)
    values = u if x is None else _rows_of(x)
    valid = ~np.isnan(u) if absent else np.ones(u.shape, dtype=bool)
    return selection.block(X.sort_keys(values), valid, rows)


def _advance(selection: X.Selection, seen: dict) -> X.Selection:
    return selection if selection.done.all() else selection.advance(seen)


# --------------------------------------------------------------------------------------------
# Pass 3: the sums
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sums:
    columns: np.ndarray  # (rows, columns, SLOTS)
    bins: np.ndarray | None  # (rows, bins, 3, SLOTS)
    counts: np.ndarray | None  # (rows, bins)


def _merge_sums(a: _Sums, b: _Sums) -> _Sums:
    columns = a.columns.copy()
    X.merge(columns, b.columns)
    if a.bins is None:
        return _Sums(columns, None, None)
    bins = a.bins.copy()
    X.merge(bins, b.bins)
    return _Sums(columns, bins, a.counts + b.counts)


def _point_values(e: np.ndarray, u: np.ndarray, names: Sequence[str], products: Sequence[str],
                  k: np.ndarray, z_shift: np.ndarray, exponents: Mapping[str, np.ndarray]
                  ) -> dict[str, np.ndarray]:
    """The per-point columns (rows, points) of :func:`~xuqcal.core.statistics.point_columns`,
    at the scale of :meth:`~xuqcal.core.statistics.PreparedData.from_arrays`, and the
    normalized products of the intervals."""
    if k.any():
        e = np.ldexp(e, -k[:, np.newaxis])
        u = np.ldexp(u, -k[:, np.newaxis])
    base = list(dict.fromkeys([*names, *(f for p in products
                                         for f in moments.PRODUCT_COLUMNS[p])]))
    columns = point_columns(e, u, base, z_shift=z_shift[:, np.newaxis])
    if "lnu2" in columns and k.any():  # ln uE² keeps its true value (as from_arrays)
        columns["lnu2"] = np.where(k[:, np.newaxis] != 0,
                                   columns["lnu2"] + (k * _LOG_4)[:, np.newaxis],
                                   columns["lnu2"])
    columns.update(moments.product_values(columns, products, exponents))
    return columns


def _sum_block(e: Any, u: Any, x: Any, plan: _Plan, selection: X.Selection | None, *,
               rows: np.ndarray, names: Sequence[str], products: Sequence[str],
               absent: bool, n_bins: int) -> _Sums:
    """The exact sums of one block, piece by piece."""
    e, u = _rows_of(e), _rows_of(u)
    x = None if x is None else _rows_of(x)
    n_rows = e.shape[0]
    sums = _Sums(X.new_accumulators(n_rows, len(names) + len(products)),
                 None if selection is None else X.new_accumulators(n_rows, n_bins,
                                                                    len(_BIN_COLUMNS)),
                 None if selection is None else np.zeros((n_rows, n_bins), dtype=np.int64))
    edges = None if selection is None else selection.edges()[rows]
    for piece in _pieces(*e.shape):
        _sum_piece(e[:, piece], u[:, piece], None if x is None else x[:, piece], plan, edges,
                   sums, rows=rows, names=names, products=products, absent=absent)
    return sums


def _sum_piece(e: np.ndarray, u: np.ndarray, x: np.ndarray | None, plan: _Plan,
               edges: np.ndarray | None, sums: _Sums, *, rows: np.ndarray,
               names: Sequence[str], products: Sequence[str], absent: bool) -> None:
    """Add the exact sums of (rows, points) to ``sums``, in place."""
    e = e.astype(np.float64, copy=False)
    u = u.astype(np.float64, copy=False)
    present = ~(np.isnan(e) & np.isnan(u)) if absent else np.ones(e.shape, dtype=bool)
    exponents = {name: values[rows] for name, values in plan.exponents.items()}
    wanted = list(dict.fromkeys([*names, *(_BIN_COLUMNS if edges is not None else ())]))
    with np.errstate(all="ignore"):
        columns = _point_values(e, u, wanted, products, plan.k[rows], plan.z_shift[rows],
                                exponents)
    if names or products:
        stacked = np.stack([np.where(present, columns[c], 0.0) for c in [*names, *products]])
        X.sum_columns(X.as_bits(stacked), present, sums.columns)
    if edges is None:
        return
    keys = X.sort_keys(u if x is None else x)
    bins = np.empty(keys.shape, dtype=np.int64)
    for r in range(keys.shape[0]):
        bins[r] = np.searchsorted(edges[r], keys[r], side="right")
    per_bin = np.stack([np.where(present, columns[c], 0.0) for c in _BIN_COLUMNS])
    X.sum_bins(X.as_bits(per_bin), bins, present, sums.bins, sums.counts)


def _finish(sums: _Sums, plan: _Plan, *, rows: np.ndarray, shape: tuple[int, ...],
            statistics: Sequence[str], names: Sequence[str], products: Sequence[str],
            level: float, slice_names: Sequence[str]) -> np.ndarray:
    """Estimates and intervals (rows of one block of the extra dimensions, statistics, 3)
    from the exact sums, finished by the registry and :mod:`xuqcal.core.moments`."""
    chosen = get_statistics(statistics)
    totals = X.rounded(sums.columns)
    column_sums = {c: totals[:, i] for i, c in enumerate([*names, *products])}
    column_sums["count"] = plan.n[rows].astype(np.float64)
    column_sums["z_shift"] = plan.z_shift[rows]
    exponents = {name: values[rows] for name, values in plan.exponents.items()}
    k = plan.k[rows]
    out = np.full((len(rows), len(chosen), 3), np.nan)
    bin_sums = None
    if sums.bins is not None:
        bin_totals = X.rounded(sums.bins)
        bin_sums = {c: bin_totals[:, :, i] for i, c in enumerate(_BIN_COLUMNS)}
        bin_sums["count"] = sums.counts.astype(np.float64)
    for j, statistic in enumerate(chosen):
        if statistic.kind == "moment":
            estimate = statistic.from_sums(column_sums)
            low, high = moments.analytic_interval(statistic.key, estimate, column_sums,
                                                  exponents, level)
        else:
            estimate = statistic.from_bin_sums(bin_sums)
            low = high = np.full(len(rows), np.nan)
        values = np.stack([estimate, low, high], axis=-1)
        if statistic.unit_power and k.any():  # back to the units of the data (exact)
            with np.errstate(over="ignore"):
                values = np.ldexp(values, (statistic.unit_power * k)[:, np.newaxis])
        out[:, j] = values
    _warn_undefined(out[..., 0], chosen, sums, bin_sums, k, [slice_names[r] for r in rows])
    return out.reshape(*shape, len(chosen), 3)


def _warn_undefined(estimates: np.ndarray, chosen: Sequence[Statistic], sums: _Sums,
                    bin_sums: Mapping[str, np.ndarray] | None, k: np.ndarray,
                    names: Sequence[str]) -> None:
    """An :class:`UndefinedStatisticWarning` per NaN or infinite estimate, with the reason
    (the wording of :meth:`~xuqcal.core.statistics.PreparedData.undefined_reasons`)."""
    for r, j in zip(*np.nonzero(~np.isfinite(estimates)), strict=True):
        statistic = chosen[j]
        why = f"its value is {estimates[r, j]}"
        if statistic.unit_power and k[r]:
            why = (f"its value exceeds the float64 range (data of scale 2^{int(k[r])}); the "
                   "scale-free statistics are unaffected")
        if statistic.needs_bins and bin_sums is not None:
            empty = np.flatnonzero(sums.counts[r] == 0)
            if empty.size:
                why = (f"bins {', '.join(map(str, empty.tolist()))} hold no point: a tie group "
                       "of the binning variable spans a whole bin (out of core, the points "
                       "tied at an edge all go to the upper bin)")
            elif statistic.key == "zmse" and (bin_sums["z2"][r] == 0).any():
                why = ("a bin has <Z²> = 0 (all its E are 0, or |E/uE| underflows): |ln 0| is "
                       "infinite")
        prefix = f"{names[r]}: " if names[r] else ""
        warnings.warn(f"{prefix}{statistic.key} is undefined: {why}",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())


# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------


def _slice_names(ds: xr.Dataset, dims: Sequence[str]) -> list[str]:
    if not dims:
        return [""]
    labels = [ds.indexes[d] if d in ds.indexes else pd.RangeIndex(ds.sizes[d]) for d in dims]
    return [slice_label(dict(zip(dims, (labels[i][j] for i, j in enumerate(index)),
                                 strict=True)))
            for index in np.ndindex(*[len(v) for v in labels])]


def _assemble(parts: Mapping[tuple[int, ...], Any], layout: _Layout,
              tail: tuple[int, ...]) -> da.Array:
    """A Dask array (extra dimensions..., tail) from one Delayed per block of the extra
    dimensions."""
    arrays = {index: da.from_delayed(part, shape=(*layout.block_shape(index), *tail),
                                     dtype=np.float64)
              for index, part in parts.items()}
    if not layout.extra_shape:
        return arrays[()]

    def nest(prefix: tuple[int, ...]) -> da.Array:
        depth = len(prefix)
        if depth == len(layout.extra_shape):
            return arrays[prefix]
        return da.concatenate([nest((*prefix, i)) for i in range(len(layout.e.chunks[depth]))],
                              axis=depth)

    return nest(())


def _row_values(plan: _Plan, name: str, shape: tuple[int, ...]) -> np.ndarray:
    return getattr(plan, name).reshape(shape) if shape else getattr(plan, name)[0]


def _edge_values(selection: X.Selection, shape: tuple[int, ...], dtype: np.dtype,
                 declared: np.dtype) -> np.ndarray:
    values = X.key_values(selection.edges(), dtype).astype(declared)
    return values.reshape(*shape, values.shape[-1])


@by_role
def reduce_statistics(
    ds: xr.Dataset,
    statistics: str | Iterable[str] | None = ("zms", "rce"),
    *,
    level: float = defaults.LEVEL,
    n_bins: int | None = None,
    by: str = defaults.BY,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Statistics with analytic intervals from exact chunk-wise sums over ``sample``: out of
    core, bit-identical whatever the chunking.

    For data larger than one worker's memory (``xr.open_zarr(...)``,
    ``xuqcal.open_dataset(path, chunks={"sample": ...})``): no task holds more than one chunk
    (see :mod:`xuqcal.analysis.outofcore` for the passes over the data). Every sum is exact and
    correctly rounded, so the results are the same to the last bit for any chunking, and for
    NumPy-backed and Dask-backed data; they agree with the in-memory :func:`xuqcal.stats` to a
    few units in the last place for moment statistics (which sums in floating point), and
    exactly bin for bin for binned statistics without ties (see Notes).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``; extra dimensions (``model``, ``task``,
        ...) are kept, each slice reduced on its present points (``E`` and ``uE`` not both
        NaN), as :func:`~xuqcal.analysis.slices.broadcast` does.
    statistics : str or sequence of str or None
        Statistic keys: the moment statistics ``mse rmse mv rmv zm zms zv rce nll`` and the
        binned ``ence uce zmse`` (``None``: all of them). ``cc`` is refused: a rank correlation
        needs all the points in one task.
    level : float
        Confidence level of the intervals.
    n_bins : int, optional
        Number of bins of the binned statistics. Default: the recommended number for the
        number of rows along ``sample`` (:func:`~xuqcal.core.binning.recommended_n_bins`
        ``(M, defaults.N_BINS)``, as :func:`xuqcal.stats`: 20 from 400 rows on); with extra
        dimensions the same number for every slice, as the present points of a slice are
        known only after a pass over the data. A number given whose bins hold fewer than
        ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points warns.
    by : str
        Binning variable (``uE`` measures consistency, a feature adaptivity).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``statistic`` (after the extra dimensions, if any): ``estimate``, ``ci_low`` and
        ``ci_high`` (NaN for the binned statistics, which have no analytic interval), the
        coordinate ``interval`` (``"student"``, ``"delta"`` or ``"none"``), and
        ``bin_edge`` over ``edge`` (the N - 1 inner edges) when a statistic is binned. Lazy
        for Dask-backed data (nothing is read before ``.compute()``), computed for
        NumPy-backed data. Attributes say how it was computed.

    Raises
    ------
    ValueError
        Before any computation, for invalid arguments (each message starts with the parameter
        name), ``cc``, a missing variable or wrong dimensions; for one data set, too few
        points. When computed (the first pass over the data), for NaN, infinite or
        non-positive values, naming the variable, the count and the first rows (as
        :func:`xuqcal.validate_dataset`), and for slices with too few points.

    Warns
    -----
    UndefinedStatisticWarning
        For a statistic that is undefined on the data (NaN or ``inf``), naming the reason.

    Notes
    -----
    **Intervals** (:mod:`xuqcal.core.moments`): the Student interval
    ``mean ± t_{(1+level)/2, M-1} s / √M`` for the means ``mse``, ``mv``, ``zm``, ``zms`` and
    ``nll`` (the mean of ½ (Z² + ln uE² + ln 2π)); a delta-method normal interval for
    ``rmse``, ``rmv``, ``rce`` (a function of <E²> and <uE²>, with their variances and
    covariance) and ``zv`` (``SE² = (m4 - s⁴ (M - 3)/(M - 1)) / M``, ``m4`` the fourth central
    moment of Z).

    **z_shift**: ``zm`` and ``zv`` sum ``Z - c`` with ``c`` the correctly rounded mean of
    ``E / uE`` from the exact sums of the first pass (the in-memory kernels use NumPy's mean of
    Z); any constant is exact in the formulas, the mean keeps ``zv`` free of cancellation.

    **Bins**: the edges are the exact order statistics ``x_(floor(b M / N))`` (0-based),
    ``b = 1 .. N - 1``, of the binning variable, and a point ``x`` goes to bin ``b`` when
    ``edge_b <= x < edge_(b+1)``. Without ties these are exactly the equal-count bins of
    :func:`xuqcal.stats` (the same points in each bin). With ties at an edge, every point tied
    with the edge goes to the upper bin, whereas the in-memory equal-count bins split a tie
    group by data order: the bin counts then differ (and a tie group spanning a whole bin
    leaves it empty: the statistic is NaN, with a warning).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(5000, nu=6, seed=0)
    >>> result = reduce_statistics(ds.chunk(sample=1000), ["zms", "ence"]).compute()
    >>> result.estimate.dims, result.interval.values.tolist()
    (('statistic',), ['student', 'none'])
    >>> same = reduce_statistics(ds.chunk(sample=777), ["zms", "ence"]).compute()
    >>> bool((same.estimate == result.estimate).all())
    True
    """
    n_bins = n_bins_for(ds, n_bins, statistics=statistics)
    chosen, by, dims, binned = _check_arguments(ds, statistics, level=level, n_bins=n_bins,
                                                by=by, E=E, uE=uE)
    level = float(level)
    n_bins = int(n_bins)
    keys = [s.key for s in chosen]
    names = list(dict.fromkeys([*(c for s in chosen if s.kind == "moment" for c in s.columns),
                                *(c for c in moments.needed_columns(keys)
                                  if c not in moments.PRODUCT_COLUMNS)]))
    products = [c for c in moments.needed_columns(keys) if c in moments.PRODUCT_COLUMNS]
    separate = binned and by != uE
    layout = _Layout.of(ds, E, uE, by if separate else None, dims)
    layout.check_fits()
    absent = bool(dims)
    slice_names = _slice_names(ds, dims)
    by_dtype = ds[by].dtype if binned else np.dtype(np.float64)
    expressions = {name: ds[name].attrs.get("expression") for name in (E, uE)}

    # pass 1: the checks and the plan of the sums
    e_blocks, u_blocks, x_blocks, l_blocks = _blocks([layout.e, layout.u, layout.x,
                                                       layout.labels])
    check = dask.delayed(_check_block, pure=True)
    per_block = []
    for index in layout.block_rows:
        parts = [check(e_blocks[(*index, j)], u_blocks[(*index, j)],
                       None if x_blocks is None else x_blocks[(*index, j)],
                       None if l_blocks is None else l_blocks[(*index, j)],
                       offset=offset, absent=absent,
                       by_float=binned and by_dtype.kind == "f", by_is_u=not separate,
                       binned=binned)
                 for j, offset in enumerate(layout.offsets)]
        per_block.append(_tree(parts, _merge_checks))
    plan = dask.delayed(_plan, pure=True)(
        per_block, block_rows=list(layout.block_rows.values()), n_rows=layout.n_rows,
        slice_names=slice_names, statistics=keys, n_bins=n_bins, binned=binned, E=E, uE=uE,
        by=by, expressions=expressions)

    # pass 2: the bin edges, each pass reading the data again (bound to the previous one)
    selection = None
    if binned:
        selection = dask.delayed(_selection_of, pure=True)(plan)
        for _ in range(EDGE_PASSES):
            u_arr, x_arr = bind((layout.u, layout.x), selection) if separate else \
                (bind(layout.u, selection), None)
            u_pass, x_pass = _blocks([u_arr, x_arr])
            edge = dask.delayed(_edge_block, pure=True)
            seen = [_tree([edge(u_pass[(*index, j)],
                                None if x_pass is None else x_pass[(*index, j)], selection,
                                rows=rows, absent=absent)
                           for j in range(len(layout.offsets))], X.Selection.combine)
                    for index, rows in layout.block_rows.items()]
            selection = dask.delayed(_advance, pure=True)(selection, _tree(seen,
                                                                            X.Selection.combine))

    # pass 3: the exact sums, finished per block of the extra dimensions
    parent = selection if binned else plan
    bound = bind((layout.e, layout.u) + ((layout.x,) if separate else ()), parent)
    e_pass, u_pass, *rest = _blocks(list(bound))
    x_pass = rest[0] if rest else None
    summed = dask.delayed(_sum_block, pure=True)
    finish = dask.delayed(_finish, pure=True)
    finished = {}
    for index, rows in layout.block_rows.items():
        total = _tree([summed(e_pass[(*index, j)], u_pass[(*index, j)],
                              None if x_pass is None else x_pass[(*index, j)], plan, selection,
                              rows=rows, names=names, products=products, absent=absent,
                              n_bins=n_bins)
                       for j in range(len(layout.offsets))], _merge_sums)
        finished[index] = finish(total, plan, rows=rows, shape=layout.block_shape(index),
                                 statistics=keys, names=names, products=products, level=level,
                                 slice_names=slice_names)
    values = _assemble(finished, layout, (len(keys), 3))
    result_dims = (*dims, "statistic")
    data_vars = {
        "estimate": (result_dims, values[..., 0]),
        "ci_low": (result_dims, values[..., 1]),
        "ci_high": (result_dims, values[..., 2]),
    }
    coords: dict[str, Any] = dict(statistic_coords(chosen))
    coords["interval"] = ("statistic", [moments.interval_method(k) for k in keys])
    if binned:
        declared = np.dtype(np.float64) if by_dtype.kind == "f" else np.dtype(by_dtype)
        edges = da.from_delayed(
            dask.delayed(_edge_values, pure=True)(selection, layout.extra_shape,
                                                  np.dtype(by_dtype), declared),
            shape=(*layout.extra_shape, n_bins - 1), dtype=declared)
        data_vars["bin_edge"] = ((*dims, "edge"), edges)
    if dims:
        coords["n_samples"] = (dims, da.from_delayed(
            dask.delayed(_row_values, pure=True)(plan, "n", layout.extra_shape),
            shape=layout.extra_shape, dtype=np.int64))
        coords.update({name: coord for name, coord in ds.coords.items()
                       if coord.dims and set(coord.dims) <= set(dims)})
    result = xr.Dataset(data_vars, coords=coords)
    attrs: dict[str, Any] = {
        "method": "out of core: exact sums chunk by chunk over sample",
        "summation": "exact sums: correctly rounded, independent of chunking",
        "intervals": "Student t for the means (mse, mv, zm, zms, nll), delta-method normal "
                     "for rmse, rmv, rce, zv; none for the binned statistics",
        "z_shift": "the correctly rounded mean of E/uE (exact sums of the first pass)",
        "level": level,
        "n_bins": n_bins if binned else 0,
        "by": by,
        "E": E,
        "uE": uE,
    }
    if binned:
        attrs["binning"] = ("quantile edges x_(floor(b M / N)), b = 1 .. N-1, exact; bin b "
                            "holds edge_b <= x < edge_(b+1): points tied at an edge go to the "
                            "upper bin")
    if dims:
        attrs["slice_dims"] = ", ".join(dims)
        attrs["slices"] = ("each slice reduced on its present points (E and uE not both "
                           "NaN)")
    else:
        attrs["n_samples"] = int(ds.sizes[SAMPLE_DIM])
    result = attach(result, attrs)
    return result if layout.lazy else result.compute()
