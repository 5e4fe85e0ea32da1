"""Deterministic, chunked, lazy bootstrap and the jackknife (METHODS §4).

Replicates are generated chunk by chunk along ``replicate`` as Dask tasks; each task draws its
replicates' multiplicities from the counter-based streams of :mod:`xuqcal.core.random` (the stream
of replicate ``r`` depends only on ``(seed, "bootstrap", r)``), evaluates every statistic in
O(M) and keeps only the ``(chunk, statistic)`` values: no ``replicate × sample`` array ever
exists, peak memory is set by M and the chunk size, and the result is bit-identical for any
chunking and any scheduler.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence

import dask
import dask.array as da
import numpy as np
import xarray as xr
from dask.delayed import Delayed

from xuqcal.analysis.binning import check_n_bins, n_bins_for
from xuqcal.analysis.lazy import blocks_along, delayed_call, part_of, shared
from xuqcal.analysis.replicates import (  # noqa: F401 (importable from here)
    COUNTS_BLOCK,
    count_blocks,
    counts_replicates,
    default_chunk,
    evaluate_row_counts,
    replicate_chunks,
)
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_input
from xuqcal.core import defaults
from xuqcal.core import kernels as K
from xuqcal.core import random as _random
from xuqcal.core.checks import (
    check_bool,
    check_chunks,
    check_count,
    check_replicates,
    check_seed,
    variable_name,
)
from xuqcal.core.intervals import (
    METHODS,
    bca_interval,
    check_level,
    percentile_interval,
    student_interval,
)
from xuqcal.core.memory import (
    check_fits_in_one_task,
    task_bytes_per_point,
)
from xuqcal.core.provenance import attach
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import (
    PreparedData,
    Statistic,
    check_sizes,
    codes_of,
    get_statistics,
    point_columns,
    statistic_coords,
)
from xuqcal.core.summaries import safe_std
from xuqcal.core.threads import cores
from xuqcal.io import by_role
from xuqcal.options import OPTIONS

__all__ = ["bootstrap", "bootstrap_prepared", "check_count", "jackknife", "jackknife_values",
           "jackknife_values_alongside", "replicate_chunks"]

RNG_DESCRIPTION = (
    "SplitMix64 stream per replicate r, started from mix(key, r) with "
    "key = SeedSequence(seed, spawn_key=(crc32(purpose),)); independent of chunking and "
    f"scheduler; variates of stream version {_random.STREAM_VERSION} (ziggurat normal and "
    "exponential; Student-t of integer nu from 3 to 6 by its own ziggurat, of another even "
    "nu <= 32 from a normal and exponentials, of other nu from a normal and a gamma)"
)


def _replicate_block(prepared: PreparedData, codes: np.ndarray, key: np.uint64, start: int,
                     stop: int) -> np.ndarray:
    out = np.empty((stop - start, codes.shape[0]))
    K.bootstrap_replicates(key, start, stop, codes, prepared.n_bins, *prepared.kernel_arrays(),
                           prepared.tie_bin, K.make_work(prepared.size, prepared.n_bins), out)
    return prepared.unscale(codes, out)


def blocks_along_replicate(function, prepared, n_replicates: int, chunks,
                           width: int | tuple[int, ...], *args, name: str = "n_boot",
                           first: int = 0) -> da.Array:
    """Lazy ``(n_replicates, *width)`` array, one Dask task per chunk of replicates.

    Each task calls ``function(prepared, *args, start, stop)``, which returns the
    ``(stop - start, *width)`` values of replicates ``start .. stop - 1``; ``prepared`` (a
    :class:`PreparedData` or a Delayed that computes one, or any shared input) is a single node
    shared by all tasks. The replicates are ``first .. first + n_replicates - 1`` (a later
    round of a precision-driven run, :mod:`xuqcal.analysis.precision`).
    """
    tail = (width,) if isinstance(width, int | np.integer) else tuple(width)
    bounds = []
    start = first
    for size in replicate_chunks(n_replicates, chunks, name=name):
        bounds.append((start, start + size))
        start += size
    return blocks_along(function, _as_delayed(prepared), args, bounds, tail)


def _replicate_block_gpu(prepared: PreparedData, codes: np.ndarray, key: np.uint64,
                         start: int, stop: int) -> np.ndarray:
    """:func:`_replicate_block` with the statistics the GPU computes for these data on the GPU
    (moment statistics, cc, and binned ones of a binning variable without ties:
    :func:`xuqcal.core.gpu.gpu_bootstrap_codes`) and the binned ones of tied data on the CPU,
    in the same task: each statistic's replicates are the CPU kernel's, whichever other
    statistics are asked."""
    from xuqcal.core.gpu import bootstrap_statistics_gpu, gpu_bootstrap_codes

    on_device = gpu_bootstrap_codes(codes, prepared)
    out = np.empty((stop - start, codes.shape[0]))
    out[:, on_device] = bootstrap_statistics_gpu(key, start, stop, codes[on_device], prepared)
    if not on_device.all():
        out[:, ~on_device] = _replicate_block(prepared, codes[~on_device], key, start, stop)
    return out


def on_gpu(codes: np.ndarray) -> bool:
    """Whether the iid bootstrap of the statistics ``codes`` goes to the GPU: the option
    ``device="cuda"`` (:func:`xuqcal.set_options`) and a statistic (binned statistics of tied
    data are computed by the CPU in the same task)."""
    return OPTIONS["device"] == "cuda" and np.asarray(codes).size > 0


def bootstrap_replicates(prepared, codes: np.ndarray, n_boot: int, seed: int,
                         chunks: int | Sequence[int] | None = None, first: int = 0,
                         purpose: str = "bootstrap") -> da.Array:
    """Lazy ``(n_boot, len(codes))`` array of bootstrap replicates ``first ..
    first + n_boot - 1``, one task per chunk, from the streams ``(seed, purpose, r)``; on the
    GPU when :func:`on_gpu` (decided now, when the graph is built).

    ``prepared`` is a :class:`PreparedData` or a Delayed that computes one.
    """
    key = stream_key(seed, purpose)
    block = _replicate_block_gpu if on_gpu(codes) else _replicate_block
    return blocks_along_replicate(block, prepared, n_boot, chunks, codes.shape[0],
                                  codes, key, first=first)


def _spearman_jackknife(prepared: PreparedData) -> np.ndarray:
    """Leave-one-out ``cc`` of every point, O(M log M) (one task, sliced by the blocks)."""
    values = np.empty(prepared.size)
    K.jackknife_spearman(*prepared.tie_groups(), values)
    return values


def _binned_prefix_sums(prepared: PreparedData) -> np.ndarray:
    """The prefix sums the blocks of the binned statistics' jackknife share (one task, O(M));
    computed in each block, they made the jackknife O(M²/chunk)
    (``benchmarks/measured/ab-jackknife-prefix-issue26-2026-11-26.json``)."""
    return K.binned_prefix_sums(prepared.e2, prepared.u2, prepared.z2)


def _moment_totals(prepared: PreparedData) -> np.ndarray:
    """The sums over all points the blocks of the moment statistics' jackknife share."""
    p = prepared
    return K.moment_totals(p.e2, p.u2, p.z, p.z2, p.lnu2, p.z_shift)


def _jackknife_block(prepared: PreparedData, codes: np.ndarray, start: int, stop: int,
                     spearman: np.ndarray | None = None,
                     prefix: np.ndarray | None = None,
                     totals: np.ndarray | None = None) -> np.ndarray:
    """Leave-one-out values of points ``start:stop``; ``spearman`` holds the ``cc`` ones of
    all points, ``prefix`` the binned statistics' prefix sums and ``totals`` the moment
    statistics' sums when they were computed already."""
    out = np.empty((stop - start, codes.shape[0]))
    moment = np.flatnonzero(codes < K.N_MOMENT)
    binned = np.flatnonzero(np.isin(codes, K.BINNED_CODES))
    rank = np.flatnonzero(codes == K.CC)
    p = prepared
    if moment.size:
        values = np.empty((stop - start, moment.size))
        if totals is None:
            totals = _moment_totals(p)
        K.jackknife_moments(codes[moment], p.e2, p.u2, p.z, p.z2, p.lnu2, p.z_shift, totals,
                            start, stop, values)
        out[:, moment] = values
    if binned.size:
        values = np.empty((stop - start, binned.size))
        if prefix is None:
            prefix = _binned_prefix_sums(p)
        K.jackknife_binned(codes[binned], p.n_bins, p.e2, p.u2, p.z2, prefix, start, stop,
                           values)
        out[:, binned] = values
    if rank.size:
        if spearman is None:
            spearman = _spearman_jackknife(p)
        out[:, rank] = spearman[start:stop, np.newaxis]
    return p.unscale(codes, out)


def _jackknife_shared(prepared, codes: np.ndarray) -> tuple:
    """What the blocks of leave-one-out values share, as Delayed (``None`` where no statistic
    of ``codes`` needs it): the data, cc's leave-one-out values, the binned statistics' prefix
    sums and the moment statistics' totals."""
    prepared = _as_delayed(prepared)
    spearman = (delayed_call(_spearman_jackknife, prepared)
                if np.any(codes == K.CC) else None)
    prefix = (delayed_call(_binned_prefix_sums, prepared)
              if np.any(np.isin(codes, K.BINNED_CODES)) else None)
    totals = (delayed_call(_moment_totals, prepared)
              if np.any(codes < K.N_MOMENT) else None)
    return prepared, spearman, prefix, totals


def _jackknife_bounds(m: int, width: int) -> list[tuple[int, int]]:
    """The points ``start .. stop - 1`` of each block of leave-one-out values (``width``
    statistics): :func:`jackknife_block_size` points each."""
    size = jackknife_block_size(m, width)
    return [(start, min(m, start + size)) for start in range(0, m, size)]


#: Bytes of leave-one-out values that :func:`jackknife_values` holds in blocks beside its array
#: (a batch of blocks computed together), at most; a core's share of it bounds a block.
JACKKNIFE_BATCH_BYTES = 64 << 20
#: Blocks of leave-one-out values per core when the option ``jackknife_chunk`` would make more.
JACKKNIFE_TASKS_PER_CORE = 4


def jackknife_block_size(m: int, width: int) -> int:
    """Points per Dask task of the jackknife of ``m`` points and ``width`` statistics: the option
    ``jackknife_chunk``, made larger where it would give a core more than
    :data:`JACKKNIFE_TASKS_PER_CORE` tasks (at M = 2·10⁶ on 2 cores, 489 tasks of 4 096 points
    ran 1.7 thread-seconds of kernels in 1.66 s of two threads' wall time,
    ``benchmarks/measured/validate-timeline-2e6-seventh-session-end-*``), but no larger than a
    core's share of :data:`JACKKNIFE_BATCH_BYTES`. No value depends on it: each point's
    leave-one-out value is computed alone.

    Examples
    --------
    >>> jackknife_block_size(10_000, 8)
    4096
    """
    n_cores = cores()
    few = math.ceil(m / (JACKKNIFE_TASKS_PER_CORE * n_cores))
    room = JACKKNIFE_BATCH_BYTES // (n_cores * max(int(width), 1) * 8)
    return max(OPTIONS["jackknife_chunk"], min(few, room))


def _jackknife_rows(prepared: PreparedData, codes: np.ndarray, spearman, prefix, totals,
                    start: int, stop: int) -> np.ndarray:
    """:func:`_jackknife_block` with the points last (a task of
    :func:`~xuqcal.analysis.lazy.blocks_along`)."""
    return _jackknife_block(prepared, codes, start, stop, spearman, prefix, totals)


def jackknife(prepared, codes: np.ndarray, m: int) -> da.Array:
    """Lazy ``(m, len(codes))`` array of exact leave-one-out values.

    Moment statistics in closed form (O(1) each), binned statistics re-binned with prefix sums
    (O(N) each), ``cc`` from the full-data ranks and tie groups (O(M log M) for all points, in
    one task that the blocks share; exact with ties).
    """
    prepared, spearman, prefix, totals = _jackknife_shared(prepared, codes)
    return blocks_along(_jackknife_rows, prepared, (codes, spearman, prefix, totals),
                        _jackknife_bounds(m, codes.shape[0]), (codes.shape[0],))


def jackknife_values(prepared, codes: np.ndarray, m: int) -> np.ndarray:
    """The values of :func:`jackknife`, computed now as one C-ordered ``(len(codes), m)`` array
    (:func:`jackknife_values_alongside` without a collection)."""
    return jackknife_values_alongside(prepared, codes, m, None)[0]


def jackknife_values_alongside(prepared, codes: np.ndarray, m: int, alongside
                               ) -> tuple[np.ndarray, object]:
    """The values of :func:`jackknife`, computed now as one C-ordered ``(len(codes), m)`` array,
    and ``alongside``, a Dask collection (or None) computed in the same call as the first
    batch: ``(values, computed alongside)``. A precision-driven validate computes its first
    bootstrap round there, so that the cores that the jackknife leaves idle (cc's one task,
    the end of a batch) draw replicates meanwhile.

    The blocks of the moment and binned statistics are computed in batches (by the active
    scheduler) of at most :data:`JACKKNIFE_BATCH_BYTES` (but at least a block per core) and
    copied into their columns, so the array is the only copy of the values: no concatenation
    of the blocks and no transposition (each a second and third copy, 640 MB for eight
    statistics at M = 10⁷). What the blocks share is computed once, before the batches
    (:func:`dask.persist`). cc's leave-one-out values, one task of all the points (O(M log M),
    0.67–1.11 s at M = 2·10⁶ on 2 busy cores in ``benchmarks/measured/validate-timeline-2e6-*``),
    are computed beside the first batch and copied into their row: the blocks do not wait for
    them.
    """
    values = np.empty((codes.shape[0], m))
    ranked = codes == K.CC
    others = codes[~ranked]
    rows = np.flatnonzero(~ranked).tolist()
    prepared, spearman, prefix, totals = _jackknife_shared(prepared, codes)
    prepared, prefix, totals = dask.persist(prepared, prefix, totals)
    bounds = _jackknife_bounds(m, others.shape[0]) if others.size else []
    tasks = [(start, stop, delayed_call(_jackknife_block, prepared, others, start, stop, None,
                                        prefix, totals)) for start, stop in bounds]
    size = bounds[0][1] - bounds[0][0] if bounds else 1
    batch = max(cores(), JACKKNIFE_BATCH_BYTES // (size * max(others.shape[0], 1) * 8))
    result = None
    for first in range(0, max(len(tasks), 1), batch):
        blocks = tasks[first:first + batch]
        with_cc = first == 0 and spearman is not None
        with_other = first == 0 and alongside is not None
        computed = dask.compute(*([alongside] if with_other else []),
                                *([spearman] if with_cc else []), *[t[2] for t in blocks])
        if with_other:
            result, computed = computed[0], computed[1:]
        if with_cc:
            values[ranked] = computed[0]
            computed = computed[1:]
        for (start, stop, _), block in zip(blocks, computed, strict=True):
            # row by row: a boolean-masked assignment of the transposed block is a slow path
            # of NumPy's (benchmarks/measured/ab-jackknife-rows-issue26-2026-11-27.json)
            for column, row in enumerate(rows):
                values[row, start:stop] = block[:, column]
    return values, result


def _as_delayed(obj):
    return obj if isinstance(obj, Delayed) else dask.delayed(obj, traverse=False)


def prepare_lazily(ds: xr.Dataset, statistics: Sequence[Statistic], *, n_bins: int, by: str,
                   E: str = defaults.E, uE: str = defaults.UE, analysis: str = "bootstrap",
                   jackknife: bool = False, simulation: bool = False):
    """A Delayed :class:`PreparedData` for ``ds`` (lazy when the data are Dask arrays).

    All the points go into one task: data that would not fit in the memory one task may use
    raise :class:`~xuqcal.DataTooLargeError` here, before any work, naming ``analysis``
    (:func:`xuqcal.core.memory.check_fits_in_one_task`; the bytes per point of
    :func:`xuqcal.core.memory.task_bytes_per_point`: ``jackknife`` when the BCa jackknife of
    every statistic is gathered, ``simulation`` when synthetic sets are drawn from it)."""
    per_point = task_bytes_per_point(len(statistics), jackknife=jackknife,
                                     simulation=simulation)
    check_fits_in_one_task(int(ds.sizes["sample"]), per_point, analysis)
    needs_bins = any(s.needs_bins for s in statistics)
    by = variable_name(ds, by, uE)
    if needs_bins:
        check_n_bins(ds.sizes["sample"], n_bins, variable=by)
    by_values = None if by == uE else shared(ds[by].data)
    return delayed_call(PreparedData.from_arrays,
        shared(ds[E].data), shared(ds[uE].data), by_values=by_values, by=by, n_bins=n_bins,
        needs_bins=needs_bins,
    )


def _summarize(replicates, estimate, jack=None, *, method, level, names=None,
               accelerated=False):
    """Bias, standard error and interval from the replicates (last axis), layout-independent.
    With ``accelerated``, ``jack`` holds the BCa accelerations themselves (one per interval,
    :func:`xuqcal.core.intervals.acceleration` of the jackknife values: the same values).

    The replicates are copied to C order first: NumPy's pairwise sums depend on the memory
    layout, and bit-identical results must not depend on how Dask chunked the replicates.
    """
    replicates = np.ascontiguousarray(replicates)
    # undefined statistics (NaN or inf replicates, named by UndefinedStatisticWarning) give NaN
    # summaries without NumPy's arithmetic warnings; finite values are unaffected
    with np.errstate(invalid="ignore", over="ignore"):
        bias = replicates.mean(axis=-1) - estimate
        se = safe_std(replicates)
        if method == "bca" and accelerated:
            lo, hi = bca_interval(replicates, estimate, level=level, acceleration_value=jack,
                                  names=names)
        elif method == "bca":
            lo, hi = bca_interval(replicates, estimate, np.ascontiguousarray(jack), level,
                                  names=names)
        else:
            lo, hi = percentile_interval(replicates, level)
    return bias, se, lo, hi


def bootstrap_prepared(prepared: PreparedData, codes: np.ndarray, *, n_boot: int, seed: int,
                       level: float = defaults.LEVEL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eager BCa interval of one prepared data set: ``(estimate, ci_low, ci_high)``.

    The same computation as :func:`bootstrap` with ``seed`` (same streams, bit-identical
    bounds), without a Dask graph: for studies that bootstrap many small data sets and
    parallelize over data sets instead.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.core.statistics import codes_of, get_statistics
    >>> ds = xuqcal.synthetic.nig(500, nu=6, seed=0)
    >>> prepared = PreparedData.from_arrays(ds.E.values, ds.uE.values, needs_bins=False)
    >>> est, lo, hi = bootstrap_prepared(prepared, codes_of(get_statistics(["zms"])), n_boot=300,
    ...                                  seed=1)
    >>> bool(lo[0] == bootstrap(ds, ["zms"], n_boot=300, seed=1).ci_low.values[0])
    True
    """
    estimate = prepared.evaluate(codes)
    replicates = _replicate_block(prepared, codes, stream_key(seed, "bootstrap"), 0, n_boot)
    jack = _jackknife_block(prepared, codes, 0, prepared.size)
    _, _, low, high = _summarize(replicates.T, estimate, jack.T, method="bca", level=level)
    return estimate, low, high


def _bootstrap_iv(ds, statistics, *, n_boot, method, level, seed, chunks, n_bins, by,
                  keep_replicates, E, uE, n_name: str = "n_boot"):
    """Argument checks of :func:`bootstrap`, before any computation (no data are read).

    Returns the statistics, ``n_boot``, ``method``, ``level``, ``seed``, ``chunks`` and ``by``
    normalised; every message starts with the parameter name (``n_name`` for ``n_boot``, the
    name under which a caller exposes it).
    """
    stats = get_statistics(statistics)
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method: unknown interval method {method!r}; choose one of {METHODS}")
    level = check_level(level)
    if method == "student":
        n_boot = check_count(n_boot, n_name)
    else:
        n_boot = check_replicates(n_boot, level, n_name)
    seed = check_seed(seed)
    chunks = check_chunks(chunks)
    check_bool(keep_replicates, "keep_replicates")
    by, m = check_input(ds, stats, n_bins=n_bins, by=by, E=E, uE=uE)
    if m < 2:
        raise ValueError(f"ds: the bootstrap needs at least 2 points, but the data have {m}")
    check_sizes(stats, m, jackknife=method == "bca")
    if method != "student":
        replicate_chunks(n_boot, chunks, name=n_name, width=len(stats))
    return stats, n_boot, method, level, seed, chunks, by


@broadcast
@by_role
def bootstrap(
    ds: xr.Dataset,
    statistics: str | Iterable[str] = ("zms", "rce"),
    *,
    n_boot: int = defaults.N_BOOT,
    method: str = "bca",
    level: float = defaults.LEVEL,
    seed: int = defaults.SEED,
    chunks: int | Sequence[int] | None = None,
    n_bins: int | None = None,
    by: str = defaults.BY,
    keep_replicates: bool = False,
    resample: str = "iid",
    groups: str | None = None,
    block: str | None = None,
    block_length: int | str | None = None,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Bootstrap estimates, bias, standard errors and confidence intervals (lazy).

    Each replicate resamples the M points with replacement and recomputes every statistic from
    scratch (binned statistics are re-sorted and re-binned). Nothing is computed until
    ``.compute()`` (or ``.load()``, ``.values``) is called.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with variables ``E`` and ``uE`` (see :mod:`xuqcal.io`).
    statistics : str or sequence of str
        Keys of the registry (:data:`xuqcal.core.statistics.STATISTICS`).
    n_boot : int
        Number of bootstrap replicates B: at least ``ceil(2 / (1 - level))`` (40 at 95 %,
        200 at 99 %), so that each tail beyond the interval holds at least one replicate on
        average (:func:`xuqcal.core.checks.minimum_replicates`); the default 10 000 is the
        recommended value.
    method : {"bca", "percentile", "student"}
        Interval method; ``"student"`` is the analytic interval of a mean (``zm``, ``zms``) and
        draws no replicates.
    level : float
        Confidence level.
    seed : int
        Seed of the random streams: the same seed gives bit-identical results for any chunks
        and any scheduler.
    chunks : int or sequence of int, optional
        Replicates per Dask task (default: the option ``replicate_chunk``,
        :func:`xuqcal.set_options`).
    n_bins, by : int or None, str
        Equal-count bins on variable ``by`` for binned statistics; ``n_bins`` defaults to
        the recommended number for M points (``defaults.N_BINS`` bins of at least
        ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points, as :func:`xuqcal.stats`; a number given
        with fewer points per bin warns).
    keep_replicates : bool
        Also return the raw replicate values (``replicates`` over ``statistic × replicate``).
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        How the points are resampled (:mod:`xuqcal.analysis.dependent`): independently
        (default), by whole groups of ``groups``, or by blocks of ``block_length``
        consecutive points in the order of ``block``; with BCa, the acceleration of a
        dependent resample comes from the delete-one-group (or delete-one-block) jackknife.
    groups : str, optional
        With ``resample="cluster"``: the variable over ``sample`` holding each point's group
        (e.g. ``"structure_id"``).
    block : str, optional
        With a block scheme: the variable over ``sample`` that orders the points (e.g.
        ``"time"``).
    block_length : int or "auto", optional
        With a block scheme: points per block (the mean length for ``"stationary"``);
        ``"auto"``: Politis & White's optimal length for ``Z²`` in the order of ``block``
        (:func:`xuqcal.core.blocklength.optimal_block_length`; the data are read at the call).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        ``estimate``, ``bias``, ``se``, ``ci_low``, ``ci_high`` over ``statistic`` (Dask-backed),
        with attributes recording how they were computed.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=1)
    >>> bs = bootstrap(ds, ["zms", "rce"], n_boot=500, seed=0)
    >>> bs.ci_low.chunks is not None  # lazy
    True
    >>> result = bs.compute()
    >>> bool((result.ci_low < result.estimate).all())
    True
    """
    n_bins = n_bins_for(ds, n_bins, statistics=statistics)
    stats, n_boot, method, level, seed, chunks, by = _bootstrap_iv(
        ds, statistics, n_boot=n_boot, method=method, level=level, seed=seed, chunks=chunks,
        n_bins=n_bins, by=by, keep_replicates=keep_replicates, E=E, uE=uE)
    from xuqcal.analysis.dependent import check_dependence

    dependence = check_dependence(ds, resample, groups, block, block_length)
    if not dependence.iid and method == "student":
        raise ValueError("method: the Student interval assumes independent points; use "
                         f"method='bca' or 'percentile' with resample={resample!r}")
    if dependence.iid:
        from xuqcal.analysis.dependence_scan import warn_if_dependent

        warn_if_dependent(ds, E=E, uE=uE, analysis="bootstrap")
    return bootstrap_checked(ds, stats, n_boot=n_boot, method=method, level=level, seed=seed,
                             chunks=chunks, n_bins=n_bins, by=by,
                             keep_replicates=keep_replicates, E=E, uE=uE,
                             dependence=None if dependence.iid else dependence)


def bootstrap_checked(ds: xr.Dataset, stats: Sequence[Statistic], *, n_boot: int, method: str,
                      level: float, seed: int, chunks, n_bins: int, by: str,
                      keep_replicates: bool, E: str, uE: str,
                      dependence=None) -> xr.Dataset:
    """:func:`bootstrap` of arguments already checked and normalised by ``_bootstrap_iv`` (for
    callers that check their arguments once, such as :func:`xuqcal.validate`);
    ``dependence``: a checked dependent resample (:mod:`xuqcal.analysis.dependent`)."""
    codes = codes_of(stats)
    m = ds.sizes["sample"]
    attrs = bootstrap_attrs(stats, method=method, level=level, n_boot=n_boot, seed=seed,
                            n_bins=n_bins, by=by, m=m)
    if dependence is None and method != "student" and on_gpu(codes):
        attrs["device"] = ("cuda (moment statistics, cc, and binned ones of a binning "
                           "variable without ties, on the GPU; the same streams)")
    coords = statistic_coords(stats)
    if method == "student":
        return _student(ds, stats, level, coords, attrs, E=E, uE=uE)

    if dependence is not None:
        from xuqcal.analysis.dependent import AUTO_LENGTH, automatic_length, dependent_parts

        check_fits_in_one_task(m, task_bytes_per_point(len(stats), jackknife=True),
                               "bootstrap")
        if dependence.block_length == AUTO_LENGTH:
            dependence = automatic_length(ds, dependence, E=E, uE=uE)
        attrs.update(dependence.attrs())
        estimate, replicates, jack = dependent_parts(
            ds, stats, dependence, n_boot=n_boot, seed=seed, chunks=chunks, n_bins=n_bins,
            by=by, jackknife=method == "bca", E=E, uE=uE)
        return bootstrap_result(estimate, replicates, jack, stats=stats, method=method,
                                level=level, attrs=attrs, keep_replicates=keep_replicates)
    prepared = prepare_lazily(ds, stats, n_bins=n_bins, by=by, E=E, uE=uE,
                              jackknife=method == "bca")
    estimate = xr.DataArray(
        da.from_delayed(delayed_call(PreparedData.evaluate, prepared, codes),
                        shape=(len(stats),), dtype=np.float64),
        dims=("statistic",),
    )
    replicates = xr.DataArray(
        bootstrap_replicates(prepared, codes, n_boot, seed, chunks).T,
        dims=("statistic", "replicate"),
    )
    jack = (xr.DataArray(jackknife(prepared, codes, m).T, dims=("statistic", "jackknife"))
            if method == "bca" else None)
    return bootstrap_result(estimate, replicates, jack, stats=stats, method=method,
                            level=level, attrs=attrs, keep_replicates=keep_replicates)


def bootstrap_attrs(stats: Sequence[Statistic], *, method: str, level: float, n_boot: int,
                    seed: int, n_bins: int, by: str, m: int) -> dict:
    """The attributes of a :func:`bootstrap` result (how it was computed)."""
    return {
        "method": method,
        "level": level,
        "n_boot": n_boot if method != "student" else 0,
        "seed": seed,
        "n_bins": n_bins if any(s.needs_bins for s in stats) else 0,
        "by": by,
        "n_samples": m,
        "quantiles": "linear interpolation (Hyndman-Fan type 7)",
        "jackknife": "exact leave-one-out" if method == "bca" else "",
        "random_streams": RNG_DESCRIPTION if method != "student" else "",
    }


def bootstrap_result(estimate: xr.DataArray, replicates: xr.DataArray,
                     jack: xr.DataArray | None, *, stats: Sequence[Statistic], method: str,
                     level: float, attrs: dict, keep_replicates: bool,
                     accelerations: xr.DataArray | None = None) -> xr.Dataset:
    """The :func:`bootstrap` result from the estimates, the replicates (``statistic ×
    replicate``) and, for BCa, the jackknife values (``statistic × jackknife``) or their
    ``accelerations`` (``statistic``; :func:`xuqcal.core.intervals.acceleration` of them, the
    same intervals: the rounds of a precision-driven validate compute them once): lazy for
    Dask-backed inputs, computed for NumPy-backed ones (the replicates of a
    precision-driven bootstrap, :mod:`xuqcal.analysis.precision`), the same summaries."""
    accelerated = method == "bca" and accelerations is not None
    arguments = [replicates, estimate]
    if accelerated:
        arguments.append(accelerations)
    elif method == "bca":
        arguments.append(jack)
    dims = [("statistic", "replicate"), ("statistic",),
            ("statistic",) if accelerated else ("statistic", "jackknife")]
    kwargs = {"method": method, "level": level, "names": [s.key for s in stats],
              "accelerated": accelerated}
    if any(a.dims != d for a, d in zip(arguments, dims, strict=False)):
        raise ValueError(f"bootstrap_result: the dimensions {[a.dims for a in arguments]} "
                         f"are not {dims[:len(arguments)]}")
    if any(a.chunks is not None for a in arguments):
        # one task of the whole arrays (their blocks gathered), as apply_ufunc's one block
        summary = delayed_call(_summarize, *(a.data for a in arguments), **kwargs)
        n = estimate.shape[0]
        bias, se, ci_low, ci_high = (
            part_of(summary, operator.getitem, (k,), (n,)) for k in range(4))
    else:
        bias, se, ci_low, ci_high = _summarize(*(a.values for a in arguments), **kwargs)
    result = xr.Dataset(
        {
            "estimate": estimate,
            "bias": ("statistic", bias),
            "se": ("statistic", se),
            "ci_low": ("statistic", ci_low),
            "ci_high": ("statistic", ci_high),
        },
        coords=statistic_coords(stats),
    )
    if keep_replicates:
        result["replicates"] = replicates
    return _describe(attach(result, attrs))


def _student(ds, stats, level, coords, attrs, *, E, uE) -> xr.Dataset:
    not_means = [s.key for s in stats if not s.is_mean]
    if not_means:
        raise ValueError(
            f"method: the Student interval applies to means only (zm, zms), not to "
            f"{', '.join(not_means)}"
        )

    def per_point(e, u):
        # the per-point quantity whose mean the statistic is (its one column: Z or Z²)
        columns = point_columns(e, u, [s.columns[0] for s in stats])
        return np.stack([columns[s.columns[0]] for s in stats])

    def analytic(e, u):
        mean, lo, hi = student_interval(per_point(e, u), level)
        se = per_point(e, u).std(axis=-1, ddof=1) / np.sqrt(e.shape[-1])
        return mean, np.full_like(mean, np.nan), se, lo, hi

    out = xr.apply_ufunc(
        analytic, ds[E], ds[uE], input_core_dims=[["sample"], ["sample"]],
        output_core_dims=[["statistic"]] * 5, dask="parallelized",
        output_dtypes=[np.float64] * 5,
        dask_gufunc_kwargs={"output_sizes": {"statistic": len(stats)}, "allow_rechunk": True},
    )
    names = ("estimate", "bias", "se", "ci_low", "ci_high")
    result = xr.Dataset(dict(zip(names, out, strict=True)), coords=coords)
    return _describe(attach(result, attrs))


_DESCRIPTIONS = {
    "estimate": "statistic of the data",
    "bias": "bootstrap bias: mean of the replicates minus the estimate",
    "se": "standard error (standard deviation of the replicates)",
    "ci_low": "lower bound of the confidence interval",
    "ci_high": "upper bound of the confidence interval",
    "replicates": "bootstrap replicates of the statistic",
}


def _describe(result: xr.Dataset) -> xr.Dataset:
    for name, text in _DESCRIPTIONS.items():
        if name in result:
            result[name].attrs["long_name"] = text
    if result.attrs.get("method") == "student":
        result["bias"].attrs["long_name"] = "not defined for the analytic interval (NaN)"
        result["se"].attrs["long_name"] = "standard error of the mean, s / sqrt(n)"
    return result

