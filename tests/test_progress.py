"""The progress display of long computations (issue 14, item 5): the time left; one redrawn
line in a terminal; in a log, a line every few seconds at most and no carriage returns."""

from __future__ import annotations

import io
import time

import dask
import dask.array as da

import xuqcal
from xuqcal.studies.progress import TimeLeft, compute, progress_text


def _slow(n_tasks: int = 16, seconds: float = 0.1) -> da.Array:
    def wait(block):
        time.sleep(seconds)
        return block

    return da.ones(n_tasks, chunks=1).map_blocks(wait).sum()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_few_whole_lines_with_the_time_left():
    log = io.StringIO()
    start = time.perf_counter()
    with dask.config.set(scheduler="synchronous"), TimeLeft(out=log, minimum=0.0,
                                                            interval=0.5):
        _slow().compute()
    elapsed = time.perf_counter() - start
    text = log.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert lines[-1].startswith("[") and "100%" in lines[-1] and "done in" in lines[-1]
    # at most one line per interval (plus the first and the last)
    assert 2 <= len(lines) <= elapsed / 0.5 + 2
    assert any("left" in line and "elapsed" in line for line in lines[:-1])


def test_a_terminal_gets_one_redrawn_line():
    out = _Terminal()
    with dask.config.set(scheduler="synchronous"), TimeLeft(out=out, minimum=0.0):
        _slow(n_tasks=8).compute()
    text = out.getvalue()
    assert text.count("\r") >= 2 and text.endswith("\n") and text.count("\n") == 1
    assert "about" in text and "left" in text and "done in" in text.rsplit("\r", 1)[-1]


def test_short_computations_show_nothing():
    log = io.StringIO()
    with TimeLeft(out=log, minimum=5.0):
        da.ones(4, chunks=2).sum().compute()
    assert log.getvalue() == ""


def test_the_estimate():
    assert progress_text(0.5, 8.0).endswith("about 8.00 s left")
    assert progress_text(0.01, 8.0).endswith("estimating the time left")
    assert progress_text(1.0, 8.0).endswith("done in 8.00 s")


def test_the_option_sets_the_interval_of_a_log(capsys):
    with xuqcal.set_options(progress=True, progress_log_interval=60.0), \
            dask.config.set(scheduler="synchronous"):
        (total,) = compute(_slow(n_tasks=12, seconds=0.1))
    assert int(total) == 12
    err = capsys.readouterr().err
    lines = err.splitlines()
    # 1.2 s of work with minimum 1 s: the final line only, or one more (60 s interval)
    assert "\r" not in err and 1 <= len(lines) <= 2 and "done in" in lines[-1]


def test_a_computation_ends_without_waiting_for_the_next_redraw():
    """Dask's timer slept ``dt`` between redraws, and each computation waited for that sleep
    to end (0.5 s in a log: a small ``xuqcal validate`` took 6 s instead of 0.3 s,
    ``benchmarks/measured/ab-cli-validate-1e3-progress-*``). With an hour between redraws,
    the computation must still end at once: the timer is woken when it ends."""
    import threading

    bar = TimeLeft(out=io.StringIO(), minimum=0.0, interval=60.0)
    bar._dt = 3600.0
    values = []

    def run():
        with bar:
            values.append(da.ones(10, chunks=5).sum().compute())

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=30.0)
    assert not worker.is_alive(), "the computation waited for the progress timer"
    assert values == [10.0]
