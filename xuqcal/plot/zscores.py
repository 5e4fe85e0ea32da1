"""Figures of conditional calibration: z-scores along a variable, rank-correlation heatmap."""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.analysis.running import running_statistics
from xuqcal.core import defaults
from xuqcal.io import by_role
from xuqcal.plot._common import axes


@by_role
def zscores(ds: xr.Dataset, by: str = defaults.BY, window: int | None = None, *, ax=None,
            log_x: bool | None = None, min_count: int | None = None, E: str = defaults.E,
            uE: str = defaults.UE):
    """Z-scores against ``uE`` (consistency) or a feature (adaptivity), with running statistics.

    Draws ``Z = E / uE`` of every point against ``by`` (small grey points), the running mean and
    the running root mean square of ``Z`` over a centred window (METHODS §6;
    :func:`xuqcal.running_statistics`), reference lines at 0 and ±1 and, lightly, the
    band ±1.96 (95 % of a standard normal). A consistent (adaptive) set has its running mean
    near 0 and its running RMS near 1 all along ``by``.

    Parameters
    ----------
    ds : xarray.Dataset
        Input with ``E``, ``uE`` and ``by``.
    by : str
        Variable along which to plot (``uE`` or a feature).
    window : int, optional
        Window of the running statistics in points; default ``max(M // 100, 1)``.
    ax : matplotlib Axes, optional
    log_x : bool, optional
        Logarithmic x-axis; default: when ``by`` is ``"uE"``.
    min_count : int, optional
        Least number of points of a window at the ends (see
        :func:`~xuqcal.running_statistics`); default the whole window.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        As :func:`~xuqcal.running_statistics`, and for a log axis over values ``<= 0``.

    Examples
    --------
    >>> import xuqcal
    >>> ax = zscores(xuqcal.synthetic.nig(2000, nu=6, seed=0))
    >>> ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale()
    ('uE', 'Z = E / uE', 'log')
    """
    running = running_statistics(ds, by=by, window=window, min_count=min_count, E=E, uE=uE)
    by = running.attrs["by"]
    x = running[by].values
    if log_x is None:
        log_x = by == uE
    if log_x and not np.all(x > 0):
        raise ValueError(
            f"log_x: a logarithmic axis needs positive values of {by!r}, got a minimum of "
            f"{x.min()}; pass log_x=False"
        )
    ax = axes(ax)
    ax.axhspan(-1.96, 1.96, color="tab:green", alpha=0.08, lw=0, zorder=0,
               label="±1.96 (95 % of N(0, 1))")
    ax.scatter(x, running["Z"].values, s=3, c="0.55", alpha=0.5, lw=0, rasterized=True,
               zorder=1, label="Z")
    ax.axhline(0.0, color="black", lw=0.8, zorder=2)
    for sign in (-1.0, 1.0):
        ax.axhline(sign, color="0.25", lw=0.8, ls="--", zorder=2,
                   label="±1" if sign > 0 else None)
    w = running.attrs["window"]
    ax.plot(x, running["running_mean"].values, color="tab:blue", lw=1.6, zorder=3,
            label=f"running mean of Z (window {w})")
    ax.plot(x, np.sqrt(running["running_mean_square"].values), color="tab:red", lw=1.6,
            zorder=3, label=f"running RMS of Z (window {w})")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(by)
    ax.set_ylabel("Z = E / uE")
    ax.set_title(f"Z-scores along {by}")
    ax.legend(fontsize="small", markerscale=3, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def rank_correlation(matrix: xr.DataArray, *, ax=None):
    """Heatmap of a rank-correlation matrix, with the values written in the cells.

    Parameters
    ----------
    matrix : xarray.DataArray
        Square matrix over ``variable`` and ``variable2``, e.g. from
        :func:`xuqcal.features.rank_correlation`.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        If ``matrix`` is not a 2-D square matrix.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.features import rank_correlation as correlations
    >>> ds = xuqcal.synthetic.nig(500, nu=6, seed=0)
    >>> ax = rank_correlation(correlations(ds.assign(X=ds.uE ** 2)))
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['X', '|E|', 'uE']
    """
    if not isinstance(matrix, xr.DataArray) or matrix.ndim != 2 \
            or matrix.shape[0] != matrix.shape[1]:
        shape = getattr(matrix, "shape", None)
        raise ValueError(f"matrix: expected a square 2-D DataArray, got shape {shape}")
    rows = [str(v) for v in matrix[matrix.dims[0]].values] if matrix.dims[0] in matrix.coords \
        else [str(i) for i in range(matrix.shape[0])]
    cols = [str(v) for v in matrix[matrix.dims[1]].values] if matrix.dims[1] in matrix.coords \
        else [str(i) for i in range(matrix.shape[1])]
    values = np.asarray(matrix.values, dtype=np.float64)
    ax = axes(ax, figsize=(1.0 + 0.9 * len(cols), 0.9 * len(rows) + 0.6))
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu_r", vmin=-1.0, vmax=1.0)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values[i, j]
            ax.text(j, i, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center",
                    fontsize="small", color="white" if abs(v) > 0.6 else "black")
    ax.set_xticks(np.arange(len(cols)), cols)
    ax.set_yticks(np.arange(len(rows)), rows)
    ax.tick_params(top=False, bottom=True)
    label = matrix.attrs.get("long_name", "correlation")
    ax.figure.colorbar(image, ax=ax, label=label, shrink=0.9)
    ax.set_title(label)
    return ax
