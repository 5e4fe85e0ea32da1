"""Extrapolation of ENCE and ZMSE to zero bins on the nine shared data sets (METHODS §7).

For N = 10, 20, …, 150 equal-count bins on uE (bins of at least 20 points), a straight line in
sqrt(N/M) is fitted over N > 20; a set is valid for a statistic when the 95 % t-interval of the
intercept contains 0 — a validation that needs no assumption on the generator D. Needs the
shared data folder (``../shared/data`` beside the repository, or ``XUQCAL_SHARED_DATA``)::

    python examples/zero_bins.py [--output DIR] [--overwrite] [--quick]

Writes ``zero_bins_summary.nc`` (intercepts, intervals, slopes and verdicts over data set and
statistic), ``zero_bins_set<k>.nc`` per data set and ``zero_bins_<statistic>.png`` (one panel
per data set). The computation is deterministic and fast; ``--quick`` uses sets 1 and 2 only.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import xarray as xr
from _common import SHARED_SETS, Timer, load_sets, parser, prepare_output, save_figure, save_netcdf

from xuqcal import studies
from xuqcal.plot import studies as plots

NAME = "zero_bins"
STATISTICS = ("ence", "zmse")
SUMMARY = ("intercept", "intercept_se", "intercept_low", "intercept_high", "slope", "slope_se",
           "zeta", "valid")


def main(argv: list[str] | None = None) -> None:
    p = parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--sets", type=int, nargs="+", default=None,
                   help="shared data sets to use (default: all nine; 1 2 with --quick)")
    args = p.parse_args(argv)
    numbers = args.sets or ([1, 2] if args.quick else list(SHARED_SETS))
    files = ["zero_bins_summary.nc", *(f"zero_bins_set{k}.nc" for k in numbers),
             *(f"zero_bins_{key}.png" for key in STATISTICS)]
    out = prepare_output(args.output, files, args.overwrite)
    sets = load_sets(numbers)

    results = {}
    with Timer(f"zero-bins extrapolation of {len(sets)} data sets"):
        for k, (label, ds) in zip(numbers, sets.items(), strict=True):
            results[label] = studies.zero_bins_extrapolation(ds, statistics=STATISTICS)
            save_netcdf(results[label], out[f"zero_bins_set{k}.nc"])
    summary = xr.concat(
        [r[list(SUMMARY)].expand_dims(dataset=[label]).assign(size=("dataset", [r.attrs["size"]]))
         for label, r in results.items()],
        dim="dataset", combine_attrs="drop_conflicts",
    )
    summary.attrs.pop("size", None)
    save_netcdf(summary, out["zero_bins_summary.nc"])
    table = summary[["intercept", "intercept_low", "intercept_high", "slope", "valid"]]
    print(table.to_dataframe().drop(columns="long_name").unstack("statistic").round(4)
          .to_string())

    columns = min(3, len(results))
    rows = math.ceil(len(results) / columns)
    for key in STATISTICS:
        figure, axs = plt.subplots(rows, columns, figsize=(5.5 * columns, 4 * rows),
                                   layout="constrained", squeeze=False)
        for ax, (label, r) in zip(axs.ravel(), results.items(), strict=False):
            plots.zero_bins_extrapolation(r, statistic=key, ax=ax)
            ax.set_title(f"{label}: {'valid' if bool(r.valid.sel(statistic=key)) else 'invalid'}",
                         fontsize="medium")
            ax.legend(fontsize="x-small")
        for ax in axs.ravel()[len(results):]:
            ax.set_visible(False)
        save_figure(figure, out[f"zero_bins_{key}.png"])


if __name__ == "__main__":
    main()
