"""set_options(device="cuda"): the iid bootstrap of moment and binned statistics on the GPU
(issue 26).

Run on Numba's CUDA simulator in a subprocess (``NUMBA_ENABLE_CUDASIM=1`` must be set before
``numba.cuda`` is first imported); the suite never needs a GPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import xuqcal
from xuqcal.core.gpu import cuda_available

SCRIPT = textwrap.dedent("""
    import functools

    import numpy as np
    import xuqcal
    from xuqcal.core import gpu

    # the simulator runs every GPU thread as a Python thread: 8 threads per block instead of
    # 256 (the draws and sums do not depend on it, tests/test_gpu.py checks several counts)
    gpu.bootstrap_moments_gpu = functools.partial(gpu.bootstrap_moments_gpu, threads=8)
    gpu.bootstrap_statistics_gpu = functools.partial(gpu.bootstrap_statistics_gpu, threads=8)

    # small: the simulator runs every GPU thread as a Python thread (level 0.5: 4 replicates
    # suffice for an interval)
    ds = xuqcal.synthetic.nig(120, nu=6, seed=4)
    stats = ["zms", "rce", "nll", "zm"]
    options = dict(n_boot=8, seed=2, chunks=3, level=0.5)
    cpu = xuqcal.bootstrap(ds, stats, keep_replicates=True, **options).compute()
    # a binned statistic with its own ties: uE rounded (its bins then on the CPU)
    tied = ds.assign(uE=ds.uE.round(1))
    mixed_stats = ["zms", "cc", "ence", "zmse"]
    few = dict(options, n_boot=4, chunks=2)
    with xuqcal.set_options(device="cuda"):
        gpu = xuqcal.bootstrap(ds, stats, keep_replicates=True, **options).compute()
        mixed = xuqcal.bootstrap(ds, mixed_stats, n_bins=4, keep_replicates=True,
                                 **few).compute()
        mixed_tied = xuqcal.bootstrap(tied, ["cc", "ence"], n_bins=4, keep_replicates=True,
                                      **few).compute()
    plain = xuqcal.bootstrap(ds, mixed_stats, n_bins=4, keep_replicates=True, **few).compute()
    plain_tied = xuqcal.bootstrap(tied, ["cc", "ence"], n_bins=4, keep_replicates=True,
                                  **few).compute()
    # every number and every attribute but the device and the time of creation
    same_attrs = {k: v for k, v in cpu.attrs.items() if k != "created"}
    print("identical", bool(gpu.drop_attrs(deep=False).identical(cpu.drop_attrs(deep=False))
                            and {k: v for k, v in gpu.attrs.items()
                                 if k not in ("created", "device")} == same_attrs))
    print("device", gpu.attrs.get("device"), "|", cpu.attrs.get("device"))
    print("mixed_identical", bool(np.array_equal(mixed.replicates.values,
                                                  plain.replicates.values)),
          bool(np.array_equal(mixed.ci_low.values, plain.ci_low.values, equal_nan=True)))
    print("tied_identical", bool(np.array_equal(mixed_tied.replicates.values,
                                                 plain_tied.replicates.values)))
    print("mixed_device", mixed.attrs.get("device"))
""")


def test_the_gpu_bootstrap_draws_the_cpu_s_replicates_on_the_simulator():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=600)
    if "No module named 'numba.cuda'" in done.stderr:
        pytest.skip("numba.cuda (and its simulator) is not installed")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    # the sums in the CPU's order: every replicate and bound is the CPU's, bit for bit
    assert lines["identical"] == "True"
    assert lines["device"].startswith("cuda (moment statistics, cc, and binned ones of a "
                                      "binning variable without ties, on the GPU") \
        and lines["device"].endswith("| None")
    # zms, cc, ence and zmse on the GPU; with ties of uE, the bins on the CPU in the same
    # tasks: the CPU's replicates either way
    assert lines["mixed_identical"] == "True True"
    assert lines["tied_identical"] == "True"
    assert lines["mixed_device"].startswith("cuda (")


@pytest.mark.skipif(cuda_available(), reason="a GPU (or the simulator) is present")
def test_device_cuda_is_refused_without_a_gpu():
    with pytest.raises(ValueError, match="device: 'cuda' needs an NVIDIA GPU and numba-cuda"):
        xuqcal.set_options(device="cuda")
    assert xuqcal.get_options()["device"] == "cpu"
    with pytest.raises(ValueError,
                       match="device: expected where the bootstrap and simulation kernels run"):
        xuqcal.set_options(device="gpu")
