"""Bootstrap intervals of the mean proper scores (issue 15, item 5): the resampling kernel of
per-point means draws the bootstrap's points, and ``proper_scores(n_boot=...)`` gives
bias, standard error and BCa or percentile intervals of CRPS and NLL."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis.probabilistic import SCORES, proper_scores
from xuqcal.core import kernels as K
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import PreparedData


def test_mean_block_draws_the_bootstrap_points():
    """The replicates of the mean of Z² are those of zms, bit for bit (same streams, same
    order of the sums)."""
    ds = xuqcal.synthetic.nig(2500, nu=6, seed=1)
    boot = xuqcal.bootstrap(ds, ["zms", "zm"], n_boot=300, seed=7,
                            keep_replicates=True).compute()
    prepared = PreparedData.from_arrays(ds.E.values, ds.uE.values, needs_bins=False)
    out = np.empty((300, 1))
    K.mean_block(stream_key(7, "bootstrap"), 0, 300, np.ascontiguousarray(prepared.z2[:, None]),
                 out)
    np.testing.assert_array_equal(out[:, 0], boot.replicates.sel(statistic="zms").values)
    # a block of replicates is the same whatever the blocks: replicate r has its own stream
    part = np.empty((100, 1))
    K.mean_block(stream_key(7, "bootstrap"), 150, 250, np.ascontiguousarray(prepared.z2[:, None]),
                 part)
    np.testing.assert_array_equal(part[:, 0], out[150:250, 0])


@pytest.fixture(scope="module")
def calibrated():
    ds = xuqcal.synthetic.nig(4000, nu=6, seed=3)
    return ds, proper_scores(ds, nu=6, n_boot=2000, seed=2)


def test_estimates_are_those_without_intervals(calibrated):
    ds, scores = calibrated
    plain = proper_scores(ds, nu=6)
    assert "score" not in plain.dims and "ci_low" not in plain
    for name in (*SCORES, "nu"):
        assert float(scores[name]) == float(plain[name]), name
    assert scores.score.values.tolist() == list(SCORES)
    assert scores.attrs["n_boot"] == 2000 and scores.attrs["method"] == "bca"


def test_intervals_surround_the_estimates_and_the_expected_crps(calibrated):
    ds, scores = calibrated
    estimate = np.array([float(scores[name]) for name in SCORES])
    assert np.all(scores.ci_low.values < estimate) and np.all(estimate < scores.ci_high.values)
    # calibrated normal errors: E[CRPS(N(0, u²), E)] = u / sqrt(pi)
    expected = float(np.mean(ds.uE.values)) / math.sqrt(math.pi)
    crps = scores.sel(score="crps_normal")
    assert float(crps.ci_low) < expected < float(crps.ci_high)
    # the interval is a few standard errors wide: ~ 2 x 1.96 se
    width = float(crps.ci_high - crps.ci_low)
    assert width == pytest.approx(2 * 1.96 * float(crps.se), rel=0.15)


def test_nll_interval_is_that_of_the_nll_statistic(calibrated):
    """The NLL per point summed in draw order gives the bootstrap of the ``nll`` statistic
    (which sums its two columns separately: equal to rounding)."""
    ds, scores = calibrated
    boot = xuqcal.bootstrap(ds, ["nll"], n_boot=2000, seed=2).compute()
    nll = scores.sel(score="nll_normal")
    for name in ("ci_low", "ci_high", "se", "bias"):
        assert float(nll[name]) == pytest.approx(float(boot[name].item()), rel=1e-9,
                                                 abs=1e-13), name


def test_percentile_method_and_lazy_and_many_sets():
    sets = [xuqcal.synthetic.nig(1500, nu=6, seed=s) for s in (4, 5)]
    stacked = xr.concat(sets, dim="model")
    eager = proper_scores(stacked, nu=6, n_boot=400, method="percentile")
    lazy = proper_scores(stacked.chunk(), nu=6, n_boot=400, method="percentile")
    assert lazy.ci_low.chunks is not None
    lazy = lazy.compute()
    for i, ds in enumerate(sets):
        one = proper_scores(ds, nu=6, n_boot=400, method="percentile")
        for name in ("ci_low", "ci_high", "se", "bias", "crps_normal"):
            np.testing.assert_array_equal(eager[name].isel(model=i).values, one[name].values)
            np.testing.assert_array_equal(lazy[name].isel(model=i).values, one[name].values)
    # percentile bounds are quantiles of the replicates: inside [min, max] of the means
    assert eager.attrs["method"] == "percentile"


def test_undefined_student_scores_have_no_interval():
    z = np.random.default_rng(0).standard_cauchy(3000)
    ds = xuqcal.from_arrays(z, np.ones(3000))
    with pytest.warns(xuqcal.UndefinedStatisticWarning, match="crps_student and nll_student"):
        scores = proper_scores(ds, n_boot=200)
    assert np.isnan(scores.ci_low.sel(score=["crps_student", "nll_student"]).values).all()
    assert np.isfinite(scores.ci_low.sel(score=["crps_normal", "nll_normal"]).values).all()


@pytest.mark.parametrize("kwargs, message", [
    ({"n_boot": 10}, r"n_boot: expected an integer >= 40"),
    ({"n_boot": 100, "method": "student"}, r"method: "),
    ({"n_boot": 100, "seed": -1}, r"seed: expected an integer from 0 to 2\*\*64 - 1"),
    ({"n_boot": 100, "level": 1.5}, r"level"),
])
def test_bad_arguments(kwargs, message):
    ds = xuqcal.synthetic.nig(100, nu=6, seed=0)
    with pytest.raises(ValueError, match=message):
        proper_scores(ds, nu=6, **kwargs)
