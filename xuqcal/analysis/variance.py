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
from xuqcal.core.checks import check_bool, check_choice, check_level
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
