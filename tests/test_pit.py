"""PIT and proper scores of data sets: the uniformity tests at their nominal rate on calibrated
data and their power on mis-calibrated data; the labelled layer (xuqcal.analysis.probabilistic)
against the core functions, broadcast over extra dimensions, lazy on Dask data, with its
argument and value checks; the PIT histogram."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import xarray as xr
from plotting import render
from scipy import stats

import xuqcal
from xuqcal import plot
from xuqcal.analysis.probabilistic import NU_FITTED, NU_GIVEN, pit, pit_test, proper_scores
from xuqcal.core import defaults
from xuqcal.core import scores as S
from xuqcal.plot.facets import FacetGrid
from xuqcal.testing import (
    assert_lazy_until_compute,
    assert_results_identical,
    assert_slice_identical,
    count_computes,
)

# ------------------------------------------------------------------ the tests at their rates

#: Acceptance region of the number of rejections among N_SETS calibrated sets at level α: the
#: central 99.9 % of Binomial(N_SETS, α). The seeds are fixed, so the test is deterministic;
#: a correct method lands outside with probability 0.1 % per level. With N_SETS = 2000 the
#: region at α = 0.05 is [69, 133] rejections, i.e. a rate in [3.45 %, 6.65 %], at α = 0.2
#: [17.1 %, 23.0 %], at α = 0.5 [46.3 %, 53.7 %]. A wrong method fails it: a p-value from the
#: chi-square with n_bins (10) instead of n_bins - 1 degrees of freedom rejects 14.8 % at
#: α = 0.2, with n_bins - 2 26.5 % (both checked below on the same statistics); a PIT that
#: ignores the heteroscedastic uE (Φ(E / mean uE)) rejects 11 % at α = 0.05 (M = 500); and a
#: test that never or always rejects is excluded at every level.
N_SETS = 2000
M_POINTS = 500
LEVELS = (0.05, 0.2, 0.5)
TOLERANCE = 0.001


def acceptance_region(alpha: float) -> tuple[float, float]:
    return (stats.binom.ppf(TOLERANCE / 2, N_SETS, alpha),
            stats.binom.isf(TOLERANCE / 2, N_SETS, alpha))


def heteroscedastic_sets(seed: int, sets: int = N_SETS, points: int = M_POINTS,
                         nu: float = 6.0) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated NIG data: uE² ~ IG(ν/2, ν/2), E = uE ε with ε ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    uE = 1.0 / np.sqrt(rng.gamma(nu / 2, 2 / nu, size=(sets, points)))
    return uE * rng.standard_normal((sets, points)), uE


@pytest.fixture(scope="module")
def calibrated_tests():
    E, uE = heteroscedastic_sets(20261123)
    return S.pit_uniformity(S.pit_normal(E, uE)), (E, uE)


@pytest.mark.parametrize("alpha", LEVELS)
def test_calibrated_gaussian_pit_is_rejected_at_the_nominal_rate(calibrated_tests, alpha):
    test, _ = calibrated_tests
    low, high = acceptance_region(alpha)
    for name in ("chi2_pvalue", "ks_pvalue"):
        rejected = int((getattr(test, name) < alpha).sum())
        assert low <= rejected <= high, (name, alpha, rejected, (low, high))


def test_the_rate_tolerance_excludes_wrong_methods(calibrated_tests):
    """The acceptance regions are narrow enough that wrong methods fall outside them."""
    test, (E, uE) = calibrated_tests
    for df in (defaults.N_BINS_PIT, defaults.N_BINS_PIT - 2):  # the right one: N_BINS_PIT - 1
        wrong = stats.chi2.sf(test.chi2_statistic, df)
        outside = [alpha for alpha in LEVELS if not (
            acceptance_region(alpha)[0] <= (wrong < alpha).sum() <= acceptance_region(alpha)[1])]
        assert outside, df
    homoscedastic = S.pit_uniformity(S.pit_normal(E, uE.mean(axis=-1, keepdims=True)))
    assert (homoscedastic.chi2_pvalue < 0.05).sum() > acceptance_region(0.05)[1]


def test_uncertainties_30_percent_too_small_are_rejected():
    E, uE = heteroscedastic_sets(7, sets=200)
    test = S.pit_uniformity(S.pit_normal(E, 0.7 * uE))
    assert (test.chi2_pvalue < 0.05).mean() >= 0.99
    assert (test.ks_pvalue < 0.05).mean() >= 0.99
    # and through the labelled layer, on one set with its U-shaped histogram
    small = xuqcal.synthetic.nig(2000, nu=6, seed=3, uE_scale=0.7)
    result = pit_test(small)
    assert result.chi2_pvalue < 1e-6 and result.ks_pvalue < 1e-6
    counts = result["count"].values
    assert counts[0] > result.band_high[0] and counts[-1] > result.band_high[-1]
    assert counts[n := len(counts) // 2] < result.band_low[n]


def test_student_pit_passes_student_data_that_the_normal_pit_rejects():
    rng = np.random.default_rng(4)
    uE = rng.uniform(0.5, 2.0, 5000)
    nu = 4.0
    ds = xuqcal.from_arrays(uE * math.sqrt((nu - 2) / nu) * rng.standard_t(nu, uE.size), uE)
    assert pit_test(ds, distribution="student", nu=nu).ks_pvalue > 0.01
    assert pit_test(ds).ks_pvalue < 1e-4
    fitted = pit_test(ds, distribution="student")  # ν fitted to Z
    assert 3.0 < float(fitted.nu) < 6.0 and fitted.ks_pvalue > 0.01


# ------------------------------------------------------------------------ the labelled layer


@pytest.fixture(scope="module")
def data() -> xr.Dataset:
    return xuqcal.synthetic.nig(1500, nu=5, seed=11, generator="t6")


def test_pit_and_scores_equal_the_core_functions(data):
    E, uE = data.E.values, data.uE.values
    np.testing.assert_array_equal(pit(data).pit.values, S.pit_normal(E, uE))
    student = pit(data, distribution="student", nu=7.5)
    np.testing.assert_array_equal(student.pit.values, S.pit_student(E, uE, 7.5))
    assert float(student.nu) == 7.5 and student.attrs["nu_source"] == NU_GIVEN
    np.testing.assert_array_equal(student.sample.values, data.sample.values)
    scores = proper_scores(data, nu=7.5)
    assert float(scores.crps_normal) == np.mean(S.crps_normal(E, uE))
    assert float(scores.crps_student) == np.mean(S.crps_student(E, uE, 7.5))
    assert float(scores.nll_student) == np.mean(S.nll_student(E, uE, 7.5))
    assert float(scores.nll_normal) == float(xuqcal.stats(data, ["nll"]).item())
    assert scores.crps_normal.attrs["long_name"] == "mean CRPS of N(0, uE²)"
    assert scores.attrs["n_samples"] == 1500 and "xuqcal_version" in scores.attrs


def test_fitted_nu_is_describes_nu_eff_of_z(data):
    scores = proper_scores(data)
    nu_eff = float(xuqcal.describe(data).nu_eff.sel(variable="Z"))
    assert float(scores.nu) == nu_eff
    assert scores.attrs["nu_source"] == NU_FITTED
    E, uE = data.E.values, data.uE.values
    assert float(scores.crps_student) == np.mean(S.crps_student(E, uE, nu_eff))
    # t6 errors: a Student-t predictive with the fitted ν fits better than the normal one
    assert 3.0 < nu_eff < 15.0
    assert float(scores.nll_student) < float(scores.nll_normal)


def test_pit_test_reports_the_core_test_and_band(data):
    result = pit_test(data, n_bins=8, level=0.9)
    values = S.pit_normal(data.E.values, data.uE.values)
    core = S.pit_uniformity(values, n_bins=8)
    low, high = S.pit_histogram_band(1500, 8, 0.9)
    np.testing.assert_array_equal(result["count"].values, core.counts)
    np.testing.assert_array_equal(result.band_low.values, low)
    np.testing.assert_array_equal(result.band_high.values, high)
    for name in ("chi2_statistic", "chi2_pvalue", "ks_statistic", "ks_pvalue"):
        assert float(result[name]) == float(getattr(core, name))
    assert float(result.expected_count) == 1500 / 8
    np.testing.assert_allclose(result.bin_low.values, np.arange(8) / 8)
    assert result.attrs["n_bins"] == 8 and result.attrs["level"] == 0.9


@pytest.fixture(scope="module")
def models() -> tuple[xr.Dataset, list[xr.Dataset]]:
    sets = [xuqcal.synthetic.nig(400, nu=6, seed=1),
            xuqcal.synthetic.nig(250, nu=4, seed=2, generator="t6", uE_scale=0.8),
            xuqcal.synthetic.nig(300, nu=8, seed=3)]
    both = xr.concat(sets, dim="model", join="outer").assign_coords(model=["a", "b", "c"])
    return both, sets


@pytest.mark.parametrize("function, kwargs", [
    (proper_scores, {}), (proper_scores, {"nu": 5.0}),
    (pit, {}), (pit, {"distribution": "student"}),
    (pit_test, {"distribution": "student", "n_bins": 5}),
])
def test_extra_dimensions_give_each_slice_alone(models, function, kwargs):
    both, sets = models
    stacked = function(both, **kwargs)
    for label, one in zip(["a", "b", "c"], sets, strict=True):
        assert_slice_identical(stacked, function(one, **kwargs), model=label)
    if function is pit:  # absent points of the shorter sets are NaN
        assert np.isnan(stacked.pit.sel(model="b").values[250:]).all()


@pytest.mark.parametrize("function, kwargs", [
    (proper_scores, {}), (pit, {"distribution": "student", "nu": 4.5}),
    (pit_test, {"distribution": "student"}),
])
def test_dask_data_are_lazy_and_give_the_eager_numbers(data, models, function, kwargs):
    computed = assert_lazy_until_compute(function, data.chunk({"sample": 300}), **kwargs)
    assert_results_identical(computed, function(data, **kwargs), attrs=False)
    both, _ = models
    stacked = assert_lazy_until_compute(function, both.chunk({"sample": 100}), **kwargs)
    eager = function(both, **kwargs)
    # per-slice coordinates of Dask-backed slices are stacked (bin edges over model)
    for name in eager.data_vars:
        np.testing.assert_array_equal(stacked[name].values, eager[name].values)


def test_bad_values_are_named_before_any_work_or_when_computed(data):
    bad = data.copy(deep=True)
    bad["uE"][[4, 9]] = [-1.0, 0.0]
    with pytest.raises(ValueError, match=r"uE: 2 of 1500 values are not positive \(rows 4, 9\)"):
        proper_scores(bad)
    with count_computes() as computes:
        lazy = pit(bad.chunk({"sample": 500}))
    assert computes.count == 0
    with pytest.raises(ValueError, match=r"uE: 2 of 1500 values are not positive \(rows 4, 9\)"):
        lazy.compute()
    both = xr.concat([data, bad], dim="model").assign_coords(model=["ok", "bad"])
    with pytest.raises(ValueError, match=r"model='bad': uE: 2 of 1500 values are not positive"):
        pit_test(both)


@pytest.mark.parametrize("call, message", [
    (lambda ds: pit(ds, distribution="cauchy"), r"distribution: expected one of 'normal'"),
    (lambda ds: pit(ds, nu=5.0), r"nu: only used with distribution='student'"),
    (lambda ds: pit(ds, distribution="student", nu=2.0), r"nu: expected a finite number > 2"),
    (lambda ds: proper_scores(ds, nu=math.inf), r"nu: expected a finite number > 2"),
    (lambda ds: pit_test(ds, n_bins=1), r"n_bins: expected an integer >= 2"),
    (lambda ds: pit_test(ds, level=1.5), r"level: expected a confidence level"),
    (lambda ds: proper_scores(ds, E="err"), r"E: the dataset has no variable 'err'"),
    (lambda ds: proper_scores(ds.isel(sample=[0, 1])), r"ds: fitting nu needs at least 3"),
    (lambda ds: pit(ds.E), r"ds: expected an xarray.Dataset"),
])
def test_invalid_arguments_are_refused_before_any_work(data, call, message):
    with count_computes() as computes, pytest.raises(ValueError, match=message):
        call(data.chunk({"sample": 500}))
    assert computes.count == 0


def test_undefined_student_results_warn_and_are_nan():
    rng = np.random.default_rng(0)
    uE = rng.uniform(0.5, 1.5, 2000)
    cauchy = xuqcal.from_arrays(uE * rng.standard_cauchy(uE.size), uE)  # fitted ν near 1
    with pytest.warns(xuqcal.UndefinedStatisticWarning, match=r"nu = .* <= 2"):
        scores = proper_scores(cauchy)
    assert float(scores.nu) < 2 and np.isnan(scores.crps_student) and np.isnan(
        scores.nll_student)
    assert np.isfinite(scores.crps_normal)
    constant = xuqcal.from_arrays(np.full(10, 0.5), np.ones(10))
    with pytest.warns(xuqcal.UndefinedStatisticWarning, match=r"Z is constant"):
        result = pit(constant, distribution="student")
    assert np.isnan(result.pit.values).all() and np.isnan(result.nu)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(pit(constant).pit[0]) == pytest.approx(stats.norm.cdf(0.5))


def test_real_data_scores_agree_with_the_core_and_describe(load_set):
    ds = load_set(5)  # Diffusion GPR (PAL2022), 2040 points
    scores = proper_scores(ds)
    E, uE = ds.E.values, ds.uE.values
    assert float(scores.nu) == float(xuqcal.describe(ds).nu_eff.sel(variable="Z"))
    assert float(scores.crps_normal) == np.mean(S.crps_normal(E, uE))
    if float(scores.nu) > 2:
        assert float(scores.crps_student) == np.mean(S.crps_student(E, uE, float(scores.nu)))
    test = pit_test(ds)
    assert int(test["count"].sum()) == ds.sizes["sample"]
    assert 0 <= float(test.ks_pvalue) <= 1


# ---------------------------------------------------------------------------------- the plot


def test_plot_pit_draws_the_histogram_band_and_p_values(data, tmp_path):
    result = pit(data)
    ax = plot.pit(result, n_bins=8, level=0.9)
    heights = sorted(round(p.get_height()) for p in ax.patches if p.get_width() == 1 / 8)
    assert heights == sorted(pit_test(data, n_bins=8)["count"].values.tolist())
    test = pit_test(data, n_bins=8)
    assert f"KS p = {float(test.ks_pvalue):.3g}" in ax.get_title()
    assert f"χ² p = {float(test.chi2_pvalue):.3g}" in ax.get_title()
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("PIT", "count per bin")
    assert any("90% band" in t.get_text() for t in ax.get_legend().get_texts())
    render(ax, tmp_path / "pit.png")
    # the same figure from the DataArray or a plain array
    assert plot.pit(result.pit.values, n_bins=8).get_title() == ax.get_title()


def test_plot_pit_facets_an_extra_dimension(models, tmp_path):
    both, sets = models
    grid = plot.pit(pit(both))
    assert isinstance(grid, FacetGrid) and grid.axes.shape == (1, 3)
    for panel, one in zip(grid.axes.ravel(), sets, strict=True):
        test = pit_test(one)
        assert f"KS p = {float(test.ks_pvalue):.3g}" in panel.get_title()
    rows = plot.pit(pit(both).pit, row="model")
    assert rows.axes.shape == (3, 1)
    render(grid.axes[0, 0], tmp_path / "grid.png")


@pytest.mark.parametrize("values, message", [
    (xr.Dataset({"x": ("sample", [0.5])}), r"pit_values: .* without 'pit'"),
    (np.array([0.2, 1.5]), r"pit_values: 1 of 2 values lie outside \[0, 1\]"),
    (np.ones((2, 3)) / 2, r"pit_values: expected a 1-D array"),
    (np.full(3, np.nan), r"pit_values: no PIT values to draw"),
])
def test_plot_pit_refuses_what_is_not_pit_values(values, message):
    with pytest.raises(ValueError, match=message):
        plot.pit(values)


def test_plot_accessor_draws_the_pit_of_its_data():
    ds = xuqcal.synthetic.nig(800, nu=6, seed=2)
    ax = ds.uqcal.plot.pit(distribution="student", nu=6.0, n_bins=8)
    direct = plot.pit(pit(ds, distribution="student", nu=6.0), n_bins=8)
    assert [b.get_height() for b in ax.patches[:8]] == [b.get_height() for b in
                                                         direct.patches[:8]]
    assert ax.get_title() == direct.get_title()
