"""Fault catalogue of the writes (issue 23: write faults, outputs inside inputs, forged
manifests).

1. A full disk (ENOSPC: a small tmpfs when one can be mounted, else an injected error) or an I/O
   error (EIO, injected) ends in one line naming the output, its option and the errno, exit
   status 2; the old output is kept, or nothing is left (no temporary file, no staging folder).
2. ``recalibrate`` commits its three outputs as a set: a failure or a signal leaves the old set
   or nothing, never a mix.
3. The temporary files and staging folders of a killed run are removed by the next run, which
   is not refused because of them.
4. An output inside an input folder (a Zarr store) is refused like an output equal to an input.
5. A manifest that xuqcal did not sign authorises no replacement or removal.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest
from faults import write_csv

import xuqcal
from xuqcal.cli import main
from xuqcal.io import outputs

FAST = ["--n-boot", "200", "--n-mc", "50", "--statistics", "zms", "--no-progress"]
CUBE = ["--size", "300", "--n-bins", "3", "--nu", "6", "--generators", "normal", "--n-mc",
        "30", "--no-progress"]


@pytest.fixture(scope="module")
def config_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("config")


@pytest.fixture(autouse=True)
def config(config_folder, monkeypatch):
    """A configuration folder of this module's own (the key that signs manifests), also for
    the child processes."""
    monkeypatch.setenv("XUQCAL_CONFIG_DIR", str(config_folder))
    return config_folder


@pytest.fixture
def data(tmp_path):
    return write_csv(tmp_path / "data.csv")


def _one_line_error(capsys, status, expected_status=2):
    err = capsys.readouterr().err
    assert status == expected_status, err
    lines = [line for line in err.strip().splitlines() if ": warning: " not in line]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


def _state(folder):
    """Every file under ``folder`` with its content's SHA-256 (hidden ones included)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _leftovers(folder):
    return [p for p in folder.rglob("*") if outputs.leftover_pid(p.name) is not None
            or p.name.startswith(".xuqcal-probe")]


@pytest.fixture(scope="module")
def disk(tmp_path_factory):
    """A 6 MiB tmpfs (None when this machine cannot mount one: errors are injected)."""
    folder = tmp_path_factory.mktemp("disk")
    if shutil.which("mount") is None or os.geteuid() != 0:
        yield None
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(folder)],
                          capture_output=True, timeout=30)
    if done.returncode != 0:
        yield None
        return
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30)


@pytest.fixture
def place(disk, tmp_path):
    """A fresh folder for the outputs (on the tmpfs when there is one)."""
    if disk is None:
        return tmp_path / "out"
    folder = disk / uuid.uuid4().hex[:8]
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
    (disk / f"fill-{folder.name}").unlink(missing_ok=True)


def _fail_writes(monkeypatch, place, code):
    """From now on, writes fail with ``code``: the tmpfs is filled (ENOSPC) when ``place`` is on
    one, else the fsync of every written file raises (as a full disk or a bad sector does)."""
    if code == errno.ENOSPC and os.path.ismount(place.parent):
        free = os.statvfs(place.parent)
        size = free.f_bavail * free.f_frsize - 8 * 1024
        with open(place.parent / f"fill-{place.name}", "wb") as handle:
            handle.write(b"\0" * max(size, 0))
        return

    def failing(path):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(outputs, "fsync_path", failing)


def _commands(data, out):
    return {
        "validate -o": (["validate", str(data), "--E", "E", "--uE", "uE", *FAST, "-o",
                         str(out / "v.nc")], "-o/--output", "v.nc"),
        "report": (["report", str(data), "--E", "E", "--uE", "uE", *FAST, "-o",
                    str(out / "rep")], "-o/--output", "rep"),
        "demo": (["demo", "--size", "300", *FAST, "-o", str(out / "demo")], "-o/--output",
                 "demo"),
        "recalibrate": (["recalibrate", str(data), str(data), "--E", "E", "--uE", "uE", "-o",
                         str(out / "o.nc")], "-o/--output", "o.nc"),
        "cube build": (["cube", "build", *CUBE, "-o", str(out / "c.nc")], "-o/--output",
                       "c.nc"),
        "cube extend": (["cube", "extend", str(out / "c.nc"), "--nu", "4", "--no-progress"],
                        "FILE", "c.nc"),
    }


WRITE_CASES = [(command, overwrite, code)
               for command in ["validate -o", "report", "demo", "recalibrate", "cube build"]
               for overwrite in (False, True) for code in (errno.ENOSPC, errno.EIO)
               if code == errno.ENOSPC or overwrite] + [
    ("cube extend", False, errno.ENOSPC), ("cube extend", False, errno.EIO)]


@pytest.mark.parametrize(("command", "overwrite", "code"), WRITE_CASES,
                         ids=[f"{c}{' --overwrite' if o else ''}-{errno.errorcode[e]}"
                              for c, o, e in WRITE_CASES])
def test_item1_a_failed_write_is_one_line_and_keeps_the_old_output(command, overwrite, code,
                                                                   data, place, capsys,
                                                                   monkeypatch):
    place.mkdir()
    argv, option, name = _commands(data, place)[command]
    if overwrite or command == "cube extend":  # an old output, written while there was room
        first = argv if command != "cube extend" else _commands(data, place)["cube build"][0]
        assert main(first) == 0
        argv = [*argv, "--overwrite"] if command != "cube extend" else argv
    capsys.readouterr()
    before = _state(place)
    _fail_writes(monkeypatch, place, code)
    line = _one_line_error(capsys, main(argv))
    assert line.startswith(f"xuqcal {command.split(' -')[0]}: error: {option}: cannot write ")
    assert name in line and f"({errno.errorcode[code]}, errno {code})" in line
    assert _state(place) == before  # the old output kept, or nothing left
    assert not _leftovers(place)


def test_item1_a_bare_write_error_names_the_output_and_the_option(data, tmp_path, capsys,
                                                                  monkeypatch):
    """An ENOSPC raised where no writer of xuqcal names the file (e.g. a library's write)."""
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(xuqcal.cli.commands, "report", full, raising=False)
    import xuqcal.report.html as html

    monkeypatch.setattr(html, "report", full)
    line = _one_line_error(capsys, main(["report", str(data), "--E", "E", "--uE", "uE", *FAST,
                                         "-o", str(tmp_path / "rep")]))
    assert line.startswith("xuqcal report: error: -o/--output: cannot write ")
    assert str(tmp_path / "rep") in line and "(ENOSPC, errno 28)" in line
    assert "[Errno" not in line


def test_item1_the_netcdf_hdf_error_of_a_full_disk_is_told_apart(tmp_path, monkeypatch):
    """netCDF/HDF5 reports a full disk as ``RuntimeError: NetCDF: HDF error``."""
    ds = xuqcal.synthetic.nig(50, nu=6, seed=0)

    def hdf_error(*args, **kwargs):
        raise RuntimeError("NetCDF: HDF error")

    monkeypatch.setattr(type(ds), "to_netcdf", hdf_error)
    monkeypatch.setattr(outputs, "disk_errno", lambda folder: errno.ENOSPC)
    with pytest.raises(OSError, match=r"cannot write .*x\.nc: No space left on device "
                                      r"\(ENOSPC, errno 28\); no partial file") as info:
        xuqcal.to_netcdf(ds, tmp_path / "x.nc")
    assert info.value.errno == errno.ENOSPC and not list(tmp_path.iterdir())
    monkeypatch.setattr(outputs, "disk_errno", lambda folder: None)  # not the disk: a bug
    with pytest.raises(RuntimeError, match="HDF error"):
        xuqcal.to_netcdf(ds, tmp_path / "x.nc")
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------- item 2: recalibrate as a set


RECAL = ["o.nc", "o_evaluation.nc", "o_recalibrator.nc"]


def _recalibrate(data, out, *extra):
    return ["recalibrate", str(data), str(data), "--E", "E", "--uE", "uE", "-o",
            str(out / "o.nc"), *extra]


@pytest.mark.parametrize("overwrite", [False, True], ids=["new", "--overwrite"])
@pytest.mark.parametrize("where", ["writing the second file", "renaming the second file"])
def test_item2_recalibrate_commits_its_outputs_as_a_set(where, overwrite, data, tmp_path,
                                                        capsys, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    if overwrite:
        assert main(_recalibrate(data, out, "--seed", "7")) == 0
    before = _state(out)
    capsys.readouterr()
    real_fsync, real_replace, calls = outputs.fsync_path, os.replace, []

    def fsync(path):
        calls.append(path)
        if where.startswith("writing") and "o_evaluation.nc" in os.path.basename(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(path)

    def replace(src, dst):
        if where.startswith("renaming") and os.path.basename(dst) == "o_evaluation.nc" and \
                str(src).endswith(".tmp"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(src, dst)

    monkeypatch.setattr(outputs, "fsync_path", fsync)
    monkeypatch.setattr(os, "replace", replace)
    args = _recalibrate(data, out, *(["--overwrite"] if overwrite else []))
    line = _one_line_error(capsys, main(args))
    assert "-o/--output: cannot write" in line and "errno" in line
    assert _state(out) == before  # the old set, or nothing
    assert not _leftovers(out)


_SLOW_WRITER = """
import os, sys, time
import xuqcal.io.outputs as o
real = o.fsync_path
def slow(path):
    if {marker!r} in os.path.basename(str(path)):
        open({ready!r}, "w").close()
        time.sleep(120)
    return real(path)
o.fsync_path = slow
from xuqcal.cli import main
sys.exit(main({argv!r}))
"""


def _interrupted(argv, marker, ready, sig):
    """Run ``xuqcal argv`` in a child stopped while it writes the file whose name holds
    ``marker``, and send it ``sig``; returns its exit status."""
    code = _SLOW_WRITER.format(marker=marker, ready=str(ready), argv=argv)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert child.poll() is None, child.stderr.read().decode()
            assert time.monotonic() < deadline, "the child never reached the write"
            time.sleep(0.05)
        child.send_signal(sig)
        return child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)


SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_item2_a_signal_during_recalibrate_leaves_no_partial_set(sig, data, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    status = _interrupted(_recalibrate(data, out), "o_evaluation.nc", tmp_path / "ready", sig)
    assert status != 0
    assert not [name for name in RECAL if (out / name).exists()]  # nothing, not o.nc alone
    if sig == signal.SIGINT:
        assert status == 130 and not _leftovers(out)
    assert main(_recalibrate(data, out)) == 0  # the rerun is not refused, and cleans up
    assert sorted(p.name for p in out.iterdir()) == sorted(RECAL)


# ------------------------------------------------------------- item 3: leftovers of a dead run


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_item3_validate_leftovers_are_removed_by_the_next_run(sig, data, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    argv = ["validate", str(data), "--E", "E", "--uE", "uE", *FAST, "-o", str(out / "v.nc")]
    assert _interrupted(argv, "v.nc", tmp_path / "ready", sig) != 0
    left = _leftovers(out)
    assert [p.name for p in left] and not (out / "v.nc").exists()
    assert all(p.name.startswith(".v.nc.xuqcal-") and p.name.endswith(".tmp") for p in left)
    assert main(argv) == 0
    assert [p.name for p in out.iterdir()] == ["v.nc"]


@pytest.mark.parametrize("overwrite", [False, True], ids=["new report", "--overwrite"])
def test_item3_an_interrupted_report_does_not_block_the_rerun(overwrite, data, tmp_path,
                                                              capsys):
    rep = tmp_path / "rep"
    argv = ["report", str(data), "--E", "E", "--uE", "uE", *FAST, "-o", str(rep)]
    if overwrite:
        assert main(argv) == 0
        argv = [*argv, "--overwrite"]
    before = _state(rep) if overwrite else None
    assert _interrupted(argv, "zeta", tmp_path / "ready", signal.SIGKILL) == -signal.SIGKILL
    staging = [p for p in rep.iterdir() if p.name.startswith(".xuqcal-staging-")]
    assert staging  # what SIGKILL leaves: nothing else was touched
    if overwrite:
        assert {k: v for k, v in _state(rep).items() if not k.startswith(".xuqcal-staging")} \
            == before
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err  # not "already exists and is not empty"
    assert not _leftovers(rep)


def test_item3_the_leftovers_of_a_running_process_are_kept(tmp_path):
    mine = tmp_path / f".v.nc.xuqcal-{os.getpid()}-0123456789ab.tmp"
    mine.write_text("being written")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=60)
    theirs = tmp_path / f".xuqcal-staging-{dead.pid}-0123456789ab"
    theirs.mkdir()
    assert outputs.remove_leftovers(tmp_path) == [theirs]
    assert mine.exists() and not theirs.exists()
    assert not outputs.has_content(tmp_path)


# ------------------------------------------------------------- item 4: outputs inside inputs


def test_item4_an_output_inside_an_input_store_is_refused(tmp_path, capsys):
    store = tmp_path / "in.zarr"
    xuqcal.synthetic.nig(300, nu=6, seed=0).to_zarr(store)
    before = _state(store)
    chunk = next(p for p in store.rglob("*") if p.is_file() and not p.name.startswith("."))
    for output in (chunk, store / "E" / "new.nc"):
        line = _one_line_error(capsys, main(["validate", str(store), *FAST, "-o", str(output),
                                             "--overwrite"]))
        assert "-o/--output" in line and "inside the input folder" in line
    line = _one_line_error(capsys, main(["report", str(store), *FAST, "-o",
                                         str(store / "rep"), "--overwrite"]))
    assert "inside the input folder" in line
    assert _state(store) == before


# ------------------------------------------------------------------ item 5: forged manifests


@pytest.fixture(scope="module")
def first_report(tmp_path_factory, config_folder):
    folder = tmp_path_factory.mktemp("first")
    data = write_csv(folder / "data.csv")
    with pytest.MonkeyPatch.context() as patch:  # signed with this module's key
        patch.setenv("XUQCAL_CONFIG_DIR", str(config_folder))
        assert main(["report", str(data), "--E", "E", "--uE", "uE", *FAST, "-o",
                     str(folder / "rep")]) == 0
    return folder


def _forge(folder, names, signatures=None):
    files = {name: outputs.file_digest(folder / name) for name in names}
    text = {"written_by": "xuqcal", "files": files}
    if signatures is not None:
        text["signatures"] = signatures
    (folder / outputs.MANIFEST).write_text(json.dumps(text))


@pytest.mark.parametrize("how", ["written by hand", "signed with another key"])
def test_item5_a_forged_manifest_authorises_no_removal(how, tmp_path, capsys, config,
                                                       monkeypatch):
    data = write_csv(tmp_path / "data.csv")
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "index.html").write_text("the user's page")
    (rep / "notes.txt").write_text("the user's notes")
    if how == "written by hand":
        _forge(rep, ["index.html", "notes.txt"])
    else:  # a manifest of xuqcal, but of another user account (another key)
        monkeypatch.setenv("XUQCAL_CONFIG_DIR", str(tmp_path / "other-account"))
        outputs.write_manifest(rep, {name: outputs.file_digest(rep / name)
                                     for name in ("index.html", "notes.txt")})
        monkeypatch.setenv("XUQCAL_CONFIG_DIR", str(config))
        outputs.manifest_key()  # this account's key exists
    before = _state(rep)
    argv = ["report", str(data), "--E", "E", "--uE", "uE", *FAST, "-o", str(rep),
            "--overwrite"]
    line = _one_line_error(capsys, main(argv))
    assert str(rep / "index.html") in line and "signature" in line
    assert _state(rep) == before
    # a forged entry for a file that the report does not write: the report is written, the
    # user's file stays (a forged entry never makes it 'an earlier run's file')
    (rep / "index.html").unlink()
    assert main(argv) == 0
    assert (rep / "notes.txt").read_text() == "the user's notes"
    assert "notes.txt" not in outputs.read_manifest(rep)


def test_item5_a_signed_manifest_still_authorises_overwrite(first_report, tmp_path):
    shutil.copytree(first_report, tmp_path, dirs_exist_ok=True)
    manifest = outputs.read_manifest(tmp_path / "rep")
    assert "index.html" in manifest
    signatures = json.loads((tmp_path / "rep" / outputs.MANIFEST).read_text())["signatures"]
    assert sorted(signatures) == sorted(manifest)
    signatures["index.html"] = "0" * 64  # one entry tampered with: it alone is refused
    _forge(tmp_path / "rep", sorted(manifest), signatures)
    assert "index.html" not in outputs.read_manifest(tmp_path / "rep")
    assert len(outputs.read_manifest(tmp_path / "rep")) == len(manifest) - 1
