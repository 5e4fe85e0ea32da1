"""Tabular input: :func:`read_csv` and :func:`from_dataframe` build a checked input dataset
from columns or expressions over columns (see :mod:`xuqcal.io.expressions`)."""

from __future__ import annotations

import ast
import io as io_module
import os
import stat
from collections import ChainMap
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from xuqcal.io.expressions import _Expression, _series_to_numpy, evaluate_expression
from xuqcal.io.netcdf import PathLike, _check_input_file, _netcdf_signature
from xuqcal.io.quantiles import (
    check_points,
    check_without_uE,
    interval_arguments,
    interval_attrs,
    interval_checks,
    uE_expression,
    uE_from_bounds,
)
from xuqcal.io.schema import (
    _WHERE_HINT,
    SAMPLE_DIM,
    FeatureSpec,
    _check_dataset,
    _check_feature_name,
    _dataset_attrs,
    _names_list,
    _sample_coord,
    _variable_attrs,
)

__all__ = ["from_dataframe", "read_csv", "read_table"]


class _Columns(Mapping[str, np.ndarray]):
    """Lazy mapping from column name to a numpy array (converted on first access)."""

    def __init__(self, df: pd.DataFrame) -> None:
        self._df = df
        self._positions = {str(c): i for i, c in enumerate(df.columns)}
        self._cache: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._cache:
            self._cache[key] = _series_to_numpy(self._df.iloc[:, self._positions[key]])
        return self._cache[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._positions)

    def __contains__(self, key: object) -> bool:
        return key in self._positions


def _column_expression(spec: Any, columns: Mapping[str, Any]) -> Any:
    """A spec that is exactly a column name is that column, even if it is not an identifier."""
    if isinstance(spec, str) and spec in columns and "`" not in spec:
        return f"`{spec}`"
    return spec


def _feature_specs(features: FeatureSpec, columns: Mapping[str, Any]) -> dict[str, str]:
    if features is None:
        return {}
    if isinstance(features, Mapping):
        specs = {}
        for key, expression in features.items():
            specs[_check_feature_name(key)] = expression
        return specs
    items = [features] if isinstance(features, str) else _names_list(features)
    specs = {}
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"features: expected column names (str), got {item!r}")
        if item in columns:
            feature = item
        else:
            compiled = _Expression(item, "features")
            if not isinstance(compiled.tree.body, ast.Name):
                raise ValueError(
                    f"features: '{item}' is an expression, not a column name; name the result "
                    f"with the mapping form, e.g. features={{'X1': '{item}'}}"
                )
            feature = compiled.names[0]
        if _check_feature_name(feature) in specs:
            raise ValueError(f"features: '{feature}' is given twice")
        specs[feature] = item
    return specs


def from_dataframe(
    df: pd.DataFrame,
    *,
    E: str,
    uE: str | None = None,
    features: FeatureSpec = None,
    where: str | None = None,
    name: str | None = None,
    units: str | None = None,
    source: str | None = None,
    lower: str | None = None,
    upper: str | None = None,
    coverage_level: float | None = None,
    uE_from_interval: bool = False,
) -> xr.Dataset:
    """Build a validated input dataset from the columns of a DataFrame.

    Parameters
    ----------
    df : pandas.DataFrame
        The data, one row per data point.
    E, uE : str
        Column names or expressions over columns (see :func:`evaluate_expression`), e.g.
        ``E="logP - y_pred"``, ``uE="sqrt(uncertainty_total)"``. A string that is exactly a
        column name is that column, even if it is not a Python identifier; otherwise column names
        that are not identifiers are written in backticks (```E (eV)` - pred``). ``uE`` may be
        left out when a predicted interval is given (see ``lower``, ``upper``).
    features : str, sequence of str or mapping of str to str, optional
        Feature variables: column names (the variable is named after the column) or a mapping
        ``{name: expression}``; an expression that is not a bare column name needs the mapping
        form. Features cannot be named ``E``, ``uE`` or ``sample``.
    where : str, optional
        A row filter, evaluated after ``E``, ``uE`` and the features; its namespace holds the
        columns plus ``E``, ``uE`` and the feature names (which take precedence over columns of
        the same name), e.g. ``"uE > 1e-6 * std(E)"``. Reductions (``std``, ``mean``, ...) see
        all rows. It must give one true/false value per row.
    name : str, optional
        A name for the dataset (attribute ``name``).
    units : str, optional
        Units of ``E`` and ``uE``.
    source : str, optional
        Provenance recorded in the attribute ``source`` (default ``"dataframe"``).
    lower, upper : str, optional
        A predicted interval **of the error** at the level ``coverage_level``: column names or
        expressions, like ``E``. From predicted bounds ``y_lo``, ``y_hi`` of the target around
        the prediction ``y_pred``, with ``E="y - y_pred"``: ``lower="y_lo - y_pred"``,
        ``upper="y_hi - y_pred"`` (``y`` lies in ``[y_lo, y_hi]`` exactly when ``E`` lies in
        ``[lower, upper]``). Stored as the variables ``lower``, ``upper`` (roles
        ``interval_lower``, ``interval_upper``, attribute ``coverage_level``); the filter
        ``where`` can use them. Bounds must be finite with ``lower <= upper``.
    coverage_level : float, optional
        The nominal level of the interval, in (0, 1); required with ``lower`` and ``upper``.
    uE_from_interval : bool
        Derive ``uE = (upper - lower) / (2 z)``, ``z = Φ⁻¹((1 + coverage_level) / 2)`` (a
        normal distribution with that central interval), before the filter ``where``. Only on
        request: by default no ``uE`` is derived, and the dataset has no ``uE`` when none is
        given.

    Returns
    -------
    xarray.Dataset
        Variables ``E``, ``uE`` (float64; absent when neither given nor derived), the features,
        and ``lower``, ``upper`` (with an interval) over ``sample``, whose coordinate is
        the 0-based position of each kept row in ``df`` (not ``df.index``). The attributes record
        the expressions, the filter, the numbers of rows read and dropped, the version and time.

    Raises
    ------
    ValueError
        For duplicated column names, unknown columns, non-numeric columns, invalid
        expressions, a filter that is not boolean or keeps no row, zero rows, and NaN,
        infinite or non-positive values (see :func:`validate_dataset`).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"logP": [1.0, 2.0, 3.0], "y_pred": [1.1, 1.8, 3.3],
    ...                    "uq": [0.2, 0.3, 0.0]})
    >>> ds = from_dataframe(df, E="logP - y_pred", uE="uq", where="uE > 0")
    >>> ds["sample"].values.tolist(), ds.attrs["n_rows_dropped"]
    ([0, 1], 1)
    >>> df["lo"], df["hi"] = [0.8, 1.5, 2.9], [1.4, 2.1, 3.5]
    >>> ds = from_dataframe(df, E="logP - y_pred", lower="lo - y_pred", upper="hi - y_pred",
    ...                     coverage_level=0.9)
    >>> list(ds.data_vars), ds.lower.values.round(2).tolist()
    (['E', 'lower', 'upper'], [-0.3, -0.3, -0.4])
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas.DataFrame, got {type(df).__name__}")
    level = interval_arguments(uE is not None, lower, upper, coverage_level, uE_from_interval)
    if df.columns.duplicated().any():
        dup = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
        raise ValueError(f"duplicated column names: {', '.join(dup)}; give each column a name")
    n_rows = len(df)
    where = where or ""
    source = "dataframe" if source is None else str(source)
    if n_rows == 0:
        raise ValueError(f"empty data: {source} has 0 rows")
    columns = _Columns(df)
    feature_specs = _feature_specs(features, columns)
    specs = {"E": E, **({"uE": uE} if uE is not None else {}), **feature_specs}
    if level is not None:
        for bound in ("lower", "upper"):
            if bound in feature_specs:
                raise ValueError(f"features: a feature cannot be named '{bound}' with a "
                                 f"predicted interval (the variable of its {bound} bound); "
                                 f"choose another name with the mapping form, e.g. "
                                 f"features={{'{bound}_': ...}}")
        specs.update(lower=lower, upper=upper)
    values = {
        var: evaluate_expression(_column_expression(spec, columns), columns, variable=var)
        for var, spec in specs.items()
    }
    for var in ("E", "uE", "lower", "upper"):
        if var in values and values[var].dtype == np.bool_:
            raise ValueError(
                f"{var}: expression '{specs[var]}' gives true/false values, not numbers"
            )
    if level is not None and uE_from_interval:
        derived = uE_from_bounds(values["lower"], values["upper"], level)
        specs = {"E": E, "uE": uE_expression(level), **{k: v for k, v in specs.items()
                                                        if k != "E"}}
        values = {"E": values["E"], "uE": derived, **{k: v for k, v in values.items()
                                                      if k != "E"}}
    keep = np.ones(n_rows, dtype=bool)
    if where:
        keep = evaluate_expression(where, ChainMap(values, columns), variable="where")
        if keep.dtype != np.bool_:
            raise ValueError(
                f"where: expression '{where}' must give true/false for each row, got numbers "
                f"(dtype {keep.dtype}); use a comparison, e.g. 'uE > 0'"
            )
        if not keep.any():
            message = f"where: expression '{where}' keeps none of the {n_rows} rows (empty data)"
            bad = [
                var for var, v in values.items() if v.dtype != np.bool_ and not np.isfinite(v).all()
            ]
            if bad:
                message += (
                    f"; note that {', '.join(bad)} contain non-finite values, which make "
                    "reductions such as std() NaN"
                )
            raise ValueError(message)
    rows = np.flatnonzero(keep)
    attrs = {var: _variable_attrs(var, specs[var], units) for var in values}
    if level is not None:
        attrs.update({bound: interval_attrs(bound, specs[bound], units, level)
                      for bound in ("lower", "upper")})
    ds = xr.Dataset(
        {
            var: xr.Variable(SAMPLE_DIM, v[keep], attrs[var])
            for var, v in values.items()
        },
        coords={SAMPLE_DIM: _sample_coord(rows)},
        attrs=_dataset_attrs(
            source=source,
            E=E,
            uE=specs.get("uE", ""),
            where=where,
            n_rows_read=n_rows,
            n_rows_dropped=n_rows - rows.size,
            name=name,
        ),
    )
    if level is None:
        return _check_dataset(ds, "E", "uE", None, hint=_WHERE_HINT)
    ds.attrs.update(lower_expression=lower, upper_expression=upper)
    # the bounds first: a crossed interval would else show as uE <= 0 when uE is derived
    ds = check_points(ds, interval_checks(ds), hint=_INTERVAL_HINT)
    if "uE" in ds.data_vars:
        return _check_dataset(ds, "E", "uE", None, hint=_WHERE_HINT)
    return check_without_uE(ds, [str(v) for v in ds.data_vars if v not in ("lower", "upper")])


_INTERVAL_HINT = ("hint: fix the source data, or drop such rows with the where argument, e.g. "
                  'where="isfinite(lower) & isfinite(upper) & (lower <= upper)"')


def read_table(path: PathLike, **read_csv_kwargs: Any) -> pd.DataFrame:
    """Read a CSV file into a DataFrame, with the checks of :func:`read_csv`.

    The file is read once (a pipe too) with :func:`pandas.read_csv`; use it with
    :func:`from_dataframe` (``source=path``) when other columns of the file are needed as
    well, e.g. chemical formulas.

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    **read_csv_kwargs
        Passed to :func:`pandas.read_csv` (e.g. ``sep=";"``).

    Returns
    -------
    pandas.DataFrame
        The file's columns.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        If ``path`` does not exist or is a folder.
    ValueError
        If the file is empty, binary or NetCDF, is not valid CSV or has duplicated column names
        (which pandas would silently rename ``E``, ``E.1``); the message names the file.

    Examples
    --------
    >>> read_table("no/such/file.csv")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no/such/file.csv: no such file (expected a CSV file)
    """
    source = os.fspath(path) if isinstance(path, str | os.PathLike) else "<stream>"
    if isinstance(path, str | os.PathLike) and "://" not in os.fspath(path):
        _check_input_file(path, "a CSV file", pipe=True)
        if stat.S_ISFIFO(os.stat(path).st_mode):  # read once; checked and parsed from memory
            path = _read_pipe(path)
    if _local_plain_file(path, read_csv_kwargs) or isinstance(path, io_module.BytesIO):
        if _netcdf_signature(path):
            raise ValueError(f"{source} is a NetCDF file, not a CSV file; read it with "
                             "xuqcal.open_dataset")
        nul = None if "encoding" in read_csv_kwargs else _first_nul(path)
        if nul is not None:  # anywhere: a NUL tail would make pandas read one endless field
            raise ValueError(f"{source} is a binary file, not a text CSV file (it contains NUL "
                             f"bytes: the first on line {nul[1]}, byte {nul[0]}); give a CSV "
                             "file, or its encoding with encoding=...")
    try:
        df = pd.read_csv(path, **read_csv_kwargs)
        _check_header(path, df, read_csv_kwargs, source)
    except PermissionError:
        raise PermissionError(f"{source}: permission denied (the file cannot be read)") from None
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{source} is not a text CSV file in the {err.encoding} encoding (byte "
            f"0x{err.object[err.start]:02x} at position {err.start}); give a CSV file, or its "
            "encoding with encoding=..."
        ) from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{source} is empty: no header row and no data") from None
    except pd.errors.ParserError as err:
        raise ValueError(f"{source} cannot be read as CSV: {str(err).strip()}") from None
    return df


def read_csv(
    path: PathLike,
    *,
    E: str,
    uE: str | None = None,
    features: FeatureSpec = None,
    where: str | None = None,
    name: str | None = None,
    units: str | None = None,
    lower: str | None = None,
    upper: str | None = None,
    coverage_level: float | None = None,
    uE_from_interval: bool = False,
    **read_csv_kwargs: Any,
) -> xr.Dataset:
    """Read a CSV file into a validated input dataset.

    The file is read with :func:`read_table` and passed to :func:`from_dataframe`; the
    attribute ``source`` records ``path`` as given. The coordinate ``sample`` is the 0-based
    number of each data row in the file (the header is not counted).

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    E, uE, features, where, name, units
        As in :func:`from_dataframe`.
    lower, upper, coverage_level, uE_from_interval
        A predicted interval of the error at a stated level, as in :func:`from_dataframe`
        (e.g. ``E="y - y_pred", lower="y_lo - y_pred", upper="y_hi - y_pred",
        coverage_level=0.9``); ``uE`` may then be left out.
    **read_csv_kwargs
        Passed to :func:`pandas.read_csv` (e.g. ``sep=";"``).

    Returns
    -------
    xarray.Dataset
        The validated dataset.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        If ``path`` does not exist or is a folder.
    ValueError
        If the file is empty, binary or NetCDF, is not valid CSV, has duplicated column names
        (which pandas would silently rename ``E``, ``E.1``), or its content is not a valid
        input (see :func:`from_dataframe`); the message names the file.

    Examples
    --------
    >>> ds = read_csv("qm9_qm9_E_calibrated_isotonic_test.csv",  # doctest: +SKIP
    ...               E="E_ - prediction", uE="sqrt(uncertainty_total)", units="eV")
    >>> ds = read_csv("Perovskite_RF_Test_cal.csv", E="E", uE="uE",  # doctest: +SKIP
    ...               where="uE > 1e-6 * std(E)")
    """
    source = os.fspath(path) if isinstance(path, str | os.PathLike) else "<stream>"
    if "interval_level" in read_csv_kwargs:  # not for pandas: the keyword removed in 0.2
        raise TypeError("read_csv() got an unexpected keyword argument 'interval_level' "
                        "(renamed coverage_level in version 0.2)")
    interval_arguments(uE is not None, lower, upper, coverage_level, uE_from_interval)
    df = read_table(path, **read_csv_kwargs)
    return from_dataframe(
        df,
        E=E,
        uE=uE,
        features=features,
        where=where,
        name=name,
        units=units,
        source=source,
        lower=lower,
        upper=upper,
        coverage_level=coverage_level,
        uE_from_interval=uE_from_interval,
    )


_HEADER_ONLY_KWARGS = ("sep", "delimiter", "encoding", "encoding_errors", "skiprows", "comment",
                       "quotechar", "quoting", "doublequote", "escapechar", "skipinitialspace",
                       "lineterminator", "dialect", "engine", "compression", "storage_options",
                       "skip_blank_lines", "delim_whitespace")


_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".zip", ".xz", ".zst", ".tar", ".tgz", ".tbz2")


def _first_nul(path: PathLike | io_module.BytesIO,
               block: int = 1 << 20) -> tuple[int, int] | None:
    """The byte offset and the line (from 1) of the first NUL byte of a file, None without
    one: the whole file is scanned, a block at a time (a NUL byte is never CSV text, and
    pandas would read a NUL tail of gigabytes as one field, until the memory runs out)."""
    if isinstance(path, io_module.BytesIO):
        data = path.getvalue()
        offset = data.find(b"\0")
        return None if offset < 0 else (offset, data.count(b"\n", 0, offset) + 1)
    lines, position = 1, 0
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            offset = chunk.find(b"\0")
            if offset >= 0:
                return position + offset, lines + chunk.count(b"\n", 0, offset)
            lines += chunk.count(b"\n")
            position += len(chunk)
    return None


def _local_plain_file(path: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether ``path`` names a local, uncompressed file (whose bytes can be checked before
    pandas reads it); URLs, streams and compressed files are left to pandas."""
    if not isinstance(path, str | os.PathLike):
        return False
    text = os.fspath(path)
    if "://" in text:
        return False
    if kwargs.get("compression", "infer") not in ("infer", None):
        return False
    return not text.lower().endswith(_COMPRESSED_SUFFIXES)


def _read_pipe(path: PathLike) -> io_module.BytesIO:
    """The whole content of a pipe (``<(command)``, ``/dev/stdin``, a named pipe), read once:
    its bytes can be checked and parsed only once. A named pipe that no program writes to is
    refused at once instead of waiting forever."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read()
    finally:
        os.close(fd)
    if not data:
        raise ValueError(f"{os.fspath(path)} is a pipe with nothing written to it (no header "
                         "row and no data); give a CSV file, or write the data to the pipe")
    return io_module.BytesIO(data)


def _check_header(path: Any, df: pd.DataFrame, kwargs: Mapping[str, Any],
                  source: str | None = None) -> None:
    """Refuse duplicated column names, which pandas silently renames (``E``, ``E.1``)."""
    if kwargs.get("names") is not None or kwargs.get("header", "infer") not in ("infer", 0):
        return
    if not isinstance(path, str | os.PathLike | io_module.BytesIO):
        return
    suspects = [c for c in df.columns if isinstance(c, str) and "." in c
                and c.rsplit(".", 1)[1].isdigit() and c.rsplit(".", 1)[0] in df.columns]
    if not suspects:
        return
    header_kwargs = {k: v for k, v in kwargs.items() if k in _HEADER_ONLY_KWARGS}
    if isinstance(path, io_module.BytesIO):  # a pipe's content, read once into memory
        path.seek(0)
    raw = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False,
                      **header_kwargs)
    names = [str(v) for v in raw.iloc[0].tolist()] if len(raw) else []
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        shown = source or ("<pipe>" if isinstance(path, io_module.BytesIO) else os.fspath(path))
        raise ValueError(f"{shown}: duplicated column names: {', '.join(duplicated)} "
                         "(pandas would rename the second one); give each column a name")

