"""Running statistics of the z-scores along a sorted conditioning variable (METHODS §6).

The points are sorted by the conditioning variable (``uE`` for consistency, an input feature for
adaptivity) and the running mean of ``Z = E / uE`` and of ``Z²`` are computed over a centred
moving window, for the z-score scatter plots (:func:`xuqcal.plot.zscores`). A calibrated,
consistent (or adaptive) set has a running mean near 0 and a running mean square near 1 all
along the sorted variable.

**The default window** (:func:`default_window`) is ``M // 100`` points (METHODS §6: M/100,
``defaults.RUNNING_WINDOW_DIVISOR``), but never fewer than ``defaults.MIN_POINTS_PER_BIN_LOCAL``
(20) points, the least number of points per bin of the local analyses
(:mod:`xuqcal.core.binning`), nor more than M: ``min(M, max(M // 100, 20))``. Below
M = 2000 the window is 20 points; without that floor it was 2 points at M = 265 (a running
mean of two points is noise, not a trend). The report and :func:`xuqcal.plot.zscores` use
this default.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.analysis.lazy import analysis, template
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_sample_variables
from xuqcal.core import defaults
from xuqcal.core.checks import check_finite
from xuqcal.core.moving import trailing_mean
from xuqcal.core.provenance import provenance
from xuqcal.io import SAMPLE_DIM, by_role

__all__ = ["RANK_DIM", "default_window", "running_statistics"]

RANK_DIM = "rank"
"""Dimension of :func:`running_statistics`: the position in the sorted order."""

_OUTPUTS = ("Z", "running_mean", "running_mean_square")


def _check_count(value: object, name: str, low: int, high: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name}: expected an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if not low <= value <= high:
        raise ValueError(f"{name}: must be between {low} and {what}, got {value}")
    return value


def default_window(m: int) -> int:
    """The default window of :func:`running_statistics` for ``m`` points.

    ``min(m, max(m // defaults.RUNNING_WINDOW_DIVISOR, defaults.MIN_POINTS_PER_BIN_LOCAL))``:
    M/100 points (METHODS §6), but at least the 20 points per bin of the local analyses
    (:mod:`xuqcal.core.binning`) and at most M.

    Parameters
    ----------
    m : int
        Number of points M (at least 1).

    Returns
    -------
    int
        The window in points.

    Examples
    --------
    >>> default_window(265), default_window(2000), default_window(13_885), default_window(7)
    (20, 20, 138, 7)
    """
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
        raise ValueError(f"m: expected a positive number of points, got {m!r}")
    return int(min(m, max(m // defaults.RUNNING_WINDOW_DIVISOR,
                          defaults.MIN_POINTS_PER_BIN_LOCAL)))


def centred_move_mean(x: np.ndarray, window: int, min_count: int | None = None) -> np.ndarray:
    """Mean over a centred window of ``window`` points, with the running sums of
    :func:`numbagg.move_mean` (:func:`xuqcal.core.moving.trailing_mean`, the same values,
    compiled once per machine where numbagg compiles in every process).

    ``numbagg.move_mean`` is trailing: its value at position ``j`` averages ``x[j - window + 1
    : j + 1]``. Shifting it by ``(window - 1) // 2`` centres it: the value at position ``i``
    averages positions ``i - window // 2`` to ``i + (window - 1) // 2`` (for an even window, one
    point more before ``i`` than after, the convention of pandas' ``rolling(center=True)``).
    Near the ends, the window is cut to the existing points, and the value is NaN when fewer
    than ``min_count`` points remain (default ``window``: NaN unless the window is complete).

    Parameters
    ----------
    x : numpy.ndarray
        1-D values (NaN values are skipped and do not count towards ``min_count``).
    window : int
        Window length, ``1 <= window <= len(x)``.
    min_count : int, optional
        Minimum number of points for a value, ``1 <= min_count <= window``.

    Returns
    -------
    numpy.ndarray
        Same length as ``x``.

    Examples
    --------
    >>> centred_move_mean(np.arange(6.0), 3).tolist()
    [nan, 1.0, 2.0, 3.0, 4.0, nan]
    >>> centred_move_mean(np.arange(6.0), 3, min_count=1).tolist()
    [0.5, 1.0, 2.0, 3.0, 4.0, 4.5]
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x: expected 1-D values, got an array of shape {x.shape}")
    window = _check_count(window, "window", 1, x.size, f"the number of points ({x.size})")
    min_count = window if min_count is None else _check_count(
        min_count, "min_count", 1, window, f"the window ({window})")
    lead = (window - 1) // 2  # points after i inside its window
    padded = np.concatenate([x, np.full(lead, np.nan)])  # NaNs are skipped: a cut window
    out = np.empty_like(padded)
    trailing_mean(padded, window, min_count, out)
    return out[lead:]


@broadcast
@by_role
def running_statistics(
    ds: xr.Dataset, by: str = defaults.BY, window: int | None = None, *,
    min_count: int | None = None, E: str = defaults.E, uE: str = defaults.UE
) -> xr.Dataset:
    """Running mean of ``Z`` and of ``Z²`` along the points sorted by ``by`` (METHODS §6).

    The points are sorted by ``by`` with a stable sort (tied values keep their row order), and
    at each position of the sorted order the mean of ``Z = E / uE`` and of ``Z²`` over a centred
    window of ``window`` points is computed with :func:`numbagg.move_mean` (see
    :func:`centred_move_mean`): the window of position ``i`` covers positions
    ``i - window // 2`` to ``i + (window - 1) // 2`` (as pandas' ``rolling(center=True)``). At
    the ends of the sorted order the window is incomplete; there the values are NaN unless at
    least ``min_count`` points of the window exist (by default ``min_count = window``: values
    only where the window is complete, so the first ``window // 2`` and the last
    ``(window - 1) // 2`` values are NaN).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE`` (1-D).
    by : str
        The conditioning variable, a 1-D variable over ``sample`` (``uE`` or a feature;
        ``"uE"`` stands for the uncertainty variable ``uE`` whatever its name).
    window : int, optional
        Window length in points, ``1 <= window <= M``; default :func:`default_window` (M):
        ``min(M, max(M // 100, 20))`` (METHODS §6: M/100, but at least the 20 points per bin
        of the local analyses).
    min_count : int, optional
        Least number of points of a (cut) window giving a value, ``1 <= min_count <= window``;
        default ``window``. ``min_count=1`` averages whatever part of the window exists.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``rank`` (0 to M-1, the position in the sorted order), with the coordinate
        ``sample`` (row numbers of the sorted points) and the variables ``by`` (sorted values),
        ``Z``, ``running_mean`` and ``running_mean_square``; attributes ``by``, ``window``,
        ``min_count``. Lazy on Dask-backed data (the values are checked at compute time),
        computed otherwise.

    Raises
    ------
    ValueError
        For an unknown ``by`` (or one named like an output variable), a variable that is not
        1-D over ``sample``, non-finite values, or a window (or ``min_count``) out of range.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.from_arrays([1.0, -2.0, 3.0, 0.5, -1.0], [1.0, 2.0, 3.0, 0.5, 1.0])
    >>> r = running_statistics(ds, window=3)
    >>> r.sample.values.tolist()  # rows in the (stable) order of uE
    [3, 0, 4, 1, 2]
    >>> r.Z.values.tolist()
    [1.0, 1.0, -1.0, -1.0, 1.0]
    >>> r.running_mean.values.round(3).tolist()
    [nan, 0.333, -0.333, -0.333, nan]
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    if by == defaults.BY:
        by = uE
    if not isinstance(by, str) or by not in ds.variables or by == SAMPLE_DIM:
        available = [str(v) for v in ds.data_vars]
        raise ValueError(
            f"by: unknown variable {by!r}; available variables: {', '.join(available) or '(none)'}"
        )
    if by in _OUTPUTS:
        raise ValueError(
            f"by: the variable {by!r} has the name of an output variable ({', '.join(_OUTPUTS)});"
            " rename it"
        )
    names = list(dict.fromkeys((E, uE, by)))
    for name in names:  # argument checks first: names, dimensions, types (no data read)
        if not isinstance(name, str) or name not in ds.variables:
            raise ValueError(f"{name}: the dataset has no variable {name!r}")
    check_sample_variables(ds, names)
    m = ds.sizes[SAMPLE_DIM]
    if m == 0:
        raise ValueError(f"ds: the dataset has 0 rows along '{SAMPLE_DIM}'")
    if window is None:
        window = default_window(m)
    window = _check_count(window, "window", 1, m, f"the number of points M = {m}")
    min_count = window if min_count is None else _check_count(
        min_count, "min_count", 1, window, f"the window ({window})")
    rows = ds[SAMPLE_DIM].values if SAMPLE_DIM in ds.coords else np.arange(m)
    window_attrs = {"window": window, "min_count": min_count}
    f8 = np.float64
    layout = template(
        {by: ((RANK_DIM,), ds[by].dtype, dict(ds[by].attrs)),
         "Z": ((RANK_DIM,), f8, {"long_name": "z-score E / uE", "units": "1"}),
         "running_mean": ((RANK_DIM,), f8, {"long_name": "running mean of Z", "units": "1",
                                            **window_attrs}),
         "running_mean_square": ((RANK_DIM,), f8, {"long_name": "running mean of Z²",
                                                   "units": "1", **window_attrs}),
         SAMPLE_DIM: ((RANK_DIM,), np.asarray(rows).dtype,
                      {"long_name": "row number in the input"})},
        {RANK_DIM: m},
        {RANK_DIM: (RANK_DIM, np.arange(m, dtype=np.int64),
                    {"long_name": f"position in the stable sort order of {by}"})},
        lazy_coords=(SAMPLE_DIM,),
        attrs=provenance(
            by=by, window=window, min_count=min_count,
            window_position="centred: positions i - window // 2 to i + (window - 1) // 2",
            edges="NaN where fewer than min_count points of the window exist",
            method="numbagg.move_mean (trailing) shifted by (window - 1) // 2",
            n_samples=m, E=E, uE=uE))
    if SAMPLE_DIM not in ds.coords:
        ds = ds.assign_coords({SAMPLE_DIM: rows})
    return analysis(_running_body, ds, names, lambda: layout, by=by, window=window,
                    min_count=min_count, E=E, uE=uE)


def _running_body(ds: xr.Dataset, *, by: str, window: int, min_count: int, E: str, uE: str
                  ) -> xr.Dataset:
    """:func:`running_statistics` on NumPy-backed data (the checks of values run here)."""
    m = ds.sizes[SAMPLE_DIM]
    names = list(dict.fromkeys((E, uE, by)))
    values: dict[str, np.ndarray] = {}
    for name in names:
        data = np.asarray(ds[name].values)
        check_finite(data, name)
        values[name] = data
    if not np.all(values[uE] > 0):
        raise ValueError(f"uE: {int(np.sum(~(values[uE] > 0)))} of {m} values are not "
                         "positive")

    order = np.argsort(values[by], kind="stable")
    z = values[E].astype(np.float64)[order] / values[uE].astype(np.float64)[order]
    rows = np.asarray(ds[SAMPLE_DIM].values)[order]
    with np.errstate(over="ignore"):
        overflow = ~np.isfinite(z * z)
    if overflow.any():
        raise ValueError(f"E, uE: {int(overflow.sum())} of {m} z-scores E/uE overflow (|z| > "
                         f"1e154: z² is beyond the float64 range) (rows "
                         f"{', '.join(str(r) for r in rows[overflow][:5])})")
    mean = centred_move_mean(z, window, min_count)
    mean_square = centred_move_mean(z * z, window, min_count)
    return xr.Dataset(
        {by: (RANK_DIM, values[by][order]), "Z": (RANK_DIM, z),
         "running_mean": (RANK_DIM, mean), "running_mean_square": (RANK_DIM, mean_square)},
        coords={RANK_DIM: np.arange(m, dtype=np.int64), SAMPLE_DIM: (RANK_DIM, rows)},
    )
