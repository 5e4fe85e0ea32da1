"""The statistic registry and point estimates (METHODS §2).

A :class:`Statistic` is a declarative blueprint: key, formula, predefined reference value (or
none), whether it needs bins, and the integer code of its kernel in :mod:`xuqcal._kernels`.
:class:`PreparedData` holds one data set arranged for the kernels (sorted once by the binning
variable, rank structures for ``cc``); every point estimate, bootstrap replicate, jackknife
value and simulated reference is computed from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr
from scipy.stats.mstats import hdquantiles

from xuqcal import _kernels as K
from xuqcal._checks import variable_name
from xuqcal._version import __version__
from xuqcal.binning import check_n_bins, equal_count_order

DEFAULT_N_BINS = 20


@dataclass(frozen=True)
class Statistic:
    """Blueprint of one calibration statistic.

    Attributes
    ----------
    key : str
        Short name used everywhere (``"zms"``).
    code : int
        Kernel code in :mod:`xuqcal._kernels`.
    long_name : str
        Human-readable name.
    formula : str
        The definition, as in METHODS §2.
    kind : {"moment", "binned", "rank"}
        How the kernel computes it (weighted sums; equal-count bins on the binning variable;
        ranks).
    reference : float or None
        The predefined reference value of calibrated data, ``None`` when there is none (a
        simulated reference is then needed). ``nll`` has a data-dependent reference, see
        :meth:`reference_value`.
    is_mean : bool
        Whether the statistic is the mean of a per-point quantity (``zm``: Z, ``zms``: Z²), for
        which the analytic Student interval applies.
    """

    key: str
    code: int
    long_name: str
    formula: str
    kind: str
    reference: float | None = None
    is_mean: bool = False
    reference_note: str = field(default="", compare=False)

    @property
    def needs_bins(self) -> bool:
        """Whether the statistic is computed on bins of the binning variable."""
        return self.kind == "binned"

    @property
    def has_reference(self) -> bool:
        """Whether a predefined (not simulated) reference value exists."""
        return self.reference is not None or self.key == "nll"

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
            return 0.5 * (1.0 + float(np.mean(np.log(np.square(uE)))) + K.LOG_2PI)
        return math.nan if self.reference is None else float(self.reference)


_ALL = [
    Statistic("mse", K.MSE, "mean squared error", "<E²>", "moment"),
    Statistic("rmse", K.RMSE, "root mean squared error", "sqrt(<E²>)", "moment"),
    Statistic("mv", K.MV, "mean variance", "<uE²>", "moment"),
    Statistic("rmv", K.RMV, "root mean variance", "sqrt(<uE²>)", "moment"),
    Statistic("zm", K.ZM, "mean of z-scores", "<Z>", "moment", 0.0, is_mean=True),
    Statistic("zms", K.ZMS, "mean squared z-score", "<Z²>", "moment", 1.0, is_mean=True),
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
              "binned"),
    Statistic("zmse", K.ZMSE, "z-score mean squares error", "(1/N) Σ_b |ln <Z²>_b|", "binned"),
]

#: The registry: statistic key -> :class:`Statistic`.
STATISTICS: dict[str, Statistic] = {s.key: s for s in _ALL}


def get_statistics(keys: str | Iterable[str] | None) -> tuple[Statistic, ...]:
    """Look up statistics by key, keeping the order given; ``None`` means all of them.

    Examples
    --------
    >>> [s.key for s in get_statistics(["zms", "rce"])]
    ['zms', 'rce']
    """
    if keys is None:
        return tuple(STATISTICS.values())
    if isinstance(keys, str):
        keys = [keys]
    keys = list(keys)
    if not keys:
        raise ValueError("statistics: the list of statistics is empty")
    unknown = [k for k in keys if k not in STATISTICS]
    if unknown:
        raise ValueError(
            f"statistics: unknown statistic {', '.join(map(repr, unknown))}; "
            f"known statistics are {', '.join(STATISTICS)}"
        )
    if len(set(keys)) != len(keys):
        raise ValueError(f"statistics: a statistic is listed twice in {keys}")
    return tuple(STATISTICS[k] for k in keys)


def _tie_flags(sorted_values: np.ndarray) -> np.ndarray:
    tie = np.zeros(sorted_values.shape[0], dtype=np.bool_)
    tie[1:] = sorted_values[1:] == sorted_values[:-1]
    return tie


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
        n_bins: int = DEFAULT_N_BINS,
        needs_bins: bool = True,
    ) -> PreparedData:
        """Arrange ``E`` and ``uE`` (already validated) for the kernels.

        ``by_values`` is the binning variable (default ``uE``); points are put in its stable
        sort order. ``needs_bins=False`` skips the check that the points fill ``n_bins`` bins.
        """
        E = np.asarray(E, dtype=np.float64)
        uE = np.asarray(uE, dtype=np.float64)
        m = E.shape[0]
        if needs_bins:
            check_n_bins(m, n_bins, variable=by)
        binning_values = uE if by_values is None else np.asarray(by_values)
        order = equal_count_order(binning_values)
        E = np.ascontiguousarray(E[order])
        uE = np.ascontiguousarray(uE[order])
        z = E / uE
        order_u = np.argsort(uE, kind="stable")
        absE = np.abs(E)
        order_e = np.argsort(absE, kind="stable")
        e2, u2, z2, lnu2, z_shift = E * E, uE * uE, z * z, np.log(uE * uE), float(np.mean(z))
        return cls(
            e2=e2,
            u=uE,
            u2=u2,
            z=z,
            z2=z2,
            lnu2=lnu2,
            z_shift=z_shift,
            order_u=order_u,
            tie_u=_tie_flags(uE[order_u]),
            order_e=order_e,
            tie_e=_tie_flags(absE[order_e]),
            tie_bin=_tie_flags(binning_values[order]),
            n_bins=int(n_bins),
            by=by,
            packed=K.pack_moments(e2, u2, z, z2, lnu2, z_shift),
        )

    def kernel_arrays(self) -> tuple:
        """Positional arguments shared by the kernels after ``codes, counts, n_bins``."""
        return (self.packed, self.e2, self.u2, self.z2, self.z_shift,
                self.order_u, self.tie_u, self.order_e, self.tie_e)

    def evaluate(self, codes: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
        """Statistics ``codes`` of the data weighted by integer ``counts`` (default all ones)."""
        if counts is None:
            counts = np.ones(self.size, dtype=np.int32)
        out = np.empty(len(codes))
        K.evaluate_counts(np.asarray(codes, dtype=np.int64), counts, self.n_bins,
                          *self.kernel_arrays(), K.make_work(self.size, self.n_bins), out)
        return out

    def tie_groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Tie-group numbers and average ranks of ``uE`` and ``|E|`` (for the jackknife)."""
        groups = []
        for order, tie in ((self.order_u, self.tie_u), (self.order_e, self.tie_e)):
            g = np.empty(self.size, dtype=np.int64)
            g[order] = np.cumsum(~tie) - 1
            groups.append(g)
        ranks = [np.empty(self.size), np.empty(self.size)]
        ones = np.ones(self.size, dtype=np.int32)
        K._average_ranks(self.order_u, self.tie_u, ones, ranks[0])
        K._average_ranks(self.order_e, self.tie_e, ones, ranks[1])
        return groups[0], groups[1], ranks[0], ranks[1]


def codes_of(statistics: Sequence[Statistic]) -> np.ndarray:
    """Kernel codes of a sequence of statistics."""
    return np.array([s.code for s in statistics], dtype=np.int64)


def compute(
    E: np.ndarray,
    uE: np.ndarray,
    statistics: str | Iterable[str] | None = ("zms", "rce"),
    *,
    n_bins: int = DEFAULT_N_BINS,
    by_values: np.ndarray | None = None,
    by: str = "uE",
) -> np.ndarray:
    """Point estimates of statistics on NumPy arrays (the core of ``ds.uqcal.stats``).

    Examples
    --------
    >>> compute(np.array([1.0, -2.0, 0.5, 1.5]), np.ones(4), ["zm", "zms"]).round(4).tolist()
    [0.25, 1.875]
    """
    stats = get_statistics(statistics)
    prepared = PreparedData.from_arrays(
        E, uE, by_values=by_values, by=by, n_bins=n_bins,
        needs_bins=any(s.needs_bins for s in stats),
    )
    return prepared.evaluate(codes_of(stats))


# --------------------------------------------------------------------- descriptive statistics


def harrell_davis_quantiles(x: np.ndarray, probabilities: Sequence[float]) -> np.ndarray:
    """Harrell–Davis quantile estimates (SciPy's ``mstats.hdquantiles``).

    Examples
    --------
    >>> float(harrell_davis_quantiles(np.arange(1.0, 6.0), [0.5])[0])
    3.0
    """
    return np.asarray(hdquantiles(np.asarray(x, dtype=np.float64), prob=list(probabilities)))


def beta_gm(x: np.ndarray) -> float:
    """Robust skewness ``β_GM = (mean - median) / mean(|x - median|)``, Harrell–Davis median.

    Examples
    --------
    >>> abs(beta_gm(np.array([-1.0, 0.0, 1.0]))) < 1e-12  # symmetric
    True
    """
    x = np.asarray(x, dtype=np.float64)
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
    q025, q25, q75, q975 = harrell_davis_quantiles(x, [0.025, 0.25, 0.75, 0.975])
    return float((q975 - q025) / (q75 - q25) - 2.91)


def statistic_coords(statistics: Sequence[Statistic]) -> dict:
    """Coordinates that label the ``statistic`` dimension (key and long name)."""
    return {
        "statistic": ("statistic", [s.key for s in statistics]),
        "long_name": ("statistic", [s.long_name for s in statistics]),
    }


def _stats_gufunc(E, uE, by_values, *, keys, n_bins, by, use_by):
    """``compute`` over the last axis, looping over any leading axes."""
    out = np.empty((*E.shape[:-1], len(keys)))
    for index in np.ndindex(*E.shape[:-1]):
        out[index] = compute(E[index], uE[index], keys, n_bins=n_bins, by=by,
                             by_values=by_values[index] if use_by else None)
    return out


def stats(
    ds: xr.Dataset,
    statistics: str | Iterable[str] | None = ("zms", "rce"),
    *,
    n_bins: int = DEFAULT_N_BINS,
    by: str = "uE",
    E: str = "E",
    uE: str = "uE",
) -> xr.DataArray:
    """Point estimates of statistics, labelled over ``statistic``.

    Lazy when the data are Dask arrays (whatever their chunks along ``sample``: the kernels
    see the whole sample, which for M points costs O(M) memory). Extra dimensions of ``E`` and
    ``uE`` (e.g. ``replicate`` of synthetic data sets) are kept.

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    statistics : str or sequence of str or None
        Statistic keys (``None``: all of the registry).
    n_bins : int
        Number of equal-count bins of the binned statistics.
    by : str
        Binning variable (``uE`` measures consistency, a feature adaptivity).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.DataArray
        Dimension ``statistic`` (plus any extra dimensions of the data).

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(5000, nu=6, seed=0)
    >>> v = stats(ds, ["zms", "ence"], n_bins=20)
    >>> v.dims, v.statistic.values.tolist()
    (('statistic',), ['zms', 'ence'])
    """
    chosen = get_statistics(statistics)
    keys = [s.key for s in chosen]
    needs_bins = any(s.needs_bins for s in chosen)
    by = variable_name(ds, by, uE)
    if needs_bins:
        check_n_bins(ds.sizes["sample"], n_bins, variable=by)
    use_by = needs_bins and by != uE
    by_values = ds[by] if use_by else ds[uE]
    values = xr.apply_ufunc(
        _stats_gufunc, ds[E], ds[uE], by_values,
        kwargs={"keys": keys, "n_bins": n_bins, "by": by, "use_by": use_by},
        input_core_dims=[["sample"]] * 3,
        output_core_dims=[["statistic"]],
        dask="parallelized",
        output_dtypes=[np.float64],
        dask_gufunc_kwargs={"output_sizes": {"statistic": len(keys)}, "allow_rechunk": True},
    )
    values = values.assign_coords(statistic_coords(chosen))
    values.name = "value"
    values.attrs.update(n_bins=n_bins if needs_bins else 0, by=by, n_samples=ds.sizes["sample"],
                        xuqcal_version=__version__)
    return values
