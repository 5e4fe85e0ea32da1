"""A/B timing of two revisions of xuqcal on the same machine, interleaved.

A benchmark row that moves between two days may be the code or the machine (a 2-core machine
shared with other work). This script tells them apart: it checks out the ``--before`` revision
into a temporary git worktree, then runs each workload alternately with the old and the current
source tree (``PYTHONPATH``), ``--rounds`` times, each run in a fresh process (the two versions
cannot share one process: same module names), after an untimed warm-up (Numba compile or cache
load). The JSON holds every time, and the summary the best and the median of each side and
their ratio (after / before).

Usage::

    python benchmarks/ab_revisions.py --before 09eaa50 --output benchmarks/measured/ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: name -> (setup code, timed expression); ``shared`` is the shared data folder.
WORKLOADS = {
    "bootstrap_zms_nig_1e5": (
        "ds = xuqcal.synthetic.nig(100_000, nu=6, seed=0)",
        'xuqcal.bootstrap(ds, ["zms"], **replicates("n_boot", 10_000)).compute()',
    ),
    "reference_qm9_cc_ence_zmse": (
        "ds = xuqcal.read_csv(shared + '/BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv', "
        "E='E_ - prediction', uE='sqrt(uncertainty_total)')",
        'simulate(ds, ["cc", "ence", "zmse"], **generators(["normal", "t6"]), '
        '**replicates("n_mc", 10_000)).compute()',
    ),
    "validate_qm9_four_statistics": (
        "ds = xuqcal.read_csv(shared + '/BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv', "
        "E='E_ - prediction', uE='sqrt(uncertainty_total)')",
        'xuqcal.validate(ds, ["zms", "cc", "ence", "zmse"], n_boot=5000, n_mc=10_000)',
    ),
    # the row nine_sets_one_call (issue 13/26): the nine shared sets stacked along 'dataset',
    # validated in one call (benchmarks.harness of the same tree reads and stacks them)
    "validate_nine_sets_one_call": (
        "from benchmarks.harness import read_shared_sets; "
        "ds = xuqcal.stack_datasets({f'set{k}': d for k, d in read_shared_sets().items()})",
        'xuqcal.validate(ds, ["zms", "cc", "ence", "zmse"], n_boot=5000, n_mc=10_000, '
        'n_bins=20, generators=["normal", "t6"])',
    ),
    # recalibration: every scan step fits BVS and computes the scores of the test set (the
    # scores and losses go through the statistic definitions since issue 12)
    "recalibration_scan_nig_2e4": (
        "ds = xuqcal.synthetic.nig(40_000, nu=6, seed=0); "
        "ds['X1'] = ds.uE ** 0.5; ds['X2'] = ds.uE ** 2; "
        "train, test = ds.isel(sample=slice(0, 20_000)), ds.isel(sample=slice(20_000, None))",
        "xuqcal.recalibration.scan(train, test, n_bins=range(2, 40), n_boot=200)",
    ),
    # the accessor on Dask-backed data: before issue 12 it computed the data to check them and
    # validate computed bootstrap and simulations separately; now one graph, computed once
    "accessor_validate_qm9_dask": (
        "ds = xuqcal.read_csv(shared + '/BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv', "
        "E='E_ - prediction', uE='sqrt(uncertainty_total)').chunk({'sample': 2000})",
        'ds.uqcal.validate(["zms", "cc", "ence", "zmse"], n_boot=5000, n_mc=10_000).compute()',
    ),
    # issue 14 (large-M kernels): the radix sort and ranks of simulated cc, the bootstrap walk
    # (batched, prefetched draws) at M = 10^6 - 2e6; percentile intervals, no jackknife
    "simulate_cc_nig_1e6": (
        "ds = xuqcal.synthetic.nig(1_000_000, nu=6, seed=0)",
        'simulate(ds, ["cc"], **generators(["normal"]), **replicates("n_mc", 20)).compute()',
    ),
    "bootstrap_eight_nig_1e6": (
        "ds = xuqcal.synthetic.nig(1_000_000, nu=6, seed=0)",
        'xuqcal.bootstrap(ds, ["zms", "rce", "zm", "zv", "nll", "cc", "ence", "zmse"], '
        'method="percentile", **replicates("n_boot", 200)).compute()',
    ),
    "bootstrap_zms_rce_nig_2e6": (
        "ds = xuqcal.synthetic.nig(2_000_000, nu=6, seed=0)",
        'xuqcal.bootstrap(ds, ["zms", "rce"], method="percentile", '
        '**replicates("n_boot", 100)).compute()',
    ),
    # issue 26: the BCa jackknife of the binned statistics (few replicates: the jackknife is
    # most of the time); before, every block of 4096 points summed the prefixes of all M
    "bootstrap_bca_ence_zmse_nig_2e6": (
        "ds = xuqcal.synthetic.nig(2_000_000, nu=6, seed=0)",
        'xuqcal.bootstrap(ds, ["ence", "zmse"], **replicates("n_boot", 50)).compute()',
    ),
    # issue 26: the per-bin bootstrap of a local analysis (n_boot 5000, made by the summary of
    # every CLI validate), one call before, replicate chunks on every core after
    "local_zms_nig_4e5": (
        "ds = xuqcal.synthetic.nig(400_000, nu=6, seed=4)",
        'xuqcal.local(ds, "zms", seed=1)',
    ),
    # issue 26: the leave-one-out values of validate's precision-driven rounds (computed in
    # batches of blocks: the cc values the blocks share were computed again in every batch)
    "jackknife_values_eight_nig_2e6": (
        "from xuqcal.analysis.resampling import jackknife_values; "
        "from xuqcal.analysis.lazy import shared; "
        "from xuqcal.core.statistics import PreparedData, codes_of, get_statistics; "
        "ds = xuqcal.synthetic.nig(2_000_000, nu=6, seed=0).compute(); "
        "p = PreparedData.from_arrays(ds.E.values, ds.uE.values, n_bins=20); "
        "codes = codes_of(get_statistics(['zms', 'rce', 'zm', 'zv', 'nll', 'cc', 'ence', "
        "'zmse']))",
        "jackknife_values(shared(p), codes, p.size)",
    ),
    # issue 26: the default xuqcal validate of 2e6 points (the acceptance row
    # validate_default_2e6 of run.py, as a command in one process)
    "cli_validate_default_nig_2e6": (
        "import contextlib, io, os, tempfile; import pandas as pd; "
        "from xuqcal.cli.commands import main; "
        "ds = xuqcal.synthetic.nig(2_000_000, nu=6, seed=0); "
        "folder = tempfile.mkdtemp(); csv = os.path.join(folder, 'nig.csv'); "
        "pd.DataFrame({'E': ds.E.values, 'uE': ds.uE.values}).to_csv(csv, index=False)",
        "with contextlib.redirect_stdout(io.StringIO()): "
        "main(['validate', csv, '--E', 'E', '--uE', 'uE', '--no-progress', "
        "'-o', os.path.join(folder, 'out.nc')])",
    ),
    # the README's first command: `xuqcal demo` (two synthetic sets of 5 000 points, their
    # validations, figures and HTML reports), its progress on stderr (a pipe here: a log)
    "cli_demo": (
        "import contextlib, io, os, tempfile; from xuqcal.cli.commands import main; "
        "folder = os.path.join(tempfile.mkdtemp(), 'demo')",
        "with contextlib.redirect_stdout(io.StringIO()): main(['demo', '-o', folder])",
    ),
    # a small default validate on the command line, its progress shown (on stderr, a pipe
    # here: a log, as in CI or `2> log`): the run is a few short computations
    "cli_validate_nig_1e3": (
        "import contextlib, io, os, tempfile; import pandas as pd; "
        "from xuqcal.cli.commands import main; "
        "ds = xuqcal.synthetic.nig(1000, nu=6, seed=0); "
        "folder = tempfile.mkdtemp(); csv = os.path.join(folder, 'nig.csv'); "
        "pd.DataFrame({'E': ds.E.values, 'uE': ds.uE.values}).to_csv(csv, index=False)",
        "with contextlib.redirect_stdout(io.StringIO()): "
        "main(['validate', csv, '--E', 'E', '--uE', 'uE', "
        "'-o', os.path.join(folder, 'out.nc')])",
    ),
    # the same command as a user runs it: a fresh process (import, the kernels loaded from
    # Numba's cache, anything compiled on demand, the work), its progress on a pipe
    "cli_validate_nig_1e3_process": (
        "import os, subprocess, tempfile; import pandas as pd; "
        "ds = xuqcal.synthetic.nig(1000, nu=6, seed=0); "
        "folder = tempfile.mkdtemp(); csv = os.path.join(folder, 'nig.csv'); "
        "pd.DataFrame({'E': ds.E.values, 'uE': ds.uE.values}).to_csv(csv, index=False)",
        "subprocess.run([sys.executable, '-m', 'xuqcal.cli', 'validate', csv, '--E', 'E', "
        "'--uE', 'uE', '-o', os.path.join(folder, 'out.nc')], check=True, "
        "capture_output=True)",
    ),
}

_RUNNER = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
import xuqcal
shared = sys.argv[1]
# the names of the revision being timed: xuqcal.simulate(generators=, n_mc=) and
# bootstrap(n_boot=) since issue 12, xuqcal.reference(generator=, n=) and bootstrap(n=) before
NEW_NAMES = hasattr(xuqcal, "simulate")
simulate = xuqcal.simulate if NEW_NAMES else xuqcal.reference
def replicates(name, count):
    return {{name if NEW_NAMES else "n": count}}
def generators(names):
    return {{"generators" if NEW_NAMES else "generator": names}}
warm = xuqcal.synthetic.nig(500, nu=6, seed=0)
xuqcal.validate(warm, ["zms", "cc", "ence", "zmse"], n_boot=100, n_mc=100, n_bins=5)
{setup}
start = time.perf_counter()
{timed}
print(json.dumps(time.perf_counter() - start))
"""


def run_once(tree: Path, workload: str, shared: str) -> float:
    setup, timed = WORKLOADS[workload]
    code = _RUNNER.format(setup=setup, timed=timed)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", code, shared], capture_output=True, text=True,
                          env=env, check=True, cwd=tempfile.gettempdir())
    return float(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision of the 'before' side")
    parser.add_argument("--rounds", type=int, default=3, help="alternations per workload")
    parser.add_argument("--only", action="append", choices=sorted(WORKLOADS))
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "ab.json")
    args = parser.parse_args(argv)
    shared = os.environ.get("XUQCAL_SHARED_DATA", str(REPO.parent / "shared" / "data"))
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                          capture_output=True, check=True).stdout.strip()
    before = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=REPO, text=True,
                            capture_output=True, check=True).stdout.strip()
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "before": before,
               "after": f"{head} (working tree)", "rounds": args.rounds,
               "cpu_count": os.cpu_count(), "workloads": {}}
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.before],
                       cwd=REPO, check=True, capture_output=True)
        try:
            for name in args.only or WORKLOADS:
                times = {"before": [], "after": []}
                for _ in range(args.rounds):
                    times["before"].append(run_once(tree, name, shared))
                    times["after"].append(run_once(REPO, name, shared))
                summary = {side: {"best": min(t), "median": statistics.median(t)}
                           for side, t in times.items()}
                ratio = summary["after"]["median"] / summary["before"]["median"]
                results["workloads"][name] = {"seconds": times, **summary,
                                              "ratio_after_over_before_median": ratio}
                print(f"{name:<30} before {summary['before']['median']:8.3f} s  after "
                      f"{summary['after']['median']:8.3f} s  (median of {args.rounds}; "
                      f"after/before {ratio:.3f})", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO,
                           capture_output=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
