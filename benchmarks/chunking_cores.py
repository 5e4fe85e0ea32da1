"""The default chunking of replicates on every core, side by side in one process.

``xuqcal.bootstrap(ds, ["zms", "rce"], n_boot=B)`` of M synthetic points with the default
chunks (``resampling.default_chunk``: two tasks per core) and with the former default (one task
of up to ``replicate_chunk`` = 1000 replicates, ``chunks=1000``), on Dask's threaded scheduler
with 1, 2 and all threads. The values are the same for every chunking (checked here).

    python benchmarks/chunking_cores.py --out chunking.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--b", type=int, default=1000)
    args = parser.parse_args()

    import dask
    import numpy as np

    import xuqcal
    from xuqcal.analysis.resampling import default_chunk

    ds = xuqcal.synthetic.nig(args.m, nu=6, seed=0).compute()
    stats = ["zms", "rce"]
    xuqcal.bootstrap(ds.isel(sample=slice(0, 2000)), stats, n_boot=200).compute()  # compile
    cores = os.cpu_count() or 1
    rows, reference = [], None
    for threads in sorted({1, 2, cores}):
        for label, chunks in (("default", None), ("one task of 1000", 1000)):
            if threads == 1 and chunks is None:
                continue  # one thread: the chunking changes nothing but the tasks' overhead
            with dask.config.set(scheduler="threads", num_workers=threads):
                start = time.perf_counter()
                result = xuqcal.bootstrap(ds, stats, n_boot=args.b, seed=1,
                                          chunks=chunks).compute()
                seconds = time.perf_counter() - start
            values = np.concatenate([result[v].values for v in ("ci_low", "ci_high", "se")])
            if reference is None:
                reference = values
            rows.append({"threads": threads, "chunks": label, "seconds": seconds,
                         "identical_to_first_row": bool(np.array_equal(values, reference))})
            print(rows[-1], flush=True)
    results = {"M": args.m, "B": args.b, "statistics": stats, "cpu_count": cores,
               "default_chunk": default_chunk(args.b), "platform": platform.platform(),
               "rows": rows}
    with open(args.out, "w") as handle:
        json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
