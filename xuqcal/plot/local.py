"""Figures of the local analyses: per-bin statistics, fraction of valid bins, ACF, reliability
diagram, data-order sensitivity and adversarial groups."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from xuqcal.plot._common import axes, error_bars, require

_LABELS = {"zm": "<Z>", "zms": "<Z²>", "zv": "Var(Z)", "rce": "RCE"}


def local(result: xr.Dataset, *, ax=None, log_x: bool | None = None):
    """Per-bin values with their intervals against the target; invalid bins in red.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.local`.
    ax : matplotlib Axes, optional
    log_x : bool, optional
        Logarithmic x axis (default: when binned on ``uE``).

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.local import local as lzms
    >>> ax = local(lzms(xuqcal.synthetic.nig(2000, nu=6, seed=0), n_bins=10, n_boot=200))
    >>> ax.get_ylabel()
    '<Z²>'
    """
    require(result, ("value", "ci_low", "ci_high", "valid", "bin_centre", "fraction_valid",
                     "global_value"),
            "xuqcal.local")
    ax = axes(ax)
    statistic = result.attrs["statistic"]
    by = result.attrs["by"]
    x = result.bin_centre.values
    valid = result.valid.values.astype(bool)
    lower, upper = error_bars(result.value.values, result.ci_low.values, result.ci_high.values)
    for mask, colour, label in ((valid, "tab:blue", "valid bin"),
                                (~valid, "crimson", "invalid bin")):
        if mask.any():
            ax.errorbar(x[mask], result.value.values[mask],
                        yerr=[lower[mask], upper[mask]], fmt="o", ms=3, color=colour,
                        elinewidth=0.8, label=label)
    ax.axhline(result.attrs["target"], color="black", lw=1, label="target")
    ax.axhline(result.global_value.item(), color="0.4", ls="--", lw=1,
               label=f"whole data set ({result.global_value.item():.3g})")
    if log_x if log_x is not None else by == result.attrs.get("uE", "uE"):
        ax.set_xscale("log")
    ax.set_xlabel(f"{by} (bin centre)")
    ax.set_ylabel(_LABELS.get(statistic, statistic))
    ax.set_title(f"{_LABELS.get(statistic, statistic)} per bin of {by}: "
                 f"f_v = {result.fraction_valid.item():.2f} "
                 f"[{result.fraction_valid_low.item():.2f}, "
                 f"{result.fraction_valid_high.item():.2f}]")
    ax.legend(fontsize="small")
    return ax


def fraction_valid(results: xr.Dataset | Mapping[str, xr.Dataset], *, ax=None):
    """Fractions of valid bins with their Wilson-cc intervals against 0.95, for one or several
    local analyses (a mapping label -> result, e.g. one per conditioning variable).

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
        require(results, variables, "xuqcal.local", name="results")
        results = {f"{results.attrs.get('statistic', '?')} | {results.attrs.get('by', '?')}":
                   results}
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results: expected the output of xuqcal.local or a non-empty "
                         f"mapping label -> output, got {type(results).__name__}")
    for r in results.values():
        require(r, variables, "xuqcal.local", name="results")
    ax = axes(ax, figsize=(6, 4))
    labels = list(results)
    for i, label in enumerate(labels):
        r = results[label]
        fv = r.fraction_valid.item()
        ax.errorbar(i, fv, yerr=error_bars([fv], [r.fraction_valid_low.item()],
                                           [r.fraction_valid_high.item()]),
                    fmt="o", color="tab:blue", capsize=4)
    ax.axhline(0.95, color="black", ls="--", lw=1, label="0.95")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_xlabel("analysis")
    ax.set_ylabel("fraction of valid bins")
    ax.set_title("Fraction of valid bins (Wilson-cc 95 % intervals)")
    ax.legend(fontsize="small")
    return ax


def acf(result: xr.Dataset, *, ax=None):
    """Autocorrelation of the per-bin values with the white-noise band ±1.96/√N.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.local import local as lzms
    >>> acf(lzms(xuqcal.synthetic.nig(2000, nu=6, seed=0), n_bins=20, n_boot=200)).get_xlabel()
    'lag (bins)'
    """
    require(result, ("acf", "lag"), "xuqcal.local")
    ax = axes(ax, figsize=(6, 4))
    lags = result.lag.values
    ax.vlines(lags, 0, result.acf.values, color="tab:blue")
    ax.plot(lags, result.acf.values, "o", ms=3, color="tab:blue")
    band = result.attrs["acf_band"]
    ax.axhspan(-band, band, color="0.9", label=f"white noise ±{band:.2f}")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("lag (bins)")
    ax.set_ylabel("autocorrelation")
    ax.set_title(f"ACF of {_LABELS.get(result.attrs['statistic'], '')} per bin of "
                 f"{result.attrs['by']}")
    ax.legend(fontsize="small")
    return ax


def reliability(result: xr.Dataset, *, ax=None, log: bool | None = None):
    """Reliability diagram: RMSE per bin (with its bootstrap interval) against RMV.

    ``log`` draws log-log axes (default: when the RMV values span more than a decade).

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.analysis.local import reliability as rel
    >>> reliability(rel(xuqcal.synthetic.nig(2000, nu=6, seed=0), n_boot=200)).get_xlabel()
    'RMV (root mean variance per bin)'
    """
    require(result, ("rmv", "rmse", "rmse_low", "rmse_high"), "xuqcal.reliability")
    ax = axes(ax, figsize=(5, 5))
    rmv, rmse = result.rmv.values, result.rmse.values
    ax.errorbar(rmv, rmse, yerr=error_bars(rmse, result.rmse_low.values, result.rmse_high.values),
                fmt="o", ms=4, color="tab:blue", label="bins")
    lims = [min(rmv.min(), result.rmse_low.values.min()),
            max(rmv.max(), result.rmse_high.values.max())]
    ax.plot(lims, lims, color="black", ls="--", lw=1, label="RMSE = RMV")
    if log if log is not None else rmv.max() > 10 * rmv.min():
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("RMV (root mean variance per bin)")
    ax.set_ylabel("RMSE (root mean squared error per bin)")
    ax.set_title("Reliability diagram")
    ax.legend(fontsize="small")
    return ax


def order_sensitivity(result: xr.Dataset, *, ax=None):
    """Histogram of the fractions of valid bins over random tie orders.

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
    ax = axes(ax, figsize=(6, 4))
    fv = result.fraction_valid.values
    step = 1.0 / result.attrs["n_bins"]
    edges = np.arange(fv.min() - step / 2, fv.max() + step, step)
    ax.hist(fv, bins=edges, color="tab:blue", alpha=0.7, label="tie orders")
    if "fraction_valid_noisy" in result:
        ax.hist(result.fraction_valid_noisy.values, bins=np.arange(
            0 - step / 2, 1 + step, step), histtype="step", color="tab:orange",
            label="with binomial noise")
    ax.axvline(0.95, color="black", ls="--", lw=1, label="0.95")
    ax.axvspan(result.q025.item(), result.q975.item(), color="0.9", zorder=0,
               label="2.5–97.5 %")
    ax.set_xlabel("fraction of valid bins")
    ax.set_ylabel("number of orders")
    ax.set_title(f"Data-order sensitivity of f_v ({result.attrs['by']})")
    ax.legend(fontsize="small")
    return ax


def adversarial(result: xr.Dataset, *, ax=None):
    """Fraction of random groups whose interval contains the target, with the N(0, 1) control.

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
    ax = axes(ax, figsize=(6, 4))
    size = result["count"].values
    for prefix, low, high, colour, label in (
            ("", "fraction_valid_low", "fraction_valid_high", "tab:blue", "data"),
            ("control_", "control_low", "control_high", "0.5", "control Z ~ N(0, 1)")):
        value = result[f"{prefix}fraction_valid"].values
        ax.errorbar(size, value, yerr=error_bars(value, result[low].values, result[high].values),
                    fmt="o-", color=colour, capsize=3, label=label)
    ax.axhline(0.95, color="black", ls="--", lw=1, label="0.95")
    ax.set_xscale("log")
    ax.set_xlabel("group size")
    ax.set_ylabel("fraction of valid groups")
    ax.set_title("Adversarial group validation")
    ax.legend(fontsize="small")
    return ax
