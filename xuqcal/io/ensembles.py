"""Ensemble predictions: :func:`from_ensemble` builds an input dataset from the predictions of
the members of an ensemble (deep ensembles, bootstrap models, MC dropout samples, ...).

The error of the ensemble is ``E = observed - mean prediction`` (the sign convention of xuqcal,
``E = reference - prediction``, as in ``E="logP - y_pred"``), its standard uncertainty ``uE`` is
the standard deviation of the member predictions, and the member errors
``members = observed - member prediction`` (role ``members``, same sign as ``E``, whose mean
over the members is ``E`` up to rounding) keep the whole predicted distribution, e.g. for the
ensemble CRPS ``mean_i |e_i| - mean_ij |e_i - e_j| / 2`` of the member errors ``e_i``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import xarray as xr

from xuqcal.io.quantiles import (
    _bare,
    _points_first,
    check_points,
    distribution_values,
    feature_values,
    finite_checks,
    reference_values,
)
from xuqcal.io.schema import (
    ROLE_ATTR,
    SAMPLE_DIM,
    _dataset_attrs,
    _sample_coord,
    _variable_attrs,
    validate_dataset,
)

__all__ = ["MEMBER_DIM_ATTR", "from_ensemble"]

MEMBER_DIM_ATTR = "member_dim"
"""The attribute of a ``members`` variable naming its dimension of members."""


def _check_ddof(ddof: Any, n_members: int) -> int:
    if isinstance(ddof, bool) or not isinstance(ddof, int | np.integer) \
            or not 0 <= ddof < n_members:
        raise ValueError(f"ddof: expected an integer from 0 to {n_members - 1} (the ensemble has "
                         f"{n_members} members), got {ddof!r}")
    return int(ddof)


def from_ensemble(
    predictions: npt.ArrayLike | xr.DataArray,
    observed: npt.ArrayLike | xr.DataArray,
    *,
    dim: str = "member",
    axis: int | None = None,
    ddof: int = 1,
    name: str | None = None,
    units: str | None = None,
    **features: npt.ArrayLike | xr.DataArray,
) -> xr.Dataset:
    """Build a validated input dataset from the member predictions of an ensemble.

    Parameters
    ----------
    predictions : array_like or xarray.DataArray
        The predictions of the members, one per sample and member. A DataArray has the
        dimension ``dim`` and the dimension ``sample`` (or one other dimension, which becomes
        ``sample``), and may have extra dimensions (``model``, ``task``, ...), whose labels are
        kept. An array without dimension names is 2-D, and ``axis`` says which axis holds the
        members. Dask-backed data stay lazy (the checks run when the data are computed).
    observed : array_like or xarray.DataArray
        The reference values, one per sample (a DataArray may also have extra dimensions of
        ``predictions``). Matched by position, never aligned: the labels of the dimensions
        shared with ``predictions`` must agree.
    dim : str
        The dimension of the members in ``predictions`` and in the result.
    axis : int, optional
        The axis of the members in an array without dimension names (1: one row per sample).
    ddof : int
        Delta degrees of freedom of the standard deviation: ``uE = sqrt(sum (x_i - mean)² /
        (K - ddof))`` over the ``K`` members (1: the sample standard deviation).
    name : str, optional
        A name for the dataset (attribute ``name``).
    units : str, optional
        Units of ``E``, ``uE`` and the member errors.
    **features : array_like or xarray.DataArray
        Feature variables (numeric or boolean), one value per sample.

    Returns
    -------
    xarray.Dataset
        Over ``sample`` = 0, 1, ..., M-1 (and the extra dimensions): ``E = observed - mean
        prediction`` (role ``E``), ``uE`` = the members' standard deviation (role ``uE``,
        attribute ``ddof``), ``members = observed - predictions`` (role ``members``, over
        ``sample`` and ``dim``, whose coordinate holds the members' labels, else 0, 1, ...)
        and the features.

    Raises
    ------
    ValueError
        Before any work: for fewer than 2 members, a ``ddof`` that is not an integer from 0 to
        K - 1, a missing member dimension, mismatched sizes or labels of ``observed`` or the
        features, non-numeric values. For NaN or infinite predictions or observed values and for
        samples whose members all agree (zero spread, so ``uE = 0``), naming the rows (for
        Dask-backed data, when the data are computed).

    Examples
    --------
    >>> ds = from_ensemble([[1.0, 1.2, 1.4], [2.0, 2.5, 3.0]], [1.1, 2.9], axis=1)
    >>> ds.E.values.round(2).tolist(), ds.uE.values.round(2).tolist()
    ([-0.1, 0.4], [0.2, 0.5])
    >>> ds.members.dims
    ('sample', 'member')
    >>> from_ensemble([[1.0, 1.0], [2.0, 2.5]], [1.1, 2.9], axis=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: predictions: 1 of 2 samples have zero spread (all members are equal...) (rows 0)
    """
    x = distribution_values(predictions, "predictions", dim, axis, "members")
    n_members = x.sizes[dim]
    if n_members < 2:
        raise ValueError(f"predictions: an ensemble needs at least 2 members along {dim!r}, "
                         f"got {n_members}")
    ddof = _check_ddof(ddof, n_members)
    obs = reference_values(observed, "observed", x, "predictions", dim)
    n = x.sizes[SAMPLE_DIM]
    extra = feature_values(features, n, ("E", "uE", "members"))
    rows = {SAMPLE_DIM: np.arange(n)}
    x, obs = _bare(x).assign_coords(rows), _bare(obs).assign_coords(rows)
    if dim not in x.indexes:
        x = x.assign_coords({dim: np.arange(n_members)})
    finite = np.isfinite(x).all(dim)
    spread = finite & (x.max(dim, skipna=False) == x.min(dim, skipna=False))
    checks = [*finite_checks("observed", obs), *finite_checks("predictions", x, over=dim),
              ("predictions", spread, "samples have zero spread (all members are equal, so "
               "uE would be 0)", "")]
    checks += [check for feature, var in extra.items()
               for check in finite_checks(feature, xr.DataArray(var).assign_coords(rows))]
    errors = _points_first(obs - x.mean(dim, skipna=False))
    spreads = x.std(dim, ddof=ddof, skipna=False).transpose(*errors.dims)
    member_errors = (obs - x).transpose(*errors.dims, dim)
    uE_text = f"std(predictions, ddof={ddof})"
    member_attrs = {"long_name": "member errors: observed - member prediction", **(
        {"units": str(units)} if units is not None else {}),
        "expression": "observed - predictions", ROLE_ATTR: "members", MEMBER_DIM_ATTR: dim}
    ds = xr.Dataset(
        {"E": errors.assign_attrs(_variable_attrs("E", "observed - mean(predictions)", units)),
         "uE": spreads.assign_attrs({**_variable_attrs("uE", uE_text, units), "ddof": ddof}),
         "members": member_errors.assign_attrs(member_attrs), **extra},
        attrs={**_dataset_attrs(source="ensemble", E="observed - mean(predictions)",
                                uE=uE_text, where="", n_rows_read=n, n_rows_dropped=0,
                                name=name),
               "n_members": int(n_members), "ddof": ddof},
    ).assign_coords({SAMPLE_DIM: _sample_coord(np.arange(n))})
    ds[dim].attrs.setdefault("long_name", "ensemble member")
    ds = check_points(ds, checks)
    return validate_dataset(ds)
