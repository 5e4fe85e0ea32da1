"""Smoke test of the example scripts: each runs with ``--quick`` into a temporary folder and
writes its NetCDF results and PNG figures. The scripts that need the shared data sets are
skipped without them (and fail under CI, as conftest's ``require_shared_data``). About 25 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: script -> (needs the shared data, files it writes with --quick)
SCRIPTS = {
    "validation_probability": (False, ["validation_probability.nc", "validation_probability.png",
                                       "beta_gm.png"]),
    "size_bins_cube": (False, ["cube.nc", "size_bins.nc", "size_bins_ence.png",
                               "size_bins_zmse.png"]),
    "generator_sensitivity": (True, ["generator_sensitivity.nc", "generator_sensitivity.png"]),
    "zero_bins": (True, ["zero_bins_summary.nc", "zero_bins_set1.nc", "zero_bins_set2.nc",
                         "zero_bins_ence.png", "zero_bins_zmse.png"]),
}


def run(script: str, output: Path, *extra: str, env: dict | None = None):
    return subprocess.run(
        [sys.executable, str(EXAMPLES / f"{script}.py"), "--quick", "--output", str(output),
         *extra],
        capture_output=True, text=True, timeout=300, cwd=EXAMPLES.parent,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
    )


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_example_runs_quick(script, tmp_path, request):
    needs_data, files = SCRIPTS[script]
    env = None
    if needs_data:
        env = {"XUQCAL_SHARED_DATA": str(request.getfixturevalue("shared_data"))}
    done = run(script, tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    for name in files:
        assert (tmp_path / name).is_file(), (name, sorted(p.name for p in tmp_path.iterdir()))
        if name.endswith(".nc"):
            with xr.open_dataset(tmp_path / name) as ds:
                assert ds.attrs["xuqcal_version"]
        else:
            assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_examples_refuse_to_overwrite(tmp_path):
    first = run("validation_probability", tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    before = (tmp_path / "validation_probability.nc").stat().st_mtime_ns
    again = run("validation_probability", tmp_path)
    assert again.returncode != 0 and "--overwrite" in again.stderr
    assert (tmp_path / "validation_probability.nc").stat().st_mtime_ns == before
    forced = run("validation_probability", tmp_path, "--overwrite")
    assert forced.returncode == 0, forced.stderr[-3000:]


def test_missing_shared_data_is_a_clear_error(tmp_path):
    done = run("zero_bins", tmp_path / "out", env={"XUQCAL_SHARED_DATA": str(tmp_path / "no")})
    assert done.returncode != 0
    assert "shared data files not found" in done.stderr and "XUQCAL_SHARED_DATA" in done.stderr


def test_readme_lists_every_script():
    readme = (EXAMPLES / "README.md").read_text()
    scripts = sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_"))
    assert scripts == sorted(SCRIPTS)
    for script in scripts:
        assert f"python examples/{script}.py" in readme
