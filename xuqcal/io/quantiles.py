"""Predicted quantiles and intervals of the error, and the checks of the probabilistic inputs.

**Sign convention.** As everywhere in xuqcal, the error is ``E = observed - prediction`` (the
reference value minus the point prediction, as in ``E="logP - y_pred"``). A predicted
distribution of the target ``Y`` with point prediction ``ŷ`` is the predicted distribution of
the error ``Y - ŷ``: its quantile at probability ``p`` is ``q_p - ŷ``, with ``q_p`` the
predicted quantile of the target, and ``observed <= q_p`` exactly when ``E <= q_p - ŷ``. The
order of the quantiles is kept, so coverage is read the same way on the target and on the
error.

- :func:`from_quantiles` builds a dataset of predicted quantiles: the variable ``quantiles``
  (role ``quantiles``) over ``sample`` and ``quantile`` (coordinate: the nominal
  probabilities), and ``E``. It has no ``uE``.
- A predicted interval of the error at a stated level is given to
  :func:`~xuqcal.io.from_arrays` or :func:`~xuqcal.io.read_csv` with ``lower=``, ``upper=``
  and ``coverage_level=``; the helpers of this module check those arguments, the bounds
  (finite, ``lower <= upper``) and, only when asked (``uE_from_interval=True``), derive
  ``uE = (upper - lower) / (2 z)`` with ``z = Φ⁻¹((1 + coverage_level) / 2)``, i.e. the
  standard deviation of a normal distribution whose central interval at that level is the
  given one.
- :func:`variable_with_role` finds a variable by its role (attribute ``xuqcal_role``).

The values are checked at once for NumPy-backed data; for Dask-backed data the checks are part
of the graph of the returned dataset and raise the same ``ValueError`` when it is computed.
Every message names the argument or variable, the problem and the rows (the ``sample``
coordinate; with extra dimensions, the row and the labels of its slice).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import xarray as xr

from xuqcal.io.expressions import _MAX_EXAMPLES, _list_names

# the value checks (one mask-based mechanism) and the intervals' helpers live in schema, which
# from_arrays needs; they are importable from here, where the probabilistic inputs are built
from xuqcal.io.schema import (  # noqa: F401
    COVERAGE_LEVEL_ATTR,
    LEGACY_COVERAGE_LEVEL_ATTR,
    PROBABILISTIC_ROLES,
    ROLE_ATTR,
    SAMPLE_DIM,
    _check_feature_name,
    _dataset_attrs,
    _is_dask,
    _item,
    _points_first,
    _sample_coord,
    _to_1d,
    _variable_attrs,
    check_points,
    check_without_uE,
    finite_checks,
    interval_arguments,
    interval_attrs,
    interval_checks,
    interval_z,
    recorded_coverage_level,
    uE_expression,
    uE_from_bounds,
)

__all__ = ["COVERAGE_LEVEL_ATTR", "from_quantiles", "interval_z", "recorded_coverage_level",
           "variable_with_role"]

QUANTILE_DIM_ATTR = "quantile_dim"
"""The attribute of a ``quantiles`` variable naming its dimension of probabilities."""

#: The default variable name of each probabilistic role.
DEFAULT_NAMES = {"members": "members", "quantiles": "quantiles", "interval_lower": "lower",
                 "interval_upper": "upper"}





# --------------------------------------------------------------------------------------------
# Roles
# --------------------------------------------------------------------------------------------


def variable_with_role(ds: xr.Dataset, role: str, name: str | None = None) -> str:
    """The name of the variable of ``ds`` that has the probabilistic ``role``.

    The name is, in this order: ``name`` when given (it must be a variable of ``ds``); the one
    data variable whose attribute ``xuqcal_role`` records the role; the default name of the
    role (``members``, ``quantiles``, ``lower``, ``upper``) when ``ds`` has such a variable.

    Parameters
    ----------
    ds : xarray.Dataset
        The dataset.
    role : {"members", "quantiles", "interval_lower", "interval_upper"}
        The role.
    name : str, optional
        The name given explicitly.

    Returns
    -------
    str
        The variable's name.

    Raises
    ------
    ValueError
        For an unknown role, a name that is not a variable of ``ds``, several variables with
        the role, or none.

    Examples
    --------
    >>> ds = from_quantiles([[-1.0, 0.0, 1.0], [0.0, 1.0, 2.0]], [0.5, 0.5], [0.1, 0.5, 0.9],
    ...                     axis=1).rename(quantiles="q")
    >>> variable_with_role(ds, "quantiles")
    'q'
    """
    if role not in PROBABILISTIC_ROLES:
        raise ValueError(f"role: expected one of {', '.join(PROBABILISTIC_ROLES)}, got {role!r}")
    argument = {"interval_lower": "lower", "interval_upper": "upper"}.get(role, role)
    variables = [str(v) for v in ds.data_vars]
    if name is not None:
        if not isinstance(name, str):
            raise ValueError(f"{argument}: expected the name of a variable (a string), "
                             f"got {name!r}")
        if name not in ds.data_vars:
            raise ValueError(f"{argument}: the dataset has no variable {name!r} (data "
                             f"variables: {_list_names(variables) or 'none'})")
        return name
    recorded = [str(v) for v, var in ds.data_vars.items() if var.attrs.get(ROLE_ATTR) == role]
    if len(recorded) == 1:
        return recorded[0]
    if len(recorded) > 1:
        raise ValueError(f"{argument}: {len(recorded)} variables have the role {role} "
                         f"({_list_names(recorded)}); pass {argument}='name' to choose one")
    if DEFAULT_NAMES[role] in ds.data_vars:
        return DEFAULT_NAMES[role]
    raise ValueError(
        f"{argument}: the dataset has no variable with the role {role} (data variables: "
        f"{_list_names(variables) or 'none'}); pass {argument}='name', or build the data with "
        + ("from_quantiles" if role == "quantiles" else "from_ensemble" if role == "members"
           else "from_arrays or read_csv with lower=, upper= and coverage_level=")
    )


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def _as_float(data: xr.DataArray, argument: str) -> xr.DataArray:
    if data.dtype.kind in "iuf":
        return data.astype(np.float64)
    raise ValueError(f"{argument}: values are not numeric (dtype {data.dtype}); "
                     f"{argument} must hold numbers")


def _bare(data: xr.DataArray) -> xr.DataArray:
    """``data`` without its non-index coordinates and without the labels of ``sample`` (the
    constructors number the samples 0, 1, ..., M-1, as :func:`~xuqcal.io.from_arrays`)."""
    data = data.reset_coords(drop=True)
    if SAMPLE_DIM in data.coords:
        data = data.drop_vars(SAMPLE_DIM)
    return data


def distribution_values(values: Any, argument: str, dim: str, axis: int | None,
                        what: str) -> xr.DataArray:
    """``values`` (members or quantiles: an xarray.DataArray with the dimension ``dim``, or a
    2-D array whose axis ``axis`` holds the ``what``) as a float64 DataArray over (extra
    dimensions..., sample, dim)."""
    if not isinstance(dim, str) or not dim or dim == SAMPLE_DIM:
        raise ValueError(f"dim: expected the name of the dimension of the {what} (a string "
                         f"other than '{SAMPLE_DIM}'), got {dim!r}")
    if isinstance(values, xr.DataArray):
        if axis is not None:
            raise ValueError(f"axis: only for arrays without dimension names; the DataArray "
                             f"{argument} names the dimension of the {what} (dim={dim!r})")
        if dim not in values.dims:
            raise ValueError(f"{argument}: no dimension {dim!r} (dimensions {values.dims}); "
                             f"pass dim='name' to name the dimension of the {what}")
        data = values
        if SAMPLE_DIM not in data.dims:
            others = [d for d in data.dims if d != dim]
            if len(others) != 1:
                raise ValueError(
                    f"{argument}: cannot tell which dimension is '{SAMPLE_DIM}' among "
                    f"{tuple(others)}; rename it, e.g. {argument}.rename("
                    f"{{'{others[0] if others else 'x'}': '{SAMPLE_DIM}'}})")
            data = data.rename({others[0]: SAMPLE_DIM})
    else:
        array = values if _is_dask(values) else np.asarray(values)
        if axis is None:
            raise ValueError(f"axis: {argument} is an array without dimension names; give the "
                             f"axis of the {what} (axis=1 when each row is a sample), or "
                             f"pass an xarray.DataArray with the dimension {dim!r}")
        if array.ndim != 2:
            raise ValueError(f"{argument}: expected a 2-D array (samples and {what}), got shape "
                             f"{array.shape}; pass an xarray.DataArray for more dimensions")
        if isinstance(axis, bool) or not isinstance(axis, int | np.integer) \
                or not -2 <= axis < 2:
            raise ValueError(f"axis: expected 0, 1 or -1 for a 2-D array, got {axis!r}")
        dims = (dim, SAMPLE_DIM) if axis % 2 == 0 else (SAMPLE_DIM, dim)
        data = xr.DataArray(array, dims=dims)
    data = _as_float(data, argument)
    if data.sizes[SAMPLE_DIM] == 0:
        raise ValueError(f"{argument}: empty data: 0 samples along '{SAMPLE_DIM}'")
    others = [d for d in data.dims if d not in (SAMPLE_DIM, dim)]
    return data.transpose(*others, SAMPLE_DIM, dim)


def reference_values(values: Any, argument: str, template: xr.DataArray, template_name: str,
                     dim: str) -> xr.DataArray:
    """``values`` (one per sample: observed values or point predictions; a DataArray may have
    extra dimensions) as a float64 DataArray, checked against ``template`` (sizes and labels of
    the shared dimensions; the values are matched by position, never aligned)."""
    if isinstance(values, xr.DataArray):
        data = values
        if dim in data.dims:
            raise ValueError(f"{argument}: has the dimension {dim!r} of {template_name}; give "
                             "one value per sample")
        if SAMPLE_DIM not in data.dims:
            if data.ndim != 1:
                raise ValueError(f"{argument}: cannot tell which dimension is '{SAMPLE_DIM}' "
                                 f"among {data.dims}; rename it to '{SAMPLE_DIM}'")
            data = data.rename({data.dims[0]: SAMPLE_DIM})
    else:
        data = xr.DataArray(_to_1d(values, argument), dims=SAMPLE_DIM)
    data = _as_float(data, argument)
    for d in data.dims:
        if d in template.dims and data.sizes[d] != template.sizes[d]:
            what = "samples" if d == SAMPLE_DIM else f"labels along '{d}'"
            raise ValueError(f"length mismatch: {template_name} has {template.sizes[d]} {what}, "
                             f"{argument} has {data.sizes[d]}; {argument} needs one value per "
                             f"{'sample' if d == SAMPLE_DIM else 'label'}")
        if d in template.indexes and d in data.indexes \
                and not template.indexes[d].equals(data.indexes[d]):
            first, second = np.asarray(template.indexes[d]), np.asarray(data.indexes[d])
            differ = np.flatnonzero(first != second)[:_MAX_EXAMPLES]
            shown = ", ".join(f"{int(p)} ({_item(first[p])!r} vs {_item(second[p])!r})"
                              for p in differ)
            raise ValueError(
                f"{argument}: its '{d}' coordinate differs from that of {template_name} at "
                f"positions {shown}; the values are matched by position: align them first, "
                f"e.g. {argument}.sel({d}={template_name}['{d}'])")
    return data


def feature_values(features: Mapping[str, Any], n_samples: int, taken: Sequence[str]
                   ) -> dict[str, xr.Variable]:
    """The feature variables (1-D, numeric or boolean, one value per sample) of a
    constructor whose other variables are named ``taken``."""
    out = {}
    for name, values in features.items():
        _check_feature_name(name)
        if name in taken:
            raise ValueError(f"features: a feature cannot be named {name!r} (the name of a "
                             "variable of the dataset); choose another name")
        data = _to_1d(values, name)
        if data.shape[0] != n_samples:
            raise ValueError(f"length mismatch: the data have {n_samples} samples, the feature "
                             f"{name} "
                             f"has {data.shape[0]} values; give one value per sample")
        out[name] = xr.Variable(SAMPLE_DIM, data, {"expression": name})
    return out


def check_probabilities(probabilities: Any) -> np.ndarray:
    """The nominal probabilities of predicted quantiles: a non-empty 1-D array of numbers in
    (0, 1), strictly increasing.

    Examples
    --------
    >>> check_probabilities([0.1, 0.5, 0.9]).tolist()
    [0.1, 0.5, 0.9]
    >>> check_probabilities([0.1, 0.5, 0.5])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: probabilities: expected strictly increasing values, but 0.5 (position 1) is ...
    """
    try:
        p = np.asarray(probabilities, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"probabilities: expected numbers in (0, 1), got "
                         f"{probabilities!r}") from None
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"probabilities: expected a non-empty 1-D list of numbers in (0, 1), "
                         f"got shape {p.shape}")
    outside = np.flatnonzero(~((p > 0.0) & (p < 1.0)))
    if outside.size:
        shown = ", ".join(f"{p[i]:g} (position {int(i)})" for i in outside[:_MAX_EXAMPLES])
        raise ValueError(f"probabilities: expected values strictly between 0 and 1, got "
                         f"{shown}")
    bad = np.flatnonzero(np.diff(p) <= 0.0)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"probabilities: expected strictly increasing values, but {p[i]:g} "
                         f"(position {i}) is followed by {p[i + 1]:g} (position {i + 1})")
    return p


# --------------------------------------------------------------------------------------------
# Quantiles
# --------------------------------------------------------------------------------------------


def from_quantiles(
    quantile_values: npt.ArrayLike | xr.DataArray,
    observed: npt.ArrayLike | xr.DataArray,
    probabilities: npt.ArrayLike,
    *,
    dim: str = "quantile",
    axis: int | None = None,
    prediction: npt.ArrayLike | xr.DataArray | None = None,
    name: str | None = None,
    units: str | None = None,
    **features: npt.ArrayLike | xr.DataArray,
) -> xr.Dataset:
    """Build a dataset of predicted quantiles of the error from predicted quantiles of the
    target.

    The error is ``E = observed - prediction`` and the predicted quantiles of the error are
    ``quantile_values - prediction`` (the sign convention of the module): ``observed <= q_p``
    exactly when ``E <= q_p - prediction``, so
    :func:`~xuqcal.analysis.coverage.quantile_coverage` reads the same coverage.

    Parameters
    ----------
    quantile_values : array_like or xarray.DataArray
        Predicted quantiles of the target, one per sample and probability. A DataArray has the
        dimension ``dim`` and the dimension ``sample`` (or one other dimension, which becomes
        ``sample``), and may have extra dimensions (``model``, ...), whose labels are kept. An
        array without dimension names is 2-D, and ``axis`` says which axis holds the quantiles.
        Dask-backed data stay lazy.
    observed : array_like or xarray.DataArray
        The reference values, one per sample (a DataArray may have extra dimensions of
        ``quantile_values``). Matched by position: the labels of shared dimensions must agree.
    probabilities : array_like
        The nominal probabilities of the quantiles, in (0, 1) and strictly increasing; they
        become the coordinate ``quantile``.
    dim : str
        The dimension of the quantiles, in ``quantile_values`` and in the result.
    axis : int, optional
        The axis of the quantiles in an array without dimension names (1: one row per sample).
    prediction : array_like or xarray.DataArray, optional
        The point predictions ``ŷ``; by default the predicted median (the quantile at
        probability 0.5, which must then be among ``probabilities``).
    name : str, optional
        A name for the dataset (attribute ``name``).
    units : str, optional
        Units of ``E`` and of the quantiles.
    **features : array_like or xarray.DataArray
        Feature variables, one value per sample.

    Returns
    -------
    xarray.Dataset
        ``E`` (role ``E``) over ``sample`` (and the extra dimensions), ``quantiles`` (role
        ``quantiles``, the predicted quantiles of the error) over ``sample`` and ``dim``, whose
        coordinate holds the probabilities, and the features. There is no ``uE``.

    Raises
    ------
    ValueError
        Before any work: for probabilities not in (0, 1) or not strictly increasing, a number
        of quantiles different from the number of probabilities, labels of ``dim`` different
        from the probabilities, mismatched sizes or labels of ``observed``, ``prediction`` or
        the features, no median without ``prediction``, non-numeric values. For NaN or
        infinite values and for crossing quantiles (values that decrease with the probability),
        naming the rows (for Dask-backed data, when computed).

    Examples
    --------
    >>> ds = from_quantiles([[0.8, 1.0, 1.3], [1.9, 2.0, 2.1]], [1.1, 1.8], [0.1, 0.5, 0.9],
    ...                     axis=1)
    >>> ds.E.values.round(2).tolist(), ds.quantiles.values.round(2).tolist()
    ([0.1, -0.2], [[-0.2, 0.0, 0.3], [-0.1, 0.0, 0.1]])
    >>> from_quantiles([[0.8, 1.0, 1.3], [2.2, 2.0, 2.1]], [1.1, 1.8], [0.1, 0.5, 0.9],
    ...                axis=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: quantile_values: 1 of 2 samples have crossing quantiles: ... (rows 1)
    """
    p = check_probabilities(probabilities)
    q = distribution_values(quantile_values, "quantile_values", dim, axis, "quantiles")
    if q.sizes[dim] != p.size:
        raise ValueError(f"quantile_values: {q.sizes[dim]} quantiles along {dim!r} but "
                         f"{p.size} probabilities; give one probability per quantile")
    if dim in q.indexes:
        given = np.asarray(q.indexes[dim])
        if given.dtype.kind not in "iuf" or not np.allclose(given, p, rtol=0, atol=1e-12):
            raise ValueError(f"quantile_values: its {dim!r} coordinate {given.tolist()} differs "
                             f"from the probabilities {p.tolist()}")
    obs = reference_values(observed, "observed", q, "quantile_values", dim)
    if prediction is None:
        median = np.flatnonzero(np.isclose(p, 0.5, rtol=0.0, atol=1e-12))
        if median.size == 0:
            raise ValueError("prediction: not given, and 0.5 is not among the probabilities "
                             f"{p.tolist()} (the predicted median is the default prediction); "
                             "pass the point predictions with prediction=...")
        centre = q.isel({dim: int(median[0])}, drop=True)
        prediction_text = "quantile_values at 0.5"
    else:
        centre = reference_values(prediction, "prediction", q, "quantile_values", dim)
        prediction_text = "prediction"
    n = q.sizes[SAMPLE_DIM]
    extra = feature_values(features, n, ("E", "quantiles"))
    q, obs, centre = _bare(q), _bare(obs), _bare(centre)
    rows = {SAMPLE_DIM: np.arange(n)}
    q, obs, centre = (a.assign_coords(rows) for a in (q, obs, centre))
    finite = q.notnull().all(dim)
    crossing = ((q.diff(dim) < 0).any(dim) & finite) if p.size > 1 else \
        xr.zeros_like(finite)
    checks = [*finite_checks("observed", obs),
              *finite_checks("quantile_values", q, over=dim),
              ("quantile_values", crossing, "samples have crossing quantiles: values that "
               "decrease as the probability increases", "")]
    if prediction is not None:
        checks += finite_checks("prediction", centre)
    checks += [check for feature, var in extra.items()
               for check in finite_checks(feature, xr.DataArray(var).assign_coords(rows))]
    errors = _points_first(obs - centre)
    predicted = (q - centre).transpose(*errors.dims, dim)
    q_attrs = {"long_name": "predicted quantiles of the error", **(
        {"units": str(units)} if units is not None else {}),
        "expression": f"quantile_values - {prediction_text}", ROLE_ATTR: "quantiles",
        QUANTILE_DIM_ATTR: dim}
    ds = xr.Dataset(
        {"E": errors.assign_attrs(_variable_attrs("E", f"observed - {prediction_text}", units)),
         "quantiles": predicted.assign_attrs(q_attrs), **extra},
        attrs=_dataset_attrs(source="quantiles", E=f"observed - {prediction_text}", uE="",
                             where="", n_rows_read=n, n_rows_dropped=0, name=name),
    ).assign_coords({SAMPLE_DIM: _sample_coord(np.arange(n)),
                     dim: (dim, p, {"long_name": "nominal probability of the quantile"})})
    ds = check_points(ds, checks)
    # the errors and quantiles of finite inputs can still overflow (1e308 - (-1e308))
    return check_points(ds, [*finite_checks("E", ds.E),
                             *finite_checks("quantiles", ds.quantiles, over=dim)])
