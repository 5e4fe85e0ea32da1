"""A multi-task model on synthetic data: validation, local analysis and recalibration per task.

One model predicts three targets of the same samples (M = 20 000): ``logP`` with calibrated
uncertainties, ``solubility`` with uncertainties 25 % too small, and ``pKa`` whose errors grow
with the input feature ``x`` while its uncertainties do not (calibrated on average, not
adaptive). About 10 % of each target is missing, independently per target: ``E`` and ``uE`` are
both NaN there, which every analysis reads as an *absent* point (what a multi-task mask gives),
so each task is analysed on its own points. The feature ``x`` (uniform on [0, 1]) is one
variable over ``sample``, shared by the three tasks. ``E`` and ``uE`` are over
``(task, sample)``, so each analysis below is one call for the three tasks:

1. :func:`xuqcal.validate` of ZMS and RCE on the whole data (BCa, B = 10 000), printed with
   :func:`xuqcal.analysis.tables.slices_table`;
2. :func:`xuqcal.local` by the shared feature ``x``: LZMS on 10 equal-count bins of ``x``
   (B = 5000) with the fraction of valid bins f_v;
3. a recalibration per task: bin-wise variance scaling on 10 bins of ``x``
   (:func:`xuqcal.recalibration.fit`, one recalibrator per task) fitted on a random half of the
   samples, applied (:func:`xuqcal.recalibration.apply`) to the other half given with its
   tasks in another order: the recalibrators are matched to the tasks by label (a task that
   is already calibrated gains nothing: its fitted factors only add their estimation noise);
4. the test half validated and analysed by ``x`` before and after the recalibration, in one
   call each over ``recalibration × task``, and the per-task verdicts (ZMS, RCE) and f_v
   printed side by side.

No data files are needed::

    python examples/multi_task.py [--output DIR] [--overwrite] [--quick]

Writes ``data.nc`` (the synthetic data over ``task × sample`` with ``x`` over ``sample``),
``validation.nc`` and ``local_x.nc`` (the whole data, over ``task``), ``recalibrator.nc``
(one BVS recalibrator per task, reusable with :class:`xuqcal.Recalibrator`),
``validation_test.nc`` and ``local_x_test.nc`` (the test half over ``recalibration × task``,
``recalibration`` = ``before``, ``after``) and the figures ``local_x.png`` (per-bin <Z²>
along ``x``, one panel per task and stage) and ``zeta.png``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr
from _common import format_table, parser, prepare_output, save_figure, save_netcdf

import xuqcal
from xuqcal import recalibration
from xuqcal.analysis.tables import slices_table
from xuqcal.core.provenance import attach

NAME = "multi_task"
#: task -> (factor of the reported uncertainties, errors growing with x)
TASKS = {"logP": (1.0, False), "solubility": (0.75, False), "pKa": (1.0, True)}
MISSING = 0.10
STATISTICS = ("zms", "rce")
N_BINS_X = 10
FILES = ("data.nc", "validation.nc", "local_x.nc", "recalibrator.nc", "validation_test.nc",
         "local_x_test.nc", "local_x.png", "zeta.png")


def make_data(m: int, seed: int) -> xr.Dataset:
    """The synthetic multi-task data: ``E`` and ``uE`` over ``(task, sample)`` with about
    :data:`MISSING` of each task absent (both NaN), and the shared feature ``x`` over
    ``sample``.

    Parameters
    ----------
    m : int
        Number of samples.
    seed : int
        Seed of the data (the NIG sets of the tasks, ``x`` and the missing targets).

    Returns
    -------
    xarray.Dataset
        Over ``task × sample``, with the ``sample`` coordinate ``0 ... m - 1`` (the rows that
        messages name).
    """
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, m)
    E = np.empty((len(TASKS), m))
    uE = np.empty((len(TASKS), m))
    for k, (scale, adaptive_errors) in enumerate(TASKS.values()):
        one = xuqcal.synthetic.nig(m, nu=6, seed=seed + k + 1, uE_scale=scale)
        E[k], uE[k] = one.E.values, one.uE.values
        if adaptive_errors:  # <(0.6 + 0.8 x)²> ≈ 1.05: calibrated on average only
            E[k] *= 0.6 + 0.8 * x
    missing = rng.random((len(TASKS), m)) < MISSING
    E[missing] = np.nan
    uE[missing] = np.nan
    ds = xr.Dataset(
        {"E": (("task", "sample"), E, {"long_name": "prediction error"}),
         "uE": (("task", "sample"), uE, {"long_name": "prediction uncertainty"}),
         "x": ("sample", x, {"long_name": "input feature shared by the tasks"})},
        coords={"task": ("task", np.array(list(TASKS))), "sample": np.arange(m)},
    )
    attach(ds, description="synthetic multi-task data (NIG model, nu = 6): logP calibrated, "
                           "solubility uE 25 % too small, pKa errors growing with x; E and uE "
                           "both NaN where a target is missing", seed=seed, missing=MISSING)
    return xuqcal.validate_dataset(ds)


def split(ds: xr.Dataset, seed: int) -> tuple[xr.Dataset, xr.Dataset]:
    """A random half of the samples for training, the other half for testing."""
    m = ds.sizes["sample"]
    train = np.sort(np.random.default_rng(seed).permutation(m)[: m // 2])
    test = np.setdiff1d(np.arange(m), train)
    return ds.isel(sample=train), ds.isel(sample=test)


def before_and_after(test: xr.Dataset, recalibrated: xr.Dataset) -> xr.Dataset:
    """The test half before and after the recalibration along ``recalibration``, the tasks in
    the order of ``test``, ``x`` shared."""
    after = recalibrated[["E", "uE"]].drop_vars("n_samples").sel(task=test.task.values)
    stages = xr.concat([test[["E", "uE"]], after],
                       dim=pd.Index(np.array(["before", "after"]), name="recalibration"),
                       join="exact")
    return stages.assign(x=test.x)


def verdict_table(validation: xr.Dataset, local: xr.Dataset) -> str:
    """Per task: M, then the verdicts of ZMS and RCE and f_v of LZMS on x before → after."""
    stages = ("before", "after")
    rows = [["task", "M", *(f"{s.upper()} before → after" for s in STATISTICS),
             "f_v(x) before → after"]]
    for task in validation.task.values:
        one = validation.sel(task=task)
        row = [str(task), str(int(one.n_samples.sel(recalibration="before")))]
        for statistic in STATISTICS:
            cells = []
            for stage in stages:
                point = one.sel(statistic=statistic, recalibration=stage)
                cells.append(f"{point.verdict.values!s} ({float(point.estimate):.3f})")
            row.append(" → ".join(cells))
        f_v = local.fraction_valid.sel(task=task)
        row.append(" → ".join(f"{float(f_v.sel(recalibration=s)):.2f}" for s in stages))
        rows.append(row)
    return format_table(rows, left=(0,))


def main(argv: list[str] | None = None) -> None:
    p = parser(NAME, __doc__.split("\n\n")[0])
    args = p.parse_args(argv)
    out = prepare_output(args.output, FILES, args.overwrite)
    m, n_boot, n_mc, n_boot_local = ((1500, 200, 50, 200) if args.quick
                                     else (20_000, 10_000, 10_000, 5000))

    ds = make_data(m, args.seed)
    save_netcdf(ds, out["data.nc"])
    print("present points per task: " + ", ".join(
        f"{task} {int(ds.E.sel(task=task).notnull().sum())}" for task in ds.task.values)
        + f" of {m}")

    with warnings.catch_warnings():
        if args.quick:  # few replicates on purpose: the numbers mean nothing
            warnings.simplefilter("ignore", xuqcal.DegenerateIntervalWarning)
        # 1-2. one call each for the three tasks
        validation = xuqcal.validate(ds, list(STATISTICS), n_boot=n_boot, n_mc=n_mc,
                                     seed=args.seed)
        local = xuqcal.local(ds, "zms", by="x", n_bins=N_BINS_X, n_boot=n_boot_local,
                             seed=args.seed)
        # 3. one recalibrator per task, fitted on the training half
        train, test = split(ds, args.seed)
        recalibrator = recalibration.fit(train, "bvs", by="x", n_bins=N_BINS_X,
                                         features=("x",), seed=args.seed)
        shuffled = test.isel(task=slice(None, None, -1))  # another order: matched by label
        recalibrated = recalibration.apply(recalibrator, shuffled)
        # 4. the test half before and after, one call each over recalibration × task
        stages = before_and_after(test, recalibrated)
        validation_test = xuqcal.validate(stages, list(STATISTICS), n_boot=n_boot,
                                          n_mc=n_mc, seed=args.seed)
        local_test = xuqcal.local(stages, "zms", by="x", n_bins=N_BINS_X,
                                  n_boot=n_boot_local, seed=args.seed)

    save_netcdf(validation, out["validation.nc"])
    save_netcdf(local, out["local_x.nc"])
    save_netcdf(recalibrator, out["recalibrator.nc"])
    save_netcdf(validation_test, out["validation_test.nc"])
    save_netcdf(local_test, out["local_x_test.nc"])

    print(f"\nValidation of every task on all the samples (BCa, {n_boot} replicates, 95 %)")
    print(slices_table(validation))
    print(f"\nLZMS on {N_BINS_X} bins of the shared feature x: fraction of valid bins f_v")
    for task in local.task.values:
        one = local.sel(task=task)
        print(f"  {task}: f_v = {float(one.fraction_valid):.2f} "
              f"[{float(one.fraction_valid_low):.2f}, {float(one.fraction_valid_high):.2f}]")
    print(f"\nRecalibration per task: BVS on {N_BINS_X} bins of x fitted on "
          f"{train.sizes['sample']} training samples, applied to the "
          f"{test.sizes['sample']} test samples given in the task order "
          f"{', '.join(map(str, shuffled.task.values))} (matched by label); global scale "
          "factors: " + ", ".join(f"{task} {float(s):.3f}" for task, s in
                                  zip(recalibrator.task.values,
                                      recalibrator.global_scale.values, strict=True)))
    print(f"\nTest half before → after recalibration: verdict (estimate) of ZMS and RCE, "
          f"f_v of LZMS on x ({N_BINS_X} bins)")
    print(verdict_table(validation_test, local_test))

    save_figure(xuqcal.plot.local(local_test, col="task", row="recalibration"),
                out["local_x.png"])
    save_figure(xuqcal.plot.zeta(validation_test, col="task", row="recalibration"),
                out["zeta.png"])


if __name__ == "__main__":
    main()
