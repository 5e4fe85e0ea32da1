"""Local coverage probability (LCP) with the overlap rule and the heavy-tail screening of bins
(METHODS §9, issue 15): xuqcal.curves.local_coverage, the β_GM columns of xuqcal.local (LZMS)
and xuqcal.reliability, and the greyed-out bins of their figures."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.container import ErrorbarContainer
from plotting import render

import xuqcal
from xuqcal import plot
from xuqcal.analysis import curves
from xuqcal.analysis.validation import robust_skewness_z2
from xuqcal.core import defaults
from xuqcal.core.coverage import student_coverage_factor
from xuqcal.core.intervals import wilson_interval
from xuqcal.core.statistics import beta_gm

GREY = mcolors.to_rgb("0.7")


def dataset(E, uE, **extra) -> xr.Dataset:
    ds = xuqcal.io.from_arrays(np.asarray(E, float), np.asarray(uE, float))
    return ds.assign({name: ("sample", np.asarray(v)) for name, v in extra.items()})


def calibrated(m: int, seed: int) -> xr.Dataset:
    """Normal errors with exactly the stated uncertainties (uE log-uniform over a decade)."""
    rng = np.random.default_rng(seed)
    uE = np.exp(rng.uniform(0.0, np.log(10.0), m))
    return dataset(uE * rng.standard_normal(m), uE)


def heavy_in_upper_half(m: int, seed: int, nu: float = 2.5) -> xr.Dataset:
    """Unit-variance Student-t(nu) z-scores above the median uE, normal ones below."""
    rng = np.random.default_rng(seed)
    uE = np.exp(rng.uniform(0.0, np.log(10.0), m))
    t = rng.standard_t(nu, m) * np.sqrt((nu - 2) / nu)
    z = np.where(uE > np.median(uE), t, rng.standard_normal(m))
    return dataset(uE * z, uE)


def sorted_rows(values: np.ndarray, n_bins: int) -> list[np.ndarray]:
    """The rows of each equal-count bin, written out without the library's helpers: sort by
    (value, row), bin b = sorted positions [floor(b M / N), floor((b + 1) M / N))."""
    m = len(values)
    order = np.array(sorted(range(m), key=lambda i: (values[i], i)))
    return [order[b * m // n_bins:(b + 1) * m // n_bins] for b in range(n_bins)]


# ------------------------------------------------------------------------- known answers


def test_calibrated_normal_data_almost_all_bins_valid():
    lc = curves.local_coverage(calibrated(20_000, seed=1), n_bins=20)
    assert float(lc.fraction_valid) >= 0.9
    assert float(lc.fraction_valid_low) <= 0.95 <= float(lc.fraction_valid_high)
    assert np.all(np.abs(lc.coverage.values - 0.95) < 0.025)  # 1000 points: sd 0.0069
    # normal Z²: β_GM ≈ 0.63 in every bin, far below 0.85
    assert np.all(np.abs(lc.beta_gm_z2.values - 0.63) < 0.08)
    assert not lc.heavy_tail.any() and int(lc.n_heavy_tail) == 0
    assert float(lc.fraction_valid_testable) == float(lc.fraction_valid)


def test_uncertainties_30_percent_too_small_in_half_the_range_fail_there():
    rng = np.random.default_rng(2)
    m = 20_000
    uE = np.exp(rng.uniform(0.0, np.log(10.0), m))  # the reported uncertainties
    upper = uE > np.median(uE)
    sigma = np.where(upper, uE / 0.7, uE)  # uE 30 % too small in the upper half of its range
    lc = curves.local_coverage(dataset(sigma * rng.standard_normal(m), uE), n_bins=20)
    # the upper 10 bins cover P(|N| <= 1.96 * 0.7) = 0.830, far below 0.95 - 0.005: with 1000
    # points per bin their Wilson intervals end near 0.85
    assert not lc.valid.values[10:].any()
    assert np.all(np.abs(lc.coverage.values[10:] - 0.830) < 0.04)
    assert np.all(lc.ci_high.values[10:] < 0.9)
    assert lc.valid.values[:10].mean() >= 0.8
    assert float(lc.fraction_valid_high) < 0.95


def test_matches_a_direct_computation_of_every_column():
    ds = heavy_in_upper_half(3000, seed=3)
    x = np.round(np.random.default_rng(4).uniform(size=3000), 1)  # ties
    ds = ds.assign(x=("sample", x))
    E, uE = ds.E.values, ds.uE.values
    p, tol, n_bins = 0.9, 0.01, 8
    lc = curves.local_coverage(ds, by="x", coverage_level=p, n_bins=n_bins, generator="t6", tol=tol,
                               heavy_tail_threshold=0.8)
    k = student_coverage_factor(p, 6)  # the factor of a unit-variance t6
    assert lc.attrs["quantile"] == pytest.approx(k, rel=1e-12)
    valid, heavy = [], []
    for b, rows in enumerate(sorted_rows(x, n_bins)):
        one = lc.isel(bin=b)
        inside = int(np.sum(np.abs(E[rows]) <= uE[rows] * lc.attrs["quantile"]))
        lo, hi = wilson_interval(inside, len(rows), 0.95)
        assert int(one["count"]) == len(rows) and int(one.n_inside) == inside
        assert float(one.coverage) == inside / len(rows)
        assert float(one.ci_low) == pytest.approx(lo, rel=1e-14)
        assert float(one.ci_high) == pytest.approx(hi, rel=1e-14)
        valid.append(lo <= p + tol and hi >= p - tol)
        beta = robust_skewness_z2(E[rows], uE[rows])
        assert float(one.beta_gm_z2) == pytest.approx(beta, rel=1e-12, abs=1e-14)
        assert float(one.beta_gm_z2) == pytest.approx(beta_gm((E[rows] / uE[rows]) ** 2),
                                                      rel=1e-12, abs=1e-14)
        heavy.append(beta > 0.8)
        assert float(one.bin_low) == x[rows].min() and float(one.bin_high) == x[rows].max()
    np.testing.assert_array_equal(lc.valid.values, valid)
    np.testing.assert_array_equal(lc.heavy_tail.values, heavy)
    n_valid = sum(valid)
    lo, hi = wilson_interval(n_valid, n_bins, 0.95)
    assert float(lc.fraction_valid) == n_valid / n_bins
    assert float(lc.fraction_valid_low) == pytest.approx(lo, rel=1e-14)
    assert float(lc.fraction_valid_high) == pytest.approx(hi, rel=1e-14)
    testable = ~np.array(heavy)
    assert int(lc.n_heavy_tail) == int(np.sum(heavy))
    kept = int(np.sum(np.array(valid) & testable))
    assert float(lc.fraction_valid_testable) == kept / int(testable.sum())
    lo, hi = wilson_interval(kept, int(testable.sum()), 0.95)
    assert float(lc.fraction_valid_testable_low) == pytest.approx(lo, rel=1e-14)
    assert float(lc.fraction_valid_testable_high) == pytest.approx(hi, rel=1e-14)
    assert lc.attrs["tol"] == tol and lc.attrs["heavy_tail_threshold"] == 0.8
    assert lc.attrs["coverage_level"] == p and lc.attrs["generator"] == "t6"


def test_tol_zero_is_the_former_contains_rule():
    ds = heavy_in_upper_half(4000, seed=5)
    zero = curves.local_coverage(ds, n_bins=40, tol=0)
    np.testing.assert_array_equal(
        zero.valid.values, (zero.ci_low.values <= 0.95) & (0.95 <= zero.ci_high.values))
    band = curves.local_coverage(ds, n_bins=40)  # default tol = 0.005
    assert band.attrs["tol"] == defaults.COVERAGE_TOLERANCE == 0.005
    np.testing.assert_array_equal(
        band.valid.values, (band.ci_low.values <= 0.955) & (0.945 <= band.ci_high.values))
    assert np.all(band.valid.values >= zero.valid.values)  # the band only adds valid bins
    for name in ("coverage", "count", "n_inside", "ci_low", "ci_high", "beta_gm_z2",
                 "heavy_tail", "bin_centre"):
        np.testing.assert_array_equal(band[name].values, zero[name].values)


def boundary_data(k_inside: int, n: int = 1000) -> xr.Dataset:
    """Two bins of n points (uE = 1, binned on x): bin 0 has exactly ``k_inside`` points
    inside the 0.95-interval (E = 0), the others far outside (E = 3); bin 1 is 950 / 1000."""
    E = np.concatenate([np.where(np.arange(n) < k_inside, 0.0, 3.0),
                        np.where(np.arange(n) < 950, 0.0, 3.0)])
    x = np.concatenate([np.zeros(n), np.ones(n)])
    return dataset(E, np.ones(2 * n), x=x)


def test_overlap_rule_at_a_constructed_boundary():
    # the largest count whose Wilson-cc interval (n = 1000) ends below 0.95 ...
    k = max(k for k in range(900, 950) if wilson_interval(k, 1000, 0.95)[1] < 0.95)
    high = float(wilson_interval(k, 1000, 0.95)[1])
    gap = 0.95 - high  # ... ends 0 < gap < 0.005 short of p
    assert 0 < gap < 0.005
    ds = boundary_data(k)
    run = {tol: curves.local_coverage(ds, by="x", n_bins=2, tol=tol, heavy_tail_threshold=None)
           for tol in (0.0, gap * 0.999, gap * 1.001, 0.005)}
    assert [bool(r.valid[0]) for r in run.values()] == [False, False, True, True]
    assert all(bool(r.valid[1]) for r in run.values())
    assert float(run[0.005].ci_high[0]) == pytest.approx(high, rel=1e-15)
    assert [float(r.fraction_valid) for r in run.values()] == [0.5, 0.5, 1.0, 1.0]
    # over-coverage: the smallest count whose interval starts above 0.95 + tol is invalid
    k = min(k for k in range(950, 1000) if wilson_interval(k, 1000, 0.95)[0] > 0.955)
    lc = curves.local_coverage(boundary_data(k), by="x", n_bins=2)
    assert not bool(lc.valid[0]) and float(lc.ci_low[0]) > 0.955
    lc = curves.local_coverage(boundary_data(k - 1), by="x", n_bins=2,
                               tol=float(wilson_interval(k - 1, 1000, 0.95)[0]) - 0.95 + 1e-9)
    assert bool(lc.valid[0])


# -------------------------------------------------------------------- heavy-tail screening


def test_heavy_tailed_bins_are_flagged():
    ds = heavy_in_upper_half(10_000, seed=6)
    lc = curves.local_coverage(ds, n_bins=10, heavy_tail_threshold=0.8)
    beta = lc.beta_gm_z2.values
    # unit-variance t(2.5) z-scores: β_GM(Z²) ≈ 0.89 in bins of 1000; normal ones ≈ 0.63
    assert np.all(beta[6:] > 0.83) and np.all(beta[:4] < 0.72)
    np.testing.assert_array_equal(lc.heavy_tail.values, beta > 0.8)
    assert lc.heavy_tail.values[6:].all() and not lc.heavy_tail.values[:4].any()
    assert int(lc.n_heavy_tail) == int(lc.heavy_tail.sum())
    testable = ~lc.heavy_tail.values
    assert float(lc.fraction_valid_testable) == pytest.approx(
        lc.valid.values[testable].mean(), rel=1e-15)
    off = curves.local_coverage(ds, n_bins=10, heavy_tail_threshold=None)
    assert not off.heavy_tail.any() and int(off.n_heavy_tail) == 0
    assert off.attrs["heavy_tail_threshold"] == "none"
    np.testing.assert_array_equal(off.beta_gm_z2.values, beta)
    assert float(off.fraction_valid_testable) == float(off.fraction_valid)
    default = curves.local_coverage(ds, n_bins=10)
    assert default.attrs["heavy_tail_threshold"] == defaults.HEAVY_TAIL_THRESHOLD == 0.85
    np.testing.assert_array_equal(default.heavy_tail.values, beta > 0.85)


def test_all_bins_heavy_tailed_leave_no_testable_fraction():
    rng = np.random.default_rng(7)
    uE = rng.uniform(1, 2, 4000)
    ds = dataset(uE * rng.standard_t(2.2, 4000), uE)
    lc = curves.local_coverage(ds, n_bins=4, heavy_tail_threshold=0.5)
    assert lc.heavy_tail.all() and int(lc.n_heavy_tail) == 4
    assert np.isnan(float(lc.fraction_valid_testable))
    assert np.isnan(float(lc.fraction_valid_testable_low))
    assert np.isfinite(float(lc.fraction_valid))


def test_lzms_bins_flagged_and_existing_outputs_unchanged():
    ds = heavy_in_upper_half(6000, seed=8)
    a = xuqcal.local(ds, "zms", n_bins=12, n_boot=200)
    b = xuqcal.local(ds, "zms", n_bins=12, n_boot=200, heavy_tail_threshold=None)
    for name in ("value", "ci_low", "ci_high", "valid", "fraction_valid", "fraction_valid_low",
                 "fraction_valid_high", "global_value", "acf", "bin_centre", "beta_gm_z2"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert a.attrs["heavy_tail_threshold"] == defaults.HEAVY_TAIL_THRESHOLD_LOCAL == 0.8
    assert a.attrs["heavy_tail_screening"] == "zms" and b.attrs["heavy_tail_threshold"] == "none"
    E, uE = ds.E.values, ds.uE.values
    for bin_, rows in enumerate(sorted_rows(uE, 12)):
        assert float(a.beta_gm_z2[bin_]) == pytest.approx(robust_skewness_z2(E[rows], uE[rows]),
                                                          rel=1e-12)
    np.testing.assert_array_equal(a.heavy_tail.values, a.beta_gm_z2.values > 0.8)
    assert a.heavy_tail.values[7:].all() and not a.heavy_tail.values[:5].any()
    assert not b.heavy_tail.any()
    # statistics other than zms are not screened (as in validate); β_GM is reported
    zm = xuqcal.local(ds, "zm", n_bins=12, n_boot=200)
    assert not zm.heavy_tail.any() and zm.attrs["heavy_tail_screening"] == ""
    np.testing.assert_array_equal(zm.beta_gm_z2.values, a.beta_gm_z2.values)


def test_reliability_screens_uE2_and_E2_per_bin():
    rng = np.random.default_rng(9)
    m = 4000
    uE = np.exp(rng.uniform(0, np.log(3), m))
    uE[rng.uniform(size=m) < 0.01] *= 30  # a few huge uncertainties: skewed uE² in their bins
    z = np.where(uE > np.quantile(uE, 0.5), rng.standard_t(2.5, m) * np.sqrt(0.2),
                 rng.standard_normal(m))
    ds = dataset(uE * z, uE)
    rel = xuqcal.reliability(ds, n_bins=10, n_boot=200)
    assert rel.attrs["heavy_tail_threshold_uE2"] == 0.6
    assert rel.attrs["heavy_tail_threshold_E2"] == 0.8
    order = sorted_rows(uE, 10)
    for b, rows in enumerate(order):
        assert float(rel.beta_gm_uE2[b]) == pytest.approx(beta_gm(uE[rows] ** 2), rel=1e-12,
                                                          abs=1e-14)
        assert float(rel.beta_gm_E2[b]) == pytest.approx(beta_gm((uE[rows] * z[rows]) ** 2),
                                                         rel=1e-12)
    expected = (rel.beta_gm_uE2.values > 0.6) | (rel.beta_gm_E2.values > 0.8)
    np.testing.assert_array_equal(rel.heavy_tail.values, expected)
    assert rel.heavy_tail.values[-1]  # the huge uncertainties end in the last bin
    assert not rel.heavy_tail.values[:4].any()
    only_uE2 = xuqcal.reliability(ds, n_bins=10, n_boot=200, heavy_tail_threshold_E2=None)
    np.testing.assert_array_equal(only_uE2.heavy_tail.values, rel.beta_gm_uE2.values > 0.6)
    off = xuqcal.reliability(ds, n_bins=10, n_boot=200, heavy_tail_threshold_uE2=None,
                             heavy_tail_threshold_E2=None)
    assert not off.heavy_tail.any()
    for name in ("rmv", "rmse", "rmse_low", "rmse_high"):
        np.testing.assert_array_equal(off[name].values, rel[name].values)


# ------------------------------------------------------------ given bins, many sets, lazy


def test_given_group_and_grid_bins():
    ds = heavy_in_upper_half(4000, seed=10)
    labels = np.array(["a", "b", "c", "d"])[np.random.default_rng(11).integers(0, 4, 4000)]
    ds = ds.assign(g=("sample", labels))
    bins = xuqcal.make_bins(ds, "g", binning="groups")
    lc = curves.local_coverage(ds, bins=bins, heavy_tail_threshold=0.8)
    assert lc["label"].values.tolist() == ["a", "b", "c", "d"]
    assert lc.attrs["scheme"] == "groups" and lc.attrs["by"] == "g"
    E, uE = ds.E.values, ds.uE.values
    k = lc.attrs["quantile"]
    for b, label in enumerate("abcd"):
        rows = np.flatnonzero(labels == label)
        inside = int(np.sum(np.abs(E[rows]) <= k * uE[rows]))
        assert int(lc.n_inside[b]) == inside and int(lc["count"][b]) == rows.size
        assert float(lc.beta_gm_z2[b]) == pytest.approx(robust_skewness_z2(E[rows], uE[rows]),
                                                        rel=1e-12)
    # a grid of uE x E has empty cells (large |E| at small uE): NaN, left out of f_v
    grid = xuqcal.make_bins(ds, ("uE", "E"), n_bins=(4, 4), binning="grid")
    lc = curves.local_coverage(ds, bins=grid)
    empty = lc["count"].values == 0
    assert np.isnan(lc.coverage.values[empty]).all() and not lc.valid.values[empty].any()
    assert float(lc.fraction_valid) == lc.valid.values[~empty].sum() / (~empty).sum()


def test_many_sets_and_lazy_equal_eager():
    sets = [heavy_in_upper_half(3000, seed=12), calibrated(2000, seed=13)]
    both = xr.concat(sets, dim=pd.Index(["a", "b"], name="model"), join="outer")
    kwargs = dict(n_bins=10, heavy_tail_threshold=0.8, tol=0.01)
    lc = curves.local_coverage(both, **kwargs)
    assert lc.coverage.dims == ("model", "bin") and lc.n_heavy_tail.dims == ("model",)
    for label, one in zip("ab", sets, strict=True):
        alone = curves.local_coverage(one, **kwargs)
        for name in alone.variables:
            np.testing.assert_array_equal(lc[name].sel(model=label).values
                                          if "model" in lc[name].dims else lc[name].values,
                                          alone[name].values)
    assert int(lc.n_heavy_tail.sel(model="a")) > 0 and int(lc.n_heavy_tail.sel(model="b")) == 0
    lazy = curves.local_coverage(both.chunk(), **kwargs)
    assert lazy.beta_gm_z2.chunks is not None and lazy.heavy_tail.chunks is not None
    computed = lazy.compute()
    for name in lc.variables:
        np.testing.assert_array_equal(computed[name].values, lc[name].values)
        assert computed[name].dtype == lc[name].dtype
    # given lazy bins (equal-count bins of Dask-backed data)
    one = sets[0].chunk()
    bins = xuqcal.make_bins(one, "uE", n_bins=10)
    given = curves.local_coverage(one, bins=bins).compute()
    eager = curves.local_coverage(sets[0], bins=xuqcal.make_bins(sets[0], "uE", n_bins=10))
    for name in eager.variables:
        np.testing.assert_array_equal(given[name].values, eager[name].values)
    # the local analyses' new columns are lazy too
    loc = xuqcal.local(both.chunk(), "zms", n_bins=10, n_boot=100)
    assert loc.heavy_tail.chunks is not None
    eager = xuqcal.local(both, "zms", n_bins=10, n_boot=100)
    np.testing.assert_array_equal(loc.beta_gm_z2.values, eager.beta_gm_z2.values)
    np.testing.assert_array_equal(loc.heavy_tail.values, eager.heavy_tail.values)
    rel = xuqcal.reliability(both.chunk(), n_bins=10, n_boot=100)
    eager = xuqcal.reliability(both, n_bins=10, n_boot=100)
    for name in ("beta_gm_uE2", "beta_gm_E2", "heavy_tail"):
        assert rel[name].chunks is not None
        np.testing.assert_array_equal(rel[name].values, eager[name].values)


# --------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tol": -0.001}, r"^tol: expected a tolerance in \[0, 1\)"),
    ({"tol": 1.0}, r"^tol: expected a tolerance in \[0, 1\)"),
    ({"tol": "0.005"}, r"^tol: "),
    ({"tol": True}, r"^tol: "),
    ({"tol": None}, r"^tol: "),
    ({"heavy_tail_threshold": 0.0}, r"^heavy_tail_threshold: expected None or a robust "
                                    r"skewness beta_GM\(Z\^2\) in \(0, 1\) \(about 0.64 "
                                    r"for normal errors; default 0.85\)"),
    ({"heavy_tail_threshold": 1.5}, r"^heavy_tail_threshold: "),
    ({"heavy_tail_threshold": "high"}, r"^heavy_tail_threshold: "),
    ({"heavy_tail_threshold": True}, r"^heavy_tail_threshold: "),
    ({"heavy_tail_threshold": float("nan")}, r"^heavy_tail_threshold: "),
    ({"bins": "uE"}, r"^bins: expected the bins of ds"),
])
def test_local_coverage_argument_errors_before_any_work(kwargs, message):
    ds = calibrated(200, seed=14)
    lazy = ds.assign(uE=ds.uE.chunk() * np.nan)  # any computation would fail differently
    for data in (ds, lazy):
        with pytest.raises(ValueError, match=message):
            curves.local_coverage(data, n_bins=5, **kwargs)


@pytest.mark.parametrize(("function", "kwargs", "message"), [
    (lambda d, **k: xuqcal.local(d, "zms", n_bins=5, n_boot=100, **k),
     {"heavy_tail_threshold": 1.0}, r"^heavy_tail_threshold: .*beta_GM\(Z\^2\).*default 0.8\)"),
    (lambda d, **k: xuqcal.local(d, "zms", n_bins=5, n_boot=100, **k),
     {"heavy_tail_threshold": "0.8"}, r"^heavy_tail_threshold: "),
    (lambda d, **k: xuqcal.reliability(d, n_bins=5, n_boot=100, **k),
     {"heavy_tail_threshold_uE2": -0.6}, r"^heavy_tail_threshold_uE2: .*beta_GM\(uE\^2\)"),
    (lambda d, **k: xuqcal.reliability(d, n_bins=5, n_boot=100, **k),
     {"heavy_tail_threshold_E2": 2}, r"^heavy_tail_threshold_E2: .*beta_GM\(E\^2\)"),
])
def test_local_and_reliability_threshold_errors(function, kwargs, message):
    with pytest.raises(ValueError, match=message):
        function(calibrated(200, seed=15), **kwargs)


# -------------------------------------------------------------------------------- figures


def greyed(ax) -> list[ErrorbarContainer]:
    """The error-bar containers drawn in the grey of the heavy-tail screening."""
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)
            and mcolors.to_rgb(c.lines[0].get_color()) == GREY]


def test_local_coverage_plot_greys_heavy_tailed_bins_and_shows_the_band(tmp_path):
    result = curves.local_coverage(heavy_in_upper_half(10_000, seed=6), n_bins=10,
                                   heavy_tail_threshold=0.8)
    heavy = int(result.n_heavy_tail)
    assert 0 < heavy < 10
    ax = plot.local_coverage(result)
    assert ax.get_xlabel() == "uE (bin centre)"
    assert ax.get_ylabel() == "coverage of the 0.95-interval"
    grey = greyed(ax)
    assert len(grey) == 1 and grey[0].get_label() == "β_GM(Z²) > 0.8 (not testable)"
    assert len(grey[0].lines[0].get_xdata()) == heavy
    np.testing.assert_allclose(np.sort(grey[0].lines[0].get_xdata()),
                               np.sort(result.bin_centre.values[result.heavy_tail.values]))
    labels = ax.get_legend_handles_labels()[1]
    assert "target band p ± 0.005" in labels and "target p = 0.95" in labels
    band = [a for a in ax.patches if a.get_label() == "target band p ± 0.005"]
    assert len(band) == 1
    ys = band[0].get_path().transformed(band[0].get_patch_transform()).vertices[:, 1]
    assert ys.min() == pytest.approx(0.945) and ys.max() == pytest.approx(0.955)
    render(ax, tmp_path / "lcp.png")
    # no heavy-tailed bin: nothing grey, no entry; tol = 0: no band
    ax = plot.local_coverage(curves.local_coverage(calibrated(4000, seed=1), n_bins=10, tol=0))
    assert not greyed(ax)
    assert not any("not testable" in t or "band" in t for t in ax.get_legend_handles_labels()[1])
    plt.close(ax.figure)


def test_local_coverage_plot_of_many_sets_and_of_groups(tmp_path):
    sets = [heavy_in_upper_half(6000, seed=16), calibrated(4000, seed=17)]
    both = xr.concat(sets, dim=pd.Index(["a", "b"], name="model"), join="outer")
    result = curves.local_coverage(both, n_bins=10, heavy_tail_threshold=0.8)
    ax = plot.local_coverage(result)
    grey = greyed(ax)
    assert grey and [c.get_label() for c in grey].count("β_GM(Z²) > 0.8 (not testable)") == 1
    labels = ax.get_legend_handles_labels()[1]
    assert any(t.startswith("a (f_v") for t in labels) and any(t.startswith("b (f_v")
                                                                  for t in labels)
    render(ax, tmp_path / "lcp_models.png")
    grid = plot.local_coverage(result, col="model")
    assert grid.axes.shape == (1, 2) and greyed(grid.axes[0, 0]) and not greyed(grid.axes[0, 1])
    plt.close(grid.fig)
    ds = sets[0].assign(g=("sample", np.array(list("xyz"))[np.arange(6000) % 3]))
    ax = plot.local_coverage(curves.local_coverage(ds, bins=xuqcal.make_bins(ds, "g",
                                                                             binning="groups")))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y", "z"]
    assert ax.get_xlabel() == "g (bin)"
    render(ax, tmp_path / "lcp_groups.png")


def test_lzms_and_reliability_plots_grey_heavy_tailed_bins(tmp_path):
    ds = heavy_in_upper_half(6000, seed=8)
    loc = xuqcal.local(ds, "zms", n_bins=12, n_boot=200)
    assert loc.heavy_tail.any()
    ax = plot.local(loc)
    grey = greyed(ax)
    assert len(grey) == 1 and grey[0].get_label() == "β_GM(Z²) > 0.8 (not testable)"
    assert len(grey[0].lines[0].get_xdata()) == int(loc.heavy_tail.sum())
    assert ax.get_xlabel() == "uE (bin centre)" and ax.get_ylabel() == "<Z²>"
    render(ax, tmp_path / "lzms.png")
    ax = plot.local(xuqcal.local(ds, "zms", n_bins=12, n_boot=200, heavy_tail_threshold=None))
    assert not greyed(ax)
    plt.close(ax.figure)
    rel = xuqcal.reliability(ds, n_bins=12, n_boot=200)
    assert rel.heavy_tail.any()
    ax = plot.reliability(rel)
    grey = greyed(ax)
    assert len(grey) == 1
    assert grey[0].get_label() == "β_GM(uE²) > 0.6 or β_GM(E²) > 0.8 (not testable)"
    np.testing.assert_allclose(np.sort(grey[0].lines[0].get_xdata()),
                               np.sort(rel.rmv.values[rel.heavy_tail.values]))
    assert ax.get_xlabel().startswith("RMV") and ax.get_ylabel().startswith("RMSE")
    render(ax, tmp_path / "rel.png")


# ------------------------------------------------------------------- given intervals (issue 15)


def _interval_data(m: int = 3000, seed: int = 0, width: float = 1.6449):
    """Calibrated normal errors with the given central intervals ±width uE (0.9 at 1.6449)."""
    rng = np.random.default_rng(seed)
    u = np.exp(rng.normal(0.0, 0.5, m))
    E = u * rng.standard_normal(m)
    return xuqcal.from_arrays(E, u, lower=-width * u + 0.1 * u, upper=width * u + 0.1 * u,
                              coverage_level=0.9)


def test_local_coverage_of_given_intervals_counts_lower_le_E_le_upper():
    from xuqcal.analysis.curves import local_coverage

    ds = _interval_data()
    lc = local_coverage(ds, interval=True, n_bins=10)
    assert lc.attrs["coverage_level"] == 0.9
    assert lc.attrs["interval"].startswith("lower <= E <= upper")
    order = np.argsort(ds.uE.values, kind="stable")
    inside = ((ds.lower.values <= ds.E.values) & (ds.E.values <= ds.upper.values))[order]
    np.testing.assert_array_equal(lc.n_inside.values,
                                  [part.sum() for part in np.array_split(inside, 10)])
    lazy = local_coverage(ds.chunk(), interval=True, n_bins=10).compute()
    np.testing.assert_array_equal(lazy.coverage.values, lc.coverage.values)
    ax = xuqcal.plot.local_coverage(lc)
    assert ax.get_ylabel()


def test_local_coverage_of_given_intervals_errors():
    from xuqcal.analysis.curves import local_coverage

    ds = _interval_data(200)
    with pytest.raises(ValueError, match=r"coverage_level: 0.95 differs from the level of "
                                         r"the given intervals \(0.9\)"):
        local_coverage(ds, interval=True, coverage_level=0.95)
    with pytest.raises(ValueError, match=r"interval: expected"):
        local_coverage(ds, interval="yes")
    with pytest.raises(ValueError, match=r"lower: the dataset has no variable with the role"):
        local_coverage(xuqcal.synthetic.nig(100, nu=6, seed=0), interval=True)
    swapped = ds.assign(lower=ds.lower.copy(data=ds.upper.values),
                        upper=ds.upper.copy(data=ds.lower.values))
    with pytest.raises(ValueError, match=r"lower, upper: 200 of 200 intervals are not finite or "
                                         r"have lower > upper"):
        local_coverage(swapped, interval=True, n_bins=4)
