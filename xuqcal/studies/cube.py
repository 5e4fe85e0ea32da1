"""Sensitivity cubes: simulated statistics over a grid, persisted as NetCDF (METHODS §5, §7).

A cube answers questions like "how does the simulated reference of ENCE depend on M, N, ν and
D?". It is a Dataset of simulated statistics with the variables ``mean``, ``se``, ``q025``,
``q975`` (and optionally the raw ``replicates``) over the grid dimensions:

* :func:`build` — synthetic NIG data sets: ``size`` (M) × ``n_bins`` (N) × ``nu`` ×
  ``generator`` × ``statistic``;
* :func:`build_from` — the real uncertainties of one or several data sets: ``dataset`` ×
  ``n_bins`` × ``generator`` × ``statistic``.

One simulated data set serves every ``n_bins`` value, and replicate ``r`` of a cell draws from
streams that depend only on ``(seed, cell, r)``, so a cube is bit-identical whatever the
chunking and the scheduler (including ``dask.distributed``). Without ``path`` the result is a
lazy Dask graph; with ``path`` the cells are computed one after the other, each checkpointed to
``<path>.partial/``, and an interrupted build resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import math
import os
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from xuqcal import io
from xuqcal.analysis.binning import check_n_bins
from xuqcal.analysis.resampling import RNG_DESCRIPTION, blocks_along_replicate, check_count
from xuqcal.analysis.slices import DATASET_DIM, extra_dims
from xuqcal.core import defaults
from xuqcal.core import kernels as K
from xuqcal.core.checks import (
    as_list,
    check_bool,
    check_chunks,
    check_seed,
    float_list,
    int_list,
    user_stacklevel,
)
from xuqcal.core.generators import Generator, check_generators, generator_coords, get_generator
from xuqcal.core.provenance import attach, created
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import (
    PreparedData,
    UndefinedStatisticWarning,
    codes_of,
    get_statistics,
    statistic_coords,
)
from xuqcal.core.summaries import (
    U_REF_FACTOR,
    differ_beyond_uncertainty,
    summarize_replicates,
)
from xuqcal.io import locks as _locks
from xuqcal.io import outputs as _outputs
from xuqcal.io.netcdf import DamagedInputError, _load_checked, read_netcdf
from xuqcal.io.schema import present_points, slice_label, slice_positions
from xuqcal.io.synthetic import check_nu
from xuqcal.studies import progress as _progress

SUMMARIES = ("mean", "se", "q025", "q975")
_LONG_NAMES = {
    "mean": "mean of the simulated values (simulated reference)",
    "se": "standard error of the mean, sd / sqrt(n_mc)",
    "q025": "2.5 % quantile of the simulated values",
    "q975": "97.5 % quantile of the simulated values",
    "replicates": "simulated values",
}


# --------------------------------------------------------------------------- cell computation


def _nig_block(_shared, codes, n_bins, m, nu, generator, key_u, key_e, start, stop):
    out = np.empty((stop - start, n_bins.size, codes.size))
    K.nig_block(key_u, key_e, nu, generator.code, generator.parameter, m, start, stop, codes,
                n_bins, K.make_work(m, int(n_bins.max())), out)
    return out


def _dataset_block(prepared: PreparedData, codes, n_bins, generator, key, start, stop):
    out = np.empty((stop - start, n_bins.size, codes.size))
    K.simulate_block(key, generator.code, generator.parameter, start, stop, codes, n_bins,
                     prepared.u, prepared.u2, prepared.lnu2, prepared.order_u, prepared.tie_u,
                     K.make_work(prepared.size, int(n_bins.max())), out)
    return out


def _nig_keys(seed: int, size: int, nu: float, generator: Generator):
    cell = f"{int(size)}:{float(nu)!r}"
    return (stream_key(seed, f"cube:nig:uE:{cell}"),
            stream_key(seed, f"cube:nig:eps:{cell}:{generator.name}"))


def _cell_replicates(kind: str, cell: dict, *, codes, n_bins, n_mc, seed, chunks, prepared):
    """Lazy ``(n_mc, n_bins, statistic)`` simulated values of one cell."""
    generator = get_generator(cell["generator"])
    if kind == "nig":
        key_u, key_e = _nig_keys(seed, cell["size"], cell["nu"], generator)
        return blocks_along_replicate(_nig_block, None, n_mc, chunks, (n_bins.size, codes.size),
                                      codes, n_bins, int(cell["size"]), float(cell["nu"]),
                                      generator, key_u, key_e, name="n_mc")
    key = stream_key(seed, f"reference:{generator.name}")  # as xuqcal.simulate()
    return blocks_along_replicate(_dataset_block, prepared[cell["dataset"]], n_mc, chunks,
                                  (n_bins.size, codes.size), codes, n_bins, generator, key,
                                  name="n_mc")


def _summarize_named(replicates: np.ndarray, names: Sequence[str]):
    """:func:`~xuqcal.core.summaries.summarize_replicates` of a block whose last two axes are
    ``statistic`` and ``replicate``, naming a statistic that is NaN or infinite on some
    synthetic sets (cc of a data set whose uE are all equal, a statistic with units beyond the
    float64 range) with an :class:`UndefinedStatisticWarning`."""
    out = summarize_replicates(replicates)
    bad = ~np.isfinite(replicates).all(axis=-1)
    if bad.ndim and bad.shape[-1] == len(names) and bad.any():
        for j, name in enumerate(names):
            cells = int(bad[..., j].sum())
            if cells:
                warnings.warn(f"{name} reference is undefined in {cells} cell(s) of the cube: "
                              "the statistic is NaN or infinite on some synthetic sets (e.g. "
                              "cc when uE is constant, a statistic with units beyond the "
                              "float64 range)", UndefinedStatisticWarning,
                              stacklevel=user_stacklevel())
    return out


def _summary_variables(replicates: xr.DataArray, keep_replicates: bool,
                       names: Sequence[str] | None = None) -> dict:
    """``mean se q025 q975`` over the grid from values with a ``replicate`` dimension (the
    statistics ``names`` along ``statistic`` are named when undefined)."""
    function = summarize_replicates if names is None else functools.partial(_summarize_named,
                                                                  names=names)
    out = xr.apply_ufunc(function, replicates.chunk({"replicate": -1, "statistic": -1}),
                         input_core_dims=[["replicate"]], output_core_dims=[[], [], [], []],
                         dask="parallelized", output_dtypes=[np.float64] * 4)
    variables = {name: value.assign_attrs(long_name=_LONG_NAMES[name])
                 for name, value in zip(SUMMARIES, out, strict=True)}
    if keep_replicates:
        variables["replicates"] = replicates.assign_attrs(long_name=_LONG_NAMES["replicates"])
    return variables


# ------------------------------------------------------------------------------- the builders


def _grid_nig(statistics, size, n_bins, nu, generators):
    stats = get_statistics(statistics)
    sizes = int_list(size, "size", 2)
    bins = int_list(n_bins, "n_bins", 1)
    nus = [check_nu(v, allow_inf=False) for v in float_list(nu, "nu", above=0.0)]
    gens = [g.name for g in check_generators(as_list(generators, "generators"), "generators")]
    for m in sizes:
        check_n_bins(m, max(bins), variable=f"size={m}")
    return stats, {"size": sizes, "nu": nus, "generator": gens}, bins


def _provenance(kind: str, stats, cells: dict, n_bins, n_mc, seed) -> dict:
    grid = {**cells, "n_bins": list(n_bins), "statistic": [s.key for s in stats]}
    return {
        "kind": kind,
        "title": "xuqcal sensitivity cube of simulated statistics",
        "n_mc": int(n_mc),
        "seed": int(seed),
        "grid": json.dumps(grid),
        "model": ("NIG: uE^2 ~ InverseGamma(nu/2, nu/2), E = uE * eps, eps ~ generator"
                  if kind == "nig" else "actual uE of each data set, E = uE * eps, eps ~ "
                  "generator"),
        "random_streams": RNG_DESCRIPTION,
    }


def _assemble(kind, stats, cells: dict, n_bins, n_mc, seed, chunks, keep_replicates, prepared,
              only: Sequence[dict] | None = None) -> xr.Dataset:
    """The lazy cube (or the listed cells only) as a Dataset."""
    codes = codes_of(stats)
    bins = np.asarray(n_bins, dtype=np.int64)
    dims = list(cells)
    combos = only if only is not None else [dict(zip(dims, values, strict=True))
                                            for values in itertools.product(*cells.values())]
    pieces = []
    for cell in combos:
        values = _cell_replicates(kind, cell, codes=codes, n_bins=bins, n_mc=n_mc, seed=seed,
                                  chunks=chunks, prepared=prepared)
        array = xr.DataArray(values, dims=("replicate", "n_bins", "statistic"))
        pieces.append(array.expand_dims({d: [cell[d]] for d in dims}))
    replicates = xr.combine_by_coords([p.rename("replicates") for p in pieces],
                                      combine_attrs="drop")["replicates"] if len(pieces) > 1 \
        else pieces[0].rename("replicates")
    replicates = replicates.transpose(*dims, "n_bins", "statistic", "replicate")
    variables = _summary_variables(replicates, keep_replicates, [s.key for s in stats])
    coords = {**statistic_coords(stats), "n_bins": np.asarray(n_bins)}
    if "generator" in cells:
        gens = [g for g in cells["generator"] if g in set(replicates.generator.values.tolist())]
        coords.update(generator_coords(gens))
    cube = xr.Dataset(variables, coords=coords)
    cube = cube.reindex({d: cells[d] for d in dims if only is None})
    return attach(cube, _provenance(kind, stats, cells, n_bins, n_mc, seed))


def build(
    statistics: str | Iterable[str] = ("ence", "zmse"),
    *,
    size: Iterable[int],
    n_bins: Iterable[int],
    nu: Iterable[float],
    generators: str | Iterable[str] = defaults.GENERATORS,
    n_mc: int = defaults.N_MC_CUBE,
    seed: int = defaults.SEED,
    keep_replicates: bool = False,
    chunks: int | Sequence[int] | None = None,
    path: str | Path | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
) -> xr.Dataset:
    """A cube of simulated statistics on synthetic NIG data (METHODS §7, size/bins cube).

    Parameters
    ----------
    statistics : str or iterable of str
        Statistic keys of the registry.
    size, n_bins, nu : iterables
        Grid of data set sizes M, numbers of bins N and shapes ν of ``uE² ~ IG(ν/2, ν/2)``.
    generators : str or iterable of str
        Generative distributions D of the errors.
    n_mc : int
        Synthetic data sets per cell.
    seed : int
        Seed: replicate r of cell (M, ν, D) is fixed by ``(seed, M, ν, D, r)``.
    keep_replicates : bool
        Keep the simulated values (``replicates`` with a ``replicate`` dimension).
    chunks : int or sequence of int, optional
        Replicates per Dask task (default 1000).
    path : str or Path, optional
        Compute now, cell by cell, checkpointing each cell to ``<path>.partial/`` and writing
        the cube to ``path`` (NetCDF-4, atomic); an interrupted build called again with the
        same arguments resumes. Without ``path`` the cube is returned lazy. The folder of
        ``path`` must exist and be writable, and ``path`` must not be a folder (checked before
        any computation). The build holds the lock of ``path`` (as :func:`extend`): another
        build or extend of the same file meanwhile is refused.
    overwrite : bool
        Allow replacing an existing file at ``path``.
    progress : bool, optional
        With ``path``: name each cell on stderr and show Dask's progress bar while it is
        computed (:func:`distributed.progress` with a ``dask.distributed`` client). Default:
        the option ``progress`` (:func:`xuqcal.set_options`).

    Returns
    -------
    xarray.Dataset
        ``mean``, ``se``, ``q025``, ``q975`` over (``size``, ``nu``, ``generator``,
        ``n_bins``, ``statistic``).

    Examples
    --------
    >>> cube = build(["ence"], size=[400, 800], n_bins=[5, 10], nu=[6], n_mc=50)
    >>> dict(cube["mean"].sizes)
    {'size': 2, 'nu': 1, 'generator': 2, 'n_bins': 2, 'statistic': 1}
    """
    stats, cells, bins = _grid_nig(statistics, size, n_bins, nu, generators)
    n_mc = check_count(n_mc, "n_mc")
    seed = check_seed(seed)
    check_chunks(chunks)
    check_bool(keep_replicates, "keep_replicates")
    return _build("nig", stats, cells, bins, n_mc=n_mc, seed=seed, chunks=chunks,
                  keep_replicates=keep_replicates, prepared=None, path=path,
                  overwrite=overwrite, progress=progress)


def _slices_of(ds: xr.Dataset, uE: str | None) -> dict[str, xr.Dataset] | None:
    """The slices of a data set with extra dimensions (several sets in one, see
    :mod:`xuqcal.analysis.slices`), each without its absent points (E and uE both NaN), named
    by their labels along ``dataset`` (``"model='GCN', seed=3"`` for other dimensions); None
    for a one-set data set."""
    E_name, uE_name = io.roles(ds, uE=uE)
    dims = extra_dims(ds, E_name, uE_name)
    if not dims:
        return None
    out = {}
    for unit, positions in slice_positions(ds, dims)[1]:
        one = present_points(ds.isel(positions), unit, E_name, uE_name)
        name = str(unit[DATASET_DIM]) if tuple(dims) == (DATASET_DIM,) else slice_label(unit)
        out[name] = one.drop_vars([d for d in dims if d in one.coords])
    return out


def _datasets(data, uE: str | None = None) -> dict[str, xr.Dataset]:
    if isinstance(data, xr.Dataset):
        sliced = _slices_of(data, uE)
        if sliced is not None:
            return sliced
        return {str(data.attrs.get("name", "dataset")): data}
    if hasattr(data, "children") and hasattr(data, "to_dataset"):  # xarray.DataTree
        return {str(name): node.to_dataset() for name, node in data.children.items()}
    if isinstance(data, Mapping):
        out = {str(k): v for k, v in data.items()}
        if not out:
            raise ValueError("datasets: the mapping of data sets is empty (at least one is "
                             "needed)")
        for name, value in out.items():
            if not isinstance(value, xr.Dataset):
                raise ValueError(f"datasets: {name!r} is a {type(value).__name__}, not an "
                                 "xarray.Dataset")
        return out
    raise ValueError("datasets: expected a Dataset, a mapping name -> Dataset or a DataTree")


def build_from(
    data,
    statistics: str | Iterable[str] = ("cc", "ence", "zmse", "zms"),
    *,
    generators: str | Iterable[str] = defaults.GENERATORS,
    n_bins: Iterable[int] = (defaults.N_BINS,),
    n_mc: int = defaults.N_MC,
    seed: int = defaults.SEED,
    keep_replicates: bool = False,
    chunks: int | Sequence[int] | None = None,
    path: str | Path | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
    uE: str | None = None,
) -> xr.Dataset:
    """A cube of simulated statistics for the actual uncertainties of real data sets.

    ``data`` is a Dataset, a mapping ``name -> Dataset`` or a ``DataTree`` (one child per data
    set); the cube has a ``dataset`` dimension. A Dataset with extra dimensions (sets stacked
    along ``dataset``, or ``model × seed``, ...) gives one cell per slice, on its present points
    (:mod:`xuqcal.analysis.slices`), labelled along ``dataset`` by the slice's label (its
    ``dataset`` label, else e.g. ``"model='GCN', seed=3"``). For one ``n_bins`` value, a cell equals
    :func:`xuqcal.simulate` with the same seed (same random streams). ``uE`` names the
    uncertainty variable (default: the variable recorded with that role, else ``"uE"``, see
    :func:`xuqcal.io.roles`); the other parameters are those of :func:`build`.

    Examples
    --------
    >>> import xuqcal
    >>> sets = {"a": xuqcal.synthetic.nig(500, nu=6, seed=1),
    ...         "b": xuqcal.synthetic.nig(900, nu=3, seed=2)}
    >>> cube = build_from(sets, ["ence"], generators=["normal", "t4"], n_bins=[5, 10], n_mc=50)
    >>> cube["mean"].dims
    ('dataset', 'generator', 'n_bins', 'statistic')
    """
    stats = get_statistics(statistics)
    sets = _datasets(data, uE)
    bins = int_list(n_bins, "n_bins", 1)
    gens = [g.name for g in check_generators(as_list(generators, "generators"), "generators")]
    n_mc = check_count(n_mc, "n_mc")
    seed = check_seed(seed)
    check_chunks(chunks)
    check_bool(keep_replicates, "keep_replicates")
    prepared = {}
    for name, ds in sets.items():
        E_name, uE_name = io.roles(ds, uE=uE)
        ds = io.validate_dataset(ds, E=E_name, uE=uE_name, features=())
        m = ds.sizes["sample"]
        check_n_bins(m, max(bins), variable=f"dataset {name!r}")
        uncertainties = np.asarray(ds[uE_name].values)
        prepared[name] = PreparedData.from_arrays(np.zeros(m), uncertainties,
                                                  n_bins=max(bins))
        units = [st.key for st in stats if st.key in ("mse", "rmse", "mv", "rmv", "uce")]
        if prepared[name].scale_exponent and units:  # the cube kernels do not scale back
            raise ValueError(
                f"statistics: {', '.join(units)} of dataset {name!r} (uE of order "
                f"2^{prepared[name].scale_exponent}) would overflow or lose precision in the "
                "cube; use the scale-free statistics or rescale uE")
    cells = {"dataset": list(sets), "generator": gens}
    return _build("datasets", stats, cells, bins, n_mc=n_mc, seed=seed, chunks=chunks,
                  keep_replicates=keep_replicates, prepared=prepared, path=path,
                  overwrite=overwrite, progress=progress)


# --------------------------------------------------------------- computing with checkpoints


def _partial_dir(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


def _extend_dir(path: Path) -> Path:
    return path.with_name(path.name + ".extend.partial")


def _cell_name(cell: dict) -> str:
    text = "_".join(f"{k}-{v}" for k, v in cell.items())
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text) + ".nc"


def _build(kind, stats, cells, bins, *, n_mc, seed, chunks, keep_replicates, prepared, path,
           overwrite, progress) -> xr.Dataset:
    if path is None:
        return _assemble(kind, stats, cells, bins, n_mc, seed, chunks, keep_replicates,
                         prepared)
    path = _outputs.check_output_file(path, overwrite=overwrite, option="path")
    with _locks.locked(path, "xuqcal cube build"):  # one writer of path (and its checkpoints)
        _outputs.check_output_file(path, overwrite=overwrite, option="path")  # written meanwhile?
        partial = _partial_dir(path)
        _check_checkpoint_folder(partial, "path")
        expected = _provenance(kind, stats, cells, bins, n_mc, seed)
        cube = _compute_checkpointed(kind, stats, cells, bins, n_mc=n_mc, seed=seed,
                                     chunks=chunks, keep_replicates=keep_replicates,
                                     prepared=prepared, partial=partial, expected=expected,
                                     progress=progress)
        attach(cube, expected)
        save(cube, path, overwrite=overwrite)
        _remove_checkpoints(partial, cells)
    return cube


def _check_checkpoint_folder(partial: Path, option: str) -> None:
    """Refuse a checkpoint path that exists but is not a folder (before any computation)."""
    if os.path.lexists(partial) and not partial.is_dir():
        raise FileExistsError(f"{option}: {partial}, where the checkpoints of each cell go, "
                              "exists and is not a folder; move it away")


def _remove_checkpoints(partial: Path, cells: dict) -> None:
    """Remove the checkpoints of ``cells`` (and temporary files of interrupted writes), then
    the folder if nothing else is in it: files that xuqcal did not write there are kept."""
    dims = list(cells)
    for values in itertools.product(*cells.values()):
        (partial / _cell_name(dict(zip(dims, values, strict=True)))).unlink(missing_ok=True)
    for stale in partial.glob(".*.tmp"):
        stale.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        partial.rmdir()


def checkpoint_count(path: str | Path, kind: str = "build") -> int:
    """How many cells of an interrupted :func:`build` (``kind="build"``) or :func:`extend`
    (``kind="extend"``) of ``path`` are saved, ready for the rerun to resume from.

    Examples
    --------
    >>> checkpoint_count("no/such/cube.nc")
    0
    """
    path = Path(path)
    partial = _partial_dir(path) if kind == "build" else _extend_dir(path)
    if not partial.is_dir():
        return 0
    return sum(1 for f in partial.iterdir() if f.suffix == ".nc" and not f.name.startswith("."))


def _compute_checkpointed(kind, stats, cells, bins, *, n_mc, seed, chunks, keep_replicates,
                          prepared, partial: Path, expected: dict, progress) -> xr.Dataset:
    """Every cell of the grid ``cells``, each computed once and checkpointed to ``partial``
    (cells found there are loaded instead), combined into one Dataset."""
    created = not partial.exists()
    partial.mkdir(exist_ok=True)
    try:
        return _compute_cells(kind, stats, cells, bins, n_mc=n_mc, seed=seed, chunks=chunks,
                              keep_replicates=keep_replicates, prepared=prepared,
                              partial=partial, expected=expected, progress=progress)
    except BaseException:
        if created:  # nothing saved (e.g. a refused argument): leave no empty folder behind
            with contextlib.suppress(OSError):
                partial.rmdir()
        raise


def _compute_cells(kind, stats, cells, bins, *, n_mc, seed, chunks, keep_replicates,
                   prepared, partial: Path, expected: dict, progress) -> xr.Dataset:
    dims = list(cells)
    combos = [dict(zip(dims, values, strict=True))
              for values in itertools.product(*cells.values())]
    show = _progress.enabled(progress)
    done = []
    for i, cell in enumerate(combos):
        file = partial / _cell_name(cell)
        if file.exists():
            piece = _load_checkpoint(file, expected, keep_replicates)
            if show:
                print(f"cell {i + 1}/{len(combos)} {cell}: resumed from checkpoint",
                      file=sys.stderr, flush=True)
        else:
            if show:
                print(f"cell {i + 1}/{len(combos)} {cell}", file=sys.stderr, flush=True)
            piece = _compute_cell(kind, stats, cells, bins, n_mc, seed, chunks,
                                  keep_replicates, prepared, show, cell)
            io.to_netcdf(piece, file, overwrite=True)
        done.append(piece)
    cube = xr.combine_by_coords(done, combine_attrs="override")
    cube = cube.reindex({d: cells[d] for d in dims})
    return cube.transpose(*dims, "n_bins", "statistic", ...)


def _compute_cell(kind, stats, cells, bins, n_mc, seed, chunks, keep_replicates, prepared,
                  progress, cell) -> xr.Dataset:
    """One cell of the cube, computed (the unit of checkpointing), with Dask's progress bar
    when ``progress``."""
    lazy = _assemble(kind, stats, cells, bins, n_mc, seed, chunks, keep_replicates, prepared,
                     only=[cell])
    (computed,) = _progress.compute(lazy, progress=progress)
    return computed


def _load_checkpoint(file: Path, expected: dict, keep_replicates: bool) -> xr.Dataset:
    try:
        with xr.open_dataset(file, engine="netcdf4") as piece:
            piece = _load_checked(piece, f"checkpoint {file}",
                                  remedy="remove it to compute that cell again")
    except DamagedInputError:  # one line naming the file and the variable
        raise
    except (OSError, ValueError, RuntimeError) as err:
        raise ValueError(f"checkpoint {file} cannot be read ({err}); remove it to compute "
                         "that cell again") from None
    for key in ("kind", "n_mc", "seed", "grid", "random_streams"):
        if str(piece.attrs.get(key)) != str(expected[key]):
            raise ValueError(
                f"checkpoint {file} was made with {key}={piece.attrs.get(key)!r}, not "
                f"{expected[key]!r}; remove {file.parent} to start the build afresh"
            )
    if keep_replicates and "replicates" not in piece:
        raise ValueError(f"checkpoint {file} has no replicates; remove {file.parent} to "
                         "start afresh with keep_replicates=True")
    return piece


# ------------------------------------------------------------------------------- persistence


def save(cube: xr.Dataset, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write a cube to NetCDF-4 (atomic; refuses to replace a file unless ``overwrite``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> cube = build(["ence"], size=[400], n_bins=[5], nu=[6], generators="normal", n_mc=20)
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> save(cube, folder / "cube.nc").name
    'cube.nc'
    """
    # encodings of a cube read from a file (e.g. fixed-width strings '<U6') would truncate new
    # coordinate values such as an added generator 'uniform'
    cube = cube.drop_encoding()
    if "created" not in cube.attrs:
        attach(cube)
    return io.to_netcdf(cube.compute(), path, overwrite=overwrite)


def open(path: str | Path) -> xr.Dataset:
    """Read a cube written by :func:`save` (loaded into memory, file closed).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> cube = build(["ence"], size=[400], n_bins=[5], nu=[6], generators="normal", n_mc=20)
    >>> path = save(cube, pathlib.Path(tempfile.mkdtemp()) / "cube.nc")
    >>> float(open(path)["mean"].sum()) == float(cube["mean"].sum())
    True

    A file that is missing, empty, truncated, corrupted, not NetCDF, or a NetCDF file that is
    not a cube raises a ``FileNotFoundError``, ``IsADirectoryError`` or ``ValueError`` that
    names the file and says what it is not.
    """
    cube = read_netcdf(path, "an xuqcal sensitivity cube (NetCDF)")
    _check_cube(cube, path)
    return cube


def _check_cube(cube: xr.Dataset, path) -> None:
    """Refuse a NetCDF file that is not a complete cube (provenance, grid and variables)."""
    where = f"{os.fspath(path)} is not an xuqcal sensitivity cube"
    if cube.attrs.get("title") != "xuqcal sensitivity cube of simulated statistics":
        raise ValueError(f"{where} (no cube provenance attributes); build one with "
                         "xuqcal cube build")
    missing = [k for k in ("kind", "grid", "n_mc", "seed") if k not in cube.attrs]
    missing += [v for v in SUMMARIES if v not in cube.data_vars]
    if missing:
        raise ValueError(f"{where}: it has no {', '.join(missing)}")
    try:
        grid = json.loads(cube.attrs["grid"])
        if not isinstance(grid, dict) or not all(isinstance(v, list) for v in grid.values()):
            raise TypeError("not a mapping of lists")
    except (ValueError, TypeError) as err:
        raise ValueError(f"{where}: its grid attribute is not valid ({err})") from None
    if cube.attrs["kind"] not in ("nig", "datasets"):
        raise ValueError(f"{where}: unknown kind {cube.attrs['kind']!r}")
    absent = [d for d in grid if d != "statistic" and d not in cube.dims]
    if absent:
        raise ValueError(f"{where}: its grid names the dimensions {', '.join(absent)}, which "
                         "the file does not have")
    needed = (["size", "nu", "generator", "n_bins", "statistic"] if cube.attrs["kind"] == "nig"
              else ["dataset", "generator", "n_bins", "statistic"])
    lacking = [d for d in needed if d not in grid]
    if lacking:
        raise ValueError(f"{where}: its grid has no {', '.join(lacking)}")
    for key, low in (("n_mc", 2), ("seed", 0)):
        value = cube.attrs[key]
        if isinstance(value, np.ndarray) and value.size == 1:
            value = value.item()
        if (isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer)
                or value < low):
            shown = value.item() if isinstance(value, np.generic) else value
            raise ValueError(f"{where}: its {key} attribute {shown!r} is not an integer >= "
                             f"{low}")
    try:
        get_statistics(grid["statistic"])
    except (ValueError, TypeError) as err:
        raise ValueError(f"{where}: its grid lists statistics that xuqcal does not know "
                         f"({err})") from None
    for d in needed:
        if d in cube.coords and d != "statistic" and \
                [str(v) for v in cube[d].values.tolist()] != [str(v) for v in grid[d]]:
            raise ValueError(f"{where}: its {d} coordinate does not match its grid attribute")


def extend(path: str | Path, *, data=None, progress: bool | None = None,
           **new_coords) -> xr.Dataset:
    """Add coordinate values along one dimension of a saved cube, computing only new cells.

    For example ``extend("cube.nc", size=[20000])`` or ``extend("cube.nc", n_bins=[60])``. The
    new cells use the cube's own statistics, n_mc and seed, so the result equals a cube built
    with the extended grid from the start. A ``datasets`` cube needs the data sets again
    (``data=``) to extend along ``generator`` or ``n_bins``, or the new ones along
    ``dataset``. The file is replaced atomically.

    Every new cell is checkpointed to ``<path>.extend.partial/``: an interrupted extend, called
    again with the same arguments, computes only the cells that are missing there (the result
    is the same as an uninterrupted one); the folder is removed on success.

    One writer at a time: the extend holds the lock of ``path`` (``.<name>.lock`` beside it,
    :func:`xuqcal.io.locks.locked`) from reading the cube to replacing it, and another extend
    or build of the same file meanwhile is refused at once with a
    :class:`~xuqcal.io.locks.FileInUseError` naming the process that holds it (no lost update,
    no wait).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cube.nc"
    >>> _ = build(["ence"], size=[400], n_bins=[5], nu=[6], generators="normal", n_mc=20,
    ...           path=path)
    >>> extend(path, nu=[12])["nu"].values.tolist()
    [6.0, 12.0]
    """
    if len(new_coords) != 1:
        raise ValueError("extend: give new values for exactly one dimension, e.g. size=[20000]")
    (dim, values), = new_coords.items()
    path = Path(path)
    # one writer at a time: a second extend (or build) of this cube would read it before this
    # one replaces it, and its rename would drop this one's cells (a lost update)
    with _locks.locked(path, "xuqcal cube extend"):
        return _extend(path, data, progress, dim, values)


def _extend(path: Path, data, progress, dim: str, values) -> xr.Dataset:
    """:func:`extend` under the lock of ``path``: read, add the new cells, replace."""
    cube = open(path)
    if cube.attrs.get("random_streams") != RNG_DESCRIPTION:
        raise ValueError(f"{path} was built with other random streams "
                         f"({cube.attrs.get('random_streams')!r}); this xuqcal draws "
                         f"{RNG_DESCRIPTION!r}, and the new cells would not reproduce with "
                         "the old ones: build the cube again")
    grid = json.loads(cube.attrs["grid"])
    if dim not in grid or dim == "statistic":
        raise ValueError(f"{dim}: not a dimension of the cube {path}, which extends along "
                         f"{', '.join(k for k in grid if k != 'statistic')}")
    existing = grid[dim]
    values = as_list(values, dim)
    if dim == "generator":
        values = [get_generator(v).name for v in values]
    clash = [v for v in values if v in existing]
    if clash:
        raise ValueError(f"{dim}: the cube already has {dim} = "
                         f"{', '.join(map(str, clash))} (extend already has these values); "
                         "give only new values")
    kind = cube.attrs["kind"]
    keep = "replicates" in cube
    stats = get_statistics(grid["statistic"])
    if kind == "nig":
        cells = {d: grid[d] for d in ("size", "nu", "generator")}
        bins = grid["n_bins"]
        new_cells = dict(cells)
        new_bins = bins
        if dim == "n_bins":
            new_bins = values
        else:
            new_cells[dim] = values
        _grid_nig(grid["statistic"], new_cells["size"], new_bins, new_cells["nu"],
                  new_cells["generator"])
        prepared = None
    else:
        if data is None:
            raise ValueError(f"data: {path} is a cube of real data sets (build_from): "
                             "extend needs the data sets again, data=...; from the command "
                             "line, only a cube of xuqcal cube build can be extended")
        sets = _datasets(data)
        cells = {"dataset": grid["dataset"], "generator": grid["generator"]}
        bins = grid["n_bins"]
        new_cells = dict(cells)
        new_bins = values if dim == "n_bins" else bins
        if dim != "n_bins":
            new_cells[dim] = values
        prepared = {}
        for name in new_cells["dataset"]:
            if name not in sets:
                raise ValueError(f"extend: data set {name!r} is missing from data=")
            m = sets[name].sizes["sample"]
            check_n_bins(m, max(new_bins), variable=f"dataset {name!r}")
            uE_name = io.roles(sets[name])[1]
            prepared[name] = PreparedData.from_arrays(np.zeros(m), sets[name][uE_name].values,
                                                      n_bins=max(new_bins))
    _outputs.check_folder_writable(path.parent, "path")
    _outputs.check_replaceable(path, "path")
    _check_checkpoint_folder(_extend_dir(path), "path")
    n_mc, seed = int(cube.attrs["n_mc"]), int(cube.attrs["seed"])
    addition = _compute_checkpointed(
        kind, stats, new_cells, new_bins, n_mc=n_mc, seed=seed, chunks=None,
        keep_replicates=keep, prepared=prepared, partial=_extend_dir(path),
        expected=_provenance(kind, stats, new_cells, new_bins, n_mc, seed), progress=progress)
    merged = xr.concat([cube, addition], dim=dim, data_vars="all", coords="different",
                       compat="equals", join="outer", combine_attrs="override")
    full = {**cells, "n_bins": bins}
    full[dim] = existing + values
    merged = merged.reindex({d: full[d] for d in cells} | {"n_bins": full["n_bins"]})
    merged.attrs = dict(cube.attrs)
    merged.attrs["grid"] = json.dumps({**grid, dim: existing + values})
    merged.attrs["extended"] = created()
    save(merged, path, overwrite=True)
    _remove_checkpoints(_extend_dir(path), new_cells)
    return merged


# ----------------------------------------------------------------------------------- queries


def fit_sqrt(cube: xr.Dataset, *, over: Sequence[str] | None = None) -> xr.Dataset:
    """Fit ``mean = a + α sqrt(N / M)`` per statistic × generator by weighted least squares.

    All cells along ``size``, ``n_bins`` and ``nu`` (or the dimensions ``over``) enter one
    fit, weighted by ``1 / se²``. Standard errors are scaled by ``sqrt(χ²/dof)`` when that is
    above 1 (the model then misses part of the variation).

    Returns
    -------
    xarray.Dataset
        ``a``, ``alpha``, ``a_se``, ``alpha_se``, ``chi2_dof`` over (``statistic``,
        ``generator``).

    Examples
    --------
    >>> cube = build(["ence"], size=[400, 1600], n_bins=[4, 16], nu=[6], n_mc=200)
    >>> fit = fit_sqrt(cube)
    >>> fit["alpha"].dims
    ('statistic', 'generator')
    """
    if not isinstance(cube, xr.Dataset) or "size" not in cube.dims:
        raise ValueError("cube: expected a cube from xuqcal.studies.cube.build (with a size "
                         f"dimension), got {type(cube).__name__}")
    _check_cube_grid(cube, ("size", "n_bins"))
    if over is None:
        over = [d for d in ("size", "n_bins", "nu") if d in cube.dims]
    else:
        over = as_list(over, "over")
        bad = [d for d in over if d not in ("size", "n_bins", "nu") or d not in cube.dims]
        if bad or not {"size", "n_bins"} <= set(over):
            raise ValueError(f"over: expected dimensions of the cube among size, n_bins, nu, "
                             f"including size and n_bins, got {over}")
    x = np.sqrt(cube["n_bins"] / cube["size"])
    if np.unique(x.values).size < 2:
        raise ValueError("cube: fitting mean = a + alpha sqrt(n_bins / size) needs cells with "
                         "at least 2 values of sqrt(n_bins / size); the cube has one (build it "
                         "with several sizes or numbers of bins)")
    keep = [d for d in cube["mean"].dims if d not in over]
    mean = cube["mean"].transpose(*keep, ...)
    se = cube["se"].transpose(*keep, ...)
    xs = x.broadcast_like(cube["mean"]).transpose(*keep, ...)
    shape = [cube.sizes[d] for d in keep]
    results = {name: np.empty(shape) for name in ("a", "alpha", "a_se", "alpha_se",
                                                  "chi2_dof")}
    for index in np.ndindex(*shape):
        y = mean.values[index].ravel()
        s = se.values[index].ravel()
        xv = xs.values[index].ravel()
        w = 1.0 / s**2
        design = np.stack([np.ones_like(xv), xv], axis=1)
        normal = design.T @ (design * w[:, None])
        cov = np.linalg.inv(normal)
        coef = cov @ (design.T @ (w * y))
        dof = max(y.size - 2, 1)
        chi2 = float(np.sum(w * (y - design @ coef) ** 2) / dof)
        scale = math.sqrt(max(chi2, 1.0))
        results["a"][index], results["alpha"][index] = coef
        results["a_se"][index] = scale * math.sqrt(cov[0, 0])
        results["alpha_se"][index] = scale * math.sqrt(cov[1, 1])
        results["chi2_dof"][index] = chi2
    coords = {d: cube[d] for d in keep}
    out = xr.Dataset({name: (keep, value) for name, value in results.items()}, coords=coords)
    out["a"].attrs["long_name"] = "intercept a of mean = a + alpha sqrt(N / M)"
    out["alpha"].attrs["long_name"] = "slope alpha of mean = a + alpha sqrt(N / M)"
    out = out.transpose("statistic", ...)
    return attach(out, {"model": "mean = a + alpha * sqrt(n_bins / size), weights 1 / se^2",
                        "fitted_over": ", ".join(over)})


def _check_cube_grid(cube: object, dims: Sequence[str]) -> None:
    """A cube of :func:`build`/:func:`build_from`: ``mean`` and ``se`` over ``dims``."""
    if (not isinstance(cube, xr.Dataset) or not {"mean", "se"} <= set(cube.data_vars)
            or not set(dims) <= set(cube["mean"].dims) | set(cube.coords)):
        raise ValueError(f"cube: expected a cube from xuqcal.studies.cube.build (mean and se over "
                         f"{', '.join(dims)}), got {type(cube).__name__}"
                         + (f" with variables {', '.join(map(str, cube.data_vars))}"
                            if isinstance(cube, xr.Dataset) else ""))


def reference_for(cube: xr.Dataset, *, size: int, n_bins: int, generator: str,
                  nu: float | None = None) -> xr.Dataset:
    """Simulated reference for a data set of ``size`` points and ``n_bins`` bins, interpolated
    linearly in ``x = sqrt(N / M)`` between the cube's cells (cells with equal x averaged).

    Examples
    --------
    >>> cube = build(["ence"], size=[400, 1600], n_bins=[4, 16], nu=[6], n_mc=200)
    >>> ref = reference_for(cube, size=800, n_bins=8, generator="normal")
    >>> ref["mean"].dims
    ('statistic',)
    """
    _check_cube_grid(cube, ("generator", "size", "n_bins"))
    size = check_count(size, "size", 1)
    n_bins = check_count(n_bins, "n_bins", 1)
    name = get_generator(generator).name
    if name not in cube["generator"].values.tolist():
        raise ValueError(f"generator: {name} is not in the cube (generators: "
                         f"{', '.join(map(str, cube['generator'].values))}); extend the cube")
    sel = cube.sel(generator=name)
    if "nu" in sel.dims:
        if nu is None:
            if sel.sizes["nu"] > 1:
                raise ValueError("nu: the cube has several nu; choose one with nu=")
            sel = sel.isel(nu=0)
        else:
            nus = sel["nu"].values.tolist()
            if (isinstance(nu, bool) or not isinstance(nu, int | float | np.integer | np.floating)
                    or float(nu) not in nus):
                raise ValueError(f"nu: {nu!r} is not in the cube (nu: "
                                 f"{', '.join(f'{v:g}' for v in nus)}); the reference is not "
                                 "interpolated in nu")
            sel = sel.sel(nu=float(nu))
    x0 = math.sqrt(n_bins / size)
    x = np.sqrt(sel["n_bins"] / sel["size"]).broadcast_like(sel["mean"])
    stacked = xr.Dataset({"x": x, "mean": sel["mean"], "se": sel["se"]}).stack(
        cell=("size", "n_bins")).transpose("statistic", "cell")
    means, ses = [], []
    for k in range(stacked.sizes["statistic"]):
        row = stacked.isel(statistic=k)
        xs, inverse = np.unique(row.x.values, return_inverse=True)
        if not xs[0] <= x0 <= xs[-1]:
            raise ValueError(f"size, n_bins: sqrt(n_bins / size) = {x0:.4g} is outside the "
                             f"cube's range [{xs[0]:.4g}, {xs[-1]:.4g}] (no extrapolation); "
                             "extend the cube")
        mean = np.bincount(inverse, weights=row["mean"].values) / np.bincount(inverse)
        var = np.bincount(inverse, weights=row["se"].values ** 2) / np.bincount(inverse) ** 2
        means.append(np.interp(x0, xs, mean))
        ses.append(math.sqrt(np.interp(x0, xs, var)))
    out = xr.Dataset({"mean": ("statistic", means), "se": ("statistic", ses)},
                     coords={"statistic": cube["statistic"]})
    out.attrs.update(size=int(size), n_bins=int(n_bins), generator=generator,
                     method="linear interpolation in sqrt(n_bins / size)")
    return out


def generator_sensitivity(cube: xr.Dataset, baseline: str = "normal") -> xr.Dataset:
    """Difference of each generator's simulated mean from ``baseline``'s, with the combined
    uncertainty ``sqrt(U_1² + U_2²)``, ``U = 2 se``: the rule of the validation workflow
    (:func:`xuqcal.core.summaries.differ_beyond_uncertainty`).

    Examples
    --------
    >>> cube = build(["ence"], size=[400], n_bins=[5], nu=[6], n_mc=200)
    >>> sens = generator_sensitivity(cube)
    >>> sens["sensitive"].dims[-1]
    'generator'
    """
    base = cube.sel(generator=get_generator(baseline).name)
    difference = cube["mean"] - base["mean"]
    combined = np.hypot(U_REF_FACTOR * cube["se"], U_REF_FACTOR * base["se"])
    sensitive = xr.apply_ufunc(differ_beyond_uncertainty, cube["mean"], cube["se"],
                               base["mean"], base["se"], dask="allowed")
    out = xr.Dataset({
        "difference": difference.assign_attrs(long_name=f"mean minus the {baseline} mean"),
        "combined_uncertainty": combined.assign_attrs(long_name="sqrt(U_1^2 + U_2^2), U = 2 se"),
        "sensitive": sensitive.assign_attrs(
            long_name="the difference exceeds the combined uncertainty"),
    })
    return out.transpose(..., "generator").assign_attrs(baseline=baseline)
