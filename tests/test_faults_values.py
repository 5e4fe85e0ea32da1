"""Fault catalogue of issue 23, "Bad values accepted or crashing": counts, the precision-driven
count at a high level, many sets (extra dimensions, DataTree nodes), the chunks of
``open_dataset`` and the NaN of a predicted interval.

The contract is that of ``tests/test_faults_numeric.py``: a ``ValueError`` whose message starts
with the parameter (or variable) name and says what is wrong, before any computation for
argument errors; never a traceback, a silent wrong number or a truncated value.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis.precision import next_count
from xuqcal.core import defaults


@pytest.fixture(scope="module")
def data() -> xr.Dataset:
    return xuqcal.synthetic.nig(300, nu=6, seed=11)


def _exploding(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with Dask data whose computation raises: a check that computed the data would
    fail with this error instead of its own."""
    def boom(block):
        raise AssertionError("the data were computed")

    lazy = ds.chunk({"sample": 100})
    return lazy.assign(E=lazy.E.copy(data=da.map_blocks(boom, lazy.E.data, dtype=float)))


# ------------------------------------------------------------------------------ 1. counts


@pytest.mark.parametrize(("arguments", "message"), [
    ({"n_boot": 100, "n_mc": 2.5}, r"^n_mc: expected an integer >= 2, got 2\.5$"),
    ({"n_boot": None, "n_mc": 100}, r"^n_boot: expected an integer >= 40 \(an interval at "
                                    r"level 0\.95 needs .*\), got None$"),
    ({"n_boot": 100, "n_mc": None}, r"^n_mc: expected an integer >= 2, got None$"),
    ({"n_boot": 100.0, "n_mc": 100}, r"^n_boot: expected an integer >= 40 .*got 100\.0$"),
], ids=["n_mc=2.5", "n_boot=None", "n_mc=None", "n_boot=100.0"])
def test_counts_are_integers_before_any_computation(data, arguments, message):
    with pytest.raises(ValueError, match=message):
        xuqcal.validate(_exploding(data), ["zms", "cc"], **arguments)


def test_a_precision_too_fine_to_reach_runs_to_the_ceiling(data):
    # shortfall**2 overflowed (OverflowError) for mc_precision=1e-300: now the ceiling
    assert next_count(500, 1e300, 10_000) == 10_000
    assert next_count(500, float("inf"), 10_000) == 10_000
    assert next_count(500, 2.0, 10_000) == 2200  # unchanged below the ceiling
    small = data.isel(sample=slice(0, 100))
    result = xuqcal.validate(small, ["zms"], n_boot="auto", n_mc=100, mc_precision=1e-300)
    assert result.attrs["n_boot"] == defaults.N_BOOT
    assert result.attrs["mc_precision_reached"] > 1e-300


# ------------------------------------------------------------------ 2. auto at a high level


def test_auto_respects_the_minimum_replicates_of_the_level(data):
    with pytest.raises(ValueError, match=r"^n_boot: expected an integer >= 2000 \(an interval "
                                         r"at level 0\.999"):
        xuqcal.validate(data, ["zms"], n_boot=500, n_mc=100, level=0.999)
    auto = xuqcal.validate(data, ["zms"], n_boot="auto", n_mc=100, level=0.999)
    # it stopped at 500 replicates, its upper bound the largest one, reporting precision 0.0
    assert auto.attrs["n_boot"] >= 2000
    assert auto.attrs["mc_precision_reached"] > 0.0
    # the replicates are the first n of the fixed-count run: the same interval
    fixed = xuqcal.validate(data, ["zms"], n_boot=auto.attrs["n_boot"], n_mc=100, level=0.999)
    assert float(auto.ci_low[0]) == float(fixed.ci_low[0])
    assert float(auto.ci_high[0]) == float(fixed.ci_high[0])


# ------------------------------------------------------------------------- 3. many sets


def _sets(ds: xr.Dataset, dim: str, labels) -> xr.Dataset:
    return xr.concat([ds] * len(labels), dim=dim).assign_coords({dim: labels})


@pytest.mark.parametrize(("make", "message"), [
    (lambda d: _sets(d, "model", ["a", "a"]),
     r"^ds: the labels of the extra dimension 'model' must be unique, got 'a' 2 times$"),
    (lambda d: _sets(d, "model", ["a", "b", "b", "c", "c"]),
     r"^ds: the labels of the extra dimension 'model' must be unique, got 'b' 2 times, "
     r"'c' 2 times$"),
    (lambda d: _sets(d, "model", ["a"]).isel(model=slice(0, 0)),
     r"^ds: the extra dimension 'model' has length 0: there is no data set to analyse$"),
    (lambda d: xr.concat([d, d], dim="statistic"),
     r"^ds: the extra dimension 'statistic' has the name of a dimension of the results"),
    (lambda d: xr.concat([d, d], dim="bin"),
     r"^ds: the extra dimension 'bin' has the name of a dimension of the results"),
    (lambda d: xr.concat([d, d], dim="scheme"),
     r"^ds: the extra dimension 'scheme' has the name of a dimension of the results .*"
     r"rename it, e\.g\. ds\.rename\(\{'scheme': 'scheme_'\}\)$"),
], ids=["duplicate", "duplicates", "length 0", "statistic", "bin", "scheme"])
@pytest.mark.parametrize("analysis", ["stats", "validate"])
def test_extra_dimensions_are_checked_before_any_computation(data, make, message, analysis):
    ds = _exploding(make(data))
    call = {"stats": lambda: xuqcal.stats(ds, ["zms"]),
            "validate": lambda: xuqcal.validate(ds, ["zms"], n_boot=100, n_mc=100)}[analysis]
    with pytest.raises(ValueError, match=message):
        call()


def test_datatree_nodes_without_E_and_uE(data):
    # a leaf without E and uE (KeyError: 'sample') is refused by its path
    tree = xr.DataTree.from_dict({"/a": data, "/b": data,
                                  "/notes": xr.Dataset({"x": ("q", [1.0])})})
    with pytest.raises(ValueError, match=r"^ds: the DataTree node '/notes' holds neither E nor "
                                         r"uE; a node without children must hold a data set$"):
        xuqcal.stats(tree, ["zms"])
    # a group holding metadata and children is skipped
    grouped = xr.DataTree.from_dict({"/g": xr.Dataset({"note": ("q", [1.0])}),
                                     "/g/a": data, "/g/b": data.isel(sample=slice(0, 200))})
    result = xuqcal.stats(grouped, ["zms"])
    assert result.dataset.values.tolist() == ["/g/a", "/g/b"]
    assert float(result.sel(dataset="/g/a")[0]) == float(xuqcal.stats(data, ["zms"])[0])


# --------------------------------------------------------------------------- 4. options


@pytest.mark.parametrize(("chunks", "message"), [
    (0, r"^chunks: expected None, an integer >= 1, 'auto', or a mapping .*got 0$"),
    (-5, r"^chunks: expected None, an integer >= 1, 'auto', .*got -5$"),
    ("bad", r"^chunks: expected None, an integer >= 1, 'auto', .*got 'bad'$"),
    ((100,), r"^chunks: expected None, an integer >= 1, 'auto', .*got \(100,\)$"),
    ({"sample": 0}, r"^chunks: expected per dimension a positive integer, -1 .*got sample=0$"),
    ({"sample": "x"}, r"^chunks: expected per dimension .*got sample='x'$"),
], ids=["0", "-5", "bad", "tuple", "sample=0", "sample=x"])
def test_open_dataset_chunks(data, tmp_path, chunks, message):
    path = tmp_path / "d.nc"
    xuqcal.to_netcdf(data, path)
    with pytest.raises(ValueError, match=message):
        xuqcal.open_dataset(path, chunks=chunks)
    for good in (100, "auto", {"sample": 100}, {"sample": -1}, {"sample": "1MB"}):
        opened = xuqcal.open_dataset(path, chunks=good)
        assert np.array_equal(opened.E.values, data.E.values)


# ------------------------------------------------------------------------- 5. intervals


def _interval_sets(data: xr.Dataset, **nan) -> xr.Dataset:
    one = data.assign(lower=data.E - 1.5 * data.uE, upper=data.E + 1.5 * data.uE)
    for name in ("lower", "upper"):
        one[name].attrs["coverage_level"] = 0.9
    two = xr.concat([one, one], dim="model").assign_coords(model=["a", "b"])
    for name, row in nan.items():
        two[name][1, row] = np.nan
    return two


@pytest.mark.parametrize(("nan", "message"), [
    ({"E": 5, "uE": 5, "lower": 5},
     r"^invalid input data \(2 problems\):\n  E: 1 of 600 values are NaN where lower or upper "
     r"is not \(rows 5 at model='b'\); a point is absent only when E, lower and upper are all "
     r"NaN\n  lower: 1 of 600 values are NaN where E or upper is not \(rows 5 at model='b'\)"),
    ({"lower": 7}, r"^lower: 1 of 600 values are NaN where E or upper is not \(rows 7 at "
                   r"model='b'\)"),
    ({"E": 3, "uE": 3, "upper": 3}, r"upper: 1 of 600 values are NaN where E or lower is not"),
], ids=["E, uE, lower", "lower", "E, uE, upper"])
@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_interval_nan_contradicting_its_point_is_an_error(data, nan, message, lazy):
    ds = _interval_sets(data, **nan)
    if lazy:
        ds = ds.chunk({"sample": 100})
    with pytest.raises(ValueError, match=message):
        xuqcal.interval_coverage(ds, lower="lower", upper="upper").compute()


def test_interval_absent_points_are_still_dropped(data):
    ds = _interval_sets(data, E=5, uE=5, lower=5, upper=5)
    result = xuqcal.interval_coverage(ds, lower="lower", upper="upper")
    assert result.n.values.tolist() == [300, 299]
    assert float(result.picp.sel(model="a")) == float(
        xuqcal.interval_coverage(ds.sel(model="a"), lower="lower", upper="upper").picp)


@pytest.mark.parametrize("argv, option", [
    (["recalibrate", "--method", "conformal", "--coverage-levels", "0.683,,0.95"],
     "--coverage-levels"),
    (["cube", "build", "--statistics", "ence", "--size", "2000,,4000", "--n-bins", "10",
      "--nu", "6", "-o", "c.nc"], "--size"),
])
def test_an_empty_item_of_a_comma_list_is_refused(argv, option, capsys):
    from xuqcal.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{option}: item 2 of" in err and "is empty" in err
