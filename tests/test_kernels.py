"""The counts-weighted kernels against straightforward definitions (full, resampled, LOO)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_statistics

from xuqcal.analysis.resampling import _jackknife_block
from xuqcal.core import kernels as K
from xuqcal.core.statistics import STATISTICS, PreparedData, codes_of, compute, get_statistics

ALL = list(STATISTICS)


def _data(seed: int, m: int, ties: bool):
    rng = np.random.default_rng(seed)
    uE = rng.uniform(0.5, 2.0, m)
    if ties:  # few distinct uncertainties, like the QM9 sets, and tied |E|
        uE = np.round(uE, 1)
    E = uE * rng.standard_normal(m)
    if ties:
        E[: m // 10] = np.round(E[: m // 10], 1)
    return E, uE


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(12, 300), n_bins=st.integers(1, 6),
       ties=st.booleans())
def test_point_estimates_match_definitions(seed, m, n_bins, ties):
    E, uE = _data(seed, m, ties)
    got = compute(E, uE, ALL, n_bins=n_bins)
    want = naive_statistics(E, uE, n_bins)
    np.testing.assert_allclose(got, [want[k] for k in ALL], rtol=1e-10, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(12, 200), n_bins=st.integers(1, 5),
       ties=st.booleans())
def test_resample_counts_equal_expanded_sample(seed, m, n_bins, ties):
    """Counts over the sorted positions == the expanded resample, sorted and re-binned."""
    E, uE = _data(seed, m, ties)
    prepared = PreparedData.from_arrays(E, uE, n_bins=n_bins)
    order = np.argsort(uE, kind="stable")
    rng = np.random.default_rng(seed + 1)
    positions = np.sort(rng.integers(0, m, m))  # copies adjacent, ties by original row order
    counts = np.bincount(positions, minlength=m).astype(np.int32)
    got = prepared.evaluate(codes_of(get_statistics(ALL)), counts)
    want = naive_statistics(E[order][positions], uE[order][positions], n_bins)
    np.testing.assert_allclose(got, [want[k] for k in ALL], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("ties", [False, True])
def test_jackknife_is_exact_leave_one_out(ties):
    E, uE = _data(7, 157, ties)
    n_bins = 6
    prepared = PreparedData.from_arrays(E, uE, n_bins=n_bins)
    codes = codes_of(get_statistics(ALL))
    jack = _jackknife_block(prepared, codes, 0, len(E))
    order = np.argsort(uE, kind="stable")
    for q in range(len(E)):  # q is a position in the order of uE
        keep = np.ones(len(E), dtype=bool)
        keep[q] = False
        want = naive_statistics(E[order][keep], uE[order][keep], n_bins)
        np.testing.assert_allclose(jack[q], [want[k] for k in ALL], rtol=1e-9, atol=1e-12)


def test_binning_variable_other_than_uE():
    E, uE = _data(3, 200, ties=True)
    X = np.random.default_rng(4).integers(0, 7, 200).astype(float)  # stratified feature
    got = compute(E, uE, ["ence", "uce", "zmse"], n_bins=5, by_values=X, by="X")
    want = naive_statistics(E, uE, 5, by=X)
    np.testing.assert_allclose(got, [want["ence"], want["uce"], want["zmse"]], rtol=1e-12)


def test_codes_are_unique_and_cover_registry():
    codes = [s.code for s in STATISTICS.values()]
    assert sorted(codes) == list(range(len(codes)))
    assert {s.key for s in STATISTICS.values() if s.needs_bins} == {"ence", "uce", "zmse"}
    assert all((s.code < K.N_MOMENT) == (s.kind == "moment") for s in STATISTICS.values())


def _bootstrap_block(prepared, codes, key, start, stop):
    out = np.empty((stop - start, len(codes)))
    K.bootstrap_replicates(key, start, stop, codes, prepared.n_bins, *prepared.kernel_arrays(),
                           prepared.tie_bin, K.make_work(prepared.size, prepared.n_bins), out)
    return out


@pytest.mark.parametrize("keys", [["zms", "rce", "zv", "nll"], ALL])
@pytest.mark.parametrize("ties", [False, True])
def test_bootstrap_block_is_the_drawn_resample(keys, ties):
    """Replicate r of a block == the statistics of the sequence that stream r draws, sorted
    stably (tied points in draw order, as R's ``order()`` on ``x[idx]``) and re-binned."""
    from xuqcal.core import random as _random

    E, uE = _data(5, 400, ties=ties)
    prepared = PreparedData.from_arrays(E, uE, n_bins=8)
    codes = codes_of(get_statistics(keys))
    key = _random.stream_key(4, "bootstrap")
    out = _bootstrap_block(prepared, codes, key, 10, 16)
    order = np.argsort(uE, kind="stable")  # the prepared (binning) order
    draws = np.empty(400, dtype=np.int32)
    for i, r in enumerate(range(10, 16)):
        _random.fill_draws(key, r, draws)
        want = naive_statistics(E[order][draws], uE[order][draws], 8)
        np.testing.assert_allclose(out[i], [want[k] for k in keys], rtol=1e-12)


@pytest.mark.filterwarnings("ignore:An input array is constant")  # a resample of one uE: cc NaN
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(4, 150), n_bins=st.integers(1, 7),
       levels=st.integers(1, 5), by_feature=st.booleans())
def test_bootstrap_binned_statistics_sort_ties_in_draw_order(seed, m, n_bins, levels,
                                                              by_feature):
    """Heavily tied binning variables (uE or a stratified feature, down to one value): every
    replicate equals the stable sort of its drawn sequence, whichever ties straddle a bin."""
    from xuqcal.core import random as _random

    n_bins = min(n_bins, m // 2)
    rng = np.random.default_rng(seed)
    uE = rng.integers(1, levels + 1, m) * 0.5
    uE[:2] = [0.5, 1.0]  # at least two values: cc is defined
    E = uE * rng.standard_normal(m)
    X = rng.integers(0, levels, m).astype(float) if by_feature else None
    prepared = PreparedData.from_arrays(E, uE, by_values=X, by="X" if by_feature else "uE",
                                        n_bins=n_bins)
    keys = ["ence", "uce", "zmse", "zms", "cc"]
    codes = codes_of(get_statistics(keys))
    key = _random.stream_key(seed, "bootstrap")
    out = _bootstrap_block(prepared, codes, key, 0, 5)
    order = np.argsort(uE if X is None else X, kind="stable")
    draws = np.empty(m, dtype=np.int32)
    for r in range(5):
        _random.fill_draws(key, r, draws)
        rows = order[draws]
        want = naive_statistics(E[rows], uE[rows], n_bins, by=None if X is None else X[rows])
        np.testing.assert_allclose(out[r], [want[k] for k in keys], rtol=1e-10, atol=1e-12,
                                   equal_nan=True)


def test_draws_and_counts_are_one_stream():
    from xuqcal.core import random as _random

    key = _random.stream_key(1, "bootstrap")
    draws = np.empty(300, dtype=np.int32)
    counts = np.empty(300, dtype=np.int32)
    _random.fill_draws(key, 7, draws)
    _random.fill_counts(key, 7, counts)
    np.testing.assert_array_equal(np.bincount(draws, minlength=300), counts)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(4, 90), levels_u=st.integers(2, 6),
       levels_e=st.integers(2, 6))
def test_cc_jackknife_matches_scipy_with_heavy_ties(seed, m, levels_u, levels_e):
    """The O(M log M) leave-one-out Spearman values equal scipy's on every reduced sample,
    with many ties in both variables (few distinct uE and |E| values)."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    uE = 0.5 + rng.integers(0, levels_u, m).astype(float)
    E = rng.integers(-levels_e, levels_e + 1, m).astype(float) * uE
    prepared = PreparedData.from_arrays(E, uE, needs_bins=False)
    got = _jackknife_block(prepared, codes_of(get_statistics(["cc"])), 0, m)[:, 0]
    order = np.argsort(uE, kind="stable")  # rows of the jackknife are in the order of uE
    for q in range(m):
        keep = np.ones(m, dtype=bool)
        keep[q] = False
        u, e = uE[order][keep], np.abs(E[order][keep])
        if np.ptp(u) == 0 or np.ptp(e) == 0:
            assert np.isnan(got[q])
            continue
        want = stats.spearmanr(e, u).statistic
        np.testing.assert_allclose(got[q], want, rtol=1e-10, atol=1e-13)


def test_lazy_jackknife_blocks_share_one_cc_task(monkeypatch):
    """Split into many blocks, the lazy jackknife equals the eager one, and the cc values, the
    binned statistics' prefix sums and the moment statistics' totals come each from a single
    task that every block reads."""
    import xuqcal
    from xuqcal.analysis import resampling

    E, uE = _data(11, 400, ties=True)
    prepared = PreparedData.from_arrays(E, uE, n_bins=5)
    codes = codes_of(get_statistics(["zms", "cc", "ence"]))
    monkeypatch.setattr(resampling, "JACKKNIFE_BATCH_BYTES", 1)  # blocks of the option's size
    with xuqcal.set_options(jackknife_chunk=37):
        lazy = resampling.jackknife(prepared, codes, 400)
    assert len(lazy.chunks[0]) == 11  # 400 values in tasks of 37
    graph = dict(lazy.__dask_graph__())
    for shared in ("_spearman_jackknife", "_binned_prefix_sums", "_moment_totals"):
        assert len([k for k in graph if shared in str(k)]) == 1, shared
    np.testing.assert_array_equal(lazy.compute(), _jackknife_block(prepared, codes, 0, 400))


def test_jackknife_values_compute_the_shared_parts_once(monkeypatch):
    """jackknife_values computes its blocks in batches, one Dask call each: the cc values, the
    prefix sums and the totals the blocks share are computed once for all the batches (each
    batch computed them again: 8 times at M = 2e6; the cc values now beside the first batch),
    and the values are the lazy jackknife's."""
    import xuqcal
    from xuqcal.analysis import resampling

    E, uE = _data(12, 3000, ties=True)
    prepared = PreparedData.from_arrays(E, uE, n_bins=5)
    codes = codes_of(get_statistics(["zms", "cc", "ence"]))
    calls = []
    for name in ("_spearman_jackknife", "_binned_prefix_sums", "_moment_totals"):
        original = getattr(resampling, name)

        def counted(p, _original=original, _name=name):
            calls.append(_name)
            return _original(p)

        monkeypatch.setattr(resampling, name, counted)
    # no room for larger blocks: 30 blocks of 101 points, a batch of one block per core
    monkeypatch.setattr(resampling, "JACKKNIFE_BATCH_BYTES", 1)
    with xuqcal.set_options(jackknife_chunk=101):
        assert len(resampling._jackknife_bounds(3000, 2)) == 30
        values = resampling.jackknife_values(prepared, codes, 3000)
        lazy = resampling.jackknife(prepared, codes, 3000).compute()
    assert sorted(calls) == sorted(["_spearman_jackknife", "_binned_prefix_sums",
                                    "_moment_totals"] * 2)  # once each, and once for lazy
    np.testing.assert_array_equal(values, lazy.T)


@pytest.mark.parametrize("keys", [["cc"], ["zms", "ence"], ["ence", "cc", "nll"]])
@pytest.mark.parametrize("room", [1, None])
def test_jackknife_values_with_and_without_cc(monkeypatch, keys, room):
    """cc's row (computed beside the first batch) and the blocks' rows land where the lazy
    jackknife puts them, for cc alone, without cc, and cc between other statistics, in one
    batch or in many (no room: a block per core a batch)."""
    import xuqcal
    from xuqcal.analysis import resampling

    E, uE = _data(13, 700, ties=True)
    prepared = PreparedData.from_arrays(E, uE, n_bins=4)
    codes = codes_of(get_statistics(keys))
    if room is not None:
        monkeypatch.setattr(resampling, "JACKKNIFE_BATCH_BYTES", room)
    with xuqcal.set_options(jackknife_chunk=50):
        values = resampling.jackknife_values(prepared, codes, 700)
    assert values.flags.c_contiguous and values.shape == (len(keys), 700)
    np.testing.assert_array_equal(values, _jackknife_block(prepared, codes, 0, 700).T)


def test_jackknife_blocks_are_few_and_bounded(monkeypatch):
    """The option's blocks are made larger where they would give a core more than
    JACKKNIFE_TASKS_PER_CORE tasks, but no larger than a core's share of the batch bytes; a
    larger option is kept."""
    import xuqcal
    from xuqcal.analysis import resampling

    monkeypatch.setattr(resampling, "cores", lambda: 2)
    size = resampling.jackknife_block_size
    assert size(10_000, 8) == 4096  # the option: 3 blocks
    assert size(2_000_000, 8) == 250_000  # 8 blocks, 4 per core
    room = resampling.JACKKNIFE_BATCH_BYTES // (2 * 8 * 8)
    assert size(10**9, 8) == room  # a core's share of the batch's bytes
    with xuqcal.set_options(jackknife_chunk=300_000):
        assert size(2_000_000, 8) == 300_000
    monkeypatch.setattr(resampling, "cores", lambda: 16)
    assert size(2_000_000, 8) == 31_250  # 64 blocks
    assert len(resampling._jackknife_bounds(2_000_000, 8)) == 64


def test_jackknife_of_a_dominant_point_does_not_cancel():
    """Leaving out a point that holds nearly all of Σ uE² (uE = 1 beside 1e-89): the closed
    form Σ - x_i gave 0 (an RMV of 0, an undefined RCE and a NaN BCa interval without a
    warning), and the bins' prefix sums cancelled the same way (ZMSE); the kernels sum the
    other points there, as the statistic of the reduced data."""
    from xuqcal.analysis import resampling
    from xuqcal.core.statistics import PreparedData, codes_of, get_statistics

    E, uE = np.array([0.5, 0.0, 0.25]), np.array([1.0, 5.67761956e-89, 1e-90])
    keys = ["rce", "rmv", "mv", "zms", "mse", "ence", "uce", "zmse"]  # moment and binned
    codes = codes_of(get_statistics(keys))
    prepared = PreparedData.from_arrays(E, uE, n_bins=1)
    jack = np.asarray(resampling.jackknife(prepared, codes, 3).compute())
    for position, row in enumerate(np.argsort(uE, kind="stable")):  # points sorted by uE
        keep = np.arange(3) != row
        direct = PreparedData.from_arrays(E[keep], uE[keep], n_bins=1).evaluate(codes)
        np.testing.assert_allclose(jack[position], direct, rtol=1e-12)


# ------------------------------------------------------------------ issue 14: large-M kernels


def _stable_radix_argsort(values):
    """The simulated sets' radix argsorts on ``values`` (non-negative doubles), as the kernels
    call them: ``(permutation, tie flags)``; the keys are left unchanged. Both sorts run, the
    large sets' :func:`~xuqcal.core.kernels._radix_argsort` and the small sets'
    :func:`~xuqcal.core.kernels._packed_argsort` (24-bit keys: more runs to fix up), and must
    give the same permutation and flags."""
    m = values.shape[0]
    keys = np.ascontiguousarray(values, dtype=np.float64).copy().view(np.uint64)
    before = keys.copy()
    histogram = np.empty((K._RADIX_DIGITS, K._RADIX_SIZE), np.uint64)
    tie = np.ones(m, np.bool_)
    order = K._radix_argsort(
        keys, np.empty(m, np.uint32), np.empty(m, np.uint32), np.empty(m, np.int32),
        np.empty(m, np.int32), histogram, tie)
    np.testing.assert_array_equal(keys, before)
    packed_tie = np.ones(m, np.bool_)
    packed_order = K._packed_argsort(keys, np.empty(m, np.uint64), np.empty(m, np.uint64),
                                     np.empty((K._RADIX_DIGITS, 1 << K._WIDE_BITS), np.uint32),
                                     np.empty(m, np.int32), packed_tie)
    np.testing.assert_array_equal(keys, before)
    np.testing.assert_array_equal(packed_order, order)
    np.testing.assert_array_equal(packed_tie, tie)
    return np.array(order), tie


def _check_ties(values, order, tie):
    """``tie[k]``: the k-th sorted value equals the one before (bit patterns)."""
    sorted_bits = values[order].view(np.uint64)
    want = np.zeros(values.shape[0], np.bool_)
    want[1:] = sorted_bits[1:] == sorted_bits[:-1]
    np.testing.assert_array_equal(tie, want)


_SPECIAL = [0.0, 5e-324, 1e-320, 2.0**-1022, 1.0, 1.0 + 2.0**-52, 2.0, 3.5, 1e300, np.inf]


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.one_of(st.sampled_from(_SPECIAL),
                                 st.floats(0.0, 1e308, allow_subnormal=True)), max_size=600))
def test_radix_argsort_is_the_stable_argsort(values):
    """The LSD radix argsort of |E~| and uE² gives NumPy's stable argsort: ties (repeated
    values) in row order, zeros, subnormals, infinities, every size from 0 on — hence the
    same ranks, tie flags and cc as any exact stable sort."""
    values = np.abs(np.array(values, dtype=np.float64))
    order, tie = _stable_radix_argsort(values)
    np.testing.assert_array_equal(order, np.argsort(values, kind="stable"))
    _check_ties(values, order, tie)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(0, 5000), levels=st.integers(1, 50),
       scale=st.sampled_from([1e-310, 1e-3, 1.0, 1e200]), spread=st.booleans())
def test_radix_argsort_with_heavy_ties(seed, m, levels, scale, spread):
    """Many rows share each value (few levels), one level or a wide exponent range: digits
    every key shares are skipped, and the passes that remain keep tied rows in row order."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, levels, m) * scale
    if spread:
        values = values * 2.0 ** rng.integers(-60, 60, m)
    order, tie = _stable_radix_argsort(values)
    np.testing.assert_array_equal(order, np.argsort(values, kind="stable"))
    _check_ties(values, order, tie)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), run=st.integers(1, 200), n_runs=st.integers(1, 20),
       low_bits=st.integers(1, 40), wide=st.booleans())
def test_radix_argsort_fixes_up_runs_of_equal_high_keys(seed, run, n_runs, low_bits, wide):
    """Keys that share their 32 highest bits of the span (values equal to about 22
    significant bits, but not equal) are ordered by the fix-up pass on the full keys: short
    runs by insertion, runs longer than ``_INSERTION_RUN`` by a stable merge sort, repeated
    values in row order either way."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(1.0, 2.0, n_runs)
    if wide:  # a span of many binades: 32 bits of it leave most of the mantissa out
        base = base * 2.0 ** rng.integers(-300, 300, n_runs)
    bits = base.view(np.uint64)[rng.integers(0, n_runs, n_runs * run)]
    # vary the lowest bits only, with repeats
    bits = bits + rng.integers(0, 2 ** low_bits, bits.shape[0], dtype=np.uint64) // 4 * 4
    values = bits.view(np.float64)
    order, tie = _stable_radix_argsort(values)
    np.testing.assert_array_equal(order, np.argsort(values, kind="stable"))
    _check_ties(values, order, tie)


@pytest.mark.parametrize("m", [K._WIDE_DIGITS_FROM - 1, K._WIDE_DIGITS_FROM, 20_000,
                               K._SHORT_KEYS_MAX, K._SHORT_KEYS_MAX + 1])
@pytest.mark.parametrize("kind", ["spread", "ties", "narrow", "shared_low_digit"])
def test_packed_argsort_with_either_digit_width(m, kind):
    """Below ``_WIDE_DIGITS_FROM`` points the packed sort passes 8-bit digits, from there
    12-bit digits, and above ``_SHORT_KEYS_MAX`` points 8-bit digits of 32-bit keys: each
    gives the stable argsort and its tie flags (as the radix argsort), with spans of every width
    (24 bits and more; a few bits: one pass; keys that share their lowest digit: a pass
    skipped)."""
    rng = np.random.default_rng(m)
    if kind == "spread":  # |E~| of QM9-like uncertainties
        values = np.abs(np.round(np.exp(rng.normal(-3, 0.5, m)), 3) * rng.standard_normal(m))
    elif kind == "ties":
        values = rng.integers(0, 40, m) * 0.01
    elif kind == "narrow":  # a span of about 10 bits of the patterns
        values = (np.float64(1.0).view(np.uint64) + rng.integers(0, 1000, m, dtype=np.uint64)
                  ).view(np.float64)
    else:  # a span of about 22 bits whose lowest 12 are 0 in every key: a pass skipped
        values = (np.float64(1.0).view(np.uint64)
                  + rng.integers(0, 1000, m, dtype=np.uint64) * np.uint64(1 << 12)
                  ).view(np.float64)
    order, tie = _stable_radix_argsort(values)
    np.testing.assert_array_equal(order, np.argsort(values, kind="stable"))
    _check_ties(values, order, tie)


@pytest.mark.parametrize("values", [[], [0.0], [2.0], [1.0, 1.0], [2.0, 1.0], [0.0, 5e-324],
                                    [5e-324, 0.0]])
def test_radix_argsort_of_tiny_inputs(values):
    values = np.array(values, dtype=np.float64)
    order, tie = _stable_radix_argsort(values)
    np.testing.assert_array_equal(order, np.argsort(values, kind="stable"))
    _check_ties(values, order, tie)


def _sequential_sum(values):
    total = 0.0
    for x in values.tolist():  # left to right, one rounding per addition (as the kernel)
        total += x
    return total


#: Points from which the walk of the six moment columns (rows of 64 bytes) is batched.
_BATCHED_FROM = K._PLAIN_WALK_BYTES // 64 + 1


def _check_walk_sums_in_draw_order(seed, m, start, size, keys):
    from xuqcal.core import random as _random

    E, uE = _data(seed, m, ties=bool(seed % 2))
    prepared = PreparedData.from_arrays(E, uE, needs_bins=False)
    codes = codes_of(get_statistics(keys))
    key = _random.stream_key(seed, "bootstrap")
    out = _bootstrap_block(prepared, codes, key, start, start + size)
    draws = np.empty(m, dtype=np.int32)
    packed = prepared.packed
    for i, r in enumerate(range(start, start + size)):
        _random.fill_draws(key, r, draws)
        sums = [_sequential_sum(packed[draws, c]) for c in range(6)]
        want = [K.finalize_moment(code, float(m), *sums, prepared.z_shift) for code in codes]
        np.testing.assert_array_equal(out[i], want)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 300), start=st.integers(0, 20),
       size=st.integers(1, 4), keys=st.sampled_from([["zms"], ["rce"], ["zms", "rce", "zv"],
                                                    ["mse", "mv", "zm", "zv", "nll"]]))
def test_bootstrap_walk_sums_in_draw_order(seed, m, start, size, keys):
    """Each moment sum of a replicate is the left-to-right sum of the values that its stream
    draws, in draw order, bit for bit (the plain walk of data that fit in the caches)."""
    _check_walk_sums_in_draw_order(seed, m, start, size, keys)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), extra=st.integers(0, 2 * K._BATCH), start=st.integers(0, 9))
def test_batched_bootstrap_walk_sums_in_draw_order(seed, extra, start):
    """Beyond the caches the walk draws a batch of indices (prefetching their rows), then sums
    them: the same sums bit for bit, for every remainder of M by the batch size."""
    _check_walk_sums_in_draw_order(seed, _BATCHED_FROM + extra, start, 2,
                                   ["mse", "mv", "zm", "zv", "nll"])


def _counted_sum(counts, values):
    """The counted sum of :func:`kernels._counted_sums`, from NumPy's sequential cumulative
    sums: four interleaved partial sums in point order, then the last M mod 4 points."""
    products = counts.astype(np.float64) * values
    head = 4 * (values.size // 4)
    partial = [np.add.accumulate(products[k:head:4])[-1] for k in range(4)]
    total = (partial[0] + partial[1]) + (partial[2] + partial[3])
    for x in products[head:].tolist():
        total += x
    return total


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000), extra=st.integers(0, 7), start=st.integers(0, 9))
def test_counted_bootstrap_sums_from_the_threshold(seed, extra, start):
    """From ``_COUNTED_SUMS_FROM`` points a replicate's moment sums are the counted sums of
    its multiplicities (the draws of its stream, :func:`fill_counts`) in point order, bit for
    bit, for every remainder of M by 4; one point fewer, they are the sums in draw order."""
    from xuqcal.core import random as _random

    m = K._COUNTED_SUMS_FROM + extra
    E, uE = _data(seed, m, ties=bool(seed % 2))
    prepared = PreparedData.from_arrays(E, uE, needs_bins=False)
    keys = ["mse", "mv", "zm", "zv", "nll"]
    codes = codes_of(get_statistics(keys))
    key = _random.stream_key(seed, "bootstrap")
    out = _bootstrap_block(prepared, codes, key, start, start + 2)
    # one column alone (zms) takes the kernel's single-column loop
    zms_code = codes_of(get_statistics(["zms"]))
    zms = _bootstrap_block(prepared, zms_code, key, start, start + 2)
    counts = np.empty(m, dtype=np.int64)
    for i, r in enumerate(range(start, start + 2)):
        _random.fill_counts(key, r, counts)
        sums = [_counted_sum(counts, prepared.packed[:, c]) for c in range(6)]
        want = [K.finalize_moment(code, float(m), *sums, prepared.z_shift) for code in codes]
        np.testing.assert_array_equal(out[i], want)
        assert zms[i, 0] == K.finalize_moment(zms_code[0], float(m), *sums, prepared.z_shift)
    # the mean of per-point values (proper and interval scores) follows the same rule
    z2 = np.ascontiguousarray(prepared.packed[:, 2:3])
    means = np.empty((2, 1))
    K.mean_block(key, start, start + 2, z2, means)
    np.testing.assert_array_equal(means[:, 0], zms[:, 0])
    if extra == 0:  # below the threshold: draw order
        _check_walk_sums_in_draw_order(seed, m - 1, start, 1, keys)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000), extra=st.integers(0, 7), start=st.integers(0, 20),
       n_replicates=st.integers(1, 2 * K._COUNTED_GROUP + 3),
       keys=st.sampled_from([["zms"], ["zm", "zv"], ["mse", "mv", "zm", "zv", "nll"],
                             ["rce", "nll", "zisd"]]))
def test_grouped_counted_replicates_equal_one_by_one(seed, extra, start, n_replicates, keys):
    """Moment statistics alone, from ``_COUNTED_SUMS_FROM`` points: the replicates are counted
    in uint8 and summed group by group (:func:`kernels.moment_replicates_block`, which
    :func:`kernels.bootstrap_replicates` chooses), bit for bit the counted sums of each
    replicate's int32 multiplicities and the replicates of :func:`kernels.bootstrap_block`, for
    ranges that start and stop inside a group and for rows of 1, 2, 4 and 8 doubles."""
    from xuqcal.core import random as _random

    m = K._COUNTED_SUMS_FROM + extra
    E, uE = _data(seed, m, ties=bool(seed % 2))
    prepared = PreparedData.from_arrays(E, uE, needs_bins=False)
    codes = codes_of(get_statistics(keys))
    key = _random.stream_key(seed, "bootstrap")
    assert K.uses_moment_replicates(codes, m)
    out = _bootstrap_block(prepared, codes, key, start, start + n_replicates)
    walked = np.empty_like(out)
    K.bootstrap_block(key, start, start + n_replicates, codes, prepared.n_bins,
                      *prepared.kernel_arrays(), prepared.tie_bin,
                      K.make_work(prepared.size, prepared.n_bins), walked)
    np.testing.assert_array_equal(out, walked)
    columns = K._moment_columns(codes)
    flat, stride = K._compact_rows(prepared.packed, columns)
    sums = np.zeros(6)
    for i, r in enumerate(range(start, start + n_replicates)):
        # the fallback of a wrapped count gives the same sums
        K._int32_counted_sums(key, r, flat, stride, columns.size, np.zeros((4, 8)), sums)
        column_sums = np.zeros(6)
        column_sums[columns] = sums[:columns.size]
        want = [K.finalize_moment(code, float(m), *column_sums, prepared.z_shift)
                for code in codes]
        np.testing.assert_array_equal(out[i], want)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), width=st.sampled_from([2, 4, 8]),
       count_type=st.sampled_from([np.uint8, np.int32]), lo=st.integers(0, 3),
       n_steps=st.integers(0, 40))
def test_vector_tile_sums_are_the_scalar_chains(seed, width, count_type, lo, n_steps):
    """The vector tile step of the counted sums (an LLVM intrinsic, :func:`kernels.
    _make_tile_sums`) adds to each row ``k`` of ``partial`` the products of the points
    ``lo + k, lo + k + 4, ...`` below ``hi`` one after the other, in every column, bit for
    bit the scalar chains (from NumPy's sequential cumulative sums), starting from the values
    already in ``partial``; columns beyond ``width`` are left alone; no step is an empty
    range."""
    rng = np.random.default_rng(seed)
    hi = lo + 4 * n_steps
    m = hi + 3
    counts = rng.integers(0, 9, m).astype(count_type)
    flat = rng.normal(size=m * width) * 10.0 ** rng.integers(-3, 4, m * width)
    start = rng.normal(size=(4, 8))
    partial = start.copy()
    tile = {2: K._tile_sums_2, 4: K._tile_sums_4, 8: K._tile_sums_8}[width]

    @numba.njit
    def run(counts, flat, lo, hi, partial):
        tile(counts, flat, lo, hi, partial)

    run(counts, flat, lo, hi, partial)
    rows = flat.reshape(m, width)
    for k in range(4):
        for c in range(8):
            if c >= width or hi <= lo:
                assert partial[k, c] == start[k, c]
                continue
            products = counts[lo + k:hi:4].astype(np.float64) * rows[lo + k:hi:4, c]
            want = np.add.accumulate(np.concatenate([[start[k, c]], products]))[-1]
            assert partial[k, c] == want


@pytest.mark.parametrize("k", [2, 3, 4, 8])
def test_mean_block_counted_sums_of_several_columns(k):
    """From ``_COUNTED_SUMS_FROM`` points the means of ``k`` per-point columns are their
    counted sums over M (rows of 2, 4 and 8 doubles as vectors, 3 by the scalar loop), bit for
    bit."""
    from xuqcal.core import random as _random

    m = K._COUNTED_SUMS_FROM + 3
    values = np.random.default_rng(k).normal(size=(m, k))
    key = _random.stream_key(k, "bootstrap")
    means = np.empty((2, k))
    K.mean_block(key, 5, 7, values, means)
    counts = np.empty(m, dtype=np.int64)
    for i, r in enumerate(range(5, 7)):
        _random.fill_counts(key, r, counts)
        want = [_counted_sum(counts, values[:, c]) / m for c in range(k)]
        np.testing.assert_array_equal(means[i], want)


@numba.njit
def _accepted_and_scalar_draws(key, bound, n_batches, soon):
    """The draws of ``n_batches`` calls of :func:`kernels.accepted_below`, one after the
    other, with the state after them, and as many draws of :func:`kernels.next_below` one by
    one from the same stream, with the state after the raw numbers the batches used."""
    raw = np.empty(K._RAW_BATCH, np.uint64)
    out = np.empty(K._RAW_BATCH, np.int64)
    batched = np.empty(n_batches * K._RAW_BATCH, np.int64)
    threshold = K.lemire_threshold(bound)
    state = K.stream_start(key, np.uint64(3))
    done = 0
    for _ in range(n_batches):
        n, state = K.accepted_below(state, bound, threshold, raw, out, soon)
        batched[done:done + n] = out[:n]
        done += n
    scalar = np.empty(done, np.int64)
    other = K.stream_start(key, np.uint64(3))
    for i in range(done):
        scalar[i], other = K.next_below(other, bound)
    return batched[:done], scalar, state, other


@pytest.mark.parametrize("bound", [1, 3, 1000, 2**31 + 1, 2**32 - 1])
def test_batched_bounded_draws_are_next_below_s(bound):
    """``accepted_below`` gives the draws of ``next_below``, in order, batch after batch, and
    leaves the stream's state after its raw numbers (with a bound of 2^31 + 1 about half the raw
    numbers are rejected: batches of about 32 draws); ``next_below``'s state after as many
    draws is at or before it (only rejected raw numbers between)."""
    n_batches = 9
    soon = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(bound,),
                                           strides=(0,))
    batched, scalar, state, other = _accepted_and_scalar_draws(np.uint64(17), bound, n_batches,
                                                               soon)
    np.testing.assert_array_equal(batched, scalar)
    assert batched.min() >= 0 and batched.max() < bound
    inverse = pow(int(K._GAMMA), -1, 2**64)
    start = int(K.stream_start(np.uint64(17), np.uint64(3)))
    raw_used = (int(state) - start) * inverse % 2**64
    scalar_used = (int(other) - start) * inverse % 2**64
    assert raw_used == n_batches * K._RAW_BATCH
    assert batched.size <= scalar_used <= raw_used
    if bound == 2**31 + 1:
        assert 0.4 < batched.size / raw_used < 0.6
    else:
        assert batched.size >= raw_used - 2


@numba.njit
def _stream_draws(key, replicate, n_draws, bound):
    """``n_draws`` bounded integers of the stream ``(key, replicate)``, in the order drawn."""
    state = K.stream_start(key, replicate)
    out = np.empty(n_draws, np.int64)
    for i in range(n_draws):
        out[i], state = K.next_below(state, bound)
    return out


def test_uint8_counts_report_a_wrap():
    """The uint8 multiplicities of the grouped walk are the draws counted modulo 256, and a
    count past 255 is reported (the replicate is then counted again in int32)."""
    batch = np.empty(K._BATCH, np.int64)
    key = np.uint64(11)
    for size, n_draws in [(2, 1000), (3, 255), (1000, 1000)]:
        counts = np.empty(size, np.uint8)
        wrapped = K._count_draws_u8(key, 4, n_draws, counts, batch)
        full = np.bincount(_stream_draws(key, 4, n_draws, size), minlength=size)
        assert full.sum() == n_draws
        np.testing.assert_array_equal(counts, full % 256)
        assert wrapped == bool((full >= 256).any())
    # the production case (as many draws as points) against fill_counts
    exact = np.empty(1000, np.int32)
    K.fill_counts(key, 4, exact)
    np.testing.assert_array_equal(counts, exact)


def _bin_sums_in_memory(counts, e2, u2, z2, n_bins):
    """The binned walk before issue 14: every copy added to the bin arrays in memory."""
    b_n, b_e2, b_u2, b_z2 = (np.zeros(n_bins) for _ in range(4))
    n_total = int(counts.sum())
    b, pos = 0, 0
    next_start = n_total // n_bins
    for p, c in enumerate(counts.tolist()):
        while c > 0:
            while pos >= next_start:
                b += 1
                next_start = (b + 1) * n_total // n_bins
            take = min(c, next_start - pos)
            b_n[b] += take
            b_e2[b] += take * e2[p]
            b_u2[b] += take * u2[p]
            b_z2[b] += take * z2[p]
            pos += take
            c -= take
    return b_n, b_e2, b_u2, b_z2


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 200), n_bins=st.integers(1, 12),
       zeros=st.floats(0.0, 0.9), infinite=st.booleans())
def test_bin_sums_in_registers_equal_the_walk_in_memory(seed, m, n_bins, zeros, infinite):
    """_bin_sums keeps the current bin's sums in registers and adds +0.0 for points of count
    0 without a branch: bit for bit the sums of the walk in memory, with many zero counts,
    runs across several bins, and infinite values at points of count 0 (no 0 * inf NaN)."""
    rng = np.random.default_rng(seed)
    n_bins = min(n_bins, m)
    counts = rng.multinomial(m, np.ones(m) / m).astype(np.int32)
    counts[rng.random(m) < zeros] = 0
    if counts.sum() == 0:
        counts[0] = 1
    e2, u2, z2 = rng.random(m) * 3.0, rng.random(m), rng.random(m) * 2.0
    if infinite:
        e2[counts == 0] = np.inf
        z2[counts == 0] = np.inf
    got = tuple(np.zeros(n_bins) for _ in range(4))
    K._bin_sums(counts, e2, u2, z2, n_bins, *got)
    for g, w in zip(got, _bin_sums_in_memory(counts, e2, u2, z2, n_bins), strict=True):
        np.testing.assert_array_equal(g, w)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 400), levels=st.integers(1, 20))
def test_unit_ranks_and_branch_free_spearman_are_bit_identical(seed, m, levels):
    """Average ranks of unit weights without reading counts equal _average_ranks with ones;
    the Spearman sums without a branch on zero counts equal those that skip them."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, levels, m).astype(float)
    order = np.argsort(values, kind="stable")
    tie = np.zeros(m, np.bool_)
    tie[1:] = values[order][1:] == values[order][:-1]
    unit, ones = np.empty(m), np.empty(m)
    K._average_unit_ranks(order, tie, unit)
    K._average_ranks(order, tie, np.ones(m, np.int32), ones)
    np.testing.assert_array_equal(unit, ones)

    other = rng.integers(0, levels, m).astype(float)
    order_e = np.argsort(other, kind="stable")
    tie_e = np.zeros(m, np.bool_)
    tie_e[1:] = other[order_e][1:] == other[order_e][:-1]
    counts = rng.multinomial(m, np.ones(m) / m).astype(np.int32)
    rank_u, rank_e = np.empty(m), np.empty(m)
    got = K._spearman(counts, order, tie, order_e, tie_e, rank_u, rank_e)  # the sorted walk
    K._average_ranks(order_e, tie_e, counts, rank_e)
    centre = 0.5 * (float(counts.sum()) + 1.0)
    sab = saa = sbb = 0.0
    for c, ru, re in zip(counts.tolist(), rank_u.tolist(), rank_e.tolist(), strict=True):
        if c == 0:
            continue
        a, b = ru - centre, re - centre
        sab += c * a * b
        saa += c * a * a
        sbb += c * b * b
    denominator = np.sqrt(saa * sbb)
    want = sab / denominator if denominator > 0.0 else np.nan
    np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(0, 400), levels=st.integers(1, 800),
       zeros=st.booleans())
def test_weighted_average_ranks_either_walk(seed, m, levels, zeros):
    """The weighted average ranks (by prefix weights with few ties, group by group with
    more than a quarter of the positions tied) are the average ranks of the expanded sample
    (each point repeated by its count) bit for bit; points of zero weight are not checked.
    The same for the unit ranks of the simulated sets."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(seed)
    values = rng.integers(0, levels, m).astype(np.float64)
    order = np.argsort(values, kind="stable")
    tie = np.zeros(m, np.bool_)
    tie[1:] = values[order][1:] == values[order][:-1]
    counts = (rng.integers(0, 3, m) if zeros else rng.integers(1, 4, m)).astype(np.int32)
    rank = np.full(m, np.nan)
    K._average_ranks(order, tie, counts, rank)
    expanded = rankdata(np.repeat(values, counts))
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    weighted = counts > 0
    np.testing.assert_array_equal(rank[weighted], expanded[first[weighted]])
    unit = np.full(m, np.nan)  # every count 1
    K._average_unit_ranks(order, tie, unit)
    np.testing.assert_array_equal(unit, rankdata(values))


def _both_unit_spearman_walks(u, e):
    """cc of the simulated sets (unit weights; ``u`` sorted) by the sorted walk and by the
    point-order sums: ``(sorted, point order)``."""
    m = u.shape[0]
    tie_u = np.zeros(m, np.bool_)
    tie_u[1:] = u[1:] == u[:-1]
    order_e = np.argsort(e, kind="stable").astype(np.int32)
    tie_e = np.zeros(m, np.bool_)
    tie_e[1:] = e[order_e][1:] == e[order_e][:-1]
    centred = np.empty(m)
    saa = K._centred_unit_ranks(np.arange(m), tie_u, centred)
    return (K._spearman_unit_sorted(centred, saa, order_e, tie_e),
            K._spearman_unit(centred, saa, order_e, tie_e, np.empty(m)))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 3000), levels=st.integers(1, 100))
def test_spearman_in_sorted_order_is_bit_identical(seed, m, levels):
    """The simulated sets' cc walked in the sorted order of |E~| (gathering the uE ranks) is
    the point-order correlation bit for bit: below ``_EXACT_RANK_SUMS`` points no rank sum
    rounds (ties in both variables, constant variables: NaN both ways)."""
    rng = np.random.default_rng(seed)
    u = np.sort(rng.integers(0, levels, m)).astype(np.float64)
    e = rng.integers(0, levels, m).astype(np.float64)
    got, want = _both_unit_spearman_walks(u, e)
    assert got == want or (np.isnan(got) and np.isnan(want))


@pytest.mark.parametrize("ties", [False, True])
def test_spearman_in_sorted_order_at_the_exactness_bound(ties):
    """At ``_EXACT_RANK_SUMS`` points, the largest size that takes the sorted walk."""
    m = K._EXACT_RANK_SUMS
    rng = np.random.default_rng(3)
    u = np.sort(rng.integers(0, 50, m) if ties else rng.permutation(m)).astype(np.float64)
    e = (u + rng.normal(0, 2 * m if not ties else 20, m)).round()
    got, want = _both_unit_spearman_walks(u, e)
    assert np.float64(got).view(np.uint64) == np.float64(want).view(np.uint64)


@pytest.mark.parametrize("ties", [False, True])
def test_weighted_spearman_in_sorted_order_at_the_exactness_bound(ties):
    """The bootstrap's cc (weighted by counts) walked in the sorted order of |E| is the
    point-order correlation of the scattered ranks bit for bit at ``_EXACT_RANK_SUMS`` drawn
    points, the largest number that takes the sorted walk; one more takes the scattered walk."""
    m = K._EXACT_RANK_SUMS
    rng = np.random.default_rng(4)
    u = np.sort(rng.integers(0, 50, m) if ties else rng.permutation(m)).astype(np.float64)
    e = (u + rng.normal(0, 2 * m if not ties else 20, m)).round()
    order_u = np.arange(m)
    tie_u = np.zeros(m, np.bool_)
    tie_u[1:] = u[1:] == u[:-1]
    order_e = np.argsort(e, kind="stable")
    tie_e = np.zeros(m, np.bool_)
    tie_e[1:] = e[order_e][1:] == e[order_e][:-1]
    counts = rng.multinomial(m, np.ones(m) / m).astype(np.int32)
    rank_u, rank_e = np.empty(m), np.empty(m)
    got = K._spearman(counts, order_u, tie_u, order_e, tie_e, rank_u, rank_e)
    want = K._spearman_scattered(counts, float(m), order_e, tie_e, rank_u, rank_e)
    assert np.float64(got).view(np.uint64) == np.float64(want).view(np.uint64)
    counts[0] += 1  # m + 1 drawn points: the scattered walk itself
    beyond = K._spearman(counts, order_u, tie_u, order_e, tie_e, rank_u, rank_e)
    direct = K._spearman_scattered(counts, float(m + 1), order_e, tie_e, rank_u, rank_e)
    assert np.float64(beyond).view(np.uint64) == np.float64(direct).view(np.uint64)


@pytest.mark.parametrize("m, n_bins", [(7, 20), (1000, 20), (20_011, 3)])
@pytest.mark.parametrize("generator, parameter", [(K.NORMAL, 0.0), (K.STUDENT, 6.0),
                                                  (K.STUDENT, 4.7), (K.UNIFORM, 0.0),
                                                  (K.LAPLACE, 0.0), (K.NORMP, 1.5)])
def test_fused_synthetic_pass_is_the_evaluation_from_arrays(m, n_bins, generator, parameter):
    """:func:`kernels.simulate_block` draws each synthetic set and makes its moment sums and
    the bin sums of the first number of bins in one pass (:func:`kernels._fused_synthetic_set`;
    normp's variates are read from an array); the other numbers of bins are binned from E~² and
    eps² written to arrays (:func:`kernels._bin_sums`, as the NIG sets are evaluated). The
    statistics of the same number of bins are the same bit for bit both ways, ties of uE,
    empty bins (M < bins) and cc included."""
    rng = np.random.default_rng(m)
    uE = np.sort(np.round(np.exp(rng.normal(size=m)), 2) + 0.01)
    u2 = uE * uE
    tie = np.zeros(m, np.bool_)
    tie[1:] = uE[1:] == uE[:-1]
    codes = codes_of(get_statistics(["zms", "rce", "nll", "zm", "zv", "cc", "ence", "zmse",
                                     "uce"]))
    outputs = []
    for n_bins_list in ([n_bins], [n_bins, n_bins]):
        out = np.empty((3, len(n_bins_list), codes.size))
        K.simulate_block(np.uint64(5), generator, parameter, 2, 5, codes,
                         np.array(n_bins_list, np.int64), uE, u2, np.log(u2), np.arange(m), tie,
                         K.make_work(m, n_bins), out)
        outputs.append(out)
    np.testing.assert_array_equal(outputs[0][:, 0], outputs[1][:, 0])
    np.testing.assert_array_equal(outputs[1][:, 0], outputs[1][:, 1])
