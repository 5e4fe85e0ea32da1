"""Bootstraps of dependent points: cluster and block resampling (issue 25, first part).

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

**Random streams.** Replicate ``r`` is drawn from the stream ``(seed, "bootstrap-<scheme>",
r)``, as the multiplicity of every point, which the count-weighted evaluation of every
statistic then reads (:func:`xuqcal.core.kernels.paired_counts_block`, the evaluation of
every estimate): replicates do not depend on the chunking or the scheduler.

**BCa under dependence.** The acceleration comes from the delete-one-group jackknife (each
group left out in turn; Davison & Hinkley 1997, §3.8) for the cluster bootstrap, and from
the delete-one-block jackknife over the non-overlapping blocks of ``block_length`` points for
the block bootstraps (Künsch 1989). Its cost is one evaluation of M points per group or
block (a few seconds for 10⁴ groups of 10² points).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import dask
import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from xuqcal.analysis.resampling import (
    COUNTS_BLOCK,
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

__all__ = ["BLOCK_SCHEMES", "RESAMPLES", "Dependence", "check_dependence"]

#: The values of ``resample``.
RESAMPLES = ("iid", "cluster", "moving", "circular", "stationary")
#: The block schemes and their kernel codes.
BLOCK_SCHEMES = {"moving": K.BLOCK_MOVING, "circular": K.BLOCK_CIRCULAR,
                 "stationary": K.BLOCK_STATIONARY}
#: The value of ``block_length`` that asks for the automatic block length.
AUTO_LENGTH = "auto"


@dataclass(frozen=True)
class Dependence:
    """A checked ``resample`` with its variable (``groups`` or ``block``) and block length."""

    resample: str
    variable: str | None = None
    block_length: int | str | None = None
    block_length_rule: str = "given"

    @property
    def iid(self) -> bool:
        return self.resample == "iid"

    def attrs(self) -> dict:
        """The attributes that say how the points were resampled."""
        if self.iid:
            return {"resample": "iid"}
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
    work; no data are read).

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


@dataclass
class _Model:
    """One data set arranged for a dependent bootstrap: its prepared data, the row (in the
    order of the resampling) of its point at each position, and each row's jackknife unit
    (for a cluster bootstrap: its group, the unit it is resampled by too)."""

    prepared: PreparedData
    rows_of: np.ndarray
    unit_of_row: np.ndarray
    n_units: int


def _arrange(e: np.ndarray, u: np.ndarray, x: np.ndarray | None, variable: np.ndarray,
             dependence: Dependence, *, n_bins: int, by: str, needs_bins: bool) -> _Model:
    prepared = PreparedData.from_arrays(e, u, by_values=x, by=by, n_bins=n_bins,
                                        needs_bins=needs_bins)
    order = equal_count_order(u if x is None else x)  # position -> data row
    if dependence.resample == "cluster":
        if pd.isna(variable).any():
            rows = np.flatnonzero(pd.isna(variable))[:5].tolist()
            raise ValueError(f"groups: {dependence.variable!r} is missing at "
                             f"{int(pd.isna(variable).sum())} point(s) (rows {rows}); give "
                             "every point its group")
        codes, uniques = pd.factorize(np.asarray(variable), sort=True)
        if uniques.size < 2:
            raise ValueError(f"groups: {dependence.variable!r} holds {uniques.size} group; "
                             "a cluster bootstrap needs at least 2")
        return _Model(prepared, order.astype(np.int64), codes.astype(np.int32),
                      int(uniques.size))
    rank = np.empty(e.size, dtype=np.int64)  # data row -> row in the order of `block`
    rank[np.argsort(np.asarray(variable), kind="stable")] = np.arange(e.size)
    length = int(dependence.block_length)
    unit_of_row = (np.arange(e.size) // length).astype(np.int32)
    return _Model(prepared, rank[order], unit_of_row, int(unit_of_row[-1]) + 1)


def _estimate(model: _Model, codes: np.ndarray) -> np.ndarray:
    return model.prepared.evaluate(codes)


def _fill(model: _Model, key: np.uint64, resample: str, block_length: int | None,
          first: int, last: int, block: np.ndarray) -> None:
    """The row multiplicities of replicates ``first .. last - 1`` of a dependent resample."""
    if resample == "cluster":
        K.fill_group_counts_block(key, first, last, model.unit_of_row, model.n_units, block)
    else:
        K.fill_block_counts_block(key, first, last, block_length, BLOCK_SCHEMES[resample],
                                  block)


def _replicates(model: _Model, codes: np.ndarray, key: np.uint64, start: int, stop: int,
                resample: str, block_length: int | None) -> np.ndarray:
    """Replicates ``start .. stop - 1`` ``(replicate, code)``."""
    fill = functools.partial(_fill, model, key, resample, block_length)
    return counts_replicates([(model.prepared, model.rows_of)], codes, fill, start, stop)[0]


def _jackknife(model: _Model, codes: np.ndarray) -> np.ndarray:
    """The delete-one-unit values ``(code, unit)``: each group (or block) left out in turn."""
    m, n = model.rows_of.size, model.n_units
    out = np.empty((n, codes.shape[0]))
    size = max(1, min(n, COUNTS_BLOCK // max(m, 1)))
    for first in range(0, n, size):
        units = np.arange(first, min(n, first + size), dtype=np.int32)
        counts = (model.unit_of_row[None, :] != units[:, None]).astype(np.int32)
        evaluate_row_counts(model.prepared, model.rows_of, codes, counts,
                            out[first:first + units.size])
    return model.prepared.unscale(codes, out).T


def automatic_length(ds: xr.Dataset, dependence: Dependence, *, E: str, uE: str
                     ) -> Dependence:
    """``dependence`` with the block length of Politis & White (2004, corrected by Patton,
    Politis & White 2009) for the series ``Z²`` in the order of ``block`` (the per-point terms
    of ZMS), rounded up: the stationary bootstrap's for ``"stationary"``, the circular
    block's otherwise (:func:`xuqcal.core.blocklength.optimal_block_length`). The data are
    read now (the block length lays out the jackknife)."""
    order = np.argsort(np.asarray(ds[dependence.variable].values), kind="stable")
    z2 = (np.asarray(ds[E].values, dtype=np.float64)
          / np.asarray(ds[uE].values, dtype=np.float64))[order] ** 2
    stationary, circular = optimal_block_length(z2)
    chosen = stationary if dependence.resample == "stationary" else circular
    length = max(1, math.ceil(chosen))
    if dependence.resample == "moving":
        length = min(length, z2.size)
    return replace(dependence, block_length=length,
                   block_length_rule="Politis-White (2004; Patton-Politis-White 2009) of Z^2 "
                                     f"in the order of {dependence.variable}: "
                                     f"{chosen:.4g}, rounded up")


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
    model = dask.delayed(_arrange, pure=True)(
        ds[E].data, ds[uE].data, x, ds[dependence.variable].data, dependence,
        n_bins=n_bins, by=by, needs_bins=needs_bins)
    estimate = xr.DataArray(da.from_delayed(
        dask.delayed(_estimate, pure=True)(model, codes), shape=(len(stats),),
        dtype=np.float64), dims=("statistic",))
    key = stream_key(seed, f"bootstrap-{dependence.resample}")
    blocks, start = [], 0
    for size in replicate_chunks(n_boot, chunks, width=len(stats)):
        block = dask.delayed(_replicates, pure=True)(model, codes, key, start, start + size,
                                                     dependence.resample,
                                                     dependence.block_length)
        blocks.append(da.from_delayed(block, shape=(size, len(stats)), dtype=np.float64))
        start += size
    replicates = xr.DataArray(da.concatenate(blocks, axis=0).T,
                              dims=("statistic", "replicate"))
    jack = None
    if jackknife:
        if dependence.resample == "cluster":  # the group labels are read now, to lay it out
            n_units = int(pd.unique(np.asarray(ds[dependence.variable].values)).size)
        else:
            n_units = -(-int(ds.sizes[SAMPLE_DIM]) // int(dependence.block_length))
        values = dask.delayed(_jackknife, pure=True)(model, codes)
        jack = xr.DataArray(da.from_delayed(values, shape=(len(stats), n_units),
                                            dtype=np.float64), dims=("statistic", "jackknife"))
    return estimate, replicates, jack
