"""Confidence curve with the bootstrap band of the data curve and its probabilistic reference
(:func:`xuqcal.confidence_curve_validation`, ErrViewLib's ``plotCCVal``)."""

from __future__ import annotations

import xarray as xr

from xuqcal.plot._common import fraction_valid_detail, require
from xuqcal.plot.facets import Panel, facet

REMOVED_LABEL = "fraction of largest uncertainties removed (%)"


def confidence_validation(result: xr.Dataset, ax=None, *, col: str | None = None,
                          row: str | None = None, sharex: bool | None = None,
                          sharey: bool | None = None):
    """The data's confidence curve with its bootstrap band, the reference mean curve, and the
    fraction of ``k`` at which the reference lies in the band (with its Wilson interval).

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.confidence_curve_validation`, possibly with extra dimensions:
        one extra dimension without ``col`` / ``row`` draws one curve and band per slice.
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions laid out as a grid of panels (:mod:`xuqcal.plot.facets`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their axes.

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid`

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.confidence import confidence_curve_validation
    >>> r = confidence_curve_validation(xuqcal.synthetic.nig(300, nu=6, seed=0), k=[0, 25, 50],
    ...                                 n_mc=50, n_boot=1000)
    >>> ax = confidence_validation(r)
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('fraction of largest uncertainties removed (%)', 'RMSE')
    """
    require(result, ("value", "ci_low", "ci_high", "reference_mean", "fraction_valid"),
            "xuqcal.confidence_curve_validation")
    label = str(result.attrs.get("statistic", "rmse")).upper()
    generator = str(result.attrs.get("generator", ""))
    level = float(result.attrs.get("level", 0.95))

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        k = one.k.values
        detail = fraction_valid_detail(one, "f")
        colour = p.colour_or("tab:blue")
        ax.fill_between(k, one.ci_low.values, one.ci_high.values, color=colour, alpha=0.25,
                        lw=0, label=p.once(f"{100 * level:g} % bootstrap band of the data"))
        ax.plot(k, one.value.values, color=colour, lw=1.5, label=p.data_label("data", detail))
        ax.plot(k, one.reference_mean.values, ls=":", lw=2, color=colour,
                label=p.once(f"reference mean (D = {generator})"))
        ax.set_xlabel(REMOVED_LABEL)
        ax.set_ylabel(label)
        p.title(ax, f"Confidence curve validation ({detail})", "Confidence curve validation",
                detail)
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("k",), variables=("value",), name="result", ax=ax,
                 col=col, row=row, sharex=sharex, sharey=sharey, lines=True)
