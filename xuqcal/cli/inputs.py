"""The input files of the commands: CSV files (columns or expressions), NetCDF input datasets
and Zarr stores, one or several (stacked along ``dataset``).

- A CSV file is read once (:func:`xuqcal.io.read_table`), then ``--E``, ``--uE``, ``--where``
  and ``--features`` are evaluated over its columns (:func:`xuqcal.io.from_dataframe`), and
  ``--formula`` adds the features X1 and X2.
- A NetCDF file (recognised by its first bytes, not by its name) is an input dataset
  (:func:`xuqcal.io.open_dataset`); ``--E``/``--uE`` name variables (default: their recorded
  roles), ``--features`` selects variables, and ``--where`` is refused. Its variables may have
  dimensions besides ``sample`` (e.g. ``model``): they are passed through as they are.
- A Zarr store (a folder named ``*.zarr`` or holding Zarr metadata) is read like a NetCDF file,
  lazily, with :func:`xarray.open_zarr`; this needs the optional ``zarr`` package.

The column of ``--groups`` or ``--block`` (:func:`dependence_coordinate`) is carried into the
dataset as a coordinate over ``sample`` (not a feature of the analyses): a CSV column at the
kept rows, a NetCDF or Zarr variable as it is; a missing one is refused, naming the option and
listing the columns.

Several files are read with the same options and stacked along ``dataset`` by
:func:`xuqcal.io.stack_datasets`, labelled by the file names without their suffix or by
``--names``; an error in one file names that file. Files with different columns take
``--E``/``--uE`` once per file, in the order of the files (:func:`per_file`): ``xuqcal
validate a.csv b.csv --E "logP - y_pred" --E err --uE uq --uE sd``; given once, an option
applies to every file.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import xarray as xr

from xuqcal import io
from xuqcal.cli.common import dependence_column, feature_specs
from xuqcal.core import defaults
from xuqcal.io import netcdf
from xuqcal.io.netcdf import (
    ZARR_MARKERS,
    _netcdf_signature,
    _shown_bytes,
    is_zarr_store,
    zarr_available,  # looked up here when read (the tests replace it)
)
from xuqcal.io.schema import _record_roles, standard_names

#: The variables of an input as the commands use them (a CSV file's expressions give them).
E_NAME, UE_NAME = defaults.E, defaults.UE


def is_netcdf(path: Path) -> bool:
    """Whether ``path`` is a NetCDF file, by its first bytes (not by its name). Only a regular
    file is opened: a named pipe would block here (the CSV reader handles pipes)."""
    if not path.is_file():
        return False
    try:
        return _netcdf_signature(path)
    except OSError:  # unreadable: the CSV reader names the problem
        return False


#: Names of NetCDF (and HDF5) files: such a file that does not start like one (and is not
#: text) is refused as a NetCDF file with a bad signature, not read as CSV.
NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf", ".cdf", ".h5", ".hdf5", ".he5")

#: What an input file of validate and report may be.
INPUT_KINDS = "a CSV file, a NetCDF input dataset or a Zarr store"


def _is_text(head: bytes) -> bool:
    """Whether the first bytes of a file read as UTF-8 text (a character cut at the end of the
    block counts as text)."""
    import codecs

    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def check_input_kind(path: Path) -> None:
    """Refuse, naming the file and what is wrong with it, an input that is neither a NetCDF
    file nor a Zarr store and cannot be a CSV file either: missing, unreadable, empty, a folder
    without Zarr metadata, a ``*.nc`` file without the NetCDF signature, binary content (NUL
    bytes). Called before ``--E``/``--uE`` are required, so that a broken NetCDF file is not
    answered with "required for a CSV file". Only the first 8 KiB are read (the CSV reader
    scans the rest); a named pipe or a device is left to the CSV reader."""
    shown = os.fspath(path)
    try:
        if not path.exists():
            raise FileNotFoundError(f"{shown}: no such file (expected {INPUT_KINDS})")
        if path.is_dir():
            raise IsADirectoryError(
                f"{shown} is a folder, not a CSV file or a NetCDF file; nor is it a Zarr store: "
                f"it holds none of {', '.join(ZARR_MARKERS)}")
        if not path.is_file():
            return
        with open(path, "rb") as handle:
            head = handle.read(8192)
    except (FileNotFoundError, IsADirectoryError):
        raise
    except OSError as error:
        raise type(error)(f"{shown} cannot be read: {error.strerror or error} (expected "
                          f"{INPUT_KINDS})") from None
    if not head:
        raise ValueError(f"{shown} is empty (0 bytes): not {INPUT_KINDS}")
    if path.suffix.lower() in NETCDF_SUFFIXES and (b"\0" in head or not _is_text(head)):
        raise ValueError(f"{shown} is not a NetCDF file (NetCDF-3 or NetCDF-4/HDF5): bad "
                         f"signature (it starts with {_shown_bytes(head)}, not with CDF or "
                         "\\x89HDF); it is truncated, corrupted or of another format")
    nul = head.find(b"\0")
    if nul >= 0:
        line = head.count(b"\n", 0, nul) + 1
        raise ValueError(f"{shown} is a binary file, not a text CSV file (a NUL byte on line "
                         f"{line}, byte {nul}); expected "
                         f"{INPUT_KINDS}")


def dependence_coordinate(ds: xr.Dataset, values, column: tuple[str, str] | None
                          ) -> xr.Dataset:
    """``ds`` with the column of ``--groups`` or ``--block`` (``column``: the option and the
    column's name) as a coordinate over ``sample`` holding ``values`` (one per point of
    ``ds``), unless a variable of that name is there already (a feature)."""
    if column is None or column[1] in ds.variables:
        return ds
    return ds.assign_coords({column[1]: ("sample", values, {
        "long_name": f"the {column[0].lstrip('-')} of the dependent bootstrap"})})


def _missing_column(column: tuple[str, str], path: Path, names, what: str = "column"
                    ) -> ValueError:
    option, name = column
    return ValueError(f"{option}: no {what} {name!r} in {path} ({what}s: "
                      f"{', '.join(map(str, names))})")


def read_csv_input(path: Path, *, E: str, uE: str, where: str | None = None,
                   features: Sequence[str] | None = None,
                   formula: str | None = None,
                   column: tuple[str, str] | None = None) -> xr.Dataset:
    """A CSV file as an input dataset: read once, ``E``, ``uE``, ``features`` (the items of
    ``--features``) and ``where`` evaluated over its columns; ``formula`` names a column of
    molecular formulas that adds the features of
    :func:`xuqcal.analysis.features.add_formula_features` (X1, X2, element counts);
    ``column`` (option, name) the column of ``--groups`` or ``--block``, kept as a
    coordinate (:func:`dependence_coordinate`), checked before ``E`` and ``uE`` are
    evaluated."""
    table = io.read_table(path)  # read once: the data and the formulas (a pipe too)
    if column is not None and column[1] not in table.columns:
        raise _missing_column(column, path, table.columns)
    ds = io.from_dataframe(table, E=E, uE=uE, where=where,
                           features=feature_specs(features) or None,
                           source=os.fspath(path))
    if formula:
        from xuqcal.analysis.features import add_formula_features

        if formula not in table.columns:
            raise ValueError(f"--formula: no column {formula!r} in {path} (columns: "
                             f"{', '.join(map(str, table.columns))})")
        ds = add_formula_features(ds, table[formula])
    if column is not None:  # the values at the kept rows (sample: their 0-based positions)
        values = table[column[1]].to_numpy()[ds["sample"].values]
        ds = dependence_coordinate(ds, values, column)
    return ds


def _open_zarr(path: Path, E: str | None, uE: str | None) -> xr.Dataset:
    """A Zarr store as a checked input dataset (lazy: Dask-backed, values checked when
    computed), with the roles recorded as :func:`xuqcal.io.open_dataset` records them. The
    store is opened as :func:`xuqcal.io.open_dataset` opens it (its metadata and chunks
    checked, a damaged chunk named when read), in the store's chunks."""
    ds = netcdf._open_zarr(path, {}, installed=zarr_available())
    try:
        E, uE = io.roles(ds, E, uE)
        ds = io.validate_dataset(ds, E=E, uE=uE)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    return _record_roles(ds, E, uE)


def _refuse_result(path: Path) -> None:
    """Raise a clear error when the NetCDF file ``path`` is a result of xuqcal (a validation
    result of ``xuqcal validate -o``, a recalibrator), not input data with E and uE."""
    try:
        with xr.open_dataset(path) as stored:
            attrs, variables = dict(stored.attrs), set(map(str, stored.data_vars))
    except (OSError, ValueError):
        return
    if attrs.get("xuqcal_object") == "recalibrator":
        what = "a recalibrator (OUT_recalibrator.nc of xuqcal recalibrate)"
    elif {"estimate", "zeta", "verdict"} <= variables:
        what = "a validation result (written by xuqcal validate -o)"
    else:
        return
    source = f" (its source: {attrs['source']})" if attrs.get("source") else ""
    raise ValueError(f"FILE: {path} is {what}, not input data with E and uE; give the data "
                     f"it was computed from{source}, e.g. a NetCDF file written by "
                     "xuqcal.to_netcdf(ds, ...) or the recalibrated test set of xuqcal "
                     "recalibrate")


def read_store_input(path: Path, *, E: str | None, uE: str | None, where: str | None = None,
                     features: Sequence[str] | None = None,
                     zarr: bool = False, column: tuple[str, str] | None = None
                     ) -> tuple[xr.Dataset, tuple[str, str]]:
    """A NetCDF input dataset (or a Zarr store) with its error and uncertainty variables
    renamed ``E`` and ``uE``, and the names they had. ``E``/``uE`` name variables (default:
    the recorded roles, else ``E`` and ``uE``); ``features`` keeps only these variables;
    ``column`` (option, name) is the variable of ``--groups`` or ``--block``, kept as a
    coordinate unless it is one of ``features``."""
    what = "a Zarr store" if zarr else "a NetCDF file"
    if where:
        raise ValueError("--where: filters the rows of a CSV file; select the points of a "
                         f"NetCDF or Zarr input with xarray before writing it ({path} is "
                         f"{what})")
    for option, value in (("--E", E), ("--uE", uE)):
        if value is not None and not value.isidentifier():
            raise ValueError(f"{option}: for {what}, give a variable name, got the expression "
                             f"{value!r} ({path})")
    try:
        ds = _open_zarr(path, E, uE) if zarr else io.open_dataset(path, E=E, uE=uE)
    except ValueError:
        if not zarr:
            _refuse_result(path)
        raise
    names = io.roles(ds, E, uE)
    if column is not None and column[1] not in ds.variables:
        raise _missing_column(column, path, [v for v in ds.variables
                                             if "sample" in ds[v].dims], "variable")
    if features:
        specs = feature_specs(features)
        expressions = [f"{name}={expression}" for name, expression in specs.items()
                       if expression != name]
        if expressions:
            raise ValueError(f"--features: for {what}, give variable names (the variables to "
                             f"keep), got {', '.join(expressions)} ({path})")
        unknown = [name for name in specs if name not in ds.data_vars]
        if unknown:
            raise ValueError(f"--features: {path} has no variable {', '.join(unknown)} "
                             f"(variables: {', '.join(map(str, ds.data_vars))})")
        kept = ds[[*names, *specs]]
        if column is not None and column[1] not in kept.variables:
            kept = kept.assign_coords({column[1]: ds[column[1]]})
        ds = kept
    if column is not None and column[1] in ds.data_vars and column[1] not in (
            *feature_specs(features), *names):  # the resampling variable, not a feature
        ds = ds.set_coords(column[1])
    # the commands work on the variables E and uE (as a CSV file's expressions give them)
    try:
        return standard_names(ds, *names), names
    except ValueError as error:  # another variable is named E or uE
        raise ValueError(f"--E, --uE: {path}: {str(error).partition(': ')[2]}") from None


def per_file(value: str | Sequence[str] | None, files: Sequence[Path],
             option: str) -> list[str | None]:
    """The value of ``--E`` or ``--uE`` for each file: given once (or a plain string), the
    same for every file; given once per file, in the order of the files. Checked before any
    file is read.

    Examples
    --------
    >>> per_file(["E"], [Path("a.csv"), Path("b.csv")], "--E")
    ['E', 'E']
    >>> per_file(["logP - y_pred", "err"], [Path("a.csv"), Path("b.csv")], "--E")
    ['logP - y_pred', 'err']
    >>> per_file(["a", "b"], [Path("a.csv"), Path("b.csv"), Path("c.csv")], "--uE")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: --uE: given 2 times for 3 files; give --uE once (the same for every file) or ...
    """
    if value is None or isinstance(value, str):
        return [value] * len(files)
    values = list(value)
    if len(values) == 1:
        return values * len(files)
    if len(values) != len(files):
        raise ValueError(f"{option}: given {len(values)} times for {len(files)} file"
                         f"{'s' if len(files) != 1 else ''}; give {option} once (the same for "
                         "every file) or once per FILE, in the order of the files")
    return values


def set_labels(files: Sequence[Path], names: Sequence[str] | None) -> list[str]:
    """The ``dataset`` labels of several input files: ``names`` (``--names``), else each
    file's name without its suffix. Checked before any file is read.

    Examples
    --------
    >>> set_labels([Path("a/qm9.csv"), Path("b/logP.csv")], None)
    ['qm9', 'logP']
    >>> set_labels([Path("a/data.csv"), Path("b/data.csv")], None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: FILE: a/data.csv and b/data.csv have the same name 'data', ... --names data1,data2
    """
    if names is not None:
        if len(names) != len(files):
            raise ValueError(f"--names: {len(names)} name{'s' if len(names) != 1 else ''} "
                             f"({', '.join(names)}) for {len(files)} file"
                             f"{'s' if len(files) != 1 else ''}; give one name per file, in "
                             "the order of the files")
        return list(names)
    labels = [Path(f).stem or os.fspath(f) for f in files]
    for label in labels:
        same = [os.fspath(f) for f, other in zip(files, labels, strict=True) if other == label]
        if len(same) > 1:
            example = ",".join(f"{label}{k + 1}" for k in range(len(same)))
            raise ValueError(f"FILE: {' and '.join(same)} have the same name {label!r}, which "
                             f"labels the data sets; name them with --names, e.g. --names "
                             f"{example}")
    return labels


def in_file(error: ValueError, path: Path) -> ValueError:
    """``error`` with the file it comes from, when several files are read: ``uE: 1 of 300
    values are not positive`` becomes ``uE: b.csv: 1 of 300 ...`` (the leading parameter
    stays first, for the option it names). A message that names the file already is kept.

    Examples
    --------
    >>> str(in_file(ValueError("uE: 1 of 3 values are NaN (rows 2)"), Path("b.csv")))
    'uE: b.csv: 1 of 3 values are NaN (rows 2)'
    """
    text = str(error)
    shown = os.fspath(path)
    if shown in text:
        return error
    head, colon, rest = text.partition(": ")
    if colon and head.isidentifier():
        return ValueError(f"{head}: {shown}: {rest}")
    return ValueError(f"{shown}: {text}")


def read_input(path: Path, args: argparse.Namespace, *, E: str | None = None,
               uE: str | None = None, formula: str | None = None,
               csv_only: bool = False) -> tuple[xr.Dataset, tuple[str, str]]:
    """One input file of a command, with the options of ``args`` (``E``/``uE`` override
    ``args.E``/``args.uE``): the dataset with variables ``E`` and ``uE``, and the names or
    expressions they came from. ``csv_only``: a NetCDF file or Zarr store is refused (by the
    CSV reader, which names it)."""
    E = per_file(args.E, [path], "--E")[0] if E is None else E
    uE = per_file(args.uE, [path], "--uE")[0] if uE is None else uE
    features = getattr(args, "features", None)
    column = dependence_column(args)
    netcdf = not csv_only and is_netcdf(path)
    if netcdf or (not csv_only and is_zarr_store(path)):  # any other folder: refused below
        if formula:
            raise ValueError(f"--formula: reads a column of a CSV file; {path} is a "
                             f"{'NetCDF file' if netcdf else 'Zarr store'} (add the "
                             "features with xuqcal.add_formula_features before writing it)")
        return read_store_input(path, E=E, uE=uE, where=args.where, features=features,
                                zarr=not netcdf, column=column)
    if not csv_only:  # what is wrong with a file that is neither NetCDF nor Zarr nor CSV
        check_input_kind(path)
    missing = [option for option, value in (("--E", E), ("--uE", uE)) if value is None]
    if missing:
        named = (f"; {path} does not start like a NetCDF file, so it is read as CSV"
                 if path.suffix.lower() in NETCDF_SUFFIXES else "")
        raise ValueError(f"{', '.join(missing)}: required for a CSV file (a column name or an "
                         f"expression over columns){named}")
    ds = read_csv_input(path, E=E, uE=uE, where=args.where, features=features,
                        formula=formula, column=column)
    return ds, (E, uE)


def _check_same_features(sets: dict[Path, xr.Dataset]) -> None:
    """Refuse files whose feature variables differ (NetCDF inputs: CSV files get the same
    features from the same ``--features``), naming the files and the common features."""
    features = {path: [str(v) for v in ds.data_vars if v not in (E_NAME, UE_NAME)]
                for path, ds in sets.items()}
    union = list(dict.fromkeys(name for names in features.values() for name in names))
    lacking = [f"{os.fspath(path)} has no {', '.join(n for n in union if n not in names)}"
               for path, names in features.items() if any(n not in names for n in union)]
    if not lacking:
        return
    common = [n for n in union if all(n in names for names in features.values())]
    fix = (f"keep the common ones with --features {','.join(common)}" if common else
           "they share none: keep only E and uE in the files (e.g. ds[['E', 'uE']]) "
           "before validating them together")
    raise ValueError(f"--features: the files have different feature variables ("
                     f"{'; '.join(lacking)}); every data set needs the same features: {fix}")


def read_inputs(files: Sequence[Path], args: argparse.Namespace, *,
                formula: str | None = None,
                csv_only: bool = False) -> tuple[xr.Dataset, tuple[str, str]]:
    """The data of a command: one file as it is (no ``dataset`` dimension unless ``--names``
    is given), several files stacked along ``dataset`` (:func:`xuqcal.io.stack_datasets`).

    Returns the dataset and the error and uncertainty names or expressions used (joined with
    ``", "`` when the files use different ones: ``--E`` given per file, NetCDF files naming
    them differently); ``csv_only`` as in :func:`read_input`."""
    dependence_column(args)  # --block-scheme without --block: refused before any read
    names = getattr(args, "names", None)
    several = len(files) > 1 or names is not None
    labels = set_labels(files, names) if several else None
    errors, uncertainties = (per_file(getattr(args, key), files, option)
                             for key, option in (("E", "--E"), ("uE", "--uE")))
    if len(files) > 1:  # a missing file is named before any other file is read
        for path in files:
            if not os.path.lexists(path):
                raise FileNotFoundError(f"{os.fspath(path)}: no such file (expected a CSV "
                                        "file, a NetCDF input dataset or a Zarr store)")
    sets, used = {}, []
    for k, path in enumerate(files):
        try:
            ds, found = read_input(path, args, E=errors[k], uE=uncertainties[k],
                                   formula=formula, csv_only=csv_only)
        except ValueError as error:
            if len(files) > 1:
                raise in_file(error, path) from None
            raise
        sets[labels[k] if labels else os.fspath(path)] = ds
        used.append(found)
    expressions = tuple(", ".join(dict.fromkeys(u[i] for u in used)) for i in (0, 1))
    _check_same_features(dict(zip(files, sets.values(), strict=True)))
    if not several:
        return next(iter(sets.values())), expressions
    return io.stack_datasets(sets), expressions
