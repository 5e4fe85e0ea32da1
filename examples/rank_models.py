"""Ranking of models evaluated on the same points: paired differences, ranks, scores and SIP.

Three groups of models of the shared data, each evaluated on one test set, are compared on
their common points with a paired bootstrap (:func:`xuqcal.compare`: each replicate resamples
the rows once, for every model of the group):

- ``logP``: the two RAS2023 graph convolutional networks ``10k_a_LS-GCN`` and ``150k_LS-GCN``
  (``RAS2023/logP_{10k_a,150k}_LS-GCN_test.csv``, E = logP - y_pred, uE = uq). **Alignment:**
  both files hold the same 5000 molecules in the same rows (their ``smiles`` and ``logP``
  columns are equal row by row; the script checks it and stops otherwise).
- ``Diffusion`` and ``Perovskite``: for each PAL2022 system its random forest ``RF``, linear
  regression ``LR`` and Gaussian process ``GPR`` (``PAL2022/{system}_{RF,LR,GPR_Bayesian}
  _Test_cal.csv``, columns ``E`` and ``uE``). **Alignment:** these files have no column
  identifying the test point (only ``E``, ``X`` and ``uE``; ``X`` is the other uncertainty of
  the same model, not a feature), so the alignment cannot be proven from a shared column. What
  the script checks: the three files of a system have the same number of rows (2040 for
  Diffusion, 3836 for Perovskite) and the errors of any two models in the same row are
  strongly correlated (Pearson r = 0.55 to 0.71 for Diffusion, 0.44 to 0.70 for Perovskite,
  where the rows of one file shuffled give |r| < 0.08): the models err together on the same
  hard points, which they would not if the rows held different points. The comparison
  therefore takes row ``i`` of the three files as the same test point.
  **Filter:** the shared-data rule ``uE <= 1e-6 * sd(E)`` (sd with n - 1) removes 2 rows of
  Perovskite RF (rows 925 and 1709) and 18 rows of Perovskite GPR (one of them with a
  negative uE), none of the Diffusion files. To keep the rows aligned the removed rows are
  not deleted but marked absent (E and uE both NaN, every file re-indexed on its row
  numbers); ``pairing="common"`` then compares the 3816 Perovskite rows present in all three
  models and reports how many of each model's rows were left out (``n_dropped``: RF 18, LR
  20, GPR 2, the filtered rows of RF and GPR being distinct).

For each group, on the common points:

- :func:`xuqcal.compare` of ZMS, RCE, CC, ENCE and ZMSE (distances to calibration ``|zms -
  1|``, ``|rce|``, ``1 - cc``, ``ence``, ``zmse``; BCa intervals of the paired differences, B =
  10 000), verdicts, rank probabilities and P(best);
- :func:`xuqcal.paired_scores`: mean CRPS, NLL and interval score (95 %) with the
  Diebold–Mariano p-value of every pair;
- :func:`xuqcal.sip_matrix`: the systematic improvement probability of the CRPS (B = 10 000);
- :func:`xuqcal.corp_reliability` (B = 2000): the CORP decomposition ``S = MCB − DSC + UNC``
  of the squared-error and QLIKE scores of uE², and :func:`xuqcal.nll_split` (calibration and
  sharpness terms of the NLL).

The ranking of each group is printed (:func:`xuqcal.cli.compare.comparison_text`, as
``xuqcal compare``), followed by the decomposition table. Needs the shared data folder
(``../shared/data`` beside the repository, or ``XUQCAL_SHARED_DATA``)::

    python examples/rank_models.py [--output DIR] [--overwrite] [--quick]

Writes, for each group ``G`` in ``logP``, ``Diffusion``, ``Perovskite``: ``compare_G.nc``
(the comparison over ``model × other × statistic × rank`` merged with the mean scores, the
Diebold–Mariano tests over ``score`` and the SIP matrix ``sip``, ``sip_low``, ``sip_high``),
``corp_G.nc`` (the CORP fits and decompositions over ``model``, with the NLL split), and the
figures ``forest_G.png`` (paired differences, one panel per statistic), ``ranks_G.png`` (rank
probabilities, one panel per statistic), ``sip_G.png`` and ``corp_G.png`` (one panel per
model). ``--quick`` uses 200 replicates, the first 1000 rows of each file and only zms and
ence (a smoke run).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from _common import (
    PAL_FILTER,
    Timer,
    parser,
    prepare_output,
    save_figure,
    save_netcdf,
    shared_data_dir,
)

import xuqcal
from xuqcal.cli.compare import comparison_text, merged_comparison

NAME = "rank_models"
DIM = "model"
STATISTICS = ("zms", "rce", "cc", "ence", "zmse")
#: The statistics of --quick (a smoke run: fewer panels to draw).
QUICK_STATISTICS = ("zms", "ence")
#: The groups of models: group -> {model label: (file relative to the shared folder, E, uE,
#: where)}.
LOGP = {"10k_a_LS-GCN": "RAS2023/logP_10k_a_LS-GCN_test.csv",
        "150k_LS-GCN": "RAS2023/logP_150k_LS-GCN_test.csv"}
PAL_MODELS = {"RF": "RF", "LR": "LR", "GPR": "GPR_Bayesian"}
GROUPS: dict[str, dict[str, tuple[str, str, str, str | None]]] = {
    "logP": {label: (path, "logP - y_pred", "uq", None) for label, path in LOGP.items()},
    **{system: {label: (f"PAL2022/{system}_{stem}_Test_cal.csv", "E", "uE", PAL_FILTER)
                for label, stem in PAL_MODELS.items()}
       for system in ("Diffusion", "Perovskite")},
}
#: The smallest correlation of two models' errors in the same rows taken as evidence that the
#: rows hold the same points (shuffled rows give |r| < 0.08 on these files).
MIN_ERROR_CORRELATION = 0.3
QUICK_ROWS = 1000
FILES = tuple(f"{kind}_{group}.{ext}" for group in GROUPS
              for kind, ext in (("compare", "nc"), ("corp", "nc"), ("forest", "png"),
                                ("ranks", "png"), ("sip", "png"), ("corp", "png")))


def _fail(message: str) -> None:
    sys.exit(f"error: {message}")


def check_alignment(group: str, paths: dict[str, Path]) -> str:
    """Check that the files of a group hold the same points in the same rows; returns a line
    saying how (see the module's docstring); exits with a message when they do not."""
    tables = {label: pd.read_csv(path) for label, path in paths.items()}
    lengths = {label: len(t) for label, t in tables.items()}
    if len(set(lengths.values())) > 1:
        _fail(f"{group}: the files have different numbers of rows {lengths}")
    labels = list(tables)
    first = tables[labels[0]]
    shared = [c for c in ("smiles", "logP") if all(c in t.columns for t in tables.values())]
    if shared:
        for label in labels[1:]:
            for column in shared:
                if not first[column].equals(tables[label][column]):
                    _fail(f"{group}: column {column!r} differs between {labels[0]} and "
                          f"{label}: the rows are not the same points")
        return (f"{group}: {lengths[labels[0]]} rows, the columns {' and '.join(shared)} equal "
                "row by row in every file")
    correlations = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            r = float(np.corrcoef(tables[a]["E"], tables[b]["E"])[0, 1])
            if r < MIN_ERROR_CORRELATION:
                _fail(f"{group}: the errors of {a} and {b} in the same rows are hardly "
                      f"correlated (r = {r:.2f}): are the rows the same points?")
            correlations.append(f"{a}-{b} {r:.2f}")
    return (f"{group}: {lengths[labels[0]]} rows, no shared column; errors in the same rows "
            f"correlated (Pearson r: {', '.join(correlations)})")


def load_group(group: str, folder: Path, rows: int | None) -> xr.Dataset:
    """The models of a group over ``model × sample``, ``sample`` the row of the files; the rows
    removed by a filter are kept as absent points (E and uE NaN)."""
    spec = GROUPS[group]
    paths = {label: folder / path for label, (path, *_) in spec.items()}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        _fail("shared data files not found (set XUQCAL_SHARED_DATA to the folder of "
              "../shared/data):\n  " + "\n  ".join(missing))
    print(check_alignment(group, paths))
    sets = []
    for label, (_, E, uE, where) in spec.items():
        ds = xuqcal.read_csv(paths[label], E=E, uE=uE, where=where, name=label)
        n_rows = int(ds.attrs.get("n_rows_read", ds.sizes["sample"]))
        dropped = np.setdiff1d(np.arange(n_rows), ds["sample"].values)
        if dropped.size:
            print(f"  {label}: {dropped.size} rows removed by {where} (marked absent): rows "
                  f"{', '.join(map(str, dropped[:20]))}{' ...' if dropped.size > 20 else ''}")
        sets.append(ds.reindex(sample=np.arange(n_rows)).assign_coords(
            source=paths[label].name))
    models = xr.concat(sets, dim=pd.Index(list(spec), name=DIM), data_vars="all",
                       coords="different", compat="equals", join="exact",
                       combine_attrs="drop_conflicts")
    return models if rows is None else models.isel(sample=slice(0, rows))


def common_points(models: xr.Dataset) -> xr.Dataset:
    """The points present in every model (the points :func:`xuqcal.compare` pairs)."""
    present = (np.isfinite(models["E"]) & np.isfinite(models["uE"])).all(DIM)
    return models.isel(sample=np.flatnonzero(present.values))


def decomposition_text(corp: xr.Dataset, split: xr.Dataset) -> str:
    """One line per model: the CORP decomposition of QLIKE and SE, the NLL split."""
    lines = ["CORP decomposition S = MCB - DSC + UNC on the common points (QLIKE | squared "
             "error), and the NLL split nll = calibration + sharpness + constant",
             f"  {'model':<14} {'QLIKE':>8} {'MCB':>8} {'DSC':>8} {'UNC':>8} | {'SE':>9} "
             f"{'MCB':>9} {'DSC':>9} | {'nll':>8} {'calib.':>8} {'sharp.':>8}"]
    for label in corp[DIM].values:
        q = corp.sel({DIM: label, "score": "qlike"})
        s = corp.sel({DIM: label, "score": "squared_error"})
        n = split.sel({DIM: label})
        lines.append(
            f"  {str(label)[:14]:<14} {float(q.score_value):>8.4f} {float(q.mcb):>8.4f} "
            f"{float(q.dsc):>8.4f} {float(q.unc):>8.4f} | {float(s.score_value):>9.3g} "
            f"{float(s.mcb):>9.3g} {float(s.dsc):>9.3g} | {float(n.nll):>8.4f} "
            f"{float(n.calibration):>8.4f} {float(n.sharpness):>8.4f}")
    return "\n".join(lines)


def rank_figure(result: xr.Dataset):
    """One rank heat map per statistic, side by side."""
    keys = result.statistic.values.tolist()
    k = result.sizes[DIM]
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys) + 1, 0.6 * k + 1.8),
                             layout="constrained")
    for ax, key in zip(np.atleast_1d(axes), keys, strict=True):
        xuqcal.plot.rank_heatmap(result, key, ax=ax)
        ax.set_title(key)
    return fig


def analyse(group: str, models: xr.Dataset, *, statistics: tuple[str, ...], n_boot: int,
            n_boot_corp: int, seed: int, out: dict[str, Path]) -> xr.Dataset:
    """Compare, score, SIP and CORP of one group; writes its files, prints its ranking;
    returns the comparison."""
    k, m = models.sizes[DIM], models.sizes["sample"]
    with Timer(f"{group}: compare {k} models on {m} rows (B = {n_boot})"):
        result = xuqcal.compare(models, list(statistics), dim=DIM, n_boot=n_boot,
                                seed=seed).compute()
    with Timer(f"{group}: paired scores and SIP matrix (B = {n_boot})"):
        scores = xuqcal.paired_scores(models, dim=DIM)
        sip = xuqcal.sip_matrix(models, "crps", dim=DIM, n_boot=n_boot, seed=seed)
    common = common_points(models)
    with Timer(f"{group}: CORP reliability on {common.sizes['sample']} common points "
               f"(B = {n_boot_corp})"):
        corp = xuqcal.corp_reliability(common, n_boot=n_boot_corp, seed=seed).compute()
        split = xuqcal.nll_split(common).compute()

    comparison = merged_comparison(result, scores, sip)
    corp_out = corp.merge(split.rename({v: f"nll_{v}" if v != "nll" else v
                                        for v in split.data_vars}),
                          combine_attrs="override", compat="override")
    for ds in (comparison, corp_out):
        ds.attrs["group"] = group
        ds.attrs["data_sets"] = ", ".join(f"{label}: {source}" for label, source in zip(
            models[DIM].values, models["source"].values, strict=True))
    save_netcdf(comparison, out[f"compare_{group}.nc"])
    save_netcdf(corp_out, out[f"corp_{group}.nc"])

    print(f"\n=== {group} ===")
    print(comparison_text(result, scores, sip, dim=DIM))
    print()
    print(decomposition_text(corp, split))
    print()

    save_figure(xuqcal.plot.difference_forest(result).figure, out[f"forest_{group}.png"])
    save_figure(rank_figure(result), out[f"ranks_{group}.png"])
    save_figure(xuqcal.plot.sip_heatmap(sip), out[f"sip_{group}.png"])
    save_figure(xuqcal.plot.corp_reliability_diagram(corp, col=DIM).figure,
                out[f"corp_{group}.png"])
    return result


def main(argv: list[str] | None = None) -> None:
    p = parser(NAME, __doc__.split("\n\n")[0])
    args = p.parse_args(argv)
    out = prepare_output(args.output, FILES, args.overwrite)
    folder = shared_data_dir()
    if args.quick:
        n_boot, n_boot_corp, rows, statistics = 200, 200, QUICK_ROWS, QUICK_STATISTICS
    else:
        n_boot, n_boot_corp, rows, statistics = 10_000, 2000, None, STATISTICS
    groups = {group: load_group(group, folder, rows) for group in GROUPS}

    results = {}
    with warnings.catch_warnings():
        if args.quick:  # few replicates on purpose: the numbers mean nothing
            warnings.simplefilter("ignore", xuqcal.DegenerateIntervalWarning)
        for group, models in groups.items():
            results[group] = analyse(group, models, statistics=statistics, n_boot=n_boot,
                                     n_boot_corp=n_boot_corp, seed=args.seed, out=out)

    print("Best model by expected rank (P(best)) per group and statistic")
    for group, result in results.items():
        expected = (result.rank_probability * result["rank"]).sum("rank")
        cells = []
        for key in statistics:
            best = int(expected.sel(statistic=key).argmin(DIM))
            label = str(result[DIM].values[best])
            cells.append(f"{key} {label} ({float(result.p_best.sel(statistic=key)[best]):.2f})")
        print(f"  {group}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
