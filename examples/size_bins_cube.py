"""The size/bins sensitivity cube of ENCE and ZMSE on NIG data, and its fit in sqrt(N/M).

Simulated means of ENCE and ZMSE over M ∈ {2000, 4000, 8000, 12000, 16000},
N ∈ {10, 20, 30, 40, 50}, ν ∈ {3, 4, 5, 6, 12, 24}, D ∈ {normal, t6}, with n_mc = 5000 synthetic
data sets per cell; then ``θ_ref = a + α sqrt(N/M)`` per statistic and D (METHODS §7; for a
normal D, ENCE ≈ 0.56 sqrt(N/M)). A few minutes on 2 cores; each cell is checkpointed in the
output folder (``cube.nc.partial/``) and an interrupted run resumes::

    python examples/size_bins_cube.py [--output DIR] [--overwrite] [--quick]

Writes ``cube.nc`` (the cube), ``size_bins.nc`` (the cube with the fit) and
``size_bins_<statistic>.png``, and prints the fitted slopes.
"""

from __future__ import annotations

from _common import Timer, parser, prepare_output, save_figure, save_netcdf

from xuqcal import studies
from xuqcal.plot import studies as plots

NAME = "size_bins_cube"
STATISTICS = ("ence", "zmse")


def main(argv: list[str] | None = None) -> None:
    args = parser(NAME, __doc__.split("\n\n")[0]).parse_args(argv)
    files = ["cube.nc", "size_bins.nc", *(f"size_bins_{k}.png" for k in STATISTICS)]
    out = prepare_output(args.output, files, args.overwrite)
    if args.quick:
        grid = {"size": [400, 800], "n_bins": [5, 10], "nu": [6], "n_mc": 50}
    else:
        grid = {"size": [2000, 4000, 8000, 12000, 16000], "n_bins": [10, 20, 30, 40, 50],
                "nu": [3, 4, 5, 6, 12, 24], "n_mc": 5000}
    if (args.output / "cube.nc.partial").is_dir():
        print(f"resuming from the checkpoints in {args.output / 'cube.nc.partial'}")
    with Timer("size/bins cube"):
        result = studies.size_bins_study(STATISTICS, **grid, generators=("normal", "t6"),
                                         seed=args.seed, path=out["cube.nc"],
                                         overwrite=args.overwrite, progress=True)
    save_netcdf(result, out["size_bins.nc"])

    print("\nfit mean = a + alpha * sqrt(N / M) (weights 1 / se^2):")
    fit = result[["fit_a", "fit_a_se", "fit_alpha", "fit_alpha_se", "fit_chi2_dof"]]
    print(fit.to_dataframe().drop(columns=["long_name", "df"], errors="ignore")
          .round(4).to_string())
    for key in STATISTICS:
        for gen in result.generator.values:
            cell = result.sel(statistic=key, generator=gen)
            print(f"slope of {key} with D = {gen}: alpha = {float(cell.fit_alpha):.4f} "
                  f"± {float(cell.fit_alpha_se):.4f}")
        save_figure(plots.size_bins_study(result, statistic=key), out[f"size_bins_{key}.png"])


if __name__ == "__main__":
    main()
