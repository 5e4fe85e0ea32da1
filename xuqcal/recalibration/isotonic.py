"""Isotonic recalibration: a monotone non-decreasing variance map ``uE² -> E²`` (see
:mod:`xuqcal.recalibration`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from xuqcal._lazy import lazy_module
from xuqcal.core.statistics import STATISTICS

optimize = lazy_module("scipy.optimize")


def fit_isotonic(E: np.ndarray, uE: np.ndarray, attrs: dict[str, Any]) -> xr.Dataset:
    """The isotonic recalibrator of the training errors ``E`` and uncertainties ``uE``: the
    monotone map ``uE² -> E²`` (see :func:`xuqcal.recalibration.fit`); ``attrs`` are its
    attributes so far."""
    with np.errstate(over="ignore", under="ignore"):
        squares_ok = bool(np.all(np.isfinite(E * E)) and np.all((uE * uE) > 0)
                          and np.all(np.isfinite(uE * uE)))
    if not squares_ok:  # the variance map is stored in units of uE²: no rescaling possible
        raise ValueError("uE: the isotonic variance map needs E² and uE² inside the float64 "
                         "range (|E| and uE from about 1e-154 to 1e154); rescale the data")
    u2 = uE * uE
    order = np.argsort(u2, kind="stable")
    x_sorted, y_sorted = u2[order], (E * E)[order]
    x, start, counts = np.unique(x_sorted, return_index=True, return_counts=True)
    y = np.add.reduceat(y_sorted, start) / counts
    result = optimize.isotonic_regression(y, weights=counts.astype(np.float64), increasing=True)
    fitted = np.asarray(result.x, dtype=np.float64)
    blocks = np.asarray(result.blocks, dtype=np.int64)
    keep = np.unique(np.concatenate([blocks[:-1], blocks[1:] - 1]))
    knots_x, knots_y = x[keep], fitted[keep]
    positive = knots_y > 0
    if not positive.any():
        raise ValueError("E: every training error is zero; the isotonic variance map would be "
                         "zero everywhere")
    floored = int((~positive).sum())
    knots_y = np.where(positive, knots_y, knots_y[positive].min())
    variance = np.interp(u2, knots_x, knots_y)
    nll = float(STATISTICS["nll"].from_sums({"count": E.size, "z2": np.sum(E * E / variance),
                                             "lnu2": np.sum(np.log(variance))}))
    attrs.update(
        n_blocks=int(blocks.size - 1), knots_floored=floored, loss_value=nll,
        ties="points with equal uE² are pooled (mean E², weight = count) before the fit",
        interpolation="linear in uE², constant beyond the first and last knots",
        nonpositive_variances="raised to the smallest positive fitted variance",
    )
    return xr.Dataset(
        {"knot_variance_in": ("knot", knots_x, {"long_name": "uE² at the knot"}),
         "knot_variance_out": ("knot", knots_y, {"long_name": "fitted E² (recalibrated uE²)"})},
        coords={"knot": np.arange(knots_x.size)}, attrs=attrs,
    )


