"""Comparisons of models on dependent points (issue 25): xuqcal.compare, paired_scores and
sip_matrix with resample="cluster" or a block scheme."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr
from scipy import stats as sps

import xuqcal
from xuqcal.analysis import compare as C
from xuqcal.analysis import dependent as D
from xuqcal.analysis import resampling
from xuqcal.analysis.paired_scores import paired_scores, sip_matrix
from xuqcal.core import paired as P
from xuqcal.core.intervals import percentile_interval
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import codes_of, get_statistics

KEYS = ["zms", "rce", "ence", "cc"]


def grouped(n_groups=40, size=15, icc=0.4, seed=0, task=False):
    """Two models on the same points whose z-scores share a random effect per group: B is A
    with its uncertainties 10 % too small and a little noise of its own."""
    rng = np.random.default_rng(seed)
    m = n_groups * size
    effect = np.repeat(rng.normal(0.0, np.sqrt(icc), n_groups), size)
    z = effect + rng.normal(0.0, np.sqrt(1.0 - icc), m)
    u = np.exp(rng.normal(0.0, 0.3, m))
    e_b = z * u + 0.2 * u * rng.normal(size=m)
    ds = xr.Dataset(
        {"E": (("model", "sample"), np.stack([z * u, e_b])),
         "uE": (("model", "sample"), np.stack([u, 0.9 * u])),
         "g": ("sample", np.repeat(np.arange(n_groups) * 3 + 1, size)),
         "t": ("sample", rng.permutation(m).astype(float))},
        coords={"model": ["A", "B"]})
    if task:
        other = grouped(n_groups, size, icc, seed + 1)
        ds = xr.concat([ds, other.assign(g=ds.g, t=ds.t)], dim="task")
        ds = ds.assign(g=ds.g.isel(task=0, drop=True), t=ds.t.isel(task=0, drop=True))
        ds = ds.assign_coords(task=["x", "y"])
    return ds


def _same(a: xr.Dataset, b: xr.Dataset) -> None:
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        x, y = a[name].values, b[name].values
        if x.dtype.kind == "f":
            assert np.array_equal(x, y, equal_nan=True), name
        else:
            assert (x == y).all(), name


# ---------------------------------------------------------------------------------- iid


def test_iid_is_the_default_and_unchanged():
    ds = grouped()
    for pairing in ("common", "independent"):
        plain = C.compare(ds, KEYS, n_boot=200, pairing=pairing)
        explicit = C.compare(ds, KEYS, n_boot=200, pairing=pairing, resample="iid")
        _same(plain, explicit)
        assert "resample" not in explicit.attrs and "groups" not in explicit.attrs
    _same(paired_scores(ds), paired_scores(ds, resample="iid"))
    _same(sip_matrix(ds, n_boot=100), sip_matrix(ds, n_boot=100, resample="iid"))
    assert "resample" not in paired_scores(ds).attrs


# ----------------------------------------------------------------------- compare replicates


@pytest.mark.parametrize("dependence", [D.Dependence("cluster", "g"),
                                        D.Dependence("moving", "t", 7)])
def test_a_replicate_is_each_models_statistic_on_the_drawn_points(dependence):
    """Replicate r of every model is its statistics on the points of the dependent resample
    drawn by (seed, "compare-<resample>", r): the row multiplicities of layout.fill, the same
    for every model."""
    ds = grouped(n_groups=20, size=10)
    e, u = ds.E.values, ds.uE.values
    layout = D.row_layout(ds[dependence.variable].values, dependence)
    codes = codes_of(get_statistics(KEYS))
    models = [C._prepare(e[i], u[i], None, n_bins=5, by="uE", needs_bins=True,
                         row_of_point=layout.row_of_point) for i in range(2)]
    key = stream_key(5, f"compare-{dependence.resample}")
    got = C._dependent_chunk(layout, models, codes, key, 3, 6)  # (model, replicate, code)
    for r in range(3, 6):
        counts = np.empty((1, layout.size), dtype=np.int32)
        layout.fill(key, r, r + 1, counts)
        times = counts[0][layout.row_of_point]  # each point's multiplicity
        assert times.sum() == layout.size
        if dependence.resample == "cluster":  # whole groups: one multiplicity per group
            for label in np.unique(ds.g.values):
                assert np.unique(times[ds.g.values == label]).size == 1
        rows = np.repeat(np.arange(layout.size), times)
        for i in range(2):
            direct = xuqcal.stats(xuqcal.from_arrays(e[i, rows], u[i, rows]), KEYS, n_bins=5)
            np.testing.assert_allclose(got[i, r - 3], direct.values, rtol=1e-10)


def test_the_paired_jackknife_leaves_each_group_out_of_every_model():
    ds = grouped(n_groups=8, size=12)
    dependence = D.Dependence("cluster", "g")
    layout = D.row_layout(ds.g.values, dependence)
    codes = codes_of(get_statistics(KEYS))
    for i in range(2):
        model = C._prepare(ds.E.values[i], ds.uE.values[i], None, n_bins=4, by="uE",
                           needs_bins=True, row_of_point=layout.row_of_point)
        jack = C._jackknife_by_unit(model, layout, codes)  # (code, group)
        for j, label in enumerate(np.unique(ds.g.values)):
            kept = np.flatnonzero(ds.g.values != label)
            direct = xuqcal.stats(xuqcal.from_arrays(ds.E.values[i, kept],
                                                     ds.uE.values[i, kept]), KEYS, n_bins=4)
            np.testing.assert_allclose(jack[:, j], direct.values, rtol=1e-10)


def test_the_intervals_of_differences_widen_with_a_group_effect_shared_by_the_models():
    ds = grouped(n_groups=40, size=25, icc=0.5)
    iid = C.compare(ds, ["zms"], n_boot=600).sel(model="A", other="B", statistic="zms")
    cluster = C.compare(ds, ["zms"], n_boot=600, resample="cluster", groups="g").sel(
        model="A", other="B", statistic="zms")
    assert float(cluster.difference) == float(iid.difference)  # the same estimate
    width = float(cluster.value_ci_high - cluster.value_ci_low)
    assert width > 1.3 * float(iid.value_ci_high - iid.value_ci_low)
    assert cluster.value_ci_low < cluster.value_difference < cluster.value_ci_high
    # a block scheme in a random order of the points is about the iid bootstrap
    blocks = C.compare(ds, ["zms"], n_boot=600, resample="circular", block="t",
                       block_length=5).sel(model="A", other="B", statistic="zms")
    assert float(blocks.value_ci_high - blocks.value_ci_low) < 0.8 * width


def test_attributes_say_how_the_points_were_resampled():
    ds = grouped()
    common = C.compare(ds, ["zms"], n_boot=100, resample="cluster", groups="g")
    assert common.attrs["resample"] == "cluster" and common.attrs["groups"] == "g"
    assert "delete-one-group" in common.attrs["interval"]
    assert "compare-cluster" in common.attrs["random_streams"]
    apart = C.compare(ds, ["zms"], n_boot=100, resample="stationary", block="t",
                      block_length="auto", pairing="independent")
    assert apart.attrs["interval"] == "percentile of independent replicates"
    assert "compare:<label>-stationary" in apart.attrs["random_streams"]
    assert "each model's own" in apart.attrs["block_length_rule"]
    assert "jackknife" not in apart.attrs
    # the block lengths used: each model's own, or the largest for one common layout
    assert apart.block_length.dims == ("model",) and (apart.block_length >= 1).all()
    auto = C.compare(ds, ["zms"], n_boot=100, resample="circular", block="t",
                     block_length="auto")
    assert auto.block_length.values.tolist() == [int(apart.block_length.max())] * 2
    _same(auto, C.compare(ds.chunk(sample=200), ["zms"], n_boot=100, resample="circular",
                          block="t", block_length="auto").compute())
    assert "block_length" not in common.data_vars


def test_independent_pairing_resamples_each_model_on_its_own_points():
    ds = grouped(n_groups=20, size=10)
    ragged = ds.assign(E=ds.E.where((ds.model == "A") | (ds.sample >= 30)),
                       uE=ds.uE.where((ds.model == "A") | (ds.sample >= 30)))
    r = C.compare(ragged, ["zms", "cc"], n_boot=200, resample="cluster", groups="g",
                  pairing="independent")
    assert r.n_samples.values.tolist() == [200, 170]
    # each model alone: the replicates of its own layout (its own groups) and streams
    codes = codes_of(get_statistics(["zms", "cc"]))
    replicates = []
    for i, (label, first) in enumerate((("A", 0), ("B", 30))):
        e, u = ragged.E.values[i, first:], ragged.uE.values[i, first:]
        layout = D.row_layout(ragged.g.values[first:], D.Dependence("cluster", "g"))
        model = C._prepare(e, u, None, n_bins=5, by="uE", needs_bins=False,
                           row_of_point=layout.row_of_point)
        replicates.append(C._dependent_chunk(layout, [model], codes,
                                             stream_key(0, f"compare:{label}-cluster"),
                                             0, 200)[0])
    low, high = percentile_interval(replicates[0][:, 0] - replicates[1][:, 0], 0.95)
    ab = r.sel(model="A", other="B", statistic="zms")
    assert float(ab.value_ci_low) == float(low) and float(ab.value_ci_high) == float(high)
    again = C.compare(ragged, ["zms", "cc"], n_boot=200, resample="cluster", groups="g",
                      pairing="independent", chunks=64)
    _same(r, again)


def test_the_result_does_not_depend_on_the_chunks_nor_on_the_data_backing(monkeypatch):
    ds = grouped(n_groups=20, size=15)
    options = {"statistics": ["zms", "ence"], "n_boot": 150, "seed": 4,
               "resample": "cluster", "groups": "g"}
    eager = C.compare(ds, **options)
    with dask.config.set(scheduler="synchronous"):
        chunked = C.compare(ds, chunks=37, **options)
    lazy = C.compare(ds.chunk(sample=100), **options)
    assert lazy.difference.chunks is not None
    monkeypatch.setattr(resampling, "COUNTS_BLOCK", 7 * 300)  # blocks of 7 replicates
    small = C.compare(ds, **options)
    for other in (chunked, lazy.compute(), small):
        _same(eager, other)
    for kwargs in ({"resample": "cluster", "groups": "g"},
                   {"resample": "moving", "block": "t", "block_length": 6}):
        _same(sip_matrix(ds, n_boot=100, **kwargs),
              sip_matrix(ds.chunk(sample=50), n_boot=100, **kwargs).compute())
        _same(paired_scores(ds, **kwargs),
              paired_scores(ds.chunk(sample=50), **kwargs).compute())


def test_a_groups_variable_over_the_models_is_accepted_when_equal_and_refused_otherwise():
    ds = grouped(n_groups=15, size=8)
    over_models = ds.assign(g=ds.g.broadcast_like(ds.E).astype(float))
    options = {"n_boot": 100, "resample": "cluster", "groups": "g"}
    _same(C.compare(ds, ["zms"], **options), C.compare(over_models, ["zms"], **options))
    _same(paired_scores(ds, resample="cluster", groups="g"),
          paired_scores(over_models, resample="cluster", groups="g"))
    differ = over_models.copy(deep=True)
    differ.g[1, 4] = -1.0
    with pytest.raises(ValueError, match=r"groups: 'g' differs between the models along "
                                         r"'model' at 1 sample\(s\) \(4\)"):
        C.compare(differ, ["zms"], **options)
    with pytest.raises(ValueError, match="groups: 'g' differs"):
        sip_matrix(differ, n_boot=40, resample="cluster", groups="g")


@pytest.mark.parametrize(("call", "message"), [
    (lambda ds: C.compare(ds, resample="cluster"), "groups: resample='cluster' resamples"),
    (lambda ds: C.compare(ds, groups="g"), "groups: only used with a dependent resample"),
    (lambda ds: C.compare(ds, resample="blocks"), "resample:"),
    (lambda ds: C.compare(ds, resample="moving", block="t"), "block_length: resample="),
    (lambda ds: C.compare(ds, resample="cluster", groups="nope"), "groups: no variable 'nope'"),
    (lambda ds: C.compare(ds.assign(E=ds.E.where(ds.sample >= 250)), n_boot=40,
                          resample="moving", block="t", block_length=60),
     "block_length: 60 is longer than the 50 points in common"),
    (lambda ds: C.compare(ds.assign(g=ds.g * 0), n_boot=40, resample="cluster", groups="g"),
     "groups: 'g' holds 1 group"),
    (lambda ds: paired_scores(ds.isel(sample=slice(0, 20)), resample="circular", block="t",
                              block_length=20),
     "block_length: 20 lags of the HAC variance need more than the 20 compared points"),
    (lambda ds: paired_scores(ds, resample="cluster", groups="g", block="t"),
     "block: not used by resample='cluster'"),
    (lambda ds: sip_matrix(ds, n_boot=40, resample="stationary", block="t"),
     "block_length: resample='stationary' needs"),
])
def test_bad_dependence_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call(grouped(n_groups=20, size=15))


@pytest.mark.skipif(not hasattr(D, "grid_of"), reason="no tile bootstrap in this version")
def test_tiles_of_a_grid_are_refused_clearly():
    ds = grouped(n_groups=20, size=15)
    ds = ds.assign(lat=("sample", np.repeat(np.arange(20), 15)),
                   lon=("sample", np.tile(np.arange(15), 20)))
    for call in (C.compare, paired_scores, sip_matrix):
        with pytest.raises(ValueError, match="block: tiles of a grid"):
            call(ds, resample="circular", block={"lat": 5, "lon": 5})


def test_an_extra_dimension_is_compared_slice_by_slice():
    ds = grouped(n_groups=15, size=10, task=True)
    assert ds.E.dims == ("task", "model", "sample")
    options = {"resample": "cluster", "groups": "g"}
    whole = C.compare(ds, ["zms", "cc"], n_boot=100, **options)
    scores = paired_scores(ds, **options)
    sips = sip_matrix(ds, n_boot=100, **options)
    hac = paired_scores(ds, resample="moving", block="t", block_length=4)
    for i in range(2):
        alone = ds.isel(task=i)
        _same(whole.isel(task=i), C.compare(alone, ["zms", "cc"], n_boot=100, **options))
        _same(scores.isel(task=i), paired_scores(alone, **options))
        _same(sips.isel(task=i), sip_matrix(alone, n_boot=100, **options))
        _same(hac.isel(task=i),
              paired_scores(alone, resample="moving", block="t", block_length=4))


# ------------------------------------------------------------------ DM and SIP formulas


def _direct_cluster_variance(d, g):
    r = d - d.mean()
    labels = np.unique(g)
    sums = np.array([r[g == label].sum() for label in labels])
    return labels.size / (labels.size - 1) * (sums ** 2).sum() / d.size ** 2


def _direct_hac_variance(d, lags):
    n, r = d.size, d - d.mean()
    s = (r * r).sum()
    for lag in range(1, lags + 1):
        s += 2 * (1 - lag / (lags + 1)) * sum(r[t] * r[t - lag] for t in range(lag, n))
    return s / n ** 2


def test_the_dm_statistic_uses_the_robust_variance_of_the_mean_difference():
    ds = grouped(n_groups=12, size=10, seed=3)
    m = ds.sizes["sample"]
    s = np.stack([P.point_scores(ds.E.values[i], ds.uE.values[i], "crps") for i in range(2)])
    d = s[0] - s[1]
    cluster = paired_scores(ds, "crps", resample="cluster", groups="g").sel(
        model="A", other="B", score="crps")
    expected = d.mean() / np.sqrt(_direct_cluster_variance(d, ds.g.values))
    np.testing.assert_allclose(float(cluster.dm_statistic), expected, rtol=1e-12)
    np.testing.assert_allclose(float(cluster.dm_p_value), 2 * sps.norm.sf(abs(expected)),
                               rtol=1e-12)
    order = np.argsort(ds.t.values, kind="stable")
    for block_length, lags in ((3, 3), ("auto", int(np.floor(4 * (m / 100) ** (2 / 9))))):
        hac = paired_scores(ds, "crps", resample="moving", block="t",
                            block_length=block_length).sel(model="A", other="B", score="crps")
        expected = d.mean() / np.sqrt(_direct_hac_variance(d[order], lags))
        np.testing.assert_allclose(float(hac.dm_statistic), expected, rtol=1e-12)
    # antisymmetric, and the three block schemes give the same test
    circular = paired_scores(ds, "crps", resample="circular", block="t", block_length=3)
    np.testing.assert_allclose(circular.dm_statistic.sel(model="B", other="A"),
                               -circular.dm_statistic.sel(model="A", other="B"), rtol=1e-12)
    hac3 = paired_scores(ds, "crps", resample="stationary", block="t", block_length=3)
    np.testing.assert_array_equal(hac3.dm_statistic, circular.dm_statistic)
    assert "Newey-West" in hac3.attrs["dm_test"] and "cluster" in cluster.attrs["dm_test"]
    # lags 0: the iid statistic with var(d, ddof=0)
    dm0, _ = P.diebold_mariano(s[0], s[1], lags=0)
    np.testing.assert_allclose(dm0, d.mean() / np.sqrt(d.var() / m), rtol=1e-12)
    with pytest.raises(ValueError, match="groups, lags: give one of them"):
        P.diebold_mariano(s[0], s[1], groups=ds.g.values, lags=2)


@pytest.mark.parametrize("dependence", [D.Dependence("cluster", "g"),
                                        D.Dependence("circular", "t", 5)])
def test_a_sip_replicate_is_the_sip_of_the_drawn_points(dependence):
    ds = grouped(n_groups=10, size=12, seed=2)
    s = np.stack([P.point_scores(ds.E.values[i], ds.uE.values[i], "crps") for i in range(2)])
    layout = D.row_layout(ds[dependence.variable].values, dependence)
    purpose = f"sip-{dependence.resample}"
    reps = P.sip_replicates(s, 30, seed=6, layout=layout, purpose=purpose)
    key = stream_key(6, purpose)
    for r in (0, 17, 29):
        counts = np.empty((1, layout.size), dtype=np.int32)
        layout.fill(key, r, r + 1, counts)
        rows = np.repeat(np.arange(layout.size), counts[0][layout.row_of_point])
        np.testing.assert_allclose(reps[:, :, r], P.sip(s[:, rows]), rtol=1e-12)
    result = sip_matrix(ds, "crps", n_boot=100, seed=6, **{
        ("groups" if dependence.resample == "cluster" else "block"): dependence.variable},
        resample=dependence.resample,
        **({} if dependence.resample == "cluster" else {"block_length": 5}))
    low, high = percentile_interval(
        P.sip_replicates(s, 100, seed=6, layout=layout, purpose=purpose), 0.95)
    np.testing.assert_array_equal(result.sip_low.values, low)
    np.testing.assert_array_equal(result.sip_high.values, high)
    assert result.attrs["resample"] == dependence.resample
