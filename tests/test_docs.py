"""The documentation builds offline with warnings as errors."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_without_warnings(tmp_path):
    if importlib.util.find_spec("sphinx") is None or importlib.util.find_spec("myst_parser") \
            is None:
        message = "sphinx and myst-parser are needed (pip install '.[test]')"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    index = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    for page in ("getting-started", "guide/validation", "guide/conditional", "guide/cubes",
                 "guide/recalibration", "guide/report", "methods", "conventions", "design",
                 "api"):
        assert f'href="{page}.html"' in index, page
    api = (tmp_path / "html" / "api.html").read_text(encoding="utf-8")
    for name in ("xuqcal.analysis.resampling.bootstrap", "xuqcal.analysis.validation.validate",
                 "xuqcal.analysis.local.local", "xuqcal.studies.cube.build",
                 "xuqcal.recalibration.fit"):
        assert f'id="{name}"' in api, name
