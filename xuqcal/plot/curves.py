"""Figures of the curves of :mod:`xuqcal.curves`: confidence curve, ablation, calibration curve
and local coverage. Each function draws on ``ax`` (or a new figure) and returns the Axes; a
result with extra dimensions (``model``, ``task``, ...) is drawn as one curve per slice or as a
grid of panels (``col=`` / ``row=``, see :mod:`xuqcal.plot.facets`)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.analysis.curves import CURVE_DIM, LEGACY_CURVE_DIM
from xuqcal.plot._common import (
    LINESTYLES,
    MARKERS,
    error_bars,
    fraction_valid_detail,
    log_axis,
    positive,
    require,
    series_colour,
)
from xuqcal.plot.facets import Panel, facet
from xuqcal.plot.local import bins_with_screening, heavy_tail_label, heavy_tail_mask

REMOVED_LABEL = "fraction of largest uncertainties removed (%)"


def confidence_curve(curve: xr.Dataset, ax=None, *, col: str | None = None,
                     row: str | None = None,
                     sharex: bool | None = None, sharey: bool | None = None):
    """Confidence curve of the data against its probabilistic reference.

    Parameters
    ----------
    curve : xarray.Dataset
        Output of :func:`xuqcal.curves.confidence_curve`, possibly with extra dimensions: one
        extra dimension without ``col`` / ``row`` draws one curve (and band) per slice.
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
    >>> from xuqcal.analysis.curves import confidence_curve as compute_curve
    >>> ax = confidence_curve(compute_curve(xuqcal.synthetic.nig(1000, nu=6, seed=0), n_mc=100))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('fraction of largest uncertainties removed (%)', 'RMSE')
    """
    require(curve, ("value", "k"), "xuqcal.curves.confidence_curve", name="curve")
    label = str(curve.attrs.get("statistic", "rmse")).upper()
    generator = curve.attrs.get("generator", "")
    level = float(curve.attrs.get("level", 0.95))
    referenced = "reference_mean" in curve

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = curve.isel(indexers)
        k = one.k.values
        detail = ""
        if referenced:
            in_band = float(np.nanmean(one.in_band.values.astype(np.float64)))
            detail = f"{100 * in_band:.0f} % of k in the band"
            colour = p.colour_or("tab:blue")
            ax.fill_between(k, one.reference_low.values, one.reference_high.values,
                            color=colour, alpha=0.15 if p.overlaid else 0.25, lw=0,
                            label=None if p.overlaid else f"reference {100 * level:g} % band")
            ax.plot(k, one.reference_mean.values, ls="--", color=colour,
                    label=None if p.overlaid else f"reference mean (D = {generator})")
        ax.plot(k, one.value.values, color=p.colour_or("black"), lw=1.5,
                label=p.data_label("data", detail))
        if p.overlaid and p.first and referenced:
            ax.plot([], [], ls="--", color="0.3", label=f"reference mean (D = {generator})")
            ax.fill_between([], [], [], color="0.3", alpha=0.25, lw=0,
                            label=f"reference {100 * level:g} % band")
        ax.set_xlabel(REMOVED_LABEL)
        ax.set_ylabel(label)
        full = f"Confidence curve ({detail})" if detail else "Confidence curve"
        p.title(ax, full, "Confidence curve", detail)
        p.legend(ax, fontsize="small")

    return facet(curve, draw, core=("k",), variables=("value",), name="curve", ax=ax, col=col,
                 row=row, sharex=sharex, sharey=sharey, lines=True)


def ablation(result: xr.Dataset, ax=None, *, col: str | None = None, row: str | None = None,
             sharex: bool | None = None, sharey: bool | None = None):
    """Ablation curves: Δstatistic against the percent of largest uncertainties removed, with
    the full-set interval (as offsets from its estimate) shaded per statistic.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.curves.ablation`, possibly with extra dimensions: one extra
        dimension without ``col`` / ``row`` draws the curves of each slice in its colour (one
        marker and line style per statistic, the intervals as thin lines).
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
    >>> from xuqcal.analysis.curves import ablation as compute_ablation
    >>> ax = ablation(compute_ablation(xuqcal.synthetic.nig(1000, nu=6, seed=0), n_boot=200))
    >>> ax.get_ylabel()
    'Δ statistic (remaining − full set)'
    """
    require(result, ("value", "k", "statistic"), "xuqcal.curves.ablation")
    level = float(result.attrs.get("level", 0.95))

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        k = one.k.values
        if p.first:
            ax.axhline(0, color="0.5", lw=0.8)
        for j, key in enumerate(one.statistic.values):
            stat = one.sel(statistic=key)
            low, high = float(stat.ci_low_offset), float(stat.ci_high_offset)
            delta = stat.delta.values
            if p.overlaid:
                style = dict(color=p.colour, ls=LINESTYLES[j % len(LINESTYLES)])
                for bound in (low, high):
                    ax.axhline(bound, lw=0.8, alpha=0.7, **style)
                ax.plot(k, delta, marker=MARKERS[j % len(MARKERS)], ms=4,
                        label=f"{p.label}: Δ{key}", **style)
            else:
                ax.axhspan(low, high, color=series_colour(j), alpha=0.15, lw=0,
                           label=f"{key}: full-set {100 * level:g} % interval")
                ax.plot(k, delta, marker="o", ms=4, color=series_colour(j), label=f"Δ{key}")
            outside = stat.outside.values.astype(bool)
            if outside.any():
                ax.plot(k[outside], delta[outside], ls="none", marker="o", ms=9, mfc="none",
                        color="crimson")
        if p.overlaid and p.first:
            ax.plot([], [], color="0.3", lw=0.8,
                    label=f"full-set {100 * level:g} % intervals (thin lines)")
        ax.set_xlabel(REMOVED_LABEL)
        ax.set_ylabel("Δ statistic (remaining − full set)")
        title = "Ablation of the largest uncertainties (red circles: outside the interval)"
        p.title(ax, title, title)
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("statistic", "k"), variables=("delta",), ax=ax, col=col,
                 row=row, sharex=sharex, sharey=sharey, lines=True)


def calibration_curve(result: xr.Dataset, ax=None, *, col: str | None = None,
                      row: str | None = None,
                      sharex: bool | None = None, sharey: bool | None = None):
    """Calibration curve: observed against expected fraction inside the central intervals,
    with the Wilson band, the diagonal and the miscalibration area.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.curves.calibration_curve`, possibly with extra dimensions: one
        extra dimension without ``col`` / ``row`` draws one curve and band per slice.
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
    >>> from xuqcal.analysis.curves import calibration_curve as compute_curve
    >>> ax = calibration_curve(compute_curve(xuqcal.synthetic.nig(1000, nu=6, seed=0)))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('expected fraction p', 'observed fraction')
    """
    if isinstance(result, xr.Dataset) and LEGACY_CURVE_DIM in result.dims \
            and CURVE_DIM not in result.dims:  # written until version 0.1
        result = result.rename({LEGACY_CURVE_DIM: CURVE_DIM})
    require(result, ("observed", "ci_low", "ci_high", "miscalibration_area", CURVE_DIM),
            "xuqcal.curves.calibration_curve")
    level = float(result.attrs.get("level", 0.95))

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        x = one[CURVE_DIM].values
        area = float(one.miscalibration_area)
        detail = f"miscalibration area {area:.4f}"
        colour = p.colour_or("tab:blue")
        if p.first:
            ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls=":", label="perfect calibration")
        ax.fill_between(x, one.ci_low.values, one.ci_high.values, color=colour,
                        alpha=0.15 if p.overlaid else 0.25, lw=0,
                        label=p.once(f"Wilson {100 * level:g} % interval (shaded)")
                        if p.overlaid else f"Wilson {100 * level:g} % interval")
        ax.plot(x, one.observed.values, color=colour, marker="." if x.size < 30 else None,
                label=p.data_label(f"observed ({detail})" if p.plain else "observed", detail))
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("expected fraction p")
        ax.set_ylabel("observed fraction")
        title = f"Calibration curve (D = {one.attrs.get('generator', '')})"
        p.title(ax, title, title, detail)
        p.legend(ax, fontsize="small", loc="upper left")

    return facet(result, draw, core=(CURVE_DIM,), variables=("observed",), ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, lines=True, figsize=(5, 5))


def local_coverage(result: xr.Dataset, ax=None, *, col: str | None = None,
                   row: str | None = None,
                   sharex: bool | None = None, sharey: bool | None = None):
    """Local coverage probability (LCP): the coverage of the central interval per bin, with
    Wilson-cc intervals, against the target ``p`` and its band ``[p - tol, p + tol]``
    (shaded); bins whose interval misses the band are highlighted, and heavy-tailed bins
    (β_GM(Z²) above the threshold: not testable) are greyed out.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.curves.local_coverage`, possibly with extra dimensions: one
        extra dimension without ``col`` / ``row`` draws one series per slice (invalid bins as
        open markers, heavy-tailed ones grey). Bins without a ``bin_centre`` (groups, grid
        cells) are drawn at their positions, labelled by their ``label`` when they have one.
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
    >>> from xuqcal.analysis.curves import local_coverage as compute_coverage
    >>> ax = local_coverage(compute_coverage(xuqcal.synthetic.nig(1000, nu=6, seed=0)))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('uE (bin centre)', 'coverage of the 0.95-interval')
    """
    require(result, ("coverage", "ci_low", "ci_high", "valid", "fraction_valid"),
            "xuqcal.curves.local_coverage")
    # the target of coverage_rule="pernot2024" (0.67 at 0.683); else the coverage level (the
    # attribute p: written until version 0.1)
    target = float(result.attrs.get("target", result.attrs["coverage_level"]
                                    if "coverage_level" in result.attrs else result.attrs["p"]))
    tol = float(result.attrs.get("tol", 0.0))
    by = result.attrs.get("by", "uE")
    centred = "bin_centre" in result.variables
    log_x = centred and by == result.attrs.get("uE", "uE") and positive(result.bin_centre)
    labels = ([str(v) for v in result["label"].values]
              if not centred and "label" in result.coords and result["label"].ndim == 1
              else None)
    heavy_label = heavy_tail_label(result)

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        x = one.bin_centre.values if centred else np.arange(one.sizes["bin"], dtype=float)
        coverage = one.coverage.values
        detail = fraction_valid_detail(one)
        if p.first:
            if tol > 0:
                ax.axhspan(target - tol, target + tol, color="tab:green", alpha=0.15, lw=0,
                           zorder=0,
                           label=f"target band p ± {tol:g}")
            ax.axhline(target, color="0.3", ls="--", lw=1, label=f"target p = {target:g}")
        yerr = error_bars(coverage, one.ci_low.values, one.ci_high.values)
        bins_with_screening(ax, p, x, coverage, yerr, one.valid.values.astype(bool),
                            heavy_tail_mask(one), heavy_label, detail, ls="none", marker="o",
                            ms=4, capsize=2)
        if p.overlaid and p.first:
            ax.plot([], [], "o", ms=4, mfc="none", color="0.3", label="invalid bin (open)")
        if log_x:
            log_axis(ax, "x")
        if centred:
            ax.set_xlabel(f"{by} (bin centre)")
        else:
            if labels is not None:
                ax.set_xticks(x, labels)
            ax.set_xlabel(f"{by} (bin)")
        ax.set_ylabel(f"coverage of the {target:g}-interval")
        p.title(ax, f"Local coverage: {detail}", "Local coverage", detail)
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("bin",), variables=("coverage",), ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, lines=True)
