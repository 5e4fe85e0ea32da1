"""xuqcal.compare of 10 models x M = 10^5 shared points (row compare_10_models_1e5).
"""


from __future__ import annotations

import numpy as np
import xarray as xr
from harness import (
    Config,
    Measurement,
    register,
    time_runs,
)

import xuqcal


@register(
    "compare_10_models_1e5",
    "Issue 24: xuqcal.compare of 10 models x M = 10^5 shared points (zms, rce, ence, zmse; "
    "paired BCa, B = 2000; each model a synthetic NIG set whose errors correlate 0.8 with the "
    "first's) costs no more than the ten independent xuqcal.bootstrap calls of the same models, "
    "measured side by side in one run",
    goal_ratio=1.0,
)
def bench_compare_10_models(cfg: Config) -> Measurement:
    k, m, n = (3, 5_000, 200) if cfg.quick else (10, 100_000, 2000)
    statistics = ["zms", "rce", "ence", "zmse"]
    base = xuqcal.synthetic.nig(m, nu=6, seed=cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    z1 = base.E.values / base.uE.values
    models = {}
    for j in range(k):
        u = base.uE.values * np.exp(rng.normal(0.0, 0.1, m)) * (1.0 + 0.05 * j)
        z = z1 if j == 0 else 0.8 * z1 + 0.6 * rng.standard_normal(m)
        models[f"m{j}"] = xuqcal.from_arrays(u * z * (1.0 + 0.02 * j), u)
    stacked = xuqcal.stack_datasets(models, dim="model")

    def paired() -> xr.Dataset:
        return xuqcal.compare(stacked, statistics, n_boot=n, seed=cfg.seed)

    def independent() -> list[xr.Dataset]:
        return [xuqcal.bootstrap(ds, statistics, n_boot=n, seed=cfg.seed).compute()
                for ds in models.values()]

    paired()  # compile the kernels (not timed)
    ours_times, result = time_runs(paired, cfg.repeat)
    base_times, alone = time_runs(independent, cfg.repeat)
    # the estimates of compare are each model's own statistics: the same as bootstrap's
    same = all(np.allclose(result.estimate.sel(model=name).values, one.estimate.values,
                           rtol=1e-12, atol=0)
               for name, one in zip(models, alone, strict=True))
    narrower = []
    for j in range(1, k):
        pair = result.sel(model="m0", other=f"m{j}")
        narrower.append(float((pair.ci_high - pair.ci_low).sel(statistic="zms")))
    return Measurement(
        xuqcal_times=ours_times,
        baseline=f"{k} independent xuqcal.bootstrap calls (BCa, B = {n}), one per model",
        baseline_times=base_times,
        agreement={"checked": True, "ok": bool(same),
                   "reason": "each model's estimates equal those of its own bootstrap (rtol "
                             "1e-12)" if same else "estimates differ from bootstrap's"},
        params={"models": k, "M": m, "n_boot": n, "statistics": statistics},
        notes=[f"compare also gives the {k * (k - 1)} ordered pairs' intervals and the rank "
               f"probabilities; widths of the zms differences m0 - mj: "
               f"{', '.join(f'{w:.3g}' for w in narrower)}"],
    )
