"""validate(resample=...): the dependent bootstrap in the whole validation (issue 25)."""

from __future__ import annotations

import warnings

import dask
import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis import dependent as D
from xuqcal.core.intervals import bca_interval
from xuqcal.core.random import stream_key

STATS = ["zms", "rce", "cc", "ence"]


def grouped(n_groups: int = 60, size: int = 15, icc: float = 0.3, seed: int = 0
            ) -> xr.Dataset:
    """Calibrated data whose z-scores share a random effect within each group."""
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(n_groups), size)
    z = (np.sqrt(icc) * rng.normal(size=n_groups)[group]
         + np.sqrt(1.0 - icc) * rng.normal(size=group.size))
    u = np.exp(0.3 * rng.normal(size=group.size))
    return xr.Dataset({"E": ("sample", z * u), "uE": ("sample", u),
                       "structure": ("sample", group),
                       "time": ("sample", rng.permutation(group.size).astype(float))})


CLUSTER = {"resample": "cluster", "groups": "structure"}


def test_the_bootstrap_of_validate_is_that_of_bootstrap():
    ds = grouped()
    v = xuqcal.validate(ds, STATS, n_boot=300, n_mc=200, seed=4, **CLUSTER)
    b = xuqcal.bootstrap(ds, STATS, n_boot=300, seed=4, **CLUSTER).compute()
    for name in ("estimate", "bias", "se", "ci_low", "ci_high"):
        np.testing.assert_array_equal(v[name].values, b[name].values, err_msg=name)
    assert v.attrs["resample"] == "cluster" and v.attrs["groups"] == "structure"
    assert v.attrs["jackknife"] == "delete-one-group"


def test_a_block_length_auto_is_resolved_once_and_recorded():
    ds = grouped()
    options = {"resample": "circular", "block": "time", "block_length": "auto"}
    v = xuqcal.validate(ds, ["zms"], n_boot=200, n_mc=100, **options)
    b = xuqcal.bootstrap(ds, ["zms"], n_boot=200, **options).compute()
    assert v.attrs["block_length"] == b.attrs["block_length"] >= 1
    assert v.attrs["block_length_rule"].startswith("Politis-White")
    np.testing.assert_array_equal(v.ci_low.values, b.ci_low.values)


def test_precision_driven_counts_are_prefixes_of_the_fixed_count_runs():
    ds = grouped()
    auto = xuqcal.validate(ds, ["zms", "cc"], n_boot="auto", n_mc=200, **CLUSTER)
    counts = dict(item.split(": ") for item in
                  auto.attrs.get("n_boot_per_statistic",
                                 f"zms: {auto.attrs['n_boot']}, cc: {auto.attrs['n_boot']}")
                  .split(", "))
    for key, count in counts.items():
        fixed = xuqcal.validate(ds, [key], n_boot=int(count), n_mc=200, **CLUSTER)
        for name in ("ci_low", "ci_high", "se"):
            assert auto[name].sel(statistic=key).item() == fixed[name].sel(
                statistic=key).item(), (key, name)


def test_the_cluster_interval_is_wider_on_grouped_data():
    ds = grouped(n_groups=100, icc=0.6)
    iid = xuqcal.validate(ds, ["zms", "picp95"], n_boot=400, n_mc=200)
    cluster = xuqcal.validate(ds, ["zms", "picp95"], n_boot=400, n_mc=200, **CLUSTER)
    width = (cluster.ci_high - cluster.ci_low) / (iid.ci_high - iid.ci_low)
    # Z² of two points of a group correlate by ICC(Z)² = 0.36: design effect
    # 1 + (15 - 1) 0.36 ~ 6, an interval ~2.4 times wider (2.3-2.5 on three seeds)
    assert float(width.sel(statistic="zms")) > 1.8
    assert float(width.sel(statistic="picp95")) > 1.5
    assert "resample" not in iid.attrs


def test_coverage_statistics_get_the_dependent_bootstrap_of_their_indicator():
    ds = grouped()
    v = xuqcal.validate(ds, ["zms", "picp95"], n_boot=300, n_mc=100, seed=2, **CLUSTER)
    z = ds.E.values / ds.uE.values
    k = float(v.coverage_factor.sel(statistic="picp95"))
    indicator = (np.abs(z) <= k).astype(float)[:, None]
    layout = D.row_layout(ds.structure.values, D.Dependence("cluster", "structure"))
    replicates = D.mean_replicates(layout, indicator, stream_key(2, "bootstrap-cluster"), 0,
                                   300).T
    low, high = bca_interval(np.ascontiguousarray(replicates), indicator.mean(axis=0),
                             np.ascontiguousarray(D.mean_jackknife(layout, indicator)), 0.95)
    assert v.ci_low.sel(statistic="picp95").item() == low[0]
    assert v.ci_high.sel(statistic="picp95").item() == high[0]
    assert v.estimate.sel(statistic="picp95").item() == indicator.mean()


def test_a_count_weighted_mean_replicate_is_the_mean_of_the_drawn_groups():
    ds = grouped(n_groups=20, size=5)
    layout = D.row_layout(ds.structure.values, D.Dependence("cluster", "structure"))
    values = np.stack([ds.E.values, ds.uE.values], axis=1)
    key = stream_key(9, "bootstrap-cluster")
    got = D.mean_replicates(layout, values, key, 3, 6)
    for r in range(3, 6):
        counts = np.empty((1, layout.size), dtype=np.int32)
        layout.fill(key, r, r + 1, counts)
        rows = np.arange(layout.size).repeat(counts[0])
        np.testing.assert_allclose(got[r - 3], values[rows].mean(axis=0), rtol=1e-13)


def test_sim2_verdicts_say_that_they_simulate_independent_errors():
    ds = grouped()
    v = xuqcal.validate(ds, ["zms", "ence"], n_boot=200, n_mc=200, known_generator="normal",
                        **CLUSTER)
    note = str(v.verdict_note.sel(statistic="ence").values)
    assert str(v.verdict_scheme.sel(statistic="ence").values).startswith("Sim2")
    assert "independent errors" in note and "resample='cluster'" in note
    iid = xuqcal.validate(ds, ["zms", "ence"], n_boot=200, n_mc=200, known_generator="normal")
    assert "independent errors" not in str(iid.verdict_note.sel(statistic="ence").values)


def test_lazy_chunked_and_eager_give_the_same_validation():
    ds = grouped()
    eager = xuqcal.validate(ds, [*STATS, "picp95"], n_boot=200, n_mc=100, **CLUSTER)
    with dask.config.set(scheduler="synchronous"):
        lazy = xuqcal.validate(ds.chunk(sample=250), [*STATS, "picp95"], n_boot=200,
                               n_mc=100, chunks=64, **CLUSTER)
        assert lazy.ci_low.chunks is not None
        lazy = lazy.compute()
    for name in ("estimate", "ci_low", "ci_high", "zeta"):
        np.testing.assert_array_equal(eager[name].values, lazy[name].values, err_msg=name)


def test_every_slice_of_an_extra_dimension_is_the_slice_alone():
    sets = [grouped(seed=s) for s in (1, 2)]
    both = xr.concat(sets, dim="model").assign_coords(model=["a", "b"])
    both["structure"] = sets[0].structure  # over sample alone, shared by the models
    both["time"] = sets[0].time
    v = xuqcal.validate(both, ["zms", "rce"], n_boot=200, n_mc=100, **CLUSTER)
    for i, one in enumerate(sets):
        alone = xuqcal.validate(one, ["zms", "rce"], n_boot=200, n_mc=100, **CLUSTER)
        np.testing.assert_array_equal(v.ci_low.isel(model=i).values, alone.ci_low.values)


@pytest.mark.parametrize(("options", "message"), [
    ({"resample": "cluster"}, "groups: resample='cluster' resamples whole groups"),
    ({"resample": "cluster", "groups": "nope"}, "groups: no variable 'nope'"),
    ({"resample": "circular", "block": "time"}, "block_length: resample='circular'"),
    ({"groups": "structure"}, "groups: only used with a dependent resample"),
    ({"resample": "bogus"}, "resample"),
])
def test_bad_dependence_arguments_are_refused_before_any_work(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        xuqcal.validate(grouped(), ["zms"], n_boot=200, n_mc=100, **options)


def test_an_iid_analysis_of_dependent_data_warns_and_names_the_resample():
    ds = grouped(n_groups=100, icc=0.5)
    for analysis in (xuqcal.validate, xuqcal.bootstrap):
        with pytest.warns(xuqcal.DependenceWarning,
                          match=r"along 'structure'.*resample='cluster', groups='structure'"):
            analysis(ds, ["zms"], n_boot=200, **({"n_mc": 100}
                                                  if analysis is xuqcal.validate else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", xuqcal.DependenceWarning)
        xuqcal.validate(ds, ["zms"], n_boot=200, n_mc=100, **CLUSTER)
        with xuqcal.set_options(dependence_check=False):
            xuqcal.validate(ds, ["zms"], n_boot=200, n_mc=100)


@pytest.mark.parametrize("run", [
    lambda ds, **kw: xuqcal.local(ds, "zms", n_boot=200, **kw),
    lambda ds, **kw: xuqcal.reliability(ds, n_boot=200, **kw),
    lambda ds, **kw: xuqcal.proper_scores(ds, n_boot=200, **kw),
    lambda ds, **kw: xuqcal.compare(
        xr.concat([ds, ds.assign(uE=ds.uE * 1.1)], dim="model").assign_coords(
            model=["a", "b"]).assign(structure=ds.structure), ["zms"], n_boot=200, **kw),
], ids=["local", "reliability", "proper_scores", "compare"])
def test_every_iid_analysis_warns_on_dependent_points(run):
    ds = grouped(n_groups=100, icc=0.5)
    with pytest.warns(xuqcal.DependenceWarning, match="resample='cluster', groups='structure'"):
        run(ds)
    with warnings.catch_warnings():
        warnings.simplefilter("error", xuqcal.DependenceWarning)
        run(ds, **CLUSTER)
