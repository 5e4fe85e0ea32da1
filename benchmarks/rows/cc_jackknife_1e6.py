"""The exact leave-one-out cc of M = 10^6 points against the per-point loop
(row cc_jackknife_1e6).
"""


from __future__ import annotations

import time

import numpy as np
import scipy
import scipy.stats
from harness import (
    Config,
    Measurement,
    register,
    time_runs,
)

import xuqcal


@register(
    "cc_jackknife_1e6",
    "Not a TARGETS.md row: exact leave-one-out cc (Spearman of |E| and uE) of all M = 10^6 "
    "points, the jackknife of cc's BCa interval: <= 5 s (so that it never dominates a BCa "
    "interval of cc), compared with re-ranking each reduced sample with scipy.stats.spearmanr",
    goal_seconds=5.0,
)
def bench_cc_jackknife(cfg: Config) -> Measurement:
    from xuqcal.analysis.resampling import _jackknife_block
    from xuqcal.core.statistics import PreparedData, codes_of, get_statistics

    m, k = (20_000, 5) if cfg.quick else (1_000_000, 20)
    ds = xuqcal.synthetic.nig(m, nu=6, seed=cfg.seed)
    # uE rounded to 3 significant digits: ties in uE, as in the QM9 and logP sets
    uE = np.asarray(ds.uE.values)
    scale = 10.0 ** (np.floor(np.log10(uE)) - 2)
    uE = np.round(uE / scale) * scale
    E = np.asarray(ds.E.values)
    codes = codes_of(get_statistics(["cc"]))

    def ours():
        prepared = PreparedData.from_arrays(E, uE, needs_bins=False)
        return _jackknife_block(prepared, codes, 0, m)[:, 0]

    _jackknife_block(PreparedData.from_arrays(E[:500], uE[:500], needs_bins=False), codes,
                     0, 500)  # compile / load the kernel, not timed
    times, values = time_runs(ours, cfg.repeat)
    order = np.argsort(uE, kind="stable")  # jackknife rows are in the order of uE
    e_sorted, u_sorted = np.abs(E[order]), uE[order]
    positions = np.random.default_rng(cfg.seed).choice(m, k, replace=False)
    start = time.perf_counter()
    theirs = np.array([
        scipy.stats.spearmanr(np.delete(e_sorted, q), np.delete(u_sorted, q)).statistic
        for q in positions])
    per_point = (time.perf_counter() - start) / k
    difference = float(np.max(np.abs(values[positions] - theirs)))
    spread = float(np.ptp(values))
    return Measurement(
        xuqcal_times=times,
        baseline=f"scipy.stats.spearmanr on each reduced sample ({k} points timed, "
                 f"extrapolated to M = {m})",
        baseline_times=[per_point * m],
        baseline_measured={"extrapolated": True, "points_timed": k,
                           "seconds_per_point": per_point,
                           "rule": f"{k} of {m} leave-one-out values timed, x {m // k}"},
        agreement={"checked": True, "ok": difference <= 1e-6 * spread,
                   "reason": f"max |difference| on the {k} timed points = {difference:.2e}, "
                             f"spread of the M values {spread:.2e}"},
        params={"M": m, "distinct_uE": int(np.unique(uE).size)},
        notes=[f"result: {m} leave-one-out values in {min(times):.2f} s (O(M log M) for all "
               f"points); the baseline takes {per_point:.3f} s per value"],
    )
