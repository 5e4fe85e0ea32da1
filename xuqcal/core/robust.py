"""Covariance of column means under dependence: cluster-robust and HAC (Newey–West), in NumPy.

The reference implementations of the intervals ``se="cluster"`` and ``se="hac"`` of
:func:`xuqcal.reduce_statistics` (which computes the same quantities out of core, from exact
chunk-wise sums). For ``n`` points with per-point values ``q_i`` (a row of ``k`` columns),
means ``q̄`` and residuals ``r_i = q_i - q̄``, the covariance of the ``k`` means is the sandwich
``V = S / n²`` with:

* **cluster-robust** (Liang & Zeger 1986; CRV1 of Cameron & Miller 2015), ``G`` groups:
  ``S = c Σ_g (Σ_{i∈g} r_i)(Σ_{i∈g} r_i)ᵀ`` with the small-sample factor
  ``c = G / (G - 1) · (n - 1) / (n - K)``, ``K = 1`` (one mean per column): ``c = G/(G-1)``.
  It is statsmodels' default (``use_correction=True``): the standard error of a mean equals
  ``sm.OLS(x, np.ones(n)).fit(cov_type="cluster", cov_kwds={"groups": g}).bse[0]``.
  Intervals use Student's ``t`` with ``G - 1`` degrees of freedom (statsmodels'
  ``df_resid_inference`` of a cluster fit with ``use_t=True``).
* **HAC** (Newey & West 1987), in the order of the rows, ``L`` lags, Bartlett weights
  ``w_l = 1 - l / (L + 1)``: ``S = Γ_0 + Σ_{l=1}^{L} w_l (Γ_l + Γ_lᵀ)`` with
  ``Γ_l = Σ_{t=l}^{n-1} r_t r_{t-l}ᵀ``; no small-sample factor (statsmodels' default
  ``use_correction=False``): the standard error of a mean equals
  ``sm.OLS(x, np.ones(n)).fit(cov_type="HAC", cov_kwds={"maxlags": L}).bse[0]``. The default
  number of lags is the rule ``floor(4 (n / 100)^(2/9))`` (Newey & West 1994; the default of
  statsmodels' ``sandwich_covariance.cov_hac``; :func:`newey_west_lags`).

``L = 0`` gives the heteroscedasticity-robust (HC0) covariance ``Σ r_i r_iᵀ / n²``, i.e. the
iid variance of a mean with denominator ``n`` instead of ``n - 1``.

References
----------
Liang, K.-Y. & Zeger, S. L. (1986). Longitudinal data analysis using generalized linear
models. *Biometrika* 73, 13–22.
Cameron, A. C. & Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
*J. Human Resources* 50, 317–372.
Newey, W. K. & West, K. D. (1987). A simple, positive semi-definite, heteroskedasticity and
autocorrelation consistent covariance matrix. *Econometrica* 55, 703–708.
Newey, W. K. & West, K. D. (1994). Automatic lag selection in covariance matrix estimation.
*Rev. Econ. Studies* 61, 631–653.
"""

from __future__ import annotations

import numpy as np

__all__ = ["cluster_correction", "cluster_robust_cov", "hac_cov", "newey_west_lags"]


def _values(values: object) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, np.newaxis]
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"values: expected an (n, k) array with n >= 2, got shape {x.shape}")
    return x


def newey_west_lags(n_points: int) -> int:
    """The default number of lags ``floor(4 (n / 100)^(2/9))`` for ``n = n_points`` (Newey &
    West 1994; the default of statsmodels' ``cov_hac``), at most ``n - 1``.

    Examples
    --------
    >>> newey_west_lags(100), newey_west_lags(5000), newey_west_lags(10**6)
    (4, 9, 30)
    """
    return max(0, min(int(np.floor(4.0 * (n_points / 100.0) ** (2.0 / 9.0))), n_points - 1))


def cluster_correction(n_groups: int | np.ndarray, n_points: int | np.ndarray) -> np.ndarray:
    """The small-sample factor ``G / (G - 1) · (n - 1) / (n - K)`` (``G = n_groups``,
    ``n = n_points``) with ``K = 1``, i.e.
    ``G / (G - 1)`` (statsmodels' ``use_correction=True``).

    Examples
    --------
    >>> float(cluster_correction(10, 500))
    1.1111111111111112
    """
    g = np.asarray(n_groups, dtype=np.float64)
    m = np.asarray(n_points, dtype=np.float64)
    return g / (g - 1.0) * ((m - 1.0) / (m - 1.0))


def cluster_robust_cov(values: object, groups: object) -> np.ndarray:
    """Cluster-robust (CRV1) covariance of the column means of ``values``.

    Parameters
    ----------
    values : array (n,) or (n, k)
        Per-point values (one column per mean).
    groups : array (n,)
        The group of each point (any labels that :func:`numpy.unique` sorts); at least 2.

    Returns
    -------
    numpy.ndarray (k, k)
        ``c / n² Σ_g s_g s_gᵀ``, ``s_g`` the sum of the residuals of group ``g`` and
        ``c = G / (G - 1)`` (see the module docstring).

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 3.0, 4.0, 6.0, 8.0])
    >>> g = np.array([0, 0, 1, 1, 2, 2])
    >>> round(float(np.sqrt(cluster_robust_cov(x, g)[0, 0])), 12)  # statsmodels' bse
    1.607275126832
    """
    x = _values(values)
    labels = np.asarray(groups)
    if labels.shape != (x.shape[0],):
        raise ValueError(f"groups: expected {x.shape[0]} labels, got shape {labels.shape}")
    uniques, codes = np.unique(labels, return_inverse=True)
    if uniques.size < 2:
        raise ValueError(f"groups: a cluster-robust covariance needs at least 2 groups, got "
                         f"{uniques.size}")
    n = x.shape[0]
    residuals = x - x.mean(axis=0)
    sums = np.zeros((uniques.size, x.shape[1]))
    np.add.at(sums, codes.ravel(), residuals)
    return cluster_correction(uniques.size, n) * (sums.T @ sums) / (n * n)


def hac_cov(values: object, lags: int | None = None) -> np.ndarray:
    """Newey–West (Bartlett kernel) HAC covariance of the column means of ``values``, in the
    order of the rows.

    Parameters
    ----------
    values : array (n,) or (n, k)
        Per-point values in their order (time, position along a line, ...).
    lags : int, optional
        Number of lags ``L``, ``0 <= L < n``. Default :func:`newey_west_lags` ``(n)``.

    Returns
    -------
    numpy.ndarray (k, k)
        ``(Γ_0 + Σ_{l=1}^{L} (1 - l / (L + 1)) (Γ_l + Γ_lᵀ)) / n²`` (no small-sample factor;
        see the module docstring).

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 3.0, 4.0, 6.0, 8.0])
    >>> round(float(np.sqrt(hac_cov(x, 1)[0, 0])), 12)  # statsmodels' bse, maxlags=1
    1.178511301978
    """
    x = _values(values)
    n = x.shape[0]
    if lags is None:
        lags = newey_west_lags(n)
    if isinstance(lags, bool) or not isinstance(lags, (int, np.integer)) or not 0 <= lags < n:
        raise ValueError(f"lags: expected an integer 0 <= lags < {n} (the points), got {lags!r}")
    r = x - x.mean(axis=0)
    s = r.T @ r
    for lag in range(1, int(lags) + 1):
        gamma = r[lag:].T @ r[:-lag]
        s = s + (1.0 - lag / (lags + 1.0)) * (gamma + gamma.T)
    return s / (n * n)
