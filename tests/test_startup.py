"""Start-up (issue 26): what ``import xuqcal`` and ``xuqcal --help`` load, the lazily loaded
subpackages, and where Numba's cache goes. No timing here: ``benchmarks/startup.py`` times it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import xuqcal
from xuqcal import _numba_cache
from xuqcal._lazy import lazy_module

HEAVY = ("scipy.stats", "scipy.optimize", "matplotlib", "distributed")
ROOT = Path(__file__).resolve().parents[1]


def _loaded_after(code: str, env: dict[str, str] | None = None) -> dict[str, bool]:
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, env=env, check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_xuqcal_loads_no_heavy_module_and_scipy_stats_on_first_use():
    code = ("import json, sys, xuqcal\n"
            f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))\n"
            "xuqcal.student_interval([[1.0, 2.0, 3.0]], 0.95)\n")
    done = subprocess.run([sys.executable, "-c", code + "import json, sys\n"
                           f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"],
                          capture_output=True, text=True, cwd=ROOT, check=True, timeout=120)
    after_import, after_use = (json.loads(line) for line in done.stdout.strip().splitlines())
    assert after_import == dict.fromkeys(HEAVY, False)
    assert after_use["scipy.stats"]


def test_help_runs_and_loads_no_heavy_module():
    code = ("import contextlib, io, sys, runpy\nsys.argv = ['xuqcal', '--help']\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            "    try:\n        runpy.run_module('xuqcal', run_name='__main__')\n"
            "    except SystemExit as exit:\n        assert exit.code in (0, None)\n"
            "assert 'demo' in out.getvalue() and 'validate' in out.getvalue()\n")
    assert _loaded_after(code) == dict.fromkeys(HEAVY, False)


def test_lazy_subpackages_work_when_accessed():
    code = ("import xuqcal\nfrom xuqcal import plot, report\n"
            "assert callable(xuqcal.plot.zscores) and callable(report.report)\n"
            "assert xuqcal.Recalibrator is xuqcal.recalibration.Recalibrator\n"
            "assert xuqcal.studies.cube is not None")
    assert set(_loaded_after(code)) == set(HEAVY)  # runs without error
    assert xuqcal.plot.zscores is not None


def test_all_and_dir_name_the_lazy_attributes():
    for name in ("plot", "recalibration", "report", "studies", "Recalibrator"):
        assert name in xuqcal.__all__
        assert name in dir(xuqcal)
        assert getattr(xuqcal, name) is not None
    for name in xuqcal.__all__:
        assert getattr(xuqcal, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        xuqcal.nothing  # noqa: B018


def test_lazy_module_reads_the_module():
    stats = lazy_module("statistics")
    assert "not loaded" in repr(stats)
    assert stats.median([1, 3, 2]) == 2
    assert "loaded" in repr(stats) and "median" in dir(stats)


# ------------------------------------------------------------------------------ Numba's cache


def test_cache_dir_respects_numba_cache_dir(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "mine"), "XUQCAL_CACHE_DIR": str(tmp_path / "x")}
    assert _numba_cache.numba_cache_dir(env, kernels_dir=tmp_path) is None


def test_cache_dir_in_tree_when_writable(tmp_path):
    assert _numba_cache.numba_cache_dir({}, kernels_dir=tmp_path) is None


def test_cache_dir_xuqcal_override(tmp_path):
    env = {"XUQCAL_CACHE_DIR": str(tmp_path / "x")}
    assert _numba_cache.numba_cache_dir(env, kernels_dir=tmp_path) == tmp_path / "x" / "numba"


@pytest.mark.skipif(os.name == "nt" or (hasattr(os, "geteuid") and os.geteuid() == 0),
                    reason="chmod does not make a folder read-only for root (or on Windows)")
def test_cache_dir_user_folder_when_package_is_read_only(tmp_path):
    package = tmp_path / "core"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__pycache__").chmod(0o555)
    try:
        env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
        chosen = _numba_cache.numba_cache_dir(env, kernels_dir=package)
    finally:
        (package / "__pycache__").chmod(0o755)
    assert chosen == tmp_path / "cache" / "xuqcal" / "numba"


def test_cache_dir_user_folder_when_not_writable(tmp_path, monkeypatch):
    """The decision itself (the read-only case, for root too): XDG_CACHE_HOME, then ~/.cache."""
    monkeypatch.setattr(_numba_cache, "writable", lambda folder: False)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert _numba_cache.numba_cache_dir(env) == tmp_path / "cache" / "xuqcal" / "numba"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _numba_cache.numba_cache_dir({}) == tmp_path / "home" / ".cache" / "xuqcal" / "numba"


def test_import_sets_numba_cache_dir_only_when_asked(tmp_path):
    code = ("import os, numba.core.config as c, xuqcal\n"  # Numba imported first
            "print(os.environ.get('NUMBA_CACHE_DIR'), c.CACHE_DIR)")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XUQCAL_CACHE_DIR")}
    env["XUQCAL_CACHE_DIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=env, check=True, timeout=120)
    assert done.stdout.split() == [str(tmp_path / "numba")] * 2
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=env, check=True, timeout=120)
    assert done.stdout.split() == [str(tmp_path / "mine")] * 2


def test_cold_cache_is_detected_and_announced(tmp_path):
    code = ("import io, xuqcal\nfrom xuqcal import _numba_cache as c\n"
            "out = io.StringIO()\nprint(c.kernels_cold(), c.announce_if_cold(out), out.getvalue())")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XUQCAL_CACHE_DIR"] = str(tmp_path)  # an empty cache
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=env, check=True, timeout=120)
    assert done.stdout.startswith("True True xuqcal: compiling the numerical kernels")
