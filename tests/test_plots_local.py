"""Local-analysis figures through the accessor, rendered to PNG."""

from __future__ import annotations

import numpy as np
import pytest
from plotting import render

import xuqcal


@pytest.fixture(scope="module")
def data():
    ds = xuqcal.synthetic.nig(2000, nu=6, seed=5)
    return ds.assign(X=("sample", np.round(np.random.default_rng(1).normal(size=2000), 1)))


def test_accessor_methods_match_functions(data):
    from xuqcal.analysis import local

    np.testing.assert_array_equal(data.uqcal.local("zms", n_bins=10, n_boot=200).ci_low,
                                  local.local(data, "zms", n_bins=10, n_boot=200).ci_low)
    assert data.uqcal.bins("X", binning="strata", min_count=100).attrs["scheme"] == "strata"
    assert data.uqcal.reliability(n_bins=5, n_boot=100).sizes["bin"] == 5
    assert data.uqcal.adversarial_groups(n_groups=10, n_boot=100, min_count=400).sizes["count"] == 2
    assert data.uqcal.order_sensitivity(by="X", n_orders=2, n_bins=10,
                                        n_boot=100).sizes["order"] == 2


def test_local_plot(data, tmp_path):
    ax = data.uqcal.plot.local("zms", n_bins=20, n_boot=300)
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "<Z²>"
    assert ax.get_title().startswith("<Z²> per bin of uE: f_v =")
    render(ax, tmp_path / "local.png")
    ax = data.uqcal.plot.local("zm", by="X", binning="strata", min_count=100)
    assert ax.get_xscale() == "linear" and ax.get_xlabel() == "X (bin centre)"
    render(ax, tmp_path / "local_x.png")


def test_fraction_valid_plot(data, tmp_path):
    ax = data.uqcal.plot.fraction_valid("zms", by=["uE", "X"], n_bins=20, n_boot=300)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["uE", "X"]
    render(ax, tmp_path / "fv.png")


def test_acf_plot(data, tmp_path):
    ax = data.uqcal.plot.acf("zms", n_bins=40, n_boot=300)
    assert ax.get_xlabel() == "lag (bins)" and ax.get_ylabel() == "autocorrelation"
    render(ax, tmp_path / "acf.png")


def test_reliability_plot(data, tmp_path):
    ax = data.uqcal.plot.reliability(n_boot=300)
    assert ax.get_xlabel().startswith("RMV") and ax.get_ylabel().startswith("RMSE")
    render(ax, tmp_path / "rel.png")


def test_order_sensitivity_and_adversarial_plots(data, tmp_path):
    from xuqcal import plot

    sens = data.uqcal.order_sensitivity(by="X", n_orders=8, n_bins=20, n_boot=200,
                                        binomial_noise=True)
    ax = plot.order_sensitivity(sens)
    assert ax.get_xlabel() == "fraction of valid bins"
    render(ax, tmp_path / "order.png")
    ax = plot.adversarial(data.uqcal.adversarial_groups(n_groups=20, n_boot=200, min_count=250))
    assert ax.get_xlabel() == "group size" and ax.get_xscale() == "log"
    render(ax, tmp_path / "adv.png")


def test_zscores_and_rank_correlation_through_the_accessor(data, tmp_path):
    ax = data.uqcal.plot.zscores(by="uE")
    assert ax.get_xlabel() == "uE" and ax.get_ylabel() == "Z = E / uE"
    render(ax, tmp_path / "z.png")
    matrix = data.uqcal.rank_correlation(["X"])
    assert matrix["variable"].values.tolist() == ["X", "|E|", "uE"]
    render(data.uqcal.plot.rank_correlation(["X"]), tmp_path / "rc.png")
    running = data.uqcal.running_statistics(window=51)
    assert running.attrs["window"] == 51


@pytest.mark.parametrize(("name", "kwargs"), [
    ("confidence_curve", {"n_mc": 100}),
    ("ablation", {"n_boot": 200}),
    ("calibration_curve", {}),
    ("local_coverage", {"n_bins": 10}),
])
def test_curve_plots_through_the_accessor(data, tmp_path, name, kwargs):
    result = getattr(data.uqcal, name)(**kwargs)
    assert result.attrs["xuqcal_version"] == xuqcal.__version__
    ax = getattr(data.uqcal.plot, name)(**kwargs)
    assert ax.get_xlabel() and ax.get_ylabel()
    render(ax, tmp_path / f"{name}.png")


def test_heavy_tailed_bins_greyed_through_the_accessor(tmp_path):
    """The heavy-tail screening of the bins (ErrViewLib's skewup) reaches the figures drawn by
    the accessor: grey markers and error bars with a "not testable" legend entry."""
    import matplotlib.colors as mcolors
    from matplotlib.container import ErrorbarContainer

    rng = np.random.default_rng(3)
    uE = np.exp(rng.uniform(0.0, np.log(10.0), 6000))
    z = np.where(uE > np.median(uE), rng.standard_t(2.5, 6000) * np.sqrt(0.2),
                 rng.standard_normal(6000))
    ds = xuqcal.io.from_arrays(uE * z, uE)

    def grey_labels(ax):
        return [c.get_label() for c in ax.containers if isinstance(c, ErrorbarContainer)
                and mcolors.to_rgb(c.lines[0].get_color()) == mcolors.to_rgb("0.7")]

    ax = ds.uqcal.plot.local("zms", n_bins=12, n_boot=200)
    assert grey_labels(ax) == ["β_GM(Z²) > 0.8 (not testable)"]
    render(ax, tmp_path / "lzms.png")
    ax = ds.uqcal.plot.local_coverage(n_bins=12, tol=0.01, heavy_tail_threshold=0.8)
    assert grey_labels(ax) == ["β_GM(Z²) > 0.8 (not testable)"]
    assert "target band p ± 0.01" in ax.get_legend_handles_labels()[1]
    assert ax.get_xlabel() == "uE (bin centre)" and ax.get_ylabel().startswith("coverage")
    render(ax, tmp_path / "lcp.png")
    ax = ds.uqcal.plot.reliability(n_bins=12, n_boot=200)
    assert grey_labels(ax) == ["β_GM(uE²) > 0.6 or β_GM(E²) > 0.8 (not testable)"]
    render(ax, tmp_path / "rel.png")
    ax = ds.uqcal.plot.local("zms", n_bins=12, n_boot=200, heavy_tail_threshold=None)
    assert grey_labels(ax) == []
    render(ax, tmp_path / "lzms_unscreened.png")
