"""``xuqcal compare``: rank models evaluated on the same points.

Several files (one per model, read with the same options and stacked along ``dataset``,
labelled by file name or ``--names``), or one NetCDF input dataset whose variables have a
model dimension (``--dim``), are compared by :func:`xuqcal.compare` (paired bootstrap
differences of the distances to calibration, BCa intervals, verdicts, rank probabilities),
:func:`xuqcal.paired_scores` (mean CRPS, NLL and interval score, Diebold–Mariano tests) and
:func:`xuqcal.sip_matrix` (systematic improvement probabilities). The command prints a ranking
table per statistic, the significant pairs, the mean scores and the SIP matrix, and writes
all of it to one NetCDF file with ``-o``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr

from xuqcal.analysis.compare import (
    COMPARED_STATISTICS,
    DEFAULT_STATISTICS,
    PAIRINGS,
    ranking_table,
)
from xuqcal.cli.common import (
    add_dependence_options,
    comma_items,
    dependence_arguments,
    resample_text,
)
from xuqcal.cli.terminal import escape
from xuqcal.core import defaults

#: The point-wise scores of the SIP matrix.
SIP_SCORES = ("crps", "nll", "interval")


def _statistics(text: str) -> list[str]:
    keys = comma_items(text)
    wrong = [k for k in keys if k not in COMPARED_STATISTICS]
    if wrong:
        raise argparse.ArgumentTypeError(
            f"{', '.join(wrong)} cannot be compared; choose from "
            f"{', '.join(COMPARED_STATISTICS)}")
    return keys


def add_parser(commands, *, data_options: Callable, cluster_options: Callable,
               positive_int: Callable) -> argparse.ArgumentParser:
    """Register ``compare`` on the sub-parsers ``commands`` of the ``xuqcal`` command (the
    option groups shared with the other commands are passed in)."""
    parser = commands.add_parser(
        "compare", help="rank models evaluated on the same points (paired differences)",
        description="Compare models on the same points: a paired bootstrap resamples the rows "
                    "once per replicate for every model; differences of the distances to "
                    "calibration with BCa intervals and verdicts, rank probabilities, mean "
                    "proper scores with Diebold-Mariano tests, and the SIP matrix. Give one "
                    "file per model (stacked along 'dataset', labelled by file name or "
                    "--names), or one NetCDF file over a model dimension (--dim).")
    parser.add_argument("files", type=Path, nargs="+", metavar="FILE",
                        help="one CSV, NetCDF or Zarr file per model (the same points in the "
                             "same rows), or one NetCDF file over a model dimension")
    data_options(parser, netcdf=True)
    add_dependence_options(parser)
    parser.add_argument("--dim", metavar="DIM",
                        help="the dimension of the models in a NetCDF input (default: "
                             "dataset for several files, else model)")
    parser.add_argument("--statistics", type=_statistics, default=list(DEFAULT_STATISTICS),
                        metavar="LIST",
                        help=f"comma-separated statistics (default: "
                             f"{','.join(DEFAULT_STATISTICS)}; any of "
                             f"{','.join(COMPARED_STATISTICS)})")
    parser.add_argument("--n-boot", type=positive_int, default=defaults.N_BOOT, metavar="N",
                        help=f"bootstrap replicates (default: {defaults.N_BOOT})")
    parser.add_argument("--seed", type=int, default=defaults.SEED,
                        help=f"seed of every random draw (default: {defaults.SEED})")
    parser.add_argument("--level", type=float, default=defaults.LEVEL,
                        help=f"confidence level of the intervals (default: {defaults.LEVEL:g})")
    parser.add_argument("--n-bins", type=positive_int, default=None, metavar="N",
                        help="bins of the binned statistics (default: recommended for the "
                             "compared points)")
    parser.add_argument("--pairing", choices=PAIRINGS, default="common",
                        help="common: the points every model has, resampled together "
                             "(default); independent: each model on its own points (ragged "
                             "sets; no scores or SIP)")
    parser.add_argument("--score", choices=SIP_SCORES, default="crps",
                        help="point-wise score of the SIP matrix (default: crps)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE.nc",
                        help="write every result to this NetCDF file (its folder must exist)")
    parser.add_argument("--overwrite", action="store_true",
                        help="allow replacing an existing output file")
    cluster_options(parser)
    return parser


def run(args: argparse.Namespace, *, read_data: Callable, check_outputs: Callable,
        compute_context: Callable) -> int:
    """``xuqcal compare`` (its ``-o`` output, if any, already locked by
    :func:`xuqcal.cli.commands.cmd_compare`), with the input and output helpers shared by the
    commands passed in (:func:`xuqcal.cli.commands.check_outputs`, its ``_read_data`` and
    ``compute_context``), as :func:`add_parser` is given the shared option groups: this module
    does not import :mod:`xuqcal.cli.commands`, which imports it."""
    import xuqcal

    if args.output is not None:
        check_outputs([args.output], inputs=args.files, overwrite=args.overwrite)
    ds = read_data(args)
    dim = args.dim or ("dataset" if "dataset" in ds.dims else "model")
    if dim not in ds.dims:
        raise ValueError(f"--dim: {dim!r} is not a dimension of the data (its dimensions: "
                         f"{', '.join(map(str, ds.dims))}); give one file per model or the "
                         "model dimension of the NetCDF file")
    with compute_context(args):
        dependence = dependence_arguments(args)
        result = xuqcal.compare(ds, args.statistics, dim=dim, n_boot=args.n_boot,
                                level=args.level, seed=args.seed, n_bins=args.n_bins,
                                pairing=args.pairing, **dependence).compute()
        if dependence:  # how the points were resampled (the comparison's own attributes
            # first: they hold the block length used), in the printed text and the output
            result.attrs.update({k: v for k, v in dependence.items() if k not in result.attrs})
        scores = sip = None
        if args.pairing == "common":
            # under dependence: cluster-robust or HAC Diebold-Mariano tests, and the SIP
            # bootstrap resampling the same groups or blocks
            scores = xuqcal.paired_scores(ds, dim=dim, **dependence)
            sip = xuqcal.sip_matrix(ds, args.score, dim=dim, n_boot=args.n_boot,
                                    level=args.level, seed=args.seed, **dependence)
    print(comparison_text(result, scores, sip, dim=dim))
    if args.output is not None:
        merged = merged_comparison(result, scores, sip)
        merged.attrs.update(source=", ".join(map(str, args.files)),
                            E_expression=args.E, uE_expression=args.uE)
        path = xuqcal.to_netcdf(merged, args.output, overwrite=args.overwrite)
        print(f"\nwritten: {escape(path)}")
    return 0


def merged_comparison(result: xr.Dataset, scores: xr.Dataset | None = None,
                      sip: xr.Dataset | None = None) -> xr.Dataset:
    """One Dataset of a comparison (:func:`xuqcal.compare`), its mean scores
    (:func:`xuqcal.paired_scores`) and its SIP matrix (:func:`xuqcal.sip_matrix`): the counts
    of points are the comparison's; the attributes of the scores and the SIP matrix that say
    how they were computed are kept as ``dm_test``, ``sip_score`` and ``sip_tie_rule``."""
    parts = [result]
    for part in (scores, sip):
        if part is not None:
            parts.append(part.drop_vars([c for c in ("n_samples", "n_dropped")
                                         if c in part.variables]))
    merged = xr.merge(parts, combine_attrs="override", compat="override", join="exact")
    if scores is not None:
        merged.attrs["dm_test"] = scores.attrs.get("dm_test", "")
    if sip is not None:
        merged.attrs.update(sip_score=sip.attrs.get("score", ""),
                            sip_tie_rule=sip.attrs.get("tie_rule", ""))
    return merged


def comparison_text(result: xr.Dataset, scores: xr.Dataset | None = None,
                    sip: xr.Dataset | None = None, *, dim: str = "model") -> str:
    """The printed report of ``xuqcal compare``: per statistic, the models by expected rank
    with their estimate, distance and probability of being best, and the significant pairs;
    then the mean scores with the Diebold–Mariano p-values, and the SIP matrix.

    Examples
    --------
    >>> import xuqcal
    >>> a = xuqcal.synthetic.nig(1000, nu=6, seed=0)
    >>> both = xuqcal.stack_datasets({"A": a, "B": a.assign(uE=a.uE * 0.8)}, dim="model")
    >>> text = comparison_text(xuqcal.compare(both, ["zms"], n_boot=200))
    >>> print(text.splitlines()[0].split(":")[0])
    Comparison of 2 models (A, B) on 1000 common points
    """
    labels = [str(x) for x in result[dim].values]
    n = int(np.max(result.n_samples.values))
    pairing = result.attrs.get("pairing", "common")
    where = f"{n} common points" if pairing == "common" else "their own points"
    lines = [f"Comparison of {len(labels)} models ({', '.join(labels)}) on {where}: "
             f"{result.attrs.get('interval', '')} at {result.attrs.get('level')}, n_boot "
             f"{result.attrs.get('n_boot')}, seed {result.attrs.get('seed')}"]
    resampled = resample_text(result)
    if resampled:
        lines.append(resampled)
    dropped = {lab: int(v) for lab, v in zip(labels, result.n_dropped.values, strict=True)
               if int(v)}
    if dropped:
        lines.append("points left out (absent from another model): " + ", ".join(
            f"{lab} {v}" for lab, v in dropped.items()))
    for key in result.statistic.values.tolist():
        one = result.sel(statistic=key)
        table = ranking_table(result, key, dim)
        lines += ["", f"{key} (distance {COMPARED_STATISTICS[key]})",
                  f"  {'model':<16} {'estimate':>10} {'distance':>10} {'P(best)':>8} "
                  f"{'mean rank':>9}"]
        for model, estimate, distance, rank, best in zip(
                table.model, table.estimate, table.distance, table["expected rank"],
                table["P(best)"], strict=True):
            lines.append(f"  {model[:16]:<16} {estimate:>10.4g} {distance:>10.4g} "
                         f"{best:>8.3f} {rank:>9.2f}")
        for model, better in zip(table.model, table["better than"], strict=True):
            for other in better:
                a, b = labels.index(model), labels.index(other)
                lines.append(f"  {model} better than {other}: difference "
                             f"{float(one.difference[a, b]):.4g} "
                             f"[{float(one.ci_low[a, b]):.4g}, "
                             f"{float(one.ci_high[a, b]):.4g}]")
        if not any(str(v) == "better" for v in one.verdict.values.ravel()):
            lines.append("  no significant difference between any two models")
    if scores is not None:
        names = scores.score.values.tolist()
        lines += ["", "mean scores (lower is better; Diebold-Mariano p-values of the pairs "
                      "below)",
                  "  " + f"{'model':<16}" + "".join(f"{s:>12}" for s in names)]
        for i, lab in enumerate(labels):
            lines.append("  " + f"{lab[:16]:<16}" + "".join(
                f"{float(scores.mean_score.values[i, j]):>12.5g}" for j in range(len(names))))
        for a in range(len(labels)):
            for b in range(a + 1, len(labels)):
                p = scores.dm_p_value.values[a, b]
                lines.append(f"  {labels[a]} - {labels[b]}: " + ", ".join(
                    f"{s} p = {p[j]:.3g}" for j, s in enumerate(names)))
    if sip is not None:
        lines += ["", f"SIP ({sip.attrs.get('score', '')}): fraction of the points where the "
                      "row's model scores better than the column's",
                  "  " + f"{'':<16}" + "".join(f"{lab[:10]:>12}" for lab in labels)]
        for a, lab in enumerate(labels):
            lines.append("  " + f"{lab[:16]:<16}" + "".join(
                f"{'':>12}" if a == b else f"{float(sip.sip.values[a, b]):>12.3f}"
                for b in range(len(labels))))
    return escape("\n".join(lines), lines=True)
