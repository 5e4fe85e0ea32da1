"""Distribution diagnostics used to choose the generative distribution D (METHODS §2).

For the errors E and the z-scores Z: mean, standard deviation, relative bias (mean / sd),
robust skewness β_GM and tailedness κ_CS, and ν_eff, the degrees of freedom of a maximum-
likelihood fit of a shifted and scaled Student-t. For the uncertainties: a maximum-likelihood
inverse-gamma fit of uE² (shape, scale; location fixed at 0) and β_GM of uE.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from xuqcal._lazy import lazy_module
from xuqcal.analysis.lazy import analysis, template
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core.checks import user_stacklevel
from xuqcal.core.provenance import provenance
from xuqcal.core.statistics import (
    UndefinedStatisticWarning,
    beta_gm,
    check_values,
    kappa_cs,
    power_of_two_scale,
)
from xuqcal.io import by_role

stats = lazy_module("scipy.stats")

#: Least number of points of :func:`describe` (quantiles and a three-parameter fit).
MIN_POINTS = 3

#: uE whose median lies beyond ``2**±FIT_EXPONENT`` (~1e±6) is fitted as ``uE 2^-k`` (an exact
#: rescaling; the shape is scale-free and the scale is multiplied back by ``4^k``): the ML
#: inverse-gamma fit of uE² is reliable only for uE² within about 1e±16 of 1 (ordinary data,
#: inside the range, are fitted unchanged).
FIT_EXPONENT = 20


def _ldexp(value: float, k: int, name: str) -> float:
    """``value 2^k``; ``inf`` with an :class:`UndefinedStatisticWarning` naming ``name`` when
    it exceeds the float64 range."""
    try:
        return math.ldexp(value, k)
    except OverflowError:
        warnings.warn(f"{name} is undefined: its value exceeds the float64 range",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
        return math.copysign(math.inf, value)


def _warn_constant(variable: str, names: str) -> None:
    warnings.warn(f"{names} of {variable} are undefined: {variable} is constant",
                  UndefinedStatisticWarning, stacklevel=user_stacklevel())


def student_t_fit(x: np.ndarray) -> tuple[float, float, float]:
    """Maximum-likelihood fit of a shifted, scaled Student-t: ``(nu_eff, loc, scale)``.

    A large ``nu_eff`` (hundreds or more) means the data are indistinguishable from normal.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> nu, loc, scale = student_t_fit(2.0 + 0.5 * rng.standard_t(4, size=20_000))
    >>> bool(3.5 < nu < 4.6 and abs(loc - 2) < 0.02 and abs(scale - 0.5) < 0.02)
    True
    """
    x = np.asarray(x, dtype=np.float64)
    nu, loc, scale = stats.t.fit(x, loc=float(np.median(x)), scale=float(stats.iqr(x) / 1.35))
    return float(nu), float(loc), float(scale)


def inverse_gamma_fit(x: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood inverse-gamma fit (location 0) of positive data: ``(shape, scale)``.

    Examples
    --------
    >>> x = stats.invgamma(3.0, scale=3.0).rvs(20_000, random_state=1)
    >>> shape, scale = inverse_gamma_fit(x)
    >>> bool(abs(shape - 3) < 0.15 and abs(scale - 3) < 0.15)
    True
    """
    shape, _, scale = stats.invgamma.fit(np.asarray(x, dtype=np.float64), floc=0.0)
    return float(shape), float(scale)


@broadcast
@by_role
def describe(ds: xr.Dataset, *, groups: str | None = None, block: str | None = None,
             E: str = defaults.E, uE: str = defaults.UE) -> xr.Dataset:
    """Distribution diagnostics of E, Z = E / uE and uE, and, with ``groups`` or ``block``,
    of the dependence of the points.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    groups : str, optional
        A variable over ``sample`` holding each point's group (e.g. ``"structure_id"``): adds
        the intra-class correlations of Z and Z² (one-way ANOVA estimator), the design effect
        of Z² and the effective sample size (:data:`DESCRIPTIONS`).
    block : str, optional
        A variable over ``sample`` that orders the points (e.g. ``"time"``): adds the lag-1
        autocorrelations of Z and Z² in that order, and the effective sample size of the mean
        of Z² (the variance over the long-run variance, Politis–White's bandwidth).
    E, uE : str
        Names of the error and uncertainty variables.

    Raises
    ------
    ValueError
        For a ``ds`` without ``E`` or ``uE`` or with fewer than 3 points (before any work).

    Returns
    -------
    xarray.Dataset
        Lazy on Dask-backed data (the values are checked at compute time), computed
        otherwise. Over ``variable`` (``E``, ``Z``): ``mean``, ``sd``, ``relative_bias``
        (mean / sd), ``beta_gm``, ``kappa_cs``, ``nu_eff``, ``t_loc``, ``t_scale``. Scalars:
        ``uE2_shape``, ``uE2_scale`` (inverse-gamma fit of uE²), ``beta_gm_uE``. Every
        variable has a ``long_name`` and a ``description`` attribute (:data:`DESCRIPTIONS`:
        what it is and how to read it).

    Examples
    --------
    >>> import xuqcal
    >>> d = describe(xuqcal.synthetic.nig(20_000, nu=6, seed=0))
    >>> d.variable.values.tolist()
    ['E', 'Z']
    >>> bool(4.5 < d.nu_eff.sel(variable="E") < 8.0)  # E ~ Student-t(6) in the NIG model
    True
    """
    check_data_variables(ds, E, uE)
    if ds.sizes["sample"] < MIN_POINTS:
        raise ValueError(f"ds: describe needs at least {MIN_POINTS} points, but the data have "
                         f"{ds.sizes['sample']}")
    for name, value in (("groups", groups), ("block", block)):
        if value is not None and (not isinstance(value, str) or value not in ds.variables
                                  or ds[value].dims != ("sample",)):
            known = ", ".join(str(v) for v in ds.variables if ds[v].dims == ("sample",))
            raise ValueError(f"{name}: no variable {value!r} over sample alone in the data "
                             f"(its variables over sample: {known})")
    scalars = dict(_SCALAR_LONG_NAMES)
    if groups is not None:
        scalars.update(_GROUP_LONG_NAMES)
    if block is not None:
        scalars.update(_BLOCK_LONG_NAMES)
    f8 = np.float64
    extra = [v for v in (groups, block) if v is not None]
    return analysis(_describe_body, ds, [E, uE, *extra], lambda: template(
        {**{name: (("variable",), f8, {"long_name": long_name,
                                       "description": DESCRIPTIONS[name]})
            for name, long_name in _LONG_NAMES.items()},
         **{name: ((), f8, {"long_name": long_name, "description": DESCRIPTIONS[name]})
            for name, long_name in scalars.items()}},
        {"variable": 2}, {"variable": ["E", "Z"]},
        attrs=provenance(n_samples=ds.sizes["sample"], E=E, uE=uE, groups=groups,
                         block=block)), E=E, uE=uE, groups=groups, block=block)


_LONG_NAMES = {
    "mean": "mean", "sd": "standard deviation (n - 1)",
    "relative_bias": "relative bias: mean / sd",
    "beta_gm": "robust skewness beta_GM (Harrell-Davis median)",
    "kappa_cs": "robust tailedness kappa_CS (Harrell-Davis quantiles), 0 for a normal",
    "nu_eff": "degrees of freedom of a ML shifted/scaled Student-t fit",
    "t_loc": "location of the Student-t fit", "t_scale": "scale of the Student-t fit",
}
_GROUP_LONG_NAMES = {
    "icc_z": "intra-class correlation of Z within the groups",
    "icc_z2": "intra-class correlation of Z^2 within the groups",
    "design_effect_z2": "design effect of the mean of Z^2: 1 + (m0 - 1) ICC(Z^2)",
    "n_effective_groups": "effective sample size of the mean of Z^2 under the groups",
}
_BLOCK_LONG_NAMES = {
    "acf1_z": "lag-1 autocorrelation of Z in the order of the block variable",
    "acf1_z2": "lag-1 autocorrelation of Z^2 in the order of the block variable",
    "n_effective_block": "effective sample size of the mean of Z^2 in the order of the block "
                         "variable",
}
_SCALAR_LONG_NAMES = {
    "uE2_shape": "shape of a ML inverse-gamma fit of uE^2 (nu/2 in the NIG model)",
    "uE2_scale": "scale of a ML inverse-gamma fit of uE^2",
    "beta_gm_uE": "robust skewness beta_GM of uE",
}


#: What each diagnostic of :func:`describe` is and how to read it (the ``description``
#: attribute of its variable; the report's tables explain the names with it).
DESCRIPTIONS = {
    "mean": "mean of the values; near 0 for unbiased errors",
    "sd": "standard deviation (n - 1); near 1 for the z-scores of calibrated uncertainties",
    "relative_bias": "mean / sd: the bias in units of the spread; near 0 for unbiased errors",
    "beta_gm": "robust skewness β_GM = (mean - median) / mean |x - median| (Harrell-Davis "
               "median): 0 for a symmetric distribution, > 0 for a longer right tail, < 0 for "
               "a longer left tail",
    "kappa_cs": "robust tailedness κ_CS = (Q.975 - Q.025) / (Q.75 - Q.25) - 2.91 "
                "(Harrell-Davis quantiles): 0 for a normal distribution, > 0 for heavier "
                "tails, < 0 for lighter tails",
    "nu_eff": "ν_eff, the degrees of freedom of a maximum-likelihood fit of a shifted, scaled "
              "Student-t: small (below about 10) for heavy tails, large (hundreds) when the "
              "values are indistinguishable from normal",
    "t_loc": "location of the Student-t fit (same units as the values)",
    "t_scale": "scale of the Student-t fit (same units as the values)",
    "uE2_shape": "shape of a maximum-likelihood inverse-gamma fit of uE² (location 0): ν/2 in "
                 "the NIG model uE² ~ IG(ν/2, ν/2); a small shape means a long tail of large "
                 "uncertainties",
    "uE2_scale": "scale of the inverse-gamma fit of uE² (units of uE²); ν/2 in the NIG model "
                 "with unit-variance errors",
    "beta_gm_uE": "robust skewness β_GM of uE (Harrell-Davis median): 0 for symmetric, > 0 "
                  "for a long tail of large uncertainties",
    "icc_z": "intra-class correlation of Z within the groups (one-way ANOVA estimator): 0 for "
             "independent points; 0.3 means that 30 % of the variance of Z is shared by the "
             "points of a group",
    "icc_z2": "intra-class correlation of Z² within the groups (one-way ANOVA estimator): the "
              "one that widens the intervals of ZMS",
    "design_effect_z2": "1 + (m0 - 1) ICC(Z²), m0 the size-weighted mean group size: how many "
                        "times the variance of the mean of Z² exceeds the iid one; above about "
                        "1.2, use resample='cluster'",
    "n_effective_groups": "the number of points over the design effect: the independent points "
                          "the mean of Z² is worth",
    "acf1_z": "lag-1 autocorrelation of Z in the order of the block variable: 0 for "
              "independent points",
    "acf1_z2": "lag-1 autocorrelation of Z² in the order of the block variable",
    "n_effective_block": "n γ₀ / σ²: the number of points times the variance of Z² over its "
                         "long-run variance (flat-top window, Politis–White bandwidth); well "
                         "below n, use a block resample",
}


def anova_mean_squares(x: np.ndarray, codes: np.ndarray, sizes: np.ndarray
                       ) -> tuple[float, float, float]:
    """The one-way ANOVA of ``x`` in the groups ``codes`` (``0 .. G - 1``, every one present)
    of sizes ``sizes`` (float64, ``np.bincount(codes)``): the between-group and within-group
    mean squares, on ``G - 1`` and ``n - G`` degrees of freedom, and the size-weighted mean
    group size ``m0 = (n - Σ n_g² / n) / (G - 1)``; ``2 <= G < n``.

    Their ratio is the F statistic of equal group means; :func:`icc_anova` reads the
    intra-class correlation from them.

    Examples
    --------
    >>> x = np.array([1.0, 1.2, 3.0, 3.1, 5.0, 5.3])
    >>> codes = np.array([0, 0, 1, 1, 2, 2])
    >>> between, within, m0 = anova_mean_squares(x, codes, np.bincount(codes) * 1.0)
    >>> round(between / within, 1), m0  # the F statistic on (2, 3) degrees of freedom
    (351.6, 2.0)
    """
    n, g = x.size, sizes.size
    means = np.bincount(codes, weights=x, minlength=g) / sizes
    grand = float(np.mean(x))
    between = float(np.sum(sizes * (means - grand) ** 2)) / (g - 1)
    within = float(np.sum((x - means[codes]) ** 2)) / (n - g)
    m0 = (n - float(np.sum(sizes**2)) / n) / (g - 1)
    return between, within, m0


def icc_from_mean_squares(between: float, within: float, m0: float) -> float:
    """The one-way ANOVA intra-class correlation ``(MSB - MSW) / (MSB + (m0 - 1) MSW)`` from
    the mean squares of :func:`anova_mean_squares`.

    Examples
    --------
    >>> icc_from_mean_squares(3.0, 1.0, 5.0)
    0.2857142857142857
    """
    return (between - within) / (between + (m0 - 1.0) * within)


def design_effect(icc: float, m0: float) -> float:
    """The design effect ``1 + (m0 - 1) ICC`` of a mean over groups of mean size ``m0``: how
    many times the variance of the mean exceeds the iid one.

    Examples
    --------
    >>> design_effect(0.3, 51.0)
    16.0
    """
    return 1.0 + (m0 - 1.0) * icc


def icc_anova(x: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    """One-way ANOVA intra-class correlation of ``x`` within ``groups`` and the size-weighted
    mean group size ``m0 = (n - Σ n_g² / n) / (G - 1)``.

    Examples
    --------
    >>> x = np.array([1.0, 1.2, 3.0, 3.1, 5.0, 5.3])
    >>> icc, m0 = icc_anova(x, np.array([0, 0, 1, 1, 2, 2]))
    >>> round(icc, 3), m0
    (0.994, 2.0)
    """
    codes, _ = pd.factorize(np.asarray(groups), sort=True)
    n, g = x.size, int(codes.max()) + 1
    if g < 2 or g >= n:
        return math.nan, math.nan
    sizes = np.bincount(codes, minlength=g).astype(np.float64)
    between, within, m0 = anova_mean_squares(x, codes, sizes)
    return icc_from_mean_squares(between, within, m0), m0


def acf1(x: np.ndarray) -> float:
    """The lag-1 autocorrelation ``Σ d_i d_{i-1} / Σ d_i²`` of a series (``d = x - x̄``), in
    its order.

    Examples
    --------
    >>> acf1(np.array([1.0, 2.0, 3.0, 4.0]))
    0.25
    """
    d = x - x.mean()
    return float(d[1:] @ d[:-1]) / float(d @ d)


def _long_run_ratio(x: np.ndarray) -> float:
    """γ₀ over the long-run variance of ``x`` (flat-top window, Politis–White bandwidth: the
    ``long_run`` of :func:`xuqcal.core.blocklength.optimal_block_length`)."""
    from xuqcal.core.blocklength import long_run_variance

    d = x - x.mean()
    return float(d @ d) / x.size / long_run_variance(x)


def _dependence(z: np.ndarray, groups: np.ndarray | None, order: np.ndarray | None
                ) -> dict[str, float]:
    out: dict[str, float] = {}
    if groups is not None:
        if pd.isna(groups).any():
            raise ValueError(f"groups: missing at {int(pd.isna(groups).sum())} point(s); give "
                             "every point its group")
        icc_z, _ = icc_anova(z, groups)
        icc_z2, m0 = icc_anova(z**2, groups)
        effect = design_effect(icc_z2, m0)
        out.update(icc_z=icc_z, icc_z2=icc_z2, design_effect_z2=effect,
                   n_effective_groups=z.size / effect)
    if order is not None:
        ordered = z[np.argsort(np.asarray(order), kind="stable")]
        out.update(acf1_z=acf1(ordered), acf1_z2=acf1(ordered**2),
                   n_effective_block=ordered.size * _long_run_ratio(ordered**2))
    return out


def _describe_body(ds: xr.Dataset, *, E: str, uE: str, groups: str | None = None,
                   block: str | None = None) -> xr.Dataset:
    """:func:`describe` on NumPy-backed data."""
    errors = np.asarray(ds[E].values, dtype=np.float64)
    uncertainties = np.asarray(ds[uE].values, dtype=np.float64)
    check_values(errors, uncertainties)  # NaN/inf, uE <= 0, overflowing z: named errors
    columns: dict[str, list[float]] = {name: [] for name in (
        "mean", "sd", "relative_bias", "beta_gm", "kappa_cs", "nu_eff", "t_loc", "t_scale")}
    # scale safety: E of scale 1e300 (or 1e-300) is analysed as E 2^-k, and the values with
    # units (mean, sd, t_loc, t_scale) are scaled back exactly; k = 0 for ordinary data
    k_e = power_of_two_scale(errors)
    for x, k, label in ((np.ldexp(errors, -k_e) if k_e else errors, k_e, E),
                        (errors / uncertainties, 0, "Z")):
        if np.all(x == x[0]):  # constant: no spread, so no shape or t fit (was 0 / 0)
            _warn_constant(label, "relative_bias, beta_gm, kappa_cs, nu_eff, t_loc, t_scale")
            mean = float(x[0])
            for name, value in (("mean", _ldexp(mean, k, "mean of E") if k else mean),
                                ("sd", 0.0)):
                columns[name].append(value)
            for name in ("relative_bias", "beta_gm", "kappa_cs", "nu_eff", "t_loc", "t_scale"):
                columns[name].append(math.nan)
            continue
        mean, sd = float(np.mean(x)), float(np.std(x, ddof=1))
        nu, loc, scale = student_t_fit(x)
        relative_bias = mean / sd
        if k:
            mean, sd, loc, scale = (_ldexp(v, k, f"{name} of E") for v, name in
                                    ((mean, "mean"), (sd, "sd"), (loc, "t_loc"),
                                     (scale, "t_scale")))
        for name, value in (("mean", mean), ("sd", sd), ("relative_bias", relative_bias),
                            ("beta_gm", beta_gm(x)), ("kappa_cs", kappa_cs(x)),
                            ("nu_eff", nu), ("t_loc", loc), ("t_scale", scale)):
            columns[name].append(value)
    k_u = power_of_two_scale(uncertainties)
    if not k_u:  # the ML fit of uE² drifts for uE far from 1 (shape 1.5 at uE ~ 1e-10)
        median = float(np.median(uncertainties))
        if not 2.0**-FIT_EXPONENT <= median <= 2.0**FIT_EXPONENT:
            k_u = math.frexp(median)[1]
    constant_u = bool(np.all(uncertainties == uncertainties[0]))
    if constant_u:  # no inverse-gamma fit and no skewness of a constant
        _warn_constant(uE, "uE2_shape, uE2_scale, beta_gm_uE")
        shape = scale = math.nan
    elif k_u:  # the shape is scale-free, the scale of uE² scales with 4^k
        shape, scale = inverse_gamma_fit(np.ldexp(uncertainties, -k_u) ** 2)
        scale = _ldexp(scale, 2 * k_u, "uE2_scale")
    else:
        shape, scale = inverse_gamma_fit(uncertainties**2)
    result = xr.Dataset(
        {name: ("variable", values) for name, values in columns.items()},
        coords={"variable": ["E", "Z"]},
    )
    result["uE2_shape"] = xr.DataArray(shape)
    result["uE2_scale"] = xr.DataArray(scale)
    scaled_u = np.ldexp(uncertainties, -k_u) if k_u else uncertainties  # β_GM is scale-free
    result["beta_gm_uE"] = xr.DataArray(math.nan if constant_u else beta_gm(scaled_u))
    if groups is not None or block is not None:
        values = _dependence(errors / uncertainties,
                             None if groups is None else np.asarray(ds[groups].values),
                             None if block is None else np.asarray(ds[block].values))
        for name, value in values.items():
            result[name] = xr.DataArray(value)
    return result
