"""Figures of the errors, uncertainties and z-scores of a data set (ErrViewLib's ``plotEvsPU``,
``plotUncEcdf``, ``plotZscoreQqnorm`` and ``plotPpnorm``).

Each takes the data set (``E``, ``uE``), possibly with extra dimensions (``model``, ...): one
extra dimension goes along the columns of a grid, ``col=`` / ``row=`` choose
(:mod:`xuqcal.plot.facets`); points where ``E`` and ``uE`` are both NaN (sets of different
lengths) are left out.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from xuqcal._lazy import lazy_module
from xuqcal.analysis.stats import check_data_variables
from xuqcal.core import defaults
from xuqcal.core.checks import (
    check_choice,
    check_count,
    check_level,
    check_seed,
    positions_text,
)
from xuqcal.core.coverage import fit_scaled_student, normal_coverage_factor
from xuqcal.core.intervals import wilson_interval
from xuqcal.core.quantiles import harrell_davis_quantiles
from xuqcal.io import by_role
from xuqcal.plot.facets import Panel, facet, without_absent_points

_stats = lazy_module("scipy.stats")  # loaded on first use (a short ``import xuqcal``, issue 26)

#: The reference distributions of the QQ and PP plots.
DISTRIBUTIONS = ("normal", "student")
#: The multiples k of the guide lines E = ±k uE (or Z = ±k).
GUIDES = (1.0, 2.0, 3.0)


def _arrays(ds: xr.Dataset, indexers: dict, E: str, uE: str) -> tuple[np.ndarray, np.ndarray]:
    one = without_absent_points(ds.isel(indexers), E, uE)
    check_data_variables(one, E, uE)
    errors = np.asarray(one[E].values, dtype=np.float64)
    uncertainties = np.asarray(one[uE].values, dtype=np.float64)
    bad = np.flatnonzero(~(np.isfinite(errors) & np.isfinite(uncertainties)
                           & (uncertainties > 0)))
    if bad.size:
        raise ValueError(f"ds: {bad.size} points have a non-finite E or uE, or uE <= 0 (rows "
                         f"{positions_text(bad)})")
    return errors, uncertainties


def _checked(ds: xr.Dataset, E: str, uE: str) -> xr.Dataset:
    """``ds[[E, uE]]`` once ``ds`` holds them (with extra dimensions or not)."""
    check_data_variables(ds, E, uE, extra_dims=True)
    return ds[[E, uE]]


def _zscores(data: xr.Dataset, indexers: dict, E: str, uE: str, distribution: str, *,
             sort: bool = False):
    """The z-scores ``E / uE`` of one panel (sorted with ``sort``), the reference distribution
    fitted to them and its label (:func:`reference_distribution`)."""
    errors, uncertainties = _arrays(data, indexers, E, uE)
    z = errors / uncertainties
    if sort:
        z = np.sort(z)
    return (z, *reference_distribution(z, distribution))


def _facet(data: xr.Dataset, draw, ax, col, row, sharex, sharey, **options):
    """:func:`~xuqcal.plot.facets.facet` over the points (``sample``) of the data set ``ds``."""
    return facet(data, draw, core=("sample",), name="ds", ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey, **options)


def reference_distribution(z: np.ndarray, distribution: str):
    """The frozen SciPy distribution the z-scores are compared with: N(0, 1), or the
    zero-centred scaled Student-t fitted to ``z``
    (:func:`xuqcal.core.coverage.fit_scaled_student`, maximum likelihood: the ν of the
    ``picpt`` statistics); and its label.

    Examples
    --------
    >>> dist, label = reference_distribution(np.array([-1.0, 0.5, 1.0]), "normal")
    >>> label, float(dist.cdf(0.0))
    ('N(0, 1)', 0.5)
    """
    if distribution == "normal":
        return _stats.norm(), "N(0, 1)"
    nu, scale = fit_scaled_student(z)
    if not np.isfinite(nu):
        raise ValueError("distribution: the Student-t cannot be fitted to these z-scores "
                         "(fewer than 3, or constant); use distribution='normal'")
    return _stats.t(nu, scale=scale), f"fitted Student-t (ν = {nu:.3g}, scale = {scale:.3g})"


@by_role
def errors_vs_uncertainty(ds: xr.Dataset, by: str | None = None, *, ax=None,
                          col: str | None = None, row: str | None = None,
                          sharex: bool | None = None, sharey: bool | None = None,
                          E: str = defaults.E, uE: str = defaults.UE):
    """Errors against uncertainties with the guide lines ``E = ±k uE``, k = 1, 2, 3
    (ErrViewLib's ``plotEvsPU``, ``type = "prop"``); with ``by``, the z-scores against ``by``
    (e.g. the predicted value) with the guides ``Z = ±k`` (its ``type = "horiz"``).

    Parameters
    ----------
    ds : xarray.Dataset
        Input with ``E``, ``uE`` (and ``by``).
    by : str, optional
        Variable of the abscissa of the z-score figure.
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions laid out as a grid of panels.
    sharex, sharey : bool or None
        Whether the panels of a grid share their axes.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> import xuqcal
    >>> ax = errors_vs_uncertainty(xuqcal.synthetic.nig(500, nu=6, seed=0))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('prediction uncertainty uE', 'error E')
    """
    check_data_variables(ds, E, uE, extra_dims=True)
    names = [E, uE]
    if by is not None:
        if not isinstance(by, str) or by not in ds.data_vars:
            raise ValueError(f"by: the dataset has no variable {by!r} (data variables: "
                             f"{', '.join(map(str, ds.data_vars))})")
        names.append(by)
    data = ds[list(dict.fromkeys(names))]

    def draw(ax, indexers: dict, p: Panel) -> None:
        errors, uncertainties = _arrays(data, indexers, E, uE)
        if by is None:
            x, y = uncertainties, errors
            top = 1.1 * float(x.max())
            grid = np.array([0.0, top])
            for k in GUIDES:
                for sign in (-1.0, 1.0):
                    ax.plot(grid, sign * k * grid, ls="--", lw=0.8, color="0.5",
                            label=p.once("E = ±k uE, k = 1, 2, 3") if sign > 0 and k == 1
                            else None)
            ax.set_xlim(max(0.0, float(x.min())) if x.min() > 0 else 0.0, top)
            ax.set_xlabel("prediction uncertainty uE")
            ax.set_ylabel("error E")
            title = "Errors against uncertainties"
        else:
            one = without_absent_points(data.isel(indexers), E, uE)
            x = np.asarray(one[by].values, dtype=np.float64)
            y = errors / uncertainties
            for k in GUIDES:
                for sign in (-1.0, 1.0):
                    ax.axhline(sign * k, ls="--", lw=0.8, color="0.5",
                               label=p.once("Z = ±k, k = 1, 2, 3") if sign > 0 and k == 1
                               else None)
            ax.set_xlabel(by)
            ax.set_ylabel("z-score Z = E / uE")
            title = f"z-scores against {by}"
        ax.axhline(0.0, ls=":", lw=0.8, color="black")
        ax.scatter(x, y, s=4, alpha=0.5, color=p.colour_or("tab:blue"),
                   label=p.data_label("data"))
        limit = float(np.max(np.abs(y))) * 1.05 or 1.0
        ax.set_ylim(-limit, limit)
        p.title(ax, title, title)
        p.legend(ax, fontsize="small")

    return _facet(data, draw, ax, col, row, sharex, sharey)


@by_role
def uncertainty_ecdf(ds: xr.Dataset, variable: str = "uE", *, level: float = defaults.LEVEL,
                     ax=None, col: str | None = None, row: str | None = None,
                     sharex: bool | None = None, sharey: bool | None = None,
                     E: str = defaults.E, uE: str = defaults.UE):
    """Empirical CDF of the uncertainties (or of the absolute errors) with a pointwise normal
    band ``p ± z sqrt(p (1 - p) / M)`` and the 95th percentile (Harrell–Davis) marked
    (ErrViewLib's ``plotUncEcdf``).

    Parameters
    ----------
    ds : xarray.Dataset
        Input with ``E`` and ``uE``.
    variable : str
        ``"uE"`` (the uncertainties) or ``"|E|"`` (the absolute errors).
    level : float
        Coverage of the band.
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions laid out as a grid of panels; one extra dimension without them is
        drawn as one curve per slice.
    sharex, sharey : bool or None
        Whether the panels of a grid share their axes.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid`

    Examples
    --------
    >>> import xuqcal
    >>> ax = uncertainty_ecdf(xuqcal.synthetic.nig(500, nu=6, seed=0))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('uncertainty uE', 'cumulative probability')
    """
    variable = check_choice(variable, "variable", ("uE", "|E|"))
    level = check_level(level)
    data = _checked(ds, E, uE)
    factor = normal_coverage_factor(level)

    def draw(ax, indexers: dict, p: Panel) -> None:
        errors, uncertainties = _arrays(data, indexers, E, uE)
        x = np.sort(uncertainties if variable == "uE" else np.abs(errors))
        m = x.size
        prob = np.arange(1, m + 1) / m
        half = factor * np.sqrt(prob * (1.0 - prob) / m)
        colour = p.colour_or("tab:blue")
        ax.fill_between(x, prob - half, prob + half, step="post", color=colour, alpha=0.25,
                        lw=0, label=p.once(f"{100 * level:g} % band"))
        ax.step(x, prob, where="post", color=colour, label=p.data_label("ECDF"))
        q95 = float(harrell_davis_quantiles(x, [0.95])[0])
        ax.plot([q95, q95], [0.0, 0.95], ls="--", color=colour, lw=1,
                label=p.once("95th percentile (Harrell–Davis)"))
        ax.set_ylim(0.0, 1.0)
        ax.set_xlabel("uncertainty uE" if variable == "uE" else "absolute error |E|")
        ax.set_ylabel("cumulative probability")
        title = "ECDF of the uncertainties" if variable == "uE" else \
            "ECDF of the absolute errors"
        p.title(ax, title, title)
        p.legend(ax, fontsize="small")

    return _facet(data, draw, ax, col, row, sharex, sharey, lines=True)


@by_role
def zscore_qq(ds: xr.Dataset, distribution: str = "normal", *, level: float = defaults.LEVEL,
              n_mc: int = 1000, seed: int = defaults.SEED, ax=None, col: str | None = None,
              row: str | None = None, sharex: bool | None = None, sharey: bool | None = None,
              E: str = defaults.E, uE: str = defaults.UE):
    """Quantile–quantile plot of the z-scores against N(0, 1) or a fitted Student-t, with the
    pointwise ``level`` band of the ordered values of ``n_mc`` samples of the reference
    (ErrViewLib's ``plotZscoreQqnorm``, ``plotCI = TRUE``).

    The theoretical quantiles are those of the plotting positions ``(i - a) / (M + 1 - 2a)``,
    ``a = 3/8`` for M ≤ 10 and ``1/2`` above (R's ``ppoints``, used by ``qqnorm``).

    Parameters
    ----------
    ds : xarray.Dataset
        Input with ``E`` and ``uE``.
    distribution : {"normal", "student"}
        N(0, 1), or the Student-t of maximum likelihood (ν and scale, location 0) fitted to Z.
    level : float
        Coverage of the band.
    n_mc : int
        Samples of the reference drawn for the band (NumPy generator seeded with ``seed``).
    seed : int
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions laid out as a grid of panels.
    sharex, sharey : bool or None
        Whether the panels of a grid share their axes.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid`

    Examples
    --------
    >>> import xuqcal
    >>> ax = zscore_qq(xuqcal.synthetic.nig(300, nu=6, seed=0), n_mc=100)
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('theoretical quantiles of N(0, 1)', 'ordered z-scores')
    """
    distribution = check_choice(distribution, "distribution", DISTRIBUTIONS)
    level = check_level(level)
    n_mc = check_count(n_mc, "n_mc", 2)
    seed = check_seed(seed)
    data = _checked(ds, E, uE)

    def draw(ax, indexers: dict, p: Panel) -> None:
        z, dist, label = _zscores(data, indexers, E, uE, distribution, sort=True)
        m = z.size
        a = 3.0 / 8.0 if m <= 10 else 0.5
        positions = (np.arange(1, m + 1) - a) / (m + 1 - 2 * a)
        theoretical = dist.ppf(positions)
        draws = np.sort(dist.rvs(size=(n_mc, m), random_state=np.random.default_rng(seed)),
                        axis=1)
        low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
        ax.fill_between(theoretical, low, high, color="0.8", lw=0,
                        label=p.once(f"{100 * level:g} % band of the reference"))
        limit = float(max(3.0, np.max(np.abs(z)), np.max(np.abs(theoretical))))
        ax.plot([-limit, limit], [-limit, limit], color="black", lw=0.8,
                label=p.once("y = x"))
        ax.scatter(theoretical, z, s=6, color=p.colour_or("tab:blue"),
                   label=p.data_label("data"))
        ax.set_xlim(-limit, limit)
        ax.set_ylim(-limit, limit)
        short = "N(0, 1)" if distribution == "normal" else "the fitted Student-t"
        ax.set_xlabel(f"theoretical quantiles of {short}")
        ax.set_ylabel("ordered z-scores")
        p.title(ax, f"QQ plot of the z-scores against {label}", "QQ plot of the z-scores")
        p.legend(ax, fontsize="small")

    return _facet(data, draw, ax, col, row, sharex, sharey)


def pp_curve(z: np.ndarray, dist, grid: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The PP curve of ErrViewLib's ``plotPpnorm``: on the grid ``q`` (100 points in
    [-6, 6]) the expected CDF ``F(q)`` and the ECDF of ``z``, both framed by 0 and 1; the
    miscalibration area ``∫ |ECDF - F| dF`` (trapezoids) and ``CalErr = sqrt(Σ (F - ECDF)²)``.

    Examples
    --------
    >>> expected, observed, area, err = pp_curve(np.array([0.0, 0.0]), _stats.norm())
    >>> round(area, 2)  # ECDF 0 then 1 at 0: the area between the CDF and the step, ∫|H - F|dF
    0.25
    """
    q = np.linspace(-6.0, 6.0, 100) if grid is None else np.asarray(grid, dtype=np.float64)
    expected = np.concatenate([[0.0], dist.cdf(q), [1.0]])
    z = np.sort(np.asarray(z, dtype=np.float64))
    observed = np.concatenate([[0.0], np.searchsorted(z, q, side="right") / z.size, [1.0]])
    gap = np.abs(observed - expected)
    area = float(np.sum(np.diff(expected) * (gap[1:] + gap[:-1])) / 2.0)
    return expected, observed, area, float(np.sqrt(np.sum((expected - observed) ** 2)))


@by_role
def zscore_pp(ds: xr.Dataset, distribution: str = "normal", *, level: float = defaults.LEVEL,
              ax=None, col: str | None = None, row: str | None = None,
              sharex: bool | None = None, sharey: bool | None = None,
              E: str = defaults.E, uE: str = defaults.UE):
    """Probability–probability plot of the z-scores against N(0, 1) or a fitted Student-t,
    with the Wilson (continuity-corrected) band of the ECDF and the miscalibration area
    (ErrViewLib's ``plotPpnorm``; :func:`pp_curve`).

    Parameters
    ----------
    ds : xarray.Dataset
        Input with ``E`` and ``uE``.
    distribution : {"normal", "student"}
        N(0, 1), or the Student-t of maximum likelihood (ν and scale, location 0) fitted to Z.
    level : float
        Coverage of the band.
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions laid out as a grid of panels.
    sharex, sharey : bool or None
        Whether the panels of a grid share their axes.
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid`

    Examples
    --------
    >>> import xuqcal
    >>> ax = zscore_pp(xuqcal.synthetic.nig(300, nu=6, seed=0))
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('expected cumulative probability', 'observed cumulative probability')
    """
    distribution = check_choice(distribution, "distribution", DISTRIBUTIONS)
    level = check_level(level)
    data = _checked(ds, E, uE)

    def draw(ax, indexers: dict, p: Panel) -> None:
        z, dist, label = _zscores(data, indexers, E, uE, distribution)
        expected, observed, area, calerr = pp_curve(z, dist)
        low, high = wilson_interval(np.round(observed * z.size), z.size, level)
        colour = p.colour_or("tab:blue")
        ax.plot(expected, low, ls="--", lw=0.8, color=colour,
                label=p.once(f"{100 * level:g} % Wilson band"))
        ax.plot(expected, high, ls="--", lw=0.8, color=colour)
        ax.fill_between(expected, expected, observed, color=colour, alpha=0.2, lw=0)
        ax.plot([0, 1], [0, 1], color="black", lw=0.8, ls=":", label=p.once("y = x"))
        ax.plot(expected, observed, color=colour,
                label=p.data_label("data", f"area {area:.2g}"))
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
        ax.set_xlabel("expected cumulative probability")
        ax.set_ylabel("observed cumulative probability")
        detail = f"miscalibration area {area:.2g}, CalErr {calerr:.2g}"
        p.title(ax, f"PP plot against {label}\n{detail}", "PP plot of the z-scores", detail)
        p.legend(ax, fontsize="small")

    return _facet(data, draw, ax, col, row, sharex, sharey)
