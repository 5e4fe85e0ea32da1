"""The full-resolution size/bins cube (row cube_full).
"""


from __future__ import annotations

import time

import numpy as np
from harness import (
    Config,
    Measurement,
    register,
    time_runs,
)

CUBE_GRID = {"size": [2000, 4000, 8000, 12000, 16000], "n_bins": [10, 20, 30, 40, 50],
             "nu": [3, 4, 5, 6, 12, 24], "generators": ["normal", "t6"]}
CUBE_QUICK = {"size": [500, 1000], "n_bins": [5, 10], "nu": [3, 6],
              "generators": ["normal", "t6"]}


@register(
    "cube_full",
    "Full-resolution size/bins cube (M 5 values x N 5 x nu 6 x D 2, n_mc = 5 000, ence and "
    "zmse): <= 3 minutes on 2 cores; bit-identical results on a 2-worker dask.distributed "
    "local cluster",
    goal_seconds=180.0,
)
def bench_cube_full(cfg: Config) -> Measurement:
    from xuqcal.studies import cube

    grid, n_mc = (CUBE_QUICK, 100) if cfg.quick else (CUBE_GRID, 5000)
    cube.build(["ence"], size=[200], n_bins=[5], nu=[6], n_mc=10).compute()  # warm-up
    times, local_cube = time_runs(
        lambda: cube.build(["ence", "zmse"], **grid, n_mc=n_mc, seed=cfg.seed).compute(), 1)
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        start = time.perf_counter()
        remote = cube.build(["ence", "zmse"], **grid, n_mc=n_mc, seed=cfg.seed).compute()
        remote_seconds = time.perf_counter() - start
    # every value, coordinate and attribute but the build's time stamp ("created")
    identical = bool(local_cube.drop_attrs(deep=False).identical(remote.drop_attrs(deep=False))
                     and {k: v for k, v in local_cube.attrs.items() if k != "created"}
                     == {k: v for k, v in remote.attrs.items() if k != "created"})
    fit = cube.fit_sqrt(local_cube).sel(statistic="ence", generator="normal")
    return Measurement(
        xuqcal_times=times,
        baseline="none (goal in seconds); the same cube on a 2-worker LocalCluster",
        baseline_times=[],
        agreement={"checked": True, "ok": identical,
                   "reason": "threaded build and 2-worker dask.distributed build compared "
                             "with xarray's identical() (the attribute 'created', the time "
                             "of each build, aside)"},
        params={"grid": grid, "n_mc": n_mc, "cells": int(np.prod([len(v) for v in
                                                                  grid.values()])),
                "distributed_seconds": remote_seconds},
        notes=[f"result: bit-identical on dask.distributed: {identical} "
               f"({remote_seconds:.1f} s there); ENCE normal fit alpha = "
               f"{fit.alpha.item():.4f} +- {fit.alpha_se.item():.4f}, a = {fit.a.item():.4f}"],
    )
