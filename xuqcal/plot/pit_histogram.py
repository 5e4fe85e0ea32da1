"""PIT histogram with the band of its counts under uniformity (METHODS §9)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from xuqcal.core import defaults
from xuqcal.core.checks import check_count, check_level
from xuqcal.core.scores import pit_histogram_band, pit_uniformity
from xuqcal.io import SAMPLE_DIM
from xuqcal.options import convention
from xuqcal.plot.facets import Panel, facet

__all__ = ["pit"]

#: Drawing order of the PIT histogram: the band of the counts under uniformity beneath the
#: bars, the expected count above them.
BAND_ZORDER, BARS_ZORDER, EXPECTED_ZORDER = 0.5, 1.0, 3.0


def _pit_array(pit_values: Any) -> xr.DataArray:
    """The PIT values as a DataArray over ``sample`` (and extra dimensions)."""
    if isinstance(pit_values, xr.Dataset):
        if "pit" not in pit_values.data_vars:
            raise ValueError("pit_values: expected PIT values (a DataArray, an array, or the "
                             "Dataset of xuqcal.analysis.probabilistic.pit with its variable "
                             f"'pit'), got a Dataset without 'pit' (variables: "
                             f"{', '.join(map(str, pit_values.data_vars)) or 'none'})")
        pit_values = pit_values["pit"]
    if not isinstance(pit_values, xr.DataArray):
        try:
            values = np.asarray(pit_values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"pit_values: expected PIT values (numbers in [0, 1]), got "
                             f"{type(pit_values).__name__}") from None
        if values.ndim != 1:
            raise ValueError(f"pit_values: expected a 1-D array (one set of PIT values), got "
                             f"shape {values.shape}; pass a DataArray over 'sample' with "
                             "named extra dimensions to draw several sets")
        pit_values = xr.DataArray(values, dims=SAMPLE_DIM)
    if SAMPLE_DIM not in pit_values.dims:
        raise ValueError(f"pit_values: expected a DataArray over '{SAMPLE_DIM}', got "
                         f"dimensions {pit_values.dims}")
    return pit_values


def pit(pit_values: Any, n_bins: int = defaults.N_BINS_PIT, level: float = defaults.LEVEL,
        ax=None, *, col: str | None = None, row: str | None = None,
        sharex: bool | None = None, sharey: bool | None = None, band: str | None = None):
    """Histogram of PIT values with the per-bin band of the counts under uniformity.

    Bars are the counts of ``n_bins`` equal-width bins of [0, 1]; the shaded band beneath
    them holds a bin's count with probability ``level`` when the values are uniform
    (Binomial(n, 1/n_bins) quantiles, :func:`xuqcal.core.scores.pit_histogram_band`; per bin,
    not simultaneous), the dashed line is the expected count. The title gives the p-values
    of the chi-square and Kolmogorov–Smirnov tests of uniformity
    (:func:`xuqcal.core.scores.pit_uniformity`). Calibrated predictive distributions give a
    flat histogram inside the band; a U shape means uncertainties too small, a hump too large,
    a slope a bias. NaN values (absent points of a slice) are left out. Panels of sets of
    different sizes get their own count axes (``sharey=None``).

    Parameters
    ----------
    pit_values : xarray.DataArray, xarray.Dataset or array_like
        PIT values over ``sample`` (:func:`xuqcal.analysis.probabilistic.pit`, its Dataset or
        its ``pit`` variable, or a 1-D array), possibly with extra dimensions: one extra
        dimension is laid out along the columns (``row=`` puts it along the rows), two need
        ``col=`` and ``row=``. Or the result of
        :func:`~xuqcal.analysis.probabilistic.pit_test`, whose counts, band and p-values are
        drawn as they are (nothing is computed again; ``n_bins`` and ``level`` must be its
        own).
    n_bins : int
        Number of equal-width bins (at least 2).
    level : float
        Probability of the per-bin band, in (0, 1).
    band : {"binomial", "poisson"}, optional
        The count distribution of the band (:func:`xuqcal.core.scores.pit_histogram_band`;
        ``"poisson"``: ErrViewLib's ``plotPIT``). Default ``None``: the option
        ``conventions``.
    ax : matplotlib Axes, optional
        Where to draw one histogram (a new figure when ``None``).
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
        For values that are not PIT values (outside [0, 1]), a slice without values,
        ``n_bins < 2``, a level outside (0, 1), and as :func:`~xuqcal.plot.facets.facet`.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis import probabilistic
    >>> ax = pit(probabilistic.pit(xuqcal.synthetic.nig(1000, nu=6, seed=0)))
    >>> ax.get_xlabel(), ax.get_ylabel(), len(ax.patches) >= 10
    ('PIT', 'count per bin', True)
    """
    n_bins = check_count(n_bins, "n_bins", minimum=2)
    level = check_level(level)
    if isinstance(pit_values, xr.Dataset) and "count" in pit_values.data_vars:
        return _plot_test(pit_values, n_bins, level, band, ax=ax, col=col, row=row,
                          sharex=sharex, sharey=sharey)
    band = convention("band", band)
    values = _pit_array(pit_values)

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = np.asarray(values.isel(indexers).values, dtype=np.float64)
        present = one[~np.isnan(one)]
        if present.size == 0:
            where = f" ({p.facet or p.label})" if (p.facet or p.label) else ""
            raise ValueError(f"pit_values: no PIT values to draw{where} (all NaN)")
        try:
            test = pit_uniformity(present, n_bins=n_bins)
        except ValueError as error:  # named by this function's argument
            raise ValueError(f"pit_values: {str(error).removeprefix('pit: ')}") from None
        low, high = pit_histogram_band(present.size, n_bins, level, band)
        _histogram(ax, p, test.counts, low, high, present.size / n_bins, level, band,
                   test.chi2_pvalue, test.ks_pvalue, present.size)

    return facet(values, draw, core=(SAMPLE_DIM,), name="pit_values", ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, figsize=(7, 4))


def _plot_test(test: xr.Dataset, n_bins: int, level: float, band: str | None, **layout):
    """:func:`pit` of a result of :func:`~xuqcal.analysis.probabilistic.pit_test`: its
    counts, band and p-values, computed once, drawn as they are (a ``band`` given must be the
    test's own: ``"poisson"`` when it has the attribute ``band``, else ``"binomial"``)."""
    own_band = "poisson" if "band" in test.attrs else "binomial"
    for name, given, own in (("n_bins", n_bins, test.sizes.get("bin")),
                             ("level", level, test.attrs.get("level")),
                             ("band", own_band if band is None else band, own_band)):
        if own is not None and given != own:
            raise ValueError(f"{name}: the PIT test has {name}={own!r}; draw it with that "
                             f"{name} (got {given!r}), or pass the PIT values")

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = test.isel(indexers)
        counts = np.asarray(one["count"].values)
        _histogram(ax, p, counts, np.asarray(one.band_low.values),
                   np.asarray(one.band_high.values), float(one.expected_count), level, own_band,
                   float(one.chi2_pvalue), float(one.ks_pvalue), int(counts.sum()))

    return facet(test, draw, core=("bin",), name="pit_values",
                 variables=["count", "band_low", "band_high"], figsize=(7, 4), **layout)


def _histogram(ax, p: Panel, counts: np.ndarray, low: np.ndarray, high: np.ndarray,
               expected: float, level: float, band: str, chi2_pvalue: float, ks_pvalue: float,
               n: int) -> None:
    """The PIT histogram of one set: the bars, the band beneath them, the expected count."""
    n_bins = len(counts)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ax.bar(edges[:-1], counts, width=1.0 / n_bins, align="edge",
           color="tab:blue", alpha=0.6, edgecolor="white", label="PIT values",
           zorder=BARS_ZORDER)
    # the band beneath the bars (BAND_ZORDER < BARS_ZORDER): the translucent bars let its
    # extent show through, and a bar's top is read against the band, not through it
    ax.fill_between(edges, np.append(low, low[-1]), np.append(high, high[-1]),
                    step="post", color="tab:orange", alpha=0.3, lw=0, zorder=BAND_ZORDER,
                    label=f"{level:.0%} band per bin (uniform"
                          f"{', Poisson' if band == 'poisson' else ''})")
    ax.axhline(expected, color="black", lw=1.0, ls="--", zorder=EXPECTED_ZORDER,
               label="expected count")
    ax.set_xlim(0.0, 1.0)  # the y-axis autoscales from 0 (the bars' sticky bottom)
    ax.set_xlabel("PIT")
    ax.set_ylabel("count per bin")
    detail = (f"χ² p = {float(chi2_pvalue):.3g}, KS p = {float(ks_pvalue):.3g}"
              f" (n = {n})")
    p.title(ax, f"PIT histogram\n{detail}", "PIT histogram", detail)
    p.legend(ax, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
