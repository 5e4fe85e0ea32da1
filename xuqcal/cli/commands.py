"""The ``xuqcal`` command.

``xuqcal validate FILE.csv --E EXPR --uE EXPR`` validates the uncertainties of a CSV file (or
of a NetCDF input dataset or Zarr store); ``xuqcal demo`` does the same on built-in synthetic
data (a calibrated and a mis-calibrated NIG data set). Results print as a table and, with
``-o``, are written to NetCDF. Several files (``validate``, ``report``) are read with the same
options (``--E``/``--uE`` may be given once per file, for files with different columns) and
stacked along ``dataset`` (:mod:`xuqcal.cli.inputs`); their result prints one
table per data set and a summary (:mod:`xuqcal.analysis.tables`).

Outputs follow one rule in every command, checked before any computation: the folder of an
output must exist and be writable (it is never created, except the report and demo folders
themselves), an output that is a folder or an input file is refused, and an existing output is
replaced only with ``--overwrite`` (never a read-only file, a device or a named pipe). In a
report or demo folder, ``--overwrite`` replaces only the files xuqcal wrote there (listed in
its ``.xuqcal-manifest.json``); the user's own files are left alone, and the files of a run are
moved into place only when it is complete (an error or Ctrl-C leaves the folder as it was).
An output is locked from before its checks until it is written (:mod:`xuqcal.io.locks`): a
second command writing it at the same time is refused at once, naming the process that holds
it (``-o/--output: out.nc is in use by process 4242 (xuqcal validate, since ...)``).
Counts (``--n-boot``, ``--n-mc``, ``--size``...) are at most 10^8 and ``--workers`` a few per
CPU, so that a typo fails at once instead of exhausting the memory or hanging.

A user error (bad option, bad file, refused output) prints one line ``xuqcal COMMAND: error:
...`` naming the option at fault, with exit status 2; so does a write that fails (a full disk,
an I/O error: the line names the output, its option and the errno; the old output is kept, or
nothing is left). An internal error prints one line and
exits with 1 (``xuqcal --debug ...`` shows the traceback); Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import os
import re
import sys
import time
import traceback
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from xuqcal import _numba_cache, io
from xuqcal._version import __version__
from xuqcal.analysis.lazy import is_lazy
from xuqcal.analysis.precision import AUTO
from xuqcal.analysis.slices import extra_dims
from xuqcal.analysis.summary import summary, summary_grid, summary_text
from xuqcal.analysis.tables import slice_blocks, slice_title, slices_table
from xuqcal.analysis.validation import (
    DEFAULT_STATISTICS,
    SIMULATED_SCHEMES,
    summary_table,
    validate,
)
from xuqcal.cli import compare as _cli_compare
from xuqcal.cli import inputs as _inputs
from xuqcal.cli import recalibrate as _cli_recalibrate
from xuqcal.cli.common import (
    FEATURES_HELP,
    MAX_COUNT,
    Interrupted,
    add_dependence_options,
    comma_items,
    count_or_auto,
    dependence_arguments,
    feature_list,
    feature_options,
    feature_specs,
    format_level,
    fraction,
    fraction_or_none,
    name_list,
    option_message,
    output_file,
    positive_int,
    resample_text,
    tolerance,
)
from xuqcal.cli.terminal import escape
from xuqcal.core import defaults
from xuqcal.core.generators import check_generators
from xuqcal.core.statistics import get_statistics
from xuqcal.io import locks as _locks
from xuqcal.io import outputs as _outputs
from xuqcal.io import synthetic
from xuqcal.io.schema import slice_positions
from xuqcal.options import OPTIONS
from xuqcal.report.html import DPI_RANGE, FIGURE_FORMATS


def _statistics_list(text: str, *, coverage: bool = False) -> list[str]:
    keys = [k.strip() for k in text.split(",") if k.strip()]
    try:
        get_statistics(keys, coverage=coverage)
    except ValueError as error:
        # argparse names the option already: drop the Python parameter's name
        raise argparse.ArgumentTypeError(re.sub(r"^\w+: ", "", str(error))) from None
    return keys


def _validated_statistics(text: str) -> list[str]:
    """``--statistics`` of the commands that validate: coverage statistics (``picp``,
    ``picp95``, ``picpt95``) included."""
    return _statistics_list(text, coverage=True)


def _generator_list(text: str) -> list[str]:
    names = [k.strip() for k in text.split(",") if k.strip()]
    try:
        check_generators(names, "generators")  # names as typed: messages quote them
        return names
    except ValueError as error:
        # argparse names the option already: drop the Python parameter's name
        raise argparse.ArgumentTypeError(re.sub(r"^\w+: ", "", str(error))) from None


def _count_help(default: int | str, ceiling: int) -> str:
    """How the help of ``--n-boot``/``--n-mc`` shows their default."""
    return (f"{AUTO}: as many as --mc-precision needs, at most {ceiling}"
            if default == AUTO else str(default))


def _add_compute_options(parser: argparse.ArgumentParser, *, auto: bool = False) -> None:
    """The options of the commands that validate (``validate``, ``report``, ``demo``): the
    same counts everywhere, ``--n-boot`` and ``--n-mc`` a number or ``auto`` (by default
    ``defaults.N_BOOT_VALIDATION`` and ``defaults.N_MC_VALIDATION``) and ``--mc-precision``
    the target of ``auto``; with ``auto`` (``xuqcal validate``) also
    ``--heavy-tail-threshold``."""
    counts = dict(type=count_or_auto, metavar="N|auto")
    parser.add_argument("--mc-precision", type=fraction, default=defaults.MC_PRECISION,
                        metavar="F",
                        help="with --n-boot auto or --n-mc auto: the largest Monte Carlo "
                             "standard error of a bound, simulated mean or quantile that "
                             "enters a verdict, as a fraction of the half-width of the "
                             f"interval it is compared with (default: "
                             f"{defaults.MC_PRECISION})")
    if auto:
        parser.add_argument("--heavy-tail-threshold", type=fraction_or_none,
                            default=defaults.HEAVY_TAIL_THRESHOLD, metavar="B|none",
                            help="heavy-tail screening: above this robust skewness beta_GM of "
                                 "Z^2, ZMS is 'not testable' instead of pass or fail (default: "
                                 f"{defaults.HEAVY_TAIL_THRESHOLD}; about 0.64 for normal "
                                 "errors); none: report beta_GM(Z^2) without screening")
    parser.add_argument("--n-boot", default=defaults.N_BOOT_VALIDATION, **counts,
                        help="bootstrap replicates for the BCa intervals (default: "
                             f"{_count_help(defaults.N_BOOT_VALIDATION, defaults.N_BOOT)})")
    parser.add_argument("--seed", type=int, default=defaults.SEED,
                        help=f"seed of every random draw (default: {defaults.SEED})")
    parser.add_argument("--level", type=float, default=defaults.LEVEL,
                        help=f"confidence level of the intervals (default: {defaults.LEVEL:g})")
    parser.add_argument("--n-bins", type=positive_int, default=None, metavar="N",
                        help="bins of the binned statistics (default: recommended per data "
                             f"set: {defaults.N_BINS}, fewer below "
                             f"{defaults.MIN_POINTS_PER_BIN_LOCAL} points per bin; at least 2 "
                             "points per bin)")
    parser.add_argument("--n-mc", default=defaults.N_MC_VALIDATION, **counts,
                        help="synthetic error sets per generator for the simulated references "
                             f"(default: {_count_help(defaults.N_MC_VALIDATION, defaults.N_MC)})")
    parser.add_argument("--generators", type=_generator_list,
                        default=list(defaults.VALIDATION_GENERATORS),
                        metavar="LIST",
                        help="generative distributions of the simulated references "
                             f"(default: {','.join(defaults.VALIDATION_GENERATORS)}; tfit: a "
                             "Student-t with nu fitted to the z-scores)")
    parser.add_argument("--known-generator", metavar="NAME",
                        help="the errors' generative distribution when it is known (e.g. "
                             "normal): validate with it, skip the sensitivity check")
    parser.add_argument("--simulated-scheme", choices=["auto", *SIMULATED_SCHEMES],
                        default="auto",
                        help="scheme deciding the verdict of statistics without a predefined "
                             "reference: Sim (bootstrap BCa interval of the data) or Sim2 "
                             "(simulated 95%% range); auto (the default): Sim2 with "
                             "--known-generator, else Sim")
    parser.add_argument("--all-schemes", action="store_true",
                        help="also simulate the references of statistics with a predefined "
                             "reference (zms, rce, zm, zv, nll) for their Sim and Sim2 "
                             "zeta-scores (for comparison; BS decides their verdict); by "
                             "default only the statistics whose verdict needs a simulated "
                             "reference are simulated")
    parser.add_argument("--statistics", type=_validated_statistics,
                        default=list(DEFAULT_STATISTICS), metavar="LIST",
                        help="comma-separated statistic keys "
                             f"(default: {','.join(DEFAULT_STATISTICS)}); the coverage "
                             "statistics picp<percent> (e.g. picp95: the fraction of |Z| <= "
                             "1.96) and picpt<percent> (Student-t factor, nu fitted to Z), "
                             "picp for the levels "
                             f"{', '.join(map(str, defaults.COVERAGE_LEVELS))}, are validated "
                             "with Wilson intervals")
    parser.add_argument("--tol", type=tolerance, default=defaults.COVERAGE_TOLERANCE,
                        metavar="T",
                        help="coverage statistics are valid when their Wilson interval "
                             "overlaps [p - T, p + T] (default: "
                             f"{defaults.COVERAGE_TOLERANCE})")
    _add_cluster_options(parser)


MAX_WORKERS = max(8, 4 * (os.cpu_count() or 1))
"""Largest ``--workers``: each is a Python process; far more than the CPUs only waits for
them to start (100000 would never finish starting)."""


def _workers(text: str) -> int:
    value = positive_int(text)
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"expected an integer from 1 to {MAX_WORKERS} (4 per CPU of this machine, at "
            f"least 8), got {text!r}")
    return value


def _address(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("empty address; give the scheduler's address, e.g. "
                                         "tcp://127.0.0.1:8786")
    return text.strip()


def _add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """Where and how a command computes: ``--scheduler`` or ``--workers``, ``--no-progress``,
    ``--debug``."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", type=_address,
                       help="address of a running dask.distributed scheduler")
    where.add_argument("--workers", type=_workers, metavar="N",
                       help="start a local dask.distributed cluster with N (>= 1) worker "
                            "processes")
    parser.add_argument("--no-progress", action="store_true", help="do not show progress")
    _add_debug(parser)


def _add_debug(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the Python traceback of an error")


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``xuqcal validate: error: ...``) pointing to
    ``--help``, instead of the usage text followed by the error; sub-parsers inherit it."""

    def error(self, message: str):
        message = re.sub(r"^argument ([^:]+): ", r"\1: ", message)  # as the library's errors
        if message.endswith("expected one argument"):
            option = message.split(":", 1)[0].split("/")[-1]
            message += (f"; a value starting with '-' must be attached with '=', e.g. "
                        f"{option}=-{option.lstrip('-')}")
        self.exit(2, f"{self.prog}: error: {escape(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``xuqcal`` command."""
    parser = OneLineErrorParser(
        prog="xuqcal",
        description="Validate the calibration of ML prediction uncertainties.",
        epilog="Outputs are checked before any computation: the folder of an output must "
               "exist and be writable, an output never replaces an input, and an existing "
               "output is replaced only with --overwrite (in a report or demo folder, only the "
               "files xuqcal wrote there). Errors print one line (exit status 2 for a user "
               "error, 1 for an internal one; --debug shows the traceback).",
    )
    parser.add_argument("--version", action="version", version=f"xuqcal {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    val = commands.add_parser(
        "validate", help="validate E and uE read from CSV, NetCDF or Zarr files",
        description="Validate E and uE of a CSV file (columns or expressions) or of a NetCDF "
                    "input dataset or Zarr store (variables): estimates, BCa intervals, "
                    "zeta-scores. Several files are validated together, stacked along "
                    "'dataset' (labelled by file name or --names): one table per data set, "
                    "then one summary row per data set and statistic.",
    )
    val.add_argument("files", type=Path, nargs="+", metavar="FILE",
                     help="CSV file, NetCDF input dataset (e.g. written by xuqcal.to_netcdf; "
                          "its variables may have dimensions besides sample, e.g. model, "
                          "validated slice by slice) or Zarr store (needs the zarr package); "
                          "several files are read with the same options")
    _add_data_options(val, netcdf=True)
    add_dependence_options(val)
    val.add_argument("-o", "--output", type=output_file, metavar="FILE.nc",
                     help="write the result to this NetCDF file (its folder must exist); for "
                          "several files, over the dimension dataset")
    val.add_argument("--overwrite", action="store_true",
                     help="allow replacing an existing output file")
    _add_compute_options(val, auto=True)

    demo = commands.add_parser(
        "demo", help="validate built-in synthetic data (calibrated and mis-calibrated)",
        # argparse %-formats the help of options, not descriptions: one % sign here
        description="Validate two synthetic NIG data sets (nu = 6, M = 5000): one calibrated, "
                    "one whose uncertainties are 20% too small.",
    )
    demo.add_argument("-o", "--output", type=Path, metavar="DIR",
                      help="folder for the results and the HTML reports, created if missing "
                           "(its parent must exist; default: the first free ./xuqcal-demo, "
                           "./xuqcal-demo-2, ...)")
    demo.add_argument("--overwrite", action="store_true",
                      help="allow replacing result files that xuqcal wrote there (other files "
                           "are left alone)")
    demo.add_argument("--size", type=positive_int, default=5000, metavar="M",
                      help="points per synthetic data set (default: 5000)")
    _add_page_options(demo)
    _add_compute_options(demo)
    rep = commands.add_parser(
        "report", help="write an HTML validation report of CSV, NetCDF or Zarr files",
        description="Run every analysis that applies (validation, diagnostics, local analyses "
                    "along uE and each feature, reliability, confidence curve) and write an "
                    "HTML page with its figures and NetCDF results. Several files give one "
                    "page: a summary across the data sets, then a section per data set.")
    rep.add_argument("files", type=Path, nargs="+", metavar="FILE",
                     help="CSV file, NetCDF input dataset (e.g. written by xuqcal.to_netcdf "
                          "or xuqcal recalibrate; read as validate reads it) or Zarr store; "
                          "several files are stacked along 'dataset' (labelled by file name "
                          "or --names)")
    _add_data_options(rep, netcdf=True,
                      features_note=" (the conditioning variables of the report)")
    add_dependence_options(rep)
    rep.add_argument("--formula", metavar="COLUMN",
                     help="column of molecular formulas: adds the features X1 (mass) and X2 "
                          "(heteroatom fraction)")
    rep.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                     help="report folder, created if missing (its parent must exist)")
    rep.add_argument("--overwrite", action="store_true",
                     help="allow replacing an existing report: only the files xuqcal wrote "
                          "there are replaced, other files are left alone")
    rep.add_argument("--title", metavar="TEXT",
                     help="title of the page (default: the file's name; for several files, "
                          "e.g. '3 data sets: a, b, c')")
    _add_page_options(rep)
    _add_compute_options(rep)
    _add_cube_commands(commands)
    _cli_recalibrate.add_parser(commands)
    _cli_compare.add_parser(commands, data_options=_add_data_options,
                            cluster_options=_add_cluster_options, positive_int=positive_int)
    return parser


def _add_page_options(parser: argparse.ArgumentParser) -> None:
    """``--dpi`` and ``--figure-format`` of the commands writing HTML reports."""
    low, high = DPI_RANGE
    parser.add_argument("--dpi", type=float, default=defaults.REPORT_DPI, metavar="DPI",
                        help=f"resolution of the PNG figures in pixels per inch, {low} to "
                             f"{high} (default: {defaults.REPORT_DPI:g}, twice the 96 px per "
                             "inch at which the page shows them: sharp on HiDPI screens)")
    parser.add_argument("--figure-format", choices=FIGURE_FORMATS,
                        default=defaults.REPORT_FIGURE_FORMAT,
                        help="file format of the figures (default: "
                             f"{defaults.REPORT_FIGURE_FORMAT}; svg: vector graphics)")


NAMES_HELP = ("labels of the data sets, comma-separated, one per FILE in order (default: the "
              "file names without suffix, which must then differ)")


def _add_data_options(parser: argparse.ArgumentParser, *, netcdf: bool = False,
                      features_note: str = "") -> None:
    """``--E``, ``--uE``, ``--where``, ``--features`` and ``--names`` of a command reading
    data files (``netcdf``: the files may also be NetCDF input datasets or Zarr stores;
    ``features_note`` ends the help of ``--features``)."""
    store = "; for NetCDF or Zarr a variable name" if netcdf else ""
    several = ("; several files: give it once, for every file, or once per FILE in the order "
               "of the files (files with different columns)")
    parser.add_argument("--E", metavar="EXPR", required=not netcdf, action="append",
                        help="error column or expression, e.g. 'E_ - prediction'"
                             + (" (required for a CSV file)" + store + " (default: the "
                                "variable whose role is E, else 'E')" if netcdf else "")
                             + several + ", e.g. --E 'logP - y_pred' --E err")
    parser.add_argument("--uE", metavar="EXPR", required=not netcdf, action="append",
                        help="uncertainty column or expression, e.g. "
                             "'sqrt(uncertainty_total)'"
                             + (" (required for a CSV file)" + store if netcdf else "")
                             + several + ", e.g. --uE uq --uE sd")
    parser.add_argument("--where", metavar="EXPR",
                        help="row filter of a CSV file, e.g. 'uE > 1e-6 * std(E)' (may use "
                             "E, uE and the features)")
    parser.add_argument("--features", type=feature_list, metavar="LIST",
                        help=FEATURES_HELP + features_note
                        + ("; for NetCDF or Zarr the variables to keep (default: all)"
                           if netcdf else ""))
    parser.add_argument("--names", type=name_list, metavar="LIST", help=NAMES_HELP)


def _number_list(kind):
    def parse(text: str) -> list:
        try:
            values = [kind(v) for v in comma_items(text)]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated numbers, got {text!r}") from None
        too_big = [v for v in values if kind is int and v > MAX_COUNT]
        if too_big:
            raise argparse.ArgumentTypeError(f"expected integers up to {MAX_COUNT} (more would "
                                             f"exhaust the memory), got {too_big[0]}")
        return values
    return parse


def _add_cube_commands(commands) -> None:
    cube_parser = commands.add_parser(
        "cube", help="sensitivity cubes of simulated statistics (build, info, fit, extend)",
        description="Build, inspect, fit and extend sensitivity cubes stored as NetCDF.")
    actions = cube_parser.add_subparsers(dest="cube_command", required=True, metavar="ACTION")
    build = actions.add_parser(
        "build", help="simulate statistics of NIG data sets over a grid of M, N, nu and D",
        description="Build a size/bins cube (METHODS 7): every cell is checkpointed, and "
                    "running the same command again after an interruption resumes it.")
    build.add_argument("--statistics", type=_statistics_list, default=["ence", "zmse"],
                       metavar="LIST", help="statistic keys (default: ence,zmse)")
    build.add_argument("--size", type=_number_list(int), required=True, metavar="LIST",
                       help="data set sizes M, e.g. 2000,4000,8000")
    build.add_argument("--n-bins", type=_number_list(int), required=True, metavar="LIST",
                       help="numbers of bins N, e.g. 10,20,30")
    build.add_argument("--nu", type=_number_list(float), required=True, metavar="LIST",
                       help="shapes nu of uE^2 ~ IG(nu/2, nu/2), e.g. 3,6,24")
    build.add_argument("--generators", type=_generator_list, default=["normal", "t6"],
                       metavar="LIST", help="generative distributions (default: normal,t6)")
    build.add_argument("--n-mc", type=positive_int, default=5000, metavar="N",
                       help="synthetic data sets per cell (default: 5000)")
    build.add_argument("--seed", type=int, default=defaults.SEED,
                       help=f"seed of every random draw (default: {defaults.SEED})")
    build.add_argument("--keep-replicates", action="store_true",
                       help="also store the simulated values")
    build.add_argument("-o", "--output", type=output_file, required=True, metavar="CUBE.nc",
                       help="NetCDF file to write (its folder must exist)")
    build.add_argument("--overwrite", action="store_true",
                       help="allow replacing an existing cube file")
    _add_cluster_options(build)

    info = actions.add_parser("info", help="describe a cube file")
    info.add_argument("file", type=Path, help="cube NetCDF file")
    _add_debug(info)

    fit = actions.add_parser("fit", help="fit mean = a + alpha sqrt(N/M) per statistic and D")
    fit.add_argument("file", type=Path, help="cube NetCDF file")
    _add_debug(fit)

    extend = actions.add_parser(
        "extend", help="add values along one dimension of a NIG cube, computing only new cells",
        description="Add values along one dimension of a NIG cube: only the new cells are "
                    "computed, each checkpointed, and running the same command again after "
                    "an interruption resumes it.")
    extend.add_argument("file", type=Path, help="cube NetCDF file (replaced atomically)")
    group = extend.add_mutually_exclusive_group(required=True)
    group.add_argument("--size", type=_number_list(int), metavar="LIST",
                       help="data set sizes M to add, e.g. 16000,32000")
    group.add_argument("--n-bins", type=_number_list(int), metavar="LIST",
                       help="numbers of bins N to add, e.g. 50,100")
    group.add_argument("--nu", type=_number_list(float), metavar="LIST",
                       help="shapes nu of uE^2 ~ IG(nu/2, nu/2) to add, e.g. 12,48")
    group.add_argument("--generators", type=_generator_list, metavar="LIST",
                       help="generative distributions to add, e.g. t4,t8")
    extend.add_argument("--no-progress", action="store_true", help="do not report progress")
    _add_debug(extend)


def _default_client():
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None


def _connect(address: str):
    from distributed import Client

    before = _default_client()
    try:
        return Client(address, timeout=OPTIONS["scheduler_timeout"])
    except (OSError, ValueError, TypeError) as error:
        failed = _default_client()
        if failed is not None and failed is not before:
            # a client that failed early stays the default (and dask's scheduler) until it is
            # garbage-collected: later computations would go to it
            failed.close()
        reason = str(error).strip().splitlines()[0] if str(error).strip() else \
            type(error).__name__
        raise ConnectionError(
            f"--scheduler: cannot connect to a dask scheduler at {address!r} ({reason}); "
            "check the address and that the scheduler runs, or use --workers N for a local "
            "cluster") from None


@contextlib.contextmanager
def compute_context(args: argparse.Namespace) -> Iterator[None]:
    """Where Dask computes (local threads, or a distributed cluster) and progress display.

    An unreachable ``--scheduler`` fails within the option ``scheduler_timeout`` seconds
    (:func:`xuqcal.set_options`) with a ``ConnectionError`` naming the option and the address.
    """
    with contextlib.ExitStack() as stack:
        client = None
        if args.scheduler or args.workers:
            from distributed import Client, LocalCluster

            if args.scheduler:
                client = stack.enter_context(_connect(args.scheduler))
            else:
                cluster = stack.enter_context(
                    LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True)
                )
                client = stack.enter_context(Client(cluster))
            print(f"dask.distributed: {client.dashboard_link} (progress on the dashboard)",
                  file=sys.stderr)
        elif not args.no_progress:
            from xuqcal.studies.progress import TimeLeft

            stack.enter_context(TimeLeft(minimum=1.0, out=sys.stderr))
        yield


def _slice_sizes(ds: xr.Dataset) -> list[tuple[dict, int]]:
    """The number of points of each slice of ``ds`` (labels, M): one slice with no labels for
    data over ``sample`` only; with other dimensions (``dataset``, ``model``...), a point whose
    ``E`` and ``uE`` are both NaN is absent from its slice. Dask-backed data are not read:
    each slice counts every position (the analyses check the points themselves)."""
    dims = extra_dims(ds)
    if is_lazy(ds, ["E", "uE"]):
        return [(labels, ds.sizes["sample"]) for labels, _ in slice_positions(ds, dims)[1]]
    counts = (ds["E"].notnull() | ds["uE"].notnull()).sum("sample")
    return [(labels, int(counts.isel(positions)))
            for labels, positions in slice_positions(ds, dims)[1]]


def _check_sizes(ds: xr.Dataset, args: argparse.Namespace, what, *,
                 report: bool = False) -> None:
    """Check the number of points against ``--n-bins`` before any computation (``what`` names
    the data in messages: a string, or a function of the labels of a slice, e.g.
    ``{"dataset": "b"}``, for data with several slices).

    An ``--n-bins`` given must leave at least 2 points per bin in every slice, whatever the
    statistics (it also sizes work arrays); without it (``None``) every analysis uses the
    recommended number of bins of each slice (:func:`xuqcal.core.binning.resolve_n_bins`). A
    report also needs at least 3 points for its distribution diagnostics.
    """
    given = args.n_bins is not None  # else None: the recommended number per data set
    name = what if callable(what) else (lambda labels: what)
    for labels, m in sorted(_slice_sizes(ds), key=lambda item: item[1]):
        data = name(labels)
        if m < 2:
            raise ValueError(f"{data}: the data have {m} point; the bootstrap needs at least 2")
        if report and m < 3:
            raise ValueError(f"{data}: a report needs at least 3 points, the data have {m}")
        if given and 2 * args.n_bins > m:
            raise ValueError(f"--n-bins: {args.n_bins} bins need at least {2 * args.n_bins} "
                             f"points (2 per bin), but {data} has {m}; give --n-bins {m // 2} "
                             "or fewer")


def _counts(result: xr.Dataset, name: str) -> str:
    """The replicate count ``name`` of a validation (per slice when it differs: an ``"auto"``
    count stops where each slice's precision is reached), e.g. ``"2900 (auto)"``."""
    values = result.attrs.get(name)
    if values is None and name in result.coords:  # differing between slices
        values = np.unique(result[name].values)
        text = f"{int(values.min())}–{int(values.max())}"
    else:
        text = str(values)
    return text + (" (auto)" if result.attrs.get(f"{name}_requested") == AUTO else "")


def _bins_setting(result: xr.Dataset) -> str:
    """The bins of the binned statistics of a validation (per slice when they differ: the
    recommended number depends on each slice's M), e.g. ``"13–20"``."""
    if "n_bins" in result.coords:
        values = np.unique(result["n_bins"].values)
        return f"{int(values.min())}–{int(values.max())}" if values.size > 1 else str(values[0])
    return str(result.attrs.get("n_bins"))


def _simulated_settings(result: xr.Dataset, args: argparse.Namespace) -> str:
    """What the settings line says of the simulated references."""
    if result.attrs.get("simulated_statistics", None) == "":
        return "no simulated reference needed"
    return (f"simulated references from {_counts(result, 'n_mc')} sets per generator "
            f"({', '.join(args.generators)})")


def _run_validation(ds: xr.Dataset, args: argparse.Namespace, title: str) -> xr.Dataset:
    """Validate ``ds`` with the options of ``args`` and print the result: its summary
    (:func:`xuqcal.summary`: a verdict per question) and one table, or, for data with several
    slices (files stacked along ``dataset``, a NetCDF input over ``model``), the grid of
    verdicts (slice × question), then per slice its summary and table under a line
    ``dataset = b (M = 3834)``, then one summary row per slice and statistic."""
    start = time.perf_counter()
    # the options that validate and the summary share
    shared = dict(n_boot=args.n_boot, n_mc=args.n_mc, seed=args.seed, level=args.level,
                  generators=args.generators,
                  mc_precision=getattr(args, "mc_precision", defaults.MC_PRECISION),
                  heavy_tail_threshold=getattr(args, "heavy_tail_threshold",
                                               defaults.HEAVY_TAIL_THRESHOLD), tol=args.tol)
    result = validate(ds, args.statistics, n_bins=args.n_bins,
                      known_generator=args.known_generator,
                      simulated_scheme=(None if args.simulated_scheme == "auto"
                                        else args.simulated_scheme),
                      all_schemes=args.all_schemes, **shared,
                      **dependence_arguments(args))
    if any(type(v.data).__module__.startswith("dask") for v in result.variables.values()):
        result = result.compute()  # lazy for Dask-backed data (a Zarr store): once, here
    # the answers first: a verdict per question (the summary reads this validation)
    features = list(feature_specs(getattr(args, "features", None))) or None
    # with --groups / --block the summary's analyses (the statistics it validates, LZMS,
    # LCP) resample the same groups or blocks as the validation
    overview = summary(ds, validation_result=result, features=features, **shared,
                       **dependence_arguments(args))
    if any(type(v.data).__module__.startswith("dask") for v in overview.variables.values()):
        overview = overview.compute()
    elapsed = time.perf_counter() - start
    blocks = slice_blocks(result)
    settings = (f"BCa {format_level(args.level)} intervals from {_counts(result, 'n_boot')} "
                f"bootstrap replicates, {_simulated_settings(result, args)}, "
                f"{_bins_setting(result)} bins, seed {args.seed} ({elapsed:.1f} s)")
    resampled = resample_text(result)  # a dependent bootstrap: said on its own line
    if resampled:
        settings += f"\n{escape(resampled)}"
    print(f"\n{escape(title)}")  # names of files and labels, escaped
    if len(blocks) == 1 and not blocks[0][0]:
        print(f"M = {ds.sizes['sample']}, {settings}\n")
        print(escape(summary_text(overview), lines=True))
        print("\nDetails: every statistic, its zeta-scores and verdict")
        print(escape(summary_table(result), lines=True))
        return result
    print(f"{len(blocks)} slices along {', '.join(blocks[0][0])}, {settings}\n")
    print("Summary: the verdict of each question for each data set")
    print(escape(summary_grid(overview), lines=True))
    for labels, block in blocks:
        print(f"\n{escape(slice_title(labels, block))}")
        print(escape(summary_text(overview.sel(labels)), lines=True))
        print()
        print(escape(summary_table(block), lines=True))
    print("\nsummary: one row per slice and statistic (verdict and the scheme that decided it)")
    print(escape(slices_table(result), lines=True))
    return result


OUTPUT = "-o/--output"


def check_outputs(files: Sequence[Path] = (), *, inputs: Sequence[Path] = (),
                  overwrite: bool = False) -> None:
    """Check the output files of a command before any computation (one rule for every command).

    Each file must not be an input (whatever ``overwrite``) or a folder, its folder must exist
    and be writable, and an existing file is refused without ``overwrite``. Report and demo
    folders are checked by :func:`xuqcal.report.check_folder` and
    :func:`xuqcal.io.outputs.check_folder` with the same rule.

    Examples
    --------
    >>> check_outputs([Path("data.csv")], inputs=[Path("./data.csv")], overwrite=True)
    Traceback (most recent call last):
    ValueError: -o/--output: data.csv is also an input file; choose another output path
    """
    for path in files:
        _outputs.check_output_file(path, overwrite=overwrite, inputs=inputs, option=OUTPUT)


def _files(args: argparse.Namespace) -> str:
    """The input files of a command, as named in messages."""
    return ", ".join(os.fspath(f) for f in args.files)


def _data_name(args: argparse.Namespace, labels: dict | None = None) -> str:
    """The input data of a command (or of the slice with ``labels`` of several files or of a
    NetCDF input with extra dimensions), as named in messages."""
    where = f" (rows kept by --where {args.where!r})" if args.where else ""
    labels = dict(labels or {})
    files = list(args.files)
    if "dataset" in labels and (len(files) > 1 or getattr(args, "names", None)):
        label = labels.pop("dataset")
        names = _inputs.set_labels(files, getattr(args, "names", None))
        files = [files[names.index(label)]] if label in names else files
    text = ", ".join(os.fspath(f) for f in files) + where
    if labels:
        text += f" ({slice_title(labels)})"
    return text


def _read_data(args: argparse.Namespace, *, formula: str | None = None,
               csv_only: bool = False) -> xr.Dataset:
    """The data of ``validate`` and ``report`` (CSV, NetCDF or Zarr; ``csv_only``: CSV): one
    file, or several stacked along ``dataset`` (see :mod:`xuqcal.cli.inputs`);
    ``args.E``/``args.uE`` become the names or expressions used (for a NetCDF input, the
    variables found by role)."""
    ds, (args.E, args.uE) = _inputs.read_inputs(args.files, args, formula=formula,
                                                csv_only=csv_only)
    return ds


def with_output_locked(args: argparse.Namespace, command: str, body) -> int:
    """``body(args)`` of the command ``command`` with its ``-o`` output, if any, locked
    (:mod:`xuqcal.io.locks`) before anything is checked, read or computed, until it is
    written; another writer is refused."""
    if args.output is None:
        return body(args)
    with _locks.locked(args.output, f"xuqcal {command}", option=OUTPUT):
        return body(args)


def cmd_validate(args: argparse.Namespace) -> int:
    """``xuqcal validate`` (:func:`with_output_locked`)."""
    return with_output_locked(args, "validate", _validate)


def cmd_compare(args: argparse.Namespace) -> int:
    """``xuqcal compare`` (:func:`xuqcal.cli.compare.run`, :func:`with_output_locked`)."""
    return with_output_locked(args, "compare", lambda checked: _cli_compare.run(
        checked, read_data=_read_data, check_outputs=check_outputs,
        compute_context=compute_context))


def _validate(args: argparse.Namespace) -> int:
    """``xuqcal validate`` (its output, if any, locked)."""
    if args.output is not None:
        check_outputs([args.output], inputs=args.files, overwrite=args.overwrite)
    ds = _read_data(args)
    _check_sizes(ds, args, lambda labels: _data_name(args, labels))
    with compute_context(args):
        result = _run_validation(ds, args, f"Validation of {_files(args)}")
    result.attrs.update(source=_files(args), E_expression=args.E, uE_expression=args.uE,
                        where=args.where or "")
    if args.output is not None:
        path = io.to_netcdf(result, args.output, overwrite=args.overwrite)
        print(f"\nwritten: {escape(path)}")
    return 0


def _free_folder(base: Path) -> Path:
    """``base``, or ``base-2``, ``base-3``, ... : the first that does not exist yet."""
    candidate, k = base, 1
    while candidate.exists():
        k += 1
        candidate = base.with_name(f"{base.name}-{k}")
    return candidate


def demo_datasets(size: int = 5000, seed: int = defaults.SEED) -> dict[str, xr.Dataset]:
    """The data sets of ``xuqcal demo``: NIG data (ν = 6) of ``size`` points, calibrated and
    with uncertainties 20 % too small.

    Examples
    --------
    >>> list(demo_datasets(100))
    ['calibrated', 'miscalibrated']
    """
    return {
        "calibrated": synthetic.nig(size, nu=6, seed=seed),
        "miscalibrated": synthetic.nig(size, nu=6, seed=seed, uE_scale=0.8),
    }


def cmd_demo(args: argparse.Namespace) -> int:
    """``xuqcal demo``: validate two synthetic data sets and write their HTML reports (the
    output folder locked, :mod:`xuqcal.io.locks`, before any check or computation)."""
    output = args.output if args.output is not None else _free_folder(Path("xuqcal-demo"))
    with _locks.locked(output, "xuqcal demo",
                       option=OUTPUT if args.output is not None else None):
        return _demo(args, output)


def _demo(args: argparse.Namespace, output: Path) -> int:
    """``xuqcal demo`` writing to the folder ``output`` (locked)."""
    from xuqcal.report.html import check_folder, check_options, report

    check_options(dpi=args.dpi, figure_format=args.figure_format)
    titles = {
        "calibrated": "Synthetic NIG data (nu = 6), calibrated uncertainties",
        "miscalibrated": "Synthetic NIG data (nu = 6), uncertainties 20% too small",
    }
    files = {name: f"demo_{name}.nc" for name in titles}
    reports = {name: output / f"report_{name}" for name in titles}
    _outputs.check_folder(output, list(files.values()), overwrite=args.overwrite,
                          option=OUTPUT)
    # a first run on this machine compiles the kernels (the data below use them): say so
    _numba_cache.announce_if_cold()
    cases = demo_datasets(args.size, args.seed)
    for ds in cases.values():
        _check_sizes(ds, args, "--size", report=True)
    if output.is_dir():
        for name, folder in reports.items():
            if folder.exists() and not args.overwrite:
                raise FileExistsError(f"{OUTPUT}: {folder} already exists; pass --overwrite "
                                      "to replace the report xuqcal wrote there")
            check_folder(cases[name], folder, overwrite=args.overwrite,
                         figure_format=args.figure_format)
    print("A calibrated data set fails a 95 % test by chance in about 5 % of cases; the "
          "mis-calibrated one fails zms, rce, zv and nll far beyond |zeta| = 1.")
    new_reports = [folder for folder in reports.values() if not folder.exists()]
    managed = _outputs.ManagedFolder(output, overwrite=args.overwrite, option=OUTPUT,
                                     what="xuqcal demo")
    pages = []
    try:
        with compute_context(args):
            for name, ds in cases.items():
                result = _run_validation(ds, args, titles[name])
                try:
                    io.to_netcdf(result, managed.target(files[name]), overwrite=True)
                except OSError as error:  # named by its final place, not the staging folder
                    if error.errno not in _outputs.WRITE_ERRNOS:
                        raise
                    raise managed.write_error(error, files[name]) from error
                print(f"written: {escape(managed.commit(files[name]))}")
                pages.append(report(ds, reports[name], title=titles[name], n_boot=args.n_boot,
                                    n_mc=args.n_mc, mc_precision=args.mc_precision,
                                    n_bins=args.n_bins, seed=args.seed,
                                    overwrite=args.overwrite, validation_result=result,
                                    dpi=args.dpi, figure_format=args.figure_format))
    except BaseException:  # an error or Ctrl-C: undo what this run wrote
        for folder in new_reports:
            _outputs.remove_written(folder)
        managed.abort()
        raise
    managed.close()
    for page in pages:
        print(f"report: {escape(page.resolve())}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``xuqcal report``: the output folder is locked (:mod:`xuqcal.io.locks`) before anything
    is checked, read or computed, until the report is in place; another writer is refused."""
    with _locks.locked(args.output, "xuqcal report", option=OUTPUT):
        return _report(args)


def _report(args: argparse.Namespace) -> int:
    """``xuqcal report`` (its output folder locked)."""
    from xuqcal.report.html import check_folder, check_options, report

    check_options(title=args.title, dpi=args.dpi, figure_format=args.figure_format)
    _outputs.check_not_input(args.output, args.files, OUTPUT)
    if args.output.exists() and not args.output.is_dir():
        raise NotADirectoryError(f"{OUTPUT}: {args.output} is a file, not a folder")
    _outputs.check_folder_writable(args.output if args.output.is_dir() else
                                   args.output.parent, OUTPUT)
    if args.output.exists() and _outputs.has_content(args.output) and not args.overwrite:
        raise FileExistsError(f"{OUTPUT}: {args.output} already exists and is not empty; pass "
                              "--overwrite to replace the report (only the files xuqcal wrote "
                              "there are replaced)")
    features = list(feature_specs(args.features))
    # each CSV file read once (data and formulas); NetCDF and Zarr inputs as validate reads them
    ds = _read_data(args, formula=args.formula)
    if args.formula:  # the report's features: the element counts are not conditioning ones
        ds = ds[["E", "uE", *features, "X1", "X2"]]
    _check_sizes(ds, args, lambda labels: _data_name(args, labels), report=True)
    check_folder(ds, args.output, overwrite=args.overwrite, inputs=args.files,
                 figure_format=args.figure_format)
    with compute_context(args):
        # validated here so that --generators, --known-generator, --simulated-scheme and
        # --level reach the report's validation table; several files: the stacked data set
        # (over dataset) goes to the report as it is (one page: a summary, a section per set)
        result = _run_validation(ds, args, f"{_files(args)}: E = {args.E}, uE = {args.uE}")
        page = report(ds, args.output, n_boot=args.n_boot, n_mc=args.n_mc,
                      mc_precision=args.mc_precision, n_bins=args.n_bins, seed=args.seed,
                      statistics=args.statistics,
                      overwrite=args.overwrite, validation_result=result, title=args.title,
                      dpi=args.dpi, figure_format=args.figure_format,
                      **dependence_arguments(args))
    print(f"report: {escape(page.resolve())}")
    return 0


def cmd_cube(args: argparse.Namespace) -> int:
    """``xuqcal cube build|info|fit|extend``."""
    from xuqcal.studies import cube

    if args.cube_command == "build":
        check_outputs([args.output], overwrite=args.overwrite)
        args_for_context = argparse.Namespace(scheduler=args.scheduler, workers=args.workers,
                                              no_progress=True)
        start = time.perf_counter()
        try:
            with compute_context(args_for_context):
                result = cube.build(args.statistics, size=args.size, n_bins=args.n_bins,
                                    nu=args.nu, generators=args.generators, n_mc=args.n_mc,
                                    seed=args.seed, keep_replicates=args.keep_replicates,
                                    path=args.output, overwrite=args.overwrite,
                                    progress=not args.no_progress)
        except KeyboardInterrupt:
            total = len(args.size) * len(args.nu) * len(args.generators)
            saved = cube.checkpoint_count(args.output)
            raise Interrupted(f"interrupted: {saved} of {total} cells saved; rerun the same "
                              "command to resume") from None
        print(f"written: {escape(args.output)} ({time.perf_counter() - start:.1f} s)")
        print(_cube_summary(result))
        return 0
    if args.cube_command == "info":
        print(_cube_summary(cube.open(args.file)))
        return 0
    if args.cube_command == "fit":
        fit = cube.fit_sqrt(cube.open(args.file))
        print("mean = a + alpha * sqrt(N / M), weighted least squares over "
              f"{fit.attrs['fitted_over']}")
        print(f"{'statistic':<10} {'generator':<10} {'a':>10} {'± se':>9} {'alpha':>9} "
              f"{'± se':>9} {'chi2/dof':>9}")
        for statistic in fit.statistic.values:
            for generator in fit.generator.values:
                f = fit.sel(statistic=statistic, generator=generator)
                print(f"{statistic!s:<10} {generator!s:<10} {f.a.item():>10.4f} "
                      f"{f.a_se.item():>9.4f} {f.alpha.item():>9.4f} {f.alpha_se.item():>9.4f} "
                      f"{f.chi2_dof.item():>9.2f}")
        return 0
    dims = {"size": args.size, "n_bins": args.n_bins, "nu": args.nu,
            "generator": args.generators}
    dim, values = next((d, v) for d, v in dims.items() if v is not None)
    try:
        result = cube.extend(args.file, progress=not args.no_progress, **{dim: values})
    except KeyboardInterrupt:
        saved = cube.checkpoint_count(args.file, "extend")
        raise Interrupted(f"interrupted: {saved} of {_new_cells(args.file, dim, values)} new "
                          "cells saved; rerun the same command to resume") from None
    print(f"extended {escape(args.file)} along {dim} with {values}")
    print(_cube_summary(result))
    return 0


def _new_cells(path: Path, dim: str, values: list) -> int | str:
    """How many cells an extend of the cube at ``path`` along ``dim`` computes."""
    import json

    try:
        with xr.open_dataset(path, engine="netcdf4") as stored:
            grid = json.loads(stored.attrs["grid"])
    except Exception:  # only for a message
        return "?"
    cells = [d for d in grid if d not in ("statistic", "n_bins")]
    return math.prod(len(values) if d == dim else len(grid[d]) for d in cells)


def _cube_summary(result: xr.Dataset) -> str:
    lines = [f"sensitivity cube ({result.attrs.get('kind')}), xuqcal "
             f"{result.attrs.get('xuqcal_version')}, created {result.attrs.get('created', '-')}"]
    for dim, size in result["mean"].sizes.items():
        values = ", ".join(str(v) for v in result[dim].values.tolist())
        lines.append(f"  {dim:<10} {size:>4}: {values}")
    lines.append(f"  variables: {', '.join(map(str, result.data_vars))}")
    lines.append(f"  n_mc = {result.attrs.get('n_mc')}, seed = {result.attrs.get('seed')}")
    return escape("\n".join(lines), lines=True)  # build_from cubes: labels of files


#: The folder of the xuqcal package (this module is in its cli/ folder).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _argument_check(error: BaseException) -> bool:
    """Whether a ``TypeError`` comes from an argument check of xuqcal: raised in the package,
    with a message that names the argument (``name: ...``) or says what was ``expected``."""
    frames = traceback.extract_tb(error.__traceback__)
    raised_here = bool(frames) and os.path.abspath(frames[-1].filename).startswith(_PACKAGE)
    return raised_here and bool(re.match(r"^(\w+: |expected )", str(error)))


def _killed_worker_message(error: BaseException) -> str:
    """One line for ``distributed.KilledWorker``: the workers that ran a task died, one after
    the other, until the scheduler gave up (``distributed.scheduler.allowed-failures``)."""
    task = getattr(error, "task", None)
    named = f" running task {task!r}" if task else ""
    return (f"the dask workers died{named}, on every retry: most often a worker's memory "
            "passed its memory_limit and its nanny stopped it; give the workers more memory "
            "(dask worker --memory-limit, LocalCluster(memory_limit=...)) or use fewer points "
            "per task, and see the workers' logs")


def _user_error(error: BaseException) -> bool:
    if isinstance(error, ValueError | OSError):  # incl. UnicodeDecodeError, FileExistsError,
        return True  # FileNotFoundError, IsADirectoryError, PermissionError, ConnectionError
    return isinstance(error, TypeError) and _argument_check(error)


def _data_names(args: argparse.Namespace) -> dict[str, str]:
    """Python parameters that name the input data, shown as the file (and --where) at fault."""
    if args.command in ("validate", "report"):
        return {"ds": _data_name(args)}
    if args.command == "cube":
        return {"cube": str(args.file) if getattr(args, "file", None) else "--output"}
    if args.command == "demo":
        return {"ds": "--size"}
    return {}


def _write_message(error: OSError, args: argparse.Namespace, command: str) -> str:
    """A failed write (full disk, I/O error: exit status 2) on one line, naming the output,
    its option and the errno (the errors of :func:`xuqcal.io.outputs.write_error` already do;
    a bare one, e.g. ``[Errno 28] No space left on device``, is completed here)."""
    option = "FILE" if command == "cube extend" else OUTPUT
    output = getattr(args, "file", None) if command == "cube extend" else \
        getattr(args, "output", None)
    text = option_message(error, command)
    if "cannot write" not in text:
        code = error.errno
        text = (f"cannot write {output if output is not None else 'the output'}: "
                f"{error.strerror or os.strerror(code)} ({errno.errorcode.get(code, '?')}, "
                f"errno {code}); what xuqcal had written before is unchanged")
    if not text.startswith(f"{option}: "):
        text = f"{option}: {text}"
    return text


def _one_line_warning(command: str):
    """``warnings.showwarning`` printing ``xuqcal COMMAND: warning: message`` on one line."""
    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"xuqcal {command}: warning: {escape(text)} ({category.__name__})",
              file=file or sys.stderr)
    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``xuqcal`` command.

    Returns the exit status: 0 on success, 2 for a user error (one line on stderr, naming the
    option at fault; also a write that failed for want of space or an I/O error, ENOSPC, EIO,
    EDQUOT: the line names the output, its option and the errno, and the old output is kept),
    1 for an internal error (one line; ``--debug`` shows the traceback), 130 when interrupted
    (Ctrl-C).

    Examples
    --------
    >>> main(["cube", "info", "no-such-cube.nc"])
    2
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help, --version, or a bad option (one line printed)
        return int(done.code or 0)
    commands = {"validate": cmd_validate, "demo": cmd_demo, "report": cmd_report,
                "cube": cmd_cube, "recalibrate": _cli_recalibrate.run,
                "compare": cmd_compare}
    command = args.command + (f" {args.cube_command}" if args.command == "cube" else "")
    debug = getattr(args, "debug", False)
    try:
        with warnings.catch_warnings():
            if not debug:
                warnings.showwarning = _one_line_warning(command)
            return commands[args.command](args)
    except (KeyboardInterrupt, Interrupted) as error:
        if debug:
            raise
        detail = str(error) if isinstance(error, Interrupted) else "interrupted"
        print(f"xuqcal {command}: {escape(detail)}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. ``xuqcal ... | head``: stop quietly, as other commands do
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except MemoryError as error:
        if debug:
            raise
        detail = escape(str(error).strip() or "MemoryError")
        print(f"xuqcal {command}: error: not enough memory ({detail}); reduce --n-boot, --n-mc, "
              "--n-bins or the number of points", file=sys.stderr)
        return 2
    except Exception as error:
        if debug:
            raise
        if isinstance(error, OSError) and error.errno in _outputs.WRITE_ERRNOS:
            print(f"xuqcal {command}: error: {escape(_write_message(error, args, command))}",
                  file=sys.stderr)
            return 2
        if _user_error(error):
            extra = feature_options(getattr(args, "features", None))
            extra.update(_data_names(args))
            print(f"xuqcal {command}: error: "
                  f"{escape(option_message(error, command, extra=extra))}",
                  file=sys.stderr)
            return 2
        if type(error).__name__ == "KilledWorker":  # distributed gave up on a task
            print(f"xuqcal {command}: error: {escape(_killed_worker_message(error))}",
                  file=sys.stderr)
            return 2
        reason = escape(option_message(error, command))
        print(f"xuqcal {command}: internal error ({type(error).__name__}: {reason}); this is "
              "a bug of xuqcal: rerun with --debug for the traceback and report it",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
