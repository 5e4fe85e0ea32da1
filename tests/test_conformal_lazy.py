"""Conformal fitting and coverage stay lazy on Dask-backed data and give the NumPy results."""

from __future__ import annotations

import dask
import numpy as np
import pytest

import xuqcal
from xuqcal import recalibration as rc
from xuqcal.recalibration.conformal import conformal_coverage, fit_conformal
from xuqcal.testing import assert_results_identical, count_computes


def _refuse(*args, **kwargs):
    raise AssertionError("computed at the call")


@pytest.fixture(scope="module")
def sets():
    train = xuqcal.synthetic.nig(999, nu=3, generator="t3", seed=0, uE_scale=0.7)
    test = xuqcal.synthetic.nig(3000, nu=3, generator="t3", seed=1, uE_scale=0.7)
    return train, test


def test_global_fit_is_lazy_and_equals_the_numpy_fit(sets):
    train, _ = sets
    eager = fit_conformal(train, coverage_levels=[0.683, 0.9, 0.95])
    with dask.config.set(scheduler=_refuse):
        lazy = fit_conformal(train.chunk({"sample": 200}), coverage_levels=[0.683, 0.9, 0.95])
    assert lazy.score_quantile.chunks is not None and lazy.scale.chunks is not None
    assert_results_identical(lazy.compute(), eager)
    # fit(..., "conformal") is the same function
    with dask.config.set(scheduler=_refuse):
        via_fit = rc.fit(train.chunk({"sample": 200}), "conformal")
    assert_results_identical(via_fit.compute(), rc.fit(train, "conformal"))


def test_coverage_is_lazy_and_equals_the_numpy_coverage(sets):
    train, test = sets
    new = rc.apply(fit_conformal(train), test)
    eager = conformal_coverage(new, n_bins=12, tol=0.01)
    with dask.config.set(scheduler=_refuse):
        lazy = conformal_coverage(new.chunk({"sample": 400}), n_bins=12, tol=0.01)
    assert all(lazy[v].chunks is not None for v in ("picp", "bin_picp", "fraction_valid"))
    assert lazy.bin_low.chunks is not None  # the bins of the data, computed with the result
    assert_results_identical(lazy.compute(), eager)


def test_mondrian_fit_and_group_coverage_read_only_their_bins_at_the_call(sets):
    train, test = sets
    eager = fit_conformal(train, by="uE", n_bins=5)
    with count_computes() as computes:
        lazy = fit_conformal(train.chunk({"sample": 200}), by="uE", n_bins=5)
    assert computes.count == 1 and lazy.score_quantile.chunks is not None  # the limits of uE
    assert_results_identical(lazy.compute(), eager)
    new = rc.apply(eager, test)
    eager_cov = conformal_coverage(new, by="recalibration_bin", binning="groups")
    with count_computes() as computes:
        lazy_cov = conformal_coverage(new.chunk({"sample": 400}), by="recalibration_bin",
                                      binning="groups")
    assert computes.count == 1 and lazy_cov.picp.chunks is not None  # the labels
    assert_results_identical(lazy_cov.compute(), eager_cov)


def test_lazy_value_errors_come_when_computed(sets):
    train, test = sets
    zeros = train.assign(E=train.E * 0)
    with pytest.raises(ValueError, match="E: the conformal quantile at the first level"):
        fit_conformal(zeros)
    lazy = fit_conformal(zeros.chunk({"sample": 200}))
    with pytest.raises(ValueError, match="E: the conformal quantile at the first level"):
        lazy.compute()
    new = rc.apply(fit_conformal(train), test)
    broken = new.conformal_half_width.copy()
    broken[4, 0] = np.nan
    lazy_cov = conformal_coverage(new.assign(conformal_half_width=broken).chunk(), n_bins=5)
    with pytest.raises(ValueError, match="half_width: 1 of 6000 half-widths are negative"):
        lazy_cov.compute()
