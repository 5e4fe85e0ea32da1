"""LZMS: 100 bins x 5 000 BCa replicates on QM9 (row lzms_qm9).
"""


from __future__ import annotations

from harness import (
    QM9_COLUMNS,
    QM9_FILE,
    Config,
    Measurement,
    data_file,
    register,
    time_runs,
)

import xuqcal


@register(
    "lzms_qm9",
    "LZMS, 100 bins x 5 000 BCa replicates, QM9 (M = 13 885): <= 3 s",
    goal_seconds=3.0,
    needs_data=(QM9_FILE,),
)
def bench_lzms_qm9(cfg: Config) -> Measurement:
    from xuqcal.analysis.local import local

    ds = xuqcal.read_csv(data_file(QM9_FILE), **QM9_COLUMNS)
    n = 500 if cfg.quick else 5000
    local(ds, "zms", n_bins=10, n_boot=50)  # compile / load the kernels, not timed
    times, result = time_runs(lambda: local(ds, "zms", n_bins=100, n_boot=n, seed=cfg.seed),
                              cfg.repeat)
    return Measurement(
        xuqcal_times=times,
        baseline="none (goal in seconds)",
        baseline_times=[],
        agreement={"checked": False, "ok": None,
                   "reason": "no baseline; tests/test_local.py checks per-bin BCa against "
                             "scipy.stats.bootstrap"},
        params={"n_bins": 100, "n_replicates": n, "M": ds.sizes["sample"]},
        notes=[f"result: f_v = {result.fraction_valid.item():.2f} "
               f"[{result.fraction_valid_low.item():.2f}, "
               f"{result.fraction_valid_high.item():.2f}]"],
    )
