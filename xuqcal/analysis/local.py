"""Conditional calibration: local z-score analyses (METHODS §6).

Consistency is calibration conditional on uE, adaptivity calibration conditional on an input
feature X. The data are binned on the conditioning variable (:mod:`xuqcal.binning`) and, in each
bin, a statistic is compared with its target: ``<Z>`` (target 0, Student interval), ``<Z²>``
(target 1, bootstrap BCa), ``Var(Z)`` (1, BCa) or RCE (0, BCa). A bin is *valid* when its
interval contains the target; the **fraction of valid bins** ``f_v`` (with a Wilson-cc
interval) is compared with 0.95.

The per-bin bootstraps of all bins run in one Numba kernel call: bin ``b``'s replicate ``r``
draws from the stream ``(seed, purpose, b, r)``, so results do not depend on scheduling.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import dask
import numpy as np
import xarray as xr

from xuqcal._version import __version__
from xuqcal.analysis.binning import equal_count, make_bins, members
from xuqcal.analysis.resampling import RNG_DESCRIPTION, check_count
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import kernels as K
from xuqcal.core.checks import check_bool, check_replicates, check_seed, variable_name
from xuqcal.core.intervals import (
    acceleration,
    bca_interval,
    check_level,
    student_interval,
    wilson_interval,
)
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import STATISTICS, PreparedData

#: Statistics of the local analyses and their targets.
TARGETS = {"zm": 0.0, "zms": 1.0, "zv": 1.0, "rce": 0.0}
TARGET_FRACTION = 0.95


def _points(E, uE) -> PreparedData:
    """The per-point arrays of the kernels (:class:`PreparedData`) kept in data order: the
    group members of the local analyses are row numbers."""
    E = np.asarray(E, dtype=np.float64)
    return PreparedData.from_arrays(E, uE, by_values=np.arange(E.shape[0]), by="row",
                                    needs_bins=False)


def _group_keys(seed: int, purpose: str, n_groups: int) -> np.ndarray:
    """One stream key per group: ``(seed, purpose, group)``."""
    base = np.random.SeedSequence(int(seed), spawn_key=(zlib.crc32(purpose.encode()),))
    return np.array([s.generate_state(1, dtype=np.uint64)[0] for s in base.spawn(n_groups)],
                    dtype=np.uint64)


def group_intervals(points: PreparedData, group_members: np.ndarray, offsets: np.ndarray,
                    statistic: str, *, n_boot: int = 5000, level: float = 0.95, seed: int = 0,
                    purpose: str = "local") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Value and interval of a moment statistic in every group: ``(value, low, high)``.

    ``zm`` uses the Student interval; the other statistics the BCa interval from ``n``
    replicates per group (exact jackknife acceleration per group).
    """
    stat = STATISTICS[statistic]
    if stat.kind != "moment":
        raise ValueError(f"statistic: {statistic!r} is not a moment statistic")
    n_groups = offsets.shape[0] - 1
    sizes = np.diff(offsets)
    if np.any(sizes < 2):
        raise ValueError(f"bins: {int(np.sum(sizes < 2))} bins have fewer than 2 points")
    codes = np.array([stat.code], dtype=np.int64)
    value = np.empty((n_groups, 1))
    K.group_statistics(group_members, offsets, codes, points.packed, points.z_shift, value)
    value = value[:, 0]
    if statistic == "zm":
        low, high = np.empty(n_groups), np.empty(n_groups)
        for g in range(n_groups):
            _, low[g], high[g] = student_interval(
                points.z[group_members[offsets[g]:offsets[g + 1]]], level)
        return value, low, high
    keys = _group_keys(seed, purpose, n_groups)
    replicates = np.empty((n_groups, n_boot, 1))
    K.grouped_bootstrap_block(keys, group_members, offsets, 0, n_boot, codes, points.packed,
                              points.z_shift, replicates)
    accel = np.empty(n_groups)
    for g in range(n_groups):
        idx = group_members[offsets[g]:offsets[g + 1]]
        jack = np.empty((idx.size, 1))
        K.jackknife_moments(codes, points.e2[idx], points.u2[idx], points.z[idx],
                            points.z[idx] ** 2, points.lnu2[idx], points.z_shift, 0, idx.size,
                            jack)
        accel[g] = acceleration(jack[:, 0])
    low, high = bca_interval(replicates[:, :, 0], value, level=level, acceleration_value=accel)
    return value, low, high


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
        import warnings

        from xuqcal.core.statistics import UndefinedStatisticWarning

        warnings.warn("acf is undefined: the per-bin values are all equal (or not finite)",
                      UndefinedStatisticWarning, stacklevel=2)
        return np.array([1.0] + [math.nan] * max_lag)
    return np.array([1.0] + [np.sum(d[:-k] * d[k:]) / denom for k in range(1, max_lag + 1)])


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
    index = np.asarray(bins["bin_index"].values)
    n_bins = bins.sizes["bin"]
    if index.dtype.kind not in "iu" or (index.size and (index.min() < 0 or index.max() >= n_bins)):
        raise ValueError(f"bins: bin_index must hold bin numbers from 0 to {n_bins - 1}; {what}")


def _local_iv(ds, statistic, *, n_boot, level, seed, E, uE) -> tuple[float, int, int]:
    """Argument checks shared by the local analyses, before any computation: ``statistic``,
    ``level``, ``n`` (replicates of the per-bin BCa intervals: at least ``ceil(2 / (1 -
    level))``, see :func:`xuqcal.core.checks.minimum_replicates`), ``seed``, ``E`` and ``uE``."""
    _check_statistic(statistic)
    level = check_level(level)
    n_boot = check_replicates(n_boot, level, "n_boot") if statistic != "zm" else check_count(n_boot, "n_boot")
    seed = check_seed(seed)
    check_data_variables(ds, E, uE)
    return level, n_boot, seed


def local(
    ds: xr.Dataset,
    statistic: str = "zms",
    *,
    by: str = "uE",
    n_bins: int = 100,
    binning: str = "equal",
    min_count: int | None = None,
    n_boot: int = 5000,
    level: float = 0.95,
    seed: int = 0,
    bins: xr.Dataset | None = None,
    E: str = "E",
    uE: str = "uE",
) -> xr.Dataset:
    """Local z-score analysis (LZM, LZMS, ...) of a statistic binned on a variable.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and the conditioning variable.
    statistic : {"zms", "zm", "zv", "rce"}
        Statistic per bin (targets 1, 0, 1, 0).
    by : str
        Conditioning variable: ``uE`` (consistency) or a feature (adaptivity).
    n_bins : int
        Number of equal-count bins (``binning="equal"``).
    binning : {"equal", "strata"}
        Equal-count bins, or strata bins for stratified variables (``min_count`` default 100).
    min_count : int, optional
        Minimum points per bin (reduces ``n_bins`` for equal-count bins).
    n : int
        Bootstrap replicates per bin (BCa statistics).
    level : float
        Confidence level of the per-bin intervals.
    seed : int
        Seed of the per-bin bootstraps.
    bins : xarray.Dataset, optional
        Precomputed bins (from :func:`xuqcal.make_bins`); overrides ``n_bins``,
        ``binning`` and ``min_count``.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``bin``: ``count``, ``low``, ``high``, ``centre``, ``value``, ``ci_low``,
        ``ci_high``, ``valid``. Over ``lag``: ``acf`` of the per-bin values. Scalars:
        ``fraction_valid`` with ``fraction_valid_low``/``_high`` (Wilson-cc), ``global_value``.

    Examples
    --------
    >>> import xuqcal
    >>> loc = local(xuqcal.synthetic.nig(5000, nu=6, seed=0), "zms", n_bins=20, n_boot=500)
    >>> loc.value.dims, float(loc.attrs["target"])
    (('bin',), 1.0)
    """
    level, n_boot, seed = _local_iv(ds, statistic, n_boot=n_boot, level=level, seed=seed, E=E, uE=uE)
    if bins is None:
        bins = make_bins(ds, _binning_names(by, uE), n_bins=n_bins, binning=binning,
                         min_count=min_count)
    else:
        _check_bins(bins, ds.sizes["sample"])
    n_groups = bins.sizes["bin"]
    group_members, offsets = members(bins.bin_index.values, n_groups)
    points = _points(ds[E].values, ds[uE].values)
    value, low, high = group_intervals(points, group_members, offsets, statistic, n_boot=n_boot,
                                       level=level, seed=seed, purpose=f"local:{statistic}")
    target = TARGETS[statistic]
    valid = (low <= target) & (target <= high)
    n_valid = int(valid.sum())
    fv_low, fv_high = wilson_interval(n_valid, n_groups)
    acf = autocorrelation(value)
    everything = np.arange(points.z.size)
    global_value = np.empty((1, 1))
    K.group_statistics(everything, np.array([0, everything.size]),
                       np.array([STATISTICS[statistic].code]), points.packed, points.z_shift,
                       global_value)
    result = bins.drop_vars([v for v in ("bin_index", "upper_limit") if v in bins])
    result = result.drop_dims("sample", errors="ignore")
    result = result.assign(
        value=("bin", value, {"long_name": f"{statistic} in the bin"}),
        ci_low=("bin", low, {"long_name": "lower bound of the interval"}),
        ci_high=("bin", high, {"long_name": "upper bound of the interval"}),
        valid=("bin", valid, {"long_name": f"the interval contains the target {target:g}"}),
        acf=("lag", acf, {"long_name": "autocorrelation of the per-bin values",
                          "band": 1.96 / math.sqrt(n_groups)}),
        fraction_valid=((), n_valid / n_groups, {"long_name": "fraction of valid bins"}),
        fraction_valid_low=((), float(fv_low), {"long_name": "Wilson-cc lower bound of f_v"}),
        fraction_valid_high=((), float(fv_high), {"long_name": "Wilson-cc upper bound"}),
        global_value=((), float(global_value[0, 0]),
                      {"long_name": f"{statistic} of the whole data set"}),
    ).assign_coords(lag=np.arange(acf.size))
    result.attrs.update(
        statistic=statistic, target=target, by=bins.attrs.get("by", by),
        binning=bins.attrs.get("scheme", binning), n_bins=n_groups,
        interval="student" if statistic == "zm" else "bca", n_replicates=0
        if statistic == "zm" else n_boot, level=level, seed=seed,
        target_fraction_valid=TARGET_FRACTION, acf_band=1.96 / math.sqrt(n_groups),
        random_streams=RNG_DESCRIPTION, xuqcal_version=__version__,
    )
    return result


def _fraction_valid_for_order(points: PreparedData, values: np.ndarray, statistic: str,
                              n_bins: int, n: int, level: float, seed: int, order_key: int,
                              binomial_noise: bool) -> tuple[float, float]:
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        int(seed), spawn_key=(zlib.crc32(b"order"), int(order_key)))))
    permutation = rng.permutation(values.size)
    bins = equal_count(values[permutation], n_bins)
    bin_index = np.empty(values.size, dtype=np.int64)
    bin_index[permutation] = bins.bin_index.values
    group_members, offsets = members(bin_index, n_bins)
    _, low, high = group_intervals(points, group_members, offsets, statistic, n_boot=n, level=level,
                                   seed=seed, purpose=f"local:{statistic}")
    target = TARGETS[statistic]
    fv = float(np.mean((low <= target) & (target <= high)))
    noisy = rng.binomial(n_bins, fv) / n_bins if binomial_noise else math.nan
    return fv, noisy


def order_sensitivity(
    ds: xr.Dataset,
    statistic: str = "zms",
    *,
    by: str,
    n_orders: int = 1000,
    n_bins: int = 100,
    n_boot: int = 5000,
    level: float = 0.95,
    seed: int = 0,
    binomial_noise: bool = False,
    E: str = "E",
    uE: str = "uE",
) -> xr.Dataset:
    """Sensitivity of ``f_v`` to the order of tied values of a stratified variable.

    For each of ``n_orders`` random row orders (ties of ``by`` broken at random), the
    equal-count bins and ``f_v`` are recomputed. Orders are independent Dask tasks (stream
    ``(seed, "order", k)``), run in parallel by the current scheduler.

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
    level, n_boot, seed = _local_iv(ds, statistic, n_boot=n_boot, level=level, seed=seed, E=E, uE=uE)
    n_orders = check_count(n_orders, "n_orders", minimum=1)
    by = variable_name(ds, by, uE, role="conditioning")
    points = _points(ds[E].values, ds[uE].values)
    binomial_noise = check_bool(binomial_noise, "binomial_noise")
    values = np.asarray(ds[by].values)
    equal_count(values, n_bins, by=by)  # checks the bins before any work
    tasks = [dask.delayed(_fraction_valid_for_order, pure=True)(
        points, values, statistic, n_bins, n_boot, level, seed, k, binomial_noise)
        for k in range(n_orders)]
    results = np.array(dask.compute(*tasks), dtype=np.float64)
    fv = results[:, 0]
    out = xr.Dataset(
        {"fraction_valid": ("order", fv, {"long_name": "fraction of valid bins"}),
         "mean": ((), float(fv.mean())),
         "q025": ((), float(np.quantile(fv, 0.025))),
         "q975": ((), float(np.quantile(fv, 0.975)))},
        coords={"order": np.arange(n_orders)},
        attrs={"statistic": statistic, "by": by, "n_bins": n_bins, "n_orders": n_orders,
               "n_replicates": n_boot, "level": level, "seed": seed,
               "binomial_noise": int(binomial_noise), "xuqcal_version": __version__},
    )
    if binomial_noise:
        out["fraction_valid_noisy"] = ("order", results[:, 1],
                                       {"long_name": "f_v with binomial noise"})
    return out


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


def adversarial_groups(
    ds: xr.Dataset,
    *,
    statistic: str = "zms",
    min_count: int = 100,
    n_groups: int = 200,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    sizes: Sequence[int] | None = None,
    E: str = "E",
    uE: str = "uE",
) -> xr.Dataset:
    """Adversarial group validation (METHODS §6): random groups of sizes M/2, M/4, ...

    For each size, ``n_groups`` random groups are drawn without replacement; the fraction
    whose interval of the statistic contains its target is reported with a Wilson-cc interval,
    together with the same on a control sample ``Z ~ N(0, 1)`` of the same size (same groups).
    Not interpretable per group, but it needs no conditioning variable.

    Examples
    --------
    >>> import xuqcal
    >>> adv = adversarial_groups(xuqcal.synthetic.nig(800, nu=6, seed=0), n_groups=20, n_boot=200)
    >>> adv["size"].values.tolist()
    [400, 200, 100]
    """
    level, n_boot, seed = _local_iv(ds, statistic, n_boot=n_boot, level=level, seed=seed, E=E, uE=uE)
    m = ds.sizes["sample"]
    sizes, n_groups = _adversarial_sizes(m, min_count, n_groups, sizes)
    points = _points(ds[E].values, ds[uE].values)
    control_eps = np.empty(m)
    from xuqcal.core.random import fill_variates

    fill_variates(stream_key(seed, "adversarial:control"), 0, 0, 0.0, control_eps)
    control = _points(control_eps, np.ones(m))
    target = TARGETS[statistic]
    columns = {name: [] for name in ("fraction_valid", "fraction_valid_low",
                                     "fraction_valid_high", "control_fraction_valid",
                                     "control_low", "control_high")}
    for size in sizes:
        key = stream_key(seed, "adversarial", int(size))
        group_members = np.empty(n_groups * size, dtype=np.int64)
        for g in range(n_groups):
            K.sample_without_replacement(key, g, m, size,
                                         group_members[g * size:(g + 1) * size])
        offsets = np.arange(n_groups + 1, dtype=np.int64) * size
        for prefix, data in (("", points), ("control_", control)):
            _, low, high = group_intervals(data, group_members, offsets, statistic, n_boot=n_boot,
                                           level=level, seed=seed,
                                           purpose=f"adversarial:{size}")
            k = int(np.sum((low <= target) & (target <= high)))
            lo, hi = wilson_interval(k, n_groups)
            columns[f"{prefix}fraction_valid"].append(k / n_groups)
            columns["fraction_valid_low" if not prefix else "control_low"].append(float(lo))
            columns["fraction_valid_high" if not prefix else "control_high"].append(float(hi))
    return xr.Dataset(
        {name: ("size", np.array(values)) for name, values in columns.items()},
        coords={"size": np.array(sizes)},
        attrs={"statistic": statistic, "target": target, "n_groups": n_groups,
               "n_replicates": n_boot, "level": level, "seed": seed,
               "control": "Z ~ N(0, 1), same size and groups", "xuqcal_version": __version__},
    )


def reliability(
    ds: xr.Dataset,
    *,
    n_bins: int = 20,
    by: str = "uE",
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    E: str = "E",
    uE: str = "uE",
) -> xr.Dataset:
    """Reliability diagram data: per equal-count bin of ``by``, RMV and RMSE with a bootstrap
    BCa interval on RMSE.

    Examples
    --------
    >>> import xuqcal
    >>> rel = reliability(xuqcal.synthetic.nig(2000, nu=6, seed=0), n_bins=10, n_boot=300)
    >>> sorted(v for v in rel.data_vars if v.startswith("rm"))
    ['rmse', 'rmse_high', 'rmse_low', 'rmv']
    """
    level, n_boot, seed = _local_iv(ds, "rce", n_boot=n_boot, level=level, seed=seed, E=E, uE=uE)
    bins = make_bins(ds, _binning_names(by, uE), n_bins=n_bins)
    group_members, offsets = members(bins.bin_index.values, bins.sizes["bin"])
    points = _points(ds[E].values, ds[uE].values)
    rmse, low, high = group_intervals(points, group_members, offsets, "rmse", n_boot=n_boot, level=level,
                                      seed=seed, purpose="reliability")
    rmv = np.empty((bins.sizes["bin"], 1))
    K.group_statistics(group_members, offsets, np.array([STATISTICS["rmv"].code]),
                       points.packed, points.z_shift, rmv)
    if points.scale_exponent:  # data rescaled for scale safety: back to their units (exact)
        rmse, low, high, rmv = (np.ldexp(x, points.scale_exponent) for x in (rmse, low, high,
                                                                             rmv))
    result = bins.drop_vars(["bin_index", "upper_limit"]).drop_dims("sample", errors="ignore")
    return result.assign(
        rmv=("bin", rmv[:, 0], {"long_name": "root mean variance in the bin"}),
        rmse=("bin", rmse, {"long_name": "root mean squared error in the bin"}),
        rmse_low=("bin", low, {"long_name": "lower bound of the BCa interval of RMSE"}),
        rmse_high=("bin", high, {"long_name": "upper bound of the BCa interval of RMSE"}),
    ).assign_attrs(n_replicates=n_boot, level=level, seed=seed, xuqcal_version=__version__)
