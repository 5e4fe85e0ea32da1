"""Coverage statistics (PICP, METHODS §9): keys, factors, known answers, and their validation
(Wilson-cc interval, overlap of [p - tol, p + tol], heavy-tail screening) in ``stats``,
``validate`` (fixed and ``"auto"`` counts, lazy, many sets) and the CLI."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import stats as sps

import xuqcal
from xuqcal.analysis.validation import NOT_TESTABLE_PREFIX, summary_table
from xuqcal.core.coverage import (
    band_zeta,
    count_covered,
    fit_student_nu,
    normal_coverage_factor,
    student_coverage_factor,
)
from xuqcal.core.intervals import wilson_interval, zeta
from xuqcal.core.statistics import coverage_statistic, get_statistics

ROOT = Path(__file__).resolve().parents[1]


def student_errors(nu: float, m: int, seed: int) -> xr.Dataset:
    """Calibrated data with unit-variance Student-t(ν) z-scores, ``E = uE T / sqrt(ν/(ν-2))``
    (TARGETS.md, known answers for interval-based validation)."""
    rng = np.random.default_rng(seed)
    uE = np.exp(rng.normal(0.0, 0.5, m))
    E = uE * rng.standard_t(nu, m) / math.sqrt(nu / (nu - 2.0))
    return xuqcal.from_arrays(E, uE)


def exact_coverage(nu: float, k: float) -> float:
    """P(|T| sqrt((ν-2)/ν) <= k) for T ~ t(ν)."""
    return 2.0 * sps.t.cdf(k * math.sqrt(nu / (nu - 2.0)), nu) - 1.0


# ------------------------------------------------------------------------------ keys, factors


def test_keys_and_expansion():
    keys = [s.key for s in get_statistics(["zms", "picp", "picpt95", "picp90"], coverage=True)]
    assert keys == ["zms", "picp68.3", "picp95", "picpt95", "picp90"]
    s = coverage_statistic(0.683)
    assert (s.key, s.level, s.reference, s.kind, s.tail_sensitive) == \
        ("picp68.3", 0.683, 0.683, "coverage", True)
    assert coverage_statistic(0.9, "student").key == "picpt90"
    assert get_statistics("picp99.5", coverage=True)[0].level == pytest.approx(0.995)


@pytest.mark.parametrize("keys, message", [
    (["picp101"], "percentage in (0, 100)"),
    (["picp0"], "percentage in (0, 100)"),
    (["picp95", "picp95"], "listed twice"),
    (["picp", "picp95"], "listed twice"),
    (["picpx"], "unknown statistic 'picpx'"),
])
def test_bad_keys(keys, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        get_statistics(keys, coverage=True)


@pytest.mark.parametrize("call", [
    lambda ds: xuqcal.bootstrap(ds, ["zms", "picp95"]),
    lambda ds: xuqcal.simulate(ds, ["picp95"]),
])
def test_kernel_analyses_refuse_coverage_statistics_by_name(call):
    ds = xuqcal.synthetic.nig(200, nu=6, seed=0)
    with pytest.raises(ValueError, match="'picp95' is a coverage statistic"):
        call(ds)


def test_factors():
    assert normal_coverage_factor(0.95) == pytest.approx(1.959963984540054, rel=1e-15)
    assert normal_coverage_factor(0.683) == pytest.approx(sps.norm.ppf(0.8415), rel=1e-14)
    for nu in (2.5, 3.0, 6.0, 40.0):
        k = student_coverage_factor(0.95, nu)
        # the unit-variance Student-t covers exactly 0.95 within ±k
        assert exact_coverage(nu, k) == pytest.approx(0.95, abs=1e-12)
    with pytest.raises(ValueError, match="ν > 2"):
        student_coverage_factor(0.95, 2.0)


def test_fit_student_nu_recovers_nu_and_scale_free():
    rng = np.random.default_rng(4)
    for nu in (3.0, 5.0, 10.0):
        z = rng.standard_t(nu, 50_000)
        fitted = fit_student_nu(z)
        assert fitted == pytest.approx(nu, rel=0.12), nu
        assert fit_student_nu(3.7 * z) == pytest.approx(fitted, rel=1e-3)  # the scale is fitted
    assert fit_student_nu(rng.standard_normal(50_000)) > 100
    assert math.isnan(fit_student_nu(np.ones(10)))
    assert math.isnan(fit_student_nu(np.array([1.0, 2.0])))


def test_fit_student_nu_leaves_the_warning_filters_alone():
    """The optimiser's trial points overflow: silenced by NumPy's per-thread error state, not
    by ``warnings.catch_warnings``, which rewrites the process's filters (tfit's fit runs in a
    thread beside validate's first rounds, whose own ``catch_warnings`` it could undo)."""
    z = np.random.default_rng(5).standard_t(2.5, 20_000)
    before = list(warnings.filters)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inside = list(warnings.filters)
        nu = fit_student_nu(z)
        assert warnings.filters == inside
    assert not caught and 2.0 < nu < 3.5
    assert warnings.filters == before


def test_the_shared_fit_is_scipy_s_bit_for_bit(monkeypatch):
    """tfit's fit evaluates the log-density on the cores in shares (coverage._scaled_f) and
    sums it as scipy does: every objective value, hence the fitted (ν, s), is scipy's own.
    Shares end at odd positions; one z² is 0 (an infinite density, counted as scipy counts
    it); a negative value is outside the support (scipy's own evaluation)."""
    from xuqcal.core import coverage

    maps = []
    pool = coverage.numpy_pool()

    class Spy:
        def map(self, function, items):
            items = list(items)
            maps.append(len(items))
            return pool.map(function, items)

    monkeypatch.setattr(coverage, "numpy_pool", lambda: Spy())
    shared = coverage._scaled_f()
    assert shared._scipy is False  # the mirror matches this scipy
    rng = np.random.default_rng(9)
    z2 = (1.7 * rng.standard_t(4.5, 2 * coverage.LOGPDF_SHARE + 12_345)) ** 2
    z2[100] = 0.0
    outside = z2.copy()
    outside[5] = -1.0
    with np.errstate(all="ignore"):
        for theta in ((1.0, 4.5, 0.0, 2.9), (1.0, 30.0, 0.0, 1.0), (1.0, 0.5, 0.0, 7.0)):
            for x in (z2, outside):
                assert shared._penalized_nnlf(theta, x) == sps.f._penalized_nnlf(theta, x)
        assert (maps and all(count >= 2 for count in maps)) or (os.cpu_count() or 1) < 2
        scale = float(np.median(z2)) / float(sps.f.median(1, 10.0))
        ours = shared.fit(z2, 10.0, f0=1.0, floc=0.0, scale=scale)
        scipy_s = sps.f.fit(z2, 10.0, f0=1.0, floc=0.0, scale=scale)
    assert ours == scipy_s


def test_count_covered_is_inclusive():
    z = np.array([-1.0, 1.0, 1.0 + 1e-15, -2.0, np.nan])
    assert count_covered(z, 1.0) == 2


def test_band_zeta_is_the_overlap_rule():
    rng = np.random.default_rng(0)
    p, tol = 0.95, 0.005
    estimate = rng.uniform(0.9, 1.0, 2000)
    low = estimate - rng.uniform(0.0, 0.03, 2000)
    high = estimate + rng.uniform(0.0, 0.03, 2000)
    z = band_zeta(estimate, p, tol, low, high)
    overlaps = (low <= p + tol) & (high >= p - tol)
    np.testing.assert_array_equal(np.abs(z) <= 1.0, overlaps)
    inside = np.abs(estimate - p) <= tol
    assert np.all(z[inside] == 0.0)
    # tol = 0: the ordinary zeta against p
    np.testing.assert_allclose(band_zeta(estimate, p, 0.0, low, high),
                               zeta(estimate, p, low, high), rtol=1e-12)


# --------------------------------------------------------------------------------- known answers


@pytest.mark.parametrize("nu, published", [(3, 0.9574), (4, 0.9498), (6, 0.9467), (20, 0.9480)])
def test_picp_of_student_errors_agrees_with_exact_coverage(nu, published):
    """TARGETS.md: at k = 1.96 the coverage of unit-variance t(ν) errors is
    2 F_t,ν(1.96 sqrt(ν/(ν-2))) - 1; PICP lies within its binomial interval of it."""
    assert round(exact_coverage(nu, 1.96), 4) == published
    m = 200_000
    ds = student_errors(nu, m, seed=nu)
    v = xuqcal.validate(ds, ["picp95"], n_boot=100, n_mc=100)
    picp = float(v.estimate.sel(statistic="picp95"))
    exact = exact_coverage(nu, float(v.coverage_factor.sel(statistic="picp95")))
    low, high = float(v.ci_low.sel(statistic="picp95")), float(v.ci_high.sel(statistic="picp95"))
    assert low <= exact <= high
    assert high - low < 0.0025  # an interval this narrow tells 0.9574 from 0.95
    # the Wilson-cc interval of the count, as scipy computes it
    count = round(picp * m)
    ci = sps.binomtest(count, m).proportion_ci(method="wilsoncc")
    assert (low, high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert picp == count / m


def test_student_factor_restores_nominal_coverage_of_heavy_tails():
    ds = student_errors(3, 100_000, seed=11)
    v = xuqcal.validate(ds, ["picp95", "picpt95"], n_boot=100, n_mc=100,
                        heavy_tail_threshold=None)
    assert str(v.verdict.sel(statistic="picp95").values) == "fail"  # 1.96 over-covers at ν = 3
    assert str(v.verdict.sel(statistic="picpt95").values) == "pass"
    assert float(v.nu_fitted.sel(statistic="picpt95")) == pytest.approx(3.0, rel=0.1)
    assert float(v.nu_fitted.sel(statistic="picp95")) == math.inf
    assert float(v.coverage_factor.sel(statistic="picpt95")) < 1.96


def test_stats_gives_the_fraction_covered():
    ds = xuqcal.synthetic.nig(5000, nu=6, seed=2)
    z = ds.E.values / ds.uE.values
    value = xuqcal.stats(ds, ["zms", "picp95", "picp68.3"])
    assert value.statistic.values.tolist() == ["zms", "picp95", "picp68.3"]
    assert float(value.sel(statistic="picp95")) == np.mean(np.abs(z) <= normal_coverage_factor(
        0.95))
    assert float(value.sel(statistic="picp68.3")) == np.mean(np.abs(z) <= normal_coverage_factor(
        0.683))
    # the kernel statistics are those of a call without coverage statistics, bit for bit
    assert float(value.sel(statistic="zms")) == float(xuqcal.stats(ds, ["zms"]).item())


# -------------------------------------------------------------------------------- validation


@pytest.fixture(scope="module")
def mixed():
    ds = xuqcal.synthetic.nig(4000, nu=6, seed=5)
    keys = ["zms", "picp", "cc"]
    return ds, keys, xuqcal.validate(ds, keys, n_boot=400, n_mc=400)


def test_validate_coverage_rows(mixed):
    ds, _, v = mixed
    assert v.statistic.values.tolist() == ["zms", "picp68.3", "picp95", "cc"]
    z = ds.E.values / ds.uE.values
    for key, p in (("picp68.3", 0.683), ("picp95", 0.95)):
        r = v.sel(statistic=key)
        k = normal_coverage_factor(p)
        count = int(np.sum(np.abs(z) <= k))
        low, high = wilson_interval(count, z.size, 0.95)
        assert float(r.estimate) == count / z.size
        assert (float(r.ci_low), float(r.ci_high)) == (float(low), float(high))
        assert float(r.se) == pytest.approx(math.sqrt(count / z.size * (1 - count / z.size)
                                                      / z.size), rel=1e-14)
        assert math.isnan(float(r.bias))
        assert float(r.reference.sel(scheme="BS")) == p
        assert float(r.zeta.sel(scheme="BS")) == float(band_zeta(count / z.size, p, 0.005,
                                                                 low, high))
        assert np.isnan(r.zeta.drop_sel(scheme="BS").values).all()  # nothing simulated
        assert str(r.verdict_scheme.values) == "BS"
        assert float(r.coverage_factor) == k
    assert np.isnan(v.coverage_factor.sel(statistic=["zms", "cc"]).values).all()
    assert v.attrs["coverage_tolerance"] == 0.005
    assert v.attrs["coverage_statistics"] == "picp68.3, picp95"
    assert "picp95" in v.attrs["heavy_tail_screening"]


def test_kernel_rows_do_not_change_with_coverage_statistics(mixed):
    ds, _, v = mixed
    alone = xuqcal.validate(ds, ["zms", "cc"], n_boot=400, n_mc=400)
    both = v.sel(statistic=["zms", "cc"])
    for name in ("estimate", "bias", "se", "ci_low", "ci_high", "zeta", "reference",
                 "sim_mean", "sim_q975"):
        np.testing.assert_array_equal(both[name].values, alone[name].values, err_msg=name)
    assert both.verdict.values.tolist() == alone.verdict.values.tolist()
    assert "coverage_factor" not in alone  # only with coverage statistics


def test_undefined_student_factor_is_nan_and_said():
    """ν fitted below 2 (a Student-t of infinite variance): no unit-variance quantile."""
    z = np.random.default_rng(0).standard_t(1.3, size=2000)
    ds = xuqcal.from_arrays(z, np.ones(2000))
    with pytest.warns(xuqcal.UndefinedStatisticWarning, match="picpt95 is undefined: the nu "
                                                              "fitted to Z is 1.29 <= 2"):
        value = xuqcal.stats(ds, ["picpt95", "picp95"])
    assert np.isnan(value.values[0]) and value.values[1] == np.mean(np.abs(z) <= 1.959963984540054)
    v = xuqcal.validate(ds, ["picpt95"], n_boot=100, n_mc=100, heavy_tail_threshold=None)
    assert np.isnan(v.estimate.item()) and str(v.verdict.item()).startswith("undecided")
    assert "The coverage factor is undefined: the nu fitted to Z is 1.29" in str(
        v.verdict_note.item())


def test_tol_decides_the_verdict():
    """A count whose Wilson interval misses 0.95 by less than tol passes, and fails at tol=0."""
    rng = np.random.default_rng(9)
    m = 20_000
    uE = np.ones(m)
    # 95.7 % of |Z| <= 1.96: the interval (about [0.954, 0.960]) misses 0.95 but meets
    # [0.95 - tol, 0.95 + tol] when tol >= ci_low - 0.95
    covered = int(0.957 * m)
    E = np.concatenate([rng.uniform(-1.9, 1.9, covered), rng.choice([-3.0, 3.0], m - covered)])
    ds = xuqcal.from_arrays(E, uE)
    low = float(xuqcal.validate(ds, ["picp95"], n_boot=100, n_mc=100).ci_low.item())
    assert 0.95 < low < 0.955
    for tol, verdict in ((0.0, "fail"), (low - 0.95 + 1e-9, "pass"),
                         (low - 0.95 - 1e-9, "fail"), (0.005, "pass")):
        v = xuqcal.validate(ds, ["picp95"], n_boot=100, n_mc=100, tol=tol,
                            heavy_tail_threshold=None)
        assert str(v.verdict.item()) == verdict, tol


def test_heavy_tails_make_picp_not_testable():
    ds = student_errors(2.2, 20_000, seed=3)
    v = xuqcal.validate(ds, ["picp95", "zms"], n_boot=200, n_mc=200)
    assert float(v.beta_gm_z2) > 0.85
    for key in ("picp95", "zms"):
        assert str(v.verdict.sel(statistic=key).values).startswith(NOT_TESTABLE_PREFIX)
    assert np.isfinite(v.zeta.sel(statistic="picp95", scheme="BS"))


def test_auto_counts_and_coverage_only():
    ds = xuqcal.synthetic.nig(3000, nu=6, seed=8)
    fixed = xuqcal.validate(ds, ["picp95", "zms"], n_boot=500, n_mc=500)
    auto = xuqcal.validate(ds, ["picp95", "zms"], n_boot="auto", n_mc="auto")
    for name in ("estimate", "ci_low", "ci_high", "se", "coverage_factor"):
        assert float(auto[name].sel(statistic="picp95")) == \
            float(fixed[name].sel(statistic="picp95")), name
    only = xuqcal.validate(ds, ["picp"], n_boot="auto", n_mc="auto")
    only_fixed = xuqcal.validate(ds, ["picp"], n_boot=100, n_mc=100)
    assert only.attrs["n_boot"] == 0 and only_fixed.attrs["n_boot"] == 0  # nothing bootstrapped
    np.testing.assert_array_equal(only.zeta.values, only_fixed.zeta.values)
    assert only.verdict.values.tolist() == only_fixed.verdict.values.tolist()
    assert "Wilson" in summary_table(only)


def test_lazy_and_many_sets_equal_eager():
    sets = [xuqcal.synthetic.nig(1500, nu=6, seed=s) for s in (1, 2)]
    stacked = xr.concat(sets, dim="model").assign_coords(model=["a", "b"])
    keys = ["picp95", "zms"]
    many = xuqcal.validate(stacked, keys, n_boot=200, n_mc=200)
    lazy = xuqcal.validate(stacked.chunk(), keys, n_boot=200, n_mc=200)
    assert lazy.estimate.chunks is not None
    lazy = lazy.compute()
    for i, ds in enumerate(sets):
        one = xuqcal.validate(ds, keys, n_boot=200, n_mc=200)
        for name in ("estimate", "ci_low", "ci_high", "zeta", "coverage_factor"):
            np.testing.assert_array_equal(many[name].isel(model=i).values, one[name].values)
            np.testing.assert_array_equal(lazy[name].isel(model=i).values, one[name].values)
        assert many.verdict.isel(model=i).values.tolist() == one.verdict.values.tolist()


def test_bad_tol():
    ds = xuqcal.synthetic.nig(100, nu=6, seed=0)
    with pytest.raises(ValueError, match=r"tol: expected a tolerance in \[0, 1\)"):
        xuqcal.validate(ds, ["picp95"], tol=-0.1)


def test_cli_validates_coverage_statistics(tmp_path, capsys):
    from xuqcal.cli import main

    ds = xuqcal.synthetic.nig(2000, nu=6, seed=1)
    ds["E"].attrs["role"] = "E"
    ds["uE"].attrs["role"] = "uE"
    path = tmp_path / "data.csv"
    ds[["E", "uE"]].to_dataframe().to_csv(path, index=False)
    out = tmp_path / "v.nc"
    capsys.readouterr()
    status = main(["validate", str(path), "--E", "E", "--uE", "uE",
                   "--statistics", "zms,picp95,picpt95", "--n-boot", "200", "--n-mc", "200",
                   "--tol", "0.01", "-o", str(out)])
    run = capsys.readouterr()
    assert status == 0, run.err
    assert "picp95" in run.out and "Wilson" in run.out
    with xr.open_dataset(out) as saved:
        assert saved.attrs["coverage_tolerance"] == 0.01
        api = xuqcal.validate(xuqcal.from_arrays(ds.E.values, ds.uE.values),
                              ["zms", "picp95", "picpt95"], n_boot=200, n_mc=200, tol=0.01)
        np.testing.assert_array_equal(saved.estimate.values, api.estimate.values)
    bad = subprocess.run(
        [sys.executable, "-m", "xuqcal", "validate", str(path), "--E", "E", "--uE", "uE",
         "--statistics", "picp150"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2
    assert "--statistics: 'picp150': the coverage level is a percentage" in bad.stderr
