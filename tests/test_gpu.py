"""The GPU bootstrap of the moment statistics (:mod:`xuqcal.core.gpu`) on Numba's CUDA simulator.

The simulator must be switched on (``NUMBA_ENABLE_CUDASIM=1``) before ``numba.cuda`` is first
imported, which another test of this process may have done already: the checks run in one
subprocess (small sizes: the simulator runs every GPU thread as Python) and report JSON. No GPU
and no numba-cuda are needed; without ``numba.cuda`` the simulator checks are skipped.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from gpu_helpers import SIMULATOR_PREAMBLE, finish, json_result, start

from xuqcal.core import gpu
from xuqcal.core import kernels as K
from xuqcal.core.statistics import STATISTICS

#: The statistics compared (every one sums different columns or finishes differently).
KEYS = ("zms", "zm", "rce", "nll", "mse", "rmv", "zv")
TOLERANCE = 1e-12


SIMULATED = SIMULATOR_PREAMBLE + """
from xuqcal.analysis.resampling import _replicate_block
from xuqcal.core import gpu
from xuqcal.core import kernels as K
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import STATISTICS, PreparedData

KEYS = %(keys)r
codes = np.array([STATISTICS[k].code for k in KEYS])
rng = np.random.default_rng(11)
result = {"available": gpu.cuda_available()}

# NIG-like data: heavy-tailed uncertainties, slightly over-dispersed errors
m = 200
uE = np.sqrt(2.0 / rng.gamma(2.0, size=m))
prepared = PreparedData.from_arrays(1.1 * uE * rng.standard_normal(m), uE)
key = stream_key(5, "bootstrap")
values = gpu.bootstrap_moments_gpu(key, 3, 8, codes, prepared, threads=16)
reference = _replicate_block(prepared, codes, key, 3, 8)
result["shape"] = list(values.shape)
result["relative"] = (np.abs(values - reference) / np.abs(reference)).max(axis=0).tolist()
result["spread"] = (reference.std(axis=0) / np.abs(reference).mean(axis=0)).tolist()
result["identical"] = bool(np.array_equal(values, reference))
tree = gpu.bootstrap_moments_gpu(key, 3, 5, codes, prepared, threads=8, order=gpu.IN_A_TREE)
result["tree_relative"] = float((np.abs(tree - reference[:2]) / np.abs(reference[:2])).max())
result["tree_identical"] = bool(np.array_equal(tree, reference[:2]))

# the counted sums of large samples (the CPU's from _COUNTED_SUMS_FROM points), forced here on
# small ones: M mod 4 = 0 and 3 (a tail added one by one), 8 threads and 2 (fewer than the
# four chains)
counted = []
used = K._moment_columns(codes)
for m_counted, threads in ((200, 8), (203, 2), (7, 4)):
    uE = np.sqrt(2.0 / rng.gamma(2.0, size=m_counted))
    p = PreparedData.from_arrays(1.1 * uE * rng.standard_normal(m_counted), uE,
                                 needs_bins=False)
    flat, stride = K._compact_rows(p.packed, used)
    gpu_sums = gpu.moment_column_sums_gpu(key, 2, 4, codes, p.packed, threads=threads,
                                          order=gpu.COUNTED)[:, used]
    cpu_sums = np.empty_like(gpu_sums)
    for i in range(2):
        counts = np.zeros(m_counted, np.int32)
        K.fill_counts(key, 2 + i, counts)
        K._counted_sums(counts, flat, stride, len(used), np.zeros((4, 6)), cpu_sums[i])
    counted.append(bool(np.array_equal(gpu_sums, cpu_sums)))
result["counted_identical"] = counted

# moment and binned statistics (no ties of uE): the bins of each resample from its counts by
# the CPU's bin walk; the moment sums in draw order (a launch of their own) or, forced, counted
# in the same launch as the bins (as from _COUNTED_SUMS_FROM points)
from xuqcal.analysis.resampling import _replicate_block as cpu_block
m = 150
uE = np.sqrt(2.0 / rng.gamma(2.0, size=m))
p = PreparedData.from_arrays(1.1 * uE * rng.standard_normal(m), uE, n_bins=7)
mixed = np.array([STATISTICS[k].code for k in ("zms", "ence", "rce", "zmse", "uce")])
g = gpu.bootstrap_statistics_gpu(key, 1, 3, mixed, p, threads=8)
c = cpu_block(p, mixed, key, 1, 3)
result["binned_identical"] = bool(np.array_equal(g, c))
together = gpu.bootstrap_statistics_gpu(key, 1, 3, mixed, p, threads=8, order=gpu.COUNTED)
binned = [1, 3, 4]
moments = gpu.moment_column_sums_gpu(key, 1, 3, mixed[[0, 2]], p.packed, threads=8,
                                     order=gpu.COUNTED)
expected = p.unscale(mixed[[0, 2]], gpu.finish_moments(mixed[[0, 2]], m, moments, p.z_shift))
result["together_identical"] = bool(np.array_equal(together[:, binned], c[:, binned])
                                    and np.array_equal(together[:, [0, 2]], expected))
# cc: average ranks with multiplicities made by the block, the Spearman sums exact (a tree);
# with ties of uE and |E| (rounded data; their bins then refused), and, the exactness bound
# lowered here, the sums of many points added by one thread in point order
cc_code = np.array([STATISTICS["cc"].code, STATISTICS["zms"].code])
cc_rows = []
for m_cc, rounding in ((90, None), (61, 1)):
    uE = np.sqrt(2.0 / rng.gamma(2.0, size=m_cc))
    errors = 1.1 * uE * rng.standard_normal(m_cc)
    if rounding is not None:
        uE, errors = uE.round(rounding) + 0.1, errors.round(rounding)
    q = PreparedData.from_arrays(errors, uE, n_bins=4)
    got = gpu.bootstrap_statistics_gpu(key, 2, 4, cc_code, q, threads=8)
    want = cpu_block(q, cc_code, key, 2, 4)
    cc_rows.append(bool(np.array_equal(got, want)) and bool(q.tie_u.any()) == (rounding
                                                                                is not None))
exact_bound = K._EXACT_RANK_SUMS
K._EXACT_RANK_SUMS = 10  # the simulator reads it at each call
try:
    got = gpu.bootstrap_statistics_gpu(key, 2, 4, cc_code, q, threads=8)
finally:
    K._EXACT_RANK_SUMS = exact_bound
cc_rows.append(bool(np.array_equal(got, want)))
result["cc_identical"] = cc_rows
try:
    gpu.bootstrap_statistics_gpu(key, 0, 2, np.array([STATISTICS["ence"].code]), q)
    result["tied_bins_refused"] = False
except ValueError as error:
    result["tied_bins_refused"] = "binned statistics of tied data" in str(error)

# the drawn indices, compared with the CPU's stream (next_below through fill_draws)
m = 300
draws = gpu.drawn_indices_gpu(key, 40, 43, m, threads=16)
same = []
for i in range(draws.shape[0]):
    cpu = np.empty(m, dtype=np.int64)
    K.fill_draws(key, 40 + i, cpu)
    same.append(bool((cpu == draws[i]).all()))
result["draws_equal"] = same
result["draws_distinct"] = int(len(np.unique(draws[0])))

# a bound at which Lemire's test rejects half of the raw draws: many rounds per replicate
bound = 2**31 + 1
m = 120
draws = gpu.drawn_indices_gpu(key, 8, 10, m, bound=bound, threads=16)
same = []
for i in range(draws.shape[0]):
    state = np.uint64(K.stream_start(key, 8 + i))
    cpu = []
    for _ in range(m):
        j, state = K.next_below(np.uint64(state), bound)
        cpu.append(int(j))
    same.append(draws[i].tolist() == cpu)
result["rejecting_draws_equal"] = same

# one thread per block; M = 1, 2, 5
tiny = []
for m in (1, 2, 5):
    uE = rng.uniform(0.5, 2.0, m)
    p = PreparedData.from_arrays(uE * rng.standard_normal(m), uE, needs_bins=False)
    two = np.array([STATISTICS["zms"].code, STATISTICS["mse"].code])
    g = gpu.bootstrap_moments_gpu(key, 0, 3, two, p, threads=1)
    c = _replicate_block(p, two, key, 0, 3)
    tiny.append(bool(np.array_equal(g, c)))
result["tiny"] = tiny

# data rescaled by a power of two (scale safety): the units are restored as on the CPU
uE = rng.uniform(0.5, 2.0, 64) * 2.0**500
p = PreparedData.from_arrays(uE * rng.standard_normal(64), uE)
units = np.array([STATISTICS[k].code for k in ("mse", "rmv", "zms")])
g = gpu.bootstrap_moments_gpu(key, 0, 4, units, p, threads=16)
c = _replicate_block(p, units, key, 0, 4)
result["scaled_exponent"] = p.scale_exponent
result["scaled_relative"] = float((np.abs(g - c) / np.abs(c)).max())
result["scaled_identical"] = bool(np.array_equal(g, c))

# no replicates
result["empty"] = list(gpu.bootstrap_moments_gpu(key, 7, 7, codes, prepared).shape)
print(json.dumps(result))
"""


PLAIN = """
import sys
import numpy as np
from xuqcal.core import gpu
assert "numba.cuda" not in sys.modules
available = gpu.cuda_available()
try:
    from numba import cuda
    expected = bool(cuda.is_available())
except Exception:
    expected = False
assert available is expected
if not available:
    try:
        gpu.moment_column_sums_gpu(np.uint64(1), 0, 2, np.array([5]), np.ones((3, 6)))
    except RuntimeError as error:
        assert "no CUDA GPU" in str(error), error
    else:
        raise AssertionError("no RuntimeError")
print(available)
"""


@pytest.fixture(scope="module")
def processes() -> dict[str, subprocess.Popen]:
    """The two subprocesses, started together (each spends seconds importing)."""
    started = {"simulated": start(SIMULATED % {"keys": KEYS}, simulator=True),
               "plain": start(PLAIN, simulator=False)}
    yield started
    for process in started.values():
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.fixture(scope="module")
def simulated(processes) -> dict:
    return json_result(processes["simulated"])


def test_simulator_is_available(simulated):
    assert simulated["available"] is True


def test_replicates_equal_the_cpu_within_1e_12(simulated):
    assert simulated["shape"] == [5, len(KEYS)]
    relative = dict(zip(KEYS, simulated["relative"], strict=True))
    assert all(value <= TOLERANCE for value in relative.values()), relative
    # the replicates differ from each other: agreement is not that of constants
    assert min(simulated["spread"]) > 1e-4


def test_replicates_are_the_cpu_s_bit_for_bit(simulated):
    """The sums in the CPU's order (draw order below ``_COUNTED_SUMS_FROM`` points, counted
    above; the counted order forced on small samples here, tails and fewer threads than
    chains included): the replicates are the CPU's bits. Added in a tree, they are the CPU's
    to rounding only."""
    assert simulated["identical"] and simulated["scaled_identical"]
    assert all(simulated["counted_identical"]), simulated["counted_identical"]
    assert simulated["tree_relative"] <= TOLERANCE
    assert not simulated["tree_identical"]


def test_binned_replicates_are_the_cpu_s_bit_for_bit(simulated):
    """ence, zmse and uce of data without ties of uE: the counts of each resample, then the
    CPU's own bin walk compiled for the GPU; the bins of tied data are refused."""
    assert simulated["binned_identical"] and simulated["together_identical"]
    assert simulated["tied_bins_refused"]


def test_cc_replicates_are_the_cpu_s_bit_for_bit(simulated):
    """cc from the block's average ranks (prefix sums of the counts) and the Spearman sums,
    exact in a tree or added in point order by one thread: the CPU's bits, ties included."""
    assert simulated["cc_identical"] == [True, True, True], simulated["cc_identical"]


def test_drawn_indices_are_the_cpu_streams(simulated):
    assert simulated["draws_equal"] == [True, True, True]
    assert 100 < simulated["draws_distinct"] < 300  # a resample with replacement


def test_drawn_indices_with_frequent_rejections(simulated):
    """Half of the raw draws rejected: every round of the kernel, and only the first M accepted
    draws, as the CPU's next_below."""
    assert simulated["rejecting_draws_equal"] == [True, True]


def test_one_thread_and_tiny_samples(simulated):
    assert simulated["tiny"] == [True, True, True]


def test_unscaled_like_the_cpu(simulated):
    assert simulated["scaled_exponent"] > 0
    assert simulated["scaled_relative"] <= TOLERANCE


def test_no_replicates(simulated):
    assert simulated["empty"] == [0, len(KEYS)]


def test_lemire_threshold_matches_next_below():
    """The acceptance threshold is the one ``next_below`` tests: ``(2^32 - M) mod M``."""
    for bound in (1, 2, 3, 7, 1000, 2_000_000, 2**31 + 1, 2**32 - 1):
        assert int(K.lemire_threshold.py_func(bound)) == (2**32 - bound) % bound
    # on the host, the one-draw test accepts exactly the raw draws next_below keeps
    key = np.uint64(0x1234_5678_9ABC_DEF0)
    bound = 2**31 + 1  # about half of the raw draws are rejected
    state = np.uint64(K.stream_start(key, 2))
    threshold = K.lemire_threshold.py_func(bound)
    with np.errstate(over="ignore"):
        accepted = []
        raw = state
        while len(accepted) < 50:
            bits = K._mix64.py_func(raw + K._GAMMA)
            raw = raw + K._GAMMA
            ok, j = K.lemire_accept.py_func(bits, np.uint64(bound), threshold)
            if ok:
                accepted.append(int(j))
    expected = []
    for _ in range(50):
        j, state = K.next_below(np.uint64(state), bound)
        expected.append(int(j))
    assert accepted == expected


def test_refuses_binned_and_rank_statistics():
    codes = np.array([STATISTICS["zms"].code, STATISTICS["ence"].code])
    with pytest.raises(ValueError, match="moment statistics only"):
        gpu.bootstrap_moments_gpu(np.uint64(1), 0, 2, codes, None)
    with pytest.raises(ValueError, match="moment statistics only"):
        gpu.moment_column_sums_gpu(np.uint64(1), 0, 2, np.array([K.CC]), np.ones((3, 6)))


def test_finish_moments_uses_the_cpu_finishers():
    """The host finishing equals the jitted finisher of each code on the same sums."""
    rng = np.random.default_rng(0)
    sums = rng.uniform(0.5, 2.0, (5, 6))
    sums[:, 4] -= 1.0
    codes = np.arange(K.N_MOMENT)
    out = gpu.finish_moments(codes, 7.0, sums, 0.25)
    for i in range(sums.shape[0]):
        for k, code in enumerate(codes):
            value = K.finalize_moment(code, 7.0, *sums[i], 0.25)
            assert out[i, k] == pytest.approx(value, rel=1e-15)


def test_without_numba_cuda(monkeypatch):
    """No numba.cuda at all (numba-cuda not installed): cuda_available() is False and the GPU
    path refuses with a clear error."""
    import numba

    monkeypatch.setitem(sys.modules, "numba.cuda", None)  # the import fails
    monkeypatch.delattr(numba, "cuda", raising=False)
    assert gpu.cuda_available() is False
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        gpu.moment_column_sums_gpu(np.uint64(1), 0, 2, np.array([5]), np.ones((3, 6)))


def test_without_simulator(processes):
    """Importing the module imports nothing from numba.cuda; with numba.cuda and no simulator,
    cuda_available() says whether a GPU is there and never raises (False on a machine without
    a GPU or a driver, where the GPU path refuses)."""
    returncode, stdout, stderr = finish(processes["plain"])
    assert returncode == 0, stdout + stderr
    assert stdout.split()[-1] in {"True", "False"}
