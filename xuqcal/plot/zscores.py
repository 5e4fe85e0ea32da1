"""Figures of conditional calibration: z-scores along a variable with running statistics,
rank-correlation heatmap. Both take results with extra dimensions (``model``, ``task``, ...),
see :mod:`xuqcal.plot.facets`."""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.analysis.running import running_statistics as compute_running
from xuqcal.core import defaults
from xuqcal.io import by_role
from xuqcal.plot._common import log_axis, positive, require
from xuqcal.plot.facets import Panel, facet


@by_role
def zscores(ds: xr.Dataset, by: str = defaults.BY, window: int | None = None, *, ax=None,
            log_x: bool | None = None, min_count: int | None = None,
            col: str | None = None, row: str | None = None,
            sharex: bool | None = None, sharey: bool | None = None, E: str = defaults.E,
            uE: str = defaults.UE):
    """Z-scores against ``uE`` (consistency) or a feature (adaptivity), with running statistics.

    Draws ``Z = E / uE`` of every point against ``by`` (small grey points), the running mean and
    the running root mean square of ``Z`` over a centred window (METHODS §6;
    :func:`xuqcal.running_statistics`), reference lines at 0 and ±1 and, lightly, the
    band ±1.96 (95 % of a standard normal). A consistent (adaptive) set has its running mean
    near 0 and its running RMS near 1 all along ``by``. The figure is
    :func:`running_statistics` of the result of :func:`xuqcal.running_statistics`.

    Parameters
    ----------
    ds : xarray.Dataset
        Input with ``E``, ``uE`` and ``by``.
    by : str
        Variable along which to plot (``uE`` or a feature).
    window : int, optional
        Window of the running statistics in points; default
        :func:`xuqcal.analysis.running.default_window` (M) = ``min(M, max(M // 100, 20))``.
    ax : matplotlib Axes, optional
    log_x : bool, optional
        Logarithmic x-axis; default: when ``by`` is ``"uE"``.
    min_count : int, optional
        Least number of points of a window at the ends (see
        :func:`~xuqcal.running_statistics`); default the whole window.
    col, row : str, optional
        Extra dimensions laid out as a grid of panels (see :func:`running_statistics`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis; ``None`` (the default):
        shared unless the panels' sets differ (:func:`~xuqcal.plot.facets.share_axis`).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` with ``col`` / ``row``

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
    running = compute_running(ds, by=by, window=window, min_count=min_count, E=E, uE=uE)
    return running_statistics(running, ax=ax, log_x=log_x, col=col, row=row,
                              sharex=sharex, sharey=sharey)


def running_statistics(result: xr.Dataset, *, ax=None, log_x: bool | None = None,
                       col: str | None = None, row: str | None = None,
                       sharex: bool | None = None, sharey: bool | None = None):
    """Z-scores along the sorted variable with their running mean and running RMS, from a
    result of :func:`xuqcal.running_statistics` (the figure of :func:`zscores`).

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.running_statistics`, possibly with extra dimensions: one extra
        dimension without ``col`` / ``row`` draws each slice in its colour (points, running
        mean solid, running RMS dashed).
    ax : matplotlib Axes, optional
    log_x : bool, optional
        Logarithmic x-axis (tick labels spaced so that they never overlap); default: when the
        variable is the uncertainty ``uE``.
    col, row : str, optional
        Extra dimensions laid out as a grid of panels (:mod:`xuqcal.plot.facets`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis; ``None`` (the default):
        shared unless the panels' sets differ (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` with ``col`` / ``row``

    Raises
    ------
    ValueError
        For a log axis over values ``<= 0``, and as :func:`~xuqcal.plot.facets.facet`.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=0)
    >>> running_statistics(xuqcal.running_statistics(ds, by="E")).get_xlabel()
    'E'
    """
    require(result, ("Z", "running_mean", "running_mean_square"),
            "xuqcal.running_statistics")
    by = result.attrs["by"]
    if by not in result.variables:
        raise ValueError(f"result: expected the output of xuqcal.running_statistics, with the "
                         f"variable {by!r} it was sorted by (attribute 'by')")
    x_all = result[by].values
    if log_x is None:
        log_x = by == result.attrs.get("uE", defaults.UE)
    if log_x and not positive(x_all):
        raise ValueError(
            f"log_x: a logarithmic axis needs positive values of {by!r}, got a minimum of "
            f"{np.nanmin(x_all)}; pass log_x=False"
        )
    w = result.attrs["window"]

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        x = one[by].values
        if p.first:
            ax.axhspan(-1.96, 1.96, color="tab:green", alpha=0.08, lw=0, zorder=0,
                       label="±1.96 (95 % of N(0, 1))")
        ax.scatter(x, one["Z"].values, s=3, c=p.colour_or("0.55"),
                   alpha=0.3 if p.overlaid else 0.5, lw=0, rasterized=True, zorder=1,
                   label=None if p.overlaid else "Z")
        if p.first:
            ax.axhline(0.0, color="black", lw=0.8, zorder=2)
            for sign in (-1.0, 1.0):
                ax.axhline(sign, color="0.25", lw=0.8, ls="--", zorder=2,
                           label="±1" if sign > 0 else None)
        rms = np.sqrt(one["running_mean_square"].values)
        if p.overlaid:
            ax.plot(x, one["running_mean"].values, color=p.colour, lw=1.6, zorder=3,
                    label=p.data_label(None))
            ax.plot(x, rms, color=p.colour, lw=1.6, ls="--", zorder=3)
            if p.first:
                ax.plot([], [], color="0.3", lw=1.6, label=f"running mean of Z (window {w})")
                ax.plot([], [], color="0.3", lw=1.6, ls="--",
                        label=f"running RMS of Z (window {w}, dashed)")
        else:
            ax.plot(x, one["running_mean"].values, color="tab:blue", lw=1.6, zorder=3,
                    label=f"running mean of Z (window {w})")
            ax.plot(x, rms, color="tab:red", lw=1.6, zorder=3,
                    label=f"running RMS of Z (window {w})")
        if log_x:
            log_axis(ax, "x")
        ax.set_xlabel(by)
        ax.set_ylabel("Z = E / uE")
        p.title(ax, f"Z-scores along {by}", f"Z-scores along {by}")
        p.legend(ax, fontsize="small", markerscale=3, loc="upper left",
                 bbox_to_anchor=(1.01, 1.0))

    return facet(result, draw, core=("rank",), variables=("Z",), ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, lines=True)


def _matrix_dims(matrix: xr.DataArray) -> tuple:
    """The two dimensions of the correlation matrix itself (the others are extra)."""
    if "variable" in matrix.dims and "variable2" in matrix.dims:
        return "variable", "variable2"
    return tuple(matrix.dims[-2:]) if matrix.ndim == 2 else ()


def rank_correlation(matrix: xr.DataArray, *, ax=None, col: str | None = None,
                     row: str | None = None,
                     sharex: bool | None = None, sharey: bool | None = None):
    """Heatmap of a rank-correlation matrix, with the values written in the cells.

    Parameters
    ----------
    matrix : xarray.DataArray
        Square matrix over ``variable`` and ``variable2``, e.g. from
        :func:`xuqcal.features.rank_correlation`, possibly with extra dimensions
        (``model``, ...): one heatmap per slice, one extra dimension along the columns by
        default (``row=`` puts it along the rows), two with ``col=`` and ``row=``, and one
        colour bar.
    ax : matplotlib Axes, optional
        Where to draw a matrix without extra dimensions.
    col, row : str, optional
        Extra dimensions laid out as a grid of panels (:mod:`xuqcal.plot.facets`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis; ``None`` (the default):
        shared unless the panels' sets differ (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Raises
    ------
    ValueError
        If ``matrix`` is not a square matrix (over ``variable`` and ``variable2``, or 2-D), and
        as :func:`~xuqcal.plot.facets.facet`.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.features import rank_correlation as correlations
    >>> ds = xuqcal.synthetic.nig(500, nu=6, seed=0)
    >>> ax = rank_correlation(correlations(ds.assign(X=ds.uE ** 2)))
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['X', '|E|', 'uE']
    """
    core = _matrix_dims(matrix) if isinstance(matrix, xr.DataArray) else ()
    if not core or matrix.sizes[core[0]] != matrix.sizes[core[1]]:
        shape = getattr(matrix, "shape", None)
        raise ValueError(f"matrix: expected a square 2-D DataArray (over 'variable' and "
                         f"'variable2', with any extra dimensions), got shape {shape}")
    n = matrix.sizes[core[0]]
    label = matrix.attrs.get("long_name", "correlation")

    def draw(ax, indexers: dict, p: Panel):
        one = matrix.isel(indexers).transpose(*core)
        rows = [str(v) for v in one[core[0]].values] if core[0] in one.coords \
            else [str(i) for i in range(n)]
        cols = [str(v) for v in one[core[1]].values] if core[1] in one.coords \
            else [str(i) for i in range(n)]
        values = np.asarray(one.values, dtype=np.float64)
        image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu_r", vmin=-1.0, vmax=1.0,
                          label=label)
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                v = values[i, j]
                ax.text(j, i, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center",
                        fontsize="small", color="white" if abs(v) > 0.6 else "black")
        ax.set_xticks(np.arange(len(cols)), cols)
        ax.set_yticks(np.arange(len(rows)), rows)
        ax.tick_params(top=False, bottom=True)
        if p.plain:
            ax.figure.colorbar(image, ax=ax, label=label, shrink=0.9)
        p.title(ax, label, label)
        return image

    return facet(matrix, draw, core=core, name="matrix", ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, figsize=(1.0 + 0.9 * n, 0.9 * n + 0.6),
                 colorbar=True)
