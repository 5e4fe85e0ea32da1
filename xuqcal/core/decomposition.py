"""Score decompositions of the variance forecast ``v = uE²`` of ``y = E²`` (no labels).

**CORP decomposition** (Dimitriadis, Gneiting & Jordan 2021, "Stable reliability diagrams for
probabilistic classifiers", PNAS 118; the decomposition of consistent scores of Gneiting & Resin
2023 and Dimitriadis et al.). The recalibrated forecast ``v̂`` is the isotonic (non-decreasing)
regression of ``y`` on ``v`` (pool-adjacent-violators, :func:`isotonic_recalibration`); the
climatological (marginal) forecast is the constant ``ȳ = mean(y)``. For a scoring function
``s`` with mean score ``S = mean s(v, y)``:

- ``S_rc = mean s(v̂, y)``, ``S_mg = mean s(ȳ, y)``;
- miscalibration ``MCB = S − S_rc``, discrimination ``DSC = S_mg − S_rc``, uncertainty
  ``UNC = S_mg``, and ``S = MCB − DSC + UNC`` (an identity, exact up to rounding).

Two scoring functions consistent for the mean of ``y`` (``uE²`` forecasts the mean of ``E²``):

- ``squared_error``: ``s(v, y) = (v − y)²``;
- ``qlike``: ``s(v, y) = y / v + ln v``, the Gaussian negative log-likelihood up to an affine
  map: ``−ln φ(E; 0, uE²) = ½ (ln 2π + qlike)``, so the NLL's decomposition is that of
  ``qlike`` halved (its UNC shifted by ``½ ln 2π``). xuqcal reports ``qlike`` as written here.

Both are Bregman scores, for which the isotonic fit is the recalibration of CORP's theorem: it
minimises the mean score over all non-decreasing maps of ``v`` simultaneously for every such
score, so ``MCB ≥ 0`` and ``DSC ≥ 0`` (the constant ``ȳ`` is a non-decreasing map), and
``MCB = 0`` exactly when ``v`` is its own isotonic recalibration.

Ties of ``v`` are pooled before the fit (points with equal ``v`` get the mean of their ``y`` as
one observation weighted by their count), so points with equal ``v`` get equal ``v̂``.

**Pernot's split of the NLL** (METHODS §2: ``nll = ½ (<Z²> + <ln uE²> + ln 2π)``): a
calibration term ``½ <Z²>`` (half the ZMS; ½ for calibrated data), a sharpness term
``½ <ln uE²>`` (small for small uncertainties) and the constant ``½ ln 2π``
(:func:`nll_split`).

All sums are exact-rounded (:func:`math.fsum`) in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from xuqcal._lazy import lazy_module

optimize = lazy_module("scipy.optimize")

__all__ = [
    "LOG_2PI",
    "SCORES",
    "Decomposition",
    "NLLSplit",
    "TieGroups",
    "check_score",
    "corp_decomposition",
    "isotonic_recalibration",
    "mean_score",
    "nll_split",
    "score_formula",
    "score_values",
]

#: The scoring functions of the decomposition, by name.
SCORES = ("squared_error", "qlike")
#: ln 2π, the constant of the Gaussian NLL.
LOG_2PI = math.log(2.0 * math.pi)

_FORMULAS = {"squared_error": "s(v, y) = (v - y)^2", "qlike": "s(v, y) = y / v + ln v"}


def check_score(name: object, parameter: str = "scores") -> str:
    """A score name of :data:`SCORES`.

    Examples
    --------
    >>> check_score("qlike")
    'qlike'
    >>> check_score("crps")
    Traceback (most recent call last):
    ValueError: scores: unknown score 'crps'; choose from 'squared_error', 'qlike'
    """
    if not isinstance(name, str) or name not in SCORES:
        raise ValueError(f"{parameter}: unknown score {name!r}; choose from "
                         f"{', '.join(map(repr, SCORES))}")
    return name


def score_formula(name: str) -> str:
    """The formula of the scoring function ``name`` (for attributes and legends).

    Examples
    --------
    >>> score_formula("qlike")
    's(v, y) = y / v + ln v'
    """
    return _FORMULAS[check_score(name, "score")]


def _as_vectors(v: object, y: object) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(v, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if v.ndim != 1 or y.shape != v.shape:
        raise ValueError(f"v, y: expected two 1-D arrays of one length, got shapes {v.shape} "
                         f"and {y.shape}")
    if v.size == 0:
        raise ValueError("v: no points")
    if not np.all(np.isfinite(v)) or not np.all(v > 0):
        raise ValueError(f"v: the forecast variances must be finite and positive "
                         f"({int(np.count_nonzero(~(np.isfinite(v) & (v > 0))))} of {v.size} "
                         "are not)")
    if not np.all(np.isfinite(y)) or not np.all(y >= 0):
        raise ValueError(f"y: the squared errors must be finite and non-negative "
                         f"({int(np.count_nonzero(~(np.isfinite(y) & (y >= 0))))} of {y.size} "
                         "are not)")
    return v, y


def isotonic_recalibration(v: object, y: object) -> np.ndarray:
    """The isotonic (non-decreasing) least-squares regression ``v̂`` of ``y`` on ``v``.

    Pool-adjacent-violators (:func:`scipy.optimize.isotonic_regression`) on the points sorted
    by ``v``, with the points of equal ``v`` pooled first (their mean ``y``, weighted by their
    count): points with equal ``v`` get equal ``v̂``.

    Parameters
    ----------
    v : array_like
        Forecast variances ``uE²`` (finite, positive), 1-D.
    y : array_like
        Squared errors ``E²`` (finite, non-negative), same length.

    Returns
    -------
    numpy.ndarray
        ``v̂`` in the order of the input points.

    Examples
    --------
    >>> isotonic_recalibration([1.0, 4.0, 9.0, 16.0], [4.0, 1.0, 9.0, 16.0]).tolist()
    [2.5, 2.5, 9.0, 16.0]
    >>> isotonic_recalibration([1.0, 1.0, 2.0], [0.0, 2.0, 3.0]).tolist()  # a tie pooled
    [1.0, 1.0, 3.0]
    """
    v, y = _as_vectors(v, y)
    ties = TieGroups.of(v)
    return ties.expand(ties.fit(y[ties.order]))


@dataclass(frozen=True)
class TieGroups:
    """The points sorted by ``v`` (stable) and grouped by equal ``v``: what every isotonic fit
    of one forecast shares (the consistency band refits it for many ``y``).

    Attributes
    ----------
    order : numpy.ndarray
        The stable sort order of ``v``.
    start : numpy.ndarray
        The first sorted position of each group.
    counts : numpy.ndarray
        The number of points of each group (float64: the weights of the fit).
    """

    order: np.ndarray
    start: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, v: np.ndarray) -> TieGroups:
        """The groups of the forecast ``v``."""
        order = np.argsort(v, kind="stable")
        _, start, counts = np.unique(v[order], return_index=True, return_counts=True)
        return cls(order, start, counts.astype(np.float64))

    def fit(self, y_sorted: np.ndarray) -> np.ndarray:
        """The isotonic fit of ``y`` (in the sorted order) per group."""
        if self.start.size == y_sorted.size:
            means = y_sorted
        else:
            means = np.add.reduceat(y_sorted, self.start) / self.counts
        return np.asarray(optimize.isotonic_regression(
            means, weights=self.counts, increasing=True).x, dtype=np.float64)

    def sorted_values(self, fitted: np.ndarray) -> np.ndarray:
        """Per-group values repeated over the sorted points."""
        return np.repeat(fitted, self.counts.astype(np.int64))

    def expand(self, fitted: np.ndarray) -> np.ndarray:
        """Per-group values in the order of the input points."""
        out = np.empty(self.order.size)
        out[self.order] = self.sorted_values(fitted)
        return out


def score_values(name: str, v: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The pointwise score ``s(v, y)`` of the scoring function ``name`` (:data:`SCORES`).

    A forecast ``v = 0`` (a recalibrated block whose squared errors are all 0) gives
    ``qlike = −∞`` where ``y = 0`` (the limit of ``y / v + ln v``) and ``+∞`` elsewhere.

    Examples
    --------
    >>> score_values("squared_error", np.array([1.0, 2.0]), np.array([3.0, 2.0])).tolist()
    [4.0, 0.0]
    >>> score_values("qlike", np.array([1.0]), np.array([2.0])).tolist()
    [2.0]
    """
    check_score(name, "score")
    v = np.asarray(v, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if name == "squared_error":
        return (v - y) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        values = y / v + np.log(v)
    return np.where(v == 0, np.where(y == 0, -np.inf, np.inf), values)


def mean_score(name: str, v: np.ndarray, y: np.ndarray) -> float:
    """The mean score ``mean s(v, y)``, summed exactly (:func:`math.fsum`).

    Examples
    --------
    >>> mean_score("squared_error", np.array([1.0, 4.0]), np.array([4.0, 1.0]))
    9.0
    """
    values = score_values(name, v, y)
    if not np.all(np.isfinite(values)):
        with np.errstate(invalid="ignore"):
            return float(np.sum(values)) / values.size
    return math.fsum(values) / values.size


@dataclass(frozen=True)
class Decomposition:
    """The CORP decomposition of one mean score: ``score = mcb - dsc + unc``.

    Attributes
    ----------
    score : float
        ``S = mean s(v, y)``.
    mcb, dsc, unc : float
        Miscalibration ``S - S_rc``, discrimination ``S_mg - S_rc`` and uncertainty ``S_mg``.
    recalibrated : float
        ``S_rc = mean s(v̂, y)``.
    """

    score: float
    mcb: float
    dsc: float
    unc: float
    recalibrated: float


def corp_decomposition(v: object, y: object, scores: tuple[str, ...] = SCORES,
                       recalibrated: np.ndarray | None = None) -> dict[str, Decomposition]:
    """The CORP decomposition of the mean scores ``scores`` of the forecast ``v`` of ``y``.

    Parameters
    ----------
    v : array_like
        Forecast variances ``uE²`` (finite, positive), 1-D.
    y : array_like
        Squared errors ``E²`` (finite, non-negative).
    scores : tuple of str
        Names of :data:`SCORES`.
    recalibrated : numpy.ndarray, optional
        ``v̂`` when already computed (:func:`isotonic_recalibration` of ``v`` and ``y``).

    Returns
    -------
    dict of str to Decomposition

    Examples
    --------
    >>> d = corp_decomposition([1.0, 4.0, 9.0, 16.0], [4.0, 1.0, 9.0, 16.0])["squared_error"]
    >>> d.score, d.mcb, d.dsc, d.unc  # 9/2, 27/8, 249/8, 129/4
    (4.5, 3.375, 31.125, 32.25)
    """
    v, y = _as_vectors(v, y)
    names = [check_score(s) for s in scores]
    fitted = isotonic_recalibration(v, y) if recalibrated is None else np.asarray(
        recalibrated, dtype=np.float64)
    climate = np.full_like(y, math.fsum(y) / y.size)
    out = {}
    for name in names:
        s = mean_score(name, v, y)
        s_rc = mean_score(name, fitted, y)
        s_mg = mean_score(name, climate, y)
        with np.errstate(invalid="ignore"):
            out[name] = Decomposition(score=s, mcb=s - s_rc, dsc=s_mg - s_rc, unc=s_mg,
                                      recalibrated=s_rc)
    return out


@dataclass(frozen=True)
class NLLSplit:
    """Pernot's split of the mean Gaussian NLL: ``nll = calibration + sharpness + constant``.

    Attributes
    ----------
    nll : float
        ``½ (<Z²> + <ln uE²> + ln 2π)`` (METHODS §2).
    calibration : float
        ``½ <Z²>`` (half the ZMS: ½ when calibrated).
    sharpness : float
        ``½ <ln uE²>``.
    constant : float
        ``½ ln 2π``.
    """

    nll: float
    calibration: float
    sharpness: float
    constant: float


def nll_split(E: object, uE: object) -> NLLSplit:
    """Pernot's split of the mean Gaussian NLL of errors ``E`` with uncertainties ``uE``.

    Examples
    --------
    >>> s = nll_split([1.0, -1.0], [1.0, 1.0])
    >>> s.calibration, s.sharpness, round(s.nll - s.constant, 12)
    (0.5, 0.0, 0.5)
    """
    E = np.asarray(E, dtype=np.float64)
    uE = np.asarray(uE, dtype=np.float64)
    if E.ndim != 1 or uE.shape != E.shape or E.size == 0:
        raise ValueError(f"E, uE: expected two non-empty 1-D arrays of one length, got shapes "
                         f"{E.shape} and {uE.shape}")
    if not np.all(np.isfinite(E)):
        raise ValueError("E: the errors must be finite")
    if not (np.all(np.isfinite(uE)) and np.all(uE > 0)):
        raise ValueError("uE: the uncertainties must be finite and positive")
    n = E.size
    with np.errstate(over="ignore"):
        z2 = (E / uE) ** 2
    if not np.all(np.isfinite(z2)):
        raise ValueError("E, uE: Z² = (E / uE)² overflows the float64 range")
    calibration = 0.5 * math.fsum(z2) / n
    sharpness = 0.5 * math.fsum(2.0 * np.log(uE)) / n
    constant = 0.5 * LOG_2PI
    return NLLSplit(nll=math.fsum((calibration, sharpness, constant)),
                    calibration=calibration, sharpness=sharpness, constant=constant)
