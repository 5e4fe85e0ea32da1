"""Analytic intervals of the moment statistics from exact column sums (METHODS §4).

The one place of the interval formulas of :func:`xuqcal.reduce_statistics`. Each interval is a
function of sums over the points: the sums of :data:`xuqcal.core.kernels.COLUMNS` (which also
give the estimates, through :meth:`xuqcal.core.statistics.Statistic.from_sums`) and the sums of
the products of :data:`PRODUCT_COLUMNS`. With ``M`` points, level ``ℓ``, ``t = t_{(1+ℓ)/2, M-1}``
and ``z = Φ⁻¹((1+ℓ)/2)``:

* **Student interval of a mean** ``<q> ± t s_q / √M`` (``s_q²`` the sample variance of ``q``,
  denominator ``M - 1``): ``mse`` (q = E²), ``mv`` (q = uE²), ``zm`` (q = Z), ``zms`` (q = Z²)
  and ``nll`` (q = ½ (Z² + ln uE² + ln 2π), so ``s_q² = ¼ (s_{Z²}² + s_{ln uE²}² +
  2 c_{Z², ln uE²})``).
* **Delta-method normal intervals** ``θ ± z SE``:

  - ``rmse = √a`` with ``a = <E²>``: ``SE = rmse · s_{E²} / (2 a √M)``; ``rmv`` alike with uE²;
  - ``rce = 1 - √(a / b)`` with ``a = <E²>``, ``b = <uE²>``:
    ``SE² = (1 - rce)² / (4 M) · (s_aa / a² + s_bb / b² - 2 s_ab / (a b))`` where ``s_aa``,
    ``s_bb``, ``s_ab`` are the sample (co)variances of E² and uE²;
  - ``zv = s² = Σ (Z - Z̄)² / (M - 1)``: ``SE² = (m4 - m2² (M - 3) / (M - 1)) / M`` with the
    central moments ``m_k = Σ (Z - Z̄)^k / M`` (Cho's variance of the sample variance,
    ``Var(s²) = (μ4 - σ⁴ (M - 3)/(M - 1)) / M``, with ErrViewLib's plug-in moments:
    :func:`variance_of_sample_variance`). The central sums come
    from the sums of ``d = Z - c`` (``c`` any constant, ``δ = Σd / M``):
    ``Σ (Z - Z̄)² = Σd² - δ Σd`` and
    ``Σ (Z - Z̄)⁴ = Σd⁴ - 4 δ Σd³ + 6 δ² Σd² - 3 M δ⁴``.

Products of per-point quantities are summed on quantities divided by powers of two
(``q 2^-j`` with ``|q| < 2^j`` for every point, :func:`normalizing_exponent`), so that fourth
powers never overflow; the intervals are computed in those units and scaled back exactly.

**Intervals from a covariance of means** (:func:`covariance_interval`, used by the
cluster-robust and HAC intervals of :func:`xuqcal.reduce_statistics`, :mod:`xuqcal.core.robust`):
every moment statistic is a function ``f`` of the means of a few per-point columns
(:data:`MEAN_COLUMNS`), and ``SE² = ∇fᵀ V ∇f`` with ``V`` the covariance of those means (the
delta method; for a mean, ``∇f = 1``). The gradients (:func:`mean_gradient`): ``mse``, ``mv``,
``zm``, ``zms``: 1; ``rmse = √a``: ``1 / (2 √a)``; ``nll = ½ (<Z²> + <ln uE²> + ln 2π)``:
(½, ½); ``rce = 1 - √(a/b)``: ``(-(1 - rce) / (2a), (1 - rce) / (2b))``; ``zv = M/(M-1)
(<d²> - <d>²)`` (``d = Z - c``): ``M/(M-1) (-2 <d>, 1)``. The Student quantile (means) takes
the degrees of freedom of the covariance (``M - 1``, or ``G - 1`` for clusters), the delta
intervals the normal quantile. With the iid ``V`` (sample covariance / M) these are the
formulas above, which :func:`analytic_interval` keeps in their own arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy import special

from xuqcal._lazy import lazy_module
from xuqcal.core.checks import check_level

stats = lazy_module("scipy.stats")

#: The quantities whose products the intervals sum: name -> (the two normalized factors).
#: ``e2``, ``u2``, ``z2``, ``lnu2`` and ``zd`` are the columns of
#: :data:`xuqcal.core.kernels.COLUMNS` divided by ``2^j`` of their normalizing exponent.
PRODUCT_COLUMNS: dict[str, tuple[str, ...]] = {
    "e2e2": ("e2", "e2"),
    "u2u2": ("u2", "u2"),
    "e2u2": ("e2", "u2"),
    "z2z2": ("z2", "z2"),
    "lnu2lnu2": ("lnu2", "lnu2"),
    "z2lnu2": ("z2", "lnu2"),
    "zd3": ("zd", "zd", "zd"),
    "zd4": ("zd", "zd", "zd", "zd"),
}

#: How each moment statistic's interval is computed, and the column sums it needs besides the
#: statistic's own :attr:`~xuqcal.core.statistics.Statistic.columns`.
INTERVALS: dict[str, tuple[str, tuple[str, ...]]] = {
    "mse": ("student", ("e2", "e2e2")),
    "mv": ("student", ("u2", "u2u2")),
    "zm": ("student", ("zd", "zd2")),
    "zms": ("student", ("z2", "z2z2")),
    "nll": ("student", ("z2", "lnu2", "z2z2", "lnu2lnu2", "z2lnu2")),
    "rmse": ("delta", ("e2", "e2e2")),
    "rmv": ("delta", ("u2", "u2u2")),
    "rce": ("delta", ("e2", "u2", "e2e2", "u2u2", "e2u2")),
    "zv": ("delta", ("zd", "zd2", "zd3", "zd4")),
    "zisd": ("delta", ("zd", "zd2", "zd3", "zd4")),
}

#: The quantities that are normalized by a power of two before their products are summed.
NORMALIZED = ("e2", "u2", "z2", "lnu2", "zd")


def interval_method(key: str) -> str:
    """``"student"``, ``"delta"`` or ``"none"`` (no analytic interval: the binned statistics).

    Examples
    --------
    >>> interval_method("zms"), interval_method("rce"), interval_method("ence")
    ('student', 'delta', 'none')
    """
    return INTERVALS[key][0] if key in INTERVALS else "none"


def needed_columns(keys: Sequence[str]) -> tuple[str, ...]:
    """The column sums the intervals of ``keys`` need (base columns and products), in a fixed
    order.

    Examples
    --------
    >>> needed_columns(["zms", "rce"])
    ('e2', 'u2', 'z2', 'e2e2', 'u2u2', 'e2u2', 'z2z2')
    """
    wanted = {c for k in keys if k in INTERVALS for c in INTERVALS[k][1]}
    order = ("e2", "u2", "z2", "lnu2", "zd", "zd2", *PRODUCT_COLUMNS)
    return tuple(c for c in order if c in wanted)


def normalizing_exponent(bound: np.ndarray) -> np.ndarray:
    """The exponent ``j`` (an integer array) with ``|q| < 2^j`` for ``|q| <= bound``
    (``0`` for a zero bound).

    Examples
    --------
    >>> normalizing_exponent(np.array([0.0, 1.0, 3.0, 1e300])).tolist()
    [0, 1, 2, 997]
    """
    return np.frexp(np.asarray(bound, dtype=np.float64))[1].astype(np.int64)


def product_values(columns: Mapping[str, np.ndarray], names: Sequence[str],
                   exponents: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The per-point products ``names`` of :data:`PRODUCT_COLUMNS` from the per-point
    ``columns`` (arrays over rows × points) and the normalizing ``exponents`` of each
    quantity (arrays over the rows).

    Examples
    --------
    >>> cols = {"z2": np.array([[4.0, 1.0]])}
    >>> product_values(cols, ["z2z2"], {"z2": np.array([3])})["z2z2"].tolist()
    [[0.25, 0.015625]]
    """
    scaled: dict[str, np.ndarray] = {}

    def normalized(name: str) -> np.ndarray:
        if name not in scaled:
            scaled[name] = np.ldexp(columns[name], -np.asarray(exponents[name])[:, np.newaxis])
        return scaled[name]

    out = {}
    for name in names:
        factors = [normalized(f) for f in PRODUCT_COLUMNS[name]]
        value = factors[0]
        for factor in factors[1:]:
            value = value * factor
        out[name] = value
    return out


def _variance(n: np.ndarray, s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """Sample variance ``(Σq² - (Σq)² / M) / (M - 1)`` from the sums, never below 0."""
    return np.maximum((s2 - s1 * s1 / n) / (n - 1.0), 0.0)


def variance_of_sample_variance(n_values: np.ndarray | float, c2: np.ndarray | float,
                                c4: np.ndarray | float) -> np.ndarray:
    """Cho's eq. 1 for the variance of the unbiased sample variance ``s²`` of ``n = n_values``
    values from their central sums ``c_k = Σ (x - x̄)^k``: ``(m₄ - (n - 3) / (n - 1) m₂²) / n``
    with the central sample moments ``m_k = c_k / n`` (denominator n, as ErrViewLib's ``varvar``
    with ``moments::all.moments``). The one definition behind the intervals of ``zv``/``zisd``
    and :func:`xuqcal.core.variance.variance_of_variance`.

    Examples
    --------
    >>> round(float(variance_of_sample_variance(4.0, 4.0, 4.0)), 12)  # [-1, 1, -1, 1]
    0.166666666667
    """
    n = n_values
    m2 = c2 / n
    m4 = c4 / n
    return (m4 - (n - 3.0) / (n - 1.0) * m2 * m2) / n


def _covariance(n: np.ndarray, s1: np.ndarray, t1: np.ndarray, st: np.ndarray) -> np.ndarray:
    return (st - s1 * t1 / n) / (n - 1.0)


def analytic_interval(key: str, estimate: np.ndarray, sums: Mapping[str, np.ndarray],
                      exponents: Mapping[str, np.ndarray], level: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The analytic interval of moment statistic ``key`` (formulas in the module docstring).

    Parameters
    ----------
    key : str
        A statistic of :data:`INTERVALS`.
    estimate : array
        The statistic's value (from :meth:`~xuqcal.core.statistics.Statistic.from_sums`), in
        the units of the sums.
    sums : mapping
        Exact sums over the points: ``"count"`` and the columns of :func:`needed_columns`
        (products of normalized quantities), and ``"z_shift"`` when ``zd`` is used.
    exponents : mapping
        The normalizing exponent of each quantity of :data:`NORMALIZED` used by the products.
    level : float
        Confidence level.

    Returns
    -------
    ci_low, ci_high : arrays
        NaN where ``M < 2`` or the interval is undefined (e.g. ``rce`` with ``<E²> = 0``).

    Examples
    --------
    >>> z = np.array([0.5, -1.0, 2.0, 0.0])
    >>> sums = {"count": 4.0, "z2": np.sum(z**2), "z2z2": np.sum(z**4)}
    >>> lo, hi = analytic_interval("zms", np.mean(z**2), sums, {"z2": np.array(0)}, 0.95)
    >>> from xuqcal.core.intervals import student_interval
    >>> bool(np.allclose([lo, hi], student_interval(z**2)[1:]))
    True
    """
    level = check_level(level)
    method, _ = INTERVALS[key]
    n = np.asarray(sums["count"], dtype=np.float64)
    estimate = np.asarray(estimate, dtype=np.float64)

    def j(name: str) -> np.ndarray:
        return np.asarray(exponents[name], dtype=np.int64)

    def first(name: str) -> np.ndarray:  # Σ q 2^-j of a normalized quantity
        return np.ldexp(np.asarray(sums[name], dtype=np.float64), -j(name))

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if key in ("mse", "mv", "rmse", "rmv"):
            q = "e2" if key in ("mse", "rmse") else "u2"
            s1 = first(q)
            sd_mean = np.sqrt(_variance(n, s1, np.asarray(sums[q + q])) / n)  # SE(a) 2^-j
            if method == "student":
                se = np.ldexp(sd_mean, j(q))
            else:  # SE(√a) = √a SE(a) / (2 a)
                se = estimate * sd_mean / (2.0 * s1 / n)
        elif key == "zms":
            s1 = first("z2")
            se = np.ldexp(np.sqrt(_variance(n, s1, np.asarray(sums["z2z2"])) / n), j("z2"))
        elif key == "zm":
            s1 = first("zd")
            s2 = np.ldexp(np.asarray(sums["zd2"], dtype=np.float64), -2 * j("zd"))
            se = np.ldexp(np.sqrt(_variance(n, s1, s2) / n), j("zd"))
        elif key == "nll":
            z1, l1 = first("z2"), first("lnu2")
            v_z = np.ldexp(_variance(n, z1, np.asarray(sums["z2z2"])), 2 * j("z2"))
            v_l = np.ldexp(_variance(n, l1, np.asarray(sums["lnu2lnu2"])), 2 * j("lnu2"))
            c_zl = np.ldexp(_covariance(n, z1, l1, np.asarray(sums["z2lnu2"])),
                            j("z2") + j("lnu2"))
            se = 0.5 * np.sqrt(np.maximum(v_z + v_l + 2.0 * c_zl, 0.0) / n)
        elif key == "rce":
            a1, b1 = first("e2"), first("u2")
            a, b = a1 / n, b1 / n
            v_aa = _variance(n, a1, np.asarray(sums["e2e2"]))
            v_bb = _variance(n, b1, np.asarray(sums["u2u2"]))
            c_ab = _covariance(n, a1, b1, np.asarray(sums["e2u2"]))
            ratio = 1.0 - estimate  # √(a / b)
            inner = v_aa / (a * a) + v_bb / (b * b) - 2.0 * c_ab / (a * b)
            se = np.abs(ratio) / 2.0 * np.sqrt(np.maximum(inner, 0.0) / n)
        elif key in ("zv", "zisd"):
            jd = j("zd")
            d1 = first("zd")
            d2 = np.ldexp(np.asarray(sums["zd2"], dtype=np.float64), -2 * jd)
            d3, d4 = np.asarray(sums["zd3"]), np.asarray(sums["zd4"])
            delta = d1 / n
            c2 = d2 - delta * d1
            c4 = d4 - 4.0 * delta * d3 + 6.0 * delta**2 * d2 - 3.0 * n * delta**4
            var = np.maximum(variance_of_sample_variance(n, c2, c4), 0.0)
            se = np.ldexp(np.sqrt(var), 2 * jd)
            if key == "zisd":  # SE(V^-1/2) = SE(V) / (2 V^3/2) (ErrViewLib's rsdZCI, "cho")
                se = 0.5 * se * estimate**3
        else:  # pragma: no cover - INTERVALS lists exactly the cases above
            raise ValueError(f"statistics: {key} has no analytic interval")
    return _symmetric_interval(estimate, se, method, level, n - 1.0)



#: The columns whose means each moment statistic is a function of (:func:`mean_gradient`):
#: ``zd2`` is ``(Z - c)²``, normalized by ``2^(2 j_zd)``.
MEAN_COLUMNS: dict[str, tuple[str, ...]] = {
    "mse": ("e2",), "rmse": ("e2",), "mv": ("u2",), "rmv": ("u2",), "zm": ("zd",),
    "zms": ("z2",), "nll": ("z2", "lnu2"), "rce": ("e2", "u2"), "zv": ("zd", "zd2"),
    "zisd": ("zd", "zd2"),
}
#: The fixed order of the columns of :data:`MEAN_COLUMNS`.
MEAN_ORDER = ("e2", "u2", "z2", "lnu2", "zd", "zd2")


def mean_columns(keys: Sequence[str]) -> tuple[str, ...]:
    """The columns whose means the statistics ``keys`` need, in :data:`MEAN_ORDER`.

    Examples
    --------
    >>> mean_columns(["zms", "rce", "ence"])
    ('e2', 'u2', 'z2')
    """
    wanted = {c for k in keys if k in MEAN_COLUMNS for c in MEAN_COLUMNS[k]}
    return tuple(c for c in MEAN_ORDER if c in wanted)


def mean_exponent(name: str, exponents: Mapping[str, np.ndarray]) -> np.ndarray:
    """The normalizing exponent of a column of :data:`MEAN_ORDER` (``zd2``: ``2 j_zd``).

    Examples
    --------
    >>> int(mean_exponent("zd2", {"zd": np.array(3)}))
    6
    """
    if name == "zd2":
        return 2 * np.asarray(exponents["zd"], dtype=np.int64)
    return np.asarray(exponents[name], dtype=np.int64)


def mean_values(columns: Mapping[str, np.ndarray], names: Sequence[str],
                exponents: Mapping[str, np.ndarray]) -> np.ndarray:
    """The normalized per-point values ``q 2^-j`` (names, rows, points) of the columns
    ``names`` of :data:`MEAN_ORDER`, from the per-point ``columns`` (``zd2`` from ``zd``).

    Examples
    --------
    >>> mean_values({"zd": np.array([[2.0, -1.0]])}, ["zd", "zd2"], {"zd": np.array([2])})
    array([[[ 0.5   , -0.25  ]],
    <BLANKLINE>
           [[ 0.25  ,  0.0625]]])
    """
    out = []
    for name in names:
        base = "zd" if name == "zd2" else name
        value = np.ldexp(columns[base], -np.asarray(exponents[base])[:, np.newaxis])
        out.append(value * value if name == "zd2" else value)
    return np.stack(out)


def mean_gradient(key: str, estimate: np.ndarray, n_points: np.ndarray,
                  means: Mapping[str, np.ndarray], exponents: Mapping[str, np.ndarray]
                  ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The gradient of statistic ``key`` with respect to the normalized means of its
    :data:`MEAN_COLUMNS`, and the exponent ``s`` with ``SE = 2^s √(gᵀ V g)`` for ``V`` the
    covariance of the normalized means (formulas in the module docstring).

    Examples
    --------
    >>> g, s = mean_gradient("rce", np.array(0.0), np.array(10.0),
    ...                      {"e2": np.array(0.5), "u2": np.array(0.5)},
    ...                      {"e2": np.array(0), "u2": np.array(0)})
    >>> float(g["e2"]), float(g["u2"]), int(s)
    (-1.0, 1.0, 0)
    """
    n = np.asarray(n_points, dtype=np.float64)
    zero = np.zeros(np.shape(n), dtype=np.int64)
    estimate = np.asarray(estimate, dtype=np.float64)
    if key in ("mse", "mv", "zm", "zms"):
        (name,) = MEAN_COLUMNS[key]
        return {name: np.ones(np.shape(n))}, mean_exponent(name, exponents) + zero
    if key in ("rmse", "rmv"):
        (name,) = MEAN_COLUMNS[key]
        return {name: estimate / (2.0 * means[name])}, zero
    if key == "nll":
        return ({"z2": np.ldexp(0.5, mean_exponent("z2", exponents)),
                 "lnu2": np.ldexp(0.5, mean_exponent("lnu2", exponents))}, zero)
    if key == "rce":
        ratio = 1.0 - estimate
        return {"e2": -ratio / (2.0 * means["e2"]), "u2": ratio / (2.0 * means["u2"])}, zero
    if key in ("zv", "zisd"):
        factor = n / (n - 1.0)
        # d(V^-1/2) = -V^-3/2 dV / 2 = -zisd³ dV / 2
        scale = 1.0 if key == "zv" else -0.5 * estimate**3
        return ({"zd": -2.0 * factor * means["zd"] * scale,
                 "zd2": (factor + 0.0 * means["zd"]) * scale},
                mean_exponent("zd2", exponents) + zero)
    raise ValueError(f"statistics: {key} is not a function of column means")


def covariance_interval(key: str, estimate: np.ndarray, n_points: np.ndarray,
                        means: Mapping[str, np.ndarray],
                        cov: Mapping[tuple[str, str], np.ndarray],
                        exponents: Mapping[str, np.ndarray], level: float,
                        df: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The interval of moment statistic ``key`` from the covariance ``cov`` of the normalized
    means of its columns (the delta method, :func:`mean_gradient`).

    Parameters
    ----------
    key : str
        A statistic of :data:`MEAN_COLUMNS`.
    estimate : array
        The statistic's value, in the units of the sums.
    n_points : array
        The points ``M``.
    means : mapping
        The normalized mean ``<q> 2^-j`` of each column of :data:`MEAN_COLUMNS` ``[key]``.
    cov : mapping
        ``(a, b) -> Cov(<a>, <b>) 2^-(j_a + j_b)`` for both orders of every pair of columns.
    exponents : mapping
        The normalizing exponents (:func:`mean_exponent`).
    level : float
        Confidence level.
    df : array
        Degrees of freedom of the Student quantile of the means (``n - 1`` for iid and HAC,
        ``G - 1`` for clusters); the delta-method statistics use the normal quantile.

    Returns
    -------
    ci_low, ci_high : arrays
        NaN where ``df < 1`` or the interval is undefined.

    Examples
    --------
    >>> z2 = np.array([0.25, 1.0, 4.0, 0.0])
    >>> cov = {("z2", "z2"): np.array(np.var(z2, ddof=1) / 4)}
    >>> lo, hi = covariance_interval("zms", z2.mean(), np.array(4.0), {"z2": z2.mean()}, cov,
    ...                              {"z2": np.array(0)}, 0.95, np.array(3.0))
    >>> from xuqcal.core.intervals import student_interval
    >>> bool(np.allclose([lo, hi], student_interval(z2)[1:]))
    True
    """
    level = check_level(level)
    method, _ = INTERVALS[key]
    n = np.asarray(n_points, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    estimate = np.asarray(estimate, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gradient, scale = mean_gradient(key, estimate, n, means, exponents)
        names = list(gradient)
        var = sum(gradient[a] * gradient[b] * np.asarray(cov[a, b], dtype=np.float64)
                  for a in names for b in names)
        se = np.ldexp(np.sqrt(np.maximum(var, 0.0)), scale)
    return _symmetric_interval(estimate, se, method, level, df)


def _symmetric_interval(estimate: np.ndarray, se: np.ndarray, method: str, level: float,
                        df: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``estimate ± q se`` with ``q`` Student's quantile with ``df`` degrees of freedom
    (``method="student"``) or the normal one (``"delta"``) at ``level``; NaN where
    ``df < 1`` or the half-width is not finite (:func:`analytic_interval`,
    :func:`covariance_interval`)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if method == "student":
            quantile = stats.t.ppf((1.0 + level) / 2.0, df)
        else:
            quantile = special.ndtri((1.0 + level) / 2.0)
        half = quantile * se
    undefined = (df < 1) | ~np.isfinite(half)
    low = np.where(undefined, np.nan, estimate - half)
    high = np.where(undefined, np.nan, estimate + half)
    return low, high
