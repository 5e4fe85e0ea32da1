"""Statistics reduced out of core: exact sums chunk by chunk over ``sample``.

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

**Dependent points** (``se="cluster"`` or ``se="hac"``): the intervals of the moment
statistics then use the cluster-robust (Liang & Zeger 1986; Cameron & Miller 2015) or the
Newey–West HAC (Newey & West 1987, 1994) covariance of the means of their per-point columns
(normalized by the same powers of two as the products above), and the delta method
(:func:`xuqcal.core.moments.covariance_interval`; the NumPy references are
:mod:`xuqcal.core.robust`). Still from exact sums, so still bit-identical for any chunking:

* *cluster*: pass 1 also collects the sorted labels of the groups chunk by chunk (the global
  codes are their positions); after it, the per-group accumulators (``G × k`` per row of a
  chunk, ``k <= 6`` columns, :data:`xuqcal.core.exact.SLOTS` int64 each, three copies at
  once in the tree) are checked against the memory of one task (:class:`DataTooLargeError`);
  pass 3 adds the exact per-group sums (:func:`xuqcal.core.exact.sum_bins`, the codes as the
  bins); the covariance is ``G/(G-1) Σ_g r_g r_gᵀ / M²`` with ``r_g = S_g - M_g q̄`` (its
  products summed exactly).
* *hac*: pass 1 also checks, chunk after chunk, that the block variable does not decrease
  (the first point out of order is the error), and carries the first and last ``L`` present
  points of every slice from chunk to chunk (a chain of small tasks); pass 3 sums exactly the
  lagged products ``q_t q_(t-l)ᵀ``, ``l = 0 .. L``, each chunk with the last ``L`` points
  before it; the autocovariances are
  ``Γ_l = P_l - q̄ (T - Σ_last l)ᵀ - (T - Σ_first l) q̄ᵀ + (M - l) q̄ q̄ᵀ`` (``P_l`` the lagged
  sum, ``T`` the total), weighted ``1 - l/(L+1)``. The lagged accumulators
  (``(L + 1) k²`` per row of a chunk) are checked before any work.

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
from xuqcal.analysis.dependent import _sample_variable
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults, moments
from xuqcal.core import exact as X
from xuqcal.core.binning import check_n_bins
from xuqcal.core.checks import (
    check_choice,
    check_count,
    check_level,
    check_name,
    user_stacklevel,
    variable_name,
)
from xuqcal.core.memory import DataTooLargeError, format_bytes, task_memory_limit
from xuqcal.core.provenance import attach
from xuqcal.core.robust import cluster_correction, newey_west_lags
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
        statistics = [s.key for s in STATISTICS.values()
                      if s.in_all and s.key not in NOT_REDUCIBLE]
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
    g: da.Array | None = None  # the groups or block variable (over sample alone)

    @classmethod
    def of(cls, ds: xr.Dataset, E: str, uE: str, by: str | None,
           dims: tuple[str, ...], dependence: str | None = None) -> _Layout:
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
        g = None
        if dependence is not None:
            g = _as_dask(ds[dependence], (), (chunks[-1],))
            lazy = lazy or ds[dependence].chunks is not None
        return cls(arrays[0], arrays[1], arrays[2] if by is not None else None,
                   arrays[-1] if label_var is not None else None, extra_shape, block_rows,
                   offsets, lazy, g)

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
        variables = 2 + (self.x is not None) + (self.g is not None)
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


def _finish(sums: _Sums, plan: _Plan, robust: _RobustSums | None = None,
            edges: _Edges | None = None, *, rows: np.ndarray, shape: tuple[int, ...],
            statistics: Sequence[str], names: Sequence[str], products: Sequence[str],
            level: float, slice_names: Sequence[str],
            dependence: _Dependence | None = None, robust_names: Sequence[str] = ()
            ) -> np.ndarray:
    """Estimates and intervals (rows of one block of the extra dimensions, statistics, 3)
    from the exact sums, finished by the registry and :mod:`xuqcal.core.moments` (with the
    cluster-robust or HAC covariance of the means when ``robust`` is given)."""
    chosen = get_statistics(statistics)
    covariance = None
    if robust is not None and dependence is not None:
        covariance = _robust_covariance(robust, edges, plan, rows=rows, dependence=dependence,
                                        names=robust_names, slice_names=slice_names)
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
        if statistic.kind == "moment" and covariance is not None:
            estimate = statistic.from_sums(column_sums)
            means, cov, df = covariance
            low, high = moments.covariance_interval(statistic.key, estimate,
                                                    column_sums["count"], means, cov,
                                                    exponents, level, df)
        elif statistic.kind == "moment":
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
# Dependent points: cluster-robust and HAC intervals
# --------------------------------------------------------------------------------------------

#: The standard errors of :func:`reduce_statistics` (``se=``).
SE_TYPES = ("iid", "cluster", "hac")
#: Copies of the exact per-group (or per-lag) accumulators a task holds at once (its own, and
#: the two it merges in the tree reduction).
ROBUST_COPIES = 3
_ACCUMULATOR_BYTES = X.SLOTS * 8


@dataclass(frozen=True)
class _Dependence:
    """The checked ``se``, ``groups``/``block`` and ``lags`` of :func:`reduce_statistics`."""

    se: str
    variable: str | None = None
    lags: int | None = None  # given; None: the Newey–West rule per slice
    lag_cap: int = 0  # the most lags of any slice (the values carried between chunks)

    @property
    def iid(self) -> bool:
        return self.se == "iid"


def _check_dependence(ds: xr.Dataset, se: object, groups: object, block: object,
                      lags: object, *, dims: Sequence[str]) -> _Dependence:
    """The checks of ``se``, ``groups``, ``block`` and ``lags`` (no data are read)."""
    se = check_choice(se, "se", SE_TYPES)
    if se == "iid":
        for name, value in (("groups", groups), ("block", block), ("lags", lags)):
            if value is not None:
                raise ValueError(f"{name}: only used with se='cluster' (groups) or se='hac' "
                                 f"(block, lags), got {value!r} with se='iid'")
        return _Dependence("iid")
    if se == "cluster":
        if groups is None:
            raise ValueError("groups: se='cluster' needs the variable that holds each point's "
                             "group, e.g. groups='structure_id'")
        for name, value in (("block", block), ("lags", lags)):
            if value is not None:
                raise ValueError(f"{name}: not used by se='cluster' (give groups= only), got "
                                 f"{value!r}")
        name = _sample_variable(ds, groups, "groups")
        if name in dims:
            raise ValueError(f"groups: {name!r} is a dimension of the data, not a variable "
                             "over sample")
        return _Dependence("cluster", name)
    if groups is not None:
        raise ValueError(f"groups: not used by se='hac' (give block= and, optionally, lags=), "
                         f"got {groups!r}")
    if block is None:
        raise ValueError("block: se='hac' needs the variable that orders the points, e.g. "
                         "block='time'")
    name = _sample_variable(ds, block, "block")
    if ds[name].dtype.kind not in "biufmM":
        raise ValueError(f"block: {name!r} does not hold numbers or times (dtype "
                         f"{ds[name].dtype}); order the points by a numeric variable")
    m = int(ds.sizes[SAMPLE_DIM])
    if lags is not None:
        if isinstance(lags, bool) or not isinstance(lags, int | np.integer) or lags < 0:
            raise ValueError(f"lags: expected an integer >= 0, got {lags!r}")
        if lags >= m:
            raise ValueError(f"lags: {int(lags)} lags need more than {int(lags)} points, and "
                             f"the data have {m} along sample")
        return _Dependence("hac", name, int(lags), int(lags))
    return _Dependence("hac", name, None, newey_west_lags(m))


def _check_robust_fits(dependence: _Dependence, layout: _Layout, n_columns: int) -> None:
    """Refuse, before any work, HAC lagged sums too large for one task."""
    if dependence.se != "hac":
        return
    rows = int(np.prod([max(c) for c in layout.e.chunks[:-1]], dtype=np.int64))
    need = (rows * (dependence.lag_cap + 1) * n_columns * n_columns * _ACCUMULATOR_BYTES
            * ROBUST_COPIES)
    limit, source = task_memory_limit()
    if need + TASK_OVERHEAD_BYTES > limit:
        raise DataTooLargeError(
            f"lags: {dependence.lag_cap} lags of {n_columns} column(s) for {rows:,} row(s) "
            f"need about {format_bytes(need)} of exact accumulators in one task, more than "
            f"the {format_bytes(limit)} one task may use ({source}); use fewer lags")


def _robust_names(keys: Sequence[str]) -> tuple[str, ...]:
    return moments.mean_columns([k for k in keys if k in moments.MEAN_COLUMNS])


def _mean_values(e: np.ndarray, u: np.ndarray, plan: _Plan, rows: np.ndarray,
                 names: Sequence[str]) -> np.ndarray:
    """The normalized per-point values (names, rows, points) of the robust columns, at the
    scale of the sums (:func:`_point_values`)."""
    exponents = {name: values[rows] for name, values in plan.exponents.items()}
    base = list(dict.fromkeys("zd" if n == "zd2" else n for n in names))
    with np.errstate(all="ignore"):
        columns = _point_values(e.astype(np.float64, copy=False),
                                u.astype(np.float64, copy=False), base, [], plan.k[rows],
                                plan.z_shift[rows], exponents)
        return moments.mean_values(columns, names, exponents)


# ----------------------------------------------------------------------- cluster: the groups


@dataclass(frozen=True)
class _Labels:
    """The sorted group labels of the present points of some blocks, and the missing ones."""

    uniques: np.ndarray
    missing: int
    first: list[Any]


def _labels_block(e: Any, u: Any, g: Any, labels: Any, *, offset: int,
                  absent: bool) -> _Labels:
    e, u = _rows_of(e), _rows_of(u)
    g = np.asarray(g)
    present = (~(np.isnan(e) & np.isnan(u))).any(axis=0) if absent else \
        np.ones(g.shape, dtype=bool)
    missing = present & np.asarray(pd.isna(g))
    where = np.flatnonzero(missing)
    label_row = None if labels is None else _rows_of(labels)[0]
    first = [_label_at(label_row, int(p), offset) for p in where[:5].tolist()]
    return _Labels(np.unique(g[present & ~missing]), int(where.size), first)


def _merge_labels(a: _Labels, b: _Labels) -> _Labels:
    return _Labels(np.union1d(a.uniques, b.uniques), a.missing + b.missing,
                   (a.first + b.first)[:5])


def _groups_setup(found: _Labels, plan: _Plan, *, variable: str, rows: int,
                  n_columns: int) -> np.ndarray:
    """The global sorted group labels (their positions are the codes), after the checks of
    the labels and of the memory of the per-group accumulators."""
    del plan  # only orders this step after the first pass
    if found.missing:
        raise ValueError(f"groups: {variable!r} is missing at {found.missing} point(s) "
                         f"({_format_rows(found.first, found.missing)}); give every point a "
                         "group")
    n_groups = int(found.uniques.size)
    need = rows * n_groups * n_columns * _ACCUMULATOR_BYTES * ROBUST_COPIES
    limit, source = task_memory_limit()
    if need + TASK_OVERHEAD_BYTES > limit:
        raise DataTooLargeError(
            f"groups: {n_groups:,} groups of {variable!r} × {n_columns} column(s) × {rows:,} "
            f"row(s) need about {format_bytes(need)} of exact per-group accumulators in one "
            f"task ({_ACCUMULATOR_BYTES} bytes each, {ROBUST_COPIES} copies), more than the "
            f"{format_bytes(limit)} one task may use ({source}); use coarser groups, fewer "
            "statistics, or chunks with fewer rows of the extra dimensions")
    return found.uniques


# ------------------------------------------------------------------------ hac: the order


@dataclass(frozen=True)
class _Order:
    """The first and last values of the block variable over consecutive chunks (and the label
    of the first point), and the first place inside where it decreases or is missing."""

    first: Any
    last: Any
    first_label: Any
    bad: str | None


def _order_block(b: Any, labels: Any, *, offset: int, variable: str) -> _Order:
    b = np.asarray(b)
    label_row = None if labels is None else _rows_of(labels)[0]
    if b.size == 0:
        return _Order(None, None, None, None)
    missing = np.flatnonzero(np.asarray(pd.isna(b)))
    if missing.size:
        rows = [_label_at(label_row, int(p), offset) for p in missing[:5].tolist()]
        return _Order(None, None, None,
                      f"block: {variable!r} is missing (NaN) at {missing.size} point(s) of a "
                      f"chunk ({_format_rows(rows, int(missing.size))}); give every point a "
                      "value")
    down = np.flatnonzero(b[1:] < b[:-1])
    bad = None
    if down.size:
        p = int(down[0]) + 1
        bad = _unsorted(variable, _label_at(label_row, p, offset), b[p], b[p - 1])
    return _Order(b[0], b[-1], _label_at(label_row, 0, offset), bad)


def _unsorted(variable: str, label: Any, value: Any, before: Any) -> str:
    return (f"block: the data are not in the order of {variable!r}: row {label!r} "
            f"({variable} = {value}) comes after {variable} = {before}. Out of core, HAC "
            f"takes the points in the order of the data: sort them by {variable!r} once "
            f"(ds.sortby({variable!r})) and store them in that order")


def _chain_order(a: _Order, b: _Order, *, variable: str) -> _Order:
    """Two consecutive runs of chunks (``a`` first, already checked), raising at the first
    problem of ``b``."""
    if b.first is not None and a.last is not None and b.first < a.last:
        raise ValueError(_unsorted(variable, b.first_label, b.first, a.last))
    if b.bad is not None:
        raise ValueError(b.bad)
    if b.first is None:
        return a
    return _Order(a.first if a.first is not None else b.first, b.last,
                  a.first_label if a.first is not None else b.first_label, None)


def _order_done(order: _Order, plan: _Plan) -> bool:
    """Orders the sums after the first pass and the check of the order."""
    del order, plan
    return True


# ------------------------------------------------------------------- hac: the edge values


@dataclass(frozen=True)
class _Edges:
    """Per row of a block of the extra dimensions: the first and last ``L`` present points
    (raw E and uE, 2 × at most L) of consecutive chunks."""

    head: list[np.ndarray]
    tail: list[np.ndarray]


def _edges_block(e: Any, u: Any, *, lags: int, absent: bool) -> _Edges:
    e, u = _rows_of(e), _rows_of(u)
    heads, tails = [], []
    for r in range(e.shape[0]):
        present = ~(np.isnan(e[r]) & np.isnan(u[r])) if absent else slice(None)
        points = np.stack([e[r][present], u[r][present]]).astype(np.float64)
        heads.append(points[:, :lags])
        tails.append(points[:, points.shape[1] - min(lags, points.shape[1]):])
    return _Edges(heads, tails)


def _chain_edges(a: _Edges, b: _Edges, *, lags: int) -> _Edges:
    heads = [np.concatenate([x, y], axis=1)[:, :lags] for x, y in zip(a.head, b.head,
                                                                      strict=True)]
    tails = []
    for x, y in zip(a.tail, b.tail, strict=True):
        joined = np.concatenate([x, y], axis=1)
        tails.append(joined[:, joined.shape[1] - min(lags, joined.shape[1]):])
    return _Edges(heads, tails)


def _no_edges(n_rows: int) -> _Edges:
    empty = np.zeros((2, 0))
    return _Edges([empty] * n_rows, [empty] * n_rows)


# ------------------------------------------------------------------------- the robust sums


@dataclass(frozen=True)
class _RobustSums:
    totals: np.ndarray  # (rows, columns, SLOTS): exact sums of the normalized columns
    parts: np.ndarray  # cluster: (rows, groups, columns, SLOTS); hac: (rows, L+1, c*c, SLOTS)
    counts: np.ndarray | None  # cluster: (rows, groups)


def _merge_robust(a: _RobustSums, b: _RobustSums) -> _RobustSums:
    totals, parts = a.totals.copy(), a.parts.copy()
    X.merge(totals, b.totals)
    X.merge(parts, b.parts)
    return _RobustSums(totals, parts, None if a.counts is None else a.counts + b.counts)


def _cluster_block(e: Any, u: Any, g: Any, plan: _Plan, uniques: np.ndarray, *,
                   rows: np.ndarray, names: Sequence[str], absent: bool) -> _RobustSums:
    """The exact per-group sums of the normalized columns of one block, piece by piece."""
    e, u = _rows_of(e), _rows_of(u)
    g = np.asarray(g)
    n_rows = e.shape[0]
    sums = _RobustSums(X.new_accumulators(n_rows, len(names)),
                       X.new_accumulators(n_rows, uniques.size, len(names)),
                       np.zeros((n_rows, uniques.size), dtype=np.int64))
    for piece in _pieces(n_rows, e.shape[1]):
        ep, up = e[:, piece], u[:, piece]
        present = ~(np.isnan(ep) & np.isnan(up)) if absent else np.ones(ep.shape, dtype=bool)
        values = np.where(present, _mean_values(ep, up, plan, rows, names), 0.0)
        bits = X.as_bits(values)
        X.sum_columns(bits, present, sums.totals)
        codes = np.searchsorted(uniques, g[piece])
        codes = np.ascontiguousarray(np.broadcast_to(np.where(present, codes, 0), ep.shape),
                                     dtype=np.int64)
        X.sum_bins(bits, codes, present, sums.parts, sums.counts)
    return sums


def _hac_block(e: Any, u: Any, plan: _Plan, before: _Edges, *, rows: np.ndarray,
               names: Sequence[str], lags: int, absent: bool) -> _RobustSums:
    """The exact sums of the lagged products ``q_t q_(t-l)ᵀ``, ``l = 0 .. lags``, of one
    block, with the last ``lags`` present points before it (``before.tail``)."""
    e, u = _rows_of(e), _rows_of(u)
    n_rows, k = e.shape[0], len(names)
    sums = _RobustSums(X.new_accumulators(n_rows, k),
                       X.new_accumulators(n_rows, (lags + 1) * k * k), None)
    size = max(256, PIECE // ((lags + 1) * k * k))
    for r in range(n_rows):
        present = ~(np.isnan(e[r]) & np.isnan(u[r])) if absent else slice(None)
        carried = before.tail[r]
        c = carried.shape[1]
        raw_e = np.concatenate([carried[0], e[r][present].astype(np.float64)])
        raw_u = np.concatenate([carried[1], u[r][present].astype(np.float64)])
        full = _mean_values(raw_e[np.newaxis], raw_u[np.newaxis], plan, rows[r:r + 1],
                            names)[:, 0]  # (k, c + p)
        total = X.new_accumulators(1, k)
        part = X.new_accumulators(1, (lags + 1) * k * k)
        X.sum_columns(X.as_bits(full[:, np.newaxis, c:]), np.ones((1, full.shape[1] - c),
                                                                   dtype=bool), total)
        for start in range(c, full.shape[1], size):
            stop = min(start + size, full.shape[1])
            t = np.arange(start, stop)
            products = np.zeros((lags + 1, k, k, stop - start))
            for lag in range(lags + 1):
                ok = t >= lag
                lagged = full[:, np.where(ok, t - lag, 0)]
                products[lag] = np.where(ok, full[:, np.newaxis, start:stop]
                                         * lagged[np.newaxis, :, :], 0.0)
            X.sum_columns(X.as_bits(products.reshape(-1, 1, stop - start)),
                          np.ones((1, stop - start), dtype=bool), part)
        sums.totals[r] = total[0]
        sums.parts[r] = part[0]
    return sums


# --------------------------------------------------------------------- the covariances


def _cluster_cov(sums: _RobustSums, n: np.ndarray, names: Sequence[str]
                 ) -> tuple[dict[str, np.ndarray], dict[tuple[str, str], np.ndarray],
                            np.ndarray, np.ndarray]:
    """Means, covariance of the means (normalized), degrees of freedom ``G - 1`` and ``G``
    per row, from the exact per-group sums."""
    totals = X.rounded(sums.totals)  # (rows, k)
    group = X.rounded(sums.parts)  # (rows, G, k)
    counts = sums.counts
    means = totals / n[:, np.newaxis]
    with np.errstate(all="ignore"):
        residual = group - counts[..., np.newaxis] * means[:, np.newaxis, :]  # (rows, G, k)
    k = len(names)
    products = np.stack([residual[..., a] * residual[..., b] for a in range(k)
                         for b in range(k)])  # (k*k, rows, G)
    acc = X.new_accumulators(n.size, k * k)
    X.sum_columns(X.as_bits(products), counts > 0, acc)
    outer = X.rounded(acc)
    n_groups = (counts > 0).sum(axis=1)
    factor = cluster_correction(n_groups, n)
    cov = {(names[a], names[b]): factor * outer[:, a * k + b] / (n * n)
           for a in range(k) for b in range(k)}
    return ({name: means[:, i] for i, name in enumerate(names)}, cov,
            (n_groups - 1).astype(np.float64), n_groups)


def _hac_cov(sums: _RobustSums, edges: _Edges, plan: _Plan, n: np.ndarray,
             lags: np.ndarray, *, rows: np.ndarray, names: Sequence[str], lag_cap: int
             ) -> tuple[dict[str, np.ndarray], dict[tuple[str, str], np.ndarray], np.ndarray]:
    """Means, Newey–West covariance of the means (normalized) and degrees of freedom
    ``n - 1`` per row, from the exact lagged sums and the first and last points."""
    k = len(names)
    totals = X.rounded(sums.totals)  # (rows, k)
    lagged = X.rounded(sums.parts).reshape(len(rows), lag_cap + 1, k, k)
    means = totals / n[:, np.newaxis]
    cov = np.zeros((len(rows), k, k))
    for r in range(len(rows)):
        head = _mean_values(edges.head[r][0][np.newaxis], edges.head[r][1][np.newaxis], plan,
                            rows[r:r + 1], names)[:, 0]
        tail = _mean_values(edges.tail[r][0][np.newaxis], edges.tail[r][1][np.newaxis], plan,
                            rows[r:r + 1], names)[:, 0]
        m, t, count = means[r], totals[r], float(n[r])
        s = np.zeros((k, k))
        for lag in range(int(lags[r]) + 1):
            first = np.array([X.exact_sum(head[a, :lag]) if lag else 0.0 for a in range(k)])
            last = np.array([X.exact_sum(tail[a, tail.shape[1] - lag:]) if lag else 0.0
                             for a in range(k)])
            gamma = (lagged[r, lag] - np.outer(m, t - last) - np.outer(t - first, m)
                     + (count - lag) * np.outer(m, m))
            s = s + gamma if lag == 0 else \
                s + (1.0 - lag / (lags[r] + 1.0)) * (gamma + gamma.T)
        cov[r] = s / (count * count)
    return ({name: means[:, i] for i, name in enumerate(names)},
            {(names[a], names[b]): cov[:, a, b] for a in range(k) for b in range(k)},
            n - 1.0)


def _robust_covariance(robust: _RobustSums, edges: _Edges | None, plan: _Plan, *,
                       rows: np.ndarray, dependence: _Dependence, names: Sequence[str],
                       slice_names: Sequence[str]
                       ) -> tuple[dict[str, np.ndarray], dict[tuple[str, str], np.ndarray],
                                  np.ndarray]:
    """The means, their covariance (normalized) and the degrees of freedom of the rows of a
    block, after the checks of the number of groups or lags of each row."""
    n = plan.n[rows].astype(np.float64)
    if dependence.se == "cluster":
        n_groups = (robust.counts > 0).sum(axis=1)
        for i, row in enumerate(rows.tolist()):
            if n_groups[i] < 2:
                where = f"in {slice_names[row]}, " if slice_names[row] else ""
                raise ValueError(f"groups: {where}{dependence.variable!r} holds "
                                 f"{int(n_groups[i])} group; cluster-robust intervals need "
                                 "at least 2 groups (tens for a good approximation)")
        means, cov, df, _ = _cluster_cov(robust, n, names)
        return means, cov, df
    lags = _robust_lags(dependence, plan.n[rows])
    for i, row in enumerate(rows.tolist()):
        if lags[i] >= n[i]:
            where = f" in {slice_names[row]}" if slice_names[row] else ""
            raise ValueError(f"lags: {int(lags[i])} lags need more than {int(lags[i])} "
                             f"points, and there are {int(n[i])}{where}")
    assert edges is not None
    return _hac_cov(robust, edges, plan, n, lags, rows=rows, names=names,
                    lag_cap=dependence.lag_cap)


def _dependence_attrs(dependence: _Dependence) -> dict[str, Any]:
    """The attributes that say how the intervals were computed."""
    if dependence.se == "iid":
        return {"se": "iid"}
    if dependence.se == "cluster":
        return {
            "se": "cluster",
            "groups": dependence.variable,
            "se_method": "cluster-robust sandwich (CRV1; Liang & Zeger 1986) of the column "
                         "means from exact per-group sums, delta method for functions of "
                         "several means",
            "correction": "G/(G-1) (M-1)/(M-K), K = 1, i.e. G/(G-1) (statsmodels' "
                          "use_correction=True); G per slice in the coordinate n_groups",
            "quantile": "Student t with G - 1 degrees of freedom for the means, normal for "
                        "the delta-method statistics",
        }
    return {
        "se": "hac",
        "block": dependence.variable,
        "se_method": "Newey-West (1987) HAC covariance of the column means, Bartlett weights "
                     "1 - l/(L+1), from exact sums of the lagged products in the order of the "
                     "data, delta method for functions of several means",
        "lags": dependence.lags if dependence.lags is not None else
        "floor(4 (M/100)^(2/9)) per slice (Newey & West 1994); values in the coordinate lags",
        "correction": "none (statsmodels' default use_correction=False)",
        "quantile": "Student t with M - 1 degrees of freedom for the means, normal for the "
                    "delta-method statistics",
    }


def _robust_lags(dependence: _Dependence, n: np.ndarray) -> np.ndarray:
    if dependence.lags is not None:
        return np.full(n.shape, dependence.lags, dtype=np.int64)
    return np.array([newey_west_lags(int(m)) for m in n], dtype=np.int64)


def _robust_info(sums: _RobustSums, plan: _Plan, *, rows: np.ndarray,
                 dependence: _Dependence, shape: tuple[int, ...]) -> np.ndarray:
    """The number of groups (cluster) or of lags (HAC) of each row, as floats."""
    if dependence.se == "cluster":
        values = (sums.counts > 0).sum(axis=1)
    else:
        values = _robust_lags(dependence, plan.n[rows])
    return values.astype(np.float64).reshape(shape)


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
    se: str = "iid",
    groups: str | None = None,
    block: str | None = None,
    lags: int | None = None,
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
        binned ``ence uce zmse`` (``None``: all of them), and on request ``zisd``. ``cc`` is
        refused: a rank correlation needs all the points in one task.
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
    se : {"iid", "cluster", "hac"}
        Standard errors of the intervals of the moment statistics: ``"iid"`` (independent
        points, the default), ``"cluster"`` (cluster-robust, CRV1, over the groups of
        ``groups``) or ``"hac"`` (Newey–West, Bartlett kernel, in the order of ``block``).
        The estimates do not depend on it (see Notes).
    groups : str, optional
        With ``se="cluster"``: the variable over ``sample`` alone that holds each point's group
        (any labels that sort), e.g. ``"structure_id"``; at least 2 groups per slice.
    block : str, optional
        With ``se="hac"``: the variable over ``sample`` alone (numbers or times) that orders the
        points, e.g. ``"time"``. The data must already be stored in that order
        (non-decreasing; ties keep the order of the data): out of core, the points are not
        sorted, and the first point out of order is an error when computed.
    lags : int, optional
        With ``se="hac"``: the number of lags ``L``, ``0 <= L < M``. Default: the Newey–West
        rule ``floor(4 (M / 100)^(2/9))`` per slice (``M`` its points;
        :func:`xuqcal.core.robust.newey_west_lags`, the default of statsmodels' ``cov_hac``).

    Returns
    -------
    xarray.Dataset
        Over ``statistic`` (after the extra dimensions, if any): ``estimate``, ``ci_low`` and
        ``ci_high`` (NaN for the binned statistics, which have no analytic interval), the
        coordinate ``interval`` (``"student"``, ``"delta"`` or ``"none"``), and
        ``bin_edge`` over ``edge`` (the N - 1 inner edges) when a statistic is binned;
        ``n_groups`` (``se="cluster"``) or ``lags`` (``se="hac"``) per slice. Lazy
        for Dask-backed data (nothing is read before ``.compute()``), computed for
        NumPy-backed data. Attributes say how it was computed.

    Raises
    ------
    ValueError
        Before any computation, for invalid arguments (each message starts with the parameter
        name), ``cc``, a missing variable or wrong dimensions; for one data set, too few
        points. When computed (the first pass over the data), for NaN, infinite or
        non-positive values, naming the variable, the count and the first rows (as
        :func:`xuqcal.validate_dataset`), and for slices with too few points; with
        ``se="cluster"``, for a missing group label or a slice with fewer than 2 groups; with
        ``se="hac"``, for a missing value of ``block`` or the first point out of its order, and
        for a slice with ``lags`` or fewer points.
    DataTooLargeError
        With ``se="hac"``, before any work, when the exact sums of the lagged products
        (``(L + 1) k²`` accumulators of 552 bytes per row of a chunk, ``k`` the columns,
        three copies) do not fit in one task; with ``se="cluster"``, after the first pass
        (when the groups are known) and before the sums, when the per-group accumulators
        (``G k`` per row of a chunk) do not fit.

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
    covariance) and ``zv`` (``SE² = (m4 - m2² (M - 3)/(M - 1)) / M``, ``m_k`` the central
    moments of Z with the denominator M: Cho's formula as ErrViewLib's ``varvar``).

    **Dependent points** (``se="cluster"`` or ``"hac"``; :mod:`xuqcal.core.robust`): each
    moment statistic is a function of the means of a few per-point columns
    (:data:`xuqcal.core.moments.MEAN_COLUMNS`), and its standard error is ``√(∇fᵀ V ∇f)``
    with ``V`` the robust covariance of those means
    (:func:`xuqcal.core.moments.covariance_interval`): the cluster-robust sandwich with the
    factor ``G/(G-1) (M-1)/(M-K)``, ``K = 1`` (statsmodels' default), from the exact sums of
    every group, or the Newey–West sum of the autocovariances ``Γ_l``, ``l <= L``, weighted
    ``1 - l/(L+1)``, without factor (statsmodels' default), from the exact sums of the
    lagged products. The means (``mse mv zm zms nll``) take Student's ``t`` with ``G - 1``
    (cluster) or ``M - 1`` (HAC) degrees of freedom, the others (``rmse rmv rce zv``) the
    normal quantile, as for ``"iid"``. ``zv`` is ``M/(M-1) (<d²> - <d>²)``, ``d = Z - c``.
    Every sum is exact, so these intervals too are identical for any chunking.

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
    >>> ds = ds.assign(structure=("sample", np.arange(5000) // 50))
    >>> robust = reduce_statistics(ds.chunk(sample=1000), ["zms"], se="cluster",
    ...                            groups="structure").compute()
    >>> int(robust.n_groups), bool(robust.estimate[0] == result.estimate[0])
    (100, True)
    """
    n_bins = n_bins_for(ds, n_bins, statistics=statistics)
    chosen, by, dims, binned = _check_arguments(ds, statistics, level=level, n_bins=n_bins,
                                                by=by, E=E, uE=uE)
    dependence = _check_dependence(ds, se, groups, block, lags, dims=dims)
    level = float(level)
    n_bins = int(n_bins)
    keys = [s.key for s in chosen]
    robust_names = () if dependence.iid else _robust_names(keys)
    names = list(dict.fromkeys([*(c for s in chosen if s.kind == "moment" for c in s.columns),
                                *(c for c in moments.needed_columns(keys)
                                  if c not in moments.PRODUCT_COLUMNS)]))
    products = [c for c in moments.needed_columns(keys) if c in moments.PRODUCT_COLUMNS]
    separate = binned and by != uE
    layout = _Layout.of(ds, E, uE, by if separate else None, dims,
                        dependence.variable if robust_names else None)
    layout.check_fits()
    if robust_names:
        _check_robust_fits(dependence, layout, len(robust_names))
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

    # pass 1 (also): the group labels (cluster), the order and the edge points (hac)
    gate = None
    g_blocks = None if layout.g is None else layout.g.to_delayed(optimize_graph=False)
    edges_before: dict[tuple[int, ...], list[Any]] = {}
    edges_final: dict[tuple[int, ...], Any] = {}
    first_index = next(iter(layout.block_rows))
    if robust_names and dependence.se == "cluster":
        found = _tree([dask.delayed(_labels_block, pure=True)(
            e_blocks[(*index, j)], u_blocks[(*index, j)], g_blocks[j],
            None if l_blocks is None else l_blocks[(*index, j)], offset=offset,
            absent=absent)
            for index in layout.block_rows for j, offset in enumerate(layout.offsets)],
            _merge_labels)
        rows_per_block = int(np.prod([max(c) for c in layout.e.chunks[:-1]], dtype=np.int64))
        gate = dask.delayed(_groups_setup, pure=True)(
            found, plan, variable=dependence.variable, rows=rows_per_block,
            n_columns=len(robust_names))
    elif robust_names:
        order = dask.delayed(_Order(None, None, None, None))
        chain = dask.delayed(_chain_order, pure=True)
        for j, offset in enumerate(layout.offsets):
            order = chain(order, dask.delayed(_order_block, pure=True)(
                g_blocks[j], None if l_blocks is None else l_blocks[(*first_index, j)],
                offset=offset, variable=dependence.variable), variable=dependence.variable)
        gate = dask.delayed(_order_done, pure=True)(order, plan)
        for index, rows in layout.block_rows.items():
            state = dask.delayed(_no_edges(len(rows)))
            edges_before[index] = []
            for j in range(len(layout.offsets)):
                edges_before[index].append(state)
                state = dask.delayed(_chain_edges, pure=True)(
                    state, dask.delayed(_edges_block, pure=True)(
                        e_blocks[(*index, j)], u_blocks[(*index, j)],
                        lags=dependence.lag_cap, absent=absent), lags=dependence.lag_cap)
            edges_final[index] = state

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
    parents = parent if gate is None else [parent, gate]
    bound = bind((layout.e, layout.u) + ((layout.x,) if separate else ())
                 + ((layout.g,) if robust_names else ()), parents)
    e_pass, u_pass, *rest = _blocks(list(bound))
    x_pass = rest[0] if separate else None
    g_pass = rest[-1] if robust_names else None
    summed = dask.delayed(_sum_block, pure=True)
    finish = dask.delayed(_finish, pure=True)
    finished = {}
    info: dict[tuple[int, ...], Any] = {}
    for index, rows in layout.block_rows.items():
        total = _tree([summed(e_pass[(*index, j)], u_pass[(*index, j)],
                              None if x_pass is None else x_pass[(*index, j)], plan, selection,
                              rows=rows, names=names, products=products, absent=absent,
                              n_bins=n_bins)
                       for j in range(len(layout.offsets))], _merge_sums)
        robust = None
        if robust_names and dependence.se == "cluster":
            robust = _tree([dask.delayed(_cluster_block, pure=True)(
                e_pass[(*index, j)], u_pass[(*index, j)], g_pass[j], plan, gate, rows=rows,
                names=robust_names, absent=absent) for j in range(len(layout.offsets))],
                _merge_robust)
        elif robust_names:
            robust = _tree([dask.delayed(_hac_block, pure=True)(
                e_pass[(*index, j)], u_pass[(*index, j)], plan, edges_before[index][j],
                rows=rows, names=robust_names, lags=dependence.lag_cap, absent=absent)
                for j in range(len(layout.offsets))], _merge_robust)
        if robust is not None:
            info[index] = dask.delayed(_robust_info, pure=True)(
                robust, plan, rows=rows, dependence=dependence,
                shape=layout.block_shape(index))
        finished[index] = finish(total, plan, robust, edges_final.get(index), rows=rows,
                                 shape=layout.block_shape(index), statistics=keys,
                                 names=names, products=products, level=level,
                                 slice_names=slice_names,
                                 dependence=None if robust is None else dependence,
                                 robust_names=robust_names)
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
    if info:
        name = "n_groups" if dependence.se == "cluster" else "lags"
        coords[name] = (dims, _assemble(info, layout, ()).astype(np.int64))
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
    attrs.update(_dependence_attrs(dependence))
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
