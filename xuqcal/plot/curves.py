"""Figures of the curves of :mod:`xuqcal.curves`: confidence curve, ablation, calibration curve
and local coverage. Each function draws on ``ax`` (or a new figure) and returns the Axes."""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.plot._common import GENERATOR_COLOURS, axes, require

REMOVED_LABEL = "fraction of largest uncertainties removed (%)"


def confidence_curve(curve: xr.Dataset, ax=None):
    """Confidence curve of the data against its probabilistic reference.

    Parameters
    ----------
    curve : xarray.Dataset
        Output of :func:`xuqcal.curves.confidence_curve`.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.curves import confidence_curve as compute_curve
    >>> ax = confidence_curve(compute_curve(xuqcal.synthetic.nig(1000, nu=6, seed=0), n_mc=100))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('fraction of largest uncertainties removed (%)', 'RMSE')
    """
    require(curve, ("value", "k"), "xuqcal.curves.confidence_curve", name="curve")
    ax = axes(ax)
    k = curve.k.values
    label = str(curve.attrs.get("statistic", "rmse")).upper()
    if "reference_mean" in curve:
        generator = curve.attrs.get("generator", "")
        level = float(curve.attrs.get("level", 0.95))
        ax.fill_between(k, curve.reference_low.values, curve.reference_high.values,
                        color="tab:blue", alpha=0.25, lw=0,
                        label=f"reference {100 * level:g} % band")
        ax.plot(k, curve.reference_mean.values, ls="--", color="tab:blue",
                label=f"reference mean (D = {generator})")
        in_band = float(np.mean(curve.in_band.values))
        title = f"Confidence curve ({100 * in_band:.0f} % of k in the band)"
    else:
        title = "Confidence curve"
    ax.plot(k, curve.value.values, color="black", lw=1.5, label="data")
    ax.set_xlabel(REMOVED_LABEL)
    ax.set_ylabel(label)
    ax.set_title(title)
    ax.legend(fontsize="small")
    return ax


def ablation(result: xr.Dataset, ax=None):
    """Ablation curves: Δstatistic against the percent of largest uncertainties removed, with
    the full-set interval (as offsets from its estimate) shaded per statistic.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.curves.ablation`.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.curves import ablation as compute_ablation
    >>> ax = ablation(compute_ablation(xuqcal.synthetic.nig(1000, nu=6, seed=0), n_boot=200))
    >>> ax.get_ylabel()
    'Δ statistic (remaining − full set)'
    """
    require(result, ("value", "k", "statistic"), "xuqcal.curves.ablation")
    ax = axes(ax)
    k = result.k.values
    ax.axhline(0, color="0.5", lw=0.8)
    for j, key in enumerate(result.statistic.values):
        colour = GENERATOR_COLOURS[j % len(GENERATOR_COLOURS)]
        one = result.sel(statistic=key)
        low, high = float(one.ci_low_offset), float(one.ci_high_offset)
        level = float(result.attrs.get("level", 0.95))
        ax.axhspan(low, high, color=colour, alpha=0.15, lw=0,
                   label=f"{key}: full-set {100 * level:g} % interval")
        delta = one.delta.values
        ax.plot(k, delta, marker="o", ms=4, color=colour, label=f"Δ{key}")
        outside = one.outside.values
        if outside.any():
            ax.plot(k[outside], delta[outside], ls="none", marker="o", ms=9, mfc="none",
                    color="crimson")
    ax.set_xlabel(REMOVED_LABEL)
    ax.set_ylabel("Δ statistic (remaining − full set)")
    ax.set_title("Ablation of the largest uncertainties (red circles: outside the interval)")
    ax.legend(fontsize="small")
    return ax


def calibration_curve(result: xr.Dataset, ax=None):
    """Calibration curve: observed against expected fraction inside the central intervals,
    with the Wilson band, the diagonal and the miscalibration area.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.curves.calibration_curve`.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.curves import calibration_curve as compute_curve
    >>> ax = calibration_curve(compute_curve(xuqcal.synthetic.nig(1000, nu=6, seed=0)))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('expected fraction p', 'observed fraction')
    """
    require(result, ("observed", "ci_low", "ci_high", "miscalibration_area", "p"),
            "xuqcal.curves.calibration_curve")
    ax = axes(ax, figsize=(5, 5))
    p = result.p.values
    level = float(result.attrs.get("level", 0.95))
    area = float(result.miscalibration_area)
    ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls=":", label="perfect calibration")
    ax.fill_between(p, result.ci_low.values, result.ci_high.values, color="tab:blue",
                    alpha=0.25, lw=0, label=f"Wilson {100 * level:g} % interval")
    ax.plot(p, result.observed.values, color="tab:blue", marker="." if p.size < 30 else None,
            label=f"observed (miscalibration area {area:.4f})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("expected fraction p")
    ax.set_ylabel("observed fraction")
    ax.set_title(f"Calibration curve (D = {result.attrs.get('generator', '')})")
    ax.legend(fontsize="small", loc="upper left")
    return ax


def local_coverage(result: xr.Dataset, ax=None):
    """Coverage of the central interval per bin, with Wilson intervals, against the target;
    bins whose interval misses the target are highlighted.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.curves.local_coverage`.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.curves import local_coverage as compute_coverage
    >>> ax = local_coverage(compute_coverage(xuqcal.synthetic.nig(1000, nu=6, seed=0)))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('uE (bin centre)', 'coverage of the 0.95-interval')
    """
    require(result, ("coverage", "bin_centre", "ci_low", "ci_high", "valid", "fraction_valid"),
            "xuqcal.curves.local_coverage")
    ax = axes(ax)
    p = float(result.attrs["p"])
    by = result.attrs.get("by", "uE")
    x = result.bin_centre.values
    coverage = result.coverage.values
    valid = result.valid.values.astype(bool)
    errors = np.vstack([coverage - result.ci_low.values, result.ci_high.values - coverage])
    ax.axhline(p, color="0.3", ls="--", lw=1, label=f"target p = {p:g}")
    for mask, colour, text in ((valid, "tab:blue", "valid bin"),
                               (~valid, "crimson", "invalid bin")):
        if mask.any():
            ax.errorbar(x[mask], coverage[mask], yerr=errors[:, mask], ls="none", marker="o",
                        ms=4, color=colour, capsize=2, label=text)
    if by == result.attrs.get("uE", "uE") and np.all(x > 0):
        ax.set_xscale("log")
    fv = float(result.fraction_valid)
    lo, hi = float(result.fraction_valid_low), float(result.fraction_valid_high)
    ax.set_xlabel(f"{by} (bin centre)")
    ax.set_ylabel(f"coverage of the {p:g}-interval")
    ax.set_title(f"Local coverage: f_v = {fv:.2f} [{lo:.2f}, {hi:.2f}]")
    ax.legend(fontsize="small")
    return ax
