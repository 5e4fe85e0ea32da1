"""Conformal recalibration (issue 15): split conformal quantiles, global and Mondrian, their
finite-sample coverage on held-out data, the coverage evaluation, NetCDF round trips and errors.

Acceptance tolerance. Over R independent calibration/test splits the test coverage of a split
is a random variable (its calibration set draws the quantile, its test set the points); its
mean over the splits estimates the expected coverage, exactly ``k / (n + 1)`` with
``k = ⌈(n + 1) p⌉`` for untied scores, so in ``[p, p + 1/(n + 1))``. The Monte Carlo standard
error is the standard deviation of the R coverages over ``sqrt(R)`` (about 0.0014 at p = 0.95
and 0.003 at p = 0.683, for n = 100, R = 300), and the checks allow ``TOL_SE = 3.5`` of them.
The wrong rules are far outside: ``⌈n p⌉`` (no finite-sample correction) gives
``95/101 = 0.9406`` at n = 100, p = 0.95, about 6 standard errors below p; a Gaussian interval
``±z_p uE`` on variance-calibrated (temperature-scaled) Student-t(3) errors covers about 0.83
at p = 0.683, far above ``p + 1/(n + 1) = 0.693``. Both are computed on the same splits and
must fail the same check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal import recalibration as rc
from xuqcal.core.coverage import normal_coverage_factor
from xuqcal.core.intervals import wilson_interval
from xuqcal.recalibration.conformal import (
    DEFAULT_LEVELS,
    conformal_coverage,
    conformal_rank,
    min_calibration_points,
)
from xuqcal.testing import assert_results_identical

TOL_SE = 3.5
R = 300


def heavy(m: int, seed: int, replicate: int = 0) -> xr.Dataset:
    """Heavy-tailed, mis-calibrated data: uE² ~ IG(3/2, 3/2), E = uE × unit-variance
    Student-t(3), uE reported 30 % too small; plus a feature X, a label and a second feature
    scaling the errors (conditional mis-calibration for the Mondrian tests)."""
    ds = xuqcal.synthetic.nig(m, nu=3, generator="t3", seed=seed, replicate=replicate,
                              uE_scale=0.7)
    rng = np.random.default_rng([seed, replicate])
    group = rng.integers(0, 3, m)
    x = rng.uniform(0.0, 2.0, m)
    factor = np.array([0.5, 1.0, 2.0])[group] * np.exp(0.5 * x)
    return ds.assign(E=ds.E * factor, X=("sample", x),
                     group=("sample", np.array(["a", "b", "c"])[group]))


def splits(n: int, m: int, seed: int, r: int = R):
    """``r`` independent calibration/test splits of ``n`` and ``m`` points (one draw, cut)."""
    ds = heavy(r * (n + m), seed)
    for i in range(r):
        start = i * (n + m)
        yield (ds.isel(sample=slice(start, start + n)),
               ds.isel(sample=slice(start + n, start + n + m)))


def _mean_se(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(values, dtype=np.float64)
    return values.mean(axis=0), values.std(axis=0, ddof=1) / math.sqrt(values.shape[0])


def _passes(mean: float, se: float, p: float, n_upper: float) -> bool:
    """The acceptance check: ``p <= mean <= p + 1/(n + 1)`` within TOL_SE standard errors
    (``n_upper`` = the mean of 1/(n + 1))."""
    return p - TOL_SE * se <= mean <= p + n_upper + TOL_SE * se


# ----------------------------------------------------------------------- ranks and levels


def test_rank_is_exact_and_finite_sample():
    for n in (1, 18, 19, 99, 100, 999):
        for p in (0.5, 0.683, 0.9, 0.95):
            k = conformal_rank(n, p)
            assert k == math.ceil((n + 1) * p - 1e-9)  # float ceil off exact integers
            assert (k <= n) == (n >= min_calibration_points(p))
    # exact where floating point rounds (n + 1) p above an integer
    assert math.ceil(10_000 * 0.683) == 6831 and conformal_rank(9_999, 0.683) == 6830
    assert math.ceil(100 * 0.55) == 56 and conformal_rank(99, 0.55) == 55
    assert min_calibration_points(0.95) == 19 and conformal_rank(18, 0.95) == 19
    np.testing.assert_allclose(normal_coverage_factor([0.95]), [1.959963984540054], rtol=1e-15)


def test_fit_and_apply_are_the_order_statistics():
    train, test = heavy(1000, 0), heavy(500, 1)
    rec = rc.fit(train, "conformal")
    scores = np.sort(np.abs(train.E.values) / train.uE.values)
    assert rec.coverage_level.values.tolist() == list(DEFAULT_LEVELS)
    for j, p in enumerate(DEFAULT_LEVELS):
        k = conformal_rank(1000, p)
        assert rec.score_rank.values[j] == k
        assert rec.score_quantile.values[j] == scores[k - 1]
        assert rec.expected_coverage.values[j] == k / 1001
    z = normal_coverage_factor(DEFAULT_LEVELS)
    assert float(rec.scale) == rec.score_quantile.values[0] / z[0]
    new = rc.apply(rec, test)
    assert new.conformal_half_width.dims == ("sample", "coverage_level")
    np.testing.assert_array_equal(new.conformal_half_width.values,
                                  test.uE.values[:, None] * rec.score_quantile.values)
    np.testing.assert_array_equal(new.uE.values, test.uE.values * float(rec.scale))
    np.testing.assert_array_equal(new.uE_uncalibrated.values, test.uE.values)
    assert new.attrs["recalibration_method"] == "conformal"
    assert new.attrs["recalibration_uE_level"] == 0.683
    # on the calibration set itself: at least k of the n scores are <= the k-th smallest
    own = rc.apply(rec, train)
    covered = (np.abs(own.E) <= own.conformal_half_width).sum("sample").values
    assert np.all(covered >= rec.score_rank.values)
    # the first level sets uE, whatever the order
    other = rc.fit(train, "conformal", coverage_levels=[0.95, 0.5])
    assert other.coverage_level.values.tolist() == [0.95, 0.5]
    assert float(other.scale) == other.score_quantile.values[0] / normal_coverage_factor([0.95])[0]
    # applying twice: the new half-widths replace the old ones, the original uE is kept
    twice = rc.apply(other, new)
    assert twice.coverage_level.values.tolist() == [0.95, 0.5]
    np.testing.assert_array_equal(twice.uE_uncalibrated.values, test.uE.values)
    assert twice.attrs["recalibration_history"].count("conformal") == 2


def test_mondrian_quantiles_per_learned_bin():
    train, test = heavy(1200, 2), heavy(600, 3)
    rec = rc.fit(train, "conformal", by="X", n_bins=4)
    bvs = rc.fit(train, "bvs", by="X", n_bins=4)
    # the bins are those of BVS: learned limits of analysis.binning, merged with bins_
    assert_results_identical(rc.learned_bins(rec), rc.learned_bins(bvs))
    new = rc.apply(rec, test)
    np.testing.assert_array_equal(new.recalibration_bin.values,
                                  rc.apply(bvs, test).recalibration_bin.values)
    index = rc.apply(rec, train).recalibration_bin.values
    scores = np.abs(train.E.values) / train.uE.values
    for b in range(4):
        inside = np.sort(scores[index == b])
        assert rec.train_count.values[b] == inside.size
        for j, p in enumerate(DEFAULT_LEVELS):
            assert rec.score_quantile.values[b, j] == inside[conformal_rank(inside.size, p) - 1]
    b = new.recalibration_bin.values
    np.testing.assert_array_equal(new.conformal_half_width.values,
                                  test.uE.values[:, None] * rec.score_quantile.values[b])
    np.testing.assert_array_equal(new.uE.values, test.uE.values * rec.scale.values[b])
    head, factors = repr(rc.Recalibrator(rec)).splitlines()
    assert head == ("<Recalibrator conformal, coverage_levels=(0.683, 0.95), by='X', n_bins=4, "
                    "loss='none'>")
    assert factors.startswith("  uE factors q/z at p = 0.683 by bin: X ≤ ")


# ------------------------------------------------------------------------------ acceptance


def test_split_conformal_covers_at_the_finite_sample_rate():
    """Mean held-out coverage over 300 splits (n = 100, 500 test points) is in
    [p, p + 1/(n + 1)] and equals k/(n + 1) within TOL_SE standard errors; ⌈n p⌉ and the
    Gaussian quantile fail the same check (module docstring)."""
    n, m = 100, 500
    levels = np.array(DEFAULT_LEVELS)
    conformal, ceil_np, gaussian = [], [], []
    z = normal_coverage_factor(levels)
    for cal, test in splits(n, m, seed=11):
        new = rc.apply(rc.fit(cal, "conformal"), test)
        conformal.append((np.abs(new.E) <= new.conformal_half_width).mean("sample").values)
        e, u = np.abs(test.E.values), test.uE.values
        scores = np.sort(np.abs(cal.E.values) / cal.uE.values)
        wrong = scores[[math.ceil(n * p) - 1 for p in levels]]
        ceil_np.append((e[:, None] <= wrong * u[:, None]).mean(axis=0))
        temperature = float(rc.fit(cal, "temperature").scale)
        gaussian.append((e[:, None] <= z * temperature * u[:, None]).mean(axis=0))
    mean, se = _mean_se(conformal)
    expected = np.array([conformal_rank(n, p) for p in levels]) / (n + 1)
    for j, p in enumerate(levels):
        assert _passes(mean[j], se[j], p, 1 / (n + 1)), (p, mean[j], se[j])
        assert abs(mean[j] - expected[j]) <= TOL_SE * se[j], (p, mean[j], expected[j])
    assert 0.0005 < se[1] < 0.003 and 0.001 < se[0] < 0.006  # the stated Monte Carlo error
    # the wrong rules fail: ⌈n p⌉ under-covers at 0.95, the Gaussian over-covers at 0.683
    wrong_mean, wrong_se = _mean_se(ceil_np)
    assert not _passes(wrong_mean[1], wrong_se[1], 0.95, 1 / (n + 1)), wrong_mean
    gauss_mean, gauss_se = _mean_se(gaussian)
    assert not _passes(gauss_mean[0], gauss_se[0], 0.683, 1 / (n + 1)), gauss_mean


def _group_coverage(new: xr.Dataset) -> np.ndarray:
    """Coverage per group (rows a, b, c) and level (columns)."""
    inside = (np.abs(new.E) <= new.conformal_half_width).values
    labels = new.group.values
    return np.array([inside[labels == g].mean(axis=0) for g in ("a", "b", "c")])


def test_mondrian_covers_in_every_group():
    """Groups with error scales 0.5, 1, 2 (100 splits of 900 + 900 points, about 300 per
    group): Mondrian quantiles cover >= p in every group on average (and at most
    p + <1/(n_g + 1)>); one global quantile does not."""
    mondrian, global_, inverse = [], [], []
    for i, (cal, test) in enumerate(splits(900, 900, seed=12, r=100)):
        rec = rc.fit(cal, "conformal", by="group", binning="groups")
        new = rc.apply(rec, test)
        mondrian.append(_group_coverage(new))
        inverse.append(1.0 / (rec.train_count.values + 1.0))
        global_.append(_group_coverage(rc.apply(rc.fit(cal, "conformal"), test)))
        if i == 0:  # the evaluation function gives the same per-group coverage
            cov = conformal_coverage(new, by="group", binning="groups")
            assert cov.label.values.tolist() == ["a", "b", "c"]
            np.testing.assert_array_equal(cov.bin_picp.values.T, mondrian[0])
    mean, se = _mean_se(mondrian)
    upper = np.mean(inverse, axis=0)
    for g in range(3):
        for j, p in enumerate(DEFAULT_LEVELS):
            assert _passes(mean[g, j], se[g, j], p, upper[g]), (g, p, mean[g, j], se[g, j])
    flat_mean, flat_se = _mean_se(global_)
    assert not all(_passes(flat_mean[g, j], flat_se[g, j], p, upper[g])
                   for g in range(3) for j, p in enumerate(DEFAULT_LEVELS))
    assert flat_mean[2, 1] < 0.95 - TOL_SE * flat_se[2, 1]  # the widest errors under-covered


def test_mondrian_on_a_feature_covers_in_every_learned_bin():
    """Bins of a continuous feature learned as value limits (the errors grow with X): 75
    splits of 600 + 600 points, 3 bins of 200 calibration points."""
    per_bin = []
    for cal, test in splits(600, 600, seed=13, r=75):
        rec = rc.fit(cal, "conformal", by="X", n_bins=3, coverage_levels=0.9)
        new = rc.apply(rec, test)
        inside = (np.abs(new.E) <= new.conformal_half_width).values[:, 0]
        index = new.recalibration_bin.values
        per_bin.append([inside[index == b].mean() for b in range(3)])
    mean, se = _mean_se(per_bin)
    for b in range(3):
        assert _passes(mean[b], se[b], 0.9, 1 / 201), (b, mean[b], se[b])


# ------------------------------------------------------------------------------ evaluation


def test_conformal_coverage_is_the_naive_computation():
    train, test = heavy(800, 4), heavy(3000, 5)
    new = rc.apply(rc.fit(train, "conformal", coverage_levels=[0.8, 0.95, 0.5]), test)
    cov = conformal_coverage(new, by="X", n_bins=6, tol=0.01, level=0.9)
    e = np.abs(test.E.values)
    hw = new.conformal_half_width.values
    inside = e[:, None] <= hw
    np.testing.assert_array_equal(cov.n_covered.values, inside.sum(axis=0))
    np.testing.assert_array_equal(cov.picp.values, inside.sum(axis=0) / 3000)
    lo, hi = wilson_interval(inside.sum(axis=0), 3000, 0.9)
    np.testing.assert_array_equal(cov.picp_low.values, lo)
    np.testing.assert_array_equal(cov.picp_high.values, hi)
    bins = xuqcal.make_bins(test, "X", n_bins=6)
    index = bins.bin_index.values
    levels = [0.8, 0.95, 0.5]
    assert cov.coverage_level.values.tolist() == levels
    for b in range(6):
        rows = index == b
        assert cov.bin_count.values[b] == rows.sum() == 500
        k = inside[rows].sum(axis=0)
        np.testing.assert_array_equal(cov.bin_n_covered.values[:, b], k)
        blo, bhi = wilson_interval(k, rows.sum(), 0.9)
        np.testing.assert_array_equal(cov.bin_picp_low.values[:, b], blo)
        valid = (blo <= np.array(levels) + 0.01) & (bhi >= np.array(levels) - 0.01)
        np.testing.assert_array_equal(cov.bin_valid.values[:, b], valid)
        np.testing.assert_allclose(cov.bin_mean_half_width.values[:, b], hw[rows].mean(axis=0),
                                   rtol=1e-12)
    np.testing.assert_array_equal(cov.fraction_valid.values, cov.bin_valid.mean("bin").values)
    np.testing.assert_array_equal(cov.bin_low.values, bins.bin_low.values)
    # a wider tolerance can only validate more bins
    wide = conformal_coverage(new, by="X", n_bins=6, tol=0.2, level=0.9)
    assert np.all(wide.bin_valid.values >= cov.bin_valid.values)
    assert np.all(wide.fraction_valid.values == 1.0)
    # uncalibrated Gaussian intervals of the raw uE, evaluated by the same function: poor
    raw = test.assign_coords(coverage_level=("coverage_level", [0.95])).assign(
        conformal_half_width=test.uE.expand_dims(coverage_level=[0.95]).T
        * normal_coverage_factor([0.95]))
    bad = conformal_coverage(raw, by="X", n_bins=6)
    assert float(bad.picp_high.sel(coverage_level=0.95)) < 0.95
    assert float(bad.fraction_valid.sel(coverage_level=0.95)) < 0.5


def test_per_slice_fit_apply_and_coverage():
    sets = {"A": heavy(600, 6).drop_vars("group"), "B": heavy(400, 7).drop_vars("group")}
    stack = xr.concat(list(sets.values()), dim="model", join="outer").assign_coords(
        model=list(sets))
    fitted = rc.fit(stack, "conformal", coverage_levels=[0.9])
    applied = rc.apply(fitted, stack)
    cov = conformal_coverage(applied, n_bins=4)
    for model, ds in sets.items():
        single = rc.fit(ds, "conformal", coverage_levels=[0.9])
        np.testing.assert_array_equal(fitted.score_quantile.sel(model=model).values,
                                      single.score_quantile.values)
        alone = rc.apply(single, ds)
        m = ds.sizes["sample"]
        np.testing.assert_array_equal(
            applied.conformal_half_width.sel(model=model).values[:m],
            alone.conformal_half_width.values)
        np.testing.assert_array_equal(cov.picp.sel(model=model).values,
                                      conformal_coverage(alone, n_bins=4).picp.values)


# ----------------------------------------------------------------------------- persistence


@pytest.mark.parametrize("kwargs", [dict(), dict(coverage_levels=[0.5, 0.9, 0.99]),
                                    dict(by="X", n_bins=5), dict(by="uE", n_bins=3),
                                    dict(by="group", binning="groups")])
def test_netcdf_round_trip_gives_identical_outputs(kwargs, tmp_path):
    train, test = heavy(2000, 8), heavy(700, 9)
    rec = rc.fit(train, "conformal", **kwargs)
    path = xuqcal.to_netcdf(rec, tmp_path / "conformal.nc")
    with xr.open_dataset(path) as reopened:
        again = rc.apply(reopened, test)
    direct = rc.apply(rec, test)
    np.testing.assert_array_equal(direct.conformal_half_width.values,
                                  again.conformal_half_width.values)
    np.testing.assert_array_equal(direct.uE.values, again.uE.values)
    assert_results_identical(direct, again)
    wrapped = rc.Recalibrator.open(path)
    assert wrapped.method == "conformal"
    assert_results_identical(wrapped.apply(test), direct)


# ---------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("kwargs, match", [
    (dict(coverage_levels=1.0), r"coverage_levels: expected coverage levels in \(0, 1\)"),
    (dict(coverage_levels=[0.9, 0.0]), r"coverage_levels: expected coverage levels in \(0, 1\)"),
    (dict(coverage_levels=[0.5, 1.5]), r"coverage_levels: .* got 1.5"),
    (dict(coverage_levels=-0.1), "levels"),
    (dict(coverage_levels="0.9"), "levels"),
    (dict(coverage_levels=[True]), "levels"),
    (dict(coverage_levels=[]), "coverage_levels: expected at least one"),
    (dict(coverage_levels=[0.9, 0.9]), "coverage_levels: a level is listed twice"),
    (dict(coverage_levels=[0.5, 0.999]), r"coverage_levels: the conformal quantile at level "
                                         r"0.999 .* at least 999 points, but the calibration "
                                         r"set has 500"),
    (dict(n_bins=4), "n_bins: global conformal recalibration does not bin"),
    (dict(binning="groups"), "binning: global conformal"),
    (dict(by=("uE", "X")), "by: Mondrian conformal bins take one variable"),
    (dict(by="X", binning="grid"), "binning: expected one of 'equal', 'groups'"),
    (dict(by="E"), "by: the errors 'E' cannot be a binning variable"),
    (dict(by="group", binning="groups", n_bins=3), "n_bins: group binning"),
    (dict(by="X9"), "X9"),
    (dict(by="X", n_bins=0), "n_bins"),
    (dict(by="X", n_bins=50), r"coverage_levels: the conformal quantile at level 0.95 .* at "
                              r"least 19 points, but bins 0, 1, 2, 3, 4 \(and 45 more\) have "
                              r"10, 10, 10, 10, 10, ...; use fewer bins"),
    (dict(loss="s_tot"), "loss: method='conformal' has no loss"),
    (dict(seed=-1), "seed"),
])
def test_fit_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rc.fit(heavy(500, 10), "conformal", **kwargs)


def test_too_few_points_and_other_errors():
    small = heavy(18, 10)
    with pytest.raises(ValueError, match=r"at least 19 points, but the calibration set has 18"):
        rc.fit(small, "conformal")
    rc.fit(heavy(19, 10), "conformal")  # the smallest set with a finite 0.95 quantile
    ds = heavy(300, 11)
    labels = np.where(np.arange(300) < 10, "rare", ds.group.values)
    with pytest.raises(ValueError, match=r"0.95 .* but group 'rare' has 10; merge small"):
        rc.fit(ds.assign(group=("sample", labels)), "conformal", by="group", binning="groups")
    with pytest.raises(ValueError, match="coverage_levels: method='bvs' has no coverage levels"):
        rc.fit(ds, "bvs", coverage_levels=[0.9])
    with pytest.raises(ValueError, match=r"method: expected one of .*'conformal'"):
        rc.fit(ds, "conformal_typo")
    rec = rc.fit(ds, "conformal", by="group", binning="groups")
    with pytest.raises(ValueError, match=r"group: labels not seen .*\['zz'\]"):
        rc.apply(rec, ds.assign(group=("sample", np.full(300, "zz"))))
    with pytest.raises(ValueError, match="by: the variable 'X'"):
        rc.apply(rc.fit(ds, "conformal", by="X", n_bins=3), ds.drop_vars("X"))
    with pytest.raises(ValueError, match="ds: has a variable or dimension 'coverage_level'"):
        rc.apply(rc.fit(ds, "conformal"), ds.assign(coverage_level=("sample", np.zeros(300))))
    zero = ds.assign(E=ds.E.where(ds.sample >= 250, 0.0))  # 250 of 300 errors are 0
    with pytest.raises(ValueError, match=r"E: the conformal quantile at the first level 0\.683 "
                                         r"is 0"):
        rc.fit(zero, "conformal")
    assert rc.fit(zero, "conformal", coverage_levels=[0.95]).score_quantile.item() > 0
    with pytest.raises(ValueError, match="recalibrator: method 'conformal' has no bins"):
        rc.learned_bins(rc.fit(ds, "conformal"))
    new = rc.apply(rc.fit(ds, "conformal"), ds)
    for kwargs, match in [(dict(tol=-0.1), "tol"), (dict(tol=1.0), "tol"),
                          (dict(level=1.5), "level"), (dict(binning="grid"), "binning"),
                          (dict(by="group", binning="groups", n_bins=3), "n_bins"),
                          (dict(by="nope"), "by: the binning variable 'nope'"),
                          (dict(n_bins=200), "n_bins=200 needs")]:
        with pytest.raises(ValueError, match=match):
            conformal_coverage(new, **kwargs)
    with pytest.raises(ValueError, match="half_width: the variable 'conformal_half_width'"):
        conformal_coverage(ds)
    broken = new.conformal_half_width.copy()
    broken[4, 0] = np.nan
    with pytest.raises(ValueError, match="half_width: 1 of 600 half-widths are negative or NaN"):
        conformal_coverage(new.assign(conformal_half_width=broken))
