"""GPU bootstrap of the moment and binned statistics and GPU simulation of the references, on
the CPU's random streams (numba-cuda).

Replicate ``r`` of :func:`bootstrap_moments_gpu` draws the same indices as the CPU kernel
(:func:`xuqcal.core.kernels.bootstrap_block`), sums the same per-point columns
(:func:`xuqcal.core.kernels.pack_moments`) and finishes each statistic with the same finisher
(:data:`xuqcal.core.kernels.FINISHERS`), and adds the sums in the CPU's order (see **Sums**),
so the replicates are the CPU's bit for bit (on the simulator; on a GPU, to be measured). Before
(the sums in a tree, ``order=IN_A_TREE``), on an H200
(``benchmarks/measured/gpu-bootstrap-issue26-h200-2026-11-26.json``) the largest relative
difference of the replicates at M = 2·10^5 was 4.2e-14 for zms and at most 5.4e-14 for the other
means; more where a statistic cancels: 5.8e-13 for ``rce = (RMV - RMSE) / RMV`` (the CPU's own
rounding error divided by ``|rce|``) and 1.0e-11 for ``zm``, a mean near 0; zms at M = 2·10^6
differed by 1.1e-13.

**The streams.** The CPU draws index ``i`` of replicate ``r`` with
``j, state = next_below(state, M)`` from ``state = stream_start(key, r)``: raw draw
``p = 0, 1, ...`` (call ``p + 1`` of ``next_u64``) is ``mix64(state + (p + 1) γ)``, and
Lemire's test accepts or rejects it from its own bits alone. The ``i``-th index is thus the
``i``-th accepted raw draw, and the draws of one replicate can be made in parallel. One thread
block computes one replicate in rounds: a round covers the next ``d`` raw positions, ``d`` being
the number of indices still missing (``M`` in the first round), every thread takes a strided
share of them and adds the columns of its accepted draws, and the block counts the accepted
ones. A round accepts at most ``d`` draws, so no index of rank ``M`` or more is ever added, and
the rounds stop when ``M`` are accepted: the accepted raw positions seen are exactly the first
``M``. Rejections are rare (probability below ``M / 2^32``): at M = 2·10^6 a second round
handles at most about ``M² / 2^32`` ≈ 930 draws on average and a third almost never runs.

**One definition.** The stream primitives are not written again: ``_mix64``, ``stream_start``
and ``next_u64`` of :mod:`xuqcal.core.kernels` are compiled for the GPU from their own Python
source (``py_func``; the callee ``_mix64`` rebound to its device twin), with the constants of
that module, and so is Lemire's test on one raw number (``kernels.lemire_accept``, which the
CPU's batched draws call too); its threshold ``(2^32 - M) mod M`` is computed once on the host
(``kernels.lemire_threshold``). The statistics are finished on the host from the column sums by
the same finishers as on the CPU (their ``py_func`` on arrays, as
:meth:`xuqcal.core.statistics.Statistic.from_sums`).

**Sums.** In the CPU's order (:func:`cpu_order`, since the session of 2026-11-27, third).
Below :data:`xuqcal.core.kernels._COUNTED_SUMS_FROM` points the CPU adds the drawn rows one after
the other: the block tests a chunk of ``blockDim`` raw positions at once, each thread staging its
drawn row in shared memory, and the first thread adds the accepted rows in order until ``M`` are
accepted (:data:`IN_DRAW_ORDER`). From there on the CPU counts the draws and adds
``count × row`` in point order as four interleaved chains (``kernels._counted_sums``): the
block counts into an int32 row of device memory (atomic increments; rows of
at most :data:`EXACT_ORDER_BYTES` in flight), then stages counts and rows chunk by chunk, four
threads add the four chains and one adds them up and the last ``M mod 4`` points
(:data:`COUNTED`). The kernel is compiled without contraction (:func:`_jit_exact`,
:class:`_NoContraction`): ``count × row + sum`` is never one FMA. ``order=IN_A_TREE`` keeps the
earlier order: each thread adds its share with Neumaier's compensated summation and the threads'
sums are added in a tree (the CPU's sums to rounding, in fewer sequential steps). What the
ordered additions cost on a GPU is not measured yet (``benchmarks/gpu_bootstrap.py`` times
both).

**Binned statistics** (:func:`bootstrap_statistics_gpu`, since the session of 2026-11-27,
third). The bins of a resample are equal-count bins of its copies in binning order; the CPU
walks the points with their counts (``kernels._bin_sums``), and the GPU's :data:`COUNTED`
launch, after the counts, has one thread run the same function and its callees compiled for
the GPU (:func:`_device_twin`), so a bin's sums are the CPU's bits. Only for a binning
variable without ties (:func:`gpu_bootstrap_codes`): the CPU adds the copies of tied points
in the order they were drawn, which counts do not keep; those bins are made by the CPU in the
same Dask task (``analysis.resampling._replicate_block_gpu``).
The walk reads the counts and the data from device memory, one thread per replicate.

**cc** (Spearman's correlation of ``|E|`` and uE with multiplicities,
:func:`bootstrap_statistics_gpu`). The CPU's average ranks (``kernels._average_ranks``) walk the
sorted points with a running count; the block makes the same numbers from prefix sums of the
counts in sorted order (integers: exact in any order; :func:`_block_average_ranks`), a tie
group's rank being
``below + 0.5 (group + 1)`` of the same two integers. The Spearman sums are exact up to
``kernels._EXACT_RANK_SUMS`` weighted points, so the block adds them in a tree; above, one
thread adds them in point order from staged chunks (:func:`_block_spearman_sums`). The rows of
prefixes and ranks (24 bytes a point) limit the replicates in flight. The costs of the bin walk
and of the ranks on a GPU are not measured yet (``benchmarks/gpu_bootstrap.py``).

**Simulated references.** Replicate ``r`` of :func:`simulate_statistics_gpu` draws the same
synthetic errors ``eps`` as the CPU kernel (:func:`xuqcal.core.kernels.simulate_block`, which
fills them with :func:`xuqcal.core.kernels.fill_variates`) from the same stream
``stream_start(key, r)``, evaluates ``E~ = uE eps`` and adds ``sum E~²``, ``sum eps²`` and
``sum eps`` and, for the binned statistics, the same sums per equal-count bin (contiguous
positions, ``floor(b M / N)``, as :func:`xuqcal.core.kernels.bin_start`); the sums of ``uE²``
and ``ln uE²`` (whole and per bin) do not depend on ``eps`` and are added on the host, one after
the other. The statistics are finished on the host by the same finishers
(:data:`xuqcal.core.kernels.FINISHERS`, :data:`xuqcal.core.kernels.BIN_TERMS`, the bin terms
added in bin order). The variates are made by :func:`xuqcal.core.kernels.next_variate` (the
step of ``fill_variates``: the ziggurat normal; for a Student-t of integer ν from 3 to 6 its own
ziggurat (stream version 4), of another even ν ≤ 32 the normal times ``sqrt(ν / χ²)`` with
``χ²`` from ν/2 ziggurat exponentials, else the normal times ``sqrt(ν / (2 G))`` with a
Marsaglia-Tsang gamma ``G`` (stream version 3); one uniform for the uniform and Laplace
generators). ``next_variate``, with ``next_uniform``, ``next_normal``, ``next_exponential``,
``_exp_arithmetic``, ``next_student`` and ``next_student_ziggurat``, is compiled
from its ``py_func`` as the stream primitives, with the ziggurat tables of
:mod:`xuqcal.core.kernels` as constant arrays (the Student-t tables, 24 KiB, are named once
in their function, so that they are placed once; not compiled on a GPU yet), and its factors
are those of
``kernels.variate_constants``: the formulas of a variate are written once, for both targets
(checked variate by variate against ``fill_variates`` in ``tests/test_gpu_simulation.py``).

*A replicate split between threads.* The number of raw draws a variate takes depends on the
rejections of the ziggurat and gamma methods, so where variate ``i`` begins in the stream
depends on every earlier draw. The raw stream is still random-access (draw ``p`` is
``mix64(start + (p + 1) γ)``), and a parse started at an arbitrary raw position soon stands on
the same positions as the stream's own: thread ``k`` of the ``group`` threads of a replicate
parses from the start of its segment of raw draws past the next segment's start, until it
meets the parse of the next thread; the meeting points and the variates counted before them
place every segment's first variate, and each thread then draws and adds its own points
(:func:`_simulation_sums`, :func:`split_plan`). The normal, uniform, Laplace and ziggurat
Student-t parses meet within a few draws (``parse-meeting-stream4-issue26-2026-11-27.json``);
the chi-square t's within 15 to 25 ``(ν/2)²`` draws on average and the gamma
t's within 60 to 145 (``parse-meeting-stream3-issue26-2026-11-27.json``), so their
segments are longer (``benchmarks/measured/parse-meeting-issue26-2026-11-27.json``). A
replicate whose parses meet too late to be placed is drawn by one thread (``fallbacks``; none
in 12 replicates of 2·10^6 points on an H200). A set of fewer than about a thousand points per
thread is drawn by one thread, as before the split. The variates are the
CPU's whatever the split (tested on the simulator with segments of a few draws, and on an
H200). The sums are then the CPU's additions in the CPU's order (the default since
the session of 2026-11-27, third): the threads write their variates to a row of device memory
per replicate, and the replicate's threads copy the row chunk by chunk into shared memory,
where its first thread adds the points one after the other as the CPU's loop does. Rows of
at most :data:`EXACT_ORDER_BYTES` are held at once (at M = 2·10^6, 536 replicates in flight
instead of up to 65 535). With ``order=IN_A_TREE`` a thread adds its own points, the threads' sums
are added in a tree and a bin split between threads in thread order: the CPU's additions in
another order (the figures below were measured so), in fewer steps in one thread. The time
the ordered additions cost on a GPU is not measured yet (``benchmarks/gpu_split.py`` times
both).

*Supported:* every moment and binned statistic; the generators normal, ``t<ν>`` (and
``tfit``), uniform and Laplace (:data:`SIMULATION_GENERATORS`), and the rank statistic ``cc``:
the simulation kernel leaves each set's variates in device memory, where :func:`_rank_sums`
sorts its ``|E~|`` and ranks it, a block per set, and adds the Spearman sums as the CPU does
(:func:`simulation_cc_sums_gpu`; the CPU's bits, on the simulator; not timed on a GPU yet).
*On the CPU:* ``normp<p>``, whose gamma variates accept or reject a draw on a comparison of
logarithms (a GPU ``log`` rounding differently in the last bit could accept another draw: the
rest of the replicate would differ).

*Agreement.* Every accept-or-reject decision of the normal, exponential and even-ν Student-t
variates is made with additions, multiplications and comparisons only (the ziggurats' wedges
compare with ``_exp_arithmetic``, not libm's ``exp``; the normal's tail uses exponentials, not
logarithms), and those of the ziggurat Student-t (ν from 3 to 6) with divisions and ``sqrt``
as well (its density, :func:`xuqcal.core.kernels._student_density`), all correctly rounded on
both targets, which the GPU computes as the CPU unless a
multiply and an add are fused into one FMA (the CPU never fuses them). :class:`_NoContraction`
stops both compilers from fusing: NVVM compiles with ``-fma=0`` and the double additions and
multiplications of its PTX get an explicit ``.rn``, which the assembler never fuses; the kernel
is compiled without link-time optimization (:func:`_jit_exact`), so that NVVM writes PTX. On an
H200 (numba-cuda 0.30.4) the machine code then had no ``DFMA``
(``benchmarks/measured/gpu-split-issue26-h200-2026-11-27.json``; with ``-fma=0`` alone it had,
``fma-check-issue26-h200-2026-11-27.json``). The values then differ only where a libm
function makes them: ``sqrt`` is correctly rounded on both targets (the normal and even-ν t are
the same bits; so is the gamma t's, formed with ``sqrt`` and a division); Laplace's ``log`` is
within one unit in the last place in libdevice, not always the libm's bits, and the gamma t's
tries past the Marsaglia-Tsang squeeze (``u >= 1 - 0.0331 x⁴``) compare
logarithms: a ``log`` rounded differently could, on a comparison within its last bit, accept
another try (not measured on a GPU yet). On Numba's simulator the device code runs with NumPy's
scalar functions; ``tests/test_gpu_simulation.py`` and ``tests/test_gpu_split.py`` bound the
variates and statistics at 1e-12 relative to the CPU's.

Measured on an H200 (``gpu-split-issue26-h200-2026-11-27.json``; t5 was then Bailey's polar t,
stream version 2, whose ``pow`` is within one unit in the last place): of 2 replicates of 2·10^6
points split between 256 threads, the normal, t4, t6 and uniform variates were the CPU's bit
for bit (4·10^6 of 4·10^6 each), Laplace's 3 990 443 (the rest one unit in the last place,
``log``) and t5's (Bailey's, ``pow``) 3 662 271, at most 3.3e-13 relative apart. Of 100
replicates of 2·10^5 points, one thread per replicate (the CPU's additions in the CPU's order)
gave statistics within 2.8e-16 relative of the CPU's for the normal, t4, t6 and uniform
generators (2.9e-14 for Laplace, 4.8e-12 for t5); split between 64 to
256 threads with the sums in a tree (the only split then), the moment sums were added in
another order: mse, zms and nll within 4.5e-14
relative, ence and zmse within 1.0e-12, zm within 2.3e-12, and rce, ``(RMV - RMSE) / RMV``,
which passes near 0 in some replicates, within 1.4e-9 (its terms' relative difference, about
1e-14, divided by ``|rce|``: the CPU's own rounding error is of the same size). At
M = 2·10^6, zms + ence + zmse, a launch of the first round of ``n_mc="auto"`` (500 sets) took
0.155 s for the normal generator (2.54 s with one thread per replicate), 0.956 s for t6 (15.6 s)
and 0.066 s for t5 (2.19 s); 10^4 normal sets took 2.31 s (3.30 s).

numba-cuda is optional (``pip install 'xuqcal[gpu]'``); nothing here imports it before a GPU
function is called. With ``NUMBA_ENABLE_CUDASIM=1`` the kernels run in Numba's CUDA simulator
(slowly: the tests use a few hundred points).
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import threading
import types
import warnings

import numpy as np

from xuqcal.core import kernels as K

#: Most threads per block (the size of the kernel's shared arrays).
MAX_THREADS = 512
#: How a kernel adds a replicate's sums (the parameter ``order``): one after the other in the
#: order of the draws, or counted in point order (the CPU's two orders for a bootstrap,
#: :func:`_bootstrap_sums`; a simulation adds its variates in draw order), or in a tree of the
#: threads' sums.
IN_DRAW_ORDER = 0
COUNTED = 1
IN_A_TREE = 2
#: Threads per block used by default (a power of two).
THREADS = 256
#: Largest number of blocks launched at once (each loops over replicates when there are more).
_MAX_BLOCKS = 65535

# the ``cuda`` module, bound on first use (:func:`_kernels`): the kernels below refer to it as a
# module global, which the simulator swaps for its own while a kernel runs
cuda = None
# the device twins of the CPU's bin walk, bound by _kernels
_bin_sums_device = None
_block_average_ranks_device = None
_block_spearman_sums_device = None
# the device twins of the stream primitives of xuqcal.core.kernels, bound by _kernels()
_stream_start = None
_next_u64 = None
_accept = None
_add = None
_tree_sum_device = None


def cuda_available() -> bool:
    """Whether the GPU functions can run: numba's CUDA target imports and sees a GPU (or
    Numba's CUDA simulator is on, ``NUMBA_ENABLE_CUDASIM=1``). Never raises.

    Examples
    --------
    >>> isinstance(cuda_available(), bool)
    True
    """
    try:
        from numba import cuda as numba_cuda
    except Exception:
        return False
    try:
        return bool(numba_cuda.is_available())
    except Exception:
        return False


def _simulated() -> bool:
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", False))


def _device_twin(function, **callees):
    """The plain Python function behind the jitted ``function`` of :mod:`xuqcal.core.kernels`
    (its code object, its module's globals), with the jitted ``callees`` replaced by their
    device twins: the same source, compiled for the GPU."""
    source = function.py_func
    # only the names the code refers to (the simulator scans a device function's globals at
    # every call)
    namespace = {name: source.__globals__[name] for name in source.__code__.co_names
                 if name in source.__globals__}
    namespace["__builtins__"] = source.__globals__["__builtins__"]
    namespace.update(callees)
    twin = types.FunctionType(source.__code__, namespace, source.__name__,
                              source.__defaults__, source.__closure__)
    twin.__doc__ = source.__doc__
    return twin


def _tree_sum(buffer, tid, k, n_threads):
    """The sum of the ``n_threads`` entries of shared ``buffer`` from ``tid - k`` (``n_threads``
    a power of two) into ``buffer[tid - k]``, in a tree, by the group of threads whose ``k``
    (rank in the group) runs over them: a whole block with ``k = tid``. Every thread of the
    block calls it (it synchronizes the block)."""
    half = n_threads // 2
    while half > 0:
        if k < half:
            buffer[tid] += buffer[tid + half]
        cuda.syncthreads()
        half //= 2


def _neumaier(total, compensation, x):
    """One step of Neumaier's compensated sum; returns ``(total, compensation)``."""
    t = total + x
    if abs(total) >= abs(x):
        compensation += (total - t) + x
    else:
        compensation += (x - t) + total
    return t, compensation


def _bootstrap_sums(key, first, n_replicates, m, bound, threshold, columns, width, sums, draws,
                    n_record, order, counts, e2, u2, z2, n_bins, bins, want_cc, order_u,
                    starts_u, ends_u, order_e, starts_e, ends_e, ranks, cc_sums):
    """Kernel: ``sums[r, c]``, the sum of ``columns[j, c]`` (``c < width``) over the ``m``
    indices ``j`` below ``bound`` (``m`` in a bootstrap) drawn by replicate ``first + r`` (one
    block per replicate, looping with the grid's stride).

    ``order`` says how the sums are added:

    - :data:`IN_DRAW_ORDER`: as :func:`xuqcal.core.kernels.bootstrap_block` below
      :data:`~xuqcal.core.kernels._COUNTED_SUMS_FROM` points, one after the other in the order
      of the draws. The block visits the raw positions a chunk of ``blockDim`` at a time: each
      thread tests its position's draw and stages the drawn row in shared memory, and the
      first thread adds the accepted rows in position order until ``m`` are accepted.
    - :data:`COUNTED`: as the CPU from that size on (:func:`xuqcal.core.kernels._counted_sums`):
      the block counts the draws into its row of ``counts`` (atomic increments), then stages
      counts and rows chunk by chunk in shared memory, where threads 0 to 3 each add the points
      ``j = k mod 4`` in point order, and thread 0 adds the four partial sums as
      ``(s0 + s1) + (s2 + s3)`` and the last ``m mod 4`` points one by one. With
      ``n_bins > 0`` thread 0 then adds the equal-count bins of the resample from the counts
      and ``e2``, ``u2``, ``z2`` (points in binning order, without ties) into
      ``bins[r, 0..3, b]`` (counts, E², uE², Z² of bin ``b``) with the CPU's own
      :func:`xuqcal.core.kernels._bin_sums` (its device twin). With ``want_cc`` the block then
      makes the sums of cc's Spearman correlation, ``cc_sums[r] = (sab, saa, sbb)``, as
      :func:`xuqcal.core.kernels._spearman` (:func:`_block_average_ranks`,
      :func:`_block_spearman_sums`), in the rows ``ranks[row]`` (prefix counts, uE ranks,
      E ranks).
    - :data:`IN_A_TREE`: each thread adds its draws with Neumaier's compensation, and the
      threads' sums are added in a tree (the CPU's sums to rounding).

    ``draws[r, p]`` (debug; ``n_record = 0`` records nothing) receives the index of raw draw
    ``p`` of the replicate when it is accepted, -1 when it is rejected, for the raw positions
    visited below ``n_record``."""
    tid = cuda.threadIdx.x
    n_threads = cuda.blockDim.x
    partial = cuda.shared.array(MAX_THREADS, np.float64)
    counted = cuda.shared.array(MAX_THREADS, np.int64)
    staged = cuda.shared.array((MAX_THREADS, 6), np.float64)
    weight = cuda.shared.array(MAX_THREADS, np.float64)
    chains = cuda.shared.array((4, 6), np.float64)
    r = cuda.blockIdx.x
    while r < n_replicates:
        state = _stream_start(key, first + r)
        if order == IN_DRAW_ORDER:
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            a4 = 0.0
            a5 = 0.0
            if tid == 0:
                counted[0] = 0  # accepted so far
            begin = np.int64(0)
            cuda.syncthreads()
            while counted[0] < m:
                p = begin + tid
                bits, _ = _next_u64(state + np.uint64(p) * K._GAMMA)
                ok, j = _accept(bits, bound, threshold)
                partial[tid] = np.float64(j) if ok else -1.0  # the index (exact, < 2**32)
                if ok:
                    for c in range(width):
                        staged[tid, c] = columns[j, c]
                cuda.syncthreads()
                if tid == 0:
                    accepted = counted[0]
                    for q in range(n_threads):
                        if accepted >= m:
                            break
                        drawn = partial[q]
                        if begin + q < n_record:
                            draws[r, begin + q] = np.int64(drawn)
                        if drawn >= 0.0:
                            accepted += 1
                            if width > 0:
                                a0 += staged[q, 0]
                                if width > 1:
                                    a1 += staged[q, 1]
                                    if width > 2:
                                        a2 += staged[q, 2]
                                        if width > 3:
                                            a3 += staged[q, 3]
                                            if width > 4:
                                                a4 += staged[q, 4]
                                                if width > 5:
                                                    a5 += staged[q, 5]
                    counted[0] = accepted
                begin += n_threads
                cuda.syncthreads()  # counted[0] read by all before the next chunk
            if tid == 0:
                for c in range(width):
                    if c == 0:
                        sums[r, c] = a0
                    elif c == 1:
                        sums[r, c] = a1
                    elif c == 2:
                        sums[r, c] = a2
                    elif c == 3:
                        sums[r, c] = a3
                    elif c == 4:
                        sums[r, c] = a4
                    else:
                        sums[r, c] = a5
            cuda.syncthreads()
            r += cuda.gridDim.x
            continue
        row = cuda.blockIdx.x  # this block's row of ``counts``
        if order == COUNTED:
            for j in range(tid, m, n_threads):
                counts[row, j] = 0
            cuda.syncthreads()
        t0 = 0.0
        t1 = 0.0
        t2 = 0.0
        t3 = 0.0
        t4 = 0.0
        t5 = 0.0
        c0 = 0.0
        c1 = 0.0
        c2 = 0.0
        c3 = 0.0
        c4 = 0.0
        c5 = 0.0
        accepted = np.int64(0)
        begin = np.int64(0)
        while accepted < m:
            end = begin + (m - accepted)
            mine = np.int64(0)
            p = begin + tid
            while p < end:
                bits, _ = _next_u64(state + np.uint64(p) * K._GAMMA)
                ok, j = _accept(bits, bound, threshold)
                if p < n_record:
                    draws[r, p] = j if ok else np.int64(-1)
                if ok:
                    mine += 1
                    if order == COUNTED:
                        cuda.atomic.add(counts, (row, j), 1)
                    elif width > 0:
                        t0, c0 = _add(t0, c0, columns[j, 0])
                        if width > 1:
                            t1, c1 = _add(t1, c1, columns[j, 1])
                            if width > 2:
                                t2, c2 = _add(t2, c2, columns[j, 2])
                                if width > 3:
                                    t3, c3 = _add(t3, c3, columns[j, 3])
                                    if width > 4:
                                        t4, c4 = _add(t4, c4, columns[j, 4])
                                        if width > 5:
                                            t5, c5 = _add(t5, c5, columns[j, 5])
                p += n_threads
            counted[tid] = mine
            cuda.syncthreads()
            _tree_sum_device(counted, tid, tid, n_threads)
            accepted += counted[0]
            begin = end
            cuda.syncthreads()  # every thread has read counted[0] before it is written again
        if order == COUNTED:
            # the counted sums in the CPU's order: four chains j = k mod 4 below head, then
            # (s0 + s1) + (s2 + s3), then the last points one by one
            head = 4 * (m // 4)
            for k in range(tid, 4, n_threads):  # chain k, by thread k mod blockDim
                for c in range(width):
                    chains[k, c] = 0.0
            cuda.syncthreads()
            for c0 in range(0, head, MAX_THREADS):
                for q in range(tid, MAX_THREADS, n_threads):
                    j = c0 + q
                    if j < head:
                        weight[q] = np.float64(counts[row, j])
                        for c in range(width):
                            staged[q, c] = columns[j, c]
                cuda.syncthreads()
                for k in range(tid, 4, n_threads):
                    for c in range(width):
                        total = chains[k, c]
                        for q in range(k, min(MAX_THREADS, head - c0), 4):
                            total += weight[q] * staged[q, c]
                        chains[k, c] = total
                cuda.syncthreads()
            if tid == 0:
                for c in range(width):
                    total = (chains[0, c] + chains[1, c]) + (chains[2, c] + chains[3, c])
                    for j in range(head, m):
                        total += np.float64(counts[row, j]) * columns[j, c]
                    sums[r, c] = total
            if tid == 0 and n_bins > 0:  # the CPU's kernels._bin_sums, compiled for the GPU
                _bin_sums_device(counts[row], e2, u2, z2, n_bins, bins[r, 0], bins[r, 1],
                                 bins[r, 2], bins[r, 3])
            cuda.syncthreads()
            if want_cc != 0:
                weights = counts[row]
                prefix = ranks[row, 0]
                rank_u = ranks[row, 1]
                rank_e = ranks[row, 2]
                _block_average_ranks_device(order_u, starts_u, ends_u, weights, prefix, rank_u,
                                            partial, tid, n_threads)
                _block_average_ranks_device(order_e, starts_e, ends_e, weights, prefix, rank_e,
                                            partial, tid, n_threads)
                _block_spearman_sums_device(weights, prefix[m - 1], rank_u, rank_e, partial,
                                            staged, cc_sums, r, tid, n_threads)
            r += cuda.gridDim.x
            continue
        for c in range(width):
            if c == 0:
                partial[tid] = t0 + c0
            elif c == 1:
                partial[tid] = t1 + c1
            elif c == 2:
                partial[tid] = t2 + c2
            elif c == 3:
                partial[tid] = t3 + c3
            elif c == 4:
                partial[tid] = t4 + c4
            else:
                partial[tid] = t5 + c5
            cuda.syncthreads()
            _tree_sum_device(partial, tid, tid, n_threads)
            if tid == 0:
                sums[r, c] = partial[0]
            cuda.syncthreads()
        r += cuda.gridDim.x


def _block_average_ranks(order, starts, ends, counts, prefix, rank, segment, tid, n_threads):
    """The average ranks of :func:`xuqcal.core.kernels._average_ranks` made by a whole block:
    ``rank[order[k]]`` for the sorted positions ``k`` (``starts[k]``, ``ends[k]``: the first and
    the end of ``k``'s tie group) of the sample weighted by ``counts``.

    ``prefix[k]``, the counts of the sorted positions up to ``k``, is a prefix sum of integers
    (exact in doubles below 2^53, so the same whatever the order of its additions), made as
    segments of ``ceil(M / blockDim)`` positions, a scan of the segments' totals by thread 0
    (in ``segment``, shared) and the segments' running sums; then a group's count and the
    counts below it are differences of prefixes, exact too, and each rank is the CPU's
    ``below + 0.5 * (group + 1.0)`` of the same two numbers: the same bits. Every thread of the
    block calls it (it synchronizes the block)."""
    m = order.shape[0]
    length = (m + n_threads - 1) // n_threads
    lo = min(tid * length, m)
    hi = min(lo + length, m)
    total = 0.0
    for k in range(lo, hi):
        total += counts[order[k]]
    segment[tid] = total
    cuda.syncthreads()
    if tid == 0:
        running = 0.0
        for t in range(n_threads):
            x = segment[t]
            segment[t] = running
            running += x
    cuda.syncthreads()
    running = segment[tid]
    for k in range(lo, hi):
        running += counts[order[k]]
        prefix[k] = running
    cuda.syncthreads()
    for k in range(lo, hi):
        first = starts[k]
        below = prefix[first - 1] if first > 0 else 0.0
        group = prefix[ends[k] - 1] - below
        rank[order[k]] = below + 0.5 * (group + 1.0)
    cuda.syncthreads()


def _block_spearman_sums(counts, n, rank_u, rank_e, partial, staged, cc_sums, r, tid,
                         n_threads):
    """``cc_sums[r] = (sab, saa, sbb)``, the sums of :func:`xuqcal.core.kernels._spearman` of
    ``n`` weighted points from their ranks: up to :data:`xuqcal.core.kernels._EXACT_RANK_SUMS`
    weighted points every partial sum is exact (multiples of 1/4 below 2^51), so the block adds
    them in a tree, the same numbers as the CPU's in any order; above, thread 0 adds them in
    point order as ``kernels._spearman_scattered``, from chunks staged in shared memory. Every
    thread of the block calls it."""
    m = counts.shape[0]
    centre = 0.5 * (n + 1.0)
    if n <= K._EXACT_RANK_SUMS:
        sab = 0.0
        saa = 0.0
        sbb = 0.0
        for p in range(tid, m, n_threads):
            c = counts[p]
            a = rank_u[p] - centre
            b = rank_e[p] - centre
            sab += c * a * b
            saa += c * a * a
            sbb += c * b * b
        for s in range(3):
            partial[tid] = sab if s == 0 else (saa if s == 1 else sbb)
            cuda.syncthreads()
            _tree_sum_device(partial, tid, tid, n_threads)
            if tid == 0:
                cc_sums[r, s] = partial[0]
            cuda.syncthreads()
        return
    sab = 0.0
    saa = 0.0
    sbb = 0.0
    for c0 in range(0, m, MAX_THREADS):
        for q in range(tid, MAX_THREADS, n_threads):
            p = c0 + q
            if p < m:
                staged[q, 0] = counts[p]
                staged[q, 1] = rank_u[p]
                staged[q, 2] = rank_e[p]
        cuda.syncthreads()
        if tid == 0:
            for q in range(min(MAX_THREADS, m - c0)):
                c = staged[q, 0]
                a = staged[q, 1] - centre
                b = staged[q, 2] - centre
                sab += c * a * b
                saa += c * a * a
                sbb += c * b * b
        cuda.syncthreads()
    if tid == 0:
        cc_sums[r, 0] = sab
        cc_sums[r, 1] = saa
        cc_sums[r, 2] = sbb
    cuda.syncthreads()


def spearman_from_sums(cc_sums: np.ndarray) -> np.ndarray:
    """cc from the sums ``(sab, saa, sbb)`` of :func:`_block_spearman_sums` (``(..., 3)``), by
    the CPU's finisher :func:`xuqcal.core.kernels.finish_spearman` (compiled, over the rows:
    :func:`~xuqcal.core.kernels.finish_spearman_rows`): ``sab / sqrt(saa sbb)``, NaN when the
    denominator is 0 (a constant variable).

    Examples
    --------
    >>> spearman_from_sums(np.array([[2.0, 4.0, 1.0], [0.0, 0.0, 3.0]])).tolist()
    [1.0, nan]
    """
    sums = np.asarray(cc_sums, dtype=np.float64)
    flat = np.ascontiguousarray(sums.reshape(-1, 3))
    values = np.empty(flat.shape[0])
    K.finish_spearman_rows(flat, values)
    return values.reshape(sums.shape[:-1])


def tie_group_bounds(tie: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted positions with tie flags ``tie`` (``tie[k]``: position ``k`` ties with
    ``k - 1``): the first position of each position's tie group and the end of the group.

    Examples
    --------
    >>> [b.tolist() for b in tie_group_bounds(np.array([False, True, True, False, False]))]
    [[0, 0, 0, 3, 4], [3, 3, 3, 4, 5]]
    """
    tie = np.asarray(tie, dtype=bool)
    m = tie.shape[0]
    first = np.flatnonzero(~tie) if m else np.zeros(0, dtype=np.int64)
    if m and tie[0]:  # (the first position never ties; a flag there starts a group anyway)
        first = np.concatenate([[0], first])
    sizes = np.diff(np.append(first, m))
    starts = np.repeat(first, sizes).astype(np.int64)
    ends = np.repeat(first + sizes, sizes).astype(np.int64)
    return starts, ends


@functools.cache
def _kernels():
    """Compile (once) the device twins of the stream primitives and the kernel."""
    global cuda, _stream_start, _next_u64, _accept, _add, _tree_sum_device
    global _bin_sums_device
    global _block_average_ranks_device, _block_spearman_sums_device
    if not cuda_available():
        raise RuntimeError("no CUDA GPU is available: install numba-cuda "
                           "(pip install 'xuqcal[gpu]') on a machine with an NVIDIA GPU, or set "
                           "NUMBA_ENABLE_CUDASIM=1 for Numba's simulator")
    from numba import cuda as numba_cuda

    cuda = numba_cuda
    device = numba_cuda.jit(device=True)
    mix64 = device(_device_twin(K._mix64))
    _stream_start = device(_device_twin(K.stream_start, _mix64=mix64))
    _next_u64 = device(_device_twin(K.next_u64, _mix64=mix64))
    _accept = device(_device_twin(K.lemire_accept))
    _add = device(_neumaier)
    _tree_sum_device = device(_tree_sum)
    # the CPU's bin walk (kernels._bin_sums' steps), compiled from the same source
    bin_start = device(_device_twin(K.bin_start))
    store_bin = device(_device_twin(K._store_bin))
    add_copies = device(_device_twin(K._add_copies, bin_start=bin_start))
    add_run = device(_device_twin(K._add_run, _store_bin=store_bin, _add_copies=add_copies))
    _bin_sums_device = device(_device_twin(K._bin_sums, _clear_bins=device(_device_twin(
        K._clear_bins)), bin_start=bin_start, _add_run=add_run, _store_bin=store_bin))
    _block_average_ranks_device = device(_block_average_ranks)
    _block_spearman_sums_device = device(_block_spearman_sums)
    return _jit_exact(_bootstrap_sums)  # count * value, never fused (COUNTED)


def _check_size(m: int) -> None:
    if not 0 < m < 1 << 32:
        raise ValueError(f"the GPU bootstrap needs 0 < M < 2**32 points (M = {m})")


def _check_threads(threads: int) -> int:
    threads = int(threads)
    if threads < 1 or threads > MAX_THREADS or threads & (threads - 1):
        raise ValueError(f"threads must be a power of two from 1 to {MAX_THREADS} "
                         f"(threads = {threads})")
    return threads


def cpu_order(m: int) -> int:
    """The order in which the CPU adds a bootstrap replicate's moment sums of ``m`` points:
    :data:`COUNTED` from :data:`xuqcal.core.kernels._COUNTED_SUMS_FROM` points, else
    :data:`IN_DRAW_ORDER` (:func:`xuqcal.core.kernels.bootstrap_block`).

    Examples
    --------
    >>> cpu_order(1000) == IN_DRAW_ORDER, cpu_order(2_000_000) == COUNTED
    (True, True)
    """
    return COUNTED if m >= K._COUNTED_SUMS_FROM else IN_DRAW_ORDER


def run_kernel(key, start: int, n_replicates: int, m: int, columns, sums, draws, n_record: int,
               threads: int = THREADS, *, bound: int | None = None,
               width: int | None = None, order: int | None = None, binned=None,
               ranked=None) -> None:
    """Launch the bootstrap kernel on device arrays: ``sums[r, c]`` (``(n_replicates, w)``)
    receives the sum of ``columns[j, c]`` (``(m, w)``, ``w <= 6``; ``w = 0``: no sums) over
    the ``m`` indices drawn by replicate ``start + r``; ``draws`` (``(n_replicates,
    n_record)``, or any 2-D int64 array when ``n_record = 0``) the raw draws, for debugging.
    ``width`` (default ``w``) is the number of columns summed; ``bound`` (default ``m``;
    debugging only, with ``width = 0``) is the bound of the indices. ``order`` (default: the
    CPU's, :func:`cpu_order`, with columns; :data:`IN_A_TREE` without) is how the sums are
    added (:func:`_bootstrap_sums`); :data:`COUNTED` keeps an int32 row of ``m`` counts per
    block in device memory, so fewer blocks run at once (:func:`exact_order_rows`).
    ``binned``, ``(e2, u2, z2, n_bins, bins)`` (device arrays of the points in binning order,
    without ties, and ``(n_replicates, 4, n_bins)`` zeros), adds the equal-count bins of each
    resample too (:data:`COUNTED` only); ``ranked``, ``(order_u, starts_u, ends_u, order_e,
    starts_e, ends_e, cc_sums)`` (the sorted orders of uE and ``|E|`` and their tie groups,
    :func:`tie_group_bounds`, and ``(n_replicates, 3)``), the sums of cc
    (:func:`_block_spearman_sums`). Asynchronous, as any launch."""
    kernel = _kernels()
    if n_replicates <= 0:
        return
    bound = m if bound is None else int(bound)
    _check_size(bound)
    width = columns.shape[1] if width is None else int(width)
    if width > min(columns.shape[1], len(K.COLUMNS)) or (width and bound != m):
        raise ValueError("run_kernel: at most 6 columns, and columns only for bound = m")
    if order is None:
        order = cpu_order(m) if width else IN_A_TREE
    if order not in (IN_DRAW_ORDER, COUNTED, IN_A_TREE):
        raise ValueError(f"run_kernel: order must be IN_DRAW_ORDER, COUNTED or IN_A_TREE "
                         f"(order = {order})")
    if (binned is not None or ranked is not None) and (order != COUNTED or bound != m):
        raise ValueError("run_kernel: bins and ranks are made from counts (order COUNTED, "
                         "bound = m)")
    blocks = min(n_replicates, _MAX_BLOCKS)
    if order == COUNTED:  # a row of counts per block (and of prefixes and ranks for cc)
        blocks = exact_order_rows(m, 1, blocks, _free_device_bytes(),
                                  itemsize=4 if ranked is None else 28)
    counts = cuda.device_array((blocks, m) if order == COUNTED else (1, 1), dtype=np.int32)
    want_cc = np.int64(ranked is not None)
    if ranked is None:
        no_order = cuda.device_array(1, dtype=np.int64)
        ranked = (no_order,) * 6 + (cuda.device_array((1, 3), dtype=np.float64),)
        ranks = cuda.device_array((1, 3, 1), dtype=np.float64)
    else:
        ranks = cuda.device_array((blocks, 3, m), dtype=np.float64)
    if binned is None:
        no_points = cuda.device_array(1, dtype=np.float64)
        binned = (no_points, no_points, no_points, 0,
                  cuda.device_array((1, 4, 1), dtype=np.float64))
    e2, u2, z2, n_bins, bins = binned
    arguments = (np.uint64(key), np.int64(start), np.int64(n_replicates), np.int64(m),
                 np.uint64(bound), K.lemire_threshold.py_func(bound), columns,
                 np.int64(width), sums, draws, np.int64(n_record), np.int64(order), counts, e2,
                 u2, z2, np.int64(n_bins), bins, want_cc, *ranked[:6], ranks, ranked[6])
    launch = kernel[blocks, _check_threads(threads)]
    with _NoContraction(), (_quiet_launch() if _simulated() else contextlib.nullcontext()):
        launch(*arguments)


@contextlib.contextmanager
def _quiet_launch(small_grid: bool = False):
    """Without the warnings of a launch in Numba's simulator, which runs a kernel as Python on
    NumPy scalars (the wrapping uint64 products of SplitMix64 would warn about overflow), and,
    with ``small_grid``, without numba's NumbaPerformanceWarning on a small grid (a launch of
    a few replicates is small by nature)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
        if small_grid:
            warnings.filterwarnings("ignore", ".*under-utilization")
        yield


#: One launch at a time: the Dask threads of one process share the GPU (and Numba's CUDA
#: simulator swaps the module ``cuda`` while a kernel runs, which a concurrent launch from
#: another thread would see)
_GPU_LOCK = threading.Lock()


def _launch(key, start: int, stop: int, m: int, columns: np.ndarray, n_record: int,
            threads: int, bound: int | None = None, order: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Run the kernel on host arrays; returns ``(sums, draws)`` as host arrays (one launch at
    a time in a process, :data:`_GPU_LOCK`)."""
    with _GPU_LOCK:
        return _launch_locked(key, start, stop, m, columns, n_record, threads, bound, order)


def _column_arrays(columns: np.ndarray, n_replicates: int) -> tuple:
    """The device arrays of a launch's moment ``columns`` (``(m, w)``) and of its sums
    (``(n_replicates, w)``); one element each without columns (never read or written)."""
    width = columns.shape[1]
    d_columns = cuda.to_device(np.ascontiguousarray(columns if width else np.zeros((1, 1)),
                                                    dtype=np.float64))
    return d_columns, cuda.device_array((n_replicates, max(width, 1)), dtype=np.float64)


def _launch_locked(key, start: int, stop: int, m: int, columns: np.ndarray, n_record: int,
                   threads: int, bound: int | None, order: int | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    _check_threads(threads)
    _kernels()
    n_replicates = stop - start
    width = columns.shape[1]
    # never an empty device array: without recording, draws is one element, never written;
    # without columns, columns and sums are one element, never read or written
    draws = np.full((n_replicates, n_record) if n_record else (1, 1), -2, dtype=np.int64)
    if n_replicates <= 0:
        return np.empty((0, width)), draws[:0]
    d_columns, d_sums = _column_arrays(columns, n_replicates)
    d_draws = cuda.to_device(draws)
    run_kernel(key, start, n_replicates, m, d_columns, d_sums, d_draws, n_record, threads,
               bound=bound, width=width, order=order)
    return d_sums.copy_to_host()[:, :width], d_draws.copy_to_host()


def moment_column_sums_gpu(key, start: int, stop: int, codes: np.ndarray, packed: np.ndarray,
                           *, threads: int = THREADS, order: int | None = None) -> np.ndarray:
    """The sums of the packed moment columns over each replicate's draws:
    ``(stop - start, 6)``, columns ordered as :data:`xuqcal.core.kernels.COLUMNS`; the columns
    that ``codes`` do not use are 0 (as in :func:`xuqcal.core.kernels.bootstrap_block`).
    ``order``: how they are added (:func:`run_kernel`; default the CPU's, :func:`cpu_order`).

    Examples
    --------
    >>> packed = np.ones((4, 6))
    >>> moment_column_sums_gpu(1, 0, 2, np.array([5]), packed)  # doctest: +SKIP
    array([[0., 0., 4., 0., 0., 0.],
           [0., 0., 4., 0., 0., 0.]])
    """
    codes = _moment_codes(codes)
    m = int(packed.shape[0])
    _check_size(m)
    used = K._moment_columns(codes)
    sums, _ = _launch(key, int(start), int(stop), m, packed[:, used], 0, threads, order=order)
    full = np.zeros((sums.shape[0], len(K.COLUMNS)))
    full[:, used] = sums
    return full


def _moment_codes(codes) -> np.ndarray:
    codes = np.asarray(codes, dtype=np.int64).reshape(-1)
    bad = [int(c) for c in codes if not 0 <= c < K.N_MOMENT]
    if bad:
        raise ValueError(f"the GPU bootstrap computes moment statistics only (codes below "
                         f"{K.N_MOMENT}: mse rmse mv rmv zm zms zv rce nll zisd); codes {bad} are "
                         "binned or rank statistics, which the CPU kernels compute")
    return codes


def finish_moments(codes: np.ndarray, size: float, sums: np.ndarray,
                   z_shift: float) -> np.ndarray:
    """Moment statistics of ``size`` points from column sums (``sums``: ``(..., 6)``, columns
    ordered as :data:`xuqcal.core.kernels.COLUMNS`): ``(..., len(codes))``, by the finishers
    of :data:`xuqcal.core.kernels.FINISHERS` (NumPy semantics: inf or NaN, no error, for a
    division by zero).

    Examples
    --------
    >>> sums = np.array([[8.0, 2.0, 4.0, 0.0, 0.0, 0.0]])
    >>> finish_moments(np.array([K.MSE, K.ZMS, K.RCE]), 2.0, sums, 0.0).tolist()
    [[4.0, 2.0, -1.0]]
    """
    sums = np.asarray(sums, dtype=np.float64)
    columns = [sums[..., c] for c in range(len(K.COLUMNS))]
    out = np.empty((*sums.shape[:-1], len(codes)))
    with np.errstate(all="ignore"):
        for k, code in enumerate(np.asarray(codes).tolist()):
            out[..., k] = K.FINISHERS[code].py_func(np.float64(size), *columns,
                                                   np.float64(z_shift))
    return out


def finish_binned(codes, n_bins: int, b_n, b_e2, b_u2, b_z2) -> np.ndarray:
    """Binned statistics from bin sums (each ``(..., n_bins)``, broadcast together):
    ``(..., len(codes))``, the terms of :data:`xuqcal.core.kernels.BIN_TERMS` added in bin
    order and divided by the number of bins, as :func:`xuqcal.core.kernels._finalize_binned`
    (NumPy semantics: inf or NaN, no error, for an empty bin).

    Examples
    --------
    >>> b = np.array([[10.0, 10.0]]), np.array([[10.0, 40.0]]), np.array([[10.0, 10.0]])
    >>> finish_binned(np.array([K.ENCE]), 2, b[0], b[1], b[2], b[0]).tolist()
    [[0.5]]
    """
    codes = np.asarray(codes).reshape(-1)
    shape = np.broadcast_shapes(*(np.shape(x) for x in (b_n, b_e2, b_u2, b_z2)))
    out = np.empty((*shape[:-1], codes.shape[0]))
    with np.errstate(all="ignore"):
        for k, code in enumerate(codes.tolist()):
            terms = K.BIN_TERMS[code].py_func(b_n, b_e2, b_u2, b_z2)
            out[..., k] = _sequential_sum(terms) / n_bins
    return out


def bootstrap_moments_gpu(key, start: int, stop: int, codes: np.ndarray, prepared, *,
                          threads: int = THREADS, order: int | None = None) -> np.ndarray:
    """Bootstrap replicates ``start .. stop - 1`` of moment statistics on the GPU:
    ``(stop - start, len(codes))``, what
    ``xuqcal.analysis.resampling._replicate_block(prepared, codes, key, start, stop)`` returns:
    the same draws, their sums added in the CPU's order (:func:`cpu_order`), finished by the
    same finishers, so the same bits (``order=IN_A_TREE``: sums in a tree, equal within about
    1e-13 relative).

    Parameters
    ----------
    key : numpy.uint64
        The stream key (:func:`xuqcal.core.random.stream_key`).
    start, stop : int
        The replicates.
    codes : array of int
        Moment statistic codes (below :data:`xuqcal.core.kernels.N_MOMENT`); any other code is
        refused with a ``ValueError``.
    prepared : xuqcal.core.statistics.PreparedData
        The data; its packed moment columns are copied to the GPU at each call.
    threads : int
        Threads per block (a power of two up to :data:`MAX_THREADS`).
    order : int, optional
        :data:`IN_DRAW_ORDER`, :data:`COUNTED` or :data:`IN_A_TREE` (default: the CPU's).

    Raises
    ------
    ValueError
        Codes of binned or rank statistics, or ``M >= 2**32`` points.
    RuntimeError
        No GPU (see :func:`cuda_available`).

    Examples
    --------
    >>> from xuqcal.core.random import stream_key
    >>> from xuqcal.core.statistics import STATISTICS, PreparedData
    >>> rng = np.random.default_rng(0)
    >>> uE = rng.uniform(0.5, 2.0, 300)
    >>> prepared = PreparedData.from_arrays(uE * rng.standard_normal(300), uE)
    >>> codes = np.array([STATISTICS["zms"].code])
    >>> bootstrap_moments_gpu(stream_key(1, "bootstrap"), 0, 20, codes,
    ...                       prepared).shape  # doctest: +SKIP
    (20, 1)
    >>> bootstrap_moments_gpu(stream_key(1, "bootstrap"), 0, 20,
    ...                       np.array([STATISTICS["ence"].code]), prepared)
    Traceback (most recent call last):
    ...
    ValueError: the GPU bootstrap computes moment statistics only (codes below 10: mse rmse mv rmv zm zms zv rce nll zisd); codes [10] are binned or rank statistics, which the CPU kernels compute
    """  # noqa: E501
    codes = _moment_codes(codes)
    sums = moment_column_sums_gpu(key, start, stop, codes, prepared.packed, threads=threads,
                                  order=order)
    out = finish_moments(codes, prepared.size, sums, prepared.z_shift)
    return prepared.unscale(codes, out)


def gpu_bootstrap_codes(codes, prepared) -> np.ndarray:
    """Which of the statistics ``codes`` :func:`bootstrap_statistics_gpu` computes for
    ``prepared``: a boolean mask, the moment statistics and cc always, the binned ones when the
    binning variable has no ties (with ties the CPU adds the tied points' copies in the order
    they were drawn, :func:`xuqcal.core.kernels._bin_sums_in_draw_order`).

    Examples
    --------
    >>> from xuqcal.core.statistics import STATISTICS, PreparedData
    >>> rng = np.random.default_rng(0)
    >>> uE = rng.uniform(0.5, 2.0, 300)
    >>> prepared = PreparedData.from_arrays(uE * rng.standard_normal(300), uE, n_bins=5)
    >>> codes = np.array([STATISTICS[k].code for k in ("zms", "ence", "cc")])
    >>> gpu_bootstrap_codes(codes, prepared).tolist()
    [True, True, True]
    >>> tied = PreparedData.from_arrays(uE * rng.standard_normal(300), uE.round(1), n_bins=5)
    >>> gpu_bootstrap_codes(codes, tied).tolist()
    [True, False, True]
    """
    codes = np.asarray(codes, dtype=np.int64).reshape(-1)
    binned = np.isin(codes, list(K.BIN_TERMS))
    tie_free = not bool(np.any(prepared.tie_bin))
    return (codes < K.N_MOMENT) | (binned & tie_free) | (codes == K.CC)


def bootstrap_statistics_gpu(key, start: int, stop: int, codes: np.ndarray, prepared, *,
                             threads: int = THREADS, order: int | None = None) -> np.ndarray:
    """Bootstrap replicates ``start .. stop - 1`` of moment, binned and rank statistics on the
    GPU: ``(stop - start, len(codes))``, the values of the CPU kernel bit for bit (the same
    draws; the moment sums in the CPU's order, :func:`cpu_order`; the bins of each resample
    from its counts by the CPU's own bin walk, compiled for the GPU; cc from the same average
    ranks and the same sums, :func:`_block_average_ranks`, :func:`_block_spearman_sums`; the
    same finishers).

    Binned statistics need a binning variable without ties (:func:`gpu_bootstrap_codes`);
    those of tied data are refused with a ``ValueError`` (the CPU computes them). From
    :data:`xuqcal.core.kernels._COUNTED_SUMS_FROM` points one launch counts each resample once
    for its moment sums, bins and ranks; below, the moment sums are added in draw order by a
    launch of their own. ``order`` (default the CPU's, :func:`cpu_order`) sets the
    order of the moment sums (tests force :data:`COUNTED`, hence one launch, on small data).

    Examples
    --------
    >>> from xuqcal.core.random import stream_key
    >>> from xuqcal.core.statistics import STATISTICS, PreparedData
    >>> rng = np.random.default_rng(0)
    >>> uE = rng.uniform(0.5, 2.0, 300)
    >>> prepared = PreparedData.from_arrays(uE * rng.standard_normal(300), uE, n_bins=5)
    >>> codes = np.array([STATISTICS[k].code for k in ("zms", "ence", "zmse")])
    >>> bootstrap_statistics_gpu(stream_key(1, "bootstrap"), 0, 20, codes,
    ...                          prepared).shape  # doctest: +SKIP
    (20, 3)
    """
    codes = np.asarray(codes, dtype=np.int64).reshape(-1)
    if not np.all(gpu_bootstrap_codes(codes, prepared)):
        raise ValueError("the GPU bootstrap computes moment statistics, cc, and binned ones of "
                         "a binning variable without ties; binned statistics of tied data are "
                         "computed by the CPU kernels")
    m = int(prepared.size)
    _check_size(m)
    n = max(int(stop) - int(start), 0)
    moment = [k for k, c in enumerate(codes.tolist()) if c < K.N_MOMENT]
    binned = [k for k, c in enumerate(codes.tolist()) if c in K.BIN_TERMS]
    ranked = [k for k, c in enumerate(codes.tolist()) if c == K.CC]
    out = np.empty((n, codes.shape[0]))
    if n == 0:
        return out
    moment_codes = codes[moment]
    used = K._moment_columns(moment_codes) if moment else np.zeros(0, dtype=np.int64)
    order = cpu_order(m) if order is None else int(order)
    counted = bool(binned or ranked)
    together = counted and order == COUNTED
    if moment and not together:
        sums = moment_column_sums_gpu(key, start, stop, moment_codes, prepared.packed,
                                      threads=threads, order=order)
        out[:, moment] = finish_moments(moment_codes, m, sums, prepared.z_shift)
    if counted:
        n_bins = int(prepared.n_bins) if binned else 0
        with _GPU_LOCK:
            column_sums, bins, cc_sums = _counted_launch_locked(
                key, int(start), int(stop), m, prepared.packed[:, used] if together else
                np.zeros((m, 0)), prepared, n_bins, bool(ranked), threads)
        for k in ranked:
            out[:, k] = spearman_from_sums(cc_sums)
        if together:
            full = np.zeros((n, len(K.COLUMNS)))
            full[:, used] = column_sums
            out[:, moment] = finish_moments(moment_codes, m, full, prepared.z_shift)
        if binned:
            out[:, binned] = finish_binned(codes[binned], n_bins, bins[:, 0], bins[:, 1],
                                           bins[:, 2], bins[:, 3])
    return prepared.unscale(codes, out)


def _counted_launch_locked(key, start: int, stop: int, m: int, columns: np.ndarray, prepared,
                           n_bins: int, cc: bool, threads: int
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One :data:`COUNTED` launch that adds the moment ``columns`` (``(m, w)``, ``w`` may be
    0), the bins of each resample (``n_bins`` may be 0) and, with ``cc``, the sums of its
    Spearman correlation: ``(sums (n, w), bins (n, 4, n_bins), cc_sums (n, 3))``."""
    _check_threads(threads)
    _kernels()
    n = stop - start
    width = columns.shape[1]
    d_columns, d_sums = _column_arrays(columns, n)
    d_draws = cuda.to_device(np.full((1, 1), -2, dtype=np.int64))  # no draws recorded
    d_bins = cuda.to_device(np.zeros((n, 4, max(n_bins, 1))))
    binned = None
    if n_bins:
        binned = (*(cuda.to_device(np.ascontiguousarray(a, dtype=np.float64))
                    for a in (prepared.e2, prepared.u2, prepared.z2)), n_bins, d_bins)
    d_cc = cuda.to_device(np.zeros((n, 3)))
    ranked = None
    if cc:
        sides = []
        for order, tie in ((prepared.order_u, prepared.tie_u),
                           (prepared.order_e, prepared.tie_e)):
            sides += [np.asarray(order, dtype=np.int64), *tie_group_bounds(tie)]
        ranked = (*(cuda.to_device(np.ascontiguousarray(a)) for a in sides), d_cc)
    run_kernel(key, start, n, m, d_columns, d_sums, d_draws, 0, threads, width=width,
               order=COUNTED, binned=binned, ranked=ranked)
    return (d_sums.copy_to_host()[:, :width], d_bins.copy_to_host()[:, :, :n_bins],
            d_cc.copy_to_host())


def drawn_indices_gpu(key, start: int, stop: int, m: int, *, bound: int | None = None,
                      threads: int = THREADS) -> np.ndarray:
    """The ``m`` indices each replicate ``start .. stop - 1`` draws on the GPU, in the order of
    the stream: ``(stop - start, m)`` int64, equal to :func:`xuqcal.core.kernels.fill_draws`
    (debug and tests: the bootstrap kernel itself records its raw draws). ``bound`` (default
    ``m``) is the bound of the indices, e.g. ``2**31 + 1`` for a Lemire test that rejects half
    of the raw draws (then ``m`` calls of ``next_below(state, bound)``).

    Raises ``RuntimeError`` unless the raw positions visited by the kernel hold exactly ``m``
    accepted draws.

    Examples
    --------
    >>> from xuqcal.core.random import fill_draws, stream_key
    >>> key = stream_key(0, "bootstrap")
    >>> cpu = np.empty(50, dtype=np.int64)
    >>> fill_draws(key, 3, cpu)
    >>> bool((drawn_indices_gpu(key, 3, 4, 50)[0] == cpu).all())  # doctest: +SKIP
    True
    """
    m = int(m)
    _check_size(m)
    bound = m if bound is None else int(bound)
    _check_size(bound)
    # raw positions recorded: the expected number of raw draws for m accepted ones, with a
    # margin of many standard deviations
    rejected = float(K.lemire_threshold.py_func(bound)) / 2.0**32
    width = int(1.5 * m / (1.0 - rejected)) + 64
    _, draws = _launch(key, int(start), int(stop), m, np.zeros((m, 0)), width, threads, bound)
    out = np.empty((draws.shape[0], m), dtype=np.int64)
    for i, row in enumerate(draws):
        accepted = row[row >= 0]
        if accepted.shape[0] != m:
            raise RuntimeError(f"replicate {start + i}: {accepted.shape[0]} accepted draws "
                               f"recorded in {width} raw positions, not {m}")
        out[i] = accepted
    return out


# ------------------------------------------------------------------------ simulated references

#: The generators whose synthetic sets the GPU draws (``fill_variates``' decisions use
#: arithmetic and exact comparisons only): normal, Student-t (both constructions), uniform,
#: Laplace. NORMP's gamma variates accept or reject a draw on a comparison of
#: logarithms, which a GPU ``log`` one unit in the last place away from the CPU's could turn:
#: its simulations stay on the CPU.
SIMULATION_GENERATORS = K.VARIATE_CODES
#: Threads per block of the simulation kernel: at least one warp (a launch of one thread per
#: replicate, for small sets, spreads its warps over every multiprocessor as soon as there are
#: more warps than multiprocessors), at most :data:`SPLIT_THREADS` (one replicate split between
#: a whole block).
SIMULATION_THREADS = 32
#: Most threads that share one replicate, and most threads per block of the simulation kernel
#: (the size of its shared arrays).
SPLIT_THREADS = 256
#: Sums of one simulated set kept per replicate: ``sum E~²``, ``sum eps²``, ``sum eps``.
_SIM_SUMS = 3
#: Variates (and as many uncertainties) each thread copies into shared memory per chunk of the
#: additions in the CPU's order (:func:`_simulation_sums` with ``cpu_order_sums``): 1 024 of
#: each (16 KiB) for a whole block, so that the adding thread reads no global memory.
_CHUNK_PER_THREAD = 4
#: Device memory for the rows of variates of the replicates in flight when a split replicate's
#: sums are made in the CPU's order: a launch holds at most this many bytes of rows (at
#: M = 2·10⁶, 536 replicates: about 4 blocks of 256 threads per multiprocessor of an H100 while
#: they draw), and at most half of the free memory.
EXACT_ORDER_BYTES = 8 << 30
#: The inverse of the stream's increment modulo 2^64: the raw position of a state is
#: ``(state - start) γ^-1`` (the state after ``p`` raw draws is ``start + p γ``).
_GAMMA_INVERSE = np.uint64(pow(int(K._GAMMA), -1, 1 << 64))
#: Mean raw draws per variate (measured on the CPU streams, checked in
#: ``tests/test_gpu_split.py``): the ziggurat normal and exponential; one for the uniform and
#: Laplace (the gamma Student-t's: :func:`_gamma_student_draws`).
_NORMAL_DRAWS = 1.0224
_EXPONENTIAL_DRAWS = 1.0336
#: ... and the Student-t ziggurats' (stream version 4), by ν (4·10⁷ variates each).
_STUDENT_ZIGGURAT_DRAWS = {3: 1.0321, 4: 1.0302, 5: 1.0290, 6: 1.0283}
#: Raw draws per thread at the least (times ``(ν/2)²`` for the chi-square Student-t, 9 for the
#: gamma Student-t: :func:`least_segment_draws`), so that a thread's parse meets its
#: neighbour's (see :func:`_simulation_sums`) far inside the neighbour's segment: the normal,
#: uniform, Laplace and ziggurat Student-t (stream version 4: t3 to t6, at most 10 draws of
#: 3 000 starts; ``parse-meeting-stream4-issue26-2026-11-27.json``) parses meet within a few
#: draws, the chi-square t's within 15 to 25 ``(ν/2)²`` draws on average (t8: mean 254, at
#: most 2 475; t32: mean 6 173; ``benchmarks/measured/parse-meeting-issue26-2026-11-27.json``
#: and the stream-4 record), the gamma t's (stream version 3) within 60 to 145 (at most
#: 1 875, t34; ``parse-meeting-stream3-issue26-2026-11-27.json``).
_SEGMENT_DRAWS = 1024

# the device twins of the variate generators of xuqcal.core.kernels, bound by _simulation_kernel
_next_uniform = None
_student = None
_variate_device = None
_raw_position = None
_skip_device = None
_store_bin_device = None


def variate_constants(generator_code: int, parameter: float) -> tuple[float, int]:
    """``(scale, form)`` of :func:`xuqcal.core.kernels.fill_variates` for one generator: the
    factor of its unit-variance draws (``sqrt((ν - 2) / ν)`` for Student-t, ``sqrt(3)`` for
    the uniform, ``1 / sqrt(2)`` for Laplace, 1 for the normal) and the construction of a
    Student-t (:data:`xuqcal.core.kernels.STUDENT_ZIGGURAT` for an integer ν from 3 to 6,
    ``ν / 2`` for the chi-square of another even ν ≤ 32, 0 for the gamma method and the other
    generators). The same IEEE operations as the CPU kernel, so the same bits.

    Examples
    --------
    >>> variate_constants(K.STUDENT, 6.0), variate_constants(K.STUDENT, 8.0)[1]
    ((0.816496580927726, -1), 4)
    """
    if generator_code not in SIMULATION_GENERATORS:
        raise ValueError(f"the GPU simulation draws from the generators with codes "
                         f"{list(SIMULATION_GENERATORS)} (normal, Student-t, uniform, Laplace); "
                         f"code {generator_code} (normp) is drawn on the CPU")
    scale, form = K.variate_constants.py_func(generator_code, np.float64(parameter))
    return float(scale), int(form)


def _position(state, start):
    """The raw position of ``state`` in the stream that starts at ``start``: the number of raw
    draws made (the state after ``p`` draws is ``start + p γ``)."""
    return np.int64((state - start) * _GAMMA_INVERSE)


def _skip(state, start, code, parameter, scale, form):
    """One variate drawn and dropped: ``(state, position)``, the state after it and its raw
    position (a step of the parses of :func:`_simulation_sums`)."""
    _, state = _variate_device(state, code, parameter, scale, form)
    return state, _raw_position(state, start)


def _store_bin(bins, edge_bin, edge_sum, r, tid, slot, b, whole, b_e2, b_z2):
    """The sums of bin ``b`` of a thread of :func:`_simulation_sums`: into ``bins[r, b]`` when
    the bin is ``whole`` in the thread's points, else into its edge ``slot`` (the first and
    last bins of its points, which the replicate's first thread adds up); returns the next
    free slot."""
    if whole:
        bins[r, b, 0] = b_e2
        bins[r, b, 1] = b_z2
        return slot
    edge_bin[tid, slot] = b
    edge_sum[tid, slot, 0] = b_e2
    edge_sum[tid, slot, 1] = b_z2
    return slot + 1


def _simulation_sums(key, first, n_replicates, code, parameter, scale, form, u, bin_ends,
                     n_bins, group, segment, sums, bins, variates, n_record, fallbacks,
                     cpu_order_sums, buffer):
    """Kernel: ``group`` threads draw replicate ``first + r`` together (a block holds
    ``blockDim / group`` replicates and loops with the grid's stride); its ``M`` variates
    ``eps`` are the CPU's (:func:`xuqcal.core.kernels.next_variate` from the same stream), and
    ``sums[r] = (sum (u eps)², sum eps², sum eps)`` and, when ``n_bins > 0``, per bin ``b``
    (positions up to ``bin_ends[b]``, exclusive) ``bins[r, b] = (sum (u eps)², sum eps²)``;
    a bin without points keeps the host's 0. ``variates[r, i]`` (debug; ``n_record = 0``
    records nothing) receives ``eps_i`` for ``i < n_record``; ``fallbacks[r]`` is 1 when the
    replicate was drawn by one thread (the parses did not meet in order), else 0.

    **The split.** Thread ``k`` owns the raw positions from ``s_k = k segment`` (the last
    thread's have no end). A variate takes a varying number of raw draws, so thread ``k``
    does not know where the variates of the stream begin in its segment: it parses from
    ``s_k`` as if a variate began there, past ``s_{k+1}``, and, with a second parse from
    ``s_{k+1}``, advances the parse that is behind until both stand on the same position
    ``m_{k+1}``: from there on they are one parse. The stream's own parse starts at
    ``m_0 = 0``; if it reaches ``m_k`` (a position of the parse from ``s_k``) and
    ``m_k <= m_{k+1}``, it follows the parse from ``s_k`` from ``m_k`` on, through
    ``m_{k+1}``: by induction the variates of the stream between ``m_k`` and ``m_{k+1}`` are
    those the parse from ``s_k`` makes there. Their count (the parse's variates up to
    ``m_{k+1}`` less those up to ``m_k``, which thread ``k - 1`` counted) gives, summed in
    order, the index of each segment's first variate, so each thread then draws and adds its
    own variates with their uncertainties. Where ``m_k > m_{k+1}`` (parses that met late), the
    replicate is drawn by its first thread alone, as with ``group = 1``.

    **The sums.** With ``cpu_order_sums`` (and ``group > 1``; the public ``order`` None or
    :data:`IN_DRAW_ORDER`), the CPU's additions in the CPU's order:
    each thread writes its variates to its replicate's row of ``buffer`` (global memory, one
    row of ``M`` per replicate in flight: row ``blockIdx * (blockDim / group) + tid // group``),
    then the replicate's threads copy the row, a chunk of ``4 group`` variates and their
    uncertainties at a time, into shared memory, and its first thread adds the chunk's points
    one after the other as
    :func:`xuqcal.core.kernels._fused_synthetic_set` does (the sums and each bin's sums from
    0.0, in point order): the same bits as the CPU where the variates are the same. Without
    (:data:`IN_A_TREE`) a thread adds its points one after the other, the threads' sums are
    added in a tree and the sums of a bin split between threads in thread order (other
    roundings, fewer steps in one thread). With ``group = 1`` a thread draws and adds in the
    CPU's order either way.
    """
    tid = cuda.threadIdx.x
    per_block = cuda.blockDim.x // group
    k = tid % group
    base = tid - k
    at = cuda.shared.array(SPLIT_THREADS, np.int64)  # m_k
    skipped = cuda.shared.array(SPLIT_THREADS, np.int64)  # variates from s_k to m_k
    begin = cuda.shared.array(SPLIT_THREADS, np.int64)  # parsed counts, then first index
    end = cuda.shared.array(SPLIT_THREADS, np.int64)  # last index, exclusive
    partial = cuda.shared.array(SPLIT_THREADS, np.float64)
    edge_bin = cuda.shared.array((SPLIT_THREADS, 2), np.int64)
    edge_sum = cuda.shared.array((SPLIT_THREADS, 2, 2), np.float64)
    chunk = cuda.shared.array(SPLIT_THREADS * _CHUNK_PER_THREAD, np.float64)
    chunk_u = cuda.shared.array(SPLIT_THREADS * _CHUNK_PER_THREAD, np.float64)
    m = u.shape[0]
    in_order = cpu_order_sums != 0 and group > 1
    row = cuda.blockIdx.x * per_block + tid // group  # this replicate's row of ``buffer``
    block_first = cuda.blockIdx.x * per_block
    while block_first < n_replicates:
        r = block_first + tid // group
        active = r < n_replicates
        start = _stream_start(key, first + r)
        # 1. where the stream's variates cross each segment's end, and how many each holds
        if k == 0:
            at[tid] = 0
            skipped[tid] = 0
        if active and k < group - 1:
            a = np.int64(k) * segment
            following = a + segment
            state_a = start + np.uint64(a) * K._GAMMA
            counted = np.int64(0)
            while a < following:
                state_a, a = _skip_device(state_a, start, code, parameter, scale, form)
                counted += 1
            b = following
            state_b = start + np.uint64(b) * K._GAMMA
            behind = np.int64(0)
            while a != b:
                if a < b:
                    state_a, a = _skip_device(state_a, start, code, parameter, scale, form)
                    counted += 1
                else:
                    state_b, b = _skip_device(state_b, start, code, parameter, scale, form)
                    behind += 1
            at[tid + 1] = a
            skipped[tid + 1] = behind
            begin[tid] = counted
        cuda.syncthreads()
        # 2. the first thread of the replicate: each thread's indices [begin, end)
        if active and k == 0:
            ordered = True
            offset = np.int64(0)
            for j in range(group):
                t = base + j
                if j < group - 1:
                    if at[t + 1] < at[t]:
                        ordered = False
                    count = begin[t] - skipped[t]
                else:
                    count = m - offset
                count = max(count, 0)
                begin[t] = min(offset, m)
                end[t] = min(offset + count, m)
                offset += count
            if not ordered:
                for j in range(group):
                    begin[base + j] = 0
                    end[base + j] = 0
                at[base] = 0
                end[base] = m
            fallbacks[r] = 0 if ordered else 1
        cuda.syncthreads()
        # 3. each thread draws its variates and adds them
        low = begin[tid]
        high = end[tid]
        s_e2 = 0.0
        s_z2 = 0.0
        s_z = 0.0
        edge_bin[tid, 0] = -1
        edge_bin[tid, 1] = -1
        if active and low < high:
            state = start + np.uint64(at[tid]) * K._GAMMA
            b = 0
            whole = True  # the current bin began in this thread's points
            next_start = m
            if n_bins > 0:
                while bin_ends[b] <= low:
                    b += 1
                whole = low == 0 if b == 0 else bin_ends[b - 1] >= low
                next_start = bin_ends[b]
            b_e2 = 0.0
            b_z2 = 0.0
            slot = 0
            for i in range(low, high):
                x, state = _variate_device(state, code, parameter, scale, form)
                if i < n_record:
                    variates[r, i] = x
                if in_order:  # added below, in point order
                    buffer[row, i] = x
                    continue
                e = u[i] * x
                e2 = e * e
                z2 = x * x
                s_e2 += e2
                s_z2 += z2
                s_z += x
                if n_bins > 0:
                    if i >= next_start:
                        slot = _store_bin_device(bins, edge_bin, edge_sum, r, tid, slot, b,
                                                 whole, b_e2, b_z2)
                        b += 1
                        while i >= bin_ends[b]:  # bins without points
                            b += 1
                        next_start = bin_ends[b]
                        whole = True
                        b_e2 = 0.0
                        b_z2 = 0.0
                    b_e2 += e2
                    b_z2 += z2
            if n_bins > 0 and not in_order:  # the last bin: whole if it ends here too
                _store_bin_device(bins, edge_bin, edge_sum, r, tid, slot, b,
                                  whole and next_start <= high, b_e2, b_z2)
        if in_order:
            # 4. the CPU's additions, in its order, by the replicate's first thread
            cuda.syncthreads()  # the row is written (global writes of the block are visible)
            width = _CHUNK_PER_THREAD * group
            own = base * _CHUNK_PER_THREAD  # this replicate's part of ``chunk``
            s_e2 = 0.0
            s_z2 = 0.0
            s_z = 0.0
            t_e2 = 0.0
            t_z2 = 0.0
            b = 0
            next_start = bin_ends[0] if n_bins > 0 else m
            for c0 in range(0, m, width):  # the same number of chunks in every replicate
                for j in range(_CHUNK_PER_THREAD):
                    i = c0 + k + j * group
                    if active and i < m:
                        chunk[own + k + j * group] = buffer[row, i]
                        chunk_u[own + k + j * group] = u[i]
                cuda.syncthreads()
                if active and k == 0:
                    for q in range(min(width, m - c0)):
                        i = c0 + q
                        x = chunk[own + q]
                        e = chunk_u[own + q] * x
                        e2 = e * e
                        z2 = x * x
                        s_e2 += e2
                        s_z2 += z2
                        s_z += x
                        if n_bins > 0:
                            if i >= next_start:  # bin b is complete
                                bins[r, b, 0] = t_e2
                                bins[r, b, 1] = t_z2
                                b += 1
                                while i >= bin_ends[b]:  # bins without points keep 0
                                    b += 1
                                next_start = bin_ends[b]
                                t_e2 = 0.0
                                t_z2 = 0.0
                            t_e2 += e2
                            t_z2 += z2
                cuda.syncthreads()
            if active and k == 0:
                sums[r, 0] = s_e2
                sums[r, 1] = s_z2
                sums[r, 2] = s_z
                if n_bins > 0 and m > 0:
                    bins[r, b, 0] = t_e2
                    bins[r, b, 1] = t_z2
            cuda.syncthreads()
            block_first += cuda.gridDim.x * per_block
            continue
        # 4. the threads' sums, in a tree; the bins split between threads, in thread order
        for c in range(_SIM_SUMS):
            if c == 0:
                partial[tid] = s_e2
            elif c == 1:
                partial[tid] = s_z2
            else:
                partial[tid] = s_z
            cuda.syncthreads()
            _tree_sum_device(partial, tid, k, group)
            if active and k == 0:
                sums[r, c] = partial[tid]
            cuda.syncthreads()
        if active and k == 0 and n_bins > 0:
            current = np.int64(-1)
            t_e2 = 0.0
            t_z2 = 0.0
            for j in range(group):
                for e in range(2):
                    bb = edge_bin[base + j, e]
                    if bb >= 0:
                        if bb != current:
                            if current >= 0:
                                bins[r, current, 0] = t_e2
                                bins[r, current, 1] = t_z2
                            current = bb
                            t_e2 = 0.0
                            t_z2 = 0.0
                        t_e2 += edge_sum[base + j, e, 0]
                        t_z2 += edge_sum[base + j, e, 1]
            if current >= 0:
                bins[r, current, 0] = t_e2
                bins[r, current, 1] = t_z2
        cuda.syncthreads()
        block_first += cuda.gridDim.x * per_block


@functools.cache
def _simulation_kernel():
    """Compile (once) the device twins of the variate generators and the simulation kernel."""
    global _next_uniform, _student, _variate_device, _raw_position, _skip_device
    global _store_bin_device
    _kernels()  # cuda and the stream primitives
    device = cuda.jit(device=True)
    _raw_position = device(_position)
    _store_bin_device = device(_store_bin)
    _next_uniform = device(_device_twin(K.next_uniform, next_u64=_next_u64))
    _exp_arithmetic = device(_device_twin(K._exp_arithmetic))
    _exponential = device(_device_twin(K.next_exponential, next_u64=_next_u64,
                                       next_uniform=_next_uniform,
                                       _exp_arithmetic=_exp_arithmetic))
    _normal = device(_device_twin(K.next_normal, next_u64=_next_u64, next_uniform=_next_uniform,
                                  next_exponential=_exponential,
                                  _exp_arithmetic=_exp_arithmetic))
    _student = device(_device_twin(K.next_student, next_normal=_normal,
                                   next_uniform=_next_uniform))
    _student_ziggurat = device(_device_twin(
        K.next_student_ziggurat, next_u64=_next_u64, next_uniform=_next_uniform,
        _student_density=device(_device_twin(K._student_density))))
    _variate_device = device(_device_twin(K.next_variate, next_normal=_normal,
                                          next_exponential=_exponential,
                                          next_uniform=_next_uniform, next_student=_student,
                                          next_student_ziggurat=_student_ziggurat))
    _skip_device = device(_skip)
    return _jit_exact(_simulation_sums)


def _jit_exact(function):
    """``cuda.jit(function)`` without link-time optimization: NVVM then writes PTX, which
    :class:`_NoContraction` rounds explicitly before the assembler sees it. With LTO (numba-cuda's
    default where nvJitLink is present) NVVM writes LTO-IR instead, and nvJitLink compiles it
    to machine code with its own default, which contracts multiplies and adds (an H200,
    numba-cuda 0.30.4)."""
    import inspect

    from numba import cuda as numba_cuda

    options = {"lto": False} if "lto" in inspect.signature(numba_cuda.jit).parameters else {}
    return numba_cuda.jit(function, **options)


class _NoContraction:
    """While active, no multiply and add is fused into one FMA (the CPU never fuses them). The
    ziggurats accept a draw on comparisons of products and sums; contracted, a sum could round
    differently and accept another draw: the rest of the replicate would differ.
    numba-cuda has no option for it (NVIDIA/numba-cuda#118): the ``compile_ir`` of its
    ``nvvm`` module is wrapped while a kernel is launched (compiled on its first launch).

    Two steps, as both compilers contract on their own:

    - NVVM compiles with ``-fma=0``: its PTX has no ``fma.rn.f64`` of its making;
    - its PTX's double ``add``, ``sub`` and ``mul`` without a rounding modifier get ``.rn``
      (:func:`_round_explicitly`). The PTX assembler may fuse a ``mul``/``add`` pair without
      a modifier into one ``DFMA`` ("may be optimized aggressively"), and did on an H200 with
      the first step alone (``benchmarks/measured/fma-check-issue26-h200-2026-11-27.json``);
      an explicit ``.rn`` is "treated conservatively" and never fused (PTX ISA, ``add``). The
      rounding is the same (``.rn`` is the default), so nothing else changes. libdevice's
      functions (``log``, ``pow``) keep their own ``fma.rn.f64``, written in their source.

    With numba-cuda installed beside Numba 0.6x, ``numba.cuda.cudadrv.nvvm`` and the module
    numba-cuda's code generator calls, ``numba_cuda.numba.cuda.cudadrv.nvvm``, can be two
    modules: every loaded one is wrapped (wrapping only the first left the FMA in the PTX on an
    H200, numba-cuda 0.30.4). A no-op in the simulator; ``benchmarks/gpu_simulation.py``
    checks the PTX and the machine code on a GPU."""

    def __enter__(self):
        self.wrapped = []
        if _simulated():
            return self
        for module in _nvvm_modules():
            original = module.compile_ir

            @functools.wraps(original)
            def compile_ir(llvmir, _original=original, **options):
                return _round_explicitly(_original(llvmir, **{**options, "fma": False}))

            module.compile_ir = compile_ir
            self.wrapped.append((module, original))
        return self

    def __exit__(self, *exc):
        for module, original in self.wrapped:
            module.compile_ir = original
        self.wrapped = []
        return False


#: A double addition, subtraction or multiplication of PTX without a rounding modifier.
_UNROUNDED = re.compile(r"(?<![\w.])(add|sub|mul)\.f64(?=\s)")


def _round_explicitly(ptx):
    """``ptx`` (NVVM's output: ``bytes``, ``str``, or a tuple whose first item is the PTX) with
    ``.rn`` written on every double ``add``, ``sub`` and ``mul`` that has no rounding
    modifier, which the PTX assembler may otherwise fuse into an FMA.

    Examples
    --------
    >>> print(_round_explicitly("mul.f64 %fd3, %fd1, %fd2;\\n@%p1 add.f64 %fd4, %fd3, %fd1;"
    ...                         "\\nmul.rn.f64 %fd5, %fd1, %fd1;\\nadd.s64 %rd2, %rd1, 1;"))
    mul.rn.f64 %fd3, %fd1, %fd2;
    @%p1 add.rn.f64 %fd4, %fd3, %fd1;
    mul.rn.f64 %fd5, %fd1, %fd1;
    add.s64 %rd2, %rd1, 1;
    """
    if isinstance(ptx, tuple) and ptx:
        return (_round_explicitly(ptx[0]), *ptx[1:])
    if isinstance(ptx, bytes | bytearray):
        try:
            text = bytes(ptx).decode("utf-8")
        except UnicodeDecodeError:  # not PTX: LTO-IR, which _jit_exact does not ask for
            return ptx
        return _UNROUNDED.sub(r"\1.rn.f64", text).encode("utf-8")
    if isinstance(ptx, str):
        return _UNROUNDED.sub(r"\1.rn.f64", ptx)
    return ptx


def _nvvm_modules() -> list:
    """The loaded NVVM modules of Numba's CUDA target that have a ``compile_ir``: numba-cuda's
    (``numba_cuda.numba.cuda.cudadrv.nvvm``) and the one ``numba.cuda`` names, once each."""
    import importlib
    import sys

    for name in ("numba_cuda.numba.cuda.cudadrv.nvvm", "numba.cuda.cudadrv.nvvm"):
        try:
            importlib.import_module(name)
        except Exception:  # not installed, or no such module in this version
            pass
    found, seen = [], set()
    for name, module in list(sys.modules.items()):
        if (name.endswith("cuda.cudadrv.nvvm") and callable(getattr(module, "compile_ir", None))
                and id(module) not in seen):
            seen.add(id(module))
            found.append(module)
    return found


def _bin_ends(m: int, n_bins: int) -> np.ndarray:
    """The exclusive last position of each equal-count bin, ``bin_start(b + 1)``, and one more
    entry ``M`` (the kernel's search for the next non-empty bin stops there)."""
    b = np.arange(1, n_bins + 1, dtype=np.int64)
    return np.append(K.bin_start.py_func(b, m, n_bins), np.int64(m)).astype(np.int64)


@functools.cache
def _gamma_student_draws(nu: float) -> float:
    """Mean raw draws of a Student-t(ν) of :func:`xuqcal.core.kernels.next_student`: its
    normal, then Marsaglia-Tsang tries of a normal and, when ``v = (1 + c x)³ > 0``, a
    uniform, until one is accepted. A try with ``d = ν/2 - 1/3``, ``c = 1 / sqrt(9 d)`` is
    accepted with probability ``∫_{x > -1/c} exp(d (1 - v + ln v)) dx / sqrt(2π)`` (the
    normal density times the acceptance ratio), integrated here."""
    from scipy import integrate

    d = 0.5 * nu - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)

    def accepted(x: float) -> float:
        v = (1.0 + c * x) ** 3
        if v <= 0.0:  # at -1/c (rounded): no try accepted there
            return 0.0
        return math.exp(d * (1.0 - v + math.log(v))) / math.sqrt(2.0 * math.pi)

    # the integrand is concentrated within a few units of 0 (and 0 at -1/c)
    head = integrate.quad(accepted, -1.0 / c, -min(1.0 / c, 40.0) / 2.0, limit=200)[0]
    accept = head + integrate.quad(accepted, -min(1.0 / c, 40.0) / 2.0, math.inf,
                                   limit=200)[0]
    positive = 0.5 * math.erfc(-1.0 / c / math.sqrt(2.0))  # P(v > 0): a uniform is drawn
    return _NORMAL_DRAWS + (_NORMAL_DRAWS + positive) / accept


def draws_per_variate(generator_code: int, parameter: float) -> float:
    """The mean number of raw draws of one variate of :func:`xuqcal.core.kernels.next_variate`
    (measured on the CPU's streams; the ziggurats reject about 2 % of their first draws).

    Examples
    --------
    >>> round(draws_per_variate(K.STUDENT, 6.0), 3), round(draws_per_variate(K.STUDENT, 8.0), 3)
    (1.028, 5.157)
    >>> draws_per_variate(K.UNIFORM, 0.0)
    1.0
    """
    _, form = variate_constants(generator_code, parameter)
    if generator_code == K.NORMAL:
        return _NORMAL_DRAWS
    if generator_code == K.STUDENT:
        if form == K.STUDENT_ZIGGURAT:
            return _STUDENT_ZIGGURAT_DRAWS[int(parameter)]
        if form:
            return _NORMAL_DRAWS + form * _EXPONENTIAL_DRAWS
        return _gamma_student_draws(float(parameter))
    return 1.0


def least_segment_draws(generator_code: int, parameter: float) -> int:
    """The least raw draws of a thread's segment in :func:`split_plan`: :data:`_SEGMENT_DRAWS`
    times ``(ν/2)²`` for the chi-square Student-t, whose parses meet after about ``(ν/2)²``
    times the normal's draws, times 9 for the gamma Student-t (they meet as late as the
    chi-square t6's), times 1 for the others (the ziggurats' and one-uniform variates).

    Examples
    --------
    >>> least_segment_draws(K.NORMAL, 0.0), least_segment_draws(K.STUDENT, 8.0)
    (1024, 16384)
    """
    _, form = variate_constants(generator_code, parameter)
    slow = 1
    if generator_code == K.STUDENT and form != K.STUDENT_ZIGGURAT:
        slow = form if form > 0 else 3
    return _SEGMENT_DRAWS * slow ** 2


def split_plan(generator_code: int, parameter: float, m: int, *, threads: int | None = None,
               segment: int | None = None) -> tuple[int, int, int]:
    """How the simulation kernel splits a replicate of ``m`` variates: ``(group, draws,
    block)``, the threads that share one replicate (a power of two up to ``threads``, by
    default :data:`SPLIT_THREADS`), the raw draws of each thread's segment (even) and the
    threads per block (``threads``, by default ``group`` but at least
    :data:`SIMULATION_THREADS`).

    A thread takes at least ``segment`` raw draws (by default
    :func:`least_segment_draws`: more for the Student-t constructions whose parses take longer
    to meet); the segments
    cover 2 % more than the expected raw draws of the replicate (the last thread's segment has
    no end, and the threads past the ``m``-th variate add nothing).

    Examples
    --------
    >>> split_plan(K.NORMAL, 0.0, 2_000_000), split_plan(K.NORMAL, 0.0, 300)
    ((256, 8148, 256), (1, 378, 32))
    >>> split_plan(K.STUDENT, 8.0, 20_000, threads=64)
    (4, 26316, 64)
    """
    given = threads is not None
    threads = _check_threads(threads) if given else SPLIT_THREADS
    if threads > SPLIT_THREADS:
        raise ValueError(f"the simulation kernel takes at most {SPLIT_THREADS} threads per "
                         f"block (threads = {threads})")
    raw = 1.02 * m * draws_per_variate(generator_code, parameter) + 64.0
    if segment is None:
        least = least_segment_draws(generator_code, parameter)
    else:
        least = max(int(segment), 2)
    group = 1
    while group * 2 <= threads and raw / (group * 2) >= least:
        group *= 2
    draws = 2 * math.ceil(raw / group / 2.0)
    block = threads if given else max(group, SIMULATION_THREADS)
    return group, draws, block


def simulation_sums_gpu(key, start: int, stop: int, generator_code: int, parameter: float,
                        u: np.ndarray, n_bins: int, *, n_record: int = 0,
                        threads: int | None = None, segment: int | None = None,
                        order: int | None = None, info: dict | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sums of the synthetic sets ``E~ = u eps`` of replicates ``start .. stop - 1`` drawn
    on the GPU: ``(sums, bins, variates)`` with ``sums`` ``(n, 3)`` (``sum E~²``,
    ``sum eps²``, ``sum eps``), ``bins`` ``(n, n_bins, 2)`` (``sum E~²``, ``sum eps²`` of each
    equal-count bin of positions; ``(n, 0, 2)`` for ``n_bins = 0``) and ``variates``
    ``(n, n_record)`` (the first ``eps``; debug and tests). The variates are those of
    :func:`xuqcal.core.kernels.simulate_block`; a replicate of many points is split between
    threads (:func:`split_plan`, with ``threads`` and ``segment``). In the CPU's order
    (``order`` None or :data:`IN_DRAW_ORDER`, the default) its sums are then made by one thread
    from the variates written to device memory (at most :data:`EXACT_ORDER_BYTES` of them at a
    time: fewer replicates in flight), so they are the CPU's bit for bit wherever the variates
    are; with :data:`IN_A_TREE` the threads' sums are added in a tree (equal to the CPU's to
    rounding, in fewer steps). ``info``, a dict, receives the plan (``group``, ``draws``,
    ``block``), ``fallbacks``, the replicates whose parses did not meet in order and that one
    thread drew alone, and ``in_flight``, the replicates drawn at once (in the CPU's order: the
    rows of variates held).

    Examples
    --------
    >>> from xuqcal.core.random import stream_key
    >>> key = stream_key(0, "reference:normal")
    >>> sums, bins, _ = simulation_sums_gpu(key, 0, 4, K.NORMAL, 0.0, np.ones(100),
    ...                                     5)  # doctest: +SKIP
    >>> sums.shape, bins.shape  # doctest: +SKIP
    ((4, 3), (4, 5, 2))
    """
    u, in_order, plan = _simulation_setup(generator_code, parameter, u, order, threads, segment)
    with _GPU_LOCK:
        return _simulation_sums_locked(key, int(start), int(stop), int(generator_code),
                                       float(parameter), u, int(n_bins), int(n_record), plan,
                                       in_order, info)


def _simulation_setup(generator_code: int, parameter: float, u, order: int | None,
                      threads: int | None, segment: int | None) -> tuple:
    """What :func:`simulation_sums_gpu` and :func:`simulation_cc_sums_gpu` check and plan before
    a launch: ``normp`` refused, ``(u as contiguous float64, in the CPU's order or not, the
    split_plan)``."""
    variate_constants(generator_code, parameter)  # refuses normp
    in_order = _simulation_in_order(order)
    u = np.ascontiguousarray(u, dtype=np.float64)
    return u, in_order, split_plan(generator_code, parameter, u.shape[0], threads=threads,
                                   segment=segment)


def _simulation_in_order(order: int | None) -> bool:
    """Whether a simulation's ``order`` adds the sums in the CPU's order (None or
    :data:`IN_DRAW_ORDER`) rather than in a tree (:data:`IN_A_TREE`); :data:`COUNTED`, an order
    of the bootstrap's sums, is refused.

    Examples
    --------
    >>> _simulation_in_order(None), _simulation_in_order(IN_A_TREE)
    (True, False)
    >>> _simulation_in_order(COUNTED)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: order: a simulation adds its variates in draw order (IN_DRAW_ORDER = 0, ...
    """
    if order is None or order == IN_DRAW_ORDER:
        return True
    if order == IN_A_TREE:
        return False
    raise ValueError(f"order: a simulation adds its variates in draw order (IN_DRAW_ORDER = "
                     f"{IN_DRAW_ORDER}, the CPU's) or in a tree (IN_A_TREE = {IN_A_TREE}); got "
                     f"{order!r} (COUNTED = {COUNTED} is an order of the bootstrap's sums)")


def _free_device_bytes() -> int | None:
    """Free memory of the current device, or None where it is not known (the simulator
    reports infinity)."""
    try:
        free, _ = cuda.current_context().get_memory_info()
    except Exception:  # a context without memory information
        return None
    return int(free) if math.isfinite(free) else None


def exact_order_rows(m: int, per_block: int, blocks: int, free: int | None = None, *,
                     itemsize: int = 8, budget: int | None = None) -> int:
    """Blocks of a launch that adds its sums in the CPU's order from rows of device memory
    (the split simulation's variates, the bootstrap's counts): at most ``blocks``, and few
    enough that their rows of ``m`` items of ``itemsize`` bytes (``per_block`` rows a block)
    take at most ``budget`` (default :data:`EXACT_ORDER_BYTES`) and half of ``free`` device
    bytes; at least one.

    Examples
    --------
    >>> exact_order_rows(2_000_000, 1, 500), exact_order_rows(2_000_000, 1, 500, free=1 << 30)
    (500, 33)
    >>> exact_order_rows(2_000_000, 1, 10_000), exact_order_rows(2_000_000, 1, 10_000, itemsize=4)
    (536, 1073)
    """
    budget = EXACT_ORDER_BYTES if budget is None else int(budget)
    budget = budget if free is None else min(budget, free // 2)
    rows = budget // (int(itemsize) * max(int(m), 1))
    return int(max(1, min(int(blocks), rows // max(int(per_block), 1))))


def _simulation_sums_locked(key, start, stop, generator_code, parameter, u, n_bins, n_record,
                            plan, cpu_order_sums, info, keep_variates=False):
    """:func:`simulation_sums_gpu`, the GPU lock held. With ``keep_variates`` every variate
    is recorded (``n_record`` is ``M``) and the third item is the device array of them, not
    copied to the host (a simulation with cc ranks them on the device)."""
    kernel = _simulation_kernel()
    scale, form = variate_constants(generator_code, parameter)
    group, draws, block = plan
    m = u.shape[0]
    n = max(stop - start, 0)
    if info is not None:
        info.update(group=group, draws=draws, block=block, fallbacks=0)
    if n == 0:
        return np.empty((0, _SIM_SUMS)), np.empty((0, n_bins, 2)), np.empty((0, n_record))
    d_u = cuda.to_device(u if m else np.zeros(1))
    d_ends = cuda.to_device(_bin_ends(m, n_bins))
    d_sums = cuda.device_array((n, _SIM_SUMS), dtype=np.float64)
    # bins without points keep 0; never an empty device array
    d_bins = cuda.to_device(np.zeros((n, max(n_bins, 1), 2)))
    if keep_variates:  # every variate is written: no host array of n M NaN to copy
        n_record = m
        d_variates = cuda.device_array((n, max(m, 1)), dtype=np.float64)
    else:
        d_variates = cuda.to_device(np.full((n, max(n_record, 1)), np.nan))
    d_fallbacks = cuda.to_device(np.zeros(n, dtype=np.int64))
    per_block = block // group
    blocks = min((n + per_block - 1) // per_block, _MAX_BLOCKS)
    in_order = cpu_order_sums and group > 1
    if in_order:
        blocks = exact_order_rows(m, per_block, blocks, _free_device_bytes())
    d_buffer = cuda.device_array((blocks * per_block, m) if in_order else (1, 1),
                                 dtype=np.float64)
    if info is not None:
        info["in_flight"] = min(n, blocks * per_block)
    arguments = (np.uint64(key), np.int64(start), np.int64(n), np.int64(generator_code),
                 np.float64(parameter), np.float64(scale), np.int64(form), d_u, d_ends,
                 np.int64(n_bins), np.int64(group), np.int64(draws), d_sums, d_bins, d_variates,
                 np.int64(min(n_record, m)), d_fallbacks, np.int64(in_order), d_buffer)
    launch = kernel[blocks, block]
    with _NoContraction(), _quiet_launch(small_grid=True):
        launch(*arguments)
        sums = d_sums.copy_to_host()
    if info is not None:
        info["fallbacks"] = int(d_fallbacks.copy_to_host().sum())
    return (sums, d_bins.copy_to_host()[:, :n_bins],
            d_variates if keep_variates else d_variates.copy_to_host()[:, :n_record])


# ------------------------------------------------- the simulated sets' cc (a sort per set)

#: Threads per block of the rank kernel of simulated sets (:func:`_rank_sums`), at most (the
#: size of its shared arrays).
RANK_THREADS = 256
#: Bits of a digit of the rank kernel's radix sort: 8 (256 counts per thread and pass).
_RANK_BITS = 8
_RANK_DIGITS = 1 << _RANK_BITS
#: Rows of ``M`` doubles held on the device per replicate of a simulation with cc: its
#: variates (then its ``|E~|``), the two buffers of the sort and its ranks.
_CC_ROWS = 4
#: Device memory for those rows: a batch of replicates drawn and ranked at once holds at most
#: this many bytes (and half of the free memory). At M = 2·10⁶, 536 sets: the 500 of a default
#: validate's first round in one batch, one block each (the sort is bound by memory latency,
#: which more blocks per multiprocessor hide).
CC_BYTES = 32 << 30


def _absolute_errors(values, u):
    """Kernel: ``values[r, i] = |u[i] values[r, i]|`` (a replicate's variates become its
    ``|E~|``, computed as :func:`xuqcal.core.kernels._fused_synthetic_set` does: the product,
    then its absolute value)."""
    n = values.shape[0]
    m = values.shape[1]
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n * m:
        r = i // m
        p = i - r * m
        values[r, p] = abs(u[p] * values[r, p])
        i += stride


def _rank_sums(keys, centred_u, packed, buffer, histogram, rank, sums, sequential):
    """Kernel: cc's sums ``sums[r] = (sab, sbb)`` of each simulated set ``r`` (a block per set,
    looping with the grid's stride; block row ``blockIdx`` of the scratch arrays), from
    ``keys[r]``, the bits of its ``|E~|`` (non-negative doubles order as their bit patterns),
    and ``centred_u``, the fixed centred average ranks of uE: the sums of
    :func:`xuqcal.core.kernels._spearman_unit`, the same bits.

    1. The keys are sorted as the CPU's :func:`~xuqcal.core.kernels._packed_argsort` sorts
       them: ``hi << 32 | i``, ``hi`` the 32 highest bits of the span ``key - lowest``, in
       passes of 8-bit digits; a pass whose digit is the same for every key is skipped. Each
       thread counts the digits of its own segment of positions, the counts are scanned in
       digit-then-thread order, and each thread writes its segment's points in order: every
       pass is stable.
    2. The average ranks: a run of positions with the same ``hi`` whose full keys differ is
       ranked by counting, in the run, the keys below and equal to each (runs are short); a
       tie group of ``k`` equal keys at sorted positions ``start .. start + k - 1`` gets
       ``0.5 (start + (start + k) + 1)``, a lone key at ``j`` gets ``j + 1``: the CPU's values
       (integers and halves, exact).
    3. The sums. With ``sequential`` 0 (at most :data:`xuqcal.core.kernels._EXACT_RANK_SUMS`
       points), every product and partial sum is an exact multiple of 1/4, so the threads add
       their own points and thread 0 their sums: the CPU's exact sums. Else thread 0 adds the
       points one after the other in point order, as ``_spearman_unit`` does, from chunks that
       the block stages in shared memory.
    """
    tid = cuda.threadIdx.x
    threads = cuda.blockDim.x
    low = cuda.shared.array(RANK_THREADS, np.uint64)
    high = cuda.shared.array(RANK_THREADS, np.uint64)
    totals = cuda.shared.array(_RANK_DIGITS, np.int64)
    single = cuda.shared.array(1, np.int64)
    partial = cuda.shared.array((RANK_THREADS, 2), np.float64)
    chunk_u = cuda.shared.array(RANK_THREADS * _CHUNK_PER_THREAD, np.float64)
    chunk_r = cuda.shared.array(RANK_THREADS * _CHUNK_PER_THREAD, np.float64)
    n = keys.shape[0]
    m = keys.shape[1]
    row = cuda.blockIdx.x
    length = (m + threads - 1) // threads
    first = min(tid * length, m)
    last = min(first + length, m)
    low32 = np.uint64(0xFFFFFFFF)
    thirty_two = np.uint64(32)
    digit_mask = np.uint64(_RANK_DIGITS - 1)
    centre = 0.5 * (m + 1.0)
    r = cuda.blockIdx.x
    while r < n:
        # 1. the span of the keys
        lo = np.uint64(0xFFFFFFFFFFFFFFFF)
        hi = np.uint64(0)
        for i in range(first, last):
            key = keys[r, i]
            if key < lo:
                lo = key
            if key > hi:
                hi = key
        low[tid] = lo
        high[tid] = hi
        cuda.syncthreads()
        if tid == 0:
            for t in range(1, threads):
                if low[t] < low[0]:
                    low[0] = low[t]
                if high[t] > high[0]:
                    high[0] = high[t]
        cuda.syncthreads()
        lowest = low[0]
        span = high[0] - lowest
        width = 0
        while span > np.uint64(0):
            span = span >> np.uint64(1)
            width += 1
        drop = np.uint64(max(width - 32, 0))
        n_digits = (min(width, 32) + _RANK_BITS - 1) // _RANK_BITS
        for i in range(first, last):
            packed[row, i] = (((keys[r, i] - lowest) >> drop) << thirty_two) | np.uint64(i)
        cuda.syncthreads()
        # 2. stable counting passes on hi's digits, packed -> buffer -> packed ...
        in_packed = True
        for d in range(n_digits):
            shift = np.uint64(32 + _RANK_BITS * d)
            for v in range(_RANK_DIGITS):
                histogram[row, tid, v] = 0
            for i in range(first, last):
                x = packed[row, i] if in_packed else buffer[row, i]
                histogram[row, tid, np.int64((x >> shift) & digit_mask)] += 1
            cuda.syncthreads()
            for v in range(tid, _RANK_DIGITS, threads):
                running = np.int64(0)
                for t in range(threads):
                    count = histogram[row, t, v]
                    histogram[row, t, v] = running
                    running += count
                totals[v] = running
            cuda.syncthreads()
            if tid == 0:
                running = np.int64(0)
                single[0] = 0
                for v in range(_RANK_DIGITS):
                    count = totals[v]
                    totals[v] = running
                    running += count
                    if count == m:
                        single[0] = 1
            cuda.syncthreads()
            if single[0] == 0:
                for v in range(tid, _RANK_DIGITS, threads):
                    for t in range(threads):
                        histogram[row, t, v] += totals[v]
                cuda.syncthreads()
                for i in range(first, last):
                    x = packed[row, i] if in_packed else buffer[row, i]
                    v = np.int64((x >> shift) & digit_mask)
                    position = histogram[row, tid, v]
                    histogram[row, tid, v] = position + 1
                    if in_packed:
                        buffer[row, position] = x
                    else:
                        packed[row, position] = x
                in_packed = not in_packed
            cuda.syncthreads()
        # 3. the average ranks, each run of equal hi by the thread of its first position
        for j in range(first, last):
            x = packed[row, j] if in_packed else buffer[row, j]
            h = x >> thirty_two
            if j > 0:
                before = packed[row, j - 1] if in_packed else buffer[row, j - 1]
                if (before >> thirty_two) == h:
                    continue  # inside a run that an earlier position starts
            end = j + 1
            while end < m:
                after = packed[row, end] if in_packed else buffer[row, end]
                if (after >> thirty_two) != h:
                    break
                end += 1
            if end == j + 1:
                rank[row, np.int64(x & low32)] = j + 1.0
                continue
            for q in range(j, end):
                xq = packed[row, q] if in_packed else buffer[row, q]
                key = keys[r, np.int64(xq & low32)]
                below = 0
                equal = 0
                for w in range(j, end):
                    xw = packed[row, w] if in_packed else buffer[row, w]
                    other = keys[r, np.int64(xw & low32)]
                    if other < key:
                        below += 1
                    elif other == key:
                        equal += 1
                start = j + below
                rank[row, np.int64(xq & low32)] = 0.5 * (start + (start + equal) + 1.0)
        cuda.syncthreads()
        # 4. the sums
        sab = 0.0
        sbb = 0.0
        if sequential == 0:
            for p in range(first, last):
                b = rank[row, p] - centre
                sab += centred_u[p] * b
                sbb += b * b
            partial[tid, 0] = sab
            partial[tid, 1] = sbb
            cuda.syncthreads()
            if tid == 0:
                sab = 0.0
                sbb = 0.0
                for t in range(threads):
                    sab += partial[t, 0]
                    sbb += partial[t, 1]
        else:
            width_chunk = _CHUNK_PER_THREAD * threads
            for c0 in range(0, m, width_chunk):
                for k in range(_CHUNK_PER_THREAD):
                    i = c0 + tid + k * threads
                    if i < m:
                        chunk_u[tid + k * threads] = centred_u[i]
                        chunk_r[tid + k * threads] = rank[row, i]
                cuda.syncthreads()
                if tid == 0:
                    for q in range(min(width_chunk, m - c0)):
                        b = chunk_r[q] - centre
                        sab += chunk_u[q] * b
                        sbb += b * b
                cuda.syncthreads()
        if tid == 0:
            sums[r, 0] = sab
            sums[r, 1] = sbb
        cuda.syncthreads()
        r += cuda.gridDim.x


@functools.cache
def _rank_kernels():
    """Compile (once) the kernels of the simulated sets' cc."""
    _kernels()  # binds cuda
    return _jit_exact(_absolute_errors), _jit_exact(_rank_sums)


def centred_unit_ranks(order_u: np.ndarray, tie_u: np.ndarray) -> tuple[np.ndarray, float]:
    """The centred average ranks of the uncertainties (points in binning order; ``order_u``
    and ``tie_u`` their sort and tie flags) and the sum of their squares, ``saa``: what
    :func:`xuqcal.core.kernels.simulate_block` computes once for every synthetic set, by the
    same function.

    Examples
    --------
    >>> centred, saa = centred_unit_ranks(np.array([1, 0, 2]), np.array([False, True, False]))
    >>> centred.tolist(), saa
    ([-0.5, -0.5, 1.0], 1.5)
    """
    centred = np.empty(np.asarray(order_u).shape[0])
    saa = K.centred_unit_ranks(np.asarray(order_u), np.asarray(tie_u, dtype=np.bool_),
                               centred)
    return centred, float(saa)


def _rank_sums_locked(d_values, d_u, d_centred_u, sequential: bool, threads: int
                      ) -> np.ndarray:
    """``(n, 2)`` cc sums ``(sab, sbb)`` of the simulated sets whose variates are the rows of
    the device array ``d_values`` (which become their ``|E~|``); the caller holds the GPU lock."""
    absolute, ranks = _rank_kernels()
    n, m = d_values.shape
    d_sums = cuda.device_array((n, 2), dtype=np.float64)
    blocks = min(n, _MAX_BLOCKS)
    d_packed = cuda.device_array((blocks, m), dtype=np.uint64)
    d_buffer = cuda.device_array((blocks, m), dtype=np.uint64)
    d_rank = cuda.device_array((blocks, m), dtype=np.float64)
    d_histogram = cuda.device_array((blocks, threads, _RANK_DIGITS), dtype=np.int64)
    with _NoContraction(), _quiet_launch(small_grid=True):
        absolute[min(_MAX_BLOCKS, max(1, (n * m + THREADS - 1) // THREADS)), THREADS](
            d_values, d_u)
        ranks[blocks, threads](d_values.view(np.uint64), d_centred_u, d_packed, d_buffer,
                               d_histogram, d_rank, d_sums, np.int64(sequential))
        return d_sums.copy_to_host()


def simulation_cc_sums_gpu(key, start: int, stop: int, generator_code: int, parameter: float,
                           u: np.ndarray, n_bins: int, centred_u: np.ndarray, *,
                           threads: int | None = None, segment: int | None = None,
                           order: int | None = None, sequential: bool | None = None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`simulation_sums_gpu` with cc's sums as well: ``(sums, bins, cc_sums)``, with
    ``cc_sums`` ``(n, 2)``, the sums ``(sab, sbb)`` of
    :func:`xuqcal.core.kernels._spearman_unit` of each set's ``|E~|`` against the centred
    uE ranks ``centred_u`` (:func:`centred_unit_ranks`), made on the device by
    :func:`_rank_sums` from the variates the simulation kernel leaves there: the CPU's bits.

    The replicates are drawn and ranked in batches whose rows (:data:`_CC_ROWS` of ``M``
    doubles each) take at most :data:`CC_BYTES` and half the free device memory.
    ``sequential`` (default: above :data:`xuqcal.core.kernels._EXACT_RANK_SUMS` points, as the
    CPU) adds the sums in point order by one thread; else in any order (exact).
    ``threads``: of the simulation kernel (:func:`split_plan`) and of the rank kernel (at most
    :data:`RANK_THREADS`, its default).

    Examples
    --------
    >>> from xuqcal.core.random import stream_key
    >>> centred, saa = centred_unit_ranks(np.arange(100), np.zeros(100, dtype=bool))
    >>> sums, bins, cc = simulation_cc_sums_gpu(stream_key(0, "reference:normal"), 0, 4,
    ...                                         K.NORMAL, 0.0, np.linspace(0.5, 2.0, 100), 5,
    ...                                         centred)  # doctest: +SKIP
    >>> cc.shape  # doctest: +SKIP
    (4, 2)
    """
    rank_threads = RANK_THREADS if threads is None else _check_threads(threads)
    if rank_threads > RANK_THREADS:
        raise ValueError(f"the rank kernel takes at most {RANK_THREADS} threads per block "
                         f"(threads = {rank_threads})")
    u, in_order, plan = _simulation_setup(generator_code, parameter, u, order, threads, segment)
    centred_u = np.ascontiguousarray(centred_u, dtype=np.float64)
    m = u.shape[0]
    if centred_u.shape != (m,):
        raise ValueError(f"centred_u: expected the {m} centred ranks of u, got shape "
                         f"{centred_u.shape}")
    if not 0 < m <= K._MAX_SORTED:
        raise ValueError(f"cc of simulated sets needs 0 < M <= 2**31 - 1 points (M = {m})")
    sequential = m > K._EXACT_RANK_SUMS if sequential is None else bool(sequential)
    start, stop = int(start), int(stop)
    parts = []
    with _GPU_LOCK:
        _rank_kernels()
        batch = exact_order_rows(m, _CC_ROWS, max(stop - start, 1), _free_device_bytes(),
                                 budget=CC_BYTES)
        d_u = cuda.to_device(u)
        d_centred = cuda.to_device(centred_u)
        for first in range(start, stop, batch):
            sums, bins, d_values = _simulation_sums_locked(
                key, first, min(stop, first + batch), int(generator_code), float(parameter),
                u, int(n_bins), m, plan, in_order, None, keep_variates=True)
            parts.append((sums, bins, _rank_sums_locked(d_values, d_u, d_centred, sequential,
                                                        rank_threads)))
            del d_values
    if not parts:
        return np.empty((0, _SIM_SUMS)), np.empty((0, n_bins, 2)), np.empty((0, 2))
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))


def simulation_on_gpu(codes, generator_code: int) -> bool:
    """Whether the GPU can simulate the statistics ``codes`` with the generator
    ``generator_code``: every moment and binned statistic and the rank statistic ``cc``, and
    every generator of :data:`SIMULATION_GENERATORS`.

    Examples
    --------
    >>> simulation_on_gpu(np.array([K.ZMS, K.ENCE, K.CC]), K.NORMAL)
    True
    >>> simulation_on_gpu([K.ZMS], K.NORMP), simulation_on_gpu([K.CC + 1], K.NORMAL)
    (False, False)
    """
    codes = np.asarray(codes, dtype=np.int64).reshape(-1)
    return (int(generator_code) in SIMULATION_GENERATORS
            and bool(np.all((codes >= 0) & (codes <= K.CC))))


def _sequential_sum(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """The sum of ``values`` along ``axis`` added one after the other from 0.0, as a kernel's
    loop (NumPy's ``sum`` adds in pairs: other roundings)."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape[axis] == 0:
        return np.zeros(np.delete(values.shape, axis % values.ndim))
    return np.take(np.add.accumulate(values, axis=axis), -1, axis=axis)


def simulate_statistics_gpu(key, start: int, stop: int, codes, generator_code: int,
                            parameter: float, prepared, *,
                            threads: int | None = None, segment: int | None = None,
                            order: int | None = None) -> np.ndarray:
    """Statistics of the synthetic sets ``E~ = uE eps`` of replicates ``start .. stop - 1``
    drawn on the GPU: ``(stop - start, len(codes))``, what
    ``xuqcal.analysis.simulation._simulation_block`` returns on the CPU: the same variates,
    the same sums in the same order (the default; with ``order=IN_A_TREE``, a replicate split
    between threads has its sums added in a tree), finished by the same finishers, so the same
    bits, except where a GPU ``log`` rounds a variate (Laplace) or a decision (the gamma
    Student-t's tries past the squeeze) differently in the last bit.

    Parameters
    ----------
    key : numpy.uint64
        The stream key (:func:`xuqcal.core.random.stream_key`, purpose ``reference:D``).
    start, stop : int
        The replicates.
    codes : array of int
        Statistic codes: moment and binned statistics and ``cc`` (its sets sorted and ranked
        on the device, :func:`simulation_cc_sums_gpu`).
    generator_code, parameter : int, float
        The generator (:data:`SIMULATION_GENERATORS`; ``normp`` is refused) and its parameter
        (ν of a Student-t, > 2).
    prepared : xuqcal.core.statistics.PreparedData
        The uncertainties (``u``, ``u2``, ``lnu2``, in binning order) and ``n_bins``.
    threads, segment : int, optional
        Threads per block (a power of two up to :data:`SPLIT_THREADS`) and the least raw draws
        per thread (:func:`split_plan`).
    order : int, optional
        How a split replicate's sums are added: None or :data:`IN_DRAW_ORDER`, the CPU's order
        (the default); :data:`IN_A_TREE`, a tree (:func:`simulation_sums_gpu`).

    Examples
    --------
    >>> from xuqcal.core.random import stream_key
    >>> from xuqcal.core.statistics import STATISTICS, PreparedData
    >>> rng = np.random.default_rng(0)
    >>> uE = rng.uniform(0.5, 2.0, 300)
    >>> prepared = PreparedData.from_arrays(uE * rng.standard_normal(300), uE, n_bins=5)
    >>> codes = np.array([STATISTICS[k].code for k in ("zms", "ence")])
    >>> simulate_statistics_gpu(stream_key(1, "reference:normal"), 0, 20, codes, K.NORMAL,
    ...                         0.0, prepared).shape  # doctest: +SKIP
    (20, 2)
    >>> simulate_statistics_gpu(stream_key(1, "reference:normal"), 0, 20,
    ...                         np.array([K.CC + 1]), K.NORMAL, 0.0, prepared)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the GPU simulation computes moment and binned statistics and cc (codes 0 to 13)...
    """
    codes = np.asarray(codes, dtype=np.int64).reshape(-1)
    if not np.all((codes >= 0) & (codes <= K.CC)):
        raise ValueError(f"the GPU simulation computes moment and binned statistics and cc "
                         f"(codes 0 to {K.CC}); got codes {codes.tolist()}")
    m = prepared.size
    binned = [int(c) for c in codes if c in K.BIN_TERMS]
    n_bins = int(prepared.n_bins) if binned else 0
    ranked = [k for k, c in enumerate(codes.tolist()) if c == K.CC]
    if ranked:
        centred_u, saa = centred_unit_ranks(prepared.order_u, prepared.tie_u)
        sums, bins, cc_sums = simulation_cc_sums_gpu(
            key, start, stop, generator_code, parameter, prepared.u, n_bins, centred_u,
            threads=threads, segment=segment, order=order)
    else:
        sums, bins, _ = simulation_sums_gpu(key, start, stop, generator_code, parameter,
                                            prepared.u, n_bins, threads=threads,
                                            segment=segment, order=order)
    n = sums.shape[0]
    out = np.empty((n, codes.shape[0]))
    if ranked:
        out[:, ranked] = spearman_from_sums(np.stack(
            [cc_sums[:, 0], np.full(n, saa), cc_sums[:, 1]], axis=1))[:, np.newaxis]
    # the sums of the uncertainties, one after the other as the CPU kernel's loops
    s_u2 = _sequential_sum(prepared.u2)
    s_lnu2 = _sequential_sum(prepared.lnu2)
    moment = [k for k, c in enumerate(codes.tolist()) if c < K.N_MOMENT]
    if moment:
        # columns of xuqcal.core.kernels.COLUMNS; z_shift = 0 (zd = eps, zd2 = eps²)
        columns = np.stack([sums[:, 0], np.full(n, s_u2), sums[:, 1], np.full(n, s_lnu2),
                            sums[:, 2], sums[:, 1]], axis=1)
        out[:, moment] = finish_moments(codes[moment], m, columns, 0.0)
    if binned:
        ends = _bin_ends(m, n_bins)[:n_bins]
        begins = np.concatenate([[0], ends[:-1]])
        b_n = (ends - begins).astype(np.float64)
        b_u2 = np.array([_sequential_sum(prepared.u2[lo:hi]) for lo, hi in zip(begins, ends,
                                                                                 strict=True)])
        where = [k for k, code in enumerate(codes.tolist()) if code in K.BIN_TERMS]
        out[:, where] = finish_binned(codes[where], n_bins, b_n, bins[:, :, 0], b_u2,
                                      bins[:, :, 1])
    return prepared.unscale(codes, out)


def variates_gpu(key, start: int, stop: int, generator_code: int, parameter: float,
                 m: int, *, threads: int | None = None, segment: int | None = None
                 ) -> np.ndarray:
    """The ``m`` variates ``eps`` of each replicate ``start .. stop - 1`` drawn on the GPU:
    ``(stop - start, m)``, equal to :func:`xuqcal.core.kernels.fill_variates` (debug and tests).

    Examples
    --------
    >>> from xuqcal.core.random import stream_key
    >>> key = stream_key(0, "reference:t6")
    >>> cpu = np.empty(9)
    >>> K.fill_variates(key, 2, K.STUDENT, 6.0, cpu)
    >>> bool((variates_gpu(key, 2, 3, K.STUDENT, 6.0, 9)[0] == cpu).all())  # doctest: +SKIP
    True
    """
    _, _, variates = simulation_sums_gpu(key, start, stop, generator_code, parameter,
                                         np.ones(int(m)), 0, n_record=int(m), threads=threads,
                                         segment=segment, order=IN_A_TREE)  # sums not used
    return variates
