"""Local z-score analyses, f_v, ACF, order sensitivity, adversarial groups, reliability."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import xuqcal
from xuqcal.analysis.local import (
    adversarial_groups,
    autocorrelation,
    local,
    order_sensitivity,
    reliability,
)
from xuqcal.core import defaults
from xuqcal.core.binning import FewPointsPerBinWarning, points_per_bin, recommended_n_bins
from xuqcal.core.intervals import bca_interval, wilson_interval
from xuqcal.testing import assert_results_identical, count_computes


@pytest.fixture(scope="module")
def data():
    ds = xuqcal.synthetic.nig(3000, nu=6, seed=21)
    return ds.assign(X=("sample", np.round(np.random.default_rng(2).normal(size=3000), 1)))


def test_per_bin_values_and_student_intervals(data):
    loc = local(data, "zm", n_bins=10)
    order = np.argsort(data.uE.values, kind="stable")
    z = (data.E / data.uE).values[order]
    for b, chunk in enumerate(np.array_split(z, 10)):  # equal-count bins of 300 points
        assert loc.value[b].item() == pytest.approx(chunk.mean())
        lo, hi = stats.t.interval(0.95, chunk.size - 1, chunk.mean(), stats.sem(chunk))
        assert (loc.ci_low[b].item(), loc.ci_high[b].item()) == pytest.approx((lo, hi))
    assert loc.attrs["interval"] == "student" and loc.attrs["target"] == 0.0


def test_bca_per_bin_equals_a_direct_bootstrap_of_the_bin(data):
    """Each bin's BCa interval matches scipy's BCa on that bin within Monte Carlo noise."""
    # B = 8000 was too few: measured over 60 seeds (stream version 2), the Monte Carlo sd of
    # an upper bound is 1.1-1.3 % of the width for each implementation, that of the
    # difference of the two 1.5-1.8 %, so 4 % was 2.3-2.7 sd: 9 of 60 seed pairs failed.
    # B = 32000 halves the sd: the difference's sd was 0.4-0.8 % of the width (24 seed pairs,
    # max |difference| 2.0 %), so 4 % is at least 5 sd for each of the 10 bounds
    loc = local(data, "zms", n_bins=5, n_boot=32_000, seed=4)
    order = np.argsort(data.uE.values, kind="stable")
    z2 = ((data.E / data.uE).values[order]) ** 2
    for b, chunk in enumerate(np.array_split(z2, 5)):
        ref = stats.bootstrap((chunk,), np.mean, n_resamples=32_000, method="BCa",
                              random_state=np.random.default_rng(b))
        width = ref.confidence_interval.high - ref.confidence_interval.low
        assert loc.ci_low[b].item() == pytest.approx(ref.confidence_interval.low,
                                                      abs=0.04 * width)
        assert loc.ci_high[b].item() == pytest.approx(ref.confidence_interval.high,
                                                       abs=0.04 * width)


def test_fraction_valid_and_acf(data):
    loc = local(data, "zms", n_bins=30, n_boot=1000)
    assert loc.fraction_valid.item() == pytest.approx(loc.valid.mean().item())
    lo, hi = wilson_interval(int(loc.valid.sum()), 30)
    assert (loc.fraction_valid_low.item(), loc.fraction_valid_high.item()) == \
        pytest.approx((lo, hi))
    np.testing.assert_array_equal(loc.valid, (loc.ci_low <= 1) & (1 <= loc.ci_high))
    assert loc.acf.sizes["lag"] == 1 + int(np.floor(10 * np.log10(30)))
    np.testing.assert_allclose(loc.acf, autocorrelation(loc.value.values))
    assert loc.attrs["acf_band"] == pytest.approx(1.96 / np.sqrt(30))
    assert loc.global_value.item() == pytest.approx(float(((data.E / data.uE) ** 2).mean()))


def test_autocorrelation_matches_definition():
    x = np.random.default_rng(0).normal(size=50).cumsum()
    d = x - x.mean()
    acf = autocorrelation(x, 5)
    for k in range(1, 6):
        assert acf[k] == pytest.approx(np.sum(d[:-k] * d[k:]) / np.sum(d * d))


def test_adaptivity_with_strata_and_deterministic(data):
    loc = local(data, "zms", by="X", binning="strata", min_count=200, n_boot=500, seed=3)
    assert loc.attrs["binning"] == "strata" and loc.attrs["by"] == "X"
    assert (loc["count"] >= 200).all()
    again = local(data, "zms", by="X", binning="strata", min_count=200, n_boot=500, seed=3)
    np.testing.assert_array_equal(loc.ci_low, again.ci_low)


def test_errors(data):
    with pytest.raises(ValueError, match="local analyses support"):
        local(data, "ence")
    with pytest.raises(ValueError, match="'Y' is not in the dataset"):
        local(data, by="Y")


def test_conditional_calibration_of_qm9_u0(shared_data):
    """TARGETS.md: f_v ≈ 0.97 for <Z> and ≈ 0.85 for <Z²> (100 bins on uE), the latter's
    binomial interval excluding 0.95; <Z²> = 0.96(2), <Z> = 0.0082(83)."""
    ds = xuqcal.read_csv(shared_data / "BUS2022" / "qm9_U0_test_Orig.csv",
                         E="U0 - prediction", uE="sqrt(uncertainty_total)")
    for statistic, published in (("zm", 0.97), ("zms", 0.85)):
        loc = local(ds, statistic, n_bins=100, n_boot=5000, seed=0)
        fv = loc.fraction_valid.item()
        lo, hi = loc.fraction_valid_low.item(), loc.fraction_valid_high.item()
        published_lo, published_hi = wilson_interval(round(published * 100), 100)
        assert lo <= published <= hi and published_lo <= fv <= published_hi, (statistic, fv)
    assert not lo <= 0.95 <= hi  # <Z²>: the binomial interval excludes 0.95
    assert loc.global_value.item() == pytest.approx(0.96, abs=0.005 + 0.0)
    z = (ds.E / ds.uE).values
    assert z.mean() == pytest.approx(0.0082, abs=0.00005)


def test_order_sensitivity(data):
    sens = order_sensitivity(data, "zms", by="X", n_orders=6, n_bins=20, n_boot=300, seed=1,
                             binomial_noise=True)
    assert sens.fraction_valid.sizes["order"] == 6
    assert sens["mean"].item() == pytest.approx(sens.fraction_valid.mean().item())
    assert (sens.fraction_valid_noisy * 20 % 1 == 0).all()
    # X has few distinct values: the tie order changes the bins and so f_v
    assert sens.fraction_valid.std() > 0
    again = order_sensitivity(data, "zms", by="X", n_orders=6, n_bins=20, n_boot=300, seed=1)
    np.testing.assert_array_equal(again.fraction_valid, sens.fraction_valid)


def test_adversarial_groups_calibrated_and_control(data):
    adv = adversarial_groups(data, n_groups=60, n_boot=500, min_count=300)
    assert adv["count"].values.tolist() == [1500, 750, 375]
    for prefix in ("", "control_"):
        values = adv[f"{prefix}fraction_valid"].values
        assert ((values >= 0) & (values <= 1)).all()
    # the N(0, 1) control validates most groups. Not asserted at these sizes (M/2, M/4, M/8):
    # groups of half the ONE control sample share its deviation of <Zc²> from 1, so their
    # valid fractions move together (over 200 control seeds, stream version 2, the fraction
    # at M/2 had sd 0.078 and was <= 0.8 for 6.5 % of the seeds, the default seed's 0.717
    # among them). At a size small against M the groups are nearly independent: the count
    # of valid groups is about Binomial(60, c), c the coverage of the BCa interval of <Z²>
    # on 150 normal points (measured 0.936 over 400 seeds, sd 0.034 against the binomial
    # 0.032), so P(fraction <= 0.8) = P(X <= 48) = 3.7e-4 (1.0e-3 with the measured
    # over-dispersion as a beta-binomial); 0 of 400 seeds, minimum 0.817
    control = adversarial_groups(data, n_groups=60, n_boot=500, sizes=[150])
    assert control.control_fraction_valid.item() > 0.8
    miscalibrated = xuqcal.synthetic.nig(3000, nu=6, seed=21, uE_scale=0.8)
    bad = adversarial_groups(miscalibrated, n_groups=60, n_boot=500, min_count=300)
    assert (bad.fraction_valid < 0.2).all()


def test_reliability(data):
    rel = reliability(data, n_bins=8, n_boot=1000)
    order = np.argsort(data.uE.values, kind="stable")
    E, uE = data.E.values[order], data.uE.values[order]
    for b, (e, u) in enumerate(zip(np.array_split(E, 8), np.array_split(uE, 8), strict=True)):
        assert rel.rmse[b].item() == pytest.approx(np.sqrt(np.mean(e**2)))
        assert rel.rmv[b].item() == pytest.approx(np.sqrt(np.mean(u**2)))
        assert rel.rmse_low[b] < rel.rmse[b] < rel.rmse_high[b]


def test_bca_with_given_acceleration_equals_jackknife_route():
    rng = np.random.default_rng(0)
    reps, jack = rng.normal(size=(2, 500)), rng.gamma(2.0, size=(2, 40))
    from xuqcal.core.intervals import acceleration

    a = bca_interval(reps, np.zeros(2), jack)
    b = bca_interval(reps, np.zeros(2), acceleration_value=acceleration(jack))
    np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------------------------
# The bin-count rule: at least defaults.MIN_POINTS_PER_BIN_LOCAL points per bin, else a warning
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    """M = 265: 100 bins would hold 2-3 points each."""
    ds = xuqcal.synthetic.nig(265, nu=6, seed=8)
    return ds.assign(X=("sample", np.round(ds.uE.values, 1)))


def _few(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, FewPointsPerBinWarning)]


def test_recommended_n_bins_is_the_one_rule():
    assert defaults.MIN_POINTS_PER_BIN_LOCAL == 20
    assert recommended_n_bins(265) == 13  # 13 bins of 20-21 points, not 100 bins of 2-3
    assert recommended_n_bins(265, 10) == 10
    assert recommended_n_bins(2000) == 100 and recommended_n_bins(1999) == 99
    assert recommended_n_bins(19) == 1 and recommended_n_bins(40, min_points=5) == 8
    for m in (20, 265, 1999, 12_345):
        n = recommended_n_bins(m)
        assert points_per_bin(m, n)[0] >= 20 and (n == 100 or points_per_bin(m, n + 1)[0] < 20)
    for name, args in (("m", (0,)), ("n_bins", (100, 0)), ("n_bins", (100, 2.0))):
        with pytest.raises(ValueError, match=f"{name}: expected a positive integer"):
            recommended_n_bins(*args)
    assert issubclass(FewPointsPerBinWarning, UserWarning)


def test_local_warns_below_the_rule_naming_n_bins_m_and_the_points(small):
    with pytest.warns(FewPointsPerBinWarning) as record:
        loc = local(small, "zms", n_bins=100, n_boot=200)
    assert loc.sizes["bin"] == 100  # it still runs
    (message,) = _few(record)
    assert message.startswith("n_bins: n_bins=100 bins of M=265 points hold 2 to 3 points per "
                              "bin, fewer than the 20 per bin")
    assert "use at most 13 bins" in message
    (caught,) = [w for w in record if issubclass(w.category, FewPointsPerBinWarning)]
    assert caught.filename == __file__  # points at the caller, not at xuqcal's internals
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        local(small, "zms", n_bins=recommended_n_bins(265), n_boot=200)
        local(small, "zm", n_bins=13)
    assert not _few(record)
    with pytest.warns(FewPointsPerBinWarning, match=r"n_bins=14 bins of M=265 points hold 18 "
                                                    r"to 19 points per bin"):
        local(small, "zm", n_bins=14)


def test_local_warns_for_min_count_strata_and_given_bins(small):
    with pytest.warns(FewPointsPerBinWarning,
                      match=r"^min_count: n_bins=53 bins \(min_count=5\) of M=265 points hold "
                            r"5 points per bin.*use min_count >= 20"):
        local(small, "zm", n_bins=100, min_count=5)
    for data in (small, small.chunk({"sample": 100})):
        with pytest.warns(FewPointsPerBinWarning,
                          match=r"^min_count: strata bins \(min_count=5, n_bins=\d+\) of M=265"):
            local(data, "zm", by="X", binning="strata", min_count=5)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        local(small, "zm", by="X", binning="strata", min_count=20)
    assert not _few(record)
    bins = xuqcal.make_bins(small, "uE", n_bins=40)
    with pytest.warns(FewPointsPerBinWarning,
                      match=r"^bins: the given bins \(n_bins=40\) of M=265 points hold 6 to 7 "):
        local(small, "zm", bins=bins)


def test_value_dependent_bins_warn_once_and_eager_matches_lazy(small):
    """Strata, group and grid bins are made (and checked) in one place, before the analysis:
    one warning on either path, and the same result computed or lazy (the eager path recorded
    the ``by`` argument, ``"uE"`` or a list, instead of the variables; the lazy path dropped
    the group labels and the grid's cells and limits)."""
    ds = small.assign(X2=small.E**2, G=("sample", np.arange(265) % 20)).rename(uE="sigma")
    for kwargs in (dict(by="uE", binning="strata", min_count=5),
                   dict(by="G", binning="groups"),
                   dict(by=["uE", "X2"], binning="grid", n_bins=3)):
        results = []
        for data in (ds, ds.chunk({"sample": 100})):
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                results.append(local(data, "zm", uE="sigma", **kwargs).compute())
            assert len(_few(record)) == 1
        eager, lazy = results
        for result in results:
            result.attrs.pop("created", None)
        assert eager.attrs["by"] == lazy.attrs["by"] == ("G" if kwargs["by"] == "G" else
                                                         "sigma" if kwargs["by"] == "uE" else
                                                         "sigma,X2")
        xr.testing.assert_identical(eager, lazy)


def test_given_lazy_equal_count_bins_warn_without_computing(small):
    lazy = small.chunk({"sample": 100})
    bins = xuqcal.make_bins(lazy, "uE", n_bins=40)
    with count_computes() as computes, pytest.warns(
            FewPointsPerBinWarning, match=r"^bins: the given bins \(n_bins=40\) of M=265 "
                                          r"points hold 6 to 7 "):
        result = local(lazy, "zm", bins=bins)
    assert computes.count == 0 and result.value.chunks is not None


def test_the_rule_warns_before_computing_lazy_data(small):
    lazy = small.chunk({"sample": 100})
    with pytest.warns(FewPointsPerBinWarning, match="n_bins=100 bins of M=265"):
        result = local(lazy, "zm", n_bins=100)
    assert result.value.chunks is not None  # nothing computed yet
    with pytest.warns(FewPointsPerBinWarning, match="n_bins=20 bins of M=265 points hold 13 "):
        reliability(lazy, n_bins=20, n_boot=200)


def test_the_other_per_bin_analyses_follow_the_rule(small):
    with pytest.warns(FewPointsPerBinWarning, match=r"^n_bins: n_bins=20 bins of M=265 points "
                                                    r"hold 13 to 14 points per bin"):
        reliability(small, n_bins=20, n_boot=200)
    with pytest.warns(FewPointsPerBinWarning, match=r"^n_bins: n_bins=20 bins of M=265"):
        xuqcal.curves.local_coverage(small, n_bins=20)
    with pytest.warns(FewPointsPerBinWarning, match=r"^n_bins: n_bins=30 bins of M=265"):
        order_sensitivity(small, by="X", n_orders=2, n_bins=30, n_boot=200)
    with pytest.warns(FewPointsPerBinWarning,
                      match=r"^min_count: groups of sizes 132, 66, 33, 16 \(min_count=10\) of "
                            r"M=265 points hold 16 to 132 points per group"):
        adversarial_groups(small, n_groups=5, n_boot=200, min_count=10)
    with pytest.warns(FewPointsPerBinWarning, match=r"^sizes: groups of sizes 100, 8 of M=265"):
        adversarial_groups(small, n_groups=5, n_boot=200, sizes=[100, 8])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        reliability(small, n_bins=13, n_boot=200)
        xuqcal.curves.local_coverage(small, n_bins=13)
        order_sensitivity(small, by="X", n_orders=2, n_bins=13, n_boot=200)
        adversarial_groups(small, n_groups=5, n_boot=200, min_count=20)
    assert not _few(record)


def test_too_few_points_for_any_bin_is_still_an_error(small):
    """Below 2 points per bin the analyses refuse (the warning is for 2 to 19)."""
    with pytest.raises(ValueError, match="n_bins: n_bins=200 needs at least 400 points"):
        local(small, "zm", n_bins=200)
    with pytest.raises(ValueError, match="n_bins: n_bins=200 needs at least 400 points"):
        reliability(small, n_bins=200)


def test_group_replicates_in_tasks_equal_one_call(monkeypatch):
    """In the main thread, past GROUPED_TASKS_FROM draws, the groups' replicates are computed
    in replicate chunks by Dask (here 4 tasks of 100): the same values as one call of the
    kernel, which is what a Dask task (another thread) makes."""
    import threading

    from xuqcal.analysis import local as local_module

    ds = xuqcal.synthetic.nig(1200, nu=6, seed=4)
    calls = []
    block = local_module._grouped_block
    monkeypatch.setattr(local_module, "_grouped_block",
                        lambda *a: calls.append((a[-2], a[-1])) or block(*a))
    one_call = xuqcal.local(ds, "zms", n_boot=400, seed=1)
    assert calls == [(0, 400)]  # 1200 x 400 draws: below GROUPED_TASKS_FROM
    monkeypatch.setattr(local_module, "GROUPED_TASKS_FROM", 1)
    calls.clear()
    with xuqcal.set_options(replicate_chunk=100):
        in_tasks = xuqcal.local(ds, "zms", n_boot=400, seed=1)
        assert sorted(calls) == [(0, 100), (100, 200), (200, 300), (300, 400)]
        assert_results_identical(in_tasks, one_call)
        calls.clear()
        results = []
        thread = threading.Thread(
            target=lambda: results.append(xuqcal.local(ds, "zms", n_boot=400, seed=1)))
        thread.start()
        thread.join()
    assert calls == [(0, 400)]  # not the main thread: one call, no Dask
    assert_results_identical(results[0], one_call)
