"""Paired comparisons of point-wise scores between models evaluated on the same points.

Plain NumPy functions without labels (the labelled layer is
:mod:`xuqcal.analysis.paired_scores`). Arrays of scores are ``(K, n)``: ``K`` models
(compared slices) by ``n`` common points, point ``i`` of every row being the same point.

**Point-wise scores** (lower is better), of the predictive ``N(0, uE²)`` of the error ``E``
(METHODS §1):

- ``"crps"``: the Gaussian CRPS, :func:`xuqcal.core.scores.crps_normal`;
- ``"nll"``: the Gaussian negative log-likelihood ``½ (ln 2π + ln uE² + Z²)``, ``Z = E / uE``
  (the point-wise term of xuqcal's NLL statistic);
- ``"interval"``: the interval score of the central prediction interval at level ``p``,
  ``[l, u] = ∓ Φ⁻¹((1 + p)/2) uE`` (Gneiting & Raftery 2007, §6.2):
  ``(u - l) + 2/α (l - E) 1{E < l} + 2/α (E - u) 1{E > u}``, ``α = 1 - p``,
  :func:`xuqcal.core.scores.interval_score`.

**Diebold–Mariano test** (:func:`diebold_mariano`) of equal mean scores: for independent
points (``var(d) / n``), or with the cluster-robust (``groups=``) or Newey–West HAC (``lags=``)
variance of the mean difference for dependent points (:mod:`xuqcal.core.robust`).

**Systematic improvement probability** (SIP, Pernot & Savin 2020, 2023; ErrViewLib's ``sip``
and ``plotSIPMat``): :func:`sip` and its paired-bootstrap interval, :func:`sip_bootstrap`.

References: Diebold & Mariano (1995), *Comparing predictive accuracy*, J. Bus. Econ. Stat. 13,
253; Harvey, Leybourne & Newbold (1997), Int. J. Forecast. 13, 281; Gneiting & Raftery (2007),
JASA 102, 359; Pernot & Savin (2020), J. Chem. Phys. 152, 164109 (SIP).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from xuqcal._lazy import lazy_module
from xuqcal.core import defaults
from xuqcal.core import random as _random
from xuqcal.core import robust as R
from xuqcal.core import scores as S
from xuqcal.core.checks import check_coverage_level, check_level, check_replicates, check_seed
from xuqcal.core.intervals import percentile_interval
from xuqcal.core.kernels import LOG_2PI, fill_counts_block

stats = lazy_module("scipy.stats")

__all__ = [
    "SCORES",
    "SIP_PURPOSE",
    "common_points",
    "diebold_mariano",
    "mean_differences",
    "point_scores",
    "sip",
    "sip_bootstrap",
    "sip_replicates",
]

#: The point-wise scores, with their definitions (recorded in the results' attributes).
SCORES: dict[str, str] = {
    "crps": "Gaussian CRPS of N(0, uE^2) at E: uE (z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)), "
            "z = E/uE",
    "nll": "Gaussian negative log-likelihood 0.5 (ln 2 pi + ln uE^2 + Z^2), Z = E/uE",
    "interval": "interval score of the central interval at level p, [l, u] = -/+ "
                "Phi^-1((1 + p)/2) uE: (u - l) + 2/alpha (l - E) 1{E < l} + 2/alpha (E - u) "
                "1{E > u}, alpha = 1 - p (Gneiting & Raftery 2007)",
}
#: The purpose of the random streams of the SIP bootstrap (see :mod:`xuqcal.core.random`).
SIP_PURPOSE = "sip"
#: The tie rule of the SIP (recorded in the results' attributes).
TIE_RULE = ("ties (equal point-wise scores) count for neither model: SIP(A, B) + SIP(B, A) "
            "<= 1, and SIP(A, A) = 0")
#: Largest number of elements of the block of replicate counts held at once.
_BLOCK_ELEMENTS = 1 << 22


def _check_score(score: object, name: str = "score") -> str:
    if not isinstance(score, str) or score not in SCORES:
        raise ValueError(f"{name}: unknown score {score!r}; choose from {', '.join(SCORES)}")
    return score


def point_scores(E: Any, uE: Any, score: str, coverage_level: float = defaults.LEVEL
                 ) -> np.ndarray:
    """Point-wise scores of the predictive ``N(0, uE²)`` at ``E`` (lower is better).

    Parameters
    ----------
    E, uE : array_like
        Errors and standard uncertainties (broadcast together; NaN gives NaN).
    score : {"crps", "nll", "interval"}
        The score (definitions in :data:`SCORES`).
    coverage_level : float
        Coverage level ``p`` (nominal coverage) of the central prediction interval of
        ``"interval"``.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValueError
        For an unknown score, a coverage level outside (0, 1), infinite values or ``uE <= 0``.

    Examples
    --------
    >>> point_scores([0.0, 1.0], [1.0, 1.0], "nll").round(4).tolist()
    [0.9189, 1.4189]
    >>> point_scores([0.0, 3.0], [1.0, 1.0], "interval", 0.95).round(3).tolist()
    [3.92, 45.521]
    """
    score = _check_score(score)
    level = check_coverage_level(coverage_level)
    E = np.asarray(E, dtype=np.float64)
    uE = np.asarray(uE, dtype=np.float64)
    if score == "crps":
        return np.asarray(S.crps_normal(E, uE), dtype=np.float64)
    if score == "nll":
        E, uE = S._normal_inputs(E, uE)  # the checks of crps_normal (inf, uE <= 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = E / uE
            return np.asarray(0.5 * (LOG_2PI + 2.0 * np.log(uE) + z * z), dtype=np.float64)
    half = float(special.ndtri((1.0 + level) / 2.0)) * uE
    return np.asarray(S.interval_score(E, -half, half, level), dtype=np.float64)


def common_points(E: np.ndarray, uE: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points present in every model (``pairing="common"``) and the points each model
    loses to that rule.

    A point of a model is present where its ``E`` and ``uE`` are both finite; absent points are
    NaN in both (as :func:`xuqcal.stack_datasets` pads shorter sets).

    Parameters
    ----------
    E, uE : numpy.ndarray
        ``(K, M)``: K models by M points.

    Returns
    -------
    common : numpy.ndarray of bool
        ``(M,)``: the points present in every model.
    n_dropped : numpy.ndarray of int64
        ``(K,)``: the points present in a model but absent from another one.

    Examples
    --------
    >>> E = np.array([[0.1, 0.2, np.nan], [0.3, np.nan, np.nan]])
    >>> common, dropped = common_points(E, np.abs(E))
    >>> common.tolist(), dropped.tolist()
    ([True, False, False], [1, 0])
    """
    present = np.isfinite(E) & np.isfinite(uE)
    common = present.all(axis=0)
    n_dropped = present.sum(axis=1) - common.sum()
    return common, n_dropped.astype(np.int64)


def mean_differences(scores: np.ndarray) -> np.ndarray:
    """Mean paired differences ``mean(s_A - s_B)`` of every ordered pair of models.

    Parameters
    ----------
    scores : numpy.ndarray
        ``(K, n)`` point-wise scores.

    Returns
    -------
    numpy.ndarray
        ``(K, K)``, ``[a, b]`` = mean of ``s_a - s_b`` (exactly 0 on the diagonal and
        antisymmetric).

    Examples
    --------
    >>> mean_differences(np.array([[1.0, 2.0], [0.0, 1.0]])).tolist()
    [[0.0, 1.0], [-1.0, 0.0]]
    """
    scores = np.asarray(scores, dtype=np.float64)
    diff = (scores[:, None, :] - scores[None, :, :]).mean(axis=-1)
    upper = np.triu(diff, 1)
    return upper - upper.T  # exactly antisymmetric, 0 on the diagonal


def diebold_mariano(a: Any, b: Any, *, groups: Any = None, lags: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Diebold–Mariano test of equal mean scores of two models on the same points.

    ``d_i = a_i - b_i``, ``DM = mean(d) / sqrt(var(d, ddof=1) / n)``, and the two-sided p-value
    ``2 Φ(-|DM|)`` of the standard normal, along the last axis. Negative DM: ``a`` scores lower
    (better) on average.

    The variant: the points are independent (no autocorrelation of ``d``), so the long-run
    variance is the plain variance and no HAC correction is needed (for dependent data see
    below). With ``ddof=1`` this statistic equals the HLN variant of the ``scores`` package
    (``scores.stats.statistical_tests.diebold_mariano(..., method="HLN")``, Harvey, Leybourne &
    Newbold 1997) at horizon ``h = 1``: its ``V̂ = Σ(d - d̄)² / n²`` times its correction
    ``(n - 1) / n`` is ``var(d, ddof=1) / n``. The p-value is from the normal distribution,
    as ``statistic_distribution="normal"`` there (whose ``confidence_gt_0`` is the one-sided
    ``Φ(DM)``, not a p-value).

    **Dependent points.** ``groups`` (one label per point): ``var(d) / n`` is
    replaced by the cluster-robust (CRV1) variance of ``mean(d)``,
    ``G / (G - 1) Σ_g (Σ_{i∈g} (d_i - d̄))² / n²`` over the ``G`` groups
    (:func:`xuqcal.core.robust.cluster_robust_cov`; statsmodels' cluster ``bse`` of a mean).
    ``lags`` (``L``, the points being in their order along the last axis): by the Newey–West
    (Bartlett) HAC variance ``(Γ_0 + Σ_{l=1}^{L} (1 - l / (L + 1)) 2 Γ_l) / n²``,
    ``Γ_l = Σ_t (d_t - d̄)(d_{t-l} - d̄)`` (:func:`xuqcal.core.robust.hac_cov`; statsmodels'
    HAC ``bse`` with ``maxlags=L``), the long-run variance of the original test (Diebold &
    Mariano 1995, as the ``scores`` package's test); :func:`xuqcal.core.robust.newey_west_lags`
    gives the usual rule ``floor(4 (n / 100)^(2/9))``. Neither has a small-sample factor in
    ``n``: ``lags=0`` gives ``var(d, ddof=0) / n``. The p-value is from the standard normal
    in every case.

    Degenerate cases: all ``d_i = 0`` (identical scores) gives DM = NaN and p = NaN (no
    evidence either way, as ``scores`` returns NaN); a constant non-zero ``d`` gives DM = ±inf
    and p = 0.

    Parameters
    ----------
    a, b : array_like
        Point-wise scores of the two models, ``(..., n)`` with ``n >= 2``, no NaN.
    groups : array_like, optional
        ``(n,)``: each point's group (at least 2 groups), for the cluster-robust variance.
    lags : int, optional
        ``0 <= lags < n``: the lags of the HAC variance, in the order of the last axis.

    Returns
    -------
    statistic, p_value : numpy.ndarray
        Shape ``(...)``.

    Examples
    --------
    >>> dm, p = diebold_mariano([1.0, 2.0, 3.0, 4.0], [1.5, 2.0, 3.5, 4.5])
    >>> round(float(dm), 4), round(float(p), 4)
    (-3.0, 0.0027)
    >>> dm, p = diebold_mariano([1.0, 2.0, 3.0, 4.0], [1.5, 2.0, 3.5, 4.5], groups=[0, 1, 1, 1])
    >>> round(float(dm), 4)
    -6.0
    """
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = d.shape[-1]
    if n < 2:
        raise ValueError(f"a, b: the Diebold-Mariano test needs at least 2 points, got {n}")
    if groups is not None and lags is not None:
        raise ValueError("groups, lags: give one of them (a cluster-robust or a HAC "
                         "variance), not both")
    mean = d.mean(axis=-1)
    if groups is None and lags is None:
        var_mean = d.var(axis=-1, ddof=1) / n
    else:
        rows = d.reshape(-1, n)
        var_mean = np.array([
            (R.cluster_robust_cov(row, groups) if lags is None else R.hac_cov(row, lags))[0, 0]
            for row in rows]).reshape(d.shape[:-1])
    with np.errstate(invalid="ignore", divide="ignore"):
        statistic = mean / np.sqrt(var_mean)
    p_value = 2.0 * stats.norm.sf(np.abs(statistic))
    return statistic, np.asarray(p_value, dtype=np.float64)


def _better(scores: np.ndarray) -> np.ndarray:
    """``(n, K, K)`` boolean: ``[i, a, b]`` = model a's score is strictly lower than b's at i."""
    return scores.T[:, :, None] < scores.T[:, None, :]


def sip(scores: np.ndarray) -> np.ndarray:
    """Systematic improvement probability of every ordered pair of models.

    ``SIP(A, B)`` is the fraction of the points where A's point-wise score is *strictly* lower
    (better) than B's (Pernot & Savin 2020). Ties count for neither model, so
    ``SIP(A, B) + SIP(B, A) <= 1`` and ``SIP(A, A) = 0``.

    Parameters
    ----------
    scores : numpy.ndarray
        ``(K, n)`` point-wise scores (lower is better).

    Returns
    -------
    numpy.ndarray
        ``(K, K)``, ``[a, b]`` = SIP(a, b).

    Examples
    --------
    >>> sip(np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 1.0]])).round(3).tolist()
    [[0.0, 0.333], [0.333, 0.0]]
    """
    scores = np.asarray(scores, dtype=np.float64)
    return _better(scores).sum(axis=0) / scores.shape[1]


def sip_replicates(scores: np.ndarray, n_boot: int = defaults.N_BOOT,
                   seed: int = defaults.SEED, *, layout: Any = None,
                   purpose: str = SIP_PURPOSE) -> np.ndarray:
    """Paired-bootstrap replicates of the SIP matrix.

    Replicate ``r`` draws ``n`` point indices with replacement from the counter-based stream
    ``(stream_key(seed, "sip"), r)`` (:func:`xuqcal.core.kernels.fill_counts_block`, a block
    of replicates per call) and applies the same resample to every model, so that the pairing
    of the points is kept. The replicates
    are therefore reproducible for a seed, independent of how they are split into blocks, and
    each replicate is an exact count (integer sums), the same whatever the summation order.

    With ``layout`` (a :class:`xuqcal.analysis.dependent.RowLayout` of the ``n`` points), the
    resamples are dependent ones, whole groups or blocks of consecutive points
    (:meth:`~xuqcal.analysis.dependent.RowLayout.fill` from the streams ``(stream_key(seed,
    purpose), r)``), applied to every model alike.

    Parameters
    ----------
    scores : numpy.ndarray
        ``(K, n)`` point-wise scores.
    n_boot : int
        Number of replicates.
    seed : int
        Seed of the streams.
    layout : RowLayout, optional
        The dependent resample of the points (default: independent points).
    purpose : str
        The purpose of the streams (:func:`xuqcal.core.random.stream_key`); ``"sip"`` by
        default.

    Returns
    -------
    numpy.ndarray
        ``(K, K, n_boot)``.

    Examples
    --------
    >>> s = np.array([[1.0, 2.0, 3.0, 0.0], [2.0, 2.0, 1.0, 1.0]])
    >>> reps = sip_replicates(s, 100, seed=0)
    >>> reps.shape, bool((reps[0, 0] == 0).all())
    ((2, 2, 100), True)
    """
    scores = np.asarray(scores, dtype=np.float64)
    k, n = scores.shape
    key = _random.stream_key(check_seed(seed), purpose)
    better = _better(scores).reshape(n, k * k).astype(np.float64)
    out = np.empty((n_boot, k * k), dtype=np.float64)
    block = max(1, min(n_boot, _BLOCK_ELEMENTS // max(n, 1)))
    if layout is not None:  # the rows of the layout: row_of_point[i] is point i's
        by_row = np.empty_like(better)
        by_row[layout.row_of_point] = better
        row_counts = np.empty((block, n), dtype=np.int32)
        for start in range(0, n_boot, block):
            stop = min(start + block, n_boot)
            layout.fill(key, start, stop, row_counts[: stop - start])
            out[start:stop] = row_counts[: stop - start].astype(np.float64) @ by_row
        return (out / n).T.reshape(k, k, n_boot)
    counts = np.empty((block, n), dtype=np.int64)
    weights = np.empty((block, n), dtype=np.float64)
    for start in range(0, n_boot, block):
        stop = min(start + block, n_boot)
        fill_counts_block(key, start, stop, counts)  # replicate r: row r - start
        weights[: stop - start] = counts[: stop - start]
        # integer-valued products and sums below 2**53: exact, whatever the BLAS order
        out[start:stop] = weights[: stop - start] @ better
    return (out / n).T.reshape(k, k, n_boot)


def sip_bootstrap(scores: np.ndarray, n_boot: int = defaults.N_BOOT,
                  level: float = defaults.LEVEL, seed: int = defaults.SEED, *,
                  layout: Any = None, purpose: str = SIP_PURPOSE
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The SIP matrix and its paired-bootstrap percentile interval at ``level``.

    Parameters
    ----------
    scores : numpy.ndarray
        ``(K, n)`` point-wise scores.
    n_boot : int
        Bootstrap replicates (at least ``ceil(2 / (1 - level))``).
    level : float
        Confidence level of the interval.
    seed : int
        Seed of the streams (:func:`sip_replicates`).
    layout, purpose
        A dependent resample of the points and the purpose of its streams
        (:func:`sip_replicates`).

    Returns
    -------
    sip, low, high : numpy.ndarray
        ``(K, K)`` each; the diagonal is 0.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> s = rng.normal(size=(2, 200)) + np.array([[0.0], [0.5]])
    >>> value, low, high = sip_bootstrap(s, 200, seed=0)
    >>> bool(low[0, 1] <= value[0, 1] <= high[0, 1]), float(value[1, 1])
    (True, 0.0)
    """
    level = check_level(level)
    n_boot = check_replicates(n_boot, level)
    scores = np.asarray(scores, dtype=np.float64)
    value = sip(scores)
    if layout is None:
        replicates = sip_replicates(scores, n_boot, seed)
    else:
        replicates = sip_replicates(scores, n_boot, seed, layout=layout, purpose=purpose)
    low, high = percentile_interval(replicates, level)
    return value, np.asarray(low), np.asarray(high)

