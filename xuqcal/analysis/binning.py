"""Binning schemes (METHODS §3).

Every scheme returns a **bins Dataset**, a labelled description that can be saved to NetCDF and
applied to new data:

* over ``sample``: ``bin_index``, the bin of each point (in data order);
* over ``bin``: the variables ``count`` and ``upper_limit`` (the value limit used to assign
  new points, :func:`apply_bins`) and the coordinates ``bin_low`` and ``bin_high`` (range of
  the binning variable in the bin) and ``bin_centre`` (its mean, or the merged value of a
  stratum);
* attributes: ``scheme``, ``by``, ``n_bins`` (and ``n_bins_requested`` when a minimum count
  reduced it).

Equal-count bins sort the points by the binning variable with a **stable** sort (ties keep the
current row order, or are broken by an optional second variable); bin ``b`` covers the sorted
positions ``[floor(b M / N), floor((b + 1) M / N))``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import xarray as xr

from xuqcal.analysis.lazy import is_lazy, lazy_result, template
from xuqcal.analysis.slices import broadcast
from xuqcal.core import defaults
from xuqcal.core.binning import (  # noqa: F401 (re-exported: public API of binning)
    MIN_POINTS_PER_BIN,
    check_n_bins,
    equal_count_bounds,
    equal_count_order,
    recommended_n_bins,
    resolve_n_bins,
)
from xuqcal.core.checks import check_finite, variable_name
from xuqcal.core.statistics import Statistic, get_statistics
from xuqcal.io import by_role


def n_bins_for(ds: object, n_bins: int | None, *, default: int = defaults.N_BINS,
               statistics: Iterable[str | Statistic] | str | None = None) -> int | None:
    """The number of bins of a binned analysis of the data set ``ds``
    (:func:`xuqcal.core.binning.resolve_n_bins` with its number of points M).

    ``n_bins=None`` (the default of every binned analysis) gives the recommended number,
    :func:`~xuqcal.core.binning.recommended_n_bins` ``(M, default)``; a number given is kept,
    with a :class:`~xuqcal.core.binning.FewPointsPerBinWarning` when its bins hold fewer than
    ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points. An analysis lifted to extra dimensions by
    :func:`~xuqcal.analysis.slices.broadcast` calls it per slice, on the slice's present
    points: each slice gets its own number. Nothing is read from the data.

    Parameters
    ----------
    ds : xarray.Dataset
        The data set (anything else: ``default`` or ``n_bins`` is returned unchanged, and
        the analysis's own checks name the problem).
    n_bins : int or None
        The number of bins asked for, or ``None``.
    default : int
        The analysis's default number of bins, at most (``defaults.N_BINS`` or
        ``defaults.N_BINS_LOCAL``).
    statistics : str or iterable of str or Statistic, optional
        The statistics of the analysis: bins are used (and a number given is checked against
        the rule) only when one of them is binned (``ence``, ``uce``, ``zmse``). ``None``: a
        per-bin analysis, whose bins are always used.

    Returns
    -------
    int or None
        The number of bins to use.

    Examples
    --------
    >>> import xuqcal
    >>> small = xuqcal.synthetic.nig(265, nu=6, seed=0)
    >>> n_bins_for(small, None), n_bins_for(small, None, default=defaults.N_BINS_LOCAL)
    (13, 13)
    >>> n_bins_for(xuqcal.synthetic.nig(5000, nu=6, seed=0), None)
    20
    >>> n_bins_for(small, 20, statistics=["zms"])  # no binned statistic: no warning
    20
    """
    m = int(ds.sizes.get("sample", 0)) if isinstance(ds, xr.Dataset) else None
    if statistics is None:
        binned = True
    else:
        try:
            binned = any(s.needs_bins for s in get_statistics(statistics, coverage=True))
        except ValueError:  # the analysis's own check names the statistics
            binned = False
    return resolve_n_bins(m, n_bins, default, binned=binned)


def _check_min_count(min_count, m: int) -> int:
    if isinstance(min_count, bool) or not isinstance(min_count, int | np.integer) \
            or min_count < 1:
        raise ValueError(f"min_count: expected a positive integer, got {min_count!r}")
    if min_count > m:
        raise ValueError(f"min_count: min_count={min_count} is larger than the number of points "
                         f"({m})")
    return int(min_count)


def _values(values, name: str) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of values")
    if values.dtype.kind == "c":
        raise ValueError(f"{name}: expected real values, got {values.dtype}")
    if values.dtype.kind == "f":
        check_finite(values, name)
    return values


def _table(index: np.ndarray, values: np.ndarray, n_bins: int, *, centre=None, scheme: str,
           by: str, sample=None, upper_limit=None, attrs=None) -> xr.Dataset:
    """The bins Dataset from the bin index of every point."""
    count = np.bincount(index, minlength=n_bins)
    numeric = values.dtype.kind in "iufb"
    if numeric:
        low = np.full(n_bins, np.nan)
        high = np.full(n_bins, np.nan)
        order = np.argsort(index, kind="stable")
        starts = np.concatenate([[0], np.cumsum(count)])
        sorted_values = values[order].astype(np.float64)
        for b in range(n_bins):
            chunk = sorted_values[starts[b]:starts[b + 1]]
            if chunk.size:
                low[b], high[b] = chunk.min(), chunk.max()
        if centre is None:
            sums = np.bincount(index, weights=values.astype(np.float64), minlength=n_bins)
            with np.errstate(invalid="ignore"):
                centre = sums / count
    data = {
        "bin_index": ("sample", index.astype(np.int64), {"long_name": "bin of each point"}),
        "count": ("bin", count, {"long_name": "number of points in the bin"}),
    }
    coords = {"bin": np.arange(n_bins)}
    if numeric:
        coords["bin_low"] = ("bin", low, {"long_name": f"smallest {by} in the bin"})
        coords["bin_high"] = ("bin", high, {"long_name": f"largest {by} in the bin"})
        coords["bin_centre"] = ("bin", np.asarray(centre, dtype=np.float64),
                                {"long_name": f"mean {by} in the bin (merged value for strata)"})
    if upper_limit is not None:
        data["upper_limit"] = ("bin", np.asarray(upper_limit, dtype=np.float64), {
            "long_name": f"new points with {by} <= upper_limit (and above the previous limit) "
                         "go to this bin; the first and last bins are open-ended"})
    if sample is not None:
        coords["sample"] = np.asarray(sample)
    return xr.Dataset(data, coords=coords,
                      attrs={"scheme": scheme, "by": by, "n_bins": int(n_bins), **(attrs or {})})


def equal_count(values, n_bins: int, *, min_count: int | None = None, tiebreak=None,
                by: str = "x", sample=None) -> xr.Dataset:
    """Equal-count bins of a variable.

    Parameters
    ----------
    values : array-like
        The binning variable, one value per point.
    n_bins : int
        Number of bins N.
    min_count : int, optional
        Minimum number of points per bin: N is reduced to ``floor(M / min_count)`` when needed,
        and the result records ``n_bins_requested``.
    tiebreak : array-like, optional
        Second sorting variable for tied values (default: row order).
    by : str
        Name of the binning variable (for labels).
    sample : array-like, optional
        The ``sample`` coordinate to attach.

    Returns
    -------
    xarray.Dataset
        A bins Dataset (see the module documentation).

    Examples
    --------
    >>> bins = equal_count(np.array([5.0, 1.0, 4.0, 2.0, 3.0, 6.0]), 3)
    >>> bins.bin_index.values.tolist(), bins["count"].values.tolist()
    ([2, 0, 1, 0, 1, 2], [2, 2, 2])
    >>> bins.upper_limit.values.tolist()
    [2.0, 4.0, 6.0]
    """
    values = _values(values, by)
    m = values.shape[0]
    attrs = {}
    if min_count is not None:
        min_count = _check_min_count(min_count, m)
        if m // min_count < n_bins:
            attrs = {"n_bins_requested": int(n_bins), "min_count": min_count}
            n_bins = recommended_n_bins(m, n_bins, min_points=min_count)
    if min_count is None:
        check_n_bins(m, n_bins, variable=by)
    order = equal_count_order(values, tiebreak)
    bounds = equal_count_bounds(m, n_bins)
    index = np.empty(m, dtype=np.int64)
    index[order] = np.repeat(np.arange(n_bins), np.diff(bounds))
    sorted_values = values[order].astype(np.float64)
    upper = sorted_values[bounds[1:] - 1]
    return _table(index, values, n_bins, scheme="equal", by=by, sample=sample,
                  upper_limit=upper, attrs=attrs)


def harrell_davis(values, n_bins: int, *, min_count: int = defaults.POP_MIN_HD, tiebreak=None,
                  by: str = "x", sample=None) -> xr.Dataset:
    """Bins of a variable with Harrell–Davis break points (ErrViewLib's ``genIntervals``,
    P. Pernot): the points sorted by the variable (stable sort, as :func:`equal_count`) are
    cut at the Harrell–Davis quantiles of their positions
    (:func:`xuqcal.core.quantiles.harrell_davis_bounds`), after reducing N to
    ``floor(M / min_count)`` when ``M / N < min_count`` (ErrViewLib's ``popMin``, default
    ``defaults.POP_MIN_HD`` = 30; the result then records ``n_bins_requested``).

    Examples
    --------
    >>> bins = harrell_davis(np.arange(100.0), 20)
    >>> bins["count"].values.tolist(), bins.attrs["n_bins_requested"]
    ([33, 34, 33], 20)
    """
    from xuqcal.core.quantiles import harrell_davis_bounds

    values = _values(values, by)
    m = values.shape[0]
    min_count = _check_min_count(min_count, m)
    bounds = harrell_davis_bounds(m, n_bins, min_count)
    made = bounds.size - 1
    attrs = {"min_count": min_count}
    if made != n_bins:
        attrs["n_bins_requested"] = int(n_bins)
    order = equal_count_order(values, tiebreak)
    index = np.empty(m, dtype=np.int64)
    index[order] = np.repeat(np.arange(made), np.diff(bounds))
    upper = values[order].astype(np.float64)[bounds[1:] - 1]
    return _table(index, values, made, scheme="hd", by=by, sample=sample, upper_limit=upper,
                  attrs=attrs)


def strata(values, *, min_count: int = defaults.MIN_COUNT_STRATA, by: str = "x",
           sample=None) -> xr.Dataset:
    """Strata bins of a stratified variable (few distinct values), METHODS §3.

    Start with one bin per distinct value; while a stratum has fewer than ``min_count`` points,
    merge the first such stratum with its smaller neighbour (the only neighbour at either end;
    the right one on a tie). A merged stratum's value is the count-weighted mean of the merged
    values. The result does not depend on the order of the data.

    Examples
    --------
    >>> x = np.array([1.0] * 5 + [2.0] * 1 + [3.0] * 2 + [4.0] * 6)
    >>> bins = strata(x, min_count=3)
    >>> bins["count"].values.tolist(), bins.bin_centre.values.round(3).tolist()
    ([5, 3, 6], [1.0, 2.667, 4.0])
    """
    values = _values(values, by).astype(np.float64)
    m = values.shape[0]
    min_count = _check_min_count(min_count, m)
    distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    members = [[k] for k in range(distinct.size)]  # distinct values in each stratum
    counts = counts.tolist()
    centres = distinct.tolist()
    while len(counts) > 1:
        small = next((i for i, c in enumerate(counts) if c < min_count), None)
        if small is None:
            break
        if small == 0:
            other = 1
        elif small == len(counts) - 1:
            other = small - 1
        else:
            left, right = counts[small - 1], counts[small + 1]
            other = small + 1 if right <= left else small - 1
        a, b = sorted((small, other))
        total = counts[a] + counts[b]
        centres[a] = (counts[a] * centres[a] + counts[b] * centres[b]) / total
        counts[a] = total
        members[a] = members[a] + members[b]
        del counts[b], centres[b], members[b]
    stratum_of_value = np.empty(distinct.size, dtype=np.int64)
    for s, group in enumerate(members):
        stratum_of_value[group] = s
    index = stratum_of_value[inverse]
    upper = np.array([distinct[group[-1]] for group in members])
    return _table(index, values, len(counts), centre=np.array(centres), scheme="strata", by=by,
                  sample=sample, upper_limit=upper, attrs={"min_count": min_count})


def groups(labels, *, by: str = "group", sample=None) -> xr.Dataset:
    """One bin per distinct label of a categorical variable (labels sorted).

    Examples
    --------
    >>> bins = groups(np.array(["b", "a", "b", "c"]))
    >>> bins.label.values.tolist(), bins.bin_index.values.tolist()
    (['a', 'b', 'c'], [1, 0, 1, 2])
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"{by}: expected a non-empty 1-D array of labels")
    distinct, index = np.unique(labels, return_inverse=True)
    table = _table(index, labels, distinct.size, scheme="groups", by=by, sample=sample)
    return table.assign_coords(label=("bin", distinct))


def grid(values_x, values_y, n_bins_x: int, n_bins_y: int, *, by_x: str = "x",
         by_y: str = "y", min_count: int | None = None, sample=None) -> xr.Dataset:
    """2-D bins: equal-count bins of each variable, crossed (cell = ``bx * n_bins_y + by``).

    Cells can be empty (``count`` 0). The limits of each variable are kept as
    ``upper_limit_x`` (over ``bin_x``) and ``upper_limit_y`` (over ``bin_y``).

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 3.0, 4.0]); y = np.array([1.0, 1.5, 2.0, 2.5])
    >>> g = grid(x, y, 2, 2)
    >>> g.bin_index.values.tolist(), g["count"].values.tolist()
    ([0, 0, 3, 3], [2, 0, 0, 2])
    """
    bins_x = equal_count(values_x, n_bins_x, min_count=min_count, by=by_x)
    bins_y = equal_count(values_y, n_bins_y, min_count=min_count, by=by_y)
    nx, ny = bins_x.sizes["bin"], bins_y.sizes["bin"]
    index = bins_x.bin_index.values * ny + bins_y.bin_index.values
    table = _table(index, np.asarray(values_x, dtype=np.float64), nx * ny, scheme="grid",
                   by=f"{by_x},{by_y}", sample=sample)
    table = table.drop_vars(["bin_low", "bin_high", "bin_centre"])
    return table.assign(
        upper_limit_x=("bin_x", bins_x.upper_limit.values),
        upper_limit_y=("bin_y", bins_y.upper_limit.values),
        cell_x=("bin", np.repeat(np.arange(nx), ny)),
        cell_y=("bin", np.tile(np.arange(ny), nx)),
    ).assign_attrs(by_x=by_x, by_y=by_y, n_bins_x=nx, n_bins_y=ny)


def _assign_by_limits(upper_limit: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Bin of each value: the first bin whose upper limit is >= the value; the last bin
    takes everything above (the first and last bins are open-ended)."""
    edges = np.asarray(upper_limit, dtype=np.float64)[:-1]
    return np.searchsorted(edges, np.asarray(values, dtype=np.float64), side="left")


def apply_bins(bins: xr.Dataset, values, values_y=None) -> np.ndarray:
    """Assign new points to bins learned on another data set (by value limits).

    Every point gets exactly one bin, including values outside the learned range (the first
    and last bins are open-ended). Group bins map labels; an unknown label is an error.

    Examples
    --------
    >>> learned = equal_count(np.array([1.0, 2.0, 3.0, 4.0]), 2)
    >>> apply_bins(learned, [-5.0, 2.0, 2.5, 99.0]).tolist()
    [0, 0, 1, 1]
    """
    scheme = bins.attrs.get("scheme")
    if scheme == "groups":
        labels = np.asarray(values)
        known = {label: b for b, label in enumerate(bins.label.values.tolist())}
        unknown = sorted(set(labels.tolist()) - set(known))
        if unknown:
            raise ValueError(f"{bins.attrs['by']}: labels not seen when the bins were learned: "
                             f"{unknown[:5]}")
        return np.array([known[label] for label in labels.tolist()], dtype=np.int64)
    if scheme == "grid":
        if values_y is None:
            raise ValueError("apply_bins: a grid needs the values of both variables")
        bx = _assign_by_limits(bins.upper_limit_x.values, values)
        by_ = _assign_by_limits(bins.upper_limit_y.values, values_y)
        return bx * bins.sizes["bin_y"] + by_
    if "upper_limit" not in bins:
        raise ValueError(f"apply_bins: bins of scheme {scheme!r} have no value limits")
    return _assign_by_limits(bins.upper_limit.values, _values(values, bins.attrs["by"]))


def members(bin_index: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Points of every bin: ``(members, offsets)``, bin ``b`` holding
    ``members[offsets[b]:offsets[b + 1]]`` (in data order).

    Examples
    --------
    >>> m, o = members(np.array([1, 0, 1, 2]), 3)
    >>> m.tolist(), o.tolist()
    ([1, 0, 2, 3], [0, 1, 3, 4])
    """
    bin_index = np.asarray(bin_index, dtype=np.int64)
    order = np.argsort(bin_index, kind="stable")
    counts = np.bincount(bin_index, minlength=n_bins)
    return order, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _equal_layout(m: int, n_bins: int, min_count: int | None, by: str, sample,
                  scheme: str = "equal") -> xr.Dataset:
    """The layout of :func:`equal_count`'s bins, or of :func:`harrell_davis`'s
    (``scheme="hd"``): sizes known from ``m``, ``n_bins`` and ``min_count``."""
    attrs: dict = {"scheme": scheme, "by": by}
    if scheme == "hd":
        from xuqcal.core.quantiles import harrell_davis_bounds

        min_count = _check_min_count(min_count, m)
        made = harrell_davis_bounds(m, n_bins, min_count).size - 1
        attrs["min_count"] = min_count
        if made != n_bins:
            attrs["n_bins_requested"] = int(n_bins)
        n_bins, min_count = made, None
    elif min_count is not None:
        min_count = _check_min_count(min_count, m)
        if m // min_count < n_bins:
            attrs.update(n_bins_requested=int(n_bins), min_count=min_count)
            n_bins = recommended_n_bins(m, n_bins, min_points=min_count)
    attrs["n_bins"] = int(n_bins)
    if min_count is None and scheme == "equal":
        check_n_bins(m, n_bins, variable=by)
    coords = {"bin": np.arange(n_bins)}
    if sample is not None:
        coords["sample"] = np.asarray(sample)
    return template(
        {"bin_index": (("sample",), np.int64, {"long_name": "bin of each point"}),
         "count": (("bin",), np.int64, {"long_name": "number of points in the bin"}),
         "upper_limit": (("bin",), np.float64, {
             "long_name": f"new points with {by} <= upper_limit (and above the previous limit) "
                          "go to this bin; the first and last bins are open-ended"}),
         "bin_low": (("bin",), np.float64, {"long_name": f"smallest {by} in the bin"}),
         "bin_high": (("bin",), np.float64, {"long_name": f"largest {by} in the bin"}),
         "bin_centre": (("bin",), np.float64,
                        {"long_name": f"mean {by} in the bin (merged value for strata)"})},
        {"sample": m, "bin": n_bins}, coords, lazy_coords=("bin_low", "bin_high", "bin_centre"),
        attrs=attrs)


def _equal_body(data: xr.Dataset, *, name: str, tiebreak: str | None, n_bins: int,
                min_count: int | None, sample, scheme: str = "equal") -> xr.Dataset:
    tie = data[tiebreak].values if tiebreak is not None else None
    if scheme == "hd":
        return harrell_davis(data[name].values, n_bins, min_count=min_count, tiebreak=tie,
                             by=name, sample=sample)
    return equal_count(data[name].values, n_bins, min_count=min_count, tiebreak=tie, by=name,
                       sample=sample)


@broadcast
@by_role
def make_bins(ds: xr.Dataset, by: str | Sequence[str] = defaults.BY, *,
              n_bins: int | Sequence[int] = defaults.N_BINS, binning: str = "equal",
              min_count: int | None = None, tiebreak: str | None = None,
              uE: str = defaults.UE) -> xr.Dataset:
    """Bins of the variables of a data set by name (the accessor's ``bins``).

    ``binning`` is ``"equal"`` (equal-count), ``"hd"`` (Harrell–Davis break points,
    ErrViewLib's ``genIntervals``: :func:`harrell_davis`, ``min_count`` default
    ``defaults.POP_MIN_HD`` = 30), ``"strata"`` (``min_count`` default 100),
    ``"groups"`` (a categorical variable) or ``"grid"`` (``by`` names two variables, ``n_bins``
    an int or a pair). ``by="uE"`` stands for the uncertainty variable ``uE`` whatever its name.

    Equal-count bins of Dask-backed data are lazy (their sizes follow from ``n_bins``,
    ``min_count`` and the number of points); strata, group and grid bins compute the binning
    variables (the number of strata or groups depends on the values).

    Examples
    --------
    >>> import xuqcal
    >>> bins = make_bins(xuqcal.synthetic.nig(1000, nu=6, seed=0), "uE", n_bins=10)
    >>> int(bins["count"].sum()), bins.attrs["scheme"]
    (1000, 'equal')
    """
    if not isinstance(by, str) and not (isinstance(by, Sequence) and by
                                        and all(isinstance(b, str) for b in by)):
        raise ValueError(f"by: expected the name of a variable, or a list of names for grid "
                         f"binning, got {by!r}")
    by = [by] if isinstance(by, str) else list(by)
    by = [uE if b == "uE" else b for b in by]
    names = [variable_name(ds, name) for name in by]
    sample = ds["sample"].values if "sample" in ds.coords else None
    if binning == "grid":
        if len(names) != 2:
            raise ValueError("by: grid binning needs two variables, e.g. by=('uE', 'X1')")
        pair = (n_bins, n_bins) if isinstance(n_bins, int | np.integer) else n_bins
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"n_bins: grid binning needs an integer or a pair of integers "
                             f"(bins of {names[0]}, bins of {names[1]}), got {n_bins!r}")
        nx, ny = pair
        return grid(ds[names[0]].values, ds[names[1]].values, nx, ny, by_x=names[0],
                    by_y=names[1], min_count=min_count, sample=sample)
    if len(names) != 1:
        raise ValueError(f"by: {binning!r} binning takes one variable, got {names}")
    if binning in ("equal", "hd"):
        if binning == "hd" and min_count is None:
            min_count = defaults.POP_MIN_HD
        if tiebreak is not None and (not isinstance(tiebreak, str)
                                     or tiebreak not in ds.variables or tiebreak == "sample"):
            raise ValueError(f"tiebreak: the tie-breaking variable {tiebreak!r} is not in the "
                             f"dataset (variables: {', '.join(map(str, ds.data_vars))})")
        m = ds.sizes["sample"] if "sample" in ds.dims else ds[names[0]].size
        variables = [names[0]] + ([tiebreak] if tiebreak is not None else [])
        if is_lazy(ds, variables):
            return lazy_result(_equal_body, ds[variables],
                               _equal_layout(m, n_bins, min_count, names[0], sample, binning),
                               name=names[0], tiebreak=tiebreak, n_bins=n_bins,
                               min_count=min_count, sample=sample, scheme=binning)
        return _equal_body(ds[variables], name=names[0], tiebreak=tiebreak, n_bins=n_bins,
                           min_count=min_count, sample=sample, scheme=binning)
    values = ds[names[0]].values
    if binning == "strata":
        return strata(values, min_count=defaults.MIN_COUNT_STRATA if min_count is None
                      else min_count, by=names[0], sample=sample)
    if binning == "groups":
        return groups(values, by=names[0], sample=sample)
    raise ValueError(f"binning: unknown scheme {binning!r}; use 'equal', 'hd', 'strata', "
                     "'groups' or 'grid'")
