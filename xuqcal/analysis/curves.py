"""Curves of conditional calibration (METHODS §6): confidence curve with its probabilistic
reference, ablation of the largest uncertainties, calibration curve and local coverage.

* :func:`confidence_curve`: sort by decreasing ``uE`` (stable: ties keep the row order), remove
  the first ``floor(k M / 100)`` points for ``k`` percent, and report the RMSE (or MAE) of the
  rest, in O(M) per curve from a reverse cumulative sum. Its reference is the mean curve of
  ``n_mc`` synthetic error sets ``uE * eps``, ``eps ~ D``, in the same order, with a 95 % band
  (2.5 / 97.5 % quantiles of the simulated curves).
* :func:`ablation`: ``Δstat(k) = stat(remaining) - stat(full)`` for ``k`` = 0–10 % removed,
  against the full set's bootstrap BCa interval expressed as offsets from its estimate.
* :func:`calibration_curve`: the observed fraction ``mean(|E| <= uE q_D((1 + p) / 2))`` against
  the probability level ``p``, with Wilson-cc intervals and the miscalibration area
  ``∫ |observed - p| dp`` (trapezoid rule over the grid of ``p``).
* :func:`local_coverage`: the coverage of the ``p``-interval per equal-count bin of a variable
  (or per given bin), valid when its Wilson-cc interval overlaps ``[p - tol, p + tol]``, with
  the heavy-tail screen β_GM(Z²) per bin (METHODS §9).

Replicate ``r`` of the confidence-curve reference draws ``eps`` from the stream
``(seed, "confidence_curve:D", r)``: exactly
``get_generator(D).sample(M, seed=seed, replicate=r, purpose="confidence_curve")``, with
``eps[i]`` multiplying the uncertainty of row ``i``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

import numpy as np
import xarray as xr

from xuqcal.analysis import dependent as _dep
from xuqcal.analysis.binning import (
    _values,
    check_n_bins,
    equal_count_bounds,
    equal_count_order,
    make_bins,
    members,
    n_bins_for,
)
from xuqcal.analysis.coverage import interval_bounds
from xuqcal.analysis.lazy import analysis, is_lazy, lazy_result, placeholder, with_layout_attrs
from xuqcal.analysis.local import (
    _check_bin_index,
    _check_bins,
    _threshold_attr,
    _warn_bins,
    binned_dependence_attrs,
    group_beta_gm,
    heavy_tailed,
    warn_dependent_bins,
)
from xuqcal.analysis.resampling import bootstrap, check_count, count_blocks
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core.checks import (
    check_bool,
    check_replicates,
    check_seed,
    check_skewness_threshold,
    check_tolerance,
    minimum_replicates,
    user_stacklevel,
    variable_name,
)
from xuqcal.core.coverage import coverage_rule as _coverage_rule
from xuqcal.core.generators import Generator, check_generators
from xuqcal.core.intervals import (
    acceleration,
    bca_interval,
    check_level,
    coverage_validity,
    wilson_interval,
)
from xuqcal.core.kernels import reference_curves, tail_curve
from xuqcal.core.provenance import provenance
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import (
    check_values,
    compute,
    get_statistics,
    point_columns,
    power_of_two_scale,
    statistic_coords,
)
from xuqcal.io import by_role
from xuqcal.io.expressions import _format_rows
from xuqcal.io.quantiles import recorded_coverage_level
from xuqcal.options import convention as _conv

__all__ = ["ablation", "calibration_curve", "confidence_curve", "local_coverage"]

#: Statistics of the confidence curve.
CONFIDENCE_STATISTICS = ("rmse", "mae")
#: Default percents removed: confidence curve 0..99, ablation 0..10.
DEFAULT_CONFIDENCE_K = np.arange(100)
DEFAULT_ABLATION_K = np.arange(11)
#: Default coverage levels of the calibration curve.
DEFAULT_P = np.linspace(0.01, 0.99, 99)
#: The dimension of a calibration curve: its coverage levels (``p`` until version 0.1).
CURVE_DIM = "coverage_level"
#: The name of that dimension in results written until version 0.1.
LEGACY_CURVE_DIM = "p"
ORDER_DESCRIPTION = ("points sorted by decreasing uE (stable: ties keep the row order); k % "
                     "removed = the first floor(k M / 100) points of that order")


# --------------------------------------------------------------------------------- helpers


def _arrays(data: xr.Dataset, E: str, uE: str, extra: Sequence[str] = ()
            ) -> tuple[np.ndarray, np.ndarray]:
    """Checked float arrays of the errors and uncertainties of NumPy-backed ``data`` (the
    values: NaN/inf, ``uE <= 0``, ..., and finite values of the ``extra`` variables; for
    Dask-backed input this runs inside the graph, at compute time)."""
    errors = np.ascontiguousarray(data[E].values, dtype=np.float64)
    uncertainties = np.ascontiguousarray(data[uE].values, dtype=np.float64)
    check_values(errors, uncertainties)
    for name in extra:
        if name not in (E, uE):
            _values(data[name].values, name)
    return errors, uncertainties


def _check_size(m: int, minimum: int, what: str) -> None:
    if m < minimum:
        raise ValueError(f"ds: {what} needs at least {minimum} points, but the data have {m}")


def _floats(values, name: str, what: str) -> np.ndarray:
    """``values`` as a float64 array, or a ValueError naming ``name``."""
    if isinstance(values, str | bytes) or (
            isinstance(values, Sequence) and any(isinstance(v, bool | str | bytes) or v is None
                                                 for v in values)):
        raise ValueError(f"{name}: expected a sequence of {what} (numbers), got {values!r}")
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a sequence of {what} (numbers), got "
                         f"{values!r}") from None


def _percents(k, default: np.ndarray) -> np.ndarray:
    """Validate percents removed: 1-D, finite, strictly increasing, in [0, 100)."""
    values = default if k is None else np.atleast_1d(_floats(k, "k", "percents"))
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"k: expected a non-empty 1-D sequence of percents, got {k!r}")
    if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values >= 100):
        bad = values[~(np.isfinite(values) & (values >= 0) & (values < 100))]
        raise ValueError(
            f"k: percents removed must lie in [0, 100), got {', '.join(f'{v:g}' for v in bad)}"
        )
    if np.any(np.diff(values) <= 0):
        raise ValueError("k: percents removed must be strictly increasing")
    return values


def _n_removed(k: np.ndarray, m: int) -> np.ndarray:
    """``floor(k M / 100)``, exact for integer percents (integer arithmetic), and rounded to
    nine decimals before the floor otherwise (so that 0.1 % of 1000 points is 1 point)."""
    if np.all(k == np.round(k)):
        return (k.astype(np.int64) * m) // 100
    return np.floor(np.round(k * m / 100.0, 9)).astype(np.int64)


def _decreasing_order(uncertainties: np.ndarray) -> np.ndarray:
    """Stable permutation by decreasing uncertainty (ties keep the row order)."""
    return np.argsort(-uncertainties, kind="stable")


def _k_coords(k: np.ndarray, removed: np.ndarray) -> dict:
    return {
        "k": ("k", k, {"long_name": "largest uncertainties removed", "units": "%"}),
        "fraction_removed": ("k", k / 100.0,
                             {"long_name": "fraction of the largest uncertainties removed"}),
        "n_removed": ("k", removed, {"long_name": "number of points removed"}),
    }


def _probability(p, name: str = "p") -> float:
    if isinstance(p, bool) or not isinstance(p, float | int | np.floating | np.integer) \
            or not 0.0 < float(p) < 1.0:
        raise ValueError(f"{name}: expected a probability level in (0, 1), got {p!r}")
    return float(p)


def _interval_quantile(generator: Generator, p: np.ndarray) -> np.ndarray:
    """Half-width ``q_D((1 + p) / 2)`` of the central ``p``-interval of unit-variance D."""
    return np.asarray(generator.distribution().ppf((1.0 + p) / 2.0), dtype=np.float64)


# ------------------------------------------------------------------------- confidence curve


@broadcast
@by_role
def confidence_curve(
    ds: xr.Dataset,
    *,
    statistic: str = "rmse",
    k=None,
    generator: str | Generator | None = defaults.GENERATORS[0],
    n_mc: int = defaults.N_MC_CURVE,
    seed: int = defaults.SEED,
    level: float = defaults.LEVEL,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Confidence curve (RMSE or MAE after removing the largest uncertainties) and its
    probabilistic reference.

    The points are sorted by decreasing ``uE`` (stable sort: tied uncertainties keep their row
    order); for each percent ``k`` the first ``floor(k M / 100)`` points are removed and the
    statistic of the remaining errors is reported. The reference keeps the uncertainties and
    draws ``n_mc`` synthetic error sets ``uE * eps``, ``eps ~ D``; their curves (same order)
    give the mean curve and a band of their ``(1 ∓ level) / 2`` quantiles (NumPy's linear
    interpolation). Each curve costs O(M); only one synthetic set is held at a time.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    statistic : {"rmse", "mae"}
        Root mean square or mean absolute value of the remaining errors.
    k : array_like of float, optional
        Percents of the largest uncertainties removed, strictly increasing in [0, 100)
        (default 0, 1, ..., 99).
    generator : str or Generator or None
        Generative distribution D of the reference (``"normal"``, ``"t6"``, ...); ``None``
        skips the reference.
    n_mc : int
        Number of synthetic error sets (≥ 2).
    seed : int
        Seed: replicate ``r`` uses ``D.sample(M, seed=seed, replicate=r,
        purpose="confidence_curve")``.
    level : float
        Coverage of the reference band (0.95: the 2.5 % and 97.5 % quantiles).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``k`` (percent removed; coordinates ``fraction_removed`` = k / 100 and
        ``n_removed``): ``value`` (the data curve) and, with a reference, ``reference_mean``,
        ``reference_low``, ``reference_high`` and ``in_band`` (``low <= value <= high``). The
        attributes record the statistic, generator, n_mc, seed, level and xuqcal version.

    Raises
    ------
    ValueError
        For an unknown statistic or generator, percents outside [0, 100), ``n_mc < 2`` or
        fewer than 2 points.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=0)
    >>> cc = confidence_curve(ds, n_mc=200)
    >>> cc.sizes["k"], cc.attrs["statistic"], cc.attrs["generator"]
    (100, 'rmse', 'normal')
    >>> bool(cc.in_band.mean() > 0.5)
    True
    """
    key = statistic.lower() if isinstance(statistic, str) else statistic
    if key not in CONFIDENCE_STATISTICS:
        raise ValueError(f"statistic: unknown confidence-curve statistic {statistic!r}; "
                         f"choose one of {', '.join(CONFIDENCE_STATISTICS)}")
    gen = None if generator is None else check_generators(generator, "generator")[0]
    percents = _percents(k, DEFAULT_CONFIDENCE_K)
    level = check_level(level)
    seed = check_seed(seed)
    check_data_variables(ds, E, uE)
    if gen is not None:
        n_mc = check_count(n_mc, "n_mc")
    m = ds.sizes["sample"]
    _check_size(m, 2, "confidence_curve")
    removed = _n_removed(percents, m)
    attrs = {"statistic": key, "generator": gen.name if gen is not None else "",
             "n_mc": n_mc if gen is not None else 0, "seed": seed, "level": level,
             "n_samples": m, "order": ORDER_DESCRIPTION, "E": E, "uE": uE}
    if gen is not None:
        band = f"{100 * (1 - level) / 2:g}-{100 * (1 + level) / 2:g} % quantiles"
        attrs.update(
            band=f"{band} (linear interpolation) of the simulated curves",
            random_streams=(f"eps of replicate r = get_generator({gen.name!r}).sample(M, "
                            "seed=seed, replicate=r, purpose='confidence_curve')"))
    n_k = percents.size
    layout = _confidence_dataset(
        {name: placeholder(n_k, bool if name == "in_band" else np.float64)
         for name in ("value", *(("reference_mean", "reference_low", "reference_high",
                                  "in_band") if gen is not None else ()))},
        key, gen, level, percents, removed, provenance(attrs))
    kwargs = dict(use_mae=key == "mae", gen=gen, n_mc=n_mc, seed=seed, level=level,
                  removed=removed, E=E, uE=uE)
    return analysis(_confidence_body, ds, [E, uE], lambda: layout, **kwargs)


def _confidence_body(data: xr.Dataset, *, use_mae: bool, gen: Generator | None, n_mc: int,
                     seed: int, level: float, removed: np.ndarray, E: str, uE: str
                     ) -> xr.Dataset:
    """The curves of :func:`confidence_curve` on NumPy-backed data."""
    errors, uncertainties = _arrays(data, E, uE)
    # scale safety: squares of data of scale 1e300 (1e-300) overflow (lose precision): the
    # curves of E 2^-s and uE 2^-s are computed and scaled back exactly (s = 0 normally)
    scale = power_of_two_scale(errors, uncertainties)
    if scale:
        errors, uncertainties = np.ldexp(errors, -scale), np.ldexp(uncertainties, -scale)
    order = _decreasing_order(uncertainties)
    value = np.empty(removed.size)
    tail_curve(errors[order], removed, use_mae, value)
    if scale:
        with np.errstate(over="ignore"):
            value = np.ldexp(value, scale)
    values = {"value": value}
    if gen is not None:
        curves = np.empty((n_mc, removed.size))
        reference_curves(stream_key(seed, f"confidence_curve:{gen.name}"), gen.code,
                         gen.parameter, order, uncertainties[order], removed, use_mae, 0, n_mc,
                         curves)
        mean = curves.mean(axis=0)
        low, high = np.quantile(curves, [(1.0 - level) / 2.0, (1.0 + level) / 2.0], axis=0)
        if scale:
            with np.errstate(over="ignore"):
                mean, low, high = (np.ldexp(x, scale) for x in (mean, low, high))
        values.update(reference_mean=mean, reference_low=low, reference_high=high,
                      in_band=(low <= value) & (value <= high))
    return xr.Dataset({name: ("k", v) for name, v in values.items()})


def _confidence_dataset(values: dict, key: str, gen: Generator | None, level: float,
                        percents: np.ndarray, removed: np.ndarray, attrs: dict) -> xr.Dataset:
    """A :func:`confidence_curve` result from its values (or placeholders: its layout)."""
    label = key.upper()
    long_names = {"value": f"{label} of the remaining errors"}
    if gen is not None:
        band = f"{100 * (1 - level) / 2:g}-{100 * (1 + level) / 2:g} % quantiles"
        long_names.update(
            reference_mean=f"mean {label} of simulated error sets uE * eps, eps ~ {gen.name}",
            reference_low=f"lower bound of the reference band ({band} of the simulated curves)",
            reference_high=f"upper bound of the reference band ({band} of the simulated "
                           "curves)",
            in_band="data curve inside the reference band")
    return xr.Dataset({name: ("k", values[name], {"long_name": long_names[name]})
                       for name in long_names},
                      coords=_k_coords(percents, removed), attrs=attrs)


# -------------------------------------------------------------------------------- ablation


@broadcast
@by_role
def ablation(
    ds: xr.Dataset,
    *,
    statistics: str | Iterable[str] = ("zms", "rce"),
    k=None,
    n_boot: int = defaults.N_BOOT_ABLATION,
    seed: int = defaults.SEED,
    level: float = defaults.LEVEL,
    n_bins: int | None = None,
    by: str = defaults.BY,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Change of statistics when the largest uncertainties are removed (ablation curve).

    For each percent ``k`` (default 0, 1, ..., 10), the first ``floor(k M / 100)`` points in
    the order of decreasing ``uE`` (stable) are removed and ``Δstat(k) = stat(remaining) -
    stat(full)`` is computed (the remaining points keep their row order). The full set's
    bootstrap BCa interval is returned as offsets from its estimate (``ci_low - estimate``,
    ``ci_high - estimate``), so that a Δ outside ``[ci_low_offset, ci_high_offset]`` means that
    removing the points moves the statistic outside the full-set interval.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    statistics : str or sequence of str
        Statistic keys (see :data:`xuqcal.core.statistics.STATISTICS`).
    k : array_like of float, optional
        Percents removed, strictly increasing in [0, 100).
    n_boot : int
        Bootstrap replicates of the full-set interval.
    seed : int
        Seed of the bootstrap.
    level : float
        Confidence level of the interval.
    n_bins, by : int or None, str
        Equal-count bins of binned statistics (re-made on each remaining set); ``n_bins``
        defaults to the recommended number for the M points of the full set (as
        :func:`xuqcal.stats`), and a number given with fewer points per bin warns.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``statistic × k``: ``value`` (statistic of the remaining points), ``delta`` and
        ``outside`` (Δ outside the offsets); over ``statistic``: ``estimate``, ``ci_low``,
        ``ci_high``, ``ci_low_offset``, ``ci_high_offset``.

    Examples
    --------
    >>> import xuqcal
    >>> ab = ablation(xuqcal.synthetic.nig(2000, nu=6, seed=0), n_boot=500)
    >>> ab.delta.dims, ab.sizes["k"]
    (('statistic', 'k'), 11)
    >>> float(ab.delta.sel(k=0).max())
    0.0
    """
    chosen = get_statistics(statistics)
    keys = [s.key for s in chosen]
    percents = _percents(k, DEFAULT_ABLATION_K)
    level = check_level(level)
    n_boot = check_replicates(n_boot, level, "n_boot")
    seed = check_seed(seed)
    check_data_variables(ds, E, uE)
    needs_bins = any(s.needs_bins for s in chosen)
    if needs_bins:
        by = variable_name(ds, by, uE)
    m = ds.sizes["sample"]
    _check_size(m, 3, "ablation")
    removed = _n_removed(percents, m)
    if m - removed[-1] < 3:
        raise ValueError(f"k: removing {percents[-1]:g} % of {m} points leaves fewer "
                         "than 3 points")
    asked = n_bins  # the bootstrap below resolves it alike, and warns for a number given
    n_bins = n_bins if n_bins is not None else n_bins_for(ds, None, statistics=chosen)
    if needs_bins:
        check_n_bins(int(m - removed[-1]), n_bins, variable="the remaining data")
    else:  # unused, but a bad value is still a mistake worth naming
        check_count(n_bins, "n_bins", 1)
    variables = list(dict.fromkeys([E, uE, *([by] if needs_bins else [])]))
    bs = bootstrap(ds, keys, n_boot=n_boot, method="bca", level=level, seed=seed, n_bins=asked,
                   by=by, E=E, uE=uE)
    attrs = provenance(method="bca", level=level, n_boot=n_boot, seed=seed,
                       n_bins=n_bins if needs_bins else 0, by=by, n_samples=m,
                       order=ORDER_DESCRIPTION, E=E, uE=uE)
    shapes = {"statistic": len(keys), "k": percents.size}
    layout = _ablation_dataset(
        {name: placeholder(tuple(shapes[d] for d in dims), bool if name == "outside" else
                           np.float64) for name, (dims, _) in _ABLATION_VARIABLES.items()},
        chosen, percents, removed, attrs)
    kwargs = dict(keys=keys, n_bins=n_bins, by=by, removed=removed, use_by=needs_bins and by != uE,
                  E=E, uE=uE)
    if is_lazy(ds, variables):
        return lazy_result(_ablation_body, (ds[variables], bs), layout, **kwargs)
    return with_layout_attrs(_ablation_body((ds[variables], bs.compute()), **kwargs), layout)


_ABLATION_VARIABLES = {
    "value": (("statistic", "k"), "statistic of the remaining points"),
    "delta": (("statistic", "k"), "statistic of the remaining points minus the statistic of "
                                  "the full set"),
    "outside": (("statistic", "k"), "delta outside the full-set interval"),
    "estimate": (("statistic",), "statistic of the full set"),
    "ci_low": (("statistic",), "full-set BCa interval, lower"),
    "ci_high": (("statistic",), "full-set BCa interval, upper"),
    "ci_low_offset": (("statistic",), "ci_low - estimate of the full set"),
    "ci_high_offset": (("statistic",), "ci_high - estimate of the full set"),
}


def _ablation_dataset(values: dict, chosen, percents: np.ndarray, removed: np.ndarray,
                      attrs: dict) -> xr.Dataset:
    """An :func:`ablation` result from its values (or placeholders: its layout)."""
    return xr.Dataset(
        {name: (dims, values[name], {"long_name": long_name})
         for name, (dims, long_name) in _ABLATION_VARIABLES.items()},
        coords={**statistic_coords(chosen), **_k_coords(percents, removed)}, attrs=attrs)


def _ablation_body(parts, *, keys, n_bins, by, removed, use_by, E, uE) -> xr.Dataset:
    """:func:`ablation` on NumPy-backed data and the computed bootstrap of the full set."""
    data, bs = parts
    errors, uncertainties = _arrays(data, E, uE, extra=[by] if use_by else [])
    by_values = np.asarray(data[by].values) if use_by else None
    order = _decreasing_order(uncertainties)
    value = np.empty((len(keys), removed.size))
    for j, n in enumerate(removed):
        keep = np.sort(order[n:])
        value[:, j] = compute(errors[keep], uncertainties[keep], keys, n_bins=n_bins, by=by,
                              by_values=None if by_values is None else by_values[keep])
    full = compute(errors, uncertainties, keys, n_bins=n_bins, by=by, by_values=by_values)
    ci_low = bs.ci_low.values
    ci_high = bs.ci_high.values
    delta = value - full[:, np.newaxis]
    lo_offset = ci_low - full
    hi_offset = ci_high - full
    outside = (delta < lo_offset[:, np.newaxis]) | (delta > hi_offset[:, np.newaxis])
    values = {"value": value, "delta": delta, "outside": outside, "estimate": full,
              "ci_low": ci_low, "ci_high": ci_high, "ci_low_offset": lo_offset,
              "ci_high_offset": hi_offset}
    return xr.Dataset({name: (dims, values[name])
                       for name, (dims, _) in _ABLATION_VARIABLES.items()},
                      coords={"statistic": bs.statistic.values})


# ----------------------------------------------------------------------- calibration curve


def _levels(coverage_levels) -> np.ndarray:
    values = DEFAULT_P if coverage_levels is None else np.atleast_1d(
        _floats(coverage_levels, "coverage_levels", "coverage levels"))
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"coverage_levels: expected a non-empty 1-D sequence of coverage "
                         f"levels, got {coverage_levels!r}")
    bad = values[~((values > 0) & (values < 1))]
    if bad.size:
        raise ValueError(f"coverage_levels: coverage levels must lie in (0, 1), got "
                         f"{', '.join(f'{v:g}' for v in bad)}")
    if np.any(np.diff(values) <= 0):
        raise ValueError("coverage_levels: coverage levels must be strictly increasing")
    return values


def _count_inside(abs_errors: np.ndarray, uncertainties: np.ndarray, quantiles: np.ndarray
                  ) -> np.ndarray:
    """``count(|E| <= uE * q)`` for each q (one pass over the points per level)."""
    return np.array([np.count_nonzero(abs_errors <= uncertainties * q) for q in quantiles],
                    dtype=np.int64)


@broadcast
@by_role
def calibration_curve(
    ds: xr.Dataset,
    *,
    generator: str | Generator = defaults.GENERATORS[0],
    coverage_levels=None,
    level: float = defaults.LEVEL,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Calibration curve: observed coverage of central intervals against their probability.

    For each level ``p``, the central ``p``-interval of ``E = uE * eps``, ``eps ~ D``, is
    ``|E| <= uE q_D((1 + p) / 2)``; the observed fraction of points inside it is compared with
    ``p`` and given a Wilson score interval with continuity correction. The miscalibration
    area is ``∫ |observed - p| dp`` by the trapezoid rule over the grid of ``p`` (the part of
    [0, 1] outside the grid is not included).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    generator : str or Generator
        Generative distribution D (``"normal"``, ``"t6"``, ...).
    coverage_levels : array_like of float, optional
        Coverage levels ``p`` (nominal coverages of the central intervals), strictly
        increasing in (0, 1) (default ``np.linspace(0.01, 0.99, 99)``).
    level : float
        Confidence level of the Wilson intervals.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``coverage_level`` (the levels ``p``; coordinate ``half_width`` =
        q_D((1 + p) / 2)): ``observed``, ``count`` (points inside), ``ci_low``, ``ci_high``
        and ``valid`` (the interval contains p); the scalar ``miscalibration_area`` (NaN for
        a single level). Until version 0.1 the dimension was named ``p``; the readers of
        results (:func:`xuqcal.plot.calibration_curve`) accept both.

    Examples
    --------
    >>> import xuqcal
    >>> cal = calibration_curve(xuqcal.synthetic.nig(5000, nu=6, seed=0))
    >>> cal.sizes["coverage_level"], bool(cal.miscalibration_area < 0.02)
    (99, True)
    >>> float(calibration_curve(xuqcal.io.from_arrays([0.1, 3.0], [1.0, 1.0]),
    ...                         coverage_levels=[0.5]).observed[0])
    0.5
    """
    gen = check_generators(generator, "generator")[0]
    levels = _levels(coverage_levels)
    level = check_level(level)
    check_data_variables(ds, E, uE)
    m = ds.sizes["sample"]
    quantiles = _interval_quantile(gen, levels)
    grid = f"{levels.size} levels from {levels[0]:g} to {levels[-1]:g}"
    if levels.size < 2:  # an argument check: warned when the call is made
        import warnings

        from xuqcal.core.statistics import UndefinedStatisticWarning

        warnings.warn("miscalibration_area is undefined: it needs at least 2 coverage "
                      f"levels (coverage_levels), got {levels.size}", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
    attrs = provenance(generator=gen.name, level=level,
                       interval="|E| <= uE * q_D((1 + p) / 2)",
                       ci_method="Wilson score interval with continuity correction",
                       n_samples=m, grid=grid, E=E, uE=uE)
    n_p = levels.size
    layout = _calibration_dataset(
        {"observed": placeholder(n_p), "count": placeholder(n_p, np.int64),
         "ci_low": placeholder(n_p), "ci_high": placeholder(n_p),
         "valid": placeholder(n_p, bool), "miscalibration_area": placeholder(())},
        levels, quantiles, grid, attrs)
    kwargs = dict(levels=levels, quantiles=quantiles, level=level, E=E, uE=uE)
    return analysis(_calibration_body, ds, [E, uE], lambda: layout, **kwargs)


def _calibration_body(data: xr.Dataset, *, levels: np.ndarray, quantiles: np.ndarray,
                      level: float, E: str, uE: str) -> xr.Dataset:
    """:func:`calibration_curve` on NumPy-backed data."""
    errors, uncertainties = _arrays(data, E, uE)
    m = errors.size
    count = _count_inside(np.abs(errors), uncertainties, quantiles)
    observed = count / m
    ci_low, ci_high = wilson_interval(count, np.full(count.shape, m), level)
    ci_low, ci_high = np.atleast_1d(ci_low), np.atleast_1d(ci_high)
    if levels.size >= 2:
        gap = np.abs(observed - levels)
        area = float(np.sum(0.5 * (gap[1:] + gap[:-1]) * np.diff(levels)))
    else:
        area = float("nan")
    return xr.Dataset(
        {"observed": (CURVE_DIM, observed), "count": (CURVE_DIM, count),
         "ci_low": (CURVE_DIM, ci_low), "ci_high": (CURVE_DIM, ci_high),
         "valid": (CURVE_DIM, (ci_low <= levels) & (levels <= ci_high)),
         "miscalibration_area": ((), area)},
        coords={CURVE_DIM: levels})


def _calibration_dataset(values: dict, levels: np.ndarray, quantiles: np.ndarray, grid: str,
                         attrs: dict) -> xr.Dataset:
    """A :func:`calibration_curve` result from its values (or placeholders: its layout)."""
    return xr.Dataset(
        {
            "observed": (CURVE_DIM, values["observed"],
                         {"long_name": "observed fraction inside the interval"}),
            "count": (CURVE_DIM, values["count"],
                      {"long_name": "number of points inside the interval"}),
            "ci_low": (CURVE_DIM, values["ci_low"],
                       {"long_name": "Wilson-cc interval of the fraction, lower"}),
            "ci_high": (CURVE_DIM, values["ci_high"],
                        {"long_name": "Wilson-cc interval of the fraction, upper"}),
            "valid": (CURVE_DIM, values["valid"],
                      {"long_name": "the interval of the observed fraction contains p"}),
            "miscalibration_area": ((), values["miscalibration_area"], {
                "long_name": "miscalibration area, integral of |observed - p| dp",
                "method": "trapezoid rule over the p grid",
                "grid": grid,
            }),
        },
        coords={
            CURVE_DIM: (CURVE_DIM, levels,
                        {"long_name": "coverage level p: expected fraction inside the interval"}),
            "half_width": (CURVE_DIM, quantiles, {"long_name": "q_D((1 + p) / 2): interval "
                                                               "half-width in units of uE"}),
        },
        attrs=attrs,
    )


# -------------------------------------------------------------------------- local coverage


@broadcast
@by_role
def local_coverage(
    ds: xr.Dataset,
    *,
    by: str = defaults.BY,
    coverage_level: float | None = None,
    n_bins: int | None = None,
    generator: str | Generator = defaults.GENERATORS[0],
    level: float = defaults.LEVEL,
    tol: float = defaults.COVERAGE_TOLERANCE,
    heavy_tail_threshold: float | None = defaults.HEAVY_TAIL_THRESHOLD,
    bins: xr.Dataset | None = None,
    interval: bool = False,
    lower: str | None = None,
    upper: str | None = None,
    resample: str = "iid",
    groups: str | None = None,
    block: str | dict | None = None,
    block_length: int | str | None = None,
    n_boot: int | None = None,
    seed: int = defaults.SEED,
    binning: str | None = None,
    ci_method: str | None = None,
    coverage_rule: str | None = None,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Local coverage probability (LCP, METHODS §9): the coverage of the central interval of
    coverage level ``p`` (``coverage_level``) per bin, validated bin by bin.

    The points are sorted by ``by`` (stable sort) and cut into ``n_bins`` equal-count bins
    (sorted positions ``[floor(b M / N), floor((b + 1) M / N))``), or grouped by given
    ``bins`` (strata, groups, a grid: :func:`xuqcal.make_bins`). In each bin the fraction of
    points with ``|E| <= k uE``, ``k = q_D((1 + p) / 2)`` (the PICP of the bin), gets a Wilson
    interval with continuity correction, and the bin is *valid* when that interval
    **overlaps** the band ``[p - tol, p + tol]`` (the rule of :func:`xuqcal.validate` for
    PICP, P. Pernot, arXiv 2408.13089). The fraction of valid bins ``f_v`` is reported with
    its own Wilson-cc interval.

    Each bin also gets the robust skewness β_GM of its Z² (Harrell–Davis median, as the
    heavy-tail screen of :func:`xuqcal.validate`); a bin above ``heavy_tail_threshold`` is
    flagged ``heavy_tail``: its coverage test is not reliable ("not testable"), and
    :func:`xuqcal.plot.local_coverage` draws it greyed out. Such bins still count in
    ``f_v``; ``fraction_valid_testable`` is f_v over the other bins.

    Until version 0.1 a bin was valid when its interval *contained* ``p``; ``tol=0`` gives
    that rule exactly. With the default ``tol`` (0.005) a bin whose interval ends less than
    0.005 short of ``p`` is now valid too.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and the variable ``by``.
    by : str
        Conditioning variable (``uE`` for consistency, a feature for adaptivity); ignored when
        ``bins`` are given.
    coverage_level : float, optional
        Coverage level ``p`` of the interval (its nominal coverage), in (0, 1); default
        ``defaults.LEVEL`` (0.95), or with given intervals the level the bounds record
        (their attribute ``coverage_level``); a level given for bounds that record another
        one is refused.
    n_bins : int, optional
        Number of equal-count bins; default
        :func:`~xuqcal.core.binning.recommended_n_bins` ``(M, defaults.N_BINS)`` (20 bins from
        M = 400 on, per slice; the rule of :mod:`xuqcal.core.binning`). A number given needs
        at least 2 points per bin (else a ``ValueError``) and gives a
        :class:`~xuqcal.core.binning.FewPointsPerBinWarning` below
        ``defaults.MIN_POINTS_PER_BIN_LOCAL`` (20) points per bin.
    generator : str or Generator
        Generative distribution D whose unit-variance quantile gives the coverage factor
        ``k``: ``"normal"`` (``Φ⁻¹((1 + p) / 2)``, 1.96 at 0.95) or a Student-t ``"t<ν>"``
        (the factor of a unit-variance t(ν), 1.998 for t6 at 0.95).
    level : float
        Confidence level of the Wilson intervals.
    tol : float
        Half-width of the target band ``[p - tol, p + tol]``, in [0, 1); default
        ``defaults.COVERAGE_TOLERANCE`` (0.005). ``0`` asks the interval to contain ``p``.
    heavy_tail_threshold : float or None
        Threshold on β_GM(Z²) per bin, in (0, 1); default ``defaults.HEAVY_TAIL_THRESHOLD``
        (0.85, that of :func:`xuqcal.validate` for ZMS and PICP; β_GM(Z²) is about 0.64 for
        normal errors). ``None`` flags no bin.
    bins : xarray.Dataset, optional
        Precomputed bins of ``ds`` (from :func:`xuqcal.make_bins`: strata, groups, grid, ...);
        overrides ``by`` and ``n_bins``. Empty cells of a grid have NaN coverage and are
        left out of ``f_v``.
    interval : bool
        Use the **given** predicted intervals instead of ``±k uE``: a point is inside when
        ``lower <= E <= upper``, the bounds being the variables of roles ``interval_lower``
        and ``interval_upper`` (:func:`xuqcal.from_arrays` with ``lower=``, ``upper=``,
        ``coverage_level=``; see :func:`xuqcal.analysis.coverage.interval_bounds`);
        ``coverage_level`` is their level. ``generator`` is then unused. The heavy-tail
        screen still uses ``Z = E / uE``.
    lower, upper : str, optional
        Names of the bounds of the given intervals of the error (one pair per point), as for
        :func:`xuqcal.analysis.coverage.interval_coverage`: giving them implies
        ``interval=True``; by default the variables of roles ``interval_lower`` and
        ``interval_upper``. Without a recorded level, give ``coverage_level``.
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        How the points are resampled for the per-bin intervals (checked as in
        :func:`xuqcal.local`). ``"iid"`` (default): the Wilson-cc interval of each bin's
        fraction (independent points; unchanged, bit for bit). Otherwise the points are
        dependent (whole groups of ``groups``, or blocks of consecutive points in the order
        of ``block``) and each bin's interval is the **dependent bootstrap** of its coverage
        indicator: replicate ``r`` draws the row multiplicities ``n_p`` of the whole data set
        once, from the stream ``(seed, "local_coverage-<resample>", r)``
        (:meth:`xuqcal.analysis.dependent.RowLayout.fill`), and every bin's fraction is
        ``Σ n_p 1{inside_p} / Σ n_p`` over its points; the interval is BCa, its acceleration
        from the delete-one-unit jackknife over the units (groups, or non-overlapping
        blocks or tiles) present in the bin, as :func:`xuqcal.local` does. A replicate in
        which a bin receives no point is left out of that bin's interval and counted in
        ``n_boot_excluded`` (a warning above 5 %; NaN bounds below
        :func:`~xuqcal.core.checks.minimum_replicates`); a bin whose points all belong to
        one unit has NaN bounds (not valid; a warning). ``valid`` and ``fraction_valid``
        then follow from these intervals (``fraction_valid``'s own interval stays the
        Wilson-cc interval over the bins). A bootstrap interval of a fraction is discrete: a
        small bin whose replicates all lie at 1 has the interval [1, 1]; use bins of many
        points (or of many units).
    groups : str, optional
        With ``resample="cluster"``: the variable over ``sample`` holding each point's group.
    block : str or dict, optional
        With a block scheme: the variable over ``sample`` that orders the points (or, for a
        tile bootstrap, a dict of grid variables and tile sizes).
    block_length : int or "auto", optional
        With a block scheme: the points per block, or ``"auto"`` (Politis & White of ``Z²``
        in the order of ``block``, as :func:`xuqcal.local`; the data are read when
        ``local_coverage`` is called).
    n_boot : int, optional
        With a dependent resample: the bootstrap replicates of the per-bin intervals (default
        ``defaults.N_BOOT_LOCAL``); refused with ``resample="iid"`` (the Wilson intervals draw
        no replicates).
    seed : int
        With a dependent resample: the seed of the bootstrap streams (unused otherwise).
    binning : {"equal", "hd"}, optional
        Without ``bins``: equal-count bins, or Harrell–Davis bins (ErrViewLib's
        ``genIntervals``, at least ``defaults.POP_MIN_HD`` = 30 points per bin, fewer bins when
        needed: :func:`xuqcal.analysis.binning.harrell_davis`; the result then describes them
        as given bins). Default ``None``: the option ``conventions``
        (:func:`xuqcal.options.convention`; ``"equal"``, ``"hd"`` under ``"errviewlib"``).
    ci_method : {"wilsoncc", "wilson"}, optional
        The binomial interval of each bin's coverage and of ``fraction_valid``: Wilson with
        continuity correction (xuqcal), or the plain Wilson score interval (ErrViewLib
        ``plotLCP``'s ``binomCI = "wilson"``, used by the 2024_PICP study). Default ``None``:
        the option ``conventions``.
    coverage_rule : {"quantile", "pernot2024"}, optional
        With the normal generator: the factor ``k`` and the target of the band
        (:func:`xuqcal.core.coverage.coverage_rule`): ``Φ⁻¹((1 + p) / 2)`` against ``p``, or
        as the 2024_PICP study (``k`` rounded to two decimals, 1.96 at 0.95; the target 0.67
        at ``p = 0.683``). Default ``None``: the option ``conventions``.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``bin`` (equal-count bins: coordinates ``bin_low``, ``bin_high``, the range of
        ``by`` in the bin, and ``bin_centre``, its mean; given bins: their coordinates):
        ``coverage``, ``count`` (points in the bin), ``n_inside``, ``ci_low``, ``ci_high``,
        ``valid``, ``beta_gm_z2`` (NaN for constant Z²) and ``heavy_tail``. Scalars:
        ``fraction_valid`` with ``fraction_valid_low`` / ``_high`` (Wilson-cc, over the
        non-empty bins), ``n_heavy_tail`` (the number of heavy-tailed bins), and
        ``fraction_valid_testable`` with ``fraction_valid_testable_low`` / ``_high`` (the
        same over the bins not heavy-tailed; NaN when there is none). Attributes record
        ``coverage_level`` (``p`` in results written until version 0.1),
        ``tol``, the factor ``quantile`` = k, ``generator`` and ``heavy_tail_threshold``
        (``"none"`` without screening). Under a dependent resample, also ``n_units`` and
        ``n_boot_excluded`` over ``bin``, and the attributes ``n_boot``, ``seed``,
        ``resample``, ``groups`` or ``block`` (with ``block_length`` and
        ``block_length_rule``), ``jackknife`` and ``random_streams``; ``ci_method`` names
        the dependent bootstrap.

    Raises
    ------
    ValueError
        For an invalid ``resample``, ``groups``, ``block`` or ``block_length`` (as
        :func:`xuqcal.analysis.dependent.check_dependence`), ``n_boot`` with
        ``resample="iid"`` or too few replicates for ``level``, and the other invalid
        arguments (named).

    Notes
    -----
    ``fraction_valid_testable`` answers "are the bins that can be tested calibrated?" when a
    few bins are heavy-tailed (their coverage test, like ZMS, is unreliable there): it is f_v
    without them. It is not a replacement for ``fraction_valid``: the bins it keeps are
    selected on the data, its interval rests on fewer bins, and a model whose errors are
    heavy-tailed where it is miscalibrated can look better by it. Read it with
    ``n_heavy_tail``; with no heavy-tailed bin it equals ``fraction_valid``.

    Examples
    --------
    >>> import xuqcal
    >>> lc = local_coverage(xuqcal.synthetic.nig(4000, nu=6, seed=0), n_bins=10)
    >>> lc.sizes["bin"], int(lc["count"].sum())
    (10, 4000)
    >>> lc.attrs["tol"], lc.attrs["heavy_tail_threshold"], lc.heavy_tail.dtype
    (0.005, 0.85, dtype('bool'))
    >>> contains = local_coverage(xuqcal.synthetic.nig(4000, nu=6, seed=0), n_bins=10, tol=0)
    >>> bool((lc.valid >= contains.valid).all())  # overlapping the band is the weaker rule
    True
    """
    check_bool(interval, "interval")
    bounds = None
    if interval or lower is not None or upper is not None:
        given = None if coverage_level is None else _probability(coverage_level,
                                                                  "coverage_level")
        found, stated = interval_bounds(ds, lower, upper, given)
        recorded = recorded_coverage_level(found["lower"].attrs)
        if given is not None and recorded is not None and float(recorded) != given:
            raise ValueError(f"coverage_level: {coverage_level!r} differs from the level of "
                             f"the given intervals ({float(recorded):g}); leave "
                             "coverage_level out with given intervals")
        coverage_level, bounds = stated, [str(found["lower"].name), str(found["upper"].name)]
    p = _probability(defaults.LEVEL if coverage_level is None else coverage_level,
                     "coverage_level")
    level = check_level(level)
    tol = check_tolerance(tol)
    threshold = check_skewness_threshold(heavy_tail_threshold, of="Z^2",
                                         default=defaults.HEAVY_TAIL_THRESHOLD)
    gen = check_generators(generator, "generator")[0]
    check_data_variables(ds, E, uE)
    m = ds.sizes["sample"]
    _check_size(m, 2, "local_coverage")
    dependence = _dep.resolved_dependence(ds, resample, groups, block, block_length, E=E,
                                          uE=uE, warn_as="local_coverage")
    if dependence.iid:
        if n_boot is not None:
            raise ValueError(f"n_boot: only used with a dependent resample (resample="
                             f"'cluster' or a block scheme), got {n_boot!r} with "
                             "resample='iid' (the Wilson intervals draw no replicates)")
    else:
        n_boot = check_replicates(defaults.N_BOOT_LOCAL if n_boot is None else n_boot, level,
                                  "n_boot")
        seed = check_seed(seed)
    binning_scheme = _conv("binning", binning)
    ci_method = _conv("ci_method", ci_method)
    rule = _conv("coverage_rule", coverage_rule)
    made_hd = bins is None and binning_scheme == "hd"
    if made_hd:
        by = variable_name(ds, by, uE)
        bins = make_bins(ds, by, n_bins=n_bins_for(ds, n_bins), binning="hd",
                         min_count=defaults.POP_MIN_HD, uE=uE)
    if bins is None:
        by = variable_name(ds, by, uE)
        n_bins = n_bins_for(ds, n_bins)  # warns below the rule
        check_n_bins(m, n_bins, variable=by)
        variables = list(dict.fromkeys([E, uE, by, *(bounds or [])]))
        n, by_label, scheme = n_bins, by, "equal"
        binning = ("equal-count bins of the stable sort of by: sorted positions "
                   "[floor(b M / N), floor((b + 1) M / N))")
    else:
        _check_bins(bins, m)
        _warn_bins(bins, m, given=True)
        variables = list(dict.fromkeys([E, uE, *(bounds or [])]))
        n, by = bins.sizes["bin"], None
        by_label = str(bins.attrs.get("by", "bins"))
        scheme = str(bins.attrs.get("scheme", "given"))
        binning = (f"Harrell-Davis bins of {by_label} (ErrViewLib genIntervals, at least "
                   f"{defaults.POP_MIN_HD} points per bin)" if made_hd else
                   f"the given bins ({scheme} bins of {by_label})")
    q = math.nan if bounds else float(_interval_quantile(gen, np.array([p]))[0])
    target = p
    conventions = {}
    if rule != "quantile" and not bounds and gen.name == "normal":
        q, target = _coverage_rule(p, rule)
        conventions.update(coverage_rule=rule, target=target)
    if ci_method != "wilsoncc":
        conventions["ci_method"] = "Wilson score interval (no continuity correction)"
    rule = (f"{bounds[0]} <= E <= {bounds[1]} (the given interval at level p)" if bounds
            else "|E| <= uE * q_D((1 + p) / 2)")
    attrs = provenance(
        by=by_label, scheme=scheme, coverage_level=p, tol=tol, quantile=q,
        generator="" if bounds else gen.name, n_bins=n, level=level, interval=rule,
        binning=binning,
        validity="the Wilson-cc interval of the coverage overlaps [p - tol, p + tol]",
        heavy_tail_threshold=_threshold_attr(threshold),
        heavy_tail="beta_GM(Z^2) of the bin > heavy_tail_threshold: not testable",
        ci_method="Wilson score interval with continuity correction", n_samples=m, E=E, uE=uE)
    attrs.update(conventions)
    dependent = not dependence.iid
    kwargs = dict(by=by, bins=bins, q=q, p=p, tol=tol, threshold=threshold, n_bins=n,
                  level=level, E=E, uE=uE, bounds=bounds)
    if target != p or ci_method != "wilsoncc":  # the default call is unchanged
        kwargs.update(target=target, continuity=ci_method == "wilsoncc")
    if dependent:
        purpose = f"local_coverage-{dependence.resample}"
        attrs.update(n_boot=n_boot, seed=seed,
                     validity="the dependent bootstrap interval of the coverage overlaps "
                              "[p - tol, p + tol]",
                     ci_method=f"dependent bootstrap (BCa, {n_boot} replicates, resample="
                               f"{dependence.resample!r}) of the coverage indicator of the "
                               "bin; the Wilson interval assumes independent points",
                     **binned_dependence_attrs(dependence, purpose))
        variables = list(dict.fromkeys([*variables, dependence.variable]))
        kwargs.update(dependence=dependence, n_boot=n_boot, seed=seed)
    spec = _coverage_variables(p, tol, by_label, dependent)
    placeholders = {name: placeholder(() if dims == () else n, dtype)
                    for name, (dims, dtype, _) in spec.items()}
    layout = _coverage_dataset(placeholders, p, tol, by_label, n, attrs,
                               None if bins is None else _bins_description(bins), dependent)
    result = analysis(_coverage_body, ds, variables, lambda: layout, **kwargs)
    if ci_method != "wilsoncc":  # the long names say which interval
        for name, variable in result.data_vars.items():
            long_name = variable.attrs.get("long_name", "")
            if "Wilson-cc" in long_name:
                result[name].attrs["long_name"] = long_name.replace("Wilson-cc", "Wilson")
    return result


#: The coordinates of a local coverage over equal-count bins (computed with the values).
_COVERAGE_COORDS = ("bin_low", "bin_high", "bin_centre")


def _coverage_variables(p: float, tol: float, by: str, dependent: bool = False) -> dict:
    """``name: (dims, dtype, attrs)`` of the variables of a :func:`local_coverage` result
    (``dependent``: under a dependent resample, with its per-bin variables)."""
    f8, i8 = np.float64, np.int64
    band = f"[{p:g} - {tol:g}, {p:g} + {tol:g}]"
    fraction = "over the non-empty bins"
    if dependent:
        return {**_coverage_variables(p, tol, by),
                "ci_low": ("bin", f8, {"long_name": "dependent bootstrap (BCa) interval of "
                                                    "the coverage, lower"}),
                "ci_high": ("bin", f8, {"long_name": "dependent bootstrap (BCa) interval of "
                                                     "the coverage, upper"}),
                "n_units": ("bin", i8, {"long_name": "number of resampling units (groups, or "
                                                     "non-overlapping blocks) with points in "
                                                     "the bin: the units of its jackknife"}),
                "n_boot_excluded": ("bin", i8, {
                    "long_name": "replicates left out of the bin's interval: those in which "
                                 "the bin received no point"})}
    return {
        "coverage": ("bin", f8, {"long_name": f"fraction inside the {p:g}-interval"}),
        "count": ("bin", i8, {"long_name": "number of points in the bin"}),
        "n_inside": ("bin", i8, {"long_name": "number of points inside the interval"}),
        "ci_low": ("bin", f8, {"long_name": "Wilson-cc interval of the coverage, lower"}),
        "ci_high": ("bin", f8, {"long_name": "Wilson-cc interval of the coverage, upper"}),
        "valid": ("bin", bool, {"long_name": f"the interval of the coverage overlaps {band}"}),
        "beta_gm_z2": ("bin", f8, {"long_name": "robust skewness beta_GM of Z² in the bin "
                                                "(Harrell-Davis median)"}),
        "heavy_tail": ("bin", bool, {"long_name": "beta_GM(Z²) above heavy_tail_threshold: "
                                                  "the coverage test of the bin is not "
                                                  "reliable (not testable)"}),
        "fraction_valid": ((), f8, {"long_name": f"fraction of valid bins ({fraction})"}),
        "fraction_valid_low": ((), f8, {"long_name": "Wilson-cc interval of fraction_valid, "
                                                     "lower"}),
        "fraction_valid_high": ((), f8, {"long_name": "Wilson-cc interval of fraction_valid, "
                                                      "upper"}),
        "n_heavy_tail": ((), i8, {"long_name": "number of heavy-tailed bins"}),
        "fraction_valid_testable": ((), f8, {"long_name": "fraction of valid bins among the "
                                                          "bins not heavy-tailed"}),
        "fraction_valid_testable_low": ((), f8, {"long_name": "Wilson-cc interval of "
                                                              "fraction_valid_testable, lower"}),
        "fraction_valid_testable_high": ((), f8, {"long_name": "Wilson-cc interval of "
                                                               "fraction_valid_testable, upper"}),
        "bin_low": ("bin", f8, {"long_name": f"smallest {by} in the bin"}),
        "bin_high": ("bin", f8, {"long_name": f"largest {by} in the bin"}),
        "bin_centre": ("bin", f8, {"long_name": f"mean {by} in the bin"}),
    }


def _bins_description(bins: xr.Dataset) -> xr.Dataset:
    """What given bins describe besides their points (coordinates over ``bin``: ranges,
    group labels, grid cells; a grid's limits), kept in a :func:`local_coverage` result as
    :func:`xuqcal.local` keeps them."""
    drop = [v for v in ("bin_index", "upper_limit", "count") if v in bins.variables]
    description = bins.drop_vars(drop).drop_dims("sample", errors="ignore")
    description.attrs = {}
    return description


def _coverage_body(data: xr.Dataset, *, by: str | None, bins: xr.Dataset | None, q: float,
                   p: float, tol: float, threshold: float | None, n_bins: int, level: float,
                   E: str, uE: str, bounds: list[str] | None = None,
                   dependence: _dep.Dependence | None = None, n_boot: int = 0,
                   seed: int = defaults.SEED, target: float | None = None,
                   continuity: bool = True) -> xr.Dataset:
    """:func:`local_coverage` on NumPy-backed data (``by`` for equal-count bins, or given
    ``bins``; ``bounds``: the names of given interval bounds, else ``±q uE``;
    ``dependence``: a checked dependent resample with its block length, else the Wilson
    intervals; ``target``: the centre of the band, default ``p``; ``continuity=False``: plain
    Wilson intervals)."""
    target = p if target is None else target
    errors, uncertainties = _arrays(data, E, uE, extra=[by] if by is not None else [])
    m = errors.size
    if bounds:
        lower, upper = (np.asarray(data[b].values, dtype=np.float64) for b in bounds)
        bad = ~(np.isfinite(lower) & np.isfinite(upper)) | (lower > upper)
        if bad.any():
            raise ValueError(f"{bounds[0]}, {bounds[1]}: {int(bad.sum())} of {m} intervals are "
                             f"not finite or have lower > upper "
                             f"({_format_rows(np.flatnonzero(bad).tolist(), int(bad.sum()))})")
        inside = (lower <= errors) & (errors <= upper)
    else:
        inside = np.abs(errors) <= uncertainties * q
    z2 = point_columns(errors, uncertainties, ["z2"])["z2"]
    values: dict = {}
    if bins is None:
        by_values = np.asarray(data[by].values, dtype=np.float64)
        order = equal_count_order(by_values)
        offsets = equal_count_bounds(m, n_bins)
        sorted_by = by_values[order]
        count = np.diff(offsets)
        n_inside = np.add.reduceat(inside[order].astype(np.int64), offsets[:-1])
        values.update(bin_low=sorted_by[offsets[:-1]], bin_high=sorted_by[offsets[1:] - 1],
                      bin_centre=np.add.reduceat(sorted_by, offsets[:-1]) / count)
        description = None
    else:
        index = np.asarray(bins.bin_index.values)
        _check_bin_index(index, n_bins)
        order, offsets = members(index, n_bins)
        count = np.diff(offsets)
        n_inside = np.bincount(index, weights=inside, minlength=n_bins).astype(np.int64)
        description = _bins_description(bins)
    coverage, ci_low, ci_high, valid = coverage_validity(n_inside, count, target, level, tol,
                                                         continuity=continuity)
    if dependence is not None:
        layout = _dep.row_layout(np.asarray(data[dependence.variable].values), dependence)
        ci_low, ci_high, n_units, excluded = dependent_coverage_intervals(
            inside, order, offsets, layout, n_boot=n_boot, level=level, seed=seed,
            purpose=f"local_coverage-{dependence.resample}")
        valid = (ci_low <= target + tol) & (target - tol <= ci_high)
        values.update(n_units=n_units, n_boot_excluded=excluded)
    beta = group_beta_gm(z2, order, offsets)
    heavy = heavy_tailed(beta, threshold)
    counted = count > 0
    fv, fv_low, fv_high = _fraction(int((valid & counted).sum()), int(counted.sum()), level,
                                    continuity)
    testable = counted & ~heavy
    fvt, fvt_low, fvt_high = _fraction(int((valid & testable).sum()), int(testable.sum()),
                                       level, continuity)
    values.update(
        coverage=coverage, count=count, n_inside=n_inside, ci_low=ci_low, ci_high=ci_high,
        valid=valid, beta_gm_z2=beta, heavy_tail=heavy, fraction_valid=fv,
        fraction_valid_low=fv_low, fraction_valid_high=fv_high,
        n_heavy_tail=int(heavy.sum()), fraction_valid_testable=fvt,
        fraction_valid_testable_low=fvt_low, fraction_valid_testable_high=fvt_high)
    return _coverage_dataset(values, p, tol, str(by), n_bins, {}, description,
                             dependence is not None)


def coverage_replicates(inside: np.ndarray, order: np.ndarray, offsets: np.ndarray,
                        layout: _dep.RowLayout, key: np.uint64, start: int, stop: int
                        ) -> np.ndarray:
    """Replicates ``start .. stop - 1`` ``(replicate, bin)`` of the coverage fraction of every
    bin under the dependent resample ``layout``: ``Σ n_p 1{inside_p} / Σ n_p`` over the points
    ``p`` of the bin (``order[offsets[b]:offsets[b + 1]]``, data rows), ``n_p`` the row
    multiplicity of point ``p`` that :meth:`~xuqcal.analysis.dependent.RowLayout.fill` draws
    for the replicate from the stream ``(key, r)``; NaN where the bin receives no point (or is
    empty).

    Examples
    --------
    >>> from xuqcal.analysis.dependent import Dependence, row_layout
    >>> layout = row_layout(np.array([0, 0, 1, 1]), Dependence("cluster", "g"))
    >>> reps = coverage_replicates(np.array([True, False, True, True]), np.arange(4),
    ...                            np.array([0, 2, 4]), layout, np.uint64(1), 0, 50)
    >>> sorted({float(v) for v in reps[:, 0] if v == v}) <= [0.5, 1.0]
    True
    """
    n_bins = offsets.size - 1
    out = np.full((stop - start, n_bins), np.nan)
    counted = np.flatnonzero(np.diff(offsets) > 0)
    if counted.size == 0 or stop <= start:
        return out
    rows = layout.rows(order)
    hit = np.asarray(inside, dtype=bool)[order]
    starts = offsets[counted]
    for first, last, part in count_blocks(functools.partial(layout.fill, key), layout.size,
                                          start, stop):
        counts = part[:, rows].astype(np.int64)  # (replicate, point in the order of the bins)
        total = np.add.reduceat(counts, starts, axis=1)
        inner = np.add.reduceat(np.where(hit, counts, 0), starts, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[first - start:last - start, counted] = np.where(total > 0, inner / total,
                                                                 np.nan)
    return out


def dependent_coverage_intervals(inside: np.ndarray, order: np.ndarray, offsets: np.ndarray,
                                 layout: _dep.RowLayout, *, n_boot: int, level: float,
                                 seed: int, purpose: str
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The BCa intervals of the coverage fractions of the bins under a dependent resample:
    ``(low, high, n_units, n_excluded)`` over the bins (the points of bin ``b``:
    ``order[offsets[b]:offsets[b + 1]]``).

    The replicates are :func:`coverage_replicates` from the streams ``(seed, purpose, r)``;
    those in which a bin receives no point are left out of its interval (``n_excluded``).
    The acceleration comes from the delete-one-unit jackknife over the units present in the
    bin (a unit absent from a bin does not change its fraction; the rule of
    :func:`xuqcal.analysis.local.dependent_group_intervals`). Bins of a single unit, or with
    fewer than :func:`~xuqcal.core.checks.minimum_replicates` replicates kept, have NaN
    bounds (warned about, as :func:`xuqcal.local` does).
    """
    n_bins = offsets.size - 1
    hit = np.asarray(inside, dtype=bool)
    replicates = coverage_replicates(hit, order, offsets, layout, stream_key(seed, purpose),
                                     0, n_boot)
    unit_of_point = layout.unit_of_row[layout.row_of_point]
    low, high = np.full(n_bins, np.nan), np.full(n_bins, np.nan)
    n_units = np.zeros(n_bins, dtype=np.int64)
    finite = np.isfinite(replicates)
    n_excluded = (n_boot - finite.sum(axis=0)).astype(np.int64)
    least = minimum_replicates(level)
    for b in range(n_bins):
        points = order[offsets[b]:offsets[b + 1]]
        if points.size == 0:
            continue
        units, index = np.unique(unit_of_point[points], return_inverse=True)
        n_units[b] = units.size
        if units.size < 2:
            continue
        inside_b = hit[points]
        per_count = np.bincount(index, minlength=units.size)
        per_inside = np.bincount(index, weights=inside_b, minlength=units.size)
        jack = (inside_b.sum() - per_inside) / (points.size - per_count)
        kept = replicates[finite[:, b], b]
        if kept.size < least:
            continue
        value = np.array([inside_b.sum() / points.size])
        lo, hi = bca_interval(kept[None, :], value, level=level,
                              acceleration_value=acceleration(jack)[None])
        low[b], high[b] = lo[0], hi[0]
    counted = np.diff(offsets) > 0
    warn_dependent_bins(n_units[counted], n_excluded[counted], n_boot, least,
                           layout.resample)
    return low, high, n_units, n_excluded


def _fraction(k: int, n: int, level: float, continuity: bool = True
              ) -> tuple[float, float, float]:
    """``k / n`` with its Wilson-cc interval (``continuity=False``: plain Wilson); NaN for
    ``n = 0``."""
    if n == 0:
        return math.nan, math.nan, math.nan
    low, high = wilson_interval(k, n, level, continuity=continuity)
    return k / n, float(low), float(high)


def _coverage_dataset(values: dict, p: float, tol: float, by: str, n_bins: int, attrs: dict,
                      description: xr.Dataset | None = None, dependent: bool = False
                      ) -> xr.Dataset:
    """A :func:`local_coverage` result from its values (or placeholders: its layout); the
    coordinates of equal-count bins come with the values, those of given bins from their
    ``description`` (``dependent``: with the variables of a dependent resample)."""
    spec = _coverage_variables(p, tol, by, dependent)
    data = {name: (dims, values[name], var_attrs) for name, (dims, _, var_attrs) in spec.items()
            if name not in _COVERAGE_COORDS}
    if description is None:
        coords = {"bin": ("bin", np.arange(n_bins)),
                  **{name: (spec[name][0], values[name], spec[name][2])
                     for name in _COVERAGE_COORDS}}
        return xr.Dataset(data, coords=coords, attrs=attrs)
    return description.assign(data).assign_coords(bin=np.arange(n_bins)).assign_attrs(attrs)
