"""Figures of the post-hoc recalibration (METHODS §8): per-bin <Z²> before and after, the
bin-number scan, the fitted BVS factors and the isotonic variance map.

Like the other figure functions, each draws on ``ax`` (a new figure when ``None``) and returns
the Axes; :func:`scan` draws four panels and returns them as a 1-D NumPy array of Axes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from xuqcal.plot._common import GENERATOR_COLOURS, axes, require

_SCAN_PANELS = (("nll", "NLL"), ("ence", "ENCE"), ("s_x", "S_x"),
                ("fraction_valid", "fraction of valid bins f_v"))


def _colour(i: int) -> str:
    return GENERATOR_COLOURS[i % len(GENERATOR_COLOURS)]


def bin_zms(before: xr.Dataset, after: xr.Dataset, ax=None, *, by: str | None = None,
            n_bins: int = 20, log: bool = True):
    """Per-bin <Z²> before and after recalibration, with the target 1.

    Parameters
    ----------
    before, after : xarray.Dataset
        The same points before and after recalibration (``after = apply(rec, before)``).
    ax : matplotlib Axes, optional
    by : str, optional
        Binning variable (of ``before``). By default the recalibration bins of ``after``
        (``recalibration_bin``, BVS) are used; without them, ``n_bins`` equal-count bins of
        ``uE`` of ``before``. Bins are drawn at the mean value of ``by`` in the bin (1-D bins)
        or at their number (grids, groups); bins with no point are skipped.
    n_bins : int
        Number of equal-count bins when no recalibration bins are used.
    log : bool
        Logarithmic <Z²> axis (default), where under- and over-estimation look symmetric.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal import recalibration as rc
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.6)
    >>> bin_zms(ds, rc.apply(rc.fit(ds, "bvs", n_bins=10), ds)).get_ylabel()
    '<Z²> per bin'
    """
    from xuqcal.analysis.binning import equal_count
    from xuqcal.core.statistics import STATISTICS, point_columns

    ax = axes(ax, figsize=(7, 4))
    if before.sizes.get("sample") != after.sizes.get("sample") or not (
            np.array_equal(before["sample"].values, after["sample"].values)
            and np.array_equal(before.E.values, after.E.values)):
        raise ValueError("before, after: expected the same points (same sample coordinate "
                         "and errors E)")
    scheme_by = str(after.attrs.get("recalibration_by", ""))
    if by is None and "recalibration_bin" in after:
        index = after.recalibration_bin.values
        n = int(after.attrs.get("recalibration_n_bins", index.max() + 1))
        name = scheme_by
        numeric = "," not in name and name in before and before[name].dtype.kind in "iuf"
    else:
        name = "uE" if by is None else by
        if name not in before:
            raise ValueError(f"by: the variable {name!r} is not in the dataset")
        index = equal_count(before[name].values, n_bins, by=name).bin_index.values
        n = n_bins
        numeric = True
    counts = np.bincount(index, minlength=n)
    present = counts > 0
    if numeric:
        x = np.bincount(index, weights=before[name].values.astype(np.float64),
                        minlength=n)[present] / counts[present]
    else:
        x = np.arange(n)[present]
    for data, label, style in ((before, "before", dict(mfc="none", color="0.4")),
                               (after, "after", dict(color="tab:blue"))):
        z2 = point_columns(data.E.values, data.uE.values, ["z2"])["z2"]
        zms = STATISTICS["zms"].from_sums({"count": counts[present], "z2": np.bincount(
            index, weights=z2, minlength=n)[present]})
        ax.plot(x, zms, "o", ms=4, label=f"{label} recalibration", **style)
    ax.axhline(1.0, color="black", lw=1, label="target 1")
    if log:
        ax.set_yscale("log")
    if numeric and name == "uE":
        ax.set_xscale("log")
    ax.set_xlabel(f"{name} (mean in the bin)" if numeric else f"bin of {name}")
    ax.set_ylabel("<Z²> per bin")
    ax.set_title(f"<Z²> per bin before and after recalibration ({int(present.sum())} bins)")
    ax.legend(fontsize="small")
    return ax


def _reference_value(data: xr.Dataset | None, key: str, suffix: str):
    if data is None:
        return None
    for name in (key + suffix, key):
        if name in data:
            return data[name]
    return None


def scan(result: xr.Dataset, baseline: xr.Dataset | None = None,
         simulated: xr.Dataset | None = None, axes: Sequence | None = None, *,
         baseline_label: str = "baseline"):
    """Test-set scores against the number of bins N_B (a :func:`xuqcal.recalibration.scan`).

    Four panels: NLL, ENCE, S_x and f_v (one line per score variable ``by``, with the
    Wilson-cc band of f_v and the target 0.95).

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.recalibration.scan`.
    baseline : xarray.Dataset, optional
        Scores of another method (a :func:`~xuqcal.recalibration.scores` result or one
        ``dataset`` of an :func:`~xuqcal.recalibration.evaluate` table): dashed lines.
    simulated : xarray.Dataset, optional
        Simulated values (an :func:`~xuqcal.recalibration.evaluate` row, whose
        ``<score>_simulated`` variables are used, or plain score variables): dotted lines.
    axes : sequence of 4 Axes, optional
        Where to draw (default: a new 2 × 2 figure).
    baseline_label : str
        Legend label of the baseline lines.

    Returns
    -------
    numpy.ndarray
        The four Axes (NLL, ENCE, S_x, f_v), 1-D.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal import recalibration as rc
    >>> train = xuqcal.synthetic.nig(1000, nu=6, seed=0, uE_scale=0.5)
    >>> test = xuqcal.synthetic.nig(1000, nu=6, seed=1, uE_scale=0.5)
    >>> r = rc.scan(train, test, n_bins=[2, 3, 5], features=(), n_bins_scores=10, n_boot=100)
    >>> [a.get_ylabel() for a in scan(r)][:2]
    ['NLL', 'ENCE']
    """
    require(result, ("n_bins", "fraction_valid_low", "fraction_valid_high"),
            "xuqcal.recalibration.scan")
    if axes is None:
        import matplotlib.pyplot as plt

        _, grid = plt.subplots(2, 2, figsize=(11, 7), layout="constrained", sharex=True)
        axes = grid.ravel()
    axes = np.asarray(axes, dtype=object).ravel()
    if axes.size != 4:
        raise ValueError(f"axes: expected 4 Axes (NLL, ENCE, S_x, f_v), got {axes.size}")
    from matplotlib.lines import Line2D

    n_b = result.n_bins.values
    by = [str(b) for b in result.by.values]
    for ax, (key, label) in zip(axes, _SCAN_PANELS, strict=True):
        per_by = "by" in result[key].dims
        styles = set()
        for j, b in enumerate(by if per_by else [None]):
            colour = _colour(j) if per_by else "tab:blue"
            values = result[key].sel(by=b) if per_by else result[key]
            ax.plot(n_b, values.values, "o-", ms=3, lw=1, color=colour,
                    label=f"{b}" if per_by else "BVS")
            if key == "fraction_valid":
                ax.fill_between(n_b, result.fraction_valid_low.sel(by=b).values,
                                result.fraction_valid_high.sel(by=b).values, color=colour,
                                alpha=0.15, lw=0)
            for data, suffix, ls in ((baseline, "", "--"), (simulated, "_simulated", ":")):
                value = _reference_value(data, key, suffix)
                if value is None:
                    continue
                if per_by and "by" in value.dims:
                    if b not in value.by.values:
                        continue
                    value = value.sel(by=b)
                v = float(value.values)
                if np.isfinite(v):
                    ax.axhline(v, color=colour, ls=ls, lw=1)
                    styles.add(ls)
        handles, _ = ax.get_legend_handles_labels()
        for ls, what in (("--", baseline_label), (":", "simulated")):
            if ls in styles:
                handles.append(Line2D([], [], color="0.3", ls=ls, lw=1, label=what))
        if key == "fraction_valid":
            handles.append(ax.axhline(0.95, color="black", lw=1, label="target 0.95"))
        ax.set_ylabel(label)
        ax.set_xlabel("number of bins N_B")
        ax.legend(handles=handles, fontsize="x-small", ncols=2,
                  loc="lower right" if key == "fraction_valid" else "best")
    axes[0].figure.suptitle(f"Bin-number scan: BVS on {result.attrs.get('by', '')} "
                            f"(loss {result.attrs.get('loss', 'nll')}), test-set scores")
    return axes


def scales(recalibrator: xr.Dataset, ax=None):
    """The factors of a BVS recalibrator: per bin against the bin centre (1-D), as a map over
    the cells (grid), or per label (groups); the analytic factors ``sqrt(<Z²>_b)`` as open
    markers when a loss moved them.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal import recalibration as rc
    >>> rec = rc.fit(xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.6), "bvs", n_bins=10)
    >>> scales(rec).get_ylabel()
    'factor s_b'
    """
    if recalibrator.attrs.get("method") != "bvs":
        raise ValueError("recalibrator: scales are drawn for method 'bvs', got "
                         f"{recalibrator.attrs.get('method')!r}")
    ax = axes(ax, figsize=(7, 4))
    scheme = recalibrator.attrs.get("bins_scheme")
    s = recalibrator.scale.values
    by = str(recalibrator.attrs.get("by"))
    if scheme == "grid":
        nx = int(recalibrator.attrs["bins_n_bins_x"])
        ny = int(recalibrator.attrs["bins_n_bins_y"])
        image = ax.pcolormesh(np.arange(nx + 1), np.arange(ny + 1), s.reshape(nx, ny).T,
                              cmap="viridis", shading="flat")
        ax.figure.colorbar(image, ax=ax, label="factor s_b")
        ax.set_xlabel(f"bin of {recalibrator.attrs['bins_by_x']}")
        ax.set_ylabel(f"bin of {recalibrator.attrs['bins_by_y']}")
        ax.set_title(f"BVS factors on the {nx} × {ny} grid")
        return ax
    if scheme == "groups":
        x = np.arange(s.size)
        ax.set_xticks(x, [str(v) for v in recalibrator.bins_label.values])
        ax.set_xlabel(f"group ({by})")
    else:
        x = recalibrator.bins_centre.values
        ax.set_xlabel(f"{by} (training bin centre)")
        if by == "uE":
            ax.set_xscale("log")
    ax.plot(x, s, "o", ms=4, color="tab:blue", label=f"s_b (loss {recalibrator.attrs['loss']})")
    if not np.array_equal(s, recalibrator.scale_analytic.values):
        ax.plot(x, recalibrator.scale_analytic.values, "o", ms=6, mfc="none", color="0.4",
                label="analytic sqrt(<Z²>_b)")
    ax.axhline(float(recalibrator.attrs["global_scale"]), color="black", ls="--", lw=1,
               label="temperature factor")
    ax.set_ylabel("factor s_b")
    ax.set_title(f"BVS factors ({s.size} bins of {by})")
    ax.legend(fontsize="small")
    return ax


def isotonic_map(recalibrator: xr.Dataset, data: xr.Dataset | None = None, ax=None):
    """The isotonic variance map uE² → recalibrated uE² (log-log), optionally over the
    training points ``(uE², E²)``, with the identity line.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal import recalibration as rc
    >>> train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.6)
    >>> isotonic_map(rc.fit(train, "isotonic"), train).get_xlabel()
    'uE² (before)'
    """
    if recalibrator.attrs.get("method") != "isotonic":
        raise ValueError("recalibrator: expected method 'isotonic', got "
                         f"{recalibrator.attrs.get('method')!r}")
    ax = axes(ax, figsize=(5, 5))
    x = recalibrator.knot_variance_in.values
    y = recalibrator.knot_variance_out.values
    if data is not None:
        e2 = data.E.values ** 2
        keep = e2 > 0
        ax.plot((data.uE.values ** 2)[keep], e2[keep], ".", ms=1, color="0.7",
                label="training points (uE², E²)")
    ax.plot(x, y, "-", color="tab:blue", lw=1.5, label="isotonic map")
    lims = [min(x.min(), y.min()), max(x.max(), y.max())]
    ax.plot(lims, lims, color="black", ls="--", lw=1, label="identity")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("uE² (before)")
    ax.set_ylabel("recalibrated uE²")
    ax.set_title(f"Isotonic variance map ({x.size} knots)")
    ax.legend(fontsize="small")
    return ax
