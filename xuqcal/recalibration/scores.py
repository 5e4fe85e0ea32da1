"""Recalibration scores, the evaluation table with simulated values, and the bin-number scan
(METHODS §2, §8).

Scores: ``S_cal = |ln <Z²>|``; ``S_x`` = ZMSE over ``n_bins`` equal-count bins of ``x``
(stable sort); ``S_con = S_cal + S_u``, ``S_ada = S_cal + Σ_j S_Xj``,
``S_tot = S_cal + S_u + Σ_j S_Xj``; NLL per point ``½ (<Z²> + <ln uE²> + ln 2π)``. Every value
is finished by the statistics' own definitions (:data:`xuqcal.core.statistics.STATISTICS`:
``zms``, ``nll``, ``zmse``, ``ence``) from column sums.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr
from dask.base import is_dask_collection

from xuqcal.analysis.binning import check_n_bins
from xuqcal.analysis.dependent import check_dependence, resolved_dependence
from xuqcal.analysis.local import (
    binned_dependence_attrs,
    local,
    resample_arguments,
)
from xuqcal.analysis.slices import broadcast, extra_dims
from xuqcal.core import defaults
from xuqcal.core import random as _random
from xuqcal.core.checks import check_replicates, user_stacklevel
from xuqcal.core.provenance import attach
from xuqcal.core.scores import crps_normal
from xuqcal.core.statistics import (
    STATISTICS,
    UndefinedStatisticWarning,
    log_square,
    point_columns,
    power_of_two_scale,
)
from xuqcal.io import by_role
from xuqcal.recalibration.common import (
    _checked,
    _names,
    _positive_int,
    _resolve_features,
    _ScoreBins,
)
from xuqcal.recalibration.recalibrator import apply, fit

_ZMS, _NLL, _ZMSE, _ENCE = (STATISTICS[k] for k in ("zms", "nll", "zmse", "ence"))


def _score_values(z2: np.ndarray, e2: np.ndarray, u2: np.ndarray, sum_lnu2: float,
                  bins: _ScoreBins) -> dict[str, Any]:
    """NLL, <Z²>, S_cal and, per score variable, S_x (ZMSE over its bins) and ENCE, from the
    column sums through the statistics' definitions (:class:`xuqcal.core.statistics.Statistic`).
    """
    m = z2.shape[0]
    sums = {"count": m, "z2": np.sum(z2), "lnu2": sum_lnu2}
    zms = float(_ZMS.from_sums(sums))
    if not zms > 0:
        raise ValueError("E: every error is zero: the scores ln <Z²> (S_cal, S_x) are "
                         "undefined")
    s_x, ence = [], []
    for name, index in zip(bins.names, bins.index, strict=True):
        bin_sums = {"count": bins.counts,
                    **{c: np.bincount(index, weights=v, minlength=bins.n_bins)
                       for c, v in (("z2", z2), ("e2", e2), ("u2", u2))}}
        s_x.append(float(_ZMSE.from_bin_sums(bin_sums)))
        if not np.all(_ZMS.from_sums(bin_sums) > 0):
            warnings.warn(f"s_x is undefined for {name}: a bin has <Z²> = 0 (all its errors "
                          "are 0), so |ln <Z²>| is infinite", UndefinedStatisticWarning,
                          stacklevel=user_stacklevel())
        ence.append(float(_ENCE.from_bin_sums(bin_sums)))
    # S_cal = |ln <Z²>| (ZMSE of one bin) with the scalar math.log: NumPy's vectorized log may
    # differ from it in the last bit, and the scores have always used the scalar one
    return {"nll": float(_NLL.from_sums(sums)), "zms": zms, "s_cal": abs(math.log(zms)),
            "s_x": np.array(s_x), "ence": np.array(ence)}


_SCALAR_SCORES = {
    "nll": "negative log-likelihood per point, ½ (<Z²> + <ln uE²> + ln 2π)",
    "zms": "mean squared z-score <Z²>",
    "s_cal": "calibration score S_cal = |ln <Z²>|",
    "s_con": "consistency score S_con = S_cal + S_u",
    "s_ada": "adaptivity score S_ada = S_cal + Σ_j S_Xj",
    "s_tot": "total score S_tot = S_cal + S_u + Σ_j S_Xj",
    "crps": "mean CRPS of N(0, uE²), in the unit of E (proper score, lower is better)",
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


def _score_inputs(ds: xr.Dataset, features: tuple[str, ...], E: str, uE: str):
    E = np.asarray(ds[E].values, dtype=np.float64)
    uE = np.asarray(ds[uE].values, dtype=np.float64)
    feats = {name: np.asarray(ds[name].values) for name in features}
    return E, uE, feats


@broadcast
@by_role
def scores(ds: xr.Dataset, *, features: Sequence[str] | None = None,
           n_bins: int = defaults.N_BINS_SCORES, n_boot: int = defaults.N_BOOT_LOCAL,
           seed: int = defaults.SEED, resample: str = "iid", groups: str | None = None,
           block: str | None = None, block_length: int | str | None = None,
           E: str = defaults.E, uE: str = defaults.UE) -> xr.Dataset:
    """The recalibration scores of one data set (METHODS §2, §8).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and the features.
    features : sequence of str, optional
        Feature variables X_j (``()`` for none). Default: X1 and X2 when ``ds`` has them
        (:data:`~xuqcal.recalibration.DEFAULT_FEATURES`, the features of
        :func:`xuqcal.add_formula_features`), else none. A named feature that ``ds`` lacks
        is an error.
    n_bins : int
        Equal-count bins per score variable (S_x, ENCE, LZMS), default 100.
    n_boot : int
        Bootstrap replicates per bin of the LZMS analyses that give ``f_v``
        (:func:`xuqcal.local`, BCa).
    seed : int
        Seed of those bootstraps.
    resample, groups, block, block_length
        How those bootstraps resample the points, as in :func:`xuqcal.local`: ``"iid"``
        (default, unchanged), ``"cluster"`` with ``groups``, or a block scheme with
        ``block`` and ``block_length`` (an int or ``"auto"``, resolved once on ``ds`` for
        every score variable). Only ``f_v`` depends on it (the scores have no interval);
        the result's attributes then say how the points were resampled.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Scalars ``nll``, ``zms``, ``s_cal``, ``s_con``, ``s_ada``, ``s_tot``, ``crps`` (the
        mean Gaussian CRPS, :func:`xuqcal.core.scores.crps_normal`); over ``by``
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
    features = _resolve_features(features, ds, E=E, uE=uE)
    n_bins = _positive_int(n_bins, "n_bins")
    n_boot = check_replicates(n_boot, defaults.LEVEL, "n_boot")  # the intervals of local()
    ds = _checked(ds, features, E=E, uE=uE)
    check_n_bins(ds.sizes["sample"], n_bins, variable="the dataset")
    dependence = resolved_dependence(ds, resample, groups, block, block_length, E=E, uE=uE)
    names = (uE, *features)
    arrays = [ds[E].data, *(ds[v].data for v in names)]
    lazy = any(is_dask_collection(a) for a in arrays)
    if lazy:  # the values are read inside the graph, when computed
        task = dask.delayed(_score_arrays, pure=True, nout=3)(*arrays, names=names,
                                                              n_bins=n_bins)
        scalars, s_x, ence = (da.from_delayed(t, shape=shape, dtype=np.float64)
                              for t, shape in zip(task, ((len(_SCALAR_SCORES),),
                                                         (len(names),), (len(names),)),
                                                  strict=True))
    else:
        scalars, s_x, ence = _score_arrays(*arrays, names=names, n_bins=n_bins)
    values = {**dict(zip(_SCALAR_SCORES, scalars, strict=True)), "s_x": s_x, "ence": ence}
    locs = [local(ds, "zms", by=name, n_bins=n_bins, n_boot=n_boot, seed=seed, E=E, uE=uE,
                  **resample_arguments(dependence))
            for name in names]
    out = _scores_dataset(values, names)
    for k, v in enumerate(_FV):
        stack = da.stack if lazy else np.stack
        out[v] = ("by", stack([loc[v].data for loc in locs]), {"long_name": (
            "fraction of valid bins of the LZMS analysis", "Wilson-cc lower bound of f_v",
            "Wilson-cc upper bound of f_v")[k]})
    return attach(out, {"n_bins": n_bins, "n_boot": n_boot, "seed": seed,
                        "n_points": ds.sizes["sample"], "features": ",".join(features),
                        "fraction_valid_target": 0.95, "E": E, "uE": uE,
                        **binned_dependence_attrs(dependence, f"local-{dependence.resample}")})


def _score_arrays(E: np.ndarray, uE: np.ndarray, *features: np.ndarray, names: Sequence[str],
                  n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scores of :func:`scores` on NumPy arrays (``names``: of uE and the ``features``):
    the scalar scores (in the order of ``_SCALAR_SCORES``), ``s_x`` and ``ence`` per score
    variable."""
    e = np.asarray(E, dtype=np.float64)
    u = np.asarray(uE, dtype=np.float64)
    feats = {name: np.asarray(x) for name, x in zip(names[1:], features, strict=True)}
    bins = _ScoreBins(u, feats, n_bins, names[0])
    sum_lnu2 = np.sum(log_square(u))
    scale = power_of_two_scale(e, u)  # scale safety: exact rescaling of data of scale 1e300
    if scale:
        e, u = np.ldexp(e, -scale), np.ldexp(u, -scale)
    columns = point_columns(e, u, ("z2", "e2", "u2"))
    values = _combine(_score_values(columns["z2"], columns["e2"], columns["u2"], sum_lnu2,
                                    bins))
    # the CRPS carries the unit of E: that of the rescaled data, scaled back exactly
    values["crps"] = float(np.ldexp(np.mean(crps_normal(e, u)), scale))
    return (np.array([values[k] for k in _SCALAR_SCORES], dtype=np.float64), values["s_x"],
            values["ence"])


def _scores_dataset(values: Mapping[str, Any], names: Sequence[str],
                    suffix: str = "") -> xr.Dataset:
    data = {}
    for key, text in _SCALAR_SCORES.items():
        value = values[key]
        data[key + suffix] = ((), value if is_dask_collection(value) else float(value),
                              {"long_name": text})
    for key, text in _BY_SCORES.items():
        value = values[key]
        data[key + suffix] = ("by", value if is_dask_collection(value) else
                              np.asarray(value, dtype=np.float64), {"long_name": text})
    return xr.Dataset(data, coords={"by": list(names)})


# Simulated values and the evaluation table


def _simulated(ds: xr.Dataset, features: tuple[str, ...], n_bins: int, n_mc: int, seed: int,
               n_mc_fv: int, n_boot: int, E: str, uE: str,
               resample: Mapping[str, Any] | None = None) -> xr.Dataset:
    """Means (and standard errors) of the scores of errors drawn from N(0, uE²).

    ``resample``: the arguments of the dependent resample of the simulated ``f_v``
    (:func:`xuqcal.analysis.local.resample_arguments` of the data's, its block length
    resolved on the data). The simulated sets keep every variable of ``ds`` (the groups, the
    order) and only replace ``E``, so the same resample, with the same groups or blocks, is
    applied to them: their mean ``f_v`` is that of calibrated errors under the same
    analysis. The simulated errors themselves are independent (``E = uE · eps``): that is
    the reference of calibration, not a model of the data's dependence."""
    E_name, uE_name = E, uE
    _, uE, feats = _score_inputs(ds, features, E_name, uE_name)
    bins = _ScoreBins(uE, feats, n_bins, uE_name)
    sum_lnu2 = np.sum(log_square(uE))
    scale = power_of_two_scale(uE)  # scale safety: the scores are scale-free
    u2 = np.ldexp(uE, -scale) ** 2 if scale else uE * uE
    key = _random.stream_key(seed, "recalibration:simulated")
    eps = np.empty(uE.shape[0])
    keys = tuple(_SCALAR_SCORES)
    scalars = np.empty((n_mc, len(keys)))
    s_x = np.empty((n_mc, len(bins.names)))
    ence = np.empty((n_mc, len(bins.names)))
    for r in range(n_mc):
        _random.fill_variates(key, r, _random.NORMAL, math.nan, eps)
        z2 = eps * eps
        v = _combine(_score_values(z2, u2 * z2, u2, sum_lnu2, bins))
        v["crps"] = float(np.mean(crps_normal(uE * eps, uE)))
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
            sim = ds.assign({E_name: ("sample", uE * eps)})
            for j, name in enumerate(bins.names):
                values[r, j] = local(sim, "zms", by=name, n_bins=n_bins, n_boot=n_boot,
                                     seed=seed, E=E_name, uE=uE_name,
                                     **(resample or {})).fraction_valid.item()
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


@broadcast
def _evaluation_row(ds: xr.Dataset, *, features: tuple[str, ...], n_bins: int, n_mc: int,
                    seed: int, n_mc_fv: int, n_boot: int, E: str, uE: str,
                    resample: str = "iid", groups: str | None = None, block: str | None = None,
                    block_length: int | str | None = None) -> xr.Dataset:
    """One data set's row of :func:`evaluate` (per slice for data with extra dimensions)."""
    dependence = resolved_dependence(ds, resample, groups, block, block_length, E=E, uE=uE)
    row = scores(ds, features=features, n_bins=n_bins, n_boot=n_boot, seed=seed, E=E, uE=uE,
                 **resample_arguments(dependence))
    row = xr.merge([row, _simulated(ds, features, n_bins, n_mc, seed, n_mc_fv, n_boot, E,
                                    uE, resample_arguments(dependence))],
                   combine_attrs="override")
    return row.assign_coords(n_points=ds.sizes["sample"])


def evaluate(datasets: Mapping[str, xr.Dataset], *, features: Sequence[str] | None = None,
             n_bins: int = defaults.N_BINS_SCORES, n_mc: int = defaults.N_MC_SCORES,
             seed: int = defaults.SEED,
             n_boot: int = defaults.N_BOOT_LOCAL, n_mc_fv: int = 0,
             resample: str = "iid", groups: str | None = None, block: str | None = None,
             block_length: int | str | None = None, E: str = defaults.E,
             uE: str = defaults.UE) -> xr.Dataset:
    """The evaluation table of several data sets, with simulated values (METHODS §8).

    For every data set: its :func:`scores`, and the **simulated** values of the same scores,
    the mean over ``n_mc`` error sets ``E~ = uE · eps``, ``eps ~ N(0, 1)``, drawn with that data
    set's uncertainties (variables ``<score>_simulated`` and their standard errors
    ``<score>_simulated_se``). Set ``r`` uses the stream ``(seed, "recalibration:simulated",
    r)``, drawn in row order, so every data set of the same size sees the same ``eps``.

    Parameters
    ----------
    datasets : mapping of str to xarray.Dataset
        E.g. ``{"train": train, "test": test, "test BVS": apply(rec, test)}``. Data sets with
        extra dimensions (``model``, ``task``; the same in every data set) are evaluated per
        slice on its present points (:mod:`xuqcal.analysis.slices`).
    features : sequence of str, optional
        Feature variables X_j, the same in every data set (``()`` for none). Default: X1 and
        X2 when the data sets have them (:data:`~xuqcal.recalibration.DEFAULT_FEATURES`),
        else none (the scores of uE only).
    n_bins, n_boot
        As in :func:`scores`.
    n_mc : int
        Simulated error sets per data set (default 1000).
    seed : int
        Seed of the simulated errors and of the LZMS bootstraps.
    n_mc_fv : int
        Simulated sets for the mean ``f_v`` (each costs one LZMS analysis per score variable,
        about 0.15 s each at M = 14 000); default 0: ``fraction_valid_simulated`` is NaN and
        ``f_v`` is compared with its target 0.95; otherwise at least 2.
    resample, groups, block, block_length
        How the LZMS bootstraps of ``f_v`` resample the points, as in :func:`scores` (the
        variable ``groups`` or ``block`` in every data set; ``block_length="auto"`` is
        resolved per data set, on its own errors). The simulated ``f_v`` (``n_mc_fv``) uses
        the same resample with the data set's groups or order and block length: the
        simulated error sets replace ``E`` only, with independent errors ``uE · eps``.
    E, uE : str
        Names of the error and uncertainty variables (the same in every data set).

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
    >>> table = evaluate({"train": train, "train T": apply(rec, train)},
    ...                  n_bins=10, n_mc=50, n_boot=200)  # no X1, X2: scores of uE only
    >>> table.dataset.values.tolist(), round(float(table.zms.sel(dataset="train T")), 12)
    (['train', 'train T'], 1.0)
    >>> table.s_x.by.values.tolist()
    ['uE']
    """
    if not isinstance(datasets, Mapping) or not datasets:
        raise ValueError("datasets: expected a non-empty mapping of names to Datasets")
    features = _resolve_features(features, datasets, E=E, uE=uE)
    n_mc = _positive_int(n_mc, "n_mc")
    n_mc_fv = _positive_int(n_mc_fv, "n_mc_fv", minimum=0)
    if n_mc_fv == 1:
        raise ValueError("n_mc_fv: expected 0 (no simulated f_v) or at least 2 simulated sets "
                         "(one set gives no standard error), got 1")
    _random.stream_key(seed, "recalibration")  # validates the seed
    given = {"resample": resample, "groups": groups, "block": block,
             "block_length": block_length}
    for name, ds in datasets.items():  # every data set's resample, before any work
        if not isinstance(name, str):
            raise ValueError(f"datasets: names must be str, got {name!r}")
        if isinstance(ds, xr.Dataset):  # one slice of data with extra dimensions
            dims = extra_dims(ds, E, uE)
            check_dependence(ds.isel(dict.fromkeys(dims, 0)) if dims else ds, resample, groups,
                             block, block_length)
    rows = []
    for ds in datasets.values():
        rows.append(_evaluation_row(ds, features=features, n_bins=n_bins, n_mc=n_mc, seed=seed,
                                    n_mc_fv=n_mc_fv, n_boot=n_boot, E=E, uE=uE, **given))
    table = xr.concat(rows, dim="dataset", coords="different", compat="equals",
                      combine_attrs="drop")
    table = table.assign_coords(dataset=list(datasets))
    table["n_points"].attrs["long_name"] = "number of points"
    return attach(table, {
        "n_bins": int(n_bins), "n_boot": int(n_boot), "n_mc": n_mc, "n_mc_fv": n_mc_fv,
        "seed": int(seed), "features": ",".join(features),
        "simulated": "errors E = uE * eps, eps ~ N(0, 1), drawn with each data set's "
                     "uncertainties; stream (seed, 'recalibration:simulated', r)",
        "fraction_valid_target": 0.95, "E": E, "uE": uE,
        **({} if resample == "iid" else {
            **{k: v for k, v in given.items() if v is not None},
            "simulated_fv_resample": "the simulated error sets keep the data set's "
                                     f"{groups if resample == 'cluster' else block!r} and "
                                     "are resampled as it is (same block length)"}),
    })


def evaluation_table(table: xr.Dataset, *, digits: int = 3, simulated: bool = True) -> str:
    """A plain-text table of an :func:`evaluate` (or :func:`scores`) result.

    One row per data set (and, with ``simulated``, one ``simulated`` row below it): NLL,
    CRPS, S_cal, S_x per variable, S_tot, ENCE per variable and f_v per variable.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(1000, nu=6, seed=0)
    >>> t = evaluate({"data": ds}, features=(), n_bins=10, n_mc=20, n_boot=200)
    >>> evaluation_table(t).splitlines()[0].split()[:5]
    ['dataset', 'NLL', 'CRPS', 'S_cal', 'S_uE']
    """
    if "dataset" not in table.dims:
        table = table.expand_dims(dataset=["data"])
    by = [str(b) for b in table.by.values]
    kinds = [("", "")]
    if simulated and "nll_simulated" in table:
        kinds.append(("_simulated", "  simulated"))
    frames = []
    for suffix, label in kinds:
        names = {f"{v}{suffix}": v for v in ("nll", "crps", "s_cal", "s_tot", "s_x", "ence",
                                             "fraction_valid")}
        wide = table[list(names)].rename(names).to_dataframe().unstack("by")
        columns = {"NLL": wide[("nll", by[0])], "CRPS": wide[("crps", by[0])],
                   "S_cal": wide[("s_cal", by[0])],
                   **{f"S_{b}": wide[("s_x", b)] for b in by},
                   "S_tot": wide[("s_tot", by[0])],
                   **{f"ENCE_{b}": wide[("ence", b)] for b in by},
                   **{f"f_v_{b}": wide[("fraction_valid", b)] for b in by}}
        frame = pd.DataFrame(columns)
        frame.insert(0, "dataset", [label or str(name) for name in frame.index])
        frame["order"] = [(list(table.dataset.values).index(n), len(frames))
                          for n in frame.index]
        frames.append(frame)
    frame = pd.concat(frames).sort_values("order", kind="stable").drop(columns="order")
    width = max(len("dataset"), *(len(v) for v in frame["dataset"]))
    frame["dataset"] = [v.ljust(width) for v in frame["dataset"]]

    def number(value: float) -> str:
        return f"{value:.{digits}f}" if np.isfinite(value) else "-"

    return frame.to_string(index=False, justify="right",
                           formatters={c: number for c in frame.columns if c != "dataset"},
                           header=["dataset".ljust(width), *frame.columns[1:]])




@broadcast(data="train")
@by_role(data="train")
def scan(train: xr.Dataset, test: xr.Dataset, *, method: str = "bvs",
         by: str | Sequence[str] | None = None, n_bins: Iterable[int] = range(2, 100),
         n_boot: int = defaults.N_BOOT_LOCAL, resample: str = "iid", groups: str | None = None,
         block: str | None = None, block_length: int | str | None = None,
         E: str = defaults.E, uE: str = defaults.UE, **fit_kwargs: Any) -> xr.Dataset:
    """Test-set scores of BVS recalibrators fitted with each number of bins (METHODS §8).

    Parameters
    ----------
    train, test : xarray.Dataset
        Training and test data. With extra dimensions (``model``, ``task``, ...), each slice of
        ``train`` is scanned with the slice of ``test`` of the same labels
        (:mod:`xuqcal.analysis.slices`).
    method : {"bvs"}
        Only BVS has a number of bins.
    by : str or pair of str, optional
        As in :func:`fit` (default: ``uE``).
    n_bins : iterable of int
        Numbers of bins N_B (default 2 to 99).
    n_boot : int
        LZMS bootstrap replicates per bin for ``f_v`` (as in :func:`scores`).
    resample, groups, block, block_length
        How those LZMS bootstraps resample the points of ``test``, as in :func:`scores`
        (the variable ``groups`` or ``block`` in ``test``; the fits do not resample).
    E, uE : str
        Names of the error and uncertainty variables (in both data sets).
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
    by = uE if by is None else by
    features = _resolve_features(fit_kwargs.get("features"), {"train": train, "test": test},
                                 E=E, uE=uE)
    fit_kwargs = {**fit_kwargs, "features": features}
    n_scores = fit_kwargs.get("n_bins_scores", defaults.N_BINS_SCORES)
    dependence = resolved_dependence(test, resample, groups, block, block_length, E=E, uE=uE)
    rows, learned, losses = [], [], []
    for n in n_values:
        rec = fit(train, "bvs", by=by, n_bins=n, E=E, uE=uE, **fit_kwargs)
        rows.append(scores(apply(rec, test, E=E, uE=uE), features=features, n_bins=n_scores,
                           n_boot=n_boot, seed=fit_kwargs.get("seed", defaults.SEED), E=E,
                           uE=uE, **resample_arguments(dependence)))
        learned.append(int(rec.scale.size))
        losses.append(float(rec.attrs["loss_value"]))
    out = xr.concat(rows, dim="n_bins", combine_attrs="drop_conflicts")
    out = out.assign_coords(n_bins=n_values, n_bins_learned=("n_bins", learned))
    out["train_loss"] = ("n_bins", np.array(losses), {
        "long_name": f"training loss ({fit_kwargs.get('loss', 'nll')}) of the fitted factors"})
    return attach(out, {"method": method, "by": ",".join(_names(by, "by")),
                        "loss": fit_kwargs.get("loss", "nll"), "n_bins_scores": n_scores,
                        "training_n_points": int(train.sizes["sample"]),
                        "test_n_points": int(test.sizes["sample"]), "E": E, "uE": uE})
