"""Argument checks shared by the modules (variables of a data set, grids of studies and cubes)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def as_list(values, name: str) -> list:
    """A non-empty list of distinct values (a single value becomes a one-element list).

    Examples
    --------
    >>> as_list(3, "size"), as_list("t6", "generator")
    ([3], ['t6'])
    """
    if isinstance(values, str) or not isinstance(values, Iterable):
        values = [values]
    values = list(values)
    if not values:
        raise ValueError(f"{name}: the list of values is empty")
    if len(set(values)) != len(values):
        raise ValueError(f"{name}: a value is listed twice in {values}")
    return values


def int_list(values, name: str, minimum: int) -> list[int]:
    """A non-empty list of distinct integers ``>= minimum``.

    Examples
    --------
    >>> int_list([10, 20], "n_bins", 1)
    [10, 20]
    """
    values = as_list(values, name)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < minimum:
            raise ValueError(f"{name}: expected integers >= {minimum}, got {v!r}")
    return [int(v) for v in values]


def float_list(values, name: str, *, above: float) -> list[float]:
    """A non-empty list of distinct finite numbers ``> above``.

    Examples
    --------
    >>> float_list([3, 6.5], "nu", above=0)
    [3.0, 6.5]
    """
    values = as_list(values, name)
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise ValueError(f"{name}: expected numbers > {above:g}, got {v!r}")
        if not (math.isfinite(float(v)) and float(v) > above):
            raise ValueError(f"{name}: expected finite numbers > {above:g}, got {v!r}")
        out.append(float(v))
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: a value is listed twice in {values}")
    return out


def variable_name(ds, by: str, uE: str = "uE", *, role: str = "binning") -> str:
    """The name of variable ``by`` of ``ds``, checked; ``"uE"`` stands for the uncertainty
    variable ``uE`` whatever its name.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(100, nu=6, seed=0).rename({"uE": "u"})
    >>> variable_name(ds, "uE", uE="u")
    'u'
    >>> variable_name(ds, "X")
    Traceback (most recent call last):
    ValueError: by: the binning variable 'X' is not in the dataset (variables: E, u)
    """
    name = uE if by == "uE" else by
    if not isinstance(name, str) or name not in ds.variables or name == "sample":
        raise ValueError(f"by: the {role} variable {by!r} is not in the dataset "
                         f"(variables: {', '.join(map(str, ds.data_vars))})")
    return name
