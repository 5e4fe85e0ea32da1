"""A replicate of the GPU simulation split between threads (:func:`xuqcal.core.gpu.split_plan`,
the kernel ``xuqcal.core.gpu._simulation_sums``), on Numba's CUDA simulator.

Each thread parses the stream from the start of its own segment of raw draws and meets the
parse of the next segment; the variates must be the CPU's, in the CPU's order, whatever the
split: a wrong meeting point would shift every later variate to another point (an error of
order 1), a wrong count would leave points out or count them twice. The configurations split
a few hundred points between 4 to 16 threads (tiny segments, as the simulator runs every thread
as Python): several replicates per block, bins smaller and larger than a segment, bins without
points, sets of 2 to 5 points, and the chi-square and gamma Student-t, whose parses often meet
too late in such segments, so that the replicate falls back to one thread. As in
``tests/test_gpu_simulation.py``, the checks run in a subprocess with the simulator on.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from gpu_helpers import SIMULATOR_PREAMBLE, json_result, start

from xuqcal.core import gpu
from xuqcal.core import kernels as K
from xuqcal.core.generators import get_generator
from xuqcal.core.random import stream_key

TOLERANCE = 1e-12
#: (t32, whose parses meet after thousands of draws, would run its meeting searches through
#: the simulator's Python for most of this module's time: its plan is checked below.)
GENERATORS = ("normal", "t4", "t6", "t8", "t3.5", "uniform", "laplace")
#: No libm function makes these variates: the device code gives the CPU's bits.
EXACT = ("normal", "t4", "t6", "t8", "uniform")
#: Parses that meet within a few draws (the ziggurats', stream version 4 for t4 and t6): split
#: without a fallback even in tiny segments.
QUICK = ("normal", "t4", "t6", "uniform", "laplace")
#: (m, n_bins, threads, segment): one block per replicate (threads = group) or several
#: (threads > group), bins of 29 points against segments of about 36 draws, 12 bins of 10
#: points (some without points), no bins, and tiny sets.
CONFIGURATIONS = ((203, 7, 8, 24), (203, 12, 16, 60), (10, 12, 4, 2), (57, 0, 8, 6),
                  (5, 1, 4, 2))

SPLIT = SIMULATOR_PREAMBLE + """
from xuqcal.core import gpu
from xuqcal.core import kernels as K
from xuqcal.core.generators import get_generator
from xuqcal.core.random import stream_key

rng = np.random.default_rng(11)
rows = []
for name in %(generators)r:
    g = get_generator(name)
    key = stream_key(5, f"reference:{name}")
    for m, n_bins, threads, segment in %(configurations)r:
        u = np.sqrt(2.0 / rng.gamma(2.0, size=m))
        info = {}
        sums, bins, eps = gpu.simulation_sums_gpu(key, 2, 4, g.code, g.parameter, u, n_bins,
                                                  n_record=m, threads=threads,
                                                  segment=segment, info=info)
        cpu = np.empty((2, m))
        for i in range(2):
            K.fill_variates(key, 2 + i, g.code, g.parameter, cpu[i])
        same = (eps == cpu)
        with np.errstate(all="ignore"):
            variates = float(np.max(np.where(same, 0.0, np.abs(eps - cpu) / np.abs(cpu))))
        e2, z2 = (u * cpu) ** 2, cpu ** 2
        expected = np.stack([e2.sum(axis=1), z2.sum(axis=1), cpu.sum(axis=1)], axis=1)
        # a reordered sum is exact to rounding relative to the sum of the magnitudes
        scale = np.stack([e2.sum(axis=1), z2.sum(axis=1), np.abs(cpu).sum(axis=1)], axis=1)
        edges = gpu._bin_ends(m, n_bins)[:n_bins]
        lows = np.concatenate([[0], edges[:-1]]).astype(int)
        expected_bins = np.array([[[x[r, lo:hi].sum() for x in (e2, z2)]
                                   for lo, hi in zip(lows, edges)] for r in range(2)])
        expected_bins = expected_bins.reshape(2, n_bins, 2)
        with np.errstate(all="ignore"):
            bin_error = np.where(expected_bins == bins, 0.0,
                                 np.abs(bins - expected_bins) / np.abs(expected_bins))
        # the CPU kernel's additions: one after the other from 0.0, in point order
        in_order = np.stack([np.add.accumulate(x, axis=1)[:, -1] for x in (e2, z2, cpu)],
                            axis=1)
        in_order_bins = np.zeros((2, n_bins, 2))
        for b, (lo, hi) in enumerate(zip(lows, edges)):
            if hi > lo:
                for c, x in enumerate((e2, z2)):
                    in_order_bins[:, b, c] = np.add.accumulate(x[:, lo:hi], axis=1)[:, -1]
        row = {"generator": name, "m": m, "n_bins": n_bins, "threads": threads,
               "segment": segment, "group": info["group"], "block": info["block"],
               "fallbacks": info["fallbacks"], "variates": variates,
               "variates_identical": bool(same.all()),
               "sums": float(np.max(np.abs(sums - expected) / scale)),
               "bins": float(np.max(bin_error, initial=0.0)),
               "empty_bins_zero": bool(np.all(bins[:, np.diff(np.concatenate([[0], edges]))
                                                   == 0] == 0.0)),
               "in_flight": info["in_flight"],
               "sums_in_order": bool(np.array_equal(sums, in_order)),
               "bins_in_order": bool(np.array_equal(bins, in_order_bins))}
        if name in ("t3.5", "laplace") and m == 203:
            # libm's functions make (Laplace) or decide (the gamma t3.5) these variates: the split
            # draws the unsplit kernel's bits,
            # and adds them as the unsplit kernel does
            one_sums, one_bins, whole = gpu.simulation_sums_gpu(
                key, 2, 4, g.code, g.parameter, u, n_bins, n_record=m, threads=1)
            row["identical_to_one_thread"] = bool(
                np.array_equal(whole, eps) and np.array_equal(one_sums, sums)
                and np.array_equal(one_bins, bins))
        if m == 203 and n_bins == 7:
            # the threads' sums added in a tree (order=IN_A_TREE): the CPU's to rounding
            info_tree = {}
            tree, tree_bins, _ = gpu.simulation_sums_gpu(
                key, 2, 4, g.code, g.parameter, u, n_bins, threads=threads, segment=segment,
                order=gpu.IN_A_TREE, info=info_tree)
            row["tree_sums"] = float(np.max(np.abs(tree - expected) / scale))
            with np.errstate(all="ignore"):
                row["tree_bins"] = float(np.max(np.where(
                    expected_bins == tree_bins, 0.0,
                    np.abs(tree_bins - expected_bins) / np.abs(expected_bins)), initial=0.0))
            row["tree_in_order"] = bool(np.array_equal(tree, in_order))
            row["tree_group"] = info_tree["group"]
        rows.append(row)
print(json.dumps({"rows": rows}))
"""


@pytest.fixture(scope="module")
def split() -> list[dict]:
    result = json_result(start(SPLIT % {"generators": GENERATORS,
                                        "configurations": CONFIGURATIONS}, simulator=True),
                         timeout=300)
    return result["rows"]


def test_every_configuration_ran_split(split):
    assert len(split) == len(GENERATORS) * len(CONFIGURATIONS)
    several = [r for r in split if r["block"] > r["group"] > 1]
    assert several, "no block held several split replicates"
    assert all(r["group"] > 1 for r in split if r["m"] == 203)


def test_split_variates_are_the_cpu_s(split):
    for row in split:
        if row["generator"] in EXACT:
            assert row["variates_identical"], row
        else:
            assert row["variates"] <= TOLERANCE, row
        assert "identical_to_one_thread" not in row or row["identical_to_one_thread"], row


def test_split_sums_and_bins_equal_the_cpu_s(split):
    for row in split:
        assert row["sums"] <= TOLERANCE, row
        assert row["bins"] <= TOLERANCE, row
        assert row["empty_bins_zero"], row


def test_split_sums_are_added_in_the_cpu_s_order(split):
    """The sums of a split replicate are made by one thread from the variates in device
    memory, in the CPU kernel's order: where the variates are the CPU's, so is every sum and
    bin sum, bit for bit (and for every generator the split's sums are the unsplit kernel's)."""
    for row in split:
        if row["variates_identical"]:
            assert row["sums_in_order"] and row["bins_in_order"], row
        assert 1 <= row["in_flight"] <= 2, row


def test_split_sums_in_a_tree_equal_the_cpu_s_to_rounding(split):
    """``order=IN_A_TREE``: the threads' sums added in a tree, the CPU's to rounding but in
    another order (which these sets show: not every sum is the in-order one)."""
    rows = [r for r in split if "tree_sums" in r]
    assert rows and all(r["tree_group"] > 1 for r in rows)
    for row in rows:
        assert row["tree_sums"] <= TOLERANCE and row["tree_bins"] <= TOLERANCE, row
    assert not all(r["tree_in_order"] for r in rows)


def test_quick_parses_split_without_a_fallback_and_slow_ones_fall_back(split):
    """The normal, ziggurat Student-t (t4, t6), uniform and Laplace parses meet within a few
    draws: no replicate falls back. The chi-square and gamma t's take tens to thousands of
    draws: in these tiny segments some replicates fall back to one thread, and their values
    are still right (above)."""
    quick = [r for r in split if r["generator"] in QUICK and r["group"] > 1]
    assert quick and all(r["fallbacks"] == 0 for r in quick)
    assert sum(r["fallbacks"] for r in split if r["generator"] not in QUICK) > 0


_position = numba.njit(gpu._position)


@numba.njit(cache=False)
def _raw_draws(key, code, parameter, n):
    """The raw position of stream ``(key, 0)`` after ``n`` variates of ``next_variate``."""
    scale, form = K.variate_constants(code, parameter)
    state = first = K.stream_start(key, np.uint64(0))
    for _ in range(n):
        _, state = K.next_variate(state, code, parameter, scale, form)
    return _position(state, first)


@pytest.mark.parametrize("name", (*GENERATORS, "t3", "t5", "t32"))
def test_draws_per_variate_is_the_streams_mean(name):
    """The plan's mean raw draws per variate, against the position the CPU's own stream
    reaches after 20 000 variates (the plan's segments cover 2 % more: an error of a few
    tenths of a per cent only moves work to the last thread)."""
    g = get_generator(name)
    n = 20_000
    draws = _raw_draws(stream_key(1, f"reference:{name}"), g.code, g.parameter, n)
    assert abs(draws / n / gpu.draws_per_variate(g.code, g.parameter) - 1.0) < 0.004


def test_split_plan():
    group, draws, block = gpu.split_plan(K.NORMAL, 0.0, 2_000_000)
    assert (group, block) == (gpu.SPLIT_THREADS, gpu.SPLIT_THREADS)
    assert draws % 2 == 0 and group * draws >= 1.02 * 2_000_000 * gpu.draws_per_variate(
        K.NORMAL, 0.0)
    # the chi-square and gamma t take longer segments, the ziggurat t (stream version 4) the
    # normal's; small sets stay with one thread per replicate
    for nu in (8.0, 3.5):
        assert gpu.split_plan(K.STUDENT, nu, 20_000)[0] < gpu.split_plan(K.NORMAL, 0.0, 20_000)[0]
    assert gpu.split_plan(K.STUDENT, 6.0, 20_000)[0] == gpu.split_plan(K.NORMAL, 0.0, 20_000)[0]
    assert gpu.split_plan(K.NORMAL, 0.0, 300) == (1, 378, gpu.SIMULATION_THREADS)
    # t32's parses meet after about 6 000 draws: its threads take at least 1024 * 16² draws
    assert gpu.split_plan(K.STUDENT, 32.0, 2_000_000)[1] >= gpu._SEGMENT_DRAWS * 16 ** 2
    for threads in (1, 4, 64):
        group, draws, block = gpu.split_plan(K.UNIFORM, 0.0, 10_000, threads=threads,
                                             segment=8)
        assert block == threads and group <= threads and group & (group - 1) == 0
    with pytest.raises(ValueError, match="at most 256 threads"):
        gpu.split_plan(K.NORMAL, 0.0, 100, threads=512)
    with pytest.raises(ValueError, match="power of two"):
        gpu.split_plan(K.NORMAL, 0.0, 100, threads=3)
