"""One default (issue 26, item 1).

:func:`xuqcal.validate` and the accessor's ``validate`` default to the precision-driven counts
``n_boot="auto"``, ``n_mc="auto"`` (``defaults.N_BOOT_VALIDATION``,
``defaults.N_MC_VALIDATION``), as the CLI, the report and the summary do: the same data and
seed give the same numbers from the API and from ``xuqcal validate``. Explicit counts still give
the fixed-count result (lazy on Dask-backed data), with which the published tables are
reproduced. About 5 s.
"""

from __future__ import annotations

import inspect

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.cli import main
from xuqcal.core import defaults

SEED = 3
STATISTICS = ["zms", "ence"]
#: One generator, to keep the simulated references small.
OPTIONS = {"generators": "normal", "seed": SEED}
#: The arrays compared between results.
NUMBERS = ("estimate", "bias", "se", "ci_low", "ci_high", "sim_mean", "sim_q025", "sim_q975",
           "reference", "u_ref", "zeta")


@pytest.fixture(scope="module")
def data():
    # Random streams version 2: on the set of seed 2 the ENCE estimate now lies outside its own
    # interval and "auto" runs to the ceilings (10 000, 5 000) without reaching its precision
    # (0.097); over seeds 0-39 about half the sets stop below both ceilings. Seed 8 stops at
    # 750 and 750 replicates, far below them, with the precision reached (0.021 <= 0.025);
    # the test asserts this premise before comparing the results.
    return xuqcal.synthetic.nig(400, nu=6, seed=8)


@pytest.fixture(scope="module")
def default(data):
    return xuqcal.validate(data, STATISTICS, **OPTIONS)


def _without_timestamp(result: xr.Dataset) -> xr.Dataset:
    result = result.copy()
    result.attrs.pop("created", None)
    return result


def test_the_default_counts_are_auto_from_one_place():
    assert defaults.N_BOOT_VALIDATION == "auto" and defaults.N_MC_VALIDATION == "auto"
    for function in (xuqcal.validate, xuqcal.UQCalAccessor.validate):
        parameters = inspect.signature(function).parameters
        assert parameters["n_boot"].default == defaults.N_BOOT_VALIDATION
        assert parameters["n_mc"].default == defaults.N_MC_VALIDATION
        assert parameters["mc_precision"].default == defaults.MC_PRECISION
    # the ceilings, and the fixed counts of the published tables, are unchanged
    assert defaults.N_BOOT == defaults.N_MC == 10_000


def test_the_default_is_auto_bit_for_bit(data, default):
    assert default.attrs["n_boot_requested"] == "auto"
    assert default.attrs["n_mc_requested"] == "auto"
    assert default.attrs["mc_precision"] == defaults.MC_PRECISION
    assert default.attrs["precision_rule"]
    # far fewer replicates than the ceiling on a calibrated set: the counts were decided by the
    # precision reached, not by the ceilings (the premise of the comparison below)
    assert default.attrs["n_boot"] < defaults.N_BOOT and default.attrs["n_mc"] < defaults.N_MC
    assert default.attrs["mc_precision_reached"] <= default.attrs["mc_precision"]
    asked = xuqcal.validate(data, STATISTICS, n_boot="auto", n_mc="auto", **OPTIONS)
    xr.testing.assert_identical(_without_timestamp(default), _without_timestamp(asked))


def test_the_accessor_agrees(data, default):
    through = data.uqcal.validate(STATISTICS, **OPTIONS)
    xr.testing.assert_identical(_without_timestamp(through), _without_timestamp(default))


def test_explicit_counts_give_the_fixed_count_result(data):
    fixed = xuqcal.validate(data, STATISTICS, n_boot=300, n_mc=200, **OPTIONS)
    assert (fixed.attrs["n_boot"], fixed.attrs["n_mc"]) == (300, 200)
    for name in ("n_boot_requested", "n_mc_requested", "precision_rule",
                 "mc_precision_reached"):
        assert name not in fixed.attrs, name
    # the bootstrap of the fixed count itself
    alone = xuqcal.bootstrap(data, STATISTICS, n_boot=300, method="bca", seed=SEED).compute()
    for name in ("estimate", "ci_low", "ci_high"):
        np.testing.assert_array_equal(fixed[name].values, alone[name].values)
    # the published tables' counts (10 000 each) are still asked for explicitly
    published = xuqcal.validate(data, ["zms"], n_boot=defaults.N_BOOT, n_mc=defaults.N_MC,
                                seed=SEED)
    assert published.attrs["n_boot"] == defaults.N_BOOT
    assert "n_boot_requested" not in published.attrs


def test_an_auto_run_is_the_fixed_run_it_stopped_at(data):
    auto = xuqcal.validate(data, ["zms"], seed=SEED)
    fixed = xuqcal.validate(data, ["zms"], n_boot=auto.attrs["n_boot"], seed=SEED)
    for name in ("estimate", "bias", "se", "ci_low", "ci_high", "zeta", "verdict"):
        np.testing.assert_array_equal(auto[name].values, fixed[name].values)


def test_dask_backed_data_lazy_only_with_explicit_counts(data, default):
    lazy_data = data.chunk()
    computed = xuqcal.validate(lazy_data, STATISTICS, **OPTIONS)
    assert computed.estimate.chunks is None  # "auto" computes at the call
    xr.testing.assert_identical(_without_timestamp(computed), _without_timestamp(default))
    lazy = xuqcal.validate(lazy_data, STATISTICS, n_boot=300, n_mc=200, **OPTIONS)
    assert lazy.estimate.chunks is not None
    eager = xuqcal.validate(data, STATISTICS, n_boot=300, n_mc=200, **OPTIONS)
    xr.testing.assert_identical(_without_timestamp(lazy.compute()), _without_timestamp(eager))


def _exploding(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with Dask data whose computation raises."""
    def boom(block):
        raise AssertionError("the data were computed")

    lazy = ds.chunk({"sample": 100})
    return lazy.assign(E=lazy.E.copy(data=da.map_blocks(boom, lazy.E.data, dtype=float)))


@pytest.mark.parametrize(("arguments", "message"), [
    ({"seed": 1.0}, r"^seed: "),
    ({"level": float("nan")}, r"^level: "),
    ({"simulated_scheme": "Sim3"}, r"^simulated_scheme: "),
    ({"n_boot": "fast"}, r"^n_boot: expected a number of replicates or 'auto'"),
    ({"mc_precision": 0}, r"^mc_precision: "),
], ids=["seed", "level", "simulated_scheme", "n_boot", "mc_precision"])
def test_bad_arguments_are_refused_before_an_auto_run_loads_the_data(data, arguments, message):
    """The default counts compute Dask-backed data at the call: the arguments are checked
    first, so that a bad one is refused without reading the data (as with fixed counts)."""
    with pytest.raises(ValueError, match=message):
        xuqcal.validate(_exploding(data), STATISTICS, **arguments)
    with pytest.raises(ValueError, match=message):
        _exploding(data).uqcal.validate(STATISTICS, **arguments)


@pytest.mark.parametrize("counts", [[], ["--n-boot", "300", "--n-mc", "200"]],
                         ids=["default", "explicit"])
def test_the_cli_and_the_api_give_the_same_numbers(data, default, tmp_path, counts):
    path = tmp_path / "data.nc"
    xuqcal.to_netcdf(data, path)
    out = tmp_path / "validation.nc"
    assert main(["validate", str(path), "--statistics", ",".join(STATISTICS), "--generators",
                 "normal", "--seed", str(SEED), *counts, "--no-progress", "-o", str(out)]) == 0
    api = default if not counts else xuqcal.validate(data, STATISTICS, n_boot=300, n_mc=200,
                                                     **OPTIONS)
    with xr.open_dataset(out) as cli:
        cli = cli.load()
    for name in ("n_boot", "n_mc", "n_bins"):
        assert cli.attrs[name] == api.attrs[name], name
    assert cli.attrs.get("n_boot_requested") == api.attrs.get("n_boot_requested")
    for name in NUMBERS:
        np.testing.assert_array_equal(cli[name].values, api[name].values, err_msg=name)
    np.testing.assert_array_equal(cli.verdict.values.astype(str), api.verdict.values.astype(str))
