"""Proper scores of xuqcal.core.scores: closed forms against numerical integration and brute
force, the fair ensemble CRPS's unbiasedness, interval and pinball scores, per-point PIT and
its uniformity test and band, and the rules for missing and invalid values."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import integrate, stats

from xuqcal.core.scores import (
    crps_ensemble,
    crps_normal,
    crps_student,
    interval_score,
    nll_student,
    pinball_loss,
    pit_ensemble,
    pit_histogram_band,
    pit_normal,
    pit_student,
    pit_uniformity,
    student_scale,
)


def crps_by_integration(E: float, cdf) -> float:
    """CRPS = ∫ (F(x) - 1{x >= E})² dx, integrated numerically on both sides of E."""
    def integrand(x):
        return (cdf(x) - (x >= E)) ** 2

    left, _ = integrate.quad(integrand, -np.inf, E, limit=200, epsabs=1e-13, epsrel=1e-11)
    right, _ = integrate.quad(integrand, E, np.inf, limit=200, epsabs=1e-13, epsrel=1e-11)
    return left + right


POINTS = [(0.0, 1.0), (0.3, 1.0), (-2.5, 1.0), (8.0, 1.0), (0.004, 0.01), (-120.0, 50.0),
          (3.0, 0.2)]


@pytest.mark.parametrize("E, uE", POINTS)
def test_crps_normal_equals_numerical_integration(E, uE):
    expected = crps_by_integration(E, lambda x: stats.norm.cdf(x, scale=uE))
    assert crps_normal(E, uE) == pytest.approx(expected, rel=1e-8, abs=1e-12 * uE)


def test_crps_normal_closed_form_values_and_scaling():
    assert crps_normal(0.0, 1.0) == pytest.approx((math.sqrt(2) - 1) / math.sqrt(math.pi),
                                                  rel=1e-15)
    z = np.linspace(-6, 6, 25)
    textbook = z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / math.sqrt(math.pi)
    np.testing.assert_allclose(crps_normal(z, 1.0), textbook, rtol=1e-12, atol=1e-15)
    # CRPS(cE, c uE) = c CRPS(E, uE), symmetric in E, and |E| - uE/√π far in the tails
    np.testing.assert_allclose(crps_normal(3.7 * z, 3.7), 3.7 * crps_normal(z, 1.0), rtol=1e-13)
    np.testing.assert_allclose(crps_normal(-z, 1.0), crps_normal(z, 1.0), rtol=1e-14)
    assert crps_normal(1e6, 1.0) == pytest.approx(1e6 - 1 / math.sqrt(math.pi), rel=1e-15)


@pytest.mark.parametrize("nu", [2.5, 3.0, 6.0, 30.0])
@pytest.mark.parametrize("E, uE", [(0.0, 1.0), (0.7, 1.0), (-4.0, 1.5), (25.0, 2.0)])
def test_crps_student_equals_numerical_integration(E, uE, nu):
    scale = uE * math.sqrt((nu - 2) / nu)
    expected = crps_by_integration(E, lambda x: stats.t.cdf(x / scale, nu))
    assert crps_student(E, uE, nu) == pytest.approx(expected, rel=1e-7, abs=1e-11)


def test_crps_student_tends_to_normal_and_broadcasts_nu():
    E = np.array([-3.0, -0.4, 0.0, 1.2, 5.0])
    np.testing.assert_allclose(crps_student(E, 1.3, 1e9), crps_normal(E, 1.3), rtol=1e-8)
    nus = np.array([3.0, 5.0, 10.0])
    grid = crps_student(E[:, None], 1.0, nus)
    assert grid.shape == (5, 3)
    for j, nu in enumerate(nus):
        np.testing.assert_array_equal(grid[:, j], crps_student(E, 1.0, nu))
    # a heavier tail at the same standard deviation: smaller CRPS at 0, larger far out
    assert crps_student(0.0, 1.0, 3.0) < crps_normal(0.0, 1.0)
    assert crps_student(40.0, 1.0, 3.0) > crps_normal(40.0, 1.0) - 1e-9
    # huge z: no overflow of z² (f(z) (ν + z²) through logarithms)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert crps_student(1e200, 1.0, 4.0) == pytest.approx(1e200, rel=1e-12)
        s = student_scale(1.0, 4.0)
        huge = nll_student(np.array([1e200, 1e140]), 1.0, 4.0)
    # -ln f(z) + ln s, f(z) ~ Γ(5/2) / (Γ(2) √(4π)) (z²/4)^(-5/2) far in the tail
    tail = [-math.lgamma(2.5) + math.lgamma(2.0) + 0.5 * math.log(4 * math.pi)
            + 2.5 * (2 * math.log(z / s) - math.log(4.0)) + math.log(s) for z in (1e200, 1e140)]
    np.testing.assert_allclose(huge, tail, rtol=1e-13)


def brute_crps_ensemble(x: np.ndarray, y: float, fair: bool) -> float:
    x = x[~np.isnan(x)]
    m = x.size
    double = np.abs(x[:, None] - x[None, :]).sum()
    return np.abs(x - y).mean() - double / (2 * m * (m - 1) if fair else 2 * m * m)


@pytest.mark.parametrize("fair", [True, False])
def test_crps_ensemble_equals_brute_force_double_sum(fair):
    rng = np.random.default_rng(5)
    members = np.round(rng.normal(size=(40, 17)), 1)  # many ties
    members[3, :5] = np.nan  # a forecast with 12 present members
    observed = rng.normal(size=40)
    expected = [brute_crps_ensemble(members[i], observed[i], fair) for i in range(40)]
    np.testing.assert_allclose(crps_ensemble(members, observed, fair=fair), expected,
                               rtol=1e-12, atol=1e-14)
    big = rng.normal(size=(2, 300))
    np.testing.assert_allclose(crps_ensemble(big, [0.2, -1.0], fair=fair),
                               [brute_crps_ensemble(big[0], 0.2, fair),
                                brute_crps_ensemble(big[1], -1.0, fair)], rtol=1e-11)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(2, 9)),
                  elements=st.sampled_from([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0, np.nan])),
       st.floats(-3, 3), st.booleans())
def test_crps_ensemble_brute_force_with_ties_and_missing_members(members, y, fair):
    result = np.atleast_1d(crps_ensemble(members, y, fair=fair))
    for i, row in enumerate(members):
        present = int((~np.isnan(row)).sum())
        if present < (2 if fair else 1):
            assert np.isnan(result[i])
        else:
            assert result[i] == pytest.approx(brute_crps_ensemble(row, y, fair), abs=1e-12)


def test_fair_ensemble_crps_is_unbiased_and_the_standard_one_is_not():
    """Over many ensembles of m draws from N(0, 1), the mean fair CRPS is the CRPS of N(0, 1)
    (Ferro 2014); the standard one exceeds it by E|X - X'| / (2m) = 1 / (m √π)."""
    rng = np.random.default_rng(11)
    rows, m = 40_000, 4
    members = rng.standard_normal((rows, m))
    y = rng.standard_normal(rows)
    truth = crps_normal(y, 1.0)
    for fair, bias in ((True, 0.0), (False, 1 / (m * math.sqrt(math.pi)))):
        difference = crps_ensemble(members, y, fair=fair) - truth
        se = difference.std(ddof=1) / math.sqrt(rows)
        assert abs(difference.mean() - bias) < 4 * se, (fair, difference.mean(), se)
    assert 1 / (m * math.sqrt(math.pi)) > 20 * se  # the two are told apart


def test_crps_ensemble_missing_value_rules():
    x = np.array([[0.0, np.nan, 1.0], [np.nan, np.nan, np.nan], [2.0, np.nan, np.nan]])
    fair = crps_ensemble(x, [0.5, 0.0, 1.0])
    standard = crps_ensemble(x, [0.5, 0.0, 1.0], fair=False)
    assert fair[0] == pytest.approx(brute_crps_ensemble(np.array([0.0, 1.0]), 0.5, True))
    assert np.isnan(fair[1]) and np.isnan(standard[1])  # no member
    assert np.isnan(fair[2]) and standard[2] == 1.0  # one member: |x - y| (standard only)
    assert np.isnan(crps_ensemble(x[0], np.nan))  # observation missing


def test_nll_student_is_a_normalised_density_with_standard_deviation_uE():
    for nu, uE in ((3.0, 1.0), (5.5, 0.3), (40.0, 2.0)):
        def density(e, nu=nu, uE=uE):
            return math.exp(-nll_student(e, uE, nu))

        total, _ = integrate.quad(density, -np.inf, np.inf, epsabs=1e-12)
        variance, _ = integrate.quad(lambda e, d=density: e * e * d(e), -np.inf, np.inf,
                                     epsabs=1e-12, limit=200)
        assert total == pytest.approx(1.0, rel=1e-8)
        assert variance == pytest.approx(uE**2, rel=1e-6)
    E = np.array([-2.0, 0.1, 3.0])
    normal = 0.5 * (E**2 + math.log(2 * math.pi))
    np.testing.assert_allclose(nll_student(E, 1.0, 1e9), normal, rtol=1e-8)
    np.testing.assert_allclose(nll_student(E, 2.0, 6.0),
                               -stats.t.logpdf(E, 6.0, scale=student_scale(2.0, 6.0)),
                               rtol=1e-13)


def test_interval_score_values_and_propriety():
    level = 0.8
    penalty = 2 / (1 - level)
    np.testing.assert_allclose(
        interval_score([0.0, 1.5, -2.0, np.nan], -1.0, 1.0, level),
        [2.0, 2.0 + penalty * 0.5, 2.0 + penalty * 1.0, np.nan])
    # the expected score is smallest for the true distribution's central interval
    y = np.random.default_rng(3).standard_normal(200_000)
    k = stats.norm.ppf(0.9)
    means = {s: interval_score(y, -k * s, k * s, level).mean() for s in (0.8, 1.0, 1.25)}
    assert means[1.0] < means[0.8] and means[1.0] < means[1.25]


def test_pinball_loss_values_and_link_to_crps():
    np.testing.assert_allclose(pinball_loss(1.0, [0.0, 1.0, 2.0], [0.1, 0.5, 0.9]),
                               [0.1, 0.0, 0.1])
    # CRPS = 2 ∫_0^1 ρ_τ(y - q_τ) dτ: the midpoint rule over 4000 levels
    tau = (np.arange(4000) + 0.5) / 4000
    for y, u in ((0.3, 1.0), (-2.0, 0.5)):
        losses = pinball_loss(y, u * stats.norm.ppf(tau), tau)
        assert 2 * losses.mean() == pytest.approx(crps_normal(y, u), rel=2e-4)
    rows = pinball_loss([0.0, np.nan], [[0.0, 1.0], [0.0, 1.0]], [0.25, 0.75])
    assert rows.shape == (2, 2) and np.isnan(rows[1]).all()


def test_pit_normal_and_student_values():
    np.testing.assert_allclose(pit_normal([-1.0, 0.0, 2.0], [1.0, 3.0, 1.0]),
                               stats.norm.cdf([-1.0, 0.0, 2.0]))
    s = student_scale(1.5, 4.0)
    np.testing.assert_allclose(pit_student([0.5, -3.0], 1.5, 4.0),
                               stats.t.cdf(np.array([0.5, -3.0]) / s, 4.0), rtol=1e-14)
    assert np.isnan(pit_normal(np.nan, 1.0))


def test_pit_student_is_uniform_for_student_errors_and_pit_normal_is_not():
    rng = np.random.default_rng(8)
    nu = 3.0
    uE = rng.uniform(0.5, 2.0, 20_000)
    E = uE * math.sqrt((nu - 2) / nu) * rng.standard_t(nu, uE.size)
    assert pit_uniformity(pit_student(E, uE, nu)).ks_pvalue > 0.001
    assert pit_uniformity(pit_normal(E, uE)).ks_pvalue < 1e-6


def test_pit_ensemble_ranks_ties_and_reproducibility():
    members = np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0], [0.0, 2.0, np.nan, 5.0]])
    observed = np.array([2.5, 1.0, 6.0])
    p = pit_ensemble(members, observed, seed=3)
    assert 3 / 5 < p[0] < 4 / 5  # 3 members below, 4 present: rank 3 of 0..4
    assert 0 < p[1] < 1  # tied with all: any rank
    assert 3 / 4 < p[2] < 1  # 3 present members all below
    np.testing.assert_array_equal(p, pit_ensemble(members, observed, seed=3))
    assert not np.array_equal(p, pit_ensemble(members, observed, seed=4))
    assert np.isnan(pit_ensemble(members, [np.nan, 1.0, 1.0])[0])
    assert np.isnan(pit_ensemble([[np.nan, np.nan]], [0.0])[0])


def test_pit_ensemble_is_uniform_for_exchangeable_members_even_with_ties():
    rng = np.random.default_rng(21)
    values = rng.integers(0, 4, size=(6000, 8)).astype(float)  # heavily tied
    p = pit_ensemble(values[:, :7], values[:, 7], seed=0)
    test = pit_uniformity(p)
    assert test.ks_pvalue > 0.001 and test.chi2_pvalue > 0.001
    # without randomisation (rank / m) the same values are far from uniform
    naive = (values[:, :7] < values[:, 7:]).sum(axis=1) / 7
    assert pit_uniformity(naive).ks_pvalue < 1e-6


def test_pit_uniformity_equals_scipy_per_row_with_missing_values():
    rng = np.random.default_rng(1)
    pit = rng.random((3, 400)) ** np.array([[1.0], [1.0], [1.3]])
    pit[1, :50] = np.nan
    test = pit_uniformity(pit, n_bins=8)
    for i in range(3):
        row = pit[i][~np.isnan(pit[i])]
        counts = np.histogram(row, bins=np.linspace(0, 1, 9))[0]
        chi2 = stats.chisquare(counts)
        ks = stats.kstest(row, "uniform")
        np.testing.assert_array_equal(test.counts[i], counts)
        assert test.n_points[i] == row.size
        assert test.chi2_statistic[i] == pytest.approx(chi2.statistic, rel=1e-13)
        assert test.chi2_pvalue[i] == pytest.approx(chi2.pvalue, rel=1e-12)
        assert test.ks_statistic[i] == pytest.approx(ks.statistic, rel=1e-13)
        assert test.ks_pvalue[i] == pytest.approx(ks.pvalue, rel=1e-10)
    one = pit_uniformity(pit[0], n_bins=8)
    assert one.ks_pvalue == test.ks_pvalue[0] and one.counts.shape == (8,)
    empty = pit_uniformity(np.full((2, 5), np.nan))
    assert np.isnan(empty.chi2_pvalue).all() and (empty.n_points == 0).all()
    # values at the edges: 1.0 in the last bin, 0.0 in the first
    edges = np.array([0.0, 1.0, 0.5, 0.99] * 5)
    assert pit_uniformity(edges, n_bins=2).counts.tolist() == [5, 15]


def test_pit_uniformity_warns_when_few_points_per_bin():
    from xuqcal.core.binning import FewPointsPerBinWarning

    with pytest.warns(FewPointsPerBinWarning, match="chi-square p-value is approximate"):
        pit_uniformity(np.linspace(0.01, 0.99, 30), n_bins=10)


def test_pit_histogram_band_is_the_binomial_central_interval():
    low, high = pit_histogram_band(1000, 10, level=0.95)
    assert low.shape == high.shape == (10,)
    assert low[0] == stats.binom.ppf(0.025, 1000, 0.1)
    assert high[0] == stats.binom.ppf(0.975, 1000, 0.1)
    for n, k, level in ((1000, 10, 0.95), (57, 4, 0.9), (10_000, 25, 0.99)):
        lo, hi = pit_histogram_band(n, k, level)
        coverage = stats.binom.cdf(hi[0], n, 1 / k) - stats.binom.cdf(lo[0] - 1, n, 1 / k)
        assert coverage >= level
    grid_low, _ = pit_histogram_band(np.array([100, 1000]), 5)
    assert grid_low.shape == (2, 5) and grid_low[1, 0] == pit_histogram_band(1000, 5)[0][0]


@pytest.mark.parametrize("call, message", [
    (lambda: crps_normal([1.0, 2.0, 3.0], [1.0, 0.0, -1.0]),
     r"uE: 2 of 3 values are not positive \(positions 1, 2\)"),
    (lambda: crps_normal([1.0, np.inf], 1.0), r"E: 1 of 2 values are infinite \(positions 1\)"),
    (lambda: crps_student(0.0, 1.0, 2.0), r"nu: expected degrees of freedom > 2"),
    (lambda: pit_student(0.0, 1.0, [3.0, 1.5]), r"nu: .*\(1 values <= 2, positions 1\)"),
    (lambda: crps_normal([1.0, 2.0], [1.0, 1.0, 1.0]), r"E, uE: shapes do not broadcast"),
    (lambda: crps_normal(["a"], 1.0), r"E: expected real numbers"),
    (lambda: crps_ensemble(1.0, 1.0), r"members: expected an array whose last axis"),
    (lambda: crps_ensemble(np.ones((3, 4)), np.ones(4)), r"observed, members: the shape"),
    (lambda: crps_ensemble(np.ones(3), 0.0, fair=1), r"fair: expected True or False"),
    (lambda: interval_score(0.0, [1.0, 0.0], [0.0, 1.0], 0.9),
     r"lower, upper: 1 of 2 intervals have lower > upper \(positions 0\)"),
    (lambda: interval_score(0.0, -1.0, 1.0, 90), r"coverage_level: expected a coverage level"),
    (lambda: pinball_loss(0.0, [0.0, 1.0], [0.5, 1.0]), r"probabilities: expected probability"),
    (lambda: pinball_loss(0.0, [0.0, 1.0, 2.0], [0.2, 0.8]),
     r"quantile_values: expected a last axis of length 2"),
    (lambda: pit_uniformity([0.2, 1.2, -0.1]), r"pit: 2 of 3 values lie outside \[0, 1\]"),
    (lambda: pit_uniformity([0.2, 0.5], n_bins=1), r"n_bins: expected an integer >= 2"),
    (lambda: pit_histogram_band(0, 10), r"n_points: expected positive integers"),
    (lambda: pit_ensemble([[0.0, 1.0]], [0.5], seed=-1), r"seed: expected an integer"),
    (lambda: crps_normal(np.ones((2, 2)), np.array([[1.0, 1.0], [1.0, 0.0]])),
     r"uE: 1 of 4 values are not positive \(positions \(1, 1\)\)"),
])
def test_invalid_values_name_the_argument_and_positions(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_missing_values_give_missing_results():
    E = np.array([0.5, np.nan, -1.0])
    uE = np.array([1.0, 1.0, np.nan])
    for result in (crps_normal(E, uE), crps_student(E, uE, 5.0), nll_student(E, uE, 5.0),
                   pit_normal(E, uE), pit_student(E, uE, 5.0)):
        assert np.isfinite(result[0]) and np.isnan(result[1:]).all()
