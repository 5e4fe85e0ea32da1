"""Coverage and power of the paired comparison (issue 24's acceptance): pairs of calibrated
models on shared points whose errors correlate (ρ = 0.8), compared by :func:`xuqcal.compare`
with the paired bootstrap and with independent bootstraps (``pairing="independent"``).

For each pair, the true difference of the distances to calibration is 0 (both models'
z-scores are standard normal). The study counts how often the 95 % interval of each
statistic's difference covers 0 (with its Wilson-cc interval) and the median ratio of the
paired interval's width to the independent one's (the power gain: a ratio of 0.7 is an interval
30 % narrower), for the differences of the distances to calibration and for the differences
of the values (``value_difference``). Run::

    python benchmarks/compare_power.py --pairs 400 --output benchmarks/measured/compare-power.json

``tests/test_compare.py::test_paired_coverage_and_power_study`` (slow marker) runs it with 400
pairs and checks the coverage of zms.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

import xuqcal
from xuqcal.core.intervals import wilson_interval

STATISTICS = ("zms", "rce", "ence")


def pair(m: int, rho: float, seed: int):
    """Two calibrated models on the same ``m`` points: uncertainties of NIG data (ν = 6), the
    second's varied by a lognormal factor; z-scores standard normal with correlation ``rho``."""
    rng = np.random.default_rng([seed, 24])
    u_a = xuqcal.synthetic.nig(m, nu=6, seed=seed).uE.values
    u_b = u_a * np.exp(rng.normal(0.0, 0.1, m))
    z1, z2 = rng.standard_normal(m), rng.standard_normal(m)
    return xuqcal.stack_datasets({
        "A": xuqcal.from_arrays(u_a * z1, u_a),
        "B": xuqcal.from_arrays(u_b * (rho * z1 + np.sqrt(1.0 - rho**2) * z2), u_b)},
        dim="model")


def study(pairs: int = 400, m: int = 1000, rho: float = 0.8, n_boot: int = 1000,
          level: float = 0.95, seed: int = 0) -> dict:
    """Coverage of 0 by the paired intervals and the width ratios, over ``pairs`` pairs."""
    covered = {key: 0 for key in STATISTICS}
    covered_values = {key: 0 for key in STATISTICS}
    ratios: dict[str, list[float]] = {key: [] for key in STATISTICS}
    value_ratios: dict[str, list[float]] = {key: [] for key in STATISTICS}
    start = time.perf_counter()
    for p in range(pairs):
        ds = pair(m, rho, seed + p)
        paired = xuqcal.compare(ds, list(STATISTICS), n_boot=n_boot, level=level,
                                seed=seed + p).sel(model="A", other="B")
        apart = xuqcal.compare(ds, list(STATISTICS), n_boot=n_boot, level=level,
                               seed=seed + p, pairing="independent").sel(model="A", other="B")
        for key in STATISTICS:
            one, two = paired.sel(statistic=key), apart.sel(statistic=key)
            covered[key] += bool(one.ci_low <= 0.0 <= one.ci_high)
            ratios[key].append(float((one.ci_high - one.ci_low) / (two.ci_high - two.ci_low)))
            covered_values[key] += bool(one.value_ci_low <= 0.0 <= one.value_ci_high)
            value_ratios[key].append(float((one.value_ci_high - one.value_ci_low)
                                           / (two.value_ci_high - two.value_ci_low)))
    rows = {}
    for key in STATISTICS:
        low, high = wilson_interval(covered[key], pairs)
        value_low, value_high = wilson_interval(covered_values[key], pairs)
        rows[key] = {"coverage": covered[key] / pairs, "coverage_low": float(low),
                     "coverage_high": float(high),
                     "median_width_ratio": float(np.median(ratios[key])),
                     "mean_width_ratio": float(np.mean(ratios[key])),
                     "value_coverage": covered_values[key] / pairs,
                     "value_coverage_low": float(value_low),
                     "value_coverage_high": float(value_high),
                     "value_median_width_ratio": float(np.median(value_ratios[key]))}
    return {"pairs": pairs, "M": m, "rho": rho, "n_boot": n_boot, "level": level,
            "seed": seed, "seconds": time.perf_counter() - start, "statistics": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    record = study(args.pairs, args.points, n_boot=args.n_boot)
    record.update(benchmark="compare_power", machine=platform.platform(),
                  python=platform.python_version())
    for key, row in record["statistics"].items():
        print(f"{key:>5}: distances: coverage {row['coverage']:.3f} "
              f"[{row['coverage_low']:.3f}, {row['coverage_high']:.3f}], median width paired "
              f"/ independent {row['median_width_ratio']:.2f}; values: coverage "
              f"{row['value_coverage']:.3f} [{row['value_coverage_low']:.3f}, "
              f"{row['value_coverage_high']:.3f}], width ratio "
              f"{row['value_median_width_ratio']:.2f}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
