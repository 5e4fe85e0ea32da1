"""Figures of the ErrViewLib ports (issue 27, part 2): labelled axes, what is drawn, extra
dimensions, errors."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import xarray as xr
from plotting import render
from scipy import stats

import xuqcal
from xuqcal import plot
from xuqcal.core.coverage import fit_scaled_student
from xuqcal.plot.errors import pp_curve, reference_distribution
from xuqcal.plot.facets import FacetGrid


@pytest.fixture(scope="module")
def data():
    return xuqcal.synthetic.nig(400, nu=6, seed=0)


@pytest.fixture(scope="module")
def both():
    a = xuqcal.synthetic.nig(300, nu=6, seed=1)
    b = xuqcal.synthetic.nig(250, nu=6, seed=2)
    return xr.concat([a, b], dim="model", join="outer").assign_coords(model=["a", "b"])


def test_errors_vs_uncertainty(data, tmp_path):
    ax = plot.errors_vs_uncertainty(data)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("prediction uncertainty uE", "error E")
    points = ax.collections[-1].get_offsets()
    np.testing.assert_array_equal(points[:, 0], data.uE.values)
    np.testing.assert_array_equal(points[:, 1], data.E.values)
    # guide lines E = ±k uE, k = 1, 2, 3 (plotEvsPU's klev)
    slopes = sorted(round(float(np.diff(line.get_ydata())[0] / np.diff(line.get_xdata())[0]), 9)
                    for line in ax.get_lines() if len(line.get_xdata()) == 2
                    and line.get_linestyle() == "--")
    assert slopes == [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0]
    render(ax, tmp_path / "evu.png")
    ax = plot.errors_vs_uncertainty(data.assign(V=data.uE * 3), "V")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("V", "z-score Z = E / uE")
    np.testing.assert_allclose(ax.collections[-1].get_offsets()[:, 1],
                               data.E.values / data.uE.values)
    render(ax, tmp_path / "zvs.png")
    with pytest.raises(ValueError, match="by: the dataset has no variable 'V'"):
        plot.errors_vs_uncertainty(data, "V")


def test_uncertainty_ecdf(data, both, tmp_path):
    ax = plot.uncertainty_ecdf(data)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("uncertainty uE", "cumulative probability")
    ecdf = ax.get_lines()[0]
    np.testing.assert_array_equal(ecdf.get_xdata(), np.sort(data.uE.values))
    np.testing.assert_allclose(ecdf.get_ydata(), np.arange(1, 401) / 400)
    # the 95th percentile marked at the Harrell–Davis estimate
    marker = ax.get_lines()[1]
    q95 = stats.mstats.hdquantiles(data.uE.values, prob=[0.95])[0]
    assert marker.get_xdata()[0] == pytest.approx(q95, rel=1e-12)
    render(ax, tmp_path / "ecdf.png")
    ax = plot.uncertainty_ecdf(data, "|E|")
    assert ax.get_xlabel() == "absolute error |E|"
    ax = plot.uncertainty_ecdf(both)  # one curve per model
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"a", "b"}
    expected = re.escape("variable: expected one of 'uE', '|E|', got 'E'")
    with pytest.raises(ValueError, match=expected):
        plot.uncertainty_ecdf(data, "E")


def test_zscore_qq(data, both, tmp_path):
    ax = plot.zscore_qq(data, n_mc=200)
    assert ax.get_xlabel() == "theoretical quantiles of N(0, 1)"
    assert ax.get_ylabel() == "ordered z-scores"
    points = ax.collections[-1].get_offsets()
    z = np.sort(data.E.values / data.uE.values)
    # qqnorm: ppoints(n) = (i - 1/2) / n for n > 10
    np.testing.assert_allclose(points[:, 0], stats.norm.ppf((np.arange(1, 401) - 0.5) / 400),
                               rtol=1e-12)
    np.testing.assert_array_equal(points[:, 1], z)
    render(ax, tmp_path / "qq.png")
    ax = plot.zscore_qq(data, "student", n_mc=100)
    # the points are the quantiles of xuqcal's fitted zero-centred t (exactly)
    nu_x, scale_x = fit_scaled_student(z)
    np.testing.assert_allclose(ax.collections[-1].get_offsets()[:, 0],
                               stats.t(nu_x, scale=scale_x).ppf((np.arange(1, 401) - 0.5) / 400),
                               rtol=1e-12)
    # and that fit is the maximum-likelihood one: against SciPy's t.fit on Z (xuqcal fits the
    # same likelihood through Z² ~ s² F(1, ν)), its log-likelihood is short by at most 1e-4,
    # the termination tolerance (ftol, on -log L) of the Nelder-Mead of SciPy's fit that both
    # use; 1e-4 nats is nothing statistically (a likelihood-ratio 2e-4). The quantiles
    # themselves need not agree to 1e-6: near-normal data put the ML ν at infinity, where the
    # two optimisers stop at different points (over 100 data sets like this one, stream
    # version 2: relative quantile differences above 1e-6 for 51 %, max 6.9e-5; deficits
    # max 4.8e-5)
    nu, _, scale = stats.t.fit(z, floc=0.0)
    deficit = (stats.t.logpdf(z, nu, scale=scale).sum()
               - stats.t.logpdf(z, nu_x, scale=scale_x).sum())
    assert deficit <= 1e-4
    assert "fitted Student-t" in ax.get_title()
    grid = plot.zscore_qq(both, n_mc=50)
    assert isinstance(grid, FacetGrid) and grid.axes.size == 2
    with pytest.raises(ValueError, match="distribution: expected one of 'normal', 'student'"):
        plot.zscore_qq(data, "laplace")
    with pytest.raises(ValueError, match="n_mc"):
        plot.zscore_qq(data, n_mc=1)


def test_pp_curve_known_answer():
    # plotPpnorm: q = seq(-6, 6, length.out = 100), pt = c(0, pnorm(q), 1), pe = c(0, ecdf(X)(q),
    # 1), MisCal = trapz(pt, |pe - pt|), CalErr = sqrt(sum((pt - pe)^2))
    x = np.array([-1.0, 0.2, 0.3, 2.5])
    q = np.linspace(-6, 6, 100)
    pt = np.r_[0, stats.norm.cdf(q), 1]
    pe = np.r_[0, [np.mean(x <= v) for v in q], 1]
    gap = np.abs(pe - pt)
    area = np.sum((pt[1:] - pt[:-1]) * (gap[1:] + gap[:-1])) / 2
    expected, observed, got_area, calerr = pp_curve(x, stats.norm())
    np.testing.assert_allclose(expected, pt, rtol=1e-15)
    np.testing.assert_array_equal(observed, pe)
    assert got_area == pytest.approx(area, rel=1e-13)
    assert calerr == pytest.approx(math.sqrt(np.sum((pt - pe) ** 2)), rel=1e-13)


def test_zscore_pp(data, tmp_path):
    ax = plot.zscore_pp(data)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("expected cumulative probability",
                                                  "observed cumulative probability")
    z = data.E.values / data.uE.values
    _, observed, area, _ = pp_curve(z, stats.norm())
    np.testing.assert_array_equal(ax.get_lines()[-1].get_ydata(), observed)
    assert f"miscalibration area {area:.2g}" in ax.get_title()
    render(ax, tmp_path / "pp.png")
    dist, label = reference_distribution(z, "student")
    assert label.startswith("fitted Student-t") and dist.mean() == 0.0


def test_calibration_scores_plot(data, both, tmp_path):
    scores = xuqcal.calibration_scores(data.assign(X=data.uE**2), "X", n_bins=10)
    ax = plot.calibration_scores(scores)
    assert ax.get_xlabel() == "score" and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Scal", "Su", "SX(X)", "Stot"]
    heights = [bar.get_height() for bar in ax.patches]
    np.testing.assert_allclose(heights, [float(scores.scal), float(scores.su),
                                         float(scores.sx[0]), float(scores.stot)])
    render(ax, tmp_path / "scores.png")
    ax = plot.calibration_scores(xuqcal.calibration_scores(both, n_bins=5))
    assert len(ax.patches) == 6  # 3 bars per model
    with pytest.raises(ValueError, match="scores"):
        plot.calibration_scores(xr.Dataset({"x": 1.0}))


def test_worst_group_plot(data, both, tmp_path):
    result = xuqcal.worst_group_calibration(data, n_groups=10, n_mc=5, min_count=50)
    ax = plot.worst_group(result)
    assert ax.get_xlabel() == "relative group size"
    assert ax.get_ylabel() == "calibration error of the worst group |ln <Z²>|"
    assert ax.get_xscale() == "log"
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), result.value.values)
    np.testing.assert_allclose(line.get_xdata(), result.relative_size.values)
    render(ax, tmp_path / "agv.png")
    grid = plot.worst_group(xuqcal.worst_group_calibration(both, n_groups=5, n_mc=3,
                                                           min_count=60), col="model")
    assert isinstance(grid, FacetGrid)
    with pytest.raises(ValueError, match="worst_group_calibration"):
        plot.worst_group(xr.Dataset({"value": ("count", [1.0])}))


def test_confidence_validation_plot(data, tmp_path):
    result = xuqcal.confidence_curve_validation(data, k=[0, 20, 40, 60], n_mc=50, n_boot=1000)
    ax = plot.confidence_validation(result)
    assert (ax.get_xlabel(), ax.get_ylabel()) == (
        "fraction of largest uncertainties removed (%)", "RMSE")
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), result.value.values)
    assert f"f = {float(result.fraction_valid):.2f}" in ax.get_title()
    render(ax, tmp_path / "ccval.png")
    with pytest.raises(ValueError, match="confidence_curve_validation"):
        plot.confidence_validation(xuqcal.curves.confidence_curve(data, n_mc=20))


def test_strata_plot(tmp_path):
    ds = xuqcal.from_arrays(np.ones(14), np.ones(14))
    ds = ds.assign(n=("sample", [1.0] * 5 + [2.0] + [3.0] * 2 + [4.0] * 6))
    merged = xuqcal.merge_strata(ds, "n", min_count=3)
    ax = plot.strata(merged, "n_merged")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("n", "points per stratum")
    heights = [bar.get_height() for bar in ax.patches]
    assert heights == [5, 1, 2, 6, 5, 3, 6]  # the 4 original strata, then the 3 merged
    render(ax, tmp_path / "strata.png")
    with pytest.raises(ValueError, match=r"merged: expected the output of xuqcal\.merge_strata"):
        plot.strata(ds, "n_merged")
    # not a Dataset at all: a clear error, not an AttributeError from its missing .variables
    with pytest.raises(ValueError, match=r"^merged: expected the output of xuqcal\.merge_strata "
                                         r"\(a Dataset with n_merged, n_merged_value, "
                                         r"n_merged_count\), got DataArray$"):
        plot.strata(merged.n_merged, "n_merged")


def test_local_zisd_plot_is_labelled(data, tmp_path):
    ax = data.uqcal.plot.local("zisd", n_bins=4, n_boot=500)
    assert ax.get_ylabel().startswith("1 / SD(Z)")
    render(ax, tmp_path / "lzisd.png")


def test_accessor_plots(data, tmp_path):
    for name, kwargs in [("errors_vs_uncertainty", {}), ("uncertainty_ecdf", {}),
                         ("zscore_qq", {"n_mc": 20}), ("zscore_pp", {}),
                         ("calibration_scores", {}),
                         ("worst_group", {"n_groups": 5, "n_mc": 3}),
                         ("confidence_validation", {"k": [0, 50], "n_mc": 20,
                                                    "n_boot": 1000})]:
        ax = getattr(data.uqcal.plot, name)(**kwargs)
        assert ax.get_xlabel() and ax.get_ylabel(), name
        render(ax, tmp_path / f"{name}.png")


def test_local_variance_drawn_by_plot_local(data, tmp_path):
    result = xuqcal.local_variance(data, n_bins=4, inverse=True)
    ax = plot.local(result)
    assert ax.get_xlabel() == "uE (bin centre)" and ax.get_ylabel() == "1 / SD(Z)"
    assert "f_v" in ax.get_title()
    render(ax, tmp_path / "lzisd_cho.png")


def test_calibration_scores_plot_with_reference(data, tmp_path):
    scores = xuqcal.calibration_scores(data, n_bins=10, n_mc=20)
    ax = plot.calibration_scores(scores)
    bars = ax.containers[-1]  # the errorbar container of the reference
    np.testing.assert_allclose(bars.lines[0].get_ydata(),
                               [float(scores[f"{k}_reference"].sel(summary="mean"))
                                for k in ("scal", "su", "stot")])
    assert "simulated reference (mean, 95 % range)" in [t.get_text() for t in
                                                         ax.get_legend().get_texts()]
    render(ax, tmp_path / "scores_ref.png")
