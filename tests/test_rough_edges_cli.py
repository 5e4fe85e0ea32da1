"""The rough edges of issue 22 (item 5): the documented ``recalibration.evaluate`` example,
``--E``/``--uE`` per file, ``xuqcal report`` of a NetCDF input, the report's ν_eff, the help
texts, and the fitted factors in ``Recalibrator``'s repr and ``xuqcal recalibrate``.

Each test fails without its fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xuqcal
from xuqcal import recalibration as rc
from xuqcal.cli import main
from xuqcal.core import defaults

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--n-boot", "200", "--n-mc", "60", "--statistics", "zms,rce", "--no-progress"]


def _one_line_error(capsys, status: int) -> str:
    """The one error line of a failed command (exit status 2)."""
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# --------------------------------------------------------------------------------------------
# 1. the documented recalibration.evaluate({...}) example
# --------------------------------------------------------------------------------------------


def _documented_lines(marker: str) -> list[str]:
    """The code lines of the literal block that follows ``marker`` in the recalibration
    guide (its indented lines, comments removed)."""
    text = (ROOT / "docs" / "guide" / "recalibration.rst").read_text(encoding="utf-8")
    block = text.split(marker, 1)[1].split("\n\n", 2)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_documented_evaluate_example_runs_on_data_without_features():
    """The guide's calls, as written, on data with E and uE only: ``evaluate`` used to need
    the features X1 and X2 (its default), and failed."""
    fit_block = _documented_lines("Fit on a training set, apply to any data set with the "
                                  "same variables::")
    evaluate_block = _documented_lines("Evaluation and the bin-number scan::")
    wanted = [line for line in fit_block if line.startswith(("rec = train.uqcal.recalibrate",
                                                              "new = rec.apply(test)"))]
    wanted += [line for line in evaluate_block if "scan" not in line]
    assert len(wanted) == 5, wanted  # recalibrate, apply, import, evaluate, print
    assert ('table = recalibration.evaluate({"train": train, "test": test, "test BVS": new})'
            in wanted)
    namespace = {"xuqcal": xuqcal,
                 "train": xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.7),
                 "test": xuqcal.synthetic.nig(2000, nu=6, seed=1, uE_scale=0.7)}
    exec("\n".join(wanted), namespace)  # the documented code itself
    table = namespace["table"]
    assert table.dataset.values.tolist() == ["train", "test", "test BVS"]
    assert table.s_x.by.values.tolist() == ["uE"]  # no feature: the scores of uE only
    assert table.attrs["features"] == ""
    assert float(table.s_cal.sel(dataset="test BVS")) < float(table.s_cal.sel(dataset="test"))


def _with_features(ds: xr.Dataset, seed: int, names=("X1", "X2")) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    return ds.assign({name: ("sample", rng.normal(size=ds.sizes["sample"])) for name in names})


def test_feature_default_uses_x1_x2_when_present_and_names_what_is_missing():
    train = _with_features(xuqcal.synthetic.nig(1000, nu=6, seed=0), 0)
    plain = xuqcal.synthetic.nig(1000, nu=6, seed=1)
    options = dict(n_bins=10, n_boot=100)
    # X1, X2 present: still the default score variables (the published QM9 tables)
    assert rc.scores(train, **options).s_x.by.values.tolist() == ["uE", "X1", "X2"]
    assert rc.scores(plain, **options).s_x.by.values.tolist() == ["uE"]
    # a named feature that the data lack: a clear error naming it and the parameter
    with pytest.raises(ValueError, match=r"^features: the variable 'X7' is not in the "
                                         r"dataset \(variables: E, uE\)"):
        rc.scores(plain, features=["X7"], **options)
    # a default feature in some data sets only: refused, naming the sets
    with pytest.raises(ValueError, match=r"^features: the default feature X1 is in train but "
                                         r"not in test; .*features=\(\)"):
        rc.evaluate({"train": train, "test": plain}, n_mc=10, **options)
    table = rc.evaluate({"train": train, "test": plain}, features=(), n_mc=10, **options)
    assert table.s_x.by.values.tolist() == ["uE"]
    # the losses: s_tot works without features, s_ada needs them
    assert rc.fit(plain, "bvs", n_bins=4, loss="s_tot", n_bins_scores=10).attrs["features"] == ""
    assert rc.fit(train, "bvs", n_bins=4, loss="s_tot",
                  n_bins_scores=10).attrs["features"] == "X1,X2"
    with pytest.raises(ValueError, match=r"^features: loss='s_ada' .* no default feature"):
        rc.fit(plain, "bvs", n_bins=4, loss="s_ada", n_bins_scores=10)
    scan = rc.scan(plain, plain, n_bins=[2, 3], n_bins_scores=10, n_boot=100)
    assert scan.s_x.by.values.tolist() == ["uE"]


# --------------------------------------------------------------------------------------------
# 2. several CSV files with different columns: --E / --uE per file
# --------------------------------------------------------------------------------------------


@pytest.fixture
def two_layouts(tmp_path):
    """a.csv with columns logP, y_pred, uq; b.csv with err, var (another model's layout)."""
    a = xuqcal.synthetic.nig(400, nu=6, seed=1)
    b = xuqcal.synthetic.nig(300, nu=6, seed=2, uE_scale=0.8)
    y = np.random.default_rng(0).normal(size=400)
    pd.DataFrame({"logP": y, "y_pred": y - a.E.values, "uq": a.uE.values}).to_csv(
        tmp_path / "a.csv", index=False)
    pd.DataFrame({"err": b.E.values, "var": b.uE.values ** 2}).to_csv(tmp_path / "b.csv",
                                                                      index=False)
    return tmp_path / "a.csv", tmp_path / "b.csv"


def test_validate_files_with_different_columns(two_layouts, tmp_path, capsys):
    a, b = two_layouts
    out = tmp_path / "both.nc"
    assert main(["validate", str(a), str(b), "--E", "logP - y_pred", "--E", "err",
                 "--uE", "uq", "--uE", "sqrt(var)", *FAST, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "dataset = a (M = 400)" in printed and "dataset = b (M = 300)" in printed
    with xr.open_dataset(out) as both:
        both = both.load()
    assert both.attrs["E_expression"] == "logP - y_pred, err"
    assert both.attrs["uE_expression"] == "uq, sqrt(var)"
    # each slice is the validation of its file alone, with its own expressions
    for name, path, E, uE in ((b"a", a, "logP - y_pred", "uq"), (b"b", b, "err", "sqrt(var)")):
        alone = tmp_path / f"{name.decode()}_alone.nc"
        assert main(["validate", str(path), "--E", E, "--uE", uE, *FAST, "-o", str(alone)]) == 0
        with xr.open_dataset(alone) as one:
            np.testing.assert_array_equal(both.estimate.sel(dataset=name.decode()).values,
                                          one.estimate.values)
    capsys.readouterr()
    # one value for every file still works; a wrong count is refused before anything is read
    line = _one_line_error(capsys, main(["validate", str(a), str(b), "--E", "x", "--E", "y",
                                         "--E", "z", "--uE", "u", *FAST, "-o",
                                         str(tmp_path / "bad.nc")]))
    assert line == ("xuqcal validate: error: --E: given 3 times for 2 files; give --E once "
                    "(the same for every file) or once per FILE, in the order of the files")
    assert not (tmp_path / "bad.nc").exists()
    # an expression that does not fit its file names the option and the file
    line = _one_line_error(capsys, main(["validate", str(a), str(b), "--E", "logP - y_pred",
                                         "--uE", "uq", *FAST]))
    assert line.startswith(f"xuqcal validate: error: --E: {b}: unknown name 'logP'")


def test_per_file_options_are_documented(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")  # one line per option
    for command in ("validate", "report"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        for option in ("--E", "--uE"):
            line = next(line for line in text.splitlines()
                        if line.strip().startswith(f"{option} EXPR"))
            assert "once per FILE in the order of the files" in line
    guide = (ROOT / "docs" / "guide" / "multiple.rst").read_text(encoding="utf-8")
    assert '--E "logP - y_pred" --E err --uE uq --uE "sqrt(var)"' in guide


# --------------------------------------------------------------------------------------------
# 3. and 4. xuqcal report of a NetCDF input; ν_eff of normal data
# --------------------------------------------------------------------------------------------


def test_report_reads_a_netcdf_input_and_caps_nu_eff(tmp_path, capsys):
    rng = np.random.default_rng(1)
    uE = rng.uniform(0.5, 1.5, 400)
    ds = xuqcal.from_arrays(uE * rng.normal(size=400), uE)  # normal z-scores: ν_eff runs away
    assert xuqcal.describe(ds).nu_eff.sel(variable="Z").item() > 1e8  # 4.132e+11
    ds["x"] = ("sample", rng.normal(size=400))
    path = xuqcal.to_netcdf(ds, tmp_path / "data.nc")
    out = tmp_path / "report"
    assert main(["report", str(path), *FAST, "--n-bins", "10", "-o", str(out)]) == 0
    assert f"report: {(out / 'index.html').resolve()}" in capsys.readouterr().out
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "zscores_x" in page  # the NetCDF file's feature is a conditioning variable
    # the distributions table: ν_eff of Z shown as capped, never as 3.104e+08
    table = page.split('id="T_distributions', 1)[1].split("</table>", 1)[0]
    nu_row = next(row for row in table.split("<tr") if "nu_eff" in row)
    assert "&gt; 1000 (normal tails)" in nu_row
    assert not re.search(r"\de\+\d", table)
    # a validation result is not input data: refused, saying what it is
    result = tmp_path / "val.nc"
    assert main(["validate", str(path), *FAST, "-o", str(result)]) == 0
    capsys.readouterr()
    line = _one_line_error(capsys, main(["report", str(result), "-o",
                                         str(tmp_path / "r2")]))
    assert "val.nc is a validation result (written by xuqcal validate -o)" in line
    assert not (tmp_path / "r2").exists()


def test_nu_eff_cell_text():
    from xuqcal.report.html import NU_EFF_CAP, _fmt_nu_eff

    assert _fmt_nu_eff(3.104e8) == f"> {NU_EFF_CAP} (normal tails)"
    assert _fmt_nu_eff(float("inf")) == f"> {NU_EFF_CAP} (normal tails)"
    assert _fmt_nu_eff(6.2104) == "6.21" and _fmt_nu_eff(NU_EFF_CAP) == "1000"
    assert _fmt_nu_eff(float("nan")) == "–"


# --------------------------------------------------------------------------------------------
# 5. help texts that agree with the defaults
# --------------------------------------------------------------------------------------------


def _help(capsys, *command: str) -> dict[str, str]:
    """The help of a command: the description (key ``""``) and each option's text."""
    assert main([*command, "--help"]) == 0
    text = capsys.readouterr().out
    options, key = {"": ""}, ""
    for line in text.splitlines():
        if line.startswith("  -"):  # "  -o OUT.nc, --output OUT.nc  help text"
            invocation, _, help_text = line.strip().partition("  ")
            key = re.findall(r"--?[\w-]+", invocation)[-1]
            options[key] = help_text.strip()
        elif line.startswith("  ") and key:
            options[key] += " " + line.strip()
        elif not line.startswith(("usage", " ")) and line.strip() and not line.endswith(":"):
            options[""] += line
    return options


def test_help_shows_each_default_once_and_as_it_is(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")
    validate = _help(capsys, "validate")
    assert validate["--n-boot"] == ("bootstrap replicates for the BCa intervals (default: auto: "
                                    "as many as --mc-precision needs, at most "
                                    f"{defaults.N_BOOT})")
    assert "(default: auto: as many as --mc-precision needs" in validate["--n-mc"]
    for options in (validate, _help(capsys, "report"), _help(capsys, "demo")):
        assert options["--seed"].endswith(f"(default: {defaults.SEED})")
        assert options["--level"].endswith(f"(default: {defaults.LEVEL:g})")
        assert "); auto (the default)" not in options["--n-boot"]
    assert f"(default: {defaults.MC_PRECISION})" in validate["--mc-precision"]
    assert _help(capsys, "cube", "build")["--seed"].endswith(f"(default: {defaults.SEED})")
    assert _help(capsys, "recalibrate")["--seed"].endswith(f"(default: {defaults.SEED})")
    demo = _help(capsys, "demo")
    assert "uncertainties are 20% too small" in demo[""] and "%%" not in demo[""]
    extend = _help(capsys, "cube", "extend")
    for option in ("--size", "--n-bins", "--nu", "--generators"):
        assert extend[option].endswith("to add") or " to add, e.g. " in extend[option], option


def test_docs_state_the_default_mc_precision():
    """The guide and the README give ``defaults.MC_PRECISION`` (the guide said 0.05)."""
    guide = (ROOT / "docs" / "guide" / "validation.rst").read_text(encoding="utf-8")
    stated = re.findall(r"``mc_precision`` \(default ([0-9.]+)", guide)
    assert stated == [str(defaults.MC_PRECISION)]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"`--mc-precision`, ([0-9.]+)\)", readme) == [str(defaults.MC_PRECISION)]


# --------------------------------------------------------------------------------------------
# 6. the fitted factors in the repr and in xuqcal recalibrate
# --------------------------------------------------------------------------------------------


def test_recalibrator_repr_shows_the_fitted_factors():
    train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.5)
    rec = rc.Recalibrator.fit(train, "temperature")
    assert repr(rec) == ("<Recalibrator temperature, loss='nll'>\n"
                         f"  factor {float(rec.dataset.scale):.4g}")
    rec = rc.Recalibrator.fit(train, "bvs", n_bins=3)
    limits, scale = rec.dataset.bins_upper_limit.values, rec.dataset.scale.values
    head, factors = repr(rec).splitlines()
    assert head == "<Recalibrator bvs, by='uE', n_bins=3, loss='nll'>"
    assert factors == (f"  factors by bin: uE ≤ {limits[0]:.4g}: {scale[0]:.4g}, "
                       f"{limits[0]:.4g} < uE ≤ {limits[1]:.4g}: {scale[1]:.4g}, "
                       f"uE > {limits[1]:.4g}: {scale[2]:.4g}")
    # many bins: the first and last ones and the range, on one line
    rec = rc.Recalibrator.fit(train, "bvs", n_bins=40)
    (factors,) = repr(rec).splitlines()[1:]
    assert factors.count(": ") == 6 and "…" in factors
    assert factors.endswith(f"(40 bins, {rec.dataset.scale.min().item():.4g} to "
                            f"{rec.dataset.scale.max().item():.4g})")
    # per slice: one line per slice with its labels
    both = xuqcal.stack_datasets({"a": train,
                                  "b": xuqcal.synthetic.nig(500, nu=6, seed=1, uE_scale=0.8)})
    lines = repr(rc.Recalibrator.fit(both, "temperature")).splitlines()
    scale = rc.fit(both, "temperature").scale
    assert lines[1:] == [f"  dataset = a: factor {scale.sel(dataset='a').item():.4g}",
                         f"  dataset = b: factor {scale.sel(dataset='b').item():.4g}"]
    assert "variance map with" in repr(rc.Recalibrator.fit(train, "isotonic"))
    assert "score quantiles q_0.683 = " in repr(rc.Recalibrator.fit(train, "conformal"))


def test_cli_recalibrate_prints_the_fitted_factors(two_layouts, tmp_path, capsys):
    a, _ = two_layouts
    common = [str(a), str(a), "--E", "logP - y_pred", "--uE", "uq", "--n-mc", "10",
              "--n-boot", "100", "--n-bins-scores", "10"]
    assert main(["recalibrate", *common, "--method", "temperature", "-o",
                 str(tmp_path / "t.nc")]) == 0
    printed = capsys.readouterr().out
    with xr.open_dataset(tmp_path / "t_recalibrator.nc") as rec:
        factor = float(rec.scale)
    assert f"fitted factor {factor:.4g}\n" in printed
    assert main(["recalibrate", *common, "--n-bins", "4", "-o", str(tmp_path / "b.nc")]) == 0
    printed = capsys.readouterr().out
    with xr.open_dataset(tmp_path / "b_recalibrator.nc") as rec:
        limits, scale = rec.bins_upper_limit.values, rec.scale.values
    assert f"fitted factors by bin: uE ≤ {limits[0]:.4g}: {scale[0]:.4g}, " in printed
    assert f"uE > {limits[2]:.4g}: {scale[3]:.4g}\n" in printed
