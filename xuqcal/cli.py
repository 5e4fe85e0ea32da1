"""The ``xuqcal`` command.

``xuqcal validate FILE.csv --E EXPR --uE EXPR`` validates the uncertainties of a CSV file;
``xuqcal demo`` does the same on built-in synthetic data (a calibrated and a mis-calibrated NIG
data set). Results print as a table and, with ``-o``, are written to NetCDF.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import xarray as xr

from xuqcal import io, synthetic
from xuqcal._version import __version__
from xuqcal.generators import get_generator
from xuqcal.reference import DEFAULT_GENERATORS
from xuqcal.statistics import DEFAULT_N_BINS, get_statistics
from xuqcal.validation import DEFAULT_STATISTICS, summary_table, validate


def _statistics_list(text: str) -> list[str]:
    keys = [k.strip() for k in text.split(",") if k.strip()]
    try:
        get_statistics(keys)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return keys


def _generator_list(text: str) -> list[str]:
    names = [k.strip() for k in text.split(",") if k.strip()]
    try:
        return [get_generator(name).name for name in names]
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_compute_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-boot", type=int, default=10_000, metavar="N",
                        help="bootstrap replicates for the BCa intervals (default: 10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random draw")
    parser.add_argument("--level", type=float, default=0.95, help="confidence level")
    parser.add_argument("--n-bins", type=int, default=DEFAULT_N_BINS, metavar="N",
                        help=f"bins of the binned statistics (default: {DEFAULT_N_BINS})")
    parser.add_argument("--n-mc", type=int, default=10_000, metavar="N",
                        help="synthetic error sets per generator for the simulated references "
                             "(default: 10000)")
    parser.add_argument("--generators", type=_generator_list, default=list(DEFAULT_GENERATORS),
                        metavar="LIST",
                        help="generative distributions of the simulated references "
                             f"(default: {','.join(DEFAULT_GENERATORS)})")
    parser.add_argument("--known-generator", metavar="NAME",
                        help="the errors' generative distribution when it is known (e.g. "
                             "normal): validate with it, skip the sensitivity check")
    parser.add_argument("--statistics", type=_statistics_list,
                        default=list(DEFAULT_STATISTICS), metavar="LIST",
                        help="comma-separated statistic keys "
                             f"(default: {','.join(DEFAULT_STATISTICS)})")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="address of a running dask.distributed scheduler")
    where.add_argument("--workers", type=int, metavar="N",
                       help="start a local dask.distributed cluster with N worker processes")
    parser.add_argument("--no-progress", action="store_true", help="do not show progress")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``xuqcal`` command."""
    parser = argparse.ArgumentParser(
        prog="xuqcal",
        description="Validate the calibration of ML prediction uncertainties.",
    )
    parser.add_argument("--version", action="version", version=f"xuqcal {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    val = commands.add_parser(
        "validate", help="validate E and uE read from a CSV file",
        description="Validate E and uE of a CSV file: estimates, BCa intervals, zeta-scores.",
    )
    val.add_argument("file", type=Path, help="CSV file")
    val.add_argument("--E", required=True, metavar="EXPR",
                     help="error column or expression, e.g. 'E_ - prediction'")
    val.add_argument("--uE", required=True, metavar="EXPR",
                     help="uncertainty column or expression, e.g. 'sqrt(uncertainty_total)'")
    val.add_argument("--where", metavar="EXPR",
                     help="row filter, e.g. 'uE > 1e-6 * std(E)'")
    val.add_argument("-o", "--output", type=Path, metavar="FILE.nc",
                     help="write the result to this NetCDF file")
    val.add_argument("--overwrite", action="store_true",
                     help="allow replacing an existing output file")
    _add_compute_options(val)

    demo = commands.add_parser(
        "demo", help="validate built-in synthetic data (calibrated and mis-calibrated)",
        description="Validate two synthetic NIG data sets (nu = 6, M = 5000): one calibrated, "
                    "one whose uncertainties are 20%% too small.",
    )
    demo.add_argument("-o", "--output", type=Path, metavar="DIR",
                      help="write the results as NetCDF files into this folder")
    demo.add_argument("--overwrite", action="store_true",
                      help="allow replacing existing result files")
    demo.add_argument("--size", type=int, default=5000, metavar="M",
                      help="points per synthetic data set (default: 5000)")
    _add_compute_options(demo)
    return parser


@contextlib.contextmanager
def compute_context(args: argparse.Namespace) -> Iterator[None]:
    """Where Dask computes (local threads, or a distributed cluster) and progress display."""
    with contextlib.ExitStack() as stack:
        client = None
        if args.scheduler or args.workers:
            from distributed import Client, LocalCluster

            if args.scheduler:
                client = stack.enter_context(Client(args.scheduler))
            else:
                cluster = stack.enter_context(
                    LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True)
                )
                client = stack.enter_context(Client(cluster))
            print(f"dask.distributed: {client.dashboard_link} (progress on the dashboard)",
                  file=sys.stderr)
        elif not args.no_progress:
            from dask.diagnostics import ProgressBar

            stack.enter_context(ProgressBar(minimum=1.0, out=sys.stderr))
        yield


def _run_validation(ds: xr.Dataset, args: argparse.Namespace, title: str) -> xr.Dataset:
    start = time.perf_counter()
    result = validate(ds, args.statistics, n_boot=args.n_boot, n_mc=args.n_mc, level=args.level,
                      seed=args.seed, n_bins=args.n_bins, generators=args.generators,
                      known_generator=args.known_generator)
    elapsed = time.perf_counter() - start
    print(f"\n{title}")
    print(f"M = {ds.sizes['sample']}, BCa {args.level:.0%} intervals from {args.n_boot} "
          f"bootstrap replicates, simulated references from {args.n_mc} sets per generator "
          f"({', '.join(args.generators)}), {args.n_bins} bins, seed {args.seed} "
          f"({elapsed:.1f} s)")
    print(summary_table(result))
    return result


def _check_writable(paths: Sequence[Path], overwrite: bool) -> None:
    existing = [str(p) for p in paths if p.exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"output: {', '.join(existing)} already exists; pass --overwrite to replace it"
        )


def cmd_validate(args: argparse.Namespace) -> int:
    """``xuqcal validate``."""
    if args.output is not None:
        _check_writable([args.output], args.overwrite)
    ds = io.read_csv(args.file, E=args.E, uE=args.uE, where=args.where)
    with compute_context(args):
        result = _run_validation(ds, args, f"Validation of {args.file}")
    result.attrs.update(source=str(args.file), E_expression=args.E, uE_expression=args.uE,
                        where=args.where or "")
    if args.output is not None:
        path = io.to_netcdf(result, args.output, overwrite=args.overwrite)
        print(f"\nwritten: {path}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """``xuqcal demo``."""
    cases = {
        "calibrated": synthetic.nig(args.size, nu=6, seed=args.seed),
        "miscalibrated": synthetic.nig(args.size, nu=6, seed=args.seed, uE_scale=0.8),
    }
    titles = {
        "calibrated": "Synthetic NIG data (nu = 6), calibrated uncertainties",
        "miscalibrated": "Synthetic NIG data (nu = 6), uncertainties 20% too small",
    }
    paths = {}
    if args.output is not None:
        paths = {name: args.output / f"demo_{name}.nc" for name in cases}
        _check_writable(list(paths.values()), args.overwrite)
    print("A calibrated data set fails a 95 % test by chance in about 5 % of cases; the "
          "mis-calibrated one fails zms, rce, zv and nll far beyond |zeta| = 1.")
    with compute_context(args):
        for name, ds in cases.items():
            result = _run_validation(ds, args, titles[name])
            if paths:
                args.output.mkdir(parents=True, exist_ok=True)
                print(f"written: {io.to_netcdf(result, paths[name], overwrite=args.overwrite)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``xuqcal`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    commands = {"validate": cmd_validate, "demo": cmd_demo}
    try:
        return commands[args.command](args)
    except (ValueError, FileExistsError, FileNotFoundError) as error:
        print(f"xuqcal {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
