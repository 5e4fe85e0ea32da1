"""``--groups COLUMN`` and ``--block COLUMN[:LENGTH]`` of ``xuqcal validate``, ``report`` and
``compare`` (issue 25): the dependent bootstraps from the command line, the report's
effective sample size, and the errors of the options."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xuqcal
from xuqcal.cli import main

FAST = ["--n-boot", "200", "--n-mc", "60", "--statistics", "zms,rce", "--no-progress"]
COLUMNS = ["--E", "err", "--uE", "unc"]


def _frame(seed: int = 0, scale: float = 1.0) -> pd.DataFrame:
    """40 groups of 10 points whose errors share a group effect, with a time column."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(40), 10)
    uE = rng.uniform(0.5, 2.0, groups.size)
    E = uE * (0.7 * rng.normal(size=40)[groups] + 0.7 * rng.normal(size=groups.size))
    return pd.DataFrame({"err": E, "unc": scale * uE,
                         "grp": [f"s{g}" for g in groups], "time": np.arange(groups.size),
                         "x": rng.normal(size=groups.size)})


@pytest.fixture
def data_csv(tmp_path):
    path = tmp_path / "data.csv"
    _frame().to_csv(path, index=False)
    return path


def _one_line_error(capsys, status: int) -> str:
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# --------------------------------------------------------------------------------------------
# validate
# --------------------------------------------------------------------------------------------


def test_validate_groups_prints_and_writes_the_resample(data_csv, tmp_path, capsys):
    out = tmp_path / "result.nc"
    assert main(["validate", str(data_csv), *COLUMNS, "--groups", "grp", *FAST,
                 "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "points resampled by groups: cluster bootstrap of the groups of grp" in printed
    with xr.open_dataset(out) as result:
        assert result.attrs["resample"] == "cluster"
        assert result.attrs["groups"] == "grp"


def test_validate_block_auto_and_given_length(data_csv, tmp_path, capsys):
    out = tmp_path / "result.nc"
    assert main(["validate", str(data_csv), *COLUMNS, "--block", "time", *FAST,
                 "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "circular block bootstrap along time, blocks of" in printed
    assert "automatic length" in printed
    with xr.open_dataset(out) as result:
        assert result.attrs["resample"] == "circular"
        assert result.attrs["block"] == "time"
        assert int(result.attrs["block_length"]) >= 1
        assert result.attrs["block_length_rule"] != "given"
    assert main(["validate", str(data_csv), *COLUMNS, "--block", "time:5", "--block-scheme",
                 "moving", *FAST]) == 0
    printed = capsys.readouterr().out
    assert "moving block bootstrap along time, blocks of 5 points" in printed
    assert "automatic length" not in printed


def test_validate_without_the_options_prints_no_resample_line(data_csv, capsys):
    assert main(["validate", str(data_csv), *COLUMNS, *FAST]) == 0
    assert "points resampled" not in capsys.readouterr().out


def test_the_column_is_a_coordinate_not_a_feature(data_csv):
    """The column of --groups reaches the data as a coordinate over sample, at the rows kept
    by --where; the features are those asked for."""
    from xuqcal.cli.inputs import read_csv_input

    ds = read_csv_input(data_csv, E="err", uE="unc", where="time >= 5",
                        column=("--groups", "grp"))
    assert "grp" in ds.coords and "grp" not in ds.data_vars
    assert ds["grp"].dims == ("sample",)
    assert ds.sizes["sample"] == 395 and ds["grp"].values[0] == "s0"
    assert ds["grp"].values[5] == "s1"


def test_netcdf_input_variable(tmp_path, capsys):
    frame = _frame()
    ds = xuqcal.from_arrays(frame.err.values, frame.unc.values)
    ds["grp"] = ("sample", np.repeat(np.arange(40), 10))
    ds["x"] = ("sample", frame.x.values)
    path = tmp_path / "data.nc"
    xuqcal.to_netcdf(ds, path)
    assert main(["validate", str(path), "--groups", "grp", *FAST]) == 0
    assert "cluster bootstrap of the groups of grp" in capsys.readouterr().out
    # --features without it: the variable is kept all the same
    assert main(["validate", str(path), "--features", "x", "--groups", "grp", *FAST]) == 0
    capsys.readouterr()
    line = _one_line_error(capsys, main(["validate", str(path), "--groups", "nope", *FAST]))
    assert line.startswith(f"xuqcal validate: error: --groups: no variable 'nope' in {path} "
                           "(variables: ")
    assert "grp" in line


# --------------------------------------------------------------------------------------------
# errors: before any work, one line, exit status 2
# --------------------------------------------------------------------------------------------


def test_unknown_column_names_the_option_and_lists_the_columns(data_csv, tmp_path, capsys):
    out = tmp_path / "result.nc"
    line = _one_line_error(capsys, main(["validate", str(data_csv), *COLUMNS, "--groups",
                                         "nope", *FAST, "-o", str(out)]))
    assert line == (f"xuqcal validate: error: --groups: no column 'nope' in {data_csv} "
                    "(columns: err, unc, grp, time, x)")
    assert not out.exists()
    line = _one_line_error(capsys, main(["validate", str(data_csv), *COLUMNS, "--block",
                                         "when:5", *FAST]))
    assert line.startswith("xuqcal validate: error: --block: no column 'when' in ")
    report = tmp_path / "report"
    line = _one_line_error(capsys, main(["report", str(data_csv), *COLUMNS, "--block",
                                         "when", *FAST, "-o", str(report)]))
    assert line.startswith("xuqcal report: error: --block: no column 'when' in ")
    assert "(columns: err, unc, grp, time, x)" in line
    assert not report.exists()


def test_groups_and_block_together_are_refused(data_csv, capsys):
    for command in ("validate", "report", "compare"):
        extra = ["-o", "r"] if command == "report" else []
        line = _one_line_error(capsys, main([command, str(data_csv), *COLUMNS, "--groups",
                                             "grp", "--block", "time", *extra]))
        assert line.startswith(f"xuqcal {command}: error: ")
        assert "--groups" in line and "--block" in line


def test_block_scheme_needs_block(data_csv, capsys):
    for options in (["--block-scheme", "moving"],
                    ["--groups", "grp", "--block-scheme", "stationary"]):
        line = _one_line_error(capsys, main(["validate", str(data_csv), *COLUMNS, *options,
                                             *FAST]))
        assert line.startswith("xuqcal validate: error: --block-scheme: only used with "
                               "--block COLUMN[:LENGTH]")
    line = _one_line_error(capsys, main(["validate", str(data_csv), *COLUMNS, "--block",
                                         "time", "--block-scheme", "random", *FAST]))
    assert "--block-scheme: invalid choice: 'random'" in line


@pytest.mark.parametrize("value", ["time:0", "time:x", "time:-3", ":5", "time:1.5"])
def test_bad_block_length(data_csv, capsys, value):
    line = _one_line_error(capsys, main(["validate", str(data_csv), *COLUMNS,
                                         f"--block={value}", *FAST]))
    assert line.startswith("xuqcal validate: error: --block: expected COLUMN or "
                           "COLUMN:LENGTH")
    assert repr(value) in line


def test_moving_block_longer_than_the_data(data_csv, capsys):
    line = _one_line_error(capsys, main(["validate", str(data_csv), *COLUMNS, "--block",
                                         "time:1000", "--block-scheme", "moving", *FAST]))
    assert line.startswith("xuqcal validate: error: --block: 1000 is longer than the 400 "
                           "points")


def test_help_documents_the_options(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")
    for command in ("validate", "report", "compare"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        assert "[--groups COLUMN | --block COLUMN[:LENGTH]]" in text
        flat = " ".join(text.split())
        for phrase in ("--groups COLUMN column (CSV, Parquet) or variable (NetCDF, Zarr) "
                       "holding each point's group",
                       "--block COLUMN[:LENGTH] column or variable that orders the points",
                       "LENGTH an integer or auto (the default: Politis-White's length",
                       "--block-scheme {moving,circular,stationary} with --block: moving",
                       "block bootstrap (default: circular)"):
            assert phrase in flat, (command, phrase)


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def _page_text(folder) -> str:
    return re.sub(r"<[^>]+>", "", (folder / "index.html").read_text(encoding="utf-8"))


def test_report_groups_shows_the_effective_sample_size(data_csv, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", str(data_csv), *COLUMNS, "--groups", "grp", *FAST,
                 "--figure-format", "svg", "-o", str(out)]) == 0
    assert "cluster bootstrap of the groups of grp" in capsys.readouterr().out
    text = _page_text(out)
    assert "Dependence of the points and effective sample size" in text
    for name in ("n_effective_groups", "icc_z", "icc_z2", "design_effect_z2"):
        assert name in text
    assert "cluster bootstrap: whole groups of grp" in text
    assert "resample (intervals)" in text
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<dt>features</dt><dd>–</dd>" in page  # the column is not a feature
    with xr.open_dataset(out / "results" / "diagnostics.nc") as described:
        assert 0.0 < float(described.n_effective_groups) < 400
    with xr.open_dataset(out / "results" / "validation.nc") as result:
        assert result.attrs["resample"] == "cluster"
    # the per-bin analyses resample the same groups; only the PIT test stays iid
    assert ("The per-bin intervals of the local analyses, of the reliability diagram and of "
            "the local coverage resample the same groups or blocks; the PIT test still treats "
            "the points as independent") in page
    for name in ("local_zms_uE", "local_zm_uE", "reliability", "local_coverage", "summary"):
        with xr.open_dataset(out / "results" / f"{name}.nc") as result:
            assert (result.attrs["resample"], result.attrs["groups"]) == ("cluster", "grp"), name


def test_report_block_shows_the_autocorrelations(data_csv, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", str(data_csv), *COLUMNS, "--block", "time:8", "--block-scheme",
                 "stationary", *FAST, "--figure-format", "svg", "-o", str(out)]) == 0
    capsys.readouterr()
    text = _page_text(out)
    for name in ("n_effective_block", "acf1_z", "acf1_z2", "effective sample size"):
        assert name in text
    assert "stationary block bootstrap along time, blocks of 8 points" in text


def test_report_api_checks_the_keywords_before_any_work(tmp_path):
    from xuqcal.report import report

    ds = xuqcal.synthetic.nig(200, nu=6, seed=0)
    ds = ds.assign_coords(grp=("sample", np.repeat(np.arange(20), 10)))
    with pytest.raises(ValueError, match=r"^groups: only used with a dependent resample"):
        report(ds, tmp_path / "r", groups="grp")
    with pytest.raises(ValueError, match=r"^groups: no variable 'nope' over sample"):
        report(ds, tmp_path / "r", resample="cluster", groups="nope")
    with pytest.raises(ValueError, match=r"^block_length: 500 is longer than the 200 points"):
        report(ds, tmp_path / "r", resample="moving", block="grp", block_length=500)
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------------------------------------
# compare (the keywords of xuqcal.compare come with issue 25's comparison part)
# --------------------------------------------------------------------------------------------

COMPARE_TAKES_GROUPS = "groups" in inspect.signature(xuqcal.compare).parameters


@pytest.fixture
def two_models(tmp_path):
    a, b = tmp_path / "A.csv", tmp_path / "B.csv"
    _frame().to_csv(a, index=False)
    _frame(scale=1.3).to_csv(b, index=False)
    return a, b


def test_compare_unknown_column_and_scheme_errors(two_models, capsys):
    a, b = two_models
    line = _one_line_error(capsys, main(["compare", str(a), str(b), *COLUMNS, "--groups",
                                         "nope", "--n-boot", "200", "--no-progress"]))
    assert line.startswith("xuqcal compare: error: --groups: ") and "no column 'nope'" in line
    assert "(columns: err, unc, grp, time, x)" in line
    line = _one_line_error(capsys, main(["compare", str(a), str(b), *COLUMNS,
                                         "--block-scheme", "moving", "--no-progress"]))
    assert line.startswith("xuqcal compare: error: --block-scheme: only used with --block")


@pytest.mark.skipif(not COMPARE_TAKES_GROUPS,
                    reason="xuqcal.compare does not take resample/groups/block yet")
@pytest.mark.parametrize("options, expected", [
    (["--groups", "grp"], "cluster bootstrap of the groups of grp"),
    (["--block", "time:10"], "circular block bootstrap along time, blocks of 10 points"),
])
def test_compare_dependent(two_models, tmp_path, capsys, options, expected):
    a, b = two_models
    out = tmp_path / "comparison.nc"
    assert main(["compare", str(a), str(b), *COLUMNS, *options, "--statistics", "zms",
                 "--n-boot", "200", "--no-progress", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert expected in printed
    with xr.open_dataset(out) as result:
        assert result.attrs["resample"] in ("cluster", "circular")
