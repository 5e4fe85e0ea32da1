"""Simulated reference values (METHODS §5).

Keep the actual uncertainties, draw ``n_mc`` synthetic error sets ``E~ = uE * eps`` with
``eps ~ D`` (a generator of :mod:`xuqcal.core.generators`), compute each statistic on every set
and summarize: the simulated reference ``mean``, its standard error ``se = sd / sqrt(n_mc)`` and
the
2.5 % / 97.5 % quantiles. Like the bootstrap, the work is lazy and chunked along ``replicate``,
and replicate ``r`` of generator ``D`` draws from the stream ``(seed, "reference:D", r)`` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import dask
import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph
from dask.task_spec import List, Task, TaskRef

from xuqcal.analysis.binning import n_bins_for
from xuqcal.analysis.lazy import delayed_call, is_lazy, rows_at
from xuqcal.analysis.resampling import (
    RNG_DESCRIPTION,
    blocks_along_replicate,
    prepare_lazily,
    replicate_chunks,
)
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_input
from xuqcal.core import defaults
from xuqcal.core import kernels as K
from xuqcal.core.checks import (
    check_bool,
    check_chunks,
    check_count,
    check_seed,
)
from xuqcal.core.generators import (
    Generator,
    check_generators,
    fit_generators,
    fitted_nu,
    generator_coords,
)
from xuqcal.core.provenance import attach
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import (
    PreparedData,
    Statistic,
    check_sizes,
    codes_of,
    get_statistics,
    statistic_coords,
)
from xuqcal.core.summaries import summarize_replicates
from xuqcal.io import by_role
from xuqcal.options import OPTIONS

#: Still imported by xuqcal/cli/commands.py (to take from core.defaults, then removed here).


def _undefined_student(generator_code: int, parameter: float) -> bool:
    # tfit whose fit is undefined or gives nu <= 2: no unit-variance Student-t, no draws
    return generator_code == K.STUDENT and not parameter > 2.0


def _simulation_block(prepared: PreparedData, codes: np.ndarray, generator_code: int,
                      parameter: float, key: np.uint64, start: int, stop: int) -> np.ndarray:
    if _undefined_student(generator_code, parameter):
        return np.full((stop - start, codes.shape[0]), np.nan)
    out = np.empty((stop - start, 1, codes.shape[0]))
    K.simulate_block(key, generator_code, parameter, start, stop, codes,
                     np.array([prepared.n_bins], dtype=np.int64), prepared.u, prepared.u2,
                     prepared.lnu2, prepared.order_u, prepared.tie_u,
                     K.make_work(prepared.size, prepared.n_bins), out)
    return prepared.unscale(codes, out[:, 0, :])


def _simulation_block_gpu(prepared: PreparedData, codes: np.ndarray, generator_code: int,
                          parameter: float, key: np.uint64, start: int, stop: int
                          ) -> np.ndarray:
    """:func:`_simulation_block` on the GPU (the same variates, sums in the same order)."""
    if _undefined_student(generator_code, parameter):
        return np.full((stop - start, codes.shape[0]), np.nan)
    from xuqcal.core.gpu import simulate_statistics_gpu

    return simulate_statistics_gpu(key, start, stop, codes, generator_code, parameter, prepared)


#: Synthetic sets per GPU launch (a launch of the CPU's chunk of a few hundred small sets, one
#: GPU thread each, would leave the GPU almost idle). The replicates are then re-chunked as
#: asked.
GPU_SIMULATION_CHUNK = 1 << 17


def simulation_on_gpu(codes: np.ndarray, generator: Generator) -> bool:
    """Whether the simulations of the statistics ``codes`` with ``generator`` run on the GPU:
    the option ``device="cuda"`` (:func:`xuqcal.set_options`), statistics the GPU computes
    (moment, binned and ``cc``, whose sets are sorted and ranked on the device) and a generator
    the GPU draws (:data:`xuqcal.core.gpu.SIMULATION_GENERATORS`: not ``normp``). Decided when
    the graph is built.

    Examples
    --------
    >>> from xuqcal.core.generators import get_generator
    >>> simulation_on_gpu(np.array([K.ZMS]), get_generator("normal"))  # device="cpu"
    False
    """
    if OPTIONS["device"] != "cuda":
        return False
    from xuqcal.core.gpu import simulation_on_gpu as supported

    return supported(codes, generator.code)


def simulation_device(codes: np.ndarray, gens: Sequence[Generator]) -> str | None:
    """The ``device`` attribute of a simulation: which generators' sets the GPU draws, or
    None when all run on the CPU."""
    on = [g.name for g in gens if simulation_on_gpu(codes, g)]
    if not on:
        return None
    off = [g.name for g in gens if g.name not in on]
    where = f"; {', '.join(off)} on the CPU" if off else ""
    return (f"cuda (synthetic sets of {', '.join(on)} on the GPU, the same streams{where})")


def simulated_replicates(prepared, codes: np.ndarray, generator: Generator, n_mc: int, seed: int,
                         chunks: int | Sequence[int] | None = None, first: int = 0
                         ) -> da.Array:
    """Lazy ``(n_mc, len(codes))`` statistics of the synthetic error sets ``first ..
    first + n_mc - 1`` drawn with ``generator``; on the GPU when :func:`simulation_on_gpu`
    (in launches of :data:`GPU_SIMULATION_CHUNK` sets, re-chunked as ``chunks`` asks)."""
    key = stream_key(seed, f"reference:{generator.name}")  # the purpose keeps its old name
    if simulation_on_gpu(codes, generator):
        values = blocks_along_replicate(_simulation_block_gpu, prepared, n_mc,
                                        min(n_mc, GPU_SIMULATION_CHUNK), codes.shape[0],
                                        codes, generator.code, generator.parameter, key,
                                        name="n_mc", first=first)
        return values.rechunk({0: replicate_chunks(n_mc, chunks, name="n_mc")})
    return blocks_along_replicate(_simulation_block, prepared, n_mc, chunks, codes.shape[0],
                                  codes, generator.code, generator.parameter, key, name="n_mc",
                                  first=first)


def _simulate_iv(ds, statistics, *, generators, n_mc, seed, n_bins, by, chunks, keep_replicates,
                 E, uE, n_name: str = "n_mc", generator_name: str = "generators",
                 warn_undefined: bool = True):
    """Argument checks of :func:`simulate`, before any computation (no data are read);
    returns the statistics, the generators, ``n_mc``, ``seed`` and ``chunks`` normalised."""
    stats = get_statistics(statistics)
    gens = check_generators(generators, generator_name, fitted=True)
    n_mc = check_count(n_mc, n_name)
    seed = check_seed(seed)
    chunks = check_chunks(chunks)
    replicate_chunks(n_mc, chunks, name=n_name, width=len(stats) * len(gens))
    check_bool(keep_replicates, "keep_replicates")
    check_bool(warn_undefined, "warn_undefined")
    by, m = check_input(ds, stats, n_bins=n_bins, by=by, E=E, uE=uE)
    check_sizes(stats, m)
    return stats, gens, n_mc, seed, chunks


@broadcast
@by_role
def simulate(
    ds: xr.Dataset,
    statistics: str | Iterable[str] = ("cc", "ence", "zmse"),
    *,
    generators: str | Iterable[str] = defaults.GENERATORS,
    n_mc: int = defaults.N_MC,
    seed: int = defaults.SEED,
    n_bins: int | None = None,
    by: str = defaults.BY,
    chunks: int | Sequence[int] | None = None,
    keep_replicates: bool = False,
    E: str = defaults.E,
    uE: str = defaults.UE,
    warn_undefined: bool = True,
) -> xr.Dataset:
    """Simulated reference values of statistics for the uncertainties of ``ds`` (lazy).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample``; only ``uE`` (and the binning variable) are used.
    statistics : str or sequence of str
        Statistic keys (any of the registry).
    generators : str or sequence of str
        Generative distributions D (``"normal"``, ``"t6"``, ``"uniform"``, ...).
    n_mc : int
        Number of synthetic error sets per generator.
    seed : int
        Seed; the same seed gives bit-identical results for any chunks and scheduler.
    n_bins, by : int or None, str
        Equal-count bins on ``by`` for the binned statistics; ``n_bins`` defaults to the
        recommended number for M points (as :func:`xuqcal.stats`).
    chunks : int or sequence of int, optional
        Synthetic sets per Dask task (default: the option ``replicate_chunk``,
        :func:`xuqcal.set_options`).
    keep_replicates : bool
        Also return the simulated values (``replicates`` over
        ``statistic × generator × replicate``).
    E, uE : str
        Names of the error and uncertainty variables.
    warn_undefined : bool
        Name a reference that is NaN or infinite on some synthetic sets with an
        :class:`~xuqcal.UndefinedStatisticWarning` when computed
        (:func:`~xuqcal.validate` names the undefined statistics through their estimates).

    Returns
    -------
    xarray.Dataset
        ``mean``, ``se``, ``q025``, ``q975`` over ``statistic × generator`` (Dask-backed), with
        the generators' ``df`` as a coordinate.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(2000, nu=6, seed=1)
    >>> ref = simulate(ds, ["zms", "ence"], generators=["normal", "t6"], n_mc=500).compute()
    >>> ref["mean"].dims
    ('statistic', 'generator')
    >>> bool(abs(ref["mean"].sel(statistic="zms", generator="normal") - 1) < 0.01)
    True
    """
    n_bins = n_bins_for(ds, n_bins, statistics=statistics)
    stats, gens, n_mc, seed, chunks = _simulate_iv(
        ds, statistics, generators=generators, n_mc=n_mc, seed=seed, n_bins=n_bins, by=by,
        chunks=chunks, keep_replicates=keep_replicates, E=E, uE=uE,
        warn_undefined=warn_undefined)
    return simulate_checked(ds, stats, gens, n_mc=n_mc, seed=seed, n_bins=n_bins, by=by,
                            chunks=chunks, keep_replicates=keep_replicates, E=E, uE=uE,
                            warn_undefined=warn_undefined)


def simulate_checked(ds: xr.Dataset, stats: Sequence[Statistic], gens: Sequence[Generator], *,
                     n_mc: int, seed: int, n_bins: int, by: str, chunks, keep_replicates: bool,
                     E: str, uE: str, warn_undefined: bool = True,
                     prepared=None, laid_out: Sequence[Statistic] | None = None) -> xr.Dataset:
    """:func:`simulate` of arguments already checked and normalised by ``_simulate_iv`` (for
    callers that check their arguments once, such as :func:`xuqcal.validate`). ``prepared``
    is the (Delayed) :class:`PreparedData` of ``ds`` when the caller has one already.
    ``laid_out`` (statistics among which ``stats`` are, in any order) gives the summaries over
    all of them, NaN for the others (:func:`xuqcal.validate`'s layout, made in the summaries'
    tasks: the same values and attributes as a reindex of the result)."""
    codes = codes_of(stats)
    if prepared is None:
        prepared = prepare_lazily(ds, stats, n_bins=n_bins, by=by, E=E, uE=uE,
                                  analysis="simulate", simulation=True)
    gens = fit_generators(gens, fitted_nu_of(ds, E, uE)) if any(g.fitted for g in gens) \
        else gens
    values = [simulated_replicates(prepared, codes, g, n_mc, seed, chunks) for g in gens]
    keys = [s.key for s in stats]
    rows = None if laid_out is None else pd.Index(keys).get_indexer([s.key for s in laid_out])
    summaries = summarized_lazily(values, keys if warn_undefined else None, rows)
    replicates = (xr.DataArray(da.stack([v.T for v in values], axis=1),
                               dims=("statistic", "generator", "replicate"))
                  if keep_replicates else None)
    result = reference_dataset(summaries, stats, gens, n_mc=n_mc, seed=seed, n_bins=n_bins,
                               by=by, m=ds.sizes["sample"], replicates=replicates,
                               laid_out=laid_out)
    device = simulation_device(codes, gens)
    if device is not None:
        result.attrs["device"] = device
    return result


def _summary_of_blocks(blocks: list[np.ndarray], names: list[str] | None) -> tuple:
    """:func:`~xuqcal.core.summaries.summarize_replicates` of one generator's ``(replicate,
    statistic)`` blocks, over the replicates (one task per generator)."""
    return summarize_replicates(np.concatenate(blocks, axis=0).T, names)


def _summary_rows(summary: tuple, which: int, rows: np.ndarray | None) -> np.ndarray:
    """One summary (0 mean, 1 se, 2 q025, 3 q975) of a generator as a column, laid out on
    ``rows`` (positions among the simulated statistics, -1: NaN) when given."""
    values = summary[which]
    if rows is not None:
        values = rows_at(values, rows)
    return values[:, np.newaxis]


def summarized_lazily(values: Sequence[da.Array], names: list[str] | None,
                      rows: np.ndarray | None = None) -> list[da.Array]:
    """The mean, standard error and 2.5/97.5 % quantiles (:func:`summarize_replicates`) of the
    simulated values of each generator (``values``: one ``(replicate, statistic)`` Dask array
    each), as four ``(statistic, generator)`` Dask arrays: one task per generator gathers its
    blocks and summarises them, one per summary and generator takes its column (laid out on
    ``rows`` when given), where Dask's stack, transposition and rechunk of the replicates and
    ``apply_ufunc`` each made layers of their own over the same values.

    Examples
    --------
    >>> parts = [da.from_array(np.arange(8.0).reshape(4, 2), chunks=(2, 2))]
    >>> mean, se, q025, q975 = summarized_lazily(parts, None)
    >>> mean.compute().tolist()
    [[3.0], [4.0]]
    """
    width = values[0].shape[1] if rows is None else rows.shape[0]
    summaries = []
    for array in values:
        name = f"summarize_replicates-{tokenize(array.name, names)}"
        blocks = List(*(TaskRef(key) for key in dask.core.flatten(array.__dask_keys__())))
        layer = {name: Task(name, _summary_of_blocks, blocks, names)}
        summaries.append(Delayed(name, HighLevelGraph.from_collections(
            name, layer, dependencies=[array])))
    arrays = []
    for which in range(4):
        name = f"summary-{which}-{tokenize([d.key for d in summaries], which, rows)}"
        layer = {(name, 0, j): Task((name, 0, j), _summary_rows, TaskRef(d.key), which, rows)
                 for j, d in enumerate(summaries)}
        graph = HighLevelGraph.from_collections(name, layer, dependencies=summaries)
        arrays.append(da.Array(graph, name, chunks=((width,), (1,) * len(summaries)),
                               dtype=np.float64))
    return arrays


def fitted_nu_of(ds: xr.Dataset, E: str, uE: str):
    """ν of the data-informed generator ``tfit`` for ``ds``
    (:func:`~xuqcal.core.generators.fitted_nu`): a number for NumPy-backed data, a Dask
    Delayed for Dask-backed data (computed with the simulations that draw from it)."""
    if not is_lazy(ds, [E, uE]):
        return fitted_nu(ds[E].values, ds[uE].values)
    return delayed_call(fitted_nu, ds[E].data, ds[uE].data)


#: Attributes of the variable ``nu_tfit`` (ν of the data-informed generator).
NU_TFIT_ATTRS = {
    "long_name": "nu of the data-informed generator tfit",
    "comment": "Student-t fitted to the z-scores (scaled F(1, nu) fit of Z^2, as for PICP); "
               "NaN when the fit is undefined or gives nu <= 2 (tfit then has no references)",
}


def reference_result(replicates: xr.DataArray, stats: Sequence[Statistic],
                     gens: Sequence[Generator], *, n_mc: int, seed: int, n_bins: int, by: str,
                     m: int, keep_replicates: bool, warn_undefined: bool) -> xr.Dataset:
    """The :func:`simulate` result from computed simulated values (``statistic × generator ×
    replicate``, those of a precision-driven simulation, :mod:`xuqcal.analysis.precision`):
    the summaries of :func:`summarize_replicates`, as :func:`summarized_lazily` gives them
    lazily."""
    summaries = summarize_replicates(np.asarray(replicates.values),
                                     [s.key for s in stats] if warn_undefined else None)
    return reference_dataset(summaries, stats, gens, n_mc=n_mc, seed=seed, n_bins=n_bins,
                             by=by, m=m, replicates=replicates if keep_replicates else None)


def reference_dataset(summaries: Sequence, stats: Sequence[Statistic],
                      gens: Sequence[Generator], *, n_mc: int, seed: int, n_bins: int, by: str,
                      m: int, replicates: xr.DataArray | None = None,
                      laid_out: Sequence[Statistic] | None = None) -> xr.Dataset:
    """The :func:`simulate` result of the ``(statistic, generator)`` summaries (mean, se,
    q025, q975; NumPy or Dask arrays) of ``stats`` (over ``laid_out`` when given), with its
    attributes, the fitted ν of ``tfit`` and the ``replicates`` when kept."""
    mean, se, q025, q975 = summaries
    dims = ("statistic", "generator")
    result = xr.Dataset(
        {
            "mean": (dims, mean, {"long_name": "simulated reference value (mean)"}),
            "se": (dims, se, {"long_name": "standard error of the simulated mean"}),
            "q025": (dims, q025, {"long_name": "2.5 % quantile of the simulated values"}),
            "q975": (dims, q975, {"long_name": "97.5 % quantile of the simulated values"}),
        },
        coords={**statistic_coords(stats if laid_out is None else laid_out),
                **generator_coords(gens)},
    )
    attach(result, {
        "method": "simulated reference: E~ = uE * eps, eps ~ generator (METHODS 5)",
        "n_mc": n_mc,
        "seed": seed,
        "n_bins": n_bins if any(s.needs_bins for s in stats) else 0,
        "by": by,
        "n_samples": m,
        "quantiles": "linear interpolation (Hyndman-Fan type 7)",
        "random_streams": RNG_DESCRIPTION,
    })
    fitted = [g for g in gens if g.fitted]
    if fitted:
        nu = fitted[0].parameter
        result["nu_tfit"] = xr.DataArray(
            da.from_delayed(nu, shape=(), dtype=np.float64) if isinstance(nu, Delayed)
            else np.float64(nu), attrs=NU_TFIT_ATTRS)
    if replicates is not None:
        result["replicates"] = replicates.assign_attrs(long_name="simulated values")
    return result
