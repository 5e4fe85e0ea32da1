"""Several input datasets stacked along a new dimension: :func:`stack_datasets`.

Every analysis of xuqcal reduces over ``sample`` and broadcasts over the other dimensions of
``E`` and ``uE``; stacking data sets of different lengths along ``dataset`` lets one call
validate them all, each slice giving the result of that set alone. The sets are NaN-padded to
the longest: a position where a set has no point holds ``E`` and ``uE`` both NaN, which the
analyses read as *absent* (not as bad data).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from xuqcal.io.expressions import _list_names
from xuqcal.io.schema import ROW_COORD, SAMPLE_DIM, _record_roles, roles, validate_dataset

__all__ = ["ROW_COORD", "stack_datasets"]

SOURCE_COORD = "source"
"""Coordinate of a stacked dataset over ``dataset``: each set's attribute ``source`` (the file
it was read from), when the sets record different sources."""

#: The fill value of :data:`ROW_COORD` at padded positions.
NO_ROW = -1


def _check_labels(datasets: object, dim: object) -> list[str]:
    if not isinstance(dim, str) or not dim:
        raise ValueError(f"dim: expected a dimension name (a non-empty string), got {dim!r}")
    if dim == SAMPLE_DIM:
        raise ValueError(f"dim: the sets are stacked along a new dimension; "
                         f"'{SAMPLE_DIM}' is the dimension of their points")
    if not isinstance(datasets, Mapping):
        raise TypeError("datasets: expected a mapping of names to xarray.Dataset, e.g. "
                        f"{{'train': ds1, 'test': ds2}}, got {type(datasets).__name__}")
    if not datasets:
        raise ValueError("datasets: no data set to stack (an empty mapping)")
    labels = []
    for label, ds in datasets.items():
        if not isinstance(label, str) or not label:
            raise ValueError(f"datasets: each set needs a name (a non-empty string), got "
                             f"{label!r}")
        if not isinstance(ds, xr.Dataset):
            raise TypeError(f"datasets: set '{label}': expected an xarray.Dataset, got "
                            f"{type(ds).__name__}")
        labels.append(label)
    return labels


def _common_roles(datasets: Mapping[str, xr.Dataset], dim: str) -> tuple[str, str]:
    """The common error and uncertainty names of the sets, whose feature variables must be the
    same too (a ValueError naming the sets when they differ)."""
    found = {}
    for label, ds in datasets.items():
        if dim in ds.dims or dim in ds.variables:
            raise ValueError(f"datasets: set '{label}' already has a dimension or variable "
                             f"'{dim}'; stack along another dimension (dim='...')")
        if ROW_COORD in ds.variables:
            raise ValueError(f"datasets: set '{label}' has a variable '{ROW_COORD}', which "
                             "the stacked dataset uses for the original row numbers; rename "
                             f"it, e.g. ds.rename({{'{ROW_COORD}': '{ROW_COORD}_'}})")
        if SAMPLE_DIM not in ds.dims:
            raise ValueError(f"datasets: set '{label}' has no dimension '{SAMPLE_DIM}' "
                             f"(dimensions: {_list_names([str(d) for d in ds.dims]) or 'none'})")
        try:
            E, uE = roles(ds)
        except ValueError as error:
            raise ValueError(f"datasets: set '{label}': {error}") from None
        features = [str(v) for v in ds.data_vars if v not in (E, uE)]
        found[label] = (E, uE, features)
    first_label, (E, uE, _) = next(iter(found.items()))
    for label, (e, u, _) in found.items():
        if (e, u) != (E, uE):
            raise ValueError(
                f"datasets: the error and uncertainty variables differ between the sets: "
                f"'{first_label}' has E='{E}', uE='{uE}', '{label}' has E='{e}', uE='{u}'; "
                f"rename them to one name in every set, e.g. ds.rename({{'{e}': '{E}'}})")
    union = list(dict.fromkeys(name for _, _, f in found.values() for name in f))
    differences = []
    for label, (_, _, f) in found.items():
        missing = [name for name in union if name not in f]
        if missing:
            differences.append(f"'{label}' has no {_list_names(missing)}")
    if differences:
        raise ValueError(
            "datasets: the sets have different feature variables (" + "; ".join(differences)
            + "); every set needs the same features: select the common ones in every set "
            f"first, e.g. ds[['{E}', '{uE}', ...]]")
    return E, uE


def stack_datasets(datasets: Mapping[str, xr.Dataset], dim: str = "dataset") -> xr.Dataset:
    """Stack input datasets of any lengths along a new dimension, NaN-padding the shorter ones.

    Each set is checked first (:func:`~xuqcal.io.validate_dataset`; an error names the set
    and its original rows). The sets must have the same error and uncertainty variables (by
    role, see :func:`~xuqcal.io.roles`) and the same feature variables: a feature missing
    from one set would be NaN at points that exist, which no analysis accepts, so sets with
    different features are refused rather than merged. Their other dimensions (e.g.
    ``model``) must have the same coordinates.

    Parameters
    ----------
    datasets : mapping of str to xarray.Dataset
        The sets by name, e.g. ``{"train": ds1, "test": ds2}``; the names label ``dim``.
    dim : str, default ``"dataset"``
        The new dimension (placed first in every variable).

    Returns
    -------
    xarray.Dataset
        The variables of the sets over ``(dim, ..., sample)`` with ``sample`` the positions
        ``0, ..., max M - 1``. Where a set has fewer points, ``E``, ``uE`` and the features
        are NaN (the point is absent; integer and boolean features become float64 then), and
        the coordinate ``row`` over ``(dim, sample)`` holds each point's original row number
        in its set (the set's ``sample`` coordinate; ``-1`` at padded positions), so that
        messages can name the rows of the input files. The variables keep their roles
        (attribute ``xuqcal_role``) and the attributes common to every set; dataset
        attributes that differ are dropped, except ``source`` (the file each set was read
        from), which becomes a coordinate over ``dim``. Dask-backed sets stay lazy.

    Raises
    ------
    ValueError
        For an empty mapping, a set that is not a valid input, sets with different error,
        uncertainty or feature variables or different coordinates along another dimension,
        and a set that already has ``dim`` or a variable named ``row``.

    Examples
    --------
    >>> import xuqcal
    >>> a = xuqcal.from_arrays([0.1, -0.2, 0.3], [0.2, 0.3, 0.2])
    >>> b = xuqcal.from_arrays([0.5, -0.1], [0.4, 0.2])
    >>> ds = stack_datasets({"a": a, "b": b})
    >>> ds.E.dims, ds.sizes["sample"]
    (('dataset', 'sample'), 3)
    >>> ds.E.sel(dataset="b").values.tolist(), ds.row.sel(dataset="b").values.tolist()
    ([0.5, -0.1, nan], [0, 1, -1])
    """
    labels = _check_labels(datasets, dim)
    E, uE = _common_roles(datasets, dim)
    checked = {}
    for label in labels:
        try:
            checked[label] = validate_dataset(datasets[label], E=E, uE=uE)
        except ValueError as error:
            raise ValueError(f"datasets: set '{label}': {error}") from None
    sizes = [ds.sizes[SAMPLE_DIM] for ds in checked.values()]
    longest = max(sizes)
    rows = np.full((len(labels), longest), NO_ROW, dtype=np.int64)
    labelled_rows = {}
    padded = []
    for k, ds in enumerate(checked.values()):
        m = ds.sizes[SAMPLE_DIM]
        if SAMPLE_DIM in ds.coords:
            values = np.asarray(ds[SAMPLE_DIM].values)
            if values.dtype.kind in "iu":
                rows[k, :m] = values
            else:  # labels that are not row numbers: kept as text
                labelled_rows[k] = values.astype(str)
                rows[k, :m] = np.arange(m)
            ds = ds.drop_vars(SAMPLE_DIM)
        else:
            rows[k, :m] = np.arange(m)
        if m < longest:
            ds = ds.assign({name: var.astype(np.float64) for name, var in ds.data_vars.items()
                            if var.dtype == np.bool_ and SAMPLE_DIM in var.dims})
            ds = ds.pad({SAMPLE_DIM: (0, longest - m)})
        padded.append(ds)
    try:
        stacked = xr.concat(padded, dim=pd.Index(labels, name=dim), data_vars="all",
                            coords="different", compat="equals", join="exact",
                            combine_attrs="drop_conflicts")
    except ValueError as error:
        raise ValueError(f"datasets: the sets cannot be stacked: {error}; their dimensions "
                         f"other than '{SAMPLE_DIM}' need the same coordinates") from None
    stacked = stacked.transpose(dim, ...)
    # labels as a NumPy string array (pandas >= 3 would give a StringDtype index)
    labels_array = np.array(labels, dtype=str)
    row = rows
    if labelled_rows:
        row = np.full((len(labels), longest), "", dtype=object)
        for k, m in enumerate(sizes):
            row[k, :m] = labelled_rows.get(k, rows[k, :m].astype(str))
    stacked = stacked.assign_coords({
        dim: (dim, labels_array),
        SAMPLE_DIM: (SAMPLE_DIM, np.arange(longest, dtype=np.int64),
                     {"long_name": "position of the point in its set (see 'row')"}),
        ROW_COORD: ((dim, SAMPLE_DIM), row,
                    {"long_name": "row number in the input of the set",
                     "comment": f"{NO_ROW} (or empty): no point at this position (E and uE "
                                "are NaN)"}),
    })
    stacked[dim].attrs["long_name"] = "data set"
    sources = [ds.attrs.get("source") for ds in checked.values()]
    if (SOURCE_COORD not in stacked.variables and all(isinstance(s, str) for s in sources)
            and len(set(sources)) > 1):
        stacked = stacked.assign_coords({SOURCE_COORD: (dim, np.array(sources, dtype=object),
                                                        {"long_name": "input of the set"})})
    stacked.attrs["stacked_along"] = dim
    return _record_roles(stacked, E, uE)
