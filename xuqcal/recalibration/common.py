"""What the recalibration methods share: argument checks, equal-count score bins, and bins
learned as value limits (see :mod:`xuqcal.recalibration`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from xuqcal.analysis.binning import apply_bins, equal_count, make_bins
from xuqcal.core import defaults
from xuqcal.core.binning import equal_count_bounds
from xuqcal.io import validate_dataset

METHODS = ("temperature", "bvs", "isotonic")
LOSSES = ("nll", "s_tot", "s_con", "s_ada")
BINNINGS = ("equal", "grid", "groups")
#: The features that ``features=None`` (the default of :func:`~xuqcal.recalibration.fit`,
#: :func:`~xuqcal.recalibration.scores`, :func:`~xuqcal.recalibration.evaluate` and
#: :func:`~xuqcal.recalibration.scan`) uses when the data have them: the formula features X1
#: (mass) and X2 (heteroatom fraction) of :func:`xuqcal.add_formula_features`.
DEFAULT_FEATURES = ("X1", "X2")
RECALIBRATOR = "recalibrator"
BINS_PREFIX = "bins_"


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------


def _choice(value: Any, allowed: Sequence[str], name: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, allowed))}, "
                         f"got {value!r}")
    return value


def _positive_int(value: Any, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    return int(value)


def _names(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    try:
        names = tuple(value)
    except TypeError:
        raise ValueError(f"{name}: expected a variable name or a sequence of names, "
                         f"got {value!r}") from None
    if not all(isinstance(n, str) for n in names):
        raise ValueError(f"{name}: expected variable names (str), got {value!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"{name}: a variable is listed twice in {list(names)}")
    return names


def _require(ds: xr.Dataset, names: Iterable[str], what: str) -> None:
    for n in names:
        if n not in ds.variables:
            raise ValueError(f"{what}: the variable {n!r} is not in the dataset "
                             f"(variables: {', '.join(map(str, ds.data_vars))})")
        if ds[n].dims != ("sample",):
            raise ValueError(f"{what}: the variable {n!r} must be 1-D over 'sample', "
                             f"got dimensions {ds[n].dims}")


def _checked(ds: xr.Dataset, numeric: Iterable[str] = (), other: Iterable[str] = (),
             what: str = "features", *, E: str = defaults.E,
             uE: str = defaults.UE) -> xr.Dataset:
    """Validate ``E``, ``uE`` and the numeric variables; check that the others exist."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    for role, name in (("E", E), ("uE", uE)):
        if not isinstance(name, str):
            raise ValueError(f"{role}: expected a variable name (str), got {name!r}")
    numeric = [n for n in dict.fromkeys(numeric) if n not in (E, uE)]
    _require(ds, numeric, what)
    _require(ds, other, what)
    return validate_dataset(ds, E=E, uE=uE, features=numeric)


def _check_features(features: Any, *, E: str = defaults.E,
                    uE: str = defaults.UE) -> tuple[str, ...]:
    features = _names(features, "features")
    if uE in features or E in features:
        raise ValueError(f"features: {uE!r} is always a score variable (S_u) and {E!r} cannot "
                         f"be one; got {list(features)}")
    return features


def _resolve_features(features: Any, datasets: Mapping[str, xr.Dataset] | xr.Dataset, *,
                      E: str = defaults.E, uE: str = defaults.UE) -> tuple[str, ...]:
    """The score features: ``features`` as given (checked by :func:`_check_features`), or for
    ``None`` those of :data:`DEFAULT_FEATURES` that the data have (none when they have neither
    X1 nor X2). A default feature that only some of several data sets have is an error: the
    data sets of one table need the same score variables.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.from_arrays([0.1, -0.2, 0.3], [0.2, 0.1, 0.3])
    >>> _resolve_features(None, ds), _resolve_features(None, ds.assign(X1=ds.E))
    ((), ('X1',))
    >>> _resolve_features(None, {"a": ds, "b": ds.assign(X2=ds.E)})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: features: the default feature X2 is in b but not in a; ...
    """
    if features is not None:
        return _check_features(features, E=E, uE=uE)
    single = isinstance(datasets, xr.Dataset) or not isinstance(datasets, Mapping)
    sets = {"the dataset": datasets} if single else dict(datasets)
    found = []
    for name in DEFAULT_FEATURES:
        having = [label for label, ds in sets.items()
                  if isinstance(ds, xr.Dataset) and name in ds.variables]
        if having and len(having) < len(sets):
            lacking = [label for label in sets if label not in having]
            raise ValueError(f"features: the default feature {name} is in "
                             f"{', '.join(map(str, having))} but not in "
                             f"{', '.join(map(str, lacking))}; every data set needs the same "
                             f"score variables: name them, e.g. features=() for uE only or "
                             f"features=({name!r},) after adding {name} to every data set")
        if having:
            found.append(name)
    return _check_features(tuple(found), E=E, uE=uE)


def _equal_count_index(values: np.ndarray, n_bins: int, by: str) -> np.ndarray:
    return equal_count(np.asarray(values), n_bins, by=by).bin_index.values


class _ScoreBins:
    """Equal-count bins of the score variables of one data set (``uE`` first, then features).

    The bins of ``uE`` are those of the given uncertainties; the losses re-sort by the
    recalibrated ``uE`` themselves (``sorted_bin``: the bin of each sorted position, from
    :func:`xuqcal.core.binning.equal_count_bounds`).
    """

    def __init__(self, uE: np.ndarray, features: Mapping[str, np.ndarray], n_bins: int,
                 uE_name: str = defaults.UE):
        self.names = (uE_name, *features)
        self.n_bins = n_bins
        self.index = [_equal_count_index(uE, n_bins, uE_name)]
        self.index += [_equal_count_index(v, n_bins, name) for name, v in features.items()]
        sizes = np.diff(equal_count_bounds(uE.shape[0], n_bins))
        self.counts = sizes.astype(np.float64)
        self.sorted_bin = np.repeat(np.arange(n_bins), sizes)


# --------------------------------------------------------------------------------------------
# Learned bins
# --------------------------------------------------------------------------------------------


def _limit_bins(values: np.ndarray, n_bins: int, by: str) -> xr.Dataset:
    """Equal-count bins of the training values, kept as de-duplicated value limits."""
    learned = equal_count(values, n_bins, by=by)
    limits = np.unique(learned.upper_limit.values)
    bins = xr.Dataset(
        {"upper_limit": ("bin", limits, {
            "long_name": f"new points with {by} <= upper_limit (and above the previous limit) "
                         "go to this bin; the first and last bins are open-ended"})},
        coords={"bin": np.arange(limits.size)},
        attrs={"scheme": "equal", "by": by, "n_bins": int(limits.size),
               "n_bins_requested": int(n_bins)},
    )
    index = apply_bins(bins, values)
    count = np.bincount(index, minlength=limits.size)
    low = np.full(limits.size, np.nan)
    high = np.full(limits.size, np.nan)
    order = np.argsort(index, kind="stable")
    starts = np.concatenate([[0], np.cumsum(count)])
    sorted_values = np.asarray(values, dtype=np.float64)[order]
    for b in range(limits.size):
        chunk = sorted_values[starts[b]:starts[b + 1]]
        low[b], high[b] = chunk.min(), chunk.max()
    centre = np.bincount(index, weights=np.asarray(values, np.float64),
                         minlength=limits.size) / count
    return bins.assign(
        count=("bin", count, {"long_name": "training points in the bin"}),
        low=("bin", low, {"long_name": f"smallest training {by} in the bin"}),
        high=("bin", high, {"long_name": f"largest training {by} in the bin"}),
        centre=("bin", centre, {"long_name": f"mean training {by} in the bin"}),
    )


def _learn_bins(ds: xr.Dataset, names: tuple[str, ...], binning: str,
                n_bins: Any) -> tuple[xr.Dataset, np.ndarray]:
    """The learned bins Dataset and the bin of every training point (by the limits)."""
    if binning == "groups":
        bins = make_bins(ds, names[0], binning="groups")
        index = bins.bin_index.values
        return bins.drop_vars("bin_index").drop_dims("sample", errors="ignore"), index
    if binning == "equal":
        bins = _limit_bins(ds[names[0]].values, n_bins, names[0])
        return bins, apply_bins(bins, ds[names[0]].values)
    nx, ny = n_bins
    bx = _limit_bins(ds[names[0]].values, nx, names[0])
    by_ = _limit_bins(ds[names[1]].values, ny, names[1])
    nx, ny = bx.sizes["bin"], by_.sizes["bin"]
    bins = xr.Dataset(
        {"upper_limit_x": ("bin_x", bx.upper_limit.values, {
            "long_name": f"learned limits of {names[0]} (first and last bins open-ended)"}),
         "upper_limit_y": ("bin_y", by_.upper_limit.values, {
             "long_name": f"learned limits of {names[1]} (first and last bins open-ended)"}),
         "cell_x": ("bin", np.repeat(np.arange(nx), ny), {"long_name": "bin of the cell in x"}),
         "cell_y": ("bin", np.tile(np.arange(ny), nx), {"long_name": "bin of the cell in y"})},
        coords={"bin": np.arange(nx * ny), "bin_x": np.arange(nx), "bin_y": np.arange(ny)},
        attrs={"scheme": "grid", "by": f"{names[0]},{names[1]}", "by_x": names[0],
               "by_y": names[1], "n_bins": nx * ny, "n_bins_x": nx, "n_bins_y": ny,
               "n_bins_requested": f"{n_bins[0]},{n_bins[1]}"},
    )
    index = apply_bins(bins, ds[names[0]].values, ds[names[1]].values)
    bins["count"] = ("bin", np.bincount(index, minlength=nx * ny),
                     {"long_name": "training points in the cell"})
    return bins, index


def _training_provenance(ds: xr.Dataset) -> dict[str, Any]:
    out = {"training_n_points": int(ds.sizes["sample"])}
    for key in ("source", "name", "E_expression", "uE_expression", "where", "created"):
        value = ds.attrs.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            out[f"training_{key}"] = value
    return out


def _bin_zms(z2: np.ndarray, index: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(index, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(index, weights=z2, minlength=n) / counts, counts


