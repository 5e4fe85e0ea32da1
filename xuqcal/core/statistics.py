"""The statistic registry and point estimates (METHODS §2).

A :class:`Statistic` is one object: key, formula text, the per-point columns it sums, how it
finishes from the column sums (globally, or per bin and then over the bins), its predefined
reference value (or none), the power of the data unit it carries, and the integer code by which
the Numba kernels of :mod:`xuqcal.core.kernels` know it. The arithmetic of every formula is
written once, in the finishers of :mod:`xuqcal.core.kernels` (jitted for the kernels, plain
NumPy for :meth:`Statistic.from_sums`).
:class:`PreparedData` holds one data set arranged for the kernels (sorted once by the binning
variable, rank structures for ``cc``); every point estimate, bootstrap replicate, jackknife
value and simulated reference is computed from it.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from xuqcal.core import defaults
from xuqcal.core import kernels as K
from xuqcal.core.binning import check_n_bins, stable_order
from xuqcal.core.checks import check_level, positions_text, user_stacklevel
from xuqcal.core.coverage import (
    count_covered,
    fit_student_nu,
    normal_coverage_factor,
    student_coverage_factor,
)
from xuqcal.core.coverage import coverage_rule as _coverage_rule
from xuqcal.core.quantiles import harrell_davis_quantiles

#: Data whose largest ``|E|`` or ``uE`` exceeds ``2**SAFE_EXPONENT``, or whose smallest ``uE``
#: is below ``2**-SAFE_EXPONENT``, are rescaled by an exact power of two before squaring
#: (:meth:`PreparedData.from_arrays`); ordinary data are never touched.
SAFE_EXPONENT = 480
#: The widest span ``max(|E|, uE) / min(uE)`` whose squares fit in float64 at a common scale.
MAX_SPAN_EXPONENT = 2 * SAFE_EXPONENT
_LOG_4 = math.log(4.0)


class UndefinedStatisticWarning(RuntimeWarning):
    """A statistic of the data is undefined (NaN or infinite), with the reason.

    Undefined statistics are reported as NaN (or ``inf``) with this warning rather than an
    error, so that the other statistics of a multi-statistic call are still computed:
    ``cc`` when ``uE`` or ``|E|`` is constant (no ranks to correlate), ``zmse`` when a bin has
    ``<Z²> = 0`` (all its E are 0: ``|ln 0|`` is infinite), and a statistic carrying units
    (``mse``, ``mv``, ``uce``, ``rmse``, ``rmv``) whose value exceeds the float64 range
    (``inf``; the scale-free statistics are unaffected).
    """


@dataclass(frozen=True)
class Statistic:
    """Blueprint of one calibration statistic.

    Attributes
    ----------
    key : str
        Short name used everywhere (``"zms"``).
    code : int
        Kernel code in :mod:`xuqcal.core.kernels`.
    long_name : str
        Human-readable name.
    formula : str
        The definition, as in METHODS §2.
    kind : {"moment", "binned", "rank", "coverage"}
        How the kernel computes it (weighted sums; equal-count bins on the binning variable;
        ranks); ``"coverage"``: a prediction-interval coverage probability (PICP), the
        fraction of points with ``|Z| <= k``, counted in NumPy (:mod:`xuqcal.core.coverage`)
        and not by the kernels (its interval is the Wilson binomial interval, not a
        bootstrap: see :func:`coverage_statistic`).
    reference : float or None
        The predefined reference value of calibrated data, ``None`` when there is none (a
        simulated reference is then needed). ``nll`` has a data-dependent reference, see
        :meth:`reference_value`.
    is_mean : bool
        Whether the statistic is the mean of a per-point quantity (``zm``: Z, ``zms``: Z²), for
        which the analytic Student interval applies.
    unit_power : int
        The power of the data unit the statistic carries (2 for ``mse``, 1 for ``rmse``, 0 for
        the scale-free statistics).
    tail_sensitive : bool
        Whether heavy tails of Z make the statistic's test unreliable (``zms``): above the
        robust skewness threshold of :func:`xuqcal.validate` (``heavy_tail_threshold``) its
        verdict is *not testable* instead of pass or fail.
    coverage_factor : {"", "normal", "student"}
        How a coverage statistic's factor ``k`` is chosen: the normal quantile
        ``Φ⁻¹((1 + p) / 2)``, or that of a unit-variance Student-t with ν fitted to Z.
    coverage_rule : {"", "pernot2024"}
        A normal coverage statistic under the rule of P. Pernot's 2024_PICP study
        (:func:`xuqcal.core.coverage.coverage_rule`: ``k`` rounded to two decimals, the target
        0.67 at ``p = 0.683``); ``""``: xuqcal's rule (``Φ⁻¹((1 + p) / 2)`` against ``p``).
    nu_method : {"", "ks"}
        A Student coverage statistic whose ν is fitted by least Kolmogorov-Smirnov distance
        as in 2024_PICP (:func:`xuqcal.core.coverage.fit_student_nu`); ``""``: maximum
        likelihood.
    in_all : bool
        Whether the statistic is among "all statistics" (``statistics=None`` of
        :func:`get_statistics`); ``zisd`` (the LZISD statistic of ErrViewLib) is computed only
        when asked for by key, so that the default outputs keep their statistics.

    The per-point columns (:attr:`columns`) are ``e2`` (E²), ``u2`` (uE²), ``z2`` (Z²),
    ``lnu2`` (ln uE²), ``zd`` (Z - z_shift) and ``zd2`` ((Z - z_shift)²), ``z_shift`` being any
    constant (0 by default; the kernels use the mean Z, for accuracy).

    Examples
    --------
    >>> zms = STATISTICS["zms"]
    >>> zms.columns, float(zms.from_sums({"count": 4, "z2": 6.0}))
    (('z2',), 1.5)
    >>> STATISTICS["zmse"].bin_terms({"count": np.array([2, 2]), "z2": np.array([2.0, 8.0])})
    array([0.        , 1.38629436])
    """

    key: str
    code: int
    long_name: str
    formula: str
    kind: str
    reference: float | None = None
    is_mean: bool = False
    reference_note: str = field(default="", compare=False)
    unit_power: int = 0
    tail_sensitive: bool = False
    coverage_factor: str = ""
    coverage_rule: str = ""
    nu_method: str = ""
    in_all: bool = field(default=True, compare=False)

    @property
    def columns(self) -> tuple[str, ...]:
        """The per-point columns whose sums (with ``"count"``) the statistic needs; empty for
        the rank statistic ``cc``; ``covered`` (1 when ``|Z| <= k``) for a coverage
        statistic."""
        if self.kind == "coverage":
            return ("covered",)
        used = K.MOMENT_COLUMNS.get(self.code, K.BIN_COLUMNS.get(self.code, ()))
        return tuple(K.COLUMNS[c] for c in used)

    def _sums(self, sums: Mapping[str, np.ndarray]) -> list:
        missing = [c for c in ("count", *self.columns) if c not in sums]
        if missing:
            raise ValueError(f"sums: {self.key} needs the sums {', '.join(map(repr, missing))}")
        return [np.asarray(sums.get(c, 0.0), dtype=np.float64) for c in ("count", *K.COLUMNS)]

    def from_sums(self, sums: Mapping[str, np.ndarray]) -> np.ndarray:
        """Value of a moment statistic from the sums of its :attr:`columns` and ``"count"``
        (NumPy arrays of any shape, element by element). ``z_shift`` (default 0) is the
        constant subtracted from Z in ``zd``.

        Examples
        --------
        >>> float(STATISTICS["nll"].from_sums({"count": 2, "z2": 2.0, "lnu2": 0.0})) > 0
        True
        """
        if self.kind == "coverage":
            missing = [c for c in ("count", "covered") if c not in sums]
            if missing:
                raise ValueError(f"sums: {self.key} needs the sums "
                                 f"{', '.join(map(repr, missing))}")
            with np.errstate(divide="ignore", invalid="ignore"):
                return (np.asarray(sums["covered"], dtype=np.float64)
                        / np.asarray(sums["count"], dtype=np.float64))
        if self.kind != "moment":
            raise ValueError(f"statistics: {self.key} is not a moment statistic; use "
                             "from_bin_sums")
        n, e2, u2, z2, lnu2, zd, zd2 = self._sums(sums)
        z_shift = np.float64(sums.get("z_shift", 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            return K.FINISHERS[self.code].py_func(n, e2, u2, z2, lnu2, zd, zd2, z_shift)

    def bin_terms(self, bin_sums: Mapping[str, np.ndarray]) -> np.ndarray:
        """Per-bin terms of a binned statistic (e.g. ``|ln <Z²>_b|`` for ``zmse``) from the
        per-bin sums of its :attr:`columns` and ``"count"`` (last axis: the bins)."""
        if self.kind != "binned":
            raise ValueError(f"statistics: {self.key} is not a binned statistic")
        n, e2, u2, z2, *_ = self._sums(bin_sums)
        with np.errstate(divide="ignore", invalid="ignore"):
            return K.BIN_TERMS[self.code].py_func(n, e2, u2, z2)

    def from_bin_sums(self, bin_sums: Mapping[str, np.ndarray]) -> np.ndarray:
        """Value of a binned statistic: the mean of its :meth:`bin_terms` over the last axis.

        Examples
        --------
        >>> sums = {"count": np.array([2, 2]), "e2": np.array([2.0, 8.0]),
        ...         "u2": np.array([2.0, 2.0])}
        >>> float(STATISTICS["uce"].from_bin_sums(sums))
        1.5
        """
        return np.mean(self.bin_terms(bin_sums), axis=-1)

    @property
    def needs_bins(self) -> bool:
        """Whether the statistic is computed on bins of the binning variable."""
        return self.kind == "binned"

    @property
    def has_reference(self) -> bool:
        """Whether a predefined (not simulated) reference value exists."""
        return self.reference is not None or self.key == "nll"

    @property
    def level(self) -> float | None:
        """The nominal coverage ``p`` of a coverage statistic: its reference value (``None``
        for the other statistics)."""
        return self.reference if self.is_coverage else None

    @property
    def is_coverage(self) -> bool:
        """Whether the statistic is a coverage probability (PICP), outside the kernels."""
        return self.kind == "coverage"

    def factor(self, z: np.ndarray | None = None, nu: float | None = None
               ) -> tuple[float, float]:
        """The coverage factor ``k`` of a coverage statistic and the ν it rests on (``inf``
        for the normal factor; for ``"student"``, ``nu`` when given, else ν fitted to the
        z-scores ``z`` by :func:`~xuqcal.core.coverage.fit_student_nu`; ``k`` is NaN when
        that ν is at most 2 or undefined).

        Examples
        --------
        >>> k, nu = coverage_statistic(0.95).factor()
        >>> round(k, 4), nu
        (1.96, inf)
        """
        if not self.is_coverage:
            raise ValueError(f"statistics: {self.key} is not a coverage statistic")
        if self.coverage_factor == "normal":
            if self.coverage_rule:
                return _coverage_rule(self.level, self.coverage_rule)[0], math.inf
            return normal_coverage_factor(self.level), math.inf
        if nu is None:
            if z is None:
                raise ValueError(f"{self.key}: the Student coverage factor needs the z-scores")
            nu = fit_student_nu(z, self.nu_method or "ml")
        if not nu > 2.0:
            return math.nan, nu
        return student_coverage_factor(self.level, nu), nu

    def coverage_counts(self, z: np.ndarray, nu: float | None = None
                        ) -> tuple[int, float, float]:
        """``(covered, k, ν)``: the number of z-scores with ``|Z| <= k`` and the factor
        (``nu``: a ν already fitted to ``z``, see :meth:`factor`)."""
        k, nu = self.factor(z, nu)
        return (count_covered(z, k) if math.isfinite(k) else 0), k, nu

    def reference_value(self, uE: np.ndarray | None = None) -> float:
        """Predefined reference value for data with uncertainties ``uE`` (NaN when none).

        Examples
        --------
        >>> STATISTICS["zms"].reference_value()
        1.0
        >>> round(STATISTICS["nll"].reference_value(np.ones(3)), 4)
        1.4189
        """
        if self.key == "nll":
            if uE is None:
                raise ValueError("nll: the reference value needs the uncertainties uE")
            return 0.5 * (1.0 + float(np.mean(log_square(uE))) + K.LOG_2PI)
        if self.coverage_rule and self.coverage_factor == "normal":  # the rule's target
            return float(_coverage_rule(self.level, self.coverage_rule)[1])
        return math.nan if self.reference is None else float(self.reference)


_ALL = [
    Statistic("mse", K.MSE, "mean squared error", "<E²>", "moment", unit_power=2),
    Statistic("rmse", K.RMSE, "root mean squared error", "sqrt(<E²>)", "moment", unit_power=1),
    Statistic("mv", K.MV, "mean variance", "<uE²>", "moment", unit_power=2),
    Statistic("rmv", K.RMV, "root mean variance", "sqrt(<uE²>)", "moment", unit_power=1),
    Statistic("zm", K.ZM, "mean of z-scores", "<Z>", "moment", 0.0, is_mean=True),
    Statistic("zms", K.ZMS, "mean squared z-score", "<Z²>", "moment", 1.0, is_mean=True,
              tail_sensitive=True),
    Statistic("zv", K.ZV, "variance of z-scores", "Var(Z) (n - 1)", "moment", 1.0),
    Statistic("rce", K.RCE, "relative calibration error", "(RMV - RMSE) / RMV", "moment", 0.0),
    Statistic(
        "nll", K.NLL, "negative log-likelihood (normal)", "½ (<Z²> + <ln uE²> + ln 2π)",
        "moment", None,
        reference_note="½ (1 + <ln uE²> + ln 2π), valid only for a normal generator",
    ),
    Statistic("cc", K.CC, "Spearman rank correlation of |E| and uE", "ρ_S(|E|, uE)", "rank"),
    Statistic(
        "ence", K.ENCE, "expected normalized calibration error",
        "(1/N) Σ_b |RMV_b - RMSE_b| / RMV_b", "binned",
    ),
    Statistic("uce", K.UCE, "uncertainty calibration error", "(1/N) Σ_b |MV_b - MSE_b|",
              "binned", unit_power=2),
    Statistic("zmse", K.ZMSE, "z-score mean squares error", "(1/N) Σ_b |ln <Z²>_b|", "binned"),
    Statistic("zisd", K.ZISD, "inverse standard deviation of z-scores",
              "1 / sqrt(Var(Z) (n - 1))", "moment", 1.0, in_all=False),
]

#: The registry: statistic key -> :class:`Statistic`.
STATISTICS: dict[str, Statistic] = {s.key: s for s in _ALL}
_BY_CODE: dict[int, Statistic] = {s.code: s for s in _ALL}

#: Coverage statistics (PICP) have no kernel code.
NO_CODE = -1
#: Keys of coverage statistics: ``picp<percent>`` (normal factor) or ``picpt<percent>``
#: (Student-t factor, ν fitted to Z): ``picp95``, ``picp68.3``, ``picpt95``; ``picp`` and
#: ``picpt`` alone stand for every level of :data:`xuqcal.core.defaults.COVERAGE_LEVELS`.
COVERAGE_KEY = re.compile(r"picp(t?)(\d+(?:\.\d+)?)?")
_COVERAGE_NAMES = {"normal": "", "student": "t"}


def coverage_key(level: float, coverage_factor: str = "normal") -> str:
    """The key of the coverage statistic at ``level``: ``picp95``, ``picp68.3``, ``picpt95``.

    Examples
    --------
    >>> coverage_key(0.95), coverage_key(0.683), coverage_key(0.9, "student")
    ('picp95', 'picp68.3', 'picpt90')
    """
    percent = f"{round(100.0 * float(level), 10):g}"
    return f"picp{_COVERAGE_NAMES[coverage_factor]}{percent}"


def coverage_statistic(level: float, coverage_factor: str = "normal",
                       coverage_rule: str | None = None, nu_method: str | None = None
                       ) -> Statistic:
    """The coverage statistic (PICP) at nominal level ``level`` (METHODS §9): the fraction of
    points with ``|Z| <= k``, ``k`` the half-width of the central ``level``-interval of the
    unit-variance normal (``coverage_factor="normal"``) or of a unit-variance Student-t with ν
    fitted to Z (``"student"``). Its reference is ``level``; :func:`xuqcal.validate` gives it
    the Wilson interval with continuity correction and validates it when that interval
    overlaps ``[level - tol, level + tol]``. It is tail-sensitive (screened by β_GM(Z²)).

    ``coverage_rule="pernot2024"`` gives the normal statistic the rule of P. Pernot's 2024_PICP
    study (:func:`xuqcal.core.coverage.coverage_rule`: ``|Z| <= 1`` validated against 0.67 at
    ``level=0.683``, ``|Z| <= 1.96`` at 0.95; same key); ``None``: the option
    ``conventions`` (:func:`xuqcal.options.convention`; ``"quantile"``, xuqcal's rule).
    ``nu_method="ks"`` fits the ν of a Student statistic as 2024_PICP does
    (:func:`xuqcal.core.coverage.fit_student_nu`); ``None``: the option ``conventions``
    (``"ml"``).

    Examples
    --------
    >>> s = coverage_statistic(0.95)
    >>> s.key, s.reference, s.kind
    ('picp95', 0.95, 'coverage')
    """
    from xuqcal.options import convention

    level = check_level(level, "level")
    if coverage_factor not in _COVERAGE_NAMES:
        raise ValueError(f"coverage_factor: expected 'normal' or 'student', got "
                         f"{coverage_factor!r}")
    rule = convention("coverage_rule", coverage_rule)
    method = convention("nu_method", nu_method)
    if method != "ml" and coverage_factor == "student":
        return Statistic(
            coverage_key(level, coverage_factor), NO_CODE,
            f"prediction interval coverage probability at {level:g} (Student-t factor, ν "
            "of least KS distance, 2024_PICP)",
            "<1{|Z| <= k}>, k = unit-variance Student-t(ν) quantile, ν fitted to Z² by "
            "least Kolmogorov-Smirnov distance", "coverage", float(level),
            tail_sensitive=True, coverage_factor=coverage_factor, nu_method=method)
    if rule != "quantile" and coverage_factor == "normal":
        k, target = _coverage_rule(level, rule)
        return Statistic(
            coverage_key(level, coverage_factor), NO_CODE,
            f"prediction interval coverage probability at {level:g} (|Z| <= {k:g} against "
            f"{target:g}, 2024_PICP)",
            f"<1{{|Z| <= {k:g}}}>", "coverage", float(level), tail_sensitive=True,
            coverage_factor=coverage_factor, coverage_rule=rule)
    factor_text = ("Φ⁻¹((1 + p) / 2)" if coverage_factor == "normal" else
                   "unit-variance Student-t(ν) quantile, ν fitted to Z")
    return Statistic(
        coverage_key(level, coverage_factor), NO_CODE,
        f"prediction interval coverage probability at {level:g}"
        + (" (Student-t factor)" if coverage_factor == "student" else ""),
        f"<1{{|Z| <= k}}>, k = {factor_text}", "coverage", float(level),
        tail_sensitive=True, coverage_factor=coverage_factor)


def undefined_factor_reason(nu: float) -> str:
    """Why a Student-t coverage factor is undefined, given the ν fitted to Z.

    Examples
    --------
    >>> undefined_factor_reason(1.4).split(";")[0]
    'the nu fitted to Z is 1.4 <= 2 (a Student-t of infinite variance has no unit-variance \
quantile)'
    """
    fitted = ("could not be fitted (fewer than 3 points, or Z² constant)" if math.isnan(nu)
              else f"is {nu:.3g} <= 2 (a Student-t of infinite variance has no unit-variance "
                   "quantile)")
    return f"the nu fitted to Z {fitted}; use the normal factor (picp<percent>)"


def _parse_coverage(key: str, rule: str | None = None, nu_method: str | None = None
                    ) -> list[Statistic] | None:
    """The coverage statistics a key names (``picp`` and ``picpt``: every default level),
    ``None`` when it is not a coverage key (``rule``: as :func:`coverage_statistic`'s
    ``coverage_rule``)."""
    match = COVERAGE_KEY.fullmatch(key)
    if match is None:
        return None
    factor = "student" if match.group(1) else "normal"
    if match.group(2) is None:
        return [coverage_statistic(p, factor, rule, nu_method)
                for p in defaults.COVERAGE_LEVELS]
    percent = float(match.group(2))
    if not 0.0 < percent < 100.0:
        raise ValueError(f"statistics: {key!r}: the coverage level is a percentage in "
                         f"(0, 100), e.g. 'picp95' (0.95) or 'picp68.3' (0.683)")
    return [coverage_statistic(percent / 100.0, factor, rule, nu_method)]


def get_statistics(keys: str | Iterable[str] | None, *, name: str = "statistics",
                   coverage: bool = False, coverage_rule: str | None = None,
                   nu_method: str | None = None) -> tuple[Statistic, ...]:
    """Look up statistics by key, keeping the order given; ``None`` means all of the
    registry (:data:`STATISTICS`, without the coverage statistics and the statistics computed
    only on request, :attr:`Statistic.in_all` false: ``zisd``).

    ``coverage=True`` also accepts the coverage statistics (PICP, :func:`coverage_statistic`:
    ``picp95``, ``picp68.3``, ``picpt95``; ``picp`` and ``picpt`` alone stand for the levels
    of :data:`xuqcal.core.defaults.COVERAGE_LEVELS`), for the analyses that compute them
    (:func:`xuqcal.stats`, :func:`xuqcal.validate`); the others refuse them by name.
    ``coverage_rule`` and ``nu_method`` are passed to :func:`coverage_statistic` (``None``:
    the option ``conventions``).

    Examples
    --------
    >>> [s.key for s in get_statistics(["zms", "rce"])]
    ['zms', 'rce']
    >>> [s.key for s in get_statistics(["zms", "picp"], coverage=True)]
    ['zms', 'picp68.3', 'picp95']
    >>> get_statistics(3)
    Traceback (most recent call last):
    ValueError: statistics: expected a statistic key or a list of keys such as ['zms', 'rce'], \
got 3
    """
    if keys is None:
        return tuple(s for s in STATISTICS.values() if s.in_all)
    if isinstance(keys, Statistic):
        keys = [keys.key]
    if isinstance(keys, str):
        keys = [keys]
    if not isinstance(keys, Iterable) or isinstance(keys, bytes | dict):
        raise ValueError(f"{name}: expected a statistic key or a list of keys such as "
                         f"['zms', 'rce'], got {keys!r}")
    keys = [k.key if isinstance(k, Statistic) else k for k in keys]
    if not keys:
        raise ValueError(f"{name}: the list of statistics is empty")
    not_str = [k for k in keys if not isinstance(k, str)]
    if not_str:
        raise ValueError(f"{name}: expected statistic keys (strings) such as 'zms', got "
                         f"{not_str[0]!r}")
    chosen = []
    unknown = []
    for k in keys:
        if k in STATISTICS:
            chosen.append(STATISTICS[k])
            continue
        parsed = _parse_coverage(k, coverage_rule, nu_method)
        if parsed is None:
            unknown.append(k)
        elif not coverage:
            raise ValueError(
                f"{name}: {k!r} is a coverage statistic (PICP): its interval is the Wilson "
                "binomial interval, not a bootstrap or simulated one, so it is computed by "
                "xuqcal.stats, xuqcal.validate and xuqcal.local_coverage only")
        else:
            chosen.extend(parsed)
    if unknown:
        raise ValueError(
            f"{name}: unknown statistic {', '.join(map(repr, unknown))}; "
            f"known statistics are {', '.join(STATISTICS)}, and the coverage statistics "
            "picp<percent> and picpt<percent> (e.g. picp95); xuqcal.STATISTIC_KEYS lists "
            "them all"
        )
    chosen_keys = [s.key for s in chosen]
    if len(set(chosen_keys)) != len(chosen_keys):
        raise ValueError(f"{name}: a statistic is listed twice in {chosen_keys}")
    return tuple(chosen)


class StatisticKeys(Mapping[str, str]):
    """Every statistic key that :func:`xuqcal.stats` and :func:`xuqcal.validate` accept, each
    with what it names: the public object :data:`STATISTIC_KEYS` (``xuqcal.STATISTIC_KEYS``).

    The keys of :data:`STATISTICS` (the registry of the bootstrap and simulated statistics)
    and the coverage statistics (PICP, :func:`coverage_statistic`), which form two families
    with a coverage level in their name: ``picp<percent>`` (normal factor: ``picp95``,
    ``picp68.3``) and ``picpt<percent>`` (Student-t factor: ``picpt95``), the percent in
    (0, 100), and ``picp`` and ``picpt`` alone for the levels of
    :data:`xuqcal.core.defaults.COVERAGE_LEVELS`. Iterating lists the named keys: those of
    :data:`STATISTICS`, ``picp``, ``picpt`` and the coverage keys of the default levels;
    :attr:`patterns` lists the two families (templates and regular expressions); ``in`` and
    ``[]`` accept every key of either kind.

    Examples
    --------
    >>> list(STATISTIC_KEYS)[:3], list(STATISTIC_KEYS)[-4:]
    (['mse', 'rmse', 'mv'], ['picp68.3', 'picp95', 'picpt68.3', 'picpt95'])
    >>> "zms" in STATISTIC_KEYS, "picp90" in STATISTIC_KEYS, "picp100" in STATISTIC_KEYS
    (True, True, False)
    >>> STATISTIC_KEYS["picpt90"]
    'prediction interval coverage probability at 0.9 (Student-t factor)'
    >>> sorted(STATISTIC_KEYS.patterns)
    ['picp<percent>', 'picpt<percent>']
    """

    #: The families of coverage keys: template -> regular expression of the key (the percent
    #: must also lie in (0, 100)).
    patterns: Mapping[str, str] = {
        "picp<percent>": r"picp(\d+(?:\.\d+)?)",
        "picpt<percent>": r"picpt(\d+(?:\.\d+)?)",
    }

    def __getitem__(self, key: str) -> str:
        if isinstance(key, str) and key in STATISTICS:
            return STATISTICS[key].long_name
        try:
            parsed = _parse_coverage(key) if isinstance(key, str) else None
        except ValueError:  # a coverage key whose percent is not in (0, 100)
            parsed = None
        if parsed is None:
            raise KeyError(key)
        if len(parsed) > 1:
            factor = " (Student-t factor)" if parsed[0].coverage_factor == "student" else ""
            levels = ", ".join(f"{s.reference:g}" for s in parsed)
            return f"prediction interval coverage probability at {levels}{factor}"
        return parsed[0].long_name

    def __iter__(self) -> Iterator[str]:
        yield from STATISTICS
        yield from ("picp", "picpt")
        for factor in _COVERAGE_NAMES:
            for level in defaults.COVERAGE_LEVELS:
                yield coverage_key(level, factor)

    def __len__(self) -> int:
        return len(STATISTICS) + 2 + len(_COVERAGE_NAMES) * len(defaults.COVERAGE_LEVELS)

    def __repr__(self) -> str:
        return (f"<StatisticKeys: {', '.join(self)}; and the families "
                f"{', '.join(self.patterns)}>")


#: Every statistic key that :func:`xuqcal.stats` and :func:`xuqcal.validate` accept
#: (:class:`StatisticKeys`): the keys of :data:`STATISTICS` and the coverage keys.
STATISTIC_KEYS = StatisticKeys()


def check_sizes(statistics: Sequence[Statistic], m: int, *, jackknife: bool = False,
                what: str = "the data") -> None:
    """Refuse, before any work, data too small for ``statistics``: every statistic needs at
    least one point, ``zv`` and ``zisd`` (a variance, ``n - 1`` in the denominator) and ``cc`` (a
    correlation) at least 2; ``jackknife=True`` (BCa intervals: leave-one-out values) needs one
    point more.

    Examples
    --------
    >>> check_sizes(get_statistics(["zms", "zv"]), 1)
    Traceback (most recent call last):
    ValueError: statistics: zv needs at least 2 points, but the data have 1
    """
    extra = 1 if jackknife else 0
    if m == 0:
        raise ValueError(f"ds: empty data: {what} have no points")
    for s in statistics:
        need = (2 if s.key in ("zv", "zisd", "cc") else 1) + extra
        if m < need:
            why = " (the BCa interval uses leave-one-out values)" if jackknife else ""
            raise ValueError(f"statistics: {s.key} needs at least {need} points{why}, but "
                             f"{what} have {m}")


def point_columns(E: np.ndarray, uE: np.ndarray, names: Iterable[str] = K.COLUMNS, *,
                  z_shift: float = 0.0, z: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The per-point columns ``names`` of :attr:`Statistic.columns` (``e2``, ``u2``, ``z2``,
    ``lnu2``, ``zd``, ``zd2``) of errors ``E`` and uncertainties ``uE`` (any shapes that
    broadcast; ``zd = Z - z_shift``). Summed, they give :meth:`Statistic.from_sums` its input.
    ``z``, the z-scores ``E / uE`` when the caller has them, is computed once otherwise.

    Examples
    --------
    >>> point_columns(np.array([1.0, -2.0]), np.array([1.0, 2.0]), ["z2", "zd"])
    {'z2': array([1., 1.]), 'zd': array([ 1., -1.])}
    """
    ratio = {"z": z}

    def scores() -> np.ndarray:  # E / uE, divided once (the same bits every time)
        if ratio["z"] is None:
            ratio["z"] = E / uE
        return ratio["z"]

    def shifted_square() -> np.ndarray:
        d = scores() - z_shift
        return d * d

    formulas = {
        "e2": lambda: E * E,
        "u2": lambda: uE * uE,
        "z2": lambda: scores() * scores(),
        "lnu2": lambda: np.log(uE * uE),
        "zd": lambda: scores() - z_shift,
        "zd2": shifted_square,
    }
    unknown = [n for n in names if n not in formulas]
    if unknown:
        raise ValueError(f"names: unknown columns {unknown}; known are {list(formulas)}")
    return {n: formulas[n]() for n in dict.fromkeys(names)}


def log_square(uE: np.ndarray) -> np.ndarray:
    """``ln uE²`` per point; ``2 ln uE`` where ``uE²`` overflows or underflows (bit-identical
    to ``np.log(uE * uE)`` for ordinary data).

    Examples
    --------
    >>> float(log_square(np.array([1e300]))[0]) == 2 * math.log(1e300)
    True
    """
    uE = np.asarray(uE, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        u2 = uE * uE
    if np.all((u2 >= np.finfo(np.float64).tiny) & (u2 < np.inf)):
        return np.log(u2)
    return 2.0 * np.log(uE)


def power_of_two_scale(*arrays: np.ndarray) -> int:
    """Exponent ``k`` such that ``x 2^-k`` is of order one when ``max |x|`` over ``arrays``
    lies outside ``[2^-480, 2^480]`` (squares would overflow or lose precision); ``0``
    otherwise, so that ordinary data are used unchanged (bit-identical results).

    Examples
    --------
    >>> power_of_two_scale(np.array([1.0, 3.0])), power_of_two_scale(np.array([1e300]))
    (0, 997)
    """
    hi = max((float(np.max(np.abs(x))) for x in arrays if np.size(x)), default=0.0)
    if hi == 0.0 or not math.isfinite(hi) or 2.0**-SAFE_EXPONENT <= hi <= 2.0**SAFE_EXPONENT:
        return 0
    return math.frexp(hi)[1]


def _positions(mask: np.ndarray) -> str:
    return f"rows {positions_text(np.flatnonzero(mask))}"


def check_values(E: np.ndarray, uE: np.ndarray) -> int:
    """Check arrays of errors and uncertainties for the kernels and return the exponent ``k``
    of their scale: ``0`` for ordinary data, else the data are computed as ``E 2^-k`` and
    ``uE 2^-k`` (an exact rescaling).

    Raises a ``ValueError`` naming the variable, the problem and the rows for
    non-finite values, ``uE <= 0``, z-scores whose square overflows (``|E / uE| > 1e154``),
    and data spanning more than ``2**960`` (``max(|E|, uE) / min(uE)``), whose squares cannot
    be held at one scale.

    Examples
    --------
    >>> check_values(np.array([1.0, -2.0]), np.array([1.0, 3.0]))
    0
    >>> check_values(np.array([1e300, -2e300]), np.array([1e300, 3e300]))  # (999 + 997) // 2
    998
    """
    if E.shape != uE.shape or E.ndim != 1:
        raise ValueError(f"E, uE: expected two 1-D arrays of the same length, got shapes "
                         f"{E.shape} and {uE.shape}")
    problems = []
    for name, values in (("E", E), ("uE", uE)):
        bad = ~np.isfinite(values)
        if bad.any():
            problems.append(f"{name}: {int(bad.sum())} of {values.size} values are NaN or "
                            f"infinite ({_positions(bad)})")
    bad = np.isfinite(uE) & ~(uE > 0)
    if bad.any():
        problems.append(f"uE: {int(bad.sum())} of {uE.size} values are not positive "
                        f"({_positions(bad)})")
    if len(problems) == 1:
        raise ValueError(problems[0])
    if problems:  # every problem at once, so that one correction is enough
        raise ValueError(f"invalid input data ({len(problems)} problems):\n  "
                         + "\n  ".join(problems))
    if E.size == 0:
        raise ValueError("E, uE: the data have no points")
    with np.errstate(over="ignore", under="ignore"):
        z = E / uE  # a ratio: its overflow does not depend on the scale of the data
        bad = ~np.isfinite(z * z)
    if bad.any():
        raise ValueError(f"E, uE: {int(bad.sum())} of {E.size} z-scores E/uE overflow (|z| > "
                         f"1e154: z² is beyond the float64 range) ({_positions(bad)})")
    hi = max(float(np.max(np.abs(E))), float(np.max(uE)))
    lo = float(np.min(uE))
    k = 0
    if hi > 2.0**SAFE_EXPONENT or lo < 2.0**-SAFE_EXPONENT:
        e_hi, e_lo = math.frexp(hi)[1], math.frexp(lo)[1]
        if e_hi - e_lo > MAX_SPAN_EXPONENT:
            raise ValueError(
                f"uE: the data span too many orders of magnitude (max(|E|, uE) = {hi:.3g}, "
                f"min(uE) = {lo:.3g}, a ratio above 2^{MAX_SPAN_EXPONENT}): their squares "
                "cannot be represented in float64 at a common scale"
            )
        k = (e_hi + e_lo) // 2
    return k


@dataclass(frozen=True)
class PreparedData:
    """One data set arranged for the kernels; arrays are in the order of the binning variable.

    Build it with :meth:`from_arrays`; it is cheap (one stable sort per variable) and is shared
    by every replicate of a bootstrap or a simulation.
    """

    e2: np.ndarray
    u: np.ndarray
    u2: np.ndarray
    z: np.ndarray
    z2: np.ndarray
    lnu2: np.ndarray
    z_shift: float
    order_u: np.ndarray
    tie_u: np.ndarray
    order_e: np.ndarray
    tie_e: np.ndarray
    tie_bin: np.ndarray
    n_bins: int
    by: str
    packed: np.ndarray
    scale_exponent: int = 0

    @property
    def size(self) -> int:
        """Number of points M."""
        return int(self.e2.shape[0])

    @classmethod
    def from_arrays(
        cls,
        E: np.ndarray,
        uE: np.ndarray,
        *,
        by_values: np.ndarray | None = None,
        by: str = "uE",
        n_bins: int = defaults.N_BINS,
        needs_bins: bool = True,
    ) -> PreparedData:
        """Arrange ``E`` and ``uE`` for the kernels.

        ``by_values`` is the binning variable (default ``uE``); points are put in its stable
        sort order. ``needs_bins=False`` skips the check that the points fill ``n_bins`` bins.

        The values are checked (:func:`check_values`: a ``ValueError`` for non-finite values,
        ``uE <= 0`` or z-scores whose square overflows). **Scale safety**: the squares ``E²``
        and ``uE²`` overflow for values above ~1e154 and lose precision below ~1e-154, so
        when ``max(|E|, uE) > 2^480`` or ``min(uE) < 2^-480`` the data are rescaled by an exact
        power of two, ``E 2^-k`` and ``uE 2^-k`` (``k`` = :attr:`scale_exponent`); ``ln uE²``
        keeps its true value (``+ k ln 4``), and the statistics that carry units are scaled
        back exactly (:meth:`unscale`: ``4^k`` for mse, mv, uce, ``2^k`` for rmse, rmv). The
        scale-free statistics are then computed on data of unit scale. Data inside the safe
        range (any ordinary data set) take the unchanged path: their results are
        bit-identical.
        """
        for role, values in (("E", E), ("uE", uE)):
            kind = np.asarray(values).dtype.kind
            if kind in "bcmMUSV":
                check_numeric_dtype(np.asarray(values).dtype, role, role)
        E = np.asarray(E, dtype=np.float64)
        uE = np.asarray(uE, dtype=np.float64)
        k = check_values(E, uE)
        m = E.shape[0]
        if needs_bins:
            check_n_bins(m, n_bins, variable=by)
        binning_values = uE if by_values is None else np.asarray(by_values)
        if binning_values.dtype.kind in "fc":
            bad = ~np.isfinite(binning_values)
            if bad.any():
                raise ValueError(f"by: the binning variable {by!r} has {int(bad.sum())} of "
                                 f"{bad.size} values NaN or infinite ({_positions(bad)}); "
                                 "bin on a variable with finite values")
        order, tie_bin = stable_order(binning_values)
        E = np.ascontiguousarray(E[order])
        uE = np.ascontiguousarray(uE[order])
        if k:
            E = np.ldexp(E, -k)
            uE = np.ldexp(uE, -k)
        z = E / uE
        order_u, tie_u = stable_order(uE)
        order_e, tie_e = stable_order(np.abs(E))
        columns = point_columns(E, uE, ("e2", "u2", "z2", "lnu2"), z=z)
        e2, u2, z2, lnu2 = (columns[c] for c in ("e2", "u2", "z2", "lnu2"))
        z_shift = float(np.mean(z))
        if k:
            lnu2 = lnu2 + k * _LOG_4
        return cls(
            e2=e2,
            u=uE,
            u2=u2,
            z=z,
            z2=z2,
            lnu2=lnu2,
            z_shift=z_shift,
            order_u=order_u,
            tie_u=tie_u,
            order_e=order_e,
            tie_e=tie_e,
            tie_bin=tie_bin,
            # unused by statistics without bins: at most m (a huge value is not allocated)
            n_bins=int(n_bins) if needs_bins else min(int(n_bins), max(m, 1)),
            by=by,
            packed=K.pack_moments(e2, u2, z, z2, lnu2, z_shift),
            scale_exponent=int(k),
        )

    def unscale(self, codes: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Scale the statistics that carry units (last axis of ``values``, one column per code)
        back to the units of the data, in place (exact: a power of two; nothing is done for
        data of ordinary scale)."""
        if self.scale_exponent:
            for j, code in enumerate(np.asarray(codes).tolist()):
                power = _BY_CODE[code].unit_power
                if power:
                    with np.errstate(over="ignore"):
                        values[..., j] = np.ldexp(values[..., j], power * self.scale_exponent)
        return values

    def undefined_reasons(self, codes: np.ndarray, values: np.ndarray) -> dict[int, str]:
        """Why statistics of the data (``values`` of ``codes``) are NaN or infinite."""
        reasons = {}
        for code, value in zip(np.asarray(codes).tolist(), values.tolist(), strict=True):
            if math.isfinite(value):
                continue
            if code == K.CC:
                if self.size < 2:
                    why = "it needs at least 2 points"
                elif not self.tie_u[1:].all() and not self.tie_e[1:].all():
                    why = f"its value is {value}"
                else:
                    why = "uE is constant" if self.tie_u[1:].all() else (
                        "E is 0 everywhere" if not self.e2.any() else "|E| is constant")
            elif code == K.ZMSE:
                why = ("E is 0 everywhere (ln <Z²> = ln 0)" if not self.e2.any() else
                       "a bin has <Z²> = 0 (all its E are 0, or |E/uE| underflows): "
                       "|ln 0| is infinite")
            elif _BY_CODE[code].unit_power and self.scale_exponent:
                why = (f"its value exceeds the float64 range (data of scale "
                       f"2^{self.scale_exponent}); the scale-free statistics are unaffected")
            else:
                why = f"its value is {value}"
            reasons[code] = why
        return reasons

    def kernel_arrays(self) -> tuple:
        """Positional arguments shared by the kernels after ``codes, counts, n_bins``."""
        return (self.packed, self.e2, self.u2, self.z2, self.z_shift,
                self.order_u, self.tie_u, self.order_e, self.tie_e)

    def evaluate(self, codes: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
        """Statistics ``codes`` of the data weighted by integer ``counts`` (default all ones)."""
        full = counts is None
        if counts is None:
            counts = np.ones(self.size, dtype=np.int32)
        out = np.empty(len(codes))
        K.evaluate_counts(np.asarray(codes, dtype=np.int64), counts, self.n_bins,
                          *self.kernel_arrays(), K.make_work(self.size, self.n_bins), out)
        self.unscale(codes, out)
        if full and not np.isfinite(out).all():
            for code, why in self.undefined_reasons(codes, out).items():
                warnings.warn(f"{_BY_CODE[code].key} is undefined: {why}",
                              UndefinedStatisticWarning, stacklevel=user_stacklevel())
        return out

    def evaluate_statistics(self, statistics: Sequence[Statistic]) -> np.ndarray:
        """Point estimates of ``statistics``: the kernel statistics by :meth:`evaluate`
        (bit-identical to it), the coverage statistics (PICP) by their counts of
        ``|Z| <= k``."""
        out = np.full(len(statistics), np.nan)
        kernel = [i for i, s in enumerate(statistics) if not s.is_coverage]
        if kernel:
            out[kernel] = self.evaluate(codes_of([statistics[i] for i in kernel]))
        for i, (covered, k, nu) in coverage_counts(statistics, self.z).items():
            if math.isfinite(k):
                out[i] = statistics[i].from_sums({"count": self.size, "covered": covered})
            else:
                warnings.warn(f"{statistics[i].key} is undefined: {undefined_factor_reason(nu)}",
                              UndefinedStatisticWarning, stacklevel=user_stacklevel())
        return out

    def evaluate_on_bounds(self, statistics: Sequence[Statistic], bounds: np.ndarray
                           ) -> np.ndarray:
        """Binned statistics (ENCE, UCE, ZMSE) on given bins of the sorted points, bin ``b``
        holding the sorted positions ``bounds[b] .. bounds[b + 1] - 1`` (e.g. Harrell–Davis
        bins, :func:`xuqcal.core.quantiles.harrell_davis_bounds`), by
        :meth:`Statistic.from_bin_sums` (the one definition of their bin terms)."""
        bounds = np.asarray(bounds, dtype=np.int64)
        starts = bounds[:-1]
        bin_sums = {"count": np.diff(bounds).astype(np.float64)}
        for column in ("e2", "u2", "z2"):
            bin_sums[column] = np.add.reduceat(getattr(self, column), starts)
        out = np.array([s.from_bin_sums(bin_sums) for s in statistics], dtype=np.float64)
        return self.unscale(codes_of(statistics), out)

    def tie_groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Tie-group numbers and average ranks of ``uE`` and ``|E|`` (for the jackknife)."""
        groups = []
        for order, tie in ((self.order_u, self.tie_u), (self.order_e, self.tie_e)):
            g = np.empty(self.size, dtype=np.int64)
            g[order] = np.cumsum(~tie) - 1
            groups.append(g)
        ranks = [np.empty(self.size), np.empty(self.size)]
        ones = np.ones(self.size, dtype=np.int32)
        K.average_ranks(self.order_u, self.tie_u, ones, ranks[0])
        K.average_ranks(self.order_e, self.tie_e, ones, ranks[1])
        return groups[0], groups[1], ranks[0], ranks[1]


def coverage_counts(statistics: Sequence[Statistic], z: np.ndarray
                    ) -> dict[int, tuple[int, float, float]]:
    """``(covered, k, ν)`` of every coverage statistic of ``statistics`` (by position) on the
    z-scores ``z``; the ν of the Student factors is fitted once for all of them.

    Examples
    --------
    >>> z = np.array([0.5, -1.5, 2.5, 0.1])
    >>> coverage_counts(get_statistics(["zms", "picp95"], coverage=True), z)[1][0]
    3
    """
    student = [s for s in statistics if s.is_coverage and s.coverage_factor == "student"]
    nu = fit_student_nu(z, student[0].nu_method or "ml") if student else None
    return {i: s.coverage_counts(z, nu) for i, s in enumerate(statistics) if s.is_coverage}


def codes_of(statistics: Sequence[Statistic]) -> np.ndarray:
    """Kernel codes of a sequence of statistics (coverage statistics have none)."""
    coverage = [s.key for s in statistics if s.is_coverage]
    if coverage:
        raise ValueError(f"statistics: the coverage statistics {', '.join(coverage)} are not "
                         "computed by the kernels")
    return np.array([s.code for s in statistics], dtype=np.int64)


def compute(
    E: np.ndarray,
    uE: np.ndarray,
    statistics: str | Iterable[str] | None = ("zms", "rce"),
    *,
    n_bins: int = defaults.N_BINS,
    by_values: np.ndarray | None = None,
    by: str = "uE",
    coverage_rule: str | None = None,
    nu_method: str | None = None,
    binning: str = "equal",
) -> np.ndarray:
    """Point estimates of statistics on NumPy arrays (the core of ``ds.uqcal.stats``;
    ``coverage_rule``, ``nu_method``: those of the coverage statistics,
    :func:`coverage_statistic`; ``binning="hd"``: the binned statistics on ``n_bins``
    Harrell–Davis bins of at least ``defaults.POP_MIN_HD`` points, ErrViewLib's
    ``genIntervals``, :meth:`PreparedData.evaluate_on_bounds`).

    Examples
    --------
    >>> compute(np.array([1.0, -2.0, 0.5, 1.5]), np.ones(4), ["zm", "zms"]).round(4).tolist()
    [0.25, 1.875]
    """
    stats = get_statistics(statistics, coverage=True, coverage_rule=coverage_rule,
                           nu_method=nu_method)
    check_sizes(stats, np.shape(E)[0] if np.ndim(E) else 0)
    if binning not in ("equal", "hd"):
        raise ValueError(f"binning: expected 'equal' or 'hd', got {binning!r}")
    binned = [i for i, s in enumerate(stats) if s.needs_bins]
    if binning == "hd" and binned:
        from xuqcal.core.quantiles import harrell_davis_bounds

        prepared = PreparedData.from_arrays(E, uE, by_values=by_values, by=by, n_bins=n_bins,
                                            needs_bins=False)
        out = np.full(len(stats), np.nan)
        others = [i for i in range(len(stats)) if i not in binned]
        if others:
            out[others] = prepared.evaluate_statistics([stats[i] for i in others])
        bounds = harrell_davis_bounds(prepared.size, n_bins, defaults.POP_MIN_HD)
        out[binned] = prepared.evaluate_on_bounds([stats[i] for i in binned], bounds)
        return out
    prepared = PreparedData.from_arrays(
        E, uE, by_values=by_values, by=by, n_bins=n_bins,
        needs_bins=any(s.needs_bins for s in stats),
    )
    return prepared.evaluate_statistics(stats)


# --------------------------------------------------------------------- descriptive statistics


def beta_gm(x: np.ndarray) -> float:
    """Robust skewness ``β_GM = (mean - median) / mean(|x - median|)``, Harrell–Davis median;
    NaN for constant values (0 / 0).

    Examples
    --------
    >>> abs(beta_gm(np.array([-1.0, 0.0, 1.0]))) < 1e-12  # symmetric
    True
    >>> beta_gm(np.full(5, 0.09))  # constant: undefined
    nan
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x: expected a 1-D array of values, got shape {x.shape}")
    if x.size and np.all(x == x[0]):  # 0 / 0; rounding of the mean would make it ±inf
        return math.nan
    median = harrell_davis_quantiles(x, [0.5])[0]
    return float((np.mean(x) - median) / np.mean(np.abs(x - median)))


def kappa_cs(x: np.ndarray) -> float:
    """Robust tailedness κ_CS = (Q.975 - Q.025) / (Q.75 - Q.25) - 2.91 (≈ 0 for a normal).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> abs(kappa_cs(rng.standard_normal(20_000))) < 0.05
    True
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x: expected a 1-D array of values, got shape {x.shape}")
    q025, q25, q75, q975 = harrell_davis_quantiles(x, [0.025, 0.25, 0.75, 0.975])
    return float((q975 - q025) / (q75 - q25) - 2.91)


def statistic_coords(statistics: Sequence[Statistic]) -> dict:
    """Coordinates that label the ``statistic`` dimension (key and long name)."""
    return {
        "statistic": ("statistic", [s.key for s in statistics]),
        "long_name": ("statistic", [s.long_name for s in statistics]),
    }


def check_numeric_dtype(dtype: np.dtype, role: str, var: object) -> None:
    """Refuse a variable whose values are not real numbers (booleans, complex numbers, dates,
    text, Python objects): converted to float64 they would give silently wrong statistics.

    Examples
    --------
    >>> check_numeric_dtype(np.dtype(bool), "E", "E")
    Traceback (most recent call last):
    ValueError: E: the variable 'E' does not hold real numbers (dtype bool); E and uE must be \
integers or floats
    """
    if np.dtype(dtype).kind not in "iuf":
        raise ValueError(f"{role}: the variable {var!r} does not hold real numbers (dtype "
                         f"{np.dtype(dtype)}); E and uE must be integers or floats")
