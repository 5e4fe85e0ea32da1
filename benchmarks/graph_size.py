"""The graph of the nine-set one call (fixed counts, as ``rows/nine_sets.py``): how long the
call takes to hand its graph to Dask's scheduler, how many tasks the scheduler runs, and what
they are, by layer (the key's name without its token).

The serial start of the call (the nine slices' graphs built, then Dask's optimisation) bounds
its speed-up on many threads, and on a ``dask.distributed`` cluster every task costs the
scheduler about a millisecond: this records both for the work on them. A ``dask.callbacks``
callback records when the threaded scheduler receives the optimised graph (its ``start``) and
when the first task starts; the call itself runs as usual (``--repeat`` times, the first
excluded as a warm-up). Python's full garbage collections (generation 2) during each call
are recorded too: when each started, how long it took, and whether it ran before the scheduler
started (in the serial start); ``--freeze-gc`` freezes the objects left by the warm-up, so
that no such collection falls in the timed calls. The time from the last task's end to the
call's return (the results stacked) is the serial end.

With ``--cluster W,T`` the calls run on a ``dask.distributed.LocalCluster`` of W worker
processes of T threads instead, and each call's task stream is summarised: the span from the
first task's start to the last one's end, the workers' compute time by layer and their time
transferring data (the threaded scheduler's callbacks do not run there).

    python benchmarks/graph_size.py --out graph.json
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import platform
import sys
import time
import warnings
from pathlib import Path

from dask.callbacks import Callback

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import FOUR_STATISTICS, nine_set_options, revision, stacked_shared_sets

import xuqcal


def _layer(key) -> str:
    """A task key's layer name: the key's name without its token."""
    name = str(key[0] if isinstance(key, tuple) else key)
    return name.rsplit("-", 1)[0]


class _Moments(Callback):
    """When the scheduler starts (with the optimised graph), when its first task starts and
    when its last task ends."""

    def __init__(self):
        super().__init__()
        self.started = None
        self.first_task = None
        self.last_task_end = None
        self.layers = collections.Counter()

    def _start(self, dsk):
        if self.started is None:
            self.started = time.perf_counter()
            self.layers.update(_layer(key) for key in dsk)

    def _pretask(self, key, dsk, state):
        if self.first_task is None:
            self.first_task = time.perf_counter()

    def _posttask(self, key, result, dsk, state, worker_id):
        self.last_task_end = time.perf_counter()


class _FullCollections:
    """The full collections (generation 2) of Python's garbage collector: start and length."""

    def __init__(self):
        self.collections = []
        self._started = None

    def __call__(self, phase, info):
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            self.collections.append((self._started, time.perf_counter() - self._started))
            self._started = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="path of the JSON results")
    parser.add_argument("--repeat", type=int, default=4, help="calls (the first is a warm-up)")
    parser.add_argument("--cluster", help="W,T: a LocalCluster of W processes of T threads")
    parser.add_argument("--freeze-gc", action="store_true",
                        help="after the warm-up call, move every object to the collector's "
                             "permanent generation (gc.freeze): the timed calls then measure "
                             "the start without the full collections of the objects that "
                             "imports and compiled kernels leave (0.12 s each here)")
    args = parser.parse_args(argv)
    if args.cluster:
        return _on_a_cluster(args)
    _, stacked = stacked_shared_sets()
    options = nine_set_options()
    runs = []
    full = _FullCollections()
    gc.callbacks.append(full)
    for _ in range(args.repeat):
        moments = _Moments()
        full.collections.clear()
        with warnings.catch_warnings(), moments:
            warnings.simplefilter("ignore")
            called = time.perf_counter()
            xuqcal.validate(stacked, list(FOUR_STATISTICS), **options)
            ended = time.perf_counter()
        if args.freeze_gc and not runs:
            gc.collect()
            gc.freeze()
        runs.append({"wall_seconds": ended - called,
                     "scheduler_start_seconds": moments.started - called,
                     "first_task_seconds": moments.first_task - called,
                     "after_last_task_seconds": ended - moments.last_task_end,
                     "tasks": sum(moments.layers.values()),
                     "full_collections": [
                         {"started_seconds": start - called, "seconds": length,
                          "in_the_serial_start": start < moments.started}
                         for start, length in full.collections],
                     "layers": dict(moments.layers.most_common())})
        print({k: v for k, v in runs[-1].items() if k != "layers"}, flush=True)
    results = {"issue": 26, "data": "nine shared sets stacked along 'dataset', one call",
               "statistics": list(FOUR_STATISTICS), **options, "revision": revision(),
               "platform": platform.platform(), "gc_frozen_after_warm_up": args.freeze_gc,
               "warm_up": runs[0], "runs": runs[1:]}
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(f"written {args.out}")
    return 0


def _on_a_cluster(args) -> int:
    """The calls on a LocalCluster, each summarised from its task stream."""
    from dask.distributed import Client, LocalCluster, get_task_stream

    workers, threads = (int(part) for part in args.cluster.split(","))
    _, stacked = stacked_shared_sets()
    options = nine_set_options()
    runs = []
    with LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        for _ in range(args.repeat):
            with warnings.catch_warnings(), get_task_stream(client) as stream:
                warnings.simplefilter("ignore")
                called = time.perf_counter()
                xuqcal.validate(stacked, list(FOUR_STATISTICS), **options)
                ended = time.perf_counter()
            compute, other = collections.Counter(), collections.Counter()
            starts, stops = [], []
            for task in stream.data:
                for step in task["startstops"]:
                    starts.append(step["start"])
                    stops.append(step["stop"])
                    if step["action"] == "compute":
                        compute[_layer(task["key"])] += step["stop"] - step["start"]
                    else:
                        other[step["action"]] += step["stop"] - step["start"]
            runs.append({"wall_seconds": ended - called, "tasks": len(stream.data),
                         "span_seconds": max(stops) - min(starts),
                         "compute_seconds": sum(compute.values()),
                         "other_worker_seconds": dict(other),
                         "compute_seconds_by_layer": dict(compute.most_common())})
            print({k: v for k, v in runs[-1].items() if k != "compute_seconds_by_layer"},
                  flush=True)
    results = {"issue": 26, "data": "nine shared sets stacked along 'dataset', one call",
               "cluster": f"LocalCluster of {workers} processes x {threads} threads",
               "statistics": list(FOUR_STATISTICS), **options,
               "revision": revision(), "platform": platform.platform(),
               "warm_up": runs[0], "runs": runs[1:]}
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
