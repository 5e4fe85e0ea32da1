"""Memory estimates against measured peaks (issue 23): the bytes per point that
:mod:`xuqcal.core.memory` assumes for an analysis that holds all the points in one task
(``TASK_BYTES_PER_POINT`` and ``JACKKNIFE_BYTES_PER_STATISTIC`` per statistic), and those per
task of :func:`xuqcal.reduce_statistics` (a Zarr chunk and the temporaries of a piece), side by
side with the peak RSS each analysis reaches over its data, in a fresh process under the
synchronous scheduler (a thread samples the RSS every 0.5 ms). Run::

    python benchmarks/memory_estimates.py --points 1000000 \
        --output benchmarks/measured/memory-estimates.json

``tests/test_faults_memory.py`` checks the same inequality, at 200 000 points, on every run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

#: (analysis, statistics) measured in memory
IN_MEMORY = (("bootstrap", "zms"), ("bootstrap", "zms,cc,ence,zmse,rce,nll"),
             ("simulate", "zms"), ("simulate", "zms,cc,ence,zmse,rce,nll"),
             ("validate", "zms,rce,cc,ence,zmse"))

_SCRIPT = textwrap.dedent("""
    import gc, json, sys, threading, time, warnings
    import dask, psutil, xarray as xr
    import xuqcal
    from xuqcal.analysis import outofcore
    from xuqcal.core import memory
    m, what, statistics = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
    ds = xuqcal.synthetic.nig(m, nu=6, seed=0).compute()
    if what == "write":  # the store, written in a process of its own (its memory is freed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.chunk(sample=int(sys.argv[5])).to_zarr(sys.argv[4], mode="w")
        sys.exit()
    if what == "reduce_statistics":
        store, chunk = sys.argv[4], int(sys.argv[5])
        del ds
        data = xr.open_zarr(store)
        xuqcal.reduce_statistics(xuqcal.synthetic.nig(5000, nu=6, seed=0).chunk(sample=1000),
                                 statistics).compute()  # compile
        estimate = (chunk * 2 * outofcore.BLOCK_BYTES_PER_VALUE
                    + outofcore.TASK_OVERHEAD_BYTES) / chunk
    else:
        count = int(sys.argv[4]) if len(sys.argv) > 4 else 100  # n_boot and n_mc
        # compile the kernels and import what the analysis imports on first use (scipy.stats:
        # tens of MB that are not the analysis' memory) before measuring
        small = ds.isel(sample=slice(0, 2000))
        xuqcal.bootstrap(small, statistics, n_boot=50).compute()
        if what in ("simulate", "validate"):
            xuqcal.validate(small, statistics, n_boot=50, n_mc=50).compute()
        estimate = memory.task_bytes_per_point(
            len(statistics), jackknife=what in ("bootstrap", "validate"),
            simulation=what in ("simulate", "validate"))
        chunk = m
    gc.collect()
    process = psutil.Process()
    base = peak = process.memory_info().rss
    done = False

    def watch():
        global peak
        while not done:
            peak = max(peak, process.memory_info().rss)
            time.sleep(0.0005)

    thread = threading.Thread(target=watch)
    thread.start()
    start = time.perf_counter()
    with dask.config.set(scheduler="synchronous"):
        if what == "bootstrap":
            xuqcal.bootstrap(ds, statistics, n_boot=count).compute()
        elif what == "simulate":
            xuqcal.simulate(ds, statistics, n_mc=count).compute()
        elif what == "validate":
            xuqcal.validate(ds, statistics, n_boot=count, n_mc=count).compute()
        else:
            xuqcal.reduce_statistics(data, statistics).compute()
    seconds = time.perf_counter() - start
    done = True
    thread.join()
    print(json.dumps({"peak_bytes_over_data": peak - base,
                      "measured_bytes_per_point": (peak - base) / chunk,
                      "estimated_bytes_per_point": estimate, "seconds": seconds}))
""")


def measure(points: int, what: str, statistics: str, *extra: str) -> dict:
    """One analysis in a fresh process: its peak RSS over the data and the estimate.
    ``extra``: the replicates of an in-memory analysis (default 100), or the Zarr store and
    its chunk of ``reduce_statistics``."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "peak.py"
        script.write_text(_SCRIPT)
        root = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get(
            "PYTHONPATH", "")])}
        extra = tuple(e.replace("{folder}", folder) for e in extra)
        if what == "reduce_statistics":
            subprocess.run([sys.executable, str(script), str(points), "write", statistics,
                            *extra], capture_output=True, text=True, check=True, env=env)
        done = subprocess.run([sys.executable, str(script), str(points), what, statistics,
                               *extra], capture_output=True, text=True, check=True, env=env)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["ratio_estimate_to_measured"] = (figures["estimated_bytes_per_point"]
                                             / figures["measured_bytes_per_point"])
    return {"analysis": what, "statistics": statistics, "points": points, **figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    rows = [measure(args.points, what, statistics) for what, statistics in IN_MEMORY]
    for chunk in (args.points, args.points // 4):
        rows.append(measure(args.points, "reduce_statistics", "zms,ence", "{folder}/x.zarr",
                            str(chunk)))
        rows[-1]["chunk"] = chunk
    for row in rows:
        print(f"{row['analysis']:>18} {row['statistics']:<28} "
              f"measured {row['measured_bytes_per_point']:8.1f} B/pt  "
              f"estimated {row['estimated_bytes_per_point']:8.1f} B/pt  "
              f"ratio {row['ratio_estimate_to_measured']:.2f}")
    record = {"benchmark": "memory_estimates", "machine": platform.platform(),
              "python": platform.python_version(), "cpu_count": os.cpu_count(), "rows": rows}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
