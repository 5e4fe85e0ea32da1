"""Conditional calibration: local z-score analyses (METHODS §6).

Consistency is calibration conditional on uE, adaptivity calibration conditional on an input
feature X. The data are binned on the conditioning variable (:mod:`xuqcal.binning`) and, in each
bin, a statistic is compared with its target: ``<Z>`` (target 0, Student interval), ``<Z²>``
(target 1, bootstrap BCa), ``Var(Z)`` (1, BCa) or RCE (0, BCa). A bin is *valid* when its
interval contains the target; the **fraction of valid bins** ``f_v`` (with a Wilson-cc
interval) is compared with 0.95.

**Heavy-tail screening** (METHODS §9, ErrViewLib's ``skewup``): every bin also gets the robust
skewness β_GM (:func:`xuqcal.core.statistics.beta_gm`, Harrell–Davis median) of Z²; for the
tail-sensitive statistic ``zms`` (LZMS) a bin above ``heavy_tail_threshold`` (default
``defaults.HEAVY_TAIL_THRESHOLD_LOCAL`` = 0.8) is flagged ``heavy_tail`` and drawn greyed out:
its interval rests on a few large Z² and its verdict is not reliable. The reliability diagram
screens β_GM of uE² (0.6) and of E² (0.8) per bin the same way. The flags add variables only:
``valid`` and ``f_v`` are unchanged.

The per-bin bootstraps of all bins run in one Numba kernel call: bin ``b``'s replicate ``r``
draws from the stream ``(seed, purpose, b, r)``, so results do not depend on scheduling.

**Dependent points**: :func:`local` and :func:`reliability` take ``resample=``
(``"cluster"`` with ``groups=``, or ``"moving"``/``"circular"``/``"stationary"`` with
``block=`` and ``block_length=``), as :func:`xuqcal.bootstrap` does. The rows of the whole data
set are then drawn once per replicate, from the stream ``(seed, "local-<resample>", r)`` (or
``"reliability-<resample>"``), and every bin is evaluated on its points of that resample
(:func:`dependent_group_intervals`); ``"iid"`` (the default) is unchanged, bit for bit.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Sequence

import dask
import dask.array as da
import numpy as np
import xarray as xr

from xuqcal.analysis import dependent as _dep
from xuqcal.analysis.binning import (
    _equal_layout,
    _values,
    check_n_bins,
    equal_count,
    make_bins,
    members,
    n_bins_for,
)
from xuqcal.analysis.lazy import analysis, is_lazy, lazy_result, template, with_layout_attrs
from xuqcal.analysis.resampling import (
    RNG_DESCRIPTION,
    blocks_along_replicate,
    check_count,
    evaluate_row_counts,
)
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core import kernels as K
from xuqcal.core.binning import warn_few_points_per_bin
from xuqcal.core.checks import (
    check_bool,
    check_replicates,
    check_seed,
    check_skewness_threshold,
    minimum_replicates,
    user_stacklevel,
    variable_name,
)
from xuqcal.core.intervals import (
    DegenerateIntervalWarning,
    acceleration,
    bca_interval,
    check_level,
    student_interval,
    wilson_interval,
)
from xuqcal.core.kernels import binomial_count, fill_permutation
from xuqcal.core.provenance import provenance
from xuqcal.core.random import fill_variates, stream_key
from xuqcal.core.statistics import STATISTICS, PreparedData, beta_gm
from xuqcal.io import by_role
from xuqcal.options import convention

#: Statistics of the local analyses and their targets.
TARGETS = {"zm": 0.0, "zms": 1.0, "zv": 1.0, "rce": 0.0, "zisd": 1.0}
TARGET_FRACTION = 0.95


def _points(E, uE) -> PreparedData:
    """The per-point arrays of the kernels (:class:`PreparedData`) kept in data order: the
    group members of the local analyses are row numbers."""
    E = np.asarray(E, dtype=np.float64)
    return PreparedData.from_arrays(E, uE, by_values=np.arange(E.shape[0]), by="row",
                                    needs_bins=False)


def _group_keys(seed: int, purpose: str, n_groups: int) -> np.ndarray:
    """One stream key per group: ``(seed, purpose, group)``."""
    return np.array([stream_key(seed, purpose, g) for g in range(n_groups)], dtype=np.uint64)


def _group_values(points: PreparedData, group_members: np.ndarray, offsets: np.ndarray,
                  statistic: str) -> tuple[np.ndarray, np.ndarray]:
    """The checks of the groups' intervals, the statistic's code and its value in every group
    (:func:`group_intervals`, :func:`dependent_group_intervals`)."""
    stat = STATISTICS[statistic]
    if stat.kind != "moment":
        raise ValueError(f"statistic: {statistic!r} is not a moment statistic")
    sizes = np.diff(offsets)
    if np.any(sizes < 2):
        raise ValueError(f"bins: {int(np.sum(sizes < 2))} bins have fewer than 2 points")
    codes = np.array([stat.code], dtype=np.int64)
    value = np.empty((offsets.shape[0] - 1, 1))
    K.group_statistics(group_members, offsets, codes, points.packed, points.z_shift, value)
    return codes, value[:, 0]


#: Draws (points x replicates) from which :func:`grouped_replicates` splits the replicates of
#: the groups into Dask tasks. Below, one call of the kernel: at the one-call rate of
#: ``benchmarks/measured/ab-local-tasks-issue26-2026-11-26.json`` (8.3 s for 2·10⁹ draws),
#: 10⁸ draws took about 0.4 s, and about half that since the kernel reads compact rows
#: (``ab-local-compact-rows-issue26-2026-11-26.json``, split into tasks).
GROUPED_TASKS_FROM = 10**8


def _grouped_block(shared: tuple, codes: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Replicates ``start .. stop - 1`` of every group, ``(replicate, group, statistic)``;
    ``shared`` is ``(points, keys, group_members, offsets)``."""
    points, keys, group_members, offsets = shared
    out = np.empty((offsets.shape[0] - 1, stop - start, codes.shape[0]))
    K.grouped_bootstrap_block(keys, group_members, offsets, start, stop, codes, points.packed,
                              points.z_shift, out)
    return out.transpose(1, 0, 2)


def grouped_replicates(keys: np.ndarray, group_members: np.ndarray, offsets: np.ndarray,
                       n_boot: int, codes: np.ndarray, points: PreparedData) -> np.ndarray:
    """The ``(group, replicate, statistic)`` bootstrap replicates of every group
    (:func:`~xuqcal.core.kernels.grouped_bootstrap_block`).

    Called in the main thread (an eager analysis) with at least :data:`GROUPED_TASKS_FROM`
    draws, the replicates are computed in chunks by the active Dask scheduler, on every core
    (:func:`~xuqcal.analysis.resampling.blocks_along_replicate`, the tasks of every bootstrap);
    inside a Dask task (any other thread) in one call, so that Dask never runs more threads
    than it was given. Replicate ``r`` of group ``g`` comes from the stream ``(keys[g], r)``
    whatever the chunks: the values are the same either way.
    """
    shared = (points, keys, group_members, offsets)
    draws = int(offsets[-1]) * n_boot
    if threading.current_thread() is not threading.main_thread() or draws < GROUPED_TASKS_FROM:
        replicates = _grouped_block(shared, codes, 0, n_boot)
    else:
        replicates = blocks_along_replicate(_grouped_block, shared, n_boot, None,
                                            (offsets.shape[0] - 1, codes.shape[0]),
                                            codes).compute()
    return np.ascontiguousarray(replicates.transpose(1, 0, 2))


def group_intervals(points: PreparedData, group_members: np.ndarray, offsets: np.ndarray,
                    statistic: str, *, n_boot: int = defaults.N_BOOT_LOCAL,
                    level: float = defaults.LEVEL, seed: int = defaults.SEED,
                    purpose: str = "local") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Value and interval of a moment statistic in every group: ``(value, low, high)``.

    ``zm`` uses the Student interval; the other statistics the BCa interval from ``n_boot``
    replicates per group (exact jackknife acceleration per group).
    """
    codes, value = _group_values(points, group_members, offsets, statistic)
    n_groups = value.size
    if statistic == "zm":
        low, high = np.empty(n_groups), np.empty(n_groups)
        for g in range(n_groups):
            _, low[g], high[g] = student_interval(
                points.z[group_members[offsets[g]:offsets[g + 1]]], level)
        return value, low, high
    keys = _group_keys(seed, purpose, n_groups)
    replicates = grouped_replicates(keys, group_members, offsets, n_boot, codes, points)
    accel = np.empty(n_groups)
    for g in range(n_groups):
        idx = group_members[offsets[g]:offsets[g + 1]]
        jack = np.empty((idx.size, 1))
        e2, u2, z, lnu2 = points.e2[idx], points.u2[idx], points.z[idx], points.lnu2[idx]
        z2 = z ** 2
        totals = K.moment_totals(e2, u2, z, z2, lnu2, points.z_shift)
        K.jackknife_moments(codes, e2, u2, z, z2, lnu2, points.z_shift, totals, 0, idx.size,
                            jack)
        accel[g] = acceleration(jack[:, 0])
    low, high = bca_interval(replicates[:, :, 0], value, level=level, acceleration_value=accel)
    return value, low, high


#: Share of a bin's replicates above which their exclusion (the bin received no point, or
#: too few for the statistic) is warned about: the interval is then conditional on the bin
#: being drawn and rests on noticeably fewer replicates.
EXCLUDED_WARNING_SHARE = 0.05


def dependent_group_intervals(points: PreparedData, E: np.ndarray, uE: np.ndarray,
                              group_members: np.ndarray, offsets: np.ndarray, statistic: str,
                              layout: _dep.RowLayout, *, n_boot: int = defaults.N_BOOT_LOCAL,
                              level: float = defaults.LEVEL, seed: int = defaults.SEED,
                              purpose: str = "local-cluster"
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                         np.ndarray]:
    """Value and BCa interval of a moment statistic in every group under a dependent resample
    of the whole data set: ``(value, low, high, n_units, n_excluded)``.

    ``points`` are the data as :func:`group_intervals` takes them (``_points(E, uE)``) and
    ``E``, ``uE`` their raw values (data order); ``layout`` the :class:`RowLayout` of the
    dependent resample (:func:`xuqcal.analysis.dependent.row_layout`). The values are those of
    :func:`group_intervals` (the same kernel on the same points), in the units of ``points``
    (rescaled for scale safety when ``points.scale_exponent`` is not 0), and so are the
    bounds.

    **Replicates.** Replicate ``r`` draws the row multiplicities of the *whole* data set once,
    from the stream ``(seed, purpose, r)`` (:meth:`RowLayout.fill`: whole groups, or blocks of
    consecutive points), and every group's statistic is recomputed on its points with those
    multiplicities (:func:`xuqcal.analysis.dependent.dependent_replicates`, one
    :class:`PreparedData` per group, rows mapped through ``layout``): the groups of one replicate
    come from the same resample, as their points come from the same data set. A group (a bin) may
    receive no point in a replicate (all its units left out), or too few for the statistic: its
    statistic is then NaN there, and such replicates are **excluded** from that group's interval,
    counted in ``n_excluded`` (the interval is conditional on the group being drawn; a
    :class:`~xuqcal.core.intervals.DegenerateIntervalWarning` when a group loses more than
    :data:`EXCLUDED_WARNING_SHARE` of its replicates; NaN bounds when fewer than
    :func:`~xuqcal.core.checks.minimum_replicates` remain).

    **Acceleration.** From the delete-one-unit jackknife restricted to the units (groups, or
    non-overlapping blocks) **present in the group**: a group's statistic is a function of
    its own points only, so a unit absent from it has no influence on it, and including it
    would add jackknife values equal to the estimate, which only dilutes the acceleration
    with a number of units that depends on the rest of the data. It is the dependent
    counterpart of :func:`group_intervals`' delete-one-point jackknife over the group's own
    points (the same when every unit is one point). A group whose points all belong to one
    unit has no jackknife (and its resamples are copies of it): its bounds are NaN, with a
    warning (``n_units`` says how many units each group holds).
    """
    codes, value = _group_values(points, group_members, offsets, statistic)
    n_groups = value.size
    E = np.asarray(E, dtype=np.float64)
    uE = np.asarray(uE, dtype=np.float64)
    if points.scale_exponent:  # the units of `points` (exact powers of two)
        E, uE = np.ldexp(E, -points.scale_exponent), np.ldexp(uE, -points.scale_exponent)
    models, n_units = [], np.empty(n_groups, dtype=np.int64)
    accel = np.full(n_groups, np.nan)
    for g in range(n_groups):
        idx = np.sort(group_members[offsets[g]:offsets[g + 1]])
        prepared = PreparedData.from_arrays(E[idx], uE[idx], by_values=np.arange(idx.size),
                                            by="row", needs_bins=False)
        rows = np.ascontiguousarray(layout.rows(idx), dtype=np.int64)
        models.append((prepared, rows))
        unit_of_point = layout.unit_of_row[rows]
        units = np.unique(unit_of_point)
        n_units[g] = units.size
        if units.size < 2:
            continue
        counts = (unit_of_point[None, :] != units[:, None]).astype(np.int32)
        jack = np.empty((units.size, 1))
        evaluate_row_counts(prepared, np.arange(idx.size, dtype=np.int64), codes, counts, jack)
        accel[g] = acceleration(prepared.unscale(codes, jack)[:, 0])
    replicates = _dep.dependent_replicates(layout, models, codes, stream_key(seed, purpose), 0,
                                           n_boot)[:, :, 0]
    low, high = np.full(n_groups, np.nan), np.full(n_groups, np.nan)
    finite = np.isfinite(replicates)
    n_excluded = (n_boot - finite.sum(axis=1)).astype(np.int64)
    least = minimum_replicates(level)
    for g in range(n_groups):
        kept = replicates[g, finite[g]]
        if n_units[g] < 2 or kept.size < least or not np.isfinite(accel[g]):
            continue
        lo, hi = bca_interval(kept[None, :], value[g:g + 1], level=level,
                              acceleration_value=accel[g:g + 1])
        low[g], high[g] = lo[0], hi[0]
    warn_dependent_bins(n_units, n_excluded, n_boot, least, layout.resample)
    return value, low, high, n_units, n_excluded


def warn_dependent_bins(n_units: np.ndarray, n_excluded: np.ndarray, n_boot: int,
                           least: int, resample: str) -> None:
    """The warnings of a binned analysis under a dependent resample (:func:`local`,
    :func:`reliability`, :func:`xuqcal.curves.local_coverage`): bins of a single unit, and bins that
    lost many replicates."""
    unit = "group" if resample == "cluster" else "block"
    single = int(np.sum(n_units < 2))
    if single:
        warnings.warn(f"{single} of {n_units.size} bins hold the points of a single {unit} "
                      f"(resample={resample!r}): their resamples are copies of them and they "
                      "have no jackknife, so their bounds are NaN (and they count as not "
                      f"valid); use fewer bins, or bins that cut across the {unit}s",
                      DegenerateIntervalWarning, stacklevel=user_stacklevel())
    share = n_excluded / n_boot
    heavy = (share > EXCLUDED_WARNING_SHARE) & (n_units >= 2)
    if heavy.any():
        few = int(np.sum(n_boot - n_excluded[heavy] < least))
        warnings.warn(f"{int(heavy.sum())} of {n_units.size} bins received no point (or too "
                      "few for the statistic) in more than "
                      f"{EXCLUDED_WARNING_SHARE:.0%} of the {n_boot} replicates of "
                      f"resample={resample!r} (at most {int(n_excluded.max())}): those "
                      "replicates are left out of the bin's interval (n_boot_excluded), "
                      "which is then conditional on the bin being drawn"
                      + (f"; {few} of them kept fewer than {least} replicates: NaN bounds"
                         if few else ""),
                      DegenerateIntervalWarning, stacklevel=user_stacklevel())


def autocorrelation(x: np.ndarray, max_lag: int | None = None) -> np.ndarray:
    """Sample autocorrelation function at lags 0..max_lag (default ``floor(10 log10 N)``).

    Examples
    --------
    >>> autocorrelation(np.array([1.0, -1.0, 1.0, -1.0]), 2).round(2).tolist()
    [1.0, -0.75, 0.5]
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if max_lag is None:
        max_lag = math.floor(10 * math.log10(n))
    max_lag = min(max_lag, n - 1)
    d = x - x.mean()
    denom = np.sum(d * d)
    if max_lag >= 1 and not denom > 0:  # constant values (or NaN): no correlation
        from xuqcal.core.statistics import UndefinedStatisticWarning

        warnings.warn("acf is undefined: the per-bin values are all equal (or not finite)",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
        return np.array([1.0] + [math.nan] * max_lag)
    return np.array([1.0] + [np.sum(d[:-k] * d[k:]) / denom for k in range(1, max_lag + 1)])


def group_beta_gm(values: np.ndarray, group_members: np.ndarray, offsets: np.ndarray
                  ) -> np.ndarray:
    """Robust skewness β_GM (:func:`xuqcal.core.statistics.beta_gm`, Harrell–Davis median) of
    ``values`` in every group (``group_members[offsets[g]:offsets[g + 1]]``, as from
    :func:`xuqcal.analysis.binning.members`); NaN for a group of fewer than 2 points or of
    equal values (β_GM is 0 / 0 there), without NumPy warnings.

    Examples
    --------
    >>> x = np.array([0.1, 0.2, 0.3, 10.0, 1.0, 2.0, 4.0, 9.0, 2.0, 2.0])
    >>> group_beta_gm(x, np.arange(10), np.array([0, 4, 8, 10])).round(3).tolist()
    [0.384, 0.197, nan]
    """
    values = np.asarray(values, dtype=np.float64)
    n_groups = offsets.shape[0] - 1
    out = np.full(n_groups, np.nan)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for g in range(n_groups):
            x = values[group_members[offsets[g]:offsets[g + 1]]]
            if x.size >= 2 and np.all(np.isfinite(x)) and not np.all(x == x[0]):
                out[g] = beta_gm(x)
    return out


def heavy_tailed(beta: np.ndarray, threshold: float | None) -> np.ndarray:
    """``beta > threshold`` per bin (``False`` where ``beta`` is NaN, and everywhere for
    ``threshold=None``: no screening).

    Examples
    --------
    >>> heavy_tailed(np.array([0.6, 0.9, np.nan]), 0.8).tolist()
    [False, True, False]
    """
    beta = np.asarray(beta, dtype=np.float64)
    if threshold is None:
        return np.zeros(beta.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        return beta > threshold


def _threshold_attr(threshold: float | None) -> float | str:
    """A threshold as a NetCDF-safe attribute ("none" for no screening)."""
    return "none" if threshold is None else float(threshold)


def _check_statistic(statistic: str) -> str:
    if not isinstance(statistic, str) or statistic not in TARGETS:
        raise ValueError(f"statistic: local analyses support {', '.join(TARGETS)}; "
                         f"got {statistic!r}")
    return statistic


def _binning_names(by, uE: str):
    """``by`` with ``"uE"`` standing for the uncertainty variable ``uE`` whatever its name."""
    if isinstance(by, str):
        return uE if by == "uE" else by
    if isinstance(by, Sequence):
        return [uE if b == "uE" else b for b in by]
    return by


def _check_bins(bins: object, m: int) -> None:
    """``bins`` of :func:`local`: the bins of the same ``m`` points, from
    :func:`xuqcal.make_bins` (``ds.uqcal.bins``)."""
    what = ("expected the bins of ds from ds.uqcal.bins(...) or xuqcal.make_bins (a "
            "Dataset with bin_index over sample and a bin dimension)")
    if (not isinstance(bins, xr.Dataset) or "bin_index" not in bins.data_vars
            or "bin" not in bins.dims or bins["bin_index"].dims != ("sample",)):
        raise ValueError(f"bins: {what}, got {type(bins).__name__}")
    if bins.sizes["sample"] != m:
        raise ValueError(f"bins: the bins are of {bins.sizes['sample']} points, but ds has {m}; "
                         "make them from the same data set")
    if bins["bin_index"].dtype.kind not in "iu":
        raise ValueError(f"bins: bin_index must hold bin numbers (integers); {what}")
    if bins["bin_index"].chunks is None:  # lazy bins: checked when computed
        _check_bin_index(bins["bin_index"].values, bins.sizes["bin"])


def _check_bin_index(index: np.ndarray, n_bins: int) -> None:
    index = np.asarray(index)
    if index.size and (index.min() < 0 or index.max() >= n_bins):
        raise ValueError(f"bins: bin_index must hold bin numbers from 0 to {n_bins - 1}; "
                         "expected the bins of ds from ds.uqcal.bins(...) or xuqcal.make_bins")


def _local_iv(ds, statistic, *, n_boot, level, seed, E, uE) -> tuple[float, int, int]:
    """Argument checks shared by the local analyses, before any computation: ``statistic``,
    ``level``, ``n_boot`` (replicates of the per-bin BCa intervals: at least ``ceil(2 / (1 -
    level))``, see :func:`xuqcal.core.checks.minimum_replicates`), ``seed``, ``E`` and ``uE``."""
    _check_statistic(statistic)
    level = check_level(level)
    n_boot = (check_replicates(n_boot, level, "n_boot") if statistic != "zm"
              else check_count(n_boot, "n_boot"))
    seed = check_seed(seed)
    check_data_variables(ds, E, uE)
    return level, n_boot, seed


def _n_lags(n_groups: int) -> int:
    """Number of lags of :func:`autocorrelation` of ``n_groups`` per-bin values."""
    return min(math.floor(10 * math.log10(n_groups)), n_groups - 1) + 1


def _local_layout(statistic: str, bins_layout: xr.Dataset, attrs: dict,
                  dependent: bool = False) -> xr.Dataset:
    """The layout of a :func:`local` result over the bins of ``bins_layout`` (``dependent``:
    with the variables of a dependent resample, :data:`DEPENDENT_VARIABLES`)."""
    n_groups = bins_layout.sizes["bin"]
    target = TARGETS[statistic]
    band = 1.96 / math.sqrt(n_groups)
    f8 = np.float64
    layout = template(
        {"count": (("bin",), np.int64, {"long_name": "number of points in the bin"}),
         **{c: (("bin",), f8, dict(bins_layout[c].attrs))
            for c in ("bin_low", "bin_high", "bin_centre") if c in bins_layout.coords},
         "value": (("bin",), f8, {"long_name": f"{statistic} in the bin"}),
         "ci_low": (("bin",), f8, {"long_name": "lower bound of the interval"}),
         "ci_high": (("bin",), f8, {"long_name": "upper bound of the interval"}),
         "valid": (("bin",), bool, {"long_name": f"the interval contains the target "
                                                 f"{target:g}"}),
         "beta_gm_z2": (("bin",), f8, {"long_name": "robust skewness beta_GM of Z² in the bin "
                                                    "(Harrell-Davis median)"}),
         "heavy_tail": (("bin",), bool, {"long_name": "beta_GM(Z²) above heavy_tail_threshold "
                                                     "(zms only): the bin's verdict is not "
                                                     "reliable (not testable, greyed out)"}),
         "acf": (("lag",), f8, {"long_name": "autocorrelation of the per-bin values",
                                "band": band}),
         "fraction_valid": ((), f8, {"long_name": "fraction of valid bins"}),
         "fraction_valid_low": ((), f8, {"long_name": "Wilson-cc lower bound of f_v"}),
         "fraction_valid_high": ((), f8, {"long_name": "Wilson-cc upper bound"}),
         "global_value": ((), f8, {"long_name": f"{statistic} of the whole data set"}),
         **(DEPENDENT_VARIABLES if dependent else {})},
        {"bin": n_groups, "lag": _n_lags(n_groups)},
        {"bin": np.arange(n_groups), "lag": np.arange(_n_lags(n_groups))},
        lazy_coords=("bin_low", "bin_high", "bin_centre"),
        attrs={**{k: v for k, v in bins_layout.attrs.items() if k in ("min_count",
                                                                      "n_bins_requested")},
               **attrs, "acf_band": band, "n_bins": n_groups})
    # what else the bins describe (group labels, the cells and limits of a grid), as the
    # body keeps it: known values stay, lazy ones are computed with the result
    extra = [name for name, variable in bins_layout.variables.items()
             if name not in layout.variables and name not in ("bin_index", "upper_limit")
             and "sample" not in variable.dims]
    return layout.assign({name: bins_layout[name].variable for name in extra
                          if name in bins_layout.data_vars}).assign_coords(
        {name: bins_layout[name].variable for name in extra if name in bins_layout.coords})


#: The per-bin variables of a local analysis under a dependent resample.
DEPENDENT_VARIABLES = {
    "n_units": (("bin",), np.int64, {"long_name": "number of resampling units (groups, or "
                                                   "non-overlapping blocks) with points in the "
                                                   "bin: the units of its jackknife"}),
    "n_boot_excluded": (("bin",), np.int64, {
        "long_name": "replicates left out of the bin's interval: those in which the bin "
                     "received no point (or too few for the statistic)"}),
}


def binned_dependence_attrs(dependence: _dep.Dependence, purpose: str) -> dict:
    """The attributes of a binned analysis under ``dependence`` (:func:`local`,
    :func:`reliability`, :func:`xuqcal.curves.local_coverage`, the recalibration scores; none for
    iid: the attributes are as they always were), ``purpose`` naming its streams.

    Examples
    --------
    >>> binned_dependence_attrs(_dep.Dependence("iid"), "local-iid")
    {}
    >>> binned_dependence_attrs(_dep.Dependence("cluster", "g"), "local-cluster")["groups"]
    'g'
    """
    if dependence.iid:
        return {}
    attrs = dependence.attrs()
    attrs["jackknife"] = f"{attrs['jackknife']}, over the units present in each bin"
    attrs["random_streams"] = (
        f"replicate r draws the rows of the whole data set once from the stream (seed, "
        f"{purpose!r}, r) (xuqcal.analysis.dependent.RowLayout.fill), and every bin's "
        "statistic is evaluated on its points of that resample; replicates in which a bin "
        "receives no point (NaN) are left out of that bin's interval (n_boot_excluded)")
    return attrs


def resample_arguments(dependence: _dep.Dependence) -> dict:
    """The arguments ``resample``, ``groups``, ``block``, ``block_length`` of a checked
    ``dependence`` (for the analyses that pass it on to :func:`local`).

    Examples
    --------
    >>> resample_arguments(_dep.Dependence("cluster", "structure"))
    {'resample': 'cluster', 'groups': 'structure'}
    >>> resample_arguments(_dep.Dependence("iid"))
    {}
    """
    if dependence.iid:
        return {}
    if dependence.resample == "cluster":
        return {"resample": "cluster", "groups": dependence.variable}
    return {"resample": dependence.resample, "block": dependence.variable,
            "block_length": dependence.block_length}


def _warn_bins(bins: xr.Dataset, m: int, *, given: bool) -> None:
    """The rule of :mod:`xuqcal.core.binning` for the bins of :func:`local` (made, given, or
    the layout of equal-count bins): a :class:`~xuqcal.core.binning.FewPointsPerBinWarning`
    when a bin holds fewer than ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points, naming what
    decided the bins. No data are read when the counts are lazy: equal-count bins hold
    ``points_per_bin(m, n_bins)`` points whatever the values; other lazy counts are not
    checked."""
    n = bins.sizes["bin"]
    scheme = bins.attrs.get("scheme")
    counts = bins["count"] if "count" in bins.data_vars else None
    if counts is not None and counts.chunks is None:
        counts = counts.values
    elif counts is None and bins["bin_index"].chunks is None:
        counts = np.bincount(bins["bin_index"].values, minlength=n)
    elif scheme == "equal":
        counts = None  # n equal-count bins of m points (xuqcal.core.binning)
    else:
        return
    minimum = defaults.MIN_POINTS_PER_BIN_LOCAL
    mc = bins.attrs.get("min_count")
    if given:
        argument, source, advice = "bins", f"the given bins (n_bins={n})", "use fewer, larger bins"
    elif scheme == "equal" and "n_bins_requested" not in bins.attrs:
        argument, source, advice = "n_bins", None, None
    elif scheme == "equal":  # min_count decided the number of bins
        argument, source, advice = ("min_count", f"n_bins={n} bins (min_count={mc})",
                                    f"use min_count >= {minimum}")
    elif scheme == "hd":
        argument, source, advice = ("min_count", f"Harrell-Davis bins (min_count={mc}, "
                                                 f"n_bins={n})", f"use min_count >= {minimum}")
    elif scheme == "strata":
        argument, source, advice = ("min_count", f"strata bins (min_count={mc}, n_bins={n})",
                                    f"use min_count >= {minimum}")
    elif scheme == "groups":
        argument, source, advice = ("by", f"the groups of {bins.attrs.get('by')} (n_bins={n})",
                                    "merge the small groups")
    else:
        argument, source, advice = ("n_bins", f"the grid of {bins.attrs.get('n_bins_x')} x "
                                              f"{bins.attrs.get('n_bins_y')} cells (n_bins={n})",
                                    "use fewer bins per variable")
    warn_few_points_per_bin(m, n, counts=counts, argument=argument, source=source,
                            advice=advice)


def _local_body(data: xr.Dataset, *, statistic: str, bins: xr.Dataset | None, by, n_bins: int,
                binning: str, min_count: int | None, n_boot: int, level: float, seed: int,
                E: str, uE: str, screen: float | None = None,
                dependence: _dep.Dependence | None = None) -> xr.Dataset:
    """:func:`local` on NumPy-backed data (equal-count bins are made here when not given);
    ``screen``: the heavy-tail threshold applied (None: no bin flagged); ``dependence``: a
    checked dependent resample with its block length (None: the per-bin iid bootstrap)."""
    if bins is None:
        bins = make_bins(data, by, n_bins=n_bins, binning=binning, min_count=min_count, uE=uE)
    else:
        _check_bin_index(bins.bin_index.values, bins.sizes["bin"])
    n_groups = bins.sizes["bin"]
    group_members, offsets = members(bins.bin_index.values, n_groups)
    points = _points(data[E].values, data[uE].values)
    extra = {}
    if dependence is None:
        value, low, high = group_intervals(points, group_members, offsets, statistic,
                                           n_boot=n_boot, level=level, seed=seed,
                                           purpose=f"local:{statistic}")
    else:
        layout = _dep.row_layout(np.asarray(data[dependence.variable].values), dependence)
        value, low, high, n_units, excluded = dependent_group_intervals(
            points, data[E].values, data[uE].values, group_members, offsets, statistic,
            layout, n_boot=n_boot, level=level, seed=seed,
            purpose=f"local-{dependence.resample}")
        extra = {"n_units": ("bin", n_units), "n_boot_excluded": ("bin", excluded)}
    target = TARGETS[statistic]
    valid = (low <= target) & (target <= high)
    n_valid = int(valid.sum())
    fv_low, fv_high = wilson_interval(n_valid, n_groups)
    acf = autocorrelation(value)
    beta = group_beta_gm(points.z2, group_members, offsets)
    everything = np.arange(points.z.size)
    global_value = np.empty((1, 1))
    K.group_statistics(everything, np.array([0, everything.size]),
                       np.array([STATISTICS[statistic].code]), points.packed, points.z_shift,
                       global_value)
    result = bins.drop_vars([v for v in ("bin_index", "upper_limit") if v in bins])
    result = result.drop_dims("sample", errors="ignore")
    return result.assign(
        value=("bin", value), ci_low=("bin", low), ci_high=("bin", high), valid=("bin", valid),
        beta_gm_z2=("bin", beta), heavy_tail=("bin", heavy_tailed(beta, screen)),
        acf=("lag", acf), fraction_valid=((), n_valid / n_groups),
        fraction_valid_low=((), float(fv_low)), fraction_valid_high=((), float(fv_high)),
        global_value=((), float(global_value[0, 0])), **extra,
    ).assign_coords(lag=np.arange(acf.size))


@broadcast
@by_role
def local(
    ds: xr.Dataset,
    statistic: str = "zms",
    *,
    by: str = defaults.BY,
    n_bins: int | None = None,
    binning: str | None = None,
    min_count: int | None = None,
    n_boot: int = defaults.N_BOOT_LOCAL,
    level: float = defaults.LEVEL,
    seed: int = defaults.SEED,
    bins: xr.Dataset | None = None,
    heavy_tail_threshold: float | None = defaults.HEAVY_TAIL_THRESHOLD_LOCAL,
    resample: str = "iid",
    groups: str | None = None,
    block: str | None = None,
    block_length: int | str | None = None,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Local z-score analysis (LZM, LZMS, ...) of a statistic binned on a variable.

    Lazy on Dask-backed data (one task computes the bins and the per-bin intervals when the
    result is computed; strata bins, whose number depends on the values, compute the binning
    variable first); computed on NumPy-backed data.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and the conditioning variable.
    statistic : {"zms", "zm", "zv", "rce", "zisd"}
        Statistic per bin (targets 1, 0, 1, 0, 1): ``zv`` is ErrViewLib's local z-variance
        (LZV, ``plotLZV``), ``zisd`` = 1 / SD(Z) its local z inverse standard deviation
        (LZISD, ``plotLZISD``).
    by : str
        Conditioning variable: ``uE`` (consistency) or a feature (adaptivity).
    n_bins : int, optional
        Number of equal-count bins (``binning="equal"``). A bin should hold at least
        ``defaults.MIN_POINTS_PER_BIN_LOCAL`` (20) points: the default is
        :func:`xuqcal.core.binning.recommended_n_bins` (M) = ``min(100, M // 20)`` bins
        (``defaults.N_BINS_LOCAL`` = 100 from M = 2000 on, 13 at M = 265; per slice, as the
        report does); more bins than that still run, with a warning. With
        ``binning="grid"``: bins per variable (default: the integer square root of the
        recommended number, 10 × 10 cells from M = 2000 on).
    binning : {"equal", "hd", "strata", "grid"}, optional
        Equal-count bins, Harrell–Davis bins (ErrViewLib's ``genIntervals``:
        :func:`xuqcal.analysis.binning.harrell_davis`, ``min_count`` default 30), or strata
        bins for stratified variables (``min_count`` default 100). Default ``None``: the option
        ``conventions`` (``"equal"``; ``"hd"`` under ``"errviewlib"``,
        :func:`xuqcal.options.convention`).
    min_count : int, optional
        Minimum points per bin (reduces ``n_bins`` for equal-count bins).
    n_boot : int
        Bootstrap replicates per bin (BCa statistics).
    level : float
        Confidence level of the per-bin intervals.
    seed : int
        Seed of the per-bin bootstraps.
    bins : xarray.Dataset, optional
        Precomputed bins (from :func:`xuqcal.make_bins`); overrides ``n_bins``,
        ``binning`` and ``min_count``.
    heavy_tail_threshold : float or None
        Heavy-tail screening of the bins (ErrViewLib's ``skewup`` of ``plotLZMS``): for the
        tail-sensitive statistic ``zms``, a bin whose robust skewness β_GM of Z² is above
        this threshold, in (0, 1), is flagged ``heavy_tail`` (its interval rests on a few
        large Z²: not testable) and drawn greyed out by :func:`xuqcal.plot.local`. Default
        ``defaults.HEAVY_TAIL_THRESHOLD_LOCAL`` (0.8; about 0.64 for normal errors);
        ``None`` flags no bin. The other statistics (``zm``, ``zv``, ``rce``) are not
        screened, as in :func:`xuqcal.validate`: ``beta_gm_z2`` is reported for them, and
        ``heavy_tail`` is all ``False``.
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        How the bootstrap resamples the points, as in :func:`xuqcal.bootstrap` (checked by
        :func:`xuqcal.analysis.dependent.check_dependence`). ``"iid"`` (default): each bin is
        bootstrapped on its own, point by point, from its own streams (unchanged, bit for
        bit). Otherwise the points are dependent and the rows of the **whole** data set are
        resampled once per replicate (whole groups of ``groups``, or blocks of consecutive
        points in the order of ``block``), from the stream ``(seed, "local-<resample>",
        r)``, and each bin's statistic is recomputed on its points of that resample
        (:func:`dependent_group_intervals`): bins share the groups or blocks drawn, as their
        points share the data set. The interval is BCa, its acceleration from the
        delete-one-unit jackknife over the units (groups or non-overlapping blocks) present
        in the bin: units absent from a bin do not influence its statistic. ``zm`` then
        uses that BCa interval too (its Student interval assumes independent points).
        A replicate in which a bin receives no point (all of its units left out) gives no
        value for that bin: such replicates are **left out of that bin's interval** and
        counted in ``n_boot_excluded`` (a warning when more than 5 % of a bin's replicates
        are, NaN bounds when fewer than :func:`~xuqcal.core.checks.minimum_replicates`
        remain); a bin whose points all belong to one unit has NaN bounds (a warning).
    groups : str, optional
        With ``resample="cluster"``: the variable over ``sample`` holding each point's group
        (e.g. ``"structure_id"``).
    block : str, optional
        With a block scheme: the variable over ``sample`` that orders the points (e.g.
        ``"time"``).
    block_length : int or "auto", optional
        With a block scheme: the points per block, or ``"auto"`` for the length of Politis &
        White (2004) of ``Z²`` in the order of ``block``
        (:func:`xuqcal.analysis.dependent.automatic_length`; the data are read when
        ``local`` is called, also for Dask-backed data).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``bin`` (coordinates ``bin_low``, ``bin_high``, ``bin_centre``: range and mean of
        ``by`` in the bin): ``count``, ``value``, ``ci_low``, ``ci_high``, ``valid``,
        ``beta_gm_z2`` (β_GM of Z² in the bin; NaN for constant Z²) and ``heavy_tail``. Over
        ``lag``: ``acf`` of the per-bin values. Scalars: ``fraction_valid`` with
        ``fraction_valid_low``/``_high`` (Wilson-cc; heavy-tailed bins count as usual),
        ``global_value``. Attributes ``heavy_tail_threshold`` (``"none"`` without screening)
        and ``heavy_tail_screening`` (``"zms"``, or ``""`` when no bin can be flagged).
        Under a dependent resample, also ``n_units`` and ``n_boot_excluded`` over ``bin``,
        and the attributes ``resample``, ``groups`` or ``block`` (with ``block_length`` and
        ``block_length_rule``), ``jackknife`` and ``random_streams``.

    Warns
    -----
    FewPointsPerBinWarning
        When a bin holds fewer than ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points (the rule of
        :mod:`xuqcal.core.binning`): the message names ``n_bins`` (or ``min_count``, ``by``,
        ``bins``: what decided the bins), M and the points per bin. Equal-count bins are
        checked before any computation; strata, groups and grids when their bins are known.

    Examples
    --------
    >>> import xuqcal
    >>> loc = local(xuqcal.synthetic.nig(5000, nu=6, seed=0), "zms", n_bins=20, n_boot=500)
    >>> loc.value.dims, float(loc.attrs["target"])
    (('bin',), 1.0)
    >>> loc.beta_gm_z2.dims, loc.heavy_tail.dtype, loc.attrs["heavy_tail_threshold"]
    (('bin',), dtype('bool'), 0.8)
    """
    level, n_boot, seed = _local_iv(ds, statistic, n_boot=n_boot, level=level, seed=seed, E=E,
                                    uE=uE)
    heavy_tail_threshold = check_skewness_threshold(
        heavy_tail_threshold, default=defaults.HEAVY_TAIL_THRESHOLD_LOCAL)
    screen = heavy_tail_threshold if STATISTICS[statistic].tail_sensitive else None
    dependence = _dep.resolved_dependence(ds, resample, groups, block, block_length, E=E,
                                          uE=uE, warn_as="local")
    student = statistic == "zm" and dependence.iid
    if statistic == "zm" and not student:  # a BCa interval: enough replicates for it
        n_boot = check_replicates(n_boot, level, "n_boot")
    names = _binning_names(by, uE)
    m = ds.sizes["sample"]
    binning = convention("binning") if binning is None else binning
    given_bins = bins is not None
    asked = n_bins is not None  # else the recommended number: no warning for equal bins
    if not asked:
        recommended = n_bins_for(ds, None, default=defaults.N_BINS_LOCAL)
        n_bins = math.isqrt(recommended) if binning == "grid" else recommended
    if bins is not None:
        _check_bins(bins, m)
        variables = [E, uE]
    else:
        if not isinstance(names, str) and not (
                isinstance(names, Sequence) and names and all(isinstance(b, str) for b in names)):
            raise ValueError(f"by: expected the name of a variable, or a list of names for grid "
                             f"binning, got {by!r}")
        name = variable_name(ds, names, uE, role="conditioning") if isinstance(names, str) \
            else names
        variables = [E, uE, *([name] if isinstance(name, str) else name)]
        if binning != "equal":  # the number of bins depends on the values: made here
            bins = make_bins(ds, names, n_bins=n_bins, binning=binning, min_count=min_count,
                             uE=uE)
    if not dependence.iid:
        variables = list(dict.fromkeys([*variables, dependence.variable]))
    bins_layout = bins if bins is not None else _equal_layout(m, n_bins, min_count, name, None)
    if asked or given_bins or min_count is not None or binning != "equal":
        _warn_bins(bins_layout, m, given=given_bins)
    attrs = provenance(
        statistic=statistic, target=TARGETS[statistic],
        by=bins_layout.attrs.get("by", by), binning=bins_layout.attrs.get("scheme", binning),
        interval="student" if student else "bca",
        n_boot=0 if student else n_boot, level=level, seed=seed,
        target_fraction_valid=TARGET_FRACTION, random_streams=RNG_DESCRIPTION,
        heavy_tail_threshold=_threshold_attr(heavy_tail_threshold),
        heavy_tail_screening=statistic if screen is not None else "",
        heavy_tail="beta_GM(Z^2) of the bin > heavy_tail_threshold (ErrViewLib's skewup)",
        E=E, uE=uE)
    attrs.update(binned_dependence_attrs(dependence, f"local-{dependence.resample}"))
    kwargs = dict(statistic=statistic, bins=bins, by=names, n_bins=n_bins, binning=binning,
                  min_count=min_count, n_boot=n_boot, level=level, seed=seed, E=E, uE=uE,
                  screen=screen)
    if not dependence.iid:
        kwargs["dependence"] = dependence
    dependent = not dependence.iid
    if is_lazy(ds, variables):
        return lazy_result(_local_body, ds[variables], _local_layout(
            statistic, bins_layout, attrs, dependent), **kwargs)
    result = _local_body(ds[variables], **kwargs)
    return with_layout_attrs(result, _local_layout(statistic, result, attrs, dependent))


def _fraction_valid_for_order(points: PreparedData, values: np.ndarray, statistic: str,
                              n_bins: int, n_boot: int, level: float, seed: int, order_key: int,
                              binomial_noise: bool) -> np.ndarray:
    """``(f_v, noisy f_v)`` of random order ``order_key``: the row order is the Fisher–Yates
    shuffle of stream ``(seed, "order", k)``, the binomial noise counts ``n_bins`` uniforms of
    stream ``(seed, "order:noise", k)``."""
    permutation = np.empty(values.size, dtype=np.int64)
    fill_permutation(stream_key(seed, "order"), order_key, permutation)
    bins = equal_count(values[permutation], n_bins)
    bin_index = np.empty(values.size, dtype=np.int64)
    bin_index[permutation] = bins.bin_index.values
    group_members, offsets = members(bin_index, n_bins)
    _, low, high = group_intervals(points, group_members, offsets, statistic, n_boot=n_boot,
                                   level=level, seed=seed, purpose=f"local:{statistic}")
    target = TARGETS[statistic]
    fv = float(np.mean((low <= target) & (target <= high)))
    noisy = (binomial_count(stream_key(seed, "order:noise"), order_key, n_bins, fv) / n_bins
             if binomial_noise else math.nan)
    return np.array([fv, noisy])


def _order_summary(fv: np.ndarray) -> np.ndarray:
    return np.array([fv.mean(), *np.quantile(fv, [0.025, 0.975])])


@broadcast
@by_role
def order_sensitivity(
    ds: xr.Dataset,
    statistic: str = "zms",
    *,
    by: str,
    n_orders: int = defaults.N_ORDERS,
    n_bins: int | None = None,
    n_boot: int = defaults.N_BOOT_LOCAL,
    level: float = defaults.LEVEL,
    seed: int = defaults.SEED,
    binomial_noise: bool = False,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Sensitivity of ``f_v`` to the order of tied values of a stratified variable.

    For each of ``n_orders`` random row orders (ties of ``by`` broken at random), the
    equal-count bins and ``f_v`` are recomputed. Orders are independent Dask tasks: order ``k``
    is the Fisher–Yates shuffle drawn from the counter-based stream ``(seed, "order", k)`` and
    its binomial noise from ``(seed, "order:noise", k)`` (:mod:`xuqcal.core.kernels`), so the
    result does not depend on scheduling. Lazy on Dask-backed data, computed otherwise.

    Until version 0.1 the orders were drawn from NumPy's PCG64 (``np.random.Generator``),
    against the documented rule that every draw comes from the counter-based streams; that was
    fixed, which changed the orders (and so the values) of this function.

    ``n_bins`` defaults to the recommended number of bins for M points, as in :func:`local`
    (:func:`xuqcal.core.binning.recommended_n_bins`, at most ``defaults.N_BINS_LOCAL``).

    Warns
    -----
    FewPointsPerBinWarning
        When ``n_bins`` bins hold fewer than ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points each
        (see :func:`local`).

    Returns
    -------
    xarray.Dataset
        ``fraction_valid`` over ``order`` (and ``fraction_valid_noisy`` with binomial noise
        ``Binomial(N, f_v) / N`` when asked); ``mean``, ``q025``, ``q975`` of f_v.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=1)
    >>> ds = ds.assign(X=("sample", np.round(ds.uE.values, 1)))
    >>> s = order_sensitivity(ds, by="X", n_orders=4, n_bins=10, n_boot=200)
    >>> s.fraction_valid.sizes["order"]
    4
    """
    level, n_boot, seed = _local_iv(ds, statistic, n_boot=n_boot, level=level, seed=seed, E=E,
                                    uE=uE)
    n_orders = check_count(n_orders, "n_orders", minimum=1)
    by = variable_name(ds, _binning_names(by, uE), uE, role="conditioning")
    binomial_noise = check_bool(binomial_noise, "binomial_noise")
    n_bins = n_bins_for(ds, n_bins, default=defaults.N_BINS_LOCAL)  # warns below the rule
    check_n_bins(ds.sizes["sample"], n_bins, variable=by)  # the bins, before any work
    lazy = is_lazy(ds, [E, uE, by])
    points = dask.delayed(_points, pure=True)(ds[E].data, ds[uE].data)
    values = dask.delayed(_checked_values, pure=True)(ds[by].data, by)
    parts = da.stack([da.from_delayed(dask.delayed(_fraction_valid_for_order, pure=True)(
        points, values, statistic, n_bins, n_boot, level, seed, k, binomial_noise),
        (2,), dtype=np.float64) for k in range(n_orders)])
    summary = da.from_delayed(dask.delayed(_order_summary, pure=True)(parts[:, 0]), (3,),
                              dtype=np.float64)
    out = xr.Dataset(
        {"fraction_valid": ("order", parts[:, 0], {"long_name": "fraction of valid bins"}),
         "mean": ((), summary[0]), "q025": ((), summary[1]), "q975": ((), summary[2])},
        coords={"order": np.arange(n_orders)},
        attrs=provenance(statistic=statistic, by=by, n_bins=n_bins, n_orders=n_orders,
                         n_boot=n_boot, level=level, seed=seed,
                         binomial_noise=int(binomial_noise), E=E, uE=uE),
    )
    if binomial_noise:
        out["fraction_valid_noisy"] = ("order", parts[:, 1],
                                       {"long_name": "f_v with binomial noise"})
    return out if lazy else out.compute()


def _checked_values(values: np.ndarray, by: str) -> np.ndarray:
    """The conditioning variable's values, checked as the bins check them (at compute time for
    Dask-backed data)."""
    return _values(values, by)


def _adversarial_sizes(m: int, min_count: object, n_groups: object,
                       sizes: object) -> tuple[list[int], int]:
    """Argument checks of :func:`adversarial_groups` (before any work): the group sizes (given,
    or M/2, M/4, ... down to ``min_count``) and ``n_groups``. A group needs at least 2 points
    (a BCa interval) and at most M (groups are drawn without replacement)."""
    n_groups = check_count(n_groups, "n_groups", minimum=1)
    if sizes is None:
        min_count = check_count(min_count, "min_count", minimum=2,
                                reason="a group needs 2 points for an interval")
        found, size = [], m // 2
        while size >= min_count:
            found.append(size)
            size //= 2
        if not found:
            raise ValueError(f"min_count: no group size M/2, M/4, ... of M={m} points reaches "
                             f"min_count={min_count}; lower min_count to at most {m // 2} or "
                             "give sizes")
        return found, n_groups
    given = [sizes] if isinstance(sizes, int | np.integer) else sizes
    if isinstance(given, str) or not isinstance(given, Sequence | np.ndarray) or not len(given):
        raise ValueError(f"sizes: expected a non-empty sequence of group sizes (integers from 2 "
                         f"to M={m}), got {sizes!r}")
    for size in given:
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or not 2 <= size <= m:
            raise ValueError(f"sizes: expected group sizes from 2 to M={m} (the number of "
                             f"points; groups are drawn without replacement), got {size!r}")
    if len(set(int(v) for v in given)) != len(given):
        raise ValueError(f"sizes: a group size is listed twice in {list(given)}")
    return [int(v) for v in given], n_groups


def _adversarial_body(data: xr.Dataset, *, statistic: str, sizes: list[int], n_groups: int,
                      n_boot: int, level: float, seed: int, E: str, uE: str) -> xr.Dataset:
    """:func:`adversarial_groups` on NumPy-backed data."""
    m = data.sizes["sample"]
    points = _points(data[E].values, data[uE].values)
    control_eps = np.empty(m)
    fill_variates(stream_key(seed, "adversarial:control"), 0, 0, 0.0, control_eps)
    control = _points(control_eps, np.ones(m))
    target = TARGETS[statistic]
    columns = {name: [] for name in _ADVERSARIAL_COLUMNS}
    for size in sizes:
        key = stream_key(seed, "adversarial", int(size))
        group_members = np.empty(n_groups * size, dtype=np.int64)
        for g in range(n_groups):
            K.sample_without_replacement(key, g, m, size,
                                         group_members[g * size:(g + 1) * size])
        offsets = np.arange(n_groups + 1, dtype=np.int64) * size
        for prefix, points_of in (("", points), ("control_", control)):
            _, low, high = group_intervals(points_of, group_members, offsets, statistic,
                                           n_boot=n_boot, level=level, seed=seed,
                                           purpose=f"adversarial:{size}")
            k = int(np.sum((low <= target) & (target <= high)))
            lo, hi = wilson_interval(k, n_groups)
            columns[f"{prefix}fraction_valid"].append(k / n_groups)
            columns["fraction_valid_low" if not prefix else "control_low"].append(float(lo))
            columns["fraction_valid_high" if not prefix else "control_high"].append(float(hi))
    return xr.Dataset({name: ("count", np.array(values)) for name, values in columns.items()},
                      coords={"count": np.array(sizes)})


_ADVERSARIAL_COLUMNS = {
    "fraction_valid": "fraction of valid groups",
    "fraction_valid_low": "Wilson-cc lower bound of the fraction of valid groups",
    "fraction_valid_high": "Wilson-cc upper bound of the fraction of valid groups",
    "control_fraction_valid": "fraction of valid groups of the control sample",
    "control_low": "Wilson-cc lower bound of the control fraction",
    "control_high": "Wilson-cc upper bound of the control fraction",
}


@broadcast
@by_role
def adversarial_groups(
    ds: xr.Dataset,
    statistic: str = "zms",
    *,
    min_count: int = defaults.MIN_COUNT_ADVERSARIAL,
    n_groups: int = defaults.N_GROUPS_ADVERSARIAL,
    n_boot: int = defaults.N_BOOT_GROUPS,
    level: float = defaults.LEVEL,
    seed: int = defaults.SEED,
    sizes: Sequence[int] | None = None,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Adversarial group validation (METHODS §6): random groups of sizes M/2, M/4, ...

    For each size, ``n_groups`` random groups are drawn without replacement; the fraction
    whose interval of the statistic contains its target is reported with a Wilson-cc interval,
    together with the same on a control sample ``Z ~ N(0, 1)`` of the same size (same groups).
    Not interpretable per group, but it needs no conditioning variable. Lazy on Dask-backed
    data, computed otherwise. Groups of fewer than ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points
    (``sizes``, or ``min_count`` below it) give a
    :class:`~xuqcal.core.binning.FewPointsPerBinWarning`, as bins do in :func:`local`.

    Returns
    -------
    xarray.Dataset
        Over ``count`` (the number of points of a group): ``fraction_valid``,
        ``fraction_valid_low``, ``fraction_valid_high`` and the same of the control,
        ``control_fraction_valid``, ``control_low``, ``control_high``.

    Examples
    --------
    >>> import xuqcal
    >>> adv = adversarial_groups(xuqcal.synthetic.nig(800, nu=6, seed=0), n_groups=20, n_boot=200)
    >>> adv["count"].values.tolist()
    [400, 200, 100]
    """
    level, n_boot, seed = _local_iv(ds, statistic, n_boot=n_boot, level=level, seed=seed, E=E,
                                    uE=uE)
    m = ds.sizes["sample"]
    given = sizes is not None
    sizes, n_groups = _adversarial_sizes(m, min_count, n_groups, sizes)
    warn_few_points_per_bin(
        m, len(sizes), counts=sizes, argument="sizes" if given else "min_count",
        source=f"groups of sizes {', '.join(map(str, sizes))}" + (
            "" if given else f" (min_count={min_count})"), per="group",
        advice=f"use groups of at least {defaults.MIN_POINTS_PER_BIN_LOCAL} points")
    target = TARGETS[statistic]
    layout = template(
        {name: (("count",), np.float64, {"long_name": long_name})
         for name, long_name in _ADVERSARIAL_COLUMNS.items()},
        {"count": len(sizes)}, {"count": np.array(sizes)},
        attrs=provenance(statistic=statistic, target=target, n_groups=n_groups, n_boot=n_boot,
                         level=level, seed=seed, control="Z ~ N(0, 1), same size and groups",
                         E=E, uE=uE))
    kwargs = dict(statistic=statistic, sizes=sizes, n_groups=n_groups, n_boot=n_boot,
                  level=level, seed=seed, E=E, uE=uE)
    return analysis(_adversarial_body, ds, [E, uE], lambda: layout, **kwargs)


def _reliability_body(data: xr.Dataset, *, by, n_bins: int, n_boot: int, level: float,
                      seed: int, E: str, uE: str, threshold_uE2: float | None = None,
                      threshold_E2: float | None = None,
                      dependence: _dep.Dependence | None = None,
                      binning: str = "equal") -> xr.Dataset:
    """:func:`reliability` on NumPy-backed data (``dependence``: as in :func:`_local_body`)."""
    bins = make_bins(data, by, n_bins=n_bins, uE=uE, binning=binning)
    group_members, offsets = members(bins.bin_index.values, bins.sizes["bin"])
    points = _points(data[E].values, data[uE].values)
    extra = {}
    if dependence is None:
        rmse, low, high = group_intervals(points, group_members, offsets, "rmse",
                                          n_boot=n_boot, level=level, seed=seed,
                                          purpose="reliability")
    else:
        layout = _dep.row_layout(np.asarray(data[dependence.variable].values), dependence)
        rmse, low, high, n_units, excluded = dependent_group_intervals(
            points, data[E].values, data[uE].values, group_members, offsets, "rmse", layout,
            n_boot=n_boot, level=level, seed=seed,
            purpose=f"reliability-{dependence.resample}")
        extra = {"n_units": ("bin", n_units), "n_boot_excluded": ("bin", excluded)}
    rmv = np.empty((bins.sizes["bin"], 1))
    K.group_statistics(group_members, offsets, np.array([STATISTICS["rmv"].code]),
                       points.packed, points.z_shift, rmv)
    if points.scale_exponent:  # data rescaled for scale safety: back to their units (exact)
        rmse, low, high, rmv = (np.ldexp(x, points.scale_exponent) for x in (rmse, low, high,
                                                                             rmv))
    # β_GM is scale-free: the squares of the (possibly rescaled) points serve as they are
    beta_u2 = group_beta_gm(points.u2, group_members, offsets)
    beta_e2 = group_beta_gm(points.e2, group_members, offsets)
    heavy = heavy_tailed(beta_u2, threshold_uE2) | heavy_tailed(beta_e2, threshold_E2)
    result = bins.drop_vars(["bin_index", "upper_limit"]).drop_dims("sample", errors="ignore")
    return result.assign(rmv=("bin", rmv[:, 0]), rmse=("bin", rmse), rmse_low=("bin", low),
                         rmse_high=("bin", high), beta_gm_uE2=("bin", beta_u2),
                         beta_gm_E2=("bin", beta_e2), heavy_tail=("bin", heavy), **extra)


@broadcast
@by_role
def reliability(
    ds: xr.Dataset,
    *,
    n_bins: int | None = None,
    by: str = defaults.BY,
    n_boot: int = defaults.N_BOOT_RELIABILITY,
    level: float = defaults.LEVEL,
    seed: int = defaults.SEED,
    heavy_tail_threshold_uE2: float | None = defaults.HEAVY_TAIL_THRESHOLD_UE2,
    heavy_tail_threshold_E2: float | None = defaults.HEAVY_TAIL_THRESHOLD_E2,
    resample: str = "iid",
    groups: str | None = None,
    block: str | None = None,
    block_length: int | str | None = None,
    binning: str | None = None,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Reliability diagram data: per equal-count bin of ``by``, RMV and RMSE with a bootstrap
    BCa interval on RMSE. Lazy on Dask-backed data, computed otherwise.

    ``n_bins`` follows the rule of :mod:`xuqcal.core.binning`: its default is
    :func:`~xuqcal.core.binning.recommended_n_bins` ``(M, defaults.N_BINS)`` (20 bins from
    M = 400 on, per slice), and bins given of fewer than ``defaults.MIN_POINTS_PER_BIN_LOCAL``
    (20) points give a :class:`~xuqcal.core.binning.FewPointsPerBinWarning`.

    Heavy-tail screening (ErrViewLib's ``skewupUnc`` and ``skewupErr`` of ``plotRelDiag``):
    a bin whose robust skewness β_GM of uE² is above ``heavy_tail_threshold_uE2`` (its RMV is
    dominated by a few large uncertainties) or whose β_GM of E² is above
    ``heavy_tail_threshold_E2`` (its RMSE by a few large errors) is flagged ``heavy_tail``
    and drawn greyed out by :func:`xuqcal.plot.reliability`. The values and intervals do not
    change.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and the variable ``by``.
    n_bins : int, optional
        Number of equal-count bins (default: the recommended number, see above).
    by : str
        Binning variable (``uE`` by default).
    n_boot, level, seed : int, float, int
        Bootstrap replicates per bin, confidence level and seed of the RMSE intervals.
    heavy_tail_threshold_uE2, heavy_tail_threshold_E2 : float or None
        Thresholds on β_GM of uE² and of E² per bin, in (0, 1); defaults
        ``defaults.HEAVY_TAIL_THRESHOLD_UE2`` (0.6) and ``defaults.HEAVY_TAIL_THRESHOLD_E2``
        (0.8). ``None`` switches that screen off.
    resample, groups, block, block_length
        How the bootstrap of the RMSE intervals resamples the points, as in :func:`local`:
        ``"iid"`` (default, unchanged: each bin on its own); ``"cluster"`` (with ``groups``)
        or a block scheme (with ``block`` and ``block_length``, an int or ``"auto"``): the
        rows of the whole data set are drawn once per replicate from the stream ``(seed,
        "reliability-<resample>", r)`` and each bin's RMSE recomputed on its points of that
        resample, BCa with the delete-one-unit jackknife over the units present in the bin
        (:func:`dependent_group_intervals`); replicates in which a bin receives no point are
        left out of that bin's interval (``n_boot_excluded``).
    binning : {"equal", "hd"}, optional
        Equal-count bins, or Harrell–Davis bins (ErrViewLib's ``genIntervals``, at least
        ``defaults.POP_MIN_HD`` = 30 points per bin: fewer bins when needed). Default
        ``None``: the option ``conventions`` (:func:`xuqcal.options.convention`).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``bin`` (coordinates ``bin_low``, ``bin_high``, ``bin_centre``): ``count``,
        ``rmv``, ``rmse``, ``rmse_low``, ``rmse_high``, ``beta_gm_uE2``, ``beta_gm_E2``
        (β_GM of uE² and E² in the bin, Harrell–Davis median; NaN for constant values) and
        ``heavy_tail``. Under a dependent resample, also ``n_units`` and
        ``n_boot_excluded`` over ``bin``, and the attributes of the resample (``resample``,
        ``groups`` or ``block``, ``block_length``, ``block_length_rule``, ``jackknife``,
        ``random_streams``).

    Examples
    --------
    >>> import xuqcal
    >>> rel = reliability(xuqcal.synthetic.nig(2000, nu=6, seed=0), n_bins=10, n_boot=300)
    >>> sorted(v for v in rel.data_vars if v.startswith("rm"))
    ['rmse', 'rmse_high', 'rmse_low', 'rmv']
    >>> sorted(v for v in rel.data_vars if v.startswith(("beta", "heavy")))
    ['beta_gm_E2', 'beta_gm_uE2', 'heavy_tail']
    """
    level, n_boot, seed = _local_iv(ds, "rce", n_boot=n_boot, level=level, seed=seed, E=E,
                                    uE=uE)
    threshold_uE2 = check_skewness_threshold(
        heavy_tail_threshold_uE2, "heavy_tail_threshold_uE2", of="uE^2",
        default=defaults.HEAVY_TAIL_THRESHOLD_UE2)
    threshold_E2 = check_skewness_threshold(
        heavy_tail_threshold_E2, "heavy_tail_threshold_E2", of="E^2",
        default=defaults.HEAVY_TAIL_THRESHOLD_E2)
    dependence = _dep.resolved_dependence(ds, resample, groups, block, block_length, E=E,
                                          uE=uE, warn_as="reliability")
    name = variable_name(ds, _binning_names(by, uE), uE, role="conditioning")
    binning = convention("binning", binning)
    n_bins = n_bins_for(ds, n_bins)  # warns below the rule
    bins_layout = _equal_layout(ds.sizes["sample"], n_bins,
                                defaults.POP_MIN_HD if binning == "hd" else None, name, None,
                                binning)
    n_bins = bins_layout.sizes["bin"] if binning == "hd" else n_bins
    f8 = np.float64
    layout = template(
        {"count": (("bin",), np.int64, {"long_name": "number of points in the bin"}),
         **{c: (("bin",), f8, dict(bins_layout[c].attrs))
            for c in ("bin_low", "bin_high", "bin_centre")},
         "rmv": (("bin",), f8, {"long_name": "root mean variance in the bin"}),
         "rmse": (("bin",), f8, {"long_name": "root mean squared error in the bin"}),
         "rmse_low": (("bin",), f8, {"long_name": "lower bound of the BCa interval of RMSE"}),
         "rmse_high": (("bin",), f8, {"long_name": "upper bound of the BCa interval of RMSE"}),
         "beta_gm_uE2": (("bin",), f8, {"long_name": "robust skewness beta_GM of uE² in the "
                                                     "bin (Harrell-Davis median)"}),
         "beta_gm_E2": (("bin",), f8, {"long_name": "robust skewness beta_GM of E² in the bin "
                                                    "(Harrell-Davis median)"}),
         "heavy_tail": (("bin",), bool, {"long_name": "beta_GM(uE²) > heavy_tail_threshold_uE2 "
                                                     "or beta_GM(E²) > heavy_tail_threshold_E2: "
                                                     "not reliable (greyed out)"}),
         **(DEPENDENT_VARIABLES if not dependence.iid else {})},
        {"bin": n_bins}, {"bin": np.arange(n_bins)},
        lazy_coords=("bin_low", "bin_high", "bin_centre"),
        attrs=provenance({**bins_layout.attrs, "n_boot": n_boot, "level": level, "seed": seed,
                          "heavy_tail_threshold_uE2": _threshold_attr(threshold_uE2),
                          "heavy_tail_threshold_E2": _threshold_attr(threshold_E2),
                          "E": E, "uE": uE,
                          **binned_dependence_attrs(dependence,
                                              f"reliability-{dependence.resample}")}))
    variables = list(dict.fromkeys([E, uE, name]))
    kwargs = dict(by=name, n_bins=n_bins, n_boot=n_boot, level=level, seed=seed, E=E, uE=uE,
                  threshold_uE2=threshold_uE2, threshold_E2=threshold_E2)
    if binning != "equal":  # the default call is unchanged
        kwargs["binning"] = binning
    if not dependence.iid:
        variables = list(dict.fromkeys([*variables, dependence.variable]))
        kwargs["dependence"] = dependence
    return analysis(_reliability_body, ds, variables, lambda: layout, **kwargs)
