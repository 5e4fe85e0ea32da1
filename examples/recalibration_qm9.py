"""Post-hoc recalibration of the QM9 uncertainties: bin-wise variance scaling (BVS) against
isotonic regression.

Training set: the uncalibrated validation file ``BUS2022/qm9_qm9_E_uncalibrated_validation.csv``
(M = 10 000); test set: the uncalibrated test file ``qm9_qm9_E_uncalibrated_test.csv``
(M = 13 885); reference: the authors' isotonic recalibration of the same test set,
``qm9_qm9_E_calibrated_isotonic_test.csv``. E = E_ - prediction, uE = sqrt(uncertainty_total),
X1 (molecular mass) and X2 (heteroatom fraction) from the ``formula`` column. Fitted on the
training set and applied to the test set: temperature scaling, BVS with 40 equal-count bins of
uE (loss NLL: the analytic factors) and isotonic regression. The evaluation table (NLL, S_cal,
S_x, S_tot, ENCE and f_v with 100 bins per variable, each row with its simulated values for
errors drawn from N(0, uE²)), the scan of the number of BVS bins N_B = 2 … 99 on the test set,
and the per-bin <Z²> before and after recalibration. The recalibration numbers of
``../shared/spec/TARGETS.md`` are printed side by side with the measured ones. Needs the shared
data folder (``../shared/data`` beside the repository, or ``XUQCAL_SHARED_DATA``). About two
minutes on 2 cores, most of it for the scan::

    python examples/recalibration_qm9.py [--output DIR] [--overwrite] [--quick]

Writes ``evaluation.nc`` (the evaluation table over ``dataset``), ``scan.nc`` (test-set scores
over ``n_bins``), ``bin_zms.nc`` (per-bin <Z²> of the test set on the 40 BVS bins, before and
after each recalibration), ``recalibrator_bvs40.nc`` and ``recalibrator_isotonic.nc`` (the
fitted recalibrators, for :func:`xuqcal.recalibration.apply`), and the figures ``scan.png`` (NLL,
ENCE, S_x and f_v against N_B, with the isotonic reference file dashed and the simulated values
dotted) and ``bin_zms.png`` (per-bin <Z²> before/after, BVS and isotonic, along uE and X1).
"""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from _common import (
    Timer,
    format_table,
    parser,
    prepare_output,
    save_figure,
    save_netcdf,
    shared_data_dir,
)

import xuqcal
from xuqcal import recalibration as rc
from xuqcal.core.provenance import attach
from xuqcal.core.statistics import STATISTICS, point_columns

NAME = "recalibration_qm9"
FILES = {
    "train": "BUS2022/qm9_qm9_E_uncalibrated_validation.csv",
    "test": "BUS2022/qm9_qm9_E_uncalibrated_test.csv",
    "reference": "BUS2022/qm9_qm9_E_calibrated_isotonic_test.csv",
}
N_BINS_BVS = 40
#: Rows of the evaluation table: name -> what it is.
ROWS = {
    "train": "uncalibrated training set (validation file)",
    "test": "uncalibrated test set",
    "test temperature": "test set, temperature scaling fitted on the training set",
    f"test BVS {N_BINS_BVS}": f"test set, BVS ({N_BINS_BVS} bins of uE, loss NLL) fitted on "
                              "the training set",
    "test isotonic": "test set, isotonic regression fitted on the training set",
    "isotonic reference": "the authors' isotonic recalibration of the test set (reference file)",
}
#: TARGETS.md, Recalibration QM9: (row, score, by, published value as printed there).
PUBLISHED = (
    ("train", "nll", None, "-2.76"), ("train", "s_cal", None, "1.17"),
    ("train", "zms", None, "0.31"),
    ("test", "nll", None, "-2.75"), ("test", "s_cal", None, "1.13"),
    ("isotonic reference", "nll", None, "-3.08"), ("isotonic reference", "s_cal", None, "0.03"),
    ("isotonic reference", "s_x", "uE", "0.19"), ("isotonic reference", "s_x", "X1", "0.29"),
    ("isotonic reference", "s_x", "X2", "0.27"),
)
SCORE_LABELS = {"nll": "NLL", "s_cal": "S_cal", "zms": "<Z²>", "s_x": "S_"}


def load() -> dict[str, xr.Dataset]:
    """The three QM9 files with the formula features X1 and X2."""
    folder = shared_data_dir()
    missing = [str(folder / f) for f in FILES.values() if not (folder / f).is_file()]
    if missing:
        sys.exit("error: shared data files not found (set XUQCAL_SHARED_DATA to the folder of "
                 "../shared/data):\n  " + "\n  ".join(missing))
    out = {}
    for name, file in FILES.items():
        path = folder / file
        ds = xuqcal.read_csv(path, E="E_ - prediction", uE="sqrt(uncertainty_total)",
                             name=f"QM9 {name}")
        out[name] = xuqcal.add_formula_features(
            ds, pd.read_csv(path, usecols=["formula"])["formula"])
    return out


def bin_zms(test: xr.Dataset, recalibrated: dict[str, xr.Dataset]) -> xr.Dataset:
    """Per-bin <Z²> of the test set on the BVS bins, before and after each recalibration."""
    index = recalibrated["bvs"].recalibration_bin.values
    n = int(recalibrated["bvs"].attrs.get("recalibration_n_bins", index.max() + 1))
    count = np.bincount(index, minlength=n)

    def per_bin(ds: xr.Dataset) -> np.ndarray:
        z2 = point_columns(ds.E.values, ds.uE.values, ["z2"])["z2"]
        return STATISTICS["zms"].from_sums({"count": count,
                                            "z2": np.bincount(index, weights=z2, minlength=n)})

    data = {"count": ("bin", count, {"long_name": "number of test points"}),
            "uE_mean": ("bin", np.bincount(index, weights=test.uE.values, minlength=n) / count,
                        {"long_name": "mean uncalibrated uE of the bin"}),
            "zms_before": ("bin", per_bin(test), {"long_name": "<Z²> before recalibration"})}
    for method, ds in recalibrated.items():
        data[f"zms_{method}"] = ("bin", per_bin(ds),
                                 {"long_name": f"<Z²> after the {method} recalibration"})
    return attach(xr.Dataset(data, coords={"bin": np.arange(n)}),
                  {"bins": f"the {n} BVS bins of uE learned on the training set"})


def comparison(table: xr.Dataset) -> str:
    rows = [["data set", "score", "published", "measured"]]
    for row, key, by, published in PUBLISHED:
        value = table[key].sel(dataset=row)
        if by is not None:
            value = value.sel(by=by)
        label = SCORE_LABELS[key] + (by if by is not None else "")
        rows.append([row, label, published, f"{float(value):.4f}"])
    return format_table(rows)


def scan_summary(result: xr.Dataset, shown: list[int]) -> str:
    by = [str(b) for b in result.by.values]
    rows = [["N_B", "learned", "NLL", *[f"S_{b}" for b in by], "S_tot",
             *[f"f_v_{b}" for b in by]]]
    for n in shown:
        r = result.sel(n_bins=n)
        rows.append([str(n), str(int(r.n_bins_learned)), f"{float(r.nll):.3f}",
                     *[f"{float(r.s_x.sel(by=b)):.3f}" for b in by], f"{float(r.s_tot):.3f}",
                     *[f"{float(r.fraction_valid.sel(by=b)):.2f}" for b in by]])
    return format_table(rows)


def main(argv: list[str] | None = None) -> None:
    args = parser(NAME, __doc__.split("\n\n")[0]).parse_args(argv)
    files = ["evaluation.nc", "scan.nc", "bin_zms.nc", f"recalibrator_bvs{N_BINS_BVS}.nc",
             "recalibrator_isotonic.nc", "scan.png", "bin_zms.png"]
    out = prepare_output(args.output, files, args.overwrite)
    if args.quick:
        n_boot, n_mc, n_mc_fv, scan_bins = 100, 20, 2, [2, 5, 40]
    else:
        n_boot, n_mc, n_mc_fv, scan_bins = 5000, 1000, 20, list(range(2, 100))
    data = load()
    train, test, reference = data["train"], data["test"], data["reference"]

    with Timer("fitting temperature, BVS and isotonic on the training set"):
        recalibrators = {
            "temperature": rc.Recalibrator.fit(train, "temperature"),
            "bvs": rc.Recalibrator.fit(train, "bvs", by="uE", n_bins=N_BINS_BVS),
            "isotonic": rc.Recalibrator.fit(train, "isotonic"),
        }
    recalibrated = {method: rec.apply(test) for method, rec in recalibrators.items()}
    recalibrators["bvs"].to_netcdf(out[f"recalibrator_bvs{N_BINS_BVS}.nc"], overwrite=True)
    recalibrators["isotonic"].to_netcdf(out["recalibrator_isotonic.nc"], overwrite=True)
    print(f"wrote {out[f'recalibrator_bvs{N_BINS_BVS}.nc']}\nwrote "
          f"{out['recalibrator_isotonic.nc']}")

    datasets = dict(zip(ROWS, [train, test, recalibrated["temperature"], recalibrated["bvs"],
                               recalibrated["isotonic"], reference], strict=True))
    with Timer(f"evaluation table ({len(datasets)} data sets, n_mc = {n_mc}, n_mc_fv = "
               f"{n_mc_fv}, {n_boot} BCa replicates per bin)"):
        table = rc.evaluate(datasets, n_mc=n_mc, n_mc_fv=n_mc_fv, n_boot=n_boot,
                            seed=args.seed)
    table = table.assign_coords(description=("dataset", list(ROWS.values())))
    table.attrs.update(training_file=FILES["train"], test_file=FILES["test"],
                       reference_file=FILES["reference"])
    save_netcdf(table, out["evaluation.nc"])

    with Timer(f"bin-number scan (N_B = {scan_bins[0]} … {scan_bins[-1]}, "
               f"{len(scan_bins)} values)"):
        result = rc.scan(train, test, n_bins=scan_bins, n_boot=n_boot, seed=args.seed)
    save_netcdf(result, out["scan.nc"])
    per_bin = bin_zms(test, recalibrated)
    save_netcdf(per_bin, out["bin_zms.nc"])

    print("\nEvaluation (100 bins per variable; 'simulated': errors drawn from N(0, uE²) with "
          "the row's uncertainties)")
    print(rc.evaluation_table(table))
    difference = np.max(np.abs(recalibrated["isotonic"].uE.values / reference.uE.values - 1))
    print(f"isotonic fitted on the training set against the reference file: max |relative "
          f"difference of uE| = {difference:.1e}")
    print("\nTARGETS.md, Recalibration QM9 (100 bins)")
    print(comparison(table))
    shown = [n for n in (2, 5, 10, 20, 40, 60, 80, 99) if n in scan_bins]
    best = int(result.nll.idxmin("n_bins"))
    print(f"\nBin-number scan (test set; lowest NLL at N_B = {best})")
    print(scan_summary(result, sorted({*shown, best})))
    print("\nPer-bin <Z²> of the test set on the BVS bins (min – max over the bins)")
    print(format_table([["recalibration", "min", "max"]]
                  + [[name.removeprefix("zms_"), f"{float(per_bin[name].min()):.3f}",
                      f"{float(per_bin[name].max()):.3f}"]
                     for name in per_bin.data_vars if name.startswith("zms_")]))

    axes = xuqcal.plot.recalibration_scan(
        result, baseline=table.sel(dataset="isotonic reference"),
        simulated=table.sel(dataset=f"test BVS {N_BINS_BVS}"),
        baseline_label="isotonic reference")
    axes[0].figure.set_size_inches(12, 8)
    save_figure(axes[0], out["scan.png"])

    figure, axs = plt.subplots(2, 2, figsize=(13, 8), layout="constrained")
    for row, (method, label) in enumerate((("bvs", f"BVS {N_BINS_BVS}"),
                                           ("isotonic", "isotonic"))):
        after = recalibrated[method]
        if method == "bvs":
            xuqcal.plot.bin_zms(test, after, ax=axs[row, 0])
        else:
            xuqcal.plot.bin_zms(test, after, by="uE", n_bins=N_BINS_BVS, ax=axs[row, 0])
        xuqcal.plot.bin_zms(test, after, by="X1", n_bins=20, ax=axs[row, 1])
        for ax in axs[row]:
            ax.set_title(f"{label}: {ax.get_title()}", fontsize="medium")
    save_figure(figure, out["bin_zms.png"])


if __name__ == "__main__":
    main()
