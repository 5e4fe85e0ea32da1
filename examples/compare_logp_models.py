"""Comparison of the logP models of the shared data: every analysis in one call for all models.

The RAS2023 logP test files of the shared data (``RAS2023/logP_*_test.csv``: the graph
convolutional networks ``10k_a_LS-GCN`` and ``150k_LS-GCN``, M = 5000 test molecules each,
E = logP - y_pred, uE = uq) are read and stacked along a ``model`` dimension with
:func:`xuqcal.stack_datasets` (any further ``logP_*_test.csv`` file in that folder is one more
model). Each analysis is then **one call** on the stacked data, which analyses every model on
its own points and stacks the results over ``model`` (each model's result is bit-identical to
the same call on that model's file alone):

- :func:`xuqcal.validate` of ZMS, RCE, CC, ENCE and ZMSE (BCa, B = 10 000; simulated
  references n_mc = 10 000; 20 bins of uE), printed as the compact table of
  :func:`xuqcal.analysis.tables.slices_table` (one row per model and statistic: estimate, 95 %
  interval, verdict and the scheme that decided it; a statistic whose simulated reference
  depends on the generator is reported as not usable for validation);
- :func:`xuqcal.local`: LZMS, the per-bin <Z²> on 100 equal-count bins of uE (BCa, B = 5000),
  with the fraction of valid bins f_v;
- :func:`xuqcal.reliability`: RMSE against RMV on 20 bins of uE (B = 2000);
- :func:`xuqcal.analysis.curves.confidence_curve`: the RMSE of the points left after removing
  the largest uncertainties, with its probabilistic reference band (normal errors, n_mc =
  1000).

The figures have one panel per model (``col="model"``). Needs the shared data folder
(``../shared/data`` beside the repository, or ``XUQCAL_SHARED_DATA``)::

    python examples/compare_logp_models.py [--output DIR] [--overwrite] [--quick]

Writes ``validation.nc`` (over ``model × statistic × scheme``, with the coordinates
``n_samples`` and ``source``), ``local_zms_uE.nc``, ``reliability.nc``,
``confidence_curve.nc`` (each over ``model`` and its own dimensions) and the figures
``zeta.png``, ``local_zms_uE.png``, ``reliability.png`` and ``confidence_curve.png``.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import xarray as xr
from _common import (
    Timer,
    parser,
    prepare_output,
    save_figure,
    save_netcdf,
    shared_data_dir,
)

import xuqcal
from xuqcal.analysis.curves import confidence_curve
from xuqcal.analysis.tables import slices_table

NAME = "compare_logp_models"
#: The logP test files of the shared data (one model each), relative to the shared folder.
PATTERN = "RAS2023/logP_*_test.csv"
E, UE = "logP - y_pred", "uq"
STATISTICS = ("zms", "rce", "cc", "ence", "zmse")
DIM = "model"
FILES = ("validation.nc", "local_zms_uE.nc", "reliability.nc", "confidence_curve.nc",
         "zeta.png", "local_zms_uE.png", "reliability.png", "confidence_curve.png")


def model_files(folder: Path) -> dict[str, Path]:
    """The logP test files of the shared folder by model label (the file name between
    ``logP_`` and ``_test``, e.g. ``10k_a_LS-GCN``), in the order of their names; exits with a
    clear message when there are none."""
    files = sorted(folder.glob(PATTERN))
    if not files:
        sys.exit("error: shared data files not found (set XUQCAL_SHARED_DATA to the folder of "
                 f"../shared/data):\n  {folder / PATTERN}")
    return {path.stem.removeprefix("logP_").removesuffix("_test"): path for path in files}


def load_models(files: dict[str, Path]) -> xr.Dataset:
    """Every model's file read with the same E and uE, stacked along ``model``."""
    sets = {label: xuqcal.read_csv(path, E=E, uE=UE, name=label)
            for label, path in files.items()}
    for label, ds in sets.items():
        print(f"{label}: {ds.sizes['sample']} points ({files[label].name})")
    return xuqcal.stack_datasets(sets, dim=DIM)


def main(argv: list[str] | None = None) -> None:
    p = parser(NAME, __doc__.split("\n\n")[0])
    args = p.parse_args(argv)
    out = prepare_output(args.output, FILES, args.overwrite)
    models = load_models(model_files(shared_data_dir()))
    if args.quick:
        n_boot, n_mc, n_bins_local, n_boot_local, n_boot_reliability, n_mc_curve = (
            200, 50, 20, 200, 200, 50)
    else:
        n_boot, n_mc, n_bins_local, n_boot_local, n_boot_reliability, n_mc_curve = (
            10_000, 10_000, 100, 5000, 2000, 1000)
    n_models = models.sizes[DIM]

    with warnings.catch_warnings():
        if args.quick:  # few replicates on purpose: the numbers mean nothing
            warnings.simplefilter("ignore", xuqcal.DegenerateIntervalWarning)
        with Timer(f"validation of {n_models} models (BCa B = {n_boot}, n_mc = {n_mc})"):
            validation = xuqcal.validate(models, list(STATISTICS), n_boot=n_boot, n_mc=n_mc,
                                         seed=args.seed)
        with Timer(f"LZMS on {n_bins_local} bins of uE (B = {n_boot_local})"):
            local = xuqcal.local(models, "zms", by="uE", n_bins=n_bins_local,
                                 n_boot=n_boot_local, seed=args.seed)
        with Timer(f"reliability diagrams (B = {n_boot_reliability})"):
            reliability = xuqcal.reliability(models, n_boot=n_boot_reliability, seed=args.seed)
        with Timer(f"confidence curves (n_mc = {n_mc_curve})"):
            curve = confidence_curve(models, n_mc=n_mc_curve, seed=args.seed)

    for result in (validation, local, reliability, curve):
        result.attrs["data_sets"] = ", ".join(
            f"{label}: {path}" for label, path in zip(models[DIM].values,
                                                       models["source"].values, strict=True))
    save_netcdf(validation, out["validation.nc"])
    save_netcdf(local, out["local_zms_uE.nc"])
    save_netcdf(reliability, out["reliability.nc"])
    save_netcdf(curve, out["confidence_curve.nc"])

    print(f"\nValidation of the logP models (BCa, {n_boot} replicates, 95 %; simulated "
          f"references n_mc = {n_mc}, 20 bins)")
    print(slices_table(validation))
    print("\nLZMS on uE: fraction of valid bins f_v [95 % Wilson-cc]")
    for label in local[DIM].values:
        one = local.sel({DIM: label})
        print(f"  {label}: f_v = {float(one.fraction_valid):.2f} "
              f"[{float(one.fraction_valid_low):.2f}, {float(one.fraction_valid_high):.2f}] "
              f"on {local.sizes['bin']} bins")

    save_figure(xuqcal.plot.zeta(validation, col=DIM), out["zeta.png"])
    save_figure(xuqcal.plot.local(local, col=DIM), out["local_zms_uE.png"])
    save_figure(xuqcal.plot.reliability(reliability, col=DIM), out["reliability.png"])
    save_figure(xuqcal.plot.confidence_curve(curve, col=DIM), out["confidence_curve.png"])


if __name__ == "__main__":
    main()
