"""Shared fixtures: the literature data sets of ../shared/data.

The folder is read in place (never copied into the repository). When it is missing, tests that
need it are skipped with a message, except under CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

import xuqcal

PAL_FILTER = "uE > 1e-6 * std(E)"

#: The cyclic collector of the test processes (not of the subprocesses the tests start): a
#: first generation of 20 000 objects instead of 700, so that the full collections, which walk
#: the whole heap of a worker (every imported module and test), run less often. The suite's
#: summed durations before and after this and the freeze below:
#: ``benchmarks/measured/test-time-gc-2026-11-26.json``. No test depends on when garbage cycles
#: are freed (the memory tests measure their own subprocesses).
GC_THRESHOLD = (20_000, 20, 20)


def pytest_configure(config):
    gc.set_threshold(*GC_THRESHOLD)


def pytest_collection_finish(session):
    """The imported modules and collected tests live until the end of the run: frozen, the
    collector no longer walks them (:func:`gc.freeze`)."""
    gc.collect()
    gc.freeze()

#: The nine data sets of ../shared/data/README.md: file, E, uE, where.
DATASETS = {
    1: ("PAL2022/Diffusion_RF_Test_cal.csv", "E", "uE", PAL_FILTER),
    2: ("PAL2022/Perovskite_RF_Test_cal.csv", "E", "uE", PAL_FILTER),
    3: ("PAL2022/Diffusion_LR_Test_cal.csv", "E", "uE", PAL_FILTER),
    4: ("PAL2022/Perovskite_LR_Test_cal.csv", "E", "uE", PAL_FILTER),
    5: ("PAL2022/Diffusion_GPR_Bayesian_Test_cal.csv", "E", "uE", PAL_FILTER),
    6: ("PAL2022/Perovskite_GPR_Bayesian_Test_cal.csv", "E", "uE", PAL_FILTER),
    7: ("BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv", "E_ - prediction",
        "sqrt(uncertainty_total)", None),
    8: ("RAS2023/logP_10k_a_LS-GCN_test.csv", "logP - y_pred", "uq", None),
    9: ("RAS2023/logP_150k_LS-GCN_test.csv", "logP - y_pred", "uq", None),
}


def shared_data_dir() -> Path:
    """The shared data folder (``XUQCAL_SHARED_DATA`` or ``../shared/data`` beside the repo)."""
    env = os.environ.get("XUQCAL_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def require_shared_data() -> Path:
    """The shared data folder, or skip (fail under CI) when it is missing."""
    folder = shared_data_dir()
    if not folder.is_dir():
        message = (f"shared data folder {folder} is missing (set XUQCAL_SHARED_DATA to its "
                   "location)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return folder


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return require_shared_data()


@pytest.fixture(scope="session")
def load_set(shared_data):
    """Load literature set ``k`` (1-9) as an input Dataset, cached for the session."""
    cache: dict[int, object] = {}

    def load(k: int):
        if k not in cache:
            path, E, uE, where = DATASETS[k]
            cache[k] = xuqcal.read_csv(shared_data / path, E=E, uE=uE, where=where)
        return cache[k]

    return load


@pytest.fixture
def no_compute(monkeypatch):
    """Every computation fails the test: errors must come before any of them (the fault
    catalogue, tests/test_faults_*.py)."""
    from xuqcal.analysis import validation
    from xuqcal.cli import commands as cli
    from xuqcal.cli import recalibrate as cli_recalibrate
    from xuqcal.studies import cube

    def forbidden(*args, **kwargs):
        raise AssertionError("computed before the error")

    monkeypatch.setattr(cli, "validate", forbidden)
    monkeypatch.setattr(validation, "validate", forbidden)
    monkeypatch.setattr(cube, "_compute_cell", forbidden)
    monkeypatch.setattr(cli_recalibrate, "fit", forbidden)
    monkeypatch.setattr(cli_recalibrate, "evaluate", forbidden)
