"""The peak memory of the bootstrap of ZMS at M = 10^6, B = 10 000, measured in a child
process (row bootstrap_memory_1e6).
"""


from __future__ import annotations

import json
import sys

from harness import (
    Config,
    Measurement,
    register,
)

_MEMORY_CHILD = """
import json, sys, time
import xuqcal

def high_water_mb():
    # VmHWM belongs to this process's own address space (it starts afresh at exec); the
    # getrusage ru_maxrss of a child would include its parent's high-water mark at the fork
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")

m, n = int(sys.argv[1]), int(sys.argv[2])
ds = xuqcal.synthetic.nig(m, nu=6, seed=0)
before = high_water_mb()
start = time.perf_counter()
result = xuqcal.bootstrap(ds, ["zms"], n_boot=n, seed=0).compute()
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mb": high_water_mb(), "peak_before_mb": before,
                  "ci": [result.ci_low.item(), result.ci_high.item()]}))
"""


@register(
    "bootstrap_memory_1e6",
    "Bootstrap of ZMS with M = 10^6, B = 10 000: completes with peak memory <= 2 GB",
    goal_memory_mb=2048.0,
)
def bench_bootstrap_memory(cfg: Config) -> Measurement:
    import subprocess

    m, n = (100_000, 1000) if cfg.quick else (1_000_000, 10_000)
    # a fresh process, so that its peak resident memory is this computation's own
    done = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(m), str(n)],
                          capture_output=True, text=True, check=True)
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    replicate_x_sample_mb = m * n * 8 / 1e6
    return Measurement(
        xuqcal_times=[measured["seconds"]],
        baseline="none (goal in memory)",
        baseline_times=[],
        agreement={"checked": False, "ok": None, "reason": "memory row"},
        params={"M": m, "B": n, **measured},
        peak_memory_mb=measured["peak_mb"],
        notes=[f"result: peak RSS {measured['peak_mb']:.0f} MB of the whole process (data "
               f"and imports included; {measured['peak_before_mb']:.0f} MB before the "
               f"bootstrap) vs {replicate_x_sample_mb:.0f} MB for one replicate x sample "
               f"array; interval {measured['ci']}"],
    )
