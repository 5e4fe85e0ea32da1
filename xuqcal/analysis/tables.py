"""Tables of validation results with extra dimensions (several data sets, models, ...).

A :func:`~xuqcal.validate` result of data over ``(dataset, sample)`` (or any other dimensions
besides ``sample``) has those dimensions in front of ``statistic``, ``scheme`` and
``generator``. :func:`slice_blocks` cuts it into one ordinary result per slice (to print with
:func:`~xuqcal.analysis.validation.summary_table`, as the ``xuqcal validate`` command does);
:func:`slices_summary` gives one row per slice and statistic, and :func:`slices_table` prints
it. The functions read computed results (call ``.compute()`` on a lazy one first).

Examples
--------
>>> import xuqcal
>>> sets = {"a": xuqcal.synthetic.nig(300, nu=6, seed=1),
...         "b": xuqcal.synthetic.nig(200, nu=6, seed=2)}
>>> result = xuqcal.validate(xuqcal.stack_datasets(sets), ["zms"], n_boot=200, n_mc=100)
>>> [slice_title(labels, block) for labels, block in slice_blocks(result)]
['dataset = a (M = 300)', 'dataset = b (M = 200)']
>>> slices_summary(result)[["dataset", "n_samples", "statistic", "verdict"]]
  dataset  n_samples statistic verdict
0       a        300       zms    pass
1       b        200       zms    pass
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from xuqcal.io.schema import slice_positions

__all__ = ["RESULT_DIMS", "slice_blocks", "slice_dims", "slice_size", "slice_title",
           "slices_summary", "slices_table"]

RESULT_DIMS = ("statistic", "scheme", "generator")
"""The dimensions of the result of one data set; every other dimension indexes slices."""

#: Coordinate of a broadcast result: the number of points of each slice.
SIZE_COORD = "n_samples"


def slice_dims(result: xr.Dataset) -> list[str]:
    """The dimensions of ``result`` that index slices (all but :data:`RESULT_DIMS`), in order.

    Examples
    --------
    >>> slice_dims(xr.Dataset({"zeta": (("model", "statistic", "scheme"), [[[0.5]]])}))
    ['model']
    """
    if not isinstance(result, xr.Dataset):
        raise TypeError(f"result: expected an xarray.Dataset (a validate result), got "
                        f"{type(result).__name__}")
    return [str(d) for d in result.dims if d not in RESULT_DIMS]


def slice_blocks(result: xr.Dataset) -> list[tuple[dict[str, Any], xr.Dataset]]:
    """The result of each slice of a validation result, with its labels.

    Parameters
    ----------
    result : xarray.Dataset
        A :func:`~xuqcal.validate` result, with or without dimensions besides
        :data:`RESULT_DIMS`.

    Returns
    -------
    list of (dict, xarray.Dataset)
        For each slice (the product of the extra dimensions, in the order of the result), the
        labels ``{dim: coordinate value}`` (the position where a dimension has no coordinate)
        and the slice, an ordinary one-set result whose extra dimensions are scalar
        coordinates. A result without extra dimensions is one block with empty labels.

    Examples
    --------
    >>> import xuqcal
    >>> r = xuqcal.validate(xuqcal.synthetic.nig(200, nu=6, seed=0), ["zms"], n_boot=100,
    ...                     n_mc=50)
    >>> [(labels, block.sizes["statistic"]) for labels, block in slice_blocks(r)]
    [({}, 1)]
    """
    return [(labels, result.isel(positions))
            for labels, positions in slice_positions(result, slice_dims(result))[1]]


def slice_size(block: xr.Dataset) -> int | None:
    """The number of points M of a slice (or of a one-set result): its coordinate
    ``n_samples``, else its attribute ``n_samples``; ``None`` when neither is known."""
    if SIZE_COORD in block.coords and block[SIZE_COORD].ndim == 0:
        value = block[SIZE_COORD].values
    elif not slice_dims(block) and SIZE_COORD in block.attrs:
        value = block.attrs[SIZE_COORD]
    else:
        return None
    value = float(value)
    return None if np.isnan(value) else int(value)


def slice_title(labels: dict[str, Any], block: xr.Dataset | None = None) -> str:
    """The header line of a slice, e.g. ``dataset = b (M = 3834)``.

    Examples
    --------
    >>> slice_title({"dataset": "b", "model": "gp"})
    'dataset = b, model = gp'
    """
    text = ", ".join(f"{dim} = {value}" for dim, value in labels.items()) or "all data"
    size = slice_size(block) if block is not None else None
    return text + (f" (M = {size})" if size is not None else "")


def slices_summary(result: xr.Dataset) -> pd.DataFrame:
    """One row per slice and statistic of a validation result: the estimate, its interval
    and the verdict with the scheme that decided it.

    Parameters
    ----------
    result : xarray.Dataset
        A computed :func:`~xuqcal.validate` result (with or without extra dimensions).

    Returns
    -------
    pandas.DataFrame
        Columns: one per extra dimension (its labels), ``n_samples`` (M of the slice, or
        ``<NA>`` when the result does not record it), ``statistic``, ``estimate``,
        ``ci_low``, ``ci_high``, ``verdict`` and ``verdict_scheme`` (empty when no scheme
        decided, e.g. a statistic not usable for validation).
    """
    dims = slice_dims(result)
    rows = []
    for labels, block in slice_blocks(result):
        size = slice_size(block)
        for i, statistic in enumerate(block["statistic"].values):
            one = block.isel(statistic=i)
            rows.append({**labels, "n_samples": size, "statistic": str(statistic),
                         **{name: float(one[name]) for name in ("estimate", "ci_low",
                                                                 "ci_high")},
                         "verdict": str(one["verdict"].values),
                         "verdict_scheme": str(one["verdict_scheme"].values)})
    columns = [*dims, "n_samples", "statistic", "estimate", "ci_low", "ci_high", "verdict",
               "verdict_scheme"]
    table = pd.DataFrame(rows, columns=columns)
    table["n_samples"] = table["n_samples"].astype("Int64")
    return table


def _number(value: float, digits: int) -> str:
    return "nan" if np.isnan(value) else f"{value:.{digits}g}"


def slices_table(result: xr.Dataset, *, digits: int = 4) -> str:
    """:func:`slices_summary` as plain text: one line per slice and statistic, the column
    ``M`` for ``n_samples`` and the verdict followed by its scheme, e.g. ``fail (SimN)``.

    Examples
    --------
    >>> import xuqcal
    >>> r = xuqcal.validate(xuqcal.synthetic.nig(300, nu=6, seed=1), ["zms"], n_boot=200,
    ...                     n_mc=100)
    >>> print(slices_table(r))
      M statistic estimate ci_low ci_high verdict
    300 zms              1  0.854   1.153 pass (BS)
    """
    table = slices_summary(result)
    dims = slice_dims(result)
    table["verdict"] = [v + (f" ({s})" if s else "")
                        for v, s in zip(table["verdict"], table["verdict_scheme"], strict=True)]
    table = table.drop(columns="verdict_scheme").rename(columns={"n_samples": "M"})
    text_columns = [*dims, "statistic", "verdict"]
    for name in text_columns:
        table[name] = table[name].astype(str)
    table["M"] = [("" if pd.isna(m) else str(m)) for m in table["M"]]
    for name in ("estimate", "ci_low", "ci_high"):
        table[name] = [_number(v, digits) for v in table[name]]
    widths = {name: max([len(name), *map(len, table[name])]) for name in table.columns}
    lines = []
    for row in [dict(zip(table.columns, table.columns, strict=True)),
                *table.to_dict("records")]:
        cells = [str(row[name]).ljust(widths[name]) if name in text_columns
                 else str(row[name]).rjust(widths[name]) for name in table.columns]
        lines.append(" ".join(cells).rstrip())
    return "\n".join(lines)
