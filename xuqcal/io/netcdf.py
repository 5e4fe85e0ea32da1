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

__all__ = ["ZARR_MARKERS", "is_zarr_store", "open_dataset", "read_netcdf", "to_netcdf",
           "to_netcdf_set"]

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


def _netcdf_signature(path: PathLike | io_module.BytesIO) -> bool:
    """Whether a file starts like a NetCDF-3 or NetCDF-4 (HDF5) file."""
    head = _head(path, 8)
    return head.startswith((b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n"))


def _readable_head(path: PathLike, what: str) -> bytes:
    """The first 8 bytes of ``path``, or an error naming the file when it cannot be read (an
    I/O error, permission denied)."""
    try:
        return _head(path, 8)
    except OSError as err:
        raise type(err)(f"{os.fspath(path)} cannot be read: {err.strerror or err} (expected "
                        f"{what})") from None


def _bad_signature(shown: str, head: bytes, what: str) -> str:
    """The message for a file that does not start like a NetCDF file."""
    first = " ".join(f"{b:02x}" for b in head[:8]) or "nothing"
    return (f"{shown} is not a NetCDF file (NetCDF-3 or NetCDF-4/HDF5): bad signature (it "
            f"starts with {first}, not with CDF or \\x89HDF); expected {what}")


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
    if os.path.getsize(path) == 0:
        raise ValueError(f"{shown} is empty, not {what}")
    signature = _netcdf_signature(path)
    try:
        with xr.open_dataset(
            path, engine="netcdf4", decode_times=False, decode_timedelta=False
        ) as stored:
            # drop the file's encodings (e.g. fixed-width strings) so that writing an extended
            # dataset back cannot truncate new values
            return stored.load().drop_encoding()
    except (OSError, ValueError, RuntimeError, KeyError, IndexError) as err:
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
    refusal = f"{path} already exists; pass overwrite=True to replace it"
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


def _prepare(ds: xr.Dataset, path: pathlib.Path, overwrite: bool) -> xr.Dataset:
    """Check ``path`` and return a shallow copy of ``ds`` with NetCDF-safe attributes."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"expected an xarray.Dataset, got {type(ds).__name__}")
    refusal = f"{path} already exists; pass overwrite=True to replace it"
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(refusal)
    if os.path.lexists(path):  # never destroy a device, a pipe or a read-only file
        _outputs.check_replaceable(path, "path")
    out = ds.copy(deep=False)
    out.attrs = {k: _netcdf_attr(v, "dataset", k) for k, v in ds.attrs.items()}
    for var_name, variable in out.variables.items():
        variable.attrs = {
            k: _netcdf_attr(v, f"variable '{var_name}'", k) for k, v in variable.attrs.items()
        }
    return out


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
        out.to_netcdf(tmp, mode="w", format="NETCDF4", engine="netcdf4")
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


def _open_zarr(path: PathLike, chunks: object) -> xr.Dataset:
    """A Zarr store, lazily (Dask-backed), with clear errors."""
    import importlib.util

    shown = os.fspath(path)
    if importlib.util.find_spec("zarr") is None:
        raise ValueError(f"{shown} is a Zarr store; reading it needs the zarr package, which is "
                         "not installed: pip install zarr (or write the data to a NetCDF file "
                         "with xuqcal.to_netcdf)")
    try:
        return xr.open_zarr(path, chunks="auto" if chunks is None else chunks,
                            decode_times=False, decode_timedelta=False).drop_encoding()
    except (OSError, ValueError, KeyError, TypeError) as error:
        if not any(os.path.lexists(os.path.join(path, name)) for name in ZARR_MARKERS):
            raise ValueError(f"{shown} is not a Zarr store: the folder holds none of "
                             f"{', '.join(ZARR_MARKERS)} (its metadata is missing)") from None
        reason = str(error).strip().splitlines()[0] if str(error).strip() else \
            type(error).__name__
        raise ValueError(f"{shown} cannot be read as a Zarr store ({reason})") from None


def _open_netcdf_lazily(path: PathLike, chunks: object, what: str) -> xr.Dataset:
    """A NetCDF file opened (not loaded) with Dask chunks, with the errors of
    :func:`read_netcdf`."""
    _check_input_file(path, what)
    shown = os.fspath(path)
    head = _readable_head(path, what)
    if os.path.getsize(path) == 0:
        raise ValueError(f"{shown} is empty, not {what}")
    try:
        return xr.open_dataset(path, engine="netcdf4", chunks=chunks, decode_times=False,
                               decode_timedelta=False).drop_encoding()
    except (OSError, ValueError, RuntimeError, KeyError, IndexError) as err:
        if isinstance(err, PermissionError):
            raise PermissionError(f"{shown}: permission denied") from None
        if not _netcdf_signature(path):
            raise ValueError(_bad_signature(shown, head, what)) from None
        raise ValueError(f"{shown} cannot be read: it is truncated or corrupted ({err}); "
                         f"expected {what}") from None


def open_dataset(path: PathLike, *, E: str | None = None, uE: str | None = None,
                 chunks: int | str | dict | None = None) -> xr.Dataset:
    """Read an input dataset from a NetCDF file or a Zarr store and check it.

    A NetCDF file is loaded into memory and closed (so it can be overwritten afterwards), unless
    ``chunks`` is given: it is then opened lazily, Dask-backed in those chunks (e.g.
    ``{"sample": 1_000_000}``), for data larger than memory (:func:`xuqcal.reduce_statistics`
    reduces them chunk by chunk); keep the file in place while the dataset is used. A Zarr
    store (a folder named ``*.zarr`` or holding Zarr metadata; needs the ``zarr`` package) is
    always opened lazily (:func:`xarray.open_zarr`), in Dask's automatic chunks (whole
    multiples of the store's chunks) unless ``chunks`` is given. Times and time
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
    FileNotFoundError, IsADirectoryError
        If ``path`` does not exist, or is a folder that is not a Zarr store.
    ValueError
        If the file is empty, truncated, corrupted or not NetCDF, a Zarr store cannot be read
        (or zarr is not installed), or the content is not a valid input dataset; the message
        starts with the path.

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
