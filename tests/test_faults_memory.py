"""Fault catalogue, memory (issue 23): counts whose replicates cannot be held, workers too small
for a task, the estimates against measured peaks, and the retry of a task whose worker died.

Every refusal comes before any work, on one line naming the parameter (or CLI option), the
estimate, the limit and where the limit comes from."""

from __future__ import annotations

import os
import signal
import warnings

import pytest
from faults import one_line_error, write_csv

import xuqcal
import xuqcal.testing
from xuqcal.analysis import resampling
from xuqcal.cli.commands import main
from xuqcal.core import defaults, memory

DATA = xuqcal.synthetic.nig(300, nu=6, seed=0)


# ------------------------------------------------------------------- counts with no room


@pytest.mark.parametrize("call, name", [
    (lambda: xuqcal.validate(DATA, ["zms"], n_boot=2**39), "n_boot"),
    (lambda: xuqcal.validate(DATA, ["zms"], n_mc=10**12), "n_mc"),
    (lambda: xuqcal.bootstrap(DATA, ["zms", "rce"], n_boot=2**39), "n_boot"),
    (lambda: xuqcal.bootstrap(DATA.chunk(sample=100), ["zms"], n_boot=2**39), "n_boot"),
    (lambda: xuqcal.simulate(DATA, ["zms"], n_mc=10**12), "n_mc"),
    (lambda: xuqcal.simulate(DATA, ["zms"], n_mc=2**40, generators=["normal", "t6"]), "n_mc"),
], ids=["validate-n_boot", "validate-n_mc", "bootstrap", "bootstrap-lazy", "simulate",
        "simulate-two-generators"])
def test_a_count_whose_replicates_cannot_be_held_is_refused_before_any_work(
        call, name, monkeypatch):
    monkeypatch.setattr(resampling.PreparedData, "from_arrays", _never)
    with pytest.raises(ValueError, match=rf"^{name}: [\d,]+ replicates of \d+ values? need "
                                         r"about [\d.]+ TB of memory .*more than the .* this "
                                         r"machine can give one task \(the memory available"):
        call()


def test_the_estimate_of_the_replicates_counts_every_value(monkeypatch):
    # 2 statistics × 3 generators, 24 bytes a value: the limit is what one task may use
    with xuqcal.set_options(task_memory_limit=10**6):
        assert memory.check_replicates_fit(6944, 6, "n_mc") == 6944 * 6 * 24
        with pytest.raises(ValueError, match=r"^n_mc: 6,945 replicates of 6 values need about "
                                             r"1 MB .*more than the 1 MB .*\(the option "
                                             r"task_memory_limit\)"):
            memory.check_replicates_fit(6945, 6, "n_mc")
        with pytest.raises(ValueError, match=r"^n_mc: 10,000 replicates of 6 values"):
            xuqcal.simulate(DATA, ["zms", "rce"], n_mc=10_000,
                            generators=["normal", "t6", "t4"])


def test_a_huge_count_on_the_command_line_is_one_line_naming_the_option(tmp_path, capsys,
                                                                      monkeypatch):
    # the largest count the option takes, on a machine that can give a task 1 GB
    monkeypatch.setattr(memory, "task_memory_limit", lambda: (10**9, "a machine of the test"))
    monkeypatch.setattr(resampling.PreparedData, "from_arrays", _never)
    data = write_csv(tmp_path / "d.csv")
    line = one_line_error(capsys, main(["validate", str(data), "--E", "E", "--uE", "uE",
                                        "--n-boot", "100000000"]), command="validate")
    assert line.startswith("xuqcal validate: error: --n-boot: 100,000,000 replicates of ")
    assert "GB of memory" in line and "more than the 1 GB this machine can give one task " \
        "(a machine of the test)" in line


def test_a_large_count_has_a_bounded_number_of_tasks():
    # 10**8 replicates used to be 10**5 tasks, whose graph took minutes to build before the
    # progress display started; the chunks grow instead (no value changes with the chunking)
    chunks = resampling.replicate_chunks(10**8)
    assert len(chunks) == defaults.MAX_REPLICATE_TASKS and sum(chunks) == 10**8
    assert resampling.replicate_chunks(10_000) == (1000,) * 10  # small counts as before
    lazy = xuqcal.bootstrap(DATA.chunk(sample=100), ["zms"], n_boot=10**8,
                            keep_replicates=True)
    assert len(lazy.replicates.chunks[-1]) == defaults.MAX_REPLICATE_TASKS
    small = xuqcal.bootstrap(DATA, ["zms", "cc"], n_boot=600, seed=4, keep_replicates=True)
    with xuqcal.set_options(replicate_chunk=7):
        same = xuqcal.bootstrap(DATA, ["zms", "cc"], n_boot=600, seed=4, keep_replicates=True)
    xuqcal.testing.assert_results_identical(small, same)


# ----------------------------------------------------------------- the room on the workers


def _worker(limit, rss, nanny="tcp://127.0.0.1:4000"):
    return {"memory_limit": limit, "nanny": nanny, "metrics": {"memory": rss}}


class _FakeClient:
    def __init__(self, workers):
        self.workers = workers

    def scheduler_info(self, n_workers=-1):
        return {"workers": self.workers}


def test_the_room_of_a_worker_is_its_limit_at_the_nanny_fraction_less_what_it_holds():
    assert memory._worker_room(_worker(700 * 10**6, 150 * 10**6)) == 515 * 10**6
    assert memory._worker_room(_worker(700 * 10**6, 690 * 10**6)) == 0
    # no nanny (a thread of this process): never killed, its RSS is this process's
    assert memory._worker_room(_worker(700 * 10**6, 900 * 10**6, nanny=None)) == 700 * 10**6
    assert memory._worker_room(_worker(0, 150 * 10**6)) is None  # no limit
    import dask

    with dask.config.set({"distributed.worker.memory.terminate": False}):
        assert memory._worker_room(_worker(700 * 10**6, 150 * 10**6)) == 550 * 10**6


def test_a_worker_too_small_for_validate_is_named_before_any_work(monkeypatch):
    # the case of the issue: 700 MB workers, 3e6 points; the old check (597 MB < 700 MB)
    # passed, and the workers were killed and restarted without end
    monkeypatch.setattr(memory, "active_client", lambda: _FakeClient({
        "tcp://10.0.0.1:1": _worker(4 * 10**9, 200 * 10**6),
        "tcp://10.0.0.2:1": _worker(700 * 10**6, 150 * 10**6),
    }))
    monkeypatch.setattr(resampling.PreparedData, "from_arrays", _never)
    ds = xuqcal.synthetic.nig(3 * 10**6, nu=6, seed=0).chunk(sample=10**6)
    with pytest.raises(xuqcal.DataTooLargeError,
                       match=r"^bootstrap: 3,000,000 points need about [\d.]+ [MG]B in one task "
                             r".*more than the 515 MB one task may use \(worker "
                             r"tcp://10\.0\.0\.2:1, the tightest of the 2 dask\.distributed "
                             r"worker\(s\): its nanny stops it at 700 MB \(memory_limit\) times "
                             r"distributed\.worker\.memory\.terminate, and its process holds "
                             r"150 MB already\)"):
        xuqcal.validate(ds, ["zms", "cc"], n_boot=100, n_mc=100)


def test_reduce_statistics_refuses_a_chunk_larger_than_a_worker_and_says_what_fits(monkeypatch):
    monkeypatch.setattr(memory, "active_client", lambda: _FakeClient({
        "tcp://10.0.0.1:1": _worker(300 * 10**6, 160 * 10**6)}))
    ds = xuqcal.synthetic.nig(4 * 10**6, nu=6, seed=0)
    with pytest.raises(xuqcal.DataTooLargeError,
                       match=r"^reduce_statistics: a chunk of 1 row\(s\) × 4,000,000 points needs "
                             r"about 400 MB in one task \(2 variables\), more than the 125 MB one "
                             r"task may use \(worker tcp://10\.0\.0\.1:1.*\); rechunk to at most "
                             r"1,135,416 points along sample \(e\.g\. xuqcal\.open_dataset\(path, "
                             r"chunks=\{'sample': 1135416\}\)"):
        xuqcal.reduce_statistics(ds.chunk(sample=4 * 10**6), ["zms", "ence"])
    fits = xuqcal.reduce_statistics(ds.chunk(sample=1_135_416), ["zms"])  # not refused
    assert fits.estimate.chunks is not None
    monkeypatch.setattr(memory, "active_client", lambda: _FakeClient({
        "tcp://10.0.0.1:1": _worker(100 * 10**6, 90 * 10**6)}))
    with pytest.raises(xuqcal.DataTooLargeError, match=r"; give each worker more memory$"):
        xuqcal.reduce_statistics(ds.chunk(sample=10**6), ["zms"])


def _never(*args, **kwargs):
    raise AssertionError("the data were prepared: the refusal came after work started")


# ------------------------------------------------------------- estimates against the peaks

def _memory_benchmark():
    """benchmarks/memory_estimates.py, whose measurement the test repeats on fewer points."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "memory_estimates.py"
    spec = importlib.util.spec_from_file_location("memory_estimates", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("what, statistics, count", [
    ("bootstrap", "zms,cc,ence,zmse,rce,nll", "40"),
    ("simulate", "zms,cc,ence", "20"),
    ("validate", "zms,cc", "40"),
])
def test_the_estimate_of_a_task_covers_its_measured_peak(what, statistics, count):
    """The estimate per point (:func:`xuqcal.core.memory.task_bytes_per_point`) is above the
    peak RSS of the analysis over its data, in a fresh process, and not so far above that it
    refuses data that fit (at most twice the peak). ``benchmarks/memory_estimates.py``
    measures more analyses at M = 10**6."""
    figures = _memory_benchmark().measure(200_000, what, statistics, count)
    assert figures["measured_bytes_per_point"] <= figures["estimated_bytes_per_point"] \
        <= 2 * figures["measured_bytes_per_point"], figures


# --------------------------------------------------------------- a worker lost in the middle


def test_a_task_whose_worker_died_is_retried_with_identical_results():
    """dask.distributed runs the tasks of a worker that died again on another one; the
    counter-based streams give every replicate the same values wherever it runs, so the
    result is bit-identical to the one of the synchronous scheduler."""
    distributed = pytest.importorskip("distributed")
    import dask

    ds = xuqcal.synthetic.nig(2000, nu=6, seed=3)
    with dask.config.set(scheduler="synchronous"):
        want = xuqcal.bootstrap(ds, ["zms", "cc", "ence"], n_boot=4000, seed=9,
                                chunks=250).compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        lazy = xuqcal.bootstrap(ds, ["zms", "cc", "ence"], n_boot=4000, seed=9, chunks=250)
        future = client.compute(lazy)
        victim = _first_busy_worker(client)
        # the worker dies in the middle of its task (its nanny starts a new one)
        os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
        got = future.result(timeout=60)
        assert victim not in client.scheduler_info(n_workers=-1)["workers"]  # it did die
    finally:
        client.close()
        cluster.close()
    xuqcal.testing.assert_results_identical(got, want)


def _first_busy_worker(client, timeout=30.0):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        processing = client.processing()
        busy = [address for address, tasks in processing.items() if tasks]
        if busy:
            return busy[0]
        time.sleep(0.01)
    raise AssertionError("no worker started a task")


def test_workers_dying_on_every_retry_are_one_line(tmp_path, capsys, monkeypatch):
    distributed = pytest.importorskip("distributed")
    from xuqcal.cli import commands

    def killed(*args, **kwargs):
        raise distributed.KilledWorker("bootstrap-block-1", None, 3)

    monkeypatch.setattr(commands, "validate", killed)
    data = write_csv(tmp_path / "d.csv")
    line = one_line_error(capsys, main(["validate", str(data), "--E", "E", "--uE", "uE",
                                        "--n-boot", "100", "--n-mc", "100"]),
                          command="validate")
    assert "the dask workers died running task 'bootstrap-block-1', on every retry" in line
    assert "give the workers more memory" in line
