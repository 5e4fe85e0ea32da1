"""Fault catalogue, issue 23: concurrent writers, names printed to a terminal, wrong files.

1. concurrency: two writers of one cube (``cube extend``, ``cube build``) never lose an update:
   the second is refused at once, naming the process that holds the cube's lock
   (:mod:`xuqcal.io.locks`); real processes, under time limits; so are the second writers of
   every other output (``validate -o``, ``report``, ``demo``, ``recalibrate``,
   :func:`xuqcal.to_netcdf`), before any computation, with the first one's output intact and
   no lock file left; the lock is re-entrant in its thread;
2. terminal output: file names with escape sequences are printed escaped
   (:func:`xuqcal.cli.terminal.escape`), in titles, ``written:`` lines and errors;
3. wrong files: an empty ``.nc``, a ``.nc`` without the NetCDF signature (all zeros, a
   truncated header), a folder without Zarr metadata, an unreadable file and a CSV file with a
   NUL tail each get one line saying what is wrong with the file, not ``--E, --uE: required
   for a CSV file`` (and no MemoryError).
"""

from __future__ import annotations

import builtins
import contextlib
import os
import subprocess
import sys
import threading
import time

import pytest
import xarray as xr
from faults import one_line_error, write_csv

import xuqcal
from xuqcal.cli import inputs as cli_inputs
from xuqcal.cli import main
from xuqcal.cli import recalibrate as cli_recalibrate
from xuqcal.cli.terminal import escape
from xuqcal.io import locks, outputs
from xuqcal.io import netcdf as io_netcdf
from xuqcal.studies import cube

FAST = ["--n-boot", "200", "--n-mc", "50", "--statistics", "zms,rce", "--no-progress"]
TIMEOUT = 240


@pytest.fixture
def cube_file(tmp_path):
    path = tmp_path / "cube.nc"
    cube.build(["ence"], size=[300], n_bins=[3], nu=[6], generators="normal", n_mc=400,
               path=path)
    return path


# ------------------------------------------------------------------------ 1. concurrency


def _in_another_thread(function):
    """What ``function()`` raised in another thread (a second writer: the lock is re-entrant
    in the thread that holds it, and refuses other threads as it refuses other processes)."""
    raised = []

    def run():
        try:
            function()
        except BaseException as error:  # handed to the test
            raised.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    return raised[0] if raised else None


def _lock_once(path, what, **kwargs):
    with locks.locked(path, what, **kwargs):
        pass


def test_lock_refuses_a_second_writer_and_is_removed_after(tmp_path):
    out = tmp_path / "out.nc"
    with locks.locked(out, "xuqcal cube extend"):
        assert locks.lock_path(out).exists()
        start = time.monotonic()
        refused = _in_another_thread(lambda: _lock_once(out, "xuqcal cube build"))
        assert isinstance(refused, locks.FileInUseError)
        assert time.monotonic() - start < 2  # at once, no wait
        assert str(refused).startswith(
            f"{out} is in use by process {os.getpid()} (xuqcal cube extend, since ")
        assert "wait for it to finish" in str(refused)
    assert not locks.lock_path(out).exists()
    with locks.locked(out, "again"):  # free again
        pass


def test_lock_wait_is_bounded(tmp_path):
    out = tmp_path / "out.nc"
    with locks.locked(out, "first"):
        start = time.monotonic()
        refused = _in_another_thread(lambda: _lock_once(out, "second", timeout=0.5))
        assert isinstance(refused, locks.FileInUseError)
        assert 0.4 < time.monotonic() - start < 5


def test_lock_file_of_a_dead_process_is_taken_over(tmp_path):
    out = tmp_path / "out.nc"
    locks.lock_path(out).write_text("999999999\nxuqcal cube extend\nsince long ago\n")
    with locks.locked(out, "xuqcal cube extend"):
        assert locks.lock_path(out).read_text().startswith(f"{os.getpid()}\n")
    assert not locks.lock_path(out).exists()


def test_lock_in_a_folder_that_cannot_hold_it_is_skipped(tmp_path):
    with locks.locked(tmp_path / "missing" / "out.nc", "x"):  # the write fails later anyway
        pass


HOLDER = """
import sys, time
from xuqcal.io import locks
with locks.locked(sys.argv[1], "xuqcal cube extend"):
    print("locked", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def holder_process(cube_file):
    """Another process holding the lock of the cube (as a running ``cube extend`` does)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(cube_file)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_extend_and_build_refused_while_another_process_writes_the_cube(
        cube_file, holder_process, tmp_path, capsys, no_compute):
    before = cube_file.read_bytes()
    status = main(["cube", "extend", str(cube_file), "--size", "500", "--no-progress"])
    line = one_line_error(capsys, status, command="cube extend")
    assert line == (f"xuqcal cube extend: error: {cube_file} is in use by process "
                    f"{holder_process.pid} (xuqcal cube extend, since "
                    f"{line.split('since ')[1].split(')')[0]}); wait for it to finish (or stop "
                    "it), then run this again")
    with pytest.raises(locks.FileInUseError, match=f"process {holder_process.pid}"):
        cube.extend(cube_file, nu=[12])
    status = main(["cube", "build", "--statistics", "ence", "--size", "300", "--n-bins", "3",
                   "--nu", "6", "--generators", "normal", "--n-mc", "30", "-o",
                   str(cube_file), "--overwrite", "--no-progress"])
    assert "is in use by process" in one_line_error(capsys, status, command="cube build")
    assert cube_file.read_bytes() == before  # untouched
    assert not cube._extend_dir(cube_file).exists() and not cube._partial_dir(
        cube_file).exists()


def test_extend_after_the_holder_was_killed(cube_file, holder_process):
    holder_process.kill()  # kill -9: the kernel releases the lock, the lock file stays
    holder_process.wait(timeout=30)
    assert locks.lock_path(cube_file).exists()
    extended = cube.extend(cube_file, size=[500])
    assert extended["size"].values.tolist() == [300, 500]
    assert not locks.lock_path(cube_file).exists()


def test_two_concurrent_extends_lose_no_update(cube_file):
    """Two ``xuqcal cube extend`` of one cube at once: each either extends it or is refused
    naming the other; the cube holds every extension that reported success."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    procs = {size: subprocess.Popen(
        [sys.executable, "-m", "xuqcal.cli", "cube", "extend", str(cube_file), "--size",
         str(size), "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env) for size in (500, 600)}
    results = {}
    try:
        for size, proc in procs.items():
            out, err = proc.communicate(timeout=TIMEOUT)
            results[size] = (proc.returncode, out, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    for status, _, err in results.values():
        assert status in (0, 2), err
        if status == 2:
            assert "is in use by process" in err and len(err.strip().splitlines()) == 1, err
    succeeded = [size for size, (status, _, _) in results.items() if status == 0]
    assert succeeded
    sizes = cube.open(cube_file)["size"].values.tolist()
    assert set(sizes) == {300, *succeeded}
    assert not locks.lock_path(cube_file).exists()


def test_lock_is_reentrant_in_its_thread_only(tmp_path):
    out = tmp_path / "out.nc"
    with locks.locked(out, "xuqcal validate", option="-o/--output"):
        with locks.locked(out, "xuqcal.to_netcdf"):  # nested: no deadlock, no refusal
            assert locks.holder(out).startswith(f"process {os.getpid()} (xuqcal validate, ")
        assert locks.lock_path(out).exists()  # still held by the outer one
        refused = _in_another_thread(lambda: _lock_once(out, "another thread"))
        assert isinstance(refused, locks.FileInUseError)
        assert str(refused).startswith(f"{out} is in use by process {os.getpid()} (xuqcal "
                                       "validate, since ")
    assert not locks.lock_path(out).exists()


def test_lock_set_is_taken_in_one_order_and_released_when_refused(tmp_path):
    a, b, c = (tmp_path / f"{name}.nc" for name in "abc")
    with locks.locked(b, "first writer"):
        def second():
            with locks.locked_set([c, b, a], "second writer", option="-o/--output"):
                pass
        refused = _in_another_thread(second)
        assert isinstance(refused, locks.FileInUseError)
        assert str(refused).startswith(f"-o/--output: {b} is in use by process ")
        assert sorted(p.name for p in tmp_path.iterdir()) == [".b.nc.lock"]  # a's released
    with locks.locked_set([c, a, c], "set"):
        assert sorted(p.name for p in tmp_path.iterdir()) == [".a.nc.lock", ".c.nc.lock"]
    assert list(tmp_path.iterdir()) == []


def test_lock_paths_of_folders_and_long_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "..")
    assert locks.lock_path(tmp_path / "report/") == tmp_path / ".report.lock"
    assert locks.lock_path(".") == tmp_path.parent.parent / f".{tmp_path.parent.name}.lock"
    long = tmp_path / ("é" * 120 + ".nc")  # 240 bytes: '.NAME.lock' would exceed 255
    with locks.locked(long, "x"):
        (lock,) = tmp_path.iterdir()
        assert len(os.fsencode(lock.name)) < 255 and locks.is_lock_file(lock)
    assert list(tmp_path.iterdir()) == []


def test_lock_files_are_never_the_content_of_a_folder(tmp_path):
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / ".report_calibrated.lock").write_text("999999999\nxuqcal demo\nsince then\n")
    assert not outputs.has_content(folder)  # a dead demo's lock of its report folder
    (folder / ".mine.lock").write_text("my notes")  # not a lock file of xuqcal
    assert outputs.has_content(folder)
    with outputs.ManagedFolder(tmp_path / "rep", overwrite=False) as managed:
        assert locks.holder(managed.folder).startswith(f"process {os.getpid()} (xuqcal, ")
        assert not any(p.name.endswith(".lock") for p in managed.folder.iterdir())
        managed.write_text("index.html", "<html></html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo", "rep"]


# A process holding the lock of an output until a line arrives on its stdin. It loads
# xuqcal/io/locks.py alone (no numpy or xarray to import: it starts in a few milliseconds).
HOLDER_UNTIL_RELEASED = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("xuqcal_locks", sys.argv[1])
locks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(locks)
with locks.locked(sys.argv[2], sys.argv[3]):
    print("locked", flush=True)
    sys.stdin.readline()
print("released", flush=True)
"""


@contextlib.contextmanager
def held_by_another_process(path, what):
    """Another process holds the lock of ``path`` (as a running ``what`` does) in the block;
    it releases it at the end (and its lock file is gone)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER_UNTIL_RELEASED, locks.__file__,
                             str(path), what], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield proc
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def _in_use(line, command, option, path, proc, what):
    """The line of a second writer refused: the output, its option, the holder."""
    since = line.split("since ")[1].split(")")[0]
    assert line == (f"xuqcal {command}: error: {option}: {escape(path)} is in use by process "
                    f"{proc.pid} ({what}, since {since}); wait for it to finish (or stop it), "
                    "then run this again")


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() if p.is_file() else None
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("overwrite", [False, True])
def test_validate_output_in_use_is_refused(tmp_path, capsys, no_compute, overwrite):
    data = write_csv(tmp_path / "data.csv")
    out = xuqcal.to_netcdf(xuqcal.synthetic.nig(50, nu=6, seed=0), tmp_path / "out.nc")
    before = _snapshot(tmp_path)
    with held_by_another_process(out, "xuqcal validate") as proc:
        status = main(["validate", str(data), "--E", "E", "--uE", "uE", *FAST, "-o", str(out),
                       *(["--overwrite"] if overwrite else [])])
        # refused by the lock before the check that out exists (no race with the first)
        _in_use(one_line_error(capsys, status, command="validate"), "validate", "-o/--output",
                out, proc, "xuqcal validate")
    assert _snapshot(tmp_path) == before  # intact, no temporary or lock file left


def test_report_folder_in_use_is_refused(tmp_path, capsys, no_compute):
    data = write_csv(tmp_path / "data.csv")
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "index.html").write_text("<html>the first writer's report</html>")
    before = _snapshot(tmp_path)
    with held_by_another_process(rep, "xuqcal report") as proc:
        status = main(["report", str(data), "--E", "E", "--uE", "uE", *FAST, "-o", str(rep),
                       "--overwrite"])
        _in_use(one_line_error(capsys, status, command="report"), "report", "-o/--output",
                rep, proc, "xuqcal report")
        # without --overwrite: the lock comes before the check that rep is not empty
        status = main(["report", str(data), "--E", "E", "--uE", "uE", *FAST, "-o", str(rep)])
        assert "is in use by process" in one_line_error(capsys, status, command="report")
        with pytest.raises(locks.FileInUseError, match=f"rep is in use by process {proc.pid}"):
            outputs.ManagedFolder(rep, overwrite=True)
    assert _snapshot(tmp_path) == before


def test_report_api_refused_before_computing(tmp_path, no_compute):
    from xuqcal.report.html import report

    rep = tmp_path / "rep"
    with held_by_another_process(rep, "xuqcal report") as proc, \
            pytest.raises(locks.FileInUseError, match=f"in use by process {proc.pid}"):
        report(xuqcal.synthetic.nig(100, nu=6, seed=0), rep, n_boot=200, n_mc=50)
    assert list(tmp_path.iterdir()) == []  # no folder, no lock file


def test_demo_folder_in_use_is_refused(tmp_path, capsys, no_compute):
    demo = tmp_path / "demo"
    demo.mkdir()
    (demo / "demo_calibrated.nc").write_bytes(b"the first writer's file")
    before = _snapshot(tmp_path)
    with held_by_another_process(demo, "xuqcal demo") as proc:
        status = main(["demo", "--size", "300", *FAST, "-o", str(demo), "--overwrite"])
        _in_use(one_line_error(capsys, status, command="demo"), "demo", "-o/--output", demo,
                proc, "xuqcal demo")
    assert _snapshot(tmp_path) == before


def test_recalibrate_set_in_use_is_refused(tmp_path, capsys, no_compute):
    train = write_csv(tmp_path / "train.csv", seed=1)
    test = write_csv(tmp_path / "test.csv", seed=2)
    out = tmp_path / "out.nc"
    paths = cli_recalibrate.output_paths(out)
    for path in paths.values():
        path.write_bytes(b"the first writer's set")
    before = _snapshot(tmp_path)
    # any file of the set: here the second one (its locks are taken in one order)
    with held_by_another_process(paths["evaluation"], "xuqcal recalibrate") as proc:
        status = main(["recalibrate", str(train), str(test), "--E", "E", "--uE", "uE",
                       "--method", "temperature", "-o", str(out), "--overwrite"])
        _in_use(one_line_error(capsys, status, command="recalibrate"), "recalibrate",
                "-o/--output", paths["evaluation"], proc, "xuqcal recalibrate")
    assert _snapshot(tmp_path) == before


def test_to_netcdf_in_use_is_refused(tmp_path):
    ds = xuqcal.synthetic.nig(50, nu=6, seed=0)
    out = xuqcal.to_netcdf(ds, tmp_path / "out.nc")
    before = _snapshot(tmp_path)
    with held_by_another_process(out, "xuqcal validate") as proc:
        with pytest.raises(locks.FileInUseError) as refused:
            xuqcal.to_netcdf(ds, out, overwrite=True)
        assert str(refused.value).startswith(
            f"{out} is in use by process {proc.pid} (xuqcal validate, since ")
        assert len(str(refused.value).splitlines()) == 1
        with pytest.raises(locks.FileInUseError, match=r"^-o/--output: .*out\.nc is in use"):
            io_netcdf.to_netcdf_set({tmp_path / "z.nc": ds, out: ds}, option="-o/--output")
    assert _snapshot(tmp_path) == before  # z.nc not written either: the set is one
    with locks.locked(out, "xuqcal validate"):  # the CLI's lock, then the API's: re-entrant
        xuqcal.to_netcdf(ds, out, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.nc"]


def test_two_concurrent_validates_of_one_output(tmp_path):
    """Two ``xuqcal validate -o same.nc`` at once: one writes, the other is refused naming it
    (or both write, one after the other); the output is complete either way."""
    data = write_csv(tmp_path / "data.csv", m=200)
    out = tmp_path / "same.nc"
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(xuqcal.__file__)))
    env = dict(os.environ, PYTHONWARNINGS="ignore",  # this xuqcal, not an installed one
               PYTHONPATH=os.pathsep.join(filter(None, [checkout,
                                                         os.environ.get("PYTHONPATH")])))
    argv = [sys.executable, "-m", "xuqcal.cli", "validate", str(data), "--E", "E", "--uE", "uE",
            *FAST, "-o", str(out), "--overwrite"]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(2)]
    results = []
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=TIMEOUT)
            results.append((proc.returncode, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    statuses = sorted(status for status, _ in results)
    assert statuses in ([0, 0], [0, 2]), results
    for status, err in results:
        if status == 2:
            assert len(err.strip().splitlines()) == 1, err
            assert "-o/--output: " in err and "is in use by process" in err, err
            assert "(xuqcal validate, since " in err
    with xr.open_dataset(out) as written:
        assert written.attrs["source"] == str(data) and "zms" in written.statistic.values
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "same.nc"]


# --------------------------------------------------------------------- 2. terminal output


def test_escape_writes_control_characters_as_repr_does():
    assert escape("\x1b[2J\x1b[31mred.csv") == "\\x1b[2J\\x1b[31mred.csv"
    assert escape("a\u202eb\udcff\x07") == "a\\u202eb\\udcff\\x07"
    assert escape("tab\tline\n", lines=True) == "tab\\tline\n"
    assert escape("données é.csv") == "données é.csv"


def test_file_names_with_escape_sequences_are_printed_escaped(tmp_path, capsys):
    data = write_csv(tmp_path / "\x1b[2J\x1b[31mred.csv")
    output = tmp_path / "\x1b]0;title\x07out.nc"
    assert main(["validate", str(data), "--E", "E", "--uE", "uE", *FAST, "-o",
                 str(output)]) == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out + captured.err and "\x07" not in captured.out
    assert f"Validation of {tmp_path}/\\x1b[2J\\x1b[31mred.csv" in captured.out
    assert f"written: {tmp_path}/\\x1b]0;title\\x07out.nc" in captured.out
    assert output.exists()  # the file itself has its real name


@pytest.mark.parametrize("method", ["temperature", "conformal"])
def test_file_names_with_escape_sequences_in_recalibrate_lines(tmp_path, capsys, method):
    train = write_csv(tmp_path / "\x1b[31mtrain.csv", m=300, seed=1)
    test = write_csv(tmp_path / "\x1b[2Jtest.csv", m=300, seed=2)
    out = tmp_path / "\x1b]0;t\x07o"
    assert main(["recalibrate", str(train), str(test), "--E", "E", "--uE", "uE",
                 "--method", method, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\x07" not in printed
    assert f"{tmp_path}/\\x1b[2Jtest.csv" in printed.splitlines()[0]
    assert f"fitted on {tmp_path}/\\x1b[31mtrain.csv" in printed.splitlines()[0]
    assert f"written: {tmp_path}/\\x1b]0;t\\x07o_recalibrator.nc" in printed


def test_file_names_with_escape_sequences_in_errors_and_cube_lines(tmp_path, capsys):
    missing = tmp_path / "\x1b[31mmissing.csv"
    line = one_line_error(capsys, main(["validate", str(missing), "--E", "E", "--uE", "uE",
                                         *FAST]), command="validate")
    assert "\x1b" not in line and "\\x1b[31mmissing.csv: no such file" in line
    output = tmp_path / "\x1b[2Jcube.nc"
    assert main(["cube", "build", "--statistics", "ence", "--size", "300", "--n-bins", "3",
                 "--nu", "6", "--generators", "normal", "--n-mc", "20", "-o", str(output),
                 "--no-progress"]) == 0
    assert main(["cube", "extend", str(output), "--nu", "12", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "written: " + str(tmp_path) + "/\\x1b[2Jcube.nc" in out
    assert "extended " + str(tmp_path) + "/\\x1b[2Jcube.nc along nu" in out


# ---------------------------------------------------------------------- 3. wrong files


def _wrong_files(t):
    t.joinpath("empty.nc").write_bytes(b"")
    t.joinpath("zeros.nc").write_bytes(bytes(64 * 1024))
    t.joinpath("header.nc").write_bytes(b"\x89HD")
    good = xuqcal.to_netcdf(xuqcal.synthetic.nig(50, nu=6, seed=0), t / "good.nc")
    t.joinpath("cut.nc").write_bytes(good.read_bytes()[:100])
    store = t / "store"
    (store / "E").mkdir(parents=True)
    (store / "E" / "0").write_bytes(b"\x01\x02")
    t.joinpath("bare.zarr").mkdir()
    t.joinpath("folder.nc").mkdir()
    t.joinpath("text.nc").write_text("E,uE\n0.1,0.2\n")
    t.joinpath("nul.csv").write_bytes(b"E,uE\n\x00\x00")
    return {
        "empty nc": ("empty.nc", "empty.nc is empty (0 bytes): not a CSV file, a NetCDF "
                     "input dataset or a Zarr store"),
        "all zeros nc": ("zeros.nc", "zeros.nc is not a NetCDF file (NetCDF-3 or "
                         "NetCDF-4/HDF5): bad signature (it starts with 00 00 00 00 00 00 00 "
                         "00, not with CDF or \\x89HDF)"),
        "truncated signature": ("header.nc", "header.nc is not a NetCDF file (NetCDF-3 or "
                                "NetCDF-4/HDF5): bad signature (it starts with 89 48 44,"),
        "truncated header": ("cut.nc", "cut.nc cannot be read: it is truncated or corrupted"),
        "folder without zarr markers": ("store", "store is a folder, not a CSV file or a "
                                        "NetCDF file; nor is it a Zarr store: it holds none "
                                        "of .zgroup, .zarray, .zattrs, .zmetadata, "
                                        "zarr.json"),
        "zarr folder without markers": ("bare.zarr", "bare.zarr is not a Zarr store: the "
                                        "folder holds none of .zgroup"),
        "folder named nc": ("folder.nc", "folder.nc is a folder, not a CSV file"),
        "text named nc": ("text.nc", "--E, --uE: required for a CSV file (a column name or "
                          "an expression over columns); "),
        "binary csv": ("nul.csv", "nul.csv is a binary file, not a text CSV file (a NUL "
                       "byte on line 2, byte 5)"),
    }


WRONG = ["empty nc", "all zeros nc", "truncated signature", "truncated header",
         "folder without zarr markers", "zarr folder without markers", "folder named nc",
         "text named nc", "binary csv"]


@pytest.mark.parametrize("command", ["validate", "report"])
@pytest.mark.parametrize("case", WRONG)
def test_wrong_files_say_what_is_wrong(case, command, tmp_path, capsys, no_compute):
    name, expected = _wrong_files(tmp_path)[case]
    argv = [command, str(tmp_path / name), *FAST]
    if command == "report":
        argv += ["-o", str(tmp_path / "rep")]
    line = one_line_error(capsys, main(argv), command=command)
    assert expected in line, line
    if case == "text named nc":
        assert "text.nc does not start like a NetCDF file, so it is read as CSV" in line


@pytest.mark.parametrize(("case", "expected"), [
    ("empty nc", "is empty, not a NetCDF file"),
    ("all zeros nc", "bad signature (it starts with 00 00"),
    ("truncated signature", "bad signature (it starts with 89 48 44"),
    ("folder without zarr markers", "nor is it a Zarr store: it holds none of .zgroup"),
    ("zarr folder without markers", "is not a Zarr store: the folder holds none of"),
    ("folder named nc", "is a folder, not a NetCDF file"),
])
@pytest.mark.parametrize("chunks", [None, {"sample": 10}])
def test_wrong_files_in_open_dataset(case, expected, chunks, tmp_path):
    name, _ = _wrong_files(tmp_path)[case]
    with pytest.raises((ValueError, OSError)) as raised:
        xuqcal.open_dataset(tmp_path / name, chunks=chunks)
    assert str(raised.value).startswith(str(tmp_path / name))
    assert expected in str(raised.value)


def _unreadable(monkeypatch, path):
    """``path`` cannot be opened (as permission 000 for a user other than root)."""
    real = builtins.open

    def fake(file, *args, **kwargs):
        if os.fspath(file) == os.fspath(path):
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return real(file, *args, **kwargs)

    for module in (cli_inputs, io_netcdf):
        monkeypatch.setattr(module, "open", fake, raising=False)


def test_unreadable_nc_says_it_cannot_be_read(tmp_path, capsys, monkeypatch, no_compute):
    path = xuqcal.to_netcdf(xuqcal.synthetic.nig(50, nu=6, seed=0), tmp_path / "locked.nc")
    _unreadable(monkeypatch, path)
    line = one_line_error(capsys, main(["validate", str(path), *FAST]), command="validate")
    assert line.endswith(f"{path} cannot be read: Permission denied (expected a CSV file, a "
                         "NetCDF input dataset or a Zarr store)")
    with pytest.raises(PermissionError, match=r"locked\.nc cannot be read: Permission denied"):
        xuqcal.open_dataset(path)


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux /proc")
def test_file_with_read_errors_says_it_cannot_be_read(tmp_path, capsys, no_compute):
    """A file whose reads fail (EIO, here /proc/self/mem), even for root."""
    path = tmp_path / "eio.nc"
    path.symlink_to("/proc/self/mem")
    line = one_line_error(capsys, main(["validate", str(path), *FAST]), command="validate")
    assert "eio.nc cannot be read: Input/output error" in line
    with pytest.raises(OSError, match=r"eio\.nc cannot be read: Input/output error"):
        xuqcal.open_dataset(path)


def test_csv_with_a_nul_tail_is_refused_quickly(tmp_path, capsys, no_compute):
    """12 KB of CSV text then NUL bytes (a 2 GB tail made pandas run out of memory): refused
    before parsing, naming the line."""
    path = tmp_path / "tail.csv"
    text = b"E,uE\n" + b"0.1,0.2\n" * 1500
    with open(path, "wb") as handle:
        handle.write(text)
        handle.write(bytes(8 * 1024 * 1024))
    start = time.monotonic()
    line = one_line_error(capsys, main(["validate", str(path), "--E", "E", "--uE", "uE",
                                         *FAST]), command="validate")
    assert time.monotonic() - start < 30
    assert (f"{path} is a binary file, not a text CSV file (it contains NUL bytes: the first "
            f"on line 1502, byte {len(text)})") in line
    with pytest.raises(ValueError, match="the first on line 1502"):
        xuqcal.read_csv(path, E="E", uE="uE")
