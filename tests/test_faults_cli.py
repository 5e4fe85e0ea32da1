"""Fault catalogue of the command line and the files (issue 11, classes 1-6).

Every bad input or fault ends in one line on stderr (``xuqcal COMMAND: error: ...``, exit status
2, no traceback) before any computation, and nothing a user owns is ever lost:

1. data loss: no output replaces an input; ``--overwrite`` replaces only what xuqcal wrote;
2. hangs: ``--workers`` < 1 refused, an unreachable ``--scheduler`` fails fast;
3. tracebacks: bad input files (folders, missing, empty, binary, NetCDF for CSV, duplicated
   columns) and bad cube files give one line;
4. outputs checked before computing (missing or read-only folder, folder as file, existing
   file), and a failed write keeps the old file;
5. files: ``read_csv``, ``open_dataset`` and ``cube.open`` raise errors naming the file;
6. messages name the CLI option; Ctrl-C prints one line (exit 130) and interrupted cube builds
   and extends resume to identical results.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import socket
import time

import numpy as np
import pytest
import xarray as xr
from faults import one_line_error, write_csv

import xuqcal
from xuqcal.cli import commands as cli
from xuqcal.cli import main
from xuqcal.cli.common import format_level
from xuqcal.studies import cube

FAST = ["--n-boot", "200", "--n-mc", "50", "--statistics", "zms,rce", "--no-progress"]
GRID = ["--size", "300,400", "--n-bins", "3", "--nu", "4,6", "--generators", "normal",
        "--n-mc", "30"]


@pytest.fixture
def files(tmp_path):
    """Two small CSV files (train and test) in tmp_path."""
    return {"data": write_csv(tmp_path / "data.csv"),
            "train": write_csv(tmp_path / "train.csv", seed=2)}


# ---------------------------------------------------------------------- class 1: data loss


def _samefile_cases():
    return {
        "validate -o input --overwrite":
            lambda t: ["validate", str(t / "data.csv"), "--E", "E", "--uE", "uE", "-o",
                       str(t / "data.csv"), "--overwrite"],
        "validate -o another spelling of the input":
            lambda t: ["validate", str(t / "data.csv"), "--E", "E", "--uE", "uE", "-o",
                       str(t / "sub" / ".." / "data.csv"), "--overwrite"],
        "validate -o a symbolic link to the input":
            lambda t: ["validate", str(t / "data.csv"), "--E", "E", "--uE", "uE", "-o",
                       str(t / "link.nc"), "--overwrite"],
        "validate -o a hard link to the input":
            lambda t: ["validate", str(t / "data.csv"), "--E", "E", "--uE", "uE", "-o",
                       str(t / "hard.nc"), "--overwrite"],
        "recalibrate -o test input --overwrite":
            lambda t: ["recalibrate", str(t / "train.csv"), str(t / "data.csv"), "--E", "E",
                       "--uE", "uE", "-o", str(t / "data.csv"), "--overwrite"],
        "recalibrate: OUT_recalibrator.nc is the train input":
            lambda t: ["recalibrate", str(t / "o_recalibrator.nc"), str(t / "data.csv"),
                       "--E", "E", "--uE", "uE", "-o", str(t / "o.nc"), "--overwrite"],
        "recalibrate: OUT_evaluation.nc is the --reference input":
            lambda t: ["recalibrate", str(t / "train.csv"), str(t / "data.csv"), "--E", "E",
                       "--uE", "uE", "--reference", str(t / "o_evaluation.nc"), "-o",
                       str(t / "o.nc"), "--overwrite"],
        "report -o the input file":
            lambda t: ["report", str(t / "data.csv"), "--E", "E", "--uE", "uE", "-o",
                       str(t / "data.csv"), "--overwrite"],
    }


@pytest.mark.parametrize("case", list(_samefile_cases()))
def test_class1_an_output_never_replaces_an_input(case, files, tmp_path, capsys, no_compute):
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.nc").symlink_to(files["data"])
    os.link(files["data"], tmp_path / "hard.nc")
    shutil.copy(files["train"], tmp_path / "o_recalibrator.nc")
    shutil.copy(files["train"], tmp_path / "o_evaluation.nc")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    line = one_line_error(capsys, main(_samefile_cases()[case](tmp_path)))
    assert "is also an input file" in line and "-o/--output" in line
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


@pytest.fixture(scope="module")
def first_report(tmp_path_factory):
    """A report folder written by xuqcal (copied by each test that overwrites it)."""
    folder = tmp_path_factory.mktemp("first")
    data = write_csv(folder / "data.csv")
    assert main(["report", str(data), "--E", "E", "--uE", "uE", *FAST, "-o",
                 str(folder / "proj")]) == 0
    return folder


USER_FILES = {
    "a file in figures/": "figures/mine.png",
    "a file in results/": "results/mine.nc",
    "a file in the folder": "notes.txt",
    "a sub-folder of the user": "drafts/v1.txt",
    "the input CSV inside the report folder": "data.csv",
}


@pytest.mark.parametrize("case", list(USER_FILES))
def test_class1_overwrite_replaces_only_what_xuqcal_wrote(case, first_report, tmp_path,
                                                         capsys):
    shutil.copytree(first_report, tmp_path, dirs_exist_ok=True)
    folder = tmp_path / "proj"
    mine = folder / USER_FILES[case]
    mine.parent.mkdir(exist_ok=True)
    if case.startswith("the input"):
        shutil.move(tmp_path / "data.csv", mine)
    else:
        mine.write_bytes(b"precious \x00 user data")
    content = mine.read_bytes()
    old_zeta = (folder / "figures" / "zeta.png").stat().st_mtime_ns
    stale = folder / "figures" / "zscores_old.png"  # xuqcal wrote it in an earlier run
    stale.write_bytes(b"png")
    manifest = xuqcal.io.outputs.read_manifest(folder)
    manifest["figures/zscores_old.png"] = xuqcal.io.outputs.file_digest(stale)
    xuqcal.io.outputs.write_manifest(folder, manifest)
    args = ["report", str(folder / "data.csv" if case.startswith("the input")
                          else first_report / "data.csv"), "--E", "E", "--uE", "uE", *FAST,
            "-o", str(folder)]
    assert main(args) == 2  # without --overwrite: refused
    assert "--overwrite" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert mine.read_bytes() == content
    assert (folder / "figures" / "zeta.png").stat().st_mtime_ns != old_zeta  # replaced
    assert not stale.exists()  # an unchanged file of an earlier run is removed
    assert USER_FILES[case] not in xuqcal.io.outputs.read_manifest(folder)


@pytest.mark.parametrize("name", ["figures/zeta.png", "results/validation.nc", "index.html",
                                  "figures/local_zms_uE.png"])
@pytest.mark.parametrize("how", ["user's own file", "xuqcal's file changed by the user"])
def test_class1_overwrite_refuses_a_file_xuqcal_did_not_write(name, how, first_report,
                                                              tmp_path, capsys, no_compute):
    shutil.copytree(first_report, tmp_path, dirs_exist_ok=True)
    folder = tmp_path / "proj"
    target = folder / name
    if how == "user's own file":
        manifest = xuqcal.io.outputs.read_manifest(folder)
        del manifest[name]
        xuqcal.io.outputs.write_manifest(folder, manifest)
        target.write_bytes(b"mine")
    else:
        target.write_bytes(target.read_bytes() + b" edited")
    content = target.read_bytes()
    line = one_line_error(capsys, main(["report", str(tmp_path / "data.csv"), "--E", "E",
                                         "--uE", "uE", *FAST, "-o", str(folder),
                                         "--overwrite"]), command="report")
    assert str(target) in line and "not written by xuqcal" in line
    assert target.read_bytes() == content


def test_class1_a_manifest_never_reaches_outside_its_folder(first_report, tmp_path):
    shutil.copytree(first_report, tmp_path, dirs_exist_ok=True)
    folder = tmp_path / "proj"
    victim = tmp_path / "victim.txt"
    victim.write_text("not xuqcal's")
    manifest = xuqcal.io.outputs.read_manifest(folder)
    digest = xuqcal.io.outputs.file_digest(victim)
    text = (folder / ".xuqcal-manifest.json").read_text()
    for bad in ("../victim.txt", str(victim), "figures/../../victim.txt"):
        text = text.replace('"files": {', f'"files": {{"{bad}": "{digest}", ', 1)
    (folder / ".xuqcal-manifest.json").write_text(text)
    assert sorted(xuqcal.io.outputs.read_manifest(folder)) == sorted(manifest)
    xuqcal.report.report(xuqcal.read_csv(tmp_path / "data.csv", E="E", uE="uE"), folder,
                         n_boot=200, n_mc=50, statistics=["zms"], overwrite=True)
    assert victim.read_text() == "not xuqcal's"
    with pytest.raises(ValueError, match="not a file name inside the folder"):
        xuqcal.io.outputs.ManagedFolder(folder, overwrite=True).target("../victim.txt")


def test_class1_demo_overwrite_keeps_user_files(tmp_path, capsys):
    out = tmp_path / "d"
    args = ["demo", "--size", "300", *FAST, "-o", str(out)]
    assert main(args) == 0
    (out / "mine.txt").write_text("mine")
    (out / "report_calibrated" / "figures" / "mine.png").write_text("mine")
    assert main(args) == 2  # existing results, no --overwrite
    assert main([*args, "--overwrite"]) == 0
    assert (out / "mine.txt").read_text() == "mine"
    assert (out / "report_calibrated" / "figures" / "mine.png").read_text() == "mine"
    manifest = xuqcal.io.outputs.read_manifest(out)
    assert sorted(manifest) == ["demo_calibrated.nc", "demo_miscalibrated.nc"]
    capsys.readouterr()
    (out / "demo_calibrated.nc").write_text("the user's file now")
    assert "demo_calibrated.nc" in one_line_error(capsys, main([*args, "--overwrite"]))
    assert (out / "demo_calibrated.nc").read_text() == "the user's file now"


# -------------------------------------------------------------------------- class 2: hangs


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("args", [
    ["validate", "{data}", "--E", "E", "--uE", "uE", "--workers", "0"],
    ["validate", "{data}", "--E", "E", "--uE", "uE", "--workers", "-1"],
    ["validate", "{data}", "--E", "E", "--uE", "uE", "--workers", "two"],
    ["report", "{data}", "--E", "E", "--uE", "uE", "-o", "r", "--workers", "0"],
    ["demo", "--workers", "-3"],
    ["cube", "build", *GRID, "-o", "c.nc", "--workers", "0"],
])
def test_class2_workers_below_one_are_refused(args, files, capsys, no_compute):
    line = one_line_error(capsys, main([a.format(data=files["data"]) for a in args]))
    assert ": error: --workers: expected an integer >= 1" in line


@pytest.mark.parametrize("args", [
    ["validate", "{data}", "--E", "E", "--uE", "uE", *FAST],
    ["report", "{data}", "--E", "E", "--uE", "uE", *FAST, "-o", "{tmp}/r"],
    ["demo", "--size", "300", *FAST, "-o", "{tmp}/d"],
    ["cube", "build", *GRID, "-o", "{tmp}/c.nc"],
])
@pytest.mark.parametrize("address", ["tcp://127.0.0.1:{port}", "127.0.0.1:{port}",
                                     "no-port-here"])
def test_class2_unreachable_scheduler_fails_fast(args, address, files, tmp_path, capsys,
                                                 monkeypatch, no_compute):
    address = address.format(port=_closed_port())
    argv = [a.format(data=files["data"], tmp=tmp_path) for a in args]
    start = time.perf_counter()
    with xuqcal.set_options(scheduler_timeout=1.0):
        line = one_line_error(capsys, main([*argv, "--scheduler", address]))
    assert time.perf_counter() - start < 8
    assert "--scheduler" in line and address in line


def test_class2_scheduler_timeout_is_short():
    assert 0 < xuqcal.get_options()["scheduler_timeout"] <= 10


# ------------------------------------------------------ class 3: bad files -> one line error


def _bad_inputs(t):
    t.joinpath("folder").mkdir()
    t.joinpath("empty.csv").write_bytes(b"")
    t.joinpath("header.csv").write_text("E,uE\n")
    t.joinpath("binary.csv").write_bytes(bytes(range(256)) * 4)
    t.joinpath("latin.csv").write_bytes("E,uE,é\n0.1,0.2,1\n".encode("utf-16"))
    t.joinpath("png.csv").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\xfa")
    xuqcal.to_netcdf(xuqcal.synthetic.nig(50, nu=6, seed=0), t / "data.nc")
    t.joinpath("dup.csv").write_text("E,uE,E\n0.1,0.2,0.3\n0.2,0.1,0.4\n")
    t.joinpath("ragged.csv").write_text("E,uE\n0.1,0.2\n0.1,0.2,0.3,0.4\n")
    return {
        "folder": ("folder", "is a folder"),
        "missing": ("missing.csv", "no such file"),
        "empty": ("empty.csv", "is empty"),
        "header only": ("header.csv", "0 rows"),
        "binary": ("binary.csv", "binary file"),
        "utf-16": ("latin.csv", "binary file"),
        "png": ("png.csv", "not a text CSV file"),
        "netcdf as csv": ("data.nc", "is a NetCDF file, not a CSV file"),
        "duplicated column": ("dup.csv", "duplicated column names: E"),
        "ragged rows": ("ragged.csv", "cannot be read as CSV"),
    }


BAD_INPUT = ["folder", "missing", "empty", "header only", "binary", "utf-16", "png",
             "netcdf as csv", "duplicated column", "ragged rows"]


#: ``xuqcal validate`` (issue 13) and ``xuqcal report`` (issue 22) read NetCDF input datasets:
#: a NetCDF file is bad input only where a CSV file is expected (tests/test_cli.py and
#: tests/test_rough_edges_cli.py check validate and report on NetCDF).
BAD_INPUT_CASES = [(command, case)
                   for command in ("validate", "report", "recalibrate-train", "recalibrate-test",
                                   "recalibrate-reference")
                   for case in BAD_INPUT
                   if not (command in ("validate", "report") and case == "netcdf as csv")]


@pytest.mark.parametrize(("command", "case"), BAD_INPUT_CASES)
def test_class3_bad_input_files_give_one_line(command, case, files, tmp_path, capsys,
                                              no_compute):
    name, expected = _bad_inputs(tmp_path)[case]
    bad = str(tmp_path / name)
    cols = ["--E", "E", "--uE", "uE"]
    argv = {
        "validate": ["validate", bad, *cols, *FAST],
        "report": ["report", bad, *cols, *FAST, "-o", str(tmp_path / "r")],
        "recalibrate-train": ["recalibrate", bad, str(files["data"]), *cols, "-o",
                              str(tmp_path / "o.nc")],
        "recalibrate-test": ["recalibrate", str(files["train"]), bad, *cols, "-o",
                             str(tmp_path / "o.nc")],
        "recalibrate-reference": ["recalibrate", str(files["train"]), str(files["data"]),
                                  *cols, "--reference", bad, "-o", str(tmp_path / "o.nc")],
    }[command]
    line = one_line_error(capsys, main(argv), command=command.split("-")[0])
    assert expected in line and name in line


@pytest.fixture(scope="module")
def cube_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cube") / "cube.nc"
    cube.build(["ence"], size=[300], n_bins=[3], nu=[6], generators="normal", n_mc=20,
               path=path)
    return path


def _bad_cubes(t, good):
    data = good.read_bytes()
    t.joinpath("folder.nc").mkdir()
    t.joinpath("empty.nc").write_bytes(b"")
    t.joinpath("truncated.nc").write_bytes(data[: len(data) // 3])
    t.joinpath("corrupted.nc").write_bytes(data[:8] + bytes(len(data) - 8))
    t.joinpath("text.nc").write_text("E,uE\n0.1,0.2\n")
    xuqcal.to_netcdf(xuqcal.synthetic.nig(50, nu=6, seed=0), t / "dataset.nc")
    no_grid = cube.open(good)
    del no_grid.attrs["grid"]
    xuqcal.to_netcdf(no_grid, t / "no_grid.nc")
    bad_grid = cube.open(good)
    bad_grid.attrs["grid"] = "{not json"
    xuqcal.to_netcdf(bad_grid, t / "bad_grid.nc")
    no_mean = cube.open(good).drop_vars("mean")
    xuqcal.to_netcdf(no_mean, t / "no_mean.nc")
    return {
        "missing": ("missing.nc", "no such file"),
        "folder": ("folder.nc", "is a folder"),
        "empty": ("empty.nc", "is empty"),
        "truncated": ("truncated.nc", "truncated or corrupted"),
        "corrupted": ("corrupted.nc", "truncated or corrupted"),
        "text": ("text.nc", "is not a NetCDF file"),
        "a dataset, not a cube": ("dataset.nc", "is not an xuqcal sensitivity cube"),
        "cube without grid": ("no_grid.nc", "it has no grid"),
        "cube with a broken grid": ("bad_grid.nc", "grid attribute is not valid"),
        "cube without mean": ("no_mean.nc", "it has no mean"),
    }


CUBE_CASES = ["missing", "folder", "empty", "truncated", "corrupted", "text",
              "a dataset, not a cube", "cube without grid", "cube with a broken grid",
              "cube without mean"]


@pytest.mark.parametrize("action", ["info", "fit", "extend"])
@pytest.mark.parametrize("case", CUBE_CASES)
def test_class3_bad_cube_files_give_one_line(action, case, cube_file, tmp_path, capsys,
                                             no_compute):
    name, expected = _bad_cubes(tmp_path, cube_file)[case]
    argv = ["cube", action, str(tmp_path / name)]
    if action == "extend":
        argv += ["--nu", "12", "--no-progress"]
    line = one_line_error(capsys, main(argv), command=f"cube {action}")
    assert expected in line and name in line


@pytest.mark.parametrize("case", CUBE_CASES)
def test_class3_bad_files_raise_clear_errors_in_the_api(case, cube_file, tmp_path):
    name, expected = _bad_cubes(tmp_path, cube_file)[case]
    with pytest.raises((ValueError, FileNotFoundError, IsADirectoryError), match=expected):
        cube.open(tmp_path / name)
    if case in ("missing", "folder", "empty", "truncated", "corrupted", "text"):
        with pytest.raises((ValueError, FileNotFoundError, IsADirectoryError), match=expected):
            xuqcal.open_dataset(tmp_path / name)


@pytest.mark.parametrize("case", BAD_INPUT)
def test_class5_read_csv_names_the_file_and_the_problem(case, tmp_path):
    name, expected = _bad_inputs(tmp_path)[case]
    kinds = {"folder": IsADirectoryError, "missing": FileNotFoundError}
    with pytest.raises(kinds.get(case, ValueError), match=expected) as info:
        xuqcal.read_csv(tmp_path / name, E="E", uE="uE")
    assert name in str(info.value)


def test_class5_read_csv_keeps_legitimate_dotted_names(tmp_path):
    path = tmp_path / "dots.csv"
    path.write_text("E,E.1,uE\n0.1,0.5,0.2\n0.2,0.6,0.1\n")  # a real column named E.1
    ds = xuqcal.read_csv(path, E="E.1", uE="uE")
    np.testing.assert_array_equal(ds.E.values, [0.5, 0.6])
    with gzip.open(tmp_path / "data.csv.gz", "wt") as handle:  # compressed: left to pandas
        handle.write("E,uE\n0.1,0.2\n0.2,0.1\n")
    assert xuqcal.read_csv(tmp_path / "data.csv.gz", E="E", uE="uE").sizes["sample"] == 2
    path.write_text("E;uE;E\n0.1;0.2;0.3\n")
    with pytest.raises(ValueError, match="duplicated column names: E"):
        xuqcal.read_csv(path, E="E", uE="uE", sep=";")


# -------------------------------------------- class 4: outputs checked before any computation


def _output_cases():
    cols = ["--E", "E", "--uE", "uE"]
    return {
        "validate: missing folder": (
            lambda t: ["validate", str(t / "data.csv"), *cols, "-o", str(t / "no" / "x.nc")],
            "the folder", "does not exist"),
        "validate: output is a folder": (
            lambda t: ["validate", str(t / "data.csv"), *cols, "-o", str(t / "dir"),
                       "--overwrite"], "is a folder", ""),
        "validate: existing output": (
            lambda t: ["validate", str(t / "data.csv"), *cols, "-o", str(t / "old.nc")],
            "already exists", "--overwrite"),
        "validate: folder is a file": (
            lambda t: ["validate", str(t / "data.csv"), *cols, "-o",
                       str(t / "old.nc" / "x.nc")], "is a file, not a folder", ""),
        "report: missing parent folder": (
            lambda t: ["report", str(t / "data.csv"), *cols, "-o", str(t / "no" / "r")],
            "the folder", "does not exist"),
        "report: output is a file": (
            lambda t: ["report", str(t / "data.csv"), *cols, "-o", str(t / "old.nc"),
                       "--overwrite"], "is a file, not a folder", ""),
        "demo: missing parent folder": (
            lambda t: ["demo", "--size", "300", "-o", str(t / "no" / "d")],
            "the folder", "does not exist"),
        "demo: output is a file": (
            lambda t: ["demo", "--size", "300", "-o", str(t / "old.nc")],
            "is a file, not a folder", ""),
        "cube build: missing folder (no longer created)": (
            lambda t: ["cube", "build", *GRID, "-o", str(t / "no" / "c.nc")],
            "the folder", "does not exist"),
        "cube build: output is a folder": (
            lambda t: ["cube", "build", *GRID, "-o", str(t / "dir"), "--overwrite"],
            "is a folder", ""),
        "cube build: existing output": (
            lambda t: ["cube", "build", *GRID, "-o", str(t / "old.nc")],
            "already exists", "--overwrite"),
        "recalibrate: missing folder": (
            lambda t: ["recalibrate", str(t / "data.csv"), str(t / "data.csv"), *cols, "-o",
                       str(t / "no" / "o.nc")], "the folder", "does not exist"),
        "recalibrate: one of the three outputs exists": (
            lambda t: ["recalibrate", str(t / "data.csv"), str(t / "data.csv"), *cols, "-o",
                       str(t / "o.nc")], "o_recalibrator.nc already exists", "--overwrite"),
        "recalibrate: one of the three outputs is a folder": (
            lambda t: ["recalibrate", str(t / "data.csv"), str(t / "data.csv"), *cols, "-o",
                       str(t / "x.nc"), "--overwrite"], "x_evaluation.nc is a folder", ""),
    }


@pytest.mark.parametrize("case", list(_output_cases()))
def test_class4_outputs_are_checked_before_any_computation(case, files, tmp_path, capsys,
                                                           no_compute):
    (tmp_path / "dir").mkdir()
    (tmp_path / "x_evaluation.nc").mkdir()
    (tmp_path / "old.nc").write_text("old")
    (tmp_path / "o_recalibrator.nc").write_text("old")
    make, *expected = _output_cases()[case]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    line = one_line_error(capsys, main(make(tmp_path)))  # exit 1 if anything was computed
    assert "-o/--output" in line
    for text in expected:
        assert text in line
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing created
    assert (tmp_path / "old.nc").read_text() == "old"


@pytest.mark.parametrize("how", ["chmod", "access"])
@pytest.mark.parametrize("command", ["validate", "report", "cube", "recalibrate", "demo"])
def test_class4_read_only_folder_is_refused_before_computing(command, how, files, tmp_path,
                                                            capsys, monkeypatch, no_compute):
    if how == "chmod" and (os.name != "posix" or os.geteuid() == 0):
        pytest.skip("needs POSIX permissions and a non-root user (root writes anywhere)")
    locked = tmp_path / "locked"
    if how == "access":  # as root, a folder without write permission is still writable
        access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kwargs: False
                            if os.path.realpath(path) == str(locked.resolve())
                            else access(path, mode, **kwargs))
    locked.mkdir()
    cols = ["--E", "E", "--uE", "uE"]
    argv = {"validate": ["validate", str(files["data"]), *cols, "-o", str(locked / "x.nc")],
            "report": ["report", str(files["data"]), *cols, "-o", str(locked / "r")],
            "cube": ["cube", "build", *GRID, "-o", str(locked / "c.nc")],
            "recalibrate": ["recalibrate", str(files["train"]), str(files["data"]), *cols,
                            "-o", str(locked / "o.nc")],
            "demo": ["demo", "--size", "300", "-o", str(locked / "d")]}[command]
    locked.chmod(0o500)
    try:
        line = one_line_error(capsys, main(argv))
    finally:
        locked.chmod(0o700)
    assert "is not writable" in line and str(locked) in line
    assert list(locked.iterdir()) == []


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EIO, errno.EDQUOT])
def test_class4_failed_write_is_one_line_and_keeps_the_old_file(error, files, tmp_path, capsys,
                                                                monkeypatch):
    out = tmp_path / "out.nc"
    out.write_text("old result")

    def full_disk(self, path, *args, **kwargs):
        with open(path, "wb") as handle:  # a partial temporary file, then the failure
            handle.write(b"\x89HDF partial")
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(xr.Dataset, "to_netcdf", full_disk)
    line = one_line_error(capsys, main(["validate", str(files["data"]), "--E", "E", "--uE",
                                         "uE", *FAST, "-o", str(out), "--overwrite"]))
    assert f"cannot write {out}" in line and os.strerror(error) in line
    assert out.read_text() == "old result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "out.nc", "train.csv"]


# ---------------------------------------------------------------------- class 6: messages


@pytest.mark.parametrize(("args", "option"), [
    (["validate", "{data}", "--E", "E", "--uE", "uE", "--n-boot", "1"], "--n-boot"),
    (["validate", "{data}", "--E", "E", "--uE", "uE", "--n-mc", "1"], "--n-mc"),
    (["validate", "{data}", "--E", "E", "--uE", "uE", "--seed", "-1"], "--seed"),
    (["validate", "{data}", "--E", "E", "--uE", "uE", "--seed", str(2**70)], "--seed"),
    (["validate", "{data}", "--E", "E", "--uE", "uE", "--level", "1.5"], "--level"),
    (["validate", "{data}", "--E", "E", "--uE", "uE", "--n-bins", "0"], "--n-bins"),
    (["validate", "{data}", "--E", "E", "--uE", "uE", "--known-generator", "gauss"],
     "--known-generator"),
    (["validate", "{data}", "--E", "E - nope", "--uE", "uE"], "--E"),
    (["validate", "{data}", "--E", "E", "--uE", "uE", "--where", "E"], "--where"),
    (["report", "{data}", "--E", "E", "--uE", "uE", "--n-mc", "1", "-o", "{tmp}/r"],
     "--n-mc"),
    (["report", "{data}", "--E", "E", "--uE", "uE", "--features", "nope", "-o", "{tmp}/r"],
     "--features"),
    (["demo", "--n-boot", "1", "-o", "{tmp}/d"], "--n-boot"),
    (["cube", "build", "--size", "300", "--n-bins", "3", "--nu", "0", "-o", "{tmp}/c.nc"],
     "--nu"),
    (["cube", "build", "--size", "1", "--n-bins", "3", "--nu", "6", "-o", "{tmp}/c.nc"],
     "--size"),
    (["cube", "build", "--size", "300", "--n-bins", "0", "--nu", "6", "-o", "{tmp}/c.nc"],
     "--n-bins"),
    (["cube", "build", *GRID[:-2], "--n-mc", "1", "-o", "{tmp}/c.nc"], "--n-mc"),
    (["cube", "build", *GRID, "--seed", "-5", "-o", "{tmp}/c.nc"], "--seed"),
    (["recalibrate", "{train}", "{data}", "--E", "E", "--uE", "uE", "--n-bins", "0",
      "-o", "{tmp}/o.nc"], "--n-bins"),
    (["recalibrate", "{train}", "{data}", "--E", "E", "--uE", "uE", "--by", "nope",
      "-o", "{tmp}/o.nc"], "--by"),
    (["recalibrate", "{train}", "{data}", "--E", "E", "--uE", "uE", "--method",
      "temperature", "--n-bins-scores", "0", "-o", "{tmp}/o.nc"], "--n-bins-scores"),
])
def test_class6_errors_name_the_cli_option(args, option, files, tmp_path, capsys):
    argv = [a.format(data=files["data"], train=files["train"], tmp=tmp_path) for a in args]
    line = one_line_error(capsys, main([*argv, "--no-progress"] if argv[0] != "recalibrate"
                                        else argv))
    message = line.split(": error: ", 1)[1]
    assert message.startswith((f"{option}: ", f"{option} ")), line


@pytest.mark.parametrize(("level", "printed"), [(0.9995, "BCa 99.95 % intervals"),
                                                (0.95, "BCa 95 % intervals"),
                                                (0.6827, "BCa 68.27 % intervals")])
def test_class6_level_is_printed_with_its_digits(level, printed, files, capsys):
    n_boot = "4000" if level > 0.99 else "200"
    assert main(["validate", str(files["data"]), "--E", "E", "--uE", "uE", "--statistics",
                 "zms", "--n-mc", "50", "--no-progress", "--n-boot", n_boot, "--level",
                 str(level)]) == 0
    out = capsys.readouterr().out
    assert printed in out and "100%" not in out and "100 %" not in out
    assert format_level(0.999999) == "99.9999 %"


def _raise(error):
    def fail(*args, **kwargs):
        raise error
    return fail


@pytest.mark.parametrize(("fail", "kind", "status", "expected"), [
    (_raise(ZeroDivisionError("float division by zero")), ZeroDivisionError, 1,
     "internal error (ZeroDivisionError"),
    (_raise(RuntimeError("boom")), RuntimeError, 1, "rerun with --debug"),
    (lambda *a, **k: len(None), TypeError, 1, "internal error (TypeError"),
    (lambda *a, **k: xuqcal.io.from_dataframe(None, E="E", uE="uE"), TypeError, 2,
     "error: expected a pandas.DataFrame"),
    (_raise(KeyboardInterrupt()), KeyboardInterrupt, 130, "xuqcal validate: interrupted"),
    (_raise(PermissionError(13, "Permission denied")), PermissionError, 2,
     "Permission denied"),
    (_raise(UnicodeDecodeError("utf-8", b"\x89", 0, 1, "invalid start byte")),
     UnicodeDecodeError, 2, "utf-8"),
    (_raise(ValueError("invalid input data (2 problems):\n  E: a\n  uE: b\nhint: c")),
     ValueError, 2, "invalid input data (2 problems): E: a; uE: b; hint: c"),
])
def test_class6_one_line_for_every_error_and_debug_shows_the_traceback(
        fail, kind, status, expected, files, capsys, monkeypatch):
    monkeypatch.setattr(cli, "validate", fail)
    argv = ["validate", str(files["data"]), "--E", "E", "--uE", "uE", *FAST]
    assert expected in one_line_error(capsys, main(argv), status, command="validate")
    for debug in (["--debug", *argv], [*argv, "--debug"]):
        with pytest.raises(kind):
            main(debug)


_COMPUTE_CELL = cube._compute_cell


def _count_cells(monkeypatch, stop_after=None):
    computed = []
    original = _COMPUTE_CELL

    def counting(*args):
        if stop_after is not None and len(computed) == stop_after:
            raise KeyboardInterrupt
        computed.append(args[-1])
        return original(*args)

    monkeypatch.setattr(cube, "_compute_cell", counting)
    return computed


@pytest.mark.parametrize("stop_after", [0, 1, 3])
def test_class6_interrupted_cube_build_prints_one_line_and_resumes(stop_after, tmp_path,
                                                                   capsys, monkeypatch):
    path = tmp_path / "c.nc"
    argv = ["cube", "build", *GRID, "-o", str(path), "--no-progress"]
    _count_cells(monkeypatch, stop_after)
    line = one_line_error(capsys, main(argv), 130, command="cube build")
    assert line == (f"xuqcal cube build: interrupted: {stop_after} of 4 cells saved; rerun the "
                    "same command to resume")
    computed = _count_cells(monkeypatch)
    assert main(argv) == 0
    assert len(computed) == 4 - stop_after
    full = cube.build(["ence", "zmse"], size=[300, 400], n_bins=[3], nu=[4, 6],
                      generators="normal", n_mc=30).compute()
    summaries = list(cube.SUMMARIES)
    xr.testing.assert_identical(cube.open(path)[summaries].drop_attrs(deep=False),
                                full[summaries].drop_attrs(deep=False))


@pytest.mark.parametrize(("dim", "values", "new_cells"), [
    ("nu", [8.0, 12.0], 4), ("size", [500], 2), ("n_bins", [5], 4),
    ("generator", ["t6", "uniform"], 8),
])
def test_class6_interrupted_extend_resumes_to_the_same_cube(dim, values, new_cells, tmp_path,
                                                            monkeypatch):
    grid = {"size": [300, 400], "n_bins": [3], "nu": [4.0, 6.0], "generators": ["normal"],
            "n_mc": 30}
    path, reference = tmp_path / "c.nc", tmp_path / "uninterrupted.nc"
    cube.build(["ence", "zms"], **grid, path=path)
    shutil.copy(path, reference)
    expected = cube.extend(reference, **{dim: values})

    interrupted = _count_cells(monkeypatch, stop_after=1)
    with pytest.raises(KeyboardInterrupt):
        cube.extend(path, **{dim: values})
    assert len(interrupted) == 1 and cube.checkpoint_count(path, "extend") == 1
    assert cube.open(path)[dim].size == len(grid[dim] if dim != "generator" else ["normal"])
    computed = _count_cells(monkeypatch)
    resumed = cube.extend(path, **{dim: values})
    assert len(computed) == new_cells - 1  # the saved cell is not computed again
    assert not (tmp_path / "c.nc.extend.partial").exists()
    summaries = list(cube.SUMMARIES)
    for result in (resumed, cube.open(path)):
        xr.testing.assert_identical(result[summaries].drop_attrs(deep=False),
                                    expected[summaries].drop_attrs(deep=False))
    assert cube.open(path).attrs["grid"] == cube.open(reference).attrs["grid"]


def test_class6_interrupted_cube_extend_command_prints_one_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "c.nc"
    assert main(["cube", "build", *GRID, "-o", str(path), "--no-progress"]) == 0
    capsys.readouterr()
    _count_cells(monkeypatch, stop_after=1)
    line = one_line_error(capsys, main(["cube", "extend", str(path), "--nu", "8",
                                         "--no-progress"]), 130, command="cube extend")
    assert line.endswith("interrupted: 1 of 2 new cells saved; rerun the same command to "
                         "resume")
    _count_cells(monkeypatch)
    assert main(["cube", "extend", str(path), "--nu", "8", "--no-progress"]) == 0
    assert cube.open(path)["nu"].values.tolist() == [4.0, 6.0, 8.0]


# --------------------------------------------- more cases of each class (issue 11, re-checked)


def _more_output_cases():
    """Outputs that must be refused before computing, even with --overwrite (class 1 and 4)."""
    cols = ["--E", "E", "--uE", "uE"]
    return {
        "validate -o a named pipe": (
            lambda t: ["validate", str(t / "data.csv"), *cols, "-o", str(t / "fifo.nc"),
                       "--overwrite"], "is a named pipe, not a regular file"),
        "cube build -o a named pipe": (
            lambda t: ["cube", "build", *GRID, "-o", str(t / "fifo.nc"), "--overwrite"],
            "is a named pipe, not a regular file"),
        "validate -o a read-only file": (
            lambda t: ["validate", str(t / "data.csv"), *cols, "-o", str(t / "ro.nc"),
                       "--overwrite"], "is read-only"),
        "recalibrate -o a read-only file": (
            lambda t: ["recalibrate", str(t / "train.csv"), str(t / "data.csv"), *cols, "-o",
                       str(t / "ro.nc"), "--overwrite"], "is read-only"),
        "cube build -o a read-only file": (
            lambda t: ["cube", "build", *GRID, "-o", str(t / "ro.nc"), "--overwrite"],
            "is read-only"),
        "validate -o ending with /": (
            lambda t: ["validate", str(t / "data.csv"), *cols, "-o", f"{t}/new.nc/"],
            "ends with '/'"),
        "validate -o empty": (
            lambda t: ["validate", str(t / "data.csv"), *cols, "-o", ""], "empty path"),
        "validate -o a name too long": (
            lambda t: ["validate", str(t / "data.csv"), *cols, "-o", str(t / ("x" * 300))],
            "bytes long"),
        "cube build: checkpoint path is a file": (
            lambda t: ["cube", "build", *GRID, "-o", str(t / "c.nc")], "is not a folder"),
        "report: manifest is a folder": (
            lambda t: ["report", str(t / "data.csv"), *cols, "-o", str(t / "rep"),
                       "--overwrite"], "is not a file written by xuqcal"),
    }


@pytest.mark.parametrize("case", list(_more_output_cases()))
def test_class1_4_special_outputs_are_refused_before_computing(case, files, tmp_path, capsys,
                                                               no_compute):
    os.mkfifo(tmp_path / "fifo.nc")
    (tmp_path / "ro.nc").write_text("protected")
    (tmp_path / "ro.nc").chmod(0o444)
    (tmp_path / "c.nc.partial").write_text("mine")
    (tmp_path / "rep" / ".xuqcal-manifest.json").mkdir(parents=True)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    make, expected = _more_output_cases()[case]
    line = one_line_error(capsys, main([*make(tmp_path), "--no-progress"]
                                        if make(tmp_path)[0] != "recalibrate"
                                        else make(tmp_path)))
    assert expected in line and ("-o/--output" in line or "--output" in line), line
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "ro.nc").read_text() == "protected"
    assert (tmp_path / "c.nc.partial").read_text() == "mine"
    with pytest.raises(ValueError, match="named pipe"):  # the API too: never replace a pipe
        xuqcal.to_netcdf(xuqcal.synthetic.nig(10, nu=6, seed=0), tmp_path / "fifo.nc",
                         overwrite=True)


def _more_bad_inputs(t):
    os.mkfifo(t / "fifo.csv")
    (t / "semi.csv").write_text("E;uE\n0.1;0.2\n0.3;0.4\n")
    (t / "comment.csv").write_text("# a comment\nE,uE\n0.1,0.2\n")
    (t / "bool.csv").write_text("E,uE\n" + "True,0.2\nFalse,0.3\n" * 5)
    return {
        "a named pipe nobody writes to (was a hang)": ("fifo.csv", "nothing written to it"),
        "a character device": ("/dev/zero", "is a character device"),
        "semicolon-separated": ("semi.csv", "unknown name 'E'"),
        "a comment line before the header": ("comment.csv", "unknown name 'E'"),
        "a boolean column as E": ("bool.csv", "true/false values"),
    }


@pytest.mark.parametrize("command", ["validate", "report", "recalibrate"])
@pytest.mark.parametrize("case", ["a named pipe nobody writes to (was a hang)",
                                  "a character device", "semicolon-separated",
                                  "a comment line before the header", "a boolean column as E"])
def test_class2_3_more_bad_input_files(command, case, files, tmp_path, capsys, no_compute):
    name, expected = _more_bad_inputs(tmp_path)[case]
    bad = name if name.startswith("/") else str(tmp_path / name)
    cols = ["--E", "E", "--uE", "uE"]
    argv = {"validate": ["validate", bad, *cols, *FAST],
            "report": ["report", bad, *cols, *FAST, "-o", str(tmp_path / "r")],
            "recalibrate": ["recalibrate", str(files["train"]), bad, *cols, "-o",
                            str(tmp_path / "o.nc")]}[command]
    start = time.perf_counter()
    line = one_line_error(capsys, main(argv), command=command)
    assert expected in line and time.perf_counter() - start < 20
    assert not (tmp_path / "r").exists()


def test_class5_a_pipe_is_read_once(tmp_path):
    """``xuqcal validate <(command)``: the pipe's content is read once (was read three times,
    losing its first bytes), and a duplicated column is still found."""
    read, write = os.pipe()
    os.write(write, b"E,uE\n0.1,0.2\n-0.3,0.4\n0.2,0.3\n")
    os.close(write)
    try:
        ds = xuqcal.read_csv(f"/dev/fd/{read}", E="E", uE="uE")
    finally:
        os.close(read)
    np.testing.assert_array_equal(ds.E.values, [0.1, -0.3, 0.2])


def _resource_cases():
    data = ["validate", "{data}", "--E", "E", "--uE", "uE", "--no-progress"]
    return {
        "--n-boot 10^20 (was MemoryError)": ([*data, "--n-boot", str(10**20)], "--n-boot"),
        "--n-boot 10^12 (was a hang)": ([*data, "--n-boot", str(10**12)], "--n-boot"),
        "--n-mc 10^14 (was MemoryError)": ([*data, "--n-mc", str(10**14)], "--n-mc"),
        "--n-bins 10^10 for zms (was MemoryError)": (
            [*data, "--statistics", "zms", "--n-bins", str(10**10)], "--n-bins"),
        "--n-bins above M / 2 for zms": ([*data, "--statistics", "zms", "--n-bins", "200"],
                                         "--n-bins"),
        "--workers 100000 (was a hang)": ([*data, "--workers", "100000"], "--workers"),
        "--scheduler '' (was silently ignored)": ([*data, "--scheduler", " "], "--scheduler"),
        "demo --size 10^14": (["demo", "--size", str(10**14), "-o", "{tmp}/d"], "--size"),
        "demo --size 2 (report needs 3 points)": (["demo", "--size", "2", "-o", "{tmp}/d"],
                                                  "--size"),
        # without --n-bins, the bins are the recommended number for the points (1 for 10)
        "demo --size 10 --n-bins 20 (20 bins need 40 points)": (
            ["demo", "--size", "10", "--n-bins", "20", "-o", "{tmp}/d"], "--n-bins"),
        "report of 3 rows --n-bins 20 (20 bins need 40 points)": (
            ["report", "{three}", "--E", "E", "--uE", "uE", "--n-bins", "20", "-o", "{tmp}/r"],
            "--n-bins"),
        "cube build --size 10^14": (["cube", "build", "--size", str(10**14), "--n-bins", "3",
                                     "--nu", "6", "-o", "{tmp}/c.nc"], "--size"),
        "cube build --n-mc 10^14": (["cube", "build", *GRID[:-2], "--n-mc", str(10**14), "-o",
                                     "{tmp}/c.nc"], "--n-mc"),
        "recalibrate --n-mc-fv 10^14": (["recalibrate", "{train}", "{data}", "--E", "E", "--uE",
                                         "uE", "--n-mc-fv", str(10**14), "-o", "{tmp}/o.nc"],
                                        "--n-mc-fv"),
        "recalibrate --by E": (["recalibrate", "{train}", "{data}", "--E", "E", "--uE", "uE",
                                "--by", "E", "-o", "{tmp}/o.nc"], "--by"),
        "--E -E (a value starting with '-')": (["validate", "{data}", "--E", "-E", "--uE",
                                                "uE"], "--E"),
        "--where keeping one row names the data": ([*data, "--where", "E == max(E)"],
                                                   "{data} (rows kept by --where"),
    }


@pytest.mark.parametrize("case", list(_resource_cases()))
def test_class2_6_huge_or_meaningless_values_are_refused_up_front(case, files, tmp_path, capsys,
                                                                  no_compute):
    (tmp_path / "three.csv").write_text("E,uE\n0.1,0.2\n-0.3,0.4\n0.2,0.3\n")
    args, option = _resource_cases()[case]
    fill = dict(data=files["data"], train=files["train"], tmp=tmp_path,
                three=tmp_path / "three.csv")
    start = time.perf_counter()
    line = one_line_error(capsys, main([a.format(**fill) for a in args]))
    assert time.perf_counter() - start < 20
    message = line.split(": error: ", 1)[1]
    assert message.startswith(option.format(**fill)), line
    assert not any(p.name in ("d", "r", "c.nc.partial") for p in tmp_path.iterdir())


def test_class6_memory_error_is_one_line(files, capsys, monkeypatch):
    monkeypatch.setattr(cli, "validate", _raise(MemoryError("Unable to allocate 8 TiB")))
    line = one_line_error(capsys, main(["validate", str(files["data"]), "--E", "E", "--uE",
                                         "uE", *FAST]))
    assert "not enough memory (Unable to allocate 8 TiB)" in line


def test_class6_warnings_are_one_line_each(files, capsys):
    assert main(["validate", str(files["data"]), "--E", "E", "--uE", "1 + 0 * uE",
                 "--statistics", "cc,zms", "--n-boot", "200", "--n-mc", "50",
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err and all(line.startswith("xuqcal validate: warning: ")
                       for line in err.strip().splitlines()), err


@pytest.mark.parametrize("fail_at", ["local", "interrupt"])
@pytest.mark.parametrize("existing", [False, True])
def test_class4_a_failed_report_leaves_the_folder_as_it_was(fail_at, existing, first_report,
                                                            tmp_path, capsys, monkeypatch):
    """A report that fails or is interrupted half-way writes nothing (it was a mix of old and
    new files, or a partial new folder)."""
    folder = tmp_path / "proj"
    if existing:
        shutil.copytree(first_report / "proj", folder)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    error = KeyboardInterrupt() if fail_at == "interrupt" else RuntimeError("boom")
    target = {"local": (xuqcal.analysis.local, "reliability"),
              "confidence_curve": (xuqcal.curves, "confidence_curve"),
              "interrupt": (xuqcal.analysis.local, "reliability")}[fail_at]
    monkeypatch.setattr(*target, _raise(error))
    status = main(["report", str(first_report / "data.csv"), "--E", "E", "--uE", "uE", *FAST,
                   "-o", str(folder), *(["--overwrite"] if existing else [])])
    assert status == (130 if fail_at == "interrupt" else 1)
    capsys.readouterr()
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert folder.exists() == existing
    assert not list(tmp_path.rglob(".xuqcal-staging-*"))


def _more_cube_cases(t, good):
    base = cube.open(good)
    variants = {"n_mc text": ("n_mc", "abc"), "negative seed": ("seed", -3)}
    for name, (key, value) in variants.items():
        c = base.copy()
        c.attrs[key] = value
        xuqcal.to_netcdf(c, t / f"{name}.nc")
    c = base.copy()
    c.attrs["grid"] = c.attrs["grid"].replace('"ence"', '"nope"')
    xuqcal.to_netcdf(c, t / "unknown statistic.nc")
    c = base.copy()
    grid = json.loads(c.attrs["grid"])
    del grid["n_bins"]
    c.attrs["grid"] = json.dumps(grid)
    xuqcal.to_netcdf(c, t / "no n_bins in grid.nc")
    shutil.copy(good, t / "read-only.nc")
    (t / "read-only.nc").chmod(0o444)
    return {"n_mc text": "n_mc attribute 'abc'", "negative seed": "seed attribute -3",
            "unknown statistic": "statistics that xuqcal does not know",
            "no n_bins in grid": "its grid has no n_bins", "read-only": "is read-only"}


@pytest.mark.parametrize("action", ["info", "extend"])
@pytest.mark.parametrize("case", ["n_mc text", "negative seed", "unknown statistic",
                                  "no n_bins in grid", "read-only"])
def test_class3_more_wrong_cubes(action, case, cube_file, tmp_path, capsys, no_compute):
    expected = _more_cube_cases(tmp_path, cube_file)[case]
    if case == "read-only" and action == "info":
        assert main(["cube", "info", str(tmp_path / f"{case}.nc")]) == 0  # reading is fine
        return
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = ["cube", action, str(tmp_path / f"{case}.nc")]
    if action == "extend":
        argv += ["--nu", "12", "--no-progress"]
    line = one_line_error(capsys, main(argv), command=f"cube {action}")
    assert expected in line and f"{case}.nc" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no checkpoint folder left


@pytest.mark.parametrize(("args", "expected"), [
    (["--nu", "6"], "--nu: the cube already has nu = 6.0"),
    (["--generators", "normal"], "--generators: the cube already has generator = normal"),
])
def test_class6_extend_names_the_option(args, expected, cube_file, tmp_path, capsys):
    path = shutil.copy(cube_file, tmp_path / "c.nc")
    line = one_line_error(capsys, main(["cube", "extend", str(path), *args, "--no-progress"]))
    assert expected in line


def test_class1_cube_checkpoints_removal_keeps_user_files(tmp_path):
    path = tmp_path / "c.nc"
    partial = tmp_path / "c.nc.partial"
    partial.mkdir()
    (partial / "notes.txt").write_text("mine")
    cube.build(["ence"], size=[300], n_bins=[3], nu=[6], generators="normal", n_mc=20,
               path=path)
    assert (partial / "notes.txt").read_text() == "mine"
    assert [p.name for p in partial.iterdir()] == ["notes.txt"]
