"""Figures of the studies of :mod:`xuqcal.studies`: validation probability, sensitivity to the
generator, size/bins cube and zero-bins extrapolation. Each function draws on ``ax`` (or a new
figure) and returns the Axes; a result with extra dimensions is drawn as a grid of panels
(``col=`` / ``row=``), or for the zero-bins extrapolation as one line per slice (see
:mod:`xuqcal.plot.facets`)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import xarray as xr

from xuqcal.plot._common import LINESTYLES, MARKERS, error_bars, require, series_colour
from xuqcal.plot.facets import Panel, facet

_LABELS = {"zm": "<Z>", "zms": "ZMS", "zv": "Var(Z)", "rce": "RCE", "nll": "NLL", "cc": "CC",
           "ence": "ENCE", "uce": "UCE", "zmse": "ZMSE"}
X_LABEL = "sqrt(N / M)"


def _label(key: str) -> str:
    return _LABELS.get(str(key), str(key))


def _check_statistic(result: xr.Dataset, statistic: str) -> str:
    keys = [str(k) for k in result["statistic"].values]
    if statistic not in keys:
        raise ValueError(f"statistic: {statistic!r} is not in the result ({', '.join(keys)})")
    return statistic


def validation_probability(result: xr.Dataset, statistic: str | Iterable[str] | None = None,
                           ax=None, *, col: str | None = None, row: str | None = None,
                           sharex: bool | None = None, sharey: bool | None = None):
    """Validation probability ``p_val`` against ν with its Wilson-cc band, per size and
    statistic, and the nominal level.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.studies.validation_probability`.
    statistic : str or iterable of str, optional
        The statistics to draw (default: all).
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions of ``result`` laid out as a grid of panels; one extra dimension goes
        along the columns by default (:mod:`xuqcal.plot.facets`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis; ``None`` (the default):
        shared unless the panels' sets differ (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> from xuqcal.studies.simulation import validation_probability as study
    >>> ax = validation_probability(study([3, 6], size=[500], n_mc=10, n_boot=100))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('ν', 'p_val')
    """
    require(result, ("p_val", "statistic", "nu", "size"), "xuqcal.studies.validation_probability")
    if statistic is None:
        chosen = [str(k) for k in result["statistic"].values]
    else:
        chosen = [_check_statistic(result, key)
                  for key in ([statistic] if isinstance(statistic, str) else statistic)]
    level = float(result.attrs.get("level", 0.95))

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        nu = one["nu"].values
        sizes = one["size"].values
        for i, key in enumerate(chosen):
            colour = series_colour(i)
            for j, m in enumerate(sizes):
                cell = one.sel(statistic=key, size=m)
                ax.fill_between(nu, cell["p_val_low"].values, cell["p_val_high"].values,
                                color=colour, alpha=0.15, lw=0)
                ax.plot(nu, cell["p_val"].values, color=colour,
                        ls=LINESTYLES[j % len(LINESTYLES)],
                        marker=MARKERS[j % len(MARKERS)], ms=4,
                        label=f"{_label(key)}, M = {int(m)}")
        ax.axhline(level, color="black", ls="--", lw=1, label=f"{level:g}")
        ax.set_xlabel("ν")
        ax.set_ylabel("p_val")
        title = (f"Validation probability of BCa intervals on NIG data "
                 f"(n_mc = {one.attrs.get('n_mc', '?')}, Wilson-cc bands)")
        p.title(ax, title, title)
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("statistic", "nu", "size"), variables=("p_val",), ax=ax,
                 col=col, row=row, sharex=sharex, sharey=sharey)


def generator_sensitivity_study(result: xr.Dataset, statistic: str = "ence", ax=None, *,
                                col: str | None = None, row: str | None = None,
                                sharex: bool | None = None, sharey: bool | None = None):
    """Simulated mean ± 2 se of a statistic against ν of the t(ν) generator for each data set,
    with the normal generator's value (ν = inf) as a horizontal line and band.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.studies.generator_sensitivity_study`.
    statistic : str
        The statistic to draw.
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions of ``result`` laid out as a grid of panels; one extra dimension goes
        along the columns by default (:mod:`xuqcal.plot.facets`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis; ``None`` (the default):
        shared unless the panels' sets differ (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.studies.simulation import generator_sensitivity_study as study
    >>> r = study(xuqcal.synthetic.nig(800, nu=6, seed=1), nu=[3, 6], statistics=["ence"],
    ...           n_bins=10, n_mc=50)
    >>> generator_sensitivity_study(r).get_xlabel()
    'ν of the t(ν) generator'
    """
    require(result, ("mean", "se", "statistic", "nu"), "xuqcal.studies.generator_sensitivity_study")
    _check_statistic(result, statistic)
    n_bins = result.attrs.get("n_bins")

    def draw(ax, indexers: dict, p: Panel) -> None:
        sel = result.isel(indexers).sel(statistic=statistic)
        finite = np.isfinite(sel["nu"].values)
        nu = sel["nu"].values[finite]
        for i, name in enumerate(sel["dataset"].values):
            colour = series_colour(i)
            one = sel.sel(dataset=name)
            mean = one["mean"].values
            se = one["se"].values
            ax.errorbar(nu, mean[finite], yerr=2 * se[finite], fmt="o-", ms=4, color=colour,
                        capsize=3, label=f"{name}: t(ν)")
            if (~finite).any():
                normal_mean = float(mean[~finite][0])
                normal_se = float(se[~finite][0])
                ax.axhspan(normal_mean - 2 * normal_se, normal_mean + 2 * normal_se,
                           color=colour, alpha=0.15, lw=0)
                ax.axhline(normal_mean, color=colour, ls="--", lw=1, label=f"{name}: normal")
        ax.set_xlabel("ν of the t(ν) generator")
        ax.set_ylabel(f"simulated {_label(statistic)}")
        title = (f"Simulated {_label(statistic)} (mean ± 2 se) against the generator"
                 + (f", {n_bins} bins" if n_bins else ""))
        p.title(ax, title, title)
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("statistic", "nu", "dataset"), variables=("mean",), ax=ax,
                 col=col, row=row, sharex=sharex, sharey=sharey)


def size_bins_study(result: xr.Dataset, statistic: str = "ence", ax=None, *,
                    col: str | None = None, row: str | None = None,
                    sharex: bool | None = None, sharey: bool | None = None):
    """Cell means of the size/bins cube against ``sqrt(N / M)`` per generator (all sizes, bins
    and ν), with the fitted lines ``a + α sqrt(N / M)``.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.studies.size_bins_study`.
    statistic : str
        The statistic to draw.
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions of ``result`` laid out as a grid of panels; one extra dimension goes
        along the columns by default (:mod:`xuqcal.plot.facets`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis; ``None`` (the default):
        shared unless the panels' sets differ (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> from xuqcal.studies.simulation import size_bins_study as study
    >>> r = study(["ence"], size=[400, 1600], n_bins=[4, 16], nu=[6], n_mc=50)
    >>> size_bins_study(r).get_xlabel()
    'sqrt(N / M)'
    """
    require(result, ("mean", "fit_a", "fit_alpha", "statistic"), "xuqcal.studies.size_bins_study")
    _check_statistic(result, statistic)

    def draw(ax, indexers: dict, p: Panel) -> None:
        sel = result.isel(indexers).sel(statistic=statistic)
        x = np.sqrt(sel["n_bins"] / sel["size"])
        for i, gen in enumerate(sel["generator"].values):
            colour = series_colour(i)
            cell = sel.sel(generator=gen)
            xs = x.broadcast_like(cell["mean"]).values.ravel()
            ax.errorbar(xs, cell["mean"].values.ravel(), yerr=2 * cell["se"].values.ravel(),
                        fmt=MARKERS[i % len(MARKERS)], ms=3, color=colour, alpha=0.6,
                        elinewidth=0.6, label=f"{gen}: cells (mean ± 2 se)")
            if "fit_a" in cell:
                a, alpha = float(cell["fit_a"]), float(cell["fit_alpha"])
                line = np.linspace(0.0, float(np.nanmax(xs)) * 1.05, 50)
                ax.plot(line, a + alpha * line, color=colour, lw=1.2,
                        label=f"{gen}: a = {a:.3f}, α = {alpha:.3f}" if p.plain else f"{gen}: fit")
        ax.set_xlim(left=0.0)
        ax.set_xlabel(X_LABEL)
        ax.set_ylabel(f"simulated {_label(statistic)}")
        title = (f"Size and bin dependence of simulated {_label(statistic)} "
                 f"(n_mc = {result.attrs.get('n_mc', '?')})")
        p.title(ax, title, title)
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("size", "n_bins", "nu", "generator", "statistic"),
                 variables=("mean",), ax=ax, col=col, row=row, sharex=sharex, sharey=sharey)


def zero_bins_extrapolation(result: xr.Dataset, statistic: str = "ence", ax=None, *,
                            col: str | None = None, row: str | None = None,
                            sharex: bool | None = None, sharey: bool | None = None):
    """Values of a binned statistic against ``sqrt(N / M)``, the fitted line extended to zero
    bins, and the intercept with its interval.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.studies.zero_bins_extrapolation`, possibly with extra
        dimensions: one extra dimension without ``col`` / ``row`` draws the points, line and
        intercept of each slice in its colour (an interval missing 0 has a red edge).
    statistic : str
        The statistic to draw.
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions laid out as a grid of panels (:mod:`xuqcal.plot.facets`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis; ``None`` (the default):
        shared unless the panels' sets differ (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` with ``col`` / ``row``

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.studies.simulation import zero_bins_extrapolation as study
    >>> ax = zero_bins_extrapolation(study(xuqcal.synthetic.nig(3000, nu=6, seed=0)))
    >>> ax.get_xlabel()
    'sqrt(N / M)'
    """
    require(result, ("value", "intercept", "slope", "statistic"),
            "xuqcal.studies.zero_bins_extrapolation")
    _check_statistic(result, statistic)
    level = float(result.attrs.get("level", 0.95))
    x_max = float(np.nanmax(result["x"].values))

    def draw(ax, indexers: dict, p: Panel) -> None:
        sel = result.isel(indexers).sel(statistic=statistic)
        x = sel["x"].values
        value = sel["value"].values
        in_fit = sel["in_fit"].values.astype(bool)
        colour = p.colour_or("tab:blue")
        ax.plot(x[in_fit], value[in_fit], "o", color=colour,
                label=None if p.overlaid else "in the fit")
        if (~in_fit).any():
            ax.plot(x[~in_fit], value[~in_fit], "o", mfc="none", color=colour,
                    label=p.once("not in the fit (open)") if p.overlaid else "not in the fit")
        a, b = float(sel["intercept"]), float(sel["slope"])
        low, high = float(sel["intercept_low"]), float(sel["intercept_high"])
        valid = bool(sel["valid"])
        detail = f"intercept {a:.3g} [{low:.3g}, {high:.3g}] ({100 * level:g} %)"
        line = np.linspace(0.0, float(np.nanmax(x)) * 1.05, 50)
        ax.plot(line, a + b * line, color=colour, lw=1,
                label=p.data_label("least-squares line", detail))
        if p.overlaid:
            shift = (p.index - (p.count - 1) / 2) * 0.012 * x_max
            ax.errorbar([shift], [a], yerr=error_bars([a], [low], [high]), fmt="s",
                        color=colour, mec=colour if valid else "crimson", capsize=4)
        else:
            ax.errorbar([0.0], [a], yerr=error_bars([a], [low], [high]), fmt="s",
                        color="black" if valid else "crimson", capsize=4,
                        label=detail if p.plain else f"intercept ({100 * level:g} %)")
        if p.first:
            ax.axhline(0.0, color="0.5", lw=0.8)
        ax.set_xlim(left=-0.02 * x_max * (2 if p.overlaid else 1))
        ax.set_xlabel(X_LABEL)
        ax.set_ylabel(_label(statistic))
        verdict = ("valid: the interval contains 0" if valid
                   else "invalid: 0 is outside the interval")
        general = f"{_label(statistic)} extrapolated to zero bins"
        p.title(ax, f"{general} ({verdict})", general, f"{detail}, {verdict.split(':')[0]}")
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("n_bins", "statistic"), variables=("value",), ax=ax,
                 col=col, row=row, sharex=sharex, sharey=sharey, lines=True)
