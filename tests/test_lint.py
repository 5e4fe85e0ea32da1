"""The code base stays ruff-clean (configuration in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    """Without the cache: a stale .ruff_cache once hid an import-order error that CI saw."""
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed (pip install '.[test]')")
    done = subprocess.run(["ruff", "check", "--quiet", "--no-cache", str(ROOT)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_docstring_examples_run():
    """The numpydoc examples of the public modules are executed (doctest)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--doctest-modules",
         "--override-ini=addopts=", str(ROOT / "xuqcal")],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
