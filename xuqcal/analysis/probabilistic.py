"""Proper scores and the probability integral transform of data sets (METHODS §9).

The labelled layer over :mod:`xuqcal.core.scores`: each function takes a Dataset with ``E`` and
``uE`` over ``sample``, checks its arguments and the structure of the data before any work
(:func:`_probabilistic_iv`) and the values before any computation (NumPy-backed data at once,
Dask-backed data in the graph, with the same message naming the variable, the problem and the
rows: :func:`xuqcal.io.validate_dataset`), and is

- **lazy** on Dask-backed data: the ``sample`` dimension, whatever its chunks, is gathered into
  one task, as every analysis of xuqcal does (O(M) memory; :mod:`xuqcal.analysis.lazy`);
- **broadcast** over every extra dimension of ``E`` and ``uE`` (``model``, ``task``, ...): each
  slice is analysed alone on its present points (:mod:`xuqcal.analysis.slices`), with its own
  fitted ν.

**The predictive distributions.** ``E`` is predicted by ``N(0, uE²)`` (``"normal"``) or by the
Student-t(ν) whose standard deviation is ``uE`` (``"student"``, scale ``uE sqrt((ν - 2)/ν)``),
the generative model of METHODS §1 with a normal or a Student-t ``eps``. When ``nu`` is not
given it is *fitted*: the degrees of freedom of the maximum-likelihood fit of a shifted, scaled
Student-t to ``Z = E / uE``, the ``nu_eff`` of Z reported by :func:`xuqcal.describe` (the same
function, :func:`xuqcal.analysis.diagnostics.student_t_fit`). A fitted ν ≤ 2 (infinite
variance: no Student-t has standard deviation ``uE``) or constant Z leaves the Student
results undefined: NaN with an :class:`~xuqcal.UndefinedStatisticWarning` naming the cause.

**Ensembles.** Data built by :func:`xuqcal.io.from_ensemble` keep the member errors (role
``members``): :func:`proper_scores` then adds the fair ensemble CRPS of the members
(``crps_ensemble``, and its bootstrap interval in the ``score`` dimension).

**Dependent points.** The bootstrap intervals of :func:`proper_scores` resample independent
points by default. With ``resample="cluster"`` (``groups=``) or a block scheme (``block=``,
``block_length=``), as :func:`xuqcal.bootstrap` (:mod:`xuqcal.analysis.dependent`), they
resample whole groups or blocks instead: replicate ``r`` draws the rows of the replicate ``r``
of :func:`xuqcal.bootstrap` with the same ``resample`` and ``seed``
(:func:`mean_score_replicates`), and BCa takes its acceleration from the delete-one-unit
jackknife. The mean scores themselves do not depend on it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from xuqcal.analysis.dependent import (
    Dependence,
    mean_jackknife,
    mean_replicates,
    row_layout,
)
from xuqcal.analysis.dependent import resolved_dependence as _resolved
from xuqcal.analysis.diagnostics import MIN_POINTS, student_t_fit
from xuqcal.analysis.lazy import analysis, template
from xuqcal.analysis.resampling import RNG_DESCRIPTION, _summarize
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core import kernels as K
from xuqcal.core import scores as S
from xuqcal.core.binning import equal_count_order
from xuqcal.core.checks import (
    check_choice,
    check_count,
    check_level,
    check_replicates,
    check_seed,
    user_stacklevel,
)
from xuqcal.core.kernels import LOG_2PI
from xuqcal.core.provenance import provenance
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import (
    UndefinedStatisticWarning,
    check_values,
    compute,
    log_square,
)
from xuqcal.io import ROLE_ATTR, SAMPLE_DIM, by_role, validate_dataset, variable_with_role
from xuqcal.io.ensembles import MEMBER_DIM_ATTR
from xuqcal.io.expressions import _format_rows
from xuqcal.options import convention

__all__ = ["DISTRIBUTIONS", "pit", "pit_test", "proper_scores"]

DISTRIBUTIONS = ("normal", "student", "ensemble")
"""The predictive distributions of ``E``: ``N(0, uE²)`` and the Student-t(ν) with standard
deviation ``uE``."""

BIN_DIM = "bin"
"""Dimension of the histogram counts of :func:`pit_test`."""

#: How ν is fitted when not given (the ``nu_source`` attribute of the results).
NU_FITTED = ("fitted: degrees of freedom of a maximum-likelihood shifted, scaled Student-t fit "
             "of Z = E / uE (xuqcal.describe's nu_eff of Z)")
NU_GIVEN = "given"

#: ``long_name`` and ``description`` of every result variable.
DESCRIPTIONS = {
    "crps_normal": ("mean CRPS of N(0, uE²)",
                    "mean over the points of the CRPS of the predictive N(0, uE²) for E, closed "
                    "form uE (z (2Φ(z) - 1) + 2φ(z) - 1/√π), z = E / uE; units of E, lower is "
                    "better"),
    "crps_student": ("mean CRPS of the Student-t(nu) with standard deviation uE",
                     "mean over the points of the CRPS of the predictive Student-t(ν) scaled "
                     "to standard deviation uE (scale uE sqrt((ν - 2)/ν)), closed form "
                     "(Gneiting & Raftery 2007); units of E, lower is better"),
    "crps_ensemble": ("mean fair CRPS of the ensemble",
                      "mean over the points of the fair ensemble CRPS (Ferro 2014) of the m "
                      "members: mean_i |x_i - y| - ΣΣ_ij |x_i - x_j| / (2 m (m - 1)), from the "
                      "member errors e_i = y - x_i (|x_i - y| = |e_i|, |x_i - x_j| = |e_i - e_j|);"
                      " units of E, lower is better"),
    "nll_normal": ("mean NLL of N(0, uE²)",
                   "½ (<Z²> + <ln uE²> + ln 2π): the nll statistic of xuqcal.stats; lower is "
                   "better"),
    "nll_student": ("mean NLL of the Student-t(nu) with standard deviation uE",
                    "mean over the points of -ln f_ν(E / s) + ln s, s = uE sqrt((ν - 2)/ν), "
                    "no constant dropped (comparable with nll_normal); lower is better"),
    "nu": ("degrees of freedom of the Student-t predictive",
           "ν of the Student-t predictive: given, or fitted to Z (attribute nu_source)"),
    "pit": ("probability integral transform of E",
            "the predictive CDF at E: Φ(E / uE) (normal) or F_ν(E / s) (Student-t); uniform "
            "on (0, 1) for calibrated predictive distributions"),
    "chi2_statistic": ("chi-square statistic of the PIT histogram",
                       "Pearson's statistic of the equal-width bin counts against equal "
                       "expected counts"),
    "chi2_pvalue": ("p-value of the chi-square test of uniformity",
                    "chi-square distribution with n_bins - 1 degrees of freedom (asymptotic); "
                    "small values reject uniformity"),
    "ks_statistic": ("Kolmogorov-Smirnov statistic of the PIT against U(0, 1)",
                     "sup |F_n(p) - p| over p in [0, 1]"),
    "ks_pvalue": ("p-value of the Kolmogorov-Smirnov test of uniformity",
                  "scipy.stats.kstest against U(0, 1); small values reject uniformity"),
    "count": ("PIT values per bin", "counts of the equal-width bins of [0, 1]"),
    "expected_count": ("expected count per bin", "n / n_bins under uniformity"),
    "band_low": ("lower bound of the per-bin band",
                 "quantile (1 - level)/2 of Binomial(n, 1/n_bins): the band of a bin's count "
                 "under uniformity (per bin, not simultaneous)"),
    "band_high": ("upper bound of the per-bin band", "quantile (1 + level)/2 of "
                  "Binomial(n, 1/n_bins)"),
}


def _attrs(name: str) -> dict[str, str]:
    long_name, description = DESCRIPTIONS[name]
    return {"long_name": long_name, "description": description}


# ------------------------------------------------------------------------- argument checks


def _check_nu(nu: object, distribution: str | None) -> float | None:
    """``nu`` given (a finite number > 2), or ``None`` (fitted); refused with ``"normal"``."""
    if nu is None:
        return None
    if distribution in ("normal", "ensemble"):
        raise ValueError(f"nu: only used with distribution='student', got nu={nu!r} with "
                         f"distribution={distribution!r}")
    if (isinstance(nu, bool) or not isinstance(nu, int | float | np.integer | np.floating)
            or not (math.isfinite(float(nu)) and float(nu) > 2.0)):
        raise ValueError(f"nu: expected a finite number > 2 (the degrees of freedom of a "
                         f"Student-t whose standard deviation is uE), or None to fit it to Z, "
                         f"got {nu!r}")
    return float(nu)


def _probabilistic_iv(ds: object, *, E: object, uE: object, distribution: object = "student",
                      nu: object = None, n_bins: object = None, level: object = None
                      ) -> tuple[str, str, float | None]:
    """Argument checks of the entry points (names, dimensions, dtypes, sizes, scalars; no data
    are read): the names of ``E`` and ``uE`` and the given ν (``None`` when fitted)."""
    E, uE = check_data_variables(ds, E, uE)
    check_choice(distribution, "distribution", DISTRIBUTIONS)
    nu = _check_nu(nu, distribution)  # type: ignore[arg-type]
    if n_bins is not None:
        check_count(n_bins, "n_bins", minimum=2)
    if level is not None:
        check_level(level)
    m = ds.sizes[SAMPLE_DIM]  # type: ignore[attr-defined]
    if distribution == "student" and nu is None and m < MIN_POINTS:
        raise ValueError(f"ds: fitting nu needs at least {MIN_POINTS} points, but the data have "
                         f"{m}; pass nu=")
    return E, uE, nu


def _members_iv(ds: xr.Dataset, members: object, E: str) -> tuple[str | None, str | None]:
    """The ensemble members of ``ds`` (no data are read): the name of the variable of member
    errors and its dimension of members, or ``(None, None)`` when ``members`` is not given and
    no variable has the role ``members`` (data without an ensemble)."""
    if members is None and not any(var.attrs.get(ROLE_ATTR) == "members"
                                   for var in ds.data_vars.values()):
        return None, None
    name = variable_with_role(ds, "members", members)  # type: ignore[arg-type]
    var = ds[name]
    if SAMPLE_DIM not in var.dims:
        raise ValueError(f"members: expected a variable over '{SAMPLE_DIM}' and a dimension of "
                         f"members, got {name!r} with dimensions {var.dims}")
    if var.dtype.kind not in "iuf":
        raise ValueError(f"members: the values of {name!r} are not numeric (dtype {var.dtype})")
    dim = var.attrs.get(MEMBER_DIM_ATTR)
    if dim not in var.dims or dim in ds[E].dims:
        candidates = [d for d in var.dims if d not in ds[E].dims]
        if len(candidates) != 1:
            raise ValueError(f"members: cannot tell the dimension of the members of {name!r} "
                             f"among {var.dims} (expected one dimension that {E} lacks)")
        dim = candidates[0]
    if var.sizes[dim] < 2:
        raise ValueError(f"members: the fair ensemble CRPS needs at least 2 members, {name!r} "
                         f"has {var.sizes[dim]} along {dim!r}")
    return name, str(dim)


# ------------------------------------------------------------------------------ the bodies


def _arrays(ds: xr.Dataset, E: str, uE: str) -> tuple[np.ndarray, np.ndarray]:
    errors = np.asarray(ds[E].values, dtype=np.float64)
    uncertainties = np.asarray(ds[uE].values, dtype=np.float64)
    check_values(errors, uncertainties)  # NaN/inf, uE <= 0, overflowing z: named errors
    return errors, uncertainties


def _student_nu(z: np.ndarray, nu: float | None, undefined: str) -> float:
    """ν given, or fitted to Z; NaN (constant Z) or ≤ 2 with an UndefinedStatisticWarning
    saying that ``undefined`` are undefined."""
    if nu is not None:
        return nu
    if np.all(z == z[0]):
        warnings.warn(f"{undefined} and nu are undefined: Z is constant (no Student-t can be "
                      "fitted); pass nu=", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
        return math.nan
    fitted, _, _ = student_t_fit(z)
    if not fitted > 2.0:
        warnings.warn(f"{undefined} are undefined: the Student-t fitted to Z has nu = "
                      f"{fitted:.3g} <= 2 (infinite variance: no Student-t has standard "
                      "deviation uE); pass nu= to use a given value", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
    return fitted


def _pit_values(errors: np.ndarray, uncertainties: np.ndarray, distribution: str,
                nu: float | None, member_errors: np.ndarray | None = None,
                seed: int = defaults.SEED) -> tuple[np.ndarray, float]:
    """PIT values and ν (NaN for the normal distribution and the ensemble). The ensemble PIT
    is the randomised rank of the observation among the member predictions: with member
    errors ``e_i = y - x_i``, the rank of 0 among ``-e_i = x_i - y``."""
    if distribution == "ensemble":
        return np.asarray(S.pit_ensemble(-member_errors, 0.0, seed=seed)), math.nan
    if distribution == "normal":
        return np.asarray(S.pit_normal(errors, uncertainties)), math.nan
    nu_used = _student_nu(errors / uncertainties, nu, "the Student-t PIT values")
    if not nu_used > 2.0:
        return np.full(errors.shape, math.nan), nu_used
    return np.asarray(S.pit_student(errors, uncertainties, nu_used)), nu_used


def _sample_coords(ds: xr.Dataset) -> dict[str, Any]:
    """The coordinates of ``ds`` over ``sample`` only (kept by the results over ``sample``)."""
    return {name: coord.variable for name, coord in ds.coords.items()
            if coord.dims == (SAMPLE_DIM,)}


#: The mean scores of :func:`proper_scores`, in the order of its ``score`` dimension.
SCORES = ("crps_normal", "crps_student", "nll_normal", "nll_student")
#: The score added to :data:`SCORES` (and to the ``score`` dimension) for data with ensemble
#: members.
ENSEMBLE_SCORE = "crps_ensemble"


def _member_values(ds: xr.Dataset, members: str, member_dim: str) -> np.ndarray:
    """The member errors as an ``M × m`` array, checked: no infinite value, at least two
    members that are not NaN at every point (NaN members are missing: stacked ensembles of
    different sizes)."""
    x = np.asarray(ds[members].transpose(SAMPLE_DIM, member_dim).values, dtype=np.float64)
    rows = (np.asarray(ds[SAMPLE_DIM].values) if SAMPLE_DIM in ds.coords
            else np.arange(x.shape[0]))
    for bad, what in ((np.isinf(x).any(axis=1), "have infinite member values"),
                      ((~np.isnan(x)).sum(axis=1) < 2,
                       "have fewer than 2 members that are not NaN (the fair ensemble CRPS "
                       "needs 2)")):
        if bad.any():
            raise ValueError(f"{members}: {int(bad.sum())} of {x.shape[0]} points {what} "
                             f"({_format_rows(rows[bad].tolist(), int(bad.sum()))})")
    return x


def _scores_body(ds: xr.Dataset, *, E: str, uE: str, nu: float | None, n_boot: int = 0,
                 method: str = "bca", level: float = defaults.LEVEL,
                 seed: int = defaults.SEED, members: str | None = None,
                 member_dim: str | None = None,
                 dependence: Dependence | None = None) -> xr.Dataset:
    """:func:`proper_scores` on NumPy-backed data (``dependence``: a dependent resample of
    the intervals, whose variable ``ds`` holds)."""
    errors, uncertainties = _arrays(ds, E, uE)
    if members is not None:
        member_errors = _member_values(ds, members, member_dim)  # type: ignore[arg-type]
    nu_used = _student_nu(errors / uncertainties, nu, "crps_student and nll_student")
    points = {"crps_normal": S.crps_normal(errors, uncertainties)}
    values = {
        "crps_normal": float(np.mean(points["crps_normal"])),
        "nll_normal": float(compute(errors, uncertainties, ["nll"])[0]),
        "crps_student": math.nan, "nll_student": math.nan, "nu": nu_used,
    }
    if nu_used > 2.0:
        points["crps_student"] = S.crps_student(errors, uncertainties, nu_used)
        points["nll_student"] = S.nll_student(errors, uncertainties, nu_used)
        values["crps_student"] = float(np.mean(points["crps_student"]))
        values["nll_student"] = float(np.mean(points["nll_student"]))
    names = SCORES
    if members is not None:
        # the predictive distribution of y is the members x_i; with e_i = y - x_i,
        # |x_i - y| = |e_i - 0| and |x_i - x_j| = |e_i - e_j|: the CRPS of the member errors at 0
        points[ENSEMBLE_SCORE] = np.asarray(S.crps_ensemble(member_errors, 0.0, fair=True))
        values[ENSEMBLE_SCORE] = float(np.mean(points[ENSEMBLE_SCORE]))
        names = (*SCORES, ENSEMBLE_SCORE)
    result = xr.Dataset({name: xr.DataArray(value) for name, value in values.items()})
    if n_boot:
        z = errors / uncertainties
        points["nll_normal"] = 0.5 * (z * z + log_square(uncertainties) + LOG_2PI)
        estimate = np.array([values[name] for name in names])
        if dependence is None:
            summaries = _score_intervals(
                {name: points.get(name) for name in names}, estimate,
                equal_count_order(uncertainties), n_boot=n_boot, method=method, level=level,
                seed=seed, names=names)
        else:
            summaries = _score_intervals(
                {name: points.get(name) for name in names}, estimate, None, n_boot=n_boot,
                method=method, level=level, seed=seed, names=names, dependence=dependence,
                variable=np.asarray(ds[dependence.variable].values))
        result = result.assign({name: xr.DataArray(summary, dims="score")
                                for name, summary in summaries.items()})
    return result


def check_score_bootstrap(n_boot: object, method: object, level: float, seed: object
                          ) -> tuple[int, int]:
    """The bootstrap arguments of the mean scores (:func:`proper_scores`,
    :func:`xuqcal.analysis.coverage.interval_coverage`): ``method`` (BCa or percentile),
    ``seed``, and ``n_boot``, 0 (no intervals) or enough replicates for ``level``; returns
    ``n_boot`` and ``seed`` normalised.

    Examples
    --------
    >>> check_score_bootstrap(0, "bca", 0.95, 0), check_score_bootstrap(200, "bca", 0.95, 1)
    ((0, 0), (200, 1))
    """
    check_choice(method, "method", ("bca", "percentile"))
    seed = check_seed(seed)
    if isinstance(n_boot, int | np.integer) and not isinstance(n_boot, bool) and n_boot == 0:
        return 0, seed
    return check_replicates(n_boot, level, "n_boot"), seed


def _score_intervals(points: dict[str, np.ndarray | None], estimate: np.ndarray,
                     order: np.ndarray | None, *, n_boot: int, method: str, level: float,
                     seed: int, names: Sequence[str] = SCORES,
                     dependence: Dependence | None = None,
                     variable: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Bootstrap bias, standard error and interval of the mean of each per-point score
    (``None``: undefined, NaN), for the scores ``names`` in that order (``estimate`` too).
    The points are taken in ``order`` (the binning order of the bootstrap of
    :func:`xuqcal.bootstrap`) and drawn from the bootstrap's streams
    (:func:`~xuqcal.core.kernels.mean_block`), so replicate ``r`` resamples the points of the
    replicate ``r`` of the data's statistics; the BCa acceleration uses the exact
    leave-one-out means ``(Σ x - x_i) / (M - 1)``. Each score's summaries depend only on its
    own points: adding a score leaves the others bit-identical.

    With a dependent resample ``dependence`` (``variable``: its variable's values, one per
    point; ``order`` is not used: the points are in their own order), the replicates are
    those of :func:`mean_score_replicates` and the BCa acceleration comes from the
    delete-one-unit jackknife."""
    names = tuple(names)
    defined = [i for i, name in enumerate(names) if points[name] is not None]
    if dependence is None:
        columns = np.ascontiguousarray(np.stack([points[names[i]][order] for i in defined],
                                                axis=1))
        m = columns.shape[0]
        replicates = np.empty((n_boot, len(defined)))
        K.mean_block(stream_key(seed, "bootstrap"), 0, n_boot, columns, replicates)
        jack = (columns.sum(axis=0) - columns) / (m - 1.0) if method == "bca" else None
        jack = None if jack is None else jack.T
    else:
        columns = np.ascontiguousarray(np.stack([points[names[i]] for i in defined], axis=1),
                                       dtype=np.float64)
        replicates, jack = mean_score_replicates(columns, variable, dependence, n_boot=n_boot,
                                                 seed=seed, jackknife=method == "bca")
    bias, se, low, high = _summarize(replicates.T, estimate[defined],
                                     jack, method=method,
                                     level=level, names=[names[i] for i in defined])
    out = {name: np.full(len(names), np.nan) for name in ("bias", "se", "ci_low", "ci_high")}
    for name, values in (("bias", bias), ("se", se), ("ci_low", low), ("ci_high", high)):
        out[name][defined] = values
    return out


def mean_score_replicates(columns: np.ndarray, variable: np.ndarray, dependence: Dependence,
                          *, n_boot: int, seed: int, jackknife: bool = True
                          ) -> tuple[np.ndarray, np.ndarray | None]:
    """The replicates ``(replicate, column)`` of the means of the per-point ``columns``
    (``M × k``, the points in their own order) under the dependent resample ``dependence``
    (``variable``: its variable's values; a checked, non-iid resample with a known block
    length), and (``jackknife``) the delete-one-unit means ``(column, unit)``.

    Replicate ``r`` is drawn from the stream ``(seed, "bootstrap-<resample>", r)`` over the
    rows of :func:`~xuqcal.analysis.dependent.row_layout`: the rows of the replicate ``r`` of
    :func:`xuqcal.bootstrap` with the same ``resample``, so that the mean score ``nll_normal``
    has the replicates of the statistic ``nll`` (to rounding: the sums differ in order).

    Examples
    --------
    >>> g = np.repeat(np.arange(4), 3)
    >>> reps, jack = mean_score_replicates(np.arange(12.0)[:, None], g,
    ...                                    Dependence("cluster", "g"), n_boot=5, seed=0)
    >>> reps.shape, jack.shape
    ((5, 1), (1, 4))
    """
    layout = row_layout(variable, dependence)
    key = stream_key(seed, f"bootstrap-{dependence.resample}")
    replicates = mean_replicates(layout, columns, key, 0, n_boot)
    jack = np.ascontiguousarray(mean_jackknife(layout, columns)) if jackknife else None
    return replicates, jack


def resolved_dependence(ds: xr.Dataset, resample: object, groups: object, block: object,
                        block_length: object, *, E: str, uE: str, n_boot: int
                        ) -> Dependence | None:
    """The checked dependent resample of :func:`proper_scores` (``None`` for ``"iid"``), its
    ``block_length="auto"`` resolved when replicates are drawn; with ``"iid"`` and
    replicates, the :class:`~xuqcal.DependenceWarning` when the points are dependent
    (:func:`xuqcal.analysis.dependent.resolved_dependence`)."""
    dependence = _resolved(ds, resample, groups, block, block_length, E=E, uE=uE,
                           warn_as="proper_scores" if n_boot else None, resolve=bool(n_boot))
    return None if dependence.iid else dependence


def _pit_body(ds: xr.Dataset, *, E: str, uE: str, distribution: str, nu: float | None,
              members: str | None = None, member_dim: str | None = None,
              seed: int = defaults.SEED) -> xr.Dataset:
    """:func:`pit` on NumPy-backed data."""
    errors, uncertainties = _arrays(ds, E, uE)
    member_errors = (None if members is None else
                     _member_values(ds, members, member_dim))  # type: ignore[arg-type]
    values, nu_used = _pit_values(errors, uncertainties, distribution, nu, member_errors, seed)
    result = xr.Dataset({"pit": (SAMPLE_DIM, values)}, coords=_sample_coords(ds))
    if distribution == "student":
        result["nu"] = xr.DataArray(nu_used)
    return result


def _test_body(ds: xr.Dataset, *, E: str, uE: str, distribution: str, nu: float | None,
               n_bins: int, level: float, members: str | None = None,
               member_dim: str | None = None, seed: int = defaults.SEED,
               band: str = "binomial") -> xr.Dataset:
    """:func:`pit_test` on NumPy-backed data."""
    errors, uncertainties = _arrays(ds, E, uE)
    member_errors = (None if members is None else
                     _member_values(ds, members, member_dim))  # type: ignore[arg-type]
    values, nu_used = _pit_values(errors, uncertainties, distribution, nu, member_errors, seed)
    test = S.pit_uniformity(values, n_bins=n_bins)
    m = errors.size
    low, high = S.pit_histogram_band(m, n_bins, level, band)
    result = xr.Dataset({
        "chi2_statistic": xr.DataArray(float(test.chi2_statistic)),
        "chi2_pvalue": xr.DataArray(float(test.chi2_pvalue)),
        "ks_statistic": xr.DataArray(float(test.ks_statistic)),
        "ks_pvalue": xr.DataArray(float(test.ks_pvalue)),
        "count": (BIN_DIM, np.asarray(test.counts, dtype=np.int64)),
        "expected_count": xr.DataArray(m / n_bins),
        "band_low": (BIN_DIM, low), "band_high": (BIN_DIM, high),
    }, coords=_bin_coords(n_bins))
    if distribution == "student":
        result["nu"] = xr.DataArray(nu_used)
    return result


def _bin_coords(n_bins: int) -> dict[str, Any]:
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return {BIN_DIM: (BIN_DIM, np.arange(n_bins, dtype=np.int64)),
            "bin_low": (BIN_DIM, edges[:-1], {"long_name": "lower edge of the PIT bin"}),
            "bin_high": (BIN_DIM, edges[1:], {"long_name": "upper edge of the PIT bin"})}


def _checked(ds: xr.Dataset, E: str, uE: str) -> xr.Dataset:
    """``ds[[E, uE]]`` with its values checked: at once when NumPy-backed (rows named by the
    ``sample`` coordinate), in the graph when Dask-backed."""
    return validate_dataset(ds[[E, uE]], E=E, uE=uE, features=())


def _ensemble_inputs(ds: xr.Dataset, distribution: str, members: object, seed: object,
                     E: str, uE: str) -> tuple[dict[str, Any], xr.Dataset, list[str]]:
    """For ``distribution="ensemble"``: the members (checked, no data read; required) and the
    seed of the tie-breaking draws as attributes, the checked variables and their names; for
    the other distributions ``members`` must not be given."""
    if distribution != "ensemble":
        if members is not None:
            raise ValueError(f"members: only used with distribution='ensemble', got "
                             f"members={members!r} with distribution={distribution!r}")
        return {}, _checked(ds, E, uE), [E, uE]
    seed = check_seed(seed)
    name, dim = _members_iv(ds, members, E)
    if name is None:
        raise ValueError("members: distribution='ensemble' needs the member errors (a variable "
                         "with role 'members', as xuqcal.from_ensemble makes), and the data "
                         "have none; pass members='name'")
    checked = validate_dataset(ds[[E, uE, name]], E=E, uE=uE, features=())
    return ({"members": name, "member_dim": dim, "seed": seed,
             "pit_ensemble": "randomised rank of the observation among the member "
                             "predictions (ties and rank spread by one uniform draw, stream "
                             "(seed, 'pit:ensemble'))"}, checked, [E, uE, name])


def _ensemble_kwargs(ensemble: dict[str, Any]) -> dict[str, Any]:
    return ({"members": ensemble["members"], "member_dim": ensemble["member_dim"],
             "seed": ensemble["seed"]} if ensemble else {})


def _nu_attrs(nu: float | None) -> dict[str, Any]:
    return {"nu_source": NU_GIVEN if nu is not None else NU_FITTED}


# ------------------------------------------------------------------------------ entry points


@broadcast
@by_role
def proper_scores(ds: xr.Dataset, *, nu: float | None = None,
                  n_boot: int = defaults.N_BOOT_SCORES,
                  method: str = "bca", level: float = defaults.LEVEL, seed: int = defaults.SEED,
                  E: str = defaults.E, uE: str = defaults.UE,
                  members: str | None = None, resample: str = "iid",
                  groups: str | None = None, block: str | None = None,
                  block_length: int | str | None = None) -> xr.Dataset:
    """Mean proper scores of the predictive distributions of ``E``: CRPS and NLL of
    ``N(0, uE²)`` and of the Student-t(ν) with standard deviation ``uE``, and the fair CRPS of
    the ensemble when the data hold its members (:func:`~xuqcal.io.from_ensemble`).

    The CRPS (continuous ranked probability score) rewards both calibration and sharpness and
    has the unit of ``E``; the NLL is the negative log predictive density. Both are *proper*:
    their expectation is smallest for the true predictive distribution, so they rank models
    (or uncertainty estimators) on the same data. Neither has a reference value that says
    "calibrated": use them to compare, and the PIT (:func:`pit_test`) or the statistics of
    :func:`xuqcal.validate` to validate.

    **Ensembles.** When ``ds`` holds the member errors ``e_i = y - x_i`` of an ensemble (the
    variable of role ``members`` that :func:`~xuqcal.io.from_ensemble` keeps, or ``members=``),
    the mean fair ensemble CRPS (Ferro 2014) of the ``m`` member predictions ``x_i`` is added
    as ``crps_ensemble``: ``mean_i |x_i - y| - ΣΣ_ij |x_i - x_j| / (2 m (m - 1))``, computed by
    :func:`xuqcal.core.scores.crps_ensemble` from the member errors (``|x_i - y| = |e_i|``,
    ``|x_i - x_j| = |e_i - e_j|``). NaN members are missing (stacked ensembles of different
    sizes); each point needs two members that are not NaN. It scores the members themselves,
    whereas ``crps_normal`` scores ``N(0, uE²)`` built from their mean and standard deviation.
    Without members the result is exactly the one of data without an ensemble.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE`` (extra dimensions are broadcast over), and
        optionally the member errors of an ensemble over ``sample`` and a member dimension.
    nu : float, optional
        Degrees of freedom (> 2) of the Student-t predictive; default: fitted to Z (see the
        module documentation), per slice.
    n_boot : int
        Bootstrap replicates of the intervals of the mean scores (0, the default: no
        intervals; else at least ``ceil(2 / (1 - level))``). Each replicate resamples the
        points as the replicate of the same number of :func:`xuqcal.bootstrap` does (same
        ``seed``, same streams), so the scores' intervals and the statistics' intervals rest
        on the same resamples. ν is not refitted per replicate (it is a parameter of the
        predictive distribution, fitted once).
    method : {"bca", "percentile"}
        Interval method (BCa: exact leave-one-out means for the acceleration).
    level : float
        Confidence level of the intervals.
    seed : int
        Seed of the bootstrap streams.
    E, uE : str
        Names of the error and uncertainty variables.
    members : str, optional
        Name of the variable of member errors; by default the variable of role ``members``
        when there is one (no ensemble score otherwise).
    resample : {"iid", "cluster", "moving", "circular", "stationary"}
        How the bootstrap of the intervals resamples the points, as :func:`xuqcal.bootstrap`
        (:mod:`xuqcal.analysis.dependent`): independently (default; the results are those
        of earlier versions, bit for bit), by whole groups of ``groups``, or by blocks of
        ``block_length`` consecutive points in the order of ``block``. Under a dependent
        resample, replicate ``r`` resamples the rows of the replicate ``r`` of
        :func:`xuqcal.bootstrap` with the same ``resample`` and ``seed`` (the streams
        ``(seed, "bootstrap-<resample>", r)``; the replicates of ``nll_normal`` are those of
        the statistic ``nll``, to rounding), and the BCa acceleration comes from the
        delete-one-group (or delete-one-block) jackknife. Only the intervals depend on it
        (the mean scores do not); with ``n_boot=0`` it is checked and not used.
    groups : str, optional
        With ``resample="cluster"``: the variable over ``sample`` alone holding each point's
        group (e.g. ``"structure_id"``); shared by every slice of extra dimensions.
    block : str, optional
        With a block scheme: the variable over ``sample`` alone that orders the points (e.g.
        ``"time"``).
    block_length : int or "auto", optional
        With a block scheme: points per block (the mean length for ``"stationary"``);
        ``"auto"``: Politis & White's length for ``Z²`` in the order of ``block``, per slice
        (:func:`~xuqcal.analysis.dependent.automatic_length`; the data are read at the call).

    Returns
    -------
    xarray.Dataset
        Scalars (per slice): ``crps_normal``, ``crps_student``, ``nll_normal`` (the ``nll``
        statistic of :func:`xuqcal.stats`), ``nll_student``, ``nu`` and, with members,
        ``crps_ensemble``, each with a ``long_name`` and a ``description``; with ``n_boot``,
        over ``score`` (the four mean scores, :data:`SCORES`, then ``crps_ensemble`` with
        members): ``bias``, ``se``, ``ci_low``, ``ci_high``; attributes ``nu_source``,
        ``n_samples``, ``E``, ``uE``, ``xuqcal_version``, ``created`` (``members``,
        ``member_dim`` with members; ``n_boot``, ``method``, ``level``, ``seed`` with
        intervals; with intervals of a dependent resample, those of
        :meth:`~xuqcal.analysis.dependent.Dependence.attrs`: ``resample``, ``groups`` or
        ``block``, ``block_length``, ``block_length_rule`` and ``jackknife``, the
        delete-one-unit jackknife of BCa). Lazy on Dask-backed data.

    Raises
    ------
    ValueError
        Before any work, for a ``ds`` without ``E`` or ``uE``, ``nu <= 2``, fewer than 3
        points when ν is fitted, a ``members`` that is not a numeric variable over ``sample``
        and one member dimension of at least 2 members (or several variables of role
        ``members``); for NaN, infinite or non-positive values of ``E`` and ``uE``, infinite
        members or points with fewer than 2 members that are not NaN (naming the rows: at once
        for NumPy-backed data, when computed for Dask-backed data); before any work, for
        ``resample``, ``groups``, ``block`` or ``block_length`` refused by
        :func:`~xuqcal.analysis.dependent.check_dependence` (the message starts with the
        parameter's name); for a ``groups`` variable with missing values or fewer than 2
        groups (when the intervals are computed).

    Warns
    -----
    UndefinedStatisticWarning
        When the fitted ν is ≤ 2 or Z is constant (the Student results are then NaN).

    Examples
    --------
    >>> import xuqcal
    >>> s = proper_scores(xuqcal.synthetic.nig(2000, nu=6, seed=0), nu=6)
    >>> sorted(s.data_vars)
    ['crps_normal', 'crps_student', 'nll_normal', 'nll_student', 'nu']
    >>> bool(s.crps_normal > 0), float(s.nu)
    (True, 6.0)

    With the members of an ensemble (here 3 members and 2 points):

    >>> from xuqcal.io import from_ensemble
    >>> ens = from_ensemble([[0.0, 1.0, 3.0], [1.0, 2.0, 2.5]], [2.0, 2.0], axis=1)
    >>> e = proper_scores(ens, nu=6)  # fair CRPS 4/3 - 12/12 = 1/3, then 1/2 - 6/12 = 0
    >>> round(float(e.crps_ensemble), 4), e.attrs["members"]
    (0.1667, 'members')
    """
    E, uE, nu = _probabilistic_iv(ds, E=E, uE=uE, nu=nu, level=level)
    members, member_dim = _members_iv(ds, members, E)
    n_boot, seed = check_score_bootstrap(n_boot, method, level, seed)
    dependence = resolved_dependence(ds, resample, groups, block, block_length, E=E, uE=uE,
                                     n_boot=n_boot)
    if n_boot and method == "bca" and ds.sizes[SAMPLE_DIM] < 2:
        raise ValueError("ds: the BCa interval needs at least 2 points (leave-one-out means)")
    f8 = np.float64
    names = ("crps_normal", "crps_student", "nll_normal", "nll_student", "nu")
    score_names = SCORES
    ensemble: dict[str, Any] = {}
    if members is not None:
        names, score_names = (*names, ENSEMBLE_SCORE), (*SCORES, ENSEMBLE_SCORE)
        ensemble = {"members": members, "member_dim": member_dim}
    variables = {name: ((), f8, _attrs(name)) for name in names}
    bootstrap = {}
    if n_boot:
        variables.update({name: (("score",), f8, {"long_name": text}) for name, text in (
            ("bias", "bootstrap bias of the mean score"),
            ("se", "bootstrap standard error of the mean score"),
            ("ci_low", "lower bound of the interval of the mean score"),
            ("ci_high", "upper bound of the interval of the mean score"))})
        bootstrap = {"n_boot": n_boot, "method": method, "level": level, "seed": seed,
                     "random_streams": RNG_DESCRIPTION,
                     **(dependence.attrs() if dependence is not None else {})}
    if not n_boot:
        dependence = None  # no intervals: nothing is resampled
    extra = [] if dependence is None else [dependence.variable]
    layout = template(variables, {"score": len(score_names)} if n_boot else {},
                      coords={"score": ("score", list(score_names))} if n_boot else None,
                      attrs=provenance(n_samples=ds.sizes[SAMPLE_DIM], E=E, uE=uE,
                                       **_nu_attrs(nu), **ensemble, **bootstrap))
    dependent = {} if dependence is None else {"dependence": dependence}
    if members is None:
        checked = (_checked(ds, E, uE) if dependence is None else
                   validate_dataset(ds[[E, uE, *extra]], E=E, uE=uE, features=()))
        result = analysis(_scores_body, checked, [E, uE, *extra], lambda: layout, E=E,
                          uE=uE, nu=nu, n_boot=n_boot, method=method, level=level, seed=seed,
                          **dependent)
    else:
        checked = validate_dataset(ds[[E, uE, members, *extra]], E=E, uE=uE, features=())
        result = analysis(_scores_body, checked, [E, uE, members, *extra], lambda: layout,
                          E=E, uE=uE, nu=nu, n_boot=n_boot, method=method, level=level,
                          seed=seed, members=members, member_dim=member_dim, **dependent)
    return result.assign_coords(score=list(score_names)) if n_boot else result


@broadcast
@by_role
def pit(ds: xr.Dataset, *, distribution: str = "normal", nu: float | None = None,
        members: str | None = None, seed: int = defaults.SEED, E: str = defaults.E,
        uE: str = defaults.UE) -> xr.Dataset:
    """Probability integral transform of every point: the predictive CDF at ``E``.

    ``Φ(E / uE)`` for ``distribution="normal"``, ``F_ν(E / s)`` with ``s = uE sqrt((ν - 2)/ν)``
    for ``"student"``; for ``"ensemble"`` (data of :func:`xuqcal.from_ensemble`), the
    randomised rank of the observation among the member predictions
    (:func:`xuqcal.core.scores.pit_ensemble`: ties and the spread within a rank drawn from the
    stream ``(seed, "pit:ensemble")``), the same orientation as ``Φ(E / uE)`` with
    ``E = observed - mean prediction``. For calibrated predictive distributions the values
    are uniform on (0, 1): a U-shaped histogram means uncertainties too small, a hump too
    large, a slope a bias (:func:`pit_test`, :func:`xuqcal.plot.pit`). ``E`` is the
    predicted quantity: with ``E = prediction - observation`` the PIT of the observation is
    ``1 - pit``.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE`` (extra dimensions are broadcast over).
    distribution : {"normal", "student", "ensemble"}
        The predictive distribution.
    nu : float, optional
        Degrees of freedom (> 2) of ``"student"``; default: fitted to Z, per slice.
    members : str, optional
        With ``"ensemble"``: the variable of member errors (default: the one with role
        ``members``).
    seed : int
        With ``"ensemble"``: seed of the tie-breaking draws.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        ``pit`` over ``sample`` (with the ``sample`` coordinates of ``ds``; NaN at absent
        points of a slice) and, for ``"student"``, the scalar ``nu``; attributes
        ``distribution``, ``nu_source`` (Student), ``n_samples``. Lazy on Dask-backed data.

    Raises
    ------
    ValueError
        As :func:`proper_scores`, and for an unknown ``distribution`` or ``nu`` given with
        ``"normal"``.

    Warns
    -----
    UndefinedStatisticWarning
        As :func:`proper_scores` (the Student PIT values are then NaN).

    Examples
    --------
    >>> import xuqcal
    >>> p = pit(xuqcal.synthetic.nig(1000, nu=6, seed=0))
    >>> p.pit.dims, bool(0 < p.pit.min() and p.pit.max() < 1)
    (('sample',), True)
    """
    E, uE, nu = _probabilistic_iv(ds, E=E, uE=uE, distribution=distribution, nu=nu)
    f8 = np.float64
    variables: dict[str, Any] = {"pit": ((SAMPLE_DIM,), f8, _attrs("pit"))}
    if distribution == "student":
        variables["nu"] = ((), f8, _attrs("nu"))
    attrs = {"distribution": str(distribution),
             **(_nu_attrs(nu) if distribution == "student" else {})}
    ensemble, checked, names = _ensemble_inputs(ds, distribution, members, seed, E, uE)
    layout = template(variables, {SAMPLE_DIM: ds.sizes[SAMPLE_DIM]}, _sample_coords(ds),
                      attrs=provenance(n_samples=ds.sizes[SAMPLE_DIM], E=E, uE=uE, **attrs,
                                       **ensemble))
    return analysis(_pit_body, checked, names, lambda: layout, E=E, uE=uE,
                    distribution=distribution, nu=nu, **_ensemble_kwargs(ensemble))


@broadcast
@by_role
def pit_test(ds: xr.Dataset, *, distribution: str = "normal", nu: float | None = None,
             n_bins: int = defaults.N_BINS_PIT, level: float = defaults.LEVEL,
             members: str | None = None, seed: int = defaults.SEED, E: str = defaults.E,
             uE: str = defaults.UE, band: str | None = None) -> xr.Dataset:
    """Uniformity tests of the PIT (:func:`pit`): chi-square test of the histogram counts and
    Kolmogorov–Smirnov test against U(0, 1) (:func:`xuqcal.core.scores.pit_uniformity`),
    with the histogram and its per-bin band.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE`` (extra dimensions are broadcast over).
    distribution : {"normal", "student", "ensemble"}
        The predictive distribution (:func:`pit`).
    nu : float, optional
        Degrees of freedom (> 2) of ``"student"``; default: fitted to Z, per slice.
    n_bins : int
        Number of equal-width bins of the histogram and of the chi-square test.
    level : float
        Probability of the per-bin band of the counts under uniformity
        (:func:`xuqcal.core.scores.pit_histogram_band`).
    band : {"binomial", "poisson"}, optional
        The distribution of a bin's count under uniformity for that band: Binomial(n,
        1/n_bins), or Poisson(n / n_bins) as ErrViewLib's ``plotPIT``. Default ``None``: the
        option ``conventions`` (:func:`xuqcal.options.convention`).
    members, seed
        With ``"ensemble"``: as in :func:`pit`.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Scalars ``chi2_statistic``, ``chi2_pvalue``, ``ks_statistic``, ``ks_pvalue``,
        ``expected_count`` (and ``nu`` for ``"student"``); over ``bin`` (coordinates
        ``bin_low``, ``bin_high``): ``count``, ``band_low``, ``band_high``. Lazy on
        Dask-backed data.

    Raises
    ------
    ValueError
        As :func:`pit`, and for ``n_bins < 2`` or a level outside (0, 1).

    Warns
    -----
    FewPointsPerBinWarning
        With fewer than 5 expected points per bin (the chi-square p-value is approximate).
    UndefinedStatisticWarning
        As :func:`proper_scores` (the Student results are then NaN).

    Examples
    --------
    >>> import xuqcal
    >>> t = pit_test(xuqcal.synthetic.nig(2000, nu=6, seed=0))
    >>> int(t["count"].sum()), bool(t.chi2_pvalue > 0.01 and t.ks_pvalue > 0.01)
    (2000, True)
    >>> small = xuqcal.synthetic.nig(2000, nu=6, seed=0, uE_scale=0.7)  # uE 30 % too small
    >>> bool(pit_test(small).ks_pvalue < 1e-6)
    True
    """
    E, uE, nu = _probabilistic_iv(ds, E=E, uE=uE, distribution=distribution, nu=nu,
                                  n_bins=n_bins, level=level)
    band = convention("band", band)
    f8 = np.float64
    variables: dict[str, Any] = {
        name: ((), f8, _attrs(name)) for name in (
            "chi2_statistic", "chi2_pvalue", "ks_statistic", "ks_pvalue", "expected_count")}
    variables.update({"count": ((BIN_DIM,), np.int64, _attrs("count")),
                      "band_low": ((BIN_DIM,), f8, _attrs("band_low")),
                      "band_high": ((BIN_DIM,), f8, _attrs("band_high"))})
    if distribution == "student":
        variables["nu"] = ((), f8, _attrs("nu"))
    attrs = {"distribution": str(distribution), "n_bins": int(n_bins), "level": float(level),
             "tests": "chi-square (scipy.stats.chisquare, n_bins - 1 degrees of freedom) and "
                      "Kolmogorov-Smirnov (scipy.stats.kstest) against U(0, 1)",
             **(_nu_attrs(nu) if distribution == "student" else {}),
             **({"band": "Poisson(n / n_bins) quantiles (ErrViewLib plotPIT)"}
                if band == "poisson" else {})}
    ensemble, checked, names = _ensemble_inputs(ds, distribution, members, seed, E, uE)
    layout = template(variables, {BIN_DIM: n_bins}, _bin_coords(n_bins),
                      attrs=provenance(n_samples=ds.sizes[SAMPLE_DIM], E=E, uE=uE, **attrs,
                                       **ensemble))
    return analysis(_test_body, checked, names, lambda: layout, E=E, uE=uE,
                    distribution=distribution, nu=nu, n_bins=n_bins, level=level,
                    **_ensemble_kwargs(ensemble),
                    **({"band": band} if band != "binomial" else {}))
