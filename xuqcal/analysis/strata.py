"""Merging the small strata of a stratified variable (ErrViewLib's ``stratAgg``).

A stratified conditioning variable (few distinct values: a charge, a count of atoms, a rounded
uncertainty) gives one stratum per value; strata with too few points cannot be tested. Two
rules merge them, each merged stratum taking the count-weighted mean of the merged values:

- ``greedy=True`` (ErrViewLib's default): while a stratum has fewer than ``min_count`` points,
  merge the first such stratum (in increasing value) with its smaller neighbour (the only one
  at either end; the right one on a tie). This is the rule of the ``"strata"`` bins of
  :func:`xuqcal.make_bins` (:func:`xuqcal.analysis.binning.strata`), used here as it is.
- ``greedy=False``: merge runs of contiguous small strata only: the first small stratum
  followed by a small one absorbs all the small strata that follow it, and again until no
  two small strata are adjacent; an isolated small stratum is left as it is
  (:func:`merge_contiguous`).

:func:`merge_strata` adds the merged variable to the data set: pass its name as ``by=`` of
:func:`xuqcal.local` (``binning="groups"``: one bin per merged stratum) or of the other
analyses.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.analysis.binning import strata
from xuqcal.core import defaults
from xuqcal.core.checks import check_bool, check_count, check_finite, check_name
from xuqcal.core.provenance import provenance


def merge_contiguous(values: np.ndarray, min_count: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge runs of contiguous strata of fewer than ``min_count`` points (ErrViewLib's
    ``stratAgg(greedy = FALSE)``): ``(index, centres, counts)``, ``index`` the merged stratum
    of each point.

    Parameters
    ----------
    values : array of float
        The stratified variable (finite values).
    min_count : int
        The smallest number of points of a stratum left alone.

    Examples
    --------
    >>> x = np.array([1.0] * 5 + [2.0] + [3.0] * 2 + [4.0] * 6 + [5.0])
    >>> index, centres, counts = merge_contiguous(x, 3)
    >>> counts.tolist(), centres.round(3).tolist()  # 2 and 3 merged; 5 stays alone
    ([5, 3, 6, 1], [1.0, 2.667, 4.0, 5.0])
    """
    distinct, inverse, counts = np.unique(np.asarray(values, dtype=np.float64),
                                          return_inverse=True, return_counts=True)
    members = [[k] for k in range(distinct.size)]
    counts = counts.tolist()
    centres = distinct.tolist()
    while True:
        small = [c < min_count for c in counts]
        first = next((i for i in range(len(counts) - 1) if small[i] and small[i + 1]), None)
        if first is None:
            break
        j = first + 1
        while j < len(counts) and small[j]:
            total = counts[first] + counts[j]
            centres[first] = (counts[first] * centres[first] + counts[j] * centres[j]) / total
            counts[first] = total
            members[first] = members[first] + members[j]
            j += 1
        del counts[first + 1:j], centres[first + 1:j], members[first + 1:j]
    stratum_of_value = np.empty(distinct.size, dtype=np.int64)
    for s, group in enumerate(members):
        stratum_of_value[group] = s
    return stratum_of_value[inverse], np.array(centres), np.array(counts, dtype=np.int64)


def merge_strata(ds: xr.Dataset, by: str, *,
                 min_count: int = defaults.MIN_COUNT_MERGED_STRATA, greedy: bool = True,
                 name: str | None = None) -> xr.Dataset:
    """``ds`` with the variable ``by`` whose small strata are merged (ErrViewLib's
    ``stratAgg``; the rules in the module docstring).

    The values of ``by`` are read (the strata depend on them), also for Dask-backed data.

    Parameters
    ----------
    ds : xarray.Dataset
        Data over ``sample`` holding ``by``.
    by : str
        The stratified variable, over ``sample`` only, of finite real values.
    min_count : int
        Fewest points of a stratum (ErrViewLib's ``popMin``, default 50).
    greedy : bool
        The greedy rule (default) or the merging of contiguous small strata only.
    name : str, optional
        Name of the merged variable (default ``"<by>_merged"``).

    Returns
    -------
    xarray.Dataset
        ``ds`` with the variable ``name`` over ``sample`` (each point's merged stratum value,
        the count-weighted mean of the values merged), and over a new dimension
        ``<name>_stratum``: ``<name>_value`` and ``<name>_count`` (the merged strata, in
        increasing value).

    Raises
    ------
    ValueError
        For a missing or non-numeric ``by``, ``by`` with other dimensions than ``sample``,
        non-finite values (naming the rows), ``min_count`` < 1 or above the number of
        points, or a ``name`` already used.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.from_arrays(np.ones(14), np.ones(14))
    >>> ds = ds.assign(n=("sample", [1.0] * 5 + [2.0] + [3.0] * 2 + [4.0] * 6))
    >>> merged = merge_strata(ds, "n", min_count=3)
    >>> merged.n_merged_count.values.tolist(), np.unique(merged.n_merged.round(3)).tolist()
    ([5, 3, 6], [1.0, 2.667, 4.0])
    """
    check_name(by, "by")
    if not isinstance(ds, xr.Dataset):
        raise ValueError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    if by not in ds.data_vars:
        raise ValueError(f"by: the dataset has no variable {by!r} (data variables: "
                         f"{', '.join(map(str, ds.data_vars))})")
    if ds[by].dims != ("sample",):
        raise ValueError(f"by: the variable {by!r} must be over 'sample' only, it has the "
                         f"dimensions {ds[by].dims}")
    dtype = ds[by].dtype
    if np.issubdtype(dtype, np.bool_) or not np.issubdtype(dtype, np.number) or np.issubdtype(
            dtype, np.complexfloating):
        raise ValueError(f"by: the variable {by!r} is not real-valued (dtype {dtype}); "
                         "strata of labels are merged by their numeric codes only")
    min_count = check_count(min_count, "min_count", 1)
    if min_count > ds.sizes["sample"]:
        raise ValueError(f"min_count: min_count={min_count} is larger than the number of points "
                         f"({ds.sizes['sample']})")
    greedy = check_bool(greedy, "greedy")
    name = f"{by}_merged" if name is None else check_name(name, "name")
    taken = [n for n in (name, f"{name}_value", f"{name}_count", f"{name}_stratum")
             if n in ds.variables or n in ds.dims]
    if taken:
        raise ValueError(f"name: the dataset already has {', '.join(map(repr, taken))}; "
                         "choose another name")
    values = check_finite(ds[by].values, "by", of=by)
    if greedy:
        bins = strata(values, min_count=min_count, by=by)
        index = np.asarray(bins.bin_index.values)
        centres = np.asarray(bins.bin_centre.values, dtype=np.float64)
        counts = np.asarray(bins["count"].values, dtype=np.int64)
    else:
        index, centres, counts = merge_contiguous(values, min_count)
    stratum = f"{name}_stratum"
    attrs = provenance(long_name=f"{by}, strata of fewer than {min_count} points merged",
                       source=by, min_count=min_count,
                       rule="greedy" if greedy else "contiguous small strata",
                       method="ErrViewLib's stratAgg")
    return ds.assign({
        name: ("sample", centres[index], attrs),
        f"{name}_value": (stratum, centres, {"long_name": f"value of the merged {by} stratum"}),
        f"{name}_count": (stratum, counts, {"long_name": "points of the merged stratum"}),
    })
