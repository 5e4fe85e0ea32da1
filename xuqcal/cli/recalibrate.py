"""``xuqcal recalibrate``: fit a recalibrator on a training CSV, apply it to a test CSV.

::

    xuqcal recalibrate TRAIN.csv TEST.csv --E EXPR --uE EXPR [--test-E EXPR --test-uE EXPR]
        [--features LIST] [--formula COLUMN] [--method bvs] [--by uE] [--n-bins 40]
        [--loss nll] -o out.nc [--overwrite]

``--E``/``--uE`` are evaluated over the columns of ``TRAIN``; ``--test-E``/``--test-uE`` over
those of ``TEST`` (and ``--reference``), by default the same expressions. ``--where`` and
``--features`` apply to every file. The features (``--features``, and X1, X2 with
``--formula``) are the score variables of the evaluation and of the losses, and the variables
``--by`` may bin on (besides ``uE``).

Writes three NetCDF files (each atomically, with :func:`xuqcal.to_netcdf`):

- ``out.nc``: the recalibrated test set (``uE`` recalibrated, ``uE_uncalibrated`` kept);
- ``out_evaluation.nc``: the evaluation table (:func:`xuqcal.recalibration.evaluate`) over
  ``dataset`` = ``train``, ``train <method>``, ``test``, ``test <method>`` (and ``reference``
  with ``--reference``);
- ``out_recalibrator.nc``: the fitted recalibrator, to apply to new data later
  (``xuqcal.recalibration.apply(xr.open_dataset("out_recalibrator.nc"), ds)``).

Nothing is computed when an output file exists and ``--overwrite`` is not given, when an
output's folder is missing or not writable, or when an output would replace an input file
(``TRAIN``, ``TEST`` or ``--reference``; refused even with ``--overwrite``). Separate files
rather than NetCDF groups keep each file an ordinary Dataset that ``xr.open_dataset`` reads
without a ``group=`` argument, and let every write be atomic. The table is printed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import xarray as xr

from xuqcal import io
from xuqcal.cli.common import (
    FEATURES_HELP,
    feature_list,
    feature_specs,
    output_file,
    positive_int,
    zero_or_count,
)
from xuqcal.cli.inputs import in_file, read_csv_input
from xuqcal.core.defaults import N_BINS_RECALIBRATION, N_BINS_SCORES
from xuqcal.io import outputs as _outputs
from xuqcal.recalibration import (
    LOSSES,
    METHODS,
    apply,
    evaluate,
    evaluation_table,
    fit,
)


def add_parser(commands) -> argparse.ArgumentParser:
    """Register ``recalibrate`` on the sub-parsers ``commands`` of the ``xuqcal`` command.

    Examples
    --------
    >>> parser = argparse.ArgumentParser(prog="xuqcal")
    >>> sub = add_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["recalibrate", "a.csv", "b.csv", "--E", "E", "--uE", "uE",
    ...                           "-o", "out.nc"])
    >>> args.method, args.by, args.n_bins
    ('bvs', 'uE', None)
    """
    parser = commands.add_parser(
        "recalibrate", help="fit a recalibration on a training CSV and apply it to a test CSV",
        description="Post-hoc recalibration (temperature scaling, bin-wise variance scaling, "
                    "isotonic): fit on TRAIN, apply to TEST, evaluate both (NLL, S_cal, S_x, "
                    "ENCE, f_v against simulated values) and write OUT.nc (recalibrated test "
                    "set), OUT_evaluation.nc and OUT_recalibrator.nc.")
    parser.add_argument("train", type=Path, help="training CSV file (e.g. a validation set)")
    parser.add_argument("test", type=Path, help="test CSV file")
    parser.add_argument("--E", required=True, metavar="EXPR",
                        help="error column or expression of TRAIN, e.g. 'E_ - prediction' "
                             "(and of TEST unless --test-E is given)")
    parser.add_argument("--uE", required=True, metavar="EXPR",
                        help="uncertainty column or expression of TRAIN, e.g. "
                             "'sqrt(uncertainty_total)' (and of TEST unless --test-uE is given)")
    parser.add_argument("--test-E", metavar="EXPR",
                        help="error column or expression of TEST and --reference, when their "
                             "columns differ from TRAIN's (default: --E)")
    parser.add_argument("--test-uE", metavar="EXPR",
                        help="uncertainty column or expression of TEST and --reference "
                             "(default: --uE)")
    parser.add_argument("--where", metavar="EXPR", help="row filter applied to every file")
    parser.add_argument("--features", type=feature_list, metavar="LIST",
                        help=FEATURES_HELP + ", read from every file: score variables of "
                             "the evaluation and the losses, and variables --by may bin on")
    parser.add_argument("--formula", metavar="COLUMN",
                        help="column of molecular formulas: adds the features X1 (mass) and "
                             "X2 (heteroatom fraction) used by the scores and the losses")
    parser.add_argument("--method", choices=METHODS, default="bvs",
                        help="recalibration method (default: bvs)")
    parser.add_argument("--by", default="uE", metavar="VAR",
                        help="BVS binning variable: uE, a feature of --features (e.g. "
                             "y_pred) or X1, X2 with --formula; or two separated by a comma "
                             "for a 2-D grid (default: uE)")
    parser.add_argument("--n-bins", type=positive_int, metavar="N",
                        help=f"number of BVS bins (default: {N_BINS_RECALIBRATION}; per variable "
                             "for a grid)")
    parser.add_argument("--loss", choices=LOSSES, default="nll",
                        help="loss of the BVS factors (default: nll, the analytic factors)")
    parser.add_argument("--reference", type=Path, metavar="CSV",
                        help="a test set recalibrated by another method (same columns), "
                             "evaluated as 'reference'")
    parser.add_argument("--n-bins-scores", type=positive_int, default=N_BINS_SCORES,
                        metavar="N", help="bins per score variable (default: 100)")
    parser.add_argument("--n-mc", type=positive_int, default=1000, metavar="N",
                        help="simulated error sets per data set (default: 1000)")
    parser.add_argument("--n-boot", type=positive_int, default=5000, metavar="N",
                        help="bootstrap replicates per bin of the f_v analyses (default: 5000)")
    parser.add_argument("--n-mc-fv", type=zero_or_count, default=0, metavar="N",
                        help="simulated sets for the simulated f_v (default: 0, not simulated)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random draw")
    parser.add_argument("-o", "--output", type=output_file, required=True, metavar="OUT.nc",
                        help="recalibrated test set; the evaluation and the recalibrator go "
                             "to OUT_evaluation.nc and OUT_recalibrator.nc")
    parser.add_argument("--overwrite", action="store_true",
                        help="allow replacing existing output files")
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the Python traceback of an error")
    parser.set_defaults(run=run)
    return parser


def output_paths(output: Path) -> dict[str, Path]:
    """The three files written for ``-o output``.

    Examples
    --------
    >>> sorted(p.name for p in output_paths(Path("res/out.nc")).values())
    ['out.nc', 'out_evaluation.nc', 'out_recalibrator.nc']
    """
    output = Path(output)
    suffix = output.suffix or ".nc"
    return {"test": output,
            "evaluation": output.with_name(f"{output.stem}_evaluation{suffix}"),
            "recalibrator": output.with_name(f"{output.stem}_recalibrator{suffix}")}


def _read(path: Path, args: argparse.Namespace, *, test: bool = False) -> xr.Dataset:
    """One input file: TRAIN with ``--E``/``--uE``, TEST and ``--reference`` (``test``) with
    ``--test-E``/``--test-uE`` (default: the same). An error names the file, and the option
    of the expression at fault (``--test-uE: test.csv: 1 of 300 values are not positive``)."""
    E, uE = (_test_expressions(args) if test else (args.E, args.uE))
    try:
        return read_csv_input(path, E=E, uE=uE, where=args.where, features=args.features,
                              formula=args.formula)
    except ValueError as error:
        error = in_file(error, path)
        head, colon, rest = str(error).partition(": ")
        if test and colon and head in ("E", "uE") and getattr(args, f"test_{head}"):
            error = ValueError(f"test_{head}: {rest}")
        raise error from None


def _test_expressions(args: argparse.Namespace) -> tuple[str, str]:
    """The E and uE expressions of TEST and ``--reference``."""
    return (args.test_E or args.E, args.test_uE or args.uE)


def _binning_variables(args: argparse.Namespace) -> list[str]:
    """The variables of ``--by``, checked against what the files will hold before any file is
    read: ``uE``, the features of ``--features``, X1 and X2 with ``--formula``."""
    by = [v.strip() for v in args.by.split(",") if v.strip()]
    if not by:
        raise ValueError("--by: give a variable to bin on (uE, a feature of --features, or "
                         "X1, X2 with --formula)")
    if "E" in by:
        raise ValueError("--by: E is the error itself: bins of E would use the errors that the "
                         "recalibration must predict; bin by uE or a feature (X1, X2)")
    features = list(feature_specs(args.features))
    known = ["uE", *features, *(("X1", "X2") if args.formula else ())]
    unknown = [v for v in by if v not in known]
    if unknown:
        hint = (f"add it with --features, e.g. --features {unknown[0]} (a column) or "
                f"--features {unknown[0]}=EXPR")
        if unknown[0] in ("X1", "X2"):
            hint = "X1 and X2 come from --formula COLUMN (a column of molecular formulas)"
        raise ValueError(f"--by: {', '.join(repr(v) for v in unknown)} is not a variable of "
                         f"the data (the variables to bin on are {', '.join(known)}); {hint}")
    return by


def run(args: argparse.Namespace) -> int:
    """Run ``xuqcal recalibrate`` (returns the exit status; errors raise ``ValueError`` or an
    ``OSError`` such as ``FileExistsError``, reported on one line by the ``xuqcal`` command).

    The three outputs are checked before anything is read or computed (see the module
    docstring)."""
    paths = output_paths(args.output)
    inputs = [p for p in (args.train, args.test, args.reference) if p is not None]
    for path in paths.values():
        _outputs.check_output_file(path, overwrite=args.overwrite, inputs=inputs,
                                   option="-o/--output")
    by = _binning_variables(args)
    start = time.perf_counter()
    train = _read(args.train, args)
    test = _read(args.test, args, test=True)
    reference = _read(args.reference, args, test=True) if args.reference is not None else None
    features = (*feature_specs(args.features), *(("X1", "X2") if args.formula else ()))
    kwargs = {}
    if args.method == "bvs":
        kwargs = {"by": by[0] if len(by) == 1 else by, "n_bins": args.n_bins}
    elif by != ["uE"] or args.n_bins is not None:
        raise ValueError(f"--by/--n-bins: method {args.method!r} does not bin")
    recalibrator = fit(train, args.method, loss=args.loss, features=features,
                       n_bins_scores=args.n_bins_scores, seed=args.seed, **kwargs)
    fitted = time.perf_counter()
    label = args.method if args.method != "bvs" else \
        f"bvs {recalibrator.scale.size}" + (f" {args.loss}" if args.loss != "nll" else "")
    test_new = apply(recalibrator, test)
    datasets = {"train": train, f"train {label}": apply(recalibrator, train), "test": test,
                f"test {label}": test_new}
    if args.reference is not None:
        datasets["reference"] = reference
    table = evaluate(datasets, features=features, n_bins=args.n_bins_scores, n_mc=args.n_mc,
                     seed=args.seed, n_boot=args.n_boot, n_mc_fv=args.n_mc_fv)
    test_E, test_uE = _test_expressions(args)
    table.attrs.update(train_source=str(args.train), test_source=str(args.test),
                       E_expression=args.E, uE_expression=args.uE,
                       test_E_expression=test_E, test_uE_expression=test_uE,
                       features=",".join(features),
                       reference_source=str(args.reference or ""))
    done = time.perf_counter()
    print(f"Recalibration of {args.test} by {args.method} fitted on {args.train} "
          f"(loss {args.loss}; fit {fitted - start:.1f} s, evaluation {done - fitted:.1f} s)")
    print(f"scores with {args.n_bins_scores} bins per variable; 'simulated' rows: means over "
          f"{args.n_mc} error sets drawn from N(0, uE²); f_v target 0.95")
    print(evaluation_table(table))
    io.to_netcdf(test_new, paths["test"], overwrite=args.overwrite)
    io.to_netcdf(table, paths["evaluation"], overwrite=args.overwrite)
    io.to_netcdf(recalibrator, paths["recalibrator"], overwrite=args.overwrite)
    for path in paths.values():
        print(f"written: {path}")
    return 0
