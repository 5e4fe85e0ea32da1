"""Worst-group calibration error against the group size, with its control sample
(:func:`xuqcal.worst_group_calibration`, ErrViewLib's ``plotAGV``)."""

from __future__ import annotations

import xarray as xr

from xuqcal.plot._common import log_axis, require
from xuqcal.plot.facets import Panel, facet


def worst_group(result: xr.Dataset, ax=None, *, col: str | None = None,
                row: str | None = None, sharex: bool | None = None,
                sharey: bool | None = None):
    """The data's worst-group calibration error ``|ln <Z²>_g|`` against the relative group
    size (log scale), with a band of ±2 standard deviations over the repeats, and the same
    for the control sample.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.worst_group_calibration`, possibly with extra dimensions: one
        extra dimension without ``col`` / ``row`` draws one curve per slice.
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
    >>> from xuqcal.analysis.adversarial import worst_group_calibration
    >>> r = worst_group_calibration(xuqcal.synthetic.nig(400, nu=6, seed=0), n_groups=10,
    ...                             n_mc=10)
    >>> ax = worst_group(r)
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('relative group size', 'calibration error of the worst group |ln <Z²>|')
    """
    require(result, ("value", "value_sd", "control", "control_sd", "count"),
            "xuqcal.worst_group_calibration")
    statistic = str(result.attrs.get("statistic", "max"))
    generator = str(result.attrs.get("generator", "normal"))
    what = {"max": "worst group", "mean": "mean group", "median": "median group",
            "q95": "95th percentile of the groups"}.get(statistic, statistic)

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        x = one["count"].values / one["count"].values.max()
        colour = p.colour_or("tab:purple")
        value, sd = one.value.values, one.value_sd.values
        ax.fill_between(x, value - 2 * sd, value + 2 * sd, color=colour, alpha=0.2, lw=0)
        ax.plot(x, value, marker="o", ms=4, color=colour, label=p.data_label("data"))
        control, control_sd = one.control.values, one.control_sd.values
        control_colour = "tab:red" if not p.overlaid else colour
        ax.fill_between(x, control - 2 * control_sd, control + 2 * control_sd,
                        color=control_colour, alpha=0.1, lw=0)
        ax.plot(x, control, marker="o", ms=3, ls="--", color=control_colour,
                label=p.once(f"control (Z ~ {generator})") if not p.overlaid else None)
        if p.overlaid and p.first:
            ax.plot([], [], ls="--", color="0.3", label=f"control (Z ~ {generator})")
        log_axis(ax, "x")
        ax.set_ylim(bottom=0.0)
        ax.set_xlabel("relative group size")
        ax.set_ylabel(f"calibration error of the {what} |ln <Z²>|")
        p.title(ax, "Adversarial groups: calibration error against group size",
                "Adversarial groups")
        p.legend(ax, fontsize="small")

    return facet(result, draw, core=("count",), variables=("value",), name="result", ax=ax,
                 col=col, row=row, sharex=sharex, sharey=sharey, lines=True)
