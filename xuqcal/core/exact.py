"""Exact sums and exact order statistics, chunk by chunk (the kernels of out-of-core analyses).

**Exact sums.** A float64 is an integer multiple of ``2^-1074`` (the smallest subnormal) below
``2^1024``, so the sum of any number of float64 values is an integer multiple of ``2^-1074``.
The kernels keep that integer exactly in an **accumulator** of :data:`LIMBS` signed 64-bit limbs
of 32 bits each (a "small superaccumulator", R. M. Neal, arXiv:1505.05571, 2015): adding a value
splits its 53-bit significand, shifted by its exponent, over three consecutive limbs (integer
additions, no rounding, no branch on the data); the limbs are brought back to 32 bits (carry
propagation) every :data:`CARRY_EVERY` additions and at the end of a chunk. Accumulators of
different chunks add limb by limb, and the total is finished by :func:`math.fsum` of the limbs
(each an exact float64 ``limb * 2^(32 k - 1074)``), i.e. the **correctly rounded** exact sum.
The exact sum does not depend on the order of the additions nor on how the points were cut into
chunks, so neither does its rounding: a result is bit-identical whatever the chunking.

Shewchuk's expansions (the partials of :func:`math.fsum`) give the same correctly rounded sums;
the accumulator is used instead for speed (fsum's loop branches on the data; the accumulator
adds each value to fixed integer slots) and because its size is fixed (no renormalization
when partials pile up). Non-finite values are counted in an extra slot of the accumulator and
make the sum NaN.

**Exact order statistics** (:func:`radix_pass`, :class:`Selection`): the order-preserving
``uint64`` keys of the binning variable (:func:`sort_keys`) are histogrammed 16 bits at a time
inside the key range still holding the wanted rank; a range holding few points (or few distinct
keys) is gathered instead. At most four passes over the data find ``x_(r)`` exactly whatever
the chunking (the histograms are integer counts, summed).

Every jitted function that a cached kernel calls lives in this file (see
:mod:`xuqcal.core.kernels` for why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba as nb
import numpy as np

#: Limbs of 32 bits of an accumulator: 2098 bits of float64 range plus 40 bits of count.
LIMBS = 68
#: Slots of an accumulator: the limbs and the count of non-finite values added.
SLOTS = LIMBS + 1
#: Additions between two carry propagations (each limb then stays below 2^63).
CARRY_EVERY = 1 << 28
#: Bits histogrammed per pass of the radix selection.
RADIX_BITS = 16
#: A key range holding at most this many points, or distinct keys, is gathered (and sorted)
#: instead of histogrammed further.
GATHER_CAP = 1 << 14
_SIGN = np.uint64(1 << 63)
_HASH = np.uint64(0x9E3779B97F4A7C15)
_LOW32 = np.uint64(0xFFFFFFFF)
_MANTISSA = np.uint64((1 << 52) - 1)
_HIDDEN = np.uint64(1 << 52)
_EXP = np.uint64(0x7FF)

_jit = nb.njit(inline="always", error_model="numpy")


# ------------------------------------------------------------------------------- accumulators


@_jit
def _deposit(acc, base, bits):
    """Add the float64 of bit pattern ``bits`` to the accumulator ``acc[base:base + SLOTS]``."""
    e = (bits >> np.uint64(52)) & _EXP
    if e == _EXP:  # inf or NaN
        acc[base + LIMBS] += 1
        return
    m = bits & _MANTISSA
    if e == 0:
        p = np.uint64(0)
    else:
        m = m | _HIDDEN
        p = e - np.uint64(1)
    index = base + np.int64(p >> np.uint64(5))
    low = p & np.uint64(31)
    lo_part = (m & _LOW32) << low
    hi_part = (m >> np.uint64(32)) << low
    sign = 1 - 2 * np.int64(bits >> np.uint64(63))
    acc[index] += sign * np.int64(lo_part & _LOW32)
    acc[index + 1] += sign * np.int64((lo_part >> np.uint64(32)) + (hi_part & _LOW32))
    acc[index + 2] += sign * np.int64(hi_part >> np.uint64(32))


@_jit
def _carry(acc, base):
    """Propagate the carries of ``acc[base:base + LIMBS]``: every limb but the top one in
    ``[0, 2^32)``, the same exact total."""
    for k in range(LIMBS - 1):
        c = acc[base + k] >> 32
        acc[base + k] -= c << 32
        acc[base + k + 1] += c


@nb.njit(nogil=True, cache=True, error_model="numpy")
def sum_columns(bits, valid, out, carry_every=CARRY_EVERY):
    """Add the valid points of each column of ``bits`` (columns, rows, points: the float64
    values viewed as ``uint64``) to the accumulators ``out`` (rows × columns × :data:`SLOTS`,
    int64), in place; the carries are propagated every ``carry_every`` additions."""
    n_cols, n_rows, n_points = bits.shape
    flat = out.reshape(-1)
    for r in range(n_rows):
        for c in range(n_cols):
            base = (r * n_cols + c) * SLOTS
            since = 0
            for s in range(n_points):
                if valid[r, s]:
                    _deposit(flat, base, bits[c, r, s])
                    since += 1
                    if since == carry_every:
                        _carry(flat, base)
                        since = 0
            _carry(flat, base)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def sum_bins(bits, bins, valid, out, counts, carry_every=CARRY_EVERY):
    """Per-bin exact sums: for every valid point of a row, ``counts[row, bin] += 1`` and each
    column of ``bits`` (columns, rows, points; float64 viewed as ``uint64``) is added to the
    accumulator ``out[row, bin, column]`` (rows × bins × columns × :data:`SLOTS`) of its bin
    ``bins[row, point]``; in place (carries propagated every ``carry_every`` points)."""
    n_cols, n_rows, n_points = bits.shape
    n_bins = out.shape[1]
    flat = out.reshape(-1)
    since = 0
    for r in range(n_rows):
        for s in range(n_points):
            if not valid[r, s]:
                continue
            b = bins[r, s]
            counts[r, b] += 1
            base = ((r * n_bins + b) * n_cols) * SLOTS
            for c in range(n_cols):
                _deposit(flat, base + c * SLOTS, bits[c, r, s])
            since += 1
            if since == carry_every:
                for k in range(flat.shape[0] // SLOTS):
                    _carry(flat, k * SLOTS)
                since = 0
    for k in range(flat.shape[0] // SLOTS):
        _carry(flat, k * SLOTS)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def merge(into, other):
    """Add the accumulators ``other`` to ``into`` (same shape, last axis :data:`SLOTS`), in
    place: the exact totals add up."""
    a = into.reshape(-1)
    b = other.reshape(-1)
    for k in range(a.shape[0]):
        a[k] += b[k]
    for k in range(a.shape[0] // SLOTS):
        _carry(a, k * SLOTS)


@_jit
def _grow(p, n, x):
    """Add ``x`` exactly to the partials ``p[:n]`` (math.fsum's inner loop); returns the new
    number of partials."""
    i = 0
    for j in range(n):
        y = p[j]
        if abs(x) < abs(y):
            t = x
            x = y
            y = t
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            p[i] = lo
            i += 1
        x = hi
    if x != 0.0:
        p[i] = x
        i += 1
    return i


@_jit
def _round(p, n):
    """The correctly rounded value of the partials ``p[:n]`` (math.fsum's final step,
    round-half-even included)."""
    hi = 0.0
    if n > 0:
        n -= 1
        hi = p[n]
        lo = 0.0
        while n > 0:
            x = hi
            n -= 1
            y = p[n]
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                break
        if n > 0 and ((lo < 0.0 and p[n - 1] < 0.0) or (lo > 0.0 and p[n - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            yr = x - hi
            if y == yr:
                hi = x
    return hi


@nb.njit(nogil=True, cache=True, error_model="numpy")
def _totals(acc, out):
    """math.fsum of the exact float64 limbs ``limb * 2^(32 k - 1074)`` of each accumulator."""
    p = np.zeros(LIMBS + 2)
    limbs = np.zeros(LIMBS, np.int64)
    for r in range(out.shape[0]):
        if acc[r, LIMBS] != 0:
            out[r] = np.nan
            continue
        # carried limbs hold a negative total as a negative top limb over non-negative ones:
        # negate it first, so that every limb is a small non-negative float
        sign = -1 if acc[r, LIMBS - 1] < 0 else 1
        for k in range(LIMBS):
            limbs[k] = sign * acc[r, k]
        _carry(limbs, 0)
        n = 0
        for k in range(LIMBS):
            if limbs[k] != 0:
                n = _grow(p, n, np.ldexp(np.float64(limbs[k]), 32 * k - 1074))
        out[r] = sign * _round(p, n)


def new_accumulators(*shape: int) -> np.ndarray:
    """Empty accumulators (zero sums) of the given leading shape.

    Examples
    --------
    >>> new_accumulators(2, 3).shape == (2, 3, SLOTS)
    True
    """
    return np.zeros((*shape, SLOTS), dtype=np.int64)


def as_bits(values: np.ndarray) -> np.ndarray:
    """Float64 values as the C-contiguous ``uint64`` bit patterns the kernels add."""
    return np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)


def rounded(accumulators: np.ndarray) -> np.ndarray:
    """The correctly rounded totals of accumulators (last axis :data:`SLOTS`): NaN where a
    non-finite value was added. Equal to :func:`math.fsum` of the values added.

    Examples
    --------
    >>> values = np.array([[1e16, 1.0, -1e16]])
    >>> acc = new_accumulators(1, 1)
    >>> sum_columns(as_bits(values[:, np.newaxis, :]), np.ones((1, 3), bool), acc)
    >>> float(rounded(acc)[0, 0]), float(np.sum(values))
    (1.0, 0.0)
    """
    accumulators = np.ascontiguousarray(accumulators, dtype=np.int64)
    flat = accumulators.reshape(-1, SLOTS)
    out = np.empty(flat.shape[0])
    _totals(flat, out)
    return out.reshape(accumulators.shape[:-1])


def exact_sum(values: Sequence[float] | np.ndarray) -> float:
    """The correctly rounded sum of a 1-D array (equal to :func:`math.fsum`), by the kernels.

    Examples
    --------
    >>> import math
    >>> exact_sum(np.array([0.1] * 10)) == math.fsum([0.1] * 10) == 1.0
    True
    """
    bits = as_bits(np.asarray(values, dtype=np.float64).reshape(1, 1, -1))
    acc = new_accumulators(1, 1)
    sum_columns(bits, np.ones(bits.shape[1:], dtype=np.bool_), acc)
    return float(rounded(acc)[0, 0])


# ------------------------------------------------------------------------- order statistics


@nb.njit(nogil=True, cache=True)
def _float_keys(bits, out):
    """Order-preserving keys of float64 bit patterns (``-0.0`` as ``0.0``)."""
    for i in range(bits.shape[0]):
        b = bits[i]
        if b == _SIGN:  # -0.0
            b = np.uint64(0)
        out[i] = b ^ ((np.uint64(0) - (b >> np.uint64(63))) | _SIGN)


def sort_keys(values: np.ndarray) -> np.ndarray:
    """Order-preserving ``uint64`` keys: ``a < b`` exactly when ``key(a) < key(b)`` (floats,
    with ``-0.0`` and ``0.0`` one key; signed and unsigned integers; booleans).

    Examples
    --------
    >>> keys = sort_keys(np.array([-2.0, -0.0, 0.0, 1e-300, 3.0]))
    >>> bool(np.all(np.diff(keys.astype(object)) >= 0)), bool(keys[1] == keys[2])
    (True, True)
    """
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind == "f":
        bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
        out = np.empty(bits.shape, dtype=np.uint64)
        _float_keys(bits.reshape(-1), out.reshape(-1))
        return out
    if kind == "i":
        return values.astype(np.int64).view(np.uint64) ^ _SIGN
    if kind in "ub":
        return values.astype(np.uint64)
    raise ValueError(f"values: expected numbers, got dtype {values.dtype}")


def key_values(keys: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The values of ``dtype`` whose :func:`sort_keys` are ``keys`` (floats as float64).

    Examples
    --------
    >>> x = np.array([-2.5, 0.0, 7.0])
    >>> key_values(sort_keys(x), x.dtype).tolist()
    [-2.5, 0.0, 7.0]
    """
    keys = np.asarray(keys, dtype=np.uint64)
    kind = np.dtype(dtype).kind
    if kind == "f":
        return np.where(keys & _SIGN, keys ^ _SIGN, ~keys).view(np.float64)
    if kind == "i":
        return (keys ^ _SIGN).view(np.int64)
    if kind == "b":
        return keys.astype(bool)
    return keys.astype(dtype)


@nb.njit(nogil=True, cache=True, error_model="numpy")
def radix_pass(keys, valid, row_start, lo, hi, shift, hist_slot, table_offset, table_bits,
               hist, table_keys, table_counts, distinct):
    """One pass of the exact selection over a block of points.

    ``keys`` and ``valid`` are (rows, points). The groups of row ``r`` are
    ``row_start[r]:row_start[r + 1]``, sorted by ``lo``, with disjoint key ranges
    ``[lo, hi]``. A point of a group with ``hist_slot >= 0`` is counted in
    ``hist[hist_slot, (key - lo) >> shift]``; one of a group with ``table_bits > 0`` is
    gathered in its hash table (``2^table_bits`` slots of ``table_keys`` and ``table_counts``
    from ``table_offset``, open addressing): the table holds at most half its slots of
    distinct keys; one more sets ``distinct`` to that half plus one (overflowed) and stops it.
    """
    n_rows, n_points = keys.shape
    for r in range(n_rows):
        first = row_start[r]
        last = row_start[r + 1]
        if first == last:
            continue
        for s in range(n_points):
            if not valid[r, s]:
                continue
            key = keys[r, s]
            a = first
            b = last
            while b - a > 1:  # the last group whose lo <= key
                mid = (a + b) // 2
                if lo[mid] <= key:
                    a = mid
                else:
                    b = mid
            if key < lo[a] or key > hi[a]:
                continue
            h = hist_slot[a]
            if h >= 0:
                hist[h, np.int64((key - lo[a]) >> np.uint64(shift[a]))] += 1
            bits = table_bits[a]
            if bits > 0:
                size = np.int64(1) << bits
                cap = size // 2
                if distinct[a] > cap:
                    continue
                mask = size - 1
                base = table_offset[a]
                slot = np.int64((key * _HASH) >> np.uint64(64 - bits))
                while True:
                    if table_counts[base + slot] == 0:
                        if distinct[a] == cap:
                            distinct[a] = cap + 1  # overflowed: the histogram decides
                            break
                        table_keys[base + slot] = key
                        table_counts[base + slot] = 1
                        distinct[a] += 1
                        break
                    if table_keys[base + slot] == key:
                        table_counts[base + slot] += 1
                        break
                    slot = (slot + 1) & mask


@dataclass(frozen=True)
class _Group:
    """The points of one row whose keys lie in ``[lo, hi]``, as seen by some blocks: the
    non-empty sub-ranges of the histogram (``None`` when not histogrammed) and the distinct
    keys gathered (sorted; ``None`` when there were too many)."""

    buckets: np.ndarray | None
    bucket_counts: np.ndarray | None
    keys: np.ndarray | None
    counts: np.ndarray | None


def _merge_counts(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``values`` (sorted) with their summed ``counts``."""
    unique, inverse = np.unique(values, return_inverse=True)
    total = np.zeros(unique.shape[0], dtype=np.int64)
    np.add.at(total, inverse, counts)
    return unique, total


def _table_bits(count: int) -> int:
    """log2 of the hash-table slots of a range of ``count`` points: twice the distinct keys it
    may gather (at most :data:`GATHER_CAP`)."""
    return max(1, (2 * min(count, GATHER_CAP) - 1).bit_length())


#: Bytes of histograms and hash tables one call of :func:`radix_pass` may allocate (the groups
#: of a block are processed in batches of rows within it).
RADIX_BUDGET = 1 << 26


@dataclass(frozen=True)
class Selection:
    """The exact selection of order statistics of several rows (data sets), pass by pass.

    Row ``p`` has ``counts[p]`` valid points whose keys (:func:`sort_keys`) lie in
    ``[kmin[p], kmax[p]]``; its targets are the ranks ``floor(b M / N)`` (0-based),
    ``b = 1 .. N - 1``: the lower edges of the equal-count bins ``2 .. N``. Each pass over the
    data (:meth:`block` on every block, :meth:`combine` of the blocks, :meth:`advance`) narrows
    the key range of every target: a range of at most :data:`GATHER_CAP` points, or of at most
    that many distinct keys, is gathered and the target found; a larger one is cut into
    ``2^16`` sub-ranges whose counts give the sub-range holding the target. A range of one key
    is the answer. Four passes always suffice (64 bits, 16 per pass); :attr:`done` says when.
    A block's memory is bounded (:data:`RADIX_BUDGET`, then sparse results), whatever the
    number of rows and targets.

    Examples
    --------
    >>> x = np.array([[5.0, 1.0, 4.0, 2.0, 3.0, 6.0]])
    >>> keys = sort_keys(x)
    >>> s = Selection.start(keys.min(axis=1), keys.max(axis=1), np.array([6]), 3)
    >>> rows = np.array([0])
    >>> s = s.advance(s.block(keys, np.ones_like(x, dtype=bool), rows))
    >>> bool(s.done.all()), key_values(s.edges(), x.dtype).tolist()
    (True, [[3.0, 5.0]])
    """

    rows: np.ndarray
    ranks: np.ndarray
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    counts: np.ndarray
    keys: np.ndarray
    done: np.ndarray
    n_rows: int
    n_targets: int

    @classmethod
    def start(cls, kmin: np.ndarray, kmax: np.ndarray, counts: np.ndarray,
              n_bins: int) -> Selection:
        """The targets of ``n_bins`` equal-count bins of each row (key ranges and counts of the
        valid points per row)."""
        n_rows = len(counts)
        per_row = n_bins - 1
        rows = np.repeat(np.arange(n_rows, dtype=np.int64), per_row)
        b = np.tile(np.arange(1, n_bins, dtype=np.int64), n_rows)
        m = np.asarray(counts, dtype=np.int64)[rows]
        lo = tuple(int(kmin[r]) for r in rows)
        hi = tuple(int(kmax[r]) for r in rows)
        done = np.array([a == z for a, z in zip(lo, hi, strict=True)], dtype=bool)
        keys = np.array(lo, dtype=np.uint64) if lo else np.zeros(0, np.uint64)
        return cls(rows, (b * m) // n_bins, lo, hi, m.copy(), keys, done, n_rows, per_row)

    def _groups(self, rows: np.ndarray) -> dict[int, list[tuple[int, int, int]]]:
        """The distinct open ranges ``(lo, hi, count)`` of each local row of ``rows``."""
        local = {int(r): i for i, r in enumerate(np.asarray(rows).tolist())}
        found: dict[int, dict[tuple[int, int], int]] = {}
        for t in np.flatnonzero(~self.done).tolist():
            i = local.get(int(self.rows[t]))
            if i is not None:
                found.setdefault(i, {})[(self.lo[t], self.hi[t])] = int(self.counts[t])
        return {i: sorted((lo, hi, c) for (lo, hi), c in ranges.items())
                for i, ranges in found.items()}

    def is_open(self, rows: np.ndarray) -> bool:
        """Whether a target of the global rows ``rows`` is still to be found."""
        return bool(np.any(~self.done & np.isin(self.rows, rows)))

    def block(self, keys: np.ndarray, valid: np.ndarray, rows: np.ndarray
              ) -> dict[tuple[int, int, int], _Group]:
        """One block's contribution to the pass: ``keys`` and ``valid`` are (rows, points) of
        the global rows ``rows``. Returns the histogram and gathered keys of each open range,
        keyed by ``(row, lo, hi)``."""
        groups = self._groups(rows)
        out: dict[tuple[int, int, int], _Group] = {}
        batch: list[int] = []
        cost = 0
        for i in sorted(groups):
            need = sum((8 << RADIX_BITS if c > GATHER_CAP else 0) + (16 << _table_bits(c))
                       for _, _, c in groups[i])
            if batch and cost + need > RADIX_BUDGET:
                out.update(self._batch(keys, valid, rows, groups, batch))
                batch, cost = [], 0
            batch.append(i)
            cost += need
        if batch:
            out.update(self._batch(keys, valid, rows, groups, batch))
        return out

    @staticmethod
    def _batch(keys: np.ndarray, valid: np.ndarray, rows: np.ndarray,
               groups: dict[int, list[tuple[int, int, int]]], batch: list[int]
               ) -> dict[tuple[int, int, int], _Group]:
        """:func:`radix_pass` over the local rows ``batch`` (sorted), results made sparse."""
        row_start = np.zeros(len(batch) + 1, dtype=np.int64)
        ids, lo, hi, shift, hist_slot, offset, bits = [], [], [], [], [], [], []
        n_hist = n_slots = 0
        for j, i in enumerate(batch):
            for a, z, count in groups[i]:
                ids.append((int(rows[i]), a, z))
                lo.append(a)
                hi.append(z)
                shift.append(max(0, (z - a).bit_length() - RADIX_BITS))
                hist_slot.append(n_hist if count > GATHER_CAP else -1)
                n_hist += count > GATHER_CAP
                offset.append(n_slots)
                bits.append(_table_bits(count))
                n_slots += 1 << bits[-1]
            row_start[j + 1] = len(ids)
        hist = np.zeros((n_hist, 1 << RADIX_BITS), dtype=np.int64)
        table_keys = np.zeros(n_slots, dtype=np.uint64)
        table_counts = np.zeros(n_slots, dtype=np.int64)
        distinct = np.zeros(len(ids), dtype=np.int64)
        radix_pass(np.ascontiguousarray(keys[batch], dtype=np.uint64),
                   np.ascontiguousarray(valid[batch]), row_start,
                   np.array(lo, dtype=np.uint64), np.array(hi, dtype=np.uint64),
                   np.array(shift, dtype=np.int64), np.array(hist_slot, dtype=np.int64),
                   np.array(offset, dtype=np.int64), np.array(bits, dtype=np.int64), hist,
                   table_keys, table_counts, distinct)
        out = {}
        for g, gid in enumerate(ids):
            buckets = bucket_counts = gathered = gathered_counts = None
            if hist_slot[g] >= 0:
                row = hist[hist_slot[g]]
                buckets = np.flatnonzero(row)
                bucket_counts = row[buckets]
            if distinct[g] <= (1 << bits[g]) // 2:
                table = slice(offset[g], offset[g] + (1 << bits[g]))
                used = table_counts[table] > 0
                order = np.argsort(table_keys[table][used])
                gathered = table_keys[table][used][order]
                gathered_counts = table_counts[table][used][order]
            out[gid] = _Group(buckets, bucket_counts, gathered, gathered_counts)
        return out

    @staticmethod
    def combine(a: dict[tuple[int, int, int], _Group], b: dict[tuple[int, int, int], _Group]
                ) -> dict[tuple[int, int, int], _Group]:
        """The contributions of two sets of blocks together (histograms summed, gathered keys
        merged; ``None`` once more than :data:`GATHER_CAP` distinct keys are seen)."""
        out = dict(a)
        for gid, other in b.items():
            mine = out.get(gid)
            if mine is None:
                out[gid] = other
                continue
            buckets = bucket_counts = keys = counts = None
            if mine.buckets is not None:
                buckets, bucket_counts = _merge_counts(
                    np.concatenate([mine.buckets, other.buckets]),
                    np.concatenate([mine.bucket_counts, other.bucket_counts]))
            if mine.keys is not None and other.keys is not None:
                keys, counts = _merge_counts(np.concatenate([mine.keys, other.keys]),
                                             np.concatenate([mine.counts, other.counts]))
                if keys.shape[0] > GATHER_CAP:
                    keys = counts = None
            out[gid] = _Group(buckets, bucket_counts, keys, counts)
        return out

    def advance(self, seen: dict[tuple[int, int, int], _Group]) -> Selection:
        """The selection after a pass whose combined contributions are ``seen``."""
        lo, hi = list(self.lo), list(self.hi)
        ranks, counts = self.ranks.copy(), self.counts.copy()
        keys, done = self.keys.copy(), self.done.copy()
        for t in np.flatnonzero(~done).tolist():
            a, z, r = lo[t], hi[t], int(ranks[t])
            group = seen.get((int(self.rows[t]), a, z))
            if group is None:  # no block saw the range: cannot happen for a valid pass
                raise RuntimeError("selection: a key range was not seen by the pass")
            if group.keys is not None:
                cumulative = np.cumsum(group.counts)
                keys[t] = group.keys[int(np.searchsorted(cumulative, r, side="right"))]
                done[t] = True
                continue
            if group.buckets is None:
                raise RuntimeError("selection: a range of few points gathered too many keys")
            shift = max(0, (z - a).bit_length() - RADIX_BITS)
            cumulative = np.cumsum(group.bucket_counts)
            k = int(np.searchsorted(cumulative, r, side="right"))
            j = int(group.buckets[k])
            below = int(cumulative[k - 1]) if k else 0
            new_lo = a + (j << shift)
            lo[t], hi[t] = new_lo, min(new_lo + (1 << shift) - 1, z)
            ranks[t], counts[t] = r - below, int(group.bucket_counts[k])
            if lo[t] == hi[t]:
                keys[t] = np.uint64(lo[t])
                done[t] = True
        return Selection(self.rows, ranks, tuple(lo), tuple(hi), counts, keys, done,
                         self.n_rows, self.n_targets)

    def edges(self) -> np.ndarray:
        """The keys found, (rows, N - 1); every target must be :attr:`done`."""
        if not self.done.all():
            raise RuntimeError("selection: some order statistics are not found yet")
        return self.keys.reshape(self.n_rows, self.n_targets)
