"""The interval-score bootstrap of interval_coverage resamples the points of the data
bootstrap: replicate r of the mean width and of the mean interval score is computed on the
resample of replicate r of xuqcal.bootstrap (and of proper_scores)."""

from __future__ import annotations

import numpy as np
import xarray as xr

import xuqcal
from xuqcal.analysis.coverage import interval_coverage


def _z2_interval_set(m: int, seed: int) -> xr.Dataset:
    """Data whose interval ``[0, Z²]`` has the width ``Z²``: the mean width is ``zms``."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, m)
    e = u * rng.standard_normal(m)
    return xuqcal.from_arrays(e, u, lower=np.zeros(m), upper=(e / u) ** 2,
                              coverage_level=0.9)


def test_mean_width_replicates_are_those_of_zms():
    # the mean of Z² over a resample is zms of that resample: with the same resamples, the
    # percentile intervals and standard errors are the same numbers (the replicates are
    # summed in the same draw order, kernels.mean_block and the bootstrap kernel)
    ds = _z2_interval_set(500, 5)
    cov = interval_coverage(ds, n_boot=400, method="percentile", seed=3)
    zms = xuqcal.bootstrap(ds, ["zms"], n_boot=400, method="percentile", seed=3).compute()
    width = cov.sel(score="mean_width")
    for ours, theirs in (("score_ci_low", "ci_low"), ("score_ci_high", "ci_high"),
                         ("score_se", "se")):
        assert float(width[ours]) == float(zms[theirs][0]), ours


def test_each_slice_is_paired_with_its_own_bootstrap():
    sets = [_z2_interval_set(400, s) for s in (1, 2)]
    both = xr.concat(sets, dim="model").assign_coords(model=["a", "b"])
    cov = interval_coverage(both, n_boot=300, method="percentile", seed=0)
    for label, one in zip(("a", "b"), sets, strict=True):
        zms = xuqcal.bootstrap(one, ["zms"], n_boot=300, method="percentile", seed=0).compute()
        width = cov.sel(model=label, score="mean_width")
        assert float(width.score_ci_low) == float(zms.ci_low[0])
        assert float(width.score_ci_high) == float(zms.ci_high[0])


def test_data_without_uE_take_the_points_in_their_order():
    # without uE there is no data bootstrap to pair with: the points in their own order, the
    # same as data whose uE is already in increasing order
    rng = np.random.default_rng(8)
    m = 300
    e = rng.standard_normal(m)
    lower, upper = -rng.uniform(0.5, 2.0, m), rng.uniform(0.5, 2.0, m)
    bare = xuqcal.from_arrays(e, lower=lower, upper=upper, coverage_level=0.8)
    with_sorted_uE = xuqcal.from_arrays(e, np.linspace(0.5, 2.0, m), lower=lower, upper=upper,
                                        coverage_level=0.8)
    a = interval_coverage(bare, n_boot=200, seed=1)
    b = interval_coverage(with_sorted_uE, n_boot=200, seed=1)
    for name in ("score_bias", "score_se", "score_ci_low", "score_ci_high"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
