"""Every analysis of xuqcal.analysis is lazy on Dask-backed data, takes its variables by role
(E=, uE=) and checks the values of Dask-backed data at compute time (issue 12)."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis import binning, curves, diagnostics, features, local, running, stats
from xuqcal.analysis.validation import validate


class CountingScheduler:
    """A Dask scheduler that counts its calls and delegates to the synchronous one."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, dsk, keys, **kwargs):
        self.calls += 1
        return dask.get(dsk, keys, **kwargs)


@pytest.fixture(scope="module")
def data() -> xr.Dataset:
    ds = xuqcal.synthetic.nig(1200, nu=6, seed=5)
    return ds.assign(X=("sample", np.round(ds.uE.values, 1)))


ANALYSES = {
    "stats": lambda d, **r: stats.stats(d, ["zms", "ence"], n_bins=10, **r).to_dataset(),
    "make_bins": lambda d, **r: binning.make_bins(d, n_bins=10, **({"uE": r["uE"]} if r else {})),
    "validate": lambda d, **r: validate(d, ["zms", "ence"], n_boot=100, n_mc=100, n_bins=10,
                                        **r),
    "local": lambda d, **r: local.local(d, n_bins=10, n_boot=100, **r),
    "local_min_count": lambda d, **r: local.local(d, "zm", n_bins=50, min_count=100, **r),
    "reliability": lambda d, **r: local.reliability(d, n_bins=10, n_boot=100, **r),
    "adversarial_groups": lambda d, **r: local.adversarial_groups(d, n_groups=5, n_boot=50,
                                                                  min_count=300, **r),
    "order_sensitivity": lambda d, **r: local.order_sensitivity(
        d, by="X", n_orders=2, n_bins=10, n_boot=50, binomial_noise=True, **r),
    "confidence_curve": lambda d, **r: curves.confidence_curve(d, n_mc=50, **r),
    "ablation": lambda d, **r: curves.ablation(d, statistics=["zms", "ence"], n_boot=100,
                                               n_bins=10, **r),
    "calibration_curve": lambda d, **r: curves.calibration_curve(d, **r),
    "local_coverage": lambda d, **r: curves.local_coverage(d, n_bins=10, **r),
    "running_statistics": lambda d, **r: running.running_statistics(d, window=30, **r),
    "describe": lambda d, **r: diagnostics.describe(d, **r),
    "rank_correlation": lambda d, **r: features.rank_correlation(d, ["X"], **r).to_dataset(),
}


def _without_created(result: xr.Dataset) -> xr.Dataset:
    result = result.copy()
    result.attrs.pop("created", None)
    for name in result.variables:
        result[name].attrs.pop("created", None)
    return result


@pytest.mark.parametrize("name", ANALYSES)
def test_an_analysis_of_dask_data_computes_nothing_until_compute(data, name):
    analysis = ANALYSES[name]
    eager = analysis(data)
    scheduler = CountingScheduler()
    with dask.config.set(scheduler=scheduler):
        lazy = analysis(data.chunk({"sample": 300}))
        assert scheduler.calls == 0, f"{name} computed {scheduler.calls} times before .compute()"
        assert any(v.chunks is not None for v in lazy.data_vars.values())
        computed = lazy.compute()
    assert scheduler.calls == 1
    xr.testing.assert_identical(_without_created(eager), _without_created(computed))


@pytest.mark.parametrize("name", ANALYSES)
def test_variables_by_role(data, name):
    renamed = data.rename(E="err", uE="sigma")
    result = ANALYSES[name](renamed, E="err", uE="sigma")
    expected = ANALYSES[name](data)
    for variable in expected.data_vars:
        if variable in result.data_vars:
            np.testing.assert_array_equal(np.asarray(result[variable].values),
                                          np.asarray(expected[variable].values))


@pytest.mark.parametrize("name", [n for n in ANALYSES if n not in ("make_bins",)])
def test_bad_values_of_dask_data_raise_at_compute_time(data, name):
    bad = data.copy()
    uE = bad.uE.values.copy()
    uE[7] = np.nan if name == "rank_correlation" else -1.0  # (ranks need no positive uE)
    bad["uE"] = ("sample", uE)
    lazy = ANALYSES[name](bad.chunk({"sample": 300}))  # no error before compute
    with pytest.raises(ValueError, match="uE"):
        lazy.compute()


def test_nan_in_the_binning_variable_raises_at_compute_time(data):
    bad = data.copy()
    x = bad.X.values.copy()
    x[3] = np.nan
    bad["X"] = ("sample", x)
    lazy = local.local(bad.chunk({"sample": 300}), by="X", n_bins=10, n_boot=100)
    with pytest.raises(ValueError, match="X"):
        lazy.compute()


def test_validate_computes_the_bootstrap_and_simulation_once(data):
    scheduler = CountingScheduler()
    with dask.config.set(scheduler=scheduler):
        result = validate(data.chunk({"sample": 300}), ["zms"], n_boot=100, n_mc=100)
        result.compute()
    assert scheduler.calls == 1


def test_local_bins_are_coordinates(data):
    result = local.local(data, n_bins=10, n_boot=100)
    for name in ("bin_low", "bin_high", "bin_centre"):
        assert name in result.coords and name not in result.data_vars
    assert "count" in result.data_vars and result["count"].sum() == data.sizes["sample"]
    adversarial = local.adversarial_groups(data, n_groups=5, n_boot=50, min_count=300)
    assert adversarial["count"].values.tolist() == [600, 300]


def test_order_sensitivity_draws_from_the_counter_based_streams(data):
    a = local.order_sensitivity(data, by="X", n_orders=3, n_bins=10, n_boot=50, seed=1)
    b = local.order_sensitivity(data.chunk({"sample": 100}), by="X", n_orders=3, n_bins=10,
                                n_boot=50, seed=1).compute()
    np.testing.assert_array_equal(a.fraction_valid.values, b.fraction_valid.values)


def test_local_with_lazy_bins_of_lazy_data_computes_nothing_until_compute(data):
    lazy_data = data.chunk({"sample": 300})
    scheduler = CountingScheduler()
    with dask.config.set(scheduler=scheduler):
        bins = binning.make_bins(lazy_data, "X", n_bins=10)
        result = local.local(lazy_data, bins=bins, n_boot=100)
        assert scheduler.calls == 0
        computed = result.compute()
    expected = local.local(data, bins=binning.make_bins(data, "X", n_bins=10), n_boot=100)
    xr.testing.assert_identical(_without_created(expected), _without_created(computed))
