"""Argument checks shared by the modules (variables of a data set, grids of studies and cubes)."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np


def as_list(values, name: str) -> list:
    """A non-empty list of distinct values (a single value becomes a one-element list).

    Examples
    --------
    >>> as_list(3, "size"), as_list("t6", "generator")
    ([3], ['t6'])
    """
    if isinstance(values, str) or not isinstance(values, Iterable):
        values = [values]
    values = list(values)
    if not values:
        raise ValueError(f"{name}: the list of values is empty")
    if len(set(values)) != len(values):
        raise ValueError(f"{name}: a value is listed twice in {values}")
    return values


def int_list(values, name: str, minimum: int) -> list[int]:
    """A non-empty list of distinct integers ``>= minimum``.

    Examples
    --------
    >>> int_list([10, 20], "n_bins", 1)
    [10, 20]
    """
    values = as_list(values, name)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < minimum:
            raise ValueError(f"{name}: expected integers >= {minimum}, got {v!r}")
        if v > MAX_COUNT:
            raise ValueError(f"{name}: expected integers <= 2**40 (a larger count cannot be held "
                             f"in memory), got {v!r}")
    return [int(v) for v in values]


def float_list(values, name: str, *, above: float) -> list[float]:
    """A non-empty list of distinct finite numbers ``> above``.

    Examples
    --------
    >>> float_list([3, 6.5], "nu", above=0)
    [3.0, 6.5]
    """
    values = as_list(values, name)
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise ValueError(f"{name}: expected numbers > {above:g}, got {v!r}")
        if not (math.isfinite(float(v)) and float(v) > above):
            raise ValueError(f"{name}: expected finite numbers > {above:g}, got {v!r}")
        out.append(float(v))
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: a value is listed twice in {values}")
    return out


def variable_name(ds, by: str, uE: str = "uE", *, role: str = "binning") -> str:
    """The name of variable ``by`` of ``ds``, checked; ``"uE"`` stands for the uncertainty
    variable ``uE`` whatever its name.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(100, nu=6, seed=0).rename({"uE": "u"})
    >>> variable_name(ds, "uE", uE="u")
    'u'
    >>> variable_name(ds, "X")
    Traceback (most recent call last):
    ValueError: by: the binning variable 'X' is not in the dataset (variables: E, u)
    """
    name = uE if by == "uE" else by
    if by == "uE" and uE != "uE" and isinstance(uE, str) and uE not in ds.variables:
        raise ValueError(f"uE: the dataset has no variable {uE!r} (data variables: "
                         f"{', '.join(map(str, ds.data_vars))})")
    if not isinstance(name, str) or name not in ds.variables or name == "sample":
        raise ValueError(f"by: the {role} variable {by!r} is not in the dataset "
                         f"(variables: {', '.join(map(str, ds.data_vars))})")
    return name


# ------------------------------------------------------------------ scalar argument validators
# Every message starts with the Python parameter name and a colon: the CLI maps that name to
# its option (``n_boot`` -> ``--n-boot``).

#: The largest accepted seed. Seeds are stored in the NetCDF attributes of the results, which
#: hold 64-bit integers (int64, or uint64 above 2**63 - 1); the per-trial seeds of
#: :func:`xuqcal.studies.trial_seed` use the whole unsigned range and must stay reproducible
#: with :func:`xuqcal.bootstrap`. ``2**70`` used to be accepted and fail only when the
#: attributes were written, after the computation.
MAX_SEED = 2**64 - 1


#: The largest accepted count (replicates, bins, points, ...): beyond it the arrays cannot be
#: allocated, and NumPy fails with OverflowError or MemoryError.
MAX_COUNT = 2**40


def _is_integer(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | np.integer)


def check_count(value: object, name: str, minimum: int = 2, *, reason: str = "",
                maximum: int | None = None) -> int:
    """An integer count (replicates, trials, bins, ...) of at least ``minimum``.

    Examples
    --------
    >>> check_count(500, "n_boot")
    500
    >>> check_count(1.5, "n_boot")
    Traceback (most recent call last):
    ValueError: n_boot: expected an integer >= 2, got 1.5
    """
    if not _is_integer(value) or value < minimum:  # type: ignore[operator]
        why = f" ({reason})" if reason else ""
        raise ValueError(f"{name}: expected an integer >= {minimum}{why}, got {value!r}")
    if maximum is None and value > MAX_COUNT:  # type: ignore[operator]
        raise ValueError(f"{name}: expected an integer <= 2**40 (a larger count cannot be held "
                         f"in memory), got {value!r}")
    if maximum is not None and value > maximum:  # type: ignore[operator]
        raise ValueError(f"{name}: expected an integer from {minimum} to {maximum}, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def check_seed(seed: object, name: str = "seed") -> int:
    """A seed: an integer in ``[0, 2**64 - 1]`` (:data:`MAX_SEED`: it is stored in the 64-bit
    integer attributes of the NetCDF results).

    Examples
    --------
    >>> check_seed(7)
    7
    >>> check_seed(2**70)
    Traceback (most recent call last):
    ValueError: seed: expected an integer from 0 to 2**64 - 1 (seeds are stored as 64-bit \
integer attributes), got 1180591620717411303424
    """
    if not _is_integer(seed) or not 0 <= seed <= MAX_SEED:  # type: ignore[operator]
        raise ValueError(f"{name}: expected an integer from 0 to 2**64 - 1 (seeds are stored "
                         f"as 64-bit integer attributes), got {seed!r}")
    return int(seed)  # type: ignore[call-overload]


def check_level(level: object, name: str = "level") -> float:
    """A confidence level strictly between 0 and 1.

    Examples
    --------
    >>> check_level(0.95)
    0.95
    >>> check_level(95)
    Traceback (most recent call last):
    ValueError: level: expected a confidence level in (0, 1) such as 0.95, got 95
    """
    return check_fraction(level, name, "a confidence level in (0, 1) such as 0.95")


def check_coverage_level(value: object, name: str = "coverage_level") -> float:
    """A coverage level (the nominal coverage of a prediction interval) strictly between 0
    and 1; ``level`` is the confidence level of xuqcal's own intervals (:func:`check_level`).

    Examples
    --------
    >>> check_coverage_level(0.9)
    0.9
    >>> check_coverage_level(90)
    Traceback (most recent call last):
    ValueError: coverage_level: expected a coverage level in (0, 1) such as 0.9, got 90
    """
    return check_fraction(value, name, "a coverage level in (0, 1) such as 0.9")


def check_fraction(value: object, name: str, expected: str) -> float:
    """A real number strictly between 0 and 1; the message says what was ``expected``.

    Examples
    --------
    >>> check_fraction(0.05, "mc_precision", "a fraction in (0, 1)")
    0.05
    >>> check_fraction(True, "mc_precision", "a fraction in (0, 1)")
    Traceback (most recent call last):
    ValueError: mc_precision: expected a fraction in (0, 1), got True
    """
    if (isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating)
            or not 0.0 < float(value) < 1.0):
        raise ValueError(f"{name}: expected {expected}, got {value!r}")
    return float(value)


def check_tolerance(tol: object) -> float:
    """``tol`` of a coverage's validation rule (its interval must overlap ``[p - tol,
    p + tol]``): a real number in [0, 1).

    Examples
    --------
    >>> check_tolerance(0.005)
    0.005
    >>> check_tolerance(1.0)
    Traceback (most recent call last):
    ValueError: tol: expected a tolerance in [0, 1) such as 0.005, got 1.0
    """
    if (isinstance(tol, bool) or not isinstance(tol, int | float | np.integer | np.floating)
            or not 0.0 <= float(tol) < 1.0):
        raise ValueError(f"tol: expected a tolerance in [0, 1) such as 0.005, got {tol!r}")
    return float(tol)


def minimum_replicates(level: float) -> int:
    """Least number of bootstrap replicates for an interval at ``level``: ``ceil(2 / (1 -
    level))``, so that each tail beyond the interval holds at least one replicate on average
    (40 at 95 %, 200 at 99 %).

    The bounds of a percentile or BCa interval are the ``(1 ∓ level) / 2`` quantiles of the
    replicates (BCa shifts them); with fewer replicates a bound is the most extreme replicate
    or an extrapolation between the two most extreme ones, i.e. not an estimate of the
    quantile at all.

    Examples
    --------
    >>> minimum_replicates(0.95), minimum_replicates(0.9), minimum_replicates(0.99)
    (40, 20, 200)
    """
    return max(2, math.ceil(2.0 / (1.0 - level) - 1e-9))


def check_replicates(value: object, level: float, name: str = "n_boot") -> int:
    """A number of bootstrap replicates large enough for an interval at ``level``
    (:func:`minimum_replicates`).

    Examples
    --------
    >>> check_replicates(2, 0.95, "n_boot")
    Traceback (most recent call last):
    ValueError: n_boot: expected an integer >= 40 (an interval at level 0.95 needs at least \
ceil(2 / (1 - level)) replicates, one per tail beyond it on average), got 2
    """
    minimum = minimum_replicates(level)
    return check_count(value, name, minimum, reason=(
        f"an interval at level {level!r} needs at least ceil(2 / (1 - level)) replicates, "
        "one per tail beyond it on average"))


def check_chunks(chunks: object, name: str = "chunks") -> int | tuple[int, ...] | None:
    """Replicates per Dask task: ``None``, a positive integer or a sequence of them.

    Examples
    --------
    >>> check_chunks(1000), check_chunks([2, 3]), check_chunks(None)
    (1000, (2, 3), None)
    >>> check_chunks(1.5)
    Traceback (most recent call last):
    ValueError: chunks: expected a positive integer (replicates per task) or a sequence of \
them, got 1.5
    """
    message = (f"{name}: expected a positive integer (replicates per task) or a sequence of "
               f"them, got {chunks!r}")
    if chunks is None:
        return None
    if _is_integer(chunks):
        if chunks < 1:  # type: ignore[operator]
            raise ValueError(message)
        return int(chunks)  # type: ignore[call-overload]
    if isinstance(chunks, str) or not isinstance(chunks, Iterable):
        raise ValueError(message)
    sizes = list(chunks)
    if not sizes or not all(_is_integer(c) and c >= 1 for c in sizes):
        raise ValueError(message)
    return tuple(int(c) for c in sizes)


def check_choice(value: object, name: str, choices: Iterable[object]) -> object:
    """One of ``choices``.

    Examples
    --------
    >>> check_choice("bca", "method", ("bca", "percentile"))
    'bca'
    """
    choices = tuple(choices)
    if not isinstance(value, str | type(None)) or value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, choices))}, "
                         f"got {value!r}")
    return value


def check_bool(value: object, name: str) -> bool:
    """A boolean flag (``True``/``False``, also NumPy's).

    Examples
    --------
    >>> check_bool(True, "keep_replicates")
    True
    """
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def check_name(value: object, name: str) -> str:
    """A variable name (a non-empty string).

    Examples
    --------
    >>> check_name("uE", "uE")
    'uE'
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name}: expected the name of a variable (a string), got {value!r}")
    return value


def positions_text(positions: np.ndarray, limit: int = 5) -> str:
    """The first ``limit`` positions of ``positions``, comma-separated, with ``...`` when there
    are more: how a message names the rows it is about.

    Examples
    --------
    >>> positions_text(np.array([3, 8]))
    '3, 8'
    >>> positions_text(np.arange(7))
    '0, 1, 2, 3, 4, ...'
    """
    shown = ", ".join(map(str, np.asarray(positions)[:limit].tolist()))
    return shown + (", ..." if len(positions) > limit else "")


def check_finite(values: object, name: str, *, of: str | None = None,
                 where: str = "rows") -> np.ndarray:
    """``values`` as a float64 array, or a ``ValueError`` that counts the values that are NaN or
    infinite and names their first positions.

    Parameters
    ----------
    values : array_like
        The values.
    name : str
        The argument the values come from, first word of the message.
    of : str, optional
        The variable the values belong to, when ``name`` is not it (e.g. ``name="features"``,
        ``of="size"``).
    where : str
        What a position is called in the message (``"rows"``, ``"positions"``).

    Examples
    --------
    >>> check_finite([1.0, 2.0], "z")
    array([1., 2.])
    >>> check_finite([1.0, float("nan")], "by", of="size")
    Traceback (most recent call last):
    ...
    ValueError: by: 1 of 2 values of 'size' are NaN or infinite (rows 1)
    """
    x = np.asarray(values, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        owner = f" of {of!r}" if of is not None else ""
        raise ValueError(f"{name}: {bad.size} of {x.size} values{owner} are NaN or infinite "
                         f"({where} {positions_text(bad)})")
    return x


def user_stacklevel() -> int:
    """The ``stacklevel`` of :func:`warnings.warn` that points at the first caller outside
    xuqcal (whatever decorators and helpers lie between), counted from the caller of this
    function's caller. Every warning of xuqcal uses it: the analyses are reached through
    decorators (:func:`~xuqcal.io.by_role`, :func:`~xuqcal.analysis.slices.broadcast`), so a
    fixed level points inside the package. In a Dask worker thread there is no caller of the
    user's: the level then points at the scheduler."""
    package = os.path.join(str(Path(__file__).resolve().parents[1]), "")
    frame, level = sys._getframe(1), 1  # the function that calls warnings.warn
    while frame is not None and os.path.realpath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def check_skewness_threshold(threshold: object, name: str = "heavy_tail_threshold", *,
                             of: str = "Z^2", default: float
                             ) -> float | None:
    """A heavy-tail threshold of the per-bin screening: ``None`` (no screening) or a robust
    skewness β_GM in (0, 1) (β_GM of positive values lies in (-1, 1), above 0 for any
    right-skewed distribution; about 0.64 for the Z² of normal errors). A ``ValueError``
    naming ``name`` otherwise.

    Examples
    --------
    >>> check_skewness_threshold(0.8, default=0.8), check_skewness_threshold(None, default=0.8)
    (0.8, None)
    >>> check_skewness_threshold(1.2, default=0.8)
    Traceback (most recent call last):
    ValueError: heavy_tail_threshold: expected None or a robust skewness beta_GM(Z^2) in (0, 1) \
(about 0.64 for normal errors; default 0.8), got 1.2
    """
    if threshold is None:
        return None
    if (isinstance(threshold, bool) or not isinstance(threshold, int | float | np.number)
            or not 0.0 < float(threshold) < 1.0):
        normal = "about 0.64 for normal errors; " if of == "Z^2" else ""
        raise ValueError(f"{name}: expected None or a robust skewness beta_GM({of}) in (0, 1) "
                         f"({normal}default {default}), got {threshold!r}")
    return float(threshold)
