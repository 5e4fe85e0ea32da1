"""Synthetic data sets: the NIG model (METHODS §1), for demos, tests and benchmarks.

``uE² ~ InverseGamma(ν/2, ν/2)`` (shape ν/2, scale ν/2) and ``E = uE · eps`` with ``eps ~ D``.
With D = normal, E follows a Student-t with ν degrees of freedom and the uncertainties are
calibrated by construction.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from xuqcal.core import random as _random
from xuqcal.core.checks import MAX_SEED, check_count, check_seed
from xuqcal.core.generators import get_generator
from xuqcal.core.provenance import provenance

#: The smallest accepted ν. The sampler draws Gamma(ν/2) for ν/2 < 1 as
#: ``Gamma(ν/2 + 1) U^(2/ν)`` with a uniform ``U >= 2^-54``, so the largest ``uE² = (ν/2) /
#: Gamma(ν/2)`` can reach about ``(ν/2) 2^(108/ν)``: ``2^540`` at ν = 0.2, far inside float64
#: (``E² = uE² eps²`` and their sums stay finite, the statistics are rescaled exactly), but
#: beyond it (``2^1024``: ``uE = inf``) below ν ≈ 0.106; ``nu=0.01`` gave infinite ``uE``.
NU_MIN = 0.2


def check_nu(nu: object, name: str = "nu", *, allow_inf: bool = True) -> float:
    """A shape ν of the NIG model: a number ``>= NU_MIN`` (0.2), or ``inf`` when allowed.

    Examples
    --------
    >>> check_nu(6)
    6.0
    >>> check_nu(0.01)
    Traceback (most recent call last):
    ValueError: nu: expected ν >= 0.2, got 0.01 (for smaller ν the largest uE² = (ν/2) / \
Gamma(ν/2) can exceed the float64 range: about (ν/2) 2^(108/ν))
    """
    if isinstance(nu, bool) or not isinstance(nu, int | float | np.integer | np.floating):
        raise ValueError(f"{name}: expected a number ν >= {NU_MIN:g}, got {nu!r}")
    value = float(nu)
    if value == math.inf and allow_inf:
        return value
    if not math.isfinite(value) or not value > 0:
        what = "or inf" if allow_inf else "(finite)"
        raise ValueError(f"{name}: expected a number ν >= {NU_MIN:g} {what}, got {nu!r}")
    if value < NU_MIN:
        raise ValueError(
            f"{name}: expected ν >= {NU_MIN:g}, got {nu!r} (for smaller ν the largest uE² = "
            "(ν/2) / Gamma(ν/2) can exceed the float64 range: about (ν/2) 2^(108/ν))")
    return value


def _nig_iv(M, nu, generator, seed, uE_scale, replicate):
    """Argument checks of :func:`nig` (messages start with the parameter name)."""
    if isinstance(M, bool) or not isinstance(M, int | np.integer) or M < 1:
        raise ValueError(f"M: expected a positive number of points, got {M!r}")
    nu = check_nu(nu)
    gen = get_generator(generator)
    seed = check_seed(seed)
    if (isinstance(uE_scale, bool) or not isinstance(uE_scale, int | float | np.integer
                                                     | np.floating)
            or not (math.isfinite(float(uE_scale)) and uE_scale > 0)):
        raise ValueError(f"uE_scale: expected a positive finite factor, got {uE_scale!r}")
    replicate = check_count(replicate, "replicate", 0, maximum=MAX_SEED)
    if replicate > MAX_SEED:
        raise ValueError(f"replicate: expected an integer from 0 to 2**64 - 1, got {replicate}")
    return int(M), nu, gen, seed, float(uE_scale), replicate


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
        Shape of the uncertainty distribution: ``uE² ~ IG(ν/2, ν/2)``, ν >= 0.2 (:data:`NU_MIN`:
        smaller ν give uncertainties beyond the float64 range; the mean variance is finite for
        ν > 2). ``nu=inf`` is the limit of the model, ``uE = 1`` exactly (``E = eps``).
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
        Over ``sample`` with ``E`` and ``uE`` (their roles recorded in the attribute
        ``xuqcal_role``, see :func:`xuqcal.io.roles`).

    Raises
    ------
    ValueError
        For invalid arguments, before anything is drawn (each message starts with the
        parameter name), and if drawn values are not finite (naming the parameter to change).

    Examples
    --------
    >>> ds = nig(1000, nu=6, seed=0)
    >>> ds.sizes["sample"], sorted(ds.data_vars)
    (1000, ['E', 'uE'])
    >>> bool((nig(10, nu=float("inf"), seed=0).uE == 1).all())
    True
    """
    M, nu, gen, seed, uE_scale, replicate = _nig_iv(M, nu, generator, seed, uE_scale,
                                                    replicate)
    stream = _random.as_int64(replicate)
    if nu == math.inf:
        uE = np.ones(M)  # the limit of IG(ν/2, ν/2) as ν -> inf: a point mass at 1
    else:
        key = _random.stream_key(seed, "synthetic:nig")
        gamma = np.empty(M)
        # 1 / uE² ~ Gamma(ν/2, rate ν/2): draw Gamma(ν/2, 1) g, then uE² = (ν/2) / g
        _random.fill_gamma(key, stream, 0.5 * nu, gamma)
        with np.errstate(divide="ignore", over="ignore"):
            uE = np.sqrt(0.5 * nu / gamma)
    eps = np.empty(M)
    _random.fill_variates(_random.stream_key(seed, f"synthetic:nig:{gen.name}"), stream,
                          gen.code, gen.parameter, eps)
    with np.errstate(over="ignore", invalid="ignore"):
        E = uE * eps
        reported = uE * uE_scale
    for name, values in (("E", E), ("uE", reported)):
        if not np.all(np.isfinite(values) & (values != 0 if name == "uE" else True)):
            raise ValueError(f"nu: ν = {nu:g} with uE_scale = {uE_scale:g} gave {name} values "
                             "outside the float64 range; use a larger ν or a scale nearer 1")
    ds = xr.Dataset(
        {
            "E": ("sample", E, {"long_name": "prediction error", "xuqcal_role": "E"}),
            "uE": ("sample", reported, {"long_name": "prediction uncertainty",
                                        "xuqcal_role": "uE"}),
        },
        coords={"sample": np.arange(M)},
        attrs=provenance({
            "source": "synthetic",
            "model": "NIG: uE^2 ~ InverseGamma(nu/2, nu/2), E = uE * eps, eps ~ generator",
            "nu": float(nu),
            "generator": gen.name,
            "seed": int(seed),
            "replicate": int(replicate),
            "uE_scale": float(uE_scale),
        }),
    )
    return ds
