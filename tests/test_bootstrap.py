"""The lazy, chunked, deterministic bootstrap."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from scipy import stats

import xuqcal
from xuqcal.core.intervals import wilson_interval
from xuqcal.testing import assert_results_identical

STATS = ["zms", "rce", "zm", "cc", "ence", "zmse"]


@pytest.fixture(scope="module")
def data():
    return xuqcal.synthetic.nig(1500, nu=5, seed=4)


def _run(ds, chunks, scheduler):
    bs = xuqcal.bootstrap(ds, STATS, n_boot=1200, seed=9, chunks=chunks, keep_replicates=True)
    with dask.config.set(scheduler=scheduler):
        return bs.compute()


def test_bit_identical_across_chunkings_and_schedulers(data):
    reference = _run(data, 1200, "synchronous")
    for chunks in (100, (500, 77, 623)):
        for scheduler in ("synchronous", "threads", "processes"):
            result = _run(data, chunks, scheduler)
            assert_results_identical(result, reference)


def test_bit_identical_on_distributed_cluster(data):
    distributed = pytest.importorskip("distributed")
    reference = _run(data, 400, "synchronous")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        result = xuqcal.bootstrap(data, STATS, n_boot=1200, seed=9, chunks=250,
                                  keep_replicates=True).compute()
    assert_results_identical(result, reference)


def test_different_seeds_differ(data):
    a = xuqcal.bootstrap(data, ["zms"], n_boot=200, seed=1).compute()
    b = xuqcal.bootstrap(data, ["zms"], n_boot=200, seed=2).compute()
    assert a.ci_low.item() != b.ci_low.item()


def test_bootstrap_is_lazy_until_computed(data):
    def refuse(*args, **kwargs):
        raise AssertionError("something was computed")

    with dask.config.set(scheduler=refuse):
        bs = xuqcal.bootstrap(data, STATS, n_boot=5000, seed=0)
        assert all(isinstance(bs[v].data, dask.array.Array) for v in bs.data_vars)
        with pytest.raises(AssertionError, match="computed"):
            bs.compute()
    # the graph holds one task per chunk of replicates, not one per replicate
    graph = dict(bs.ci_low.data.__dask_graph__())
    assert sum("_replicate_block" in str(k) for k in graph) == 5


def test_lazy_input_stays_lazy(data):
    lazy = data.chunk({"sample": 400})
    with dask.config.set(scheduler="synchronous"):
        bs = xuqcal.bootstrap(lazy, ["zms", "ence"], n_boot=300, seed=0)
        assert isinstance(bs.estimate.data, dask.array.Array)
        assert_results_identical(
            bs.compute(), xuqcal.bootstrap(data, ["zms", "ence"], n_boot=300, seed=0).compute()
        )


def test_result_is_labelled_and_self_describing(data):
    bs = xuqcal.bootstrap(data, ["zms", "rce"], n_boot=500, seed=3, keep_replicates=True).compute()
    assert list(bs.statistic.values) == ["zms", "rce"]
    assert bs.replicates.dims == ("statistic", "replicate")
    assert bs.replicates.sizes["replicate"] == 500
    for key in ("method", "level", "n_boot", "seed", "random_streams", "xuqcal_version"):
        assert key in bs.attrs
    reps = bs.replicates.values
    np.testing.assert_allclose(bs.bias, reps.mean(axis=1) - bs.estimate.values, rtol=1e-12)
    np.testing.assert_allclose(bs.se, reps.std(axis=1, ddof=1), rtol=1e-12)
    assert (bs.ci_low < bs.estimate).all() and (bs.estimate < bs.ci_high).all()


def test_percentile_method(data):
    bs = xuqcal.bootstrap(data, ["zms"], n_boot=999, seed=3, method="percentile",
                          keep_replicates=True).compute()
    lo, hi = np.percentile(bs.replicates.values[0], [2.5, 97.5])
    assert (bs.ci_low.item(), bs.ci_high.item()) == pytest.approx((lo, hi), rel=1e-12)


def test_student_method(data):
    bs = xuqcal.bootstrap(data, ["zm", "zms"], method="student").compute()
    z = (data.E / data.uE).values
    for i, x in enumerate((z, z**2)):
        lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        assert bs.ci_low[i].item() == pytest.approx(lo)
        assert bs.ci_high[i].item() == pytest.approx(hi)
    with pytest.raises(ValueError, match=r"means only.*rce"):
        xuqcal.bootstrap(data, ["zms", "rce"], method="student")


@pytest.mark.slow  # a study of hundreds of data sets (pytest -m slow)
def test_bca_coverage_of_zms_on_calibrated_nig():
    """BCa 95 % intervals of ZMS cover 1 in a fraction of data sets compatible with 0.95."""
    n_sets = 300
    covered = 0
    for replicate in range(n_sets):
        ds = xuqcal.synthetic.nig(5000, nu=6, seed=2024, replicate=replicate)
        bs = xuqcal.bootstrap(ds, ["zms"], n_boot=2000, seed=replicate).compute(
            scheduler="synchronous")
        covered += bool(bs.ci_low.item() <= 1.0 <= bs.ci_high.item())
    lo, hi = wilson_interval(covered, n_sets)
    assert lo <= 0.95 <= hi, (covered, lo, hi)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"statistics": ["zms", "foo"]}, "unknown statistic 'foo'"),
        ({"statistics": []}, "empty"),
        ({"n_boot": 1}, "n_boot: expected an integer >= 40"),
        ({"n_boot": 39}, r"n_boot: expected an integer >= 40 \(an interval at level 0.95 needs"),
        ({"method": "bc"}, "unknown interval method 'bc'"),
        ({"level": 95}, "level"),
        ({"seed": -3}, "seed"),
        ({"chunks": 0}, "chunks"),
        ({"chunks": (10, 10)}, "add up to n_boot=100"),
        ({"statistics": ["ence"], "n_bins": 1000}, "n_bins=1000 needs at least 2000 points"),
        ({"statistics": ["ence"], "by": "X"}, "binning variable 'X'"),
        ({"statistics": ["ence"], "by": "X", "n_bins": 1000},
         "binning variable 'X' is not in the dataset"),
    ],
)
def test_bad_arguments(data, kwargs, message):
    args = {"statistics": ["zms"], "n_boot": 100, **kwargs}
    with pytest.raises(ValueError, match=message):
        xuqcal.bootstrap(data, **args)
