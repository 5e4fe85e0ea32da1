"""Several data sets at once (issue 13, items 6 and 8): ``xuqcal.stack_datasets``, the tables
of results with extra dimensions, and the command line (``validate``/``report`` on several
files, ``--names``, ``--features``, Zarr stores, ``recalibrate --features/--by/--test-E``,
``python -m xuqcal``).

Every test runs the real, broadcasting ``xuqcal.validate`` (``xuqcal/analysis/slices.py``);
the tests named ``test_core_*`` also compare its slices with the single-set calls.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xuqcal
from xuqcal.analysis.tables import (
    slice_blocks,
    slice_dims,
    slice_size,
    slice_title,
    slices_summary,
    slices_table,
)
from xuqcal.cli import commands as cli
from xuqcal.cli import inputs as cli_inputs
from xuqcal.cli import main
from xuqcal.cli import recalibrate as cli_recalibrate

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--n-boot", "200", "--n-mc", "60", "--statistics", "zms,rce,ence", "--no-progress"]
OPTIONS = dict(n_boot=200, n_mc=60)
STATISTICS = ["zms", "rce", "ence"]
def _frame(m, seed, scale=1.0):
    ds = xuqcal.synthetic.nig(m, nu=6, seed=seed, uE_scale=scale)
    rng = np.random.default_rng(seed)
    y = rng.normal(size=m)
    return pd.DataFrame({"y": y, "y_pred": y - ds.E.values, "var": ds.uE.values**2,
                         "flag": rng.integers(0, 2, m)})


@pytest.fixture
def three(tmp_path):
    """Three CSV files of 400, 300 and 250 rows; b.csv has one row with var = 0 (row 7)."""
    paths = {}
    for name, m, seed in (("a", 400, 1), ("b", 300, 2), ("c", 250, 3)):
        frame = _frame(m, seed, scale=0.8 if name == "c" else 1.0)
        if name == "b":
            frame.loc[7, "var"] = 0.0
        paths[name] = tmp_path / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    return paths


COLUMNS = ["--E", "y - y_pred", "--uE", "sqrt(var)"]


def _read(path, where=None, **kwargs):
    return xuqcal.read_csv(path, E="y - y_pred", uE="sqrt(var)", where=where, **kwargs)


def _one_line(capsys, status):
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --------------------------------------------------------------------------------------------
# xuqcal.stack_datasets
# --------------------------------------------------------------------------------------------


def test_stack_datasets_pads_keeps_rows_roles_and_sources(three):
    a, b = _read(three["a"]), _read(three["b"], where="uE > 0")
    b = b.assign(flag=b.uE > 1.0)  # a boolean feature, padded: float with NaN
    a = a.assign(flag=a.uE > 1.0)
    stacked = xuqcal.stack_datasets({"a": a.rename(E="err"), "b": b.rename(E="err")})
    assert xuqcal.io.stack_datasets is xuqcal.stack_datasets
    assert stacked["err"].dims == ("dataset", "sample") and stacked.sizes["sample"] == 400
    assert stacked["dataset"].values.tolist() == ["a", "b"]
    assert stacked["dataset"].dtype.kind == "U"
    np.testing.assert_array_equal(stacked["sample"].values, np.arange(400))
    assert xuqcal.roles(stacked) == ("err", "uE")  # the roles survive the stacking
    one = stacked.sel(dataset="b")
    m = b.sizes["sample"]  # 299: row 7 was dropped by where
    assert m == 299
    np.testing.assert_array_equal(one["err"].values[:m], b["E"].values)
    np.testing.assert_array_equal(one["uE"].values[:m], b["uE"].values)
    assert np.isnan(one["err"].values[m:]).all() and np.isnan(one["uE"].values[m:]).all()
    assert one["row"].values[6:8].tolist() == [6, 8]  # the original row numbers
    assert (one["row"].values[m:] == -1).all()
    assert stacked["row"].dims == ("dataset", "sample") and "row" not in stacked.data_vars
    assert stacked["flag"].dtype == np.float64 and np.isnan(one["flag"].values[m:]).all()
    np.testing.assert_array_equal(one["flag"].values[:m], b["flag"].values.astype(float))
    assert stacked["source"].values.tolist() == [str(three["a"]), str(three["b"])]


def test_stack_datasets_of_equal_lengths_keeps_dtypes_and_dask_stays_lazy(three):
    from xuqcal.testing import count_computes

    a, c = _read(three["a"]), _read(three["c"])
    b = a.copy(deep=True)
    stacked = xuqcal.stack_datasets({"x": a.assign(flag=a.uE > 1),
                                     "y": b.assign(flag=b.uE > 1)})
    assert stacked["flag"].dtype == bool and (stacked["row"].values >= 0).all()
    with count_computes() as counter:
        lazy = xuqcal.stack_datasets({"x": a.chunk(100), "y": c.chunk(100)})
    assert counter.count == 0
    assert type(lazy["E"].data).__module__.startswith("dask")
    eager = xuqcal.stack_datasets({"x": a, "y": c})
    xr.testing.assert_identical(lazy.compute(), eager)


def test_stack_datasets_refuses_what_it_cannot_stack(three):
    a, c = _read(three["a"]), _read(three["c"])
    cases = [
        ({}, "no data set to stack"),
        ({"a": a, "c": c.rename(E="err")}, "'c' has E='err', uE='uE'"),
        ({"a": a.assign(X=a.E), "c": c}, "'c' has no X"),
        ({"a": a, "": c}, "each set needs a name"),
        ({"a": a, "c": c.expand_dims(dataset=["z"])}, "already has a dimension or variable"),
        ({"a": a, "c": c.assign_coords(row=("sample", np.arange(250)))}, "variable 'row'"),
        ({"a": a, "c": c.assign(uE=c.uE.where(c.sample != 5, -1.0))},
         "set 'c': uE: 1 of 250 values are not positive (rows 5)"),
    ]
    for sets, expected in cases:
        with pytest.raises(ValueError, match=None) as caught:
            xuqcal.stack_datasets(sets)
        assert expected in str(caught.value), str(caught.value)
        assert str(caught.value).startswith("datasets: ")
    with pytest.raises(TypeError, match=r"datasets: set 'c': expected an xarray\.Dataset"):
        xuqcal.stack_datasets({"a": a, "c": c.E})
    with pytest.raises(ValueError, match=r"^dim: the sets are stacked along a new dimension"):
        xuqcal.stack_datasets({"a": a}, dim="sample")


def test_stack_datasets_of_the_shared_sets(load_set):
    """Two literature sets (PAL2022 diffusion and perovskite, RF, filtered): each slice, without
    its padding, is the set itself, rows included."""
    sets = {"diffusion": load_set(1), "perovskite": load_set(2)}
    stacked = xuqcal.stack_datasets(sets)
    assert stacked.sizes["sample"] == max(ds.sizes["sample"] for ds in sets.values())
    for name, ds in sets.items():
        one = stacked.sel(dataset=name)
        present = one["row"].values >= 0
        assert present.sum() == ds.sizes["sample"]
        np.testing.assert_array_equal(one["row"].values[present], ds["sample"].values)
        np.testing.assert_array_equal(one["E"].values[present], ds["E"].values)
        np.testing.assert_array_equal(one["uE"].values[present], ds["uE"].values)
        assert np.isnan(one["E"].values[~present]).all()


# --------------------------------------------------------------------------------------------
# Tables of results with extra dimensions
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_results():
    sets = {"a": xuqcal.synthetic.nig(300, nu=6, seed=1),
            "b": xuqcal.synthetic.nig(200, nu=6, seed=2, uE_scale=0.7)}
    singles = {name: xuqcal.validate(ds, STATISTICS, **OPTIONS) for name, ds in sets.items()}
    stacked = xuqcal.validate(xuqcal.stack_datasets(sets), STATISTICS, **OPTIONS)
    return singles, stacked


def test_slice_blocks_give_each_sets_result(two_results):
    singles, stacked = two_results
    assert slice_dims(stacked) == ["dataset"]
    blocks = slice_blocks(stacked)
    assert [labels for labels, _ in blocks] == [{"dataset": "a"}, {"dataset": "b"}]
    for labels, block in blocks:
        single = singles[labels["dataset"]]
        for name in ("estimate", "ci_low", "ci_high", "zeta", "verdict", "verdict_scheme"):
            np.testing.assert_array_equal(block[name].values, single[name].values)
        assert block["zeta"].dims == ("statistic", "scheme")
    assert [slice_title(*block) for block in blocks] == ["dataset = a (M = 300)",
                                                         "dataset = b (M = 200)"]
    one = singles["a"]
    assert slice_blocks(one)[0][0] == {} and len(slice_blocks(one)) == 1
    assert slice_size(one) == 300  # the attribute of a one-set result
    assert slice_title({}, one) == "all data (M = 300)"


def test_slices_summary_one_row_per_slice_and_statistic(two_results):
    singles, stacked = two_results
    table = slices_summary(stacked)
    assert list(table.columns) == ["dataset", "n_samples", "statistic", "estimate", "ci_low",
                                   "ci_high", "verdict", "verdict_scheme"]
    assert len(table) == 2 * len(STATISTICS)
    row = table[(table.dataset == "b") & (table.statistic == "zms")].iloc[0]
    expected = singles["b"].sel(statistic="zms")
    assert row.n_samples == 200 and row.estimate == float(expected.estimate)
    assert (row.ci_low, row.ci_high) == (float(expected.ci_low), float(expected.ci_high))
    assert row.verdict == str(expected.verdict.values) == "fail"
    assert row.verdict_scheme == "BS"
    text = slices_table(stacked).splitlines()
    assert text[0].split() == ["dataset", "M", "statistic", "estimate", "ci_low", "ci_high",
                               "verdict"]
    assert len(text) == 1 + 2 * len(STATISTICS)
    assert text[4].split()[:3] == ["b", "200", "zms"] and text[4].endswith("fail (BS)")


def test_tables_of_two_extra_dimensions(two_results):
    _, stacked = two_results
    both = xr.concat([stacked, stacked], dim=pd.Index(["gp", "rf"], name="model"))
    blocks = slice_blocks(both)
    assert [labels for labels, _ in blocks] == [
        {"model": m, "dataset": d} for m in ("gp", "rf") for d in ("a", "b")]
    assert slice_title(*blocks[3]) == "model = rf, dataset = b (M = 200)"
    assert list(slices_summary(both).columns[:3]) == ["model", "dataset", "n_samples"]


# --------------------------------------------------------------------------------------------
# xuqcal validate on several files
# --------------------------------------------------------------------------------------------


def _same_as_alone(result, name, alone):
    for variable in ("estimate", "ci_low", "ci_high", "zeta", "verdict"):
        np.testing.assert_array_equal(result[variable].sel(dataset=name).values,
                                      alone[variable].values, err_msg=f"{name}: {variable}")


def test_validate_several_files(three, tmp_path, capsys):
    out = tmp_path / "result.nc"
    files = [str(three[k]) for k in ("a", "b", "c")]
    assert main(["validate", *files, *COLUMNS, "--where", "uE > 0", *FAST, "-o",
                 str(out)]) == 0
    printed = capsys.readouterr().out
    for header in ("dataset = a (M = 400)", "dataset = b (M = 299)", "dataset = c (M = 250)"):
        assert f"\n{header}\n" in printed
    assert printed.count("\nstatistic ") == 3  # one table per set
    summary = printed.split("\nsummary: ")[1].split("\n\n")[0].splitlines()
    assert summary[1].split() == ["dataset", "M", "statistic", "estimate", "ci_low", "ci_high",
                                  "verdict"]
    assert len(summary) == 2 + 3 * len(STATISTICS)
    with xr.open_dataset(out) as result:
        assert result["zeta"].dims == ("dataset", "statistic", "scheme")
        assert result["dataset"].values.tolist() == ["a", "b", "c"]
        assert result["source"].values.tolist() == files
        assert result.attrs["where"] == "uE > 0" and result.attrs["source"] == ", ".join(files)
        assert result["n_samples"].values.tolist() == [400, 299, 250]
        for name, path in three.items():
            _same_as_alone(result, name, xuqcal.validate(_read(path, where="uE > 0"),
                                                       STATISTICS, **OPTIONS))


def test_validate_names_and_one_named_file(three, tmp_path, capsys):
    files = [str(three["a"]), str(three["c"])]
    assert main(["validate", *files, *COLUMNS, "--names", "qm9,logP", *FAST]) == 0
    printed = capsys.readouterr().out
    assert "dataset = qm9 (M = 400)" in printed and "dataset = logP (M = 250)" in printed
    out = tmp_path / "one.nc"
    assert main(["validate", files[0], *COLUMNS, "--names", "only", *FAST, "-o",
                 str(out)]) == 0
    assert "dataset = only (M = 400)" in capsys.readouterr().out
    with xr.open_dataset(out) as result:
        assert result["dataset"].values.tolist() == ["only"]


@pytest.mark.parametrize(("names", "expected"), [
    ("x", "--names: 1 name (x) for 2 files; give one name per file"),
    ("x,y,z", "--names: 3 names (x, y, z) for 2 files"),
    ("x,x", "--names: 'x' is given twice"),
    ("x,", "--names: expected comma-separated non-empty names"),
])
def test_validate_names_errors(names, expected, three, capsys, no_validation):
    line = _one_line(capsys, main(["validate", str(three["a"]), str(three["b"]), *COLUMNS,
                                   "--names", names, *FAST]))
    assert line.startswith(f"xuqcal validate: error: {expected}"), line


@pytest.fixture
def no_validation(monkeypatch):
    """Any validation fails the test: the errors come first."""
    def forbidden(*args, **kwargs):
        raise AssertionError("validated before the inputs were checked")

    monkeypatch.setattr(cli, "validate", forbidden)


def test_validate_same_stems_need_names(three, tmp_path, capsys, no_validation):
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "data.csv").write_bytes(three["a"].read_bytes())
    files = [str(tmp_path / "x" / "data.csv"), str(tmp_path / "y" / "data.csv")]
    line = _one_line(capsys, main(["validate", *files, *COLUMNS, *FAST]))
    assert f"{files[0]} and {files[1]} have the same name 'data'" in line
    assert "--names data1,data2" in line


def test_validate_several_files_errors_name_the_file_and_rows(three, tmp_path, capsys,
                                                              no_validation):
    files = [str(three["a"]), str(three["b"])]
    line = _one_line(capsys, main(["validate", *files, *COLUMNS, *FAST]))
    assert line == (f"xuqcal validate: error: --uE: {three['b']}: 1 of 300 values are not "
                    "positive (rows 7); computed as 'sqrt(var)'; hint: fix the source data, or "
                    "drop such rows with the where argument, e.g. where=\"isfinite(E) & "
                    "isfinite(uE) & (uE > 0)\"")
    line = _one_line(capsys, main(["validate", str(three["a"]), str(tmp_path / "no.csv"),
                                   *COLUMNS, *FAST]))
    assert line.endswith(f"{tmp_path / 'no.csv'}: no such file (expected a CSV file, a NetCDF "
                         "input dataset or a Zarr store)")
    line = _one_line(capsys, main(["validate", *files, *COLUMNS, "--where", "uE > 0",
                                   "--n-bins", "160", *FAST]))
    assert line == (f"xuqcal validate: error: --n-bins: 160 bins need at least 320 points (2 "
                    f"per bin), but {three['b']} (rows kept by --where 'uE > 0') has 299; give "
                    "--n-bins 149 or fewer")


def test_validate_n_bins_names_the_smallest_file(three, capsys, no_validation):
    files = [str(three[k]) for k in ("a", "c")]
    line = _one_line(capsys, main(["validate", *files, *COLUMNS, "--n-bins", "130", *FAST]))
    assert line == (f"xuqcal validate: error: --n-bins: 130 bins need at least 260 points (2 "
                    f"per bin), but {three['c']} has 250; give --n-bins 125 or fewer")


def test_validate_features_and_where_on_features(three, capsys):
    files = [str(three["a"]), str(three["c"])]
    args = argparse.Namespace(E="y - y_pred", uE="sqrt(var)", where="size > -1",
                              features=["y", "size=y*2"], names=None)
    ds, expressions = cli_inputs.read_inputs([Path(f) for f in files], args)
    assert expressions == ("y - y_pred", "sqrt(var)")
    assert sorted(ds.data_vars) == ["E", "size", "uE", "y"]
    expected = _read(three["c"], where="size > -1", features={"y": "y", "size": "y*2"})
    present = ds["row"].sel(dataset="c").values >= 0
    np.testing.assert_array_equal(ds["row"].sel(dataset="c").values[present],
                                  expected["sample"].values)
    np.testing.assert_array_equal(ds["size"].sel(dataset="c").values[present],
                                  expected["size"].values)
    assert expected.sizes["sample"] < 250  # the filter on a feature dropped rows
    assert main(["validate", *files, *COLUMNS, "--features", "y,size=y*2", "--where",
                 "size > -1", *FAST]) == 0
    assert f"dataset = c (M = {expected.sizes['sample']})" in capsys.readouterr().out
    line = _one_line(capsys, main(["validate", *files, *COLUMNS, "--features", "nope",
                                   *FAST]))
    assert line.startswith(f"xuqcal validate: error: --features nope: {three['a']}: unknown "
                           "name 'nope'")
    line = _one_line(capsys, main(["validate", files[0], *COLUMNS, "--features", "=y*2",
                                   *FAST]))
    assert "--features: '=y*2' has no name before '='" in line


def test_validate_netcdf_files_with_different_features(tmp_path, capsys, no_validation):
    a = xuqcal.synthetic.nig(200, nu=6, seed=1)
    xuqcal.to_netcdf(a.assign(X=a.uE * 2, Y=a.uE), tmp_path / "a.nc")
    xuqcal.to_netcdf(xuqcal.synthetic.nig(200, nu=6, seed=2).pipe(
        lambda b: b.assign(Y=b.uE)), tmp_path / "b.nc")
    files = [str(tmp_path / "a.nc"), str(tmp_path / "b.nc")]
    line = _one_line(capsys, main(["validate", *files, *FAST]))
    assert line == (f"xuqcal validate: error: --features: the files have different feature "
                    f"variables ({files[1]} has no X); every data set needs the same features: "
                    "keep the common ones with --features Y")
    line = _one_line(capsys, main(["validate", *files, "--features", "X", *FAST]))
    assert line == (f"xuqcal validate: error: --features: {files[1]} has no variable X "
                    "(variables: E, uE, Y)")
    line = _one_line(capsys, main(["validate", *files, "--features", "Z=Y*2", *FAST]))
    assert "--features: for a NetCDF file, give variable names" in line


def test_netcdf_uncertainty_variable_named_E(tmp_path, capsys):
    """A NetCDF input whose uncertainty variable is named E (--E err --uE E) is read, the
    variables renamed E and uE; a variable E besides the two named is refused."""
    one = xuqcal.synthetic.nig(200, nu=6, seed=1)
    data = xr.Dataset({"err": ("sample", one.E.values), "E": ("sample", one.uE.values)})
    xuqcal.to_netcdf(data, tmp_path / "a.nc")
    args = argparse.Namespace(E="err", uE="E", where=None, features=None, names=None)
    ds, expressions = cli_inputs.read_inputs([tmp_path / "a.nc"], args)
    assert expressions == ("err", "E")
    np.testing.assert_array_equal(ds["E"].values, one.E.values)
    np.testing.assert_array_equal(ds["uE"].values, one.uE.values)
    assert main(["validate", str(tmp_path / "a.nc"), "--E", "err", "--uE", "E", *FAST]) == 0
    assert "M = 200" in capsys.readouterr().out
    xuqcal.to_netcdf(data.assign(u=data["E"]), tmp_path / "b.nc")
    line = _one_line(capsys, main(["validate", str(tmp_path / "b.nc"), "--E", "err", "--uE",
                                   "u", *FAST]))
    assert line.startswith(f"xuqcal validate: error: --E, --uE: {tmp_path / 'b.nc'}: the data "
                           "set has a variable 'E' besides the error and uncertainty variables")


def test_validate_netcdf_features_option_selects_variables(tmp_path, capsys):
    a = xuqcal.synthetic.nig(200, nu=6, seed=1)
    xuqcal.to_netcdf(a.assign(X=a.uE * 2, Y=a.uE).rename(E="err"), tmp_path / "a.nc")
    xuqcal.to_netcdf(xuqcal.synthetic.nig(150, nu=6, seed=2).pipe(
        lambda b: b.assign(Y=b.uE)), tmp_path / "b.nc")
    args = argparse.Namespace(E=None, uE=None, where=None, features=["Y"], names=None)
    ds, expressions = cli_inputs.read_inputs([tmp_path / "a.nc", tmp_path / "b.nc"], args)
    assert sorted(ds.data_vars) == ["E", "Y", "uE"] and expressions == ("err, E", "uE")
    assert main(["validate", str(tmp_path / "a.nc"), str(tmp_path / "b.nc"), "--features",
                 "Y", *FAST]) == 0
    assert "dataset = b (M = 150)" in capsys.readouterr().out


def test_zarr_store_without_the_zarr_package(tmp_path, capsys, monkeypatch, no_validation):
    store = tmp_path / "data.zarr"
    store.mkdir()
    (store / ".zgroup").write_text('{"zarr_format": 2}')
    monkeypatch.setattr(cli_inputs, "zarr_available", lambda: False)
    line = _one_line(capsys, main(["validate", str(store), *FAST]))
    assert line == (f"xuqcal validate: error: {store} is a Zarr store; reading it needs the "
                    "zarr package, which is not installed: pip install zarr (or write the data "
                    "to a NetCDF file with xuqcal.to_netcdf)")
    plain = tmp_path / "folder"
    plain.mkdir()
    line = _one_line(capsys, main(["validate", str(plain), *COLUMNS, *FAST]))
    assert "is a folder, not a CSV file" in line  # not taken for a store


def test_zarr_store_is_read_lazily_by_role(tmp_path, capsys, monkeypatch):
    """A Zarr store is opened with xr.open_zarr (replaced here by the data it would give: the
    zarr package is optional), its variables found by role, checked, and validated."""
    store = tmp_path / "data.zarr"
    store.mkdir()
    data = xuqcal.synthetic.nig(300, nu=6, seed=4).rename(E="err", uE="sigma")
    opened = []

    def open_zarr(path, **kwargs):
        opened.append(Path(path))
        return data.chunk(100)

    monkeypatch.setattr(cli_inputs, "zarr_available", lambda: True)
    monkeypatch.setattr(xr, "open_zarr", open_zarr)
    out = tmp_path / "result.nc"
    assert main(["validate", str(store), *FAST, "-o", str(out)]) == 0
    assert opened == [store] and "M = 300" in capsys.readouterr().out
    alone = xuqcal.validate(data, STATISTICS, E="err", uE="sigma", **OPTIONS)
    with xr.open_dataset(out) as result:
        assert result.attrs["E_expression"] == "err" and result.attrs["uE_expression"] == "sigma"
        np.testing.assert_array_equal(result["zeta"].values, alone["zeta"].values)
    bad = data.assign(sigma=data.sigma.where(data.sample != 3, 0.0))
    monkeypatch.setattr(xr, "open_zarr", lambda path, **kwargs: bad.chunk(100))
    line = _one_line(capsys, main(["validate", str(store), *FAST]))  # checked in the graph
    assert line == "xuqcal validate: error: sigma: 1 of 300 values are not positive (rows 3)"
    line = _one_line(capsys, main(["validate", str(store), "--E", "err * 2", *FAST]))
    assert "--E: for a Zarr store, give a variable name" in line


def test_zarr_store_with_the_zarr_package(tmp_path, capsys):
    pytest.importorskip("zarr")  # optional: not a dependency of xuqcal
    data = xuqcal.synthetic.nig(300, nu=6, seed=4)
    data.to_zarr(tmp_path / "data.zarr")
    assert main(["validate", str(tmp_path / "data.zarr"), *FAST]) == 0
    assert "M = 300" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# xuqcal report on several files
# --------------------------------------------------------------------------------------------


def test_report_several_files_passes_the_stacked_set(three, tmp_path, capsys, monkeypatch):
    import xuqcal.report.html as html

    calls = []

    def report(ds, folder, **kwargs):
        calls.append((ds, folder, kwargs))
        return Path(folder) / "index.html"

    monkeypatch.setattr(html, "report", report)
    out = tmp_path / "r"
    assert main(["report", str(three["a"]), str(three["c"]), *COLUMNS, "--features", "y",
                 "--names", "first,second", *FAST, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "dataset = second (M = 250)" in printed
    (ds, folder, kwargs), = calls
    assert folder == out and ds["E"].dims == ("dataset", "sample")
    assert ds["dataset"].values.tolist() == ["first", "second"]
    assert sorted(ds.data_vars) == ["E", "uE", "y"]
    assert kwargs["validation_result"]["zeta"].dims == ("dataset", "statistic", "scheme")
    line = _one_line(capsys, main(["report", str(three["a"]), str(three["a"]), *COLUMNS,
                                   *FAST, "-o", str(tmp_path / "r2")]))
    assert "have the same name 'a'" in line and not (tmp_path / "r2").exists()


# --------------------------------------------------------------------------------------------
# xuqcal recalibrate: --features, --by, --test-E/--test-uE
# --------------------------------------------------------------------------------------------


RECAL = ["--n-bins-scores", "10", "--n-mc", "20", "--n-boot", "100"]


@pytest.fixture
def train_test(tmp_path):
    train = _frame(800, 11, scale=0.7)
    test = _frame(600, 12, scale=0.7)
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    # the same test set with other column names and the variance as a standard deviation
    pd.DataFrame({"target": test.y, "pred": test.y_pred, "sd": np.sqrt(test["var"]),
                  "y_pred": test.y_pred}).to_csv(tmp_path / "test_other.csv", index=False)
    return tmp_path


def test_recalibrate_by_a_feature_expression(train_test, capsys):
    t = train_test
    out = t / "out.nc"
    assert main(["recalibrate", str(t / "train.csv"), str(t / "test.csv"), *COLUMNS,
                 "--features", "y_pred,p2=y_pred*2", "--by", "p2", "--n-bins", "4", *RECAL,
                 "-o", str(out)]) == 0
    paths = cli_recalibrate.output_paths(out)
    with xr.open_dataset(paths["recalibrator"]) as rec, \
            xr.open_dataset(paths["evaluation"]) as table:
        assert rec.attrs["by"] == "p2" and rec.scale.size == 4
        assert table["by"].values.tolist() == ["uE", "y_pred", "p2"]
        assert table.attrs["features"] == "y_pred,p2"
    train = _read(t / "train.csv", features={"p2": "y_pred*2"})
    expected = xuqcal.recalibration.fit(train, "bvs", by="p2", n_bins=4)
    with xr.open_dataset(paths["recalibrator"]) as rec:
        np.testing.assert_array_equal(rec.scale.values, expected.scale.values)


@pytest.mark.parametrize(("extra", "expected"), [
    (["--by", "y_pred"], "--by: 'y_pred' is not a variable of the data (the variables to bin "
                         "on are uE); add it with --features, e.g. --features y_pred"),
    (["--by", "X1"], "X1 and X2 come from --formula COLUMN"),
    (["--features", "y_pred", "--by", "uE,nope"], "--by: 'nope' is not a variable of the data "
                                                  "(the variables to bin on are uE, y_pred)"),
    (["--by", "E"], "--by: E is the error itself"),
    (["--features", "nope"], "--features nope: "),
])
def test_recalibrate_by_errors_come_first(extra, expected, train_test, capsys, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("fitted before the options were checked")

    monkeypatch.setattr(cli_recalibrate, "fit", forbidden)
    t = train_test
    line = _one_line(capsys, main(["recalibrate", str(t / "train.csv"), str(t / "test.csv"),
                                   *COLUMNS, *extra, "-o", str(t / "o.nc")]))
    assert expected in line, line
    assert not (t / "o.nc").exists()


def test_recalibrate_test_expressions(train_test, capsys):
    t = train_test
    same, other = t / "same.nc", t / "other.nc"
    base = ["recalibrate", str(t / "train.csv"), *COLUMNS, "--method", "temperature", *RECAL]
    assert main([*base[:2], str(t / "test.csv"), *base[2:], "-o", str(same)]) == 0
    assert main([*base[:2], str(t / "test_other.csv"), *base[2:], "--test-E", "target - pred",
                 "--test-uE", "sd", "-o", str(other)]) == 0
    capsys.readouterr()
    with xr.open_dataset(same) as a, xr.open_dataset(other) as b:
        np.testing.assert_allclose(b.uE.values, a.uE.values, rtol=1e-12)
        np.testing.assert_allclose(b.E.values, a.E.values, rtol=1e-12)
    with xr.open_dataset(cli_recalibrate.output_paths(other)["evaluation"]) as table:
        assert table.attrs["test_E_expression"] == "target - pred"
        assert table.attrs["test_uE_expression"] == "sd"
        assert table.attrs["E_expression"] == "y - y_pred"
    line = _one_line(capsys, main([*base[:2], str(t / "test_other.csv"), *base[2:],
                                   "--test-E", "target - pred", "--test-uE", "sd - 10", "-o",
                                   str(t / "bad.nc")]))
    assert line.startswith(f"xuqcal recalibrate: error: --test-uE: {t / 'test_other.csv'}: "
                           "600 of 600 values are not positive")
    line = _one_line(capsys, main([*base[:2], str(t / "test_other.csv"), *base[2:], "-o",
                                   str(t / "bad.nc")]))  # the train expressions on other columns
    assert line.startswith(f"xuqcal recalibrate: error: --E: {t / 'test_other.csv'}: unknown "
                           "name 'y'")
    assert not (t / "bad.nc").exists()


def test_recalibrate_help_documents_the_new_options(capsys):
    assert main(["recalibrate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--test-E EXPR", "--test-uE EXPR", "--features LIST"):
        assert option in text
    assert "(default: --E)" in text and "a feature of --features (e.g. y_pred)" in text


def test_validate_help_documents_several_files(capsys):
    assert main(["validate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "FILE [FILE ...]" in text and "--names LIST" in text and "Zarr" in text


# --------------------------------------------------------------------------------------------
# python -m xuqcal
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["xuqcal", "xuqcal.cli"])
def test_python_dash_m_validates_several_files(module, three):
    """``python -m`` in the repository (its folder comes first on the path) runs the command:
    here an error of the options, before any file is read."""
    done = subprocess.run([sys.executable, "-m", module, "validate", str(three["a"]),
                           str(three["c"]), *COLUMNS, "--names", "only-one", *FAST],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("xuqcal validate: error: --names: 1 name (only-one) for 2 "
                                   "files; give one name per file, in the order of the files")


# --------------------------------------------------------------------------------------------
# End to end: the slices of the broadcasting xuqcal.validate against the single calls
# --------------------------------------------------------------------------------------------


def test_core_validate_the_shared_sets(load_set, tmp_path, capsys):
    """PAL2022 diffusion and perovskite (RF, filtered as in the paper) in one command: each
    slice is the validation of that file alone."""
    sets = {"Diffusion_RF_Test_cal": load_set(1), "Perovskite_RF_Test_cal": load_set(2)}
    files = [ds.attrs["source"] for ds in sets.values()]
    out = tmp_path / "pal.nc"
    assert main(["validate", *files, "--E", "E", "--uE", "uE", "--where",
                 "uE > 1e-6 * std(E)", *FAST, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    for name, ds in sets.items():
        assert f"dataset = {name} (M = {ds.sizes['sample']})" in printed
    with xr.open_dataset(out) as result:
        for name, ds in sets.items():
            _same_as_alone(result, name, xuqcal.validate(ds, STATISTICS, **OPTIONS))


def test_core_validate_netcdf_with_a_model_dimension(tmp_path, capsys):
    sets = {"gp": xuqcal.synthetic.nig(300, nu=6, seed=1),
            "rf": xuqcal.synthetic.nig(300, nu=6, seed=2, uE_scale=0.7)}
    data = xr.concat(list(sets.values()), dim=pd.Index(list(sets), name="model"))
    data.to_netcdf(tmp_path / "models.nc")
    out = tmp_path / "result.nc"
    assert main(["validate", str(tmp_path / "models.nc"), *FAST, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "model = gp (M = 300)" in printed and "model = rf (M = 300)" in printed
    with xr.open_dataset(out) as result:
        assert result["zeta"].dims == ("model", "statistic", "scheme")
        for name, ds in sets.items():
            alone = xuqcal.validate(ds, STATISTICS, **OPTIONS)
            np.testing.assert_array_equal(result["zeta"].sel(model=name).values,
                                          alone["zeta"].values)


def test_core_stack_datasets_with_a_model_dimension():
    """Sets over (model, sample) stack to (dataset, model, sample); their model labels must
    agree."""
    def models(seed, labels=("gp", "rf")):
        sets = [xuqcal.synthetic.nig(200 + 50 * seed, nu=6, seed=seed + k)
                for k in range(len(labels))]
        return xr.concat(sets, dim=pd.Index(list(labels), name="model"))

    stacked = xuqcal.stack_datasets({"a": models(0), "b": models(1)})
    assert stacked["E"].dims == ("dataset", "model", "sample")
    assert stacked.sizes["sample"] == 250 and np.isnan(stacked["E"].sel(dataset="a").values[
        :, 200:]).all()
    with pytest.raises(ValueError, match="need the same coordinates"):
        xuqcal.stack_datasets({"a": models(0), "b": models(1, ("gp", "nn"))})


def test_core_report_several_files(three, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", str(three["a"]), str(three["c"]), *COLUMNS, *FAST, "-o",
                 str(out)]) == 0
    assert f"report: {(out / 'index.html').resolve()}" in capsys.readouterr().out
    # one page: the summary (one row per file and statistic), then a section per file
    text = (out / "index.html").read_text(encoding="utf-8")
    assert "<h1>2 data sets: a, c</h1>" in text
    assert re.findall(r'<section id="([^"]+)">\s*<h2>([^<]*)</h2>', text) == [
        ("summary", "Summary across data sets"), ("dataset-a", "dataset = a (M = 400)"),
        ("dataset-c", "dataset = c (M = 250)"), ("provenance", "Results and provenance")]
    summary = text.split('<table id="T_summary"', 1)[1].split("</table>", 1)[0]
    assert summary.count("<tr>") == 1 + 2 * len(STATISTICS)
    with xr.open_dataset(out / "results" / "validation.nc") as result:
        assert result["dataset"].values.tolist() == ["a", "c"]
        assert result["n_samples"].values.tolist() == [400, 250]
        assert result["source"].values.tolist() == [str(three["a"]), str(three["c"])]
    for name in ("a", "c"):  # each section: the report of that file alone
        alone = xuqcal.validate(_read(three[name]), STATISTICS, **OPTIONS)
        with xr.open_dataset(out / "results" / f"dataset-{name}_validation.nc") as part:
            np.testing.assert_array_equal(part["zeta"].values, alone["zeta"].values)
        assert (out / "figures" / f"dataset-{name}_zscores_uE.png").is_file()


def test_core_python_dash_m_validates_several_files(three, tmp_path):
    out = tmp_path / "result.nc"
    done = subprocess.run([sys.executable, "-m", "xuqcal", "validate", str(three["a"]),
                           str(three["c"]), *COLUMNS, *FAST, "-o", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "dataset = c (M = 250)" in done.stdout
    with xr.open_dataset(out) as result:
        assert result["dataset"].values.tolist() == ["a", "c"]
