"""Validation of a confidence curve against its probabilistic reference (ErrViewLib's
``plotCCVal``).

:func:`xuqcal.curves.confidence_curve` gives the data's curve (RMSE or MAE of the errors left
after removing the ``k`` % largest uncertainties) and its probabilistic reference (the mean and
a quantile band of the curves of simulated errors ``uE * eps``). ErrViewLib's ``plotCCVal``
also draws a **bootstrap confidence band of the data's curve** (BCa per ``k``, the remaining
points resampled with replacement) and scores the curve by the fraction of the ``k`` at which
the reference mean lies inside that band, with a Wilson interval (continuity-corrected):
:func:`confidence_curve_validation` adds both.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.analysis.curves import confidence_curve
from xuqcal.analysis.lazy import is_lazy, lazy_result, placeholder
from xuqcal.analysis.slices import broadcast
from xuqcal.core import defaults
from xuqcal.core.checks import check_replicates
from xuqcal.core.intervals import bca_interval, check_level, wilson_interval
from xuqcal.core.random import stream_key
from xuqcal.io import by_role

#: Draws of one block of bootstrap replicates (replicates × points), to bound the memory.
BLOCK_DRAWS = 2_000_000

_BAND = {
    "ci_low": "lower bound of the bootstrap (BCa) interval of the data curve",
    "ci_high": "upper bound of the bootstrap (BCa) interval of the data curve",
    "reference_in_ci": "reference mean inside the interval of the data curve",
}
_SCORE = {
    "fraction_valid": "fraction of k whose interval of the data curve holds the reference mean",
    "fraction_valid_low": "lower bound of the Wilson interval (continuity-corrected)",
    "fraction_valid_high": "upper bound of the Wilson interval (continuity-corrected)",
}


def curve_interval(remaining: np.ndarray, use_mae: bool, n_boot: int, level: float,
                   rng: np.random.Generator) -> tuple[float, float]:
    """BCa interval of the RMSE (or MAE) of ``remaining`` errors: ``n_boot`` resamples with
    replacement, acceleration from the exact leave-one-out values. NaN for fewer than 2
    points.

    Examples
    --------
    >>> lo, hi = curve_interval(np.random.default_rng(0).normal(size=400), False, 2000, 0.95,
    ...                         np.random.default_rng(1))
    >>> bool(0.85 < lo < 1.0 < hi < 1.15)
    True
    """
    n = remaining.size
    if n < 2:
        return np.nan, np.nan
    q = np.abs(remaining) if use_mae else remaining * remaining
    estimate = q.mean()
    jackknife = (q.sum() - q) / (n - 1.0)
    replicates = np.empty(n_boot)
    rows = max(1, BLOCK_DRAWS // n)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        replicates[start:stop] = q[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    if not use_mae:
        estimate, jackknife, replicates = (np.sqrt(x) for x in (estimate, jackknife,
                                                                 replicates))
    low, high = bca_interval(replicates[np.newaxis], np.array([estimate]),
                             jackknife[np.newaxis], level)
    return float(low[0]), float(high[0])


@broadcast
@by_role
def confidence_curve_validation(
    ds: xr.Dataset,
    *,
    statistic: str = "rmse",
    k=None,
    generator: str = defaults.GENERATORS[0],
    n_mc: int = defaults.N_MC_CURVE,
    n_boot: int = defaults.N_BOOT_LOCAL,
    seed: int = defaults.SEED,
    level: float = defaults.LEVEL,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """A confidence curve, its probabilistic reference and the bootstrap band of the data's
    curve with the fraction of ``k`` at which the reference lies in it (ErrViewLib's
    ``plotCCVal``; the method in the module docstring).

    Lazy on Dask-backed data; extra dimensions (``model``, ...) are kept, each slice computed
    on its present points. The band costs ``n_boot × Σ_k (M - n_removed)`` draws (about
    ``n_boot M / 2`` per percent).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    statistic, k, generator, n_mc, seed, level, E, uE
        As in :func:`xuqcal.curves.confidence_curve` (``generator`` must not be ``None``: the
        validation needs the reference). ``level`` is also the level of the bootstrap band
        and of the Wilson interval.
    n_boot : int
        Bootstrap replicates per ``k`` (ErrViewLib's ``nBoot``, 5000); the replicates of the
        ``i``-th percent come from ``numpy.random.default_rng(stream_key(seed,
        "confidence_validation", i))``.

    Returns
    -------
    xarray.Dataset
        The variables of :func:`~xuqcal.curves.confidence_curve` over ``k``, with ``ci_low``,
        ``ci_high`` (BCa band of the data curve; NaN where fewer than 2 points remain) and
        ``reference_in_ci``; scalars ``fraction_valid``, ``fraction_valid_low``,
        ``fraction_valid_high`` (over the ``k`` with a band).

    Raises
    ------
    ValueError
        As :func:`~xuqcal.curves.confidence_curve`, for ``generator=None`` and for ``n_boot``
        too small for the BCa interval at ``level``.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(500, nu=6, seed=0)
    >>> v = confidence_curve_validation(ds, k=[0, 20, 40], n_mc=200, n_boot=1000)
    >>> v.ci_low.dims, bool(v.fraction_valid >= 0)
    (('k',), True)
    """
    if generator is None:
        raise ValueError("generator: the validation compares the curve with its probabilistic "
                         "reference; name a generator such as 'normal'")
    level = check_level(level)
    n_boot = check_replicates(n_boot, level, "n_boot")
    kwargs = dict(statistic=statistic, k=k, generator=generator, n_mc=n_mc, seed=seed,
                  level=level, E=E, uE=uE)
    base = confidence_curve(ds, **kwargs)  # every check; lazy (nothing read) on Dask data
    if not is_lazy(ds, [E, uE]):
        return _with_band(base, ds[[E, uE]], n_boot=n_boot, **kwargs)
    n_k = base.sizes["k"]
    layout = base.assign(
        {name: ("k", placeholder(n_k, bool if name == "reference_in_ci" else np.float64),
                {"long_name": text}) for name, text in _BAND.items()}
    ).assign({name: ((), placeholder((), np.float64), {"long_name": text})
              for name, text in _SCORE.items()})
    layout.attrs.update(_attrs(n_boot, seed))
    return lazy_result(_validation_body, ds[[E, uE]], layout, n_boot=n_boot, **kwargs)


def _attrs(n_boot: int, seed: int) -> dict:
    return {"n_boot": n_boot, "band": "BCa bootstrap interval of the data curve per k",
            "band_streams": f"numpy.random.default_rng(stream_key({seed}, "
                            "'confidence_validation', index of k))",
            "method": "ErrViewLib's plotCCVal"}


def _validation_body(data: xr.Dataset, *, n_boot: int, **kwargs) -> xr.Dataset:
    """:func:`confidence_curve_validation` on NumPy-backed data."""
    return _with_band(confidence_curve(data, **kwargs), data, n_boot=n_boot, **kwargs)


def _with_band(base: xr.Dataset, data: xr.Dataset, *, n_boot: int, statistic: str, seed: int,
               level: float, E: str, uE: str, **_) -> xr.Dataset:
    """``base`` (a computed confidence curve of ``data``) with the band and the score."""
    errors = np.asarray(data[E].values, dtype=np.float64)
    uncertainties = np.asarray(data[uE].values, dtype=np.float64)
    remaining = errors[np.argsort(-uncertainties, kind="stable")]  # the curve's order
    use_mae = str(statistic).lower() == "mae"
    removed = np.asarray(base.n_removed.values)
    low, high = np.empty(removed.size), np.empty(removed.size)
    for i, r in enumerate(removed):
        rng = np.random.default_rng(int(stream_key(seed, "confidence_validation", i)))
        low[i], high[i] = curve_interval(remaining[r:], use_mae, n_boot, level, rng)
    mean = np.asarray(base.reference_mean.values)
    has_band = np.isfinite(low) & np.isfinite(high)
    inside = has_band & (low <= mean) & (mean <= high)
    trials = int(has_band.sum())
    successes = int(inside.sum())
    if trials:
        f_low, f_high = wilson_interval(successes, trials, level)
        fraction = successes / trials
    else:
        fraction = f_low = f_high = np.nan
    result = base.assign(
        ci_low=("k", low, {"long_name": _BAND["ci_low"]}),
        ci_high=("k", high, {"long_name": _BAND["ci_high"]}),
        reference_in_ci=("k", inside, {"long_name": _BAND["reference_in_ci"]}),
        fraction_valid=((), float(fraction), {"long_name": _SCORE["fraction_valid"]}),
        fraction_valid_low=((), float(f_low), {"long_name": _SCORE["fraction_valid_low"]}),
        fraction_valid_high=((), float(f_high), {"long_name": _SCORE["fraction_valid_high"]}),
    )
    result.attrs.update(_attrs(n_boot, seed))
    return result
