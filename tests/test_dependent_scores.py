"""Dependent resampling of the proper scores and the coverage of quantiles and intervals
(issue 25): ``resample=`` on :func:`proper_scores`, :func:`quantile_coverage` and
:func:`interval_coverage`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

import xuqcal
from xuqcal import io
from xuqcal.analysis.coverage import interval_coverage, quantile_coverage
from xuqcal.analysis.dependent import check_dependence
from xuqcal.analysis.probabilistic import mean_score_replicates, proper_scores

CLUSTER = {"resample": "cluster", "groups": "structure_id"}
CIRCULAR = {"resample": "circular", "block": "time", "block_length": 40}
PROBABILITIES = [0.1, 0.5, 0.9]


def _random_effect(n_groups: int = 200, size: int = 50, seed: int = 0):
    """z = sqrt(0.3) a_g + sqrt(0.7) eps (intra-class correlation 0.3), uE lognormal,
    E = z uE; the groups in ``structure_id``."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_groups), size)
    z = np.sqrt(0.3) * rng.normal(size=n_groups)[g] + np.sqrt(0.7) * rng.normal(size=g.size)
    u = rng.lognormal(0.0, 0.3, g.size)
    return z * u, u, g


def _ar1(m: int = 4000, rho: float = 0.8, seed: int = 1):
    """An AR(1) z-series (ρ = 0.8, unit variance) stored in a shuffled order, with its
    ``time``."""
    rng = np.random.default_rng(seed)
    eps = rng.normal(size=m)
    z = np.empty(m)
    z[0] = eps[0]
    for i in range(1, m):
        z[i] = rho * z[i - 1] + np.sqrt(1 - rho**2) * eps[i]
    u = rng.lognormal(0.0, 0.3, m)
    order = rng.permutation(m)
    return (z * u)[order], u[order], np.arange(m, dtype=float)[order]


def _scores_data(E, u, **variables):
    return xuqcal.from_arrays(E, u).assign({k: ("sample", v) for k, v in variables.items()})


def _interval_data(E, u, **variables):
    ds = io.from_arrays(E, lower=-1.645 * u, upper=1.645 * u, coverage_level=0.9)
    return ds.assign({k: ("sample", v) for k, v in variables.items()})


def _quantile_data(E, u, **variables):
    q = stats.norm.ppf(PROBABILITIES)[None, :] * u[:, None]
    ds = io.from_quantiles(q, E, PROBABILITIES, axis=1)
    return ds.assign({k: ("sample", v) for k, v in variables.items()})


@pytest.fixture(scope="module")
def clustered():
    E, u, g = _random_effect()
    return E, u, g


@pytest.fixture(scope="module")
def series():
    return _ar1()


# ------------------------------------------------------------------ iid: unchanged


def test_iid_default_unchanged(clustered):
    E, u, g = clustered
    ds = _scores_data(E[:3000], u[:3000], structure_id=g[:3000])
    a = proper_scores(ds, nu=6, n_boot=200, seed=3).compute()
    b = proper_scores(ds, nu=6, n_boot=200, seed=3, resample="iid").compute()
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    assert "resample" not in a.attrs
    iv = _interval_data(E[:3000], u[:3000], structure_id=g[:3000])
    a = interval_coverage(iv, n_boot=200, seed=3)
    b = interval_coverage(iv, n_boot=200, seed=3, resample="iid")
    xr.testing.assert_identical(a.compute().drop_attrs(), b.compute().drop_attrs())
    assert a.attrs["ci_method"].startswith("Wilson") and "resample" not in a.attrs
    qd = _quantile_data(E[:3000], u[:3000], structure_id=g[:3000])
    a, b = quantile_coverage(qd), quantile_coverage(qd, resample="iid", method="percentile")
    xr.testing.assert_identical(a.compute().drop_attrs(), b.compute().drop_attrs())
    assert a.attrs["ci_method"].startswith("Wilson") and "resample" not in a.attrs


# ---------------------------------------------- the same resamples as xuqcal.bootstrap


@pytest.mark.parametrize("scheme", [CLUSTER, {**CIRCULAR, "resample": "stationary"},
                                    {**CIRCULAR, "resample": "moving"}])
def test_nll_replicates_are_those_of_bootstrap(clustered, scheme):
    E, u, g = clustered
    E, u, g = E[:2000], u[:2000], g[:2000]
    time = np.random.default_rng(5).permutation(2000).astype(float)
    ds = _scores_data(E, u, structure_id=g, time=time)
    boot = xuqcal.bootstrap(ds, ["nll"], n_boot=300, seed=7, keep_replicates=True,
                            **scheme).compute()
    z = E / u
    nll = (0.5 * (z * z + np.log(u * u) + np.log(2 * np.pi)))[:, None]
    variable = ds[scheme.get("groups") or scheme["block"]].values
    dependence = check_dependence(ds, scheme["resample"], scheme.get("groups"),
                                  scheme.get("block"), scheme.get("block_length"))
    replicates, _ = mean_score_replicates(nll, variable, dependence, n_boot=300, seed=7)
    np.testing.assert_allclose(replicates[:, 0], boot.replicates.sel(statistic="nll").values,
                               rtol=1e-12)
    for method in ("bca", "percentile"):
        scores = proper_scores(ds, nu=6, n_boot=300, seed=7, method=method,
                               **scheme).compute().sel(score="nll_normal")
        reference = xuqcal.bootstrap(ds, ["nll"], n_boot=300, seed=7, method=method,
                                     **scheme).compute()
        for name in ("se", "bias", "ci_low", "ci_high"):
            np.testing.assert_allclose(float(scores[name]), float(reference[name].item()),
                                       rtol=1e-9, atol=1e-13, err_msg=f"{method} {name}")


# ------------------------------------------------------------ wider under dependence


def _width(result, name="ci"):
    return (result[f"{name}_high"] - result[f"{name}_low"]).values


def test_wider_intervals_on_random_effects(clustered):
    E, u, g = clustered
    ds = _scores_data(E, u, structure_id=g)
    iid = proper_scores(ds, nu=6, n_boot=300, seed=1).compute()
    dep = proper_scores(ds, nu=6, n_boot=300, seed=1, **CLUSTER).compute()
    assert (_width(dep) > 1.3 * _width(iid)).all()
    for name in ("crps_normal", "nll_normal", "crps_student", "nll_student"):
        assert float(dep[name]) == float(iid[name])  # the means do not depend on it
    assert dep.attrs["resample"] == "cluster" and dep.attrs["groups"] == "structure_id"
    assert dep.attrs["jackknife"] == "delete-one-group"

    iv = _interval_data(E, u, structure_id=g)
    iid = interval_coverage(iv, n_boot=300, seed=1).compute()
    dep = interval_coverage(iv, n_boot=300, seed=1, **CLUSTER).compute()
    assert _width(dep) > 1.3 * _width(iid)  # the PICP's
    assert (_width(dep, "score_ci") > _width(iid, "score_ci")).all()
    assert float(dep.picp) == float(iid.picp)
    assert dep.attrs["ci_method"].startswith("dependent bootstrap (BCa, 300 replicates")
    assert dep.attrs["coverage_n_boot"] == 300 and dep.attrs["groups"] == "structure_id"
    assert dep.ci_low.attrs["long_name"].startswith("dependent bootstrap")
    assert bool(dep.valid) == bool((dep.ci_low <= 0.905) & (0.895 <= dep.ci_high))

    qd = _quantile_data(E, u, structure_id=g)
    iid = quantile_coverage(qd).compute()
    dep = quantile_coverage(qd, n_boot=300, seed=1, **CLUSTER).compute()
    assert (_width(dep) > 1.3 * _width(iid)).all()
    np.testing.assert_array_equal(dep.observed.values, iid.observed.values)
    p = np.asarray(PROBABILITIES)
    np.testing.assert_array_equal(
        dep.valid.values, (dep.ci_low.values <= p + 0.005) & (p - 0.005 <= dep.ci_high.values))
    assert dep.attrs["jackknife"] == "delete-one-group" and dep.attrs["coverage_seed"] == 1


def test_wider_intervals_on_an_ar1_series(series):
    E, u, time = series
    ds = _scores_data(E, u, time=time)
    iid = proper_scores(ds, nu=6, n_boot=300, seed=2).compute()
    dep = proper_scores(ds, nu=6, n_boot=300, seed=2, **CIRCULAR).compute()
    assert (_width(dep) > 1.3 * _width(iid)).all()
    assert dep.attrs["block"] == "time" and dep.attrs["block_length"] == 40
    assert dep.attrs["jackknife"] == "delete-one-block (blocks of 40 points)"
    auto = proper_scores(ds, nu=6, n_boot=300, seed=2, resample="circular", block="time",
                         block_length="auto").compute()
    assert auto.attrs["block_length"] > 1
    assert auto.attrs["block_length_rule"].startswith("Politis-White")

    iv = _interval_data(E, u, time=time)
    iid = interval_coverage(iv, n_boot=300, seed=2).compute()
    dep = interval_coverage(iv, n_boot=300, seed=2, **CIRCULAR).compute()
    assert _width(dep) > 1.3 * _width(iid)
    assert (_width(dep, "score_ci") > _width(iid, "score_ci")).all()

    qd = _quantile_data(E, u, time=time)
    iid = quantile_coverage(qd).compute()
    dep = quantile_coverage(qd, n_boot=300, seed=2, **CIRCULAR).compute()
    assert (_width(dep) > 1.2 * _width(iid)).all()
    auto = quantile_coverage(qd, n_boot=300, seed=2, resample="stationary", block="time",
                             block_length="auto")
    assert auto.attrs["block_length"] > 1 and "indicators E <= q_p" in (
        auto.attrs["block_length_rule"])
    assert np.isfinite(auto.ci_low.values).all()


# -------------------------------------------------------------- chunking, extra dims


def test_dask_backed_equal_numpy_backed(clustered):
    E, u, g = clustered
    E, u, g = E[:3000], u[:3000], g[:3000]
    ds = _scores_data(E, u, structure_id=g)
    eager = proper_scores(ds, nu=6, n_boot=200, **CLUSTER).compute()
    lazy = proper_scores(ds.chunk({"sample": 700}), nu=6, n_boot=200, **CLUSTER)
    assert lazy.ci_low.chunks is not None
    xr.testing.assert_identical(lazy.compute().drop_attrs(), eager.drop_attrs())
    iv = _interval_data(E, u, structure_id=g)
    eager = interval_coverage(iv, n_boot=200, **CLUSTER).compute()
    lazy = interval_coverage(iv.chunk({"sample": 700}), n_boot=200, **CLUSTER)
    assert lazy.ci_low.chunks is not None and lazy.score_ci_low.chunks is not None
    lazy = lazy.compute()
    for name in ("picp", "ci_low", "ci_high", "valid", "interval_score", "score_ci_low",
                 "score_ci_high", "score_se", "score_bias"):
        np.testing.assert_array_equal(lazy[name].values, eager[name].values, err_msg=name)
    qd = _quantile_data(E, u, structure_id=g)
    eager = quantile_coverage(qd, n_boot=200, **CLUSTER).compute()
    lazy = quantile_coverage(qd.chunk({"sample": 700}), n_boot=200, **CLUSTER)
    assert lazy.ci_low.chunks is not None
    xr.testing.assert_identical(lazy.compute().drop_attrs(), eager.drop_attrs())


def test_extra_dimension_each_slice_as_alone(clustered):
    E, u, g = clustered
    n = 1500
    rng = np.random.default_rng(9)
    shifted = E[:n] * rng.lognormal(0, 0.2, n)
    time = rng.permutation(n).astype(float)
    names = ["a", "b"]
    # scores: model b has 300 absent points (NaN-padded)
    sets = [_scores_data(E[:n], u[:n]), _scores_data(shifted[:1200], u[:1200])]
    stacked = xr.concat(sets, dim=pd.Index(names, name="model"), join="outer").assign(
        structure_id=("sample", g[:n]), time=("sample", time))
    for scheme in (CLUSTER, CIRCULAR):
        both = proper_scores(stacked, nu=6, n_boot=200, seed=4, **scheme).compute()
        for k, name in enumerate(names):
            alone = proper_scores(stacked.isel(model=k, drop=True).dropna("sample"), nu=6,
                                  n_boot=200, seed=4, **scheme).compute()
            for var in ("crps_normal", "bias", "se", "ci_low", "ci_high"):
                np.testing.assert_array_equal(both[var].sel(model=name).values,
                                              alone[var].values, err_msg=f"{name} {var}")
    # intervals and quantiles: the functions handle the extra dimensions themselves
    iv = [_interval_data(E[:n], u[:n]), _interval_data(shifted[:1200], u[:1200])]
    iv_stacked = xr.concat(iv, dim=pd.Index(names, name="model"), join="outer").assign(
        structure_id=("sample", g[:n]), time=("sample", time))
    qs = [_quantile_data(E[:n], u[:n]), _quantile_data(shifted, 0.7 * u[:n])]
    q_stacked = xr.concat(qs, dim=pd.Index(names, name="model")).assign(
        structure_id=("sample", g[:n]), time=("sample", time))
    for scheme in (CLUSTER, CIRCULAR):
        both = interval_coverage(iv_stacked, n_boot=200, seed=4, **scheme).compute()
        assert both.score_ci_low.dims == ("model", "score")
        for k, name in enumerate(names):
            one = iv_stacked.isel(model=k, drop=True)
            alone = interval_coverage(one, n_boot=200, seed=4, **scheme).compute()
            for var in ("picp", "ci_low", "ci_high", "valid", "score_ci_low", "score_ci_high",
                        "score_se"):
                np.testing.assert_array_equal(both[var].sel(model=name).values,
                                              alone[var].values, err_msg=f"{name} {var}")
        both = quantile_coverage(q_stacked, n_boot=200, seed=4, **scheme).compute()
        for k, name in enumerate(names):
            alone = quantile_coverage(q_stacked.isel(model=k, drop=True), n_boot=200, seed=4,
                                      **scheme).compute()
            xr.testing.assert_identical(both.sel(model=name, drop=True).drop_attrs(),
                                        alone.drop_attrs())


# -------------------------------------------------------------------- error messages


@pytest.mark.parametrize(("kwargs", "start"), [
    ({"resample": "cluster"}, "groups: resample='cluster' resamples whole groups"),
    ({"resample": "bogus"}, "resample:"),
    ({"groups": "structure_id"}, "groups: only used with a dependent resample"),
    ({"resample": "circular", "block": "time"}, "block_length: resample='circular' needs"),
    ({"resample": "moving", "block": "time", "block_length": 10**6},
     "block_length: 1000000 is longer"),
    ({"resample": "cluster", "groups": "nowhere"}, "groups: no variable 'nowhere'"),
    ({"resample": "cluster", "groups": "structure_id", "block_length": 5},
     "block_length: not used by resample='cluster'"),
])
def test_errors(clustered, kwargs, start):
    E, u, g = clustered
    m = 500
    time = np.arange(m, dtype=float)
    data = [(proper_scores, _scores_data, {"nu": 6, "n_boot": 100}),
            (interval_coverage, _interval_data, {"n_boot": 100}),
            (quantile_coverage, _quantile_data, {})]
    for function, make, extra in data:
        ds = make(E[:m], u[:m], structure_id=g[:m], time=time)
        with pytest.raises(ValueError) as error:
            function(ds, **extra, **kwargs)
        assert str(error.value).startswith(start), (function.__name__, str(error.value))


def test_quantile_n_boot_needs_a_dependent_resample(clustered):
    E, u, g = clustered
    qd = _quantile_data(E[:500], u[:500], structure_id=g[:500])
    with pytest.raises(ValueError, match=r"^n_boot: only used with a dependent resample"):
        quantile_coverage(qd, n_boot=100)
    with pytest.raises(ValueError, match=r"^n_boot: a dependent resample"):
        quantile_coverage(qd, n_boot=0, **CLUSTER)
    with pytest.raises(ValueError, match=r"^method:"):
        quantile_coverage(qd, method="student", **CLUSTER)


def test_one_group_and_missing_groups_are_named(clustered):
    E, u, _ = clustered
    ds = _scores_data(E[:300], u[:300], structure_id=np.zeros(300))
    with pytest.raises(ValueError, match="groups: 'structure_id' holds 1 group"):
        proper_scores(ds, nu=6, n_boot=100, **CLUSTER)
    iv = _interval_data(E[:300], u[:300], structure_id=np.r_[np.nan, np.arange(299.0)])
    with pytest.raises(ValueError, match="groups: 'structure_id' is missing at 1 point"):
        interval_coverage(iv, **CLUSTER).compute()


def test_dependent_picp_without_score_intervals(clustered):
    E, u, g = clustered
    iv = _interval_data(E[:2000], u[:2000], structure_id=g[:2000])
    result = interval_coverage(iv, method="percentile", **CLUSTER)
    assert "score_ci_low" not in result and result.attrs["coverage_n_boot"] == 10_000
    assert float(result.ci_low) < float(result.picp) < float(result.ci_high)
    with_scores = interval_coverage(iv, n_boot=10_000, method="percentile", **CLUSTER)
    assert float(with_scores.ci_low) == float(result.ci_low)  # the same resamples
