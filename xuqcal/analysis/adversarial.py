"""Calibration error of the worst random group against a control sample (ErrViewLib's
``plotAGV``).

For group sizes ``M, M/2, M/4, ...`` (rounded, at least ``min_count``), ``n_groups`` groups of
that size are drawn at random without replacement and the calibration error
``|ln <Z²>_g|`` (the score ``scal`` of :func:`xuqcal.calibration_scores` on the group) of each
is computed; the worst (``"max"``; or the ``"mean"``, ``"median"``, ``"q95"`` 95 % quantile) of
the ``n_groups`` values is kept. This is repeated ``n_mc`` times: the result is the mean and
standard deviation of the ``n_mc`` kept values per size. The same groups are drawn in a
**control sample** of M unit-variance variates of ``generator`` (calibrated by construction),
so that the data's curve can be read against what calibrated data of the same size give.

:func:`xuqcal.adversarial_groups` is the other adversarial validation (METHODS §6): the
fraction of random groups whose interval of a statistic contains its target, with a normal
control sample; this one follows the size of the worst miscalibration instead.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal.analysis.lazy import analysis, template
from xuqcal.analysis.slices import broadcast
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core import kernels as K
from xuqcal.core.checks import check_choice, check_count, check_seed
from xuqcal.core.generators import check_generators
from xuqcal.core.provenance import provenance
from xuqcal.core.random import stream_key
from xuqcal.core.statistics import check_values
from xuqcal.io import by_role

#: How the ``n_groups`` values of one repeat are summarized.
WORST_STATISTICS = ("max", "mean", "median", "q95")

_VARIABLES = {
    "value": "mean over repeats of the worst-group calibration error |ln <Z²>_g| of the data",
    "value_sd": "standard deviation over repeats of the data's value",
    "control": "the same for the control sample",
    "control_sd": "standard deviation over repeats of the control's value",
}


def group_sizes(m: int, min_count: int) -> list[int]:
    """The group sizes ``round(M / 2^k)``, ``k = 0 .. 20``, of at least ``min_count`` points.

    Examples
    --------
    >>> group_sizes(1000, 50)
    [1000, 500, 250, 125, 62]
    """
    sizes = [m / 2.0**k for k in range(21)]
    return [int(np.round(s)) for s in sizes if min_count <= s <= m]


def summarize(values: np.ndarray, statistic: str) -> np.ndarray:
    """The worst-group summary of each row of ``values`` (``(n_mc, n_groups)``): max, mean,
    median or the 95 % quantile (linear interpolation, R's type 7).

    Examples
    --------
    >>> summarize(np.array([[0.1, 0.3, 0.2]]), "max").tolist()
    [0.3]
    """
    if statistic == "max":
        return values.max(axis=1)
    if statistic == "mean":
        return values.mean(axis=1)
    if statistic == "median":
        return np.median(values, axis=1)
    return np.quantile(values, 0.95, axis=1)


@broadcast
@by_role
def worst_group_calibration(
    ds: xr.Dataset,
    *,
    statistic: str = "max",
    n_groups: int = defaults.N_GROUPS_WORST,
    n_mc: int = defaults.N_MC_WORST,
    min_count: int = defaults.MIN_COUNT_WORST,
    generator: str = defaults.GENERATORS[0],
    seed: int = defaults.SEED,
    E: str = defaults.E,
    uE: str = defaults.UE,
) -> xr.Dataset:
    """Calibration error of the worst of ``n_groups`` random groups, per group size, with a
    control sample (ErrViewLib's ``plotAGV``; the method in the module docstring).

    Lazy on Dask-backed data; extra dimensions (``model``, ...) are kept, each slice computed
    on its present points. The cost is ``n_mc × n_groups × Σ sizes`` draws (about
    ``2 M n_mc n_groups``).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    statistic : {"max", "mean", "median", "q95"}
        Summary of the ``n_groups`` values of a repeat (``"max"``: the worst group).
    n_groups : int
        Groups per repeat (ErrViewLib's ``nGroup``, 100).
    n_mc : int
        Repeats (ErrViewLib's ``nMC``, 500; at least 2).
    min_count : int
        Smallest group size (ErrViewLib's ``popMin``, 50).
    generator : str
        Unit-variance distribution of the control sample (``"normal"``, ``"t4"``,
        ``"uniform"``, ``"laplace"``, ``"normp4"``, ...: :mod:`xuqcal.core.generators`).
    seed : int
        Seed: the control sample is ``get_generator(generator).sample(M, seed=seed,
        purpose="worst_group")``, the groups of repeat ``j`` come from stream
        ``(seed, "worst_group", j)``.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    xarray.Dataset
        Over ``count`` (the group size; coordinate ``relative_size`` = count / M): ``value``,
        ``value_sd``, ``control``, ``control_sd``.

    Raises
    ------
    ValueError
        Before any computation for an unknown statistic or generator, counts below their
        minimum, or ``min_count`` above the number of points.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(400, nu=6, seed=0)
    >>> r = worst_group_calibration(ds, n_groups=20, n_mc=20)
    >>> r["count"].values.tolist(), bool((r.value >= 0).all())
    ([400, 200, 100, 50], True)
    """
    statistic = check_choice(statistic, "statistic", WORST_STATISTICS)
    n_groups = check_count(n_groups, "n_groups", 1)
    n_mc = check_count(n_mc, "n_mc", 2)
    min_count = check_count(min_count, "min_count", 1)
    gen = check_generators(generator, "generator")[0]  # refuses the fitted 'tfit'
    seed = check_seed(seed)
    check_data_variables(ds, E, uE)
    m = ds.sizes["sample"]
    if min_count > m:
        raise ValueError(f"min_count: min_count={min_count} is larger than the number of points "
                         f"({m})")
    sizes = group_sizes(m, min_count)
    layout = template(
        {name: (("count",), np.float64, {"long_name": text}) for name, text in _VARIABLES.items()},
        {"count": len(sizes)},
        {"count": np.array(sizes), "relative_size": ("count", np.array(sizes) / m)},
        attrs=provenance(statistic=statistic, n_groups=n_groups, n_mc=n_mc,
                         min_count=min_count, generator=gen.name, seed=seed, n_samples=m,
                         control=f"Z ~ {gen.name} (unit variance), M points, same groups",
                         method="ErrViewLib's plotAGV", E=E, uE=uE))
    return analysis(_worst_body, ds, [E, uE], lambda: layout, statistic=statistic,
                    n_groups=n_groups, n_mc=n_mc, sizes=sizes, gen=gen, seed=seed, E=E, uE=uE)


def _worst_body(data: xr.Dataset, *, statistic: str, n_groups: int, n_mc: int,
                sizes: list[int], gen, seed: int, E: str, uE: str) -> xr.Dataset:
    """:func:`worst_group_calibration` on NumPy-backed data."""
    errors = np.asarray(data[E].values, dtype=np.float64)
    uncertainties = np.asarray(data[uE].values, dtype=np.float64)
    check_values(errors, uncertainties)
    z2 = np.ascontiguousarray((errors / uncertainties) ** 2)
    control_z2 = np.ascontiguousarray(gen.sample(z2.size, seed=seed, purpose="worst_group") ** 2)
    out = {name: np.empty(len(sizes)) for name in _VARIABLES}
    values = np.empty((n_mc, n_groups))
    control = np.empty((n_mc, n_groups))
    for i, size in enumerate(sizes):
        K.group_log_zms(stream_key(seed, "worst_group", i), z2, control_z2, size, n_groups,
                        values, control)
        kept, kept_control = summarize(values, statistic), summarize(control, statistic)
        out["value"][i], out["value_sd"][i] = kept.mean(), kept.std(ddof=1)
        out["control"][i], out["control_sd"][i] = kept_control.mean(), kept_control.std(ddof=1)
    return xr.Dataset({name: ("count", v) for name, v in out.items()},
                      coords={"count": np.array(sizes)})
