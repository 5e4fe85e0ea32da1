"""Global options of xuqcal: ``xuqcal.set_options`` (context manager or global), as xarray's.

Options are knobs of *how* a result is computed (chunk sizes, progress display, time-outs),
never of *what* is computed: results are bit-identical whatever the options (one,
``dependence_check``, only turns a warning on or off), except ``device="cuda"``, whose sums
are added in another order on the GPU (equal to the CPU's within about 1e-13 relative, see
:mod:`xuqcal.core.gpu`), and ``conventions``, which chooses the conventions (the defaults of
the parameters listed in :data:`xuqcal.core.defaults.CONVENTIONS`) of P. Pernot's R code
instead of xuqcal's: :func:`convention`.

Examples
--------
>>> import xuqcal
>>> with xuqcal.set_options(replicate_chunk=500):
...     xuqcal.get_options()["replicate_chunk"]
500
>>> xuqcal.get_options()["replicate_chunk"]
1000
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from xuqcal.core import defaults

OPTIONS: dict[str, Any] = {
    "replicate_chunk": 1000,
    "jackknife_chunk": 4096,
    "progress": False,
    "progress_log_interval": 5.0,
    "scheduler_timeout": 10.0,
    "study_batch_size": 50,
    "task_memory_limit": None,
    "dependence_check": True,
    "device": "cpu",
    "conventions": "xuqcal",
}

_DESCRIPTIONS = {
    "replicate_chunk": "replicates per Dask chunk along replicate when chunks is not given "
                       "(a positive integer)",
    "jackknife_chunk": "leave-one-out values per Dask task of the BCa jackknife "
                       "(a positive integer)",
    "progress": "show a progress bar while long computations run (True or False)",
    "progress_log_interval": "seconds between two progress lines when the output is not a "
                             "terminal (a log; a positive finite number)",
    "scheduler_timeout": "seconds to wait for a dask.distributed scheduler "
                         "(a positive finite number)",
    "study_batch_size": "synthetic data sets per task of the simulation studies "
                        "(a positive integer)",
    "task_memory_limit": "bytes one task may use, for the analyses that need all the points "
                         "of a data set in one task (a positive integer, or None: the "
                         "smallest worker memory_limit of the dask.distributed client, else "
                         "the memory available on this machine)",
    "dependence_check": "warn when an iid analysis runs on data whose group or ordered "
                        "variables show significant dependence (True or False)",
    "device": "where the bootstrap and simulation kernels run: 'cpu' or 'cuda' (an NVIDIA GPU "
              "through numba-cuda)",
    "conventions": "the defaults of the parameters on which xuqcal and P. Pernot's R code "
                   "differ: 'xuqcal' or 'errviewlib'",
}


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _positive_number(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


_VALIDATORS: dict[str, Callable[[object], bool]] = {
    "replicate_chunk": _positive_int,
    "jackknife_chunk": _positive_int,
    "progress": lambda value: isinstance(value, bool),
    "progress_log_interval": _positive_number,
    "scheduler_timeout": _positive_number,
    "study_batch_size": _positive_int,
    "task_memory_limit": lambda value: value is None or _positive_int(value),
    "dependence_check": lambda value: isinstance(value, bool),
    "device": lambda value: value in ("cpu", "cuda"),
    "conventions": lambda value: isinstance(value, str) and value in defaults.CONVENTIONS,
}


def get_options() -> dict[str, Any]:
    """A copy of the current options.

    Examples
    --------
    >>> import xuqcal
    >>> xuqcal.get_options()["progress"]
    False
    """
    return dict(OPTIONS)


class set_options:
    """Set options globally or, used with ``with``, for a block.

    Parameters
    ----------
    replicate_chunk : int, default 1000
        Replicates per Dask chunk along ``replicate`` when ``chunks`` is not given.
    jackknife_chunk : int, default 4096
        Leave-one-out values per Dask task of the BCa jackknife, at the least: more where it
        would give each core more than 4 tasks
        (:func:`xuqcal.analysis.resampling.jackknife_block_size`). No value depends on it.
    progress : bool, default False
        Show a progress bar with the time left (:class:`xuqcal.studies.progress.TimeLeft` on
        the local schedulers) while long computations (cubes, studies, the CLI) run.
    progress_log_interval : float, default 5
        When the progress goes to a log (not a terminal), seconds between two of its lines.
    scheduler_timeout : float, default 10
        Seconds to wait for a ``dask.distributed`` scheduler given by address.
    study_batch_size : int, default 50
        Synthetic data sets per task of the simulation studies.
    task_memory_limit : int or None, default None
        Bytes one task may use, for the analyses that need all the points of a data set in one
        task (:func:`xuqcal.core.memory.check_fits_in_one_task`). ``None``: the smallest
        ``memory_limit`` of the workers of the active ``dask.distributed`` client, else the
        memory available on this machine.
    dependence_check : bool, default True
        Warn (:class:`xuqcal.analysis.dependence_scan.DependenceWarning`) when an iid analysis
        runs on data that carry a group or ordered variable (``structure_id``, ``time``,
        ``lat``) along which the z-scores are significantly dependent, naming the
        ``resample=`` to use (:func:`xuqcal.analysis.dependence_scan.scan_dependence`; it reads
        only NumPy-backed data). ``False`` skips the scan.
    device : {"cpu", "cuda"}, default "cpu"
        Where the kernels run. ``"cuda"``: the iid bootstrap of the moment statistics (``mse
        rmse mv rmv zm zms zv rce nll``), of ``cc`` and of the binned ones (``ence uce
        zmse``) of a binning variable without ties runs on an NVIDIA GPU
        (:mod:`xuqcal.core.gpu`, the extra ``xuqcal[gpu]``; the bins of tied data on the CPU,
        in the same tasks), with
        the same streams: replicate ``r`` draws the same points and adds its sums in the CPU's
        order, so its values are the CPU's bit for bit.
        The simulated references (:func:`xuqcal.simulate`, and those of ``validate``) of every
        moment and binned statistic, generators normal, ``t<ν>``, ``tfit``, uniform and
        Laplace, run there too, the GPU drawing the CPU's variates, a large synthetic set
        split between threads, its sums added in the CPU's order, and ``cc``, each set
        sorted and ranked on the device (``normp`` stays on the CPU; the result's
        attribute ``device`` says where each generator ran). Refused when no GPU (or
        numba-cuda) is found.
    conventions : {"xuqcal", "errviewlib"}, default "xuqcal"
        The defaults of the parameters on which xuqcal and P. Pernot's R code (ErrViewLib, the
        2024_PICP study) differ (:data:`xuqcal.core.defaults.CONVENTIONS`, read by
        :func:`convention`): ``"errviewlib"`` sets ``coverage_rule="pernot2024"`` (PICP:
        ``|Z| <= 1`` against 0.67, ``|Z| <= 1.96`` against 0.95), ``ci_method="wilson"``
        (local coverage and f_v), ``nu_method="ks"`` (ν of the Student-t coverage factor),
        ``binning="hd"`` (Harrell–Davis bins of local analyses) and ``band="poisson"`` (PIT
        histogram). An argument given to a function wins over the option.

    Examples
    --------
    >>> import xuqcal
    >>> with xuqcal.set_options(progress=True):
    ...     xuqcal.get_options()["progress"]
    True
    >>> xuqcal.set_options(jackknife_chunk=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: jackknife_chunk: expected leave-one-out values per Dask task ... got 0
    """

    def __init__(self, **kwargs: Any) -> None:
        for key, value in kwargs.items():
            if key not in OPTIONS:
                raise ValueError(f"{key}: not an option of xuqcal; the options are "
                                 f"{', '.join(sorted(OPTIONS))}")
            if not _VALIDATORS[key](value):
                raise ValueError(f"{key}: expected {_DESCRIPTIONS[key]}, got {value!r}")
            if key == "device" and value == "cuda":
                from xuqcal.core.gpu import cuda_available

                if not cuda_available():
                    raise ValueError("device: 'cuda' needs an NVIDIA GPU and numba-cuda "
                                     "(pip install 'xuqcal[gpu]'); none was found")
        self.old = {key: OPTIONS[key] for key in kwargs}
        OPTIONS.update(kwargs)

    def __enter__(self) -> set_options:
        return self

    def __exit__(self, *exc: object) -> None:
        OPTIONS.update(self.old)


def convention(name: str, value: Any = None) -> Any:
    """The value of the convention parameter ``name`` (a key of
    :data:`xuqcal.core.defaults.CONVENTION_CHOICES`): ``value`` when given (checked), else
    that of the option ``conventions`` (:data:`xuqcal.core.defaults.CONVENTIONS`).

    Examples
    --------
    >>> import xuqcal
    >>> convention("ci_method"), convention("ci_method", "wilson")
    ('wilsoncc', 'wilson')
    >>> with xuqcal.set_options(conventions="errviewlib"):
    ...     convention("ci_method"), convention("nu_method", "ml")
    ('wilson', 'ml')
    >>> convention("band", "normal")
    Traceback (most recent call last):
    ...
    ValueError: band: expected one of 'binomial', 'poisson', got 'normal'
    """
    choices = defaults.CONVENTION_CHOICES[name]
    if value is None:
        return defaults.CONVENTIONS[OPTIONS["conventions"]][name]
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, choices))}, got "
                         f"{value!r}")
    return value
