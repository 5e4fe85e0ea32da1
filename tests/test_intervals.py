"""Intervals: BCa (against a brute-force jackknife and SciPy), percentile, Student, Wilson, ζ."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import optimize, special, stats

import xuqcal
from xuqcal.analysis.resampling import _jackknife_block
from xuqcal.core.intervals import (
    DegenerateIntervalWarning,
    acceleration,
    bca_interval,
    bias_correction,
    percentile_interval,
    student_interval,
    wilson_interval,
    zeta,
)
from xuqcal.core.statistics import PreparedData, codes_of, compute, get_statistics


@pytest.mark.parametrize("key", ["zms", "rce", "cc", "ence", "zmse", "nll"])
def test_acceleration_equals_brute_force_jackknife(key):
    """The library's leave-one-out values give exactly the brute-force acceleration."""
    rng = np.random.default_rng(2)
    uE = np.round(rng.uniform(0.2, 1.0, 60), 1)
    E = uE * rng.standard_normal(60)
    loo = np.array([compute(np.delete(E, i), np.delete(uE, i), [key], n_bins=4)[0]
                    for i in range(60)])
    d = loo.mean() - loo
    brute = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    prepared = PreparedData.from_arrays(E, uE, n_bins=4)
    jack = _jackknife_block(prepared, codes_of(get_statistics([key])), 0, 60)[:, 0]
    assert acceleration(jack) == pytest.approx(brute, rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("products", [False, True])
def test_acceleration_on_the_cores_is_the_same_to_the_bit(monkeypatch, products):
    """With ``parallel`` the rows (statistics) are computed one a thread: the same values,
    undefined (NaN), constant and overflowing rows included, for any leading shape."""
    from xuqcal.core import intervals

    monkeypatch.setattr(intervals, "ACCELERATION_PARALLEL_FROM", 1)
    monkeypatch.setattr(intervals, "cores", lambda: 2)  # the threads even on one core
    rng = np.random.default_rng(8)
    jack = 1.0 + 1e-3 * rng.standard_t(5, (2, 3, 5003))
    jack[0, 1, 7] = np.nan
    jack[1, 0] = 2.5  # equal values: a = 0
    jack[1, 2] *= 1e120  # d³ beyond float64: the scaled sums
    # the sequential sums, a block of several rows at a time
    monkeypatch.setattr(intervals, "ACCELERATION_BLOCK", 3 * 5003)
    expected = acceleration(jack, products=products)
    assert np.isnan(expected[0, 1]) and expected[1, 0] == 0.0 and np.isfinite(expected[1, 2])
    got = acceleration(jack, products=products, parallel=True)
    np.testing.assert_array_equal(got, expected)
    assert got.shape == (2, 3)


def test_bias_correction_counts_ties_as_half():
    reps = np.array([[1.0, 2.0, 2.0, 3.0]])
    assert bias_correction(reps, np.array([2.0]))[0] == pytest.approx(special.ndtri(0.5))
    assert bias_correction(reps, np.array([2.5]))[0] == pytest.approx(special.ndtri(0.75))


def test_bca_without_bias_or_skew_is_percentile():
    rng = np.random.default_rng(0)
    reps = rng.normal(size=(1, 20_001))
    est = np.median(reps, axis=-1)  # z0 = 0 exactly
    jack = np.array([[-1.0, 0.0, 1.0]])  # symmetric: a = 0
    assert np.allclose(bca_interval(reps, est, jack), percentile_interval(reps), rtol=1e-12)


@pytest.mark.parametrize("key", ["zms", "rce"])
def test_bca_agrees_with_scipy(key):
    """Same statistic, same data: the two BCa intervals agree within Monte Carlo noise."""
    ds = xuqcal.synthetic.nig(3000, nu=6, seed=21)
    E, uE = ds.E.values, ds.uE.values
    ours = xuqcal.bootstrap(ds, [key], n_boot=10_000, seed=1).compute()

    def statistic(e, u, axis=-1):
        z2 = (e / u) ** 2
        if key == "zms":
            return z2.mean(axis=axis)
        rmv = np.sqrt((u**2).mean(axis=axis))
        return (rmv - np.sqrt((e**2).mean(axis=axis))) / rmv

    ref = stats.bootstrap((E, uE), statistic, n_resamples=10_000, method="BCa", paired=True,
                          vectorized=True, random_state=np.random.default_rng(1))
    # B = 10 000: a 2.5 % bound has a Monte Carlo sd of ~0.7 % of the interval width, the
    # difference of two independent runs ~1 %; 4 % of the width is 4 sd.
    width = (ours.ci_high - ours.ci_low).item()
    assert ours.ci_low.item() == pytest.approx(ref.confidence_interval.low, abs=0.04 * width)
    assert ours.ci_high.item() == pytest.approx(ref.confidence_interval.high,
                                                   abs=0.04 * width)
    assert ours.se.item() == pytest.approx(ref.standard_error, rel=0.05)


@pytest.mark.parametrize("jack_skew", [0.0, 1.0])
def test_bca_is_undefined_when_every_replicate_is_on_one_side(jack_skew):
    """z0 = -inf (all replicates above) or +inf (all below): NaN bounds and a warning naming the
    statistic, whatever the acceleration (a = 0 used to give the minimum replicate)."""
    rng = np.random.default_rng(3)
    reps = np.stack([rng.normal(size=500), 5.0 + rng.random(500), -5.0 - rng.random(500)])
    jack = np.stack([rng.normal(size=40) + jack_skew * rng.exponential(size=40)] * 3)
    if jack_skew == 0.0:
        jack = np.broadcast_to(np.linspace(-1, 1, 40), (3, 40))  # a = 0 exactly
    with pytest.warns(DegenerateIntervalWarning,
                      match=r"undefined for ence \(all above\), zmse \(all below\): every one of "
                            r"the 500 bootstrap replicates"):
        lo, hi = bca_interval(reps, np.zeros(3), jack, names=["cc", "ence", "zmse"])
    assert np.isfinite(lo[0]) and np.isfinite(hi[0])
    assert np.isnan(lo[1:]).all() and np.isnan(hi[1:]).all()
    with pytest.warns(DegenerateIntervalWarning, match="2 of 3 intervals"):
        bca_interval(reps, np.zeros(3), jack)


def test_student_interval_matches_scipy():
    x = np.random.default_rng(3).normal(size=40)
    mean, lo, hi = student_interval(x, 0.9)
    want = stats.t.interval(0.9, 39, loc=x.mean(), scale=stats.sem(x))
    assert (lo, hi) == pytest.approx(want, rel=1e-12)
    assert mean == pytest.approx(x.mean())


@pytest.mark.parametrize(("k", "n"), [(0, 20), (1, 20), (17, 20), (20, 20), (85, 100),
                                      (950, 1000), (3, 7)])
def test_wilson_cc_inverts_the_corrected_score_test(k, n):
    """Each bound p0 solves (|k - n p0| - 1/2)² = z² n p0 (1 - p0) (Newcombe's method 4)."""
    lo, hi = wilson_interval(k, n)
    z = special.ndtri(0.975)

    def score(p0):
        return (abs(k - n * p0) - 0.5) ** 2 - z**2 * n * p0 * (1 - p0)

    if k == 0:
        assert lo == 0
    else:
        assert lo == pytest.approx(optimize.brentq(score, 1e-12, (k - 0.5) / n), abs=1e-10)
    if k == n:
        assert hi == 1
    else:
        assert hi == pytest.approx(optimize.brentq(score, (k + 0.5) / n, 1 - 1e-12), abs=1e-10)


def test_wilson_without_correction_is_scipy_wilson():
    res = stats.binomtest(17, 40).proportion_ci(0.95, method="wilson")
    assert wilson_interval(17, 40, continuity=False) == pytest.approx((res.low, res.high))


def test_wilson_rejects_bad_counts():
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 3)


def test_zeta_sides_and_reference_uncertainty():
    assert zeta(0.9, 1.0, 0.8, 1.1) == pytest.approx(-0.1 / 0.2)  # below: uses hi
    assert zeta(1.2, 1.0, 1.1, 1.3) == pytest.approx(0.2 / 0.1)  # above: uses lo
    assert zeta(0.9, 1.0, 0.8, 1.1, u_ref=0.15) == pytest.approx(-0.1 / 0.25)
    # |ζ| ≤ 1 exactly when the reference is inside the interval (u_ref = 0)
    assert abs(zeta(0.9, 1.1, 0.8, 1.1)) == pytest.approx(1.0)


def test_zeta_keeps_labels():
    est = xr.DataArray([0.9, 1.2], dims="statistic", coords={"statistic": ["a", "b"]})
    z = zeta(est, 1.0, est - 0.1, est + 0.1)
    assert z.dims == ("statistic",) and list(z.statistic.values) == ["a", "b"]
    np.testing.assert_allclose(z.values, [-1.0, 2.0])


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.1])
def test_bad_level(level):
    with pytest.raises(ValueError, match="level"):
        percentile_interval(np.zeros((1, 10)), level)
