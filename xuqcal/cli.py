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

from xuqcal import _cli_recalibrate, io, synthetic
from xuqcal._version import __version__
from xuqcal.generators import get_generator
from xuqcal.reference import DEFAULT_GENERATORS
from xuqcal.statistics import DEFAULT_N_BINS, get_statistics
from xuqcal.validation import DEFAULT_STATISTICS, SIMULATED_SCHEMES, summary_table, validate


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
    parser.add_argument("--simulated-scheme", choices=["auto", *SIMULATED_SCHEMES],
                        default="auto",
                        help="scheme deciding the verdict of statistics without a predefined "
                             "reference: Sim (bootstrap BCa interval of the data) or Sim2 "
                             "(simulated 95%% range); auto (the default): Sim2 with "
                             "--known-generator, else Sim")
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
                      help="folder for the results and the HTML reports (default: the first "
                           "free ./xuqcal-demo, ./xuqcal-demo-2, ...)")
    demo.add_argument("--overwrite", action="store_true",
                      help="allow replacing existing result files")
    demo.add_argument("--size", type=int, default=5000, metavar="M",
                      help="points per synthetic data set (default: 5000)")
    _add_compute_options(demo)
    rep = commands.add_parser(
        "report", help="write an HTML validation report of a CSV file",
        description="Run every analysis that applies (validation, diagnostics, local analyses "
                    "along uE and each feature, reliability, confidence curve) and write an "
                    "HTML page with its figures and NetCDF results.")
    rep.add_argument("file", type=Path, help="CSV file")
    rep.add_argument("--E", required=True, metavar="EXPR", help="error column or expression")
    rep.add_argument("--uE", required=True, metavar="EXPR",
                     help="uncertainty column or expression")
    rep.add_argument("--where", metavar="EXPR", help="row filter")
    rep.add_argument("--features", type=lambda t: [f for f in t.split(",") if f.strip()],
                     metavar="LIST", help="feature columns or NAME=EXPR, comma-separated")
    rep.add_argument("--formula", metavar="COLUMN",
                     help="column of molecular formulas: adds the features X1 (mass) and X2 "
                          "(heteroatom fraction)")
    rep.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                     help="report folder")
    rep.add_argument("--overwrite", action="store_true",
                     help="allow replacing an existing report")
    _add_compute_options(rep)
    _add_cube_commands(commands)
    _cli_recalibrate.add_parser(commands)
    return parser


def _number_list(kind):
    def parse(text: str) -> list:
        try:
            return [kind(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated numbers, got {text!r}") from None
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
    build.add_argument("--n-mc", type=int, default=5000, metavar="N",
                       help="synthetic data sets per cell (default: 5000)")
    build.add_argument("--seed", type=int, default=0, help="seed of every random draw")
    build.add_argument("--keep-replicates", action="store_true",
                       help="also store the simulated values")
    build.add_argument("-o", "--output", type=Path, required=True, metavar="CUBE.nc",
                       help="NetCDF file to write")
    build.add_argument("--overwrite", action="store_true",
                       help="allow replacing an existing cube file")
    where = build.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="address of a running dask.distributed scheduler")
    where.add_argument("--workers", type=int, metavar="N",
                       help="start a local dask.distributed cluster with N worker processes")
    build.add_argument("--no-progress", action="store_true", help="do not report progress")

    info = actions.add_parser("info", help="describe a cube file")
    info.add_argument("file", type=Path, help="cube NetCDF file")

    fit = actions.add_parser("fit", help="fit mean = a + alpha sqrt(N/M) per statistic and D")
    fit.add_argument("file", type=Path, help="cube NetCDF file")

    extend = actions.add_parser(
        "extend", help="add values along one dimension of a NIG cube, computing only new cells")
    extend.add_argument("file", type=Path, help="cube NetCDF file (replaced atomically)")
    group = extend.add_mutually_exclusive_group(required=True)
    group.add_argument("--size", type=_number_list(int), metavar="LIST")
    group.add_argument("--n-bins", type=_number_list(int), metavar="LIST")
    group.add_argument("--nu", type=_number_list(float), metavar="LIST")
    group.add_argument("--generators", type=_generator_list, metavar="LIST")
    extend.add_argument("--no-progress", action="store_true", help="do not report progress")


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
                      known_generator=args.known_generator,
                      simulated_scheme=(None if args.simulated_scheme == "auto"
                                        else args.simulated_scheme))
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


def _free_folder(base: Path) -> Path:
    """``base``, or ``base-2``, ``base-3``, ... : the first that does not exist yet."""
    candidate, k = base, 1
    while candidate.exists():
        k += 1
        candidate = base.with_name(f"{base.name}-{k}")
    return candidate


def cmd_demo(args: argparse.Namespace) -> int:
    """``xuqcal demo``: validate two synthetic data sets and write their HTML reports."""
    from xuqcal.report import report

    cases = {
        "calibrated": synthetic.nig(args.size, nu=6, seed=args.seed),
        "miscalibrated": synthetic.nig(args.size, nu=6, seed=args.seed, uE_scale=0.8),
    }
    titles = {
        "calibrated": "Synthetic NIG data (nu = 6), calibrated uncertainties",
        "miscalibrated": "Synthetic NIG data (nu = 6), uncertainties 20% too small",
    }
    output = args.output if args.output is not None else _free_folder(Path("xuqcal-demo"))
    paths = {name: output / f"demo_{name}.nc" for name in cases}
    reports = {name: output / f"report_{name}" for name in cases}
    existing = [p for p in [*paths.values(), *reports.values()] if p.exists()]
    if existing and not args.overwrite:
        raise FileExistsError(f"output: {', '.join(map(str, existing))} already exist; pass "
                              "--overwrite to replace them")
    print("A calibrated data set fails a 95 % test by chance in about 5 % of cases; the "
          "mis-calibrated one fails zms, rce, zv and nll far beyond |zeta| = 1.")
    output.mkdir(parents=True, exist_ok=True)
    pages = []
    with compute_context(args):
        for name, ds in cases.items():
            result = _run_validation(ds, args, titles[name])
            print(f"written: {io.to_netcdf(result, paths[name], overwrite=args.overwrite)}")
            pages.append(report(ds, reports[name], title=titles[name], n_boot=args.n_boot,
                                n_mc=args.n_mc, n_bins=args.n_bins, seed=args.seed,
                                overwrite=args.overwrite, validation_result=result))
    for page in pages:
        print(f"report: {page.resolve()}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``xuqcal report``."""
    from xuqcal.report import report

    if args.output.exists() and any(args.output.iterdir()) and not args.overwrite:
        raise FileExistsError(f"output: {args.output} already exists and is not empty; pass "
                              "--overwrite to replace the report")
    features = {}
    for spec in args.features or []:
        name, _, expression = spec.partition("=")
        features[name.strip()] = (expression or name).strip()
    ds = io.read_csv(args.file, E=args.E, uE=args.uE, where=args.where,
                     features=features or None)
    if args.formula:
        import pandas as pd

        from xuqcal.features import add_formula_features

        formulas = pd.read_csv(args.file, usecols=[args.formula])[args.formula]
        ds = add_formula_features(ds, formulas)[["E", "uE", *features, "X1", "X2"]]
    with compute_context(args):
        # validated here so that --generators, --known-generator, --simulated-scheme and
        # --level reach the report's validation table
        result = _run_validation(ds, args, f"{args.file}: E = {args.E}, uE = {args.uE}")
        page = report(ds, args.output, n_boot=args.n_boot, n_mc=args.n_mc,
                      n_bins=args.n_bins, seed=args.seed, statistics=args.statistics,
                      overwrite=args.overwrite, validation_result=result)
    print(f"report: {page.resolve()}")
    return 0


def cmd_cube(args: argparse.Namespace) -> int:
    """``xuqcal cube build|info|fit|extend``."""
    from xuqcal import cube

    if args.cube_command == "build":
        if args.output.exists() and not args.overwrite:
            raise FileExistsError(f"output: {args.output} already exists; pass --overwrite "
                                  "to replace it")
        args_for_context = argparse.Namespace(scheduler=args.scheduler, workers=args.workers,
                                              no_progress=True)
        start = time.perf_counter()
        with compute_context(args_for_context):
            result = cube.build(args.statistics, size=args.size, n_bins=args.n_bins,
                                nu=args.nu, generator=args.generators, n_mc=args.n_mc,
                                seed=args.seed, keep_replicates=args.keep_replicates,
                                path=args.output, overwrite=args.overwrite,
                                progress=not args.no_progress)
        print(f"written: {args.output} ({time.perf_counter() - start:.1f} s)")
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
    result = cube.extend(args.file, progress=not args.no_progress, **{dim: values})
    print(f"extended {args.file} along {dim} with {values}")
    print(_cube_summary(result))
    return 0


def _cube_summary(result: xr.Dataset) -> str:
    lines = [f"sensitivity cube ({result.attrs.get('kind')}), xuqcal "
             f"{result.attrs.get('xuqcal_version')}, created {result.attrs.get('created', '-')}"]
    for dim, size in result["mean"].sizes.items():
        values = ", ".join(str(v) for v in result[dim].values.tolist())
        lines.append(f"  {dim:<10} {size:>4}: {values}")
    lines.append(f"  variables: {', '.join(map(str, result.data_vars))}")
    lines.append(f"  n_mc = {result.attrs.get('n_mc')}, seed = {result.attrs.get('seed')}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``xuqcal`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    commands = {"validate": cmd_validate, "demo": cmd_demo, "report": cmd_report,
                "cube": cmd_cube, "recalibrate": _cli_recalibrate.run}
    try:
        return commands[args.command](args)
    except (ValueError, FileExistsError, FileNotFoundError) as error:
        print(f"xuqcal {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
