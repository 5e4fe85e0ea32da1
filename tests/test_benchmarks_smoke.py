"""Smoke test of the benchmark script: ``benchmarks/run.py --quick`` runs and writes every row,
and every row is found by its file name (``benchmarks/rows/<name>.py`` or a family
``rows/<prefix>.py``).

Checks structure, positive timings and agreeing intervals only; speed is never asserted (timings
depend on the machine and its load). The default run smoke-tests :data:`DEFAULT_ROWS`; every
row runs with ``pytest -m slow``. The run compiles the kernels when their Numba cache is cold
(a clean checkout) and starts two LocalClusters, so its timeout only guards against a hang.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xuqcal

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "benchmarks" / "run.py"
ROWS = REPO / "benchmarks" / "rows"
HANG_GUARD_SECONDS = 600


def _load_run_module():
    spec = importlib.util.spec_from_file_location("xuqcal_benchmarks_run", RUN)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _registry_names() -> list[str]:
    return list(_load_run_module().REGISTRY)


def _load_harness():
    """The shared module of the rows (loading run.py puts benchmarks/ on the path)."""
    _load_run_module()
    import harness

    return harness


def test_every_row_is_in_the_module_of_its_name():
    registry = _load_run_module().REGISTRY
    modules = {path.stem for path in ROWS.glob("*.py") if path.stem != "__init__"}
    used = set()
    for name, bench in registry.items():
        module = bench.func.__module__.removeprefix("rows.")
        assert module in modules and name.startswith(module), (name, bench.func.__module__)
        used.add(module)
    assert used == modules  # no module without a row
    assert len((REPO / "benchmarks" / "run.py").read_text().splitlines()) < 400  # a driver


#: The rows of the default run's smoke test: those that compare intervals with a baseline
#: (scipy, the loop), the nine-set goal row and the cheap ones. Every row (the memory rows'
#: subprocesses, the LocalClusters, the 2e6 validations) runs in the ``slow`` set
#: (``pytest -m slow``), so that the suite stays within its 10 minutes: 10.1 s for these rows
#: and 34.2 s for every row, ``benchmarks/measured/test-time-warm-up-order-2026-11-27.json``.
DEFAULT_ROWS = ("zms_bca_qm9", "zms_bca_nig", "binned_bca_qm9", "nine_sets_validation",
                "lzms_qm9", "cc_jackknife_1e6", "compare_10_models_1e5")


@pytest.fixture(scope="module", params=["default rows", pytest.param("every row",
                                                                     marks=pytest.mark.slow)])
def quick_results(request, tmp_path_factory, shared_data):
    # shared_data skips without ../shared/data, and fails when CI is set
    output = tmp_path_factory.mktemp("bench") / "results.json"
    only = [] if request.param == "every row" else [
        option for name in DEFAULT_ROWS for option in ("--only", name)]
    proc = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--repeat", "1", "--output", str(output), *only],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SECONDS,
        cwd=REPO,
        env={**os.environ, "XUQCAL_SHARED_DATA": str(shared_data)},
    )
    assert proc.returncode == 0, f"run.py failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(output.read_text())


def test_every_registered_row_is_reported(quick_results):
    names = [row["name"] for row in quick_results["rows"]]
    registry = _registry_names()
    assert set(DEFAULT_ROWS) <= set(registry)
    if len(names) == len(DEFAULT_ROWS):  # the default run: the rows asked for, in table order
        assert names == [name for name in registry if name in DEFAULT_ROWS]
    else:
        assert names == registry


def _rows(quick_results) -> dict[str, dict]:
    return {row["name"]: row for row in quick_results["rows"]}


def test_rows_have_positive_timings_and_verdicts(quick_results):
    for row in quick_results["rows"]:
        keys = ["xuqcal_seconds"]
        if row["goal_ratio"] is not None:  # a ratio goal needs a measured baseline
            keys += ["baseline_seconds", "ratio"]
            assert row["baseline_times"], row["name"]
        else:
            assert row["baseline_seconds"] is None or row["baseline_seconds"] > 0
        for key in keys:
            assert math.isfinite(row[key]) and row[key] > 0, (row["name"], key)
        assert all(t > 0 for t in row["xuqcal_times"] + row["baseline_times"])
        assert row["goal"] and row["baseline"]
        assert isinstance(row["met"], bool) and isinstance(row["extrapolated"], bool)
        assert any(row[goal] is not None for goal in ("goal_ratio", "goal_seconds",
                                                       "goal_memory_mb"))
        if row["goal_memory_mb"] is not None:  # a memory goal needs a measured peak
            assert row["peak_memory_mb"] > 0, row["name"]
        for other in row["other_baselines"]:
            assert other["seconds"] > 0


def _compared_intervals(row: dict) -> list[dict]:
    """Every interval comparison of a row: one statistic, several, and the other baselines."""
    agreements = []
    for a in [row["agreement"], *(o["agreement"] for o in row["other_baselines"])]:
        agreements += a.get("statistics", [a] if "xuqcal_interval" in a else [])
    return agreements


def test_intervals_agree_within_monte_carlo_noise(quick_results):
    for row in quick_results["rows"]:
        for a in _compared_intervals(row):
            lo, hi = a["xuqcal_interval"]
            b_lo, b_hi = a["baseline_interval"]
            assert lo < a["xuqcal_estimate"] < hi
            assert b_lo < a["baseline_estimate"] < b_hi
            tolerances = a.get("bound_tolerances", [a["tolerance"]] * 2)
            # a meaningful tolerance, not one any method passes: 0.05 at most, or at the B = 300
            # of the binned row about 1-1.5 se (5 sqrt(2) MC sd of a quantile in the tail). A
            # BCa level below 1 / B (zmse and ence, z0 ~ -2) makes the bound the smallest
            # replicate, whose noise is the spread of the extreme order statistics: no se cap
            n = row["params"]["B"]
            levels = a.get("bca_probabilities", [0.025, 0.975])
            for tolerance, level in zip(tolerances, levels, strict=True):
                if 1 / n <= level <= 1 - 1 / n:
                    assert tolerance <= max(0.05, 1.5 * a["xuqcal_se"]), (row["name"], a)
            assert abs(lo - b_lo) <= tolerances[0] and abs(hi - b_hi) <= tolerances[1], row["name"]
            assert a["ok"], row["name"]


def test_binned_row_checks_the_loop_baseline_in_full(quick_results):
    row = _rows(quick_results)["binned_bca_qm9"]
    assert row["goal_ratio"] == 20 and row["goal_seconds"] == 5
    assert row["params"]["M"] == 2000 and row["params"]["B"] == 300
    measured = row["baseline_measured"]
    assert row["extrapolated"] is False and measured["extrapolated"] is False
    assert measured["replicates"] == 300 and measured["jackknife_values"] == 2000
    agreement = row["agreement"]
    assert agreement["checked"] is True and agreement["ok"] is True
    assert [a["statistic"] for a in agreement["statistics"]] == ["zms", "cc", "ence", "zmse"]
    for a in agreement["statistics"]:
        assert a["untimed_rerun_identical"] is True  # xuqcal is deterministic for a seed
        assert all(0.0 <= p <= 1.0 for p in a["bca_probabilities"])


def test_nine_sets_row(quick_results):
    row = _rows(quick_results)["nine_sets_validation"]
    params = row["params"]
    assert row["goal_seconds"] == 15 and row["goal_ratio"] is None
    assert "5 minutes" in row["baseline"] and row["baseline_seconds"] is None
    assert params["n_boot"] == 300 and params["n_mc"] == 300
    assert sorted(params["per_set_seconds"]) == [str(k) for k in range(1, 10)]
    assert all(t > 0 for t in params["per_set_seconds"].values())
    assert sorted(params["verdicts"]) == [str(k) for k in range(1, 10)]
    for verdicts in params["verdicts"].values():
        assert list(verdicts) == ["zms", "cc", "ence", "zmse"]
        assert all(verdicts.values())
    assert params["intervals_contain_estimates"] is True
    totals = params["breakdown"]["total_seconds"]
    assert set(totals) == {"bootstrap", "simulation_normal", "simulation_t6", "fixed_overhead"}
    assert all(t > 0 for t in totals.values())


def test_loop_baseline_extrapolates_a_timed_subset():
    """The subset path (used when the whole loop would exceed --baseline-limit) on tiny data."""
    run = _load_harness()
    rng = np.random.default_rng(3)
    U = rng.uniform(0.5, 2.0, 200)
    E = U * rng.standard_normal(200)
    cfg = run.Config(quick=True, baseline_limit=0.0)
    times, result, measured = run.timed_loop_baseline(cfg, E, U, 2000, level=0.95, n_bins=20)
    assert measured["extrapolated"] is True and result.ci_low is None
    assert measured["replicates"] == run.SUBSET_REPLICATES < measured["of_replicates"] == 2000
    assert measured["jackknife_values"] == measured["of_jackknife_values"] == 200
    expected = (
        measured["other_seconds"]
        + measured["seconds_per_replicate"] * 2000
        + measured["seconds_per_jackknife_value"] * 200
    )
    assert times == [pytest.approx(expected)]
    # in full, the baseline computes the point estimates the way xuqcal does
    full = run.loop_bca(E, U, 200, seed=0, level=0.95, n_bins=20)
    ds = xuqcal.from_arrays(E, U)
    ours = xuqcal.stats(ds, ["zms", "cc", "ence", "zmse"], n_bins=20).values
    np.testing.assert_allclose(full.estimate, ours, rtol=1e-12)
    assert np.all(full.ci_low < full.estimate) and np.all(full.estimate < full.ci_high)


def test_machine_info_is_recorded(quick_results):
    machine = quick_results["machine"]
    for key in ("cpu_count", "python", "numpy", "scipy", "dask", "xuqcal"):
        assert machine[key], key
    assert quick_results["config"]["quick"] is True
