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
from xuqcal.core.checks import check_count
from xuqcal.core.provenance import provenance
from xuqcal.core.statistics import check_values, compute, log_square
from xuqcal.io import by_role

#: The minimal number of points per bin of the default number of bins (ErrViewLib's popMin).
MIN_POINTS_PER_BIN = 30

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
    ``M // 30`` when the bins would hold fewer than 30 points (at least 1).

    Examples
    --------
    >>> default_n_bins(10000), default_n_bins(400), default_n_bins(20)
    (100, 13, 1)
    """
    n = math.isqrt(m)
    if n and m / n < MIN_POINTS_PER_BIN:
        n = m // MIN_POINTS_PER_BIN
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
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Scalars ``scal``, ``su``, ``stot``, ``ence_u``, ``uce_u``, ``nll``, ``calib``,
        ``sharp``; over ``feature`` (the names of ``features``; absent without features):
        ``sx``, ``ence_x``, ``uce_x``. Attribute ``n_bins``.

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
    variables = {name: ((), np.float64, {"long_name": text}) for name, text in _SCALARS.items()}
    if names:
        variables.update({name: (("feature",), np.float64, {"long_name": text})
                          for name, text in _PER_FEATURE.items()})
    layout = template(variables, {"feature": len(names)},
                      {"feature": np.array(names, dtype=object)} if names else None,
                      attrs=provenance(n_bins=n_bins, n_samples=m, E=E, uE=uE,
                                       features=", ".join(names),
                                       method="ErrViewLib's calibScores (Pernot)"))
    return analysis(_scores_body, ds, [E, uE, *names], lambda: layout, features=names,
                    n_bins=n_bins, E=E, uE=uE)


def _scores_body(data: xr.Dataset, *, features: list[str], n_bins: int, E: str, uE: str
                 ) -> xr.Dataset:
    """:func:`calibration_scores` on NumPy-backed data."""
    errors = np.ascontiguousarray(data[E].values, dtype=np.float64)
    uncertainties = np.ascontiguousarray(data[uE].values, dtype=np.float64)
    check_values(errors, uncertainties)
    zms, nll = compute(errors, uncertainties, ["zms", "nll"], n_bins=n_bins)
    sharp = float(np.mean(log_square(uncertainties)))
    zmse_u, ence_u, uce_u = compute(errors, uncertainties, ["zmse", "ence", "uce"],
                                    n_bins=n_bins)
    scal = abs(math.log(zms))
    out = {"scal": scal, "su": zmse_u, "ence_u": ence_u, "uce_u": uce_u, "nll": nll,
           "calib": zms, "sharp": sharp}
    per_feature = []
    for name in features:
        values = np.asarray(data[name].values, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(f"features: {bad.size} values of {name!r} are not finite (rows "
                             f"{', '.join(map(str, bad[:5].tolist()))})")
        per_feature.append(compute(errors, uncertainties, ["zmse", "ence", "uce"],
                                   n_bins=n_bins, by_values=values, by=name))
    sx = np.array([row[0] for row in per_feature])
    out["stot"] = scal + zmse_u + float(np.sum(sx))
    result = xr.Dataset({k: float(v) for k, v in out.items()})
    if features:
        result = result.assign(sx=("feature", sx),
                               ence_x=("feature", np.array([r[1] for r in per_feature])),
                               uce_x=("feature", np.array([r[2] for r in per_feature])))
    return result
