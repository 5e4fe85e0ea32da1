"""The report computes the PIT of a data set once: its test feeds the histogram, the results
and the summary; xuqcal.plot.pit draws a PIT test as it is."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis import probabilistic
from xuqcal.plot.facets import FacetGrid
from xuqcal.plot.pit_histogram import pit as plot_pit
from xuqcal.report import report


def _drawn(ax) -> tuple:
    """What a PIT histogram shows: bar heights, band outline, expected line, title."""
    bars = [(p.get_x(), p.get_height()) for p in ax.patches]
    band = [np.asarray(c.get_paths()[0].vertices).tolist() for c in ax.collections]
    lines = [np.asarray(line.get_ydata()).tolist() for line in ax.lines]
    return bars, band, lines, ax.get_title()


def test_plot_pit_of_the_test_draws_what_the_values_draw():
    ds = xuqcal.synthetic.nig(1500, nu=6, seed=2, uE_scale=0.8)
    from_values = plot_pit(probabilistic.pit(ds), n_bins=12, level=0.9)
    from_test = plot_pit(probabilistic.pit_test(ds, n_bins=12, level=0.9), n_bins=12,
                         level=0.9)
    assert _drawn(from_test) == _drawn(from_values)
    plt.close("all")


def test_plot_pit_of_the_test_facets_its_extra_dimension():
    sets = [xuqcal.synthetic.nig(800, nu=6, seed=s) for s in (1, 2)]
    both = xr.concat(sets, dim="model").assign_coords(model=["a", "b"])
    grid = plot_pit(probabilistic.pit_test(both))
    values = plot_pit(probabilistic.pit(both))
    assert isinstance(grid, FacetGrid) and grid.axes.shape == (1, 2)
    for a, b in zip(grid.axes.ravel(), values.axes.ravel(), strict=True):
        assert _drawn(a) == _drawn(b)
    plt.close("all")


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(n_bins=8), r"n_bins: the PIT test has n_bins=10"),
    (dict(level=0.9), r"level: the PIT test has level=0.95"),
])
def test_plot_pit_of_the_test_refuses_other_bins_or_level(kwargs, message):
    test = probabilistic.pit_test(xuqcal.synthetic.nig(300, nu=6, seed=0), n_bins=10,
                                  level=0.95)
    with pytest.raises(ValueError, match=message):
        plot_pit(test, **kwargs)


def test_the_report_computes_the_pit_once_per_data_set(tmp_path, monkeypatch):
    calls = []
    original = probabilistic._pit_values

    def counting(errors, *args, **kwargs):
        calls.append(np.asarray(errors).size)
        return original(errors, *args, **kwargs)

    monkeypatch.setattr(probabilistic, "_pit_values", counting)
    ds = xuqcal.synthetic.nig(600, nu=6, seed=5)
    report(ds, tmp_path / "one", n_boot=200, n_mc=100, seed=1)
    assert calls == [600]  # the histogram, the results and the summary share one PIT test
    plt.close("all")
