"""Modules imported on first use, to keep ``import xuqcal`` short.

``scipy.stats`` costs about as much to import as xarray and dask together; most sessions that
import xuqcal (``xuqcal --help``, a script that reads a file) never call it. A module that uses
it holds a :class:`LazyModule` in its place::

    stats = lazy_module("scipy.stats")   # instead of: from scipy import stats

and ``stats.t.ppf(...)`` imports ``scipy.stats`` on the first attribute looked up, then reads the
attribute from the real module. Nothing is put in :data:`sys.modules` before that first use.
"""

from __future__ import annotations

import importlib
import types


class LazyModule:
    """Stands for the module ``name`` and imports it when an attribute is first read.

    Parameters
    ----------
    name : str
        Absolute name of the module, e.g. ``"scipy.stats"``.
    """

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: types.ModuleType | None = None

    def _load(self) -> types.ModuleType:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return self._module

    def __getattr__(self, attr: str):
        return getattr(self._load(), attr)

    def __dir__(self) -> list[str]:
        return dir(self._load())

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded yet"
        return f"<lazy module {self._name!r} ({state})>"


def lazy_module(name: str) -> LazyModule:
    """The module ``name``, imported when one of its attributes is first read.

    Parameters
    ----------
    name : str
        Absolute name of the module.

    Returns
    -------
    LazyModule
        A stand-in whose attributes are those of the module.

    Examples
    --------
    >>> from xuqcal._lazy import lazy_module
    >>> math = lazy_module("math")
    >>> math.sqrt(4.0)
    2.0
    """
    return LazyModule(name)
