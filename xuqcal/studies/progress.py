"""The progress of long computations (cubes, simulation studies, the command line).

With ``progress`` on (the argument, else the option ``progress`` of
:func:`xuqcal.set_options`), a computation shows :class:`TimeLeft` on the local schedulers, or
:func:`distributed.progress` when a ``dask.distributed`` client is active. :class:`TimeLeft` is
Dask's :class:`~dask.diagnostics.ProgressBar` with an estimate of the time left; in a terminal
it redraws one line, in a log (any other output) it writes a line every
``progress_log_interval`` seconds at most (option of :func:`xuqcal.set_options`), never a
stream of carriage returns. The numbers never depend on it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from timeit import default_timer
from typing import IO, Any

import dask
from dask.diagnostics import ProgressBar
from dask.utils import format_time

from xuqcal.core.checks import check_bool
from xuqcal.options import OPTIONS

__all__ = ["TimeLeft", "compute", "enabled", "progress_text"]

#: Below this fraction of the tasks done, the time left is not estimated yet.
_ESTIMATE_FROM = 0.02


def progress_text(fraction: float, elapsed: float, width: int = 30) -> str:
    """One line of progress: a bar, the percentage, the time elapsed and the time left,
    estimated from the fraction of the tasks done (``elapsed × (1 − f) / f``).

    Examples
    --------
    >>> progress_text(0.25, 10.0, width=8)
    '[##      ]  25% | 10.00 s elapsed | about 30.00 s left'
    >>> progress_text(1.0, 42.0, width=8)
    '[########] 100% | done in 42.00 s'
    """
    fraction = min(max(float(fraction), 0.0), 1.0)
    bar = "#" * int(width * fraction)
    head = f"[{bar:<{width}}] {int(100 * fraction):3d}%"
    if fraction >= 1.0:
        return f"{head} | done in {format_time(elapsed)}"
    left = ("estimating the time left" if fraction < _ESTIMATE_FROM else
            f"about {format_time(elapsed * (1.0 - fraction) / fraction)} left")
    return f"{head} | {format_time(elapsed)} elapsed | {left}"


def _is_terminal(out: IO[str]) -> bool:
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return False


class TimeLeft(ProgressBar):
    """Dask's progress bar with the time left; one redrawn line in a terminal, a line every
    ``interval`` seconds at most in a log.

    Parameters
    ----------
    out : file, optional
        Where to write (default ``sys.stderr``).
    minimum : float
        Seconds before anything is shown (short computations show nothing).
    interval : float, optional
        Seconds between two lines in a log (default: the option ``progress_log_interval``).
    width : int
        Characters of the bar.

    Examples
    --------
    >>> import io
    >>> import dask.array as da
    >>> log = io.StringIO()
    >>> with TimeLeft(out=log, minimum=0.0, interval=60.0):
    ...     _ = da.ones(10, chunks=2).sum().compute()
    >>> text = log.getvalue()
    >>> "done in" in text.splitlines()[-1], chr(13) in text  # no carriage return
    (True, False)
    """

    def __init__(self, out: IO[str] | None = None, *, minimum: float = 1.0,
                 interval: float | None = None, width: int = 30) -> None:
        out = sys.stderr if out is None else out
        self._terminal = _is_terminal(out)
        super().__init__(minimum=minimum, width=width, dt=0.1 if self._terminal else 0.5,
                         out=out)
        self._interval = float(OPTIONS["progress_log_interval"] if interval is None
                               else interval)
        self._last_line: float | None = None
        self._last_percent: int | None = None

    def _draw_bar(self, frac: float, elapsed: float) -> None:
        text = progress_text(frac, elapsed, self._width)
        if self._file is None:
            return
        with contextlib.suppress(ValueError):
            if self._terminal:
                self._file.write("\r" + text)
            else:
                now = default_timer()
                percent = int(100 * frac)
                if frac < 1.0 and (percent == self._last_percent or (
                        self._last_line is not None and now - self._last_line < self._interval)):
                    return
                self._file.write(text + "\n")
                self._last_line, self._last_percent = now, percent
            self._file.flush()

    def _start(self, dsk: Any) -> None:
        self._stop = threading.Event()
        super()._start(dsk)

    def _timer_func(self) -> None:
        # Dask's timer sleeps ``dt`` between redraws, and its ``_finish`` waited for that
        # sleep to end: every computation took up to ``dt`` (0.5 s in a log) more. The timer
        # waits on an event instead, which ``_finish`` sets.
        while self._running:
            elapsed = default_timer() - self._start_time
            if elapsed > self._minimum:
                self._update_bar(elapsed)
            self._stop.wait(self._dt)

    def _finish(self, dsk: Any, state: Any, errored: bool) -> None:
        self._running = False
        self._stop.set()
        self._timer.join()
        elapsed = default_timer() - self._start_time
        self.last_duration = elapsed
        if elapsed < self._minimum:
            return
        if not errored:
            self._draw_bar(1, elapsed)
        else:
            self._update_bar(elapsed)
        if self._terminal and self._file is not None:
            self._file.write("\n")
            self._file.flush()


def enabled(progress: bool | None) -> bool:
    """Whether to show progress: ``progress`` when given, else the option ``progress``.

    Examples
    --------
    >>> import xuqcal
    >>> enabled(None), enabled(True)
    (False, True)
    >>> with xuqcal.set_options(progress=True):
    ...     enabled(None)
    True
    """
    if progress is None:
        return bool(OPTIONS["progress"])
    return check_bool(progress, "progress")


def _client() -> Any:
    """The active ``dask.distributed`` client, or None."""
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - distributed is a dependency of the CLI only
        return None
    try:
        return default_client()
    except ValueError:
        return None


def compute(*collections: Any, progress: bool | None = None) -> tuple[Any, ...]:
    """``dask.compute(*collections)``, showing Dask's progress when :func:`enabled`.

    Examples
    --------
    >>> import dask.array as da
    >>> compute(da.ones(4, chunks=2).sum(), progress=False)
    (np.float64(4.0),)
    """
    if not enabled(progress):
        return dask.compute(*collections)
    client = _client()
    if client is None:
        with TimeLeft(out=sys.stderr, minimum=0.0):  # asked for: shown however short
            return dask.compute(*collections)
    from distributed import progress as show

    persisted = client.persist(list(collections))
    show(*persisted)
    return dask.compute(*persisted)
