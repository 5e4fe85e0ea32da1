"""Smoke test of the benchmark script: ``benchmarks/run.py --quick`` runs and writes every row.

Checks structure, positive timings and agreeing intervals only; speed is never asserted (timings
depend on the machine and its load). Takes well under 30 s.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "benchmarks" / "run.py"
SHARED_DATA = Path(
    os.environ.get("XUQCAL_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
)


def _registry_names() -> list[str]:
    spec = importlib.util.spec_from_file_location("xuqcal_benchmarks_run", RUN)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return list(module.REGISTRY)


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory):
    if not SHARED_DATA.is_dir():
        pytest.skip(
            f"shared literature data not found at {SHARED_DATA} "
            "(set XUQCAL_SHARED_DATA to run the benchmark smoke test)"
        )
    output = tmp_path_factory.mktemp("bench") / "results.json"
    proc = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--repeat", "1", "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 0, f"run.py failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(output.read_text())


def test_every_registered_row_is_reported(quick_results):
    names = [row["name"] for row in quick_results["rows"]]
    assert names == _registry_names()
    assert {"zms_bca_qm9", "zms_bca_nig"} <= set(names)


def test_rows_have_positive_timings_and_verdicts(quick_results):
    for row in quick_results["rows"]:
        for key in ("xuqcal_seconds", "baseline_seconds", "ratio"):
            assert math.isfinite(row[key]) and row[key] > 0, (row["name"], key)
        assert all(t > 0 for t in row["xuqcal_times"] + row["baseline_times"])
        assert row["goal"] and row["baseline"]
        assert isinstance(row["met"], bool)
        assert row["goal_ratio"] is not None or row["goal_seconds"] is not None
        for other in row["other_baselines"]:
            assert other["seconds"] > 0


def test_intervals_agree_within_monte_carlo_noise(quick_results):
    for row in quick_results["rows"]:
        agreements = [row["agreement"], *(o["agreement"] for o in row["other_baselines"])]
        for a in agreements:
            lo, hi = a["xuqcal_interval"]
            b_lo, b_hi = a["baseline_interval"]
            assert lo < a["xuqcal_estimate"] < hi
            assert b_lo < a["baseline_estimate"] < b_hi
            assert a["tolerance"] <= 0.05  # a meaningful tolerance, not one any method passes
            assert max(abs(lo - b_lo), abs(hi - b_hi)) <= a["tolerance"], row["name"]
            assert a["ok"], row["name"]


def test_machine_info_is_recorded(quick_results):
    machine = quick_results["machine"]
    for key in ("cpu_count", "python", "numpy", "scipy", "dask", "xuqcal"):
        assert machine[key], key
    assert quick_results["config"]["quick"] is True
