"""The PIT of ensembles (issue 15, item 6): the randomised rank of the observation among the
member predictions, oriented as the parametric PIT, in ``pit``, ``pit_test`` and the plot."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis.probabilistic import pit, pit_test
from xuqcal.core.scores import pit_ensemble

matplotlib.use("Agg")


def ensemble(m: int, k: int, seed: int, spread: float = 1.0) -> xr.Dataset:
    """Members drawn from the predictive N(mu, sd²) of the observation, times ``spread``."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=m)
    sd = np.exp(rng.normal(0.0, 0.3, m))
    observed = mu + sd * rng.standard_normal(m)
    members = mu[:, None] + spread * sd[:, None] * rng.standard_normal((m, k))
    return xuqcal.from_ensemble(members, observed, axis=1)


def test_pit_is_the_rank_of_the_observation_among_the_members():
    ds = ensemble(500, 7, seed=1)
    values = pit(ds, distribution="ensemble", seed=3).pit.values
    # member errors e_i = y - x_i: the observation's rank among x_i is that of 0 among -e_i
    np.testing.assert_array_equal(values, pit_ensemble(-ds.members.values, 0.0, seed=3))
    below = (ds.members.values > 0).sum(axis=1)  # members below the observation
    assert np.all((below / 8 <= values) & (values <= (below + 1) / 8))
    # oriented as Phi(E / uE): an observation above every member has a PIT near 1
    assert np.corrcoef(values, pit(ds).pit.values)[0, 1] > 0.9


def test_calibrated_members_pass_and_overdispersed_fail():
    calibrated = pit_test(ensemble(4000, 10, seed=2), distribution="ensemble")
    assert calibrated.ks_pvalue > 0.01 and calibrated.chi2_pvalue > 0.01
    wide = pit_test(ensemble(4000, 10, seed=2, spread=2.0), distribution="ensemble")
    assert wide.ks_pvalue < 1e-10
    counts = wide["count"].values  # too wide an ensemble: a hump in the middle
    assert counts[4] + counts[5] > 2 * (counts[0] + counts[-1])
    assert wide.attrs["members"] == "members" and wide.attrs["seed"] == 0


def test_rejection_rate_of_calibrated_ensembles_is_nominal():
    rejected = [float(pit_test(ensemble(300, 5, seed=s), distribution="ensemble",
                               seed=s).ks_pvalue) < 0.05 for s in range(200)]
    # binomial(200, 0.05): 99.9 % of rates lie in [0.01, 0.105]
    assert 0.01 <= np.mean(rejected) <= 0.105


def test_lazy_and_many_sets_equal_eager():
    sets = [ensemble(400, 6, seed=s) for s in (4, 5)]
    stacked = xr.concat(sets, dim="model")
    eager = pit(stacked, distribution="ensemble")
    lazy = pit(stacked.chunk(), distribution="ensemble")
    assert lazy.pit.chunks is not None
    np.testing.assert_array_equal(eager.pit.values, lazy.pit.compute().values)
    for i, ds in enumerate(sets):
        np.testing.assert_array_equal(eager.pit.isel(model=i).values,
                                      pit(ds, distribution="ensemble").pit.values)


def test_plot_of_an_ensemble_pit():
    ds = ensemble(1000, 8, seed=6)
    ax = ds.uqcal.plot.pit(distribution="ensemble")
    assert ax.get_xlabel() and ax.get_ylabel()


@pytest.mark.parametrize("call, message", [
    (lambda ds: pit(ds.drop_vars("members"), distribution="ensemble"),
     r"members: distribution='ensemble' needs the member errors"),
    (lambda ds: pit(ds, distribution="ensemble", nu=5), r"nu: only used with "
                                                        r"distribution='student'"),
    (lambda ds: pit_test(ds, members="members"), r"members: only used with "
                                                 r"distribution='ensemble'"),
    (lambda ds: pit(ds, distribution="ensemble", seed=-2), r"seed: "),
    (lambda ds: pit(ds, distribution="ensemble", members="E"), r"members: "),
])
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call(ensemble(50, 4, seed=0))
