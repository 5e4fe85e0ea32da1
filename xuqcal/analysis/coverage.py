"""Coverage of predicted quantiles and intervals of the error.

- :func:`quantile_coverage`: for each predicted quantile of the error (variable of role
  ``quantiles``, :func:`~xuqcal.io.from_quantiles`), the observed fraction of points with
  ``E <= q_p`` against its nominal probability ``p``;
- :func:`interval_coverage`: the prediction interval coverage probability (PICP) of a predicted
  interval (variables of roles ``interval_lower``, ``interval_upper``, given to
  :func:`~xuqcal.io.from_arrays` or :func:`~xuqcal.io.read_csv` with ``lower=``, ``upper=``),
  the fraction of points with ``lower <= E <= upper``, against its nominal level, and the mean
  width of the interval (its sharpness).

A fraction ``k / n`` comes with its Wilson score interval with continuity correction
(:func:`xuqcal.core.intervals.wilson_interval`, as R's ``prop.test``); it is *valid* when that
interval contains the nominal value. Both analyses broadcast over the extra dimensions of the
data (``model``, ``task``, ...) and stay lazy on Dask-backed data (the points are counted chunk
by chunk; nothing is computed until ``.compute()``). A point where ``E`` or a bound is NaN (an
absent point of a stacked data set) is not counted.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.core import defaults
from xuqcal.core.checks import check_level, check_tolerance
from xuqcal.core.intervals import coverage_validity
from xuqcal.core.provenance import provenance
from xuqcal.io.expressions import _list_names
from xuqcal.io.quantiles import (
    INTERVAL_LEVEL_ATTR,
    QUANTILE_DIM_ATTR,
    check_probabilities,
    variable_with_role,
)
from xuqcal.io.schema import SAMPLE_DIM, by_role

__all__ = ["interval_coverage", "quantile_coverage"]

_CI_METHOD = "Wilson score interval with continuity correction"


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


@by_role
def quantile_coverage(ds: xr.Dataset, *, level: float = defaults.LEVEL,
                      tol: float = defaults.COVERAGE_TOLERANCE, E: str = defaults.E,
                      quantiles: str | None = None) -> xr.Dataset:
    """The observed fraction of points below each predicted quantile, against its nominal
    probability.

    For a quantile of nominal probability ``p``, the fraction of points with ``E <= q_p``
    (``q_p``: the predicted quantile of the error; equivalently ``observed <= `` the
    predicted quantile of the target) estimates ``P(E <= q_p)``, which is ``p`` for calibrated
    quantiles.

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

    Returns
    -------
    xarray.Dataset
        Over the probabilities (coordinate ``quantile``: the nominal probabilities) and the
        extra dimensions: ``observed`` (fraction with ``E <= q_p``), ``count`` (points with
        ``E <= q_p``), ``n`` (points counted), ``ci_low``, ``ci_high`` (Wilson-cc interval of
        the fraction) and ``valid`` (the interval contains the nominal probability). Lazy on
        Dask-backed data.

    Raises
    ------
    ValueError
        Before any work: for a confidence level not in (0, 1), a missing variable, no
        dimension of probabilities, or probabilities that are not in (0, 1) and strictly
        increasing.

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
    """
    level = check_level(level)
    tol = check_tolerance(tol)
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
    long_names = {
        "observed": "observed fraction of points with E <= the predicted quantile",
        "count": "number of points with E <= the predicted quantile",
        "n": "number of points counted",
        "ci_low": "Wilson-cc interval of the fraction, lower",
        "ci_high": "Wilson-cc interval of the fraction, upper",
        "valid": "the interval of the observed fraction overlaps [p - tol, p + tol]",
    }
    result = xr.Dataset({"observed": values["observed"], "count": count, "n": n,
                         "ci_low": values["ci_low"], "ci_high": values["ci_high"],
                         "valid": values["valid"]})
    for key, text in long_names.items():
        result[key].attrs = {"long_name": text}
    result = result.transpose(dim, ...)
    result.attrs = provenance(level=level, tol=tol, ci_method=_CI_METHOD, definition="E <= q_p",
                              n_samples=int(ds.sizes[SAMPLE_DIM]), E=E, quantiles=name)
    return result


@by_role
def interval_coverage(ds: xr.Dataset, *, level: float = defaults.LEVEL,
                      tol: float = defaults.COVERAGE_TOLERANCE, E: str = defaults.E,
                      lower: str | None = None, upper: str | None = None,
                      interval_level: float | None = None) -> xr.Dataset:
    """The prediction interval coverage probability (PICP) of a predicted interval of the
    error, against its nominal level, and the interval's mean width (sharpness).

    Parameters
    ----------
    ds : xarray.Dataset
        Data with ``E`` and the bounds of a predicted interval of the error over ``sample``
        (:func:`~xuqcal.io.from_arrays` or :func:`~xuqcal.io.read_csv` with ``lower=``,
        ``upper=``, ``interval_level=``), and any extra dimensions.
    level : float
        Confidence level of the Wilson interval of the PICP.
    tol : float
        The PICP is valid when its interval overlaps ``[p - tol, p + tol]`` (default
        :data:`~xuqcal.core.defaults.COVERAGE_TOLERANCE`).
    E : str
        Name of the error variable (by default the variable of role ``E``).
    lower, upper : str, optional
        Names of the bounds; by default the variables of roles ``interval_lower`` and
        ``interval_upper``.
    interval_level : float, optional
        Nominal level of the interval; by default the attribute ``interval_level`` of the
        bounds.

    Returns
    -------
    xarray.Dataset
        Over the extra dimensions (scalars for one data set): ``picp`` (fraction of points
        with ``lower <= E <= upper``), ``count`` (points inside), ``n`` (points counted),
        ``ci_low``, ``ci_high`` (Wilson-cc interval of the PICP), ``valid`` (the interval
        contains ``interval_level``) and ``mean_width`` (mean of ``upper - lower``, in the
        units of ``E``). Attribute ``interval_level``. Lazy on Dask-backed data.

    Raises
    ------
    ValueError
        Before any work: for a level not in (0, 1), a missing variable, no nominal level (no
        attribute and no ``interval_level``), or bounds that record different levels.

    Examples
    --------
    >>> from xuqcal.io import from_arrays
    >>> ds = from_arrays([0.1, -0.3, 0.5, 0.0], lower=[-0.2, -0.2, -0.4, -0.1],
    ...                  upper=[0.2, 0.2, 0.4, 0.1], interval_level=0.5)
    >>> cov = interval_coverage(ds)
    >>> float(cov.picp), float(cov.mean_width), bool(cov.valid)
    (0.5, 0.45, True)
    """
    level = check_level(level)
    tol = check_tolerance(tol)
    errors = _check_variable(ds, E, "E")
    names = {bound: variable_with_role(ds, f"interval_{bound}", given)
             for bound, given in (("lower", lower), ("upper", upper))}
    bounds = {bound: _check_variable(ds, name, bound) for bound, name in names.items()}
    if interval_level is None:
        recorded = {bound: var.attrs.get(INTERVAL_LEVEL_ATTR) for bound, var in bounds.items()}
        if recorded["lower"] is None or recorded["upper"] is None:
            missing = [names[b] for b, value in recorded.items() if value is None]
            raise ValueError(f"interval_level: not given, and {', '.join(missing)} records no "
                             f"attribute '{INTERVAL_LEVEL_ATTR}'; pass interval_level=")
        if float(recorded["lower"]) != float(recorded["upper"]):
            raise ValueError(f"interval_level: the bounds record different levels "
                             f"({names['lower']}: {recorded['lower']}, {names['upper']}: "
                             f"{recorded['upper']}); pass interval_level=")
        interval_level = recorded["lower"]
    interval_level = check_level(interval_level, "interval_level")
    inside, counted, width = xr.apply_ufunc(
        _inside, errors, bounds["lower"], bounds["upper"], output_core_dims=[[], [], []],
        dask="parallelized", output_dtypes=[bool, bool, np.float64])
    count, n = inside.sum(SAMPLE_DIM), counted.sum(SAMPLE_DIM)
    values = _fractions(count, n, interval_level, level, tol)
    mean_width = width.sum(SAMPLE_DIM) / n.where(n > 0)
    long_names = {
        "picp": "prediction interval coverage probability: fraction with lower <= E <= upper",
        "count": "number of points inside the interval",
        "n": "number of points counted",
        "ci_low": "Wilson-cc interval of the PICP, lower",
        "ci_high": "Wilson-cc interval of the PICP, upper",
        "valid": "the interval of the PICP overlaps [p - tol, p + tol]",
        "mean_width": "mean width of the interval, upper - lower (sharpness)",
    }
    result = xr.Dataset({"picp": values["observed"], "count": count, "n": n,
                         "ci_low": values["ci_low"], "ci_high": values["ci_high"],
                         "valid": values["valid"], "mean_width": mean_width})
    for key, text in long_names.items():
        result[key].attrs = {"long_name": text}
    units = errors.attrs.get("units")
    if units is not None:
        result["mean_width"].attrs["units"] = units
    result.attrs = provenance(interval_level=interval_level, level=level, tol=tol,
                              ci_method=_CI_METHOD, definition="lower <= E <= upper",
                              n_samples=int(ds.sizes[SAMPLE_DIM]), E=E, lower=names["lower"],
                              upper=names["upper"])
    return result
