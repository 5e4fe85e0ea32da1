"""Figures of the validation: ζ-scores per scheme, error distributions against generators.

Both draw results or data with extra dimensions (``dataset``, ``model``, ...) as a grid of
panels, see :mod:`xuqcal.plot.facets`."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import xarray as xr

from xuqcal.core import defaults
from xuqcal.core.generators import get_generator
from xuqcal.io import by_role
from xuqcal.plot._common import SCHEME_STYLE, require, series_colour
from xuqcal.plot.facets import Panel, facet, without_absent_points

#: Default of ``clip`` in :func:`zeta`: ζ-scores beyond ±10 are drawn at the edge.
ZETA_CLIP = 10.0


def _clip_value(clip: float | None) -> float | None:
    if clip is None:
        return None
    number = isinstance(clip, (int, float, np.integer, np.floating)) and not isinstance(
        clip, (bool, np.bool_))
    value = float(clip) if number else np.nan
    if not np.isfinite(value) or value <= 1.0:
        raise ValueError(f"clip: expected a number above 1 (|ζ| = 1 is the limit of validity) "
                         f"or None (no clipping), got {clip!r}")
    return value


def _zeta_text(value: float) -> str:
    """The value of a clipped ζ-score as annotated: ``−58``, ``1.2e+03``, ``inf``."""
    return f"{value:.3g}".replace("-", "\N{MINUS SIGN}")


def zeta(result: xr.Dataset, *, ax=None, col: str | None = None, row: str | None = None,
         sharex: bool | None = None, sharey: bool | None = None,
         clip: float | None = ZETA_CLIP):
    """ζ-scores of a validation result per statistic and scheme, with the band ``|ζ| ≤ 1``.

    The y axis is linear and clipped at ``±clip``: a ζ-score beyond (one at −58 next to
    others within ±3, say) would stretch the axis until the band ``|ζ| ≤ 1`` and the other
    points are no longer readable. Such a point is drawn at the edge, ``±clip``, as a
    triangle pointing outwards (▲ above, ▼ below) in its scheme's colour, with its value
    written beside it; dotted lines mark the edge. Nothing is clipped when every ``|ζ| ≤
    clip``, or with ``clip=None``.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`xuqcal.validate`, possibly with extra dimensions (``dataset``,
        ``model``, ...): the points of several slices cannot share an Axes, so one extra
        dimension gives one panel per label along the columns (``row=`` puts it along the
        rows), two need ``col=`` and ``row=``.
    ax : matplotlib Axes, optional
        Where to draw a result without extra dimensions.
    col, row : str, optional
        Extra dimensions laid out as a grid of panels (:mod:`xuqcal.plot.facets`).
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis; ``None`` (the default):
        shared unless the panels' sets differ (:func:`~xuqcal.plot.facets.share_axis`).
    clip : float or None
        The limit of the y axis, above 1 (default 10): ζ-scores with ``|ζ| > clip`` are drawn
        at ``±clip`` as triangles with their values written; ``None`` draws every point where
        it is (a linear axis over all of them).

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Raises
    ------
    ValueError
        For extra dimensions that cannot be placed (they are named), ``col`` / ``row`` that
        are not extra dimensions, ``ax`` with a grid, and ``clip`` not above 1.

    Examples
    --------
    >>> import xuqcal
    >>> v = xuqcal.validate(xuqcal.synthetic.nig(1000, nu=6, seed=0), ["zms", "ence"],
    ...                     n_boot=300, n_mc=300)
    >>> zeta(v).get_ylabel()
    'ζ-score'
    >>> v["zeta"][0, 0] = -58.0   # one point far out: drawn at -10, its value written
    >>> ax = zeta(v, clip=10)
    >>> bool(ax.get_ylim()[0] > -11), [t.get_text() for t in ax.texts]
    (True, ['−58'])
    """
    require(result, ("zeta", "verdict_scheme", "scheme_generator"), "xuqcal.validate")
    clip = _clip_value(clip)

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = result.isel(indexers)
        keys = [str(k) for k in one.statistic.values]
        schemes = [str(s) for s in one.scheme.values]
        x = np.arange(len(keys))
        width = 0.8 / max(len(schemes), 1)
        ax.axhspan(-1, 1, color="0.9", zorder=0, label="|ζ| ≤ 1 (valid)")
        ax.axhline(0, color="0.5", lw=0.8, zorder=1)
        scheme_generator = one.scheme_generator.transpose("scheme", ...).values
        generators = list(dict.fromkeys(g for g in scheme_generator if g))
        zeta = one.zeta.transpose("statistic", "scheme").values.astype(np.float64)
        limit = np.inf if clip is None else clip
        above, below = zeta > limit, zeta < -limit  # NaN: neither
        clipped = above | below
        shown = np.clip(zeta, -limit, limit)
        for j, scheme in enumerate(schemes):
            family = "Sim2" if scheme.startswith("Sim2") else "Sim" if scheme.startswith("Sim") \
                else "BS"
            colour, marker = SCHEME_STYLE[family]
            generator = str(scheme_generator[j])
            if generator and len(generators) > 1:
                colour = series_colour(generators.index(generator))
            position = x - 0.4 + width * (j + 0.5)
            face = "none" if family == "Sim2" else colour
            ax.plot(position, np.where(clipped[:, j], np.nan, zeta[:, j]), ls="none",
                    marker=marker, color=colour, mfc=face, label=scheme, zorder=3)
            for side, mask, edge in (("top", above[:, j], "^"), ("bottom", below[:, j], "v")):
                if not mask.any():
                    continue
                ax.plot(position[mask], shown[mask, j], ls="none", marker=edge, ms=8,
                        color=colour, mfc=face, zorder=3)
                for k in np.flatnonzero(mask):  # the value, written inwards from the edge
                    ax.annotate(_zeta_text(zeta[k, j]), (position[k], shown[k, j]),
                                xytext=(0, -7 if side == "top" else 7),
                                textcoords="offset points", rotation=90, ha="center",
                                va="top" if side == "top" else "bottom", fontsize="x-small",
                                color=colour)
        if clipped.any():
            for sign, mask in ((1.0, above), (-1.0, below)):
                if mask.any():
                    ax.axhline(sign * clip, color="0.5", lw=0.8, ls=":", zorder=1)
            ax.plot([], [], ls="none", marker="^", color="0.3",
                    label=f"|ζ| > {clip:g}: at ±{clip:g}, value written")
        decided = one.verdict_scheme.values
        for i, scheme in enumerate(decided):
            if scheme:
                j = schemes.index(str(scheme))
                ax.plot(x[i] - 0.4 + width * (j + 0.5), shown[i, j], ls="none",
                        marker="o", ms=14, mfc="none", color="crimson", zorder=2,
                        label="decides the verdict" if i == next(
                            k for k, s in enumerate(decided) if s) else None)
        ax.set_xticks(x, keys)
        ax.set_xlabel("statistic")
        ax.set_ylabel("ζ-score")
        p.title(ax, "Validation: ζ-scores per scheme", "Validation: ζ-scores per scheme")
        p.legend(ax, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))

    return facet(result, draw, core=("statistic", "scheme", "generator"), variables=("zeta",),
                 ax=ax, col=col, row=row, sharex=sharex, sharey=sharey)


@by_role
def error_distribution(ds: xr.Dataset, generators: Iterable[str] = defaults.GENERATORS, *,
                       n_sets: int = 20, seed: int = defaults.SEED, variable: str = "E",
                       bins: int = 80, ax=None, col: str | None = None, row: str | None = None,
                       sharex: bool | None = False, sharey: bool | None = False,
                       E: str = defaults.E, uE: str = defaults.UE):
    """Histogram of the errors against errors re-simulated from the uncertainties.

    For each generator D, ``n_sets`` synthetic error sets ``uE * eps``, ``eps ~ D``, are pooled
    and drawn as a density curve over the histogram of the data (log scale, to show the tails).

    Parameters
    ----------
    ds : xarray.Dataset
        Input with ``E`` and ``uE``.
    generators : iterable of str
        Generative distributions to compare.
    n_sets : int
        Synthetic sets per generator.
    seed : int
        Seed of the synthetic sets.
    variable : {"E", "Z"}
        Plot the errors or the z-scores.
    bins : int
        Number of histogram bins.
    ax : matplotlib Axes, optional
    col, row : str, optional
        Extra dimensions of ``E`` / ``uE`` (``model``, ...) laid out as a grid of panels; one
        extra dimension goes along the columns by default (:mod:`xuqcal.plot.facets`). Points
        where ``E`` and ``uE`` are both NaN (sets of different lengths) are left out.
    sharex, sharey : bool or None
        Whether the panels of a grid share their x / y axis: not by default (the sets' errors
        and densities differ), ``None`` decides as the other figures do
        (:func:`~xuqcal.plot.facets.share_axis`).
    E, uE : str
        Names of the error and uncertainty variables.

    Returns
    -------
    matplotlib Axes, or :class:`~xuqcal.plot.facets.FacetGrid` for extra dimensions

    Examples
    --------
    >>> import xuqcal
    >>> ax = error_distribution(xuqcal.synthetic.nig(1000, nu=6, seed=0))
    >>> ax.get_xlabel()
    'E'
    """
    if variable not in ("E", "Z"):
        raise ValueError(f"variable: expected 'E' or 'Z', got {variable!r}")
    from xuqcal.core.checks import check_count, check_seed
    from xuqcal.core.generators import check_generators

    n_sets = check_count(n_sets, "n_sets", 1)
    bins = check_count(bins, "bins", 1)
    seed = check_seed(seed)
    generators = check_generators(generators)
    from xuqcal.analysis.stats import check_data_variables

    check_data_variables(ds, E, uE, extra_dims=True)
    data_vars = ds[[E, uE]]

    def draw(ax, indexers: dict, p: Panel) -> None:
        one = without_absent_points(ds.isel(indexers), E, uE)
        check_data_variables(one, E, uE)
        errors = np.asarray(one[E].values)
        uncertainties = np.asarray(one[uE].values)
        data = errors if variable == "E" else errors / uncertainties
        edges = np.histogram_bin_edges(data, bins=bins)
        ax.hist(data, bins=edges, density=True, color="0.75", label="data")
        centres = 0.5 * (edges[1:] + edges[:-1])
        for k, name in enumerate(generators):
            gen = get_generator(name)
            eps = np.concatenate([gen.sample(uncertainties.size, seed=seed, replicate=r,
                                             purpose="plot") for r in range(n_sets)])
            simulated = np.tile(uncertainties, n_sets) * eps if variable == "E" else eps
            density, _ = np.histogram(simulated, bins=edges, density=True)
            density *= np.mean((simulated >= edges[0]) & (simulated <= edges[-1]))
            ax.plot(centres, np.where(density > 0, density, np.nan), lw=1.5,
                    color=series_colour(k),
                    label=f"simulated, D = {gen.name}")
        ax.set_yscale("log")
        ax.set_xlabel(variable)
        ax.set_ylabel("density")
        title = ("Errors against errors simulated from uE" if variable == "E"
                 else "z-scores against the generators")
        p.title(ax, title, title)
        p.legend(ax, fontsize="small")

    return facet(data_vars, draw, core=("sample",), name="ds", ax=ax, col=col, row=row,
                 sharex=sharex, sharey=sharey)
