"""Rough edges of the figures (issue 22, item 5): panels of sets of different sizes get their own
scales (``sharex`` / ``sharey``), the ζ figure clips its axis at ±``clip`` and marks the points
beyond, the PIT band is drawn beneath the bars."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from plotting import render

import xuqcal
from xuqcal import plot
from xuqcal.analysis import curves
from xuqcal.analysis.probabilistic import pit
from xuqcal.plot.facets import FacetGrid, share_axis
from xuqcal.plot.pit_histogram import BAND_ZORDER, BARS_ZORDER
from xuqcal.plot.validation import ZETA_CLIP


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def uneven():
    """A set of 5000 points and one of 265 (the sizes of the logP and vertical-IP sets)."""
    return xuqcal.stack_datasets({"big": xuqcal.synthetic.nig(5000, nu=6, seed=1),
                                  "small": xuqcal.synthetic.nig(265, nu=6, seed=2)},
                                 dim="model")


@pytest.fixture(scope="module")
def even():
    """Two sets of 2000 points from the same model."""
    return xuqcal.stack_datasets({"a": xuqcal.synthetic.nig(2000, nu=6, seed=3),
                                  "b": xuqcal.synthetic.nig(2000, nu=6, seed=4)}, dim="model")


def _shared(grid: FacetGrid, which: str) -> bool:
    a, b = grid.axes.ravel()
    group = a.get_shared_x_axes() if which == "x" else a.get_shared_y_axes()
    return group.joined(a, b)


def _uneven_grids(ds, **share):
    """The three figures of the issue, one panel per set."""
    return {
        "pit": plot.pit(pit(ds), col="model", **share),
        "local": plot.local(xuqcal.local(ds, "zms", by="uE", n_bins=10, n_boot=100),
                            col="model", **share),
        "local_coverage": plot.local_coverage(curves.local_coverage(ds, n_bins=10),
                                              col="model", **share),
    }


# -- 1. sharex / sharey -------------------------------------------------------------------------


def test_sets_of_different_sizes_get_their_own_y_scales(uneven, tmp_path):
    for name, grid in _uneven_grids(uneven).items():
        big, small = grid.axes.ravel()
        assert not _shared(grid, "y"), name
        # each panel labelled and ticked on its own y axis
        assert big.get_ylabel() and small.get_ylabel() == big.get_ylabel(), name
        assert all(t.label1.get_visible() for t in small.yaxis.get_major_ticks()), name
        render(grid, tmp_path / f"{name}.png")
    # the small set's counts fill its own panel instead of 1/19 of the big one's
    counts = _uneven_grids(uneven)["pit"]
    big, small = counts.axes.ravel()
    expected_small = 265 / xuqcal.core.defaults.N_BINS_PIT
    assert small.get_ylim()[1] < 4 * expected_small < big.get_ylim()[1]


def test_sets_of_different_sizes_share_x_only_where_the_panels_agree(uneven):
    grids = _uneven_grids(uneven)
    # PIT: [0, 1] in both panels, so the x axis is shared (tick labels on the bottom row only)
    assert _shared(grids["pit"], "x")
    # by uE: each set's own range of uE
    assert not _shared(grids["local"], "x")
    assert not _shared(grids["local_coverage"], "x")


def test_explicit_sharing_is_obeyed(uneven):
    for name, grid in _uneven_grids(uneven, sharex=True, sharey=True).items():
        big, small = grid.axes.ravel()
        assert _shared(grid, "x") and _shared(grid, "y"), name
        assert big.get_ylim() == small.get_ylim(), name
        assert not small.get_ylabel(), name  # the inner panel's label is left out
    for name, grid in _uneven_grids(uneven, sharex=False, sharey=False).items():
        assert not _shared(grid, "x") and not _shared(grid, "y"), name


def test_similar_sets_still_share_their_axes(even):
    for name, grid in _uneven_grids(even).items():
        a, b = grid.axes.ravel()
        assert _shared(grid, "y"), name
        assert a.get_ylim() == b.get_ylim(), name
        assert a.get_ylabel() and not b.get_ylabel(), name


def test_shared_by_default_is_the_figure_shared_from_the_start(even):
    """Sharing decided after drawing gives the limits of ``plt.subplots(sharey=True)``."""
    values = pit(even)
    default = plot.pit(values, col="model")
    forced = plot.pit(values, col="model", sharex=True, sharey=True)
    for a, b in zip(default.axes.ravel(), forced.axes.ravel(), strict=True):
        assert a.get_ylim() == b.get_ylim() and a.get_xlim() == b.get_xlim()


def test_counts_without_the_n_samples_coordinate(uneven):
    """PIT values put together by hand (no ``n_samples``): counted along ``sample``."""
    values = pit(uneven).drop_vars("n_samples", errors="ignore")
    assert "n_samples" not in values.coords
    grid = plot.pit(values, col="model")
    assert not _shared(grid, "y")


def test_the_accessor_passes_sharing_through(uneven):
    assert not _shared(uneven.uqcal.plot.pit(col="model"), "y")
    assert _shared(uneven.uqcal.plot.pit(col="model", sharey=True), "y")
    grid = uneven.uqcal.plot.local_coverage(col="model", n_bins=8, sharey=True)
    assert _shared(grid, "y")
    grid = uneven.uqcal.plot.local("zms", col="model", n_bins=8, n_boot=50, sharey=True)
    assert _shared(grid, "y")


def test_share_axis_rule():
    _, (a, b) = plt.subplots(1, 2)
    a.plot([0, 1], [0, 1])
    b.plot([0, 1], [0, 0.9])
    assert share_axis([a, b], "y")
    assert share_axis([a, b], "y", counts=[1000, 2000])  # a factor 2: still shared
    assert not share_axis([a, b], "y", counts=[1000, 2001])
    assert share_axis([a, b], "x", counts=[5000, 265])  # identical limits: always shared
    _, (c, d) = plt.subplots(1, 2)
    c.plot([0, 1], [0.1, 0.2])
    d.plot([0, 1], [1.0, 2.0])
    assert not share_axis([c, d], "y")  # no value in common
    c.set_yscale("log")
    assert not share_axis([c, d], "y")  # log next to linear
    _, (e, f) = plt.subplots(1, 2)
    e.plot([0, 1], [0, 1])
    f.plot([0, 1], [0, 6])  # e spans 1/6 of the two together
    assert not share_axis([e, f], "y")
    f.plot([0, 1], [0, 4])
    f.set_ylim(0, 4.5)  # 1.05 / 4.5 > 1/5
    assert share_axis([e, f], "y")
    with pytest.raises(ValueError, match="which"):
        share_axis([e, f], "z")


@pytest.mark.parametrize("value", ["yes", 1.0, [True]])
def test_sharing_must_be_a_bool_or_none(even, value):
    with pytest.raises(ValueError, match="sharey: expected True, False or None"):
        plot.pit(pit(even), col="model", sharey=value)


# -- 2. the ζ figure clipped at ±clip -----------------------------------------------------------


def _validation(zeta: np.ndarray) -> xr.Dataset:
    """A result of ``validate`` as the figure reads it: ζ over (statistic, scheme)."""
    statistics, schemes = ["zms", "rce", "ence"], ["BS", "SimN", "Sim2N"]
    return xr.Dataset(
        {"zeta": (("statistic", "scheme"), np.asarray(zeta, dtype=np.float64)),
         "verdict_scheme": ("statistic", ["BS", "BS", "SimN"]),
         "scheme_generator": ("scheme", ["", "normal", "normal"])},
        coords={"statistic": statistics, "scheme": schemes})


ZETA = np.array([[-58.0, 0.4, 0.9], [0.5, -0.2, 1.5], [2.0, 12.5, 3.0]])


def _markers(ax, marker: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for line in ax.get_lines() if line.get_marker() == marker
            for x, y in zip(*line.get_data(), strict=True) if np.isfinite(y)]


def test_zeta_axis_is_clipped_and_the_clipped_points_marked(tmp_path):
    ax = plot.zeta(_validation(ZETA))
    assert ZETA_CLIP == 10.0
    low, high = ax.get_ylim()
    # the axis spans the clipped range (and its margins), not -58
    assert -11.5 < low < -10 and 10 < high < 11.5
    # -58 and 12.5 drawn at the edges as triangles pointing outwards, values written beside
    width = 0.8 / 3
    assert _markers(ax, "v") == [(0 - 0.4 + width * 0.5, -10.0)]
    assert _markers(ax, "^") == [(2 - 0.4 + width * 1.5, 10.0)]
    assert sorted(t.get_text() for t in ax.texts) == ["12.5", "−58"]
    # ... and not again as ordinary points
    plotted = [y for line in ax.get_lines() if line.get_label() in ("BS", "SimN", "Sim2N")
               for y in line.get_ydata()]
    assert not any(abs(y) > 10 for y in plotted if np.isfinite(y))
    # the deciding circle of zms sits on the clipped point
    (circle,) = [line for line in ax.get_lines() if line.get_label() == "decides the verdict"]
    assert circle.get_ydata()[0] == -10.0
    # the edges are marked and explained
    labels = ax.get_legend_handles_labels()[1]
    assert "|ζ| > 10: at ±10, value written" in labels and "|ζ| ≤ 1 (valid)" in labels
    edges = sorted(line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == ":")
    assert edges == [-10.0, 10.0]
    render(ax, tmp_path / "zeta_clipped.png")


def test_zeta_keeps_the_band_of_validity():
    ax = plot.zeta(_validation(ZETA))
    (band,) = [p for p in ax.patches if p.get_label() == "|ζ| ≤ 1 (valid)"]
    ys = band.get_path().transformed(band.get_patch_transform()).vertices[:, 1] \
        if isinstance(band, Rectangle) else band.get_xy()[:, 1]
    assert sorted({float(y) for y in ys}) == [-1.0, 1.0]


def test_zeta_clip_is_a_keyword():
    ax = plot.zeta(_validation(ZETA), clip=None)
    assert ax.get_ylim()[0] < -58 and not ax.texts and not _markers(ax, "v")
    ax = plot.zeta(_validation(ZETA), clip=60)
    assert not ax.texts
    ax = plot.zeta(_validation(ZETA), clip=2.5)
    assert sorted(t.get_text() for t in ax.texts) == ["12.5", "3", "−58"]
    for bad in (1.0, 0.5, -3, True, "10", np.inf):
        with pytest.raises(ValueError, match="clip: expected a number above 1"):
            plot.zeta(_validation(ZETA), clip=bad)


def test_zeta_within_the_clip_draws_as_before():
    inside = np.array([[-4.0, 0.4, 0.9], [0.5, -0.2, 1.5], [2.0, 8.5, 3.0]])
    clipped, plain = plot.zeta(_validation(inside)), plot.zeta(_validation(inside), clip=None)
    assert clipped.get_ylim() == plain.get_ylim()
    assert len(clipped.get_lines()) == len(plain.get_lines()) and not clipped.texts


def test_zeta_nan_and_infinite_scores():
    values = ZETA.copy()
    values[1, 1], values[1, 2] = np.nan, -np.inf
    ax = plot.zeta(_validation(values))
    assert sorted(t.get_text() for t in ax.texts) == ["12.5", "−58", "−inf"]
    assert -11.5 < ax.get_ylim()[0]


def test_zeta_clip_through_the_accessor_and_grids():
    ds = xuqcal.synthetic.nig(300, nu=6, seed=0)
    result = xr.concat([_validation(ZETA), _validation(ZETA / 10)], dim="model")
    result = result.assign_coords(model=["far", "near"])
    grid = plot.zeta(result, col="model")
    far, near = grid.axes.ravel()
    assert [t.get_text() for t in far.texts] == ["−58", "12.5"] and not near.texts
    ax = ds.uqcal.plot.zeta(_validation(ZETA), clip=20)
    assert [t.get_text() for t in ax.texts] == ["−58"]


# -- 3. the PIT band beneath the bars -----------------------------------------------------------


def test_pit_band_is_drawn_beneath_the_bars():
    ax = plot.pit(pit(xuqcal.synthetic.nig(1000, nu=6, seed=0)))
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_width() < 1]
    assert len(bars) == xuqcal.core.defaults.N_BINS_PIT
    assert band.get_zorder() == BAND_ZORDER < BARS_ZORDER
    assert all(band.get_zorder() < bar.get_zorder() for bar in bars)
    (expected,) = [line for line in ax.get_lines() if line.get_label() == "expected count"]
    assert expected.get_zorder() > max(bar.get_zorder() for bar in bars)
    # the legend as before the change
    assert ax.get_legend_handles_labels()[1] == ["95% band per bin (uniform)", "expected count",
                                                 "PIT values"]
    assert isinstance(expected, Line2D)
