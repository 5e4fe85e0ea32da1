"""Synthetic data sets: the NIG model (METHODS §1), for demos, tests and benchmarks.

``uE² ~ InverseGamma(ν/2, ν/2)`` (shape ν/2, scale ν/2) and ``E = uE · eps`` with ``eps ~ D``.
With D = normal, E follows a Student-t with ν degrees of freedom and the uncertainties are
calibrated by construction.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import xarray as xr

from xuqcal import _random
from xuqcal._version import __version__
from xuqcal.generators import get_generator


def nig(
    M: int,
    nu: float,
    generator: str = "normal",
    *,
    seed: int,
    uE_scale: float = 1.0,
    replicate: int = 0,
) -> xr.Dataset:
    """A synthetic data set of the NIG model.

    Parameters
    ----------
    M : int
        Number of points.
    nu : float
        Shape of the uncertainty distribution: ``uE² ~ IG(ν/2, ν/2)`` (ν > 0; the mean variance
        is finite for ν > 2).
    generator : str
        Generative distribution D of ``eps`` (see :mod:`xuqcal.generators`).
    seed : int
        Seed; ``(seed, replicate)`` fixes the data set.
    uE_scale : float
        Factor applied to the *reported* uncertainties (1 = calibrated; 0.8 reports
        uncertainties 20 % too small, so <Z²> ≈ 1/0.64).
    replicate : int
        Index of the data set in a family of independent data sets with the same seed.

    Returns
    -------
    xarray.Dataset
        Over ``sample`` with ``E`` and ``uE``.

    Examples
    --------
    >>> ds = nig(1000, nu=6, seed=0)
    >>> ds.sizes["sample"], sorted(ds.data_vars)
    (1000, ['E', 'uE'])
    """
    if isinstance(M, bool) or not isinstance(M, int | np.integer) or M < 1:
        raise ValueError(f"M: expected a positive number of points, got {M!r}")
    if not nu > 0:
        raise ValueError(f"nu: expected ν > 0, got {nu!r}")
    if not (np.isfinite(uE_scale) and uE_scale > 0):
        raise ValueError(f"uE_scale: expected a positive factor, got {uE_scale!r}")
    gen = get_generator(generator)
    key = _random.stream_key(seed, "synthetic:nig")
    gamma = np.empty(M)
    # 1 / uE² ~ Gamma(ν/2, rate ν/2): draw Gamma(ν/2, 1) g, then uE² = (ν/2) / g
    _random.fill_gamma(key, replicate, 0.5 * nu, gamma)
    uE = np.sqrt(0.5 * nu / gamma)
    eps = np.empty(M)
    _random.fill_variates(_random.stream_key(seed, f"synthetic:nig:{gen.name}"), replicate,
                          gen.code, gen.parameter, eps)
    E = uE * eps
    ds = xr.Dataset(
        {
            "E": ("sample", E, {"long_name": "prediction error"}),
            "uE": ("sample", uE * uE_scale, {"long_name": "prediction uncertainty"}),
        },
        coords={"sample": np.arange(M)},
        attrs={
            "source": "synthetic",
            "model": "NIG: uE^2 ~ InverseGamma(nu/2, nu/2), E = uE * eps, eps ~ generator",
            "nu": float(nu),
            "generator": gen.name,
            "seed": int(seed),
            "replicate": int(replicate),
            "uE_scale": float(uE_scale),
            "xuqcal_version": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )
    return ds
