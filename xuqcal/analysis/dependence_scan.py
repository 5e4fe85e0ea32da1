"""A scan of the data for dependence that an iid analysis ignores.

Every iid analysis (``resample="iid"``, the default) assumes independent points. When the
data carry a variable that groups the points (``structure_id``) or orders them (``time``,
``lat``) along which the z-scores are dependent, its intervals are too narrow.
:func:`scan_dependence` tests each such variable and :func:`warn_if_dependent` issues one
:class:`DependenceWarning` per significant one, naming the ``resample=`` to use.

**Candidates.** The variables over ``sample`` alone, other than ``E``, ``uE`` and the
``sample`` coordinate itself, each tested one way:

- *ordered*: a ``datetime64`` or ``timedelta64`` variable, or a numeric one marked as an axis:
  by its name (:data:`AXIS_NAMES`, case-insensitive), its ``axis`` attribute (``X``, ``Y``,
  ``Z``, ``T``), its ``standard_name`` (:data:`AXIS_STANDARD_NAMES`) or CF time ``units``
  (``"<unit> since <date>"``). Statistics: the lag-1 autocorrelations r₁ of Z and of Z² in
  the stable sorted order of the variable (points with equal values, e.g. the ``lat`` of a
  stacked grid, keep their order; the estimator of :func:`xuqcal.describe`). Test: ``r₁ √n``
  of the ranks, ``N(0, 1)`` for independent points.
- *groups*: else, an integer, boolean, string/object or categorical variable with between 2
  and M/2 distinct values (on average at least 2 points per group). Statistics: the
  intra-class correlations of Z and of Z² (one-way ANOVA estimator, as
  :func:`xuqcal.describe`). Test: the one-way ANOVA F-tests between the groups of the ranks.

The tests read the ranks of Z and of Z² (ties averaged; the rank transform of Conover & Iman
1981, a Kruskal-Wallis-like F-test): on independent heavy-tailed z-scores (Student-t, 3 to 5
degrees of freedom) the F-tests and the autocorrelation tests of the raw Z² give 5 to 10 times
the nominal rate of false alarms, one extreme Z² dominating a group mean or a product of
neighbours; those of the ranks keep it. The statistics reported are those of Z and Z².

A float variable not marked as an axis (a feature, e.g. ``x``) is never a candidate: sorted by
a feature along which the model is miscalibrated, Z and Z² are autocorrelated even for
independent points (neighbours in the feature share the miscalibration). That is a lack of
adaptivity, which the local analyses measure, not a dependence between the points, and a block
bootstrap would not be the remedy. The names ``x``, ``y`` and ``z`` are therefore not in
:data:`AXIS_NAMES` (mark a spatial coordinate with ``attrs["axis"]`` instead).

**Threshold.** A candidate is significant when the smaller p-value of its two tests (Z and
Z²), times 2 (Bonferroni), is below :data:`ALPHA` = 0.001: a false alarm about once in a
thousand data sets per candidate variable.

**What is never read.** The scan runs only on NumPy-backed data: when ``E`` or ``uE`` are
Dask-backed or otherwise lazy (not in memory), it returns no finding, and a lazy candidate is
skipped, so that a check never computes or loads anything. It also returns nothing for fewer
than :data:`MIN_POINTS` points or non-finite z-scores (the analysis reports those itself), and
skips a candidate with missing values (NaN, NaT, None).
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr
from scipy import special

from xuqcal._lazy import lazy_module
from xuqcal.analysis.diagnostics import (
    acf1,
    anova_mean_squares,
    design_effect,
    icc_from_mean_squares,
)
from xuqcal.core import defaults
from xuqcal.core.checks import user_stacklevel
from xuqcal.io.schema import SAMPLE_DIM
from xuqcal.options import OPTIONS

stats = lazy_module("scipy.stats")

__all__ = ["ALPHA", "AXIS_NAMES", "AXIS_STANDARD_NAMES", "MIN_POINTS", "DependenceWarning",
           "Finding", "scan_dependence", "warn_if_dependent"]

#: Family-wise level of the test of one candidate variable: significant when
#: ``min(2 min(p_Z, p_Z²), 1) < ALPHA`` (Bonferroni over Z and Z²).
ALPHA = 1e-3
#: ``|r₁| √n`` above which a lag-1 autocorrelation is significant: the two-sided normal
#: quantile of ``ALPHA`` with the Bonferroni correction over Z and Z² (about 3.48).
ORDER_CRITICAL = float(-special.ndtri(ALPHA / 4.0))  # stats.norm.isf, without importing stats
#: Least number of points scanned (fewer: no finding).
MIN_POINTS = 50
#: Fewer groups than this: the warning adds that a cluster bootstrap needs many groups.
FEW_GROUPS = 20
#: Names (case-insensitive) of the numeric variables taken as an axis that orders the points.
AXIS_NAMES = frozenset({
    "time", "date", "datetime", "timestamp", "step", "timestep", "time_step", "frame",
    "lat", "lon", "latitude", "longitude", "depth", "level",
})
#: CF ``standard_name`` attributes of an axis.
AXIS_STANDARD_NAMES = frozenset({
    "time", "latitude", "longitude", "depth", "altitude", "height",
    "projection_x_coordinate", "projection_y_coordinate", "grid_latitude", "grid_longitude",
})
_AXIS_ATTRS = frozenset({"X", "Y", "Z", "T"})
_CF_TIME_UNITS = re.compile(r"^\s*\w+\s+since\s+", re.IGNORECASE)


class DependenceWarning(UserWarning):
    """An iid analysis runs on data that carry a group or ordered variable along which the
    points are significantly dependent: its intervals are likely too narrow.

    The message names the variable and the ``resample=`` to use. Turn the check off with
    ``xuqcal.set_options(dependence_check=False)``, or filter it like any warning, e.g.
    ``warnings.simplefilter("ignore", DependenceWarning)``.
    """


@dataclass(frozen=True)
class Finding:
    """The dependence test of one candidate variable of :func:`scan_dependence`.

    Attributes
    ----------
    variable : str
        The variable tested.
    kind : str
        ``"groups"`` (one-way ANOVA between its groups) or ``"order"`` (lag-1 autocorrelation
        in its sorted order).
    statistic : str
        ``"ICC"`` (intra-class correlation, one-way ANOVA estimator) or ``"lag-1
        autocorrelation"``.
    z, z2 : float
        The statistic of Z and of Z².
    p_value : float
        ``min(2 min(p_Z, p_Z²), 1)``: F-tests of equal group means of the ranks of Z and of
        Z², or two-sided normal tests of their ``r₁ √n`` (see the module).
    design_effect : float
        The larger of the design effects of the means of Z and Z²: ``1 + (m0 - 1) ICC`` (m0
        the size-weighted mean group size), or ``(1 + r₁) / (1 - r₁)`` (an AR(1)
        approximation; inf for ``r₁ = 1``).
    n_effective : float
        The number of points over the design effect.
    n_points : int
        The number of points M.
    n_groups : int or None
        The number of groups (``kind="groups"``), else None.
    resample : str
        The arguments to use instead of ``resample='iid'``, as text.
    significant : bool
        ``p_value < ALPHA``.
    """

    variable: str
    kind: str
    statistic: str
    z: float
    z2: float
    p_value: float
    design_effect: float
    n_effective: float
    n_points: int
    n_groups: int | None
    resample: str
    significant: bool

    def message(self, analysis: str) -> str:
        """The text of the :class:`DependenceWarning` of ``analysis`` (e.g. ``"validate"``)."""
        p = f"p = {self.p_value:.1g}" if self.p_value > 0 else "p < 1e-300"
        name = repr(self.variable)
        if self.kind == "groups":
            where = f"over {self.n_groups} groups of {name}"
        else:
            where = f"in the order of {name}"
        effect = f"design effect {self.design_effect:.3g}" + (
            "" if self.kind == "groups" else " (AR(1) approximation)")
        text = (f"resample: {analysis} treats the points as independent (resample='iid'), but "
                f"they are dependent along {name}: {self.statistic} of Z = {self.z:.2f}, of "
                f"Z² = {self.z2:.2f} {where} ({p}), {effect}, about {self.n_effective:.0f} "
                f"effective points of {self.n_points}. The iid "
                f"intervals are likely too narrow: use {self.resample}.")
        if self.n_groups is not None and self.n_groups < FEW_GROUPS:
            text += (f" With only {self.n_groups} groups, a cluster bootstrap is imprecise, "
                     "and the difference may rather be a difference of calibration between "
                     "the groups (analyse them one by one).")
        return text + " Turn this check off with xuqcal.set_options(dependence_check=False)."


def _in_memory(ds: xr.Dataset, name: object) -> bool:
    """Whether the variable ``name`` of ``ds`` holds NumPy data or is an index (pandas, in
    memory): reading it neither computes a Dask graph nor loads from a file."""
    variable = ds.variables[name]
    return variable.chunks is None and (name in ds.xindexes
                                        or bool(getattr(variable, "_in_memory", True)))


def _is_axis(name: str, variable: xr.Variable) -> bool:
    dtype = variable.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "mM":
        return True
    if not (isinstance(dtype, np.dtype) and dtype.kind in "iuf"):
        return False
    attrs = variable.attrs
    units = attrs.get("units")
    return (name.lower() in AXIS_NAMES
            or str(attrs.get("axis", "")).upper() in _AXIS_ATTRS
            or str(attrs.get("standard_name", "")).lower() in AXIS_STANDARD_NAMES
            or (isinstance(units, str) and _CF_TIME_UNITS.match(units) is not None))


def _is_group_like(variable: xr.Variable) -> bool:
    dtype = variable.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return True
    if isinstance(dtype, np.dtype):
        return dtype.kind in "biuOUST"
    return (pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype)
            or pd.api.types.is_string_dtype(dtype))


def _finding(variable: str, kind: str, stat_z: float, stat_z2: float, p_z: float,
             p_z2: float, effect: float, m: int, n_groups: int | None) -> Finding:
    p = min(2.0 * min(p_z, p_z2), 1.0)
    if kind == "groups":
        statistic, resample = "ICC", f"resample='cluster', groups={variable!r}"
    else:
        statistic = "lag-1 autocorrelation"
        resample = f"resample='circular', block={variable!r}, block_length='auto'"
    return Finding(variable, kind, statistic, float(stat_z), float(stat_z2), float(p),
                   float(effect), m / effect if effect > 0 else math.inf, m, n_groups,
                   resample, bool(p < ALPHA))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """The ranks ``0 .. n - 1`` of ``x``, ties given their average rank."""
    order = np.argsort(x)
    ordered = x[order]
    new = np.empty(x.size, dtype=bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], x.size)
    ranks = np.empty(x.size)
    ranks[order] = ((starts + ends - 1) / 2.0)[np.cumsum(new) - 1]
    return ranks


def _f_test(x: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> float:
    """The p-value of the one-way ANOVA F-test of equal means of ``x`` in the groups."""
    between, within, _ = anova_mean_squares(x, codes, sizes)
    if within > 0:
        return float(stats.f.sf(between / within, sizes.size - 1, x.size - sizes.size))
    return 0.0 if between > 0 else 1.0  # equal values within each group


def _groups_test(name: str, values: np.ndarray, z: np.ndarray, z2: np.ndarray,
                 ranks: tuple[np.ndarray, np.ndarray]) -> Finding | None:
    m = z.size
    codes, uniques = pd.factorize(values, sort=True)  # describe's codes: the same ICC
    g = int(uniques.size)
    if not 2 <= g <= m // 2:
        return None
    sizes = np.bincount(codes, minlength=g).astype(np.float64)
    icc = []
    for x in (z, z2):
        between, within, m0 = anova_mean_squares(x, codes, sizes)
        icc.append(icc_from_mean_squares(between, within, m0) if between + within > 0
                   else 0.0)
    effect = max(design_effect(icc[0], m0), design_effect(icc[1], m0))
    p_z, p_z2 = (_f_test(rank, codes, sizes) for rank in ranks)
    return _finding(name, "groups", icc[0], icc[1], p_z, p_z2, effect, m, g)


def _order_test(name: str, values: np.ndarray, z: np.ndarray,
                ranks: tuple[np.ndarray, np.ndarray]) -> Finding | None:
    order = np.argsort(values, kind="stable")
    if values[order[0]] == values[order[-1]]:  # constant: it orders nothing
        return None
    ordered = z[order]
    r = [acf1(x) if np.ptp(x) > 0 else 0.0 for x in (ordered, ordered**2)]
    p = []
    for rank in ranks:
        r1 = acf1(rank[order]) if np.ptp(rank) > 0 else 0.0
        p.append(float(2.0 * stats.norm.sf(abs(r1) * math.sqrt(z.size))))
    top = max(r)
    effect = math.inf if top >= 1.0 else max((1.0 + top) / (1.0 - top), 0.0)
    return _finding(name, "order", r[0], r[1], p[0], p[1], effect, z.size, None)


def scan_dependence(ds: xr.Dataset, *, E: str = defaults.E, uE: str = defaults.UE
                    ) -> list[Finding]:
    """Test each group or ordered variable of ``ds`` for a dependence of the z-scores.

    See the module for the candidates, the tests and the threshold. Nothing lazy is read:
    the scan runs only on NumPy-backed data.

    Parameters
    ----------
    ds : xarray.Dataset
        Data over ``sample`` with ``E`` and ``uE``.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    list of Finding
        One per candidate tested, in the order of ``ds.variables``; ``significant`` marks
        those whose p-value is below :data:`ALPHA`. Empty for fewer than :data:`MIN_POINTS`
        points, lazy or missing ``E``/``uE``, ``E``/``uE`` not over ``sample`` alone, or
        non-finite or constant z-scores.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> g = np.repeat(np.arange(100), 20)  # 100 groups of 20 points sharing 30 % of Z
    >>> z = np.sqrt(0.3) * rng.normal(size=100)[g] + np.sqrt(0.7) * rng.normal(size=2000)
    >>> ds = xr.Dataset({"E": ("sample", z), "uE": ("sample", np.ones(2000)),
    ...                  "structure_id": ("sample", g)})
    >>> [(f.variable, f.significant, f.resample) for f in scan_dependence(ds)]
    [('structure_id', True, "resample='cluster', groups='structure_id'")]
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    variables = ds.variables
    if E not in variables or uE not in variables:
        return []
    e_var, u_var = variables[E], variables[uE]
    if (e_var.dims != (SAMPLE_DIM,) or u_var.dims != (SAMPLE_DIM,)
            or not (_in_memory(ds, E) and _in_memory(ds, uE))):
        return []
    m = int(ds.sizes[SAMPLE_DIM])
    if m < MIN_POINTS:
        return []
    with np.errstate(all="ignore"):
        try:
            z = np.asarray(e_var.values, dtype=np.float64) / np.asarray(u_var.values,
                                                                        dtype=np.float64)
        except (TypeError, ValueError):
            return []
        z2 = z**2
        if not (np.isfinite(z2).all() and np.ptp(z) > 0):
            return []
        findings: list[Finding] = []
        ranks: tuple[np.ndarray, np.ndarray] | None = None  # of Z and Z², once
        for name, variable in variables.items():
            if (name in (E, uE, SAMPLE_DIM) or variable.dims != (SAMPLE_DIM,)
                    or not isinstance(name, str) or not _in_memory(ds, name)):
                continue
            axis = _is_axis(name, variable)
            if not (axis or _is_group_like(variable)):
                continue
            values = np.asarray(variable.values)
            if pd.isna(values).any():
                continue
            if ranks is None:
                ranks = (_average_ranks(z), _average_ranks(z2))
            found = (_order_test(name, values, z, ranks) if axis
                     else _groups_test(name, values, z, z2, ranks))
            if found is not None:
                findings.append(found)
    return findings


def warn_if_dependent(ds: xr.Dataset, *, E: str = defaults.E, uE: str = defaults.UE,
                      analysis: str, stacklevel: int | None = None) -> list[Finding]:
    """Issue one :class:`DependenceWarning` per significant finding of
    :func:`scan_dependence`, for an iid analysis about to run on ``ds``.

    Each names ``analysis``, the variable, its statistic (ICC or lag-1 autocorrelation of Z
    and Z²), the p-value, the design effect, the ``resample=`` to use and that the iid
    intervals are likely too narrow. Nothing is scanned when the option
    ``dependence_check`` is off (:class:`xuqcal.set_options`); nothing lazy is read.

    Parameters
    ----------
    ds : xarray.Dataset
        The data of the analysis, over ``sample`` with ``E`` and ``uE``.
    E, uE : str
        Names of the error and uncertainty variables.
    analysis : str
        The name of the analysis, for the message (e.g. ``"validate"``).
    stacklevel : int, optional
        The ``stacklevel`` of :func:`warnings.warn`; by default the first caller outside
        xuqcal (:func:`xuqcal.core.checks.user_stacklevel`).

    Returns
    -------
    list of Finding
        The significant findings (those warned about).

    Examples
    --------
    >>> import warnings, numpy as np, xarray as xr
    >>> e = np.empty(1000); e[0] = 0.0
    >>> noise = np.random.default_rng(0).normal(size=1000)
    >>> for i in range(1, 1000): e[i] = 0.8 * e[i - 1] + noise[i]  # AR(1) in time
    >>> ds = xr.Dataset({"E": ("sample", e), "uE": ("sample", np.ones(1000))},
    ...                 coords={"time": ("sample", np.arange(1000))})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     found = warn_if_dependent(ds, analysis="validate")
    >>> found[0].resample
    "resample='circular', block='time', block_length='auto'"
    >>> caught[0].category.__name__, "too narrow" in str(caught[0].message)
    ('DependenceWarning', True)
    """
    if not OPTIONS["dependence_check"]:
        return []
    significant = [f for f in scan_dependence(ds, E=E, uE=uE) if f.significant]
    level = user_stacklevel() if stacklevel is None else stacklevel
    for finding in significant:
        warnings.warn(finding.message(analysis), DependenceWarning, stacklevel=level)
    return significant
