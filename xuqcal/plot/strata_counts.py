"""Counts of the strata of a stratified variable before and after merging the small ones
(:func:`xuqcal.merge_strata`, ErrViewLib's ``stratAgg``)."""

from __future__ import annotations

import numpy as np
import xarray as xr


def strata(merged: xr.Dataset, name: str, ax=None):
    """Points per distinct value of the original variable (grey bars) and per merged stratum
    (coloured bars, at the merged values), with the ``min_count`` line.

    Parameters
    ----------
    merged : xarray.Dataset
        Output of :func:`xuqcal.merge_strata`.
    name : str
        The merged variable (``"<by>_merged"`` unless ``name=`` was given).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.from_arrays(np.ones(14), np.ones(14))
    >>> ds = ds.assign(n=("sample", [1.0] * 5 + [2.0] + [3.0] * 2 + [4.0] * 6))
    >>> ax = strata(xuqcal.merge_strata(ds, "n", min_count=3), "n_merged")
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('n', 'points per stratum')
    """
    from xuqcal.plot._common import axes, require

    require(merged, (name, f"{name}_value", f"{name}_count"), "xuqcal.merge_strata", "merged")
    source = merged[name].attrs.get("source")
    if source is None or source not in merged.variables:
        raise ValueError(f"name: {name!r} does not name its source variable (attribute "
                         "'source' of xuqcal.merge_strata)")
    ax = axes(ax)
    distinct, counts = np.unique(np.asarray(merged[source].values, dtype=np.float64),
                                 return_counts=True)
    values = np.asarray(merged[f"{name}_value"].values)
    merged_counts = np.asarray(merged[f"{name}_count"].values)
    span = float(np.ptp(distinct)) if distinct.size > 1 else 1.0
    width = 0.8 * (float(np.min(np.diff(distinct))) if distinct.size > 1 else span)
    ax.bar(distinct, counts, width=width, color="0.75", label=f"{source} (original strata)")
    ax.bar(values, merged_counts, width=0.5 * width, color="tab:blue",
           label="merged strata (at the merged value)")
    min_count = merged[name].attrs.get("min_count")
    if min_count is not None:
        ax.axhline(float(min_count), ls="--", color="tab:red", lw=1,
                   label=f"min_count = {min_count}")
    ax.set_xlabel(str(source))
    ax.set_ylabel("points per stratum")
    ax.set_title(f"Strata of {source}: {distinct.size} → {values.size} "
                 f"({merged[name].attrs.get('rule', '')})")
    ax.legend(fontsize="small")
    return ax
