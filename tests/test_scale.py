"""Issue 14: only the work that the answer needs (no simulation for statistics with a
predefined reference) and precision-driven Monte Carlo (``n_boot="auto"``, ``n_mc="auto"``)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis import simulation
from xuqcal.analysis.validation import summary_table

PREDEFINED = ["zms", "rce", "zm", "zv", "nll"]
SIM_VARIABLES = ["sim_mean", "sim_se", "sim_q025", "sim_q975", "zeta", "reference", "u_ref",
                 "valid"]


@pytest.fixture(scope="module")
def nig():
    return xuqcal.synthetic.nig(1500, nu=6, seed=11)


def _forbid_simulation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a synthetic error set was simulated")
    monkeypatch.setattr(simulation, "_simulation_block", refuse)


@pytest.mark.parametrize("lazy", [False, True])
def test_no_simulation_when_every_statistic_has_a_predefined_reference(nig, monkeypatch, lazy):
    _forbid_simulation(monkeypatch)
    data = nig.chunk() if lazy else nig
    result = xuqcal.validate(data, PREDEFINED, n_boot=200, n_mc=100).compute()
    assert result.attrs["n_mc"] == 0 and result.attrs["simulated_statistics"] == ""
    assert np.isnan(result.sim_mean.values).all()
    assert (result.verdict_scheme.values == "BS").all()
    # the printed table has no Sim columns when nothing was simulated
    assert "SimN" not in summary_table(result)
    # and the patch is effective: a statistic without a predefined reference needs simulation
    with pytest.raises(AssertionError, match="simulated"):
        xuqcal.validate(data, ["zms", "cc"], n_boot=200, n_mc=100).compute()


def test_only_statistics_without_a_predefined_reference_are_simulated(nig):
    needed = xuqcal.validate(nig, n_boot=200, n_mc=150, seed=4)
    everything = xuqcal.validate(nig, n_boot=200, n_mc=150, seed=4, all_schemes=True)
    assert needed.attrs["simulated_statistics"] == "cc, ence, zmse"
    assert everything.attrs["simulated_statistics"] == ", ".join(needed.statistic.values)
    # the simulated statistics are bit-identical whichever others are simulated with them
    simulated = ["cc", "ence", "zmse"]
    xr.testing.assert_identical(needed[SIM_VARIABLES].sel(statistic=simulated).drop_attrs(),
                                everything[SIM_VARIABLES].sel(statistic=simulated).drop_attrs())
    # the statistics with a predefined reference: NaN Sim columns, BS identical, same verdicts
    predefined = needed.sel(statistic=PREDEFINED)
    assert np.isnan(predefined.zeta.sel(scheme=["SimN", "SimT", "Sim2N", "Sim2T"])).all()
    assert np.isfinite(everything.zeta.sel(statistic=PREDEFINED, scheme="SimN")).all()
    xr.testing.assert_identical(needed.drop_vars(SIM_VARIABLES).drop_attrs(),
                                everything.drop_vars(SIM_VARIABLES).drop_attrs())


# --------------------------------------------------------------- precision-driven counts

from xuqcal.analysis import precision  # noqa: E402
from xuqcal.core import defaults  # noqa: E402

AUTO_ATTRS = ["created", "n_boot_requested", "n_mc_requested", "mc_precision",
              "mc_precision_reached", "precision_rule"]


def _without_auto_attrs(result):
    result = result.copy()
    for name in AUTO_ATTRS:
        result.attrs.pop(name, None)
    return result


def boot_counts(result) -> dict[str, int]:
    """The bootstrap count of every statistic of an auto validation (they may differ: the
    bootstrap grows per statistic)."""
    listed = result.attrs.get("n_boot_per_statistic")
    if not listed:
        return {str(k): int(result.attrs["n_boot"]) for k in result.statistic.values}
    return {key: int(n) for key, n in (item.split(": ") for item in listed.split(", "))}


def assert_equals_fixed_counts(ds, auto, statistics=None, **kwargs):
    """Every statistic's rows of an auto validation equal those of the fixed-count validation
    at that statistic's count (and the simulations' count), bit for bit."""
    counts = boot_counts(auto)
    for n in sorted(set(counts.values())):
        fixed = xuqcal.validate(ds, statistics, n_boot=n, n_mc=auto.attrs["n_mc"], **kwargs)
        rows = [key for key, count in counts.items() if count == n]
        xr.testing.assert_identical(auto.sel(statistic=rows).drop_attrs(),
                                    fixed.sel(statistic=rows).drop_attrs())
        if len(counts) == len(rows):  # one count: the attributes are those of that run too
            xr.testing.assert_identical(_without_auto_attrs(auto), _without_auto_attrs(fixed))


@pytest.fixture(scope="module")
def auto_result(nig):
    return xuqcal.validate(nig, n_boot="auto", n_mc="auto", seed=2)


def test_auto_is_the_prefix_of_the_fixed_count_run(nig, auto_result):
    n_boot, n_mc = auto_result.attrs["n_boot"], auto_result.attrs["n_mc"]
    assert auto_result.attrs["n_boot_requested"] == "auto"
    assert n_boot >= defaults.AUTO_FIRST and n_mc >= defaults.AUTO_FIRST
    assert n_boot == max(boot_counts(auto_result).values())
    assert_equals_fixed_counts(nig, auto_result, seed=2)
    # another chunking of the rounds, the same values
    rechunked = xuqcal.validate(nig, n_boot="auto", n_mc="auto", seed=2, chunks=37)
    xr.testing.assert_identical(_without_auto_attrs(rechunked),
                                _without_auto_attrs(auto_result))


def test_auto_reaches_its_precision_or_the_ceiling(nig, monkeypatch):
    loose = xuqcal.validate(nig, ["zms", "zm", "cc"], n_boot="auto", n_mc="auto",
                            mc_precision=0.5)
    assert loose.attrs["n_boot"] == defaults.AUTO_FIRST  # the first round is precise enough
    assert loose.attrs["mc_precision_reached"] <= 0.5
    monkeypatch.setattr(defaults, "N_BOOT", 1300)
    monkeypatch.setattr(defaults, "N_MC", 900)
    tight = xuqcal.validate(nig, ["zms", "zm", "cc"], n_boot="auto", n_mc="auto",
                            mc_precision=1e-4)
    assert (tight.attrs["n_boot"], tight.attrs["n_mc"]) == (1300, 900)  # the ceilings
    assert tight.attrs["mc_precision_reached"] > 1e-4  # and it says it did not get there


def test_auto_rule_grows_until_the_zeta_is_precise():
    # rounds of a statistic whose zeta is near 1: the count grows beyond the first round, and
    # the stopping count's zeta standard error (recomputed from its replicates) meets the rule
    ds = xuqcal.synthetic.nig(3000, nu=6, seed=8)
    ds["E"] = ds.E * 1.04
    result = xuqcal.validate(ds, ["zms"], n_boot="auto", n_mc="auto", mc_precision=0.03)
    n = result.attrs["n_boot"]
    assert n > defaults.AUTO_FIRST
    assert result.attrs["mc_precision_reached"] <= 0.03
    bs = xuqcal.bootstrap(ds, ["zms"], n_boot=n).compute()
    np.testing.assert_array_equal(bs.ci_low.values, result.ci_low.values)
    zeta = result.zeta.sel(scheme="BS").values
    assert 0.5 < abs(float(zeta[0])) < 2


def test_quantile_standard_error_matches_theory():
    rng = np.random.default_rng(1)
    values = np.sort(rng.standard_normal((200, 4000)), axis=-1)
    p = np.broadcast_to([0.025, 0.5], (200, 2))
    estimates = precision.quantile_mc_se(values, p)
    se = estimates.mean(axis=0)
    # asymptotic sd of a sample quantile: sqrt(p (1 - p) / n) / pdf(quantile)
    from scipy import stats as sps
    theory = np.sqrt(np.array([0.025 * 0.975, 0.25]) / 4000) / sps.norm.pdf(
        sps.norm.ppf([0.025, 0.5]))
    # the larger of the order-statistic bracket and the normal-theory value: unbiased for
    # neither, at most ~15 % above the theory on average and never far below it
    assert np.all(se >= 0.97 * theory) and np.all(se <= 1.15 * theory)
    assert np.all(estimates >= 0.9 * theory)
    # and the spread of the quantile over the 200 samples agrees
    actual = precision.quantile_sorted(values, p).std(axis=0, ddof=1)
    np.testing.assert_allclose(actual, theory, rtol=0.2)


def test_quantile_standard_error_is_not_underestimated_with_few_replicates():
    """In the tail of 500 replicates the order-statistic bracket spans a handful of points and
    can underestimate the error (it let zm's auto run stop early at M = 2e6): the
    normal-theory floor keeps every estimate near the actual spread of the quantile."""
    rng = np.random.default_rng(3)
    values = np.sort(rng.standard_normal((400, 500)), axis=-1)
    p = np.broadcast_to([0.975], (400, 1))
    estimates = precision.quantile_mc_se(values, p)[:, 0]
    actual = precision.quantile_sorted(values, p)[:, 0].std(ddof=1)
    assert estimates.min() >= 0.85 * actual
    bracket_only = 0.5 * (values[:, 491] - values[:, 483])  # the former estimate
    assert bracket_only.min() < 0.5 * actual  # which could fall far below it


def test_quantile_standard_error_of_extreme_quantiles_is_symmetric_and_never_zero():
    """Beyond the floor's range (p < 1/n or p > 1 - 1/n) the bracket alone is used. In the
    upper tail its two ends clipped to the largest replicate (n (1 - p) below about 0.4) and
    gave 0, which ``"auto"`` took for a settled bound (a BCa level of 0.9999 at n = 2000,
    found by tests/test_faults_values.py); the lower tail never did. Now both tails give at
    least half the gap of the two extreme replicates, and mirrored data give mirrored values."""
    rng = np.random.default_rng(5)
    values = np.sort(rng.standard_normal((1, 2000)), axis=-1)
    for p in (0.99981, 0.9999, 0.99999):
        upper = precision.quantile_mc_se(values, np.array([[p]]))[0, 0]
        lower = precision.quantile_mc_se(np.sort(-values, axis=-1), np.array([[1 - p]]))[0, 0]
        assert upper >= 0.5 * (values[0, -1] - values[0, -2]) > 0.0, p
        assert upper == lower, p  # the same two replicates, mirrored
    # where the bracket's ends did not meet, nothing changed: n (1 - p) = 0.8 at p = 0.9996
    p = 0.9996
    spread = np.sqrt(2000 * p * (1 - p))
    low, high = int(np.floor(2000 * p - spread)), int(np.ceil(2000 * p + spread))
    assert precision.quantile_mc_se(values, np.array([[p]]))[0, 0] == 0.5 * (
        values[0, min(high, 1999)] - values[0, low])


def test_bootstrap_grows_only_the_statistics_short_of_precision(nig):
    result = xuqcal.validate(nig, ["zms", "zm", "cc"], n_boot="auto", n_mc="auto", seed=4,
                             mc_precision=0.01)
    counts = boot_counts(result)
    assert len(set(counts.values())) > 1, counts  # some grew, some did not
    assert result.attrs["n_boot"] == max(counts.values())
    for key, n in counts.items():  # each statistic: its bootstrap alone at its count
        alone = xuqcal.bootstrap(nig, [key], n_boot=n, seed=4).compute()
        for name in ("ci_low", "ci_high", "se", "bias"):
            np.testing.assert_array_equal(result[name].sel(statistic=[key]).values,
                                          alone[name].values)


def test_rounds_grow_to_the_projected_count():
    calls = []

    def compute(start, stop):
        calls.append((start, stop))
        return np.zeros((1, stop - start))

    rounds = precision.Rounds(compute, "auto", ceiling=5000, first=500)
    assert rounds.grow(np.array([2.0, 0.5]))  # se ~ 1/sqrt(n): 4 n, 10 % margin
    assert rounds.n == 2200 and calls == [(0, 500), (500, 2200)]
    assert not rounds.grow(np.array([0.9, np.nan]))
    fixed = precision.Rounds(compute, 300, ceiling=5000)
    assert fixed.n == 300 and not fixed.grow(np.array([10.0]))


@pytest.mark.parametrize(("arguments", "message"), [
    (dict(n_boot="fast"), "n_boot: expected a number of replicates or 'auto'"),
    (dict(n_mc="Auto "), "n_mc: expected a number of replicates or 'auto'"),
    (dict(n_boot="auto", mc_precision=1.5), "mc_precision: expected a fraction in"),
    (dict(n_boot="auto", n_mc="auto", chunks=[250, 250]), "chunks: a sequence of chunk sizes"),
])
def test_auto_argument_errors(nig, arguments, message):
    with pytest.raises(ValueError, match=message):
        xuqcal.validate(nig, ["zms", "cc"], **arguments)


def test_auto_over_slices_of_lazy_data(nig):
    # two data sets stacked along "model", Dask-backed: each slice stops at its own counts,
    # and each equals the one-data-set run
    other = xuqcal.synthetic.nig(1200, nu=6, seed=12)
    stacked = xuqcal.stack_datasets({"a": nig, "b": other}, dim="model").chunk()
    result = xuqcal.validate(stacked, ["zms", "cc"], n_boot="auto", n_mc="auto", seed=3)
    for name, data in (("a", nig), ("b", other)):
        alone = xuqcal.validate(data, ["zms", "cc"], n_boot="auto", n_mc="auto", seed=3)
        np.testing.assert_array_equal(result.zeta.sel(model=name).values, alone.zeta.values)
        np.testing.assert_array_equal(result.ci_low.sel(model=name).values,
                                      alone.ci_low.values)


def test_auto_on_a_distributed_cluster_is_bit_identical(nig):
    from distributed import Client, LocalCluster

    local = xuqcal.validate(nig, ["zms", "cc"], n_boot="auto", n_mc="auto", seed=5)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster):
        remote = xuqcal.validate(nig, ["zms", "cc"], n_boot="auto", n_mc="auto", seed=5)
        assert_equals_fixed_counts(nig, remote, ["zms", "cc"], seed=5)
    xr.testing.assert_identical(_without_auto_attrs(remote), _without_auto_attrs(local))
