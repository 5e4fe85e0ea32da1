"""Simulated reference values (METHODS §5).

Keep the actual uncertainties, draw ``n`` synthetic error sets ``E~ = uE * eps`` with
``eps ~ D`` (a generator of :mod:`xuqcal.generators`), compute each statistic on every set and
summarize: the simulated reference ``mean``, its standard error ``se = sd / sqrt(n)`` and the
2.5 % / 97.5 % quantiles. Like the bootstrap, the work is lazy and chunked along ``replicate``,
and replicate ``r`` of generator ``D`` draws from the stream ``(seed, "reference:D", r)`` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import dask.array as da
import numpy as np
import xarray as xr

from xuqcal import _kernels as K
from xuqcal._random import stream_key
from xuqcal._version import __version__
from xuqcal.generators import Generator, generator_coords, get_generator
from xuqcal.intervals import quantile_sorted
from xuqcal.resampling import (
    RNG_DESCRIPTION,
    blocks_along_replicate,
    check_count,
    prepare_lazily,
)
from xuqcal.statistics import (
    DEFAULT_N_BINS,
    PreparedData,
    codes_of,
    get_statistics,
    statistic_coords,
)

DEFAULT_GENERATORS = ("normal", "t6")


def _simulation_block(prepared: PreparedData, codes: np.ndarray, generator_code: int,
                      parameter: float, key: np.uint64, start: int, stop: int) -> np.ndarray:
    out = np.empty((stop - start, 1, codes.shape[0]))
    K.simulate_block(key, generator_code, parameter, start, stop, codes,
                     np.array([prepared.n_bins], dtype=np.int64), prepared.u, prepared.u2,
                     prepared.lnu2, prepared.order_u, prepared.tie_u,
                     K.make_work(prepared.size, prepared.n_bins), out)
    return out[:, 0, :]


def simulated_replicates(prepared, codes: np.ndarray, generator: Generator, n: int, seed: int,
                         chunks: int | Sequence[int] | None = None) -> da.Array:
    """Lazy ``(n, len(codes))`` statistics of synthetic error sets drawn with ``generator``."""
    key = stream_key(seed, f"reference:{generator.name}")
    return blocks_along_replicate(_simulation_block, prepared, n, chunks, codes.shape[0], codes,
                                  generator.code, generator.parameter, key)


def _summarize(replicates):
    """Mean, standard error of the mean and 2.5/97.5 % quantiles along the last axis."""
    replicates = np.ascontiguousarray(replicates)
    n = replicates.shape[-1]
    mean = replicates.mean(axis=-1)
    se = replicates.std(axis=-1, ddof=1) / np.sqrt(n)
    ordered = np.sort(replicates, axis=-1)
    probabilities = np.broadcast_to([0.025, 0.975], (*replicates.shape[:-1], 2))
    quantiles = quantile_sorted(ordered, probabilities)
    return mean, se, quantiles[..., 0], quantiles[..., 1]


def reference(
    ds: xr.Dataset,
    statistics: str | Iterable[str] = ("cc", "ence", "zmse"),
    *,
    generator: str | Iterable[str] = DEFAULT_GENERATORS,
    n: int = 10_000,
    seed: int = 0,
    n_bins: int = DEFAULT_N_BINS,
    by: str = "uE",
    chunks: int | Sequence[int] | None = None,
    keep_replicates: bool = False,
    E: str = "E",
    uE: str = "uE",
) -> xr.Dataset:
    """Simulated reference values of statistics for the uncertainties of ``ds`` (lazy).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample``; only ``uE`` (and the binning variable) are used.
    statistics : str or sequence of str
        Statistic keys (any of the registry).
    generator : str or sequence of str
        Generative distributions D (``"normal"``, ``"t6"``, ``"uniform"``, ...).
    n : int
        Number of synthetic error sets per generator (n_mc).
    seed : int
        Seed; the same seed gives bit-identical results for any chunks and scheduler.
    n_bins, by : int, str
        Equal-count bins on ``by`` for the binned statistics.
    chunks : int or sequence of int, optional
        Synthetic sets per Dask task (default 1000).
    keep_replicates : bool
        Also return the simulated values (``replicates`` over
        ``statistic × generator × replicate``).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        ``mean``, ``se``, ``q025``, ``q975`` over ``statistic × generator`` (Dask-backed), with
        the generators' ``df`` as a coordinate.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=1)
    >>> ref = reference(ds, ["zms", "ence"], generator=["normal", "t6"], n=500).compute()
    >>> ref["mean"].dims
    ('statistic', 'generator')
    >>> bool(abs(ref["mean"].sel(statistic="zms", generator="normal") - 1) < 0.01)
    True
    """
    stats = get_statistics(statistics)
    names = [generator] if isinstance(generator, str | Generator) else list(generator)
    if not names:
        raise ValueError("generator: the list of generators is empty")
    gens = [get_generator(g) for g in names]
    gen_coords = generator_coords(gens)
    n = check_count(n, "n")
    stream_key(seed, "reference")  # validates the seed now rather than at compute time
    codes = codes_of(stats)
    prepared = prepare_lazily(ds, stats, n_bins=n_bins, by=by, E=E, uE=uE)
    replicates = xr.DataArray(
        da.stack([simulated_replicates(prepared, codes, g, n, seed, chunks).T for g in gens],
                 axis=1),
        dims=("statistic", "generator", "replicate"),
    )
    mean, se, q025, q975 = xr.apply_ufunc(
        _summarize, replicates.chunk({"replicate": -1}),
        input_core_dims=[["replicate"]], output_core_dims=[[], [], [], []],
        dask="parallelized", output_dtypes=[np.float64] * 4,
    )
    result = xr.Dataset(
        {
            "mean": mean.assign_attrs(long_name="simulated reference value (mean)"),
            "se": se.assign_attrs(long_name="standard error of the simulated mean"),
            "q025": q025.assign_attrs(long_name="2.5 % quantile of the simulated values"),
            "q975": q975.assign_attrs(long_name="97.5 % quantile of the simulated values"),
        },
        coords={**statistic_coords(stats), **gen_coords},
        attrs={
            "method": "simulated reference: E~ = uE * eps, eps ~ generator (METHODS 5)",
            "n_replicates": n,
            "seed": seed,
            "n_bins": n_bins if any(s.needs_bins for s in stats) else 0,
            "by": by,
            "n_samples": ds.sizes["sample"],
            "quantiles": "linear interpolation (Hyndman-Fan type 7)",
            "random_streams": RNG_DESCRIPTION,
            "xuqcal_version": __version__,
        },
    )
    if keep_replicates:
        result["replicates"] = replicates.assign_attrs(long_name="simulated values")
    return result
