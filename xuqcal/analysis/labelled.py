"""Labelled versions of the NumPy functions of :mod:`xuqcal.core` (xarray in, xarray out)."""

from __future__ import annotations

import xarray as xr

from xuqcal.core import intervals as _intervals


def zeta(estimate, reference, ci_low, ci_high, u_ref=0.0):
    """ζ-score of an estimate against a reference value, given the estimate's interval
    (:func:`xuqcal.core.intervals.zeta`), elementwise on scalars, NumPy arrays and xarray
    objects, whose labels are kept (lazy on Dask-backed data).

    ``ζ = (θ - θ_ref) / (hi - θ)`` if ``θ ≤ θ_ref``, else ``(θ - θ_ref) / (θ - lo)``; with a
    reference uncertainty ``u_ref`` the denominator is ``sqrt(width² + u_ref²)``.

    Examples
    --------
    >>> import xarray as xr
    >>> z = zeta(xr.DataArray([0.96, 1.12], dims="statistic"), 1.0,
    ...          xr.DataArray([0.867, 1.05], dims="statistic"),
    ...          xr.DataArray([1.10, 1.20], dims="statistic"))
    >>> z.dims, [round(float(v), 2) for v in z]
    (('statistic',), [-0.29, 1.71])
    """
    return xr.apply_ufunc(_intervals.zeta, estimate, reference, ci_low, ci_high, u_ref,
                          dask="allowed")
