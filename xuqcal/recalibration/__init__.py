"""Post-hoc recalibration of prediction uncertainties (METHODS §8).

Four recalibrators, each with a **fit / apply** split:

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
``conformal``
    Normalised split conformal intervals (:mod:`xuqcal.recalibration.conformal`): the
    ``⌈(n + 1) p⌉``-th smallest training score ``|E|/uE`` is the quantile ``q_p`` of each
    coverage level ``p`` (``coverage_levels``); applying gives the half-widths ``q_p uE`` over
    ``coverage_level`` and the uE ``q_p uE / z_p`` of the first level. With ``by=`` one
    quantile per learned bin (Mondrian), bins as for ``bvs``. :func:`conformal_coverage`
    evaluates the intervals (PICP per level, overall and per bin, with Wilson intervals).

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
  *every* point, training or new, is assigned by :func:`xuqcal.analysis.binning.apply_bins`
  (the first bin whose upper limit is >= its value; the first and last bins are open-ended).
  The factors
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

from xuqcal.recalibration.common import BINNINGS, DEFAULT_FEATURES, LOSSES, METHODS
from xuqcal.recalibration.conformal import conformal_coverage
from xuqcal.recalibration.recalibrator import (
    Recalibrator,
    apply,
    factor_lines,
    fit,
    learned_bins,
)
from xuqcal.recalibration.scores import evaluate, evaluation_table, scan, scores

__all__ = [
    "BINNINGS",
    "DEFAULT_FEATURES",
    "LOSSES",
    "METHODS",
    "Recalibrator",
    "apply",
    "conformal_coverage",
    "evaluate",
    "evaluation_table",
    "factor_lines",
    "fit",
    "learned_bins",
    "scan",
    "scores",
]
