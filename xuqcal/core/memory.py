"""How much memory one task may use, and a clear error when a data set would not fit in it.

The analyses that need all the points of a data set in one task (the multinomial bootstrap, the
rank statistic ``cc``, simulated references, the local analyses: everything built on
:class:`~xuqcal.core.statistics.PreparedData`) hold O(M) arrays per task. Before any work,
:func:`check_fits_in_one_task` compares their estimated size with the memory one task may use
(:func:`task_memory_limit`) and raises :class:`DataTooLargeError`, which names the analysis, the
points, the bytes, the limit, where the limit came from, and what to do instead: the moment and
binned statistics reduce out of core, chunk by chunk over ``sample``
(:func:`xuqcal.reduce_statistics`); the others need workers with more memory.
"""

from __future__ import annotations

from typing import Any

from xuqcal.options import OPTIONS

#: Bytes per point held by a :class:`~xuqcal.core.statistics.PreparedData` (its arrays, as
#: built by ``PreparedData.from_arrays``; a test checks the sum against their ``nbytes``):
#: ``e2, u, u2, z, z2, lnu2`` (float64), ``order_u, order_e`` (int64), ``tie_u, tie_e,
#: tie_bin`` (bool) and ``packed`` (6 float64 columns).
PREPARED_DATA_BYTES: dict[str, int] = {
    "e2, u, u2, z, z2, lnu2": 6 * 8,
    "order_u, order_e": 2 * 8,
    "tie_u, tie_e, tie_bin": 3 * 1,
    "packed": 6 * 8,
}
#: Bytes per point of a task besides the PreparedData it builds: while ``from_arrays`` runs,
#: the input ``E`` and ``uE`` (float64), their sorted copies, the sorting permutation and
#: ``|E|`` (int64, float64), and the shifted z-scores and their squares packed into
#: ``packed``; then the scratch of the kernels (``make_work``: two float64 rank arrays) and
#: one int32 multiplicity per point (``counts`` of a replicate).
TASK_EXTRA_BYTES: dict[str, int] = {
    "E, uE (input)": 2 * 8,
    "E, uE sorted": 2 * 8,
    "sorting permutation, |E|": 2 * 8,
    "z - z_shift and its square": 2 * 8,
    "rank_u, rank_e (kernel scratch)": 2 * 8,
    "counts (int32)": 4,
}
#: Bytes per point and per statistic of the BCa jackknife, gathered in the task that
#: summarises the replicates: the leave-one-out values (float64), the transposed blocks they
#: are gathered from, their C-order copy and the deviations of the acceleration (four float64
#: copies). ``benchmarks/memory_estimates.py`` measures the peaks these estimates must
#: cover (record in ``benchmarks/measured/``), and ``tests/test_faults_memory.py`` checks
#: that the estimates stay above them and within twice them.
JACKKNIFE_BYTES_PER_STATISTIC = 4 * 8
#: Bytes per point of a task that simulates a synthetic data set from the prepared one: the
#: drawn errors and the z-scores, their squares and ranks (six float64).
SIMULATION_BYTES_PER_POINT = 6 * 8
#: Bytes per point of ``PreparedData`` alone.
PREPARED_BYTES_PER_POINT = sum(PREPARED_DATA_BYTES.values())
#: Estimated peak bytes per point of a task that prepares and analyses one data set in memory
#: (what a caller such as ``prepare_lazily`` passes to :func:`check_fits_in_one_task`).
TASK_BYTES_PER_POINT = PREPARED_BYTES_PER_POINT + sum(TASK_EXTRA_BYTES.values())
#: Copies of the replicates (float64) held at once while they are summarised: the gathered
#: ``(replicate, statistic)`` values, their C-order copy (``_summarize``) and the partitioned
#: copy of the quantiles (BCa and percentile bounds; the Monte Carlo references' quantiles).
REPLICATE_COPIES = 3
#: Bytes per replicate and per statistic held at once (:func:`check_replicates_fit`).
REPLICATE_BYTES = 8 * REPLICATE_COPIES


def task_bytes_per_point(n_statistics: int, *, jackknife: bool = False,
                         simulation: bool = False) -> int:
    """Estimated peak bytes per point of one task that analyses a whole data set in memory:
    :data:`TASK_BYTES_PER_POINT`, plus :data:`JACKKNIFE_BYTES_PER_STATISTIC` per statistic
    when the BCa jackknife of ``n_statistics`` statistics is gathered, plus
    :data:`SIMULATION_BYTES_PER_POINT` when synthetic sets are drawn. The benchmark
    ``benchmarks/memory_estimates.py`` sets these beside measured peaks.

    Examples
    --------
    >>> task_bytes_per_point(2, jackknife=True), task_bytes_per_point(2, simulation=True)
    (263, 247)
    """
    return (TASK_BYTES_PER_POINT
            + (JACKKNIFE_BYTES_PER_STATISTIC * n_statistics if jackknife else 0)
            + (SIMULATION_BYTES_PER_POINT if simulation else 0))


class DataTooLargeError(MemoryError):
    """The data of an analysis that needs all its points in one task would not fit in the
    memory one task may use (:func:`check_fits_in_one_task`)."""


def format_bytes(value: float) -> str:
    """``1.5 GB``-style text (powers of 1000, as Dask's memory limits)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{int(value)} B"


def active_client() -> Any:
    """The active ``dask.distributed`` client, or None (no client, or no distributed)."""
    try:
        from distributed import get_client
    except ImportError:  # pragma: no cover - distributed is a dependency
        return None
    try:
        return get_client()
    except ValueError:  # no client
        return None


def _worker_room(info: dict[str, Any]) -> int | None:
    """Bytes a task may still use on a ``dask.distributed`` worker (its ``scheduler_info``
    entry), or None for a worker without a memory limit.

    A worker run by a nanny (a separate process, as ``LocalCluster(processes=True)`` and
    ``dask worker`` start them) is killed when its memory passes ``memory_limit`` times the
    fraction ``distributed.worker.memory.terminate`` (0.95 by default), and its process
    already holds memory (the interpreter, NumPy, Dask, Numba: its RSS at the last
    heartbeat, ``metrics["memory"]``): a task may use the difference (a limit of 700 MB with
    a worker at 150 MB leaves 515 MB, not 700). A worker without a nanny (in this process)
    is never killed, and its RSS is this whole process: its ``memory_limit`` is the bound.
    """
    import dask

    limit = int(info.get("memory_limit") or 0)
    if limit <= 0:
        return None
    if not info.get("nanny"):
        return limit
    terminate = dask.config.get("distributed.worker.memory.terminate", 0.95)
    fraction = float(terminate) if terminate else 1.0
    used = int((info.get("metrics") or {}).get("memory") or 0)
    return max(0, int(limit * fraction) - used)


def task_memory_limit() -> tuple[int, str]:
    """The bytes one task may use, and where that number comes from.

    In this order: the option ``task_memory_limit`` (:func:`xuqcal.set_options`) when set; the
    smallest room left on the workers of the active ``dask.distributed`` client (a task runs
    on one worker, and may run on any): the worker's ``memory_limit`` times the fraction at
    which its nanny kills it, less the memory the worker process already holds (a worker
    without a nanny: its ``memory_limit``; see ``_worker_room``); else the
    memory available on this machine (``psutil.virtual_memory().available``). A worker
    without a limit (``memory_limit=0``) counts as the memory available on this machine.

    Examples
    --------
    >>> import xuqcal
    >>> with xuqcal.set_options(task_memory_limit=2 * 10**9):
    ...     task_memory_limit()
    (2000000000, 'the option task_memory_limit')
    """
    option = OPTIONS["task_memory_limit"]
    if option is not None:
        return int(option), "the option task_memory_limit"
    client = active_client()
    if client is not None:
        workers = client.scheduler_info(n_workers=-1).get("workers", {})
        rooms = {address: _worker_room(info) for address, info in workers.items()}
        limited = {address: room for address, room in rooms.items() if room is not None}
        if limited:
            address = min(limited, key=limited.__getitem__)
            info = workers[address]
            if not info.get("nanny"):
                return limited[address], (f"the smallest memory_limit of the {len(workers)} "
                                          f"dask.distributed worker(s), worker {address}")
            used = int((info.get("metrics") or {}).get("memory") or 0)
            return limited[address], (
                f"worker {address}, the tightest of the {len(workers)} dask.distributed "
                f"worker(s): its nanny stops it at {format_bytes(int(info['memory_limit']))} "
                "(memory_limit) times distributed.worker.memory.terminate, and its process "
                f"holds {format_bytes(used)} already")
    import psutil  # a dependency of distributed

    return int(psutil.virtual_memory().available), ("the memory available on this machine "
                                                    "(psutil.virtual_memory().available)")


def check_replicates_fit(n_replicates: int, width: int, name: str) -> int:
    """Refuse, before any work, a count of replicates whose values would not fit in memory.

    The replicates of every statistic (``width`` values per replicate: statistics, or
    statistics × generators) are gathered and summarised at once (bias, standard error,
    quantiles), which holds about :data:`REPLICATE_COPIES` float64 copies of them. The
    bound is the memory one task may use (:func:`task_memory_limit`): the summary runs in one
    task, or in this process for a precision-driven (``"auto"``) run.

    Parameters
    ----------
    n_replicates : int
        The count (``n_boot`` or ``n_mc``).
    width : int
        Values per replicate.
    name : str
        The parameter of the count, for the message (``"n_boot"``, ``"n_mc"``).

    Returns
    -------
    int
        The estimated bytes, when they fit.

    Raises
    ------
    ValueError
        Starting with ``name`` (the CLI names its option), giving the estimate, the limit and
        where the limit comes from.

    Examples
    --------
    >>> import xuqcal
    >>> with xuqcal.set_options(task_memory_limit=10**9):
    ...     check_replicates_fit(2**39, 2, "n_boot")
    Traceback (most recent call last):
    ...
    ValueError: n_boot: 549,755,813,888 replicates of 2 values need about 26.4 TB of memory \
(24 bytes per value: the replicates and 2 working copies), more than the 1 GB this machine \
can give one task (the option task_memory_limit); use fewer replicates (validate and summary \
choose the count a precision needs with n_boot='auto')
    """
    need = n_replicates * width * REPLICATE_BYTES
    limit, source = task_memory_limit()
    if need <= limit:
        return need
    raise ValueError(
        f"{name}: {n_replicates:,} replicates of {width} value{'s' if width != 1 else ''} need "
        f"about {format_bytes(need)} of memory ({REPLICATE_BYTES} bytes per value: the "
        f"replicates and {REPLICATE_COPIES - 1} working copies), more than the "
        f"{format_bytes(limit)} this machine can give one task ({source}); use fewer "
        f"replicates (validate and summary choose the count a precision needs with "
        f"{name}='auto')")


def check_fits_in_one_task(n_points: int, bytes_per_point: int, analysis: str) -> int:
    """Refuse, before any work, data whose in-memory analysis would not fit in one task.

    Parameters
    ----------
    n_points : int
        Points the task holds at once (M of one data set).
    bytes_per_point : int
        Estimated bytes per point of the task, e.g. :data:`TASK_BYTES_PER_POINT` for an
        analysis built on :class:`~xuqcal.core.statistics.PreparedData`.
    analysis : str
        The analysis, for the message (``"bootstrap"``).

    Returns
    -------
    int
        The estimated bytes (``n_points * bytes_per_point``), when they fit.

    Raises
    ------
    DataTooLargeError
        A :class:`MemoryError` naming the analysis, the points, the estimated bytes, the limit
        (:func:`task_memory_limit`) and where it comes from, and what to do instead.

    Examples
    --------
    >>> import xuqcal
    >>> with xuqcal.set_options(task_memory_limit=10**9):
    ...     check_fits_in_one_task(10**8, 199, "bootstrap")
    Traceback (most recent call last):
    ...
    xuqcal.core.memory.DataTooLargeError: bootstrap: 100,000,000 points need about 19.9 GB in \
one task (199 bytes per point), more than the 1 GB one task may use (the option \
task_memory_limit). The moment statistics (mse rmse mv rmv zm zms zv rce nll) with analytic \
intervals and the binned statistics (ence uce zmse) reduce out of core, chunk by chunk over \
sample: xuqcal.reduce_statistics(ds.chunk(sample=...)); this analysis needs all the points in \
one task: give each worker more memory (e.g. LocalCluster(memory_limit=...)), or raise the \
option task_memory_limit if the limit is too low
    """
    for name, value in (("n_points", n_points), ("bytes_per_point", bytes_per_point)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name}: expected a non-negative integer, got {value!r}")
    if not isinstance(analysis, str) or not analysis:
        raise ValueError(f"analysis: expected the name of the analysis, got {analysis!r}")
    need = n_points * bytes_per_point
    limit, source = task_memory_limit()
    if need <= limit:
        return need
    raise DataTooLargeError(
        f"{analysis}: {n_points:,} points need about {format_bytes(need)} in one task "
        f"({bytes_per_point} bytes per point), more than the {format_bytes(limit)} one task "
        f"may use ({source}). The moment statistics (mse rmse mv rmv zm zms zv rce nll) with "
        "analytic intervals and the binned statistics (ence uce zmse) reduce out of core, "
        "chunk by chunk over sample: xuqcal.reduce_statistics(ds.chunk(sample=...)); this "
        "analysis needs all the points in one task: give each worker more memory (e.g. "
        "LocalCluster(memory_limit=...)), or raise the option task_memory_limit if the limit "
        "is too low"
    )

