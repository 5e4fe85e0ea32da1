"""The replicate axis of the bootstraps: its chunks, and replicates drawn as row multiplicities.

The building blocks that the iid bootstrap (:mod:`xuqcal.analysis.resampling`) and the
dependent bootstraps (:mod:`xuqcal.analysis.dependent`) share: how many replicates a Dask task
computes (:func:`default_chunk`, :func:`replicate_chunks`), and the evaluation of replicates
whose rows are drawn as multiplicities a block at a time (:func:`count_blocks`,
:func:`counts_replicates`). No value depends on the chunking or the block size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from xuqcal.core import defaults
from xuqcal.core import kernels as K
from xuqcal.core.checks import check_chunks, check_count
from xuqcal.core.memory import check_replicates_fit
from xuqcal.core.statistics import PreparedData
from xuqcal.core.threads import cores
from xuqcal.options import OPTIONS

__all__ = ["COUNTS_BLOCK", "count_blocks", "counts_replicates", "default_chunk",
           "evaluate_row_counts", "replicate_chunks"]


def default_chunk(n_replicates: int, tasks_per_core: int = 2) -> int:
    """Replicates per Dask task when ``chunks`` is not given: the option ``replicate_chunk``,
    but small enough that the replicates give every core the process may use
    (:func:`xuqcal.core.threads.cores`, as the jackknife's blocks) ``tasks_per_core`` tasks
    (1000 replicates in one task would use one core of sixteen), and large enough that there
    are at most ``defaults.MAX_REPLICATE_TASKS`` tasks. The chunking does not change any
    value.

    Examples
    --------
    >>> default_chunk(10**8)
    100000
    >>> default_chunk(100_000)
    1000
    """
    return max(1, min(OPTIONS["replicate_chunk"],
                      math.ceil(n_replicates / (tasks_per_core * cores()))),
               math.ceil(n_replicates / defaults.MAX_REPLICATE_TASKS))


def replicate_chunks(n_replicates: int, chunks: int | Sequence[int] | None = None, *,
                     name: str = "n_boot", width: int = 1) -> tuple[int, ...]:
    """Chunk sizes along ``replicate`` for ``n_replicates`` replicates (the public parameter
    ``name``: ``n_boot`` or ``n_mc``); ``chunks=None`` takes :func:`default_chunk` (the
    option ``replicate_chunk``, made smaller to give every core two tasks and larger to keep
    at most ``defaults.MAX_REPLICATE_TASKS`` chunks).

    A count whose replicates (``width`` values each) would not fit in memory when summarised
    is refused here, before any work (:func:`xuqcal.core.memory.check_replicates_fit`).

    Examples
    --------
    >>> replicate_chunks(2500, 1000)
    (1000, 1000, 500)
    >>> len(replicate_chunks(10**8)), replicate_chunks(10**8)[0]
    (1000, 100000)
    """
    check_count(n_replicates, name, 1)
    chunks = check_chunks(chunks)
    check_replicates_fit(n_replicates, width, name)
    if chunks is None:
        chunks = default_chunk(n_replicates)
    if isinstance(chunks, int):
        size = chunks
        rest = [n_replicates % size] if n_replicates % size else []
        return tuple([size] * (n_replicates // size) + rest)
    if sum(chunks) != n_replicates:
        raise ValueError(f"chunks: sizes {chunks} must be positive and add up to "
                         f"{name}={n_replicates}")
    return chunks


#: Row multiplicities (rows × replicates) drawn and evaluated at once by
#: :func:`counts_replicates` (32 MB of int32).
COUNTS_BLOCK = 1 << 23


def evaluate_row_counts(prepared: PreparedData, rows_of: np.ndarray, codes: np.ndarray,
                        row_counts: np.ndarray, out: np.ndarray) -> None:
    """``out[i]``: the statistics ``codes`` of the resample whose rows have the multiplicities
    ``row_counts[i]``, the point at position ``p`` of ``prepared`` being row ``rows_of[p]``
    (:func:`xuqcal.core.kernels.paired_counts_block`; not unscaled)."""
    K.paired_counts_block(row_counts, rows_of, codes, prepared.n_bins,
                          *prepared.kernel_arrays(),
                          K.make_work(prepared.size, prepared.n_bins), out)


def count_blocks(fill, n_rows: int, start: int, stop: int):
    """The row multiplicities of replicates ``start .. stop - 1``, drawn
    :data:`COUNTS_BLOCK` values at a time: ``(first, last, block)`` with ``block`` the
    ``(last - first, n_rows)`` int32 counts that ``fill(first, last, block)`` wrote (one
    buffer, reused: read it before the next block)."""
    size = max(1, min(stop - start, COUNTS_BLOCK // max(n_rows, 1)))
    row_counts = np.empty((size, n_rows), dtype=np.int32)
    for first in range(start, stop, size):
        last = min(stop, first + size)
        block = row_counts[:last - first]
        fill(first, last, block)
        yield first, last, block


def counts_replicates(models: Sequence[tuple[PreparedData, np.ndarray]], codes: np.ndarray,
                      fill, start: int, stop: int, n_rows: int | None = None) -> np.ndarray:
    """Replicates ``start .. stop - 1`` ``(model, replicate, code)`` drawn as row
    multiplicities: ``fill(first, last, block)`` writes those of replicates ``first .. last -
    1`` (a cluster, block or paired resample) into ``block`` (``(last - first, n_rows)``),
    and every model ``(prepared, rows_of)`` evaluates them (its points may be any subset of
    the rows). ``n_rows`` defaults to the first model's points (every model on every row).
    Replicates are drawn :data:`COUNTS_BLOCK` values at a time; no value depends on it; a
    statistic undefined on a replicate (a subset that received no point) is NaN there."""
    m = models[0][1].size if n_rows is None else int(n_rows)
    out = np.empty((len(models), stop - start, codes.shape[0]))
    for first, last, block in count_blocks(fill, m, start, stop):
        with np.errstate(invalid="ignore", divide="ignore"):
            for i, (prepared, rows_of) in enumerate(models):
                evaluate_row_counts(prepared, rows_of, codes, block,
                                    out[i, first - start:last - start])
    with np.errstate(invalid="ignore", divide="ignore"):
        for i, (prepared, _) in enumerate(models):
            out[i] = prepared.unscale(codes, out[i])
    return out
