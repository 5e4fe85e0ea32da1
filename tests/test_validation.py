"""Validation against predefined references (the BS scheme)."""

from __future__ import annotations

import numpy as np
import pytest

import xuqcal
from xuqcal.validation import summary_table


@pytest.fixture(scope="module")
def result():
    ds = xuqcal.synthetic.nig(4000, nu=6, seed=12, uE_scale=0.9)
    return ds, xuqcal.validate(ds, ["zms", "rce", "zm", "zv", "nll", "ence"], n_boot=2000)


def test_structure(result):
    _, v = result
    assert v.zeta.dims == ("statistic", "scheme")
    assert v.scheme.values.tolist() == ["BS"]
    for name in ("estimate", "bias", "se", "ci_low", "ci_high", "verdict", "verdict_scheme"):
        assert v[name].dims == ("statistic",)
    for name in ("reference", "u_ref", "zeta", "valid"):
        assert v[name].dims == ("statistic", "scheme")
    assert v.attrs["n_replicates"] == 2000 and v.attrs["method"] == "bca"


def test_references_and_zeta(result):
    ds, v = result
    bs = v.sel(scheme="BS")
    ref = bs.reference.to_series()
    assert ref[["zms", "rce", "zm", "zv"]].tolist() == [1.0, 0.0, 0.0, 1.0]
    uE = ds.uE.values
    assert ref["nll"] == pytest.approx(0.5 * (1 + np.mean(np.log(uE**2)) + np.log(2 * np.pi)))
    assert np.isnan(ref["ence"]) and np.isnan(bs.zeta.sel(statistic="ence"))
    want = xuqcal.zeta(v.estimate, bs.reference, v.ci_low, v.ci_high)
    np.testing.assert_allclose(bs.zeta, want)
    inside = (v.ci_low <= bs.reference) & (bs.reference <= v.ci_high)
    np.testing.assert_array_equal(bs.valid.values[:5], inside.values[:5])


def test_verdicts(result):
    _, v = result
    verdict = v.verdict.to_series()
    # uncertainties 10 % too small: ZMS ≈ 1.23 fails clearly, <Z> is still 0
    assert verdict["zms"] == "fail" and verdict["rce"] == "fail"
    assert verdict["ence"] == "no predefined reference"
    assert v.verdict_scheme.sel(statistic="zms") == "BS"


def test_summary_table(result):
    _, v = result
    lines = summary_table(v).splitlines()
    assert len(lines) == 1 + v.sizes["statistic"]
    assert lines[1].split()[0] == "zms" and lines[1].split()[-1] == "fail"


def test_result_round_trips_through_netcdf(result, tmp_path):
    _, v = result
    path = xuqcal.to_netcdf(v, tmp_path / "v.nc")
    import xarray as xr

    with xr.open_dataset(path) as back:
        back = back.load()
    np.testing.assert_array_equal(back.zeta, v.zeta)
    assert back.verdict.values.tolist() == v.verdict.values.tolist()
    assert back.valid.dtype == bool
    assert back.attrs["seed"] == 0
    with pytest.raises(FileExistsError, match="overwrite"):
        xuqcal.to_netcdf(v, path)
