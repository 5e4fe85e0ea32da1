"""The synthetic and sensitivity studies of METHODS §7, each returning a labelled Dataset.

* :func:`validation_probability` — how often BCa intervals of ZMS and RCE validate calibrated
  NIG data sets (``p_val`` with its Wilson-cc interval) as a function of ν and M;
* :func:`generator_sensitivity_study` — simulated references of a data set's real uncertainties
  for D = t(ν), ν = 3 … 20, and D = normal;
* :func:`size_bins_study` — the size/bins sensitivity cube of NIG data with its fit
  ``θ_ref = a + α sqrt(N / M)``;
* :func:`zero_bins_extrapolation` — binned statistics for N = 10 … 150 bins extrapolated
  linearly in ``sqrt(N / M)`` to zero bins: a validation that needs no assumption on D.

Every result records its parameters, its seed (when random) and the xuqcal version in its
attributes, and can be written with :func:`xuqcal.to_netcdf`. The figures are in
:mod:`xuqcal.plot.studies`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections.abc import Iterable
from pathlib import Path

import dask
import numpy as np
import xarray as xr

from xuqcal._lazy import lazy_module
from xuqcal.analysis.lazy import analysis, placeholder
from xuqcal.analysis.resampling import bootstrap_prepared, check_count
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core.checks import (
    check_bool,
    check_replicates,
    check_seed,
    float_list,
    int_list,
    user_stacklevel,
)
from xuqcal.core.generators import get_generator
from xuqcal.core.intervals import DegenerateIntervalWarning, check_level, wilson_interval, zeta
from xuqcal.core.provenance import attach, provenance
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import (
    PreparedData,
    Statistic,
    beta_gm,
    codes_of,
    get_statistics,
    statistic_coords,
)
from xuqcal.io import by_role, synthetic
from xuqcal.io.synthetic import check_nu
from xuqcal.options import OPTIONS
from xuqcal.studies import cube as _cube
from xuqcal.studies import progress as _progress

sps = lazy_module("scipy.stats")

__all__ = [
    "generator_sensitivity_study",
    "size_bins_study",
    "trial_seed",
    "validation_probability",
    "zero_bins_extrapolation",
]

_VP_PURPOSE = "studies:validation_probability"


# ---------------------------------------------------------------------------- small helpers


def _check_seed(seed) -> int:
    return check_seed(seed)


# ------------------------------------------------------------------ validation probability


def trial_seed(seed: int, size: int, nu: float, trial: int) -> int:
    """Seed of data set ``trial`` of cell (ν, M) in :func:`validation_probability`.

    The data set is ``synthetic.nig(size, nu, generator, seed=s)`` and its bootstrap is
    ``xuqcal.bootstrap(ds, statistics, n_boot=n_boot, seed=s)`` (same random streams, same interval)
    with ``s = trial_seed(seed, size, nu, trial)``. The seed is derived from
    ``(seed, M, ν, trial)`` with NumPy's ``SeedSequence`` (see
    :func:`xuqcal.core.random.stream_key`),
    so every data set of every cell is independent and fixed whatever the computation order.

    Examples
    --------
    >>> trial_seed(0, 1000, 2, 0) == trial_seed(0, 1000, 2.0, 0)
    True
    >>> len({trial_seed(0, 1000, 2, 0), trial_seed(0, 1000, 2, 1), trial_seed(0, 5000, 2, 0)})
    3
    """
    return int(stream_key(seed, f"{_VP_PURPOSE}:{int(size)}:{float(nu)!r}", int(trial)))


def _validation_batch(size: int, nu: float, generator: str, seeds: list[int],
                      statistics: tuple[Statistic, ...], n_boot: int, level: float
                      ) -> tuple[np.ndarray, ...]:
    """Estimates, BCa intervals, references and β_GM(uE²) of a batch of NIG data sets.

    Pure NumPy and Numba (no Dask graph per data set): the same computation as
    :func:`xuqcal.bootstrap` with ``seed=s`` for each data set seed ``s``.
    """
    codes = codes_of(statistics)
    n, k = len(seeds), len(statistics)
    estimate, low, high, reference = (np.empty((n, k)) for _ in range(4))
    skewness = np.empty(n)
    for i, s in enumerate(seeds):
        ds = synthetic.nig(size, nu, generator, seed=s)
        E, uE = ds["E"].values, ds["uE"].values
        prepared = PreparedData.from_arrays(E, uE, needs_bins=False)
        estimate[i], low[i], high[i] = bootstrap_prepared(prepared, codes, n_boot=n_boot, seed=s,
                                                          level=level)
        reference[i] = [stat.reference_value(uE) for stat in statistics]
        skewness[i] = beta_gm(uE * uE)
    return estimate, low, high, reference, skewness


def validation_probability(
    nu: Iterable[float] = range(2, 21),
    *,
    size: Iterable[int] = (1000, 5000),
    n_mc: int = defaults.N_MC_STUDY,
    statistics: str | Iterable[str] = ("zms", "rce"),
    n_boot: int = 1000,
    level: float = defaults.LEVEL,
    seed: int = defaults.SEED,
    generator: str = defaults.GENERATORS[0],
    keep_trials: bool = False,
    batch_size: int | None = None,
) -> xr.Dataset:
    """Validation probability of statistics with a predefined reference on calibrated NIG data.

    For each ν and M, ``n_mc`` independent synthetic NIG data sets (METHODS §1: calibrated by
    construction) are drawn; each statistic gets a bootstrap BCa interval (``n_boot``
    replicates) and a ζ-score against its reference (1 for ``zms``, 0 for ``rce``); the data set
    is *valid* when ``|ζ| ≤ 1``. ``p_val`` is the fraction of valid data sets, with its Wilson
    interval with continuity correction. An ideal method gives ``p_val = level`` (METHODS §7).

    The data sets are computed in NumPy/Numba batches of ``batch_size``, one ``dask.delayed``
    task per batch, by the current Dask scheduler (the kernels release the GIL; Dask's progress
    bar with the option ``progress``). Data set
    ``t`` of cell (ν, M) is fixed by :func:`trial_seed`, so the result is bit-identical for
    any scheduler and any ``batch_size``.

    Parameters
    ----------
    nu : iterable of float
        Shapes ν of the uncertainty distribution ``uE² ~ IG(ν/2, ν/2)`` (ν > 0).
    size : iterable of int
        Data set sizes M.
    n_mc : int
        Data sets per (ν, M).
    statistics : str or iterable of str
        Statistics with a predefined reference (``zm``, ``zms``, ``zv``, ``rce``, ``nll``; the
        reference of ``nll`` is valid only for a normal generator).
    n_boot : int
        Bootstrap replicates per data set.
    level : float
        Confidence level of the BCa and Wilson intervals.
    seed : int
        Seed of the whole study.
    generator : str
        Generative distribution D of the errors (``E = uE · eps``, ``eps ~ D``); with
        ``normal`` (the default) E follows a Student-t(ν).
    keep_trials : bool
        Also return the per-data-set ``estimate``, ``ci_low``, ``ci_high``, ``zeta``,
        ``valid`` and ``beta_gm_trial`` over a ``trial`` dimension.
    batch_size : int, optional
        Data sets per Dask task (default: the option ``study_batch_size``, see
        :func:`xuqcal.set_options`).

    Returns
    -------
    xarray.Dataset
        ``p_val``, ``p_val_low``, ``p_val_high``, ``n_valid`` over (``nu``, ``size``,
        ``statistic``); ``beta_gm_uE2`` (mean robust skewness β_GM of uE² over the data sets)
        and ``beta_gm_uE2_se`` over (``nu``, ``size``). Data set ``t`` of a cell can be
        regenerated with :func:`trial_seed`.

    Examples
    --------
    >>> r = validation_probability([3, 6], size=[500], n_mc=20, n_boot=200)
    >>> dict(r["p_val"].sizes)
    {'nu': 2, 'size': 1, 'statistic': 2}
    >>> bool(((r.p_val_low <= r.p_val) & (r.p_val <= r.p_val_high)).all())
    True
    """
    nus = [check_nu(v, allow_inf=False) for v in float_list(nu, "nu", above=0.0)]
    sizes = int_list(size, "size", 3)
    n_mc = check_count(n_mc, "n_mc", 1)
    level = check_level(level)
    n_boot = check_replicates(n_boot, level, "n_boot")
    seed = _check_seed(seed)
    if batch_size is None:
        batch_size = OPTIONS["study_batch_size"]
    batch_size = check_count(batch_size, "batch_size", 1)
    keep_trials = check_bool(keep_trials, "keep_trials")
    gen = get_generator(generator).name
    chosen = get_statistics(statistics)
    missing = [s.key for s in chosen if not s.has_reference]
    if missing:
        raise ValueError(
            f"statistics: {', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no "
            "predefined reference value; the validation probability needs one (zm, zms, zv, "
            "rce, nll)"
        )
    keys = [s.key for s in chosen]

    tasks = []
    for nu_value in nus:
        for m in sizes:
            seeds = [trial_seed(seed, m, nu_value, t) for t in range(n_mc)]
            for start in range(0, n_mc, batch_size):
                tasks.append(dask.delayed(_validation_batch, pure=True)(
                    m, nu_value, gen, seeds[start:start + batch_size], chosen, n_boot, level))
    results = _progress.compute(*tasks)

    shape = (len(nus), len(sizes), n_mc)
    parts = [np.concatenate([r[j] for r in results]) for j in range(5)]
    estimate, low, high, reference = (p.reshape(*shape, len(keys)) for p in parts[:4])
    skewness = parts[4].reshape(shape)
    z = zeta(estimate, reference, low, high)
    valid = np.abs(z) <= 1.0
    n_valid = valid.sum(axis=2)  # (nu, size, statistic)
    p_low, p_high = wilson_interval(n_valid, n_mc, level)

    dims = ("nu", "size", "statistic")
    constant_refs = [math.nan if s.key == "nll" else float(s.reference) for s in chosen]
    coords = {
        "nu": ("nu", np.asarray(nus), {"long_name": "ν of uE² ~ InverseGamma(ν/2, ν/2)"}),
        "size": ("size", np.asarray(sizes), {"long_name": "data set size M"}),
        **statistic_coords(chosen),
        "reference": ("statistic", np.asarray(constant_refs),
                      {"long_name": "predefined reference value (NaN: data-dependent, nll)"}),
    }
    result = xr.Dataset(
        {
            "p_val": (dims, n_valid / n_mc,
                      {"long_name": "validation probability: fraction of data sets with "
                                    "|zeta| <= 1"}),
            "p_val_low": (dims, np.asarray(p_low),
                          {"long_name": "lower bound of the Wilson-cc interval of p_val"}),
            "p_val_high": (dims, np.asarray(p_high),
                           {"long_name": "upper bound of the Wilson-cc interval of p_val"}),
            "n_valid": (dims, n_valid.astype(np.int64),
                        {"long_name": "number of valid data sets"}),
            "beta_gm_uE2": (("nu", "size"), skewness.mean(axis=2),
                            {"long_name": "mean robust skewness beta_GM of uE^2"}),
            "beta_gm_uE2_se": (("nu", "size"), skewness.std(axis=2, ddof=1) / np.sqrt(n_mc)
                               if n_mc > 1 else np.full(shape[:2], np.nan),
                               {"long_name": "standard error of beta_gm_uE2"}),
        },
        coords=coords,
    )
    if keep_trials:
        tdims = ("nu", "size", "trial", "statistic")
        result = result.assign_coords(trial=np.arange(n_mc))
        result["estimate"] = (tdims, estimate, {"long_name": "statistic of the data set"})
        result["ci_low"] = (tdims, low, {"long_name": "lower bound of the BCa interval"})
        result["ci_high"] = (tdims, high, {"long_name": "upper bound of the BCa interval"})
        result["zeta"] = (tdims, z, {"long_name": "zeta-score against the reference"})
        result["valid"] = (tdims, valid, {"long_name": "|zeta| <= 1"})
        result["beta_gm_trial"] = (("nu", "size", "trial"), skewness,
                                   {"long_name": "robust skewness beta_GM of uE^2"})
    result.attrs.update(
        study="validation probability (METHODS §7)",
        model="NIG: uE^2 ~ InverseGamma(nu/2, nu/2), E = uE * eps, eps ~ generator",
        generator=gen,
        n_mc=n_mc,
        n_boot=n_boot,
        level=level,
        method="bca",
        statistics=keys,
        seed=seed,
        data_sets=("data set t of cell (nu, M): xuqcal.synthetic.nig(M, nu, generator, seed=s) "
                   "with s = xuqcal.studies.trial_seed(seed, M, nu, t); its bootstrap is "
                   "xuqcal.bootstrap(ds, statistics, n_boot=n_boot, seed=s)"),
        binomial_interval="Wilson score with continuity correction",
    )
    attach(result)
    return result


# --------------------------------------------------------------------- generator sensitivity


def _t_name(nu: float) -> str:
    return get_generator("t" + np.format_float_positional(nu, trim="-")).name


def generator_sensitivity_study(
    data,
    *,
    nu: Iterable[float] = (3, 4, 5, 7, 10, 15, 20),
    statistics: str | Iterable[str] = ("cc", "ence", "zmse", "zms"),
    n_bins: int = 50,
    n_mc: int = defaults.N_MC,
    seed: int = defaults.SEED,
) -> xr.Dataset:
    """Sensitivity of simulated references to the generator D, on real uncertainties.

    For each data set, the statistics of ``n_mc`` synthetic error sets ``E~ = uE · eps`` are
    simulated on its actual uncertainties with ``eps ~ t(ν)`` (unit variance) for each ν, and
    with ``eps ~ normal``. A thin wrapper of :func:`xuqcal.studies.cube.build_from` (same random
    streams: a cell equals :func:`xuqcal.simulate` with the same seed and ``n_bins``).

    The normal generator is the ν → ∞ limit of t(ν): it is stored **at ν = inf** of the
    numeric ``nu`` dimension (last), and the coordinate ``generator`` along ``nu`` names each
    generator (``t3``, …, ``normal``).

    Parameters
    ----------
    data : Dataset, mapping name -> Dataset, or DataTree
        One or several data sets with ``uE`` (as for :func:`xuqcal.studies.cube.build_from`).
    nu : iterable of float
        Degrees of freedom of the Student-t generators (ν > 2, finite).
    statistics : str or iterable of str
        Statistic keys.
    n_bins : int
        Equal-count bins on uE of the binned statistics.
    n_mc : int
        Synthetic error sets per data set and generator.
    seed : int
        Seed of the simulations.

    Returns
    -------
    xarray.Dataset
        ``mean``, ``se``, ``q025``, ``q975`` over (``dataset``, ``nu``, ``statistic``), and
        against the normal generator ``difference``, ``combined_uncertainty`` (``sqrt(U₁² +
        U₂²)``, ``U = 2 se``) and ``sensitive`` (the difference exceeds it).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(1000, nu=6, seed=1)
    >>> r = generator_sensitivity_study(ds, nu=[3, 10], statistics=["ence"], n_bins=10,
    ...                                 n_mc=50)
    >>> r.nu.values.tolist(), r.generator.values.tolist()
    ([3.0, 10.0, inf], ['t3', 't10', 'normal'])
    """
    nus = float_list(nu, "nu", above=2.0)
    for v in nus:
        if v > 1e6:  # t(ν) is named 't<ν>' in positional notation (ν = 1e6 is normal already)
            raise ValueError(f"nu: expected ν from 2 to 1e6 (larger ν is the normal generator, "
                             f"always included), got {v:g}")
    n_bins = check_count(n_bins, "n_bins", 1)
    seed = _check_seed(seed)
    chosen = get_statistics(statistics)
    order = sorted(nus)
    names = [_t_name(v) for v in order] + ["normal"]
    if len(set(names)) != len(names):
        raise ValueError(f"nu: values {order} give the same generator twice")
    cube = _cube.build_from(data, [s.key for s in chosen], generators=names, n_bins=[n_bins],
                            n_mc=n_mc, seed=seed).compute()
    cube = cube.squeeze("n_bins")
    sens = _cube.generator_sensitivity(cube, baseline="normal")
    result = xr.merge([cube[["mean", "se", "q025", "q975"]], sens], combine_attrs="drop")
    nu_values = np.array([*order, math.inf])
    result = result.rename({"generator": "nu"}).assign_coords(
        nu=("nu", nu_values, {"long_name": "degrees of freedom of the t(nu) generator "
                                           "(inf: normal)"}),
        generator=("nu", names, {"long_name": "generative distribution D"}),
    )
    if "df" in result.coords:
        result = result.drop_vars("df")
    result = result.transpose("dataset", "nu", "statistic", ...)
    result.attrs.update(
        study="sensitivity of simulated references to the generator D (METHODS §7)",
        model="actual uE of each data set, E = uE * eps, eps ~ generator",
        normal="the normal generator is stored at nu = inf",
        n_bins=n_bins,
        n_mc=int(cube.attrs["n_mc"]),
        seed=seed,
        statistics=[s.key for s in chosen],
        random_streams=cube.attrs["random_streams"],
    )
    attach(result)
    return result


# ------------------------------------------------------------------------ size/bins cube


def size_bins_study(
    statistics: str | Iterable[str] = ("ence", "zmse"),
    *,
    size: Iterable[int] = (2000, 4000, 8000, 12000, 16000),
    n_bins: Iterable[int] = (10, 20, 30, 40, 50),
    nu: Iterable[float] = (3, 4, 5, 6, 12, 24),
    generators: str | Iterable[str] = defaults.GENERATORS,
    n_mc: int = defaults.N_MC_CUBE,
    seed: int = defaults.SEED,
    path: str | Path | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
) -> xr.Dataset:
    """Size and bin dependence of simulated statistics on NIG data, with the fit in sqrt(N/M).

    Builds and computes the sensitivity cube (:func:`xuqcal.studies.cube.build`) and fits
    ``mean = a + α sqrt(N / M)`` per statistic and generator (:func:`xuqcal.studies.cube.fit_sqrt`,
    weights ``1 / se²``). For a normal D, ENCE ≈ 0.56 sqrt(N/M) with a ≈ 0 (TARGETS.md).

    Parameters
    ----------
    statistics : str or iterable of str
        Statistic keys.
    size, n_bins, nu : iterables
        Grid of sizes M, numbers of bins N and ν of ``uE² ~ IG(ν/2, ν/2)``.
    generator : str or iterable of str
        Generative distributions D.
    n_mc : int
        Synthetic data sets per cell.
    seed : int
        Seed of the cube.
    path : str or Path, optional
        Checkpointed build: the cube alone (without the fit) is written to ``path`` and an
        interrupted build resumes (see :func:`xuqcal.studies.cube.build`).
    overwrite : bool
        Allow replacing an existing cube at ``path``.
    progress : bool, optional
        Show Dask's progress bar while the cube is computed (default: the option
        ``progress``, see :func:`xuqcal.set_options`).

    Returns
    -------
    xarray.Dataset
        The cube's ``mean``, ``se``, ``q025``, ``q975`` over (``size``, ``nu``, ``generator``,
        ``n_bins``, ``statistic``), the coordinate ``x = sqrt(n_bins / size)``, and the fit
        ``fit_a``, ``fit_alpha``, ``fit_a_se``, ``fit_alpha_se``, ``fit_chi2_dof`` over
        (``statistic``, ``generator``).

    Examples
    --------
    >>> r = size_bins_study(["ence"], size=[400, 1600], n_bins=[4, 16], nu=[6], n_mc=100)
    >>> r["fit_alpha"].dims, r["mean"].dims
    (('statistic', 'generator'), ('size', 'nu', 'generator', 'n_bins', 'statistic'))
    """
    size, n_bins = int_list(size, "size", 2), int_list(n_bins, "n_bins", 1)
    if len({b / m for m in size for b in n_bins}) < 2:
        raise ValueError(f"size, n_bins: the fit of mean = a + alpha sqrt(n_bins / size) needs "
                         f"at least 2 values of n_bins / size, got size={size}, "
                         f"n_bins={n_bins}; give several sizes or numbers of bins")
    cube = _cube.build(statistics, size=size, n_bins=n_bins, nu=nu, generators=generators,
                       n_mc=n_mc, seed=seed, path=path, overwrite=overwrite, progress=progress)
    (cube,) = _progress.compute(cube, progress=progress)
    fit = _cube.fit_sqrt(cube)
    renamed = fit.rename({name: f"fit_{name}" for name in fit.data_vars})
    result = xr.merge([cube, renamed], combine_attrs="drop_conflicts")
    result = result.assign_coords(
        x=np.sqrt(result["n_bins"] / result["size"]).transpose("size", "n_bins").assign_attrs(
            long_name="sqrt(n_bins / size)")
    )
    result.attrs = dict(cube.attrs)
    result.attrs.update(
        study="size and bin dependence of simulated statistics (METHODS §7)",
        fit_model=fit.attrs["model"],
        fit_over=fit.attrs["fitted_over"],
        checkpoint=str(path) if path is not None else "",
    )
    attach(result)
    return result


# -------------------------------------------------------------------- zero-bins extrapolation


@broadcast
@by_role
def zero_bins_extrapolation(
    ds: xr.Dataset,
    *,
    statistics: str | Iterable[str] = ("ence", "zmse"),
    n_bins: Iterable[int] = range(10, 151, 10),
    min_points: int = defaults.MIN_POINTS_PER_BIN_LOCAL,
    fit_above: int = 20,
    level: float = defaults.LEVEL,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Extrapolate binned statistics to zero bins and test whether the intercept is zero.

    Binned statistics of calibrated data grow like ``sqrt(N / M)`` (bin noise); their value at
    ``x = sqrt(N / M) → 0`` measures the miscalibration itself, whatever the generator D. Each
    statistic is computed with N equal-count bins on uE for every N of ``n_bins`` with at least
    ``min_points`` points per bin (``N ≤ M / min_points``); a straight line in ``x`` is fitted by
    ordinary least squares over ``N > fit_above``, and the data set is *valid* for a statistic
    when the ``level`` Student-t interval of the intercept (``n_fit - 2`` degrees of freedom)
    contains 0 (METHODS §7).

    The values at different N come from the same data and are correlated, so the OLS interval is
    a heuristic of the published method, not an exact confidence interval.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    statistics : str or iterable of str
        Binned statistics (``ence``, ``uce``, ``zmse``).
    n_bins : iterable of int
        Numbers of bins N to compute.
    min_points : int
        Minimum number of points per bin.
    fit_above : int
        Only N > ``fit_above`` enter the fit.
    level : float
        Confidence level of the intercept's interval.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        ``value`` over (``n_bins``, ``statistic``) with coordinates ``x`` and ``in_fit`` along
        ``n_bins``; ``intercept``, ``intercept_se``, ``intercept_low``, ``intercept_high``,
        ``slope``, ``slope_se``, ``zeta`` (intercept over the interval's half-width) and
        ``valid`` over ``statistic``.

    Examples
    --------
    >>> import xuqcal
    >>> r = zero_bins_extrapolation(xuqcal.synthetic.nig(3000, nu=6, seed=0))
    >>> r.n_bins.values.tolist()
    [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150]
    >>> int(r.in_fit.sum()), r.valid.dims
    (13, ('statistic',))
    """
    chosen = get_statistics(statistics)
    not_binned = [s.key for s in chosen if not s.needs_bins]
    if not_binned:
        raise ValueError(
            f"statistics: {', '.join(not_binned)} {'is' if len(not_binned) == 1 else 'are'} "
            "not binned; the zero-bins extrapolation applies to binned statistics (ence, uce, "
            "zmse)"
        )
    bins = sorted(int_list(n_bins, "n_bins", 1))
    min_points = check_count(min_points, "min_points", 2)
    fit_above = check_count(fit_above, "fit_above", 0)
    level = check_level(level)
    check_data_variables(ds, E, uE)  # names, dimensions, dtypes: no data are read
    m = ds.sizes["sample"]
    used = [n for n in bins if n * min_points <= m]
    skipped = [n for n in bins if n * min_points > m]
    fit_bins = [n for n in used if n > fit_above]
    if len(fit_bins) < 3:
        raise ValueError(
            f"n_bins: only {len(fit_bins)} numbers of bins N in {bins} have "
            f"N > fit_above={fit_above} and at least min_points={min_points} points per bin "
            f"(N <= M / min_points = {m / min_points:g} for M = {m}); the fit with an interval "
            "needs at least 3"
        )
    x = np.sqrt(np.asarray(used, dtype=np.float64) / m)
    in_fit = np.asarray(used) > fit_above
    attrs = dict(
        study="extrapolation of binned statistics to zero bins (METHODS §7)",
        model="value = intercept + slope * sqrt(n_bins / size), ordinary least squares",
        size=m,
        min_points=min_points,
        fit_above=fit_above,
        level=level,
        n_fit=int(in_fit.sum()),
        degrees_of_freedom=int(in_fit.sum()) - 2,
        interval="intercept +- t_{(1+level)/2, n_fit-2} * intercept_se",
        n_bins_skipped=json.dumps(skipped),
        statistics=[s.key for s in chosen],
        binning="equal-count bins on uE (stable sort), as METHODS §3",
        dataset=str(ds.attrs["name"]) if ds.attrs.get("name") else None,
    )
    n_used, n_stats = len(used), len(chosen)
    layout = _zero_bins_dataset(
        {name: placeholder((n_used, n_stats) if name == "value" else n_stats,
                           bool if name == "valid" else np.float64)
         for name in _ZERO_BINS_VARIABLES}, chosen, used, x, in_fit, fit_above,
        provenance(attrs))
    return analysis(_zero_bins_body, ds, [E, uE], lambda: layout, chosen=chosen, used=used,
                    x=x, in_fit=in_fit, fit_above=fit_above, level=level, E=E, uE=uE)


_ZERO_BINS_VARIABLES = ("value", "intercept", "intercept_se", "intercept_low", "intercept_high",
                        "slope", "slope_se", "zeta", "valid")


def _zero_bins_body(ds: xr.Dataset, *, chosen, used, x, in_fit, fit_above, level, E,
                    uE) -> xr.Dataset:
    """The values over the numbers of bins and the fitted line of :func:`zero_bins_extrapolation`
    (NumPy-backed data)."""
    e = np.asarray(ds[E].values, dtype=np.float64)
    u = np.asarray(ds[uE].values, dtype=np.float64)
    codes = codes_of(chosen)
    prepared = PreparedData.from_arrays(e, u, n_bins=used[0])
    values = np.empty((len(used), len(chosen)))
    for i, n in enumerate(used):
        # the points are sorted once; only the number of bins changes
        values[i] = dataclasses.replace(prepared, n_bins=n).evaluate(codes)
    t = float(sps.t.ppf(0.5 + level / 2.0, in_fit.sum() - 2))
    lines = [sps.linregress(x[in_fit], values[in_fit, j]) for j in range(len(chosen))]
    intercept = np.array([line.intercept for line in lines], dtype=np.float64)
    slope = np.array([line.slope for line in lines], dtype=np.float64)
    intercept_se = np.array([line.intercept_stderr for line in lines], dtype=np.float64)
    slope_se = np.array([line.stderr for line in lines], dtype=np.float64)
    # constant values (e.g. constant E and uE): an exact fit, whose standard errors are 0;
    # linregress gives NaN there (its correlation coefficient is undefined)
    exact = np.ptp(values[in_fit], axis=0) == 0
    intercept_se[exact], slope_se[exact] = 0.0, 0.0
    half = t * intercept_se
    low, high = intercept - half, intercept + half
    with np.errstate(divide="ignore", invalid="ignore"):
        z = intercept / half
    for key, width, value in zip((s.key for s in chosen), half, intercept, strict=True):
        if math.isfinite(value) and not width > 0:
            warnings.warn(f"{key}: the zero-bins interval has zero width (the values do not "
                          "vary with the number of bins, e.g. constant E and uE), so zeta is "
                          "infinite", DegenerateIntervalWarning, stacklevel=user_stacklevel())
    return _zero_bins_dataset(
        {"value": values, "intercept": intercept, "intercept_se": intercept_se,
         "intercept_low": low, "intercept_high": high, "slope": slope, "slope_se": slope_se,
         "zeta": z, "valid": (low <= 0.0) & (0.0 <= high)}, chosen, used, x, in_fit, fit_above)


def _zero_bins_dataset(values: dict, chosen, used, x, in_fit, fit_above,
                       attrs: dict | None = None) -> xr.Dataset:
    """The result of :func:`zero_bins_extrapolation` from its variables (values or layout
    placeholders)."""
    return xr.Dataset(
        {
            "value": (("n_bins", "statistic"), values["value"],
                      {"long_name": "statistic with N equal-count bins on uE"}),
            "intercept": ("statistic", values["intercept"],
                          {"long_name": "intercept of the line in sqrt(N/M): value at zero "
                                        "bins"}),
            "intercept_se": ("statistic", values["intercept_se"],
                             {"long_name": "standard error of the intercept (OLS)"}),
            "intercept_low": ("statistic", values["intercept_low"],
                              {"long_name": "lower bound of the intercept's t-interval"}),
            "intercept_high": ("statistic", values["intercept_high"],
                               {"long_name": "upper bound of the intercept's t-interval"}),
            "slope": ("statistic", values["slope"],
                      {"long_name": "slope of the line in sqrt(N/M)"}),
            "slope_se": ("statistic", values["slope_se"],
                         {"long_name": "standard error of the slope (OLS)"}),
            "zeta": ("statistic", values["zeta"],
                     {"long_name": "intercept over the half-width of its interval"}),
            "valid": ("statistic", values["valid"],
                      {"long_name": "the intercept's interval contains 0"}),
        },
        coords={
            "n_bins": ("n_bins", np.asarray(used), {"long_name": "number of bins N"}),
            "x": ("n_bins", x, {"long_name": "sqrt(N / M)"}),
            "in_fit": ("n_bins", in_fit, {"long_name": f"used in the fit (N > {fit_above})"}),
            **statistic_coords(chosen),
        },
        attrs=attrs or {},
    )

