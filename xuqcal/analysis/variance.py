"""The interval of Var(Z) (or 1/SD(Z)) by Cho's variance of the variance (ErrViewLib's ``varZCI``,
``rsdZCI``): the labelled, lazy layer of :mod:`xuqcal.core.variance`.

The bootstrap intervals of the same statistics are those of the keys ``zv`` and ``zisd`` in
:func:`xuqcal.bootstrap`, :func:`xuqcal.validate` and, per bin (LZV, LZISD), :func:`xuqcal.local`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.analysis.lazy import analysis, template
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core.binning import check_n_bins
from xuqcal.core.checks import check_bool, check_choice, check_count, check_level, variable_name
from xuqcal.core.provenance import provenance
from xuqcal.core.statistics import check_values
from xuqcal.core.variance import VARIANCE_METHODS, variance_interval
from xuqcal.io import by_role

_VARIABLES = {
    "value": "Var(Z) (denominator n - 1), or 1 / SD(Z)",
    "sd": "standard deviation of the value",
    "ci_low": "lower bound of the interval",
    "ci_high": "upper bound of the interval",
}


@broadcast
@by_role
def var_z_interval(
    ds: xr.Dataset,
    *,
    method: str = "cho",
    level: float = defaults.LEVEL,
    inverse: bool = False,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Var(Z) of the z-scores ``Z = E / uE`` and its interval by Cho's variance of the sample
    variance (ErrViewLib's ``varZCI``; ``inverse=True``: 1/SD(Z), its ``rsdZCI``).

    Lazy on Dask-backed data; extra dimensions (``model``, ...) are kept, each slice computed
    on its present points (:mod:`xuqcal.analysis.slices`).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE`` (at least 2 points).
    method : {"cho", "chisq"}
        ``"cho"``: ``Var(Z) ± z_{(1+level)/2} SD``, ``SD² = (m₄ - (n-3)/(n-1) m₂²) / n``
        (Cho's eq. 1; :func:`xuqcal.core.variance.variance_of_variance`), and for 1/SD(Z)
        ``SD / (2 Var(Z)^{3/2})``. ``"chisq"``: the interval
        ``χ²_{n-1, (1∓level)/2} / (n - 1)`` of the sample variance of n standard normal values
        (the reference interval of calibrated data; ``sd = sqrt(2 / (n - 1))``), Var(Z) only.
    level : float
        Confidence level.
    inverse : bool
        Report 1/SD(Z) (ErrViewLib's LZISD statistic) instead of Var(Z).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Scalars ``value``, ``sd``, ``ci_low``, ``ci_high`` (after the extra dimensions, if
        any), attributes ``statistic`` (``"zv"`` or ``"zisd"``), ``target`` (1), ``method``,
        ``level``.

    Raises
    ------
    ValueError
        Before any computation for an unknown method, a level outside (0, 1), ``chisq`` with
        ``inverse`` or fewer than 2 points; when computed, for invalid values (NaN, ``uE <= 0``).

    Examples
    --------
    >>> import xuqcal
    >>> r = var_z_interval(xuqcal.synthetic.nig(2000, nu=6, seed=0))
    >>> r.attrs["statistic"], bool(r.ci_low < r.value < r.ci_high)
    ('zv', True)
    """
    method = check_choice(method, "method", VARIANCE_METHODS)
    level = check_level(level)
    inverse = check_bool(inverse, "inverse")
    if inverse and method == "chisq":
        raise ValueError("method: 'chisq' gives an interval of Var(Z) only; use method='cho' "
                         "for 1/SD(Z) (inverse=True)")
    check_data_variables(ds, E, uE)
    m = ds.sizes["sample"]
    if m < 2:
        raise ValueError(f"ds: var_z_interval needs at least 2 points, but the data have {m}")
    key = "zisd" if inverse else "zv"
    attrs = provenance(statistic=key, target=1.0, method=method, level=level, n_samples=m,
                       E=E, uE=uE,
                       formula=("1 / SD(Z)" if inverse else "Var(Z)") + (
                           ", Cho's variance of the sample variance, normal interval"
                           if method == "cho" else
                           ", interval of chi2(n - 1) / (n - 1) of calibrated data"))
    layout = template({name: ((), np.float64, {"long_name": text})
                       for name, text in _VARIABLES.items()}, {}, attrs=attrs)
    return analysis(_variance_body, ds, [E, uE], lambda: layout, method=method, level=level,
                    inverse=inverse, E=E, uE=uE)


def _variance_body(data: xr.Dataset, *, method: str, level: float, inverse: bool, E: str,
                   uE: str) -> xr.Dataset:
    """:func:`var_z_interval` on NumPy-backed data."""
    errors = np.asarray(data[E].values, dtype=np.float64)
    uncertainties = np.asarray(data[uE].values, dtype=np.float64)
    check_values(errors, uncertainties)
    value, sd, low, high = variance_interval(errors / uncertainties, level, method,
                                             inverse=inverse)
    return xr.Dataset({"value": value, "sd": sd, "ci_low": low, "ci_high": high})


def default_local_bins(m: int) -> int:
    """``max(min(M // 150, 15), 2)``, the default ``nBin`` of ErrViewLib's ``plotLZV`` and
    ``plotLZISD``.

    Examples
    --------
    >>> default_local_bins(200), default_local_bins(1500), default_local_bins(10**6)
    (2, 10, 15)
    """
    return max(min(m // 150, 15), 2)


_LOCAL_VARIABLES = {
    "count": ("bin", np.int64, "points in the bin"),
    "value": ("bin", np.float64, "Var(Z) (or 1 / SD(Z)) of the bin"),
    "sd": ("bin", np.float64, "Cho's standard deviation of the value"),
    "ci_low": ("bin", np.float64, "lower bound of Cho's interval"),
    "ci_high": ("bin", np.float64, "upper bound of Cho's interval"),
    "valid": ("bin", bool, "the interval holds the target 1"),
    "fraction_valid": ((), np.float64, "fraction of valid bins"),
    "fraction_valid_low": ((), np.float64, "lower bound of its Wilson-cc interval"),
    "fraction_valid_high": ((), np.float64, "upper bound of its Wilson-cc interval"),
    "global_value": ((), np.float64, "the value on the whole data set"),
    "global_low": ((), np.float64, "lower bound of Cho's interval on the whole data set"),
    "global_high": ((), np.float64, "upper bound of Cho's interval on the whole data set"),
}


@broadcast
@by_role
def local_variance(
    ds: xr.Dataset,
    *,
    by: str = defaults.BY,
    n_bins: int | None = None,
    inverse: bool = False,
    level: float = defaults.LEVEL,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Local z-variance (LZV) or local inverse standard deviation of the z-scores (LZISD) per
    equal-count bin of ``by``, with Cho's intervals (ErrViewLib's ``plotLZV(method = "cho")``
    and ``plotLZISD``, whose default interval is Cho's).

    :func:`xuqcal.local` with ``"zv"`` or ``"zisd"`` gives the same values with per-bin BCa
    bootstrap intervals (ErrViewLib's ``method = "bootstrap"``). Draw the result with
    :func:`xuqcal.plot.local`. Lazy on Dask-backed data; extra dimensions are kept.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and ``by``.
    by : str
        Conditioning variable (``"uE"``: the uncertainties, whatever their name).
    n_bins : int, optional
        Equal-count bins (:func:`xuqcal.make_bins`); default :func:`default_local_bins`,
        ErrViewLib's ``max(min(M // 150, 15), 2)``.
    inverse : bool
        1/SD(Z) (LZISD) instead of Var(Z) (LZV).
    level : float
        Confidence level of the intervals and of the Wilson-cc interval of ``fraction_valid``.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``bin`` (coordinates ``bin_low``, ``bin_high``, ``bin_centre``): ``count``,
        ``value``, ``sd``, ``ci_low``, ``ci_high``, ``valid`` (the interval holds 1); scalars
        ``fraction_valid`` with ``fraction_valid_low`` / ``_high``, ``global_value`` with
        ``global_low`` / ``_high`` (Cho's interval on the whole set). Attributes ``statistic``
        (``"zv"`` or ``"zisd"``), ``target`` (1), ``by``, ``interval`` (``"cho"``).

    Raises
    ------
    ValueError
        Before any computation for a missing ``by``, ``n_bins`` that leaves fewer than 2 points
        per bin, or a level outside (0, 1); when computed, for invalid values.

    Examples
    --------
    >>> import xuqcal
    >>> lzv = local_variance(xuqcal.synthetic.nig(3000, nu=6, seed=0))
    >>> lzv.sizes["bin"], lzv.attrs["statistic"], lzv.attrs["interval"]
    (15, 'zv', 'cho')
    """
    level = check_level(level)
    inverse = check_bool(inverse, "inverse")
    check_data_variables(ds, E, uE)
    name = variable_name(ds, by, uE, role="conditioning")
    m = ds.sizes["sample"]
    n_bins = default_local_bins(m) if n_bins is None else check_count(n_bins, "n_bins", 1)
    check_n_bins(m, n_bins)
    key = "zisd" if inverse else "zv"
    variables = {k: (() if dims == () else (dims,), dtype, {"long_name": text})
                 for k, (dims, dtype, text) in _LOCAL_VARIABLES.items()}
    variables.update({c: (("bin",), np.float64, {}) for c in ("bin_low", "bin_high",
                                                              "bin_centre")})
    layout = template(variables, {"bin": n_bins}, {"bin": np.arange(n_bins)},
                      lazy_coords=("bin_low", "bin_high", "bin_centre"),
                      attrs=provenance(statistic=key, target=1.0, by=name, binning="equal",
                                       n_bins=n_bins, interval="cho", level=level, E=E, uE=uE,
                                       method="ErrViewLib's plotLZISD" if inverse
                                       else "ErrViewLib's plotLZV (method = 'cho')"))
    return analysis(_local_body, ds, [E, uE, name], lambda: layout, name=name, n_bins=n_bins,
                    inverse=inverse, level=level, E=E, uE=uE)


def _local_body(data: xr.Dataset, *, name: str, n_bins: int, inverse: bool, level: float,
                E: str, uE: str) -> xr.Dataset:
    """:func:`local_variance` on NumPy-backed data."""
    from xuqcal.analysis.binning import make_bins
    from xuqcal.core.intervals import wilson_interval

    errors = np.asarray(data[E].values, dtype=np.float64)
    uncertainties = np.asarray(data[uE].values, dtype=np.float64)
    check_values(errors, uncertainties)
    z = errors / uncertainties
    bins = make_bins(data, name, n_bins=n_bins, uE=uE)
    index = np.asarray(bins.bin_index.values)
    rows = np.array([variance_interval(z[index == b], level, "cho", inverse=inverse)
                     for b in range(n_bins)])
    value, sd, low, high = rows.T
    valid = (low <= 1.0) & (1.0 <= high)
    n_valid = int(valid.sum())
    fv_low, fv_high = wilson_interval(n_valid, n_bins, level)
    whole = variance_interval(z, level, "cho", inverse=inverse)
    result = bins.drop_vars(["bin_index", "upper_limit"]).drop_dims("sample", errors="ignore")
    return result.assign(
        value=("bin", value), sd=("bin", sd), ci_low=("bin", low), ci_high=("bin", high),
        valid=("bin", valid), fraction_valid=((), n_valid / n_bins),
        fraction_valid_low=((), float(fv_low)), fraction_valid_high=((), float(fv_high)),
        global_value=((), whole[0]), global_low=((), whole[2]), global_high=((), whole[3]))
