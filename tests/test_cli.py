"""The xuqcal command."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xuqcal
from xuqcal.cli import main


@pytest.fixture
def csv_file(tmp_path):
    ds = xuqcal.synthetic.nig(800, nu=6, seed=5)
    frame = pd.DataFrame({"y": np.linspace(0, 1, 800), "err": ds.E.values,
                          "var": ds.uE.values**2})
    frame["y_pred"] = frame.y - frame.err
    frame.loc[3, "var"] = 0.0  # a row the where filter removes
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


ARGS = ["--E", "y - y_pred", "--uE", "sqrt(var)", "--where", "uE > 0", "--n-boot", "500",
        "--n-mc", "300", "--no-progress"]


def test_validate_prints_table_and_writes_netcdf(csv_file, tmp_path, capsys):
    out = tmp_path / "result.nc"
    assert main(["validate", str(csv_file), *ARGS, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "M = 799" in printed and "verdict" in printed
    assert "ζ_BS" in printed and "ζ_SimN" in printed and "ζ_Sim2T" in printed
    for key in ("zms", "rce", "zm", "zv", "nll", "cc", "ence", "zmse"):
        assert f"\n{key} " in printed
    with xr.open_dataset(out) as result:
        assert result.attrs["where"] == "uE > 0"
        assert result.attrs["n_boot"] == 500
        assert result.sizes["statistic"] == 8
        assert result.attrs["n_mc"] == 300


def test_validate_refuses_to_overwrite(csv_file, tmp_path, capsys):
    out = tmp_path / "result.nc"
    out.write_text("precious")
    assert main(["validate", str(csv_file), *ARGS, "-o", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert out.read_text() == "precious"
    assert main(["validate", str(csv_file), *ARGS, "-o", str(out), "--overwrite"]) == 0
    with xr.open_dataset(out) as result:
        assert "zeta" in result


def test_validate_reports_bad_input(csv_file, capsys):
    args = [a for a in ARGS if a not in ("--where", "uE > 0")]
    assert main(["validate", str(csv_file), *args]) == 2
    assert "uE: 1 of 800 values are not positive" in capsys.readouterr().err
    assert main(["validate", str(csv_file), "--E", "y - nope", "--uE", "var"]) == 2
    assert "unknown name 'nope'" in capsys.readouterr().err


def test_statistics_and_generator_options(csv_file, capsys):
    assert main(["validate", str(csv_file), *ARGS, "--statistics", "zms,ence",
                 "--generators", "normal,uniform", "--known-generator", "normal"]) == 0
    printed = capsys.readouterr().out
    assert "ζ_Sim[uniform]" in printed and "(Sim2N)" in printed  # known D: Sim2 decides
    assert main(["validate", str(csv_file), *ARGS, "--statistics", "zms,bogus"]) == 2
    assert capsys.readouterr().err.startswith(
        "xuqcal validate: error: --statistics: unknown statistic 'bogus'")
    assert main(["validate", str(csv_file), *ARGS, "--generators", "normal,t2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xuqcal validate: error: --generators: ") and "ν > 2" in err
    assert len(err.strip().splitlines()) == 1


def test_simulated_scheme_option(csv_file, tmp_path, capsys):
    out = tmp_path / "result.nc"
    assert main(["validate", str(csv_file), *ARGS, "--statistics", "zms,ence",
                 "--known-generator", "normal", "--simulated-scheme", "Sim", "-o",
                 str(out)]) == 0
    assert "(SimN)" in capsys.readouterr().out
    with xr.open_dataset(out) as result:
        assert result.attrs["simulated_scheme"] == "Sim"
        assert result.verdict_scheme.values.tolist() == ["BS", "SimN"]
    assert main(["validate", str(csv_file), *ARGS, "--statistics", "zms,ence",
                 "--generators", "normal"]) == 0
    assert "(SimN)" in capsys.readouterr().out  # auto without a known generator: Sim
    assert main(["validate", str(csv_file), *ARGS, "--simulated-scheme", "Sim3"]) == 2
    err = capsys.readouterr().err
    assert "--simulated-scheme: invalid choice: 'Sim3'" in err
    assert len(err.strip().splitlines()) == 1


def test_demo(tmp_path, capsys):
    assert main(["demo", "--n-boot", "500", "--n-mc", "300", "--size", "2000", "-o",
                 str(tmp_path / "d"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "calibrated" in printed and "20% too small" in printed
    miscalibrated = xr.open_dataset(tmp_path / "d" / "demo_miscalibrated.nc")
    assert miscalibrated.verdict.sel(statistic="zms") == "fail"
    miscalibrated.close()


@pytest.mark.slow
def test_demo_on_a_distributed_cluster(tmp_path, capsys):
    """20.6 s and 21.4 s in two suite runs (a LocalCluster of two processes and the demo's two
    reports; ``benchmarks/measured/test-time-warm-up-2026-11-26.json``): in the ``slow`` set.
    The CLI's ``--workers`` stays in the default run through ``test_cube_build_on_workers``, and
    results on dask.distributed through the bit-identity tests of the bootstrap, the slices and
    the cube."""
    pytest.importorskip("distributed")
    assert main(["demo", "--n-boot", "300", "--n-mc", "200", "--size", "1000",
                 "--workers", "2", "-o", str(tmp_path / "d")]) == 0  # not into the repository
    assert "dask.distributed" in capsys.readouterr().err
    assert (tmp_path / "d" / "demo_calibrated.nc").is_file()


def test_installed_entry_point():
    exe = shutil.which("xuqcal")
    command = [exe] if exe else [sys.executable, "-m", "xuqcal.cli"]
    done = subprocess.run([*command, "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"xuqcal {xuqcal.__version__}"


def test_cube_commands(tmp_path, capsys):
    path = tmp_path / "cube.nc"
    grid = ["--size", "300,600", "--n-bins", "3,6", "--nu", "3,6", "--n-mc", "30"]
    assert main(["cube", "build", *grid, "-o", str(path)]) == 0
    captured = capsys.readouterr()
    assert "cell 8/8" in captured.err and f"written: {path}" in captured.out
    assert main(["cube", "build", *grid, "-o", str(path)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["cube", "info", str(path)]) == 0
    info = capsys.readouterr().out
    assert "size          2: 300, 600" in info and "n_mc = 30" in info
    assert main(["cube", "fit", str(path)]) == 0
    fit = capsys.readouterr().out.splitlines()
    assert fit[1].split() == ["statistic", "generator", "a", "±", "se", "alpha", "±", "se",
                              "chi2/dof"]
    assert len(fit) == 2 + 4  # ence/zmse x normal/t6
    assert main(["cube", "extend", str(path), "--nu", "12", "--no-progress"]) == 0
    assert "nu            3: 3.0, 6.0, 12.0" in capsys.readouterr().out
    from xuqcal.studies import cube

    full = cube.build(["ence", "zmse"], size=[300, 600], n_bins=[3, 6], nu=[3, 6, 12],
                      n_mc=30).compute()
    xr.testing.assert_identical(cube.open(path)["mean"], full["mean"])


def test_cube_build_on_workers(tmp_path, capsys):
    pytest.importorskip("distributed")
    path = tmp_path / "cube.nc"
    assert main(["cube", "build", "--size", "300", "--n-bins", "3", "--nu", "6", "--n-mc",
                 "40", "--workers", "2", "-o", str(path)]) == 0
    from xuqcal.studies import cube

    local_build = cube.build(["ence", "zmse"], size=[300], n_bins=[3], nu=[6],
                             n_mc=40).compute(scheduler="synchronous")
    xr.testing.assert_identical(cube.open(path)["mean"], local_build["mean"])


def test_recalibrate_command_is_registered(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for name, seed in (("train", 1), ("test", 2)):
        ds = xuqcal.synthetic.nig(1500, nu=6, seed=seed, uE_scale=0.7)
        pd.DataFrame({"err": ds.E.values, "u": ds.uE.values,
                      "x": rng.normal(size=1500)}).to_csv(tmp_path / f"{name}.csv", index=False)
    out = tmp_path / "out.nc"
    assert main(["recalibrate", str(tmp_path / "train.csv"), str(tmp_path / "test.csv"),
                 "--E", "err", "--uE", "u", "--method", "temperature", "--n-bins-scores", "10",
                 "--n-mc", "20", "--n-boot", "100", "-o", str(out)]) == 0
    with xr.open_dataset(out) as recalibrated:
        z2 = float(((recalibrated.E / recalibrated.uE) ** 2).mean())
    assert 0.85 < z2 < 1.15  # uncertainties were 30 % too small before


def test_python_dash_m_runs_the_command():
    done = subprocess.run([sys.executable, "-m", "xuqcal", "cube", "info", "no-such-cube.nc"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("xuqcal cube info: error:") and "no-such-cube.nc" in done.stderr
    assert "Traceback" not in done.stderr


def test_validate_reads_a_netcdf_input_dataset(tmp_path, capsys):
    """``xuqcal validate data.nc``: an input dataset written by xuqcal.to_netcdf (even with its
    variables renamed: the roles are recorded) gives the numbers of the Python API."""
    ds = xuqcal.synthetic.nig(600, nu=6, seed=11).rename(E="err", uE="sigma")
    data = xuqcal.to_netcdf(ds, tmp_path / "data.nc")
    out = tmp_path / "result.nc"
    options = ["--n-boot", "400", "--n-mc", "200", "--no-progress"]
    assert main(["validate", str(data), *options, "-o", str(out)]) == 0
    assert "M = 600" in capsys.readouterr().out
    expected = xuqcal.validate(ds, E="err", uE="sigma", n_boot=400, n_mc=200)
    with xr.open_dataset(out) as result:
        assert result.attrs["E_expression"] == "err" and result.attrs["uE_expression"] == "sigma"
        for name in ("estimate", "ci_low", "ci_high", "zeta"):
            np.testing.assert_array_equal(result[name].values, expected[name].values)
    assert main(["validate", str(data), "--E", "err", "--uE", "sigma", *options]) == 0


@pytest.mark.parametrize(("extra", "message"), [
    (["--where", "uE > 0"], "--where: filters the rows of a CSV file"),
    (["--E", "err * 2"], "--E: for a NetCDF file, give a variable name"),
    (["--E", "nope"], "nope"),
])
def test_validate_netcdf_input_errors_name_the_option(tmp_path, capsys, extra, message):
    data = xuqcal.to_netcdf(xuqcal.synthetic.nig(100, nu=6, seed=1).rename(E="err"),
                            tmp_path / "data.nc")
    assert main(["validate", str(data), *extra, "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_validate_csv_needs_e_and_ue(csv_file, capsys):
    assert main(["validate", str(csv_file), "--E", "y - y_pred"]) == 2
    assert "--uE: required for a CSV file" in capsys.readouterr().err


def test_heavy_tail_threshold_option(tmp_path, capsys):
    # z-scores from Student-t(2.2): beta_GM(Z²) above the default threshold 0.85 (issue 15)
    rng = np.random.default_rng(4)
    path = tmp_path / "heavy.csv"
    pd.DataFrame({"err": rng.standard_t(2.2, 3000), "u": np.ones(3000)}).to_csv(path,
                                                                               index=False)
    args = ["validate", str(path), "--E", "err", "--uE", "u", "--statistics", "zms,rce",
            "--n-boot", "300", "--n-mc", "100", "--no-progress"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "not testable: heavy tails (β_GM(Z²) = " in printed
    assert "(heavy-tail screening of zms above 0.85)" in printed
    assert main([*args, "--heavy-tail-threshold", "none"]) == 0
    printed = capsys.readouterr().out
    assert "not testable" not in printed and "(no heavy-tail screening)" in printed
    assert main([*args, "--heavy-tail-threshold", "0.99"]) == 0
    assert "not testable" not in capsys.readouterr().out
    assert main([*args, "--heavy-tail-threshold", "2"]) == 2
    err = capsys.readouterr().err
    assert "--heavy-tail-threshold: expected a number between 0 and 1" in err
    assert len(err.strip().splitlines()) == 1
