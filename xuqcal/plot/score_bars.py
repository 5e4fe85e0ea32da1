"""Bar chart of Pernot's calibration scores (:func:`xuqcal.calibration_scores`)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.plot._common import error_bars, require, series_colour
from xuqcal.plot.facets import Panel, facet


def calibration_scores(scores: xr.Dataset, ax=None, *, col: str | None = None,
                       row: str | None = None, sharex: bool | None = None,
                       sharey: bool | None = None):
    """The scores ``scal``, ``su``, ``sx`` (one bar per feature) and ``stot`` as bars (0 for
    perfectly calibrated, consistent and adaptive uncertainties), with the mean and 95 % range
    of their simulated reference when the scores were computed with ``n_mc``.

    Parameters
    ----------
    scores : xarray.Dataset
        Output of :func:`xuqcal.calibration_scores`, possibly with extra dimensions: one extra
        dimension without ``col`` / ``row`` draws one group of bars per slice.
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
    >>> from xuqcal.analysis.calibration_scores import calibration_scores as compute
    >>> ax = calibration_scores(compute(xuqcal.synthetic.nig(1000, nu=6, seed=0)))
    >>> ax.get_xlabel(), [t.get_text() for t in ax.get_xticklabels()]
    ('score', ['Scal', 'Su', 'Stot'])
    """
    require(scores, ("scal", "su", "stot"), "xuqcal.calibration_scores", name="scores")
    features = [str(f) for f in scores["feature"].values] if "feature" in scores.dims else []
    labels = ["Scal", "Su", *[f"SX({f})" for f in features], "Stot"]
    core = ("feature",) if features else ()

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = scores.isel(indexers)
        heights = [float(one.scal), float(one.su),
                   *([float(v) for v in one.sx.values] if features else []), float(one.stot)]
        positions = np.arange(len(labels), dtype=float)
        width = 0.6 if not p.overlaid else 0.8 / p.count
        x = positions if not p.overlaid else positions - 0.4 + width * (p.index + 0.5)
        ax.bar(x, heights, width=width, color=p.colour_or(series_colour(0)),
               label=p.data_label(None) if p.overlaid else "data")
        if "scal_reference" in one:  # calibration_scores(n_mc=...): the simulated 95 % range
            ref = [one.scal_reference, one.su_reference,
                   *([one.sx_reference.isel(feature=i) for i in range(len(features))]),
                   one.stot_reference]
            low = np.array([float(r.sel(summary="q025")) for r in ref])
            high = np.array([float(r.sel(summary="q975")) for r in ref])
            mean = np.array([float(r.sel(summary="mean")) for r in ref])
            ax.errorbar(x, mean, yerr=error_bars(mean, low, high), fmt="_", color="black",
                        capsize=3, label=p.once("simulated reference (mean, 95 % range)"))
            if not p.overlaid:
                ax.legend(fontsize="small")
        if p.first:
            ax.set_xticks(positions, labels)
            ax.axhline(0.0, color="black", lw=0.8)
        ax.set_xlabel("score")
        ax.set_ylabel("value (0: calibrated, consistent, adaptive)")
        title = f"Calibration scores ({scores.attrs.get('n_bins', '?')} bins)"
        p.title(ax, title, "Calibration scores")
        if p.overlaid:
            p.legend(ax, fontsize="small")

    return facet(scores, draw, core=core, variables=("scal",), name="scores", ax=ax, col=col,
                 row=row, sharex=sharex, sharey=sharey, lines=True)
