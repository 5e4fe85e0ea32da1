"""Average calibration of the nine shared data sets: ZMS and RCE with BCa intervals.

For every shared set: <Z²> (ZMS) and RCE with their 95 % BCa intervals from B = 10 000
bootstrap replicates, their ζ-scores against the predefined references (ZMS = 1, RCE = 0) and
the verdicts (scheme ``BS``; the simulated schemes, n_mc = 10 000, are kept in the results for
comparison: ``all_schemes=True``, since ZMS and RCE need no simulated reference). The table
of ``../shared/spec/TARGETS.md`` (sets 1, 2, 3 and 7) is printed with the published values
side by side. Needs the shared data folder (``../shared/data`` beside the
repository, or ``XUQCAL_SHARED_DATA``). About 10 s on 2 cores::

    python examples/average_calibration.py [--output DIR] [--overwrite] [--quick]

Writes ``average_calibration.nc`` (the validation of every set over a ``dataset`` dimension:
``estimate``, ``ci_low``, ``ci_high`` over ``dataset × statistic``, ``zeta`` and ``valid`` over
``dataset × statistic × scheme``, ``verdict``...) and ``average_calibration_zeta.png`` (the
ζ-scores of every scheme, one panel per set).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from _common import (
    SHARED_SETS,
    Timer,
    format_table,
    load_sets,
    parser,
    prepare_output,
    save_figure,
    save_netcdf,
)

import xuqcal

NAME = "average_calibration"
STATISTICS = ("zms", "rce")
#: TARGETS.md, average calibration (BCa, 10 000 replicates, 95 %): set -> statistic ->
#: (estimate, ci_low, ci_high, ζ), as published.
PUBLISHED = {
    1: {"zms": (0.960, 0.867, 1.10, -0.28), "rce": (0.0186, -0.0209, 0.0542, 0.47)},
    2: {"zms": (0.885, 0.803, 0.995, -1.05), "rce": (-0.0387, -0.107, 0.0193, -0.67)},
    3: {"zms": (1.120, 1.05, 1.20, 1.67), "rce": (-0.00748, -0.0524, 0.0400, -0.16)},
    7: {"zms": (0.972, 0.936, 1.01, -0.71), "rce": (-0.264, -0.685, -0.0028, -1.01)},
}


def combine(results: dict[str, xr.Dataset], sizes: list[int]) -> xr.Dataset:
    """One Dataset over ``dataset`` from the validation of each set."""
    out = xr.concat(list(results.values()), dim="dataset", combine_attrs="drop_conflicts")
    return out.assign_coords(dataset=list(results),
                             size=("dataset", sizes, {"long_name": "number of points M"}))


def table(result: xr.Dataset, numbers: list[int]) -> str:
    """The TARGETS.md table, with a ``published`` row below each published set."""
    header = ["set", "M", "ZMS", "ZMS interval", "ζ_ZMS", "RCE", "RCE interval", "ζ_RCE",
              "verdict ZMS", "verdict RCE"]

    def cells(estimate, low, high, zeta):
        return [f"{estimate:#.3g}", f"[{low:#.3g}, {high:#.3g}]", f"{zeta:.2f}"]

    rows = [header]
    for k, label in zip(numbers, result.dataset.values, strict=True):
        r = result.sel(dataset=label, scheme="BS")
        row = [str(label), str(int(r["size"]))]
        for key in STATISTICS:
            s = r.sel(statistic=key)
            row += cells(float(s.estimate), float(s.ci_low), float(s.ci_high), float(s.zeta))
        row += [str(r.verdict.sel(statistic=key).values) for key in STATISTICS]
        rows.append(row)
        if k in PUBLISHED:
            published = ["  published", ""]
            for key in STATISTICS:
                published += cells(*PUBLISHED[k][key])
            rows.append([*published, "", ""])
    return format_table(rows, left=(0, 8, 9))


def main(argv: list[str] | None = None) -> None:
    p = parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--sets", type=int, nargs="+", default=None,
                   help="shared data sets to use (default: all nine)")
    args = p.parse_args(argv)
    numbers = args.sets or list(SHARED_SETS)
    out = prepare_output(args.output, [f"{NAME}.nc", f"{NAME}_zeta.png"], args.overwrite)
    sets = load_sets(numbers)
    n_boot, n_mc = (200, 50) if args.quick else (10_000, 10_000)

    results = {}
    with Timer(f"validation of {len(sets)} data sets (BCa B = {n_boot}, n_mc = {n_mc})"):
        for label, ds in sets.items():
            results[label] = xuqcal.validate(ds, list(STATISTICS), n_boot=n_boot, n_mc=n_mc,
                                             seed=args.seed, all_schemes=True)
    result = combine(results, [ds.sizes["sample"] for ds in sets.values()])
    result.attrs.update(description="average calibration of the shared data sets: ZMS and "
                                    "RCE with BCa intervals, ζ-scores and verdicts",
                        data_sets=", ".join(f"{k}: {SHARED_SETS[k][1]}" for k in numbers))
    save_netcdf(result, out[f"{NAME}.nc"])

    print(f"\nAverage calibration (BCa, {n_boot} replicates, 95 %; verdicts by the scheme BS; "
          "'published': TARGETS.md)")
    print(table(result, numbers))

    columns = min(3, len(results))
    rows = math.ceil(len(results) / columns)
    figure, axs = plt.subplots(rows, columns, figsize=(4.5 * columns + 1.5, 3.4 * rows),
                               layout="constrained", squeeze=False)
    for ax, (label, r) in zip(axs.ravel(), results.items(), strict=False):
        xuqcal.plot.zeta(r, ax=ax)
        z = r.zeta.sel(scheme="BS").values
        ax.set_title(f"{label}: ζ_ZMS = {z[0]:.2f}, ζ_RCE = {z[1]:.2f}", fontsize="medium")
        ax.set_ylim(min(-3.0, np.nanmin(r.zeta.values) - 0.3),
                    max(3.0, np.nanmax(r.zeta.values) + 0.3))
        if ax is not axs.ravel()[len(results) - 1]:
            ax.get_legend().remove()
    for ax in axs.ravel()[len(results):]:
        ax.set_visible(False)
    figure.suptitle(f"Average calibration: ζ-scores (BCa, B = {n_boot})")
    save_figure(figure, out[f"{NAME}_zeta.png"])


if __name__ == "__main__":
    main()
