"""Bootstraps of dependent points: cluster and block resampling.

Every interval of the iid bootstrap assumes independent points. When the points come in
groups (the atoms of one structure, the molecules of one family) or follow an order along
which they are correlated (time, a line of a grid), :func:`xuqcal.bootstrap` takes
``resample=``:

``"iid"``
    The points, independently (the default; unchanged, bit for bit).
``"cluster"``
    Whole groups of the variable ``groups`` (e.g. ``"structure_id"``), drawn with replacement
    as many times as there are groups; each statistic is recomputed on the union of their
    points (a group drawn twice counts twice).
``"moving"``, ``"circular"``, ``"stationary"``
    Blocks of consecutive points in the order of the variable ``block`` (e.g. ``"time"``), of
    ``block_length`` points: starting uniformly where a whole block fits (moving block,
    Künsch 1989), anywhere and wrapping around (circular block, Politis & Romano 1992), or of
    geometric length with mean ``block_length`` and wrapping around (stationary bootstrap,
    Politis & Romano 1994). Blocks are joined until they hold M points, the last one cut.
``"circular"``, ``"moving"`` with ``block={"lat": 10, "lon": 10}``
    Tiles of a grid (gridded fields: maps, images, lattices of a simulation). The variables of
    the dict (two or more, over ``sample`` alone: e.g. the levels of a stacked ``(lat, lon)``)
    are the grid coordinates of every point; the distinct values of each, sorted, are the
    grid's axes, and the points must form a complete grid, every combination of the axes'
    values exactly once (a missing or duplicated cell is refused, the first few named: a
    tile of a grid with holes would not hold its share of points, and which share it should
    hold is a modelling choice, not the resampler's). A replicate lays ``ceil(n_k / b_k)``
    tiles of ``b_lat × b_lon`` cells along every axis ``k`` and copies into each the cells of
    a tile of the data whose origin it draws, uniformly on the torus (the circular spatial
    block bootstrap of Politis & Romano 1993; tiles wrap around the grid's edges) or where
    the whole tile fits (``"moving"``: the moving block bootstrap of Lahiri 2003, ch. 12,
    "Resampling Methods for Dependent Data", Springer; its cells near the edges are drawn
    less often). The tiles of the last row and column are cut to the grid's size, so every
    replicate holds M points, as the last block of the 1-D schemes. The stationary bootstrap
    has no standard tile form and is refused with a dict; so are ``block_length`` (the tile
    sizes are the dict's values) and automatic tile sizes. The coordinates are read when the
    arguments are checked (the grid lays out the jackknife, and a broken grid is refused
    before any work); the dependence's ``variable`` is then the first grid variable, so that
    the analyses that read ``ds[dependence.variable]`` read values of the right length.

**Random streams.** Replicate ``r`` is drawn from the stream ``(seed, "bootstrap-<scheme>",
r)``, as the multiplicity of every point, which the count-weighted evaluation of every
statistic then reads (:func:`xuqcal.core.kernels.paired_counts_block`, the evaluation of
every estimate): replicates do not depend on the chunking or the scheduler.

**BCa under dependence.** The acceleration comes from the delete-one-group jackknife (each
group left out in turn; Davison & Hinkley 1997, §3.8) for the cluster bootstrap, and from
the delete-one-block jackknife over the non-overlapping blocks of ``block_length`` points for
the block bootstraps (Künsch 1989), and from the delete-one-tile jackknife over the
non-overlapping tiles ``[i b_lat, (i + 1) b_lat) × [j b_lon, (j + 1) b_lon)`` of a grid (the
last ones cut; Lahiri 2003, §12.3). Its cost is one evaluation of M points per group or
block (a few seconds for 10⁴ groups of 10² points).

**Tiles: the bias.** A tile bootstrap keeps the covariances within a tile and loses those
across tiles: along each axis its variance of a mean is about ``1 - Σ|k|γ(k) / (b σ²)`` of the
truth (``γ`` the autocovariance along the axis, ``σ²`` its sum), and the replicates' means
also lose the variance of the grand mean (about one over the number of tiles). Tiles must be
several correlation lengths (of the per-point terms, e.g. Z² for ZMS) long, and there must be
tens of them: ``benchmarks/dependent_coverage.py`` (the grid scenario) measures it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import dask
import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from xuqcal.analysis.replicates import (
    COUNTS_BLOCK,
    count_blocks,
    counts_replicates,
    evaluate_row_counts,
    replicate_chunks,
)
from xuqcal.core import kernels as K
from xuqcal.core.binning import equal_count_order
from xuqcal.core.blocklength import optimal_block_length
from xuqcal.core.checks import check_choice, check_count
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import PreparedData, Statistic, codes_of
from xuqcal.io.schema import SAMPLE_DIM

__all__ = ["BLOCK_SCHEMES", "RESAMPLES", "Dependence", "Grid", "RowLayout",
           "automatic_block_length", "automatic_length", "check_dependence",
           "dependent_jackknife", "dependent_mean_intervals", "dependent_replicates", "grid_of",
           "mean_jackknife", "mean_replicates", "resolve_dependence", "resolved_dependence",
           "row_layout"]

#: The values of ``resample``.
RESAMPLES = ("iid", "cluster", "moving", "circular", "stationary")
#: The block schemes and their kernel codes.
BLOCK_SCHEMES = {"moving": K.BLOCK_MOVING, "circular": K.BLOCK_CIRCULAR,
                 "stationary": K.BLOCK_STATIONARY}
#: The value of ``block_length`` that asks for the automatic block length.
AUTO_LENGTH = "auto"


@dataclass(frozen=True, eq=False)
class Grid:
    """The complete grid of the points of a tile bootstrap: the grid variables ``names``, the
    sorted distinct values of each (``axes``), the grid's ``shape``, the tile sizes ``tile``,
    and the row-major cell of every point (``cell_of_point``, int64: a permutation of
    ``0 .. M - 1``). Built by :func:`grid_of`."""

    names: tuple[str, ...]
    axes: tuple[np.ndarray, ...]
    shape: tuple[int, ...]
    tile: tuple[int, ...]
    cell_of_point: np.ndarray

    @property
    def n_tiles(self) -> tuple[int, ...]:
        """The number of non-overlapping tiles along each axis (the last one cut)."""
        return tuple(-(-n // b) for n, b in zip(self.shape, self.tile, strict=True))

    @property
    def n_units(self) -> int:
        """The number of non-overlapping tiles: the delete-one-tile jackknife's units."""
        return math.prod(self.n_tiles)

    def unit_of_cell(self) -> np.ndarray:
        """The non-overlapping tile (row-major, int32) of every cell (row-major)."""
        index = np.unravel_index(np.arange(math.prod(self.shape)), self.shape)
        return np.ravel_multi_index(
            [i // b for i, b in zip(index, self.tile, strict=True)],
            self.n_tiles).astype(np.int32)


def _cells_text(names: Sequence[str], axes: Sequence[np.ndarray], shape: Sequence[int],
                cells: Sequence[int]) -> str:
    """``(lat, lon) = (0.5, 3.0), ...``: the coordinates of the cells ``cells``."""
    index = np.unravel_index(np.asarray(cells, dtype=np.int64), tuple(shape))
    head = "(" + ", ".join(names) + ")"
    return ", ".join(
        f"{head} = (" + ", ".join(str(np.asarray(axes[k][index[k][j]]).tolist())
                                  for k in range(len(names))) + ")"
        for j in range(len(cells)))


def grid_of(values: Sequence[np.ndarray], names: Sequence[str], tile: Sequence[int]) -> Grid:
    """The :class:`Grid` of points whose grid coordinates are ``values`` (one array of M
    values per variable of ``names``) for tiles of ``tile`` cells: the distinct values of each
    variable, sorted, are its axis, and every combination must hold exactly one point (else a
    ``ValueError`` names the first missing and duplicated cells).

    Examples
    --------
    >>> grid = grid_of([np.array([1, 1, 0, 0]), np.array([5, 7, 5, 7])], ["y", "x"], [1, 2])
    >>> grid.shape, grid.cell_of_point.tolist(), grid.unit_of_cell().tolist()
    ((2, 2), [2, 3, 0, 1], [0, 0, 1, 1])
    >>> grid_of([np.array([0, 0, 1]), np.array([5, 7, 5])], ["y", "x"], [1, 1])
    Traceback (most recent call last):
    ...
    ValueError: block: the 3 points are not a complete grid of y × x (2 × 2 = 4 cells): \
every combination of their values must hold exactly one point; 1 cell(s) missing: \
(y, x) = (1, 7)
    """
    names, tile = tuple(names), tuple(int(b) for b in tile)
    codes, axes = [], []
    for name, v in zip(names, values, strict=True):
        v = np.asarray(v)
        missing = pd.isna(v)
        if missing.any():
            rows = np.flatnonzero(missing)[:5].tolist()
            raise ValueError(f"block: {name!r} is missing at {int(missing.sum())} point(s) "
                             f"(rows {rows}); give every point its grid coordinates")
        c, uniques = pd.factorize(v, sort=True)
        codes.append(c.astype(np.int64))
        axes.append(np.asarray(uniques))
    shape = tuple(int(a.size) for a in axes)
    m, total = int(codes[0].size), math.prod(shape)
    what = (f"block: the {m} points are not a complete grid of {' × '.join(names)} "
            f"({' × '.join(map(str, shape))} = {total} cells): every combination of their "
            "values must hold exactly one point")
    if total >= 2**62:
        raise ValueError(what)
    cell = np.ravel_multi_index(codes, shape)
    present, times = np.unique(cell, return_counts=True)
    if total != m or (times > 1).any():
        parts = []
        if present.size < total:
            ends = np.concatenate([[-1], present, [total]])
            gaps = np.flatnonzero(np.diff(ends) > 1)[:3]
            first = [int(ends[g]) + 1 for g in gaps]
            parts.append(f"{total - present.size} cell(s) missing: "
                         + _cells_text(names, axes, shape, first)
                         + (", ..." if total - present.size > len(first) else ""))
        held = present[times > 1]
        if held.size:
            parts.append(f"{held.size} cell(s) held more than once: "
                         + _cells_text(names, axes, shape, held[:3].tolist())
                         + (", ..." if held.size > 3 else ""))
        raise ValueError(what + "; " + "; ".join(parts))
    for name, n, b in zip(names, shape, tile, strict=True):
        if b > n:
            raise ValueError(f"block: a tile of {b} along {name!r} is longer than its {n} grid "
                             "values")
    grid = Grid(names, tuple(axes), shape, tile, cell.astype(np.int64))
    if grid.n_units < 2:
        raise ValueError(f"block: tiles of {' × '.join(map(str, tile))} cells cover the whole "
                         f"{' × '.join(map(str, shape))} grid: a tile bootstrap needs at least "
                         "2 tiles")
    return grid


@dataclass(frozen=True)
class Dependence:
    """A checked ``resample`` with its variable (``groups`` or ``block``) and block length.

    A tile bootstrap (``block`` a dict) has ``tiles``, the ``(variable, tile size)`` of every
    grid variable, and ``grid``, the points' :class:`Grid` (read when checked); its
    ``variable`` is then the first grid variable and its ``block_length`` ``None``.
    """

    resample: str
    variable: str | None = None
    block_length: int | str | None = None
    block_length_rule: str = "given"
    tiles: tuple[tuple[str, int], ...] | None = None
    grid: Grid | None = field(default=None, compare=False, repr=False)

    @property
    def iid(self) -> bool:
        return self.resample == "iid"

    def attrs(self) -> dict:
        """The attributes that say how the points were resampled (NetCDF-serialisable).

        Examples
        --------
        >>> Dependence("circular", "lat", tiles=(("lat", 10), ("lon", 5))).attrs()["block"]
        'lat:10,lon:5'
        """
        if self.iid:
            return {"resample": "iid"}
        if self.tiles is not None:
            sizes = " x ".join(str(b) for _, b in self.tiles)
            attrs = {"resample": self.resample,
                     "block": ",".join(f"{name}:{b}" for name, b in self.tiles),
                     "jackknife": f"delete-one-tile (non-overlapping tiles of {sizes} cells)",
                     "block_length_rule": self.block_length_rule}
            if self.grid is not None:
                attrs["grid"] = ",".join(f"{name}:{n}" for name, n in
                                         zip(self.grid.names, self.grid.shape, strict=True))
            return attrs
        unit = ("delete-one-group" if self.resample == "cluster"
                else f"delete-one-block (blocks of {self.block_length} points)")
        attrs = {"resample": self.resample,
                 ("groups" if self.resample == "cluster" else "block"): self.variable,
                 "jackknife": unit}
        if self.resample != "cluster":
            attrs.update(block_length=self.block_length,
                         block_length_rule=self.block_length_rule)
        return attrs


def check_dependence(ds: xr.Dataset, resample: object, groups: object, block: object,
                     block_length: object) -> Dependence:
    """The checks of ``resample``, ``groups``, ``block`` and ``block_length`` (before any
    work; no data are read, but for the grid coordinates of a tile bootstrap, whose grid is
    checked and kept in the result's ``grid``).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(100, nu=6, seed=0)
    >>> check_dependence(ds, "iid", None, None, None).iid
    True
    >>> check_dependence(ds, "cluster", None, None, None)
    Traceback (most recent call last):
    ...
    ValueError: groups: resample='cluster' resamples whole groups: name the variable that \
holds each point's group, e.g. groups='structure_id'
    >>> lat, lon = np.meshgrid(np.arange(10.0), np.arange(10.0), indexing="ij")
    >>> grid = ds.assign(lat=("sample", lat.ravel()), lon=("sample", lon.ravel()))
    >>> tiles = check_dependence(grid, "circular", None, {"lat": 5, "lon": 4}, None)
    >>> tiles.tiles, tiles.grid.shape, tiles.grid.n_units
    ((('lat', 5), ('lon', 4)), (10, 10), 6)
    """
    resample = check_choice(resample, "resample", RESAMPLES)
    if resample == "iid":
        for name, value in (("groups", groups), ("block", block),
                            ("block_length", block_length)):
            if value is not None:
                raise ValueError(f"{name}: only used with a dependent resample "
                                 f"(resample='cluster' or a block scheme), got {value!r} with "
                                 "resample='iid'")
        return Dependence("iid")
    if resample == "cluster":
        if groups is None:
            raise ValueError("groups: resample='cluster' resamples whole groups: name the "
                             "variable that holds each point's group, e.g. "
                             "groups='structure_id'")
        for name, value in (("block", block), ("block_length", block_length)):
            if value is not None:
                raise ValueError(f"{name}: not used by resample='cluster' (give groups= "
                                 f"only), got {value!r}")
        return Dependence("cluster", _sample_variable(ds, groups, "groups"))
    if groups is not None:
        raise ValueError(f"groups: not used by resample={resample!r} (give block= and "
                         f"block_length=), got {groups!r}")
    if block is None:
        raise ValueError(f"block: resample={resample!r} resamples blocks of consecutive "
                         "points: name the variable that orders them, e.g. block='time'")
    if isinstance(block, Mapping):
        return _tile_dependence(ds, resample, block, block_length)
    if block_length is None:
        raise ValueError(f"block_length: resample={resample!r} needs the block length (points "
                         "per block, e.g. block_length=50, or 'auto')")
    if block_length == AUTO_LENGTH:
        return Dependence(resample, _sample_variable(ds, block, "block"), AUTO_LENGTH)
    length = check_count(block_length, "block_length", 1)
    m = int(ds.sizes.get(SAMPLE_DIM, 0))
    if resample == "moving" and length > m:
        raise ValueError(f"block_length: {length} is longer than the {m} points; a moving "
                         "block must fit in the data")
    return Dependence(resample, _sample_variable(ds, block, "block"), length)


def _tile_dependence(ds: xr.Dataset, resample: str, block: Mapping,
                     block_length: object) -> Dependence:
    """The checks of a tile bootstrap (``block`` a dict of grid variables and tile sizes); the
    grid coordinates are read here."""
    if resample == "stationary":
        raise ValueError("resample: the stationary bootstrap has no tiles; with block= a dict "
                         "of tile sizes use resample='circular' (origins anywhere on the "
                         "torus) or 'moving' (origins where the whole tile fits)")
    if block_length is not None:
        raise ValueError(f"block_length: the tile sizes are block's values (e.g. "
                         f"block={{'lat': 10, 'lon': 10}}); leave block_length=None, got "
                         f"{block_length!r}")
    if len(block) < 2:
        raise ValueError(f"block: tiles need two or more grid variables, got {dict(block)!r}; "
                         "for blocks along one variable give block='time', block_length=50")
    names, sizes = [], []
    for name, size in block.items():
        names.append(_sample_variable(ds, name, "block"))
        if size == AUTO_LENGTH:
            raise ValueError(f"block: automatic tile sizes are not supported; give the tile "
                             f"size of {name!r} in cells (e.g. 10)")
        sizes.append(check_count(size, f"block: the tile size of {name!r}", 1))
    grid = grid_of([np.asarray(ds[name].values) for name in names], names, sizes)
    return Dependence(resample, names[0], None, tiles=tuple(zip(names, sizes, strict=True)),
                      grid=grid)


def _sample_variable(ds: xr.Dataset, name: object, parameter: str) -> str:
    if not isinstance(name, str) or name not in ds.variables:
        known = ", ".join(str(v) for v in ds.variables if SAMPLE_DIM in ds[v].dims)
        raise ValueError(f"{parameter}: no variable {name!r} over sample in the data (its "
                         f"variables over sample: {known})")
    if ds[name].dims != (SAMPLE_DIM,):
        raise ValueError(f"{parameter}: {name!r} must be a variable over sample alone, got "
                         f"dimensions {ds[name].dims}")
    return name


# --------------------------------------------------------------------------------------------
# The parts of a bootstrap result: estimate, replicates, jackknife
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowLayout:
    """How the M points of one data set are resampled under a dependent scheme.

    ``row_of_point[i]`` is point ``i``'s row in the order of the resampling (the order of
    ``block`` for a block scheme; the points' own order for a cluster bootstrap), and
    ``unit_of_row`` each row's jackknife unit (for a cluster bootstrap: its group, the unit it
    is resampled by too; for a block scheme: its non-overlapping block of ``block_length``
    rows; for a tile bootstrap: its non-overlapping tile, the rows being the grid's cells,
    row-major, and ``shape`` and ``tile`` the grid's and the tiles' sizes). Every analysis that
    resamples a dependent data set draws its replicates' row
    multiplicities here (:meth:`fill`), and maps its own arrangement of the points (bins,
    models, the order of a binning variable) to rows with :meth:`rows`.
    """

    resample: str
    row_of_point: np.ndarray
    unit_of_row: np.ndarray
    n_units: int
    block_length: int | None = None
    shape: tuple[int, ...] | None = None
    tile: tuple[int, ...] | None = None

    @property
    def size(self) -> int:
        return int(self.row_of_point.size)

    def rows(self, points: np.ndarray) -> np.ndarray:
        """The rows of the points ``points`` (data rows), as int64."""
        return self.row_of_point[np.asarray(points)]

    def fill(self, key: np.uint64, first: int, last: int, block: np.ndarray) -> None:
        """The row multiplicities of replicates ``first .. last - 1`` into ``block``
        (``(last - first, M)`` int32), from the streams ``(key, r)``."""
        if self.resample == "cluster":
            K.fill_group_counts_block(key, first, last, self.unit_of_row, self.n_units, block)
        elif self.tile is not None:
            K.fill_tile_counts_block(key, first, last, np.asarray(self.shape, dtype=np.int64),
                                     np.asarray(self.tile, dtype=np.int64),
                                     BLOCK_SCHEMES[self.resample], block)
        else:
            K.fill_block_counts_block(key, first, last, self.block_length,
                                      BLOCK_SCHEMES[self.resample], block)


def row_layout(variable: np.ndarray, dependence: Dependence) -> RowLayout:
    """The :class:`RowLayout` of a data set whose dependence variable (``groups`` or
    ``block``) has the values ``variable`` (one per point), for a checked, non-iid
    ``dependence`` whose block length is known. For a tile bootstrap the rows are the cells of
    its grid (``dependence.grid``, or, when it has none, the grid of ``variable`` given as the
    ``M × d`` grid coordinates of the points).

    Examples
    --------
    >>> layout = row_layout(np.array([3, 1, 3, 2]), Dependence("cluster", "g"))
    >>> layout.unit_of_row.tolist(), layout.n_units
    ([2, 0, 2, 1], 3)
    >>> row_layout(np.array([0.3, 0.1, 0.2]), Dependence("circular", "t", 2)).row_of_point
    array([2, 0, 1])
    >>> yx = np.array([[1, 5], [1, 7], [0, 5], [0, 7]])
    >>> tiles = Dependence("circular", "y", tiles=(("y", 1), ("x", 2)))
    >>> layout = row_layout(yx, tiles)
    >>> layout.row_of_point.tolist(), layout.unit_of_row.tolist(), layout.shape
    ([2, 3, 0, 1], [0, 0, 1, 1], (2, 2))
    """
    variable = np.asarray(variable)
    if dependence.tiles is not None:
        return _tile_layout(variable, dependence)
    m = variable.size
    if dependence.resample == "cluster":
        missing = pd.isna(variable)
        if missing.any():
            rows = np.flatnonzero(missing)[:5].tolist()
            raise ValueError(f"groups: {dependence.variable!r} is missing at "
                             f"{int(missing.sum())} point(s) (rows {rows}); give every point "
                             "its group")
        codes, uniques = pd.factorize(variable, sort=True)
        if uniques.size < 2:
            raise ValueError(f"groups: {dependence.variable!r} holds {uniques.size} group; "
                             "a cluster bootstrap needs at least 2")
        return RowLayout("cluster", np.arange(m, dtype=np.int64), codes.astype(np.int32),
                         int(uniques.size))
    rank = np.empty(m, dtype=np.int64)  # data row -> row in the order of `block`
    rank[np.argsort(variable, kind="stable")] = np.arange(m)
    length = int(dependence.block_length)
    unit_of_row = (np.arange(m) // length).astype(np.int32)
    return RowLayout(dependence.resample, rank, unit_of_row, int(unit_of_row[-1]) + 1, length)


def _tile_layout(variable: np.ndarray, dependence: Dependence) -> RowLayout:
    names, tile = zip(*dependence.tiles, strict=True)
    grid = dependence.grid
    if grid is None:
        if variable.ndim != 2 or variable.shape[1] != len(names):
            raise ValueError(f"block: a tile bootstrap over {', '.join(names)} needs the grid "
                             f"coordinates of the points (M × {len(names)}), got an array of "
                             f"shape {variable.shape}")
        grid = grid_of(list(variable.T), names, tile)
    elif variable.shape[0] != grid.cell_of_point.size:
        raise ValueError(f"block: the grid of {', '.join(names)} has "
                         f"{grid.cell_of_point.size} points, the data {variable.shape[0]}")
    return RowLayout(dependence.resample, grid.cell_of_point, grid.unit_of_cell(),
                     grid.n_units, None, shape=grid.shape, tile=grid.tile)


def layout_units(ds: xr.Dataset, dependence: Dependence) -> int:
    """The number of jackknife units of ``dependence`` on ``ds`` (the groups are read now:
    the shape of the jackknife depends on it)."""
    if dependence.tiles is not None:
        grid = dependence.grid
        if grid is None:
            names, tile = zip(*dependence.tiles, strict=True)
            grid = grid_of([np.asarray(ds[name].values) for name in names], names, tile)
        return grid.n_units
    if dependence.resample == "cluster":
        return int(pd.unique(np.asarray(ds[dependence.variable].values)).size)
    return -(-int(ds.sizes[SAMPLE_DIM]) // int(dependence.block_length))


# --------------------------------------------------------------------------------------------
# Replicates and jackknife of dependent resamples, shared by every analysis
# --------------------------------------------------------------------------------------------


def dependent_replicates(layout: RowLayout, models: Sequence[tuple[PreparedData, np.ndarray]],
                         codes: np.ndarray, key: np.uint64, start: int, stop: int
                         ) -> np.ndarray:
    """Replicates ``start .. stop - 1`` ``(model, replicate, code)`` of the statistics
    ``codes`` of every model ``(prepared, rows_of)`` (``rows_of[p]``: the row of
    :class:`RowLayout` of the point at position ``p`` of ``prepared``), all evaluated on the
    same dependent resamples of the rows, drawn from the streams ``(key, r)``. A model may
    hold any subset of the rows (a bin); its statistic is NaN on a replicate that gives it no
    point."""
    return counts_replicates(models, codes, functools.partial(layout.fill, key), start, stop,
                             n_rows=layout.size)


def dependent_jackknife(layout: RowLayout, prepared: PreparedData, rows_of: np.ndarray,
                        codes: np.ndarray) -> np.ndarray:
    """The delete-one-unit values ``(code, unit)``: each group (or block) of ``layout`` left
    out in turn, the statistics recomputed on ``prepared``'s points of the other units."""
    n, unit_of_row = layout.n_units, layout.unit_of_row
    out = np.empty((n, codes.shape[0]))
    size = max(1, min(n, COUNTS_BLOCK // max(layout.size, 1)))
    for first in range(0, n, size):
        units = np.arange(first, min(n, first + size), dtype=np.int32)
        counts = (unit_of_row[None, :] != units[:, None]).astype(np.int32)
        evaluate_row_counts(prepared, rows_of, codes, counts, out[first:first + units.size])
    return prepared.unscale(codes, out).T


def mean_replicates(layout: RowLayout, values: np.ndarray, key: np.uint64, start: int,
                    stop: int) -> np.ndarray:
    """Replicates ``start .. stop - 1`` ``(replicate, column)`` of the means of the columns of
    ``values`` (``M × k``, per-point quantities in the order of the points, e.g. proper scores
    or coverage indicators) over the dependent resamples of ``layout``: the count-weighted
    means, summed in the order of the points."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = np.empty((stop - start, values.shape[1]))
    for first, last, block in count_blocks(functools.partial(layout.fill, key), layout.size,
                                           start, stop):
        K.counts_means_block(block, layout.row_of_point, values,
                             out[first - start:last - start])
    return out


def mean_jackknife(layout: RowLayout, values: np.ndarray) -> np.ndarray:
    """The delete-one-unit means ``(column, unit)`` of the columns of ``values`` (``M × k`` in
    the order of the points): each group (or block) of ``layout`` left out in turn, as the
    total less the unit's sum over the count less the unit's, O(M) for all units.

    Examples
    --------
    >>> layout = row_layout(np.array([0, 0, 1, 2]), Dependence("cluster", "g"))
    >>> mean_jackknife(layout, np.array([[1.0], [3.0], [5.0], [8.0]])).tolist()
    [[6.5, 4.0, 3.0]]
    """
    values = np.asarray(values, dtype=np.float64)
    unit_of_point = layout.unit_of_row[layout.row_of_point]
    counts = np.bincount(unit_of_point, minlength=layout.n_units)
    sums = np.stack([np.bincount(unit_of_point, weights=column, minlength=layout.n_units)
                     for column in values.T])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (values.sum(axis=0)[:, None] - sums) / (values.shape[0] - counts)[None, :]


def dependent_mean_intervals(values: np.ndarray, variable: np.ndarray,
                             dependence: Dependence, *, n_boot: int, seed: int, level: float,
                             method: str = "bca", purpose: str | None = None
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, se, ci_low, ci_high)`` of the means of the columns of ``values`` (``M × k``,
    per-point quantities: coverage indicators, proper scores) under the dependent resample
    ``dependence`` (its variable's values ``variable``; a checked, non-iid resample with a
    known block length): the BCa (with the delete-one-unit jackknife) or percentile interval
    of ``n_boot`` replicates from the streams ``(seed, purpose, r)`` (default purpose:
    ``"bootstrap-<resample>"``, the resamples of the statistics' bootstrap).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g = np.repeat(np.arange(40), 5)
    >>> x = (rng.normal(size=40)[g] + rng.normal(size=200))[:, None]
    >>> mean, se, low, high = dependent_mean_intervals(
    ...     x, g, Dependence("cluster", "g"), n_boot=500, seed=0, level=0.95)
    >>> bool(low[0] < mean[0] < high[0])
    True
    """
    from xuqcal.core.intervals import bca_interval, percentile_interval
    from xuqcal.core.summaries import safe_std

    values = np.asarray(values, dtype=np.float64)
    layout = row_layout(variable, dependence)
    key = stream_key(seed, purpose or f"bootstrap-{dependence.resample}")
    replicates = np.ascontiguousarray(mean_replicates(layout, values, key, 0, n_boot).T)
    mean = values.mean(axis=0)
    with np.errstate(invalid="ignore", over="ignore"):
        se = safe_std(replicates)
        if method == "bca":
            low, high = bca_interval(replicates, mean,
                                     np.ascontiguousarray(mean_jackknife(layout, values)),
                                     level)
        else:
            low, high = percentile_interval(replicates, level)
    return mean, se, np.asarray(low), np.asarray(high)


@dataclass
class _Arranged:
    """One data set arranged for a dependent bootstrap of its statistics: its prepared data
    (in the order of the binning variable), its :class:`RowLayout` and the row of the point at
    each position of the prepared data."""

    prepared: PreparedData
    layout: RowLayout
    rows_of: np.ndarray


def _arrange(e: np.ndarray, u: np.ndarray, x: np.ndarray | None, variable: np.ndarray,
             dependence: Dependence, *, n_bins: int, by: str, needs_bins: bool) -> _Arranged:
    prepared = PreparedData.from_arrays(e, u, by_values=x, by=by, n_bins=n_bins,
                                        needs_bins=needs_bins)
    return arrange_prepared(prepared, u if x is None else x, variable, dependence)


def arrange_prepared(prepared: PreparedData, binning_values: np.ndarray,
                     variable: np.ndarray, dependence: Dependence) -> _Arranged:
    """``prepared`` (the data prepared in the order of their binning variable, whose values
    are ``binning_values``) arranged for the dependent resample ``dependence`` of the
    dependence variable's values ``variable``."""
    order = equal_count_order(binning_values)  # position -> data row
    layout = row_layout(variable, dependence)
    return _Arranged(prepared, layout, layout.rows(order))


def _estimate(arranged: _Arranged, codes: np.ndarray) -> np.ndarray:
    return arranged.prepared.evaluate(codes)


def _replicates(arranged: _Arranged, codes: np.ndarray, key: np.uint64, start: int,
                stop: int) -> np.ndarray:
    """Replicates ``start .. stop - 1`` ``(replicate, code)``."""
    return dependent_replicates(arranged.layout, [(arranged.prepared, arranged.rows_of)],
                                codes, key, start, stop)[0]


def _jackknife(arranged: _Arranged, codes: np.ndarray) -> np.ndarray:
    return dependent_jackknife(arranged.layout, arranged.prepared, arranged.rows_of, codes)


def dependent_bootstrap_replicates(arranged, codes: np.ndarray, n_boot: int, seed: int,
                                   resample: str, chunks=None, first: int = 0) -> da.Array:
    """Lazy ``(n_boot, len(codes))`` array of the replicates ``first .. first + n_boot - 1``
    of a dependent bootstrap of the arranged data ``arranged`` (an :class:`_Arranged` or a
    Delayed that computes one), one task per chunk of replicates, from the streams
    ``(seed, "bootstrap-<resample>", r)``: the same values for any chunking."""
    key = stream_key(seed, f"bootstrap-{resample}")
    blocks, start = [], first
    for size in replicate_chunks(n_boot, chunks, width=len(codes)):
        block = dask.delayed(_replicates, pure=True)(arranged, codes, key, start, start + size)
        blocks.append(da.from_delayed(block, shape=(size, len(codes)), dtype=np.float64))
        start += size
    return da.concatenate(blocks, axis=0)


def automatic_block_length(e: np.ndarray, u: np.ndarray, variable: np.ndarray,
                           resample: str) -> tuple[int, float]:
    """The block length of Politis & White (2004, corrected by Patton, Politis & White 2009)
    for the series ``Z² = (e / u)²`` in the order of ``variable`` (the per-point terms of
    ZMS), rounded up: the stationary bootstrap's for ``"stationary"``, the circular block's
    otherwise (:func:`xuqcal.core.blocklength.optimal_block_length`), at most the number of
    points for ``"moving"``. Absent points (``e`` and ``u`` both NaN: the padding of a slice
    of stacked data sets) are left out. Returns ``(length, unrounded length)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z = np.empty(2000); z[0] = 0.0
    >>> for i in range(1, 2000): z[i] = 0.9 * z[i - 1] + rng.normal()
    >>> length, chosen = automatic_block_length(z, np.ones(2000), np.arange(2000), "circular")
    >>> length == int(np.ceil(chosen)) and length > 5
    True
    """
    e = np.asarray(e, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    present = ~(np.isnan(e) & np.isnan(u))
    variable = np.asarray(variable)[present]
    order = np.argsort(variable, kind="stable")
    z2 = (e[present] / u[present])[order] ** 2
    stationary, circular = optimal_block_length(z2)
    chosen = stationary if resample == "stationary" else circular
    length = max(1, math.ceil(chosen))
    if resample == "moving":
        length = min(length, z2.size)
    return length, float(chosen)


def automatic_length(ds: xr.Dataset, dependence: Dependence, *, E: str, uE: str
                     ) -> Dependence:
    """``dependence`` with the automatic block length of :func:`automatic_block_length` for
    the points of ``ds`` in the order of ``block``, and its rule. The data are read now (the
    block length lays out the jackknife)."""
    length, chosen = automatic_block_length(ds[E].values, ds[uE].values,
                                            ds[dependence.variable].values,
                                            dependence.resample)
    return replace(dependence, block_length=length,
                   block_length_rule="Politis-White (2004; Patton-Politis-White 2009) of Z^2 "
                                     f"in the order of {dependence.variable}: "
                                     f"{chosen:.4g}, rounded up")


def resolved_dependence(ds: xr.Dataset, resample: object, groups: object, block: object,
                        block_length: object, *, E: str, uE: str, warn_as: str | None = None,
                        resolve: bool = True) -> Dependence:
    """The checks of :func:`check_dependence` (before any work) and then, for every analysis
    that resamples: with ``"iid"``, the :class:`~xuqcal.DependenceWarning` of the analysis
    ``warn_as`` when the points of ``ds`` are dependent (:func:`~xuqcal.warn_if_dependent`;
    none when ``warn_as`` is None); with ``block_length="auto"`` and ``resolve``, the
    automatic length (:func:`automatic_length`; the data are read now).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(100, nu=6, seed=0)
    >>> resolved_dependence(ds, "iid", None, None, None, E="E", uE="uE").iid
    True
    """
    return resolve_dependence(ds, check_dependence(ds, resample, groups, block, block_length),
                              E=E, uE=uE, warn_as=warn_as, resolve=resolve)


def resolve_dependence(ds: xr.Dataset, dependence: Dependence, *, E: str, uE: str,
                       warn_as: str | None = None, resolve: bool = True) -> Dependence:
    """The second half of :func:`resolved_dependence`, for a ``dependence`` already checked
    by :func:`check_dependence` (an analysis that checks every argument first)."""
    if dependence.iid:
        if warn_as is not None:
            from xuqcal.analysis.dependence_scan import warn_if_dependent

            warn_if_dependent(ds, E=E, uE=uE, analysis=warn_as)
    elif resolve and dependence.block_length == AUTO_LENGTH:
        from xuqcal.analysis.stats import check_data_variables

        check_data_variables(ds, E, uE)
        dependence = automatic_length(ds, dependence, E=E, uE=uE)
    return dependence


def dependent_parts(ds: xr.Dataset, stats: Sequence[Statistic], dependence: Dependence, *,
                    n_boot: int, seed: int, chunks, n_bins: int, by: str, jackknife: bool,
                    E: str, uE: str) -> tuple[xr.DataArray, xr.DataArray,
                                                xr.DataArray | None]:
    """The estimate, the replicates ``(statistic, replicate)`` and (for BCa) the
    delete-one-unit jackknife ``(statistic, jackknife)`` of a dependent bootstrap, lazily:
    what :func:`xuqcal.analysis.resampling.bootstrap_result` summarises."""
    if dependence.block_length == AUTO_LENGTH:
        dependence = automatic_length(ds, dependence, E=E, uE=uE)
    codes = codes_of(stats)
    needs_bins = any(s.needs_bins for s in stats)
    x = None if by == uE else ds[by].data
    arranged = dask.delayed(_arrange, pure=True)(
        ds[E].data, ds[uE].data, x, ds[dependence.variable].data, dependence,
        n_bins=n_bins, by=by, needs_bins=needs_bins)
    estimate = xr.DataArray(da.from_delayed(
        dask.delayed(_estimate, pure=True)(arranged, codes), shape=(len(stats),),
        dtype=np.float64), dims=("statistic",))
    replicates = xr.DataArray(
        dependent_bootstrap_replicates(arranged, codes, n_boot, seed, dependence.resample,
                                       chunks).T, dims=("statistic", "replicate"))
    jack = None
    if jackknife:
        n_units = layout_units(ds, dependence)
        values = dask.delayed(_jackknife, pure=True)(arranged, codes)
        jack = xr.DataArray(da.from_delayed(values, shape=(len(stats), n_units),
                                            dtype=np.float64), dims=("statistic", "jackknife"))
    return estimate, replicates, jack
