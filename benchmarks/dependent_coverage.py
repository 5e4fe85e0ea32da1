"""Coverage of the ZMS interval on calibrated data with dependent points (issue 25): the iid
bootstrap against the dependent one, over many synthetic data sets.

* ``groups``: 200 groups × 50 points, z-scores with a random effect per group (ICC of Z = 0.3),
  the cluster bootstrap (``resample="cluster"``);
* ``ar1``: an AR(1) series of 5000 z-scores with ρ = 0.8 (unit variance), the circular and
  stationary block bootstraps with blocks of ``--block-length`` points;
* ``grid``: a 100 × 100 grid of z-scores, a Gaussian field with the separable exponential
  correlation ``exp(-(|Δlat| + |Δlon|) / --corr-range)`` (in cells; default 1.5), generated
  exactly by an AR(1) recursion along each axis (:func:`grid_set`), the circular tile
  bootstrap (``resample="circular", block={"lat": --tile, "lon": --tile}``, default 10)
  with BCa and percentile intervals. A tile bootstrap's variance of a mean falls short of
  the truth by about ``Σ|k|γ(k) / (b σ²)`` along each axis (the covariances across tiles
  that it loses; γ the autocovariance of Z² along the axis, σ² its sum, b the tile size)
  and by the variance of the grand mean (about one over the number of tiles). Z² is
  correlated as ``exp(-2 d / range)``: tiles of 10 cells hold several of its correlation
  lengths for a range of 1.5 cells, not for a range of 3, where no tile size suits
  100 × 100 cells (larger tiles leave too few of them; ``--corr-range 3`` measures it).

Every data set is calibrated: ZMS = 1 is the truth. The coverage is the fraction of sets whose
95 % BCa interval holds 1, with its Wilson-cc interval. Run::

    python benchmarks/dependent_coverage.py --sets 500 \
        --output benchmarks/measured/dependent-coverage.json
    python benchmarks/dependent_coverage.py --sets 500 --scenarios grid \
        --output benchmarks/measured/dependent-coverage-grid.json

``tests/test_dependent.py::test_dependent_coverage_study`` and ``test_grid_coverage_study``
(slow marker) run it.
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


def grid_set(seed: int, n: int = 100, corr_range: float = 1.5):
    """Calibrated data on an ``n × n`` grid whose z-scores are a stationary Gaussian field of
    unit variance with the separable exponential correlation ``exp(-(|Δlat| + |Δlon|) /
    corr_range)`` (exponential along each axis, in the L1 distance): an AR(1) recursion of
    ``ρ = exp(-1 / corr_range)`` along the rows, started from its stationary law, then along
    the columns, which is exact (no embedding or truncation). The points are shuffled: the
    tiles find them by their ``lat`` and ``lon``."""
    from scipy.signal import lfilter

    rng = np.random.default_rng([seed, 25, 3])
    rho = np.exp(-1.0 / corr_range)
    field = rng.normal(size=(n, n))
    for axis in (0, 1):
        start = [slice(None)] * 2
        start[axis] = 0
        field[tuple(start)] /= np.sqrt(1.0 - rho**2)  # x_0 ~ N(0, 1) after the scaling
        field = lfilter([np.sqrt(1.0 - rho**2)], [1.0, -rho], field, axis=axis)
    z = field.ravel()
    u = np.exp(rng.normal(0.0, 0.3, n * n))
    lat, lon = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float), indexing="ij")
    order = rng.permutation(n * n)
    return xuqcal.from_arrays((z * u)[order], u[order]).assign(
        lat=("sample", lat.ravel()[order]), lon=("sample", lon.ravel()[order]))


def covers(result) -> bool:
    return bool(result.ci_low.item() <= 1.0 <= result.ci_high.item())


#: The scenarios of :func:`study`.
SCENARIOS = ("groups", "ar1", "grid")


def study(sets: int = 500, n_boot: int = 1000, block_length: int = 50, seed: int = 0,
          scenarios: tuple[str, ...] = SCENARIOS, tile: int = 10,
          corr_range: float = 1.5) -> dict:
    """The coverage of ZMS = 1 by each scheme over ``sets`` data sets per scenario."""
    counts = {}
    if "groups" in scenarios:
        counts.update({"groups/iid": 0, "groups/cluster": 0})
    if "ar1" in scenarios:
        counts.update({"ar1/iid": 0, "ar1/circular": 0, "ar1/stationary": 0})
    if "grid" in scenarios:
        counts.update({"grid/iid": 0, "grid/circular": 0, "grid/circular-percentile": 0})
    start = time.perf_counter()
    for s in range(sets):
        if "grid" in scenarios:
            field = grid_set(seed + s, corr_range=corr_range)
            counts["grid/iid"] += covers(xuqcal.bootstrap(field, ["zms"], n_boot=n_boot,
                                                          seed=s).compute())
            for method, key in (("bca", "grid/circular"),
                                ("percentile", "grid/circular-percentile")):
                counts[key] += covers(xuqcal.bootstrap(
                    field, ["zms"], n_boot=n_boot, seed=s, method=method,
                    resample="circular", block={"lat": tile, "lon": tile}).compute())
        if "groups" in scenarios:
            ds = grouped_set(seed + s)
            counts["groups/iid"] += covers(xuqcal.bootstrap(ds, ["zms"], n_boot=n_boot,
                                                            seed=s).compute())
            counts["groups/cluster"] += covers(xuqcal.bootstrap(
                ds, ["zms"], n_boot=n_boot, seed=s, resample="cluster",
                groups="structure").compute())
        if "ar1" in scenarios:
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
    record = {"sets": sets, "n_boot": n_boot, "block_length": block_length, "level": 0.95,
              "seconds": time.perf_counter() - start, "coverage": rows,
              "scenarios": list(scenarios)}
    if "grid" in scenarios:
        record.update(grid={"shape": [100, 100], "tile": [tile, tile], "corr_range": corr_range,
                            "correlation": "exp(-(|dlat| + |dlon|) / corr_range): AR(1) "
                                           "along both axes (separable, exact)",
                            "uE": "lognormal, sigma 0.3, independent"})
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=500)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--block-length", type=int, default=50)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help="comma-separated, from " + ", ".join(SCENARIOS))
    parser.add_argument("--tile", type=int, default=10, help="tile size (cells) of grid")
    parser.add_argument("--corr-range", type=float, default=1.5,
                        help="correlation range (cells) of grid's z-scores")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    scenarios = tuple(name.strip() for name in args.scenarios.split(","))
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"--scenarios: unknown {sorted(unknown)}; from {', '.join(SCENARIOS)}")
    record = study(args.sets, args.n_boot, args.block_length, scenarios=scenarios,
                   tile=args.tile, corr_range=args.corr_range)
    record.update(benchmark="dependent_coverage", machine=platform.platform(),
                  python=platform.python_version())
    for key, row in record["coverage"].items():
        print(f"{key:>24}: coverage {row['coverage']:.3f} [{row['low']:.3f}, {row['high']:.3f}]")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
