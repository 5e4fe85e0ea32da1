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


#: Analyses whose first call compiles most of the Numba kernels (or loads them from the
#: cache), as the tests call them: the units of :func:`_warm_numba_cache`.
WARM_UP_UNITS = (
    ("simulate", lambda ds: xuqcal.simulate(ds, ["zms", "cc", "ence", "zmse"],
                                            generators=["normal", "t6"], n_mc=40,
                                            n_bins=5).compute()),
    ("bootstrap", lambda ds: xuqcal.bootstrap(ds, ["zms", "rce", "zm", "zv", "nll", "cc",
                                                   "ence", "zmse"], n_boot=40,
                                              n_bins=5).compute()),
    ("local", lambda ds: xuqcal.local(ds, "zms", n_boot=40)),
    ("validate", lambda ds: xuqcal.validate(ds, n_boot=40, n_mc=40, n_bins=5)),
)


def _warm_numba_cache(config) -> None:
    """Compile the kernels once for the whole run, the units shared between the xdist workers.

    On a clean checkout (CI) every process compiled every kernel it used: each worker, and each
    subprocess a test starts (the CLI, the benchmark driver) before the cache held the kernel.
    Here each worker goes through :data:`WARM_UP_UNITS`, taking a unit under a file lock and
    skipping it when another worker has done it, and every later process of the run loads the
    kernels from Numba's cache. The first two units compile disjoint kernels: worker k starts
    with unit k mod 2, so the two workers compile them at once, and ``local`` and ``validate``
    then mostly load what they compiled. (Before, the second worker went through the units in
    reverse and began with ``validate``, which compiled the simulation and bootstrap kernels a
    second time beside the first worker.) The values are not touched (a cached kernel is the
    compiled kernel). Without xdist, or without ``fcntl``, nothing is done: the kernels compile
    when first used, as before. Suite times before and after:
    ``benchmarks/measured/test-time-warm-up-2026-11-26.json`` (the warm-up) and
    ``test-time-warm-up-order-2026-11-27.json`` (this order: the units' compile times and the
    time before each worker's first test)."""
    workerinput = getattr(config, "workerinput", None)
    try:
        import fcntl
    except ImportError:
        return
    if workerinput is None:
        return
    import tempfile
    import warnings

    folder = Path(tempfile.gettempdir()) / f"xuqcal-warm-up-{workerinput['testrunuid']}"
    folder.mkdir(exist_ok=True)
    units = list(WARM_UP_UNITS)
    first = int(workerinput.get("workerid", "gw0").removeprefix("gw") or 0) % 2
    units = [units[first], units[1 - first], *units[2:]]
    ds = xuqcal.synthetic.nig(400, nu=6, seed=0)
    for name, call in units:
        with open(folder / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
            done = folder / f"{name}.done"
            if done.exists():
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # small data: few points per bin
                call(ds)
            done.touch()


def pytest_sessionstart(session):
    _warm_numba_cache(session.config)


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
