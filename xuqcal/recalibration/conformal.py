"""Conformal recalibration: normalised split conformal intervals, global or Mondrian (one
quantile per learned bin), and their coverage on new data (see :mod:`xuqcal.recalibration`).

**Fit** (``fit(train, "conformal", coverage_levels=...)``). The scores of the ``n`` calibration
(training) points are ``s_i = |E_i| / uE_i``. For each coverage level ``p`` the conformal
quantile is ``q_p = s_(k)``, the ``k``-th smallest score, with the finite-sample rank
``k = ⌈(n + 1) p⌉``. The rank is computed exactly, in rational arithmetic on the decimal value
of ``p`` (its shortest ``repr``: 0.95 is 95/100), so no floating-point rounding of ``(n + 1) p``
can move it. When ``k > n`` (fewer than ``⌈p / (1 - p)⌉`` points: 19 at p = 0.95) the quantile
is infinite; the fit refuses it with a ``ValueError`` naming ``coverage_levels``.

**Guarantee.** For a new point exchangeable with the calibration points,
``P(|E| <= q_p uE) >= k / (n + 1) >= p``, marginally over the calibration and test draws; when
the scores have no ties (continuous data) the coverage is exactly ``k / (n + 1)``, hence below
``p + 1 / (n + 1)``. It says nothing of the coverage *given* ``uE`` or a feature: that is what
the Mondrian variant and :func:`conformal_coverage` address.

**Mondrian** (``by=`` a variable). The calibration data are binned as for BVS (the bins of
:mod:`xuqcal.analysis.binning` learned as value limits, or one bin per label with
``binning="groups"``; merged into the recalibrator with the prefix ``bins_``), and each bin
gets its own quantile from its own ``n_b`` points (the interval analogue of bin-wise variance
scaling). Every bin needs ``n_b >= ⌈p / (1 - p)⌉`` points for every level.

**Apply** returns a copy of the data with

* ``conformal_half_width`` over ``(sample, coverage_level)``: ``h_p = q_p uE``, the interval
  ``E ∈ [-h_p, h_p]`` at each level (the primary output);
* ``uE``: the recalibrated uncertainty ``uE × q_p* / z_p*`` for the first level ``p*`` of
  ``coverage_levels`` (attribute ``uE_level``; 0.683 by default, where ``z ≈ 1``), with
  ``z_p = Φ⁻¹((1 + p) / 2)`` the Gaussian quantile: the uncertainty whose Gaussian
  ``p*``-interval is the conformal one, so that the rest of the library can use it; the factor
  ``q_p* / z_p*`` is the recalibrator's ``scale``. The input uE is kept as ``uE_uncalibrated``
  (as for the other methods); Mondrian adds ``recalibration_bin``.

The fitted recalibrator holds ``score_quantile`` (``q_p``), ``score_rank`` (``k``),
``expected_coverage`` (``k / (n + 1)``)
over ``coverage_level`` (and ``bin`` for Mondrian, with ``train_count``),
``gaussian_quantile`` over ``coverage_level`` and ``scale``; it round-trips through
:func:`xuqcal.to_netcdf` and applies bit-identically after :func:`xarray.open_dataset`.
Recalibrators and recalibrated data written until version 0.1 name that dimension ``level``;
they are still read (:func:`with_current_names`).

**Laziness.** On Dask-backed data the fit and :func:`conformal_coverage` compute nothing at
the call (the quantiles, PICPs and equal-count bins are computed with the result, identical to
the NumPy results; value errors are raised then), except the binning variable of a Mondrian fit
and of a coverage by groups, whose number of bins depends on its values: it is read once at the
call.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import xarray as xr

from xuqcal.analysis.binning import equal_count, groups
from xuqcal.analysis.lazy import is_lazy, lazy_result, template
from xuqcal.analysis.slices import broadcast
from xuqcal.core import defaults
from xuqcal.core.binning import check_n_bins, warn_few_points_per_bin
from xuqcal.core.checks import (
    check_fraction,
    check_level,
    check_seed,
    check_tolerance,
    variable_name,
)
from xuqcal.core.coverage import normal_coverage_factor
from xuqcal.core.intervals import coverage_validity
from xuqcal.core.provenance import provenance
from xuqcal.io import by_role
from xuqcal.recalibration.common import (
    BINS_PREFIX,
    RECALIBRATOR,
    _checked,
    _choice,
    _learn_bins,
    _names,
    _positive_int,
    _training_provenance,
)

#: The method name of :func:`xuqcal.recalibration.fit`.
METHOD = "conformal"
#: Default coverage levels of a conformal recalibrator (:data:`defaults.COVERAGE_LEVELS`).
DEFAULT_LEVELS = defaults.COVERAGE_LEVELS
#: Default tolerance of :func:`conformal_coverage`: a bin is valid when the Wilson interval of
#: its coverage overlaps ``[p - tol, p + tol]`` (:data:`defaults.COVERAGE_TOLERANCE`).
DEFAULT_TOLERANCE = defaults.COVERAGE_TOLERANCE
#: Names of the outputs of :func:`conformal_intervals`: the half-widths and their dimension.
HALF_WIDTH = "conformal_half_width"
LEVEL = "coverage_level"
#: The name of :data:`LEVEL` in recalibrators and recalibrated data written until version 0.1.
LEGACY_LEVEL = "level"
_BINNINGS = ("equal", "groups")
_RANK_RULE = ("q_p = the k-th smallest calibration score |E|/uE, k = ceil((n + 1) p) (exact "
              "rational arithmetic on the decimal value of p)")


# --------------------------------------------------------------------------------------------
# Levels and ranks
# --------------------------------------------------------------------------------------------


def with_current_names(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` (a conformal recalibrator, or data with conformal half-widths) with the dimension
    of coverage levels written until version 0.1, ``level``, renamed :data:`LEVEL`; other
    data unchanged.

    Examples
    --------
    >>> old = xr.Dataset({HALF_WIDTH: (("sample", "level"), [[1.0, 2.0]])},
    ...                  coords={"level": [0.683, 0.95]})
    >>> with_current_names(old)[HALF_WIDTH].dims
    ('sample', 'coverage_level')
    """
    legacy = (ds.attrs.get("method") == METHOD
              or (HALF_WIDTH in ds.variables and LEGACY_LEVEL in ds[HALF_WIDTH].dims))
    if legacy and LEGACY_LEVEL in ds.dims and LEVEL not in ds.dims:
        return ds.rename({LEGACY_LEVEL: LEVEL})
    return ds


def check_levels(levels: Any) -> tuple[float, ...]:
    """Coverage levels: a number or a non-empty sequence of distinct numbers in (0, 1), in the
    given order (the first one sets the recalibrated ``uE``).

    Examples
    --------
    >>> check_levels([0.683, 0.95])
    (0.683, 0.95)
    >>> check_levels(1.5)
    Traceback (most recent call last):
    ValueError: coverage_levels: expected coverage levels in (0, 1) such as 0.95, got 1.5
    """
    if isinstance(levels, int | float | np.integer | np.floating) and \
            not isinstance(levels, bool):
        levels = (levels,)
    if isinstance(levels, str):
        raise ValueError(f"coverage_levels: expected coverage levels in (0, 1) such as 0.95, "
                         f"got {levels!r}")
    try:
        values = tuple(levels)
    except TypeError:
        raise ValueError(f"coverage_levels: expected a number or a sequence of numbers in "
                         f"(0, 1), got {levels!r}") from None
    if not values:
        raise ValueError("coverage_levels: expected at least one coverage level")
    values = tuple(check_fraction(v, "coverage_levels",
                                  "coverage levels in (0, 1) such as 0.95") for v in values)
    if len(set(values)) != len(values):
        raise ValueError(f"coverage_levels: a level is listed twice in {list(values)}")
    return values


def _fraction(level: float) -> Fraction:
    """The level as the exact fraction of its decimal value (shortest repr)."""
    return Fraction(repr(float(level)))


def conformal_rank(n_scores: int, level: float) -> int:
    """The finite-sample rank ``k = ⌈(n + 1) p⌉`` of the conformal quantile of ``n_scores``
    scores (``n``),
    computed exactly (``p`` as the fraction of its decimal value); ``k > n`` means an infinite
    quantile.

    Examples
    --------
    >>> conformal_rank(99, 0.95), conformal_rank(100, 0.95), conformal_rank(18, 0.95)
    (95, 96, 19)
    """
    p = _fraction(level)
    return -((-(n_scores + 1) * p.numerator) // p.denominator)


def min_calibration_points(level: float) -> int:
    """The least number of calibration points with a finite conformal quantile at ``level``:
    ``⌈p / (1 - p)⌉``, the smallest ``n`` with ``⌈(n + 1) p⌉ <= n``.

    Examples
    --------
    >>> min_calibration_points(0.95), min_calibration_points(0.683), min_calibration_points(0.9)
    (19, 3, 9)
    """
    p = _fraction(level)
    ratio = p / (1 - p)
    return -((-ratio.numerator) // ratio.denominator)


# --------------------------------------------------------------------------------------------
# Fit and apply
# --------------------------------------------------------------------------------------------


def _bin_names(bins: xr.Dataset | None, which: np.ndarray) -> str:
    """The bins ``which`` for a message: ``bins 2, 5`` (labels for group bins)."""
    if bins is None:
        return "the calibration set"
    more = f" (and {which.size - 5} more)" if which.size > 5 else ""
    if "label" in bins.coords:
        labels = bins.label.values[which[:5]].tolist()
        return ("group" + ("s " if which.size > 1 else " ") + ", ".join(map(repr, labels))
                + more)
    return "bin" + ("s " if which.size > 1 else " ") + ", ".join(map(str, which[:5].tolist())) \
        + more


def _check_counts(counts: np.ndarray, levels: tuple[float, ...],
                  bins: xr.Dataset | None) -> None:
    """Refuse a level whose conformal quantile is infinite (``⌈(n + 1) p⌉ > n``) in a bin."""
    for p in levels:
        need = min_calibration_points(p)
        short = np.flatnonzero(counts < need)
        if short.size:
            where = _bin_names(bins, short)
            has = ", ".join(str(int(c)) for c in counts[short][:5]) + (
                ", ..." if short.size > 5 else "")
            advice = ("use fewer bins (n_bins) or lower levels" if bins is not None
                      and "label" not in bins.coords else
                      "merge small groups or lower the levels" if bins is not None
                      else "use more calibration data or lower levels")
            raise ValueError(
                f"coverage_levels: the conformal quantile at level {p:g} is the ⌈(n + 1) p⌉-th "
                f"smallest of n calibration scores, infinite when that rank exceeds n: it needs "
                f"at least {need} points, but {where} {'have' if short.size > 1 else 'has'} {has}; "
                f"{advice}")


def _score_quantiles(ds: xr.Dataset, *, index: np.ndarray, counts: np.ndarray,
                     ranks: np.ndarray, z: np.ndarray, levels: tuple[float, ...],
                     bins: xr.Dataset | None, E: str, uE: str) -> xr.Dataset:
    """The part of :func:`fit_conformal` that reads ``E`` and ``uE`` (NumPy-backed): the
    conformal quantiles ``quantile`` over ``(bin, level)`` (one bin for global quantiles) and
    the factors ``scale`` over ``bin``, refusing a zero quantile at the first level."""
    e = np.asarray(ds[E].values, dtype=np.float64)
    u = np.asarray(ds[uE].values, dtype=np.float64)
    scores = np.abs(e) / u
    order = np.lexsort((scores, index))  # by bin, then by score
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    quantile = scores[order][starts[:, np.newaxis] + ranks - 1]
    scale = quantile[:, 0] / z[0]
    if not np.all(scale > 0):
        where = _bin_names(bins, np.flatnonzero(~(scale > 0)))
        raise ValueError(f"E: the conformal quantile at the first level {levels[0]:g} is 0 in "
                         f"{where} (that many calibration errors are exactly 0), so the "
                         "recalibrated uE would be 0; put another level first in "
                         "coverage_levels (the first level sets uE)")
    return xr.Dataset({"quantile": (("bin", LEVEL), quantile), "scale": ("bin", scale)})


def fit_conformal(ds: xr.Dataset, *, coverage_levels: Any = None, by: Any = None,
                  n_bins: Any = None,
                  binning: str | None = None, loss: str = "nll", seed: int = defaults.SEED,
                  E: str = defaults.E, uE: str = defaults.UE) -> xr.Dataset:
    """The conformal recalibrator of the training (calibration) data ``ds``; called by
    :func:`xuqcal.recalibration.fit` with ``method="conformal"`` (see its parameters and the
    module documentation).

    ``by=None`` gives the global quantiles; ``by`` a variable gives Mondrian quantiles, one per
    bin (``n_bins`` equal-count bins learned as value limits, default
    :data:`~xuqcal.core.defaults.N_BINS_RECALIBRATION`, or one per label with
    ``binning="groups"``).

    Examples
    --------
    >>> import xuqcal
    >>> train = xuqcal.synthetic.nig(999, nu=3, generator="t3", seed=0, uE_scale=0.7)
    >>> rec = fit_conformal(train, coverage_levels=[0.683, 0.95])
    >>> rec.score_rank.values.tolist(), rec.expected_coverage.values.tolist()
    ([683, 950], [0.683, 0.95])
    """
    levels = check_levels(DEFAULT_LEVELS if coverage_levels is None else coverage_levels)
    if loss != "nll":
        raise ValueError(f"loss: method='conformal' has no loss (its quantiles are order "
                         f"statistics of the calibration scores); got loss={loss!r}, leave it "
                         "unset")
    check_seed(seed)
    names: tuple[str, ...] = ()
    if by is None:
        if n_bins is not None:
            raise ValueError("n_bins: global conformal recalibration does not bin; give by= (a "
                             "binning variable) for Mondrian quantiles per bin")
        if binning is not None:
            raise ValueError("binning: global conformal recalibration does not bin; give by= "
                             "(a binning variable) for Mondrian quantiles per bin")
    else:
        names = _names(by, "by")
        if len(names) != 1:
            raise ValueError(f"by: Mondrian conformal bins take one variable (uE, a feature, or "
                             f"a categorical variable with binning='groups'), got "
                             f"{list(names)}")
        if E in names:
            raise ValueError(f"by: the errors {E!r} cannot be a binning variable of a "
                             "recalibration (the quantiles would be fitted on the quantity they "
                             f"must predict and be unknown for new data); bin on {uE!r} or an "
                             "input feature")
        binning = _choice("equal" if binning is None else binning, _BINNINGS, "binning")
        if binning == "groups":
            if n_bins is not None:
                raise ValueError("n_bins: group binning has one bin per label (leave n_bins "
                                 "unset)")
        else:
            n_bins = _positive_int(defaults.N_BINS_RECALIBRATION if n_bins is None else n_bins,
                                   "n_bins")
    ds = _checked(ds, names if binning == "equal" else (),
                  names if binning == "groups" else (), what="by", E=E, uE=uE)
    m = ds.sizes["sample"]
    bins = None
    if names:
        # the number of learned bins depends on the values of `by` (tied limits are merged,
        # groups are the labels found): it is read here, as local() does for its groups; E
        # and uE stay lazy
        binned = ds[list(names)].compute() if is_lazy(ds, names) else ds  # read once
        bins, index = _learn_bins(binned, names, binning, n_bins)
        n = bins.sizes["bin"]
    else:
        index, n = np.zeros(m, dtype=np.int64), 1
    counts = np.bincount(index, minlength=n)
    _check_counts(counts, levels, bins)
    ranks = np.array([[conformal_rank(int(c), p) for p in levels] for c in counts],
                     dtype=np.int64)
    z = normal_coverage_factor(np.asarray(levels, dtype=np.float64))
    kwargs = dict(index=index, counts=counts, ranks=ranks, z=z, levels=levels, bins=bins,
                  E=E, uE=uE)
    if is_lazy(ds, [E, uE]):
        layout = template({"quantile": (("bin", LEVEL), np.float64, {}),
                           "scale": (("bin",), np.float64, {})},
                          {"bin": n, LEVEL: len(levels)})
        fitted = lazy_result(_score_quantiles, ds[[E, uE]], layout, **kwargs)
    else:
        fitted = _score_quantiles(ds[[E, uE]], **kwargs)
    quantile, scale = fitted["quantile"].data, fitted["scale"].data
    expected = ranks / (counts[:, np.newaxis] + 1.0)
    attrs = provenance({
        "xuqcal_object": RECALIBRATOR, "method": METHOD, "loss": "none",
        "by": names[0] if names else "", "binning": binning or "", "seed": int(seed),
        **_training_provenance(ds),
        "score": "|E| / uE", "quantile_rule": _RANK_RULE, "uE_level": levels[0],
        "uE_rule": "uE x q_p / z_p at the first level p (z_p = Gaussian quantile "
                   "ndtri((1 + p) / 2)): the uE whose Gaussian p-interval is the conformal one",
        "half_width": "h_p = q_p uE: the interval E in [-h_p, h_p]",
        "E": E, "uE": uE,
    })
    level_coord = {LEVEL: (LEVEL, np.array(levels, dtype=np.float64),
                           {"long_name": "coverage level p of the conformal interval"})}
    long = {
        "quantile": "conformal quantile q_p of the scores |E|/uE (the rank-th smallest)",
        "rank": "rank k = ceil((n + 1) p) of the quantile among the n calibration scores",
        "expected_coverage": "k / (n + 1): the coverage of a new exchangeable point (exact for "
                             "untied scores, a lower bound otherwise), >= p",
    }
    z_var = (LEVEL, z, {"long_name": "Gaussian quantile z_p = ndtri((1 + p) / 2)"})
    if bins is None:
        return xr.Dataset({
            "score_quantile": (LEVEL, quantile[0], {"long_name": long["quantile"]}),
            "score_rank": (LEVEL, ranks[0], {"long_name": long["rank"]}),
            "expected_coverage": (LEVEL, expected[0], {"long_name": long["expected_coverage"]}),
            "gaussian_quantile": z_var,
            "scale": ((), scale[0], {"long_name": "factor applied to uE: q_p / z_p at the "
                                                  "first level"}),
        }, coords=level_coord, attrs=attrs)
    dims = ("bin", LEVEL)
    rec = xr.Dataset({
        "score_quantile": (dims, quantile, {"long_name": long["quantile"] + " in the bin"}),
        "score_rank": (dims, ranks, {"long_name": long["rank"] + " of the bin"}),
        "expected_coverage": (dims, expected, {"long_name": long["expected_coverage"]}),
        "gaussian_quantile": z_var,
        "scale": ("bin", scale, {"long_name": "factor applied to uE in the bin: q_p / z_p at "
                                              "the first level"}),
        "train_count": ("bin", counts, {"long_name": "training points assigned to the bin by "
                                                     "the learned limits"}),
    }, coords={"bin": np.arange(n), **level_coord}, attrs=attrs)
    prefixed = bins.rename({v: BINS_PREFIX + str(v) for v in bins.variables
                            if v not in bins.dims})
    rec = xr.merge([rec, prefixed], combine_attrs="override")
    rec.attrs = {**attrs, **{BINS_PREFIX + k: v for k, v in bins.attrs.items()}}
    if BINS_PREFIX + "label" in rec.variables:
        rec = rec.set_coords(BINS_PREFIX + "label")
    return rec


def conformal_intervals(recalibrator: xr.Dataset, out: xr.Dataset, u: np.ndarray,
                        index: np.ndarray | None) -> tuple[xr.Dataset, np.ndarray]:
    """The conformal part of :func:`xuqcal.recalibration.apply`: ``out`` with the half-widths
    ``q_p uE`` over ``(sample, coverage_level)`` (replacing those of an earlier application),
    and the recalibrated ``uE × scale`` (``index``: the learned bin of every point, ``None``
    for global quantiles). See the module documentation for the outputs.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.recalibration import fit, apply
    >>> train = xuqcal.synthetic.nig(999, nu=3, generator="t3", seed=0, uE_scale=0.7)
    >>> test = xuqcal.synthetic.nig(5000, nu=3, generator="t3", seed=1, uE_scale=0.7)
    >>> new = apply(fit(train, "conformal"), test)
    >>> new.conformal_half_width.dims, new.coverage_level.values.tolist()
    (('sample', 'coverage_level'), [0.683, 0.95])
    >>> covered = abs(new.E) <= new.conformal_half_width
    >>> covered.mean("sample").round(2).values.tolist()
    [0.7, 0.95]
    """
    recalibrator, out = with_current_names(recalibrator), with_current_names(out)
    quantile = np.asarray(recalibrator["score_quantile"].values, dtype=np.float64)
    scale = np.asarray(recalibrator["scale"].values, dtype=np.float64)
    if index is None:
        index = np.zeros(u.size, dtype=np.int64)
        quantile, scale = quantile[np.newaxis, :], scale.reshape(1)
    if HALF_WIDTH in out.variables:  # applied before: the new intervals replace the old ones
        out = out.drop_vars([v for v in (HALF_WIDTH, LEVEL) if v in out.variables])
    elif LEVEL in out.variables or LEVEL in out.dims:
        raise ValueError(f"ds: has a variable or dimension {LEVEL!r}, the dimension of the "
                         "conformal half-widths; rename it")
    out = out.assign_coords({LEVEL: (LEVEL, recalibrator[LEVEL].values, {
        "long_name": "coverage level p of the conformal interval"})})
    out[HALF_WIDTH] = (("sample", LEVEL), u[:, np.newaxis] * quantile[index], {
        "long_name": "half-width h_p = q_p uE of the conformal interval E in [-h_p, h_p]"})
    return out, u * scale[index]


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


@broadcast
@by_role
def conformal_coverage(ds: xr.Dataset, *, by: str = defaults.BY, n_bins: int | None = None,
                       binning: str = "equal", tol: float = DEFAULT_TOLERANCE,
                       level: float = defaults.LEVEL, half_width: str = HALF_WIDTH,
                       E: str = defaults.E, uE: str = defaults.UE) -> xr.Dataset:
    """Coverage of conformal intervals on (test) data: the PICP per level, overall and per bin.

    The PICP (prediction-interval coverage probability) at level ``p`` is the fraction of
    points with ``|E| <= h_p`` (``h_p``: the half-widths made by
    :func:`xuqcal.recalibration.apply`). Each PICP gets the Wilson interval with continuity
    correction (:func:`xuqcal.core.intervals.coverage_validity`) at ``level``. Per bin of
    ``by`` (local coverage) a bin is **valid** when its Wilson interval overlaps
    ``[p - tol, p + tol]``; ``fraction_valid`` is the fraction of valid bins (with its own
    Wilson interval).

    Parameters
    ----------
    ds : xarray.Dataset
        Data over ``sample`` with ``E``, the half-widths over ``(sample, coverage_level)``
        and ``by``
        (the output of :func:`xuqcal.recalibration.apply` of a conformal recalibrator).
    by : str
        Binning variable (``"uE"`` stands for the uncertainty variable, here the recalibrated
        one; ``"uE_uncalibrated"``, a feature, or ``"recalibration_bin"`` with
        ``binning="groups"`` for the learned bins of a Mondrian recalibrator).
    n_bins : int, optional
        Equal-count bins of ``by`` on these data (stable sort; default
        :data:`~xuqcal.core.defaults.N_BINS`); not used with ``binning="groups"``.
    binning : {"equal", "groups"}
        Equal-count bins, or one bin per distinct value (label) of ``by``.
    tol : float
        Half-width of the accepted band ``[p - tol, p + tol]``, in [0, 1) (default 0.005).
    level : float
        Confidence level of the Wilson intervals (as in
        :func:`xuqcal.analysis.coverage.interval_coverage`; the coverage levels p are the
        ``coverage_level`` dimension of the half-widths).
    half_width : str
        Name of the half-width variable (default ``conformal_half_width``).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``level``: ``picp``, ``picp_low``, ``picp_high``, ``picp_valid`` (the overlap
        rule), ``n_covered``,
        ``mean_half_width``, ``fraction_valid``, ``fraction_valid_low``,
        ``fraction_valid_high``; over ``(level, bin)``: ``bin_picp``, ``bin_picp_low``,
        ``bin_picp_high``, ``bin_n_covered``, ``bin_mean_half_width``, ``bin_valid``; over
        ``bin``: ``bin_count`` and the coordinates ``bin_low``, ``bin_high``, ``bin_centre``
        (equal-count bins) or ``label`` (groups); the scalar ``count``.

    Examples
    --------
    >>> import xuqcal
    >>> from xuqcal.recalibration import fit, apply
    >>> train = xuqcal.synthetic.nig(999, nu=3, generator="t3", seed=0, uE_scale=0.7)
    >>> test = xuqcal.synthetic.nig(20000, nu=3, generator="t3", seed=1, uE_scale=0.7)
    >>> cov = conformal_coverage(apply(fit(train, "conformal"), test), n_bins=10)
    >>> cov.picp.round(3).values.tolist(), cov.sizes["bin"]
    ([0.699, 0.947], 10)
    """
    confidence = check_level(level)
    tol = check_tolerance(tol)
    binning = _choice(binning, _BINNINGS, "binning")
    if binning == "groups" and n_bins is not None:
        raise ValueError("n_bins: group binning has one bin per label (leave n_bins unset)")
    by = variable_name(ds, by, uE)
    if not isinstance(half_width, str) or half_width not in ds.variables:
        raise ValueError(f"half_width: the variable {half_width!r} is not in the dataset (apply "
                         "a conformal recalibrator first: xuqcal.recalibration.apply)")
    if LEGACY_LEVEL in ds[half_width].dims and LEVEL not in ds.dims:  # written until 0.1
        ds = ds.rename({LEGACY_LEVEL: LEVEL})
    hw_var = ds[half_width]
    if set(hw_var.dims) != {"sample", LEVEL} or LEVEL not in ds.coords:
        raise ValueError(f"half_width: {half_width!r} must be over ('sample', {LEVEL!r}) with "
                         f"a {LEVEL!r} coordinate, got dimensions {hw_var.dims}")
    ds = _checked(ds, [by] if binning == "equal" else [],
                  [by] if binning == "groups" else [], what="by", E=E, uE=uE)
    levels = np.asarray(ds[LEVEL].values, dtype=np.float64)  # an index: in memory
    m = ds.sizes["sample"]
    bins = None
    if binning == "equal":
        n_bins = _positive_int(defaults.N_BINS if n_bins is None else n_bins, "n_bins")
        check_n_bins(m, n_bins, variable=by)  # as equal_count does: before any work
        warn_few_points_per_bin(m, n_bins)
    else:
        # the number of groups depends on the labels: read here, as local() does for its
        # groups; E and the half-widths stay lazy
        bins = groups(np.asarray(ds[by].values), by=by)
        n_bins = bins.sizes["bin"]
        warn_few_points_per_bin(m, n_bins, counts=bins["count"].values, argument="by",
                                source=f"the groups of {by}", per="group")
    attrs = provenance({
        "by": by, "binning": binning, "n_bins": int(n_bins), "tol": tol,
        "level": confidence, "half_width": half_width, "n_samples": m,
        "ci_method": "Wilson score interval with continuity correction",
        "valid": "the bin's Wilson interval overlaps [p - tol, p + tol]",
        "E": E, "uE": uE,
    })
    kwargs = dict(half_width=half_width, by=by, bins=bins, n_bins=n_bins, levels=levels,
                  level_attrs=dict(ds[LEVEL].attrs), confidence=confidence, tol=tol, E=E,
                  attrs=attrs)
    variables = list(dict.fromkeys([E, half_width, by]))
    if is_lazy(ds, variables):
        layout = _coverage_layout(levels, n_bins, bins, by, confidence, dict(ds[LEVEL].attrs),
                                  attrs)
        return lazy_result(_coverage_body, ds[variables], layout, **kwargs)
    return _coverage_body(ds[variables], **kwargs)


_BIN_COORDS = ("bin_low", "bin_high", "bin_centre")


def _coverage_layout(levels: np.ndarray, n_bins: int, bins: xr.Dataset | None, by: str,
                     confidence: float, level_attrs: dict, attrs: dict) -> xr.Dataset:
    """The layout of a lazy :func:`conformal_coverage` result: the body's result on
    placeholders of its shape (the names, dimensions, dtypes and attributes of the body's)."""
    n_levels = levels.size
    sizes = {LEVEL: n_levels, "bin": n_bins}
    probe = _coverage_result(
        picp=np.zeros(n_levels), lo=np.zeros(n_levels), hi=np.zeros(n_levels),
        picp_valid=np.zeros(n_levels, bool), n_cov=np.zeros(n_levels, np.int64),
        mean_hw=np.zeros(n_levels), m=0, bin_picp=np.zeros((n_levels, n_bins)),
        b_lo=np.zeros((n_levels, n_bins)), b_hi=np.zeros((n_levels, n_bins)),
        bin_cov=np.zeros((n_levels, n_bins), np.int64), bin_hw=np.zeros((n_levels, n_bins)),
        valid=np.zeros((n_levels, n_bins), bool), counts=np.zeros(n_bins, np.int64),
        fv=np.zeros(n_levels), fv_lo=np.zeros(n_levels), fv_hi=np.zeros(n_levels),
        coords=_coverage_coords(levels, level_attrs, n_bins,
                                bins if bins is not None else _equal_bin_probe(n_bins, by)),
        confidence=confidence, attrs=attrs)
    computed_coords = [c for c in _BIN_COORDS if c in probe.coords]
    return template({name: (var.dims, var.dtype, var.attrs)
                     for name, var in probe.variables.items()
                     if name not in probe.indexes and (name in probe.data_vars
                                                       or name in computed_coords)},
                    sizes, coords={c: probe[c].variable for c in probe.coords
                                   if c in probe.indexes or c == "label"},
                    lazy_coords=computed_coords, attrs=attrs)


def _equal_bin_probe(n_bins: int, by: str) -> xr.Dataset:
    """The coordinates (names, attributes) of equal-count bins of ``n_bins`` (values 0)."""
    return equal_count(np.arange(2.0 * n_bins), n_bins, by=by)


def _coverage_coords(levels: np.ndarray, level_attrs: dict, n_bins: int,
                     bins: xr.Dataset) -> dict[str, Any]:
    coords: dict[str, Any] = {LEVEL: (LEVEL, levels, level_attrs), "bin": np.arange(n_bins)}
    for c in (*_BIN_COORDS, "label"):
        if c in bins.coords:
            coords[c] = ("bin", bins[c].values, bins[c].attrs)
    return coords


def _coverage_body(ds: xr.Dataset, *, half_width: str, by: str, bins: xr.Dataset | None,
                   n_bins: int, levels: np.ndarray, level_attrs: dict, confidence: float,
                   tol: float, E: str, attrs: dict) -> xr.Dataset:
    """:func:`conformal_coverage` on NumPy-backed data (``bins``: the groups, or ``None`` for
    ``n_bins`` equal-count bins of ``by``, made here)."""
    hw = np.asarray(ds[half_width].transpose("sample", LEVEL).values, dtype=np.float64)
    if not np.all(hw >= 0):  # NaN fails too; +inf is a valid (trivial) interval
        raise ValueError(f"half_width: {int((~(hw >= 0)).sum())} of {hw.size} half-widths are "
                         "negative or NaN")
    e = np.abs(np.asarray(ds[E].values, dtype=np.float64))
    m = e.size
    covered = e[:, np.newaxis] <= hw
    if bins is None:
        bins = equal_count(np.asarray(ds[by].values), n_bins, by=by)
    index = bins.bin_index.values
    counts = np.bincount(index, minlength=n_bins)
    n_cov = covered.sum(axis=0)
    bin_cov = np.stack([np.bincount(index, weights=covered[:, j], minlength=n_bins)
                        for j in range(levels.size)]).astype(np.int64)
    bin_hw = np.stack([np.bincount(index, weights=hw[:, j], minlength=n_bins)
                       for j in range(levels.size)]) / counts
    _, lo, hi, picp_valid = coverage_validity(n_cov, m, levels, confidence, tol)
    bin_picp, b_lo, b_hi, valid = coverage_validity(bin_cov, counts, levels[:, np.newaxis],
                                                    confidence, tol)
    n_valid = valid.sum(axis=1)
    _, fv_lo, fv_hi, _ = coverage_validity(n_valid, n_bins, levels, confidence, tol)
    return _coverage_result(
        picp=n_cov / m, lo=lo, hi=hi, picp_valid=picp_valid, n_cov=n_cov.astype(np.int64),
        mean_hw=hw.mean(axis=0), m=m, bin_picp=bin_picp, b_lo=b_lo, b_hi=b_hi,
        bin_cov=bin_cov, bin_hw=bin_hw, valid=valid, counts=counts, fv=n_valid / n_bins,
        fv_lo=fv_lo, fv_hi=fv_hi, coords=_coverage_coords(levels, level_attrs, n_bins, bins),
        confidence=confidence, attrs=attrs)


def _coverage_result(*, picp, lo, hi, picp_valid, n_cov, mean_hw, m, bin_picp, b_lo, b_hi,
                     bin_cov, bin_hw, valid, counts, fv, fv_lo, fv_hi, coords, confidence,
                     attrs) -> xr.Dataset:
    """The Dataset of :func:`conformal_coverage` (its one constructor: values or a layout)."""
    lb = (LEVEL, "bin")
    wilson = f"Wilson interval with continuity correction at confidence {confidence:g}"
    return xr.Dataset(
        {
            "picp": (LEVEL, picp, {"long_name": "fraction of points with |E| <= h_p"}),
            "picp_low": (LEVEL, lo, {"long_name": f"lower bound of the PICP ({wilson})"}),
            "picp_high": (LEVEL, hi, {"long_name": f"upper bound of the PICP ({wilson})"}),
            "picp_valid": (LEVEL, picp_valid, {"long_name": "the Wilson interval of the PICP "
                                                            "overlaps [p - tol, p + tol]"}),
            "n_covered": (LEVEL, n_cov,
                          {"long_name": "points with |E| <= h_p"}),
            "mean_half_width": (LEVEL, mean_hw, {"long_name": "mean half-width h_p"}),
            "count": ((), m, {"long_name": "number of points"}),
            "bin_picp": (lb, bin_picp, {"long_name": "PICP in the bin"}),
            "bin_picp_low": (lb, b_lo, {"long_name": f"lower bound ({wilson})"}),
            "bin_picp_high": (lb, b_hi, {"long_name": f"upper bound ({wilson})"}),
            "bin_n_covered": (lb, bin_cov, {"long_name": "points of the bin with |E| <= h_p"}),
            "bin_mean_half_width": (lb, bin_hw, {"long_name": "mean half-width in the bin"}),
            "bin_valid": (lb, valid, {"long_name": "the Wilson interval of the bin overlaps "
                                                   "[p - tol, p + tol]"}),
            "bin_count": ("bin", counts, {"long_name": "number of points in the bin"}),
            "fraction_valid": (LEVEL, fv,
                               {"long_name": "fraction of valid bins"}),
            "fraction_valid_low": (LEVEL, fv_lo, {"long_name": f"lower bound ({wilson})"}),
            "fraction_valid_high": (LEVEL, fv_hi, {"long_name": f"upper bound ({wilson})"}),
        },
        coords=coords,
        attrs=attrs,
    )

