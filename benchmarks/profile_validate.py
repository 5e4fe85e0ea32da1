"""Where the wall time of one ``xuqcal.validate`` goes: the default validate (``n_boot`` and
``n_mc`` "auto") of M synthetic NIG points under ``cProfile``, on the CPU or the GPU.

cProfile sees the calling thread only: the Dask threads' kernels show as the time the caller
waits in ``compute``, which is what the phases below measure (preparing the data, the
jackknife, each bootstrap and simulation round, the summaries, the verdicts). Written to JSON:
the wall time, the auto counts, and the functions of xuqcal, Dask and SciPy with the largest
cumulative times (seconds, calls).

    python benchmarks/profile_validate.py --m 2000000 --device cuda --out profile.json
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import time
from pathlib import Path

WITHOUT_CC = ("zms", "rce", "zm", "zv", "nll", "ence", "zmse")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--without-cc", action="store_true",
                        help="the statistics the GPU simulates (no cc)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()

    import dask

    import xuqcal

    statistics = list(WITHOUT_CC) if args.without_cc else None
    started = time.perf_counter()
    small = xuqcal.synthetic.nig(3000, nu=6, seed=1).compute()
    with xuqcal.set_options(device=args.device):  # compile or load every kernel (not timed)
        xuqcal.validate(small, statistics, n_boot=200, n_mc=200)
    warm_up = time.perf_counter() - started
    ds = xuqcal.synthetic.nig(args.m, nu=6, seed=0).compute()
    profile = cProfile.Profile()
    with dask.config.set(scheduler="threads", num_workers=args.threads), \
            xuqcal.set_options(device=args.device):
        t = time.perf_counter()
        cpu = time.process_time()
        profile.enable()
        result = xuqcal.validate(ds, statistics)
        profile.disable()
        seconds = time.perf_counter() - t
        cpu = time.process_time() - cpu
    stats = pstats.Stats(profile)
    rows = []
    for (filename, line, name), (_, calls, _, cumulative, _) in stats.stats.items():
        if any(part in filename for part in ("xuqcal", "dask", "scipy", "numba_cuda")):
            short = filename.split("site-packages/")[-1].split("/main/")[-1]
            rows.append({"function": f"{short}:{line}({name})", "calls": calls,
                         "cumulative_seconds": cumulative})
    rows.sort(key=lambda row: -row["cumulative_seconds"])
    results = {
        "issue": 26, "M": args.m, "device": args.device, "threads": args.threads,
        "statistics": statistics or "default", "cpu_count": os.cpu_count(),
        "platform": platform.platform(), "warm_up_seconds": warm_up, "seconds": seconds,
        "cpu_seconds": cpu, "n_boot": int(result.attrs["n_boot"]),
        "n_mc": int(result.attrs["n_mc"]),
        "verdicts": [str(v) for v in result.verdict.values],
        "simulation_device": result.attrs.get("simulation_device"),
        "top_cumulative": rows[:args.top],
    }
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(f"validate M = {args.m} on {args.device}: {seconds:.1f} s (CPU {cpu:.1f} s); "
          f"n_boot {results['n_boot']}, n_mc {results['n_mc']}", flush=True)
    for row in rows[:25]:
        print(f"{row['cumulative_seconds']:8.2f} s {row['calls']:6d}  {row['function']}")


if __name__ == "__main__":
    main()
