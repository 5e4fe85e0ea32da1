"""Figures of results with extra dimensions (issue 13, items 7 and 9): one line per slice, grids
of panels with ``col=`` / ``row=``, errors for dimensions that cannot be placed; log axes whose
tick labels do not overlap; the log axis of per-bin mean squares."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from plotting import render

import xuqcal
from xuqcal import plot
from xuqcal.analysis import curves
from xuqcal.analysis.features import rank_correlation
from xuqcal.analysis.local import adversarial_groups
from xuqcal.plot._common import log_axis, log_ticks
from xuqcal.plot.facets import FacetGrid
from xuqcal.studies.simulation import zero_bins_extrapolation

LABELS = ["a", "b"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def sets():
    """Two sets of different sizes and calibration (b: heavier tails, uE too small)."""
    a = xuqcal.synthetic.nig(2000, nu=6, seed=1)
    b = xuqcal.synthetic.nig(1500, nu=3, seed=2, uE_scale=0.7)
    return [d.assign(X=d.uE ** 2 + 0.1) for d in (a, b)]


def stack(results, name="model", labels=LABELS, sizes=(2000, 1500)):
    """Single-set results put together along an extra dimension, as the broadcasting analyses
    return them (with the coordinate ``n_samples``)."""
    out = xr.concat(results, dim=pd.Index(labels, name=name), join="outer")
    return out.assign_coords(n_samples=(name, list(sizes)))


#: Line figures: name -> the analysis of one set.
LINE_PLOTS = {
    "local": lambda d: xuqcal.local(d, "zms", n_bins=10, n_boot=100),
    "reliability": lambda d: xuqcal.reliability(d, n_bins=8, n_boot=100),
    "confidence_curve": lambda d: curves.confidence_curve(d, n_mc=40),
    "calibration_curve": curves.calibration_curve,
    "local_coverage": lambda d: curves.local_coverage(d, n_bins=8),
    "running_statistics": lambda d: xuqcal.running_statistics(d, window=51),
    "ablation": lambda d: curves.ablation(d, n_boot=100),
    "zero_bins_extrapolation": zero_bins_extrapolation,
}


@pytest.fixture(scope="module")
def line_results(sets):
    return {name: [compute(d) for d in sets] for name, compute in LINE_PLOTS.items()}


def _legend_texts(legend) -> list[str]:
    return [t.get_text() for t in legend.get_texts()]


@pytest.mark.parametrize("name", list(LINE_PLOTS))
def test_one_extra_dimension_is_one_line_per_slice(line_results, name, tmp_path):
    single = line_results[name]
    result = stack(single)
    ax = getattr(plot, name)(result)
    assert isinstance(ax, Axes)
    legend = ax.get_legend()
    assert legend.get_title().get_text() == "model"
    texts = _legend_texts(legend)
    # the slices come first in the legend, each entry labelled by (and starting with) its label
    head = texts[:4] if name == "ablation" else texts[:2]
    expected = [f"{lab}: Δ{k}" for lab in LABELS for k in ("zms", "rce")] \
        if name == "ablation" else None
    if expected:
        assert head == expected
    else:
        assert [t.split(" (")[0] for t in head] == LABELS
    # each slice in its own colour
    handles = {t: h for h, t in zip(*ax.get_legend_handles_labels(), strict=True)}

    def colour(handle):
        artist = handle.lines[0] if isinstance(handle, ErrorbarContainer) else handle
        return matplotlib.colors.to_hex(artist.get_color())

    assert colour(handles[head[0]]) != colour(handles[head[-1]])
    assert ax.get_xlabel() and ax.get_ylabel()
    render(ax, tmp_path / f"{name}_lines.png")


@pytest.mark.parametrize("name", list(LINE_PLOTS))
def test_col_and_row_give_a_grid_of_panels(line_results, name, tmp_path):
    result = stack(line_results[name])
    function = getattr(plot, name)
    grid = function(result, col="model")
    assert isinstance(grid, FacetGrid) and grid.axes.shape == (1, 2)
    assert grid.col == "model" and grid.row is None and grid.hue is None
    assert [a.get_title().split("\n")[0] for a in grid.axes.ravel()] == ["model = a",
                                                                         "model = b"]
    assert [d["model"] for d in grid.name_dicts.ravel()] == LABELS
    assert grid.fig is grid.figure is grid.axes[0, 0].figure
    assert grid.fig.get_suptitle()
    # one legend for the figure instead of one per panel
    assert all(a.get_legend() is None for a in grid.axes.ravel())
    assert len(grid.fig.legends) == 1
    # shared axes: the y labels only on the first column
    assert grid.axes[0, 0].get_ylabel() and not grid.axes[0, 1].get_ylabel()
    render(grid, tmp_path / f"{name}_col.png")
    grid = function(result, row="model")
    assert grid.axes.shape == (2, 1) and grid.row == "model"
    render(grid, tmp_path / f"{name}_row.png")


@pytest.mark.parametrize("name", list(LINE_PLOTS))
def test_a_single_set_draws_as_before(line_results, name):
    """A result without extra dimension, or a slice of a stacked one, draws the one-set
    figure: same title, labels and legend as the original result."""
    single = line_results[name][1]
    function = getattr(plot, name)
    one = function(single)
    sliced = function(stack(line_results[name]).sel(model="b"))
    for ax in (one, sliced):
        assert isinstance(ax, Axes) and ax.get_legend().get_title().get_text() == ""
    assert one.get_title() == sliced.get_title()
    assert _legend_texts(one.get_legend()) == _legend_texts(sliced.get_legend())
    assert (one.get_xscale(), one.get_yscale()) == (sliced.get_xscale(), sliced.get_yscale())


def test_lines_carry_the_values_of_their_slice(line_results):
    result = stack(line_results["local"])
    ax = plot.local(result)
    for label, one in zip(LABELS, line_results["local"], strict=True):
        valid = one.valid.values.astype(bool)
        shown = valid if valid.any() else ~valid  # the legend entry is on the valid bins if any
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)
                and c.get_label().startswith(f"{label} (f_v = ")]
        assert len(bars) == 1
        np.testing.assert_array_equal(bars[0].lines[0].get_ydata(), one.value.values[shown])
        np.testing.assert_array_equal(bars[0].lines[0].get_xdata(),
                                      one.bin_centre.values[shown])
    # invalid bins are open markers in the colour of their slice
    open_bars = [c for c in ax.containers if c.lines[0].get_markerfacecolor() == "none"]
    assert sum(c.lines[0].get_ydata().size for c in open_bars) == sum(
        int((~one.valid.values.astype(bool)).sum()) for one in line_results["local"])
    fv = float(line_results["local"][0].fraction_valid)
    assert any(t.startswith(f"a (f_v = {fv:.2f}") for t in _legend_texts(ax.get_legend()))
    # running statistics of sets of different lengths: the padding is not drawn
    running = stack(line_results["running_statistics"])
    assert running.sizes["rank"] == 2000 and np.isnan(running.Z.sel(model="b")).sum() == 500
    ax = plot.running_statistics(running)
    means = [line for line in ax.get_lines() if line.get_label() in LABELS]
    assert [np.isfinite(line.get_ydata()).sum() for line in means] == [
        int(np.isfinite(r.running_mean).sum()) for r in line_results["running_statistics"]]


def test_two_extra_dimensions_on_a_grid_with_lines(line_results, tmp_path):
    """model as lines inside each panel, task along the columns (or both on a grid)."""
    result = stack(line_results["reliability"]).expand_dims(task=["t1", "t2", "t3"])
    with pytest.raises(ValueError, match=r"extra dimensions 'task', 'model' cannot all be drawn"
                                         r" on one Axes: pass col= or row= .*\(e\.g\. "
                                         r"col='task'; 'model' is then drawn as one line per "
                                         r"label\)"):
        plot.reliability(result)
    grid = plot.reliability(result, col="task")
    assert grid.axes.shape == (1, 3) and grid.hue == "model"
    assert [a.get_title() for a in grid.axes.ravel()] == ["task = t1", "task = t2", "task = t3"]
    legend = grid.fig.legends[0]
    assert legend.get_title().get_text() == "model"
    assert _legend_texts(legend)[:2] == LABELS
    render(grid, tmp_path / "rel_task.png")
    grid = plot.reliability(result, col="model", row="task")
    assert grid.axes.shape == (3, 2) and grid.hue is None
    assert grid.axes[2, 1].get_title() == "task = t3, model = b"
    assert grid.name_dicts[2, 1] == {"task": "t3", "model": "b"}
    render(grid, tmp_path / "rel_grid.png")


def test_unassignable_dimensions_are_named(line_results):
    result = stack(line_results["local"]).expand_dims(task=["t1", "t2"], seed=[0, 1])
    # three extra dimensions fit a line figure as lines + col + row, but must be placed
    with pytest.raises(ValueError, match=r"^result: the extra dimensions 'task', 'seed', 'model' "
                                         r"cannot all be drawn on one Axes: pass col= and row="):
        plot.local(result)
    assert plot.local(result, col="task", row="seed").axes.shape == (2, 2)
    with pytest.raises(ValueError, match=r"too many extra dimensions for one figure: 'fold', "
                                         r"'model' left over.*\.sel\(model=\.\.\.\)"):
        plot.local(result.expand_dims(fold=[0, 1]), col="task", row="seed")
    with pytest.raises(ValueError, match=r"^col: 'nope' is not an extra dimension of result "
                                         r"\(its extra dimensions are 'task', 'seed', 'model'\)"):
        plot.local(result, col="nope")
    with pytest.raises(ValueError, match=r"^row: 'bin' is not an extra dimension"):
        plot.local(result, row="bin")
    with pytest.raises(ValueError, match=r"^col, row: the same dimension 'task' given twice"):
        plot.local(result, col="task", row="task")
    with pytest.raises(ValueError, match=r"^col: 'model' is not an extra dimension of result "
                                         r"\(it has none"):
        plot.local(line_results["local"][0], col="model")
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match=r"^ax: a grid of panels \(col='task', row='seed'\)"):
        plot.local(result, col="task", row="seed", ax=ax)
    # one extra dimension as lines on given Axes
    assert plot.local(result.isel(task=0, seed=0), ax=ax) is ax


@pytest.fixture(scope="module")
def validations(sets):
    return [xuqcal.validate(d, ["zms", "ence"], n_boot=100, n_mc=100) for d in sets]


def test_zeta_facets_along_the_columns(validations, tmp_path):
    result = stack(validations, name="dataset")
    grid = plot.zeta(result)
    assert isinstance(grid, FacetGrid) and grid.axes.shape == (1, 2) and grid.col == "dataset"
    assert [a.get_title() for a in grid.axes.ravel()] == ["dataset = a", "dataset = b"]
    assert grid.fig.get_suptitle() == "Validation: ζ-scores per scheme"
    for ax, one in zip(grid.axes.ravel(), validations, strict=True):
        bs = next(line for line in ax.get_lines() if line.get_label() == "BS")
        np.testing.assert_array_equal(bs.get_ydata(), one.zeta.sel(scheme="BS").values)
        assert [t.get_text() for t in ax.get_xticklabels()] == ["zms", "ence"]
    assert {"BS", "SimN", "|ζ| ≤ 1 (valid)"} <= set(_legend_texts(grid.fig.legends[0]))
    render(grid, tmp_path / "zeta_col.png")
    assert plot.zeta(result, row="dataset").axes.shape == (2, 1)
    two = result.expand_dims(model=["m1", "m2", "m3"])
    with pytest.raises(ValueError, match=r"extra dimensions 'model', 'dataset' cannot all be "
                                         r"drawn on one Axes: pass col= and row= "
                                         r".*\.sel\(\.\.\.\)"):
        plot.zeta(two)
    # with col taken, the last extra dimension goes along the rows
    grid = plot.zeta(two, col="dataset")
    assert grid.axes.shape == (3, 2) and grid.row == "model"
    with pytest.raises(ValueError, match=r"too many extra dimensions for one figure: 'seed' "
                                         r"left over.*\.sel\(seed=\.\.\.\)"):
        plot.zeta(two.expand_dims(seed=[0, 1]), col="dataset", row="model")
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match=r"^ax: a grid of panels \(col='dataset'\)"):
        plot.zeta(result, ax=ax)
    # the one-set figure is unchanged
    assert isinstance(plot.zeta(validations[0]), Axes)


def test_rank_correlation_heatmaps_share_one_colour_bar(sets, tmp_path):
    matrices = [rank_correlation(d) for d in sets]
    result = stack(matrices)
    grid = plot.rank_correlation(result)
    assert grid.axes.shape == (1, 2)
    assert [a.get_title() for a in grid.axes.ravel()] == ["model = a", "model = b"]
    for ax, one in zip(grid.axes.ravel(), matrices, strict=True):
        np.testing.assert_array_equal(ax.get_images()[0].get_array(), one.values)
    colour_bars = [a for a in grid.fig.axes if a.get_label() == "<colorbar>"]
    assert len(colour_bars) == 1
    render(grid, tmp_path / "rc.png")
    # the matrix dimensions are found by name, wherever the extra dimension is
    assert plot.rank_correlation(result.transpose("variable", "model", "variable2"),
                                 row="model").axes.shape == (2, 1)
    with pytest.raises(ValueError, match="square"):
        plot.rank_correlation(result.isel(variable=[0, 1]))
    with pytest.raises(ValueError, match=r"extra dimensions 'task', 'model' cannot all be drawn"):
        plot.rank_correlation(result.expand_dims(task=["x", "y"]))


def test_fraction_valid_of_several_analyses_and_slices(sets, tmp_path):
    results = {by: stack([xuqcal.local(d, "zms", by=by, n_bins=8, n_boot=100) for d in sets])
               for by in ("uE", "X")}
    ax = plot.fraction_valid(results)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["uE", "X"]
    assert _legend_texts(ax.get_legend())[:2] == LABELS
    lines = {c.get_label(): c.lines[0] for c in ax.containers}
    for label in LABELS:
        expected = [results[by].fraction_valid.sel(model=label).item() for by in ("uE", "X")]
        np.testing.assert_array_equal(lines[label].get_ydata(), expected)
    # the slices are side by side around each analysis
    assert lines["a"].get_xdata()[0] < 0 < lines["b"].get_xdata()[0]
    render(ax, tmp_path / "fv.png")
    assert plot.fraction_valid(results, col="model").axes.shape == (1, 2)


def test_figures_without_lines_facet_their_extra_dimension(sets, tmp_path):
    from xuqcal import recalibration as rc

    local = stack([xuqcal.local(d, "zms", n_bins=10, n_boot=100) for d in sets])
    adversarial = stack([adversarial_groups(d, n_groups=10, n_boot=100, min_count=250)
                         for d in sets])
    recalibrators = [rc.fit(d, "isotonic") for d in sets]
    figures = {
        "acf": plot.acf(local),
        "adversarial": plot.adversarial(adversarial),
        "isotonic_map": plot.isotonic_map(stack(recalibrators), stack(sets)),
        "scales": plot.scales(stack([rc.fit(d, "bvs", n_bins=6) for d in sets])),
    }
    for name, grid in figures.items():
        assert isinstance(grid, FacetGrid) and grid.axes.shape == (1, 2), name
        assert [a.get_title().split("\n")[0] for a in grid.axes.ravel()] == [
            "model = a", "model = b"], name
        render(grid, tmp_path / f"{name}.png")
    # each isotonic panel draws its own set's points (the padding of the smaller set left out)
    points = [next(line for line in a.get_lines() if line.get_label().startswith("training"))
              for a in figures["isotonic_map"].axes.ravel()]
    assert [p.get_xdata().size for p in points] == [int((d.E.values ** 2 > 0).sum())
                                                    for d in sets]


def test_data_figures_facet_over_the_extra_dimensions_of_the_data(sets, tmp_path):
    """error_distribution and bin_zms take data: extra dimensions of E give panels, the NaN
    padding of the shorter set is left out."""
    from xuqcal import recalibration as rc

    data = stack(sets)
    assert np.isnan(data.E.sel(model="b")).sum() == 500
    grid = plot.error_distribution(data, n_sets=2)
    assert grid.axes.shape == (1, 2)
    for ax, one in zip(grid.axes.ravel(), sets, strict=True):
        heights = np.array([p.get_height() for p in ax.patches])
        widths = np.array([p.get_width() for p in ax.patches])
        assert np.sum(heights * widths) == pytest.approx(1.0)  # a density of its own points
        assert ax.patches[0].get_x() == pytest.approx(float(one.E.min()))
    render(grid, tmp_path / "dist.png")
    after = xr.concat([rc.apply(rc.fit(d, "bvs", n_bins=5), d) for d in sets],
                      dim=pd.Index(LABELS, name="model"), join="outer")
    grid = plot.bin_zms(data, after, col="model")
    assert grid.axes.shape == (1, 2)
    render(grid, tmp_path / "bin_zms.png")


def test_scan_draws_one_row_of_panels_per_label(tmp_path):
    from xuqcal import recalibration as rc

    scans = []
    for seed in (0, 1):
        train = xuqcal.synthetic.nig(600, nu=6, seed=seed, uE_scale=0.5)
        test = xuqcal.synthetic.nig(600, nu=6, seed=seed + 10, uE_scale=0.5)
        scans.append(rc.scan(train, test, n_bins=[2, 3], features=(), n_bins_scores=5,
                             n_boot=50))
    grid = plot.recalibration_scan(stack(scans, sizes=(600, 600)))
    assert grid.axes.shape == (2, 4) and grid.row == "model"
    assert [a.get_ylabel() for a in grid.axes[1]] == ["NLL", "ENCE", "S_x",
                                                     "fraction of valid bins f_v"]
    assert grid.axes[1, 0].get_title() == "model = b"
    np.testing.assert_array_equal(grid.axes[1, 0].get_lines()[0].get_ydata(),
                                  scans[1].nll.values.ravel())
    render(grid, tmp_path / "scan.png")
    with pytest.raises(ValueError, match=r"one extra dimension .*'task', 'model' given: select "
                                         r"slices with \.sel\(model=\.\.\.\)"):
        plot.recalibration_scan(stack(scans, sizes=(600, 600)).expand_dims(task=["x", "y"]))


def test_the_accessor_passes_col_and_row_through(sets):
    ds = sets[0]
    for name, kwargs in (("local", {"n_bins": 5, "n_boot": 50}),
                         ("reliability", {"n_bins": 5, "n_boot": 50}),
                         ("calibration_curve", {}), ("zscores", {})):
        with pytest.raises(ValueError, match=r"^col: 'model' is not an extra dimension"):
            getattr(ds.uqcal.plot, name)(col="model", **kwargs)
        with pytest.raises(ValueError, match=r"^row: 'model' is not an extra dimension"):
            getattr(ds.uqcal.plot, name)(row="model", **kwargs)
    assert ds.uqcal.plot.local("zms", n_bins=5, n_boot=50, log=False).get_yscale() == "linear"


# ------------------------------------------------------------------- readable log axes


def _overlapping_tick_labels(ax) -> tuple[list, dict]:
    """Pairs of visible tick labels (major and minor) of an axis whose boxes overlap, and the
    number of visible labels per axis."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    overlaps, counts = [], {}
    for axis in (ax.xaxis, ax.yaxis):
        low, high = sorted(axis.get_view_interval())
        boxes = []
        for locs, labels in ((axis.get_majorticklocs(), axis.get_majorticklabels()),
                             (axis.get_minorticklocs(), axis.get_minorticklabels())):
            for loc, label in zip(locs, labels, strict=False):
                if label.get_visible() and label.get_text() and low <= loc <= high:
                    boxes.append((label.get_text(), label.get_window_extent(renderer)))
        counts[axis.axis_name] = len(boxes)
        overlaps += [(axis.axis_name, a, b) for i, (a, box) in enumerate(boxes)
                     for b, other in boxes[i + 1:] if box.overlaps(other)]
    return overlaps, counts


def _log_sets():
    """The 265-point set of the issue at several scales, and wide ranges of uE."""
    out = {f"nig265_scale{s}": xuqcal.synthetic.nig(265, nu=6, seed=1, uE_scale=s)
           for s in (1.0, 0.3, 0.01)}
    out["nig265_nu3"] = xuqcal.synthetic.nig(265, nu=3, seed=1, uE_scale=0.3)
    rng = np.random.default_rng(3)
    for decades in (2, 6):
        u = 10.0 ** rng.uniform(-decades / 2, decades / 2, 265)
        out[f"wide{decades}"] = xuqcal.from_arrays(u * rng.standard_normal(265), u)
    return out


LOG_SETS = _log_sets()


@pytest.mark.parametrize("key", list(LOG_SETS))
def test_log_axis_tick_labels_do_not_overlap(key):
    ds = LOG_SETS[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xuqcal.UndefinedStatisticWarning)
        figures = {
            "reliability": plot.reliability(xuqcal.reliability(ds, n_bins=10, n_boot=50),
                                            log=True),
            "zscores": plot.zscores(ds),
            "local": plot.local(xuqcal.local(ds, "zms", n_bins=8, n_boot=50)),
            "local_coverage": plot.local_coverage(curves.local_coverage(ds, n_bins=8)),
        }
    two = stack([xuqcal.running_statistics(d) for d in (ds, ds.isel(sample=slice(0, 200)))],
                sizes=(265, 200))
    figures["running_col"] = plot.running_statistics(two, col="model").axes[0, 1]
    figures["reliability_small"] = plot.reliability(xuqcal.reliability(ds, n_bins=10, n_boot=50),
                                                    log=True)
    figures["reliability_small"].figure.set_size_inches(3.2, 3.2)
    for name, ax in figures.items():
        assert ax.get_xscale() == "log", name
        overlaps, counts = _overlapping_tick_labels(ax)
        assert not overlaps, (name, overlaps)
        assert counts["x"] >= 2, (name, counts)  # the axis is still labelled
        if ax.get_yscale() == "log":
            assert counts["y"] >= 2, (name, counts)


def test_literature_sets_have_readable_log_axes(load_set):
    """Narrow (0.11-0.30) and wide (0.002-1.4) uE ranges of the literature sets."""
    for k in (2, 5, 9):
        ds = load_set(k)
        for ax in (plot.zscores(ds),
                   plot.reliability(xuqcal.reliability(ds, n_bins=20, n_boot=50), log=True)):
            overlaps, counts = _overlapping_tick_labels(ax)
            assert not overlaps and counts["x"] >= 2, (k, overlaps, counts)
            plt.close(ax.figure)


def test_log_ticks_fit_their_axis():
    rng = np.random.default_rng(0)
    for _ in range(200):
        low = 10.0 ** rng.uniform(-8, 8)
        high = low * 10.0 ** rng.uniform(0.01, 12)
        length = rng.uniform(60, 600)
        ticks = log_ticks(low, high, length)
        assert ticks.size >= 1
        assert np.all((ticks >= low * (1 - 1e-9)) & (ticks <= high * (1 + 1e-9)))
        if ticks.size > 1:
            positions = np.log10(ticks / low) / np.log10(high / low) * length
            assert np.min(np.diff(positions)) >= 15  # ~ two tick-label widths of 10 pt apart
    assert log_ticks(0.55, 0.95, 300).tolist() == pytest.approx([0.6, 0.7, 0.8, 0.9])
    assert log_ticks(0.05, 2.0, 300).tolist() == pytest.approx([0.05, 0.1, 0.2, 0.5, 1, 2])
    with pytest.raises(ValueError, match="which"):
        log_axis(plt.subplots()[1], "z")


# --------------------------------------------------------- log axis of per-bin statistics


@pytest.fixture(scope="module")
def calibrated():
    return xuqcal.synthetic.nig(2000, nu=6, seed=5)


@pytest.mark.parametrize(("statistic", "scale"), [("zms", "log"), ("zv", "log"),
                                                  ("zm", "linear"), ("rce", "linear")])
def test_local_mean_squares_on_a_log_axis(calibrated, statistic, scale, tmp_path):
    result = xuqcal.local(calibrated, statistic, n_bins=8, n_boot=100)
    ax = plot.local(result)
    assert ax.get_yscale() == scale
    assert plot.local(result, log=False).get_yscale() == "linear"  # log= overrides
    if scale == "log":
        assert plot.local(result, log=True).get_yscale() == "log"
    # the stacked result follows the same rule
    assert plot.local(stack([result, result])).get_yscale() == scale
    render(ax, tmp_path / f"local_{statistic}.png")


def test_local_log_axis_needs_positive_values(calibrated):
    result = xuqcal.local(calibrated, "zm", n_bins=8, n_boot=100)
    assert (result.value < 0).any()
    with pytest.raises(ValueError, match=r"^log: a logarithmic axis needs positive values of zm"):
        plot.local(result, log=True)


def test_local_coverage_bars_of_intervals_ending_at_the_estimate(sets):
    """local_coverage draws its bars with error_bars like plot.local: an interval bound that
    ends a rounding error short of the estimate gives a bar of length 0, not a matplotlib
    error about negative yerr."""
    result = curves.local_coverage(sets[0], n_bins=8)
    high = result.ci_high.values.copy()
    high[0] = result.coverage.values[0] - 1e-12
    for drawn in (result.assign(ci_high=("bin", high)), stack([result, result]).assign(
            ci_high=(("model", "bin"), np.stack([high, high])))):
        ax = plot.local_coverage(drawn)
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert bars and all(np.all(np.isfinite(c.lines[0].get_ydata())) for c in bars)
