"""Issue 14: only the work that the answer needs (no simulation for statistics with a
predefined reference) and precision-driven Monte Carlo (``n_boot="auto"``, ``n_mc="auto"``)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis import simulation
from xuqcal.analysis.validation import summary_table

PREDEFINED = ["zms", "rce", "zm", "zv", "nll"]
SIM_VARIABLES = ["sim_mean", "sim_se", "sim_q025", "sim_q975", "zeta", "reference", "u_ref",
                 "valid"]


@pytest.fixture(scope="module")
def nig():
    return xuqcal.synthetic.nig(1500, nu=6, seed=11)


def _forbid_simulation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a synthetic error set was simulated")
    monkeypatch.setattr(simulation, "_simulation_block", refuse)


@pytest.mark.parametrize("lazy", [False, True])
def test_no_simulation_when_every_statistic_has_a_predefined_reference(nig, monkeypatch, lazy):
    _forbid_simulation(monkeypatch)
    data = nig.chunk() if lazy else nig
    result = xuqcal.validate(data, PREDEFINED, n_boot=200, n_mc=100).compute()
    assert result.attrs["n_mc"] == 0 and result.attrs["simulated_statistics"] == ""
    assert np.isnan(result.sim_mean.values).all()
    assert (result.verdict_scheme.values == "BS").all()
    # the printed table has no Sim columns when nothing was simulated
    assert "SimN" not in summary_table(result)
    # and the patch is effective: a statistic without a predefined reference needs simulation
    with pytest.raises(AssertionError, match="simulated"):
        xuqcal.validate(data, ["zms", "cc"], n_boot=200, n_mc=100).compute()


def test_only_statistics_without_a_predefined_reference_are_simulated(nig):
    needed = xuqcal.validate(nig, n_boot=200, n_mc=150, seed=4)
    everything = xuqcal.validate(nig, n_boot=200, n_mc=150, seed=4, all_schemes=True)
    assert needed.attrs["simulated_statistics"] == "cc, ence, zmse"
    assert everything.attrs["simulated_statistics"] == ", ".join(needed.statistic.values)
    # the simulated statistics are bit-identical whichever others are simulated with them
    simulated = ["cc", "ence", "zmse"]
    xr.testing.assert_identical(needed[SIM_VARIABLES].sel(statistic=simulated).drop_attrs(),
                                everything[SIM_VARIABLES].sel(statistic=simulated).drop_attrs())
    # the statistics with a predefined reference: NaN Sim columns, BS identical, same verdicts
    predefined = needed.sel(statistic=PREDEFINED)
    assert np.isnan(predefined.zeta.sel(scheme=["SimN", "SimT", "Sim2N", "Sim2T"])).all()
    assert np.isfinite(everything.zeta.sel(statistic=PREDEFINED, scheme="SimN")).all()
    xr.testing.assert_identical(needed.drop_vars(SIM_VARIABLES).drop_attrs(),
                                everything.drop_vars(SIM_VARIABLES).drop_attrs())
