"""The BCa intervals of zms, cc, ence and zmse together on QM9 against a per-replicate
NumPy/SciPy loop (row binned_bca_qm9).
"""


from __future__ import annotations

from typing import Any

import numpy as np
from harness import (
    FOUR_STATISTICS,
    N_BINS,
    QM9_COLUMNS,
    QM9_FILE,
    Config,
    Measurement,
    bca_bound_tolerances,
    bounds_agreement,
    data_file,
    register,
    time_runs,
    timed_loop_baseline,
)

import xuqcal


@register(
    "binned_bca_qm9",
    "BCa intervals of zms, cc, ence, zmse (20 bins) together, B = 5 000, QM9 "
    "(M = 13 885): <= 5 s, and >= 20x faster than a straightforward per-replicate NumPy loop",
    goal_ratio=20.0,
    goal_seconds=5.0,
    needs_data=(QM9_FILE,),
)
def bench_binned_bca_qm9(cfg: Config) -> Measurement:
    level = 0.95
    statistics = list(FOUR_STATISTICS)
    ds = xuqcal.read_csv(data_file(QM9_FILE), **QM9_COLUMNS)
    label = f"QM9 ({QM9_FILE})"
    n = 5000
    if cfg.quick:
        ds = ds.isel(sample=slice(0, 2000))
        label += ", first 2000 rows"
        n = 300
    m = ds.sizes["sample"]
    E, U = np.ascontiguousarray(ds.E.values), np.ascontiguousarray(ds.uE.values)

    ours_times, res = time_runs(
        lambda: xuqcal.bootstrap(
            ds, statistics, n_boot=n, method="bca", level=level, seed=cfg.seed, n_bins=N_BINS
        ).compute(),
        cfg.repeat,
    )
    base_times, base, measured = timed_loop_baseline(cfg, E, U, n, level=level, n_bins=N_BINS)
    if base.ci_low is None:
        agreement: dict[str, Any] = {
            "checked": False,
            "ok": None,
            "reason": (
                "the baseline was timed on a subset (no interval); --quick (or a larger "
                "--baseline-limit) runs it in full and compares the intervals"
            ),
        }
    else:
        # the same call again (not timed; bit-identical by design) for xuqcal's replicates
        kept = xuqcal.bootstrap(
            ds, statistics, n_boot=n, method="bca", level=level, seed=cfg.seed, n_bins=N_BINS,
            keep_replicates=True,
        ).compute()  # fmt: skip
        rule = (
            "per bound: |delta| <= max(0.01, 5 * sqrt(sd_xuqcal^2 + sd_baseline^2)), sd = MC sd "
            "of each run's quantile at the bound's BCa probability, from its own replicates "
            "(half the spread of the quantiles at p +- sqrt(p (1 - p) / B), p clipped to "
            "[1/B, 1 - 1/B])"
        )
        per_statistic = []
        for k, key in enumerate(statistics):
            one = bounds_agreement(
                key,
                (float(res.ci_low.sel(statistic=key)), float(res.ci_high.sel(statistic=key))),
                (float(base.ci_low[k]), float(base.ci_high[k])),
                xuqcal_se=float(res.se.sel(statistic=key)),
                baseline_se=float(base.se[k]),
                xuqcal_estimate=float(res.estimate.sel(statistic=key)),
                baseline_estimate=float(base.estimate[k]),
                n=n,
                level=level,
                bound_tolerances=bca_bound_tolerances(
                    kept.replicates.sel(statistic=key).values, base.values[:, k], base.alphas[k]
                ),
                tolerance_rule=rule,
            )
            one["bca_probabilities"] = base.alphas[k].tolist()
            one["untimed_rerun_identical"] = bool(
                float(kept.ci_low.sel(statistic=key)) == one["xuqcal_interval"][0]
                and float(kept.ci_high.sel(statistic=key)) == one["xuqcal_interval"][1]
            )
            per_statistic.append(one)
        agreement = {
            "checked": True,
            "ok": all(a["ok"] for a in per_statistic),
            "statistics": per_statistic,
        }
    row = Measurement(
        xuqcal_times=ours_times,
        baseline=(
            "per-replicate NumPy/SciPy loop (benchmarks/harness.py: loop_bca): "
            "rng.integers(0, M, M) per replicate, the four statistics from scratch "
            "(stable argsort by uE, "
            "np.add.reduceat bins, scipy.stats.spearmanr), jackknife over the M np.delete "
            "leave-one-out samples, BCa formula"
        ),
        baseline_times=base_times,
        agreement=agreement,
        params={
            "data": label,
            "M": m,
            "B": n,
            "statistics": statistics,
            "n_bins": N_BINS,
            "level": level,
            "seed": cfg.seed,
        },
        baseline_measured=measured,
    )
    row.notes.append(
        "xuqcal: xuqcal.bootstrap(ds, ['zms', 'cc', 'ence', 'zmse'], n_boot=B, method='bca', "
        "n_bins=20).compute() on Dask's threaded scheduler (2 cores); the loop baseline is "
        "single-threaded, as written by a user"
    )
    if measured["extrapolated"]:
        row.notes.append(
            f"baseline time extrapolated from {measured['replicates']} replicates and "
            f"{measured['jackknife_values']} leave-one-out values (see baseline_measured)"
        )
    return row
