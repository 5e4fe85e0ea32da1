"""Post-hoc recalibration of prediction uncertainties (METHODS §8).

Three recalibrators, each with a **fit / apply** split:

``temperature``
    ``uE -> s uE`` with ``s = sqrt(<Z²>)`` on the training data (uniform variance scaling).
``bvs``
    Bin-wise variance scaling: the training data are split into equal-count bins of a binning
    variable (``uE`` for consistency, a feature for adaptivity), a 2-D grid of two variables,
    or the groups of a categorical variable; bin ``b`` gets the factor ``s_b = sqrt(<Z²>_b)``,
    the analytic minimizer of the NLL. Optionally the factors minimize another loss
    (``s_tot``, ``s_con``, ``s_ada``, METHODS §2) instead.
``isotonic``
    A monotone non-decreasing map from ``uE²`` to ``E²`` fitted by isotonic regression
    (:func:`scipy.optimize.isotonic_regression`) and applied to new ``uE²`` by linear
    interpolation, clipped at the ends.

**The fitted recalibrator is a labelled** :class:`xarray.Dataset` (attribute
``xuqcal_object = "recalibrator"``): its method and parameters as variables (``scale``,
``knot_variance_in`` ...), the learned bins of :mod:`xuqcal.analysis.binning` merged with the prefix
``bins_`` (variables and attributes), and the loss, optimizer budget and training provenance as
attributes. It can be written with :func:`xuqcal.to_netcdf` and reopened with
:func:`xarray.open_dataset`; :func:`apply` then gives bit-identical outputs. :class:`Recalibrator`
wraps it for the fluent style ``Recalibrator(fit(train)).apply(test)``.

Conventions that decide the numbers
-----------------------------------
* **Bins are learned as value limits** (METHODS §3). The training data are first split into
  ``n_bins`` equal-count bins (stable sort); their upper limits are the learned limits, and
  *every* point, training or new, is assigned by :func:`xuqcal.analysis.binning.apply_bins` (the first
  bin whose upper limit is >= its value; the first and last bins are open-ended). The factors
  are estimated on the training points *as assigned by the limits*, so fitting and applying
  agree exactly: after :func:`apply`, every training bin has ``<Z²>_b = 1`` (loss ``nll``).
  When tied values straddle an equal-count boundary, two bins can share an upper limit and
  cannot be told apart by value; such bins are merged (the recalibrator records
  ``bins_n_bins_requested``). Without ties (e.g. continuous ``uE``) nothing changes.
* **2-D grids** cross the limits of the two variables (each learned as above); a cell with no
  training point gets the global (temperature) factor, recorded in ``fallback``.
* **Groups** get one factor per label; applying to a label not seen in training is an error.
* **Losses** other than ``nll`` are minimized over ``θ_b = ln(s_b / s_b^analytic)`` in
  ``[ln 0.1, ln 10]`` (the factors bounded to [0.1, 10] × the analytic start): a global search
  with :func:`scipy.optimize.direct` (locally biased, ``maxfun`` evaluations, default
  ``max(500, 25 × (n_factors + 1))``, i.e. 1025 for 40 bins, about a second at M = 10 000),
  then L-BFGS-B within the same bounds from the best point found (analytic gradient of the
  piecewise-smooth loss, at most ``local_maxiter`` = 200 iterations). The centre of the box is
  the analytic start, which is therefore DIRECT's first evaluation; the best of the three
  points is kept, and the analytic start is kept unless the optimum is strictly better.
  The scores inside the loss use ``n_bins_scores`` equal-count bins per score variable on the
  *recalibrated* training data (``S_u`` re-sorts by the new ``uE`` at every evaluation), and
  are exactly those of :func:`scores` on ``apply(recalibrator, train)``.
* **Isotonic ties**: points with equal ``uE²`` are pooled first (mean ``E²``, weight = count),
  so tied inputs always get one fitted value. Only the ends of the constant blocks are kept as
  knots, which changes nothing in the interpolation. The isotonic solution is also the NLL
  minimizer among monotone variance maps (the Gaussian NLL in the variance is a Bregman
  score of ``E²``), hence ``loss = "nll"``. A fitted variance that is not positive (only
  possible when the lowest block has ``E = 0`` exactly) is raised to the smallest positive
  fitted variance, and the number of such knots is recorded in ``knots_floored``.

Scores (METHODS §2, §8): ``S_cal = |ln <Z²>|``; ``S_x`` = ZMSE over ``n_bins`` equal-count bins
of ``x`` (stable sort); ``S_con = S_cal + S_u``, ``S_ada = S_cal + Σ_j S_Xj``,
``S_tot = S_cal + S_u + Σ_j S_Xj``; NLL per point ``½ (<Z²> + <ln uE²> + ln 2π)``.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import xarray as xr
from scipy import optimize

from xuqcal._version import __version__
from xuqcal.analysis.binning import apply_bins, check_n_bins, equal_count, make_bins
from xuqcal.analysis.local import local
from xuqcal.core import random as _random
from xuqcal.core.checks import check_replicates, check_seed
from xuqcal.core.statistics import UndefinedStatisticWarning, log_square, power_of_two_scale
from xuqcal.io import to_netcdf, validate_dataset

__all__ = [
    "BINNINGS",
    "LOSSES",
    "METHODS",
    "Recalibrator",
    "apply",
    "evaluate",
    "evaluation_table",
    "fit",
    "learned_bins",
    "scan",
    "scores",
]

METHODS = ("temperature", "bvs", "isotonic")
LOSSES = ("nll", "s_tot", "s_con", "s_ada")
BINNINGS = ("equal", "grid", "groups")
DEFAULT_N_BINS = 40
DEFAULT_N_BINS_SCORES = 100
DEFAULT_FEATURES = ("X1", "X2")
#: Factors are searched in [1/SCALE_BOUND, SCALE_BOUND] × the analytic start.
SCALE_BOUND = 10.0
LOCAL_MAXITER = 200
RECALIBRATOR = "recalibrator"
_LOG_2PI = math.log(2.0 * math.pi)
_BINS_PREFIX = "bins_"
_SEARCH = ("scipy.optimize.direct (locally biased) over ln(s_b / s_analytic) in "
           "[-ln 10, ln 10], then L-BFGS-B (analytic gradient) within the same bounds; the "
           "analytic start is kept unless the optimum is strictly better")


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
             what: str = "features") -> xr.Dataset:
    """Validate ``E``, ``uE`` and the numeric variables; check that the others exist."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    numeric = [n for n in dict.fromkeys(numeric) if n not in ("E", "uE")]
    _require(ds, numeric, what)
    _require(ds, other, what)
    return validate_dataset(ds, features=numeric)


# --------------------------------------------------------------------------------------------
# Scores (one implementation for the data, the losses and the simulations)
# --------------------------------------------------------------------------------------------


def _group_means(values: np.ndarray, index: np.ndarray, counts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(index, weights=values, minlength=counts.size) / counts


def _equal_count_index(values: np.ndarray, n_bins: int, by: str) -> np.ndarray:
    return equal_count(np.asarray(values), n_bins, by=by).bin_index.values


class _ScoreBins:
    """Equal-count bins of the score variables of one data set (``uE`` first, then features).

    The bins of ``uE`` are those of the given uncertainties; the losses re-sort by the
    recalibrated ``uE`` themselves.
    """

    def __init__(self, uE: np.ndarray, features: Mapping[str, np.ndarray], n_bins: int):
        self.names = ("uE", *features)
        self.n_bins = n_bins
        self.index = [_equal_count_index(uE, n_bins, "uE")]
        self.index += [_equal_count_index(v, n_bins, name) for name, v in features.items()]
        m = uE.shape[0]
        self.bounds = (np.arange(n_bins + 1, dtype=np.int64) * m) // n_bins
        self.counts = np.diff(self.bounds).astype(np.float64)
        self.sorted_bin = np.repeat(np.arange(n_bins), np.diff(self.bounds))


def _score_values(z2: np.ndarray, e2: np.ndarray, u2: np.ndarray, mean_lnu2: float,
                  bins: _ScoreBins) -> dict[str, Any]:
    """NLL, <Z²>, S_cal and, per score variable, S_x and ENCE."""
    zms = float(np.mean(z2))
    if not zms > 0:
        raise ValueError("E: every error is zero: the scores ln <Z²> (S_cal, S_x) are "
                         "undefined")
    s_x, ence = [], []
    for name, index in zip(bins.names, bins.index, strict=True):
        zms_b = _group_means(z2, index, bins.counts)
        with np.errstate(divide="ignore"):
            s_x.append(float(np.mean(np.abs(np.log(zms_b)))))
        if not np.all(zms_b > 0):
            warnings.warn(f"s_x is undefined for {name}: a bin has <Z²> = 0 (all its errors "
                          "are 0), so |ln <Z²>| is infinite", UndefinedStatisticWarning,
                          stacklevel=3)
        rmv = np.sqrt(_group_means(u2, index, bins.counts))
        rmse = np.sqrt(_group_means(e2, index, bins.counts))
        ence.append(float(np.mean(np.abs(rmv - rmse) / rmv)))
    return {"nll": 0.5 * (zms + mean_lnu2 + _LOG_2PI), "zms": zms,
            "s_cal": abs(math.log(zms)), "s_x": np.array(s_x), "ence": np.array(ence)}


_SCALAR_SCORES = {
    "nll": "negative log-likelihood per point, ½ (<Z²> + <ln uE²> + ln 2π)",
    "zms": "mean squared z-score <Z²>",
    "s_cal": "calibration score S_cal = |ln <Z²>|",
    "s_con": "consistency score S_con = S_cal + S_u",
    "s_ada": "adaptivity score S_ada = S_cal + Σ_j S_Xj",
    "s_tot": "total score S_tot = S_cal + S_u + Σ_j S_Xj",
}
_BY_SCORES = {
    "s_x": "S_x = (1/N) Σ_b |ln <Z²>_b| over equal-count bins of the variable",
    "ence": "ENCE over equal-count bins of the variable",
}
_FV = ("fraction_valid", "fraction_valid_low", "fraction_valid_high")


def _combine(values: dict[str, Any]) -> dict[str, Any]:
    s_x = values["s_x"]
    values["s_con"] = values["s_cal"] + s_x[0]
    values["s_ada"] = values["s_cal"] + float(np.sum(s_x[1:]))
    values["s_tot"] = values["s_cal"] + float(np.sum(s_x))
    return values


def _score_inputs(ds: xr.Dataset, features: tuple[str, ...]):
    E = np.asarray(ds["E"].values, dtype=np.float64)
    uE = np.asarray(ds["uE"].values, dtype=np.float64)
    feats = {name: np.asarray(ds[name].values) for name in features}
    return E, uE, feats


def _check_features(features: Any) -> tuple[str, ...]:
    features = _names(features, "features")
    if "uE" in features or "E" in features:
        raise ValueError("features: 'uE' is always a score variable (S_u) and 'E' cannot be "
                         f"one; got {list(features)}")
    return features


def scores(ds: xr.Dataset, *, features: Sequence[str] = DEFAULT_FEATURES,
           n_bins: int = DEFAULT_N_BINS_SCORES, n_boot: int = 5000,
           seed: int = 0) -> xr.Dataset:
    """The recalibration scores of one data set (METHODS §2, §8).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and the features.
    features : sequence of str
        Feature variables X_j (default ``("X1", "X2")``; ``()`` for none).
    n_bins : int
        Equal-count bins per score variable (S_x, ENCE, LZMS), default 100.
    n_boot : int
        Bootstrap replicates per bin of the LZMS analyses that give ``f_v``
        (:func:`xuqcal.local`, BCa).
    seed : int
        Seed of those bootstraps.

    Returns
    -------
    xarray.Dataset
        Scalars ``nll``, ``zms``, ``s_cal``, ``s_con``, ``s_ada``, ``s_tot``; over ``by``
        (``uE`` then the features): ``s_x`` (``S_u`` is ``s_x.sel(by="uE")``), ``ence`` and
        ``fraction_valid`` with its Wilson-cc bounds ``fraction_valid_low``/``_high``.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=0)
    >>> s = scores(ds, features=(), n_bins=10, n_boot=200)
    >>> s.s_x.by.values.tolist(), bool(s.s_con == s.s_cal + s.s_x.sel(by="uE"))
    (['uE'], True)
    """
    features = _check_features(features)
    n_bins = _positive_int(n_bins, "n_bins")
    n_boot = check_replicates(n_boot, 0.95, "n_boot")  # the per-bin intervals of local()
    ds = _checked(ds, features)
    check_n_bins(ds.sizes["sample"], n_bins, variable="the dataset")
    E, uE, feats = _score_inputs(ds, features)
    bins = _ScoreBins(uE, feats, n_bins)
    mean_lnu2 = float(np.mean(log_square(uE)))
    scale = power_of_two_scale(E, uE)  # scale safety: exact rescaling of data of scale 1e300
    if scale:
        E, uE = np.ldexp(E, -scale), np.ldexp(uE, -scale)
    u2 = uE * uE
    values = _combine(_score_values((E / uE) ** 2, E * E, u2, mean_lnu2, bins))
    fv = np.empty((3, len(bins.names)))
    for j, name in enumerate(bins.names):
        loc = local(ds, "zms", by=name, n_bins=n_bins, n_boot=n_boot, seed=seed)
        fv[:, j] = [loc[v].item() for v in _FV]
    out = _scores_dataset(values, bins.names)
    for k, v in enumerate(_FV):
        out[v] = ("by", fv[k], {"long_name": ("fraction of valid bins of the LZMS analysis",
                                              "Wilson-cc lower bound of f_v",
                                              "Wilson-cc upper bound of f_v")[k]})
    out.attrs.update(n_bins=n_bins, n_boot=n_boot, seed=seed, n_points=ds.sizes["sample"],
                     features=",".join(features), fraction_valid_target=0.95,
                     xuqcal_version=__version__)
    return out


def _scores_dataset(values: Mapping[str, Any], names: Sequence[str],
                    suffix: str = "") -> xr.Dataset:
    data = {}
    for key, text in _SCALAR_SCORES.items():
        data[key + suffix] = ((), float(values[key]), {"long_name": text})
    for key, text in _BY_SCORES.items():
        data[key + suffix] = ("by", np.asarray(values[key], dtype=np.float64),
                              {"long_name": text})
    return xr.Dataset(data, coords={"by": list(names)})


# --------------------------------------------------------------------------------------------
# Simulated values and the evaluation table
# --------------------------------------------------------------------------------------------


def _simulated(ds: xr.Dataset, features: tuple[str, ...], n_bins: int, n_mc: int, seed: int,
               n_mc_fv: int, n_boot: int) -> xr.Dataset:
    """Means (and standard errors) of the scores of errors drawn from N(0, uE²)."""
    _, uE, feats = _score_inputs(ds, features)
    bins = _ScoreBins(uE, feats, n_bins)
    mean_lnu2 = float(np.mean(log_square(uE)))
    scale = power_of_two_scale(uE)  # scale safety: the scores are scale-free
    u2 = np.ldexp(uE, -scale) ** 2 if scale else uE * uE
    key = _random.stream_key(seed, "recalibration:simulated")
    eps = np.empty(uE.shape[0])
    keys = ("nll", "zms", "s_cal", "s_con", "s_ada", "s_tot")
    scalars = np.empty((n_mc, len(keys)))
    s_x = np.empty((n_mc, len(bins.names)))
    ence = np.empty((n_mc, len(bins.names)))
    for r in range(n_mc):
        _random.fill_variates(key, r, _random.NORMAL, math.nan, eps)
        z2 = eps * eps
        v = _combine(_score_values(z2, u2 * z2, u2, mean_lnu2, bins))
        scalars[r] = [v[k] for k in keys]
        s_x[r], ence[r] = v["s_x"], v["ence"]
    mean = {k: scalars[:, i].mean() for i, k in enumerate(keys)}
    se = {k: scalars[:, i].std(ddof=1) / math.sqrt(n_mc) if n_mc > 1 else math.nan
          for i, k in enumerate(keys)}
    mean.update(s_x=s_x.mean(axis=0), ence=ence.mean(axis=0))
    spread = (lambda a: a.std(axis=0, ddof=1) / math.sqrt(n_mc)) if n_mc > 1 else \
        (lambda a: np.full(a.shape[1], math.nan))
    se.update(s_x=spread(s_x), ence=spread(ence))
    out = xr.merge([_scores_dataset(mean, bins.names, "_simulated"),
                    _scores_dataset(se, bins.names, "_simulated_se")])
    fv = np.full((2, len(bins.names)), math.nan)
    if n_mc_fv:
        values = np.empty((n_mc_fv, len(bins.names)))
        key_fv = _random.stream_key(seed, "recalibration:simulated_fv")
        for r in range(n_mc_fv):
            _random.fill_variates(key_fv, r, _random.NORMAL, math.nan, eps)
            sim = ds.assign(E=("sample", uE * eps))
            for j, name in enumerate(bins.names):
                values[r, j] = local(sim, "zms", by=name, n_bins=n_bins, n_boot=n_boot,
                                     seed=seed).fraction_valid.item()
        fv[0] = values.mean(axis=0)
        fv[1] = values.std(axis=0, ddof=1) / math.sqrt(n_mc_fv) if n_mc_fv > 1 else math.nan
    out["fraction_valid_simulated"] = ("by", fv[0], {
        "long_name": f"mean f_v of {n_mc_fv} simulated error sets (NaN when not simulated; "
                     "the target is 0.95)"})
    out["fraction_valid_simulated_se"] = ("by", fv[1], {"long_name": "its standard error"})
    for name in out.data_vars:
        if name.endswith("_simulated_se"):
            out[name].attrs["long_name"] = "standard error of the simulated mean"
    return out


def evaluate(datasets: Mapping[str, xr.Dataset], *, features: Sequence[str] = DEFAULT_FEATURES,
             n_bins: int = DEFAULT_N_BINS_SCORES, n_mc: int = 1000, seed: int = 0,
             n_boot: int = 5000, n_mc_fv: int = 0) -> xr.Dataset:
    """The evaluation table of several data sets, with simulated values (METHODS §8).

    For every data set: its :func:`scores`, and the **simulated** values of the same scores,
    the mean over ``n_mc`` error sets ``E~ = uE · eps``, ``eps ~ N(0, 1)``, drawn with that data
    set's uncertainties (variables ``<score>_simulated`` and their standard errors
    ``<score>_simulated_se``). Set ``r`` uses the stream ``(seed, "recalibration:simulated",
    r)``, drawn in row order, so every data set of the same size sees the same ``eps``.

    Parameters
    ----------
    datasets : mapping of str to xarray.Dataset
        E.g. ``{"train": train, "test": test, "test BVS": apply(rec, test)}``.
    features, n_bins, n_boot
        As in :func:`scores`.
    n_mc : int
        Simulated error sets per data set (default 1000).
    seed : int
        Seed of the simulated errors and of the LZMS bootstraps.
    n_mc_fv : int
        Simulated sets for the mean ``f_v`` (each costs one LZMS analysis per score variable,
        about 0.15 s each at M = 14 000); default 0: ``fraction_valid_simulated`` is NaN and
        ``f_v`` is compared with its target 0.95; otherwise at least 2.

    Returns
    -------
    xarray.Dataset
        The variables of :func:`scores` and their ``_simulated``/``_simulated_se``
        counterparts, over ``dataset`` (and ``by``); coordinate ``n_points``.

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(1000, nu=6, seed=0, uE_scale=0.7)
    >>> rec = fit(train, "temperature")
    >>> table = evaluate({"train": train, "train T": apply(rec, train)}, features=(),
    ...                  n_bins=10, n_mc=50, n_boot=200)
    >>> table.dataset.values.tolist(), round(float(table.zms.sel(dataset="train T")), 12)
    (['train', 'train T'], 1.0)
    """
    if not isinstance(datasets, Mapping) or not datasets:
        raise ValueError("datasets: expected a non-empty mapping of names to Datasets")
    features = _check_features(features)
    n_mc = _positive_int(n_mc, "n_mc")
    n_mc_fv = _positive_int(n_mc_fv, "n_mc_fv", minimum=0)
    if n_mc_fv == 1:
        raise ValueError("n_mc_fv: expected 0 (no simulated f_v) or at least 2 simulated sets "
                         "(one set gives no standard error), got 1")
    _random.stream_key(seed, "recalibration")  # validates the seed
    rows = []
    for name, ds in datasets.items():
        if not isinstance(name, str):
            raise ValueError(f"datasets: names must be str, got {name!r}")
        row = scores(ds, features=features, n_bins=n_bins, n_boot=n_boot, seed=seed)
        row = xr.merge([row, _simulated(ds, features, n_bins, n_mc, seed, n_mc_fv, n_boot)],
                       combine_attrs="override")
        rows.append(row.assign_coords(n_points=ds.sizes["sample"]))
    table = xr.concat(rows, dim="dataset", coords="different", compat="equals",
                      combine_attrs="drop")
    table = table.assign_coords(dataset=list(datasets))
    table["n_points"].attrs["long_name"] = "number of points"
    table.attrs.update(
        n_bins=int(n_bins), n_boot=int(n_boot), n_mc=n_mc, n_mc_fv=n_mc_fv, seed=int(seed),
        features=",".join(features), simulated="errors E = uE * eps, eps ~ N(0, 1), drawn "
        "with each data set's uncertainties; stream (seed, 'recalibration:simulated', r)",
        fraction_valid_target=0.95, xuqcal_version=__version__,
    )
    return table


def evaluation_table(table: xr.Dataset, *, digits: int = 3, simulated: bool = True) -> str:
    """A plain-text table of an :func:`evaluate` (or :func:`scores`) result.

    One row per data set (and, with ``simulated``, one ``simulated`` row below it): NLL,
    S_cal, S_x per variable, S_tot, ENCE per variable and f_v per variable.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(1000, nu=6, seed=0)
    >>> t = evaluate({"data": ds}, features=(), n_bins=10, n_mc=20, n_boot=200)
    >>> evaluation_table(t).splitlines()[0].split()[:4]
    ['dataset', 'NLL', 'S_cal', 'S_uE']
    """
    if "dataset" not in table.dims:
        table = table.expand_dims(dataset=["data"])
    by = [str(b) for b in table.by.values]
    header = ["dataset", "NLL", "S_cal", *[f"S_{b}" for b in by], "S_tot",
              *[f"ENCE_{b}" for b in by], *[f"f_v_{b}" for b in by]]

    def cells(row: xr.Dataset, suffix: str) -> list[str]:
        out = [row[f"nll{suffix}"], row[f"s_cal{suffix}"],
               *[row[f"s_x{suffix}"].sel(by=b) for b in by], row[f"s_tot{suffix}"],
               *[row[f"ence{suffix}"].sel(by=b) for b in by],
               *[row[f"fraction_valid{suffix}"].sel(by=b) for b in by]]
        return [f"{float(v):.{digits}f}" if np.isfinite(float(v)) else "-" for v in out]

    rows = [header]
    for name in table.dataset.values:
        row = table.sel(dataset=name)
        rows.append([str(name), *cells(row, "")])
        if simulated and "nll_simulated" in table:
            rows.append(["  simulated", *cells(row, "_simulated")])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True)))
                     for r in rows)


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


def learned_bins(recalibrator: xr.Dataset) -> xr.Dataset:
    """The bins Dataset (:mod:`xuqcal.analysis.binning` layout) stored in a BVS recalibrator.

    Examples
    --------
    >>> import xuqcal
    >>> rec = fit(xuqcal.synthetic.nig(1000, nu=6, seed=0), "bvs", n_bins=5)
    >>> learned_bins(rec).attrs["scheme"], learned_bins(rec).sizes["bin"]
    ('equal', 5)
    """
    _check_recalibrator(recalibrator)
    if recalibrator.attrs["method"] != "bvs":
        raise ValueError(f"recalibrator: method {recalibrator.attrs['method']!r} has no bins")
    names = [v for v in recalibrator.variables if str(v).startswith(_BINS_PREFIX)]
    bins = recalibrator[names].rename({v: str(v)[len(_BINS_PREFIX):] for v in names})
    keep = {"bin", "bin_x", "bin_y"}
    bins = bins.drop_vars([v for v in bins.coords if v not in keep and v != "label"])
    bins.attrs = {k[len(_BINS_PREFIX):]: v for k, v in recalibrator.attrs.items()
                  if k.startswith(_BINS_PREFIX)}
    return bins


# --------------------------------------------------------------------------------------------
# The loss and its optimization
# --------------------------------------------------------------------------------------------


@dataclass
class _Objective:
    """A score loss of the recalibrated training data as a function of ``θ = ln(s / s0)``."""

    E: np.ndarray
    uE: np.ndarray
    index: np.ndarray
    s0: np.ndarray
    free: np.ndarray
    loss: str
    features: Mapping[str, np.ndarray]
    n_bins_scores: int
    nfev: int = 0
    z2: np.ndarray = field(init=False)
    bins: _ScoreBins | None = field(init=False)

    def __post_init__(self) -> None:
        self.z2 = (self.E / self.uE) ** 2
        self.bins = None
        if self.loss != "nll":
            feats = self.features if self.loss in ("s_tot", "s_ada") else {}
            self.bins = _ScoreBins(self.uE, feats, self.n_bins_scores)
        self.lnu2 = float(np.mean(log_square(self.uE)))

    def scales(self, theta: np.ndarray) -> np.ndarray:
        s = self.s0.copy()
        s[self.free] = self.s0[self.free] * np.exp(theta)
        return s

    def value_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        self.nfev += 1
        s = self.scales(np.asarray(theta, dtype=np.float64))
        f = s[self.index]
        w = self.z2 / (f * f)
        if self.loss == "nll":
            value = 0.5 * (float(np.mean(w)) + self.lnu2 + float(np.mean(np.log(f * f)))
                           + _LOG_2PI)
            grad = np.bincount(self.index, weights=1.0 - w, minlength=s.size) / w.size
            return value, grad[self.free]
        total = float(np.sum(w))
        ln_mean = math.log(total / w.size)
        value = abs(ln_mean)
        g = np.full(w.size, np.sign(ln_mean) / total)
        bins = self.bins
        n = bins.n_bins
        indexes = list(bins.index[1:])
        if self.loss in ("s_tot", "s_con"):
            order = np.argsort(self.uE * f, kind="stable")
            index_u = np.empty(w.size, dtype=np.int64)
            index_u[order] = bins.sorted_bin
            indexes.append(index_u)
        for index in indexes:
            sums = np.bincount(index, weights=w, minlength=n)
            logs = np.log(sums / bins.counts)
            value += float(np.mean(np.abs(logs)))
            g += (np.sign(logs) / sums)[index] / n
        grad = -2.0 * np.bincount(self.index, weights=g * w, minlength=s.size)
        return value, grad[self.free]

    def value(self, theta: np.ndarray) -> float:
        return self.value_grad(theta)[0]


def _minimize(objective: _Objective, maxfun: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    """DIRECT then L-BFGS-B over θ; never worse than the analytic start θ = 0."""
    k = objective.free.size
    start = np.zeros(k)
    analytic = objective.value(start)
    info: dict[str, Any] = {"loss_analytic": analytic, "optimizer": _SEARCH,
                            "n_factors_optimized": k}
    if k == 0:
        info.update(loss_value=analytic, optimum="analytic start (nothing to optimize)",
                    nfev_direct=0, nfev_local=0, direct_maxfun=0)
        return start, info
    if maxfun is None:
        maxfun = max(500, 25 * (k + 1))
    bound = math.log(SCALE_BOUND)
    bounds = [(-bound, bound)] * k
    t0 = time.perf_counter()
    before = objective.nfev
    glob = optimize.direct(objective.value, bounds, maxfun=maxfun, maxiter=100_000,
                           locally_biased=True, vol_tol=0.0, len_tol=1e-8)
    nfev_direct = objective.nfev - before
    before = objective.nfev
    local_start = np.clip(np.asarray(glob.x, dtype=np.float64), -bound, bound)
    loc = optimize.minimize(objective.value_grad, local_start, jac=True, method="L-BFGS-B",
                            bounds=bounds, options={"maxiter": LOCAL_MAXITER})
    nfev_local = objective.nfev - before
    candidates = [("analytic start", start, analytic),
                  ("DIRECT", local_start, objective.value(local_start)),
                  ("L-BFGS-B", np.clip(loc.x, -bound, bound),
                   objective.value(np.clip(loc.x, -bound, bound)))]
    best = min(candidates[1:], key=lambda c: c[2])
    if not best[2] < analytic:
        best = candidates[0]
    info.update(loss_value=best[2], optimum=best[0], nfev_direct=nfev_direct,
                nfev_local=nfev_local, direct_maxfun=int(maxfun),
                local_maxiter=LOCAL_MAXITER, search_seconds=time.perf_counter() - t0)
    return best[1], info


# --------------------------------------------------------------------------------------------
# fit / apply
# --------------------------------------------------------------------------------------------


def _provenance(ds: xr.Dataset) -> dict[str, Any]:
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


def fit(ds: xr.Dataset, method: str = "bvs", *, by: str | Sequence[str] = "uE",
        n_bins: int | Sequence[int] | None = None, binning: str | None = None,
        loss: str = "nll", features: Sequence[str] = DEFAULT_FEATURES,
        n_bins_scores: int = DEFAULT_N_BINS_SCORES, seed: int = 0,
        maxfun: int | None = None) -> xr.Dataset:
    """Fit a recalibrator on training data.

    Parameters
    ----------
    ds : xarray.Dataset
        Training data over ``sample`` with ``E``, ``uE`` and the variables used.
    method : {"temperature", "bvs", "isotonic"}
        Uniform scaling, bin-wise variance scaling, or the isotonic variance map.
    by : str or pair of str
        BVS binning variable (``uE``, a feature, a categorical variable with
        ``binning="groups"``), or two variables for a 2-D grid. Must be ``"uE"`` for the
        other methods.
    n_bins : int or pair of int, optional
        Number of BVS bins requested (default 40; a pair or an int for a grid, whose cells
        are ``n_x × n_y``). Not used with ``binning="groups"`` nor by the other methods.
    binning : {"equal", "grid", "groups"}, optional
        Default: ``"grid"`` when ``by`` is a pair, else ``"equal"`` (equal-count bins kept as
        value limits, see the module documentation).
    loss : {"nll", "s_tot", "s_con", "s_ada"}
        ``nll``: the analytic factors ``sqrt(<Z²>_b)``. Otherwise the factors minimize that
        score of the recalibrated training data (temperature and BVS only).
    features : sequence of str
        Feature variables of ``s_tot`` and ``s_ada`` (default ``("X1", "X2")``).
    n_bins_scores : int
        Equal-count bins per score variable inside the losses (default 100).
    seed : int
        Recorded for provenance; the fit itself is deterministic (DIRECT and L-BFGS-B have no
        random step).
    maxfun : int, optional
        Evaluation budget of the DIRECT search (default ``max(500, 25 × (n_factors + 1))``);
        L-BFGS-B then runs at most 200 iterations.

    Returns
    -------
    xarray.Dataset
        The fitted recalibrator (see the module documentation), ready for :func:`apply` and
        :func:`xuqcal.to_netcdf`.

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.5)
    >>> rec = fit(train, "temperature")
    >>> round(float(rec.scale), 2), rec.attrs["method"]
    (2.01, 'temperature')
    >>> rec = fit(train, "bvs", n_bins=8)
    >>> new = apply(rec, train)
    >>> z2 = (new.E / new.uE) ** 2
    >>> z2.groupby(new.recalibration_bin).mean().round(12).values.tolist()  # <Z²>_b = 1
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    method = _choice(method, METHODS, "method")
    loss = _choice(loss, LOSSES, "loss")
    features = _check_features(features)
    names = _names(by, "by")
    if not 1 <= len(names) <= 2:
        raise ValueError(f"by: expected one variable or a pair (2-D grid), got {list(names)}")
    if "E" in names:
        raise ValueError("by: the errors E cannot be a binning variable of a recalibration "
                         "(the factors would be fitted on the quantity they must predict and "
                         "be unknown for new data); bin on 'uE' or an input feature")
    n_bins_scores = _positive_int(n_bins_scores, "n_bins_scores")
    check_seed(seed)
    if maxfun is not None:
        maxfun = _positive_int(maxfun, "maxfun")
    if method != "bvs":
        if names != ("uE",):
            raise ValueError(f"by: method={method!r} does not bin; by must be 'uE', got {by!r}")
        if n_bins is not None:
            raise ValueError(f"n_bins: method={method!r} does not bin (n_bins is for 'bvs')")
        if binning is not None:
            raise ValueError(f"binning: method={method!r} does not bin (binning is for 'bvs')")
        if method == "isotonic" and loss != "nll":
            raise ValueError(f"loss: method='isotonic' is fitted by isotonic regression (the "
                             f"NLL-optimal monotone variance map); loss={loss!r} is not "
                             "available, use loss='nll'")
    else:
        binning = ("grid" if len(names) == 2 else "equal") if binning is None else binning
        binning = _choice(binning, BINNINGS, "binning")
        if (binning == "grid") != (len(names) == 2):
            raise ValueError(f"by: binning={binning!r} needs "
                             f"{'two variables' if binning == 'grid' else 'one variable'}, "
                             f"got {list(names)}")
        if binning == "groups":
            if n_bins is not None:
                raise ValueError("n_bins: group binning has one bin per label (leave n_bins "
                                 "unset)")
        elif binning == "grid":
            n_bins = DEFAULT_N_BINS if n_bins is None else n_bins
            pair = (n_bins, n_bins) if isinstance(n_bins, int | np.integer) else tuple(n_bins)
            if len(pair) != 2:
                raise ValueError(f"n_bins: a grid takes an int or a pair, got {n_bins!r}")
            n_bins = tuple(_positive_int(v, "n_bins") for v in pair)
        else:
            n_bins = _positive_int(DEFAULT_N_BINS if n_bins is None else n_bins, "n_bins")
    loss_features = features if loss in ("s_tot", "s_ada") else ()
    numeric = [n for n in names if binning != "groups"] + list(loss_features)
    ds = _checked(ds, numeric, [n for n in names if binning == "groups"],
                  what="by" if not loss_features else "by/features")
    m = ds.sizes["sample"]
    if loss != "nll":
        check_n_bins(m, n_bins_scores, variable="the training set (n_bins_scores)")
    E = np.asarray(ds["E"].values, dtype=np.float64)
    uE = np.asarray(ds["uE"].values, dtype=np.float64)
    z2 = (E / uE) ** 2
    attrs: dict[str, Any] = {
        "xuqcal_object": RECALIBRATOR, "method": method, "loss": loss,
        "by": ",".join(names) if method == "bvs" else "", "binning": binning or "",
        "features": ",".join(loss_features), "n_bins_scores": n_bins_scores, "seed": int(seed),
        **_provenance(ds), "training_zms": float(np.mean(z2)),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "xuqcal_version": __version__,
    }
    global_zms, _ = _bin_zms(z2, np.zeros(m, dtype=np.int64), 1)
    global_scale = float(np.sqrt(global_zms[0]))
    if method == "isotonic":
        return _fit_isotonic(E, uE, attrs)
    if not global_scale > 0:
        raise ValueError("E: every training error is zero; no scaling factor can be fitted")
    if method == "temperature":
        index, n = np.zeros(m, dtype=np.int64), 1
        bins = None
    else:
        bins, index = _learn_bins(ds, names, binning, n_bins)
        n = bins.sizes["bin"]
    zms_b, counts = _bin_zms(z2, index, n)
    s0 = np.sqrt(zms_b)
    usable = (counts > 0) & (s0 > 0)
    s0 = np.where(usable, s0, global_scale)
    feats = {name: np.asarray(ds[name].values) for name in loss_features}
    objective = _Objective(E, uE, index, s0, np.flatnonzero(usable), loss, feats,
                           n_bins_scores)
    if loss == "nll":
        theta = np.zeros(objective.free.size)
        value = objective.value(theta)
        info = {"loss_analytic": value, "loss_value": value, "optimum": "analytic",
                "n_factors_optimized": 0}
    else:
        theta, info = _minimize(objective, maxfun)
    scale = objective.scales(theta)
    attrs.update(global_scale=global_scale, **info)
    if method == "temperature":
        rec = xr.Dataset({"scale": ((), float(scale[0]), {
            "long_name": "factor applied to uE", "analytic": float(s0[0])})}, attrs=attrs)
        return rec
    data = {
        "scale": ("bin", scale, {"long_name": "factor applied to uE in the bin"}),
        "scale_analytic": ("bin", s0, {"long_name": "analytic factor sqrt(<Z²>_b) (the NLL "
                                                    "minimizer; global factor where none)"}),
        "train_count": ("bin", counts, {"long_name": "training points assigned to the bin "
                                                     "by the learned limits"}),
        "train_zms": ("bin", zms_b, {"long_name": "training <Z²> in the bin before "
                                                  "recalibration"}),
        "fallback": ("bin", (~usable).astype(np.int8), {
            "long_name": "1 where the bin has no usable training data and gets the global "
                         "(temperature) factor"}),
    }
    rec = xr.Dataset(data, coords={"bin": np.arange(n)}, attrs=attrs)
    rename = {v: _BINS_PREFIX + str(v) for v in bins.variables if v not in bins.dims}
    prefixed = bins.rename(rename)
    rec = xr.merge([rec, prefixed], combine_attrs="override")
    rec.attrs = {**attrs, **{_BINS_PREFIX + k: v for k, v in bins.attrs.items()}}
    if "bins_label" in rec.variables:
        rec = rec.set_coords("bins_label")
    return rec


def _fit_isotonic(E: np.ndarray, uE: np.ndarray, attrs: dict[str, Any]) -> xr.Dataset:
    with np.errstate(over="ignore", under="ignore"):
        squares_ok = bool(np.all(np.isfinite(E * E)) and np.all((uE * uE) > 0)
                          and np.all(np.isfinite(uE * uE)))
    if not squares_ok:  # the variance map is stored in units of uE²: no rescaling possible
        raise ValueError("uE: the isotonic variance map needs E² and uE² inside the float64 "
                         "range (|E| and uE from about 1e-154 to 1e154); rescale the data")
    u2 = uE * uE
    order = np.argsort(u2, kind="stable")
    x_sorted, y_sorted = u2[order], (E * E)[order]
    x, start, counts = np.unique(x_sorted, return_index=True, return_counts=True)
    y = np.add.reduceat(y_sorted, start) / counts
    result = optimize.isotonic_regression(y, weights=counts.astype(np.float64), increasing=True)
    fitted = np.asarray(result.x, dtype=np.float64)
    blocks = np.asarray(result.blocks, dtype=np.int64)
    keep = np.unique(np.concatenate([blocks[:-1], blocks[1:] - 1]))
    knots_x, knots_y = x[keep], fitted[keep]
    positive = knots_y > 0
    if not positive.any():
        raise ValueError("E: every training error is zero; the isotonic variance map would be "
                         "zero everywhere")
    floored = int((~positive).sum())
    knots_y = np.where(positive, knots_y, knots_y[positive].min())
    nll = 0.5 * (float(np.mean(E * E / np.interp(u2, knots_x, knots_y)))
                 + float(np.mean(np.log(np.interp(u2, knots_x, knots_y)))) + _LOG_2PI)
    attrs.update(
        n_blocks=int(blocks.size - 1), knots_floored=floored, loss_value=nll,
        ties="points with equal uE² are pooled (mean E², weight = count) before the fit",
        interpolation="linear in uE², constant beyond the first and last knots",
        nonpositive_variances="raised to the smallest positive fitted variance",
    )
    return xr.Dataset(
        {"knot_variance_in": ("knot", knots_x, {"long_name": "uE² at the knot"}),
         "knot_variance_out": ("knot", knots_y, {"long_name": "fitted E² (recalibrated uE²)"})},
        coords={"knot": np.arange(knots_x.size)}, attrs=attrs,
    )


def _check_recalibrator(recalibrator: Any) -> None:
    if isinstance(recalibrator, Recalibrator):
        raise TypeError("recalibrator: pass recalibrator.dataset (or use recalibrator.apply)")
    if not isinstance(recalibrator, xr.Dataset) or \
            recalibrator.attrs.get("xuqcal_object") != RECALIBRATOR:
        raise ValueError("recalibrator: expected a Dataset made by xuqcal.recalibration.fit "
                         "(attribute xuqcal_object = 'recalibrator')")
    if recalibrator.attrs.get("method") not in METHODS:
        raise ValueError(f"recalibrator: unknown method {recalibrator.attrs.get('method')!r}")


def apply(recalibrator: xr.Dataset, ds: xr.Dataset) -> xr.Dataset:
    """Recalibrate the uncertainties of a data set with a fitted recalibrator.

    Parameters
    ----------
    recalibrator : xarray.Dataset
        From :func:`fit` (possibly reopened from NetCDF).
    ds : xarray.Dataset
        Data over ``sample`` with ``E``, ``uE`` and the binning variables.

    Returns
    -------
    xarray.Dataset
        A copy of ``ds`` with the recalibrated ``uE``; the input ``uE`` is kept as
        ``uE_uncalibrated`` (when ``ds`` already has it, e.g. applying twice, the existing one,
        the original, is kept); for BVS ``recalibration_bin`` holds the bin of every point.
        Attributes ``recalibration_*`` record the method, loss, bins and training source.

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.5)
    >>> test = xuqcal.synthetic.nig(2000, nu=6, seed=1, uE_scale=0.5)
    >>> new = apply(fit(train, "isotonic"), test)
    >>> sorted(v for v in new.data_vars), new.attrs["recalibration_method"]
    (['E', 'uE', 'uE_uncalibrated'], 'isotonic')
    """
    _check_recalibrator(recalibrator)
    method = recalibrator.attrs["method"]
    bins = None
    if method == "bvs":
        bins = learned_bins(recalibrator)
        names = str(bins.attrs["by"]).split(",")
        numeric = names if bins.attrs["scheme"] != "groups" else []
        ds = _checked(ds, numeric, names if not numeric else [], what="by")
    else:
        ds = _checked(ds)
    uE = np.asarray(ds["uE"].values, dtype=np.float64)
    out = ds.copy()
    if method == "temperature":
        new = uE * float(recalibrator.scale.values)
    elif method == "isotonic":
        variance = np.interp(uE * uE, recalibrator.knot_variance_in.values,
                             recalibrator.knot_variance_out.values)
        new = np.sqrt(variance)
    else:
        values = [ds[n].values for n in names]
        index = apply_bins(bins, *values)
        new = uE * recalibrator.scale.values[index]
        out["recalibration_bin"] = ("sample", index.astype(np.int64), {
            "long_name": "recalibration bin of the point (learned limits)"})
    if "uE_uncalibrated" not in out:
        out["uE_uncalibrated"] = ds["uE"].copy()
        out["uE_uncalibrated"].attrs = {**ds["uE"].attrs,
                                        "long_name": "prediction uncertainty before "
                                                     "recalibration"}
    out["uE"] = ("sample", new, {**ds["uE"].attrs, "long_name": "recalibrated prediction "
                                 f"uncertainty ({method})"})
    history = str(ds.attrs.get("recalibration_history", ""))
    step = f"{method} (loss {recalibrator.attrs.get('loss')}" + (
        f", by {recalibrator.attrs.get('by')}, {recalibrator.scale.size} bins)"
        if method == "bvs" else ")")
    out.attrs.update(
        recalibration_method=method,
        recalibration_loss=str(recalibrator.attrs.get("loss")),
        recalibration_by=str(recalibrator.attrs.get("by", "")),
        recalibration_n_bins=int(recalibrator.scale.size) if method == "bvs" else 0,
        recalibration_training=str(recalibrator.attrs.get("training_source", "")),
        recalibration_history=f"{history}; {step}" if history else step,
        xuqcal_version=__version__,
    )
    return out


class Recalibrator:
    """A fitted recalibrator: a thin wrapper of the recalibrator Dataset.

    Attributes
    ----------
    dataset : xarray.Dataset
        The fitted recalibrator (what :func:`fit` returns).

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.5)
    >>> rec = Recalibrator.fit(train, "bvs", n_bins=5)
    >>> rec.method, rec.apply(train).uE_uncalibrated.size
    ('bvs', 2000)
    """

    def __init__(self, dataset: xr.Dataset) -> None:
        _check_recalibrator(dataset)
        self.dataset = dataset

    @classmethod
    def fit(cls, ds: xr.Dataset, method: str = "bvs", **kwargs: Any) -> Recalibrator:
        """Fit with :func:`fit` and wrap the result."""
        return cls(fit(ds, method, **kwargs))

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Recalibrator:
        """Read a recalibrator written by :meth:`to_netcdf` (loaded into memory)."""
        with xr.open_dataset(path) as stored:
            return cls(stored.load())

    @property
    def method(self) -> str:
        """The method (``temperature``, ``bvs`` or ``isotonic``)."""
        return str(self.dataset.attrs["method"])

    def apply(self, ds: xr.Dataset) -> xr.Dataset:
        """Recalibrate ``ds``; see :func:`apply`."""
        return apply(self.dataset, ds)

    def to_netcdf(self, path: str | os.PathLike[str], *, overwrite: bool = False):
        """Write atomically with :func:`xuqcal.to_netcdf`."""
        return to_netcdf(self.dataset, path, overwrite=overwrite)

    def __repr__(self) -> str:
        a = self.dataset.attrs
        detail = f", by={a.get('by')!r}, n_bins={self.dataset.scale.size}" \
            if self.method == "bvs" else ""
        return f"<Recalibrator {self.method}{detail}, loss={a.get('loss')!r}>"


# --------------------------------------------------------------------------------------------
# Bin-number scan
# --------------------------------------------------------------------------------------------


def scan(train: xr.Dataset, test: xr.Dataset, *, method: str = "bvs",
         by: str | Sequence[str] = "uE", n_bins: Iterable[int] = range(2, 100),
         n_boot: int = 5000, **fit_kwargs: Any) -> xr.Dataset:
    """Test-set scores of BVS recalibrators fitted with each number of bins (METHODS §8).

    Parameters
    ----------
    train, test : xarray.Dataset
        Training and test data.
    method : {"bvs"}
        Only BVS has a number of bins.
    by : str or pair of str
        As in :func:`fit`.
    n_bins : iterable of int
        Numbers of bins N_B (default 2 to 99).
    n_boot : int
        LZMS bootstrap replicates per bin for ``f_v`` (as in :func:`scores`).
    **fit_kwargs
        Passed to :func:`fit` (``loss``, ``binning``, ``features``, ``n_bins_scores``,
        ``maxfun``...). The scores use the same ``features`` and ``n_bins_scores``.

    Returns
    -------
    xarray.Dataset
        The variables of :func:`scores` over ``n_bins`` (the requested number; the number of
        bins actually learned is the coordinate ``n_bins_learned``) and ``by``, plus the
        training loss ``train_loss``.

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(1000, nu=6, seed=0, uE_scale=0.5)
    >>> test = xuqcal.synthetic.nig(1000, nu=6, seed=1, uE_scale=0.5)
    >>> r = scan(train, test, n_bins=[2, 4], features=(), n_bins_scores=10, n_boot=100)
    >>> r.nll.dims, r.n_bins.values.tolist()
    (('n_bins',), [2, 4])
    """
    if method != "bvs":
        raise ValueError(f"method: only 'bvs' has a number of bins to scan, got {method!r}")
    if "n_bins" in fit_kwargs or "method" in fit_kwargs:
        raise ValueError("fit_kwargs: n_bins and method are set by scan itself")
    if isinstance(n_bins, str) or not isinstance(n_bins, Iterable):
        raise ValueError(f"n_bins: expected a sequence of numbers of bins to scan, got "
                         f"{n_bins!r}")
    n_values = [_positive_int(v, "n_bins") for v in n_bins]
    if not n_values:
        raise ValueError("n_bins: the list of numbers of bins is empty")
    features = _check_features(fit_kwargs.get("features", DEFAULT_FEATURES))
    n_scores = fit_kwargs.get("n_bins_scores", DEFAULT_N_BINS_SCORES)
    rows, learned, losses = [], [], []
    for n in n_values:
        rec = fit(train, "bvs", by=by, n_bins=n, **fit_kwargs)
        rows.append(scores(apply(rec, test), features=features, n_bins=n_scores, n_boot=n_boot,
                           seed=fit_kwargs.get("seed", 0)))
        learned.append(int(rec.scale.size))
        losses.append(float(rec.attrs["loss_value"]))
    out = xr.concat(rows, dim="n_bins", combine_attrs="drop_conflicts")
    out = out.assign_coords(n_bins=n_values, n_bins_learned=("n_bins", learned))
    out["train_loss"] = ("n_bins", np.array(losses), {
        "long_name": f"training loss ({fit_kwargs.get('loss', 'nll')}) of the fitted factors"})
    out.attrs.update(method=method, by=",".join(_names(by, "by")),
                     loss=fit_kwargs.get("loss", "nll"), n_bins_scores=n_scores,
                     training_n_points=int(train.sizes["sample"]),
                     test_n_points=int(test.sizes["sample"]), xuqcal_version=__version__)
    return out
