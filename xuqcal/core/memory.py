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
#: Bytes per point of ``PreparedData`` alone.
PREPARED_BYTES_PER_POINT = sum(PREPARED_DATA_BYTES.values())
#: Estimated peak bytes per point of a task that prepares and analyses one data set in memory
#: (what a caller such as ``prepare_lazily`` passes to :func:`check_fits_in_one_task`).
TASK_BYTES_PER_POINT = PREPARED_BYTES_PER_POINT + sum(TASK_EXTRA_BYTES.values())


class DataTooLargeError(MemoryError):
    """The data of an analysis that needs all its points in one task would not fit in the
    memory one task may use (:func:`check_fits_in_one_task`)."""


def _format_bytes(value: float) -> str:
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


def task_memory_limit() -> tuple[int, str]:
    """The bytes one task may use, and where that number comes from.

    In this order: the option ``task_memory_limit`` (:func:`xuqcal.set_options`) when set; the
    smallest ``memory_limit`` of the workers of the active ``dask.distributed`` client (a
    task runs on one worker, and may run on any); else the memory available on this machine
    (``psutil.virtual_memory().available``). A worker without a limit (``memory_limit=0``)
    counts as the memory available on this machine.

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
        limits = {address: int(info.get("memory_limit") or 0)
                  for address, info in workers.items()}
        limited = {address: limit for address, limit in limits.items() if limit > 0}
        if limited:
            address = min(limited, key=limited.__getitem__)
            return limited[address], (f"the smallest memory_limit of the {len(limits)} "
                                      f"dask.distributed worker(s), worker {address}")
    import psutil  # a dependency of distributed

    return int(psutil.virtual_memory().available), ("the memory available on this machine "
                                                    "(psutil.virtual_memory().available)")


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
        f"{analysis}: {n_points:,} points need about {_format_bytes(need)} in one task "
        f"({bytes_per_point} bytes per point), more than the {_format_bytes(limit)} one task "
        f"may use ({source}). The moment statistics (mse rmse mv rmv zm zms zv rce nll) with "
        "analytic intervals and the binned statistics (ence uce zmse) reduce out of core, "
        "chunk by chunk over sample: xuqcal.reduce_statistics(ds.chunk(sample=...)); this "
        "analysis needs all the points in one task: give each worker more memory (e.g. "
        "LocalCluster(memory_limit=...)), or raise the option task_memory_limit if the limit "
        "is too low"
    )

