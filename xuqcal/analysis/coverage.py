"""Coverage of predicted quantiles and intervals of the error.

- :func:`quantile_coverage`: for each predicted quantile of the error (variable of role
  ``quantiles``, :func:`~xuqcal.io.from_quantiles`), the observed fraction of points with
  ``E <= q_p`` against its nominal probability ``p`` (the quantile calibration curve,
  :func:`xuqcal.plot.quantile_calibration`), the mean pinball loss per level and
  the calibration error, the mean of ``|observed - p|`` over the levels;
- :func:`interval_coverage`: the prediction interval coverage probability (PICP) of a predicted
  interval (variables of roles ``interval_lower``, ``interval_upper``, given to
  :func:`~xuqcal.io.from_arrays` or :func:`~xuqcal.io.read_csv` with ``lower=``, ``upper=``),
  the fraction of points with ``lower <= E <= upper``, against its nominal level, the mean
  width of the interval (its sharpness) and the mean interval (Winkler) score, optionally with
  bootstrap intervals of the two means.

A fraction ``k / n`` comes with its Wilson score interval with continuity correction
(:func:`xuqcal.core.intervals.wilson_interval`, as R's ``prop.test``); it is *valid* when that
interval overlaps ``[p - tol, p + tol]`` around the nominal value ``p`` (METHODS §9; ``tol=0``
is the rule "the interval contains ``p``"). Both analyses broadcast over the extra dimensions
of the data (``model``, ``task``, ...) and stay lazy on Dask-backed data (the points are
counted chunk by chunk; the bootstrap gathers each set's points into one task, as every
bootstrap of xuqcal does; nothing is computed until ``.compute()``). A point where ``E`` or a
bound is NaN (an absent point of a stacked data set) is not counted; for an interval, a point
is absent only when ``E`` and both bounds are NaN: a NaN in some of them only is an error
naming the variable and the rows.

**Dependent points.** The Wilson interval and the iid bootstrap assume independent points.
With ``resample=`` (``"cluster"`` with ``groups=``, or a block scheme with ``block=`` and
``block_length=``, as :func:`xuqcal.bootstrap`; :mod:`xuqcal.analysis.dependent`), the
interval of each coverage fraction is instead the dependent bootstrap (BCa with the
delete-one-unit jackknife, or percentile) of the mean of its coverage indicator, as
:func:`xuqcal.validate` does for its coverage statistics, and the bootstrap intervals of the
mean scores resample the same groups or blocks; ``valid`` then reads that interval. The
dependence variable is over ``sample`` alone and shared by every set of the extra dimensions;
each set is resampled on its counted points (the groups or the order of ``block`` restricted
to them), as the set alone.

The scores are those of :mod:`xuqcal.core.scores` on the error: with the sign convention of
xuqcal (``E = observed - prediction``, bounds and quantiles of the error are those of the
target minus the prediction), ``E - lower = y - y_lo`` and ``E - q_p = y - (quantile of y)``,
so the interval score and the pinball loss of the error are those of the target.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import xarray as xr

from xuqcal.analysis.dependent import AUTO_LENGTH, Dependence, check_dependence
from xuqcal.analysis.probabilistic import _score_intervals, check_score_bootstrap
from xuqcal.analysis.resampling import RNG_DESCRIPTION
from xuqcal.core import defaults
from xuqcal.core import scores as S
from xuqcal.core.binning import equal_count_order
from xuqcal.core.blocklength import optimal_block_length
from xuqcal.core.checks import (
    check_coverage_level,
    check_level,
    check_tolerance,
)
from xuqcal.core.intervals import coverage_validity
from xuqcal.core.provenance import provenance
from xuqcal.io.expressions import _list_names
from xuqcal.io.quantiles import (
    COVERAGE_LEVEL_ATTR,
    QUANTILE_DIM_ATTR,
    check_points,
    check_probabilities,
    recorded_coverage_level,
    variable_with_role,
)
from xuqcal.io.schema import SAMPLE_DIM, by_role, roles

__all__ = ["INTERVAL_SCORES", "SCORE_DIM", "interval_coverage", "quantile_coverage"]

_CI_METHOD = "Wilson score interval with continuity correction"

#: The dimension of the bootstrap summaries of :func:`interval_coverage` (as the ``score``
#: dimension of :func:`~xuqcal.analysis.probabilistic.proper_scores`).
SCORE_DIM = "score"
#: The mean scores of :func:`interval_coverage` with bootstrap intervals, in the order of
#: :data:`SCORE_DIM`.
INTERVAL_SCORES = ("mean_width", "interval_score")
#: The bootstrap summaries of each mean score: variables ``score_<summary>`` over
#: :data:`SCORE_DIM`.
_SUMMARIES = ("bias", "se", "ci_low", "ci_high")


def _check_variable(ds: xr.Dataset, name: str, argument: str) -> xr.DataArray:
    """The numeric variable ``name`` of ``ds`` over ``sample`` (no data are read)."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    if not isinstance(name, str) or name not in ds.data_vars:
        raise ValueError(f"{argument}: the dataset has no variable {name!r} (data variables: "
                         f"{_list_names([str(v) for v in ds.data_vars]) or 'none'}); pass "
                         f"{argument}='name'")
    var = ds[name]
    if SAMPLE_DIM not in var.dims:
        raise ValueError(f"{name}: expected a variable over the dimension '{SAMPLE_DIM}', got "
                         f"dimensions {var.dims}")
    if var.dtype.kind not in "iuf":
        raise ValueError(f"{name}: values are not numeric (dtype {var.dtype})")
    if var.sizes[SAMPLE_DIM] == 0:
        raise ValueError(f"ds: empty data: the dataset has 0 rows along '{SAMPLE_DIM}'")
    return var


def interval_bounds(ds: xr.Dataset, lower: str | None = None, upper: str | None = None,
                    coverage_level: float | None = None
                    ) -> tuple[dict[str, xr.DataArray], float]:
    """The bounds of a predicted interval (``{"lower": ..., "upper": ...}``, by name or by
    their roles ``interval_lower``/``interval_upper``) and its coverage level (given, or the
    attribute ``coverage_level`` both bounds record; ``interval_level`` in data written until
    version 0.1), checked before any data are read.

    Examples
    --------
    >>> from xuqcal.io import from_arrays
    >>> ds = from_arrays([0.1, -0.3], lower=[-0.2, -0.2], upper=[0.2, 0.2], coverage_level=0.5)
    >>> bounds, p = interval_bounds(ds)
    >>> sorted(bounds), p
    (['lower', 'upper'], 0.5)
    """
    names = {bound: variable_with_role(ds, f"interval_{bound}", given)
             for bound, given in (("lower", lower), ("upper", upper))}
    bounds = {bound: _check_variable(ds, name, bound) for bound, name in names.items()}
    if coverage_level is None:
        recorded = {bound: recorded_coverage_level(var.attrs) for bound, var in bounds.items()}
        if recorded["lower"] is None or recorded["upper"] is None:
            missing = [names[b] for b, value in recorded.items() if value is None]
            raise ValueError(f"coverage_level: not given, and {', '.join(missing)} records no "
                             f"attribute '{COVERAGE_LEVEL_ATTR}'; pass coverage_level=")
        if float(recorded["lower"]) != float(recorded["upper"]):
            raise ValueError(f"coverage_level: the bounds record different levels "
                             f"({names['lower']}: {recorded['lower']}, {names['upper']}: "
                             f"{recorded['upper']}); pass coverage_level=")
        coverage_level = recorded["lower"]
    return bounds, check_coverage_level(coverage_level)


def _checked_absence(errors: xr.DataArray, bounds: dict[str, xr.DataArray]
                     ) -> tuple[xr.DataArray, dict[str, xr.DataArray]]:
    """``errors`` and the ``bounds`` of an interval, checked that a point is either absent
    (all of them NaN: the padding of a stacked data set) or has all of them: a NaN contradicted
    by the other variables of its point is an error naming the variable and the rows (at once
    for NumPy-backed data, when computed for Dask-backed data, which are returned depending on
    the check).

    Examples
    --------
    >>> ds = xr.Dataset({"E": ("sample", [0.1, np.nan]), "lower": ("sample", [-1.0, np.nan]),
    ...                  "upper": ("sample", [1.0, 2.0])})
    >>> _checked_absence(ds.E, {"lower": ds.lower, "upper": ds.upper})
    Traceback (most recent call last):
    ...
    ValueError: invalid input data (2 problems):
      E: 1 of 2 values are NaN where lower or upper is not (rows 1); a point is absent only \
when E, lower and upper are all NaN
      lower: 1 of 2 values are NaN where E or upper is not (rows 1); a point is absent only \
when E, lower and upper are all NaN
    """
    variables = {str(errors.name): errors, **{str(v.name): v for v in bounds.values()}}
    if len(variables) < 3:  # one variable in two roles: nothing to contradict
        return errors, bounds
    nan = {name: np.isnan(var) for name, var in variables.items()}
    absent = nan[str(errors.name)]
    for mask in nan.values():
        absent = absent & mask
    names = list(variables)
    note = f"; a point is absent only when {', '.join(names[:-1])} and {names[-1]} are all NaN"
    checks = [(name, nan[name] & ~absent,
               f"values are NaN where {' or '.join(n for n in names if n != name)} is not",
               note) for name in names]
    checked = check_points(xr.Dataset(variables), checks)
    return (checked[str(errors.name)],
            {bound: checked[str(var.name)] for bound, var in bounds.items()})


def _fractions(count: xr.DataArray, n: xr.DataArray, nominal: xr.DataArray | float,
               level: float, tol: float) -> dict[str, xr.DataArray]:
    """The observed fraction ``count / n``, its Wilson-cc interval and whether the interval
    overlaps ``[nominal - tol, nominal + tol]`` (:func:`~xuqcal.core.intervals.coverage_validity`,
    elementwise; lazy on Dask-backed counts)."""
    observed, low, high, valid = xr.apply_ufunc(
        coverage_validity, count, n, nominal, kwargs={"level": level, "tol": tol},
        output_core_dims=[[], [], [], []], dask="parallelized",
        output_dtypes=[np.float64, np.float64, np.float64, bool])
    return {"observed": observed, "ci_low": low, "ci_high": high, "valid": valid}


def _below(errors: np.ndarray, quantiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counted = ~(np.isnan(errors) | np.isnan(quantiles))
    return counted & (errors <= quantiles), counted


def _inside(errors: np.ndarray, lower: np.ndarray, upper: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    counted = ~(np.isnan(errors) | np.isnan(lower) | np.isnan(upper))
    with np.errstate(invalid="ignore"):
        width = np.where(counted, upper - lower, 0.0)
    return counted & (lower <= errors) & (errors <= upper), counted, width


def _point_mean(values: np.ndarray) -> np.ndarray:
    """Mean of the non-NaN values along the last axis (NaN without any). The values are made
    C-contiguous first: each row is then summed alone (NumPy's pairwise sum of a contiguous
    row), so a set's mean does not depend on the other sets of the block nor on the memory
    layout, and lazy results equal eager ones bit for bit."""
    counted = ~np.isnan(values)
    total = np.ascontiguousarray(np.where(counted, values, 0.0)).sum(axis=-1)
    n = counted.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / n, np.nan)


def _mean_interval_score(errors: np.ndarray, lower: np.ndarray, upper: np.ndarray, *,
                         coverage_level: float) -> np.ndarray:
    """Mean interval score of every set (points along the last axis), over its counted
    points (a NaN value, bound or error gives a NaN score, left out)."""
    return _point_mean(np.asarray(S.interval_score(errors, lower, upper, coverage_level),
                                  dtype=np.float64))


def _mean_pinball(errors: np.ndarray, quantiles: np.ndarray, *, probabilities: np.ndarray
                  ) -> np.ndarray:
    """Mean pinball loss of every set and level: ``errors`` ``(..., M)``, ``quantiles``
    ``(..., M, K)``, result ``(..., K)`` over the counted points of each level."""
    shape = np.broadcast_shapes(errors.shape, quantiles.shape[:-1])
    loss = S.pinball_loss(np.broadcast_to(errors, shape),
                          np.broadcast_to(quantiles, (*shape, quantiles.shape[-1])),
                          probabilities)
    return _point_mean(np.moveaxis(loss, -1, -2))


def _mean_intervals(columns: dict[str, np.ndarray], *, n_boot: int, method: str, level: float,
                    seed: int, dependence: Dependence | None = None,
                    variable: np.ndarray | None = None,
                    order: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Bootstrap summaries (:data:`_SUMMARIES`) of the means of the per-point ``columns`` of
    one set, through :func:`~xuqcal.analysis.probabilistic._score_intervals` (the bootstrap's
    streams, the points in ``order``, by default their own; with a dependent resample
    ``dependence``, its streams over the groups or blocks of ``variable``, the dependence
    variable's values at the points). A constant column (intervals of one width) has the
    exact summaries ``0, 0, value, value``, without resampling."""
    names = tuple(columns)
    constant = {name: bool(np.all(values == values[0])) for name, values in columns.items()}
    out = {summary: np.full(len(names), np.nan) for summary in _SUMMARIES}
    if not all(constant.values()):
        estimate = np.array([float(np.mean(values)) for values in columns.values()])
        m = next(iter(columns.values())).size
        dependent = ({} if dependence is None else
                     {"dependence": dependence, "variable": variable})
        out = _score_intervals({name: None if constant[name] else values
                                for name, values in columns.items()}, estimate,
                               (np.arange(m) if order is None else order)
                               if dependence is None else None,
                               n_boot=n_boot, method=method, level=level, seed=seed,
                               names=names, **dependent)
    for i, name in enumerate(names):
        if constant[name]:
            value = float(columns[name][0])
            out["bias"][i], out["se"][i] = 0.0, 0.0
            out["ci_low"][i], out["ci_high"][i] = value, value
    return out


def _counted_sets(method: str, *arrays: np.ndarray):
    """The sets of ``arrays`` broadcast together (the points along the last axis, the sets
    along the others): ``(index, counted, m)`` of every set with enough counted points for
    ``method`` (points where none of the first three arrays, error and bounds, is NaN; at
    least one, two for BCa)."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    errors, lower, upper = (np.broadcast_to(a, shape) for a in arrays[:3])
    for index in np.ndindex(*shape[:-1]):
        counted = ~(np.isnan(errors[index]) | np.isnan(lower[index]) | np.isnan(upper[index]))
        m = int(counted.sum())
        if m and not (method == "bca" and m < 2):
            yield index, counted, m


def _interval_bootstrap(errors: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                        *uncertainties: np.ndarray, coverage_level: float, n_boot: int,
                        method: str, level: float, seed: int) -> tuple[np.ndarray, ...]:
    """Bootstrap summaries of the mean width and the mean interval score of every set (the
    points along the last axis, the sets along the others), each set on its counted points:
    arrays ``(..., 2)`` over :data:`INTERVAL_SCORES`, NaN for a set without points (or with
    one, for BCa). With the ``uncertainties`` ``uE`` (one array, when the data have them) the
    points are taken in their binning order, that of :func:`xuqcal.bootstrap` and
    :func:`~xuqcal.analysis.probabilistic.proper_scores`: replicate ``r`` resamples the
    points of their replicate ``r``."""
    arrays = (errors, lower, upper, *uncertainties)
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    errors, lower, upper, *uncertainties = (np.broadcast_to(a, shape) for a in arrays)
    out = [np.full((*shape[:-1], len(INTERVAL_SCORES)), np.nan) for _ in _SUMMARIES]
    for index, counted, _ in _counted_sets(method, errors, lower, upper):
        e, lo, hi = errors[index][counted], lower[index][counted], upper[index][counted]
        columns = {"mean_width": hi - lo,
                   "interval_score": np.asarray(S.interval_score(e, lo, hi, coverage_level))}
        order = (equal_count_order(uncertainties[0][index][counted]) if uncertainties
                 else None)
        summaries = _mean_intervals(columns, n_boot=n_boot, method=method, level=level,
                                    seed=seed, order=order)
        for k, summary in enumerate(_SUMMARIES):
            out[k][index] = summaries[summary]
    return tuple(out)


def _uncertainty_name(ds: xr.Dataset, E: str) -> str | None:
    """The uncertainty variable of the data (its role ``uE``, else ``uE``) when they have one
    (numeric, over ``sample``): the variable whose binning order the data's bootstrap uses."""
    uE = roles(ds, E, None)[1]
    if uE == E or uE not in ds.data_vars:
        return None
    var = ds[uE]
    return uE if SAMPLE_DIM in var.dims and var.dtype.kind in "iuf" else None


def _check_set_length(dependence: Dependence, m: int) -> None:
    """A moving block must fit in the counted points of a set."""
    if dependence.resample == "moving" and int(dependence.block_length) > m:
        raise ValueError(f"block_length: {dependence.block_length} is longer than the {m} "
                         "counted points of a set; a moving block must fit in the data")


def _dependent_interval_bootstrap(errors: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                                  variable: np.ndarray, *, coverage_level: float,
                                  n_boot: int, coverage_n_boot: int, method: str,
                                  level: float, seed: int, dependence: Dependence
                                  ) -> tuple[np.ndarray, ...]:
    """Under the dependent resample ``dependence`` (``variable``: its variable's values), the
    interval ``(low, high)`` of the PICP of every set (the points along the last axis), the
    dependent bootstrap of the mean of the indicator ``lower <= E <= upper``, and with
    ``n_boot`` the summaries ``(..., 2)`` of the mean width and the mean interval score
    (:data:`INTERVAL_SCORES`), all on the same resamples of each set's counted points:
    ``n_boot`` replicates, or ``coverage_n_boot`` without ``n_boot`` (the PICP only)."""
    shape = np.broadcast_shapes(errors.shape, lower.shape, upper.shape, variable.shape)
    errors, lower, upper, variable = (np.broadcast_to(a, shape)
                                      for a in (errors, lower, upper, variable))
    low, high = np.full(shape[:-1], np.nan), np.full(shape[:-1], np.nan)
    out = [np.full((*shape[:-1], len(INTERVAL_SCORES)), np.nan) for _ in _SUMMARIES]
    for index, counted, m in _counted_sets(method, errors, lower, upper):
        _check_set_length(dependence, m)
        e, lo, hi = errors[index][counted], lower[index][counted], upper[index][counted]
        columns = {"picp": ((lo <= e) & (e <= hi)).astype(np.float64)}
        if n_boot:
            columns.update(mean_width=hi - lo, interval_score=np.asarray(
                S.interval_score(e, lo, hi, coverage_level), dtype=np.float64))
        summaries = _mean_intervals(columns, n_boot=n_boot or coverage_n_boot, method=method,
                                    level=level, seed=seed, dependence=dependence,
                                    variable=variable[index][counted])
        low[index], high[index] = summaries["ci_low"][0], summaries["ci_high"][0]
        if n_boot:
            for k, summary in enumerate(_SUMMARIES):
                out[k][index] = summaries[summary][1:]
    return (low, high, *out) if n_boot else (low, high)


def _dependent_quantile_intervals(errors: np.ndarray, quantiles: np.ndarray,
                                  variable: np.ndarray, *, probabilities: np.ndarray,
                                  n_boot: int, method: str, level: float, seed: int,
                                  dependence: Dependence) -> tuple[np.ndarray, np.ndarray]:
    """Under the dependent resample ``dependence``, the interval ``(low, high)`` ``(..., K)``
    of the fraction of points with ``E <= q_p`` of every set and level: the dependent
    bootstrap of the mean of its indicator over the counted points (the levels counted at the
    same points share their resamples); NaN without counted points (or with one, for BCa)."""
    shape = np.broadcast_shapes(errors.shape, quantiles.shape[:-1], variable.shape)
    n_levels = quantiles.shape[-1]
    errors, variable = np.broadcast_to(errors, shape), np.broadcast_to(variable, shape)
    quantiles = np.broadcast_to(quantiles, (*shape, n_levels))
    low = np.full((*shape[:-1], n_levels), np.nan)
    high = np.full((*shape[:-1], n_levels), np.nan)
    for index in np.ndindex(*shape[:-1]):
        e, q = errors[index], quantiles[index]
        counted = ~(np.isnan(e)[:, None] | np.isnan(q))
        with np.errstate(invalid="ignore"):
            below = counted & (e[:, None] <= q)
        sets: dict[bytes, list[int]] = {}
        for k in range(n_levels):
            sets.setdefault(counted[:, k].tobytes(), []).append(k)
        for levels in sets.values():
            mask = counted[:, levels[0]]
            m = int(mask.sum())
            if m == 0 or (method == "bca" and m < 2):
                continue
            _check_set_length(dependence, m)
            columns = {f"p={probabilities[k]:g}": below[mask, k].astype(np.float64)
                       for k in levels}
            summaries = _mean_intervals(columns, n_boot=n_boot, method=method, level=level,
                                        seed=seed, dependence=dependence,
                                        variable=variable[index][mask])
            low[(*index, levels)] = summaries["ci_low"]
            high[(*index, levels)] = summaries["ci_high"]
    return low, high


def _resolved_length(dependence: Dependence, indicators: xr.DataArray,
                     variable: xr.DataArray, what: str) -> Dependence:
    """``dependence`` with ``block_length="auto"`` resolved (the data are read now): the
    largest Politis & White (2004; Patton, Politis & White 2009) length, rounded up, of the
    coverage indicators ``indicators`` (NaN at the points not counted) of every set and
    level, each in the order of ``block`` over its counted points (the stationary
    bootstrap's for ``"stationary"``, the circular block's otherwise; 1 when no indicator
    varies over at least 10 points)."""
    series = np.asarray(indicators.transpose(..., SAMPLE_DIM).values, dtype=np.float64)
    order_values = np.asarray(variable.values)
    chosen, smallest = math.nan, None
    for index in np.ndindex(*series.shape[:-1]):
        x = series[index]
        keep = ~np.isnan(x)
        m = int(keep.sum())
        if m:
            smallest = m if smallest is None else min(smallest, m)
        x = x[keep][np.argsort(order_values[keep], kind="stable")]
        if m < 10 or np.all(x == x[0]):
            continue
        stationary, circular = optimal_block_length(x)
        value = stationary if dependence.resample == "stationary" else circular
        if math.isfinite(value) and not value <= chosen:
            chosen = value
    length = max(1, math.ceil(chosen)) if math.isfinite(chosen) else 1
    if dependence.resample == "moving" and smallest is not None:
        length = min(length, smallest)
    text = f"{chosen:.4g}, rounded up" if math.isfinite(chosen) else "none varies: 1"
    return replace(dependence, block_length=length,
                   block_length_rule="Politis-White (2004; Patton-Politis-White 2009) of the "
                                     f"{what} in the order of {dependence.variable}, the "
                                     f"largest over the sets: {text}")


def _dependence_iv(ds: xr.Dataset, resample: object, groups: object, block: object,
                   block_length: object) -> Dependence | None:
    """The checked resample (``None`` for ``"iid"``); ``block_length="auto"`` is resolved
    later, from the coverage indicators."""
    dependence = check_dependence(ds, resample, groups, block, block_length)
    return None if dependence.iid else dependence


def _dependent_attrs(dependence: Dependence, *, n_boot: int, method: str, seed: int) -> dict:
    """The attributes of the intervals of the coverage fractions under ``dependence``."""
    name = "BCa" if method == "bca" else "percentile"
    return {"ci_method": f"dependent bootstrap ({name}, {n_boot} replicates, resample="
                         f"{dependence.resample!r}) of the mean of the coverage indicator; the "
                         "Wilson interval assumes independent points",
            "coverage_n_boot": n_boot, "coverage_method": method, "coverage_seed": seed,
            **dependence.attrs()}


def _gathered(var: xr.DataArray, *dims: str) -> xr.DataArray:
    """``var`` with its points (and ``dims``) in one chunk when Dask-backed: the means of
    the scores and the bootstrap of a set read all its points in one task."""
    if var.chunks is None:
        return var
    return var.chunk({d: -1 for d in (SAMPLE_DIM, *dims)})


@by_role
def quantile_coverage(ds: xr.Dataset, *, level: float = defaults.LEVEL,
                      tol: float = defaults.COVERAGE_TOLERANCE, E: str = defaults.E,
                      quantiles: str | None = None, resample: str = "iid",
                      groups: str | None = None, block: str | None = None,
                      block_length: int | str | None = None, n_boot: int | None = None,
                      method: str = "bca", seed: int = defaults.SEED) -> xr.Dataset:
    """The observed fraction of points below each predicted quantile, against its nominal
    probability, the mean pinball loss per level and the calibration error.

    For a quantile of nominal probability ``p``, the fraction of points with ``E <= q_p``
    (``q_p``: the predicted quantile of the error; equivalently ``observed <= `` the
    predicted quantile of the target) estimates ``P(E <= q_p)``, which is ``p`` for calibrated
    quantiles. Observed against nominal is the quantile calibration curve
    (:func:`xuqcal.plot.quantile_calibration`); ``calibration_error``, the mean
    of ``|observed - p|`` over the levels, summarises its distance from the diagonal (the
    area between them for evenly spread levels). The pinball loss
    ``ρ_p(E - q_p) = (E - q_p) (p - 1{E < q_p})`` (:func:`xuqcal.core.scores.pinball_loss`) is
    a proper score of each quantile: lower is better, in the units of ``E``; twice its mean over
    many evenly spread levels approximates the CRPS.

    Parameters
    ----------
    ds : xarray.Dataset
        Data with ``E`` and a variable of predicted quantiles of the error over ``sample`` and
        a dimension of probabilities (:func:`~xuqcal.io.from_quantiles`), and any extra
        dimensions.
    level : float
        Confidence level of the Wilson intervals.
    tol : float
        A fraction is valid when its interval overlaps ``[p - tol, p + tol]`` (default
        :data:`~xuqcal.core.defaults.COVERAGE_TOLERANCE`, the rule of P. Pernot, arXiv
        2408.13089).
    E : str
        Name of the error variable (by default the variable of role ``E``).
    quantiles : str, optional
        Name of the quantiles variable; by default the variable of role ``quantiles``.
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        How the points depend on each other, as :func:`xuqcal.bootstrap`: independent
        (default: the Wilson intervals, the results of earlier versions bit for bit), in
        groups of ``groups``, or correlated along ``block``. Under a dependent resample the
        interval of each fraction is the dependent bootstrap of the mean of its indicator
        ``E <= q_p`` (see the module), replicate ``r`` drawn from the stream
        ``(seed, "bootstrap-<resample>", r)`` over each set's counted points.
    groups : str, optional
        With ``resample="cluster"``: the variable over ``sample`` alone holding each point's
        group.
    block : str, optional
        With a block scheme: the variable over ``sample`` alone that orders the points.
    block_length : int or "auto", optional
        With a block scheme: points per block (the mean length for ``"stationary"``);
        ``"auto"``: the largest Politis & White length of the indicators ``E <= q_p`` of the
        levels and sets in the order of ``block`` (one length for all; the data are read at
        the call).
    n_boot : int, optional
        With a dependent resample: the bootstrap replicates (default
        :data:`~xuqcal.core.defaults.N_BOOT`; at least ``ceil(2 / (1 - level))``). Not used
        (refused) with ``resample="iid"``.
    method : {"bca", "percentile"}
        With a dependent resample: the bootstrap interval (BCa: the delete-one-group or
        delete-one-block jackknife for the acceleration).
    seed : int
        With a dependent resample: the seed of the bootstrap streams.

    Returns
    -------
    xarray.Dataset
        Over the probabilities (coordinate ``quantile``: the nominal probabilities) and the
        extra dimensions: ``observed`` (fraction with ``E <= q_p``), ``count`` (points with
        ``E <= q_p``), ``n`` (points counted), ``ci_low``, ``ci_high`` (Wilson-cc interval of
        the fraction), ``valid`` (the interval overlaps ``[p - tol, p + tol]``) and
        ``pinball_loss`` (mean pinball loss of the level over the counted points); over the
        extra dimensions only: ``calibration_error`` (mean of ``|observed - p|`` over the
        levels). Attributes ``level``, ``tol``, ``quantile_dim`` (the dimension of
        probabilities), ``ci_method``, ...; under a dependent resample ``ci_low`` and
        ``ci_high`` are the dependent bootstrap's (``ci_method`` says so), with the attributes
        ``coverage_n_boot``, ``coverage_method``, ``coverage_seed``, ``random_streams`` and
        those of :meth:`~xuqcal.analysis.dependent.Dependence.attrs` (``resample``,
        ``groups`` or ``block``, ``block_length``, ``block_length_rule``, ``jackknife``).
        Lazy on Dask-backed data.

    Raises
    ------
    ValueError
        Before any work: for a confidence level not in (0, 1), a missing variable, no
        dimension of probabilities, or probabilities that are not in (0, 1) and strictly
        increasing, ``resample``, ``groups``, ``block`` or ``block_length`` refused by
        :func:`~xuqcal.analysis.dependent.check_dependence` (the message starts with the
        parameter's name), ``n_boot`` with ``resample="iid"`` or too few, an unknown
        ``method`` or an invalid ``seed``. For infinite values, and a ``groups`` variable
        with missing values or fewer than 2 groups in a set (when computed, for Dask-backed
        data).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from xuqcal.io import from_quantiles
    >>> rng = np.random.default_rng(0)
    >>> p = [0.1, 0.5, 0.9]
    >>> q = stats.norm.ppf(p) * np.ones((4000, 1))  # calibrated: observed ~ N(0, 1)
    >>> cov = quantile_coverage(from_quantiles(q, rng.normal(size=4000), p, axis=1))
    >>> cov.observed.values.round(2).tolist(), bool(cov.valid.all())
    ([0.1, 0.51, 0.9], True)
    >>> cov.pinball_loss.values.round(2).tolist(), round(float(cov.calibration_error), 3)
    ([0.17, 0.4, 0.18], 0.007)
    """
    level = check_level(level)
    tol = check_tolerance(tol)
    dependence = _dependence_iv(ds, resample, groups, block, block_length)
    if dependence is None:
        if n_boot is not None:
            raise ValueError(f"n_boot: only used with a dependent resample (resample="
                             f"'cluster' or a block scheme), got {n_boot!r} with "
                             "resample='iid' (the Wilson intervals draw no replicates)")
        check_score_bootstrap(0, method, level, seed)
    else:
        n_boot, seed = check_score_bootstrap(defaults.N_BOOT if n_boot is None else n_boot,
                                             method, level, seed)
        if not n_boot:
            raise ValueError(f"n_boot: a dependent resample (resample={resample!r}) needs "
                             "replicates for the intervals of the fractions, got 0")
    errors = _check_variable(ds, E, "E")
    name = variable_with_role(ds, "quantiles", quantiles)
    predicted = _check_variable(ds, name, "quantiles")
    dim = predicted.attrs.get(QUANTILE_DIM_ATTR)
    if dim not in predicted.dims:
        candidates = [d for d in predicted.dims if d not in errors.dims]
        if len(candidates) != 1:
            raise ValueError(f"{name}: cannot tell its dimension of probabilities among "
                             f"{predicted.dims} (expected one dimension that {E} lacks)")
        dim = candidates[0]
    if dim not in predicted.coords:
        raise ValueError(f"{name}: the dimension {dim!r} has no coordinate of nominal "
                         "probabilities")
    try:
        probabilities = check_probabilities(predicted[dim].values)
    except ValueError as error:
        raise ValueError(f"{name}: its coordinate {dim!r}: {error}") from None
    below, counted = xr.apply_ufunc(_below, errors, predicted, output_core_dims=[[], []],
                                    dask="parallelized", output_dtypes=[bool, bool])
    count, n = below.sum(SAMPLE_DIM), counted.sum(SAMPLE_DIM)
    nominal = xr.DataArray(probabilities, dims=dim, coords={dim: predicted[dim]})
    values = _fractions(count, n, nominal, level, tol)
    pinball = xr.apply_ufunc(
        _mean_pinball, _gathered(errors), _gathered(predicted, dim),
        input_core_dims=[[SAMPLE_DIM], [SAMPLE_DIM, dim]], output_core_dims=[[dim]],
        kwargs={"probabilities": probabilities}, dask="parallelized",
        output_dtypes=[np.float64])
    dependent_attrs = {}
    if dependence is not None:
        variable = ds[dependence.variable]
        if dependence.block_length == AUTO_LENGTH:
            dependence = _resolved_length(dependence, below.where(counted), variable,
                                          "indicators E <= q_p")
        low, high = xr.apply_ufunc(
            _dependent_quantile_intervals, _gathered(errors), _gathered(predicted, dim),
            _gathered(variable), input_core_dims=[[SAMPLE_DIM], [SAMPLE_DIM, dim],
                                                  [SAMPLE_DIM]],
            output_core_dims=[[dim], [dim]],
            kwargs={"probabilities": probabilities, "n_boot": n_boot, "method": method,
                    "level": level, "seed": seed, "dependence": dependence},
            dask="parallelized", output_dtypes=[np.float64, np.float64])
        values.update(ci_low=low, ci_high=high,
                      valid=(low <= nominal + tol) & (nominal - tol <= high))
        dependent_attrs = {**_dependent_attrs(dependence, n_boot=n_boot, method=method,
                                              seed=seed), "random_streams": RNG_DESCRIPTION}
    calibration_error = abs(values["observed"] - nominal).mean(dim, skipna=False)
    long_names = {
        "observed": "observed fraction of points with E <= the predicted quantile",
        "count": "number of points with E <= the predicted quantile",
        "n": "number of points counted",
        "ci_low": ("Wilson-cc interval of the fraction, lower" if dependence is None else
                   "dependent bootstrap interval of the fraction, lower"),
        "ci_high": ("Wilson-cc interval of the fraction, upper" if dependence is None else
                    "dependent bootstrap interval of the fraction, upper"),
        "valid": "the interval of the observed fraction overlaps [p - tol, p + tol]",
        "pinball_loss": "mean pinball loss (E - q_p)(p - 1{E < q_p}) of the level",
        "calibration_error": "mean |observed - p| over the levels (distance of the quantile "
                             "calibration curve from the diagonal)",
    }
    result = xr.Dataset({"observed": values["observed"], "count": count, "n": n,
                         "ci_low": values["ci_low"], "ci_high": values["ci_high"],
                         "valid": values["valid"], "pinball_loss": pinball,
                         "calibration_error": calibration_error})
    for key, text in long_names.items():
        result[key].attrs = {"long_name": text}
    units = errors.attrs.get("units")
    if units is not None:
        result["pinball_loss"].attrs["units"] = units
    result = result.transpose(dim, ...)
    ci_method = dependent_attrs.pop("ci_method", _CI_METHOD)
    result.attrs = provenance(level=level, tol=tol, ci_method=ci_method, definition="E <= q_p",
                              n_samples=int(ds.sizes[SAMPLE_DIM]), E=E, quantiles=name,
                              quantile_dim=str(dim), **dependent_attrs)
    return result


@by_role
def interval_coverage(ds: xr.Dataset, *, level: float = defaults.LEVEL,
                      tol: float = defaults.COVERAGE_TOLERANCE, E: str = defaults.E,
                      lower: str | None = None, upper: str | None = None,
                      coverage_level: float | None = None,
                      n_boot: int = defaults.N_BOOT_SCORES,
                      method: str = "bca", seed: int = defaults.SEED, resample: str = "iid",
                      groups: str | None = None, block: str | None = None,
                      block_length: int | str | None = None) -> xr.Dataset:
    """The prediction interval coverage probability (PICP) of a predicted interval of the
    error, against its nominal level, the interval's mean width (sharpness) and its mean
    interval (Winkler) score.

    The interval score of a point, ``(U - L) + (2/α)(L - E)₊ + (2/α)(E - U)₊`` with
    ``α = 1 - coverage_level`` (:func:`xuqcal.core.scores.interval_score`; Gneiting & Raftery
    2007), is the width plus a penalty for a point outside: a proper score of the interval,
    lower is better, in the units of ``E``. With the sign convention of xuqcal the bounds of
    the error are those of the target minus the prediction, so the score of ``E`` in
    ``[lower, upper]`` is that of the target in its predicted interval.

    Parameters
    ----------
    ds : xarray.Dataset
        Data with ``E`` and the bounds of a predicted interval of the error over ``sample``
        (:func:`~xuqcal.io.from_arrays` or :func:`~xuqcal.io.read_csv` with ``lower=``,
        ``upper=``, ``coverage_level=``), and any extra dimensions.
    level : float
        Confidence level of the Wilson interval of the PICP and of the bootstrap intervals.
    tol : float
        The PICP is valid when its interval overlaps ``[p - tol, p + tol]`` (default
        :data:`~xuqcal.core.defaults.COVERAGE_TOLERANCE`).
    E : str
        Name of the error variable (by default the variable of role ``E``).
    lower, upper : str, optional
        Names of the bounds; by default the variables of roles ``interval_lower`` and
        ``interval_upper``.
    coverage_level : float, optional
        Nominal level of the interval; by default the attribute ``coverage_level`` of the
        bounds.
    n_boot : int
        Bootstrap replicates of the intervals of ``mean_width`` and ``interval_score`` (0, the
        default: no intervals; else at least ``ceil(2 / (1 - level))``). The replicates are
        drawn from the bootstrap's streams (as by
        :func:`~xuqcal.analysis.probabilistic.proper_scores`), over the counted points of each
        set in the binning order of ``uE`` when the data have it (so that replicate ``r``
        resamples the points of the replicate ``r`` of :func:`xuqcal.bootstrap` and of the
        proper scores: the scores of all rest on the same resamples), else in their order;
        a set whose intervals all have one width gets the exact interval
        ``[width, width]`` of its mean width; a set without counted points (or with one, for
        BCa) gets NaN.
    method : {"bca", "percentile"}
        Bootstrap interval method (BCa: exact leave-one-out means for the acceleration).
    seed : int
        Seed of the bootstrap streams.
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        How the points depend on each other, as :func:`xuqcal.bootstrap`: independent
        (default: the Wilson interval of the PICP and the iid bootstrap, the results of
        earlier versions bit for bit), in groups of ``groups``, or correlated along
        ``block``. Under a dependent resample the interval of the PICP is the dependent
        bootstrap of the mean of the indicator ``lower <= E <= upper`` (``n_boot``
        replicates, or :data:`~xuqcal.core.defaults.N_BOOT` when ``n_boot=0``, which then
        draws no intervals of the scores), and the intervals of ``mean_width`` and
        ``interval_score`` rest on the same dependent resamples (replicate ``r`` from the
        stream ``(seed, "bootstrap-<resample>", r)`` over each set's counted points; BCa
        with the delete-one-group or delete-one-block jackknife).
    groups : str, optional
        With ``resample="cluster"``: the variable over ``sample`` alone holding each point's
        group.
    block : str, optional
        With a block scheme: the variable over ``sample`` alone that orders the points.
    block_length : int or "auto", optional
        With a block scheme: points per block (the mean length for ``"stationary"``);
        ``"auto"``: the largest Politis & White length of the indicators
        ``lower <= E <= upper`` of the sets in the order of ``block`` (one length for all;
        the data are read at the call).

    Returns
    -------
    xarray.Dataset
        Over the extra dimensions (scalars for one data set): ``picp`` (fraction of points
        with ``lower <= E <= upper``), ``count`` (points inside), ``n`` (points counted),
        ``ci_low``, ``ci_high`` (Wilson-cc interval of the PICP), ``valid`` (that interval
        overlaps ``[coverage_level - tol, coverage_level + tol]``), ``mean_width`` (mean of
        ``upper - lower``, in the units of ``E``) and ``interval_score`` (mean interval
        score, units of ``E``). With ``n_boot``, over ``score`` (:data:`INTERVAL_SCORES`:
        ``mean_width``, ``interval_score``; last dimension): ``score_bias``, ``score_se``,
        ``score_ci_low``, ``score_ci_high`` (the ``bias``, ``se``, ``ci_low``, ``ci_high`` of
        :func:`~xuqcal.analysis.probabilistic.proper_scores`, prefixed: ``ci_low`` and
        ``ci_high`` are the PICP's). Attributes ``coverage_level``, ``level``, ``tol``,
        ``ci_method``, ... (and ``n_boot``, ``method``, ``seed``, ``random_streams`` with
        intervals; under a dependent resample, ``ci_method`` names the dependent bootstrap of
        the PICP, with ``coverage_n_boot``, ``coverage_method``, ``coverage_seed`` and the
        attributes of :meth:`~xuqcal.analysis.dependent.Dependence.attrs`: ``resample``,
        ``groups`` or ``block``, ``block_length``, ``block_length_rule``, ``jackknife``).
        Lazy on Dask-backed data.

    Raises
    ------
    ValueError
        Before any work: for a level not in (0, 1), a missing variable, no nominal level (no
        attribute and no ``coverage_level``), bounds that record different levels, too few
        ``n_boot``, an unknown ``method`` or an invalid ``seed``, ``resample``, ``groups``,
        ``block`` or ``block_length`` refused by
        :func:`~xuqcal.analysis.dependent.check_dependence` (the message starts with the
        parameter's name). For bounds with ``lower > upper`` or infinite values, for a point
        where some of ``E``, ``lower`` and ``upper`` are NaN but not all, and for a
        ``groups`` variable with missing values or fewer than 2 groups in a set (when
        computed, for Dask-backed data).

    Examples
    --------
    >>> from xuqcal.io import from_arrays
    >>> ds = from_arrays([0.1, -0.3, 0.5, 0.0], lower=[-0.2, -0.2, -0.4, -0.1],
    ...                  upper=[0.2, 0.2, 0.4, 0.1], coverage_level=0.5)
    >>> cov = interval_coverage(ds)
    >>> float(cov.picp), float(cov.mean_width), bool(cov.valid)
    (0.5, 0.45, True)
    >>> round(float(cov.interval_score), 6)  # 0.45 + (2/0.5)(0.1 + 0.1) / 4
    0.65
    >>> b = interval_coverage(ds, n_boot=200, method="percentile")
    >>> b.score.values.tolist(), bool(b.score_ci_low.sel(score="interval_score") <= 0.65)
    (['mean_width', 'interval_score'], True)
    """
    level = check_level(level)
    tol = check_tolerance(tol)
    n_boot, seed = check_score_bootstrap(n_boot, method, level, seed)
    dependence = _dependence_iv(ds, resample, groups, block, block_length)
    errors = _check_variable(ds, E, "E")
    uE_name = _uncertainty_name(ds, E)
    bounds, coverage_level = interval_bounds(ds, lower, upper, coverage_level)
    errors, bounds = _checked_absence(errors, bounds)
    inside, counted, width = xr.apply_ufunc(
        _inside, errors, bounds["lower"], bounds["upper"], output_core_dims=[[], [], []],
        dask="parallelized", output_dtypes=[bool, bool, np.float64])
    count, n = inside.sum(SAMPLE_DIM), counted.sum(SAMPLE_DIM)
    values = _fractions(count, n, coverage_level, level, tol)
    mean_width = width.sum(SAMPLE_DIM) / n.where(n > 0)
    gathered = [_gathered(v) for v in (errors, bounds["lower"], bounds["upper"])]
    interval_score = xr.apply_ufunc(
        _mean_interval_score, *gathered, input_core_dims=[[SAMPLE_DIM]] * 3,
        kwargs={"coverage_level": coverage_level}, dask="parallelized",
        output_dtypes=[np.float64])
    dependent_summaries: list = []
    dependent_attrs = {}
    if dependence is not None:
        variable = ds[dependence.variable]
        if dependence.block_length == AUTO_LENGTH:
            dependence = _resolved_length(dependence, inside.where(counted), variable,
                                          "indicators lower <= E <= upper")
        coverage_n_boot = n_boot or defaults.N_BOOT
        outputs = 6 if n_boot else 2
        low, high, *dependent_summaries = xr.apply_ufunc(
            _dependent_interval_bootstrap, *gathered, _gathered(variable),
            input_core_dims=[[SAMPLE_DIM]] * 4,
            output_core_dims=[[], []] + [[SCORE_DIM]] * (outputs - 2),
            kwargs={"coverage_level": coverage_level, "n_boot": n_boot,
                    "coverage_n_boot": coverage_n_boot, "method": method, "level": level,
                    "seed": seed, "dependence": dependence},
            dask="parallelized", output_dtypes=[np.float64] * outputs,
            dask_gufunc_kwargs={"output_sizes": {SCORE_DIM: len(INTERVAL_SCORES)}})
        values.update(ci_low=low, ci_high=high,
                      valid=(low <= coverage_level + tol) & (coverage_level - tol <= high))
        dependent_attrs = _dependent_attrs(dependence, n_boot=coverage_n_boot, method=method,
                                           seed=seed)
        if not n_boot:
            dependent_attrs["random_streams"] = RNG_DESCRIPTION
    long_names = {
        "picp": "prediction interval coverage probability: fraction with lower <= E <= upper",
        "count": "number of points inside the interval",
        "n": "number of points counted",
        "ci_low": ("Wilson-cc interval of the PICP, lower" if dependence is None else
                   "dependent bootstrap interval of the PICP, lower"),
        "ci_high": ("Wilson-cc interval of the PICP, upper" if dependence is None else
                    "dependent bootstrap interval of the PICP, upper"),
        "valid": "the interval of the PICP overlaps [p - tol, p + tol]",
        "mean_width": "mean width of the interval, upper - lower (sharpness)",
        "interval_score": "mean interval (Winkler) score (U - L) + (2/α)(L - E)₊ + "
                          "(2/α)(E - U)₊, α = 1 - coverage_level",
    }
    result = xr.Dataset({"picp": values["observed"], "count": count, "n": n,
                         "ci_low": values["ci_low"], "ci_high": values["ci_high"],
                         "valid": values["valid"], "mean_width": mean_width,
                         "interval_score": interval_score})
    bootstrap = {}
    if n_boot:
        # the points in the binning order of uE, when the data have it: replicate r of the
        # scores resamples the points of replicate r of the data's bootstrap
        ordering = [_gathered(ds[uE_name])] if uE_name is not None else []
        summaries = dependent_summaries or xr.apply_ufunc(
            _interval_bootstrap, *gathered, *ordering,
            input_core_dims=[[SAMPLE_DIM]] * (3 + len(ordering)),
            output_core_dims=[[SCORE_DIM]] * 4,
            kwargs={"coverage_level": coverage_level, "n_boot": n_boot, "method": method,
                    "level": level, "seed": seed},
            dask="parallelized", output_dtypes=[np.float64] * 4,
            dask_gufunc_kwargs={"output_sizes": {SCORE_DIM: len(INTERVAL_SCORES)}})
        texts = {"bias": "bootstrap bias of the mean score",
                 "se": "bootstrap standard error of the mean score",
                 "ci_low": "lower bound of the bootstrap interval of the mean score",
                 "ci_high": "upper bound of the bootstrap interval of the mean score"}
        for summary, values_ in zip(_SUMMARIES, summaries, strict=True):
            result[f"score_{summary}"] = values_
            long_names[f"score_{summary}"] = texts[summary]
        result = result.assign_coords({SCORE_DIM: list(INTERVAL_SCORES)})
        bootstrap = {"n_boot": n_boot, "method": method, "seed": seed,
                     "random_streams": RNG_DESCRIPTION}
    for key, text in long_names.items():
        result[key].attrs = {"long_name": text}
    units = errors.attrs.get("units")
    if units is not None:
        for key in ("mean_width", "interval_score", *(
                f"score_{summary}" for summary in _SUMMARIES if n_boot)):
            result[key].attrs["units"] = units
    ci_method = dependent_attrs.pop("ci_method", _CI_METHOD)
    result.attrs = provenance(coverage_level=coverage_level, level=level, tol=tol,
                              ci_method=ci_method, definition="lower <= E <= upper",
                              n_samples=int(ds.sizes[SAMPLE_DIM]), E=E,
                              lower=str(bounds["lower"].name), upper=str(bounds["upper"].name),
                              **bootstrap, **dependent_attrs)
    return result
