"""The CPU goal of issue 26: the bootstrap of zms at M = 2·10⁶, B = 10⁴, in ns per draw per core.

Times the whole public call ``xuqcal.bootstrap(ds, ["zms"], n_boot=B).compute()`` on M synthetic
NIG points (ν = 6, seed 0), with Dask's default threaded scheduler (one thread per core), after
one untimed warm-up call of a few replicates (Numba compile or cache load). The figure is

    wall seconds × cores / (B × M)

the cost of one draw per core with every core busy; it includes what the call does besides the
draws (preparing the data, the jackknife of the acceleration, the BCa summaries). The kernel
alone is measured by ``benchmarks/ab_kernels.py --threads``. Run::

    python benchmarks/bootstrap_per_draw.py --output benchmarks/measured/bootstrap-per-draw.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=2_000_000, help="M")
    parser.add_argument("--n-boot", type=int, default=10_000, help="B")
    parser.add_argument("--repeat", type=int, default=1, help="timed calls (best kept)")
    parser.add_argument("--goal", type=float, default=4.0, help="ns per draw per core")
    parser.add_argument("--output", type=Path, required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    import xuqcal

    ds = xuqcal.synthetic.nig(args.points, nu=6, seed=0)
    xuqcal.bootstrap(ds, ["zms"], n_boot=40).compute()  # compile or cache load
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = xuqcal.bootstrap(ds, ["zms"], n_boot=args.n_boot).compute()
        times.append(time.perf_counter() - start)
    cores = os.cpu_count() or 1
    seconds = min(times)
    ns = seconds * cores / (float(args.n_boot) * args.points) * 1e9
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                              capture_output=True).stdout.strip()
    record = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "revision": revision,
        "call": f'xuqcal.bootstrap(xuqcal.synthetic.nig({args.points}, nu=6, seed=0), ["zms"], '
                f"n_boot={args.n_boot}).compute()",
        "scheduler": "Dask's default (threads, one per core)", "cores": cores,
        "platform": platform.platform(), "load_average": os.getloadavg(),
        "seconds": times, "best_seconds": seconds,
        "ns_per_draw_per_core": ns, "goal_ns_per_draw_per_core": args.goal,
        "met": ns <= args.goal,
        "zms_interval": [float(result.ci_low.values.item()), float(result.ci_high.values.item())],
    }
    args.output.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{seconds:.2f} s: {ns:.2f} ns per draw per core on {cores} cores "
          f"(goal <= {args.goal}: {'met' if record['met'] else 'not met'})")
    print(f"written: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
