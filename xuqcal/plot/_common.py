"""Shared helpers of the figures."""

from __future__ import annotations

import numpy as np

#: One colour and marker per scheme family; Sim2 schemes are drawn with open markers.
SCHEME_STYLE = {"BS": ("black", "o"), "Sim": ("tab:blue", "s"), "Sim2": ("tab:orange", "D")}
GENERATOR_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


def axes(ax=None, *, figsize=(8, 4)):
    """``ax`` itself, or the Axes of a new figure (constrained layout)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def require(result, variables, producer: str, name: str = "result") -> None:
    """Refuse, with a ValueError naming ``name``, anything but a Dataset holding ``variables``
    (the output of ``producer``): a wrong object used to end in AttributeError or KeyError
    deep inside matplotlib code.

    Examples
    --------
    >>> import xarray as xr
    >>> require(xr.Dataset(), ("zeta",), "xuqcal.validate")
    Traceback (most recent call last):
    ValueError: result: expected the output of xuqcal.validate (a Dataset with zeta), got a \
Dataset without zeta
    """
    import xarray as xr

    if not isinstance(result, xr.Dataset):
        raise ValueError(f"{name}: expected the output of {producer} (a Dataset with "
                         f"{', '.join(variables)}), got {type(result).__name__}")
    missing = [v for v in variables if v not in result.variables]
    if missing:
        raise ValueError(f"{name}: expected the output of {producer} (a Dataset with "
                         f"{', '.join(variables)}), got a Dataset without {', '.join(missing)}")



def error_bars(value, low, high) -> np.ndarray:
    """``yerr`` of :meth:`matplotlib.axes.Axes.errorbar` for intervals ``[low, high]`` around
    ``value``: the distances to the bounds, never negative. A bound equal to the value up to
    rounding (a degenerate interval of constant data), or an estimate outside its own interval
    (which the results flag), would otherwise make matplotlib refuse the whole figure. NaN
    bounds stay NaN (no bar).

    Examples
    --------
    >>> error_bars([0.36], [0.36 + 1e-16], [0.5]).round(2).tolist()
    [[0.0], [0.14]]
    """
    value, low, high = (np.asarray(v, dtype=np.float64) for v in (value, low, high))
    return np.stack([np.maximum(value - low, 0.0), np.maximum(high - value, 0.0)])
