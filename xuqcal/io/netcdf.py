"""NetCDF files: :func:`to_netcdf` (atomic writes), :func:`open_dataset` (a checked input
dataset, from a NetCDF file or a Zarr store, in memory or lazily in chunks) and the opening of
any NetCDF file written by xuqcal with clear errors."""

from __future__ import annotations

import contextlib
import io as io_module
import os
import pathlib
import stat
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from xuqcal.io import outputs as _outputs

__all__ = ["ZARR_MARKERS", "DamagedInputError", "is_zarr_store", "open_dataset", "read_netcdf",
           "to_netcdf", "to_netcdf_set", "zarr_available"]

PathLike = str | os.PathLike[str]

#: Files that mark a folder as a Zarr store (Zarr format 2: .zgroup ...; format 3: zarr.json).
ZARR_MARKERS = (".zgroup", ".zarray", ".zattrs", ".zmetadata", "zarr.json")


def is_zarr_store(path: PathLike) -> bool:
    """Whether ``path`` is a folder that looks like a Zarr store: named ``*.zarr`` or holding
    Zarr metadata (:data:`ZARR_MARKERS`).

    Examples
    --------
    >>> is_zarr_store("no/such/store.zarr"), is_zarr_store(".")
    (False, False)
    """
    folder = pathlib.Path(path)
    if not folder.is_dir():
        return False
    return folder.suffix.lower() == ".zarr" or any((folder / name).exists()
                                                  for name in ZARR_MARKERS)


def _check_input_file(path: PathLike, what: str, *, pipe: bool = False) -> None:
    """Refuse a missing path, a folder, or a file that is not a regular file (a device, a
    socket; a named pipe unless ``pipe``) given as an input file, and one that cannot be read.
    """
    shown = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{shown}: no such file (expected {what})")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{shown} is a folder, not {what}")
    mode = os.stat(path).st_mode
    kinds = {stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device",
             stat.S_ISSOCK: "a socket", stat.S_ISFIFO: "a named pipe"}
    for test, kind in kinds.items():
        if test(mode) and not (pipe and test is stat.S_ISFIFO):
            raise ValueError(f"{shown} is {kind}, not a regular file; expected {what}")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"{shown}: permission denied (the file cannot be read); expected "
                              f"{what}")


def _head(path: PathLike | io_module.BytesIO, size: int) -> bytes:
    if isinstance(path, io_module.BytesIO):
        return path.getvalue()[:size]
    with open(path, "rb") as handle:
        return handle.read(size)


#: How a NetCDF-3 or NetCDF-4 (HDF5) file starts.
_SIGNATURES = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n")


def _netcdf_signature(path: PathLike | io_module.BytesIO) -> bool:
    """Whether a file starts like a NetCDF-3 or NetCDF-4 (HDF5) file."""
    return _head(path, 8).startswith(_SIGNATURES)


def _readable_head(path: PathLike, what: str) -> bytes:
    """The first 8 bytes of ``path``, or an error naming the file when it cannot be read (an
    I/O error, permission denied)."""
    try:
        return _head(path, 8)
    except OSError as err:
        raise type(err)(f"{os.fspath(path)} cannot be read: {err.strerror or err} (expected "
                        f"{what})") from None


def _shown_bytes(head: bytes) -> str:
    """The first bytes of a file, for a message: ``00 00 00 00 00 00 00 00``."""
    return " ".join(f"{b:02x}" for b in head[:8]) or "nothing"


def _bad_signature(shown: str, head: bytes, what: str) -> str:
    """The message for a file that does not start like a NetCDF file."""
    return (f"{shown} is not a NetCDF file (NetCDF-3 or NetCDF-4/HDF5): bad signature (it "
            f"starts with {_shown_bytes(head)}, not with CDF or \\x89HDF); expected {what}")


def _binary(path: PathLike | io_module.BytesIO) -> bool:
    """Whether the start of a file holds NUL bytes (no 8-bit text encoding has them)."""
    return b"\x00" in _head(path, 8192)


def read_netcdf(path: PathLike, what: str = "a NetCDF file") -> xr.Dataset:
    """Any NetCDF file (e.g. a cube or a result written by xuqcal), loaded into memory and
    closed, with clear errors for a missing, empty, truncated, corrupted or non-NetCDF file
    (``what`` says what was expected: ``"... is empty, not a NetCDF file"``).

    Examples
    --------
    >>> read_netcdf("no/such/file.nc")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no/such/file.nc: no such file (expected a NetCDF file)
    """
    _check_input_file(path, what)
    shown = os.fspath(path)
    head = _readable_head(path, what)
    if not head:
        raise ValueError(f"{shown} is empty, not {what}")
    signature = head.startswith(_SIGNATURES)
    try:
        with xr.open_dataset(
            path, engine="netcdf4", decode_times=False, decode_timedelta=False
        ) as stored:
            # drop the file's encodings (e.g. fixed-width strings) so that writing an extended
            # dataset back cannot truncate new values
            return _load_checked(stored, shown).drop_encoding()
    except (OSError, ValueError, RuntimeError, KeyError, IndexError) as err:
        if isinstance(err, DamagedInputError):
            raise
        if isinstance(err, PermissionError):
            raise PermissionError(f"{shown}: permission denied") from None
        if not signature:
            raise ValueError(_bad_signature(shown, head, what)) from None
        raise ValueError(f"{shown} cannot be read: it is truncated or corrupted ({err}); "
                         f"expected {what}") from None


# --------------------------------------------------------------------------------------------
# NetCDF
# --------------------------------------------------------------------------------------------


def _netcdf_attr(value: Any, owner: str, key: str) -> Any:
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, str | bytes | int | float | np.integer | np.floating):
        return value
    if isinstance(value, list | tuple | np.ndarray):
        array = np.asarray(value)
        if array.ndim <= 1 and array.dtype.kind in "biufUS":
            return array.astype(np.int8) if array.dtype.kind == "b" else array
    raise ValueError(
        f"{owner}: attribute '{key}' = {value!r} ({type(value).__name__}) cannot be stored in "
        "NetCDF; use a str, int or float (or a 1-D list of them), or remove it"
    )


def to_netcdf(ds: xr.Dataset, path: PathLike, *, overwrite: bool = False) -> pathlib.Path:
    """Write a dataset to a NetCDF-4 file atomically.

    The data are written with the ``netcdf4`` engine to a temporary file in the destination
    folder (``.NAME.xuqcal-PID-HEX.tmp``, removed by a later write when its process is dead),
    ``fsync``-ed, then renamed to ``path``: an interrupted write never leaves a partial file
    and readers see either the old or the new file. Boolean attributes are stored as integers
    (0/1); ``ds`` itself is not modified. Dask-backed data are computed while writing.

    Parameters
    ----------
    ds : xarray.Dataset
        The dataset (any dataset, not only inputs; it is not validated).
    path : str or path-like
        The destination file.
    overwrite : bool, default False
        Replace an existing file. Without it an existing file is left untouched.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    FileExistsError
        If ``path`` exists and ``overwrite`` is false.
    xuqcal.io.locks.FileInUseError
        If another process is writing ``path`` (it holds its lock, :mod:`xuqcal.io.locks`,
        taken here from the check of ``path`` to the rename); the message names that process.
    OSError
        If the write fails (a full disk, an I/O error: netCDF's ``RuntimeError: NetCDF: HDF
        error`` is raised as the ``OSError`` of the disk's errno, e.g. ``ENOSPC``), with one
        line naming ``path`` and the errno; the old file is kept, no temporary is left.
    ValueError
        If an attribute cannot be stored in NetCDF (e.g. ``None`` or a dict).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.io.from_arrays([0.1, -0.2], [0.3, 0.2])
    >>> to_netcdf(ds, "set1.nc", overwrite=True)  # doctest: +SKIP
    PosixPath('set1.nc')
    """
    path = pathlib.Path(path)
    from xuqcal.io.locks import locked

    with locked(path, "xuqcal.to_netcdf"):  # one writer (the check, then the rename)
        refusal = _exists(path)
        out = _prepare(ds, path, overwrite)
        tmp = _write_temporary(out, path)
        try:
            if overwrite:
                try:
                    os.replace(tmp, path)
                    _outputs.fsync_path(path.parent)
                except OSError as err:
                    raise _outputs.write_error(err, path, "the old file is unchanged" if
                                               os.path.lexists(path) else "nothing was left") \
                        from err
            else:
                try:
                    os.link(tmp, path)  # atomic and fails if path appeared in the meantime
                except FileExistsError:
                    raise FileExistsError(refusal) from None
                except OSError:  # no hard links on this file system
                    if os.path.lexists(path):
                        raise FileExistsError(refusal) from None
                    os.replace(tmp, path)
                _outputs.fsync_path(path.parent)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        return path


def to_netcdf_set(datasets: Mapping[PathLike, xr.Dataset], *, overwrite: bool = False,
                  option: str | None = None) -> list[pathlib.Path]:
    """Write several datasets to NetCDF-4 files as one set: each is written to a temporary
    file and ``fsync``-ed, then all are renamed into place together
    (:func:`xuqcal.io.outputs.commit_set`). A failure or an interruption leaves the old files
    (or none), never some new and some old.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.io.from_arrays([0.1, -0.2], [0.3, 0.2])
    >>> to_netcdf_set({"a.nc": ds, "b.nc": ds}, overwrite=True)  # doctest: +SKIP
    [PosixPath('a.nc'), PosixPath('b.nc')]
    """
    from xuqcal.io.locks import locked_set

    paths = [pathlib.Path(p) for p in datasets]
    with locked_set(paths, "xuqcal.to_netcdf_set", option=option):  # in a fixed order
        prepared = {pathlib.Path(p): _prepare(ds, pathlib.Path(p), overwrite)
                    for p, ds in datasets.items()}
        temporaries: dict[pathlib.Path, pathlib.Path] = {}
        try:
            for path, out in prepared.items():
                temporaries[path] = _write_temporary(out, path, option)
            _outputs.commit_set([(tmp, path) for path, tmp in temporaries.items()],
                                overwrite=overwrite, option=option)
        finally:
            for tmp in temporaries.values():
                if os.path.lexists(tmp):
                    os.unlink(tmp)
    return list(prepared)


def _exists(path: pathlib.Path) -> str:
    """The refusal of an existing ``path`` without ``overwrite``."""
    return f"{path} already exists; pass overwrite=True to replace it"


def _prepare(ds: xr.Dataset, path: pathlib.Path, overwrite: bool) -> xr.Dataset:
    """Check ``path`` and return a shallow copy of ``ds`` with NetCDF-safe attributes."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(_exists(path))
    if os.path.lexists(path):  # never destroy a device, a pipe or a read-only file
        _outputs.check_replaceable(path, "path")
    out = ds.copy(deep=False)
    out.attrs = {k: _netcdf_attr(v, "dataset", k) for k, v in ds.attrs.items()}
    for var_name, variable in out.variables.items():
        variable.attrs = {
            k: _netcdf_attr(v, f"variable '{var_name}'", k) for k, v in variable.attrs.items()
        }
    return out


def _with_checksums(out: xr.Dataset) -> xr.Dataset:
    """``out`` (a shallow copy) with every variable's data written with HDF5's Fletcher-32
    checksum filter, so that damaged data are detected when read (:func:`read_netcdf`,
    :func:`open_dataset`) rather than read as other numbers. Values are unchanged.

    HDF5 filters apply to chunked storage only: a scalar (0-d) variable is stored contiguous
    (or compact) and cannot be filtered (netCDF4 would silently ignore the request), so it is
    left without a checksum; a requested ``contiguous`` layout is dropped for the others. For
    a variable-length string variable the checksum covers the chunks of references, not the
    strings themselves (they live in HDF5's global heap, which is not filtered).
    """
    checked = out.copy(deep=False)
    for variable in checked.variables.values():
        if variable.ndim == 0:
            continue
        encoding = {key: value for key, value in variable.encoding.items()
                    if key != "contiguous"}
        variable.encoding = {**encoding, "fletcher32": True}
    return checked


def _write_temporary(out: xr.Dataset, path: pathlib.Path,
                     option: str | None = None) -> pathlib.Path:
    """Write ``out`` to a new temporary file beside ``path`` and ``fsync`` it; returns it. A
    failed write (a full disk, an I/O error: netCDF/HDF5 reports them as ``RuntimeError:
    NetCDF: HDF error``, told apart by :func:`xuqcal.io.outputs.disk_errno`) raises an
    ``OSError`` naming ``path`` and the errno, and leaves no temporary file."""
    directory = path.parent
    if not directory.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the folder {directory} does not exist")
    _outputs.remove_leftovers(directory)  # of a dead run (killed while it wrote)
    tmp = _outputs.temporary_path(path)
    # Reserve the name; os.open applies the umask, so the final file gets the usual permissions.
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except OSError as err:  # e.g. a read-only file system, or /proc
        raise _outputs.write_error(err, path, "nothing was written", option) from err
    try:
        _with_checksums(out).to_netcdf(tmp, mode="w", format="NETCDF4", engine="netcdf4")
        _outputs.fsync_path(tmp)
    except (OSError, RuntimeError) as err:  # e.g. a full disk: name the file and the errno
        # the library's own errno may be a guess (netCDF reports a full disk at creation as
        # EACCES): the state of the disk decides first
        code = _outputs.disk_errno(directory)
        if code is None and isinstance(err, OSError) and isinstance(err.errno, int) and \
                err.errno > 0:
            code = err.errno
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if code is None:
            raise
        kept = "the old file is unchanged" if os.path.lexists(path) else \
            "no partial file was left"
        cause = err if isinstance(err, OSError) and err.errno == code else OSError(
            code, os.strerror(code))
        raise _outputs.write_error(cause, path, kept, option) from err
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _check_chunks(chunks: object) -> None:
    """``chunks`` of :func:`open_dataset`: None, a positive integer, ``"auto"``, or a mapping
    of dimension names to a positive integer, ``-1`` (the whole dimension), ``None``,
    ``"auto"``, a size in bytes (``"100MB"``) or a tuple of positive integers (no file is
    read).

    Examples
    --------
    >>> _check_chunks({"sample": 1000}), _check_chunks("auto")
    (None, None)
    >>> _check_chunks(0)
    Traceback (most recent call last):
    ...
    ValueError: chunks: expected None, an integer >= 1, 'auto', or a mapping such as \
{'sample': 1_000_000} (points per chunk along each dimension), got 0
    """
    from dask.utils import parse_bytes

    def size(value: object) -> bool:
        if isinstance(value, bool):
            return False
        if isinstance(value, int | np.integer):
            return value >= 1 or value == -1
        if isinstance(value, str):
            if value == "auto":
                return True
            try:
                return parse_bytes(value) > 0
            except (ValueError, TypeError):
                return False
        if isinstance(value, tuple):
            return len(value) > 0 and all(isinstance(v, int | np.integer)
                                          and not isinstance(v, bool) and v >= 1 for v in value)
        return value is None

    if chunks is None or (isinstance(chunks, str) and chunks == "auto") or (
            isinstance(chunks, int | np.integer) and not isinstance(chunks, bool)
            and chunks >= 1):
        return
    if isinstance(chunks, dict) and all(isinstance(k, str) for k in chunks):
        wrong = [f"{k}={v!r}" for k, v in chunks.items() if not size(v)]
        if not wrong:
            return
        raise ValueError(f"chunks: expected per dimension a positive integer, -1 (the whole "
                         f"dimension), None, 'auto' or a size in bytes such as '100MB', got "
                         f"{', '.join(wrong)}")
    raise ValueError(f"chunks: expected None, an integer >= 1, 'auto', or a mapping such as "
                     f"{{'sample': 1_000_000}} (points per chunk along each dimension), got "
                     f"{chunks!r}")


class DamagedInputError(ValueError):
    """An input whose stored data cannot be read: a chunk of a Zarr store that cannot be
    decoded (garbage bytes, a wrong size), a NetCDF variable whose checksum does not match.
    The message is one line naming the file, the variable and the points concerned."""


#: The remedy for a damaged input.
_REWRITE = "write it again from the original data (or restore it from a copy)"


def _point_ranges(key: tuple[slice, ...], dims: tuple[str, ...],
                  shape: tuple[int, ...]) -> str:
    """The points a block of an array covers, per dimension, for a message.

    Examples
    --------
    >>> _point_ranges((slice(1, 2), slice(200, 400)), ("model", "sample"), (2, 400))
    'model 1, sample 200 to 399'
    >>> _point_ranges((), (), ())
    'the single value'
    """
    parts = []
    for dim, part, size in zip(dims, key, shape, strict=True):
        start, stop, _ = part.indices(size)
        parts.append(f"{dim} {start}" if stop - start == 1 else
                     f"{dim} {start} to {stop - 1}")
    return ", ".join(parts) or "the single value"


def _first_line(error: BaseException) -> str:
    """The first line of an error's message, or its type when it has none."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _netcdf_read_failure(shown: str, name: str, variable: xr.Variable, error: BaseException,
                         where: str = "", remedy: str = _REWRITE) -> str:
    """The message for a NetCDF variable whose data cannot be read: a checksum that does not
    match (a variable written with the Fletcher-32 filter, as xuqcal writes them) or other
    corrupted data."""
    at = f" ({where})" if where else ""
    if variable.encoding.get("fletcher32"):
        problem = "its checksum does not match (the file is damaged)"
    else:
        problem = f"its data are corrupted ({_first_line(error)}; the file is damaged)"
    return f"{shown}: variable {name} cannot be read{at}: {problem}; {remedy}"


class _CheckedReader:
    """The blocks of one lazily opened variable (a NetCDF file's or a Zarr store's), read
    through xarray's lazy indexing (so values are those xarray reads: decoded, bit for bit),
    with a failed read turned into a :class:`DamagedInputError` naming the file, the variable
    and the points of the block. Dask reads it with :func:`dask.array.from_array`; it is
    picklable (xarray's backend arrays are), so that distributed workers read it too.

    Parameters
    ----------
    variable : xarray.Variable
        The variable, opened lazily (not loaded, not Dask-backed).
    name : str
        Its name in the dataset.
    source : str
        The file or store, as shown in messages.
    zarr_metadata : object, optional
        The Zarr array's metadata (a Zarr store's variable): a failed block is then searched
        for the chunk file(s) that cannot be read, named in the message.
    """

    def __init__(self, variable: xr.Variable, name: str, source: str,
                 zarr_metadata: Any = None) -> None:
        self.variable = variable
        self.name = name
        self.source = source
        self.zarr_metadata = zarr_metadata
        self.shape = variable.shape
        self.dtype = variable.dtype
        self.ndim = variable.ndim

    def _read(self, key: tuple[slice, ...]) -> np.ndarray:
        return np.asarray(self.variable[key].values)

    def __getitem__(self, key: tuple[slice, ...]) -> np.ndarray:
        key = key if isinstance(key, tuple) else (key,)
        try:
            return self._read(key)
        except MemoryError:
            raise
        except Exception as error:  # a codec's, HDF5's or zarr's own error: name the points
            raise DamagedInputError(self._message(key, error)) from error

    def _message(self, key: tuple[slice, ...], error: BaseException) -> str:
        where = _point_ranges(key, self.variable.dims, self.shape)
        if self.zarr_metadata is None:
            return _netcdf_read_failure(self.source, self.name, self.variable, error, where)
        failed = self._failed_chunk(key)
        if failed is not None:
            chunk_key, region, error = failed
            where = _point_ranges(region, self.variable.dims, self.shape)
        else:
            chunk_key = "?"
        return (f"{os.path.join(self.source, self.name, chunk_key)}: the chunk of variable "
                f"{self.name} at {where} cannot be read ({_first_line(error)}): the Zarr "
                f"store is damaged; {_REWRITE}")

    def _failed_chunk(self, key: tuple[slice, ...]
                      ) -> tuple[str, tuple[slice, ...], BaseException] | None:
        """The first chunk of the store in the block ``key`` that cannot be read (its key, its
        points and the error), read one by one (only after a failure)."""
        import itertools

        chunk_shape = tuple(self.zarr_metadata.chunks)
        spans = []
        for part, size, step in zip(key, self.shape, chunk_shape, strict=True):
            start, stop, _ = part.indices(size)
            spans.append(range(start // step, -(-stop // step)))
        for coords in itertools.product(*spans):
            region = tuple(slice(c * step, min((c + 1) * step, size))
                           for c, step, size in zip(coords, chunk_shape, self.shape,
                                                    strict=True))
            try:
                self._read(region)
            except MemoryError:
                raise
            except Exception as error:
                return self.zarr_metadata.encode_chunk_key(coords), region, error
        return None


def _checked_dask(lazy: xr.Dataset, chunked: xr.Dataset, source: str,
                  zarr_metadata: Mapping[str, Any] | None = None) -> xr.Dataset:
    """``chunked`` (a file opened with Dask chunks) with each Dask-backed data variable read
    through a :class:`_CheckedReader` of the same variable in ``lazy`` (the file opened
    without chunks): the same chunks, values and attributes, and a deterministic name (from
    xarray's own), but a failed read is a :class:`DamagedInputError`."""
    import dask.array as da

    replaced = {}
    for name, array in chunked.data_vars.items():
        variable = array.variable
        if variable.chunks is None or name not in lazy.variables:
            continue
        reader = _CheckedReader(lazy.variables[name], str(name), source,
                                (zarr_metadata or {}).get(str(name)))
        data = da.from_array(reader, chunks=variable.chunks, lock=False, fancy=False,
                             asarray=True, name=f"xuqcal-checked-{array.data.name}",
                             meta=np.empty((0,) * variable.ndim, dtype=variable.dtype))
        replaced[name] = array.copy(data=data)
    return chunked.assign(replaced) if replaced else chunked


def _load_checked(stored: xr.Dataset, shown: str, remedy: str = _REWRITE) -> xr.Dataset:
    """``stored`` (an open NetCDF file) loaded variable by variable, so that data that cannot
    be read (a checksum that does not match: netCDF's ``NetCDF: HDF error``) are one error
    naming the file (as ``shown``) and the variable, ending with ``remedy``
    (:class:`DamagedInputError`)."""
    for name, variable in stored.variables.items():
        try:
            variable.load()
        except (OSError, RuntimeError, ValueError) as error:
            if isinstance(error, PermissionError):
                raise
            raise DamagedInputError(_netcdf_read_failure(shown, str(name), variable, error,
                                                         remedy=remedy)) from None
    return stored


# --------------------------------------------------------------------------------------------
# Zarr
# --------------------------------------------------------------------------------------------


def zarr_available() -> bool:
    """Whether the optional ``zarr`` package can be imported."""
    import importlib.util

    return importlib.util.find_spec("zarr") is not None


def _zarr_missing(shown: str) -> str:
    """The message for a Zarr store when the zarr package is not installed."""
    return (f"{shown} is a Zarr store; reading it needs the zarr package, which is not "
            "installed: pip install zarr (or write the data to a NetCDF file with "
            "xuqcal.to_netcdf)")


#: The metadata files of one array of a Zarr store (format 2; format 3).
_ARRAY_METADATA = (".zarray", ".zattrs", "zarr.json")


class _ParsedJSON(dict):
    """The metadata files of a Zarr store, each read and parsed once: ``parsed[file]`` is the
    content of ``file`` (an error of reading or parsing it is raised, and it is tried again
    on the next access)."""

    def __missing__(self, file: pathlib.Path) -> Any:
        import json

        content = self[file] = json.loads(file.read_text())
        return content


def _array_file(folder: pathlib.Path) -> pathlib.Path:
    """The file of an array's own metadata: ``.zarray`` (format 2) or ``zarr.json``."""
    return folder / (".zarray" if (folder / ".zarray").exists() else "zarr.json")


def _array_folders(store: pathlib.Path, parsed: _ParsedJSON) -> dict[str, pathlib.Path]:
    """The arrays of a store's root group: sub-folders holding ``.zarray`` or ``zarr.json``
    (a group of format 3 also has a ``zarr.json``: only arrays are read by xarray, so a
    sub-group is told apart by its ``node_type``)."""
    folders = {}
    for entry in sorted(store.iterdir()):
        if not entry.is_dir():
            continue
        if (entry / ".zarray").exists():
            folders[entry.name] = entry
        elif (entry / "zarr.json").exists():
            try:
                node = parsed[entry / "zarr.json"].get("node_type")
            except (ValueError, AttributeError, OSError):
                node = "array"  # refused as invalid metadata by the caller
            if node != "group":
                folders[entry.name] = entry
    return folders


def _consolidated(store: pathlib.Path, parsed: _ParsedJSON
                  ) -> tuple[str, dict[str, dict]] | None:
    """The consolidated metadata of a store's arrays (the file and, per array, its copy), or
    None when the store has none."""
    if (store / ".zmetadata").exists():
        try:
            entries = parsed[store / ".zmetadata"]["metadata"]
        except (ValueError, KeyError, TypeError, OSError):
            return None  # xuqcal reads each array's own metadata: an unusable copy is ignored
        return ".zmetadata", {key[:-len("/.zarray")]: value for key, value in entries.items()
                              if isinstance(value, dict) and key.endswith("/.zarray")
                              and key.count("/") == 1}
    if (store / "zarr.json").exists():
        try:
            root = parsed[store / "zarr.json"]
            entries = (root.get("consolidated_metadata") or {}).get("metadata") or {}
        except (ValueError, AttributeError, OSError):
            return None
        return "zarr.json", {key: value for key, value in entries.items()
                             if isinstance(value, dict) and "/" not in key
                             and value.get("node_type") == "array"}
    return None


def _layout(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What an array's metadata (format 2 or 3) says of its layout: shape, chunks, dtype."""
    grid = metadata.get("chunk_grid")
    chunks = grid.get("configuration", {}).get("chunk_shape") if isinstance(grid, dict) \
        else metadata.get("chunks")
    return {"shape": metadata.get("shape"), "chunks": chunks,
            "dtype": metadata.get("data_type", metadata.get("dtype"))}


def _check_zarr_metadata(store: pathlib.Path, shown: str) -> dict[str, Any]:
    """Each array's own metadata read and checked (not only the consolidated copy that xarray
    would read instead): invalid JSON, metadata that zarr refuses, and a consolidated copy
    that disagrees with it are one error naming the store, the variable and the file. Returns
    the zarr arrays of the root group by name. Each metadata file is read once."""
    import zarr

    parsed = _ParsedJSON()
    for name in (".zgroup", ".zattrs", "zarr.json"):
        file = store / name
        if file.is_file():
            try:
                parsed[file]
            except (ValueError, OSError) as error:
                raise ValueError(f"{shown}: the store's metadata file {file} is invalid "
                                 f"({_first_line(error)}); the Zarr store is damaged: "
                                 f"{_REWRITE}") from None
    folders = _array_folders(store, parsed)
    for name, folder in folders.items():
        for file in (folder / kind for kind in _ARRAY_METADATA):
            if file.is_file():
                try:
                    parsed[file]
                except (ValueError, OSError) as error:
                    raise ValueError(_invalid_array_metadata(shown, name, file, error)) \
                        from None
    try:
        group = zarr.open_group(store, mode="r", use_consolidated=False)
    except Exception as error:  # zarr's own errors have no common base
        raise ValueError(f"{shown} cannot be read as a Zarr store ({_first_line(error)})") \
            from None
    arrays = {}
    for name, folder in folders.items():
        try:
            arrays[name] = group[name]
        except Exception as error:
            raise ValueError(_invalid_array_metadata(shown, name, _array_file(folder), error)) \
                from None
    consolidated = _consolidated(store, parsed)
    if consolidated is not None:
        where, copies = consolidated
        for name, copy in copies.items():
            if name not in folders:
                continue
            file = _array_file(folders[name])
            own, kept = _layout(parsed[file]), _layout(copy)
            wrong = [f"{key} {kept[key]} there, {own[key]} in {file.name}" for key in own
                     if own[key] != kept[key]]
            if wrong:
                raise ValueError(
                    f"{shown}: variable {name}: its metadata {file} and the store's "
                    f"consolidated copy ({store / where}) disagree ({'; '.join(wrong)}): the "
                    f"Zarr store is damaged or was changed without consolidating it again; "
                    f"{_REWRITE}")
    return arrays


def _invalid_array_metadata(shown: str, name: str, file: pathlib.Path,
                            error: BaseException) -> str:
    return (f"{shown}: variable {name}: its metadata {file} is invalid ({_first_line(error)}); "
            f"the Zarr store is damaged: {_REWRITE}")


def _reads_as_missing(array: Any) -> bool:
    """Whether a chunk of ``array`` absent from the store reads as missing values (NaN): its
    fill value is NaN or xarray masks it (``_FillValue``, ``missing_value``). Other absent
    chunks hold the fill value itself (e.g. 0): zarr does not write such chunks, and reading
    them gives the values written."""
    if "_FillValue" in array.attrs or "missing_value" in array.attrs:
        return True
    fill = array.fill_value
    try:
        return bool(np.isnan(fill))
    except (TypeError, ValueError):
        return False


def _stored_chunk_keys(folder: pathlib.Path) -> set[str]:
    """The keys of the files below an array's folder (names only: no data read)."""
    keys = set()
    for root, _, files in os.walk(folder):
        prefix = os.path.relpath(root, folder).replace(os.sep, "/")
        keys.update(name if prefix == "." else f"{prefix}/{name}" for name in files)
    return keys


def _check_zarr_chunks(store: pathlib.Path, shown: str, arrays: Mapping[str, Any]) -> None:
    """Refuse a store whose arrays lack chunks that would read as missing values (NaN):
    deleted or never written. Only the names of the stored files are listed."""
    import itertools

    lacking: list[str] = []  # the variables that lack chunks, the first described in full
    for name, array in arrays.items():
        if array.nchunks == 0 or not _reads_as_missing(array):
            continue
        if array.nchunks_initialized >= array.nchunks:
            continue
        stored = _stored_chunk_keys(store / name)
        grid = array.cdata_shape
        missing = [coords for coords in itertools.product(*map(range, grid))
                   if array.metadata.encode_chunk_key(coords) not in stored]
        if not missing:
            continue
        if lacking:
            lacking.append(f"{name} ({len(missing)} of {array.nchunks})")
            continue
        dims = tuple(array.attrs.get("_ARRAY_DIMENSIONS") or
                     getattr(array.metadata, "dimension_names", None) or
                     [f"axis {k}" for k in range(array.ndim)])
        shown_chunks = []
        for coords in missing[:3]:
            region = tuple(slice(c * step, min((c + 1) * step, size))
                           for c, step, size in zip(coords, array.chunks, array.shape,
                                                    strict=True))
            shown_chunks.append(f"{name}/{array.metadata.encode_chunk_key(coords)} ("
                                f"{_point_ranges(region, dims, array.shape)})")
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        lacking.append(f"variable {name} lacks {len(missing)} of its {array.nchunks} chunks: "
                       f"{', '.join(shown_chunks)}{more}")
    if lacking:
        also = f" (also lacking chunks: {', '.join(lacking[1:])})" if len(lacking) > 1 else ""
        raise ValueError(
            f"{shown}: {lacking[0]}{also}; their points would read as missing (NaN). zarr "
            "does not write a chunk whose points are all the fill value (by default): if "
            "those points are meant to be absent, write the store again with "
            "ds.to_zarr(..., write_empty_chunks=True); otherwise the store is incomplete "
            "(chunk files deleted): write it again from the original data")


def _open_zarr(path: PathLike, chunks: object, *, installed: bool | None = None
               ) -> xr.Dataset:
    """A Zarr store, lazily (Dask-backed), with clear errors: each array's own metadata is
    read and checked (not the consolidated copy), chunks that would read as missing values
    are refused before any work, and a chunk that cannot be decoded when the data are
    computed is a :class:`DamagedInputError` naming its file, variable and points.

    Parameters
    ----------
    path : str or path-like
        The store (a local folder).
    chunks : object
        Dask chunks (checked by :func:`_check_chunks`); None: ``"auto"`` (whole multiples of
        the store's chunks); ``{}``: the store's chunks.
    installed : bool, optional
        Whether zarr can be imported (the caller's answer); by default :func:`zarr_available`.
    """
    shown = os.fspath(path)
    if not (zarr_available() if installed is None else installed):
        raise ValueError(_zarr_missing(shown))
    store = pathlib.Path(path)
    marked = any(os.path.lexists(store / name) for name in ZARR_MARKERS)
    arrays: dict[str, Any] = {}
    if marked:  # (a folder without metadata is refused by xarray below)
        arrays = _check_zarr_metadata(store, shown)
        _check_zarr_chunks(store, shown, arrays)
    options = {"consolidated": False, "decode_times": False, "decode_timedelta": False}
    try:
        chunked = xr.open_zarr(path, chunks="auto" if chunks is None else chunks, **options)
        # the same variables unchunked (lazily indexed), which the checked reads go through
        lazy = xr.open_dataset(path, engine="zarr", chunks=None, **options) if marked else \
            None
    except (OSError, ValueError, KeyError, TypeError) as error:
        if not marked:
            raise ValueError(f"{shown} is not a Zarr store: the folder holds none of "
                             f"{', '.join(ZARR_MARKERS)} (its metadata is missing)") from None
        raise ValueError(f"{shown} cannot be read as a Zarr store ({_first_line(error)})") \
            from None
    if lazy is None:
        return chunked.drop_encoding()
    metadata = {name: array.metadata for name, array in arrays.items()}
    return _checked_dask(lazy, chunked, shown, metadata).drop_encoding()


def _open_netcdf_lazily(path: PathLike, chunks: object, what: str) -> xr.Dataset:
    """A NetCDF file opened (not loaded) with Dask chunks, with the errors of
    :func:`read_netcdf`; data that cannot be read when computed (a checksum that does not
    match) are a :class:`DamagedInputError` naming the file, the variable and the points."""
    _check_input_file(path, what)
    shown = os.fspath(path)
    head = _readable_head(path, what)
    if not head:
        raise ValueError(f"{shown} is empty, not {what}")
    options = {"engine": "netcdf4", "decode_times": False, "decode_timedelta": False}
    try:
        lazy = xr.open_dataset(path, **options)
        chunked = xr.open_dataset(path, chunks=chunks, **options)
    except (OSError, ValueError, RuntimeError, KeyError, IndexError) as err:
        if isinstance(err, PermissionError):
            raise PermissionError(f"{shown}: permission denied") from None
        if not head.startswith(_SIGNATURES):
            raise ValueError(_bad_signature(shown, head, what)) from None
        raise ValueError(f"{shown} cannot be read: it is truncated or corrupted ({err}); "
                         f"expected {what}") from None
    return _checked_dask(lazy, chunked, shown).drop_encoding()


def open_dataset(path: PathLike, *, E: str | None = None, uE: str | None = None,
                 chunks: int | str | dict | None = None) -> xr.Dataset:
    """Read an input dataset from a NetCDF file or a Zarr store and check it.

    A NetCDF file is loaded into memory and closed (so it can be overwritten afterwards), unless
    ``chunks`` is given: it is then opened lazily, Dask-backed in those chunks (e.g.
    ``{"sample": 1_000_000}``), for data larger than memory (:func:`xuqcal.reduce_statistics`
    reduces them chunk by chunk); keep the file in place while the dataset is used. A Zarr
    store (a folder named ``*.zarr`` or holding Zarr metadata; needs the ``zarr`` package) is
    always opened lazily (:func:`xarray.open_zarr`), in Dask's automatic chunks (whole
    multiples of the store's chunks) unless ``chunks`` is given; each array's own metadata is
    read and checked (not only a consolidated copy), and chunks that would read as missing
    values (deleted, or all-NaN chunks that zarr did not write) are refused before any work.
    Lazily read data that cannot be decoded (a damaged Zarr chunk, a NetCDF checksum that does
    not match) raise a :class:`DamagedInputError` when computed. Times and time
    deltas are not decoded: a variable with ``units="s"`` stays a number. The roles of the two
    variables are recorded in their attribute ``xuqcal_role`` (see :func:`xuqcal.io.roles`).

    Parameters
    ----------
    path : str or path-like
        The NetCDF file (e.g. written by :func:`to_netcdf`) or Zarr store (e.g. written by
        ``ds.chunk(...).to_zarr(path)``).
    E, uE : str, optional
        Names of the error and uncertainty variables; by default the variables whose roles the
        file records (a dataset built by xuqcal, even renamed), else ``"E"`` and ``"uE"``.
        Every other data variable is a feature.
    chunks : int, str, dict or None
        Dask chunks, passed to :func:`xarray.open_dataset` or :func:`xarray.open_zarr`.
        ``None``: a NetCDF file is loaded into memory, a Zarr store is opened with
        ``chunks="auto"``.

    Returns
    -------
    xarray.Dataset
        The checked dataset. Loaded data are checked at once (names, dimensions, dtypes and
        values). Lazy data are checked for their structure only (names, dimensions, dtypes,
        rows): their values are checked by each analysis as it reads them (chunk by chunk in
        :func:`xuqcal.reduce_statistics`), so that no check ties the chunks together.

    Raises
    ------
    TypeError
        If ``path`` is not a str or an ``os.PathLike``.
    FileNotFoundError, IsADirectoryError
        If ``path`` does not exist, or is a folder that is not a Zarr store.
    ValueError
        If the file is empty, truncated, corrupted or not NetCDF, a Zarr store cannot be read
        (or zarr is not installed, its metadata are invalid, or chunks are missing), or the
        content is not a valid input dataset; the message starts with the path.
    DamagedInputError
        (a ValueError) If data cannot be read: a NetCDF variable whose checksum does not match
        (loaded data: here; lazy data: when computed), a Zarr chunk that cannot be decoded
        (when computed); one line naming the file, the variable and the points.

    Examples
    --------
    >>> ds = open_dataset("set1.nc")  # doctest: +SKIP
    >>> lazy = open_dataset("big.zarr", chunks={"sample": 1_000_000})  # doctest: +SKIP
    """
    from xuqcal.io.schema import (
        _check_structure,
        _record_roles,
        extra_dims,
        roles,
        validate_dataset,
    )

    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path: expected the path of a NetCDF file or Zarr store (a str or "
                        f"os.PathLike), got {type(path).__name__}")
    _check_chunks(chunks)
    what = "a NetCDF file of an input dataset"
    if os.path.isdir(path) and not is_zarr_store(path):
        raise IsADirectoryError(f"{os.fspath(path)} is a folder, not {what}; nor is it a Zarr "
                                f"store: it holds none of {', '.join(ZARR_MARKERS)}")
    if is_zarr_store(path):
        ds = _open_zarr(path, chunks)
    elif chunks is not None:
        ds = _open_netcdf_lazily(path, chunks, what)
    else:
        ds = read_netcdf(path, what)
    try:
        E, uE = roles(ds, E, uE)
        lazy = any(var.chunks is not None for var in ds.data_vars.values())
        if lazy and not extra_dims(ds, E, uE):
            _check_structure(ds, E, uE, None)  # the values are checked where they are read
        else:  # (data with extra dimensions: validate_dataset checks lazy ones' structure)
            ds = validate_dataset(ds, E=E, uE=uE)
    except ValueError as err:
        raise ValueError(f"{os.fspath(path)}: {err}") from None
    return _record_roles(ds, E, uE)
