"""Input-feature proxies from molecular formulas, and the rank-correlation matrix of a dataset.

For QM9-type data sets, the adaptivity analysis of METHODS §6 conditions on two input-feature
proxies computed from the molecular formula (``../shared/data/README.md``):

- ``X1``: the molecular mass in Da (atomic masses C 12.011, H 1.00794, N 14.0067, O 15.9994,
  F 18.9984, and B, Si, P, S, Cl, Se, Br, I: :data:`ATOMIC_MASSES`);
- ``X2``: the fraction of heteroatoms, ``1 - (n_C + n_H) / n_atoms`` (hydrogens are counted in
  ``n_atoms``).

Both are strongly stratified (few distinct values). :func:`from_formula` computes them (with the
element counts) from formulas, :func:`add_formula_features` adds them to an input dataset aligned
on its ``sample`` row numbers, and :func:`rank_correlation` gives the Spearman rank-correlation
matrix of the features, ``|E|`` and ``uE`` (METHODS §6).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from xuqcal._lazy import lazy_module
from xuqcal.analysis.lazy import analysis, template
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_sample_variables
from xuqcal.core import defaults
from xuqcal.core.checks import user_stacklevel
from xuqcal.core.provenance import provenance
from xuqcal.io import SAMPLE_DIM, by_role

_scipy_stats = lazy_module("scipy.stats")

__all__ = ["ATOMIC_MASSES", "FORMULA_FEATURES", "add_formula_features", "from_formula",
           "rank_correlation"]

#: Atomic masses (Da) of the elements allowed in a formula, in the order of the count variables:
#: C, H, N, O, F with the values of the shared data's README (the published QM9 features), then
#: the other elements of organic and materials data sets (IUPAC standard atomic weights of the
#: same tables, 2005). An element absent from a formula adds exactly 0 to its mass, so the masses
#: of C, H, N, O, F formulas do not depend on the elements listed after them.
ATOMIC_MASSES: dict[str, float] = {
    "C": 12.011,
    "H": 1.00794,
    "N": 14.0067,
    "O": 15.9994,
    "F": 18.9984,
    "B": 10.811,
    "Si": 28.0855,
    "P": 30.973762,
    "S": 32.065,
    "Cl": 35.453,
    "Se": 78.96,
    "Br": 79.904,
    "I": 126.90447,
}

#: Names of the variables made by :func:`from_formula`, in order.
FORMULA_FEATURES: tuple[str, ...] = (
    "X1", "X2", *(f"n_{element}" for element in ATOMIC_MASSES), "n_atoms"
)

_ELEMENTS = tuple(ATOMIC_MASSES)
# A symbol (capital letter, optional lower-case letter) and an optional count without a leading 0.
_TOKEN = re.compile(r"([A-Z][a-z]?)([1-9][0-9]*)?")
_FORMULA = re.compile(r"(?:[A-Z][a-z]?(?:[1-9][0-9]*)?)+")
_MAX_SHOWN = 5

_ATTRS: dict[str, dict[str, str]] = {
    "X1": {
        "long_name": "molecular mass",
        "units": "Da",
        "description": "sum of the atomic masses: "
        + ", ".join(f"{e} {m}" for e, m in ATOMIC_MASSES.items()),
    },
    "X2": {
        "long_name": "heteroatom fraction",
        "units": "1",
        "description": "1 - (n_C + n_H) / n_atoms (hydrogens counted in n_atoms)",
    },
    **{
        f"n_{e}": {"long_name": f"number of {e} atoms", "units": "1"} for e in ATOMIC_MASSES
    },
    "n_atoms": {"long_name": "number of atoms (hydrogens included)", "units": "1"},
}


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def _parse(formula: Any, row: Any) -> tuple[int, ...]:
    """Element counts (in the order of :data:`ATOMIC_MASSES`) of one formula, or a ValueError."""
    if not isinstance(formula, str):
        raise ValueError(
            f"formulas: row {row}: expected a formula string, got {formula!r} "
            f"({type(formula).__name__})"
        )
    text = formula.strip()
    if not _FORMULA.fullmatch(text):
        raise ValueError(
            f"formulas: row {row}: malformed formula {formula!r}; expected element symbols "
            f"({', '.join(_ELEMENTS)}) each followed by an optional count >= 1, e.g. 'C7H10O2'"
        )
    counts = dict.fromkeys(_ELEMENTS, 0)
    for symbol, count in _TOKEN.findall(text):
        if symbol not in counts:
            raise ValueError(
                f"formulas: row {row}: unknown element {symbol!r} in formula {formula!r}; "
                f"allowed elements: {', '.join(_ELEMENTS)}"
            )
        counts[symbol] += int(count) if count else 1
    return tuple(counts.values())


def _labelled(formulas: Any) -> tuple[np.ndarray, np.ndarray]:
    """Row labels (int64) and values (object array) of the formulas.

    A pandas Series with an integer index, or a DataArray over ``sample`` with a ``sample``
    coordinate, keeps its labels (which must be unique); anything else is labelled by position.
    """
    if isinstance(formulas, str | bytes):
        raise TypeError(
            "formulas: expected a sequence of formula strings (list, array, Series), got a "
            f"single {type(formulas).__name__}; wrap it in a list, e.g. [{formulas!r}]"
        )
    labels: np.ndarray | None = None
    if isinstance(formulas, pd.Series):
        values = formulas.to_numpy(dtype=object)
        index = formulas.index
        if pd.api.types.is_integer_dtype(index.dtype):
            labels = index.to_numpy(dtype=np.int64)
    elif isinstance(formulas, xr.DataArray):
        values = np.asarray(formulas.values, dtype=object)
        if formulas.dims == (SAMPLE_DIM,) and SAMPLE_DIM in formulas.coords:
            labels = np.asarray(formulas[SAMPLE_DIM].values, dtype=np.int64)
    else:
        values = np.asarray(formulas, dtype=object)
    if values.ndim != 1:
        raise ValueError(f"formulas: expected 1-D values, got an array of shape {values.shape}")
    if labels is None:
        labels = np.arange(values.shape[0], dtype=np.int64)
    if np.unique(labels).size != labels.size:
        raise ValueError(
            "formulas: the row numbers (index) are not unique; each row needs one formula"
        )
    return labels, values


def _features(values: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The feature arrays of :data:`FORMULA_FEATURES` for formulas ``values`` at ``rows``."""
    cache: dict[str, tuple[int, ...]] = {}
    counts = np.zeros((values.shape[0], len(_ELEMENTS)), dtype=np.int64)
    for i, (formula, row) in enumerate(zip(values, rows, strict=True)):
        key = formula if isinstance(formula, str) else None
        if key is None or key not in cache:
            parsed = _parse(formula, row)
            if key is not None:
                cache[key] = parsed
        else:
            parsed = cache[key]
        counts[i] = parsed
    n_atoms = counts.sum(axis=1)
    mass = np.zeros(values.shape[0])
    for j, element in enumerate(_ELEMENTS):  # a fixed order: equal formulas, equal masses
        mass += counts[:, j] * ATOMIC_MASSES[element]
    with np.errstate(invalid="ignore", divide="ignore"):
        hetero = 1.0 - (counts[:, 0] + counts[:, 1]) / n_atoms
    out = {"X1": mass, "X2": hetero}
    out.update({f"n_{e}": counts[:, j] for j, e in enumerate(_ELEMENTS)})
    out["n_atoms"] = n_atoms
    return out


def _sample_coord(rows: np.ndarray) -> xr.Variable:
    return xr.Variable(
        SAMPLE_DIM, np.asarray(rows, dtype=np.int64), {"long_name": "row number in the input"}
    )


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def from_formula(formulas: Sequence[str] | np.ndarray | pd.Series | xr.DataArray) -> xr.Dataset:
    """Mass, heteroatom fraction and element counts from molecular formulas.

    Parameters
    ----------
    formulas : sequence of str, array, pandas.Series or xarray.DataArray
        Formulas such as ``"C7H10O2"``: the elements of :data:`ATOMIC_MASSES` (C, H, N, O, F,
        B, Si, P, S, Cl, Se, Br, I), each followed by its count (omitted for 1; an element may
        appear more than once, its counts add up).
        Surrounding white space is ignored. A pandas Series with an integer index keeps its
        index as the row numbers (so a filtered ``DataFrame`` column keeps the original
        rows), as does a DataArray over ``sample`` with a ``sample`` coordinate; other inputs
        are numbered by position, 0 to n-1.

    Returns
    -------
    xarray.Dataset
        Over ``sample`` (the row numbers): ``X1`` (molecular mass, Da, float64), ``X2``
        (heteroatom fraction ``1 - (n_C + n_H) / n_atoms``, float64), the counts ``n_C n_H n_N
        n_O n_F n_B n_Si n_P n_S n_Cl n_Se n_Br n_I`` and ``n_atoms`` (int64), each with
        ``long_name`` and ``units``.

    Raises
    ------
    TypeError
        If ``formulas`` is a single string.
    ValueError
        For a malformed formula, an unknown element or a value that is not a string; the
        message names the row and the formula.

    Examples
    --------
    >>> f = from_formula(["H2O", "CH4", "C2H5NO2"])
    >>> f.X1.values.round(5).tolist()
    [18.01528, 16.04276, 75.0672]
    >>> f.X2.values.round(4).tolist()
    [0.3333, 0.0, 0.3]
    >>> from_formula(["CH3Cl"]).X2.values.round(4).tolist()
    [0.2]
    >>> from_formula(["CH4", "XeF2"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: formulas: row 1: unknown element 'Xe' in formula 'XeF2'; allowed elements: C, ...
    """
    rows, values = _labelled(formulas)
    features = _features(values, rows)
    return xr.Dataset(
        {name: xr.Variable(SAMPLE_DIM, data, dict(_ATTRS[name]))
         for name, data in features.items()},
        coords={SAMPLE_DIM: _sample_coord(rows)},
        attrs=provenance(source="molecular formulas"),
    )


def add_formula_features(
    ds: xr.Dataset,
    formulas: Sequence[str] | np.ndarray | pd.Series | xr.DataArray,
    *,
    overwrite: bool = False,
) -> xr.Dataset:
    """Add the formula features of :func:`from_formula` to a dataset, aligned on its rows.

    The formulas are matched to the data points by row number: the ``sample`` coordinate of
    ``ds`` holds the original row numbers of the source file, and ``formulas`` is indexed by the
    same row numbers (a list or array of all the rows of the file, or a Series indexed by row
    number, e.g. the ``formula`` column of the whole file). Rows removed from ``ds`` by a
    ``where`` filter are skipped, so a filtered dataset gets the right formulas; only the
    formulas of the rows of ``ds`` are parsed.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample``.
    formulas : sequence of str, array, pandas.Series or xarray.DataArray
        The formulas, labelled by row number as in :func:`from_formula`.
    overwrite : bool, default False
        Replace variables of ``ds`` that have the names of the new features. Without it, such a
        name clash is an error.

    Returns
    -------
    xarray.Dataset
        A new dataset: ``ds`` with the variables of :data:`FORMULA_FEATURES` (``X1 X2``, the
        element counts ``n_C ... n_I`` and ``n_atoms``).

    Raises
    ------
    ValueError
        If a row of ``ds`` has no formula, for a malformed formula or an unknown element (naming
        the row), or for a name clash without ``overwrite``.

    Examples
    --------
    >>> import xuqcal
    >>> formulas = ["H2O", "CH4", "C2H5NO2", "C7H10O2"]  # all the rows of the source
    >>> ds = xuqcal.from_arrays([0.1, -0.2, 0.3, 0.05], [0.2, 0.1, 0.3, 0.1])
    >>> kept = ds.isel(sample=[0, 2, 3])  # rows 0, 2 and 3 left after a filter
    >>> add_formula_features(kept, formulas).X1.values.round(3).tolist()
    [18.015, 75.067, 126.155]
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    if SAMPLE_DIM not in ds.dims:
        raise ValueError(f"ds: the dataset has no dimension '{SAMPLE_DIM}'")
    clash = [name for name in FORMULA_FEATURES if name in ds.variables]
    if clash and not overwrite:
        raise ValueError(
            f"ds: already has the variable(s) {', '.join(clash)}; pass overwrite=True to "
            "replace them"
        )
    if SAMPLE_DIM in ds.coords:
        wanted = np.asarray(ds[SAMPLE_DIM].values, dtype=np.int64)
    else:
        wanted = np.arange(ds.sizes[SAMPLE_DIM], dtype=np.int64)
    labels, values = _labelled(formulas)
    where = pd.Index(labels).get_indexer(wanted)
    missing = wanted[where < 0]
    if missing.size:
        shown = ", ".join(str(r) for r in missing[:_MAX_SHOWN])
        more = ", ..." if missing.size > _MAX_SHOWN else ""
        span = f"rows {labels.min()} to {labels.max()}" if labels.size else "no rows"
        raise ValueError(
            f"formulas: no formula for {missing.size} of the {wanted.size} rows of the dataset "
            f"(rows {shown}{more}); the formulas cover {span} and must be indexed by the "
            "original row numbers (the sample coordinate), e.g. the formula column of the "
            "whole source file"
        )
    features = _features(values[where], wanted)
    return ds.assign(
        {name: (SAMPLE_DIM, data, dict(_ATTRS[name])) for name, data in features.items()}
    )


@broadcast
@by_role
def rank_correlation(ds: xr.Dataset, variables: str | Sequence[str] | None = None, *,
                     E: str = defaults.E, uE: str = defaults.UE) -> xr.DataArray:
    """Spearman rank-correlation matrix of the features, ``|E|`` and ``uE`` (METHODS §6).

    Each variable is replaced by its ranks (tied values get the average of their ranks) and the
    matrix holds the Pearson correlations of the ranks, as computed by
    :func:`scipy.stats.spearmanr` (and R's ``cor(method = "spearman")``). The matrix is made
    exactly symmetric; its diagonal is 1. A constant variable has undefined correlations: its
    row and column are NaN (with a :class:`scipy.stats.ConstantInputWarning`), the other values
    are computed without it. Lazy on Dask-backed data (the values are checked, and the warning
    given, at compute time), computed otherwise.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E``, ``uE`` and the features.
    variables : str or sequence of str, optional
        The features (1-D over ``sample``, numeric or boolean). By default every data variable
        other than ``E`` and ``uE``. ``|E|`` and ``uE`` are always added, last.
    E, uE : str
        Names of the error and uncertainty variables (labelled ``|<E>|`` and ``<uE>``).

    Returns
    -------
    xarray.DataArray
        Named ``rank_correlation``, dimensions ``variable`` and ``variable2`` with the same
        coordinate values, e.g. ``["X1", "X2", "|E|", "uE"]``.

    Raises
    ------
    ValueError
        For an unknown or repeated variable, ``E``, ``uE`` or ``|E|`` among ``variables``, a
        variable that is not 1-D over ``sample``, non-finite values or fewer than 2 points.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.from_arrays([0.1, -0.4, 0.2, 0.9], [0.1, 0.3, 0.2, 0.8], X=[1, 2, 3, 4])
    >>> r = rank_correlation(ds)
    >>> r["variable"].values.tolist()
    ['X', '|E|', 'uE']
    >>> r.values.round(2).tolist()
    [[1.0, 0.8, 0.8], [0.8, 1.0, 1.0], [0.8, 1.0, 1.0]]
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    abs_e = f"|{E}|"
    if variables is None:
        names = [str(v) for v in ds.data_vars if v not in (E, uE)]
    elif isinstance(variables, str):
        names = [variables]
    elif isinstance(variables, Iterable) and all(isinstance(v, str) for v in variables):
        names = [str(v) for v in variables]
    else:
        raise ValueError(f"variables: expected a variable name or a list of names, got "
                         f"{variables!r}")
    for name in names:
        if name in (E, uE, abs_e):
            raise ValueError(
                f"variables: {name!r} cannot be a feature; {abs_e} and {uE} are always included"
            )
        if name not in ds.variables or name == SAMPLE_DIM:
            available = [str(v) for v in ds.data_vars if v not in (E, uE)]
            raise ValueError(
                f"variables: unknown variable {name!r}; available features: "
                f"{', '.join(available) or '(none)'}"
            )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"variables: repeated variable(s) {', '.join(repeated)}")
    for role, name in (("E", E), ("uE", uE)):
        if not isinstance(name, str) or name not in ds.variables:
            raise ValueError(f"{role}: the dataset has no variable {name!r}")
    if ds.sizes.get(SAMPLE_DIM, 0) < 2:  # before any data are read
        raise ValueError(f"ds: rank correlations need at least 2 points, got "
                         f"{ds.sizes.get(SAMPLE_DIM, 0)}")
    check_sample_variables(ds, [*names, E, uE])  # dimensions and dtypes: no data read
    m = ds.sizes[SAMPLE_DIM]
    labels = [*names, abs_e, uE]
    layout = template(
        {"rank_correlation": (("variable", "variable2"), np.float64, _RANK_ATTRS)},
        {"variable": len(labels), "variable2": len(labels)},
        {"variable": labels, "variable2": labels},
        attrs=provenance(n_samples=m, E=E, uE=uE))
    variables = list(dict.fromkeys([*names, E, uE]))
    result = analysis(_rank_body, ds, variables, lambda: layout, features=names, E=E, uE=uE)
    out = result["rank_correlation"]
    out.attrs = {**_RANK_ATTRS, **result.attrs}
    return out


_RANK_ATTRS = {
    "long_name": "Spearman rank correlation",
    "units": "1",
    "method": "Spearman: Pearson correlation of the ranks, ties given their average rank "
              "(scipy.stats.spearmanr); |E| is the absolute error",
}


def _rank_body(data: xr.Dataset, *, features: list[str], E: str, uE: str) -> xr.Dataset:
    """:func:`rank_correlation` on NumPy-backed data (the checks of values run here)."""
    names = features
    columns: list[np.ndarray] = []
    for name in [*names, E, uE]:
        values = np.asarray(data[name].values).astype(np.float64)
        bad = int(np.count_nonzero(~np.isfinite(values)))
        if bad:
            raise ValueError(
                f"{name}: {bad} of {values.size} values are NaN or infinite; rank correlations "
                "need finite values"
            )
        columns.append(np.abs(values) if name == E else values)
    labels = [*names, f"|{E}|", uE]
    # SciPy gives a single NaN when any column is constant: correlate the others only.
    varying = [i for i, c in enumerate(columns) if np.ptp(c) > 0]
    if len(varying) < len(columns):
        constant = [labels[i] for i in range(len(columns)) if i not in varying]
        warnings.warn(
            f"rank_correlation: {', '.join(constant)} is constant; its correlations are NaN",
            _scipy_stats.ConstantInputWarning,
            stacklevel=user_stacklevel(),
        )
    matrix = np.full((len(labels), len(labels)), np.nan)
    if len(varying) >= 2:
        statistic = _scipy_stats.spearmanr(
            np.column_stack([columns[i] for i in varying]), axis=0
        ).statistic
        if np.ndim(statistic) == 0:  # two variables: SciPy returns the coefficient alone
            statistic = np.array([[1.0, statistic], [statistic, 1.0]])
        matrix[np.ix_(varying, varying)] = statistic
    matrix = 0.5 * (matrix + matrix.T)  # exactly symmetric
    matrix[varying, varying] = 1.0
    return xr.Dataset({"rank_correlation": (("variable", "variable2"), matrix)},
                      coords={"variable": labels, "variable2": labels})
