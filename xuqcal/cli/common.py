"""Shared pieces of the ``xuqcal`` command: option types, error messages, interruption.

Library errors start with the name of the Python parameter at fault (``n_boot: expected ...``);
the command shows the option the user typed instead (``--n-boot: expected ...``), with one
table per command. The parameters have the names of the options (``n_boot`` is ``--n-boot``,
``n_mc`` is ``--n-mc``, ...); where one parameter name stands for two options, the function
that raised decides (``(parameter, function)`` keys, see :func:`option_message`).
"""

from __future__ import annotations

import argparse
import math
import re
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

from xuqcal.core.checks import check_tolerance

_COMPUTE = {
    "n_boot": "--n-boot", "n_mc": "--n-mc", "seed": "--seed", "level": "--level",
    "n_bins": "--n-bins", "generators": "--generators", "generator": "--generators",
    "statistics": "--statistics", "known_generator": "--known-generator",
    "simulated_scheme": "--simulated-scheme", "mc_precision": "--mc-precision",
    "all_schemes": "--all-schemes", "heavy_tail_threshold": "--heavy-tail-threshold",
    "tol": "--tol",
    "E": "--E", "uE": "--uE", "where": "--where",
    "features": "--features", "scheduler": "--scheduler", "workers": "--workers",
    "names": "--names",
    "groups": "--groups", "block": "--block", "block_length": "--block",
    "resample": "--groups/--block",
}

#: Python parameter (or (parameter, function that raised)) -> CLI option, per command.
OPTIONS: dict[str, dict] = {
    "validate": dict(_COMPUTE, output="-o/--output", path="-o/--output"),
    "report": dict(_COMPUTE, output="-o/--output", folder="-o/--output", formula="--formula",
                   formulas="--formula", title="--title", dpi="--dpi",
                   figure_format="--figure-format"),
    "demo": dict(_COMPUTE, output="-o/--output", folder="-o/--output", size="--size",
                 M="--size", dpi="--dpi", figure_format="--figure-format"),
    "cube build": {
        "statistics": "--statistics", "size": "--size", "n_bins": "--n-bins", "nu": "--nu",
        "generator": "--generators", "generators": "--generators", "n_mc": "--n-mc",
        "seed": "--seed", "path": "-o/--output", "output": "-o/--output",
        "scheduler": "--scheduler", "workers": "--workers",
    },
    "cube extend": {"size": "--size", "n_bins": "--n-bins", "nu": "--nu",
                    "generator": "--generators", "path": "FILE", "data": "FILE",
                    "dataset": "FILE"},
    "cube info": {"path": "FILE"},
    "cube fit": {"path": "FILE"},
    "recalibrate": {
        "E": "--E", "uE": "--uE", "test_E": "--test-E", "test_uE": "--test-uE",
        "where": "--where", "features": "--features", "method": "--method", "by": "--by",
        "loss": "--loss", "n_bins_scores": "--n-bins-scores", "n_mc": "--n-mc",
        "n_boot": "--n-boot", "n_mc_fv": "--n-mc-fv", "seed": "--seed", "formula": "--formula",
        "formulas": "--formula",
        "output": "-o/--output", "path": "-o/--output",
        ("n_bins", "fit"): "--n-bins", ("n_bins", "scan"): "--n-bins",
        ("n_bins", "evaluate"): "--n-bins-scores", ("n_bins", "scores"): "--n-bins-scores",
    },
    "compare": {"groups": "--groups", "block": "--block", "block_length": "--block",
                "resample": "--groups/--block"},
}

_PREFIX = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): ")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1.

    Examples
    --------
    >>> positive_int("4")
    4
    >>> positive_int("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected an integer >= 1, got '0'
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"expected an integer from 1 to {MAX_COUNT} (more "
                                         f"would exhaust the memory), got {text!r}")
    return value


MAX_COUNT = 10**8
"""Largest ``--n-boot``, ``--n-mc``, ``--size``...: 10^8 values of one statistic already take
800 MB, and more would exhaust the memory (or take days) instead of failing at once."""


def count(text: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """An argparse type: an integer from ``minimum`` to ``maximum``.

    Examples
    --------
    >>> count("200")
    200
    >>> count(str(10**12))
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected an integer from 1 to 100000000, got '1000000000000'
    """
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not minimum <= value <= maximum:
        raise argparse.ArgumentTypeError(f"expected an integer from {minimum} to {maximum}, "
                                         f"got {text!r}")
    return value


def count_or_auto(text: str) -> int | str:
    """An argparse type: a replicate count (:func:`positive_int`) or ``auto`` (a count driven
    by the target precision, :mod:`xuqcal.analysis.precision`).

    Examples
    --------
    >>> count_or_auto("auto"), count_or_auto("500")
    ('auto', 500)
    >>> count_or_auto("fast")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected an integer >= 1 or 'auto', got 'fast'
    """
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(str(error).replace(", got", " or 'auto', got", 1)
                                         ) from None


def fraction_or_none(text: str) -> float | None:
    """An argparse type: ``none``, or a number strictly between 0 and 1 (:func:`fraction`).

    Examples
    --------
    >>> fraction_or_none("0.85"), fraction_or_none("none")
    (0.85, None)
    """
    return None if text.strip().lower() == "none" else fraction(text)


def tolerance(text: str) -> float:
    """An argparse type: a coverage tolerance in [0, 1)
    (:func:`~xuqcal.core.checks.check_tolerance`).

    Examples
    --------
    >>> tolerance("0")
    0.0
    >>> tolerance("1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a tolerance in [0, 1) such as 0.005, got '1'
    """
    try:
        return check_tolerance(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a tolerance in [0, 1) such as 0.005, got "
                                         f"{text!r}") from None


def fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1.

    Examples
    --------
    >>> fraction("0.05")
    0.05
    >>> fraction("1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a number between 0 and 1 (exclusive), got '1'
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (exclusive), got "
                                         f"{text!r}")
    return value


def zero_or_count(text: str) -> int:
    """An argparse type: 0 or an integer from 1 to :data:`MAX_COUNT`."""
    return count(text, minimum=0)


def output_file(text: str) -> Path:
    """An argparse type: an output file path (a trailing ``/`` names a folder: refused).

    Examples
    --------
    >>> output_file("out.nc")
    PosixPath('out.nc')
    >>> output_file("out.nc/")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'out.nc/' ends with '/', which names a folder; give a file name
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path; give a file name")
    if text.endswith("/"):
        raise argparse.ArgumentTypeError(f"{text!r} ends with '/', which names a folder; give "
                                         "a file name")
    return Path(text)


FEATURES_HELP = ("feature columns or NAME=EXPR (an expression over columns), comma-separated, "
                 "e.g. 'y_pred,size2=size**2'")
"""The help of ``--features`` (``validate``, ``report``, ``recalibrate``)."""


def comma_items(text: str) -> list[str]:
    """The items of a comma-separated option value, stripped; an empty item (``0.683,,0.95``,
    a leading or trailing comma) is refused instead of skipped.

    Examples
    --------
    >>> comma_items("0.683, 0.95")
    ['0.683', '0.95']
    >>> comma_items("1,,2")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: item 2 of '1,,2' is empty; separate the values by single commas
    """
    items = [item.strip() for item in text.split(",")]
    empty = [k for k, item in enumerate(items, start=1) if not item]
    if empty:
        raise argparse.ArgumentTypeError(f"item {empty[0]} of {text!r} is empty; separate the "
                                         "values by single commas")
    return items


def feature_list(text: str) -> list[str]:
    """An argparse type: the value of ``--features``, comma-separated ``NAME`` (a column or
    variable) or ``NAME=EXPR`` (an expression over columns named ``NAME``).

    Examples
    --------
    >>> feature_list("size, S2=size*2")
    ['size', 'S2=size*2']
    >>> feature_list("=size")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '=size' has no name before '='; write NAME=EXPR
    """
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"expected NAME or NAME=EXPR, comma-separated, got "
                                         f"{text!r}")
    for item in items:
        name, equals, expression = item.partition("=")
        if not name.strip():
            raise argparse.ArgumentTypeError(f"{item!r} has no name before '='; write "
                                             "NAME=EXPR")
        if equals and not expression.strip():
            raise argparse.ArgumentTypeError(f"{item!r} has no expression after '='; write "
                                             "NAME=EXPR")
    return items


def feature_specs(items: Sequence[str] | None) -> dict[str, str]:
    """The features of a ``--features`` value as ``{name: expression}`` (a bare ``NAME`` is
    the column ``NAME``), the form of :func:`xuqcal.io.from_dataframe`.

    Examples
    --------
    >>> feature_specs(["size", "S2=size*2"])
    {'size': 'size', 'S2': 'size*2'}
    >>> feature_specs(None)
    {}
    """
    specs: dict[str, str] = {}
    for item in items or []:
        name, _, expression = item.partition("=")
        specs[name.strip()] = (expression or name).strip()
    return specs


def feature_options(items: Sequence[str] | None) -> dict[str, str]:
    """Each feature name of a ``--features`` value -> the option text that made it, so that a
    library error about a feature (``X1: ...``) names what the user typed."""
    return {item.partition("=")[0].strip(): f"--features {item.strip()}"
            for item in items or []}


def name_list(text: str) -> list[str]:
    """An argparse type: the value of ``--names``, comma-separated labels, each given once.

    Examples
    --------
    >>> name_list("qm9, logP")
    ['qm9', 'logP']
    >>> name_list("a,a")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'a' is given twice; give each data set its own name
    """
    names = [name.strip() for name in text.split(",")]
    if not any(names) or not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated non-empty names, one per "
                                         f"file, got {text!r}")
    for name in names:
        if names.count(name) > 1:
            raise argparse.ArgumentTypeError(f"{name!r} is given twice; give each data set its "
                                             "own name")
    return names


def format_level(level: float) -> str:
    """A confidence level as a percentage with the digits it has (never rounded to 100 %).

    Examples
    --------
    >>> format_level(0.95), format_level(0.999999), format_level(0.6827)
    ('95 %', '99.9999 %', '68.27 %')
    """
    return f"{100 * level:.10g} %"


def _raising_functions(error: BaseException) -> list[str]:
    """Names of the functions of the traceback, innermost first."""
    return [frame.name for frame in reversed(traceback.extract_tb(error.__traceback__))]


def option_message(error: BaseException, command: str,
                   table: Mapping[str, Mapping] | None = None,
                   extra: Mapping[str, str] | None = None) -> str:
    """The error's message on one line, its leading Python parameter replaced by the option
    (``extra`` adds the names of this run, e.g. each feature given to ``--features``).

    Examples
    --------
    >>> option_message(ValueError("n_boot: expected an integer >= 2, got 1"), "validate")
    '--n-boot: expected an integer >= 2, got 1'
    >>> option_message(ValueError("bad:\\n  a\\n  b"), "validate")
    'bad: a; b'
    """
    message = str(error)
    if isinstance(error, KeyError) and error.args:
        message = str(error.args[0])
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    text = ""
    for line in lines:
        text += line if not text else (" " if text.endswith(":") else "; ") + line
    names = {**(table if table is not None else OPTIONS).get(command, {}), **(extra or {})}
    match = _PREFIX.match(text)
    if match:
        parameter = match.group(1)
        option = None
        for function in _raising_functions(error):
            if (parameter, function) in names:
                option = names[(parameter, function)]
                if option is not None:
                    break
        if option is None:
            option = names.get(parameter)
        if option is not None:
            text = f"{option}: {text[match.end():]}"
    return text or type(error).__name__


# --------------------------------------------------------------------------------------------
# Dependent points: --groups COLUMN, --block COLUMN[:LENGTH], --block-scheme (issue 25)
# --------------------------------------------------------------------------------------------

#: The schemes of ``--block-scheme`` (:data:`xuqcal.analysis.dependent.BLOCK_SCHEMES`).
BLOCK_SCHEMES = ("moving", "circular", "stationary")
#: The scheme of ``--block`` without ``--block-scheme``.
DEFAULT_BLOCK_SCHEME = "circular"


def block_spec(text: str) -> tuple[str, int | str]:
    """An argparse type: the value of ``--block``, ``COLUMN`` or ``COLUMN:LENGTH`` with
    ``LENGTH`` an integer >= 1 or ``auto`` (the default: Politis–White's length). The length
    follows the last ``:``, so a column name may hold ``:`` when a length is given.

    Examples
    --------
    >>> block_spec("time"), block_spec("time:50"), block_spec("t:step:auto")
    (('time', 'auto'), ('time', 50), ('t:step', 'auto'))
    >>> block_spec("time:0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected COLUMN or COLUMN:LENGTH with LENGTH an integer >= 1 \
or 'auto' (points per block), got 'time:0'
    """
    column, colon, length = text.rpartition(":")
    if not colon:
        column, length = text, "auto"
    column = column.strip()
    problem = f"got {text!r}"
    if not column:
        raise argparse.ArgumentTypeError(f"expected COLUMN or COLUMN:LENGTH (a column of the "
                                         f"input that orders the points, e.g. time:50), "
                                         f"{problem}")
    if length.strip().lower() == "auto":
        return column, "auto"
    try:
        value = int(length)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"expected COLUMN or COLUMN:LENGTH with LENGTH an "
                                         f"integer >= 1 or 'auto' (points per block), "
                                         f"{problem}")
    return column, value


def column_name(text: str) -> str:
    """An argparse type: a column (or variable) name, not empty."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty name; give a column of the input, e.g. "
                                         "structure_id")
    return text.strip()


GROUPS_HELP = ("column (CSV, Parquet) or variable (NetCDF, Zarr) holding each point's group, "
               "e.g. the structure of each atom: the bootstrap resamples whole groups "
               "(cluster bootstrap) instead of single points")
BLOCK_HELP = ("column or variable that orders the points (e.g. time): the bootstrap resamples "
              "blocks of LENGTH consecutive points in that order (--block-scheme); LENGTH an "
              "integer or auto (the default: Politis-White's length for Z^2)")
BLOCK_SCHEME_HELP = ("with --block: moving (blocks that fit in the data), circular (wrapping "
                     "around) or stationary (geometric lengths of mean LENGTH) block "
                     f"bootstrap (default: {DEFAULT_BLOCK_SCHEME})")


def add_dependence_options(parser: argparse.ArgumentParser) -> None:
    """``--groups``, ``--block`` (one or the other) and ``--block-scheme`` of the commands
    that resample the points (``validate``, ``report``, ``compare``)."""
    dependent = parser.add_mutually_exclusive_group()
    dependent.add_argument("--groups", type=column_name, metavar="COLUMN", help=GROUPS_HELP)
    dependent.add_argument("--block", type=block_spec, metavar="COLUMN[:LENGTH]",
                           help=BLOCK_HELP)
    parser.add_argument("--block-scheme", choices=BLOCK_SCHEMES, default=None,
                        help=BLOCK_SCHEME_HELP)


def dependence_column(args: argparse.Namespace) -> tuple[str, str] | None:
    """The option and column of ``--groups`` or ``--block``, if any (``("--groups",
    "structure_id")``); ``--block-scheme`` without ``--block`` is refused here, before any
    file is read.

    Examples
    --------
    >>> dependence_column(argparse.Namespace(groups=None, block=("time", 5), block_scheme=None))
    ('--block', 'time')
    >>> dependence_column(argparse.Namespace(groups="g", block=None, block_scheme="moving"))
    Traceback (most recent call last):
    ValueError: --block-scheme: only used with --block COLUMN[:LENGTH] (a block bootstrap), \
got --block-scheme moving with --groups
    """
    groups, block = getattr(args, "groups", None), getattr(args, "block", None)
    scheme = getattr(args, "block_scheme", None)
    if groups is not None and block is not None:  # argparse refuses it already
        raise ValueError("--groups, --block: give one of them (whole groups, or blocks of "
                         "consecutive points), not both")
    if scheme is not None and block is None:
        given = " with --groups" if groups is not None else ""
        raise ValueError(f"--block-scheme: only used with --block COLUMN[:LENGTH] (a block "
                         f"bootstrap), got --block-scheme {scheme}{given}")
    if groups is not None:
        return "--groups", groups
    if block is not None:
        return "--block", block[0]
    return None


def dependence_arguments(args: argparse.Namespace) -> dict:
    """The keywords ``resample``, ``groups``, ``block`` and ``block_length`` of
    :func:`xuqcal.validate` (and :func:`xuqcal.compare`, :func:`xuqcal.report`) for
    ``--groups``, ``--block`` and ``--block-scheme``; empty without them (the iid bootstrap,
    the functions' default).

    Examples
    --------
    >>> dependence_arguments(argparse.Namespace(groups=None, block=("t", "auto"),
    ...                                         block_scheme=None))
    {'resample': 'circular', 'block': 't', 'block_length': 'auto'}
    >>> dependence_arguments(argparse.Namespace(groups=None, block=None, block_scheme=None))
    {}
    """
    if dependence_column(args) is None:
        return {}
    if args.groups is not None:
        return {"resample": "cluster", "groups": args.groups}
    column, length = args.block
    return {"resample": args.block_scheme or DEFAULT_BLOCK_SCHEME, "block": column,
            "block_length": length}


def _attr(result, name: str):
    """An attribute of a result, or the values of the coordinate it became when it differs
    between slices (as ``n_boot``)."""
    value = result.attrs.get(name)
    if value is None and name in getattr(result, "coords", {}):
        values = sorted({str(v) for v in result[name].values.ravel().tolist()})
        value = values[0] if len(values) == 1 else "–".join(values) if values else None
    return value


def resample_text(result) -> str:
    """How a result's points were resampled, from its attributes ``resample``, ``groups`` or
    ``block``, ``block_length`` and ``block_length_rule``; ``""`` for the iid bootstrap.

    Examples
    --------
    >>> import xarray as xr
    >>> resample_text(xr.Dataset(attrs={"resample": "cluster", "groups": "mol"}))
    'points resampled by groups: cluster bootstrap of the groups of mol'
    >>> resample_text(xr.Dataset(attrs={"resample": "circular", "block": "time",
    ...                                 "block_length": 12, "block_length_rule": "given"}))
    'points resampled by blocks: circular block bootstrap along time, blocks of 12 points'
    """
    resample = _attr(result, "resample")
    if resample in (None, "", "iid"):
        return ""
    if resample == "cluster":
        return f"points resampled by groups: cluster bootstrap of the groups of " \
               f"{_attr(result, 'groups')}"
    length, rule = _attr(result, "block_length"), _attr(result, "block_length_rule")
    size = "an automatic length" if length in (None, "auto") else f"{length} points"
    text = (f"points resampled by blocks: {resample} block bootstrap along "
            f"{_attr(result, 'block')}, blocks of {size}")
    if rule and rule != "given":
        text += f" (automatic length: {rule})"
    return text


class Interrupted(Exception):
    """Ctrl-C during a command, with what was kept (printed on one line, exit status 130)."""
