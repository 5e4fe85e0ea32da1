"""Shared helpers of the figures."""

from __future__ import annotations

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
