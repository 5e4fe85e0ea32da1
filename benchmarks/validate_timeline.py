"""Where the thread time of one default ``xuqcal.validate`` goes, kernel by kernel: every call
of the bootstrap, simulation and jackknife kernels timed in the thread that runs it.

The kernels of :mod:`xuqcal.core.kernels` that the analysis layer calls by attribute
(``moment_replicates_block``, ``bootstrap_block``, ``simulate_block`` and the jackknife
kernels) are wrapped for the run: each call's thread, start, end, replicates and generator are
recorded. Written to JSON: the wall time, the thread-seconds in each kernel (and per generator
for the simulation), their share of ``threads × wall``, and every call. cProfile
(``profile_validate.py``) sees only the caller's waits; this sees the work.

    python benchmarks/validate_timeline.py --m 2000000 --out timeline.json
    python benchmarks/validate_timeline.py --nine-sets --out nine-sets-timeline.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import threading
import time
from collections import defaultdict
from pathlib import Path

#: kernel -> how to read (replicates, generator, points or None) from its positional arguments
KERNELS = {
    "moment_replicates_block": lambda a: (int(a[2] - a[1]), None, None),
    "bootstrap_block": lambda a: (int(a[2] - a[1]), None, None),
    "simulate_block": lambda a: (int(a[4] - a[3]), f"{int(a[1])}:{float(a[2]):.6g}",
                                 int(a[7].shape[0])),
    "jackknife_moments": lambda a: (0, None, None),
    "jackknife_binned": lambda a: (0, None, None),
    "jackknife_spearman": lambda a: (0, None, None),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="path of the JSON results")
    parser.add_argument("--derive", type=Path,
                        help="add the fields computed from the calls to this record and stop")
    parser.add_argument("--m", type=int, default=2_000_000)
    parser.add_argument("--nine-sets", action="store_true",
                        help="time the nine-set one call of rows/nine_sets.py (fixed counts) "
                             "instead of a default validate of --m NIG points")
    args = parser.parse_args()
    if args.derive is not None:
        add_derived_fields(args.derive)
        return
    if args.out is None:
        parser.error("--out is required")

    import xuqcal
    from xuqcal.core import kernels as K

    calls = []
    lock = threading.Lock()
    started = None

    def wrapped(name, kernel, describe):
        def call(*arguments):
            begin = time.perf_counter()
            result = kernel(*arguments)
            end = time.perf_counter()
            replicates, generator, points = describe(arguments)
            with lock:
                calls.append({"kernel": name, "thread": threading.get_ident(),
                              "start": begin - started, "end": end - started,
                              "replicates": replicates, "generator": generator,
                              "points": points})
            return result
        return call

    small = xuqcal.synthetic.nig(3000, nu=6, seed=1).compute()
    xuqcal.validate(small, n_boot=200, n_mc=200)  # compile or load every kernel (not timed)
    originals = {name: getattr(K, name) for name in KERNELS}
    for name, describe in KERNELS.items():
        setattr(K, name, wrapped(name, originals[name], describe))
    if args.nine_sets:
        from harness import FOUR_STATISTICS, nine_set_options, stacked_shared_sets

        _, ds = stacked_shared_sets()
        arguments = (list(FOUR_STATISTICS),)
        options = nine_set_options()
    else:
        ds = xuqcal.synthetic.nig(args.m, nu=6, seed=0).compute()
        arguments, options = (), {}
    try:
        started = time.perf_counter()
        result = xuqcal.validate(ds, *arguments, **options)
        wall = time.perf_counter() - started
    finally:
        for name, kernel in originals.items():
            setattr(K, name, kernel)
    threads = os.cpu_count()
    per_kernel = defaultdict(float)
    per_generator = defaultdict(lambda: [0.0, 0, 0])
    for c in calls:
        seconds = c["end"] - c["start"]
        per_kernel[c["kernel"]] += seconds
        if c["generator"] is not None:
            per_generator[c["generator"]][0] += seconds
            per_generator[c["generator"]][1] += c["replicates"]
            per_generator[c["generator"]][2] += c["replicates"] * c["points"]
    from harness import revision

    record = {
        "issue": 26, "data": "nine shared sets, one call" if args.nine_sets else "NIG(6)",
        "M": None if args.nine_sets else args.m, "threads": threads, "wall_seconds": wall,
        "revision": revision(),  # of the xuqcal that ran
        "platform": platform.platform(),
        "n_boot": int(result.attrs["n_boot"]), "n_mc": int(result.attrs["n_mc"]),
        "nu_tfit": float(result["nu_tfit"]) if "nu_tfit" in result else None,
        "kernel_thread_seconds": dict(per_kernel),
        "kernel_share_of_threads_x_wall": sum(per_kernel.values()) / (threads * wall),
        # the serial start: the graph built and the first tasks scheduled, no kernel running
        "first_kernel_start_seconds": min((c["start"] for c in calls), default=None),
        # every span of at least IDLE_SPAN seconds when no kernel runs (serial work: the data
        # prepared, the accelerations, a round's summaries), and after the last kernel
        "spans_without_kernel": _spans_without_kernel(calls, wall),
        # how long no kernel, one kernel, and as many kernels as threads ran: the time one
        # kernel runs alone, with threads idle, is serial work too (cc's jackknife, a round's
        # last task)
        "seconds_by_kernels_running": _seconds_by_kernels_running(calls, wall, threads),
        "simulation_by_generator": {
            g: {"thread_seconds": s, "replicates": n, "points": p,
                "ns_per_point_per_thread": s / p * 1e9 if p else None}
            for g, (s, n, p) in per_generator.items()},
        "calls": calls,
    }
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "calls"}, indent=1))


def _seconds_by_kernels_running(calls: list[dict], wall: float, threads: int
                                ) -> dict[str, float]:
    """Seconds of the call during which 0, 1, ... ``threads`` or more kernels ran."""
    seconds = [0.0] * (threads + 1)
    for begin, end, running in _intervals(calls, wall):
        seconds[min(running, threads)] += end - begin
    return {(str(k) if k < threads else f"{k}+"): s for k, s in enumerate(seconds)}


def _intervals(calls: list[dict], wall: float):
    """``(begin, end, kernels running)`` of each interval between two consecutive starts or
    ends of the kernels' calls, from the call's start to its end."""
    events = sorted([(c["start"], 1) for c in calls] + [(c["end"], -1) for c in calls])
    running, last = 0, 0.0
    for moment, change in [*events, (wall, 0)]:
        yield last, moment, running
        running += change
        last = moment


def add_derived_fields(path: Path) -> None:
    """Add ``seconds_by_kernels_running`` to a record written before it existed, from its
    ``calls`` (``--derive RECORD``)."""
    record = json.loads(path.read_text())
    record["seconds_by_kernels_running"] = _seconds_by_kernels_running(
        record["calls"], record["wall_seconds"], record["threads"])
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["seconds_by_kernels_running"]))


#: The shortest span without a running kernel that the record lists, in seconds.
IDLE_SPAN = 0.05


def _spans_without_kernel(calls: list[dict], wall: float) -> list[list[float]]:
    """``[start, end]`` of each span of at least :data:`IDLE_SPAN` s in which no kernel runs,
    from the call's start to its end."""
    return [[begin, end] for begin, end, running in _intervals(calls, wall)
            if running == 0 and end - begin >= IDLE_SPAN]


if __name__ == "__main__":
    main()
