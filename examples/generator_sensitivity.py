"""Sensitivity of simulated references to the generator D, on the real uncertainties of the
shared data sets 1 (Diffusion_RF) and 7 (QM9_E).

Simulated means (± se) of CC, ENCE, ZMSE and ZMS for D = t(ν), ν ∈ {3, 4, 5, 7, 10, 15, 20},
and D = normal (stored at ν = inf), with n_mc = 10 000 and 50 bins (METHODS §7). Needs the
shared data folder (``../shared/data`` beside the repository, or ``XUQCAL_SHARED_DATA``)::

    python examples/generator_sensitivity.py [--output DIR] [--overwrite] [--quick]

Writes ``generator_sensitivity.nc`` and ``generator_sensitivity.png`` (one panel per
statistic).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from _common import Timer, load_sets, parser, prepare_output, save_figure, save_netcdf

from xuqcal import studies
from xuqcal.plot import studies as plots

NAME = "generator_sensitivity"
STATISTICS = ("cc", "ence", "zmse", "zms")


def main(argv: list[str] | None = None) -> None:
    p = parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--sets", type=int, nargs="+", default=[1, 7],
                   help="shared data sets to use (default: 1 7)")
    args = p.parse_args(argv)
    out = prepare_output(args.output, [f"{NAME}.nc", f"{NAME}.png"], args.overwrite)
    sets = load_sets(args.sets)
    nu = [3, 10] if args.quick else [3, 4, 5, 7, 10, 15, 20]
    n_mc = 50 if args.quick else 10_000
    with Timer(f"simulations ({len(sets)} data sets, {len(nu) + 1} generators, n_mc = {n_mc})"):
        result = studies.generator_sensitivity_study(sets, nu=nu, statistics=STATISTICS,
                                                     n_bins=50, n_mc=n_mc, seed=args.seed)
    save_netcdf(result, out[f"{NAME}.nc"])
    table = result[["mean", "se"]].to_dataframe()[["mean", "se"]]
    print(table.unstack("statistic").round(4).to_string())

    figure, axs = plt.subplots(2, 2, figsize=(12, 8), layout="constrained")
    for ax, key in zip(axs.ravel(), STATISTICS, strict=True):
        plots.generator_sensitivity_study(result, statistic=key, ax=ax)
    save_figure(figure, out[f"{NAME}.png"])


if __name__ == "__main__":
    main()
