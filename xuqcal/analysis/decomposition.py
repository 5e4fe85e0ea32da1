"""Why two models differ: the CORP decomposition of consistent scores of the variance forecast
``uE²`` of ``E²``, the CORP reliability diagram with its consistency band, and Pernot's split of
the NLL. The kernels are in :mod:`xuqcal.core.decomposition`.

- :func:`score_decomposition`: ``S = MCB − DSC + UNC`` for the scores ``squared_error``
  ``(uE² − E²)²`` and ``qlike`` ``E²/uE² + ln uE²`` (the Gaussian NLL is ``½ (ln 2π + qlike)``),
  the recalibrated forecast being the isotonic regression of ``E²`` on ``uE²``
  (Dimitriadis, Gneiting & Jordan 2021).
- :func:`corp_reliability`: the isotonic fit along the sorted ``uE²``, with a consistency
  band: the pointwise quantiles of the isotonic fits of synthetic squared errors drawn under
  the hypothesis of calibration, ``E* = uE ε``, ``ε ~ N(0, 1)``.
- :func:`nll_split`: ``nll = ½ <Z²> + ½ <ln uE²> + ½ ln 2π`` (METHODS §2), a calibration and a
  sharpness term.

Every function broadcasts over the extra dimensions of the data (``model``, ``task``, ...:
:mod:`xuqcal.analysis.slices`) and is lazy on Dask-backed data (:mod:`xuqcal.analysis.lazy`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import xarray as xr

from xuqcal.analysis.lazy import analysis, template
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core import random as _random
from xuqcal.core.checks import (
    check_finite,
    check_level,
    check_replicates,
    check_seed,
    positions_text,
)
from xuqcal.core.decomposition import (
    SCORES,
    TieGroups,
    check_score,
    corp_decomposition,
    score_formula,
)
from xuqcal.core.decomposition import nll_split as _nll_split
from xuqcal.core.memory import check_replicates_fit
from xuqcal.core.provenance import provenance
from xuqcal.io import SAMPLE_DIM, by_role

__all__ = ["RANK_DIM", "SCORE_DIM", "corp_reliability", "nll_split", "score_decomposition"]

SCORE_DIM = "score"
"""Dimension of the decompositions: one scoring function per label."""
RANK_DIM = "rank"
"""Dimension of :func:`corp_reliability`'s fit: the position in the stable sort order of uE²."""

#: Purpose of the random streams of the consistency band (:func:`xuqcal.core.random.stream_key`).
BAND_PURPOSE = "corp_band:normal"

_DECOMPOSITION_VARIABLES = {
    "score_value": "mean score S = mean s(uE², E²)",
    "mcb": "miscalibration MCB = S - S_rc",
    "dsc": "discrimination DSC = S_mg - S_rc",
    "unc": "uncertainty UNC = S_mg",
    "recalibrated_score": "S_rc = mean s(v̂, E²), v̂ the isotonic recalibration",
}

_METHOD = ("CORP (Dimitriadis, Gneiting & Jordan 2021): v̂ = isotonic (non-decreasing) "
           "regression of E² on uE² by pool-adjacent-violators (scipy.optimize."
           "isotonic_regression), climatological forecast mean(E²); S = MCB - DSC + UNC")
_TIES = "points with equal uE² are pooled (mean E², weight = count) before the fit"


def _check_scores(scores: object) -> list[str]:
    """The score names, in the order given (a single name allowed), checked."""
    if scores is None:
        return list(SCORES)
    if isinstance(scores, str):
        scores = [scores]
    if not isinstance(scores, Iterable):
        raise ValueError(f"scores: expected score names ({', '.join(map(repr, SCORES))}), "
                         f"got {scores!r}")
    names = [check_score(s) for s in scores]
    if not names:
        raise ValueError("scores: the list of scores is empty")
    if len(set(names)) != len(names):
        raise ValueError(f"scores: a score is listed twice in {names}")
    return names


def _errors(ds: xr.Dataset, E: str, uE: str) -> tuple[np.ndarray, np.ndarray]:
    """``(E, uE)`` of a NumPy-backed data set as float64, checked: ``E`` finite, ``uE`` finite
    and positive (the messages count the bad values)."""
    e = check_finite(ds[E].values, "E")
    u = np.asarray(ds[uE].values, dtype=np.float64)
    bad = np.flatnonzero(~(np.isfinite(u) & (u > 0)))
    if bad.size:
        raise ValueError(f"uE: {bad.size} of {u.size} values are not finite and positive "
                         f"(rows {positions_text(bad)})")
    return e, u


def _values(ds: xr.Dataset, E: str, uE: str) -> tuple[np.ndarray, np.ndarray]:
    """``(uE², E²)`` of a NumPy-backed data set, their values checked."""
    e, u = _errors(ds, E, uE)
    with np.errstate(over="ignore", under="ignore"):
        v, y = u * u, e * e
    if not (np.all(np.isfinite(v)) and np.all(v > 0) and np.all(np.isfinite(y))):
        raise ValueError("uE: the decomposition needs E² and uE² inside the float64 range "
                         "(|E| and uE from about 1e-154 to 1e154); rescale the data")
    return v, y


def _decomposition_layout(names: list[str]) -> tuple[dict, dict]:
    variables = {key: ((SCORE_DIM,), np.float64, {"long_name": text})
                 for key, text in _DECOMPOSITION_VARIABLES.items()}
    coords = {SCORE_DIM: (SCORE_DIM, names),
              "formula": (SCORE_DIM, [score_formula(n) for n in names])}
    return variables, coords


def _decomposition_arrays(v: np.ndarray, y: np.ndarray, names: list[str],
                          fitted: np.ndarray | None = None) -> dict[str, tuple]:
    parts = corp_decomposition(v, y, tuple(names), recalibrated=fitted)
    columns = {"score_value": "score", "mcb": "mcb", "dsc": "dsc", "unc": "unc",
               "recalibrated_score": "recalibrated"}
    return {key: (SCORE_DIM, np.array([getattr(parts[n], field) for n in names]))
            for key, field in columns.items()}


def _decomposition_body(ds: xr.Dataset, *, chosen: list[str], E: str, uE: str) -> xr.Dataset:
    v, y = _values(ds, E, uE)
    return xr.Dataset(_decomposition_arrays(v, y, chosen), coords={SCORE_DIM: chosen})


@broadcast
@by_role
def score_decomposition(
    ds: xr.Dataset,
    scores: str | Iterable[str] | None = SCORES,
    *,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """CORP decomposition ``S = MCB − DSC + UNC`` of consistent scores of the variance
    forecast ``uE²`` of ``E²``.

    The recalibrated forecast ``v̂`` is the isotonic (non-decreasing) regression of ``E²`` on
    ``uE²`` (pool-adjacent-violators; points with equal ``uE`` pooled first, so they get equal
    ``v̂``), the climatological forecast the constant ``mean(E²)``. With ``S = mean s(uE², E²)``,
    ``S_rc = mean s(v̂, E²)`` and ``S_mg = mean s(mean(E²), E²)``: ``MCB = S − S_rc`` (≥ 0: what
    recalibration would gain), ``DSC = S_mg − S_rc`` (≥ 0: what the ranking of the points by
    ``uE`` is worth), ``UNC = S_mg`` (the score of the constant forecast).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    scores : str or sequence of str or None
        Scoring functions (``None``: both): ``"squared_error"``, ``s(v, y) = (v − y)²``, and
        ``"qlike"``, ``s(v, y) = y / v + ln v`` (the Gaussian NLL is ``½ (ln 2π + qlike)``,
        so its decomposition is that of ``qlike`` halved, UNC shifted by ``½ ln 2π``). Both
        are consistent for the mean of ``E²``. A recalibrated block whose errors are all 0
        has ``v̂ = 0``: its ``qlike`` is ``−∞``, and MCB and DSC are infinite.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``score`` (coordinate ``formula``): ``score_value`` (S), ``mcb``, ``dsc``,
        ``unc`` and ``recalibrated_score`` (S_rc); attributes ``method``, ``ties``,
        ``identity``. Lazy on Dask-backed data.

    Raises
    ------
    ValueError
        Before any computation for invalid arguments (each message starts with the parameter
        name); when computed, for non-finite values or ``uE <= 0``.

    Examples
    --------
    >>> import xuqcal
    >>> d = score_decomposition(xuqcal.synthetic.nig(1000, nu=6, seed=0))
    >>> d.score.values.tolist()
    ['squared_error', 'qlike']
    >>> gap = d.score_value - (d.mcb - d.dsc + d.unc)
    >>> bool((abs(gap) <= 1e-12 * abs(d.score_value)).all())
    True
    """
    names = _check_scores(scores)
    E, uE = check_data_variables(ds, E, uE)
    variables, coords = _decomposition_layout(names)
    layout = template(variables, {SCORE_DIM: len(names)}, coords, attrs=provenance(
        method=_METHOD, ties=_TIES, identity="score_value = mcb - dsc + unc",
        n_samples=ds.sizes[SAMPLE_DIM], E=E, uE=uE))
    return analysis(_decomposition_body, ds, [E, uE], lambda: layout, chosen=names, E=E,
                    uE=uE)


def _band_replicates(v_sorted: np.ndarray, ties: TieGroups, n_boot: int, seed: int
                     ) -> np.ndarray:
    """The isotonic fits (per tie group) of ``n_boot`` synthetic sets ``E*² = uE² ε²``,
    ``ε ~ N(0, 1)`` drawn in the sorted order from streams ``(seed, BAND_PURPOSE, r)``.

    The cost of :func:`corp_reliability` is here: ``n_boot`` O(M) fits in one task, and an
    ``(n_boot, distinct uE)`` float64 array (``n_boot`` × M × 8 bytes at most; bounded before
    any work by :func:`~xuqcal.core.memory.check_replicates_fit`). Replicate ``r`` depends only
    on ``(seed, BAND_PURPOSE, r)``, so the loop could run as one Dask task per chunk of
    replicates (:func:`xuqcal.analysis.resampling.replicate_chunks`) without changing a bit;
    it is not split because the pointwise quantiles need every replicate of a column at once
    (the same array gathered into one task) and the body itself is one task of
    :func:`~xuqcal.analysis.lazy.analysis` per slice: the split would save time, not memory.
    """
    key = _random.stream_key(seed, BAND_PURPOSE)
    eps = np.empty(v_sorted.size)
    out = np.empty((n_boot, ties.start.size))
    for r in range(n_boot):
        _random.fill_variates(key, _random.as_int64(r), _random.NORMAL, math.nan, eps)
        out[r] = ties.fit(v_sorted * eps * eps)
    return out


def _pointwise_quantiles(replicates: np.ndarray, probs: tuple[float, ...]) -> np.ndarray:
    """``numpy.quantile(replicates, probs, axis=0)``, computed on contiguous blocks of
    columns (quantiles along the strided axis 0 are slower; bit-identical, as checked below).

    Examples
    --------
    >>> a = np.arange(12.0).reshape(4, 3)
    >>> bool(np.array_equal(_pointwise_quantiles(a, (0.1, 0.9)),
    ...                     np.quantile(a, (0.1, 0.9), axis=0)))
    True
    """
    out = np.empty((len(probs), replicates.shape[1]))
    for start in range(0, replicates.shape[1], _QUANTILE_BLOCK):
        block = np.ascontiguousarray(replicates[:, start:start + _QUANTILE_BLOCK].T)
        out[:, start:start + _QUANTILE_BLOCK] = np.quantile(block, probs, axis=1)
    return out


#: Columns per block of :func:`_pointwise_quantiles`.
_QUANTILE_BLOCK = 4096


def _reliability_body(ds: xr.Dataset, *, n_boot: int, level: float, seed: int, E: str,
                      uE: str) -> xr.Dataset:
    v, y = _values(ds, E, uE)
    ties = TieGroups.of(v)
    order = ties.order
    v_sorted, y_sorted = v[order], y[order]
    fitted = ties.sorted_values(ties.fit(y_sorted))
    replicates = _band_replicates(v_sorted, ties, n_boot, seed)
    alpha = (1.0 - level) / 2.0
    low, high = _pointwise_quantiles(replicates, (alpha, 1.0 - alpha))
    rows = np.asarray(ds[SAMPLE_DIM].values)[order]
    m = v.size
    data = {"uE2": (RANK_DIM, v_sorted), "E2": (RANK_DIM, y_sorted),
            "recalibrated": (RANK_DIM, fitted),
            "band_low": (RANK_DIM, ties.sorted_values(low)),
            "band_high": (RANK_DIM, ties.sorted_values(high))}
    # the decomposition of the same fit (the one the diagram shows), in the input order
    recalibrated = np.empty(m)
    recalibrated[order] = fitted
    data.update(_decomposition_arrays(v, y, list(SCORES), recalibrated))
    return xr.Dataset(data, coords={RANK_DIM: np.arange(m, dtype=np.int64),
                                    SAMPLE_DIM: (RANK_DIM, rows), SCORE_DIM: list(SCORES)})


@broadcast
@by_role
def corp_reliability(
    ds: xr.Dataset,
    *,
    n_boot: int = defaults.N_BOOT_RELIABILITY,
    level: float = defaults.LEVEL,
    seed: int = defaults.SEED,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """The CORP reliability diagram of the variance forecast: the isotonic recalibration of
    ``E²`` against ``uE²`` with its consistency band, and the decomposition of both scores.

    The points are sorted by ``uE²`` (stable sort) and ``v̂``, the isotonic (non-decreasing)
    regression of ``E²`` on ``uE²`` (ties of ``uE`` pooled), is given at each position. The
    consistency band (CORP's, Dimitriadis, Gneiting & Jordan 2021) shows where ``v̂`` falls
    when the data are calibrated: ``n_boot`` synthetic sets ``E*² = uE² ε²``, ``ε ~ N(0, 1)``
    (the counter-based stream ``(seed, "corp_band:normal", r)`` of replicate ``r``, drawn in
    the sorted order: the band depends on the values of ``uE`` only), each refitted, and the
    pointwise ``(1 ∓ level) / 2`` quantiles of the fits. A curve leaving the band is evidence
    of miscalibration at those ``uE``; the band assumes normal errors. Its cost is
    ``n_boot`` isotonic fits (O(M) each, one task) and ``n_boot`` × (distinct ``uE``) float64
    values in memory (8 bytes each: 1.6 GB for M = 10⁵ distinct ``uE`` at 2000 sets), refused
    before any work when that cannot fit (:func:`~xuqcal.core.memory.check_replicates_fit`).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    n_boot : int
        Synthetic sets of the band (default ``defaults.N_BOOT_RELIABILITY``, that of
        reliability diagrams); at least ``ceil(2 / (1 - level))``.
    level : float
        Pointwise probability of the band, in (0, 1).
    seed : int
        Seed of the random streams.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``rank`` (0 to M-1, the position in the sort order of ``uE²``, coordinate
        ``sample``: the rows): ``uE2``, ``E2``, ``recalibrated`` (v̂), ``band_low`` and
        ``band_high``; over ``score`` the decomposition of :func:`score_decomposition` for
        both scores. Attributes ``n_boot``, ``level``, ``seed``, ``band``, ``method``.
        Lazy on Dask-backed data.

    Raises
    ------
    ValueError
        Before any computation for invalid arguments (each message starts with the parameter
        name); when computed, for non-finite values or ``uE <= 0``.

    Examples
    --------
    >>> import xuqcal
    >>> r = corp_reliability(xuqcal.synthetic.nig(500, nu=6, seed=0), n_boot=200)
    >>> r.recalibrated.dims, bool((r.recalibrated.diff("rank") >= 0).all())
    (('rank',), True)
    >>> bool((r.band_low <= r.band_high).all())
    True
    """
    level = check_level(level)
    n_boot = check_replicates(n_boot, level, "n_boot")
    seed = check_seed(seed)
    E, uE = check_data_variables(ds, E, uE)
    m = ds.sizes[SAMPLE_DIM]
    check_replicates_fit(n_boot, m, "n_boot")
    rows = ds[SAMPLE_DIM].values if SAMPLE_DIM in ds.coords else np.arange(m)
    if SAMPLE_DIM not in ds.coords:
        ds = ds.assign_coords({SAMPLE_DIM: rows})
    f8 = np.float64
    variables, coords = _decomposition_layout(list(SCORES))
    variables.update({
        "uE2": ((RANK_DIM,), f8, {"long_name": "uE² (forecast variance), sorted"}),
        "E2": ((RANK_DIM,), f8, {"long_name": "E² at the sorted points"}),
        "recalibrated": ((RANK_DIM,), f8, {"long_name": "recalibrated E² (isotonic)"}),
        "band_low": ((RANK_DIM,), f8, {"long_name": "lower bound of the consistency band"}),
        "band_high": ((RANK_DIM,), f8, {"long_name": "upper bound of the consistency band"}),
        SAMPLE_DIM: ((RANK_DIM,), np.asarray(rows).dtype,
                     {"long_name": "row number in the input"}),
    })
    coords[RANK_DIM] = (RANK_DIM, np.arange(m, dtype=np.int64),
                        {"long_name": "position in the stable sort order of uE²"})
    layout = template(variables, {RANK_DIM: m, SCORE_DIM: len(SCORES)}, coords,
                      lazy_coords=(SAMPLE_DIM,), attrs=provenance(
                          n_boot=n_boot, level=level, seed=seed, method=_METHOD, ties=_TIES,
                          band=("pointwise quantiles of the isotonic fits of n_boot synthetic "
                                "sets E*² = uE² ε², ε ~ N(0, 1) (calibration hypothesis), "
                                f"streams (seed, {BAND_PURPOSE!r}, r) in the sort order"),
                          identity="score_value = mcb - dsc + unc",
                          n_samples=m, E=E, uE=uE))
    return analysis(_reliability_body, ds, [E, uE], lambda: layout, n_boot=n_boot,
                    level=level, seed=seed, E=E, uE=uE)


_NLL_VARIABLES = {
    "nll": "mean Gaussian NLL ½ (<Z²> + <ln uE²> + ln 2π)",
    "calibration": "calibration term ½ <Z²> (½ when calibrated)",
    "sharpness": "sharpness term ½ <ln uE²>",
    "constant": "constant ½ ln 2π",
    "nll_reference": "NLL of calibrated data ½ (1 + <ln uE²> + ln 2π) (normal errors)",
}


def _nll_body(ds: xr.Dataset, *, E: str, uE: str) -> xr.Dataset:
    split = _nll_split(*_errors(ds, E, uE))
    reference = math.fsum((0.5, split.sharpness, split.constant))
    return xr.Dataset({"nll": split.nll, "calibration": split.calibration,
                       "sharpness": split.sharpness, "constant": split.constant,
                       "nll_reference": reference})


@broadcast
@by_role
def nll_split(ds: xr.Dataset, *, E: str = defaults.E, uE: str = defaults.UE) -> xr.Dataset:
    """Pernot's split of the mean Gaussian NLL into a calibration and a sharpness term.

    ``nll = ½ <Z²> + ½ <ln uE²> + ½ ln 2π`` (METHODS §2, the statistic ``nll`` of
    :func:`~xuqcal.analysis.stats.stats`): the calibration term ``½ <Z²>`` is half the ZMS
    (½ for calibrated data: ``calibration − ½`` is what miscalibration costs), the sharpness
    term ``½ <ln uE²>`` rewards small uncertainties. Two models with the same NLL may differ in
    both; ``nll_reference`` is the NLL the same uncertainties would have with calibrated
    normal errors.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Scalar variables ``nll``, ``calibration``, ``sharpness``, ``constant`` and
        ``nll_reference`` (over the extra dimensions of the data, if any). Lazy on
        Dask-backed data.

    Examples
    --------
    >>> import xuqcal
    >>> s = nll_split(xuqcal.from_arrays([1.0, -1.0], [1.0, 1.0]))
    >>> float(s.calibration), float(s.sharpness)
    (0.5, 0.0)
    """
    E, uE = check_data_variables(ds, E, uE)
    layout = template({key: ((), np.float64, {"long_name": text})
                       for key, text in _NLL_VARIABLES.items()}, {}, attrs=provenance(
        method="Pernot's split: nll = calibration + sharpness + constant",
        n_samples=ds.sizes[SAMPLE_DIM], E=E, uE=uE))
    return analysis(_nll_body, ds, [E, uE], lambda: layout, E=E, uE=uE)
