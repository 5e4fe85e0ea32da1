"""Quantile calibration curve of predicted quantiles (METHODS §9): the observed fraction of
points below each predicted quantile against its nominal probability
(:func:`xuqcal.analysis.coverage.quantile_coverage`)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.plot._common import error_bars, require
from xuqcal.plot.facets import Panel, facet

__all__ = ["quantile_calibration"]

_PRODUCER = "xuqcal.analysis.coverage.quantile_coverage"


def _quantile_dim(result: xr.Dataset) -> str:
    """The dimension of nominal probabilities of a :func:`quantile_coverage` result: its
    attribute ``quantile_dim``, else the first dimension of ``observed`` (where
    quantile_coverage puts it)."""
    dim = result.attrs.get("quantile_dim")
    observed = result["observed"]
    if dim in observed.dims:
        return str(dim)
    if observed.ndim == 0:
        raise ValueError(f"result: expected the output of {_PRODUCER} (observed over a "
                         "dimension of nominal probabilities), got a scalar observed")
    return str(observed.dims[0])


def quantile_calibration(result: xr.Dataset, ax=None, *, col: str | None = None,
                         row: str | None = None,
                         sharex: bool | None = None, sharey: bool | None = None):
    """Quantile calibration curve: the observed fraction of points with ``E <= q_p`` against
    the nominal probability ``p`` of each predicted quantile, with the Wilson-cc interval of
    each fraction as error bars and the diagonal of perfect calibration.

    Levels whose interval misses ``[p - tol, p + tol]`` (``valid`` false) are drawn in
    crimson (open markers when several sets are overlaid). The title gives the calibration
    error, the mean ``|observed - p|`` over the levels. Reading the curve: above the diagonal
    everywhere, quantiles too high (a bias); flatter than the diagonal (above it at small
    ``p``, below at large ``p``), quantiles too close together (intervals too narrow);
    steeper, too far apart (too wide).

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.analysis.coverage.quantile_coverage`, possibly with extra
        dimensions: one extra dimension without ``col`` / ``row`` draws one curve per slice.
    ax : matplotlib Axes, optional
        Where to draw (a new figure when ``None``).
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
        For a ``result`` that is not a Dataset with ``observed``, ``ci_low``, ``ci_high`` and
        ``valid``, and as :func:`~xuqcal.plot.facets.facet`.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from xuqcal.analysis.coverage import quantile_coverage
    >>> from xuqcal.io import from_quantiles
    >>> p = [0.05, 0.25, 0.5, 0.75, 0.95]
    >>> q = stats.norm.ppf(p) * np.ones((2000, 1))
    >>> y = np.random.default_rng(0).normal(size=2000)
    >>> ax = quantile_calibration(quantile_coverage(from_quantiles(q, y, p, axis=1)))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('nominal probability p', 'observed fraction with E ≤ q_p')
    """
    require(result, ("observed", "ci_low", "ci_high", "valid"), _PRODUCER)
    dim = _quantile_dim(result)
    level = float(result.attrs.get("level", 0.95))
    tol = float(result.attrs.get("tol", 0.0))

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        nominal = np.asarray(one[dim].values, dtype=np.float64)
        observed = np.asarray(one["observed"].values, dtype=np.float64)
        valid = np.asarray(one["valid"].values, dtype=bool)
        yerr = error_bars(observed, one["ci_low"].values, one["ci_high"].values)
        detail = (f"calibration error {float(one['calibration_error']):.4f}"
                  if "calibration_error" in one.data_vars else "")
        colour = p.colour_or("tab:blue")
        if p.first:
            ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls=":", label="perfect calibration")
        ax.plot(nominal, observed, color=colour, lw=1.0, alpha=0.6, zorder=1)
        labelled = bool(valid.any())
        for mask, ok in ((valid, True), (~valid, False)):
            if not mask.any():
                continue
            if p.overlaid:
                style = {"color": colour, "mfc": colour if ok else "none",
                         "label": p.data_label(None, detail) if ok == labelled else None}
            else:
                style = {"color": "tab:blue" if ok else "crimson",
                         "label": (f"observed, Wilson {100 * level:g} % interval" if ok else
                                   f"interval misses [p - {tol:g}, p + {tol:g}]")}
            ax.errorbar(nominal[mask], observed[mask], yerr=yerr[:, mask], fmt="o", ms=4,
                        capsize=3, lw=1.0, zorder=2, **style)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("nominal probability p")
        ax.set_ylabel("observed fraction with E ≤ q_p")
        p.title(ax, "Quantile calibration" + (f"\n{detail}" if detail else ""),
                "Quantile calibration", detail)
        p.legend(ax, fontsize="small", loc="upper left")

    return facet(result, draw, core=(dim,), variables=("observed",), ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, lines=True, figsize=(5, 5))
