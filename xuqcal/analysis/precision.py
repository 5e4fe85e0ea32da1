"""Precision-driven Monte Carlo: ``n_boot="auto"`` and ``n_mc="auto"``.

A fixed count of 10 000 bootstrap replicates and synthetic sets is far more than most verdicts
need, and at M = 10⁶ points each replicate costs a pass over the data. With ``"auto"`` the
replicates are computed in rounds, and the run stops as soon as the Monte Carlo standard error
of every ζ-score that decides a verdict is at most ``mc_precision``
(:data:`~xuqcal.core.defaults.MC_PRECISION`) — absolute for ``|ζ| ≤ 1``, relative to ``|ζ|``
beyond, where the verdict is far from changing — or at the ceiling (``defaults.N_BOOT``,
``defaults.N_MC``). The standard error of a ζ is propagated from those of the quantities it is
built from, each estimated from the replicates themselves:

* a BCa bound: the standard error of the type-7 quantile at the bound's BCa level ``α``, from
  the order statistics around ``n α`` (distribution-free), floored by its normal-theory value
  (:func:`quantile_mc_se`);
* a simulated mean: ``sd / sqrt(n)``; every simulated mean is also held to ``mc_precision``
  times the half-width of its simulated 95 % range (the generator-sensitivity check compares
  the means of the generators within ``U = 2 se``);
* a simulated 2.5 / 97.5 % quantile, when a ``Sim2`` scheme decides (a known generator, or
  ``simulated_scheme="Sim2"``): as a BCa bound.

Only the ζ that decide verdicts count: the ``BS`` ζ of the statistics with a predefined
reference, and the deciding ``Sim`` (or ``Sim2``) ζ of the others — not the interval of a
statistic that is *not usable* because its references differ between generators, whose
reported ``Sim`` and ``Sim2`` ζ may then move more between two counts.

Replicate ``r`` still draws from the stream ``(seed, purpose, r)`` only, whichever round
computes it: a run that stops at ``n`` replicates is the prefix of the fixed-count run, and its
result is bit-identical to the fixed-count run with ``n_boot = n`` (``n_mc = n``), for any
chunking and scheduler.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence

import dask
import numpy as np
import xarray as xr
from scipy import special

from xuqcal.analysis.resampling import default_chunk
from xuqcal.core import defaults
from xuqcal.core.checks import check_fraction
from xuqcal.core.intervals import (
    bca_levels,
    bias_correction,
    quantile_sorted,
    zeta,
)
from xuqcal.core.summaries import U_REF_FACTOR

#: The value of ``n_boot`` / ``n_mc`` that asks for a precision-driven count.
AUTO = "auto"


def is_auto(count: object) -> bool:
    """Whether a replicate count asks for the precision-driven rule.

    Examples
    --------
    >>> is_auto("auto"), is_auto(10_000)
    (True, False)
    """
    return isinstance(count, str) and count == AUTO


def check_precision(precision: object, name: str = "mc_precision") -> float:
    """A target precision: a fraction in (0, 1). Any such fraction is accepted: one too fine
    to reach (``1e-300``) runs to the ceiling of replicates, and the result reports the
    precision reached (``mc_precision_reached``).

    Examples
    --------
    >>> check_precision(0.05)
    0.05
    >>> check_precision(0)
    Traceback (most recent call last):
    ...
    ValueError: mc_precision: expected a fraction in (0, 1) of the interval half-width, got 0
    """
    return check_fraction(precision, name, "a fraction in (0, 1) of the interval half-width")


def quantile_mc_se(sorted_values: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """Monte Carlo standard error of the ``probabilities`` quantiles of sorted replicates.

    The larger of two estimates. Distribution-free: the order statistics ``x_(j)``, ``x_(k)``
    with ``j, k = n p ∓ sqrt(n p (1 - p))`` bracket the quantile with probability about 68 %
    (the binomial count of replicates below it has that standard deviation), so
    ``(x_(k) - x_(j)) / 2`` estimates its standard error. In the tails of a few hundred
    replicates that bracket spans a handful of points and is noisy: it can fall below half of
    the actual standard error, which let ``"auto"`` stop early (``zm`` at M = 2·10⁶). So it
    is floored by the normal-theory standard error
    ``sd sqrt(p (1 - p) / n) / φ(Φ⁻¹(p))`` (``sd`` of the replicates, stable at any ``n``),
    for ``1/n <= p <= 1 - 1/n`` (beyond, the quantile is an extreme replicate and the
    bracket alone is used, never narrower than two neighbouring replicates).
    ``sorted_values`` is sorted along the last axis; ``probabilities`` has one row of
    probabilities per row of it (last axis: the probabilities).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.sort(rng.standard_normal((1, 20_000)), axis=-1)
    >>> se = quantile_mc_se(x, np.array([[0.025, 0.975]]))
    >>> bool(np.all(np.abs(se / (np.sqrt(0.025 * 0.975 / 20_000) / 0.0584) - 1) < 0.15))
    True
    """
    n = sorted_values.shape[-1]
    p = np.clip(np.nan_to_num(np.asarray(probabilities, dtype=np.float64), nan=0.5), 0.0, 1.0)
    spread = np.sqrt(n * p * (1.0 - p))
    low = np.clip(np.floor(n * p - spread).astype(np.int64), 0, n - 1)
    high = np.clip(np.ceil(n * p + spread).astype(np.int64), 0, n - 1)
    # in the upper tail both ends can clip to the largest replicate (n (1 - p) below about
    # 0.4), which made the standard error 0 and "auto" stop as if settled: the bracket keeps
    # at least the gap between two neighbouring replicates, as it does in the lower tail
    low = np.maximum(np.minimum(low, high - 1), 0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        bracket = 0.5 * (np.take_along_axis(sorted_values, high, axis=-1)
                         - np.take_along_axis(sorted_values, low, axis=-1))
        sd = np.std(sorted_values, axis=-1, ddof=1)[..., np.newaxis] if n > 1 else \
            np.zeros((*sorted_values.shape[:-1], 1))
        inner = (p >= 1.0 / n) & (p <= 1.0 - 1.0 / n)
        normal = sd * np.sqrt(p * (1.0 - p) / n) / _normal_density_at_quantile(p)
        return np.where(inner & np.isfinite(normal), np.fmax(bracket, normal), bracket)


def _normal_density_at_quantile(p: np.ndarray) -> np.ndarray:
    """``φ(Φ⁻¹(p))``, 0 at ``p`` = 0 or 1."""
    z = special.ndtri(p)
    return np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def zeta_precision_ratio(se_zeta: np.ndarray, zeta_value: np.ndarray,
                         precision: float) -> np.ndarray:
    """``se(ζ) / (precision max(1, |ζ|))``: at most 1 when the Monte Carlo standard error of a
    ζ-score is at most ``precision`` (absolute) for ``|ζ| ≤ 1`` and at most ``precision |ζ|``
    (relative) beyond, where the verdict ``|ζ| ≤ 1`` is far from changing.

    Examples
    --------
    >>> zeta_precision_ratio(np.array([0.01, 0.2]), np.array([0.5, 4.0]), 0.05).round(6).tolist()
    [0.2, 1.0]
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        return se_zeta / (precision * np.fmax(1.0, np.abs(zeta_value)))


def _side_distance(estimate, reference, low, high):
    """The distance ``hi - θ`` (θ ≤ reference) or ``θ - lo`` that divides a ζ-score, the
    index (0: lower, 1: upper) of that bound, and whether the estimate lies inside."""
    upper = estimate <= reference
    distance = np.where(upper, high - estimate, estimate - low)
    return distance, upper.astype(np.int64), (low <= estimate) & (estimate <= high)


def bootstrap_shortfall(replicates: np.ndarray, estimate: np.ndarray,
                        acceleration_value: np.ndarray, level: float,
                        reference_value: np.ndarray, u_ref: np.ndarray,
                        precision: float) -> np.ndarray:
    """Per statistic, :func:`zeta_precision_ratio` of the ζ-score that compares the BCa
    interval with ``reference_value`` (expanded uncertainty ``u_ref``; ``BS``: the predefined
    value and 0, ``Sim``: the simulated mean and 2 se), through the Monte Carlo standard error
    of the bound that divides it (:func:`quantile_mc_se` at the bound's BCa level):
    ``se(ζ) = |θ - ref| d se(bound) / (d² + U²)^{3/2}``, ``d`` the distance from the
    estimate to that bound. When the estimate lies outside its own interval (ζ unreliable, see
    :func:`xuqcal.analysis.validation.estimate_outside_interval`), ``d`` is the half-width.

    ``replicates`` is ``(statistic, replicate)``; ``acceleration_value`` is the BCa
    acceleration of each statistic (:func:`~xuqcal.core.intervals.acceleration` of its
    jackknife values, computed once by the caller: it does not change between rounds). An
    interval that is undefined whatever the
    count (a statistic NaN on some resamples) or degenerate (every replicate on one side of
    the estimate: infinite ``z0``, NaN bounds) gives 0: more replicates would not make it
    precise (it is reported as such, with its warning). A NaN reference gives 0.
    """
    replicates = np.ascontiguousarray(replicates)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        z0 = bias_correction(replicates, estimate)
        alphas = bca_levels(z0, acceleration_value, level)
        ordered = np.sort(replicates, axis=-1)
        bounds = quantile_sorted(ordered, alphas)
        se_bounds = quantile_mc_se(ordered, alphas)
        low, high = bounds[..., 0], bounds[..., 1]
        distance, side, inside = _side_distance(estimate, reference_value, low, high)
        distance = np.where(inside, distance, 0.5 * (high - low))
        se_bound = np.take_along_axis(se_bounds, side[..., np.newaxis], axis=-1)[..., 0]
        spread = np.hypot(distance, u_ref)
        zeta_value = zeta(estimate, reference_value, low, high, u_ref)
        se_zeta = np.abs(estimate - reference_value) * distance * se_bound / spread**3
        ratio = zeta_precision_ratio(se_zeta, zeta_value, precision)
    settled = (~np.isfinite(replicates).all(axis=-1) | ~np.isfinite(z0)
               | np.isnan(reference_value) | (se_zeta == 0.0))
    return np.where(settled, 0.0, ratio)


def reference_shortfall(values: np.ndarray, precision: float, *, estimate: np.ndarray,
                        low: np.ndarray, high: np.ndarray, scheme: np.ndarray) -> np.ndarray:
    """Per statistic and generator, the ratio (≤ 1: precise enough) of the Monte Carlo
    standard errors of the simulated quantities to their targets.

    Every simulated mean: ``se = sd / sqrt(n)`` at most ``precision`` times the half-width of
    the simulated 95 % range (the generator-sensitivity check compares means within their
    ``U = 2 se``). And, for the generator whose scheme decides the verdict (``scheme`` per
    statistic and generator: ``"Sim"``, ``"Sim2"`` or ``""``), :func:`zeta_precision_ratio`
    of its ζ: ``Sim`` (the mean against the bootstrap interval ``[low, high]``):
    ``se(ζ) = se / sqrt(d² + U²)``; ``Sim2`` (the estimate against the simulated range):
    ``se(ζ) = sqrt(se² + ζ² se(q)²) / |mean - q|``, ``q`` the quantile on the estimate's side.

    ``values`` is ``(statistic, generator, replicate)``. Statistics undefined on some
    synthetic sets give 0 (nothing to gain).
    """
    values = np.ascontiguousarray(values)
    n = values.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ordered = np.sort(values, axis=-1)
        p = np.broadcast_to([0.025, 0.975], (*values.shape[:-1], 2))
        q = quantile_sorted(ordered, p)
        range_half = 0.5 * (q[..., 1] - q[..., 0])
        mean = values.mean(axis=-1)
        se = values.std(axis=-1, ddof=1) / math.sqrt(n)
        ratio = se / (precision * range_half)
        theta = np.asarray(estimate, dtype=np.float64)[:, np.newaxis]
        # Sim: the simulated mean against the bootstrap interval of the data
        u_ref = U_REF_FACTOR * se
        distance, _, inside = _side_distance(theta, mean, low[:, np.newaxis],
                                             high[:, np.newaxis])
        distance = np.where(inside, distance, 0.5 * (high - low)[:, np.newaxis])
        sim = zeta_precision_ratio(se / np.hypot(distance, u_ref),
                                   zeta(theta, mean, low[:, np.newaxis], high[:, np.newaxis],
                                        u_ref), precision)
        # Sim2: the estimate against the simulated range
        side = (theta > mean).astype(np.int64)
        q_side = np.take_along_axis(q, side[..., np.newaxis], axis=-1)[..., 0]
        se_q = np.take_along_axis(quantile_mc_se(ordered, p), side[..., np.newaxis],
                                  axis=-1)[..., 0]
        zeta2 = (theta - mean) / np.abs(mean - q_side)
        sim2 = zeta_precision_ratio(np.hypot(se, zeta2 * se_q) / np.abs(mean - q_side),
                                    zeta2, precision)
        ratio = np.fmax(ratio, np.where(scheme == "Sim", sim, np.where(scheme == "Sim2", sim2,
                                                                         0.0)))
    settled = ~np.isfinite(values).all(axis=-1) | ((se == 0.0) & (range_half == 0.0))
    return np.where(settled, 0.0, ratio)


def next_count(count: int, shortfall: float, ceiling: int) -> int:
    """The replicate count of the next round: the count at which the standard errors, which
    shrink as ``1 / sqrt(count)``, are projected to meet the target (``count shortfall²``), with a
    10 % margin, rounded up to a hundred; at least one more round of
    :data:`~xuqcal.core.defaults.AUTO_STEP`; at most ``ceiling``.

    Examples
    --------
    >>> next_count(500, 2.0, 10_000), next_count(500, 1.01, 10_000), next_count(9000, 3.0, 10_000)
    (2200, 750, 10000)
    """
    # a shortfall so large that the projection passes the ceiling gives the ceiling without
    # squaring it (shortfall**2 overflows for a tiny mc_precision, e.g. 1e-300)
    wanted = (math.ceil(1.1 * count * shortfall**2 / 100.0) * 100
              if np.isfinite(shortfall) and shortfall * shortfall < ceiling else ceiling)
    return int(min(ceiling, max(wanted, count + defaults.AUTO_STEP)))


class Rounds:
    """Replicates computed in rounds: all ``count`` of them at once for a fixed count; for
    ``"auto"``, a first round of ``first`` and then, while :meth:`grow` is given a shortfall
    above 1, rounds up to the count at which the target is projected to be met
    (:func:`next_count`), never beyond ``ceiling``.

    Two ways to grow, one rule:

    * ``statistics=None`` (all together, e.g. the synthetic sets, whose one pass serves every
      statistic): ``compute(start, stop)`` returns the values of replicates
      ``start .. stop - 1`` (replicate axis last); ``values`` holds all of them so far and
      ``n`` their number; :meth:`grow` takes the shortfalls of any shape, and their largest
      decides.
    * ``statistics=k`` (**per statistic**, the bootstrap): ``compute(rows, start, stop)``
      returns the replicates ``start .. stop - 1`` of the statistics ``rows``
      (``len(rows) × (stop - start)``); ``values[i]`` holds the replicates of statistic ``i``
      so far and ``n[i]`` their number; :meth:`grow` takes one shortfall per statistic and
      grows only those above 1, each to its own projected count. Statistics at the same count
      grow together (one pass over the data serves them all; a statistic's replicates do not
      depend on which others are computed with it).

    ``worst`` is the largest shortfall last given to :meth:`grow` (NaN ignored).

    Examples
    --------
    >>> counting = lambda start, stop: np.arange(start, stop, dtype=float)[np.newaxis]
    >>> rounds = Rounds(counting, "auto", ceiling=10_000, first=100)
    >>> while rounds.grow(np.array([np.sqrt(400 / rounds.n)])):  # se ~ 1 / sqrt(n)
    ...     pass
    >>> rounds.n, rounds.worst <= 1, rounds.values.shape
    (500, True, (1, 500))

    Per statistic, only the second one (short of precision) grows:

    >>> calls = []
    >>> def per_statistic(rows, start, stop):
    ...     calls.append((rows, start, stop))
    ...     return np.tile(np.arange(start, stop, dtype=float), (len(rows), 1))
    >>> rounds = Rounds(per_statistic, "auto", ceiling=10_000, first=100, statistics=2)
    >>> while rounds.grow(np.array([0.5, np.sqrt(400 / rounds.n[1])])):
    ...     pass
    >>> rounds.n.tolist(), calls[1:]
    ([100, 500], [([1], 100, 500)])
    """

    def __init__(self, compute: Callable[..., np.ndarray], count: int | str, *, ceiling: int,
                 first: int = defaults.AUTO_FIRST, statistics: int | None = None,
                 initial: np.ndarray | None = None) -> None:
        self.together = statistics is None
        # all together: one group, whose values are those of compute(start, stop)
        self._compute = ((lambda rows, start, stop: compute(start, stop)[np.newaxis])
                         if self.together else compute)
        self.auto = is_auto(count)
        self.ceiling = int(ceiling) if self.auto else int(count)
        start = self.first_count(count, ceiling=ceiling, first=first)
        rows = list(range(1 if self.together else statistics))
        # ``initial``: the first round computed already (what compute would return for it)
        block = (self._compute(rows, 0, start) if initial is None else
                 (initial[np.newaxis] if self.together else initial))
        self._values = [block[i] for i in rows]
        self._n = np.full(len(rows), start, dtype=np.int64)
        self.worst = 0.0

    @staticmethod
    def first_count(count: int | str, *, ceiling: int, first: int = defaults.AUTO_FIRST) -> int:
        """The replicates of the first round: ``first`` (at most ``ceiling``) for ``"auto"``,
        else the fixed ``count``.

        Examples
        --------
        >>> Rounds.first_count("auto", ceiling=10_000, first=2000), Rounds.first_count(
        ...     500, ceiling=10_000)
        (2000, 500)
        """
        return min(first, int(ceiling)) if is_auto(count) else int(count)

    @property
    def values(self) -> np.ndarray | list[np.ndarray]:
        """The replicates so far: one array (all together) or one per statistic."""
        return self._values[0] if self.together else self._values

    @property
    def n(self) -> int | np.ndarray:
        """The number of replicates so far: one (all together) or one per statistic."""
        return int(self._n[0]) if self.together else self._n

    def grow(self, shortfall: np.ndarray) -> bool:
        """Compute one more round for the statistics (all together: for all) whose
        ``shortfall`` (ratios, ≤ 1 when precise enough) asks for it, when the count is
        ``"auto"`` and below the ceiling; returns whether it did."""
        ratios = np.asarray(shortfall, dtype=np.float64)
        finite = ratios[~np.isnan(ratios)]
        self.worst = float(finite.max()) if finite.size else 0.0
        if self.together:
            ratios = np.array([self.worst])
        short = [i for i in range(len(self._values))
                 if ratios[i] > 1.0 and self._n[i] < self.ceiling]
        if not self.auto or not short:
            return False
        for count in sorted({int(self._n[i]) for i in short}):
            rows = [i for i in short if self._n[i] == count]
            stop = next_count(count, float(ratios[rows].max()), self.ceiling)
            block = self._compute(rows, count, stop)
            for k, i in enumerate(rows):
                self._values[i] = np.concatenate([self._values[i], block[k]], axis=-1)
                self._n[i] = stop
        return True


def round_chunks(size: int, chunks: int | None) -> int:
    """Replicates per Dask task in a round of ``size``: ``chunks`` when given, else the
    option ``replicate_chunk``, but small enough that a round gives every core of the machine
    :data:`ROUND_TASKS_PER_CORE` tasks (a first round of 500 replicates in one task would use
    one core), and large enough that a round has at most ``defaults.MAX_REPLICATE_TASKS``
    tasks. The chunking does not change any value.

    Examples
    --------
    >>> round_chunks(500, 100), round_chunks(100_000, None), round_chunks(10**8, None)
    (100, 1000, 100000)
    """
    if chunks is not None:
        return int(chunks)
    return default_chunk(size, ROUND_TASKS_PER_CORE)


#: Tasks per core of a precision-driven round (a round ends with its slowest task: with two
#: tasks a core, at M = 2e6 on 2 cores the first bootstrap round's four tasks took 4.4 s on
#: average and 5.9 s at most, one core idle meanwhile, in
#: ``benchmarks/measured/validate-timeline-2e6-eighth-session-end-issue26-2026-11-27.json``).
ROUND_TASKS_PER_CORE = 4


def computes_when_auto(function: Callable | None = None, *,
                       check: Callable[[dict, set], None] | None = None) -> Callable:
    """Run ``function`` (an analysis over ``ds`` with ``n_boot`` / ``n_mc``) on computed
    data when a count is ``"auto"``: a precision-driven run decides each round from the
    previous ones, so it cannot be one lazy graph; computing Dask-backed data first (once)
    keeps the lazy path of :func:`~xuqcal.analysis.slices.broadcast` from running the
    rounds of every slice twice (once for its layout). A count not given is its default
    (``"auto"`` for :func:`~xuqcal.validate`). ``check``, called with the
    arguments (defaults applied) and the names of those given before Dask-backed data are
    computed, raises for bad arguments, so that they are refused before any data are read."""
    if function is None:
        return functools.partial(computes_when_auto, check=check)
    signature = inspect.signature(function)

    @functools.wraps(function)
    def computing(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        ds = bound.arguments.get("ds")
        counts = {name: bound.arguments[name] if name in bound.arguments
                  else signature.parameters[name].default
                  for name in ("n_boot", "n_mc") if name in signature.parameters}
        auto = any(is_auto(count) for count in counts.values())
        if auto and isinstance(ds, xr.Dataset | xr.DataTree) and _is_lazy(ds):
            if check is not None:
                arguments = signature.bind(*args, **kwargs)
                arguments.apply_defaults()
                check(dict(arguments.arguments), set(bound.arguments))
            bound.arguments["ds"] = ds.compute()
        return function(*bound.args, **bound.kwargs)

    computing.__signature__ = signature
    return computing


def _is_lazy(ds) -> bool:
    nodes = ds.subtree if isinstance(ds, xr.DataTree) else [ds]
    return any(v.chunks is not None for node in nodes for v in node.variables.values())


def computed(array) -> np.ndarray:
    """A Dask array computed (by the active scheduler: threads, or a distributed client)."""
    return np.asarray(dask.compute(array)[0])


def count_or_ceiling(count: int | str, ceiling: int) -> int:
    """The largest number of replicates a run may compute: ``count``, or ``ceiling`` for
    ``"auto"``. A fixed ``count`` is returned as given, for the caller's check
    (:func:`~xuqcal.core.checks.check_count` refuses ``2.5`` or ``None``, which ``int``
    would truncate or fail on with a TypeError).

    Examples
    --------
    >>> count_or_ceiling("auto", 10_000), count_or_ceiling(500, 10_000)
    (10000, 500)
    """
    return ceiling if is_auto(count) else count  # a fixed count is checked by the caller


def capped_count(count: int | str, cap: int) -> int:
    """The replicates of an analysis run beside a validation with its own cap (the per-bin
    bootstraps of the local analyses, the band of a confidence curve): the validation's
    ``count``, at most ``cap`` (``cap`` for ``"auto"``).

    Examples
    --------
    >>> capped_count("auto", 2000), capped_count(300, 2000), capped_count(10_000, 2000)
    (2000, 300, 2000)
    """
    return min(int(count_or_ceiling(count, cap)), cap)


def describe(requested: Sequence[object]) -> str:
    """The ``precision_rule`` attribute of a result (empty when no count was ``"auto"``)."""
    if not any(is_auto(c) for c in requested):
        return ""
    return ("replicates in rounds until the Monte Carlo standard error of every zeta-score "
            "deciding a verdict (propagated from those of the BCa bound, order statistics at "
            "the BCa level; of the simulated mean, sd / sqrt(n); of the Sim2 quantile when "
            "Sim2 decides) is at most mc_precision (times |zeta| when |zeta| > 1), every "
            "simulated mean within mc_precision of its simulated range's half-width, or the "
            "ceiling; the replicates are the first n of the fixed-count run")
