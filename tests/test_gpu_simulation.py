"""The simulated references on the GPU (:mod:`xuqcal.core.gpu`, ``device="cuda"``) on Numba's
CUDA simulator.

As in ``tests/test_gpu.py``, the simulator must be switched on (``NUMBA_ENABLE_CUDASIM=1``)
before ``numba.cuda`` is first imported: the checks run in subprocesses (a few hundred points,
a few replicates: the simulator runs every GPU thread as Python) that report JSON. The
reference is the CPU kernel itself (:func:`xuqcal.core.kernels.fill_variates`,
``xuqcal.analysis.simulation._simulation_block``), and, for the per-bin sums, NumPy sums of
the CPU's variates. No GPU and no numba-cuda are needed; without ``numba.cuda`` the simulator
checks are skipped.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from gpu_helpers import SIMULATOR_PREAMBLE, json_result, start

from xuqcal.analysis.simulation import simulation_device, simulation_on_gpu
from xuqcal.core import gpu
from xuqcal.core import kernels as K
from xuqcal.core.generators import get_generator
from xuqcal.core.statistics import STATISTICS

TOLERANCE = 1e-12
#: Every moment and binned statistic the GPU simulates (cc, a sort per set on the device, is
#: checked below with two generators: its kernel does not depend on the generator, and its
#: branches are checked on made keys in ``tests/test_gpu_ranks.py``).
KEYS = ("mse", "rmse", "mv", "rmv", "zm", "zms", "zv", "rce", "nll", "ence", "uce", "zmse")
#: The generators and the branch of ``fill_variates`` each takes: normal (ziggurat),
#: Student-t of integer nu from 3 to 6 (its own ziggurat, stream version 4: t4 and t6, whose
#: density takes a sqrt, and t5, whose does not), of another even nu <= 32 (chi-square
#: construction from ziggurat exponentials: t32), of other nu (a normal and a Marsaglia-Tsang
#: gamma, stream version 3: t3.5, t34 whose nu / 2 = 17 exceeds 16), uniform, Laplace.
GENERATORS = ("normal", "t4", "t6", "t32", "t5", "t3.5", "t34", "uniform", "laplace")
#: The generators whose variates involve no libm function (stream version 2: the ziggurats'
#: decisions use arithmetic only, the values ``sqrt``, correctly rounded everywhere; stream
#: version 4: the Student-t ziggurat's also divisions): the GPU's variates are the CPU's bit
#: for bit.
EXACT = ("normal", "t4", "t5", "t6", "t32", "uniform")
#: Those whose statistics are also checked with a replicate split between threads (t32's
#: parses meet after thousands of draws, which the simulator would run as Python for long).
SPLIT = ("normal", "t4", "t6", "uniform")


SIMULATED = SIMULATOR_PREAMBLE + """
import sys

import xuqcal
from xuqcal.analysis.simulation import _simulation_block
from xuqcal.core import gpu
from xuqcal.core import kernels as K
from xuqcal.core.generators import get_generator
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import STATISTICS, PreparedData

KEYS = %(keys)r
GENERATORS = %(generators)r
codes = np.array([STATISTICS[k].code for k in KEYS])
rng = np.random.default_rng(7)
result = {"available": gpu.cuda_available()}


def relative(a, b):
    a, b = np.asarray(a), np.asarray(b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(all="ignore"):
        rel = np.where(same, 0.0, np.abs(a - b) / np.abs(b))
    return float(np.max(rel, initial=0.0))


# heavy-tailed uncertainties; an odd M and bins of unequal counts (floor(b M / N) with 7 bins
# of 203 points)
m = 203
uE = np.sqrt(2.0 / rng.gamma(2.0, size=m))
prepared = PreparedData.from_arrays(uE * rng.standard_normal(m), uE, n_bins=7)
statistics, variates, spread, identical = {}, {}, {}, {}
for name in GENERATORS:
    g = get_generator(name)
    key = stream_key(3, f"reference:{name}")
    values = gpu.simulate_statistics_gpu(key, 5, 9, codes, g.code, g.parameter, prepared,
                                         threads=2)
    reference = _simulation_block(prepared, codes, g.code, g.parameter, key, 5, 9)
    statistics[name] = [relative(values[:, k], reference[:, k]) for k in range(len(KEYS))]
    if name in %(split)r:
        # a replicate split between 8 threads, its sums added in the CPU's order
        split = gpu.simulate_statistics_gpu(key, 5, 7, codes, g.code, g.parameter, prepared,
                                            threads=8, segment=24)
        identical[name] = [bool(np.array_equal(values, reference, equal_nan=True)),
                           bool(np.array_equal(split, reference[:2], equal_nan=True)),
                           gpu.split_plan(g.code, g.parameter, m, threads=8, segment=24)[0]]
    varying = [k for k, key in enumerate(KEYS) if key not in ("mv", "rmv")]  # not of eps
    spread[name] = float(np.min(np.std(reference[:, varying], axis=0)
                                / np.abs(reference[:, varying]).mean(axis=0)))
    eps = gpu.variates_gpu(key, 5, 7, g.code, g.parameter, 25, threads=2)
    cpu = np.empty((2, 25))
    for i in range(2):
        K.fill_variates(key, 5 + i, g.code, g.parameter, cpu[i])
    variates[name] = relative(eps, cpu)
result["statistics"] = statistics
result["identical"] = identical

# cc: each set sorted and ranked on the device (t6: one thread a replicate; normal: split
# between 8 threads), with the moment and binned statistics of the same sets
ranked = np.array([STATISTICS[k].code for k in ("zms", "cc", "ence")])
cc_sets = {}
for name, options in (("t6", {"threads": 2}), ("normal", {"threads": 8, "segment": 24})):
    g = get_generator(name)
    key = stream_key(3, f"reference:{name}")
    reference = _simulation_block(prepared, ranked, g.code, g.parameter, key, 5, 7)
    values = gpu.simulate_statistics_gpu(key, 5, 7, ranked, g.code, g.parameter, prepared,
                                         **options)
    cc_sets[name] = [bool(np.array_equal(values, reference, equal_nan=True)),
                     float(np.ptp(reference[:, 1]))]
result["cc_sets"] = cc_sets
result["variates"] = variates
result["spread"] = spread

# enough normal draws for the ziggurat's rare paths (about 1 %% of draws in a wedge, 2.5e-4 in
# the tail beyond R): the same bits on the GPU as on the CPU
key = stream_key(6, "reference:normal")
long_gpu = gpu.variates_gpu(key, 0, 1, K.NORMAL, 0.0, 20_000, threads=1)[0]
long_cpu = np.empty(20_000)
K.fill_variates(key, 0, K.NORMAL, 0.0, long_cpu)
result["long_normal_identical"] = bool(np.array_equal(long_gpu, long_cpu))
result["long_normal_tail_draws"] = int(np.sum(np.abs(long_cpu) > K._ZN_R))
# and t3's ziggurat (stream version 4: about 2 %% of draws in a wedge, 1e-3 in the tail beyond
# R, drawn by rejection from a Pareto density)
key = stream_key(6, "reference:t3")
long_gpu = gpu.variates_gpu(key, 0, 1, K.STUDENT, 3.0, 20_000, threads=1)[0]
K.fill_variates(key, 0, K.STUDENT, 3.0, long_cpu)
result["long_t3_identical"] = bool(np.array_equal(long_gpu, long_cpu))
result["long_t3_tail_draws"] = int(np.sum(np.abs(long_cpu) / np.sqrt(1.0 / 3.0) > K._ZT_R[0]))
exact = {}
for name in %(exact)r:
    g = get_generator(name)
    key = stream_key(3, f"reference:{name}")
    cpu = np.empty((2, 2001))
    for i in range(2):
        K.fill_variates(key, 5 + i, g.code, g.parameter, cpu[i])
    exact[name] = bool(np.array_equal(gpu.variates_gpu(key, 5, 7, g.code, g.parameter, 2001,
                                                       threads=2), cpu))
result["exact"] = exact

# the per-bin sums against NumPy sums of the CPU's variates, with bins without points
# (12 bins of 10 points: bin_start(b) = floor(10 b / 12) repeats)
u = rng.uniform(0.5, 2.0, 10)
key = stream_key(9, "reference:normal")
sums, bins, _ = gpu.simulation_sums_gpu(key, 0, 3, K.NORMAL, 0.0, u, 12, threads=4)
expected_sums, expected_bins = [], []
for r in range(3):
    eps = np.empty(10)
    K.fill_variates(key, r, K.NORMAL, 0.0, eps)
    e2, z2 = (u * eps) ** 2, eps ** 2
    expected_sums.append([np.add.accumulate(e2)[-1], np.add.accumulate(z2)[-1],
                          np.add.accumulate(eps)[-1]])
    edges = [(b * 10) // 12 for b in range(13)]
    expected_bins.append([[np.add.accumulate(x[lo:hi])[-1] if hi > lo else 0.0 for x in (e2, z2)]
                          for lo, hi in zip(edges[:-1], edges[1:])])
result["bin_sums_equal"] = bool(np.array_equal(bins, np.array(expected_bins)))
result["sums_equal"] = bool(np.array_equal(sums, np.array(expected_sums)))
result["empty_bins"] = int(np.sum(np.diff([(b * 10) // 12 for b in range(13)]) == 0))

# tiny sets: M = 2, 3, 5 (one bin: 2 points at least), one thread per block
tiny = []
for size in (2, 3, 5):
    uE = rng.uniform(0.5, 2.0, size)
    p = PreparedData.from_arrays(uE * rng.standard_normal(size), uE, n_bins=1)
    two = np.array([STATISTICS["zms"].code, STATISTICS["ence"].code])
    key = stream_key(1, "reference:t6")
    g = gpu.simulate_statistics_gpu(key, 0, 3, two, K.STUDENT, 6.0, p, threads=1)
    c = _simulation_block(p, two, K.STUDENT, 6.0, key, 0, 3)
    tiny.append(relative(g, c))
result["tiny"] = tiny

# data rescaled by a power of two (scale safety): the units restored as on the CPU
uE = rng.uniform(0.5, 2.0, 64) * 2.0**500
p = PreparedData.from_arrays(uE * rng.standard_normal(64), uE, n_bins=4)
units = np.array([STATISTICS[k].code for k in ("mse", "rmv", "uce", "zms")])
key = stream_key(2, "reference:uniform")
g = gpu.simulate_statistics_gpu(key, 0, 3, units, K.UNIFORM, 0.0, p, threads=4)
c = _simulation_block(p, units, K.UNIFORM, 0.0, key, 0, 3)
result["scaled_exponent"] = p.scale_exponent
result["scaled_relative"] = relative(g, c)
result["empty"] = list(gpu.simulate_statistics_gpu(key, 4, 4, units, K.UNIFORM, 0.0,
                                                   p).shape)

# a replicate does not depend on the launch it is in, nor on the threads per block
key = stream_key(4, "reference:laplace")
whole = gpu.simulate_statistics_gpu(key, 0, 6, codes, K.LAPLACE, 0.0, prepared, threads=4)
part = gpu.simulate_statistics_gpu(key, 2, 5, codes, K.LAPLACE, 0.0, prepared, threads=1)
result["launch_independent"] = bool(np.array_equal(whole[2:5], part, equal_nan=True))

# later replicates (first > 0, the rounds of a precision-driven validate), through the
# dispatch of simulated_replicates
from xuqcal.analysis.simulation import simulated_replicates

t6 = get_generator("t6")
with xuqcal.set_options(device="cuda"):
    later = simulated_replicates(prepared, codes, t6, 5, 11, chunks=2, first=3).compute()
result["first_relative"] = relative(
    later, simulated_replicates(prepared, codes, t6, 5, 11, chunks=2, first=3).compute())

# set_options(device="cuda"): simulate, its attributes, the fallbacks, chunk independence
launches = []
original = gpu.simulate_statistics_gpu


def counted(*args, **kwargs):
    launches.append(args[2] - args[1])
    kwargs["threads"] = 4
    return original(*args, **kwargs)


gpu.simulate_statistics_gpu = counted
ds = xuqcal.synthetic.nig(150, nu=6, seed=4)
options = dict(generators=["normal", "t6", "normp1.5"], n_mc=6, seed=2, n_bins=5,
               keep_replicates=True)
stats = ["zms", "ence", "zmse", "rce"]
cc_options = {**options, "generators": ["normal", "normp1.5"], "n_mc": 3}
cpu = xuqcal.simulate(ds, stats, chunks=2, **options).compute()
with xuqcal.set_options(device="cuda"):
    lazy = xuqcal.simulate(ds, stats, chunks=2, **options)
    result["chunks"] = [list(c) for c in lazy.replicates.chunks]
    on_gpu = lazy.compute()
    other = xuqcal.simulate(ds, stats, chunks=[1, 5], **options).compute()
    # (fewer sets: the simulator sorts each set's |E~| as Python threads)
    with_cc = xuqcal.simulate(ds, ["zms", "cc"], chunks=2, **cc_options).compute()
plain_cc = xuqcal.simulate(ds, ["zms", "cc"], chunks=2, **cc_options).compute()
result["simulate_relative"] = relative(on_gpu.replicates.values, cpu.replicates.values)
result["simulate_identical"] = all(
    np.array_equal(on_gpu[v].values, cpu[v].values, equal_nan=True)
    for v in ("replicates", "mean", "se", "q025", "q975"))
result["summaries_relative"] = max(relative(on_gpu[v].values, cpu[v].values)
                                   for v in ("mean", "se", "q025", "q975"))
result["chunk_independent"] = bool(np.array_equal(on_gpu.replicates.values,
                                                  other.replicates.values, equal_nan=True))
result["device"] = on_gpu.attrs.get("device")
result["cpu_device"] = cpu.attrs.get("device")
result["launches"] = list(launches)  # one launch a generator on the GPU; normp on the CPU
result["cc_identical"] = bool(plain_cc.replicates.identical(with_cc.replicates))
result["cc_device"] = with_cc.attrs.get("device")

# validate: its simulations go through the same dispatch
launches.clear()
arguments = dict(n_boot=8, n_mc=4, generators=["normal"], seed=3, chunks=2, n_bins=5,
                 level=0.5)
cpu = xuqcal.validate(ds, ["zms", "ence"], **arguments).compute()
with xuqcal.set_options(device="cuda"):
    on_gpu = xuqcal.validate(ds, ["zms", "ence"], **arguments).compute()
result["validate_launches"] = list(launches)
result["validate_relative"] = max(
    relative(on_gpu[v].values, cpu[v].values) for v in cpu.data_vars
    if np.issubdtype(cpu[v].dtype, np.floating))
result["validate_identical"] = all(
    np.array_equal(on_gpu[v].values, cpu[v].values, equal_nan=True) for v in cpu.data_vars
    if np.issubdtype(cpu[v].dtype, np.floating))
result["validate_device"] = on_gpu.attrs.get("simulation_device")
result["validate_cpu_device"] = cpu.attrs.get("simulation_device")
# with cc: its bootstrap and its simulated sets on the GPU too
cpu = xuqcal.validate(ds, ["zms", "cc"], **arguments).compute()
with xuqcal.set_options(device="cuda"):
    on_gpu = xuqcal.validate(ds, ["zms", "cc"], **arguments).compute()
result["validate_cc_identical"] = all(
    np.array_equal(on_gpu[v].values, cpu[v].values, equal_nan=True) for v in cpu.data_vars
    if np.issubdtype(cpu[v].dtype, np.floating))
result["validate_cc_device"] = on_gpu.attrs.get("simulation_device")
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def simulated() -> dict:
    return json_result(start(SIMULATED % {"keys": KEYS, "generators": GENERATORS,
                                        "exact": EXACT, "split": SPLIT}, simulator=True),
                       timeout=300)


def test_simulator_is_available(simulated):
    assert simulated["available"] is True


def test_variates_are_the_cpu_s(simulated):
    """Each generator's variates, one by one, against ``fill_variates``. The simulator
    computes the device code with NumPy's scalar ``log``/``sqrt``/``**``; NumPy's own (SIMD)
    ``log`` may differ from the libm ``log`` of the CPU kernel by one unit in the last place,
    well within TOLERANCE (Laplace; the gamma t's tries past the squeeze compare logarithms).
    A GPU's own functions are still to be measured
    on a GPU (``benchmarks/gpu_simulation.py``). A variate drawn from other random numbers would
    differ by order 1."""
    assert set(simulated["variates"]) == set(GENERATORS)
    assert all(value <= TOLERANCE for value in simulated["variates"].values()), \
        simulated["variates"]


def test_ziggurat_variates_are_the_cpu_s_bit_for_bit(simulated):
    """No libm function decides or makes a normal, even-nu Student-t or uniform variate
    (stream version 2), nor a Student-t of nu from 3 to 6 (version 4), so the device code
    draws the CPU's bits: 2 x 2001 variates of each, and 20 000 normals and 20 000 t3 taking
    the ziggurats' wedges and tails (at least one tail draw each here)."""
    assert simulated["exact"] == dict.fromkeys(EXACT, True)
    assert simulated["long_normal_tail_draws"] >= 1
    assert simulated["long_normal_identical"] is True
    assert simulated["long_t3_tail_draws"] >= 1
    assert simulated["long_t3_identical"] is True


def test_statistics_equal_the_cpu_replicate_by_replicate(simulated):
    for name in GENERATORS:
        relative = dict(zip(KEYS, simulated["statistics"][name], strict=True))
        assert all(value <= TOLERANCE for value in relative.values()), (name, relative)
        # the replicates differ from each other: agreement is not that of constants
        assert simulated["spread"][name] > 1e-4, name


def test_statistics_are_the_cpu_s_bit_for_bit_where_the_variates_are(simulated):
    """Generators whose variates are the CPU's bits: every statistic is too, whether one
    thread draws a replicate or 8 share it (the split's sums added in the CPU's order)."""
    assert set(simulated["identical"]) == set(SPLIT)
    for name in SPLIT:
        one_thread, split, group = simulated["identical"][name]
        assert group > 1 and one_thread and split, (name, simulated["identical"][name])


def test_simulated_cc_is_the_cpu_s_bit_for_bit(simulated):
    """cc's sets sorted and ranked on the device, with the moment and binned statistics of
    the same sets, one thread a replicate (t6) and split between threads (normal): the CPU's
    bits."""
    assert set(simulated["cc_sets"]) == {"normal", "t6"}
    for name, (identical, spread) in simulated["cc_sets"].items():
        assert identical, name
        assert spread > 0, name  # cc differs between the sets


def test_bin_sums_follow_the_cpu_bins_including_empty_ones(simulated):
    assert simulated["empty_bins"] > 0
    assert simulated["bin_sums_equal"] is True
    assert simulated["sums_equal"] is True


def test_replicates_do_not_depend_on_the_launch(simulated):
    assert simulated["launch_independent"] is True
    assert simulated["first_relative"] <= TOLERANCE


def test_tiny_sets_and_one_thread(simulated):
    assert all(value <= TOLERANCE for value in simulated["tiny"])


def test_unscaled_like_the_cpu(simulated):
    assert simulated["scaled_exponent"] > 0
    assert simulated["scaled_relative"] <= TOLERANCE
    assert simulated["empty"] == [0, 4]


def test_device_option_routes_simulate_to_the_gpu(simulated):
    assert simulated["simulate_relative"] <= TOLERANCE
    assert simulated["summaries_relative"] <= TOLERANCE
    # normal and t6: the CPU's variates, summed in its order, so its replicates and summaries
    assert simulated["simulate_identical"] is True
    # one launch per GPU generator (all its sets), re-chunked as asked, in each of the three
    # simulations (normal and t6 with chunks 2 and [1, 5]; normal's 3 sets with cc); normp on
    # the CPU
    assert simulated["launches"] == [6, 6, 6, 6, 3]
    assert simulated["chunks"][-1] == [2, 2, 2]
    assert simulated["chunk_independent"] is True
    assert simulated["device"] == ("cuda (synthetic sets of normal, t6 on the GPU, the same "
                                   "streams; normp1.5 on the CPU)")
    assert simulated["cpu_device"] is None


def test_a_request_with_cc_runs_on_the_gpu(simulated):
    """cc's sets sorted and ranked on the device: the CPU's replicates bit for bit."""
    assert simulated["cc_identical"] is True
    assert simulated["cc_device"] == ("cuda (synthetic sets of normal on the GPU, the same "
                                      "streams; normp1.5 on the CPU)")


def test_validate_simulates_on_the_gpu(simulated):
    assert simulated["validate_launches"], "validate's simulation did not reach the GPU"
    assert simulated["validate_relative"] <= TOLERANCE
    # simulations and bootstrap (moment statistics) on the GPU, the CPU's sums in its order:
    # every number of the result is the CPU's
    assert simulated["validate_identical"] is True
    # the result says where its simulated references ran (nothing on the CPU)
    assert simulated["validate_device"].startswith("cuda (synthetic sets of normal on the GPU")
    assert simulated["validate_cpu_device"] is None
    # with cc, every number is the CPU's too, and its sets were drawn on the GPU
    assert simulated["validate_cc_identical"] is True
    assert simulated["validate_cc_device"].startswith("cuda (synthetic sets of normal on the GPU")


PLAIN = """
import json
import sys

import numpy as np

import xuqcal

ds = xuqcal.synthetic.nig(100, nu=6, seed=1)
xuqcal.simulate(ds, ["zms", "ence"], n_mc=4, n_bins=4).compute()
result = {"imported": "numba.cuda" in sys.modules}

# the FMA switch: while active, NVVM's compile_ir receives fma=False (without the simulator)
try:
    from numba.cuda.cudadrv import nvvm
except Exception as error:
    print(json.dumps({**result, "skip_fma": str(error)}))
    raise SystemExit(0)
from xuqcal.core import gpu

import sys
import types

seen = []
PTX = "mul.f64 %fd3, %fd1, %fd2;\\n\\tadd.f64 %fd4, %fd3, %fd1;\\n\\tadd.s64 %rd2, %rd1, 1;"
def recorder(llvmir, **options):
    seen.append(options)
    return PTX.encode()

# numba-cuda beside Numba 0.6x: its code generator calls another module's compile_ir
second = types.ModuleType("numba_cuda.numba.cuda.cudadrv.nvvm")
seen_second = []
def recorder_second(llvmir, **options):
    seen_second.append(options)
    return "ptx"

second.compile_ir = recorder_second
sys.modules[second.__name__] = second
nvvm.compile_ir = recorder
gpu._simulated = lambda: False
with gpu._NoContraction():
    result["ptx"] = nvvm.compile_ir("ir", opt=3, fastmath=False).decode()
    second.compile_ir("ir", opt=3)
result["ptx_after"] = nvvm.compile_ir("ir", opt=3).decode()
second.compile_ir("ir", opt=2)
result["options"] = seen
result["options_second"] = seen_second
result["restored"] = nvvm.compile_ir is recorder and second.compile_ir is recorder_second
print(json.dumps(result))
"""


def test_nothing_imports_numba_cuda_on_the_cpu_and_the_fma_switch():
    result = json_result(start(PLAIN, simulator=False), timeout=300)
    assert result["imported"] is False
    if "skip_fma" in result:
        pytest.skip(result["skip_fma"])
    assert result["options"] == [{"opt": 3, "fastmath": False, "fma": False}, {"opt": 3}]
    assert result["options_second"] == [{"opt": 3, "fma": False}, {"opt": 2}]
    assert result["restored"] is True
    # the PTX assembler would fuse a mul and an add without a rounding modifier: both get .rn
    assert result["ptx"] == ("mul.rn.f64 %fd3, %fd1, %fd2;\n\tadd.rn.f64 %fd4, %fd3, %fd1;"
                             "\n\tadd.s64 %rd2, %rd1, 1;")
    assert result["ptx_after"].startswith("mul.f64")


def test_variate_constants_are_fill_variates():
    """The factors and the Student-t's construction in ``fill_variates`` (sqrt((nu - 2) / nu),
    sqrt(3), 1 / sqrt(2); the ziggurat for integer nu from 3 to 6, nu / 2 exponentials for
    another even nu <= 32, else 0: the gamma)."""
    assert gpu.variate_constants(K.NORMAL, 0.0) == (1.0, 0)
    assert gpu.variate_constants(K.UNIFORM, 0.0) == (np.sqrt(3.0), 0)
    assert gpu.variate_constants(K.LAPLACE, 0.0) == (1.0 / np.sqrt(2.0), 0)
    assert gpu.variate_constants(K.STUDENT, 6.0) == (np.sqrt(4.0 / 6.0), K.STUDENT_ZIGGURAT)
    for nu in (3.0, 4.0, 5.0):
        assert gpu.variate_constants(K.STUDENT, nu)[1] == K.STUDENT_ZIGGURAT
    assert gpu.variate_constants(K.STUDENT, 8.0)[1] == 4
    assert gpu.variate_constants(K.STUDENT, 32.0)[1] == 16
    assert gpu.variate_constants(K.STUDENT, 34.0)[1] == 0
    assert gpu.variate_constants(K.STUDENT, 7.0)[1] == 0
    assert gpu.variate_constants(K.STUDENT, 3.5)[1] == 0
    assert gpu.variate_constants(K.STUDENT, 2.5)[1] == 0


def test_normp_and_unknown_codes_are_refused_before_any_work():
    """No GPU needed: the refusals come before the kernel is compiled."""
    with pytest.raises(ValueError, match="code 4 \\(normp\\) is drawn on the CPU"):
        gpu.simulation_sums_gpu(np.uint64(1), 0, 2, K.NORMP, 1.5, np.ones(5), 0)
    with pytest.raises(ValueError, match="code 4 \\(normp\\) is drawn on the CPU"):
        gpu.simulation_cc_sums_gpu(np.uint64(1), 0, 2, K.NORMP, 1.5, np.ones(5), 0,
                                   np.zeros(5))
    with pytest.raises(ValueError, match=rf"and cc \(codes 0 to {K.CC}\); got codes"):
        gpu.simulate_statistics_gpu(np.uint64(1), 0, 2, np.array([K.ZMS, K.CC + 1]),
                                    K.NORMAL, 0.0, None)
    with pytest.raises(ValueError, match="centred_u: expected the 5 centred ranks of u"):
        gpu.simulation_cc_sums_gpu(np.uint64(1), 0, 2, K.NORMAL, 0.0, np.ones(5), 0,
                                   np.zeros(4))
    with pytest.raises(ValueError, match="the rank kernel takes at most 256 threads"):
        gpu.simulation_cc_sums_gpu(np.uint64(1), 0, 2, K.NORMAL, 0.0, np.ones(5), 0,
                                   np.zeros(5), threads=512)


def test_which_simulations_run_on_the_gpu(monkeypatch):
    zms_ence = np.array([STATISTICS["zms"].code, STATISTICS["ence"].code])
    with_cc = np.array([STATISTICS["zms"].code, STATISTICS["cc"].code])
    assert gpu.simulation_on_gpu(zms_ence, K.LAPLACE)
    assert gpu.simulation_on_gpu(with_cc, K.NORMAL)
    assert not gpu.simulation_on_gpu(np.array([K.CC + 1]), K.NORMAL)
    assert not gpu.simulation_on_gpu(zms_ence, K.NORMP)
    normal, normp = get_generator("normal"), get_generator("normp1.5")
    # device="cpu" (the default): nothing on the GPU, no attribute
    assert not simulation_on_gpu(zms_ence, normal)
    assert simulation_device(zms_ence, [normal]) is None
    from xuqcal.options import OPTIONS

    monkeypatch.setitem(OPTIONS, "device", "cuda")
    assert simulation_on_gpu(zms_ence, normal) and not simulation_on_gpu(zms_ence, normp)
    assert simulation_device(with_cc, [normal]) == (
        "cuda (synthetic sets of normal on the GPU, the same streams)")
    assert simulation_device(zms_ence, [normal, normp]) == (
        "cuda (synthetic sets of normal on the GPU, the same streams; normp1.5 on the CPU)")


def test_without_numba_cuda(monkeypatch):
    """No numba.cuda at all (numba-cuda not installed): the GPU simulation refuses with the
    clear error of the GPU module (``set_options(device="cuda")`` is refused before that,
    ``tests/test_gpu_option.py``)."""
    import numba

    monkeypatch.setitem(sys.modules, "numba.cuda", None)  # the import fails
    monkeypatch.delattr(numba, "cuda", raising=False)
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        gpu.simulation_sums_gpu(np.uint64(1), 0, 2, K.NORMAL, 0.0, np.ones(5), 0)
