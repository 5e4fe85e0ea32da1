"""Straightforward NumPy/SciPy definitions of the statistics (METHODS §2), for cross-checks."""

from __future__ import annotations

import numpy as np
from scipy import stats


def naive_statistics(E: np.ndarray, uE: np.ndarray, n_bins: int, by=None) -> dict[str, float]:
    """Every registry statistic computed the obvious way (stable sort, equal-count bins)."""
    Z = E / uE
    order = np.argsort(uE if by is None else by, kind="stable")
    m = len(E)
    bounds = (np.arange(n_bins + 1) * m) // n_bins
    ence = uce = zmse = 0.0
    for b in range(n_bins):
        members = order[bounds[b]:bounds[b + 1]]
        mv = np.mean(uE[members] ** 2)
        mse = np.mean(E[members] ** 2)
        ence += abs(np.sqrt(mv) - np.sqrt(mse)) / np.sqrt(mv)
        uce += abs(mv - mse)
        zmse += abs(np.log(np.mean(Z[members] ** 2)))
    rmv = np.sqrt(np.mean(uE**2))
    rmse = np.sqrt(np.mean(E**2))
    return {
        "mse": np.mean(E**2), "rmse": rmse, "mv": np.mean(uE**2), "rmv": rmv,
        "zm": np.mean(Z), "zms": np.mean(Z**2), "zv": np.var(Z, ddof=1),
        "zisd": np.divide(1.0, np.std(Z, ddof=1)) if np.std(Z, ddof=1) else np.inf,
        "rce": (rmv - rmse) / rmv,
        "nll": 0.5 * (np.mean(Z**2) + np.mean(np.log(uE**2)) + np.log(2 * np.pi)),
        "cc": stats.spearmanr(np.abs(E), uE).statistic,
        "ence": ence / n_bins, "uce": uce / n_bins, "zmse": zmse / n_bins,
    }
