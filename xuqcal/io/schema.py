"""Input datasets: the variable roles, the checks of a dataset, and the array constructor.

An input dataset is an :class:`xarray.Dataset` over the dimension ``sample`` with an error
variable (role ``E``) and a standard uncertainty variable (role ``uE``, ``> 0``), both float64,
plus any feature variables. The coordinate ``sample`` holds the original 0-based row numbers of
the input, so rows removed by a ``where`` filter keep their numbers and error messages point at
the right rows.

**Roles.** The constructors of xuqcal (:func:`from_arrays`, :func:`~xuqcal.io.from_dataframe`,
:func:`~xuqcal.io.read_csv`, :func:`~xuqcal.io.open_dataset`, :func:`xuqcal.io.synthetic.nig`)
record the role of the two variables in the variable attribute ``xuqcal_role`` (``"E"`` or
``"uE"``). xarray keeps variable attributes through ``rename``, selections and NetCDF files, so
:func:`roles` still finds the variables of a dataset built by xuqcal and then renamed.

**Checks.** :func:`validate_dataset` checks the structure (names, dimensions, dtypes, rows) at
once and the values (NaN, inf, ``uE <= 0``, overflowing z-scores) eagerly for NumPy-backed data;
for Dask-backed data the value checks become part of the graph and raise the same ValueError
when the data are computed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import xarray as xr

from xuqcal.core import defaults
from xuqcal.core.checks import check_coverage_level
from xuqcal.core.coverage import normal_coverage_factor
from xuqcal.core.provenance import provenance
from xuqcal.io.expressions import (
    _MAX_EXAMPLES,
    _format_rows,
    _list_names,
    _numeric_values,
    _series_to_numpy,
)

__all__ = ["PROBABILISTIC_ROLES", "ROLE_ATTR", "SAMPLE_DIM", "from_arrays", "roles",
           "validate_dataset"]

SAMPLE_DIM = "sample"
"""Name of the dimension along which the data points of an input dataset lie."""

ROLE_ATTR = "xuqcal_role"
"""The variable attribute recording a variable's role (``"E"`` or ``"uE"``, or one of
:data:`PROBABILISTIC_ROLES`)."""

COVERAGE_LEVEL_ATTR = "coverage_level"
"""The attribute of the bounds of a predicted interval that records its coverage level (its
nominal coverage)."""
LEGACY_COVERAGE_LEVEL_ATTR = "interval_level"
"""The name of :data:`COVERAGE_LEVEL_ATTR` in data written until version 0.1 (still read)."""


def recorded_coverage_level(attrs: Mapping[str, Any]) -> Any:
    """The coverage level recorded in the attributes of a bound of a predicted interval:
    :data:`COVERAGE_LEVEL_ATTR`, or in data written until version 0.1
    :data:`LEGACY_COVERAGE_LEVEL_ATTR`; ``None`` when neither is recorded.

    Examples
    --------
    >>> recorded_coverage_level({"coverage_level": 0.9}), recorded_coverage_level(
    ...     {"interval_level": 0.9}), recorded_coverage_level({})
    (0.9, 0.9, None)
    """
    value = attrs.get(COVERAGE_LEVEL_ATTR)
    return attrs.get(LEGACY_COVERAGE_LEVEL_ATTR) if value is None else value

_NO_UE_HINT = ("hint: fix the source data, or drop such rows with the where argument, e.g. "
               'where="isfinite(E) & isfinite(lower) & isfinite(upper)"')

PROBABILISTIC_ROLES = ("members", "quantiles", "interval_lower", "interval_upper")
"""The roles of the variables that describe a predicted distribution beyond ``uE``: the member
errors of an ensemble (:func:`~xuqcal.io.ensembles.from_ensemble`), predicted quantiles of the
error (:func:`~xuqcal.io.quantiles.from_quantiles`) and the bounds of a predicted interval of
the error (``lower=``, ``upper=`` of :func:`from_arrays` and :func:`~xuqcal.io.read_csv`).
Such a variable is not a feature: :func:`validate_dataset` leaves it out of the default
features, and the constructors keep its role."""

ROW_COORD = "row"
"""Coordinate of a stacked dataset over ``(dataset, sample)``: the original row number of each
point in its own set (the set's ``sample`` coordinate), ``-1`` where the set has no point
(:func:`~xuqcal.io.stack_datasets`); messages name these rows."""

_LONG_NAMES = {"E": "prediction error", "uE": "prediction uncertainty"}
_WHERE_HINT = (
    "hint: fix the source data, or drop such rows with the where argument, e.g. "
    'where="isfinite(E) & isfinite(uE) & (uE > 0)"'
)

FeatureSpec = str | Sequence[str] | Mapping[str, str] | None


# --------------------------------------------------------------------------------------------
# Roles
# --------------------------------------------------------------------------------------------


def roles(ds: xr.Dataset, E: str | None = None, uE: str | None = None) -> tuple[str, str]:
    """The names of the error and uncertainty variables of ``ds``.

    Each name is, in this order: the argument when given; the data variable whose attribute
    ``xuqcal_role`` records the role (set by the constructors and kept by ``ds.rename``); the
    default (``"E"``, ``"uE"``). The names are not checked against ``ds`` here (the analyses
    check them and name the missing variable).

    Parameters
    ----------
    ds : xarray.Dataset
        The dataset.
    E, uE : str, optional
        Names given explicitly.

    Returns
    -------
    tuple of str
        ``(E_name, uE_name)``.

    Raises
    ------
    TypeError
        If ``ds`` is not a Dataset.
    ValueError
        If a name given is not a string, or several variables record the same role and none of
        them has the default name (``E: 2 variables have the role E (a, b); pass E='name'``).

    Examples
    --------
    >>> ds = from_arrays([0.1, -0.2], [0.3, 0.2]).rename(E="err", uE="sigma")
    >>> roles(ds)
    ('err', 'sigma')
    >>> roles(ds, uE="sigma")
    ('err', 'sigma')
    >>> roles(xr.Dataset())
    ('E', 'uE')
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    names = []
    for role, given, default in (("E", E, defaults.E), ("uE", uE, defaults.UE)):
        if given is not None:
            if not isinstance(given, str):
                raise ValueError(f"{role}: expected the name of a variable (a string), "
                                 f"got {given!r}")
            names.append(given)
            continue
        recorded = [str(name) for name, var in ds.data_vars.items()
                    if var.attrs.get(ROLE_ATTR) == role]
        if len(recorded) == 1:
            names.append(recorded[0])
        elif default in recorded or not recorded:
            names.append(default)
        else:
            raise ValueError(
                f"{role}: {len(recorded)} variables have the role {role} "
                f"({_list_names(recorded)}); pass {role}='name' to choose one"
            )
    return names[0], names[1]


def by_role(function: Callable | None = None, *, data: str = "ds") -> Callable:
    """Decorate an analysis so that ``E`` and ``uE`` *not passed* are the recorded roles of its
    data set (:func:`roles`): a Dataset built by xuqcal and renamed works without naming its
    variables. A name passed (even the default ``"E"``, or a wrong value, which the analysis
    then refuses) is used as given. ``data`` is the parameter that holds the data set.

    Examples
    --------
    >>> @by_role
    ... def names(ds, *, E="E", uE="uE"):
    ...     return E, uE
    >>> ds = from_arrays([0.1, -0.2], [0.3, 0.2]).rename(E="err", uE="sigma")
    >>> names(ds), names(ds, E="err", uE="sigma"), names(xr.Dataset())
    (('err', 'sigma'), ('err', 'sigma'), ('E', 'uE'))
    """
    if function is None:
        return functools.partial(by_role, data=data)
    signature = inspect.signature(function)
    taken = [role for role in ("E", "uE") if role in signature.parameters]

    @functools.wraps(function)
    def resolved(*args: Any, **kwargs: Any) -> Any:
        missing = [role for role in taken if role not in kwargs]
        if missing:
            ds = signature.bind_partial(*args, **kwargs).arguments.get(data)
            if isinstance(ds, xr.Dataset):
                found = dict(zip(("E", "uE"), roles(ds, kwargs.get("E"), kwargs.get("uE")),
                                 strict=True))
                kwargs.update({role: found[role] for role in missing})
        return function(*args, **kwargs)

    return resolved


def _record_roles(ds: xr.Dataset, E: str, uE: str) -> xr.Dataset:
    """Record the roles in the variable attributes of ``ds`` (in place; no other variable keeps
    a role attribute, except the :data:`PROBABILISTIC_ROLES`) and return ``ds``."""
    for name, var in ds.data_vars.items():
        if var.attrs.get(ROLE_ATTR) in PROBABILISTIC_ROLES and name not in (E, uE):
            continue
        var.attrs.pop(ROLE_ATTR, None)
        if name == E:
            var.attrs[ROLE_ATTR] = "E"
        elif name == uE:
            var.attrs[ROLE_ATTR] = "uE"
    return ds


def standard_names(ds: xr.Dataset, E: str, uE: str) -> xr.Dataset:
    """``ds`` with its error and uncertainty variables ``E``, ``uE`` renamed to the defaults
    (``"E"``, ``"uE"``), refusing another variable that already has one of those names.

    Examples
    --------
    >>> ds = from_arrays([0.1, -0.2], [0.3, 0.2]).rename(E="err", uE="E")
    >>> sorted(standard_names(ds, "err", "E").data_vars)
    ['E', 'uE']
    """
    clash = [name for name in (defaults.E, defaults.UE) if name in ds.data_vars
             and name not in (E, uE)]
    if clash:
        raise ValueError(f"{clash[0]}: the data set has a variable {clash[0]!r} besides the "
                         f"error and uncertainty variables {E!r}, {uE!r}; rename it")
    return ds.rename({E: "__E", uE: "__uE"}).rename({"__E": defaults.E, "__uE": defaults.UE})


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _raise_problems(problems: list[str], *, prefix: str = "", hint: str = "") -> None:
    if not problems:
        return
    if len(problems) == 1:
        message = problems[0]
    else:
        message = f"invalid input data ({len(problems)} problems):\n  " + "\n  ".join(problems)
    if hint:
        message += "\n" + hint
    raise ValueError(prefix + message)


def _names_list(features: object) -> list:
    """``features`` given as a sequence of names, as a list; a ValueError naming ``features``
    for anything else (a number, ...)."""
    if isinstance(features, bytes) or not isinstance(features, Iterable):
        raise ValueError(f"features: expected a variable name or a list of names, got "
                         f"{features!r}")
    return list(features)


def _check_structure(ds: xr.Dataset, E: str, uE: str, features: FeatureSpec) -> list[str]:
    """The structural checks (they raise at once, reading no value); the names of the variables
    whose values are to be checked: ``E``, ``uE`` and the features."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    variables = [str(v) for v in ds.data_vars]
    for role, var in (("E", E), ("uE", uE)):
        if not isinstance(var, str):
            raise ValueError(f"{role}: expected the name of a variable (a string), got {var!r}")
        if var not in ds.data_vars:
            raise ValueError(
                f"{role}: the dataset has no variable '{var}' "
                f"(data variables: {_list_names(variables) or 'none'}); "
                f"pass {role}='name' to use another variable (or, where a function has no "
                f"{role} parameter, rename it: ds.rename({{'name': '{role}'}}))"
            )
    if features is None:
        feature_names = [v for v in variables if v not in (E, uE)
                         and ds[v].attrs.get(ROLE_ATTR) not in PROBABILISTIC_ROLES]
    else:
        feature_names = [features] if isinstance(features, str) else _names_list(features)
        for feature in feature_names:
            if feature not in ds.data_vars:
                raise ValueError(
                    f"{feature}: unknown feature variable '{feature}' "
                    f"(data variables: {_list_names(variables)})"
                )
    names = [E, uE, *feature_names]
    for var in names:
        dims = ds[var].dims
        if dims != (SAMPLE_DIM,):
            hint = ""
            if len(dims) == 1:
                hint = f"; rename it with ds.rename({{'{dims[0]}': '{SAMPLE_DIM}'}})"
            elif len(dims) > 1 and var in (E, uE):
                other = [d for d in dims if d != SAMPLE_DIM] or list(dims)
                hint = ("; this check takes one data set: select one slice, e.g. "
                        f"ds.isel({other[0]}=0) (validate_dataset and the analyses check data "
                        "with extra dimensions slice by slice)")
            elif len(dims) > 1:
                hint = "; pass features=[...] to validate only the 1-D feature variables"
            raise ValueError(
                f"{var}: expected a 1-D variable over the dimension '{SAMPLE_DIM}', "
                f"got dimensions {dims}{hint}"
            )
        kind = ds[var].dtype.kind
        allowed = "iuf" if var in (E, uE) else "biuf"
        if kind not in allowed:
            raise ValueError(
                f"{var}: values are not numeric (dtype {ds[var].dtype}); "
                f"{'E and uE' if var in (E, uE) else 'features'} must hold numbers"
            )
    if ds.sizes[SAMPLE_DIM] == 0:
        raise ValueError(f"ds: empty data: the dataset has 0 rows along '{SAMPLE_DIM}'")
    return names


def _passthrough(block: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """A block of a checked variable: the block itself, once the check ``ok`` has passed."""
    return block


# --------------------------------------------------------------------------------------------
# Value checks over the points (eager for NumPy, in the graph for Dask): one mechanism, masks
# --------------------------------------------------------------------------------------------

# one value check: (subject named in the message, mask over the points, what the flagged points
# are, a note appended to the message)
_Check = tuple[str, xr.DataArray, str, str]

# one check of the data as a whole: a function of some reductions (0-d arrays, NumPy or Dask)
# giving the message of a problem, or None
_Total = tuple[Callable[..., str | None], Sequence[xr.DataArray]]


def _is_dask(data: Any) -> bool:
    return type(data).__module__.startswith("dask")


def _points_first(mask: xr.DataArray) -> xr.DataArray:
    """``mask`` with its dimensions in the order (extra dimensions..., sample)."""
    others = [d for d in mask.dims if d != SAMPLE_DIM]
    return mask.transpose(*others, SAMPLE_DIM) if SAMPLE_DIM in mask.dims else mask


def _item(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _rows_text(dims: Sequence[str], shape: Sequence[int], labels: Mapping[str, pd.Index],
               positions: np.ndarray, count: int) -> str:
    """The rows of the flagged points at flat ``positions`` of an array of ``dims``/``shape``
    whose last dimension is ``sample``: ``rows 3, 7`` (one set) or ``rows 3 at model='a'; 7
    at model='b'`` (extra dimensions)."""
    index = np.unravel_index(np.asarray(positions, dtype=np.int64), tuple(shape))
    rows = [_item(labels[SAMPLE_DIM][i]) for i in index[-1]]
    if len(dims) == 1:
        return _format_rows(rows, count)
    texts = [f"{row} at " + slice_label({d: labels[d][index[j][k]]
                                         for j, d in enumerate(dims[:-1])})
             for k, row in enumerate(rows)]
    return "rows " + "; ".join(texts) + ("; ..." if count > _MAX_EXAMPLES else "")


def _labels(mask: xr.DataArray) -> dict[str, pd.Index]:
    return {d: mask.indexes[d] if d in mask.indexes else pd.RangeIndex(mask.sizes[d])
            for d in mask.dims}


def _message(check: tuple[str, str, str], layout: tuple, count: int,
             positions: np.ndarray) -> str:
    subject, what, note = check
    dims, shape, labels = layout
    size = int(np.prod(shape))
    return (f"{subject}: {count} of {size} {what} "
            f"({_rows_text(dims, shape, labels, positions, count)}){note}")


def _block_summary(block: np.ndarray, offset: int) -> tuple[int, np.ndarray]:
    flat = np.asarray(block, dtype=bool).ravel()
    return int(flat.sum()), np.flatnonzero(flat)[:_MAX_EXAMPLES] + offset


def _total_problems(totals: Sequence[tuple[Callable, Sequence[Any]]]) -> list[str]:
    """The messages of the whole-data checks, each a function of its computed reductions."""
    found = (problem(*(np.asarray(value)[()] for value in values))
             for problem, values in totals)
    return [message for message in found if message]


def _final_masks(summaries: Sequence[Sequence[tuple[int, np.ndarray]]],
                 checks: Sequence[tuple[str, str, str]], layouts: Sequence[tuple],
                 totals: Sequence[tuple[Callable, Sequence[Any]]], prefix: str,
                 hint: str) -> np.ndarray:
    """The task of a Dask graph that raises the ValueError of the flagged points of every
    check and of the whole-data checks, or gives ``True`` when there are none."""
    problems = []
    for check, layout, parts in zip(checks, layouts, summaries, strict=True):
        count = sum(part[0] for part in parts)
        if count:
            positions = np.concatenate([part[1] for part in parts])[:_MAX_EXAMPLES]
            problems.append(_message(check, layout, count, positions))
    _raise_problems(problems + _total_problems(totals), prefix=prefix, hint=hint)
    return np.True_


def check_points(ds: xr.Dataset, checks: Sequence[_Check], *, prefix: str = "",
                 hint: str = "", totals: Sequence[_Total] = (),
                 guard: Sequence[str] | None = None) -> xr.Dataset:
    """Run the value ``checks`` (subject, boolean mask over the points, what the flagged
    points are, note) and the whole-data ``totals`` (a function of some 0-d reductions that
    gives the message of a problem, or ``None``): NumPy-backed ones at once, raising one
    ValueError for all their problems; Dask-backed ones in the graph: the returned dataset's
    Dask-backed variables (those named in ``guard``, by default all) depend on a task that
    raises the same ValueError, listing the masks' problems then the totals', when they are
    computed (``ds`` is not modified). Every value check of xuqcal's inputs goes through this
    function.

    Examples
    --------
    >>> ds = xr.Dataset({"lower": ("sample", [0.0, np.nan, 1.0])},
    ...                 coords={"sample": [10, 11, 12]})
    >>> check_points(ds, [("lower", np.isnan(ds.lower), "values are NaN", "")])
    Traceback (most recent call last):
    ...
    ValueError: lower: 1 of 3 values are NaN (rows 11)
    """
    eager, lazy = [], []
    for subject, mask, what, note in checks:
        mask = _points_first(mask)
        layout = (tuple(str(d) for d in mask.dims), tuple(mask.shape), _labels(mask))
        (lazy if _is_dask(mask.data) else eager).append(((subject, what, note), layout, mask))
    eager_totals, lazy_totals = [], []
    for problem, reductions in totals:
        values = [r.data if isinstance(r, xr.DataArray) else r for r in reductions]
        (lazy_totals if any(_is_dask(v) for v in values) else eager_totals).append(
            (problem, values))
    problems = []
    for check, layout, mask in eager:
        count, positions = _block_summary(np.asarray(mask.values), 0)
        if count:
            problems.append(_message(check, layout, count, positions))
    _raise_problems(problems + _total_problems(eager_totals), prefix=prefix, hint=hint)
    if not lazy and not lazy_totals:
        return ds
    import dask
    import dask.array as da

    summarize = dask.delayed(_block_summary, pure=True)
    summaries = []
    for _, _, mask in lazy:
        flat = mask.data.ravel()
        offsets = np.concatenate([[0], np.cumsum(flat.chunks[0])[:-1]]).astype(int)
        summaries.append([summarize(block, int(offset)) for block, offset
                          in zip(flat.to_delayed().ravel(), offsets, strict=True)])
    final = dask.delayed(_final_masks, pure=True)(
        summaries, [c for c, _, _ in lazy], [layout for _, layout, _ in lazy], lazy_totals,
        prefix, hint)
    ok = da.from_delayed(final, shape=(), dtype=bool)
    guarded = ds.data_vars if guard is None else guard
    checked = {
        name: ds[name].copy(data=da.map_blocks(_passthrough, ds[name].data, ok,
                                               dtype=ds[name].dtype, meta=ds[name].data._meta))
        for name in guarded if _is_dask(ds[name].data)
    }
    return ds.assign(checked)


def finite_checks(subject: str, values: xr.DataArray, *, over: str | None = None,
                  note: str = "") -> list[_Check]:
    """The checks that ``values`` are finite: NaN, +inf and -inf values, or, with ``over`` (a
    dimension of several values per point, e.g. ``member``), the points with a NaN or an
    infinite value. Boolean values are not checked."""
    if values.dtype == np.bool_:
        return []
    if over is None:
        return [(subject, np.isnan(values), "values are NaN", note),
                (subject, np.isinf(values) & (values > 0), "values are +inf", note),
                (subject, np.isinf(values) & (values < 0), "values are -inf", note)]
    return [(subject, np.isnan(values).any(over), f"samples have NaN values along '{over}'",
             note),
            (subject, np.isinf(values).any(over),
             f"samples have infinite values along '{over}'", note)]


def _z_overflow(e: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The points with finite values and ``u > 0`` whose ``z = e / u`` has a square beyond
    float64."""
    with np.errstate(all="ignore"):
        valid = np.isfinite(e) & np.isfinite(u) & (u > 0)
        z = e / np.where(valid, u, 1.0)
        return valid & ~np.isfinite(z * z)


def _span_problem(E: str, uE: str) -> Callable[..., str | None]:
    """The whole-data check of the span ``max(|E|, uE) / min(uE)`` of the valid points (see
    :meth:`xuqcal.core.statistics.PreparedData.from_arrays`), a function of the number of
    valid points, ``max |E|``, ``max uE`` and ``min uE`` over them."""
    from xuqcal.core.statistics import MAX_SPAN_EXPONENT

    def problem(n_valid, e_max, u_max, u_min) -> str | None:
        hi, lo = max(float(e_max), float(u_max)), float(u_min)
        if int(n_valid) and np.frexp(hi)[1] - np.frexp(lo)[1] > MAX_SPAN_EXPONENT:
            return (f"{uE}: the values span too many orders of magnitude (max(|{E}|, {uE}) = "
                    f"{hi:.3g}, min({uE}) = {lo:.3g}, a ratio above 2^{MAX_SPAN_EXPONENT}): "
                    "their squares cannot be represented in float64 at a common scale")
        return None

    return problem


def _overflow_text(E: str, uE: str) -> str:
    return f"z-scores {E}/{uE} overflow (|z| > 1e154: z² is beyond the float64 range)"


def _problems(summary: tuple, checks: Sequence[tuple[str, str]], E: str, uE: str, n: int,
              labels: np.ndarray | None, expressions: Mapping[str, Any]) -> list[str]:
    """The messages of :func:`_value_checks` from sums gathered elsewhere (the out-of-core
    first pass, :mod:`xuqcal.analysis.outofcore`), in the same words: ``summary`` is
    ``(values, ratio)``, ``values`` one ``(count, positions)`` per check ``(name, label)``
    (e.g. ``("uE", "not positive")``), ``ratio`` ``None`` or ``(overflow count, positions,
    valid points, max |E|, max uE, min uE)``; ``positions`` index ``labels`` (the rows; ``None``:
    the positions themselves)."""
    layout = ((SAMPLE_DIM,), (n,), {SAMPLE_DIM: pd.RangeIndex(n) if labels is None else labels})
    values, ratio = summary
    problems = []
    for (name, label), (count, positions) in zip(checks, values, strict=True):
        if count:
            expression = expressions.get(name)
            note = f"; computed as '{expression}'" if expression and expression != name else ""
            problems.append(_message((name, f"values are {label}", note), layout, count,
                                     positions))
    if ratio is not None:
        count, positions, *extremes = ratio
        if count:
            problems.append(_message((f"{E}, {uE}", _overflow_text(E, uE), ""), layout, count,
                                     positions))
        problems += _total_problems([(_span_problem(E, uE), extremes)])
    return problems


def _value_checks(ds: xr.Dataset, names: Sequence[str], E: str, uE: str
                  ) -> tuple[list[_Check], list[_Total]]:
    """The value checks of ``names``, in the order of the messages: NaN, +inf, -inf (and, for
    ``uE``, not positive) of each non-boolean variable; the overflows of the z-scores
    ``E / uE`` (rows whose ``z`` has a square beyond float64, ``|z| > ~1.3e154``, e.g. one
    uE = 1e-300 with E ~ 1); and, as a whole-data check, data whose span
    ``max(|E|, uE) / min(uE)`` exceeds ``2^960`` (their squares cannot be held at one scale).
    Only points with finite values and ``uE > 0`` count for the overflows and the span."""
    checks: list[_Check] = []
    for name in names:
        expression = ds[name].attrs.get("expression")
        note = f"; computed as '{expression}'" if expression and expression != name else ""
        checks += finite_checks(name, ds[name], note=note)
        if name == uE and ds[name].dtype != np.bool_:
            values = ds[name]
            checks.append((name, np.isfinite(values) & (values <= 0), "values are not positive",
                           note))
    e, u = ds[E], ds[uE]
    if e.dtype == np.bool_ or u.dtype == np.bool_:
        return checks, []
    overflow = xr.apply_ufunc(_z_overflow, e, u, dask="parallelized", output_dtypes=[bool])
    checks.append((f"{E}, {uE}", overflow, _overflow_text(E, uE), ""))
    valid = np.isfinite(e) & np.isfinite(u) & (u > 0)
    # no NaN is left by the masks: skipna=False keeps xarray from numbagg's nan-reductions,
    # which Numba compiles anew in every process (numbagg does not cache them)
    reductions = [valid.sum(), np.abs(e).where(valid, 0.0).max(skipna=False),
                  u.where(valid, 0.0).max(skipna=False),
                  u.where(valid, np.inf).min(skipna=False)]
    return checks, [(_span_problem(E, uE), reductions)]


def _check_dataset(ds: xr.Dataset, E: str, uE: str, features: FeatureSpec, *,
                   prefix: str = "", hint: str = "") -> xr.Dataset:
    """Check ``ds``: the structure at once, the values (:func:`_value_checks`, through
    :func:`check_points`) at once for NumPy-backed variables and in the graph for Dask-backed
    ones; ``ds`` or its lazily checked copy."""
    names = _check_structure(ds, E, uE, features)
    if _values_pass(ds, names, E, uE):
        return ds
    checks, totals = _value_checks(ds, names, E, uE)
    return check_points(ds, checks, prefix=prefix, hint=hint, totals=totals, guard=names)


def _values_pass(ds: xr.Dataset, names: Sequence[str], E: str, uE: str) -> bool:
    """Whether NumPy-backed values pass every check of :func:`_value_checks` (finite, ``uE >
    0``, no overflow of ``z²``, the span), tested on the raw arrays: ``False`` as soon as one
    might not, and for Dask-backed variables or ``E`` and ``uE`` over different dimensions,
    whose checks then run as they are (they build the messages). The masks are xarray
    operations, a dozen per data set, made for every in-memory slice of a stacked data set
    before the slices' graphs are built."""
    if any(_is_dask(ds[name].data) for name in names) or ds[E].dims != ds[uE].dims:
        return False
    with np.errstate(all="ignore"):
        for name in names:
            values = np.asarray(ds[name].values)
            if values.dtype == np.bool_:
                continue
            if not np.isfinite(values).all() or (name == uE and not (values > 0).all()):
                return False
        e, u = np.asarray(ds[E].values), np.asarray(ds[uE].values)
        if e.dtype == np.bool_ or u.dtype == np.bool_:
            return True
        z = e / u
        if not np.isfinite(z * z).all():
            return False
        return _span_problem(E, uE)(e.size, np.abs(e).max(), u.max(), u.min()) is None


def validate_dataset(
    ds: xr.Dataset, *, E: str | None = None, uE: str | None = None,
    features: FeatureSpec = None
) -> xr.Dataset:
    """Check that a dataset is a valid xuqcal input, and return it (lazily checked when
    Dask-backed).

    A valid input has the variables of the roles ``E`` and ``uE`` and the feature variables,
    each over the dimension ``sample`` with at least one row; ``E``, ``uE`` and the features
    are numeric (the features may also be boolean) and finite, and ``uE > 0``; the z-scores
    ``E / uE`` must have a finite square (an overflow is an error naming the rows, never a
    verdict) and the data a span ``max(|E|, uE) / min(uE)`` of at most ``2^960``.

    The structure (names, dimensions, dtypes, rows) is checked at once, without reading any
    value. The values of NumPy-backed variables are checked at once too; for Dask-backed
    variables nothing is computed: the returned dataset's Dask-backed variables depend on a
    task that checks every value and raises the same ValueError when they are computed. Use
    the returned dataset (``ds = validate_dataset(ds)``): ``ds`` itself is never modified.

    Parameters
    ----------
    ds : xarray.Dataset
        The dataset.
    E, uE : str, optional
        Names of the error and uncertainty variables; by default the variables recorded with
        these roles, else ``"E"`` and ``"uE"`` (see :func:`roles`).
    features : str or sequence of str, optional
        The feature variables to check. By default every other data variable is a feature,
        except the variables of the :data:`PROBABILISTIC_ROLES` (member errors, quantiles,
        interval bounds: their constructors check them).

    Returns
    -------
    xarray.Dataset
        ``ds`` itself when no checked variable is Dask-backed; else a shallow copy whose
        Dask-backed variables carry the value checks (same values, chunks and attributes).

    Raises
    ------
    ValueError
        For a missing variable, a variable that is not 1-D over ``sample``, non-numeric values,
        zero rows, or NaN, +inf, -inf and (for ``uE``) non-positive values. Value problems of all
        variables are reported together, one per line, each naming the variable, the problem,
        the count and up to five row numbers (the ``sample`` coordinate), e.g.
        ``"uE: 3 of 2040 values are not positive (rows 5, 17, 230)"``. For Dask-backed data the
        value problems are raised when the data are computed.

    Notes
    -----
    Data with extra dimensions (several data sets in one, e.g. ``model × sample``) are checked
    slice by slice (:mod:`xuqcal.analysis.slices`): a point where ``E`` and ``uE`` are both NaN
    is absent from its slice, and each message starts with the slice's labels
    (``model='GCN': uE: 1 of 300 values are NaN (rows 7)``). Their values are checked at once
    when NumPy-backed; Dask-backed, the analyses check each slice when computed.

    Examples
    --------
    >>> ds = from_arrays([0.1, -0.2], [0.3, 0.2])
    >>> validate_dataset(ds.assign(uE=ds.uE - 0.25))
    Traceback (most recent call last):
    ...
    ValueError: uE: 1 of 2 values are not positive (rows 1)
    >>> lazy = validate_dataset(ds.assign(uE=ds.uE - 0.25).chunk())  # nothing computed
    >>> lazy.uE.compute()
    Traceback (most recent call last):
    ...
    ValueError: uE: 1 of 2 values are not positive (rows 1)
    """
    E, uE = roles(ds, E, uE) if isinstance(ds, xr.Dataset) else (E or "E", uE or "uE")
    if isinstance(ds, xr.Dataset):
        dims = extra_dims(ds, E, uE)
        if dims:
            return _check_slices(ds, E, uE, features, dims)
    return _check_dataset(ds, E, uE, features)


def slice_label(labels: Mapping[str, Any]) -> str:
    """The labels of a slice as text, for messages: ``model='GCN', seed=3``.

    Examples
    --------
    >>> slice_label({"model": np.str_("GCN"), "seed": np.int64(3)})
    "model='GCN', seed=3"
    """
    def text(value: Any) -> str:
        value = value.item() if isinstance(value, np.generic) else value
        return repr(value)

    return ", ".join(f"{dim}={text(value)}" for dim, value in labels.items())


def extra_dims(ds: xr.Dataset, E: str | None = None, uE: str | None = None
               ) -> tuple[str, ...]:
    """The dimensions of ``E`` and ``uE`` (by role when not given) other than ``sample``, in the
    order of the data set's dimensions: several data sets in one, whose slices are analysed
    one by one (:mod:`xuqcal.analysis.slices`); a feature is 1-D (shared) or has some of them.
    Empty when ``E`` or ``uE`` is missing or lacks ``sample`` (the one-set checks then name the
    problem). No data are read.

    Examples
    --------
    >>> ds = from_arrays([0.1, -0.2], [0.3, 0.2])
    >>> extra_dims(ds), extra_dims(xr.concat([ds, ds], dim="model"))
    ((), ('model',))
    """
    found: set[str] = set()
    for name in roles(ds, E, uE):
        if name not in ds.data_vars or SAMPLE_DIM not in ds[name].dims:
            return ()
        found.update(d for d in ds[name].dims if d != SAMPLE_DIM)
    return tuple(d for d in ds.dims if d in found)


def slice_positions(ds: xr.Dataset, dims: Sequence[str]
                    ) -> tuple[list[pd.Index], list[tuple[dict[str, Any], dict[str, int]]]]:
    """The slices of ``ds`` along its extra dimensions ``dims``: the labels along each
    dimension (its index, else the positions) and, for every slice in the order of
    :func:`itertools.product`, its labels and its positions.

    Examples
    --------
    >>> ds = xr.Dataset({"E": (("model", "sample"), np.ones((2, 3)))},
    ...                 coords={"model": ["a", "b"]})
    >>> [labels for labels, _ in slice_positions(ds, ["model"])[1]]
    [{'model': 'a'}, {'model': 'b'}]
    """
    import itertools

    labels = [ds.indexes[d] if d in ds.indexes else pd.RangeIndex(ds.sizes[d]) for d in dims]
    units = []
    for index in itertools.product(*[range(len(values)) for values in labels]):
        units.append(({d: labels[k][i] for k, (d, i) in enumerate(zip(dims, index, strict=True))},
                      dict(zip(dims, (int(i) for i in index), strict=True))))
    return labels, units


def present_points(sub: xr.Dataset, labels: Mapping[str, Any], E: str, uE: str,
                   features: FeatureSpec = (), absent: np.ndarray | None = None
                   ) -> xr.Dataset:
    """One NumPy-backed slice of a data set without its absent points (``E`` and ``uE`` both
    NaN), its values checked (:func:`validate_dataset`; ``features`` as there): a message
    starts with the slice's labels and names the rows by the set's own row numbers (the
    coordinate ``row`` of :func:`~xuqcal.io.stack_datasets`, else ``sample``). ``absent`` may
    be given when already computed.

    Examples
    --------
    >>> ds = xr.Dataset({"E": ("sample", [0.1, np.nan, 0.3]),
    ...                  "uE": ("sample", [0.2, np.nan, -0.1])})
    >>> present_points(ds, {"model": "a"}, "E", "uE")
    Traceback (most recent call last):
    ...
    ValueError: model='a': uE: 1 of 2 values are not positive (rows 2)
    """
    prefix = f"{slice_label(labels)}: "
    if absent is None:
        numeric = all(sub[name].dtype.kind in "iuf" for name in (E, uE) if name in sub)
        absent = (np.isnan(np.asarray(sub[E].values, dtype=float))
                  & np.isnan(np.asarray(sub[uE].values, dtype=float))) if numeric else \
            np.zeros(sub.sizes[SAMPLE_DIM], dtype=bool)
    if SAMPLE_DIM not in sub.coords:  # the row positions, kept through the removal below
        sub = sub.assign_coords({SAMPLE_DIM: np.arange(sub.sizes[SAMPLE_DIM])})
    keep = ~np.asarray(absent)
    if not keep.any():
        raise ValueError(f"{prefix}no points: E and uE are NaN at every sample of this slice "
                         f"(select the other slices, e.g. with ds.drop_sel)")
    if not keep.all():
        sub = sub.isel({SAMPLE_DIM: np.flatnonzero(keep)})
    checked = sub
    row = sub.coords.get(ROW_COORD)
    if row is not None and row.dims == (SAMPLE_DIM,):
        checked = sub.assign_coords({SAMPLE_DIM: np.asarray(row.values)})
    _check_dataset(checked, E, uE, features, prefix=prefix)
    return sub


def _check_slices(ds: xr.Dataset, E: str, uE: str, features: FeatureSpec,
                  dims: Sequence[str]) -> xr.Dataset:
    """The checks of a data set with extra dimensions, slice by slice (:func:`present_points`).
    NumPy-backed: the values of every slice are checked at once. Dask-backed: the structure
    only (each analysis checks the values of its slices when computed)."""
    lazy = any(ds[name].chunks is not None for name in ds.data_vars
               if SAMPLE_DIM in ds[name].dims)
    if SAMPLE_DIM not in ds.coords:
        ds = ds.assign_coords({SAMPLE_DIM: np.arange(ds.sizes[SAMPLE_DIM])})
    for labels, positions in slice_positions(ds, dims)[1]:
        sub = ds.isel(positions)
        if lazy:
            try:
                _check_structure(sub, E, uE, features)
            except ValueError as error:
                raise ValueError(f"{slice_label(labels)}: {error}") from error
        else:
            present_points(sub, labels, E, uE, features)
    return ds


# --------------------------------------------------------------------------------------------
# Intervals (used by from_arrays, from_dataframe and read_csv)
# --------------------------------------------------------------------------------------------


def interval_z(coverage_level: float) -> float:
    """``z = Φ⁻¹((1 + coverage_level) / 2)``: the half-width of the central interval at that
    level of a standard normal distribution (``uE = (upper - lower) / (2 z)``).

    Examples
    --------
    >>> round(interval_z(0.95), 4)
    1.96
    """
    return normal_coverage_factor(check_coverage_level(coverage_level))


def interval_arguments(uE_given: bool, lower: Any, upper: Any, coverage_level: Any,
                       uE_from_interval: Any) -> float | None:
    """The checked level of the interval given to a constructor (``None`` for no interval),
    refusing inconsistent arguments before any work."""
    if not isinstance(uE_from_interval, bool | np.bool_):
        raise ValueError(f"uE_from_interval: expected True or False, got {uE_from_interval!r}")
    if (lower is None) != (upper is None):
        given, missing = ("lower", "upper") if upper is None else ("upper", "lower")
        raise ValueError(f"{missing}: missing: {given} is given; a predicted interval needs "
                         "both bounds (lower=, upper=) and its level (coverage_level=)")
    if lower is None:
        if coverage_level is not None:
            raise ValueError("coverage_level: given without an interval; pass its bounds with "
                             "lower= and upper=")
        if uE_from_interval:
            raise ValueError("uE_from_interval: there is no interval to derive uE from; pass "
                             "lower=, upper= and coverage_level=")
        if not uE_given:
            raise ValueError("uE: missing: give the standard uncertainties uE, or a predicted "
                             "interval of the error (lower=, upper= and coverage_level=)")
        return None
    if coverage_level is None:
        raise ValueError("coverage_level: missing: give the nominal level of the interval "
                         "lower..upper, e.g. coverage_level=0.9 for a central 90 % interval")
    level = check_coverage_level(coverage_level)
    if uE_from_interval and uE_given:
        raise ValueError("uE_from_interval: uE is given as well; pass either uE or "
                         "uE_from_interval=True")
    return level


def uE_expression(coverage_level: float) -> str:
    """The expression of ``uE`` derived from an interval (attribute ``expression``).

    Examples
    --------
    >>> uE_expression(0.95)
    '(upper - lower) / (2 * 1.959964)'
    """
    return f"(upper - lower) / (2 * {interval_z(coverage_level):.7g})"


def uE_from_bounds(lower: Any, upper: Any, coverage_level: float) -> Any:
    """``uE = (upper - lower) / (2 z)`` (NumPy or Dask arrays; see :func:`interval_z`)."""
    return (upper - lower) / (2.0 * interval_z(coverage_level))


def interval_attrs(bound: str, expression: str, units: str | None,
                   coverage_level: float) -> dict[str, Any]:
    """The attributes of a bound (``"lower"`` or ``"upper"``) of a predicted interval."""
    attrs: dict[str, Any] = {"long_name": f"{bound} bound of the predicted interval of the "
                                          "error"}
    if units is not None:
        attrs["units"] = str(units)
    attrs["expression"] = expression
    attrs[ROLE_ATTR] = f"interval_{bound}"
    attrs[COVERAGE_LEVEL_ATTR] = float(coverage_level)
    return attrs


def interval_checks(ds: xr.Dataset, lower: str = "lower", upper: str = "upper"
                    ) -> list[_Check]:
    """The checks of the bounds of an interval: finite, and ``lower <= upper``."""
    for bound in (lower, upper):
        if ds[bound].dtype.kind not in "iuf":
            raise ValueError(f"{bound}: values are not numeric (dtype {ds[bound].dtype}); the "
                             "bounds of the interval must hold numbers")
    notes = {b: (f"; computed as '{ds[b].attrs['expression']}'"
                 if ds[b].attrs.get("expression", b) != b else "") for b in (lower, upper)}
    crossed = ds[lower] > ds[upper]
    return [*finite_checks(lower, ds[lower], note=notes[lower]),
            *finite_checks(upper, ds[upper], note=notes[upper]),
            (f"{lower}, {upper}", crossed, f"intervals have {lower} > {upper}", "")]


def check_without_uE(ds: xr.Dataset, names: Sequence[str], *, hint: str = _NO_UE_HINT
                     ) -> xr.Dataset:
    """The value checks of a dataset without ``uE`` (the error and 1-D features ``names``,
    the bounds of an interval when ``ds`` has them)."""
    checks = []
    for name in names:
        expression = ds[name].attrs.get("expression", name)
        note = f"; computed as '{expression}'" if expression != name else ""
        checks += finite_checks(name, ds[name], note=note)
    if ds.sizes.get(SAMPLE_DIM, 0) == 0:
        raise ValueError(f"ds: empty data: the dataset has 0 rows along '{SAMPLE_DIM}'")
    return check_points(ds, checks, hint=hint)


# --------------------------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------------------------


def _variable_attrs(var: str, expression: str, units: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if var in _LONG_NAMES:
        attrs["long_name"] = _LONG_NAMES[var]
        if units is not None:
            attrs["units"] = str(units)
    attrs["expression"] = expression
    if var in _LONG_NAMES:
        attrs[ROLE_ATTR] = var
    return attrs


def _dataset_attrs(
    *,
    source: str,
    E: str,
    uE: str,
    where: str,
    n_rows_read: int,
    n_rows_dropped: int,
    name: str | None,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "source": source,
        "E_expression": E,
        "uE_expression": uE,
        "where": where,
        "n_rows_read": int(n_rows_read),
        "n_rows_dropped": int(n_rows_dropped),
    }
    if name is not None:
        attrs["name"] = str(name)
    return provenance(attrs)


def _check_feature_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"features: a feature name must be a non-empty string, got {name!r}")
    if name in ("E", "uE", SAMPLE_DIM):
        raise ValueError(
            f"features: a feature cannot be named '{name}' (reserved for "
            f"{'the sample coordinate' if name == SAMPLE_DIM else 'the ' + _LONG_NAMES[name]}); "
            f"choose another name with the mapping form, e.g. features={{'{name}_': '...'}}"
        )
    if "/" in name:
        raise ValueError(f"features: a feature name cannot contain '/' (got '{name}')")
    return name


def _sample_coord(rows: np.ndarray) -> xr.Variable:
    return xr.Variable(
        SAMPLE_DIM, np.asarray(rows, dtype=np.int64), {"long_name": "row number in the input"}
    )


def _to_1d(values: Any, var: str) -> Any:
    """Numpy or dask 1-D data from an array, list, Series or DataArray."""
    if isinstance(values, xr.DataArray):
        data = values.data
    elif _is_dask(values):
        data = values
    else:
        data = _series_to_numpy(values) if isinstance(values, pd.Series) else np.asarray(values)
    if data.ndim != 1:
        raise ValueError(f"{var}: expected 1-D values, got an array of shape {data.shape}")
    kind = data.dtype.kind
    allowed = "iuf" if var in ("E", "uE") else "biuf"
    if kind in allowed:
        return data if kind == "b" else data.astype(np.float64)
    if kind in "OUS" and not _is_dask(data):
        converted = _numeric_values(data, f"{var}: the input")
        if converted.dtype.kind in allowed:
            return converted
    raise ValueError(
        f"{var}: values are not numeric (dtype {data.dtype}); "
        f"{'E and uE' if var in ('E', 'uE') else 'features'} must hold numbers"
    )


def from_arrays(
    E: npt.ArrayLike | xr.DataArray,
    uE: npt.ArrayLike | xr.DataArray | None = None,
    *,
    lower: npt.ArrayLike | xr.DataArray | None = None,
    upper: npt.ArrayLike | xr.DataArray | None = None,
    coverage_level: float | None = None,
    uE_from_interval: bool = False,
    name: str | None = None,
    units: str | None = None,
    **features: npt.ArrayLike | xr.DataArray,
) -> xr.Dataset:
    """Build a validated input dataset from arrays of errors, uncertainties and features.

    Parameters
    ----------
    E, uE : array_like or xarray.DataArray
        Prediction errors and standard uncertainties (``uE > 0``), 1-D, one value per data point.
        A DataArray may use any dimension name (it becomes ``sample``); its coordinates are
        dropped, the values are taken in order. Dask-backed DataArrays stay lazy: nothing is
        computed, the value checks run when the data are computed. ``uE`` may be left out when
        a predicted interval is given: the dataset then has no ``uE`` (unless
        ``uE_from_interval=True``), only what the interval analyses need.
    lower, upper : array_like or xarray.DataArray, optional
        A predicted interval **of the error** ``E = observed - prediction`` at the nominal level
        ``coverage_level``, one pair of bounds per data point (``lower <= upper``, finite),
        stored as the variables ``lower`` and ``upper`` (roles ``interval_lower``,
        ``interval_upper``, attribute ``coverage_level``; see
        :func:`xuqcal.analysis.coverage.interval_coverage`). From a predicted interval
        ``[L, U]`` of the target around the prediction ``ŷ``: ``lower = L - ŷ``,
        ``upper = U - ŷ`` (``observed`` lies in ``[L, U]`` exactly when ``E`` lies in
        ``[lower, upper]``).
    coverage_level : float, optional
        The nominal level of the interval, in (0, 1); required with ``lower`` and ``upper``.
    uE_from_interval : bool
        Derive ``uE = (upper - lower) / (2 z)`` with ``z = Φ⁻¹((1 + coverage_level) / 2)``,
        the standard deviation of a normal distribution whose central interval at that level
        has the given width (attribute ``expression`` of ``uE``). Only on request: by default
        no ``uE`` is derived, and ``uE`` and ``uE_from_interval=True`` cannot both be given.
    name : str, optional
        A name for the dataset (attribute ``name``).
    units : str, optional
        Units of ``E`` and ``uE`` (attribute ``units`` of both variables, and of the bounds).
    **features : array_like or xarray.DataArray
        Feature variables (numeric or boolean), one value per data point. A feature cannot be
        named ``name``, ``units``, ``E``, ``uE``, ``sample`` or like the interval arguments.

    Returns
    -------
    xarray.Dataset
        Variables ``E``, ``uE`` (float64; absent when neither given nor derived), ``lower`` and
        ``upper`` (with an interval) and the features over ``sample`` = 0, 1, ..., M-1.

    Raises
    ------
    ValueError
        For inputs of different lengths, non-numeric values, zero rows, NaN or infinite values,
        or ``uE <= 0`` (see :func:`validate_dataset`); before any work, for a missing ``uE``
        without an interval, an interval without both bounds or without its level, or ``uE``
        with ``uE_from_interval=True``; for bounds that are not finite or with ``lower > upper``,
        naming the rows.

    Examples
    --------
    >>> ds = from_arrays([0.1, -0.3, 0.2], [0.2, 0.25, 0.1], units="eV", X=[1.0, 2.0, 3.0])
    >>> ds.sizes["sample"], list(ds.data_vars)
    (3, ['E', 'uE', 'X'])
    >>> ds = from_arrays([0.1, -0.3], lower=[-0.4, -0.2], upper=[0.4, 0.3], coverage_level=0.9)
    >>> list(ds.data_vars), ds.lower.attrs["coverage_level"]
    (['E', 'lower', 'upper'], 0.9)
    >>> from_arrays([0.1, -0.3], lower=[-0.4, -0.2], upper=[0.4, 0.3], coverage_level=0.9,
    ...             uE_from_interval=True).uE.values.round(3).tolist()
    [0.243, 0.152]
    """
    if "interval_level" in features:  # not a feature: the keyword removed in version 0.2
        raise TypeError("from_arrays() got an unexpected keyword argument 'interval_level' "
                        "(renamed coverage_level in version 0.2)")
    level = interval_arguments(uE is not None, lower, upper, coverage_level, uE_from_interval)
    inputs = {"E": E} if uE is None else {"E": E, "uE": uE}
    for feature in features:
        inputs[_check_feature_name(feature)] = features[feature]
    if level is not None:
        inputs.update(lower=lower, upper=upper)
    data = {var: _to_1d(values, var) for var, values in inputs.items()}
    lengths = {var: d.shape[0] for var, d in data.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{var} has {n}" for var, n in lengths.items())
        raise ValueError(
            f"length mismatch: {detail} values; E, uE and every feature need exactly one value "
            "per data point"
        )
    n = lengths["E"]
    expressions = {var: var for var in data}
    if level is not None and uE_from_interval:
        data["uE"] = uE_from_bounds(data["lower"], data["upper"], level)
        expressions["uE"] = uE_expression(level)
    attrs = {var: _variable_attrs(var, expressions[var], units) for var in data}
    if level is not None:
        attrs.update({bound: interval_attrs(bound, bound, units, level)
                      for bound in ("lower", "upper")})
    ds = xr.Dataset(
        {var: xr.Variable(SAMPLE_DIM, data[var], attrs[var])
         for var in ["E", *(["uE"] if "uE" in data else []),
                     *(v for v in data if v not in ("E", "uE"))]},
        coords={SAMPLE_DIM: _sample_coord(np.arange(n))},
        attrs=_dataset_attrs(
            source="arrays", E="E", uE=expressions.get("uE", ""), where="", n_rows_read=n,
            n_rows_dropped=0, name=name
        ),
    )
    if level is None:
        return validate_dataset(ds)
    # the bounds first: a crossed interval would else show as uE <= 0 when uE is derived
    ds = check_points(ds, interval_checks(ds))
    if "uE" in ds.data_vars:
        return validate_dataset(ds)
    return check_without_uE(ds, [str(v) for v in ds.data_vars if v not in ("lower", "upper")],
                            hint="")
