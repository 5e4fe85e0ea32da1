"""Statistics without a predefined reference on the nine shared data sets: CC, ENCE and ZMSE
validated against simulated references.

For every shared set, ``validate(ds, ["zms", "cc", "ence", "zmse"], n_boot=5000,
n_mc=10_000, n_bins=20)``: the estimates with their BCa intervals (5000 replicates), the
simulated references with D = normal (``SimN``, ``Sim2N``) and D = t6 (``SimT``, ``Sim2T``) on
the set's own uncertainties (n_mc = 10 000), ζ under every scheme and the verdict of the
recommended workflow (``not usable`` when the references of the two generators disagree). ZMS,
with its predefined reference, is validated alongside for comparison (NetCDF and figures;
``all_schemes=True`` simulates its references too). The
table of ``../shared/spec/TARGETS.md`` (sets 1 and 7) is printed with the published values side
by side. Needs the shared data folder (``../shared/data`` beside the repository, or
``XUQCAL_SHARED_DATA``). About 20 s on 2 cores::

    python examples/simulated_references.py [--output DIR] [--overwrite] [--quick]

Writes ``simulated_references.nc`` (the validation of every set over a ``dataset`` dimension;
``sim_mean``/``sim_se``/``sim_q025``/``sim_q975`` over ``dataset × statistic × generator``,
``zeta`` over ``dataset × statistic × scheme``) and ``simulated_references_zeta_set<k>.png``
(the ζ-scores of every scheme, one figure per set).
"""

from __future__ import annotations

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
from xuqcal.analysis.validation import NOT_USABLE

NAME = "simulated_references"
STATISTICS = ("zms", "cc", "ence", "zmse")
TABLE = ("cc", "ence", "zmse")
N_BINS = 20
#: TARGETS.md, statistics without a predefined reference (20 equal-count bins on uE, simulated
#: means with n_mc = 10 000), as printed there: set -> statistic -> (estimate, SimN, SimT);
#: "": not published.
PUBLISHED = {
    1: {"cc": ("0.50", "0.40", "0.38"), "ence": ("0.125", "0.056", ""),
        "zmse": ("0.255", "0.112", "")},
    7: {"cc": ("0.31", "0.37", "0.35"), "ence": ("0.066", "0.026", ""),
        "zmse": ("0.118", "0.043", "")},
}


def table(result: xr.Dataset, numbers: list[int]) -> str:
    """CC, ENCE, ZMSE of every set with their references, every scheme's ζ and the verdict;
    a ``published`` row below each statistic of a published set."""
    schemes = [str(s) for s in result.scheme.values if s != "BS"]
    generators = [str(g) for g in result.generator.values]
    header = ["set", "stat", "estimate", "interval",
              *[f"Sim{'N' if g == 'normal' else 'T' if g == 't6' else f'[{g}]'}" for g in
                generators],
              *[f"ζ_{s}" for s in schemes], "verdict"]
    rows = [header]
    for k, label in zip(numbers, result.dataset.values, strict=True):
        for key in TABLE:
            r = result.sel(dataset=label, statistic=key)
            verdict = str(r.verdict.values)
            verdict = "not usable" if verdict == NOT_USABLE else \
                f"{verdict} ({r.verdict_scheme.values})"
            rows.append([
                str(label), key, f"{float(r.estimate):#.3g}",
                f"[{float(r.ci_low):#.3g}, {float(r.ci_high):#.3g}]",
                *[f"{float(r.sim_mean.sel(generator=g)):#.3g}" for g in generators],
                *[f"{float(r.zeta.sel(scheme=s)):.2f}" for s in schemes], verdict,
            ])
            if k in PUBLISHED:
                value, sim_n, sim_t = PUBLISHED[k][key]
                published = {"normal": sim_n, "t6": sim_t}
                rows.append([
                    "  published", "", value, "", *[published.get(g, "") for g in generators],
                    *["" for _ in schemes], "",
                ])
    return format_table(rows, left=(0, 1, -1))


def main(argv: list[str] | None = None) -> None:
    p = parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--sets", type=int, nargs="+", default=None,
                   help="shared data sets to use (default: all nine)")
    args = p.parse_args(argv)
    numbers = args.sets or list(SHARED_SETS)
    files = [f"{NAME}.nc", *(f"{NAME}_zeta_set{k}.png" for k in numbers)]
    out = prepare_output(args.output, files, args.overwrite)
    sets = load_sets(numbers)
    n_boot, n_mc = (200, 100) if args.quick else (5000, 10_000)

    results = {}
    with Timer(f"validation of {len(sets)} data sets (BCa B = {n_boot}, n_mc = {n_mc}, "
               f"{N_BINS} bins)"):
        for label, ds in sets.items():
            results[label] = xuqcal.validate(ds, list(STATISTICS), n_boot=n_boot, n_mc=n_mc,
                                             n_bins=N_BINS, seed=args.seed, all_schemes=True)
    result = xr.concat(list(results.values()), dim="dataset", combine_attrs="drop_conflicts")
    result = result.assign_coords(
        dataset=list(results),
        size=("dataset", [ds.sizes["sample"] for ds in sets.values()],
              {"long_name": "number of points M"}))
    result.attrs.update(description="validation of statistics without a predefined reference "
                                    "against simulated references",
                        data_sets=", ".join(f"{k}: {SHARED_SETS[k][1]}" for k in numbers))
    save_netcdf(result, out[f"{NAME}.nc"])

    print(f"\nStatistics without a predefined reference ({N_BINS} equal-count bins on uE; BCa "
          f"B = {n_boot}; simulated means with n_mc = {n_mc}; 'published': TARGETS.md)")
    print(table(result, numbers))
    print("ζ_BS does not apply (no predefined reference). 'not usable': the simulated "
          "references of D = normal and t6 differ beyond their combined uncertainty, so the "
          "statistic cannot be validated while D is unknown.")

    for k, (label, r) in zip(numbers, results.items(), strict=True):
        ax = xuqcal.plot.zeta(r)
        ax.set_title(f"{label}: ζ-scores ({N_BINS} bins, n_mc = {n_mc}, B = {n_boot})")
        save_figure(ax, out[f"{NAME}_zeta_set{k}.png"])


if __name__ == "__main__":
    main()
