"""Local analyses of dependent points (issue 25): xuqcal.local, xuqcal.reliability and the
recalibration scores with resample="cluster" or a block scheme, the rows of the whole data set
drawn once per replicate and every bin evaluated on its points of that resample."""

from __future__ import annotations

import importlib
import warnings

import dask
import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis.binning import make_bins, members
from xuqcal.core import random as _random
from xuqcal.core.intervals import DegenerateIntervalWarning, acceleration, bca_interval
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import STATISTICS, PreparedData
from xuqcal.recalibration.scores import evaluate, scores

L = importlib.import_module("xuqcal.analysis.local")
D = importlib.import_module("xuqcal.analysis.dependent")

CLUSTER = {"resample": "cluster", "groups": "g"}


def random_effect(n_groups=200, size=50, icc=0.3, seed=0):
    """Calibrated errors whose z-scores share a random effect within each group:
    ``z = sqrt(icc) a_g + sqrt(1 - icc) eps``, lognormal uE, ``E = z uE``; ``t`` orders the
    points group after group."""
    rng = np.random.default_rng(seed)
    effect = np.repeat(rng.normal(size=n_groups), size)
    z = np.sqrt(icc) * effect + np.sqrt(1.0 - icc) * rng.normal(size=n_groups * size)
    u = np.exp(rng.normal(0.0, 0.5, n_groups * size))
    return xuqcal.from_arrays(z * u, u).assign(
        g=("sample", np.repeat(np.arange(n_groups) * 3 + 1, size)),
        t=("sample", np.arange(n_groups * size, dtype=float)))


def _same(a: xr.Dataset, b: xr.Dataset) -> None:
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def _attrs(ds: xr.Dataset) -> dict:
    return {k: v for k, v in ds.attrs.items() if k != "created"}


# --------------------------------------------------------------------------------------------
# iid: unchanged


def test_iid_is_the_default_and_unchanged():
    ds = random_effect(40, 25)
    for stat in ("zms", "zm"):
        plain = xuqcal.local(ds, stat, n_bins=5, n_boot=200)
        explicit = xuqcal.local(ds, stat, n_bins=5, n_boot=200, resample="iid")
        _same(plain, explicit)
        assert _attrs(plain) == _attrs(explicit) and "resample" not in plain.attrs
    rel = xuqcal.reliability(ds, n_bins=5, n_boot=200)
    _same(rel, xuqcal.reliability(ds, n_bins=5, n_boot=200, resample="iid"))
    assert "resample" not in rel.attrs and "n_units" not in rel
    s = scores(ds, features=(), n_bins=5, n_boot=200)
    _same(s, scores(ds, features=(), n_bins=5, n_boot=200, resample="iid"))


# --------------------------------------------------------------------------------------------
# the replicates: one resample of the whole data set, every bin on its points


def test_a_cluster_replicate_of_a_bin_is_the_statistic_of_its_points_in_the_drawn_groups():
    ds = random_effect(30, 10, seed=1)
    bins = make_bins(ds, "uE", n_bins=4)
    gm, offsets = members(bins.bin_index.values, 4)
    layout = D.row_layout(ds.g.values, D.Dependence("cluster", "g"))
    models = []
    for b in range(4):
        idx = np.sort(gm[offsets[b]:offsets[b + 1]])
        models.append((PreparedData.from_arrays(ds.E.values[idx], ds.uE.values[idx],
                                                by_values=np.arange(idx.size), by="row",
                                                needs_bins=False), layout.rows(idx), idx))
    codes = np.array([STATISTICS["zms"].code])
    key = stream_key(3, "local-cluster")
    got = D.dependent_replicates(layout, [m[:2] for m in models], codes, key, 0, 6)[:, :, 0]
    labels = np.unique(ds.g.values)
    for r in range(6):
        counts = np.empty((1, ds.sizes["sample"]), dtype=np.int32)
        layout.fill(key, r, r + 1, counts)
        times = np.array([counts[0][ds.g.values == g][0] for g in labels])
        assert times.sum() == labels.size
        for b, (_, _, idx) in enumerate(models):
            rows = np.concatenate([idx[ds.g.values[idx] == g].repeat(t)
                                   for g, t in zip(labels, times, strict=True)])
            direct = np.mean((ds.E.values[rows] / ds.uE.values[rows]) ** 2) if rows.size \
                else np.nan
            np.testing.assert_allclose(got[b, r], direct, rtol=1e-12)


def _manual_local(ds, by, n_bins, n_boot, seed, level=0.95, purpose="local-cluster"):
    """The dependent LZMS intervals from layout.fill counts and NumPy weighted means."""
    bins = make_bins(ds, by, n_bins=n_bins)
    gm, offsets = members(bins.bin_index.values, n_bins)
    layout = D.row_layout(ds.g.values, D.Dependence("cluster", "g"))
    z2 = (ds.E.values / ds.uE.values) ** 2
    counts = np.empty((n_boot, ds.sizes["sample"]), dtype=np.int32)
    layout.fill(stream_key(seed, purpose), 0, n_boot, counts)
    weights = counts[:, layout.row_of_point]  # (replicate, point)
    low, high, excluded = [], [], []
    for b in range(n_bins):
        idx = gm[offsets[b]:offsets[b + 1]]
        w = weights[:, idx]
        with np.errstate(invalid="ignore"):
            reps = (w * z2[idx]).sum(axis=1) / w.sum(axis=1)
        kept = reps[np.isfinite(reps)]
        excluded.append(n_boot - kept.size)
        units = ds.g.values[idx]
        jack = np.array([z2[idx][units != g].mean() for g in np.unique(units)])
        lo, hi = bca_interval(kept[None, :], np.array([z2[idx].mean()]), level=level,
                              acceleration_value=np.array([acceleration(jack)]))
        low.append(lo[0])
        high.append(hi[0])
    return np.array(low), np.array(high), np.array(excluded)


def test_the_dependent_bca_interval_of_every_bin_from_the_drawn_counts():
    ds = random_effect(25, 12, seed=2)
    loc = xuqcal.local(ds, "zms", n_bins=4, n_boot=300, seed=7, **CLUSTER)
    low, high, excluded = _manual_local(ds, "uE", 4, 300, 7)
    np.testing.assert_allclose(loc.ci_low, low, rtol=1e-9)
    np.testing.assert_allclose(loc.ci_high, high, rtol=1e-9)
    np.testing.assert_array_equal(loc.n_boot_excluded, excluded)
    np.testing.assert_array_equal(loc.value, xuqcal.local(ds, "zms", n_bins=4, n_boot=300,
                                                          seed=7).value)


def test_replicates_where_a_bin_is_empty_are_left_out_and_counted():
    # bins by a group-level variable: each bin holds 2 of the 20 groups, and a cluster
    # resample leaves both out with probability about (1 - 2/20)^20 = 12 %
    ds = random_effect(20, 15, seed=3)
    ds = ds.assign(x=("sample", ds.g.values + 0.01 * ds.t.values / ds.t.values.max()))
    with pytest.warns(DegenerateIntervalWarning, match="no point"):
        loc = xuqcal.local(ds, "zms", by="x", n_bins=10, n_boot=400, seed=1, **CLUSTER)
    low, high, excluded = _manual_local(ds, "x", 10, 400, 1)
    np.testing.assert_allclose(loc.ci_high, high, rtol=1e-9)
    np.testing.assert_array_equal(loc.n_boot_excluded, excluded)
    assert (loc.n_boot_excluded > 0).all() and (loc.n_units == 2).all()
    np.testing.assert_allclose(loc.ci_low, low, rtol=1e-9)
    assert np.isfinite(loc.ci_low).all()


def test_a_bin_of_a_single_group_has_no_interval():
    ds = random_effect(10, 30, seed=4)
    ds = ds.assign(x=("sample", ds.g.values.astype(float)))
    with pytest.warns(DegenerateIntervalWarning, match="single group"):
        loc = xuqcal.local(ds, "zms", by="x", n_bins=10, n_boot=200, **CLUSTER)
    assert (loc.n_units == 1).all() and np.isnan(loc.ci_low).all()
    assert not loc.valid.any()


# --------------------------------------------------------------------------------------------
# the dependence widens the intervals


def test_intervals_widen_on_a_random_effect_data_set():
    ds = random_effect(200, 50)

    def width(result, low="ci_low", high="ci_high"):
        return float((result[high] - result[low]).mean())

    for stat, factor in (("zm", 1.5), ("zms", 1.15)):
        iid = xuqcal.local(ds, stat, n_bins=5, n_boot=300)
        cluster = xuqcal.local(ds, stat, n_bins=5, n_boot=300, **CLUSTER)
        assert width(cluster) > factor * width(iid), stat
        assert cluster.attrs["interval"] == "bca" and cluster.attrs["n_boot"] == 300
    iid = xuqcal.reliability(ds, n_bins=5, n_boot=300)
    cluster = xuqcal.reliability(ds, n_bins=5, n_boot=300, **CLUSTER)
    assert width(cluster, "rmse_low", "rmse_high") > 1.1 * width(iid, "rmse_low", "rmse_high")
    np.testing.assert_array_equal(cluster.rmse, iid.rmse)


# --------------------------------------------------------------------------------------------
# chunking, extra dimensions, attributes


@pytest.mark.parametrize("options", [
    CLUSTER,
    {"resample": "circular", "block": "t", "block_length": 60},
    {"resample": "stationary", "block": "t", "block_length": "auto"},
])
def test_the_same_for_any_chunking(options):
    ds = random_effect(40, 25, seed=5)
    eager = xuqcal.local(ds, "zms", n_bins=5, n_boot=200, seed=2, **options)
    with dask.config.set(scheduler="synchronous"):
        lazy = xuqcal.local(ds.chunk(sample=333), "zms", n_bins=5, n_boot=200, seed=2,
                            **options)
        assert lazy.ci_low.chunks is not None
        _same(eager, lazy.compute())
        rel = xuqcal.reliability(ds.chunk(sample=333), n_bins=5, n_boot=200, **options)
        _same(xuqcal.reliability(ds, n_bins=5, n_boot=200, **options), rel.compute())
    assert eager.attrs["resample"] == options["resample"]


def test_extra_dimensions_slice_by_slice():
    one, two = random_effect(40, 25, seed=6), random_effect(40, 25, seed=7)
    both = xr.concat([one, two], dim="model").assign_coords(model=["a", "b"])
    for name, alone in (("a", one), ("b", two)):
        loc = xuqcal.local(both, "zms", n_bins=5, n_boot=200, **CLUSTER).sel(model=name)
        _same(loc.drop_vars("model"), xuqcal.local(alone, "zms", n_bins=5, n_boot=200,
                                                   **CLUSTER))
        rel = xuqcal.reliability(both, n_bins=5, n_boot=200, **CLUSTER).sel(model=name)
        _same(rel.drop_vars("model"), xuqcal.reliability(alone, n_bins=5, n_boot=200,
                                                         **CLUSTER))


def test_attributes_say_how_the_points_were_resampled():
    ds = random_effect(40, 25, seed=8)
    loc = xuqcal.local(ds, "zms", n_bins=5, n_boot=200, **CLUSTER)
    assert loc.attrs["resample"] == "cluster" and loc.attrs["groups"] == "g"
    assert loc.attrs["jackknife"].startswith("delete-one-group")
    assert "local-cluster" in loc.attrs["random_streams"]
    rel = xuqcal.reliability(ds, n_bins=5, n_boot=200, resample="moving", block="t",
                             block_length="auto")
    assert rel.attrs["block"] == "t" and rel.attrs["block_length"] >= 1
    assert rel.attrs["block_length_rule"].startswith("Politis-White")
    assert rel.attrs["jackknife"].startswith("delete-one-block")
    assert rel.n_units.dtype == np.int64 and "reliability-moving" in rel.attrs["random_streams"]


# --------------------------------------------------------------------------------------------
# argument checks, before any work


@pytest.mark.parametrize(("options", "match"), [
    ({"resample": "cluster"}, "groups: resample='cluster' resamples whole groups"),
    ({"resample": "cluster", "groups": "nope"}, "groups: no variable 'nope'"),
    ({"resample": "moving", "block_length": 10}, "block: resample='moving'"),
    ({"resample": "moving", "block": "t"}, "block_length: resample='moving' needs"),
    ({"resample": "circular", "block": "t", "block_length": 0}, "block_length"),
    ({"resample": "cluster", "groups": "g", "block": "t"}, "block: not used"),
    ({"groups": "g"}, "groups: only used with a dependent resample"),
    ({"block_length": 5}, "block_length: only used with a dependent resample"),
    ({"resample": "bootstrap"}, "resample"),
])
def test_errors(options, match):
    ds = random_effect(10, 10)
    with pytest.raises(ValueError, match=match):
        xuqcal.local(ds, "zms", n_bins=2, n_boot=100, **options)
    with pytest.raises(ValueError, match=match):
        xuqcal.reliability(ds, n_bins=2, n_boot=100, **options)
    with pytest.raises(ValueError, match=match):
        scores(ds, features=(), n_bins=2, n_boot=100, **options)
    with pytest.raises(ValueError, match=match):
        evaluate({"a": ds}, features=(), n_bins=2, n_boot=100, n_mc=2, **options)


def test_zm_under_dependence_needs_the_replicates_of_a_bca_interval():
    ds = random_effect(10, 10)
    xuqcal.local(ds, "zm", n_bins=2, n_boot=10)  # Student: no replicates needed
    with pytest.raises(ValueError, match="n_boot"):
        xuqcal.local(ds, "zm", n_bins=2, n_boot=10, **CLUSTER)


# --------------------------------------------------------------------------------------------
# the recalibration scores pass the resample on


def test_scores_and_evaluate_pass_the_resample_to_local():
    ds = random_effect(40, 25, seed=9).assign(X1=("sample", np.arange(1000.0) % 7))
    s = scores(ds, features=("X1",), n_bins=5, n_boot=200, **CLUSTER)
    for name in ("uE", "X1"):
        loc = xuqcal.local(ds, "zms", by=name, n_bins=5, n_boot=200, **CLUSTER)
        assert s.fraction_valid.sel(by=name).item() == loc.fraction_valid.item()
    assert s.attrs["resample"] == "cluster" and s.attrs["groups"] == "g"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateIntervalWarning)
        t = evaluate({"a": ds}, features=(), n_bins=5, n_boot=200, n_mc=3, n_mc_fv=2, seed=4,
                     **CLUSTER)
    assert t.attrs["resample"] == "cluster"
    assert t.fraction_valid.sel(dataset="a", by="uE").item() == scores(
        ds, features=(), n_bins=5, n_boot=200, seed=4, **CLUSTER).fraction_valid.item()
    # the simulated sets keep the groups and are resampled as the data are
    eps, fv = np.empty(1000), []
    for r in range(2):
        _random.fill_variates(stream_key(4, "recalibration:simulated_fv"), r, _random.NORMAL,
                              np.nan, eps)
        sim = ds.assign(E=("sample", ds.uE.values * eps))
        fv.append(xuqcal.local(sim, "zms", n_bins=5, n_boot=200, seed=4,
                               **CLUSTER).fraction_valid.item())
    assert t.fraction_valid_simulated.sel(dataset="a", by="uE").item() == np.mean(fv)


def test_given_and_strata_bins_under_a_cluster_resample():
    ds = random_effect(40, 25, seed=10)
    ds = ds.assign(S=("sample", np.round(ds.uE.values, 1)))
    strata = xuqcal.local(ds, "zms", by="S", binning="strata", min_count=100, n_boot=200,
                          **CLUSTER)
    assert strata.attrs["binning"] == "strata" and strata.attrs["resample"] == "cluster"
    given = make_bins(ds, "S", binning="strata", min_count=100)
    again = xuqcal.local(ds, "zms", bins=given, n_boot=200, **CLUSTER)
    np.testing.assert_array_equal(again.ci_low, strata.ci_low)
    assert (again.n_units > 1).all()
