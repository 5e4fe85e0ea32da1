"""Out of core: M = 10^8 points in a chunked Zarr store on a 2-worker LocalCluster
(row out_of_core_1e8_zarr).
"""


from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from harness import (
    Config,
    Measurement,
    register,
)

import xuqcal


def _write_synthetic_zarr(path: Path, m: int, chunk: int) -> None:
    """A Zarr store of M synthetic calibrated NIG points (nu = 6), written chunk by chunk
    (seed = chunk number), stored in chunks of ``chunk`` points."""
    for k, start in enumerate(range(0, m, chunk)):
        part = xuqcal.synthetic.nig(min(chunk, m - start), nu=6, seed=k)[["E", "uE"]]
        part = part.drop_vars([c for c in part.coords]).chunk(sample=chunk)
        if k == 0:
            part.to_zarr(path, mode="w")
        else:
            part.to_zarr(path, append_dim="sample")


@register(
    "out_of_core_1e8_zarr",
    "Out of core: M = 10^8 points in a chunked Zarr store, read on a 2-worker LocalCluster "
    "with 1 GB per worker: zms, rce, nll with analytic intervals and 20-bin ENCE and ZMSE "
    "(xuqcal.reduce_statistics) complete, bit-identical for two chunkings (memory goal: "
    "the two workers' 2 x 1 GB)",
    goal_memory_mb=2000.0,
)
def bench_out_of_core_1e8_zarr(cfg: Config) -> Measurement:
    from distributed import Client, LocalCluster
    from distributed.diagnostics import MemorySampler

    m, store_chunk = (400_000, 100_000) if cfg.quick else (100_000_000, 2_500_000)
    chunkings = (store_chunk, 2 * store_chunk)
    statistics = ["zms", "rce", "nll", "ence", "zmse"]
    results, times, peaks = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "big.zarr"
        start = time.perf_counter()
        _write_synthetic_zarr(store, m, store_chunk)
        write_seconds = time.perf_counter() - start
        with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1GB",
                          processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            for chunk in chunkings:
                sampler = MemorySampler()
                start = time.perf_counter()
                with sampler.sample("run", client=client, interval=0.5):
                    ds = xuqcal.open_dataset(store, chunks={"sample": chunk})
                    result = xuqcal.reduce_statistics(ds, statistics, n_bins=20).compute()
                times.append(time.perf_counter() - start)
                peaks.append(float(sampler.to_pandas()["run"].max()) / 1e6)
                results.append(result)
            workers = len(client.scheduler_info()["workers"])
    identical = all(np.array_equal(results[0][name].values, r[name].values, equal_nan=True)
                    for r in results[1:] for name in ("estimate", "ci_low", "ci_high"))
    first = results[0]
    return Measurement(
        xuqcal_times=times,
        baseline="none (the goal is to complete within the memory limit)",
        baseline_times=[],
        agreement={"checked": True, "ok": bool(identical),
                   "reason": "estimates and bounds bit-identical between the chunkings "
                             f"{chunkings}" if identical else "results differ between "
                             "chunkings"},
        peak_memory_mb=max(peaks),
        params={"M": m, "store_chunk": store_chunk, "chunkings": list(chunkings),
                "workers_at_end": workers, "write_seconds": write_seconds,
                "cluster_memory_peak_mb": peaks,
                "estimate": dict(zip(statistics, first.estimate.values.tolist(), strict=True)),
                "ci_low": dict(zip(statistics, first.ci_low.values.tolist(), strict=True)),
                "ci_high": dict(zip(statistics, first.ci_high.values.tolist(), strict=True))},
        notes=[f"two chunkings {chunkings}: {', '.join(f'{t:.1f} s' for t in times)}; peak "
               f"memory of the 2 worker processes together (distributed MemorySampler): "
               f"{', '.join(f'{p:.0f} MB' for p in peaks)}; store written in "
               f"{write_seconds:.0f} s (not timed)"],
    )
