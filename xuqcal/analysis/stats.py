"""Point estimates of calibration statistics over ``statistic`` (METHODS §2), and the data
checks every analysis shares (:func:`check_input`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import xarray as xr

from xuqcal.analysis.binning import n_bins_for
from xuqcal.analysis.slices import broadcast, check_data_variables
from xuqcal.core import defaults
from xuqcal.core.binning import check_n_bins
from xuqcal.core.checks import check_count, check_name, variable_name
from xuqcal.core.provenance import attach
from xuqcal.core.statistics import (
    Statistic,
    check_sizes,
    compute,
    get_statistics,
    statistic_coords,
)
from xuqcal.io import by_role
from xuqcal.options import convention


def _stats_gufunc(E, uE, by_values, *, keys, n_bins, by, use_by, **conventions):
    """``compute`` of one data set (1-D over ``sample``: extra dimensions are sliced by
    :func:`~xuqcal.analysis.slices.broadcast` before; ``conventions``: ``coverage_rule`` and
    ``nu_method`` of the coverage statistics)."""
    return compute(E, uE, keys, n_bins=n_bins, by=by, by_values=by_values if use_by else None,
                   **conventions)


def check_sample_variables(ds: xr.Dataset, names: Iterable[str]) -> None:
    """Each variable of ``names`` is 1-D over ``sample`` and numeric (no data are read).

    Examples
    --------
    >>> import xuqcal
    >>> check_sample_variables(xuqcal.synthetic.nig(10, nu=6, seed=0), ["E", "uE"])
    """
    for name in names:
        var = ds[name]
        if var.dims != ("sample",):
            raise ValueError(f"{name}: expected a 1-D variable over 'sample', got dimensions "
                             f"{var.dims}")
        if var.dtype.kind not in "biuf":
            raise ValueError(f"{name}: values are not numeric (dtype {var.dtype})")


def check_input(ds: object, statistics: Sequence[Statistic], *, n_bins: object, by: object,
                E: object, uE: object) -> tuple[str, int]:
    """The data part of an entry point's argument checks (names, dimensions, dtypes and sizes:
    no data are read): ``ds`` holds ``E`` and ``uE``, ``by`` names a variable (``"uE"`` the
    uncertainty variable whatever its name), and ``n_bins`` suits the data when a statistic is
    binned (an unused ``n_bins`` must still be a positive integer). Returns the binning
    variable's name and the number of points.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(30, nu=6, seed=0)
    >>> check_input(ds, get_statistics(["zms"]), n_bins=20, by="uE", E="E", uE="uE")
    ('uE', 30)
    >>> check_input(ds, get_statistics(["ence"]), n_bins=20, by="uE", E="E", uE="uE")
    Traceback (most recent call last):
    ValueError: n_bins: n_bins=20 needs at least 40 points (2 per bin), but uE has 30
    """
    if not isinstance(ds, xr.Dataset):
        raise ValueError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    check_name(E, "E")
    check_name(uE, "uE")
    by = variable_name(ds, by, uE)
    check_data_variables(ds, E, uE)
    m = ds.sizes["sample"]
    if any(s.needs_bins for s in statistics):
        check_n_bins(m, n_bins, variable=by)
    else:  # unused, but a bad value is still a mistake worth naming
        check_count(n_bins, "n_bins", minimum=1)
    return by, m


def _stats_iv(ds, statistics, *, n_bins, by, E, uE, coverage_rule=None, nu_method=None):
    """Argument checks of :func:`stats` (no data are read): the statistics, the binning
    variable and whether bins are needed."""
    chosen = get_statistics(statistics, coverage=True, coverage_rule=coverage_rule,
                            nu_method=nu_method)
    n_bins = n_bins_for(ds, n_bins, statistics=chosen)
    by, m = check_input(ds, chosen, n_bins=n_bins, by=by, E=E, uE=uE)
    check_sizes(chosen, m)
    return chosen, by, any(s.needs_bins for s in chosen), n_bins


@broadcast
@by_role
def stats(
    ds: xr.Dataset,
    statistics: str | Iterable[str] | None = ("zms", "rce"),
    *,
    n_bins: int | None = None,
    by: str = defaults.BY,
    E: str = defaults.E,
    uE: str = defaults.UE,
    coverage_rule: str | None = None,
    nu_method: str | None = None,
    binning: str | None = None,
) -> xr.DataArray:
    """Point estimates of statistics, labelled over ``statistic``.

    Lazy when the data are Dask arrays (whatever their chunks along ``sample``: the kernels
    see the whole sample, which for M points costs O(M) memory). Extra dimensions of ``E`` and
    ``uE`` (``model``, ``task``, ``replicate`` of synthetic data sets, ...) are kept: each
    slice is computed on its present points (:mod:`xuqcal.analysis.slices`).

    Parameters
    ----------
    ds : xarray.Dataset
        Input over ``sample`` with ``E`` and ``uE``.
    statistics : str or sequence of str or None
        Statistic keys (``None``: all of the registry), including the coverage statistics
        (PICP: ``picp95``, ``picp68.3``, ``picpt95``; ``picp`` for both default levels);
        ``xuqcal.STATISTIC_KEYS`` lists every accepted key.
    n_bins : int, optional
        Number of equal-count bins of the binned statistics (``ence``, ``uce``, ``zmse``).
        Default: :func:`~xuqcal.core.binning.recommended_n_bins` ``(M, defaults.N_BINS)``,
        ``defaults.N_BINS`` (20) bins of at least ``defaults.MIN_POINTS_PER_BIN_LOCAL`` (20)
        points each (20 bins from M = 400 on, 13 at M = 265), per slice; a number given is
        used as asked, with a :class:`~xuqcal.core.binning.FewPointsPerBinWarning` when its
        bins hold fewer than 20 points. Recorded in the attribute ``n_bins``.
    by : str
        Binning variable (``uE`` measures consistency, a feature adaptivity).
    E, uE : str
        Names of the error and uncertainty variables.
    coverage_rule, nu_method : str, optional
        The conventions of the coverage statistics
        (:func:`~xuqcal.core.statistics.coverage_statistic`): ``coverage_rule="pernot2024"``
        counts ``|Z| <= 1`` and ``|Z| <= 1.96`` (2024_PICP), ``nu_method="ks"`` fits the ν of
        ``picpt`` by least Kolmogorov-Smirnov distance. Default ``None``: the option
        ``conventions`` (:func:`xuqcal.options.convention`).
    binning : {"equal", "hd"}, optional
        The bins of the binned statistics: equal-count, or Harrell–Davis break points with at
        least ``defaults.POP_MIN_HD`` (30) points per bin, as ErrViewLib's ``genIntervals``
        (fewer than ``n_bins`` bins when M / n_bins < 30; recorded in the attributes
        ``binning`` and ``n_bins_hd``). Default ``None``: the option ``conventions``.

    Returns
    -------
    xarray.DataArray
        Dimension ``statistic`` (after the extra dimensions of the data, if any, with the
        coordinate ``n_samples``).

    Raises
    ------
    ValueError
        Before any computation for invalid arguments (each message starts with the parameter
        name); when computed, for invalid values (:meth:`PreparedData.from_arrays`).

    Warns
    -----
    UndefinedStatisticWarning
        For a statistic that is undefined on the data (NaN or ``inf``), naming the reason,
        e.g. ``cc is undefined: uE is constant``.
    FewPointsPerBinWarning
        For an ``n_bins`` given whose bins hold fewer than
        ``defaults.MIN_POINTS_PER_BIN_LOCAL`` points, with a binned statistic.

    Examples
    --------
    >>> import xuqcal
    >>> ds = xuqcal.synthetic.nig(5000, nu=6, seed=0)
    >>> v = stats(ds, ["zms", "ence"], n_bins=20)
    >>> v.dims, v.statistic.values.tolist()
    (('statistic',), ['zms', 'ence'])
    """
    coverage_rule = convention("coverage_rule", coverage_rule)
    nu_method = convention("nu_method", nu_method)
    binning = convention("binning", binning)
    chosen, by, needs_bins, n_bins = _stats_iv(ds, statistics, n_bins=n_bins, by=by, E=E,
                                               uE=uE, coverage_rule=coverage_rule,
                                               nu_method=nu_method)
    keys = [s.key for s in chosen]
    conventions = {name: value for name, value in (("coverage_rule", coverage_rule),
                                                    ("nu_method", nu_method),
                                                    ("binning", binning))
                   if value != defaults.CONVENTIONS["xuqcal"][name]}
    if not needs_bins:
        conventions.pop("binning", None)
    use_by = needs_bins and by != uE
    by_values = ds[by] if use_by else ds[uE]
    values = xr.apply_ufunc(
        _stats_gufunc, ds[E], ds[uE], by_values,
        kwargs={"keys": keys, "n_bins": n_bins, "by": by, "use_by": use_by, **conventions},
        input_core_dims=[["sample"]] * 3,
        output_core_dims=[["statistic"]],
        dask="parallelized",
        output_dtypes=[np.float64],
        dask_gufunc_kwargs={"output_sizes": {"statistic": len(keys)}, "allow_rechunk": True},
        keep_attrs=False,  # not the attributes (role, long name) of E
    )
    values = values.assign_coords(statistic_coords(chosen))
    values.name = "value"
    extra = {}
    if "binning" in conventions:
        from xuqcal.core.quantiles import harrell_davis_bounds

        m = ds.sizes["sample"]
        extra = {"binning": "hd: Harrell-Davis break points, at least "
                            f"{defaults.POP_MIN_HD} points per bin (ErrViewLib genIntervals)",
                 "n_bins_hd": int(harrell_davis_bounds(m, n_bins, defaults.POP_MIN_HD).size
                                  - 1) if m >= 2 else 0}
    return attach(values, n_bins=n_bins if needs_bins else 0, by=by,
                  n_samples=ds.sizes["sample"], E=E, uE=uE, **extra)
