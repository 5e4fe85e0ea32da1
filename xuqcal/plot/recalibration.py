"""Figures of the post-hoc recalibration (METHODS §8): per-bin <Z²> before and after, the
bin-number scan, the fitted BVS factors and the isotonic variance map.

Like the other figure functions, each draws on ``ax`` (a new figure when ``None``) and returns
the Axes; :func:`scan` draws four panels and returns them as a 1-D NumPy array of Axes. Results,
recalibrators and data with extra dimensions (``model``, ...) are drawn as a grid of panels
(:mod:`xuqcal.plot.facets`); a scan with an extra dimension as one row of four panels per
label.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from xuqcal.plot._common import log_axis, require, series_colour
from xuqcal.plot.facets import (
    FacetGrid,
    Panel,
    check_placed,
    facet,
    slice_value,
    undrawn_dims,
    without_absent_points,
)

_SCAN_PANELS = (("nll", "NLL"), ("ence", "ENCE"), ("s_x", "S_x"),
                ("fraction_valid", "fraction of valid bins f_v"))


def bin_zms(before: xr.Dataset, after: xr.Dataset, ax=None, *, by: str | None = None,
            n_bins: int = 20, log: bool = True, col: str | None = None, row: str | None = None,
            sharex: bool | None = None, sharey: bool | None = None):
    """Per-bin <Z²> before and after recalibration, with the target 1.

    Parameters
    ----------
    before, after : xarray.Dataset
        The same points before and after recalibration (``after = apply(rec, before)``).
        Extra dimensions of ``E`` (``model``, ...) give one panel per slice (along the columns
        by default), points where ``E`` and ``uE`` are both NaN left out.
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
    col, row : str, optional
        Extra dimensions laid out as a grid of panels (:mod:`xuqcal.plot.facets`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis; ``None`` (the default):
        shared unless the panels' sets differ (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

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

    if before.sizes.get("sample") != after.sizes.get("sample") or not (
            np.array_equal(before["sample"].values, after["sample"].values)
            and np.array_equal(before.E.values, after.E.values, equal_nan=True)):
        raise ValueError("before, after: expected the same points (same sample coordinate "
                         "and errors E)")
    if by is not None and by not in before:
        raise ValueError(f"by: the variable {by!r} is not in the dataset")
    scheme_by = str(after.attrs.get("recalibration_by", ""))

    def draw(ax, indexers: dict, p: Panel) -> None:
        one_before = before.isel(indexers)
        one_after = without_absent_points(after.isel(indexers), "E", "uE", like=one_before)
        one_before = without_absent_points(one_before, "E", "uE")
        if by is None and "recalibration_bin" in one_after:
            index = one_after.recalibration_bin.values.astype(np.int64)
            n = int(one_after.attrs.get("recalibration_n_bins", index.max() + 1))
            name = scheme_by
            numeric = ("," not in name and name in one_before
                       and one_before[name].dtype.kind in "iuf")
        else:
            name = "uE" if by is None else by
            index = equal_count(one_before[name].values, n_bins, by=name).bin_index.values
            n = n_bins
            numeric = True
        counts = np.bincount(index, minlength=n)
        present = counts > 0
        if numeric:
            x = np.bincount(index, weights=one_before[name].values.astype(np.float64),
                            minlength=n)[present] / counts[present]
        else:
            x = np.arange(n)[present]
        for data, label, style in ((one_before, "before", dict(mfc="none", color="0.4")),
                                   (one_after, "after", dict(color="tab:blue"))):
            z2 = point_columns(data.E.values, data.uE.values, ["z2"])["z2"]
            zms = STATISTICS["zms"].from_sums({"count": counts[present], "z2": np.bincount(
                index, weights=z2, minlength=n)[present]})
            ax.plot(x, zms, "o", ms=4, label=f"{label} recalibration", **style)
        ax.axhline(1.0, color="black", lw=1, label="target 1")
        if log:
            log_axis(ax, "y")
        if numeric and name == "uE":
            log_axis(ax, "x")
        ax.set_xlabel(f"{name} (mean in the bin)" if numeric else f"bin of {name}")
        ax.set_ylabel("<Z²> per bin")
        general = "<Z²> per bin before and after recalibration"
        detail = f"{int(present.sum())} bins"
        p.title(ax, f"{general} ({detail})", general, detail)
        p.legend(ax, fontsize="small")

    return facet(before[["E", "uE"]], draw, core=("sample",), name="before", ax=ax, col=col,
                 row=row, sharex=sharex, sharey=sharey, figsize=(7, 4))


def _reference_value(data: xr.Dataset | None, key: str, suffix: str):
    if data is None:
        return None
    for name in (key + suffix, key):
        if name in data:
            return data[name]
    return None


def scan(result: xr.Dataset, baseline: xr.Dataset | None = None,
         simulated: xr.Dataset | None = None, axes: Sequence | None = None, *,
         baseline_label: str = "baseline", row: str | None = None):
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
        Where to draw a result without extra dimensions (default: a new 2 × 2 figure).
    baseline_label : str
        Legend label of the baseline lines.
    row : str, optional
        The extra dimension of ``result`` (``model``, ...) drawn as one row of the four panels
        per label (the default for a single extra dimension); ``baseline`` and ``simulated``
        are selected along it when they have it.

    Returns
    -------
    numpy.ndarray or FacetGrid
        The four Axes (NLL, ENCE, S_x, f_v), 1-D; with an extra dimension a
        :class:`~xuqcal.plot.facets.FacetGrid` of shape ``(n_labels, 4)``.

    Raises
    ------
    ValueError
        For more than one extra dimension (select with ``.sel(...)``), a ``row`` that is not
        an extra dimension, or ``axes`` with an extra dimension.

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
    from matplotlib import pyplot as plt

    extra = undrawn_dims(result[[key for key, _ in _SCAN_PANELS]], ("n_bins", "by"))
    check_placed(extra, row=row)
    if not extra:
        if axes is None:
            _, grid = plt.subplots(2, 2, figsize=(11, 7), layout="constrained", sharex=True)
            axes = grid.ravel()
        axes = np.asarray(axes, dtype=object).ravel()
        if axes.size != 4:
            raise ValueError(f"axes: expected 4 Axes (NLL, ENCE, S_x, f_v), got {axes.size}")
        _draw_scan(axes, result, baseline, simulated, baseline_label)
        axes[0].figure.suptitle(_scan_title(result))
        return axes
    row = row or extra[0]
    others = [d for d in extra if d != row]
    if others:
        raise ValueError(f"result: a scan shows one extra dimension (one row of panels per "
                         f"label); {', '.join(map(repr, extra))} given: select slices with "
                         f".sel({others[0]}=...)")
    if axes is not None:
        raise ValueError("axes: a scan with an extra dimension makes its own grid of panels; "
                         "pass axes=None, or select one slice with .sel(...)")
    labels = [str(v) for v in result[row].values]
    fig, grid = plt.subplots(len(labels), 4, figsize=(16, 3.4 * len(labels) + 0.4),
                             layout="constrained", sharex=True, squeeze=False)

    def pick(data: xr.Dataset | None, i: int):
        return data.isel({row: i}) if data is not None and row in data.dims else data

    for i, label in enumerate(labels):
        _draw_scan(grid[i], result.isel({row: i}), pick(baseline, i), pick(simulated, i),
                   baseline_label)
        for ax in grid[i]:
            ax.set_title(f"{row} = {label}", fontsize="medium")
    fig.suptitle(_scan_title(result))
    names = np.empty(grid.shape, dtype=object)
    names[...] = [[{row: label} for _ in range(4)] for label in labels]
    return FacetGrid(fig=fig, axes=grid, row=row, name_dicts=names)


def _scan_title(result: xr.Dataset) -> str:
    return (f"Bin-number scan: BVS on {result.attrs.get('by', '')} "
            f"(loss {result.attrs.get('loss', 'nll')}), test-set scores")


def _draw_scan(axes: np.ndarray, result: xr.Dataset, baseline, simulated,
               baseline_label: str) -> None:
    """The four panels of one scan (NLL, ENCE, S_x, f_v) on ``axes``."""
    from matplotlib.lines import Line2D

    n_b = result.n_bins.values
    by = [str(b) for b in result.by.values]
    for ax, (key, label) in zip(axes, _SCAN_PANELS, strict=True):
        per_by = "by" in result[key].dims
        styles = set()
        for j, b in enumerate(by if per_by else [None]):
            colour = series_colour(j) if per_by else "tab:blue"
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


def scales(recalibrator: xr.Dataset, ax=None, *, col: str | None = None,
           row: str | None = None,
           sharex: bool | None = None, sharey: bool | None = None):
    """The factors of a BVS recalibrator: per bin against the bin centre (1-D), as a map over
    the cells (grid), or per label (groups); the analytic factors ``sqrt(<Z²>_b)`` as open
    markers when a loss moved them.

    A recalibrator with extra dimensions (``model``, ...) gives one panel per slice, along the
    columns by default (``col`` / ``row``: :mod:`xuqcal.plot.facets`).

    ``sharex`` / ``sharey``: whether the panels share their axes; ``None`` (the default)
    shares them unless the panels' sets differ in size or range
    (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal import recalibration as rc
    >>> rec = rc.fit(xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.6), "bvs", n_bins=10)
    >>> scales(rec).get_ylabel()
    'factor s_b'
    """
    require(recalibrator, ("scale",), "xuqcal.recalibration.fit(method='bvs')", "recalibrator")
    if recalibrator.attrs.get("method") != "bvs":
        raise ValueError("recalibrator: scales are drawn for method 'bvs', got "
                         f"{recalibrator.attrs.get('method')!r}")
    scheme = recalibrator.attrs.get("bins_scheme")
    by = str(recalibrator.attrs.get("by"))

    def draw(ax, indexers: dict, p: Panel):
        one = recalibrator.isel(indexers)
        s = one.scale.values
        if scheme == "grid":
            nx = int(one.attrs["bins_n_bins_x"])
            ny = int(one.attrs["bins_n_bins_y"])
            image = ax.pcolormesh(np.arange(nx + 1), np.arange(ny + 1), s.reshape(nx, ny).T,
                                  cmap="viridis", shading="flat", label="factor s_b")
            if p.plain:
                ax.figure.colorbar(image, ax=ax, label="factor s_b")
            ax.set_xlabel(f"bin of {one.attrs['bins_by_x']}")
            ax.set_ylabel(f"bin of {one.attrs['bins_by_y']}")
            title = f"BVS factors on the {nx} × {ny} grid"
            p.title(ax, title, title)
            return image
        if scheme == "groups":
            x = np.arange(s.size)
            ax.set_xticks(x, [str(v) for v in one.bins_label.values])
            ax.set_xlabel(f"group ({by})")
        else:
            x = one.bins_centre.values
            ax.set_xlabel(f"{by} (training bin centre)")
            if by == "uE":
                log_axis(ax, "x")
        ax.plot(x, s, "o", ms=4, color="tab:blue", label=f"s_b (loss {one.attrs['loss']})")
        if not np.array_equal(s, one.scale_analytic.values, equal_nan=True):
            ax.plot(x, one.scale_analytic.values, "o", ms=6, mfc="none", color="0.4",
                    label="analytic sqrt(<Z²>_b)")
        glob = slice_value(one, "global_scale")
        ax.axhline(glob, color="black", ls="--", lw=1, label="temperature factor")
        ax.set_ylabel("factor s_b")
        title = f"BVS factors ({s.size if p.plain else int(np.isfinite(s).sum())} bins of {by})"
        p.title(ax, title, f"BVS factors (bins of {by})", f"temperature factor {glob:.3g}")
        p.legend(ax, fontsize="small")
        return None

    return facet(recalibrator, draw, core=("bin", "bin_x", "bin_y"), variables=("scale",),
                 name="recalibrator", ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, figsize=(7, 4), colorbar=scheme == "grid")


def isotonic_map(recalibrator: xr.Dataset, data: xr.Dataset | None = None, ax=None, *,
                 col: str | None = None, row: str | None = None,
                 sharex: bool | None = None, sharey: bool | None = None):
    """The isotonic variance map uE² → recalibrated uE² (log-log), optionally over the
    training points ``(uE², E²)``, with the identity line.

    A recalibrator with extra dimensions (``model``, ...) gives one panel per slice, along the
    columns by default (``col`` / ``row``: :mod:`xuqcal.plot.facets`); ``data`` is selected
    along the extra dimensions it has.

    ``sharex`` / ``sharey``: whether the panels share their axes; ``None`` (the default)
    shares them unless the panels' sets differ in size or range
    (:func:`~xuqcal.plot.facets.share_axis`).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal import recalibration as rc
    >>> train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.6)
    >>> isotonic_map(rc.fit(train, "isotonic"), train).get_xlabel()
    'uE² (before)'
    """
    require(recalibrator, ("knot_variance_in", "knot_variance_out"),
            "xuqcal.recalibration.fit(method='isotonic')", "recalibrator")
    if recalibrator.attrs.get("method") != "isotonic":
        raise ValueError("recalibrator: expected method 'isotonic', got "
                         f"{recalibrator.attrs.get('method')!r}")

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = recalibrator.isel(indexers)
        x = one.knot_variance_in.values
        y = one.knot_variance_out.values
        keep = np.isfinite(x) & np.isfinite(y)
        x, y = x[keep], y[keep]
        if data is not None:
            points = data.isel({d: i for d, i in indexers.items() if d in data.dims})
            points = without_absent_points(points, "E", "uE")
            e2 = points.E.values ** 2
            shown = e2 > 0
            ax.plot((points.uE.values ** 2)[shown], e2[shown], ".", ms=1, color="0.7",
                    label="training points (uE², E²)")
        ax.plot(x, y, "-", color="tab:blue", lw=1.5, label="isotonic map")
        lims = [min(x.min(), y.min()), max(x.max(), y.max())]
        ax.plot(lims, lims, color="black", ls="--", lw=1, label="identity")
        log_axis(ax, "xy")
        ax.set_xlabel("uE² (before)")
        ax.set_ylabel("recalibrated uE²")
        title = f"Isotonic variance map ({x.size} knots)"
        p.title(ax, title, "Isotonic variance map", f"{x.size} knots")
        p.legend(ax, fontsize="small")

    return facet(recalibrator, draw, core=("knot",), variables=("knot_variance_in",),
                 name="recalibrator", ax=ax, col=col, row=row, sharex=sharex,
                 sharey=sharey, figsize=(5, 5))
