"""The automatic block length of the block bootstraps (Politis & White 2004, with the
correction of Patton, Politis & White 2009).

For a series ``x`` of ``n`` values (in their order: time, a line of a grid), with
autocovariances ``γ_k = n⁻¹ Σ (x_i - x̄)(x_{i-k} - x̄)``:

- the bandwidth ``m`` is twice the first lag after which ``k_n = max(5, ⌊log10 n⌋)``
  consecutive autocorrelations lie inside ``±2 √(log10 n / n)`` (at least 2), and at most
  ``⌈√n⌉ + k_n``;
- with the flat-top window ``h(t) = min(1, 2 (1 - |t|))``, ``G = Σ_{k=-m}^{m} h(k/m) |k| γ_k``
  and the long-run variance ``σ² = Σ_{k=-m}^{m} h(k/m) γ_k``;
- ``b = (2 G² / d)^{1/3} n^{1/3}`` with ``d = 2 σ⁴`` (stationary bootstrap) or
  ``d = (4/3) σ⁴`` (circular block bootstrap), at most ``⌈min(3 √n, n / 3)⌉``.

The tuning (the band, ``k_n``, the largest ``m`` and ``b``, the autocorrelation of lag ``k`` as
the cross-product over the product of the two sums of squares) is that of
``arch.bootstrap.optimal_block_length``, whose answers the tests reproduce.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["long_run_variance", "optimal_block_length"]


def _bandwidth_and_autocovariances(x: np.ndarray) -> tuple[int, np.ndarray, int]:
    """Politis–White's bandwidth ``m``, the autocovariances up to the largest one, and the
    largest block length (see the module)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size < 10 or not np.isfinite(x).all():
        raise ValueError(f"x: expected a series of at least 10 finite values, got shape "
                         f"{x.shape}" + ("" if np.isfinite(x).all() else " with NaN or inf"))
    n = x.size
    eps = x - x.mean()
    b_max = math.ceil(min(3.0 * math.sqrt(n), n / 3.0))
    k_n = max(5, int(math.log10(n)))
    m_max = math.ceil(math.sqrt(n)) + k_n
    band = 2.0 * math.sqrt(math.log10(n) / n)
    acv = np.zeros(m_max + 1)
    inside = np.zeros(m_max + 1, dtype=bool)
    first_m = None
    for k in range(m_max + 1):
        cross = float(eps[k:] @ eps[:n - k])
        acv[k] = cross / n
        # the correlation of lag k as arch computes it (sums of squares one lag apart)
        ahead, behind = eps[k + 1:], eps[:-(k + 1)]
        inside[k] = abs(cross) / math.sqrt(float(ahead @ ahead) * float(behind @ behind)) < band
        if k >= k_n and first_m is None and inside[k - k_n:k].all():
            first_m = k - k_n
    m = min(2 * max(first_m, 1) if first_m is not None else m_max, m_max)
    return m, acv, b_max


def _window(m: int) -> tuple[np.ndarray, np.ndarray]:
    lags = np.arange(1, m + 1)
    return lags, np.where(lags / m <= 0.5, 1.0, 2.0 * (1.0 - lags / m))


def long_run_variance(x: np.ndarray) -> float:
    """The long-run variance ``σ² = Σ_{k=-m}^{m} h(k/m) γ_k`` of a series (flat-top window,
    Politis–White's bandwidth ``m``; see the module): ``n`` times the variance of its mean.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(size=5000)
    >>> bool(0.8 < long_run_variance(x) < 1.2)  # white noise: its variance
    True
    """
    m, acv, _ = _bandwidth_and_autocovariances(x)
    window = _window(m)[1]
    return float(acv[0] + np.sum(2.0 * window * acv[1:m + 1]))


def optimal_block_length(x: np.ndarray) -> tuple[float, float]:
    """The optimal block lengths of a series for the stationary and the circular block
    bootstraps (see the module).

    Parameters
    ----------
    x : array (n,)
        The series, in its order; at least 10 finite values.

    Returns
    -------
    stationary, circular : float
        The mean block length of the stationary bootstrap and the block length of the
        circular (or moving) block bootstrap.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> e = rng.normal(size=2000)
    >>> ar = np.empty(2000); ar[0] = e[0]
    >>> for i in range(1, 2000): ar[i] = 0.8 * ar[i - 1] + e[i]
    >>> stationary, circular = optimal_block_length(ar)
    >>> bool(10 < stationary < 60 and circular > stationary)
    True
    """
    m, acv, b_max = _bandwidth_and_autocovariances(x)
    n = np.asarray(x).size
    lags, window = _window(m)
    g = float(np.sum(2.0 * window * lags * acv[1:m + 1]))
    long_run = float(acv[0] + np.sum(2.0 * window * acv[1:m + 1]))
    scale = (2.0 * g**2) ** (1.0 / 3.0) * n ** (1.0 / 3.0)
    stationary = scale / (2.0 * long_run**2) ** (1.0 / 3.0)
    circular = scale / (4.0 / 3.0 * long_run**2) ** (1.0 / 3.0)
    return min(stationary, b_max), min(circular, b_max)
