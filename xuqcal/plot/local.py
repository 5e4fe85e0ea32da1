"""Figures of the local analyses: per-bin statistics, fraction of valid bins, ACF, reliability
diagram, data-order sensitivity and adversarial groups.

Each function takes a result with or without extra dimensions (``model``, ``task``, ...):
see :mod:`xuqcal.plot.facets` for ``col=`` / ``row=`` and the lines per slice."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from xuqcal.core.statistics import STATISTICS
from xuqcal.plot._common import (
    bins_by_validity,
    error_bars,
    fraction_valid_detail,
    log_axis,
    positive,
    require,
)
from xuqcal.plot.facets import Panel, facet, slice_value

_LABELS = {"zm": "<Z>", "zms": "<Z²>", "zv": "Var(Z)", "rce": "RCE", "zisd": "1 / SD(Z)"}

#: Statistics drawn on a log axis by default: ratios to a target of 1 (``zms``, ``zv``) and
#: mean squares (``mse``, ``mv``), for which over- and underestimation by a factor look alike.
LOG_STATISTICS = frozenset(s.key for s in STATISTICS.values()
                           if s.reference == 1.0 or s.unit_power == 2)

#: The dimensions of a local result (:func:`xuqcal.local`); any other is an extra dimension.
LOCAL_DIMS = ("bin", "lag")

#: Colour of the bins greyed out by the heavy-tail screening (ErrViewLib's ``skewup``).
HEAVY_TAIL_COLOUR = "0.7"


def _threshold(value) -> float | None:
    """A heavy-tail threshold attribute as a number (None for "none" or absent)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def heavy_tail_label(result: xr.Dataset) -> str:
    """Legend entry of the bins greyed out by the heavy-tail screening of a local analysis, a
    reliability diagram or a local coverage (from the thresholds in its attributes).

    Examples
    --------
    >>> heavy_tail_label(xr.Dataset(attrs={"heavy_tail_threshold": 0.8}))
    'β_GM(Z²) > 0.8 (not testable)'
    >>> heavy_tail_label(xr.Dataset(attrs={"heavy_tail_threshold_uE2": 0.6,
    ...                                    "heavy_tail_threshold_E2": 0.8}))
    'β_GM(uE²) > 0.6 or β_GM(E²) > 0.8 (not testable)'
    """
    parts = [f"β_GM({what}) > {t:g}" for what, t in (
        ("Z²", _threshold(result.attrs.get("heavy_tail_threshold"))),
        ("uE²", _threshold(result.attrs.get("heavy_tail_threshold_uE2"))),
        ("E²", _threshold(result.attrs.get("heavy_tail_threshold_E2")))) if t is not None]
    return f"{' or '.join(parts) or 'heavy tails'} (not testable)"


def heavy_tail_mask(one: xr.Dataset) -> np.ndarray:
    """The ``heavy_tail`` flags of one slice of a result (all ``False`` for a result without
    them, such as one saved by an earlier version)."""
    if "heavy_tail" not in one.variables:
        return np.zeros(one.sizes["bin"], dtype=bool)
    return np.asarray(one["heavy_tail"].values, dtype=bool)


def bins_with_screening(ax, p: Panel, x, value, yerr, valid, heavy, heavy_label: str,
                        detail: str = "", **style) -> None:
    """Per-bin values with error bars as :func:`~xuqcal.plot._common.bins_by_validity`
    draws them, except the bins flagged ``heavy`` (robust skewness above its threshold),
    which are greyed out (grey markers and error bars, legend entry ``heavy_label`` once per
    Axes; overlaid slices keep their colour on the marker edge), as ErrViewLib's ``skewup``
    does.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from xuqcal.plot.facets import Panel
    >>> ax = plt.figure().add_subplot()
    >>> x = np.arange(3.0); y = np.array([1.0, 1.1, 3.0]); e = np.full((2, 3), 0.2)
    >>> bins_with_screening(ax, Panel(), x, y, e, np.array([True, True, False]),
    ...                     np.array([False, False, True]), "β_GM(Z²) > 0.8 (not testable)")
    >>> ax.get_legend_handles_labels()[1]
    ['valid bin', 'β_GM(Z²) > 0.8 (not testable)']
    """
    x, value = np.asarray(x), np.asarray(value)
    yerr, valid, heavy = np.asarray(yerr), np.asarray(valid, bool), np.asarray(heavy, bool)
    kept = ~heavy
    if kept.any():
        bins_by_validity(ax, p, x[kept], value[kept], yerr[:, kept], valid[kept], detail,
                         **style)
    elif p.overlaid:  # the slice's legend entry all the same
        ax.plot([], [], "o", color=p.colour, label=p.data_label(None, detail))
    if heavy.any():
        known = heavy_label in ax.get_legend_handles_labels()[1]
        edge = {"mec": p.colour} if p.overlaid else {}  # the slice stays recognisable
        ax.errorbar(x[heavy], value[heavy], yerr=yerr[:, heavy], color=HEAVY_TAIL_COLOUR,
                    label=None if known else heavy_label, **edge, **style)


def local(result: xr.Dataset, *, ax=None, log_x: bool | None = None, log: bool | None = None,
          col: str | None = None, row: str | None = None,
          sharex: bool | None = None, sharey: bool | None = None):
    """Per-bin values with their intervals against the target; invalid bins in red, bins
    flagged ``heavy_tail`` (β_GM(Z²) above the threshold of an LZMS analysis: not testable)
    greyed out.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.local`, possibly with extra dimensions (``model``, ...): one
        extra dimension without ``col`` / ``row`` is drawn as one series per slice (invalid
        bins as open markers, each slice's whole-set value dashed).
    ax : matplotlib Axes, optional
    log_x : bool, optional
        Logarithmic x axis (default: when binned on ``uE``).
    log : bool, optional
        Logarithmic y axis; default: for the ratio and mean-square statistics of
        :data:`LOG_STATISTICS` (``zms``, ``zv``) when all values are positive.
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
        For ``log=True`` with values ``<= 0``, and as :func:`~xuqcal.plot.facets.facet`.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.local import local as lzms
    >>> ax = local(lzms(xuqcal.synthetic.nig(2000, nu=6, seed=0), n_bins=10, n_boot=200))
    >>> ax.get_ylabel(), ax.get_yscale()
    ('<Z²>', 'log')
    """
    require(result, ("value", "ci_low", "ci_high", "valid", "bin_centre", "fraction_valid",
                     "global_value"),
            "xuqcal.local")
    statistic = result.attrs["statistic"]
    by = result.attrs["by"]
    name = _LABELS.get(statistic, statistic)
    if log_x is None:
        log_x = by == result.attrs.get("uE", "uE")
    if log is None:
        log = statistic in LOG_STATISTICS and positive(result.value, result.ci_low,
                                                       result.global_value)
    elif log and not positive(result.value):
        raise ValueError(f"log: a logarithmic axis needs positive values of {statistic}, got a "
                         f"minimum of {float(result.value.min())}; pass log=False")
    heavy = heavy_tail_label(result)

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        x = one.bin_centre.values
        value = one.value.values
        glob = one.global_value.item()
        detail = fraction_valid_detail(one)
        yerr = error_bars(value, one.ci_low.values, one.ci_high.values)
        bins_with_screening(ax, p, x, value, yerr, one.valid.values.astype(bool),
                            heavy_tail_mask(one), heavy, detail, fmt="o", ms=3, elinewidth=0.8)
        if p.overlaid:
            ax.axhline(glob, color=p.colour, ls="--", lw=1)
            if p.first:
                ax.axhline(slice_value(one, "target"), color="black", lw=1, label="target")
                ax.plot([], [], "o", ms=3, mfc="none", color="0.3", label="invalid bin (open)")
                ax.plot([], [], ls="--", lw=1, color="0.3", label="whole data set (dashed)")
        else:
            ax.axhline(slice_value(one, "target"), color="black", lw=1, label="target")
            ax.axhline(glob, color="0.4", ls="--", lw=1,
                       label=f"whole data set ({glob:.3g})" if p.plain else "whole data set")
        if log_x:
            log_axis(ax, "x")
        if log:
            log_axis(ax, "y")
        ax.set_xlabel(f"{by} (bin centre)")
        ax.set_ylabel(name)
        general = f"{name} per bin of {by}"
        p.title(ax, f"{general}: {detail}", general, detail)
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=LOCAL_DIMS, variables=("value",), ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, lines=True)


def fraction_valid(results: xr.Dataset | Mapping[str, xr.Dataset], *, ax=None,
                   col: str | None = None, row: str | None = None,
                   sharex: bool | None = None, sharey: bool | None = None):
    """Fractions of valid bins with their Wilson-cc intervals against 0.95, for one or several
    local analyses (a mapping label -> result, e.g. one per conditioning variable).

    Results with an extra dimension (the same for all) draw one marker series per slice,
    side by side; ``col`` / ``row`` lay extra dimensions out as a grid
    (:mod:`xuqcal.plot.facets`).

    ``sharex`` / ``sharey``: whether the panels share their axes; ``None`` (the default)
    shares them unless the panels' sets differ in size or range
    (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` with ``col`` / ``row``

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.local import local as lzms
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=0)
    >>> ax = fraction_valid({"uE": lzms(ds, n_bins=10, n_boot=200), "E": lzms(ds, by="E", n_bins=10,
    ...                     n_boot=200)})
    >>> ax.get_ylabel()
    'fraction of valid bins'
    """
    variables = ("fraction_valid", "fraction_valid_low", "fraction_valid_high")
    if isinstance(results, xr.Dataset):
        results = {f"{results.attrs.get('statistic', '?')} | {results.attrs.get('by', '?')}":
                   results}
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results: expected the output of xuqcal.local or a non-empty "
                         f"mapping label -> output, got {type(results).__name__}")
    for r in results.values():
        require(r, variables, "xuqcal.local", name="results")
    labels = [str(k) for k in results]
    table = xr.concat([r[list(variables)].reset_coords(drop=True) for r in results.values()],
                      dim="analysis", join="outer")

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = table.isel(indexers)
        fv = one.fraction_valid.values
        shift = (p.index - (p.count - 1) / 2) * min(0.6 / p.count, 0.15)
        ax.errorbar(np.arange(len(labels)) + shift, fv,
                    yerr=error_bars(fv, one.fraction_valid_low.values,
                                    one.fraction_valid_high.values),
                    fmt="o", color=p.colour_or("tab:blue"), capsize=4, label=p.data_label(None))
        if p.first:
            ax.axhline(0.95, color="black", ls="--", lw=1, label="0.95")
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.set_xlabel("analysis")
        ax.set_ylabel("fraction of valid bins")
        title = "Fraction of valid bins (Wilson-cc 95 % intervals)"
        p.title(ax, title, title)
        p.legend(ax, fontsize="small")

    return facet(table, draw, core=("analysis",), name="results", ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, lines=True, figsize=(6, 4))


def acf(result: xr.Dataset, *, ax=None, col: str | None = None, row: str | None = None,
        sharex: bool | None = None, sharey: bool | None = None):
    """Autocorrelation of the per-bin values with the white-noise band ±1.96/√N.

    An extra dimension of ``result`` gives one panel per slice (along the columns by default;
    ``col`` / ``row``: :mod:`xuqcal.plot.facets`).

    ``sharex`` / ``sharey``: whether the panels share their axes; ``None`` (the default)
    shares them unless the panels' sets differ in size or range
    (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.local import local as lzms
    >>> acf(lzms(xuqcal.synthetic.nig(2000, nu=6, seed=0), n_bins=20, n_boot=200)).get_xlabel()
    'lag (bins)'
    """
    require(result, ("acf", "lag"), "xuqcal.local")

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        lags = one.lag.values
        ax.vlines(lags, 0, one.acf.values, color="tab:blue")
        ax.plot(lags, one.acf.values, "o", ms=3, color="tab:blue")
        band = slice_value(one, "acf_band")
        ax.axhspan(-band, band, color="0.9",
                   label=f"white noise ±{band:.2f}" if p.plain else "white noise")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("lag (bins)")
        ax.set_ylabel("autocorrelation")
        title = (f"ACF of {_LABELS.get(one.attrs['statistic'], '')} per bin of "
                 f"{one.attrs['by']}")
        p.title(ax, title, title, "" if p.plain else f"white noise ±{band:.2f}")
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=LOCAL_DIMS, variables=("acf",), ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, figsize=(6, 4))


def reliability(result: xr.Dataset, *, ax=None, log: bool | None = None,
                col: str | None = None, row: str | None = None,
                sharex: bool | None = None, sharey: bool | None = None):
    """Reliability diagram: RMSE per bin (with its bootstrap interval) against RMV; bins
    flagged ``heavy_tail`` (β_GM of uE² or of E² above its threshold: not testable) greyed
    out, as ErrViewLib's ``plotRelDiag`` does.

    ``log`` draws log-log axes (default: when the RMV values span more than a decade), with
    tick labels spaced so that they never overlap. An extra dimension of ``result`` without
    ``col`` / ``row`` is drawn as one series per slice (:mod:`xuqcal.plot.facets`).

    ``sharex`` / ``sharey``: whether the panels share their axes; ``None`` (the default)
    shares them unless the panels' sets differ in size or range
    (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` with ``col`` / ``row``

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.local import reliability as rel
    >>> reliability(rel(xuqcal.synthetic.nig(2000, nu=6, seed=0), n_boot=200)).get_xlabel()
    'RMV (root mean variance per bin)'
    """
    require(result, ("rmv", "rmse", "rmse_low", "rmse_high"), "xuqcal.reliability")
    rmv = result.rmv.values
    lims = [float(min(np.nanmin(rmv), np.nanmin(result.rmse_low.values))),
            float(max(np.nanmax(rmv), np.nanmax(result.rmse_high.values)))]
    if log is None:
        log = bool(np.nanmax(rmv) > 10 * np.nanmin(rmv))

    heavy_label = heavy_tail_label(result)

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        x, rmse = one.rmv.values, one.rmse.values
        yerr = error_bars(rmse, one.rmse_low.values, one.rmse_high.values)
        heavy = heavy_tail_mask(one)
        kept = ~heavy
        if kept.any() or p.overlaid:
            ax.errorbar(x[kept], rmse[kept], yerr=yerr[:, kept], fmt="o", ms=4,
                        color=p.colour_or("tab:blue"), label=p.data_label("bins"))
        if heavy.any():
            known = heavy_label in ax.get_legend_handles_labels()[1]
            edge = {"mec": p.colour} if p.overlaid else {}
            ax.errorbar(x[heavy], rmse[heavy], yerr=yerr[:, heavy], fmt="o", ms=4,
                        color=HEAVY_TAIL_COLOUR, label=None if known else heavy_label, **edge)
        if p.first:
            ax.plot(lims, lims, color="black", ls="--", lw=1, label="RMSE = RMV")
        if log:
            log_axis(ax, "xy")
        ax.set_xlabel("RMV (root mean variance per bin)")
        ax.set_ylabel("RMSE (root mean squared error per bin)")
        p.title(ax, "Reliability diagram", "Reliability diagram")
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("bin",), variables=("rmse",), ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, lines=True, figsize=(5, 5))


def order_sensitivity(result: xr.Dataset, *, ax=None, col: str | None = None,
                      row: str | None = None,
                      sharex: bool | None = None, sharey: bool | None = None):
    """Histogram of the fractions of valid bins over random tie orders.

    An extra dimension of ``result`` gives one panel per slice (along the columns by default;
    ``col`` / ``row``: :mod:`xuqcal.plot.facets`).

    ``sharex`` / ``sharey``: whether the panels share their axes; ``None`` (the default)
    shares them unless the panels' sets differ in size or range
    (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.local import order_sensitivity as sens
    >>> ds = xuqcal.synthetic.nig(1000, nu=6, seed=0)
    >>> ds = ds.assign(X=("sample", np.round(ds.uE.values, 1)))
    >>> order_sensitivity(sens(ds, by="X", n_orders=3, n_bins=10, n_boot=100)).get_xlabel()
    'fraction of valid bins'
    """
    require(result, ("fraction_valid", "q025", "q975"), "xuqcal.order_sensitivity")

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        fv = one.fraction_valid.values
        fv = fv[np.isfinite(fv)]
        step = 1.0 / slice_value(one, "n_bins")
        edges = np.arange(fv.min() - step / 2, fv.max() + step, step)
        ax.hist(fv, bins=edges, color="tab:blue", alpha=0.7, label="tie orders")
        if "fraction_valid_noisy" in one:
            ax.hist(one.fraction_valid_noisy.values, bins=np.arange(
                0 - step / 2, 1 + step, step), histtype="step", color="tab:orange",
                label="with binomial noise")
        ax.axvline(0.95, color="black", ls="--", lw=1, label="0.95")
        ax.axvspan(one.q025.item(), one.q975.item(), color="0.9", zorder=0,
                   label="2.5–97.5 %")
        ax.set_xlabel("fraction of valid bins")
        ax.set_ylabel("number of orders")
        title = f"Data-order sensitivity of f_v ({one.attrs['by']})"
        p.title(ax, title, title)
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("order",), variables=("fraction_valid",), ax=ax, col=col,
                 row=row, sharex=sharex, sharey=sharey, figsize=(6, 4))


def adversarial(result: xr.Dataset, *, ax=None, col: str | None = None,
                row: str | None = None,
                sharex: bool | None = None, sharey: bool | None = None):
    """Fraction of random groups whose interval contains the target, with the N(0, 1) control.

    An extra dimension of ``result`` gives one panel per slice (along the columns by default;
    ``col`` / ``row``: :mod:`xuqcal.plot.facets`).

    ``sharex`` / ``sharey``: whether the panels share their axes; ``None`` (the default)
    shares them unless the panels' sets differ in size or range
    (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.local import adversarial_groups
    >>> adv = adversarial_groups(xuqcal.synthetic.nig(800, nu=6, seed=0), n_groups=10, n_boot=100)
    >>> adversarial(adv).get_xlabel()
    'group size'
    """
    require(result, ("count", "fraction_valid", "control_fraction_valid"),
            "xuqcal.adversarial_groups")

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        size = one["count"].values
        for prefix, low, high, colour, label in (
                ("", "fraction_valid_low", "fraction_valid_high", "tab:blue", "data"),
                ("control_", "control_low", "control_high", "0.5", "control Z ~ N(0, 1)")):
            value = one[f"{prefix}fraction_valid"].values
            ax.errorbar(size, value, yerr=error_bars(value, one[low].values, one[high].values),
                        fmt="o-", color=colour, capsize=3, label=label)
        ax.axhline(0.95, color="black", ls="--", lw=1, label="0.95")
        log_axis(ax, "x")
        ax.set_xlabel("group size")
        ax.set_ylabel("fraction of valid groups")
        p.title(ax, "Adversarial group validation", "Adversarial group validation")
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("count",), variables=("fraction_valid",), ax=ax, col=col,
                 row=row, sharex=sharex, sharey=sharey, figsize=(6, 4))
