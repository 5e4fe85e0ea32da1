"""Conditional calibration of the QM9 U0 file: consistency (along uE) and adaptivity (along
the input-feature proxies X1, X2).

On ``BUS2022/qm9_U0_test_Orig.csv`` (M = 13 885; E = U0 - prediction, uE =
sqrt(uncertainty_total); X1 = molecular mass and X2 = heteroatom fraction from the ``formula``
column): the local z-score analyses LZM (<Z> per bin, Student intervals) and LZMS (<Z²> per
bin, BCa intervals with 5000 replicates) on 100 equal-count bins of uE and on strata bins of X1
and X2 (at least 100 points per bin), the fraction of valid bins f_v with its Wilson-cc
interval, <Z> and <Z²> of the whole set with their bootstrap standard errors, the Spearman
rank-correlation matrix of X1, X2, |E| and uE, and the sensitivity of f_v (LZMS, 100
equal-count bins) to the random order in which tied values of uE, X1 and X2 are split between
bins (``--n-orders``, default 200 orders; 0 skips it). The numbers of
``../shared/spec/TARGETS.md`` are printed side by side with the measured ones. Needs the shared
data folder (``../shared/data`` beside the repository, or ``XUQCAL_SHARED_DATA``). About a
minute on 2 cores, most of it for the data orders::

    python examples/conditional_calibration_qm9.py [--output DIR] [--overwrite] [--quick]

Writes ``conditional_calibration_qm9.nc`` (f_v with its bounds over ``statistic × by``, the
whole-set values, the rank-correlation matrix), ``local_<statistic>_<by>.nc`` per local
analysis, ``order_sensitivity.nc`` (f_v over ``by × order``), and the figures
``zscores.png`` (Z against uE, X1, X2 with running mean and RMS), ``local.png`` (per-bin
values), ``fraction_valid.png``, ``rank_correlation.png`` and ``order_sensitivity.png``.
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
from xuqcal.core.provenance import attach

NAME = "conditional_calibration_qm9"
FILE = "BUS2022/qm9_U0_test_Orig.csv"
STATISTICS = ("zm", "zms")
VARIABLES = ("uE", "X1", "X2")
LABELS = {"zm": "LZM", "zms": "LZMS"}
#: TARGETS.md, conditional calibration of the QM9 U0 file (100 equal-count bins on uE).
PUBLISHED_FV = {"zm": "0.97", "zms": "0.85"}
PUBLISHED_GLOBAL = {"zm": "0.0082(83)", "zms": "0.96(2)"}
PUBLISHED_RANK = {("X1", "X2"): "0.12", ("X1", "|E|"): "0.10", ("X1", "uE"): "0.03",
                  ("X2", "|E|"): "0.12", ("X2", "uE"): "0.30", ("|E|", "uE"): "0.32"}


def load() -> xr.Dataset:
    """The QM9 U0 file with the formula features X1 and X2."""
    path = shared_data_dir() / FILE
    if not path.is_file():
        sys.exit(f"error: shared data files not found (set XUQCAL_SHARED_DATA to the folder of "
                 f"../shared/data):\n  {path}")
    ds = xuqcal.read_csv(path, E="U0 - prediction", uE="sqrt(uncertainty_total)",
                         name="QM9 U0")
    return xuqcal.add_formula_features(ds, pd.read_csv(path, usecols=["formula"])["formula"])


def local_analyses(ds: xr.Dataset, n_boot: int, seed: int
                   ) -> dict[tuple[str, str], xr.Dataset]:
    """LZM and LZMS on 100 equal-count bins of uE and on strata bins of X1 and X2."""
    results = {}
    for statistic in STATISTICS:
        for by in VARIABLES:
            binning = {"n_bins": 100} if by == "uE" else {"binning": "strata",
                                                          "min_count": 100}
            results[statistic, by] = ds.uqcal.local(statistic, by=by, n_boot=n_boot, seed=seed,
                                                    **binning)
    return results


def summary(ds: xr.Dataset, local: dict, correlation: xr.DataArray, n_boot: int,
            seed: int) -> xr.Dataset:
    """f_v over statistic × by, the whole-set values with bootstrap errors, the rank
    correlations."""
    shape = (len(STATISTICS), len(VARIABLES))
    data = {v: np.empty(shape) for v in ("fraction_valid", "fraction_valid_low",
                                         "fraction_valid_high")}
    n_bins = np.empty(shape, dtype=np.int64)
    for i, statistic in enumerate(STATISTICS):
        for j, by in enumerate(VARIABLES):
            r = local[statistic, by]
            for v in data:
                data[v][i, j] = r[v].item()
            n_bins[i, j] = r.attrs["n_bins"]
    whole = xuqcal.bootstrap(ds, list(STATISTICS), n_boot=n_boot, seed=seed).compute()
    dims = ("statistic", "by")
    out = xr.Dataset(
        {
            "fraction_valid": (dims, data["fraction_valid"],
                               {"long_name": "fraction of valid bins f_v"}),
            "fraction_valid_low": (dims, data["fraction_valid_low"],
                                   {"long_name": "Wilson-cc lower bound of f_v"}),
            "fraction_valid_high": (dims, data["fraction_valid_high"],
                                    {"long_name": "Wilson-cc upper bound of f_v"}),
            "n_bins": (dims, n_bins, {"long_name": "number of bins"}),
            "global_value": ("statistic", whole.estimate.values,
                             {"long_name": "statistic of the whole data set"}),
            "global_se": ("statistic", whole.se.values,
                          {"long_name": f"bootstrap standard error ({n_boot} replicates)"}),
            "rank_correlation": correlation,
        },
        coords={"statistic": list(STATISTICS), "by": list(VARIABLES)},
    )
    out["by"].attrs["binning"] = "uE: 100 equal-count bins; X1, X2: strata bins, >= 100 points"
    return attach(out, data_file=FILE, E="U0 - prediction", uE="sqrt(uncertainty_total)",
                  n_points=ds.sizes["sample"], n_boot_per_bin=local["zms", "uE"].attrs["n_boot"],
                  seed=seed)


def print_tables(result: xr.Dataset, orders: xr.Dataset | None) -> None:
    print("\nFraction of valid bins (Wilson-cc 95 % interval; target 0.95; 'published': "
          "TARGETS.md)")
    rows = [["analysis", "bins", "f_v", "interval", "excludes 0.95", "published"]]
    for statistic in STATISTICS:
        for by in VARIABLES:
            r = result.sel(statistic=statistic, by=by)
            lo, hi = float(r.fraction_valid_low), float(r.fraction_valid_high)
            rows.append([f"{LABELS[statistic]} | {by}", str(int(r.n_bins)),
                         f"{float(r.fraction_valid):.2f}", f"[{lo:.2f}, {hi:.2f}]",
                         "yes" if not lo <= 0.95 <= hi else "no",
                         PUBLISHED_FV[statistic] if by == "uE" else ""])
    print(format_table(rows))

    print("\nWhole data set (bootstrap standard error)")
    rows = [["statistic", "value", "se", "published"]]
    for statistic, label in (("zms", "<Z²>"), ("zm", "<Z>")):
        r = result.sel(statistic=statistic)
        rows.append([label, f"{float(r.global_value):.4f}", f"{float(r.global_se):.4f}",
                     PUBLISHED_GLOBAL[statistic]])
    print(format_table(rows))

    print("\nSpearman rank correlations")
    rows = [["pair", "measured", "published"]]
    for (a, b), published in PUBLISHED_RANK.items():
        value = float(result.rank_correlation.sel(variable=a, variable2=b))
        rows.append([f"{a} – {b}", f"{value:.4f}", published])
    print(format_table(rows))

    if orders is not None:
        print(f"\nData-order sensitivity of f_v (LZMS, {orders.attrs['n_bins']} equal-count "
              f"bins, {orders.sizes['order']} random orders of the ties)")
        rows = [["by", "distinct values", "mean f_v", "2.5 %", "97.5 %", "min", "max"]]
        for by in orders.by.values:
            r = orders.sel(by=by)
            fv = r.fraction_valid.values
            rows.append([str(by), str(int(r.n_distinct)), f"{float(r['mean']):.3f}",
                         f"{float(r.q025):.2f}", f"{float(r.q975):.2f}", f"{fv.min():.2f}",
                         f"{fv.max():.2f}"])
        print(format_table(rows))


def main(argv: list[str] | None = None) -> None:
    p = parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--n-orders", type=int, default=None,
                   help="random data orders of the order-sensitivity study (default 200, 3 "
                        "with --quick; 0 skips it)")
    args = p.parse_args(argv)
    n_orders = args.n_orders if args.n_orders is not None else (3 if args.quick else 200)
    n = 100 if args.quick else 5000
    files = [f"{NAME}.nc", *(f"local_{s}_{by}.nc" for s in STATISTICS for by in VARIABLES),
             "zscores.png", "local.png", "fraction_valid.png", "rank_correlation.png"]
    if n_orders > 0:
        files += ["order_sensitivity.nc", "order_sensitivity.png"]
    out = prepare_output(args.output, files, args.overwrite)
    ds = load()

    with Timer(f"local analyses LZM, LZMS on uE, X1, X2 ({n} BCa replicates per bin)"):
        local = local_analyses(ds, n, args.seed)
    correlation = ds.uqcal.rank_correlation(["X1", "X2"])
    result = summary(ds, local, correlation, n, args.seed)
    save_netcdf(result, out[f"{NAME}.nc"])
    for (statistic, by), r in local.items():
        save_netcdf(r, out[f"local_{statistic}_{by}.nc"])

    orders = None
    if n_orders > 0:
        with Timer(f"data-order sensitivity ({n_orders} orders × {len(VARIABLES)} variables)"):
            orders = xr.concat(
                [ds.uqcal.order_sensitivity("zms", by=by, n_orders=n_orders, n_bins=100, n_boot=n,
                                            seed=args.seed) for by in VARIABLES],
                dim="by", combine_attrs="drop_conflicts")
        orders = orders.assign_coords(
            by=list(VARIABLES),
            n_distinct=("by", [np.unique(ds[by].values).size for by in VARIABLES],
                        {"long_name": "number of distinct values"}))
        orders.attrs["by"] = ", ".join(VARIABLES)
        save_netcdf(orders, out["order_sensitivity.nc"])

    print_tables(result, orders)

    figure, axs = plt.subplots(1, 3, figsize=(21, 5), layout="constrained")
    for ax, by in zip(axs, VARIABLES, strict=True):
        xuqcal.plot.zscores(ds, by=by, ax=ax)
        ax.set_title(f"Z against {by} (running mean and RMS)")
    save_figure(figure, out["zscores.png"])

    figure, axs = plt.subplots(2, 3, figsize=(18, 8.5), layout="constrained")
    for (statistic, by), ax in zip(local, axs.ravel(), strict=True):
        xuqcal.plot.local(local[statistic, by], ax=ax)
        ax.set_title(f"{LABELS[statistic]} | {by}: {ax.get_title()}", fontsize="small")
    save_figure(figure, out["local.png"])

    ax = xuqcal.plot.fraction_valid({f"{LABELS[s]} | {by}": local[s, by] for s, by in local})
    ax.figure.set_size_inches(9, 4)
    ax.set_ylim(0, 1.05)
    save_figure(ax, out["fraction_valid.png"])

    ax = xuqcal.plot.rank_correlation(correlation)
    ax.set_title("Spearman rank correlations, QM9 U0")
    save_figure(ax, out["rank_correlation.png"])

    if orders is not None:
        figure, axs = plt.subplots(1, 3, figsize=(16, 4), layout="constrained")
        for ax, by in zip(axs, VARIABLES, strict=True):
            xuqcal.plot.order_sensitivity(orders.sel(by=by).assign_attrs(
                by=by, n_bins=orders.attrs["n_bins"]), ax=ax)
        save_figure(figure, out["order_sensitivity.png"])


if __name__ == "__main__":
    main()
