"""The BCa interval of ZMS against scipy.stats.bootstrap: QM9 (M = 13 885) and a synthetic
NIG set of M = 100 000 (rows zms_bca_qm9, zms_bca_nig).
"""


from __future__ import annotations

from harness import (
    QM9_COLUMNS,
    QM9_FILE,
    Config,
    Measurement,
    data_file,
    register,
    zms_bca_row,
)

import xuqcal


@register(
    "zms_bca_qm9",
    "BCa interval of ZMS, B = 10 000, M = 13 885 (QM9): >= 5x faster than "
    'scipy.stats.bootstrap(method="BCa", vectorized=True), same interval within Monte Carlo '
    "noise",
    goal_ratio=5.0,
    needs_data=(QM9_FILE,),
)
def bench_zms_bca_qm9(cfg: Config) -> Measurement:
    ds = xuqcal.read_csv(data_file(QM9_FILE), **QM9_COLUMNS)
    label = f"QM9 ({QM9_FILE})"
    n = 10_000
    if cfg.quick:
        # scipy's default (unbatched) jackknife holds M x M arrays: keep the smoke run small
        ds = ds.isel(sample=slice(0, 5000))
        label += ", first 5000 rows"
        n = 1000
    row = zms_bca_row(
        cfg, ds, n, primary_batch=None, extra_batches=(cfg.scipy_batch,), data_label=label
    )
    row.notes.append(
        "primary baseline is scipy's default call (batch=None: the M x (M-1) jackknife and the "
        "B x M resamples in one go, several GB); other_baselines holds the same call with a "
        "small batch, usually much faster for scipy"
    )
    return row


@register(
    "zms_bca_nig",
    "Same (BCa interval of ZMS, B = 10 000) at M = 100 000 (synthetic NIG, nu = 6): >= 30x "
    "faster than scipy (its jackknife is quadratic in M)",
    goal_ratio=30.0,
)
def bench_zms_bca_nig(cfg: Config) -> Measurement:
    m, n = (20_000, 1000) if cfg.quick else (100_000, 10_000)
    ds = xuqcal.synthetic.nig(m, nu=6, seed=cfg.seed)
    row = zms_bca_row(
        cfg,
        ds,
        n,
        primary_batch=cfg.scipy_batch,
        extra_batches=(),
        data_label=f"synthetic NIG, nu = 6, normal D, seed = {cfg.seed}",
    )
    row.notes.append(
        "scipy runs with batch (its unbatched jackknife would need ~17 M^2 bytes, 170 GB at "
        "M = 100 000)"
    )
    return row
