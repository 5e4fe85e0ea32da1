"""``xuqcal recalibrate``: fit a recalibrator on a training CSV, apply it to a test CSV.

::

    xuqcal recalibrate TRAIN.csv TEST.csv --E EXPR --uE EXPR [--test-E EXPR --test-uE EXPR]
        [--features LIST] [--formula COLUMN] [--method bvs] [--by uE] [--n-bins 40]
        [--loss nll] -o out.nc [--overwrite]
    xuqcal recalibrate TRAIN.csv TEST.csv --E EXPR --uE EXPR --method conformal
        [--coverage-levels 0.683,0.95] [--by uE|FEATURE] [--n-bins N] [--tol 0.005] -o out.nc

``--E``/``--uE`` are evaluated over the columns of ``TRAIN``; ``--test-E``/``--test-uE`` over
those of ``TEST`` (and ``--reference``), by default the same expressions. ``--where`` and
``--features`` apply to every file. The features (``--features``, and X1, X2 with
``--formula``) are the score variables of the evaluation and of the losses, and the variables
``--by`` may bin on (besides ``uE``).

Writes three NetCDF files, as one set (written to temporary files, then renamed together: a
failure or an interruption leaves the old set or none, :func:`xuqcal.io.netcdf.to_netcdf_set`):

- ``out.nc``: the recalibrated test set (``uE`` recalibrated, ``uE_uncalibrated`` kept);
- ``out_evaluation.nc``: the evaluation table (:func:`xuqcal.recalibration.evaluate`) over
  ``dataset`` = ``train``, ``train <method>``, ``test``, ``test <method>`` (and ``reference``
  with ``--reference``);
- ``out_recalibrator.nc``: the fitted recalibrator, to apply to new data later
  (``xuqcal.recalibration.apply(xr.open_dataset("out_recalibrator.nc"), ds)``).

**Conformal** (``--method conformal``, :mod:`xuqcal.recalibration.conformal`): split conformal
intervals at the coverage levels ``--coverage-levels`` (default 0.683,0.95), with one quantile
for all points, or, with ``--by VAR``, one per bin of ``VAR`` (Mondrian; ``--n-bins`` bins
learned on TRAIN, default 40). ``out.nc`` is the test set as
:func:`xuqcal.recalibration.apply` gives it (``conformal_half_width`` over
``(sample, coverage_level)``, and the uE of the first level), and the variance-score table,
meaningless for intervals, is replaced by the coverage of the intervals
(:func:`xuqcal.recalibration.conformal_coverage`) on the training and the test set
(``dataset`` = ``train conformal``, ``test conformal``; ``conformal N`` for N Mondrian bins):
per level, the PICP with its Wilson interval (continuity correction, confidence 0.95) and
``picp_valid``, whether that interval overlaps ``[p - tol, p + tol]`` (``--tol``, default
0.005), and the local coverage over ``--n-bins`` equal-count bins of ``--by`` (of the input
``uE`` without ``--by``, 20 bins by default): ``bin_picp`` per bin and ``fraction_valid``
(f_v) with its Wilson interval. ``--loss`` and the options of the variance-score evaluation
(``--n-bins-scores``, ``--n-mc``, ``--n-boot``, ``--n-mc-fv``, ``--reference``) are refused
with ``--method conformal``, and ``--coverage-levels``, ``--tol`` with the other methods, before
anything is read.

Nothing is computed when an output file exists and ``--overwrite`` is not given, when an
output's folder is missing or not writable, or when an output would replace an input file
(``TRAIN``, ``TEST`` or ``--reference``; refused even with ``--overwrite``), nor when
another process is writing one of the three files (their locks, :mod:`xuqcal.io.locks`, are
taken before the checks and held until the set is written). Separate files
rather than NetCDF groups keep each file an ordinary Dataset that ``xr.open_dataset`` reads
without a ``group=`` argument, and let every write be atomic. The table is printed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from xuqcal import io
from xuqcal.cli.common import (
    FEATURES_HELP,
    comma_items,
    feature_list,
    feature_specs,
    output_file,
    positive_int,
    tolerance,
    zero_or_count,
)
from xuqcal.cli.inputs import in_file, read_csv_input
from xuqcal.cli.terminal import escape
from xuqcal.core.defaults import (
    COVERAGE_LEVELS,
    COVERAGE_TOLERANCE,
    LEVEL,
    N_BINS,
    N_BINS_RECALIBRATION,
    N_BINS_SCORES,
    SEED,
)
from xuqcal.io import locks as _locks
from xuqcal.io import outputs as _outputs
from xuqcal.recalibration import (
    LOSSES,
    apply,
    conformal_coverage,
    evaluate,
    evaluation_table,
    fit,
)
from xuqcal.recalibration.conformal import LEVEL as COVERAGE_DIM
from xuqcal.recalibration.conformal import METHOD as CONFORMAL
from xuqcal.recalibration.conformal import check_levels
from xuqcal.recalibration.recalibrator import ALL_METHODS, factor_lines


class _Given(argparse.Action):
    """Store the value, and record that the option was given (in ``args.given``, option ->
    the option string typed): options that another method does not take are refused when
    given, even with their default value, while their defaults stay what they were."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.given = {**getattr(namespace, "given", {}), self.dest: option_string}


def coverage_levels(text: str) -> tuple[float, ...]:
    """An argparse type: the value of ``--coverage-levels``, comma-separated coverage levels in
    (0, 1),
    each given once (:func:`~xuqcal.recalibration.conformal.check_levels`).

    Examples
    --------
    >>> coverage_levels("0.683, 0.95")
    (0.683, 0.95)
    >>> coverage_levels("0.9,95")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected coverage levels in (0, 1) such as 0.95, got 95.0
    """
    try:
        values = [float(v) for v in comma_items(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated coverage levels in (0, 1), "
                                         f"e.g. 0.683,0.95, got {text!r}") from None
    try:
        return check_levels(values)
    except ValueError as error:
        head, colon, rest = str(error).partition(": ")
        raise argparse.ArgumentTypeError(rest if colon and head == "coverage_levels"
                                         else str(error)
                                         ) from None


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
                    "set), OUT_evaluation.nc and OUT_recalibrator.nc. With --method "
                    "conformal: split conformal intervals (Mondrian with --by), evaluated by "
                    "their coverage (PICP and local coverage) on TRAIN and TEST.")
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
    parser.add_argument("--method", choices=ALL_METHODS, default="bvs",
                        help="recalibration method (default: bvs); conformal: split conformal "
                             "intervals at --coverage-levels")
    parser.add_argument("--by", default="uE", metavar="VAR", action=_Given,
                        help="BVS binning variable: uE, a feature of --features (e.g. "
                             "y_pred) or X1, X2 with --formula; or two separated by a comma "
                             "for a 2-D grid (default: uE). Conformal: one variable, for "
                             "Mondrian quantiles per bin and the bins of the local coverage "
                             "(default: global quantiles, local coverage over bins of uE)")
    parser.add_argument("--n-bins", type=positive_int, metavar="N",
                        help=f"number of BVS bins (default: {N_BINS_RECALIBRATION}; per variable "
                             "for a grid). Conformal: bins of --by, learned on TRAIN for the "
                             f"quantiles and equal-count for the local coverage (default: "
                             f"{N_BINS_RECALIBRATION}; without --by, bins of uE of the local "
                             f"coverage, default: {N_BINS})")
    parser.add_argument("--loss", choices=LOSSES, default="nll", action=_Given,
                        help="loss of the BVS factors (default: nll, the analytic factors; "
                             "not for conformal)")
    parser.add_argument("--coverage-levels", type=coverage_levels, metavar="LIST",
                        help="conformal only: coverage levels p in (0, 1), comma-separated; "
                             "the first one sets the recalibrated uE (default: "
                             f"{','.join(f'{p:g}' for p in COVERAGE_LEVELS)})")
    parser.add_argument("--tol", type=tolerance, metavar="TOL",
                        help="conformal only: a coverage (PICP, or a bin's) is valid when its "
                             "Wilson interval overlaps [p - TOL, p + TOL] (default: "
                             f"{COVERAGE_TOLERANCE:g})")
    parser.add_argument("--reference", type=Path, metavar="CSV",
                        help="a test set recalibrated by another method (same columns), "
                             "evaluated as 'reference'")
    parser.add_argument("--n-bins-scores", type=positive_int, default=N_BINS_SCORES,
                        metavar="N", action=_Given,
                        help="bins per score variable (default: 100)")
    parser.add_argument("--n-mc", type=positive_int, default=1000, metavar="N", action=_Given,
                        help="simulated error sets per data set (default: 1000)")
    parser.add_argument("--n-boot", type=positive_int, default=5000, metavar="N",
                        action=_Given,
                        help="bootstrap replicates per bin of the f_v analyses (default: 5000)")
    parser.add_argument("--n-mc-fv", type=zero_or_count, default=0, metavar="N", action=_Given,
                        help="simulated sets for the simulated f_v (default: 0, not simulated)")
    parser.add_argument("--seed", type=int, default=SEED,
                        help=f"seed of every random draw (default: {SEED})")
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

    The options are checked against the method, and the three outputs, before anything is
    read or computed (see the module docstring)."""
    _check_method_options(args)
    paths = output_paths(args.output)
    # the set locked before its checks, until it is written (one lock a file, in one order)
    with _locks.locked_set(paths.values(), "xuqcal recalibrate", option="-o/--output"):
        return _run(args, paths)


def _run(args: argparse.Namespace, paths: dict[str, Path]) -> int:
    """``run`` with the outputs ``paths`` locked."""
    inputs = [p for p in (args.train, args.test, args.reference) if p is not None]
    for path in paths.values():
        _outputs.check_output_file(path, overwrite=args.overwrite, inputs=inputs,
                                   option="-o/--output")
    by = _binning_variables(args)
    if args.method == CONFORMAL:
        return _run_conformal(args, paths, by)
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
    print(f"Recalibration of {escape(args.test)} by {args.method} fitted on "
          f"{escape(args.train)} "
          f"(loss {args.loss}; fit {fitted - start:.1f} s, evaluation {done - fitted:.1f} s)")
    _print_factors(recalibrator)
    print(f"scores with {args.n_bins_scores} bins per variable; 'simulated' rows: means over "
          f"{args.n_mc} error sets drawn from N(0, uE²); f_v target 0.95")
    print(escape(evaluation_table(table), lines=True))
    return _write(paths, {"test": test_new, "evaluation": table, "recalibrator": recalibrator},
                  overwrite=args.overwrite)


# --------------------------------------------------------------------------------------------
# --method conformal
# --------------------------------------------------------------------------------------------

#: Options of the variance-score evaluation, which conformal replaces by coverage.
_SCORE_OPTIONS = ("n_bins_scores", "n_mc", "n_boot", "n_mc_fv")
#: Parameters of the conformal functions -> the options (``by``, ``E``, ``uE`` are named by
#: the table of :mod:`xuqcal.cli.common`).
_CONFORMAL_OPTIONS = {"coverage_levels": "--coverage-levels", "tol": "--tol",
                      "n_bins": "--n-bins"}


def _check_method_options(args: argparse.Namespace) -> None:
    """Refuse, before anything is read, the options that the method does not take: ``--loss``
    and the options of the variance-score evaluation with ``conformal``, ``--coverage-levels`` and
    ``--tol`` with the other methods, and more than one ``--by`` variable with conformal."""
    given = getattr(args, "given", {})
    if args.method != CONFORMAL:
        for name, option in (("coverage_levels", "--coverage-levels"), ("tol", "--tol")):
            if getattr(args, name, None) is not None:
                raise ValueError(f"{option}: only for --method conformal (the coverage of its "
                                 f"intervals); --method {args.method} recalibrates uE, "
                                 f"evaluated by scores: leave {option} out")
        return
    if "loss" in given:
        raise ValueError(f"{given['loss']}: --method conformal has no loss (its quantiles are "
                         "order statistics of the training scores |E|/uE); leave --loss out")
    scores = [given[name] for name in _SCORE_OPTIONS if name in given]
    if args.reference is not None:
        scores.append("--reference")
    if scores:
        raise ValueError(f"{', '.join(scores)}: option{'s' if len(scores) > 1 else ''} of the "
                         "variance-score evaluation, which --method conformal replaces by the "
                         "coverage of its intervals (PICP, local coverage: --tol, --by, "
                         f"--n-bins); leave {'them' if len(scores) > 1 else 'it'} out")
    if "by" in given and len([v for v in args.by.split(",") if v.strip()]) > 1:
        raise ValueError(f"--by: Mondrian conformal intervals bin on one variable (uE or a "
                         f"feature), got {args.by!r}")


def _conformal_error(error: ValueError) -> ValueError:
    """A conformal function's error with the option for its leading parameter
    (``coverage_levels:`` -> ``--coverage-levels:``); other errors unchanged."""
    head, colon, rest = str(error).partition(": ")
    if colon and head in _CONFORMAL_OPTIONS:
        return ValueError(f"{_CONFORMAL_OPTIONS[head]}: {rest.replace('(n_bins)', '(--n-bins)')}")
    return error


def _run_conformal(args: argparse.Namespace, paths: dict[str, Path], by: list[str]) -> int:
    """``run`` with ``--method conformal`` (options and outputs already checked)."""
    levels = COVERAGE_LEVELS if args.coverage_levels is None else args.coverage_levels
    tol = COVERAGE_TOLERANCE if args.tol is None else args.tol
    mondrian = by[0] if "by" in getattr(args, "given", {}) else None
    n_bins = args.n_bins or (N_BINS_RECALIBRATION if mondrian else N_BINS)
    binned = mondrian or "uE"
    # the input uE (apply keeps it as uE_uncalibrated): "uE" of a recalibrated set is the new one
    variable = "uE_uncalibrated" if binned == "uE" else binned
    start = time.perf_counter()
    train = _read(args.train, args)
    test = _read(args.test, args, test=True)
    features = (*feature_specs(args.features), *(("X1", "X2") if args.formula else ()))
    try:
        recalibrator = fit(train, CONFORMAL, coverage_levels=levels, by=mondrian,
                           n_bins=n_bins if mondrian else None, seed=args.seed)
        fitted = time.perf_counter()
        label = CONFORMAL + (f" {recalibrator.scale.size}" if mondrian else "")
        test_new = apply(recalibrator, test)
        results = {f"train {label}": apply(recalibrator, train), f"test {label}": test_new}
        coverage = [conformal_coverage(ds, by=variable, n_bins=n_bins, tol=tol, level=LEVEL)
                    for ds in results.values()]
    except ValueError as error:
        raise _conformal_error(error) from None
    table = xr.concat(coverage, dim="dataset", coords="different", compat="equals",
                      combine_attrs="override").assign_coords(dataset=list(results))
    del table.attrs["n_samples"]  # the first set's: ``count`` holds each set's
    test_E, test_uE = _test_expressions(args)
    table.attrs.update(method=CONFORMAL, coverage_levels=",".join(f"{v:g}" for v in levels),
                       mondrian_by=mondrian or "", by=binned, by_variable=variable,
                       train_source=str(args.train), test_source=str(args.test),
                       E_expression=args.E, uE_expression=args.uE,
                       test_E_expression=test_E, test_uE_expression=test_uE,
                       features=",".join(features))
    done = time.perf_counter()
    quantiles = (f"Mondrian quantiles in {recalibrator.scale.size} bins of {mondrian}"
                 if mondrian else "global quantiles")
    print(f"Conformal recalibration of {escape(args.test)} fitted on {escape(args.train)} "
          f"(coverage levels "
          f"{table.attrs['coverage_levels']}; {quantiles}; fit {fitted - start:.1f} s, evaluation "
          f"{done - fitted:.1f} s)")
    _print_factors(recalibrator)
    print(f"PICP: fraction of points with |E| <= q_p uE, Wilson interval (continuity "
          f"correction, confidence {LEVEL:g}), valid when it overlaps [p - {tol:g}, p + {tol:g}]; "
          f"f_v: fraction of valid bins among {n_bins} equal-count bins of {binned} "
          "(target 0.95)")
    print(escape(coverage_table(table), lines=True))
    return _write(paths, {"test": test_new, "evaluation": table, "recalibrator": recalibrator},
                  overwrite=args.overwrite)


def _print_factors(recalibrator: xr.Dataset) -> None:
    """Print the fitted factors (:func:`xuqcal.recalibration.factor_lines`): the global
    factor, the factors per bin with the bins' limits, or the conformal quantiles."""
    lines = factor_lines(recalibrator)
    if len(lines) == 1:
        print(f"fitted {escape(lines[0])}")
        return
    print("fitted, per slice:")
    for line in lines:
        print(f"  {escape(line)}")


def coverage_table(table: xr.Dataset, *, digits: int = 4) -> str:
    """The printed table of a conformal evaluation: one row per data set and level, with the
    PICP and its Wilson interval, its verdict, and f_v with its Wilson interval.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.recalibration import conformal_coverage, fit
    >>> train = xuqcal.synthetic.nig(500, nu=6, seed=0)
    >>> test = xuqcal.synthetic.nig(500, nu=6, seed=1)
    >>> cov = conformal_coverage(apply(fit(train, "conformal"), test), n_bins=5)
    >>> table = cov.expand_dims(dataset=["test"]).assign(picp_valid=cov.picp > 0)
    >>> print(coverage_table(table).splitlines()[0])
    dataset     p   PICP    low   high valid    f_v    low   high
    """
    columns = {"PICP": "picp", "low": "picp_low", "high": "picp_high", "f_v": "fraction_valid",
               "low ": "fraction_valid_low", "high ": "fraction_valid_high"}
    rows = []
    for name in table.dataset.values:
        one = table.sel(dataset=name).transpose(COVERAGE_DIM, ...)
        for j, p in enumerate(one[COVERAGE_DIM].values):
            row = {c: float(one[v].values[j]) for c, v in columns.items()}
            rows.append({"dataset": str(name) if j == 0 else "", "p": f"{p:g}", **row,
                         "valid": "yes" if bool(one.picp_valid.values[j]) else "no"})
    frame = pd.DataFrame(rows)[["dataset", "p", "PICP", "low", "high", "valid", "f_v", "low ",
                                "high "]]
    width = max(len("dataset"), *(len(v) for v in frame["dataset"]))
    frame["dataset"] = [v.ljust(width) for v in frame["dataset"]]

    def number(v: float) -> str:
        return f"{v:.{digits}f}" if np.isfinite(v) else "-"

    return frame.to_string(index=False, justify="right",
                           formatters={c: number for c in columns},
                           header=["dataset".ljust(width), "p", "PICP", "low", "high", "valid",
                                   "f_v", "low", "high"])


def _write(paths: dict[str, Path], results: dict[str, xr.Dataset], *, overwrite: bool) -> int:
    """Write the results to their paths as one set (:func:`xuqcal.io.netcdf.to_netcdf_set`:
    all or none, old files kept on a failure) and say so."""
    io.netcdf.to_netcdf_set({paths[key]: result for key, result in results.items()},
                            overwrite=overwrite, option="-o/--output")
    for path in paths.values():
        print(f"written: {escape(path)}")
    return 0
