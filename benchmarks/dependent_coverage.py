"""Coverage of the ZMS interval on calibrated data with dependent points (issue 25): the iid
bootstrap against the dependent one, over many synthetic data sets.

* ``groups``: 200 groups × 50 points, z-scores with a random effect per group (ICC of Z = 0.3),
  the cluster bootstrap (``resample="cluster"``);
* ``ar1``: an AR(1) series of 5000 z-scores with ρ = 0.8 (unit variance), the circular and
  stationary block bootstraps with blocks of ``--block-length`` points.

Every data set is calibrated: ZMS = 1 is the truth. The coverage is the fraction of sets whose
95 % BCa interval holds 1, with its Wilson-cc interval. Run::

    python benchmarks/dependent_coverage.py --sets 500 \
        --output benchmarks/measured/dependent-coverage.json

``tests/test_dependent.py::test_dependent_coverage_study`` (slow marker) runs it.
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


def grouped_set(seed: int, n_groups: int = 200, size: int = 50, icc: float = 0.3):
    """Calibrated data whose z-scores share a normal random effect per group."""
    rng = np.random.default_rng([seed, 25, 1])
    z = np.repeat(rng.normal(0.0, np.sqrt(icc), n_groups), size) + rng.normal(
        0.0, np.sqrt(1.0 - icc), n_groups * size)
    u = np.exp(rng.normal(0.0, 0.3, n_groups * size))
    return xuqcal.from_arrays(z * u, u).assign(
        structure=("sample", np.repeat(np.arange(n_groups), size)))


def ar1_set(seed: int, m: int = 5000, rho: float = 0.8):
    """Calibrated data whose z-scores follow a stationary AR(1) series of unit variance."""
    rng = np.random.default_rng([seed, 25, 2])
    eps = rng.normal(0.0, np.sqrt(1.0 - rho**2), m)
    z = np.empty(m)
    z[0] = rng.normal()
    for i in range(1, m):
        z[i] = rho * z[i - 1] + eps[i]
    u = np.exp(rng.normal(0.0, 0.3, m))
    return xuqcal.from_arrays(z * u, u).assign(time=("sample", np.arange(m, dtype=float)))


def covers(result) -> bool:
    return bool(result.ci_low.item() <= 1.0 <= result.ci_high.item())


def study(sets: int = 500, n_boot: int = 1000, block_length: int = 50, seed: int = 0) -> dict:
    """The coverage of ZMS = 1 by each scheme over ``sets`` data sets per scenario."""
    counts = {"groups/iid": 0, "groups/cluster": 0, "ar1/iid": 0, "ar1/circular": 0,
              "ar1/stationary": 0}
    start = time.perf_counter()
    for s in range(sets):
        ds = grouped_set(seed + s)
        counts["groups/iid"] += covers(xuqcal.bootstrap(ds, ["zms"], n_boot=n_boot,
                                                        seed=s).compute())
        counts["groups/cluster"] += covers(xuqcal.bootstrap(
            ds, ["zms"], n_boot=n_boot, seed=s, resample="cluster",
            groups="structure").compute())
        series = ar1_set(seed + s)
        counts["ar1/iid"] += covers(xuqcal.bootstrap(series, ["zms"], n_boot=n_boot,
                                                     seed=s).compute())
        for scheme in ("circular", "stationary"):
            counts[f"ar1/{scheme}"] += covers(xuqcal.bootstrap(
                series, ["zms"], n_boot=n_boot, seed=s, resample=scheme, block="time",
                block_length=block_length).compute())
    rows = {}
    for key, n in counts.items():
        low, high = wilson_interval(n, sets)
        rows[key] = {"coverage": n / sets, "low": float(low), "high": float(high)}
    return {"sets": sets, "n_boot": n_boot, "block_length": block_length, "level": 0.95,
            "seconds": time.perf_counter() - start, "coverage": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=500)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--block-length", type=int, default=50)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    record = study(args.sets, args.n_boot, args.block_length)
    record.update(benchmark="dependent_coverage", machine=platform.platform(),
                  python=platform.python_version())
    for key, row in record["coverage"].items():
        print(f"{key:>16}: coverage {row['coverage']:.3f} [{row['low']:.3f}, {row['high']:.3f}]")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
