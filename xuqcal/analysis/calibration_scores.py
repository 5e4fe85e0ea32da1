"""Pernot's calibration, consistency and adaptivity scores (ErrViewLib's ``calibScores``).

With ``Z = E / uE`` and equal-count bins of the points sorted by a variable:

- ``scal = |ln <Z²>|`` (calibration: the global ZMS, on a log scale);
- ``su``: the mean over the bins of ``uE`` of ``|ln <Z²>_b|`` (consistency; the statistic
  ``zmse`` binned on ``uE``);
- ``sx``: the same binned on each feature (adaptivity; one value per feature);
- ``stot = scal + su + Σ sx``;
- ``ence_u``, ``uce_u``, ``ence_x``, ``uce_x``: ENCE and UCE binned on ``uE`` and on each
  feature (the statistics ``ence`` and ``uce``);
- ``nll = ½ (calib + sharp + ln 2π)`` with ``calib = <Z²>`` and ``sharp = <ln uE²>``: the split
  of the NLL into a calibration and a sharpness term as ErrViewLib writes it (the terms of
  :func:`xuqcal.nll_split` are half of these: ``calibration = calib / 2``,
  ``sharpness = sharp / 2``).

Every binned value is a statistic of the registry (:data:`xuqcal.core.statistics.STATISTICS`:
``zmse``, ``ence``, ``uce``, ``zms``, ``nll``) on the bins of :func:`xuqcal.stats`
(``floor(b M / n_bins)`` boundaries; ties of the binning variable in row order).
ErrViewLib's default bins (``genIntervals``: Harrell–Davis breakpoints, ``nBin = sqrt(M)``
reduced to keep 30 points per bin) may place a boundary one point apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import xarray as xr

from xuqcal.analysis.lazy import analysis, template
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core.binning import check_n_bins
from xuqcal.core.checks import check_count, check_finite, check_seed
from xuqcal.core.generators import check_generators
from xuqcal.core.provenance import provenance
from xuqcal.core.statistics import check_values, compute, log_square
from xuqcal.io import by_role

#: The summaries of the simulated reference of each score (``n_mc > 0``).
SUMMARIES = ("mean", "sd", "q025", "q975")

_SCALARS = {
    "scal": "calibration score |ln <Z²>|",
    "su": "consistency score: mean |ln <Z²>_b| over bins of uE",
    "stot": "total score scal + su + sum of sx",
    "ence_u": "ENCE over bins of uE",
    "uce_u": "UCE over bins of uE",
    "nll": "negative log-likelihood (normal) ½ (calib + sharp + ln 2π)",
    "calib": "calibration term of the NLL, <Z²>",
    "sharp": "sharpness term of the NLL, <ln uE²>",
}
_PER_FEATURE = {
    "sx": "adaptivity score: mean |ln <Z²>_b| over bins of the feature",
    "ence_x": "ENCE over bins of the feature",
    "uce_x": "UCE over bins of the feature",
}


def default_n_bins(m: int) -> int:
    """The default number of bins of :func:`calibration_scores`: ``floor(sqrt(M))``, reduced to
    ``M // 30`` when the bins would hold fewer than 30 points (at least 1; 30 is
    ``defaults.POP_MIN_HD``, ErrViewLib's ``popMin``, the reduction of
    :func:`xuqcal.core.quantiles.harrell_davis_bounds`).

    Examples
    --------
    >>> default_n_bins(10000), default_n_bins(400), default_n_bins(20)
    (100, 13, 1)
    """
    n = math.isqrt(m)
    if n and m / n < defaults.POP_MIN_HD:  # ErrViewLib's popMin, as in binning="hd"
        n = m // defaults.POP_MIN_HD
    return max(n, 1)


def _features(ds: xr.Dataset, features: object) -> list[str]:
    if features is None:
        return []
    names = [features] if isinstance(features, str) else features
    if not isinstance(names, Sequence) or isinstance(names, bytes) or not all(
            isinstance(n, str) for n in names):
        raise ValueError(f"features: expected a variable name or a list of names, got "
                         f"{features!r}")
    names = list(names)
    missing = [n for n in names if n not in ds.data_vars]
    if missing:
        raise ValueError(f"features: the dataset has no variable {', '.join(map(repr, missing))} "
                         f"(data variables: {', '.join(map(str, ds.data_vars))})")
    if len(set(names)) != len(names):
        raise ValueError(f"features: a feature is listed twice in {names}")
    for name in names:
        if "sample" not in ds[name].dims:
            raise ValueError(f"features: the variable {name!r} has no dimension 'sample' "
                             f"(dimensions {ds[name].dims})")
        if not np.issubdtype(ds[name].dtype, np.number) or np.issubdtype(ds[name].dtype,
                                                                          np.complexfloating):
            raise ValueError(f"features: the variable {name!r} is not real-valued "
                             f"(dtype {ds[name].dtype})")
    return names


@broadcast
@by_role
def calibration_scores(
    ds: xr.Dataset,
    features: str | Sequence[str] | None = None,
    *,
    n_bins: int | None = None,
    n_mc: int = defaults.N_MC_CALIBRATION_SCORES,
    generator: str = defaults.GENERATORS[0],
    seed: int = defaults.SEED,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Pernot's calibration scores ``scal``, ``su``, ``sx``, ``stot``, ENCE, UCE and the NLL
    with its calibration and sharpness terms (ErrViewLib's ``calibScores``; definitions in the
    module docstring).

    Lazy on Dask-backed data; extra dimensions (``model``, ...) are kept, each slice computed
    on its present points (:mod:`xuqcal.analysis.slices`).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and the features.
    features : str or list of str, optional
        Input features for the adaptivity scores ``sx`` (ErrViewLib's ``X``); none by default
        (then ``stot = scal + su``).
    n_bins : int, optional
        Number of equal-count bins for ``su``, ``sx``, ENCE and UCE. Default
        :func:`default_n_bins` (``floor(sqrt(M))``, at most ``M // 30``).
    n_mc : int
        Simulated data sets of the probabilistic reference of every score (ErrViewLib's
        ``calibScoresProbRef``, ``nMC``): the scores of ``n_mc`` error sets ``uE * eps``,
        ``eps ~ generator``, with the same bins. 0 (default): no reference. ErrViewLib counts
        the data's own scores as one of its ``1 + nMC`` rows; here the reference is the
        simulated sets only.
    generator : str
        Unit-variance distribution of ``eps`` (ErrViewLib's ``dist``: ``"normal"``,
        ``"uniform"``, ``"normp4"``, ``"laplace"``, ``"t4"``; any of
        :mod:`xuqcal.core.generators`).
    seed : int
        Seed: set ``r`` uses ``get_generator(generator).sample(M, seed=seed, replicate=r,
        purpose="calibration_scores")``.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Scalars ``scal``, ``su``, ``stot``, ``ence_u``, ``uce_u``, ``nll``, ``calib``,
        ``sharp``; over ``feature`` (the names of ``features``; absent without features):
        ``sx``, ``ence_x``, ``uce_x``. Attribute ``n_bins``. With ``n_mc``, also
        ``<score>_reference`` for every score, over ``summary`` (``mean``, ``sd`` with the
        denominator ``n_mc - 1``, ``q025``, ``q975``: R's ``quantile`` type 7) after
        ``feature`` for the per-feature scores.

    Raises
    ------
    ValueError
        Before any computation for unknown or non-numeric features, or ``n_bins`` not an
        integer in [1, M]; when computed, for invalid values (NaN, ``uE <= 0``, non-finite
        features).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=0)
    >>> s = calibration_scores(ds, n_bins=20)
    >>> bool(s.stot == s.scal + s.su), round(float(s.nll - 0.5 * (s.calib + s.sharp)), 6)
    (True, 0.918939)
    """
    check_data_variables(ds, E, uE)
    names = _features(ds, features)
    m = ds.sizes["sample"]
    if n_bins is None:
        n_bins = default_n_bins(m)
    else:
        n_bins = check_count(n_bins, "n_bins", 1)
    check_n_bins(m, n_bins)
    n_mc = check_count(n_mc, "n_mc", 0)
    if n_mc == 1:
        raise ValueError("n_mc: a reference needs at least 2 simulated sets (its sd), got 1")
    gen = check_generators(generator, "generator")[0]  # refuses the fitted 'tfit'
    seed = check_seed(seed)
    variables = {name: ((), np.float64, {"long_name": text}) for name, text in _SCALARS.items()}
    if names:
        variables.update({name: (("feature",), np.float64, {"long_name": text})
                          for name, text in _PER_FEATURE.items()})
    if n_mc:
        variables.update({
            f"{name}_reference": ((("feature",) if name in _PER_FEATURE else ()) + ("summary",),
                                  np.float64, {"long_name": f"simulated reference of {name}"})
            for name in variables})
    coords = {"summary": np.array(SUMMARIES)} if n_mc else {}
    if names:
        coords["feature"] = np.array(names, dtype=object)
    attrs = {"n_bins": n_bins, "n_samples": m, "E": E, "uE": uE, "features": ", ".join(names),
             "method": "ErrViewLib's calibScores (Pernot)"}
    if n_mc:
        attrs.update(n_mc=n_mc, generator=gen.name, seed=seed,
                     reference="scores of n_mc error sets uE * eps, eps ~ generator")
    layout = template(variables, {"feature": len(names), "summary": len(SUMMARIES)},
                      coords or None, attrs=provenance(attrs))
    return analysis(_scores_body, ds, [E, uE, *names], lambda: layout, features=names,
                    n_bins=n_bins, n_mc=n_mc, gen=gen, seed=seed, E=E, uE=uE)


def _score_values(errors: np.ndarray, uncertainties: np.ndarray,
                  features: list[tuple[str, np.ndarray]], n_bins: int) -> dict:
    """The scores of one set of errors (checked arrays): scalars and, per feature, arrays."""
    zms, nll = compute(errors, uncertainties, ["zms", "nll"], n_bins=n_bins)
    sharp = float(np.mean(log_square(uncertainties)))
    zmse_u, ence_u, uce_u = compute(errors, uncertainties, ["zmse", "ence", "uce"],
                                    n_bins=n_bins)
    scal = abs(math.log(zms))
    out = {"scal": scal, "su": zmse_u, "ence_u": ence_u, "uce_u": uce_u, "nll": nll,
           "calib": zms, "sharp": sharp}
    per_feature = [compute(errors, uncertainties, ["zmse", "ence", "uce"], n_bins=n_bins,
                           by_values=values, by=name) for name, values in features]
    sx = np.array([row[0] for row in per_feature])
    out["stot"] = scal + zmse_u + float(np.sum(sx))
    if features:
        out.update(sx=sx, ence_x=np.array([r[1] for r in per_feature]),
                   uce_x=np.array([r[2] for r in per_feature]))
    return out


def _scores_body(data: xr.Dataset, *, features: list[str], n_bins: int, n_mc: int, gen,
                 seed: int, E: str, uE: str) -> xr.Dataset:
    """:func:`calibration_scores` on NumPy-backed data."""
    errors = np.ascontiguousarray(data[E].values, dtype=np.float64)
    uncertainties = np.ascontiguousarray(data[uE].values, dtype=np.float64)
    check_values(errors, uncertainties)
    columns = []
    for name in features:
        columns.append((name, check_finite(data[name].values, "features", of=name)))
    out = _score_values(errors, uncertainties, columns, n_bins)
    result = xr.Dataset({k: (("feature",) if k in _PER_FEATURE else (), v)
                         for k, v in out.items()})
    if not n_mc:
        return result
    draws = {k: [] for k in out}
    for r in range(n_mc):
        eps = gen.sample(errors.size, seed=seed, replicate=r, purpose="calibration_scores")
        for k, v in _score_values(uncertainties * eps, uncertainties, columns, n_bins).items():
            draws[k].append(v)
    for k, values in draws.items():
        values = np.asarray(values)  # (n_mc,) or (n_mc, feature)
        summary = np.stack([values.mean(axis=0), values.std(axis=0, ddof=1),
                            *np.quantile(values, [0.025, 0.975], axis=0)], axis=-1)
        dims = ("feature", "summary") if k in _PER_FEATURE else ("summary",)
        result[f"{k}_reference"] = (dims, summary)
    return result
