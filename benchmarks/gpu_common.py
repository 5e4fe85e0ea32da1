"""What the GPU benchmarks (``gpu_bootstrap.py``, ``gpu_simulation.py``) share: xuqcal's core
modules imported without the package's ``__init__``, the data, the device and versions, the CPU
kernels' thread pool, and the start and end of a run (its JSON results).

Only NumPy, SciPy, Numba and numba-cuda are needed.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _import_core():
    """xuqcal's core modules from this checkout, without running ``xuqcal/__init__.py``."""
    if "xuqcal" not in sys.modules:
        package = types.ModuleType("xuqcal")
        package.__path__ = [str(ROOT / "xuqcal")]
        sys.modules["xuqcal"] = package
    from xuqcal.core import gpu
    from xuqcal.core import kernels as K
    from xuqcal.core.intervals import bca_interval
    from xuqcal.core.random import stream_key
    from xuqcal.core.statistics import STATISTICS, PreparedData

    return gpu, K, bca_interval, stream_key, STATISTICS, PreparedData


gpu, K, bca_interval, stream_key, STATISTICS, PreparedData = _import_core()


def nig_data(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Heavy-tailed uncertainties (uE² = 2 / Gamma(2)), errors 5 % over-dispersed."""
    rng = np.random.default_rng(seed)
    uE = np.sqrt(2.0 / rng.gamma(2.0, size=m))
    return 1.05 * uE * rng.standard_normal(m), uE


def relative(a: np.ndarray, b: np.ndarray) -> float:
    """The largest relative difference of ``a`` from ``b`` (equal values, NaN included, count
    0; a NaN against a number gives NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(all="ignore"):
        rel = np.where(same, 0.0, np.abs(a - b) / np.abs(b))
    return float(np.max(rel, initial=0.0))


def device_info() -> dict:
    from numba import config, cuda

    info = {"simulator": bool(getattr(config, "ENABLE_CUDASIM", False))}
    try:
        device = cuda.get_current_device()
        name = device.name
        info["name"] = name.decode() if isinstance(name, bytes) else str(name)
        info["compute_capability"] = list(device.compute_capability)
    except Exception as error:  # the simulator has no device object
        info["name"] = "CUDA simulator" if info["simulator"] else f"unknown ({error})"
    return info


def versions() -> dict:
    found = {"python": platform.python_version(), "numpy": np.__version__}
    for package in ("numba", "numba-cuda", "scipy", "cuda-bindings", "cuda-python"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def on_threads(block, n: int, threads: int) -> None:
    """``block(a, b)`` over chunks ``a .. b - 1`` of ``ceil(n / threads)`` replicates of
    ``0 .. n - 1`` on a pool of ``threads`` threads (as Dask's threaded scheduler; the CPU
    kernels release the GIL)."""
    size = max(1, math.ceil(n / threads))
    bounds = [(a, min(a + size, n)) for a in range(0, n, size)]
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda bound: block(*bound), bounds))


def start_run() -> tuple[dict, int, float]:
    """Refuses without a GPU (or the simulator); ``(results, threads, started)``: the results
    begun with the device, the versions, the CPU count and the platform (the device printed),
    ``os.cpu_count()`` and the start time."""
    if not gpu.cuda_available():
        raise SystemExit("no CUDA GPU (numba-cuda and a GPU, or NUMBA_ENABLE_CUDASIM=1)")
    threads = os.cpu_count() or 1
    started = time.perf_counter()
    results = {"device": device_info(), "versions": versions(), "cpu_count": threads,
               "platform": platform.platform()}
    print(f"device: {results['device']['name']}; {results['versions']}", flush=True)
    return results, threads, started


def write_results(results: dict, out: str, started: float) -> dict:
    """Adds the total time since ``started`` to ``results`` and writes them to ``out`` (JSON)."""
    results["total_seconds"] = time.perf_counter() - started
    Path(out).write_text(json.dumps(results, indent=2))
    print(f"written {out} ({results['total_seconds']:.1f} s)")
    return results
