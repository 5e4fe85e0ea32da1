"""The CORP reliability diagram of the variance forecast: the isotonic recalibration of E²
against uE², its consistency band and the score decomposition
(:func:`xuqcal.analysis.decomposition.corp_reliability`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from xuqcal.plot._common import log_axis, positive, require
from xuqcal.plot.facets import Panel, facet

__all__ = ["corp_reliability_diagram"]

_PRODUCER = "xuqcal.analysis.decomposition.corp_reliability"
_NEEDED = ("uE2", "recalibrated", "band_low", "band_high", "mcb", "dsc", "unc", "score_value")
_SHORT = {"squared_error": "SE", "qlike": "QLIKE"}


def _decomposition_text(one: xr.Dataset) -> str:
    """The lines ``S = …, MCB = …, DSC = …, UNC = …`` of each score of ``one``."""
    lines = []
    for name in one["score"].values.tolist():
        part = one.sel(score=name)
        lines.append(f"{_SHORT.get(name, name)}: S = {float(part.score_value):.3g}, "
                     f"MCB = {float(part.mcb):.3g}, DSC = {float(part.dsc):.3g}, "
                     f"UNC = {float(part.unc):.3g}")
    return "\n".join(lines)


def corp_reliability_diagram(result: xr.Dataset, ax: Any = None, *, col: str | None = None,
                             row: str | None = None, sharex: bool | None = None,
                             sharey: bool | None = None):
    """The CORP reliability diagram: recalibrated E² (isotonic) against uE².

    The step curve is the isotonic regression of E² on uE² (the recalibrated forecast), the
    shaded band CORP's consistency band (where the curve falls, pointwise with probability
    ``level``, when the data are calibrated with normal errors), the dashed line the diagonal
    (a calibrated forecast). A text box gives the decomposition ``S = MCB − DSC + UNC`` of the
    squared-error (SE) and QLIKE scores. Log–log axes when every value is positive (linear
    otherwise: a block of zero errors has a recalibrated E² of 0).

    Parameters
    ----------
    result : xarray.Dataset
        The output of :func:`xuqcal.analysis.decomposition.corp_reliability`; with extra
        dimensions (``model``, ...) one panel per slice (:mod:`xuqcal.plot.facets`).
    ax : matplotlib Axes, optional
        Where to draw one diagram (a new figure when ``None``).
    col, row : str, optional
        Extra dimensions laid out as a grid of panels.
    sharex, sharey : bool or None
        Whether the panels of a grid share their axes (``None``: decided from the panels).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Raises
    ------
    ValueError
        For anything but the output of ``corp_reliability``, and as
        :func:`~xuqcal.plot.facets.facet`.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.decomposition import corp_reliability
    >>> ax = corp_reliability_diagram(corp_reliability(xuqcal.synthetic.nig(500, nu=6, seed=0),
    ...                                                n_boot=100))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('uE² (forecast variance)', 'recalibrated E² (isotonic)')
    """
    require(result, _NEEDED, _PRODUCER)
    level = result.attrs.get("level")

    def draw(ax: Any, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        x = np.asarray(one.uE2.values, dtype=np.float64)
        keep = np.isfinite(x)  # the padding of a slice with fewer points
        x = x[keep]
        if x.size == 0:
            raise ValueError("result: no points to draw"
                             + (f" ({p.facet or p.label})" if (p.facet or p.label) else ""))
        fitted = np.asarray(one.recalibrated.values, dtype=np.float64)[keep]
        low = np.asarray(one.band_low.values, dtype=np.float64)[keep]
        high = np.asarray(one.band_high.values, dtype=np.float64)[keep]
        band = (f"{level:.0%} consistency band" if isinstance(level, float)
                else "consistency band")
        ax.fill_between(x, low, high, step="post", color="tab:orange", alpha=0.3, lw=0,
                        label=p.once(band))
        ax.step(x, fitted, where="post", color=p.colour_or("tab:blue"), lw=1.5,
                label=p.data_label("isotonic recalibration"))
        lims = [float(x.min()), float(x.max())]
        ax.plot(lims, lims, color="black", ls="--", lw=1, label=p.once("diagonal"))
        if positive(x, fitted, low, high):
            log_axis(ax, "xy")
            # the band's lowest quantiles at the first points (one or two synthetic E²) reach
            # decades below the data: the y-axis shows the data's range, widened by a factor 2
            # on either side, and the band is cut there
            top = float(max(x.max(), fitted.max(), np.nanmax(high)))
            ax.set_ylim(float(min(x.min(), fitted.min())) / 2.0, top * 2.0)
        ax.set_xlabel("uE² (forecast variance)")
        ax.set_ylabel("recalibrated E² (isotonic)")
        text = _decomposition_text(one)
        if not p.overlaid:
            ax.text(0.02, 0.98, text, transform=ax.transAxes, va="top", ha="left",
                    fontsize="x-small", family="monospace",
                    bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.8})
        p.title(ax, f"CORP reliability diagram ({x.size} points)", "CORP reliability diagram",
                f"{x.size} points")
        p.legend(ax, fontsize="small", loc="lower right")

    return facet(result, draw, core=("rank", "score"), variables=("recalibrated",),
                 name="result", ax=ax, col=col, row=row, sharex=sharex, sharey=sharey,
                 figsize=(5.5, 5))
