"""cc of simulated sets on the GPU (:func:`xuqcal.core.gpu._rank_sums`: a radix sort per set,
average ranks, the Spearman sums) on Numba's CUDA simulator, against the CPU's own functions.

As in ``tests/test_gpu.py``, the checks run in a subprocess with the simulator on (a few
hundred points). The keys are made to reach every branch of the kernel: exact ties (tie
groups), different values whose 32 highest bits of the span agree (runs ranked by counting),
a span wider than 32 bits and one narrower (fewer passes), passes whose digit every key
shares (skipped), zeros, and sets of fewer points than threads. The reference is the CPU's:
:func:`xuqcal.core.kernels._spearman_unit` (sums in point order) and
:func:`~xuqcal.core.kernels._spearman_unit_sorted` (exact sums), which
:func:`~xuqcal.core.kernels.simulate_block` calls. No GPU and no numba-cuda are needed.
"""

from __future__ import annotations

import numpy as np
from gpu_helpers import SIMULATOR_PREAMBLE, json_result, start

RANKS = SIMULATOR_PREAMBLE + """
from xuqcal.core import gpu
from xuqcal.core import kernels as K

rng = np.random.default_rng(11)
result = {}


def cpu_cc(values, centred, saa, sorted_walk):
    # the CPU's cc of one set of |E~| = values: a stable argsort and its tie flags, then the
    # walk simulate_block takes (sorted_walk: the exact sums of _spearman_unit_sorted)
    order = np.argsort(values, kind="stable").astype(np.int32)
    tie = np.zeros(values.size, dtype=np.bool_)
    tie[1:] = values[order][1:] == values[order][:-1]
    if sorted_walk:
        return K._spearman_unit_sorted(centred, saa, order, tie)
    return K._spearman_unit(centred, saa, order, tie, np.empty(values.size))


def sets(m):
    near = 1.0 + rng.integers(0, 64, m) * np.finfo(float).eps  # within 64 ulps: one run
    wide = rng.standard_normal(m) * 10.0 ** rng.integers(-30, 30, m)
    tied = rng.choice(rng.standard_normal(7), m)  # 7 values: long tie groups
    mixed = np.abs(rng.standard_normal(m))
    mixed[::5] = mixed[1::5][: mixed[::5].size]  # exact ties among distinct values
    mixed[::7] = 0.0
    mixed[3] = np.nextafter(mixed[4], 2.0)  # one unit in the last place apart
    constant = np.full(m, 2.5)
    return {"near": near, "wide": wide, "tied": tied, "mixed": mixed, "constant": constant}


compared = {}
for m, threads in ((300, 8), (37, 4), (5, 8)):
    uE = rng.uniform(0.5, 2.0, m).round(1)  # ties in uE too
    order_u = np.argsort(uE, kind="stable")
    tie_u = np.zeros(m, dtype=np.bool_)
    tie_u[1:] = uE[order_u][1:] == uE[order_u][:-1]
    centred, saa = gpu.centred_unit_ranks(order_u, tie_u)
    # the sums in point order are only exact for ranks: with other centred values (normal
    # numbers) every addition rounds, so only the CPU's order gives its bits
    rounding = rng.standard_normal(m)
    kinds = sets(m)
    values = np.stack(list(kinds.values()))
    for walk, weights, sequential in (("exact", centred, False),
                                      ("sequential", centred, True),
                                      ("rounding", rounding, True)):
        total = saa if walk != "rounding" else float(np.sum(rounding * rounding))
        with gpu._GPU_LOCK:
            gpu._rank_kernels()
            sums = gpu._rank_sums_locked(cuda.to_device(values.copy()),
                                         cuda.to_device(np.ones(m)), cuda.to_device(weights),
                                         sequential, threads)
        got = gpu.spearman_from_sums(np.stack([sums[:, 0], np.full(len(kinds), total),
                                               sums[:, 1]], axis=1))
        for k, name in enumerate(kinds):
            want = cpu_cc(np.abs(values[k]), weights, total, walk == "exact")
            compared[f"{m}/{threads}/{name}/{walk}"] = [
                float(got[k]), float(want),
                bool(np.array_equal(got[k], want, equal_nan=True))]
result["compared"] = compared

# the batches of replicates: a budget of a few rows per launch gives the same sums
from xuqcal.core.random import stream_key

m = 120
u = rng.uniform(0.5, 2.0, m)
centred, saa = gpu.centred_unit_ranks(np.argsort(u, kind="stable"), np.zeros(m, dtype=bool))
key = stream_key(5, "reference:normal")
whole = gpu.simulation_cc_sums_gpu(key, 2, 9, K.NORMAL, 0.0, u, 3, centred, threads=4)
gpu.CC_BYTES = 3 * gpu._CC_ROWS * 8 * m  # 3 replicates a batch
batched = gpu.simulation_cc_sums_gpu(key, 2, 9, K.NORMAL, 0.0, u, 3, centred, threads=4)
result["batches_identical"] = all(np.array_equal(a, b) for a, b in zip(whole, batched))
result["batch_shapes"] = [list(a.shape) for a in batched]
print(json.dumps(result))
"""


def test_simulated_cc_on_the_gpu_is_the_cpu_s_bit_for_bit():
    found = json_result(start(RANKS, simulator=True), timeout=600)
    compared = found["compared"]
    assert len(compared) == 3 * 5 * 3
    different = {k: v for k, v in compared.items() if not v[2]}
    assert not different, different
    # the sets are not degenerate: cc varies between them, and a constant |E~| has none
    assert len({round(v[1], 12) for k, v in compared.items() if "constant" not in k}) > 10
    assert all(np.isnan(v[1]) for k, v in compared.items() if "constant" in k)
    assert found["batches_identical"] is True
    assert found["batch_shapes"] == [[7, 3], [7, 3, 2], [7, 2]]
