"""Compare models on the same points: paired bootstrap differences, their BCa intervals and
verdicts, and rank probabilities.

Models evaluated on the same test set (the slices of a dimension ``dim``, e.g. ``model``, that
share ``sample``) have strongly correlated errors. Bootstrapping each on its own streams and
comparing the intervals throws that pairing away: overlapping intervals are not a test of a
difference. :func:`compare` resamples the *rows of the sample* once per replicate and applies
that resample to every model (a paired bootstrap), so that each replicate of a difference
compares the models on the same points.

**Pairing.** Replicate ``r`` draws M rows with replacement from the stream keyed by
``(seed, "compare", r)`` (:func:`xuqcal.core.random.stream_key`), once, as the multiplicity
of each row (:func:`xuqcal.core.kernels.fill_counts_block`); every model evaluates its
statistics on those multiplicities, carried to its own positions (its arrays are in the
order of its own binning variable: :func:`xuqcal.core.kernels.paired_counts_block`), so every
model sees the same points, whatever the chunking and the scheduler. The evaluation is the
count-weighted one of :func:`xuqcal.core.kernels.evaluate_counts`: a resample's points tied
in the binning variable fill the bins in the order of the data (the walk of
:func:`xuqcal.bootstrap` keeps the order of the draws; the two differ only where distinct
points with equal binning values straddle a bin edge). ``pairing="common"`` (the default)
keeps the points present in every compared model (E and uE both given) and reports how many
of each model's points were left out (``n_dropped``). For ragged sets whose models were
evaluated on different points, ``pairing="independent"`` bootstraps each model on its own
points and streams (keyed by the model's label); the differences of independent replicates
then give percentile intervals (no paired jackknife exists), which are wider.

**Dependent points.** With ``resample="cluster"`` (``groups=``) or a block
scheme (``block=``, ``block_length=``), as :func:`xuqcal.bootstrap`
(:mod:`xuqcal.analysis.dependent`), the common points get one
:class:`~xuqcal.analysis.dependent.RowLayout` (the groups or the order are properties of the
points: a variable over ``sample``, or over ``(dim, sample)`` when equal for every model);
replicate ``r`` draws its rows' multiplicities from the stream ``(seed, "compare-<resample>",
r)`` (whole groups, or blocks of consecutive points), and every model evaluates them: the
pairing is kept. BCa's acceleration then comes from the paired delete-one-unit jackknife:
each group (or non-overlapping block of ``block_length`` points) left out of every model at
once. ``pairing="independent"`` resamples each model's own points by its own layout, from
``(seed, "compare:<label>-<resample>", r)``. ``block_length="auto"`` is Politis & White's
length of ``Z²`` in the order of ``block``, on each slice's compared points: the largest over
the models for the common layout; the lengths used are the variable ``block_length``. The
ranks, ζ-scores and verdicts follow from the replicates as for independent points.

**Distances.** A statistic is compared by its distance to the value of calibrated data:
``|zms - 1|``, ``|zv - 1|``, ``|zm|``, ``|rce|``; ``nll`` by ``|nll - nll_ref| =
|zms - 1| / 2`` (the reference ``½ (ln 2π + <ln uE²> + 1)`` of METHODS has the same
``<ln uE²>`` as the NLL itself, so their difference is half that of ZMS from 1, exactly, for
the data and for every resample). Statistics without a predefined reference are compared by
their value: ``ence``, ``uce``, ``zmse`` (0 for ideal consistency: lower is better) and
``cc`` through ``1 - cc`` (higher rank correlation of ``|E|`` and ``uE`` is better). No
simulated reference is used: it depends on a generator, and a difference of distances to
two generator-dependent references would mix the models with the generators.

**Differences.** For each ordered pair (``model``, ``other``) and statistic:
``difference = distance(model) - distance(other)`` (negative: ``model`` is nearer to
calibration), its BCa interval from the paired replicates and the paired jackknife (leave
the same row out of both models), its ζ-score against 0 (:func:`xuqcal.zeta`), and a
verdict: ``"better"`` when the interval lies below 0, ``"worse"`` above, else ``"no
significant difference"``. Identical models give differences of exactly 0 in every
replicate: the interval is ``[0, 0]``, ζ = 0, no significant difference.

**Values.** The differences of the statistics themselves (``value_difference``, e.g.
``zms(A) - zms(B)``) come with their paired intervals too (``value_ci_low``,
``value_ci_high``), without a verdict: a larger ZMS is not worse in itself. They keep all
the power of the pairing, which the distances lose in part near calibration: ``|x|`` folds
two correlated estimates on either side of the reference.

**Ranks.** In every replicate the models are ranked by distance (1 = nearest). Tie rule:
``t`` models tied at one distance share the ranks they span, each receiving ``1 / t`` of
each of them (identical models are each first with probability 1/2 when two of them lead);
an undefined distance (NaN: a statistic undefined on a resample) ranks after every defined
one, tied with the other undefined ones. ``rank_probability`` is the mean over the replicates
and ``p_best`` its first rank.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import dask
import numpy as np
import pandas as pd
import xarray as xr

from xuqcal.analysis.dependence_scan import warn_if_dependent
from xuqcal.analysis.dependent import (
    AUTO_LENGTH,
    Dependence,
    RowLayout,
    automatic_block_length,
    check_dependence,
    dependent_jackknife,
    dependent_replicates,
    row_layout,
)
from xuqcal.analysis.lazy import lazy_result, template
from xuqcal.analysis.resampling import (
    _jackknife_block,
    bootstrap_replicates,
    counts_replicates,
    replicate_chunks,
)
from xuqcal.core import defaults
from xuqcal.core import kernels as K
from xuqcal.core.binning import equal_count_order, resolve_n_bins
from xuqcal.core.checks import (
    check_choice,
    check_chunks,
    check_level,
    check_replicates,
    check_seed,
)
from xuqcal.core.intervals import acceleration, bca_interval, percentile_interval, zeta
from xuqcal.core.memory import check_fits_in_one_task, task_bytes_per_point
from xuqcal.core.provenance import attach
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import PreparedData, Statistic, codes_of, get_statistics
from xuqcal.io.schema import SAMPLE_DIM, roles

__all__ = ["COMPARED_STATISTICS", "PAIRINGS", "compare", "distance", "ranking_table"]

#: The statistics :func:`compare` compares, and how their distance to calibration is taken.
COMPARED_STATISTICS = {
    "zms": "|zms - 1|", "zv": "|zv - 1|", "zm": "|zm|", "rce": "|rce|",
    "nll": "|nll - nll_ref| = |zms - 1| / 2",
    "ence": "ence", "uce": "uce", "zmse": "zmse", "cc": "1 - cc",
}
#: The ways to pair the points of the compared models.
PAIRINGS = ("common", "independent")
#: The dimensions that hold the models when ``dim`` is not given, in this order.
MODEL_DIMS = ("model", "dataset")
#: The default statistics of :func:`compare`.
DEFAULT_STATISTICS = ("zms", "rce", "cc", "ence", "zmse")
VERDICTS = ("better", "worse", "no significant difference")


def distance(key: str, values: np.ndarray) -> np.ndarray:
    """The distance of statistic ``key``'s ``values`` to calibration (lower is better; see
    :data:`COMPARED_STATISTICS`). ``nll`` takes the values of ``zms``.

    Examples
    --------
    >>> distance("zms", np.array([0.9, 1.2])).round(12).tolist()
    [0.1, 0.2]
    >>> distance("cc", np.array([0.25])).tolist()
    [0.75]
    """
    values = np.asarray(values, dtype=np.float64)
    if key in ("zms", "zv"):
        return np.abs(values - 1.0)
    if key in ("zm", "rce"):
        return np.abs(values)
    if key == "nll":  # from zms: |nll - nll_ref| = |zms - 1| / 2
        return np.abs(values - 1.0) / 2.0
    if key == "cc":
        return 1.0 - values
    if key in ("ence", "uce", "zmse"):
        return values.copy()
    raise ValueError(f"statistics: {key} cannot be compared; choose from "
                     f"{', '.join(COMPARED_STATISTICS)}")


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------


def _compare_iv(ds, statistics, *, dim, n_boot, level, seed, chunks, n_bins, by, pairing, E,
                uE, resample="iid", groups=None, block=None, block_length=None):
    """Argument checks of :func:`compare`, before any data are read (but for a dependence
    variable over the models, whose values are compared); returns the compared statistics,
    the kernel statistics (``nll`` is computed from ``zms``), the normalised arguments, the
    data (with a dependence variable over the models made one over ``sample``) and the
    checked :class:`~xuqcal.analysis.dependent.Dependence`."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset with {E} and {uE} over "
                        f"({dim or MODEL_DIMS[0]}, sample), got {type(ds).__name__}")
    stats = get_statistics(DEFAULT_STATISTICS if statistics is None else statistics)
    wrong = [s.key for s in stats if s.key not in COMPARED_STATISTICS]
    if wrong:
        raise ValueError(f"statistics: {', '.join(wrong)} cannot be compared by compare (no "
                         f"distance to calibration); choose from "
                         f"{', '.join(COMPARED_STATISTICS)} (coverage: compare the interval "
                         "scores with xuqcal.paired_scores)")
    level = check_level(level)
    n_boot = check_replicates(n_boot, level)
    seed = check_seed(seed)
    chunks = check_chunks(chunks)
    pairing = check_choice(pairing, "pairing", PAIRINGS)
    E, uE = roles(ds, E, uE)
    if dim is None:
        dim = next((d for d in MODEL_DIMS if d in ds.dims), MODEL_DIMS[0])
    for name in (E, uE):
        if name not in ds.data_vars:
            raise ValueError(f"ds: no variable {name!r} (its variables: "
                             f"{', '.join(map(str, ds.data_vars))})")
    if not isinstance(dim, str) or dim not in ds[E].dims:
        raise ValueError(f"dim: {dim!r} is not a dimension of {E} (its dimensions: "
                         f"{', '.join(map(str, ds[E].dims))}); stack the models along one, "
                         "e.g. xuqcal.stack_datasets({'A': a, 'B': b}, dim='model')")
    if dim == SAMPLE_DIM:
        raise ValueError("dim: the models are compared on the points of 'sample'; give the "
                         "dimension that holds the models (e.g. 'model')")
    if ds.sizes[dim] < 2:
        raise ValueError(f"dim: comparing needs at least 2 labels along {dim!r}, got "
                         f"{ds.sizes[dim]}")
    labels = (ds[dim].values.tolist() if dim in ds.coords
              else list(range(ds.sizes[dim])))
    repeated = sorted({str(x) for x in labels if labels.count(x) > 1})
    if repeated:
        raise ValueError(f"dim: the labels along {dim!r} repeat ({', '.join(repeated)}); "
                         "give each model its own label")
    if by is not None and by != defaults.BY and by not in ds.data_vars:
        raise ValueError(f"by: no variable {by!r} to bin on (its variables: "
                         f"{', '.join(map(str, ds.data_vars))})")
    keys = [s.key for s in stats]
    # nll's distance is |zms - 1| / 2: zms is computed with it
    kernel_keys = list(dict.fromkeys([*keys, *(["zms"] if "nll" in keys else [])]))
    ds, dependence = model_dependence(ds, dim, resample, groups, block, block_length, E=E,
                                      uE=uE)
    return (stats, get_statistics(kernel_keys), n_boot, level, seed, chunks, pairing, E, uE,
            labels, dim, ds, dependence)


def model_dependence(ds: xr.Dataset, dim: str, resample: object, groups: object,
                     block: object, block_length: object, *, E: str = defaults.E,
                     uE: str = defaults.UE, analysis: str = "compare"
                     ) -> tuple[xr.Dataset, Dependence]:
    """The checked dependent resample of models compared on the same points, and the data.
    With ``"iid"``, the :class:`~xuqcal.DependenceWarning` of ``analysis`` for the first
    model whose points are dependent (:func:`~xuqcal.warn_if_dependent`).

    The dependence variable (``groups`` or ``block``) is a property of the points, shared by
    the models: a variable over ``sample``. One over ``(dim, sample)`` (e.g. a feature of
    :func:`xuqcal.stack_datasets`) is accepted when its values agree across the models
    wherever they are given (padded points are missing), and replaced in the returned data by
    its values over ``sample``; models that disagree are refused, naming the samples. The
    other checks are those of :func:`xuqcal.analysis.dependent.check_dependence`.

    Examples
    --------
    >>> import xuqcal
    >>> a = xuqcal.synthetic.nig(6, nu=6, seed=0).assign(g=("sample", [0, 0, 1, 1, 2, 2]))
    >>> both = xuqcal.stack_datasets({"A": a, "B": a}, dim="model")
    >>> data, dependence = model_dependence(both, "model", "cluster", "g", None, None)
    >>> data.g.dims, dependence.attrs()["groups"]
    (('sample',), 'g')
    """
    for parameter, name in (("groups", groups), ("block", block)):
        if not (isinstance(name, str) and name in ds.variables and dim in ds[name].dims):
            continue
        variable = ds[name]
        if set(variable.dims) != {dim, SAMPLE_DIM}:
            raise ValueError(f"{parameter}: {name!r} must be a variable over sample (or over "
                             f"({dim}, sample), the same for every model), got dimensions "
                             f"{variable.dims}")
        values = np.asarray(variable.transpose(dim, SAMPLE_DIM).values)
        given = ~pd.isna(values)
        columns = np.arange(values.shape[1])
        reference = values[given.argmax(axis=0), columns]  # the first model that gives it
        differ = (given & (values != reference[None, :])).any(axis=0)
        if differ.any():
            where = np.flatnonzero(differ)
            samples = (np.asarray(ds[SAMPLE_DIM].values)[where] if SAMPLE_DIM in ds.coords
                       else where)
            shown = ", ".join(map(str, samples[:5].tolist())) + (", ..." if where.size > 5
                                                                  else "")
            raise ValueError(f"{parameter}: {name!r} differs between the models along "
                             f"{dim!r} at {where.size} sample(s) ({shown}); the models are "
                             f"compared on the same points, which need one {parameter} value "
                             "each: give a variable over sample")
        ds = ds.assign({name: xr.Variable(SAMPLE_DIM, reference, variable.attrs)})
    dependence = check_dependence(ds, resample, groups, block, block_length)
    if dependence.iid:  # said once, for the first model whose points are dependent
        for label in ds[dim].values:
            if warn_if_dependent(ds.sel({dim: label}), E=E, uE=uE,
                                 analysis=f"{analysis} ({dim} {label})"):
                break
    if getattr(dependence, "tiles", None) is not None:
        raise ValueError("block: tiles of a grid (block given as a dict) are not supported by "
                         "the comparisons of models (compare, paired_scores, sip_matrix) yet; "
                         "give one variable that orders the points, or resample='cluster' "
                         "with groups= (e.g. the tile of each point)")
    return ds, dependence


# --------------------------------------------------------------------------------------------
# One slice: models x points, in memory
# --------------------------------------------------------------------------------------------


def _fill_shared(key: np.uint64, first: int, last: int, block: np.ndarray) -> None:
    """The row multiplicities every model of a paired comparison shares."""
    K.fill_counts_block(key, first, last, block)


def _paired_chunk(models: Sequence[tuple[PreparedData, np.ndarray]], codes: np.ndarray,
                  key: np.uint64, start: int, stop: int) -> np.ndarray:
    """Replicates ``start .. stop - 1`` of every model, ``(model, replicate, code)``: the
    rows' multiplicities are drawn once per replicate and evaluated by each model."""
    return counts_replicates(models, codes, functools.partial(_fill_shared, key), start,
                             stop)


def _first(model: tuple[PreparedData, np.ndarray]) -> PreparedData:
    return model[0]


def _evaluate(model: tuple[PreparedData, np.ndarray], codes: np.ndarray) -> np.ndarray:
    """A model's statistics on its points."""
    return model[0].evaluate(codes)


def _jackknife_by_row(model: tuple[PreparedData, np.ndarray], codes: np.ndarray
                      ) -> np.ndarray:
    """A model's leave-one-out values ``(code, row)``, by row of the common sample (the
    paired jackknife leaves the same row out of every model)."""
    prepared, rows_of = model
    values = _jackknife_block(prepared, codes, 0, prepared.size).T  # (code, position)
    by_row = np.empty_like(values)
    by_row[:, rows_of] = values
    return by_row


def _prepare(e: np.ndarray, u: np.ndarray, x: np.ndarray | None, *, n_bins: int, by: str,
             needs_bins: bool, row_of_point: np.ndarray | None = None
             ) -> tuple[PreparedData, np.ndarray]:
    """One model's prepared data and the row of its point at each position (its arrays are
    in the order of its binning variable); ``row_of_point``: the rows of a dependent
    :class:`~xuqcal.analysis.dependent.RowLayout` of its points (default: the points' own
    order)."""
    prepared = PreparedData.from_arrays(e, u, by_values=x, by=by, n_bins=n_bins,
                                        needs_bins=needs_bins)
    rows_of = equal_count_order(u if x is None else x)  # as from_arrays orders the points
    if row_of_point is not None:
        rows_of = row_of_point[rows_of]
    return prepared, np.ascontiguousarray(rows_of, dtype=np.int64)


def _dependent_chunk(layout: RowLayout, models: Sequence[tuple[PreparedData, np.ndarray]],
                     codes: np.ndarray, key: np.uint64, start: int, stop: int) -> np.ndarray:
    """Replicates ``start .. stop - 1`` ``(model, replicate, code)`` of every model on the
    same dependent resamples of the rows of ``layout``."""
    return dependent_replicates(layout, models, codes, key, start, stop)


def _jackknife_by_unit(model: tuple[PreparedData, np.ndarray], layout: RowLayout,
                       codes: np.ndarray) -> np.ndarray:
    """A model's delete-one-unit values ``(code, unit)``: unit ``j`` (a group, or a block of
    ``block_length`` rows) of the common layout left out (of every model at once: the paired
    jackknife of a dependent resample)."""
    return dependent_jackknife(layout, model[0], model[1], codes)


#: How ``block_length="auto"`` is resolved by :func:`compare` (recorded in the attributes).
AUTO_RULE = ("Politis-White (2004; Patton-Politis-White 2009) length of Z^2 in the order of "
             "{block} on each slice's compared points, rounded up: {which}")


def model_layouts(E: np.ndarray, U: np.ndarray, V: np.ndarray, rows: list[np.ndarray],
             pairing: str, dependence: Dependence, labels: Sequence[Any]) -> list[RowLayout]:
    """Each model's :class:`~xuqcal.analysis.dependent.RowLayout` of its points ``rows``
    (the dependence variable's values ``V`` over the sample): one layout shared by every
    model for ``pairing="common"``, each its own for ``"independent"``. An automatic block
    length is resolved here: the largest of the models' for a common layout."""
    k = E.shape[0]
    if dependence.block_length == AUTO_LENGTH:
        lengths = [automatic_block_length(E[i, rows[i]], U[i, rows[i]], V[rows[i]],
                                          dependence.resample)[0] for i in range(k)]
        if pairing == "common":
            lengths = [max(lengths)] * k
        dependences = [Dependence(dependence.resample, dependence.variable, n)
                       for n in lengths]
    else:
        dependences = [dependence] * k
    for i, one in enumerate(dependences):
        if one.resample == "moving" and one.block_length > rows[i].size:
            where = "in common" if pairing == "common" else f"of model {labels[i]!r}"
            raise ValueError(f"block_length: {one.block_length} is longer than the "
                             f"{rows[i].size} points {where}; a moving block must fit in the "
                             "compared points")
    if pairing == "common":
        return [row_layout(V[rows[0]], dependences[0])] * k
    return [row_layout(V[rows[i]], dependences[i]) for i in range(k)]


def _dependent_parts(models: list, estimates: list, layouts: list[RowLayout],
                     codes: np.ndarray, *, labels: Sequence[Any], n_boot: int, seed: int,
                     chunks, pairing: str, resample: str
                     ) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray] | None]:
    """The estimates, replicates ``(model, replicate, code)`` and (common pairing) the
    paired delete-one-unit jackknife ``(code, unit)`` of each model under a dependent
    resample: one layout for every model from the streams ``(seed, "compare-<resample>",
    r)``, or each model's own from ``(seed, "compare:<label>-<resample>", r)``."""
    k = len(models)
    if pairing == "common":
        key, blocks, start = stream_key(seed, f"compare-{resample}"), [], 0
        for size in replicate_chunks(n_boot, chunks, width=k * codes.shape[0]):
            blocks.append(dask.delayed(_dependent_chunk, pure=True)(
                layouts[0], models, codes, key, start, start + size))
            start += size
        jacks = [dask.delayed(_jackknife_by_unit, pure=True)(model, layouts[0], codes)
                 for model in models]
        estimates, blocks, jacks = dask.compute(estimates, blocks, jacks)
        return estimates, np.concatenate(blocks, axis=1), jacks
    per_model = []
    for model, layout, label in zip(models, layouts, labels, strict=True):
        key, blocks, start = stream_key(seed, f"compare:{label}-{resample}"), [], 0
        for size in replicate_chunks(n_boot, chunks, width=codes.shape[0]):
            blocks.append(dask.delayed(_dependent_chunk, pure=True)(
                layout, [model], codes, key, start, start + size))
            start += size
        per_model.append(blocks)
    estimates, per_model = dask.compute(estimates, per_model)
    return estimates, np.concatenate([np.concatenate(b, axis=1) for b in per_model]), None


#: Replicates whose rank shares are held at once by :func:`rank_probabilities`.
RANK_BLOCK = 4096


def _rank_shares(distances: np.ndarray) -> np.ndarray:
    """``(models, ranks, replicates)``: each model's share of each rank in each replicate,
    ties sharing their ranks equally and NaN last (the module's tie rule)."""
    k = distances.shape[0]
    undefined = np.isnan(distances)
    keyed = np.where(undefined, 0.0, distances)  # undefined distances tie with each other
    same = undefined[:, None, :] == undefined[None, :, :]
    before = (undefined[:, None, :] & ~undefined[None, :, :]) | (
        same & (keyed[None, :, :] < keyed[:, None, :]))  # [a, c]: c ranks before a
    tied = same & (keyed[None, :, :] == keyed[:, None, :])
    first = before.sum(axis=1)  # a's first rank (0-based)
    size = tied.sum(axis=1)  # the size of a's tie group (a included)
    ranks = np.arange(k)[None, :, None]
    inside = (ranks >= first[:, None, :]) & (ranks < (first + size)[:, None, :])
    return np.where(inside, 1.0 / size[:, None, :], 0.0)


def rank_probabilities(distances: np.ndarray) -> np.ndarray:
    """Mean rank probabilities over replicates: ``distances`` is ``(models, replicates)``;
    returns ``(models, ranks)`` (see the module's tie rule). The shares of the replicates are
    added in their order (a running sum), so the result does not depend on
    :data:`RANK_BLOCK`.

    Examples
    --------
    >>> rank_probabilities(np.array([[0.1, 0.3], [0.2, 0.2]])).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    >>> rank_probabilities(np.array([[0.1, 0.1], [0.1, np.nan]])).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    distances = np.asarray(distances, dtype=np.float64)
    k, n = distances.shape
    total = np.zeros((k, k, 1))
    for start in range(0, n, RANK_BLOCK):
        shares = _rank_shares(distances[:, start:start + RANK_BLOCK])
        total = np.cumsum(np.concatenate([total, shares], axis=-1), axis=-1)[..., -1:]
    return total[..., 0] / n


#: Values of the paired jackknife differences held at once by :func:`_pair_intervals`.
PAIR_BLOCK = 1 << 22


def _pair_intervals(replicates: np.ndarray, estimates: np.ndarray, jack: np.ndarray | None,
                    first: np.ndarray, second: np.ndarray, level: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The intervals of the differences ``first - second`` of one statistic: ``replicates``
    and ``jack`` are the models' distances ``(model, replicate)`` and ``(model, row)``; BCa
    with the paired jackknife, percentile without. A difference equal to its estimate in
    every replicate (identical models) has the interval ``[d, d]``. Pairs are taken a block
    at a time (:data:`PAIR_BLOCK` jackknife values)."""
    n_pairs = first.size
    low, high = np.empty(n_pairs), np.empty(n_pairs)
    step = n_pairs if jack is None else max(1, PAIR_BLOCK // max(1, jack.shape[1]))
    for start in range(0, n_pairs, step):
        block = slice(start, start + step)
        a, b = first[block], second[block]
        reps = replicates[a] - replicates[b]
        est = estimates[block]
        constant = np.isfinite(reps).all(axis=1) & (reps == est[:, None]).all(axis=1)
        lo, hi = est.copy(), est.copy()
        varying = ~constant
        if varying.any():
            with np.errstate(invalid="ignore", over="ignore"):
                if jack is None:
                    bounds = percentile_interval(reps[varying], level)
                else:
                    rows = jack[a[varying]] - jack[b[varying]]
                    bounds = bca_interval(reps[varying], est[varying], level=level,
                                          acceleration_value=acceleration(rows,
                                                                          products=True))
            lo[varying], hi[varying] = bounds
        low[block], high[block] = lo, hi
    return low, high


def _compare_arrays(E: np.ndarray, U: np.ndarray, X: np.ndarray | None, *,
                    stats: Sequence[Statistic], kernel_stats: Sequence[Statistic],
                    labels: Sequence[Any], n_boot: int, level: float, seed: int, chunks,
                    n_bins: int | None, by: str, pairing: str, V: np.ndarray | None = None,
                    dependence: Dependence | None = None) -> dict[str, np.ndarray]:
    """The comparison of the models of one slice: ``E``, ``U`` (and the binning variable
    ``X``) are ``(models, sample)``; ``V``: the values ``(sample,)`` of the dependence
    variable of a dependent resample ``dependence`` (None: iid); returns the arrays of the
    result."""
    k = E.shape[0]
    present = np.isfinite(E) & np.isfinite(U)
    codes = codes_of(kernel_stats)
    needs_bins = any(s.needs_bins for s in kernel_stats)
    if pairing == "common":
        common = present.all(axis=0)
        rows = [np.flatnonzero(common)] * k
        n_dropped = (present & ~common).sum(axis=1)
    else:
        rows = [np.flatnonzero(present[i]) for i in range(k)]
        n_dropped = np.zeros(k, dtype=np.int64)
    sizes = [r.size for r in rows]
    for i, size in enumerate(sizes):
        if size < 2:
            where = " in common with every other model" if pairing == "common" else ""
            raise ValueError(f"ds: model {labels[i]!r} has {size} point(s){where}; "
                             "comparing needs at least 2")
    # every model's preparation, estimate and jackknife, and the replicate chunks of all
    # models, are tasks of one graph: they run in parallel
    layouts = (None if dependence is None
               else model_layouts(E, U, V, rows, pairing, dependence, labels))
    models = []
    for i in range(k):
        bins = resolve_n_bins(sizes[i], n_bins, binned=needs_bins)
        check_fits_in_one_task(sizes[i], task_bytes_per_point(len(codes), jackknife=True),
                               "compare")
        arranged = {} if layouts is None else {"row_of_point": layouts[i].row_of_point}
        models.append(dask.delayed(_prepare, pure=True)(
            E[i, rows[i]], U[i, rows[i]], None if X is None else X[i, rows[i]], n_bins=bins,
            by=by, needs_bins=needs_bins, **arranged))
    estimates = [dask.delayed(_evaluate, pure=True)(model, codes) for model in models]
    if layouts is not None:
        estimates, replicates, jacks = _dependent_parts(
            models, estimates, layouts, codes, labels=labels, n_boot=n_boot, seed=seed,
            chunks=chunks, pairing=pairing, resample=dependence.resample)
    elif pairing == "common":
        key, blocks, start = stream_key(seed, "compare"), [], 0
        for size in replicate_chunks(n_boot, chunks, width=k * codes.shape[0]):
            blocks.append(dask.delayed(_paired_chunk, pure=True)(models, codes, key, start,
                                                                 start + size))
            start += size
        jacks = [dask.delayed(_jackknife_by_row, pure=True)(model, codes) for model in models]
        estimates, blocks, jacks = dask.compute(estimates, blocks, jacks)
        replicates = np.concatenate(blocks, axis=1)  # (model, replicate, code)
    else:  # each model alone, on its own streams (the walk of xuqcal.bootstrap)
        prepared = [dask.delayed(_first, pure=True)(model) for model in models]
        estimates, replicates = dask.compute(estimates, [
            bootstrap_replicates(one, codes, n_boot, seed, chunks, purpose=f"compare:{label}")
            for one, label in zip(prepared, labels, strict=True)])
        replicates = np.stack(replicates, axis=0)
    estimate = np.stack(estimates)  # (model, code)
    keys_of = [s.key for s in kernel_stats]
    n_stat = len(stats)
    values = np.empty((k, n_stat))
    dist = np.empty((k, n_stat))
    value_rep = np.empty((k, n_stat, n_boot))
    dist_rep = np.empty((k, n_stat, n_boot))
    value_jack = [] if pairing == "common" else None
    dist_jack = [] if pairing == "common" else None
    for j, s in enumerate(stats):
        c = keys_of.index(s.key)
        d = keys_of.index("zms" if s.key == "nll" else s.key)  # the column of the distance
        values[:, j] = estimate[:, c]
        dist[:, j] = distance(s.key, estimate[:, d])
        value_rep[:, j] = replicates[:, :, c]
        dist_rep[:, j] = distance(s.key, replicates[:, :, d])
        if dist_jack is not None:
            value_jack.append(np.stack([jacks[i][c] for i in range(k)]))
            dist_jack.append(np.stack([distance(s.key, jacks[i][d]) for i in range(k)]))
    difference = dist[:, None, :] - dist[None, :, :]
    value_difference = values[:, None, :] - values[None, :, :]
    low, high = np.zeros((k, k, n_stat)), np.zeros((k, k, n_stat))
    value_low, value_high = np.zeros((k, k, n_stat)), np.zeros((k, k, n_stat))
    first, second = np.triu_indices(k, 1)
    for j in range(n_stat):
        for reps, est, jack, lows, highs in (
                (dist_rep, difference, dist_jack, low, high),
                (value_rep, value_difference, value_jack, value_low, value_high)):
            lo, hi = _pair_intervals(reps[:, j], est[first, second, j],
                                     None if jack is None else jack[j], first, second, level)
            # (B, A) is (A, B) negated: its interval is the negated one, exactly (BCa
            # respects a monotone transformation): the matrices are antisymmetric
            lows[first, second, j], highs[first, second, j] = lo, hi
            lows[second, first, j], highs[second, first, j] = -hi, -lo
    with np.errstate(invalid="ignore", divide="ignore"):
        z = zeta(difference, 0.0, low, high)
    z = np.where(difference == 0.0, 0.0, z)  # identical models: 0, not 0 / 0
    verdict = np.where(high < 0, "better", np.where(low > 0, "worse",
                                                     "no significant difference"))
    verdict = verdict.astype(object)
    for a in range(k):
        verdict[a, a, :] = ""
    rank = np.stack([rank_probabilities(dist_rep[:, j]) for j in range(n_stat)], axis=-1)
    return {"estimate": values, "distance": dist, "difference": difference,
            "ci_low": low, "ci_high": high, "zeta": z, "verdict": verdict.astype(str),
            "value_difference": value_difference, "value_ci_low": value_low,
            "value_ci_high": value_high,
            "rank_probability": rank, "p_best": rank[:, 0, :],
            "n_samples": np.array(sizes, dtype=np.int64), "n_dropped": n_dropped,
            **({} if layouts is None or layouts[0].block_length is None else
               {"block_length": np.array([layout.block_length for layout in layouts],
                                         dtype=np.int64)})}


# --------------------------------------------------------------------------------------------
# Labelled entry point
# --------------------------------------------------------------------------------------------


def _layout(stats: Sequence[Statistic], labels: Sequence[Any], dim: str,
            blocks: bool = False) -> xr.Dataset:
    """The result of one slice laid out for :func:`~xuqcal.analysis.lazy.lazy_result`
    (``blocks``: with the block length of a block scheme)."""
    k, n = len(labels), len(stats)
    shapes = {"estimate": (k, n), "distance": (k, n), "difference": (k, k, n),
              "ci_low": (k, k, n), "ci_high": (k, k, n), "zeta": (k, k, n),
              "verdict": (k, k, n), "rank_probability": (k, k, n), "p_best": (k, n),
              "value_difference": (k, k, n), "value_ci_low": (k, k, n),
              "value_ci_high": (k, k, n),
              "n_samples": (k,), "n_dropped": (k,), **({"block_length": (k,)} if blocks else {})}
    dtypes = {"verdict": np.dtype("<U25"), "n_samples": np.int64, "n_dropped": np.int64,
              "block_length": np.int64}
    shell = _as_dataset({name: np.zeros(shape, dtype=dtypes.get(name, np.float64))
                         for name, shape in shapes.items()}, stats, labels, dim)
    return template({name: (v.dims, v.dtype, v.attrs) for name, v in shell.data_vars.items()},
                    dict(shell.sizes), {c: shell[c].values for c in shell.coords})


def ranking_table(result: xr.Dataset, statistic: str, dim: str | None = None
                  ) -> pd.DataFrame:
    """The models of a :func:`compare` result for one statistic, by expected rank (ties in
    the order of the labels): ``model``, ``estimate``, ``distance``, ``expected rank``,
    ``P(best)`` and ``better than`` (the models each is significantly better than, in the
    same order), the table the CLI prints and the report shows.

    Examples
    --------
    >>> import xuqcal
    >>> a = xuqcal.synthetic.nig(1000, nu=6, seed=0)
    >>> both = xuqcal.stack_datasets({"A": a, "B": a.assign(uE=a.uE * 0.8)}, dim="model")
    >>> table = ranking_table(compare(both, ["zms"], n_boot=200), "zms")
    >>> table.model.tolist(), table["better than"].tolist()
    (['A', 'B'], [['B'], []])
    """
    dim = dim or next(d for d in MODEL_DIMS if d in result.dims)
    labels = [str(x) for x in np.asarray(result[dim].values).tolist()]
    one = result.sel(statistic=statistic).transpose(dim, "other", "rank")
    expected = (one.rank_probability * one["rank"]).sum("rank").values
    order = np.argsort(expected, kind="stable")
    verdict = one.verdict.values
    return pd.DataFrame({
        "model": [labels[i] for i in order],
        "estimate": one.estimate.values[order],
        "distance": one.distance.values[order],
        "expected rank": expected[order],
        "P(best)": one.p_best.values[order],
        "better than": [[labels[j] for j in order if j != i and verdict[i, j] == "better"]
                        for i in order]})


def _as_dataset(arrays: dict[str, np.ndarray], stats, labels, dim: str) -> xr.Dataset:
    keys = [s.key for s in stats]
    k = len(labels)
    coords = {dim: labels, "other": labels, "statistic": keys,
              "rank": np.arange(1, k + 1)}
    pair = (dim, "other", "statistic")
    return xr.Dataset(
        {
            "estimate": ((dim, "statistic"), arrays["estimate"],
                         {"long_name": "the statistic of each model"}),
            "distance": ((dim, "statistic"), arrays["distance"],
                         {"long_name": "distance to calibration (lower is better)",
                          "definitions": "; ".join(f"{s}: {COMPARED_STATISTICS[s]}"
                                                   for s in keys)}),
            "difference": (pair, arrays["difference"],
                           {"long_name": f"distance of {dim} minus distance of other "
                                         f"(negative: {dim} is better)"}),
            "ci_low": (pair, arrays["ci_low"],
                       {"long_name": "lower bound of the difference"}),
            "ci_high": (pair, arrays["ci_high"],
                        {"long_name": "upper bound of the difference"}),
            "zeta": (pair, arrays["zeta"], {"long_name": "zeta-score of the difference "
                                                         "against 0"}),
            "verdict": (pair, np.asarray(arrays["verdict"], dtype="<U25"),
                        {"long_name": f"{dim} against other: better, worse or no significant "
                                      "difference"}),
            "value_difference": (pair, arrays["value_difference"],
                                 {"long_name": f"statistic of {dim} minus statistic of other "
                                               "(no verdict: the raw values)"}),
            "value_ci_low": (pair, arrays["value_ci_low"],
                             {"long_name": "lower bound of the difference of the values"}),
            "value_ci_high": (pair, arrays["value_ci_high"],
                              {"long_name": "upper bound of the difference of the values"}),
            "rank_probability": ((dim, "rank", "statistic"), arrays["rank_probability"],
                                 {"long_name": "probability of each rank (1: nearest to "
                                               "calibration)"}),
            "p_best": ((dim, "statistic"), arrays["p_best"],
                       {"long_name": "probability of being the nearest to calibration"}),
            "n_samples": ((dim,), arrays["n_samples"],
                          {"long_name": "points compared"}),
            "n_dropped": ((dim,), arrays["n_dropped"],
                          {"long_name": "points of the model left out (absent from another "
                                        "model)"}),
            **({} if "block_length" not in arrays else {
                "block_length": ((dim,), arrays["block_length"],
                                 {"long_name": "points per block of the block bootstrap of "
                                               "the model's points (mean length for "
                                               "stationary)"})}),
        },
        coords=coords,
    )


def compare(
    ds: xr.Dataset,
    statistics: str | Iterable[str] | None = None,
    *,
    dim: str | None = None,
    n_boot: int = defaults.N_BOOT,
    level: float = defaults.LEVEL,
    seed: int = defaults.SEED,
    chunks: int | Sequence[int] | None = None,
    n_bins: int | None = None,
    by: str = defaults.BY,
    pairing: str = "common",
    resample: str = "iid",
    groups: str | None = None,
    block: str | None = None,
    block_length: int | str | None = None,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Compare the models along ``dim`` on the same points: paired differences of their
    distances to calibration, with BCa intervals, ζ-scores and verdicts, and the probability
    of each model's rank.

    See :mod:`xuqcal.analysis.compare` for the pairing, the distances, the intervals and the
    tie rule of the ranks.

    Parameters
    ----------
    ds : xarray.Dataset
        ``E`` and ``uE`` over ``(dim, sample)`` (e.g. :func:`xuqcal.stack_datasets` of the
        models' test sets, which share their sample labels); further extra dimensions
        (``task``, ``seed``, ...) are compared slice by slice.
    statistics : str or sequence of str, optional
        Keys of :data:`COMPARED_STATISTICS`; default ``zms rce cc ence zmse``.
    dim : str, optional
        The dimension of the models; default: ``model``, else ``dataset`` (the dimension of
        :func:`xuqcal.stack_datasets` and of the CLI's several files).
    n_boot : int
        Bootstrap replicates (each resamples the rows once, for every model).
    level : float
        Confidence level of the intervals.
    seed : int
        Seed of the streams (``(seed, "compare", r)``).
    chunks : int or sequence of int, optional
        Replicates per Dask task (the option ``replicate_chunk`` by default); no value
        depends on it.
    n_bins : int, optional
        Bins of the binned statistics (default: the recommended number for the compared
        points).
    by : str
        Binning variable (``"uE"``, or a feature over ``(dim, sample)`` or ``sample``).
    pairing : {"common", "independent"}
        ``"common"``: the points present in every model, resampled together;
        ``"independent"``: each model on its own points and streams (ragged sets;
        percentile intervals).
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        How the points are resampled (:mod:`xuqcal.analysis.dependent`, as
        :func:`xuqcal.bootstrap`): independently (default, unchanged), by whole groups of
        ``groups``, or by blocks of consecutive points in the order of ``block``. With
        ``pairing="common"`` one dependent resample of the common points is drawn per
        replicate from the stream ``(seed, "compare-<resample>", r)`` and evaluated by every
        model, and the BCa acceleration comes from the paired delete-one-group (or
        delete-one-block) jackknife: each unit left out of every model at once. With
        ``pairing="independent"`` each model is resampled alone on its own points, from
        ``(seed, "compare:<label>-<resample>", r)``.
    groups : str, optional
        With ``resample="cluster"``: the variable holding each point's group, over
        ``sample`` (or over ``(dim, sample)`` when it is the same for every model).
    block : str, optional
        With a block scheme: the variable that orders the points, over ``sample`` (or over
        ``(dim, sample)``, the same for every model).
    block_length : int or "auto", optional
        With a block scheme: points per block (mean length for ``"stationary"``);
        ``"auto"``: Politis & White's length of ``Z²`` in the order of ``block``, per slice
        on the compared points, the largest over the models for ``pairing="common"`` (one
        layout for all) and each model's own for ``"independent"``.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``dim``, ``other`` (the same labels: the second model of a pair),
        ``statistic`` and ``rank``: ``estimate``, ``distance``, ``difference``, ``ci_low``,
        ``ci_high``, ``zeta``, ``verdict``, ``value_difference``, ``value_ci_low``,
        ``value_ci_high``, ``rank_probability``, ``p_best``, ``n_samples`` and
        ``n_dropped`` (and, for a block scheme, ``block_length`` over ``dim``: the length
        used, resolved per slice for ``"auto"``); attributes say how it was computed. Computed for
        NumPy-backed data, lazy (one task per slice) for Dask-backed data.

    Examples
    --------
    >>> import xuqcal
    >>> a = xuqcal.synthetic.nig(2000, nu=6, seed=0)
    >>> b = a.assign(uE=a.uE * 0.8)  # the same errors, uncertainties 20 % too small
    >>> both = xuqcal.stack_datasets({"A": a, "B": b}, dim="model")
    >>> result = compare(both, ["zms"], n_boot=500)
    >>> str(result.verdict.sel(model="A", other="B", statistic="zms").values)
    'better'
    >>> float(result.p_best.sel(model="A", statistic="zms"))
    1.0
    """
    (stats, kernel_stats, n_boot, level, seed, chunks, pairing, E, uE, labels, dim, ds,
     dependence) = _compare_iv(ds, statistics, dim=dim, n_boot=n_boot, level=level, seed=seed,
                               chunks=chunks, n_bins=n_bins, by=by, pairing=pairing, E=E,
                               uE=uE, resample=resample, groups=groups, block=block,
                               block_length=block_length)
    by_name = uE if by in (None, defaults.BY) else by
    others = [d for d in ds[E].dims if d not in (dim, SAMPLE_DIM)]
    options = {"stats": stats, "kernel_stats": kernel_stats, "labels": labels,
               "n_boot": n_boot, "level": level, "seed": seed, "chunks": chunks,
               "n_bins": n_bins, "by": by_name, "pairing": pairing}

    names = [E, uE] + ([] if by_name == uE else [by_name])
    if not dependence.iid:
        options["dependence"] = dependence
        names = list(dict.fromkeys([*names, dependence.variable]))

    def body(part: xr.Dataset) -> xr.Dataset:
        e = part[E].transpose(dim, SAMPLE_DIM).values
        u = part[uE].broadcast_like(part[E]).transpose(dim, SAMPLE_DIM).values
        x = (None if by_name == uE
             else part[by_name].broadcast_like(part[E]).transpose(dim, SAMPLE_DIM).values)
        if not dependence.iid:
            options["V"] = np.asarray(part[dependence.variable].values)
        return _as_dataset(_compare_arrays(e, u, x, **options), stats, labels, dim)

    def lazily(part: xr.Dataset) -> xr.Dataset:
        # in one task: its replicate blocks run on the task's own threads (a nested
        # computation on a distributed worker must not wait for the cluster)
        with dask.config.set(scheduler="threads"):
            return body(part)

    def one(part: xr.Dataset) -> xr.Dataset:
        data = part[names]
        if any(data[n].chunks is not None for n in names):
            return lazy_result(lazily, data, _layout(
                stats, labels, dim, blocks=not dependence.iid and dependence.resample
                != "cluster"))
        return body(data)

    if others:
        combos = list(itertools.product(*(range(ds.sizes[d]) for d in others)))
        parts = [one(ds.isel(dict(zip(others, c, strict=True)))) for c in combos]
        result = parts[0] if len(parts) == 1 else _stack(parts, ds, others)
    else:
        result = one(ds)
    if dim in ds.coords:
        result = result.assign_coords({dim: ds[dim].values, "other": ds[dim].values})
    return attach(result, {
        "analysis": "compare", "statistics": " ".join(s.key for s in stats), "dim": dim,
        "n_boot": n_boot, "level": level, "seed": seed, "pairing": pairing,
        "n_bins": n_bins, "by": by_name,
        "interval": ("BCa, paired jackknife" if pairing == "common"
                     else "percentile of independent replicates"),
        "random_streams": "rows drawn from the stream (seed, 'compare', r), the same for "
                          "every model; each model maps a row to its own position",
        "tie_rule": "tied distances share their ranks equally; NaN ranks last",
        **({} if dependence.iid else _dependence_attrs(dependence, pairing)),
    })


def _dependence_attrs(dependence: Dependence, pairing: str) -> dict[str, Any]:
    """The attributes of a comparison under a dependent resample (they replace those of
    the iid pairing)."""
    attrs = dependence.attrs()
    scheme, unit = dependence.resample, attrs.get("jackknife", "")
    if dependence.block_length == AUTO_LENGTH:
        which = ("the largest over the models (one layout for every model)"
                 if pairing == "common" else "each model's own")
        attrs["block_length_rule"] = AUTO_RULE.format(block=dependence.variable, which=which)
        unit = "delete-one-block (blocks of block_length points)"
        attrs["jackknife"] = unit
    if pairing == "common":
        attrs["interval"] = f"BCa, paired {unit} jackknife (each unit left out of every model)"
        attrs["random_streams"] = (f"row multiplicities of a {scheme} resample drawn from the "
                                   f"stream (seed, 'compare-{scheme}', r), the same for every "
                                   "model; each model maps a row to its own position")
    else:
        attrs.pop("jackknife", None)
        attrs["random_streams"] = (f"each model's own {scheme} resample of its points, from "
                                   f"the streams (seed, 'compare:<label>-{scheme}', r)")
    return attrs


def _stack(parts: list[xr.Dataset], ds: xr.Dataset, others: list[str]) -> xr.Dataset:
    """The results of the slices of the other extra dimensions, stacked over them."""
    shape = [ds.sizes[d] for d in others]
    nested: Any = np.empty(shape, dtype=object)
    for index, part in zip(itertools.product(*(range(s) for s in shape)), parts, strict=True):
        nested[index] = part
    stacked = xr.combine_nested(nested.tolist(), concat_dim=others)
    return stacked.assign_coords({d: ds[d].values for d in others if d in ds.coords})
