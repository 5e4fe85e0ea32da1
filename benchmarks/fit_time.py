"""tfit's fit (``xuqcal.core.generators.fitted_nu``: scipy's scaled F(1, ν) fit of Z²) with its
log-likelihood evaluated in shares on the cores (``coverage._scaled_f``) against scipy's own
evaluation, side by side in one process, alternating, on M synthetic NIG points: seconds, and
whether the fitted ν is the same bits.

    python benchmarks/fit_time.py --m 2000000 --out fit_time.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's xuqcal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    import numpy as np
    import scipy

    import xuqcal
    from xuqcal.core import coverage
    from xuqcal.core.generators import fitted_nu

    ds = xuqcal.synthetic.nig(args.m, nu=6, seed=0).compute()
    E, uE = ds.E.values, ds.uE.values
    shares = coverage.LOGPDF_SHARE
    coverage._scaled_f()  # its check against scipy's, once (not timed)
    seconds: dict[str, list[float]] = {"shares": [], "scipy": []}
    values: dict[str, float] = {}
    for _ in range(args.rounds):
        for label, share in (("scipy", 1 << 62), ("shares", shares)):
            coverage.LOGPDF_SHARE = share  # 2^62: fewer than two shares, scipy's evaluation
            start = time.perf_counter()
            values[label] = fitted_nu(E, uE)
            seconds[label].append(time.perf_counter() - start)
    coverage.LOGPDF_SHARE = shares
    results = {
        "issue": 26, "M": args.m, "cpu_count": os.cpu_count(), "platform": platform.platform(),
        "numpy": np.__version__, "scipy": scipy.__version__,
        "mirrors_scipy": not coverage._scaled_f()._scipy,
        "nu": values, "same_bits": values["shares"] == values["scipy"],
        "seconds": seconds,
        "best": {label: min(times) for label, times in seconds.items()},
        "ratio_scipy_over_shares_best": min(seconds["scipy"]) / min(seconds["shares"]),
    }
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps({k: results[k] for k in ("nu", "same_bits", "best",
                                               "ratio_scipy_over_shares_best")}))


if __name__ == "__main__":
    main()
